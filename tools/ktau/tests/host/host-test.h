/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What host-tests and user-tests share: the checks, and the table of
 * tests of which one runs an invocation:
 *
 *	PROG --list        the names of the tests
 *	PROG NAME ARG      run one: exit 0 pass, 1 fail, 77 skip
 */
#ifndef KTAU_HOST_TEST_H
#define KTAU_HOST_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#define FAIL(...) do { printf("# %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); \
		       printf("\n"); return 1; } while (0)
#define CHECK(cond, ...) do { if (!(cond)) FAIL(__VA_ARGS__); } while (0)

struct host_test {
	const char *name;
	int (*fn)(void);
};

#define NTESTS(tests) (sizeof(tests) / sizeof((tests)[0]))

/*
 * "--list" or "NAME ARG" (ARG named arg in the usage): -1 to go on with
 * NAME and ARG, else what to exit with.
 */
static inline int test_args(int argc, char **argv, const struct host_test *tests, size_t n,
			    const char *arg)
{
	size_t i;

	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < n; i++)
			puts(tests[i].name);
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: %s --list | %s NAME %s\n", argv[0], argv[0], arg);
		return 2;
	}
	return -1;
}

/* The test of that name; NULL (said) if none. */
static inline const struct host_test *test_find(const struct host_test *tests, size_t n,
						const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(name, tests[i].name))
			return &tests[i];
	printf("# no test '%s'\n", name);
	return NULL;
}

/*
 * Processes 0..n-1 running fn(i, arg) all at once (released together
 * from a pipe), as MPI ranks do; each exits with what fn returns (from
 * fn, exit() runs the atexit handlers). 0 when every one exited with 0.
 */
static inline int run_together(int n, int (*fn)(int i, void *arg), void *arg)
{
	int go[2], i, status, ok = 1;
	pid_t pid;

	if (pipe(go))
		return -1;
	fflush(stdout);
	for (i = 0; i < n; i++) {
		pid = fork();
		if (pid < 0)
			ok = 0;
		if (pid == 0) {
			char c;

			close(go[1]);
			if (read(go[0], &c, 1) < 0)
				_exit(3);
			exit(fn(i, arg));
		}
	}
	close(go[0]);
	close(go[1]);
	while ((pid = wait(&status)) > 0)
		ok &= WIFEXITED(status) && !WEXITSTATUS(status);
	return ok ? 0 : -1;
}

#endif
