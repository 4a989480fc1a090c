// SPDX-License-Identifier: GPL-2.0-only
/*
 * KTAU sampling: counter overflows buffered in the kernel.
 *
 * A thread, or a tool allowed to profile it, starts a counter for the
 * thread inside the kernel (perf_event_create_kernel_counter()). At each
 * overflow the handler below, in the thread's own context (an interrupt
 * or an NMI that interrupted it), appends {ip, time, KTAU routine in
 * progress} to the thread's buffer and counts the sample for that
 * routine, so that profiles gain a samples figure per kernel routine. The
 * thread is told by a signal every watermark samples, not at every
 * overflow, unless it asks for that with a watermark of 1 (an interpreter
 * that records its own state at each sample).
 *
 * The buffer is a single-producer ring: the handler writes at head, and
 * readers, serialised by a mutex, copy out from tail. A full ring counts
 * new samples as lost, or in overwrite mode lets the handler run over the
 * oldest, which the reader then detects and counts as lost. The handler
 * takes no lock and allocates nothing; signals go out through irq_work.
 *
 * With a user stack descriptor (KTAU_IOC_SAMPLE_START_STACK) the handler
 * also copies the interpreter's frame chain the descriptor describes,
 * from the thread's own memory (page faults disabled, as perf's user
 * callchains are read; nothing read while the mm is being switched; one
 * user access window per frame), into the words of the sample's slot: an
 * interpreter gets its stack in every sample without a signal per sample.
 *
 * Memory per sampled thread: the ring (24 bytes per sample, at most
 * KTAU_SAMPLE_MAX_CAPACITY samples), 8 KiB of per-routine counts, and
 * with a stack 8 bytes per word (at most KTAU_STACK_MAX_WORDS).
 */

#include <linux/capability.h>
#include <linux/irq_work.h>
#include <linux/kallsyms.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/perf_event.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/security.h>
#include <linux/signal.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <asm/tlb.h>
#include "internal.h"

/* Longest period: about 18 minutes of a clock, 10^12 hardware events. */
#define KTAU_SAMPLE_MAX_PERIOD	BIT_ULL(40)

struct ktau_sampler {
	refcount_t ref;
	struct rcu_head rcu;
	struct perf_event *event;
	struct task_struct *task;	/* holds a reference */
	struct irq_work signal_work;
	struct mutex read_lock;		/* readers; tail, overwritten */
	int signo;
	bool overwrite;
	u32 mask;			/* capacity - 1 */
	u32 watermark;
	/* Written by the overflow handler only. */
	u32 since_signal;
	u64 head;
	u64 taken;
	u64 lost;
	/* By the signal's irq_work, which may run on two CPUs at once. */
	atomic64_t signals;
	/* Written by readers only. */
	u64 tail;
	u64 overwritten;
	struct ktau_sample *ring;
	/* With a stack: stride words a slot, the span of a frame read. */
	struct ktau_stack_desc stack;
	u64 *words;
	u32 stride;
	u32 span_lo, span_len;
	u32 fn_samples[KTAU_MAX_IDS];
};

/*
 * The walk of ktau_sample_stack() from the innermost frame @p, for @nf
 * fields a frame, a constant in each copy (one per number of fields), so
 * that a frame is its loads and nothing else: the kernel's
 * -fno-strict-aliasing would otherwise have every store to @out load the
 * descriptor again. Page faults disabled.
 */
static __always_inline unsigned int ktau_sample_walk(const struct ktau_sampler *sp,
						     u64 p, u64 *out,
						     const unsigned int nf,
						     u32 *flags)
{
	const struct ktau_stack_desc *d = &sp->stack;
	const u32 max = d->max_depth, next_off = d->next_off;
	const u32 lo = sp->span_lo, len = sp->span_len;
	const u32 f0 = d->field_off[0], f1 = d->field_off[1];
	const u32 f2 = d->field_off[2], f3 = d->field_off[3];
	unsigned int n;
	u64 next;

	for (n = 0; p && n < max; n++, out += nf) {
		if (!user_read_access_begin((const void __user *)(p + lo), len))
			goto fault;
		/* Unrolled: nf is a constant here. */
		unsafe_get_user(out[0], (const u64 __user *)(p + f0), efault);
		if (nf > 1)
			unsafe_get_user(out[1], (const u64 __user *)(p + f1), efault);
		if (nf > 2)
			unsafe_get_user(out[2], (const u64 __user *)(p + f2), efault);
		if (nf > 3)
			unsafe_get_user(out[3], (const u64 __user *)(p + f3), efault);
		unsafe_get_user(next, (const u64 __user *)(p + next_off), efault);
		user_read_access_end();
		p = next;
	}
	if (p)
		*flags |= KTAU_SAMPLE_STACK_CUT;
	return n;
efault:
	user_read_access_end();
fault:
	*flags |= KTAU_SAMPLE_STACK_FAULT;
	return n;
}

