// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/* The library's version (libktau.h: LIBKTAU_VERSION). */
#include "libktau.h"

const char *ktau_version(void)
{
	return LIBKTAU_VERSION;
}
