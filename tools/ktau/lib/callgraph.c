// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: the static call graph of kernel functions, for drilling down
 * with dynamic probes: which functions a function calls directly.
 *
 * From an x86-64 ELF file (vmlinux): the function symbols of its .symtab
 * (elf-internal.h) and their code, decoded with capstone (linear sweep of
 * each function's bytes, from its symbol to its end). Every direct call,
 * and every direct jump (conditional or not) to the start of another
 * function (a tail call), is an edge caller -> callee. Jumps inside the
 * function, indirect calls and jumps (function pointers, retpolines,
 * paravirt and static calls) are not. Code that the kernel patches in at
 * boot (alternatives) is seen as it is in the file: alternative_call()
 * sites name their first function only. A cold part split from a
 * function ("f.cold") belongs to it: its calls are f's. Targets that are
 * not functions one would time are left out: ftrace's __fentry__, the
 * return and indirect-branch thunks (__x86_return_thunk,
 * __x86_indirect_thunk_*), static call trampolines (__SCT__*), the
 * padding symbols (__pfx_*, __cfi_*) and the sanitizers' hooks (__asan_*,
 * __kasan_*, __ubsan_*, __sanitizer_*, __kcsan_*, __tsan_*, __msan_*).
 *
 * Functions are nodes by name: static functions of the same name (there
 * are many in a kernel: "show", "init_once", ...) are one node whose
 * callees are those of all of them. That matches what can be measured: a
 * probe is added by name, the kernel takes the first function of that
 * name that kallsyms finds, and the profile names it by name.
 *
 * The text form (ktau_callgraph_write, "ktaud callgraph"): a first line
 * "# ktau-callgraph 1", comment lines, then one line per function that
 * calls any: "caller callee callee ...", names separated by one space,
 * callees sorted by name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <capstone/capstone.h>

#include "ktau-drill.h"
#include "internal.h"
#include "elf-internal.h"

#define CG_MAGIC	"# ktau-callgraph 1"
#define CG_NAME_MAX	511	/* longest name accepted in the text form */

struct cg_node {
	const char *name;
	size_t first, n;	/* callees: g->callees[first .. first + n) */
};

struct ktau_callgraph {
	struct cg_node *nodes;	/* sorted by name */
	size_t nnodes;
	const char **callees;	/* names, grouped by caller */
	size_t nedges;
	size_t nfuncs;		/* functions decoded (ELF) or lines (text) */
	size_t ndups;		/* names of more than one function (ELF) */
	char *pool;		/* the names */
};

/* An edge between two names (pointers into the pool). */
struct cg_pair {
	const char *from, *to;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_node(const void *a, const void *b)
{
	return strcmp(((const struct cg_node *)a)->name, ((const struct cg_node *)b)->name);
}

static int cmp_pair(const void *a, const void *b)
{
	const struct cg_pair *x = a, *y = b;
	int c = strcmp(x->from, y->from);

	return c ? c : strcmp(x->to, y->to);
}

static struct cg_node *find_node(const struct ktau_callgraph *g, const char *name)
{
	struct cg_node key = { .name = name };

	return g->nnodes ? bsearch(&key, g->nodes, g->nnodes, sizeof(key), cmp_node) : NULL;
}

/*
 * The graph of names (every node, nnames of them, duplicates allowed)
 * and edges (both ends among the names); takes pool over in any case.
 */
static int build(const char **names, size_t nnames, struct cg_pair *pairs, size_t npairs,
		 char *pool, struct ktau_callgraph **out)
{
	struct ktau_callgraph *g = calloc(1, sizeof(*g));
	size_t i, j, n = 0;

	if (!g) {
		free(pool);
		return -ENOMEM;
	}
	g->pool = pool;
	if (nnames)
		qsort(names, nnames, sizeof(*names), cmp_str);
	g->nodes = calloc(nnames ? nnames : 1, sizeof(*g->nodes));
	if (!g->nodes)
		goto nomem;
	for (i = 0; i < nnames; i++)
		if (!n || strcmp(g->nodes[n - 1].name, names[i]))
			g->nodes[n++].name = names[i];
	g->nnodes = n;
	if (npairs)
		qsort(pairs, npairs, sizeof(*pairs), cmp_pair);
	g->callees = calloc(npairs ? npairs : 1, sizeof(*g->callees));
	if (!g->callees)
		goto nomem;
	for (i = 0; i < npairs; i = j) {
		struct cg_node *c = find_node(g, pairs[i].from);

		for (j = i; j < npairs && !strcmp(pairs[j].from, pairs[i].from); j++) {
			if (j > i && !strcmp(pairs[j].to, pairs[j - 1].to))
				continue;
			if (!c || !find_node(g, pairs[j].to))
				continue;
			if (!c->n)
				c->first = g->nedges;
			g->callees[g->nedges++] = find_node(g, pairs[j].to)->name;
			c->n++;
		}
	}
	*out = g;
	return 0;
nomem:
	ktau_callgraph_free(g);
	return -ENOMEM;
}

/* A growing array of pairs. */
struct pairbuf {
	struct cg_pair *v;
	size_t n, cap;
};

static int pair_add(struct pairbuf *b, const char *from, const char *to)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 65536;
		struct cg_pair *nv = realloc(b->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		b->v = nv;
		b->cap = cap;
	}
	b->v[b->n++] = (struct cg_pair){ from, to };
	return 0;
}

