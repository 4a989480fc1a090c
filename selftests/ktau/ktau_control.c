// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/ktau/control: groups switched off record nothing and switched on
 * again record as before, the file reads back the state, reset zeroes a
 * profile, and bad commands fail with EINVAL and change nothing. Every
 * test leaves all groups on, whatever happens to it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "ktau_util.h"

#define ALL_ON		((1u << KTAU_NR_GROUPS) - 1)

FIXTURE(control) {
	int fd;
	struct ktau_snap a, b, c;
};

FIXTURE_SETUP(control)
{
	ktau_must_have_ktau(_metadata);
	self->fd = ktau_must_open_profiles(_metadata);
}

/* In the parent: runs even when the test dies. */
FIXTURE_TEARDOWN_PARENT(control)
{
	EXPECT_EQ(0, ktau_control("all on"));
	EXPECT_TRUE(ktau_all_groups_on());
}

/*
 * The control file reads one "<group> on|off" line per group in group
 * order, then "slots N" and "depth 16" (lines after those are allowed:
 * a later minor version may add some).
 */
static void expect_control(struct __test_metadata *_metadata, unsigned int on_mask)
{
	char want[256], tail[64], *text;
	unsigned int slots = 0, depth = 0;
	size_t len = 0;
	int g, n;

	for (g = 0; g < KTAU_NR_GROUPS; g++)
		len += snprintf(want + len, sizeof(want) - len, "%s %s\n", ktau_group_name(g),
				on_mask & (1u << g) ? "on" : "off");
	text = ktau_control_read();
	ASSERT_NE(NULL, text) TH_LOG("read %s: %s", KTAU_CONTROL_PATH, strerror(errno));
	ASSERT_EQ(0, strncmp(text, want, len))
		TH_LOG("control reads:\n%s\nexpected it to begin:\n%s", text, want);
	n = sscanf(text + len, "slots %u depth %u", &slots, &depth);
	ASSERT_EQ(2, n) TH_LOG("control reads:\n%s", text);
	n = snprintf(tail, sizeof(tail), "slots %u\ndepth %u\n", slots, depth);
	EXPECT_EQ(0, strncmp(tail, text + len, n)) TH_LOG("control reads:\n%s", text);
	EXPECT_EQ(16, depth);
	EXPECT_LE(16, slots);
	EXPECT_GE(128, slots);
	EXPECT_EQ(0, slots & (slots - 1)) TH_LOG("slots %u not a power of two", slots);
	free(text);
}

TEST_F_TIMEOUT(control, reads_back_state, 10)
{
	ASSERT_EQ(0, ktau_control("all on"));
	expect_control(_metadata, ALL_ON);
	ASSERT_EQ(0, ktau_control("all off"));
	expect_control(_metadata, 0);
	ASSERT_EQ(0, ktau_control("all on"));
	ASSERT_EQ(0, ktau_control("sched off"));
	expect_control(_metadata, ALL_ON & ~(1u << KTAU_GROUP_SCHED));
	/* One trailing newline is allowed. */
	ASSERT_EQ(0, ktau_control("fault off\n"));
	expect_control(_metadata, ALL_ON & ~(1u << KTAU_GROUP_SCHED | 1u << KTAU_GROUP_FAULT));
	ASSERT_EQ(0, ktau_control("sched on\n"));
	ASSERT_EQ(0, ktau_control("fault on"));
	expect_control(_metadata, ALL_ON);
}

/* "syscall off": 100 getppid() count nothing; "syscall on": 100 count 100. */
TEST_F_TIMEOUT(control, syscall_off_records_nothing, 10)
{
	const struct ktau_task_rec *ra, *rb, *rc;

	ra = ktau_must_snap_self(_metadata, self->fd, &self->a);
	ASSERT_EQ(0, ktau_control("syscall off"));
	expect_control(_metadata, ALL_ON & ~(1u << KTAU_GROUP_SYSCALL));
	ktau_getppid_loop(100);
	rb = ktau_must_snap_self(_metadata, self->fd, &self->b);
	EXPECT_EQ(0, ktau_val_delta(ra, rb, KTAU_ID_GETPPID).count);

	ASSERT_EQ(0, ktau_control("syscall on"));
	expect_control(_metadata, ALL_ON);
	ktau_getppid_loop(100);
	rc = ktau_must_snap_self(_metadata, self->fd, &self->c);
	EXPECT_EQ(100, ktau_val_delta(rb, rc, KTAU_ID_GETPPID).count);
}

