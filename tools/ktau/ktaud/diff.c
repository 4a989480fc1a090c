// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud diff: two runs side by side, per routine: calls, exclusive and
 * inclusive time of each, and the change. Each side is a snapshot file
 * (ktaud run --save, watch, dump --save) or a TAU profile directory (any
 * TAU writer: ktaud, TAU itself); the routines of all its tasks are summed
 * by name, as the two runs have other pids.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "ktaud.h"
#include "tauprofile.h"

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud diff [options] A B\n\n"
"Compare two runs per routine: calls, exclusive and inclusive time in A and\n"
"in B, and the change from A to B, largest change of exclusive time first.\n"
"A and B are snapshot files (ktaud run --save, dump --save, watch) or TAU\n"
"profile directories (ktaud run, merge, TAU). The routines of every task\n"
"of a side are summed by name (the runs have other pids); callpaths are\n"
"left out unless --callpaths, and so are the group totals of KTAU's TAU profiles\n"
"(SYSCALL, IRQ, ...: sums of the rows).\n\n"
"  -n, --top N          the N largest changes (default 25; 0: all)\n"
"  -s, --sort KEY       excl (default), incl, calls or name\n"
"      --callpaths      also the callpath rows of TAU profiles (A => B)\n"
"  -j, --json[=FILE]    the whole comparison as JSON on stdout instead of the\n"
"                       table, or into FILE (--json=FILE, -jFILE)\n"
"      --force          replace an existing FILE that ktaud did not write\n"
"  -h, --help           this help\n\n"
"Exit status: 0, 1 when a side cannot be read, 2 for a usage error.\n");
}

struct drow {
	char *name;
	unsigned long long calls[2];
	double excl[2], incl[2];	/* microseconds */
	int in[2];
};

struct dside {
	const char *path;
	const char *metric;		/* of a TAU directory */
	size_t ntasks;
	double excl;			/* sum of its routines' exclusive time */
};

struct dset {
	struct drow *r;
	size_t n, cap;
};

static int add(struct dset *d, int side, const char *name, unsigned long long calls,
	       double excl, double incl)
{
	struct drow *r;

	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 256;

		r = realloc(d->r, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		d->r = r;
		d->cap = cap;
	}
	r = &d->r[d->n];
	memset(r, 0, sizeof(*r));
	r->name = strdup(name);
	if (!r->name)
		return -ENOMEM;
	r->calls[side] = calls;
	r->excl[side] = excl;
	r->incl[side] = incl;
	r->in[side] = 1;
	d->n++;
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct drow *)a)->name, ((const struct drow *)b)->name);
}

/* One row per name: the rows of both sides summed. */
static void fold(struct dset *d)
{
	size_t i, k = 0;
	int s;

	if (!d->n)
		return;
	qsort(d->r, d->n, sizeof(*d->r), cmp_name);
	for (i = 1; i < d->n; i++) {
		struct drow *a = &d->r[k], *b = &d->r[i];

		if (strcmp(a->name, b->name)) {
			d->r[++k] = *b;
			continue;
		}
		for (s = 0; s < 2; s++) {
			a->calls[s] += b->calls[s];
			a->excl[s] += b->excl[s];
			a->incl[s] += b->incl[s];
			a->in[s] |= b->in[s];
		}
		free(b->name);
	}
	d->n = k + 1;
}

/* A snapshot file: threads, else processes, else the aggregate. */
static int load_snap(struct dset *d, int side, struct dside *ds)
{
	struct ktau_registry *reg = NULL;
	struct ktau_snap *snap = NULL;
	unsigned int want;
	char idname[32];
	size_t i, j;
	int ret;

	ret = ktau_snap_load(ds->path, &snap, &reg);
	if (ret) {
		err_msg("cannot read %s: %s (a snapshot file or a TAU profile directory is "
			"needed)", ds->path, ret == -EBADMSG ? "not a snapshot file, or damaged" :
			strerror(-ret));
		return EX_KT_FAIL;
	}
	want = 0;
	for (i = 0; i < snap->ntasks; i++)
		if (!(snap->tasks[i].flags & (KTAU_TASK_AGGREGATE | KTAU_TASK_PROCESS)))
			break;
	if (i == snap->ntasks) {
		want = KTAU_TASK_PROCESS;
		for (i = 0; i < snap->ntasks; i++)
			if (snap->tasks[i].flags & KTAU_TASK_PROCESS)
				break;
		if (i == snap->ntasks)
			want = KTAU_TASK_AGGREGATE;
	}
	for (i = 0; !ret && i < snap->ntasks; i++) {
		const struct ktau_task *t = &snap->tasks[i];

		if ((t->flags & (KTAU_TASK_AGGREGATE | KTAU_TASK_PROCESS)) != want)
			continue;
		ds->ntasks++;
		for (j = 0; !ret && j < t->nentries; j++) {
			const struct ktau_func_stat *e = &t->entries[j];
			const char *name = reg ? ktau_func_name(reg, e->id) : NULL;

			if (!name) {
				snprintf(idname, sizeof(idname), "id %u", e->id);
				name = idname;
			}
			ret = add(d, side, name, e->count, e->excl_ns / 1e3, e->incl_ns / 1e3);
			ds->excl += e->excl_ns / 1e3;
		}
	}
	ktau_snap_free(snap);
	ktau_registry_free(reg);
	return ret ? report(ret, "diff") : 0;
}

