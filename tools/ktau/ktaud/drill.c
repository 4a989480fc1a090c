// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud drill: follow the kernel time of a command down the kernel's call
 * graph with dynamic probes. The command runs profiled (as 'ktaud run'
 * does); the kernel routine with the most exclusive time (off-CPU time
 * aside) is mapped to the kernel function where it starts; then, step by
 * step, the direct callees of the current function (from the static call
 * graph of vmlinux) are probed, the command runs again, and the drill
 * descends into the callee with the most inclusive time when it has at
 * least the threshold share of the current function's time. The decisions
 * are libktau's ktau_drill_start() and ktau_drill_decide() (tested on the
 * host); this file runs, probes and measures.
 *
 * A command timed with libktau's user-level runtime (ktau_timer_*,
 * -finstrument-functions) writes a merged profile in which the kernel
 * routines, probed functions included, are charged to the user routine
 * that incurred them. The drill sets KTAU_PROFILE_DIR for its runs; when
 * such profiles appear, it starts from the user routine with the most
 * kernel time (on CPU) and measures the functions under that routine
 * only. Otherwise the whole command is the user routine and the functions
 * are measured over all its tasks.
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ktaud.h"
#include "sample.h"
#include "internal.h"
#include "tauprofile.h"

#define MAX_RUNS	99
#define MAX_DEPTH	64
#define NAME_LEN	KTAU_LIB_PROBE_NAME_LEN

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud drill [options] -- COMMAND [ARGS...]\n"
"       ktaud drill [options] -p PID [-d SECONDS]\n\n"
"Follow the kernel time of a command down the kernel's call graph. The\n"
"command runs profiled as with 'ktaud run'; the kernel routine with the\n"
"most exclusive time is mapped to the kernel function where it starts (a\n"
"system call NAME to __x64_sys_NAME, page faults to handle_mm_fault, a\n"
"softirq to its handler, signal delivery to arch_do_signal_or_restart);\n"
"off-CPU time (sched_blocked, sched_preempted) is skipped: no probe can\n"
"break it down. Then, step by step, the direct callees of the current\n"
"function (from the call graph of vmlinux) are probed, the command runs\n"
"again, and the drill descends into the callee with the most inclusive\n"
"time if it has at least the threshold share of the current function's\n"
"time. It stops when the time no longer concentrates, at the depth\n"
"limit, or when no callee can be probed, prints the path with the time,\n"
"share and calls of each step, and writes the profile of the last run\n"
"(with the probed functions) as a TAU profile directory.\n\n"
"A command timed with libktau's user-level timers (-finstrument-functions,\n"
"ktau_timer_*) is drilled from its user routine with the most kernel time\n"
"(KTAU_PROFILE_DIR is set for its runs); the whole command is the user\n"
"routine otherwise.\n\n"
"      --vmlinux FILE   the kernel's vmlinux (decoded with capstone)\n"
"      --callgraph FILE  or its call graph file ('ktaud callgraph');\n"
"                       default: the first of /boot/vmlinux-RELEASE,\n"
"                       /usr/lib/debug/boot/vmlinux-RELEASE,\n"
"                       /lib/modules/RELEASE/build/vmlinux,\n"
"                       /ktau/share/vmlinux.calls\n"
"      --threshold F    share of the current function's inclusive time a\n"
"                       callee needs to be descended into: 0.5 or 50%%\n"
"                       (default 50%%)\n"
"      --depth N        at most N functions on the path (default 8)\n"
"  -r, --runs N         runs per step, the median of each value (default 1)\n"
"      --start FUNC     start at kernel function FUNC instead\n"
"  -o, --output DIR     the TAU profile of the last run (default ktau-drill)\n"
"  -p, --pid PID        drill a running process: each step measures it for\n"
"  -d, --duration S     S seconds (default 5)\n"
"  -v, --verbose        also the callees that cannot be probed, and why\n"
"  -h, --help           this help\n\n"
"Probes need CAP_PERFMON or CAP_SYS_ADMIN and count every call of the\n"
"function in the measured tasks, also those not made from the current\n"
"function. Exit status: 0 when a path was walked, 1 when the drill could\n"
"not start (no call graph, no drillable routine), 2, 3, 4 and 5 as the\n"
"other commands; the command's own failure is reported, not returned.\n");
}

struct meas {
	uint64_t calls, incl, excl;
};

/* One run: the profile, its registry, the user-level profiles it wrote. */
struct run {
	struct ktau_snap *snap;
	struct ktau_registry *reg;
	struct tprofile *up;
	size_t nup;
};

struct dprobe {
	char name[NAME_LEN];
	uint32_t id;
	int owned;		/* 0: another process holds it (EEXIST) */
};

/*
 * A function of the path: as measured in the run that chose it (its
 * share of the element above in the same run), and its inclusive time in
 * its own step's run, the base of its callees' shares.
 */
struct pstep {
	char name[NAME_LEN];
	struct meas m;
	double share;		/* of the element above; < 0: not known */
	uint64_t self_incl;
};

struct drill {
	/* options */
	double threshold;
	unsigned long depth, runs;
	const char *outdir, *start, *graph_path;
	int verbose;
	char **cmd;
	pid_t pid;
	double duration;
	/* state */
	struct ktau_callgraph *g;
	char *ktext;		/* /proc/kallsyms, names cut in place */
	const char **ksyms;
	size_t nksyms;
	int pfd;
	struct dprobe probes[KTAU_LIB_PROBE_MAX];
	size_t nprobes;
	struct run *cur;	/* the runs of a measurement */
	size_t ncur;
	struct run last;	/* the last run, for the profile */
	int warned_status;
	char udir[PATH_MAX];	/* KTAU_PROFILE_DIR of the runs: user profiles */
	char user[512];		/* the user routine; "" : the whole command */
	char routine[NAME_LEN];	/* the KTAU routine at the top */
	struct meas routine_m;	/* in the runs without probes */
	uint32_t routine_id;	/* 0: none (--start) */
	struct pstep path[MAX_DEPTH];
	size_t npath;
	struct ktau *k;		/* -p */
};

