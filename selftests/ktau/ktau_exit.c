// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU profiles of exited tasks: they fold into the aggregate, and the
 * exit collector (/proc/ktau/collect) hands each member's final profile
 * to the process that opened it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ktau_util.h"

#define N_CHILD		500
#define COLLECT_BUF	(1024 * 1024)

FIXTURE(exitprof) {
	int fd;
	struct ktau_snap a, b;
	char *buf;
};

FIXTURE_SETUP(exitprof)
{
	ktau_must_have_ktau(_metadata);
	self->fd = ktau_must_open_profiles(_metadata);
	self->buf = malloc(COLLECT_BUF);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(exitprof)
{
	ktau_snap_free(&self->a);
	ktau_snap_free(&self->b);
	free(self->buf);
	close(self->fd);
}

static void must_exit_zero(struct __test_metadata *_metadata, pid_t pid)
{
	int status;

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child %d died of signal %d", pid, WTERMSIG(status));
	ASSERT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child %d failed (2: join, 3: fork, 4: grandchild)", pid);
}

/* Read the collector until it has nothing more: bytes read or -errno. */
static ssize_t collect_read_all(int cfd, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;

	do {
		n = read(cfd, buf + len, cap - len);
		if (n < 0)
			return -errno;
		len += n;
	} while (n > 0 && len < cap);
	return len;
}

/* A record of buf (len bytes) by tid, or NULL. */
static const struct ktau_task_rec *find_rec(const char *buf, size_t len, pid_t tid)
{
	const struct ktau_task_rec *r;
	size_t off;

	for (off = 0; off < len; off += r->size) {
		r = (const void *)(buf + off);
		if (r->tid == tid)
			return r;
	}
	return NULL;
}

/* A child's 500 getppid() stay in the aggregate after it is gone. */
TEST_F_TIMEOUT(exitprof, aggregate_keeps_exited_child, 20)
{
	const struct ktau_task_rec *ra, *rb;
	struct ktau_val ta, tb;
	struct ktau_val d;
	char *text;
	pid_t pid;

	text = ktau_slurp(KTAU_AGGREGATE_PATH, NULL);
	ASSERT_NE(NULL, text) TH_LOG("%s: %s", KTAU_AGGREGATE_PATH, strerror(errno));
	EXPECT_EQ(0, strncmp(text, "# aggregate", 11)) TH_LOG("%.80s", text);
	ASSERT_LE(0, ktau_text_parse(text, KTAU_ID_GETPPID, &ta));
	free(text);
	ra = ktau_must_snap_aggregate(_metadata, self->fd, &self->a);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		ktau_getppid_loop(N_CHILD);
		_exit(0);
	}
	must_exit_zero(_metadata, pid);

	rb = ktau_must_snap_aggregate(_metadata, self->fd, &self->b);
	ASSERT_EQ(0, ktau_text_get(KTAU_AGGREGATE_PATH, KTAU_ID_GETPPID, &tb));
	d = ktau_val_delta(ra, rb, KTAU_ID_GETPPID);
	/*
	 * Folded once: nothing else in the guest calls getppid() meanwhile
	 * (the runner waits for this program), so the child's 500 and at
	 * most a few strays; a fold counted twice would be 1000.
	 */
	EXPECT_LE(N_CHILD, d.count);
	EXPECT_GE(N_CHILD + 10, d.count);
	EXPECT_LE(N_CHILD, tb.count - ta.count);
	EXPECT_GE(N_CHILD + 10, tb.count - ta.count);

	/* Asking for the reaped child by tid finds nothing. */
	ASSERT_EQ(0, ktau_snap(self->fd, &self->a, KTAU_SNAP_PIDS, &pid, 1));
	EXPECT_EQ(0, self->a.req.ntasks);
	EXPECT_EQ(1, self->a.req.nmissing);
	EXPECT_EQ(0, self->a.req.used);
}

/*
 * A child joins a collector, makes exactly 500 getppid() calls and exits:
 * once waitpid() returned, the collector holds its final profile.
 */
TEST_F_TIMEOUT(exitprof, collector_gets_final_profile, 20)
{
	struct ktau_collect_stats st;
	const struct ktau_task_rec *r;
	__u32 nrec;
	ssize_t n;
	int cfd;
	pid_t pid;

	cfd = ktau_must_open_collect(_metadata);
	/* Nothing queued yet. */
	EXPECT_EQ(0, read(cfd, self->buf, COLLECT_BUF));

	pid = ktau_must_fork_member(_metadata, cfd);
	if (pid == 0) {
		ktau_getppid_loop(N_CHILD);
		_exit(0);
	}
	must_exit_zero(_metadata, pid);

	n = collect_read_all(cfd, self->buf, COLLECT_BUF);
	ASSERT_LT(0, n) TH_LOG("no final profile queued after waitpid(): %zd", n);
	ASSERT_EQ(0, ktau_recs_check(self->buf, n, &nrec));
	EXPECT_EQ(1, nrec);
	r = find_rec(self->buf, n, pid);
	ASSERT_NE(NULL, r) TH_LOG("no record for tid %d", pid);
	EXPECT_EQ(pid, r->pid);
	EXPECT_TRUE(r->flags & KTAU_REC_EXITED);
	EXPECT_FALSE(r->flags & (KTAU_REC_AGGREGATE | KTAU_REC_KTHREAD));
	EXPECT_EQ(N_CHILD, ktau_rec_val(r, KTAU_ID_GETPPID).count);

	ASSERT_EQ(0, ioctl(cfd, KTAU_IOC_COLLECT_STATS, &st));
	EXPECT_LE(1, st.collected);
	EXPECT_EQ(0, st.queued);
	EXPECT_EQ(0, st.bytes);
	EXPECT_EQ(0, st.dropped);
	EXPECT_EQ(0, st.denied);
	/* All read: nothing more. */
	EXPECT_EQ(0, read(cfd, self->buf, COLLECT_BUF));
	close(cfd);
}

