// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud run: run a command like time(1) and capture the kernel profile of
 * every process and thread it creates, through the exit collector
 * (/proc/ktau/collect), including those that exit before it ends. Writes a
 * TAU profile directory and a summary on stderr; exits with the command's
 * status.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "ktaud.h"
#include "sample.h"

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud run [options] [--] <command> [args...]\n\n"
"Run the command and capture the final kernel profile of every process and\n"
"thread it creates (also those that exit before it ends). Writes a TAU\n"
"profile directory: processes as nodes 0, 1, ..., threads as threads\n"
"0, 1, ... of their node, the real pid and tid in the metadata. Prints a\n"
"summary on stderr and exits with the command's exit status (128 + signal\n"
"when a signal killed it, 127 when it cannot be found, 126 when it cannot\n"
"be executed). The profile holds what the command did, not what ktaud's\n"
"child did before its exec. Under an MPI launcher (OMPI_COMM_WORLD_RANK,\n"
"PMIX_RANK, PMI_RANK or SLURM_PROCID set) every file is on node RANK and\n"
"processes are its contexts 0, 1, ...: ranks can share one directory.\n\n"
"  -o, --output DIR     the TAU profile directory (default: ktau-profile); %%r\n"
"                       the MPI rank, %%p ktaud's pid, %%h the host name\n"
"  -f, --force          write DIR even when it holds files ktaud did not write\n"
"                       (none of them is replaced), and replace an existing\n"
"                       FILE of --json, --folded or --sample-folded that\n"
"                       ktaud did not write\n"
"  -j, --json[=FILE]    also write JSON on stdout, or into FILE\n"
"                       (--json=FILE, -jFILE)\n"
"      --folded[=FILE]  also write folded stacks (alone: on stdout)\n"
"      --save FILE      also save a snapshot file (for 'ktaud export')\n"
"  -n, --top N          routines in the summary (default 5)\n"
"  -q, --quiet          no summary\n"
"      --sample SPEC    also sample every thread: EVENT[:PERIOD][:u|:k], EVENT\n"
"                       cpu-clock, task-clock, cycles or instructions; PERIOD\n"
"                       events (ns, us, ms, s for the clocks) or @HZ (see\n"
"                       'ktaud sample --help'); the profile gets a second\n"
"                       metric MULTI__<EVENT> with the samples\n"
"      --sample-interval S   drain the kernel's sample buffers every S seconds\n"
"                       (default 0.1)\n"
"      --sample-folded FILE  folded stacks of the samples (default\n"
"                       DIR/samples.folded)\n"
"      --sample-lines   user code per source line where its debug information\n"
"                       has lines (as 'ktaud sample --lines')\n"
"  -h, --help           this help\n\n"
"Tasks that the command leaves running when it exits are not collected.\n");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int cmp_excl(const void *a, const void *b)
{
	const struct ktau_func_stat *x = a, *y = b;

	return x->excl_ns > y->excl_ns ? -1 : x->excl_ns < y->excl_ns;
}

