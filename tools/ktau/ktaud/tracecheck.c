// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud trace --check: read an OTF2 archive back with libotf2 and check it
 * on its own (enter/leave nesting and time order per location) and against
 * the profile of the same run that the raw trace file holds (pairs per
 * routine = the profile's calls, inclusive time = the profile's), and its
 * samples against the raw trace's (counts, windows, running counts, and
 * each one's time, address and function in the order the writer puts
 * them: trace_location_samples).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <linux/ktau.h>
#include <otf2/otf2.h>

#include "ktaud.h"
#include "trace.h"

#define MAX_REPORTS 20
#define MAX_REGIONS (1u << 20)

struct frame {
	uint32_t region;
	uint64_t ts;
};

/* A sampler's window on a location. */
struct window {
	uint64_t start, end;
};

struct cloc {
	uint64_t ref;
	uint64_t last_ts;
	struct frame *stack;
	size_t sp, cap;
	uint64_t *count, *incl;		/* per region */
	uint64_t *incl_all;		/* every activation's, per region ([other]) */
	uint32_t *active;		/* activations open, per region */
	uint64_t lost;			/* last value of the lost metric */
	int seen;
	/* Samples: the windows of its sampled threads, their samples in the
	 * raw traces, the sample metrics read. */
	struct window *win;
	size_t nwin;
	uint64_t samples_expected, samples;
	int sampled;
	/* ... and the raw traces' samples of the location in the archive's
	 * order (of trace want_t); gone: its thread exited, and its tid was
	 * in use again from then on (when gone_set). */
	const struct ktau_trace *want_t;
	const struct ktau_trace_sample **want;
	size_t nwant;
	int prepared, gone_set;
	uint64_t gone;
};

struct cstate {
	struct cloc *locs;
	size_t nlocs, caplocs;
	char **strings;
	size_t nstrings;
	uint32_t *region_name;		/* string of each region */
	uint8_t *region_user;		/* paradigm user: not in the profile */
	size_t nregions;
	uint32_t *member_name;		/* string of each metric member */
	size_t nmembers;
	uint64_t sample_class;		/* the samples' metric class; UINT64_MAX: none */
	uint64_t attr_function;		/* attribute "sampled function"; UINT64_MAX: none */
	struct trace_check *res;
	FILE *log;
	int reports;
	int err;
};

static void say(struct cstate *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct cstate *s, const char *fmt, ...)
{
	va_list ap;

	if (s->reports++ >= MAX_REPORTS)
		return;
	va_start(ap, fmt);
	vfprintf(s->log, fmt, ap);
	va_end(ap);
	fputc('\n', s->log);
}

static int cmp_loc(const void *a, const void *b)
{
	const struct cloc *x = a, *y = b;

	return x->ref < y->ref ? -1 : x->ref > y->ref;
}

static struct cloc *find_loc(struct cstate *s, uint64_t ref)
{
	struct cloc key = { .ref = ref };

	return bsearch(&key, s->locs, s->nlocs, sizeof(key), cmp_loc);
}

static OTF2_CallbackCode def_string(void *ud, OTF2_StringRef self, const char *str)
{
	struct cstate *s = ud;

	if (self >= (1u << 24))
		return OTF2_CALLBACK_INTERRUPT;
	if (self >= s->nstrings) {
		size_t n = (size_t)self * 2 + 16;
		char **v = realloc(s->strings, n * sizeof(*v));

		if (!v)
			return OTF2_CALLBACK_INTERRUPT;
		memset(v + s->nstrings, 0, (n - s->nstrings) * sizeof(*v));
		s->strings = v;
		s->nstrings = n;
	}
	free(s->strings[self]);
	s->strings[self] = strdup(str);
	return s->strings[self] ? OTF2_CALLBACK_SUCCESS : OTF2_CALLBACK_INTERRUPT;
}