/* The control ioctls on /proc/ktau/profiles do what the control file does. */
TEST_F_TIMEOUT(control, ioctl_control, 10)
{
	const struct ktau_task_rec *ra, *rb, *rc;
	__u64 mask = 0, bad = 1ull << KTAU_NR_GROUPS;

	ASSERT_EQ(0, ioctl(self->fd, KTAU_IOC_GET_GROUPS, &mask));
	EXPECT_EQ(ALL_ON, mask);
	EXPECT_EQ(-1, ioctl(self->fd, KTAU_IOC_SET_GROUPS, &bad));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KTAU_IOC_SET_GROUPS, (void *)1));
	EXPECT_EQ(EFAULT, errno);
	expect_control(_metadata, ALL_ON);

	ra = ktau_must_snap_self(_metadata, self->fd, &self->a);
	mask = ALL_ON & ~(1u << KTAU_GROUP_SYSCALL);
	ASSERT_EQ(0, ioctl(self->fd, KTAU_IOC_SET_GROUPS, &mask));
	expect_control(_metadata, mask);
	mask = 0;
	ASSERT_EQ(0, ioctl(self->fd, KTAU_IOC_GET_GROUPS, &mask));
	EXPECT_EQ(ALL_ON & ~(1u << KTAU_GROUP_SYSCALL), mask);
	ktau_getppid_loop(100);
	rb = ktau_must_snap_self(_metadata, self->fd, &self->b);
	EXPECT_EQ(0, ktau_val_delta(ra, rb, KTAU_ID_GETPPID).count);

	mask = ALL_ON;
	ASSERT_EQ(0, ioctl(self->fd, KTAU_IOC_SET_GROUPS, &mask));
	expect_control(_metadata, ALL_ON);
	ktau_getppid_loop(100);
	rc = ktau_must_snap_self(_metadata, self->fd, &self->c);
	EXPECT_EQ(100, ktau_val_delta(rb, rc, KTAU_ID_GETPPID).count);
}

static int n_handled;

static void on_sigusr1(int sig)
{
	__atomic_fetch_add(&n_handled, 1, __ATOMIC_RELAXED);
}

/* System calls, page faults, signals and sleeps: a bit of every group. */
static void mixed_load(struct __test_metadata *_metadata, char *pages, long page, int npages)
{
	int i;

	ktau_getppid_loop(100);
	for (i = 0; i < npages; i++)
		__atomic_store_n(&pages[i * page], 1, __ATOMIC_RELAXED);
	for (i = 0; i < 10; i++)
		ASSERT_EQ(0, raise(SIGUSR1));
	/*
	 * Long enough to block: a nanosleep whose timer expires before the
	 * task gets to schedule() (debug kernels under TCG are that slow)
	 * returns without blocking.
	 */
	for (i = 0; i < 5; i++)
		ktau_sleep_ns(10 * KTAU_NSEC_PER_MSEC);
}

/*
 * "all off": nothing at all changes in the thread's profile, whatever it
 * does; "all on": it all counts again.
 */
TEST_F_TIMEOUT(control, all_off_records_nothing, 10)
{
	const long page = sysconf(_SC_PAGESIZE);
	struct sigaction sa = { .sa_handler = on_sigusr1 };
	const struct ktau_task_rec *ra, *rb, *rc;
	const struct ktau_entry *ea, *eb;
	char *p;
	__u32 i;

	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	p = mmap(NULL, 64 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, ktau_snap_reserve(&self->a, KTAU_SNAP_BUF_INIT));
	ASSERT_EQ(0, ktau_snap_reserve(&self->b, KTAU_SNAP_BUF_INIT));
	ASSERT_EQ(0, ktau_snap_reserve(&self->c, KTAU_SNAP_BUF_INIT));

	ASSERT_EQ(0, ktau_control("all off"));
	/* Taken with everything off: the snapshot call itself is not counted. */
	ra = ktau_must_snap_self(_metadata, self->fd, &self->a);
	mixed_load(_metadata, p, page, 32);
	rb = ktau_must_snap_self(_metadata, self->fd, &self->b);
	ASSERT_EQ(0, ktau_control("all on"));
	mixed_load(_metadata, p + 32 * page, page, 32);
	rc = ktau_must_snap_self(_metadata, self->fd, &self->c);

	ASSERT_EQ(20, __atomic_load_n(&n_handled, __ATOMIC_RELAXED));
	EXPECT_EQ(ra->nentries, rb->nentries);
	ea = ktau_rec_entries(ra);
	for (i = 0; i < ra->nentries; i++) {
		eb = ktau_rec_find(rb, ea[i].id);
		ASSERT_NE(NULL, eb) TH_LOG("id %u vanished", ea[i].id);
		EXPECT_EQ(ea[i].count, eb->count) TH_LOG("id %u", ea[i].id);
		EXPECT_EQ(ea[i].incl_ns, eb->incl_ns) TH_LOG("id %u", ea[i].id);
		EXPECT_EQ(ea[i].excl_ns, eb->excl_ns) TH_LOG("id %u", ea[i].id);
	}
	EXPECT_EQ(ra->unmatched, rb->unmatched);
	EXPECT_EQ(ra->stack_overflows, rb->stack_overflows);
	EXPECT_EQ(ra->table_overflows, rb->table_overflows);

	EXPECT_EQ(100, ktau_val_delta(rb, rc, KTAU_ID_GETPPID).count);
	EXPECT_LE(32, ktau_val_delta(rb, rc, KTAU_ID_FAULT_USER).count);
	EXPECT_LE(10, ktau_val_delta(rb, rc, KTAU_ID_SIGNAL).count);
	EXPECT_LE(5, ktau_val_delta(rb, rc, KTAU_ID_SCHED_VOL).count);
	munmap(p, 64 * page);
}

