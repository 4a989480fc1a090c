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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "libktau.h"
#include "internal.h"
#include "sample-internal.h"

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

/* Length of the valid UTF-8 sequence at s (0: invalid). */
static size_t utf8_len(const unsigned char *s)
{
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0;
	if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return n;
}

void ktau__clean_name(char *dst, size_t size, const char *src)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0, n;
	int space = 0;

	while (*s && o + 1 < size) {
		n = utf8_len(s);
		if (!n) {
			s++;
			if (space && o)
				dst[o++] = ' ';
			space = 0;
			if (o + 1 < size)
				dst[o++] = '?';
			continue;
		}
		if (n == 1 && (*s <= 0x20 || *s == 0x7f)) {
			space = 1;
			s++;
			continue;
		}
		if (space && o) {
			dst[o++] = ' ';
			if (o + 1 >= size)
				break;
		}
		space = 0;
		if (o + n >= size)
			break;
		if (n == 1 && *s == '"')
			dst[o++] = '\'';
		else if (n == 1 && *s == '>' && o && dst[o - 1] == '=')
			dst[o++] = '_';	/* "=>" separates callpath elements */
		else {
			memcpy(dst + o, s, n);
			o += n;
		}
		s += n;
	}
	if (!o && size > 1)
		dst[o++] = '?';
	dst[o] = '\0';
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

void ktau__meta(FILE *f, const char *name, const char *value)
{
	fputs("<attribute><name>", f);
	xml_escaped(f, name);
	fputs("</name><value>", f);
	xml_escaped(f, value);
	fputs("</value></attribute>", f);
}

void ktau__meta_u64(FILE *f, const char *name, unsigned long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", v);
	ktau__meta(f, name, buf);
}

/* Extra metadata of the caller (opts) has this name. */
static int has_extra(const struct ktau_tau_opts *opts, const char *name)
{
	size_t i;

	for (i = 0; opts && opts->extra_meta && i < opts->nextra; i++)
		if (!strcmp(opts->extra_meta[2 * i], name))
			return 1;
	return 0;
}

/*
 * When and in which boot the snapshot was taken: its wall-clock time
 * (UTC), the boot id, and TAU's "Starting Timestamp" (microseconds since
 * the epoch) of what the profile measures: a delta's start, else the
 * task's, unless the caller gives its own (ktaud run: the command's).
 */
static void write_wall_meta(FILE *f, const struct ktau_snap *snap, const struct ktau_task *t,
			    const struct ktau_tau_opts *opts)
{
	uint64_t start = 0;
	char buf[64];
	struct tm tm;
	time_t sec;

	if (snap->boot_id[0] && memchr(snap->boot_id, '\0', sizeof(snap->boot_id)))
		ktau__meta(f, "KTAU Boot ID", snap->boot_id);
	if (!snap->wall_ns)
		return;
	sec = (time_t)(snap->wall_ns / 1000000000u);
	if (gmtime_r(&sec, &tm) && strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%06uZ",
			 (unsigned int)(snap->wall_ns % 1000000000u / 1000u));
		ktau__meta(f, "KTAU Snapshot Time", buf);
	}
	if (has_extra(opts, "Starting Timestamp"))
		return;
	if (snap->is_delta && snap->base_ns && snap->base_ns <= snap->time_ns)
		start = snap->time_ns - snap->base_ns;
	else if (!snap->is_delta && t->start_ns && t->start_ns <= snap->time_ns)
		start = snap->time_ns - t->start_ns;
	if (start && start < snap->wall_ns)
		ktau__meta_u64(f, "Starting Timestamp", (snap->wall_ns - start) / 1000u);
}

static int group_slot(int g)
{
	return g >= 0 && g < KTAU_LIB_NR_GROUPS ? g : KTAU_LIB_NR_GROUPS;
}

static const char *slot_class(int slot)
{
	return ktau_group_class(slot < KTAU_LIB_NR_GROUPS ? slot : -1);
}

/* Calls as written: a routine with samples but no completed call gets its
 * sample count, as the readers want calls for any value. */
static uint64_t row_calls(const struct ktau_func_stat *e)
{
	return e->count ? e->count : e->samples;
}

