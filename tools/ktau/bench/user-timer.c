// SPDX-License-Identifier: GPL-2.0
/*
 * ktau-bench-user-timer: the cost of a libktau user timer start/stop pair
 * with the thread's KTAU shared page registered (kernel time charged at
 * every event) and without it, and the system calls made meanwhile.
 *
 *   ktau-bench-user-timer [-n PAIRS] [-r ROUNDS]
 *   ktau-bench-user-timer -f FUNCTIONS [-n PAIRS] [-r ROUNDS]
 *
 * With -f, the pairs are the -finstrument-functions hooks' entries and
 * exits of FUNCTIONS distinct functions in turn (addresses of this
 * program's own table, as the hooks get them), under one outer function:
 * the runtime's look-ups as a program with that many functions makes
 * them ("functions N: X ns/pair", the best of the rounds, page
 * registered when KTAU has one).
 *
 * Each round times PAIRS start/stop pairs of one timer (under an outer
 * timer) with the page, then without (ktau_user_shared(0)), then
 * registers again; the empty loop is timed too and subtracted. Under QEMU
 * with -icount shift=0,sleep=off a nanosecond is one guest instruction,
 * so "difference" is the extra instructions of a pair with the page. The
 * system calls in the loop come from two KTAU snapshots of the thread
 * around it, less what two snapshots back to back count (their own), and the
 * "page reads" are events that found new kernel data (an interrupt, the
 * timer tick) and took the slow path. Without KTAU only the "without"
 * figures are printed.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/ktau.h>

#include "libktau.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The registry, to tell system calls from run-time IDs (interrupts). */
static struct ktau_registry *registry;

static uint64_t syscalls_of(const struct ktau_snap *s)
{
	uint64_t n = 0;
	size_t i;

	if (!s || !s->ntasks)
		return 0;
	for (i = 0; i < s->tasks[0].nentries; i++) {
		uint32_t id = s->tasks[0].entries[i].id;

		if (ktau_func_group(registry, id) == KTAU_GROUP_SYSCALL)
			n += s->tasks[0].entries[i].count;
	}
	return n;
}

struct result {
	double pair_ns, loop_ns;
	long long syscalls;
	uint64_t page_reads;
};

static __attribute__((noinline)) uint64_t empty_loop(long n)
{
	uint64_t t0 = now_ns();
	long i;

	for (i = 0; i < n; i++)
		__asm__ volatile("" ::: "memory");
	return now_ns() - t0;
}

/*
 * The system calls that two snapshots taken back to back count between
 * them (the first one's ioctl, the second one's buffer allocation): the
 * measurement's own, subtracted from the loop's.
 */
static long long snap_syscalls(struct ktau *k)
{
	struct ktau_snap *a = NULL, *b = NULL;
	long long n = -1;

	if (!ktau_snapshot(k, KTAU_LIB_SELF, NULL, 0, &a) &&
	    !ktau_snapshot(k, KTAU_LIB_SELF, NULL, 0, &b))
		n = (long long)(syscalls_of(b) - syscalls_of(a));
	ktau_snap_free(a);
	ktau_snap_free(b);
	return n;
}

static int measure(struct ktau *k, struct ktau_timer *outer, struct ktau_timer *t, long n,
		   struct result *r)
{
	struct ktau_snap *a = NULL, *b = NULL;
	struct ktau_user_stats s0, s1;
	uint64_t t0, t1;
	long i;

	ktau_timer_start(outer);
	if (k && ktau_snapshot(k, KTAU_LIB_SELF, NULL, 0, &a))
		a = NULL;
	ktau_user_stats(&s0);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		ktau_timer_start(t);
		ktau_timer_stop(t);
	}
	t1 = now_ns();
	ktau_user_stats(&s1);
	if (k && ktau_snapshot(k, KTAU_LIB_SELF, NULL, 0, &b))
		b = NULL;
	ktau_timer_stop(outer);
	r->loop_ns = (double)empty_loop(n) / n;
	r->pair_ns = (double)(t1 - t0) / n - r->loop_ns;
	r->syscalls = a && b && registry ?
		(long long)(syscalls_of(b) - syscalls_of(a)) - snap_syscalls(k) : -1;
	r->page_reads = s1.page_reads - s0.page_reads;
	ktau_snap_free(a);
	ktau_snap_free(b);
	return 0;
}

void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);

/* Stand-ins for functions: distinct addresses, 16 bytes apart. */
static char fake_code[1 << 20] __attribute__((aligned(16)));

