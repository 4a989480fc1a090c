// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud trace: the OTF2 archive of traces (Debian's libotf2-trace-dev, the
 * format of Score-P and TAU traces, read by Vampir), and its read-back
 * check against the profile of the same run.
 *
 * Archive: one system tree node per host, under it one per MPI rank when
 * the traces are ranks'; one location group per process, one location per
 * thread; one region per kernel routine (its registry name) in a region
 * group per KTAU group ("KTAU syscall", ...); Enter/Leave per call, sorted
 * by (start, depth); a KTAU event is a count metric "ktau event <name>";
 * lost records are the count metric "ktau lost records" (the running
 * total at the first lost call) and a marker "lost records" whose
 * duration is their span. Timestamps are CLOCK_MONOTONIC nanoseconds
 * (timer resolution 1e9, global offset: the first).
 *
 * Samples (ktaud trace --sample): OTF2 3.0 keeps CallingContextSample
 * events and Enter/Leave apart, so a sample is a Metric event of class 1
 * ("ktau samples <event>": the location's running count, and "ktau
 * sample ip": the address) with the attributes "sampled function" and
 * "ktau routine", in time order among its location's events (at the
 * time of an event, before it, but after an Enter of the routine it was
 * taken in: trace_smerge_step); the event metrics then start at class 2.
 * A sampled thread goes on the location of the trace's thread of its tid
 * and pid (of those, when its tid was used again, the one whose records
 * its window overlaps most); one without records has a location of its
 * own (trace_sample_locations). An archive without samples is written as
 * it was before samples existed.
 *
 * Location IDs tell the checker which thread a location is:
 * trace index << 48 | reuse << 32 | tid (reuse: earlier threads of the
 * trace with the same tid).
 */
#include <errno.h>
#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <otf2/otf2.h>

#include "ktaud.h"
#include "trace.h"

/* ---- Names (strings and regions) ------------------------------------- */

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

long trace_str_ref(struct trace_strtab *t, const char *s)
{
	size_t h, i;

	if (t->hcap) {
		for (h = str_hash(s) & (t->hcap - 1); t->hash[h]; h = (h + 1) & (t->hcap - 1))
			if (!strcmp(t->v[t->hash[h] - 1], s))
				return (long)t->hash[h] - 1;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -1;
		t->v = v;
		t->cap = cap;
	}
	if ((t->n + 1) * 2 > t->hcap) {
		size_t cap = t->hcap ? t->hcap * 2 : 128;
		size_t *nh = calloc(cap, sizeof(*nh));

		if (!nh)
			return -1;
		for (i = 0; i < t->n; i++) {
			for (h = str_hash(t->v[i]) & (cap - 1); nh[h]; h = (h + 1) & (cap - 1))
				;
			nh[h] = i + 1;
		}
		free(t->hash);
		t->hash = nh;
		t->hcap = cap;
	}
	t->v[t->n] = strdup(s);
	if (!t->v[t->n])
		return -1;
	for (h = str_hash(s) & (t->hcap - 1); t->hash[h]; h = (h + 1) & (t->hcap - 1))
		;
	t->hash[h] = t->n + 1;
	return (long)t->n++;
}

void trace_strtab_free(struct trace_strtab *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
	free(t->hash);
}

/* ---- Writing --------------------------------------------------------- */

static OTF2_FlushType pre_flush(void *user, OTF2_FileType ft, OTF2_LocationRef loc, void *cb,
				bool final)
{
	(void)user; (void)ft; (void)loc; (void)cb; (void)final;
	return OTF2_FLUSH;
}

static OTF2_TimeStamp post_flush(void *user, OTF2_FileType ft, OTF2_LocationRef loc)
{
	(void)user; (void)ft; (void)loc;
	return 0;
}

static const OTF2_FlushCallbacks flush_cbs = { .otf2_pre_flush = pre_flush,
					       .otf2_post_flush = post_flush };

struct region {
	uint32_t name;		/* string */
	int group;		/* KTAU group */
};

struct metric {
	uint32_t name;		/* string: "ktau event <name>" */
};

struct wstate {
	struct trace_strtab strs;
	struct trace_strtab regnames;	/* region names: the region ref is the index */
	struct region *regs;
	size_t nregs, capregs;
	struct trace_strtab evnames;	/* event metrics: the metric ref is 1 + index */
	uint64_t *evcount;	/* per location being written */
	size_t evcap;
	OTF2_EvtWriter *w;
	const struct ktau_trace *t;
	uint64_t lost_total, nevents, nlost_marks;
	OTF2_MarkerWriter *mw;
	OTF2_LocationRef loc;
	int err;
	/* Samples (ktaud trace --sample): metric class METRIC_SAMPLES, and
	 * the event metrics after it, only when a trace has sampled threads. */
	int has_samples;
	uint32_t ev_base;		/* the metric ref of event name 0 */
	OTF2_AttributeList *al;
	struct trace_smerge m;		/* the location's samples, in time order */
	size_t capps;
	uint64_t scount;		/* samples written on the location */
	uint64_t nsamples;		/* on every location */
};

static long sref(struct wstate *s, const char *str)
{
	long r = trace_str_ref(&s->strs, str);

	if (r < 0)
		s->err = -ENOMEM;
	return r < 0 ? 0 : r;
}