static void summary(const struct ktau_snap *threads, const struct ktau_registry *reg,
		    const char *cmd, int status, double wall, unsigned long top, const char *dir,
		    int nfiles, uint64_t dropped, uint64_t denied)
{
	uint64_t calls[KTAU_LIB_NR_GROUPS + 1] = { 0 }, excl[KTAU_LIB_NR_GROUPS + 1] = { 0 };
	struct ktau_task all = { 0 };
	struct ktau_snap *tot = ktau_snap_new();
	size_t i, nproc = 0;
	char b[32];
	int g, first = 1;

	for (i = 0; i < threads->ntasks; i++)
		if (!i || threads->tasks[i].pid != threads->tasks[i - 1].pid)
			nproc++;
	if (WIFSIGNALED(status))
		fprintf(stderr, "ktaud: %s killed by signal %d after %.3f s\n", cmd,
			WTERMSIG(status), wall);
	else
		fprintf(stderr, "ktaud: %s exited with status %d after %.3f s\n", cmd,
			WEXITSTATUS(status), wall);
	/* Totals over all tasks: accumulate them into one. */
	if (tot) {
		for (i = 0; i < threads->ntasks; i++) {
			all = threads->tasks[i];
			all.tid = all.pid = 1;
			all.start_ns = 0;
			all.flags = 0;
			struct ktau_snap one = { .ntasks = 1, .tasks = &all };

			ktau_snap_accumulate(tot, &one);
		}
	}
	fprintf(stderr, "ktaud: %zu process%s, %zu thread%s profiled", nproc,
		nproc == 1 ? "" : "es", threads->ntasks, threads->ntasks == 1 ? "" : "s");
	if (tot && tot->ntasks) {
		struct ktau_task *t = &tot->tasks[0];

		group_totals(t, reg, calls, excl);
		fprintf(stderr, "; kernel time on CPU %s", fmt_ns(b, sizeof(b), ktau_task_oncpu_excl(t)));
		fprintf(stderr, ", off CPU %s", fmt_ns(b, sizeof(b), ktau_task_offcpu(t)));
		if (ktau_task_guest(t))
			fprintf(stderr, ", in guest mode %s", fmt_ns(b, sizeof(b), ktau_task_guest(t)));
		fputc(':', stderr);
		for (g = 0; g <= KTAU_LIB_NR_GROUPS; g++) {
			if (!calls[g] && !excl[g])
				continue;
			fprintf(stderr, "%s %s %s (%llu calls)", first ? "" : ",",
				ktau_group_name(g) ? ktau_group_name(g) : "other",
				fmt_ns(b, sizeof(b), excl[g]), (unsigned long long)calls[g]);
			first = 0;
		}
		fputc('\n', stderr);
		qsort(t->entries, t->nentries, sizeof(*t->entries), cmp_excl);
		if (top && t->nentries) {
			fprintf(stderr, "ktaud: top routines (exclusive):");
			for (i = 0; i < t->nentries && i < top; i++)
				fprintf(stderr, "%s %s %s (%llu)", i ? "," : "",
					ktau_func_name(reg, t->entries[i].id),
					fmt_ns(b, sizeof(b), t->entries[i].excl_ns),
					(unsigned long long)t->entries[i].count);
			fputc('\n', stderr);
		}
	} else {
		fputc('\n', stderr);
	}
	if (dropped || denied)
		fprintf(stderr, "ktaud: warning: %llu profiles dropped (collector queue full), "
			"%llu denied (set-user-ID programs)\n", (unsigned long long)dropped,
			(unsigned long long)denied);
	if (dir)
		fprintf(stderr, "ktaud: TAU profile: %s/ (%d files; pprof, paraprof)\n", dir, nfiles);
	ktau_snap_free(tot);
}

int run_output_option(struct run_args *ra, int c, const char *arg)
{
	switch (c) {
	case 'o': ra->oo.tau_dir = arg; break;
	/* -j, --json and --folded alone: stdout; a FILE only attached. */
	case 'j': ra->oo.json_path = arg ? arg : "-"; break;
	case 'F': ra->oo.folded_path = arg ? arg : "-"; break;
	case 'S': ra->oo.save_path = arg; break;
	case 'n':
		if (parse_uint(arg, &ra->top))
			return usage_err(ra->cmd_name, "bad --top '%s': a number", arg);
		break;
	case 'q': ra->quiet = 1; break;
	case 'f': ra->oo.force = out_force = 1; break;
	default: return -1;
	}
	return 0;
}

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		RUN_OUTPUT_OPTIONS,
		{ "sample", required_argument, NULL, 'E' },
		{ "sample-interval", required_argument, NULL, 'I' },
		{ "sample-folded", required_argument, NULL, 'L' },
		{ "sample-lines", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct run_args ra = { .oo = { .tau_dir = "ktau-profile", .dense = 1 }, .top = 5,
			       .cmd_name = "run" };
	const char *spec = NULL;
	double interval = 0.1;
	int c, ret, bare_end = 0, lines = 0;

	while ((c = getopt_long(argc, argv, "+o:j::n:qfh", opts, NULL)) != -1) {
		ret = run_output_option(&ra, c, optarg);
		if ((c == 'j' || c == 'F') && !optarg)
			bare_end = optind;
		if (ret >= 0) {
			if (ret)
				return ret;
			continue;
		}
		switch (c) {
		case 'E': spec = optarg; break;
		case 'I':
			if (parse_seconds(optarg, &interval) || interval < 0.001 || interval > 3600)
				return usage_err("run", "bad --sample-interval '%s': seconds, "
						 "from 0.001 to 3600", optarg);
			break;
		case 'L': ra.sample_folded = optarg; break;
		case 'N': lines = 1; break;
		case 'h': help(stdout); return EX_KT_OK;
		default: return usage_err("run", "bad option");
		}
	}
	if (optind >= argc)
		return usage_err("run", "no command to run: ktaud run [options] -- command args...");
	if (!*ra.oo.tau_dir)
		return usage_err("run", "-o needs a directory name");
	if (ra.sample_folded && !spec)
		return usage_err("run", "--sample-folded needs --sample");
	if (lines && !spec)
		return usage_err("run", "--sample-lines needs --sample");
	ret = bare_before_command("run", argv, optind, bare_end);
	if (ret)
		return ret;
	ret = json_folded_to_stdout("run", ra.oo.json_path, ra.oo.folded_path, &c);
	if (ret)
		return ret;
	ra.cmd = argv + optind;
	ret = prepare_outputs(&ra.oo);
	if (!ret)
		ret = out_file_check(ra.sample_folded);
	if (!ret && spec)
		ret = ssess_new("run", spec, interval, 0, lines, &ra.ss);
	if (!ret)
		ret = run_command(&ra);
	ssess_free(ra.ss);
	free_outputs(&ra.oo);
	return ret;
}

