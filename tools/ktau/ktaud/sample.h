/* SPDX-License-Identifier: GPL-2.0 */
/* ktaud: sampling sessions, shared by `ktaud sample` and `ktaud run --sample`. */
#ifndef KTAUD_SAMPLE_H
#define KTAUD_SAMPLE_H

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

/* In the child before exec: be traced, and stop until the tracer is ready. */
int ssess_child_prepare(void);
/*
 * In the parent: trace the command pid (and every thread and process it
 * creates), sample each from its start (after the exec), drain the
 * buffers every interval and at each thread's exit, read the collector
 * cfd into *snap as it goes; returns when pid has exited, with its wait
 * status in *status. 0 or -errno.
 */
int ssess_trace(struct ssess *s, pid_t pid, int cfd, struct ktau_snap **snap, int *status);

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
