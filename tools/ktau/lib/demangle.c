// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Names people can read: C++ (Itanium ABI, _Z...) and Rust (legacy _ZN...h<hash>E
 * and v0 _R...) symbols demangled with libiberty's cplus_demangle() (Debian's
 * libiberty-dev, the demangler of binutils' c++filt), with parameters and
 * clone suffixes, as c++filt and rustfilt print them:
 * "std::vector<double, std::allocator<double> >::size() const",
 * "foo(int) [clone .isra.0]". Anything else, and what it cannot demangle,
 * stays as it is. A name is at most KT_NAME_MAX bytes.
 */
#include <stdlib.h>
#include <string.h>
#include <libiberty/demangle.h>

#include "user-internal.h"

char *ktau__demangle(const char *name)
{
	char *d = NULL;

	/* Rust first (its legacy names are valid C++ ones, with a hash that
	 * the verbose C++ style would keep); then C++ with clone suffixes. */
	if (name[0] == '_' && (name[1] == 'Z' || name[1] == 'R'))
		d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_RUST);
	if (!d && name[0] == '_' && name[1] == 'Z')
		d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE | DMGL_GNU_V3);
	if (!d)
		return strndup(name, KT_NAME_MAX);
	if (strlen(d) > KT_NAME_MAX)
		d[KT_NAME_MAX] = '\0';
	return d;
}
