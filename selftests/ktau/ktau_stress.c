// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU under load: worker threads make system calls, the main thread
 * forks hundreds of short-lived children, and a reader thread reads every
 * view in a loop. Every read succeeds, every entry has incl >= excl, a
 * live thread's numbers never go down, and in the end the workers' counts
 * are exact. Resets, again and again, never show a reader half a slot.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "ktau_util.h"

#define N_WORKERS	4
#define STRESS_NS	(4 * KTAU_NSEC_PER_SEC)
/*
 * At least this much work, however slow the kernel (debug kernels are
 * several times slower), within HARD_NS.
 */
#define MIN_ROUNDS	3
#define MIN_CHILDREN	20
#define HARD_NS		(45 * KTAU_NSEC_PER_SEC)
#define MAX_CHILDREN	2000
#define CHILD_CALLS	5

struct worker {
	pthread_t th;
	pid_t tid;
	int zfd;
	unsigned long ngetppid;
	unsigned long nread;
	pthread_barrier_t *bar;
};

/* One (thread, ID) the reader saw, with its last numbers. */
struct seen {
	pid_t tid;
	__u32 id;
	unsigned long round;
	struct ktau_val v;
};

struct reader {
	pthread_t th;
	int fd;
	pid_t pid;
	__u64 deadline;
	__u64 hard_deadline;
	unsigned long rounds;
	unsigned long views;
	unsigned long errors;
	char first_error[512];
	struct seen *seen;
	size_t nseen;
	size_t capseen;
	struct ktau_snap s;
};

static int stop_workers;

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	char buf[64];

	w->tid = gettid();
	pthread_barrier_wait(w->bar);	/* all started */
	while (!__atomic_load_n(&stop_workers, __ATOMIC_RELAXED)) {
		syscall(SYS_getppid);
		w->ngetppid++;
		w->nread++;
		if (read(w->zfd, buf, sizeof(buf)) != sizeof(buf))
			break;
	}
	pthread_barrier_wait(w->bar);	/* stopped */
	pthread_barrier_wait(w->bar);	/* the main thread took its snapshot */
	return NULL;
}

static void reader_fail(struct reader *rd, const char *fmt, ...)
{
	va_list ap;

	if (rd->errors++)
		return;
	va_start(ap, fmt);
	vsnprintf(rd->first_error, sizeof(rd->first_error), fmt, ap);
	va_end(ap);
}

static void read_text_view(struct reader *rd, const char *path, const char *head)
{
	struct ktau_val v;
	char *text;

	text = ktau_slurp(path, NULL);
	rd->views++;
	if (!text) {
		reader_fail(rd, "read %s: %s", path, strerror(errno));
		return;
	}
	if (head && strncmp(text, head, strlen(head)))
		reader_fail(rd, "%s does not begin with '%s'", path, head);
	if (ktau_text_parse(text, 0, &v) < 0)
		reader_fail(rd, "%s: bad profile", path);
	free(text);
}

/* A live thread's numbers only grow, and its IDs never vanish. */
static void track(struct reader *rd, const struct ktau_task_rec *r)
{
	const struct ktau_entry *e = ktau_rec_entries(r);
	struct seen *sn, *nseen;
	__u32 i;
	size_t j;

	for (i = 0; i < r->nentries; i++) {
		for (j = 0; j < rd->nseen; j++)
			if (rd->seen[j].tid == r->tid && rd->seen[j].id == e[i].id)
				break;
		if (j == rd->nseen) {
			if (rd->nseen == rd->capseen) {
				rd->capseen = rd->capseen ? 2 * rd->capseen : 256;
				nseen = realloc(rd->seen, rd->capseen * sizeof(*nseen));
				if (!nseen) {
					reader_fail(rd, "out of memory");
					return;
				}
				rd->seen = nseen;
			}
			sn = &rd->seen[rd->nseen++];
			sn->tid = r->tid;
			sn->id = e[i].id;
		} else {
			sn = &rd->seen[j];
			if (e[i].count < sn->v.count || e[i].incl_ns < sn->v.incl ||
			    e[i].excl_ns < sn->v.excl)
				reader_fail(rd, "tid %d id %u: %llu/%llu/%llu -> %llu/%llu/%llu",
					    r->tid, e[i].id, sn->v.count, sn->v.incl, sn->v.excl,
					    e[i].count, e[i].incl_ns, e[i].excl_ns);
		}
		sn->v.count = e[i].count;
		sn->v.incl = e[i].incl_ns;
		sn->v.excl = e[i].excl_ns;
		sn->round = rd->rounds;
	}
	for (j = 0; j < rd->nseen; j++)
		if (rd->seen[j].tid == r->tid && rd->seen[j].round != rd->rounds)
			reader_fail(rd, "tid %d: id %u vanished", r->tid, rd->seen[j].id);
}

