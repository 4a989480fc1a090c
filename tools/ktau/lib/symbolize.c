// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: names of sampled addresses. Kernel code from /proc/kallsyms
 * (text symbols, sorted; the kernel shows their addresses only to readers
 * that kptr_restrict lets see them, as it does for the ip of a kernel
 * sample). User code from the ELF files a process has mapped, as its
 * /proc/PID/maps lists them, through the symbol tables of elfsym.c with
 * the load bias of each mapping (a file deleted or replaced since it was
 * mapped through /proc/PID/map_files, or not at all); code outside them (a JIT's) from the
 * process's perf map, /tmp/perf-PID.map; names are cached per address,
 * and so are source lines, which only libdwfl (dwname.c) gives.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "libktau.h"
#include "internal.h"
#include "sample-internal.h"
#include "user-internal.h"

/* ---- Kernel symbols ------------------------------------------------------ */

struct ksym {
	uint64_t addr;
	uint32_t name;		/* offset in the pool */
};

struct ktau_ksyms {
	struct ksym *v;
	size_t n;
	char *pool;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

void ktau_ksyms_free(struct ktau_ksyms *ks)
{
	if (!ks)
		return;
	free(ks->v);
	free(ks->pool);
	free(ks);
}

size_t ktau_ksyms_size(const struct ktau_ksyms *ks)
{
	return ks ? ks->n : 0;
}

int ktau_ksyms_parse(const char *text, size_t len, struct ktau_ksyms **out)
{
	const char *line = text, *end = text + len, *eol;
	char buf[1024], *p, *name, *mod;
	struct ktau_ksyms *ks;
	size_t cap = 0, pcap = 0, plen = 0, nlen, mlen;
	unsigned long long addr;
	int zero = 0;

	*out = NULL;
	ks = calloc(1, sizeof(*ks));
	if (!ks)
		return -ENOMEM;
	for (; line < end; line = eol + 1) {
		eol = memchr(line, '\n', end - line);
		if (!eol)
			eol = end;
		/* A copy of the line, NUL-terminated whatever the text holds. */
		if ((size_t)(eol - line) >= sizeof(buf))
			continue;
		memcpy(buf, line, eol - line);
		buf[eol - line] = '\0';
		/* "ffffffff81000000 T _stext" or "... t name\t[module]" */
		addr = strtoull(buf, &p, 16);
		if (p == buf || p[0] != ' ' || !p[1] || p[2] != ' ' || !strchr("tTwW", p[1]))
			continue;
		if (!addr) {
			zero++;
			continue;
		}
		name = p + 3;
		nlen = strcspn(name, "\t");
		mod = name[nlen] ? name + nlen + 1 : name + nlen;
		mlen = strlen(mod);
		if (!nlen || mlen > 128)
			continue;
		if (ks->n == cap) {
			struct ksym *nv;

			cap = cap ? cap * 2 : 4096;
			nv = realloc(ks->v, cap * sizeof(*nv));
			if (!nv)
				goto nomem;
			ks->v = nv;
		}
		if (!ks->pool || pcap - plen < nlen + mlen + 3) {
			char *np;

			pcap = (pcap ? pcap * 2 : 65536) + nlen + mlen + 3;
			np = realloc(ks->pool, pcap);
			if (!np)
				goto nomem;
			ks->pool = np;
		}
		if (plen > UINT32_MAX - 2048)
			break;
		ks->v[ks->n].addr = addr;
		ks->v[ks->n].name = (uint32_t)plen;
		memcpy(ks->pool + plen, name, nlen);
		plen += nlen;
		if (mlen) {
			ks->pool[plen++] = ' ';
			memcpy(ks->pool + plen, mod, mlen);
			plen += mlen;
		}
		ks->pool[plen++] = '\0';
		ks->n++;
		if (eol == end)
			break;
	}
	if (!ks->n) {
		ktau_ksyms_free(ks);
		return zero ? -ENODATA : -EBADMSG;
	}
	qsort(ks->v, ks->n, sizeof(*ks->v), cmp_ksym);
	*out = ks;
	return 0;
nomem:
	ktau_ksyms_free(ks);
	return -ENOMEM;
}

int ktau_ksyms_load(struct ktau_ksyms **out)
{
	char *text = NULL;
	size_t len = 0;
	int ret = ktau__slurp("/proc/kallsyms", &text, &len);

	*out = NULL;
	if (!ret)
		ret = ktau_ksyms_parse(text, len, out);
	free(text);
	/* Every address 0: the kernel hides them from this reader. */
	return ret == -ENODATA ? -EACCES : ret;
}

/* Farthest a function may reach past its symbol when no symbol follows. */
#define KSYM_LAST_REACH	(1u << 20)

const char *ktau_ksyms_name(const struct ktau_ksyms *ks, uint64_t addr)
{
	size_t lo = 0, hi, mid;

	if (!ks || !ks->n || addr < ks->v[0].addr)
		return NULL;
	hi = ks->n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ks->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == ks->n && addr - ks->v[lo - 1].addr >= KSYM_LAST_REACH)
		return NULL;
	/* Of the aliases at that address, the first by name offset. */
	for (mid = lo - 1; mid && ks->v[mid - 1].addr == ks->v[lo - 1].addr; mid--)
		;
	return ks->pool + ks->v[mid].name;
}

/* ---- User symbols ---------------------------------------------------------- */

#define UCACHE_MAX	(1u << 16)
#define REFRESH_NS	50000000ULL

struct ucache {
	uint64_t addr;
	char *name;		/* NULL: empty */
	int in_file;
	int line;		/* its source line; 0: none, -1: not looked up */
	char *file;		/* the line's file (NULL when none) */
};

/* A perf map's entry: JIT code [lo, hi) and its name. */
struct pmap_ent {
	uint64_t lo, hi;
	size_t order;		/* its line among those read */
	char *name;
};

struct ktau_usyms {
	pid_t pid;		/* -1: from text, never refreshed */
	struct kt_symbolizer *sym;
	void *dw;		/* libdwfl's modules (dwname.c); NULL: elfsym.c only */
	uint64_t refreshed_ns;
	char *maps;		/* the maps text its symbols were read from */
	size_t maps_len;
	struct ucache *cache;
	size_t ccap, cn;
	struct pmap_ent *pm;	/* sorted by lo */
	size_t npm;
};

/* ---- elfutils (dwname.c) ------------------------------------------------ */

static void dw_report(struct ktau_usyms *u)
{
	if (ktau__dw_report)
		u->dw = ktau__dw_report(u->pid ? u->pid : getpid(), u->dw);
}

static char *dw_name(struct ktau_usyms *u, uint64_t addr)
{
	return u->dw && ktau__dw_name ? ktau__dw_name(u->dw, addr) : NULL;
}

static int dw_line(struct ktau_usyms *u, uint64_t addr, char *file, size_t size)
{
	return u->dw && ktau__dw_line ? ktau__dw_line(u->dw, addr, file, size) : 0;
}

/* ---- Perf maps ------------------------------------------------------------ */

static void cache_clear(struct ktau_usyms *u);

static void pmap_clear(struct ktau_usyms *u)
{
	size_t i;

	for (i = 0; i < u->npm; i++)
		free(u->pm[i].name);
	free(u->pm);
	u->pm = NULL;
	u->npm = 0;
}

static int cmp_pmap(const void *a, const void *b)
{
	const struct pmap_ent *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * "START SIZE name" lines (hex, with or without 0x), as JITs and CPython's
 * -X perf write /tmp/perf-PID.map; later lines for the same start win (a
 * JIT that reuses code memory appends). Lines that are not so are skipped.
 */
int ktau_usyms_add_perf_map(struct ktau_usyms *u, const char *text, size_t len)
{
	const char *line = text, *end = text + len, *eol;
	struct pmap_ent *v;
	size_t cap = u->npm, i, k;
	char buf[4096], *p, *q;

	for (; line < end; line = eol + 1) {
		unsigned long long lo, size;
		size_t nl;

		eol = memchr(line, '\n', end - line);
		if (!eol)
			eol = end;
		if ((size_t)(eol - line) >= sizeof(buf))
			continue;
		memcpy(buf, line, eol - line);
		buf[eol - line] = '\0';
		errno = 0;
		lo = strtoull(buf, &p, 16);
		if (p == buf || *p != ' ')
			continue;
		size = strtoull(p + 1, &q, 16);
		if (q == p + 1 || *q != ' ' || errno || !size || lo + size < lo)
			continue;
		q++;
		nl = strcspn(q, "\r");
		if (!nl)
			continue;
		if (u->npm == cap) {
			cap = cap ? 2 * cap : 64;
			v = realloc(u->pm, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			u->pm = v;
		}
		u->pm[u->npm].name = strndup(q, nl < KT_NAME_MAX ? nl : KT_NAME_MAX);
		if (!u->pm[u->npm].name)
			return -ENOMEM;
		u->pm[u->npm].lo = lo;
		u->pm[u->npm].hi = lo + size;
		u->pm[u->npm].order = u->npm;
		u->npm++;
	}
	/* Sorted by start, then line; of equal starts the last line stays. */
	if (u->npm > 1) {
		qsort(u->pm, u->npm, sizeof(*u->pm), cmp_pmap);
		for (i = 1, k = 0; i < u->npm; i++) {
			if (u->pm[i].lo == u->pm[k].lo) {
				free(u->pm[k].name);
				u->pm[k] = u->pm[i];
			} else {
				u->pm[++k] = u->pm[i];
			}
		}
		u->npm = k + 1;
	}
	cache_clear(u);
	return 0;
}

static const char *pmap_find(const struct ktau_usyms *u, uint64_t addr)
{
	size_t lo = 0, hi = u->npm;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->pm[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < u->pm[lo - 1].hi ? u->pm[lo - 1].name : NULL;
}

/*
 * /tmp/perf-PID.map of a process, when it is a regular file of the
 * process's owner (or root), as perf reads it; none is not an error.
 */
static int pmap_load(struct ktau_usyms *u)
{
	char path[64], proc[32];
	struct stat st, pst;
	char *text = NULL;
	size_t len;
	ssize_t r;
	int fd, ret;
	pid_t pid = u->pid ? u->pid : getpid();

	pmap_clear(u);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || stat(proc, &pst) ||
	    (st.st_uid != pst.st_uid && st.st_uid != 0) || st.st_size > (64 << 20)) {
		close(fd);
		return 0;
	}
	len = (size_t)st.st_size;
	text = malloc(len + 1);
	if (!text) {
		close(fd);
		return -ENOMEM;
	}
	r = read(fd, text, len);
	close(fd);
	ret = r < 0 ? 0 : ktau_usyms_add_perf_map(u, text, (size_t)r);
	free(text);
	return ret;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void cache_clear(struct ktau_usyms *u)
{
	size_t i;

	for (i = 0; i < u->ccap; i++) {
		free(u->cache[i].name);
		free(u->cache[i].file);
		u->cache[i].name = u->cache[i].file = NULL;
	}
	u->cn = 0;
}

void ktau_usyms_free(struct ktau_usyms *u)
{
	if (!u)
		return;
	cache_clear(u);
	free(u->cache);
	ktau__sym_close(u->sym);
	if (u->dw && ktau__dw_end)
		ktau__dw_end(u->dw);
	free(u->maps);
	pmap_clear(u);
	free(u);
}

static int usyms_load(struct ktau_usyms *u, const char *maps, size_t len)
{
	struct kt_symbolizer *s = ktau__sym_open_maps(maps, len, u->pid);

	if (!s)
		return -ENOMEM;
	ktau__sym_close(u->sym);
	u->sym = s;
	cache_clear(u);
	return 0;
}

int ktau_usyms_parse_maps(const char *maps, size_t len, struct ktau_usyms **out)
{
	struct ktau_usyms *u = calloc(1, sizeof(*u));
	int ret;

	*out = NULL;
	if (!u)
		return -ENOMEM;
	u->pid = -1;
	ret = usyms_load(u, maps, len);
	if (ret) {
		free(u);
		return ret;
	}
	*out = u;
	return 0;
}

int ktau_usyms_refresh(struct ktau_usyms *u)
{
	char path[64], *text;
	size_t len;
	int ret;

	if (u->pid < 0)
		return 0;
	if (u->pid)
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)u->pid);
	else
		snprintf(path, sizeof(path), "/proc/self/maps");
	u->refreshed_ns = mono_ns();
	ret = ktau__slurp(path, &text, &len);
	if (ret)
		return ret == -ENOENT ? -ESRCH : ret;
	/*
	 * The same mappings: the files' symbols stay (reading them again is
	 * the cost of a refresh); the perf map may have grown, so the names
	 * are looked up again.
	 */
	if (u->maps && len == u->maps_len && !memcmp(text, u->maps, len)) {
		free(text);
		cache_clear(u);
		return pmap_load(u);
	}
	ret = usyms_load(u, text, len);
	if (ret) {
		free(text);
		return ret;
	}
	free(u->maps);
	u->maps = text;
	u->maps_len = len;
	dw_report(u);
	return pmap_load(u);
}

int ktau_usyms_open(pid_t pid, struct ktau_usyms **out)
{
	struct ktau_usyms *u;
	int ret;

	*out = NULL;
	if (pid < 0)
		return -EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->pid = pid;
	ret = ktau_usyms_refresh(u);
	if (ret) {
		ktau_usyms_free(u);
		return ret;
	}
	*out = u;
	return 0;
}

static struct ucache *cache_slot(struct ktau_usyms *u, uint64_t addr)
{
	size_t i;

	for (i = (addr * 0x9e3779b97f4a7c15ULL) >> 40 & (u->ccap - 1); u->cache[i].name;
	     i = (i + 1) & (u->ccap - 1))
		if (u->cache[i].addr == addr)
			return &u->cache[i];
	return &u->cache[i];
}

/* Room for one more name; a full cache of the largest size starts over. */
static int cache_reserve(struct ktau_usyms *u)
{
	struct ucache *old = u->cache, *c;
	size_t ocap = u->ccap, i;

	if (2 * (u->cn + 1) <= u->ccap)
		return 0;
	if (u->ccap >= UCACHE_MAX) {
		cache_clear(u);
		return 0;
	}
	u->ccap = u->ccap ? u->ccap * 2 : 1024;
	u->cache = calloc(u->ccap, sizeof(*u->cache));
	if (!u->cache) {
		u->cache = old;
		u->ccap = ocap;
		return -ENOMEM;
	}
	for (i = 0; i < ocap; i++) {
		if (!old[i].name)
			continue;
		c = cache_slot(u, old[i].addr);
		*c = old[i];
	}
	free(old);
	return 0;
}

int ktau_usyms_name(struct ktau_usyms *u, uint64_t addr, char *buf, size_t size)
{
	struct ucache *c;
	char *name;
	int in_file, due;

	if (!u) {
		snprintf(buf, size, "[unknown] 0x%llx", (unsigned long long)addr);
		return 0;
	}
	/*
	 * New code (dlopen(), exec) since the maps were read: read them
	 * again. An address found in no mapping before is looked up again
	 * then too: the maps read in the middle of an exec (the new program
	 * not mapped yet) or before it must not name it for good.
	 */
	due = u->pid >= 0 && mono_ns() - u->refreshed_ns >= REFRESH_NS;
	if (u->ccap) {
		c = cache_slot(u, addr);
		if (c->name && (c->in_file || !due)) {
			snprintf(buf, size, "%s", c->name);
			return c->in_file;
		}
	}
	if (due && !ktau__sym_covers(u->sym, addr))
		ktau_usyms_refresh(u);
	in_file = ktau__sym_covers(u->sym, addr);
	name = in_file ? dw_name(u, addr) : NULL;
	if (name) {
		/* named by libdwfl */
	} else if (in_file) {
		name = ktau__sym_name(u->sym, addr);
	} else if (pmap_find(u, addr)) {
		/* JIT code its perf map names. */
		name = strdup(pmap_find(u, addr));
		in_file = 1;
	} else if (asprintf(&name, "[unknown] 0x%llx", (unsigned long long)addr) < 0) {
		name = NULL;
	}
	if (!name) {
		snprintf(buf, size, "[unknown] 0x%llx", (unsigned long long)addr);
		return 0;
	}
	snprintf(buf, size, "%s", name);
	/* Its unknown entry, when the maps could not be read again. */
	c = u->ccap ? cache_slot(u, addr) : NULL;
	if (c && c->name) {
		free(c->name);
		free(c->file);
		u->cn--;
	} else if (cache_reserve(u)) {
		free(name);
		return in_file;
	}
	c = cache_slot(u, addr);
	c->addr = addr;
	c->name = name;
	c->in_file = in_file;
	c->line = -1;
	c->file = NULL;
	u->cn++;
	return in_file;
}

int ktau_usyms_srcline(struct ktau_usyms *u, uint64_t addr, char *file, size_t size)
{
	struct ucache *c = NULL;
	char name[16], src[4096];
	int in_file, line;

	if (size)
		file[0] = '\0';
	if (!u || !size)
		return 0;
	/* Its name first: the cache entry, and the maps read again if need be. */
	in_file = ktau_usyms_name(u, addr, name, sizeof(name));
	if (u->ccap) {
		c = cache_slot(u, addr);
		if (!c->name)
			c = NULL;
	}
	if (c && c->line >= 0) {
		line = c->line;
		if (line && strlen(c->file) >= size)
			return 0;
		if (line)
			memcpy(file, c->file, strlen(c->file) + 1);
		return line;
	}
	/* Only code in a mapped file has lines (not a perf map's JIT code). */
	line = in_file && ktau__sym_covers(u->sym, addr) ? dw_line(u, addr, src, sizeof(src)) : 0;
	if (c) {
		c->file = line ? strdup(src) : NULL;
		c->line = c->file || !line ? line : -1;
	}
	if (!line || strlen(src) >= size)
		return 0;
	memcpy(file, src, strlen(src) + 1);
	return line;
}

int ktau_sample_name(const struct ktau_sample_rec *s, struct ktau_usyms *u,
		     const struct ktau_ksyms *ks, const struct ktau_registry *reg,
		     char *buf, size_t size)
{
	const char *k;

	if (s->user)
		return ktau_usyms_name(u, s->ip, buf, size);
	k = s->ip ? ktau_ksyms_name(ks, s->ip) : NULL;
	if (k) {
		snprintf(buf, size, "%s", k);
		return 1;
	}
	snprintf(buf, size, "[kernel] %s", ktau_func_name(reg, s->id));
	return 0;
}
