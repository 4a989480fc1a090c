// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud flame: a flame graph as a static SVG (Debian has no flamegraph.pl),
 * drawn the way flamegraph.pl draws them: the root at the bottom, each
 * frame as wide as its value, children sorted by name, a tooltip (title)
 * per frame. Input: folded stacks ("a;b;c N"), a snapshot file (its kernel
 * profile, as ktaud export --folded writes it), or a TAU profile directory
 * (the callpaths of libktau's runtime or TAU, with the kernel routines
 * under the user routines that caused them).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ktaud.h"
#include "tauprofile.h"

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud flame [options] INPUT\n\n"
"Draw a flame graph, a static SVG any browser shows (a tooltip per frame).\n"
"INPUT is folded stacks (\"frame;frame;frame value\" lines: ktaud run, sample\n"
"or export --folded, perf script | stackcollapse-perf), a snapshot file (its\n"
"kernel profile: task, class, routine), or a TAU profile directory (its\n"
"callpaths, exclusive time: the kernel routines above the user routines\n"
"that caused them); - reads folded stacks from stdin.\n\n"
"  -o, --output FILE    the SVG (default flame.svg; an existing file that ktaud\n"
"                       did not write is kept)\n"
"      --title TEXT     the title (default: the input's name)\n"
"  -w, --width PX       the width (default 1200)\n"
"  -u, --unit NAME      what the values count (default: samples for folded\n"
"                       stacks, ns for snapshots, us for TAU profiles)\n"
"      --force          replace an existing FILE that ktaud did not write\n"
"  -h, --help           this help\n\n"
"Exit status: 0, 1 when the input cannot be read or the SVG written, 2 for a\n"
"usage error.\n");
}

struct fnode {
	char *name;
	double value;			/* its own and its children's */
	int kernel;			/* a kernel routine (drawn in blue) */
	struct fnode **kid;
	size_t nkid, capkid;
};

struct flame {
	struct fnode root;
	size_t depth;			/* deepest frame */
	size_t nlines;
};

static struct fnode *child(struct fnode *p, const char *name, size_t len)
{
	struct fnode *c, **v;
	size_t i;

	for (i = 0; i < p->nkid; i++)
		if (!strncmp(p->kid[i]->name, name, len) && !p->kid[i]->name[len])
			return p->kid[i];
	if (p->nkid == p->capkid) {
		size_t cap = p->capkid ? 2 * p->capkid : 4;

		v = realloc(p->kid, cap * sizeof(*v));
		if (!v)
			return NULL;
		p->kid = v;
		p->capkid = cap;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->name = strndup(name, len);
	if (!c->name) {
		free(c);
		return NULL;
	}
	p->kid[p->nkid++] = c;
	return c;
}

/* One stack: frames separated by sep (";" or " => "), its value. */
static int add_stack(struct flame *fl, const char *stack, const char *sep, double value,
		     int kernel_leaf)
{
	struct fnode *n = &fl->root;
	size_t depth = 0, sl = strlen(sep);
	const char *p = stack, *e;

	if (!(value > 0))
		return 0;
	fl->root.value += value;
	for (;;) {
		e = strstr(p, sep);
		n = child(n, p, e ? (size_t)(e - p) : strlen(p));
		if (!n)
			return -ENOMEM;
		n->value += value;
		depth++;
		if (!e)
			break;
		p = e + sl;
	}
	if (kernel_leaf)
		n->kernel = 1;
	if (depth > fl->depth)
		fl->depth = depth;
	fl->nlines++;
	return 0;
}

static void free_node(struct fnode *n, int self)
{
	size_t i;

	for (i = 0; i < n->nkid; i++)
		free_node(n->kid[i], 1);
	free(n->kid);
	free(n->name);
	if (self)
		free(n);
}

/* Folded text, in place. A line without a value is an error. */
static int parse_folded(struct flame *fl, char *text, const char *what, int kernel)
{
	char *line, *save = NULL, *sp, *end;
	unsigned long lno = 0;
	double v;
	int ret;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lno++;
		line[strcspn(line, "\r")] = '\0';
		if (!*line || *line == '#')
			continue;
		sp = strrchr(line, ' ');
		errno = 0;
		v = sp ? strtod(sp + 1, &end) : 0;
		if (!sp || sp == line || end == sp + 1 || *end || errno || v < 0 || !isfinite(v)) {
			err_msg("%s:%lu: not a folded stack (\"frame;frame value\"): %.60s", what,
				lno, line);
			return EX_KT_FAIL;
		}
		*sp = '\0';
		/* perf's convention: kernel frames end in _[k]. */
		ret = add_stack(fl, line, ";", v, kernel || (sp - line > 4 && !strcmp(sp - 4, "_[k]")));
		if (ret)
			return report(ret, "flame");
	}
	return 0;
}

