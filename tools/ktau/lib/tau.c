// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: the TAU profile writer. The strict form that ParaProf, pprof,
 * TAU's Python parser and Hatchet all read:
 *
 *	<N> templated_functions_MULTI_TIME
 *	# Name Calls Subrs Excl Incl ProfileCalls # <metadata>...</metadata>
 *	"<name>" <calls> 0 <excl us> <incl us> 0 GROUP="<groups>"   (N lines)
 *	0 aggregates
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "libktau.h"

#define NGROUPS_OUT (KTAU_LIB_NR_GROUPS + 1)	/* + "OTHER" (unknown group) */

/* Name or comm made safe: no '"', no control characters. */
static void sanitize(char *dst, size_t size, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < size && src[i]; i++) {
		unsigned char c = src[i];

		dst[i] = c == '"' ? '\'' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	dst[i] = '\0';
}

static void xml_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		switch (c) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default: fputc(c < 0x20 || c == 0x7f ? '?' : c, f); break;
		}
	}
}

static void meta(FILE *f, const char *name, const char *value)
{
	fputs("<attribute><name>", f);
	xml_escaped(f, name);
	fputs("</name><value>", f);
	xml_escaped(f, value);
	fputs("</value></attribute>", f);
}

static void meta_u64(FILE *f, const char *name, unsigned long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", v);
	meta(f, name, buf);
}

static int group_slot(int g)
{
	return g >= 0 && g < KTAU_LIB_NR_GROUPS ? g : KTAU_LIB_NR_GROUPS;
}

static const char *slot_class(int slot)
{
	return ktau_group_class(slot < KTAU_LIB_NR_GROUPS ? slot : -1);
}

int ktau_write_tau_task(FILE *f, const struct ktau_snap *snap,
			const struct ktau_task *t, const struct ktau_registry *reg,
			int node, int thread, const struct ktau_tau_opts *opts)
{
	uint64_t gcalls[NGROUPS_OUT] = { 0 }, gincl[NGROUPS_OUT] = { 0 }, gexcl[NGROUPS_OUT] = { 0 };
	char (*names)[80] = NULL;
	char comm[sizeof(t->comm) + 1];
	size_t i, j, nfuncs;
	int slot, has_other = 0, dup;

	if (t->nentries) {
		names = calloc(t->nentries, sizeof(*names));
		if (!names)
			return -ENOMEM;
	}
	for (i = 0; i < t->nentries; i++) {
		const struct ktau_func_stat *e = &t->entries[i];

		slot = group_slot(ktau_func_group(reg, e->id));
		has_other |= slot == KTAU_LIB_NR_GROUPS;
		gcalls[slot] += e->count;
		gincl[slot] += e->incl_ns;
		gexcl[slot] += e->excl_ns;
		sanitize(names[i], sizeof(names[i]) - 16, ktau_func_name(reg, e->id));
		/* Names must be unique in a file, also against the totals. */
		dup = 0;
		for (j = 0; j < NGROUPS_OUT && !dup; j++)
			dup = !strcmp(names[i], slot_class(j));
		for (j = 0; j < i && !dup; j++)
			dup = !strcmp(names[i], names[j]);
		if (dup)
			snprintf(names[i] + strlen(names[i]), 16, " [id %u]", e->id);
	}
	nfuncs = t->nentries + KTAU_LIB_NR_GROUPS + has_other;

	fprintf(f, "%zu templated_functions_MULTI_TIME\n", nfuncs);
	fputs("# Name Calls Subrs Excl Incl ProfileCalls # <metadata>", f);
	meta(f, "Metric Name", "TIME");
	if (t->flags & KTAU_TASK_AGGREGATE) {
		meta(f, "KTAU Task", "aggregate");
	} else {
		meta_u64(f, "pid", t->pid);
		meta_u64(f, "tid", t->tid);
	}
	sanitize(comm, sizeof(comm), t->comm);
	meta(f, "comm", comm);
	meta(f, "Hostname", snap->hostname);
	meta(f, "OS Release", snap->release);
	meta(f, "Kernel Release", snap->release);
	meta_u64(f, "Node", node);
	meta_u64(f, "Thread", thread);
	if (t->flags & KTAU_TASK_PROCESS)
		meta_u64(f, "KTAU Threads Summed", t->nthreads);
	meta(f, "KTAU Exited", t->flags & KTAU_TASK_EXITED ? "yes" : "no");
	meta(f, "KTAU Kernel Thread", t->flags & KTAU_TASK_KTHREAD ? "yes" : "no");
	meta_u64(f, "KTAU Start ns", t->start_ns);
	meta_u64(f, "KTAU Snapshot ns", snap->time_ns);
	if (snap->is_delta)
		meta_u64(f, "KTAU Delta Since ns", snap->base_ns);
	meta_u64(f, "KTAU Stack Overflows", t->stack_overflows);
	meta_u64(f, "KTAU Table Overflows", t->table_overflows);
	meta_u64(f, "KTAU Unmatched", t->unmatched);
	for (i = 0; opts && opts->extra_meta && i < opts->nextra; i++)
		meta(f, opts->extra_meta[2 * i], opts->extra_meta[2 * i + 1]);
	fputs("</metadata>\n", f);

	for (i = 0; i < t->nentries; i++) {
		const struct ktau_func_stat *e = &t->entries[i];

		slot = group_slot(ktau_func_group(reg, e->id));
		fprintf(f, "\"%s\" %llu 0 %.16G %.16G 0 GROUP=\"TAU_KERNEL_MERGE|KTAU_%s\"\n",
			names[i], (unsigned long long)e->count, e->excl_ns / 1000.0,
			e->incl_ns / 1000.0, slot_class(slot));
	}
	for (slot = 0; slot < NGROUPS_OUT; slot++) {
		if (slot == KTAU_LIB_NR_GROUPS && !has_other)
			break;
		fprintf(f, "\"%s\" %llu 0 %.16G %.16G 0 GROUP=\"KERNEL_GROUPS|TAU_KERNEL_MERGE\"\n",
			slot_class(slot), (unsigned long long)gcalls[slot],
			gexcl[slot] / 1000.0, gincl[slot] / 1000.0);
	}
	fputs("0 aggregates\n", f);
	free(names);
	return ferror(f) ? -EIO : 0;
}

