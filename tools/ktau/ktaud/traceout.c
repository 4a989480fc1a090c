// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud trace: the Chrome/Perfetto trace-event JSON (json-c, as the rest
 * of libktau's JSON: one object per event, streamed into the array, so a
 * long trace is never one tree in memory) and the gnuplot timeline.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "internal.h"
#include "ktaud.h"
#include "trace.h"

static uint64_t trace_t0(const struct ktau_trace *t)
{
	uint64_t t0 = t->start_ns ? t->start_ns : UINT64_MAX;
	size_t i, j;

	for (i = 0; i < t->nthreads; i++)
		for (j = 0; j < t->threads[i].nrecs; j++)
			if (t->threads[i].recs[j].start_ns < t0)
				t0 = t->threads[i].recs[j].start_ns;
	for (i = 0; i < t->nsamples; i++)
		if (t->samples[i].time_ns < t0)
			t0 = t->samples[i].time_ns;
	return t0 == UINT64_MAX ? 0 : t0;
}

/* Microseconds with nanosecond digits, as text (no binary rounding). */
static struct json_object *us(uint64_t ns)
{
	char b[32];

	snprintf(b, sizeof(b), "%llu.%03llu", (unsigned long long)(ns / 1000),
		 (unsigned long long)(ns % 1000));
	return json_object_new_double_s((double)ns / 1000.0, b);
}

static int emit(FILE *f, struct json_object *o, int *first)
{
	const char *s = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : NULL;
	int ret = !s ? -ENOMEM : fprintf(f, "%s\n%s", *first ? "" : ",", s) < 0 ?
		  (errno ? -errno : -EIO) : 0;

	*first = 0;
	json_object_put(o);
	return ret;
}

static struct json_object *base(const char *ph, const char *name, int pid, int tid)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "ph", json_object_new_string(ph));
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "pid", json_object_new_int(pid));
	json_object_object_add(o, "tid", json_object_new_int(tid));
	return o;
}

/* Index of the first thread of t with tid (and pid, when pid >= 0); nthreads when none. */
static size_t find_thread(const struct ktau_trace *t, int32_t tid, int32_t pid)
{
	size_t i;

	for (i = 0; i < t->nthreads; i++)
		if ((tid < 0 || t->threads[i].tid == tid) && (pid < 0 || t->threads[i].pid == pid))
			break;
	return i;
}

/*
 * The samples of sampled thread j: an instant each ("cat":"sample", its
 * function as name); a thread without records gets its name first, and
 * its process too when it has none.
 */
static int json_samples(FILE *f, const struct ktau_trace *t, size_t j, uint64_t t0, int *first)
{
	const struct ktau_trace_sthread *st = &t->sthreads[j];
	struct json_object *o, *a;
	char comm[17] = "", buf[256];
	size_t i, m;
	int ret = 0;

	if (find_thread(t, st->tid, st->pid) == t->nthreads) {
		for (m = 0; m < j; m++)
			if (t->sthreads[m].tid == st->tid && t->sthreads[m].pid == st->pid)
				break;
		i = find_thread(t, -1, st->pid);
		if (i < t->nthreads) {
			memcpy(comm, t->threads[i].comm, 16);
			comm[16] = '\0';
		}
		if (m == j && i == t->nthreads) {
			for (m = 0; m < j; m++)
				if (t->sthreads[m].pid == st->pid)
					break;
			if (m == j) {
				o = base("M", "process_name", st->pid, st->tid);
				a = json_object_new_object();
				snprintf(buf, sizeof(buf), "pid %d", st->pid);
				json_object_object_add(a, "name", json_object_new_string(buf));
				json_object_object_add(o, "args", a);
				ret = emit(f, o, first);
			}
			m = j;
		}
		if (!ret && m == j) {
			o = base("M", "thread_name", st->pid, st->tid);
			a = json_object_new_object();
			json_object_object_add(a, "name", json_object_new_string(comm[0] ? comm :
										  "sampled"));
			json_object_object_add(o, "args", a);
			ret = emit(f, o, first);
		}
	}
	for (i = 0; i < st->n && st->first + i < t->nsamples && !ret; i++) {
		const struct ktau_trace_sample *p = &t->samples[st->first + i];

		o = base("i", trace_sample_name(t, p, buf, sizeof(buf)), st->pid, st->tid);
		json_object_object_add(o, "cat", json_object_new_string("sample"));
		json_object_object_add(o, "s", json_object_new_string("t"));
		json_object_object_add(o, "ts", us(p->time_ns - t0));
		a = json_object_new_object();
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)p->ip);
		json_object_object_add(a, "ip", json_object_new_string(buf));
		json_object_object_add(a, "routine", json_object_new_string(ktau_trace_name(t, p->id)));
		json_object_object_add(a, "user", json_object_new_int(p->user ? 1 : 0));
		json_object_object_add(o, "args", a);
		ret = emit(f, o, first);
	}
	return ret;
}