static OTF2_CallbackCode def_location(void *ud, OTF2_LocationRef self, OTF2_StringRef name,
				      OTF2_LocationType type, uint64_t nev,
				      OTF2_LocationGroupRef group)
{
	struct cstate *s = ud;

	(void)name; (void)type; (void)nev; (void)group;
	if (s->nlocs == s->caplocs) {
		size_t n = s->caplocs ? s->caplocs * 2 : 64;
		struct cloc *v = realloc(s->locs, n * sizeof(*v));

		if (!v)
			return OTF2_CALLBACK_INTERRUPT;
		s->locs = v;
		s->caplocs = n;
	}
	memset(&s->locs[s->nlocs], 0, sizeof(s->locs[0]));
	s->locs[s->nlocs++].ref = self;
	return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_region(void *ud, OTF2_RegionRef self, OTF2_StringRef name,
				    OTF2_StringRef canon, OTF2_StringRef desc, OTF2_RegionRole role,
				    OTF2_Paradigm par, OTF2_RegionFlag flags, OTF2_StringRef file,
				    uint32_t b, uint32_t e)
{
	struct cstate *s = ud;

	(void)canon; (void)desc; (void)role; (void)flags; (void)file; (void)b; (void)e;
	if (self >= MAX_REGIONS)
		return OTF2_CALLBACK_INTERRUPT;
	if (self >= s->nregions) {
		size_t n = (size_t)self + 64;
		uint32_t *v = realloc(s->region_name, n * sizeof(*v));

		if (!v)
			return OTF2_CALLBACK_INTERRUPT;
		memset(v + s->nregions, 0xff, (n - s->nregions) * sizeof(*v));
		s->region_name = v;
		{
			uint8_t *u = realloc(s->region_user, n);

			if (!u)
				return OTF2_CALLBACK_INTERRUPT;
			memset(u + s->nregions, 0, n - s->nregions);
			s->region_user = u;
		}
		s->nregions = n;
	}
	s->region_name[self] = name;
	s->region_user[self] = par == OTF2_PARADIGM_USER;
	s->res->regions++;
	return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_metric_member(void *ud, OTF2_MetricMemberRef self,
					   OTF2_StringRef name, OTF2_StringRef desc,
					   OTF2_MetricType mtype, OTF2_MetricMode mode,
					   OTF2_Type vtype, OTF2_Base base, int64_t exp,
					   OTF2_StringRef unit)
{
	struct cstate *s = ud;

	(void)desc; (void)mtype; (void)mode; (void)vtype; (void)base; (void)exp; (void)unit;
	if (self >= MAX_REGIONS)
		return OTF2_CALLBACK_INTERRUPT;
	if (self >= s->nmembers) {
		size_t n = (size_t)self + 16;
		uint32_t *v = realloc(s->member_name, n * sizeof(*v));

		if (!v)
			return OTF2_CALLBACK_INTERRUPT;
		memset(v + s->nmembers, 0xff, (n - s->nmembers) * sizeof(*v));
		s->member_name = v;
		s->nmembers = n;
	}
	s->member_name[self] = name;
	return OTF2_CALLBACK_SUCCESS;
}

/* The samples' class: its first member is "ktau samples <event>". */
static OTF2_CallbackCode def_metric_class(void *ud, OTF2_MetricRef self, uint8_t n,
					  const OTF2_MetricMemberRef *members,
					  OTF2_MetricOccurrence occ, OTF2_RecorderKind kind)
{
	struct cstate *s = ud;
	uint32_t name;

	(void)occ; (void)kind;
	if (n != 2 || members[0] >= s->nmembers)
		return OTF2_CALLBACK_SUCCESS;
	name = s->member_name[members[0]];
	if (name < s->nstrings && s->strings[name] &&
	    !strncmp(s->strings[name], "ktau samples ", 13))
		s->sample_class = self;
	return OTF2_CALLBACK_SUCCESS;
}

/* The attribute of a sample that names its function. */
static OTF2_CallbackCode def_attribute(void *ud, OTF2_AttributeRef self, OTF2_StringRef name,
				       OTF2_StringRef desc, OTF2_Type type)
{
	struct cstate *s = ud;

	(void)desc;
	if (type == OTF2_TYPE_STRING && name < s->nstrings && s->strings[name] &&
	    !strcmp(s->strings[name], "sampled function"))
		s->attr_function = self;
	return OTF2_CALLBACK_SUCCESS;
}

/* The location's counters, allocated at its first event. */
static struct cloc *event_loc(struct cstate *s, uint64_t ref, uint64_t ts)
{
	struct cloc *l = find_loc(s, ref);

	if (!l) {
		say(s, "an event on location %" PRIu64 ", which is not defined", ref);
		s->res->nesting_errors++;
		return NULL;
	}
	if (!l->seen) {
		l->seen = 1;
		l->count = calloc(s->nregions + 1, sizeof(*l->count));
		l->incl = calloc(s->nregions + 1, sizeof(*l->incl));
		l->incl_all = calloc(s->nregions + 1, sizeof(*l->incl_all));
		l->active = calloc(s->nregions + 1, sizeof(*l->active));
		if (!l->count || !l->incl || !l->incl_all || !l->active) {
			s->err = -ENOMEM;
			return NULL;
		}
	} else if (ts < l->last_ts) {
		say(s, "location %" PRIu64 ": time goes back from %" PRIu64 " to %" PRIu64, ref,
		    l->last_ts, ts);
		s->res->time_errors++;
	}
	l->last_ts = ts;
	s->res->events++;
	return l;
}

static OTF2_CallbackCode ev_enter(OTF2_LocationRef loc, OTF2_TimeStamp ts, void *ud,
				  OTF2_AttributeList *al, OTF2_RegionRef region)
{
	struct cstate *s = ud;
	struct cloc *l = event_loc(s, loc, ts);

	(void)al;
	if (!l)
		return s->err ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
	if (region >= s->nregions || s->region_name[region] == UINT32_MAX) {
		say(s, "location %" PRIu64 ": enter of region %u, which is not defined", loc, region);
		s->res->nesting_errors++;
		return OTF2_CALLBACK_SUCCESS;
	}
	if (l->sp == l->cap) {
		size_t n = l->cap ? l->cap * 2 : 32;
		struct frame *v = realloc(l->stack, n * sizeof(*v));

		if (!v) {
			s->err = -ENOMEM;
			return OTF2_CALLBACK_INTERRUPT;
		}
		l->stack = v;
		l->cap = n;
	}
	l->stack[l->sp].region = region;
	l->stack[l->sp++].ts = ts;
	l->active[region]++;
	s->res->enters++;
	return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_leave(OTF2_LocationRef loc, OTF2_TimeStamp ts, void *ud,
				  OTF2_AttributeList *al, OTF2_RegionRef region)
{
	struct cstate *s = ud;
	struct cloc *l = event_loc(s, loc, ts);
	struct frame f;

	(void)al;
	if (!l)
		return s->err ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
	if (!l->sp || l->stack[l->sp - 1].region != region) {
		say(s, "location %" PRIu64 ": leave of region %u at %" PRIu64 " but %s", loc, region,
		    ts, l->sp ? "another region is on top" : "nothing was entered");
		s->res->nesting_errors++;
		return OTF2_CALLBACK_SUCCESS;
	}
	f = l->stack[--l->sp];
	l->count[region]++;
	s->res->user_pairs += s->region_user[region];
	/*
	 * Inclusive time as profiles keep it: the outermost activation; and
	 * every activation's, as the kernel keeps it for [other], whose
	 * nested calls are of other routines (a page fault in a system call,
	 * both without a slot of their own).
	 */
	if (!--l->active[region])
		l->incl[region] += ts - f.ts;
	l->incl_all[region] += ts - f.ts;
	return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_metric(OTF2_LocationRef loc, OTF2_TimeStamp ts, void *ud,
				   OTF2_AttributeList *al, OTF2_MetricRef metric, uint8_t n,
				   const OTF2_Type *types, const OTF2_MetricValue *vals)
{
	struct cstate *s = ud;
	struct cloc *l = event_loc(s, loc, ts);
	const struct ktau_trace_sample *p;
	OTF2_StringRef fn;
	char name[256];
	size_t w;

	if (l && metric == 0 && n == 1 && types[0] == OTF2_TYPE_UINT64)
		l->lost = vals[0].unsigned_int;
	if (!l || metric != s->sample_class)
		return s->err ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
	/* A sample: its running count, and within a window of its location. */
	s->res->samples++;
	l->samples++;
	if (n != 2 || types[0] != OTF2_TYPE_UINT64 || vals[0].unsigned_int != l->samples) {
		say(s, "location %" PRIu64 ": sample %" PRIu64 " at %" PRIu64 " has the count %" PRIu64,
		    loc, l->samples, ts, n ? vals[0].unsigned_int : 0);
		s->res->sample_errors++;
	}
	for (w = 0; w < l->nwin; w++)
		if (ts >= l->win[w].start && ts <= l->win[w].end)
			break;
	if (w == l->nwin && l->sampled) {
		say(s, "location %" PRIu64 ": a sample at %" PRIu64 " ns, outside its sampler's window",
		    loc, ts);
		s->res->sample_errors++;
	}
	if (l->gone_set && ts > l->gone) {
		say(s, "location %" PRIu64 ": a sample at %" PRIu64 " ns, after its thread exited (tid %d "
		    "was in use again from %" PRIu64 " ns)", loc, ts, (int32_t)(loc & 0xffffffff),
		    l->gone);
		s->res->sample_errors++;
	}
	/* The raw trace's sample in the same place: its time, ip, function. */
	if (l->samples > l->nwant || n != 2 || types[1] != OTF2_TYPE_UINT64)
		return s->err ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
	p = l->want[l->samples - 1];
	if (ts != p->time_ns || vals[1].unsigned_int != p->ip) {
		say(s, "location %" PRIu64 ": sample %" PRIu64 " at %" PRIu64 " ns, ip %#" PRIx64 "; the "
		    "raw trace's at %" PRIu64 " ns, ip %#" PRIx64, loc, l->samples, ts,
		    vals[1].unsigned_int, p->time_ns, p->ip);
		s->res->sample_errors++;
	} else if (s->attr_function != UINT64_MAX) {
		trace_sample_name(l->want_t, p, name, sizeof(name));
		if (!al || OTF2_AttributeList_GetStringRef(al, (OTF2_AttributeRef)s->attr_function,
							   &fn) != OTF2_SUCCESS) {
			say(s, "location %" PRIu64 ": sample %" PRIu64 " at %" PRIu64 " ns without its "
			    "function; the raw trace's in '%s'", loc, l->samples, ts, name);
			s->res->sample_errors++;
		} else if (fn >= s->nstrings || !s->strings[fn] || strcmp(s->strings[fn], name)) {
			say(s, "location %" PRIu64 ": sample %" PRIu64 " at %" PRIu64 " ns in '%s'; the "
			    "raw trace's in '%s'", loc, l->samples, ts,
			    fn < s->nstrings && s->strings[fn] ? s->strings[fn] : "?", name);
			s->res->sample_errors++;
		}
	}
	return s->err ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

/*
 * Location l (of thread i of t, SIZE_MAX: none; its samples those of the
 * sampled threads with loc[j] == l->ref): the raw trace's samples in the
 * archive's order, and when its thread exited and a later thread of t has
 * its tid, from when that one's records start: by then it was gone.
 */
static int prepare_location(struct cloc *l, const struct ktau_trace *t, size_t i,
			    const uint64_t *loc)
{
	const struct ktau_trace_thread *th = i < t->nthreads ? &t->threads[i] : NULL;
	uint64_t a, b;
	size_t m;
	int ret;

	l->prepared = 1;
	l->want_t = t;
	ret = trace_location_samples(t, th, loc, l->ref, &l->want, &l->nwant);
	if (ret || !th || !(th->flags & KTAU_LIB_TRACE_EXITED))
		return ret;
	for (m = i + 1; m < t->nthreads; m++)
		if (t->threads[m].tid == th->tid && trace_thread_span(&t->threads[m], &a, &b) &&
		    (!l->gone_set || a < l->gone)) {
			l->gone = a;
			l->gone_set = 1;
		}
	return 0;
}

/*
 * The sampled threads of the raw traces: their own consistency (counters,
 * samples in the window, time order), and their windows and samples onto
 * the locations they go to.
 */
static int prepare_samples(struct cstate *s, struct ktau_trace *const *tv, size_t ntraces)
{
	size_t k, j, i;
	int ret;

	for (k = 0; k < ntraces; k++) {
		const struct ktau_trace *t = tv[k];
		uint64_t *loc;
		size_t *thread;

		if (!t->nsthreads)
			continue;
		if (trace_sample_locations(t, k, &loc, &thread))
			return -ENOMEM;
		for (j = 0; j < t->nsthreads; j++) {
			const struct ktau_trace_sthread *st = &t->sthreads[j];
			struct cloc *l = find_loc(s, loc[j]);
			uint64_t prev = 0;

			s->res->sample_threads++;
			s->res->samples_in_trace += st->n;
			if (st->first > t->nsamples || st->n > t->nsamples - st->first) {
				say(s, "sampled thread %d: samples %zu..%zu, the trace has %zu", st->tid,
				    st->first, st->first + st->n, t->nsamples);
				s->res->sample_errors++;
				continue;
			}
			if (st->lost > st->taken || st->n > st->taken - st->lost) {
				say(s, "sampled thread %d: %zu samples and %" PRIu64 " lost, but %" PRIu64
				    " taken", st->tid, st->n, st->lost, st->taken);
				s->res->sample_errors++;
			}
			for (i = 0; i < st->n; i++) {
				uint64_t ts = t->samples[st->first + i].time_ns;

				if (ts < st->start_ns || ts > st->end_ns) {
					say(s, "sampled thread %d: sample %zu at %" PRIu64 " ns, outside "
					    "its sampler's window %" PRIu64 "..%" PRIu64, st->tid, i, ts,
					    st->start_ns, st->end_ns);
					s->res->sample_errors++;
				}
				if (ts < prev) {
					say(s, "sampled thread %d: sample %zu at %" PRIu64 " ns, before "
					    "the one before it (%" PRIu64 ")", st->tid, i, ts, prev);
					s->res->sample_errors++;
				}
				prev = ts;
			}
			if (!l) {
				say(s, "sampled thread %d: no location %" PRIu64 " in the archive",
				    st->tid, loc[j]);
				s->res->sample_errors++;
				continue;
			}
			{
				struct window *v = realloc(l->win, (l->nwin + 1) * sizeof(*v));

				if (!v) {
					free(loc);
					free(thread);
					return -ENOMEM;
				}
				l->win = v;
				l->win[l->nwin++] = (struct window){ st->start_ns, st->end_ns };
			}
			l->sampled = 1;
			l->samples_expected += st->n;
			ret = l->prepared ? 0 : prepare_location(l, t, thread[j], loc);
			if (ret) {
				free(loc);
				free(thread);
				return ret;
			}
		}
		free(loc);
		free(thread);
	}
	return 0;
}

/* The function ID of a region name in reg (generated names included). */
static uint32_t name_id(const struct ktau_registry *reg, const char *name)
{
	uint32_t id = ktau_func_id(reg, name);
	unsigned int v;
	int n;

	if (!id && sscanf(name, "ktau_id_%u%n", &v, &n) == 1 && !name[n])
		id = v;
	return id;
}

static int traced_group(const struct ktau_trace *t, uint32_t id)
{
	int g = ktau_func_group(t->reg, id);

	return !t->groups || (g >= 0 && g < 64 && (t->groups >> g & 1));
}

/* Calls of @id that the writer cut from thread @tid's profile. */
static uint64_t cut_calls(const struct ktau_trace *t, int32_t tid, uint32_t id)
{
	size_t i;

	for (i = 0; i < t->ncuts; i++)
		if (t->cuts[i].tid == tid && t->cuts[i].id == id)
			return t->cuts[i].calls;
	return 0;
}

/* Compare location l with the profile of its thread. */
static void compare(struct cstate *s, struct cloc *l, struct ktau_trace *const *tv,
		    size_t ntraces)
{
	size_t k = l->ref >> 48, i, r, n;
	int32_t tid = (int32_t)(l->ref & 0xffffffff);
	const struct ktau_trace_thread *th = NULL;
	const struct ktau_task *pt;
	const struct ktau_trace *t;
	int reused = (l->ref >> 32 & 0xffff) != 0;

	if (k >= ntraces) {
		s->res->threads_uncompared++;
		return;
	}
	t = tv[k];
	for (i = 0, n = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid) {
			n++;
			if (!th)
				th = &t->threads[i];
		}
	s->res->lost_in_archive += l->lost;
	if (th)
		s->res->lost_in_trace += th->lost_recs;
	if (th && l->lost != th->lost_recs) {
		say(s, "thread %d: %" PRIu64 " lost records in the archive, %" PRIu64 " in the raw trace",
		    tid, l->lost, th->lost_recs);
		s->res->count_mismatches++;
	}
	pt = t->profile && t->kernel_profile ? ktau_snap_find(t->profile, tid) : NULL;
	if (!pt || reused || n > 1) {
		s->res->threads_uncompared++;
		return;
	}
	if (l->lost || (th && (th->lost || th->lost_recs))) {
		s->res->threads_lost++;
		return;
	}
	s->res->threads_compared++;
	/* Every routine of the archive against the profile... */
	for (r = 0; r < s->nregions; r++) {
		const struct ktau_func_stat *e;
		const char *name;
		uint64_t incl, cut;
		uint32_t id;
		int64_t d;

		if (!l->seen || !l->count[r])
			continue;
		if (s->region_user[r])
			continue;
		name = s->region_name[r] < s->nstrings ? s->strings[s->region_name[r]] : NULL;
		id = name ? name_id(t->reg, name) : 0;
		e = id ? ktau_task_find(pt, id) : NULL;
		s->res->routines_compared++;
		if (!e || e->count != l->count[r]) {
			say(s, "thread %d (%.16s), %s: %" PRIu64 " enter/leave pairs, the profile has %" PRIu64
			    " calls", tid, pt->comm, name ? name : "?", l->count[r],
			    e ? e->count : 0);
			s->res->count_mismatches++;
			continue;
		}
		incl = id == KTAU_ID_OTHER ? l->incl_all[r] : l->incl[r];
		d = (int64_t)(incl - e->incl_ns);
		if ((d < 0 ? -d : d) > s->res->max_time_diff)
			s->res->max_time_diff = d < 0 ? -d : d;
		/*
		 * One nanosecond of rounding per call, at most, and per call the
		 * writer cut from the profile with its record (each rounded on
		 * its own): a profile's sum is rounded once.
		 */
		cut = cut_calls(t, tid, id);
		if ((uint64_t)(d < 0 ? -d : d) > e->count + cut + 1) {
			say(s, "thread %d (%.16s), %s: inclusive %" PRIu64 " ns in the trace, %" PRIu64
			    " ns in the profile (%" PRIu64 " calls, %" PRIu64 " cut)", tid, pt->comm,
			    name, incl, e->incl_ns, e->count, cut);
			s->res->time_mismatches++;
		}
	}
	/* ... and every traced routine of the profile in the archive. */
	for (i = 0; i < pt->nentries; i++) {
		const struct ktau_func_stat *e = &pt->entries[i];
		const char *name = ktau_func_name(t->reg, e->id);
		int found = 0;

		if (!e->count || !traced_group(t, e->id))
			continue;
		for (r = 0; l->seen && r < s->nregions && !found; r++)
			found = l->count[r] && s->region_name[r] < s->nstrings &&
				s->strings[s->region_name[r]] &&
				!strcmp(s->strings[s->region_name[r]], name);
		if (!found) {
			say(s, "thread %d (%.16s), %s: %" PRIu64 " calls in the profile, none in the trace",
			    tid, pt->comm, name, e->count);
			s->res->missing++;
		}
	}
}

int trace_check_archive(const char *path, struct ktau_trace *const *tv, size_t ntraces,
			FILE *log, struct trace_check *res)
{
	struct cstate s = { .res = res, .log = log, .sample_class = UINT64_MAX,
			    .attr_function = UINT64_MAX };
	OTF2_Reader *rd;
	OTF2_GlobalDefReader *gdr;
	OTF2_GlobalDefReaderCallbacks *dcb;
	OTF2_GlobalEvtReader *ger;
	OTF2_GlobalEvtReaderCallbacks *ecb;
	uint64_t n, i;
	size_t k, j;
	int defs, ret = 0;

	memset(res, 0, sizeof(*res));
	rd = OTF2_Reader_Open(path);
	if (!rd)
		return -EIO;
	OTF2_Reader_SetSerialCollectiveCallbacks(rd);
	gdr = OTF2_Reader_GetGlobalDefReader(rd);
	dcb = OTF2_GlobalDefReaderCallbacks_New();
	if (!gdr || !dcb) {
		ret = -EIO;
		goto out;
	}
	OTF2_GlobalDefReaderCallbacks_SetStringCallback(dcb, def_string);
	OTF2_GlobalDefReaderCallbacks_SetLocationCallback(dcb, def_location);
	OTF2_GlobalDefReaderCallbacks_SetRegionCallback(dcb, def_region);
	OTF2_GlobalDefReaderCallbacks_SetMetricMemberCallback(dcb, def_metric_member);
	OTF2_GlobalDefReaderCallbacks_SetMetricClassCallback(dcb, def_metric_class);
	OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(dcb, def_attribute);
	OTF2_Reader_RegisterGlobalDefCallbacks(rd, gdr, dcb, &s);
	OTF2_GlobalDefReaderCallbacks_Delete(dcb);
	if (OTF2_Reader_ReadAllGlobalDefinitions(rd, gdr, &n) != OTF2_SUCCESS) {
		ret = s.err ? s.err : -EIO;
		goto out;
	}
	qsort(s.locs, s.nlocs, sizeof(*s.locs), cmp_loc);
	res->locations = s.nlocs;
	ret = prepare_samples(&s, tv, ntraces);
	if (ret)
		goto out;
	for (k = 0; k < s.nlocs; k++)
		OTF2_Reader_SelectLocation(rd, s.locs[k].ref);
	defs = OTF2_Reader_OpenDefFiles(rd) == OTF2_SUCCESS;
	if (OTF2_Reader_OpenEvtFiles(rd) != OTF2_SUCCESS) {
		ret = -EIO;
		goto out;
	}
	for (k = 0; k < s.nlocs; k++) {
		if (defs) {
			OTF2_DefReader *dr = OTF2_Reader_GetDefReader(rd, s.locs[k].ref);

			if (dr) {
				OTF2_Reader_ReadAllLocalDefinitions(rd, dr, &i);
				OTF2_Reader_CloseDefReader(rd, dr);
			}
		}
		OTF2_Reader_GetEvtReader(rd, s.locs[k].ref);
	}
	if (defs)
		OTF2_Reader_CloseDefFiles(rd);
	ger = OTF2_Reader_GetGlobalEvtReader(rd);
	ecb = OTF2_GlobalEvtReaderCallbacks_New();
	if (!ger || !ecb) {
		ret = -EIO;
		goto out;
	}
	OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(ecb, ev_enter);
	OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(ecb, ev_leave);
	OTF2_GlobalEvtReaderCallbacks_SetMetricCallback(ecb, ev_metric);
	OTF2_Reader_RegisterGlobalEvtCallbacks(rd, ger, ecb, &s);
	OTF2_GlobalEvtReaderCallbacks_Delete(ecb);
	if (OTF2_Reader_ReadAllGlobalEvents(rd, ger, &n) != OTF2_SUCCESS) {
		ret = s.err ? s.err : -EIO;
		goto out;
	}
	OTF2_Reader_CloseGlobalEvtReader(rd, ger);
	OTF2_Reader_CloseEvtFiles(rd);
	for (k = 0; k < s.nlocs; k++) {
		if (s.locs[k].sp) {
			say(&s, "location %" PRIu64 ": %zu regions entered and never left",
			    s.locs[k].ref, s.locs[k].sp);
			res->unclosed++;
		}
		if (s.locs[k].samples != s.locs[k].samples_expected) {
			say(&s, "location %" PRIu64 ": %" PRIu64 " samples in the archive, %" PRIu64
			    " in the raw trace", s.locs[k].ref, s.locs[k].samples,
			    s.locs[k].samples_expected);
			res->sample_errors++;
		}
		compare(&s, &s.locs[k], tv, ntraces);
	}
	/* Threads of the profiles with traced calls and no location. */
	for (k = 0; k < ntraces; k++) {
		const struct ktau_snap *p = tv[k]->profile;

		if (!p || !tv[k]->kernel_profile)
			continue;
		for (j = 0; j < p->ntasks; j++) {
			const struct ktau_task *pt = &p->tasks[j];
			uint64_t calls = 0;
			size_t e;

			if (pt->flags & KTAU_TASK_AGGREGATE)
				continue;
			for (e = 0; e < pt->nentries; e++)
				if (traced_group(tv[k], pt->entries[e].id))
					calls += pt->entries[e].count;
			for (e = 0; e < s.nlocs; e++)
				if ((s.locs[e].ref >> 48) == k &&
				    (int32_t)(s.locs[e].ref & 0xffffffff) == pt->tid)
					break;
			if (calls && e == s.nlocs) {
				say(&s, "thread %d (%.16s): %" PRIu64 " traced calls in the profile, "
				    "no location in the archive", pt->tid, pt->comm, calls);
				res->missing++;
			}
		}
	}
	ret = res->nesting_errors || res->time_errors || res->unclosed || res->count_mismatches ||
	      res->time_mismatches || res->missing || res->sample_errors;
out:
	OTF2_Reader_Close(rd);
	for (k = 0; k < s.nlocs; k++) {
		free(s.locs[k].stack);
		free(s.locs[k].count);
		free(s.locs[k].incl);
		free(s.locs[k].incl_all);
		free(s.locs[k].active);
		free(s.locs[k].win);
		free(s.locs[k].want);
	}
	free(s.locs);
	for (k = 0; k < s.nstrings; k++)
		free(s.strings[k]);
	free(s.strings);
	free(s.region_name);
	free(s.region_user);
	free(s.member_name);
	if (s.reports > MAX_REPORTS)
		fprintf(log, "(%d more problems not shown)\n", s.reports - MAX_REPORTS);
	return ret;
}
