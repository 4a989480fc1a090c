// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: the merged TAU profile of a thread of the user-level runtime.
 *
 * Rows, in this order (tau-profile-format.md, "the KTAU convention"):
 *
 *   user routines          "compute"                 TAU_USER
 *   [outside timers]       (when kernel time was charged while no timer ran)
 *   user callpaths         "main => compute"          TAU_CALLPATH|TAU_USER
 *   kernel routines        "write"                    TAU_KERNEL_MERGE|KTAU_SYSCALL
 *   kernel groups          "SYSCALL", "SCHED", ...    KERNEL_GROUPS|TAU_KERNEL_MERGE
 *   kernel under user      "main => compute => SYSCALL"
 *                                          TAU_CALLPATH|KERNEL_GROUPS|TAU_KERNEL_MERGE
 *                          "main => compute => write"
 *                                          TAU_CALLPATH|TAU_KERNEL_MERGE|KTAU_SYSCALL
 *
 * Kernel routines and groups are named as the kernel profile writer
 * (tau.c) names them: routines through the registry, groups by their TAU
 * class. The flat kernel entries are the sums of their callpath children,
 * so that every callpath is a part of its flat entry.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

#include "internal.h"
#include "user-internal.h"

/* ---- Names ---------------------------------------------------------- */

/* A set of strings (open addressing), for unique names in a file. */
struct nameset {
	const char **v;
	size_t cap, n;
};

