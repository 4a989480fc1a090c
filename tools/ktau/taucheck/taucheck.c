// SPDX-License-Identifier: GPL-2.0
/*
 * taucheck.c - strict checker for TAU plain-text profile directories.
 *
 * The rules are those of /work/shared/tau-profile-format.md, the strictest
 * form that ParaProf, pprof, TAU's Python parser and Hatchet all read.
 * README.md lists every rule with its rule id (the "[id]" in messages) and
 * traces it to the document; the few rules marked "extra" there come from
 * the readers' sources rather than from the document.
 *
 * XML: the metadata block on line 2 is parsed with libxml2 (Debian package
 * libxml2-dev; compile with `pkg-config --cflags --libs libxml-2.0`, that
 * is -I/usr/include/libxml2 ... -lxml2). ParaProf (Xerces) and TAU's Python
 * parser (expat) run full, conforming XML parsers on that block, so a
 * conforming parser is the right judge of well-formedness: a hand-written
 * subset parser could disagree with them at the edges (XML character
 * ranges, UTF-8, character references, "]]>" in text). It is one shared
 * library from the distribution, linked with one flag, and this is a host
 * tool, never linked statically into the guest. The small subset profiles
 * may use (elements without XML attributes, text, the five predefined
 * entities, character references such as TAU's own &#xa;, CDATA; no DTD,
 * comments or processing instructions) is then enforced on the tree, and
 * the escaping of & < > " ' is checked on the raw text.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "taucheck.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

/* Rule ids, as printed in "[...]" and listed in README.md. */
#define R_FILE_NAME	"file-name"
#define R_LAYOUT	"layout"
#define R_MULTI_DIR	"multi-dirname"
#define R_DENSE		"dense"
#define R_METRIC_SAME	"metric-consistency"
#define R_MULTI_THR	"multi-threads"
#define R_MULTI_FUNC	"multi-functions"
#define R_ENCODING	"encoding"
#define R_CR		"cr"
#define R_LINE_LEN	"line-length"
#define R_LINE1		"line1"
#define R_METRIC	"metric-name"
#define R_COUNT		"function-count"
#define R_LINE2		"line2"
#define R_MD_XML	"metadata-xml"
#define R_MD_ESC	"metadata-escape"
#define R_MD_STRUCT	"metadata-structure"
#define R_MD_METRIC	"metadata-metric"
#define R_MD_ATTR	"metadata-attribute"
#define R_FLINE		"function-line"
#define R_FNAME		"function-name"
#define R_CALLS		"calls-subrs"
#define R_TIMES		"excl-incl"
#define R_PCALLS	"profilecalls"
#define R_GROUP		"group"
#define R_ZERO		"zero-calls"
#define R_DUP		"duplicate"
#define R_AGG		"aggregates"
#define R_UE		"userevents"
#define R_UE_VAL	"userevent-values"
#define R_CP_NAME	"callpath-name"
#define R_CP_GROUP	"callpath-group"
#define R_CP_FLAT	"callpath-flat"
#define R_CP_VAL	"callpath-values"
#define R_KTAU_GROUP	"ktau-group"
#define R_KTAU_MERGE	"ktau-merge"
#define R_KTAU_EXCL	"ktau-excl"
#define R_TRAILING	"trailing"

/* pprof reads every line with fgets() into a 64 KiB buffer (SIZE_OF_LINE). */
#define MAX_LINE	65534
/* pprof reads "templated_functions_MULTI_<METRIC>" with %s into char[64]. */
#define L1_WORD		"templated_functions_MULTI_"
#define MAX_METRIC	(63 - (sizeof(L1_WORD) - 1))
/* Relative tolerance for comparisons between doubles (excl <= incl, ...). */
#define REL_TOL		1e-9

static const char L1_MID[] = " " L1_WORD;
static const char L2_HEAD[] = "# Name Calls Subrs Excl Incl ProfileCalls #";
static const char UE_HEAD[] = "# eventname numevents max min mean sumsqr";
/* Replaced by '_' in a MULTI__<metric> directory name (TAU's Profiler.cpp). */
static const char SANITIZED[] = "/\\?%*:|\"<>= ";

struct tc {
	FILE *out;
	int nviol;
	bool io_err;
};

__attribute__((format(printf, 5, 6)))
static void viol(struct tc *tc, const char *file, long line, const char *rule,
		 const char *fmt, ...)
{
	va_list ap;

	if (line > 0)
		fprintf(tc->out, "%s:%ld: [%s] ", file, line, rule);
	else
		fprintf(tc->out, "%s: [%s] ", file, rule);
	va_start(ap, fmt);
	vfprintf(tc->out, fmt, ap);
	va_end(ap);
	fputc('\n', tc->out);
	tc->nviol++;
}

__attribute__((format(printf, 3, 4)))
static void ioerr(struct tc *tc, const char *path, const char *fmt, ...)
{
	va_list ap;

	fprintf(tc->out, "%s: error: ", path);
	va_start(ap, fmt);
	vfprintf(tc->out, fmt, ap);
	va_end(ap);
	fputc('\n', tc->out);
	tc->io_err = true;
}

/* ---------------------------------------------------------------------- */
/* Small helpers                                                          */
/* ---------------------------------------------------------------------- */

/* A quoted, escaped and shortened copy of s[0..n) for messages. */
struct qb {
	char s[160];
};

static const char *qs(struct qb *b, const char *s, size_t n)
{
	const size_t room = sizeof(b->s) - 8;	/* for an escape, "...", NUL */
	size_t o = 0, i = 0;

	b->s[o++] = '"';
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t l = c < 0x80 ? 1 : c >= 0xf5 ? 0 : c >= 0xf0 ? 4 :
			   c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
		size_t k;

		if (o + 4 >= room)
			break;
		for (k = 1; k < l; k++)
			if (i + k >= n || ((unsigned char)s[i + k] & 0xc0) != 0x80)
				l = 0;
		if (c == '"' || c == '\\') {
			b->s[o++] = '\\';
			b->s[o++] = (char)c;
			i++;
		} else if (c < 0x20 || c == 0x7f || l == 0) {
			snprintf(b->s + o, sizeof(b->s) - o, "\\x%02x", c);
			o += 4;
			i++;
		} else {
			memcpy(b->s + o, s + i, l);
			o += l;
			i += l;
		}
	}
	b->s[o++] = '"';
	if (i < n) {
		memcpy(b->s + o, "...", 3);
		o += 3;
	}
	b->s[o] = '\0';
	return b->s;
}

static const char *q(struct qb *b, const char *s)
{
	return qs(b, s, strlen(s));
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

enum num { N_OK, N_SYNTAX, N_LEADZERO, N_RANGE, N_NEG, N_NONFINITE };

/* A non-negative decimal integer: digits only, no sign, no leading zero. */
static enum num parse_uint(const char *s, size_t n, unsigned long long max,
			   unsigned long long *v)
{
	unsigned long long x = 0;
	size_t i;

	if (n == 0)
		return N_SYNTAX;
	if (s[0] == '-') {
		for (i = 1; i < n && is_digit(s[i]); i++)
			;
		return n > 1 && i == n ? N_NEG : N_SYNTAX;
	}
	for (i = 0; i < n; i++)
		if (!is_digit(s[i]))
			return N_SYNTAX;
	if (n > 1 && s[0] == '0')
		return N_LEADZERO;
	for (i = 0; i < n; i++) {
		unsigned int d = (unsigned int)(s[i] - '0');

		if (x > (max - d) / 10)
			return N_RANGE;
		x = x * 10 + d;
	}
	*v = x;
	return N_OK;
}

static locale_t c_locale;

/*
 * A finite decimal number as printf's %G writes it: [-]digits[.digits]
 * [(e|E)[+|-]digits]. No hex, inf, nan, leading '+' or bare '.'.
 */
static enum num parse_real(const char *s, size_t n, bool allow_neg, double *v)
{
	char buf[128];
	size_t i = 0, d;
	bool neg = false;
	double x;

	if (i < n && s[i] == '-') {
		neg = true;
		i++;
	}
	for (d = i; i < n && is_digit(s[i]); i++)
		;
	if (i == d)
		return N_SYNTAX;
	if (i < n && s[i] == '.') {
		for (d = ++i; i < n && is_digit(s[i]); i++)
			;
		if (i == d)
			return N_SYNTAX;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		for (d = i; i < n && is_digit(s[i]); i++)
			;
		if (i == d)
			return N_SYNTAX;
	}
	if (i != n || n >= sizeof(buf))
		return N_SYNTAX;
	if (neg && !allow_neg)
		return N_NEG;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (!c_locale)
		c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	x = c_locale ? strtod_l(buf, NULL, c_locale) : strtod(buf, NULL);
	if (!isfinite(x))
		return N_NONFINITE;
	*v = x;
	return N_OK;
}

/* a <= b, allowing a relative rounding error of REL_TOL */
static bool leq(double a, double b)
{
	return a <= b || a - b <= REL_TOL * fmax(fabs(a), fabs(b));
}

/* Offset of the first byte that is not valid UTF-8, or n. */
static size_t utf8_bad(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned int c = s[i], cp, min;
		size_t l, k;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			l = 2, cp = c & 0x1f, min = 0x80;
		} else if (c >= 0xe0 && c <= 0xef) {
			l = 3, cp = c & 0x0f, min = 0x800;
		} else if (c >= 0xf0 && c <= 0xf4) {
			l = 4, cp = c & 0x07, min = 0x10000;
		} else {
			return i;
		}
		if (n - i < l)
			return i;
		for (k = 1; k < l; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return i;
		i += l;
	}
	return n;
}