/*
 * A TAU profile directory: per thread its callpaths' exclusive times, and
 * the roots' own; a thread without callpaths gives its flat rows. With
 * more than one thread, each is a frame "node N thread T" over its own.
 */
static int load_tau(struct flame *fl, const char *dir)
{
	struct tprofile p;
	struct tmetric *m;
	char pre[64], *stack;
	size_t i, j, k;
	int ret = 0;

	memset(&p, 0, sizeof(p));
	if (read_profile(dir, &p)) {
		tprofile_free(&p);
		return EX_KT_FAIL;
	}
	m = &p.m[p.time];
	for (i = 0; !ret && i < m->n; i++) {
		const struct tfile *f = &m->files[i];
		int paths = 0;

		for (j = 0; j < f->nf; j++)
			paths |= f->f[j].callpath;
		pre[0] = '\0';
		if (m->n > 1)
			snprintf(pre, sizeof(pre), "node %d thread %d => ", f->node, f->thread);
		for (j = 0; !ret && j < f->nf; j++) {
			const struct tfunc *fn = &f->f[j];
			int root = 0;

			if (fn->group && group_has(fn->group, "KERNEL_GROUPS"))
				continue;
			/* With callpaths, a flat row counts only as a root. */
			if (paths && !fn->callpath) {
				size_t l = strlen(fn->name);

				for (k = 0; k < f->nf && !root; k++)
					root = f->f[k].callpath && !strncmp(f->f[k].name, fn->name, l) &&
					       !strncmp(f->f[k].name + l, " => ", 4);
				if (!root)
					continue;
			}
			if (asprintf(&stack, "%s%s", pre, fn->name) < 0)
				return report(-ENOMEM, "flame");
			ret = add_stack(fl, stack, " => ", fn->excl,
					fn->group && (group_has(fn->group, "TAU_KERNEL_MERGE") ||
						      is_kernel_group(fn->group)));
			free(stack);
			if (ret)
				ret = report(ret, "flame");
		}
	}
	tprofile_free(&p);
	return ret;
}

/* The whole of a file (or stdin), NUL-terminated. */
static int slurp(const char *path, char **out, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	size_t cap = 1 << 16, n = 0, r;
	char *buf, *b;

	if (!f)
		return -errno;
	buf = malloc(cap);
	while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += r;
		if (cap - n - 1 == 0) {
			b = realloc(buf, cap * 2);
			if (!b) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = b;
			cap *= 2;
		}
	}
	if (f != stdin)
		fclose(f);
	if (!buf)
		return -ENOMEM;
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
		}
	}
}

/* flamegraph.pl's palettes: warm for user code, blue for the kernel. */
static void color(const char *name, int kernel, int *r, int *g, int *b)
{
	unsigned int h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	if (kernel) {
		*r = 50 + (int)(h % 60);
		*g = 80 + (int)((h >> 8) % 80);
		*b = 190 + (int)((h >> 16) % 60);
	} else {
		*r = 205 + (int)(h % 50);
		*g = (int)((h >> 8) % 230);
		*b = (int)((h >> 16) % 55);
	}
}

struct draw {
	FILE *f;
	double scale;			/* px per unit */
	double min_px;
	int height, frame_h;
	const char *unit;
	double total;
	size_t drawn, hidden;
};

static int cmp_kid(const void *a, const void *b)
{
	return strcmp((*(struct fnode *const *)a)->name, (*(struct fnode *const *)b)->name);
}

static void draw(struct draw *d, struct fnode *n, double x, size_t depth)
{
	double w = n->value * d->scale, cx = x;
	int y = d->height - 30 - (int)(depth + 1) * d->frame_h, r, g, b;
	size_t i, chars;

	if (w < d->min_px) {
		d->hidden++;
		return;
	}
	color(n->name ? n->name : "all", n->kernel, &r, &g, &b);
	fprintf(d->f, "<g><title>");
	xml_text(d->f, n->name ? n->name : "all");
	fprintf(d->f, " (%.6g %s, %.2f%%)</title><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
		"height=\"%d\" fill=\"rgb(%d,%d,%d)\" rx=\"2\" ry=\"2\"/>", n->value, d->unit,
		d->total > 0 ? 100.0 * n->value / d->total : 0.0, x, y, w, d->frame_h - 1, r, g, b);
	/* The label: what fits at about 7 px a character. */
	chars = w > 21 ? (size_t)((w - 6) / 7) : 0;
	if (chars >= 3) {
		const char *s = n->name ? n->name : "all";
		char label[512];

		if (strlen(s) <= chars || chars >= sizeof(label)) {
			snprintf(label, sizeof(label), "%s", s);
		} else {
			snprintf(label, sizeof(label), "%.*s..", (int)(chars - 2), s);
		}
		fprintf(d->f, "<text x=\"%.1f\" y=\"%d\">", x + 3, y + d->frame_h - 5);
		xml_text(d->f, label);
		fputs("</text>", d->f);
	}
	fputs("</g>\n", d->f);
	d->drawn++;
	if (n->nkid > 1)
		qsort(n->kid, n->nkid, sizeof(*n->kid), cmp_kid);
	for (i = 0; i < n->nkid; i++) {
		draw(d, n->kid[i], cx, depth + 1);
		cx += n->kid[i]->value * d->scale;
	}
}