/*
 * Tasks created by a member after it joined are members too: a child
 * (100 getppid) and its own child (200) both reach the collector.
 */
TEST_F_TIMEOUT(exitprof, collector_follows_children, 20)
{
	struct ktau_collect_stats st;
	const struct ktau_task_rec *r;
	pid_t pid, gpid, *shared;
	int cfd, status;
	__u32 nrec;
	ssize_t n;

	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, shared);
	*shared = 0;
	cfd = ktau_must_open_collect(_metadata);

	pid = ktau_must_fork_member(_metadata, cfd);
	if (pid == 0) {
		gpid = fork();
		if (gpid < 0)
			_exit(3);
		if (gpid == 0) {
			ktau_getppid_loop(200);
			_exit(0);
		}
		*shared = gpid;
		if (waitpid(gpid, &status, 0) != gpid || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			_exit(4);
		ktau_getppid_loop(100);
		_exit(0);
	}
	must_exit_zero(_metadata, pid);
	gpid = *shared;
	ASSERT_LT(0, gpid);

	n = collect_read_all(cfd, self->buf, COLLECT_BUF);
	ASSERT_LT(0, n);
	ASSERT_EQ(0, ktau_recs_check(self->buf, n, &nrec));
	EXPECT_EQ(2, nrec);
	r = find_rec(self->buf, n, pid);
	ASSERT_NE(NULL, r) TH_LOG("no record for the child %d", pid);
	EXPECT_TRUE(r->flags & KTAU_REC_EXITED);
	EXPECT_EQ(100, ktau_rec_val(r, KTAU_ID_GETPPID).count);
	r = find_rec(self->buf, n, gpid);
	ASSERT_NE(NULL, r) TH_LOG("no record for the grandchild %d", gpid);
	EXPECT_TRUE(r->flags & KTAU_REC_EXITED);
	EXPECT_EQ(gpid, r->pid);
	EXPECT_EQ(200, ktau_rec_val(r, KTAU_ID_GETPPID).count);

	ASSERT_EQ(0, ioctl(cfd, KTAU_IOC_COLLECT_STATS, &st));
	EXPECT_EQ(2, st.collected);
	EXPECT_EQ(0, st.queued);
	close(cfd);
	munmap(shared, sizeof(*shared));
}

/*
 * Objects in use in the kmalloc caches of 4 KiB (the size of a queued
 * record's allocation, with or without memory cgroup accounting), from
 * /proc/slabinfo; -1 without it.
 */
static long kmalloc4k_objs(void)
{
	char *t = ktau_slurp("/proc/slabinfo", NULL), *line, *save = NULL;
	long n = -1, v;
	char name[64];

	if (!t)
		return -1;
	for (line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%63s %ld", name, &v) != 2)
			continue;
		if (!strcmp(name, "kmalloc-4k") || !strcmp(name, "kmalloc-cg-4k"))
			n = (n < 0 ? 0 : n) + v;
	}
	free(t);
	return n;
}

/*
 * The aggregate never goes down from one read to the next while tasks
 * fork and exit (a task that folds at exit between the copy of the
 * exited totals and the walk of the live tasks used to be in neither).
 * Run on two CPUs, where exits and reads overlap.
 */
TEST_F_TIMEOUT(exitprof, aggregate_never_decreases, 60)
{
	struct ktau_snap prev = { 0 }, cur = { 0 };
	const struct ktau_task_rec *rp, *rc;
	unsigned int reads = 0, bad = 0;
	__u64 end;
	pid_t storm;
	int status;

	storm = fork();
	ASSERT_LE(0, storm);
	if (storm == 0) {
		end = ktau_now_ns() + 2 * KTAU_NSEC_PER_SEC;
		while (ktau_now_ns() < end) {
			pid_t c = fork();

			if (c == 0) {
				ktau_getppid_loop(10);
				_exit(0);
			}
			if (c < 0 || waitpid(c, NULL, 0) != c)
				_exit(3);
		}
		_exit(0);
	}
	rp = ktau_must_snap_aggregate(_metadata, self->fd, &prev);
	while (waitpid(storm, &status, WNOHANG) == 0) {
		rc = ktau_must_snap_aggregate(_metadata, self->fd, &cur);
		reads++;
		for (__u32 i = 0; i < rp->nentries; i++) {
			const struct ktau_entry *e = &ktau_rec_entries(rp)[i];
			struct ktau_val v = ktau_rec_val(rc, e->id);

			if (v.count < e->count || v.incl < e->incl_ns || v.excl < e->excl_ns) {
				if (!bad++)
					TH_LOG("id %u down: count %llu -> %llu, incl %llu -> %llu",
					       e->id, (unsigned long long)e->count,
					       (unsigned long long)v.count,
					       (unsigned long long)e->incl_ns,
					       (unsigned long long)v.incl);
			}
		}
		ktau_snap_free(&prev);
		prev = cur;
		rp = rc;
		memset(&cur, 0, sizeof(cur));
	}
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	TH_LOG("%u reads of the aggregate during the storm", reads);
	EXPECT_LT(10, reads);
	EXPECT_EQ(0, bad);
	ktau_snap_free(&prev);
}

