/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KTAU: exact per-task kernel profiles.
 *
 * The hooks below time the kernel routines a task runs through. Each group
 * of hooks sits behind its own static key, so that a group that is off
 * costs one patched-out jump, and the whole file compiles to nothing with
 * CONFIG_KTAU=n. See Documentation/trace/ktau.rst.
 */
#ifndef _LINUX_KTAU_H
#define _LINUX_KTAU_H

#include <linux/errno.h>
#include <linux/types.h>
#include <uapi/linux/ktau.h>

struct task_struct;
struct irq_desc;
struct seq_file;
struct pid_namespace;
struct pid;
struct module;

/* An exit reason of a KVM vendor module: DEFINE_KTAU_KVM_EXITS(). */
struct ktau_kvm_reason {
	unsigned long code;
	const char *name;
};

#ifdef CONFIG_KTAU

#include <linux/jump_label.h>
#include <linux/jump_label_ratelimit.h>
#include <linux/static_call.h>
#include <linux/list.h>
#include <linux/percpu.h>
#include <linux/seqlock_types.h>
#include <asm/local64.h>
#include <linux/sched.h>
#include <asm/unistd.h>
#include <linux/sched/clock.h>
#ifdef CONFIG_X86_TSC
#include <asm/msr.h>
#endif

/* Nesting depth of the per-task timer stack. */
#define KTAU_STACK_DEPTH	16

/*
 * A routine in progress. tag: id in bits 0-31, group 32-39, flags above.
 * dup is valid only with KTAU_TAG_HASREC: the inclusive time of frames of
 * the same routine nested in this one, already charged by them; once the
 * frame of a routine that recursed is closed, what it charged.
 */
struct ktau_frame {
	u64 start;		/* ktau_clock() at entry */
	u64 child;		/* time of the routines nested in this one */
	u64 tag;
	u64 dup;
};

#define KTAU_TAG(group, id)	((u64)(group) << 32 | (id))
#define KTAU_TAG_GROUP(tag)	((unsigned int)((tag) >> 32) & 0xff)
#define KTAU_TAG_ID(tag)	((u32)(tag))
/* The same routine is open below this frame (dynamic points only). */
#define KTAU_TAG_RECURSIVE	BIT_ULL(40)
/*
 * A system call's frame (group 0) holds the call's number itself, so that
 * entry does no arithmetic; numbers out of range are not listed, and
 * 32-bit calls, which have no number at entry, are tagged this way.
 */
#define KTAU_TAG_SYSCALL_COMPAT	BIT_ULL(41)
/* A frame of the same routine was opened above this one: see dup. */
#define KTAU_TAG_HASREC		BIT_ULL(42)
/* Dynamic points: the point's registration generation (ktau_frame_stale()). */
#define KTAU_GEN_MASK		((1U << CONFIG_KTAU_GEN_BITS) - 1)
#define KTAU_TAG_GEN_SHIFT	48
#define KTAU_TAG_GEN(tag)	((unsigned int)((tag) >> KTAU_TAG_GEN_SHIFT) & KTAU_GEN_MASK)
/*
 * The context the frame was opened in: the task's own, a softirq handler
 * or a hard interrupt (the innermost; see ktau_ctx()). An exit closes only
 * a frame of the context it runs in.
 */
#define KTAU_TAG_CTX_SHIFT	43
#define KTAU_CTX_TASK		0
#define KTAU_CTX_SOFTIRQ	1
#define KTAU_CTX_HARDIRQ	2
#define KTAU_TAG_CTX(ctx)	((u64)(ctx) << KTAU_TAG_CTX_SHIFT)
#define KTAU_TAG_CTX_MASK	KTAU_TAG_CTX(3)
/* What an exit of a group compares: the group and the context. */
#define KTAU_TAG_GROUP_CTX	(0xffULL << 32 | KTAU_TAG_CTX_MASK)
/* The bits that are not the routine's identity (group and ID). */
#define KTAU_TAG_FLAGS		(KTAU_TAG_RECURSIVE | KTAU_TAG_HASREC | \
				 KTAU_TAG_CTX_MASK | \
				 ((u64)KTAU_GEN_MASK << KTAU_TAG_GEN_SHIFT))

/*
 * One routine's totals. local64_t: the owner adds with single
 * instructions and no lock prefix, other CPUs read whole values.
 */