static uint32_t hash_s(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static int ns_has(const struct nameset *ns, const char *s)
{
	size_t i;

	if (!ns->cap)
		return 0;
	for (i = hash_s(s) & (ns->cap - 1); ns->v[i]; i = (i + 1) & (ns->cap - 1))
		if (!strcmp(ns->v[i], s))
			return 1;
	return 0;
}

/* Add s (kept by pointer); -ENOMEM. */
static int ns_add(struct nameset *ns, const char *s)
{
	size_t i;

	if (2 * (ns->n + 1) > ns->cap) {
		struct nameset big = { .cap = ns->cap ? ns->cap * 2 : 64 };

		big.v = calloc(big.cap, sizeof(*big.v));
		if (!big.v)
			return -ENOMEM;
		for (i = 0; i < ns->cap; i++)
			if (ns->v[i])
				ns_add(&big, ns->v[i]);
		free(ns->v);
		*ns = big;
	}
	for (i = hash_s(s) & (ns->cap - 1); ns->v[i]; i = (i + 1) & (ns->cap - 1))
		;
	ns->v[i] = s;
	ns->n++;
	return 0;
}

/* A unique variant of name in ns: name, "name [tag]", "name [2]", ... */
static char *unique(struct nameset *ns, const char *name, const char *tag)
{
	char *s = NULL;
	int k;

	if (!ns_has(ns, name)) {
		s = strdup(name);
	} else {
		if (tag) {
			if (asprintf(&s, "%s [%s]", name, tag) < 0)
				s = NULL;
			else if (ns_has(ns, s)) {
				free(s);
				s = NULL;
			}
		}
		for (k = 2; !s; k++) {
			if (asprintf(&s, "%s [%d]", name, k) < 0)
				return NULL;
			if (ns_has(ns, s)) {
				free(s);
				s = NULL;
			}
		}
	}
	if (s && ns_add(ns, s)) {
		free(s);
		s = NULL;
	}
	return s;
}

char **ktau__timer_names(uint32_t *np)
{
	struct kt_symbolizer *sym = NULL;
	struct ktau_timer *t;
	char **names;
	uint32_t n, i;

	ktau__lock();
	n = ktau__ntimers();
	ktau__unlock();
	*np = n;
	if (!n)
		return NULL;
	/* Addresses of -finstrument-functions: from the symbol tables, once. */
	for (i = 0; i < n; i++) {
		char *name;

		ktau__lock();
		t = ktau__timer_by_id(i);
		ktau__unlock();
		if (!t || !t->is_addr || t->name)
			continue;
		if (!sym)
			sym = ktau__sym_open();
		name = ktau__sym_name(sym, t->addr);
		ktau__lock();
		if (!t->name) {
			t->name = name;
			name = NULL;
		}
		ktau__unlock();
		free(name);
	}
	ktau__sym_close(sym);
	names = calloc(n, sizeof(*names));
	if (!names)
		return NULL;
	ktau__lock();
	for (i = 0; i < n; i++) {
		t = ktau__timer_by_id(i);
		if (t && t->name)
			names[i] = strdup(t->name);
		else if (asprintf(&names[i], "timer_%u", i) < 0)
			names[i] = NULL;
	}
	ktau__unlock();
	return names;
}

void ktau__names_free(char **names, uint32_t n)
{
	uint32_t i;

	if (!names)
		return;
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* ---- Rows ------------------------------------------------------------ */

struct rowbuf {
	struct ktau__row *v;
	size_t n, cap;
	int err;
};

/* Append a row; name and group are taken over (freed on error). */
static void row_add(struct rowbuf *rb, char *name, char *group, uint64_t calls, uint64_t subrs,
		    uint64_t excl, uint64_t incl)
{
	if (!rb->err && rb->n == rb->cap) {
		size_t cap = rb->cap ? rb->cap * 2 : 64;
		struct ktau__row *v = realloc(rb->v, cap * sizeof(*v));

		if (v) {
			rb->v = v;
			rb->cap = cap;
		} else {
			rb->err = -ENOMEM;
		}
	}
	if (rb->err || !name || !group) {
		rb->err = rb->err ? rb->err : -ENOMEM;
		free(name);
		free(group);
		return;
	}
	rb->v[rb->n++] = (struct ktau__row){ name, group, calls, subrs, excl > incl ? incl : excl, incl };
}

void ktau__rows_free(struct ktau__row *rows, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(rows[i].name);
		free(rows[i].group);
	}
	free(rows);
}

/* Timer @id is no longer timed (KTAU_THROTTLE). */
static int throttled(uint32_t id)
{
	const struct ktau_timer *t = ktau__timer_by_id(id);

	return t && (__atomic_load_n(&t->untimed, __ATOMIC_RELAXED) & KT_THROTTLED);
}

static const char *class_of(uint32_t group)
{
	return ktau_group_class(group < KTAU_LIB_NR_GROUPS ? (int)group : -1);
}

/* Kernel routines of a thread: the distinct IDs charged, with sums. */
struct kroutine {
	uint32_t id, group;
	char *name;
	struct kt_kcounts sum;
};

static int cmp_kroutine(const void *a, const void *b)
{
	const struct kroutine *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static struct kroutine *kr_find(struct kroutine *v, size_t n, uint32_t id)
{
	struct kroutine key = { .id = id };

	return n ? bsearch(&key, v, n, sizeof(*v), cmp_kroutine) : NULL;
}

int ktau__rows(const struct kt_tsnap *ts, char *const *names, uint32_t nnames,
	       const struct ktau_registry *reg, struct ktau__row **rowsp, size_t *nrowsp)
{
	const struct kt_data *d = &ts->d;
	const struct kt_flat *flat = KT_ITEMS(d->flat, struct kt_flat);
	const struct kt_node *nodes = KT_ITEMS(d->nodes, struct kt_node);
	const struct kt_kent *kents = KT_ITEMS(d->kents, struct kt_kent);
	struct kt_kcounts gsum[KTAU_SHARED_GROUPS];
	struct nameset ns = { 0 };
	struct rowbuf rb = { 0 };
	struct kroutine *kr = NULL;
	char **disp = NULL, **path = NULL, buf[KT_NAME_MAX + 32];
	size_t nkr = 0, i, j;
	uint32_t id, nid;
	int has_other = 0, outside = 0, g;

	*rowsp = NULL;
	*nrowsp = 0;
	memset(gsum, 0, sizeof(gsum));
	disp = calloc(d->nflat ? d->nflat : 1, sizeof(*disp));
	path = calloc(d->nnodes, sizeof(*path));
	if (!disp || !path) {
		rb.err = -ENOMEM;
		goto out;
	}

	/* Kernel names first: a user routine gives way to them. */
	for (g = 0; g < KTAU_LIB_NR_GROUPS + 1; g++)
		ns_add(&ns, ktau_group_class(g < KTAU_LIB_NR_GROUPS ? g : -1));
	ns_add(&ns, KT_OUTSIDE_NAME);
	if (d->had_page) {
		for (i = 0; i < d->nkents; i++) {
			if (kr_find(kr, nkr, kents[i].id))
				continue;
			struct kroutine *nk = realloc(kr, (nkr + 1) * sizeof(*kr));

			if (!nk) {
				rb.err = -ENOMEM;
				goto out;
			}
			kr = nk;
			kr[nkr] = (struct kroutine){ .id = kents[i].id, .group = kents[i].group };
			nkr++;
			qsort(kr, nkr, sizeof(*kr), cmp_kroutine);
		}
		for (i = 0; i < nkr; i++) {
			ktau__clean_name(buf, KT_NAME_MAX, ktau_func_name(reg, kr[i].id));
			if (ns_has(&ns, buf)) {
				size_t l = strlen(buf);

				snprintf(buf + l, sizeof(buf) - l, " [id %u]", kr[i].id);
			}
			kr[i].name = unique(&ns, buf, NULL);
			if (!kr[i].name) {
				rb.err = -ENOMEM;
				goto out;
			}
		}
	}
	for (id = 0; id < d->nflat; id++) {
		if (!flat[id].calls)
			continue;
		ktau__clean_name(buf, KT_NAME_MAX, id < nnames && names[id] ? names[id] : "?");
		disp[id] = unique(&ns, buf, "user");
		if (!disp[id]) {
			rb.err = -ENOMEM;
			goto out;
		}
	}

	/* Paths of the nodes that are written. */
	for (nid = 1; nid < d->nnodes; nid++) {
		const struct kt_node *n = &nodes[nid];

		if (!n->calls || n->timer >= d->nflat || !disp[n->timer])
			continue;
		if (n->parent && !path[n->parent])
			continue;	/* cannot happen: a parent has its child's calls */
		path[nid] = n->parent ? ktau__strfmt("%s => %s", path[n->parent], disp[n->timer])
				      : strdup(disp[n->timer]);
		if (!path[nid]) {
			rb.err = -ENOMEM;
			goto out;
		}
	}
	if (d->had_page && d->outside.calls) {
		for (g = 0; g < KTAU_SHARED_GROUPS; g++)
			outside |= nodes[0].kg[g].count != 0;
		outside |= nodes[0].kfirst != KT_NONE;
		if (outside) {
			path[0] = strdup(KT_OUTSIDE_NAME);
			if (!path[0]) {
				rb.err = -ENOMEM;
				goto out;
			}
		}
	}

	/* User routines, then callpaths. */
	/* A throttled routine keeps its calls until then (TAU's rule). */
	for (id = 0; id < d->nflat; id++)
		if (disp[id])
			row_add(&rb, strdup(disp[id]),
				strdup(throttled(id) ? "TAU_USER|TAU_THROTTLED" : "TAU_USER"),
				flat[id].calls, flat[id].subrs, flat[id].excl, flat[id].incl);
	if (outside)
		row_add(&rb, strdup(KT_OUTSIDE_NAME), strdup("TAU_USER"), d->outside.calls, 0,
			d->outside.excl, d->outside.incl);
	/* A callpath's group is its last element's. */
	for (nid = 1; nid < d->nnodes; nid++)
		if (path[nid] && nodes[nid].parent)
			row_add(&rb, strdup(path[nid]),
				strdup(throttled(nodes[nid].timer) ? "TAU_CALLPATH|TAU_USER|TAU_THROTTLED" :
				       "TAU_CALLPATH|TAU_USER"),
				nodes[nid].calls, nodes[nid].subrs, nodes[nid].excl, nodes[nid].incl);
	if (!d->had_page)
		goto out;

	/* Kernel sums over the nodes written. */
	for (nid = 0; nid < d->nnodes; nid++) {
		if (!path[nid])
			continue;
		for (g = 0; g < KTAU_SHARED_GROUPS; g++) {
			gsum[g].count += nodes[nid].kg[g].count;
			gsum[g].incl += nodes[nid].kg[g].incl;
			gsum[g].excl += nodes[nid].kg[g].excl;
		}
		for (j = nodes[nid].kfirst; j != KT_NONE && j < d->nkents; j = kents[j].next) {
			struct kroutine *k = kr_find(kr, nkr, kents[j].id);

			if (k) {
				k->sum.count += kents[j].c.count;
				k->sum.incl += kents[j].c.incl;
				k->sum.excl += kents[j].c.excl;
			}
		}
	}
	for (g = KTAU_LIB_NR_GROUPS; g < KTAU_SHARED_GROUPS; g++)
		has_other |= gsum[g].count != 0;
	for (i = 0; i < nkr; i++) {
		if (!kr[i].sum.count)
			continue;
		row_add(&rb, strdup(kr[i].name),
			ktau__strfmt("TAU_KERNEL_MERGE|KTAU_%s", class_of(kr[i].group)),
			kr[i].sum.count, 0, ktau__conv(kr[i].sum.excl, d->mult, d->shift),
			ktau__conv(kr[i].sum.incl, d->mult, d->shift));
	}
	for (g = 0; g < KTAU_LIB_NR_GROUPS; g++)
		row_add(&rb, strdup(class_of(g)), strdup("KERNEL_GROUPS|TAU_KERNEL_MERGE"),
			gsum[g].count, 0, ktau__conv(gsum[g].excl, d->mult, d->shift),
			ktau__conv(gsum[g].incl, d->mult, d->shift));
	if (has_other) {
		struct kt_kcounts o = { 0, 0, 0 };

		for (g = KTAU_LIB_NR_GROUPS; g < KTAU_SHARED_GROUPS; g++) {
			o.count += gsum[g].count;
			o.incl += gsum[g].incl;
			o.excl += gsum[g].excl;
		}
		row_add(&rb, strdup(class_of(KTAU_LIB_NR_GROUPS)),
			strdup("KERNEL_GROUPS|TAU_KERNEL_MERGE"), o.count, 0,
			ktau__conv(o.excl, d->mult, d->shift), ktau__conv(o.incl, d->mult, d->shift));
	}
	/* Kernel groups and routines under the user routine that incurred them. */
	for (nid = 0; nid < d->nnodes; nid++) {
		struct kt_kcounts o = { 0, 0, 0 };

		if (!path[nid])
			continue;
		for (g = 0; g < KTAU_SHARED_GROUPS; g++) {
			const struct kt_kcounts *c = &nodes[nid].kg[g];

			if (g >= KTAU_LIB_NR_GROUPS) {
				o.count += c->count;
				o.incl += c->incl;
				o.excl += c->excl;
				continue;
			}
			if (!c->count)
				continue;
			row_add(&rb, ktau__strfmt("%s => %s", path[nid], class_of(g)),
				strdup("TAU_CALLPATH|KERNEL_GROUPS|TAU_KERNEL_MERGE"), c->count, 0,
				ktau__conv(c->excl, d->mult, d->shift),
				ktau__conv(c->incl, d->mult, d->shift));
		}
		if (o.count)
			row_add(&rb, ktau__strfmt("%s => %s", path[nid], class_of(KTAU_LIB_NR_GROUPS)),
				strdup("TAU_CALLPATH|KERNEL_GROUPS|TAU_KERNEL_MERGE"), o.count, 0,
				ktau__conv(o.excl, d->mult, d->shift),
				ktau__conv(o.incl, d->mult, d->shift));
		for (j = nodes[nid].kfirst; j != KT_NONE && j < d->nkents; j = kents[j].next) {
			const struct kroutine *k = kr_find(kr, nkr, kents[j].id);
			const struct kt_kcounts *c = &kents[j].c;

			if (!k || !c->count)
				continue;
			row_add(&rb, ktau__strfmt("%s => %s", path[nid], k->name),
				ktau__strfmt("TAU_CALLPATH|TAU_KERNEL_MERGE|KTAU_%s", class_of(k->group)),
				c->count, 0, ktau__conv(c->excl, d->mult, d->shift),
				ktau__conv(c->incl, d->mult, d->shift));
		}
	}
out:
	for (i = 0; i < nkr; i++)
		free(kr[i].name);
	free(kr);
	for (id = 0; disp && id < d->nflat; id++)
		free(disp[id]);
	free(disp);
	for (nid = 0; path && nid < d->nnodes; nid++)
		free(path[nid]);
	free(path);
	free(ns.v);
	if (rb.err) {
		ktau__rows_free(rb.v, rb.n);
		return rb.err;
	}
	*rowsp = rb.v;
	*nrowsp = rb.n;
	return 0;
}

/* ---- The file ---------------------------------------------------------- */

static const char *reg_reason(int err)
{
	switch (-err) {
	case 0: return "registered";
	case ECANCELED: return "not registered: switched off (KTAU_SHARED=0 or ktau_user_shared)";
	case ENOENT: return "not registered: no KTAU in this kernel";
	case ENOTTY: return "not registered: the kernel's KTAU has no shared pages (ABI < 1.1)";
	case EPROTO: return "not registered: KTAU ABI mismatch";
	default: return "not registered";
	}
}

/*
 * TAU's own metadata of a run, as TAU writes it: Starting Timestamp (us
 * since the epoch, when the runtime was first used), Executable, Command
 * Line (arguments joined by spaces), CWD.
 */
static void run_meta(FILE *f)
{
	char buf[4096];
	ssize_t n;
	int fd;

	if (ktau__start_us())
		ktau__meta_u64(f, "Starting Timestamp", (unsigned long long)ktau__start_us());
	n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		ktau__meta(f, "Executable", buf);
	}
	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0) {
		ssize_t i;

		while (n > 0 && !buf[n - 1])
			n--;
		for (i = 0; i < n; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[n] = '\0';
		ktau__meta(f, "Command Line", buf);
	}
	if (getcwd(buf, sizeof(buf)))
		ktau__meta(f, "CWD", buf);
}

int ktau__write_rows(FILE *f, const struct kt_tsnap *ts, const struct ktau__row *rows,
		     size_t n, int node, int thread)
{
	const struct kt_data *d = &ts->d;
	struct utsname u;
	char comm[sizeof(ts->comm) + 1], rule[96];
	size_t i;

	if (uname(&u))
		memset(&u, 0, sizeof(u));
	fprintf(f, "%zu templated_functions_MULTI_TIME\n", n);
	fputs("# Name Calls Subrs Excl Incl ProfileCalls # <metadata>", f);
	ktau__meta(f, "Metric Name", "TIME");
	ktau__meta_u64(f, "pid", (unsigned long long)ts->pid);
	ktau__meta_u64(f, "tid", (unsigned long long)ts->tid);
	ktau__clean_name(comm, sizeof(comm), ts->comm[0] ? ts->comm : "?");
	ktau__meta(f, "comm", comm);
	ktau__meta(f, "Hostname", u.nodename[0] ? u.nodename : "unknown");
	ktau__meta(f, "OS Release", u.release[0] ? u.release : "unknown");
	ktau__meta_u64(f, "Node", (unsigned long long)node);
	ktau__meta_u64(f, "Thread", (unsigned long long)thread);
	run_meta(f);
	ktau__meta(f, "KTAU Merge",
		   "libktau user runtime: the thread's kernel routines, read from the KTAU shared "
		   "page at every timer start and stop, are charged to the user routine on top "
		   "of the stack (callpath children), and taken out of its exclusive time");
	ktau__meta(f, "KTAU Shared Page", d->had_page ? "registered" : reg_reason(ts->reg_err));
	ktau__meta(f, "KTAU Outside Timers",
		   KT_OUTSIDE_NAME " is the thread outside any user timer (before the first, "
		   "between and after the outermost ones): kernel routines that ended then");
	ktau__meta(f, "KTAU Thread State",
		   ts->state == KT_FINISHED ? "exited" :
		   ts->running ? "running at write: open timers closed at the time of writing" :
		   "running at write");
	ktau__meta_u64(f, "KTAU Callpath Depth", (unsigned long long)ktau__callpath_depth());
	ktau__meta_u64(f, "KTAU Events", d->events);
	ktau__meta_u64(f, "KTAU Page Reads", d->page_reads);
	ktau__meta_u64(f, "KTAU Dropped Events", d->dropped);
	ktau__meta_u64(f, "KTAU Unmatched Stops", d->unmatched);
	ktau__meta_u64(f, "KTAU Busy Page Reads", d->sync_fail);
	ktau__meta_u64(f, "KTAU Clock Adjust ns", d->clock_adjust);
	ktau__meta_u64(f, "KTAU Kernel Charged ns", ktau__conv(d->kraw_total, d->mult, d->shift));
	ktau__meta_u64(f, "KTAU Kernel Uncharged ns", ktau__conv(d->absorbed, d->mult, d->shift));
	ktau__meta_u64(f, "KTAU Kernel Unlisted Routines", d->unlisted);
	ktau__throttle_rule(rule, sizeof(rule));
	ktau__meta(f, "KTAU Throttle", rule);
	ktau__meta_u64(f, "KTAU Throttled Calls", d->throttled_calls);
	ktau__meta(f, "KTAU Select File", ktau__select_file() ?: "none");
	ktau__meta_u64(f, "KTAU Excluded Routines", ktau__select_excluded());
	fputs("</metadata>\n", f);
	for (i = 0; i < n; i++)
		fprintf(f, "\"%s\" %llu %llu %.16G %.16G 0 GROUP=\"%s\"\n", rows[i].name,
			(unsigned long long)rows[i].calls, (unsigned long long)rows[i].subrs,
			rows[i].excl / 1000.0, rows[i].incl / 1000.0, rows[i].group);
	fputs("0 aggregates\n", f);
	return ktau__stream_err(f);
}
