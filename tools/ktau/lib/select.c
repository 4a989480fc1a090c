// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: include and exclude lists of the runtime (KTAU_SELECT_FILE), in
 * the format of TAU's selective instrumentation files:
 *
 *	# a comment
 *	BEGIN_EXCLUDE_LIST
 *	compute
 *	demo::Grid::#
 *	"#_helper"
 *	END_EXCLUDE_LIST
 *	BEGIN_INCLUDE_LIST
 *	main
 *	END_INCLUDE_LIST
 *
 * A line is a routine name as the profile writes it (demangled, with its
 * parameters for C++) or as the symbol table has it (mangled); '#' matches
 * any string, as in TAU (where '*' is part of C++ signatures). A line that
 * starts with '#' is a comment; quotes around a line let a pattern start
 * with '#'. With an include list, only the routines it names are timed;
 * the exclude list takes routines out in any case. An excluded routine is
 * not a timer: its time is its caller's, as if it were inlined. TAU's file
 * lists (BEGIN_FILE_*) name source files, which the symbol tables do not
 * give: they are refused, as is anything else that is not a list, so that
 * a file written for another tool is never half applied.
 *
 * Cost: the lists are applied once, when the process starts (its first
 * event): every function symbol of every object then loaded (dl_iterate_
 * phdr) is matched, and the addresses of the routines whose answer is not
 * the default are kept sorted. A routine seen for the first time is then
 * looked up in that array (a binary search: no allocation, no lock, safe
 * in a signal handler), and the answer is kept in its timer, so that each
 * event pays one test. Objects loaded later (dlopen) are not in the array:
 * their routines get the default (timed, or not timed with an include
 * list). Named timers (ktau_timer_get()) are matched by name when created.
 * The matcher is a few lines of its own rather than fnmatch(3), which may
 * allocate (multibyte locales) and knows no '#'.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user-internal.h"

#define SEL_LINE_MAX	4096

/*
 * active is set (release) once the lists are whole, and read (acquire)
 * before them: a named timer may be made on another thread while the
 * process is set up (ktau_timer_get() does not wait for it).
 */
static struct {
	int active;
	char **excl, **incl;
	size_t nexcl, nincl;
	uintptr_t *addrs;	/* sorted: the routines whose answer is not the default */
	size_t naddrs, cap;
	int oom;
} sel;

/* TAU's wildcard: '#' matches any string (iterative, no recursion). */
int ktau__select_match(const char *pat, const char *s)
{
	const char *star = NULL, *resume = NULL;

	while (*s) {
		if (*pat == '#') {
			star = ++pat;
			resume = s;
		} else if (*pat == *s) {
			pat++;
			s++;
		} else if (star) {
			pat = star;
			s = ++resume;
		} else {
			return 0;
		}
	}
	while (*pat == '#')
		pat++;
	return !*pat;
}

static int any_match(char *const *pats, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ktau__select_match(pats[i], name))
			return 1;
	return 0;
}

/* 1: a routine of these names is not timed. */
static int names_excluded(const char *raw, const char *shown)
{
	if (any_match(sel.excl, sel.nexcl, raw) || (shown && any_match(sel.excl, sel.nexcl, shown)))
		return 1;
	if (!sel.nincl)
		return 0;
	return !any_match(sel.incl, sel.nincl, raw) && !(shown && any_match(sel.incl, sel.nincl, shown));
}

