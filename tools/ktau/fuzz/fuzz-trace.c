// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target of trace mode's readers: raw trace files
 * (ktau_trace_parse_file) and the chunk stream that read() of
 * /proc/ktau/trace returns (ktau_trace_add_chunks). Whatever is accepted
 * goes through the time-ordered walk (enter/leave events must come out
 * nested and in time order) and is written again as a raw file that must
 * read back with the same records, calls cut from the profile (seed
 * cuts-v2.ktrace: a version 2 file) and samples (seed samples-v3.ktrace:
 * a version 3 file, ktau-trace-synth samples); the writer must finish
 * what the reader accepted. Build and run: make fuzz.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libktau.h"
#include <sys/mman.h>

struct walk {
	uint64_t last;
	long depth;
};

static int on_event(void *arg, int enter, uint64_t ts, const struct ktau_trace_record *r)
{
	struct walk *w = arg;

	(void)r;
	if (ts < w->last)
		abort();	/* time goes back */
	w->last = ts;
	if (enter == 1)
		w->depth++;
	else if (enter == 0 && --w->depth < 0)
		abort();	/* a leave without its enter */
	return 0;
}

/* The samples of a and b, their threads and names, are the same. */
static int same_samples(const struct ktau_trace *a, const struct ktau_trace *b)
{
	size_t i;

	if (strcmp(a->sample_event, b->sample_event) || a->sample_flags != b->sample_flags ||
	    a->nsthreads != b->nsthreads || a->nsamples != b->nsamples ||
	    a->nsample_names != b->nsample_names)
		return 0;
	for (i = 0; i < a->nsthreads; i++) {
		const struct ktau_trace_sthread *x = &a->sthreads[i], *y = &b->sthreads[i];

		if (x->tid != y->tid || x->pid != y->pid || x->start_ns != y->start_ns ||
		    x->end_ns != y->end_ns || x->taken != y->taken || x->lost != y->lost ||
		    x->first != y->first || x->n != y->n)
			return 0;
	}
	for (i = 0; i < a->nsamples; i++) {
		const struct ktau_trace_sample *x = &a->samples[i], *y = &b->samples[i];

		if (x->ip != y->ip || x->time_ns != y->time_ns || x->id != y->id ||
		    x->user != y->user || x->name != y->name)
			return 0;
	}
	for (i = 0; i < a->nsample_names; i++)
		if (strcmp(a->sample_names[i], b->sample_names[i]))
			return 0;
	return 1;
}

/* parsed: t came from ktau_trace_parse_file() (the writer must take it). */
static void exercise(const struct ktau_trace *t, int parsed)
{
	struct ktau_trace_file *tf;
	struct ktau_trace *again = NULL;
	char *buf = NULL;
	size_t i, len;
	int fd;

	for (i = 0; i < t->nthreads; i++) {
		struct walk w = { 0, 0 };

		if (ktau_trace_walk(&t->threads[i], on_event, &w, NULL) == 0 && w.depth)
			abort();	/* every enter is left */
	}
	/* Written again, one chunk per thread: the same records come back. */
	fd = memfd_create("trace", MFD_CLOEXEC);
	if (fd < 0 || ktau_trace_file_start(fd, t, &tf))
		goto out;
	if (ktau_trace_file_append_trace(tf, t))
		abort();
	if (ktau_trace_file_finish(tf, t)) {
		/* What the reader accepted, the writer writes. */
		if (parsed)
			abort();
		goto out;
	}
	len = (size_t)lseek(fd, 0, SEEK_END);
	buf = malloc(len + 1);
	if (!buf || pread(fd, buf, len, 0) != (ssize_t)len)
		goto out;
	if (ktau_trace_parse_file(buf, len, &again))
		abort();	/* what we write must read */
	if (again->nrecs != t->nrecs)
		abort();
	/* And the calls cut from the profile (version 2), as they were. */
	if (again->ncuts != t->ncuts ||
	    (t->ncuts && memcmp(again->cuts, t->cuts, t->ncuts * sizeof(*t->cuts))))
		abort();
	/* And the samples (version 3), their threads and names. */
	if (!same_samples(again, t))
		abort();
out:
	ktau_trace_free(again);
	free(buf);
	if (fd >= 0)
		close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ktau_trace *t = NULL;

	if (ktau_trace_parse_file(data, size, &t) == 0) {
		exercise(t, 1);
		ktau_trace_free(t);
	}
	t = ktau_trace_new();
	if (t && ktau_trace_add_chunks(t, data, size) >= 0)
		exercise(t, 0);
	ktau_trace_free(t);
	return 0;
}
