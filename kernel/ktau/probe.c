// SPDX-License-Identifier: GPL-2.0-only
/*
 * KTAU dynamic probes: entry/exit timers on any traceable kernel function,
 * added at run time through fprobe. A probed function gets a function ID
 * in group "dynamic" and is timed in the per-task profiles like every
 * other routine.
 *
 * A probe belongs to the open file of /proc/ktau/probes it was added on
 * and goes away with it, with the module that holds the function, and at
 * reset. Adding and removing take ktau_probe_lock (a mutex); the handlers
 * take nothing: they push and pop a frame of the current task.
 */

#include <linux/fprobe.h>
#include <linux/ftrace.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pid_namespace.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include "internal.h"

/*
 * Return slots per probe: calls of the function in progress at one time,
 * over all tasks (a task blocked inside holds one). More are counted as
 * missed. fprobe's rethook keeps them in an objpool with a slot per
 * possible CPU, each at least a page: a probe takes about a page per
 * possible CPU (1 MiB with 256), not charged to a memory cgroup, and at
 * most KTAU_PROBE_MAX probes exist (CAP_PERFMON adds them).
 */
#define KTAU_PROBE_ACTIVE	128

struct ktau_probe {
	struct fprobe fp;
	struct list_head node;
	struct file *owner;	/* identity only: the file it was added on */
	struct pid *owner_pid;
	unsigned long addr;
	u64 seq;		/* which add made it */
	u32 id;
	char name[KTAU_PROBE_NAME_LEN];
};

static LIST_HEAD(ktau_probes);
static unsigned int ktau_nr_probes;
static u64 ktau_probe_seq;
static DEFINE_MUTEX(ktau_probe_lock);

/*
 * Functions that open or close a KTAU frame of their own and return in
 * between, or that a task enters or leaves other than by a call and a
 * return (a new task starts in ret_from_fork, whose caller never called
 * it): a probe on them would interleave with those frames, not nest.
 * Matched by the name of the function at the address asked for, without
 * a module prefix or a compiler suffix (.isra.0, .constprop.0, ...), and
 * by address (an alias).
 */
static const char * const ktau_probe_deny[] = {
	"irq_enter", "irq_enter_rcu", "irq_exit", "irq_exit_rcu",
	"ret_from_fork", "ret_from_fork_asm", "schedule_tail",
	/* closes the sched frame that __schedule() opened (ktau_sched_in()) */
	"finish_task_switch",
	/* KVM: between a guest entry and the next, the kvm group's frames */
	"vcpu_run", "vcpu_enter_guest", "svm_vcpu_run", "vmx_vcpu_run",
};

static int ktau_probe_entry(struct fprobe *fp, unsigned long ip,
			    unsigned long ret_ip, struct pt_regs *regs,
			    void *data)
{
	struct ktau_probe *p = container_of(fp, struct ktau_probe, fp);

	/* Nonzero: no exit handler call for this entry. */
	if (!ktau_group_on(KTAU_GROUP_DYNAMIC) || !current->ktau || in_nmi())
		return 1;
	/* The context of the entry, for the exit: see __ktau_stop_id(). */
	*(u64 *)data = ktau_ctx(KTAU_GROUP_DYNAMIC);
	__ktau_start(KTAU_GROUP_DYNAMIC, p->id);
	return 0;
}

static void ktau_probe_exit(struct fprobe *fp, unsigned long ip,
			    unsigned long ret_ip, struct pt_regs *regs,
			    void *data)
{
	struct ktau_probe *p = container_of(fp, struct ktau_probe, fp);

	__ktau_stop_id(KTAU_GROUP_DYNAMIC, p->id, *(u64 *)data);
}

static struct ktau_probe *ktau_probe_find(const char *name, int id)
{
	struct ktau_probe *p;

	list_for_each_entry(p, &ktau_probes, node)
		if (name[0] ? !strcmp(p->name, name) : p->id == id)
			return p;
	return NULL;
}

/*
 * Unregister @p and move it to @gone; under ktau_probe_lock. If fprobe
 * cannot unregister it (ftrace was killed), its handlers may still run:
 * it stays, owned by no file, and is never freed.
 */
static void ktau_probe_unlink(struct ktau_probe *p, struct list_head *gone)
{
	if (WARN_ON_ONCE(unregister_fprobe(&p->fp))) {
		p->owner = NULL;
		return;
	}
	list_move(&p->node, gone);
	ktau_nr_probes--;
	ktau_unregister_point(p->id);
	put_pid(p->owner_pid);
}

/* Free the probes on @gone, after one grace period for all of them. */
static void ktau_probe_free_list(struct list_head *gone)
{
	struct ktau_probe *p, *tmp;

	if (list_empty(gone))
		return;
	/* The handlers run with preemption off. */
	synchronize_rcu();
	list_for_each_entry_safe(p, tmp, gone, node)
		kfree(p);
}

