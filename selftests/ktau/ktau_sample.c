// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU sampling with the software cpu-clock event: rates, attribution to
 * user mode and to the system call in progress, signals per watermark,
 * lost and overwritten samples, refused arguments, permissions, release
 * at exit and exec, and kernel addresses only for readers who may see
 * them; user stacks (a toy interpreter's frame chain) copied into every
 * sample by the kernel.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <linux/userfaultfd.h>
#include "ktau_util.h"

#define PERIOD_NS	(4 * KTAU_NSEC_PER_MSEC)	/* one tick at HZ=250 */
#define SPIN_NS		(400 * KTAU_NSEC_PER_MSEC)
#define EXEC_ENV	"KTAU_SAMPLE_EXEC"
#define PARANOID	"/proc/sys/kernel/perf_event_paranoid"
#define KPTR		"/proc/sys/kernel/kptr_restrict"

static __u64 thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (__u64)ts.tv_sec * KTAU_NSEC_PER_SEC + ts.tv_nsec;
}

/*
 * CPU time the guest charged to this thread while its vCPU did not run.
 * Under TCG on a loaded host, the host may not run a vCPU for
 * milliseconds; the guest's clocks go on, so the spinning thread is
 * charged that time, and cpu-clock's hrtimer, firing late, skips the
 * periods it missed (one late sample stands for several): a spin of a
 * fixed CPU time gave 20 samples for 113 periods beside three busy
 * loops on the host. The spins below count a step (a short loop, or one
 * read()) that took more than three times the shortest one and more
 * than a quarter period as stalled beyond the shortest one, and spin on
 * until the time asked for has run unstalled (at most 8 times as long).
 * A step reads the thread's CPU clock once (a system call: a shorter
 * loop makes the debug kernel's spin mostly kernel time).
 */
struct spin {
	__u64 t, step_min, stalled;
};

static void spin_begin(struct spin *sp)
{
	sp->t = thread_cpu_ns();
	sp->step_min = ~0ULL;
	sp->stalled = 0;
}

/* Account the step just done; true while less than @ns ran unstalled. */
static bool spin_more(struct spin *sp, __u64 t0, __u64 ns)
{
	__u64 now = thread_cpu_ns(), step = now - sp->t;

	sp->t = now;
	if (step < sp->step_min)
		sp->step_min = step;
	else if (step > 3 * sp->step_min && step > PERIOD_NS / 4)
		sp->stalled += step - sp->step_min;
	return now - t0 < ns + sp->stalled && now - t0 < 8 * ns;
}

/* Spin in user mode for @ns of this thread's CPU time; the time stalled. */
static __u64 spin_user(__u64 ns)
{
	__u64 t0 = thread_cpu_ns(), x = 0;
	struct spin sp;
	unsigned int i;

	spin_begin(&sp);
	do {
		for (i = 0; i < 100000; i++) {
			x += i;
			__asm__ __volatile__("" : "+r" (x));
		}
	} while (spin_more(&sp, t0, ns));
	return sp.stalled;
}

/* Loop on read() of /dev/zero, time spent clearing memory in the kernel. */
static void spin_read(int zfd, __u64 ns)
{
	static char buf[1 << 16];
	__u64 t0 = thread_cpu_ns();
	struct spin sp;

	spin_begin(&sp);
	do {
		if (read(zfd, buf, sizeof(buf)) < 0)
			break;
	} while (spin_more(&sp, t0, ns));
}