/* TAU's metadata of a run: start (us since the epoch), program, command line, cwd, status. */
struct run_meta {
	const char *kv[12];
	char start[24], status[24], cwd[4096];
	char *cmdline;
	struct ktau_tau_opts topts;
};

static void run_meta(struct run_meta *m, const char *exe, char **cmd, uint64_t start_us,
		     int status)
{
	size_t n = 0, len = 0, i;
	FILE *f = open_memstream(&m->cmdline, &len);

	for (i = 0; f && cmd[i]; i++)
		fprintf(f, "%s%s", i ? " " : "", cmd[i]);
	if (f)
		fclose(f);
	snprintf(m->start, sizeof(m->start), "%llu", (unsigned long long)start_us);
	if (WIFSIGNALED(status))
		snprintf(m->status, sizeof(m->status), "signal %d", WTERMSIG(status));
	else
		snprintf(m->status, sizeof(m->status), "%d", WEXITSTATUS(status));
	if (!getcwd(m->cwd, sizeof(m->cwd)))
		snprintf(m->cwd, sizeof(m->cwd), "unknown");
	m->kv[n++] = "Starting Timestamp";
	m->kv[n++] = m->start;
	m->kv[n++] = "Executable";
	m->kv[n++] = exe;
	m->kv[n++] = "Command Line";
	m->kv[n++] = m->cmdline ? m->cmdline : cmd[0];
	m->kv[n++] = "CWD";
	m->kv[n++] = m->cwd;
	m->kv[n++] = "KTAU Exit Status";
	m->kv[n++] = m->status;
	memset(&m->topts, 0, sizeof(m->topts));
	m->topts.extra_meta = m->kv;
	m->topts.nextra = n / 2;
}

