// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU's clock across CPUs: threads blocked in nanosleep() and in read()
 * are moved to the other CPU while they sleep (sched_setaffinity() from
 * another thread), so that their system calls and scheduler frames start
 * on one CPU and end on the other. Their counts are exact, their times
 * fit in the wall time, and snapshots taken meanwhile never go down and
 * never show more exclusive than inclusive time. Run it on two CPUs, and
 * again with tsc=unstable on the kernel command line, where KTAU rebases
 * the routines of a task that changes CPU ("clock tsc-rebased").
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/utsname.h>
#include "ktau_util.h"

#define ROUNDS		20
#define SLEEP_NS	(20 * KTAU_NSEC_PER_MSEC)
#define KTAU_ID_NANOSLEEP	(KTAU_ID_SYSCALL_BASE + SYS_clock_nanosleep)

/* The value of "name value" in /proc/ktau/control, or NULL. */
static char *control_value(const char *name)
{
	char *t = ktau_control_read(), *p, *v = NULL;
	size_t len = strlen(name);

	for (p = t; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, name, len) && p[len] == ' ') {
			v = strndup(p + len + 1, strcspn(p + len + 1, "\n"));
			break;
		}
	}
	free(t);
	return v;
}

/* The clock is the one the kernel command line asks for. */
TEST(clock_follows_tsc_stability)
{
	char *cmdline = ktau_slurp("/proc/cmdline", NULL), *clock;
	struct utsname u;

	ktau_must_have_ktau(_metadata);
	ASSERT_NE(NULL, cmdline);
	clock = control_value("clock");
	ASSERT_NE(NULL, clock) TH_LOG("no clock line in /proc/ktau/control (ABI 1.3)");
	TH_LOG("clock %s", clock);
	ASSERT_EQ(0, uname(&u));
	EXPECT_STREQ(strcmp(u.machine, "x86_64") ? "local" :
		     strstr(cmdline, "tsc=unstable") ? "tsc-rebased" : "tsc", clock);
	free(clock);
	free(cmdline);
}

struct mover {
	pid_t sleeper, reader;	/* set by the threads: __atomic */
	int pipe[2];
	int done[2];	/* written when the test has read the last figures */
	int crossed;	/* the sleeper's sleeps that ended on another CPU */
	int read_cpu[ROUNDS];	/* the CPU each read() returned on */
	int reads;		/* read() calls returned: __atomic */
	int slept;		/* the sleeper's sleeps that ended: __atomic */
};

/* Block, off the CPU, until the test has read the last figures. */
static void wait_done(struct mover *m)
{
	char c;

	if (read(m->done[0], &c, 1) != 1)
		return;
}

static void *sleeper_fn(void *p)
{
	struct mover *m = p;

	__atomic_store_n(&m->sleeper, gettid(), __ATOMIC_RELEASE);
	for (int i = 0; i < ROUNDS; i++) {
		int cpu = sched_getcpu();

		ktau_sleep_ns(SLEEP_NS);
		m->crossed += sched_getcpu() != cpu;
		__atomic_store_n(&m->slept, i + 1, __ATOMIC_RELEASE);
	}
	wait_done(m);
	return NULL;
}

static void *reader_fn(void *p)
{
	struct mover *m = p;
	char c;

	__atomic_store_n(&m->reader, gettid(), __ATOMIC_RELEASE);
	for (int i = 0; i < ROUNDS; i++) {
		if (read(m->pipe[0], &c, 1) != 1)
			break;
		m->read_cpu[i] = sched_getcpu();
		__atomic_store_n(&m->reads, i + 1, __ATOMIC_RELEASE);
	}
	wait_done(m);
	return NULL;
}

static int pin(pid_t tid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(tid, sizeof(set), &set);
}

/* Every figure of @b is at least @a's, and excl <= incl <= @wall. */
static void check_pair(struct __test_metadata *_metadata, const struct ktau_task_rec *a,
		       const struct ktau_task_rec *b, __u64 wall)
{
	const struct ktau_entry *e = ktau_rec_entries(b);
	__u32 i;

	for (i = 0; i < b->nentries; i++) {
		struct ktau_val o = ktau_rec_val(a, e[i].id);

		EXPECT_LE(o.count, e[i].count) TH_LOG("id %u count went down", e[i].id);
		EXPECT_LE(o.incl, e[i].incl_ns) TH_LOG("id %u incl went down", e[i].id);
		EXPECT_LE(o.excl, e[i].excl_ns) TH_LOG("id %u excl went down", e[i].id);
		EXPECT_LE(e[i].excl_ns, e[i].incl_ns) TH_LOG("id %u excl > incl", e[i].id);
		/* 1% for the TSC rate and rounding, on top of the wall time. */
		EXPECT_GE(wall + wall / 100, e[i].incl_ns)
			TH_LOG("id %u: incl %llu ns in %llu ns of wall time", e[i].id,
			       (unsigned long long)e[i].incl_ns, (unsigned long long)wall);
	}
}

