/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * KTAU user ABI: the binary interface of /proc/ktau.
 *
 * See Documentation/ABI/testing/procfs-ktau and Documentation/trace/ktau.rst.
 *
 * All times are in nanoseconds. All structures are naturally aligned, have
 * no implicit padding and are zero-filled where reserved.
 */
#ifndef _UAPI_LINUX_KTAU_H
#define _UAPI_LINUX_KTAU_H

#include <linux/types.h>
#include <linux/ioctl.h>

/*
 * ABI version, as /proc/ktau/version prints it ("MAJOR.MINOR"). The major
 * number changes when a record layout or an ioctl changes incompatibly;
 * the minor number when something is added.
 */
#define KTAU_ABI_VERSION_MAJOR	1
#define KTAU_ABI_VERSION_MINOR	0

/* Instrumentation groups, as named in /proc/ktau/control and functions. */
#define KTAU_GROUP_SYSCALL	0	/* "syscall" */
#define KTAU_GROUP_IRQ		1	/* "irq" */
#define KTAU_GROUP_SOFTIRQ	2	/* "softirq" */
#define KTAU_GROUP_SCHED	3	/* "sched" */
#define KTAU_GROUP_FAULT	4	/* "fault" */
#define KTAU_GROUP_SIGNAL	5	/* "signal" */
#define KTAU_GROUP_DYNAMIC	6	/* "dynamic": registered at run time */
#define KTAU_NR_GROUPS		7

/*
 * Function IDs. Fixed IDs below KTAU_ID_SYSCALL_BASE; a system call's ID is
 * KTAU_ID_SYSCALL_BASE + its number; every other ID (interrupt sources,
 * dynamic points) is given out at registration. /proc/ktau/functions lists
 * every ID with its group and name. IDs are stable for the life of a boot.
 */
#define KTAU_ID_NONE		0	/* never used */
#define KTAU_ID_OTHER		1	/* "[other]": calls that found no slot */
#define KTAU_ID_IRQ		2	/* "irq": hard interrupt, source unknown */
#define KTAU_ID_SCHED_VOL	3	/* "sched_blocked": off CPU, blocked */
#define KTAU_ID_SCHED_INVOL	4	/* "sched_preempted": off CPU, preempted */
#define KTAU_ID_FAULT_USER	5	/* "page_fault_user" */
#define KTAU_ID_FAULT_KERNEL	6	/* "page_fault_kernel" */
#define KTAU_ID_SIGNAL		7	/* "signal_delivery" */
#define KTAU_ID_SYSCALL_BAD	8	/* "syscall_invalid": number out of range */
#define KTAU_ID_SYSCALL_COMPAT	9	/* "syscall_compat": a 32-bit system call */
#define KTAU_ID_SOFTIRQ_BASE	16	/* + softirq vector (TIMER = 1, ...) */
#define KTAU_ID_SYSCALL_BASE	32	/* + system call number */

/* One routine in a profile. */
struct ktau_entry {
	__u32 id;		/* function ID */
	__u32 reserved;		/* zero */
	__u64 count;		/* completed calls */
	__u64 incl_ns;		/* inclusive time */
	__u64 excl_ns;		/* exclusive time: without nested routines */
};

/* Flags of a task record. */
#define KTAU_REC_AGGREGATE	0x1	/* system-wide totals, not one task */
#define KTAU_REC_EXITED		0x2	/* final profile of an exited task */
#define KTAU_REC_KTHREAD	0x4	/* a kernel thread */

/*
 * One task's profile: the header, then nentries struct ktau_entry. size is
 * the whole record's length (a multiple of 8). The entries are the last
 * nentries * sizeof(struct ktau_entry) bytes of the record and the next
 * record starts size bytes on, so that later minor versions may grow the
 * header.
 */
struct ktau_task_rec {
	__u32 size;		/* bytes in this record, entries included */
	__u32 nentries;		/* struct ktau_entry that follow the header */
	__s32 tid;		/* thread ID in the reader's pid namespace */
	__s32 pid;		/* thread group ID; 0 for the aggregate */
	__u32 flags;		/* KTAU_REC_* */
	__u32 reserved;		/* zero */
	char comm[16];		/* NUL-terminated */
	__u64 start_ns;		/* task start, CLOCK_MONOTONIC */
	__u64 stack_overflows;	/* entries dropped: nesting stack full */
	__u64 table_overflows;	/* calls charged to KTAU_ID_OTHER: table full */
	__u64 unmatched;	/* exits without their entry (group switched) */
	/* struct ktau_entry entries[nentries]; */
};

