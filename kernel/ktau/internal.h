/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * KTAU internals shared by the files of kernel/ktau.
 */
#ifndef _KERNEL_KTAU_INTERNAL_H
#define _KERNEL_KTAU_INTERNAL_H

#include <linux/ktau.h>
#include <linux/list.h>
#include <linux/refcount.h>
#include <linux/seqlock.h>
#include <linux/sched.h>
#include <linux/spinlock.h>

/* Function IDs: the registry. */
#define KTAU_MAX_IDS		2048
#define KTAU_NAME_LEN		KTAU_PROBE_NAME_LEN	/* a probe's whole name */

struct irqaction;
struct file;

struct ktau_func {
	char name[KTAU_NAME_LEN];
	u8 group;
	u8 live;
	u16 gen;	/* registrations of a dynamic point: ktau_frame_stale() */
	u8 of_module;	/* a module's point, ever: never given out again */
	/* Who may unregister it: the module that registered it, or NULL. */
	struct module *owner;
};

extern const char * const ktau_group_names[KTAU_NR_GROUPS];
extern struct ktau_func *ktau_funcs;

int ktau_registry_init(void);
unsigned int ktau_nr_ids(void);
int ktau_register(const char *name, unsigned int group);
int ktau_register_again(const char *name, unsigned int group);
int ktau_register_once(unsigned int *idp, const char *name, unsigned int group);
int ktau_register_name_once(unsigned int *idp, const char *name,
			    unsigned int group);
u32 ktau_irq_source(unsigned int irq, const struct irqaction *action);
int ktau_group_by_name(const char *name, size_t len);

/* Per-task tables. */
#define KTAU_RESET_PENDING	0	/* bit in ktau_task.flags */
#define KTAU_FOLDED		1	/* folded into the aggregate at exit */
#define KTAU_NEW		2	/* has not returned to user space yet */
#define KTAU_SHARED_COARSE	3	/* shared page without interrupt sources */
#define KTAU_WORK_QUEUED	4	/* reset_work is queued */

/*
 * The depth of a task that has folded at exit: every push and pop then
 * takes the overflow path, which writes no slot (and counts nothing).
 */
#define KTAU_DEPTH_DEAD		BIT(30)

long ktau_unprofiled_tasks(void);
const char *ktau_clock_name(void);
long ktau_clock_backwards(void);
long ktau_exit_nomem(void);
long ktau_ids_full(void);

extern unsigned int ktau_nr_slots;
extern bool ktau_ready;
extern unsigned long ktau_groups_on;

/* Totals per function ID, in clock units: the aggregate, and merges. */
struct ktau_sum {
	u64 count;
	u64 incl;
	u64 excl;
};

/* Clock units to nanoseconds, fixed for one read. */
struct ktau_conv {
	u32 mult;
	u32 shift;
};

void ktau_conv_get(struct ktau_conv *cv);

static inline u64 ktau_to_ns(const struct ktau_conv *cv, u64 t)
{
	return mul_u64_u32_shr(t, cv->mult, cv->shift);
}

struct ktau_totals {
	u64 stack_overflows;
	u64 table_overflows;
	u64 unmatched;
	unsigned int nr_tasks;
	struct ktau_sum sum[KTAU_MAX_IDS];
};

/*
 * Read a slot of a task that may be running on another CPU: count first,
 * then excl, then incl, the reverse of the writer's order in __ktau_pop(),
 * so that excl <= incl and both are at least as new as count.
 */
static inline void ktau_slot_read(struct ktau_slot *s, struct ktau_sum *v)
{
	v->count = local64_read(&s->count);
	smp_rmb();	/* count before excl, pairs with __ktau_pop() */
	v->excl = local64_read(&s->excl);
	smp_rmb();	/* excl before incl, pairs with __ktau_pop() */
	v->incl = local64_read(&s->incl);
}