/*
 * Whether CLOCK_MONOTONIC can be the oracle of the times: not when the
 * kernel keeps time with the tick (the "jiffies" clocksources, as in the
 * test guest booted with tsc=unstable, which has no HPET or ACPI timer):
 * then it loses the ticks a loaded virtual machine misses, and only the
 * counts, the order and excl <= incl are checked.
 */
static bool wall_clock_usable(void)
{
	char *cs = ktau_slurp("/sys/devices/system/clocksource/clocksource0/current_clocksource",
			      NULL);
	bool ok = cs && !strstr(cs, "jiffies");

	if (cs)
		ktau_log("clocksource %s", cs);
	free(cs);
	return ok;
}

static void moved_across_cpus(struct __test_metadata *_metadata)
{
	struct ktau_snap s0 = { 0 }, prev = { 0 }, cur = { 0 };
	const struct ktau_task_rec *r0, *rs, *rr;
	struct mover m = { 0 };
	pthread_t ts, tr;
	char *back0, *back1;
	struct ktau_val v;
	pid_t tids[2];
	__u64 t0, wall;
	int fd, moves = 0, asleep = 0;
	bool wall_ok;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs (the 2-CPU pass runs it)");
	fd = ktau_must_open_profiles(_metadata);
	ASSERT_EQ(0, pipe(m.pipe));
	ASSERT_EQ(0, pipe(m.done));
	wall_ok = wall_clock_usable();
	back0 = control_value("clock_backwards");
	ASSERT_NE(NULL, back0);
	t0 = ktau_now_ns();
	ASSERT_EQ(0, pthread_create(&ts, NULL, sleeper_fn, &m));
	ASSERT_EQ(0, pthread_create(&tr, NULL, reader_fn, &m));
	while (!__atomic_load_n(&m.sleeper, __ATOMIC_ACQUIRE) ||
	       !__atomic_load_n(&m.reader, __ATOMIC_ACQUIRE))
		usleep(100);
	tids[0] = m.sleeper;
	tids[1] = m.reader;
	ASSERT_EQ(0, ktau_snap(fd, &s0, KTAU_SNAP_PIDS, tids, 2));
	ASSERT_EQ(0, ktau_snap(fd, &prev, KTAU_SNAP_PIDS, tids, 2));
	for (int i = 0; i < ROUNDS; i++) {
		/*
		 * Both blocked ('S': the reader in read(), the sleeper in
		 * nanosleep() but for its few instructions between sleeps):
		 * move them, keep the reader blocked 3/4 of a sleep on its new
		 * CPU, then wake it. A round lasts about a sleep, so the moves
		 * fall in the sleeper's sleeps one after the other.
		 */
		/*
		 * The reader's last read() returned before its 'S' counts: a
		 * wakeup queued to another CPU leaves the old 'S' for a while.
		 */
		for (int w = 0; w < 10000 && (__atomic_load_n(&m.reads, __ATOMIC_ACQUIRE) < i ||
					      ktau_task_state(getpid(), m.reader) != 'S' ||
					      ktau_task_state(getpid(), m.sleeper) != 'S'); w++)
			usleep(100);
		EXPECT_EQ(i, __atomic_load_n(&m.reads, __ATOMIC_ACQUIRE));
		EXPECT_EQ('S', ktau_task_state(getpid(), m.reader));
		/* The sleeper may just be between sleeps: counted, not each. */
		asleep += ktau_task_state(getpid(), m.sleeper) == 'S';
		moves += !pin(m.sleeper, i & 1);
		moves += !pin(m.reader, i & 1);
		usleep(SLEEP_NS * 3 / 4000);
		ASSERT_EQ(1, write(m.pipe[1], "x", 1));
		ASSERT_EQ(0, ktau_snap(fd, &cur, KTAU_SNAP_PIDS, tids, 2));
		wall = ktau_now_ns() - t0;
		for (int k = 0; k < 2; k++) {
			rs = ktau_snap_find(&prev, tids[k]);
			rr = ktau_snap_find(&cur, tids[k]);
			if (rs && rr)
				check_pair(_metadata, rs, rr, wall_ok ? wall : ~0ULL / 2);
		}
		ktau_snap_free(&prev);
		prev = cur;
		memset(&cur, 0, sizeof(cur));
	}
	/*
	 * The reader's last read and the sleeper's last sleeps end after the
	 * last round: waited for (a loaded host stretches them; a fixed wait
	 * of ROUNDS sleeps once saw 19 of 20 sleeps ended).
	 */
	for (int w = 0; w < 30000 && (__atomic_load_n(&m.slept, __ATOMIC_ACQUIRE) < ROUNDS ||
				      __atomic_load_n(&m.reads, __ATOMIC_ACQUIRE) < ROUNDS); w++)
		usleep(1000);
	ASSERT_EQ(ROUNDS, __atomic_load_n(&m.slept, __ATOMIC_ACQUIRE));
	ASSERT_EQ(ROUNDS, __atomic_load_n(&m.reads, __ATOMIC_ACQUIRE));
	ASSERT_EQ(0, ktau_snap(fd, &cur, KTAU_SNAP_PIDS, tids, 2));
	wall = ktau_now_ns() - t0;
	ASSERT_EQ(2, write(m.done[1], "xx", 2));
	EXPECT_EQ(2 * ROUNDS, moves);

	/* Exact counts, and times within the wall time, after the moves. */
	r0 = ktau_snap_find(&s0, m.sleeper);
	rs = ktau_snap_find(&cur, m.sleeper);
	ASSERT_NE(NULL, rs);
	v = ktau_val_delta(r0, rs, KTAU_ID_NANOSLEEP);
	TH_LOG("nanosleep: %llu calls, %llu ns in %llu ns", (unsigned long long)v.count,
	       (unsigned long long)v.incl, (unsigned long long)wall);
	EXPECT_EQ(ROUNDS, v.count);
	if (wall_ok) {
		EXPECT_LE(v.count * SLEEP_NS, v.incl);
		EXPECT_GE(wall, v.incl);
	}
	r0 = ktau_snap_find(&s0, m.reader);
	rr = ktau_snap_find(&cur, m.reader);
	ASSERT_NE(NULL, rr);
	v = ktau_val_delta(r0, rr, KTAU_ID_READ);
	TH_LOG("read: %llu calls, %llu ns", (unsigned long long)v.count,
	       (unsigned long long)v.incl);
	EXPECT_EQ(ROUNDS, v.count);
	/* Blocked at least from each move to its write(). */
	if (wall_ok) {
		EXPECT_LE(ROUNDS * (SLEEP_NS * 3 / 4), v.incl);
		EXPECT_GE(wall, v.incl);
	}
	ASSERT_EQ(0, pthread_join(ts, NULL));
	ASSERT_EQ(0, pthread_join(tr, NULL));
	/* Each read() returned on the CPU it was moved to while blocked. */
	for (int i = 0; i < ROUNDS; i++) {
		int want = i & 1;

		EXPECT_EQ(want, m.read_cpu[i]) TH_LOG("read %d", i);
	}
	/* Moves fell inside the sleeper's sleeps, not all in its first. */
	TH_LOG("sleeper asleep at %d of %d moves; sleeps that ended on another CPU: %d",
	       asleep, ROUNDS, m.crossed);
	EXPECT_LE(ROUNDS * 3 / 4, asleep);
	EXPECT_LE(ROUNDS / 4, m.crossed);

	back1 = control_value("clock_backwards");
	ASSERT_NE(NULL, back1);
	EXPECT_STREQ(back0, back1) TH_LOG("times came out negative and were clamped");
	free(back0);
	free(back1);
	ktau_snap_free(&s0);
	ktau_snap_free(&prev);
	ktau_snap_free(&cur);
	close(m.pipe[0]);
	close(m.pipe[1]);
	close(m.done[0]);
	close(m.done[1]);
	close(fd);
}