/* Shrink the 4 KiB kmalloc caches (/sys/kernel/slab/NAME/shrink). */
static void kmalloc4k_shrink(void)
{
	static const char * const caches[] = { "kmalloc-4k", "kmalloc-cg-4k" };
	char path[64];
	int fd;

	for (unsigned int i = 0; i < ARRAY_SIZE(caches); i++) {
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink", caches[i]);
		fd = open(path, O_WRONLY);
		if (fd < 0)
			continue;
		if (write(fd, "1", 1) != 1)
			ktau_log("shrinking %s: %s", caches[i], strerror(errno));
		close(fd);
	}
}

#define N_QUEUED	1000

/*
 * Closing the collector frees what it queued at once (ABI 1.3), while a
 * member lives on and keeps the collector itself: 1000 exited members'
 * records (allocations of about 2.4 KiB each, from the 4 KiB kmalloc
 * cache) leave the slab cache with the close. Members that exit after
 * the close are not collected: 500 more do not bring records back while
 * the collector lives on. 1,500 forks on the debug kernel under TCG
 * passed within 120 s on an idle host and timed out on a loaded one: the
 * limit is for a hang, not for speed.
 */
TEST_F_TIMEOUT(exitprof, close_frees_queue, 360)
{
	struct ktau_collect_stats st = { 0 };
	int cfd = ktau_must_open_collect(_metadata), go[2], done[2];
	long full, after, later;
	pid_t m;
	char c;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	m = ktau_must_fork_member(_metadata, cfd);
	if (m == 0) {
		/* A member, not a holder of the file: only the parent closes it. */
		close(cfd);
		close(go[1]);
		close(done[0]);
		for (int i = 0; i < N_QUEUED; i++) {
			pid_t k = fork();

			if (k < 0)
				_exit(3);
			if (k == 0)
				_exit(0);
			if (waitpid(k, NULL, 0) != k)
				_exit(4);
		}
		/* Tell the parent, then live on until it closed. */
		if (write(done[1], "x", 1) != 1)
			_exit(5);
		if (read(go[0], &c, 1) != 1)
			_exit(6);
		/*
		 * Members that exit after the close: not collected. Then wait
		 * again, so that the collector lives on while the parent looks.
		 */
		for (int i = 0; i < N_QUEUED / 2; i++) {
			pid_t k = fork();

			if (k < 0)
				_exit(7);
			if (k == 0)
				_exit(0);
			if (waitpid(k, NULL, 0) != k)
				_exit(8);
		}
		if (write(done[1], "x", 1) != 1)
			_exit(9);
		if (read(go[0], &c, 1) != 1)
			_exit(10);
		_exit(0);
	}
	ASSERT_EQ(1, read(done[0], &c, 1));
	ASSERT_EQ(0, ioctl(cfd, KTAU_IOC_COLLECT_STATS, &st));
	EXPECT_EQ(N_QUEUED, st.queued);
	full = kmalloc4k_objs();
	ASSERT_LE(N_QUEUED, full) TH_LOG("no /proc/slabinfo, or the records are elsewhere");
	close(cfd);
	/*
	 * KASAN (the debug kernel) keeps freed objects in its quarantine
	 * until the cache is shrunk: shrink it, as memory pressure would.
	 */
	kmalloc4k_shrink();
	after = kmalloc4k_objs();
	TH_LOG("%llu records queued; kmalloc-4k objects: %ld before the close, %ld after",
	       (unsigned long long)st.queued, full, after);
	/* All but the objects of partly used slabs of other users. */
	EXPECT_LE(N_QUEUED * 3 / 4, full - after);
	ASSERT_EQ(1, write(go[1], "x", 1));
	/*
	 * N_QUEUED / 2 members exited after the close: no record was queued
	 * for them (a record is a kmalloc-4k object; other users' churn
	 * stays well under a quarter of N_QUEUED, as above). Looked at while
	 * the member that forked them lives and keeps the collector: after
	 * the last member's exit the collector goes, queue and all, with
	 * that task's free_task() an RCU grace period later, and a check
	 * then would depend on that timing.
	 */
	ASSERT_EQ(1, read(done[0], &c, 1));
	kmalloc4k_shrink();
	later = kmalloc4k_objs();
	TH_LOG("kmalloc-4k objects after %d members exited past the close: %ld",
	       N_QUEUED / 2, later);
	EXPECT_GT(N_QUEUED / 4, later - after);
	ASSERT_EQ(1, write(go[1], "x", 1));
	must_exit_zero(_metadata, m);
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
}

/* The "fork_nomem N" of /proc/ktau/control, or -1. */
static long fork_nomem(void)
{
	return ktau_control_count("fork_nomem");
}

#define FAILSLAB	"/sys/kernel/debug/failslab/"

/*
 * A fork whose profile cannot be allocated succeeds (ABI 1.3), counted
 * in fork_nomem, and the child is missing from snapshots. The allocation
 * is made to fail with fault injection on KTAU's own slab cache, which
 * the debug kernel has (CONFIG_FAILSLAB); elsewhere the test is skipped.
 */
