// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU under churn, each scenario bounded in time and checked afterwards:
 * groups switched on and off under load, shared pages and sampling set
 * up and torn down through fork/exec storms, CPU hotplug while profiling.
 * After each: the counts of a fresh interval are exact, and the ktau_task
 * slab is back to about where it started. The group switching is also
 * checked while it goes on, on snapshots of threads blocked in pipes.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "ktau_util.h"

#define CHURN_NS	(3 * KTAU_NSEC_PER_SEC)
#define HARD_NS		(40 * KTAU_NSEC_PER_SEC)
#define N_WORKERS	3
#define N_PAIRS		2	/* pipe ping-pong pairs */
#define N_SNAP_TIDS	(N_WORKERS + 2 * N_PAIRS)
/*
 * Routines a task can have open at once: KTAU's per-task stack is 16
 * deep (KTAU_STACK_DEPTH, "a 16-deep stack" in ktau.rst); deeper entries
 * are counted as stack overflows.
 */
#define FRAMES_MAX	16
#define EXEC_ENV	"KTAU_CHURN_EXEC"
#define CPU1_ONLINE	"/sys/devices/system/cpu/cpu1/online"
/* Per-CPU slab caches and RCU-deferred frees: tasks' profiles in flight. */
#define SLAB_SLACK	128

struct worker {
	pthread_t th;
	int fd;
	pid_t tid;
	unsigned long calls;
	int shared_err, sample_err;
};

static int stop;

static bool stopped(void)
{
	return __atomic_load_n(&stop, __ATOMIC_RELAXED);
}

/* Active ktau_task objects from /proc/slabinfo, or -1. */
static long slab_objects(void)
{
	char *text = ktau_slurp("/proc/slabinfo", NULL), *line;
	long n = -1;

	if (!text)
		return -1;
	line = strstr(text, "\nktau_task ");
	if (line)
		n = strtol(line + strlen("\nktau_task "), NULL, 10);
	free(text);
	return n;
}

/* Let exited tasks be freed (RCU) before counting the slab. */
static long slab_settled(void)
{
	int i;

	for (i = 0; i < 5; i++)
		ktau_sleep_ns(100 * KTAU_NSEC_PER_MSEC);
	return slab_objects();
}

static int shared_reg(int fd, void *page)
{
	return ktau_shared_register(fd, page, sizeof(struct ktau_shared), 0);
}

/* User-mode samples of @tid (0: the caller), no signal. */
static int sample_on(int fd, pid_t tid)
{
	return ktau_sample_start(fd, tid, KTAU_SAMPLE_CPU_CLOCK, 1000000, 64, 0, 0,
				 KTAU_SAMPLE_NO_KERNEL);
}

static int sample_off(int fd, pid_t tid)
{
	struct ktau_sample_read r;
	struct ktau_sample s;

	return ktau_sample_read(fd, tid, &s, 1, &r, true);
}

/* System calls, with the shared page and sampling switched on and off. */
static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned long i;
	int ret;

	w->tid = gettid();
	for (i = 0; !stopped(); i++) {
		syscall(SYS_getppid);
		w->calls++;
		if (page != MAP_FAILED && i % 64 == 0) {
			ret = shared_reg(w->fd, page);
			if (ret && !w->shared_err)
				w->shared_err = ret;
			ret = sample_on(w->fd, 0);
			if (ret && ret != -EBUSY && !w->sample_err)
				w->sample_err = ret;
		}
		if (page != MAP_FAILED && i % 64 == 32) {
			ktau_shared_unregister(w->fd);
			sample_off(w->fd, 0);
		}
	}
	if (page != MAP_FAILED)
		munmap(page, 4096);
	return NULL;
}

/* Switches the groups at random; counts a switch before making it. */
struct churner {
	int fd;
	unsigned int n;		/* __atomic */
	int done;		/* __atomic */
	int err;
};

