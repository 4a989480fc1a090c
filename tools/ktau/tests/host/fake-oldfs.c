// SPDX-License-Identifier: GPL-2.0
/*
 * fake-oldfs.so: an LD_PRELOAD stand-in for a file system that has
 * neither renameat2() flags nor hard links (vfat, some FUSE file systems):
 * renameat2() with flags fails with EINVAL, link() and linkat() with
 * EPERM, as there. The host tests run ktaud's single-file outputs under it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
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