struct ktau_slot {
	u32 id;			/* KTAU_ID_NONE: free */
	u32 reserved;
	local64_t count;
	local64_t incl;		/* clock units until read out */
	local64_t excl;
};

struct ktau_collector;
struct ktau_sampler;
struct ktau_tbuf;
struct ktau_proc;

/*
 * A task's profile. Written only by the task itself, on its CPU, with
 * interrupts off; read from other CPUs without locks (see kernel/ktau).
 * The slot table is open-addressed by function ID: slots[id & mask].
 */
struct ktau_task {
	unsigned int depth;	/* frames on the stack; may exceed the array */
	unsigned int mask;	/* number of slots - 1 */
	u64 stack_overflows;
	u64 table_overflows;
	u64 unmatched;
	unsigned long flags;
	/*
	 * What the pop's extra work has to do for this task, read as one
	 * word, a byte per kind of writer: the shared page (the task
	 * itself), the trace (under task_lock(): an attacher, or the task
	 * dropping its buffer; without it while the task cannot run: fork,
	 * free). Set after its pointer, cleared before it; users test the
	 * pointer too.
	 */
	union {
		struct {
			u8 x_shared;
			u8 x_trace;
		};
		u16 xmode;
	};
	struct ktau_collector *collector;
	struct ktau_shared *shared;	/* the task's shared page, mapped */
	struct page *shared_page;	/* pinned while registered */
	struct mm_struct *shared_mm;	/* charged for the pin */
	unsigned long shared_npages;	/* pages charged: the page's folio */
	struct ktau_sampler __rcu *sample;	/* overflow sampling, or NULL */
	u64 hev_syscall_start;	/* start of the last system call handlers saw */
	u64 out_tsc;		/* TSC when it left its CPU (ktau_rebase_in()) */
	u64 out_ns;		/* CLOCK_MONOTONIC then */
	unsigned int out_cpu;	/* that CPU */
	unsigned int fold_cpu;	/* the CPU whose exited totals it joined */
	unsigned int fold_seq;	/* and their sequence count after that */
	unsigned int claimed;	/* a slot was claimed: see ktau_task_clean() */
	struct ktau_proc *proc;	/* leader: totals of the exited threads */
	unsigned int proc_gen;	/* the fold into the process's totals */
	seqcount_t clear_seq;	/* around a reset: see ktau_clear() */
	struct callback_head reset_work;
#ifdef CONFIG_KTAU_TRACE
	struct ktau_tbuf *trace;	/* trace mode's buffer, or NULL */
	u32 trace_refused;	/* the last trace session that counted it refused */
#endif
	/*
	 * Aligned, so that the frames, sysslot and the slots are at the same
	 * offsets with and without trace mode (its fields take what would
	 * be padding): the hooks then compile to the same instructions
	 * either way (make bench, ktau-*-notrace). The cache is aligned so.
	 */
	struct ktau_frame stack[KTAU_STACK_DEPTH] __aligned(32);
	/*
	 * System calls, the most frequent routines, find their slot without
	 * hashing: sysslot[nr] is the slot's index + 1, 0 until first use.
	 */
	u8 sysslot[NR_syscalls];
	struct ktau_slot slots[];
};

extern struct static_key_true ktau_keys[KTAU_NR_GROUPS];

/*
 * In-kernel handlers (ktau_handler_register()): called at each start,
 * stop or event of the groups in their mask, through __ktau_notify(),
 * which makes a static call straight to the handler when there is one.
 */
enum ktau_hevent_kind {
	KTAU_HEV_START,
	KTAU_HEV_STOP,
	KTAU_HEV_EVENT,
};

struct ktau_hevent {
	unsigned int kind;	/* KTAU_HEV_* */
	unsigned int group;	/* KTAU_GROUP_* */
	u32 id;			/* function ID */
	u64 clock;		/* ktau_clock() at the start, stop or event */
	u64 incl;		/* STOP: inclusive time, in clock units */
};

struct ktau_handler {
	void (*func)(struct ktau_handler *h, const struct ktau_hevent *ev);
	unsigned long groups;	/* BIT(KTAU_GROUP_*) of the events wanted */
	struct list_head node;	/* private to KTAU */
};

extern unsigned long ktau_handler_groups;
extern struct ktau_handler *ktau_handler_one;
void ktau_handler_dispatch(struct ktau_handler *h, const struct ktau_hevent *ev);
DECLARE_STATIC_CALL(ktau_handler_call, ktau_handler_dispatch);

