// SPDX-License-Identifier: GPL-2.0
/*
 * ktau-test-hold: keeps the run-time static keys of the kernel switched
 * on, so that nothing patches kernel text while the tests of the
 * multi-threaded TCG pass run (scripts/check.sh, pass "mttcg"). QEMU's
 * multi-threaded TCG may run a stale translation of a site another vCPU
 * just patched (seen: "Oops: int3" in syscall_exit_to_user_mode while
 * ktau_churn switched groups), so that pass switches no group, and this
 * program takes, before the tests start, the first reference of the keys
 * the tests would otherwise switch on and off again and again:
 *
 *   ktau_extra_key     a registered shared page (ktau_shared, ktau_trace
 *                      and handlers take and drop it);
 *   perf_sched_events  a per-task perf event (every sampling session
 *                      takes and, a second later, drops it).
 *
 * Prints "ready" when it holds both, then waits for SIGTERM. Exit 1 (with
 * what failed) when it cannot take one.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libktau.h"

int main(void)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.disabled = 1,
	};
	struct ktau_page *pg;
	sigset_t set;
	int fd, ret, sig;

	ret = ktau_page_register(&pg);
	if (ret) {
		fprintf(stderr, "ktau-test-hold: cannot register a shared page: %s\n",
			strerror(-ret));
		return 1;
	}
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0) {
		fprintf(stderr, "ktau-test-hold: perf_event_open: %s\n", strerror(errno));
		return 1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig);
	close(fd);
	return 0;
}