static int write_sysctl(const char *path, int v)
{
	char s[16];
	int fd, n, ret = 0;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = snprintf(s, sizeof(s), "%d\n", v);
	if (write(fd, s, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

#define NO_SYSCTL	(-1000)

static int read_sysctl(const char *path)
{
	char *s = ktau_slurp(path, NULL);
	int v;

	/* -1 is a paranoid level: a missing file is NO_SYSCTL. */
	if (!s)
		return NO_SYSCTL;
	v = atoi(s);
	free(s);
	return v;
}

static int nsignals;

static void on_signal(int sig)
{
	__atomic_fetch_add(&nsignals, 1, __ATOMIC_RELAXED);
}

static int signals_received(void)
{
	return __atomic_load_n(&nsignals, __ATOMIC_RELAXED);
}

/* Exec'd by the exec test: sampling set up before exec is gone. */
__attribute__((constructor)) static void exec_child(void)
{
	struct ktau_sample_read r;
	int fd;

	if (!getenv(EXEC_ENV))
		return;
	fd = open(KTAU_PROFILES_PATH, O_RDONLY);
	if (fd < 0)
		_exit(10);
	_exit(ktau_sample_read(fd, 0, NULL, 0, &r, false) == -ENOENT ? 0 : 11);
}

FIXTURE(sample) {
	int fd;
	struct ktau_sample *buf;
	int paranoid, kptr;
	bool irq_off;	/* switched off by the test: on again at teardown */
};

FIXTURE_SETUP(sample)
{
	ktau_must_have_ktau(_metadata);
	self->fd = ktau_must_open_profiles(_metadata);
	self->buf = calloc(KTAU_SAMPLE_MAX_CAPACITY, sizeof(*self->buf));
	ASSERT_NE(NULL, self->buf);
	self->paranoid = read_sysctl(PARANOID);
	self->kptr = read_sysctl(KPTR);
	ASSERT_NE(NO_SYSCTL, self->paranoid) TH_LOG("no %s: CONFIG_PERF_EVENTS?", PARANOID);
	__atomic_store_n(&nsignals, 0, __ATOMIC_RELAXED);
}

FIXTURE_TEARDOWN(sample)
{
	struct ktau_sample_read r;

	ktau_sample_read(self->fd, 0, NULL, 0, &r, true);
	if (self->irq_off)
		EXPECT_EQ(0, ktau_control("irq on"));
	if (self->paranoid != NO_SYSCTL)
		write_sysctl(PARANOID, self->paranoid);
	if (self->kptr >= 0)
		write_sysctl(KPTR, self->kptr);
	signal(SIGUSR1, SIG_DFL);
	free(self->buf);
	close(self->fd);
}

/*
 * A thread spinning in user mode: one sample per period of its CPU time,
 * all of them in user mode, each charged to user_mode in its profile.
 */
TEST_F(sample, rate_and_user_mode)
{
	const struct ktau_task_rec *rec;
	struct ktau_snap snap = { 0 };
	struct ktau_sample_read r;
	__u64 cpu0, cpu, stalled, expect, floor;
	__u32 i, user = 0;

	ASSERT_EQ(0, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS,
				       1024, 0, 0, 0));
	cpu0 = thread_cpu_ns();
	stalled = spin_user(SPIN_NS);
	cpu = thread_cpu_ns() - cpu0;
	rec = ktau_must_snap_self(_metadata, self->fd, &snap);
	ASSERT_EQ(0, ktau_sample_read(self->fd, 0, self->buf, 1024, &r, true));
	expect = cpu / PERIOD_NS;
	floor = (cpu - stalled) / PERIOD_NS;
	TH_LOG("%llu ns of CPU (%llu stalled): %llu samples, %u read, expected about %llu",
	       (unsigned long long)cpu, (unsigned long long)stalled,
	       (unsigned long long)r.taken, r.nread, (unsigned long long)expect);
	/*
	 * At most one sample per period of CPU time (was up to 3/2 of the
	 * expected count): cpu-clock's hrtimer skips the periods it missed
	 * rather than catching up, so more is a bug; +5% + 2 for the CPU
	 * time outside the measured window (sampling starts before it and
	 * the snapshot and read run after it; slow on debug kernels).
	 * Fewer is no bug under TCG on a loaded host (a vCPU the host did
	 * not run for a while makes one late expiry stand for several
	 * periods: see struct spin), but not many fewer than the periods
	 * that ran unstalled: measured 98 to 102 of 100 expected over 34
	 * runs in the make check archives of 2026-11-26/27 (main, 2-CPU,
	 * MTTCG and debug passes); again on 2026-11-27: 99 to 101 on 1 CPU
	 * (5 runs), 100 to 101 on 2 (6 runs), 102 and 103 on the debug
	 * kernel; beside a cold make check 60 and 88 of 100 before stalls
	 * were counted. At least 90% of the unstalled periods: a few late
	 * expiries, not a lost tenth.
	 */
	EXPECT_LE(floor - floor / 10, r.taken);
	EXPECT_GE(expect + expect / 20 + 2, r.taken);
	EXPECT_EQ(r.taken, r.nread + r.buffered);
	EXPECT_EQ(0, r.lost);
	EXPECT_EQ(0, r.signals);
	for (i = 0; i < r.nread; i++) {
		user += !!(self->buf[i].flags & KTAU_SAMPLE_USER);
		if (i)
			EXPECT_LE(self->buf[i - 1].time_ns, self->buf[i].time_ns);
	}
	/* Most: the tick's own work is kernel time (much of it on debug kernels). */
	EXPECT_LE(r.nread / 2, user) TH_LOG("%u of %u in user mode", user, r.nread);
	EXPECT_LE(user * 9 / 10, ktau_rec_find(rec, KTAU_ID_USER) ?
		  ktau_rec_find(rec, KTAU_ID_USER)->samples : 0);
	ktau_snap_free(&snap);
}

/* A thread looping on read(): its kernel samples are charged to read. */
TEST_F(sample, syscall_attribution)
{
	const struct ktau_task_rec *rec;
	struct ktau_snap snap = { 0 };
	struct ktau_sample_read r;
	__u32 i, kernel = 0, in_read = 0;
	int zfd = open("/dev/zero", O_RDONLY);

	ASSERT_LE(0, zfd);
	ASSERT_EQ(0, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS,
				       1024, 0, 0, 0));
	spin_read(zfd, SPIN_NS);
	rec = ktau_must_snap_self(_metadata, self->fd, &snap);
	ASSERT_EQ(0, ktau_sample_read(self->fd, 0, self->buf, 1024, &r, true));
	for (i = 0; i < r.nread; i++) {
		if (self->buf[i].flags & KTAU_SAMPLE_USER)
			continue;
		kernel++;
		in_read += self->buf[i].id == KTAU_ID_READ;
	}
	TH_LOG("%u samples, %u in the kernel, %u in read", r.nread, kernel, in_read);
	EXPECT_LE(10, kernel);
	/* Most: the rest is entry and exit work outside the syscall's frame. */
	EXPECT_LE(kernel / 2, in_read);
	ASSERT_NE(NULL, ktau_rec_find(rec, KTAU_ID_READ));
	EXPECT_LE(in_read, ktau_rec_find(rec, KTAU_ID_READ)->samples);
	ktau_snap_free(&snap);
	close(zfd);
}

/* ---- User stacks in samples (ABI 1.6) ---------------------------- */

/* A toy interpreter's frames: code and line, the outer frame in prev. */
struct toy_frame {
	__u64 pad;
	__u64 code;
	__u64 prev;
	__u64 line;
};

struct toy_state {
	__u64 flags;
	struct toy_frame *current;	/* the innermost frame */
};

#define TOY_DEPTH	20
static struct toy_frame toy[TOY_DEPTH];
static struct toy_state toy_state;
static struct toy_state *toy_tstate = &toy_state;

/* toy[0] innermost: code 1000 + i, line 7 * i. */
static void toy_build(void)
{
	int i;

	for (i = 0; i < TOY_DEPTH; i++) {
		toy[i].code = 1000 + i;
		toy[i].line = 7 * i;
		toy[i].prev = i + 1 < TOY_DEPTH ? (__u64)(uintptr_t)&toy[i + 1] : 0;
	}
	toy_state.current = &toy[0];
}

/* The descriptor of the toy: &toy_tstate -> tstate -> current -> frames. */
static void toy_desc(struct ktau_stack_desc *d, __u32 depth)
{
	memset(d, 0, sizeof(*d));
	d->base = (__u64)(uintptr_t)&toy_tstate;
	d->nderef = 2;
	d->deref_off[0] = 0;
	d->deref_off[1] = offsetof(struct toy_state, current);
	d->next_off = offsetof(struct toy_frame, prev);
	d->nfields = 2;
	d->field_off[0] = offsetof(struct toy_frame, code);
	d->field_off[1] = offsetof(struct toy_frame, line);
	d->max_depth = depth;
}

/* A stack sampler on thread @tid (0: the caller): 0 or -errno. */
static int stack_start_tid(int fd, pid_t tid, const struct ktau_stack_desc *d, __u32 capacity,
			   __u32 flags)
{
	struct ktau_sample_stack_attr sa = {
		.attr = { .size = sizeof(sa.attr), .flags = flags, .tid = tid,
			  .event = KTAU_SAMPLE_CPU_CLOCK, .period = PERIOD_NS,
			  .capacity = capacity },
		.stack = *d,
	};

	return ioctl(fd, KTAU_IOC_SAMPLE_START_STACK, &sa) ? -errno : 0;
}

static int stack_start(int fd, const struct ktau_stack_desc *d, __u32 capacity, __u32 flags)
{
	return stack_start_tid(fd, 0, d, capacity, flags);
}

static int stack_read(int fd, struct ktau_sample *buf, __u32 max, __u64 *words,
		      __u32 max_words, struct ktau_sample_stack_read *sr, bool stop)
{
	memset(sr, 0, sizeof(*sr));
	sr->r.size = sizeof(sr->r);
	sr->r.buf = (__u64)(uintptr_t)buf;
	sr->r.max = max;
	sr->words = (__u64)(uintptr_t)words;
	sr->max_words = max_words;
	return ioctl(fd, stop ? KTAU_IOC_SAMPLE_STOP_STACK : KTAU_IOC_SAMPLE_READ_STACK, sr) ?
	       -errno : 0;
}

/*
 * A stop whose buffers cannot take the samples fails with EFAULT and
 * changes nothing (ABI 1.10): sampling goes on, and a stop with good
 * buffers then returns every sample, those from before the failed stops
 * too. The whole length is checked: a buffer that runs into a page that
 * is not writable fails as one that starts there, but only the length
 * the stop can fill (the capacity, not max), and nothing is written by a
 * failed stop. A request the kernel cannot write back fails it too.
 */
TEST_F(sample, stop_with_bad_buffer_changes_nothing)
{
	static __u64 words[4096];
	struct ktau_sample_stack_read sr;
	struct ktau_stack_desc d;
	struct ktau_sample_read r;
	char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *edge = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ktau_sample_read *req = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	__u64 taken;
	int i;

	ASSERT_NE(MAP_FAILED, ro);
	ASSERT_NE(MAP_FAILED, edge);
	ASSERT_NE(MAP_FAILED, req);
	ASSERT_EQ(0, mprotect(edge + 4096, 4096, PROT_NONE));
	memset(edge, 0xa5, 4096);
	ASSERT_EQ(0, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS,
				       256, 0, 0, 0));
	spin_user(SPIN_NS / 16);
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	r.max = 64;
	r.buf = (__u64)(uintptr_t)ro;
	EXPECT_EQ(-EFAULT, ioctl(self->fd, KTAU_IOC_SAMPLE_STOP, &r) ? -errno : 0);
	r.buf = 0xffffffff81000000ull;
	EXPECT_EQ(-EFAULT, ioctl(self->fd, KTAU_IOC_SAMPLE_STOP, &r) ? -errno : 0);
	/* Room for 64 samples before the guard page, not for 65. */
	r.buf = (__u64)(uintptr_t)(edge + 4096 - 64 * sizeof(struct ktau_sample));
	r.max = 65;
	EXPECT_EQ(-EFAULT, ioctl(self->fd, KTAU_IOC_SAMPLE_STOP, &r) ? -errno : 0);
	for (i = 0; i < 4096 && edge[i] == (char)0xa5; i++)
		;
	EXPECT_EQ(4096, i) TH_LOG("a failed stop wrote byte %d of its buffer", i);
	/* A good buffer, but a request on a read-only page. */
	r.buf = (__u64)(uintptr_t)self->buf;
	r.max = 256;
	*req = r;
	ASSERT_EQ(0, mprotect(req, 4096, PROT_READ));
	EXPECT_EQ(-EFAULT, ioctl(self->fd, KTAU_IOC_SAMPLE_STOP, req) ? -errno : 0);
	ASSERT_EQ(0, ktau_sample_read(self->fd, 0, NULL, 0, &r, false));
	taken = r.taken;
	EXPECT_LE(1, r.buffered);
	spin_user(SPIN_NS / 16);
	ASSERT_EQ(0, ktau_sample_read(self->fd, 0, self->buf, 256, &r, true));
	TH_LOG("%llu samples before the failed stops, %llu at the stop",
	       (unsigned long long)taken, (unsigned long long)r.taken);
	EXPECT_LT(taken, r.taken);
	EXPECT_EQ(0, r.lost);
	EXPECT_EQ(r.taken, r.nread);
	EXPECT_EQ(-ENOENT, ktau_sample_read(self->fd, 0, NULL, 0, &r, true));

	/* The frames' buffer (8 frames of 2 words a sample). */
	toy_build();
	toy_desc(&d, 8);
	ASSERT_EQ(0, stack_start(self->fd, &d, 64, 0));
	spin_user(SPIN_NS / 16);
	EXPECT_EQ(-EFAULT, stack_read(self->fd, self->buf, 64, (__u64 *)ro, 64 * 16, &sr, true));
	EXPECT_EQ(-EFAULT, stack_read(self->fd, self->buf, 64, (__u64 *)(edge + 4096 - 8 * 16),
				      64 * 16, &sr, true));
	EXPECT_EQ(-EFAULT, stack_read(self->fd, (struct ktau_sample *)ro, 64, words, 4096, &sr,
				      true));
	ASSERT_EQ(0, stack_read(self->fd, self->buf, 0, NULL, 0, &sr, false));
	taken = sr.r.taken;
	EXPECT_LE(1, sr.r.buffered);
	spin_user(SPIN_NS / 16);
	/* Room for the capacity (64) before the guard page is enough. */
	ASSERT_EQ(0, stack_read(self->fd, (struct ktau_sample *)(edge + 4096) - 64, 256,
				words, 4096, &sr, true));
	EXPECT_LT(taken, sr.r.taken);
	EXPECT_EQ(sr.r.taken, sr.r.nread);
	EXPECT_EQ(sr.r.nread * 16, sr.nwords);
	EXPECT_EQ(0, sr.r.lost);
	munmap(ro, 4096);
	munmap(edge, 8192);
	munmap(req, 4096);
}