static size_t count_sub(const char *s, const char *sub)
{
	size_t n = 0, l = strlen(sub);

	while ((s = strstr(s, sub))) {
		n++;
		s += l;
	}
	return n;
}

/* Does the '|'-separated group list g contain the group comp? */
static bool group_has(const char *g, const char *comp)
{
	size_t l = strlen(comp);

	while (g) {
		const char *e = strchr(g, '|');
		size_t gl = e ? (size_t)(e - g) : strlen(g);

		if (gl == l && !memcmp(g, comp, l))
			return true;
		g = e ? e + 1 : NULL;
	}
	return false;
}

/* Does some group in g start with prefix? */
static bool group_has_prefix(const char *g, const char *prefix)
{
	size_t l = strlen(prefix);

	while (g) {
		const char *e = strchr(g, '|');

		if (!strncmp(g, prefix, l))
			return true;
		g = e ? e + 1 : NULL;
	}
	return false;
}

static char *xstrndup(struct tc *tc, const char *s, size_t n)
{
	char *r = strndup(s, n);

	if (!r)
		ioerr(tc, "taucheck", "out of memory");
	return r;
}

static char *path_join(struct tc *tc, const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0) {
		ioerr(tc, dir, "out of memory");
		return NULL;
	}
	return p;
}

/* ---------------------------------------------------------------------- */
/* Function table with a name index                                       */
/* ---------------------------------------------------------------------- */

enum kind { K_USER, K_KGROUP, K_KROUTINE, K_BAD };

struct func {
	char *name;		/* NULL when the line could not be parsed */
	char *group;		/* NULL when GROUP="..." could not be parsed */
	long line;
	unsigned long long calls, subrs;
	double excl, incl;
	bool nums_ok;		/* calls, subrs, excl and incl are valid */
	bool callpath;		/* the name contains "=>" */
	enum kind kind;		/* from the group, for flat entries */
	double kgroup_excl;	/* excl of "... => this => <kernel group>" */
	double kroutine_excl;	/* excl of "... => this => <kernel routine>" */
};

struct htab {
	size_t cap;		/* a power of two */
	size_t *slot;		/* index + 1; 0 is empty */
};

static uint64_t hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	while (n--) {
		h ^= (unsigned char)*s++;
		h *= 1099511628211ULL;
	}
	return h;
}

static bool ht_init(struct htab *h, size_t n)
{
	h->cap = 16;
	while (h->cap < 2 * n + 1)
		h->cap *= 2;
	h->slot = calloc(h->cap, sizeof(*h->slot));
	return h->slot != NULL;
}

/* The index + 1 of the entry named s[0..n), or 0. */
static size_t ht_get(const struct htab *h, const struct func *f,
		     const char *s, size_t n)
{
	size_t i = hash(s, n) & (h->cap - 1);

	while (h->slot[i]) {
		const char *name = f[h->slot[i] - 1].name;

		if (strlen(name) == n && !memcmp(name, s, n))
			return h->slot[i];
		i = (i + 1) & (h->cap - 1);
	}
	return 0;
}

static void ht_put(struct htab *h, const struct func *f, size_t idx)
{
	size_t i = hash(f[idx].name, strlen(f[idx].name)) & (h->cap - 1);

	while (h->slot[i])
		i = (i + 1) & (h->cap - 1);
	h->slot[i] = idx + 1;
}

static void funcs_free(struct func *f, size_t n)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < n; i++) {
		free(f[i].name);
		free(f[i].group);
	}
	free(f);
}

/* ---------------------------------------------------------------------- */
/* Names, groups and the KTAU convention                                  */
/* ---------------------------------------------------------------------- */

/* Function and user event names: quoted, so only '"' and newline are
 * impossible; the rest keeps ParaProf from altering or mislinking them. */
static bool check_name(struct tc *tc, const char *path, long lno,
		       const char *rule, const char *what, const char *s)
{
	struct qb b;
	size_t n = strlen(s), i;

	if (n == 0) {
		viol(tc, path, lno, rule, "%s is empty", what);
		return false;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f) {
			viol(tc, path, lno, rule,
			     "%s %s contains the control character \\x%02x",
			     what, q(&b, s), c);
			return false;
		}
	}
	if (s[0] == ' ' || s[n - 1] == ' ') {
		viol(tc, path, lno, rule,
		     "%s %s has a leading or trailing space (ParaProf trims callpath elements, so it would not link)",
		     what, q(&b, s));
		return false;
	}
	if (strstr(s, "  ")) {
		viol(tc, path, lno, rule,
		     "%s %s contains a run of spaces (ParaProf collapses runs of spaces, which can merge distinct names)",
		     what, q(&b, s));
		return false;
	}
	return true;
}

/* GROUP="<g1>|<g2>": non-empty names, no spaces around them, no repeats. */
static bool check_group(struct tc *tc, const char *path, long lno,
			const char *g)
{
	struct qb b, b2;
	const char *p = g;

	if (!*g) {
		viol(tc, path, lno, R_GROUP,
		     "GROUP=\"\" is empty: every function line names its groups, GROUP=\"<g1>|<g2>\"");
		return false;
	}
	while (p) {
		const char *e = strchr(p, '|');
		size_t l = e ? (size_t)(e - p) : strlen(p), i;
		const char *r;

		if (l == 0) {
			viol(tc, path, lno, R_GROUP,
			     "empty group name in GROUP=%s (a leading, trailing or doubled '|')",
			     q(&b, g));
			return false;
		}
		if (p[0] == ' ' || p[0] == '\t' || p[l - 1] == ' ' ||
		    p[l - 1] == '\t') {
			viol(tc, path, lno, R_GROUP,
			     "group %s in GROUP=%s has spaces around it: write \"<g1>|<g2>\"",
			     qs(&b, p, l), q(&b2, g));
			return false;
		}
		for (i = 0; i < l; i++) {
			if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f) {
				viol(tc, path, lno, R_GROUP,
				     "control character in GROUP=%s", q(&b, g));
				return false;
			}
		}
		for (r = g; r && r < p;) {
			const char *re = strchr(r, '|');

			if (re && (size_t)(re - r) == l && !memcmp(r, p, l)) {
				viol(tc, path, lno, R_GROUP,
				     "group %s is listed twice in GROUP=%s",
				     qs(&b, p, l), q(&b2, g));
				return false;
			}
			r = re ? re + 1 : NULL;
		}
		p = e ? e + 1 : NULL;
	}
	return true;
}

/*
 * KTAU convention: kernel group totals are in "KERNEL_GROUPS|TAU_KERNEL_MERGE",
 * kernel routines in "TAU_KERNEL_MERGE|KTAU_<CLASS>". Any group list that
 * mentions KERNEL_GROUPS, TAU_KERNEL_MERGE or KTAU_* must be one of those.
 */
static enum kind ktau_kind(const char *g)
{
	static const char kg[] = "KERNEL_GROUPS|TAU_KERNEL_MERGE";
	static const char kr[] = "TAU_KERNEL_MERGE|KTAU_";
	const char *c;

	if (group_has(g, "KERNEL_GROUPS"))
		return strcmp(g, kg) ? K_BAD : K_KGROUP;
	if (!group_has(g, "TAU_KERNEL_MERGE") && !group_has_prefix(g, "KTAU_"))
		return K_USER;
	if (strncmp(g, kr, sizeof(kr) - 1))
		return K_BAD;
	c = g + sizeof(kr) - 1;
	if (!(*c >= 'A' && *c <= 'Z'))
		return K_BAD;
	for (; *c; c++)
		if (!((*c >= 'A' && *c <= 'Z') || is_digit(*c) || *c == '_'))
			return K_BAD;
	return K_KROUTINE;
}

static void ktau_bad(struct tc *tc, const char *path, long lno, const char *g)
{
	struct qb b;

	viol(tc, path, lno, R_KTAU_GROUP,
	     "GROUP=%s breaks the KTAU convention: kernel group totals use \"KERNEL_GROUPS|TAU_KERNEL_MERGE\", kernel routines \"TAU_KERNEL_MERGE|KTAU_<CLASS>\" (CLASS in A-Z, 0-9, _)",
	     q(&b, g));
}

/* ---------------------------------------------------------------------- */
/* Line 1, line 2 and the metadata                                        */
/* ---------------------------------------------------------------------- */

static bool check_metric_name(struct tc *tc, const char *path, const char *m)
{
	struct qb b;
	size_t n = strlen(m), i;

	if (n == 0) {
		viol(tc, path, 1, R_METRIC,
		     "the metric name after templated_functions_MULTI_ is empty");
		return false;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)m[i];

		if (c <= 0x20 || c == 0x7f) {
			viol(tc, path, 1, R_METRIC,
			     "metric name %s contains a space or control character (readers split line 1 at white space)",
			     q(&b, m));
			return false;
		}
		if (strchr("&<>\"'", c)) {
			viol(tc, path, 1, R_METRIC,
			     "metric name %s contains '%c': it must be written verbatim in the Metric Name <value> (Hatchet reads it without XML decoding), where & < > \" ' would need escaping",
			     q(&b, m), c);
			return false;
		}
	}
	if (n > MAX_METRIC) {
		viol(tc, path, 1, R_METRIC,
		     "metric name %s is %zu bytes, at most %zu fit: pprof reads \"" L1_WORD "<METRIC>\" with %%s into a 64-byte buffer",
		     q(&b, m), n, (size_t)MAX_METRIC);
		return false;
	}
	return true;
}

