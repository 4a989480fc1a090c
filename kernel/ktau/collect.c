// SPDX-License-Identifier: GPL-2.0-only
/*
 * KTAU exit collector: /proc/ktau/collect.
 *
 * Each open file is a collector. Tasks join it with KTAU_IOC_COLLECT_JOIN
 * and bring the tasks they create afterwards; when a member exits, its
 * final profile is queued on the collector, up to KTAU_COLLECT_MAX_BYTES,
 * and read() hands out whole records. This is how a tool that runs a
 * command gets the profile of every task the command created, including
 * those that exited long before the command did.
 *
 * Bounds: the records are charged to the opener's memory cgroup, at most
 * KTAU_COLLECT_MAX_BYTES per open file and KTAU_COLLECT_USER_MAX_BYTES
 * over all the files one user (the opener's real uid) has open; records
 * beyond are dropped and counted. Closing the file frees its queue at
 * once, even while members live on.
 */

#include <linux/fs.h>
#include <linux/proc_fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/cred.h>
#include <linux/capability.h>
#include <linux/pid_namespace.h>
#include <linux/refcount.h>
#include <linux/sched/task.h>
#include <linux/compat.h>
#include <linux/hashtable.h>
#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/sched/coredump.h>
#include <linux/security.h>
#include <linux/user_namespace.h>
#include "internal.h"

/* Queued bytes of one user's collectors, bounded by the next figure. */
#define KTAU_COLLECT_USER_MAX_BYTES	(4 * KTAU_COLLECT_MAX_BYTES)

struct ktau_collect_user {
	struct hlist_node node;
	kuid_t uid;
	refcount_t ref;			/* collectors of the user */
	atomic_long_t bytes;
};

static DEFINE_HASHTABLE(ktau_collect_users, 4);
static DEFINE_SPINLOCK(ktau_collect_users_lock);

/*
 * What a member's exit uses of the opener: taken with a reference under
 * the collector's lock while it is open, dropped when it is closed, so
 * that members that live on keep none of it.
 */
struct ktau_collect_opener {
	const struct cred *cred;	/* for the access check */
	struct pid_namespace *ns;	/* of its /proc */
	struct mem_cgroup *memcg;	/* charged */
};

struct ktau_collector {
	refcount_t ref;
	spinlock_t lock;		/* protects everything below */
	struct list_head queue;
	bool closed;
	struct ktau_collect_stats st;
	bool privileged;		/* opener had CAP_PERFMON */
	bool lsm_denied;		/* opener's LSM: no kernel detail */
	s64 timens;			/* opener's CLOCK_MONOTONIC offset */
	struct ktau_collect_opener op;	/* empty once closed */
	struct ktau_collect_user *user;	/* the opener's, for the bound */
};

struct ktau_queued {
	struct list_head node;
	size_t size;
	struct ktau_task_rec rec;	/* followed by the entries */
};

/* The counter of @uid's queued bytes, created if need be. */
static struct ktau_collect_user *ktau_collect_user_get(kuid_t uid)
{
	struct ktau_collect_user *u, *n = kzalloc(sizeof(*n), GFP_KERNEL_ACCOUNT);
	unsigned long flags;

	spin_lock_irqsave(&ktau_collect_users_lock, flags);
	hash_for_each_possible(ktau_collect_users, u, node, __kuid_val(uid)) {
		if (uid_eq(u->uid, uid) && refcount_inc_not_zero(&u->ref)) {
			spin_unlock_irqrestore(&ktau_collect_users_lock, flags);
			kfree(n);
			return u;
		}
	}
	if (n) {
		n->uid = uid;
		refcount_set(&n->ref, 1);
		hash_add(ktau_collect_users, &n->node, __kuid_val(uid));
	}
	spin_unlock_irqrestore(&ktau_collect_users_lock, flags);
	return n;
}

/* Also from free_task(), which may run in an RCU callback. */
static void ktau_collect_user_put(struct ktau_collect_user *u)
{
	unsigned long flags;
	bool last;

	spin_lock_irqsave(&ktau_collect_users_lock, flags);
	last = refcount_dec_and_test(&u->ref);
	if (last)
		hash_del(&u->node);
	spin_unlock_irqrestore(&ktau_collect_users_lock, flags);
	if (last)
		kfree(u);
}