/*
 * On while any task has a shared page registered or any handler is
 * registered: the work of the hooks beyond the task's own table. Off, it
 * costs each hook one patched-out jump for both.
 */
extern struct static_key_false_deferred ktau_extra_key;

#define ktau_extra_on()	static_branch_unlikely(&ktau_extra_key.key)

void __ktau_notify(unsigned int kind, unsigned int group, u32 id, u64 clock,
		   u64 incl);

/* Whether a handler wants @group's events; under ktau_extra_on(). */
static __always_inline bool ktau_handlers_want(unsigned int group)
{
	return READ_ONCE(ktau_handler_groups) & BIT(group);
}

/*
 * Whether the pop's extra work has anything to do for @kt: its shared
 * page or its trace (xmode), or a handler of @group. Tested inline, so
 * that a task with none of them calls nothing while other tasks keep
 * ktau_extra_key on. Under ktau_extra_on().
 */
static __always_inline bool ktau_pop_extra_wanted(struct ktau_task *kt,
						  unsigned int group)
{
	return READ_ONCE(kt->xmode) || ktau_handlers_want(group);
}

#define ktau_group_on(group)	static_branch_likely(&ktau_keys[group])

/*
 * The clock: the TSC on x86, converted to nanoseconds only when a profile
 * is read, so that the hooks do no arithmetic beyond a subtraction; else
 * local_clock(). A routine may start on one CPU and end on another: where
 * the kernel does not trust the TSC to agree across CPUs, the scheduler
 * hooks move the start of a task's open routines into the TSC of the CPU
 * it comes back on (ktau_rebase_in() in kernel/ktau/core.c). A time that
 * still comes out negative is taken as 0 and counted (__ktau_clamp()).
 */
static __always_inline u64 ktau_clock(void)
{
#ifdef CONFIG_X86_TSC
	return rdtsc();
#else
	return local_clock();
#endif
}

/* Inclusive and exclusive time of a frame. */
struct ktau_times {
	u64 incl;
	u64 excl;
};

struct ktau_times __ktau_clamp(u64 incl, u64 child);

void ktau_init(void);
int ktau_tsk_init(struct task_struct *tsk);
#ifdef CONFIG_KTAU_TRACE
void ktau_post_fork(struct task_struct *tsk);
#else
static inline void ktau_post_fork(struct task_struct *tsk) { }
#endif

extern struct ktau_task *ktau_sink;

/* @t's own profile, or NULL: none, or the shared one of ktau_tsk_init(). */
static inline struct ktau_task *ktau_profile(struct task_struct *t)
{
	struct ktau_task *kt = READ_ONCE(t->ktau);

	return kt == ktau_sink ? NULL : kt;
}

void ktau_tsk_free(struct task_struct *tsk);
void ktau_exit_user(struct task_struct *tsk);
void ktau_exit(struct task_struct *tsk);

void __ktau_start(unsigned int group, unsigned int id);
void __ktau_stop(unsigned int group);
void __ktau_stop_id(unsigned int group, u32 id, u64 ctx);
void __ktau_event(unsigned int group, u32 id);
void __ktau_pop_slow(struct ktau_task *kt, unsigned int group);
struct ktau_slot *__ktau_slot_slow(struct ktau_task *kt, u32 id);
void __ktau_irq_enter(void);
void __ktau_irq_exit(void);
void __ktau_irq_desc(struct irq_desc *desc);
void __ktau_sched_out(bool blocked);
void __ktau_sched_in(void);
#ifdef CONFIG_X86_TSC
/* On when the TSCs of the CPUs may not agree: see ktau_rebase_in(). */
extern struct static_key_false ktau_rebase_key;
void __ktau_rebase_out(void);
void __ktau_rebase_in(void);
#define ktau_rebase_on()	static_branch_unlikely(&ktau_rebase_key)
#else
#define ktau_rebase_on()	false
static inline void __ktau_rebase_out(void) { }
static inline void __ktau_rebase_in(void) { }
#endif
void ktau_exec(void);
void ktau_exec_nondumpable(void);
void ktau_exec_leader(struct task_struct *tsk, struct task_struct *leader);

/*
 * Dynamic function IDs, for modules and run-time probes. A point belongs
 * to the module that registered it (THIS_MODULE; NULL: built-in code),
 * and only that module may unregister it.
 */
