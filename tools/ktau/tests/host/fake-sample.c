// SPDX-License-Identifier: GPL-2.0
/*
 * fake-sample.so: an LD_PRELOAD stand-in for the kernel's sampling (ABI
 * 1.1) on a host without KTAU, preloaded before fake-ktau.so (which fakes
 * /proc/ktau/version and the trace sessions), so that the host tests can
 * run 'ktaud trace --sample SPEC -- COMMAND' end to end: the ptrace of the
 * command, a sampler per thread, the drains, the samples in the trace. It
 * is not the kernel: /proc/ktau/profiles opens as an empty file whose
 * sampling ioctls succeed; a sampled thread "takes" one sample per
 * millisecond of wall time between two reads (at most what the read has
 * room for; the others are counted as lost), alternately in user mode
 * (ip 0x1000 + n, KTAU_ID_USER) and in the kernel (ip 0, the routine
 * read), its times evenly spread over that span. Reads of a thread that is
 * not sampled (or of one that is gone: "sample gone TID", its slot freed)
 * fail with ENOENT; the start, the stop and the read of each thread are
 * logged to $FAKE_KTAU_LOG ("sample start TID", "sample stop TID N") with
 * the pid. $FAKE_SAMPLE_SKEW_NS (ns)
 * stamps a thread's first sample that much earlier and the last one of its
 * stop that much later, as the kernel's clock (ktime_get_mono_fast_ns) may
 * stand beside the sampler's CLOCK_MONOTONIC.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/ktau.h>
#include "fake-log.h"

#define MAXFD 1024
#define MAXTH 4096
#define ID_READ (KTAU_ID_SYSCALL_BASE + 0)

static char is_prof[MAXFD];

static struct fth {
	int tid, active;
	uint64_t last_ns, taken, lost, n;
} th[MAXTH];

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static struct fth *find(int tid, int add)
{
	int i;

	for (i = 0; i < MAXTH; i++)
		if (th[i].tid == tid)
			return &th[i];
	for (i = 0; add && i < MAXTH; i++)
		if (!th[i].tid) {
			th[i].tid = tid;
			return &th[i];
		}
	return NULL;
}

int open(const char *path, int flags, ...)
{
	static int (*real)(const char *, int, ...);
	mode_t mode = 0;
	va_list ap;
	int fd;

	if (!strcmp(path, "/proc/ktau/profiles")) {
		fd = memfd_create("profiles", MFD_CLOEXEC);
		if (fd >= 0 && fd < MAXFD)
			is_prof[fd] = 1;
		return fd;
	}
	if (!real)
		real = dlsym(RTLD_NEXT, "open");
	va_start(ap, flags);
	if (flags & (O_CREAT | O_TMPFILE))
		mode = va_arg(ap, mode_t);
	va_end(ap);
	return real(path, flags, mode);
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int close(int fd)
{
	static int (*real)(int);

	if (fd >= 0 && fd < MAXFD)
		is_prof[fd] = 0;
	if (!real)
		real = dlsym(RTLD_NEXT, "close");
	return real(fd);
}

/* The samples of t since its last read into r (room for r->max); stop: its last. */
static int take(struct fth *t, struct ktau_sample_read *r, int stop)
{
	struct ktau_sample *v = (struct ktau_sample *)(uintptr_t)r->buf;
	uint64_t now = mono_ns(), span = now - t->last_ns, n = span / 1000000, i, k;
	const char *sk = getenv("FAKE_SAMPLE_SKEW_NS");
	uint64_t skew = sk ? strtoull(sk, NULL, 0) : 0;

	t->taken += n;
	k = n < r->max ? n : r->max;
	t->lost += n - k;
	for (i = 0; i < k; i++) {
		int user = (t->n + i) % 2 == 0;

		memset(&v[i], 0, sizeof(v[i]));
		v[i].time_ns = t->last_ns + (i + 1) * span / (k + 1);
		v[i].ip = user ? 0x1000 + t->n + i : 0;
		v[i].id = user ? KTAU_ID_USER : ID_READ;
		v[i].flags = user ? KTAU_SAMPLE_USER : 0;
		if (!t->n && !i && v[i].time_ns > skew)
			v[i].time_ns -= skew;
		if (stop && i == k - 1)
			v[i].time_ns += skew;
	}
	t->n += k;
	t->last_ns = now;
	r->nread = (uint32_t)k;
	r->taken = t->taken;
	r->lost = t->lost;
	r->signals = 0;
	r->buffered = 0;
	return 0;
}

int ioctl(int fd, unsigned long req, ...)
{
	static int (*real)(int, unsigned long, ...);
	struct fth *t;
	void *arg;
	va_list ap;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd < 0 || fd >= MAXFD || !is_prof[fd]) {
		if (!real)
			real = dlsym(RTLD_NEXT, "ioctl");
		return real(fd, req, arg);
	}
	if (req == KTAU_IOC_SAMPLE_START) {
		const struct ktau_sample_attr *a = arg;
		int tid = a->tid ? a->tid : gettid();

		if (kill(tid, 0) && errno == ESRCH)
			return -1;
		t = find(tid, 1);
		if (!t) {
			errno = ENOMEM;
			return -1;
		}
		/* A new start (after an exec): the kernel's counters begin again. */
		memset(t, 0, sizeof(*t));
		t->tid = tid;
		t->active = 1;
		t->last_ns = mono_ns();
		logf_("sample start %d", tid);
		return 0;
	}
	if (req == KTAU_IOC_SAMPLE_READ || req == KTAU_IOC_SAMPLE_STOP) {
		struct ktau_sample_read *r = arg;
		int tid = r->tid ? r->tid : gettid();

		t = find(tid, 0);
		if (!t || !t->active) {
			errno = ENOENT;
			return -1;
		}
		/* As the kernel ends a sampling at its thread's exit. */
		if (kill(tid, 0) && errno == ESRCH) {
			logf_("sample gone %d", tid);
			memset(t, 0, sizeof(*t));
			errno = ENOENT;
			return -1;
		}
		take(t, r, req == KTAU_IOC_SAMPLE_STOP);
		if (req == KTAU_IOC_SAMPLE_STOP) {
			t->active = 0;
			logf_("sample stop %d %llu", tid, (unsigned long long)t->n);
		}
		return 0;
	}
	errno = ENOTTY;
	return -1;
}
