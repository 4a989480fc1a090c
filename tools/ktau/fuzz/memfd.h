/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fuzz: a memfd for the targets that need their input as a file (ELF
 * images are mapped by path), and that path, /proc/self/fd/N.
 */
#ifndef KTAU_FUZZ_MEMFD_H
#define KTAU_FUZZ_MEMFD_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Create it, or exit: the target cannot run without it. */
static inline int fuzz_memfd(const char *name, char *path, size_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "%s: memfd_create: %s\n", name, strerror(errno));
		exit(1);
	}
	snprintf(path, size, "/proc/self/fd/%d", fd);
	return fd;
}

/* The file's content becomes data (size bytes; 0: empty). */
static inline void fuzz_memfd_set(int fd, const void *data, size_t size)
{
	if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
}

#endif