/* KTAU_IOC_SNAPSHOT on /proc/ktau/profiles: which tasks. */
#define KTAU_SNAP_SELF		0x1	/* the calling thread */
#define KTAU_SNAP_PIDS		0x2	/* the threads whose tids are in pids */
#define KTAU_SNAP_ALL		0x4	/* every thread the caller may read */
#define KTAU_SNAP_AGGREGATE	0x8	/* system-wide totals (CAP_PERFMON) */
#define KTAU_SNAP_PROCESS	0x10	/* with PIDS: pids are processes, */
					/* take all their threads */
#define KTAU_SNAP_FLAGS		0x1f

/*
 * Argument of KTAU_IOC_SNAPSHOT. The records of the chosen tasks are
 * written one after the other to buf. If they do not fit, the call fails
 * with ENOSPC and sets used to a size that would have been enough at the
 * time of the call. Tasks that do not exist or that the caller may not
 * read (ptrace read access, as for /proc/PID/stack) are counted in
 * nmissing, not returned.
 */
struct ktau_snapshot {
	__u32 size;		/* in: sizeof(struct ktau_snapshot) */
	__u32 flags;		/* in: KTAU_SNAP_* */
	__u64 pids;		/* in: user pointer to __s32 pids[npids] */
	__u32 npids;		/* in: at most KTAU_SNAP_MAX_PIDS */
	__u32 ntasks;		/* out: records written */
	__u64 buf;		/* in: user pointer to the output buffer */
	__u64 buf_size;		/* in: its size in bytes */
	__u64 used;		/* out: bytes written (or needed, ENOSPC) */
	__u32 nmissing;		/* out: tasks gone or not readable */
	__u32 reserved;		/* in: zero */
	__u64 time_ns;		/* out: CLOCK_MONOTONIC at the snapshot */
};

#define KTAU_SNAP_MAX_PIDS	65536

/*
 * /proc/ktau/collect: each open file is a collector of final profiles.
 * A thread that calls KTAU_IOC_COLLECT_JOIN becomes a member, and so do
 * the tasks it creates afterwards. When a member exits, its final profile
 * is queued on the collector as a struct ktau_task_rec with
 * KTAU_REC_EXITED, and read() returns whole records (0 when none is
 * queued). The queue holds at most KTAU_COLLECT_MAX_BYTES; profiles that
 * do not fit are counted as dropped.
 */
#define KTAU_COLLECT_MAX_BYTES	(16 << 20)

struct ktau_collect_stats {
	__u64 queued;		/* records waiting to be read */
	__u64 collected;	/* records queued since open */
	__u64 dropped;		/* records lost: queue full */
	__u64 denied;		/* members whose credentials changed */
	__u64 bytes;		/* bytes waiting to be read */
};

#define KTAU_IOC_MAGIC		0xE1
#define KTAU_IOC_SNAPSHOT	_IOWR(KTAU_IOC_MAGIC, 1, struct ktau_snapshot)
#define KTAU_IOC_COLLECT_JOIN	_IO(KTAU_IOC_MAGIC, 2)
#define KTAU_IOC_COLLECT_STATS	_IOR(KTAU_IOC_MAGIC, 3, struct ktau_collect_stats)

/*
 * Control through /proc/ktau/profiles, the same as writing
 * /proc/ktau/control but open to any holder of CAP_PERFMON or
 * CAP_SYS_ADMIN (control is root-owned, mode 0644): the argument is a
 * bit mask of groups, bit n for KTAU_GROUP n.
 */
#define KTAU_IOC_GET_GROUPS	_IOR(KTAU_IOC_MAGIC, 4, __u64)
#define KTAU_IOC_SET_GROUPS	_IOW(KTAU_IOC_MAGIC, 5, __u64)
#define KTAU_IOC_RESET		_IO(KTAU_IOC_MAGIC, 6)

#endif /* _UAPI_LINUX_KTAU_H */
