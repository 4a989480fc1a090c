// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud merge: an existing TAU profile directory (from TAU itself, or a
 * user-only profile of libktau) and the kernel profile of the same run
 * (snapshot files of 'ktaud run --save' or 'ktaud dump --threads --save')
 * into one TAU profile directory, thread by thread.
 *
 * The two profiles have no common time line, so the kernel time of a
 * thread cannot be placed under the user routine that incurred it. What
 * merge can do: put each thread's kernel routines and groups (exact calls
 * and times) into that thread's profile, as callpath children of its
 * top-level routine (the one with the largest inclusive time, or --top),
 * whose exclusive time is reduced by them; or (--attach node) under a
 * separate "[kernel]" routine. The libktau runtime (ktau_timer_*,
 * -finstrument-functions) charges kernel time per user routine instead.
 *
 * Threads are matched (see ktaud(1)): --map first; then a TAU file's
 * "tid" metadata when the threads of its node have distinct tids; else
 * the node's process (--pid, or "pid" metadata, or the n-th process of
 * the kernel profile in start order: refused when the node names another
 * pid or program, unless --force-map) and its threads in start order
 * (start time, then tid) against the TAU threads in thread-number order.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ktaud.h"
#include "series.h"
#include "internal.h"
#include "tauprofile.h"

#define NAME_MAX_BYTES	4096
#define KERNEL_NODE	"[kernel]"
#define KERNEL_NODE_GROUP "KERNEL_UNATTRIBUTED"

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud merge [options] <tau-dir> <snapshot-file|dir>...\n\n"
"Merge a TAU profile directory (TAU's, or libktau's without kernel data)\n"
"with the kernel profile of the same run (snapshot files of 'ktaud run\n"
"--save' or 'ktaud dump --threads --save'), thread by thread, into a new TAU\n"
"profile directory. The two have no common time line: each thread's kernel\n"
"routines and groups are added with exact calls and times, under its\n"
"top-level routine (whose exclusive time is reduced by them) or under a\n"
"\"[kernel]\" routine, not under the user routines that incurred them (for\n"
"that, time the program with libktau's runtime).\n\n"
"  -o, --output DIR     the merged profile (default: ktau-merged)\n"
"  -m, --map N.C.T=TID[,N.C.T=TID...]\n"
"                       TAU thread profile.N.C.T is kernel thread TID\n"
"                       (repeatable)\n"
"  -p, --pid [N=]PID    TAU node N (default 0) is process PID\n"
"      --force-map      a node that nothing maps takes the next kernel process\n"
"                       in start order even when its pid or program differ\n"
"                       (without: refused)\n"
"  -f, --force          write into a directory that holds files merge did not\n"
"                       write (none of them is replaced)\n"
"      --attach WHERE   top: under the top-level routine (default);\n"
"                       node: under a separate \"[kernel]\" routine\n"
"      --top NAME       the top-level routine (default: the largest inclusive)\n"
"  -q, --quiet          no summary\n"
"  -h, --help           this help\n\n"
"Threads without a match are copied without kernel data; the summary on\n"
"stderr and the metadata (\"KTAU Merge ...\") say what was matched and how.\n"
"Exit: 0 ok, 1 unreadable or invalid input or nothing matched, 2 bad argument.\n");
}

/* ---- Matching threads --------------------------------------------- */

struct mapopt {
	int node, ctx, thread;
	pid_t tid;
	int used;
};

struct pidopt {
	int node;
	pid_t pid;
};

struct match {
	const struct ktau_task *task;	/* NULL: not matched */
	const char *how;
	const char *why_not;
};