/* Returns N (or -1 when unknown); *metric points into s or is NULL. */
static long check_line1(struct tc *tc, const char *path, const char *s,
			const char **metric)
{
	struct qb b;
	unsigned long long n = 0;
	const char *p = s;
	long ret = -1;

	*metric = NULL;
	while (is_digit(*p))
		p++;
	if (p == s) {
		viol(tc, path, 1, R_LINE1,
		     "line 1 must be \"<N> " L1_WORD "<METRIC>\", got %s",
		     q(&b, s));
		return -1;
	}
	switch (parse_uint(s, (size_t)(p - s), INT_MAX, &n)) {
	case N_OK:
		ret = (long)n;
		break;
	case N_LEADZERO:
		viol(tc, path, 1, R_LINE1,
		     "N on line 1 must be written without leading zeros, got %s",
		     qs(&b, s, (size_t)(p - s)));
		break;
	default:
		viol(tc, path, 1, R_LINE1,
		     "N on line 1 is larger than INT_MAX (readers parse it as an int)");
		break;
	}
	if (strncmp(p, L1_MID, sizeof(L1_MID) - 1)) {
		if (!strncmp(p, " templated_functions", 20))
			viol(tc, path, 1, R_LINE1,
			     "line 1 must be \"<N> " L1_WORD "<METRIC>\": always _MULTI_<METRIC>, even for one metric; got %s",
			     q(&b, s));
		else
			viol(tc, path, 1, R_LINE1,
			     "line 1 must be \"<N> " L1_WORD "<METRIC>\" (one space after N), got %s",
			     q(&b, s));
		return ret;
	}
	p += sizeof(L1_MID) - 1;
	check_metric_name(tc, path, p);
	if (*p)
		*metric = p;
	return ret;
}

static const char *node_kind(xmlNodePtr n)
{
	switch (n->type) {
	case XML_ELEMENT_NODE:
		return "an element";
	case XML_TEXT_NODE:
		return xmlIsBlankNode(n) ? "white space" : "text";
	case XML_CDATA_SECTION_NODE:
		return "a CDATA section";
	case XML_COMMENT_NODE:
		return "a comment";
	case XML_PI_NODE:
		return "a processing instruction";
	case XML_ENTITY_REF_NODE:
		return "an entity reference";
	default:
		return "an unexpected XML node";
	}
}

/* The text of an element holding only text and CDATA, else NULL. */
static char *text_of(xmlNodePtr el, xmlNodePtr *bad)
{
	size_t len = 0, o = 0;
	xmlNodePtr c;
	char *r;

	*bad = NULL;
	for (c = el->children; c; c = c->next) {
		if (c->type != XML_TEXT_NODE &&
		    c->type != XML_CDATA_SECTION_NODE) {
			*bad = c;
			return NULL;
		}
		if (c->content)
			len += strlen((const char *)c->content);
	}
	r = malloc(len + 1);
	if (!r)
		return NULL;
	for (c = el->children; c; c = c->next) {
		size_t l = c->content ? strlen((const char *)c->content) : 0;

		memcpy(r + o, c->content, l);
		o += l;
	}
	r[o] = '\0';
	return r;
}

static bool has_space_edge(const char *s)
{
	size_t n = strlen(s);

	return n && (strchr(" \t\n\r", s[0]) || strchr(" \t\n\r", s[n - 1]));
}

struct mdattr {
	char *name, *value;
};

/*
 * First problem in the raw text of the metadata block: a '>', '"' or '\''
 * outside tags and CDATA must be written &gt; &quot; &apos; (the document
 * asks for & < > " ' to be escaped; a raw '&' or '<' is an XML error).
 */
static void check_md_escapes(struct tc *tc, const char *path, const char *md,
			     size_t off)
{
	size_t i = 0;

	while (md[i]) {
		const char *e;

		if (!strncmp(md + i, "<![CDATA[", 9)) {
			e = strstr(md + i + 9, "]]>");
			if (!e)
				return;
			i = (size_t)(e - md) + 3;
		} else if (md[i] == '<') {
			e = strchr(md + i, '>');
			if (!e)
				return;
			i = (size_t)(e - md) + 1;
		} else if (md[i] == '>' || md[i] == '"' || md[i] == '\'') {
			viol(tc, path, 2, R_MD_ESC,
			     "unescaped '%c' in metadata text at column %zu: write %s (or use CDATA)",
			     md[i], off + i + 1,
			     md[i] == '>' ? "&gt;" : md[i] == '"' ? "&quot;" : "&apos;");
			return;
		} else {
			i++;
		}
	}
}

static void check_md_attrs(struct tc *tc, const char *path, const char *line,
			   struct mdattr *a, size_t na, const char *metric)
{
	struct qb b, b2;
	size_t i, j;

	if (na == 0) {
		viol(tc, path, 2, R_MD_METRIC,
		     "the metadata block has no attribute: the first must be Metric Name");
	} else if (strcmp(a[0].name, "Metric Name")) {
		viol(tc, path, 2, R_MD_METRIC,
		     "the first metadata attribute must be \"Metric Name\", found %s",
		     q(&b, a[0].name));
	} else if (metric && strcmp(a[0].value, metric)) {
		viol(tc, path, 2, R_MD_METRIC,
		     "Metric Name in the metadata is %s but line 1 names the metric %s",
		     q(&b, a[0].value), q(&b2, metric));
	} else if (metric) {
		/* Hatchet: re.search(r"<value>(.*?)<\/value>", line 2) */
		const char *v = strstr(line, "<value>");
		const char *ve = v ? strstr(v + 7, "</value>") : NULL;

		if (!ve || (size_t)(ve - v - 7) != strlen(metric) ||
		    memcmp(v + 7, metric, strlen(metric)))
			viol(tc, path, 2, R_MD_METRIC,
			     "write the Metric Name value verbatim as <value>%s</value>, without escapes or CDATA (Hatchet takes the first <value> with a regular expression, without XML decoding)",
			     metric);
	}
	for (i = 0; i < na; i++) {
		if (!a[i].name[0]) {
			viol(tc, path, 2, R_MD_ATTR,
			     "metadata attribute %zu has an empty <name>", i + 1);
			return;
		}
		if (has_space_edge(a[i].name) || has_space_edge(a[i].value)) {
			viol(tc, path, 2, R_MD_ATTR,
			     "metadata attribute %s: name and value must not begin or end with white space (ParaProf trims them)",
			     q(&b, a[i].name));
			return;
		}
		for (j = 0; j < i; j++) {
			if (!strcmp(a[i].name, a[j].name)) {
				viol(tc, path, 2, R_MD_ATTR,
				     "metadata attribute %s appears twice (attributes %zu and %zu; readers keep only one)",
				     q(&b, a[i].name), j + 1, i + 1);
				return;
			}
		}
	}
}

/* Line 2 from column off + 1 on is "<metadata>...</metadata>". */
static void check_metadata(struct tc *tc, const char *path, const char *line,
			   size_t off, const char *metric)
{
	const char *md = line + off;
	size_t mdlen = strlen(md), na = 0, cap = 0, i, k = 0;
	struct mdattr *a = NULL;
	xmlParserCtxtPtr ctxt;
	xmlDocPtr doc = NULL;
	xmlNodePtr root, at, bad;
	struct qb b;
	size_t nopen = count_sub(line, "<metadata>");
	size_t nclose = count_sub(line, "</metadata>");

	if (nopen != 1 || nclose != 1)
		viol(tc, path, 2, R_MD_STRUCT,
		     "line 2 holds %zu \"<metadata>\" and %zu \"</metadata>\", each must appear exactly once (ParaProf cuts the block at the first </metadata>, TAU's Python reader splits the line at <metadata>): keep them out of CDATA",
		     nopen, nclose);
	check_md_escapes(tc, path, md, off);
	if (mdlen > INT_MAX)
		return;
	ctxt = xmlNewParserCtxt();
	if (!ctxt) {
		ioerr(tc, path, "out of memory");
		return;
	}
	doc = xmlCtxtReadMemory(ctxt, md, (int)mdlen, NULL, "UTF-8",
				XML_PARSE_NONET | XML_PARSE_NOERROR |
				XML_PARSE_NOWARNING);
	if (!doc || !ctxt->wellFormed) {
		xmlErrorPtr e = xmlCtxtGetLastError(ctxt);
		char msg[256];
		size_t l;

		snprintf(msg, sizeof(msg), "%s",
			 e && e->message ? e->message : "parse error");
		l = strlen(msg);
		while (l && (msg[l - 1] == '\n' || msg[l - 1] == ' '))
			msg[--l] = '\0';
		viol(tc, path, 2, R_MD_XML,
		     "the metadata block is not well-formed XML (ParaProf cannot read it): %s, near column %zu",
		     msg, off + (size_t)(e && e->int2 > 0 ? e->int2 : 1));
		goto out;
	}
	root = xmlDocGetRootElement(doc);
	if (!root || strcmp((const char *)root->name, "metadata")) {
		viol(tc, path, 2, R_MD_STRUCT, "the root element must be <metadata>");
		goto out;
	}
	if (root->properties || root->nsDef || root->ns) {
		viol(tc, path, 2, R_MD_STRUCT,
		     "<metadata> must not carry XML attributes or namespaces");
		goto out;
	}
	for (at = root->children; at; at = at->next) {
		xmlNodePtr nm, vl;
		struct mdattr *na2;

		k++;
		if (at->type != XML_ELEMENT_NODE ||
		    strcmp((const char *)at->name, "attribute")) {
			viol(tc, path, 2, R_MD_STRUCT,
			     "only <attribute> elements may appear in <metadata>, found %s%s%s%s",
			     node_kind(at),
			     at->type == XML_ELEMENT_NODE ? " <" : "",
			     at->type == XML_ELEMENT_NODE ? (const char *)at->name : "",
			     at->type == XML_ELEMENT_NODE ? ">" : "");
			goto out;
		}
		nm = at->children;
		vl = nm ? nm->next : NULL;
		if (at->properties || at->nsDef || at->ns ||
		    !nm || nm->type != XML_ELEMENT_NODE ||
		    strcmp((const char *)nm->name, "name") || nm->properties ||
		    nm->nsDef || nm->ns ||
		    !vl || vl->type != XML_ELEMENT_NODE ||
		    strcmp((const char *)vl->name, "value") || vl->properties ||
		    vl->nsDef || vl->ns || vl->next) {
			viol(tc, path, 2, R_MD_STRUCT,
			     "metadata attribute %zu must be exactly <attribute><name>...</name><value>...</value></attribute>, without XML attributes, white space or other nodes",
			     k);
			goto out;
		}
		if (na == cap) {
			cap = cap ? 2 * cap : 16;
			na2 = realloc(a, cap * sizeof(*a));
			if (!na2) {
				ioerr(tc, path, "out of memory");
				goto out;
			}
			a = na2;
		}
		a[na].name = text_of(nm, &bad);
		if (!a[na].name) {
			if (bad)
				viol(tc, path, 2, R_MD_STRUCT,
				     "<name> of metadata attribute %zu may hold only text or CDATA, found %s",
				     k, node_kind(bad));
			else
				ioerr(tc, path, "out of memory");
			goto out;
		}
		a[na].value = text_of(vl, &bad);
		if (!a[na].value) {
			if (bad)
				viol(tc, path, 2, R_MD_STRUCT,
				     "<value> of metadata attribute %s may hold only text or CDATA, found %s",
				     q(&b, a[na].name), node_kind(bad));
			else
				ioerr(tc, path, "out of memory");
			free(a[na].name);
			goto out;
		}
		na++;
	}
	check_md_attrs(tc, path, line, a, na, metric);
out:
	for (i = 0; i < na; i++) {
		free(a[i].name);
		free(a[i].value);
	}
	free(a);
	if (doc)
		xmlFreeDoc(doc);
	xmlFreeParserCtxt(ctxt);
}

