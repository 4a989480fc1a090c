// SPDX-License-Identifier: GPL-2.0
/* ktaud dump: the kernel profile of processes, threads, all tasks, or the
 * system-wide aggregate, as tables, JSON, folded stacks or TAU. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ktaud.h"

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud dump [options] <pid>...\n"
"       ktaud dump [options] --all | --aggregate\n\n"
"Print the kernel profile of each process (its threads summed), or of each\n"
"thread with --threads: routine, group, calls, exclusive, inclusive and\n"
"average time, and share of the task's kernel time, sorted.\n\n"
"  -t, --threads        one table per thread instead of per process\n"
"      --tid            the ids given are thread IDs, not processes\n"
"  -a, --all            every task this user may read\n"
"  -A, --aggregate      the system-wide totals (needs CAP_PERFMON)\n"
"  -s, --sort KEY       excl (default), incl, calls, avg, name, id\n"
"  -n, --top N          at most N routines per task (0: all)\n"
"  -j, --json[=FILE]    JSON on stdout instead of tables, or into FILE\n"
"      --folded[=FILE]  folded stacks (flame graphs) on stdout instead of\n"
"                       tables, or into FILE\n"
"  -T, --tau DIR        also write a TAU profile directory\n"
"      --force          write the TAU directory among files dump did not\n"
"                       write (none of them is replaced), and replace an\n"
"                       existing FILE that ktaud did not write\n"
"      --save FILE      also save a snapshot file (for 'ktaud export')\n"
"      --raw FILE       also write the binary records (ABI of <linux/ktau.h>)\n"
"  -q, --quiet          no tables\n"
"  -h, --help           this help\n\n"
"Exit: 0 ok, 2 bad argument, 3 no KTAU, 4 not permitted, 5 a pid is gone.\n");
}

/* An exit code, after a message when the file was not written. */
static int write_raw(const char *path, const struct ktau_snap *s)
{
	struct out_file of;
	void *buf = NULL;
	size_t len;
	int ret = ktau_encode(s, &buf, &len);

	if (ret) {
		err_msg("cannot write %s: %s", path, strerror(-ret));
		free(buf);
		return EX_KT_FAIL;
	}
	ret = out_file_open(&of, path);
	if (!ret)
		ret = out_file_close(&of, fwrite(buf, 1, len, of.f) != len ? -EIO : 0,
				     "the raw snapshot");
	free(buf);
	return ret;
}

/* Why a pid that was asked for is not in the snapshot. */
static int explain_missing(pid_t pid, int is_tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (kill(pid, 0) && errno == ESRCH && access(path, F_OK)) {
		err_msg("%s %d does not exist (it has exited, or the number is wrong)",
			is_tid ? "thread" : "process", pid);
		return EX_KT_GONE;
	}
	err_msg("cannot read the profile of %s %d: permission denied (a process of another "
		"user, or not dumpable, needs CAP_SYS_PTRACE), or it has no profile",
		is_tid ? "thread" : "process", pid);
	return EX_KT_PERM;
}

