// SPDX-License-Identifier: GPL-2.0
/*
 * The in-kernel KTAU API, through the example modules of samples/ktau:
 * ktau_self times a routine of its own and counts an event; ktau_handler
 * registers a handler and counts what it sees. Also: a dynamic probe on a
 * module's function goes when the module is unloaded.
 *
 * The modules are loaded from $KTAU_MODULES (default /ktau/modules):
 * ktau_mod_load() of ktau_util.h.
 */
#include <pthread.h>
#include <sys/utsname.h>
#include "ktau_util.h"

#define SELF_RUNS	100
#define WATCH_CALLS	1000

static void must_load(struct __test_metadata *_metadata, const char *name,
		      const char *params)
{
	int ret = ktau_mod_load(name, params);

	ASSERT_EQ(0, ret) TH_LOG("loading %s/%s.ko: %s", ktau_mod_dir(), name, strerror(-ret));
}

static int func_id(struct __test_metadata *_metadata, const char *name)
{
	struct ktau_funcs fs = { 0 };
	const struct ktau_func *f;
	int id = -1;

	EXPECT_EQ(0, ktau_funcs_load(&fs));
	/* The last entry of that name: an earlier load's ID is gone. */
	for (size_t i = 0; i < fs.n; i++)
		if (!strcmp(fs.v[i].name, name))
			id = fs.v[i].id;
	f = id > 0 ? ktau_func_by_id(&fs, id) : NULL;
	if (f)
		EXPECT_STREQ("dynamic", f->group);
	ktau_funcs_free(&fs);
	return id;
}

static int self_run(unsigned int n)
{
	int fd = open("/proc/ktau_self", O_WRONLY);
	char buf[16];
	int len, ret = 0;

	if (fd < 0)
		return -errno;
	len = snprintf(buf, sizeof(buf), "%u\n", n);
	if (write(fd, buf, len) != len)
		ret = -errno;
	close(fd);
	return ret;
}

/* ktau_self: its routine in the writer's profile, nested in write(). */
TEST(self_module_times_its_routine)
{
	const struct ktau_task_rec *ra, *rb;
	struct ktau_snap a = { 0 }, b = { 0 };
	struct ktau_val work, ev, wr;
	int pfd, work_id, ev_id;

	ktau_must_have_ktau(_metadata);
	must_load(_metadata, "ktau_self", "");
	work_id = func_id(_metadata, "ktau_self_work");
	ev_id = func_id(_metadata, "ktau_self_event");
	ASSERT_LT(0, work_id);
	ASSERT_LT(0, ev_id);
	pfd = ktau_must_open_profiles(_metadata);
	ra = ktau_must_snap_self(_metadata, pfd, &a);
	ASSERT_EQ(0, self_run(SELF_RUNS));
	rb = ktau_must_snap_self(_metadata, pfd, &b);
	work = ktau_val_delta(ra, rb, work_id);
	ev = ktau_val_delta(ra, rb, ev_id);
	wr = ktau_val_delta(ra, rb, KTAU_ID_SYSCALL_BASE + SYS_write);
	EXPECT_EQ(SELF_RUNS, work.count);
	/* udelay(5) each. */
	EXPECT_LE(SELF_RUNS * 5000ULL, work.incl);
	EXPECT_EQ(SELF_RUNS, ev.count);
	EXPECT_EQ(0, ev.incl);
	EXPECT_LE(work.incl, wr.incl - wr.excl);
	close(pfd);
	ktau_snap_free(&a);
	ktau_snap_free(&b);
	EXPECT_EQ(0, ktau_mod_unload("ktau_self"));
}

/* tid, done and release are shared with the thread: __atomic. */
struct recurse_arg {
	pid_t tid;
	int ret;
	int done;
	int release;
};

static void *recurse_thread(void *p)
{
	struct recurse_arg *a = p;
	int fd = open("/proc/ktau_self", O_WRONLY);

	__atomic_store_n(&a->tid, syscall(SYS_gettid), __ATOMIC_RELEASE);
	a->ret = fd < 0 || write(fd, "r300", 4) != 4 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	/* Alive until the test read its final profile. */
	while (!__atomic_load_n(&a->release, __ATOMIC_ACQUIRE))
		usleep(1000);
	return NULL;
}

/*
 * Recursion: ktau_self_recurse calls itself once, each level sleeping
 * 300 ms. Every snapshot taken meanwhile, between the two returns too,
 * has excl <= incl for every routine; at the end, two calls and the
 * outer call's inclusive time (600 ms), not the sum of both (900 ms).
 */