static void *reader_fn(void *arg)
{
	struct reader *rd = arg;
	const struct ktau_task_rec *r;
	struct ktau_funcs fs = { 0 };
	char path[300];
	struct dirent *de;
	char *text;
	DIR *d;
	int ret;

	while (ktau_now_ns() < rd->deadline ||
	       (rd->rounds < MIN_ROUNDS && ktau_now_ns() < rd->hard_deadline)) {
		rd->rounds++;
		ret = ktau_funcs_load(&fs);
		rd->views++;
		if (ret)
			reader_fail(rd, "functions: %s", strerror(-ret));
		text = ktau_control_read();
		rd->views++;
		if (!text || strncmp(text, "syscall on\n", 11))
			reader_fail(rd, "control: %s", text ? text : strerror(errno));
		free(text);
		read_text_view(rd, KTAU_AGGREGATE_PATH, "# aggregate");
		read_text_view(rd, "/proc/self/ktau", "# pid ");

		d = opendir("/proc/self/task");
		if (!d) {
			reader_fail(rd, "/proc/self/task: %s", strerror(errno));
		} else {
			while ((de = readdir(d))) {
				if (de->d_name[0] == '.')
					continue;
				snprintf(path, sizeof(path), "/proc/self/task/%s/ktau", de->d_name);
				read_text_view(rd, path, "# tid ");
			}
			closedir(d);
		}

		ret = ktau_snap(rd->fd, &rd->s, KTAU_SNAP_ALL, NULL, 0);
		rd->views++;
		if (ret) {
			reader_fail(rd, "KTAU_SNAP_ALL: %s", strerror(-ret));
			continue;
		}
		for (r = ktau_snap_next(&rd->s, NULL); r; r = ktau_snap_next(&rd->s, r))
			if (r->pid == rd->pid)
				track(rd, r);
	}
	ktau_funcs_free(&fs);
	return NULL;
}

FIXTURE(stress) {
	int fd;
	struct ktau_snap a, b, c;
};

FIXTURE_SETUP(stress)
{
	ktau_must_have_ktau(_metadata);
	self->fd = ktau_must_open_profiles(_metadata);
}

FIXTURE_TEARDOWN(stress)
{
	ktau_snap_free(&self->a);
	ktau_snap_free(&self->b);
	ktau_snap_free(&self->c);
	close(self->fd);
}

TEST_F_TIMEOUT(stress, readers_workers_and_forks, 60)
{
	struct worker w[N_WORKERS];
	struct reader rd = { 0 };
	const struct ktau_task_rec *ra, *rb, *r;
	unsigned long nchildren = 0, calls = 0;
	pid_t tids[N_WORKERS], pid;
	pthread_barrier_t bar;
	int i, status;
	__u64 d;

	ra = ktau_must_snap_aggregate(_metadata, self->fd, &self->a);
	ASSERT_EQ(0, pthread_barrier_init(&bar, NULL, N_WORKERS + 1));
	memset(w, 0, sizeof(w));
	for (i = 0; i < N_WORKERS; i++) {
		w[i].bar = &bar;
		w[i].zfd = open("/dev/zero", O_RDONLY);
		ASSERT_LE(0, w[i].zfd);
		ASSERT_EQ(0, pthread_create(&w[i].th, NULL, worker_fn, &w[i]));
	}
	pthread_barrier_wait(&bar);

	rd.fd = self->fd;
	rd.pid = getpid();
	rd.deadline = ktau_now_ns() + STRESS_NS;
	rd.hard_deadline = rd.deadline - STRESS_NS + HARD_NS;
	ASSERT_EQ(0, pthread_create(&rd.th, NULL, reader_fn, &rd));

	/* Short-lived children until the reader is done. */
	while ((ktau_now_ns() < rd.deadline || nchildren < MIN_CHILDREN) &&
	       nchildren < MAX_CHILDREN && ktau_now_ns() < rd.hard_deadline) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			ktau_getppid_loop(CHILD_CALLS);
			_exit(0);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		nchildren++;
	}
	ASSERT_EQ(0, pthread_join(rd.th, NULL));

	__atomic_store_n(&stop_workers, 1, __ATOMIC_RELAXED);
	pthread_barrier_wait(&bar);

	/* The workers are stopped but alive: their counts are exact. */
	for (i = 0; i < N_WORKERS; i++)
		tids[i] = w[i].tid;
	ASSERT_EQ(0, ktau_snap(self->fd, &self->c, KTAU_SNAP_PIDS, tids, N_WORKERS));
	EXPECT_EQ(N_WORKERS, self->c.req.ntasks);
	for (i = 0; i < N_WORKERS; i++) {
		r = ktau_snap_find(&self->c, tids[i]);
		ASSERT_NE(NULL, r) TH_LOG("no record for worker %d", tids[i]);
		EXPECT_LT(0, w[i].ngetppid);
		EXPECT_EQ(w[i].ngetppid, ktau_rec_val(r, KTAU_ID_GETPPID).count);
		EXPECT_EQ(w[i].nread, ktau_rec_val(r, KTAU_ID_READ).count);
		EXPECT_EQ(0, r->table_overflows);
		calls += w[i].ngetppid;
	}
	/* The system-wide totals hold the workers and all exited children. */
	rb = ktau_must_snap_aggregate(_metadata, self->fd, &self->b);
	d = ktau_val_delta(ra, rb, KTAU_ID_GETPPID).count;
	calls += nchildren * CHILD_CALLS;
	EXPECT_LE(calls, d);

	pthread_barrier_wait(&bar);
	for (i = 0; i < N_WORKERS; i++) {
		pthread_join(w[i].th, NULL);
		close(w[i].zfd);
	}
	pthread_barrier_destroy(&bar);

	TH_LOG("%lu rounds, %lu views read, %lu children, %zu (thread, ID) pairs tracked",
	       rd.rounds, rd.views, nchildren, rd.nseen);
	EXPECT_EQ(0, rd.errors) TH_LOG("first of %lu errors: %s", rd.errors, rd.first_error);
	EXPECT_LE(MIN_ROUNDS, rd.rounds);
	EXPECT_LE(MIN_CHILDREN, nchildren);
	free(rd.seen);
	ktau_snap_free(&rd.s);
}

