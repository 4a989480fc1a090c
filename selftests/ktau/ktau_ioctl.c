// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU_IOC_SNAPSHOT: what a good call returns, and that bad arguments
 * fail with the documented errno and write nothing.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include "ktau_util.h"

#define BUF_SIZE	(1024 * 1024)
#define POISON		0xa5

FIXTURE(snapshot) {
	int fd;
	char *buf;
	struct ktau_snapshot req;
};

FIXTURE_SETUP(snapshot)
{
	ktau_must_have_ktau(_metadata);
	self->fd = ktau_must_open_profiles(_metadata);
	self->buf = malloc(BUF_SIZE);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, POISON, BUF_SIZE);
}

FIXTURE_TEARDOWN(snapshot)
{
	free(self->buf);
	close(self->fd);
}

/* errno of one KTAU_IOC_SNAPSHOT, 0 when it succeeds. */
static int snap_errno(int fd, struct ktau_snapshot *req)
{
	return -ktau_snapshot_ioctl(fd, req);
}

static bool untouched(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)buf[i] != POISON)
			return false;
	return true;
}

/* A snapshot of the calling thread: the answers are what the ABI says. */
TEST_F_TIMEOUT(snapshot, self_snapshot_fields, 10)
{
	const struct ktau_task_rec *r = (const void *)self->buf;
	__u64 t0, t1;
	__u32 nrec;

	ktau_snap_req(&self->req, KTAU_SNAP_SELF, NULL, 0, self->buf, BUF_SIZE);
	t0 = ktau_now_ns();
	ASSERT_EQ(0, snap_errno(self->fd, &self->req));
	t1 = ktau_now_ns();
	EXPECT_EQ(sizeof(self->req), self->req.size);
	EXPECT_EQ(KTAU_SNAP_SELF, self->req.flags);
	EXPECT_EQ(1, self->req.ntasks);
	EXPECT_EQ(0, self->req.nmissing);
	EXPECT_EQ(0, self->req.reserved);
	EXPECT_LE(t0, self->req.time_ns);
	EXPECT_GE(t1, self->req.time_ns);
	ASSERT_EQ(0, ktau_recs_check(self->buf, self->req.used, &nrec));
	EXPECT_EQ(1, nrec);
	EXPECT_EQ(r->size, self->req.used);
	EXPECT_EQ(gettid(), r->tid);
	EXPECT_EQ(getpid(), r->pid);
	/* Nothing written past what used says. */
	EXPECT_TRUE(untouched(self->buf + self->req.used, 4096));
}

TEST_F_TIMEOUT(snapshot, unknown_ioctl_enotty, 10)
{
	EXPECT_EQ(-1, ioctl(self->fd, _IO(KTAU_IOC_MAGIC, 0x7f)));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR('x', 1, struct ktau_snapshot), &self->req));
	EXPECT_EQ(ENOTTY, errno);
	/* The snapshot number with another argument size is another ioctl. */
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(KTAU_IOC_MAGIC, 1, __u64), &self->req));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_F_TIMEOUT(snapshot, bad_pointers_efault, 10)
{
	pid_t pid = getpid();

	/* The argument itself. */
	EXPECT_EQ(-1, ioctl(self->fd, KTAU_IOC_SNAPSHOT, (void *)1));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KTAU_IOC_SNAPSHOT, NULL));
	EXPECT_EQ(EFAULT, errno);

	/* The output buffer, with a size that would be enough. */
	ktau_snap_req(&self->req, KTAU_SNAP_SELF, NULL, 0, (void *)1, BUF_SIZE);
	EXPECT_EQ(EFAULT, snap_errno(self->fd, &self->req));
	ktau_snap_req(&self->req, KTAU_SNAP_SELF, NULL, 0, NULL, BUF_SIZE);
	EXPECT_EQ(EFAULT, snap_errno(self->fd, &self->req));

	/* The pids array. */
	ktau_snap_req(&self->req, KTAU_SNAP_PIDS, (void *)1, 1, self->buf, BUF_SIZE);
	EXPECT_EQ(EFAULT, snap_errno(self->fd, &self->req));
	ktau_snap_req(&self->req, KTAU_SNAP_PIDS, NULL, 1, self->buf, BUF_SIZE);
	EXPECT_EQ(EFAULT, snap_errno(self->fd, &self->req));
	ktau_snap_req(&self->req, KTAU_SNAP_PIDS | KTAU_SNAP_PROCESS, (void *)1, 1,
		      self->buf, BUF_SIZE);
	EXPECT_EQ(EFAULT, snap_errno(self->fd, &self->req));
	EXPECT_TRUE(untouched(self->buf, BUF_SIZE));

	/* And a good call still works. */
	ktau_snap_req(&self->req, KTAU_SNAP_PIDS | KTAU_SNAP_PROCESS, &pid, 1,
		      self->buf, BUF_SIZE);
	EXPECT_EQ(0, snap_errno(self->fd, &self->req));
	EXPECT_EQ(1, self->req.ntasks);
}

