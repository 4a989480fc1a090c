// SPDX-License-Identifier: GPL-2.0
/*
 * ktau-bench-sample-cost: the cost of one sample, side by side in one run
 * and one process, in three ways of sampling the same event with the same
 * period:
 *
 *   ktau buffered  KTAU_IOC_SAMPLE_START with a buffer for the whole run
 *                  and no signal before it is full (watermark = capacity):
 *                  the kernel appends each sample; one READ at the end
 *   ktau signal    the same with watermark 1 and an empty SIGPROF handler:
 *                  a signal at every sample (what an interpreter uses)
 *   perf ring      perf_event_open() with an mmap ring buffer, as perf
 *                  record does: poll(), then drain the ring at the end
 *
 * With -s DEPTH, two more, for an interpreter's stack of DEPTH frames (a
 * toy chain in memory: a thread state points to the innermost frame, each
 * frame to the next; code and line are recorded per frame):
 *
 *   ktau stack     buffered, and the kernel copies the chain into every
 *                  sample (KTAU_IOC_SAMPLE_START_STACK, ABI 1.6)
 *   signal + walk  watermark 1, and the SIGPROF handler walks the chain
 *                  into a preallocated ring (what an interpreter's handler
 *                  does, as python3 -m ktau sample's)
 *
 * Each round runs a fixed amount of user-mode work (a loop of N
 * iterations) without sampling, then in each mode, in turn; the time of a
 * mode includes starting, draining and stopping. The cost per sample is
 * (time with sampling - time without) / samples, per round; the table has
 * the medians. Under QEMU with -icount shift=0 guest time counts
 * instructions, so the figures are repeatable; they are then instructions
 * (virtual ns), not real time. A disabled perf event is held open for the
 * whole run (perf_hold_sched_hooks()), so that no mode pays perf's
 * turning on of its scheduler hooks.
 *
 * Usage: ktau-bench-sample-cost [-n N] [-p PERIOD_NS] [-r ROUNDS] [-e cpu-clock|task-clock] [-u]
 *                               [-s DEPTH]
 *   -u  user mode only (KTAU_SAMPLE_NO_KERNEL, exclude_kernel): without
 *       CAP_PERFMON at perf_event_paranoid 2
 * Exit status: 0 when every mode ran, 1 when one could not, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/ktau.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define MAX_ROUNDS	64
#define MAX_PERF_PAGES	128	/* 512 KiB: within perf_event_mlock_kb for any user */

enum { M_BASE, M_BUFFERED, M_SIGNAL, M_PERF, M_STACK, M_SIGWALK, NMODES };

static const char *const mode_name[NMODES] = {
	"no sampling", "ktau buffered", "ktau signal (wm 1)", "perf mmap ring",
	"ktau stack (buffered)", "ktau signal + walk",
};

/* The toy interpreter's stack (-s): frames, and a thread state. */
struct toy_frame {
	uint64_t code;
	struct toy_frame *prev;
	uint64_t line;
};

static struct {
	uint64_t pad;
	struct toy_frame *current;
} toy_ts;
static struct toy_frame toy[KTAU_STACK_MAX_DEPTH];
static void *volatile toy_tsp = &toy_ts;
static unsigned int depth;
/* What the signal handler records, as an interpreter's would. */
#define WALK_RING	(1U << 16)
static uint64_t walk_ring[WALK_RING];
static unsigned int walk_pos;
static uint64_t *kwords;
static unsigned int stack_capacity;

static unsigned long n_iter = 100000000;
static uint64_t period = 100000;
static int event = KTAU_SAMPLE_CPU_CLOCK, user_only;
static int kfd = -1;
static struct ktau_sample *kbuf;
/* Sized for the run: twice the samples of the work at the period. */
static unsigned int capacity = 1024, perf_pages = 8;
static volatile unsigned long nsig;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The fixed work: user-mode only. */
static void __attribute__((noinline)) work(void)
{
	unsigned long i, x = 0;

	for (i = 0; i < n_iter; i++) {
		x += i ^ (x >> 3);
		__asm__ __volatile__("" : "+r" (x));
	}
}

static void on_sig(int sig)
{
	(void)sig;
	nsig++;
}

