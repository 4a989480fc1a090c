// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud export: saved snapshot files (from 'ktaud watch', 'dump --save',
 * 'run --save') to TAU, folded stacks or JSON. Also the loader of snapshot
 * files and directories that 'ktaud plot' uses.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "ktaud.h"
#include "series.h"

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud export [options] <file|dir>...\n\n"
"Read snapshot files (a directory: its snap-*.ktau and *.ktau files, in name\n"
"order) and write them as one profile. Several files are added up: the\n"
"baseline and the deltas of a 'ktaud watch' directory give the totals at\n"
"the last snapshot; with --deltas-only, what happened while it watched.\n"
"Files of another boot (or host) than the first are added by routine name:\n"
"IDs of interrupts and dynamic points differ from boot to boot.\n\n"
"  -T, --tau DIR        a TAU profile directory\n"
"  -j, --json[=FILE]    JSON on stdout, or into FILE\n"
"      --folded[=FILE]  folded stacks on stdout, or into FILE\n"
"      --save FILE      one snapshot file with the sum\n"
"  -t, --threads        keep threads apart (default: as saved)\n"
"  -P, --processes      sum threads into processes\n"
"      --deltas-only    skip files that are not deltas (the baseline)\n"
"  -f, --force          write the TAU directory among files export did not\n"
"                       write (none of them is replaced), and replace an\n"
"                       existing FILE that ktaud did not write\n"
"  -h, --help           this help\n\n"
"Without an output option, tables are printed.\n");
}

/*
 * Snapshot files in the order they were taken: snap-NNNNNN.ktau counts
 * on past 999999 with more digits, which a byte order would put first.
 */
static int cmp_str(const void *a, const void *b)
{
	return strverscmp(*(char * const *)a, *(char * const *)b);
}

void series_free(struct series *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		ktau_snap_free(s->snaps[i]);
		free(s->names[i]);
	}
	free(s->snaps);
	free(s->names);
	ktau_registry_free(s->reg);
	memset(s, 0, sizeof(*s));
}

/*
 * Were @a and @b taken in different boots? Known boot ids decide; files
 * without one (ABI 1.0) are of one boot unless their hosts differ.
 */
static int other_boot(const struct ktau_snap *a, const struct ktau_snap *b)
{
	if (a->boot_id[0] && b->boot_id[0])
		return strcmp(a->boot_id, b->boot_id) != 0;
	return a->hostname[0] && b->hostname[0] && strcmp(a->hostname, b->hostname);
}

static int series_add_file(struct series *s, const char *path)
{
	struct ktau_registry *reg = NULL;
	struct ktau_snap *snap = NULL;
	int ret;

	ret = ktau_snap_load(path, &snap, &reg);
	if (ret) {
		if (ret == -EBADMSG)
			err_msg("%s is not a KTAU snapshot file, or it is truncated or garbled", path);
		else
			err_msg("cannot read %s: %s", path, strerror(-ret));
		return ret;
	}
	if (s->n && other_boot(s->snaps[0], snap)) {
		/* Its IDs of IRQs and dynamic points mean other routines. */
		if (!s->noted || other_boot(s->noted, snap))
			fprintf(stderr, "ktaud: note: %s (and the files after it of that boot) was "
				"taken in another boot than %s (%s): its routines are matched by "
				"name\n", path, s->names[0],
				snap->boot_id[0] ? snap->boot_id : snap->hostname);
		s->noted = snap;
		ret = ktau__registry_renumber(&s->reg, reg, snap);
	} else {
		ret = ktau_registry_merge(&s->reg, reg);
	}
	ktau_registry_free(reg);
	if (!ret) {
		void *a = realloc(s->snaps, (s->n + 1) * sizeof(*s->snaps));
		void *b = a ? realloc(s->names, (s->n + 1) * sizeof(*s->names)) : NULL;

		if (a)
			s->snaps = a;
		if (b)
			s->names = b;
		if (!a || !b)
			ret = -ENOMEM;
	}
	if (ret) {
		ktau_snap_free(snap);
		err_msg("%s: %s", path, strerror(-ret));
		return ret;
	}
	s->snaps[s->n] = snap;
	s->names[s->n] = strdup(path);
	s->n++;
	return 0;
}

/*
 * The files [first, s->n) of directory dir are one 'ktaud watch' session:
 * a baseline (or, pruned, none) and deltas each from where the one before
 * ended. A directory that watch was started in twice has two baselines
 * (or a chain that breaks): adding them up counts twice. -EINVAL, said.
 */
static int one_session(const struct series *s, size_t first, const char *dir)
{
	size_t i, nsess = 1, at = 0;
	const char *b;

	for (i = first + 1; i < s->n; i++) {
		const struct ktau_snap *p = s->snaps[i - 1], *c = s->snaps[i];

		if (!c->is_delta || c->base_ns != p->time_ns) {
			if (!at)
				at = i;
			nsess++;
		}
	}
	if (nsess == 1)
		return 0;
	b = strrchr(s->names[at], '/');
	err_msg("%s holds %zu 'ktaud watch' sessions, not one (a new one starts at %s: %s): "
		"adding them up would count what they share twice. Give the files of one "
		"session (%s/snap-*.ktau from one baseline to the file before the next), or "
		"start each watch in a new directory", dir, nsess, b ? b + 1 : s->names[at],
		s->snaps[at]->is_delta ? "a delta that does not continue the file before it" :
		"a second baseline", dir);
	return -EINVAL;
}