/*
 * The ID of a live task's slot, and ktau_slot_read() of it, all from
 * before a reset or all from after it: ktau_clear() zeroes the slots in
 * memory order, so that a reader could take an old count with zero times,
 * or one routine's ID with the next one's values. A reader still sees
 * some slots before and others after a reset, as it sees some tasks reset
 * and others not yet (each does it on its way to user space). The writer
 * runs with interrupts off and no reader runs in NMI, so a reader never
 * spins on a reset that cannot finish under it.
 */
static inline u32 ktau_slot_read_stable(struct ktau_task *kt,
					struct ktau_slot *s,
					struct ktau_sum *v)
{
	unsigned int seq;
	u32 id;

	do {
		seq = raw_read_seqcount_begin(&kt->clear_seq);
		id = READ_ONCE(s->id);
		ktau_slot_read(s, v);
	} while (read_seqcount_retry(&kt->clear_seq, seq));
	return id;
}

void ktau_totals_add_task(struct ktau_totals *tot, struct ktau_task *kt);
unsigned int ktau_copy_entries(struct ktau_task *kt, struct ktau_entry *out,
			       unsigned int max, const struct ktau_conv *cv,
			       bool coarse);
bool ktau_irq_detail_hidden(bool privileged);
bool ktau_irq_detail_restricted(void);
bool ktau_irq_detail_lsm_denied(void);
s64 ktau_timens_offset(void);

/*
 * @ns of CLOCK_MONOTONIC in a time namespace @off ahead (or behind): 0
 * for a time before the namespace's zero (a negative offset, as CRIU
 * sets, and a task or sample older than the namespace's clock).
 */
static inline u64 ktau_timens(u64 ns, s64 off)
{
	return off < 0 && ns < -(u64)off ? 0 : ns + off;
}

unsigned int ktau_coarsen(struct ktau_entry *out, unsigned int n,
			  unsigned int max);
u32 ktau_coarse_id(u32 id);
unsigned int ktau_totals_entries(const struct ktau_totals *tot,
				 struct ktau_entry *out, unsigned int max,
				 const struct ktau_conv *cv);
int ktau_aggregate(struct ktau_totals *tot);
int ktau_process_totals(struct task_struct *leader, struct ktau_totals *tot);
void ktau_reset_all(void);
int ktau_set_groups(unsigned long mask);
int ktau_switch_groups(unsigned long on, unsigned long off);

/* The exit collector. */
void ktau_collect_exit(struct task_struct *tsk, struct ktau_task *kt);
void ktau_collect_exec(struct ktau_task *kt);

/* struct ktau_task's xmode: x_shared alone, x_trace alone. */
#if defined(__LITTLE_ENDIAN)
#define KTAU_XMODE_SHARED	0x0001
#define KTAU_XMODE_TRACE	0x0100
#elif defined(__BIG_ENDIAN)
#define KTAU_XMODE_SHARED	0x0100
#define KTAU_XMODE_TRACE	0x0001
#else
#error "KTAU: neither __LITTLE_ENDIAN nor __BIG_ENDIAN"
#endif

/* Trace mode (trace.c). */
/* A record in the ring: the clock, as the frames hold it. */
struct ktau_trec {
	u64 start;
	u64 end;
	union {
		struct {
			u32 id;
			u16 depth;
			u8 kind;
			u8 reserved;
		};
		u64 meta;	/* the four, stored at once */
	};
};

static __always_inline u64 ktau_trec_meta(u32 id, u16 depth, u8 kind)
{
#ifdef __LITTLE_ENDIAN
	return id | (u64)depth << 32 | (u64)kind << 48;
#else
	return (u64)id << 32 | (u64)depth << 16 | (u64)kind << 8;
#endif
}

struct ktau_tsession;