static void *churner_fn(void *arg)
{
	__u64 end = ktau_now_ns() + CHURN_NS, hard = ktau_now_ns() + HARD_NS;
	struct churner *c = arg;
	unsigned int seed = 1;
	__u64 mask;

	while ((ktau_now_ns() < end || c->n < 20) && ktau_now_ns() < hard && !stopped()) {
		mask = rand_r(&seed) & ((1u << KTAU_NR_GROUPS) - 1);
		__atomic_add_fetch(&c->n, 1, __ATOMIC_SEQ_CST);
		if (ioctl(c->fd, KTAU_IOC_SET_GROUPS, &mask)) {
			c->err = errno;
			break;
		}
		ktau_getppid_loop(50);
		/* Time for the pingers to go round between switches. */
		ktau_sleep_ns(KTAU_NSEC_PER_MSEC);
	}
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Exec'd by the storm: exits at once, whatever it inherited. */
__attribute__((constructor)) static void exec_child(void)
{
	if (getenv(EXEC_ENV))
		_exit(0);
}

FIXTURE(churn) {
	int fd;
	struct worker w[N_WORKERS];
	long slab0;
	struct ktau_snap a, b;
	struct churner c;
	pthread_t cth;
};

FIXTURE_SETUP(churn)
{
	int i;

	ktau_must_have_ktau(_metadata);
	self->fd = ktau_must_open_profiles(_metadata);
	stop = 0;
	self->slab0 = slab_settled();
	memset(self->w, 0, sizeof(self->w));
	for (i = 0; i < N_WORKERS; i++) {
		self->w[i].fd = self->fd;
		ASSERT_EQ(0, pthread_create(&self->w[i].th, NULL, worker_fn, &self->w[i]));
	}
}

FIXTURE_TEARDOWN(churn)
{
	int i;

	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < N_WORKERS; i++)
		if (self->w[i].th)
			pthread_join(self->w[i].th, NULL);
	if (self->cth)
		pthread_join(self->cth, NULL);
	if (geteuid() == 0)
		ktau_control("all on");
	ktau_snap_free(&self->a);
	ktau_snap_free(&self->b);
	close(self->fd);
}

/*
 * After the churn: the workers are stopped, a fresh getppid loop counts
 * exactly, no worker saw an unexpected error, and the slab came back.
 */
static void check_after(struct __test_metadata *_metadata, struct _test_data_churn *self)
{
	const struct ktau_task_rec *r0, *r1;
	long slab;
	int i;

	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < N_WORKERS; i++) {
		ASSERT_EQ(0, pthread_join(self->w[i].th, NULL));
		self->w[i].th = 0;
		EXPECT_LT(0, self->w[i].calls);
		EXPECT_EQ(0, self->w[i].shared_err);
		EXPECT_EQ(0, self->w[i].sample_err);
	}
	if (geteuid() == 0)
		ASSERT_EQ(0, ktau_control("all on"));
	r0 = ktau_must_snap_self(_metadata, self->fd, &self->a);
	ktau_getppid_loop(1000);
	r1 = ktau_must_snap_self(_metadata, self->fd, &self->b);
	EXPECT_EQ(1000, ktau_val_delta(r0, r1, KTAU_ID_GETPPID).count);
	slab = slab_settled();
	TH_LOG("ktau_task objects: %ld before, %ld at the end", self->slab0, slab);
	if (self->slab0 >= 0)
		EXPECT_GE(self->slab0 + SLAB_SLACK, slab);
}

/*
 * Threads that block in pipes: the lead writes a byte and reads the
 * answer, the other reads and answers, until the lead sees stop and
 * sends 'q' instead, so that neither is left blocked.
 */
struct pinger {
	pthread_t th;
	int rfd, wfd;
	bool lead;
	pid_t tid;		/* __atomic */
	unsigned long trips;	/* __atomic */
	int err;
};

static void *pinger_fn(void *arg)
{
	struct pinger *p = arg;
	char c;

	__atomic_store_n(&p->tid, gettid(), __ATOMIC_RELEASE);
	for (;;) {
		if (p->lead) {
			c = stopped() ? 'q' : 'p';
			if (write(p->wfd, &c, 1) != 1)
				break;
			if (c == 'q')
				return NULL;
			if (read(p->rfd, &c, 1) != 1)
				break;
		} else {
			if (read(p->rfd, &c, 1) != 1)
				break;
			if (c == 'q')
				return NULL;
			if (write(p->wfd, &c, 1) != 1)
				break;
		}
		__atomic_store_n(&p->trips, p->trips + 1, __ATOMIC_RELAXED);
	}
	p->err = errno ? errno : EIO;
	return NULL;
}

/*
 * What may change between two snapshots @a and @b (taken later) of one
 * live task, never reset, after at most @nsw group switches in its life.
 * Returns 0, or 1 with what is wrong in @why (calls, incl, excl of the id).
 */
