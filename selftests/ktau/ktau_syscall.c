// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU system call profiles: exact per-thread call counts, inclusive and
 * exclusive times that add up, one profile per thread, and the registry
 * of function IDs in /proc/ktau/functions.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <signal.h>

#include "ktau_util.h"

#define N_GETPPID	1000

FIXTURE(syscalls) {
	int fd;
	struct ktau_snap a, b;
};

FIXTURE_SETUP(syscalls)
{
	ktau_must_have_ktau(_metadata);
	self->fd = ktau_must_open_profiles(_metadata);
}

FIXTURE_TEARDOWN(syscalls)
{
	ktau_snap_free(&self->a);
	ktau_snap_free(&self->b);
	close(self->fd);
}

/* The fixed IDs, the softirq IDs and the syscall IDs have their names. */
TEST_F_TIMEOUT(syscalls, functions_registry, 10)
{
	static const struct {
		__u32 id;
		const char *group;	/* NULL: not stated by the spec */
		const char *name;
	} fixed[] = {
		{ KTAU_ID_OTHER, NULL, "[other]" },
		{ KTAU_ID_IRQ, "irq", "irq" },
		{ KTAU_ID_SCHED_VOL, "sched", "sched_blocked" },
		{ KTAU_ID_SCHED_INVOL, "sched", "sched_preempted" },
		{ KTAU_ID_FAULT_USER, "fault", "page_fault_user" },
		{ KTAU_ID_FAULT_KERNEL, "fault", "page_fault_kernel" },
		{ KTAU_ID_SIGNAL, "signal", "signal_delivery" },
		{ KTAU_ID_SYSCALL_BAD, NULL, "syscall_invalid" },
		{ KTAU_ID_SYSCALL_COMPAT, NULL, "syscall_compat" },
		{ KTAU_ID_GETPPID, "syscall", "getppid" },
		{ KTAU_ID_READ, "syscall", "read" },
	};
	struct ktau_funcs fs = { 0 };
	const struct ktau_func *f;
	char name[64];
	size_t i, j, dups = 0;
	bool known;
	int g;

	ASSERT_EQ(0, ktau_funcs_load(&fs));
	ASSERT_LT(KTAU_NR_SOFTIRQS + 8, fs.n);

	for (i = 0; i < ARRAY_SIZE(fixed); i++) {
		f = ktau_func_by_id(&fs, fixed[i].id);
		ASSERT_NE(NULL, f) TH_LOG("ID %u (%s) not listed", fixed[i].id, fixed[i].name);
		EXPECT_STREQ(fixed[i].name, f->name);
		if (fixed[i].group)
			EXPECT_STREQ(fixed[i].group, f->group);
	}
	for (i = 0; i < KTAU_NR_SOFTIRQS; i++) {
		snprintf(name, sizeof(name), "softirq_%s", ktau_softirq_name(i));
		f = ktau_func_by_id(&fs, KTAU_ID_SOFTIRQ_BASE + i);
		ASSERT_NE(NULL, f) TH_LOG("softirq ID %zu not listed", KTAU_ID_SOFTIRQ_BASE + i);
		EXPECT_STREQ(name, f->name);
		EXPECT_STREQ("softirq", f->group);
	}
	f = ktau_func_by_name(&fs, "getppid");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(KTAU_ID_GETPPID, f->id);

	for (i = 0; i < fs.n; i++) {
		EXPECT_NE(0, fs.v[i].id);
		known = !strcmp(fs.v[i].group, "other");
		for (g = 0; g < KTAU_NR_GROUPS; g++)
			known |= !strcmp(fs.v[i].group, ktau_group_name(g));
		EXPECT_TRUE(known) TH_LOG("ID %u: unknown group '%s'", fs.v[i].id, fs.v[i].group);
		for (j = 0; j < i; j++) {
			if (fs.v[j].id != fs.v[i].id)
				continue;
			TH_LOG("ID %u listed twice", fs.v[i].id);
			dups++;
		}
	}
	EXPECT_EQ(0, dups);
	ktau_funcs_free(&fs);
}

