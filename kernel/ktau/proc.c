// SPDX-License-Identifier: GPL-2.0-only
/*
 * /proc/ktau and /proc/PID/ktau: text views for people and the binary
 * snapshot ioctl for libktau. See Documentation/ABI/testing/procfs-ktau.
 *
 * Another task's profile needs ptrace read access to it; control and the
 * system-wide aggregate need CAP_PERFMON or CAP_SYS_ADMIN. Nothing here
 * shows a kernel address: profiles hold function IDs and names only.
 */

#include <linux/init.h>
#include <linux/fs.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/string_helpers.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>
#include <linux/ptrace.h>
#include <linux/capability.h>
#include <linux/pid_namespace.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/security.h>
#include <linux/sched/stat.h>
#include <linux/compat.h>
#include <linux/timekeeping.h>
#include "internal.h"

#define KTAU_CONTROL_MAX	64

bool ktau_capable(void)
{
	return perfmon_capable();
}

/*
 * CAP_PERFMON or CAP_SYS_ADMIN of @cred, asked without an audit record:
 * for choosing what a reader is shown (a reader without them sees less,
 * it is not refused), so that each read of an unprivileged reader does
 * not log a denial, and for the privilege a trace session or collector
 * notes at its open (nothing is refused there; it is used later, in
 * other tasks' contexts, where the opener cannot be asked).
 * Refusals, and the shortcut before a ptrace check (as perf's; for
 * sample reads only with the bit, ktau_perfmon_bits()), use the audited
 * ktau_capable() or perfmon_capable().
 */
static bool ktau_cred_perfmon(const struct cred *cred)
{
	return !security_capable(cred, &init_user_ns, CAP_PERFMON,
				 CAP_OPT_NOAUDIT) ||
	       !security_capable(cred, &init_user_ns, CAP_SYS_ADMIN,
				 CAP_OPT_NOAUDIT);
}

/*
 * Whether the current task's effective set holds CAP_PERFMON or
 * CAP_SYS_ADMIN at all, asked of no security module and audited
 * nowhere: capable() of either cannot succeed without its bit, so a
 * caller may skip an audited capable() that would only log a denial.
 */
bool ktau_perfmon_bits(void)
{
	const struct cred *cred = current_cred();

	return cap_raised(cred->cap_effective, CAP_PERFMON) ||
	       cap_raised(cred->cap_effective, CAP_SYS_ADMIN);
}

/* ktau_cred_perfmon() of the current task, marking it as using them. */
bool ktau_perfmon_quiet(void)
{
	return ns_capable_noaudit(&init_user_ns, CAP_PERFMON) ||
	       ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN);
}