/*
 * The frames of the chain @sp's descriptor describes, from the current
 * thread's memory, into @out (stride words); their number, and in *@flags
 * KTAU_SAMPLE_STACK_CUT or _FAULT. Any context, NMI included: with page
 * faults disabled (a page that is not present ends the chain, as in
 * perf's user callchains) and nothing read while the mm is being
 * switched. One user access window per frame: its span is checked once,
 * then each word is one load.
 */
static unsigned int ktau_sample_stack(const struct ktau_sampler *sp, u64 *out,
				      u32 *flags)
{
	const struct ktau_stack_desc *d = &sp->stack;
	unsigned int n = 0, k;
	u64 p = d->base;

	if (!nmi_uaccess_okay()) {
		*flags |= KTAU_SAMPLE_STACK_FAULT;
		return 0;
	}
	pagefault_disable();
	for (k = 0; k < d->nderef; k++) {
		const u64 __user *w = (const u64 __user *)(p + d->deref_off[k]);

		if (!user_read_access_begin(w, sizeof(*w)))
			goto fault;
		unsafe_get_user(p, w, efault);
		user_read_access_end();
	}
	/* 1 to 4 fields (ktau_stack_check()). */
	BUILD_BUG_ON(KTAU_STACK_MAX_FIELDS != 4);
	switch (d->nfields) {
	case 1:
		n = ktau_sample_walk(sp, p, out, 1, flags);
		break;
	case 2:
		n = ktau_sample_walk(sp, p, out, 2, flags);
		break;
	case 3:
		n = ktau_sample_walk(sp, p, out, 3, flags);
		break;
	default:
		n = ktau_sample_walk(sp, p, out, 4, flags);
		break;
	}
	pagefault_enable();
	return n;
efault:
	user_read_access_end();
fault:
	pagefault_enable();
	*flags |= KTAU_SAMPLE_STACK_FAULT;
	return 0;
}

/*
 * The KTAU routine the sampled thread is in. A clock event's overflow
 * runs in the hrtimer interrupt, whose own frame is then on top: look
 * under it. A hardware event's NMI pushes no frame.
 */
static u32 ktau_sample_id(struct ktau_task *kt, struct pt_regs *regs)
{
	unsigned int d;
	u64 tag;

	if (user_mode(regs))
		return KTAU_ID_USER;
	if (!kt)
		return KTAU_ID_KERNEL;
	d = READ_ONCE(kt->depth);
	if (d && !in_nmi() && in_hardirq() && d <= KTAU_STACK_DEPTH &&
	    KTAU_TAG_GROUP(READ_ONCE(kt->stack[d - 1].tag)) == KTAU_GROUP_IRQ)
		d--;
	if (!d)
		return KTAU_ID_KERNEL;
	if (d > KTAU_STACK_DEPTH)
		return KTAU_ID_OTHER;
	tag = READ_ONCE(kt->stack[d - 1].tag);
	return ktau_frame_id(tag, KTAU_TAG_GROUP(tag));
}

static void ktau_sample_overflow(struct perf_event *event,
				 struct perf_sample_data *data,
				 struct pt_regs *regs)
{
	struct ktau_sampler *sp = event->overflow_handler_context;
	u32 id = ktau_sample_id(current->ktau, regs);
	struct ktau_sample *s;
	u64 h = sp->head;

	/* The only writer; readers on other CPUs READ_ONCE() these. */
	WRITE_ONCE(sp->taken, sp->taken + 1);
	if (id < KTAU_MAX_IDS && sp->fn_samples[id] != U32_MAX)
		WRITE_ONCE(sp->fn_samples[id], sp->fn_samples[id] + 1);
	/* Acquire: a reader's copy of a slot is done before it is reused. */
	if (h - smp_load_acquire(&sp->tail) > sp->mask && !sp->overwrite) {
		WRITE_ONCE(sp->lost, sp->lost + 1);
	} else {
		u32 flags = user_mode(regs) ? KTAU_SAMPLE_USER : 0;
		unsigned int nframes;

		/*
		 * Overwrite mode rewrites a slot a reader may be copying, so
		 * the last head goes before the slot.
		 */
		if (sp->overwrite)
			smp_wmb();	/* head, then the slot: see the reader's smp_rmb() */
		s = &sp->ring[h & sp->mask];
		s->ip = instruction_pointer(regs);
		s->time_ns = ktime_get_mono_fast_ns();
		s->id = id;
		if (sp->stride) {
			nframes = ktau_sample_stack(sp, &sp->words[(h & sp->mask) * sp->stride],
						    &flags);
			flags |= nframes << 16;
		}
		s->flags = flags;
		/* The sample before head moves on, pairs with the reader. */
		smp_store_release(&sp->head, h + 1);
	}
	if (sp->watermark && ++sp->since_signal >= sp->watermark) {
		sp->since_signal = 0;
		irq_work_queue(&sp->signal_work);
	}
}