/* The handler of "signal + walk": the chain into the ring, no allocation. */
static void on_sig_walk(int sig)
{
	struct toy_frame *f = ((__typeof__(toy_ts) *)toy_tsp)->current;
	unsigned int n;

	(void)sig;
	for (n = 0; f && n < depth; n++, f = f->prev) {
		walk_ring[walk_pos++ & (WALK_RING - 1)] = f->code;
		walk_ring[walk_pos++ & (WALK_RING - 1)] = f->line;
	}
	nsig++;
}

/* Buffered with the kernel copying the toy chain; the samples, or -errno. */
static long run_ktau_stack(void)
{
	struct ktau_sample_stack_attr sa = {
		.attr = { .size = sizeof(sa.attr), .event = event, .period = period,
			  .capacity = stack_capacity, .watermark = stack_capacity, .signo = SIGPROF,
			  .flags = user_only ? KTAU_SAMPLE_NO_KERNEL : 0 },
		.stack = { .base = (uintptr_t)&toy_tsp, .nderef = 2,
			   .deref_off = { 0, offsetof(__typeof__(toy_ts), current) },
			   .next_off = offsetof(struct toy_frame, prev), .nfields = 2,
			   .field_off = { offsetof(struct toy_frame, code),
					  offsetof(struct toy_frame, line) },
			   .max_depth = depth },
	};
	struct ktau_sample_stack_read r;
	uint64_t taken;

	if (ioctl(kfd, KTAU_IOC_SAMPLE_START_STACK, &sa))
		return -errno;
	work();
	memset(&r, 0, sizeof(r));
	r.r.size = sizeof(r.r);
	r.r.buf = (uintptr_t)kbuf;
	r.r.max = stack_capacity;
	r.words = (uintptr_t)kwords;
	r.max_words = stack_capacity * depth * 2;
	if (ioctl(kfd, KTAU_IOC_SAMPLE_READ_STACK, &r))
		return -errno;
	taken = r.r.taken;
	if (r.r.nread && KTAU_SAMPLE_NFRAMES(kbuf[0].flags) != depth)
		return -EPROTO;
	r.r.max = 0;
	if (ioctl(kfd, KTAU_IOC_SAMPLE_STOP_STACK, &r))
		return -errno;
	return (long)(r.r.taken > taken ? r.r.taken : taken);
}

/* KTAU: start, work, drain and stop; the samples taken, or -errno. */
static long run_ktau(int signal_mode)
{
	struct ktau_sample_attr a = {
		.size = sizeof(a), .event = event, .period = period, .capacity = capacity,
		.watermark = signal_mode ? 1 : capacity, .signo = SIGPROF,
		.flags = user_only ? KTAU_SAMPLE_NO_KERNEL : 0,
	};
	struct ktau_sample_read r;
	uint64_t taken;

	if (ioctl(kfd, KTAU_IOC_SAMPLE_START, &a))
		return -errno;
	work();
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	r.buf = (uintptr_t)kbuf;
	r.max = capacity;
	if (ioctl(kfd, KTAU_IOC_SAMPLE_READ, &r))
		return -errno;
	taken = r.taken;
	r.max = 0;
	if (ioctl(kfd, KTAU_IOC_SAMPLE_STOP, &r))
		return -errno;
	return (long)(r.taken > taken ? r.taken : taken);
}