/* A TAU directory: its time metric (MULTI__TIME, or its only one). */
static int load_tau(struct dset *d, int side, struct dside *ds, int callpaths)
{
	struct tprofile p;
	struct tmetric *m;
	size_t i, j;
	int ret;

	memset(&p, 0, sizeof(p));
	if (read_profile(ds->path, &p)) {
		tprofile_free(&p);
		return EX_KT_FAIL;
	}
	m = &p.m[p.time];
	ds->metric = NULL;
	ret = 0;
	for (i = 0; !ret && i < m->n; i++) {
		const struct tfile *f = &m->files[i];

		ds->ntasks++;
		for (j = 0; !ret && j < f->nf; j++) {
			const struct tfunc *fn = &f->f[j];

			if (fn->callpath && !callpaths)
				continue;
			/* ktaud's group totals (SYSCALL, IRQ, ...) are sums of rows. */
			if (fn->group && group_has(fn->group, "KERNEL_GROUPS"))
				continue;
			ret = add(d, side, fn->name, fn->calls, fn->excl, fn->incl);
			if (!fn->callpath)
				ds->excl += fn->excl;
		}
	}
	if (m->metric && strcmp(m->metric, "TIME"))
		err_msg("warning: %s: metric %s compared as microseconds", ds->path, m->metric);
	tprofile_free(&p);
	return ret ? report(ret, "diff") : 0;
}

static int sort_key;	/* 0 excl, 1 incl, 2 calls, 3 name */

static double change(const struct drow *r)
{
	switch (sort_key) {
	case 1:
		return fabs(r->incl[1] - r->incl[0]);
	case 2:
		return fabs((double)r->calls[1] - (double)r->calls[0]);
	default:
		return fabs(r->excl[1] - r->excl[0]);
	}
}

static int cmp_change(const void *a, const void *b)
{
	const struct drow *x = a, *y = b;
	double cx, cy;

	if (sort_key != 3) {
		cx = change(x);
		cy = change(y);
		if (cx != cy)
			return cx > cy ? -1 : 1;
	}
	return strcmp(x->name, y->name);
}

static const char *us_str(char *buf, size_t size, double us)
{
	return fmt_ns(buf, size, (uint64_t)llround(us * 1e3));
}

static void print_row(const struct drow *r, size_t w)
{
	char a[32], b[32], c[40], pct[24];
	double dx = r->excl[1] - r->excl[0];

	us_str(a, sizeof(a), r->excl[0]);
	us_str(b, sizeof(b), r->excl[1]);
	snprintf(c, sizeof(c), "%s", dx < 0 ? "-" : "+");
	us_str(c + 1, sizeof(c) - 1, fabs(dx));
	if (!r->in[0])
		snprintf(pct, sizeof(pct), "new");
	else if (!r->in[1])
		snprintf(pct, sizeof(pct), "gone");
	else if (r->excl[0] > 0)
		snprintf(pct, sizeof(pct), "%+.1f%%", 100.0 * dx / r->excl[0]);
	else
		snprintf(pct, sizeof(pct), "%s", dx != 0 ? "from 0" : "");
	printf("%-*s %10llu %10llu %+11lld %11s %11s %12s %8s\n", (int)w, r->name,
	       r->calls[0], r->calls[1], (long long)(r->calls[1] - r->calls[0]), a, b, c, pct);
}

static json_object *row_json(const struct drow *r)
{
	json_object *o = json_object_new_object();
	static const char *const side[2] = { "a", "b" };
	char key[32];
	int s;

	json_object_object_add(o, "name", json_object_new_string(r->name));
	for (s = 0; s < 2; s++) {
		if (!r->in[s]) {
			snprintf(key, sizeof(key), "in_%s", side[s]);
			json_object_object_add(o, key, json_object_new_boolean(0));
		}
		snprintf(key, sizeof(key), "calls_%s", side[s]);
		json_object_object_add(o, key, json_object_new_uint64(r->calls[s]));
		snprintf(key, sizeof(key), "excl_us_%s", side[s]);
		json_object_object_add(o, key, json_object_new_double(r->excl[s]));
		snprintf(key, sizeof(key), "incl_us_%s", side[s]);
		json_object_object_add(o, key, json_object_new_double(r->incl[s]));
	}
	return o;
}

