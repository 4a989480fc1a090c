// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud: reading TAU profile directories for ktaud merge, leniently: TAU's
 * own output has extra spaces around names and groups, "TAU_CALLPATH | X"
 * groups, SumExclSqr columns and metadata that is not strict. Names and
 * groups are cleaned for the strict readers as they are read. The parser
 * of one file works on its text (tfile_parse), so that it is fuzzed
 * (fuzz/fuzz-tau.c).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ktaud.h"
#include "internal.h"
#include "tauprofile.h"

void tfile_free(struct tfile *t)
{
	size_t i;

	for (i = 0; i < t->nf; i++) {
		free(t->f[i].name);
		free(t->f[i].group);
	}
	for (i = 0; i < t->ne; i++)
		free(t->e[i].name);
	for (i = 0; i < t->nm; i++) {
		free(t->m[i].name);
		free(t->m[i].value);
	}
	free(t->f);
	free(t->e);
	free(t->m);
	free(t->metric);
}

void tprofile_free(struct tprofile *p)
{
	size_t i, j;

	for (i = 0; i < p->nm; i++) {
		for (j = 0; j < p->m[i].n; j++)
			tfile_free(&p->m[i].files[j]);
		free(p->m[i].files);
		free(p->m[i].dir);
		free(p->m[i].metric);
	}
	free(p->m);
	memset(p, 0, sizeof(*p));
}

/* A callpath or name, each element cleaned for the strict readers. */
static char *clean_path(const char *s, size_t len)
{
	char *out = malloc(len * 2 + 8), *el = malloc(len + 1), *o;
	const char *p = s, *end = s + len, *sep;

	if (!out || !el) {
		free(out);
		free(el);
		return NULL;
	}
	o = out;
	*o = '\0';
	for (;;) {
		size_t l;

		sep = NULL;
		for (const char *q = p; q + 1 < end; q++)
			if (q[0] == '=' && q[1] == '>') {
				sep = q;
				break;
			}
		l = (size_t)((sep ? sep : end) - p);
		memcpy(el, p, l);
		el[l] = '\0';
		if (o != out)
			o = stpcpy(o, " => ");
		ktau__clean_name(o, l + 2, el);
		o += strlen(o);
		if (!sep)
			break;
		p = sep + 2;
	}
	free(el);
	return out;
}

