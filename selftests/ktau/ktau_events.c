// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU page fault and signal delivery profiles: every fault on a fresh
 * anonymous page and every handled signal is counted.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "ktau_util.h"

#define N_PAGES		256
#define N_SIGNALS	100

FIXTURE(events) {
	int fd;
	struct ktau_snap a, b, c;
};

FIXTURE_SETUP(events)
{
	ktau_must_have_ktau(_metadata);
	self->fd = ktau_must_open_profiles(_metadata);
	/* Buffers touched now, so that they fault nothing later. */
	ASSERT_EQ(0, ktau_snap_reserve(&self->a, KTAU_SNAP_BUF_INIT));
	ASSERT_EQ(0, ktau_snap_reserve(&self->b, KTAU_SNAP_BUF_INIT));
	ASSERT_EQ(0, ktau_snap_reserve(&self->c, KTAU_SNAP_BUF_INIT));
}

FIXTURE_TEARDOWN(events)
{
	ktau_snap_free(&self->a);
	ktau_snap_free(&self->b);
	ktau_snap_free(&self->c);
	close(self->fd);
}

/*
 * Writing one byte to each of 256 fresh anonymous pages is at least 256
 * user page faults; writing them again is (almost) none.
 */
TEST_F_TIMEOUT(events, fresh_pages_fault, 20)
{
	const long page = sysconf(_SC_PAGESIZE);
	const struct ktau_task_rec *ra, *rb, *rc;
	struct ktau_val d1, d2;
	char *p;
	int i;

	p = mmap(NULL, N_PAGES * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);

	ra = ktau_must_snap_self(_metadata, self->fd, &self->a);
	for (i = 0; i < N_PAGES; i++)
		__atomic_store_n(&p[i * page], 1, __ATOMIC_RELAXED);
	rb = ktau_must_snap_self(_metadata, self->fd, &self->b);
	for (i = 0; i < N_PAGES; i++)
		__atomic_store_n(&p[i * page], 2, __ATOMIC_RELAXED);
	rc = ktau_must_snap_self(_metadata, self->fd, &self->c);

	d1 = ktau_val_delta(ra, rb, KTAU_ID_FAULT_USER);
	d2 = ktau_val_delta(rb, rc, KTAU_ID_FAULT_USER);
	TH_LOG("first pass %llu faults %llu ns, second pass %llu faults", d1.count, d1.incl,
	       d2.count);
	EXPECT_LE(N_PAGES, d1.count);
	EXPECT_LT(0, d1.incl);
	/* Totals are rounded down to ns one by one: a delta may gain 1 ns. */
	EXPECT_LE(d1.excl, d1.incl + 1);
	EXPECT_GT(N_PAGES / 8, d2.count);
	munmap(p, N_PAGES * page);
}

static int n_handled;

static void on_sigusr1(int sig)
{
	__atomic_fetch_add(&n_handled, 1, __ATOMIC_RELAXED);
}

/* 100 raised and handled signals are 100 signal deliveries (at most 2 more). */
TEST_F_TIMEOUT(events, handled_signals_delivered, 20)
{
	const struct ktau_task_rec *ra, *rb;
	struct sigaction sa = { .sa_handler = on_sigusr1 };
	struct ktau_val d;
	int i;

	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));

	ra = ktau_must_snap_self(_metadata, self->fd, &self->a);
	for (i = 0; i < N_SIGNALS; i++)
		ASSERT_EQ(0, raise(SIGUSR1));
	rb = ktau_must_snap_self(_metadata, self->fd, &self->b);

	ASSERT_EQ(N_SIGNALS, __atomic_load_n(&n_handled, __ATOMIC_RELAXED));
	d = ktau_val_delta(ra, rb, KTAU_ID_SIGNAL);
	EXPECT_LE(N_SIGNALS, d.count);
	EXPECT_GE(N_SIGNALS + 2, d.count);
	/* Totals are rounded down to ns one by one: a delta may gain 1 ns. */
	EXPECT_LE(d.excl, d.incl + 1);
}

/* The thread's minor plus major faults, from getrusage(RUSAGE_THREAD). */
static long thread_faults(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return ru.ru_minflt + ru.ru_majflt;
}

/*
 * An independent count: the kernel's own fault accounting (rusage's
 * minflt + majflt, mm_account_fault()) against KTAU's page_fault_user +
 * page_fault_kernel, over the same interval: user-mode faults on fresh
 * anonymous pages (writes, and reads that map the zero page) and
 * kernel-mode ones (read() into fresh pages). Exactly equal: every one of
 * these faults is handled once, without a retry (anonymous memory never
 * retries) and without an error, and those are the only cases where the
 * two counts part (a retried fault is two KTAU calls and one in rusage;
 * a fault fixed up by the exception table or ending in SIGSEGV is a
 * KTAU call and not in rusage). Whatever else faults in the interval
 * (the snapshot code, getrusage itself) runs once before, so that its
 * pages are there.
 */
TEST_F_TIMEOUT(events, faults_match_getrusage, 20)
{
	const long page = sysconf(_SC_PAGESIZE);
	const struct ktau_task_rec *ra, *rb;
	long fa, fb, i;
	__u64 ktau;
	char *p, c = 0;
	int zfd;

	zfd = open("/dev/zero", O_RDONLY);
	ASSERT_LE(0, zfd);
	p = mmap(NULL, 3 * N_PAGES * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	/* One fault per page: no huge page, no huge zero page. */
	madvise(p, 3 * N_PAGES * page, MADV_NOHUGEPAGE);
	/* Warm-up: the same calls once, on memory already there. */
	ktau_must_snap_self(_metadata, self->fd, &self->a);
	ASSERT_LE(0, thread_faults());
	ASSERT_EQ(1, read(zfd, &c, 1));

	fa = thread_faults();
	ra = ktau_must_snap_self(_metadata, self->fd, &self->a);
	for (i = 0; i < N_PAGES; i++)
		__atomic_store_n(&p[i * page], 1, __ATOMIC_RELAXED);
	for (i = N_PAGES; i < 2 * N_PAGES; i++)
		c += __atomic_load_n(&p[i * page], __ATOMIC_RELAXED);
	for (i = 2 * N_PAGES; i < 2 * N_PAGES + 16; i++)
		ASSERT_EQ(page, read(zfd, &p[i * page], page));
	rb = ktau_must_snap_self(_metadata, self->fd, &self->b);
	fb = thread_faults();

	ktau = ktau_val_delta(ra, rb, KTAU_ID_FAULT_USER).count +
	       ktau_val_delta(ra, rb, KTAU_ID_FAULT_KERNEL).count;
	TH_LOG("rusage: %ld faults; KTAU: %llu user + %llu kernel", fb - fa,
	       ktau_val_delta(ra, rb, KTAU_ID_FAULT_USER).count,
	       ktau_val_delta(ra, rb, KTAU_ID_FAULT_KERNEL).count);
	EXPECT_EQ(0, c);
	EXPECT_LE(2 * N_PAGES + 16, fb - fa);
	EXPECT_EQ(fb - fa, ktau);
	EXPECT_LE(16, ktau_val_delta(ra, rb, KTAU_ID_FAULT_KERNEL).count);
	close(zfd);
	munmap(p, 3 * N_PAGES * page);
}

TEST_HARNESS_MAIN