TEST_F_TIMEOUT(exitprof, fork_without_profile, 30)
{
	long before, after;
	pid_t pid, child;
	int status, p[2];
	char c;

	mount("none", "/sys/kernel/debug", "debugfs", 0, NULL);
	if (access(FAILSLAB "probability", W_OK) ||
	    access("/sys/kernel/slab/ktau_task/failslab", W_OK))
		SKIP(return, "no failslab for the ktau_task cache (the debug kernel has it)");
	before = fork_nomem();
	ASSERT_LE(0, before);
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, ktau_write_file("/sys/kernel/slab/ktau_task/failslab", "1"));
	/* No stack dump per injected failure on the console. */
	ASSERT_EQ(0, ktau_write_file(FAILSLAB "verbose", "0"));
	ASSERT_EQ(0, ktau_write_file(FAILSLAB "cache-filter", "Y"));
	ASSERT_EQ(0, ktau_write_file(FAILSLAB "ignore-gfp-wait", "N"));
	ASSERT_EQ(0, ktau_write_file(FAILSLAB "probability", "100"));
	ASSERT_EQ(0, ktau_write_file(FAILSLAB "interval", "1"));
	ASSERT_EQ(0, ktau_write_file(FAILSLAB "times", "1"));
	child = fork();
	/* Whatever happened, no more failures. */
	ktau_write_file(FAILSLAB "times", "0");
	ktau_write_file(FAILSLAB "probability", "0");
	ktau_write_file("/sys/kernel/slab/ktau_task/failslab", "0");
	ASSERT_LE(0, child) TH_LOG("fork failed: %s", strerror(errno));
	if (child == 0) {
		ktau_getppid_loop(10);
		if (read(p[0], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}
	after = fork_nomem();
	pid = child;
	ASSERT_EQ(0, ktau_snap(self->fd, &self->a, KTAU_SNAP_PIDS, &pid, 1));
	TH_LOG("fork_nomem %ld -> %ld; snapshot of the child: %u records, %u missing",
	       before, after, self->a.req.ntasks, self->a.req.nmissing);
	EXPECT_EQ(before + 1, after);
	EXPECT_EQ(0, self->a.req.ntasks);
	EXPECT_EQ(1, self->a.req.nmissing);
	ASSERT_EQ(1, write(p[1], "x", 1));
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(p[0]);
	close(p[1]);
}

#define RECYCLE_ROUNDS	40

static void getppid300(void)
{
	ktau_getppid_loop(300);
}

static void getppid10(void)
{
	ktau_getppid_loop(10);
}

/*
 * Tables of exited tasks are reused, cleaned when freed rather than
 * zeroed at each fork (so that a fork with every group off clears
 * nothing): a child forked just after another, busier one was freed
 * starts from nothing. Each round, a child makes 300 getppid() calls
 * and exits; the next one makes 10 and waits: exactly 10 in its
 * profile, and no overflow or unmatched frame it did not cause.
 */
TEST_F_TIMEOUT(exitprof, recycled_table_starts_empty, 60)
{
	EXPECT_EQ(0, ktau_recycle_rounds(_metadata, self->fd, RECYCLE_ROUNDS,
					 getppid300, getppid10, KTAU_ID_GETPPID, 10, NULL));
}

#define EMPTY_ROUNDS	20

/*
 * A task that exits with nothing recorded (every group off) is only
 * stamped as folded, and its table is then cleaned of its header alone:
 * the next task given that table must not inherit the stamp, or the
 * aggregate would take its live calls for folded ones and leave them
 * out. Each round: every group off, a child exits; every group on, a
 * child makes 10 getppid() calls and waits: the aggregate has them.
 */
TEST_F_TIMEOUT(exitprof, empty_table_reused_counts_live, 60)
{
	int round, bad = 0, go[2], done[2];
	const struct ktau_task_rec *ra, *rb;
	struct ktau_val d;
	pid_t pid;
	char c;

	if (ktau_no_switch_pass())
		SKIP(return, "switches groups: not in the pass that holds them (ktauhold)");
	for (round = 0; round < EMPTY_ROUNDS; round++) {
		ASSERT_EQ(0, ktau_write_file(KTAU_CONTROL_PATH, "all off"));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			ktau_getppid_loop(100);
			_exit(0);
		}
		must_exit_zero(_metadata, pid);
		ASSERT_EQ(0, ktau_write_file(KTAU_CONTROL_PATH, "all on"));
		/* Its table is freed after a grace period. */
		ktau_sleep_ns(5 * KTAU_NSEC_PER_MSEC);
		ASSERT_EQ(0, pipe(go));
		ASSERT_EQ(0, pipe(done));
		ra = ktau_must_snap_aggregate(_metadata, self->fd, &self->a);
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			ktau_getppid_loop(10);
			if (write(done[1], "x", 1) != 1 || read(go[0], &c, 1) != 1)
				_exit(2);
			_exit(0);
		}
		ASSERT_EQ(1, read(done[0], &c, 1));
		rb = ktau_must_snap_aggregate(_metadata, self->fd, &self->b);
		d = ktau_val_delta(ra, rb, KTAU_ID_GETPPID);
		if (d.count < 10 || d.count > 20) {
			TH_LOG("round %d: the aggregate has %llu getppid() calls more, not 10",
			       round, (unsigned long long)d.count);
			bad++;
		}
		ASSERT_EQ(1, write(go[1], "x", 1));
		must_exit_zero(_metadata, pid);
		close(go[0]);
		close(go[1]);
		close(done[0]);
		close(done[1]);
	}
	EXPECT_EQ(0, bad);
}

/*
 * A task joins one collector at a time: joining it again is a no-op,
 * joining another is EBUSY; the member's exit reaches the first only,
 * exactly once.
 */
TEST_F_TIMEOUT(exitprof, second_join_ebusy, 20)
{
	struct ktau_collect_stats st1, st2;
	const struct ktau_task_rec *r;
	int c1, c2, status;
	__u32 nrec;
	ssize_t n;
	pid_t pid;

	c1 = ktau_must_open_collect(_metadata);
	c2 = ktau_must_open_collect(_metadata);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (ioctl(c1, KTAU_IOC_COLLECT_JOIN))
			_exit(2);
		if (ioctl(c1, KTAU_IOC_COLLECT_JOIN))
			_exit(3);
		if (ioctl(c2, KTAU_IOC_COLLECT_JOIN) != -1 || errno != EBUSY)
			_exit(4);
		ktau_getppid_loop(7);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status))
		TH_LOG("2: join failed, 3: joining again failed, 4: another join not EBUSY");
	ASSERT_EQ(0, ioctl(c1, KTAU_IOC_COLLECT_STATS, &st1));
	ASSERT_EQ(0, ioctl(c2, KTAU_IOC_COLLECT_STATS, &st2));
	EXPECT_EQ(1, st1.collected);
	EXPECT_EQ(0, st2.collected + st2.dropped + st2.denied + st2.queued);
	n = collect_read_all(c1, self->buf, COLLECT_BUF);
	ASSERT_LT(0, n);
	ASSERT_EQ(0, ktau_recs_check(self->buf, n, &nrec));
	EXPECT_EQ(1, nrec);
	r = find_rec(self->buf, n, pid);
	ASSERT_NE(NULL, r);
	EXPECT_EQ(7, ktau_rec_val(r, KTAU_ID_GETPPID).count);
	EXPECT_EQ(0, read(c2, self->buf, COLLECT_BUF));
	close(c1);
	close(c2);
}