/* Room for @size more bytes of @u's records: charged, or false. */
static bool ktau_collect_user_charge(struct ktau_collect_user *u, size_t size)
{
	if (atomic_long_add_return(size, &u->bytes) <= KTAU_COLLECT_USER_MAX_BYTES)
		return true;
	atomic_long_sub(size, &u->bytes);
	return false;
}

/* Free @list's records and give their bytes back to @c's user. */
static void ktau_collect_free(struct ktau_collector *c, struct list_head *list)
{
	struct ktau_queued *q, *tmp;

	list_for_each_entry_safe(q, tmp, list, node) {
		atomic_long_sub(q->size, &c->user->bytes);
		kfree(q);
	}
}

void ktau_collector_get(struct ktau_collector *c)
{
	refcount_inc(&c->ref);
}

static void ktau_collect_opener_put(struct ktau_collect_opener *op)
{
	if (!op->cred)
		return;
	put_cred(op->cred);
	put_pid_ns(op->ns);
	mem_cgroup_put(op->memcg);
	op->cred = NULL;
}

void ktau_collector_put(struct ktau_collector *c)
{
	if (!refcount_dec_and_test(&c->ref))
		return;
	ktau_collect_free(c, &c->queue);
	ktau_collect_user_put(c->user);
	ktau_collect_opener_put(&c->op);
	kfree(c);
}

/* A copy of what @c keeps of its opener, with references; false once closed. */
static bool ktau_collect_opener_get(struct ktau_collector *c,
				    struct ktau_collect_opener *op)
{
	spin_lock(&c->lock);
	if (c->closed) {
		spin_unlock(&c->lock);
		return false;
	}
	*op = c->op;
	get_cred(op->cred);
	get_pid_ns(op->ns);
	/* Cannot fail: c->op holds a reference. */
	if (WARN_ON_ONCE(!mem_cgroup_tryget(op->memcg)))
		op->memcg = NULL;
	spin_unlock(&c->lock);
	return true;
}

static bool ktau_collect_ptrace_cap(const struct cred *oc,
				    struct user_namespace *ns)
{
	return !security_capable(oc, ns, CAP_SYS_PTRACE, CAP_OPT_NOAUDIT);
}

/*
 * Whether the opener may have the profile of current, a member that
 * exits (in do_exit(), after exit_mm()) or executes a program: a
 * privileged opener may; else the answer of __ptrace_may_access(current,
 * PTRACE_MODE_READ_FSCREDS), the check of /proc/PID/ktau, asked with the
 * opener's credentials, but for the LSM's ptrace hook, which judges the
 * calling task and so cannot be asked for the opener here, and for
 * ptrace's pass to the caller's own threads: whoever holds the file reads
 * it, not only the opener's threads. So a member is denied when its user
 * or group IDs are not the opener's, when it is not dumpable
 * (PR_SET_DUMPABLE, or a credential change; once its mm is gone, exit_mm()
 * left that in user_dumpable, and only CAP_SYS_PTRACE in the initial
 * namespace passes, as for ptrace), or when it holds a capability the
 * opener lacks.
 */
static bool ktau_collect_allowed(struct ktau_collector *c,
				 const struct ktau_collect_opener *op)
{
	const struct cred *oc = op->cred, *tc = current_real_cred();
	struct mm_struct *mm = current->mm;

	if (c->privileged)
		return true;
	if ((!uid_eq(oc->fsuid, tc->euid) || !uid_eq(oc->fsuid, tc->suid) ||
	     !uid_eq(oc->fsuid, tc->uid) || !gid_eq(oc->fsgid, tc->egid) ||
	     !gid_eq(oc->fsgid, tc->sgid) || !gid_eq(oc->fsgid, tc->gid)) &&
	    !ktau_collect_ptrace_cap(oc, tc->user_ns))
		return false;
	if ((mm ? get_dumpable(mm) != SUID_DUMP_USER : !current->user_dumpable) &&
	    !ktau_collect_ptrace_cap(oc, mm ? mm->user_ns : &init_user_ns))
		return false;
	/* cap_ptrace_access_check(), with the opener's effective set. */
	if (oc->user_ns == tc->user_ns &&
	    cap_issubset(tc->cap_permitted, oc->cap_effective))
		return true;
	return ktau_collect_ptrace_cap(oc, tc->user_ns);
}

