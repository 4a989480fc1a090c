/* SPDX-License-Identifier: GPL-2.0 */
/* ktaud: shared declarations of the subcommands. */
#ifndef KTAUD_H
#define KTAUD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "ktau-drill.h"

/* Exit codes (see ktaud(1)). `ktaud run` passes the command's through. */
#define EX_KT_OK	0
#define EX_KT_FAIL	1	/* the operation failed */
#define EX_KT_USAGE	2	/* a bad argument */
#define EX_KT_NOKTAU	3	/* no KTAU, another ABI, or no trace mode */
#define EX_KT_PERM	4	/* a capability or permission is missing */
#define EX_KT_GONE	5	/* a pid does not exist (any more) */

extern const char *prog;

/* Print "ktaud: <cmd>: message" on stderr. */
void err_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The clock @c now, in ns. */
uint64_t now_ns(clockid_t c);
/* Report a libktau error of an operation; returns the exit code for it. */
int report(int err, const char *what);
/*
 * ktaud's writes over a file size limit fail with EFBIG (said, nothing
 * half written) instead of killing it: SIGXFSZ ignored from the start
 * (gnuplot, writing ktaud's chart, too); a command it runs gets back the
 * disposition ktaud had (xfsz_restore() in the child, before exec).
 */
void xfsz_ignore(void);
void xfsz_restore(void);
/* A usage error: message, hint to --help, EX_KT_USAGE. */
int usage_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A short option @c given where it means nothing: say which long one is meant. */
int moved_short(const char *cmd, int c, const char *instead);
/*
 * A bare --json or --folded (stdout) that ended at @bare_end (getopt's optind
 * after it, 0: none) directly before the command at @optind_now: the old
 * "--json FILE" form, refused with what to write instead.
 */
int bare_before_command(const char *cmd, char **argv, int optind_now, int bare_end);

/* Parse a pid (positive decimal); 0 on success. */
int parse_pid(const char *s, pid_t *pid);
int parse_uint(const char *s, unsigned long *v);
int parse_seconds(const char *s, double *v);

/* "12.3 ms" and the like, into buf. */
const char *fmt_ns(char *buf, size_t size, uint64_t ns);

/* Open KTAU with clear errors; on failure, returns the exit code (> 0). */
int open_ktau(struct ktau **k);
/* Load the registry; a warning (and NULL) when it cannot be read. */
struct ktau_registry *load_registry(void);

/* Print a table per task of snap. */
struct table_opts {
	const char *sort;	/* "excl", "incl", "calls", "avg", "name", "id" */
	unsigned long top;	/* 0: all */
};
void print_tables(FILE *f, const struct ktau_snap *snap, const struct ktau_registry *reg,
		  const struct table_opts *o);
/* Per-group totals of one task. */
void group_totals(const struct ktau_task *t, const struct ktau_registry *reg,
		  uint64_t *calls, uint64_t *excl);

/* Write snap in the requested forms; returns an exit code. */
struct out_opts {
	const char *tau_dir;
	const char *json_path;	/* "-" for stdout */
	const char *folded_path;
	const char *save_path;
	int dense;
	int force;		/* --force: write among others' files */
	int has_rank, rank;	/* an MPI rank's (ktau_mpi_rank()) */
	const struct ktau_tau_opts *tau_opts;	/* samples etc.; NULL: none */
	char *owned[4];		/* the paths expanded by expand_outputs() */
};
/* Expand %r, %p, %h in the paths of o (0, or an exit code after a message). */
int expand_outputs(struct out_opts *o);
/*
 * Before a command runs: the MPI rank into o, its paths expanded, and its
 * TAU directory checked (refused when it holds others' files, unless
 * --force). 0, or an exit code after a message; free_outputs() after.
 */
int prepare_outputs(struct out_opts *o);
void free_outputs(struct out_opts *o);
/*
 * An error of ktau_outdir_open/_create (or of a writer that uses them)
 * in command cmd: what ktau_output_error() says, with the hint to
 * --force where it helps; returns EX_KT_FAIL.
 */