TEST(recursion_charges_incl_once_and_excl_never_above)
{
	struct recurse_arg a = { 0 };
	struct ktau_snap s = { 0 };
	struct ktau_val v = { 0 };
	unsigned int between = 0, snaps = 0;
	pthread_t th;
	__u32 i;
	int pfd, id;

	ktau_must_have_ktau(_metadata);
	must_load(_metadata, "ktau_self", "");
	id = func_id(_metadata, "ktau_self_recurse");
	ASSERT_LT(0, id);
	pfd = ktau_must_open_profiles(_metadata);
	ASSERT_EQ(0, pthread_create(&th, NULL, recurse_thread, &a));
	while (!__atomic_load_n(&a.tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	while (!__atomic_load_n(&a.done, __ATOMIC_ACQUIRE)) {
		const struct ktau_task_rec *r;
		const struct ktau_entry *e;

		ASSERT_EQ(0, ktau_snap(pfd, &s, KTAU_SNAP_PIDS, &a.tid, 1));
		r = ktau_snap_find(&s, a.tid);
		if (!r)
			break;
		snaps++;
		e = ktau_rec_entries(r);
		for (i = 0; i < r->nentries; i++) {
			EXPECT_LE(e[i].excl_ns, e[i].incl_ns)
				TH_LOG("id %u: excl %llu > incl %llu", e[i].id,
				       (unsigned long long)e[i].excl_ns,
				       (unsigned long long)e[i].incl_ns);
		}
		v = ktau_rec_val(r, id);
		if (v.count == 1)
			between++;
		usleep(20000);
	}
	ASSERT_EQ(0, ktau_snap(pfd, &s, KTAU_SNAP_PIDS, &a.tid, 1));
	v = ktau_rec_val(ktau_snap_find(&s, a.tid), id);
	__atomic_store_n(&a.release, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, a.ret);
	EXPECT_LT(10, snaps);
	EXPECT_LT(2, between) TH_LOG("no snapshot between the inner and outer return");
	EXPECT_EQ(2, v.count);
	/* 2 x 300 ms of sleep; 3 x 300 would be the inner call counted twice. */
	EXPECT_LE(600000000ULL, v.incl);
	EXPECT_GT(850000000ULL, v.incl) TH_LOG("incl %llu: counted twice?", v.incl);
	close(pfd);
	ktau_snap_free(&s);
	EXPECT_EQ(0, ktau_mod_unload("ktau_self"));
}

/* The depth of a task's nesting stack, as /proc/ktau/control gives it. */
static unsigned int ctl_depth(struct __test_metadata *_metadata)
{
	char *text = ktau_slurp(KTAU_CONTROL_PATH, NULL), *p;
	unsigned int depth = 0;

	EXPECT_NE(NULL, text);
	if (!text)
		return 0;
	p = strstr(text, "\ndepth ");
	EXPECT_NE(NULL, p) TH_LOG("no depth line in %s", KTAU_CONTROL_PATH);
	if (p)
		EXPECT_EQ(1, sscanf(p, "\ndepth %u", &depth));
	free(text);
	return depth;
}

/*
 * Nesting deeper than the stack: write() and depth - 1 levels of
 * ktau_self_recurse fill the stack; each level beyond is one stack
 * overflow and is not timed, the levels within are timed as usual. An
 * interrupt that comes while the recursion is deep is an overflow too,
 * so the exact count must hold on one of a few tries (the recursion
 * takes microseconds); the timed calls must be exact on every try.
 */
#define DEEP_LEVELS	24
#define DEEP_TRIES	5

TEST(nesting_beyond_the_stack_counts_overflows)
{
	const struct ktau_task_rec *ra, *rb;
	struct ktau_snap a = { 0 }, b = { 0 };
	unsigned long long ov = 0, want;
	unsigned int depth, try;
	struct ktau_val v;
	int pfd, fd, id;
	char cmd[16];
	int len;

	ktau_must_have_ktau(_metadata);
	depth = ctl_depth(_metadata);
	ASSERT_LT(1, depth);
	ASSERT_GT(DEEP_LEVELS, depth) TH_LOG("stack deeper than the test's recursion");
	want = DEEP_LEVELS - (depth - 1);
	must_load(_metadata, "ktau_self", "");
	id = func_id(_metadata, "ktau_self_recurse");
	ASSERT_LT(0, id);
	pfd = ktau_must_open_profiles(_metadata);
	fd = open("/proc/ktau_self", O_WRONLY);
	ASSERT_LE(0, fd);
	len = snprintf(cmd, sizeof(cmd), "d%u", DEEP_LEVELS);
	for (try = 0; try < DEEP_TRIES; try++) {
		ra = ktau_must_snap_self(_metadata, pfd, &a);
		ASSERT_EQ(len, write(fd, cmd, len));
		rb = ktau_must_snap_self(_metadata, pfd, &b);
		ov = rb->stack_overflows - ra->stack_overflows;
		v = ktau_val_delta(ra, rb, id);
		ASSERT_EQ(depth - 1, v.count) TH_LOG("timed levels");
		ASSERT_LE(want, ov);
		if (ov == want)
			break;
		TH_LOG("try %u: %llu stack overflows, %llu from the recursion", try, ov, want);
	}
	EXPECT_EQ(want, ov);
	/* A level beyond the limit is refused. */
	EXPECT_EQ(-1, write(fd, "d65", 3));
	EXPECT_EQ(ERANGE, errno);
	close(fd);
	close(pfd);
	ktau_snap_free(&a);
	ktau_snap_free(&b);
	EXPECT_EQ(0, ktau_mod_unload("ktau_self"));
}

/* ktau_handler: exactly the starts and stops of one routine of ours. */
TEST(handler_sees_every_start_and_stop)
{
	unsigned long long st, sp, incl, starts[KTAU_NR_GROUPS], stops[KTAU_NR_GROUPS];
	unsigned long long events;
	char params[128], *text, *line, *save;
	unsigned int g, watch;
	int n = 0, ret;

	ktau_must_have_ktau(_metadata);
	snprintf(params, sizeof(params), "groups=0x1 tgid=%d watch_id=%u",
		 getpid(), KTAU_ID_GETPPID);
	must_load(_metadata, "ktau_handler", params);
	ktau_getppid_loop(WATCH_CALLS);
	text = ktau_slurp("/proc/ktau_handler", NULL);
	ASSERT_NE(NULL, text);
	ASSERT_EQ(0, ktau_mod_unload("ktau_handler"));
	st = 0;
	sp = 0;
	incl = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		if (sscanf(line, "watch %u %llu %llu %llu", &watch, &st, &sp, &incl) == 4)
			continue;
		ret = sscanf(line, "%u %llu %llu %llu", &g, &starts[n], &stops[n], &events);
		ASSERT_EQ(4, ret) TH_LOG("line '%s'", line);
		ASSERT_GT(KTAU_NR_GROUPS, n);
		ASSERT_EQ(n, g);
		n++;
	}
	free(text);
	ASSERT_EQ(KTAU_NR_GROUPS, n);
	EXPECT_EQ(WATCH_CALLS, st);
	EXPECT_EQ(WATCH_CALLS, sp);
	EXPECT_LT(0, incl);
	/* System calls only (groups=0x1), and each seen twice. */
	EXPECT_LE(WATCH_CALLS, starts[0]);
	/* Loading ended a call begun before; reading began one not ended. */
	EXPECT_GE(2, starts[0] > stops[0] ? starts[0] - stops[0] : stops[0] - starts[0]);
	for (g = 1; g < KTAU_NR_GROUPS; g++) {
		EXPECT_EQ(0, starts[g]);
		EXPECT_EQ(0, stops[g]);
	}
}

/* Run WATCH_CALLS getppid() under ktau_handler with @second; its watch lines. */
static void run_two_handlers(struct __test_metadata *_metadata, unsigned long second,
			     unsigned long long w1[3], unsigned long long w2[3])
{
	char params[160], *text, *p;
	unsigned int watch;
	int n;

	snprintf(params, sizeof(params), "groups=0x1 second=0x%lx tgid=%d watch_id=%u",
		 second, getpid(), KTAU_ID_GETPPID);
	must_load(_metadata, "ktau_handler", params);
	ktau_getppid_loop(WATCH_CALLS);
	text = ktau_slurp("/proc/ktau_handler", NULL);
	EXPECT_EQ(0, ktau_mod_unload("ktau_handler"));
	ASSERT_NE(NULL, text);
	p = strstr(text, "\nwatch ");
	ASSERT_NE(NULL, p);
	n = sscanf(p, "\nwatch %u %llu %llu %llu", &watch, &w1[0], &w1[1], &w1[2]);
	ASSERT_EQ(4, n);
	p = strstr(text, "\nwatch2 ");
	ASSERT_NE(NULL, p) TH_LOG("no watch2 line:\n%s", text);
	n = sscanf(p, "\nwatch2 %u %llu %llu %llu", &watch, &w2[0], &w2[1], &w2[2]);
	ASSERT_EQ(4, n);
	free(text);
}

/*
 * Two handlers: the hooks go through the dispatcher, which gives each
 * handler exactly the events of its groups: both see every call of a
 * system call when both have group syscall, with the same times, and
 * a second handler of group sched only sees none of them.
 */
TEST(two_handlers_each_see_their_groups)
{
	unsigned long long w1[3], w2[3];

	ktau_must_have_ktau(_metadata);
	run_two_handlers(_metadata, 1UL << KTAU_GROUP_SYSCALL, w1, w2);
	EXPECT_EQ(WATCH_CALLS, w1[0]);
	EXPECT_EQ(WATCH_CALLS, w1[1]);
	EXPECT_EQ(WATCH_CALLS, w2[0]);
	EXPECT_EQ(WATCH_CALLS, w2[1]);
	EXPECT_LT(0, w1[2]);
	EXPECT_EQ(w1[2], w2[2]) TH_LOG("the two handlers saw different times");

	run_two_handlers(_metadata, 1UL << KTAU_GROUP_SCHED, w1, w2);
	EXPECT_EQ(WATCH_CALLS, w1[0]);
	EXPECT_EQ(WATCH_CALLS, w1[1]);
	EXPECT_EQ(0, w2[0]);
	EXPECT_EQ(0, w2[1]);
}

/* Group kvm has no handler events: a handler that asks for it is refused. */
TEST(handler_of_group_kvm_refused)
{
	char params[64];

	ktau_must_have_ktau(_metadata);
	snprintf(params, sizeof(params), "groups=0x%x", 1U << KTAU_GROUP_KVM);
	EXPECT_EQ(-EINVAL, ktau_mod_load("ktau_handler", params));
	snprintf(params, sizeof(params), "groups=0x1 second=0x%x", 1U << KTAU_GROUP_KVM);
	EXPECT_EQ(-EINVAL, ktau_mod_load("ktau_handler", params));
	ktau_mod_unload("ktau_handler");
}

/* The thread of comm @comm, by a scan of /proc; 0 if none. */
static pid_t find_comm(const char *comm)
{
	char path[64], *c;
	pid_t found = 0;
	int pid;

	for (pid = 2; pid < 32768 && !found; pid++) {
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		c = ktau_slurp(path, NULL);
		if (c && !strncmp(c, comm, strlen(comm)) && c[strlen(comm)] == '\n')
			found = pid;
		free(c);
	}
	return found;
}

/*
 * ktau_self loaded with its napping kernel thread (20 ms naps), the
 * probes file in *@fd and the profiles file in *@pfd: the thread, or 0.
 */
static pid_t nap_setup(struct __test_metadata *_metadata, int *fd, int *pfd)
{
	pid_t nap;

	ktau_must_have_ktau(_metadata);
	must_load(_metadata, "ktau_self", "nap_ms=20");
	nap = find_comm("ktau_self_nap");
	if (nap <= 0)
		return 0;
	*fd = open(KTAU_PROBES_PATH, O_RDONLY);
	if (*fd < 0)
		return 0;
	*pfd = ktau_must_open_profiles(_metadata);
	return nap;
}

/* The probe removed, the files closed, the snapshots freed, unloaded. */
static void nap_teardown(struct __test_metadata *_metadata, int fd, int pfd,
			 struct ktau_snap *a, struct ktau_snap *b)
{
	EXPECT_EQ(0, ktau_probe_ioctl(fd, KTAU_IOC_PROBE_REMOVE, "ktau_self_nap", 0));
	close(fd);
	close(pfd);
	ktau_snap_free(a);
	ktau_snap_free(b);
	EXPECT_EQ(0, ktau_mod_unload("ktau_self"));
}

/*
 * 400 ms (about 20 naps) on, the snapshot @b of @nap, its record, and in
 * *@v the probe @id's calls since @ra; logged with the unmatched frames.
 */
static const struct ktau_task_rec *nap_after(struct __test_metadata *_metadata, int pfd,
					     pid_t nap, int id,
					     const struct ktau_task_rec *ra,
					     struct ktau_snap *b, struct ktau_val *v)
{
	const struct ktau_task_rec *rb;

	ktau_sleep_ns(400 * KTAU_NSEC_PER_MSEC);
	if (ktau_snap(pfd, b, KTAU_SNAP_PIDS, &nap, 1))
		return NULL;
	rb = ktau_snap_find(b, nap);
	if (!rb)
		return NULL;
	*v = ktau_val_delta(ra, rb, id);
	TH_LOG("unmatched %llu, probe %llu calls %llu ns",
	       (unsigned long long)(rb->unmatched - ra->unmatched),
	       (unsigned long long)v->count, (unsigned long long)v->incl);
	return rb;
}

#define NAP_CYCLES	20

/*
 * A probe removed while a kernel thread is inside the probed function,
 * again and again: the frames left open are retired when the thread
 * opens its next one (ABI 1.3: the point's registration generation), so
 * the thread's stack never fills, each is counted in unmatched, and the
 * probe, added once more, times the function as before.
 */
TEST(probe_removed_while_kthread_inside)
{
	const struct ktau_task_rec *ra, *rb;
	struct ktau_snap a = { 0 }, b = { 0 };
	int fd, pfd, i, id = 0, inside = 0;
	struct ktau_val v;
	pid_t nap;

	nap = nap_setup(_metadata, &fd, &pfd);
	ASSERT_LT(0, nap);
	ASSERT_EQ(0, ktau_snap(pfd, &a, KTAU_SNAP_PIDS, &nap, 1));
	ra = ktau_snap_find(&a, nap);
	ASSERT_NE(NULL, ra);
	for (i = 0; i < NAP_CYCLES; i++) {
		id = ktau_probe_ioctl(fd, KTAU_IOC_PROBE_ADD, "ktau_self_nap", 0);
		ASSERT_LT(0, id);
		/* The thread naps inside the function nearly all the time. */
		ktau_sleep_ns(50 * KTAU_NSEC_PER_MSEC);
		ASSERT_EQ(0, ktau_probe_ioctl(fd, KTAU_IOC_PROBE_REMOVE, "ktau_self_nap", 0));
	}
	ASSERT_EQ(id, ktau_probe_ioctl(fd, KTAU_IOC_PROBE_ADD, "ktau_self_nap", 0));
	ktau_sleep_ns(400 * KTAU_NSEC_PER_MSEC);
	ASSERT_EQ(0, ktau_snap(pfd, &b, KTAU_SNAP_PIDS, &nap, 1));
	rb = ktau_snap_find(&b, nap);
	ASSERT_NE(NULL, rb);
	v = ktau_val_delta(ra, rb, id);
	inside = (int)(rb->unmatched - ra->unmatched);
	TH_LOG("%d removals while inside, stack overflows %llu, probe %llu calls %llu ns",
	       inside, (unsigned long long)(rb->stack_overflows - ra->stack_overflows),
	       (unsigned long long)v.count, (unsigned long long)v.incl);
	EXPECT_EQ(0, rb->stack_overflows - ra->stack_overflows);
	/* Most removals find the thread asleep inside; each such frame goes. */
	EXPECT_LE(NAP_CYCLES / 2, inside);
	EXPECT_GE(NAP_CYCLES, inside);
	/* 40 calls in the cycles and about 20 after; 20 ms each. */
	EXPECT_LE(30, v.count);
	EXPECT_LE(v.count * 20 * KTAU_NSEC_PER_MSEC * 9 / 10, v.incl);
	nap_teardown(_metadata, fd, pfd, &a, &b);
}

/* At most 2^10 removes and adds (about 2 minutes under TCG). */
#define GEN_MAX_BITS	10

/*
 * A frame opened in one registration of a probe and still open after
 * 2^N more, N the bits of the registration generation a frame carries
 * (generation_bits, CONFIG_KTAU_GEN_BITS: 16, and 8 in the debug
 * configuration, where this runs): the generation must not come round
 * to the one the frame was opened with. The ID whose generation wraps is
 * retired (ABI 1.8): that add gets a new ID of the same name, the old
 * frame is dropped and counted in unmatched when the thread opens its
 * next one, and the thread's naps are timed again.
 */
FIXTURE(gen) {};
FIXTURE_SETUP(gen) {}
FIXTURE_TEARDOWN(gen) {}

TEST_F_TIMEOUT(gen, probe_readded_until_generation_wraps, 600)
{
	const struct ktau_task_rec *ra, *rb;
	struct ktau_snap a = { 0 }, b = { 0 };
	int fd, pfd, i, id0, id, changes = 0, named = 0, cycles;
	struct ktau_funcs fs = { 0 };
	long bits;
	struct timespec t0, t1;
	struct ktau_val v;
	pid_t nap;
	size_t k;

	ktau_must_have_ktau(_metadata);
	bits = ktau_control_count("generation_bits");
	ASSERT_LE(2, bits) TH_LOG("no generation_bits line in /proc/ktau/control");
	ASSERT_GE(16, bits);
	/* The debug kernel must run it: its configuration sets 8. */
	ASSERT_TRUE(!ktau_debug_kernel() || bits <= GEN_MAX_BITS)
		TH_LOG("the debug kernel's generation has %ld bits", bits);
	if (bits > GEN_MAX_BITS)
		SKIP(return, "%ld-bit generation: the debug kernel (8 bits) runs this", bits);
	cycles = 1 << bits;
	nap = nap_setup(_metadata, &fd, &pfd);
	ASSERT_LT(0, nap);
	id0 = ktau_probe_ioctl(fd, KTAU_IOC_PROBE_ADD, "ktau_self_nap", 0);
	ASSERT_LT(0, id0);
	/* One long nap, entered with the probe on: a frame that stays open. */
	ASSERT_EQ(0, ktau_write_file("/proc/ktau_self", "n600000"));
	ktau_sleep_ns(100 * KTAU_NSEC_PER_MSEC);
	ASSERT_EQ(0, ktau_snap(pfd, &a, KTAU_SNAP_PIDS, &nap, 1));
	ra = ktau_snap_find(&a, nap);
	ASSERT_NE(NULL, ra);
	id = id0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < cycles; i++) {
		int prev = id;

		ASSERT_EQ(0, ktau_probe_ioctl(fd, KTAU_IOC_PROBE_REMOVE, "ktau_self_nap", 0));
		id = ktau_probe_ioctl(fd, KTAU_IOC_PROBE_ADD, "ktau_self_nap", 0);
		ASSERT_LT(0, id);
		changes += id != prev;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	TH_LOG("%d removes and adds in %.1f s; IDs %d then %d", cycles,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, id0, id);
	/* Whatever the generation was at the start, it wrapped once. */
	EXPECT_EQ(1, changes);
	EXPECT_NE(id0, id);
	ASSERT_EQ(0, ktau_funcs_load(&fs));
	for (k = 0; k < fs.n; k++)
		named += (fs.v[k].id == (__u32)id0 || fs.v[k].id == (__u32)id) &&
			 !strcmp(fs.v[k].name, "ktau_self_nap") &&
			 !strcmp(fs.v[k].group, "dynamic");
	EXPECT_EQ(2, named);
	ktau_funcs_free(&fs);
	/* The long nap ends; the next ones are timed by the current probe. */
	ASSERT_EQ(0, ktau_write_file("/proc/ktau_self", "n20"));
	rb = nap_after(_metadata, pfd, nap, id, ra, &b, &v);
	ASSERT_NE(NULL, rb);
	EXPECT_EQ(1, rb->unmatched - ra->unmatched);
	EXPECT_EQ(0, rb->stack_overflows - ra->stack_overflows);
	EXPECT_LE(10, v.count);
	EXPECT_LE(v.count * 20 * KTAU_NSEC_PER_MSEC * 9 / 10, v.incl);
	nap_teardown(_metadata, fd, pfd, &a, &b);
}

/*
 * A module may unregister only the points it registered (ABI 1.8): one
 * that gives up a probe's ID is refused, and the probe, whose frames
 * would otherwise all be dropped as stale, goes on timing its function.
 */
TEST(foreign_point_not_unregistered)
{
	const struct ktau_task_rec *ra, *rb;
	struct ktau_snap a = { 0 }, b = { 0 };
	char cmd[32];
	int fd, pfd, id;
	struct ktau_val v;
	pid_t nap;

	nap = nap_setup(_metadata, &fd, &pfd);
	ASSERT_LT(0, nap);
	id = ktau_probe_ioctl(fd, KTAU_IOC_PROBE_ADD, "ktau_self_nap", 0);
	ASSERT_LT(0, id);
	ktau_sleep_ns(100 * KTAU_NSEC_PER_MSEC);
	ASSERT_EQ(0, ktau_snap(pfd, &a, KTAU_SNAP_PIDS, &nap, 1));
	ra = ktau_snap_find(&a, nap);
	ASSERT_NE(NULL, ra);
	snprintf(cmd, sizeof(cmd), "u%d", id);
	ASSERT_EQ(0, ktau_write_file("/proc/ktau_self", cmd));
	rb = nap_after(_metadata, pfd, nap, id, ra, &b, &v);
	ASSERT_NE(NULL, rb);
	EXPECT_EQ(0, rb->unmatched - ra->unmatched);
	EXPECT_LE(10, v.count);
	EXPECT_LE(v.count * 20 * KTAU_NSEC_PER_MSEC * 9 / 10, v.incl);
	nap_teardown(_metadata, fd, pfd, &a, &b);
}

static void point_zero(void)
{
	ktau_write_file("/proc/ktau_self", "z200");
}

/* dup() 10 times: system call 32, whose ID (64) has table slot 0. */
static void dup10(void)
{
	int i;

	for (i = 0; i < 10; i++)
		close(dup(0));
}

/*
 * The busy child with only group dynamic on: it records nothing but its
 * point 0 (no system call claims a slot), so its table looks unused.
 */
static void dynamic_only(int before)
{
	ktau_write_file(KTAU_CONTROL_PATH, "all off");
	ktau_write_file(KTAU_CONTROL_PATH, before ? "dynamic on" : "all on");
}

/*
 * A module that times "point 0" (an ID it never registered) is ignored:
 * before, the time went to table slot 0, which then looked free though
 * its counters were not, and the next ID claiming that slot, in this
 * task or in the next task given its table, started with them.
 */
TEST(point_id_zero_ignored)
{
	int pfd;

	ktau_must_have_ktau(_metadata);
	ASSERT_EQ(64, KTAU_ID_SYSCALL_BASE + SYS_dup);
	must_load(_metadata, "ktau_self", "");
	pfd = ktau_must_open_profiles(_metadata);
	EXPECT_EQ(0, ktau_recycle_rounds(_metadata, pfd, 20, point_zero, dup10,
					 KTAU_ID_SYSCALL_BASE + SYS_dup, 10, dynamic_only));
	ktau_write_file(KTAU_CONTROL_PATH, "all on");
	close(pfd);
	EXPECT_EQ(0, ktau_mod_unload("ktau_self"));
}

/* The kernel log from now on: /dev/kmsg at its end, or -1. */
static int kmsg_from_now(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd >= 0 && lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Whether a record logged since kmsg_from_now() contains @text. */
static bool kmsg_has(int fd, const char *text)
{
	char rec[1024];
	ssize_t n;

	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* records lost meanwhile: go on */
		if (n <= 0)
			return false;
		rec[n] = '\0';
		if (strstr(rec, text))
			return true;
	}
}

/*
 * A module unloaded with points still registered: KTAU unregisters them
 * as it goes, and says so, so that no frame of theirs lives on and no
 * later module at the same address owns them.
 */
TEST(module_points_go_with_module)
{
	int kfd;

	ktau_must_have_ktau(_metadata);
	must_load(_metadata, "ktau_self", "keep_points=1");
	kfd = kmsg_from_now();
	ASSERT_LE(0, kfd) TH_LOG("/dev/kmsg: %s", strerror(errno));
	ASSERT_EQ(0, ktau_mod_unload("ktau_self"));
	EXPECT_TRUE(kmsg_has(kfd, "ktau: ktau_self left 3 points registered; unregistered"));
	close(kfd);
}

/* The handler sees the module's events too; nothing after unloading. */
TEST(handler_sees_module_events)
{
	unsigned long long s, p, e;
	char params[64], *text, *line, *save;
	unsigned int g;
	int found = 0;

	ktau_must_have_ktau(_metadata);
	must_load(_metadata, "ktau_self", "");
	snprintf(params, sizeof(params), "groups=0x40 tgid=%d", getpid());
	must_load(_metadata, "ktau_handler", params);
	ASSERT_EQ(0, self_run(SELF_RUNS));
	text = ktau_slurp("/proc/ktau_handler", NULL);
	ASSERT_NE(NULL, text);
	EXPECT_EQ(0, ktau_mod_unload("ktau_handler"));
	EXPECT_EQ(0, ktau_mod_unload("ktau_self"));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%u %llu %llu %llu", &g, &s, &p, &e) != 4 ||
		    g != KTAU_GROUP_DYNAMIC)
			continue;
		found = 1;
		EXPECT_EQ(SELF_RUNS, s);
		EXPECT_EQ(SELF_RUNS, p);
		EXPECT_EQ(SELF_RUNS, e);
	}
	free(text);
	EXPECT_TRUE(found);
}