static void ktau_collect_deny(struct ktau_collector *c)
{
	spin_lock(&c->lock);
	c->st.denied++;
	spin_unlock(&c->lock);
}

/*
 * begin_new_exec() of a member into a program that is not dumpable
 * (set-user-ID or set-group-ID, or with more capabilities than its
 * caller), once its credentials are committed: if it runs with
 * credentials the opener may not trace, it leaves the collector, counted
 * as denied, even if it drops them again before it exits (as perf ends a
 * task's inherited events there).
 */
void ktau_collect_exec(struct ktau_task *kt)
{
	struct ktau_collector *c = kt->collector;
	struct ktau_collect_opener op;
	bool ok;

	if (!c || c->privileged)
		return;
	if (ktau_collect_opener_get(c, &op)) {
		ok = ktau_collect_allowed(c, &op);
		ktau_collect_opener_put(&op);
		if (ok)
			return;
		ktau_collect_deny(c);
	}
	kt->collector = NULL;
	ktau_collector_put(c);
}

/* do_exit() of a member: queue its final profile. */
void ktau_collect_exit(struct task_struct *tsk, struct ktau_task *kt)
{
	struct ktau_collector *c = kt->collector;
	unsigned int max = kt->mask + 1 + KTAU_SAMPLE_EXTRA, n;
	struct ktau_collect_opener op;
	struct mem_cgroup *old;
	struct ktau_queued *q;
	struct ktau_conv cv;
	size_t size;

	if (!ktau_collect_opener_get(c, &op))
		return;
	if (!ktau_collect_allowed(c, &op)) {
		ktau_collect_deny(c);
		goto out;
	}
	/*
	 * Charged to the opener, but never worth an OOM kill in its cgroup:
	 * a record that does not fit is dropped, and counted.
	 */
	old = set_active_memcg(op.memcg);
	q = kzalloc(sizeof(*q) + max * sizeof(struct ktau_entry),
		    GFP_KERNEL_ACCOUNT | __GFP_NORETRY | __GFP_NOWARN);
	set_active_memcg(old);
	if (!q) {
		spin_lock(&c->lock);
		c->st.dropped++;
		spin_unlock(&c->lock);
		goto out;
	}
	ktau_conv_get(&cv);
	/*
	 * The trace ends where the table is copied, so that it holds the
	 * calls of this final profile, no more.
	 */
	local_irq_disable();
	n = ktau_copy_entries(kt, (struct ktau_entry *)(&q->rec + 1), max, &cv,
			      ktau_irq_detail_hidden(c->privileged) ||
			      c->lsm_denied);
	ktau_trace_stop(kt);
	local_irq_enable();
	size = sizeof(q->rec) + n * sizeof(struct ktau_entry);
	q->size = size;
	q->rec.size = size;
	q->rec.nentries = n;
	q->rec.tid = task_pid_nr_ns(tsk, op.ns);
	q->rec.pid = task_tgid_nr_ns(tsk, op.ns);
	q->rec.flags = KTAU_REC_EXITED;
	get_task_comm(q->rec.comm, tsk);
	q->rec.start_ns = ktau_timens(tsk->start_time, c->timens);
	q->rec.stack_overflows = kt->stack_overflows;
	q->rec.table_overflows = kt->table_overflows;
	q->rec.unmatched = kt->unmatched;

	spin_lock(&c->lock);
	if (c->closed || c->st.bytes + size > KTAU_COLLECT_MAX_BYTES ||
	    !ktau_collect_user_charge(c->user, size)) {
		c->st.dropped++;
		spin_unlock(&c->lock);
		kfree(q);
		goto out;
	}
	list_add_tail(&q->node, &c->queue);
	c->st.queued++;
	c->st.collected++;
	c->st.bytes += size;
	spin_unlock(&c->lock);
out:
	ktau_collect_opener_put(&op);
}