static int snap_regress(const struct ktau_task_rec *a, const struct ktau_task_rec *b,
			unsigned int nsw, char *why, size_t len)
{
	const struct ktau_entry *ea = ktau_rec_entries(a), *eb = ktau_rec_entries(b), *e;
	__u32 i;

	for (i = 0; i < b->nentries; i++) {
		if (eb[i].incl_ns < eb[i].excl_ns) {
			snprintf(why, len, "id %u: incl %llu < excl %llu", eb[i].id,
				 eb[i].incl_ns, eb[i].excl_ns);
			return 1;
		}
	}
	for (i = 0; i < a->nentries; i++) {
		/*
		 * An entry with samples and no call yet goes when sampling
		 * stops (the fixture's workers sample themselves): gone is 0.
		 */
		e = ktau_rec_find(b, ea[i].id);
		if (!e && !ea[i].count && !ea[i].incl_ns && !ea[i].excl_ns)
			continue;
		if (!e || e->count < ea[i].count || e->incl_ns < ea[i].incl_ns ||
		    e->excl_ns < ea[i].excl_ns) {
			snprintf(why, len, "id %u down: %llu %llu %llu, then %s%llu %llu %llu",
				 ea[i].id, ea[i].count, ea[i].incl_ns, ea[i].excl_ns,
				 e ? "" : "gone ", e ? e->count : 0, e ? e->incl_ns : 0,
				 e ? e->excl_ns : 0);
			return 1;
		}
	}
	if (b->unmatched < a->unmatched || b->stack_overflows < a->stack_overflows ||
	    b->table_overflows < a->table_overflows) {
		snprintf(why, len, "unmatched/stack/table: %llu %llu %llu, then %llu %llu %llu",
			 a->unmatched, a->stack_overflows, a->table_overflows,
			 b->unmatched, b->stack_overflows, b->table_overflows);
		return 1;
	}
	/*
	 * An unmatched exit or dropped frame is a routine whose entry and
	 * exit saw its group in different states (ktau.rst, "unmatched"):
	 * an instance in progress when a switch completes; what runs while
	 * the hooks are being patched is not counted (ABI 1.11). Each
	 * switch adds at most the frames open when it completes, the exits
	 * then in progress whose entry was not seen, and the live frames
	 * those exits drop. These threads have no dynamic point, so fewer
	 * than FRAMES_MAX routines in progress: at most twice FRAMES_MAX a
	 * switch, however long the switching thread is held up.
	 */
	if (b->unmatched > 2ull * FRAMES_MAX * nsw) {
		snprintf(why, len, "unmatched %llu after %u switches", b->unmatched, nsw);
		return 1;
	}
	return 0;
}

/*
 * Groups switched at random by one thread while pipe ping-pong pairs
 * block in read() and write() and the fixture's workers loop: snapshots
 * of all of them during the switching are monotone, with incl >= excl
 * and unmatched within its bound; afterwards, check_after().
 */
TEST_F_TIMEOUT(churn, groups_switched_under_load, 60)
{
	struct pinger pg[2 * N_PAIRS] = { 0 };
	struct ktau_snap snap[2] = { 0 };
	const struct ktau_task_rec *r[2][N_SNAP_TIDS];
	pid_t tids[N_SNAP_TIDS];
	unsigned long trips = 0;
	unsigned int nsnaps = 0, nsw, i;
	__u64 unmatched = 0;
	int fds[2][2], cur;
	char why[160];

	if (geteuid() != 0)
		SKIP(return, "switching groups needs CAP_PERFMON");
	for (i = 0; i < N_PAIRS; i++) {
		ASSERT_EQ(0, pipe(fds[0]));
		ASSERT_EQ(0, pipe(fds[1]));
		pg[2 * i] = (struct pinger){ .rfd = fds[1][0], .wfd = fds[0][1], .lead = true };
		pg[2 * i + 1] = (struct pinger){ .rfd = fds[0][0], .wfd = fds[1][1] };
	}
	for (i = 0; i < 2 * N_PAIRS; i++)
		ASSERT_EQ(0, pthread_create(&pg[i].th, NULL, pinger_fn, &pg[i]));
	for (i = 0; i < N_SNAP_TIDS; i++) {
		pid_t *tid = i < N_WORKERS ? &self->w[i].tid : &pg[i - N_WORKERS].tid;

		while (!__atomic_load_n(tid, __ATOMIC_ACQUIRE))
			usleep(1000);
		tids[i] = *tid;
	}
	self->c.fd = self->fd;
	ASSERT_EQ(0, pthread_create(&self->cth, NULL, churner_fn, &self->c));

	/* Each snapshot against the one before, while the churn goes on. */
	for (cur = 0; !__atomic_load_n(&self->c.done, __ATOMIC_ACQUIRE); cur ^= 1) {
		ASSERT_EQ(0, ktau_snap(self->fd, &snap[cur], KTAU_SNAP_PIDS, tids,
				       N_SNAP_TIDS));
		/* Read after the snapshot: every switch it can reflect. */
		nsw = __atomic_load_n(&self->c.n, __ATOMIC_SEQ_CST);
		for (i = 0; i < N_SNAP_TIDS; i++) {
			r[cur][i] = ktau_snap_find(&snap[cur], tids[i]);
			ASSERT_NE(NULL, r[cur][i]) TH_LOG("tid %d missing", tids[i]);
			if (r[cur][i]->unmatched > unmatched)
				unmatched = r[cur][i]->unmatched;
			if (nsnaps)
				ASSERT_EQ(0, snap_regress(r[cur ^ 1][i], r[cur][i], nsw, why,
							  sizeof(why)))
					TH_LOG("tid %d (%s), snapshot %u: %s", tids[i],
					       i < N_WORKERS ? "worker" : "pinger", nsnaps, why);
		}
		nsnaps++;
	}
	ASSERT_EQ(0, pthread_join(self->cth, NULL));
	self->cth = 0;
	ASSERT_EQ(0, self->c.err) TH_LOG("KTAU_IOC_SET_GROUPS: %s", strerror(self->c.err));
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 2 * N_PAIRS; i++) {
		ASSERT_EQ(0, pthread_join(pg[i].th, NULL));
		EXPECT_EQ(0, pg[i].err) TH_LOG("pinger %u: %s", i, strerror(pg[i].err));
		trips += pg[i].trips;
		close(pg[i].rfd);
		close(pg[i].wfd);
	}
	for (i = 0; i < 2; i++)
		ktau_snap_free(&snap[i]);
	TH_LOG("%u switches, %u snapshots during them, %lu round trips, unmatched <= %llu a thread",
	       self->c.n, nsnaps, trips / 2, unmatched);
	EXPECT_LE(2, nsnaps);
	EXPECT_LT(0, trips);
	check_after(_metadata, self);
}

