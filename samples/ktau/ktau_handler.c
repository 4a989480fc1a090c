// SPDX-License-Identifier: GPL-2.0-only
/*
 * KTAU example: a handler that counts the starts, stops and events it
 * sees, per group.
 *
 *	insmod ktau_handler.ko groups=0x1 tgid=1234 watch_id=142
 *	cat /proc/ktau_handler
 *
 * groups is a mask of KTAU groups (bit n for KTAU_GROUP n; default all
 * but kvm, which has no handler events),
 * tgid limits the counting to one process (0: every task), and the calls
 * of function ID watch_id are counted apart. The handler runs in the
 * hooks' context, interrupts off, so it only adds to per-CPU counters.
 *
 * With second=MASK, a second handler for the groups in MASK counts the
 * starts and stops of watch_id on its own ("watch2" line): with two
 * handlers the hooks go through KTAU's dispatcher, and each handler must
 * still see exactly the events of its own groups.
 */

#include <linux/kernel.h>
#include <linux/ktau.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/sched.h>
#include <linux/seq_file.h>

static ulong groups = (BIT(KTAU_NR_GROUPS) - 1) & ~BIT(KTAU_GROUP_KVM);
module_param(groups, ulong, 0444);
MODULE_PARM_DESC(groups, "mask of KTAU groups to count (bit n: group n; not kvm)");
static int tgid;
module_param(tgid, int, 0444);
MODULE_PARM_DESC(tgid, "count only this process (init namespace); 0: all");
static uint watch_id;
module_param(watch_id, uint, 0444);
MODULE_PARM_DESC(watch_id, "a function ID whose starts and stops are counted apart");
static ulong second;
module_param(second, ulong, 0444);
MODULE_PARM_DESC(second, "groups of a second handler that counts watch_id; 0: none");

struct ktau_counts {
	u64 starts[KTAU_NR_GROUPS];
	u64 stops[KTAU_NR_GROUPS];
	u64 events[KTAU_NR_GROUPS];
	u64 watch_starts;
	u64 watch_stops;
	u64 watch_incl;		/* clock units */
	u64 watch2_starts;	/* the second handler's */
	u64 watch2_stops;
	u64 watch2_incl;
};

static DEFINE_PER_CPU(struct ktau_counts, counts);
static struct proc_dir_entry *handler_entry;

static void ktau_count(struct ktau_handler *h, const struct ktau_hevent *ev)
{
	struct ktau_counts *c = this_cpu_ptr(&counts);

	if (tgid && current->tgid != tgid)
		return;
	switch (ev->kind) {
	case KTAU_HEV_START:
		c->starts[ev->group]++;
		if (ev->id == watch_id)
			c->watch_starts++;
		break;
	case KTAU_HEV_STOP:
		c->stops[ev->group]++;
		if (ev->id == watch_id) {
			c->watch_stops++;
			c->watch_incl += ev->incl;
		}
		break;
	case KTAU_HEV_EVENT:
		c->events[ev->group]++;
		break;
	}
}

static struct ktau_handler handler = {
	.func = ktau_count,
};

static void ktau_count2(struct ktau_handler *h, const struct ktau_hevent *ev)
{
	struct ktau_counts *c = this_cpu_ptr(&counts);

	if ((tgid && current->tgid != tgid) || ev->id != watch_id)
		return;
	if (ev->kind == KTAU_HEV_START) {
		c->watch2_starts++;
	} else if (ev->kind == KTAU_HEV_STOP) {
		c->watch2_stops++;
		c->watch2_incl += ev->incl;
	}
}

static struct ktau_handler handler2 = {
	.func = ktau_count2,
};

static int ktau_handler_show(struct seq_file *m, void *v)
{
	struct ktau_counts sum = {};
	int cpu, g;

	for_each_possible_cpu(cpu) {
		struct ktau_counts *c = per_cpu_ptr(&counts, cpu);

		for (g = 0; g < KTAU_NR_GROUPS; g++) {
			sum.starts[g] += READ_ONCE(c->starts[g]);
			sum.stops[g] += READ_ONCE(c->stops[g]);
			sum.events[g] += READ_ONCE(c->events[g]);
		}
		sum.watch_starts += READ_ONCE(c->watch_starts);
		sum.watch_stops += READ_ONCE(c->watch_stops);
		sum.watch_incl += READ_ONCE(c->watch_incl);
		sum.watch2_starts += READ_ONCE(c->watch2_starts);
		sum.watch2_stops += READ_ONCE(c->watch2_stops);
		sum.watch2_incl += READ_ONCE(c->watch2_incl);
	}
	seq_puts(m, "# group starts stops events\n");
	for (g = 0; g < KTAU_NR_GROUPS; g++)
		seq_printf(m, "%d %llu %llu %llu\n", g, sum.starts[g],
			   sum.stops[g], sum.events[g]);
	seq_printf(m, "watch %u %llu %llu %llu\n", watch_id, sum.watch_starts,
		   sum.watch_stops, sum.watch_incl);
	if (second)
		seq_printf(m, "watch2 %u %llu %llu %llu\n", watch_id,
			   sum.watch2_starts, sum.watch2_stops, sum.watch2_incl);
	return 0;
}

static int __init ktau_handler_init(void)
{
	int ret;

	handler.groups = groups;
	handler_entry = proc_create_single("ktau_handler", 0444, NULL,
					   ktau_handler_show);
	if (!handler_entry)
		return -ENOMEM;
	ret = ktau_handler_register(&handler);
	if (ret)
		goto out_proc;
	if (second) {
		handler2.groups = second;
		ret = ktau_handler_register(&handler2);
		if (ret)
			goto out_handler;
	}
	return 0;

out_handler:
	ktau_handler_unregister(&handler);
out_proc:
	proc_remove(handler_entry);
	return ret;
}

static void __exit ktau_handler_exit(void)
{
	if (second)
		ktau_handler_unregister(&handler2);
	ktau_handler_unregister(&handler);
	proc_remove(handler_entry);
}

module_init(ktau_handler_init);
module_exit(ktau_handler_exit);
MODULE_DESCRIPTION("KTAU example: a handler that counts what it sees");
MODULE_LICENSE("GPL");