struct thr_arg {
	unsigned int calls;
	pid_t tid;
};

static void *getppid_thread(void *p)
{
	struct thr_arg *a = p;

	a->tid = gettid();
	ktau_getppid_loop(a->calls);
	return NULL;
}

#define N_THR	3

/*
 * Threads created by a member are members: a child starts three threads
 * (10, 20 and 30 getppid() calls), joins them and exits. Four records,
 * one per thread and one for the child, each with its own calls.
 */
TEST_F_TIMEOUT(exitprof, collector_gets_threads, 20)
{
	struct thr_arg *a;
	struct ktau_collect_stats st;
	const struct ktau_task_rec *r;
	int cfd, i;
	__u32 nrec;
	ssize_t n;
	pid_t pid;

	a = mmap(NULL, sizeof(*a) * N_THR, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, a);
	cfd = ktau_must_open_collect(_metadata);
	pid = ktau_must_fork_member(_metadata, cfd);
	if (pid == 0) {
		pthread_t th[N_THR];

		for (i = 0; i < N_THR; i++) {
			a[i].calls = 10 * (i + 1);
			if (pthread_create(&th[i], NULL, getppid_thread, &a[i]))
				_exit(3);
		}
		for (i = 0; i < N_THR; i++)
			if (pthread_join(th[i], NULL))
				_exit(4);
		ktau_getppid_loop(5);
		_exit(0);
	}
	/* The child is reaped after all its threads passed their exit. */
	must_exit_zero(_metadata, pid);
	n = collect_read_all(cfd, self->buf, COLLECT_BUF);
	ASSERT_LT(0, n);
	ASSERT_EQ(0, ktau_recs_check(self->buf, n, &nrec));
	EXPECT_EQ(N_THR + 1, nrec);
	for (i = 0; i < N_THR; i++) {
		r = find_rec(self->buf, n, a[i].tid);
		ASSERT_NE(NULL, r) TH_LOG("no record for thread %d", a[i].tid);
		EXPECT_EQ(pid, r->pid);
		EXPECT_NE(pid, r->tid);
		EXPECT_TRUE(r->flags & KTAU_REC_EXITED);
		EXPECT_EQ(a[i].calls, ktau_rec_val(r, KTAU_ID_GETPPID).count);
		/* A thread ends in exit(), which never returns: never counted. */
		EXPECT_EQ(NULL, ktau_rec_find(r, KTAU_ID_SYSCALL_BASE + SYS_exit));
	}
	r = find_rec(self->buf, n, pid);
	ASSERT_NE(NULL, r) TH_LOG("no record for the child %d", pid);
	EXPECT_EQ(5, ktau_rec_val(r, KTAU_ID_GETPPID).count);
	/* _exit() is exit_group(), never counted either. */
	EXPECT_EQ(NULL, ktau_rec_find(r, KTAU_ID_SYSCALL_BASE + SYS_exit_group));
	EXPECT_EQ(NULL, ktau_rec_find(r, KTAU_ID_SYSCALL_BASE + SYS_exit));
	ASSERT_EQ(0, ioctl(cfd, KTAU_IOC_COLLECT_STATS, &st));
	EXPECT_EQ(N_THR + 1, st.collected);
	EXPECT_EQ(0, st.dropped);
	close(cfd);
	munmap(a, sizeof(*a) * N_THR);
}

/* Enough distinct calls to fill a 64-slot table, with the thread's start. */
static void *nop_thread(void *p)
{
	ktau_nop_calls_run(72);
	return NULL;
}

/* The debug kernel (ktaudebug=1 on the command line, see run-tests.sh). */
/* Exits the collector has seen, queued or dropped. */
static __u64 seen(int cfd, struct ktau_collect_stats *st)
{
	if (ioctl(cfd, KTAU_IOC_COLLECT_STATS, st))
		return ~0ull;
	return st->collected + st->dropped;
}

/*
 * The queue holds at most KTAU_COLLECT_MAX_BYTES: threads that fill
 * their table (records of some 2 KiB) exit until some are dropped.
 * Every exit is collected or dropped, none lost uncounted; the queue
 * stops with less than a record's room left; reading it returns exactly
 * the bytes and records it counted; once read, it takes records again.
 * About 8,000 threads, 4 s under TCG: not on the debug kernel, where
 * they take minutes (7,792 threads in 100 s, measured) and
 * close_frees_queue runs the same queue.
 */