/* N getppid() calls are exactly N calls in the thread's profile. */
TEST_F_TIMEOUT(syscalls, getppid_exact_count, 20)
{
	struct ktau_val d, ta, tb, pa, pb;
	const struct ktau_task_rec *ra, *rb;
	char tpath[64], comm[32] = "";
	FILE *f;

	snprintf(tpath, sizeof(tpath), "/proc/self/task/%d/ktau", gettid());
	f = fopen("/proc/self/comm", "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(comm, sizeof(comm), f));
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';

	ASSERT_EQ(0, ktau_text_get(tpath, KTAU_ID_GETPPID, &ta));
	ASSERT_EQ(0, ktau_text_get("/proc/self/ktau", KTAU_ID_GETPPID, &pa));
	ra = ktau_must_snap_self(_metadata, self->fd, &self->a);
	ktau_getppid_loop(N_GETPPID);
	rb = ktau_must_snap_self(_metadata, self->fd, &self->b);
	ASSERT_EQ(0, ktau_text_get(tpath, KTAU_ID_GETPPID, &tb));
	ASSERT_EQ(0, ktau_text_get("/proc/self/ktau", KTAU_ID_GETPPID, &pb));

	/* The record is this thread's. */
	EXPECT_EQ(gettid(), rb->tid);
	EXPECT_EQ(getpid(), rb->pid);
	EXPECT_EQ(0, rb->flags);
	EXPECT_STREQ(comm, rb->comm);

	d = ktau_val_delta(ra, rb, KTAU_ID_GETPPID);
	EXPECT_EQ(N_GETPPID, d.count)
		TH_LOG("table overflows %llu -> %llu", ra->table_overflows, rb->table_overflows);
	EXPECT_LT(0, d.incl);
	EXPECT_LT(0, d.excl);
	/* Totals are rounded down to ns one by one: a delta may gain 1 ns. */
	EXPECT_LE(d.excl, d.incl + 1);
	EXPECT_EQ(ra->table_overflows, rb->table_overflows);

	/* The text views agree: the thread and the (one-thread) process. */
	EXPECT_EQ(N_GETPPID, tb.count - ta.count);
	EXPECT_EQ(N_GETPPID, pb.count - pa.count);
}

/* An out-of-range system call number is counted as syscall_invalid. */
TEST_F_TIMEOUT(syscalls, invalid_syscall_counted, 10)
{
	const struct ktau_task_rec *ra, *rb;
	int i;

	ra = ktau_must_snap_self(_metadata, self->fd, &self->a);
	for (i = 0; i < 5; i++)
		EXPECT_EQ(-1, syscall(100000));
	rb = ktau_must_snap_self(_metadata, self->fd, &self->b);
	EXPECT_EQ(5, ktau_val_delta(ra, rb, KTAU_ID_SYSCALL_BAD).count);
}

/*
 * incl >= excl for every entry of every task; the exclusive times of a
 * thread, which never overlap, add up to no more than its lifetime. The
 * lifetime is measured with CLOCK_MONOTONIC and the profile with the
 * kernel's own clock, so allow 0.1% + 1 ms for the two to differ (a task
 * that sleeps nearly all the time has exclusive time close to lifetime).
 */
static __u64 lifetime_slack(__u64 lifetime)
{
	return lifetime / 1000 + KTAU_NSEC_PER_MSEC;
}

TEST_F_TIMEOUT(syscalls, excl_within_incl_and_lifetime, 20)
{
	const long page = sysconf(_SC_PAGESIZE);
	const struct ktau_task_rec *r, *r2;
	const struct ktau_entry *e;
	struct ktau_funcs fs = { 0 };
	__u64 before, now, sum;
	char buf[4096], *p;
	int i, zfd, nrec = 0;
	__u32 k;

	/* Some work of every kind first. */
	ktau_getppid_loop(100);
	for (i = 0; i < 5; i++)
		ktau_sleep_ns(2 * KTAU_NSEC_PER_MSEC);
	zfd = open("/dev/zero", O_RDONLY);
	ASSERT_LE(0, zfd);
	for (i = 0; i < 10; i++)
		ASSERT_EQ(sizeof(buf), read(zfd, buf, sizeof(buf)));
	close(zfd);
	p = mmap(NULL, 16 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < 16; i++)
		__atomic_store_n(&p[i * page], 1, __ATOMIC_RELAXED);
	munmap(p, 16 * page);

	before = ktau_now_ns();
	r = ktau_must_snap_self(_metadata, self->fd, &self->a);
	now = ktau_now_ns();
	EXPECT_LE(before, self->a.req.time_ns);
	EXPECT_GE(now, self->a.req.time_ns);
	ASSERT_LT(0, r->start_ns);
	ASSERT_GE(before, r->start_ns);
	e = ktau_rec_entries(r);
	for (k = 0; k < r->nentries; k++) {
		if (e[k].excl_ns > e[k].incl_ns)
			TH_LOG("id %u: excl > incl", e[k].id);
		EXPECT_LE(e[k].excl_ns, e[k].incl_ns);
	}
	sum = ktau_rec_sum_excl(r);
	EXPECT_GE(now - r->start_ns + lifetime_slack(now - r->start_ns), sum)
		TH_LOG("exclusive times %llu ns, lifetime %llu ns", sum, now - r->start_ns);
	EXPECT_LT(0, sum);
	EXPECT_LT(0, ktau_rec_val(r, KTAU_ID_SCHED_VOL).count);
	EXPECT_LT(0, ktau_rec_val(r, KTAU_ID_FAULT_USER).count);

	/* Every task the snapshot returns, and every ID is in the registry. */
	before = ktau_now_ns();
	ASSERT_EQ(0, ktau_snap(self->fd, &self->b, KTAU_SNAP_ALL, NULL, 0));
	now = ktau_now_ns();
	ASSERT_EQ(0, ktau_funcs_load(&fs));
	EXPECT_LE(before, self->b.req.time_ns);
	EXPECT_GE(now, self->b.req.time_ns);
	for (r = ktau_snap_next(&self->b, NULL); r; r = ktau_snap_next(&self->b, r)) {
		nrec++;
		e = ktau_rec_entries(r);
		for (k = 0; k < r->nentries; k++) {
			EXPECT_LE(e[k].excl_ns, e[k].incl_ns)
				TH_LOG("tid %d id %u", r->tid, e[k].id);
			/*
			 * Every ID is listed, but for unimplemented system
			 * calls, which other programs may try; this one
			 * makes only implemented ones.
			 */
			if (r->pid == getpid() || e[k].id < KTAU_ID_SYSCALL_BASE)
				EXPECT_NE(NULL, ktau_func_by_id(&fs, e[k].id))
					TH_LOG("tid %d: id %u not in functions", r->tid, e[k].id);
		}
		if (r->flags & KTAU_REC_AGGREGATE)
			continue;
		ASSERT_GE(now, r->start_ns) TH_LOG("tid %d starts in the future", r->tid);
		sum = ktau_rec_sum_excl(r);
		/*
		 * Kernel threads started while the boot clock was still
		 * jiffies, which lag the TSC in a loaded virtual machine:
		 * their start time is not comparable. User tasks are.
		 */
		if (!(r->flags & KTAU_REC_KTHREAD))
			EXPECT_GE(now - r->start_ns + lifetime_slack(now - r->start_ns), sum)
				TH_LOG("tid %d (%s): exclusive %llu ns, lifetime %llu ns",
				       r->tid, r->comm, sum, now - r->start_ns);
		if (r->pid == 2)
			EXPECT_TRUE(r->flags & KTAU_REC_KTHREAD) TH_LOG("kthreadd not a kthread");
		if (r->pid == getpid())
			EXPECT_FALSE(r->flags & KTAU_REC_KTHREAD);
	}
	EXPECT_EQ(self->b.req.ntasks, nrec);
	EXPECT_NE(NULL, ktau_snap_find(&self->b, gettid()));
	EXPECT_NE(NULL, ktau_snap_find(&self->b, 1));
	ktau_funcs_free(&fs);

	/*
	 * The system-wide totals: this thread's calls are in them (no other
	 * test resets them meanwhile), however many other tasks made.
	 */
	r = ktau_must_snap_aggregate(_metadata, self->fd, &self->a);
	EXPECT_EQ(0, r->pid);
	ktau_getppid_loop(N_GETPPID);
	r2 = ktau_must_snap_aggregate(_metadata, self->fd, &self->b);
	EXPECT_LE(N_GETPPID, ktau_val_delta(r, r2, KTAU_ID_GETPPID).count);
}

/*
 * Inclusive time against wall time: 20 nanosleep() calls of 2 ms, one
 * after the other, each lasting at least what it asked for (the timer
 * never fires early) and all of them within the interval around the
 * loop. The one slack is the rate of KTAU's clock (the TSC) against
 * CLOCK_MONOTONIC, 0.1% as for lifetimes above; it is no tolerance on
 * what KTAU measures. And 1000 getppid() calls: their inclusive times
 * add up to less than the loop's wall time.
 */
#define N_SLEEPS	20
#define SLEEP_NS	(2 * KTAU_NSEC_PER_MSEC)

TEST_F_TIMEOUT(syscalls, incl_within_wall_time, 20)
{
	const struct ktau_task_rec *ra, *rb;
	struct timespec ts = { 0, SLEEP_NS };
	struct ktau_val d;
	__u64 t0, t1;
	int i;

	ra = ktau_must_snap_self(_metadata, self->fd, &self->a);
	t0 = ktau_now_ns();
	for (i = 0; i < N_SLEEPS; i++)
		ASSERT_EQ(0, syscall(SYS_nanosleep, &ts, NULL));
	t1 = ktau_now_ns();
	rb = ktau_must_snap_self(_metadata, self->fd, &self->b);
	d = ktau_val_delta(ra, rb, KTAU_ID_SYSCALL_BASE + SYS_nanosleep);
	TH_LOG("%d x nanosleep(%llu ns): %llu calls, incl %llu ns, wall %llu ns", N_SLEEPS,
	       (unsigned long long)SLEEP_NS, d.count, d.incl, (unsigned long long)(t1 - t0));
	EXPECT_EQ(N_SLEEPS, d.count);
	EXPECT_LE(N_SLEEPS * SLEEP_NS - N_SLEEPS * SLEEP_NS / 1000, d.incl);
	EXPECT_GE(t1 - t0 + (t1 - t0) / 1000, d.incl);
	EXPECT_LE(d.excl, d.incl);

	ra = ktau_must_snap_self(_metadata, self->fd, &self->a);
	t0 = ktau_now_ns();
	ktau_getppid_loop(1000);
	t1 = ktau_now_ns();
	rb = ktau_must_snap_self(_metadata, self->fd, &self->b);
	d = ktau_val_delta(ra, rb, KTAU_ID_GETPPID);
	TH_LOG("1000 getppid: incl %llu ns, wall %llu ns", d.incl, (unsigned long long)(t1 - t0));
	EXPECT_EQ(1000, d.count);
	EXPECT_LT(0, d.incl);
	EXPECT_GE(t1 - t0 + (t1 - t0) / 1000, d.incl);
}

struct getppid_thread {
	pthread_t th;
	unsigned int n;
	pid_t tid;
	pthread_barrier_t *bar;
};

static void *getppid_thread_fn(void *arg)
{
	struct getppid_thread *t = arg;

	t->tid = gettid();
	ktau_getppid_loop(t->n);
	pthread_barrier_wait(t->bar);	/* done */
	pthread_barrier_wait(t->bar);	/* the main thread took its snapshots */
	return NULL;
}

/* Two threads doing 100 and 300 getppid() each have exactly their own. */
TEST_F_TIMEOUT(syscalls, threads_have_separate_profiles, 20)
{
	struct getppid_thread t[2] = { { .n = 100 }, { .n = 300 } };
	const struct ktau_task_rec *r;
	pthread_barrier_t bar;
	struct ktau_val v;
	char path[64], *text;
	pid_t pids[3], pid = getpid();
	int i, n, tid, tpid;

	ASSERT_EQ(0, pthread_barrier_init(&bar, NULL, 3));
	for (i = 0; i < 2; i++) {
		t[i].bar = &bar;
		ASSERT_EQ(0, pthread_create(&t[i].th, NULL, getppid_thread_fn, &t[i]));
	}
	pthread_barrier_wait(&bar);

	pids[0] = t[0].tid;
	pids[1] = t[1].tid;
	pids[2] = gettid();
	ASSERT_EQ(0, ktau_snap(self->fd, &self->a, KTAU_SNAP_PIDS, pids, 3));
	EXPECT_EQ(3, self->a.req.ntasks);
	EXPECT_EQ(0, self->a.req.nmissing);
	for (i = 0; i < 2; i++) {
		r = ktau_snap_find(&self->a, t[i].tid);
		ASSERT_NE(NULL, r) TH_LOG("no record for thread %d", t[i].tid);
		EXPECT_EQ(pid, r->pid);
		EXPECT_EQ(t[i].n, ktau_rec_val(r, KTAU_ID_GETPPID).count);

		snprintf(path, sizeof(path), "/proc/self/task/%d/ktau", t[i].tid);
		text = ktau_slurp(path, NULL);
		ASSERT_NE(NULL, text) TH_LOG("%s: %s", path, strerror(errno));
		n = sscanf(text, "# tid %d pid %d", &tid, &tpid);
		ASSERT_EQ(2, n) TH_LOG("%s", text);
		EXPECT_EQ(t[i].tid, tid);
		EXPECT_EQ(pid, tpid);
		EXPECT_EQ(1, ktau_text_parse(text, KTAU_ID_GETPPID, &v));
		EXPECT_EQ(t[i].n, v.count);
		free(text);
	}
	r = ktau_snap_find(&self->a, gettid());
	ASSERT_NE(NULL, r);
	EXPECT_EQ(0, ktau_rec_val(r, KTAU_ID_GETPPID).count);

	/* The process view is the sum of its threads. */
	text = ktau_slurp("/proc/self/ktau", NULL);
	ASSERT_NE(NULL, text);
	EXPECT_EQ(0, strncmp(text, "# pid ", 6)) TH_LOG("%s", text);
	EXPECT_EQ(1, ktau_text_parse(text, KTAU_ID_GETPPID, &v));
	EXPECT_EQ(400, v.count);
	free(text);

	/* KTAU_SNAP_PROCESS: all three threads from the process ID. */
	ASSERT_EQ(0, ktau_snap(self->fd, &self->b, KTAU_SNAP_PIDS | KTAU_SNAP_PROCESS, &pid, 1));
	EXPECT_EQ(3, self->b.req.ntasks);
	EXPECT_EQ(0, self->b.req.nmissing);
	for (i = 0; i < 3; i++) {
		r = ktau_snap_find(&self->b, pids[i]);
		EXPECT_NE(NULL, r) TH_LOG("tid %d missing", pids[i]);
	}
	for (r = ktau_snap_next(&self->b, NULL); r; r = ktau_snap_next(&self->b, r))
		EXPECT_EQ(pid, r->pid);

	pthread_barrier_wait(&bar);
	for (i = 0; i < 2; i++)
		pthread_join(t[i].th, NULL);
	pthread_barrier_destroy(&bar);
}

/*
 * A process's text profile keeps its exited threads (ABI 1.3): a thread
 * that made 300 getppid() and exited still counts in /proc/self/ktau,
 * which never goes down.
 */
TEST_F_TIMEOUT(syscalls, process_keeps_exited_threads, 20)
{
	struct getppid_thread t = { .n = 300 };
	struct ktau_val before = { 0 }, alive = { 0 }, after = { 0 };
	pthread_barrier_t bar;

	ASSERT_EQ(0, ktau_text_get("/proc/self/ktau", KTAU_ID_GETPPID, &before));
	ASSERT_EQ(0, pthread_barrier_init(&bar, NULL, 2));
	t.bar = &bar;
	ASSERT_EQ(0, pthread_create(&t.th, NULL, getppid_thread_fn, &t));
	pthread_barrier_wait(&bar);	/* its calls are done */
	ASSERT_EQ(0, ktau_text_get("/proc/self/ktau", KTAU_ID_GETPPID, &alive));
	pthread_barrier_wait(&bar);	/* let it exit */
	ASSERT_EQ(0, pthread_join(t.th, NULL));
	ASSERT_EQ(0, ktau_text_get("/proc/self/ktau", KTAU_ID_GETPPID, &after));
	TH_LOG("getppid: %llu before, %llu with the thread, %llu after it exited",
	       (unsigned long long)before.count, (unsigned long long)alive.count,
	       (unsigned long long)after.count);
	EXPECT_EQ(before.count + 300, alive.count);
	EXPECT_EQ(alive.count, after.count);
	EXPECT_LE(alive.incl, after.incl);
	pthread_barrier_destroy(&bar);
}

static void *exec_sleep_fn(void *arg)
{
	execl("/bin/sleep", "sleep", "3", (char *)NULL);
	return arg;
}

/*
 * A thread other than the leader execs: it becomes the leader and the old
 * one goes. The totals of the threads that exited before, here 300
 * getppid() calls, stay the process's: /proc/PID/ktau of the exec'd
 * process (sleep) still counts them.
 */
TEST(non_leader_exec_keeps_exited_threads)
{
	struct ktau_val v = { 0 };
	char path[64], *comm;
	int status, i;
	pid_t pid;

	ktau_must_have_ktau(_metadata);
	ASSERT_EQ(0, access("/bin/sleep", X_OK));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct getppid_thread t = { .n = 300 };
		pthread_barrier_t bar;
		pthread_t th;

		if (pthread_barrier_init(&bar, NULL, 2))
			_exit(2);
		t.bar = &bar;
		if (pthread_create(&t.th, NULL, getppid_thread_fn, &t))
			_exit(2);
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);
		pthread_join(t.th, NULL);
		/* Not the leader: this thread execs. */
		if (pthread_create(&th, NULL, exec_sleep_fn, NULL))
			_exit(2);
		pthread_join(th, NULL);
		_exit(3);
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	for (i = 0; i < 200; i++) {
		comm = ktau_slurp(path, NULL);
		if (comm && !strcmp(comm, "sleep\n")) {
			free(comm);
			break;
		}
		free(comm);
		usleep(10000);
	}
	ASSERT_GT(200, i) TH_LOG("the child did not exec sleep");
	snprintf(path, sizeof(path), "/proc/%d/ktau", pid);
	ASSERT_EQ(0, ktau_text_get(path, KTAU_ID_GETPPID, &v));
	TH_LOG("getppid of the process after the exec: %llu", (unsigned long long)v.count);
	EXPECT_EQ(300, v.count);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
}

/*
 * A task name with a newline cannot make a line of its own in the text
 * views (ABI 1.13): it is escaped as /proc/PID/status escapes it ("\n",
 * "\\"). Before, "a\nb" began a line "b...".
 */
TEST(text_views_escape_the_name)
{
	static const char * const paths[] = { "/proc/thread-self/ktau", "/proc/self/ktau" };
	char *text, *line;
	size_t i;

	ASSERT_EQ(0, prctl(PR_SET_NAME, "a\nb\\c", 0, 0, 0));
	for (i = 0; i < 2; i++) {
		text = ktau_slurp(paths[i], NULL);
		ASSERT_NE(NULL, text) TH_LOG("%s: %s", paths[i], strerror(errno));
		line = strchr(text, '\n');
		ASSERT_NE(NULL, line);
		*line = '\0';
		TH_LOG("%s: %s", paths[i], text);
		EXPECT_NE(NULL, strstr(text, " comm a\\nb\\\\c")) TH_LOG("%s", paths[i]);
		EXPECT_NE('b', line[1]);
		free(text);
	}
}

TEST_HARNESS_MAIN