/*
 * Every sample, in user mode and in read(), holds the toy's whole chain
 * (20 frames, innermost first, code and line each) with no signal; with
 * max_depth 8, 8 frames and KTAU_SAMPLE_STACK_CUT.
 */
TEST_F(sample, user_stack_in_every_sample)
{
	static __u64 words[1024 * TOY_DEPTH * 2];
	struct ktau_sample_stack_read sr, sr2;
	struct ktau_stack_desc d;
	__u32 i, k, off = 0, user = 0, kernel = 0, bad = 0;
	int zfd = open("/dev/zero", O_RDONLY);

	ASSERT_LE(0, zfd);
	toy_build();
	toy_desc(&d, 64);
	ASSERT_EQ(0, stack_start(self->fd, &d, 1024, 0));
	spin_user(SPIN_NS / 2);
	spin_read(zfd, SPIN_NS / 2);
	ASSERT_EQ(0, stack_read(self->fd, self->buf, 1024, words, 1024 * TOY_DEPTH * 2, &sr,
				false));
	/* A struct with its outputs set (a read's) stops and reads the rest. */
	sr2 = sr;
	sr2.r.buf = (__u64)(uintptr_t)(self->buf + 1024);
	/* Room for one sample: max_depth (64) frames of 2 words. */
	sr2.words = (__u64)(uintptr_t)(words + 1024 * TOY_DEPTH * 2 - 128);
	sr2.r.max = 1;
	sr2.max_words = 128;
	ASSERT_EQ(0, ioctl(self->fd, KTAU_IOC_SAMPLE_STOP_STACK, &sr2))
		TH_LOG("%s", strerror(errno));
	EXPECT_GE(1, sr2.r.nread);
	EXPECT_LE(10, sr.r.nread);
	EXPECT_EQ(0, sr.r.signals);
	EXPECT_EQ(sr.r.nread * TOY_DEPTH * 2, sr.nwords);
	for (i = 0; i < sr.r.nread; i++) {
		__u32 fl = self->buf[i].flags;

		if (KTAU_SAMPLE_NFRAMES(fl) != TOY_DEPTH || (fl & (KTAU_SAMPLE_STACK_CUT |
								    KTAU_SAMPLE_STACK_FAULT))) {
			bad++;
			continue;
		}
		for (k = 0; k < TOY_DEPTH; k++)
			bad += words[off + 2 * k] != 1000 + k || words[off + 2 * k + 1] != 7 * k;
		off += 2 * TOY_DEPTH;
		user += !!(fl & KTAU_SAMPLE_USER);
		kernel += !(fl & KTAU_SAMPLE_USER);
	}
	TH_LOG("%u samples (%u user, %u kernel), %u words", sr.r.nread, user, kernel, sr.nwords);
	EXPECT_EQ(0, bad);
	EXPECT_LE(3, user);
	EXPECT_LE(3, kernel);

	/* Read without the frames: flags as in ABI 1.1 (KTAU_SAMPLE_USER only). */
	ASSERT_EQ(0, stack_start(self->fd, &d, 256, 0));
	spin_user(SPIN_NS / 8);
	ASSERT_EQ(0, ktau_sample_read(self->fd, 0, self->buf, 256, &sr.r, true));
	EXPECT_LE(2, sr.r.nread);
	for (i = 0, bad = 0; i < sr.r.nread; i++)
		bad += !!(self->buf[i].flags & ~KTAU_SAMPLE_USER);
	EXPECT_EQ(0, bad);

	/* Depth 8: the chain is cut, 8 frames each. */
	toy_desc(&d, 8);
	ASSERT_EQ(0, stack_start(self->fd, &d, 256, 0));
	spin_user(SPIN_NS / 4);
	ASSERT_EQ(0, stack_read(self->fd, self->buf, 256, words, 256 * 8 * 2, &sr, true));
	EXPECT_LE(5, sr.r.nread);
	for (i = 0, bad = 0; i < sr.r.nread; i++)
		bad += KTAU_SAMPLE_NFRAMES(self->buf[i].flags) != 8 ||
		       !(self->buf[i].flags & KTAU_SAMPLE_STACK_CUT);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(sr.r.nread * 8 * 2, sr.nwords);
	close(zfd);
}

/* Field @f of toy frame @k, in user_stack_every_field_count's order. */
static __u64 toy_field(__u32 k, __u32 f)
{
	switch (f) {
	case 0:
		return toy[k].line;
	case 1:
		return toy[k].code;
	case 2:
		return toy[k].prev;
	default:
		return toy[k].pad;
	}
}

/*
 * Each number of fields a frame, 1 to 4 (the kernel walks with a copy of
 * its loop for each), copies exactly those fields of every frame, in the
 * descriptor's order, into every sample.
 */
