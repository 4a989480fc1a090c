// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud probe: dynamic probes on kernel functions (ABI 1.2). A probe
 * lives as long as the open file it was added on, so 'probe add' holds
 * its probes: while a command runs (profiled as 'ktaud run' does), or in
 * the foreground until SIGINT or SIGTERM. 'probe remove' and 'probe
 * list' work from anywhere.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ktaud.h"
#include "sample.h"

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud probe add [options] FUNC... [-- COMMAND [ARGS...]]\n"
"       ktaud probe remove FUNC|ID...\n"
"       ktaud probe list\n\n"
"Dynamic probes: entry/exit timers on kernel functions (FUNC, or\n"
"MODULE:FUNC), counted in every task's profile like the other kernel\n"
"routines (group dynamic, named after the function), nested in the system\n"
"call, fault or interrupt in progress. A probe lives as long as the\n"
"'probe add' that holds it:\n"
"  with a command, while the command runs: it is profiled as 'ktaud run'\n"
"  does (the same options and output), the probed functions' calls\n"
"  summed at the end, and ktaud exits with its status;\n"
"  without one, until SIGINT or SIGTERM (or until all its probes were\n"
"  removed): meanwhile 'ktaud dump' shows them and 'ktaud probe remove'\n"
"  removes them.\n"
"Adding and removing need CAP_PERFMON or CAP_SYS_ADMIN; at most 64 probes\n"
"exist at one time, system-wide. 'list' prints the function ID, function,\n"
"owner (pid and name of the process that holds it) and missed calls (not\n"
"timed: too many calls in progress at once).\n\n"
"Options of add with a command: those of 'ktaud run' (-o DIR, -f,\n"
"-j, --json[=FILE], --folded[=FILE], --save FILE, -n N, -q).\n"
"  -h, --help           this help\n\n"
"Exit status: 2 for a function the kernel does not have, 1 for one it\n"
"cannot probe (not traceable, inlined, KTAU's own) or already probed, or\n"
"too many probes; 3 when the kernel has no probes; 4 without the\n"
"capability.\n");
}

/* The exit code of an error of the probes. */
static int probe_exit_code(int err, int add)
{
	switch (-err) {
	case EPERM:
	case EACCES:
		return EX_KT_PERM;
	case ENOTTY:
	case EOPNOTSUPP:
		return EX_KT_NOKTAU;
	case ENOENT:
		return add ? EX_KT_USAGE : EX_KT_FAIL;
	default:
		return EX_KT_FAIL;
	}
}

int probe_report(int err, int add, const char *func)
{
	err_msg("%s %s: %s", add ? "add" : "remove", func, ktau_probe_strerror(err, add));
	return probe_exit_code(err, add);
}

int probes_open_report(void)
{
	int fd = ktau_probes_open();

	if (fd >= 0)
		return fd;
	if (fd == -ENOENT)
		return -report(fd, "open /proc/ktau/probes");
	err_msg("open /proc/ktau/probes: %s", ktau_probe_strerror(fd, 1));
	return -probe_exit_code(fd, 1);
}

/* A function name as the ABI takes it: 1..63 bytes, no space. */
static int check_name(const char *cmd, const char *name)
{
	if (!*name || strlen(name) >= KTAU_LIB_PROBE_NAME_LEN || strpbrk(name, " \t\n"))
		return usage_err(cmd, "bad function name '%s': a kernel function (or "
				 "module:function) of at most %d bytes", name,
				 KTAU_LIB_PROBE_NAME_LEN - 1);
	return 0;
}

/* The probes of one 'probe add'. */
struct held {
	char **names;
	uint32_t *ids;
	size_t n;
};