TEST_F_TIMEOUT(exitprof, queue_limit_counts_dropped, 120)
{
	struct ktau_collect_stats st = { 0 };
	unsigned int started = 0, i, nread = 0;
	const struct ktau_task_rec *r;
	size_t biggest = 0, total = 0;
	__u64 t0, end, dropped, collected;
	pthread_t th;
	char *buf;
	int cfd;
	__u32 nrec;
	ssize_t n;

	if (ktau_debug_kernel())
		SKIP(return, "8,000 threads: too slow on the debug kernel");
	buf = malloc(KTAU_COLLECT_MAX_BYTES);
	ASSERT_NE(NULL, buf);
	cfd = ktau_must_open_collect(_metadata);
	/* This test's own process joins: its threads are the members. */
	ASSERT_EQ(0, ioctl(cfd, KTAU_IOC_COLLECT_JOIN));
	t0 = ktau_now_ns();
	end = t0 + 100 * KTAU_NSEC_PER_SEC;
	while (st.dropped < 8 && ktau_now_ns() < end) {
		pthread_t batch[16];

		for (i = 0; i < 16; i++)
			ASSERT_EQ(0, pthread_create(&batch[i], NULL, nop_thread, NULL));
		for (i = 0; i < 16; i++)
			ASSERT_EQ(0, pthread_join(batch[i], NULL));
		started += 16;
		/* pthread_join() returns before the thread's exit is done. */
		while (seen(cfd, &st) < started && ktau_now_ns() < end)
			usleep(1000);
	}
	TH_LOG("%u threads in %llu ms: %llu collected, %llu dropped, %llu queued, %llu bytes",
	       started, (unsigned long long)((ktau_now_ns() - t0) / KTAU_NSEC_PER_MSEC),
	       (unsigned long long)st.collected, (unsigned long long)st.dropped,
	       (unsigned long long)st.queued, (unsigned long long)st.bytes);
	ASSERT_EQ(started, seen(cfd, &st)) TH_LOG("exits neither collected nor dropped");
	EXPECT_LE(8, st.dropped);
	EXPECT_EQ(st.collected, st.queued);
	EXPECT_GE(KTAU_COLLECT_MAX_BYTES, st.bytes);

	for (;;) {
		n = read(cfd, buf, KTAU_COLLECT_MAX_BYTES);
		ASSERT_LE(0, n) TH_LOG("read: %s", strerror(errno));
		if (!n)
			break;
		ASSERT_EQ(0, ktau_recs_check(buf, n, &nrec));
		for (r = (const void *)buf; (const char *)r < buf + n;
		     r = (const void *)((const char *)r + r->size)) {
			EXPECT_EQ(getpid(), r->pid);
			EXPECT_TRUE(r->flags & KTAU_REC_EXITED);
			if (r->size > biggest)
				biggest = r->size;
		}
		nread += nrec;
		total += n;
	}
	EXPECT_EQ(st.queued, nread);
	EXPECT_EQ(st.bytes, total);
	/* Full: the next record did not fit. */
	EXPECT_LT(KTAU_COLLECT_MAX_BYTES - biggest, st.bytes)
		TH_LOG("dropped with %llu bytes queued, records of up to %zu bytes",
		       (unsigned long long)st.bytes, biggest);
	ASSERT_EQ(0, ioctl(cfd, KTAU_IOC_COLLECT_STATS, &st));
	EXPECT_EQ(0, st.queued);
	EXPECT_EQ(0, st.bytes);

	/* Room again: the next exit is collected. */
	dropped = st.dropped;
	collected = st.collected;
	ASSERT_EQ(0, pthread_create(&th, NULL, nop_thread, NULL));
	ASSERT_EQ(0, pthread_join(th, NULL));
	end = ktau_now_ns() + 10 * KTAU_NSEC_PER_SEC;
	while (seen(cfd, &st) < collected + dropped + 1 && ktau_now_ns() < end)
		usleep(1000);
	EXPECT_EQ(collected + 1, st.collected);
	EXPECT_EQ(dropped, st.dropped);
	close(cfd);
	free(buf);
}

/*
 * The set-user-ID copy of this program that setuid_exec_* runs: with
 * SUID_ENV set, it gives its privileges up (real, effective and saved
 * user ID all the caller's again), makes a system call and exits, before
 * the test harness starts.
 */
#define SUID_ENV	"KTAU_EXIT_SUID_CHILD"

static void __attribute__((constructor)) suid_child(void)
{
	uid_t u;

	if (!getenv(SUID_ENV))
		return;
	u = getuid();
	if (setresuid(u, u, u))
		_exit(10);
	syscall(SYS_getppid);
	_exit(0);
}

/*
 * As KTAU_USER_ID: open a collector, and have a member exec @path, which
 * gives up what it gained and exits; the collector's stats in *st.
 * 0, or the step that failed.
 */
static int run_member_exec(const char *path, struct ktau_collect_stats *st)
{
	static char env_suid[] = SUID_ENV "=1";
	char *argv[2], *envp[2];
	int cfd, status;
	pid_t gc;

	if (ktau_become(KTAU_USER_ID, 0))
		return 1;
	cfd = open(KTAU_COLLECT_PATH, O_RDONLY);
	if (cfd < 0)
		return 2;
	gc = fork();
	if (gc < 0)
		return 3;
	if (gc == 0) {
		if (ioctl(cfd, KTAU_IOC_COLLECT_JOIN))
			_exit(20);
		argv[0] = (char *)path;
		argv[1] = NULL;
		envp[0] = env_suid;
		envp[1] = NULL;
		execve(path, argv, envp);
		_exit(21);
	}
	if (waitpid(gc, &status, 0) != gc || !WIFEXITED(status) || WEXITSTATUS(status))
		return 4;
	if (ioctl(cfd, KTAU_IOC_COLLECT_STATS, st))
		return 5;
	close(cfd);
	return 0;
}

/*
 * A member of an unprivileged user's collector runs a set-user-ID root
 * program that gives its privileges up again before it exits, so that
 * its credentials at exit are the opener's: what it did as root is not
 * the opener's to see, so it left the collector at the exec (denied,
 * not collected). The same program without the set-user-ID bit is
 * collected.
 */