TEST_F(sample, user_stack_every_field_count)
{
	static __u64 words[256 * TOY_DEPTH * KTAU_STACK_MAX_FIELDS];
	const __u32 offs[KTAU_STACK_MAX_FIELDS] = {
		offsetof(struct toy_frame, line), offsetof(struct toy_frame, code),
		offsetof(struct toy_frame, prev), offsetof(struct toy_frame, pad),
	};
	struct ktau_sample_stack_read sr;
	struct ktau_stack_desc d;
	__u32 nf, n, i, k, f, off, bad;

	toy_build();
	for (k = 0; k < TOY_DEPTH; k++)
		toy[k].pad = 3000 + k;
	for (nf = 1; nf <= KTAU_STACK_MAX_FIELDS; nf++) {
		toy_desc(&d, TOY_DEPTH);
		d.nfields = nf;
		memset(d.field_off, 0, sizeof(d.field_off));
		for (f = 0; f < nf; f++)
			d.field_off[f] = offs[f];
		ASSERT_EQ(0, stack_start(self->fd, &d, 256, 0));
		spin_user(SPIN_NS / 8);
		ASSERT_EQ(0, stack_read(self->fd, self->buf, 256, words, sizeof(words) / 8, &sr,
					true));
		EXPECT_LE(2, sr.r.nread);
		EXPECT_EQ(sr.r.nread * TOY_DEPTH * nf, sr.nwords);
		for (i = 0, off = 0, bad = 0; i < sr.r.nread; i++) {
			n = KTAU_SAMPLE_NFRAMES(self->buf[i].flags);
			if (n != TOY_DEPTH || (self->buf[i].flags & (KTAU_SAMPLE_STACK_CUT |
								    KTAU_SAMPLE_STACK_FAULT))) {
				bad++;
				off += n * nf;
				continue;
			}
			for (k = 0; k < TOY_DEPTH; k++)
				for (f = 0; f < nf; f++)
					bad += words[off++] != toy_field(k, f);
		}
		TH_LOG("%u fields a frame: %u samples, %u bad", nf, sr.r.nread, bad);
		EXPECT_EQ(0, bad);
	}
}

/*
 * A chain that faults (a frame pointer into unmapped memory, a base that
 * is not mapped) ends there, flagged; frames freed and rewritten by
 * another thread while samples are taken never stop the thread or the
 * kernel; a small word buffer reads whole samples only and keeps the
 * rest; every bad descriptor is EINVAL.
 */
TEST_F(sample, user_stack_faults_and_limits)
{
	static __u64 words[4096];
	struct ktau_sample_stack_read sr;
	struct ktau_stack_desc d;
	struct toy_frame *half;
	void *hole;
	__u32 i, k, bad = 0, total = 0;
	int status;
	pid_t pid;

	hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	toy_build();
	toy[4].prev = (__u64)(uintptr_t)hole;
	toy_desc(&d, 64);
	ASSERT_EQ(0, stack_start(self->fd, &d, 256, 0));
	spin_user(SPIN_NS / 4);
	/*
	 * Room for 13 samples' frames (5 frames of 2 words each; at least
	 * one whole sample, max_depth * nfields = 128 words, is needed):
	 * 13 read, the rest stays.
	 */
	ASSERT_EQ(0, stack_read(self->fd, self->buf, 256, words, 13 * 5 * 2 + 1, &sr, false));
	EXPECT_EQ(13, sr.r.nread);
	EXPECT_EQ(13 * 5 * 2, sr.nwords);
	EXPECT_LE(1, sr.r.buffered);
	total = sr.r.nread;
	for (i = 0; i < sr.r.nread; i++)
		bad += KTAU_SAMPLE_NFRAMES(self->buf[i].flags) != 5 ||
		       !(self->buf[i].flags & KTAU_SAMPLE_STACK_FAULT);
	EXPECT_EQ(0, bad);
	/* The last frame before the hole: toy[4]. */
	EXPECT_EQ(1004, words[8]);
	EXPECT_EQ(28, words[9]);
	EXPECT_EQ(-EINVAL, stack_read(self->fd, self->buf, 256, words, 127, &sr, false));
	/* A stop with too little room changes nothing either: sampling goes on. */
	EXPECT_EQ(-EINVAL, stack_read(self->fd, self->buf, 256, words, 127, &sr, true));
	spin_user(SPIN_NS / 16);
	ASSERT_EQ(0, stack_read(self->fd, self->buf, 256, words, 4096, &sr, false));
	total += sr.r.nread;
	EXPECT_LE(1, sr.r.nread);
	ASSERT_EQ(0, stack_read(self->fd, self->buf, 256, words, 4096, &sr, true));
	EXPECT_EQ(0, sr.r.lost);
	EXPECT_LE(5, total + sr.r.nread);
	munmap(hole, 4096);

	/*
	 * A frame that faults half-way: its first field readable, the next
	 * word (prev) and the second field (line) on a page that is not. The
	 * frame is not counted, and only whole frames' words are read
	 * (the kernel does not clear the words it keeps them in).
	 */
	hole = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	ASSERT_EQ(0, mprotect((char *)hole + 4096, 4096, PROT_NONE));
	half = (struct toy_frame *)((char *)hole + 4096 - 16);
	half->pad = 0;
	half->code = 2000;
	toy_build();
	toy[2].prev = (__u64)(uintptr_t)half;
	toy_desc(&d, 64);
	ASSERT_EQ(0, stack_start(self->fd, &d, 256, 0));
	spin_user(SPIN_NS / 8);
	ASSERT_EQ(0, stack_read(self->fd, self->buf, 256, words, 4096, &sr, true));
	EXPECT_LE(2, sr.r.nread);
	EXPECT_EQ(sr.r.nread * 3 * 2, sr.nwords);
	for (i = 0, bad = 0; i < sr.r.nread; i++) {
		bad += KTAU_SAMPLE_NFRAMES(self->buf[i].flags) != 3 ||
		       !(self->buf[i].flags & KTAU_SAMPLE_STACK_FAULT);
		for (k = 0; k < 3 && 6 * i + 2 * k + 1 < 4096; k++)
			bad += words[6 * i + 2 * k] != 1000 + k ||
			       words[6 * i + 2 * k + 1] != 7 * k;
	}
	EXPECT_EQ(0, bad);
	munmap(hole, 8192);

	/* A base that is not mapped: no frames, flagged. */
	toy_build();
	toy_desc(&d, 64);
	d.base = 16;
	ASSERT_EQ(0, stack_start(self->fd, &d, 256, 0));
	spin_user(SPIN_NS / 8);
	ASSERT_EQ(0, stack_read(self->fd, self->buf, 256, words, 4096, &sr, true));
	EXPECT_LE(2, sr.r.nread);
	for (i = 0, bad = 0; i < sr.r.nread; i++)
		bad += KTAU_SAMPLE_NFRAMES(self->buf[i].flags) != 0 ||
		       !(self->buf[i].flags & KTAU_SAMPLE_STACK_FAULT);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, sr.nwords);

	/*
	 * Another process's thread: ptrace attach access, not CAP_PERFMON
	 * alone (the descriptor reads its memory anywhere); plain sampling
	 * of it is CAP_PERFMON's.
	 */
	toy_desc(&d, 8);
	ASSERT_EQ(0, write_sysctl(PARANOID, 2));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct ktau_sample_read r;
		int code = 0;

		if (ktau_become(KTAU_USER_ID, KTAU_CAP(CAP_PERFMON)))
			_exit(30);
		if (stack_start_tid(self->fd, getppid(), &d, 16, KTAU_SAMPLE_NO_KERNEL) != -EPERM)
			code |= 1;
		if (ktau_sample_start(self->fd, getppid(), KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16,
				      0, 0, KTAU_SAMPLE_NO_KERNEL))
			code |= 2;
		else if (ktau_sample_read(self->fd, getppid(), NULL, 0, &r, true))
			code |= 4;
		_exit(code);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("1: stack allowed to CAP_PERFMON alone, 2/4: plain sampling refused");

	/*
	 * The same for its frames: reading or stopping another process's
	 * stack sampler with them needs ptrace attach access, and so does
	 * taking its samples out or stopping it without them (which drops
	 * the frames); a read of the counts alone keeps sampling's rule.
	 */
	toy_build();
	ASSERT_EQ(0, stack_start(self->fd, &d, 256, 0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct ktau_sample_stack_read r2 = {
			.r = { .size = sizeof(r2.r), .tid = getppid(),
			       .buf = (__u64)(uintptr_t)self->buf, .max = 16 },
			.words = (__u64)(uintptr_t)words, .max_words = 4096,
		};
		struct ktau_sample_read r;
		int code = 0;

		if (ktau_become(KTAU_USER_ID, KTAU_CAP(CAP_PERFMON)))
			_exit(30);
		if (!ioctl(self->fd, KTAU_IOC_SAMPLE_READ_STACK, &r2) || errno != EPERM)
			code |= 1;
		if (!ioctl(self->fd, KTAU_IOC_SAMPLE_STOP_STACK, &r2) || errno != EPERM)
			code |= 2;
		if (ktau_sample_read(self->fd, getppid(), NULL, 0, &r, false))
			code |= 4;
		/* The counts alone, also with _READ_STACK (ABI 1.10). */
		r2.r.max = 0;
		r2.max_words = 0;
		if (ioctl(self->fd, KTAU_IOC_SAMPLE_READ_STACK, &r2) || r2.r.nread || r2.nwords)
			code |= 64;
		r2.r.max = 16;
		r2.max_words = 4096;
		/*
		 * Nor told that the thread is sampled (it is): EPERM, not
		 * EBUSY (ABI 1.9).
		 */
		if (stack_start_tid(self->fd, getppid(), &d, 16, KTAU_SAMPLE_NO_KERNEL) != -EPERM)
			code |= 32;
		/* Nor are the samples taken out without their frames (ABI 1.9). */
		if (ktau_sample_read(self->fd, getppid(), self->buf, 16, &r, false) != -EPERM)
			code |= 8;
		if (ktau_sample_read(self->fd, getppid(), NULL, 0, &r, true) != -EPERM)
			code |= 16;
		_exit(code);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("1/2: frames read or stopped by CAP_PERFMON alone, %s, %s",
		       "4/64: read of the counts refused (64: with _STACK)",
		       "8/16: samples drained or stopped without their frames, 32: EBUSY told");
	spin_user(SPIN_NS / 16);
	/* Still sampling, frames and all. */
	ASSERT_EQ(0, stack_read(self->fd, self->buf, 256, words, 4096, &sr, true));
	EXPECT_LE(1, sr.r.nread);
	EXPECT_EQ(sr.r.nread * 8 * 2, sr.nwords);

	/*
	 * With ptrace attach access (root's child, no capability dropped),
	 * another process may drain and stop it without the frames.
	 */
	ASSERT_EQ(0, stack_start(self->fd, &d, 256, 0));
	spin_user(SPIN_NS / 16);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct ktau_sample_read r;
		int code = 0;

		if (ktau_sample_read(self->fd, getppid(), self->buf, 256, &r, false) || !r.nread)
			code |= 1;
		if (ktau_sample_read(self->fd, getppid(), NULL, 0, &r, true))
			code |= 2;
		_exit(code);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("1: drain with attach access refused or empty, 2: stop refused");
	EXPECT_EQ(-ENOENT, stack_read(self->fd, self->buf, 256, words, 4096, &sr, true));

	/* Bad descriptors, and overwrite mode with a stack. */
	toy_desc(&d, 0);
	EXPECT_EQ(-EINVAL, stack_start(self->fd, &d, 256, 0));
	toy_desc(&d, KTAU_STACK_MAX_DEPTH + 1);
	EXPECT_EQ(-EINVAL, stack_start(self->fd, &d, 256, 0));
	toy_desc(&d, 64);
	d.nfields = 0;
	EXPECT_EQ(-EINVAL, stack_start(self->fd, &d, 256, 0));
	toy_desc(&d, 64);
	d.nderef = KTAU_STACK_MAX_DEREF + 1;
	EXPECT_EQ(-EINVAL, stack_start(self->fd, &d, 256, 0));
	/* A frame read in one copy: 128 bytes from the first offset (8). */
	toy_desc(&d, 64);
	d.field_off[1] = KTAU_STACK_MAX_SPAN;
	EXPECT_EQ(0, stack_start(self->fd, &d, 256, 0));
	EXPECT_EQ(0, stack_read(self->fd, self->buf, 0, NULL, 0, &sr, true));
	d.field_off[1] = KTAU_STACK_MAX_SPAN + 8;
	EXPECT_EQ(-EINVAL, stack_start(self->fd, &d, 256, 0));
	toy_desc(&d, 64);
	d.field_off[3] = 8;
	EXPECT_EQ(-EINVAL, stack_start(self->fd, &d, 256, 0));
	toy_desc(&d, 64);
	d.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, stack_start(self->fd, &d, 256, 0));
	toy_desc(&d, 64);
	d.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, stack_start(self->fd, &d, 256, 0));
	toy_desc(&d, KTAU_STACK_MAX_DEPTH);
	EXPECT_EQ(-EINVAL, stack_start(self->fd, &d, KTAU_SAMPLE_MAX_CAPACITY, 0));
	toy_desc(&d, 64);
	EXPECT_EQ(-EINVAL, stack_start(self->fd, &d, 256, KTAU_SAMPLE_OVERWRITE));
	/* Nothing started by any of them. */
	EXPECT_EQ(-ENOENT, stack_read(self->fd, self->buf, 256, words, 4096, &sr, true));
}

