// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud: the command-line tool of KTAU, per-task kernel profiles.
 * One binary with subcommands, as tools/tracing/rtla.
 */
#include <stdlib.h>
#include <string.h>

#include "ktaud.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} cmds[] = {
	{ "dump", cmd_dump, "kernel profile of processes, threads, all tasks or the aggregate" },
	{ "run", cmd_run, "run a command and profile every task it creates (TAU output)" },
	{ "trace", cmd_trace, "trace a command or process: every kernel routine in order (OTF2, Perfetto)" },
	{ "sample", cmd_sample, "sample the threads of a command or process (in-kernel buffers)" },
	{ "watch", cmd_watch, "periodic snapshots (deltas) into a directory; a daemon" },
	{ "export", cmd_export, "saved snapshots to TAU, folded stacks or JSON" },
	{ "merge", cmd_merge, "a TAU profile and the kernel profile of the same run, per thread" },
	{ "flame", cmd_flame, "a flame graph (SVG) of folded stacks, a snapshot or TAU callpaths" },
	{ "diff", cmd_diff, "two runs side by side per routine, with the change" },
	{ "combine", cmd_combine, "the TAU profiles of the ranks of an MPI job into one, ranks as nodes" },
	{ "plot", cmd_plot, "PNG/SVG charts with gnuplot: top routines, groups over time" },
	{ "kvm", cmd_kvm, "the vCPU threads of KVM VMs: guest mode, exits by reason" },
	{ "functions", cmd_functions, "list the function IDs of the registry" },
	{ "control", cmd_control, "show or switch instrumentation groups, reset" },
	{ "probe", cmd_probe, "dynamic probes on kernel functions: add, remove, list" },
	{ "drill", cmd_drill, "run a command and follow its kernel time down the call graph" },
	{ "callgraph", cmd_callgraph, "the static call graph of a vmlinux (for drill)" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: ktaud <command> [options] [args]\n\n"
		   "KTAU per-task kernel profiles (Documentation/trace/ktau.rst).\n\n"
		   "Commands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\n'ktaud help <command>' or 'ktaud <command> --help' describes a command;\n"
		   "man ktaud(1) all of them; 'ktaud --version' (-V) the version.\n"
		   "Exit codes: 0 ok, 1 failure, 2 bad argument, 3 no KTAU in this kernel,\n"
		   "4 missing permission or capability, 5 a pid that does not exist;\n"
		   "'ktaud run' exits with the status of the command.\n");
}

int main(int argc, char **argv)
{
	size_t i;

	xfsz_ignore();
	if (argc < 2) {
		usage(stderr);
		return EX_KT_USAGE;
	}
	/* "ktaud help CMD" is "ktaud CMD --help". */
	if (!strcmp(argv[1], "help") && argc == 3) {
		static char *hargv[4];

		for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
			if (!strcmp(argv[2], cmds[i].name))
				break;
		if (i == sizeof(cmds) / sizeof(cmds[0])) {
			fprintf(stderr, "ktaud: unknown command '%s'\n", argv[2]);
			usage(stderr);
			return EX_KT_USAGE;
		}
		hargv[0] = argv[0];
		hargv[1] = argv[2];
		hargv[2] = "--help";
		argv = hargv;
		argc = 3;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return EX_KT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") ||
	    !strcmp(argv[1], "version")) {
		printf("ktaud (libktau %s)\n", LIBKTAU_VERSION);
		return EX_KT_OK;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (!strcmp(argv[1], cmds[i].name)) {
			static char name[64];

			snprintf(name, sizeof(name), "ktaud %s", cmds[i].name);
			prog = name;
			return cmds[i].fn(argc - 1, argv + 1);
		}
	}
	fprintf(stderr, "ktaud: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EX_KT_USAGE;
}
