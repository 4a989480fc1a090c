// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: names of code addresses (for -finstrument-functions), from the
 * ELF symbol tables of the objects loaded in the process.
 *
 * The objects and their load bias come from dl_iterate_phdr() (the main
 * program is read through /proc/self/exe; a PIE's or a library's symbol
 * values are relative to its bias). Each file is mapped read-only and its
 * .symtab (or, when stripped, .dynsym) is read with <elf.h> structures:
 * the section headers, one symbol table and its string table, every
 * offset and size checked against the file. That is all that is needed,
 * so there is no libelf dependency (which would complicate the static
 * guest binaries); dladdr() would not do, as it sees only exported
 * symbols (.dynsym), not static functions or those of a non-PIE program.
 * Addresses without a symbol are named "<object>+0x<offset>", or
 * "0x<address>" outside any object. Separate debug files (debuglink) are
 * not read.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "user-internal.h"
#include "sample-internal.h"
#include "elf-internal.h"

#define MAX_SEGS	16

struct kt_obj {
	uintptr_t bias;
	char *path;		/* as named, " (deleted)" kept */
	char *file;		/* the file read; NULL: none that is this object */
	unsigned long long inode;	/* from the maps: two deleted files can share a path */
	struct {
		uintptr_t lo, hi;
	} seg[MAX_SEGS];
	int nseg;
	int loaded;
	struct kt_sym *syms;
	size_t nsyms;
	char *strtab;
};

struct kt_symbolizer {
	struct kt_obj *objs;
	size_t nobjs;
};

static int add_obj(struct dl_phdr_info *info, size_t size, void *data)
{
	struct kt_symbolizer *s = data;
	struct kt_obj *o, *n;
	int i;

	(void)size;
	n = realloc(s->objs, (s->nobjs + 1) * sizeof(*n));
	if (!n)
		return 1;
	s->objs = n;
	o = &s->objs[s->nobjs];
	memset(o, 0, sizeof(*o));
	o->bias = info->dlpi_addr;
	o->path = strdup(info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe");
	o->file = o->path ? strdup(o->path) : NULL;
	if (!o->file) {
		free(o->path);
		return 1;
	}
	for (i = 0; i < info->dlpi_phnum && o->nseg < MAX_SEGS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		o->seg[o->nseg].lo = info->dlpi_addr + ph->p_vaddr;
		o->seg[o->nseg].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		o->nseg++;
	}
	s->nobjs++;
	return 0;
}

struct kt_symbolizer *ktau__sym_open(void)
{
	struct kt_symbolizer *s = calloc(1, sizeof(*s));

	if (s)
		dl_iterate_phdr(add_obj, s);
	return s;
}

void ktau__sym_close(struct kt_symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nobjs; i++) {
		free(s->objs[i].syms);
		free(s->objs[i].strtab);
		free(s->objs[i].path);
		free(s->objs[i].file);
	}
	free(s->objs);
	free(s);
}

static int cmp_sym(const void *a, const void *b)
{
	const struct kt_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Aliases: the global name first. */
	return y->global - x->global;
}

const ElfW(Shdr) *ktau__elf_shdr(const unsigned char *m, const ElfW(Ehdr) *eh, size_t i)
{
	if (i >= eh->e_shnum)
		return NULL;
	return (const ElfW(Shdr) *)(const void *)(m + eh->e_shoff + i * sizeof(ElfW(Shdr)));
}

int ktau__in_file(size_t len, uint64_t off, uint64_t size)
{
	return off <= len && size <= len - off;
}

const ElfW(Ehdr) *ktau__elf_header(const unsigned char *m, size_t len)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)(const void *)m;

	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != KT_ELFCLASS || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
	    !eh->e_shnum || eh->e_shoff % _Alignof(ElfW(Shdr)) ||
	    !ktau__in_file(len, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr))))
		return NULL;
	return eh;
}