static double measure_functions(long nfuncs, long n)
{
	char *outer = fake_code + sizeof(fake_code) - 16;
	uint64_t t0, t1;
	long i, f = 0;

	__cyg_profile_func_enter(outer, NULL);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		__cyg_profile_func_enter(fake_code + 16 * f, NULL);
		__cyg_profile_func_exit(fake_code + 16 * f, NULL);
		if (++f == nfuncs)
			f = 0;
	}
	t1 = now_ns();
	__cyg_profile_func_exit(outer, NULL);
	return (double)(t1 - t0) / n - (double)empty_loop(n) / n;
}

static int bench_functions(long nfuncs, long n, long rounds)
{
	double best = 0, r;
	long i;

	if (nfuncs <= 0 || nfuncs > (long)(sizeof(fake_code) / 16) - 1) {
		fprintf(stderr, "ktau-bench-user-timer: -f between 1 and %zu\n",
			sizeof(fake_code) / 16 - 1);
		return 2;
	}
	/* Warm up: every function's timer and callpath exist before timing. */
	measure_functions(nfuncs, nfuncs * 2);
	for (i = 0; i < rounds; i++) {
		r = measure_functions(nfuncs, n);
		if (!i || r < best)
			best = r;
	}
	printf("functions %ld: %.1f ns/pair (the best of %ld rounds of %ld pairs; under QEMU "
	       "-icount shift=0 these are guest instructions)\n", nfuncs, best, rounds, n);
	return 0;
}

int main(int argc, char **argv)
{
	struct ktau_timer *outer, *t;
	struct result with = { 0 }, without = { 0 }, r;
	struct ktau *k = NULL;
	long n = 1000000, rounds = 3, i, nfuncs = 0;
	int c, reg, best = 1;

	while ((c = getopt(argc, argv, "f:n:r:h")) != -1) {
		switch (c) {
		case 'f': nfuncs = atol(optarg); break;
		case 'n': n = atol(optarg); break;
		case 'r': rounds = atol(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-f FUNCTIONS] [-n PAIRS] [-r ROUNDS]\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (n <= 0 || rounds <= 0) {
		fprintf(stderr, "%s: -n and -r must be positive\n", argv[0]);
		return 2;
	}
	/*
	 * The snapshots' buffers from a heap that neither grows nor shrinks
	 * (no brk, mmap or munmap of malloc's own), so that the system calls
	 * of two snapshots are the same around the loop as back to back.
	 */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TOP_PAD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 128 << 20);
	/* Every pair timed (no throttling: the pairs are what is measured). */
	setenv("KTAU_THROTTLE", "0", 1);
	/* No profile at exit: this is a benchmark. */
	ktau_user_output(NULL);
	reg = ktau_user_init();
	if (reg < 0) {
		fprintf(stderr, "%s: the libktau runtime cannot start: %s\n", argv[0],
			strerror(-reg));
		return 1;
	}
	if (nfuncs)
		return bench_functions(nfuncs, n, rounds);
	if (ktau_open(&k))
		k = NULL;
	if (k && ktau_registry_load(&registry))
		registry = NULL;
	outer = ktau_timer_get("bench");
	t = ktau_timer_get("pair");
	printf("user-timer: %ld pairs x %ld rounds; page registered: %s\n", n, rounds,
	       reg ? "yes" : "no (no KTAU with shared pages: only the figures without)");
	/* Warm up: the timers' nodes and tables exist before timing. */
	measure(NULL, outer, t, n / 10 + 1, &r);
	for (i = 0; i < rounds; i++) {
		if (reg) {
			measure(k, outer, t, n, &r);
			if (best || r.pair_ns < with.pair_ns)
				with = r;
			if (ktau_user_shared(0) != 0) {
				fprintf(stderr, "%s: cannot unregister the page\n", argv[0]);
				return 1;
			}
		}
		measure(k, outer, t, n, &r);
		if (best || r.pair_ns < without.pair_ns)
			without = r;
		best = 0;
		if (reg && ktau_user_shared(1) != 1) {
			fprintf(stderr, "%s: cannot register the page again\n", argv[0]);
			return 1;
		}
	}
	if (reg)
		printf("with page:    %.1f ns/pair (empty loop %.2f ns/iteration subtracted); "
		       "page reads %llu; system calls in the loop %lld\n", with.pair_ns, with.loop_ns,
		       (unsigned long long)with.page_reads, with.syscalls);
	printf("without page: %.1f ns/pair (empty loop %.2f ns/iteration subtracted); "
	       "system calls in the loop %lld\n", without.pair_ns, without.loop_ns,
	       without.syscalls);
	if (reg)
		printf("difference:   %.1f ns/pair (the best of %ld rounds each; under QEMU "
		       "-icount shift=0 these are guest instructions)\n",
		       with.pair_ns - without.pair_ns, rounds);
	ktau_close(k);
	return 0;
}
