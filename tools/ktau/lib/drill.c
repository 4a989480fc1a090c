// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: the decisions of drilling down ("ktaud drill"), as pure
 * functions of what was measured, so that they are tested without a
 * kernel: where a KTAU routine starts in the kernel's functions, and
 * whether the time of a function concentrates in one of its callees.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ktau-drill.h"

/* The softirq vectors' handlers (kernel/softirq.c and the subsystems, 6.12). */
static const struct {
	const char *routine;
	const char *handlers[3];
} softirq_handlers[] = {
	{ "softirq_HI", { "tasklet_hi_action" } },
	{ "softirq_TIMER", { "run_timer_softirq" } },
	{ "softirq_NET_TX", { "net_tx_action" } },
	{ "softirq_NET_RX", { "net_rx_action" } },
	{ "softirq_BLOCK", { "blk_done_softirq" } },
	{ "softirq_IRQ_POLL", { "irq_poll_softirq" } },
	{ "softirq_TASKLET", { "tasklet_action" } },
	{ "softirq_SCHED", { "sched_balance_softirq", "run_rebalance_domains" } },
	{ "softirq_HRTIMER", { "hrtimer_run_softirq" } },
	{ "softirq_RCU", { "rcu_core_si" } },
};

int ktau_drill_start(const char *routine, int group, int (*has)(const char *name, void *arg),
		     void *arg, char *buf, size_t size, const char **why)
{
	const char *cand[4] = { NULL };
	char sys[3][KTAU_LIB_PROBE_NAME_LEN];
	size_t i;

	*why = NULL;
	switch (group) {
	case 0:	/* syscall */
		/* syscall_invalid, syscall_compat, syscall_<nr> */
		if (!strncmp(routine, "syscall_", 8)) {
			*why = "a system call without a known entry function (invalid, 32-bit "
			       "or unnamed)";
			return -ENOENT;
		}
		/* The table's entry is __x64_sys_NAME (the registry's NAME comes from it). */
		snprintf(sys[0], sizeof(sys[0]), "__x64_sys_%s", routine);
		snprintf(sys[1], sizeof(sys[1]), "__do_sys_%s", routine);
		snprintf(sys[2], sizeof(sys[2]), "__se_sys_%s", routine);
		cand[0] = sys[0];
		cand[1] = sys[1];
		cand[2] = sys[2];
		break;
	case 1:	/* irq */
		*why = "the handler of a hard interrupt is not known to ktaud (probe the "
		       "driver's handler by name with 'ktaud probe add')";
		return -ENOENT;
	case 2:	/* softirq */
		for (i = 0; i < sizeof(softirq_handlers) / sizeof(softirq_handlers[0]); i++)
			if (!strcmp(routine, softirq_handlers[i].routine))
				memcpy(cand, softirq_handlers[i].handlers,
				       sizeof(softirq_handlers[i].handlers));
		if (!cand[0]) {
			*why = "a softirq vector whose handler is not known to ktaud";
			return -ENOENT;
		}
		break;
	case 3:	/* sched */
		*why = "off-CPU time (blocked or preempted: the task did not run), which no "
		       "kernel function's probes can break down";
		return -EINVAL;
	case 4:	/* fault */
		cand[0] = "handle_mm_fault";
		break;
	case 5:	/* signal */
		cand[0] = "arch_do_signal_or_restart";
		break;
	case 6:	/* dynamic: a probed function already, or a sampling counter */
		if (!strcmp(routine, "user_mode") || !strcmp(routine, "kernel_other")) {
			*why = "a counter of samples, not a routine";
			return -EINVAL;
		}
		cand[0] = routine;
		break;
	default:
		*why = "a routine of no known group";
		return -ENOENT;
	}
	for (i = 0; i < 4 && cand[i]; i++) {
		if (!has || has(cand[i], arg)) {
			if (strlen(cand[i]) >= size)
				break;
			strcpy(buf, cand[i]);
			return 0;
		}
	}
	*why = "its kernel function is not in /proc/kallsyms";
	return -ENOENT;
}

int ktau_drill_decide(uint64_t parent_incl_ns, const struct ktau_drill_callee *c, size_t n,
		      double threshold, unsigned int depth, unsigned int max_depth, size_t *best)
{
	size_t i, b = 0;

	if (depth >= max_depth)
		return KTAU_DRILL_DEPTH;
	if (!n)
		return KTAU_DRILL_NONE;
	for (i = 1; i < n; i++) {
		if (c[i].incl_ns > c[b].incl_ns ||
		    (c[i].incl_ns == c[b].incl_ns && c[i].calls > c[b].calls))
			b = i;
	}
	*best = b;
	if (!parent_incl_ns || !c[b].incl_ns)
		return KTAU_DRILL_NO_TIME;
	return (double)c[b].incl_ns >= threshold * (double)parent_incl_ns ? KTAU_DRILL_DESCEND
									  : KTAU_DRILL_SPREAD;
}

const char *ktau_drill_verdict_text(int verdict)
{
	switch (verdict) {
	case KTAU_DRILL_DESCEND:
		return "descend";
	case KTAU_DRILL_SPREAD:
		return "the time does not concentrate in one callee";
	case KTAU_DRILL_DEPTH:
		return "the depth limit is reached";
	case KTAU_DRILL_NONE:
		return "no callee could be probed";
	case KTAU_DRILL_NO_TIME:
		return "no time was measured in the function or its callees";
	default:
		return "?";
	}
}