int __ktau_register_point(const char *name, unsigned int group,
			  struct module *owner);
void __ktau_unregister_point(int id, struct module *owner);
#define ktau_register_point(name, group) \
	__ktau_register_point(name, group, THIS_MODULE)
#define ktau_unregister_point(id) __ktau_unregister_point(id, THIS_MODULE)
int ktau_handler_register(struct ktau_handler *h);
void ktau_handler_unregister(struct ktau_handler *h);

/* A statically named point whose ID is registered when first used. */
struct ktau_site {
	const char *name;
	unsigned int group;
	unsigned int id;
};

DECLARE_PER_CPU(struct ktau_site *, ktau_irq_hint);

int proc_tgid_ktau(struct seq_file *m, struct pid_namespace *ns,
		   struct pid *pid, struct task_struct *task);
int proc_tid_ktau(struct seq_file *m, struct pid_namespace *ns,
		  struct pid *pid, struct task_struct *task);

/* The function ID of a frame of @group with @tag. */
static __always_inline u32 ktau_frame_id(u64 tag, unsigned int group)
{
	if (group != KTAU_GROUP_SYSCALL)
		return KTAU_TAG_ID(tag);
	if (likely(tag < NR_syscalls))
		return KTAU_ID_SYSCALL_BASE + tag;
	return tag == KTAU_TAG_SYSCALL_COMPAT ? KTAU_ID_SYSCALL_COMPAT :
						 KTAU_ID_SYSCALL_BAD;
}

/*
 * The context the CPU is in for a routine of @group, as tag bits: a hard
 * interrupt, a softirq handler (PREEMPT_RT runs those, and may schedule,
 * in task context), or the task's own. System calls begin and end in the
 * task's, as KVM's guest entries and exits; an interrupt's hooks run in
 * the interrupt. Never an NMI: KTAU opens no frame there.
 */
static __always_inline u64 ktau_ctx(unsigned int group)
{
	if (group == KTAU_GROUP_SYSCALL || group == KTAU_GROUP_KVM)
		return KTAU_TAG_CTX(KTAU_CTX_TASK);
	if (group == KTAU_GROUP_IRQ || in_hardirq())
		return KTAU_TAG_CTX(KTAU_CTX_HARDIRQ);
	if (in_serving_softirq())
		return KTAU_TAG_CTX(KTAU_CTX_SOFTIRQ);
	return KTAU_TAG_CTX(KTAU_CTX_TASK);
}

/* @tag is a frame of @group opened in the context the CPU is in now. */
static __always_inline bool ktau_tag_is(u64 tag, unsigned int group)
{
	return (tag & KTAU_TAG_GROUP_CTX) == (KTAU_TAG(group, 0) | ktau_ctx(group));
}

void __ktau_pop_extra(struct ktau_task *kt, struct ktau_slot *s,
		      struct ktau_frame *f, unsigned int group, u64 incl,
		      u64 excl);
u64 __ktau_pop_recursive(struct ktau_task *kt, unsigned int d, u64 incl);

/*
 * Close the frame on top of the stack, which must be @group's, opened in
 * the context the CPU is in, and charge it to its slot. Interrupts must be
 * off.
 */