/* ---- From an ELF file ---- */

/* Targets that are no functions one would time (see the top). */
static int excluded(const char *name)
{
	static const char *const prefixes[] = {
		"__pfx_", "__cfi_", "__SCT__", "__x86_indirect_", "__x86_return_thunk",
		"__fentry__", "__asan_", "__kasan_", "__ubsan_", "__sanitizer_", "__kcsan_",
		"__tsan_", "__msan_",
	};
	size_t i;

	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return 1;
	/*
	 * A name the text form cannot hold (fuzz/fuzz-callgraph.c): one that
	 * starts a comment line there, or has spaces or control characters.
	 */
	if (name[0] == '#')
		return 1;
	for (i = 0; name[i]; i++)
		if ((unsigned char)name[i] < 0x21 || name[i] == 0x7f || i >= CG_NAME_MAX)
			return 1;
	return 0;
}

/*
 * Cut a cold part's suffix (".cold", ".cold.N") in place. Safe in a
 * string table with shared tails: a string that ends inside this one
 * either ends with the same suffix or starts after its dot.
 */
static void strip_cold(char *name)
{
	char *p = strstr(name, ".cold");

	while (p) {
		if (!p[5] || p[5] == '.') {
			*p = '\0';
			return;
		}
		p = strstr(p + 1, ".cold");
	}
}

/* The symbol that starts exactly at addr (the first alias), or NULL. */
static const struct kt_sym *sym_at(const struct kt_sym *s, size_t n, uintptr_t addr)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (s[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && s[lo].addr == addr ? &s[lo] : NULL;
}

/* The direct branch target of a call or jump, from capstone's operand text. */
static int branch_target(const cs_insn *in, uint64_t *target)
{
	char *end;

	switch (in->id) {
	case X86_INS_CALL: case X86_INS_JMP:
	case X86_INS_JAE: case X86_INS_JA: case X86_INS_JBE: case X86_INS_JB:
	case X86_INS_JE: case X86_INS_JGE: case X86_INS_JG: case X86_INS_JLE:
	case X86_INS_JL: case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP:
	case X86_INS_JNS: case X86_INS_JO: case X86_INS_JP: case X86_INS_JS:
		break;
	default:
		return 0;
	}
	/* A direct one is "0x<address>"; indirect ones name a register or memory. */
	if (strncmp(in->op_str, "0x", 2))
		return 0;
	*target = strtoull(in->op_str, &end, 16);
	return !*end;
}

/* The executable section that holds [addr, addr + size), or NULL. */
static const ElfW(Shdr) *text_of(const unsigned char *m, size_t len, const ElfW(Ehdr) *eh,
				 uintptr_t addr, uintptr_t size)
{
	const ElfW(Shdr) *sh;
	size_t i;

	for (i = 0; i < eh->e_shnum; i++) {
		sh = ktau__elf_shdr(m, eh, i);
		if (!sh || sh->sh_type != SHT_PROGBITS || !(sh->sh_flags & SHF_EXECINSTR) ||
		    addr < sh->sh_addr || addr - sh->sh_addr >= sh->sh_size)
			continue;
		if (size > sh->sh_size - (addr - sh->sh_addr) ||
		    !ktau__in_file(len, sh->sh_offset, sh->sh_size))
			return NULL;
		return sh;
	}
	return NULL;
}

/* Decode the functions of syms and add their calls to pb. */
static int decode(const unsigned char *m, size_t len, const ElfW(Ehdr) *eh,
		  const struct kt_sym *syms, size_t n, struct pairbuf *pb, size_t *ndecoded)
{
	const ElfW(Shdr) *sh = NULL;
	cs_insn *in;
	csh cs;
	size_t i;
	int ret = 0;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return -ENOMEM;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_OFF);
	in = cs_malloc(cs);
	if (!in) {
		cs_close(&cs);
		return -ENOMEM;
	}
	for (i = 0; i < n && !ret; i++) {
		uintptr_t size = syms[i].size;
		const uint8_t *code;
		uint64_t addr, target;
		size_t left;

		if (i && syms[i].addr == syms[i - 1].addr)
			continue;	/* an alias: decoded once */
		/* An assembler symbol without a size reaches to the next one. */
		if (!size && i + 1 < n)
			size = syms[i + 1].addr - syms[i].addr;
		if (!size || size > (1u << 20))
			continue;
		if (!sh || syms[i].addr < sh->sh_addr || syms[i].addr - sh->sh_addr >= sh->sh_size ||
		    size > sh->sh_size - (syms[i].addr - sh->sh_addr))
			sh = text_of(m, len, eh, syms[i].addr, size);
		if (!sh)
			continue;	/* not in the file's code (NOBITS, data) */
		code = m + sh->sh_offset + (syms[i].addr - sh->sh_addr);
		left = size;
		addr = syms[i].addr;
		(*ndecoded)++;
		while (left) {
			const struct kt_sym *t;

			if (!cs_disasm_iter(cs, &code, &left, &addr, in)) {
				/* Not an instruction (padding, data): step over a byte. */
				code++;
				left--;
				addr++;
				continue;
			}
			if (!branch_target(in, &target) ||
			    (target >= syms[i].addr && target < syms[i].addr + size))
				continue;
			t = sym_at(syms, n, target);
			if (t && strcmp(t->name, syms[i].name))
				ret = pair_add(pb, syms[i].name, t->name);
		}
	}
	cs_free(in, 1);
	cs_close(&cs);
	return ret;
}