/* A probe on a module's function is removed when the module goes. */
TEST(probe_goes_with_module)
{
	const struct ktau_task_rec *ra, *rb;
	struct ktau_snap a = { 0 }, b = { 0 };
	char *list;
	int fd, pfd, id;

	ktau_must_have_ktau(_metadata);
	must_load(_metadata, "ktau_self", "");
	fd = open("/proc/ktau/probes", O_RDONLY);
	ASSERT_LE(0, fd);
	id = ktau_probe_ioctl(fd, KTAU_IOC_PROBE_ADD, "ktau_self:ktau_self_work", 0);
	ASSERT_LT(0, id) TH_LOG("add: %s", strerror(-id));
	pfd = ktau_must_open_profiles(_metadata);
	ra = ktau_must_snap_self(_metadata, pfd, &a);
	ASSERT_EQ(0, self_run(10));
	rb = ktau_must_snap_self(_metadata, pfd, &b);
	EXPECT_EQ(10, ktau_val_delta(ra, rb, id).count);
	ASSERT_EQ(0, ktau_mod_unload("ktau_self"));
	list = ktau_slurp("/proc/ktau/probes", NULL);
	ASSERT_NE(NULL, list);
	EXPECT_EQ(NULL, strstr(list, "ktau_self_work")) TH_LOG("%s", list);
	free(list);
	EXPECT_EQ(-ENOENT, ktau_probe_ioctl(fd, KTAU_IOC_PROBE_REMOVE,
					    "ktau_self:ktau_self_work", 0));
	close(fd);
	close(pfd);
	ktau_snap_free(&a);
	ktau_snap_free(&b);
}