static int write_json(const char *path, const struct dset *d, const struct dside ds[2])
{
	json_object *top = json_object_new_object(), *arr = json_object_new_array();
	struct out_file of;
	const char *text;
	size_t i;
	int ret;

	json_object_object_add(top, "format", json_object_new_string("ktau-diff"));
	json_object_object_add(top, "a", json_object_new_string(ds[0].path));
	json_object_object_add(top, "b", json_object_new_string(ds[1].path));
	for (i = 0; i < d->n; i++)
		json_object_array_add(arr, row_json(&d->r[i]));
	json_object_object_add(top, "routines", arr);
	text = json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY);
	ret = out_file_open(&of, path);
	if (!ret)
		ret = out_file_close(&of, fprintf(of.f, "%s\n", text) < 0 ? -EIO : 0, "the diff");
	json_object_put(top);
	return ret;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "top", required_argument, NULL, 'n' },
		{ "sort", required_argument, NULL, 's' },
		{ "callpaths", no_argument, NULL, 'C' },
		{ "json", optional_argument, NULL, 'j' },
		{ "force", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dside ds[2];
	struct dset d = { 0 };
	unsigned long top = 25;
	const char *json = NULL;
	char ta[32], tb[32];
	int c, s, ret = 0, callpaths = 0, bare = 0;
	size_t i, w = 7, shown, changed = 0;

	sort_key = 0;
	while ((c = getopt_long(argc, argv, "n:s:cj::h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (parse_uint(optarg, &top))
				return usage_err("diff", "-n needs a number, not '%s'", optarg);
			break;
		case 's':
			if (!strcmp(optarg, "excl"))
				sort_key = 0;
			else if (!strcmp(optarg, "incl"))
				sort_key = 1;
			else if (!strcmp(optarg, "calls"))
				sort_key = 2;
			else if (!strcmp(optarg, "name"))
				sort_key = 3;
			else
				return usage_err("diff", "unknown sort key '%s': excl, incl, calls or "
						 "name", optarg);
			break;
		case 'c': return moved_short("diff", c, "--callpaths");
		case 'C': callpaths = 1; break;
		/* -j and --json alone: stdout; a FILE only attached (-jFILE). */
		case 'j':
			json = optarg ? optarg : "-";
			bare = !optarg;
			break;
		case 'F': out_force = 1; break;
		case 'h': help(stdout); return EX_KT_OK;
		default: return usage_err("diff", "bad option");
		}
	}
	if (argc - optind == 3 && bare)
		return usage_err("diff", "three operands: a bare -j or --json writes to stdout; "
				 "write --json=%s (or -j%s) for a file", argv[optind], argv[optind]);
	if (argc - optind != 2)
		return usage_err("diff", "two runs are needed: ktaud diff A B");
	memset(ds, 0, sizeof(ds));
	for (s = 0; s < 2 && !ret; s++) {
		struct stat st;

		ds[s].path = argv[optind + s];
		if (stat(ds[s].path, &st)) {
			err_msg("cannot read %s: %s", ds[s].path, strerror(errno));
			ret = EX_KT_FAIL;
		} else if (S_ISDIR(st.st_mode)) {
			ret = load_tau(&d, s, &ds[s], callpaths);
		} else {
			ret = load_snap(&d, s, &ds[s]);
		}
	}
	if (ret)
		goto out;
	fold(&d);
	qsort(d.r, d.n, sizeof(*d.r), cmp_change);
	for (i = 0; i < d.n; i++) {
		if (d.r[i].calls[0] != d.r[i].calls[1] || d.r[i].excl[0] != d.r[i].excl[1] ||
		    d.r[i].in[0] != d.r[i].in[1])
			changed++;
		if (strlen(d.r[i].name) > w && strlen(d.r[i].name) < 48)
			w = strlen(d.r[i].name);
	}
	/* JSON on stdout: nothing else there. */
	if (json && !strcmp(json, "-")) {
		ret = write_json(json, &d, ds);
		goto out;
	}
	printf("A: %s: %zu task%s, %s exclusive\n", ds[0].path, ds[0].ntasks,
	       ds[0].ntasks == 1 ? "" : "s", us_str(ta, sizeof(ta), ds[0].excl));
	printf("B: %s: %zu task%s, %s exclusive\n", ds[1].path, ds[1].ntasks,
	       ds[1].ntasks == 1 ? "" : "s", us_str(tb, sizeof(tb), ds[1].excl));
	printf("%zu routines, %zu changed\n", d.n, changed);
	if (d.n) {
		printf("%-*s %10s %10s %11s %11s %11s %12s %8s\n", (int)w, "routine", "calls A",
		       "calls B", "+/-calls", "excl A", "excl B", "+/-excl", "%");
		shown = top && top < d.n ? top : d.n;
		for (i = 0; i < shown; i++)
			print_row(&d.r[i], w);
		if (shown < d.n)
			printf("(%zu more: -n 0 shows all)\n", d.n - shown);
	}
	if (json)
		ret = write_json(json, &d, ds);
out:
	for (i = 0; i < d.n; i++)
		free(d.r[i].name);
	free(d.r);
	return ret;
}
