/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * libktau user-level runtime: the state shared by user.c (timers, the
 * shared page, threads), instrument.c (-finstrument-functions),
 * userwrite.c (the merged TAU profile) and elfsym.c (symbol names), and
 * the test hooks of tests/host/user-tests.c.
 *
 * Times are nanoseconds of CLOCK_MONOTONIC; kernel values stay in the
 * page's clock units until they are written (ns = units * mult >> shift).
 */
#ifndef LIBKTAU_USER_INTERNAL_H
#define LIBKTAU_USER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/ktau.h>

#include "libktau.h"

#define KT_NONE		UINT32_MAX
#define KT_DEPTH_DEFAULT 32
#define KT_DEPTH_MAX	64
#define KT_ICACHE	256	/* per-thread cache of function address -> timer */
#define KT_NAME_MAX	1024	/* bytes of a written name (one element) */
#define KT_OUTSIDE_NAME	"[outside timers]"

/* A timer: global, never freed; id indexes the per-thread flat table. */
struct ktau_timer {
	uint32_t id;
	uint32_t is_addr;	/* from -finstrument-functions: named at write */
	uintptr_t addr;
	char *name;		/* NULL for an address not yet resolved */
	struct ktau_timer *next;	/* hash chain (by name or by address) */
	/* Not timed: one word, so that timed events test it once. */
	uint32_t untimed;	/* KT_THROTTLED | KT_EXCLUDED */
};
#define KT_THROTTLED	1u	/* no longer timed (KTAU_THROTTLE) */
#define KT_EXCLUDED	2u	/* never timed (KTAU_SELECT_FILE, select.c) */

/* Kernel counters charged, in clock units. */
struct kt_kcounts {
	uint64_t count, incl, excl;
};

/* Flat statistics of one timer in one thread (ns). */
struct kt_flat {
	uint64_t calls, subrs, incl, excl;
	uint32_t active;	/* frames of this timer on the stack */
	uint32_t skipped;	/* starts not timed (throttled) not yet stopped */
};

/*
 * A callpath node: the path of timers from a root. Node 0 is the thread's
 * "[outside timers]", the target of kernel time while no timer runs.
 */
struct kt_node {
	uint32_t parent;	/* 0 for a root */
	uint32_t timer;		/* KT_NONE for node 0 */
	uint32_t depth;		/* elements in the path */
	uint32_t hnext;		/* hash chain */
	uint32_t kfirst;	/* kernel routines charged: list in kents */
	uint32_t pad;
	uint64_t calls, subrs, incl, excl;
	struct kt_kcounts kg[KTAU_SHARED_GROUPS];
};

/* One kernel routine charged to one node. */
struct kt_kent {
	uint32_t id, group;
	uint32_t next;		/* next of the same node */
	uint32_t pad;
	struct kt_kcounts c;
};

struct kt_frame {
	uint32_t timer, node;
	uint32_t owns;		/* 0: deeper than the depth limit, no node of its own */
	uint32_t pad;
	uint64_t t0;		/* start */
	uint64_t child;		/* inclusive time of the frames it called */
	uint64_t kraw;		/* kernel time charged while on top, units */
};

/*
 * A growable array. A block is never changed in size: growing allocates a
 * new one and retires the old, so that a writer copying another thread's
 * data never reads freed memory, and reads at most cap items.
 */
struct kt_blk {
	size_t cap;
	struct kt_blk *retired;		/* list of the blocks replaced */
	_Alignas(16) unsigned char items[];
};

