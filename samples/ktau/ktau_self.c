// SPDX-License-Identifier: GPL-2.0-only
/*
 * KTAU example: a module that times a routine of its own.
 *
 * It registers a function ID for ktau_self_work() and one for an event,
 * and offers /proc/ktau_self: writing N runs the routine N times in the
 * writing task, each timed with ktau_point_start()/ktau_point_stop() and
 * counted as one "ktau_self_event". The routine then shows in that task's
 * profile (/proc/PID/ktau, group "dynamic") with N calls.
 *
 *	insmod ktau_self.ko
 *	echo 100 > /proc/ktau_self
 *
 * ktau_self_work() is also an ordinary traceable function, so that a
 * dynamic probe can be put on it and removed when the module goes.
 *
 * Writing "rMS" runs ktau_self_recurse(), a routine that calls itself
 * once: the inner call sleeps MS milliseconds, and so does the outer one
 * after the inner returned. It shows how recursion is charged (two calls,
 * inclusive time 2 * MS, not 3 * MS) and lets a reader look at the
 * profile between the two returns.
 *
 * Writing "dN" runs ktau_self_recurse() N levels deep without sleeping
 * (N up to KTAU_SELF_MAX_DEPTH): deeper than KTAU's stack of a task, the
 * levels beyond it are counted as stack overflows, not timed.
 *
 * With nap_ms=N, a kernel thread "ktau_self_nap" calls ktau_self_nap()
 * in a loop, which sleeps N milliseconds: a function a kernel thread is
 * nearly always inside, for the tests of probes removed meanwhile.
 * Writing "nMS" then makes each nap MS milliseconds from the next one on
 * and wakes the thread from the nap it is in, which ends there.
 *
 * Writing "uID" asks KTAU to unregister point ID on the module's behalf:
 * a point of another's (a probe's) is refused, for the test of that.
 * Writing "zN" starts and stops point 0, which is no point, N times: a
 * module's mistake that KTAU refuses, for the test of that.
 *
 * With keep_points=1 it leaves its three points registered when unloaded,
 * which KTAU then unregisters, for the test of that.
 *
 * With fill=N it registers up to N more points at load, "ktau_self_fill_K",
 * and says in the read-only parameters filled and fill_errno how many it
 * got and why it stopped (ENOSPC: the registry is full): the test of a
 * full registry. IDs are never given out twice in a boot, so that fills
 * the registry for the rest of the boot.
 */

#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/ktau.h>
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#define KTAU_SELF_MAX_RUNS	100000
#define KTAU_SELF_MAX_MS	10000
#define KTAU_SELF_MAX_DEPTH	64

static int work_id, event_id, recurse_id;
static struct proc_dir_entry *self_entry;
static struct task_struct *napper;

static unsigned int nap_ms;
module_param(nap_ms, uint, 0444);
MODULE_PARM_DESC(nap_ms, "start a kernel thread that naps this long in ktau_self_nap()");
static unsigned int fill;
module_param(fill, uint, 0444);
MODULE_PARM_DESC(fill, "register up to this many more points at load (a full registry)");
static unsigned int filled;
module_param(filled, uint, 0444);
MODULE_PARM_DESC(filled, "(read only) points that fill registered");
static int fill_errno;
module_param(fill_errno, int, 0444);
MODULE_PARM_DESC(fill_errno, "(read only) the errno that stopped fill, 0: none");
static bool keep_points;
module_param(keep_points, bool, 0444);
MODULE_PARM_DESC(keep_points, "leave the three points registered at unload (KTAU takes them)");

/* "nMS" ends the nap in progress: its count goes up. */
static DECLARE_WAIT_QUEUE_HEAD(nap_wq);
static atomic_t nap_ends = ATOMIC_INIT(0);

/* Traceable, for a probe: a kernel thread sleeps in it. */
static noinline void ktau_self_nap(void)
{
	int ends = atomic_read(&nap_ends);

	wait_event_idle_timeout(nap_wq, atomic_read(&nap_ends) != ends ||
				kthread_should_stop(),
				msecs_to_jiffies(READ_ONCE(nap_ms)));
}

static int ktau_self_napper(void *unused)
{
	while (!kthread_should_stop())
		ktau_self_nap();
	return 0;
}

/* The routine to time: a short busy wait. */
static noinline void ktau_self_work(void)
{
	ktau_point_start(work_id);
	udelay(5);
	ktau_point_event(event_id);
	ktau_point_stop();
}

/*
 * A routine that recurses @level - 1 times and sleeps @ms at each level
 * (not at all for 0).
 */
static noinline void ktau_self_recurse(unsigned int level, unsigned int ms)
{
	ktau_point_start(recurse_id);
	if (level > 1)
		ktau_self_recurse(level - 1, ms);
	if (ms)
		msleep(ms);
	ktau_point_stop();
}

