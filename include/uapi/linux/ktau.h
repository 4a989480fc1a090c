/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * KTAU user ABI: the binary interface of /proc/ktau.
 *
 * See Documentation/ABI/testing/procfs-ktau and Documentation/trace/ktau.rst.
 */
#ifndef _UAPI_LINUX_KTAU_H
#define _UAPI_LINUX_KTAU_H

#include <linux/types.h>

/*
 * ABI version. The major number changes when a record layout or an ioctl
 * changes incompatibly; the minor number when something is added.
 */
#define KTAU_ABI_VERSION_MAJOR	1
#define KTAU_ABI_VERSION_MINOR	0

#endif /* _UAPI_LINUX_KTAU_H */