static int ktau_entry_cmp(const void *a, const void *b)
{
	const struct ktau_entry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static void ktau_show_entries(struct seq_file *m, struct ktau_entry *e,
			      unsigned int n)
{
	unsigned int nr = ktau_nr_ids(), i;
	u64 on = 0, off = 0, guest = 0;

	for (i = 0; i < n; i++) {
		if (KTAU_ID_IS_OFF_CPU(e[i].id))
			off += e[i].excl_ns;
		else if (KTAU_ID_IS_GUEST(e[i].id))
			guest += e[i].excl_ns;
		else
			on += e[i].excl_ns;
	}
	/*
	 * The kernel time on the CPU and the time off it (ABI 1.3), and the
	 * time in guest mode of a vCPU thread (ABI 1.4).
	 */
	seq_printf(m, "# time on_cpu_ns %llu off_cpu_ns %llu guest_ns %llu\n",
		   on, off, guest);
	sort(e, n, sizeof(*e), ktau_entry_cmp, NULL);
	seq_puts(m, "# id group name calls incl_ns excl_ns\n");
	for (i = 0; i < n; i++) {
		const struct ktau_func *f = e[i].id < nr ? &ktau_funcs[e[i].id] : NULL;

		/* Routines with samples but no call are in binary records only. */
		if (!e[i].count)
			continue;
		seq_printf(m, "%u %s %s %llu %llu %llu\n", e[i].id,
			   f && f->name[0] ? ktau_group_names[f->group] : "?",
			   f && f->name[0] ? f->name : "?",
			   e[i].count, e[i].incl_ns, e[i].excl_ns);
	}
}

static void ktau_show_overflows(struct seq_file *m, u64 stack, u64 table,
				u64 unmatched)
{
	seq_printf(m, "# overflows stack %llu table %llu unmatched %llu\n",
		   stack, table, unmatched);
}

/*
 * Text view of a sum of tasks; @tot is freed by the caller. @coarse:
 * interrupts without their sources (ktau_irq_detail_hidden()).
 */
static int ktau_show_totals(struct seq_file *m, struct ktau_totals *tot,
			    bool coarse)
{
	struct ktau_entry *e;
	struct ktau_conv cv;
	unsigned int n;

	e = kvmalloc_array(KTAU_MAX_IDS, sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (!e)
		return -ENOMEM;
	ktau_conv_get(&cv);
	n = ktau_totals_entries(tot, e, KTAU_MAX_IDS, &cv);
	if (coarse)
		n = ktau_coarsen(e, n, KTAU_MAX_IDS);
	ktau_show_overflows(m, tot->stack_overflows, tot->table_overflows,
			    tot->unmatched);
	ktau_show_entries(m, e, n);
	kvfree(e);
	return 0;
}

/*
 * Another task's profile: ptrace read access, checked under the task's
 * exec_update_lock, as /proc/PID/io and /proc/PID/stack do, so that a
 * set-user-ID execve() cannot slip in between the check and the read.
 * On success the lock is held: ktau_read_unlock().
 */
static int ktau_read_lock(struct task_struct *task, unsigned int mode)
{
	int ret = down_read_killable(&task->signal->exec_update_lock);

	if (ret)
		return ret;
	if (!ptrace_may_access(task, mode)) {
		up_read(&task->signal->exec_update_lock);
		return -EACCES;
	}
	return 0;
}

static void ktau_read_unlock(struct task_struct *task)
{
	up_read(&task->signal->exec_update_lock);
}

/*
 * Per-source interrupt names and times need CAP_PERFMON (or
 * CAP_SYS_ADMIN) of both the reader and the file's opener, so that a
 * descriptor passed to a privileged reader or from a privileged opener
 * does not carry them to a caller without it; and the reader's security
 * module must allow kernel detail, as for perf.
 */
bool ktau_file_detail_hidden(const struct file *file)
{
	if (ktau_irq_detail_restricted() &&
	    !(ktau_cred_perfmon(file->f_cred) && ktau_perfmon_quiet()))
		return true;
	return ktau_irq_detail_lsm_denied();
}

/* The task's name as /proc/PID/status shows it: newlines escaped. */
static void ktau_show_comm(struct seq_file *m, struct task_struct *task)
{
	char comm[TASK_COMM_LEN];

	get_task_comm(comm, task);
	seq_escape_str(m, comm, ESCAPE_SPACE | ESCAPE_SPECIAL, "\n\\");
}

static int ktau_show_task(struct seq_file *m, struct pid_namespace *ns,
			  struct task_struct *task)
{
	struct ktau_task *kt = ktau_profile(task);
	struct ktau_entry *e;
	struct ktau_conv cv;
	unsigned int n;

	seq_printf(m, "# tid %d pid %d comm ", task_pid_nr_ns(task, ns),
		   task_tgid_nr_ns(task, ns));
	ktau_show_comm(m, task);
	seq_putc(m, '\n');
	if (!kt)
		return 0;
	e = kvmalloc_array(kt->mask + 1 + KTAU_SAMPLE_EXTRA, sizeof(*e),
			   GFP_KERNEL_ACCOUNT);
	if (!e)
		return -ENOMEM;
	ktau_conv_get(&cv);
	n = ktau_copy_entries(kt, e, kt->mask + 1 + KTAU_SAMPLE_EXTRA, &cv,
			      ktau_file_detail_hidden(m->file));
	ktau_show_overflows(m, READ_ONCE(kt->stack_overflows),
			    READ_ONCE(kt->table_overflows),
			    READ_ONCE(kt->unmatched));
	ktau_show_entries(m, e, n);
	kvfree(e);
	return 0;
}

/* /proc/PID/task/TID/ktau */
int proc_tid_ktau(struct seq_file *m, struct pid_namespace *ns,
		  struct pid *pid, struct task_struct *task)
{
	int ret = ktau_read_lock(task, PTRACE_MODE_READ_FSCREDS);

	if (ret)
		return ret;
	ret = ktau_show_task(m, ns, task);
	ktau_read_unlock(task);
	return ret;
}

/* /proc/PID/ktau: the threads of the process, live and exited, summed. */
int proc_tgid_ktau(struct seq_file *m, struct pid_namespace *ns,
		   struct pid *pid, struct task_struct *task)
{
	struct ktau_totals *tot;
	int ret;

	tot = kvzalloc(sizeof(*tot), GFP_KERNEL_ACCOUNT);
	if (!tot)
		return -ENOMEM;
	ret = ktau_read_lock(task, PTRACE_MODE_READ_FSCREDS);
	if (ret) {
		kvfree(tot);
		return ret;
	}
	ret = ktau_process_totals(task, tot);
	if (ret) {
		ktau_read_unlock(task);
		kvfree(tot);
		return ret;
	}
	seq_printf(m, "# pid %d threads %u comm ", task_tgid_nr_ns(task, ns),
		   tot->nr_tasks);
	ktau_show_comm(m, task);
	seq_putc(m, '\n');
	ret = ktau_show_totals(m, tot, ktau_file_detail_hidden(m->file));
	ktau_read_unlock(task);
	kvfree(tot);
	return ret;
}

/* /proc/ktau/version */
static int ktau_version_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%u.%u\n", KTAU_ABI_VERSION_MAJOR, KTAU_ABI_VERSION_MINOR);
	return 0;
}

/* /proc/ktau/functions */
static int ktau_functions_show(struct seq_file *m, void *v)
{
	unsigned int nr = ktau_nr_ids(), id;

	seq_puts(m, "# id group name\n");
	for (id = 1; id < nr; id++) {
		const struct ktau_func *f = &ktau_funcs[id];

		/* Unregistered points stay: old profiles may hold them. */
		if (!f->name[0])
			continue;
		seq_printf(m, "%u %s %s\n", id, ktau_group_names[f->group],
			   f->name);
	}
	return 0;
}

/* /proc/ktau/aggregate */
static int ktau_aggregate_show(struct seq_file *m, void *v)
{
	struct ktau_totals *tot = kvzalloc(sizeof(*tot), GFP_KERNEL_ACCOUNT);
	int ret;

	if (!tot)
		return -ENOMEM;
	ret = ktau_aggregate(tot);
	if (ret) {
		kvfree(tot);
		return ret;
	}
	seq_printf(m, "# aggregate tasks %u\n", tot->nr_tasks);
	ret = ktau_show_totals(m, tot, ktau_file_detail_hidden(m->file));
	kvfree(tot);
	return ret;
}

static int ktau_aggregate_open(struct inode *inode, struct file *file)
{
	if (!ktau_capable())
		return -EPERM;
	return single_open(file, ktau_aggregate_show, NULL);
}

static const struct proc_ops ktau_aggregate_ops = {
	.proc_open	= ktau_aggregate_open,
	.proc_read	= seq_read,
	.proc_lseek	= seq_lseek,
	.proc_release	= single_release,
};

/* /proc/ktau/control */
static int ktau_control_show(struct seq_file *m, void *v)
{
	unsigned long on = READ_ONCE(ktau_groups_on);
	int g;

	for (g = 0; g < KTAU_NR_GROUPS; g++)
		seq_printf(m, "%s %s\n", ktau_group_names[g],
			   on & BIT(g) ? "on" : "off");
	seq_printf(m, "slots %u\n", ktau_nr_slots);
	seq_printf(m, "depth %u\n", KTAU_STACK_DEPTH);
	seq_printf(m, "fork_nomem %ld\n", ktau_unprofiled_tasks());
	seq_printf(m, "exit_nomem %ld\n", ktau_exit_nomem());
	seq_printf(m, "clock %s\n", ktau_clock_name());
	seq_printf(m, "clock_backwards %ld\n", ktau_clock_backwards());
	seq_printf(m, "ids_full %ld\n", ktau_ids_full());
	seq_printf(m, "generation_bits %u\n", CONFIG_KTAU_GEN_BITS);
	return 0;
}

static int ktau_control_open(struct inode *inode, struct file *file)
{
	if ((file->f_mode & FMODE_WRITE) && !ktau_capable())
		return -EPERM;
	return single_open(file, ktau_control_show, NULL);
}

/*
 * One command per write: "<group> on|off", "all on|off" or "reset".
 * Anything else is EINVAL and changes nothing.
 */
static ssize_t ktau_control_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	char buf[KTAU_CONTROL_MAX + 1], *arg;
	unsigned long mask;
	size_t len;
	bool on;
	int g, ret;

	if (!ktau_capable())
		return -EPERM;
	if (count == 0 || count > KTAU_CONTROL_MAX)
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	len = count;
	if (buf[len - 1] == '\n')
		buf[--len] = '\0';
	if (strlen(buf) != len)
		return -EINVAL;

	if (!strcmp(buf, "reset")) {
		ktau_reset_all();
		return count;
	}
	arg = strchr(buf, ' ');
	if (!arg)
		return -EINVAL;
	*arg++ = '\0';
	if (!strcmp(arg, "on"))
		on = true;
	else if (!strcmp(arg, "off"))
		on = false;
	else
		return -EINVAL;

	if (!strcmp(buf, "all")) {
		mask = BIT(KTAU_NR_GROUPS) - 1;
	} else {
		g = ktau_group_by_name(buf, strlen(buf));
		if (g < 0)
			return -EINVAL;
		mask = BIT(g);
	}
	ret = on ? ktau_switch_groups(mask, 0) : ktau_switch_groups(0, mask);
	return ret ? ret : count;
}