TEST_F_TIMEOUT(exitprof, setuid_exec_leaves_unprivileged_collector, 30)
{
	char dir[] = "/tmp/ktau-suid.XXXXXX", path[64];
	struct ktau_collect_stats *st;
	int i, status, step;
	pid_t pid;

	st = mmap(NULL, 2 * sizeof(*st), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, st);
	ASSERT_NE(NULL, mkdtemp(dir));
	if (!ktau_suid_works(dir)) {
		rmdir(dir);
		SKIP(return, "/tmp is mounted nosuid");
	}
	ASSERT_EQ(0, chmod(dir, 0755));
	for (i = 0; i < 2; i++) {
		/* i == 0: set-user-ID root; i == 1: the plain program. */
		snprintf(path, sizeof(path), "%s/prog%d", dir, i);
		ASSERT_EQ(0, ktau_copy_file("/proc/self/exe", path, i ? 0755 : 04755));
		memset(&st[i], 0, sizeof(st[i]));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0)
			_exit(run_member_exec(path, &st[i]));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		step = WIFEXITED(status) ? WEXITSTATUS(status) : 100;
		ASSERT_EQ(0, step) TH_LOG("%s: step %d failed", path, step);
		TH_LOG("%s: collected %llu, denied %llu", i ? "plain" : "set-user-ID",
		       (unsigned long long)st[i].collected, (unsigned long long)st[i].denied);
		unlink(path);
	}
	rmdir(dir);
	EXPECT_EQ(0, st[0].collected);
	EXPECT_EQ(1, st[0].denied);
	EXPECT_EQ(1, st[1].collected);
	EXPECT_EQ(0, st[1].denied);
	munmap(st, 2 * sizeof(*st));
}

struct opener_exec {
	struct ktau_collect_stats st;
	int done;
};

/*
 * As KTAU_USER_ID: open a collector, hand it to a child (the reader), join
 * it and execute the set-user-ID @path: the opener's own process becomes
 * a member that runs as root. The reader waits for its exit (or its
 * leaving at the exec), and writes the collector's stats to @r. 0, or
 * the step that failed.
 */
static int run_opener_exec(const char *path, struct opener_exec *r)
{
	static char env_suid[] = SUID_ENV "=1";
	char *argv[2] = { (char *)path, NULL }, *envp[2] = { env_suid, NULL };
	struct ktau_collect_stats st;
	int cfd, i;
	pid_t reader;

	if (ktau_become(KTAU_USER_ID, 0))
		return 1;
	cfd = open(KTAU_COLLECT_PATH, O_RDONLY);
	if (cfd < 0)
		return 2;
	reader = fork();
	if (reader < 0)
		return 3;
	if (reader == 0) {
		for (i = 0; i < 1000; i++) {
			if (ioctl(cfd, KTAU_IOC_COLLECT_STATS, &st))
				_exit(4);
			if (st.collected + st.denied)
				break;
			usleep(10000);
		}
		/* A record of its exit would come after a denial at the exec. */
		usleep(200000);
		if (!ioctl(cfd, KTAU_IOC_COLLECT_STATS, &st))
			r->st = st;
		__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
		_exit(0);
	}
	if (ioctl(cfd, KTAU_IOC_COLLECT_JOIN))
		return 5;
	execve(path, argv, envp);
	return 6;
}

/*
 * The opener itself joins and executes a set-user-ID root program that
 * gives its privileges up again: another process holding the file reads
 * it, so the opener's own process gets no pass (as ptrace gives its own
 * threads): it is denied, not collected.
 */
TEST_F_TIMEOUT(exitprof, setuid_exec_of_the_opener_denied, 30)
{
	char dir[] = "/tmp/ktau-suid.XXXXXX", path[64];
	struct opener_exec *r;
	int i, status, ret;
	pid_t pid;

	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r);
	memset(r, 0, sizeof(*r));
	ret = ktau_suid_copy(dir, path, sizeof(path));
	if (ret == 1)
		SKIP(return, "/tmp is mounted nosuid");
	ASSERT_EQ(0, ret) TH_LOG("set-user-ID copy: %s", strerror(-ret));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(run_opener_exec(path, r));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("opener: status %#x (1 become, 2 open, 3 fork, 5 join, 6 exec)", status);
	/* The reader, the opener's child, was reparented: its word in @r. */
	for (i = 0; i < 2000 && !__atomic_load_n(&r->done, __ATOMIC_ACQUIRE); i++)
		usleep(10000);
	unlink(path);
	rmdir(dir);
	ASSERT_TRUE(r->done);
	TH_LOG("collected %llu, denied %llu", (unsigned long long)r->st.collected,
	       (unsigned long long)r->st.denied);
	EXPECT_EQ(0, r->st.collected);
	EXPECT_EQ(1, r->st.denied);
	munmap(r, sizeof(*r));
}

/*
 * Members of the caller's collector: the first makes itself not dumpable
 * (prctl(PR_SET_DUMPABLE, 0), as ssh and gpg-agent do to keep same-user
 * peers out), the second does so and turns it back on before it exits,
 * the third does neither. Each makes a system call and exits.
 * @want_denied: 1 if the first must be denied (an unprivileged caller).
 */
