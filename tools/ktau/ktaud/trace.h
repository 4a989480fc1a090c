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
};
/*
 * Read the archive at path (the .otf2 anchor) back with libotf2 and check
 * it: enters and leaves nest per location, time never goes back per
 * location; and against the profiles of the traces tv (location IDs as
 * trace_location_id): per thread without lost records and per routine of
 * the traced groups, the enter/leave pairs equal the profile's calls and
 * their inclusive time (outermost calls) its inclusive time within one
 * nanosecond per call. Problems are printed to log (at most 20); returns
 * 0 when everything holds, 1 when not, -errno when it cannot read.
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
