// SPDX-License-Identifier: GPL-2.0
/*
 * Cost of a command while N other threads exist, for "ktaud dump --all":
 * starts N threads that block, runs the command once as a member of a KTAU
 * exit collector, and prints its wall time (CLOCK_MONOTONIC ns; guest
 * instructions under QEMU -icount shift=0) and the system calls it made,
 * counted by KTAU itself from the command's final profile.
 *
 * Usage: ktau-bench-threads N command [args...]
 * Output: "threads N ns T syscalls S"
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <linux/ktau.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int done;

static void *sleeper(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	while (!done)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* Is @id a system call? From /proc/ktau/functions ("id group name"). */
static int is_syscall(unsigned int id)
{
	static unsigned char sys[65536];
	static int loaded;

	if (!loaded) {
		FILE *f = fopen("/proc/ktau/functions", "r");
		char line[256], group[32];
		unsigned int i;

		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "%u %31s", &i, group) == 2 && i < sizeof(sys))
				sys[i] = !strcmp(group, "syscall");
		if (f)
			fclose(f);
		loaded = 1;
	}
	return id < sizeof(sys) && sys[id];
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	static char buf[1 << 20];
	unsigned long long syscalls = 0;
	pthread_attr_t attr;
	pthread_t *tid;
	double t0, t1;
	int n, i, fd, status;
	ssize_t len;
	pid_t pid;

	if (argc < 3 || (n = atoi(argv[1])) < 0) {
		fprintf(stderr, "usage: %s N command [args...]\n", argv[0]);
		return 2;
	}
	tid = calloc(n ? n : 1, sizeof(*tid));
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	for (i = 0; i < n; i++) {
		errno = pthread_create(&tid[i], &attr, sleeper, NULL);
		if (errno) {
			fprintf(stderr, "%s: thread %d: %s\n", argv[0], i, strerror(errno));
			return 1;
		}
	}
	fd = open("/proc/ktau/collect", O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "%s: /proc/ktau/collect: %s\n", argv[0], strerror(errno));
		return 1;
	}
	t0 = now_ns();
	pid = fork();
	if (pid == 0) {
		if (ioctl(fd, KTAU_IOC_COLLECT_JOIN) < 0)
			_exit(126);
		close(fd);
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return 1;
	t1 = now_ns();
	len = read(fd, buf, sizeof(buf));
	for (char *p = buf; len > 0 && p < buf + len;) {
		struct ktau_task_rec *r = (struct ktau_task_rec *)p;
		struct ktau_entry *e = (struct ktau_entry *)(p + r->size) - r->nentries;

		for (unsigned int k = 0; k < r->nentries; k++) {
			if (!is_syscall(e[k].id))
				continue;
			syscalls += e[k].count;
			if (getenv("KTAU_BENCH_VERBOSE"))
				fprintf(stderr, "# syscall %u: %llu\n",
					e[k].id - KTAU_ID_SYSCALL_BASE,
					(unsigned long long)e[k].count);
		}
		p += r->size;
	}
	pthread_mutex_lock(&lock);
	done = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	for (i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	printf("threads %d ns %.0f syscalls %llu\n", n, t1 - t0, syscalls);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