/* A thread's data: what a copy for the writer takes. */
struct kt_data {
	struct kt_blk *stack, *flat, *nodes, *kents;
	uint32_t depth, nflat, nnodes, nkents;
	struct kt_flat outside;		/* "[outside timers]" */
	uint64_t idle_t0;		/* start of the interval with no timer */
	uint64_t idle_kraw;		/* kernel time in it, units */
	int idle_open;
	int had_page;			/* kernel data were charged at some time */
	uint32_t mult, shift;		/* clock units to ns */
	uint64_t events, page_reads, dropped, unmatched, sync_fail;
	uint64_t throttled_calls;	/* starts of throttled timers, not timed */
	uint64_t clock_adjust;		/* ns added to inclusive times */
	uint64_t kraw_total;		/* kernel time charged, units */
	uint64_t absorbed;		/* kernel time of ktau_user_write, units */
	uint64_t unlisted;		/* page: routines without an entry */
	/* Trace of the user routines (KTAU_TRACE_USER set: ktaud trace). */
	struct kt_blk *trace;		/* struct kt_trec; NULL: not traced */
	uint32_t ntrace;
	uint64_t trace_lost;		/* records beyond KT_TRACE_MAX */
};

/* One completed user routine, for ktaud trace (written at exit). */
struct kt_trec {
	uint64_t t0, t1;		/* CLOCK_MONOTONIC ns */
	uint32_t timer, depth;
};
#define KT_TRACE_MAX	(1u << 20)	/* records per thread */

#define KT_ITEMS(blk, type) ((type *)(void *)(blk)->items)

/* The page's counters as they were at the last read. */
struct kt_pagecopy {
	uint64_t unlisted;
	struct ktau_shared_counts g[KTAU_SHARED_GROUPS];
	struct ktau_shared_entry e[KTAU_SHARED_ENTRIES];
};

enum kt_state { KT_LIVE, KT_FINISHED, KT_DEAD };

struct kt_thread {
	/* Hot: read at every event. */
	const volatile uint32_t *seqp;	/* &page->seq; NULL: no kernel data */
	uint32_t seq;			/* seq of the last read */
	atomic_uint gen;		/* odd while the thread changes its data */
	atomic_int pause_req;		/* a writer copies this thread: wait */
	volatile int locking;		/* it holds (or waits for) the lock */
	struct kt_data d;
	uint32_t *hash;			/* node hash buckets (owner only) */
	uint32_t hash_cap;

	struct ktau_shared *page;	/* registered or simulated page */
	int page_mapped;		/* we mmap()ed it */
	int registered;			/* registered with the kernel */
	int reg_err;			/* why not (-errno), 0 if it is */
	struct kt_pagecopy *last, *cur;

	pid_t pid, tid;
	char comm[16];
	int state;			/* enum kt_state */
	int closed;			/* timers closed at exit */
	struct kt_thread *next;		/* global list, registration order */
	struct kt_blk *retired;		/* blocks replaced, freed at the end */
	/* Function address -> timer: one pointer a slot (timer->addr is the
	 * key), so that a signal handler cannot pair one's key with another's
	 * timer. */
	struct ktau_timer *ic[KT_ICACHE];
};

