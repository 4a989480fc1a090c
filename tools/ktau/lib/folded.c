// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: folded stacks, the input of flamegraph.pl, inferno and
 * speedscope: "frame;frame;frame value" per line. Frames are the task,
 * the kernel group class and the routine; the value is exclusive ns.
 * Samples: the thread, the sampled function and, with source lines, the
 * line as one more frame.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "libktau.h"
#include "sample-internal.h"

/* Frames must not hold ';' (separator) or control characters; spaces
 * become '_' too unless space is set (the count follows the last one). */
static void frame_n(FILE *f, const char *s, size_t n, int space)
{
	for (; n--; s++) {
		unsigned char c = *s;

		fputc(c == ';' ? ':' : (c < 0x20 || c == 0x7f || (c == ' ' && !space)) ? '_' : c,
		      f);
	}
}

static void frame(FILE *f, const char *s, int space)
{
	frame_n(f, s, strlen(s), space);
}

/*
 * User code: "symbol"; a place with a source line (KTAU_LIB_PROFILE_LINES,
 * "function [{file} {line}]") is the function and, above it, a frame
 * "file.c:LINE" of the file's last component: the function keeps its
 * width in a flame graph, its lines are the boxes on top.
 */
static void user_frames(FILE *f, const char *sym)
{
	const char *file, *base;
	unsigned long line;
	size_t fn, flen;

	if (!ktau__srcline_split(sym, &fn, &file, &flen, &line)) {
		frame(f, sym, 1);
		return;
	}
	frame_n(f, sym, fn, 1);
	fputc(';', f);
	for (base = file + flen; base > file && base[-1] != '/'; base--)
		;
	frame_n(f, base, (size_t)(file + flen - base), 0);
	fprintf(f, ":%lu", line);
}

int ktau_write_folded(FILE *f, const struct ktau_snap *snap,
		      const struct ktau_registry *reg, int by_process)
{
	char comm[sizeof(snap->tasks[0].comm)];
	size_t i, j;

	for (i = 0; i < snap->ntasks; i++) {
		const struct ktau_task *t = &snap->tasks[i];

		for (j = 0; j < t->nentries; j++) {
			const struct ktau_func_stat *e = &t->entries[j];

			if (!e->excl_ns)
				continue;
			if (t->flags & KTAU_TASK_AGGREGATE) {
				fputs("aggregate", f);
			} else {
				memcpy(comm, t->comm, sizeof(comm));
				comm[sizeof(comm) - 1] = '\0';
				frame(f, comm, 0);
				if (by_process || (t->flags & KTAU_TASK_PROCESS))
					fprintf(f, "-%d", t->pid);
				else
					fprintf(f, "-%d/%d", t->pid, t->tid);
			}
			fprintf(f, ";%s;", ktau_group_class(ktau_func_group(reg, e->id)));
			frame(f, ktau_func_name(reg, e->id), 0);
			fprintf(f, " %llu\n", (unsigned long long)e->excl_ns);
		}
	}
	return ktau__stream_err(f);
}

/* ---- Samples ---------------------------------------------------------- */

struct fline {
	char *text;
	uint64_t count;
};

static int cmp_fline(const void *a, const void *b)
{
	return strcmp(((const struct fline *)a)->text, ((const struct fline *)b)->text);
}

/* The stack of a place: "comm;symbol" or "comm;[k] routine[;function]". */
static char *sample_stack(const struct ktau_sample_place *pl, const struct ktau_snap *snap,
			  const struct ktau_registry *reg)
{
	const struct ktau_task *t = snap ? ktau_snap_find(snap, pl->tid) : NULL;
	char comm[24], *text = NULL;
	size_t len;
	FILE *m = open_memstream(&text, &len);

	if (!m)
		return NULL;
	if (t) {
		memcpy(comm, t->comm, sizeof(t->comm));
		comm[sizeof(t->comm)] = '\0';
	} else {
		snprintf(comm, sizeof(comm), "tid-%d", (int)pl->tid);
	}
	frame(m, comm[0] ? comm : "?", 0);
	fputc(';', m);
	if (pl->user) {
		user_frames(m, pl->sym ? pl->sym : "?");
	} else {
		fputs("[k] ", m);
		frame(m, ktau_func_name(reg, pl->id), 0);
		if (pl->sym) {
			fputc(';', m);
			frame(m, pl->sym, 1);
		}
	}
	if (fclose(m)) {
		free(text);
		return NULL;
	}
	return text;
}

int ktau_write_sample_folded(FILE *f, const struct ktau_sample_profile *p,
			     const struct ktau_snap *snap, const struct ktau_registry *reg)
{
	const struct ktau_sample_place *pl;
	struct fline *v;
	size_t n, i, m;
	int ret = 0;

	pl = ktau_sample_profile_places(p, &n);
	if (!n)
		return 0;
	v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		v[i].text = sample_stack(&pl[i], snap, reg);
		v[i].count = pl[i].count;
		if (!v[i].text)
			ret = -ENOMEM;
	}
	if (!ret) {
		/* Threads of the same name, and places that differ only in what
		 * the frames leave out, make one line. */
		qsort(v, n, sizeof(*v), cmp_fline);
		for (i = 0; i < n; i = m) {
			uint64_t c = 0;

			for (m = i; m < n && !strcmp(v[m].text, v[i].text); m++)
				c += v[m].count;
			fprintf(f, "%s %llu\n", v[i].text, (unsigned long long)c);
		}
		ret = ktau__stream_err(f);
	}
	for (i = 0; i < n; i++)
		free(v[i].text);
	free(v);
	return ret;
}