static __always_inline void __ktau_pop(struct ktau_task *kt, unsigned int group)
{
	unsigned int d = kt->depth - 1;
	struct ktau_frame *f;
	struct ktau_slot *s;
	u64 incl, excl, incl_add, tag;
	u32 id;

	if (unlikely(d >= KTAU_STACK_DEPTH)) {
		__ktau_pop_slow(kt, group);
		return;
	}
	f = &kt->stack[d];
	tag = f->tag;
	if (unlikely(!ktau_tag_is(tag, group))) {
		__ktau_pop_slow(kt, group);
		return;
	}

	incl = ktau_clock() - f->start;
	excl = incl - f->child;
	/* A negative time, or children longer than the routine. */
	if (unlikely((s64)excl < 0)) {
		struct ktau_times t = __ktau_clamp(incl, f->child);

		incl = t.incl;
		excl = t.excl;
	}
	id = ktau_frame_id(tag, group);
	s = &kt->slots[id & kt->mask];
	if (unlikely(s->id != id))
		s = __ktau_slot_slow(kt, id);
	/*
	 * Recursion: every frame of a routine charges the inclusive time
	 * that the frames of the same routine nested in it did not, so that
	 * incl grows with each return and never counts time twice.
	 */
	incl_add = incl;
	if (unlikely(tag & (KTAU_TAG_RECURSIVE | KTAU_TAG_HASREC)))
		incl_add = __ktau_pop_recursive(kt, d, incl);
	/*
	 * Readers load count, excl, incl in that order (ktau_slot_read());
	 * store in the reverse order so that they see excl <= incl, which
	 * holds for every frame: excl = incl - child <= incl_add.
	 */
	local64_add(incl_add, &s->incl);
	smp_wmb();	/* incl before excl, pairs with ktau_slot_read() */
	local64_add(excl, &s->excl);
	smp_wmb();	/* excl before count, pairs with ktau_slot_read() */
	local64_inc(&s->count);
	/* A sample in an NMI reads depth, then the frame below it. */
	WRITE_ONCE(kt->depth, d);
	if (d)
		kt->stack[d - 1].child += incl;
	/* Out of line, last: the fast path keeps its registers. */
	if (ktau_extra_on() && ktau_pop_extra_wanted(kt, group))
		__ktau_pop_extra(kt, s, f, group, incl, excl);
}

/*
 * System calls: entered from user mode, so the stack is empty and the
 * frame goes to the bottom. Called with interrupts off.
 */
/*
 * Every task has a profile when a group is on (its own, or the shared one
 * of ktau_tsk_init()), so the system call hooks need no NULL check.
 */
static __always_inline void __ktau_syscall_enter(u64 tag)
{
	struct ktau_task *kt = current->ktau;
	struct ktau_frame *f;

	f = &kt->stack[0];
	f->tag = tag;
	f->child = 0;
	f->start = ktau_clock();
	/*
	 * The frame before the depth that makes it visible to a sample
	 * taken in an NMI on this CPU (program order is enough there).
	 */
	barrier();
	WRITE_ONCE(kt->depth, 1);
	/*
	 * No handler call here: a call would make the entry path save
	 * registers whether handlers exist or not. Handlers learn of the
	 * start, with its clock, at the call's first nested routine or at
	 * its end (ktau_notify_syscall_start()).
	 */
}

/* The frame's tag is the number, as 32 bits: see KTAU_TAG_SYSCALL_COMPAT. */
static __always_inline void ktau_syscall_enter(long nr)
{
	if (ktau_group_on(KTAU_GROUP_SYSCALL))
		__ktau_syscall_enter((u32)nr);
}

/* Entry paths that do not pass the number (x86's 32-bit system calls). */
static __always_inline void ktau_syscall_enter_compat(void)
{
	if (ktau_group_on(KTAU_GROUP_SYSCALL))
		__ktau_syscall_enter(KTAU_TAG_SYSCALL_COMPAT);
}

void __ktau_syscall_exit(void);

/*
 * Before the work on return to user space; interrupts off. Out of line,
 * so that the exit path keeps its registers when the group is off.
 */
static __always_inline void ktau_syscall_exit(void)
{
	if (ktau_group_on(KTAU_GROUP_SYSCALL))
		__ktau_syscall_exit();
}

/* Hard interrupts: irq_enter_rcu() / __irq_exit_rcu(), interrupts off. */
static __always_inline void ktau_irq_enter(void)
{
	if (ktau_group_on(KTAU_GROUP_IRQ))
		__ktau_irq_enter();
}

static __always_inline void ktau_irq_exit(void)
{
	if (ktau_group_on(KTAU_GROUP_IRQ))
		__ktau_irq_exit();
}

/* Name the interrupt in progress after its device IRQ. */
static __always_inline void ktau_irq_desc(struct irq_desc *desc)
{
	if (ktau_group_on(KTAU_GROUP_IRQ))
		__ktau_irq_desc(desc);
}

/*
 * Name the next interrupt after a fixed site, a system vector: called just
 * before irq_enter_rcu(), whose hook takes the name.
 */
#define ktau_irq_site(sname)						\
do {									\
	static struct ktau_site __ktau_site = {				\
		.name = sname, .group = KTAU_GROUP_IRQ,			\
	};								\
	if (ktau_group_on(KTAU_GROUP_IRQ))				\
		__this_cpu_write(ktau_irq_hint, &__ktau_site);		\
} while (0)

