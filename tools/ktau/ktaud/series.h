/* SPDX-License-Identifier: GPL-2.0 */
/* ktaud: a sequence of snapshot files, as 'ktaud watch' writes them. */
#ifndef KTAUD_SERIES_H
#define KTAUD_SERIES_H

#include "libktau.h"

struct series {
	size_t n;
	struct ktau_snap **snaps;	/* in file name order */
	char **names;
	struct ktau_registry *reg;	/* the registries of all files merged */
	const struct ktau_snap *noted;	/* the last file of another boot noted */
};

/* Load files and directories (their *.ktau); errors are reported. */
int series_load(struct series *s, int nargs, char **args);
void series_free(struct series *s);

#endif