TEST_F_TIMEOUT(snapshot, bad_fields_einval, 10)
{
	static const __u32 bad_sizes[] = {
		0, 8, sizeof(struct ktau_snapshot) - 8, sizeof(struct ktau_snapshot) + 8, ~0u,
	};
	static const __u32 bad_flags[] = {
		KTAU_SNAP_SELF | 0x20, KTAU_SNAP_SELF | 0x80000000u,
		KTAU_SNAP_SELF | ~KTAU_SNAP_FLAGS,
	};
	pid_t pids[2] = { getpid(), gettid() };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad_sizes); i++) {
		ktau_snap_req(&self->req, KTAU_SNAP_SELF, NULL, 0, self->buf, BUF_SIZE);
		self->req.size = bad_sizes[i];
		EXPECT_EQ(EINVAL, snap_errno(self->fd, &self->req)) TH_LOG("size %u", bad_sizes[i]);
	}
	for (i = 0; i < ARRAY_SIZE(bad_flags); i++) {
		ktau_snap_req(&self->req, bad_flags[i], NULL, 0, self->buf, BUF_SIZE);
		EXPECT_EQ(EINVAL, snap_errno(self->fd, &self->req))
			TH_LOG("flags %#x", bad_flags[i]);
	}
	ktau_snap_req(&self->req, KTAU_SNAP_SELF, NULL, 0, self->buf, BUF_SIZE);
	self->req.reserved = 1;
	EXPECT_EQ(EINVAL, snap_errno(self->fd, &self->req));

	/* Too many pids: refused before the array is read. */
	ktau_snap_req(&self->req, KTAU_SNAP_PIDS, pids, KTAU_SNAP_MAX_PIDS + 1,
		      self->buf, BUF_SIZE);
	EXPECT_EQ(EINVAL, snap_errno(self->fd, &self->req));
	ktau_snap_req(&self->req, KTAU_SNAP_PIDS, pids, ~0u, self->buf, BUF_SIZE);
	EXPECT_EQ(EINVAL, snap_errno(self->fd, &self->req));
	/* Inconsistent lists: pids without KTAU_SNAP_PIDS, none with it. */
	ktau_snap_req(&self->req, KTAU_SNAP_SELF, pids, 2, self->buf, BUF_SIZE);
	EXPECT_EQ(EINVAL, snap_errno(self->fd, &self->req));
	ktau_snap_req(&self->req, KTAU_SNAP_PIDS, pids, 0, self->buf, BUF_SIZE);
	EXPECT_EQ(EINVAL, snap_errno(self->fd, &self->req));
	ktau_snap_req(&self->req, KTAU_SNAP_PIDS, NULL, 0, self->buf, BUF_SIZE);
	EXPECT_EQ(EINVAL, snap_errno(self->fd, &self->req));
	/* KTAU_SNAP_PROCESS only with a list of processes. */
	ktau_snap_req(&self->req, KTAU_SNAP_SELF | KTAU_SNAP_PROCESS, NULL, 0, self->buf,
		      BUF_SIZE);
	EXPECT_EQ(EINVAL, snap_errno(self->fd, &self->req));
	ktau_snap_req(&self->req, KTAU_SNAP_ALL | KTAU_SNAP_PROCESS, NULL, 0, self->buf,
		      BUF_SIZE);
	EXPECT_EQ(EINVAL, snap_errno(self->fd, &self->req));

	EXPECT_TRUE(untouched(self->buf, BUF_SIZE));
}