static int ktau_collect_open(struct inode *inode, struct file *file)
{
	struct ktau_collector *c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);

	if (!c)
		return -ENOMEM;
	c->user = ktau_collect_user_get(current_uid());
	if (!c->user) {
		kfree(c);
		return -ENOMEM;
	}
	refcount_set(&c->ref, 1);
	spin_lock_init(&c->lock);
	INIT_LIST_HEAD(&c->queue);
	c->privileged = ktau_perfmon_quiet();
	c->lsm_denied = ktau_irq_detail_lsm_denied();
	c->timens = ktau_timens_offset();
	c->op.cred = get_current_cred();
	c->op.ns = get_pid_ns(proc_pid_ns(inode->i_sb));
	c->op.memcg = get_mem_cgroup_from_mm(current->mm);
	file->private_data = c;
	return 0;
}

/*
 * Nothing more is queued, and what was goes now, with what was kept of
 * the opener (its memory cgroup, namespace, credentials): members may
 * live on.
 */
static int ktau_collect_release(struct inode *inode, struct file *file)
{
	struct ktau_collector *c = file->private_data;
	struct ktau_collect_opener op;
	LIST_HEAD(drop);

	spin_lock(&c->lock);
	c->closed = true;
	list_splice_init(&c->queue, &drop);
	c->st.queued = 0;
	c->st.bytes = 0;
	op = c->op;
	memset(&c->op, 0, sizeof(c->op));
	spin_unlock(&c->lock);
	ktau_collect_free(c, &drop);
	ktau_collect_opener_put(&op);
	ktau_collector_put(c);
	return 0;
}

/* Whole records only; a buffer too small for the next record: EINVAL. */
static ssize_t ktau_collect_read(struct file *file, char __user *buf,
				 size_t count, loff_t *ppos)
{
	struct ktau_collector *c = file->private_data;
	struct ktau_queued *q;
	ssize_t done = 0;

	for (;;) {
		spin_lock(&c->lock);
		q = list_first_entry_or_null(&c->queue, struct ktau_queued, node);
		if (!q || q->size > count - done) {
			spin_unlock(&c->lock);
			break;
		}
		list_del(&q->node);
		c->st.queued--;
		c->st.bytes -= q->size;
		spin_unlock(&c->lock);

		if (copy_to_user(buf + done, &q->rec, q->size)) {
			/* Put it back: nothing is lost to a bad buffer. */
			spin_lock(&c->lock);
			list_add(&q->node, &c->queue);
			c->st.queued++;
			c->st.bytes += q->size;
			spin_unlock(&c->lock);
			return done ? done : -EFAULT;
		}
		done += q->size;
		atomic_long_sub(q->size, &c->user->bytes);
		kfree(q);
	}
	if (!done && q)
		return -EINVAL;
	return done;
}

static long ktau_collect_ioctl(struct file *file, unsigned int cmd,
			       unsigned long arg)
{
	struct ktau_collector *c = file->private_data;
	struct ktau_task *kt = ktau_profile(current);
	struct ktau_collect_stats st;

	switch (cmd) {
	case KTAU_IOC_COLLECT_JOIN:
		if (!kt)
			return -ENODEV;
		if (kt->collector == c)
			return 0;
		if (kt->collector)
			return -EBUSY;
		ktau_collector_get(c);
		kt->collector = c;
		return 0;
	case KTAU_IOC_COLLECT_STATS:
		spin_lock(&c->lock);
		st = c->st;
		spin_unlock(&c->lock);
		if (copy_to_user((void __user *)arg, &st, sizeof(st)))
			return -EFAULT;
		return 0;
	}
	return -ENOTTY;
}

const struct proc_ops ktau_collect_ops = {
	.proc_open		= ktau_collect_open,
	.proc_release		= ktau_collect_release,
	.proc_read		= ktau_collect_read,
	.proc_ioctl		= ktau_collect_ioctl,
#ifdef CONFIG_COMPAT
	.proc_compat_ioctl	= compat_ptr_ioctl,
#endif
	.proc_lseek		= noop_llseek,
};
