// SPDX-License-Identifier: GPL-2.0
/*
 * The bounded profile's accounting (ktau.rst, "Overflow accounting"): a
 * full table charges the calls of routines without a slot to [other] and
 * counts each in table_overflows, exactly; exits whose entry was not
 * recorded, and frames whose exit will never come, are counted in
 * unmatched. Every test leaves all groups on, whatever happens to it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/ptrace.h>

#include "ktau_util.h"

#define ALL_ON		(((__u64)1 << KTAU_NR_GROUPS) - 1)
#define SYSCALL_ONLY	((__u64)1 << KTAU_GROUP_SYSCALL)

FIXTURE(overflow) {
	int fd;
	struct ktau_snap a, b, c;
};

FIXTURE_SETUP(overflow)
{
	ktau_must_have_ktau(_metadata);
	self->fd = ktau_must_open_profiles(_metadata);
}

/* In the parent: runs even when the test dies. */
FIXTURE_TEARDOWN_PARENT(overflow)
{
	EXPECT_EQ(0, ktau_control("all on"));
	EXPECT_TRUE(ktau_all_groups_on());
}

static void set_groups(struct __test_metadata *_metadata, int fd, __u64 mask)
{
	ASSERT_EQ(0, ioctl(fd, KTAU_IOC_SET_GROUPS, &mask)) TH_LOG("%s", strerror(errno));
}

/*
 * A new thread (a table of its own, fresh) snapshots itself, makes each
 * of ktau_nop_calls once (more distinct system calls than a table has
 * slots), snapshots itself, makes them all once more and snapshots
 * itself again; only the system call group is on, so that nothing but
 * these calls takes slots. Buffers are reserved beforehand: no system
 * call other than the snapshots' ioctl() and the calls of the list.
 */
struct fill_arg {
	int fd;
	struct ktau_snap *s[3];
	int ret;
};

static void *fill_thread(void *p)
{
	struct fill_arg *a = p;

	a->ret = ktau_snap(a->fd, a->s[0], KTAU_SNAP_SELF, NULL, 0);
	ktau_nop_calls_run(0);
	if (!a->ret)
		a->ret = ktau_snap(a->fd, a->s[1], KTAU_SNAP_SELF, NULL, 0);
	ktau_nop_calls_run(0);
	if (!a->ret)
		a->ret = ktau_snap(a->fd, a->s[2], KTAU_SNAP_SELF, NULL, 0);
	return NULL;
}

static unsigned int control_slots(void)
{
	char *t = ktau_control_read(), *p;
	unsigned int n = 0;

	p = t ? strstr(t, "\nslots ") : NULL;
	if (p)
		n = strtoul(p + 7, NULL, 10);
	free(t);
	return n;
}

/*
 * A full table: the table has exactly "slots" entries, [other] one of
 * them; on the second round, each listed call that has a slot counts
 * one call more, and each that has none counts one call of [other] and
 * one table overflow: exactly as many as the calls without a slot.
 */