/* A buffer too small: ENOSPC, and used says how much would have done. */
TEST_F_TIMEOUT(snapshot, small_buffer_enospc, 10)
{
	__u64 need;
	int i, ret;

	ktau_snap_req(&self->req, KTAU_SNAP_SELF, NULL, 0, self->buf, 8);
	EXPECT_EQ(ENOSPC, snap_errno(self->fd, &self->req));
	EXPECT_LT(8, self->req.used);
	EXPECT_TRUE(untouched(self->buf + 8, BUF_SIZE - 8));

	/* No buffer at all: how much is needed. */
	ktau_snap_req(&self->req, KTAU_SNAP_SELF, NULL, 0, NULL, 0);
	EXPECT_EQ(ENOSPC, snap_errno(self->fd, &self->req));
	EXPECT_LT(sizeof(struct ktau_task_rec), self->req.used);
	need = self->req.used;

	/* Every task, in a buffer for about one. */
	ktau_snap_req(&self->req, KTAU_SNAP_ALL, NULL, 0, self->buf, need);
	EXPECT_EQ(ENOSPC, snap_errno(self->fd, &self->req));
	EXPECT_LT(need, self->req.used);

	/*
	 * The size asked for is enough at the time of the call; the profile may
	 * grow a little in between (a new ID), so allow a retry or two.
	 */
	for (i = 0, ret = ENOSPC; i < 3 && ret == ENOSPC; i++) {
		need = self->req.used;
		ASSERT_GE(BUF_SIZE, need);
		ktau_snap_req(&self->req, KTAU_SNAP_ALL, NULL, 0, self->buf, need);
		ret = snap_errno(self->fd, &self->req);
	}
	EXPECT_EQ(0, ret);
	EXPECT_GE(need, self->req.used);
}

/* Threads that do not exist are counted in nmissing, not returned. */
TEST_F_TIMEOUT(snapshot, missing_tids_counted, 10)
{
	pid_t pids[3], dead;
	int status;
	__u32 nrec;

	dead = fork();
	ASSERT_LE(0, dead);
	if (dead == 0)
		_exit(0);
	ASSERT_EQ(dead, waitpid(dead, &status, 0));

	pids[0] = dead;
	ktau_snap_req(&self->req, KTAU_SNAP_PIDS, pids, 1, self->buf, BUF_SIZE);
	ASSERT_EQ(0, snap_errno(self->fd, &self->req));
	EXPECT_EQ(0, self->req.ntasks);
	EXPECT_EQ(1, self->req.nmissing);
	EXPECT_EQ(0, self->req.used);

	pids[1] = gettid();
	pids[2] = dead;
	ktau_snap_req(&self->req, KTAU_SNAP_PIDS, pids, 3, self->buf, BUF_SIZE);
	ASSERT_EQ(0, snap_errno(self->fd, &self->req));
	EXPECT_EQ(1, self->req.ntasks);
	EXPECT_EQ(2, self->req.nmissing);
	ASSERT_EQ(0, ktau_recs_check(self->buf, self->req.used, &nrec));
	EXPECT_EQ(1, nrec);
	EXPECT_EQ(gettid(), ((struct ktau_task_rec *)self->buf)->tid);
}