int trace_write_json(FILE *f, const struct ktau_trace *t)
{
	uint64_t t0 = trace_t0(t);
	struct json_object *o, *a;
	int first = 1, ret = 0;
	size_t i, j, k;
	char comm[17], buf[64];

	o = json_object_new_object();
	json_object_object_add(o, "host", json_object_new_string(t->hostname));
	json_object_object_add(o, "kernel", json_object_new_string(t->release));
	json_object_object_add(o, "command", json_object_new_string(t->command));
	json_object_object_add(o, "clock", json_object_new_string("CLOCK_MONOTONIC"));
	json_object_object_add(o, "t0_ns", json_object_new_uint64(t0));
	json_object_object_add(o, "lost", json_object_new_uint64(t->stats.lost));
	if (t->rank >= 0)
		json_object_object_add(o, "rank", json_object_new_int(t->rank));
	fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":%s,\"traceEvents\":[",
		json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	for (i = 0; i < t->nthreads && !ret; i++) {
		const struct ktau_trace_thread *th = &t->threads[i];

		memcpy(comm, th->comm, 16);
		comm[16] = '\0';
		for (k = 0; k < i; k++)
			if (t->threads[k].pid == th->pid)
				break;
		if (k == i) {
			o = base("M", "process_name", th->pid, th->tid);
			a = json_object_new_object();
			snprintf(buf, sizeof(buf), "%s (pid %d)", comm, th->pid);
			json_object_object_add(a, "name", json_object_new_string(buf));
			json_object_object_add(o, "args", a);
			ret = emit(f, o, &first);
		}
		o = base("M", "thread_name", th->pid, th->tid);
		a = json_object_new_object();
		json_object_object_add(a, "name", json_object_new_string(comm));
		json_object_object_add(o, "args", a);
		if (!ret)
			ret = emit(f, o, &first);
		for (j = 0; j < th->nrecs && !ret; j++) {
			const struct ktau_trace_record *r = &th->recs[j];
			int g = ktau_trace_group(t, r->id);

			if (r->kind == KTAU_LIB_TRACE_LOST) {
				o = base("i", "lost records", th->pid, th->tid);
				json_object_object_add(o, "cat", json_object_new_string("ktau_lost"));
				json_object_object_add(o, "s", json_object_new_string("t"));
				json_object_object_add(o, "ts", us(r->start_ns - t0));
				a = json_object_new_object();
				json_object_object_add(a, "count", json_object_new_uint64(r->id));
				json_object_object_add(a, "span_ns",
						       json_object_new_uint64(r->end_ns - r->start_ns));
				json_object_object_add(o, "args", a);
			} else {
				o = base(r->kind == KTAU_LIB_TRACE_EVENT ? "i" : "X",
					 ktau_trace_name(t, r->id), th->pid, th->tid);
				json_object_object_add(o, "cat", json_object_new_string(
					g == KTAU_LIB_GROUP_USER ? "user" :
					g >= 0 && ktau_group_name(g) ? ktau_group_name(g) : "other"));
				json_object_object_add(o, "ts", us(r->start_ns - t0));
				if (r->kind == KTAU_LIB_TRACE_EVENT)
					json_object_object_add(o, "s", json_object_new_string("t"));
				else
					json_object_object_add(o, "dur", us(r->end_ns - r->start_ns));
			}
			ret = emit(f, o, &first);
		}
	}
	for (i = 0; i < t->nsthreads && !ret; i++)
		ret = json_samples(f, t, i, t0, &first);
	if (!ret && fprintf(f, "\n]}\n") < 0)
		ret = errno ? -errno : -EIO;
	if (!ret)
		ret = ktau__stream_err(f);
	return ret;
}

/* ---- Timeline -------------------------------------------------------- */

struct busy {
	size_t i;
	uint64_t ns;
};

static int cmp_busy(const void *a, const void *b)
{
	const struct busy *x = a, *y = b;

	return x->ns > y->ns ? -1 : x->ns < y->ns;
}

/*
 * The samples (ktaud trace --sample) of the n threads shown, b[0..n), as
 * the data block $samples: a dot each above its thread's row, at its
 * time; a sampled thread goes to the row of the trace thread whose
 * location it shares in the archive (trace_sample_locations()). The
 * number of dots (no block when 0), or -ENOMEM.
 */
static long timeline_samples(FILE *f, const struct ktau_trace *t, const struct busy *b,
			     size_t n, uint64_t t0)
{
	uint64_t *loc = NULL;
	size_t *thr = NULL, i, j, k;
	long ns = 0;

	if (!t->nsamples)
		return 0;
	if (trace_sample_locations(t, 0, &loc, &thr))
		return -ENOMEM;
	for (j = 0; thr && j < t->nsthreads; j++) {
		const struct ktau_trace_sthread *st = &t->sthreads[j];

		for (i = 0; i < n && b[i].i != thr[j]; i++)
			;
		if (i == n)
			continue;	/* not shown, or without records */
		for (k = st->first; k < st->first + st->n; k++) {
			if (!ns)
				fprintf(f, "$samples << EOD\n");
			fprintf(f, "%.6f %.2f\n", ((double)t->samples[k].time_ns - (double)t0) / 1e6,
				i + 0.42);
			ns++;
		}
	}
	if (ns)
		fprintf(f, "EOD\n");
	free(loc);
	free(thr);
	return ns;
}