/*
 * Frame matching across contexts: the ktau_test module (kernel/ktau)
 * makes, on loading, the entries without exits and the exits without
 * entries a group switch leaves in a task, a softirq handler and a hard
 * interrupt, and checks its loader's profile; it fails to load when a
 * check fails. With every group on, and with the interrupts' own frames
 * missing (irq off; irq and softirq off): several cases pass with those
 * frames in place whatever the matching does.
 */
FIXTURE(frames) {
	bool irq_off;
	bool softirq_off;
};

FIXTURE_VARIANT(frames) {
	bool irq_off;
	bool softirq_off;
};

FIXTURE_VARIANT_ADD(frames, all_on) {};

FIXTURE_VARIANT_ADD(frames, irq_off) {
	.irq_off = true,
};

FIXTURE_VARIANT_ADD(frames, irq_softirq_off) {
	.irq_off = true,
	.softirq_off = true,
};

FIXTURE_SETUP(frames)
{
	ktau_must_have_ktau(_metadata);
	if (!variant->irq_off)
		return;
	if (geteuid())
		SKIP(return, "switching a group needs root");
	if (ktau_no_switch_pass())
		SKIP(return, "no group switches in this pass (ktauhold)");
	ASSERT_EQ(0, ktau_control("irq off"));
	self->irq_off = true;
	if (variant->softirq_off) {
		ASSERT_EQ(0, ktau_control("softirq off"));
		self->softirq_off = true;
	}
}

FIXTURE_TEARDOWN(frames)
{
	/* On again, as ktau_must_have_ktau() left them. */
	if (self->irq_off)
		EXPECT_EQ(0, ktau_control("irq on"));
	if (self->softirq_off)
		EXPECT_EQ(0, ktau_control("softirq on"));
}

TEST_F(frames, exits_match_entries_of_their_context)
{
	int ret;

	EXPECT_EQ(variant->irq_off ? 0 : 1, ktau_group_state("irq"));
	EXPECT_EQ(variant->softirq_off ? 0 : 1, ktau_group_state("softirq"));
	ret = ktau_mod_load("ktau_test", "");
	/* The kernel log's ktau_test lines say which case failed. */
	ASSERT_EQ(0, ret) TH_LOG("loading %s/ktau_test.ko: %s", ktau_mod_dir(), strerror(-ret));
	EXPECT_EQ(0, ktau_mod_unload("ktau_test"));
}

TEST_HARNESS_MAIN