struct ktau_tbuf {
	refcount_t ref;			/* the session's and the thread's */
	struct ktau_tsession *s;	/* valid while the session's ref is */
	struct list_head node;		/* in s->bufs, under s->lock */
	struct task_struct *task;	/* until named: ktau_tbuf_tid() */
	struct ktau_trec *ring;		/* NULL: the session closed */
	struct ktau_trec *old_ring;	/* freed by the close */
	unsigned long head;		/* written by the thread */
	unsigned long tail;		/* written by the reader */
	unsigned int mask;
	u32 flags;			/* KTAU_TRACE_INHERIT */
	u64 groups;
	bool stopped;			/* no more records: exit, detach */
	bool exited;			/* the thread exited; named */
	bool named;			/* tid, pid, comm are set: the */
					/* thread let go of the buffer */
	bool detached;
	bool reported;			/* the last chunk was read */
	/* Records lost since the last LOST record, their first and last end. */
	u64 lost_pending, lost_first, lost_last;
	u64 lost;			/* since the attach */
	pid_t tid, pid;			/* in the session's namespace, at exit */
	char comm[TASK_COMM_LEN];
};

#ifdef CONFIG_KTAU_TRACE
/* @kt's trace buffer, or NULL: not traced. */
static __always_inline struct ktau_tbuf *ktau_trace_buf(struct ktau_task *kt)
{
	return READ_ONCE(kt->trace);
}

void ktau_trace_put_slow(struct ktau_tbuf *b, u64 start, u64 end, u32 id,
			 unsigned int depth, u8 kind);

/*
 * A call of @id of @group ended: it ran from @start to @end (clock), at
 * @depth. Inline in the pop's extra work, the common case: a record that
 * fits, none lost before it, or a group not traced; false sends the
 * record to ktau_trace_put_slow(). The only writer is the thread,
 * interrupts off: plain stores, and the release of head publishes the
 * record to the reader.
 */
static __always_inline bool ktau_trace_try(struct ktau_tbuf *b, unsigned int group,
					   u32 id, u64 start, u64 end,
					   unsigned int depth)
{
	struct ktau_trec *ring = READ_ONCE(b->ring), *r;
	unsigned long head = b->head;

	if (!(b->groups & BIT_ULL(group)))
		return true;
	if (unlikely(!ring || READ_ONCE(b->stopped) || b->lost_pending ||
		     /* Pairs with the reader's release: done with the slots. */
		     head - smp_load_acquire(&b->tail) > b->mask))
		return false;
	/*
	 * depth < KTAU_STACK_DEPTH here: no clamp to u16 (KTAU_DEPTH_DEAD
	 * comes with stopped, above).
	 */
	r = &ring[head & b->mask];
	r->start = start;
	r->end = end;
	r->meta = ktau_trec_meta(id, depth, KTAU_TRACE_CALL);
	/* The record before head: pairs with the reader's acquire. */
	smp_store_release(&b->head, head + 1);
	return true;
}

void ktau_trace_event(struct ktau_task *kt, unsigned int group, u32 id);
void ktau_trace_fork(struct ktau_task *parent, struct task_struct *tsk,
		     struct ktau_task *kt);
void ktau_trace_free(struct ktau_task *kt);
void ktau_trace_post_fork(struct task_struct *tsk, struct ktau_task *kt);
void ktau_trace_stop(struct ktau_task *kt);
void ktau_trace_exit(struct task_struct *tsk, struct ktau_task *kt);
void ktau_trace_exec_nondumpable(struct ktau_task *kt);
#else
/* Without trace mode no task has a buffer, and the calls go away. */
static __always_inline struct ktau_tbuf *ktau_trace_buf(struct ktau_task *kt)
{
	return NULL;
}

static inline bool ktau_trace_try(struct ktau_tbuf *b, unsigned int group,
				  u32 id, u64 start, u64 end, unsigned int depth)
{
	return true;
}

static inline void ktau_trace_put_slow(struct ktau_tbuf *b, u64 start,
				       u64 end, u32 id, unsigned int depth,
				       u8 kind) { }
static inline void ktau_trace_event(struct ktau_task *kt, unsigned int group,
				    u32 id) { }
static inline void ktau_trace_fork(struct ktau_task *parent,
				   struct task_struct *tsk,
				   struct ktau_task *kt) { }
static inline void ktau_trace_free(struct ktau_task *kt) { }
static inline void ktau_trace_stop(struct ktau_task *kt) { }
static inline void ktau_trace_exit(struct task_struct *tsk,
				   struct ktau_task *kt) { }