/* Whether the function at @addr (its first byte) is on the deny list. */
static bool ktau_probe_denied(unsigned long addr)
{
	char sym[KSYM_NAME_LEN];
	unsigned int i;

	if (lookup_symbol_name(addr, sym))
		return true;
	sym[strcspn(sym, ".")] = '\0';
	for (i = 0; i < ARRAY_SIZE(ktau_probe_deny); i++)
		if (!strcmp(sym, ktau_probe_deny[i]) ||
		    kallsyms_lookup_name(ktau_probe_deny[i]) == addr)
			return true;
	return false;
}

/*
 * The ftrace site of @name if it is a function that may be probed, and
 * in *@modp its module, held (NULL for the kernel's own text): a module
 * on its way out is refused, one held cannot go before the probe is on
 * the list, where its going finds it. Under ktau_probe_lock.
 */
static int ktau_probe_check(const char *name, unsigned long *addrp,
			    struct module **modp)
{
	unsigned long addr, size, off;
	struct module *mod;

	lockdep_assert_held(&ktau_probe_lock);
	*modp = NULL;
	addr = kallsyms_lookup_name(name);
	if (!addr)
		return -ENOENT;
	/* A function's first byte, with an ftrace site: not notrace. */
	if (!kallsyms_lookup_size_offset(addr, &size, &off) || off ||
	    ktau_probe_denied(addr))
		return -EINVAL;
	preempt_disable();
	mod = __module_text_address(addr);
	if (mod && !try_module_get(mod)) {
		preempt_enable();
		return -ENOENT;
	}
	preempt_enable();
	addr = ftrace_location(addr);
	if (!addr) {
		module_put(mod);
		return -EINVAL;
	}
	*addrp = addr;
	*modp = mod;
	return 0;
}

/* Add a probe on req->name; its ID in req->id, which add in *@seq. */
static long ktau_probe_add(struct file *file, struct ktau_probe_req *req, u64 *seq)
{
	struct ktau_probe *p, *q;
	struct module *mod = NULL;
	int ret, id;

	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return -ENOMEM;
	strscpy(p->name, req->name, sizeof(p->name));
	p->owner = file;
	p->fp.entry_handler = ktau_probe_entry;
	p->fp.exit_handler = ktau_probe_exit;
	p->fp.entry_data_size = sizeof(u64);
	p->fp.nr_maxactive = KTAU_PROBE_ACTIVE;

	mutex_lock(&ktau_probe_lock);
	ret = ktau_probe_check(req->name, &p->addr, &mod);
	if (ret)
		goto fail;
	ret = -EEXIST;
	if (ktau_probe_find(p->name, 0))
		goto fail;
	/* Another name of the same function (an alias, "module:name"). */
	list_for_each_entry(q, &ktau_probes, node)
		if (q->addr == p->addr)
			goto fail;
	ret = -ENOSPC;
	if (ktau_nr_probes >= KTAU_PROBE_MAX)
		goto fail;
	id = ktau_register_again(p->name, KTAU_GROUP_DYNAMIC);
	ret = id;
	if (id < 0)
		goto fail;
	p->id = id;
	ret = register_fprobe_ips(&p->fp, &p->addr, 1);
	if (ret) {
		ktau_unregister_point(id);
		goto fail;
	}
	p->owner_pid = get_task_pid(current, PIDTYPE_TGID);
	p->seq = ++ktau_probe_seq;
	*seq = p->seq;
	list_add_tail(&p->node, &ktau_probes);
	ktau_nr_probes++;
	mutex_unlock(&ktau_probe_lock);
	/* On the list: the module's going takes the probe from now on. */
	module_put(mod);
	req->id = id;
	return 0;
fail:
	mutex_unlock(&ktau_probe_lock);
	module_put(mod);
	kfree(p);
	return ret;
}

/* Take back the probe that add @seq made, if it is still there. */
static void ktau_probe_undo(u64 seq)
{
	struct ktau_probe *p;
	LIST_HEAD(gone);

	mutex_lock(&ktau_probe_lock);
	list_for_each_entry(p, &ktau_probes, node) {
		if (p->seq == seq) {
			ktau_probe_unlink(p, &gone);
			break;
		}
	}
	mutex_unlock(&ktau_probe_lock);
	ktau_probe_free_list(&gone);
}

static long ktau_probe_remove(struct ktau_probe_req *req)
{
	struct ktau_probe *p;
	long ret = -ENOENT;
	LIST_HEAD(gone);

	mutex_lock(&ktau_probe_lock);
	p = ktau_probe_find(req->name, req->id);
	if (p) {
		ktau_probe_unlink(p, &gone);
		ret = 0;
	}
	mutex_unlock(&ktau_probe_lock);
	/* The grace period outside the lock: other adds and lists go on. */
	ktau_probe_free_list(&gone);
	return ret;
}