static int perf_open(void)
{
	struct perf_event_attr pa;

	memset(&pa, 0, sizeof(pa));
	pa.size = sizeof(pa);
	pa.type = PERF_TYPE_SOFTWARE;
	pa.config = event == KTAU_SAMPLE_CPU_CLOCK ? PERF_COUNT_SW_CPU_CLOCK :
		    PERF_COUNT_SW_TASK_CLOCK;
	pa.sample_period = period;
	/* What KTAU records: ip, time (and the thread, as perf needs it). */
	pa.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	pa.disabled = 1;
	pa.exclude_hv = 1;
	pa.exclude_kernel = user_only;
	/* Woken only when the ring is nearly full, as KTAU's buffered mode. */
	pa.watermark = 1;
	pa.wakeup_watermark = perf_pages * 4096 * 3 / 4;
	return syscall(SYS_perf_event_open, &pa, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* perf: enable, work, poll, drain the ring, disable; the samples, or -errno. */
static long run_perf(void)
{
	size_t len = (perf_pages + 1) * 4096;
	struct perf_event_mmap_page *meta;
	struct pollfd pfd;
	uint64_t head, tail, samples = 0;
	unsigned char *data;
	int fd = perf_open();
	long ret;

	if (fd < 0)
		return -errno;
	meta = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (meta == MAP_FAILED) {
		ret = -errno;
		close(fd);
		return ret;
	}
	data = (unsigned char *)meta + 4096;
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	work();
	pfd.fd = fd;
	pfd.events = POLLIN;
	poll(&pfd, 1, 0);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	for (tail = meta->data_tail; tail < head;) {
		struct perf_event_header h;
		size_t off = tail % (perf_pages * 4096);

		memcpy(&h, data + off, sizeof(h));
		if (!h.size)
			break;
		if (h.type == PERF_RECORD_SAMPLE)
			samples++;
		tail += h.size;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	munmap(meta, len);
	close(fd);
	return (long)samples;
}

/*
 * A task-bound perf event held for the whole run, never enabled, so that
 * perf's scheduler hooks (the perf_sched_events key) stay on. Without it,
 * a second after the last counter of a mode goes perf turns them off
 * (perf_sched_delayed()), and the next counter created, KTAU's or perf's,
 * turns them on again in account_event() with a synchronize_rcu(): the
 * mode after "no sampling" then sleeps an RCU grace period (about 10 ms of
 * guest time under -icount), charged to its samples, in some rounds or
 * all, as the delayed work happens to fall. The fd, or -1.
 */
static int perf_hold_sched_hooks(void)
{
	struct perf_event_attr pa;

	memset(&pa, 0, sizeof(pa));
	pa.size = sizeof(pa);
	pa.type = PERF_TYPE_SOFTWARE;
	pa.config = PERF_COUNT_SW_DUMMY;
	pa.disabled = 1;
	pa.exclude_kernel = 1;
	pa.exclude_hv = 1;
	return syscall(SYS_perf_event_open, &pa, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static long run_mode(int m)
{
	struct sigaction sa = { .sa_handler = on_sig_walk, .sa_flags = SA_RESTART };
	long ret;

	switch (m) {
	case M_BUFFERED: return run_ktau(0);
	case M_SIGNAL: return run_ktau(1);
	case M_PERF: return run_perf();
	case M_STACK: return run_ktau_stack();
	case M_SIGWALK:
		sigemptyset(&sa.sa_mask);
		sigaction(SIGPROF, &sa, NULL);
		ret = run_ktau(1);
		sa.sa_handler = on_sig;
		sigaction(SIGPROF, &sa, NULL);
		return ret;
	default: work(); return 0;
	}
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	static double t[NMODES][MAX_ROUNDS], s[NMODES][MAX_ROUNDS], per[NMODES][MAX_ROUNDS];
	struct sigaction sa = { .sa_handler = on_sig, .sa_flags = SA_RESTART };
	double mt[NMODES], ms[NMODES], mp[NMODES];
	int rounds = 5, c, m, r, failed = 0, nmodes;
	long ret[NMODES] = { 0 };
	uint64_t t0;

	while ((c = getopt(argc, argv, "n:p:r:e:us:h")) != -1) {
		switch (c) {
		case 'n': n_iter = strtoul(optarg, NULL, 10); break;
		case 'p': period = strtoull(optarg, NULL, 10); break;
		case 'r': rounds = atoi(optarg); break;
		case 'e':
			if (!strcmp(optarg, "cpu-clock"))
				event = KTAU_SAMPLE_CPU_CLOCK;
			else if (!strcmp(optarg, "task-clock"))
				event = KTAU_SAMPLE_TASK_CLOCK;
			else
				goto usage;
			break;
		case 'u': user_only = 1; break;
		case 's':
			depth = (unsigned int)strtoul(optarg, NULL, 10);
			if (!depth || depth > KTAU_STACK_MAX_DEPTH)
				goto usage;
			break;
		default:
			goto usage;
		}
	}
	if (!n_iter || period < KTAU_SAMPLE_MIN_CLOCK_NS || rounds < 1 || rounds > MAX_ROUNDS)
		goto usage;
	kfd = open("/proc/ktau/profiles", O_RDONLY | O_CLOEXEC);
	if (kfd < 0) {
		fprintf(stderr, "ktau-bench-sample-cost: /proc/ktau/profiles: %s (a KTAU kernel "
			"with ABI 1.1 is needed)\n", strerror(errno));
		return 1;
	}
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL))
		return 1;
	if (perf_hold_sched_hooks() < 0)
		fprintf(stderr, "ktau-bench-sample-cost: perf_event_open (dummy): %s; a mode "
			"may include perf's synchronize_rcu()\n", strerror(errno));
	/* Warm up, and size the buffers: a buffer for the whole run each. */
	t0 = now_ns();
	work();
	t0 = now_ns() - t0;
	while (capacity < KTAU_SAMPLE_MAX_CAPACITY && capacity < 2 * t0 / period)
		capacity *= 2;
	while (perf_pages < MAX_PERF_PAGES && perf_pages * 4096 < 2 * t0 / period * 32)
		perf_pages *= 2;
	kbuf = calloc(capacity, sizeof(*kbuf));
	if (!kbuf)
		return 1;
	nmodes = depth ? NMODES : M_STACK;
	if (depth) {
		unsigned int i;

		for (i = 0; i < depth; i++) {
			toy[i].code = 0x1000 + i;
			toy[i].line = i;
			toy[i].prev = i + 1 < depth ? &toy[i + 1] : NULL;
		}
		toy_ts.current = &toy[0];
		stack_capacity = capacity;
		while ((uint64_t)stack_capacity * depth * 2 > KTAU_STACK_MAX_WORDS)
			stack_capacity /= 2;
		kwords = calloc((size_t)stack_capacity * depth * 2, sizeof(*kwords));
		if (!kwords)
			return 1;
	}
	for (r = 0; r < rounds; r++) {
		for (m = 0; m < nmodes; m++) {
			t0 = now_ns();
			ret[m] = run_mode(m);
			t[m][r] = now_ns() - t0;
			s[m][r] = ret[m] > 0 ? ret[m] : 0;
			if (ret[m] < 0 && !r) {
				fprintf(stderr, "ktau-bench-sample-cost: %s: %s\n", mode_name[m],
					strerror((int)-ret[m]));
				failed = 1;
			}
		}
		for (m = 1; m < nmodes; m++)
			per[m][r] = s[m][r] ? (t[m][r] - t[M_BASE][r]) / s[m][r] : 0;
	}
	printf("ktau-bench-sample-cost: %lu iterations of user-mode work, %s every %llu ns%s, "
	       "%d rounds (medians); KTAU buffer %u samples, perf ring %u pages\n", n_iter,
	       event == KTAU_SAMPLE_CPU_CLOCK ? "cpu-clock" : "task-clock",
	       (unsigned long long)period, user_only ? " (user mode only)" : "", rounds, capacity,
	       perf_pages);
	printf("%-22s %12s %9s %16s %10s\n", "mode", "time ms", "samples", "ns per sample",
	       "vs perf");
	for (m = 0; m < nmodes; m++) {
		mt[m] = median(t[m], rounds);
		ms[m] = median(s[m], rounds);
		mp[m] = m ? median(per[m], rounds) : 0;
	}
	for (m = 0; m < nmodes; m++) {
		if (!m) {
			printf("%-22s %12.3f %9s %16s %10s\n", mode_name[m], mt[m] / 1e6, "-", "-",
			       "-");
			continue;
		}
		printf("%-22s %12.3f %9.0f %16.1f %10.2f\n", mode_name[m], mt[m] / 1e6, ms[m],
		       mp[m], mp[M_PERF] > 0 ? mp[m] / mp[M_PERF] : 0.0);
	}
	if (mp[M_SIGNAL] > 0 && mp[M_PERF] > 0)
		printf("buffered/signal %.2f (target <= 0.33), buffered/perf %.2f (target <= 1.00); "
		       "%lu signals handled\n", mp[M_BUFFERED] / mp[M_SIGNAL],
		       mp[M_BUFFERED] / mp[M_PERF], (unsigned long)nsig);
	/* Below the noise (the smoke run, wall-clock time) no ratio is made. */
	if (depth && mp[M_STACK] > 0 && mp[M_SIGWALK] > 0)
		printf("stack of %u frames: kernel copy/signal + walk %.2f (target <= 0.50), "
		       "kernel copy/buffered without a stack %.2f\n", depth,
		       mp[M_STACK] / mp[M_SIGWALK], mp[M_BUFFERED] > 0 ? mp[M_STACK] / mp[M_BUFFERED] : 0);
	else if (depth)
		printf("stack of %u frames: no ratio (a cost below the noise)\n", depth);
	return failed;
usage:
	fprintf(stderr, "usage: ktau-bench-sample-cost [-n N] [-p PERIOD_NS >= 10000] "
		"[-r ROUNDS 1..64] [-e cpu-clock|task-clock] [-u] [-s DEPTH 1..128]\n");
	return 2;
}