int ktau__elf_funcs(const unsigned char *m, size_t len, const ElfW(Ehdr) *eh,
		    unsigned int type, uintptr_t bias, struct kt_sym **symsp, size_t *np,
		    char **strtabp)
{
	const ElfW(Shdr) *sh = NULL, *st;
	struct kt_sym *syms;
	char *strtab;
	size_t i, j, n, nsyms = 0;

	for (i = 0; i < eh->e_shnum; i++) {
		sh = ktau__elf_shdr(m, eh, i);
		if (sh && sh->sh_type == type)
			break;
	}
	if (i == eh->e_shnum || !sh)
		return 0;
	if (sh->sh_entsize != sizeof(ElfW(Sym)) || !ktau__in_file(len, sh->sh_offset, sh->sh_size) ||
	    sh->sh_offset % _Alignof(ElfW(Sym)))
		return -EBADMSG;
	st = ktau__elf_shdr(m, eh, sh->sh_link);
	if (!st || st->sh_type != SHT_STRTAB || !ktau__in_file(len, st->sh_offset, st->sh_size) ||
	    !st->sh_size)
		return -EBADMSG;
	n = sh->sh_size / sizeof(ElfW(Sym));
	syms = calloc(n ? n : 1, sizeof(*syms));
	strtab = malloc(st->sh_size + 1);
	if (!syms || !strtab) {
		free(syms);
		free(strtab);
		return -ENOMEM;
	}
	/* A copy, NUL-terminated at its end whatever the file holds. */
	memcpy(strtab, m + st->sh_offset, st->sh_size);
	strtab[st->sh_size] = '\0';
	for (j = 0; j < n; j++) {
		const ElfW(Sym) *y = (const ElfW(Sym) *)(const void *)(m + sh->sh_offset) + j;
		unsigned int t = KT_ST_TYPE(y->st_info);

		if ((t != STT_FUNC && t != STT_GNU_IFUNC) || y->st_shndx == SHN_UNDEF ||
		    !y->st_value || y->st_name >= st->sh_size || !strtab[y->st_name])
			continue;
		syms[nsyms].addr = bias + y->st_value;
		syms[nsyms].size = y->st_size;
		syms[nsyms].global = KT_ST_BIND(y->st_info) != STB_LOCAL;
		syms[nsyms].name = strtab + y->st_name;
		nsyms++;
	}
	if (!nsyms) {
		free(syms);
		free(strtab);
		return 0;
	}
	qsort(syms, nsyms, sizeof(*syms), cmp_sym);
	*symsp = syms;
	*np = nsyms;
	*strtabp = strtab;
	return 1;
}

const unsigned char *ktau__map_file(const char *path, size_t *lenp)
{
	struct stat st;
	void *map = MAP_FAILED;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st))
		err = errno;
	else if (S_ISDIR(st.st_mode))
		err = EISDIR;
	else if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(ElfW(Ehdr)))
		err = ENOEXEC;
	else if ((unsigned long long)st.st_size > MAX_FILE)
		err = EFBIG;
	else
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (!err && map == MAP_FAILED)
		err = errno;
	close(fd);
	if (err) {
		errno = err;
		return NULL;
	}
	*lenp = (size_t)st.st_size;
	return map;
}

static void load_obj(struct kt_obj *o)
{
	const ElfW(Ehdr) *eh;
	const unsigned char *m;
	size_t len;

	o->loaded = 1;
	if (!o->file)
		return;
	m = ktau__map_file(o->file, &len);
	if (!m)
		return;
	eh = ktau__elf_header(m, len);
	if (eh && ktau__elf_funcs(m, len, eh, SHT_SYMTAB, o->bias, &o->syms, &o->nsyms,
				  &o->strtab) <= 0 && !o->nsyms)
		ktau__elf_funcs(m, len, eh, SHT_DYNSYM, o->bias, &o->syms, &o->nsyms, &o->strtab);
	munmap((void *)m, len);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

char *ktau__sym_name(struct kt_symbolizer *s, uintptr_t addr)
{
	char *out = NULL;
	size_t i, lo, hi;
	int k;

	for (i = 0; s && i < s->nobjs; i++) {
		struct kt_obj *o = &s->objs[i];

		for (k = 0; k < o->nseg; k++)
			if (addr >= o->seg[k].lo && addr < o->seg[k].hi)
				break;
		if (k == o->nseg)
			continue;
		if (!o->loaded)
			load_obj(o);
		/* The last symbol at or below addr. */
		lo = 0;
		hi = o->nsyms;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (o->syms[mid].addr <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo) {
			const struct kt_sym *y = &o->syms[lo - 1];

			/* Of the aliases at that address, the first (global) one. */
			while (y > o->syms && y[-1].addr == y->addr)
				y--;
			if (addr < y->addr + (y->size ? y->size : 1))
				return ktau__demangle(y->name);
		}
		if (asprintf(&out, "%s+0x%lx", base_name(strcmp(o->path, "/proc/self/exe") ?
							    o->path : "exe"),
			     (unsigned long)(addr - o->bias)) < 0)
			return NULL;
		return out;
	}
	if (asprintf(&out, "0x%lx", (unsigned long)addr) < 0)
		return NULL;
	return out;
}

void ktau__sym_each(struct kt_symbolizer *s, void (*fn)(void *arg, uintptr_t addr, const char *name),
		    void *arg)
{
	size_t i, j;

	for (i = 0; s && i < s->nobjs; i++) {
		struct kt_obj *o = &s->objs[i];

		if (!o->loaded)
			load_obj(o);
		for (j = 0; j < o->nsyms; j++)
			fn(arg, o->syms[j].addr, o->syms[j].name);
	}
}

/*
 * Another process (samples of ktaud and libktau's sampling API): its
 * objects from the text of its /proc/PID/maps. The load bias of a mapping
 * of file offset off at address start comes from the file's PT_LOAD
 * header that holds off (a mapping starts at the page of p_offset):
 * vaddr = p_vaddr + (off - p_offset), bias = start - vaddr. That covers
 * PIE programs, shared libraries and segments whose vaddr and offset
 * differ; a file that cannot be read gets start - off.
 */
static uintptr_t map_bias(const char *path, uintptr_t start, uint64_t off)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uintptr_t bias = start - off;
	ElfW(Ehdr) eh;
	ElfW(Phdr) ph;
	int fd, i;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return bias;
	if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
	    !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == KT_ELFCLASS &&
	    eh.e_phentsize == sizeof(ph)) {
		for (i = 0; i < eh.e_phnum; i++) {
			if (pread(fd, &ph, sizeof(ph), eh.e_phoff + (uint64_t)i * sizeof(ph)) !=
			    (ssize_t)sizeof(ph))
				break;
			if (ph.p_type == PT_LOAD && off >= (ph.p_offset & ~(page - 1)) &&
			    off < ph.p_offset + ph.p_filesz) {
				bias = start - off + ph.p_offset - ph.p_vaddr;
				break;
			}
		}
	}
	close(fd);
	return bias;
}