static const struct proc_ops ktau_control_ops = {
	.proc_open	= ktau_control_open,
	.proc_read	= seq_read,
	.proc_write	= ktau_control_write,
	.proc_lseek	= seq_lseek,
	.proc_release	= single_release,
};

/* /proc/ktau/profiles: KTAU_IOC_SNAPSHOT */
struct ktau_snap_ctx {
	struct ktau_snapshot req;
	struct pid_namespace *ns;
	char __user *ubuf;
	u64 used;		/* bytes written or, past ENOSPC, needed */
	bool nospc;
	struct ktau_task_rec *rec;	/* staging for one record */
	unsigned int max_entries;
	struct ktau_conv cv;
	bool coarse;		/* interrupts without their sources */
	s64 timens;		/* the caller's CLOCK_MONOTONIC offset */
};

static int ktau_snap_emit(struct ktau_snap_ctx *ctx, size_t size)
{
	if (!ctx->nospc && ctx->used + size <= ctx->req.buf_size) {
		if (copy_to_user(ctx->ubuf + ctx->used, ctx->rec, size))
			return -EFAULT;
		ctx->req.ntasks++;
	} else {
		ctx->nospc = true;
	}
	ctx->used += size;
	return 0;
}

/*
 * One task's record. @mode: the ptrace check; the whole-system scan adds
 * PTRACE_MODE_NOAUDIT, so that an unprivileged reader does not make the
 * security module log a denial for every task it may not read.
 */