/*
 * The signal, from the irq_work the handler queued (never from the
 * handler itself, which may run in NMI context). Counted only when it
 * is queued: a second overflow before the irq_work ran queues no second
 * irq_work, and a classic signal that is still pending is merged with
 * it by the kernel. The pending check is made without the thread's
 * signal lock, so a signal that the thread takes just then is sent but
 * not counted; a signal is never held back.
 */
static void ktau_sample_signal(struct irq_work *work)
{
	struct ktau_sampler *sp = container_of(work, struct ktau_sampler,
					       signal_work);
	struct task_struct *t = sp->task;
	bool pending;

	/* Racy on purpose, without the signal lock: see above. */
	pending = data_race(sigismember(&t->pending.signal, sp->signo));
	pending &= sp->signo < SIGRTMIN;
	if (!send_sig(sp->signo, t, 1) && !pending)
		atomic64_inc(&sp->signals);
}

static void ktau_sampler_free_rcu(struct rcu_head *rcu)
{
	struct ktau_sampler *sp = container_of(rcu, struct ktau_sampler, rcu);

	kvfree(sp->words);
	kvfree(sp->ring);
	kvfree(sp);
}

static void ktau_sampler_put(struct ktau_sampler *sp)
{
	if (!refcount_dec_and_test(&sp->ref))
		return;
	put_task_struct(sp->task);
	/* Snapshots read fn_samples under RCU. */
	call_rcu(&sp->rcu, ktau_sampler_free_rcu);
}

/* Stop the counter and any signal on its way; the buffer stays. */
static void ktau_sampler_halt(struct ktau_sampler *sp)
{
	perf_event_release_kernel(sp->event);
	irq_work_sync(&sp->signal_work);
}

/* Halt, and drop the attachment's reference (readers may hold more). */
static void ktau_sampler_stop(struct ktau_sampler *sp)
{
	ktau_sampler_halt(sp);
	ktau_sampler_put(sp);
}

/* Detach @t's sampler, if it has one; the caller stops it. */
static struct ktau_sampler *ktau_sampler_detach(struct task_struct *t)
{
	struct ktau_task *kt = ktau_profile(t);
	struct ktau_sampler *sp;

	if (!kt)
		return NULL;
	task_lock(t);
	sp = rcu_dereference_protected(kt->sample, lockdep_is_held(&t->alloc_lock));
	RCU_INIT_POINTER(kt->sample, NULL);
	task_unlock(t);
	return sp;
}

/* Detach @sp if it is still @t's sampler; the caller stops it. */
static bool ktau_sampler_detach_this(struct task_struct *t, struct ktau_sampler *sp)
{
	struct ktau_task *kt = ktau_profile(t);
	bool ok = false;

	task_lock(t);
	if (rcu_access_pointer(kt->sample) == sp) {
		RCU_INIT_POINTER(kt->sample, NULL);
		ok = true;
	}
	task_unlock(t);
	return ok;
}

/* Exit and exec: sampling of the thread ends. */
void ktau_sample_release(struct task_struct *t)
{
	struct ktau_sampler *sp = ktau_sampler_detach(t);

	if (sp)
		ktau_sampler_stop(sp);
}

/* @t's sampler with a reference, or NULL. */
static struct ktau_sampler *ktau_sampler_get(struct task_struct *t)
{
	struct ktau_task *kt = ktau_profile(t);
	struct ktau_sampler *sp;

	if (!kt)
		return NULL;
	rcu_read_lock();
	sp = rcu_dereference(kt->sample);
	if (sp && !refcount_inc_not_zero(&sp->ref))
		sp = NULL;
	rcu_read_unlock();
	return sp;
}

/* Samples of @id in @kt's thread, for profiles; caller in an RCU section. */
u32 ktau_sample_count(struct ktau_task *kt, u32 id)
{
	struct ktau_sampler *sp = rcu_dereference(kt->sample);

	return sp && id < KTAU_MAX_IDS ? READ_ONCE(sp->fn_samples[id]) : 0;
}

