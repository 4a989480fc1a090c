// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud plot: charts with gnuplot (Debian: gnuplot-nox).
 *   top:    the top kernel routines of a process or thread (bar chart)
 *   groups: kernel time per group over time, from 'ktaud watch' files
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ktaud.h"
#include "series.h"

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud plot top [options] <pid>...\n"
"       ktaud plot top [options] --from <file|dir>... [--pid PID]\n"
"       ktaud plot groups [options] <watch dir|files>...\n\n"
"top: a bar chart of the routines with the most exclusive kernel time of a\n"
"process (threads summed), a thread (--tid), or a saved snapshot (--from;\n"
"the task with --pid, else the one with the most kernel time).\n"
"groups: kernel time per group (syscall, irq, ...) in each interval of a\n"
"'ktaud watch' directory, over time, for all tasks or --pid.\n\n"
"  -o, --output FILE    FILE.png or FILE.svg (default ktau-top.png or\n"
"                       ktau-groups.png)\n"
"  -n, --top N          routines in the chart (default 15)\n"
"      --tid            the pids are thread IDs\n"
"      --from           the arguments are snapshot files or directories,\n"
"                       not pids\n"
"  -p, --pid PID        the process (or thread) to show from saved files\n"
"      --script FILE    write the gnuplot script there; do not run gnuplot\n"
"      --title TEXT     the chart's title\n"
"      --force          replace an existing FILE (or script) that ktaud did\n"
"                       not write\n"
"  -h, --help           this help\n\n"
"Needs gnuplot (apt-get install gnuplot-nox) unless --script is given.\n");
}

void gp_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
	}
	fputc('"', f);
}

static const char *terminal(const char *out)
{
	size_t l = strlen(out);

	if (l > 4 && !strcasecmp(out + l - 4, ".svg"))
		return "svg size 1000,600 dynamic background rgb 'white'";
	if (l > 4 && !strcasecmp(out + l - 4, ".png"))
		return "png size 1000,600";
	return NULL;
}

/*
 * The output of a script: gnuplot's variable ktau_output when it is set
 * (ktaud sets it to a new file beside @out, renamed to @out when gnuplot
 * is done: see finish()), else @out, for a saved script run elsewhere.
 */
static void gp_output(FILE *f, const char *out)
{
	fprintf(f, "if (!exists(\"ktau_output\")) ktau_output = ");
	gp_string(f, out);
	fprintf(f, "\nset output ktau_output\n");
}

/* -o as given (%r, %p, %h not expanded): what out_file_open() takes. */
static const char *out_template;
/* -o expanded, as the scripts and messages name it (kept to the end). */
static char *out_expanded;

/*
 * Run the script through gnuplot, or save it. @out is the chart's name
 * with %r, %p and %h expanded. Returns an exit code.
 */
