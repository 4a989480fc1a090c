/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The log of the host tests' preloads (fake-ktau.so, fake-sample.so): a
 * line "PID MESSAGE" appended to $FAKE_KTAU_LOG, opened and closed at
 * each call so that processes and threads write whole lines; nothing
 * without the variable.
 */
#ifndef KTAU_FAKE_LOG_H
#define KTAU_FAKE_LOG_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((format(printf, 1, 2)))
static void logf_(const char *fmt, ...)
{
	const char *p = getenv("FAKE_KTAU_LOG");
	va_list ap;
	FILE *f;

	if (!p || !(f = fopen(p, "a")))
		return;
	fprintf(f, "%d ", (int)getpid());
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

#endif