static inline void ktau_trace_exec_nondumpable(struct ktau_task *kt) { }
#endif
void ktau_collector_get(struct ktau_collector *c);
void ktau_collector_put(struct ktau_collector *c);

/* Shared pages. */
/*
 * A routine of @group, charged to slot @s, ended: add it to the page. The
 * page's entries mirror the slot table by index; a table reset may give
 * an index another ID, and then the entry starts again from zero.
 */
static __always_inline void ktau_shared_update(struct ktau_task *kt,
					       struct ktau_slot *s,
					       unsigned int group, u64 incl,
					       u64 excl)
{
	struct ktau_shared *sh = kt->shared;
	struct ktau_shared_counts *g = &sh->groups[group];
	unsigned int i = s - kt->slots;
	struct ktau_shared_entry *e = NULL;
	/* Only this thread writes its page: seq stays in a register. */
	u32 seq = sh->seq + 1;
	u32 id = s->id;

	if (likely(i < KTAU_SHARED_ENTRIES))
		e = &sh->entries[i];
	/* See ktau_irq_detail_hidden(): the group totals only. */
	if (unlikely(test_bit(KTAU_SHARED_COARSE, &kt->flags)) &&
	    (group == KTAU_GROUP_IRQ || group == KTAU_GROUP_SOFTIRQ))
		e = NULL;

	WRITE_ONCE(sh->seq, seq);
	smp_wmb();	/* seq odd before the counters, pairs with the reader */
	g->count++;
	g->incl += incl;
	g->excl += excl;
	sh->updates++;
	if (likely(e)) {
		if (unlikely(e->id != id)) {
			e->id = id;
			e->group = group;
			e->count = 0;
			e->incl = 0;
			e->excl = 0;
		}
		e->count++;
		e->incl += incl;
		e->excl += excl;
	} else {
		sh->unlisted++;
	}
	smp_wmb();	/* the counters before seq even, pairs with the reader */
	WRITE_ONCE(sh->seq, seq + 1);
}

long ktau_shared_register(const struct ktau_shared_reg __user *ureg);
long ktau_shared_unregister(void);
void ktau_shared_release(struct ktau_task *kt);

/* Sampling. Room for entries with samples and no slot (user_mode...). */
#define KTAU_SAMPLE_EXTRA	8

#ifdef CONFIG_PERF_EVENTS
long ktau_sample_start(const void __user *uattr, bool stack);
long ktau_sample_read(struct file *file, void __user *ureq, bool stop,
		      bool stack);
void ktau_sample_release(struct task_struct *t);
u32 ktau_sample_count(struct ktau_task *kt, u32 id);
unsigned int ktau_sample_entries(struct ktau_task *kt, struct ktau_entry *out,
				 unsigned int n, unsigned int max);
#else
static inline long ktau_sample_start(const void __user *uattr, bool stack)
{
	return -EOPNOTSUPP;
}

static inline long ktau_sample_read(struct file *file, void __user *ureq,
				    bool stop, bool stack)
{
	return -EOPNOTSUPP;
}

static inline void ktau_sample_release(struct task_struct *t) { }
static inline u32 ktau_sample_count(struct ktau_task *kt, u32 id)
{
	return 0;
}

static inline unsigned int ktau_sample_entries(struct ktau_task *kt,
					       struct ktau_entry *out,
					       unsigned int n, unsigned int max)
{
	return n;
}
#endif

/* Dynamic probes. */
extern const struct proc_ops ktau_probes_ops;	/* with CONFIG_FPROBE */
#ifdef CONFIG_FPROBE
void ktau_probe_remove_all(void);
#else
static inline void ktau_probe_remove_all(void) { }
#endif

/* /proc/ktau */
bool ktau_capable(void);
bool ktau_perfmon_quiet(void);
bool ktau_perfmon_bits(void);
bool ktau_file_detail_hidden(const struct file *file);
extern const struct proc_ops ktau_collect_ops;
extern const struct proc_ops ktau_trace_ops;	/* with CONFIG_KTAU_TRACE */

#endif /* _KERNEL_KTAU_INTERNAL_H */