static int finish(char *script, size_t len, const char *script_path, const char *out)
{
	struct out_file chart;
	struct stat st_chart;
	char *name;
	FILE *f;
	int st;

	if (script_path) {
		struct out_file of;

		st = out_file_open(&of, script_path);
		name = !st && of.path ? strdup(of.path) : NULL;
		if (!st)
			st = out_file_close(&of, fwrite(script, 1, len, of.f) != len ? -EIO : 0,
					    "the gnuplot script");
		if (!st)
			fprintf(stderr, "%s: gnuplot script in %s (gnuplot %s makes %s)\n", prog,
				name ? name : script_path, name ? name : script_path, out);
		free(name);
		return st;
	}
	/* Never over a file ktaud did not write; complete, or not at all. */
	st = out_file_open(&chart, out_template ? out_template : out);
	if (st)
		return st;
	if (!chart.path) {
		out_file_discard(&chart);
		return usage_err("plot", "gnuplot writes charts into a file, not to standard output");
	}
	fflush(NULL);
	f = popen("gnuplot", "w");
	if (!f) {
		err_msg("cannot start gnuplot: %s", strerror(errno));
		out_file_discard(&chart);
		return EX_KT_FAIL;
	}
	fprintf(f, "ktau_output = ");
	gp_string(f, chart.tmp ? chart.tmp : chart.path);
	fputc('\n', f);
	fwrite(script, 1, len, f);
	st = pclose(f);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) == 127) {
		err_msg("gnuplot is needed to draw charts: apt-get install gnuplot-nox "
			"(or use --script FILE and run it elsewhere)");
		out_file_discard(&chart);
		return EX_KT_FAIL;
	}
	if (WEXITSTATUS(st)) {
		err_msg("gnuplot failed (exit %d) drawing %s", WEXITSTATUS(st), chart.path);
		out_file_discard(&chart);
		return EX_KT_FAIL;
	}
	/* gnuplot wrote into another file (a name it could not take): nothing here. */
	if (chart.tmp && (fstat(fileno(chart.f), &st_chart) || !st_chart.st_size)) {
		err_msg("gnuplot wrote nothing into %s: nothing was written", chart.path);
		out_file_discard(&chart);
		return EX_KT_FAIL;
	}
	name = strdup(chart.path);
	st = out_file_close(&chart, 0, "the chart");
	if (!st)
		fprintf(stderr, "%s: wrote %s\n", prog, name ? name : out);
	free(name);
	return st;
}

static int cmp_excl(const void *a, const void *b)
{
	const struct ktau_func_stat *x = a, *y = b;

	return x->excl_ns > y->excl_ns ? -1 : x->excl_ns < y->excl_ns;
}

static int plot_top(const struct ktau_task *t, const struct ktau_registry *reg,
		    unsigned long top, const char *out, const char *script_path,
		    const char *title)
{
	struct ktau_func_stat *e;
	char *script = NULL, comm[17], tbuf[128];
	size_t len = 0, i, n;
	FILE *f;
	int rc;

	e = malloc((t->nentries + 1) * sizeof(*e));
	if (!e)
		return report(-ENOMEM, "plot");
	memcpy(e, t->entries, t->nentries * sizeof(*e));
	qsort(e, t->nentries, sizeof(*e), cmp_excl);
	n = t->nentries < top ? t->nentries : top;
	memcpy(comm, t->comm, 16);
	comm[16] = '\0';
	if (!title) {
		if (t->flags & KTAU_TASK_AGGREGATE)
			snprintf(tbuf, sizeof(tbuf), "KTAU: top kernel routines, all tasks");
		else
			snprintf(tbuf, sizeof(tbuf), "KTAU: top kernel routines of %s %d (%s)",
				 t->flags & KTAU_TASK_PROCESS ? "process" : "thread",
				 t->flags & KTAU_TASK_PROCESS ? t->pid : t->tid, comm);
		title = tbuf;
	}
	f = open_memstream(&script, &len);
	if (!f) {
		free(e);
		return report(-errno, "plot");
	}
	fprintf(f, "set terminal %s\nset termoption noenhanced\n", terminal(out));
	gp_output(f, out);
	fprintf(f, "set title ");
	gp_string(f, title);
	fprintf(f, "\nset style data histograms\nset style fill solid 0.8 border -1\n"
		   "set boxwidth 0.8\nset xtics rotate by -40 left\nset ylabel \"exclusive time (ms)\"\n"
		   "set grid ytics\nset key off\nset bmargin 8\n$data << EOD\n");
	for (i = 0; i < n; i++) {
		gp_string(f, ktau_func_name(reg, e[i].id));
		fprintf(f, " %.6f %llu\n", e[i].excl_ns / 1e6, (unsigned long long)e[i].count);
	}
	if (!n)
		fprintf(f, "\"(none)\" 0 0\n");
	fprintf(f, "EOD\nplot $data using 2:xtic(1) linecolor rgb \"#4477aa\"\n");
	fclose(f);
	free(e);
	rc = finish(script, len, script_path, out);
	free(script);
	return rc;
}

