/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * ktaud's call graph decoder and drill-down decisions: not part of libktau
 * (libktau.so does not link capstone). ktaud, its tests and the fuzz
 * targets link them from the build's internal archive.
 */
#ifndef KTAU_DRILL_H
#define KTAU_DRILL_H

#include "libktau.h"

/* ==== Static call graph of the kernel (vmlinux) =======================
 *
 * The kernel functions a function calls directly: the direct calls and
 * tail jumps of its code in an x86-64 vmlinux (decoded with capstone), or
 * a text file of them ("ktaud callgraph"). Functions are nodes by name:
 * static functions that share a name are one node with the callees of
 * all of them. See lib/callgraph.c for what is and is not an edge.
 */
struct ktau_callgraph;
/*
 * Decode an ELF file (vmlinux, with its symbol table). -ENOEXEC: not an
 * x86-64 ELF file; -ENODATA: no function symbols (stripped); -ENOMSG: no
 * code (a separate debug file); -errno of opening it.
 */
int ktau_callgraph_from_elf(const char *path, struct ktau_callgraph **out);
/* Read the text form; -EBADMSG when it is not one. */
int ktau_callgraph_load(const char *path, struct ktau_callgraph **out);
int ktau_callgraph_parse(const char *text, size_t len, struct ktau_callgraph **out);
/* Write the text form (source, if not NULL, is named in a comment). */
int ktau_callgraph_write(FILE *f, const struct ktau_callgraph *g, const char *source);
/*
 * The direct callees of function name, sorted by name: *n of them. NULL
 * when the graph does not know name.
 */
const char *const *ktau_callgraph_callees(const struct ktau_callgraph *g, const char *name,
					  size_t *n);
struct ktau_callgraph_stats {
	size_t functions;	/* names */
	size_t callers;		/* names that call another */
	size_t calls;		/* edges */
	size_t decoded;		/* functions decoded (ELF), lines (text) */
	size_t dup_names;	/* names of several functions (ELF) */
};
void ktau_callgraph_stats(const struct ktau_callgraph *g, struct ktau_callgraph_stats *st);
/* What an error of ktau_callgraph_from_elf or _load means. */
const char *ktau_callgraph_strerror(int err);
void ktau_callgraph_free(struct ktau_callgraph *g);

/* ==== Drilling down (the decisions of "ktaud drill") ==================
 *
 * Pure functions of measurements, tested on the host.
 */

/*
 * The kernel function where the time of KTAU routine (its registry name,
 * its group number) starts: a system call NAME at __x64_sys_NAME (else
 * __do_sys_NAME, __se_sys_NAME), page faults at handle_mm_fault, a softirq
 * vector at its handler (softirq_NET_RX: net_rx_action, ...), signal
 * delivery at arch_do_signal_or_restart, a probed function (group
 * dynamic) at itself. has (may be NULL: everything exists) tells whether
 * the kernel has a function (/proc/kallsyms). 0 with the name in buf;
 * -EINVAL (off-CPU time, sample counters: not drillable) or -ENOENT (no
 * known or existing function) with *why, a sentence.
 */
int ktau_drill_start(const char *routine, int group, int (*has)(const char *name, void *arg),
		     void *arg, char *buf, size_t size, const char **why);

/* What was measured of one callee: its inclusive time and calls. */
struct ktau_drill_callee {
	const char *name;
	uint64_t incl_ns;
	uint64_t calls;
};

#define KTAU_DRILL_DESCEND	0	/* into *best: it has >= threshold of the parent's time */
#define KTAU_DRILL_SPREAD	1	/* no callee has that share */
#define KTAU_DRILL_DEPTH	2	/* depth >= max_depth: do not go deeper */
#define KTAU_DRILL_NONE		3	/* no callee was measured */
#define KTAU_DRILL_NO_TIME	4	/* nothing measured in the parent or the callees */

/*
 * Whether to descend from a function with inclusive time parent_incl_ns
 * at depth (functions on the path so far, itself included) into one of
 * its n measured callees: the one with the most inclusive time (ties: more
 * calls, then the first), when it has at least threshold (0..1) of the
 * parent's time. *best is set whenever a callee was measured.
 */
int ktau_drill_decide(uint64_t parent_incl_ns, const struct ktau_drill_callee *c, size_t n,
		      double threshold, unsigned int depth, unsigned int max_depth, size_t *best);
/* The reason of a verdict, for messages ("the depth limit is reached"). */
const char *ktau_drill_verdict_text(int verdict);


#endif /* KTAU_DRILL_H */