static int toy_churn_stop;

/* Rewrites the chain all the time: pointers into freed and new memory. */
static void *toy_churn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&toy_churn_stop, __ATOMIC_RELAXED)) {
		struct toy_frame *f = malloc(TOY_DEPTH * sizeof(*f));
		int i;

		if (!f)
			break;
		for (i = 0; i < TOY_DEPTH; i++) {
			f[i].code = 1;
			f[i].prev = i + 1 < TOY_DEPTH ? (__u64)(uintptr_t)&f[i + 1] : 0;
		}
		__atomic_store_n(&toy_state.current, f, __ATOMIC_RELEASE);
		free(f);
	}
	return NULL;
}

TEST_F(sample, user_stack_chain_changing)
{
	static __u64 words[1024 * 64 * 2];
	struct ktau_sample_stack_read sr;
	struct ktau_stack_desc d;
	pthread_t th;

	toy_build();
	toy_desc(&d, 64);
	__atomic_store_n(&toy_churn_stop, 0, __ATOMIC_RELAXED);
	ASSERT_EQ(0, pthread_create(&th, NULL, toy_churn, NULL));
	ASSERT_EQ(0, stack_start(self->fd, &d, 1024, 0));
	spin_user(SPIN_NS / 2);
	ASSERT_EQ(0, stack_read(self->fd, self->buf, 1024, words, 1024 * 64 * 2, &sr, true));
	__atomic_store_n(&toy_churn_stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	EXPECT_LE(10, sr.r.nread);
	TH_LOG("%u samples while the chain changed, %u words", sr.r.nread, sr.nwords);
}

/*
 * A page fault taken in an interrupt while the task was in a page fault
 * of its own: the sampler's stack copy, in the hrtimer interrupt of
 * cpu-clock, faults on a page that is not present (the descriptor points
 * there) while the thread is in read() of /dev/zero into memory it never
 * touched, so in page_fault_kernel most of the time. The fault in the
 * interrupt opens a frame of the same ID above the interrupt's (or above
 * the outer fault's, with the irq group off); the outer one stays open
 * and closes, counted: no frame is dropped as unmatched (before, the
 * interrupt's fault took the outer one for a frame left open by a group
 * switch and dropped it).
 */
static void fault_in_interrupt(struct __test_metadata *_metadata, int fd,
			       struct ktau_sample *buf, const char *how)
{
	static __u64 words[1024 * 4 * 2];
	const size_t len = 4 << 20;
	const struct ktau_task_rec *r0, *r1;
	struct ktau_snap s0 = { 0 }, s1 = { 0 };
	struct ktau_sample_stack_read sr;
	struct ktau_stack_desc d;
	__u32 i, in_fault = 0, faulted = 0;
	__u64 t0, unm0, rounds = 0;
	struct ktau_val v;
	struct spin sp;
	void *hole;
	int zfd = open("/dev/zero", O_RDONLY);

	ASSERT_LE(0, zfd);
	hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	toy_desc(&d, 4);
	d.base = (__u64)(uintptr_t)hole;
	r0 = ktau_must_snap_self(_metadata, fd, &s0);
	unm0 = r0->unmatched;
	ASSERT_EQ(0, stack_start(fd, &d, 1024, 0));
	t0 = thread_cpu_ns();
	spin_begin(&sp);
	do {
		void *fresh = mmap(NULL, len, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		ASSERT_NE(MAP_FAILED, fresh);
		ASSERT_EQ((ssize_t)len, read(zfd, fresh, len));
		munmap(fresh, len);
		rounds++;
	} while (spin_more(&sp, t0, SPIN_NS));
	ASSERT_EQ(0, stack_read(fd, buf, 1024, words, 1024 * 4 * 2, &sr, true));
	r1 = ktau_must_snap_self(_metadata, fd, &s1);
	for (i = 0; i < sr.r.nread; i++) {
		faulted += !!(buf[i].flags & KTAU_SAMPLE_STACK_FAULT);
		in_fault += buf[i].id == KTAU_ID_FAULT_KERNEL;
	}
	v = ktau_val_delta(r0, r1, KTAU_ID_FAULT_KERNEL);
	TH_LOG("%s: %llu reads of %zu bytes, %llu kernel faults, unmatched %llu -> %llu",
	       how, (unsigned long long)rounds, len, (unsigned long long)v.count,
	       (unsigned long long)unm0, (unsigned long long)r1->unmatched);
	TH_LOG("%u samples, %u with a faulting copy, %u in page_fault_kernel",
	       sr.r.nread, faulted, in_fault);
	/* Each copy faulted; enough of them inside an outer fault to tell. */
	EXPECT_EQ(sr.r.nread, faulted);
	EXPECT_LE(3, in_fault);
	/* The interrupt's faults are counted too, beside the outer ones. */
	EXPECT_LE(rounds * (len >> 21) + faulted, v.count);
	EXPECT_EQ(unm0, r1->unmatched);
	ktau_snap_free(&s0);
	ktau_snap_free(&s1);
	munmap(hole, 4096);
	close(zfd);
}

/* Two runs of up to 3.2 s of CPU time each: a timeout would skip the teardown. */
TEST_F_TIMEOUT(sample, fault_in_interrupt_keeps_outer_fault, 120)
{
	if (ktau_group_state("fault") != 1 || ktau_group_state("irq") != 1)
		SKIP(return, "the fault or irq group is off");
	fault_in_interrupt(_metadata, self->fd, self->buf, "irq group on");
	/* The interrupt then has no frame of its own to stop a search at. */
	if (geteuid() || ktau_no_switch_pass())
		return;
	ASSERT_EQ(0, ktau_control("irq off"));
	self->irq_off = true;
	fault_in_interrupt(_metadata, self->fd, self->buf, "irq group off");
}

/* Buffered mode: one signal per watermark samples. */
TEST_F(sample, signal_per_watermark)
{
	struct ktau_sample_read r;

	ASSERT_NE(SIG_ERR, signal(SIGUSR1, on_signal));
	ASSERT_EQ(0, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS,
				       64, 8, SIGUSR1, 0));
	spin_user(SPIN_NS);
	ASSERT_EQ(0, ktau_sample_read(self->fd, 0, self->buf, 64, &r, true));
	TH_LOG("%llu samples, %llu signals sent, %d received",
	       (unsigned long long)r.taken, (unsigned long long)r.signals, signals_received());
	EXPECT_LE(16, r.taken);
	EXPECT_EQ(r.taken / 8, r.signals);
	EXPECT_GE(r.signals, signals_received());
	EXPECT_LE(r.signals, signals_received() + 1);
}

/*
 * Signal mode: watermark 1, a signal at every overflow. A real-time
 * signal, which queues, so that every one sent arrives. An overflow whose
 * irq_work is still queued from the one before adds no second signal
 * (documented; seen once on the debug kernel: 49 samples, 48 signals):
 * at most one in 16 may be merged so.
 */
TEST_F(sample, signal_per_sample)
{
	struct ktau_sample_read r;
	int sig = SIGRTMIN + 1;

	ASSERT_NE(SIG_ERR, signal(sig, on_signal));
	ASSERT_EQ(0, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS,
				       64, 1, sig, 0));
	spin_user(SPIN_NS / 2);
	ASSERT_EQ(0, ktau_sample_read(self->fd, 0, self->buf, 64, &r, true));
	signal(sig, SIG_DFL);
	TH_LOG("%llu samples, %d signals received", (unsigned long long)r.taken,
	       signals_received());
	EXPECT_LE(8, r.taken);
	EXPECT_GE(r.taken, r.signals);
	EXPECT_LE(r.taken, r.signals + r.taken / 16 + 1);
	EXPECT_LE(r.signals - 1, signals_received());
	EXPECT_GE(r.signals, signals_received());
}

