// SPDX-License-Identifier: GPL-2.0
/*
 * Loader of syscount.bpf.o, the eBPF peer of scripts/bench.sh: loads the
 * object with libbpf, attaches its two raw tracepoint programs, creates
 * READY (when given) and waits for SIGINT or SIGTERM; then prints how
 * many tasks and system calls it accounted, and the busiest entries, and
 * exits (which detaches the programs).
 *
 * Usage: ktau-syscount OBJ [READY]
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "syscount.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	struct key k, next, top = { 0 };
	struct sc_stat v, topv = { 0 };
	unsigned long long calls = 0;
	struct bpf_program *p;
	struct bpf_object *obj;
	struct bpf_map *map;
	unsigned int keys = 0;
	int fd, err, first = 1;

	if (argc < 2) {
		fprintf(stderr, "usage: %s OBJ [READY]\n", argv[0]);
		return 2;
	}
	libbpf_set_print(print_libbpf);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "%s: open %s: %s\n", argv[0], argv[1], strerror(errno));
		return 1;
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "%s: load: %s\n", argv[0], strerror(-err));
		return 1;
	}
	bpf_object__for_each_program(p, obj) {
		if (!bpf_program__attach(p)) {
			fprintf(stderr, "%s: attach %s: %s\n", argv[0],
				bpf_program__name(p), strerror(errno));
			return 1;
		}
	}
	map = bpf_object__find_map_by_name(obj, "stats");
	if (!map)
		return 1;
	fd = bpf_map__fd(map);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (argc > 2)
		close(open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644));
	while (!stop)
		pause();
	while (bpf_map_get_next_key(fd, first ? NULL : &k, &next) == 0) {
		first = 0;
		k = next;
		if (bpf_map_lookup_elem(fd, &k, &v))
			continue;
		keys++;
		calls += v.count;
		if (v.count > topv.count)
			top = k, topv = v;
	}
	printf("syscount: %u task/syscall entries, %llu calls; busiest: tid %u syscall %u: %llu calls, %llu ns\n",
	       keys, calls, top.tid, top.nr, (unsigned long long)topv.count,
	       (unsigned long long)topv.total_ns);
	bpf_object__close(obj);
	return keys ? 0 : 1;
}
