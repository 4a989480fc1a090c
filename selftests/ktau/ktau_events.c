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

TEST_HARNESS_MAIN