int ktau_callgraph_from_elf(const char *path, struct ktau_callgraph **out)
{
	const unsigned char *m;
	const ElfW(Ehdr) *eh;
	struct kt_sym *syms = NULL;
	struct pairbuf pb = { 0 };
	const char **names = NULL;
	char *strtab = NULL;
	size_t len, nsyms = 0, i, k, ndecoded = 0, ndups = 0;
	int ret;

	*out = NULL;
	m = ktau__map_file(path, &len);
	if (!m)
		return -errno;
	eh = ktau__elf_header(m, len);
	if (!eh || eh->e_machine != EM_X86_64) {
		munmap((void *)m, len);
		return -ENOEXEC;
	}
	ret = ktau__elf_funcs(m, len, eh, SHT_SYMTAB, 0, &syms, &nsyms, &strtab);
	if (ret <= 0) {
		munmap((void *)m, len);
		return ret ? ret : -ENODATA;
	}
	/* Leave out what no one would time. */
	for (i = k = 0; i < nsyms; i++)
		if (!excluded(syms[i].name))
			syms[k++] = syms[i];
	nsyms = k;
	names = malloc((nsyms ? nsyms : 1) * sizeof(*names));
	if (!names) {
		munmap((void *)m, len);
		free(syms);
		free(strtab);
		return -ENOMEM;
	}
	/* Count the names of several functions (aliases of one are one). */
	for (i = k = 0; i < nsyms; i++)
		if (!i || syms[i].addr != syms[i - 1].addr)
			names[k++] = syms[i].name;
	qsort(names, k, sizeof(*names), cmp_str);
	for (i = 1; i < k; i++)
		if (!strcmp(names[i], names[i - 1]) && (i < 2 || strcmp(names[i], names[i - 2])))
			ndups++;
	/* Cold parts are their functions. */
	for (i = 0; i < nsyms; i++)
		strip_cold((char *)syms[i].name);
	ret = decode(m, len, eh, syms, nsyms, &pb, &ndecoded);
	munmap((void *)m, len);
	if (!ret && !ndecoded)
		ret = -ENOMSG;
	if (ret) {
		free(names);
		free(syms);
		free(strtab);
		free(pb.v);
		return ret;
	}
	/* The nodes: every name (build() sorts them and drops repeats). */
	for (i = 0; i < nsyms; i++)
		names[i] = syms[i].name;
	free(syms);
	ret = build(names, nsyms, pb.v, pb.n, strtab, out);
	free(names);
	free(pb.v);
	if (!ret) {
		(*out)->nfuncs = ndecoded;
		(*out)->ndups = ndups;
	}
	return ret;
}

/* ---- The text form ---- */