/* A reader that never reads: a full buffer counts the rest as lost. */
TEST_F(sample, full_buffer_counts_lost)
{
	struct ktau_sample_read r;

	ASSERT_EQ(0, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS,
				       16, 0, 0, 0));
	spin_user(SPIN_NS);
	ASSERT_EQ(0, ktau_sample_read(self->fd, 0, NULL, 0, &r, false));
	EXPECT_LE(32, r.taken);
	EXPECT_EQ(16, r.buffered);
	EXPECT_EQ(r.taken - 16, r.lost);
	ASSERT_EQ(0, ktau_sample_read(self->fd, 0, self->buf, 64, &r, true));
	EXPECT_EQ(16, r.nread);
	EXPECT_EQ(0, r.buffered);
	EXPECT_EQ(r.taken - 16, r.lost);
}

/*
 * Overwrite mode keeps the newest samples and counts the overwritten:
 * capacity - 1 of them (ABI 1.3), since the slot of the oldest may be
 * the one the handler is writing.
 */
TEST_F(sample, overwrite_keeps_newest)
{
	struct ktau_sample_read r;
	__u64 now;

	ASSERT_EQ(0, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS,
				       16, 0, 0, KTAU_SAMPLE_OVERWRITE));
	spin_user(SPIN_NS);
	now = ktau_now_ns();
	ASSERT_EQ(0, ktau_sample_read(self->fd, 0, NULL, 0, &r, false));
	EXPECT_EQ(15, r.buffered);
	ASSERT_EQ(0, ktau_sample_read(self->fd, 0, self->buf, 64, &r, true));
	EXPECT_LE(32, r.taken);
	EXPECT_EQ(15, r.nread);
	EXPECT_EQ(r.taken - 15, r.lost);
	/* The newest: the last within a few periods of now. */
	EXPECT_GE(self->buf[14].time_ns + 50 * PERIOD_NS, now);
	EXPECT_LT(self->buf[0].time_ns, self->buf[14].time_ns);
	for (int i = 1; i < 15; i++)
		EXPECT_LT(self->buf[i - 1].time_ns, self->buf[i].time_ns);
}

/*
 * A classic signal that is still pending (blocked here) is not sent
 * again, and not counted: signals is what was queued (ABI 1.3).
 */