/* Reset: every probe goes. */
void ktau_probe_remove_all(void)
{
	struct ktau_probe *p, *tmp;
	LIST_HEAD(gone);

	mutex_lock(&ktau_probe_lock);
	list_for_each_entry_safe(p, tmp, &ktau_probes, node)
		ktau_probe_unlink(p, &gone);
	mutex_unlock(&ktau_probe_lock);
	ktau_probe_free_list(&gone);
}

static long ktau_probes_ioctl(struct file *file, unsigned int cmd,
			      unsigned long arg)
{
	struct ktau_probe_req __user *ureq = (void __user *)arg;
	struct ktau_probe_req req;
	u64 seq = 0;
	long ret;
	u32 size;

	if (cmd != KTAU_IOC_PROBE_ADD && cmd != KTAU_IOC_PROBE_REMOVE)
		return -ENOTTY;
	if (!ktau_capable())
		return -EPERM;
	if (get_user(size, &ureq->size))
		return -EFAULT;
	if (size != sizeof(req))
		return -EINVAL;
	if (copy_from_user(&req, ureq, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.reserved ||
	    strnlen(req.name, sizeof(req.name)) == sizeof(req.name))
		return -EINVAL;
	if (cmd == KTAU_IOC_PROBE_REMOVE)
		return ktau_probe_remove(&req);
	if (!req.name[0])
		return -EINVAL;
	ret = ktau_probe_add(file, &req, &seq);
	if (!ret && put_user(req.id, &ureq->id)) {
		/*
		 * The caller cannot learn the ID: take the probe back, this
		 * one (another task may have removed it and added its
		 * function again meanwhile, with the same ID).
		 */
		ktau_probe_undo(seq);
		ret = -EFAULT;
	}
	return ret;
}

/*
 * The probes' list, each with the process that added it, or 0 once that
 * exited: its number may be another process's by then (a probe lives as
 * long as its file, which the adder may have passed on).
 */
static int ktau_probes_show(struct seq_file *m, void *v)
{
	struct pid_namespace *ns = proc_pid_ns(file_inode(m->file)->i_sb);
	struct ktau_probe *p;
	pid_t owner;

	seq_puts(m, "# id function owner missed\n");
	mutex_lock(&ktau_probe_lock);
	list_for_each_entry(p, &ktau_probes, node) {
		rcu_read_lock();
		owner = pid_has_task(p->owner_pid, PIDTYPE_TGID) ?
			pid_nr_ns(p->owner_pid, ns) : 0;
		rcu_read_unlock();
		seq_printf(m, "%u %s %d %lu\n", p->id, p->name, owner,
			   READ_ONCE(p->fp.nmissed));
	}
	mutex_unlock(&ktau_probe_lock);
	return 0;
}

static int ktau_probes_open(struct inode *inode, struct file *file)
{
	return single_open(file, ktau_probes_show, NULL);
}

/* The last reference to the file is gone: so are its probes. */
static int ktau_probes_release(struct inode *inode, struct file *file)
{
	struct ktau_probe *p, *tmp;
	LIST_HEAD(gone);

	mutex_lock(&ktau_probe_lock);
	list_for_each_entry_safe(p, tmp, &ktau_probes, node)
		if (p->owner == file)
			ktau_probe_unlink(p, &gone);
	mutex_unlock(&ktau_probe_lock);
	ktau_probe_free_list(&gone);
	return single_release(inode, file);
}

const struct proc_ops ktau_probes_ops = {
	.proc_open		= ktau_probes_open,
	.proc_read		= seq_read,
	.proc_lseek		= seq_lseek,
	.proc_release		= ktau_probes_release,
	.proc_ioctl		= ktau_probes_ioctl,
#ifdef CONFIG_COMPAT
	.proc_compat_ioctl	= compat_ptr_ioctl,
#endif
};

/* A module going away takes the probes on its functions with it. */
static int ktau_probe_module_notify(struct notifier_block *nb,
				    unsigned long action, void *data)
{
	struct module *mod = data;
	struct ktau_probe *p, *tmp;
	LIST_HEAD(gone);

	if (action != MODULE_STATE_GOING)
		return NOTIFY_DONE;
	mutex_lock(&ktau_probe_lock);
	list_for_each_entry_safe(p, tmp, &ktau_probes, node)
		if (within_module(p->addr, mod))
			ktau_probe_unlink(p, &gone);
	mutex_unlock(&ktau_probe_lock);
	ktau_probe_free_list(&gone);
	return NOTIFY_DONE;
}

static struct notifier_block ktau_probe_module_nb = {
	.notifier_call = ktau_probe_module_notify,
};

static int __init ktau_probe_init(void)
{
	return register_module_notifier(&ktau_probe_module_nb);
}
core_initcall(ktau_probe_init);
