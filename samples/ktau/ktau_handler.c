// SPDX-License-Identifier: GPL-2.0-only
/*
 * KTAU example: a handler that counts the starts, stops and events it
 * sees, per group.
 *
 *	insmod ktau_handler.ko groups=0x1 tgid=1234 watch_id=142
 *	cat /proc/ktau_handler
 *
 * groups is a mask of KTAU groups (bit n for KTAU_GROUP n; default all),
 * tgid limits the counting to one process (0: every task), and the calls
 * of function ID watch_id are counted apart. The handler runs in the
 * hooks' context, interrupts off, so it only adds to per-CPU counters.
 */

#include <linux/kernel.h>
#include <linux/ktau.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/sched.h>
#include <linux/seq_file.h>

static ulong groups = BIT(KTAU_NR_GROUPS) - 1;
module_param(groups, ulong, 0444);
MODULE_PARM_DESC(groups, "mask of KTAU groups to count (bit n: group n)");
static int tgid;
module_param(tgid, int, 0444);
MODULE_PARM_DESC(tgid, "count only this process (init namespace); 0: all");
static uint watch_id;
module_param(watch_id, uint, 0444);
MODULE_PARM_DESC(watch_id, "a function ID whose starts and stops are counted apart");

struct ktau_counts {
	u64 starts[KTAU_NR_GROUPS];
	u64 stops[KTAU_NR_GROUPS];
	u64 events[KTAU_NR_GROUPS];
	u64 watch_starts;
	u64 watch_stops;
	u64 watch_incl;		/* clock units */
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
	}
	seq_puts(m, "# group starts stops events\n");
	for (g = 0; g < KTAU_NR_GROUPS; g++)
		seq_printf(m, "%d %llu %llu %llu\n", g, sum.starts[g],
			   sum.stops[g], sum.events[g]);
	seq_printf(m, "watch %u %llu %llu %llu\n", watch_id, sum.watch_starts,
		   sum.watch_stops, sum.watch_incl);
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
		proc_remove(handler_entry);
	return ret;
}

static void __exit ktau_handler_exit(void)
{
	ktau_handler_unregister(&handler);
	proc_remove(handler_entry);
}

module_init(ktau_handler_init);
module_exit(ktau_handler_exit);
MODULE_DESCRIPTION("KTAU example: a handler that counts what it sees");
MODULE_LICENSE("GPL");
