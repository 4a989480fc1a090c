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

struct ktau_collector {
	refcount_t ref;
	spinlock_t lock;		/* protects everything below */
	struct list_head queue;
	bool closed;
	struct ktau_collect_stats st;
	kuid_t uid;			/* of the opener */
	bool privileged;		/* opener had CAP_PERFMON */
	struct pid_namespace *ns;	/* of the opener's /proc */
	struct ktau_collect_user *user;	/* the opener's, for the bound */
	struct mem_cgroup *memcg;	/* the opener's, charged */
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

void ktau_collector_put(struct ktau_collector *c)
{
	if (!refcount_dec_and_test(&c->ref))
		return;
	ktau_collect_free(c, &c->queue);
	ktau_collect_user_put(c->user);
	mem_cgroup_put(c->memcg);
	put_pid_ns(c->ns);
	kfree(c);
}

/* Same credentials as the opener, or a privileged opener. */
static bool ktau_collect_allowed(struct ktau_collector *c)
{
	const struct cred *cred = current_cred();

	if (c->privileged)
		return true;
	return uid_eq(cred->uid, c->uid) && uid_eq(cred->euid, c->uid) &&
	       uid_eq(cred->suid, c->uid);
}

/*
 * begin_new_exec() of a member into a program that is not dumpable
 * (set-user-ID or set-group-ID, or with more capabilities than its
 * caller), once its credentials are committed: it runs with credentials
 * the opener may not trace, even if it drops them again before it exits,
 * so it leaves the collector, counted as denied, unless the opener was
 * privileged (as perf ends a task's inherited events there).
 */
void ktau_collect_exec(struct ktau_task *kt)
{
	struct ktau_collector *c = kt->collector;

	if (!c || c->privileged)
		return;
	spin_lock(&c->lock);
	c->st.denied++;
	spin_unlock(&c->lock);
	kt->collector = NULL;
	ktau_collector_put(c);
}

/* do_exit() of a member: queue its final profile. */
void ktau_collect_exit(struct task_struct *tsk, struct ktau_task *kt)
{
	struct ktau_collector *c = kt->collector;
	unsigned int max = kt->mask + 1 + KTAU_SAMPLE_EXTRA, n;
	struct mem_cgroup *old;
	struct ktau_queued *q;
	struct ktau_conv cv;
	size_t size;

	if (READ_ONCE(c->closed))
		return;
	if (!ktau_collect_allowed(c)) {
		spin_lock(&c->lock);
		c->st.denied++;
		spin_unlock(&c->lock);
		return;
	}
	/*
	 * Charged to the opener, but never worth an OOM kill in its cgroup:
	 * a record that does not fit is dropped, and counted.
	 */
	old = set_active_memcg(c->memcg);
	q = kzalloc(sizeof(*q) + max * sizeof(struct ktau_entry),
		    GFP_KERNEL_ACCOUNT | __GFP_NORETRY | __GFP_NOWARN);
	set_active_memcg(old);
	if (!q) {
		spin_lock(&c->lock);
		c->st.dropped++;
		spin_unlock(&c->lock);
		return;
	}
	ktau_conv_get(&cv);
	/*
	 * The trace ends where the table is copied, so that it holds the
	 * calls of this final profile, no more.
	 */
	local_irq_disable();
	n = ktau_copy_entries(kt, (struct ktau_entry *)(&q->rec + 1), max, &cv,
			      ktau_irq_detail_hidden(c->privileged));
	ktau_trace_stop(kt);
	local_irq_enable();
	size = sizeof(q->rec) + n * sizeof(struct ktau_entry);
	q->size = size;
	q->rec.size = size;
	q->rec.nentries = n;
	q->rec.tid = task_pid_nr_ns(tsk, c->ns);
	q->rec.pid = task_tgid_nr_ns(tsk, c->ns);
	q->rec.flags = KTAU_REC_EXITED;
	get_task_comm(q->rec.comm, tsk);
	q->rec.start_ns = tsk->start_time;
	q->rec.stack_overflows = kt->stack_overflows;
	q->rec.table_overflows = kt->table_overflows;
	q->rec.unmatched = kt->unmatched;

	spin_lock(&c->lock);
	if (c->closed || c->st.bytes + size > KTAU_COLLECT_MAX_BYTES ||
	    !ktau_collect_user_charge(c->user, size)) {
		c->st.dropped++;
		spin_unlock(&c->lock);
		kfree(q);
		return;
	}
	list_add_tail(&q->node, &c->queue);
	c->st.queued++;
	c->st.collected++;
	c->st.bytes += size;
	spin_unlock(&c->lock);
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
	c->memcg = get_mem_cgroup_from_mm(current->mm);
	refcount_set(&c->ref, 1);
	spin_lock_init(&c->lock);
	INIT_LIST_HEAD(&c->queue);
	c->uid = current_fsuid();
	c->privileged = perfmon_capable();
	c->ns = get_pid_ns(proc_pid_ns(inode->i_sb));
	file->private_data = c;
	return 0;
}

/* Nothing more is queued, and what was goes now: members may live on. */
static int ktau_collect_release(struct inode *inode, struct file *file)
{
	struct ktau_collector *c = file->private_data;
	LIST_HEAD(drop);

	spin_lock(&c->lock);
	c->closed = true;
	list_splice_init(&c->queue, &drop);
	c->st.queued = 0;
	c->st.bytes = 0;
	spin_unlock(&c->lock);
	ktau_collect_free(c, &drop);
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