/* After the command: the probed functions' totals in its tasks. */
static void probe_totals(const struct ktau_snap *snap, const struct ktau_registry *reg, void *arg)
{
	const struct held *h = arg;
	char b1[32], b2[32];
	size_t i, j;

	(void)reg;
	for (i = 0; i < h->n; i++) {
		uint64_t calls = 0, incl = 0, excl = 0;

		for (j = 0; j < snap->ntasks; j++) {
			const struct ktau_func_stat *e = ktau_task_find(&snap->tasks[j], h->ids[i]);

			if (e) {
				calls += e->count;
				incl += e->incl_ns;
				excl += e->excl_ns;
			}
		}
		fprintf(stderr, "ktaud: probe %s: %llu calls, inclusive %s, exclusive %s\n",
			h->names[i], (unsigned long long)calls, fmt_ns(b1, sizeof(b1), incl),
			fmt_ns(b2, sizeof(b2), excl));
	}
}

static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
	stop_sig = sig;
}

/* How many of our probes are left (list read every second). */
static size_t probes_left(pid_t self)
{
	struct ktau_probe_info *v;
	size_t n, i, left = 0;

	if (ktau_probes_list(&v, &n))
		return 1;	/* cannot tell: keep holding */
	for (i = 0; i < n; i++)
		left += v[i].owner == self;
	free(v);
	return left;
}

static int hold(const struct held *h)
{
	struct sigaction sa = { .sa_handler = on_stop };
	struct timespec ts = { 1, 0 };
	size_t i;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	for (i = 0; i < h->n; i++)
		printf("%u %s\n", h->ids[i], h->names[i]);
	fflush(stdout);
	fprintf(stderr, "ktaud: holding %zu probe%s until SIGINT or SIGTERM (Ctrl-C, or kill %d); "
		"'ktaud dump' shows their calls, 'ktaud probe remove FUNC' removes one\n", h->n,
		h->n == 1 ? "" : "s", (int)getpid());
	while (!stop_sig) {
		nanosleep(&ts, NULL);
		if (!stop_sig && !probes_left(getpid())) {
			fprintf(stderr, "ktaud: all its probes were removed; exiting\n");
			return EX_KT_OK;
		}
	}
	fprintf(stderr, "ktaud: signal %d: removing the probes\n", (int)stop_sig);
	return EX_KT_OK;
}

static int probe_add(int argc, char **argv)
{
	static const struct option opts[] = {
		RUN_OUTPUT_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct run_args ra = { .oo = { .tau_dir = "ktau-profile", .dense = 1 }, .top = 5,
			       .cmd_name = "probe add" };
	struct held h = { 0 };
	int c, i, ret, fd, ncmd = 0, nfunc, dash = -1;

	/* FUNC... then, after "--", the command: find the "--" first. */
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dash = i;
			break;
		}
	nfunc = dash < 0 ? argc : dash;
	while ((c = getopt_long(nfunc, argv, "o:j::n:qfh", opts, NULL)) != -1) {
		if (c == 'h') {
			help(stdout);
			return EX_KT_OK;
		}
		ret = run_output_option(&ra, c, optarg);
		if (ret)
			return ret < 0 ? usage_err("probe", "bad option") : ret;
	}
	if (optind >= nfunc)
		return usage_err("probe", "no function to probe: ktaud probe add FUNC... "
				 "[-- COMMAND ARGS...]");
	if (dash >= 0) {
		ncmd = argc - dash - 1;
		if (!ncmd)
			return usage_err("probe", "no command after '--'");
		ra.cmd = argv + dash + 1;
	}
	if (!*ra.oo.tau_dir)
		return usage_err("probe", "-o needs a directory name");
	for (i = optind; i < nfunc; i++) {
		ret = check_name("probe", argv[i]);
		if (ret)
			return ret;
	}
	if (ncmd) {
		ret = prepare_outputs(&ra.oo);
		if (ret) {
			free_outputs(&ra.oo);
			return ret;
		}
	}
	fd = probes_open_report();
	if (fd < 0) {
		free_outputs(&ra.oo);
		return -fd;
	}
	h.names = argv + optind;
	h.ids = calloc(nfunc - optind, sizeof(*h.ids));
	if (!h.ids) {
		close(fd);
		free_outputs(&ra.oo);
		return report(-ENOMEM, "probe add");
	}
	/* All or none: closing fd takes back those added before an error. */
	for (i = optind; i < nfunc; i++) {
		ret = ktau_probe_add(fd, argv[i], &h.ids[h.n]);
		if (ret) {
			ret = probe_report(ret, 1, argv[i]);
			if (h.n)
				err_msg("%s added before %s %s removed", h.n == 1 ? "the probe" :
					"the probes", argv[i], h.n == 1 ? "is" : "are");
			free(h.ids);
			close(fd);
			free_outputs(&ra.oo);
			return ret;
		}
		h.n++;
	}
	if (ncmd) {
		if (!ra.quiet)
			for (i = 0; i < (int)h.n; i++)
				fprintf(stderr, "ktaud: probing %s (function ID %u)\n", h.names[i],
					h.ids[i]);
		ra.inspect = probe_totals;
		ra.inspect_arg = &h;
		if (ra.quiet)
			ra.inspect = NULL;
		ret = run_command(&ra);
	} else {
		ret = hold(&h);
	}
	free(h.ids);
	close(fd);
	free_outputs(&ra.oo);
	return ret;
}

