// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU under churn, each scenario bounded in time and checked afterwards:
 * groups switched on and off under load, shared pages and sampling set
 * up and torn down through fork/exec storms, CPU hotplug while profiling.
 * After each: the counts of a fresh interval are exact, and the ktau_task
 * slab is back to about where it started.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "ktau_util.h"

#define CHURN_NS	(3 * KTAU_NSEC_PER_SEC)
#define HARD_NS		(40 * KTAU_NSEC_PER_SEC)
#define N_WORKERS	3
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

TEST_F_TIMEOUT(churn, groups_switched_under_load, 60)
{
	__u64 end = ktau_now_ns() + CHURN_NS, hard = ktau_now_ns() + HARD_NS;
	unsigned int n = 0, seed = 1;
	__u64 mask;

	if (geteuid() != 0)
		SKIP(return, "switching groups needs CAP_PERFMON");
	while ((ktau_now_ns() < end || n < 20) && ktau_now_ns() < hard) {
		mask = rand_r(&seed) & ((1u << KTAU_NR_GROUPS) - 1);
		ASSERT_EQ(0, ioctl(self->fd, KTAU_IOC_SET_GROUPS, &mask));
		ktau_getppid_loop(50);
		n++;
	}
	TH_LOG("%u switches", n);
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