static int write_svg(const char *path, const struct flame *fl, const char *title,
		     const char *unit, int width)
{
	struct draw d = { .frame_h = 16, .min_px = 0.1, .unit = unit };
	struct out_file of;
	int ret = out_file_open(&of, path);

	if (ret)
		return ret;
	d.f = of.f;
	d.height = (int)(fl->depth + 1) * d.frame_h + 70;
	d.total = fl->root.value;
	d.scale = fl->root.value > 0 ? (width - 20) / fl->root.value : 0;
	fprintf(d.f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" font-family=\"Verdana, sans-serif\" "
		"font-size=\"12\">\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
		"fill=\"#f8f8f8\"/>\n<text x=\"%d\" y=\"24\" text-anchor=\"middle\" "
		"font-size=\"17\">", width, d.height, width, d.height, width, d.height, width / 2);
	xml_text(d.f, title);
	fputs("</text>\n", d.f);
	draw(&d, (struct fnode *)&fl->root, 10, 0);
	fprintf(d.f, "<text x=\"10\" y=\"%d\" font-size=\"11\">%zu frames, %.6g %s in all"
		"%s</text>\n</svg>\n", d.height - 10, d.drawn, d.total, unit,
		d.hidden ? "; frames narrower than 0.1 px left out" : "");
	return out_file_close(&of, ferror(d.f) ? -EIO : 0, "the flame graph");
}

int cmd_flame(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "title", required_argument, NULL, 'T' },
		{ "width", required_argument, NULL, 'w' },
		{ "unit", required_argument, NULL, 'u' },
		{ "force", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = "flame.svg", *title = NULL, *unit = NULL, *in;
	struct flame fl;
	unsigned long width = 1200;
	int kernel = 0;
	char *text = NULL;
	struct stat st;
	size_t len = 0;
	int c, ret;

	while ((c = getopt_long(argc, argv, "o:tw:u:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 't': return moved_short("flame", c, "--title");
		case 'T': title = optarg; break;
		case 'w':
			if (parse_uint(optarg, &width) || width < 100 || width > 100000)
				return usage_err("flame", "-w needs a width of 100 to 100000 px, "
						 "not '%s'", optarg);
			break;
		case 'u': unit = optarg; break;
		case 'F': out_force = 1; break;
		case 'h': help(stdout); return EX_KT_OK;
		default: return usage_err("flame", "bad option");
		}
	}
	if (argc - optind != 1)
		return usage_err("flame", "one input is needed: ktaud flame [options] INPUT");
	in = argv[optind];
	memset(&fl, 0, sizeof(fl));
	if (strcmp(in, "-") && !stat(in, &st) && S_ISDIR(st.st_mode)) {
		ret = load_tau(&fl, in);
		unit = unit ? unit : "us";
	} else {
		struct ktau_registry *reg = NULL;
		struct ktau_snap *snap = NULL;

		ret = slurp(in, &text, &len);
		if (ret) {
			err_msg("cannot read %s: %s", in, strerror(-ret));
			return EX_KT_FAIL;
		}
		if (!ktau_snap_parse_file(text, len, &snap, &reg)) {
			char *folded = NULL;
			size_t flen = 0;
			FILE *mf = open_memstream(&folded, &flen);

			ret = mf ? ktau_write_folded(mf, snap, reg, 0) : -ENOMEM;
			if (mf && fclose(mf) && !ret)
				ret = -ENOMEM;
			ktau_snap_free(snap);
			ktau_registry_free(reg);
			free(text);
			text = folded;
			if (ret) {
				free(text);
				return report(ret, "flame");
			}
			unit = unit ? unit : "ns";
			kernel = 1;
		} else {
			unit = unit ? unit : "samples";
		}
		ret = parse_folded(&fl, text, in, kernel);
		free(text);
	}
	if (!ret && !(fl.root.value > 0)) {
		err_msg("%s: nothing to draw (no stack with a value above 0)", in);
		ret = EX_KT_FAIL;
	}
	if (!ret)
		ret = write_svg(out, &fl, title ? title : in, unit, (int)width);
	free_node(&fl.root, 0);
	return ret;
}
