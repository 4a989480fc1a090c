// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: folded stacks, the input of flamegraph.pl, inferno and
 * speedscope: "frame;frame;frame value" per line. Frames are the task,
 * the kernel group class and the routine; the value is exclusive ns.
 */
#include <errno.h>
#include <string.h>

#include "libktau.h"

/* Frames must not hold ';' (separator) or control characters. */
static void frame(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		fputc(c == ';' ? ':' : (c <= 0x20 || c == 0x7f) ? '_' : c, f);
	}
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
				frame(f, comm);
				if (by_process || (t->flags & KTAU_TASK_PROCESS))
					fprintf(f, "-%d", t->pid);
				else
					fprintf(f, "-%d/%d", t->pid, t->tid);
			}
			fprintf(f, ";%s;", ktau_group_class(ktau_func_group(reg, e->id)));
			frame(f, ktau_func_name(reg, e->id));
			fprintf(f, " %llu\n", (unsigned long long)e->excl_ns);
		}
	}
	return ferror(f) ? -EIO : 0;
}