int series_load(struct series *s, int nargs, char **args)
{
	char **names = NULL, **nn, *p;
	size_t n = 0, cap = 0, i, first;
	struct dirent *de;
	struct stat st;
	int a, ret = 0;
	DIR *d;

	memset(s, 0, sizeof(*s));
	for (a = 0; a < nargs && !ret; a++) {
		if (stat(args[a], &st)) {
			err_msg("%s: %s", args[a], strerror(errno));
			ret = -errno;
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			ret = series_add_file(s, args[a]);
			continue;
		}
		d = opendir(args[a]);
		if (!d) {
			err_msg("%s: %s", args[a], strerror(errno));
			ret = -errno;
			break;
		}
		n = 0;
		while ((de = readdir(d))) {
			size_t l = strlen(de->d_name);

			if (l < 6 || strcmp(de->d_name + l - 5, ".ktau"))
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				nn = realloc(names, cap * sizeof(*names));
				if (!nn)
					break;
				names = nn;
			}
			if (asprintf(&p, "%s/%s", args[a], de->d_name) >= 0)
				names[n++] = p;
		}
		closedir(d);
		if (!n)
			err_msg("warning: no *.ktau snapshot files in %s", args[a]);
		qsort(names, n, sizeof(*names), cmp_str);
		first = s->n;
		for (i = 0; i < n; i++) {
			if (!ret)
				ret = series_add_file(s, names[i]);
			free(names[i]);
		}
		if (!ret)
			ret = one_session(s, first, args[a]);
	}
	free(names);
	if (!ret && !s->n) {
		err_msg("no snapshots to read");
		ret = -ENOENT;
	}
	if (ret)
		series_free(s);
	return ret;
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tau", required_argument, NULL, 'T' },
		{ "json", optional_argument, NULL, 'j' },
		{ "folded", optional_argument, NULL, 'F' },
		{ "save", required_argument, NULL, 'S' },
		{ "threads", no_argument, NULL, 't' },
		{ "processes", no_argument, NULL, 'P' },
		{ "deltas-only", no_argument, NULL, 'd' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct out_opts oo = { .dense = 1 };
	struct table_opts to = { .sort = "excl" };
	struct ktau_snap *sum = NULL, *shown = NULL;
	struct series s;
	int c, procs = 0, deltas = 0, rc = EX_KT_OK, ret, tset = 0, to_stdout;
	const char *json_path = NULL, *folded_path = NULL;
	int files;
	size_t i;

	while ((c = getopt_long(argc, argv, "T:j::tPh", opts, NULL)) != -1) {
		switch (c) {
		case 'T': oo.tau_dir = optarg; break;
		case 'j': json_path = optarg ? optarg : "-"; break;
		case 'F': folded_path = optarg ? optarg : "-"; break;
		case 'S': oo.save_path = optarg; break;
		case 't': procs = 0; tset |= 1; break;
		case 'P': procs = 1; tset |= 2; break;
		case 'd': deltas = 1; break;
		case 'f': oo.force = out_force = 1; break;
		case 'h': help(stdout); return EX_KT_OK;
		default: return usage_err("export", "bad option");
		}
	}
	if (optind >= argc)
		return usage_err("export", "give snapshot files or directories");
	if (json_folded_to_stdout("export", json_path, folded_path, &to_stdout))
		return EX_KT_USAGE;
	if (tset == 3)
		return usage_err("export", "--threads and --processes contradict each other: "
				 "choose one");
	if (series_load(&s, argc - optind, argv + optind))
		return EX_KT_FAIL;
	sum = ktau_snap_new();
	if (!sum) {
		series_free(&s);
		return report(-ENOMEM, "export");
	}
	for (i = 0; i < s.n; i++) {
		if (deltas && !s.snaps[i]->is_delta)
			continue;
		ret = ktau_snap_accumulate(sum, s.snaps[i]);
		if (ret) {
			rc = report(ret, "export");
			goto out;
		}
	}
	sum->is_delta = deltas;
	ktau_snap_sort(sum);
	ret = procs ? ktau_snap_sum(sum, &shown) : ktau_snap_dup(sum, &shown);
	if (ret) {
		rc = report(ret, "export");
		goto out;
	}
	files = oo.tau_dir || oo.save_path || json_path || folded_path;
	rc = expand_outputs(&oo);
	if (!rc)
		rc = write_outputs(shown, s.reg, &oo);
	free_outputs(&oo);
	ret = write_json_folded(shown, s.reg, json_path, folded_path);
	if (ret)
		rc = ret;
	/* Tables when nothing else was asked for. */
	if (!files && !to_stdout)
		print_tables(stdout, shown, s.reg, &to);
out:
	ktau_snap_free(sum);
	ktau_snap_free(shown);
	series_free(&s);
	return rc;
}