static int mkdir_p(const char *dir)
{
	char *p, *d = strdup(dir);
	int ret = 0;

	if (!d)
		return -ENOMEM;
	for (p = d + 1; ; p++) {
		if (*p == '/' || !*p) {
			char c = *p;

			*p = '\0';
			if (mkdir(d, 0755) && errno != EEXIST) {
				ret = -errno;
				break;
			}
			*p = c;
			if (!c)
				break;
		}
	}
	free(d);
	return ret;
}

static int remove_stale(const char *dir)
{
	char path[4096];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "profile.", 8))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	return 0;
}

static int cmp_task_ptr(const void *a, const void *b)
{
	const struct ktau_task *x = *(const struct ktau_task * const *)a;
	const struct ktau_task *y = *(const struct ktau_task * const *)b;
	int ax = !!(x->flags & KTAU_TASK_AGGREGATE), ay = !!(y->flags & KTAU_TASK_AGGREGATE);

	/* The aggregate last: it is not a process of the run. */
	if (ax != ay)
		return ax - ay;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

int ktau_write_tau(const char *dir, const struct ktau_snap *snap,
		   const struct ktau_registry *reg, const struct ktau_tau_opts *opts)
{
	const struct ktau_task **order;
	char path[4096];
	int node = 0, thread = 0, ret, nfiles = 0;
	size_t i;
	FILE *f;

	ret = mkdir_p(dir);
	if (ret)
		return ret;
	ret = remove_stale(dir);
	if (ret)
		return ret;
	if (!snap->ntasks)
		return 0;
	order = malloc(snap->ntasks * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < snap->ntasks; i++)
		order[i] = &snap->tasks[i];
	if (opts && opts->dense_processes)
		qsort(order, snap->ntasks, sizeof(*order), cmp_task_ptr);
	for (i = 0; i < snap->ntasks; i++) {
		const struct ktau_task *t = order[i];

		if (opts && opts->dense_processes) {
			if (i && (t->pid != order[i - 1]->pid ||
				  (t->flags & KTAU_TASK_AGGREGATE) ||
				  (t->flags & KTAU_TASK_PROCESS))) {
				node++;
				thread = 0;
			} else if (i) {
				thread++;
			}
		} else {
			thread = i;
		}
		snprintf(path, sizeof(path), "%s/profile.%d.0.%d", dir, node, thread);
		f = fopen(path, "w");
		if (!f) {
			ret = -errno;
			break;
		}
		ret = ktau_write_tau_task(f, snap, t, reg, node, thread, opts);
		if (fclose(f) && !ret)
			ret = -errno;
		if (ret)
			break;
		nfiles++;
	}
	free(order);
	return ret ? ret : nfiles;
}
