/* SPDX-License-Identifier: GPL-2.0 */
/* ktaud trace: what its files share (trace.c, otf2.c, tracecheck.c, traceout.c). */
#ifndef KTAUD_TRACE_H
#define KTAUD_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "libktau.h"

/* The location ID of thread i of trace k in the archive. */
uint64_t trace_location_id(const struct ktau_trace *t, size_t k, size_t i);
/*
 * The locations of the sampled threads of trace k: for sampled thread j,
 * loc[j] and thread[j], the trace's thread of the same tid and pid whose
 * location it shares (of several, the tid used again: the one whose
 * records' span its window [start_ns, end_ns] overlaps most, or is
 * nearest; the first of equals), or SIZE_MAX: it has no records, and a
 * location of its own (one per tid and pid; its ID as trace_location_id
 * gives, its reuse counted on from the trace's threads of that tid). Both
 * malloc'd, NULL when t has no sampled thread. 0 or -ENOMEM.
 */
int trace_sample_locations(const struct ktau_trace *t, size_t k, uint64_t **loc, size_t **thread);
/* The span of th's records, [*first, *last]: 1, or 0 when it has none. */
int trace_thread_span(const struct ktau_trace_thread *th, uint64_t *first, uint64_t *last);
/*
 * A location's samples among its events as the archive has them: in time
 * order (ties as in ps), each before the events at its time, but after an
 * Enter of the routine it was taken in (its "ktau routine" names the
 * routine entered). ps: the location's samples in time order; emit() gets
 * each once, in that order; a non-zero return of it is returned.
 */
struct trace_smerge {
	const struct ktau_trace_sample **ps;
	size_t n, next;
	int (*emit)(void *arg, const struct ktau_trace_sample *p);
	void *arg;
};
/*
 * The samples to go before (after 0) or after (after 1) an event at ts
 * of the location (enter: an Enter of routine id); after 0 with ts
 * UINT64_MAX: every one left.
 */
int trace_smerge_step(struct trace_smerge *m, int after, int enter, uint64_t ts, uint32_t id);
/*
 * The samples of trace t on its location ref (those of the sampled threads
 * j with loc[j] == ref, loc from trace_sample_locations) in the order
 * trace_write_otf2() writes them among the events of thread th (NULL: a
 * location without records): *out (malloc'd, NULL when none), *n. 0 or
 * -errno.
 */
int trace_location_samples(const struct ktau_trace *t, const struct ktau_trace_thread *th,
			   const uint64_t *loc, uint64_t ref,
			   const struct ktau_trace_sample ***out, size_t *n);
/*
 * The code sample s of t was taken in, into buf: its name when it has one,
 * else "[kernel] <KTAU routine>" in the kernel, "[unknown]" in user mode.
 */
const char *trace_sample_name(const struct ktau_trace *t, const struct ktau_trace_sample *s,
			      char *buf, size_t size);

/* Strings by content: each has an index, in the order added. */
struct trace_strtab {
	char **v;
	size_t n, cap;
	size_t *hash, hcap;
};
/* The index of s, added (a copy) when new; -1 when out of memory. */
long trace_str_ref(struct trace_strtab *t, const char *s);
void trace_strtab_free(struct trace_strtab *t);
/*
 * Write the OTF2 archive <name>.otf2, <name>.def, <name>/ of the traces
 * into od (staged in $TMPDIR, then moved). ranks[k] >= 0: trace k is that
 * MPI rank's (a system tree node "rank N"); ranks may be NULL. *nevents:
 * the events written. 0 or -errno.
 */
int trace_write_otf2(struct ktau_outdir *od, const char *name, struct ktau_trace *const *tv,
		     size_t ntraces, const int *ranks, uint64_t *nevents);

/* What the check of an archive found. */
struct trace_check {
	uint64_t locations, events, enters, regions;
	uint64_t nesting_errors, time_errors, unclosed;
	uint64_t threads_compared, threads_lost, threads_uncompared;
	uint64_t routines_compared, count_mismatches, time_mismatches, missing;
	uint64_t lost_in_archive, lost_in_trace;
	uint64_t user_pairs;		/* enter/leave pairs of user routines */
	int64_t max_time_diff;		/* ns, largest |trace - profile| inclusive */
	/* Samples (ktaud trace --sample): */
	uint64_t sample_threads;	/* sampled threads of the raw traces */
	uint64_t samples_in_trace;	/* their samples */
	uint64_t samples;		/* sample metrics in the archive */
	uint64_t sample_errors;		/* counts, windows, order, locations */
};
/*
 * Read the archive at path (the .otf2 anchor) back with libotf2 and check
 * it: enters and leaves nest per location, time never goes back per
 * location; and against the profiles of the traces tv (location IDs as
 * trace_location_id): per thread without lost records and per routine of
 * the traced groups, the enter/leave pairs equal the profile's calls and
 * their inclusive time (outermost calls) its inclusive time within one
 * nanosecond per call. With samples: per sampled thread, its samples and
 * the kernel's counters agree (lost <= taken, n <= taken - lost) and lie
 * in its sampler's window in time order; per location, the sample metrics in
 * the archive are its sampled threads' samples (as many, their running
 * count, within their windows, each with the time, address and "sampled
 * function" of the raw trace's sample in its place, in the order of
 * trace_location_samples), none after its thread exited (when its tid is
 * a later thread's: from that one's first record); every sampled thread
 * has a location.
 * Problems are printed to log (at most 20); returns 0 when everything
 * holds, 1 when not, -errno when it cannot read.
 */
int trace_check_archive(const char *path, struct ktau_trace *const *tv, size_t ntraces,
			FILE *log, struct trace_check *res);

/* Chrome/Perfetto trace-event JSON of trace t (json-c, streamed). */
int trace_write_json(FILE *f, const struct ktau_trace *t);
/*
 * The gnuplot script of a timeline of the busiest threads (at most top),
 * calls at depth 0 as boxes coloured by group, to PNG on gnuplot's stdout.
 * -ENODATA: no thread has a kernel routine.
 */
int trace_timeline_script(FILE *f, const struct ktau_trace *t, unsigned int top, const char *title);

#endif