static int plot_groups(const struct series *s, pid_t pid, const char *out,
		       const char *script_path, const char *title)
{
	char *script = NULL;
	size_t len = 0, i, j, npoints = 0;
	uint64_t t0 = 0;
	FILE *f;
	int g, rc;

	f = open_memstream(&script, &len);
	if (!f)
		return report(-errno, "plot");
	fprintf(f, "set terminal %s\nset termoption noenhanced\n", terminal(out));
	gp_output(f, out);
	fprintf(f, "set title ");
	gp_string(f, title ? title : pid ? "KTAU: kernel time per group (one process)"
					 : "KTAU: kernel time per group");
	fprintf(f, "\nset xlabel \"time (s)\"\nset ylabel \"kernel time per interval (ms)\"\n"
		   "set grid\nset key outside right\nset style data linespoints\n$data << EOD\n");
	fprintf(f, "t");
	for (g = 0; g < KTAU_LIB_NR_GROUPS; g++)
		fprintf(f, " %s", ktau_group_name(g));
	fputc('\n', f);
	for (i = 0; i < s->n; i++) {
		const struct ktau_snap *sn = s->snaps[i];
		uint64_t calls[KTAU_LIB_NR_GROUPS + 1] = { 0 }, excl[KTAU_LIB_NR_GROUPS + 1] = { 0 };

		/* The baseline is not an interval. */
		if (!sn->is_delta)
			continue;
		if (!npoints)
			t0 = sn->base_ns;
		for (j = 0; j < sn->ntasks; j++) {
			if (pid && sn->tasks[j].pid != pid && sn->tasks[j].tid != pid)
				continue;
			if (sn->tasks[j].flags & KTAU_TASK_AGGREGATE)
				continue;
			group_totals(&sn->tasks[j], s->reg, calls, excl);
		}
		fprintf(f, "%.3f", (sn->time_ns - t0) / 1e9);
		for (g = 0; g < KTAU_LIB_NR_GROUPS; g++)
			fprintf(f, " %.6f", excl[g] / 1e6);
		fputc('\n', f);
		npoints++;
	}
	fprintf(f, "EOD\nplot for [c=2:%d] $data using 1:c title columnheader(c)\n",
		KTAU_LIB_NR_GROUPS + 1);
	fclose(f);
	if (!npoints) {
		free(script);
		err_msg("no intervals to plot: 'ktaud watch' writes a baseline and then one "
			"delta per interval; let it take at least two snapshots");
		return EX_KT_FAIL;
	}
	rc = finish(script, len, script_path, out);
	free(script);
	return rc;
}