static int push(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(s);
	if (!nv[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

static void sel_free(void)
{
	size_t i;

	for (i = 0; i < sel.nexcl; i++)
		free(sel.excl[i]);
	for (i = 0; i < sel.nincl; i++)
		free(sel.incl[i]);
	free(sel.excl);
	free(sel.incl);
	free(sel.addrs);
	memset(&sel, 0, sizeof(sel));
}

/*
 * Parses @path into sel's lists. 0, or -errno with the reason in @err
 * ("line N: ...").
 */
int ktau__select_parse(const char *path, char *err, size_t errlen)
{
	enum { OUT, EXCL, INCL } in = OUT;
	char line[SEL_LINE_MAX];
	unsigned int ln = 0;
	FILE *f;
	int ret = 0;

	sel_free();
	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "cannot open it: %s", strerror(-ret));
		return ret;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		char *s = line, *e;

		ln++;
		if (!strchr(line, '\n')) {
			int c = getc(f);	/* the end of the file, or more of the line */

			if (c != EOF) {
				snprintf(err, errlen, "line %u: longer than %d bytes", ln,
					 SEL_LINE_MAX - 2);
				ret = -EINVAL;
				break;
			}
		}
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strlen(s);
		while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (!*s || *s == '#')
			continue;
		if (!strcmp(s, "BEGIN_EXCLUDE_LIST") || !strcmp(s, "BEGIN_INCLUDE_LIST")) {
			if (in != OUT) {
				snprintf(err, errlen, "line %u: %s inside another list", ln, s);
				ret = -EINVAL;
			}
			in = s[6] == 'E' ? EXCL : INCL;
			continue;
		}
		if (!strcmp(s, "END_EXCLUDE_LIST") || !strcmp(s, "END_INCLUDE_LIST")) {
			if (in != (s[4] == 'E' ? EXCL : INCL)) {
				snprintf(err, errlen, "line %u: %s without its BEGIN", ln, s);
				ret = -EINVAL;
			}
			in = OUT;
			continue;
		}
		if (in == OUT) {
			snprintf(err, errlen, "line %u: '%.64s' is not a routine list%s", ln, s,
				 strncmp(s, "BEGIN_FILE_", 11) ? "" :
				 " (source file lists need debug information; name the routines)");
			ret = -EINVAL;
			break;
		}
		if (*s == '"') {
			if (e - s < 2 || e[-1] != '"') {
				snprintf(err, errlen, "line %u: unbalanced quote", ln);
				ret = -EINVAL;
				break;
			}
			*--e = '\0';
			s++;
		}
		if (!*s)
			continue;
		ret = push(in == EXCL ? &sel.excl : &sel.incl, in == EXCL ? &sel.nexcl : &sel.nincl, s);
		if (ret)
			snprintf(err, errlen, "out of memory");
	}
	if (!ret && ferror(f)) {
		ret = -EIO;
		snprintf(err, errlen, "read error");
	}
	if (!ret && in != OUT) {
		snprintf(err, errlen, "the file ends inside a list");
		ret = -EINVAL;
	}
	fclose(f);
	if (ret)
		sel_free();
	else
		__atomic_store_n(&sel.active, 1, __ATOMIC_RELEASE);
	return ret;
}

static void add_sym(void *arg, uintptr_t addr, const char *name)
{
	char *shown;
	int out;

	(void)arg;
	shown = name[0] == '_' && (name[1] == 'Z' || name[1] == 'R') ? ktau__demangle(name) : NULL;
	out = names_excluded(name, shown);
	free(shown);
	/* Listed: the answer that differs from the default. */
	if (out == !sel.nincl) {
		if (sel.naddrs == sel.cap) {
			size_t cap = sel.cap ? 2 * sel.cap : 256;
			uintptr_t *n = realloc(sel.addrs, cap * sizeof(*n));

			if (!n) {
				sel.oom = 1;
				return;
			}
			sel.addrs = n;
			sel.cap = cap;
		}
		sel.addrs[sel.naddrs++] = addr;
	}
}

static int cmp_addr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The lists against the symbols of the objects loaded now. Returns the
 * number of routines listed (excluded, or included with an include list),
 * or -ENOMEM (the lists are then dropped: everything is timed).
 */
long ktau__select_resolve(void)
{
	struct kt_symbolizer *s;

	if (!sel.active)
		return 0;
	s = ktau__sym_open();
	if (s)
		ktau__sym_each(s, add_sym, NULL);
	ktau__sym_close(s);
	if (!s || sel.oom) {
		/* Off; the lists stay: another thread may be reading them. */
		__atomic_store_n(&sel.active, 0, __ATOMIC_RELEASE);
		return -ENOMEM;
	}
	qsort(sel.addrs, sel.naddrs, sizeof(*sel.addrs), cmp_addr);
	return (long)sel.naddrs;
}

static int addr_listed(uintptr_t addr)
{
	size_t lo = 0, hi = sel.naddrs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sel.addrs[mid] == addr)
			return 1;
		if (sel.addrs[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* 1: the function at @addr is not timed. Async-signal-safe. */
int ktau__select_addr(uintptr_t addr)
{
	if (!__atomic_load_n(&sel.active, __ATOMIC_ACQUIRE))
		return 0;
	return sel.nincl ? !addr_listed(addr) : addr_listed(addr);
}

/* 1: the named timer @name is not timed. Async-signal-safe. */
int ktau__select_name(const char *name)
{
	return __atomic_load_n(&sel.active, __ATOMIC_ACQUIRE) && names_excluded(name, NULL);
}

/* 1: the lists have an include list (only what it names is timed). */
int ktau__select_includes(void)
{
	return __atomic_load_n(&sel.active, __ATOMIC_ACQUIRE) && sel.nincl;
}

/* Test hook: drop the lists. */
void ktau__select_reset(void)
{
	sel_free();
}