static void nondumpable_members(struct __test_metadata *_metadata, int want_denied)
{
	struct ktau_collect_stats st;
	pid_t pid[3];
	char *buf;
	ssize_t len;
	int cfd, i, status;

	cfd = open(KTAU_COLLECT_PATH, O_RDONLY);
	ASSERT_LE(0, cfd) TH_LOG("open: %s", strerror(errno));
	for (i = 0; i < 3; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (!pid[i]) {
			if (ioctl(cfd, KTAU_IOC_COLLECT_JOIN))
				_exit(20);
			if (i < 2 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
				_exit(21);
			syscall(SYS_getppid);
			if (i == 1 && prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
				_exit(22);
			_exit(0);
		}
		ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
		ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("member %d: status %#x (20: join, 21/22: prctl)", i, status);
		/* Queued (or not) in do_exit(), before the parent was told. */
		ASSERT_EQ(0, ioctl(cfd, KTAU_IOC_COLLECT_STATS, &st));
		TH_LOG("after member %d: collected %llu, denied %llu", i,
		       (unsigned long long)st.collected, (unsigned long long)st.denied);
		EXPECT_EQ(want_denied ? (unsigned long long)i : i + 1ull,
			  (unsigned long long)st.collected);
		EXPECT_EQ((unsigned long long)want_denied, (unsigned long long)st.denied);
		EXPECT_EQ(0, st.dropped);
	}
	buf = malloc(COLLECT_BUF);
	ASSERT_NE(NULL, buf);
	len = collect_read_all(cfd, buf, COLLECT_BUF);
	ASSERT_LE(0, len);
	EXPECT_EQ(!want_denied, !!find_rec(buf, len, pid[0]));
	EXPECT_NE(NULL, find_rec(buf, len, pid[1]));
	EXPECT_NE(NULL, find_rec(buf, len, pid[2]));
	free(buf);
	close(cfd);
}

static void nondumpable_unprivileged(struct __test_metadata *_metadata)
{
	nondumpable_members(_metadata, 1);
}

static void nondumpable_privileged(struct __test_metadata *_metadata)
{
	nondumpable_members(_metadata, 0);
}

/*
 * What /proc/PID/ktau would refuse the opener is not collected: a member
 * that is not dumpable when it exits (ABI 1.7) is denied to an
 * unprivileged opener, even of the same user, and collected by one with
 * CAP_PERFMON, or with CAP_SYS_PTRACE (as ptrace would let it read the
 * member); dumpability counts as it is at the exit, not as it was before.
 */
TEST_F_TIMEOUT(exitprof, nondumpable_member_denied, 30)
{
	ktau_run_as(_metadata, KTAU_USER_ID, 0, nondumpable_unprivileged);
	ktau_run_as(_metadata, KTAU_USER_ID, KTAU_CAP(CAP_PERFMON), nondumpable_privileged);
	ktau_run_as(_metadata, KTAU_USER_ID, KTAU_CAP(CAP_SYS_PTRACE), nondumpable_privileged);
}

/* The calling thread's capability sets: 0 or -errno. */
static int set_caps(__u64 permitted, __u64 effective)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = { { 0 } };

	data[0].permitted = (__u32)permitted;
	data[0].effective = (__u32)effective;
	data[1].permitted = (__u32)(permitted >> 32);
	data[1].effective = (__u32)(effective >> 32);
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

#define OTHER_CAPS	(KTAU_CAP(CAP_SETGID) | KTAU_CAP(CAP_NET_RAW))

/*
 * As KTAU_USER_ID with OTHER_CAPS permitted but none effective, open a
 * collector; members: 0 keeps the permitted capabilities, 1 takes
 * another group ID and drops them (dumpable again), 2 drops them.
 */
static void caps_and_gid_members(struct __test_metadata *_metadata)
{
	struct ktau_collect_stats st;
	pid_t pid[3];
	char *buf;
	ssize_t len;
	int cfd, i, status;

	ASSERT_EQ(0, set_caps(OTHER_CAPS, 0));
	cfd = open(KTAU_COLLECT_PATH, O_RDONLY);
	ASSERT_LE(0, cfd) TH_LOG("open: %s", strerror(errno));
	for (i = 0; i < 3; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (!pid[i]) {
			if (ioctl(cfd, KTAU_IOC_COLLECT_JOIN))
				_exit(20);
			if (i == 1 && (set_caps(OTHER_CAPS, KTAU_CAP(CAP_SETGID)) ||
				       setresgid(KTAU_USER_ID + 1, KTAU_USER_ID + 1,
						 KTAU_USER_ID + 1)))
				_exit(21);
			if (i >= 1 && (set_caps(0, 0) || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)))
				_exit(22);
			syscall(SYS_getppid);
			_exit(0);
		}
		ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
		ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("member %d: status %#x (20: join, 21: setresgid, 22: capset)",
			       i, status);
	}
	ASSERT_EQ(0, ioctl(cfd, KTAU_IOC_COLLECT_STATS, &st));
	TH_LOG("collected %llu, denied %llu", (unsigned long long)st.collected,
	       (unsigned long long)st.denied);
	EXPECT_EQ(1, st.collected);
	EXPECT_EQ(2, st.denied);
	buf = malloc(COLLECT_BUF);
	ASSERT_NE(NULL, buf);
	len = collect_read_all(cfd, buf, COLLECT_BUF);
	ASSERT_LE(0, len);
	EXPECT_EQ(NULL, find_rec(buf, len, pid[0]));
	EXPECT_EQ(NULL, find_rec(buf, len, pid[1]));
	EXPECT_NE(NULL, find_rec(buf, len, pid[2]));
	free(buf);
	close(cfd);
}

/*
 * The rest of the ptrace read check at a member's exit (ABI 1.7): one
 * that holds capabilities the opener did not have in its effective set
 * at open, or whose group IDs are no longer the opener's, is denied; the
 * same member without them is collected.
 */
TEST_F_TIMEOUT(exitprof, member_with_more_caps_or_other_gid_denied, 30)
{
	ktau_run_as(_metadata, KTAU_USER_ID, OTHER_CAPS, caps_and_gid_members);
}

TEST_HARNESS_MAIN
