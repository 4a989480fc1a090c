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

struct strtab {
	char **v;
	size_t n, cap;
	size_t *hash, hcap;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* The index of s, added when new; -1 when out of memory. */
static long str_ref(struct strtab *t, const char *s)
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

static void strtab_free(struct strtab *t)
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
	struct strtab strs;
	struct strtab regnames;	/* region names: the region ref is the index */
	struct region *regs;
	size_t nregs, capregs;
	struct strtab evnames;	/* event metrics: the metric ref is 1 + index */
	uint64_t *evcount;	/* per location being written */
	size_t evcap;
	OTF2_EvtWriter *w;
	const struct ktau_trace *t;
	uint64_t lost_total, nevents, nlost_marks;
	OTF2_MarkerWriter *mw;
	OTF2_LocationRef loc;
	int err;
};

static long sref(struct wstate *s, const char *str)
{
	long r = str_ref(&s->strs, str);

	if (r < 0)
		s->err = -ENOMEM;
	return r < 0 ? 0 : r;
}

static uint32_t region_of(struct wstate *s, uint32_t id)
{
	const char *name = ktau_trace_name(s->t, id);
	size_t before = s->regnames.n;
	long r = str_ref(&s->regnames, name);

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

static int write_metric(struct wstate *s, uint64_t ts, uint32_t ref, uint64_t v)
{
	OTF2_Type type = OTF2_TYPE_UINT64;
	OTF2_MetricValue val = { .unsigned_int = v };

	return OTF2_EvtWriter_Metric(s->w, NULL, ts, ref, 1, &type, &val) == OTF2_SUCCESS ? 0
											      : -EIO;
}

static int on_event(void *arg, int enter, uint64_t ts, const struct ktau_trace_record *r)
{
	struct wstate *s = arg;
	OTF2_ErrorCode e = OTF2_SUCCESS;

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
		k = str_ref(&s->evnames, name);
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
		if (write_metric(s, ts, 1 + (uint32_t)k, s->evcount[k]))
			return -EIO;
	}
	s->nevents++;
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

/* Move the files of the staged archive into od. */
static int adopt_tree(struct ktau_outdir *od, const char *stage, const char *sub)
{
	char path[PATH_MAX], name[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int ret = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s%s%s", stage, sub ? "/" : "", sub ? sub : "");
	d = opendir(path);
	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		if (de->d_name[0] == '.')
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
				ret = adopt_tree(od, stage, de->d_name);
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

static int write_global_defs(OTF2_GlobalDefWriter *gw, struct wstate *s,
			     struct ktau_trace *const *tv, size_t ntraces, const int *ranks,
			     const uint64_t *locs, const uint64_t *nev, size_t nloc, uint64_t t0,
			     uint64_t t1)
{
	uint64_t rt = tv[0]->realtime_ns ? tv[0]->realtime_ns - (tv[0]->start_ns - t0) : 0;
	struct stnode *nodes = calloc(2 * ntraces + 1, sizeof(*nodes));
	struct lgroup *lgs = calloc(nloc + 1, sizeof(*lgs));
	struct location *lv = calloc(nloc + 1, sizeof(*lv));
	uint32_t *hosts = calloc(ntraces + 1, sizeof(*hosts));
	uint64_t *members = calloc(s->nregs + 1, sizeof(*members));
	uint32_t s_machine, s_rank, s_units[2], s_groups[KTAU_LIB_NR_GROUPS + 2], *s_metric = NULL;
	struct strtab hostnames = { 0 };
	size_t nnodes = 0, nlg = 0, k, i, j, l;
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
		long h = str_ref(&hostnames, tv[k]->hostname[0] ? tv[k]->hostname : "unknown");

		if (h < 0) {
			ret = -ENOMEM;
			goto out;
		}
		hosts[k] = (uint32_t)h;
		if ((size_t)h == before)
			nodes[nnodes++] = (struct stnode){ (uint32_t)sref(s, hostnames.v[h]), s_machine,
							   OTF2_UNDEFINED_SYSTEM_TREE_NODE };
	}
	for (k = 0, l = 0; k < ntraces; k++) {
		uint32_t parent = hosts[k];

		if (ranks && ranks[k] >= 0) {
			snprintf(buf, sizeof(buf), "rank %d", ranks[k]);
			nodes[nnodes] = (struct stnode){ (uint32_t)sref(s, buf), s_rank, hosts[k] };
			parent = (uint32_t)nnodes++;
		}
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
	/* Metrics: lost records (0), then one per event name. */
	for (i = 0; i <= s->evnames.n; i++) {
		OTF2_MetricMemberRef m = (OTF2_MetricMemberRef)i;

		OTF2_GlobalDefWriter_WriteMetricMember(gw, m, s_metric[i], s_metric[i],
						       OTF2_METRIC_TYPE_OTHER,
						       OTF2_METRIC_ACCUMULATED_START, OTF2_TYPE_UINT64,
						       OTF2_BASE_DECIMAL, 0, s_units[i ? 1 : 0]);
		OTF2_GlobalDefWriter_WriteMetricClass(gw, (OTF2_MetricRef)i, 1, &m,
						      OTF2_METRIC_ASYNCHRONOUS,
						      OTF2_RECORDER_KIND_ABSTRACT);
	}
out:
	strtab_free(&hostnames);
	free(nodes);
	free(lgs);
	free(lv);
	free(hosts);
	free(members);
	free(s_metric);
	return ret;
}

int trace_write_otf2(struct ktau_outdir *od, const char *name, struct ktau_trace *const *tv,
		     size_t ntraces, const int *ranks, uint64_t *nevents)
{
	struct wstate s = { 0 };
	OTF2_Archive *ar;
	OTF2_GlobalDefWriter *gw;
	char stage[PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	uint64_t t0 = UINT64_MAX, t1 = 0, *locs = NULL, *nev = NULL;
	size_t k, i, nloc = 0, l;
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
		if (tv[k]->start_ns && tv[k]->start_ns < t0)
			t0 = tv[k]->start_ns;
		if (tv[k]->end_ns > t1)
			t1 = tv[k]->end_ns;
	}
	if (t0 == UINT64_MAX)
		t0 = t1 = 0;
	if (t1 < t0)
		t1 = t0;
	snprintf(stage, sizeof(stage), "%s/ktaud-otf2.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(stage))
		return -errno;
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
	OTF2_Archive_SetDescription(ar, "KTAU kernel routines per thread");
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
	/* Events, location by location. */
	l = 0;
	for (k = 0; k < ntraces && !ret; k++) {
		s.t = tv[k];
		for (i = 0; i < tv[k]->nthreads && !ret; i++, l++) {
			locs[l] = trace_location_id(tv[k], k, i);
			s.loc = locs[l];
			s.w = OTF2_Archive_GetEvtWriter(ar, locs[l]);
			if (!s.w) {
				ret = -EIO;
				break;
			}
			s.lost_total = 0;
			s.nevents = 0;
			if (s.evcount)
				memset(s.evcount, 0, s.evcap * sizeof(*s.evcount));
			ret = ktau_trace_walk(&tv[k]->threads[i], on_event, &s, NULL);
			nev[l] = s.nevents;
			*nevents += s.nevents;
			OTF2_Archive_CloseEvtWriter(ar, s.w);
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
	ret = write_global_defs(gw, &s, tv, ntraces, ranks, locs, nev, nloc, t0, t1);
	OTF2_Archive_CloseGlobalDefWriter(ar, gw);
close:
	if (OTF2_Archive_Close(ar) != OTF2_SUCCESS && !ret)
		ret = -EIO;
	if (!ret)
		ret = adopt_tree(od, stage, NULL);
out:
	rm_tree(stage);
	free(locs);
	free(nev);
	free(s.regs);
	free(s.evcount);
	strtab_free(&s.strs);
	strtab_free(&s.regnames);
	strtab_free(&s.evnames);
	return ret;
}