static __always_inline void ktau_softirq_enter(unsigned int vec)
{
	if (ktau_group_on(KTAU_GROUP_SOFTIRQ))
		__ktau_start(KTAU_GROUP_SOFTIRQ, KTAU_ID_SOFTIRQ_BASE + vec);
}

static __always_inline void ktau_softirq_exit(void)
{
	if (ktau_group_on(KTAU_GROUP_SOFTIRQ))
		__ktau_stop(KTAU_GROUP_SOFTIRQ);
}

/*
 * __schedule(), just before the switch to another task: @blocked is true
 * when the scheduler counts the switch as voluntary (nvcsw).
 */
static __always_inline void ktau_sched_out(bool blocked)
{
	if (ktau_group_on(KTAU_GROUP_SCHED))
		__ktau_sched_out(blocked);
	else if (ktau_rebase_on())
		__ktau_rebase_out();
}

/*
 * finish_task_switch(). A task's routines of the other groups may change
 * CPU too: the rebase does not wait for the sched group.
 */
static __always_inline void ktau_sched_in(void)
{
	if (ktau_group_on(KTAU_GROUP_SCHED))
		__ktau_sched_in();
	else if (ktau_rebase_on())
		__ktau_rebase_in();
}

static __always_inline void ktau_fault_enter(bool user)
{
	if (ktau_group_on(KTAU_GROUP_FAULT))
		__ktau_start(KTAU_GROUP_FAULT,
			     user ? KTAU_ID_FAULT_USER : KTAU_ID_FAULT_KERNEL);
}

static __always_inline void ktau_fault_exit(void)
{
	if (ktau_group_on(KTAU_GROUP_FAULT))
		__ktau_stop(KTAU_GROUP_FAULT);
}

void __ktau_signal_exit(void);

/* Signal delivery; @pending: a signal is pending, not just task work. */
static __always_inline void ktau_signal_enter(bool pending)
{
	if (ktau_group_on(KTAU_GROUP_SIGNAL) && pending)
		__ktau_start(KTAU_GROUP_SIGNAL, KTAU_ID_SIGNAL);
}

/* Closes the frame ktau_signal_enter() opened, if it did. */
static __always_inline void ktau_signal_exit(void)
{
	if (ktau_group_on(KTAU_GROUP_SIGNAL))
		__ktau_signal_exit();
}

extern struct static_key_false ktau_gap_key;
void __ktau_user_gap(struct ktau_task *kt);

/*
 * The end of exit_to_user_mode_prepare(), interrupts off: no routine is
 * in progress in user mode, so frames still open were left by a group
 * switched off meanwhile and are dropped (__ktau_user_gap()). Patched out
 * until a group is first switched off at run time.
 */
static __always_inline void ktau_user_return(void)
{
	struct ktau_task *kt;

	if (!static_branch_unlikely(&ktau_gap_key))
		return;
	kt = ktau_profile(current);
	if (kt && unlikely(READ_ONCE(kt->depth)))
		__ktau_user_gap(kt);
}

/*
 * Dynamic points: time a routine under an ID from ktau_register_point().
 * Points nest like the static ones; group "dynamic".
 */
static __always_inline void ktau_point_start(unsigned int id)
{
	if (ktau_group_on(KTAU_GROUP_DYNAMIC))
		__ktau_start(KTAU_GROUP_DYNAMIC, id);
}

static __always_inline void ktau_point_stop(void)
{
	if (ktau_group_on(KTAU_GROUP_DYNAMIC))
		__ktau_stop(KTAU_GROUP_DYNAMIC);
}

/* Count one occurrence of point @id, without time: an event. */
static __always_inline void ktau_point_event(unsigned int id)
{
	if (ktau_group_on(KTAU_GROUP_DYNAMIC))
		__ktau_event(KTAU_GROUP_DYNAMIC, id);
}

/*
 * KVM: a vCPU thread's time in guest mode (KTAU_ID_KVM_GUEST), and each
 * exit, from the exit to the next entry or to the end of KVM_RUN, under
 * its reason: "kvm_exit:<NAME>", named from the vendor's table (the
 * kvm_exit tracepoint's SVM_EXIT_REASONS or VMX_EXIT_REASONS, uppercased,
 * other than letters and digits made '_') when the vendor module sets up
 * (ktau_kvm_exits_register()). Named codes 0-255 and 0x400-0x4ff have an
 * ID each, kept in ids[]; others share KTAU_ID_KVM_EXIT.
 */