/* "reset" zeroes the writer's own table before it returns to user space. */
TEST_F_TIMEOUT(control, reset_zeroes_own_profile, 10)
{
	const struct ktau_task_rec *r;

	ktau_getppid_loop(50);
	r = ktau_must_snap_self(_metadata, self->fd, &self->a);
	EXPECT_LE(50, ktau_rec_val(r, KTAU_ID_GETPPID).count);
	ASSERT_EQ(0, ktau_control("reset"));
	r = ktau_must_snap_self(_metadata, self->fd, &self->b);
	EXPECT_EQ(0, ktau_rec_val(r, KTAU_ID_GETPPID).count);
	ktau_getppid_loop(7);
	r = ktau_must_snap_self(_metadata, self->fd, &self->c);
	EXPECT_EQ(7, ktau_rec_val(r, KTAU_ID_GETPPID).count);
}

/* Bad commands: EINVAL, and the control file reads as before. */
/* The count of @id in this thread's own shared page (no other writer). */
static __u64 page_count(const struct ktau_shared *sh, __u32 id)
{
	unsigned int i;

	for (i = 0; i < KTAU_SHARED_ENTRIES; i++)
		if (sh->entries[i].id == id)
			return sh->entries[i].count;
	return 0;
}

/* The state letter of the (one-thread) process @pid. */
static char child_state(pid_t pid)
{
	return ktau_task_state(pid, pid);
}

/* Sum of the counts of a record: what a reset would take to zero. */
static __u64 rec_calls(const struct ktau_task_rec *r)
{
	const struct ktau_entry *e = ktau_rec_entries(r);
	__u64 n = 0;
	__u32 i;

	for (i = 0; i < r->nentries; i++)
		n += e[i].count;
	return n;
}

/*
 * A reset reaches other tasks, the aggregate and not kernel threads or
 * shared pages: a child blocked in read() with 100 getppid() keeps them
 * until it returns to user space, then has only what it did after (7
 * calls, and not the read() that was in progress); the aggregate drops
 * to what was done since; a kernel thread's totals do not go down; this
 * thread's shared page keeps counting across the reset.
 */