TEST(blocked_threads_moved_across_cpus)
{
	ktau_must_have_ktau(_metadata);
	moved_across_cpus(_metadata);
}

/*
 * The same with the sched group off: the threads' system call frames
 * still change CPU while they are blocked, and are rebased all the same
 * under tsc=unstable (before, only while the sched group was on). The
 * test guest's CPUs share one TSC, so a missing rebase does not show
 * here; this runs the path without the sched group's hooks, with its
 * figures checked as above.
 */
FIXTURE(sched_off) {
	bool switched;
};

FIXTURE_SETUP(sched_off)
{
	ktau_must_have_ktau(_metadata);
	if (geteuid())
		SKIP(return, "switching a group needs root");
	if (ktau_no_switch_pass())
		SKIP(return, "no group switches in this pass (ktauhold)");
	ASSERT_EQ(0, ktau_control("sched off"));
	self->switched = true;
}

FIXTURE_TEARDOWN(sched_off)
{
	/* On again, as ktau_must_have_ktau() left it. */
	if (self->switched)
		EXPECT_EQ(0, ktau_control("sched on"));
}

/* Its waits may add up to ~50 s on a loaded host: a timeout would skip the teardown. */
TEST_F_TIMEOUT(sched_off, blocked_threads_moved_across_cpus, 120)
{
	EXPECT_EQ(0, ktau_group_state("sched"));
	moved_across_cpus(_metadata);
	EXPECT_EQ(0, ktau_group_state("sched")) TH_LOG("the sched group came on meanwhile");
}

TEST_HARNESS_MAIN
