/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The map layout shared by syscount.bpf.c (the eBPF peer of
 * scripts/bench.sh) and syscount.c (its loader).
 */
#ifndef KTAU_BENCH_SYSCOUNT_H
#define KTAU_BENCH_SYSCOUNT_H

#include <linux/types.h>

/* One (task, system call) of the stats map. */
struct key {
	__u32 tid;
	__u32 nr;
};

struct sc_stat {
	__u64 count;
	__u64 total_ns;
};

#endif