static void check_line2(struct tc *tc, const char *path, const char *s,
			const char *metric)
{
	static const char md_open[] = " <metadata>", md_close[] = "</metadata>";
	const size_t hl = sizeof(L2_HEAD) - 1;
	size_t len = strlen(s);
	struct qb b;

	if (!strcmp(s, "# Name Calls Subrs Excl Incl ProfileCalls") ||
	    !strcmp(s, L2_HEAD) || !strcmp(s, "# Name Calls Subrs Excl Incl ProfileCalls # ")) {
		viol(tc, path, 2, R_LINE2,
		     "line 2 has no metadata block: it must be \"%s <metadata>...</metadata>\" with Metric Name as the first attribute",
		     L2_HEAD);
		return;
	}
	if (strncmp(s, L2_HEAD, hl)) {
		viol(tc, path, 2, R_LINE2,
		     "line 2 must begin with \"%s\"%s, got %s", L2_HEAD,
		     strstr(s, "SumExclSqr") ? " (no SumExclSqr column)" : "",
		     q(&b, s));
		return;
	}
	if (strncmp(s + hl, md_open, sizeof(md_open) - 1)) {
		viol(tc, path, 2, R_LINE2,
		     "line 2 must continue after \"...ProfileCalls #\" with one space and <metadata>, got %s",
		     q(&b, s + hl));
		return;
	}
	if (len < hl + sizeof(md_open) - 1 + sizeof(md_close) - 1 ||
	    strcmp(s + len - (sizeof(md_close) - 1), md_close)) {
		viol(tc, path, 2, R_LINE2,
		     "line 2 must end with </metadata>: nothing may follow the metadata block");
		return;
	}
	check_metadata(tc, path, s, hl + 1, metric);
}

/* ---------------------------------------------------------------------- */
/* Function lines, aggregates and user events                             */
/* ---------------------------------------------------------------------- */

/* Split "<tok> <tok> ..." after p (which must be at a space) into n tokens
 * separated by single spaces. Returns the end of the last token or NULL. */
static const char *tokens(struct tc *tc, const char *path, long lno,
			  const char *rule, const char *p, size_t n,
			  const char **tok, size_t *tl, const char *what)
{
	size_t k;

	for (k = 0; k < n; k++) {
		if (*p != ' ') {
			viol(tc, path, lno, rule, "%s: %s", what,
			     *p ? "fields must be separated by single spaces"
				: "too few fields");
			return NULL;
		}
		p++;
		tok[k] = p;
		while (*p && *p != ' ')
			p++;
		tl[k] = (size_t)(p - tok[k]);
		if (tl[k] == 0) {
			viol(tc, path, lno, rule, "%s: %s", what,
			     *p ? "fields must be separated by single spaces"
				: "too few fields");
			return NULL;
		}
		if (!strncmp(tok[k], "GROUP=", 6)) {
			viol(tc, path, lno, rule,
			     "%s: too few fields before GROUP=", what);
			return NULL;
		}
	}
	return p;
}

static const char FLINE_FMT[] =
	"a function line is \"<name>\" <calls> <subrs> <excl> <incl> 0 GROUP=\"<groups>\"";

static void bad_uint(struct tc *tc, const char *path, long lno, const char *rule,
		     const char *what, enum num r, const char *t, size_t n)
{
	struct qb b;

	viol(tc, path, lno, rule, "%s must be %s, got %s", what,
	     r == N_NEG ? "a non-negative integer (it is negative)" :
	     r == N_LEADZERO ? "a plain decimal integer without leading zeros" :
	     r == N_RANGE ? "an integer that fits in 64 bits" :
	     "a non-negative decimal integer", qs(&b, t, n));
}

static void bad_real(struct tc *tc, const char *path, long lno, const char *rule,
		     const char *what, enum num r, const char *t, size_t n)
{
	struct qb b;

	viol(tc, path, lno, rule, "%s must be %s, got %s", what,
	     r == N_NEG ? "a finite number that is not negative" :
	     r == N_NONFINITE ? "finite (the value overflows)" :
	     "a finite decimal number as %.16G writes it (no nan, inf, hex)",
	     qs(&b, t, n));
}

static void parse_func(struct tc *tc, const char *path, long lno,
		       const char *s, struct func *f)
{
	const char *tok[5], *e, *p, *g, *ge;
	size_t tl[5], nq = 0, i;
	bool ok = true;
	enum num r;
	struct qb b;

	f->line = lno;
	for (i = 0; s[i]; i++)
		nq += s[i] == '"';
	if (s[0] != '"' || nq < 4) {
		viol(tc, path, lno, R_FLINE, "%s, got %s", FLINE_FMT, q(&b, s));
		return;
	}
	if (nq > 4) {
		viol(tc, path, lno, R_FNAME,
		     "the line has %zu double quotes instead of 4: a function name must not contain '\"'",
		     nq);
		return;
	}
	e = strchr(s + 1, '"');
	f->name = xstrndup(tc, s + 1, (size_t)(e - s - 1));
	if (!f->name)
		return;
	check_name(tc, path, lno, R_FNAME, "function name", f->name);
	p = tokens(tc, path, lno, R_FLINE, e + 1, 5, tok, tl, FLINE_FMT);
	if (!p)
		return;
	if (*p != ' ' || strncmp(p + 1, "GROUP=\"", 7)) {
		viol(tc, path, lno, R_FLINE, "%s: expected GROUP=\"...\" after the ProfileCalls field, got %s",
		     FLINE_FMT, q(&b, p));
		return;
	}
	g = p + 8;
	ge = strchr(g, '"');
	if (!ge || ge[1]) {
		viol(tc, path, lno, R_FLINE,
		     "nothing may follow GROUP=\"...\" on a function line, found %s",
		     ge ? q(&b, ge + 1) : "nothing");
		return;
	}
	f->group = xstrndup(tc, g, (size_t)(ge - g));
	if (!f->group)
		return;
	r = parse_uint(tok[0], tl[0], INT64_MAX, &f->calls);
	if (r != N_OK) {
		bad_uint(tc, path, lno, R_CALLS, "calls", r, tok[0], tl[0]);
		ok = false;
	}
	r = parse_uint(tok[1], tl[1], INT64_MAX, &f->subrs);
	if (r != N_OK) {
		bad_uint(tc, path, lno, R_CALLS, "subrs", r, tok[1], tl[1]);
		ok = false;
	}
	r = parse_real(tok[2], tl[2], false, &f->excl);
	if (r != N_OK) {
		bad_real(tc, path, lno, R_TIMES, "excl", r, tok[2], tl[2]);
		ok = false;
	}
	r = parse_real(tok[3], tl[3], false, &f->incl);
	if (r != N_OK) {
		bad_real(tc, path, lno, R_TIMES, "incl", r, tok[3], tl[3]);
		ok = false;
	}
	if (tl[4] != 1 || tok[4][0] != '0')
		viol(tc, path, lno, R_PCALLS,
		     "ProfileCalls must be 0 (pprof would read that many extra lines), got %s",
		     qs(&b, tok[4], tl[4]));
	check_group(tc, path, lno, f->group);
	f->nums_ok = ok;
}

static bool is_count_line(const char *s, const char *word)
{
	while (is_digit(*s))
		s++;
	return *s == ' ' && !strcmp(s + 1, word);
}