/*
 * Add entries for routines that have samples but no calls yet (a first
 * system call still in progress, user mode): @out has room for @max,
 * @n are used. Caller in an RCU section.
 */
unsigned int ktau_sample_entries(struct ktau_task *kt, struct ktau_entry *out,
				 unsigned int n, unsigned int max)
{
	struct ktau_sampler *sp = rcu_dereference(kt->sample);
	unsigned int id, i;

	if (!sp)
		return n;
	for (id = 1; id < KTAU_MAX_IDS && n < max; id++) {
		u32 c = READ_ONCE(sp->fn_samples[id]);

		if (!c)
			continue;
		for (i = 0; i < n && out[i].id != id; i++)
			;
		if (i < n)
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		out[n].id = id;
		out[n].samples = c;
		n++;
	}
	return n;
}

/*
 * perf_event_open()'s rules for a counter on @t with @attr, and for a
 * signal to @t (@signo not 0) perf's rule for sigtrap events: CAP_KILL in
 * @t's user namespace along with CAP_PERFMON, or ptrace attach access,
 * since a signal can change what the task does.
 *
 * Distributions that add a paranoid level above 2 (perf_event_open() only
 * with CAP_SYS_ADMIN there) are honoured through the sysctl itself, which
 * mainline has too.
 */
static int ktau_sample_allowed(struct task_struct *t, struct perf_event_attr *attr,
			       int signo)
{
	unsigned int mode = PTRACE_MODE_READ_REALCREDS;
	bool capable_ok = perfmon_capable();
	int ret;

	if (READ_ONCE(sysctl_perf_event_paranoid) > 2 && !capable(CAP_SYS_ADMIN))
		return -EACCES;
	ret = security_perf_event_open(PERF_SECURITY_OPEN);
	if (ret)
		return ret;
	if (!attr->exclude_kernel) {
		ret = perf_allow_kernel();
		if (ret)
			return ret;
	}
	if (same_thread_group(t, current))
		return 0;
	if (signo) {
		rcu_read_lock();
		capable_ok &= ns_capable(__task_cred(t)->user_ns, CAP_KILL);
		rcu_read_unlock();
		mode = PTRACE_MODE_ATTACH_REALCREDS;
	}
	if (!capable_ok && !ptrace_may_access(t, mode))
		return signo ? -EPERM : -EACCES;
	return 0;
}

/*
 * The signals a sampler may send: those a profiler uses, whose default
 * action a profiled program expects to have set up (SIGPROF, SIGTRAP,
 * SIGIO, SIGUSR1, SIGUSR2 and the real-time signals). Job control,
 * termination and fault signals are refused.
 */
static bool ktau_sample_signo_ok(int signo)
{
	switch (signo) {
	case SIGPROF:
	case SIGTRAP:
	case SIGIO:
	case SIGUSR1:
	case SIGUSR2:
		return true;
	}
	return signo >= SIGRTMIN && signo <= SIGRTMAX;
}

/*
 * A frequency above kernel.perf_event_max_sample_rate (which perf lowers
 * when its interrupts take too long) is refused, as perf_event_open()
 * does; a period is throttled by perf, not refused.
 */
static bool ktau_sample_freq_ok(const struct ktau_sample_attr *a)
{
	return !(a->flags & KTAU_SAMPLE_FREQ) ||
	       a->period <= (u64)READ_ONCE(sysctl_perf_event_sample_rate);
}