static int ktau_snap_task(struct ktau_snap_ctx *ctx, struct task_struct *t,
			  unsigned int mode)
{
	struct ktau_task_rec *rec = ctx->rec;
	struct ktau_task *kt = ktau_profile(t);
	unsigned int n;
	pid_t tid;
	int ret;

	tid = task_pid_nr_ns(t, ctx->ns);
	if (!kt || !tid) {
		ctx->req.nmissing++;
		return 0;
	}
	/* The caller's own thread needs no check, and takes no lock. */
	if (t != current) {
		/*
		 * The scan of every task asks first without the lock, so that
		 * it does not take the exec lock of each task it may not
		 * read (and hold up their execve()); the answer is asked
		 * again under the lock.
		 */
		if ((mode & PTRACE_MODE_NOAUDIT) && !ptrace_may_access(t, mode)) {
			ctx->req.nmissing++;
			return 0;
		}
		ret = ktau_read_lock(t, mode);
		if (ret == -EACCES) {
			ctx->req.nmissing++;
			return 0;
		}
		if (ret)
			return ret;
	}
	memset(rec, 0, sizeof(*rec));
	n = ktau_copy_entries(kt, (struct ktau_entry *)(rec + 1),
			      ctx->max_entries, &ctx->cv, ctx->coarse);
	rec->size = sizeof(*rec) + n * sizeof(struct ktau_entry);
	rec->nentries = n;
	rec->tid = tid;
	rec->pid = task_tgid_nr_ns(t, ctx->ns);
	rec->flags = (t->flags & PF_KTHREAD) ? KTAU_REC_KTHREAD : 0;
	get_task_comm(rec->comm, t);
	rec->start_ns = ktau_timens(t->start_time, ctx->timens);
	rec->stack_overflows = READ_ONCE(kt->stack_overflows);
	rec->table_overflows = READ_ONCE(kt->table_overflows);
	rec->unmatched = READ_ONCE(kt->unmatched);
	if (t != current)
		ktau_read_unlock(t);
	return ktau_snap_emit(ctx, rec->size);
}

