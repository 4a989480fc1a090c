/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * libktau: read, name, compare and write KTAU kernel profiles.
 *
 * KTAU keeps, for every task, a profile of the kernel routines it runs
 * through (see Documentation/trace/ktau.rst). This library reads those
 * profiles through /proc/ktau with a constant number of system calls,
 * decodes the binary records strictly (truncated or garbled input is an
 * error, never a crash), names function IDs through the registry, diffs
 * and sums snapshots, and writes TAU profile directories, folded stacks
 * and JSON.
 *
 * Conventions: functions that can fail return 0 (or a count) on success
 * and a negative errno on failure; they never print. Objects returned
 * through a pointer argument are owned by the caller and freed with the
 * matching *_free() function. All times are nanoseconds. A snapshot that a
 * function appends to or grows (ktau_decode, ktau_snap_add_task,
 * ktau_snap_accumulate's first argument) must come from this library
 * (ktau_snap_new() or a function that returns one); read-only arguments may
 * be built by hand. Thread-safe as long as objects are not shared.
 */
#ifndef LIBKTAU_H
#define LIBKTAU_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LIBKTAU_VERSION "1.0.0"

/* Selectors of ktau_snapshot(): the KTAU_SNAP_* values of <linux/ktau.h>. */
#define KTAU_LIB_SELF		0x1	/* the calling thread */
#define KTAU_LIB_PIDS		0x2	/* the threads whose tids are given */
#define KTAU_LIB_ALL		0x4	/* every thread the caller may read */
#define KTAU_LIB_AGGREGATE	0x8	/* system-wide totals (CAP_PERFMON) */
#define KTAU_LIB_PROCESS	0x10	/* with PIDS: the ids are processes */

/* Task flags: the KTAU_REC_* values, plus one of the library. */
#define KTAU_TASK_AGGREGATE	0x1	/* system-wide totals */
#define KTAU_TASK_EXITED	0x2	/* final profile of an exited task */
#define KTAU_TASK_KTHREAD	0x4	/* a kernel thread */
#define KTAU_TASK_PROCESS	0x100	/* a sum of threads (ktau_snap_sum) */

/* One routine of a profile. */
struct ktau_func_stat {
	uint32_t id;		/* function ID */
	uint64_t count;		/* completed calls */
	uint64_t incl_ns;	/* inclusive time */
	uint64_t excl_ns;	/* exclusive time */
};

/* One task (or process, or the aggregate). Entries are sorted by id. */
struct ktau_task {
	int32_t tid;		/* thread ID; for a process, its pid */
	int32_t pid;		/* thread group ID; 0 for the aggregate */
	uint32_t flags;		/* KTAU_TASK_* */
	uint32_t nthreads;	/* threads summed (1 for a thread) */
	char comm[16];		/* NUL-terminated */
	uint64_t start_ns;	/* task start, CLOCK_MONOTONIC */
	uint64_t stack_overflows;
	uint64_t table_overflows;
	uint64_t unmatched;
	size_t nentries;
	struct ktau_func_stat *entries;
};

/* A set of task profiles taken together. */
struct ktau_snap {
	uint64_t time_ns;	/* CLOCK_MONOTONIC of the snapshot */
	uint64_t base_ns;	/* for a diff: time of the earlier snapshot */
	uint32_t nmissing;	/* tasks gone or not readable */
	uint32_t is_delta;	/* 1: a diff of two snapshots */
	char hostname[64];	/* where it was taken ("" if unknown) */
	char release[64];	/* kernel release (uname -r) */
	size_t ntasks;
	struct ktau_task *tasks;
};

/* ---- Access to /proc/ktau ---------------------------------------- */

struct ktau;

/*
 * Open /proc/ktau/profiles and check the ABI version. -ENOENT: the kernel
 * has no KTAU (CONFIG_KTAU=n); -EPROTO: an incompatible ABI major.
 */
int ktau_open(struct ktau **kp);
void ktau_close(struct ktau *k);

/*
 * Take a snapshot with one KTAU_IOC_SNAPSHOT (plus retries when the buffer
 * was too small: the buffer is kept in k, so that the next call needs
 * one). flags: KTAU_LIB_*; pids/npids with KTAU_LIB_PIDS. -EPERM:
 * KTAU_LIB_AGGREGATE needs CAP_PERFMON or CAP_SYS_ADMIN.
 */
int ktau_snapshot(struct ktau *k, unsigned int flags, const pid_t *pids,
		  size_t npids, struct ktau_snap **out);

/* The number of ioctl()s ktau_snapshot() has made on k so far. */
unsigned long ktau_nr_ioctls(const struct ktau *k);

/*
 * Decode records as KTAU_IOC_SNAPSHOT or the collector return them. Checks
 * every size, reserved field, terminator and entry; -EBADMSG for anything
 * that breaks the ABI. Appends to *out when it is not NULL.
 */
int ktau_decode(const void *buf, size_t len, struct ktau_snap **out);

/* Encode snap as ABI 1.0 records; *buf is malloc()ed. */
int ktau_encode(const struct ktau_snap *snap, void **buf, size_t *len);

struct ktau_snap *ktau_snap_new(void);
void ktau_snap_free(struct ktau_snap *snap);
/* Deep copy. */
int ktau_snap_dup(const struct ktau_snap *snap, struct ktau_snap **out);
/* Set hostname and release of snap from uname(2). */
void ktau_snap_fill_host(struct ktau_snap *snap);
/* Append a copy of t. */
int ktau_snap_add_task(struct ktau_snap *snap, const struct ktau_task *t);

/* The task with this tid (not the aggregate), or NULL. */
const struct ktau_task *ktau_snap_find(const struct ktau_snap *snap, pid_t tid);
/* The aggregate record, or NULL. */
const struct ktau_task *ktau_snap_aggregate(const struct ktau_snap *snap);
/* The entry of id in t, or NULL (binary search). */
const struct ktau_func_stat *ktau_task_find(const struct ktau_task *t, uint32_t id);
/* Sum of the exclusive times of all entries of t. */
uint64_t ktau_task_total_excl(const struct ktau_task *t);

/* Sort tasks by pid, then tid (the aggregate first). */
void ktau_snap_sort(struct ktau_snap *snap);

/*
 * What happened between a and b (b taken later): for each task of b, its
 * values less those of the same task in a (same tid and start time). A
 * task new in b is taken whole; a value that decreased means the table
 * was reset and is taken whole as well. Entries that did not change are
 * left out. Tasks of a that are gone are not in the result.
 */
int ktau_snap_diff(const struct ktau_snap *a, const struct ktau_snap *b,
		   struct ktau_snap **out);

/*
 * Sum the threads of each process into one task (flag KTAU_TASK_PROCESS,
 * tid = pid, nthreads = threads summed, comm of the main thread or else
 * the first thread). The aggregate is kept as it is.
 */
int ktau_snap_sum(const struct ktau_snap *snap, struct ktau_snap **out);

/*
 * Add the tasks of b into a: a task of b that is in a (same tid, pid and
 * start time) has its values added, others are appended. Used to total
 * a series of deltas.
 */
int ktau_snap_accumulate(struct ktau_snap *a, const struct ktau_snap *b);

/* ---- Snapshot files (what `ktaud watch` and `dump --save` write) ----- */

/*
 * A self-contained file: a 192-byte header ("KTAUSNAP", times, hostname,
 * kernel release), the registry lines of the IDs used, then the records in
 * the binary ABI. reg may be NULL.
 */
struct ktau_registry;
int ktau_snap_save(const char *path, const struct ktau_snap *snap,
		   const struct ktau_registry *reg);
/* Parse a file's bytes; *regp (if not NULL) gets its registry. */
int ktau_snap_parse_file(const void *buf, size_t len, struct ktau_snap **out,
			 struct ktau_registry **regp);
int ktau_snap_load(const char *path, struct ktau_snap **out,
		   struct ktau_registry **regp);

/* ---- The function registry (/proc/ktau/functions) ------------------ */

/* Group numbers: KTAU_GROUP_* of <linux/ktau.h>. */
#define KTAU_LIB_NR_GROUPS 7
/* "syscall", "irq", ...; NULL when out of range. */
const char *ktau_group_name(int group);
/* The TAU class of a group: "SYSCALL", "IRQ", "BH", "SCHED", "EXCEPT", ... */
const char *ktau_group_class(int group);
/* Group number of a name, or -1. */
int ktau_group_parse(const char *name);

/* Load /proc/ktau/functions. */
int ktau_registry_load(struct ktau_registry **out);
/* Parse "id group name" lines (# comments); -EBADMSG on a bad line. */
int ktau_registry_parse(const char *text, size_t len, struct ktau_registry **out);
void ktau_registry_free(struct ktau_registry *reg);
/* Number of registered IDs. */
size_t ktau_registry_size(const struct ktau_registry *reg);
/*
 * Name and group of an ID. Works with reg NULL or an ID that is not
 * registered: fixed IDs have their fixed names and groups, others are
 * named "ktau_id_<id>". A generated name is in a thread-local buffer that
 * the next call in the same thread overwrites.
 */
const char *ktau_func_name(const struct ktau_registry *reg, uint32_t id);
int ktau_func_group(const struct ktau_registry *reg, uint32_t id);
/* ID of a name, or 0 when there is none. */
uint32_t ktau_func_id(const struct ktau_registry *reg, const char *name);
/* Add the IDs of src that *dst does not have (*dst NULL: a new one). */
int ktau_registry_merge(struct ktau_registry **dst, const struct ktau_registry *src);
/* Write the lines of reg (all IDs, or those in snap when snap != NULL). */
int ktau_registry_format(const struct ktau_registry *reg,
			 const struct ktau_snap *snap, char **text, size_t *len);

/* ---- Control and the exit collector -------------------------------- */

/* Write one command to /proc/ktau/control: "<group> on|off", "all on|off",
 * "reset". -EPERM: needs CAP_PERFMON or CAP_SYS_ADMIN. */
int ktau_control(const char *cmd);
/* Read /proc/ktau/control; *text is malloc()ed. */
int ktau_control_read(char **text);
/* "MAJOR.MINOR" of /proc/ktau/version into the two numbers. */
int ktau_abi_version(unsigned int *major, unsigned int *minor);

/* Open a collector (/proc/ktau/collect): returns an fd or -errno. */
int ktau_collect_open(void);
/* Make the calling thread (and what it creates later) a member. */
int ktau_collect_join(int fd);
/* Read every queued record into *out (appending when not NULL);
 * returns the number read. */
int ktau_collect_read(int fd, struct ktau_snap **out);
/* Counters: records dropped (queue full) and denied (credentials). */
int ktau_collect_stats(int fd, uint64_t *collected, uint64_t *dropped,
		       uint64_t *denied);

/* ---- Writers ------------------------------------------------------- */

/* TAU profile directory options. */
struct ktau_tau_opts {
	/* 1: node = dense process number, thread = dense thread number
	 * within the process (sorted by pid, tid). 0: one node, every task
	 * a thread. */
	int dense_processes;
	/* Extra metadata (name/value pairs), may be NULL. */
	const char *const *extra_meta;
	size_t nextra;
};

/*
 * Write snap as a TAU profile directory: one file profile.<node>.0.<thread>
 * per task, one metric TIME (microseconds) in dir itself (created when
 * missing; stale profile.* files in it are removed). Kernel routines are in
 * groups "TAU_KERNEL_MERGE|KTAU_<CLASS>", per-group totals (SYSCALL, IRQ,
 * ...) in "KERNEL_GROUPS|TAU_KERNEL_MERGE". Metadata: pid, tid, comm,
 * Hostname, OS Release and more. Returns the number of files.
 */
int ktau_write_tau(const char *dir, const struct ktau_snap *snap,
		   const struct ktau_registry *reg, const struct ktau_tau_opts *opts);
/* One TAU profile file of task t to f. */
int ktau_write_tau_task(FILE *f, const struct ktau_snap *snap,
			const struct ktau_task *t, const struct ktau_registry *reg,
			int node, int thread, const struct ktau_tau_opts *opts);

/*
 * Folded stacks (flamegraph.pl, inferno, speedscope): one line per task
 * and routine, "comm-pid/tid;GROUP;routine <exclusive ns>" (with
 * by_process, "comm-pid;GROUP;routine"). Zero-time entries are skipped.
 */
int ktau_write_folded(FILE *f, const struct ktau_snap *snap,
		      const struct ktau_registry *reg, int by_process);

/* JSON (json-c): {"time_ns":..,"tasks":[{"tid":..,"entries":[..]}]}. */
int ktau_write_json(FILE *f, const struct ktau_snap *snap,
		    const struct ktau_registry *reg, int pretty);

/* A short text for a negative return value of this library. */
const char *ktau_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif /* LIBKTAU_H */