static void parse_userevent(struct tc *tc, const char *path, long lno,
			    const char *s, struct func *u)
{
	static const char fmt[] =
		"a user event line is \"<name>\" <numevents> <max> <min> <mean> <sumsqr>";
	static const char *const what[] = { "max", "min", "mean", "sumsqr" };
	const char *tok[5], *e, *p;
	size_t tl[5], nq = 0, i;
	unsigned long long nev = 0;
	double v[4];
	bool ok = true;
	enum num r;
	struct qb b;

	u->line = lno;
	for (i = 0; s[i]; i++)
		nq += s[i] == '"';
	if (s[0] != '"' || nq < 2) {
		viol(tc, path, lno, R_UE, "%s, got %s", fmt, q(&b, s));
		return;
	}
	if (nq > 2) {
		viol(tc, path, lno, R_UE,
		     "the line has %zu double quotes instead of 2: a user event name must not contain '\"'",
		     nq);
		return;
	}
	e = strchr(s + 1, '"');
	u->name = xstrndup(tc, s + 1, (size_t)(e - s - 1));
	if (!u->name)
		return;
	check_name(tc, path, lno, R_UE, "user event name", u->name);
	p = tokens(tc, path, lno, R_UE, e + 1, 5, tok, tl, fmt);
	if (!p)
		return;
	if (*p) {
		viol(tc, path, lno, R_UE, "%s: nothing may follow sumsqr, found %s",
		     fmt, q(&b, p));
		return;
	}
	r = parse_uint(tok[0], tl[0], INT64_MAX, &nev);
	if (r != N_OK) {
		bad_uint(tc, path, lno, R_UE, "numevents", r, tok[0], tl[0]);
		ok = false;
	}
	for (i = 0; i < 4; i++) {
		r = parse_real(tok[i + 1], tl[i + 1], true, &v[i]);
		if (r != N_OK) {
			bad_real(tc, path, lno, R_UE, what[i], r, tok[i + 1],
				 tl[i + 1]);
			ok = false;
		}
	}
	if (!ok)
		return;
	if (v[3] < 0)
		viol(tc, path, lno, R_UE_VAL,
		     "sumsqr (%.16G) of user event %s is negative", v[3],
		     q(&b, u->name));
	else if (nev > 0 && !leq(v[1], v[0]))
		viol(tc, path, lno, R_UE_VAL,
		     "min (%.16G) of user event %s is greater than max (%.16G)",
		     v[1], q(&b, u->name), v[0]);
	else if (nev > 0 && (!leq(v[1], v[2]) || !leq(v[2], v[0])))
		viol(tc, path, lno, R_UE_VAL,
		     "mean (%.16G) of user event %s is outside [min, max] = [%.16G, %.16G]",
		     v[2], q(&b, u->name), v[1], v[0]);
}

/* ---------------------------------------------------------------------- */
/* Checks across the function lines of one file                           */
/* ---------------------------------------------------------------------- */

struct comp {
	const char *s;
	size_t n;
};

/* Split "A => B => C"; false if the separators or elements are malformed. */
static bool split_callpath(const char *name, struct comp *c, size_t *nc)
{
	const char *p = name, *a;

	*nc = 0;
	for (;;) {
		a = strstr(p, "=>");
		if (!a) {
			c[*nc].s = p;
			c[*nc].n = strlen(p);
			(*nc)++;
			break;
		}
		if (a == p || a[-1] != ' ' || a[2] != ' ')
			return false;
		c[*nc].s = p;
		c[*nc].n = (size_t)(a - 1 - p);
		(*nc)++;
		p = a + 3;
	}
	for (size_t i = 0; i < *nc; i++)
		if (c[i].n == 0 || c[i].s[0] == ' ' ||
		    c[i].s[c[i].n - 1] == ' ')
			return false;
	return true;
}

static void check_callpath(struct tc *tc, const char *path, struct func *f,
			   const struct htab *h, size_t idx, struct comp *c)
{
	struct func *cp = &f[idx];
	size_t nc, i, cidx, pidx;
	struct qb b, b2;
	char missing[512];
	size_t nmiss = 0, mo = 0;

	if (!split_callpath(cp->name, c, &nc)) {
		viol(tc, path, cp->line, R_CP_NAME,
		     "callpath %s: elements must be non-empty and separated by \" => \" (space, =>, space)",
		     q(&b, cp->name));
		return;
	}
	cidx = ht_get(h, f, c[nc - 1].s, c[nc - 1].n);
	/* The group: TAU_CALLPATH|<group of C>. */
	if (cp->group) {
		if (!group_has(cp->group, "TAU_CALLPATH")) {
			struct qb b3;

			viol(tc, path, cp->line, R_CP_GROUP,
			     "callpath %s must be in group TAU_CALLPATH|<group of %s>, found GROUP=%s",
			     q(&b, cp->name), qs(&b2, c[nc - 1].s, c[nc - 1].n),
			     q(&b3, cp->group));
		} else if (cidx && f[cidx - 1].group) {
			const char *gc = f[cidx - 1].group;

			if (strncmp(cp->group, "TAU_CALLPATH|", 13) ||
			    strcmp(cp->group + 13, gc))
				viol(tc, path, cp->line, R_CP_GROUP,
				     "callpath group must be TAU_CALLPATH|<group of its last element>, that is \"TAU_CALLPATH|%s\", found %s",
				     gc, q(&b, cp->group));
		} else if (strncmp(cp->group, "TAU_CALLPATH|", 13) ||
			   !cp->group[13]) {
			viol(tc, path, cp->line, R_CP_GROUP,
			     "callpath group must be TAU_CALLPATH|<group of its last element>, found %s",
			     q(&b, cp->group));
		} else if (ktau_kind(cp->group + 13) == K_BAD) {
			ktau_bad(tc, path, cp->line, cp->group + 13);
		}
	}
	/* Every element has its flat entry in the same file. */
	missing[0] = '\0';
	for (i = 0; i < nc; i++) {
		if (ht_get(h, f, c[i].s, c[i].n))
			continue;
		nmiss++;
		if (mo < sizeof(missing) - 1) {
			int w = snprintf(missing + mo, sizeof(missing) - mo, "%s%s",
					 nmiss > 1 ? ", " : "",
					 qs(&b, c[i].s, c[i].n));

			if (w > 0)
				mo += (size_t)w;
		}
	}
	if (nmiss) {
		viol(tc, path, cp->line, R_CP_FLAT,
		     "callpath %s: no flat entr%s %s in this file (ParaProf links a callpath only when every element has its own flat entry)",
		     q(&b2, cp->name), nmiss > 1 ? "ies" : "y", missing);
	}
	/* KTAU merged view: kernel entries only as children of a user routine. */
	for (i = 0; i + 1 < nc; i++) {
		size_t k = ht_get(h, f, c[i].s, c[i].n);

		if (k && (f[k - 1].kind == K_KGROUP || f[k - 1].kind == K_KROUTINE)) {
			viol(tc, path, cp->line, R_KTAU_MERGE,
			     "kernel entry %s is not the last element of callpath %s: kernel groups and routines are callpath children of the user routine on top of the user stack (\"compute() => SYSCALL\")",
			     qs(&b, c[i].s, c[i].n), q(&b2, cp->name));
			break;
		}
	}
	if (!cidx || !cp->nums_ok || !f[cidx - 1].nums_ok)
		return;
	/* A callpath is a subset of the calls of its last element. */
	{
		const struct func *fc = &f[cidx - 1];
		const char *bad = NULL;
		double x = 0, y = 0;

		if (cp->calls > fc->calls)
			bad = "calls", x = (double)cp->calls, y = (double)fc->calls;
		else if (!leq(cp->excl, fc->excl))
			bad = "excl", x = cp->excl, y = fc->excl;
		else if (!leq(cp->incl, fc->incl))
			bad = "incl", x = cp->incl, y = fc->incl;
		if (bad) {
			viol(tc, path, cp->line, R_CP_VAL,
			     "callpath %s has %s %.16G, more than its flat entry %s (%.16G): a callpath is a part of its last element",
			     q(&b, cp->name), bad, x, q(&b2, fc->name), y);
			return;
		}
	}
	for (i = 0; i + 1 < nc; i++) {
		size_t k = ht_get(h, f, c[i].s, c[i].n);

		if (k && f[k - 1].nums_ok && !leq(cp->incl, f[k - 1].incl)) {
			viol(tc, path, cp->line, R_CP_VAL,
			     "callpath %s has incl %.16G, more than the incl of its ancestor %s (%.16G)",
			     q(&b, cp->name), cp->incl, q(&b2, f[k - 1].name),
			     f[k - 1].incl);
			return;
		}
	}
	/* Kernel time charged to the user routine (the parent element). */
	if (nc < 2)
		return;
	pidx = ht_get(h, f, c[nc - 2].s, c[nc - 2].n);
	if (!pidx || f[pidx - 1].kind != K_USER)
		return;
	if (f[cidx - 1].kind == K_KGROUP)
		f[pidx - 1].kgroup_excl += cp->excl;
	else if (f[cidx - 1].kind == K_KROUTINE)
		f[pidx - 1].kroutine_excl += cp->excl;
}