static int ktau_snap_aggregate(struct ktau_snap_ctx *ctx)
{
	struct ktau_task_rec *rec = ctx->rec;
	struct ktau_totals *tot;
	unsigned int n;

	tot = kvzalloc(sizeof(*tot), GFP_KERNEL_ACCOUNT);
	if (!tot)
		return -ENOMEM;
	if (ktau_aggregate(tot)) {
		kvfree(tot);
		return -ENOMEM;
	}
	memset(rec, 0, sizeof(*rec));
	n = ktau_totals_entries(tot, (struct ktau_entry *)(rec + 1),
				KTAU_MAX_IDS, &ctx->cv);
	/* The caller may see sources; a descriptor's opener may not. */
	if (ctx->coarse)
		n = ktau_coarsen((struct ktau_entry *)(rec + 1), n, KTAU_MAX_IDS);
	rec->size = sizeof(*rec) + n * sizeof(struct ktau_entry);
	rec->nentries = n;
	rec->flags = KTAU_REC_AGGREGATE;
	strscpy(rec->comm, "aggregate", sizeof(rec->comm));
	rec->stack_overflows = tot->stack_overflows;
	rec->table_overflows = tot->table_overflows;
	rec->unmatched = tot->unmatched;
	kvfree(tot);
	return ktau_snap_emit(ctx, rec->size);
}

/*
 * Take references to the tasks to read, so that records are copied to
 * user space outside RCU. @pids NULL: every thread.
 */
static struct task_struct **ktau_snap_gather(struct ktau_snap_ctx *ctx,
					     const s32 *pids, unsigned int npids,
					     bool process, unsigned int *nr)
{
	unsigned int cap, n = 0, i;
	struct task_struct **v, *p, *t;

	cap = pids && !process ? npids : READ_ONCE(nr_threads) + 64;
	v = kvmalloc_array(cap, sizeof(*v), GFP_KERNEL_ACCOUNT);
	if (!v)
		return ERR_PTR(-ENOMEM);
	rcu_read_lock();
	if (!pids) {
		/* Threads created since nr_threads was read: count, not lose. */
		for_each_process_thread(p, t) {
			/* Not in the reader's PID namespace: not there for it. */
			if (!task_pid_nr_ns(t, ctx->ns))
				continue;
			if (n == cap) {
				ctx->req.nmissing++;
				continue;
			}
			get_task_struct(t);
			v[n++] = t;
		}
	}
	for (i = 0; pids && i < npids; i++) {
		p = find_task_by_pid_ns(pids[i], ctx->ns);
		if (!p) {
			ctx->req.nmissing++;
			continue;
		}
		if (!process) {
			get_task_struct(p);
			v[n++] = p;
			continue;
		}
		for_each_thread(p, t) {
			if (n == cap) {
				ctx->req.nmissing++;
				continue;
			}
			get_task_struct(t);
			v[n++] = t;
		}
	}
	rcu_read_unlock();
	*nr = n;
	return v;
}

