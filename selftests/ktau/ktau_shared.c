// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU shared pages: a thread's kernel counters in its own memory.
 *
 * Counts are checked exactly against known loops and against the thread's
 * own profile; registration is checked to end on unregister, exec and
 * exit and not to pass to new threads or processes; bad registrations are
 * checked to be refused without effect.
 */
#include <pthread.h>
#include <stddef.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include "ktau_util.h"

#define SHARED_SIZE	sizeof(struct ktau_shared)
#define LOOPS		1000
#define EXEC_ENV	"KTAU_SHARED_EXEC_FD"

static void *page_map(void)
{
	void *p = mmap(NULL, SHARED_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static __u64 shared_count(const struct ktau_shared *sh, __u32 id)
{
	const struct ktau_shared_entry *e = ktau_shared_entry(sh, id);

	return e ? e->count : 0;
}

/* The count of @id now. */
static __u64 shared_count_now(const struct ktau_shared *sh, __u32 id)
{
	static struct ktau_shared c;

	ktau_shared_copy(sh, &c);
	return shared_count(&c, id);
}

static __u64 shared_excl(const struct ktau_shared *sh, __u32 id)
{
	const struct ktau_shared_entry *e = ktau_shared_entry(sh, id);

	return e ? e->excl : 0;
}

/*
 * Exec'd by the exec test: the page it registered before exec is a memfd
 * mapping passed as a descriptor; after exec nothing may write it, and the
 * new program starts unregistered.
 */
__attribute__((constructor)) static void exec_child(void)
{
	const char *env = getenv(EXEC_ENV);
	struct ktau_shared *sh;
	int mfd, pfd, ret;
	__u32 seq;

	if (!env)
		return;
	mfd = atoi(env);
	sh = mmap(NULL, SHARED_SIZE, PROT_READ, MAP_SHARED, mfd, 0);
	pfd = open(KTAU_PROFILES_PATH, O_RDONLY);
	if (sh == MAP_FAILED || pfd < 0)
		_exit(10);
	seq = ktau_shared_seq(sh);
	if (!seq)
		_exit(11);	/* the page was never written before exec */
	ktau_getppid_loop(LOOPS);
	if (ktau_shared_seq(sh) != seq)
		_exit(12);	/* still written after exec */
	ret = ktau_shared_unregister(pfd);
	if (ret != -ENOENT)
		_exit(13);	/* registration survived exec */
	_exit(0);
}

FIXTURE(shared) {
	int fd;
	void *page;
};

FIXTURE_SETUP(shared)
{
	ktau_must_have_ktau(_metadata);
	self->fd = ktau_must_open_profiles(_metadata);
	self->page = page_map();
	ASSERT_NE(NULL, self->page);
}

FIXTURE_TEARDOWN(shared)
{
	ktau_shared_unregister(self->fd);
	munmap(self->page, SHARED_SIZE);
	close(self->fd);
}

/* The header is filled in at registration; the counters start at zero. */
TEST_F(shared, header)
{
	struct ktau_shared sh;

	memset(self->page, 0xa5, SHARED_SIZE);
	ASSERT_EQ(0, ktau_shared_register(self->fd, self->page, SHARED_SIZE, 0));
	ktau_shared_copy(self->page, &sh);
	EXPECT_EQ(0, sh.seq & 1);
	EXPECT_EQ(SHARED_SIZE, sh.size);
	EXPECT_EQ(KTAU_ABI_VERSION_MAJOR << 16 | KTAU_ABI_VERSION_MINOR, sh.abi);
	EXPECT_EQ(KTAU_SHARED_ENTRIES, sh.nentries);
	EXPECT_EQ(gettid(), sh.tid);
	EXPECT_NE(0, sh.clock_mult);
	EXPECT_GE(63, sh.clock_shift);
	EXPECT_EQ(0, sh.reserved0);
	EXPECT_EQ(0, sh.reserved[0]);
	EXPECT_EQ(0, sh.reserved[1]);
	/* The registration's own ioctl ends after the page is zeroed. */
	EXPECT_EQ(1, sh.groups[KTAU_GROUP_SYSCALL].count);
	EXPECT_EQ(2 * sh.updates, sh.seq);
}

/*
 * A getppid() loop: the syscall group and the getppid entry grow by
 * exactly the loop's count, like the thread's own profile.
 */
TEST_F(shared, syscall_counts)
{
	const struct ktau_task_rec *r0, *r1;
	struct ktau_snap s0 = { 0 }, s1 = { 0 };
	struct ktau_shared a, b;
	struct ktau_val d;
	__u64 ns;

	ASSERT_EQ(0, ktau_shared_register(self->fd, self->page, SHARED_SIZE, 0));
	ktau_shared_copy(self->page, &a);
	r0 = ktau_must_snap_self(_metadata, self->fd, &s0);
	ktau_getppid_loop(LOOPS);
	r1 = ktau_must_snap_self(_metadata, self->fd, &s1);
	ktau_shared_copy(self->page, &b);

	d = ktau_val_delta(r0, r1, KTAU_ID_GETPPID);
	ASSERT_EQ(LOOPS, d.count);
	EXPECT_EQ(LOOPS, shared_count(&b, KTAU_ID_GETPPID) - shared_count(&a, KTAU_ID_GETPPID));
	/* The loop, the snapshots' ioctls and whatever malloc() needed. */
	EXPECT_LE(LOOPS + 2, b.groups[KTAU_GROUP_SYSCALL].count -
			     a.groups[KTAU_GROUP_SYSCALL].count);
	EXPECT_EQ(2 * b.updates, b.seq);
	EXPECT_EQ(0, b.unlisted);
	/* The page's time for the loop is the profile's, to rounding. */
	ns = ktau_shared_ns(&b, shared_excl(&b, KTAU_ID_GETPPID) -
				shared_excl(&a, KTAU_ID_GETPPID));
	EXPECT_GE(ns + ns / 1000 + 10, d.excl)
		TH_LOG("page %llu ns, profile %llu ns", (unsigned long long)ns,
		       (unsigned long long)d.excl);
	EXPECT_LE(ns, d.excl + d.excl / 1000 + 10);
	ktau_snap_free(&s0);
	ktau_snap_free(&s1);
}

/* Sleeping is charged to the scheduler group, as off-CPU time. */
TEST_F(shared, sleep_is_sched_time)
{
	struct ktau_shared a, b;
	__u64 off, t0, t1;

	ASSERT_EQ(0, ktau_shared_register(self->fd, self->page, SHARED_SIZE, 0));
	/*
	 * The clock read outside the copies: a preemption between a copy
	 * and a clock read is off-CPU time that the counters have and the
	 * wall time would not (seen on the debug kernel: 0.6 ms).
	 */
	t0 = ktau_now_ns();
	ktau_shared_copy(self->page, &a);
	ktau_sleep_ns(50 * KTAU_NSEC_PER_MSEC);
	ktau_shared_copy(self->page, &b);
	t1 = ktau_now_ns();
	off = ktau_shared_ns(&b, b.groups[KTAU_GROUP_SCHED].excl - a.groups[KTAU_GROUP_SCHED].excl);
	EXPECT_LE(1, b.groups[KTAU_GROUP_SCHED].count - a.groups[KTAU_GROUP_SCHED].count);
	/*
	 * Off the CPU from the switch, a few microseconds after the timer
	 * was armed, to the return: 50 ms less 1 ms for that path (TCG,
	 * debug kernels), and no more than the wall time around the sleep
	 * (+0.1%: the TSC's rate against CLOCK_MONOTONIC). It was >= 40 ms.
	 */
	EXPECT_LE(49 * KTAU_NSEC_PER_MSEC, off) TH_LOG("off CPU %llu ns", (unsigned long long)off);
	EXPECT_GE(t1 - t0 + (t1 - t0) / 1000, off)
		TH_LOG("off CPU %llu ns in %llu ns of wall time", (unsigned long long)off,
		       (unsigned long long)(t1 - t0));
	EXPECT_LE(1, shared_count(&b, KTAU_ID_SCHED_VOL) - shared_count(&a, KTAU_ID_SCHED_VOL));
}

static __u64 ended(const struct ktau_shared *a, const struct ktau_shared *b, int g)
{
	return b->groups[g].count - a->groups[g].count;
}

/*
 * Computing makes no system call: the syscall group stays as it was, and
 * an unchanged seq means nothing at all ended.
 */
TEST_F(shared, compute_is_quiet)
{
	struct ktau_shared a, b;
	__u64 x = 0;
	__u64 i;

	ASSERT_EQ(0, ktau_shared_register(self->fd, self->page, SHARED_SIZE, 0));
	/*
	 * seq from the copy itself: read after it, a tick between the two
	 * is in seq and not in the copy (seen once on the debug kernel).
	 */
	ktau_shared_copy(self->page, &a);
	for (i = 0; i < 2000000; i++) {
		x += i;
		__asm__ __volatile__("" : "+r" (x));
	}
	ktau_shared_copy(self->page, &b);
	EXPECT_EQ(a.groups[KTAU_GROUP_SYSCALL].count, b.groups[KTAU_GROUP_SYSCALL].count);
	/* Only interrupts (the tick) may have ended meanwhile. */
	EXPECT_EQ((b.seq - a.seq) / 2, ended(&a, &b, KTAU_GROUP_IRQ) +
		  ended(&a, &b, KTAU_GROUP_SOFTIRQ) + ended(&a, &b, KTAU_GROUP_SCHED) +
		  ended(&a, &b, KTAU_GROUP_FAULT));
}

/*
 * The groups are the sums of their routines, and no excl exceeds its incl
 * (incl may exceed the sum where routines of a group nest).
 */
TEST_F(shared, groups_sum_entries)
{
	struct ktau_shared_counts sum[KTAU_SHARED_GROUPS] = { 0 };
	struct ktau_shared b;
	unsigned int g, i;

	ASSERT_EQ(0, ktau_shared_register(self->fd, self->page, SHARED_SIZE, 0));
	ktau_getppid_loop(LOOPS);
	ktau_sleep_ns(5 * KTAU_NSEC_PER_MSEC);
	ktau_shared_copy(self->page, &b);
	ASSERT_EQ(0, b.unlisted);
	for (i = 0; i < KTAU_SHARED_ENTRIES; i++) {
		const struct ktau_shared_entry *e = &b.entries[i];

		if (!e->id)
			continue;
		ASSERT_GT(KTAU_NR_GROUPS, e->group);
		EXPECT_LE(e->excl, e->incl) TH_LOG("id %u", e->id);
		sum[e->group].count += e->count;
		sum[e->group].excl += e->excl;
	}
	for (g = 0; g < KTAU_NR_GROUPS; g++) {
		EXPECT_EQ(sum[g].count, b.groups[g].count) TH_LOG("group %u", g);
		EXPECT_EQ(sum[g].excl, b.groups[g].excl) TH_LOG("group %u", g);
		EXPECT_LE(b.groups[g].excl, b.groups[g].incl) TH_LOG("group %u", g);
	}
	EXPECT_LE(LOOPS, b.groups[KTAU_GROUP_SYSCALL].count);
	EXPECT_LE(1, b.groups[KTAU_GROUP_SCHED].count);
}

/* Bad registrations fail with a clear errno and leave nothing behind. */
TEST_F(shared, bad_registrations)
{
	struct ktau_shared *sh = self->page;
	void *ro, *gone;

	EXPECT_EQ(-EINVAL, ktau_shared_register(self->fd, (char *)self->page + 8, SHARED_SIZE, 0));
	EXPECT_EQ(-EINVAL, ktau_shared_register(self->fd, self->page, SHARED_SIZE - 8, 0));
	EXPECT_EQ(-EINVAL, ktau_shared_register(self->fd, self->page, SHARED_SIZE + 8, 0));
	EXPECT_EQ(-EINVAL, ktau_shared_register(self->fd, self->page, SHARED_SIZE, 1));
	EXPECT_EQ(-EINVAL, ktau_shared_register(self->fd, NULL, SHARED_SIZE, 0));
	EXPECT_EQ(-EFAULT, ioctl(self->fd, KTAU_IOC_SHARED_REGISTER, NULL) ? -errno : 0);

	ro = mmap(NULL, SHARED_SIZE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(-EFAULT, ktau_shared_register(self->fd, ro, SHARED_SIZE, 0));
	munmap(ro, SHARED_SIZE);

	gone = page_map();
	ASSERT_NE(NULL, gone);
	munmap(gone, SHARED_SIZE);
	EXPECT_EQ(-EFAULT, ktau_shared_register(self->fd, gone, SHARED_SIZE, 0));

	/* Kernel addresses are not the caller's memory. */
	EXPECT_EQ(-EFAULT, ktau_shared_register(self->fd, (void *)0xffffffff81000000ul,
						SHARED_SIZE, 0));

	/* None of that registered anything. */
	EXPECT_EQ(-ENOENT, ktau_shared_unregister(self->fd));
	ktau_getppid_loop(10);
	EXPECT_EQ(0, ktau_shared_seq(sh));

	ASSERT_EQ(0, ktau_shared_register(self->fd, self->page, SHARED_SIZE, 0));
	EXPECT_EQ(-EBUSY, ktau_shared_register(self->fd, self->page, SHARED_SIZE, 0));
	EXPECT_EQ(0, ktau_shared_unregister(self->fd));
	EXPECT_EQ(-ENOENT, ktau_shared_unregister(self->fd));
}

/* Locked memory of this process in kB, from VmLck in /proc/self/status. */
static long vm_locked_kb(void)
{
	char *status = ktau_slurp("/proc/self/status", NULL), *p;
	long kb = -1;

	if (!status)
		return -1;
	p = strstr(status, "\nVmLck:");
	if (p)
		kb = strtol(p + 7, NULL, 10);
	free(status);
	return kb;
}

/*
 * The pinned page is charged as locked memory (ABI 1.3): VmLck grows by
 * the page while it is registered, and is back after unregister.
 */
TEST_F(shared, pin_charged_as_locked_memory)
{
	long before = vm_locked_kb(), pg = sysconf(_SC_PAGESIZE) / 1024;

	ASSERT_LE(0, before);
	ASSERT_EQ(0, ktau_shared_register(self->fd, self->page, SHARED_SIZE, 0));
	EXPECT_EQ(before + pg, vm_locked_kb());
	EXPECT_EQ(0, ktau_shared_unregister(self->fd));
	EXPECT_EQ(before, vm_locked_kb());
}

static void memlock_zero_refused(struct __test_metadata *_metadata)
{
	struct rlimit rl = { 0, 0 };
	int fd = ktau_must_open_profiles(_metadata);
	struct ktau_shared *sh = page_map();

	ASSERT_NE(NULL, sh);
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	EXPECT_EQ(-ENOMEM, ktau_shared_register(fd, sh, SHARED_SIZE, 0));
	EXPECT_EQ(0, vm_locked_kb());
	/* Nothing registered: the page stays untouched. */
	EXPECT_EQ(-ENOENT, ktau_shared_unregister(fd));
	ktau_getppid_loop(10);
	EXPECT_EQ(0, ktau_shared_seq(sh));
	close(fd);
}

/* Without CAP_IPC_LOCK, RLIMIT_MEMLOCK bounds the pin: 0 refuses it. */
TEST_F(shared, memlock_limit_refuses)
{
	ktau_run_as(_metadata, KTAU_USER_ID, 0, memlock_zero_refused);
}

/* After unregistering, the kernel no longer writes the page. */
TEST_F(shared, unregister_stops_updates)
{
	struct ktau_shared *sh = self->page, c;
	__u32 seq;

	ASSERT_EQ(0, ktau_shared_register(self->fd, self->page, SHARED_SIZE, 0));
	ktau_getppid_loop(10);
	ASSERT_EQ(0, ktau_shared_unregister(self->fd));
	seq = ktau_shared_seq(sh);
	EXPECT_NE(0, seq);
	ktau_getppid_loop(LOOPS);
	ktau_sleep_ns(KTAU_NSEC_PER_MSEC);
	EXPECT_EQ(seq, ktau_shared_seq(sh));
	/*
	 * A page can be registered again, and starts from zero: no getppid()
	 * of before, and of system calls at most the registration's own (an
	 * interrupt or a switch may end in between: those are other groups).
	 */
	ASSERT_EQ(0, ktau_shared_register(self->fd, self->page, SHARED_SIZE, 0));
	ktau_shared_copy(sh, &c);
	EXPECT_EQ(0, shared_count(&c, KTAU_ID_GETPPID));
	EXPECT_GE(1, c.groups[KTAU_GROUP_SYSCALL].count);
}

struct thread_arg {
	int fd;
	void *page;
	int before, reg, after;
	__u64 getppid;
};

static void *thread_fn(void *p)
{
	struct thread_arg *a = p;
	struct ktau_shared c;

	/* Not inherited from the thread that created it. */
	a->before = ktau_shared_unregister(a->fd);
	a->reg = ktau_shared_register(a->fd, a->page, SHARED_SIZE, 0);
	ktau_getppid_loop(LOOPS);
	ktau_shared_copy(a->page, &c);
	a->getppid = shared_count(&c, KTAU_ID_GETPPID);
	a->after = ktau_shared_unregister(a->fd);
	return NULL;
}

/* Threads start unregistered and count only their own routines. */
TEST_F(shared, threads)
{
	struct ktau_shared *sh = self->page;
	struct thread_arg a = { .fd = self->fd };
	pthread_t t;
	__u64 mine;

	a.page = page_map();
	ASSERT_NE(NULL, a.page);
	ASSERT_EQ(0, ktau_shared_register(self->fd, self->page, SHARED_SIZE, 0));
	mine = shared_count_now(sh, KTAU_ID_GETPPID);
	ASSERT_EQ(0, pthread_create(&t, NULL, thread_fn, &a));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(-ENOENT, a.before);
	EXPECT_EQ(0, a.reg);
	EXPECT_EQ(LOOPS, a.getppid);
	EXPECT_EQ(0, a.after);
	EXPECT_EQ(mine, shared_count_now(sh, KTAU_ID_GETPPID));
	munmap(a.page, SHARED_SIZE);
}

/*
 * A thread that exits with its page registered: the registration ends,
 * nothing writes the page once the thread is joined (a memfd page, so
 * that it outlives the thread's view of it). pthread_join() returns when
 * exit_mm() clears the thread's tid, before the rest of do_exit(): seen
 * under load (the multi-threaded TCG pass beside a kernel build), a later
 * routine of the thread (an interrupt there) still went to the page. The
 * window is short: 50 threads, the joiner on another CPU.
 */
static void *exit_fn(void *p)
{
	struct thread_arg *a = p;

	a->reg = ktau_shared_register(a->fd, a->page, SHARED_SIZE, 0);
	ktau_getppid_loop(10);
	return NULL;
}

TEST_F(shared, thread_exit_releases)
{
	struct thread_arg a = { .fd = self->fd };
	struct ktau_shared *sh;
	pthread_t t;
	__u32 seq;

	a.page = page_map();
	ASSERT_NE(NULL, a.page);
	sh = a.page;
	for (int i = 0; i < 50; i++) {
		ASSERT_EQ(0, pthread_create(&t, NULL, exit_fn, &a));
		ASSERT_EQ(0, pthread_join(t, NULL));
		ASSERT_EQ(0, a.reg);
		seq = ktau_shared_seq(sh);
		EXPECT_NE(0, seq);
		EXPECT_EQ(0, seq & 1);
		ktau_getppid_loop(LOOPS);
		ktau_sleep_ns(KTAU_NSEC_PER_MSEC);
		EXPECT_EQ(seq, ktau_shared_seq(sh)) TH_LOG("thread %d", i);
	}
	munmap(a.page, SHARED_SIZE);
}

/*
 * fork(): the child starts unregistered, may register its own page (the
 * same address: its copy), and its system calls never reach the parent's.
 */
TEST_F(shared, fork_not_inherited)
{
	struct ktau_shared *sh = self->page;
	__u64 before;
	int status;
	pid_t pid;

	ASSERT_EQ(0, ktau_shared_register(self->fd, self->page, SHARED_SIZE, 0));
	before = shared_count_now(sh, KTAU_ID_GETPPID);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct ktau_shared c;

		if (ktau_shared_unregister(self->fd) != -ENOENT)
			_exit(1);
		if (ktau_shared_register(self->fd, self->page, SHARED_SIZE, 0))
			_exit(2);
		ktau_getppid_loop(LOOPS);
		ktau_shared_copy(self->page, &c);
		if (shared_count(&c, KTAU_ID_GETPPID) != LOOPS)
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(before, shared_count_now(sh, KTAU_ID_GETPPID));
	/* The parent's page still counts its own calls after the fork. */
	ktau_getppid_loop(LOOPS);
	EXPECT_EQ(before + LOOPS, shared_count_now(sh, KTAU_ID_GETPPID));
}

/*
 * exec(): the registration ends. The page is a memfd mapping, inherited by
 * the new program as a descriptor, so that it can watch the old page.
 */
TEST_F(shared, exec_releases)
{
	struct ktau_shared *sh;
	char fdstr[16];
	int status, mfd;
	pid_t pid;

	mfd = memfd_create("ktau-shared", 0);
	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, ftruncate(mfd, SHARED_SIZE));
	sh = mmap(NULL, SHARED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, sh);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		static char * const argv[] = { "ktau_shared", NULL };

		if (ktau_shared_register(self->fd, sh, SHARED_SIZE, 0))
			_exit(20);
		ktau_getppid_loop(10);
		snprintf(fdstr, sizeof(fdstr), "%d", mfd);
		setenv(EXEC_ENV, fdstr, 1);
		execv("/proc/self/exe", argv);
		_exit(21);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("exec child: code %d", WEXITSTATUS(status));
	munmap(sh, SHARED_SIZE);
	close(mfd);
}

/*
 * The owner of a page makes system calls without pause until told to
 * stop; it counts them in calls.
 */
struct owner_arg {
	int fd;
	struct ktau_shared *page;
	int reg;
	int ready;
	int stop;
	__u64 calls;
};

static void *owner_fn(void *p)
{
	struct owner_arg *a = p;

	a->reg = ktau_shared_register(a->fd, a->page, SHARED_SIZE, 0);
	__atomic_store_n(&a->ready, 1, __ATOMIC_RELEASE);
	if (a->reg)
		return NULL;
	while (!__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE)) {
		syscall(SYS_getppid);
		__atomic_add_fetch(&a->calls, 1, __ATOMIC_RELEASE);
	}
	ktau_shared_unregister(a->fd);
	return NULL;
}

/*
 * A slow reader: the header, then a pause, then the counters, so that
 * the owner's updates land in the middle of a copy. 1: a consistent
 * copy; 0: seq odd or changed (retry).
 */
static int shared_copy_slow(const struct ktau_shared *sh, struct ktau_shared *out)
{
	size_t half = offsetof(struct ktau_shared, groups);
	unsigned int spin;
	__u32 seq = ktau_shared_seq(sh);

	if (seq & 1)
		return 0;
	memcpy(out, sh, half);
	for (spin = 0; spin < 2000; spin++)
		__asm__ __volatile__("" ::: "memory");
	memcpy((char *)out + half, (const char *)sh + half, sizeof(*out) - half);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return ktau_shared_seq(sh) == seq && out->seq == seq;
}

/*
 * A reader on another thread races the owner's updates (the seqcount
 * retry path): every copy it accepts is whole, seq twice the updates,
 * the updates the sum of the groups' counts, each group's count and
 * exclusive time the sum of its entries', and the system call counts
 * never go down and never run ahead of the calls made. The reader must
 * have been interrupted by an update at least once (else the test
 * proves nothing) and accepted many copies. On one CPU an update is
 * never seen half done (it runs with interrupts off), so there the test
 * proves that whole updates during a copy are retried; the 2-CPU pass
 * runs it with the owner and the reader on different CPUs, where an
 * update can be in progress during a copy (seen red there with a seq
 * that stayed even during the update: 10 torn copies in 1.5 s).
 */
TEST_F(shared, reader_never_sees_torn_page)
{
	struct ktau_shared *sh = self->page, c;
	struct owner_arg a = { .fd = self->fd, .page = self->page };
	unsigned long consistent = 0, retries = 0, bad = 0;
	__u64 end, last = 0, calls;
	pthread_t t;
	unsigned int g, i;

	ASSERT_EQ(0, pthread_create(&t, NULL, owner_fn, &a));
	while (!__atomic_load_n(&a.ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	ASSERT_EQ(0, a.reg);
	end = ktau_now_ns() + 1500 * KTAU_NSEC_PER_MSEC;
	while (ktau_now_ns() < end && bad < 10) {
		struct ktau_shared_counts sum[KTAU_SHARED_GROUPS] = { 0 };
		unsigned long was = bad;
		__u64 groups = 0, ppid;

		if (!shared_copy_slow(sh, &c)) {
			retries++;
			continue;
		}
		calls = __atomic_load_n(&a.calls, __ATOMIC_ACQUIRE);
		consistent++;
		for (i = 0; i < KTAU_SHARED_ENTRIES; i++) {
			if (!c.entries[i].id || c.entries[i].group >= KTAU_SHARED_GROUPS)
				continue;
			sum[c.entries[i].group].count += c.entries[i].count;
			sum[c.entries[i].group].excl += c.entries[i].excl;
		}
		for (g = 0; g < KTAU_SHARED_GROUPS; g++) {
			groups += c.groups[g].count;
			if (!c.unlisted && (sum[g].count != c.groups[g].count ||
					    sum[g].excl != c.groups[g].excl))
				bad++;
		}
		ppid = shared_count(&c, KTAU_ID_GETPPID);
		if (c.seq != 2 * c.updates || groups != c.updates || ppid < last ||
		    ppid > calls + 1)
			bad++;
		if (bad != was && was < 3)
			TH_LOG("torn: seq %u, updates %llu, groups %llu, getppid %llu (%llu, %llu)",
			       c.seq, (unsigned long long)c.updates, (unsigned long long)groups,
			       (unsigned long long)ppid, (unsigned long long)last,
			       (unsigned long long)calls);
		last = ppid;
	}
	__atomic_store_n(&a.stop, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, pthread_join(t, NULL));
	TH_LOG("%lu consistent copies, %lu retries, %lu torn; %llu calls by the owner",
	       consistent, retries, bad, (unsigned long long)a.calls);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, c.unlisted);
	EXPECT_LE(100, consistent);
	EXPECT_LE(1, retries) TH_LOG("no update landed in a copy: the retry path untested");
	EXPECT_LT(0, last);
}

TEST_HARNESS_MAIN