static void check_funcs(struct tc *tc, const char *path, struct func *f,
			size_t nf)
{
	struct htab h = { 0, NULL };
	struct comp *c = NULL;
	size_t i, maxc = 1;
	struct qb b, b2;

	if (!ht_init(&h, nf)) {
		ioerr(tc, path, "out of memory");
		return;
	}
	for (i = 0; i < nf; i++) {
		size_t j;

		if (!f[i].name)
			continue;
		f[i].callpath = strstr(f[i].name, "=>") != NULL;
		if (f[i].callpath && count_sub(f[i].name, "=>") + 1 > maxc)
			maxc = count_sub(f[i].name, "=>") + 1;
		j = ht_get(&h, f, f[i].name, strlen(f[i].name));
		if (j) {
			viol(tc, path, f[i].line, R_DUP,
			     "duplicate function name %s (first on line %ld): each name appears once per file",
			     q(&b, f[i].name), f[j - 1].line);
			continue;
		}
		ht_put(&h, f, i);
	}
	for (i = 0; i < nf; i++) {
		struct func *x = &f[i];

		if (!x->name)
			continue;
		if (x->nums_ok && !leq(x->excl, x->incl))
			viol(tc, path, x->line, R_TIMES,
			     "excl (%.16G) is greater than incl (%.16G) for %s",
			     x->excl, x->incl, q(&b, x->name));
		if (x->nums_ok && x->calls == 0 &&
		    (x->subrs || x->excl != 0 || x->incl != 0))
			viol(tc, path, x->line, R_ZERO,
			     "%s has 0 calls but subrs %llu, excl %.16G, incl %.16G: without calls there is no time and no child call",
			     q(&b, x->name), x->subrs, x->excl, x->incl);
		if (!x->group || x->callpath)
			continue;
		if (group_has(x->group, "TAU_CALLPATH")) {
			viol(tc, path, x->line, R_CP_GROUP,
			     "%s is not a callpath (no \" => \") but its GROUP=%s contains TAU_CALLPATH",
			     q(&b, x->name), q(&b2, x->group));
			continue;
		}
		x->kind = ktau_kind(x->group);
		if (x->kind == K_BAD)
			ktau_bad(tc, path, x->line, x->group);
	}
	c = calloc(maxc, sizeof(*c));
	if (!c) {
		ioerr(tc, path, "out of memory");
		goto out;
	}
	for (i = 0; i < nf; i++) {
		/* skip unparsed lines and the second copy of a duplicate */
		if (f[i].name && f[i].callpath &&
		    ht_get(&h, f, f[i].name, strlen(f[i].name)) == i + 1)
			check_callpath(tc, path, f, &h, i, c);
	}
	for (i = 0; i < nf; i++) {
		const struct func *x = &f[i];
		double k = fmax(x->kgroup_excl, x->kroutine_excl);

		if (x->name && !x->callpath && x->kind == K_USER && x->nums_ok &&
		    k > 0 && !leq(x->excl + k, x->incl))
			viol(tc, path, x->line, R_KTAU_EXCL,
			     "%s: excl %.16G plus the kernel time charged to it, %.16G (excl of its kernel callpath children), exceeds its incl %.16G: the user routine's own exclusive time must be reduced by that kernel time",
			     q(&b, x->name), x->excl, k, x->incl);
	}
out:
	free(c);
	free(h.slot);
}

static void check_userevent_dups(struct tc *tc, const char *path,
				 struct func *u, size_t nu)
{
	struct htab h;
	struct qb b;
	size_t i, j;

	if (!ht_init(&h, nu)) {
		ioerr(tc, path, "out of memory");
		return;
	}
	for (i = 0; i < nu; i++) {
		if (!u[i].name)
			continue;
		j = ht_get(&h, u, u[i].name, strlen(u[i].name));
		if (j)
			viol(tc, path, u[i].line, R_DUP,
			     "duplicate user event name %s (first on line %ld)",
			     q(&b, u[i].name), u[j - 1].line);
		else
			ht_put(&h, u, i);
	}
	free(h.slot);
}

/* ---------------------------------------------------------------------- */
/* One profile file                                                       */
/* ---------------------------------------------------------------------- */

struct fres {
	char *path;
	int nct[3];
	char *metric;		/* from line 1, NULL if unknown */
	struct func *f;		/* the function lines */
	size_t nf;
	bool complete;		/* every function line was parsed */
};

static void fres_free(struct fres *r)
{
	free(r->path);
	free(r->metric);
	funcs_free(r->f, r->nf);
	memset(r, 0, sizeof(*r));
}