int trace_timeline_script(FILE *f, const struct ktau_trace *t, unsigned int top, const char *title)
{
	uint64_t t0 = trace_t0(t), t1 = t0, gap;
	struct busy *b = calloc(t->nthreads + 1, sizeof(*b));
	int used[KTAU_LIB_NR_GROUPS + 1] = { 0 };
	size_t i, j, n;
	char comm[17];
	long ns;

	if (!b)
		return -ENOMEM;
	for (i = 0; i < t->nthreads; i++) {
		b[i].i = i;
		for (j = 0; j < t->threads[i].nrecs; j++) {
			const struct ktau_trace_record *r = &t->threads[i].recs[j];

			if (r->end_ns > t1)
				t1 = r->end_ns;
			if (r->kind == KTAU_LIB_TRACE_CALL && !r->depth &&
			    !(r->id & KTAU_LIB_TRACE_USER))
				b[i].ns += r->end_ns - r->start_ns;
		}
	}
	qsort(b, t->nthreads, sizeof(*b), cmp_busy);
	n = t->nthreads < top ? t->nthreads : top;
	while (n && !b[n - 1].ns)
		n--;	/* threads without a kernel routine */
	if (!n) {
		free(b);
		return -ENODATA;
	}
	/* Boxes closer than a 4000th of the run are drawn as one. */
	gap = (t1 - t0) / 4000;
	fprintf(f, "set terminal pngcairo size 1200,%zu noenhanced\n", 160 + 40 * (n ? n : 1));
	fprintf(f, "set title ");
	gp_string(f, title);
	fprintf(f, "\nset xlabel \"time since the start (ms)\"\n"
		   "set style fill solid 1.0 noborder\nset key outside right top\n"
		   "set yrange [-0.6:%zu.6]\nset ytics (", n ? n - 1 : 0);
	for (i = 0; i < n; i++) {
		const struct ktau_trace_thread *th = &t->threads[b[i].i];

		memcpy(comm, th->comm, 16);
		comm[16] = '\0';
		fprintf(f, "%s", i ? ", " : "");
		{
			char lab[64];

			snprintf(lab, sizeof(lab), "%s %d", comm, th->tid);
			gp_string(f, lab);
		}
		fprintf(f, " %zu", i);
	}
	fprintf(f, ")\n$boxes << EOD\n");
	for (i = 0; i < n; i++) {
		const struct ktau_trace_thread *th = &t->threads[b[i].i];
		const struct ktau_trace_record **v;
		size_t nv, k;
		uint64_t s = 0, e = 0;
		int g = -1, cg;

		if (ktau_trace_sorted(th, &v, &nv)) {
			free(b);
			return -ENOMEM;
		}
		for (k = 0; k <= nv; k++) {
			const struct ktau_trace_record *r = k < nv ? v[k] : NULL;

			if (r && (r->kind != KTAU_LIB_TRACE_CALL || r->depth || r->start_ns < e ||
				  r->id & KTAU_LIB_TRACE_USER))
				continue;
			cg = r ? ktau_func_group(t->reg, r->id) : -1;
			if (cg < 0 || cg >= KTAU_LIB_NR_GROUPS)
				cg = KTAU_LIB_NR_GROUPS;
			if (r && g == cg && r->start_ns - e <= gap) {
				e = r->end_ns;
				continue;
			}
			if (g >= 0)
				fprintf(f, "%.6f %zu %.6f 0.35 %d\n", ((s + e) / 2.0 - t0) / 1e6, i,
					(e - s) / 2e6, g + 1);
			if (r) {
				g = cg;
				s = r->start_ns;
				e = r->end_ns;
				used[g] = 1;
			}
		}
		free(v);
	}
	fprintf(f, "EOD\n");
	ns = timeline_samples(f, t, b, n, t0);
	if (ns < 0) {
		free(b);
		return (int)ns;
	}
	fprintf(f, "plot $boxes using 1:2:3:4:5 with boxxyerror lc variable notitle");
	for (i = 0; i <= KTAU_LIB_NR_GROUPS; i++)
		if (used[i])
			fprintf(f, ", keyentry with boxes lc %zu title \"%s\"", i + 1,
				i < KTAU_LIB_NR_GROUPS ? ktau_group_name((int)i) : "other");
	if (ns)
		fprintf(f, ", $samples using 1:2 with points pt 7 ps 0.35 lc rgb \"black\" "
			   "title \"samples\"");
	fprintf(f, "\n");
	free(b);
	return 0;
}