/* Groups "A | B|A" -> "A|B"; empty -> TAU_DEFAULT. */
static char *clean_groups(const char *s, size_t len)
{
	char *out = malloc(len + 16), *tmp = strndup(s, len), *tok, *save = NULL;
	size_t o = 0;

	if (!out || !tmp) {
		free(out);
		free(tmp);
		return NULL;
	}
	out[0] = '\0';
	for (tok = strtok_r(tmp, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
		char el[256];
		const char *q;
		int dup = 0;

		ktau__clean_name(el, sizeof(el), tok);
		if (!strcmp(el, "?"))
			continue;
		for (q = out; *q && !dup; q = strchr(q, '|') ? strchr(q, '|') + 1 : q + strlen(q)) {
			size_t l = strcspn(q, "|");

			dup = l == strlen(el) && !memcmp(q, el, l);
		}
		if (dup || o + strlen(el) + 2 > len + 16)
			continue;
		if (o)
			out[o++] = '|';
		strcpy(out + o, el);
		o += strlen(el);
	}
	free(tmp);
	if (!o)
		strcpy(out, "TAU_DEFAULT");
	return out;
}

int group_has(const char *g, const char *comp)
{
	size_t l = strlen(comp);

	while (g) {
		const char *e = strchr(g, '|');
		size_t gl = e ? (size_t)(e - g) : strlen(g);

		if (gl == l && !memcmp(g, comp, l))
			return 1;
		g = e ? e + 1 : NULL;
	}
	return 0;
}

/* Remove one element of a group list (never leaving it empty). */
static void drop_group(char *g, const char *comp)
{
	size_t l = strlen(comp);
	char *p = g;

	while (p && *p) {
		char *e = strchr(p, '|');
		size_t gl = e ? (size_t)(e - p) : strlen(p);

		if (gl == l && !memcmp(p, comp, l)) {
			if (e)
				memmove(p, e + 1, strlen(e + 1) + 1);
			else if (p > g)
				p[-1] = '\0';
			else
				strcpy(g, "TAU_DEFAULT");
			return;
		}
		p = e ? e + 1 : NULL;
	}
}

int is_kernel_group(const char *g)
{
	const char *p;

	if (group_has(g, "TAU_KERNEL_MERGE") || group_has(g, "KERNEL_GROUPS"))
		return 1;
	for (p = g; p; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL)
		if (!strncmp(p, "KTAU_", 5))
			return 1;
	return 0;
}

/* XML text with entities and CDATA -> plain text (NULL: not understood). */
static char *xml_text(const char *s, size_t len)
{
	char *out = malloc(len + 1), *o = out;
	const char *p = s, *end = s + len;

	if (!out)
		return NULL;
	while (p < end) {
		if (!strncmp(p, "<![CDATA[", 9)) {
			const char *e = p + 9;

			while (e + 2 < end && strncmp(e, "]]>", 3))
				e++;
			if (e + 2 >= end)
				goto bad;
			memcpy(o, p + 9, (size_t)(e - p - 9));
			o += e - p - 9;
			p = e + 3;
		} else if (*p == '&') {
			const char *semi = memchr(p, ';', (size_t)(end - p));
			static const struct { const char *e; char c; } ents[] = {
				{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' },
				{ "&quot;", '"' }, { "&apos;", '\'' },
			};
			size_t k, l;

			if (!semi)
				goto bad;
			l = (size_t)(semi - p + 1);
			for (k = 0; k < 5; k++)
				if (l == strlen(ents[k].e) && !memcmp(p, ents[k].e, l))
					break;
			if (k < 5) {
				*o++ = ents[k].c;
			} else if (p[1] == '#') {
				long c = p[2] == 'x' ? strtol(p + 3, NULL, 16) : strtol(p + 2, NULL, 10);

				*o++ = c > 0 && c < 0x80 ? (char)c : '?';
			} else {
				goto bad;
			}
			p = semi + 1;
		} else if (*p == '<') {
			goto bad;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

/* The content of <tag>...</tag> at *pp (after optional white space). */
static int xml_elem(const char **pp, const char *end, const char *tag, const char **c,
		    size_t *clen)
{
	const char *p = *pp, *e;
	char open[32], close[32];
	size_t lo, lc;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	lo = strlen(open);
	lc = strlen(close);
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if ((size_t)(end - p) < lo || memcmp(p, open, lo))
		return -1;
	p += lo;
	for (e = p; e + lc <= end; e++) {
		if (!strncmp(e, "<![CDATA[", 9)) {
			const char *x = strstr(e, "]]>");

			if (!x || x >= end)
				return -1;
			e = x + 2;
			continue;
		}
		if (!memcmp(e, close, lc))
			break;
	}
	if (e + lc > end)
		return -1;
	*c = p;
	*clen = (size_t)(e - p);
	*pp = e + lc;
	return 0;
}

static void meta_parse(struct tfile *t, const char *s, size_t len)
{
	const char *p = s, *end = s + len, *attr, *n, *v;
	size_t alen, nlen, vlen;

	while (p < end) {
		const char *ap;
		char *name, *value, *x;

		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p >= end)
			break;
		if (xml_elem(&p, end, "attribute", &attr, &alen)) {
			t->meta_dropped = 1;
			return;
		}
		ap = attr;
		if (xml_elem(&ap, attr + alen, "name", &n, &nlen) ||
		    xml_elem(&ap, attr + alen, "value", &v, &vlen)) {
			t->meta_dropped = 1;
			continue;
		}
		name = xml_text(n, nlen);
		value = xml_text(v, vlen);
		if (!name || !value) {
			free(name);
			free(value);
			t->meta_dropped = 1;
			continue;
		}
		/* No white space around, no control characters. */
		for (x = name; *x; x++)
			if ((unsigned char)*x < 0x20)
				*x = ' ';
		for (x = value; *x; x++)
			if ((unsigned char)*x < 0x20)
				*x = ' ';
		{
			char *a = name, *b = value;
			size_t l;

			while (*a == ' ')
				a++;
			while (*b == ' ')
				b++;
			memmove(name, a, strlen(a) + 1);
			memmove(value, b, strlen(b) + 1);
			for (l = strlen(name); l && name[l - 1] == ' '; l--)
				name[l - 1] = '\0';
			for (l = strlen(value); l && value[l - 1] == ' '; l--)
				value[l - 1] = '\0';
		}
		if (!*name || !strcmp(name, "Metric Name")) {
			free(name);
			free(value);
			continue;
		}
		{
			struct tmeta *nm = NULL;
			size_t i;
			int dup = 0;

			for (i = 0; i < t->nm && !dup; i++)
				dup = !strcmp(t->m[i].name, name);
			if (!dup)
				nm = realloc(t->m, (t->nm + 1) * sizeof(*nm));
			if (!nm) {
				free(name);
				free(value);
				continue;
			}
			t->m = nm;
			t->m[t->nm].name = name;
			t->m[t->nm].value = value;
			t->nm++;
		}
	}
}

const char *meta_get(const struct tfile *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->nm; i++)
		if (!strcmp(t->m[i].name, name))
			return t->m[i].value;
	return NULL;
}

/* The next line of text (NUL-terminated in place), or NULL. */
static char *next_line(char **pp, long *lno)
{
	char *p = *pp, *nl;

	if (!p || !*p)
		return NULL;
	nl = strchr(p, '\n');
	if (nl) {
		*nl = '\0';
		*pp = nl + 1;
	} else {
		*pp = p + strlen(p);
	}
	if (nl && nl > p && nl[-1] == '\r')
		nl[-1] = '\0';
	(*lno)++;
	return p;
}

static int num_ok(double v)
{
	return isfinite(v);
}

/*
 * More lines of what announced on line lno than the text has left after
 * p (said why): nothing is allocated for a count the file cannot hold.
 */
static int too_many(const char *path, long lno, long n, const char *what, const char *p)
{
	long left = 0;

	for (; *p; p++)
		left += *p == '\n' || !p[1];
	if (n <= left)
		return 0;
	err_msg("%s:%ld: %ld %s lines announced, the file has %ld more lines", path, lno, n,
		what, left);
	return 1;
}

/*
 * A count (calls, subrs) of the token at s, whose value as a double is v:
 * exact when written as digits, else (TAU may write 1.5E+03) an integral
 * double below 2^64. 0, or -1 when it is no such count.
 */
static int count_of(const char *s, double v, unsigned long long *out)
{
	size_t n = strspn(s, "0123456789");

	if (n && (!s[n] || s[n] == ' ' || s[n] == '\t')) {
		errno = 0;
		*out = strtoull(s, NULL, 10);
		return errno ? -1 : 0;
	}
	if (v < 0 || v != floor(v) || v >= 0x1p64)
		return -1;
	*out = (unsigned long long)v;
	return 0;
}

#define BAD(...) do { err_msg("%s:%ld: " __VA_ARGS__); goto bad; } while (0)

/* One profile file's text, leniently (TAU's own output has extra spaces). */
int tfile_parse(const char *path, char *text, struct tfile *t)
{
	char *p, *line, *end;
	long lno = 0, n, k, i;

	p = text;
	line = next_line(&p, &lno);
	if (!line)
		BAD("empty file, not a TAU profile", path, lno);
	n = strtol(line, &end, 10);
	if (end == line || n < 0 || n > INT_MAX || *end != ' ')
		BAD("line 1 is not \"<N> templated_functions...\"", path, lno);
	while (*end == ' ')
		end++;
	if (!strncmp(end, "templated_functions_MULTI_", 26) && end[26]) {
		t->metric = strdup(end + 26);
	} else if (!strcmp(end, "templated_functions")) {
		t->metric = strdup("TIME");
	} else {
		BAD("line 1 is not \"<N> templated_functions_MULTI_<metric>\"", path, lno);
	}
	if (!t->metric)
		goto nomem;
	line = next_line(&p, &lno);
	if (!line || line[0] != '#')
		BAD("line 2 is not the \"# Name Calls Subrs Excl Incl ...\" header", path, lno);
	{
		char *ms = strstr(line, "<metadata>"), *me = ms ? strstr(ms, "</metadata>") : NULL;

		if (ms && me)
			meta_parse(t, ms + 10, (size_t)(me - ms - 10));
		else if (ms)
			t->meta_dropped = 1;
	}
	if (too_many(path, 1, n, "function", p))
		goto bad;
	t->f = calloc(n ? (size_t)n : 1, sizeof(*t->f));
	if (!t->f)
		goto nomem;
	for (i = 0; i < n; i++) {
		struct tfunc *f = &t->f[t->nf];
		char *q, *g, *ge, *tok, *counts[2] = { NULL, NULL };
		double vals[6];
		int nv = 0;
		size_t j;

		line = next_line(&p, &lno);
		if (!line || (line[0] != '"' && i && strstr(line, " aggregates")))
			BAD("%ld function lines announced on line 1, only %ld found", path, lno, n, i);
		if (line[0] != '"' || !(q = strchr(line + 1, '"')))
			BAD("a function line must start with the quoted name", path, lno);
		g = strstr(q + 1, "GROUP=\"");
		ge = g ? strchr(g + 7, '"') : NULL;
		if (!g || !ge)
			BAD("no GROUP=\"...\" on the function line", path, lno);
		*g = '\0';
		for (tok = q + 1; *tok;) {
			char *e2;

			while (*tok == ' ' || *tok == '\t')
				tok++;
			if (!*tok)
				break;
			if (nv == 6)
				BAD("too many numbers on the function line", path, lno);
			vals[nv] = strtod(tok, &e2);
			if (e2 == tok || (*e2 && *e2 != ' ' && *e2 != '\t') || !num_ok(vals[nv]))
				BAD("a number on the function line is not valid", path, lno);
			if (nv < 2)
				counts[nv] = tok;
			nv++;
			tok = e2;
		}
		/* calls subrs excl incl [sumexclsqr] profilecalls */
		if (nv != 5 && nv != 6)
			BAD("a function line has calls subrs excl incl [SumExclSqr] ProfileCalls",
			    path, lno);
		if (count_of(counts[0], vals[0], &f->calls) || count_of(counts[1], vals[1], &f->subrs))
			BAD("calls and subrs must be non-negative integers below 2^64", path, lno);
		f->name = clean_path(line + 1, (size_t)(q - line - 1));
		f->group = clean_groups(g + 7, (size_t)(ge - g - 7));
		if (!f->name || !f->group) {
			free(f->name);
			free(f->group);
			goto nomem;
		}
		f->excl = vals[2] < 0 ? 0 : vals[2];
		f->incl = vals[3] < 0 ? 0 : vals[3];
		if (f->excl > f->incl)
			f->excl = f->incl;
		if (!f->calls) {
			f->subrs = 0;
			f->excl = f->incl = 0;
		}
		f->callpath = strstr(f->name, " => ") != NULL;
		if (!f->callpath && group_has(f->group, "TAU_CALLPATH"))
			drop_group(f->group, "TAU_CALLPATH");
		for (j = 0; j < t->nf; j++)
			if (!strcmp(t->f[j].name, f->name))
				break;
		if (j < t->nf) {
			t->dups++;
			free(f->name);
			free(f->group);
			continue;
		}
		t->nf++;
	}
	line = next_line(&p, &lno);
	if (!line || sscanf(line, "%ld aggregates", &k) != 1 || k < 0)
		BAD("the line after the functions must be \"<N> aggregates\"", path, lno);
	for (i = 0; i < k; i++)
		if (!next_line(&p, &lno))
			BAD("%ld aggregate lines announced, the file ends before", path, lno, k);
	line = next_line(&p, &lno);
	if (line && *line) {
		if (sscanf(line, "%ld userevents", &k) != 1 || k < 0)
			BAD("expected \"<M> userevents\" or the end of the file", path, lno);
		line = next_line(&p, &lno);
		if (k && (!line || line[0] != '#'))
			BAD("the user event header line is missing", path, lno);
		if (too_many(path, lno, k, "user event", p))
			goto bad;
		t->e = calloc(k > 0 ? (size_t)k : 1, sizeof(*t->e));
		if (!t->e)
			goto nomem;
		for (i = 0; i < k; i++) {
			struct tevent *e = &t->e[t->ne];
			char *q;
			int used = 0;

			line = next_line(&p, &lno);
			if (!line || line[0] != '"' || !(q = strchr(line + 1, '"')))
				BAD("a user event line must start with the quoted name", path, lno);
			if (sscanf(q + 1, " %llu %lf %lf %lf %lf %n", &e->n, &e->max, &e->min, &e->mean,
				   &e->sumsqr, &used) != 5)
				BAD("a user event line has numevents max min mean sumsqr", path, lno);
			if (!num_ok(e->max) || !num_ok(e->min) || !num_ok(e->mean) ||
			    !num_ok(e->sumsqr) || e->sumsqr < 0 ||
			    (e->n && (e->min > e->mean || e->mean > e->max))) {
				t->dups++;	/* dropped */
				continue;
			}
			e->name = clean_path(line + 1, (size_t)(q - line - 1));
			if (!e->name)
				goto nomem;
			for (used = 0; (size_t)used < t->ne; used++)
				if (!strcmp(t->e[used].name, e->name))
					break;
			if ((size_t)used < t->ne) {
				free(e->name);
				t->dups++;
				continue;
			}
			t->ne++;
		}
	}
	return 0;
nomem:
	err_msg("%s: out of memory", path);
	return -ENOMEM;
bad:
	return -EBADMSG;
}

static int tfile_read(const char *path, struct tfile *t)
{
	char *text = NULL;
	int ret = ktau__slurp(path, &text, NULL);

	if (ret) {
		err_msg("cannot read %s: %s", path, strerror(-ret));
		return ret;
	}
	ret = tfile_parse(path, text, t);
	free(text);
	return ret;
}

static int parse_profile_name(const char *s, int *node, int *ctx, int *thread)
{
	char tail;

	return sscanf(s, "profile.%d.%d.%d%c", node, ctx, thread, &tail) == 3 && *node >= 0 &&
	       *ctx >= 0 && *thread >= 0 ? 0 : -1;
}

static int cmp_tfile(const void *a, const void *b)
{
	const struct tfile *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->ctx != y->ctx)
		return x->ctx < y->ctx ? -1 : 1;
	return x->thread < y->thread ? -1 : x->thread > y->thread;
}

static int read_metric_dir(const char *dir, struct tmetric *m)
{
	struct dirent *de;
	char path[PATH_MAX];
	size_t cap = 0;
	DIR *d = opendir(dir);
	int ret = 0;

	if (!d) {
		err_msg("cannot read %s: %s", dir, strerror(errno));
		return -errno;
	}
	while ((de = readdir(d))) {
		struct tfile t = { 0 };

		if (parse_profile_name(de->d_name, &t.node, &t.ctx, &t.thread))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		ret = tfile_read(path, &t);
		if (ret) {
			tfile_free(&t);
			break;
		}
		if (m->n == cap) {
			struct tfile *nf;

			cap = cap ? cap * 2 : 16;
			nf = realloc(m->files, cap * sizeof(*nf));
			if (!nf) {
				tfile_free(&t);
				ret = -ENOMEM;
				break;
			}
			m->files = nf;
		}
		m->files[m->n++] = t;
	}
	closedir(d);
	if (!ret && m->n) {
		qsort(m->files, m->n, sizeof(*m->files), cmp_tfile);
		m->metric = strdup(m->files[0].metric);
		if (!m->metric)
			ret = -ENOMEM;
	}
	return ret;
}

int read_profile(const char *dir, struct tprofile *p)
{
	struct tmetric top = { 0 };
	struct dirent *de;
	char path[PATH_MAX];
	struct stat st;
	DIR *d;
	size_t i;
	int ret;

	memset(p, 0, sizeof(*p));
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		err_msg("%s is not a directory: give the TAU profile directory (profile.N.C.T files)",
			dir);
		return -ENOTDIR;
	}
	ret = read_metric_dir(dir, &top);
	if (ret)
		goto fail_top;
	if (top.n) {
		p->m = calloc(1, sizeof(*p->m));
		if (!p->m) {
			ret = -ENOMEM;
			goto fail_top;
		}
		p->m[0] = top;
		p->nm = 1;
	} else {
		free(top.files);
		d = opendir(dir);
		if (!d)
			return -errno;
		while ((de = readdir(d))) {
			struct tmetric m = { 0 }, *nm;

			if (strncmp(de->d_name, "MULTI__", 7))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (stat(path, &st) || !S_ISDIR(st.st_mode))
				continue;
			ret = read_metric_dir(path, &m);
			if (!ret && m.n)
				m.dir = strdup(de->d_name);
			nm = ret || !m.n ? NULL : realloc(p->m, (p->nm + 1) * sizeof(*nm));
			if (!nm) {
				for (i = 0; i < m.n; i++)
					tfile_free(&m.files[i]);
				free(m.files);
				free(m.metric);
				free(m.dir);
				if (ret)
					break;
				continue;
			}
			p->m = nm;
			p->m[p->nm++] = m;
		}
		closedir(d);
		if (ret)
			goto fail;
	}
	if (!p->nm) {
		err_msg("%s has no TAU profile files (profile.N.C.T, or MULTI__<metric>/ "
			"subdirectories with them)", dir);
		ret = -ENOENT;
		goto fail;
	}
	/* The time metric: "TIME", else the first with TIME in its name. */
	p->time = p->nm;
	for (i = 0; i < p->nm && p->time == p->nm; i++)
		if (!strcmp(p->m[i].metric, "TIME"))
			p->time = i;
	for (i = 0; i < p->nm && p->time == p->nm; i++)
		if (strstr(p->m[i].metric, "TIME"))
			p->time = i;
	if (p->time == p->nm) {
		err_msg("%s has no time metric (a metric with TIME in its name, in "
			"microseconds): kernel times cannot be added", dir);
		ret = -EINVAL;
		goto fail;
	}
	for (i = 1; i < p->nm; i++) {
		size_t j;

		if (p->m[i].n != p->m[0].n)
			break;
		for (j = 0; j < p->m[0].n; j++)
			if (cmp_tfile(&p->m[i].files[j], &p->m[0].files[j]))
				break;
		if (j < p->m[0].n)
			break;
	}
	if (i < p->nm) {
		err_msg("%s: the metric directories do not have the same profile files", dir);
		ret = -EINVAL;
		goto fail;
	}
	return 0;
fail_top:
	for (i = 0; i < top.n; i++)
		tfile_free(&top.files[i]);
	free(top.files);
	free(top.metric);
	return ret;
fail:
	tprofile_free(p);
	return ret;
}

/* ---- Writing ------------------------------------------------------------- */

int tfile_write(FILE *out, const struct tfile *f, const struct tfile_out *o)
{
	size_t i;

	fprintf(out, "%zu templated_functions_MULTI_%s\n", f->nf + o->nextra, o->metric);
	fputs("# Name Calls Subrs Excl Incl ProfileCalls # <metadata>", out);
	ktau__meta(out, "Metric Name", o->metric);
	for (i = 0; i < f->nm; i++) {
		const char *v = o->meta_value ? o->meta_value(f->m[i].name, f->m[i].value, o->arg)
					      : f->m[i].value;

		if (v)
			ktau__meta(out, f->m[i].name, v);
	}
	if (o->meta)
		o->meta(out, o->arg);
	fputs("</metadata>\n", out);
	for (i = 0; i < f->nf; i++) {
		const struct tfunc *x = &f->f[i];
		double excl = o->excl ? o->excl(f, i, o->arg) : x->excl;
		char *group = x->group;
		char *cpg = NULL;

		if (x->callpath) {
			/* TAU_CALLPATH|<group of the last element>. */
			const char *last = strrchr(x->name, '>');
			size_t j;

			for (j = 0; last && j < f->nf; j++)
				if (!f->f[j].callpath && !strcmp(f->f[j].name, last + 2))
					break;
			if (last && j < f->nf) {
				cpg = ktau__strfmt("TAU_CALLPATH|%s", f->f[j].group);
				if (cpg)
					group = cpg;
			} else if (!group_has(group, "TAU_CALLPATH")) {
				cpg = ktau__strfmt("TAU_CALLPATH|%s", group);
				if (cpg)
					group = cpg;
			}
		}
		fprintf(out, "\"%s\" %llu %llu %.16G %.16G 0 GROUP=\"%s\"\n", x->name, x->calls,
			x->subrs, excl, x->incl, group);
		free(cpg);
	}
	if (o->rows)
		o->rows(out, o->arg);
	fputs("0 aggregates\n", out);
	if (f->ne) {
		fprintf(out, "%zu userevents\n# eventname numevents max min mean sumsqr\n", f->ne);
		for (i = 0; i < f->ne; i++)
			fprintf(out, "\"%s\" %llu %.16G %.16G %.16G %.16G\n", f->e[i].name, f->e[i].n,
				f->e[i].max, f->e[i].min, f->e[i].mean, f->e[i].sumsqr);
	}
	return ktau__stream_err(out);
}
