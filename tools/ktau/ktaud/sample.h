/* SPDX-License-Identifier: GPL-2.0 */
/* ktaud: sampling sessions, shared by `ktaud sample` and `ktaud run --sample`. */
#ifndef KTAUD_SAMPLE_H
#define KTAUD_SAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ktaud.h"

struct ssess;

/* What `ktaud run` does, with or without a sampling session. */
struct run_args {
	struct out_opts oo;
	unsigned long top;	/* routines in the summary */
	int quiet;
	char **cmd;		/* the command and its arguments */
	const char *cmd_name;	/* "run" or "sample", for messages */
	struct ssess *ss;	/* NULL: no sampling */
	const char *sample_folded;	/* folded stacks of the samples, or NULL */
	/* Called with the profile at the end, after the summary (NULL: none). */
	void (*inspect)(const struct ktau_snap *snap, const struct ktau_registry *reg, void *arg);
	void *inspect_arg;
};
/* Run the command; returns its status (see ktaud(1)) or an exit code. */
int run_command(struct run_args *ra);

/* The output options of 'ktaud run' (getopt "o:j:n:q"), for the commands that run one. */
#define RUN_OUTPUT_OPTIONS \
	{ "output", required_argument, NULL, 'o' }, \
	{ "json", optional_argument, NULL, 'j' }, \
	{ "folded", optional_argument, NULL, 'F' }, \
	{ "save", required_argument, NULL, 'S' }, \
	{ "top", required_argument, NULL, 'n' }, \
	{ "quiet", no_argument, NULL, 'q' }, \
	{ "force", no_argument, NULL, 'f' }
/* Apply option c (with arg) of those to ra: 0, -1 when c is none of them, or an exit code. */
int run_output_option(struct run_args *ra, int c, const char *arg);

/*
 * A session for spec ("EVENT[:PERIOD][:u|:k]"), draining every interval
 * seconds, kernel buffers of capacity samples (0: from the rate), user
 * code per source line where the debug information has lines when lines
 * is set (--lines). Opens KTAU and checks that the kernel can sample.
 * Returns 0, or an exit code after a message.
 */
int ssess_new(const char *cmd, const char *spec, double interval, unsigned long capacity,
	      int lines, struct ssess **out);
void ssess_free(struct ssess *s);

/*
 * Where the samples go besides the session's counts (ktaud trace --sample):
 * samples() gets each batch read from thread tid of process pid (th: the
 * session's index of the thread, see ssess_thread()), oldest first, while
 * the process's memory map still names its code (u: its user symbols, ks:
 * the kernel's; either may be NULL); tick() is called every interval of
 * ssess_trace(), after the buffers were drained. A non-zero return of
 * samples() is an out of memory warning; of tick(), ssess_trace() kills
 * the command (SIGKILL) and calls tick() no more.
 */
struct ktau_usyms;
struct ktau_ksyms;
struct ktau_sample_rec;
struct ssess_sink {
	void *arg;
	int (*samples)(void *arg, size_t th, pid_t tid, pid_t pid,
		       const struct ktau_sample_rec *v, size_t n, struct ktau_usyms *u,
		       const struct ktau_ksyms *ks);
	int (*tick)(void *arg);
};
void ssess_set_sink(struct ssess *s, const struct ssess_sink *k);

/* A thread of the session. */
struct ssess_thread {
	pid_t tid, pid;
	uint64_t start_ns, end_ns;	/* CLOCK_MONOTONIC: right before its first
					 * start, right after its last read */
	uint64_t taken, lost;		/* the kernel's counters, over its samplings */
	uint64_t nread;			/* samples read */
};
/* Threads seen so far (index 0 .. n-1). */
size_t ssess_nthreads(const struct ssess *s);
/* Thread i into *out: 1, or 0 when it was never sampled. */
int ssess_thread(const struct ssess *s, size_t i, struct ssess_thread *out);
/* The event and its period, "cpu-clock:1000000" ("...:@1000" a frequency), into buf. */
const char *ssess_event(const struct ssess *s, char *buf, size_t size);
/* The KTAU_LIB_SAMPLE_* flags the session runs with (NO_KERNEL when dropped). */
uint32_t ssess_flags(const struct ssess *s);

/* In the child before exec: be traced, and stop until the tracer is ready. */
int ssess_child_prepare(void);
/*
 * In the parent: trace the command pid (and every thread and process it
 * creates), sample each from its start (after the exec), drain the
 * buffers every interval and at each thread's exit, read the collector
 * cfd (-1: none) into *snap as it goes, then the sink's tick(); returns
 * when pid has exited, with its wait status in *status. 0 or -errno.
 */
int ssess_trace(struct ssess *s, pid_t pid, int cfd, struct ktau_snap **snap, int *status);

/*
 * Sampling running processes (ktaud sample -p, ktaud trace -p/-a --sample),
 * no ptrace: ssess_scan() starts a sampler on each thread of process pid
 * not seen before (from /proc/PID/task; a tid used again by another
 * thread is new), while fewer than 1024 threads are sampled and 65536
 * were seen (the summary says when a bound left a thread out);
 * ssess_started() is 0 when one
 * was started, else an exit code after a message; ssess_drain() reads
 * every sampled thread's buffer (to the sink too), then, without stop,
 * takes a thread whose sampling ended for gone, or samples it again after
 * its process's exec, and returns the threads still live; with stop, it
 * ends every sampling (0).
 */
void ssess_scan(struct ssess *s, pid_t pid);
/*
 * More processes from /proc (their threads as ssess_scan() adds them):
 * with all, every process but kernel threads and ktaud's own (ktaud trace
 * -a --sample); else the processes whose parent the session samples, and
 * their children in turn (-p: what the named processes start; from
 * /proc/PID/task/TID/children, or where the kernel has none, from every
 * process's stat file). At most every 0.2 s (the first call always): a
 * process that lives shorter, or whose parent exits before it is found
 * (it is then another's child), may not be found.
 */
void ssess_scan_more(struct ssess *s, int all);
int ssess_started(struct ssess *s);
size_t ssess_drain(struct ssess *s, int stop);

/*
 * The profile snap with the samples: write_outputs() with the samples, and
 * their folded stacks into --folded FILE or else DIR/samples.folded
 * (samples.RANK.folded under an MPI launcher); an exit code.
 */
int ssess_write_outputs(const struct ssess *s, const struct run_args *ra,
			const struct ktau_snap *snap, const struct ktau_registry *reg,
			struct out_opts *oo);
/* The TAU options for the samples (metric, places, period). */
void ssess_tau_opts(const struct ssess *s, struct ktau_tau_opts *o);
/* Write the folded stacks of the samples to path ("-": stdout); an exit code. */
int ssess_write_folded(const struct ssess *s, const char *path, const struct ktau_snap *snap,
		       const struct ktau_registry *reg);
/* The sampling summary on stderr. */
void ssess_summary(const struct ssess *s, const struct ktau_registry *reg, unsigned long top);

#endif
