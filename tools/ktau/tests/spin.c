// SPDX-License-Identifier: GPL-2.0
/*
 * ktau-test-spin: a workload for the sampling tests. The main thread and
 * T extra threads each spend U ms of their CPU time in the user-mode
 * function ktau_test_spin_user() and R ms looping on read() of 64 KiB
 * from /dev/zero (time in the kernel, in the read system call).
 *
 * Usage: ktau-test-spin [-u MS] [-r MS] [-t T] [-x] [-p]
 *   -x     exec itself once first (sampling must start again after it)
 *   -p     print "ready <pid>" and repeat the work until SIGTERM
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long user_ms = 300, read_ms;
static int forever;

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The function the user-mode samples must name. */
__attribute__((noinline)) unsigned long ktau_test_spin_user(long ms)
{
	long long end = cpu_ns() + ms * 1000000LL;
	unsigned long x = 0, i;

	while (cpu_ns() < end)
		for (i = 0; i < 200000; i++) {
			x += i ^ (x >> 3);
			__asm__ __volatile__("" : "+r" (x));
		}
	return x;
}

static void read_loop(long ms)
{
	static __thread char buf[1 << 16];
	long long end = cpu_ns() + ms * 1000000LL;
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	while (cpu_ns() < end)
		if (read(fd, buf, sizeof(buf)) < 0)
			break;
	close(fd);
}

static void *work(void *arg)
{
	(void)arg;
	do {
		if (user_ms)
			ktau_test_spin_user(user_ms);
		if (read_ms)
			read_loop(read_ms);
	} while (forever);
	return NULL;
}

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

int main(int argc, char **argv)
{
	int c, t = 0, i, reexec = 0;
	pthread_t th[32];

	while ((c = getopt(argc, argv, "u:r:t:xp")) != -1) {
		switch (c) {
		case 'u': user_ms = atol(optarg); break;
		case 'r': read_ms = atol(optarg); break;
		case 't': t = atoi(optarg); break;
		case 'x': reexec = 1; break;
		case 'p': forever = 1; break;
		default:
			fprintf(stderr, "usage: ktau-test-spin [-u MS] [-r MS] [-t T] [-x] [-p]\n");
			return 2;
		}
	}
	if (t < 0 || t > 32 || user_ms < 0 || read_ms < 0)
		return 2;
	if (reexec) {
		char **nargv = calloc(argc + 1, sizeof(*nargv));
		int j = 0;

		for (i = 0; nargv && i < argc; i++)
			if (strcmp(argv[i], "-x"))
				nargv[j++] = argv[i];
		if (nargv)
			execv("/proc/self/exe", nargv);
		perror("ktau-test-spin: exec");
		return 1;
	}
	signal(SIGTERM, on_term);
	if (forever) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
	}
	for (i = 0; i < t; i++)
		if (pthread_create(&th[i], NULL, work, NULL))
			return 1;
	work(NULL);
	for (i = 0; i < t; i++)
		pthread_join(th[i], NULL);
	return 0;
}
