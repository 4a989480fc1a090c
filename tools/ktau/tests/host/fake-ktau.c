// SPDX-License-Identifier: GPL-2.0
/*
 * fake-ktau.so: an LD_PRELOAD stand-in for the kernel's trace mode on a
 * host without KTAU, so that the host tests can run 'ktaud trace --
 * COMMAND' end to end (the fork, attach and detach, the drain, the raw
 * file, the user routines of libktau's runtime). It is not the kernel:
 * /proc/ktau/version reads "1.5"; /proc/ktau/trace and /proc/ktau/collect
 * open as empty sessions whose ioctls succeed; the trace session returns,
 * once, a chunk of the caller's own thread (ktaud must leave it out) and
 * nothing else (with FAKE_KTAU_NOTRACE set, /proc/ktau/trace is missing,
 * as on a kernel without CONFIG_KTAU_TRACE). Every ioctl is logged to $FAKE_KTAU_LOG ("attach TID
 * FLAGS CAPACITY GROUPS", "detach TID", "join", "stats") with the pid.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/ktau.h>
#include "fake-log.h"

#define MAXFD 1024
static char kind[MAXFD];	/* 'T' trace session, 'C' collector */
static int self_sent;

static int fake_open(const char *path, int *handled)
{
	int fd;

	*handled = 1;
	if (!strcmp(path, "/proc/ktau/version")) {
		fd = memfd_create("version", MFD_CLOEXEC);
		if (fd >= 0 && (write(fd, "1.5\n", 4) != 4 || lseek(fd, 0, SEEK_SET)))
			return -1;
		return fd;
	}
	/* FAKE_KTAU_NOTRACE: a kernel built without trace mode. */
	if (!strcmp(path, "/proc/ktau/trace") && getenv("FAKE_KTAU_NOTRACE")) {
		errno = ENOENT;
		return -1;
	}
	if (!strcmp(path, "/proc/ktau/trace") || !strcmp(path, "/proc/ktau/collect")) {
		fd = memfd_create("session", MFD_CLOEXEC);
		if (fd >= 0 && fd < MAXFD)
			kind[fd] = path[11] == 't' ? 'T' : 'C';
		return fd;
	}
	*handled = 0;
	return -1;
}

int open(const char *path, int flags, ...)
{
	static int (*real)(const char *, int, ...);
	mode_t mode = 0;
	va_list ap;
	int h, fd = fake_open(path, &h);

	if (h)
		return fd;
	if (!real)
		real = dlsym(RTLD_NEXT, "open");
	va_start(ap, flags);
	if (flags & (O_CREAT | O_TMPFILE))
		mode = va_arg(ap, mode_t);
	va_end(ap);
	return real(path, flags, mode);
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int access(const char *path, int mode)
{
	static int (*real)(const char *, int);

	if (!strcmp(path, "/proc/ktau/version"))
		return 0;
	if (!real)
		real = dlsym(RTLD_NEXT, "access");
	return real(path, mode);
}

int close(int fd)
{
	static int (*real)(int);

	if (fd >= 0 && fd < MAXFD)
		kind[fd] = 0;
	if (!real)
		real = dlsym(RTLD_NEXT, "close");
	return real(fd);
}

int ioctl(int fd, unsigned long req, ...)
{
	static int (*real)(int, unsigned long, ...);
	void *arg;
	va_list ap;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd < 0 || fd >= MAXFD || !kind[fd]) {
		if (!real)
			real = dlsym(RTLD_NEXT, "ioctl");
		return real(fd, req, arg);
	}
	if (req == KTAU_IOC_TRACE_ATTACH) {
		const struct ktau_trace_attr *a = arg;

		logf_("attach %d %u %u %llu", a->tid, a->flags, a->capacity,
		      (unsigned long long)a->groups);
	} else if (req == KTAU_IOC_TRACE_DETACH) {
		logf_("detach %d", *(const __s32 *)arg);
	} else if (req == KTAU_IOC_TRACE_STATS) {
		memset(arg, 0, sizeof(struct ktau_trace_stats));
	} else if (req == KTAU_IOC_COLLECT_JOIN) {
		logf_("join");
	} else if (req == KTAU_IOC_COLLECT_STATS) {
		memset(arg, 0, sizeof(struct ktau_collect_stats));
	} else {
		errno = ENOTTY;
		return -1;
	}
	return 0;
}

ssize_t read(int fd, void *buf, size_t n)
{
	static ssize_t (*real)(int, void *, size_t);
	struct {
		struct ktau_trace_chunk c;
		struct ktau_trace_rec r;
	} ch;

	if (fd >= 0 && fd < MAXFD && kind[fd] == 'T') {
		/* Once: the caller's own records from before its detach. */
		if (self_sent || n < sizeof(ch))
			return 0;
		self_sent = 1;
		memset(&ch, 0, sizeof(ch));
		ch.c.size = sizeof(ch);
		ch.c.nrecs = 1;
		ch.c.tid = ch.c.pid = getpid();
		ch.c.flags = KTAU_TRACE_DETACHED;
		strcpy(ch.c.comm, "ktaud");
		ch.r.start_ns = 1000;
		ch.r.end_ns = 2000;
		ch.r.id = KTAU_ID_SYSCALL_BASE + 57;	/* fork */
		ch.r.kind = KTAU_TRACE_CALL;
		memcpy(buf, &ch, sizeof(ch));
		return sizeof(ch);
	}
	if (fd >= 0 && fd < MAXFD && kind[fd] == 'C')
		return 0;
	if (!real)
		real = dlsym(RTLD_NEXT, "read");
	return real(fd, buf, n);
}
