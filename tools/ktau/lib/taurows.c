// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: a TAU profile file of rows the caller gives (an interpreter's
 * own functions, say), in the strict form of the other writers (tau.c).
 * The rows are checked, not repaired: a file that the strictest readers
 * would refuse is not written.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "libktau.h"
#include "internal.h"

#define ROW_NAME_MAX 512

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char * const *)a, *(char * const *)b);
}

static int valid_metric(const char *m)
{
	size_t i;

	for (i = 0; m[i]; i++)
		if (!((m[i] >= 'a' && m[i] <= 'z') || (m[i] >= 'A' && m[i] <= 'Z') ||
		      (m[i] >= '0' && m[i] <= '9') || strchr("_-.+", m[i])))
			return 0;
	return i && i <= 37;
}

static int valid_group(const char *g)
{
	size_t i;

	for (i = 0; g[i]; i++)
		if ((unsigned char)g[i] <= 0x20 || g[i] == '"' || g[i] == 0x7f)
			return 0;
	return i && g[0] != '|' && g[i - 1] != '|' && !strstr(g, "||");
}

static int valid_values(const struct ktau_tau_row *r)
{
	if (!isfinite(r->excl) || !isfinite(r->incl) || r->excl < 0 || r->excl > r->incl)
		return 0;
	return r->calls || (!r->subrs && !r->excl && !r->incl);
}

/* A group of the row is TAU_CALLPATH. */
static int is_callpath(const char *group)
{
	size_t l = strlen("TAU_CALLPATH");
	const char *p;

	for (p = group; (p = strstr(p, "TAU_CALLPATH")); p += l)
		if ((p == group || p[-1] == '|') && (!p[l] || p[l] == '|'))
			return 1;
	return 0;
}

/*
 * The written name of a row: cleaned as a whole, or, for a callpath
 * (group TAU_CALLPATH), element by element between the " => " that
 * separate them (a "=>" inside an element is still cleaned away).
 */
static void clean_row_name(char *buf, size_t size, const struct ktau_tau_row *r)
{
	static const char sep[] = " => ";
	const char *s = r->name, *e;
	char el[ROW_NAME_MAX], *tmp;
	size_t o = 0;

	if (!is_callpath(r->group)) {
		ktau__clean_name(buf, size, s);
		return;
	}
	buf[0] = '\0';
	for (;;) {
		e = strstr(s, sep);
		tmp = strndup(s, e ? (size_t)(e - s) : strlen(s));
		if (!tmp)
			break;
		ktau__clean_name(el, sizeof(el), tmp);
		free(tmp);
		o += snprintf(buf + o, o < size ? size - o : 0, "%s%s", o ? sep : "", el);
		if (!e || o >= size)
			break;
		s = e + strlen(sep);
	}
	if (o >= size)
		buf[size - 1] = '\0';
}

int ktau_write_tau_rows(FILE *f, const char *metric, const struct ktau_tau_row *rows,
			size_t n, const char *const *meta, size_t nmeta)
{
	char **names, **sorted = NULL, buf[ROW_NAME_MAX];
	size_t i;
	int ret = 0;

	if (!metric || !valid_metric(metric))
		return -EINVAL;
	names = calloc(n ? n : 1, sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (i = 0; i < n && !ret; i++) {
		if (!rows[i].name || !rows[i].group || !valid_group(rows[i].group) ||
		    !valid_values(&rows[i])) {
			ret = -EINVAL;
			break;
		}
		clean_row_name(buf, sizeof(buf), &rows[i]);
		names[i] = strdup(buf);
		if (!names[i])
			ret = -ENOMEM;
	}
	if (!ret && n) {
		sorted = malloc(n * sizeof(*sorted));
		if (!sorted)
			ret = -ENOMEM;
	}
	if (!ret && n) {
		memcpy(sorted, names, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), cmp_str);
		for (i = 1; i < n; i++)
			if (!strcmp(sorted[i], sorted[i - 1]))
				ret = -EINVAL;
	}
	if (!ret) {
		fprintf(f, "%zu templated_functions_MULTI_%s\n", n, metric);
		fputs("# Name Calls Subrs Excl Incl ProfileCalls # <metadata>", f);
		ktau__meta(f, "Metric Name", metric);
		for (i = 0; meta && i < nmeta; i++)
			ktau__meta(f, meta[2 * i], meta[2 * i + 1]);
		fputs("</metadata>\n", f);
		for (i = 0; i < n; i++)
			fprintf(f, "\"%s\" %llu %llu %.16G %.16G 0 GROUP=\"%s\"\n", names[i],
				(unsigned long long)rows[i].calls, (unsigned long long)rows[i].subrs,
				rows[i].excl, rows[i].incl, rows[i].group);
		fputs("0 aggregates\n", f);
		ret = ktau__stream_err(f);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(sorted);
	return ret;
}
