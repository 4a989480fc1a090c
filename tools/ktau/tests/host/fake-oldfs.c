// SPDX-License-Identifier: GPL-2.0
/*
 * fake-oldfs.so: an LD_PRELOAD stand-in for a file system that has
 * neither renameat2() flags nor hard links (vfat, some FUSE file systems):
 * renameat2() with flags fails with EINVAL, link() and linkat() with
 * EPERM, and the extended attribute calls with ENOTSUP, as there. The
 * host tests run ktaud's single-file outputs under it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
	      unsigned int flags)
{
	if (flags) {
		errno = EINVAL;
		return -1;
	}
	return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, 0);
}

int link(const char *oldpath, const char *newpath)
{
	(void)oldpath;
	(void)newpath;
	errno = EPERM;
	return -1;
}

int linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags)
{
	(void)olddirfd;
	(void)oldpath;
	(void)newdirfd;
	(void)newpath;
	(void)flags;
	errno = EPERM;
	return -1;
}

/* Nor user extended attributes (vfat, NFSv3): ENOTSUP, as there. */
static int no_xattr(void)
{
	errno = ENOTSUP;
	return -1;
}

ssize_t getxattr(const char *path, const char *name, void *value, size_t size)
{
	(void)path, (void)name, (void)value, (void)size;
	return no_xattr();
}

ssize_t lgetxattr(const char *path, const char *name, void *value, size_t size)
{
	(void)path, (void)name, (void)value, (void)size;
	return no_xattr();
}

ssize_t fgetxattr(int fd, const char *name, void *value, size_t size)
{
	(void)fd, (void)name, (void)value, (void)size;
	return no_xattr();
}

int setxattr(const char *path, const char *name, const void *value, size_t size, int flags)
{
	(void)path, (void)name, (void)value, (void)size, (void)flags;
	return no_xattr();
}

int lsetxattr(const char *path, const char *name, const void *value, size_t size, int flags)
{
	(void)path, (void)name, (void)value, (void)size, (void)flags;
	return no_xattr();
}

int fsetxattr(int fd, const char *name, const void *value, size_t size, int flags)
{
	(void)fd, (void)name, (void)value, (void)size, (void)flags;
	return no_xattr();
}