/*
 * Forks and execs of threads with shared pages and sampling, while the
 * workers register, start, stop and release theirs.
 */
TEST_F_TIMEOUT(churn, fork_exec_storm, 60)
{
	static char * const argv[] = { "ktau_churn", NULL };
	__u64 end = ktau_now_ns() + CHURN_NS, hard = ktau_now_ns() + HARD_NS;
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned int n = 0;
	int status;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, page);
	ASSERT_EQ(0, shared_reg(self->fd, page));
	setenv(EXEC_ENV, "1", 1);
	while ((ktau_now_ns() < end || n < 20) && ktau_now_ns() < hard) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			/* Not inherited: register and sample, then exec or exit. */
			int ret = sample_on(self->fd, 0);

			if (shared_reg(self->fd, page) || (ret && ret != -EBUSY))
				_exit(1);
			ktau_getppid_loop(5);
			if (n & 1)
				execv("/proc/self/exe", argv);
			_exit(0);
		}
		/* Sample the child from outside too; it may be gone. */
		sample_on(self->fd, pid);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(0, WEXITSTATUS(status));
		n++;
	}
	unsetenv(EXEC_ENV);
	ktau_shared_unregister(self->fd);
	munmap(page, 4096);
	TH_LOG("%u children", n);
	check_after(_metadata, self);
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* CPU 1 off and on again while the workers run and sample themselves. */
TEST_F_TIMEOUT(churn, cpu_hotplug, 90)
{
	__u64 end = ktau_now_ns() + CHURN_NS, hard = ktau_now_ns() + HARD_NS;
	unsigned int n = 0;

	/*
	 * Skipped only on a machine with one CPU (the main pass); with a
	 * second one (the 2-CPU passes) it must be able to go offline.
	 */
	if (access("/sys/devices/system/cpu/cpu1", F_OK))
		SKIP(return, "no CPU 1 (the 2-CPU pass runs this)");
	ASSERT_EQ(0, geteuid()) TH_LOG("CPU hotplug needs root");
	ASSERT_EQ(0, access(CPU1_ONLINE, W_OK))
		TH_LOG("CPU 1 exists but %s is not writable: %s (CONFIG_HOTPLUG_CPU?)",
		       CPU1_ONLINE, strerror(errno));
	while ((ktau_now_ns() < end || n < 4) && ktau_now_ns() < hard) {
		ASSERT_EQ(0, write_str(CPU1_ONLINE, "0"));
		ktau_getppid_loop(100);
		ASSERT_EQ(0, write_str(CPU1_ONLINE, "1"));
		ktau_getppid_loop(100);
		n++;
	}
	TH_LOG("%u offline/online cycles", n);
	check_after(_metadata, self);
}

TEST_HARNESS_MAIN