static int ktau_snap_tasks(struct ktau_snap_ctx *ctx, const s32 *pids,
			   unsigned int npids, bool process)
{
	unsigned int mode = PTRACE_MODE_READ_FSCREDS;
	struct task_struct **v;
	unsigned int n, i;
	int ret = 0;

	if (!pids)
		mode |= PTRACE_MODE_NOAUDIT;
	v = ktau_snap_gather(ctx, pids, npids, process, &n);
	if (IS_ERR(v))
		return PTR_ERR(v);
	for (i = 0; i < n; i++) {
		if (!ret)
			ret = ktau_snap_task(ctx, v[i], mode);
		put_task_struct(v[i]);
	}
	kvfree(v);
	return ret;
}

static long ktau_snapshot(struct file *file, struct ktau_snapshot __user *ureq)
{
	struct ktau_snap_ctx ctx = {};
	struct ktau_snapshot *req = &ctx.req;
	s32 *pids = NULL;
	u32 size;
	int ret = 0;

	if (get_user(size, &ureq->size))
		return -EFAULT;
	if (size != sizeof(*req))
		return -EINVAL;
	if (copy_from_user(req, ureq, sizeof(*req)))
		return -EFAULT;
	if (!req->flags || (req->flags & ~KTAU_SNAP_FLAGS) || req->reserved ||
	    req->npids > KTAU_SNAP_MAX_PIDS ||
	    (!!(req->flags & KTAU_SNAP_PIDS) != !!req->npids) ||
	    ((req->flags & KTAU_SNAP_PROCESS) && !(req->flags & KTAU_SNAP_PIDS)))
		return -EINVAL;
	if ((req->flags & KTAU_SNAP_AGGREGATE) && !ktau_capable())
		return -EPERM;
	if (req->buf_size && !access_ok(u64_to_user_ptr(req->buf), req->buf_size))
		return -EFAULT;
	req->ntasks = 0;
	req->nmissing = 0;
	ctx.timens = ktau_timens_offset();
	req->time_ns = ktau_timens(ktime_get_ns(), ctx.timens);

	if (req->flags & KTAU_SNAP_PIDS) {
		/* Up to 256 KiB: charged to the caller, as the copies are. */
		pids = kvmalloc_array(req->npids, sizeof(*pids),
				      GFP_KERNEL_ACCOUNT);
		if (!pids)
			return -ENOMEM;
		if (copy_from_user(pids, u64_to_user_ptr(req->pids),
				   array_size(req->npids, sizeof(*pids)))) {
			kvfree(pids);
			return -EFAULT;
		}
	}
	ctx.ns = proc_pid_ns(file_inode(file)->i_sb);
	ctx.ubuf = u64_to_user_ptr(req->buf);
	ctx.max_entries = max_t(unsigned int, ktau_nr_slots, KTAU_MAX_IDS);
	ctx.rec = kvmalloc(sizeof(*ctx.rec) +
			   ctx.max_entries * sizeof(struct ktau_entry),
			   GFP_KERNEL_ACCOUNT);
	if (!ctx.rec) {
		ret = -ENOMEM;
		goto out;
	}
	ktau_conv_get(&ctx.cv);
	ctx.coarse = ktau_file_detail_hidden(file);

	if (req->flags & KTAU_SNAP_SELF)
		ret = ktau_snap_task(&ctx, current, PTRACE_MODE_READ_FSCREDS);
	if (!ret && (req->flags & KTAU_SNAP_PIDS))
		ret = ktau_snap_tasks(&ctx, pids, req->npids,
				      req->flags & KTAU_SNAP_PROCESS);
	if (!ret && (req->flags & KTAU_SNAP_ALL))
		ret = ktau_snap_tasks(&ctx, NULL, 0, false);
	if (!ret && (req->flags & KTAU_SNAP_AGGREGATE))
		ret = ktau_snap_aggregate(&ctx);
	if (ret)
		goto out;

	req->used = ctx.used;
	if (ctx.nospc) {
		req->ntasks = 0;
		ret = -ENOSPC;
	}
	if (copy_to_user(ureq, req, sizeof(*req)))
		ret = -EFAULT;
out:
	kvfree(ctx.rec);
	kvfree(pids);
	return ret;
}

