// SPDX-License-Identifier: GPL-2.0
/*
 * Null system call cost: CLOCK_MONOTONIC ns per getppid() call, best of
 * several runs. Under QEMU with -icount shift=0,sleep=off one guest
 * instruction is one virtual ns, so the figure is an instruction count.
 *
 * Usage: ktau-bench-syscall [calls-per-run [runs]]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	int runs = argc > 2 ? atoi(argv[2]) : 7;
	double best = -1, empty = -1;

	if (n <= 0 || runs <= 0) {
		fprintf(stderr, "usage: %s [calls-per-run [runs]]\n", argv[0]);
		return 2;
	}
	for (int r = 0; r < runs; r++) {
		double t0 = now_ns();

		for (long i = 0; i < n; i++)
			syscall(SYS_getppid);
		double t1 = now_ns();

		for (long i = 0; i < n; i++)
			__asm__ volatile("" ::: "memory");
		double t2 = now_ns();

		if (best < 0 || (t1 - t0) / n < best)
			best = (t1 - t0) / n;
		if (empty < 0 || (t2 - t1) / n < empty)
			empty = (t2 - t1) / n;
	}
	/* The loop itself is measured apart and subtracted. */
	printf("getppid %.1f\n", best - empty);
	return 0;
}
