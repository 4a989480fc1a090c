/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * libktau: the ELF reading of elfsym.c (symbol tables of the process's
 * objects and of another process's files) shared with callgraph.c (the
 * functions of vmlinux). Native class only (ElfW), every offset and size
 * checked against the file.
 */
#ifndef LIBKTAU_ELF_INTERNAL_H
#define LIBKTAU_ELF_INTERNAL_H

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_FILE	(1ull << 31)	/* larger files are not read */

#if __SIZEOF_POINTER__ == 8
#define KT_ELFCLASS	ELFCLASS64
#define KT_ST_TYPE(i)	ELF64_ST_TYPE(i)
#define KT_ST_BIND(i)	ELF64_ST_BIND(i)
#else
#define KT_ELFCLASS	ELFCLASS32
#define KT_ST_TYPE(i)	ELF32_ST_TYPE(i)
#define KT_ST_BIND(i)	ELF32_ST_BIND(i)
#endif

/* A function symbol. */
struct kt_sym {
	uintptr_t addr, size;
	const char *name;	/* in the copy of the string table */
	int global;
};

/* The file mapped read-only (munmap it); NULL with errno (ENOEXEC: too small). */
const unsigned char *ktau__map_file(const char *path, size_t *len);
/* The ELF header of image m when it is of the native class with a section table in it. */
const ElfW(Ehdr) *ktau__elf_header(const unsigned char *m, size_t len);
/* Section header i, or NULL. */
const ElfW(Shdr) *ktau__elf_shdr(const unsigned char *m, const ElfW(Ehdr) *eh, size_t i);
/* off and size lie inside a file of len bytes. */
int ktau__in_file(size_t len, uint64_t off, uint64_t size);
/*
 * The defined function symbols (STT_FUNC, STT_GNU_IFUNC) of the first
 * section of type (SHT_SYMTAB, SHT_DYNSYM), bias added, sorted by address
 * (of aliases the global name first), into *syms (*n of them) with names
 * in *strtab (both malloc()ed). 1 when found, 0 when there are none,
 * -EBADMSG or -ENOMEM.
 */
int ktau__elf_funcs(const unsigned char *m, size_t len, const ElfW(Ehdr) *eh,
		    unsigned int type, uintptr_t bias, struct kt_sym **syms, size_t *n,
		    char **strtab);

#endif