int cmd_plot(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "top", required_argument, NULL, 'n' },
		{ "tid", no_argument, NULL, 'I' },
		{ "from", no_argument, NULL, 'f' },
		{ "pid", required_argument, NULL, 'p' },
		{ "script", required_argument, NULL, 's' },
		{ "title", required_argument, NULL, 'T' },
		{ "force", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *script = NULL, *title = NULL, *what;
	unsigned long top = 15;
	int c, tids = 0, from = 0, rc;
	pid_t pid = 0;
	struct series s;
	size_t i;

	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
			help(stdout);
			return EX_KT_OK;
		}
		return usage_err("plot", "say what to plot: 'top' or 'groups'");
	}
	what = argv[1];
	if (strcmp(what, "top") && strcmp(what, "groups"))
		return usage_err("plot", "unknown chart '%s': 'top' or 'groups'", what);
	argc--;
	argv++;
	while ((c = getopt_long(argc, argv, "+o:n:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'n':
			if (parse_uint(optarg, &top) || !top)
				return usage_err("plot", "bad --top '%s': a positive number", optarg);
			break;
		case 'I': tids = 1; break;
		case 'f': from = 1; break;
		case 'p':
			if (parse_pid(optarg, &pid))
				return usage_err("plot", "'%s' is not a pid", optarg);
			break;
		case 's': script = optarg; break;
		case 'T': title = optarg; break;
		case 'F': out_force = 1; break;
		case 'h': help(stdout); return EX_KT_OK;
		default: return usage_err("plot", "bad option");
		}
	}
	if (!out)
		out = !strcmp(what, "top") ? "ktau-top.png" : "ktau-groups.png";
	if (!terminal(out))
		return usage_err("plot", "the output '%s' must end in .png or .svg", out);
	for (i = 0; out[i]; i++)
		if ((unsigned char)out[i] < 0x20)
			return usage_err("plot", "the output name has a control character");
	out_template = out;
	out = out_expanded = output_path(out);
	if (!out)
		return EX_KT_FAIL;
	if (optind >= argc)
		return usage_err("plot", !strcmp(what, "top") && !from ?
				 "give a pid (or --from FILE)" : "give snapshot files or a directory");

	if (!strcmp(what, "groups")) {
		if (series_load(&s, argc - optind, argv + optind))
			return EX_KT_FAIL;
		rc = plot_groups(&s, pid, out, script, title);
		series_free(&s);
		return rc;
	}
	if (from) {
		struct ktau_snap *sum = ktau_snap_new(), *procs = NULL;
		const struct ktau_task *best = NULL;

		if (series_load(&s, argc - optind, argv + optind)) {
			ktau_snap_free(sum);
			return EX_KT_FAIL;
		}
		for (i = 0; sum && i < s.n; i++)
			ktau_snap_accumulate(sum, s.snaps[i]);
		if (!sum || (tids ? ktau_snap_dup(sum, &procs) : ktau_snap_sum(sum, &procs))) {
			rc = report(-ENOMEM, "plot");
			goto from_out;
		}
		for (i = 0; i < procs->ntasks; i++) {
			const struct ktau_task *t = &procs->tasks[i];

			if (pid ? (tids ? t->tid : t->pid) == pid && !(t->flags & KTAU_TASK_AGGREGATE)
				: (!best || ktau_task_total_excl(t) > ktau_task_total_excl(best)))
				best = t;
			if (pid && best)
				break;
		}
		if (!best) {
			err_msg(pid ? "no task %d in the snapshots" : "the snapshots hold no task%.0d",
				pid);
			rc = EX_KT_GONE;
		} else {
			rc = plot_top(best, s.reg, top, out, script, title);
		}
from_out:
		ktau_snap_free(sum);
		ktau_snap_free(procs);
		series_free(&s);
		return rc;
	}
	if (argc - optind != 1)
		return usage_err("plot", "'plot top' shows one process or thread");
	{
		struct ktau_registry *reg;
		struct ktau_snap *snap = NULL, *procs = NULL;
		struct ktau *k;
		int ret;

		if (parse_pid(argv[optind], &pid))
			return usage_err("plot", "'%s' is not a pid", argv[optind]);
		rc = open_ktau(&k);
		if (rc)
			return rc;
		ret = ktau_snapshot(k, KTAU_LIB_PIDS | (tids ? 0 : KTAU_LIB_PROCESS), &pid, 1, &snap);
		ktau_close(k);
		if (ret)
			return report(ret, "snapshot");
		if (!snap->ntasks) {
			ktau_snap_free(snap);
			err_msg("%s %d does not exist or may not be read", tids ? "thread" : "process",
				pid);
			return EX_KT_GONE;
		}
		ret = tids ? ktau_snap_dup(snap, &procs) : ktau_snap_sum(snap, &procs);
		ktau_snap_free(snap);
		if (ret)
			return report(ret, "plot");
		reg = load_registry();
		rc = plot_top(&procs->tasks[0], reg, top, out, script, title);
		ktau_registry_free(reg);
		ktau_snap_free(procs);
		return rc;
	}
}