static int ktau_sample_attr(const struct ktau_sample_attr *a,
			    struct perf_event_attr *attr)
{
	static const struct {
		u32 type;
		u64 config;
	} events[KTAU_NR_SAMPLE_EVENTS] = {
		[KTAU_SAMPLE_CPU_CLOCK] = { PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
		[KTAU_SAMPLE_TASK_CLOCK] = { PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
		[KTAU_SAMPLE_CYCLES] = { PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
		[KTAU_SAMPLE_INSTRUCTIONS] = { PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	};
	bool clock = a->event == KTAU_SAMPLE_CPU_CLOCK ||
		     a->event == KTAU_SAMPLE_TASK_CLOCK;

	if ((a->flags & ~KTAU_SAMPLE_FLAGS) || a->reserved ||
	    a->event >= KTAU_NR_SAMPLE_EVENTS)
		return -EINVAL;
	if ((a->flags & KTAU_SAMPLE_NO_USER) && (a->flags & KTAU_SAMPLE_NO_KERNEL))
		return -EINVAL;
	if (!a->period || a->period > KTAU_SAMPLE_MAX_PERIOD)
		return -EINVAL;
	if (a->flags & KTAU_SAMPLE_FREQ) {
		if (a->period > KTAU_SAMPLE_MAX_FREQ)
			return -EINVAL;
	} else if (clock && a->period < KTAU_SAMPLE_MIN_CLOCK_NS) {
		return -EINVAL;
	}
	if (!a->capacity || a->capacity > KTAU_SAMPLE_MAX_CAPACITY ||
	    !is_power_of_2(a->capacity) || a->watermark > a->capacity)
		return -EINVAL;
	/* A signal needs a watermark and the reverse. */
	if (!a->signo != !a->watermark)
		return -EINVAL;
	if (a->signo && !ktau_sample_signo_ok(a->signo))
		return -EINVAL;
	if (!ktau_sample_freq_ok(a))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = events[a->event].type;
	attr->config = events[a->event].config;
	attr->freq = !!(a->flags & KTAU_SAMPLE_FREQ);
	if (attr->freq)
		attr->sample_freq = a->period;
	else
		attr->sample_period = a->period;
	attr->exclude_user = !!(a->flags & KTAU_SAMPLE_NO_USER);
	attr->exclude_kernel = !!(a->flags & KTAU_SAMPLE_NO_KERNEL);
	attr->exclude_hv = 1;
	return 0;
}

/*
 * A stack descriptor for a buffer of @capacity samples: valid, and then
 * the span of a frame that is read (@lo, @len) and the words per sample.
 */
static int ktau_stack_check(const struct ktau_stack_desc *d, u32 capacity,
			    u32 *lo, u32 *len, u32 *stride)
{
	u32 min = d->next_off, max = d->next_off, k;

	/* No hidden padding: one size, so one ioctl number, on every ABI. */
	BUILD_BUG_ON(sizeof(*d) != offsetofend(struct ktau_stack_desc, reserved));
	if (!d->nderef || d->nderef > KTAU_STACK_MAX_DEREF ||
	    !d->nfields || d->nfields > KTAU_STACK_MAX_FIELDS ||
	    !d->max_depth || d->max_depth > KTAU_STACK_MAX_DEPTH ||
	    d->reserved[0] || d->reserved[1] ||
	    (u64)capacity * d->max_depth * d->nfields > KTAU_STACK_MAX_WORDS)
		return -EINVAL;
	for (k = 0; k < d->nfields; k++) {
		min = min_t(u32, min, d->field_off[k]);
		max = max_t(u32, max, d->field_off[k]);
	}
	/* Unused offsets are zero, so that the layout can grow. */
	for (k = d->nfields; k < KTAU_STACK_MAX_FIELDS; k++)
		if (d->field_off[k])
			return -EINVAL;
	for (k = d->nderef; k < KTAU_STACK_MAX_DEREF; k++)
		if (d->deref_off[k])
			return -EINVAL;
	if (max - min > KTAU_STACK_MAX_SPAN - sizeof(u64))
		return -EINVAL;
	*lo = min;
	*len = max - min + sizeof(u64);
	*stride = d->max_depth * d->nfields;
	return 0;
}

/* KTAU_IOC_SAMPLE_START and KTAU_IOC_SAMPLE_START_STACK */
long ktau_sample_start(const void __user *uattr, bool stack)
{
	struct ktau_sample_stack_attr sa = {};
	struct ktau_sample_attr a;
	struct perf_event_attr attr;
	struct ktau_sampler *sp;
	struct perf_event *event;
	struct task_struct *t;
	struct ktau_task *kt;
	u32 lo = 0, len = 0, stride = 0;
	int ret;

	if (copy_from_user(&sa, uattr, stack ? sizeof(sa) : sizeof(a)))
		return -EFAULT;
	a = sa.attr;
	if (a.size != sizeof(a))
		return -EINVAL;
	ret = ktau_sample_attr(&a, &attr);
	if (ret)
		return ret;
	if (stack) {
		if (a.flags & KTAU_SAMPLE_OVERWRITE)
			return -EINVAL;
		ret = ktau_stack_check(&sa.stack, a.capacity, &lo, &len, &stride);
		if (ret)
			return ret;
	}

	t = a.tid ? find_get_task_by_vpid(a.tid) : get_task_struct(current);
	if (!t)
		return -ESRCH;
	kt = ktau_profile(t);
	ret = -EINVAL;
	if (!kt || (t->flags & PF_KTHREAD))
		goto out_task;
	/* Hold off exec, which changes the credentials the check uses. */
	ret = down_read_interruptible(&t->signal->exec_update_lock);
	if (ret)
		goto out_task;
	ret = ktau_sample_allowed(t, &attr, a.signo);
	if (ret)
		goto out_unlock;
	/*
	 * A descriptor makes the kernel read words anywhere in the thread's
	 * memory for the reader: another process's thread needs what
	 * process_vm_readv() needs, whatever the capabilities.
	 */
	ret = -EPERM;
	if (stack && !same_thread_group(t, current) &&
	    !ptrace_may_access(t, PTRACE_MODE_ATTACH_REALCREDS))
		goto out_unlock;
	/*
	 * Only now, so that whether a thread is being sampled is told only
	 * to those who may sample it; checked again under task_lock below.
	 */
	ret = -EBUSY;
	if (rcu_access_pointer(kt->sample))
		goto out_unlock;

	ret = -ENOMEM;
	sp = kvzalloc(sizeof(*sp), GFP_KERNEL_ACCOUNT);
	if (!sp)
		goto out_unlock;
	sp->ring = kvcalloc(a.capacity, sizeof(*sp->ring), GFP_KERNEL_ACCOUNT);
	if (!sp->ring)
		goto out_free;
	if (stack) {
		/*
		 * Not cleared: a reader gets only the words of whole frames
		 * the handler wrote (ktau_sample_drain_words()), and clearing
		 * up to KTAU_STACK_MAX_WORDS at each start cost more than the
		 * samples of a short run.
		 */
		sp->words = kvmalloc_array((size_t)a.capacity * stride, sizeof(u64),
					   GFP_KERNEL_ACCOUNT);
		if (!sp->words)
			goto out_free;
		sp->stack = sa.stack;
		sp->stride = stride;
		sp->span_lo = lo;
		sp->span_len = len;
	}
	refcount_set(&sp->ref, 1);
	init_irq_work(&sp->signal_work, ktau_sample_signal);
	mutex_init(&sp->read_lock);
	sp->task = get_task_struct(t);
	sp->signo = a.signo;
	sp->watermark = a.watermark;
	sp->overwrite = !!(a.flags & KTAU_SAMPLE_OVERWRITE);
	sp->mask = a.capacity - 1;

	event = perf_event_create_kernel_counter(&attr, -1, t,
						 ktau_sample_overflow, sp);
	if (IS_ERR(event)) {
		ret = PTR_ERR(event);
		put_task_struct(t);
		goto out_free;
	}
	sp->event = event;

	ret = 0;
	task_lock(t);
	if (t->flags & PF_EXITING)
		ret = -ESRCH;
	else if (rcu_access_pointer(kt->sample))
		ret = -EBUSY;
	else
		rcu_assign_pointer(kt->sample, sp);
	task_unlock(t);
	up_read(&t->signal->exec_update_lock);
	if (ret)
		ktau_sampler_stop(sp);
	put_task_struct(t);
	return ret;

out_free:
	kvfree(sp->words);
	kvfree(sp->ring);
	kvfree(sp);
out_unlock:
	up_read(&t->signal->exec_update_lock);
out_task:
	put_task_struct(t);
	return ret;
}

/*
 * The frames of samples [@t, @t + *@n) of @sp (a sampler with a stack)
 * into @uwords, as many whole samples as @max_words holds: *@n becomes
 * that number, *@nwords the words written; 0 or -errno.
 */
static int ktau_sample_drain_words(struct ktau_sampler *sp, const struct ktau_sample *buf,
				   u64 t, u32 *n, u64 __user *uwords, u32 max_words,
				   u32 *nwords)
{
	u32 i, used = 0, w;

	for (i = 0; i < *n; i++) {
		w = KTAU_SAMPLE_NFRAMES(buf[i].flags) * sp->stack.nfields;
		if (w > max_words - used)
			break;
		used += w;
	}
	*n = i;
	*nwords = used;
	/* Without overwrite the handler never rewrites the slots of [tail, head). */
	for (i = 0, used = 0; i < *n; i++) {
		w = KTAU_SAMPLE_NFRAMES(buf[i].flags) * sp->stack.nfields;
		if (copy_to_user(uwords + used, &sp->words[((t + i) & sp->mask) * sp->stride],
				 w * sizeof(u64)))
			return -EFAULT;
		used += w;
	}
	return 0;
}

/*
 * Copy up to @max samples out of @sp into @ubuf (with a stack, and
 * @uwords, their frames: see ktau_sample_drain_words()); the number
 * copied, or -errno. Kernel addresses become 0 for readers who may not
 * see them, and interrupt sources "irq" or "softirq" for those who may
 * not see these (@coarse: ktau_file_detail_hidden()). @bounce, if not
 * NULL, has room for min(@max, capacity) samples and is used instead of
 * an allocation (the caller frees it).
 */
static long ktau_sample_drain(struct ktau_sampler *sp, struct ktau_sample __user *ubuf,
			      u32 max, bool show_kaddr, bool coarse, u64 __user *uwords,
			      u32 max_words, u32 *nwords, struct ktau_sample *bounce)
{
	struct ktau_sample *buf;
	u64 h, t, h2, bad, keep;
	s64 off;
	u32 n, i;
	int ret;

	t = sp->tail;
	/* Acquire: the samples below head are written, pairs with the handler. */
	h = smp_load_acquire(&sp->head);
	/*
	 * In overwrite mode the handler may be writing the slot of sample
	 * head - capacity at any moment, so only the last capacity - 1
	 * samples can be read whole; otherwise it never writes a slot that
	 * was not read.
	 */
	keep = sp->overwrite ? sp->mask : sp->mask + 1;
	if (h - t > keep) {
		/* Overwrite mode ran over the oldest. */
		sp->overwritten += h - t - keep;
		t = h - keep;
	}
	n = min_t(u64, h - t, max);
	if (!n) {
		sp->tail = t;
		return 0;
	}
	buf = bounce ?: kvmalloc_array(n, sizeof(*buf), GFP_KERNEL_ACCOUNT);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		/* Overwrite mode: the handler may be rewriting it, see below. */
		buf[i] = data_race(sp->ring[(t + i) & sp->mask]);
	/* In overwrite mode the handler may have run over what we copied. */
	smp_rmb();	/* the copies before head, pairs with the handler */
	h2 = READ_ONCE(sp->head);
	bad = 0;
	if (h2 - t > keep)
		bad = min_t(u64, h2 - t - keep, n);
	off = ktau_timens_offset();
	for (i = bad; i < n; i++) {
		buf[i].id = buf[i].id < KTAU_MAX_IDS ? buf[i].id : KTAU_ID_OTHER;
		if (coarse) {
			buf[i].id = ktau_coarse_id(buf[i].id);
			/*
			 * An interrupt's handler address would name its source
			 * (also under KTAU_ID_IRQ, when the source found no ID).
			 */
			if ((buf[i].id == KTAU_ID_IRQ || buf[i].id == KTAU_ID_SOFTIRQ) &&
			    !(buf[i].flags & KTAU_SAMPLE_USER))
				buf[i].ip = 0;
		}
		buf[i].time_ns = ktau_timens(buf[i].time_ns, off);
		if (!(buf[i].flags & KTAU_SAMPLE_USER) && !show_kaddr)
			buf[i].ip = 0;
		/* A reader without the frames gets the flags of ABI 1.1. */
		if (!uwords)
			buf[i].flags &= KTAU_SAMPLE_USER;
	}
	/* A stack comes without overwrite: bad is 0. */
	if (uwords && sp->stride) {
		ret = ktau_sample_drain_words(sp, buf, t, &n, uwords, max_words, nwords);
		if (ret)
			goto out;
	}
	ret = -EFAULT;
	if (copy_to_user(ubuf, buf + bad, (n - bad) * sizeof(*buf)))
		goto out;
	sp->overwritten += bad;
	/* Slots free only after they were copied, pairs with the handler. */
	smp_store_release(&sp->tail, t + n);
	ret = n - bad;
out:
	if (buf != bounce)
		kvfree(buf);
	return ret;
}

/* @len bytes at @p can be written: faulted in, their contents untouched. */
static int ktau_user_writable(void __user *p, size_t len)
{
	if (!access_ok(p, len) || fault_in_safe_writeable(p, len) ||
	    probe_subpage_writeable(p, len))
		return -EFAULT;
	return 0;
}

/*
 * A stop cannot be undone, so everything that could fail after it is
 * done before it: the request (@ureq, @size bytes), the samples' buffer
 * and the frames' are made writable for as much as the stop can copy,
 * and the bounce buffer for the samples is allocated (*@bounce, for
 * ktau_sample_drain()). A failure fails the stop with nothing changed.
 */
static int ktau_sample_stop_prepare(const struct ktau_sampler *sp,
				    const struct ktau_sample_stack_read *sr, bool stack,
				    void __user *ureq, size_t size,
				    struct ktau_sample **bounce)
{
	u64 n = min_t(u64, sr->r.max, sp->mask + 1);

	*bounce = NULL;
	if (ktau_user_writable(ureq, size))
		return -EFAULT;
	if (!n)
		return 0;
	if (ktau_user_writable(u64_to_user_ptr(sr->r.buf), n * sizeof(struct ktau_sample)))
		return -EFAULT;
	if (stack && sp->stride &&
	    ktau_user_writable(u64_to_user_ptr(sr->words),
			       min_t(u64, sr->max_words, n * sp->stride) * sizeof(u64)))
		return -EFAULT;
	*bounce = kvmalloc_array(n, sizeof(**bounce), GFP_KERNEL_ACCOUNT);
	return *bounce ? 0 : -ENOMEM;
}

/* KTAU_IOC_SAMPLE_READ, _STOP, and their _STACK forms */
long ktau_sample_read(struct file *file, void __user *ureq, bool stop, bool stack)
{
	struct ktau_sample_stack_read sr = {};
	struct ktau_sample *bounce = NULL;
	struct ktau_sample_read r;
	struct ktau_sampler *sp;
	struct task_struct *t;
	long n = 0;
	int ret;

	if (copy_from_user(&sr, ureq, stack ? sizeof(sr) : sizeof(r)))
		return -EFAULT;
	r = sr.r;
	if (r.size != sizeof(r))
		return -EINVAL;
	if (stack && sr.max_words && !sr.words)
		return -EINVAL;
	sr.nwords = 0;
	if (r.max > KTAU_SAMPLE_MAX_CAPACITY || (r.max && !r.buf))
		return -EINVAL;
	t = r.tid ? find_get_task_by_vpid(r.tid) : get_task_struct(current);
	if (!t)
		return -ESRCH;
	ret = -EACCES;
	/*
	 * Asked at every read (a collector reads each thread's sampler over
	 * and over), so that an allowed read logs no denial: the audited
	 * capability only for a caller that holds its bit (capable() would
	 * fail for one that does not), else ptrace's check, which audits
	 * (commoncap's CAP_SYS_PTRACE question) whatever the mode says.
	 */
	if (t != current && !(ktau_perfmon_bits() && perfmon_capable()) &&
	    !ptrace_may_access(t, PTRACE_MODE_READ_REALCREDS))
		goto out_task;
	ret = -ENOENT;
	sp = ktau_sampler_get(t);
	if (!sp)
		goto out_task;
	/*
	 * The frames are read as they were started (ktau_sample_start()),
	 * and so is any read that takes samples out or stops, with the frames
	 * or without (which drops them): only the counts (max 0, with or
	 * without _STACK) are sampling's.
	 */
	ret = -EPERM;
	if (sp->stride && (r.max || stop) && !same_thread_group(t, current) &&
	    !ptrace_may_access(t, PTRACE_MODE_ATTACH_REALCREDS))
		goto out_put;
	/* Room for the frames of one sample at least, before a stop. */
	ret = -EINVAL;
	if (stack && r.max && sp->stride && sr.max_words < sp->stride)
		goto out_put;
	if (stop) {
		ret = ktau_sample_stop_prepare(sp, &sr, stack, ureq,
					       stack ? sizeof(sr) : sizeof(r), &bounce);
		if (ret)
			goto out_put;
		/* Ours to stop unless another stop or exit came first. */
		ret = -ENOENT;
		if (!ktau_sampler_detach_this(t, sp))
			goto out_put;
		/* The counter stops; the last samples are read below. */
		ktau_sampler_stop(sp);
	}

	/*
	 * Killable: a reader whose buffer is held by userfaultfd holds the
	 * lock across its copy, and one waiting behind it can still be
	 * killed. A stop's counter is stopped already: its last samples go
	 * with the sampler.
	 */
	ret = mutex_lock_killable(&sp->read_lock);
	if (ret)
		goto out_put;
	if (r.max)
		n = ktau_sample_drain(sp, u64_to_user_ptr(r.buf), r.max,
				      kallsyms_show_value(file->f_cred),
				      ktau_file_detail_hidden(file),
				      stack ? u64_to_user_ptr(sr.words) : NULL,
				      sr.max_words, &sr.nwords, bounce);
	r.nread = n > 0 ? n : 0;
	r.taken = READ_ONCE(sp->taken);
	r.lost = READ_ONCE(sp->lost) + sp->overwritten;
	r.signals = atomic64_read(&sp->signals);
	/* Acquire, as in ktau_sample_drain(). */
	r.buffered = min_t(u64, smp_load_acquire(&sp->head) - sp->tail,
			   sp->overwrite ? sp->mask : sp->mask + 1);
	mutex_unlock(&sp->read_lock);

	ret = n < 0 ? n : 0;
	sr.r = r;
	if (!ret && copy_to_user(ureq, &sr, stack ? sizeof(sr) : sizeof(r)))
		ret = -EFAULT;
out_put:
	kvfree(bounce);
	ktau_sampler_put(sp);
out_task:
	put_task_struct(t);
	return ret;
}