/*
 * One line of a maps file: its executable mapping of a file (or the vDSO).
 * *deleted: the file was deleted or replaced since it was mapped (the
 * path, which keeps its " (deleted)", names another file or none).
 */
static int maps_line(const char *line, uintptr_t *lo, uintptr_t *hi, uint64_t *off,
		     char *path, size_t size, int *deleted, unsigned long long *inode)
{
	unsigned long long a, b, o, ino;
	char perms[8];
	const char *p;
	size_t n;
	int pos = 0;

	if (sscanf(line, "%llx-%llx %7s %llx %*s %llu %n", &a, &b, perms, &o, &ino, &pos) < 5 ||
	    !pos || strlen(perms) < 3 || perms[2] != 'x' || b <= a)
		return 0;
	p = line + pos;
	n = strcspn(p, "\n");
	*deleted = n >= 10 && !strncmp(p + n - 10, " (deleted)", 10);
	if (!n || n >= size || (p[0] != '/' && strncmp(p, "[vdso]", n > 6 ? n : 6)))
		return 0;
	memcpy(path, p, n);
	path[n] = '\0';
	*lo = a;
	*hi = b;
	*off = o;
	*inode = ino;
	return 1;
}

/*
 * The file to read for a mapping: its path; for a deleted (or replaced)
 * file, the mapped file itself through /proc/PID/map_files (which the
 * kernel opens for CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE only), and
 * otherwise none: the path names another file, whose symbols would be
 * wrong names. NULL: none (or no memory).
 */
static char *map_file_of(const char *path, int deleted, pid_t pid, uintptr_t lo, uintptr_t hi)
{
	char *f = NULL;
	int fd;

	if (!deleted)
		return path[0] == '/' ? strdup(path) : NULL;
	if (pid < 0)
		return NULL;
	if (pid ? asprintf(&f, "/proc/%d/map_files/%lx-%lx", (int)pid, (unsigned long)lo,
			   (unsigned long)hi) < 0 :
		  asprintf(&f, "/proc/self/map_files/%lx-%lx", (unsigned long)lo,
			   (unsigned long)hi) < 0)
		return NULL;
	fd = open(f, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(f);
		return NULL;
	}
	close(fd);
	return f;
}

struct kt_symbolizer *ktau__sym_open_maps(const char *maps, size_t len, pid_t pid)
{
	struct kt_symbolizer *s = calloc(1, sizeof(*s));
	const char *line = maps, *end = maps + len, *eol;
	char path[4096], lbuf[4096 + 256];
	struct kt_obj *o, *n;
	uintptr_t lo, hi, bias;
	uint64_t off;
	unsigned long long inode;
	char *file;
	int deleted;

	if (!s)
		return NULL;
	for (; line < end; line = eol + 1) {
		eol = memchr(line, '\n', end - line);
		if (!eol)
			eol = end;
		if ((size_t)(eol - line) >= sizeof(lbuf))
			continue;
		memcpy(lbuf, line, eol - line);
		lbuf[eol - line] = '\0';
		if (!maps_line(lbuf, &lo, &hi, &off, path, sizeof(path), &deleted, &inode))
			continue;
		file = map_file_of(path, deleted, pid, lo, hi);
		bias = file ? map_bias(file, lo, off) : path[0] == '/' ? lo - off : lo;
		o = s->nobjs ? &s->objs[s->nobjs - 1] : NULL;
		if (!o || strcmp(o->path, path) || o->inode != inode || o->bias != bias ||
		    o->nseg == MAX_SEGS) {
			n = realloc(s->objs, (s->nobjs + 1) * sizeof(*n));
			if (!n) {
				free(file);
				break;
			}
			s->objs = n;
			o = &s->objs[s->nobjs];
			memset(o, 0, sizeof(*o));
			o->bias = bias;
			o->inode = inode;
			o->path = strdup(path);
			o->file = file;
			file = NULL;
			if (!o->path)
				break;
			s->nobjs++;
		}
		free(file);
		o->seg[o->nseg].lo = lo;
		o->seg[o->nseg].hi = hi;
		o->nseg++;
	}
	return s;
}

int ktau__sym_covers(const struct kt_symbolizer *s, uintptr_t addr)
{
	size_t i;
	int k;

	for (i = 0; s && i < s->nobjs; i++)
		for (k = 0; k < s->objs[i].nseg; k++)
			if (addr >= s->objs[i].seg[k].lo && addr < s->objs[i].seg[k].hi)
				return 1;
	return 0;
}