/* ---- kallsyms: which functions the kernel has ---- */

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int load_ksyms(struct drill *d)
{
	char *p, *eol, *end, *name;
	size_t len, cap = 0;
	int ret = ktau__slurp("/proc/kallsyms", &d->ktext, &len);

	if (ret) {
		err_msg("cannot read /proc/kallsyms: %s", strerror(-ret));
		return EX_KT_FAIL;
	}
	end = d->ktext + len;
	for (p = d->ktext; p < end; p = eol + 1) {
		eol = memchr(p, '\n', end - p);
		if (!eol)
			eol = end;
		*eol = '\0';
		/* "ffffffff81000000 T name[\t[module]]"; addresses may read as 0. */
		name = strchr(p, ' ');
		if (!name || !name[1] || name[2] != ' ' || !strchr("tT", name[1]))
			continue;
		name += 3;
		name[strcspn(name, "\t ")] = '\0';
		if (d->nksyms == cap) {
			const char **nv;

			cap = cap ? cap * 2 : 65536;
			nv = realloc(d->ksyms, cap * sizeof(*nv));
			if (!nv)
				return report(-ENOMEM, "drill");
			d->ksyms = nv;
		}
		d->ksyms[d->nksyms++] = name;
	}
	if (d->nksyms)
		qsort(d->ksyms, d->nksyms, sizeof(*d->ksyms), cmp_name);
	return EX_KT_OK;
}

static int has_ksym(const char *name, void *arg)
{
	const struct drill *d = arg;

	return d->nksyms && bsearch(&name, d->ksyms, d->nksyms, sizeof(name), cmp_name);
}

/* ---- the call graph ---- */

static int open_graph(struct drill *d)
{
	static const char *const fmts[] = {
		"/boot/vmlinux-%s", "/usr/lib/debug/boot/vmlinux-%s",
		"/lib/modules/%s/build/vmlinux",
	};
	char rel[256] = "", path[PATH_MAX];
	FILE *f;
	size_t i;

	if (d->graph_path)
		return load_callgraph(d->graph_path, &d->g);
	f = fopen("/proc/sys/kernel/osrelease", "r");
	if (f) {
		if (!fgets(rel, sizeof(rel), f))
			rel[0] = '\0';
		rel[strcspn(rel, "\n")] = '\0';
		fclose(f);
	}
	for (i = 0; rel[0] && i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		snprintf(path, sizeof(path), fmts[i], rel);
		if (!access(path, R_OK)) {
			fprintf(stderr, "ktaud: call graph from %s\n", path);
			return load_callgraph(path, &d->g);
		}
	}
	if (!access("/ktau/share/vmlinux.calls", R_OK))
		return load_callgraph("/ktau/share/vmlinux.calls", &d->g);
	err_msg("no vmlinux of this kernel (%s) found in /boot, /usr/lib/debug/boot or "
		"/lib/modules/%s/build, and no /ktau/share/vmlinux.calls: give --vmlinux FILE "
		"(the kernel build's vmlinux) or --callgraph FILE ('ktaud callgraph' of it)",
		rel[0] ? rel : "?", rel[0] ? rel : "RELEASE");
	return EX_KT_FAIL;
}

/* ---- probes ---- */

static struct dprobe *probe_of(struct drill *d, const char *name)
{
	size_t i;

	for (i = 0; i < d->nprobes; i++)
		if (!strcmp(d->probes[i].name, name))
			return &d->probes[i];
	return NULL;
}

/*
 * Probe name (kept when it is already): 0; -EINVAL, -ENOENT or -EEXIST
 * (the kernel will not; another holder's probe of unknown ID); -ENOSPC
 * (no free probe); or an exit code (> 0) after a message.
 */
static int probe_on(struct drill *d, const char *name)
{
	struct ktau_registry *reg = NULL;
	struct dprobe *p;
	uint32_t id;
	int ret;

	if (probe_of(d, name))
		return 0;
	if (d->nprobes == KTAU_LIB_PROBE_MAX || strlen(name) >= NAME_LEN)
		return d->nprobes == KTAU_LIB_PROBE_MAX ? -ENOSPC : -EINVAL;
	ret = ktau_probe_add(d->pfd, name, &id);
	if (ret == -EEXIST) {
		/* Another process probes it: its calls are timed all the same. */
		if (!ktau_registry_load(&reg))
			id = ktau_func_id(reg, name);
		else
			id = 0;
		ktau_registry_free(reg);
		if (!id)
			return -EEXIST;
	} else if (ret == -EINVAL || ret == -ENOENT || ret == -ENOSPC) {
		return ret;
	} else if (ret) {
		return probe_report(ret, 1, name);
	}
	p = &d->probes[d->nprobes++];
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->id = id;
	p->owned = !ret;
	return 0;
}

static void probe_off(struct drill *d, const char *name)
{
	struct dprobe *p = probe_of(d, name);

	if (!p)
		return;
	if (p->owned)
		ktau_probe_remove_id(d->pfd, p->id);
	*p = d->probes[--d->nprobes];
}

static int on_path(const struct drill *d, const char *name)
{
	size_t i;

	for (i = 0; i < d->npath; i++)
		if (!strcmp(d->path[i].name, name))
			return 1;
	return 0;
}

/* ---- runs ---- */

static void run_free(struct run *r)
{
	size_t i;

	ktau_snap_free(r->snap);
	ktau_registry_free(r->reg);
	for (i = 0; i < r->nup; i++)
		tprofile_free(&r->up[i]);
	free(r->up);
	memset(r, 0, sizeof(*r));
}