static int probe_remove(int argc, char **argv)
{
	unsigned long id;
	int i, fd, ret, rc = EX_KT_OK;

	if (argc < 2)
		return usage_err("probe", "no function to remove: ktaud probe remove FUNC|ID...");
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			help(stdout);
			return EX_KT_OK;
		}
		ret = parse_uint(argv[i], &id) ? check_name("probe", argv[i]) : 0;
		if (ret)
			return ret;
	}
	fd = probes_open_report();
	if (fd < 0)
		return -fd;
	for (i = 1; i < argc; i++) {
		if (!parse_uint(argv[i], &id))
			ret = id > UINT32_MAX ? -ENOENT : ktau_probe_remove_id(fd, (uint32_t)id);
		else
			ret = ktau_probe_remove(fd, argv[i]);
		if (ret) {
			ret = probe_report(ret, 0, argv[i]);
			if (rc == EX_KT_OK)
				rc = ret;
		}
	}
	close(fd);
	return rc;
}

static int probe_list(int argc, char **argv)
{
	struct ktau_probe_info *v;
	size_t n, i;
	char comm[64], path[128];
	int ret;

	if (argc > 1) {
		if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
			help(stdout);
			return EX_KT_OK;
		}
		return usage_err("probe", "list takes no arguments");
	}
	ret = ktau_probes_list(&v, &n);
	if (ret == -ENOTTY) {
		err_msg("list: %s", ktau_probe_strerror(ret, 0));
		return probe_exit_code(ret, 0);
	}
	if (ret)
		return report(ret, "read /proc/ktau/probes");
	if (!n) {
		fprintf(stderr, "ktaud: no probes\n");
		return EX_KT_OK;
	}
	printf("%-6s %-40s %-24s %s\n", "id", "function", "owner", "missed");
	for (i = 0; i < n; i++) {
		FILE *f;

		comm[0] = '\0';
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)v[i].owner);
		f = v[i].owner ? fopen(path, "r") : NULL;
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = '\0';
			comm[strcspn(comm, "\n")] = '\0';
			fclose(f);
		}
		snprintf(path, sizeof(path), "%d%s%s%s", (int)v[i].owner, comm[0] ? " (" : "", comm,
			 comm[0] ? ")" : "");
		printf("%-6u %-40s %-24s %llu\n", v[i].id, v[i].function, path,
		       (unsigned long long)v[i].missed);
	}
	free(v);
	return EX_KT_OK;
}

int cmd_probe(int argc, char **argv)
{
	if (argc < 2)
		return usage_err("probe", "add, remove or list?");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		help(stdout);
		return EX_KT_OK;
	}
	if (!strcmp(argv[1], "add"))
		return probe_add(argc - 1, argv + 1);
	if (!strcmp(argv[1], "remove") || !strcmp(argv[1], "rm"))
		return probe_remove(argc - 1, argv + 1);
	if (!strcmp(argv[1], "list") || !strcmp(argv[1], "ls"))
		return probe_list(argc - 1, argv + 1);
	return usage_err("probe", "unknown subcommand '%s': add, remove or list", argv[1]);
}