TEST_F_TIMEOUT(control, reset_reaches_others_not_kthreads_or_pages, 20)
{
	struct ktau_snap all = { 0 }, agg = { 0 };
	const struct ktau_task_rec *r, *k;
	struct ktau_shared *sh;
	__u64 kcalls = 0, agg0;
	int go[2], done[2], st;
	pid_t kt = 0, child;
	char c;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		ktau_getppid_loop(100);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		ktau_getppid_loop(7);
		if (write(done[1], "x", 1) != 1)
			_exit(4);
		if (read(go[0], &c, 1) != 1)
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(0, ktau_shared_register(self->fd, sh, sizeof(*sh), 0));
	ktau_getppid_loop(10);
	/* The child blocked in its first read(), with its 100 calls. */
	for (st = 0; st < 5000; st++) {
		r = ktau_snap(self->fd, &self->a, KTAU_SNAP_PIDS, &child, 1) ? NULL :
		    ktau_snap_find(&self->a, child);
		if (r && ktau_rec_val(r, KTAU_ID_GETPPID).count == 100)
			break;
		usleep(1000);
	}
	ASSERT_EQ(100, ktau_rec_val(r, KTAU_ID_GETPPID).count);
	for (st = 0; st < 5000 && child_state(child) != 'S'; st++)
		usleep(1000);
	ASSERT_EQ('S', child_state(child));
	/* kthreadd, a kernel thread that lives as long as the system. */
	kt = 2;
	ASSERT_EQ(0, ktau_snap(self->fd, &all, KTAU_SNAP_PIDS, &kt, 1));
	k = ktau_snap_find(&all, kt);
	ASSERT_NE(NULL, k);
	ASSERT_TRUE(k->flags & KTAU_REC_KTHREAD);
	kcalls = rec_calls(k);
	ASSERT_LT(0, kcalls) TH_LOG("kthreadd has nothing counted");
	agg0 = ktau_rec_val(ktau_must_snap_aggregate(_metadata, self->fd, &agg),
			    KTAU_ID_GETPPID).count;
	EXPECT_EQ(10, page_count(sh, KTAU_ID_GETPPID));
	ASSERT_EQ(0, ktau_control("reset"));
	ktau_getppid_loop(10);
	ASSERT_EQ(1, write(go[1], "x", 1));
	/* The child did its 7 calls and is blocked in its second read(). */
	ASSERT_EQ(1, read(done[0], &c, 1));
	for (st = 0; st < 5000 && child_state(child) != 'S'; st++)
		usleep(1000);
	ASSERT_EQ('S', child_state(child));
	ASSERT_EQ(0, ktau_snap(self->fd, &self->b, KTAU_SNAP_PIDS, &child, 1));
	r = ktau_snap_find(&self->b, child);
	ASSERT_NE(NULL, r);
	EXPECT_EQ(7, ktau_rec_val(r, KTAU_ID_GETPPID).count);
	EXPECT_EQ(0, ktau_rec_val(r, KTAU_ID_READ).count);
	r = ktau_must_snap_self(_metadata, self->fd, &self->c);
	EXPECT_EQ(10, ktau_rec_val(r, KTAU_ID_GETPPID).count);
	r = ktau_must_snap_aggregate(_metadata, self->fd, &agg);
	TH_LOG("aggregate getppid: %llu before the reset, %llu after", (unsigned long long)agg0,
	       ktau_rec_val(r, KTAU_ID_GETPPID).count);
	EXPECT_LE(110, agg0);
	EXPECT_LE(17, ktau_rec_val(r, KTAU_ID_GETPPID).count);
	EXPECT_GE(27, ktau_rec_val(r, KTAU_ID_GETPPID).count);
	ASSERT_EQ(0, ktau_snap(self->fd, &all, KTAU_SNAP_PIDS, &kt, 1));
	k = ktau_snap_find(&all, kt);
	ASSERT_NE(NULL, k);
	EXPECT_LE(kcalls, rec_calls(k)) TH_LOG("kernel thread %d (%s) was reset", kt, k->comm);
	/* Not cleared by the reset: 10 before, 10 after. */
	EXPECT_EQ(20, page_count(sh, KTAU_ID_GETPPID));
	ASSERT_EQ(1, write(go[1], "x", 1));
	ASSERT_EQ(child, waitpid(child, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ktau_shared_unregister(self->fd);
	ktau_snap_free(&all);
	ktau_snap_free(&agg);
	munmap(sh, sizeof(*sh));
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
}

TEST_F_TIMEOUT(control, bad_commands_einval, 10)
{
	static const char garbage1[] = { 0xff, 0x00, 0x80, 's', 0x01, '\n', 0x7f };
	static const char garbage2[] = "syscall\0off";
	static const char garbage3[] = { 0x1b, '[', '2', 'J', 0xc3, 0x28, 0x00, 0x00 };
	struct {
		const char *what;
		const void *buf;
		size_t len;
	} bad[] = {
		{ "bogus on", "bogus on", 8 },
		{ "syscall maybe", "syscall maybe", 13 },
		{ "empty", "", 0 },
		{ "newline only", "\n", 1 },
		{ "two newlines", "syscall on\n\n", 12 },
		{ "group only", "syscall", 7 },
		{ "state only", "off", 3 },
		{ "three words", "syscall off now", 15 },
		{ "all maybe", "all of", 6 },
		{ "reset with junk", "reset now", 9 },
		{ "binary 1", garbage1, sizeof(garbage1) },
		{ "binary 2", garbage2, sizeof(garbage2) },
		{ "binary 3", garbage3, sizeof(garbage3) },
		{ "65 bytes", NULL, 65 },
		{ "4096 bytes", NULL, 4096 },
	};
	char *before, *after, *big;
	size_t i;

	big = malloc(4096);
	ASSERT_NE(NULL, big);
	memset(big, 'a', 4096);
	/* A mixed state, so that a wrongly taken "on" or "off" shows. */
	ASSERT_EQ(0, ktau_control("signal off"));
	before = ktau_control_read();
	ASSERT_NE(NULL, before);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-EINVAL, ktau_control_write(bad[i].buf ? bad[i].buf : big, bad[i].len))
			TH_LOG("command '%s'", bad[i].what);
	}
	after = ktau_control_read();
	ASSERT_NE(NULL, after);
	EXPECT_STREQ(before, after);
	free(before);
	free(after);
	free(big);
}

TEST_HARNESS_MAIN
