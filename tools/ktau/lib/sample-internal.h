/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * libktau sampling internals, shared by sample.c (the ioctls, the counts
 * per place), symbolize.c (kallsyms, process maps), elfsym.c (symbol
 * tables of another process's files), folded.c and tau.c (the writers).
 */
#ifndef LIBKTAU_SAMPLE_INTERNAL_H
#define LIBKTAU_SAMPLE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "libktau.h"

/* snapshot.c: the descriptor of /proc/ktau/profiles. */
int ktau__fd(const struct ktau *k);

/*
 * elfsym.c: a symbolizer of another process, from the text of its maps
 * file: one object per file mapped, with the load bias of its mappings.
 * ktau__sym_name() and ktau__sym_close() of user-internal.h work on it.
 * A deleted (or replaced) file is read through /proc/@pid/map_files (0:
 * self) where the kernel allows it, and never through its old path: with
 * @pid < 0, or no access, its addresses are named "<file> (deleted)+0x..".
 */
struct kt_symbolizer;
struct kt_symbolizer *ktau__sym_open_maps(const char *maps, size_t len, pid_t pid);
/*
 * dwname.c: libdwfl names a live process's code where dwname.c is linked
 * in: in libktau.so and in ktaud, not in static builds (the guest's busybox
 * image) nor in libktau-runtime.so, which keep elfsym.c alone and do not
 * depend on libdw. Weak: an archive does not pull dwname.o in for them,
 * and then they are NULL. ktau__dw_report(): the modules of @pid now
 * (again in @old, if any), NULL if none; ktau__dw_name(): the name of
 * @addr, malloc()ed, or NULL; ktau__dw_line(): the source line of @addr
 * (> 0) and its file as the debug information gives it into @file, or 0
 * when the line table has none (no debug information, or a file name
 * longer than @size).
 */
void *ktau__dw_report(pid_t pid, void *old) __attribute__((weak));
char *ktau__dw_name(void *dw, uint64_t addr) __attribute__((weak));
int ktau__dw_line(void *dw, uint64_t addr, char *file, size_t size) __attribute__((weak));
void ktau__dw_end(void *dw) __attribute__((weak));

/*
 * sample.c: whether sym is a place's name with a source line,
 * "function [{file} {line}]" (KTAU_LIB_PROFILE_LINES): the function is
 * sym[0..*fn), the file (*file)[0..*flen).
 */
int ktau__srcline_split(const char *sym, size_t *fn, const char **file, size_t *flen,
			unsigned long *line);

/* 1 when addr is in a mapping of one of the objects. */
int ktau__sym_covers(const struct kt_symbolizer *s, uintptr_t addr);

/* sample.c: the "[SAMPLE] <symbol>" rows of a task, cleaned, unique. */
struct ktau__srow {
	char *name;
	uint64_t count;
};
int ktau__sample_rows(const struct ktau_sample_profile *p, const struct ktau_task *t,
		      struct ktau__srow **rows, size_t *n);
void ktau__srows_free(struct ktau__srow *rows, size_t n);
/* Whether the directory for snap gets a samples metric (ktau_write_tau). */
int ktau__has_samples(const struct ktau_snap *snap, const struct ktau_tau_opts *opts);
/* A metric name as the strictest readers and MULTI__ directories take it. */
void ktau__metric_name(char *dst, size_t size, const char *src);

#endif