int cmd_dump(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", no_argument, NULL, 't' },
		{ "tid", no_argument, NULL, 'I' },
		{ "all", no_argument, NULL, 'a' },
		{ "aggregate", no_argument, NULL, 'A' },
		{ "sort", required_argument, NULL, 's' },
		{ "top", required_argument, NULL, 'n' },
		{ "json", optional_argument, NULL, 'j' },
		{ "folded", optional_argument, NULL, 'F' },
		{ "tau", required_argument, NULL, 'T' },
		{ "save", required_argument, NULL, 'S' },
		{ "raw", required_argument, NULL, 'R' },
		{ "force", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int threads = 0, tids = 0, all = 0, agg = 0, quiet = 0, to_stdout;
	const char *json_path = NULL, *folded_path = NULL;
	struct table_opts to = { .sort = "excl", .top = 0 };
	struct out_opts oo = { 0 };
	const char *raw = NULL;
	struct ktau_snap *snap = NULL, *shown = NULL;
	struct ktau_registry *reg = NULL;
	struct ktau *k = NULL;
	pid_t *pids = NULL;
	size_t npids = 0, i, j;
	unsigned int flags = 0;
	int c, ret, rc = EX_KT_OK;

	while ((c = getopt_long(argc, argv, "taAs:n:j::T:qh", opts, NULL)) != -1) {
		switch (c) {
		case 't': threads = 1; break;
		case 'I': tids = 1; break;
		case 'a': all = 1; break;
		case 'A': agg = 1; break;
		case 's':
			if (strcmp(optarg, "excl") && strcmp(optarg, "incl") &&
			    strcmp(optarg, "calls") && strcmp(optarg, "avg") &&
			    strcmp(optarg, "name") && strcmp(optarg, "id"))
				return usage_err("dump", "bad --sort key '%s': use excl, incl, "
						 "calls, avg, name or id", optarg);
			to.sort = optarg;
			break;
		case 'n':
			if (parse_uint(optarg, &to.top))
				return usage_err("dump", "bad --top '%s': a number", optarg);
			break;
		case 'j': json_path = optarg ? optarg : "-"; break;
		case 'F': folded_path = optarg ? optarg : "-"; break;
		case 'T': oo.tau_dir = optarg; break;
		case 'S': oo.save_path = optarg; break;
		case 'R': raw = optarg; break;
		case 'f': oo.force = out_force = 1; break;
		case 'q': quiet = 1; break;
		case 'h': help(stdout); return EX_KT_OK;
		default: return usage_err("dump", "bad option");
		}
	}
	npids = argc - optind;
	if (!npids && !all && !agg)
		return usage_err("dump", "give one or more pids, --all or --aggregate");
	if (npids && all)
		return usage_err("dump", "give pids or --all, not both");
	if (json_folded_to_stdout("dump", json_path, folded_path, &to_stdout))
		return EX_KT_USAGE;
	if (npids) {
		pids = calloc(npids, sizeof(*pids));
		if (!pids)
			return report(-ENOMEM, "dump");
		for (i = 0; i < npids; i++)
			if (parse_pid(argv[optind + i], &pids[i])) {
				free(pids);
				return usage_err("dump", "'%s' is not a pid (a positive number)",
						 argv[optind + i]);
			}
		flags |= KTAU_LIB_PIDS | (tids ? 0 : KTAU_LIB_PROCESS);
	}
	if (all)
		flags |= KTAU_LIB_ALL;
	if (agg)
		flags |= KTAU_LIB_AGGREGATE;

	rc = open_ktau(&k);
	if (rc)
		goto out;
	ret = ktau_snapshot(k, flags, pids, npids, &snap);
	if (ret) {
		rc = report(ret, agg ? "snapshot of the aggregate" : "snapshot");
		goto out;
	}
	if (getenv("KTAUD_DEBUG"))
		fprintf(stderr, "# ktaud: %zu tasks, %lu ioctl(s), %u missing\n", snap->ntasks,
			ktau_nr_ioctls(k), snap->nmissing);
	/* Which of the pids are not there? */
	for (i = 0; i < npids; i++) {
		for (j = 0; j < snap->ntasks; j++)
			if ((tids ? snap->tasks[j].tid : snap->tasks[j].pid) == pids[i])
				break;
		if (j == snap->ntasks) {
			ret = explain_missing(pids[i], tids);
			if (rc == EX_KT_OK || ret == EX_KT_GONE)
				rc = ret;
		}
	}
	if (npids && !snap->ntasks)
		goto out;
	reg = load_registry();
	ktau_snap_sort(snap);
	if (threads || tids) {
		ret = ktau_snap_dup(snap, &shown);
	} else {
		ret = ktau_snap_sum(snap, &shown);
	}
	if (ret) {
		rc = report(ret, "dump");
		goto out;
	}
	if (raw) {
		ret = write_raw(raw, snap);
		if (ret)
			rc = ret;
	}
	/* Files get the threads when asked, processes otherwise. */
	oo.dense = 1;
	ret = expand_outputs(&oo);
	if (!ret)
		ret = write_outputs(shown, reg, &oo);
	free_outputs(&oo);
	if (ret)
		rc = ret;
	ret = write_json_folded(shown, reg, json_path, folded_path);
	if (ret)
		rc = ret;
	if (!to_stdout && !quiet)
		print_tables(stdout, shown, reg, &to);
out:
	if (fflush(stdout) && rc == EX_KT_OK)
		rc = EX_KT_FAIL;
	ktau_snap_free(shown);
	ktau_snap_free(snap);
	ktau_registry_free(reg);
	ktau_close(k);
	free(pids);
	return rc;
}