static uint32_t region_of(struct wstate *s, uint32_t id)
{
	const char *name = ktau_trace_name(s->t, id);
	size_t before = s->regnames.n;
	long r = trace_str_ref(&s->regnames, name);

	if (r < 0) {
		s->err = -ENOMEM;
		return 0;
	}
	if ((size_t)r == before) {
		if (s->nregs == s->capregs) {
			size_t cap = s->capregs ? s->capregs * 2 : 64;
			struct region *v = realloc(s->regs, cap * sizeof(*v));

			if (!v) {
				s->err = -ENOMEM;
				return 0;
			}
			s->regs = v;
			s->capregs = cap;
		}
		s->regs[s->nregs].name = (uint32_t)sref(s, name);
		s->regs[s->nregs].group = ktau_trace_group(s->t, id);
		s->nregs++;
	}
	return (uint32_t)r;
}

#define METRIC_LOST	0	/* metric class/member 0; events from 1 */
#define METRIC_SAMPLES	1	/* with samples: class 1, members 1 and 2; events from 2 */
#define ATTR_FUNCTION	0	/* with samples: the attributes of each */
#define ATTR_ROUTINE	1

static int write_metric(struct wstate *s, uint64_t ts, uint32_t ref, uint64_t v)
{
	OTF2_Type type = OTF2_TYPE_UINT64;
	OTF2_MetricValue val = { .unsigned_int = v };

	return OTF2_EvtWriter_Metric(s->w, NULL, ts, ref, 1, &type, &val) == OTF2_SUCCESS ? 0
											      : -EIO;
}

/* A sample: the running count and its address, its function and routine. */
static int write_sample(void *arg, const struct ktau_trace_sample *p)
{
	struct wstate *s = arg;
	OTF2_Type types[2] = { OTF2_TYPE_UINT64, OTF2_TYPE_UINT64 };
	OTF2_MetricValue vals[2];
	char name[256];

	vals[0].unsigned_int = ++s->scount;
	vals[1].unsigned_int = p->ip;
	if (OTF2_AttributeList_AddStringRef(s->al, ATTR_FUNCTION, (OTF2_StringRef)sref(s,
		    trace_sample_name(s->t, p, name, sizeof(name)))) != OTF2_SUCCESS ||
	    OTF2_AttributeList_AddStringRef(s->al, ATTR_ROUTINE, (OTF2_StringRef)sref(s,
		    ktau_trace_name(s->t, p->id))) != OTF2_SUCCESS ||
	    OTF2_EvtWriter_Metric(s->w, s->al, p->time_ns, METRIC_SAMPLES, 2, types, vals) !=
	    OTF2_SUCCESS)
		return -EIO;
	s->nevents++;
	s->nsamples++;
	return s->err;
}

int trace_smerge_step(struct trace_smerge *m, int after, int enter, uint64_t ts, uint32_t id)
{
	size_t e;
	int ret = 0;

	if (!after) {
		while (!ret && m->next < m->n && m->ps[m->next]->time_ns < ts)
			ret = m->emit(m->arg, m->ps[m->next++]);
		/* At its time: before it, but for an Enter's own routine. */
		for (e = m->next; !ret && e < m->n && m->ps[e]->time_ns == ts; e++)
			if (!enter || m->ps[e]->id != id)
				ret = m->emit(m->arg, m->ps[e]);
		if (!enter)
			m->next = e;
		return ret;
	}
	if (!enter)
		return 0;
	for (e = m->next; !ret && e < m->n && m->ps[e]->time_ns == ts; e++)
		if (m->ps[e]->id == id)
			ret = m->emit(m->arg, m->ps[e]);
	m->next = e;
	return ret;
}