int ktau_callgraph_parse(const char *text, size_t len, struct ktau_callgraph **out)
{
	struct pairbuf pb = { 0 };
	const char **names = NULL;
	size_t nnames = 0, cap = 0, nlines = 0, i, mlen = strlen(CG_MAGIC);
	char *pool, *p, *end, *eol, *tok, *caller;
	int ret = 0;

	*out = NULL;
	if (len < mlen || memcmp(text, CG_MAGIC, mlen) || (len > mlen && text[mlen] != '\n'))
		return -EBADMSG;
	pool = malloc(len + 1);
	if (!pool)
		return -ENOMEM;
	memcpy(pool, text, len);
	pool[len] = '\0';
	end = pool + len;
	for (p = pool; p < end && !ret; p = eol + 1) {
		eol = memchr(p, '\n', end - p);
		if (!eol)
			eol = end;
		*eol = '\0';
		if (*p == '#' || !*p)
			continue;
		nlines++;
		caller = NULL;
		for (tok = p; tok < eol && !ret; tok += strlen(tok) + 1) {
			size_t tl = strcspn(tok, " ");

			tok[tl] = '\0';
			if (!tl || tl > CG_NAME_MAX) {
				ret = -EBADMSG;
				break;
			}
			for (i = 0; i < tl; i++)
				if ((unsigned char)tok[i] < 0x21 || tok[i] == 0x7f)
					ret = -EBADMSG;
			if (nnames == cap) {
				const char **nv;

				cap = cap ? cap * 2 : 65536;
				nv = realloc(names, cap * sizeof(*nv));
				if (!nv) {
					ret = -ENOMEM;
					break;
				}
				names = nv;
			}
			names[nnames++] = tok;
			if (!caller)
				caller = tok;
			else if (!ret)
				ret = pair_add(&pb, caller, tok);
		}
	}
	if (ret) {
		free(names);
		free(pb.v);
		free(pool);
		return ret;
	}
	ret = build(names, nnames, pb.v, pb.n, pool, out);
	free(names);
	free(pb.v);
	if (!ret)
		(*out)->nfuncs = nlines;
	return ret;
}

int ktau_callgraph_load(const char *path, struct ktau_callgraph **out)
{
	char *text;
	size_t len;
	int ret;

	*out = NULL;
	ret = ktau__slurp(path, &text, &len);
	if (ret)
		return ret;
	ret = ktau_callgraph_parse(text, len, out);
	free(text);
	return ret;
}

int ktau_callgraph_write(FILE *f, const struct ktau_callgraph *g, const char *source)
{
	size_t i, j, ncallers = 0;

	for (i = 0; i < g->nnodes; i++)
		ncallers += g->nodes[i].n > 0;
	fprintf(f, "%s\n# direct calls and tail jumps: \"caller callee...\"", CG_MAGIC);
	if (source)
		fprintf(f, " of %s", source);
	fprintf(f, "\n# %zu functions, %zu that call others, %zu calls", g->nnodes, ncallers,
		g->nedges);
	if (g->ndups)
		fprintf(f, "; %zu names of several functions, merged", g->ndups);
	fputc('\n', f);
	for (i = 0; i < g->nnodes; i++) {
		const struct cg_node *c = &g->nodes[i];

		if (!c->n)
			continue;
		fputs(c->name, f);
		for (j = 0; j < c->n; j++) {
			fputc(' ', f);
			fputs(g->callees[c->first + j], f);
		}
		fputc('\n', f);
	}
	return ktau__stream_err(f);
}

const char *const *ktau_callgraph_callees(const struct ktau_callgraph *g, const char *name,
					  size_t *n)
{
	const struct cg_node *c = g ? find_node(g, name) : NULL;

	*n = c ? c->n : 0;
	if (!c)
		return NULL;
	return c->n ? g->callees + c->first : (const char *const *)g->callees;
}

void ktau_callgraph_stats(const struct ktau_callgraph *g, struct ktau_callgraph_stats *st)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	st->functions = g->nnodes;
	st->calls = g->nedges;
	st->decoded = g->nfuncs;
	st->dup_names = g->ndups;
	for (i = 0; i < g->nnodes; i++)
		st->callers += g->nodes[i].n > 0;
}

const char *ktau_callgraph_strerror(int err)
{
	switch (-err) {
	case ENOEXEC:
		return "not an x86-64 ELF file (give the uncompressed vmlinux of the kernel "
		       "build, not vmlinuz)";
	case ENODATA:
		return "no function symbols (a stripped file): give the vmlinux of the kernel "
		       "build, which has its symbol table";
	case ENOMSG:
		return "no code in the file (a separate debug file has the symbols only): give "
		       "the vmlinux of the kernel build";
	case EBADMSG:
		return "not a call graph file ('# ktau-callgraph 1' first, then lines of "
		       "names) or a malformed ELF file";
	default:
		return strerror(-err);
	}
}

void ktau_callgraph_free(struct ktau_callgraph *g)
{
	if (!g)
		return;
	free(g->nodes);
	free(g->callees);
	free(g->pool);
	free(g);
}