TEST_F(sample, pending_signal_not_counted)
{
	struct ktau_sample_read r;
	sigset_t set, old;

	ASSERT_NE(SIG_ERR, signal(SIGUSR1, on_signal));
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	ASSERT_EQ(0, pthread_sigmask(SIG_BLOCK, &set, &old));
	ASSERT_EQ(0, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS,
				       64, 1, SIGUSR1, 0));
	spin_user(SPIN_NS / 2);
	ASSERT_EQ(0, ktau_sample_read(self->fd, 0, NULL, 0, &r, true));
	ASSERT_EQ(0, pthread_sigmask(SIG_SETMASK, &old, NULL));
	TH_LOG("%llu samples, %llu signals counted, %d received",
	       (unsigned long long)r.taken, (unsigned long long)r.signals,
	       signals_received());
	EXPECT_LE(8, r.taken);
	EXPECT_EQ(1, r.signals);
	EXPECT_EQ(1, signals_received());
}

/*
 * A frequency above kernel.perf_event_max_sample_rate is refused, as
 * perf_event_open() refuses it (ABI 1.3); the limit itself is accepted.
 */
TEST_F(sample, frequency_above_perf_max_refused)
{
	char *t = ktau_slurp("/proc/sys/kernel/perf_event_max_sample_rate", NULL);
	struct ktau_sample_read r;
	unsigned long max;

	ASSERT_NE(NULL, t);
	max = strtoul(t, NULL, 10);
	free(t);
	ASSERT_LT(0, max);
	if (max > KTAU_SAMPLE_MAX_FREQ)
		max = KTAU_SAMPLE_MAX_FREQ;
	TH_LOG("perf_event_max_sample_rate %lu", max);
	EXPECT_EQ(-EINVAL, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, max + 1,
					     16, 0, 0, KTAU_SAMPLE_FREQ));
	/* perf may lower the limit meanwhile: ask for a tenth of it. */
	EXPECT_EQ(0, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK,
				       max / 10 ?: 1, 16, 0, 0, KTAU_SAMPLE_FREQ));
	EXPECT_EQ(0, ktau_sample_read(self->fd, 0, NULL, 0, &r, true));
}

/* Bad arguments are refused and start nothing. */
TEST_F(sample, bad_arguments)
{
	struct ktau_sample_attr a = { 0 };
	struct ktau_sample_read r;
	int ret;

#define BAD(...) EXPECT_EQ(-EINVAL, ktau_sample_start(self->fd, __VA_ARGS__))
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, 0, 16, 0, 0, 0);			/* zero period */
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, 1ULL << 62, 16, 0, 0, 0);		/* huge period */
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, 1000, 16, 0, 0, 0);		/* clock < 10 us */
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, 1000000, 16, 0, 0, KTAU_SAMPLE_FREQ);
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 0, 0, 0, 0);		/* no buffer */
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 24, 0, 0, 0);		/* not 2^n */
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 1U << 30, 0, 0, 0);	/* huge */
	BAD(0, 99, PERIOD_NS, 16, 0, 0, 0);				/* event */
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16, 32, SIGUSR1, 0);	/* wm > cap */
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16, 4, 0, 0);		/* no signal */
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16, 0, SIGUSR1, 0);	/* no wm */
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16, 4, SIGKILL, 0);
	/* Only the signals a profiler uses (ABI 1.3). */
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16, 4, SIGTERM, 0);
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16, 4, SIGSEGV, 0);
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16, 4, SIGCHLD, 0);
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16, 4, SIGTSTP, 0);
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16, 4, 65, 0);
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16, 4, -1, 0);
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16, 0, 0, 0x100);	/* flags */
	BAD(0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16, 0, 0,
	    KTAU_SAMPLE_NO_USER | KTAU_SAMPLE_NO_KERNEL);
#undef BAD
	a.size = sizeof(a) - 8;
	a.period = PERIOD_NS;
	a.capacity = 16;
	EXPECT_EQ(-EINVAL, ioctl(self->fd, KTAU_IOC_SAMPLE_START, &a) ? -errno : 0);
	a.size = sizeof(a);
	a.reserved = 1;
	EXPECT_EQ(-EINVAL, ioctl(self->fd, KTAU_IOC_SAMPLE_START, &a) ? -errno : 0);
	EXPECT_EQ(-EFAULT, ioctl(self->fd, KTAU_IOC_SAMPLE_START, NULL) ? -errno : 0);
	EXPECT_EQ(-ESRCH, ktau_sample_start(self->fd, 0x3fffffff, KTAU_SAMPLE_CPU_CLOCK,
					    PERIOD_NS, 16, 0, 0, 0));
	/*
	 * A hardware event exists only with a CPU PMU (none in this guest:
	 * "PMU not available due to virtualization"): ENOENT without one.
	 */
	ret = ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CYCLES, 1000000, 16, 0, 0, 0);
	if (!access("/sys/bus/event_source/devices/cpu", F_OK) ||
	    !access("/sys/bus/event_source/devices/cpu_core", F_OK)) {
		EXPECT_EQ(0, ret);
		EXPECT_EQ(0, ktau_sample_read(self->fd, 0, NULL, 0, &r, true));
	} else {
		EXPECT_EQ(-ENOENT, ret);
	}
	EXPECT_EQ(-ENOENT, ktau_sample_read(self->fd, 0, NULL, 0, &r, false));
	EXPECT_EQ(-ENOENT, ktau_sample_read(self->fd, 0, NULL, 0, &r, true));

	ASSERT_EQ(0, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_TASK_CLOCK, PERIOD_NS,
				       16, 0, 0, 0));
	EXPECT_EQ(-EBUSY, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS,
					    16, 0, 0, 0));
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r) + 8;
	EXPECT_EQ(-EINVAL, ioctl(self->fd, KTAU_IOC_SAMPLE_READ, &r) ? -errno : 0);
	r.size = sizeof(r);
	r.max = 16;
	EXPECT_EQ(-EINVAL, ioctl(self->fd, KTAU_IOC_SAMPLE_READ, &r) ? -errno : 0);
	r.buf = 0xffffffff81000000ull;
	spin_user(20 * KTAU_NSEC_PER_MSEC);
	EXPECT_EQ(-EFAULT, ioctl(self->fd, KTAU_IOC_SAMPLE_READ, &r) ? -errno : 0);
	EXPECT_EQ(0, ktau_sample_read(self->fd, 0, NULL, 0, &r, true));
}

static void *sample_and_exit(void *p)
{
	int *fd = p;

	fd[1] = ktau_sample_start(fd[0], 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16, 0, 0, 0);
	fd[2] = gettid();
	spin_user(20 * KTAU_NSEC_PER_MSEC);
	return NULL;
}

/* Sampling ends with the thread and with exec. */
TEST_F(sample, exit_and_exec_release)
{
	static char * const argv[] = { "ktau_sample", NULL };
	struct ktau_sample_read r;
	int args[3] = { self->fd }, status, i, ret = 0;
	pthread_t t;
	pid_t pid;

	ASSERT_EQ(0, pthread_create(&t, NULL, sample_and_exit, args));
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(0, args[1]);
	/*
	 * pthread_join() returns when the thread cleared its tid, on its way
	 * out: on another CPU it may not have reached the end of sampling
	 * yet (the read still works), then it has (ENOENT), then it is gone
	 * (ESRCH). Within a second it must be one of the last two.
	 */
	for (i = 0; i < 100; i++) {
		ret = ktau_sample_read(self->fd, args[2], NULL, 0, &r, false);
		if (ret)
			break;
		ktau_sleep_ns(10 * KTAU_NSEC_PER_MSEC);
	}
	EXPECT_TRUE(ret == -ESRCH || ret == -ENOENT) TH_LOG("read after exit: %d", ret);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16,
				      0, 0, 0))
			_exit(20);
		setenv(EXEC_ENV, "1", 1);
		execv("/proc/self/exe", argv);
		_exit(21);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