#define KTAU_KVM_CODES	512

struct ktau_kvm_exits {
	const struct ktau_kvm_reason *names;
	unsigned int nr_names;
	u32 ids[KTAU_KVM_CODES];
};

/* The exit names and IDs of a vendor module: var, from its reasons. */
#define DEFINE_KTAU_KVM_EXITS(var, reasons)					\
	static const struct ktau_kvm_reason var##_names[] = { reasons };	\
	static struct ktau_kvm_exits var = {				\
		.names = var##_names,					\
		.nr_names = ARRAY_SIZE(var##_names),			\
	}

void ktau_kvm_exits_register(struct ktau_kvm_exits *x);
void __ktau_kvm_entry(void);
void __ktau_kvm_exit(struct ktau_kvm_exits *x, unsigned long code);
void __ktau_kvm_run_end(void);

/* Just before entering the guest, interrupts off. */
static __always_inline void ktau_kvm_entry(void)
{
	if (ktau_group_on(KTAU_GROUP_KVM))
		__ktau_kvm_entry();
}

/* Just after the exit, interrupts still off: @code is the exit reason. */
static __always_inline void ktau_kvm_exit(struct ktau_kvm_exits *x,
					  unsigned long code)
{
	if (ktau_group_on(KTAU_GROUP_KVM))
		__ktau_kvm_exit(x, code);
}

/* KVM_RUN returns to user space: the exit in progress ends there. */
static __always_inline void ktau_kvm_run_end(void)
{
	if (ktau_group_on(KTAU_GROUP_KVM))
		__ktau_kvm_run_end();
}

#else /* !CONFIG_KTAU */

static inline void ktau_init(void) { }
static inline int ktau_tsk_init(struct task_struct *tsk)
{
	return 0;
}

static inline void ktau_post_fork(struct task_struct *tsk) { }
static inline void ktau_tsk_free(struct task_struct *tsk) { }
static inline void ktau_exit_user(struct task_struct *tsk) { }
static inline void ktau_exit(struct task_struct *tsk) { }
static inline void ktau_exec(void) { }
static inline void ktau_exec_nondumpable(void) { }
static inline void ktau_exec_leader(struct task_struct *tsk,
				    struct task_struct *leader) { }
static inline void ktau_syscall_enter(long nr) { }
static inline void ktau_syscall_exit(void) { }
static inline void ktau_irq_enter(void) { }
static inline void ktau_irq_exit(void) { }
static inline void ktau_irq_desc(struct irq_desc *desc) { }
static inline void ktau_irq_site(const char *sname) { }
static inline void ktau_softirq_enter(unsigned int vec) { }
static inline void ktau_softirq_exit(void) { }
static inline void ktau_sched_out(bool blocked) { }
static inline void ktau_sched_in(void) { }
static inline void ktau_fault_enter(bool user) { }
static inline void ktau_fault_exit(void) { }
static inline void ktau_syscall_enter_compat(void) { }
static inline void ktau_signal_enter(bool pending) { }
static inline void ktau_signal_exit(void) { }
static inline void ktau_user_return(void) { }
static inline void ktau_point_start(unsigned int id) { }
static inline void ktau_point_stop(void) { }
static inline void ktau_point_event(unsigned int id) { }

struct ktau_kvm_exits { };
/* Nothing is left of it: the compiler drops what nothing uses. */
#define DEFINE_KTAU_KVM_EXITS(var, reasons)					\
	static const struct ktau_kvm_reason var##_names[] __maybe_unused = {	\
		reasons							\
	};								\
	static struct ktau_kvm_exits var __maybe_unused
static inline void ktau_kvm_exits_register(struct ktau_kvm_exits *x) { }
static inline void ktau_kvm_entry(void) { }
static inline void ktau_kvm_exit(struct ktau_kvm_exits *x,
				 unsigned long code) { }
static inline void ktau_kvm_run_end(void) { }
static inline int ktau_register_point(const char *name, unsigned int group)
{
	return -EOPNOTSUPP;
}

static inline void ktau_unregister_point(int id) { }

struct ktau_handler;
static inline int ktau_handler_register(struct ktau_handler *h)
{
	return -EOPNOTSUPP;
}

static inline void ktau_handler_unregister(struct ktau_handler *h) { }

#endif /* CONFIG_KTAU */

#endif /* _LINUX_KTAU_H */