static void keep_run(const struct ktau_snap *snap, const struct ktau_registry *reg, void *arg)
{
	struct run *r = arg;

	if (ktau_snap_dup(snap, &r->snap))
		r->snap = NULL;
	if (reg && ktau_registry_merge(&r->reg, reg))
		r->reg = NULL;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	if (ftw->level)
		(flag == FTW_DP ? rmdir : unlink)(path);
	return 0;
}

/* Remove what the runs left in dir (the user profiles), not dir itself. */
static void clear_udir(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The directories with profile.* files below the one walked (nftw has no argument). */
static char **found_dirs;
static size_t nfound_dirs;

static int find_profiles(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char **nv;

	(void)st;
	if (flag != FTW_F || strncmp(path + ftw->base, "profile.", 8))
		return 0;
	if (nfound_dirs && !strncmp(found_dirs[nfound_dirs - 1], path, ftw->base - 1) &&
	    !found_dirs[nfound_dirs - 1][ftw->base - 1])
		return 0;	/* the directory of the file before */
	nv = realloc(found_dirs, (nfound_dirs + 1) * sizeof(*nv));
	if (!nv)
		return 0;
	found_dirs = nv;
	found_dirs[nfound_dirs] = strndup(path, ftw->base - 1);
	if (found_dirs[nfound_dirs])
		nfound_dirs++;
	return 0;
}

/*
 * The user-level profiles a run left: a directory per process (%p), and
 * in it one per forked child (fork-<pid>).
 */
static void read_user_profiles(struct drill *d, struct run *r)
{
	struct tprofile p, *nv;
	size_t i;

	nfound_dirs = 0;
	found_dirs = NULL;
	nftw(d->udir, find_profiles, 16, FTW_PHYS);
	for (i = 0; i < nfound_dirs; i++) {
		if (!read_profile(found_dirs[i], &p)) {
			nv = realloc(r->up, (r->nup + 1) * sizeof(*nv));
			if (nv) {
				r->up = nv;
				r->up[r->nup++] = p;
			} else {
				tprofile_free(&p);
			}
		}
		free(found_dirs[i]);
	}
	free(found_dirs);
	found_dirs = NULL;
	nfound_dirs = 0;
}

static int run_pid_once(struct drill *d, struct run *r)
{
	struct ktau_snap *a = NULL, *b = NULL;
	struct timespec ts;
	int ret;

	ret = ktau_snapshot(d->k, KTAU_LIB_PIDS | KTAU_LIB_PROCESS, &d->pid, 1, &a);
	if (!ret && !a->ntasks)
		ret = -ESRCH;
	if (ret) {
		ktau_snap_free(a);
		if (ret == -ESRCH) {
			err_msg("process %d does not exist (any more)", (int)d->pid);
			return EX_KT_GONE;
		}
		return report(ret, "snapshot");
	}
	ts.tv_sec = (time_t)d->duration;
	ts.tv_nsec = (long)((d->duration - ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	ret = ktau_snapshot(d->k, KTAU_LIB_PIDS | KTAU_LIB_PROCESS, &d->pid, 1, &b);
	if (!ret && !b->ntasks)
		ret = -ESRCH;
	if (!ret)
		ret = ktau_snap_diff(a, b, &r->snap);
	ktau_snap_free(a);
	ktau_snap_free(b);
	if (ret) {
		if (ret == -ESRCH) {
			err_msg("process %d has exited", (int)d->pid);
			return EX_KT_GONE;
		}
		return report(ret, "snapshot");
	}
	ktau_snap_sort(r->snap);
	ktau_snap_fill_host(r->snap);
	if (ktau_registry_load(&r->reg))
		r->reg = NULL;
	return EX_KT_OK;
}

/* One run of the command (or interval of the process) into r. */
static int run_once(struct drill *d, struct run *r)
{
	struct run_args ra = { .oo = { .dense = 1 }, .quiet = 1, .cmd = d->cmd,
			       .cmd_name = "drill", .inspect = keep_run, .inspect_arg = r };
	int rc;

	memset(r, 0, sizeof(*r));
	if (d->pid)
		return run_pid_once(d, r);
	clear_udir(d->udir);
	rc = run_command(&ra);
	if (!r->snap) {
		/* Not run at all (the message is out), or no memory. */
		run_free(r);
		return rc ? rc : EX_KT_FAIL;
	}
	if (rc >= 128 + 1 && rc <= 128 + 64) {
		err_msg("the command was killed by signal %d; stopping", rc - 128);
		run_free(r);
		return EX_KT_FAIL;
	}
	if (rc && !d->warned_status) {
		err_msg("warning: the command exited with status %d", rc);
		d->warned_status = 1;
	}
	read_user_profiles(d, r);
	return EX_KT_OK;
}

/* d->runs runs into d->cur; the last one is kept for the profile. */
static int measure(struct drill *d, const char *what)
{
	size_t i;
	int ret;

	for (i = 0; i < d->ncur; i++)
		run_free(&d->cur[i]);
	d->ncur = 0;
	for (i = 0; i < d->runs; i++) {
		fprintf(stderr, "ktaud: run %zu/%lu: %s\n", i + 1, d->runs, what);
		ret = run_once(d, &d->cur[i]);
		if (ret)
			return ret;
		d->ncur++;
	}
	/* The last run's profile, for the output: a copy of its snapshot and registry. */
	run_free(&d->last);
	if (ktau_snap_dup(d->cur[d->ncur - 1].snap, &d->last.snap))
		d->last.snap = NULL;
	if (d->cur[d->ncur - 1].reg && ktau_registry_merge(&d->last.reg, d->cur[d->ncur - 1].reg))
		d->last.reg = NULL;
	return EX_KT_OK;
}

/* ---- values ---- */

static struct meas task_value(const struct ktau_snap *s, uint32_t id)
{
	struct meas m = { 0 };
	size_t i;

	for (i = 0; s && i < s->ntasks; i++) {
		const struct ktau_func_stat *e = ktau_task_find(&s->tasks[i], id);

		if (e) {
			m.calls += e->count;
			m.incl += e->incl_ns;
			m.excl += e->excl_ns;
		}
	}
	return m;
}

/* The last two elements of a callpath: "... => U => K". */
static int split_tail(const char *name, const char **u, size_t *ulen, const char **k)
{
	const char *last = NULL, *prev = NULL, *p = name;

	while ((p = strstr(p, " => "))) {
		prev = last;
		last = p;
		p += 4;
	}
	if (!last)
		return 0;
	*k = last + 4;
	*u = prev ? prev + 4 : name;
	*ulen = last - *u;
	return 1;
}

/* A callpath row "... => U => K" of a user-level profile. */
struct urow {
	const struct tfunc *t;
	const char *u, *k;	/* u: ulen bytes */
	size_t ulen;
	const char *user;	/* what the caller looks for */
	struct meas m;		/* and what it adds up */
};

static int urow_user_is(const struct urow *row, const char *user)
{
	return strlen(user) == row->ulen && !strncmp(row->u, user, row->ulen);
}

/* fn for every callpath row of the user profiles of the n runs r. */
static void each_urow(const struct run *r, size_t n, void (*fn)(struct urow *row, void *arg),
		      struct urow *row, void *arg)
{
	size_t i, j, f, x;

	for (x = 0; x < n; x++)
		for (i = 0; i < r[x].nup; i++) {
			const struct tmetric *tm = &r[x].up[i].m[r[x].up[i].time];

			for (f = 0; f < tm->n; f++)
				for (j = 0; j < tm->files[f].nf; j++) {
					row->t = &tm->files[f].f[j];
					if (row->t->callpath &&
					    split_tail(row->t->name, &row->u, &row->ulen, &row->k))
						fn(row, arg);
				}
		}
}

static void add_urow(struct urow *row, void *arg)
{
	if (urow_user_is(row, row->user) && !strcmp(row->k, arg)) {
		row->m.calls += row->t->calls;
		row->m.incl += (uint64_t)llround(row->t->incl * 1000.0);
		row->m.excl += (uint64_t)llround(row->t->excl * 1000.0);
	}
}

/* Kernel routine k charged to user routine u in the user profiles of r. */
static struct meas user_value(const struct run *r, const char *u, const char *k)
{
	struct urow row = { .user = u };

	each_urow(r, 1, add_urow, &row, (void *)k);
	return row.m;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The median over the runs of function id (named name in the registry). */
static struct meas value_of(const struct drill *d, uint32_t id)
{
	uint64_t c[MAX_RUNS], in[MAX_RUNS], ex[MAX_RUNS];
	struct meas m;
	size_t i;

	for (i = 0; i < d->ncur; i++) {
		const struct run *r = &d->cur[i];

		if (d->user[0])
			m = user_value(r, d->user, ktau_func_name(r->reg, id));
		else
			m = task_value(r->snap, id);
		c[i] = m.calls;
		in[i] = m.incl;
		ex[i] = m.excl;
	}
	m.calls = median(c, d->ncur);
	m.incl = median(in, d->ncur);
	m.excl = median(ex, d->ncur);
	return m;
}

/* ---- the start: the user routine and the kernel routine ---- */

static int class_group(const char *cls)
{
	int g;

	for (g = 0; g < KTAU_LIB_NR_GROUPS; g++)
		if (!strcmp(ktau_group_class(g), cls))
			return g;
	return -1;
}

struct tally {
	char *name;
	double v;
	int group;
};

static void tally_add(struct tally **t, size_t *n, const char *name, size_t len, double v,
		      int group)
{
	struct tally *nv;
	size_t i;

	for (i = 0; i < *n; i++)
		if (strlen((*t)[i].name) == len && !strncmp((*t)[i].name, name, len)) {
			(*t)[i].v += v;
			return;
		}
	nv = realloc(*t, (*n + 1) * sizeof(*nv));
	if (!nv)
		return;
	*t = nv;
	nv[*n].name = strndup(name, len);
	if (!nv[*n].name)
		return;
	nv[*n].v = v;
	nv[*n].group = group;
	(*n)++;
}

static void tally_free(struct tally *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(t[i].name);
	free(t);
}

#define KGROUPS_ROW	"TAU_CALLPATH|KERNEL_GROUPS|TAU_KERNEL_MERGE"
#define KROUTINE_ROW	"TAU_CALLPATH|TAU_KERNEL_MERGE|KTAU_"
#define OUTSIDE_TIMERS	"[outside timers]"	/* the runtime's node without a timer */

struct tallies {
	struct tally *v;
	size_t n;
};

/* The kernel time on CPU (groups but SCHED) charged to each user routine. */
static void tally_users(struct urow *row, void *arg)
{
	struct tallies *ts = arg;

	/* Kernel time while no timer ran is no user routine's. */
	if (!strcmp(row->t->group, KGROUPS_ROW) && strcmp(row->k, "SCHED") &&
	    (row->ulen != strlen(OUTSIDE_TIMERS) || strncmp(row->u, OUTSIDE_TIMERS, row->ulen)))
		tally_add(&ts->v, &ts->n, row->u, row->ulen, row->t->excl, 0);
}

/* The kernel routines (SCHED aside) charged to user routine row->user. */
static void tally_routines(struct urow *row, void *arg)
{
	struct tallies *ts = arg;
	const char *g = row->t->group + strlen(KROUTINE_ROW);

	if (!strncmp(row->t->group, KROUTINE_ROW, strlen(KROUTINE_ROW)) &&
	    urow_user_is(row, row->user) && strcmp(g, "SCHED"))
		tally_add(&ts->v, &ts->n, row->k, strlen(row->k), row->t->excl, class_group(g));
}

/* The tally with the largest value, or NULL when none is above 0. */
static const struct tally *tally_top(const struct tallies *ts)
{
	size_t i, best = 0;

	for (i = 1; i < ts->n; i++)
		if (ts->v[i].v > ts->v[best].v)
			best = i;
	return ts->n && ts->v[best].v > 0 ? &ts->v[best] : NULL;
}

/*
 * From the user profiles of the runs (summed): the user routine with the
 * most kernel time on CPU (the kernel groups but SCHED charged to it) and
 * its kernel routine with the most exclusive time (SCHED aside). 0 when
 * there are no user profiles or they hold no kernel time.
 */
static int user_start(struct drill *d, char *routine, size_t size, int *group)
{
	struct tallies users = { 0 }, kr = { 0 };
	struct urow row = { 0 };
	const struct tally *top;
	double ukernel;
	int found = 0;

	each_urow(d->cur, d->ncur, tally_users, &row, &users);
	top = tally_top(&users);
	if (!top)
		goto out;
	snprintf(d->user, sizeof(d->user), "%s", top->name);
	ukernel = top->v / d->ncur;
	row.user = d->user;
	each_urow(d->cur, d->ncur, tally_routines, &row, &kr);
	fprintf(stderr, "ktaud: user-level profiles: the user routine with the most kernel time "
		"on CPU is %s (%.2f ms per run)\n", d->user, ukernel / 1000);
	/* Its kernel routines by time; those that cannot be drilled are skipped. */
	while ((top = tally_top(&kr))) {
		char fn[KTAU_LIB_PROBE_NAME_LEN];
		const char *why = NULL;

		if (!ktau_drill_start(top->name, top->group, has_ksym, d, fn, sizeof(fn), &why)) {
			snprintf(routine, size, "%s", top->name);
			*group = top->group;
			found = 1;
			fprintf(stderr, "ktaud: its top kernel routine that can be drilled is %s\n",
				routine);
			break;
		}
		fprintf(stderr, "ktaud: skipping %s under %s: %s\n", top->name, d->user, why);
		((struct tally *)top)->v = 0;
	}
	if (!found)
		d->user[0] = '\0';
out:
	tally_free(users.v, users.n);
	tally_free(kr.v, kr.n);
	return found;
}

struct rstat {
	uint32_t id;
	struct meas m;
};

static int cmp_rstat(const void *a, const void *b)
{
	const struct rstat *x = a, *y = b;

	return x->m.excl > y->m.excl ? -1 : x->m.excl < y->m.excl;
}

/* Step 0: the command profiled without probes; the function to start at. */
static int find_start(struct drill *d, char *fn, size_t size)
{
	struct rstat *v = NULL;
	size_t n = 0, i, j, t;
	const char *why = NULL;
	char b1[32], b2[32];
	int ret, group = -1;

	ret = measure(d, "the command, without probes");
	if (ret)
		return ret;
	if (!d->pid && user_start(d, d->routine, sizeof(d->routine), &group)) {
		uint32_t id = ktau_func_id(d->cur[0].reg, d->routine);

		d->routine_m = id ? value_of(d, id) : (struct meas){ 0 };
		d->routine_id = id;
		ret = ktau_drill_start(d->routine, group, has_ksym, d, fn, size, &why);
		if (ret) {
			err_msg("cannot drill %s => %s: %s", d->user, d->routine, why);
			return EX_KT_FAIL;
		}
		fprintf(stderr, "ktaud: %s => %s starts at %s\n", d->user, d->routine, fn);
		return EX_KT_OK;
	}
	/* Every routine of any run, by its median exclusive time. */
	for (i = 0; i < d->ncur; i++)
		for (t = 0; t < d->cur[i].snap->ntasks; t++)
			for (j = 0; j < d->cur[i].snap->tasks[t].nentries; j++) {
				uint32_t id = d->cur[i].snap->tasks[t].entries[j].id;
				size_t k;

				for (k = 0; k < n && v[k].id != id; k++)
					;
				if (k < n)
					continue;
				if (!(n % 64)) {
					struct rstat *nv = realloc(v, (n + 64) * sizeof(*nv));

					if (!nv) {
						free(v);
						return report(-ENOMEM, "drill");
					}
					v = nv;
				}
				v[n].id = id;
				v[n++].m = value_of(d, id);
			}
	if (n)
		qsort(v, n, sizeof(*v), cmp_rstat);
	fprintf(stderr, "ktaud: top kernel routines (exclusive):");
	for (i = 0; i < n && i < 5; i++)
		fprintf(stderr, "%s %s %s (%llu)", i ? "," : "", ktau_func_name(d->cur[0].reg, v[i].id),
			fmt_ns(b1, sizeof(b1), v[i].m.excl), (unsigned long long)v[i].m.calls);
	fputc('\n', stderr);
	ret = -ENOENT;
	for (i = 0; i < n && v[i].m.excl; i++) {
		const char *name = ktau_func_name(d->cur[0].reg, v[i].id);

		ret = ktau_drill_start(name, ktau_func_group(d->cur[0].reg, v[i].id), has_ksym, d,
				       fn, size, &why);
		if (ret) {
			fprintf(stderr, "ktaud: skipping %s (%s): %s\n", name,
				fmt_ns(b1, sizeof(b1), v[i].m.excl), why);
			continue;
		}
		snprintf(d->routine, sizeof(d->routine), "%s", name);
		d->routine_m = v[i].m;
		d->routine_id = v[i].id;
		fprintf(stderr, "ktaud: %s (%s exclusive, %s inclusive, %llu calls) starts at %s\n",
			name, fmt_ns(b1, sizeof(b1), v[i].m.excl), fmt_ns(b2, sizeof(b2), v[i].m.incl),
			(unsigned long long)v[i].m.calls, fn);
		break;
	}
	free(v);
	if (ret) {
		err_msg("no kernel routine with time on CPU to drill into");
		return EX_KT_FAIL;
	}
	return EX_KT_OK;
}

/* ---- the walk ---- */

static int cmp_callee(const void *a, const void *b)
{
	const struct ktau_drill_callee *x = a, *y = b;

	return x->incl_ns > y->incl_ns ? -1 : x->incl_ns < y->incl_ns;
}

struct stepres {
	struct ktau_drill_callee *c;	/* measured callees */
	size_t n;
	size_t refused, unknown, unmeasured;
	struct meas cur;		/* the current function */
	int cur_probed;
};

/* Probe the callees of the current function (in batches) and measure them. */
static int measure_callees(struct drill *d, const char *fn, struct stepres *sr)
{
	const char *const *cl;
	const char **todo;
	size_t ncl, i, ntodo = 0, next = 0, nb;
	char what[256];
	int ret;

	cl = ktau_callgraph_callees(d->g, fn, &ncl);
	if (!cl)
		return 0;
	todo = calloc(ncl ? ncl : 1, sizeof(*todo));
	sr->c = calloc(ncl ? ncl : 1, sizeof(*sr->c));
	if (!todo || !sr->c) {
		free(todo);
		return report(-ENOMEM, "drill");
	}
	for (i = 0; i < ncl; i++) {
		if (!has_ksym(cl[i], d)) {
			sr->unknown++;
			if (d->verbose)
				fprintf(stderr, "ktaud:   %s: not in /proc/kallsyms (inlined or "
					"discarded at boot)\n", cl[i]);
		} else if (!on_path(d, cl[i])) {
			todo[ntodo++] = cl[i];
		}
	}
	while (next < ntodo) {
		const char *batch[KTAU_LIB_PROBE_MAX];
		uint32_t ids[KTAU_LIB_PROBE_MAX];

		nb = 0;
		for (; next < ntodo; next++) {
			ret = probe_on(d, todo[next]);
			if (ret == -ENOSPC)
				break;
			if (ret > 0) {
				free(todo);
				return ret;
			}
			if (ret) {
				sr->refused++;
				if (d->verbose)
					fprintf(stderr, "ktaud:   %s: %s\n", todo[next],
						ktau_probe_strerror(ret, 1));
				continue;
			}
			ids[nb] = probe_of(d, todo[next])->id;
			batch[nb++] = todo[next];
		}
		if (!nb && next < ntodo) {
			sr->unmeasured += ntodo - next;
			err_msg("no free probe (at most %d at one time, system-wide): %zu callees of "
				"%s not measured", KTAU_LIB_PROBE_MAX, ntodo - next, fn);
			break;
		}
		if (!nb)
			break;
		snprintf(what, sizeof(what), "%s and %zu callee%s probed", fn, nb,
			 nb == 1 ? "" : "s");
		ret = measure(d, what);
		if (ret) {
			free(todo);
			return ret;
		}
		if (probe_of(d, fn)) {
			sr->cur = value_of(d, probe_of(d, fn)->id);
			sr->cur_probed = 1;
		}
		for (i = 0; i < nb; i++) {
			struct meas m = value_of(d, ids[i]);

			sr->c[sr->n++] = (struct ktau_drill_callee){ batch[i], m.incl, m.calls };
		}
		/* Keep the last batch probed: the profile shows it. */
		if (next < ntodo)
			for (i = 0; i < nb; i++)
				probe_off(d, batch[i]);
	}
	free(todo);
	return 0;
}

static double share_of(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * part / whole : 0.0;
}

static int walk(struct drill *d, const char *first, int *verdict, char *why, size_t whysize)
{
	struct stepres sr;
	char b1[32], b2[32];
	size_t i, best = 0;
	uint64_t parent_incl;
	int ret;

	snprintf(d->path[0].name, sizeof(d->path[0].name), "%s", first);
	d->path[0].share = -1;
	d->npath = 1;
	for (;;) {
		struct pstep *cur = &d->path[d->npath - 1];

		*verdict = ktau_drill_decide(0, NULL, 0, d->threshold, d->npath, d->depth, &best);
		if (*verdict == KTAU_DRILL_DEPTH) {
			snprintf(why, whysize, "%s at %s (%lu functions)",
				 ktau_drill_verdict_text(*verdict), cur->name, d->depth);
			return 0;
		}
		/* The path stays probed; drop what the step before probed. */
		for (i = d->nprobes; i-- > 0;)
			if (!on_path(d, d->probes[i].name))
				probe_off(d, d->probes[i].name);
		ret = probe_on(d, cur->name);
		if (ret > 0)
			return ret;
		if (ret)
			fprintf(stderr, "ktaud: %s cannot be probed (%s); its time is the one "
				"measured before\n", cur->name, ktau_probe_strerror(ret, 1));
		memset(&sr, 0, sizeof(sr));
		if (!ktau_callgraph_callees(d->g, cur->name, &i)) {
			*verdict = KTAU_DRILL_NONE;
			snprintf(why, whysize, "%s is not in the call graph", cur->name);
			return 0;
		}
		ret = measure_callees(d, cur->name, &sr);
		if (ret) {
			free(sr.c);
			return ret;
		}
		if (sr.cur_probed)
			cur->self_incl = sr.cur.incl;
		if (sr.cur_probed && d->npath == 1) {
			/* The first function, against its routine in the same run. */
			cur->m = sr.cur;
			if (d->routine_id)
				cur->share = share_of(sr.cur.incl,
						      value_of(d, d->routine_id).incl);
		}
		parent_incl = cur->self_incl;
		/*
		 * Probing the callees slows their parent down by the probes'
		 * own cost (a lot on a debug kernel), which would read as time
		 * of the parent's own: compare the callees with the parent's
		 * time per call as measured the step before, when its callees
		 * were not probed, if that is less.
		 */
		if (d->npath > 1 && sr.cur_probed && sr.cur.calls && cur->m.calls) {
			double before = (double)cur->m.incl * sr.cur.calls / cur->m.calls;

			for (i = 0; i < sr.n; i++)
				if ((double)sr.c[i].incl_ns > before)
					before = sr.c[i].incl_ns;
			if (before < parent_incl) {
				fprintf(stderr, "ktaud: [%zu] %s: %s of probe cost discounted\n",
					d->npath, cur->name,
					fmt_ns(b1, sizeof(b1), parent_incl - (uint64_t)before));
				parent_incl = before;
			}
		}
		*verdict = ktau_drill_decide(parent_incl, sr.c, sr.n, d->threshold, d->npath,
					     d->depth, &best);
		/* The step, as it goes. */
		fprintf(stderr, "ktaud: [%zu] %s: %s inclusive, %llu calls; %zu callees measured",
			d->npath, cur->name, fmt_ns(b1, sizeof(b1), parent_incl),
			(unsigned long long)(sr.cur_probed ? sr.cur.calls : cur->m.calls), sr.n);
		if (sr.refused || sr.unknown)
			fprintf(stderr, " (%zu refused by the kernel, %zu not in kallsyms%s)",
				sr.refused, sr.unknown, d->verbose ? "" : "; -v lists them");
		fputc('\n', stderr);
		if (sr.n) {
			struct ktau_drill_callee top[3];
			size_t nt = sr.n < 3 ? sr.n : 3;
			struct ktau_drill_callee *sorted = malloc(sr.n * sizeof(*sorted));

			if (sorted) {
				memcpy(sorted, sr.c, sr.n * sizeof(*sorted));
				qsort(sorted, sr.n, sizeof(*sorted), cmp_callee);
				memcpy(top, sorted, nt * sizeof(*top));
				free(sorted);
				fprintf(stderr, "ktaud:     top callees:");
				for (i = 0; i < nt; i++)
					fprintf(stderr, "%s %s %s (%.1f%%, %llu calls)", i ? "," : "",
						top[i].name, fmt_ns(b2, sizeof(b2), top[i].incl_ns),
						share_of(top[i].incl_ns, parent_incl),
						(unsigned long long)top[i].calls);
				fputc('\n', stderr);
			}
		}
		if (*verdict != KTAU_DRILL_DESCEND) {
			if (*verdict == KTAU_DRILL_SPREAD)
				snprintf(why, whysize, "%s of %s (top: %s, %.1f%% < %.0f%%)",
					 ktau_drill_verdict_text(*verdict), cur->name, sr.c[best].name,
					 share_of(sr.c[best].incl_ns, parent_incl), d->threshold * 100);
			else
				snprintf(why, whysize, "%s (%s)", ktau_drill_verdict_text(*verdict),
					 cur->name);
			free(sr.c);
			return 0;
		}
		fprintf(stderr, "ktaud: -> %s (%.1f%% >= %.0f%%)\n", sr.c[best].name,
			share_of(sr.c[best].incl_ns, parent_incl), d->threshold * 100);
		cur = &d->path[d->npath++];
		snprintf(cur->name, sizeof(cur->name), "%s", sr.c[best].name);
		cur->m = (struct meas){ sr.c[best].calls, sr.c[best].incl_ns, 0 };
		cur->self_incl = sr.c[best].incl_ns;
		cur->share = share_of(sr.c[best].incl_ns, parent_incl);
		free(sr.c);
	}
}

static void print_path(const struct drill *d, const char *why)
{
	char b1[32], b2[32];
	const char *top;
	size_t i;

	top = d->user[0] ? d->user : d->pid ? "[process]" : "[command]";
	printf("path: %s", top);
	if (!d->start)
		printf(" => %s", d->routine);
	for (i = 0; i < d->npath; i++)
		printf(" => %s", d->path[i].name);
	printf("\ndepth: %zu\n", d->npath);
	if (d->user[0])
		printf("  %-40s user routine (the most kernel time on CPU)\n", d->user);
	else if (d->pid)
		printf("  [process] %d over %.3g s\n", (int)d->pid, d->duration);
	else
		printf("  [command] %s\n", d->cmd[0]);
	if (!d->start)
		printf("  %-40s %10llu calls  exclusive %s, inclusive %s (without probes)\n",
		       d->routine, (unsigned long long)d->routine_m.calls,
		       fmt_ns(b1, sizeof(b1), d->routine_m.excl),
		       fmt_ns(b2, sizeof(b2), d->routine_m.incl));
	/* Each function as measured in the run that chose it, its share in that run. */
	for (i = 0; i < d->npath; i++) {
		const struct pstep *p = &d->path[i];

		if (!i && !p->m.calls && !p->m.incl) {
			printf("  %-40s (not measured)\n", p->name);
			continue;
		}
		printf("  %-40s %10llu calls  inclusive %s", p->name, (unsigned long long)p->m.calls,
		       fmt_ns(b1, sizeof(b1), p->m.incl));
		if (p->share >= 0)
			printf("  %5.1f%% of %s", p->share, i ? d->path[i - 1].name : d->routine);
		putchar('\n');
	}
	printf("stopped: %s\n", why);
	fflush(stdout);
}

static int parse_threshold(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	if (errno || end == s || !isfinite(*v))
		return -EINVAL;
	if (*end == '%' && !end[1])
		*v /= 100;
	else if (*end || *v > 1)
		return -EINVAL;
	return *v > 0 && *v <= 1 ? 0 : -EINVAL;
}

int cmd_drill(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "vmlinux", required_argument, NULL, 'V' },
		{ "callgraph", required_argument, NULL, 'G' },
		{ "threshold", required_argument, NULL, 'X' },
		{ "depth", required_argument, NULL, 'E' },
		{ "runs", required_argument, NULL, 'r' },
		{ "start", required_argument, NULL, 'S' },
		{ "output", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct drill d = { .threshold = 0.5, .depth = 8, .runs = 1, .outdir = "ktau-drill",
			   .duration = 5, .pfd = -1 };
	struct run cur[MAX_RUNS];
	char fn[NAME_LEN], why[512] = "";
	int c, ret, verdict = KTAU_DRILL_NONE, dur_given = 0;
	size_t i;

	while ((c = getopt_long(argc, argv, "+tDsr:o:p:d:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'V':
		case 'G':
			if (d.graph_path)
				return usage_err("drill", "give one of --vmlinux and --callgraph");
			d.graph_path = optarg;
			break;
		case 't': return moved_short("drill", c, "--threshold");
		case 'D': return moved_short("drill", c, "--depth");
		case 's': return moved_short("drill", c, "--start");
		case 'X':
			if (parse_threshold(optarg, &d.threshold))
				return usage_err("drill", "bad --threshold '%s': a share above 0, "
						 "at most 1 (0.5) or 100%% (50%%)", optarg);
			break;
		case 'E':
			if (parse_uint(optarg, &d.depth) || !d.depth || d.depth > MAX_DEPTH)
				return usage_err("drill", "bad --depth '%s': 1 to %d", optarg,
						 MAX_DEPTH);
			break;
		case 'r':
			if (parse_uint(optarg, &d.runs) || !d.runs || d.runs > MAX_RUNS)
				return usage_err("drill", "bad --runs '%s': 1 to %d", optarg,
						 MAX_RUNS);
			break;
		case 'S':
			if (!*optarg || strlen(optarg) >= NAME_LEN)
				return usage_err("drill", "bad --start '%s': a kernel function",
						 optarg);
			d.start = optarg;
			break;
		case 'o': d.outdir = optarg; break;
		case 'p':
			if (parse_pid(optarg, &d.pid))
				return usage_err("drill", "bad pid '%s'", optarg);
			break;
		case 'd':
			if (parse_seconds(optarg, &d.duration) || d.duration > 3600)
				return usage_err("drill", "bad --duration '%s': seconds, at most "
						 "3600", optarg);
			dur_given = 1;
			break;
		case 'v': d.verbose = 1; break;
		case 'h': help(stdout); return EX_KT_OK;
		default: return usage_err("drill", "bad option");
		}
	}
	if (d.pid && optind < argc)
		return usage_err("drill", "give a command or -p PID, not both");
	if (!d.pid && optind >= argc)
		return usage_err("drill", "no command: ktaud drill [options] -- COMMAND ARGS...");
	if (dur_given && !d.pid)
		return usage_err("drill", "--duration is for -p PID");
	if (!*d.outdir)
		return usage_err("drill", "-o needs a directory name");
	d.cmd = d.pid ? NULL : argv + optind;
	memset(cur, 0, sizeof(cur));
	d.cur = cur;

	/* Everything that can fail without running anything first. */
	if (access("/proc/ktau/version", F_OK)) {
		ret = report(-ENOENT, "open /proc/ktau");
		goto out;
	}
	ret = open_graph(&d);
	if (ret)
		goto out;
	ret = probes_open_report();
	if (ret < 0) {
		ret = -ret;
		goto out;
	}
	d.pfd = ret;
	/*
	 * Whether probes may be added, before anything runs: a removal of
	 * function ID 0 (never one) is refused for the capability first.
	 */
	ret = ktau_probe_remove_id(d.pfd, 0);
	if (ret == -EPERM || ret == -EACCES || ret == -ENOTTY || ret == -EOPNOTSUPP) {
		err_msg("%s", ktau_probe_strerror(ret, 1));
		ret = ret == -ENOTTY || ret == -EOPNOTSUPP ? EX_KT_NOKTAU : EX_KT_PERM;
		goto out;
	}
	if (d.pid && kill(d.pid, 0) && errno == ESRCH) {
		err_msg("process %d does not exist", (int)d.pid);
		ret = EX_KT_GONE;
		goto out;
	}
	ret = load_ksyms(&d);
	if (ret)
		goto out;
	if (d.pid) {
		ret = open_ktau(&d.k);
		if (ret)
			goto out;
	} else {
		/* The user-level runtime's profiles, one directory per process. */
		snprintf(d.udir, sizeof(d.udir), "%s/ktau-drill-XXXXXX",
			 getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(d.udir)) {
			ret = report(-errno, "mkdtemp");
			goto out;
		}
		{
			char env[PATH_MAX + 8];

			snprintf(env, sizeof(env), "%s/%%p", d.udir);
			setenv("KTAU_PROFILE_DIR", env, 1);
		}
	}

	if (d.start) {
		if (!has_ksym(d.start, &d)) {
			err_msg("no kernel function %s in /proc/kallsyms", d.start);
			ret = EX_KT_USAGE;
			goto out;
		}
		snprintf(d.routine, sizeof(d.routine), "[start]");
		snprintf(fn, sizeof(fn), "%s", d.start);
	} else {
		ret = find_start(&d, fn, sizeof(fn));
		if (ret)
			goto out;
	}
	ret = walk(&d, fn, &verdict, why, sizeof(why));
	if (ret)
		goto out;
	fprintf(stderr, "ktaud: stopped: %s\n", why);
	print_path(&d, why);
out:
	/* The profile of the last run, with the probed functions. */
	if (d.last.snap && ret != EX_KT_USAGE) {
		struct out_opts oo = { .tau_dir = d.outdir, .dense = 1 };

		if (!write_outputs(d.last.snap, d.last.reg, &oo))
			fprintf(stderr, "ktaud: TAU profile of the last run (with the probed "
				"functions): %s/ (%zu files)\n", d.outdir, d.last.snap->ntasks);
		else if (!ret)
			ret = EX_KT_FAIL;
	}
	for (i = 0; i < d.ncur; i++)
		run_free(&cur[i]);
	run_free(&d.last);
	if (d.udir[0]) {
		clear_udir(d.udir);
		rmdir(d.udir);
	}
	if (d.pfd >= 0)
		close(d.pfd);
	ktau_close(d.k);
	ktau_callgraph_free(d.g);
	free(d.ksyms);
	free(d.ktext);
	return ret;
}
