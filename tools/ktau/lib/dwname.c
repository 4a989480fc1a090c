// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: names of a live process's code through elfutils' libdwfl
 * (Debian's libdw-dev), for the samples of symbolize.c.
 *
 * libdwfl reports the process's modules from /proc/PID/maps, checks each
 * file's build-id against the one the process mapped, finds separate debug
 * information by build-id or debuglink (the -dbgsym packages under
 * /usr/lib/debug; KTAU_DEBUGINFO_PATH, in elfutils' syntax, replaces the
 * default path), which names the static functions of stripped programs,
 * and gives the scopes of an address, so that code inlined into a function
 * is named after the innermost inlined function ("inner [inlined into
 * outer]"), and the source line of an address from the line table
 * (code inlined from elsewhere has the line of the inlined function's
 * source). What it cannot name (a deleted file, an object without
 * symbols) symbolize.c names with elfsym.c, which knows no lines.
 *
 * Linked where a dependency on libdw is fine: libktau.so and ktaud. Static
 * builds (the guest's busybox image) and libktau-runtime.so keep elfsym.c
 * alone: symbolize.c's references to this file are weak.
 */
#ifdef KTAU_HAVE_DWFL
#include <dwarf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elfutils/libdwfl.h>

#include "internal.h"
#include "sample-internal.h"
#include "user-internal.h"

static char *dw_debuginfo_path;

static const Dwfl_Callbacks dw_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &dw_debuginfo_path,
};

static void dw_init_path(void)
{
	const char *v = getenv("KTAU_DEBUGINFO_PATH");

	if (v && *v)
		dw_debuginfo_path = strdup(v);
}

void *ktau__dw_report(pid_t pid, void *old)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	Dwfl *dwfl = old;

	pthread_once(&once, dw_init_path);
	if (!dwfl)
		dwfl = dwfl_begin(&dw_callbacks);
	if (!dwfl)
		return NULL;
	dwfl_report_begin(dwfl);
	if (dwfl_linux_proc_report(dwfl, pid) || dwfl_report_end(dwfl, NULL, NULL)) {
		dwfl_end(dwfl);
		return NULL;
	}
	return dwfl;
}

void ktau__dw_end(void *dw)
{
	dwfl_end(dw);
}

/* The innermost inlined function at @addr, or NULL. */
static const char *dw_inlined(Dwfl_Module *mod, Dwarf_Addr addr)
{
	Dwarf_Die *cu, *scopes = NULL, origin;
	Dwarf_Attribute attr;
	const char *name = NULL;
	Dwarf_Addr bias;
	int i, n;

	cu = dwfl_module_addrdie(mod, addr, &bias);
	if (!cu)
		return NULL;
	n = dwarf_getscopes(cu, addr - bias, &scopes);
	for (i = 0; i < n && !name; i++) {
		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		if (dwarf_attr(&scopes[i], DW_AT_abstract_origin, &attr) &&
		    dwarf_formref_die(&attr, &origin))
			name = dwarf_diename(&origin);
	}
	free(scopes);
	return name;
}

char *ktau__dw_name(void *dw, uint64_t addr)
{
	Dwfl_Module *mod = dwfl_addrmodule(dw, addr);
	char *outer, *inner, *out = NULL;
	const char *sym, *inl;
	GElf_Off off;
	GElf_Sym es;

	sym = mod ? dwfl_module_addrinfo(mod, addr, &off, &es, NULL, NULL, NULL) : NULL;
	if (!sym || !*sym)
		return NULL;
	outer = ktau__demangle(sym);
	inl = outer ? dw_inlined(mod, addr) : NULL;
	if (!inl)
		return outer;
	inner = ktau__demangle(inl);
	if (inner && strcmp(inner, outer) &&
	    asprintf(&out, "%s [inlined into %s]", inner, outer) < 0)
		out = NULL;
	free(inner);
	if (!out)
		return outer;
	free(outer);
	return out;
}

/*
 * The file of a line is the name the compiler was given; a relative one
 * (make's "lib/x.c") is joined to the directory the compiler ran in, as
 * binutils' BFD names it for TAU's own samples: one full path, whatever
 * the directory of the build.
 */
int ktau__dw_line(void *dw, uint64_t addr, char *file, size_t size)
{
	Dwfl_Module *mod = dwfl_addrmodule(dw, addr);
	Dwfl_Line *l = mod ? dwfl_module_getsrc(mod, addr) : NULL;
	const char *src, *dir;
	int line = 0, n;

	src = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
	/* Line 0: code the compiler attributes to no line. */
	if (!src || !*src || line <= 0)
		return 0;
	dir = src[0] != '/' ? dwfl_line_comp_dir(l) : NULL;
	if (dir && *dir)
		n = snprintf(file, size, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", src);
	else
		n = snprintf(file, size, "%s", src);
	return n >= 0 && (size_t)n < size ? line : 0;
}
#endif