/* gen: odd while the thread changes its data (see user.c). */
static inline void ktau__gen_begin(struct kt_thread *th)
{
	atomic_store_explicit(&th->gen, atomic_load_explicit(&th->gen, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

void ktau__pause(struct kt_thread *th);

static inline void ktau__gen_end(struct kt_thread *th)
{
	atomic_store_explicit(&th->gen, atomic_load_explicit(&th->gen, memory_order_relaxed) + 1,
			      memory_order_release);
	if (__builtin_expect(atomic_load_explicit(&th->pause_req, memory_order_relaxed), 0))
		ktau__pause(th);
}

/*
 * An event must not start inside another event of its thread, nor while
 * the thread holds or waits for the runtime's lock (a signal handler's
 * event would wait for a lock its own thread holds): it is dropped.
 */
static inline int ktau__gen_busy(struct kt_thread *th)
{
	return (atomic_load_explicit(&th->gen, memory_order_relaxed) & 1) || th->locking;
}

/* user.c */
struct kt_thread *ktau__self(void);
struct ktau_timer *ktau__timer_addr(uintptr_t addr);
/* An event, with gen already odd (ktau__gen_begin). */
int ktau__start_in(struct kt_thread *th, struct ktau_timer *t);
int ktau__stop_in(struct kt_thread *th, struct ktau_timer *t);

/* Start or stop t: one event, with gen odd around it. */
static inline int ktau__event(struct kt_thread *th, struct ktau_timer *t, int stop)
{
	int ret;

	ktau__gen_begin(th);
	ret = stop ? ktau__stop_in(th, t) : ktau__start_in(th, t);
	ktau__gen_end(th);
	return ret;
}
/* The timer of an id, NULL if none. */
struct ktau_timer *ktau__timer_by_id(uint32_t id);
uint32_t ktau__ntimers(void);
/* The throttling rule in words ("off" or "over N calls under M us each"). */
void ktau__throttle_rule(char *buf, size_t size);
void ktau__lock(void);
void ktau__unlock(void);
int ktau__callpath_depth(void);

/* A copy of a thread for writing, its open timers closed at 'now'. */
struct kt_tsnap {
	struct kt_data d;
	pid_t pid, tid;
	char comm[16];
	int state;		/* enum kt_state */
	int running;		/* timers were still running: closed in the copy */
	int reg_err;
};
void ktau__data_free(struct kt_data *d);
void ktau__close_all(struct kt_data *d, uint64_t now);

/* userwrite.c: one row of a profile file. */
struct ktau__row {
	char *name;
	char *group;
	uint64_t calls, subrs;
	uint64_t excl, incl;		/* ns */
};

/* The rows of a thread's profile; names resolved through names[timer id]. */
int ktau__rows(const struct kt_tsnap *ts, char *const *names, uint32_t nnames,
	       const struct ktau_registry *reg, struct ktau__row **rows, size_t *nrows);
void ktau__rows_free(struct ktau__row *rows, size_t n);
/* Write the rows as a TAU profile file with the thread's metadata. */
int ktau__write_rows(FILE *f, const struct kt_tsnap *ts, const struct ktau__row *rows,
		     size_t n, int node, int thread);
/* Display names of all timers (resolving addresses); free with ktau__names_free. */
char **ktau__timer_names(uint32_t *n);
void ktau__names_free(char **names, uint32_t n);

/* elfsym.c: names of code addresses from the ELF symbol tables. */
struct kt_symbolizer;
struct kt_symbolizer *ktau__sym_open(void);
/* malloc()ed: the symbol, "<object>+0x<offset>" or "0x<address>"; NULL: no memory. */
char *ktau__sym_name(struct kt_symbolizer *s, uintptr_t addr);
/* CLOCK_REALTIME (us since the epoch) when the runtime was first used. */
uint64_t ktau__start_us(void);
/* A symbol's name as people read it (demangle.c); malloc()ed, or NULL. */
char *ktau__demangle(const char *name);
void ktau__sym_close(struct kt_symbolizer *s);
/* Every function symbol of every object of @s, with its ELF name. */
void ktau__sym_each(struct kt_symbolizer *s, void (*fn)(void *arg, uintptr_t addr, const char *name),
		    void *arg);

/* select.c: the include and exclude lists (KTAU_SELECT_FILE). */
int ktau__select_parse(const char *path, char *err, size_t errlen);
long ktau__select_resolve(void);
int ktau__select_addr(uintptr_t addr);
int ktau__select_name(const char *name);
int ktau__select_includes(void);
int ktau__select_match(const char *pat, const char *s);
void ktau__select_reset(void);
/* The file and what it listed, for the profile's metadata. */
const char *ktau__select_file(void);
uint32_t ktau__select_excluded(void);

/*
 * Test hooks (tests/host/user-tests.c): a clock, a simulated page in
 * ordinary memory instead of the kernel's registration, a registry for
 * the names, and the rows of the calling thread as ktau_user_write()
 * would write them.
 */
void ktau__user_test_clock(uint64_t (*fn)(void));
int ktau__user_test_page(struct ktau_shared *page);
void ktau__user_test_registry(const struct ktau_registry *reg);
int ktau__user_test_rows(struct ktau__row **rows, size_t *nrows);

#endif