static int on_event(void *arg, int enter, uint64_t ts, const struct ktau_trace_record *r)
{
	struct wstate *s = arg;
	OTF2_ErrorCode e = OTF2_SUCCESS;

	/* Samples in time order with the location's other events. */
	if (s->m.next < s->m.n && trace_smerge_step(&s->m, 0, enter == 1, ts, r->id))
		return -EIO;
	if (enter == 1) {
		e = OTF2_EvtWriter_Enter(s->w, NULL, ts, region_of(s, r->id));
	} else if (enter == 0) {
		e = OTF2_EvtWriter_Leave(s->w, NULL, ts, region_of(s, r->id));
	} else if (r->kind == KTAU_LIB_TRACE_LOST) {
		char text[160];

		s->lost_total += r->id;
		if (write_metric(s, ts, METRIC_LOST, s->lost_total))
			return -EIO;
		snprintf(text, sizeof(text), "%u records lost from %llu to %llu ns", r->id,
			 (unsigned long long)r->start_ns, (unsigned long long)r->end_ns);
		if (OTF2_MarkerWriter_WriteMarker(s->mw, r->start_ns, r->end_ns - r->start_ns, 0,
						  OTF2_MARKER_SCOPE_LOCATION, s->loc, text) !=
		    OTF2_SUCCESS)
			return -EIO;
		s->nlost_marks++;
	} else {
		size_t before = s->evnames.n;
		char name[160];
		long k;

		snprintf(name, sizeof(name), "ktau event %s", ktau_trace_name(s->t, r->id));
		k = trace_str_ref(&s->evnames, name);
		if (k < 0)
			return -ENOMEM;
		if ((size_t)k >= s->evcap) {
			size_t cap = (size_t)k * 2 + 16;
			uint64_t *v = realloc(s->evcount, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			memset(v + s->evcap, 0, (cap - s->evcap) * sizeof(*v));
			s->evcount = v;
			s->evcap = cap;
		}
		(void)before;
		s->evcount[k]++;
		if (write_metric(s, ts, s->ev_base + (uint32_t)k, s->evcount[k]))
			return -EIO;
	}
	s->nevents++;
	/* The samples taken in the routine just entered, at its Enter. */
	if (e == OTF2_SUCCESS && enter == 1 && s->m.next < s->m.n &&
	    trace_smerge_step(&s->m, 1, 1, ts, r->id))
		return -EIO;
	return e == OTF2_SUCCESS ? (s->err ? s->err : 0) : -EIO;
}

/* Location ID of thread i of trace k (see the top). */
uint64_t trace_location_id(const struct ktau_trace *t, size_t k, size_t i)
{
	uint64_t reuse = 0;
	size_t j;

	for (j = 0; j < i; j++)
		reuse += t->threads[j].tid == t->threads[i].tid;
	return (uint64_t)k << 48 | (reuse & 0xffff) << 32 | (uint32_t)t->threads[i].tid;
}

int trace_thread_span(const struct ktau_trace_thread *th, uint64_t *first, uint64_t *last)
{
	size_t i;

	*first = UINT64_MAX;
	*last = 0;
	for (i = 0; i < th->nrecs; i++) {
		if (th->recs[i].start_ns < *first)
			*first = th->recs[i].start_ns;
		if (th->recs[i].end_ns > *last)
			*last = th->recs[i].end_ns;
	}
	return th->nrecs > 0;
}

/* How [a, b] meets [c, d]: overlapping by len (over), or len apart. */
struct fit {
	int over;
	uint64_t len;
};

static struct fit fit_of(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t lo = a > c ? a : c, hi = b < d ? b : d;

	return hi >= lo ? (struct fit){ 1, hi - lo } : (struct fit){ 0, lo - hi };
}

/* x fits better than y: overlaps more, or is nearer. */
static int fit_better(struct fit x, struct fit y)
{
	if (x.over != y.over)
		return x.over;
	return x.over ? x.len > y.len : x.len < y.len;
}

int trace_sample_locations(const struct ktau_trace *t, size_t k, uint64_t **loc, size_t **thread)
{
	size_t n = t->nsthreads, j, i, m;
	uint64_t reuse, a, b;
	struct fit best = { 0, 0 }, f;

	*loc = NULL;
	*thread = NULL;
	if (!n)
		return 0;
	*loc = calloc(n, sizeof(**loc));
	*thread = calloc(n, sizeof(**thread));
	if (!*loc || !*thread) {
		free(*loc);
		free(*thread);
		*loc = NULL;
		*thread = NULL;
		return -ENOMEM;
	}
	for (j = 0; j < n; j++) {
		const struct ktau_trace_sthread *st = &t->sthreads[j];

		/*
		 * The trace's thread of its tid and pid; of several (the tid
		 * was used again once one exited), the one whose records' span
		 * its window overlaps most, or is nearest (the first of equals).
		 */
		(*thread)[j] = SIZE_MAX;
		for (i = 0; i < t->nthreads; i++) {
			if (t->threads[i].tid != st->tid || t->threads[i].pid != st->pid)
				continue;
			f = trace_thread_span(&t->threads[i], &a, &b) ?
			    fit_of(st->start_ns, st->end_ns, a, b) : (struct fit){ 0, UINT64_MAX };
			if ((*thread)[j] == SIZE_MAX || fit_better(f, best)) {
				(*thread)[j] = i;
				best = f;
			}
		}
		if ((*thread)[j] != SIZE_MAX) {
			(*loc)[j] = trace_location_id(t, k, (*thread)[j]);
			continue;
		}
		/* Its own: that of an earlier one of the same tid and pid, or a
		 * new one past the others of its tid. */
		reuse = 0;
		for (i = 0; i < t->nthreads; i++)
			reuse += t->threads[i].tid == st->tid;
		for (m = 0; m < j; m++) {
			if ((*thread)[m] != SIZE_MAX || t->sthreads[m].tid != st->tid)
				continue;
			if (t->sthreads[m].pid == st->pid)
				break;
			/* The first of its tid and pid: a location. */
			for (i = 0; i < m; i++)
				if ((*thread)[i] == SIZE_MAX && t->sthreads[i].tid == st->tid &&
				    t->sthreads[i].pid == t->sthreads[m].pid)
					break;
			reuse += i == m;
		}
		if (m < j)
			(*loc)[j] = (*loc)[m];
		else
			(*loc)[j] = (uint64_t)k << 48 | (reuse & 0xffff) << 32 | (uint32_t)st->tid;
	}
	return 0;
}

const char *trace_sample_name(const struct ktau_trace *t, const struct ktau_trace_sample *s,
			      char *buf, size_t size)
{
	if (s->name < t->nsample_names && t->sample_names[s->name])
		snprintf(buf, size, "%s", t->sample_names[s->name]);
	else if (s->user)
		snprintf(buf, size, "[unknown]");
	else
		snprintf(buf, size, "[kernel] %s", ktau_trace_name(t, s->id));
	return buf;
}

static int cmp_sample_ptr(const void *a, const void *b)
{
	const struct ktau_trace_sample *x = *(const struct ktau_trace_sample *const *)a;
	const struct ktau_trace_sample *y = *(const struct ktau_trace_sample *const *)b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * The samples of the location of trace t whose sampled threads are those
 * with loc[j] == ref, into *ps (*cap entries, grown) in time order (a
 * thread's order kept): *n.
 */
static int gather_samples(const struct ktau_trace *t, const uint64_t *loc, uint64_t ref,
			  const struct ktau_trace_sample ***ps, size_t *n, size_t *cap)
{
	size_t j, i;

	*n = 0;
	for (j = 0; j < t->nsthreads; j++) {
		const struct ktau_trace_sthread *st = &t->sthreads[j];

		if (loc[j] != ref)
			continue;
		for (i = 0; i < st->n && st->first + i < t->nsamples; i++) {
			if (*n == *cap) {
				size_t c = *cap ? *cap * 2 : 256;
				const struct ktau_trace_sample **v = realloc(*ps, c * sizeof(*v));

				if (!v)
					return -ENOMEM;
				*ps = v;
				*cap = c;
			}
			(*ps)[(*n)++] = &t->samples[st->first + i];
		}
	}
	if (*n)
		qsort(*ps, *n, sizeof(**ps), cmp_sample_ptr);
	return 0;
}

/* trace_location_samples(): the samples in the order emitted. */
struct lsamples {
	struct trace_smerge m;
	const struct ktau_trace_sample **out;
	size_t n;
};

static int ls_emit(void *arg, const struct ktau_trace_sample *p)
{
	struct lsamples *w = arg;

	w->out[w->n++] = p;
	return 0;
}

#define LS_DONE 1	/* every sample placed: the walk stops */

static int ls_event(void *arg, int enter, uint64_t ts, const struct ktau_trace_record *r)
{
	struct lsamples *w = arg;
	int ret;

	if (w->m.next >= w->m.n)
		return LS_DONE;
	ret = trace_smerge_step(&w->m, 0, enter == 1, ts, r->id);
	if (!ret && enter == 1)
		ret = trace_smerge_step(&w->m, 1, 1, ts, r->id);
	return ret;
}

int trace_location_samples(const struct ktau_trace *t, const struct ktau_trace_thread *th,
			   const uint64_t *loc, uint64_t ref,
			   const struct ktau_trace_sample ***out, size_t *n)
{
	struct lsamples w = { .m = { .emit = ls_emit } };
	size_t cap = 0;
	int ret;

	*out = NULL;
	*n = 0;
	ret = gather_samples(t, loc, ref, &w.m.ps, &w.m.n, &cap);
	if (!ret && w.m.n) {
		w.m.arg = &w;
		w.out = malloc(w.m.n * sizeof(*w.out));
		ret = w.out ? 0 : -ENOMEM;
	}
	if (!ret && th && w.m.n)
		ret = ktau_trace_walk(th, ls_event, &w, NULL);
	if (ret == LS_DONE)
		ret = 0;
	if (!ret)
		ret = trace_smerge_step(&w.m, 0, 0, UINT64_MAX, 0);
	free(w.m.ps);
	if (ret) {
		free(w.out);
		return ret < 0 ? ret : -EIO;
	}
	*out = w.out;
	*n = w.n;
	return 0;
}

/*
 * Move the files of the staged archive into od: the anchor (*.otf2, what
 * readers open) last, so that an archive whose move failed half-way is
 * not there to be read (anchor: 0 every other file, 1 the anchors).
 */
static int adopt_tree(struct ktau_outdir *od, const char *stage, const char *sub, int anchor)
{
	char path[PATH_MAX], name[PATH_MAX];
	struct dirent *de;
	struct stat st;
	size_t l;
	int ret = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s%s%s", stage, sub ? "/" : "", sub ? sub : "");
	d = opendir(path);
	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		l = strlen(de->d_name);
		if (!sub && (l > 5 && !strcmp(de->d_name + l - 5, ".otf2")) != anchor)
			continue;
		snprintf(path, sizeof(path), "%s/%s%s%s", stage, sub ? sub : "", sub ? "/" : "",
			 de->d_name);
		snprintf(name, sizeof(name), "%s%s%s", sub ? sub : "", sub ? "/" : "", de->d_name);
		if (lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (sub)
				ret = -EINVAL;	/* OTF2 writes one level */
			else
				ret = adopt_tree(od, stage, de->d_name, 0);
			rmdir(path);
			continue;
		}
		ret = ktau_outdir_adopt(od, name, path);
	}
	closedir(d);
	return ret;
}

static void rm_tree(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path))
			rm_tree(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

struct stnode {
	uint32_t name, cls, parent;
};

struct lgroup {
	uint32_t name, node;
};

struct location {
	uint64_t ref, nev;
	uint32_t name, group;
};

/*
 * The sampled threads' locations of a trace (trace_sample_locations);
 * own[j]: thread j is the first on a location of its own (no records),
 * where its archive index goes (at[j], write_global_defs).
 */
struct smap {
	uint64_t *loc;
	size_t *thread;
	unsigned char *own;
	size_t *at;
};

static int smap_init(struct smap *m, const struct ktau_trace *t, size_t k)
{
	size_t i, j;

	if (trace_sample_locations(t, k, &m->loc, &m->thread))
		return -ENOMEM;
	m->own = calloc(t->nsthreads + 1, 1);
	m->at = calloc(t->nsthreads + 1, sizeof(*m->at));
	if (!m->own || !m->at)
		return -ENOMEM;
	for (j = 0; j < t->nsthreads; j++) {
		if (m->thread[j] != SIZE_MAX)
			continue;
		for (i = 0; i < j; i++)
			if (m->own[i] && m->loc[i] == m->loc[j])
				break;
		m->own[j] = i == j;
	}
	return 0;
}

static int own_first(const struct smap *m, size_t j)
{
	return m->own && m->own[j];
}

/* The name of trace k's sampled event, for the metric ("cpu-clock"). */
static void sample_event_name(struct ktau_trace *const *tv, size_t ntraces, char *buf,
			      size_t size)
{
	size_t k;

	snprintf(buf, size, "samples");
	for (k = 0; k < ntraces; k++)
		if (tv[k]->sample_event[0]) {
			snprintf(buf, size, "%.*s", (int)strcspn(tv[k]->sample_event, ":"),
				 tv[k]->sample_event);
			break;
		}
}

static int write_global_defs(OTF2_GlobalDefWriter *gw, struct wstate *s,
			     struct ktau_trace *const *tv, size_t ntraces, const int *ranks,
			     const struct smap *sm, const uint64_t *locs, const uint64_t *nev,
			     size_t nloc, uint64_t t0, uint64_t t1)
{
	uint64_t rt = tv[0]->realtime_ns ? tv[0]->realtime_ns - (tv[0]->start_ns - t0) : 0;
	struct stnode *nodes = calloc(2 * ntraces + 1, sizeof(*nodes));
	struct lgroup *lgs = calloc(nloc + 1, sizeof(*lgs));
	struct location *lv = calloc(nloc + 1, sizeof(*lv));
	uint32_t *hosts = calloc(ntraces + 1, sizeof(*hosts));
	uint64_t *members = calloc(s->nregs + 1, sizeof(*members));
	uint32_t s_machine, s_rank, s_units[2], s_groups[KTAU_LIB_NR_GROUPS + 2], *s_metric = NULL;
	uint32_t s_samples[8] = { 0 };
	struct trace_strtab hostnames = { 0 };
	size_t nnodes = 0, nlg = 0, k, i, j, l, x, lbase;
	uint32_t ngroups = 0;
	char buf[256], comm[17];
	uint32_t g;
	int ret = 0;

	s_metric = calloc(s->evnames.n + 1, sizeof(*s_metric));
	if (!nodes || !lgs || !lv || !hosts || !members || !s_metric) {
		ret = -ENOMEM;
		goto out;
	}
	/* Pass 1: every definition, with its string refs. */
	s_machine = (uint32_t)sref(s, "machine");
	s_rank = (uint32_t)sref(s, "rank");
	for (k = 0; k < ntraces; k++) {
		size_t before = hostnames.n;
		long h = trace_str_ref(&hostnames, tv[k]->hostname[0] ? tv[k]->hostname : "unknown");

		if (h < 0) {
			ret = -ENOMEM;
			goto out;
		}
		hosts[k] = (uint32_t)h;
		if ((size_t)h == before)
			nodes[nnodes++] = (struct stnode){ (uint32_t)sref(s, hostnames.v[h]), s_machine,
							   OTF2_UNDEFINED_SYSTEM_TREE_NODE };
	}
	/* Locations: the traces' threads, then the sampled threads without
	 * records (x), in the order trace_write_otf2() wrote them. */
	for (k = 0, l = 0, x = 0; k < ntraces; k++)
		x += tv[k]->nthreads;
	for (k = 0, l = 0; k < ntraces; k++) {
		uint32_t parent = hosts[k];

		if (ranks && ranks[k] >= 0) {
			snprintf(buf, sizeof(buf), "rank %d", ranks[k]);
			nodes[nnodes] = (struct stnode){ (uint32_t)sref(s, buf), s_rank, hosts[k] };
			parent = (uint32_t)nnodes++;
		}
		lbase = l;
		for (i = 0; i < tv[k]->nthreads; i++, l++) {
			const struct ktau_trace_thread *th = &tv[k]->threads[i];

			memcpy(comm, th->comm, 16);
			comm[16] = '\0';
			/* A new process: the first thread of its pid in the trace. */
			for (j = 0; j < i; j++)
				if (tv[k]->threads[j].pid == th->pid)
					break;
			if (j == i) {
				if (ranks && ranks[k] >= 0)
					snprintf(buf, sizeof(buf), "rank %d: %s (pid %d)", ranks[k], comm,
						 th->pid);
				else
					snprintf(buf, sizeof(buf), "%s (pid %d)", comm, th->pid);
				lgs[nlg] = (struct lgroup){ (uint32_t)sref(s, buf), parent };
				lv[l].group = (uint32_t)nlg++;
			} else {
				lv[l].group = lv[l - i + j].group;
			}
			snprintf(buf, sizeof(buf), "%s (tid %d)", comm, th->tid);
			lv[l].name = (uint32_t)sref(s, buf);
			lv[l].ref = locs[l];
			lv[l].nev = nev[l];
		}
		for (j = 0; sm && j < tv[k]->nsthreads; j++) {
			const struct ktau_trace_sthread *st = &tv[k]->sthreads[j];
			size_t m;

			if (!own_first(&sm[k], j) || x >= nloc)
				continue;
			/* In its process's group: of a traced thread, or of an
			 * earlier sampled one, or a group of its own. */
			comm[0] = '\0';
			for (i = 0; i < tv[k]->nthreads; i++)
				if (tv[k]->threads[i].pid == st->pid)
					break;
			if (i < tv[k]->nthreads) {
				memcpy(comm, tv[k]->threads[i].comm, 16);
				comm[16] = '\0';
				lv[x].group = lv[lbase + i].group;
			} else {
				for (m = 0; m < j; m++)
					if (own_first(&sm[k], m) &&
					    tv[k]->sthreads[m].pid == st->pid)
						break;
				if (m < j) {
					lv[x].group = lv[sm[k].at[m]].group;
				} else {
					if (ranks && ranks[k] >= 0)
						snprintf(buf, sizeof(buf), "rank %d: pid %d", ranks[k],
							 st->pid);
					else
						snprintf(buf, sizeof(buf), "pid %d", st->pid);
					lgs[nlg] = (struct lgroup){ (uint32_t)sref(s, buf), parent };
					lv[x].group = (uint32_t)nlg++;
				}
			}
			snprintf(buf, sizeof(buf), "%s (tid %d)", comm[0] ? comm : "sampled", st->tid);
			lv[x].name = (uint32_t)sref(s, buf);
			lv[x].ref = locs[x];
			lv[x].nev = nev[x];
			sm[k].at[j] = x++;
		}
	}
	for (g = 0; g <= KTAU_LIB_NR_GROUPS + 1; g++) {
		snprintf(buf, sizeof(buf), "%s", g > KTAU_LIB_NR_GROUPS ? "User" : "KTAU ");
		if (g <= KTAU_LIB_NR_GROUPS)
			snprintf(buf, sizeof(buf), "KTAU %s",
				 g < KTAU_LIB_NR_GROUPS ? ktau_group_name((int)g) : "other");
		s_groups[g] = (uint32_t)sref(s, buf);
	}
	for (i = 0; i <= s->evnames.n; i++)
		s_metric[i] = (uint32_t)sref(s, i ? s->evnames.v[i - 1] : "ktau lost records");
	s_units[0] = (uint32_t)sref(s, "records");
	s_units[1] = (uint32_t)sref(s, "events");
	if (s->has_samples) {
		char ev[32], desc[160];

		sample_event_name(tv, ntraces, ev, sizeof(ev));
		snprintf(buf, sizeof(buf), "ktau samples %s", ev);
		s_samples[0] = (uint32_t)sref(s, buf);
		for (k = 0; k < ntraces && !tv[k]->sample_event[0]; k++)
			;
		snprintf(desc, sizeof(desc), "KTAU samples of %s: the thread's running count",
			 k < ntraces ? tv[k]->sample_event : ev);
		s_samples[1] = (uint32_t)sref(s, desc);
		s_samples[2] = (uint32_t)sref(s, "samples");
		s_samples[3] = (uint32_t)sref(s, "ktau sample ip");
		s_samples[4] = (uint32_t)sref(s, "the sampled address (0: a kernel address "
					   "hidden from the reader)");
		s_samples[5] = (uint32_t)sref(s, "address");
		s_samples[6] = (uint32_t)sref(s, "sampled function");
		s_samples[7] = (uint32_t)sref(s, "ktau routine");
	}
	if (s->err) {
		ret = s->err;
		goto out;
	}

	/* Pass 2: written in the order of references. */
	OTF2_GlobalDefWriter_WriteClockProperties(gw, 1000000000ULL, t0, t1 - t0, rt);
	for (i = 0; i < s->strs.n; i++)
		OTF2_GlobalDefWriter_WriteString(gw, (uint32_t)i, s->strs.v[i]);
	for (i = 0; i < nnodes; i++)
		OTF2_GlobalDefWriter_WriteSystemTreeNode(gw, (uint32_t)i, nodes[i].name, nodes[i].cls,
							 nodes[i].parent);
	for (i = 0; i < nlg; i++)
		OTF2_GlobalDefWriter_WriteLocationGroup(gw, (uint32_t)i, lgs[i].name,
							OTF2_LOCATION_GROUP_TYPE_PROCESS, lgs[i].node,
							OTF2_UNDEFINED_LOCATION_GROUP);
	for (l = 0; l < nloc; l++)
		OTF2_GlobalDefWriter_WriteLocation(gw, lv[l].ref, lv[l].name,
						   OTF2_LOCATION_TYPE_CPU_THREAD, lv[l].nev,
						   lv[l].group);
	/* Kernel routines: paradigm unknown (OTF2 has no "kernel"); the
	 * user's own: paradigm user, group "User". */
	for (i = 0; i < s->nregs; i++)
		OTF2_GlobalDefWriter_WriteRegion(gw, (uint32_t)i, s->regs[i].name, s->regs[i].name,
						 s->regs[i].name, OTF2_REGION_ROLE_FUNCTION,
						 s->regs[i].group == KTAU_LIB_GROUP_USER ?
						 OTF2_PARADIGM_USER : OTF2_PARADIGM_UNKNOWN,
						 OTF2_REGION_FLAG_NONE, OTF2_UNDEFINED_STRING, 0, 0);
	for (g = 0; g <= KTAU_LIB_NR_GROUPS + 1; g++) {
		uint32_t n = 0;

		for (i = 0; i < s->nregs; i++)
			if (s->regs[i].group == (int)g ||
			    (g == KTAU_LIB_NR_GROUPS + 1 && s->regs[i].group == KTAU_LIB_GROUP_USER) ||
			    (g == KTAU_LIB_NR_GROUPS &&
			     (s->regs[i].group == -1 || s->regs[i].group >= KTAU_LIB_NR_GROUPS)))
				members[n++] = i;
		if (n)
			OTF2_GlobalDefWriter_WriteGroup(gw, ngroups++, s_groups[g], OTF2_GROUP_TYPE_REGIONS,
							g > KTAU_LIB_NR_GROUPS ? OTF2_PARADIGM_USER
									       : OTF2_PARADIGM_UNKNOWN,
							OTF2_GROUP_FLAG_NONE, n, members);
	}
	/* With samples: the attributes of each sample. */
	if (s->has_samples) {
		OTF2_GlobalDefWriter_WriteAttribute(gw, ATTR_FUNCTION, s_samples[6], s_samples[6],
						    OTF2_TYPE_STRING);
		OTF2_GlobalDefWriter_WriteAttribute(gw, ATTR_ROUTINE, s_samples[7], s_samples[7],
						    OTF2_TYPE_STRING);
	}
	/* Metrics: lost records (0), with samples the samples (1: their count
	 * and address), then one per event name; classes in the order of
	 * their references, the members' too. */
	for (i = 0; i <= s->evnames.n; i++) {
		OTF2_MetricMemberRef m = (OTF2_MetricMemberRef)i;

		if (i && s->has_samples)
			m += 2;
		OTF2_GlobalDefWriter_WriteMetricMember(gw, m, s_metric[i], s_metric[i],
						       OTF2_METRIC_TYPE_OTHER,
						       OTF2_METRIC_ACCUMULATED_START, OTF2_TYPE_UINT64,
						       OTF2_BASE_DECIMAL, 0, s_units[i ? 1 : 0]);
		OTF2_GlobalDefWriter_WriteMetricClass(gw, i ? s->ev_base + (OTF2_MetricRef)i - 1 :
						      METRIC_LOST, 1, &m, OTF2_METRIC_ASYNCHRONOUS,
						      OTF2_RECORDER_KIND_ABSTRACT);
		if (!i && s->has_samples) {
			OTF2_MetricMemberRef sm2[2] = { 1, 2 };

			OTF2_GlobalDefWriter_WriteMetricMember(gw, 1, s_samples[0], s_samples[1],
							       OTF2_METRIC_TYPE_OTHER,
							       OTF2_METRIC_ACCUMULATED_START,
							       OTF2_TYPE_UINT64, OTF2_BASE_DECIMAL, 0,
							       s_samples[2]);
			OTF2_GlobalDefWriter_WriteMetricMember(gw, 2, s_samples[3], s_samples[4],
							       OTF2_METRIC_TYPE_OTHER,
							       OTF2_METRIC_ABSOLUTE_POINT,
							       OTF2_TYPE_UINT64, OTF2_BASE_DECIMAL, 0,
							       s_samples[5]);
			OTF2_GlobalDefWriter_WriteMetricClass(gw, METRIC_SAMPLES, 2, sm2,
							      OTF2_METRIC_ASYNCHRONOUS,
							      OTF2_RECORDER_KIND_ABSTRACT);
		}
	}
out:
	trace_strtab_free(&hostnames);
	free(nodes);
	free(lgs);
	free(lv);
	free(hosts);
	free(members);
	free(s_metric);
	return ret;
}

/* Events of one location: a thread's calls (th; NULL: none) and samples. */
static int write_location(OTF2_Archive *ar, struct wstate *s, const struct ktau_trace *t,
			  const struct ktau_trace_thread *th, const struct smap *m, uint64_t ref,
			  uint64_t *nev)
{
	int ret = 0;

	s->t = t;
	s->loc = ref;
	s->m.n = s->m.next = 0;
	s->m.emit = write_sample;
	s->m.arg = s;
	s->scount = 0;
	if (m && m->loc)
		ret = gather_samples(t, m->loc, ref, &s->m.ps, &s->m.n, &s->capps);
	if (ret)
		return ret;
	s->w = OTF2_Archive_GetEvtWriter(ar, ref);
	if (!s->w)
		return -EIO;
	s->lost_total = 0;
	s->nevents = 0;
	if (s->evcount)
		memset(s->evcount, 0, s->evcap * sizeof(*s->evcount));
	if (th)
		ret = ktau_trace_walk(th, on_event, s, NULL);
	/* The samples after the last event. */
	if (!ret)
		ret = trace_smerge_step(&s->m, 0, 0, UINT64_MAX, 0);
	*nev = s->nevents;
	OTF2_Archive_CloseEvtWriter(ar, s->w);
	return ret;
}

int trace_write_otf2(struct ktau_outdir *od, const char *name, struct ktau_trace *const *tv,
		     size_t ntraces, const int *ranks, uint64_t *nevents)
{
	struct wstate s = { .ev_base = 1 };
	struct smap *sm = NULL;
	OTF2_Archive *ar;
	OTF2_GlobalDefWriter *gw;
	char stage[PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	uint64_t t0 = UINT64_MAX, t1 = 0, *locs = NULL, *nev = NULL;
	size_t k, i, nloc = 0, l, j;
	int ret = 0;

	*nevents = 0;
	for (k = 0; k < ntraces; k++) {
		for (i = 0; i < tv[k]->nthreads; i++) {
			const struct ktau_trace_thread *th = &tv[k]->threads[i];

			for (l = 0; l < th->nrecs; l++) {
				t0 = th->recs[l].start_ns < t0 ? th->recs[l].start_ns : t0;
				t1 = th->recs[l].end_ns > t1 ? th->recs[l].end_ns : t1;
			}
			nloc++;
		}
		for (l = 0; l < tv[k]->nsamples; l++) {
			t0 = tv[k]->samples[l].time_ns < t0 ? tv[k]->samples[l].time_ns : t0;
			t1 = tv[k]->samples[l].time_ns > t1 ? tv[k]->samples[l].time_ns : t1;
		}
		if (tv[k]->start_ns && tv[k]->start_ns < t0)
			t0 = tv[k]->start_ns;
		if (tv[k]->end_ns > t1)
			t1 = tv[k]->end_ns;
		s.has_samples |= tv[k]->nsthreads > 0;
	}
	if (t0 == UINT64_MAX)
		t0 = t1 = 0;
	if (t1 < t0)
		t1 = t0;
	/* Samples: where each sampled thread goes; the event metrics after
	 * the samples' class. */
	if (s.has_samples) {
		s.ev_base = METRIC_SAMPLES + 1;
		s.al = OTF2_AttributeList_New();
		sm = calloc(ntraces, sizeof(*sm));
		if (!s.al || !sm) {
			ret = -ENOMEM;
			goto free_sm;
		}
		for (k = 0; k < ntraces; k++) {
			if (smap_init(&sm[k], tv[k], k)) {
				ret = -ENOMEM;
				goto free_sm;
			}
			for (j = 0; j < tv[k]->nsthreads; j++)
				nloc += own_first(&sm[k], j);
		}
	}
	snprintf(stage, sizeof(stage), "%s/ktaud-otf2.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(stage)) {
		ret = -errno;
		goto free_sm;
	}
	locs = calloc(nloc + 1, sizeof(*locs));
	nev = calloc(nloc + 1, sizeof(*nev));
	ar = OTF2_Archive_Open(stage, name, OTF2_FILEMODE_WRITE, 1 << 20, 4 << 20,
			       OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
	if (!ar || !locs || !nev) {
		ret = ar ? -ENOMEM : -EIO;
		goto out;
	}
	OTF2_Archive_SetFlushCallbacks(ar, &flush_cbs, NULL);
	OTF2_Archive_SetSerialCollectiveCallbacks(ar);
	OTF2_Archive_SetCreator(ar, "ktaud trace (KTAU, libktau " LIBKTAU_VERSION ")");
	OTF2_Archive_SetDescription(ar, s.has_samples ? "KTAU kernel routines and samples per thread"
						      : "KTAU kernel routines per thread");
	OTF2_Archive_SetMachineName(ar, tv[0]->hostname[0] ? tv[0]->hostname : "unknown");
	if (OTF2_Archive_OpenEvtFiles(ar) != OTF2_SUCCESS) {
		ret = -EIO;
		goto close;
	}
	s.mw = OTF2_Archive_GetMarkerWriter(ar);
	if (!s.mw || OTF2_MarkerWriter_WriteDefMarker(s.mw, 0, "KTAU", "lost records",
						      OTF2_SEVERITY_HIGH) != OTF2_SUCCESS) {
		ret = -EIO;
		goto close;
	}
	/* Events, location by location: the threads, then the sampled
	 * threads without records. */
	l = 0;
	for (k = 0; k < ntraces && !ret; k++) {
		for (i = 0; i < tv[k]->nthreads && !ret; i++, l++) {
			locs[l] = trace_location_id(tv[k], k, i);
			ret = write_location(ar, &s, tv[k], &tv[k]->threads[i], sm ? &sm[k] : NULL,
					     locs[l], &nev[l]);
			*nevents += nev[l];
		}
	}
	for (k = 0; sm && k < ntraces && !ret; k++) {
		for (j = 0; j < tv[k]->nsthreads && !ret && l < nloc; j++) {
			if (!own_first(&sm[k], j))
				continue;
			locs[l] = sm[k].loc[j];
			ret = write_location(ar, &s, tv[k], NULL, &sm[k], locs[l], &nev[l]);
			*nevents += nev[l];
			l++;
		}
	}
	if (!ret)
		ret = s.err;
	OTF2_Archive_CloseMarkerWriter(ar, s.mw);
	if (OTF2_Archive_CloseEvtFiles(ar) != OTF2_SUCCESS && !ret)
		ret = -EIO;
	if (ret)
		goto close;
	/* Local definitions: none, but the files must be there. */
	if (OTF2_Archive_OpenDefFiles(ar) != OTF2_SUCCESS) {
		ret = -EIO;
		goto close;
	}
	for (l = 0; l < nloc; l++) {
		OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(ar, locs[l]);

		if (dw)
			OTF2_Archive_CloseDefWriter(ar, dw);
	}
	OTF2_Archive_CloseDefFiles(ar);

	/* Global definitions: their strings first (readers such as otf2-print
	 * look a string up when they meet its reference). */
	gw = OTF2_Archive_GetGlobalDefWriter(ar);
	if (!gw) {
		ret = -EIO;
		goto close;
	}
	ret = write_global_defs(gw, &s, tv, ntraces, ranks, sm, locs, nev, nloc, t0, t1);
	OTF2_Archive_CloseGlobalDefWriter(ar, gw);
close:
	if (OTF2_Archive_Close(ar) != OTF2_SUCCESS && !ret)
		ret = -EIO;
	if (!ret)
		ret = adopt_tree(od, stage, NULL, 0);
	if (!ret)
		ret = adopt_tree(od, stage, NULL, 1);
out:
	rm_tree(stage);
	free(locs);
	free(nev);
	free(s.regs);
	free(s.evcount);
	trace_strtab_free(&s.strs);
	trace_strtab_free(&s.regnames);
	trace_strtab_free(&s.evnames);
free_sm:
	for (k = 0; sm && k < ntraces; k++) {
		free(sm[k].loc);
		free(sm[k].thread);
		free(sm[k].own);
		free(sm[k].at);
	}
	free(sm);
	free(s.m.ps);
	if (s.al)
		OTF2_AttributeList_Delete(s.al);
	return ret;
}
