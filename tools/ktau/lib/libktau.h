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
 *
 * Two libraries: libktau (-lktau, pkg-config libktau) is everything in
 * this header but the runtime section "User-level instrumentation";
 * libktau-runtime (-lktau-runtime, pkg-config libktau-runtime) is that
 * section, with the -finstrument-functions hooks
 * (__cyg_profile_func_enter/exit). A program or a profiler that has hooks
 * of its own links libktau alone and gets none of ours.
 *
 * ABI: libktau.so.2 exports exactly the functions declared here, each
 * with the symbol version KTAU_2.0 (later ones with later versions);
 * nothing else. Structures that the caller allocates and passes in or
 * gets filled (ktau_tau_opts, ktau_sample_spec, ktau_user_stats,
 * ktau_sample_stats, ktau_trace_totals, ktau_page_*, and ktau_snap, which
 * callers may build) end in reserved fields: zero
 * them (initialize with {0}), and later versions use them without a new
 * soname. Elements of arrays that the library allocates (ktau_task,
 * ktau_func_stat, ...) keep their size within soname 2 (libktau 2.0
 * changed 1.0's ktau_snap and moved the runtime out: hence soname 2).
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

/* The version of this header; ktau_version() gives the library's. */
#define LIBKTAU_VERSION_MAJOR 2
#define LIBKTAU_VERSION_MINOR 3
#define LIBKTAU_VERSION_PATCH 0
#define LIBKTAU_VERSION "2.3.0"

/*
 * The version of the library that is running ("2.0.0"), which may be
 * newer than LIBKTAU_VERSION of the header a program was built with. The
 * soname's number is the major version.
 */
const char *ktau_version(void);

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
	uint64_t samples;	/* samples taken in it (ABI 1.1 sampling) */
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
	uint64_t wall_ns;	/* CLOCK_REALTIME at time_ns (0: unknown) */
	char boot_id[40];	/* the boot it was taken in (/proc/sys/kernel/
				 * random/boot_id, NUL-terminated; "" unknown) */
	uint64_t reserved[4];	/* zero (see the top of this file) */
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

/* A short text for a negative return value of this library. */
const char *ktau_strerror(int err);

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
/*
 * Sum of the exclusive times of all entries of t: on-CPU kernel time plus
 * the time off the CPU (the scheduler's routines) plus, for a vCPU thread,
 * the time in guest mode. The three apart:
 */
uint64_t ktau_task_total_excl(const struct ktau_task *t);
/* Time t spent on a CPU in the kernel: every routine but those below. */
uint64_t ktau_task_oncpu_excl(const struct ktau_task *t);
/* Time t spent off the CPU, blocked or preempted (KTAU_ID_IS_OFF_CPU). */
uint64_t ktau_task_offcpu(const struct ktau_task *t);
/* Time a vCPU thread spent in guest mode (KTAU_ID_IS_GUEST; ABI 1.4). */
uint64_t ktau_task_guest(const struct ktau_task *t);

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
/*
 * Save snap to path, which is never seen half-written; an existing path
 * is replaced only when it is a snapshot file itself (-EEXIST for any
 * other file: it is left as it is).
 */
int ktau_snap_save(const char *path, const struct ktau_snap *snap,
		   const struct ktau_registry *reg);
/* The same, never replacing anything: -EEXIST when path exists. */
int ktau_snap_save_new(const char *path, const struct ktau_snap *snap,
		       const struct ktau_registry *reg);
/* Parse a file's bytes; *regp (if not NULL) gets its registry. */
int ktau_snap_parse_file(const void *buf, size_t len, struct ktau_snap **out,
			 struct ktau_registry **regp);
int ktau_snap_load(const char *path, struct ktau_snap **out,
		   struct ktau_registry **regp);

/* ---- The function registry (/proc/ktau/functions) ------------------ */

/* Group numbers: KTAU_GROUP_* of <linux/ktau.h>. */
#define KTAU_LIB_NR_GROUPS 8
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

struct ktau_sample_profile;

/*
 * Output directories that never lose anybody's data; every writer of a
 * TAU profile directory in libktau and ktaud goes through them.
 *
 * ktau_outdir_open() makes dir (and its parents) and takes it for a
 * writer of a kind ("kernel": ktau_write_tau; "user": the runtime;
 * "merge", "combine": ktaud) and a node (an MPI rank; -1: the writer
 * writes every node). A manifest ".ktau-written.<kind>[.<node>]" in dir
 * lists what that writer wrote. Opening
 *  - refuses with -ENOTEMPTY, touching nothing, a directory that holds
 *    anything no manifest of the same kind lists (a user's own TAU
 *    profile, notes, another kind's output), unless flags has
 *    KTAU_OUTDIR_FORCE (which still never replaces such a file);
 *  - returns -EBUSY while another process writes as the same kind and
 *    node there (the manifest is locked with flock() until closed);
 *  - returns -EEXIST, touching nothing, when another process finished
 *    writing that kind and node there after this one started as the
 *    program it is, and some of it is still there (also with
 *    KTAU_OUTDIR_FORCE): it is not an earlier run's output;
 *  - returns -EPERM for a manifest that is not the user's own regular
 *    file with one link and no write access for others;
 *  - removes the files of the writer's earlier run, the ones its
 *    manifest lists that still look like its own (never through a
 *    symbolic link), and nothing else.
 * With KTAU_OUTDIR_CHECK, only says (0 or the error, *od NULL) whether
 * dir would be refused for others' files, touching nothing.
 * ktau_outdir_create() creates dir/name (name: "file" or "subdir/file")
 * with O_EXCL, after listing it: -EEXIST (errno) when the file exists,
 * which is never replaced (two ranks with one number, two jobs in one
 * directory). On errors, ktau_output_error() says what was wrong.
 * From its first open to its last close (in any order) a thread has
 * SIGXFSZ blocked, unless it was already: a write over a file size limit
 * fails with EFBIG, and the signal takes its effect at close, after a
 * failed write's files are removed. Only SIGXFSZ's bit changes. A child
 * made by fork() meanwhile starts with SIGXFSZ as it was; one made by
 * posix_spawn(), vfork(), system() or popen() starts with it blocked
 * (POSIX_SPAWN_SETSIGMASK sets its mask). Open, write and close od in one
 * thread.
 */
struct ktau_outdir;
#define KTAU_OUTDIR_FORCE	1
/* Only check (before a long run): what open would refuse, nothing made. */
#define KTAU_OUTDIR_CHECK	2
int ktau_outdir_open(const char *dir, const char *kind, int node, unsigned int flags,
		     struct ktau_outdir **od);
/* A new file dir/name for writing; NULL with errno on failure. */
FILE *ktau_outdir_create(struct ktau_outdir *od, const char *name);
/*
 * Move the file src (made by a library that writes its own files, on the
 * same file system) into the directory as name ("file" or "subdir/file"),
 * listed like a file of ktau_outdir_create(): -EEXIST when name exists.
 */
int ktau_outdir_adopt(struct ktau_outdir *od, const char *name, const char *src);
/* The directory od writes into. */
const char *ktau_outdir_path(const struct ktau_outdir *od);
/* Unlock and free; 0 or -errno. */
int ktau_outdir_close(struct ktau_outdir *od);
/* What was wrong with the last output directory of this thread ("": nothing said). */
const char *ktau_output_error(void);

/*
 * The MPI rank of this process from its launcher's environment
 * (OMPI_COMM_WORLD_RANK of Open MPI, PMIX_RANK of PMIx, PMI_RANK of
 * MPICH/Hydra, SLURM_PROCID of srun, in that order); -1 outside one.
 */
int ktau_mpi_rank(void);
/*
 * An output path from a template: "%r" the MPI rank (0 outside a
 * launcher), "%p" the pid, "%h" the host name, "%%" a '%'. malloc()ed;
 * NULL when out of memory.
 */
char *ktau_output_path(const char *tmpl);

/* TAU profile directory options. */
struct ktau_tau_opts {
	/* 1: node = dense process number, thread = dense thread number
	 * within the process (sorted by pid, tid). 0: one node, every task
	 * a thread. */
	int dense_processes;
	/* Extra metadata (name/value pairs), may be NULL. */
	const char *const *extra_meta;
	size_t nextra;
	/*
	 * Samples (see "Sampling" below). The name of the samples metric
	 * (the event, "cpu-clock", ...; NULL: "SAMPLES"); the sampled code
	 * locations, written as rows "[SAMPLE] <symbol>" of each task (NULL:
	 * none); and the nanoseconds a sample stands for, which gives those
	 * rows a TIME (0: they have none).
	 */
	const char *sample_metric;
	const struct ktau_sample_profile *samples;
	uint64_t sample_period_ns;
	/*
	 * has_rank: the tasks are MPI rank 'rank''s: every file is on node
	 * rank; with dense_processes, each process is a context (the first
	 * in pid order 0), its threads dense threads; else every task a
	 * thread of context 0.
	 */
	int has_rank, rank;
	/* Write into a directory that holds others' files (KTAU_OUTDIR_FORCE). */
	int force;
	/* With samples: also dir/<samples_folded>, their folded stacks
	 * (ktau_write_sample_folded); NULL: not. */
	const char *samples_folded;
	uint64_t reserved[4];	/* zero (see the top of this file) */
};

/*
 * Write snap as a TAU profile directory: one file profile.<node>.0.<thread>
 * per task, one metric TIME (microseconds) in dir itself, through
 * ktau_outdir_open() (kind "kernel", node: the rank or -1): the files of
 * an earlier ktau_write_tau into dir are replaced, a directory with
 * anything else is refused (-ENOTEMPTY) unless opts->force, an existing
 * file is never replaced (-EEXIST); ktau_output_error() says why. Kernel routines are in groups
 * "TAU_KERNEL_MERGE|KTAU_<CLASS>", per-group totals (SYSCALL, IRQ, ...)
 * in "KERNEL_GROUPS|TAU_KERNEL_MERGE". Metadata: pid, tid, comm,
 * Hostname, OS Release and more.
 *
 * When there are samples (an entry with samples, or opts->samples with
 * code locations), two metrics: MULTI__TIME and MULTI__<sample metric>,
 * the same rows in both; in the second, excl = incl = the sample count.
 * Sampled code locations are rows "[SAMPLE] <symbol>" (kernel functions
 * "[SAMPLE] [k] <function>"; per source line, with KTAU_LIB_PROFILE_LINES,
 * "[SAMPLE] <function> [{file} {line}]") in group TAU_SAMPLE with calls =
 * samples. A routine with samples but no completed call (user_mode,
 * kernel_other, a call still in progress) is written with its sample
 * count as calls, as the strictest readers want calls for any value.
 *
 * Returns the number of tasks written (files per metric).
 */
int ktau_write_tau(const char *dir, const struct ktau_snap *snap,
		   const struct ktau_registry *reg, const struct ktau_tau_opts *opts);
/*
 * The same into a directory the caller has opened (ktau_outdir_open, of
 * any kind), as 'ktaud combine' writes several snapshots, one node each
 * (opts->has_rank, opts->rank), into one. opts->force is not used here.
 */
int ktau_write_tau_into(struct ktau_outdir *od, const struct ktau_snap *snap,
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

/* ==== User-level instrumentation (the libktau runtime) ===============
 *
 * Timers for user routines, per thread, with callpaths, and the thread's
 * kernel routines charged to the user routine that was on top of the user
 * stack when they ran. Each thread registers a page with the kernel
 * (KTAU_IOC_SHARED_REGISTER, ABI 1.1) at its first timer event; the kernel
 * adds every kernel routine that ends in the thread to the page, and the
 * runtime reads it with plain loads at each timer start and stop (no
 * system call). Without KTAU the timers work the same, without kernel
 * data. -finstrument-functions needs nothing else: libktau defines
 * __cyg_profile_func_enter/exit (in libktau-runtime) and names the functions from the ELF
 * symbol tables when it writes.
 *
 * At exit (or ktau_user_write()) every thread that used a timer is
 * written as one file profile.<rank>.0.<n> of a TAU profile directory
 * (rank: the MPI rank, ktau_mpi_rank(), 0 outside a launcher; n: the
 * order in which threads first used a timer), through ktau_outdir_open()
 * (kind "user", node rank): nothing is written when nothing was measured,
 * a directory with others' files is refused: user routines, callpaths
 * "main => compute", and kernel groups and routines as callpath children
 * of the user routine that incurred them ("main => compute => SYSCALL",
 * "main => compute => write"), plus the flat kernel entries. A user
 * routine's exclusive time excludes the kernel time charged to it.
 *
 * Environment (read at the first timer event of the process):
 *   KTAU_PROFILE_DIR      output directory ("%p" becomes the pid, "%r" the
 *                         MPI rank, "%h" the host name; relative to the
 *                         working directory at the first event);
 *                         default "ktau-profile"; empty: nothing at exit
 *   KTAU_PROFILE_FORCE=1  write into a directory that holds files the
 *                         runtime did not write (never replacing one)
 *   KTAU_CALLPATH_DEPTH   longest callpath kept (1..64, default 32)
 *   KTAU_SHARED=0         do not register pages (no kernel attribution)
 *   KTAU_VERBOSE=1        say on stderr why kernel attribution is off
 *   KTAU_THROTTLE=0       time every call (default: TAU's throttling: a
 *                         routine with more than KTAU_THROTTLE_NUMCALLS
 *                         calls in a thread (100000), each under
 *                         KTAU_THROTTLE_PERCALL microseconds inclusive
 *                         (10), is no longer timed; its row keeps the calls
 *                         until then, in group TAU_USER|TAU_THROTTLED, and
 *                         "KTAU Throttled Calls" counts the calls not timed)
 *   KTAU_SELECT_FILE=FILE include and exclude lists, TAU's selective
 *                         instrumentation format (routine lists, '#' the
 *                         wildcard); excluded routines are not timers
 *                         (ktau_timer_start() on one returns 0 and times
 *                         nothing); matched once, at the first event
 *   KTAU_TRACE_USER=DIR   also keep every completed routine (start, end)
 *                         and write them at exit to DIR/user.<pid>.ktuser
 *                         (ktaud trace sets it; ktau_trace_add_user reads it)
 *
 * Thread safe. The state is per thread; a handle is valid in every
 * thread. Not for a library loaded with dlopen() after threads started
 * (its TLS is initial-exec).
 *
 * Signal handlers: ktau_timer_get(), ktau_timer_start(), ktau_timer_stop(),
 * their _name forms and the -finstrument-functions hooks may be called
 * from a signal handler, once ktau_user_init() or a first event ran
 * outside one. What they allocate (a thread's state at its first event,
 * its growing tables, a new timer and its name) comes from mmap(), never
 * from malloc(), and they take the runtime's lock only to add a thread or
 * a timer, never while the interrupted code of the same thread holds it.
 * An event that interrupts another event of its thread, or the runtime
 * while it holds its lock (also in its fork() handlers), is dropped and
 * counted (ktau_user_stats() dropped); a new timer asked for then is
 * refused (NULL), and so is a thread's first event, or an event inside
 * it (the thread starts at its next event). Not for
 * signal handlers: the process's first use (it reads the environment and
 * registers atexit() and pthread_atfork() handlers: call ktau_user_init()
 * first in main()), a thread's first event when the program created 32
 * or more pthread keys before the runtime's (glibc then allocates in
 * pthread_setspecific()), and every other function of this section.
 */
struct ktau_timer;

/*
 * Start the runtime in the calling thread now rather than at its first
 * timer event (so that the kernel routines from here on are charged).
 * Returns 1 when the thread's kernel routines are charged (page
 * registered), 0 when the timers work without kernel data, -errno when
 * the runtime cannot work (-ENOMEM).
 */
int ktau_user_init(void);

/*
 * The timer of a name (created at the first call; the same handle for
 * the same name, in every thread). NULL: name NULL or empty, or no
 * memory. Handles are never freed.
 */
struct ktau_timer *ktau_timer_get(const char *name);

/*
 * Start and stop a timer in the calling thread. Timers nest: stop the
 * last started first. Stopping a timer that is running but not on top
 * also stops those above it (as after a longjmp) and returns -EDEADLK;
 * stopping one that is not running returns -ENOENT and changes nothing.
 * 0 on success.
 */
int ktau_timer_start(struct ktau_timer *t);
int ktau_timer_stop(struct ktau_timer *t);
/* The same by name (a registry look-up under a lock: slower). */
int ktau_timer_start_name(const char *name);
int ktau_timer_stop_name(const char *name);

/*
 * Write the profile of every thread now into dir (NULL: the exit
 * directory, see ktau_user_output(); -EINVAL if there is none). Threads that still run have their
 * open timers closed at this time in the file, not in their state. The
 * kernel time of the writing itself is not charged. Returns the number
 * of files (0 and nothing written when nothing was measured) or -errno
 * (ktau_user_output_error() says why: -ENOTEMPTY others' files in dir,
 * -EEXIST a file would be replaced, -EBUSY another process writes there).
 * The files of an earlier write of this runtime in dir are replaced.
 */
int ktau_user_write(const char *dir);
/*
 * Why the calling thread's last ktau_user_write() failed ("" if it said
 * nothing). The runtime's own: ktau_output_error() of libktau is about
 * the calls a program makes to libktau itself.
 */
const char *ktau_user_output_error(void);

/*
 * Set the directory written at exit ("%p": the pid, "%r": the MPI rank,
 * "%h": the host name; relative to the
 * working directory now); NULL or "": write nothing at exit. Overrides
 * KTAU_PROFILE_DIR. 0 or -ENOMEM.
 */
int ktau_user_output(const char *dir);

/*
 * Register (on != 0) or unregister (on == 0) the calling thread's page:
 * with it off, the thread's timers go on without kernel data. Returns 1
 * when registered afterwards, 0 when not, or -errno of the registration
 * (-ENOENT: no KTAU; -ENOTTY: a kernel without shared pages).
 */
int ktau_user_shared(int on);

/* Counters of the calling thread's runtime. */
struct ktau_user_stats {
	int registered;		/* the page is registered */
	int depth;		/* timers running */
	uint64_t events;	/* starts and stops */
	uint64_t page_reads;	/* events that found new kernel data */
	uint64_t dropped;	/* events dropped (nested in another) */
	uint64_t unmatched;	/* stops of timers that were not running */
	uint64_t kernel_ns;	/* kernel time charged so far */
	uint64_t reserved[4];	/* zero (see the top of this file) */
};
int ktau_user_stats(struct ktau_user_stats *st);


/* ==== The calling thread's shared page (ABI 1.1), for other timers ===
 *
 * For a timer library of its own (TAU, a tracing tool, an application's
 * timers) that charges the kernel's work to its timers, as libktau's
 * runtime does, without the runtime: register a page for the calling
 * thread, and at each timer start and stop read the page's totals (or
 * one routine's) with plain loads, no system call. The kernel adds every
 * kernel routine that ends in the thread to the page; the difference of
 * two reads is what the kernel did for the thread between them. See
 * examples/foreign-timer.c.
 *
 * One page per thread: a second registration in the same thread (this
 * API's or libktau-runtime's) is -EBUSY. The page ends at unregister,
 * exec and exit; a new thread or a forked child has none.
 * ktau_page_seq, ktau_page_read and ktau_page_routine allocate nothing
 * and may be called in a signal handler, and from another thread.
 */
#define KTAU_PAGE_GROUPS	8	/* indexed by KTAU_GROUP_* */

struct ktau_page;

/*
 * Register a page for the calling thread. -ENOENT: no KTAU
 * (CONFIG_KTAU=n); -ENOTTY: a kernel without shared pages (ABI 1.0);
 * -EBUSY: the thread has one; -EPROTO: a page of another ABI major.
 */
int ktau_page_register(struct ktau_page **pg);
/*
 * Unregister and free it: in the thread that registered it (another live
 * thread: -EPERM). A forked child's copy, or the page of a thread that is
 * gone, is only freed (the kernel ended its registration).
 */
int ktau_page_unregister(struct ktau_page *pg);
/* The page's sequence number: unchanged means no kernel routine ended. */
uint32_t ktau_page_seq(const struct ktau_page *pg);

/* The thread's kernel totals since registration, in nanoseconds. */
struct ktau_page_totals {
	uint32_t seq;		/* of this copy */
	uint64_t updates;	/* kernel routines ended */
	uint64_t unlisted;	/* of which without an entry of their own */
	/*
	 * On the CPU in the kernel; off the CPU (blocked or preempted:
	 * KTAU_ID_IS_OFF_CPU); a vCPU thread's guest mode (ABI 1.4). The
	 * split is exact while those routines have entries (the kernel
	 * gives each routine the entry of its table slot, if that is below
	 * KTAU_SHARED_ENTRIES; unlisted counts the others). After a KTAU
	 * reset a slot's entry may go to another routine and restart from
	 * zero: a difference across a reset can be negative (clamp it).
	 */
	uint64_t oncpu_ns, offcpu_ns, guest_ns;
	struct {
		uint64_t count, incl_ns, excl_ns;
	} groups[KTAU_PAGE_GROUPS];
	uint64_t reserved[4];	/* zero (see the top of this file) */
};
/* A consistent copy. -EAGAIN: the kernel kept writing the page (a read
 * from another thread while this one was in the kernel). */
int ktau_page_read(const struct ktau_page *pg, struct ktau_page_totals *t);

/* One routine's totals since registration (function ID: ktau_func_id). */
struct ktau_page_routine {
	uint32_t seq;		/* of this copy */
	uint32_t id, group;
	uint64_t count, incl_ns, excl_ns;
	uint64_t reserved[2];	/* zero (see the top of this file) */
};
/* -ENOENT: the routine did not end in the thread (or has no entry);
 * -EINVAL: id is KTAU_ID_NONE. */
int ktau_page_routine(const struct ktau_page *pg, uint32_t id, struct ktau_page_routine *r);

/* ==== Sampling (ABI 1.1) ==============================================
 *
 * The kernel samples one thread per start, with a counter of its own
 * (Documentation/trace/ktau.rst, "Sampling"). At each overflow it appends
 * {ip, time, KTAU routine in progress} to the thread's buffer and adds one
 * to that routine's samples in the thread's profile (ktau_func_stat.samples;
 * user_mode in user mode, kernel_other in the kernel outside KTAU
 * routines). Every watermark samples it may send the thread a signal.
 * These functions start, drain and stop sampling, decode the records,
 * name the sampled addresses (user code from the ELF files the process
 * has mapped, kernel code from /proc/kallsyms when the kernel shows its
 * addresses) and count samples per thread and code location for the
 * writers (ktau_write_tau with ktau_tau_opts.samples, folded stacks).
 *
 * The counts in the profile exist while the thread is sampled: take the
 * snapshot before stopping. Sampling ends at the thread's exec and exit;
 * what its buffer held then is lost (drain before, or with ptrace stops).
 */

/* Events: the KTAU_SAMPLE_* events of <linux/ktau.h>. */
#define KTAU_LIB_EV_CPU_CLOCK		0	/* "cpu-clock": software, always there */
#define KTAU_LIB_EV_TASK_CLOCK		1	/* "task-clock": software */
#define KTAU_LIB_EV_CYCLES		2	/* "cycles": hardware, if the PMU has it */
#define KTAU_LIB_EV_INSTRUCTIONS	3	/* "instructions": hardware */
#define KTAU_LIB_NR_EVENTS		4

/* ktau_sample_spec.flags: the KTAU_SAMPLE_* flags of the ABI. */
#define KTAU_LIB_SAMPLE_FREQ		0x1	/* period is a frequency in Hz */
#define KTAU_LIB_SAMPLE_NO_USER		0x2	/* no samples in user mode */
#define KTAU_LIB_SAMPLE_NO_KERNEL	0x4	/* no samples in the kernel */
#define KTAU_LIB_SAMPLE_OVERWRITE	0x8	/* full buffer: overwrite the oldest */

/* Limits of the ABI. */
#define KTAU_LIB_SAMPLE_MAX_CAPACITY	65536	/* samples per kernel buffer */
#define KTAU_LIB_SAMPLE_MAX_FREQ	100000	/* Hz */
#define KTAU_LIB_SAMPLE_MIN_CLOCK_NS	10000	/* period of the clock events */

/* What to sample and how. */
struct ktau_sample_spec {
	uint32_t event;		/* KTAU_LIB_EV_* */
	uint32_t flags;		/* KTAU_LIB_SAMPLE_* */
	uint64_t period;	/* events per sample (ns for the clocks), or Hz */
	uint32_t capacity;	/* kernel buffer, samples: a power of two */
	uint32_t watermark;	/* a signal every this many samples; 0: none */
	int signo;		/* that signal (0 when watermark is 0): SIGPROF, */
				/* SIGTRAP, SIGIO, SIGUSR1, SIGUSR2 or real-time */
	uint64_t reserved[4];	/* zero (see the top of this file) */
};

/*
 * Parse "EVENT[:PERIOD][:u|:k]" into the event, period and the flags FREQ,
 * NO_USER and NO_KERNEL of spec (the other fields are left as they are).
 * EVENT: cpu-clock, task-clock, cycles, instructions. PERIOD: for the
 * clocks a time, a number with the unit ns (default), us, ms or s
 * ("cpu-clock:2ms"); for the hardware events a number of events; or
 * "@HZ", samples per second of the event ("cycles:@1000"). Without
 * PERIOD: 1 ms for the clocks, @1000 for the others. ":u" samples user
 * mode only, ":k" the kernel only; without them, both. -EINVAL, with *why
 * (if not NULL) set to what is wrong.
 */
int ktau_sample_parse(const char *text, struct ktau_sample_spec *spec, const char **why);
/* "cpu-clock", ...; NULL for an unknown event. */
const char *ktau_sample_event_name(uint32_t event);
/*
 * Check spec against the rules of the ABI without asking the kernel:
 * NULL when it is valid, else a sentence that says what is wrong.
 */
const char *ktau_sample_check(const struct ktau_sample_spec *spec);
/* Nanoseconds per sample for a clock event with a period or frequency; 0 otherwise. */
uint64_t ktau_sample_period_ns(const struct ktau_sample_spec *spec);

/*
 * Start sampling thread tid (0: the calling thread) through k. Errors:
 * -EINVAL (spec: see ktau_sample_check), -EACCES (perf_event_paranoid:
 * kernel samples need CAP_PERFMON at 2, any sampling CAP_SYS_ADMIN at 3;
 * another user's thread needs CAP_PERFMON), -EBUSY (already sampled),
 * -ENOENT (the event does not exist on this machine), -ESRCH (no such
 * thread), -ENOTTY (a kernel without sampling, ABI 1.0).
 */
int ktau_sample_start(struct ktau *k, pid_t tid, const struct ktau_sample_spec *spec);

/* One sample. */
struct ktau_sample_rec {
	uint64_t ip;		/* 0: a kernel address the reader may not see */
	uint64_t time_ns;	/* CLOCK_MONOTONIC */
	uint32_t id;		/* KTAU routine in progress; 10 (user_mode) in user mode */
	uint32_t user;		/* 1: taken in user mode */
	int32_t tid;		/* the thread sampled */
	int32_t pid;		/* its process, when known (0 otherwise) */
};

/* Counters of a thread's sampling. */
struct ktau_sample_stats {
	uint64_t taken;		/* overflows since the start */
	uint64_t lost;		/* dropped (buffer full) or overwritten */
	uint64_t signals;	/* signals sent */
	uint64_t buffered;	/* samples left in the buffer */
	uint64_t reserved[4];	/* zero (see the top of this file) */
};

/*
 * Drain up to max samples of thread tid (0: the caller), oldest first,
 * into v, with their tid; max 0 reads only the counters (st, may be NULL).
 * Returns the number read. -ENOENT: the thread is not sampled (any more:
 * sampling ends at exec and exit); -ESRCH: no such thread; -EACCES.
 */
int ktau_sample_read(struct ktau *k, pid_t tid, struct ktau_sample_rec *v, size_t max,
		     struct ktau_sample_stats *st);
/* Stop sampling of tid, then read what is left as ktau_sample_read. */
int ktau_sample_stop(struct ktau *k, pid_t tid, struct ktau_sample_rec *v, size_t max,
		     struct ktau_sample_stats *st);

/* What an error of ktau_sample_start (start = 1) or of a read or stop
 * (start = 0) means, and what to do about it. */
const char *ktau_sample_strerror(int err, int start);

/*
 * Decode struct ktau_sample records (as KTAU_IOC_SAMPLE_READ writes them)
 * of thread tid into out (room for max). Strict: len must be a multiple
 * of the record size, and flags and id valid; -EBADMSG otherwise,
 * -ENOSPC when out is too small. Returns the number decoded.
 */
int ktau_sample_decode(const void *buf, size_t len, pid_t tid, struct ktau_sample_rec *out,
		       size_t max);

/* ---- Naming sampled addresses ---------------------------------------- */

/* Kernel symbols (/proc/kallsyms): text symbols sorted by address. */
struct ktau_ksyms;
/*
 * Load /proc/kallsyms. -EACCES when the kernel hides the addresses from
 * this reader (kptr_restrict: they read as 0), -ENOENT without kallsyms.
 */
int ktau_ksyms_load(struct ktau_ksyms **out);
/* Parse kallsyms text ("addr type name [module]" lines); -ENODATA: no address. */
int ktau_ksyms_parse(const char *text, size_t len, struct ktau_ksyms **out);
/* The function at addr ("name" or "name [module]"), or NULL. */
const char *ktau_ksyms_name(const struct ktau_ksyms *ks, uint64_t addr);
size_t ktau_ksyms_size(const struct ktau_ksyms *ks);
void ktau_ksyms_free(struct ktau_ksyms *ks);

/*
 * User symbols of a process: its file mappings from /proc/PID/maps, each
 * ELF file's .symtab (or .dynsym) with the load bias of the mapping (PIE
 * programs and shared libraries). Files are opened by the path in maps,
 * so the process should be in the reader's mount namespace. Names are
 * cached per address.
 */
struct ktau_usyms;
/* For process pid (0: the caller); reads its maps now (-ESRCH, -EACCES). */
int ktau_usyms_open(pid_t pid, struct ktau_usyms **out);
/* From the text of a maps file (tests, saved maps); never refreshed. */
int ktau_usyms_parse_maps(const char *maps, size_t len, struct ktau_usyms **out);
/* Read the maps again (after an exec, a dlopen()); -ESRCH when gone. */
int ktau_usyms_refresh(struct ktau_usyms *u);
/*
 * Names of JIT code: "START SIZE name" lines (hex) of a perf map, as JITs
 * and CPython's -X perf write /tmp/perf-PID.map. ktau_usyms_open() and
 * ktau_usyms_refresh() read the process's own when it is a regular file
 * of the process's owner or root (as perf does); this adds more (tests,
 * saved maps). Later lines win for the same start. 0 or -ENOMEM.
 */
int ktau_usyms_add_perf_map(struct ktau_usyms *u, const char *text, size_t len);
/*
 * The name of user address addr into buf: the function's symbol,
 * "<file>+0x<offset>" in a mapped file without a symbol for it, the perf
 * map's name of JIT code outside the files, or "[unknown] 0x<address>".
 * Returns 1 when named (a mapped file or the perf map), 0 otherwise. An
 * address outside every known mapping makes it read the maps (and the
 * perf map) again, at most every 50 ms, when the process is given by pid.
 */
int ktau_usyms_name(struct ktau_usyms *u, uint64_t addr, char *buf, size_t size);
/*
 * The source line of user address addr (> 0), with its file as the debug
 * information names it (as the compiler was given it, mostly an absolute
 * path) into file: from the line table of the mapped file's DWARF, found
 * as for the names (build-id, separate debug information of
 * KTAU_DEBUGINFO_PATH or /usr/lib/debug); in code inlined from another
 * function, the line in that function. 0, file "", when there is none: no
 * debug information or no line there, an address outside the mapped files
 * (JIT code), a library built without libdw (the static libktau.a of
 * the guest image), or a file name longer than size. Cached per address.
 * (libktau 2.1)
 */
int ktau_usyms_srcline(struct ktau_usyms *u, uint64_t addr, char *file, size_t size);
void ktau_usyms_free(struct ktau_usyms *u);

/*
 * The code a sample was taken in, into buf: for a user sample
 * ktau_usyms_name (u NULL: "[unknown] 0x<ip>"); for a kernel sample the
 * kallsyms function (ks not NULL and ip not 0), else "[kernel] <routine>"
 * with the KTAU routine's name. Returns 1 when the user address is in a
 * mapped file or kallsyms named the kernel one, 0 otherwise.
 */
int ktau_sample_name(const struct ktau_sample_rec *s, struct ktau_usyms *u,
		     const struct ktau_ksyms *ks, const struct ktau_registry *reg,
		     char *buf, size_t size);

/* ---- Counting samples per code location ------------------------------- */

/* Samples of one thread at one place. */
struct ktau_sample_place {
	int32_t tid;
	int32_t pid;		/* 0 when unknown */
	uint32_t id;		/* KTAU routine (KTAU_ID_USER, 10, for user code) */
	uint32_t user;		/* 1: user code */
	const char *sym;	/* user: as ktau_usyms_name; kernel: the kallsyms */
				/* function, or NULL when unknown */
	uint64_t count;
};

struct ktau_sample_profile *ktau_sample_profile_new(void);
void ktau_sample_profile_free(struct ktau_sample_profile *p);
/*
 * How ktau_sample_profile_add_samples names the places it adds (libktau
 * 2.1); 0 (the default): by function. KTAU_LIB_PROFILE_LINES: user code
 * that has a source line (ktau_usyms_srcline) per line, as TAU's own
 * event-based sampling names it, "function [{file} {line}]" (the TAU row
 * "[SAMPLE] function [{file} {line}]"; the folded stacks give the line a
 * frame "file.c:LINE" of its own above the function's); code without one
 * keeps its function's name, and the kernel's is never split. -EINVAL for
 * an unknown flag.
 */
#define KTAU_LIB_PROFILE_LINES		0x1
int ktau_sample_profile_set_flags(struct ktau_sample_profile *p, unsigned int flags);
/* Add pl->count samples at place pl (sym is copied). */
int ktau_sample_profile_add(struct ktau_sample_profile *p, const struct ktau_sample_place *pl);
/* Name (u and ks as ktau_sample_name; either may be NULL) and add samples. */
int ktau_sample_profile_add_samples(struct ktau_sample_profile *p,
				    const struct ktau_sample_rec *v, size_t n,
				    struct ktau_usyms *u, const struct ktau_ksyms *ks);
/* The places in the order they were first seen; *n gets their number. */
const struct ktau_sample_place *ktau_sample_profile_places(const struct ktau_sample_profile *p,
							   size_t *n);
/* All samples counted. */
uint64_t ktau_sample_profile_total(const struct ktau_sample_profile *p);

/*
 * Folded stacks of samples (flamegraph.pl, inferno, speedscope), one line
 * per thread name and place with its count: "comm;symbol N" for user
 * code ("comm;function;file.c:LINE N" for a place with a source line),
 * "comm;[k] routine;function N" for kernel code ("comm;[k] routine
 * N" when the function is unknown), routine being the KTAU routine in
 * progress (read, sched_preempted, ...). comm is the thread's, from snap
 * (may be NULL), else "tid-<tid>".
 */
int ktau_write_sample_folded(FILE *f, const struct ktau_sample_profile *p,
			     const struct ktau_snap *snap, const struct ktau_registry *reg);

/* ---- A TAU profile file of any rows ----------------------------------- */

/* One function line. */
struct ktau_tau_row {
	const char *name;	/* made safe (ktau_write_tau_rows); unique in a file */
	const char *group;	/* "TAU_USER", ... */
	uint64_t calls, subrs;
	double excl, incl;	/* in the metric's unit (TIME: microseconds) */
};

/*
 * One TAU profile file of the given rows and metric (e.g. "TIME" or
 * "SAMPLES"), in the strict form; meta holds nmeta name/value pairs
 * (meta[2 i], meta[2 i + 1]) after "Metric Name". Names are cleaned as for
 * the other writers (a row of group TAU_CALLPATH element by element between
 * its " => "); -EINVAL for a duplicate name after cleaning or
 * excl > incl, a row with values but no calls, or a bad metric name.
 */
int ktau_write_tau_rows(FILE *f, const char *metric, const struct ktau_tau_row *rows,
			size_t n, const char *const *meta, size_t nmeta);

/* ==== Trace mode (ABI 1.5) ============================================
 *
 * One record per completed kernel routine, in order, per thread
 * (Documentation/trace/ktau.rst, "Trace mode"). A session is an open file
 * of /proc/ktau/trace: threads are attached to it (with INHERIT, the tasks
 * they create afterwards too) and their records are drained with read(),
 * which returns chunks, one per thread with records. These functions open
 * sessions, walk the chunk stream strictly (a corrupt stream is -EBADMSG
 * with ktau_trace_error() saying where and what, never a crash), collect
 * the records per thread, and read and write raw trace files (a versioned
 * header, the chunks, the registry and the profile of the same run).
 */
#define KTAU_LIB_TRACE_CALL	1	/* a completed routine */
#define KTAU_LIB_TRACE_EVENT	2	/* an event: start_ns == end_ns */
#define KTAU_LIB_TRACE_LOST	3	/* id records lost between start and end */
#define KTAU_LIB_TRACE_INHERIT	0x1	/* attach: also the tasks it creates */
#define KTAU_LIB_TRACE_ALL	0x2	/* attach: the whole system (ABI 1.6) */
#define KTAU_LIB_TRACE_EXITED	0x1	/* thread: it exited (its last records) */
#define KTAU_LIB_TRACE_DETACHED	0x2	/* thread: tracing of it ended */
#define KTAU_LIB_TRACE_MAX_CAPACITY	(1U << 20)	/* records per thread buffer */

/* One record, as the ABI's struct ktau_trace_rec. */
struct ktau_trace_record {
	uint64_t start_ns;	/* CLOCK_MONOTONIC */
	uint64_t end_ns;
	uint32_t id;		/* function ID; LOST: records lost */
	uint16_t depth;		/* routines it was nested in */
	uint8_t kind;		/* KTAU_LIB_TRACE_* */
	uint8_t reserved;
};

/* Totals of a session (KTAU_IOC_TRACE_STATS). */
struct ktau_trace_totals {
	uint64_t tasks;		/* threads attached since the open */
	uint64_t records;	/* records written to its buffers */
	uint64_t lost;		/* records lost: buffer full */
	uint64_t refused;	/* inherited attaches refused: limit, memory */
	uint64_t denied;	/* threads whose credentials changed */
	uint64_t buffered;	/* records waiting to be read */
	uint64_t reserved[4];	/* zero (see the top of this file) */
};

/* What ktau_trace_* functions last found wrong in this thread ("": nothing said). */
const char *ktau_trace_error(void);

struct ktau_trace_session;
/*
 * Open a session. -ENOENT: no KTAU; -EPROTO: another ABI major; -ENOTTY:
 * a KTAU without trace mode (ABI < 1.5). Closing it ends the tracing of
 * its threads.
 */
int ktau_trace_open(struct ktau_trace_session **s);
void ktau_trace_close(struct ktau_trace_session *s);
/* The session's file descriptor (close-on-exec). */
int ktau_trace_fd(const struct ktau_trace_session *s);
/*
 * Attach thread tid (0: the caller) with a buffer of capacity records (a
 * power of two, at most KTAU_LIB_TRACE_MAX_CAPACITY), recording the
 * groups in the mask (1 << group; 0: all). -EPERM/-EACCES: permission;
 * -ESRCH: no such thread; -EBUSY: already traced; -EINVAL: bad argument.
 */
int ktau_trace_attach(struct ktau_trace_session *s, pid_t tid, unsigned int flags,
		      uint32_t capacity, uint64_t groups);
int ktau_trace_detach(struct ktau_trace_session *s, pid_t tid);
int ktau_trace_stats(struct ktau_trace_session *s, struct ktau_trace_totals *st);
/*
 * Drain: whole chunks into a buffer of the session (*buf, valid until
 * the next call); the number of bytes, 0 when nothing was buffered.
 */
ssize_t ktau_trace_read(struct ktau_trace_session *s, const void **buf);

/* One chunk of the stream: the records of one thread. */
struct ktau_trace_chunk_info {
	int32_t tid, pid;	/* 0: not in the reader's pid namespace */
	uint32_t flags;		/* KTAU_LIB_TRACE_EXITED, _DETACHED */
	char comm[16];
	uint64_t lost;		/* records of the thread lost since the attach */
	size_t nrecs;
	const void *recs;	/* nrecs records, maybe unaligned: */
				/* ktau_trace_chunk_record() */
};
/*
 * The chunk at *off of buf (len bytes), checked whole (sizes, reserved
 * fields, every record); *off moves past it. 1, 0 at the end, -EBADMSG.
 */
int ktau_trace_next_chunk(const void *buf, size_t len, size_t *off,
			  struct ktau_trace_chunk_info *ci);
void ktau_trace_chunk_record(const struct ktau_trace_chunk_info *ci, size_t i,
			     struct ktau_trace_record *r);

/* The records of one thread, in the order the calls ended. */
struct ktau_trace_thread {
	int32_t tid, pid;
	uint32_t flags;		/* KTAU_LIB_TRACE_EXITED, _DETACHED */
	char comm[16];		/* at its last chunk */
	uint64_t lost;		/* the kernel's count */
	uint64_t lost_recs;	/* the sum of its LOST records */
	uint64_t ncalls, nevents, nchunks;
	uint64_t disorder;	/* records that ended before the one before */
	uint64_t user_lost;	/* user routines not recorded (runtime's bound) */
	size_t nrecs, cap;
	struct ktau_trace_record *recs;
};

/* A trace: threads (a tid that exited and came back is a new thread). */
struct ktau_trace {
	uint64_t start_ns, end_ns;	/* CLOCK_MONOTONIC */
	uint64_t realtime_ns;		/* CLOCK_REALTIME at start_ns */
	uint64_t groups;		/* recorded: 1 << group; 0: all */
	int32_t rank;			/* MPI rank; -1: none */
	int kernel_profile;		/* profile: the kernel's final profiles */
	int truncated;			/* an unfinished raw file */
	size_t truncated_bytes;		/* ... and its partial chunk */
	char hostname[64], release[64], command[56];
	struct ktau_trace_totals stats;
	uint64_t nrecs, bytes;		/* records and chunk bytes added */
	size_t nthreads, cap;
	struct ktau_trace_thread *threads;
	struct ktau_registry *reg;	/* may be NULL */
	struct ktau_snap *profile;	/* the same run's profile; may be NULL */
	size_t *index, index_cap;	/* (internal) */
	/* The user's own routines (libktau's runtime, KTAU_TRACE_USER):
	 * records of kind CALL with id KTAU_LIB_TRACE_USER | name index. */
	char **user_names;
	size_t nuser_names;
	uint64_t user_lost;		/* user records beyond the runtime's bound */
	/* (libktau 2.2; struct ktau_trace is allocated by the library only,
	 * ktau_trace_new() or a load, so fields are added at its end.)
	 * Calls the writer cut from a thread's profile with their records
	 * (ktaud trace: what the command's first process ran before its
	 * exec), each duration rounded on its own: a check of the profile
	 * against the trace allows a nanosecond for each (malloc'd; freed
	 * by ktau_trace_free()). Raw trace files keep them from version 2. */
	struct ktau_trace_cut *cuts;
	size_t ncuts;
	/* (libktau 2.3) Samples taken beside the trace (ktaud trace
	 * --sample): the sampler's event ("" when none were taken), and per
	 * sampled thread its window and the kernel's counters, with its
	 * samples in time order. Raw trace files keep them from version 3
	 * (malloc'd; freed by ktau_trace_free()). */
	char sample_event[32];		/* "cpu-clock:1000000", ... */
	uint32_t sample_flags;		/* KTAU_SAMPLE_* flags it ran with */
	struct ktau_trace_sthread *sthreads;
	size_t nsthreads;
	struct ktau_trace_sample *samples;	/* thread by thread, as sthreads */
	size_t nsamples;
	char **sample_names;		/* what samples[].name indexes */
	size_t nsample_names;
};

struct ktau_trace_cut {
	int32_t tid;
	uint32_t id;			/* function ID */
	uint64_t calls;
};

/* One sample of a trace (struct ktau_sample_rec, named when taken). */
struct ktau_trace_sample {
	uint64_t ip;			/* 0: a kernel address hidden from the reader */
	uint64_t time_ns;		/* CLOCK_MONOTONIC */
	uint32_t id;			/* KTAU routine in progress (10: user mode) */
	uint32_t user;			/* 1: taken in user mode */
	uint32_t name;			/* index in sample_names; UINT32_MAX: none */
};

/* A sampled thread of a trace. */
struct ktau_trace_sthread {
	int32_t tid, pid;
	uint64_t start_ns, end_ns;	/* its sampler ran within [start_ns, end_ns] */
	uint64_t taken, lost;		/* the kernel's counters when it stopped */
	size_t first, n;		/* its samples: samples[first .. first + n) */
};

/* Record ids of user routines: this bit and the index of their name. */
#define KTAU_LIB_TRACE_USER	0x80000000u
/* ktau_trace_group() of a user routine. */
#define KTAU_LIB_GROUP_USER	(-2)
/* The name of a record's routine (a user routine's, or the registry's). */
const char *ktau_trace_name(const struct ktau_trace *t, uint32_t id);
/* Its KTAU group, KTAU_LIB_GROUP_USER, or -1 when unknown. */
int ktau_trace_group(const struct ktau_trace *t, uint32_t id);
/*
 * Add a file of the runtime's user routines (user.<pid>.ktuser, written
 * at exit when KTAU_TRACE_USER names a directory) to t: each thread's
 * records go to the thread of the same tid and pid (a new one if none).
 * -EBADMSG (ktau_trace_error() says why).
 */
int ktau_trace_add_user(struct ktau_trace *t, const void *buf, size_t len);

struct ktau_trace *ktau_trace_new(void);
void ktau_trace_free(struct ktau_trace *t);
/* Walk a chunk stream into t; the number of chunks, or -EBADMSG. */
int ktau_trace_add_chunks(struct ktau_trace *t, const void *buf, size_t len);

/*
 * Raw trace files: start writes the header to fd (at offset 0), append
 * adds chunks as read, finish adds t->reg and t->profile and completes
 * the header with t's times and totals (and frees tf).
 */
struct ktau_trace_file;
int ktau_trace_file_start(int fd, const struct ktau_trace *t, struct ktau_trace_file **tf);
int ktau_trace_file_append(struct ktau_trace_file *tf, const void *chunks, size_t len);
/*
 * The kernel records of every thread of t, as chunks (its flags on its
 * last); ktau_trace_file_finish adds the user routines.
 */
int ktau_trace_file_append_trace(struct ktau_trace_file *tf, const struct ktau_trace *t);
/* The records from..to-1 of th as one chunk (its tid, pid, comm, lost; flags). */
int ktau_trace_file_append_thread(struct ktau_trace_file *tf, const struct ktau_trace_thread *th,
				  size_t from, size_t to, uint32_t flags);
/*
 * With t->sample_event set, finish also writes t's samples (version 3;
 * -EINVAL, ktau_trace_error() saying why, when the reader would refuse
 * them): set it before start, else finish moves the chunks written to
 * make room in the header. A file is version 1 until finish (a reader of
 * version 1 reads the chunks of one whose writer stopped).
 */
int ktau_trace_file_finish(struct ktau_trace_file *tf, const struct ktau_trace *t);
/* Read a raw trace file; -EBADMSG (ktau_trace_error() says why). */
int ktau_trace_parse_file(const void *buf, size_t len, struct ktau_trace **out);
int ktau_trace_load(const char *path, struct ktau_trace **out);

/*
 * The calls of a thread as enter and leave events in time order: sorted
 * by (start, depth), a call left at its end, or at the end of the call it
 * is in when it would end after it (counted in *clamped). fn gets enter 1
 * (at start), 0 (leave, at the end) or 2 for events and LOST records (at
 * their start); a non-zero return stops the walk and is returned.
 */
int ktau_trace_walk(const struct ktau_trace_thread *th,
		    int (*fn)(void *arg, int enter, uint64_t ts, const struct ktau_trace_record *r),
		    void *arg, uint64_t *clamped);
/* Pointers to the records of th sorted by (start, depth); *out malloc()ed. */
int ktau_trace_sorted(const struct ktau_trace_thread *th, const struct ktau_trace_record ***out,
		      size_t *n);

/* ==== Dynamic probes (ABI 1.2) ========================================
 *
 * Entry/exit timers on kernel functions, added at run time
 * (Documentation/trace/ktau.rst, "Dynamic probes"): a probed function gets
 * a function ID in group "dynamic", named after it, and its calls are
 * timed in every task's profile, nested in the routine in progress. A
 * probe belongs to the open file of /proc/ktau/probes it was added on: it
 * goes away when that file is closed (the process exits or is killed),
 * and when it is removed (from any open file). Adding and removing need
 * CAP_PERFMON or CAP_SYS_ADMIN; at most KTAU_LIB_PROBE_MAX probes exist at
 * one time, system-wide.
 */
#define KTAU_LIB_PROBE_MAX	64	/* KTAU_PROBE_MAX */
#define KTAU_LIB_PROBE_NAME_LEN	64	/* "function" or "module:function", NUL included */

/*
 * Open /proc/ktau/probes (close(2) it to remove the probes added on it):
 * the descriptor (close-on-exec), or -ENOENT (no KTAU), -ENOTTY (a KTAU
 * without probes, ABI < 1.2), -EACCES.
 */
int ktau_probes_open(void);
/*
 * Probe function name ("function" or "module:function") on fd; its
 * function ID into *id (may be NULL). Errors: -EPERM (capability),
 * -ENOENT (no such kernel function), -EINVAL (it cannot be probed: not
 * traceable, inlined, KTAU's own; or a name too long), -EEXIST (already
 * probed, by anyone), -ENOSPC (KTAU_LIB_PROBE_MAX probes, or no function
 * ID left), -EOPNOTSUPP (a kernel without fprobe).
 */
int ktau_probe_add(int fd, const char *name, uint32_t *id);
/* Remove the probe on name (from any owner): -ENOENT when not probed. */
int ktau_probe_remove(int fd, const char *name);
/* The same by function ID. */
int ktau_probe_remove_id(int fd, uint32_t id);

/* One probe of the list. */
struct ktau_probe_info {
	uint32_t id;			/* function ID */
	char function[KTAU_LIB_PROBE_NAME_LEN];
	pid_t owner;			/* the process that added it (0: not in this pid namespace) */
	uint64_t missed;		/* calls not timed (fprobe had no free slot) */
};
/* Read /proc/ktau/probes: *n probes into *v (malloc()ed; NULL when none). */
int ktau_probes_list(struct ktau_probe_info **v, size_t *n);
/* Parse its text ("# id function owner missed", then one line a probe); -EBADMSG. */
int ktau_probes_parse(const char *text, size_t len, struct ktau_probe_info **v, size_t *n);
/*
 * What an error of ktau_probe_add (add = 1) or of a removal (add = 0)
 * means and what to do about it: a sentence.
 */
const char *ktau_probe_strerror(int err, int add);

#ifdef __cplusplus
}
#endif
#endif /* LIBKTAU_H */
