// SPDX-License-Identifier: GPL-2.0
/*
 * merge-demo: a small program, built with -finstrument-functions and
 * linked with libktau, whose profile shows kernel time charged to the
 * user routines that caused it. Each routine does one kind of thing:
 *
 *   compute      arithmetic only: no system call, almost no kernel time
 *   sleeper      nanosleep() S times: scheduler (off-CPU) time
 *   write_file   exactly N write() calls to a file
 *   read_file    reads the file back
 *   pipe_demo    a producer and a consumer thread and a pipe between them:
 *                producer/produce_one write M messages, consumer/
 *                consume_one read them (each thread its own profile)
 *   fork_child   (-f) a child process that writes N/2 times and exits:
 *                its profile goes to DIR/fork-<pid>/
 *
 * On a KTAU kernel the profile (DIR, default ktau-profile) has for
 * example "main => sleeper => SCHED" and "main => write_file => write"
 * with exactly N calls. Without KTAU it has the user routines only.
 *
 *   ktau-merge-demo [-o DIR] [-n N] [-m M] [-s MS] [-S S] [-c ITERS] [-f] [-q]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "libktau.h"

#define NOINLINE __attribute__((noinline))
#define MSG 64

static int pipefd[2];
static long nmsg = 256;
static char filebuf[4096];

static NOINLINE unsigned long compute(unsigned long iters)
{
	unsigned long x = 88172645463325252ul, i;

	/* xorshift: registers only, no memory traffic, no system call */
	for (i = 0; i < iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

static NOINLINE void sleeper(long ms, int times)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	int i;

	for (i = 0; i < times; i++)
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
}

static NOINLINE int write_file(const char *path, long n)
{
	long i;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	for (i = 0; i < n; i++) {
		if (write(fd, filebuf, sizeof(filebuf)) != (ssize_t)sizeof(filebuf)) {
			close(fd);
			return -EIO;
		}
	}
	close(fd);
	return 0;
}

static NOINLINE long read_file(const char *path)
{
	long total = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((r = read(fd, filebuf, sizeof(filebuf))) > 0)
		total += r;
	close(fd);
	return total;
}

static NOINLINE int produce_one(long i)
{
	char msg[MSG];

	memset(msg, (int)(i & 0x7f), sizeof(msg));
	return write(pipefd[1], msg, sizeof(msg)) == (ssize_t)sizeof(msg) ? 0 : -1;
}

static NOINLINE void *producer(void *arg)
{
	long i;

	(void)arg;
	for (i = 0; i < nmsg; i++)
		if (produce_one(i))
			break;
	close(pipefd[1]);
	return NULL;
}

static NOINLINE ssize_t consume_one(void)
{
	char msg[MSG];
	size_t got = 0;
	ssize_t r;

	while (got < sizeof(msg)) {
		r = read(pipefd[0], msg + got, sizeof(msg) - got);
		if (r <= 0)
			return got ? (ssize_t)got : r;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static NOINLINE void *consumer(void *arg)
{
	long *count = arg;

	while (consume_one() > 0)
		(*count)++;
	return NULL;
}

static NOINLINE int pipe_demo(void)
{
	pthread_t p, c;
	long got = 0;

	if (pipe(pipefd))
		return -errno;
	if (pthread_create(&c, NULL, consumer, &got))
		return -EAGAIN;
	if (pthread_create(&p, NULL, producer, NULL)) {
		close(pipefd[1]);
		pthread_join(c, NULL);
		return -EAGAIN;
	}
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	close(pipefd[0]);
	return got == nmsg ? 0 : -EIO;
}

static NOINLINE int fork_child(const char *path, long n)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* The child's profile: DIR/fork-<pid>/ (written by exit()). */
		exit(write_file(path, n) ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return -ECHILD;
	return (int)pid;
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: ktau-merge-demo [options]\n\n"
"Runs routines that compute, sleep, write and read a file, and pass messages\n"
"through a pipe between two threads, with libktau's -finstrument-functions\n"
"timers; on a KTAU kernel their kernel time is charged to them. The merged\n"
"TAU profile is written at exit.\n\n"
"  -o DIR     profile directory (default: $KTAU_PROFILE_DIR or ktau-profile)\n"
"  -n N       write() calls of write_file (default 64)\n"
"  -m M       messages through the pipe (default 256)\n"
"  -s MS      milliseconds of each sleep (default 20)\n"
"  -S S       sleeps (default 3)\n"
"  -c ITERS   iterations of compute (default 20000000)\n"
"  -f         also fork a child that writes N/2 times (profile in DIR/fork-<pid>)\n"
"  -F FILE    the scratch file (default: DIR.data in /tmp)\n"
"  -q         quiet\n");
}

int main(int argc, char **argv)
{
	unsigned long iters = 20000000;
	long nwrites = 64, sleep_ms = 20, total;
	int c, sleeps = 3, quiet = 0, do_fork = 0, reg, ret = 0, child = 0;
	const char *dir = NULL, *file = NULL;
	char fbuf[64];

	while ((c = getopt(argc, argv, "o:n:m:s:S:c:fF:qh")) != -1) {
		switch (c) {
		case 'o': dir = optarg; break;
		case 'n': nwrites = atol(optarg); break;
		case 'm': nmsg = atol(optarg); break;
		case 's': sleep_ms = atol(optarg); break;
		case 'S': sleeps = atoi(optarg); break;
		case 'c': iters = strtoul(optarg, NULL, 10); break;
		case 'f': do_fork = 1; break;
		case 'F': file = optarg; break;
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || nwrites < 0 || nmsg < 0 || sleep_ms < 0 || sleeps < 0) {
		usage(stderr);
		return 2;
	}
	if (dir && ktau_user_output(dir)) {
		fprintf(stderr, "ktau-merge-demo: out of memory\n");
		return 1;
	}
	if (!file) {
		snprintf(fbuf, sizeof(fbuf), "/tmp/ktau-merge-demo.%d", (int)getpid());
		file = fbuf;
	}
	reg = ktau_user_init();
	if (!quiet)
		printf("merge-demo: kernel time charged to user routines: %s\n",
		       reg > 0 ? "yes" : "no (no KTAU shared page; KTAU_VERBOSE=1 says why)");

	compute(iters);
	sleeper(sleep_ms, sleeps);
	if (write_file(file, nwrites)) {
		fprintf(stderr, "ktau-merge-demo: cannot write %s: %s\n", file, strerror(errno));
		ret = 1;
	}
	total = read_file(file);
	if (total != nwrites * (long)sizeof(filebuf)) {
		fprintf(stderr, "ktau-merge-demo: read %ld bytes of %s, not %ld\n", total, file,
			nwrites * (long)sizeof(filebuf));
		ret = 1;
	}
	if (pipe_demo()) {
		fprintf(stderr, "ktau-merge-demo: the pipe between the threads failed\n");
		ret = 1;
	}
	if (do_fork) {
		child = fork_child(file, nwrites / 2);
		if (child < 0) {
			fprintf(stderr, "ktau-merge-demo: the child failed\n");
			ret = 1;
		}
	}
	unlink(file);
	if (!quiet) {
		printf("merge-demo: compute %lu iterations, %d x %ld ms sleep, %ld writes, "
		       "%ld messages", iters, sleeps, sleep_ms, nwrites, nmsg);
		if (child > 0)
			printf(", child %d", child);
		printf("; profile written at exit\n");
	}
	return ret;
}