int run_command(struct run_args *ra)
{
	struct out_opts oo = ra->oo;
	struct ktau_snap *snap = NULL;
	struct ktau_registry *reg = NULL;
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int, old_quit;
	uint64_t dropped = 0, denied = 0;
	int fd, pfd[2], ret, status = 0, rc, child_err = 0, nfiles = 0;
	struct exec_base base;
	struct run_meta meta;
	uint64_t start_us;
	char path[4096];
	long delay = 5;
	double t0, wall;
	char **cmd = ra->cmd;
	pid_t pid, w;
	ssize_t n;

	/* One execve in the child, the command's: found here, as execvp would. */
	ret = resolve_command(cmd[0], path, sizeof(path));
	if (ret) {
		err_msg("cannot run '%s': %s", cmd[0], strerror(-ret));
		return ret == -ENOENT ? 127 : 126;
	}
	fd = ktau_collect_open();
	if (fd < 0)
		return report(fd, "open /proc/ktau/collect");
	ret = exec_base_init(&base);
	if (ret) {
		close(fd);
		return report(ret, "prepare the command's baseline");
	}
	if (pipe2(pfd, O_CLOEXEC)) {
		ret = -errno;
		exec_base_free(&base);
		close(fd);
		return report(ret, "pipe");
	}
	/* Like time(1): the terminal's ^C goes to the command, not to us. */
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	t0 = now_s();
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		start_us = (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	}
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		exec_base_free(&base);
		close(fd);
		return report(ret, "fork");
	}
	if (pid == 0) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		xfsz_restore();
		close(pfd[0]);
		ret = ktau_collect_join(fd);
		child_err = 0x10000;
		if (!ret && ra->ss) {
			ret = ssess_child_prepare();
			child_err = 0x20000;
		}
		if (ret) {
			child_err |= -ret;
			if (write(pfd[1], &child_err, sizeof(child_err)) < 0)
				_exit(126);
			_exit(126);
		}
		close(fd);
		exec_base_take(&base);
		execv(path, cmd);
		child_err = errno;
		if (write(pfd[1], &child_err, sizeof(child_err)) < 0)
			_exit(127);
		_exit(child_err == ENOENT ? 127 : 126);
	}
	close(pfd[1]);
	/* Traced, the child stops before its exec: read the pipe afterwards. */
	if (!ra->ss) {
		n = read(pfd[0], &child_err, sizeof(child_err));
		if (n != sizeof(child_err))
			child_err = 0;
	}

	if (ra->ss) {
		ret = ssess_trace(ra->ss, pid, fd, &snap, &status);
		if (ret) {
			report(ret, "trace the command");
			status = 1 << 8;
		}
	} else {
		/* Drain the collector while the command runs: the queue is bounded. */
		for (;;) {
			w = waitpid(pid, &status, WNOHANG);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				ret = -errno;
				report(ret, "waitpid");
				status = 1 << 8;
				break;
			}
			ret = ktau_collect_read(fd, &snap);
			if (ret < 0) {
				report(ret, "read /proc/ktau/collect");
				break;
			}
			if (w == pid)
				break;
			sleep_ms(delay);
			if (delay < 100)
				delay += 5;
		}
	}
	wall = now_s() - t0;
	if (ra->ss) {
		n = read(pfd[0], &child_err, sizeof(child_err));
		if (n != sizeof(child_err))
			child_err = 0;
	}
	close(pfd[0]);
	/* The exit of the last member is queued before its parent is woken. */
	ret = ktau_collect_read(fd, &snap);
	ktau_collect_stats(fd, NULL, &dropped, &denied);
	close(fd);
	/* What the child did before its exec is not the command's. */
	if (!child_err) {
		ret = exec_base_apply(&base, snap, pid);
		if (ret)
			err_msg("warning: the profile of process %d still holds what ktaud's "
				"child did before its exec (its baseline: %s)", (int)pid,
				strerror(-ret));
	}
	exec_base_free(&base);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	rc = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);

	if (child_err & 0x10000) {
		err_msg("cannot join the KTAU collector: %s", strerror(child_err & 0xffff));
		ktau_snap_free(snap);
		return EX_KT_FAIL;
	}
	if (child_err & 0x20000) {
		err_msg("cannot trace the command to sample its threads (ptrace: %s; see "
			"kernel.yama.ptrace_scope); sample a running process with "
			"'ktaud sample -p PID' instead", strerror(child_err & 0xffff));
		ktau_snap_free(snap);
		return EX_KT_PERM;
	}
	if (child_err) {
		err_msg("cannot run '%s': %s", cmd[0], strerror(child_err));
		ktau_snap_free(snap);
		return rc;
	}
	if (!snap)
		snap = ktau_snap_new();
	if (!snap)
		return report(-ENOMEM, ra->cmd_name);
	ktau_snap_sort(snap);
	reg = load_registry();
	ktau_snap_fill_host(snap);
	{
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		snap->time_ns = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	}
	/* TAU's own metadata of a run, as TAU writes it. */
	run_meta(&meta, path, cmd, start_us, status);
	oo.tau_opts = &meta.topts;
	/* Under an MPI launcher, the rank's node (its processes contexts):
	 * prepare_outputs() has set it. */
	ret = ra->ss ? ssess_write_outputs(ra->ss, ra, snap, reg, &oo)
		     : write_outputs(snap, reg, &oo);
	oo.tau_opts = NULL;
	free(meta.cmdline);
	if (ret) {
		/* Checked before the run: the command wrote there meanwhile? */
		err_msg("the profile could not be written completely%s",
			strstr(ktau_output_error(), "did not write") ?
			" (the command wrote into the directory while it ran: libktau's runtime "
			"writes KTAU_PROFILE_DIR, default ktau-profile; give ktaud another -o)" : "");
		/* The command's status, unless it succeeded: then ours. */
		if (!rc)
			rc = EX_KT_FAIL;
	}
	else if (oo.tau_dir)
		nfiles = snap->ntasks;
	if (!ra->quiet) {
		summary(snap, reg, cmd[0], status, wall, ra->top, ret ? NULL : oo.tau_dir,
			nfiles, dropped, denied);
		if (ra->ss)
			ssess_summary(ra->ss, reg, ra->top);
	}
	if (ra->inspect)
		ra->inspect(snap, reg, ra->inspect_arg);
	ktau_snap_free(snap);
	ktau_registry_free(reg);
	return rc;
}
