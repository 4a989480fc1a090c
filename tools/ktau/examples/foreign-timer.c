// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * foreign-timer: a timer library that is not libktau's runtime (as TAU's
 * own timers would be) charges the kernel's work to its timers through
 * libktau's shared-page API, and a program that uses it. Linked with
 * libktau alone (the reader): no -finstrument-functions hooks, no
 * runtime.
 *
 * The timer library is the ft_* part: at each start and stop it reads
 * the clock and the page (plain loads), and a region's kernel time is the
 * difference of the page's totals between its start and its stop. The
 * program times three regions: "write" (N write() calls to /dev/null),
 * "sleep" (S sleeps of M ms) and "compute" (a loop with no system call),
 * and prints, per region, one line:
 *
 *   region NAME calls C wall_ns W oncpu_ns K offcpu_ns F write_calls X
 *
 * write_calls is the count of the kernel routine "write" charged to the
 * region (ktau_page_routine). With -t it also checks the API's rules: a
 * second page in the same thread is refused (EBUSY), another thread may
 * read the page but not unregister it (EPERM), and the page of a thread
 * that is gone, or a forked child's copy, is freed (0). Exit status: 0; 2 bad
 * usage; 3 no KTAU shared pages on this kernel; 1 another error.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/ktau.h>

#include "libktau.h"

/* ---- the foreign timer library ---------------------------------- */

#define FT_MAX	8

struct ft_region {
	const char *name;
	uint64_t calls, wall_ns, oncpu_ns, offcpu_ns, routine_calls;
	/* at the start */
	uint64_t t0, on0, off0, r0;
};

static struct {
	struct ktau_page *page;
	uint32_t routine;		/* a KTAU function ID to count */
	struct ft_region r[FT_MAX];
	int n;
} ft;

static uint64_t ft_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The page's totals now (on-CPU, off-CPU, the routine's calls). */
static int ft_read(uint64_t *on, uint64_t *off, uint64_t *calls)
{
	struct ktau_page_totals t;
	struct ktau_page_routine r;
	int err = ktau_page_read(ft.page, &t);

	if (err)
		return err;
	*on = t.oncpu_ns;
	*off = t.offcpu_ns;
	err = ktau_page_routine(ft.page, ft.routine, &r);
	if (err && err != -ENOENT)
		return err;
	*calls = r.count;	/* 0 for -ENOENT */
	return 0;
}

static int ft_init(uint32_t routine)
{
	ft.routine = routine;
	return ktau_page_register(&ft.page);
}

static struct ft_region *ft_region(const char *name)
{
	int i;

	for (i = 0; i < ft.n; i++)
		if (!strcmp(ft.r[i].name, name))
			return &ft.r[i];
	if (ft.n == FT_MAX)
		return NULL;
	ft.r[ft.n].name = name;
	return &ft.r[ft.n++];
}

static int ft_start(const char *name)
{
	struct ft_region *r = ft_region(name);

	if (!r)
		return -ENOSPC;
	r->t0 = ft_now();
	return ft_read(&r->on0, &r->off0, &r->r0);
}

static int ft_stop(const char *name)
{
	struct ft_region *r = ft_region(name);
	uint64_t on, off, calls;
	int err;

	if (!r)
		return -ENOSPC;
	err = ft_read(&on, &off, &calls);
	if (err)
		return err;
	/* A KTAU reset meanwhile may restart an entry: never negative. */
	r->calls++;
	r->wall_ns += ft_now() - r->t0;
	r->oncpu_ns += on > r->on0 ? on - r->on0 : 0;
	r->offcpu_ns += off > r->off0 ? off - r->off0 : 0;
	r->routine_calls += calls > r->r0 ? calls - r->r0 : 0;
	return 0;
}

static void ft_report(FILE *f)
{
	int i;

	for (i = 0; i < ft.n; i++)
		fprintf(f, "region %s calls %llu wall_ns %llu oncpu_ns %llu offcpu_ns %llu "
			"write_calls %llu\n", ft.r[i].name, (unsigned long long)ft.r[i].calls,
			(unsigned long long)ft.r[i].wall_ns, (unsigned long long)ft.r[i].oncpu_ns,
			(unsigned long long)ft.r[i].offcpu_ns,
			(unsigned long long)ft.r[i].routine_calls);
}

/* ---- the program ------------------------------------------------- */

/* -t: another thread reads the page, and may not unregister it. */
static void *other_thread(void *arg)
{
	struct ktau_page_totals t;

	(void)arg;
	if (ktau_page_read(ft.page, &t) || !t.updates)
		return "another thread could not read the page";
	if (ktau_page_unregister(ft.page) != -EPERM)
		return "another thread's unregister was not refused with EPERM";
	return NULL;
}