static int read_all(const char *path, char **out, size_t *outlen)
{
	size_t cap = 65536, len = 0;
	char *buf = NULL, *nb;
	int fd, err = 0;

	*out = NULL;
	*outlen = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return ENOMEM;
	}
	for (;;) {
		ssize_t r;

		if (cap - len < 2) {	/* keep a byte for a final NUL */
			nb = realloc(buf, cap * 2);
			if (!nb) {
				err = ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			break;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*outlen = len;
	return 0;
}

static long line_of(const char *buf, const char *p)
{
	long n = 1;

	for (; buf < p; buf++)
		n += *buf == '\n';
	return n;
}

struct line {
	char *s;
	size_t len;
};

/*
 * Layout checks are the caller's; this checks the content of one file,
 * the len bytes at buf, which has room for one more byte (buf[len]). The
 * lines are cut in place.
 */
static void check_content(struct tc *tc, const char *path, char *buf, size_t len,
			  struct fres *res)
{
	char *p, *cr;
	size_t nl = 0, i, nf = 0, first = 2, nfl, nu = 0;
	struct line *ln = NULL;
	struct func *f = NULL, *u = NULL;
	const char *metric = NULL;
	long n, m = -1;
	bool bad_utf8 = false;
	struct qb b;

	if (len == 0) {
		viol(tc, path, 1, R_LINE1,
		     "the file is empty: line 1 must be \"<N> " L1_WORD "<METRIC>\"");
		goto out;
	}
	p = memchr(buf, '\0', len);
	if (p) {
		viol(tc, path, line_of(buf, p), R_ENCODING,
		     "NUL byte in the file: a profile is text");
		goto out;
	}
	cr = memchr(buf, '\r', len);
	if (cr) {
		size_t ncr = 0;

		for (i = 0; i < len; i++)
			ncr += buf[i] == '\r';
		viol(tc, path, line_of(buf, cr), R_CR,
		     "carriage return (CR) character (%zu in the file): lines end with LF only",
		     ncr);
		goto out;
	}
	/* Split into lines; a final newline is optional. */
	for (i = 0; i < len; i++)
		nl += buf[i] == '\n';
	if (buf[len - 1] != '\n')
		nl++;
	ln = calloc(nl, sizeof(*ln));
	if (!ln) {
		ioerr(tc, path, "out of memory");
		goto out;
	}
	for (i = 0, p = buf; i < nl; i++) {
		char *e = memchr(p, '\n', len - (size_t)(p - buf));

		ln[i].s = p;
		ln[i].len = e ? (size_t)(e - p) : len - (size_t)(p - buf);
		p[ln[i].len] = '\0';	/* the last line may end at buf[len] */
		p += ln[i].len + 1;
	}
	for (i = 0; i < nl; i++) {
		size_t o = utf8_bad((const unsigned char *)ln[i].s, ln[i].len);

		if (o < ln[i].len && !bad_utf8) {
			viol(tc, path, (long)i + 1, R_ENCODING,
			     "invalid UTF-8 at byte %zu of the line", o + 1);
			bad_utf8 = true;
		}
		if (ln[i].len > MAX_LINE)
			viol(tc, path, (long)i + 1, R_LINE_LEN,
			     "line is %zu bytes long, at most %d fit (pprof reads lines into a 64 KiB buffer)",
			     ln[i].len, MAX_LINE);
	}

	n = check_line1(tc, path, ln[0].s, &metric);
	if (metric) {
		res->metric = xstrndup(tc, metric, strlen(metric));
		if (!res->metric)
			goto out;
	}
	if (nl < 2) {
		viol(tc, path, 2, R_LINE2,
		     "line 2 (\"%s <metadata>...</metadata>\") is missing", L2_HEAD);
		goto out;
	}
	check_line2(tc, path, ln[1].s, metric);

	/* The function lines: N of them, or as many as there are. */
	for (nfl = 0; first + nfl < nl && ln[first + nfl].s[0] == '"'; nfl++)
		;
#define AGG_LIKE(i) ((i) < nl && ln[i].s[0] != '"' && strstr(ln[i].s, "aggregates"))
	if (n >= 0 && (size_t)n != nfl) {
		if (AGG_LIKE(first + (size_t)n)) {
			nf = (size_t)n;		/* malformed lines in between */
		} else if (AGG_LIKE(first + nfl) || first + nfl >= nl) {
			viol(tc, path, 1, R_COUNT,
			     "line 1 declares %ld function lines, found %zu: N must be exactly the number of function lines",
			     n, nfl);
			nf = nfl;
		} else {
			nf = (size_t)n < nl - first ? (size_t)n : nl - first;
		}
	} else {
		nf = nfl;
	}
	f = calloc(nf ? nf : 1, sizeof(*f));
	if (!f) {
		ioerr(tc, path, "out of memory");
		goto out;
	}
	res->complete = true;
	for (i = 0; i < nf; i++) {
		parse_func(tc, path, (long)(first + i) + 1, ln[first + i].s, &f[i]);
		if (!f[i].name || !f[i].group)
			res->complete = false;
	}
	check_funcs(tc, path, f, nf);

	/* 0 aggregates */
	i = first + nf;
	if (i >= nl) {
		viol(tc, path, (long)i + 1, R_AGG,
		     "missing the mandatory \"0 aggregates\" line after the %zu function lines",
		     nf);
		goto done;
	}
	if (strcmp(ln[i].s, "0 aggregates")) {
		if (is_count_line(ln[i].s, "userevents")) {
			viol(tc, path, (long)i + 1, R_AGG,
			     "missing the mandatory \"0 aggregates\" line before the userevents block");
		} else {
			viol(tc, path, (long)i + 1, R_AGG,
			     "expected exactly \"0 aggregates\", got %s",
			     q(&b, ln[i].s));
			i++;
		}
	} else {
		i++;
	}

	/* Optional "<M> userevents" block. */
	if (i < nl && strstr(ln[i].s, "userevents")) {
		unsigned long long mm = 0;
		size_t j, ne;
		const char *s = ln[i].s, *d = s;

		while (is_digit(*d))
			d++;
		if (!is_count_line(s, "userevents") ||
		    parse_uint(s, (size_t)(d - s), INT_MAX, &mm) != N_OK) {
			viol(tc, path, (long)i + 1, R_UE,
			     "expected \"<M> userevents\" (M a decimal integer), got %s",
			     q(&b, s));
			i = nl;
			goto done;
		}
		m = (long)mm;
		if (m == 0)
			viol(tc, path, (long)i + 1, R_UE,
			     "\"0 userevents\": leave the block out when there are no user events");
		i++;
		if (i >= nl || strcmp(ln[i].s, UE_HEAD)) {
			viol(tc, path, (long)i + 1, R_UE,
			     "the line after \"%ld userevents\" must be \"%s\", got %s",
			     m, UE_HEAD, i < nl ? q(&b, ln[i].s) : "end of file");
			if (i < nl && ln[i].s[0] == '#')
				i++;
		} else {
			i++;
		}
		for (ne = 0; i + ne < nl && ln[i + ne].s[0] == '"'; ne++)
			;
		if (ne != (size_t)m) {
			if (i + (size_t)m == nl) {
				ne = (size_t)m;
			} else {
				viol(tc, path, (long)i + 1, R_UE,
				     "\"%ld userevents\" declares %ld user event line%s, found %zu",
				     m, m, m == 1 ? "" : "s", ne);
			}
		}
		u = calloc(ne ? ne : 1, sizeof(*u));
		if (!u) {
			ioerr(tc, path, "out of memory");
			goto out;
		}
		nu = ne;
		for (j = 0; j < ne; j++)
			parse_userevent(tc, path, (long)(i + j) + 1, ln[i + j].s,
					&u[j]);
		check_userevent_dups(tc, path, u, nu);
		i += ne;
	}
	if (i < nl)
		viol(tc, path, (long)i + 1, R_TRAILING,
		     ln[i].len ? "unexpected content after the last expected line: %s"
			       : "unexpected empty line after the last expected line (the file may end with one newline only)%s",
		     ln[i].len ? q(&b, ln[i].s) : "");
done:
	res->f = f;
	res->nf = nf;
	f = NULL;
out:
	funcs_free(u, nu);
	funcs_free(f, nf);
	free(ln);
#undef AGG_LIKE
}

static void check_profile(struct tc *tc, const char *path, struct fres *res)
{
	char *buf;
	size_t len;
	int err = read_all(path, &buf, &len);

	if (err) {
		ioerr(tc, path, "cannot read: %s", strerror(err));
		return;
	}
	check_content(tc, path, buf, len, res);
	free(buf);
}

/* ---------------------------------------------------------------------- */
/* Directories                                                            */
/* ---------------------------------------------------------------------- */

static bool parse_profile_name(const char *name, int nct[3])
{
	const char *p = name + 8;
	int k;

	if (strncmp(name, "profile.", 8))
		return false;
	for (k = 0; k < 3; k++) {
		const char *e = p;
		unsigned long long v;

		while (is_digit(*e))
			e++;
		if (parse_uint(p, (size_t)(e - p), INT_MAX, &v) != N_OK)
			return false;
		nct[k] = (int)v;
		if (k < 2 && *e != '.')
			return false;
		if (k == 2 && *e)
			return false;
		p = e + 1;
	}
	return true;
}

static void bad_profile_name(struct tc *tc, const char *path)
{
	viol(tc, path, 0, R_FILE_NAME,
	     "a profile file is named profile.<node>.<context>.<thread>, three non-negative decimal integers without sign or leading zeros (at most INT_MAX)");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_nct(const void *a, const void *b)
{
	const int *x = ((const struct fres *)a)->nct;
	const int *y = ((const struct fres *)b)->nct;
	int k;

	for (k = 0; k < 3; k++)
		if (x[k] != y[k])
			return x[k] < y[k] ? -1 : 1;
	return 0;
}

static void free_names(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The sorted entry names of dir, without "." and "..". */
static int list_dir(struct tc *tc, const char *dir, char ***out, size_t *nout)
{
	char **v = NULL, **nv;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	*nout = 0;
	d = opendir(dir);
	if (!d) {
		ioerr(tc, dir, "cannot open directory: %s", strerror(errno));
		return -1;
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				goto nomem;
			v = nv;
		}
		v[n] = strdup(de->d_name);
		if (!v[n])
			goto nomem;
		n++;
	}
	if (errno) {
		ioerr(tc, dir, "cannot read directory: %s", strerror(errno));
		closedir(d);
		free_names(v, n);
		return -1;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*out = v;
	*nout = n;
	return 0;
nomem:
	ioerr(tc, dir, "out of memory");
	closedir(d);
	free_names(v, n);
	return -1;
}

static bool has_nct(const struct fres *r, size_t n, int a, int b, int c)
{
	struct fres key;

	key.nct[0] = a;
	key.nct[1] = b;
	key.nct[2] = c;
	return n && bsearch(&key, r, n, sizeof(*r), cmp_nct) != NULL;
}

/* pprof walks node, context and thread upward from 0 and stops silently
 * at the first gap: every file must be reachable that way. */
static void check_dense(struct tc *tc, const char *dir, const struct fres *r,
			size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int a = r[i].nct[0], b = r[i].nct[1], c = r[i].nct[2];
		const char *what = NULL;
		int ma = a, mb = b, mc = c;

		if (c > 0 && !has_nct(r, n, a, b, c - 1))
			what = "thread", mc = c - 1;
		else if (c == 0 && b > 0 && !has_nct(r, n, a, b - 1, 0))
			what = "context", mb = b - 1;
		else if (c == 0 && b == 0 && a > 0 && !has_nct(r, n, a - 1, 0, 0))
			what = "node", ma = a - 1;
		if (what)
			viol(tc, r[i].path, 0, R_DENSE,
			     "%s numbering has a gap in %s: profile.%d.%d.%d is missing, so pprof (which walks node, context and thread upward from 0 and stops at the first gap) never reads this file; number densely from 0 and keep real pids/tids in the metadata",
			     what, dir, ma, mb, mc);
	}
}

static void sanitize(char *s)
{
	for (; *s; s++)
		if (strchr(SANITIZED, *s))
			*s = '_';
}

/*
 * The profile files of one metric directory. suffix: the <metric> of a
 * MULTI__<metric> directory whose name is to be checked against the
 * files, or NULL. Results, sorted by node, context, thread, go to *out.
 */
static void check_metric_dir(struct tc *tc, const char *dir, bool multi,
			     const char *suffix, struct fres **out, size_t *nout)
{
	struct fres *r = NULL, *nr;
	size_t n = 0, cap = 0, i, nn = 0;
	char **names = NULL;
	const struct fres *ref = NULL;
	struct qb b, b2;

	*out = NULL;
	*nout = 0;
	if (list_dir(tc, dir, &names, &nn))
		return;
	for (i = 0; i < nn; i++) {
		struct stat st;
		int nct[3];
		char *path;

		if (multi && !strncmp(names[i], "MULTI", 5)) {
			path = path_join(tc, dir, names[i]);
			if (path)
				viol(tc, path, 0, R_LAYOUT,
				     "MULTI entry inside a metric directory: readers do not look into nested metric directories");
			free(path);
			continue;
		}
		if (strncmp(names[i], "profile.", 8))
			continue;
		path = path_join(tc, dir, names[i]);
		if (!path)
			break;
		if (!parse_profile_name(names[i], nct)) {
			bad_profile_name(tc, path);
			free(path);
			continue;
		}
		if (stat(path, &st)) {
			ioerr(tc, path, "cannot stat: %s", strerror(errno));
			free(path);
			continue;
		}
		if (!S_ISREG(st.st_mode)) {
			viol(tc, path, 0, R_FILE_NAME,
			     "profile.<node>.<context>.<thread> is not a regular file");
			free(path);
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			nr = realloc(r, cap * sizeof(*r));
			if (!nr) {
				ioerr(tc, dir, "out of memory");
				free(path);
				break;
			}
			r = nr;
		}
		memset(&r[n], 0, sizeof(r[n]));
		r[n].path = path;
		memcpy(r[n].nct, nct, sizeof(nct));
		n++;
	}
	free_names(names, nn);
	if (n)
		qsort(r, n, sizeof(*r), cmp_nct);
	else if (multi)
		viol(tc, dir, 0, R_LAYOUT,
		     "metric directory without profile.<node>.<context>.<thread> files");
	for (i = 0; i < n; i++)
		check_profile(tc, r[i].path, &r[i]);
	for (i = 0; i < n; i++) {
		if (!r[i].metric)
			continue;
		if (!ref) {
			ref = &r[i];
		} else if (strcmp(r[i].metric, ref->metric)) {
			viol(tc, r[i].path, 1, R_METRIC_SAME,
			     "metric %s differs from metric %s of %s: the files of one directory hold one metric",
			     q(&b, r[i].metric), q(&b2, ref->metric), ref->path);
		}
	}
	if (suffix && ref) {
		char *want = xstrndup(tc, ref->metric, strlen(ref->metric));

		if (want) {
			sanitize(want);
			if (strcmp(want, suffix))
				viol(tc, dir, 0, R_MULTI_DIR,
				     "the directory of metric %s must be named MULTI__%s (each of / \\ ? %% * : | \" < > = and space in the metric becomes _)",
				     q(&b, ref->metric), want);
			free(want);
		}
	}
	check_dense(tc, dir, r, n);
	*out = r;
	*nout = n;
}

struct mdir {
	char *path;
	struct fres *r;
	size_t n;
};

/* Every metric directory holds the same threads with the same functions. */
static void compare_metrics(struct tc *tc, const struct mdir *a,
			    const struct mdir *d)
{
	size_t i = 0, j = 0, k;
	struct qb b, b2;

	while (i < a->n || j < d->n) {
		int c = i >= a->n ? 1 : j >= d->n ? -1 : cmp_nct(&a->r[i], &d->r[j]);
		const struct fres *x, *y;

		if (c < 0) {
			viol(tc, d->path, 0, R_MULTI_THR,
			     "profile.%d.%d.%d is missing here but present in %s: every metric directory holds the same threads",
			     a->r[i].nct[0], a->r[i].nct[1], a->r[i].nct[2], a->path);
			i++;
			continue;
		}
		if (c > 0) {
			viol(tc, d->r[j].path, 0, R_MULTI_THR,
			     "no profile.%d.%d.%d in %s: every metric directory holds the same threads",
			     d->r[j].nct[0], d->r[j].nct[1], d->r[j].nct[2], a->path);
			j++;
			continue;
		}
		x = &a->r[i++];
		y = &d->r[j++];
		if (!x->complete || !y->complete || !x->f || !y->f)
			continue;
		if (x->nf != y->nf) {
			viol(tc, y->path, 1, R_MULTI_FUNC,
			     "%zu function lines here but %zu in %s: the files of one thread list the same functions in the same order in every metric (Hatchet pairs lines by position)",
			     y->nf, x->nf, x->path);
			continue;
		}
		for (k = 0; k < x->nf; k++) {
			const struct func *fx = &x->f[k], *fy = &y->f[k];
			const char *why = NULL;

			if (strcmp(fx->name, fy->name))
				why = "the names differ";
			else if (fx->nums_ok && fy->nums_ok &&
				 (fx->calls != fy->calls || fx->subrs != fy->subrs))
				why = "calls or subrs differ (ParaProf takes them from the first metric only)";
			else if (strcmp(fx->group, fy->group))
				why = "groups differ (ParaProf takes them from the first metric only)";
			if (why) {
				viol(tc, y->path, fy->line, R_MULTI_FUNC,
				     "function %s does not match function %s on line %ld of %s: %s",
				     q(&b, fy->name), q(&b2, fx->name), fx->line,
				     x->path, why);
				break;
			}
		}
	}
}

static void xml_init(void)
{
	static bool done;

	if (!done) {
		xmlInitParser();
		done = true;
	}
}

int taucheck_dir(const char *dir, FILE *errors)
{
	struct tc tc = { errors, 0, false };
	struct mdir *md = NULL;
	size_t nn = 0, i, nprof = 0, nmulti = 0, nmd = 0;
	char **names = NULL;
	struct stat st;

	xml_init();
	if (stat(dir, &st)) {
		ioerr(&tc, dir, "cannot stat: %s", strerror(errno));
		return TAUCHECK_IO_ERROR;
	}
	if (!S_ISDIR(st.st_mode)) {
		ioerr(&tc, dir, "not a directory");
		return TAUCHECK_IO_ERROR;
	}
	if (list_dir(&tc, dir, &names, &nn))
		return TAUCHECK_IO_ERROR;
	for (i = 0; i < nn; i++) {
		nprof += !strncmp(names[i], "profile.", 8);
		nmulti += !strncmp(names[i], "MULTI", 5);
	}
	if (nprof) {
		struct fres *r;
		size_t n;

		for (i = 0; i < nn; i++) {
			char *path;

			if (strncmp(names[i], "MULTI", 5))
				continue;
			path = path_join(&tc, dir, names[i]);
			if (path && !stat(path, &st) && S_ISDIR(st.st_mode))
				viol(&tc, path, 0, R_LAYOUT,
				     "MULTI entry beside top-level profile files: one metric puts its files directly in the directory, several metrics only MULTI__<metric> subdirectories (ParaProf ignores MULTI_* when profile files are present)");
			free(path);
		}
		check_metric_dir(&tc, dir, false, NULL, &r, &n);
		for (i = 0; i < n; i++)
			fres_free(&r[i]);
		free(r);
	} else if (nmulti) {
		md = calloc(nmulti, sizeof(*md));
		if (!md) {
			ioerr(&tc, dir, "out of memory");
			goto out;
		}
		for (i = 0; i < nn; i++) {
			const char *suffix, *bad;
			char *path;

			if (strncmp(names[i], "MULTI", 5))
				continue;
			path = path_join(&tc, dir, names[i]);
			if (!path)
				goto out;
			if (stat(path, &st)) {
				ioerr(&tc, path, "cannot stat: %s", strerror(errno));
				free(path);
				continue;
			}
			if (!S_ISDIR(st.st_mode)) {
				viol(&tc, path, 0, R_LAYOUT,
				     "MULTI entry that is not a directory (readers take every MULTI* entry for a metric directory)");
				free(path);
				continue;
			}
			if (strncmp(names[i], "MULTI__", 7) || !names[i][7]) {
				viol(&tc, path, 0, R_MULTI_DIR,
				     "a metric directory is named MULTI__<metric> (two underscores, then the metric)");
				free(path);
				continue;
			}
			suffix = names[i] + 7;
			bad = strpbrk(suffix, SANITIZED);
			if (bad) {
				viol(&tc, path, 0, R_MULTI_DIR,
				     "'%c' in a metric directory name: each of / \\ ? %% * : | \" < > = and space in the metric becomes _",
				     *bad);
				suffix = NULL;
			}
			md[nmd].path = path;
			check_metric_dir(&tc, path, true, suffix, &md[nmd].r,
					 &md[nmd].n);
			nmd++;
		}
		if (nmulti == 1 && nmd == 1)
			viol(&tc, dir, 0, R_LAYOUT,
			     "a single metric directory (%s): with one metric the profile files sit directly in the profile directory",
			     md[0].path);
		for (i = 1; i < nmd; i++)
			compare_metrics(&tc, &md[0], &md[i]);
	} else {
		viol(&tc, dir, 0, R_LAYOUT,
		     "no profile files: expected profile.<node>.<context>.<thread> files (one metric) or MULTI__<metric> subdirectories (several metrics)");
	}
out:
	if (md) {
		for (i = 0; i < nmd; i++) {
			for (size_t j = 0; j < md[i].n; j++)
				fres_free(&md[i].r[j]);
			free(md[i].r);
			free(md[i].path);
		}
		free(md);
	}
	free_names(names, nn);
	return tc.io_err ? TAUCHECK_IO_ERROR : tc.nviol;
}

int taucheck_file(const char *path, FILE *errors)
{
	struct tc tc = { errors, 0, false };
	struct fres r;
	const char *base = strrchr(path, '/');
	char *real, *slash;
	struct stat st;
	int nct[3];

	xml_init();
	memset(&r, 0, sizeof(r));
	base = base ? base + 1 : path;
	if (stat(path, &st)) {
		ioerr(&tc, path, "cannot stat: %s", strerror(errno));
		return TAUCHECK_IO_ERROR;
	}
	if (!S_ISREG(st.st_mode)) {
		ioerr(&tc, path, "not a regular file");
		return TAUCHECK_IO_ERROR;
	}
	if (!parse_profile_name(base, nct))
		bad_profile_name(&tc, path);
	check_profile(&tc, path, &r);
	/* In a MULTI__<metric> directory, the name must match the metric. */
	real = realpath(path, NULL);
	slash = real ? strrchr(real, '/') : NULL;
	if (slash && slash != real) {
		const char *dname;

		*slash = '\0';
		dname = strrchr(real, '/');
		dname = dname ? dname + 1 : real;
		if (!strncmp(dname, "MULTI", 5)) {
			const char *suffix = strncmp(dname, "MULTI__", 7) ? "" : dname + 7;

			if (!*suffix) {
				viol(&tc, real, 0, R_MULTI_DIR,
				     "a metric directory is named MULTI__<metric> (two underscores, then the metric)");
			} else if (strpbrk(suffix, SANITIZED)) {
				viol(&tc, real, 0, R_MULTI_DIR,
				     "'%c' in a metric directory name: each of / \\ ? %% * : | \" < > = and space in the metric becomes _",
				     *strpbrk(suffix, SANITIZED));
			} else if (r.metric) {
				char *want = xstrndup(&tc, r.metric, strlen(r.metric));

				if (want) {
					sanitize(want);
					if (strcmp(want, suffix))
						viol(&tc, real, 0, R_MULTI_DIR,
						     "the directory of metric \"%s\" must be named MULTI__%s",
						     r.metric, want);
					free(want);
				}
			}
		}
	}
	free(real);
	fres_free(&r);
	return tc.io_err ? TAUCHECK_IO_ERROR : tc.nviol;
}

int taucheck_text(const char *name, const void *data, size_t len, FILE *errors)
{
	struct tc tc = { errors, 0, false };
	struct fres r;
	char *buf = malloc(len + 1);	/* check_content() cuts lines in place */

	xml_init();
	memset(&r, 0, sizeof(r));
	if (!buf) {
		ioerr(&tc, name, "out of memory");
		return TAUCHECK_IO_ERROR;
	}
	if (len)
		memcpy(buf, data, len);
	check_content(&tc, name, buf, len, &r);
	free(buf);
	fres_free(&r);
	return tc.io_err ? TAUCHECK_IO_ERROR : tc.nviol;
}