static int drop_to(uid_t uid)
{
	return setresgid(uid, uid, uid) || setresuid(uid, uid, uid) ? -errno : 0;
}

/*
 * perf's rules: another user's task needs CAP_PERFMON or ptrace access;
 * kernel samples need perf_event_paranoid <= 1 or CAP_PERFMON; at 3 and
 * above, nothing without CAP_SYS_ADMIN.
 */
TEST_F(sample, permissions)
{
	struct ktau_sample_read r;
	int status;
	pid_t pid;

	if (geteuid() != 0)
		SKIP(return, "needs root to switch users");
	ASSERT_EQ(0, write_sysctl(PARANOID, 2));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int code = 0;

		if (drop_to(65534))
			_exit(30);
		if (ktau_sample_start(self->fd, getppid(), KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS,
				      16, 0, 0, KTAU_SAMPLE_NO_KERNEL) != -EACCES)
			code |= 1;
		if (ktau_sample_read(self->fd, getppid(), NULL, 0, &r, false) != -EACCES)
			code |= 2;
		if (ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16,
				      0, 0, 0) != -EACCES)
			code |= 4;	/* kernel samples at paranoid 2 */
		if (ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16,
				      0, 0, KTAU_SAMPLE_NO_KERNEL) != 0)
			code |= 8;	/* own user samples are fine */
		if (ktau_sample_read(self->fd, 0, NULL, 0, &r, true))
			code |= 16;
		_exit(code);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));

	/*
	 * At 1 or less, anyone samples its own thread in the kernel too: in
	 * read() of /dev/zero (clearing its buffer) for a tenth of the time,
	 * kernel samples must come (most of the time is there).
	 */
	ASSERT_EQ(0, write_sysctl(PARANOID, 1));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int zfd = open("/dev/zero", O_RDONLY), kernel = 0;
		__u32 i;

		if (zfd < 0 || drop_to(65534))
			_exit(30);
		if (ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 64,
				      0, 0, 0))
			_exit(1);
		spin_read(zfd, SPIN_NS / 10);
		if (ktau_sample_read(self->fd, 0, self->buf, 64, &r, true))
			_exit(2);
		for (i = 0; i < r.nread; i++)
			kernel += !(self->buf[i].flags & KTAU_SAMPLE_USER);
		_exit(kernel >= 3 ? 0 : 3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("1: refused at paranoid 1, 2: stop failed, 3: fewer than 3 kernel samples");

	ASSERT_EQ(0, write_sysctl(PARANOID, 3));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (drop_to(65534))
			_exit(30);
		_exit(ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 16,
					0, 0, KTAU_SAMPLE_NO_KERNEL) == -EACCES ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* Kernel addresses only where kptr_restrict lets the reader see them. */
TEST_F(sample, kernel_addresses)
{
	struct ktau_sample_read r;
	int zfd = open("/dev/zero", O_RDONLY), restrict_level;
	__u32 i, kernel, shown;

	if (geteuid() != 0)
		SKIP(return, "needs root to set kptr_restrict");
	ASSERT_LE(0, zfd);
	for (restrict_level = 1; restrict_level <= 2; restrict_level++) {
		ASSERT_EQ(0, write_sysctl(KPTR, restrict_level));
		ASSERT_EQ(0, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK,
					       PERIOD_NS, 256, 0, 0, 0));
		spin_read(zfd, SPIN_NS / 2);
		ASSERT_EQ(0, ktau_sample_read(self->fd, 0, self->buf, 256, &r, true));
		kernel = 0;
		shown = 0;
		for (i = 0; i < r.nread; i++) {
			if (self->buf[i].flags & KTAU_SAMPLE_USER) {
				EXPECT_NE(0, self->buf[i].ip);
				EXPECT_GT(0x800000000000ull, self->buf[i].ip);
				continue;
			}
			kernel++;
			shown += self->buf[i].ip != 0;
		}
		TH_LOG("kptr_restrict=%d: %u kernel samples, %u with an address",
		       restrict_level, kernel, shown);
		EXPECT_LE(5, kernel);
		/* Root has CAP_SYSLOG: sees them at 1, never at 2. */
		EXPECT_EQ(restrict_level == 1 ? kernel : 0, shown);
	}
	close(zfd);
}

/*
 * A reader waiting behind another can be killed: the first reader's
 * buffer is held by userfaultfd, so it waits in copy_to_user() holding
 * the sampler's read lock; a second process that reads the same sampler
 * waits for the lock and gets SIGKILL, and must go at once, not when the
 * page comes (a watchdog gives it after UFFD_HOLD_MS in any case). Red
 * before: the lock was taken uninterruptibly.
 */
#define UFFD_HOLD_MS	10000

struct uffd_reader {
	int fd;
	pid_t tid;
	struct ktau_sample *buf;
	int ret;
};

static void *uffd_reader_run(void *arg)
{
	struct uffd_reader *u = arg;
	struct ktau_sample_read r;

	u->ret = ktau_sample_read(u->fd, u->tid, u->buf, 64, &r, false);
	return NULL;
}

struct uffd_watchdog {
	int uffd, stop;
	void *page;
};

static void *uffd_watchdog_run(void *arg)
{
	struct uffd_watchdog *w = arg;
	struct pollfd p = { .fd = w->stop, .events = POLLIN };
	struct uffdio_zeropage z = {
		.range = { .start = (uintptr_t)w->page, .len = 4096 },
	};

	poll(&p, 1, UFFD_HOLD_MS);
	ioctl(w->uffd, UFFDIO_ZEROPAGE, &z);
	return NULL;
}

TEST_F_TIMEOUT(sample, reader_behind_faulting_reader_killable, 60)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffd_reader u = { .fd = self->fd, .tid = gettid() };
	struct uffd_watchdog w = {};
	struct timespec t0, t1;
	pthread_t rt, wt;
	int pipefd[2], status, i;
	long ms = -1;
	pid_t pid;

	w.uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, w.uffd) TH_LOG("userfaultfd: %s (CONFIG_USERFAULTFD is in the guest's config)",
				    strerror(errno));
	ASSERT_EQ(0, ioctl(w.uffd, UFFDIO_API, &api));
	w.page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, w.page);
	reg.range.start = (uintptr_t)w.page;
	reg.range.len = 4096;
	ASSERT_EQ(0, ioctl(w.uffd, UFFDIO_REGISTER, &reg));
	ASSERT_EQ(0, pipe(pipefd));
	w.stop = pipefd[0];
	u.buf = w.page;
	ASSERT_EQ(0, pthread_create(&wt, NULL, uffd_watchdog_run, &w));
	ASSERT_EQ(0, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, PERIOD_NS, 256, 0, 0,
				       KTAU_SAMPLE_NO_KERNEL));
	spin_user(SPIN_NS / 16);
	ASSERT_EQ(0, pthread_create(&rt, NULL, uffd_reader_run, &u));
	/* The first reader is in copy_to_user(), waiting for the page. */
	ASSERT_EQ(0, ktau_uffd_wait_fault(w.uffd, UFFD_HOLD_MS / 2));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct ktau_sample_read r;

		ktau_sample_read(self->fd, u.tid, self->buf, 64, &r, false);
		_exit(0);
	}
	/* Let it reach the lock, then kill it. */
	usleep(300 * 1000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	for (i = 0; i < 200; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
			break;
		}
		usleep(10 * 1000);
	}
	ASSERT_EQ(1, write(pipefd[1], "x", 1));
	if (ms < 0)
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
	pthread_join(wt, NULL);
	pthread_join(rt, NULL);
	TH_LOG("the killed reader went after %ld ms (-1: not within 2 s)", ms);
	EXPECT_LE(0, ms);
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(0, u.ret);
	close(w.uffd);
	close(pipefd[0]);
	close(pipefd[1]);
	munmap(w.page, 4096);
}

TEST_HARNESS_MAIN