/* -t: a thread that registers a page and exits, leaving it. */
static void *leaver(void *arg)
{
	return ktau_page_register(arg) ? "a new thread could not register a page" : NULL;
}

static int rules(void)
{
	struct ktau_page *second, *left = NULL;
	pthread_t th;
	void *why;
	int err, status;
	pid_t pid;

	err = ktau_page_register(&second);
	if (err != -EBUSY) {
		fprintf(stderr, "ktau-foreign-timer: a second page in one thread: %s, not EBUSY\n",
			err ? strerror(-err) : "registered");
		return 1;
	}
	if (pthread_create(&th, NULL, other_thread, NULL) || pthread_join(th, &why))
		return 1;
	if (why) {
		fprintf(stderr, "ktau-foreign-timer: %s\n", (const char *)why);
		return 1;
	}
	/* A gone thread's page, and a forked child's copy, are only freed. */
	if (pthread_create(&th, NULL, leaver, &left) || pthread_join(th, &why) || why || !left) {
		fprintf(stderr, "ktau-foreign-timer: %s\n", why ? (const char *)why : "leaver");
		return 1;
	}
	err = ktau_page_unregister(left);
	if (err) {
		fprintf(stderr, "ktau-foreign-timer: the page of a thread that is gone: %s\n",
			strerror(-err));
		return 1;
	}
	pid = fork();
	if (pid == 0)
		_exit(ktau_page_unregister(ft.page) ? 1 : 0);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "ktau-foreign-timer: a forked child could not free its copy\n");
		return 1;
	}
	printf("rules ok\n");
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: ktau-foreign-timer [-t] [-n WRITES] [-s SLEEPS] [-m MS] [-c ITERS]\n"
		"Times three regions with a timer library of its own that reads the\n"
		"thread's KTAU shared page (libktau's ktau_page_* API) and prints, per\n"
		"region, its wall time, its kernel time on and off the CPU and its\n"
		"write() calls.\n");
}

static int check(int err, const char *what)
{
	if (err)
		fprintf(stderr, "ktau-foreign-timer: %s: %s\n", what, strerror(-err));
	return err;
}

int main(int argc, char **argv)
{
	long writes = 50, sleeps = 3, ms = 20, iters = 20000000, i;
	volatile uint64_t x = 1;
	struct timespec ts;
	int c, fd, err, test = 0;
	char *end;

	while ((c = getopt(argc, argv, "n:s:m:c:th")) != -1) {
		long *v = c == 'n' ? &writes : c == 's' ? &sleeps : c == 'm' ? &ms :
			  c == 'c' ? &iters : NULL;

		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == 't') {
			test = 1;
			continue;
		}
		if (!v) {
			usage(stderr);
			return 2;
		}
		errno = 0;
		*v = strtol(optarg, &end, 10);
		if (errno || *end || *v < 0) {
			fprintf(stderr, "ktau-foreign-timer: -%c '%s': not a count\n", c, optarg);
			return 2;
		}
	}
	err = ft_init(KTAU_ID_SYSCALL_BASE + SYS_write);
	if (err == -ENOENT || err == -ENOTTY) {
		fprintf(stderr, "ktau-foreign-timer: this kernel has no KTAU shared pages (%s); "
			"boot a kernel with CONFIG_KTAU=y (ABI 1.1 or later)\n", strerror(-err));
		return 3;
	}
	if (check(err, "registering the shared page"))
		return 1;
	if (test && rules())
		return 1;
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		perror("ktau-foreign-timer: /dev/null");
		return 1;
	}
	if (check(ft_start("write"), "ft_start"))
		return 1;
	for (i = 0; i < writes; i++)
		if (write(fd, "x", 1) != 1)
			return 1;
	if (check(ft_stop("write"), "ft_stop"))
		return 1;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = ms % 1000 * 1000000;
	for (i = 0; i < sleeps; i++) {
		if (check(ft_start("sleep"), "ft_start"))
			return 1;
		nanosleep(&ts, NULL);
		if (check(ft_stop("sleep"), "ft_stop"))
			return 1;
	}
	if (check(ft_start("compute"), "ft_start"))
		return 1;
	for (i = 0; i < iters; i++)
		x = x * 2862933555777941757ULL + 3037000493ULL;
	if (check(ft_stop("compute"), "ft_stop"))
		return 1;
	close(fd);
	ft_report(stdout);
	return check(ktau_page_unregister(ft.page), "unregistering the page") ? 1 : 0;
}