TEST_F_TIMEOUT(overflow, full_table_charges_other_exactly, 30)
{
	struct fill_arg arg = { .fd = self->fd, .s = { &self->a, &self->b, &self->c } };
	const struct ktau_task_rec *r1, *r2;
	unsigned int slots = control_slots(), i, without = 0, with = 0;
	struct ktau_val o;
	pthread_t th;

	ASSERT_LE(16, slots);
	ASSERT_LT(slots + 8, KTAU_NR_NOP_CALLS) TH_LOG("too few calls for %u slots", slots);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, ktau_snap_reserve(arg.s[i], KTAU_SNAP_BUF_INIT));
	set_groups(_metadata, self->fd, SYSCALL_ONLY);
	ASSERT_EQ(0, pthread_create(&th, NULL, fill_thread, &arg));
	ASSERT_EQ(0, pthread_join(th, NULL));
	set_groups(_metadata, self->fd, ALL_ON);
	ASSERT_EQ(0, arg.ret) TH_LOG("snapshot: %s", strerror(-arg.ret));
	ASSERT_EQ(1, self->b.req.ntasks);
	ASSERT_EQ(1, self->c.req.ntasks);
	r1 = ktau_snap_next(&self->b, NULL);
	r2 = ktau_snap_next(&self->c, NULL);
	EXPECT_EQ(slots, r1->nentries) TH_LOG("%u slots, %u listed", slots, r1->nentries);
	EXPECT_EQ(slots, r2->nentries);
	o = ktau_rec_val(r1, KTAU_ID_OTHER);
	EXPECT_LT(0, o.count) TH_LOG("no [other] row in a full table");
	EXPECT_EQ(r1->table_overflows, o.count);
	EXPECT_LE(o.excl, o.incl);

	for (i = 0; i < KTAU_NR_NOP_CALLS; i++) {
		__u32 id = KTAU_ID_SYSCALL_BASE + ktau_nop_calls[i].nr;
		struct ktau_val d = ktau_val_delta(r1, r2, id);

		if (ktau_rec_find(r1, id)) {
			with++;
			EXPECT_EQ(1, d.count) TH_LOG("system call %ld (a slot of its own)",
						     ktau_nop_calls[i].nr);
		} else {
			without++;
			EXPECT_EQ(NULL, ktau_rec_find(r2, id))
				TH_LOG("system call %ld took a slot in a full table",
				       ktau_nop_calls[i].nr);
		}
	}
	o = ktau_val_delta(r1, r2, KTAU_ID_OTHER);
	TH_LOG("%u slots: %u of %zu calls with a slot, %u without; [other] +%llu, overflows +%llu",
	       slots, with, KTAU_NR_NOP_CALLS, without, o.count,
	       (unsigned long long)(r2->table_overflows - r1->table_overflows));
	EXPECT_LT(0, without);
	EXPECT_EQ(without, o.count);
	EXPECT_EQ(without, r2->table_overflows - r1->table_overflows);
	EXPECT_LT(0, o.incl);
	/* The snapshot's own call had a slot from the start. */
	EXPECT_EQ(1, ktau_val_delta(r1, r2, KTAU_ID_SYSCALL_BASE + SYS_ioctl).count);
	EXPECT_EQ(0, r2->unmatched);
	EXPECT_EQ(0, r2->stack_overflows);
}

/*
 * A thread that reads a pipe: each read() returns when the main thread
 * writes a byte and the thread then goes straight into the next one;
 * "n" counts the reads that returned.
 */
struct reader {
	int p[2];
	pid_t tid;
	unsigned int n;
};