/* One file of task t: the metric TIME (smetric 0) or the samples (1). */
static int write_task(FILE *f, const struct ktau_snap *snap, const struct ktau_task *t,
		      const struct ktau_registry *reg, int node, int thread,
		      const struct ktau_tau_opts *opts, int smetric)
{
	uint64_t gcalls[NGROUPS_OUT] = { 0 }, gincl[NGROUPS_OUT] = { 0 }, gexcl[NGROUPS_OUT] = { 0 };
	uint64_t gsamp[NGROUPS_OUT] = { 0 }, nsamples = 0, per = opts ? opts->sample_period_ns : 0;
	char (*names)[80] = NULL;
	char comm[sizeof(t->comm) + 1], metric[40], smname[40];
	struct ktau__srow *srows = NULL;
	size_t i, j, nfuncs, nsrows = 0;
	int slot, has_other = 0, dup, ret;

	ret = ktau__sample_rows(opts ? opts->samples : NULL, t, &srows, &nsrows);
	if (ret)
		return ret;
	if (t->nentries) {
		names = calloc(t->nentries, sizeof(*names));
		if (!names) {
			ktau__srows_free(srows, nsrows);
			return -ENOMEM;
		}
	}
	ktau__metric_name(smname, sizeof(smname), opts ? opts->sample_metric : NULL);
	snprintf(metric, sizeof(metric), "%s", smetric ? smname : "TIME");
	for (i = 0; i < t->nentries; i++) {
		const struct ktau_func_stat *e = &t->entries[i];

		slot = group_slot(ktau_func_group(reg, e->id));
		has_other |= slot == KTAU_LIB_NR_GROUPS;
		gcalls[slot] += row_calls(e);
		gincl[slot] += e->incl_ns;
		gexcl[slot] += e->excl_ns;
		gsamp[slot] += e->samples;
		nsamples += e->samples;
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
	nfuncs = t->nentries + nsrows + KTAU_LIB_NR_GROUPS + has_other;

	fprintf(f, "%zu templated_functions_MULTI_%s\n", nfuncs, metric);
	fputs("# Name Calls Subrs Excl Incl ProfileCalls # <metadata>", f);
	ktau__meta(f, "Metric Name", metric);
	if (t->flags & KTAU_TASK_AGGREGATE) {
		ktau__meta(f, "KTAU Task", "aggregate");
	} else {
		ktau__meta_u64(f, "pid", t->pid);
		ktau__meta_u64(f, "tid", t->tid);
	}
	sanitize(comm, sizeof(comm), t->comm);
	ktau__meta(f, "comm", comm);
	ktau__meta(f, "Hostname", snap->hostname);
	ktau__meta(f, "OS Release", snap->release);
	ktau__meta(f, "Kernel Release", snap->release);
	ktau__meta_u64(f, "Node", node);
	ktau__meta_u64(f, "Thread", thread);
	if (t->flags & KTAU_TASK_PROCESS)
		ktau__meta_u64(f, "KTAU Threads Summed", t->nthreads);
	ktau__meta(f, "KTAU Exited", t->flags & KTAU_TASK_EXITED ? "yes" : "no");
	ktau__meta(f, "KTAU Kernel Thread", t->flags & KTAU_TASK_KTHREAD ? "yes" : "no");
	ktau__meta_u64(f, "KTAU Start ns", t->start_ns);
	ktau__meta_u64(f, "KTAU Snapshot ns", snap->time_ns);
	if (snap->is_delta)
		ktau__meta_u64(f, "KTAU Delta Since ns", snap->base_ns);
	write_wall_meta(f, snap, t, opts);
	ktau__meta_u64(f, "KTAU Stack Overflows", t->stack_overflows);
	ktau__meta_u64(f, "KTAU Table Overflows", t->table_overflows);
	ktau__meta_u64(f, "KTAU Unmatched", t->unmatched);
	if (nsamples || nsrows) {
		ktau__meta(f, "KTAU Samples Metric", smname);
		ktau__meta_u64(f, "KTAU Samples In Routines", nsamples);
		if (per)
			ktau__meta_u64(f, "KTAU Sample Period ns", per);
	}
	for (i = 0; opts && opts->extra_meta && i < opts->nextra; i++)
		ktau__meta(f, opts->extra_meta[2 * i], opts->extra_meta[2 * i + 1]);
	fputs("</metadata>\n", f);

	for (i = 0; i < t->nentries; i++) {
		const struct ktau_func_stat *e = &t->entries[i];

		slot = group_slot(ktau_func_group(reg, e->id));
		fprintf(f, "\"%s\" %llu 0 %.16G %.16G 0 GROUP=\"TAU_KERNEL_MERGE|KTAU_%s\"\n",
			names[i], (unsigned long long)row_calls(e),
			smetric ? (double)e->samples : e->excl_ns / 1000.0,
			smetric ? (double)e->samples : e->incl_ns / 1000.0, slot_class(slot));
	}
	/* Sampled code: calls are samples; TIME what they stand for, if known. */
	for (i = 0; i < nsrows; i++) {
		double v = smetric ? (double)srows[i].count : srows[i].count * (double)per / 1000.0;

		fprintf(f, "\"%s\" %llu 0 %.16G %.16G 0 GROUP=\"TAU_SAMPLE\"\n", srows[i].name,
			(unsigned long long)srows[i].count, v, v);
	}
	for (slot = 0; slot < NGROUPS_OUT; slot++) {
		if (slot == KTAU_LIB_NR_GROUPS && !has_other)
			break;
		fprintf(f, "\"%s\" %llu 0 %.16G %.16G 0 GROUP=\"KERNEL_GROUPS|TAU_KERNEL_MERGE\"\n",
			slot_class(slot), (unsigned long long)gcalls[slot],
			smetric ? (double)gsamp[slot] : gexcl[slot] / 1000.0,
			smetric ? (double)gsamp[slot] : gincl[slot] / 1000.0);
	}
	fputs("0 aggregates\n", f);
	free(names);
	ktau__srows_free(srows, nsrows);
	return ktau__stream_err(f);
}

int ktau_write_tau_task(FILE *f, const struct ktau_snap *snap,
			const struct ktau_task *t, const struct ktau_registry *reg,
			int node, int thread, const struct ktau_tau_opts *opts)
{
	return write_task(f, snap, t, reg, node, thread, opts, 0);
}

char *ktau__strfmt(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return r < 0 ? NULL : s;
}

int ktau__why_set(char **why, size_t size, int err, const char *fmt, va_list ap)
{
	if (!*why)
		*why = malloc(size);
	if (*why)
		vsnprintf(*why, size, fmt, ap);
	return err;
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
	int ranked = opts && opts->has_rank && opts->rank >= 0, ret, ret2;
	struct ktau_outdir *od;

	if (!snap->ntasks)
		return 0;
	ret = ktau_outdir_open(dir, "kernel", ranked ? opts->rank : -1,
			       opts && opts->force ? KTAU_OUTDIR_FORCE : 0, &od);
	if (ret)
		return ret;
	ret = ktau_write_tau_into(od, snap, reg, opts);
	if (ret < 0)
		ktau__outdir_failed(od);	/* no part of it left looking whole */
	ret2 = ktau_outdir_close(od);
	return ret < 0 || !ret2 ? ret : ret2;
}

int ktau_write_tau_into(struct ktau_outdir *od, const struct ktau_snap *snap,
			const struct ktau_registry *reg, const struct ktau_tau_opts *opts)
{
	const struct ktau_task **order;
	char path[4096], sub[2][64], smname[40];
	int node = 0, ctx = 0, thread = 0, ret = 0, nfiles = 0, m;
	int multi = ktau__has_samples(snap, opts), dense = opts && opts->dense_processes;
	int ranked = opts && opts->has_rank && opts->rank >= 0;
	size_t i;
	FILE *f;

	/* With samples, two metrics: MULTI__TIME and MULTI__<samples>. */
	ktau__metric_name(smname, sizeof(smname), opts ? opts->sample_metric : NULL);
	snprintf(sub[0], sizeof(sub[0]), "MULTI__TIME/");
	snprintf(sub[1], sizeof(sub[1]), "MULTI__%s/", smname);
	order = malloc((snap->ntasks ? snap->ntasks : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < snap->ntasks; i++)
		order[i] = &snap->tasks[i];
	if (dense)
		qsort(order, snap->ntasks, sizeof(*order), cmp_task_ptr);
	for (i = 0; i < snap->ntasks; i++) {
		const struct ktau_task *t = order[i];

		if (dense) {
			if (i && (t->pid != order[i - 1]->pid ||
				  (t->flags & KTAU_TASK_AGGREGATE) ||
				  (t->flags & KTAU_TASK_PROCESS))) {
				ctx++;
				thread = 0;
			} else if (i) {
				thread++;
			}
		} else {
			thread = i;
		}
		/* A rank's processes are contexts of its node; else nodes. */
		node = ranked ? opts->rank : ctx;
		for (m = 0; m <= multi && !ret; m++) {
			snprintf(path, sizeof(path), "%sprofile.%d.%d.%d", multi ? sub[m] : "",
				 node, ranked ? ctx : 0, thread);
			f = ktau_outdir_create(od, path);
			if (!f) {
				ret = -errno;
				break;
			}
			ret = write_task(f, snap, t, reg, node, thread, opts, m);
			if (fclose(f) && !ret)
				ret = -errno;
			if (ret)
				ktau__outdir_discard(od, path);
		}
		if (ret)
			break;
		nfiles++;
	}
	if (!ret && opts && opts->samples && opts->samples_folded) {
		f = ktau_outdir_create(od, opts->samples_folded);
		ret = f ? ktau_write_sample_folded(f, opts->samples, snap, reg) : -errno;
		if (f && fclose(f) && !ret)
			ret = -errno;
		if (f && ret)
			ktau__outdir_discard(od, opts->samples_folded);
	}
	free(order);
	return ret ? ret : nfiles;
}