/* The system calls of reset_never_tears_a_slot's child, each a slot. */
static const long torn_calls[] = {
	SYS_getppid, SYS_getuid, SYS_getgid, SYS_geteuid, SYS_getegid,
	SYS_getpid, SYS_gettid, SYS_getpgrp,
};

static int torn_stop;

static void *torn_resetter(void *arg)
{
	unsigned int *n = arg;

	while (!__atomic_load_n(&torn_stop, __ATOMIC_RELAXED) && !ktau_control("reset"))
		(*n)++;
	return NULL;
}

/*
 * A reset never hands a reader half of a slot: while a child makes
 * system calls of eight kinds without end and another thread resets
 * every profile again and again, no snapshot of the child has one of
 * those calls counted without its times. ktau_clear() zeroes a slot's
 * count before its times and a reader takes the count first, so before
 * the reset's sequence count (ktau_slot_read_stable()) a copy that met
 * the memset half way could; it has to meet it, which takes luck.
 */
TEST_F_TIMEOUT(stress, reset_never_tears_a_slot, 60)
{
	unsigned int nsnap = 0, nreset = 0, nseen = 0, bad = 0, k;
	const struct ktau_task_rec *r;
	pthread_t th;
	__u64 end;
	pid_t child;
	int st;

	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		/* Not left spinning when the test fails or times out. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() == 1)
			_exit(1);
		for (;;)
			for (k = 0; k < ARRAY_SIZE(torn_calls); k++)
				syscall(torn_calls[k]);
	}
	__atomic_store_n(&torn_stop, 0, __ATOMIC_RELAXED);
	ASSERT_EQ(0, pthread_create(&th, NULL, torn_resetter, &nreset));
	end = ktau_now_ns() + 3 * KTAU_NSEC_PER_SEC;
	while (ktau_now_ns() < end) {
		r = ktau_snap(self->fd, &self->a, KTAU_SNAP_PIDS, &child, 1) ? NULL :
		    ktau_snap_find(&self->a, child);
		if (!r)
			continue;
		nsnap++;
		for (k = 0; k < ARRAY_SIZE(torn_calls); k++) {
			struct ktau_val v = ktau_rec_val(r, KTAU_ID_SYSCALL_BASE + torn_calls[k]);

			if (!v.count)
				continue;
			nseen++;
			if (v.incl && v.excl)
				continue;
			if (!bad++)
				TH_LOG("system call %ld: %llu calls, %llu ns, %llu ns exclusive",
				       torn_calls[k], (unsigned long long)v.count,
				       (unsigned long long)v.incl, (unsigned long long)v.excl);
		}
	}
	__atomic_store_n(&torn_stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	kill(child, SIGKILL);
	ASSERT_EQ(child, waitpid(child, &st, 0));
	TH_LOG("%u snapshots, %u resets, %u slots with calls, %u torn", nsnap, nreset, nseen, bad);
	EXPECT_EQ(0, bad);
	/* Not vacuous: the child's calls were there to be torn. */
	EXPECT_LT(20, nseen);
	EXPECT_LT(20, nsnap);
	EXPECT_LT(20, nreset);
}

TEST_HARNESS_MAIN