int outdir_report(int err, const char *cmd);
/*
 * A named output file (--json=FILE, --folded FILE, ...; "-": stdout), its
 * %r, %p, %h expanded: written into a temporary file beside it and renamed
 * over it only once complete, so that a failed write (a full disk) leaves
 * FILE as it was and no partial file. A directory or a symbolic link is
 * refused (not written through); a device or FIFO (/dev/null) is written
 * directly. Under an MPI launcher a name without %r is refused: every
 * rank would write it. out_file_open() returns an exit code after a
 * message; out_file_close(of, err, what) with the writer's 0 or -errno
 * puts the file in place or removes it, and returns an exit code (after
 * "cannot write WHAT to FILE"). stdout is flushed and checked.
 */
struct out_file {
	FILE *f;
	char *path;
	char *tmp;
	bool direct;	/* a device or FIFO, written as it is */
	bool existed;	/* path was this file (dev, ino) when opened */
	dev_t dev;
	ino_t ino;
};
/* "-", /dev/stdout, /dev/fd/1: standard output. */
bool is_stdout_name(const char *path);
/* --force: an existing single output file ktaud did not write is replaced. */
extern int out_force;
int out_file_open(struct out_file *of, const char *tmpl);
/* Whether out_file_open() would refuse @tmpl, before a command runs: an exit code. */
int out_file_check(const char *tmpl);
int out_file_close(struct out_file *of, int err, const char *what);
/* Give up an opened output file: nothing is left of it, nothing said. */
void out_file_discard(struct out_file *of);
/* The -o DIR of a command, its %r, %p, %h expanded (NULL: no memory, said). */
char *output_path(const char *tmpl);
int write_outputs(const struct ktau_snap *snap, const struct ktau_registry *reg,
		  const struct out_opts *o);

/* A gnuplot string literal of s (plot.c). */
void gp_string(FILE *f, const char *s);

/*
 * --json[=FILE]: @o as pretty JSON into @path (NULL or "-": stdout); an
 * exit code. Frees nothing.
 */
struct json_object;
int write_json_doc(struct json_object *o, const char *path);
/*
 * --json[=FILE] and --folded[=FILE] of dump and export (NULL: not asked;
 * "-": stdout): write them; refuse both on stdout, and say whether one
 * takes stdout (the tables' place). Exit codes.
 */
int write_json_folded(const struct ktau_snap *snap, const struct ktau_registry *reg,
		      const char *json_path, const char *folded_path);
int json_folded_to_stdout(const char *cmd, const char *json_path, const char *folded_path,
			  int *to_stdout);

int cmd_dump(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_combine(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_flame(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_functions(int argc, char **argv);
int cmd_kvm(int argc, char **argv);
int cmd_control(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_callgraph(int argc, char **argv);
int cmd_drill(int argc, char **argv);

/*
 * A call graph from a vmlinux (ELF) or a call graph file (text), told
 * apart by their first bytes; 0 or an exit code after a message.
 */
struct ktau_callgraph;
int load_callgraph(const char *path, struct ktau_callgraph **g);

/* An error of adding (add = 1) or removing a probe on func: message, exit code. */
int probe_report(int err, int add, const char *func);
/* Open /proc/ktau/probes: the fd, or after a message minus the exit code. */
int probes_open_report(void);

/*
 * The profile of a command run by ktaud without what ktaud's child did
 * before the exec (execbase.c): init before the fork, take in the child
 * right before execv() of the path resolve_command() found, apply to the
 * collected records after the run.
 */
struct exec_base {
	int fd;
	void *mem;
};
int exec_base_init(struct exec_base *b);
void exec_base_take(struct exec_base *b);
int exec_base_apply(struct exec_base *b, struct ktau_snap *snap, pid_t pid);
void exec_base_free(struct exec_base *b);
int resolve_command(const char *name, char *path, size_t size);

#endif
