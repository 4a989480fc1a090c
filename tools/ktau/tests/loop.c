// SPDX-License-Identifier: GPL-2.0
/*
 * ktau-test-loop: a workload with known kernel activity for the tests of
 * ktaud. Each of the main thread, T extra threads and F child processes
 * makes exactly N getppid() system calls (straight to the kernel) and
 * K sleeps of MS milliseconds.
 *
 * Usage: ktau-test-loop [-n N] [-t T] [-f F] [-k K] [-m MS] [-p] [-x CODE]
 *   -p     then print "ready <pid> <CLOCK_MONOTONIC ns>" and wait for SIGTERM
 *          (the threads stay alive too)
 *   -x     exit with CODE (after the children and threads have ended)
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static long n, k, ms;
static int pause_at_end;
static pthread_barrier_t barrier;

static void work(void)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	long i;

	for (i = 0; i < n; i++)
		syscall(SYS_getppid);
	for (i = 0; i < k; i++)
		nanosleep(&ts, NULL);
}

static void *thread_fn(void *arg)
{
	(void)arg;
	work();
	if (pause_at_end) {
		/* Stay alive, so that a snapshot finds every thread. */
		pthread_barrier_wait(&barrier);
		for (;;)
			pause();
	}
	return NULL;
}

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

int main(int argc, char **argv)
{
	int c, t = 0, f = 0, code = 0, i;
	pthread_t th[64];
	struct timespec now;

	while ((c = getopt(argc, argv, "n:t:f:k:m:px:")) != -1) {
		switch (c) {
		case 'n': n = atol(optarg); break;
		case 't': t = atoi(optarg); break;
		case 'f': f = atoi(optarg); break;
		case 'k': k = atol(optarg); break;
		case 'm': ms = atol(optarg); break;
		case 'p': pause_at_end = 1; break;
		case 'x': code = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-n N] [-t T] [-f F] [-k K] [-m MS] [-p] [-x CODE]\n",
				argv[0]);
			return 2;
		}
	}
	if (t > 64)
		t = 64;
	for (i = 0; i < f; i++) {
		pid_t p = fork();

		if (p == 0) {
			work();
			_exit(0);
		}
	}
	pthread_barrier_init(&barrier, NULL, t + 1);
	for (i = 0; i < t; i++)
		pthread_create(&th[i], NULL, thread_fn, NULL);
	work();
	if (pause_at_end)
		pthread_barrier_wait(&barrier);
	else
		for (i = 0; i < t; i++)
			pthread_join(th[i], NULL);
	while (wait(NULL) > 0)
		;
	if (pause_at_end) {
		signal(SIGTERM, on_term);
		clock_gettime(CLOCK_MONOTONIC, &now);
		printf("ready %d %llu\n", getpid(),
		       (unsigned long long)now.tv_sec * 1000000000ULL + now.tv_nsec);
		fflush(stdout);
		for (;;)
			pause();
	}
	return code;
}
