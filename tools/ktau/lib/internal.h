/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/* libktau internals shared by the files of lib/. */
#ifndef LIBKTAU_INTERNAL_H
#define LIBKTAU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/types.h>

#define KTAU_PATH_VERSION	"/proc/ktau/version"
#define KTAU_PATH_PROFILES	"/proc/ktau/profiles"
#define KTAU_PATH_FUNCTIONS	"/proc/ktau/functions"
#define KTAU_PATH_CONTROL	"/proc/ktau/control"
#define KTAU_PATH_COLLECT	"/proc/ktau/collect"
#define KTAU_PATH_PROBES	"/proc/ktau/probes"

struct ktau_task;
struct ktau_snap;
struct ktau_registry;
void ktau__task_release(struct ktau_task *t);
/* Read a whole file (NUL-terminated); -errno. */
int ktau__slurp(const char *path, char **text, size_t *len);
/* registry.c: renumber @snap (taken in another boot, registry @src) to the IDs of *@dstp. */
int ktau__registry_renumber(struct ktau_registry **dstp, const struct ktau_registry *src,
			    struct ktau_snap *snap);
/* TAU metadata: one <attribute> with its name and value XML-escaped. */
void ktau__meta(FILE *f, const char *name, const char *value);
void ktau__meta_u64(FILE *f, const char *name, unsigned long long v);
/*
 * A name as the strictest TAU readers take it: valid UTF-8, no '"' or
 * control character, no leading, trailing or repeated space, no "=>"
 * (the callpath separator); at most size - 1 bytes; "?" when empty.
 */
void ktau__clean_name(char *dst, size_t size, const char *src);
/* write() all of buf, again after EINTR; 0 or -errno (-EIO: nothing written). */
int ktau__write_all(int fd, const void *buf, size_t len);
/* The bytes of a snapshot file of snap and reg, written to fd: 0 or -errno. */
struct ktau_snap;
struct ktau_registry;
int ktau__snap_write_fd(int fd, const struct ktau_snap *snap, const struct ktau_registry *reg);
/* Kernel clock units in ns: units * mult >> shift (page.c). */
uint64_t ktau__conv(uint64_t units, uint32_t mult, uint32_t shift);
/* asprintf()'s string; NULL when out of memory. */
char *ktau__strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * A calling thread's last message, in *@why: @size bytes made at its
 * first one and kept for the thread's life. Not an array in thread-local
 * storage: the Python extension, loaded with dlopen(), has its
 * thread-local storage in the static block (initial-exec), whose few
 * spare bytes other libraries loaded later need too. Returns @err.
 */
int ktau__why_set(char **why, size_t size, int err, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
/*
 * The process's umask, read without changing it (umask() would, for an
 * instant, in every thread): for files made by mkstemp() (mode 0600) that
 * get the mode open() would have given them.
 */
mode_t ktau__umask(void);
/*
 * A file of ktau_outdir_create() whose writing failed: removed, so that no
 * partial file is left looking complete (its name stays listed: nothing
 * there the next time).
 */
struct ktau_outdir;
void ktau__outdir_discard(struct ktau_outdir *od, const char *name);
/* The write failed: at close, every file od made is removed (none looks complete). */
void ktau__outdir_failed(struct ktau_outdir *od);
/*
 * A written stream's state: 0, or its write's own error (ENOSPC, EFBIG,
 * after fflush()), -EIO when the stream does not say which (errno then
 * as it was).
 */
int ktau__stream_err(FILE *f);
/*
 * SIGXFSZ held back in the calling thread while it writes (a file size
 * limit then fails the write with EFBIG), until the matching release
 * (they nest; pass what the hold returned), in the same thread; see
 * outdir.c. Not for signal handlers: a hold interrupted by another is
 * not counted right.
 */
unsigned long ktau__xfsz_hold(void);
void ktau__xfsz_release(unsigned long hold);

#endif
