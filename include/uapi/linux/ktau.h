/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * KTAU user ABI: the binary interface of /proc/ktau.
 *
 * See Documentation/ABI/testing/procfs-ktau and Documentation/trace/ktau.rst.
 *
 * All times are in nanoseconds; points in time are CLOCK_MONOTONIC as the
 * reader's time namespace gives it (a snapshot's or a sample read's
 * caller, a trace session's or the exit collector's opener; ABI 1.14),
 * 0 for a point before the namespace's zero. All
 * structures are naturally aligned, have no implicit padding and are
 * zero-filled where reserved.
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
#define KTAU_ABI_VERSION_MINOR	14

/* Instrumentation groups, as named in /proc/ktau/control and functions. */
#define KTAU_GROUP_SYSCALL	0	/* "syscall" */
#define KTAU_GROUP_IRQ		1	/* "irq" */
#define KTAU_GROUP_SOFTIRQ	2	/* "softirq" */
#define KTAU_GROUP_SCHED	3	/* "sched" */
#define KTAU_GROUP_FAULT	4	/* "fault" */
#define KTAU_GROUP_SIGNAL	5	/* "signal" */
#define KTAU_GROUP_DYNAMIC	6	/* "dynamic": registered at run time */
#define KTAU_GROUP_KVM		7	/* "kvm": guest mode and exits (ABI 1.4) */
#define KTAU_NR_GROUPS		8

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
#define KTAU_ID_USER		10	/* "user_mode": samples in user mode */
#define KTAU_ID_KERNEL		11	/* "kernel_other": samples in the kernel */
					/* outside any KTAU routine */
#define KTAU_ID_SOFTIRQ		12	/* "softirq": soft interrupts, vector */
					/* not shown to the reader (ABI 1.3) */
#define KTAU_ID_KVM_GUEST	13	/* "kvm_guest": a vCPU in guest mode */
#define KTAU_ID_KVM_EXIT	14	/* "kvm_exit": an exit of a reason */
					/* without a name of its own (ABI 1.4) */
#define KTAU_ID_SOFTIRQ_BASE	16	/* + softirq vector (TIMER = 1, ...) */

/*
 * Time off the CPU: the scheduler's two routines. The exclusive time of
 * every other routine is time the task spent on a CPU in the kernel, so a
 * task's kernel time is reported in two sums, on and off the CPU (ABI 1.3).
 */
#define KTAU_ID_IS_OFF_CPU(id)	\
	((__u32)(id) - KTAU_ID_SCHED_VOL <= KTAU_ID_SCHED_INVOL - KTAU_ID_SCHED_VOL)
/*
 * Time a vCPU thread spent in guest mode (ABI 1.4): on a CPU, but neither
 * kernel time nor off-CPU time; reported as a third sum.
 */
#define KTAU_ID_IS_GUEST(id)	((__u32)(id) == KTAU_ID_KVM_GUEST)
#define KTAU_ID_SYSCALL_BASE	32	/* + system call number */