static ssize_t ktau_self_write(struct file *file, const char __user *ubuf,
			       size_t count, loff_t *ppos)
{
	unsigned int n, i;
	char c;
	int ret;

	if (!count)
		return -EINVAL;
	if (get_user(c, ubuf))
		return -EFAULT;
	if (c == 'r') {
		ret = kstrtouint_from_user(ubuf + 1, count - 1, 0, &n);
		if (ret)
			return ret;
		if (n > KTAU_SELF_MAX_MS)
			return -ERANGE;
		ktau_self_recurse(2, n);
		return count;
	}
	if (c == 'n') {
		ret = kstrtouint_from_user(ubuf + 1, count - 1, 0, &n);
		if (ret)
			return ret;
		if (!napper)
			return -ENODEV;
		if (!n || n > 100 * KTAU_SELF_MAX_MS)
			return -ERANGE;
		WRITE_ONCE(nap_ms, n);
		atomic_inc(&nap_ends);
		wake_up(&nap_wq);
		return count;
	}
	if (c == 'z') {
		ret = kstrtouint_from_user(ubuf + 1, count - 1, 0, &n);
		if (ret)
			return ret;
		if (n > KTAU_SELF_MAX_RUNS)
			return -ERANGE;
		for (i = 0; i < n; i++) {
			ktau_point_start(KTAU_ID_NONE);
			ktau_point_stop();
		}
		return count;
	}
	if (c == 'u') {
		ret = kstrtouint_from_user(ubuf + 1, count - 1, 0, &n);
		if (ret)
			return ret;
		ktau_unregister_point(n);
		return count;
	}
	if (c == 'd') {
		ret = kstrtouint_from_user(ubuf + 1, count - 1, 0, &n);
		if (ret)
			return ret;
		if (!n || n > KTAU_SELF_MAX_DEPTH)
			return -ERANGE;
		ktau_self_recurse(n, 0);
		return count;
	}
	ret = kstrtouint_from_user(ubuf, count, 0, &n);
	if (ret)
		return ret;
	if (n > KTAU_SELF_MAX_RUNS)
		return -ERANGE;
	for (i = 0; i < n; i++) {
		ktau_self_work();
		cond_resched();
	}
	return count;
}

static const struct proc_ops ktau_self_ops = {
	.proc_write	= ktau_self_write,
	.proc_lseek	= noop_llseek,
};

/* The extra points of fill=N, registered at load, unregistered at unload. */
static int *fill_ids;

static void ktau_self_unfill(void)
{
	while (filled)
		ktau_unregister_point(fill_ids[--filled]);
	kfree(fill_ids);
	fill_ids = NULL;
}

/* Register up to fill points; the errno that stopped it in fill_errno. */
static int ktau_self_fill(void)
{
	char name[32];
	int id;

	fill_ids = kcalloc(fill, sizeof(*fill_ids), GFP_KERNEL);
	if (!fill_ids)
		return -ENOMEM;
	while (filled < fill) {
		snprintf(name, sizeof(name), "ktau_self_fill_%u", filled);
		id = ktau_register_point(name, KTAU_GROUP_DYNAMIC);
		if (id < 0) {
			fill_errno = -id;
			break;
		}
		fill_ids[filled++] = id;
	}
	return 0;
}

static int __init ktau_self_init(void)
{
	int ret;

	work_id = ktau_register_point("ktau_self_work", KTAU_GROUP_DYNAMIC);
	if (work_id < 0)
		return work_id;
	event_id = ktau_register_point("ktau_self_event", KTAU_GROUP_DYNAMIC);
	if (event_id < 0) {
		ret = event_id;
		goto out_work;
	}
	recurse_id = ktau_register_point("ktau_self_recurse", KTAU_GROUP_DYNAMIC);
	if (recurse_id < 0) {
		ret = recurse_id;
		goto out_event;
	}
	if (nap_ms) {
		napper = kthread_run(ktau_self_napper, NULL, "ktau_self_nap");
		if (IS_ERR(napper)) {
			ret = PTR_ERR(napper);
			napper = NULL;
			goto out_recurse;
		}
	}
	/* After the napper, which writes may wake, and gone before it. */
	self_entry = proc_create("ktau_self", 0200, NULL, &ktau_self_ops);
	if (!self_entry) {
		ret = -ENOMEM;
		goto out_napper;
	}
	if (fill) {
		ret = ktau_self_fill();
		if (ret)
			goto out_proc;
	}
	pr_info("ktau_self: function IDs %d (work) and %d (event)\n",
		work_id, event_id);
	return 0;

out_proc:
	proc_remove(self_entry);
out_napper:
	if (napper)
		kthread_stop(napper);
out_recurse:
	ktau_unregister_point(recurse_id);
out_event:
	ktau_unregister_point(event_id);
out_work:
	ktau_unregister_point(work_id);
	return ret;
}

static void __exit ktau_self_exit(void)
{
	ktau_self_unfill();
	proc_remove(self_entry);
	if (napper)
		kthread_stop(napper);
	if (keep_points)
		return;
	ktau_unregister_point(recurse_id);
	ktau_unregister_point(event_id);
	ktau_unregister_point(work_id);
}

module_init(ktau_self_init);
module_exit(ktau_self_exit);
MODULE_DESCRIPTION("KTAU example: a module that times a routine of its own");
MODULE_LICENSE("GPL");