static int cmp_start(const void *a, const void *b)
{
	const struct ktau_task *x = *(const struct ktau_task * const *)a;
	const struct ktau_task *y = *(const struct ktau_task * const *)b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Tasks of the kernel profile that are threads or processes (no aggregate). */
static const struct ktau_task *find_tid(const struct ktau_snap *s, pid_t tid)
{
	size_t i;

	for (i = 0; i < s->ntasks; i++)
		if (!(s->tasks[i].flags & KTAU_TASK_AGGREGATE) && s->tasks[i].tid == tid)
			return &s->tasks[i];
	return NULL;
}

static int parse_int_meta(const char *v, long *out)
{
	char *end;

	if (!v || !*v)
		return -1;
	errno = 0;
	*out = strtol(v, &end, 10);
	return errno || *end || *out <= 0 || *out > INT_MAX ? -1 : 0;
}

/* The program of TAU file f: libktau's "comm", or the base of TAU's "Executable". */
static const char *prog_name(const struct tfile *f)
{
	const char *v = meta_get(f, "comm"), *b;

	if (v && *v)
		return v;
	v = meta_get(f, "Executable");
	if (!v || !*v)
		return NULL;
	b = strrchr(v, '/');
	return b && b[1] ? b + 1 : v;
}

/*
 * Whether node file f may be the kernel process p when nothing maps
 * them: not when f names another pid or another program. 0, or -EINVAL
 * after saying so.
 */
static int check_fallback(const struct tfile *f, const struct ktau_task *p)
{
	const char *name = prog_name(f), *vpid = meta_get(f, "pid");
	char comm[sizeof(p->comm) + 1];
	long v;

	memcpy(comm, p->comm, sizeof(p->comm));
	comm[sizeof(p->comm)] = '\0';
	if (!parse_int_meta(vpid, &v)) {
		err_msg("profile.%d.%d.%d is of pid %ld, which the kernel profile does not have: "
			"are they of the same run? Map them with --pid %d=PID or --map "
			"%d.%d.%d=TID, or take the kernel's processes in start order with "
			"--force-map", f->node, f->ctx, f->thread, v, f->node, f->node, f->ctx,
			f->thread);
		return -EINVAL;
	}
	if (name && strncmp(name, comm, sizeof(p->comm) - 1)) {
		err_msg("profile.%d.%d.%d is of program '%s', but the next process of the kernel "
			"profile in start order, %d, is '%s': are they of the same run? Map them "
			"with --pid %d=PID or --map %d.%d.%d=TID, or take it anyway with "
			"--force-map", f->node, f->ctx, f->thread, name, (int)p->pid, comm,
			f->node, f->node, f->ctx, f->thread);
		return -EINVAL;
	}
	if (!name)
		err_msg("warning: profile.%d.%d.%d names neither its pid nor its program: taken "
			"as process %d (%s), the next in start order; check it, or give --pid",
			f->node, f->ctx, f->thread, (int)p->pid, comm);
	return 0;
}

/*
 * Match the files of the time metric (sorted by node, context, thread)
 * to tasks of s. used[] marks tasks taken. Without force_map, a node
 * that nothing maps is refused when its pid or program differ from the
 * process it would get in start order.
 */
static int match_threads(const struct tmetric *tm, const struct ktau_snap *s,
			 struct mapopt *maps, size_t nmaps, const struct pidopt *pids,
			 size_t npids, int force_map, struct match *mt)
{
	const struct ktau_task **procs = NULL, **threads = NULL;
	char *used = calloc(s->ntasks ? s->ntasks : 1, 1);
	char *taken = calloc(s->ntasks ? s->ntasks : 1, 1);
	pid_t *npid = calloc(tm->n ? tm->n : 1, sizeof(*npid));
	const char **nhow = calloc(tm->n ? tm->n : 1, sizeof(*nhow));
	size_t i, j, nprocs = 0, nth, first, last, nextproc = 0;
	int ret = 0;

	procs = calloc(s->ntasks ? s->ntasks : 1, sizeof(*procs));
	threads = calloc(s->ntasks ? s->ntasks : 1, sizeof(*threads));
	if (!used || !taken || !npid || !nhow || !procs || !threads) {
		ret = -ENOMEM;
		goto out;
	}
	/* 1. Explicit maps. */
	for (i = 0; i < tm->n; i++) {
		const struct tfile *f = &tm->files[i];

		for (j = 0; j < nmaps; j++) {
			const struct ktau_task *t;

			if (maps[j].node != f->node || maps[j].ctx != f->ctx ||
			    maps[j].thread != f->thread)
				continue;
			maps[j].used = 1;
			t = find_tid(s, maps[j].tid);
			if (!t) {
				err_msg("--map %d.%d.%d=%d: thread %d is not in the kernel profile",
					f->node, f->ctx, f->thread, (int)maps[j].tid, (int)maps[j].tid);
				ret = -EINVAL;
				goto out;
			}
			mt[i].task = t;
			mt[i].how = "--map";
			used[t - s->tasks] = 1;
		}
	}
	for (j = 0; j < nmaps; j++) {
		if (!maps[j].used) {
			err_msg("--map %d.%d.%d=%d: there is no profile.%d.%d.%d", maps[j].node,
				maps[j].ctx, maps[j].thread, (int)maps[j].tid, maps[j].node,
				maps[j].ctx, maps[j].thread);
			ret = -EINVAL;
			goto out;
		}
	}
	/* Processes in start order (of their earliest thread). */
	for (i = 0; i < s->ntasks; i++) {
		const struct ktau_task *t = &s->tasks[i];

		if (t->flags & KTAU_TASK_AGGREGATE)
			continue;
		for (j = 0; j < nprocs; j++)
			if (procs[j]->pid == t->pid)
				break;
		if (j == nprocs)
			procs[nprocs++] = t;
		else if (cmp_start(&t, &procs[j]) < 0)
			procs[j] = t;
	}
	qsort(procs, nprocs, sizeof(*procs), cmp_start);

	/* 2. The process of each node: --pid, "pid" metadata, else (below)
	 * the next process in start order that no node has. */
	for (first = 0; first < tm->n; first = last) {
		int node = tm->files[first].node;
		long v;

		for (last = first; last < tm->n && tm->files[last].node == node; last++)
			;
		for (j = 0; j < npids; j++)
			if (pids[j].node == node) {
				npid[first] = pids[j].pid;
				nhow[first] = "--pid, threads in start order";
			}
		if (!npid[first] && !parse_int_meta(meta_get(&tm->files[first], "pid"), &v)) {
			for (j = 0; j < nprocs && procs[j]->pid != (pid_t)v; j++)
				;
			if (j < nprocs) {
				npid[first] = (pid_t)v;
				nhow[first] = "pid metadata, threads in start order";
			}
		}
		for (j = 0; j < nprocs; j++)
			if (procs[j]->pid == npid[first])
				taken[j] = 1;
	}
	for (first = 0; first < tm->n; first = last) {
		int node = tm->files[first].node, distinct = 1;
		pid_t pid;
		const char *phow;
		long v;

		for (last = first; last < tm->n && tm->files[last].node == node; last++)
			;
		/* tid metadata, when the node's threads have distinct ones. */
		for (i = first; i < last && distinct; i++) {
			if (parse_int_meta(meta_get(&tm->files[i], "tid"), &v)) {
				distinct = 0;
				break;
			}
			for (j = first; j < i; j++)
				if (!strcmp(meta_get(&tm->files[j], "tid"), meta_get(&tm->files[i], "tid")))
					distinct = 0;
		}
		for (i = first; distinct && i < last; i++) {
			const struct ktau_task *t;

			if (mt[i].task)
				continue;
			parse_int_meta(meta_get(&tm->files[i], "tid"), &v);
			t = find_tid(s, (pid_t)v);
			if (t && !parse_int_meta(meta_get(&tm->files[i], "pid"), &v) && t->pid != v)
				t = NULL;	/* the same tid, another process: not this one */
			if (t && !used[t - s->tasks]) {
				mt[i].task = t;
				mt[i].how = "tid metadata";
				used[t - s->tasks] = 1;
			}
		}
		pid = npid[first];
		phow = nhow[first];
		if (!pid) {
			/* The next process in start order that no node has. */
			for (; nextproc < nprocs; nextproc++) {
				if (taken[nextproc])
					continue;
				for (j = 0; j < s->ntasks; j++)
					if (used[j] && s->tasks[j].pid == procs[nextproc]->pid)
						break;
				if (j == s->ntasks)
					break;
			}
			if (nextproc < nprocs) {
				if (!force_map && check_fallback(&tm->files[first], procs[nextproc])) {
					ret = -EINVAL;
					goto out;
				}
				taken[nextproc] = 1;
				pid = procs[nextproc++]->pid;
				phow = force_map ? "node and process in start order (--force-map), "
						   "threads in start order"
						 : "node and process in start order, threads in start order";
			}
		}
		if (!pid) {
			for (i = first; i < last; i++)
				if (!mt[i].task)
					mt[i].why_not = "no process of the kernel profile is left for this node";
			continue;
		}
		nth = 0;
		for (i = 0; i < s->ntasks; i++)
			if (!(s->tasks[i].flags & KTAU_TASK_AGGREGATE) && s->tasks[i].pid == pid &&
			    !used[i])
				threads[nth++] = &s->tasks[i];
		qsort(threads, nth, sizeof(*threads), cmp_start);
		if (nth && (threads[0]->flags & KTAU_TASK_PROCESS) && last - first > 1) {
			err_msg("the kernel profile has process %d with its threads summed: a "
				"per-thread merge needs thread records (ktaud run --save, or ktaud "
				"dump --threads --save)", (int)pid);
			ret = -EINVAL;
			goto out;
		}
		for (i = first, j = 0; i < last; i++) {
			if (mt[i].task)
				continue;
			if (j < nth) {
				mt[i].task = threads[j];
				mt[i].how = phow;
				used[threads[j] - s->tasks] = 1;
				j++;
			} else {
				mt[i].why_not = "the process has no thread left for it";
			}
		}
	}
out:
	free(used);
	free(taken);
	free(npid);
	free(nhow);
	free(procs);
	free(threads);
	return ret;
}

/* ---- Writing ----------------------------------------------------------- */

struct krow {
	char *name, *group;
	unsigned long long calls;
	double excl, incl;		/* us */
};

struct merge_opts {
	int attach_node;
	const char *top;
};

struct merged {
	struct krow *k;			/* kernel rows to append */
	size_t nk;
	size_t top;			/* index of the top routine in the file, or nf */
	double new_excl;		/* its reduced exclusive time (TIME) */
	double kernel_us, removed_us;
	int node;			/* attached to "[kernel]" */
	const char *why_node;
	char *node_name;
};

static void merged_free(struct merged *m)
{
	size_t i;

	for (i = 0; i < m->nk; i++) {
		free(m->k[i].name);
		free(m->k[i].group);
	}
	free(m->k);
	free(m->node_name);
	memset(m, 0, sizeof(*m));
}

static int has_name(const struct tfile *f, const struct merged *m, const char *name)
{
	size_t i;

	for (i = 0; i < f->nf; i++)
		if (!strcmp(f->f[i].name, name))
			return 1;
	for (i = 0; i < m->nk; i++)
		if (!strcmp(m->k[i].name, name))
			return 1;
	return 0;
}

static int add_krow(struct merged *m, char *name, char *group, unsigned long long calls,
		    double excl, double incl)
{
	struct krow *n;

	if (!name || !group) {
		free(name);
		free(group);
		return -ENOMEM;
	}
	n = realloc(m->k, (m->nk + 1) * sizeof(*n));
	if (!n) {
		free(name);
		free(group);
		return -ENOMEM;
	}
	m->k = n;
	m->k[m->nk++] = (struct krow){ name, group, calls, excl > incl ? incl : excl, incl };
	return 0;
}

/* The kernel rows of task t for file f (time metric). */
static int build_merge(const struct tfile *f, const struct ktau_task *t,
		       const struct ktau_registry *reg, const struct merge_opts *o,
		       struct merged *m)
{
	unsigned long long gcalls[KTAU_LIB_NR_GROUPS + 1] = { 0 };
	double gexcl[KTAU_LIB_NR_GROUPS + 1] = { 0 }, gincl[KTAU_LIB_NR_GROUPS + 1] = { 0 };
	char **names = NULL, buf[NAME_MAX_BYTES], *parent;
	double kmax = 0, ktot = 0;
	size_t i;
	int g, ret = 0, has_other = 0;

	memset(m, 0, sizeof(*m));
	m->top = f->nf;
	names = calloc(t->nentries ? t->nentries : 1, sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (i = 0; i < t->nentries; i++) {
		const struct ktau_func_stat *e = &t->entries[i];

		g = ktau_func_group(reg, e->id);
		if (g < 0 || g >= KTAU_LIB_NR_GROUPS)
			g = KTAU_LIB_NR_GROUPS;
		has_other |= g == KTAU_LIB_NR_GROUPS;
		gcalls[g] += e->count;
		gexcl[g] += e->excl_ns / 1000.0;
		gincl[g] += e->incl_ns / 1000.0;
		ktot += e->excl_ns / 1000.0;
		if (e->incl_ns / 1000.0 > kmax)
			kmax = e->incl_ns / 1000.0;
	}
	for (g = 0; g <= KTAU_LIB_NR_GROUPS; g++)
		if (gincl[g] > kmax)
			kmax = gincl[g];
	if (ktot > kmax)
		kmax = ktot;
	m->kernel_us = ktot;

	/* Where the kernel goes. */
	if (!o->attach_node) {
		for (i = 0; i < f->nf; i++) {
			const struct tfunc *x = &f->f[i];

			if (x->callpath || is_kernel_group(x->group) || !x->calls)
				continue;
			if (o->top ? !strcmp(x->name, o->top)
				   : (m->top == f->nf || x->incl > f->f[m->top].incl))
				m->top = i;
		}
		if (m->top == f->nf)
			m->why_node = o->top ? "--top routine not in this thread"
					     : "no user routine in this thread";
		else if (kmax > f->f[m->top].incl * (1 + 1e-12))
			m->why_node = "its kernel time exceeds the top-level routine's inclusive time";
		if (m->why_node)
			m->top = f->nf;
	}
	if (m->top == f->nf) {
		m->node = 1;
		for (i = 0; ; i++) {
			free(m->node_name);
			m->node_name = i ? ktau__strfmt("%s [%zu]", KERNEL_NODE, i + 1) : strdup(KERNEL_NODE);
			if (!m->node_name || !has_name(f, m, m->node_name))
				break;
		}
		if (!m->node_name) {
			ret = -ENOMEM;
			goto out;
		}
		parent = m->node_name;
	} else {
		parent = f->f[m->top].name;
		m->new_excl = f->f[m->top].excl - ktot;
		if (m->new_excl < 0)
			m->new_excl = 0;
		m->removed_us = f->f[m->top].excl - m->new_excl;
	}

	/* Names: the kernel gives way to nothing; a clash gets " [id N]". */
	for (i = 0; i < t->nentries; i++) {
		ktau__clean_name(buf, 200, ktau_func_name(reg, t->entries[i].id));
		if (has_name(f, m, buf) || !strcmp(buf, parent) || !strcmp(buf, KERNEL_NODE)) {
			size_t l = strlen(buf);

			snprintf(buf + l, sizeof(buf) - l, " [id %u]", t->entries[i].id);
		}
		for (g = 0; g <= KTAU_LIB_NR_GROUPS; g++)
			if (!strcmp(buf, ktau_group_class(g < KTAU_LIB_NR_GROUPS ? g : -1))) {
				size_t l = strlen(buf);

				snprintf(buf + l, sizeof(buf) - l, " [id %u]", t->entries[i].id);
			}
		names[i] = strdup(buf);
		if (!names[i]) {
			ret = -ENOMEM;
			goto out;
		}
	}
	for (i = 0; i < t->nentries && !ret; i++) {
		const struct ktau_func_stat *e = &t->entries[i];

		g = ktau_func_group(reg, e->id);
		if (!e->count)
			continue;
		ret = add_krow(m, strdup(names[i]),
			       ktau__strfmt("TAU_KERNEL_MERGE|KTAU_%s", ktau_group_class(g)),
			       e->count, e->excl_ns / 1000.0, e->incl_ns / 1000.0);
	}
	for (g = 0; g <= KTAU_LIB_NR_GROUPS && !ret; g++) {
		const char *cls = ktau_group_class(g < KTAU_LIB_NR_GROUPS ? g : -1);

		if (g == KTAU_LIB_NR_GROUPS && !has_other)
			break;
		if (has_name(f, m, cls)) {
			err_msg("a user routine is named \"%s\", like a kernel group: rename it", cls);
			ret = -EINVAL;
			break;
		}
		ret = add_krow(m, strdup(cls), strdup("KERNEL_GROUPS|TAU_KERNEL_MERGE"), gcalls[g],
			       gcalls[g] ? gexcl[g] : 0, gcalls[g] ? gincl[g] : 0);
	}
	if (!ret && m->node)
		ret = add_krow(m, strdup(m->node_name), strdup(KERNEL_NODE_GROUP), 1, 0, kmax);
	for (g = 0; g <= KTAU_LIB_NR_GROUPS && !ret; g++) {
		if (!gcalls[g])
			continue;
		ret = add_krow(m, ktau__strfmt("%s => %s", parent,
					       ktau_group_class(g < KTAU_LIB_NR_GROUPS ? g : -1)),
			       strdup("TAU_CALLPATH|KERNEL_GROUPS|TAU_KERNEL_MERGE"), gcalls[g],
			       gexcl[g], gincl[g]);
	}
	for (i = 0; i < t->nentries && !ret; i++) {
		const struct ktau_func_stat *e = &t->entries[i];

		if (!e->count)
			continue;
		g = ktau_func_group(reg, e->id);
		ret = add_krow(m, ktau__strfmt("%s => %s", parent, names[i]),
			       ktau__strfmt("TAU_CALLPATH|TAU_KERNEL_MERGE|KTAU_%s", ktau_group_class(g)),
			       e->count, e->excl_ns / 1000.0, e->incl_ns / 1000.0);
	}
out:
	for (i = 0; i < t->nentries; i++)
		free(names[i]);
	free(names);
	return ret;
}

/* What write_file's hooks need. */
struct mfile {
	const struct tfile *f;
	const struct match *mt;
	const struct merged *m;
	const char *top_name;
	int is_time;
};

/* An earlier merge's attributes are not copied: this one writes its own. */
static const char *mf_meta_value(const char *name, const char *value, void *arg)
{
	(void)arg;
	return strncmp(name, "KTAU Merge", 10) ? value : NULL;
}

static void mf_meta(FILE *out, void *arg)
{
	const struct mfile *x = arg;
	const struct match *mt = x->mt;
	const struct merged *m = x->m;
	char buf[512];

	if (!mt->task) {
		ktau__meta(out, "KTAU Merge", "ktaud merge: no kernel thread matched this TAU "
			   "thread; copied without kernel data");
		if (mt->why_not)
			ktau__meta(out, "KTAU Merge Reason", mt->why_not);
	} else {
		const struct ktau_task *t = mt->task;
		char comm[sizeof(t->comm) + 1];

		snprintf(buf, sizeof(buf),
			 "ktaud merge: the kernel profile of thread %d, added without time "
			 "alignment: its kernel routines and groups (exact calls and times) are "
			 "callpath children of \"%s\"; which user routines incurred them is not "
			 "known", (int)t->tid, x->top_name);
		ktau__meta(out, "KTAU Merge", buf);
		ktau__meta_u64(out, "KTAU Merge tid", (unsigned long long)t->tid);
		ktau__meta_u64(out, "KTAU Merge pid", (unsigned long long)t->pid);
		ktau__clean_name(comm, sizeof(comm), t->comm[0] ? t->comm : "?");
		ktau__meta(out, "KTAU Merge comm", comm);
		ktau__meta(out, "KTAU Merge Match", mt->how);
		ktau__meta(out, "KTAU Merge Attached To", x->top_name);
		if (m->why_node)
			ktau__meta(out, "KTAU Merge Reason", m->why_node);
		snprintf(buf, sizeof(buf), "%.16G", m->kernel_us);
		ktau__meta(out, "KTAU Merge Kernel us", buf);
		if (!m->node) {
			snprintf(buf, sizeof(buf), "%.16G", m->removed_us);
			ktau__meta(out, "KTAU Merge Excl Reduced us", buf);
			snprintf(buf, sizeof(buf), "%.16G", m->kernel_us - m->removed_us);
			ktau__meta(out, "KTAU Merge Excl Not Reduced us", buf);
		}
		if (t->flags & KTAU_TASK_PROCESS)
			ktau__meta_u64(out, "KTAU Merge Threads Summed", t->nthreads);
	}
}

/* The top routine (and its callpath ends) lose the kernel time. */
static double mf_excl(const struct tfile *f, size_t i, void *arg)
{
	const struct mfile *x = arg;
	const struct tfunc *fn = &f->f[i];
	const char *last = strrchr(fn->name, '>');

	if (!x->is_time || !x->mt->task || x->m->node)
		return fn->excl;
	if (i == x->m->top)
		return x->m->new_excl;
	if (fn->callpath && last && !strcmp(last + 2, x->top_name) && fn->excl > x->m->new_excl)
		return x->m->new_excl;
	return fn->excl;
}

static void mf_rows(FILE *out, void *arg)
{
	const struct mfile *x = arg;
	size_t i;

	for (i = 0; i < x->m->nk; i++) {
		const struct krow *k = &x->m->k[i];

		fprintf(out, "\"%s\" %llu 0 %.16G %.16G 0 GROUP=\"%s\"\n", k->name, k->calls,
			x->is_time ? k->excl : 0.0, x->is_time ? k->incl : 0.0, k->group);
	}
}

/* One output file: f of metric 'metric', time metric or not. */
static int write_file(struct ktau_outdir *od, const char *name, const struct tfile *f,
		      const char *metric, int is_time, const struct match *mt,
		      const struct merged *m)
{
	struct mfile x = {
		.f = f, .mt = mt, .m = m, .is_time = is_time,
		.top_name = !mt->task ? "" : m->node ? m->node_name : f->f[m->top].name,
	};
	struct tfile_out o = {
		.metric = metric, .meta_value = mf_meta_value, .meta = mf_meta, .excl = mf_excl,
		.nextra = mt->task ? m->nk : 0, .rows = mt->task ? mf_rows : NULL, .arg = &x,
	};
	FILE *out = ktau_outdir_create(od, name);
	int ret;

	if (!out)
		return -errno;
	ret = tfile_write(out, f, &o);
	if (fclose(out) && !ret)
		ret = -errno;
	if (ret)
		ktau__outdir_discard(od, name);
	return ret;
}

static int parse_map(const char *s, struct mapopt *m)
{
	char tail;
	int tid;

	if (sscanf(s, "%d.%d.%d=%d%c", &m->node, &m->ctx, &m->thread, &tid, &tail) != 4 ||
	    m->node < 0 || m->ctx < 0 || m->thread < 0 || tid <= 0)
		return -EINVAL;
	m->tid = tid;
	m->used = 0;
	return 0;
}

static int parse_pidopt(const char *s, struct pidopt *p)
{
	char tail;
	int node, pid;

	if (sscanf(s, "%d=%d%c", &node, &pid, &tail) == 2 && node >= 0 && pid > 0) {
		p->node = node;
		p->pid = pid;
		return 0;
	}
	if (sscanf(s, "%d%c", &pid, &tail) == 1 && pid > 0) {
		p->node = 0;
		p->pid = pid;
		return 0;
	}
	return -EINVAL;
}

int cmd_merge(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "map", required_argument, NULL, 'm' },
		{ "pid", required_argument, NULL, 'p' },
		{ "attach", required_argument, NULL, 'A' },
		{ "top", required_argument, NULL, 'T' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "force", no_argument, NULL, 'f' },
		{ "force-map", no_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct merge_opts mo = { 0 };
	struct mapopt *maps = NULL;
	struct pidopt *pids = NULL;
	struct match *mt = NULL;
	struct merged *mg = NULL;
	struct tprofile prof = { 0 };
	struct ktau_snap *sum = NULL;
	struct series s = { 0 };
	struct ktau_outdir *od = NULL;
	const char *outdir = "ktau-merged";
	char *outexp = NULL;
	char rin[PATH_MAX], rout[PATH_MAX], path[PATH_MAX], b1[32];
	size_t nmaps = 0, npids = 0, i, j, nmerged = 0, nkthreads = 0;
	int c, quiet = 0, rc = EX_KT_OK, ret, force = 0, force_map = 0;
	size_t maxmaps = 1;

	/* Each option takes an argument: at most argc of each; --map lists. */
	for (i = 1; i < (size_t)argc; i++)
		for (j = 0; argv[i][j]; j++)
			maxmaps += argv[i][j] == ',';
	maps = calloc((size_t)argc + maxmaps, sizeof(*maps));
	pids = calloc((size_t)argc, sizeof(*pids));
	if (!maps || !pids) {
		rc = report(-ENOMEM, "merge");
		goto out;
	}
	while ((c = getopt_long(argc, argv, "o:m:p:atqfh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			outdir = optarg;
			break;
		case 'm': {
			char *list = strdup(optarg), *item, *save = NULL;

			if (!list) {
				rc = report(-ENOMEM, "merge");
				goto out;
			}
			for (item = strtok_r(list, ",", &save); item;
			     item = strtok_r(NULL, ",", &save)) {
				if (parse_map(item, &maps[nmaps])) {
					rc = usage_err("merge", "bad --map '%s': NODE.CONTEXT.THREAD=TID"
						       "[,...], as 0.0.1=1234", item);
					free(list);
					goto out;
				}
				nmaps++;
			}
			free(list);
			break;
		}
		case 'f': force = 1; break;
		case 'M': force_map = 1; break;
		case 'p':
			if (parse_pidopt(optarg, &pids[npids])) {
				rc = usage_err("merge", "bad --pid '%s': PID or NODE=PID", optarg);
				goto out;
			}
			npids++;
			break;
		case 'a':
		case 't':
			rc = moved_short("merge", c, c == 'a' ? "--attach" : "--top");
			goto out;
		case 'A':
			if (!strcmp(optarg, "top")) {
				mo.attach_node = 0;
			} else if (!strcmp(optarg, "node")) {
				mo.attach_node = 1;
			} else {
				rc = usage_err("merge", "bad --attach '%s': top or node", optarg);
				goto out;
			}
			break;
		case 'T': mo.top = optarg; break;
		case 'q': quiet = 1; break;
		case 'h':
			help(stdout);
			goto out;
		default:
			rc = usage_err("merge", "bad option");
			goto out;
		}
	}
	if (argc - optind < 2) {
		rc = usage_err("merge", "give a TAU profile directory and the kernel profile "
			       "(snapshot files or directories) of the same run");
		goto out;
	}
	if (!*outdir) {
		rc = usage_err("merge", "-o needs a directory name");
		goto out;
	}
	outexp = output_path(outdir);
	if (!outexp) {
		rc = EX_KT_FAIL;
		goto out;
	}
	outdir = outexp;
	if (realpath(argv[optind], rin) && realpath(outdir, rout) && !strcmp(rin, rout)) {
		rc = usage_err("merge", "the output directory is the input TAU directory: "
			       "give another one with -o");
		goto out;
	}
	if (read_profile(argv[optind], &prof)) {
		rc = EX_KT_FAIL;
		goto out;
	}
	for (i = 0; i < prof.nm; i++) {
		for (j = 0; j < prof.m[i].n; j++) {
			const struct tfile *f = &prof.m[i].files[j];
			size_t k;

			for (k = 0; k < f->nf; k++) {
				if (is_kernel_group(f->f[k].group)) {
					err_msg("%s: profile.%d.%d.%d already has kernel data (\"%s\", "
						"GROUP=\"%s\"): merge a profile without it (for libktau's, "
						"run the program with KTAU_SHARED=0)", argv[optind],
						f->node, f->ctx, f->thread, f->f[k].name, f->f[k].group);
					rc = EX_KT_FAIL;
					goto out;
				}
			}
		}
	}
	if (series_load(&s, argc - optind - 1, argv + optind + 1)) {
		rc = EX_KT_FAIL;
		goto out;
	}
	sum = ktau_snap_new();
	if (!sum) {
		rc = report(-ENOMEM, "merge");
		goto out;
	}
	for (i = 0; i < s.n; i++) {
		ret = ktau_snap_accumulate(sum, s.snaps[i]);
		if (ret) {
			rc = report(ret, "merge");
			goto out;
		}
	}
	for (i = 0; i < sum->ntasks; i++)
		nkthreads += !(sum->tasks[i].flags & KTAU_TASK_AGGREGATE);
	if (!nkthreads) {
		err_msg("the kernel profile has no task (only the system-wide aggregate?): "
			"save one with 'ktaud run --save FILE -- command'");
		rc = EX_KT_FAIL;
		goto out;
	}

	{
		const struct tmetric *tm = &prof.m[prof.time];

		mt = calloc(tm->n, sizeof(*mt));
		mg = calloc(tm->n, sizeof(*mg));
		if (!mt || !mg) {
			rc = report(-ENOMEM, "merge");
			goto out;
		}
		if (match_threads(tm, sum, maps, nmaps, pids, npids, force_map, mt)) {
			rc = EX_KT_FAIL;
			goto out;
		}
		for (i = 0; i < tm->n; i++) {
			if (!mt[i].task)
				continue;
			if (build_merge(&tm->files[i], mt[i].task, s.reg, &mo, &mg[i])) {
				rc = EX_KT_FAIL;
				goto out;
			}
			nmerged++;
		}
	}
	if (!nmerged) {
		err_msg("no TAU thread matched a thread of the kernel profile: are they of the "
			"same run? Give --pid or --map");
		rc = EX_KT_FAIL;
		goto out;
	}

	/* Write every metric (the same kernel rows; times only in the time metric). */
	ret = ktau_outdir_open(outdir, "merge", -1, force ? KTAU_OUTDIR_FORCE : 0, &od);
	if (ret) {
		rc = outdir_report(ret, "merge");
		goto out;
	}
	for (i = 0; i < prof.nm; i++) {
		const struct tmetric *m = &prof.m[i];

		for (j = 0; j < m->n; j++) {
			const struct tfile *f = &m->files[j];

			snprintf(path, sizeof(path), "%s%sprofile.%d.%d.%d", m->dir ? m->dir : "",
				 m->dir ? "/" : "", f->node, f->ctx, f->thread);
			ret = write_file(od, path, f, m->metric, i == prof.time, &mt[j], &mg[j]);
			if (ret) {
				rc = outdir_report(ret, "merge");
				goto out;
			}
		}
	}

	if (!quiet) {
		const struct tmetric *tm = &prof.m[prof.time];

		fprintf(stderr, "ktaud merge: %zu TAU thread%s, %zu kernel thread%s; %zu merged\n",
			tm->n, tm->n == 1 ? "" : "s", nkthreads, nkthreads == 1 ? "" : "s", nmerged);
		for (i = 0; i < tm->n; i++) {
			const struct tfile *f = &tm->files[i];
			const struct ktau_task *t = mt[i].task;

			if (!t) {
				fprintf(stderr, "ktaud merge:   profile.%d.%d.%d: not merged (%s)\n",
					f->node, f->ctx, f->thread,
					mt[i].why_not ? mt[i].why_not : "no match");
				continue;
			}
			fprintf(stderr, "ktaud merge:   profile.%d.%d.%d <- tid %d (pid %d, %.16s; %s): "
				"kernel %s under \"%s\"", f->node, f->ctx, f->thread, (int)t->tid,
				(int)t->pid, t->comm, mt[i].how,
				fmt_ns(b1, sizeof(b1), (uint64_t)(mg[i].kernel_us * 1000.0 + 0.5)),
				mg[i].node ? mg[i].node_name : f->f[mg[i].top].name);
			if (mg[i].why_node)
				fprintf(stderr, " (%s)", mg[i].why_node);
			else if (!mg[i].node && mg[i].kernel_us - mg[i].removed_us > 1e-9)
				fprintf(stderr, "; %s of it is not in its exclusive time "
					"(it happened in routines it called)",
					fmt_ns(b1, sizeof(b1), (uint64_t)((mg[i].kernel_us -
									   mg[i].removed_us) * 1000.0)));
			fputc('\n', stderr);
			if (f->meta_dropped || f->dups)
				fprintf(stderr, "ktaud merge:     (metadata not understood, or %d "
					"duplicate names and bad user events, dropped)\n", f->dups);
		}
		for (i = 0; i < sum->ntasks; i++) {
			const struct ktau_task *t = &sum->tasks[i];

			if (t->flags & KTAU_TASK_AGGREGATE)
				continue;
			for (j = 0; j < tm->n && mt[j].task != t; j++)
				;
			if (j == tm->n)
				fprintf(stderr, "ktaud merge:   kernel thread %d (pid %d, %.16s) has no "
					"TAU thread\n", (int)t->tid, (int)t->pid, t->comm);
		}
		fprintf(stderr,
			"ktaud merge: attributed: each thread's kernel routines and groups, exact, to "
			"the thread; not attributed: the user routines that incurred them (the "
			"profiles have no common time line), so they are all under one routine. "
			"libktau's runtime charges them per routine.\n"
			"ktaud merge: merged profile: %s/ (paraprof, pprof)\n", outdir);
	}
out:
	if (rc)
		ktau__outdir_failed(od);	/* no partial merged profile */
	ret = ktau_outdir_close(od);
	if (ret && !rc)
		rc = report(ret, "close the output directory");
	free(outexp);
	if (mg && prof.nm) {
		for (i = 0; i < prof.m[prof.time].n; i++)
			merged_free(&mg[i]);
	}
	free(mg);
	free(mt);
	ktau_snap_free(sum);
	if (s.snaps || s.reg)
		series_free(&s);
	tprofile_free(&prof);
	free(maps);
	free(pids);
	return rc;
}