/*
 * KTAU_SNAP_ALL through a /proc mounted in a new PID namespace, by the
 * namespace's only task (its init, PID 1 there): that task alone, and
 * nothing counted missing; the tasks of the namespaces above are not
 * there for it (before ABI 1.13 each of them was counted in nmissing).
 * Exit codes: 1 mount, 2 open, 3 ioctl, 4 ntasks, 5 nmissing, 6 record.
 */
static int all_in_new_pidns(const char *dir, char *buf, size_t len)
{
	const struct ktau_task_rec *r = (const void *)buf;
	struct ktau_snapshot req;
	char path[128];
	__u32 nrec;
	int fd;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("proc", dir, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return 1;
	snprintf(path, sizeof(path), "%s/ktau/profiles", dir);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 2;
	ktau_snap_req(&req, KTAU_SNAP_ALL, NULL, 0, buf, len);
	if (ktau_snapshot_ioctl(fd, &req))
		return 3;
	if (req.ntasks != 1)
		return 4;
	if (req.nmissing)
		return 5;
	if (ktau_recs_check(buf, req.used, &nrec) || nrec != 1 || r->tid != 1 || r->pid != 1)
		return 6;
	return 0;
}

/*
 * Run @fn(@arg) in the first child made after unshare(@flags) (a new PID
 * or time namespace holds the children of the caller of unshare(), not
 * the caller), after @prep if not NULL. The child's exit code, or 20 when
 * the kernel has no such namespace, 21 without CAP_SYS_ADMIN, 30 unshare,
 * 31 prep, 32 fork, 33 wait, 34 killed; -1 if the caller's fork failed.
 */
static int in_new_ns(int flags, int (*prep)(void), int (*fn)(void *arg), void *arg)
{
	int status;
	pid_t pid, child;

	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (unshare(flags))
			_exit(errno == EINVAL ? 20 : errno == EPERM ? 21 : 30);
		if (prep && prep())
			_exit(31);
		child = fork();
		if (child < 0)
			_exit(32);
		if (child == 0)
			_exit(fn(arg));
		if (waitpid(child, &status, 0) != child)
			_exit(33);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 34);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* in_new_ns()'s verdict: false when the test was skipped. */
static bool ns_ran(struct __test_metadata *_metadata, int r, const char *what)
{
	EXPECT_LE(0, r) TH_LOG("fork or wait for the %s namespace's parent", what);
	if (r == 20 || r == 21) {
		SKIP(return false, "%s", r == 20 ? "no such namespace in this kernel" :
		     "a new namespace needs CAP_SYS_ADMIN");
	}
	return true;
}

struct pidns_arg {
	const char *dir;
	char *buf;
};

static int all_in_new_pidns_arg(void *arg)
{
	const struct pidns_arg *a = arg;

	return all_in_new_pidns(a->dir, a->buf, BUF_SIZE);
}

TEST_F_TIMEOUT(snapshot, all_sees_its_pid_namespace_only, 20)
{
	char dir[] = "/tmp/ktau-pidns.XXXXXX";
	struct pidns_arg a = { .dir = dir, .buf = self->buf };
	int r;

	ASSERT_NE(NULL, mkdtemp(dir));
	r = in_new_ns(CLONE_NEWPID | CLONE_NEWNS, NULL, all_in_new_pidns_arg, &a);
	rmdir(dir);
	if (ns_ran(_metadata, r, "PID"))
		EXPECT_EQ(0, r) TH_LOG("step %d (%s)", r,
				       "1 mount, 2 open, 3 ioctl, 4 not 1 task, 5 nmissing, 6 record");
}

#define TIMENS_OFFSET_S	1000000	/* 11.6 days: far from the host's clock */

/*
 * @v within [@lo, @hi], give or take a second: samples and trace records
 * are converted from other clocks than clock_gettime()'s (a fast
 * accessor, the TSC from a reference), while a time of the initial
 * namespace is TIMENS_OFFSET_S off.
 */
static bool in_window(__u64 v, __u64 lo, __u64 hi)
{
	return v + KTAU_NSEC_PER_SEC >= lo && v <= hi + KTAU_NSEC_PER_SEC;
}

/*
 * Trace this thread's 16 getppid() calls in session @tfd: 0, or 8 attach,
 * 9 detach or read, 10 fewer than 16 getppid() records, 11 a record's
 * times not within [@t0, @t1] of the caller's clock, @shift_s seconds
 * added to the record's (the offset between the session opener's time
 * namespace and the caller's).
 */
static int trace_times(int tfd, char *buf, size_t len, __u64 shift_s)
{
	const struct ktau_trace_chunk *c = (const void *)buf;
	const struct ktau_trace_rec *tr = (const void *)(c + 1);
	struct ktau_trace_attr attr = { .size = sizeof(attr), .capacity = 1024 };
	__u64 t0, t1, shift = shift_s * KTAU_NSEC_PER_SEC;
	__s32 self = 0;
	__u32 i, calls = 0;
	ssize_t n;

	t0 = ktau_now_ns();
	if (ioctl(tfd, KTAU_IOC_TRACE_ATTACH, &attr))
		return 8;
	ktau_getppid_loop(16);
	if (ioctl(tfd, KTAU_IOC_TRACE_DETACH, &self))
		return 9;
	t1 = ktau_now_ns();
	n = read(tfd, buf, len);
	if (n < (ssize_t)sizeof(*c))
		return n < 0 ? 9 : 10;
	for (i = 0; i < c->nrecs; i++) {
		if (tr[i].kind != KTAU_TRACE_CALL)
			continue;
		if (!in_window(tr[i].end_ns + shift, t0, t1) || tr[i].start_ns > tr[i].end_ns)
			return 11;
		calls += tr[i].id == KTAU_ID_GETPPID;
	}
	/* The 16 getppid() calls at least. */
	return calls < 16 ? 10 : 0;
}

/*
 * A member of collector @cfd forked and exited: 0 when its record's
 * start_ns, @shift_s seconds added, is within the fork's [t0, t1] of
 * the caller's clock; 16 fork, join or wait, 17 no record of it, 18 its
 * start_ns.
 */
static int collect_times(int cfd, char *buf, size_t len, __u64 shift_s)
{
	const struct ktau_task_rec *r = (const void *)buf;
	__u64 t0, t1;
	int status;
	ssize_t n;
	pid_t pid;

	t0 = ktau_now_ns();
	pid = fork();
	if (pid < 0)
		return 16;
	if (pid == 0)
		_exit(ioctl(cfd, KTAU_IOC_COLLECT_JOIN) ? 2 : 0);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 16;
	t1 = ktau_now_ns();
	/* Queued before waitpid() returned (ktau_exit). */
	n = read(cfd, buf, len);
	if (n < (ssize_t)sizeof(*r) || r->tid != pid)
		return 17;
	return in_window(r->start_ns + shift_s * KTAU_NSEC_PER_SEC, t0, t1) ? 0 : 18;
}

/*
 * In a time namespace whose CLOCK_MONOTONIC is TIMENS_OFFSET_S ahead, a
 * task's times from KTAU are its own clock's: a snapshot's time_ns and
 * its record's start_ns, its samples' time_ns, the records' ends of a
 * trace session it opened, the start_ns of a collector's record when it
 * opened the collector; those of a trace session or collector opened
 * outside (@outer_trace, @outer_collect) are the opener's,
 * TIMENS_OFFSET_S behind. Exit codes: 1 open, 2 snapshot, 3 time_ns, 4
 * start_ns, 5 sampling, 6 no sample, 7 a sample's time, 8-11 the session
 * it opened (trace_times()), 12-15 (8-11 + 4) the session opened outside,
 * 16-18 the collector it opened (collect_times()), 19-21 (16-18 + 3) the
 * collector opened outside.
 */
static int times_in_timens(char *buf, size_t len, int outer_trace, int outer_collect)
{
	const struct ktau_task_rec *r = (const void *)buf;
	struct ktau_sample samples[256];
	struct ktau_sample_read sr;
	struct ktau_snapshot req;
	__u64 t0, t1, end;
	int fd, tfd, ret;
	__u32 i;

	fd = open(KTAU_PROFILES_PATH, O_RDONLY);
	if (fd < 0)
		return 1;
	t0 = ktau_now_ns();
	ktau_snap_req(&req, KTAU_SNAP_SELF, NULL, 0, buf, len);
	if (ktau_snapshot_ioctl(fd, &req) || req.ntasks != 1)
		return 2;
	t1 = ktau_now_ns();
	if (!in_window(req.time_ns, t0, t1))
		return 3;
	/* This task started a moment ago. */
	if (r->start_ns > t0 || r->start_ns + 60 * KTAU_NSEC_PER_SEC < t0)
		return 4;

	t0 = ktau_now_ns();
	if (ktau_sample_start(fd, 0, KTAU_SAMPLE_CPU_CLOCK, KTAU_NSEC_PER_MSEC, 256, 0, 0, 0))
		return 5;
	for (end = ktau_now_ns() + 50 * KTAU_NSEC_PER_MSEC; ktau_now_ns() < end;)
		;
	if (ktau_sample_read(fd, 0, samples, 256, &sr, true))
		return 5;
	t1 = ktau_now_ns();
	if (!sr.nread)
		return 6;
	for (i = 0; i < sr.nread; i++)
		if (!in_window(samples[i].time_ns, t0, t1))
			return 7;

	tfd = open("/proc/ktau/trace", O_RDONLY | O_CLOEXEC);
	if (tfd < 0)
		return 8;
	ret = trace_times(tfd, buf, len, 0);
	/* Closed: the thread may attach to another session. */
	close(tfd);
	if (ret)
		return ret;
	ret = trace_times(outer_trace, buf, len, TIMENS_OFFSET_S);
	if (ret)
		return ret + 4;
	close(fd);

	fd = open(KTAU_COLLECT_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 16;
	ret = collect_times(fd, buf, len, 0);
	close(fd);
	if (ret)
		return ret;
	ret = collect_times(outer_collect, buf, len, TIMENS_OFFSET_S);
	return ret ? ret + 3 : 0;
}

/* The time namespace's offset, before any task is in it. */
static int timens_prep(void)
{
	char off[64];

	snprintf(off, sizeof(off), "monotonic %d 0\n", TIMENS_OFFSET_S);
	return ktau_write_file("/proc/self/timens_offsets", off);
}

struct timens_arg {
	char *buf;
	int trace;	/* a trace session opened outside the namespace */
	int collect;	/* a collector opened outside the namespace */
};

static int times_in_timens_arg(void *arg)
{
	const struct timens_arg *a = arg;

	return times_in_timens(a->buf, BUF_SIZE, a->trace, a->collect);
}

TEST_F_TIMEOUT(snapshot, times_are_the_readers_time_namespace, 30)
{
	struct timens_arg a = { .buf = self->buf };
	int r;

	a.trace = open("/proc/ktau/trace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, a.trace);
	a.collect = open(KTAU_COLLECT_PATH, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, a.collect);
	r = in_new_ns(CLONE_NEWTIME, timens_prep, times_in_timens_arg, &a);
	close(a.trace);
	close(a.collect);
	if (ns_ran(_metadata, r, "time"))
		EXPECT_EQ(0, r)
			TH_LOG("step %d (%s; %s; %s; %s)", r,
			       "1 open, 2 snapshot, 3 time_ns, 4 start_ns, 5 sampling, 6 no sample",
			       "7 sample time, 8 trace attach, 9 read, 10 < 16 calls, 11 record time",
			       "12-15 the same in a session opened outside the namespace",
			       "16 collector, 17 no record, 18 start_ns, 19-21 one opened outside");
}

TEST_HARNESS_MAIN