/*
 * Control by ioctl, for tools that have CAP_PERFMON but may not open the
 * root-owned /proc/ktau/control for writing.
 */
static long ktau_control_ioctl(unsigned int cmd, unsigned long arg)
{
	u64 mask;

	if (!ktau_capable())
		return -EPERM;
	switch (cmd) {
	case KTAU_IOC_SET_GROUPS:
		if (get_user(mask, (u64 __user *)arg))
			return -EFAULT;
		if (mask & ~(BIT_ULL(KTAU_NR_GROUPS) - 1))
			return -EINVAL;
		return ktau_set_groups(mask);
	case KTAU_IOC_RESET:
		ktau_reset_all();
		return 0;
	}
	return -ENOTTY;
}

static long ktau_profiles_ioctl(struct file *file, unsigned int cmd,
				unsigned long arg)
{
	u64 mask;

	switch (cmd) {
	case KTAU_IOC_SNAPSHOT:
		return ktau_snapshot(file, (struct ktau_snapshot __user *)arg);
	case KTAU_IOC_GET_GROUPS:
		mask = READ_ONCE(ktau_groups_on);
		return put_user(mask, (u64 __user *)arg);
	case KTAU_IOC_SET_GROUPS:
	case KTAU_IOC_RESET:
		return ktau_control_ioctl(cmd, arg);
	case KTAU_IOC_SHARED_REGISTER:
		return ktau_shared_register((const void __user *)arg);
	case KTAU_IOC_SHARED_UNREGISTER:
		return ktau_shared_unregister();
	case KTAU_IOC_SAMPLE_START:
		return ktau_sample_start((const void __user *)arg, false);
	case KTAU_IOC_SAMPLE_READ:
		return ktau_sample_read(file, (void __user *)arg, false, false);
	case KTAU_IOC_SAMPLE_STOP:
		return ktau_sample_read(file, (void __user *)arg, true, false);
	case KTAU_IOC_SAMPLE_START_STACK:
		return ktau_sample_start((const void __user *)arg, true);
	case KTAU_IOC_SAMPLE_READ_STACK:
		return ktau_sample_read(file, (void __user *)arg, false, true);
	case KTAU_IOC_SAMPLE_STOP_STACK:
		return ktau_sample_read(file, (void __user *)arg, true, true);
	}
	return -ENOTTY;
}

static int ktau_profiles_open(struct inode *inode, struct file *file)
{
	return 0;
}

static const struct proc_ops ktau_profiles_ops = {
	.proc_open		= ktau_profiles_open,
	.proc_ioctl		= ktau_profiles_ioctl,
#ifdef CONFIG_COMPAT
	.proc_compat_ioctl	= compat_ptr_ioctl,
#endif
	.proc_lseek		= noop_llseek,
};

static int __init ktau_proc_init(void)
{
	struct proc_dir_entry *dir;

	if (!ktau_ready)
		return 0;
	dir = proc_mkdir("ktau", NULL);
	if (!dir)
		return -ENOMEM;
	if (!proc_create_single("version", 0444, dir, ktau_version_show) ||
	    !proc_create_single("functions", 0444, dir, ktau_functions_show) ||
	    !proc_create("control", 0644, dir, &ktau_control_ops) ||
	    !proc_create("aggregate", 0444, dir, &ktau_aggregate_ops) ||
	    !proc_create("profiles", 0444, dir, &ktau_profiles_ops) ||
	    !proc_create("collect", 0444, dir, &ktau_collect_ops) ||
	    (IS_ENABLED(CONFIG_KTAU_TRACE) &&
	     !proc_create("trace", 0444, dir, &ktau_trace_ops)) ||
	    (IS_ENABLED(CONFIG_FPROBE) &&
	     !proc_create("probes", 0444, dir, &ktau_probes_ops))) {
		remove_proc_subtree("ktau", NULL);
		return -ENOMEM;
	}
	return 0;
}
fs_initcall(ktau_proc_init);
