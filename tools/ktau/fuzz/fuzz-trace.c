// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target of trace mode's readers: raw trace files
 * (ktau_trace_parse_file) and the chunk stream that read() of
 * /proc/ktau/trace returns (ktau_trace_add_chunks). Whatever is accepted
 * goes through the time-ordered walk (enter/leave events must come out
 * nested and in time order) and is written again as a raw file that must
 * read back with the same records and calls cut from the profile (seed
 * cuts-v2.ktrace: a version 2 file). Build and run: make fuzz.
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

static void exercise(const struct ktau_trace *t)
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
	if (ktau_trace_file_finish(tf, t))
		goto out;
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
		exercise(t);
		ktau_trace_free(t);
	}
	t = ktau_trace_new();
	if (t && ktau_trace_add_chunks(t, data, size) >= 0)
		exercise(t);
	ktau_trace_free(t);
	return 0;
}