static void *reader_thread(void *p)
{
	struct reader *r = p;
	char c;

	__atomic_store_n(&r->tid, gettid(), __ATOMIC_RELEASE);
	while (read(r->p[0], &c, 1) == 1 && c != 'q')
		__atomic_add_fetch(&r->n, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* 'S' once the thread sleeps (in its read()), with a bound of 5 s. */
static char wait_sleeping(pid_t tid)
{
	char st = '?';
	int i;

	for (i = 0; i < 5000; i++) {
		st = ktau_task_state(getpid(), tid);
		if (st == 'S')
			break;
		usleep(1000);
	}
	return st;
}

/* Let the reader's current read() return; it blocks in the next one. */
static void next_read(struct __test_metadata *_metadata, struct reader *r)
{
	unsigned int n = __atomic_load_n(&r->n, __ATOMIC_ACQUIRE);
	int i;

	ASSERT_EQ(1, write(r->p[1], "x", 1));
	for (i = 0; i < 5000 && __atomic_load_n(&r->n, __ATOMIC_ACQUIRE) == n; i++)
		usleep(1000);
	ASSERT_EQ(n + 1, __atomic_load_n(&r->n, __ATOMIC_ACQUIRE));
	ASSERT_EQ('S', wait_sleeping(r->tid));
}

static void start_reader(struct __test_metadata *_metadata, struct reader *r, pthread_t *th)
{
	ASSERT_EQ(0, pipe(r->p));
	ASSERT_EQ(0, pthread_create(th, NULL, reader_thread, r));
	while (!__atomic_load_n(&r->tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	ASSERT_EQ('S', wait_sleeping(r->tid));
}

static void stop_reader(struct __test_metadata *_metadata, struct reader *r, pthread_t th)
{
	ASSERT_EQ(1, write(r->p[1], "q", 1));
	ASSERT_EQ(0, pthread_join(th, NULL));
	close(r->p[0]);
	close(r->p[1]);
}

static const struct ktau_task_rec *snap_tid(struct __test_metadata *_metadata, int fd,
					    struct ktau_snap *s, pid_t tid)
{
	const struct ktau_task_rec *r;

	ASSERT_EQ(0, ktau_snap(fd, s, KTAU_SNAP_PIDS, &tid, 1));
	r = ktau_snap_find(s, tid);
	ASSERT_NE(NULL, r);
	return r;
}

/*
 * A thread that spins in user mode, making no system call, until told
 * to go, then reads the pipe: so that its read() enters with the group
 * as the main thread left it, with nothing open below.
 */
static int go_read;

static void *late_reader_thread(void *p)
{
	struct reader *r = p;

	__atomic_store_n(&r->tid, gettid(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&go_read, __ATOMIC_ACQUIRE))
		;
	return reader_thread(r);
}

/*
 * The system call group switched on while a read() was blocked: its exit
 * has no entry, so it is one unmatched exit and no call of read(). The
 * thread starts with the group on, so that its first return from clone()
 * is behind it.
 */
TEST_F_TIMEOUT(overflow, exit_without_entry_unmatched, 30)
{
	const struct ktau_task_rec *ra, *rb;
	struct reader r = { 0 };
	pthread_t th;

	ASSERT_EQ(0, pipe(r.p));
	ASSERT_EQ(0, pthread_create(&th, NULL, late_reader_thread, &r));
	while (!__atomic_load_n(&r.tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	ASSERT_EQ(0, ktau_control("syscall off"));
	__atomic_store_n(&go_read, 1, __ATOMIC_RELEASE);
	ASSERT_EQ('S', wait_sleeping(r.tid));
	ASSERT_EQ(0, ktau_control("syscall on"));
	ra = snap_tid(_metadata, self->fd, &self->a, r.tid);
	next_read(_metadata, &r);
	rb = snap_tid(_metadata, self->fd, &self->b, r.tid);
	TH_LOG("read: +%llu calls, unmatched +%llu",
	       ktau_val_delta(ra, rb, KTAU_ID_READ).count,
	       (unsigned long long)(rb->unmatched - ra->unmatched));
	EXPECT_EQ(0, ktau_val_delta(ra, rb, KTAU_ID_READ).count);
	EXPECT_EQ(1, rb->unmatched - ra->unmatched);
	/* With the group on at both ends, the next read() is a call again. */
	next_read(_metadata, &r);
	ra = snap_tid(_metadata, self->fd, &self->a, r.tid);
	EXPECT_EQ(1, ktau_val_delta(rb, ra, KTAU_ID_READ).count);
	EXPECT_EQ(0, ra->unmatched - rb->unmatched);
	stop_reader(_metadata, &r, th);
}

/*
 * The group switched off and on again while a read() is blocked: its
 * entry and its exit were both recorded, so it is one call of read(),
 * whose inclusive time covers the whole block; nothing is unmatched.
 */
TEST_F_TIMEOUT(overflow, off_and_on_while_blocked_still_one_call, 30)
{
	const struct ktau_task_rec *ra, *rb;
	struct reader r = { 0 };
	struct ktau_val d;
	__u64 t0, tw;
	pthread_t th;

	start_reader(_metadata, &r, &th);
	ra = snap_tid(_metadata, self->fd, &self->a, r.tid);
	t0 = ktau_now_ns();
	ASSERT_EQ(0, ktau_control("syscall off"));
	ktau_sleep_ns(50 * KTAU_NSEC_PER_MSEC);
	ASSERT_EQ(0, ktau_control("syscall on"));
	tw = ktau_now_ns();
	next_read(_metadata, &r);
	rb = snap_tid(_metadata, self->fd, &self->b, r.tid);
	d = ktau_val_delta(ra, rb, KTAU_ID_READ);
	TH_LOG("read: +%llu calls, +%llu ns incl; unmatched +%llu",
	       d.count, d.incl, (unsigned long long)(rb->unmatched - ra->unmatched));
	EXPECT_EQ(1, d.count);
	EXPECT_EQ(0, rb->unmatched - ra->unmatched);
	/*
	 * In the read() from before t0 (the snapshot saw it asleep) to after
	 * tw (the write that ends it); 1% for the TSC's rate against
	 * CLOCK_MONOTONIC (kernel's calibration under TCG).
	 */
	EXPECT_LE((tw - t0) / 100 * 99, d.incl);
	stop_reader(_metadata, &r, th);
}

/*
 * The group switched off while a read() is blocked and on again only
 * after it returned: that read()'s frame never gets its exit, and the
 * next read() (entered with the group off, left with it on) has an exit
 * without its entry. Neither may be counted as a call of read(), whose
 * time would run from the first entry to the second exit; both are
 * unmatched ("frames that were dropped because their exit will never
 * come (a group switched off meanwhile)", "exits whose entry was not
 * recorded").
 */
TEST_F_TIMEOUT(overflow, frame_left_by_group_off_unmatched, 30)
{
	const struct ktau_task_rec *ra, *rb;
	struct reader r = { 0 };
	struct ktau_val d;
	pthread_t th;

	start_reader(_metadata, &r, &th);
	ra = snap_tid(_metadata, self->fd, &self->a, r.tid);
	/* The first read() blocks 100 ms before anything else happens. */
	ktau_sleep_ns(100 * KTAU_NSEC_PER_MSEC);
	ASSERT_EQ(0, ktau_control("syscall off"));
	next_read(_metadata, &r);	/* the first returns, the second blocks */
	ASSERT_EQ(0, ktau_control("syscall on"));
	next_read(_metadata, &r);	/* the second returns, the third blocks */
	rb = snap_tid(_metadata, self->fd, &self->b, r.tid);
	d = ktau_val_delta(ra, rb, KTAU_ID_READ);
	TH_LOG("read: +%llu calls, +%llu ns incl; unmatched +%llu",
	       d.count, d.incl, (unsigned long long)(rb->unmatched - ra->unmatched));
	/* An incl of 100 ms or more runs from the first entry to the second exit. */
	EXPECT_EQ(0, d.count) TH_LOG("a read() counted from one call's entry to another's exit");
	EXPECT_EQ(2, rb->unmatched - ra->unmatched);
	stop_reader(_metadata, &r, th);
}

/*
 * A group switched off and on while a traced child is stopped at the
 * entry of its system call (a ptrace stop, inside the call's frame, as
 * strace stops it): the call is still one call when it returns, and
 * nothing is unmatched. Frames left by a switch may only be dropped on
 * the last way to user mode, never at a ptrace stop (or at signal
 * delivery, or in io_uring's waits), where the frames are live.
 */
#define TRACED_CALLS	3

TEST_F_TIMEOUT(overflow, ptrace_stop_keeps_the_call, 30)
{
	const struct ktau_task_rec *ra, *rb;
	int status, i, p[2];
	struct ktau_val d;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(p[1]);
		/* Stopped by the tracer's SIGSTOP once it has seized us. */
		if (read(p[0], &c, 1) != 1)
			_exit(1);
		for (i = 0; i < TRACED_CALLS; i++)
			syscall(SYS_getppid);
		raise(SIGSTOP);
		_exit(0);
	}
	close(p[0]);
	ASSERT_EQ(0, ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESYSGOOD));
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	ASSERT_EQ(1, write(p[1], "g", 1));
	close(p[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP);
	/* Stopped in read() or before it: the snapshot before the calls. */
	ra = snap_tid(_metadata, self->fd, &self->a, pid);
	ASSERT_EQ(0, ptrace(PTRACE_SYSCALL, pid, 0, 0));
	for (;;) {
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFSTOPPED(status)) TH_LOG("child ended: status %#x", status);
		if (WSTOPSIG(status) == SIGSTOP)
			break;
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			/* At an entry or exit stop: a group goes off and on. */
			ASSERT_EQ(0, ktau_control("irq off"));
			ASSERT_EQ(0, ktau_control("irq on"));
			ASSERT_EQ(0, ptrace(PTRACE_SYSCALL, pid, 0, 0));
		} else {
			ASSERT_EQ(0, ptrace(PTRACE_SYSCALL, pid, 0, WSTOPSIG(status)));
		}
	}
	rb = snap_tid(_metadata, self->fd, &self->b, pid);
	d = ktau_val_delta(ra, rb, KTAU_ID_GETPPID);
	TH_LOG("getppid: +%llu calls; unmatched +%llu", d.count,
	       (unsigned long long)(rb->unmatched - ra->unmatched));
	EXPECT_EQ(TRACED_CALLS, d.count);
	EXPECT_EQ(0, rb->unmatched - ra->unmatched);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
}

TEST_HARNESS_MAIN