/* One routine in a profile. */
struct ktau_entry {
	__u32 id;		/* function ID */
	__u32 samples;		/* samples taken in it (ABI 1.1; saturates) */
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
 * read (ptrace read access, PTRACE_MODE_READ_FSCREDS, as for
 * /proc/PID/io) are counted in nmissing, not returned.
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

/*
 * The shared page (ABI 1.1): a thread registers one page of its own memory
 * with KTAU_IOC_SHARED_REGISTER on /proc/ktau/profiles, and from then on
 * the kernel adds every kernel routine that ends in that thread to the
 * page, so that the thread reads its kernel counters with plain loads:
 *
 *	do {
 *		seq = READ_ONCE(page->seq);	(retry while odd)
 *		rmb(); copy what is needed; rmb();
 *	} while (seq & 1 || READ_ONCE(page->seq) != seq);
 *
 * seq changes (by two) with every update, so an unchanged seq also means
 * that no kernel routine ended since the last read. The counters start
 * at zero at registration and are not cleared by KTAU_IOC_RESET. Times
 * are in clock units: ns = units * clock_mult >> clock_shift (a 128-bit
 * product).
 *
 * groups[g] sums the routines of group g: count and excl exactly; incl
 * without recursion, but routines of different groups nest (an interrupt
 * in a system call is in both incls), so the kernel time of the thread
 * is the sum of excl over the groups, less the guest mode of a vCPU
 * thread, which group "kvm" sums with its exits (ABI 1.4). entries[] has a routine's own
 * totals; a routine with no free entry is counted in unlisted.
 *
 * The registration ends with KTAU_IOC_SHARED_UNREGISTER, exec and exit;
 * it is not inherited: a new thread or process starts unregistered.
 */
#define KTAU_SHARED_GROUPS	8	/* >= KTAU_NR_GROUPS */
#define KTAU_SHARED_ENTRIES	120

struct ktau_shared_counts {
	__u64 count;		/* completed routines */
	__u64 incl;		/* inclusive time, clock units */
	__u64 excl;		/* exclusive time, clock units */
};

struct ktau_shared_entry {
	__u32 id;		/* function ID; KTAU_ID_NONE: unused */
	__u32 group;		/* KTAU_GROUP_* */
	__u64 count;
	__u64 incl;
	__u64 excl;
};

struct ktau_shared {
	__u32 seq;		/* odd while the kernel updates the page */
	__u32 size;		/* sizeof(struct ktau_shared) */
	__u32 abi;		/* KTAU_ABI_VERSION_MAJOR << 16 | MINOR */
	__u32 nentries;		/* KTAU_SHARED_ENTRIES */
	__u32 clock_mult;	/* ns = units * clock_mult >> clock_shift */
	__u32 clock_shift;
	__s32 tid;		/* the thread, in its pid namespace */
	__u32 reserved0;
	__u64 updates;		/* routines ended since registration */
	__u64 unlisted;		/* of which not in entries[] */
	__u64 reserved[2];
	struct ktau_shared_counts groups[KTAU_SHARED_GROUPS];
	struct ktau_shared_entry entries[KTAU_SHARED_ENTRIES];
};

/* Argument of KTAU_IOC_SHARED_REGISTER. */
struct ktau_shared_reg {
	__u64 addr;		/* page-aligned, writable, of the caller */
	__u32 size;		/* sizeof(struct ktau_shared) */
	__u32 flags;		/* zero */
};

#define KTAU_IOC_SHARED_REGISTER	_IOW(KTAU_IOC_MAGIC, 7, struct ktau_shared_reg)
#define KTAU_IOC_SHARED_UNREGISTER	_IO(KTAU_IOC_MAGIC, 8)

/*
 * Sampling (ABI 1.1). KTAU_IOC_SAMPLE_START on /proc/ktau/profiles creates
 * a counter for one thread inside the kernel. At each overflow the kernel
 * appends a struct ktau_sample to the thread's buffer, adds one to the
 * samples of the KTAU routine in progress (KTAU_ID_USER in user mode),
 * and every watermark samples sends the thread the signal signo, if any:
 * watermark = capacity tells the thread once per bufferful, watermark 1
 * at every overflow. KTAU_IOC_SAMPLE_READ drains the buffer. A full buffer
 * counts new samples as lost, or with KTAU_SAMPLE_OVERWRITE replaces the
 * oldest (and counts those as lost). Sampling ends with
 * KTAU_IOC_SAMPLE_STOP, exec and exit of the thread.
 */
#define KTAU_SAMPLE_CPU_CLOCK		0	/* software, always there */
#define KTAU_SAMPLE_TASK_CLOCK		1	/* software, always there */
#define KTAU_SAMPLE_CYCLES		2	/* hardware, if the PMU has it */
#define KTAU_SAMPLE_INSTRUCTIONS	3	/* hardware, if the PMU has it */
#define KTAU_NR_SAMPLE_EVENTS		4

#define KTAU_SAMPLE_FREQ	0x1	/* period is a frequency in Hz */
#define KTAU_SAMPLE_NO_USER	0x2	/* do not sample in user mode */
#define KTAU_SAMPLE_NO_KERNEL	0x4	/* do not sample in the kernel */
#define KTAU_SAMPLE_OVERWRITE	0x8	/* full buffer: overwrite the oldest */
#define KTAU_SAMPLE_FLAGS	0xf

#define KTAU_SAMPLE_MAX_CAPACITY	(1U << 16)	/* samples per buffer */
#define KTAU_SAMPLE_MAX_FREQ		100000		/* Hz */
#define KTAU_SAMPLE_MIN_CLOCK_NS	10000		/* clock events' period */

struct ktau_sample_attr {
	__u32 size;		/* sizeof(struct ktau_sample_attr) */
	__u32 flags;		/* KTAU_SAMPLE_* flags */
	__s32 tid;		/* thread to sample; 0: the caller */
	__u32 event;		/* KTAU_SAMPLE_CPU_CLOCK, ... */
	__u64 period;		/* events per sample (ns for the clocks), */
				/* or samples per second with _FREQ */
	__u32 capacity;		/* samples in the buffer: a power of two */
	__u32 watermark;	/* signal every this many; 0: never */
	__s32 signo;		/* signal to send; 0: none */
	__u32 reserved;		/* zero */
};

/* struct ktau_sample.flags */
#define KTAU_SAMPLE_USER	0x1	/* taken in user mode */

struct ktau_sample {
	__u64 ip;		/* 0 for kernel addresses the reader may */
				/* not see (kptr_restrict) */
	__u64 time_ns;		/* CLOCK_MONOTONIC */
	__u32 id;		/* KTAU routine in progress, or KTAU_ID_USER */
	__u32 flags;		/* KTAU_SAMPLE_USER */
};

/* Argument of KTAU_IOC_SAMPLE_READ and KTAU_IOC_SAMPLE_STOP. */
struct ktau_sample_read {
	__u32 size;		/* in: sizeof(struct ktau_sample_read) */
	__s32 tid;		/* in: the sampled thread; 0: the caller */
	__u64 buf;		/* in: user pointer to struct ktau_sample[] */
	__u32 max;		/* in: room in buf, in samples; 0: stats only */
	__u32 nread;		/* out: samples written to buf */
	__u64 taken;		/* out: overflows since the start */
	__u64 lost;		/* out: samples dropped or overwritten */
	__u64 signals;		/* out: signals sent */
	__u64 buffered;		/* out: samples left in the buffer */
};

#define KTAU_IOC_SAMPLE_START	_IOW(KTAU_IOC_MAGIC, 9, struct ktau_sample_attr)
#define KTAU_IOC_SAMPLE_READ	_IOWR(KTAU_IOC_MAGIC, 10, struct ktau_sample_read)
#define KTAU_IOC_SAMPLE_STOP	_IOWR(KTAU_IOC_MAGIC, 11, struct ktau_sample_read)

/*
 * User stacks in samples (ABI 1.6): an interpreter's own stack, copied by
 * the kernel at each overflow into the thread's buffer, so that the
 * thread needs no signal per sample to record it. A struct
 * ktau_stack_desc says, once, where the chain starts and what to copy:
 * from base, nderef pointer loads (p = *(u64 *)(p + deref_off[i]), p =
 * base first) give the innermost frame; from each frame the nfields
 * 64-bit words at field_off[] are copied and the next frame is the word
 * at next_off, until a NULL pointer or max_depth frames. The offsets of a
 * frame span at most KTAU_STACK_MAX_SPAN bytes (one copy per frame). A
 * load that faults ends the chain (KTAU_SAMPLE_STACK_FAULT); a chain
 * longer than max_depth is cut (KTAU_SAMPLE_STACK_CUT). Every sample
 * holds the frames found then: KTAU_SAMPLE_NFRAMES(flags) of them,
 * nfields words each, innermost first, read with
 * KTAU_IOC_SAMPLE_READ_STACK. capacity * max_depth * nfields is at most
 * KTAU_STACK_MAX_WORDS; KTAU_SAMPLE_OVERWRITE is refused with a stack.
 * The kernel reads only the sampled thread's memory; a thread of another
 * process needs ptrace attach access to it (as process_vm_readv()), not
 * only the permission sampling needs (EPERM).
 */
#define KTAU_STACK_MAX_DEREF	4
#define KTAU_STACK_MAX_FIELDS	4
#define KTAU_STACK_MAX_DEPTH	128
#define KTAU_STACK_MAX_SPAN	128		/* bytes of a frame read */
#define KTAU_STACK_MAX_WORDS	(1U << 20)	/* per buffer: 8 MiB */

/* struct ktau_sample.flags, with a stack */
#define KTAU_SAMPLE_STACK_CUT	0x2	/* the chain went on beyond max_depth */
#define KTAU_SAMPLE_STACK_FAULT	0x4	/* a load faulted: the chain ends there */
#define KTAU_SAMPLE_NFRAMES(flags)	(((flags) >> 16) & 0xff)

struct ktau_stack_desc {
	__u64 base;		/* user address the walk starts from */
	__u32 nderef;		/* loads to the innermost frame, 1 to 4 */
	__u32 deref_off[KTAU_STACK_MAX_DEREF];
	__u32 next_off;		/* offset of the next (outer) frame's pointer */
	__u32 nfields;		/* words copied per frame, 1 to 4 */
	__u32 field_off[KTAU_STACK_MAX_FIELDS];
	__u32 max_depth;	/* frames per sample, 1 to 128 */
	__u32 reserved[2];	/* zero; 64 bytes on every ABI */
};

struct ktau_sample_stack_attr {
	struct ktau_sample_attr attr;	/* attr.size: sizeof(attr) */
	struct ktau_stack_desc stack;
};

struct ktau_sample_stack_read {
	struct ktau_sample_read r;	/* r.size: sizeof(r) */
	__u64 words;		/* in: user pointer to __u64[] for the frames */
	__u32 max_words;	/* in: room in words; samples whose frames */
				/* do not fit stay in the buffer */
	__u32 nwords;		/* out: words written */
};

#define KTAU_IOC_SAMPLE_START_STACK \
	_IOW(KTAU_IOC_MAGIC, 17, struct ktau_sample_stack_attr)
#define KTAU_IOC_SAMPLE_READ_STACK \
	_IOWR(KTAU_IOC_MAGIC, 18, struct ktau_sample_stack_read)
#define KTAU_IOC_SAMPLE_STOP_STACK \
	_IOWR(KTAU_IOC_MAGIC, 19, struct ktau_sample_stack_read)

/*
 * Dynamic probes (ABI 1.2): entry/exit timers on a kernel function at run
 * time, through the kernel's function-entry/exit probing (fprobe). A probe
 * is added with KTAU_IOC_PROBE_ADD on an open file of /proc/ktau/probes
 * (CAP_PERFMON or CAP_SYS_ADMIN) and belongs to that open file: it is
 * removed with KTAU_IOC_PROBE_REMOVE, when the file is closed (the tool
 * exits or is killed), when the module that holds the function is
 * unloaded, and by KTAU_IOC_RESET (or "reset" in /proc/ktau/control).
 * The function gets a function ID in group "dynamic", named after it; the
 * same function probed again gets the same ID. Its calls are timed in the
 * per-task profiles like every other routine, nested in whatever was in
 * progress. Reading /proc/ktau/probes lists the probes, one per line:
 * "<id> <function> <owner pid> <missed>".
 */
#define KTAU_PROBE_NAME_LEN	64	/* "function" or "module:function" */
#define KTAU_PROBE_MAX		64	/* probes at one time, system-wide */

struct ktau_probe_req {
	__u32 size;		/* in: sizeof(struct ktau_probe_req) */
	__u32 flags;		/* in: zero */
	__s32 id;		/* out (ADD): the function ID; */
				/* in (REMOVE): used when name is empty */
	__u32 reserved;		/* in: zero */
	char name[KTAU_PROBE_NAME_LEN];	/* in: NUL-terminated */
};

#define KTAU_IOC_PROBE_ADD	_IOWR(KTAU_IOC_MAGIC, 12, struct ktau_probe_req)
#define KTAU_IOC_PROBE_REMOVE	_IOW(KTAU_IOC_MAGIC, 13, struct ktau_probe_req)

/*
 * Trace mode (ABI 1.5). Each open file of /proc/ktau/trace is a trace
 * session. KTAU_IOC_TRACE_ATTACH gives a thread a buffer of capacity
 * records in the session; from then on, every routine of the session's
 * groups that the thread completes (the same calls its profile counts)
 * appends one struct ktau_trace_rec with its start and end, and every
 * event one record of kind KTAU_TRACE_EVENT. A call in progress at the
 * attach is recorded when it ends, with its true start. With
 * KTAU_TRACE_INHERIT the threads and processes the thread creates
 * afterwards are attached too, from their first instruction. Tracing
 * goes on across exec, and ends with KTAU_IOC_TRACE_DETACH, the close of
 * the session's file, the thread's exit, and an exec of a program that is
 * not dumpable when the opener had no CAP_PERFMON (counted as denied,
 * unless the thread had been detached before). A
 * full buffer counts new records as lost; when there is room again, one
 * record of kind KTAU_TRACE_LOST gives how many were lost and between
 * which times.
 *
 * read() drains the buffers: a struct ktau_trace_chunk, then its nrecs
 * records, per thread with records, whole chunks only; 0 when nothing is
 * buffered. A thread's records come in the order its calls ended, so a
 * parent follows its children. The buffer of a thread that exited stays
 * in the session until read; its last chunk has KTAU_TRACE_EXITED (or
 * KTAU_TRACE_DETACHED, after a detach or such an exec).
 *
 * Attaching another thread needs the permission that reading its profile
 * needs (ptrace read access, as for /proc/PID/io, or CAP_PERFMON).
 *
 * KTAU_TRACE_ALL (ABI 1.6, tid 0, CAP_PERFMON or CAP_SYS_ADMIN, else
 * EPERM): the whole system, every user thread of the opener's pid
 * namespace but the caller's own, and every user task created afterwards
 * by anyone; one such session at a time (EBUSY), until it is closed.
 */
#define KTAU_TRACE_INHERIT	0x1	/* attach the tasks it creates */
#define KTAU_TRACE_ALL		0x2	/* every user task (ABI 1.6) */
#define KTAU_TRACE_FLAGS	0x3

#define KTAU_TRACE_MAX_CAPACITY	(1U << 20)	/* records per thread */
#define KTAU_TRACE_MAX_TASKS	4096		/* buffers per session */
#define KTAU_TRACE_MAX_BYTES	(256U << 20)	/* of buffers per session */

/* Argument of KTAU_IOC_TRACE_ATTACH. */
struct ktau_trace_attr {
	__u32 size;		/* sizeof(struct ktau_trace_attr) */
	__u32 flags;		/* KTAU_TRACE_INHERIT, KTAU_TRACE_ALL */
	__s32 tid;		/* thread to trace; 0: the caller */
	__u32 capacity;		/* records per buffer: a power of two */
	__u64 groups;		/* groups recorded: 1 << KTAU_GROUP_*; */
				/* 0: every group */
};

/* struct ktau_trace_rec.kind */
#define KTAU_TRACE_CALL		1	/* a completed routine */
#define KTAU_TRACE_EVENT	2	/* an event: start_ns == end_ns */
#define KTAU_TRACE_LOST		3	/* id records lost between start */
					/* and end (ends of the lost calls) */

struct ktau_trace_rec {
	__u64 start_ns;		/* CLOCK_MONOTONIC */
	__u64 end_ns;		/* CLOCK_MONOTONIC */
	__u32 id;		/* function ID; LOST: records lost */
	__u16 depth;		/* routines it was nested in */
	__u8 kind;		/* KTAU_TRACE_* */
	__u8 reserved;		/* zero */
};

/* struct ktau_trace_chunk.flags */
#define KTAU_TRACE_EXITED	0x1	/* the thread's last records */
#define KTAU_TRACE_DETACHED	0x2	/* tracing of it ended (detach, */
					/* credentials changed) */

/* Header of the records of one thread in read(). */
struct ktau_trace_chunk {
	__u32 size;		/* bytes: header and records */
	__u32 nrecs;		/* struct ktau_trace_rec that follow */
	__s32 tid;		/* in the reader's pid namespace; 0: none */
	__s32 pid;		/* thread group ID, the same way */
	__u32 flags;		/* KTAU_TRACE_EXITED, ... */
	__u32 reserved;		/* zero */
	char comm[16];		/* NUL-terminated, at the chunk's read */
	__u64 lost;		/* records lost since the attach */
};

/* KTAU_IOC_TRACE_STATS: the session's totals. */
struct ktau_trace_stats {
	__u64 tasks;		/* threads attached since the open */
	__u64 records;		/* records written to its buffers */
	__u64 lost;		/* records lost: buffer full */
	__u64 refused;		/* attaches refused: bounds, memory, in */
				/* another session, no profile (inherited, */
				/* walk) */
	__u64 denied;		/* traced threads that exec'd a program */
				/* that is not dumpable */
	__u64 buffered;		/* records waiting to be read */
};

#define KTAU_IOC_TRACE_ATTACH	_IOW(KTAU_IOC_MAGIC, 14, struct ktau_trace_attr)
#define KTAU_IOC_TRACE_DETACH	_IOW(KTAU_IOC_MAGIC, 15, __s32)
#define KTAU_IOC_TRACE_STATS	_IOR(KTAU_IOC_MAGIC, 16, struct ktau_trace_stats)

#endif /* _UAPI_LINUX_KTAU_H */
