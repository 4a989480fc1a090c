// SPDX-License-Identifier: GPL-2.0-only
/*
 * KTAU core: per-task profiles, the timer stack, groups and the clock.
 *
 * Each task owns a struct ktau_task: a stack of routines in progress and a
 * table of totals per function ID. Only the task writes it, on the CPU it
 * runs on, with interrupts off (an interrupt that arrives meanwhile is
 * charged to the same task, so the writers nest but never overlap).
 * Readers on other CPUs copy a slot's count, excl and incl in that order
 * while the writer stores them in the reverse order, which gives every
 * entry of a snapshot excl <= incl and times at least as new as the count,
 * without stopping the task.
 *
 * When a task exits, its totals are folded into a system-wide aggregate,
 * and handed to an exit collector when the task joined one.
 */

#include <linux/init.h>
#include <linux/slab.h>
#include <linux/hardirq.h>
#include <linux/irqflags.h>
#include <linux/refcount.h>
#include <linux/task_work.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/sched/stat.h>
#include <linux/cpu.h>
#include <linux/clocksource.h>
#include <linux/string.h>
#include <linux/ctype.h>
#include <linux/vmalloc.h>
#include <linux/math64.h>
#include <linux/timekeeping.h>
#include <linux/delay.h>
#include <linux/irq.h>
#include <linux/interrupt.h>
#include <linux/moduleparam.h>
#include <linux/perf_event.h>
#include <linux/security.h>
#include <linux/nsproxy.h>
#include <linux/time_namespace.h>
#include "internal.h"

#ifdef CONFIG_X86_TSC
#include <asm/tsc.h>
#endif

#undef MODULE_PARAM_PREFIX
#define MODULE_PARAM_PREFIX "ktau."

DEFINE_STATIC_KEY_ARRAY_TRUE(ktau_keys, KTAU_NR_GROUPS);
#ifdef CONFIG_X86_TSC
DEFINE_STATIC_KEY_FALSE(ktau_rebase_key);
#endif
/* On once a group was switched off at run time: see ktau_user_return(). */
DEFINE_STATIC_KEY_FALSE(ktau_gap_key);
DEFINE_STATIC_KEY_DEFERRED_FALSE(ktau_extra_key, HZ);
/* Modules time their own points behind the dynamic group's key. */
EXPORT_SYMBOL_GPL(ktau_keys);

#define KTAU_ALL_GROUPS		(BIT(KTAU_NR_GROUPS) - 1)

unsigned long ktau_groups_on = KTAU_ALL_GROUPS;
unsigned int ktau_nr_slots = 64;
static struct kmem_cache *ktau_cachep;
/* Tasks created without a profile of their own (ktau_sink). */
static atomic_long_t ktau_unprofiled = ATOMIC_LONG_INIT(0);

/*
 * The profile of every task whose own could not be allocated at fork:
 * the hooks write it without a NULL check, from any number of tasks at
 * once, so its contents mean nothing; every index they use is bounded by
 * the table's size and the stack's depth whatever they read, so the
 * writes stay inside it. Nothing reads it: ktau_profile() is NULL for it.
 */
struct ktau_task *ktau_sink;
EXPORT_SYMBOL_GPL(ktau_sink);	/* for ktau_profile() */
/* Deltas of the clock that came out negative, clamped to 0. */
static atomic_long_t ktau_backwards = ATOMIC_LONG_INIT(0);
bool ktau_ready;		/* every task from now on has a profile */
static DEFINE_MUTEX(ktau_groups_lock);

/*
 * Totals of exited tasks, in clock units, one table per CPU: an exit adds
 * to its CPU's table with interrupts off, under that table's sequence
 * count, so that exits on different CPUs share nothing. 48 KiB per
 * possible CPU, allocated at boot.
 */
struct ktau_exited {
	seqcount_t seq;
	u64 overflows[3];
	struct ktau_sum sum[KTAU_MAX_IDS];
};

static struct ktau_exited **ktau_exited;

/*
 * Totals of a process's exited threads, hung off its leader's profile
 * when a thread exits while others live on (as /proc/PID/io keeps them in
 * signal_struct), so that /proc/PID/ktau never goes down. An open
 * addressed table of twice the task's slots; 4 KiB by default.
 */
struct ktau_proc_slot {
	u32 id;
	u32 reserved;
	struct ktau_sum sum;
};

struct ktau_proc {
	refcount_t ref;		/* the leader's, and an old leader's (exec) */
	spinlock_t lock;	/* protects everything below */
	unsigned int gen;	/* threads folded so far */
	unsigned int mask;
	u64 overflows[3];
	struct ktau_proc_slot slots[];
};

/* Exits whose thread could not be folded into its process's totals. */
static atomic_long_t ktau_proc_nomem = ATOMIC_LONG_INIT(0);

/*
 * Boot parameters, parsed with the other kernel parameters before
 * ktau_init(); not in sysfs: groups change at run time through
 * /proc/ktau/control. A bad value is reported and leaves the default.
 */

/* ktau=all|none|group[,group...] */
static int ktau_groups_param_set(const char *val, const struct kernel_param *kp)
{
	unsigned long mask = 0, *on = kp->arg;
	char buf[64], *str = buf, *tok;
	int g;

	if (!val || strscpy(buf, val, sizeof(buf)) < 0) {
		pr_warn("ktau: ktau=%s is not all, none or a list of groups, ignored\n",
			val ?: "");
		return 0;
	}
	if (!strcmp(buf, "all")) {
		*on = KTAU_ALL_GROUPS;
		return 0;
	}
	if (!strcmp(buf, "none")) {
		*on = 0;
		return 0;
	}
	while ((tok = strsep(&str, ",")) != NULL) {
		g = ktau_group_by_name(tok, strlen(tok));
		if (g < 0) {
			pr_warn("ktau: unknown group '%s' in ktau=, ignored\n", tok);
			continue;
		}
		mask |= BIT(g);
	}
	*on = mask;
	return 0;
}

static const struct kernel_param_ops param_ops_ktau_groups = {
	.set = ktau_groups_param_set,
};

#define param_check_ktau_groups(name, p) __param_check(name, p, unsigned long)
core_param(ktau, ktau_groups_on, ktau_groups, 0);

/*
 * ktau.slots=N: slots per task table, a power of two in 16..128 (128, so
 * that a slot's index + 1 fits in ktau_task.sysslot[]).
 */
static int ktau_slots_param_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n, *slots = kp->arg;

	if (!val || kstrtouint(val, 0, &n) || n < 16 || n > 128 ||
	    !is_power_of_2(n)) {
		pr_warn("ktau: ktau.slots=%s is not a power of two in 16..128, using %u\n",
			val ?: "", *slots);
		return 0;
	}
	*slots = n;
	return 0;
}

static const struct kernel_param_ops ktau_slots_ops = {
	.set = ktau_slots_param_set,
};

module_param_cb(slots, &ktau_slots_ops, &ktau_nr_slots, 0);

#ifdef CONFIG_X86_TSC
/*
 * The TSC rate in kHz when the kernel could not calibrate it (tsc_khz is
 * 0, as in some virtual machines): measured once against CLOCK_MONOTONIC
 * at boot and then fixed, so that a profile read twice converts the same.
 */
static u32 ktau_tsc_khz;

static int __init ktau_clock_calibrate(void)
{
	unsigned long flags;
	u64 t0, n0, t1, dn;

	if (tsc_khz || !boot_cpu_has(X86_FEATURE_TSC))
		return 0;
	/*
	 * Each pair back to back: an interrupt or a preemption between
	 * them would skew the rate of the whole boot by its share of 200 ms.
	 */
	local_irq_save(flags);
	n0 = ktime_get_ns();
	t0 = rdtsc();
	local_irq_restore(flags);
	msleep(200);
	local_irq_save(flags);
	dn = ktime_get_ns() - n0;
	t1 = rdtsc();
	local_irq_restore(flags);
	if (dn)
		ktau_tsc_khz = mul_u64_u64_div_u64(t1 - t0, NSEC_PER_MSEC, dn);
	pr_info("ktau: TSC not calibrated by the kernel, measured %u kHz\n",
		ktau_tsc_khz);
	return 0;
}
late_initcall(ktau_clock_calibrate);
#endif

/* The factor from clock units to ns, the same for every read. */
void ktau_conv_get(struct ktau_conv *cv)
{
#ifdef CONFIG_X86_TSC
	u32 khz = READ_ONCE(tsc_khz) ?: READ_ONCE(ktau_tsc_khz);

	if (khz) {
		clocks_calc_mult_shift(&cv->mult, &cv->shift, khz,
				       NSEC_PER_MSEC, 1000);
		return;
	}
#endif
	cv->mult = 1;
	cv->shift = 0;
}

/* The clock, as /proc/ktau/control names it. */
const char *ktau_clock_name(void)
{
#ifdef CONFIG_X86_TSC
	return static_key_enabled(&ktau_rebase_key) ? "tsc-rebased" : "tsc";
#else
	return "local";
#endif
}

/*
 * A frame whose time came out negative, or whose children took longer
 * than itself: only a clock that disagrees with itself gives that. The
 * time is taken as 0 and counted, never added.
 */
struct ktau_times __ktau_clamp(u64 incl, u64 child)
{
	struct ktau_times t;

	atomic_long_inc(&ktau_backwards);
	t.incl = (s64)incl < 0 ? 0 : incl;
	t.excl = t.incl - min(child, t.incl);
	return t;
}
EXPORT_SYMBOL_GPL(__ktau_clamp);

long ktau_exit_nomem(void)
{
	return atomic_long_read(&ktau_proc_nomem);
}

long ktau_clock_backwards(void)
{
	return atomic_long_read(&ktau_backwards);
}

#ifdef CONFIG_X86_TSC
/* Nanoseconds to TSC cycles, for ktau_rebase_in(). */
static u32 ktau_ns2cyc_mult, ktau_ns2cyc_shift;
/* The TSC may stop in deep idle states: rebase on the same CPU too. */
static bool ktau_rebase_same_cpu __read_mostly;

/* __schedule(), interrupts off: where and when the task left. */
static void ktau_rebase_out(struct ktau_task *kt)
{
	kt->out_cpu = raw_smp_processor_id();
	kt->out_tsc = rdtsc();
	kt->out_ns = ktime_get_mono_fast_ns();
}

/*
 * The task runs again, on another CPU whose TSC may not agree with the
 * one it left, or on the same CPU when its TSC may have stopped while it
 * was idle: move the start of its open frames by the difference, with
 * CLOCK_MONOTONIC (the clocksource the kernel chose instead of the TSC),
 * which every CPU agrees on, as the measure of the time in between. The
 * start of a system call that handlers heard of moves with it, so that
 * they do not hear of it twice (ktau_notify_syscall_start()). Whatever
 * groups are on: the task's frames of every group change CPU with it.
 * Interrupts off.
 */
static void ktau_rebase_in(struct ktau_task *kt)
{
	unsigned int d = min_t(unsigned int, kt->depth, KTAU_STACK_DEPTH), i;
	s64 off_ns;
	u64 now, shift;

	if (!kt->out_tsc)
		return;
	if (raw_smp_processor_id() == kt->out_cpu && !ktau_rebase_same_cpu) {
		kt->out_tsc = 0;
		return;
	}
	now = rdtsc();
	off_ns = ktime_get_mono_fast_ns() - kt->out_ns;
	if (off_ns < 0)
		off_ns = 0;
	shift = now - (kt->out_tsc +
		       mul_u64_u32_shr((u64)off_ns, ktau_ns2cyc_mult,
				       ktau_ns2cyc_shift));
	if (d && kt->hev_syscall_start == kt->stack[0].start)
		kt->hev_syscall_start += shift;
	for (i = 0; i < d; i++)
		kt->stack[i].start += shift;
	kt->out_tsc = 0;
}

/*
 * The hooks of a context switch while the sched group is off: nothing to
 * note for a task with no frame open (nothing is pushed while it is off
 * the CPU), nor for the tasks that share ktau_sink.
 */
void __ktau_rebase_out(void)
{
	struct ktau_task *kt = ktau_profile(current);

	if (!kt)
		return;
	if (READ_ONCE(kt->depth))
		ktau_rebase_out(kt);
	else
		kt->out_tsc = 0;
}

void __ktau_rebase_in(void)
{
	struct ktau_task *kt = ktau_profile(current);
	unsigned long flags;

	if (!kt)
		return;
	local_irq_save(flags);
	ktau_rebase_in(kt);
	local_irq_restore(flags);
}

/*
 * Rebasing is needed once the kernel marks the TSC unstable, at boot
 * (tsc=unstable, a failed synchronisation check when a CPU comes up) or
 * later (the clocksource watchdog): checked at boot and then every ten
 * seconds until it happens.
 */
static void ktau_clock_watch_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(ktau_clock_watch, ktau_clock_watch_fn);

static void ktau_clock_watch_fn(struct work_struct *work)
{
	u32 khz = READ_ONCE(tsc_khz) ?: READ_ONCE(ktau_tsc_khz);

	if (!check_tsc_unstable() || !khz) {
		schedule_delayed_work(&ktau_clock_watch, 10 * HZ);
		return;
	}
	clocks_calc_mult_shift(&ktau_ns2cyc_mult, &ktau_ns2cyc_shift,
			       NSEC_PER_MSEC, khz, 600);
	ktau_rebase_same_cpu = !boot_cpu_has(X86_FEATURE_NONSTOP_TSC);
	static_branch_enable(&ktau_rebase_key);
	pr_info("ktau: TSC marked unstable: a task's routines are rebased with CLOCK_MONOTONIC when it %s\n",
		ktau_rebase_same_cpu ? "runs again (the TSC may stop in idle)" :
				       "changes CPU");
}

static int __init ktau_clock_watch_init(void)
{
	if (ktau_ready)
		ktau_clock_watch_fn(NULL);
	return 0;
}
late_initcall_sync(ktau_clock_watch_init);
#endif

static struct ktau_slot *ktau_other_slot(struct ktau_task *kt)
{
	return &kt->slots[KTAU_ID_OTHER & kt->mask];
}

/*
 * Zero @kt's table. A reset, by the task itself with interrupts off
 * (ktau_user_work_fn()), does it under kt->clear_seq, so that readers on
 * other CPUs retry rather than take values from both sides of it
 * (ktau_slot_read_stable()); raw_, as the count lives in the header that
 * ktau_task_clean() zeroes, so it has no lockdep map to keep.
 */
static void ktau_clear(struct ktau_task *kt)
{
	memset(kt->sysslot, 0, sizeof(kt->sysslot));
	memset(kt->slots, 0, (kt->mask + 1) * sizeof(kt->slots[0]));
	ktau_other_slot(kt)->id = KTAU_ID_OTHER;
	kt->stack_overflows = 0;
	kt->table_overflows = 0;
	kt->unmatched = 0;
}

static int __init ktau_exited_init(void)
{
	int cpu;

	ktau_exited = kcalloc(nr_cpu_ids, sizeof(*ktau_exited), GFP_KERNEL);
	if (!ktau_exited)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		ktau_exited[cpu] = kvzalloc_node(sizeof(*ktau_exited[cpu]),
						 GFP_KERNEL, cpu_to_node(cpu));
		if (!ktau_exited[cpu])
			return -ENOMEM;
		seqcount_init(&ktau_exited[cpu]->seq);
	}
	return 0;
}

/*
 * Every free table is as this makes it: zero, but for its size and the
 * "[other]" slot. So a fork clears nothing (a cache with a constructor
 * is not cleared by init_on_alloc either), and a table is cleaned when
 * freed, wholly only if it was used: see ktau_task_clean().
 */
static void ktau_task_ctor(void *p)
{
	struct ktau_task *kt = p;

	memset(kt, 0, struct_size(kt, slots, ktau_nr_slots));
	kt->mask = ktau_nr_slots - 1;
	ktau_other_slot(kt)->id = KTAU_ID_OTHER;
}

static struct ktau_task *ktau_alloc(gfp_t gfp)
{
	return kmem_cache_alloc(ktau_cachep, gfp);
}

/*
 * Nothing was ever recorded in @kt: no slot claimed (which a system
 * call's index, sysslot, needs too), nothing charged to "[other]" at its
 * home slot, no counter moved. A task that lived with every group off.
 */
static bool ktau_task_empty(struct ktau_task *kt)
{
	struct ktau_slot *o = ktau_other_slot(kt);

	return !kt->claimed && !kt->stack_overflows && !kt->table_overflows &&
	       !kt->unmatched && !local64_read(&o->count) &&
	       !local64_read(&o->incl) && !local64_read(&o->excl);
}

/* @kt back to what ktau_task_ctor() made, to be freed. */
static void ktau_task_clean(struct ktau_task *kt)
{
	if (!ktau_task_empty(kt))
		ktau_clear(kt);
	/* The header; frames above depth are never read. */
	memset(kt, 0, offsetof(struct ktau_task, stack));
	kt->mask = ktau_nr_slots - 1;
}

long ktau_unprofiled_tasks(void)
{
	return atomic_long_read(&ktau_unprofiled);
}

/*
 * A dynamic point's frame whose point was unregistered since it opened
 * (a probe removed while the task was inside the function, a module
 * unloaded): its exit will never come. The point is gone, or registered
 * again with a later generation; the generation (CONFIG_KTAU_GEN_BITS)
 * wraps, but an ID whose generation has wrapped is never registered
 * again (the registry's ktau_find_or_register()), so an old frame never
 * looks current.
 */
static bool ktau_frame_stale(u64 tag)
{
	const struct ktau_func *f;

	if (KTAU_TAG_GROUP(tag) != KTAU_GROUP_DYNAMIC)
		return false;
	f = &ktau_funcs[KTAU_TAG_ID(tag)];
	return KTAU_TAG_GEN(tag) != READ_ONCE(f->gen) || !READ_ONCE(f->live);
}

/*
 * True while the group keys are being patched. The kernel patches a
 * static key's sites one at a time, and the patching task may be
 * preempted in between: meanwhile a routine can run its entry hook in
 * one state and its exit hook in the other. What that leaves is not
 * counted as unmatched (ktau_count_unmatched()); routines in progress
 * when the switch completes are.
 */
static bool ktau_switching;

static void ktau_count_unmatched(struct ktau_task *kt, unsigned int n)
{
	if (!READ_ONCE(ktau_switching))
		WRITE_ONCE(kt->unmatched, kt->unmatched + n);
}

/*
 * Frames [@lo, @hi) of the stack are dropped: a dynamic point's frame
 * whose point went away is always counted, the others unless a switch is
 * in progress.
 */
static void ktau_count_dropped(struct ktau_task *kt, unsigned int lo,
			       unsigned int hi)
{
	unsigned int i, stale = 0;

	for (i = lo; i < hi; i++)
		stale += ktau_frame_stale(kt->stack[i].tag);
	if (stale)
		WRITE_ONCE(kt->unmatched, kt->unmatched + stale);
	ktau_count_unmatched(kt, hi - lo - stale);
}

/*
 * Patch the keys of the groups that change to @mask, with CPU hotplug
 * held off (so that the window above is the patching alone). Afterwards
 * every CPU has run an interrupt: none is still in a hook that read an
 * old site with the flag clear, and on architectures whose patching does
 * not wait for the other CPUs, those run the new code from then on.
 */
static void ktau_patch_groups(unsigned long mask)
{
	unsigned long change = mask ^ ktau_groups_on;
	int g;

	cpus_read_lock();
	WRITE_ONCE(ktau_switching, true);
	/* The flag before the first site: pairs with the patching's syncs. */
	smp_mb();
	for (g = 0; g < KTAU_NR_GROUPS; g++) {
		if (!(change & BIT(g)))
			continue;
		if (mask & BIT(g))
			static_branch_enable_cpuslocked(&ktau_keys[g]);
		else
			static_branch_disable_cpuslocked(&ktau_keys[g]);
	}
	kick_all_cpus_sync();
	WRITE_ONCE(ktau_switching, false);
	cpus_read_unlock();
}

/*
 * Switch on the groups in @on and off those in @off, the others staying
 * as they are; the read of the groups on and the switch are one step, so
 * that two writers each change their own groups.
 */
int ktau_switch_groups(unsigned long on, unsigned long off)
{
	unsigned long mask;
	int ret = 0;

	if ((on | off) & ~KTAU_ALL_GROUPS)
		return -EINVAL;
	mutex_lock(&ktau_groups_lock);
	mask = (ktau_groups_on | on) & ~off;
	if (mask && !ktau_ready) {
		ret = -ENODEV;
		goto out;
	}
	if (mask == ktau_groups_on)
		goto out;
	/*
	 * A group goes off: frames may be left open (ktau_user_return()).
	 * Before the patching, so that a frame left during it is dropped
	 * at the task's next return to user space, not a later one.
	 */
	if (ktau_groups_on & ~mask)
		static_branch_enable(&ktau_gap_key);
	ktau_patch_groups(mask);
	WRITE_ONCE(ktau_groups_on, mask);
out:
	mutex_unlock(&ktau_groups_lock);
	return ret;
}

/* Exactly the groups in @mask on. */
int ktau_set_groups(unsigned long mask)
{
	if (mask & ~KTAU_ALL_GROUPS)
		return -EINVAL;
	return ktau_switch_groups(mask, KTAU_ALL_GROUPS & ~mask);
}

void __init ktau_init(void)
{
	size_t size = struct_size_t(struct ktau_task, slots, ktau_nr_slots);
	int g;

	ktau_cachep = kmem_cache_create("ktau_task", size,
					__alignof__(struct ktau_task),
					SLAB_PANIC | SLAB_ACCOUNT, ktau_task_ctor);
	/* The boot task; everything forked from now on gets a table. */
	current->ktau = ktau_alloc(GFP_KERNEL);
	ktau_sink = ktau_alloc(GFP_KERNEL);
	ktau_ready = !ktau_exited_init() && current->ktau && ktau_sink &&
		     !ktau_registry_init();
	if (!ktau_ready) {
		pr_err("ktau: out of memory, KTAU stays off\n");
		ktau_groups_on = 0;
	}
	/* Interrupts come in between the sites: see ktau_switching. */
	WRITE_ONCE(ktau_switching, true);
	for (g = 0; g < KTAU_NR_GROUPS; g++)
		if (!(ktau_groups_on & BIT(g)))
			static_branch_disable(&ktau_keys[g]);
	WRITE_ONCE(ktau_switching, false);
	pr_info("ktau: %u slots per task (%zu bytes), groups 0x%lx\n",
		ktau_nr_slots, size, ktau_groups_on);
}

/*
 * Every task gets a profile: the hooks rely on it. A fork never fails for
 * KTAU: a task whose profile cannot be allocated shares ktau_sink, is
 * counted (fork_nomem) and is missing from every view. Only when KTAU
 * could not start (ktau_ready false) do tasks go without, and then no
 * group is ever switched on.
 */
int ktau_tsk_init(struct task_struct *tsk)
{
	struct ktau_task *parent = ktau_profile(current);
	struct ktau_task *kt;

	tsk->ktau = NULL;
	if (!ktau_ready)
		return 0;
	kt = ktau_alloc(GFP_KERNEL);
	if (!kt) {
		atomic_long_inc(&ktau_unprofiled);
		tsk->ktau = ktau_sink;
		return 0;
	}
	/* Its first return to user space closes a system call it never made. */
	__set_bit(KTAU_NEW, &kt->flags);
	/* Members of an exit collector bring the tasks they create. */
	if (parent && parent->collector && !(tsk->flags & PF_KTHREAD)) {
		kt->collector = parent->collector;
		ktau_collector_get(kt->collector);
	}
	/* So do threads traced with KTAU_TRACE_INHERIT. */
	ktau_trace_fork(parent, tsk, kt);
	tsk->ktau = kt;
	return 0;
}

/* See struct ktau_task's stack: the trace's fields fit before it. */
static_assert(offsetof(struct ktau_task, stack) ==
	      ALIGN(offsetofend(struct ktau_task, reset_work) +
		    sizeof(void *) + sizeof(u32), 32));

#ifdef CONFIG_KTAU_TRACE
/*
 * copy_process() past its last failure, the new task on the task list and
 * not yet run: what must see every task that exists from then on (a
 * system-wide trace).
 */
void ktau_post_fork(struct task_struct *tsk)
{
	struct ktau_task *kt = ktau_profile(tsk);

	if (kt && !(tsk->flags & PF_KTHREAD))
		ktau_trace_post_fork(tsk, kt);
}
#endif

static void ktau_proc_put(struct ktau_proc *pr)
{
	if (pr && refcount_dec_and_test(&pr->ref))
		kfree(pr);
}

void ktau_tsk_free(struct task_struct *tsk)
{
	struct ktau_task *kt = ktau_profile(tsk);

	tsk->ktau = NULL;
	if (!kt)
		return;
	if (kt->collector)
		ktau_collector_put(kt->collector);
	ktau_trace_free(kt);
	ktau_proc_put(kt->proc);
	ktau_task_clean(kt);
	kmem_cache_free(ktau_cachep, kt);
}

/* Add @kt's slots to @tot, in clock units, with the readers' ordering. */
void ktau_totals_add_task(struct ktau_totals *tot, struct ktau_task *kt)
{
	unsigned int i;

	for (i = 0; i <= kt->mask; i++) {
		struct ktau_sum v;
		u32 id = ktau_slot_read_stable(kt, &kt->slots[i], &v);

		if (id == KTAU_ID_NONE || id >= KTAU_MAX_IDS)
			continue;
		tot->sum[id].count += v.count;
		tot->sum[id].incl += v.incl;
		tot->sum[id].excl += v.excl;
	}
	tot->stack_overflows += READ_ONCE(kt->stack_overflows);
	tot->table_overflows += READ_ONCE(kt->table_overflows);
	tot->unmatched += READ_ONCE(kt->unmatched);
	tot->nr_tasks++;
}

/*
 * Whether a reader gets only the totals of interrupts, not each source
 * (which IRQ, which softirq vector) with its exact times: perf's policy
 * for kernel detail, kernel.perf_event_paranoid 2 or more without
 * CAP_PERFMON (@privileged). What such a reader still sees, the count and
 * time of all the interrupts that landed on its own threads, it can learn
 * anyway from the gaps in a loop that reads a clock; the sources are what
 * would make it a finer oracle than /proc/interrupts.
 */
bool ktau_irq_detail_hidden(bool privileged)
{
	return ktau_irq_detail_restricted() && !privileged;
}

/*
 * Whether the sources need a privilege at all, asked first by readers
 * that check capabilities at each read, as perf_allow_kernel() does, so
 * that a paranoid level below 2 asks (and audits) none.
 */
bool ktau_irq_detail_restricted(void)
{
#ifdef CONFIG_PERF_EVENTS
	return READ_ONCE(sysctl_perf_event_paranoid) >= 2;
#else
	return true;
#endif
}

/*
 * Whether the current task's security module refuses it kernel detail,
 * the question perf_allow_kernel() asks after the paranoid level: a
 * policy that keeps perf's kernel events from a domain keeps the
 * interrupt sources from it too.
 */
bool ktau_irq_detail_lsm_denied(void)
{
#ifdef CONFIG_PERF_EVENTS
	return security_perf_event_open(PERF_SECURITY_KERNEL) != 0;
#else
	return false;
#endif
}

/*
 * What the current task's time namespace adds to CLOCK_MONOTONIC, as
 * clock_gettime() adds it: the times KTAU gives a reader (a snapshot's,
 * a task's start, samples, a trace session's) are in its namespace, so
 * that they compare with what it reads itself (ktau_timens()). Without
 * CONFIG_TIME_NS, nsproxy->time_ns is NULL: no offset.
 */
s64 ktau_timens_offset(void)
{
#ifdef CONFIG_TIME_NS
	struct nsproxy *ns = current->nsproxy;

	if (ns && ns->time_ns)
		return timespec64_to_ns(&ns->time_ns->offsets.monotonic);
#endif
	return 0;
}

/* Into @acc, the entry of @id, from @e: fold an interrupt source in. */
static unsigned int ktau_fold(struct ktau_entry *out, unsigned int n,
			      unsigned int max, int *acc, u32 id,
			      const struct ktau_entry *e)
{
	if (*acc < 0) {
		if (n >= max)
			return n;
		*acc = n++;
		memset(&out[*acc], 0, sizeof(out[*acc]));
		out[*acc].id = id;
	}
	out[*acc].samples = min_t(u64, (u64)out[*acc].samples + e->samples, U32_MAX);
	out[*acc].count += e->count;
	out[*acc].incl_ns += e->incl_ns;
	out[*acc].excl_ns += e->excl_ns;
	return n;
}

/* The ID a reader without interrupt sources is given for @id. */
u32 ktau_coarse_id(u32 id)
{
	int g = id < ktau_nr_ids() ? ktau_funcs[id].group : -1;

	if (g == KTAU_GROUP_IRQ)
		return KTAU_ID_IRQ;
	if (g == KTAU_GROUP_SOFTIRQ)
		return KTAU_ID_SOFTIRQ;
	return id;
}

/*
 * Replace @out's entries of interrupt sources with one "irq" and one
 * "softirq" entry: see ktau_irq_detail_hidden().
 */
unsigned int ktau_coarsen(struct ktau_entry *out, unsigned int n,
			  unsigned int max)
{
	unsigned int nr = ktau_nr_ids(), i, m = 0;
	struct ktau_entry e;
	int irq = -1, soft = -1;

	for (i = 0; i < n; i++) {
		u32 id = out[i].id;
		int g = id < nr ? ktau_funcs[id].group : -1;

		e = out[i];
		if (g == KTAU_GROUP_IRQ)
			m = ktau_fold(out, m, max, &irq, KTAU_ID_IRQ, &e);
		else if (g == KTAU_GROUP_SOFTIRQ)
			m = ktau_fold(out, m, max, &soft, KTAU_ID_SOFTIRQ, &e);
		else
			out[m++] = e;
	}
	return m;
}

/*
 * Copy @kt's used slots to @out as struct ktau_entry, in nanoseconds;
 * @coarse: interrupts without their sources (ktau_irq_detail_hidden()).
 */
unsigned int ktau_copy_entries(struct ktau_task *kt, struct ktau_entry *out,
			       unsigned int max, const struct ktau_conv *cv,
			       bool coarse)
{
	unsigned int i, n = 0;

	rcu_read_lock();
	for (i = 0; i <= kt->mask && n < max; i++) {
		struct ktau_sum v;
		u32 id = ktau_slot_read_stable(kt, &kt->slots[i], &v);
		u32 samples;

		if (id == KTAU_ID_NONE)
			continue;
		samples = ktau_sample_count(kt, id);
		if (!v.count && !samples)
			continue;
		out[n].id = id;
		out[n].samples = samples;
		out[n].count = v.count;
		out[n].incl_ns = ktau_to_ns(cv, v.incl);
		out[n].excl_ns = ktau_to_ns(cv, v.excl);
		n++;
	}
	n = ktau_sample_entries(kt, out, n, max);
	rcu_read_unlock();
	return coarse ? ktau_coarsen(out, n, max) : n;
}

unsigned int ktau_totals_entries(const struct ktau_totals *tot,
				 struct ktau_entry *out, unsigned int max,
				 const struct ktau_conv *cv)
{
	unsigned int id, n = 0;

	for (id = 1; id < KTAU_MAX_IDS && n < max; id++) {
		const struct ktau_sum *s = &tot->sum[id];

		if (!s->count)
			continue;
		out[n].id = id;
		out[n].samples = 0;
		out[n].count = s->count;
		out[n].incl_ns = ktau_to_ns(cv, s->incl);
		out[n].excl_ns = ktau_to_ns(cv, s->excl);
		n++;
	}
	return n;
}

static void ktau_put_threads(struct task_struct **v, unsigned int n)
{
	while (n)
		put_task_struct(v[--n]);
	kvfree(v);
}

/*
 * Hold the threads that have a profile of their own: of @leader's process,
 * or of every process when @leader is NULL. *@np references, dropped with
 * ktau_put_threads(); NULL when out of memory. A walk that finds more
 * threads than it made room for (created meanwhile, anywhere in the list)
 * starts again with more room, so that no live thread is left out.
 */
static struct task_struct **ktau_hold_threads(struct task_struct *leader,
					      unsigned int *np)
{
	unsigned int cap, n;
	struct task_struct **v, *p, *t;

	cap = (leader ? READ_ONCE(leader->signal->nr_threads) : READ_ONCE(nr_threads)) + 64;
	for (;;) {
		v = kvmalloc_array(cap, sizeof(*v), GFP_KERNEL_ACCOUNT);
		if (!v)
			return NULL;
		n = 0;
		rcu_read_lock();
		if (leader) {
			for_each_thread(leader, t) {
				if (n == cap)
					goto full;
				if (ktau_profile(t))
					v[n++] = get_task_struct(t);
			}
		} else {
			for_each_process_thread(p, t) {
				if (n == cap)
					goto full;
				if (ktau_profile(t))
					v[n++] = get_task_struct(t);
			}
		}
		rcu_read_unlock();
		*np = n;
		return v;
full:
		rcu_read_unlock();
		ktau_put_threads(v, n);
		cap *= 2;
	}
}

/* Add one CPU's exited totals to @tot; the sequence count they are at. */
static unsigned int ktau_exited_add(struct ktau_totals *tot, int cpu,
				    struct ktau_sum *buf)
{
	struct ktau_exited *e = ktau_exited[cpu];
	u64 ov[3];
	unsigned int seq, id;

	do {
		seq = read_seqcount_begin(&e->seq);
		memcpy(buf, e->sum, sizeof(e->sum));
		memcpy(ov, e->overflows, sizeof(ov));
	} while (read_seqcount_retry(&e->seq, seq));
	for (id = 0; id < KTAU_MAX_IDS; id++) {
		tot->sum[id].count += buf[id].count;
		tot->sum[id].incl += buf[id].incl;
		tot->sum[id].excl += buf[id].excl;
	}
	tot->stack_overflows += ov[0];
	tot->table_overflows += ov[1];
	tot->unmatched += ov[2];
	return seq;
}

/*
 * System-wide totals: exited tasks plus every live task, the per-CPU idle
 * tasks included; 0 or -ENOMEM.
 *
 * Exact and never decreasing from one read to the next, although tasks
 * exit meanwhile: every thread is held first, then the exited totals are
 * copied, and a held thread is added from its own table unless its fold
 * (stamped with its CPU's sequence count) is in that copy. A thread that
 * exits before it is held has folded before the copy; one that folds
 * after the copy is added from its table, which stays until it is freed.
 */
int ktau_aggregate(struct ktau_totals *tot)
{
	unsigned int n = 0, i, *seen;
	struct task_struct **v;
	struct ktau_sum *buf;
	int cpu, ret = -ENOMEM;

	memset(tot, 0, sizeof(*tot));
	v = ktau_hold_threads(NULL, &n);
	buf = kvmalloc_array(KTAU_MAX_IDS, sizeof(*buf), GFP_KERNEL_ACCOUNT);
	seen = kcalloc(nr_cpu_ids, sizeof(*seen), GFP_KERNEL_ACCOUNT);
	if (!v || !buf || !seen)
		goto out;

	for_each_possible_cpu(cpu)
		seen[cpu] = ktau_exited_add(tot, cpu, buf);

	for (i = 0; i < n; i++) {
		struct ktau_task *kt = ktau_profile(v[i]);

		if (test_bit(KTAU_FOLDED, &kt->flags)) {
			smp_rmb();	/* the stamp before the flag, see ktau_exit() */
			if ((int)(READ_ONCE(kt->fold_seq) - seen[kt->fold_cpu]) <= 0)
				continue;
		}
		ktau_totals_add_task(tot, kt);
	}
	for_each_possible_cpu(cpu) {
		struct task_struct *idle = idle_task(cpu);

		if (idle && ktau_profile(idle))
			ktau_totals_add_task(tot, ktau_profile(idle));
	}
	ret = 0;
out:
	ktau_put_threads(v, n);
	kfree(seen);
	kvfree(buf);
	return ret;
}

/* The process totals of @tsk's thread group, made if need be; or NULL. */
static struct ktau_proc *ktau_proc_get(struct task_struct *tsk)
{
	struct ktau_task *lk = ktau_profile(tsk->group_leader);
	unsigned int n = 2 * ktau_nr_slots;
	struct ktau_proc *pr, *old;

	/* The last thread of a process: the process goes with it. */
	if (!lk || thread_group_empty(tsk))
		return NULL;
	pr = READ_ONCE(lk->proc);
	if (pr)
		return pr;
	pr = kzalloc(struct_size(pr, slots, n), GFP_KERNEL_ACCOUNT);
	if (!pr) {
		atomic_long_inc(&ktau_proc_nomem);
		return NULL;
	}
	refcount_set(&pr->ref, 1);
	spin_lock_init(&pr->lock);
	pr->mask = n - 1;
	/* "[other]" keeps its home slot: no routine's totals are renamed. */
	pr->slots[KTAU_ID_OTHER & pr->mask].id = KTAU_ID_OTHER;
	old = cmpxchg(&lk->proc, NULL, pr);
	if (old) {
		kfree(pr);
		pr = old;
	}
	return pr;
}

/*
 * Add @kt to @pr, under its lock; a full table charges "[other]". An
 * @empty table adds nothing: it is only stamped as folded.
 */
static void ktau_proc_fold(struct ktau_proc *pr, struct ktau_task *kt,
			   bool empty)
{
	unsigned int i, j, n;

	spin_lock(&pr->lock);
	for (i = 0; !empty && i <= kt->mask; i++) {
		struct ktau_slot *s = &kt->slots[i];
		struct ktau_proc_slot *p = NULL;
		u32 id = s->id;

		if (id == KTAU_ID_NONE)
			continue;
		for (n = 0, j = id & pr->mask; n <= pr->mask; n++, j = (j + 1) & pr->mask) {
			if (pr->slots[j].id == id || pr->slots[j].id == KTAU_ID_NONE) {
				p = &pr->slots[j];
				break;
			}
		}
		if (!p) {
			/* Counted in calls, as the tasks count them. */
			p = &pr->slots[KTAU_ID_OTHER & pr->mask];
			id = KTAU_ID_OTHER;
			pr->overflows[1] += local64_read(&s->count);
		}
		p->id = id;
		p->sum.count += local64_read(&s->count);
		p->sum.incl += local64_read(&s->incl);
		p->sum.excl += local64_read(&s->excl);
	}
	pr->overflows[0] += kt->stack_overflows;
	pr->overflows[1] += kt->table_overflows;
	pr->overflows[2] += kt->unmatched;
	kt->proc_gen = ++pr->gen;
	spin_unlock(&pr->lock);
}

/*
 * /proc/PID/ktau: the live threads of @leader's process plus those that
 * exited, exact and never decreasing, as ktau_aggregate() does it: the
 * threads are held first, then the exited totals copied, and a thread
 * is added from its own table unless its fold is in that copy.
 */
int ktau_process_totals(struct task_struct *leader, struct ktau_totals *tot)
{
	struct ktau_task *lk = ktau_profile(leader);
	unsigned int n = 0, i, gen = 0;
	struct task_struct **v;
	struct ktau_proc *pr;

	v = ktau_hold_threads(leader, &n);
	if (!v)
		return -ENOMEM;

	pr = lk ? READ_ONCE(lk->proc) : NULL;
	if (pr) {
		spin_lock_irq(&pr->lock);
		for (i = 0; i <= pr->mask; i++) {
			struct ktau_proc_slot *p = &pr->slots[i];

			if (p->id == KTAU_ID_NONE || p->id >= KTAU_MAX_IDS)
				continue;
			tot->sum[p->id].count += p->sum.count;
			tot->sum[p->id].incl += p->sum.incl;
			tot->sum[p->id].excl += p->sum.excl;
		}
		tot->stack_overflows += pr->overflows[0];
		tot->table_overflows += pr->overflows[1];
		tot->unmatched += pr->overflows[2];
		gen = pr->gen;
		spin_unlock_irq(&pr->lock);
	}
	for (i = 0; i < n; i++) {
		struct ktau_task *kt = ktau_profile(v[i]);
		unsigned int pg = READ_ONCE(kt->proc_gen);

		if (!pg || pg > gen)
			ktau_totals_add_task(tot, kt);
	}
	ktau_put_threads(v, n);
	return 0;
}

/*
 * de_thread(), tasklist_lock held: @tsk, a thread other than the leader,
 * execs and takes over the process from @leader, which has exited and
 * folded into the process's totals. The process lives on under @tsk, and
 * so do the totals of its exited threads: @tsk shares them with @leader,
 * whose pointer stays, so that a reader of the process that still holds
 * @leader neither sees them vanish nor outlives them.
 */
void ktau_exec_leader(struct task_struct *tsk, struct task_struct *leader)
{
	struct ktau_task *kt = ktau_profile(tsk), *lk = ktau_profile(leader);
	struct ktau_proc *pr;

	pr = lk ? READ_ONCE(lk->proc) : NULL;
	if (!pr)
		return;
	/* A thread with no profile of its own cannot keep them: counted. */
	if (!kt) {
		atomic_long_inc(&ktau_proc_nomem);
		return;
	}
	refcount_inc(&pr->ref);
	if (cmpxchg(&kt->proc, NULL, pr)) {
		ktau_proc_put(pr);
		atomic_long_inc(&ktau_proc_nomem);
	}
}

/*
 * do_exit(), before exit_mm(): KTAU stops writing into the task's user
 * memory (its shared page) before mm_release() wakes whoever joins the
 * thread (CLONE_CHILD_CLEARTID, pthread_join()): from then on the page is
 * the program's to free or reuse. Later, in ktau_exit(), the task's last
 * routines (exit_mm() itself, interrupts, being preempted) would still
 * have been written there.
 */
void ktau_exit_user(struct task_struct *tsk)
{
	struct ktau_task *kt = ktau_profile(tsk);

	if (kt)
		ktau_shared_release(kt);
}

/* do_exit(): fold the task's totals and hand them to its collector. */
void ktau_exit(struct task_struct *tsk)
{
	struct ktau_task *kt = ktau_profile(tsk);
	struct ktau_exited *e;
	struct ktau_proc *pr;
	unsigned long flags;
	unsigned int i;
	bool empty;
	int cpu;

	if (!kt)
		return;
	ktau_shared_release(kt);
	if (kt->collector)
		ktau_collect_exit(tsk, kt);
	ktau_sample_release(tsk);
	pr = ktau_proc_get(tsk);

	local_irq_save(flags);
	/*
	 * Nothing the task still runs through (its last interrupts and
	 * schedule) changes its table from now on, or a read that added the
	 * table before a fold was copied would see more than a read after;
	 * nor its trace.
	 */
	WRITE_ONCE(kt->depth, KTAU_DEPTH_DEAD);
	ktau_trace_stop(kt);
	empty = ktau_task_empty(kt);
	if (pr)
		ktau_proc_fold(pr, kt, empty);
	cpu = smp_processor_id();
	e = ktau_exited[cpu];
	/*
	 * Nothing recorded (for example every group off all its life): its
	 * table adds nothing, so it is only stamped as folded into what the
	 * exited totals are now, without a write section, so that readers
	 * no longer count it as live.
	 */
	if (empty) {
		kt->fold_cpu = cpu;
		WRITE_ONCE(kt->fold_seq, raw_read_seqcount(&e->seq));
		smp_wmb();	/* the stamp before the flag */
		set_bit(KTAU_FOLDED, &kt->flags);
		goto out;
	}
	write_seqcount_begin(&e->seq);
	for (i = 0; i <= kt->mask; i++) {
		struct ktau_slot *s = &kt->slots[i];

		if (s->id == KTAU_ID_NONE || s->id >= KTAU_MAX_IDS)
			continue;
		e->sum[s->id].count += local64_read(&s->count);
		e->sum[s->id].incl += local64_read(&s->incl);
		e->sum[s->id].excl += local64_read(&s->excl);
	}
	e->overflows[0] += kt->stack_overflows;
	e->overflows[1] += kt->table_overflows;
	e->overflows[2] += kt->unmatched;
	/* The count the sequence will be at: see ktau_aggregate(). */
	kt->fold_cpu = cpu;
	WRITE_ONCE(kt->fold_seq, raw_read_seqcount(&e->seq) + 1);
	smp_wmb();	/* the stamp before the flag, see ktau_aggregate() */
	set_bit(KTAU_FOLDED, &kt->flags);
	write_seqcount_end(&e->seq);
out:
	local_irq_restore(flags);
	/* Its trace stays in its session until read. */
	ktau_trace_exit(tsk, kt);
}

/*
 * The last point before user mode, interrupts off, under ktau_gap_key
 * (ktau_user_return()): no KTAU routine is in progress in user mode, so a
 * frame still open is one whose exit ran while its group was off, and a
 * later exit must not close it. It is dropped and counted as unmatched;
 * frames beyond the stack were counted as stack overflows already. Every
 * other place that runs task work or may sleep on the way out (signal
 * delivery, ptrace stops, io_uring, KVM_RUN's guest entries) comes before
 * this point, with its frames live.
 */
void __ktau_user_gap(struct ktau_task *kt)
{
	unsigned int d = kt->depth;

	if (d == KTAU_DEPTH_DEAD)
		return;
	ktau_count_dropped(kt, 0, min(d, KTAU_STACK_DEPTH));
	WRITE_ONCE(kt->depth, 0);
}

/* Work a user task does for itself on its way to user space: a reset. */
static void ktau_user_work_fn(struct callback_head *head)
{
	struct ktau_task *kt = container_of(head, struct ktau_task, reset_work);
	unsigned long flags;

	clear_bit(KTAU_WORK_QUEUED, &kt->flags);
	smp_mb__after_atomic();	/* requests after this queue the work again */
	local_irq_save(flags);
	if (test_and_clear_bit(KTAU_RESET_PENDING, &kt->flags)) {
		/* Interrupts off: no reader on this CPU spins on the count. */
		raw_write_seqcount_begin(&kt->clear_seq);
		ktau_clear(kt);
		raw_write_seqcount_end(&kt->clear_seq);
	}
	local_irq_restore(flags);
}

/* Ask every user task for @bit's work on its way to user space. */
static void ktau_user_work_all(int bit)
{
	struct task_struct *p, *t;

	rcu_read_lock();
	for_each_process_thread(p, t) {
		struct ktau_task *kt = ktau_profile(t);

		if (!kt || (t->flags & (PF_KTHREAD | PF_EXITING)))
			continue;
		set_bit(bit, &kt->flags);
		if (test_and_set_bit(KTAU_WORK_QUEUED, &kt->flags))
			continue;
		init_task_work(&kt->reset_work, ktau_user_work_fn);
		if (task_work_add(t, &kt->reset_work, TWA_RESUME))
			clear_bit(KTAU_WORK_QUEUED, &kt->flags);
	}
	rcu_read_unlock();
}

static void ktau_exited_reset_cpu(void *arg)
{
	struct ktau_exited *e = arg ?: ktau_exited[smp_processor_id()];

	write_seqcount_begin(&e->seq);
	memset(e->sum, 0, sizeof(e->sum));
	memset(e->overflows, 0, sizeof(e->overflows));
	write_seqcount_end(&e->seq);
}

void ktau_reset_all(void)
{
	int cpu;

	ktau_probe_remove_all();

	/* Each online CPU zeroes its own table: no exit can run there then. */
	cpus_read_lock();
	on_each_cpu(ktau_exited_reset_cpu, NULL, 1);
	for_each_possible_cpu(cpu)
		if (!cpu_online(cpu))
			ktau_exited_reset_cpu(ktau_exited[cpu]);
	cpus_read_unlock();

	ktau_user_work_all(KTAU_RESET_PENDING);
}

/*
 * Handlers hear of a system call's start late, with its own clock: at its
 * first nested routine or event, or at its end, whichever comes first.
 * @f is the frame at the bottom of the stack. Under ktau_extra_on().
 */
static void ktau_notify_syscall_start(struct ktau_task *kt,
				      struct ktau_frame *f)
{
	if (KTAU_TAG_GROUP(f->tag) != KTAU_GROUP_SYSCALL ||
	    kt->hev_syscall_start == f->start ||
	    !ktau_handlers_want(KTAU_GROUP_SYSCALL))
		return;
	kt->hev_syscall_start = f->start;
	__ktau_notify(KTAU_HEV_START, KTAU_GROUP_SYSCALL,
		      ktau_frame_id(f->tag, KTAU_GROUP_SYSCALL), f->start, 0);
}

/*
 * Drop frame @i of the @d open ones. The routines that ended inside it
 * (its child time) become the frame below's children, so that its
 * exclusive time does not count them a second time; the dropped frame's
 * own time stays there.
 */
static void ktau_drop_frame(struct ktau_task *kt, int i, unsigned int d)
{
	if (i > 0)
		kt->stack[i - 1].child += kt->stack[i].child;
	memmove(&kt->stack[i], &kt->stack[i + 1],
		(d - i - 1) * sizeof(kt->stack[0]));
}

/*
 * Frames [@i + 1, @d) are dropped and frame @i closes next: the routines
 * that ended inside the dropped ones are its children (as above).
 */
static void ktau_drop_above(struct ktau_task *kt, int i, unsigned int d)
{
	unsigned int j;

	ktau_count_dropped(kt, i + 1, d);
	for (j = i + 1; j < d; j++)
		kt->stack[i].child += kt->stack[j].child;
}

/*
 * Contexts nest: a softirq handler runs on top of a task, a hard interrupt
 * on top of either, and each ends before what it stopped goes on. So while
 * the CPU is in one context, a frame of a deeper one on the stack is left
 * from an interrupt that is over (its exit ran with its group off), and so
 * is a frame of the same context below the interrupt's own frame, which
 * opened that context: hard interrupts do not nest, nor do softirq
 * handlers.
 */
static bool ktau_entry_frame(u64 tag)
{
	return KTAU_TAG_GROUP(tag) == KTAU_GROUP_IRQ ||
	       KTAU_TAG_GROUP(tag) == KTAU_GROUP_SOFTIRQ;
}

/* Open a frame for @id; interrupts off. */
static void ktau_push(struct ktau_task *kt, unsigned int group, u32 id)
{
	unsigned int d = kt->depth;
	u64 ctx = ktau_ctx(group), base = KTAU_TAG(group, id), tag = base | ctx;
	bool entry = ctx && ktau_entry_frame(base);
	struct ktau_frame *f;
	int i;

	if (group == KTAU_GROUP_DYNAMIC)
		tag |= (u64)READ_ONCE(ktau_funcs[id].gen) << KTAU_TAG_GEN_SHIFT;
	/*
	 * Frames that will never close go first: stale dynamic ones, those
	 * of interrupts that are over (above; the interrupt's entry drops
	 * the fixed routines' frames of its own context, not the dynamic
	 * points', whose functions may have entered that context before it:
	 * PREEMPT_RT's handle_softirqs()), and a frame of the same fixed
	 * routine and context (system call frames never match, group 0):
	 * fixed routines do not recurse within a context, so that one was
	 * left open when its group was switched off, and its never ending
	 * inclusive time would hide this one's. In an interrupt, a frame of
	 * the same routine in the context it stopped is its own instance,
	 * nested (a page fault taken in an interrupt, by a user access in a
	 * sampler's overflow handler, while the task was in a page fault of
	 * its own): as a dynamic point open below, recursion, so that the
	 * routine's inclusive time counts the inner one once. Beyond the
	 * stack only the count goes on, after that cleaning made no room.
	 */
	for (i = d <= KTAU_STACK_DEPTH ? (int)d - 1 : -1; i >= 0; i--) {
		struct ktau_frame *o = &kt->stack[i];
		u64 octx = o->tag & KTAU_TAG_CTX_MASK;

		if (unlikely(ktau_frame_stale(o->tag))) {
			ktau_drop_frame(kt, i, d--);
			WRITE_ONCE(kt->unmatched, kt->unmatched + 1);
			continue;
		}
		if (unlikely(octx > ctx ||
			     (entry && octx == ctx &&
			      KTAU_TAG_GROUP(o->tag) != KTAU_GROUP_DYNAMIC))) {
			ktau_drop_frame(kt, i, d--);
			ktau_count_unmatched(kt, 1);
			continue;
		}
		if ((o->tag & ~KTAU_TAG_FLAGS) != base)
			continue;
		if (group != KTAU_GROUP_DYNAMIC && octx == ctx) {
			ktau_drop_frame(kt, i, d--);
			ktau_count_unmatched(kt, 1);
			continue;
		}
		tag |= KTAU_TAG_RECURSIVE;
		if (!(o->tag & KTAU_TAG_HASREC)) {
			o->dup = 0;
			o->tag |= KTAU_TAG_HASREC;
		}
		break;
	}
	if (unlikely(d >= KTAU_STACK_DEPTH)) {
		/* Keep counting depth so that the exits still match. */
		kt->depth = d + 1;
		if (d < KTAU_DEPTH_DEAD)
			kt->stack_overflows++;
		return;
	}
	f = &kt->stack[d];
	f->tag = tag;
	f->child = 0;
	f->start = ktau_clock();
	/* The frame before the depth: see __ktau_syscall_enter(). */
	barrier();
	WRITE_ONCE(kt->depth, d + 1);
	/*
	 * Group kvm's frames are pushed with the guest's state loaded:
	 * handlers hear of nothing there (ktau_handler_register()).
	 */
	if (ktau_extra_on() && group != KTAU_GROUP_KVM) {
		if (d)
			ktau_notify_syscall_start(kt, &kt->stack[0]);
		if (ktau_handlers_want(group))
			__ktau_notify(KTAU_HEV_START, group, id, f->start, 0);
	}
}

/*
 * The open frame an exit in context @ctx closes, the nearest whose bits
 * under @mask are @want: one of that context, above the frames of the
 * context an interrupt stopped and not below the interrupt's own frame.
 * Frames of deeper contexts are passed over (they are left from
 * interrupts that are over). -1: none.
 */
static int ktau_find_open(struct ktau_task *kt, unsigned int d, u64 want,
			  u64 mask, u64 ctx)
{
	int i;

	for (i = (int)d - 1; i >= 0; i--) {
		u64 tag = kt->stack[i].tag, octx = tag & KTAU_TAG_CTX_MASK;

		if (octx > ctx)
			continue;
		if (octx < ctx)
			break;
		if ((tag & mask) == want)
			return i;
		if (ctx && ktau_entry_frame(tag))
			break;
	}
	return -1;
}

/*
 * The frame on top is not @group's of the context the CPU is in: a group
 * was switched on or off while a routine was in progress, or the stack
 * overflowed. Close @group's frame that ktau_find_open() finds and drop
 * the frames above it, or count an exit without entry.
 */
void __ktau_pop_slow(struct ktau_task *kt, unsigned int group)
{
	unsigned int d = kt->depth;
	u64 ctx = ktau_ctx(group);
	int i;

	if (d > KTAU_STACK_DEPTH) {
		/* A task that folded at exit stays dead: see ktau_exit(). */
		if (d != KTAU_DEPTH_DEAD)
			kt->depth = d - 1;
		return;
	}
	i = ktau_find_open(kt, d, KTAU_TAG(group, 0) | ctx, KTAU_TAG_GROUP_CTX,
			   ctx);
	if (i < 0) {
		if (!(group == KTAU_GROUP_SYSCALL && d == 0 &&
		      test_and_clear_bit(KTAU_NEW, &kt->flags)))
			ktau_count_unmatched(kt, 1);
		return;
	}
	ktau_drop_above(kt, i, d);
	kt->depth = i + 1;
	__ktau_pop(kt, group);
}
EXPORT_SYMBOL_GPL(__ktau_pop_slow);

/* The slot of @id, found by probing or claimed; NULL: the table is full. */
static struct ktau_slot *ktau_slot_claim(struct ktau_task *kt, u32 id)
{
	unsigned int mask = kt->mask, i = id & mask, n;

	for (n = 0; n <= mask; n++, i = (i + 1) & mask) {
		struct ktau_slot *s = &kt->slots[i];

		if (s->id == id)
			return s;
		if (s->id == KTAU_ID_NONE) {
			WRITE_ONCE(s->id, id);
			kt->claimed = 1;
			return s;
		}
	}
	return NULL;
}

/* The slot of @id is not at its home position: probe, or claim one. */
struct ktau_slot *__ktau_slot_slow(struct ktau_task *kt, u32 id)
{
	struct ktau_slot *s = ktau_slot_claim(kt, id);

	if (s)
		return s;
	kt->table_overflows++;
	return ktau_other_slot(kt);
}
EXPORT_SYMBOL_GPL(__ktau_slot_slow);

/*
 * System call @nr's first use: its slot by hashing, then remembered. A
 * full table is not counted here: the pop that follows counts the call.
 */
static noinline void ktau_sysslot_slow(struct ktau_task *kt, unsigned int nr)
{
	struct ktau_slot *s = ktau_slot_claim(kt, KTAU_ID_SYSCALL_BASE + nr);

	if (s)
		kt->sysslot[nr] = s - kt->slots + 1;
}

/*
 * Out of line, so that the fast path below needs no saved registers: a
 * frame that is not a listed system call's alone on the stack, a call's
 * first use of its slot, a clock that disagrees with itself.
 */
static noinline void ktau_syscall_exit_slow(struct ktau_task *kt)
{
	u64 tag = kt->stack[0].tag;

	if (kt->depth == 1 && tag < NR_syscalls && !kt->sysslot[tag])
		ktau_sysslot_slow(kt, tag);
	__ktau_pop(kt, KTAU_GROUP_SYSCALL);
}

static noinline __noipa void
__ktau_syscall_pop_extra(struct ktau_task *kt, struct ktau_slot *s, u64 incl,
			 u64 excl);

/*
 * The syscall group's exit. The common case, the system call's frame alone
 * on the stack, is taken without the general pop's index arithmetic.
 */
void __ktau_syscall_exit(void)
{
	struct ktau_task *kt = current->ktau;
	struct ktau_frame *f;
	struct ktau_slot *s;
	unsigned int i;
	u64 tag, incl, excl;

	BUILD_BUG_ON(KTAU_GROUP_SYSCALL != 0);
	f = &kt->stack[0];
	tag = f->tag;
	/* A valid number: a system call's frame of a listed call. */
	if (unlikely(kt->depth != 1 || tag >= NR_syscalls))
		goto slow;
	i = kt->sysslot[tag];
	if (unlikely(!i))
		goto slow;
	incl = ktau_clock() - f->start;
	excl = incl - f->child;
	/* A clock that disagrees with itself: the general pop clamps. */
	if (unlikely((s64)excl < 0))
		goto slow;
	s = &kt->slots[i - 1];
	local64_add(incl, &s->incl);
	smp_wmb();	/* incl before excl, pairs with ktau_slot_read() */
	local64_add(excl, &s->excl);
	smp_wmb();	/* excl before count, pairs with ktau_slot_read() */
	local64_inc(&s->count);
	WRITE_ONCE(kt->depth, 0);
	if (ktau_extra_on() && ktau_pop_extra_wanted(kt, KTAU_GROUP_SYSCALL))
		__ktau_syscall_pop_extra(kt, s, incl, excl);
	return;
slow:
	ktau_syscall_exit_slow(kt);
}

/*
 * Close the frame on top if it is @group's, past (dropping) frames left
 * from interrupts that are over; interrupts off.
 */
static void ktau_pop_if_top(struct ktau_task *kt, unsigned int group)
{
	unsigned int d = kt->depth;
	u64 ctx = ktau_ctx(group);
	int i;

	if (!d)
		return;
	if (d > KTAU_STACK_DEPTH) {
		__ktau_pop(kt, group);
		return;
	}
	for (i = (int)d - 1; i >= 0; i--)
		if ((kt->stack[i].tag & KTAU_TAG_CTX_MASK) <= ctx)
			break;
	if (i < 0 || !ktau_tag_is(kt->stack[i].tag, group))
		return;
	if (i != (int)d - 1) {
		ktau_drop_above(kt, i, d);
		kt->depth = i + 1;
	}
	__ktau_pop(kt, group);
}

/*
 * For exits whose entry may not have happened: a task's first run (it
 * never entered the scheduler), a return to user space that delivered no
 * signal.
 */
static void ktau_stop_if_top(unsigned int group)
{
	struct ktau_task *kt = current->ktau;
	unsigned long flags;

	if (unlikely(!kt))
		return;
	local_irq_save(flags);
	ktau_pop_if_top(kt, group);
	local_irq_restore(flags);
}

/* After signal delivery: close its frame, if ktau_signal_enter() opened one. */
void __ktau_signal_exit(void)
{
	ktau_stop_if_top(KTAU_GROUP_SIGNAL);
}

void __ktau_start(unsigned int group, unsigned int id)
{
	struct ktau_task *kt = current->ktau;
	unsigned long flags;

	if (unlikely(!kt) || in_nmi())
		return;
	/*
	 * A dynamic point's ID comes from outside: only registered ones. Not
	 * KTAU_ID_NONE, whose frame would be charged to a free slot that
	 * nothing then claims or cleans (see ktau_task_empty()).
	 */
	if (group == KTAU_GROUP_DYNAMIC &&
	    unlikely(id == KTAU_ID_NONE || id >= ktau_nr_ids())) {
		/*
		 * Charged to "[other]", so that its stop closes this frame;
		 * deferred: the caller may hold a runqueue lock.
		 */
		printk_deferred_once("ktau: %pS started point %u, which is not registered\n",
				     (void *)_RET_IP_, id);
		id = KTAU_ID_OTHER;
	}
	local_irq_save(flags);
	ktau_push(kt, group, id);
	local_irq_restore(flags);
}
EXPORT_SYMBOL_GPL(__ktau_start);

void __ktau_stop(unsigned int group)
{
	struct ktau_task *kt = current->ktau;
	unsigned long flags;

	if (unlikely(!kt) || in_nmi())
		return;
	local_irq_save(flags);
	__ktau_pop(kt, group);
	local_irq_restore(flags);
}
EXPORT_SYMBOL_GPL(__ktau_stop);

/* A traced call's record: inline when it fits. */
static __always_inline void ktau_trace_call(struct ktau_tbuf *b,
					    unsigned int group, u32 id,
					    u64 start, u64 end,
					    unsigned int depth)
{
	if (!ktau_trace_try(b, group, id, start, end, depth))
		ktau_trace_put_slow(b, start, end, id, depth, KTAU_TRACE_CALL);
}

/*
 * The inclusive time the closed frame @f charged its slot: a routine that
 * recursed charged f->dup (__ktau_pop_recursive()). Only those two flags:
 * a dynamic frame's tag also holds its generation, and dup is not written
 * for a frame that did not recurse.
 */
static __always_inline u64 ktau_pop_incl_add(struct ktau_frame *f, u64 incl)
{
	return f->tag & (KTAU_TAG_RECURSIVE | KTAU_TAG_HASREC) ? f->dup : incl;
}

/* The pop's extra work with a handler, or the trace and the shared page. */
static noinline __noipa void
__ktau_pop_notify(struct ktau_task *kt, struct ktau_slot *s,
		  struct ktau_frame *f, unsigned int group, u64 incl, u64 excl)
{
	struct ktau_tbuf *b = ktau_trace_buf(kt);

	if (kt->shared)
		ktau_shared_update(kt, s, group, ktau_pop_incl_add(f, incl),
				   excl);
	if (b)
		ktau_trace_call(b, group, s->id, f->start, f->start + incl,
				kt->depth);
	if (!ktau_handlers_want(group))
		return;
	/* A system call's start goes before its stop. */
	ktau_notify_syscall_start(kt, f);
	__ktau_notify(KTAU_HEV_STOP, group, ktau_frame_id(f->tag, group),
		      f->start + incl, incl);
}

/*
 * The shared page alone, the zero-syscall path of every user-level timer:
 * a leaf that saves no register for calls it does not make.
 */
static noinline __noipa void
__ktau_pop_shared(struct ktau_task *kt, struct ktau_slot *s,
		  struct ktau_frame *f, unsigned int group, u64 incl, u64 excl)
{
	ktau_shared_update(kt, s, group, ktau_pop_incl_add(f, incl), excl);
}

/*
 * The work after a pop beyond the task's table, while ktau_extra_key is
 * on and ktau_pop_extra_wanted(): the task's shared page, the trace and
 * the handlers. @f is the closed frame, still intact. Handlers first,
 * then kt->xmode tells the common cases apart: the shared page alone,
 * the trace alone. The shared page's test comes before the trace's and
 * is the same with CONFIG_KTAU_TRACE=n, so that trace mode compiled in
 * costs profile mode nothing, shared pages included. A traced call that
 * needs neither the shared page nor a handler writes its record inline
 * (at most the trace's slow path, as a tail call).
 */
static __always_inline void ktau_pop_extra(struct ktau_task *kt,
					   struct ktau_slot *s,
					   struct ktau_frame *f,
					   unsigned int group, u64 incl,
					   u64 excl)
{
	struct ktau_tbuf *b;
	u16 x;

	if (unlikely(ktau_handlers_want(group))) {
		__ktau_pop_notify(kt, s, f, group, incl, excl);
		return;
	}
	x = READ_ONCE(kt->xmode);
	if (x == KTAU_XMODE_SHARED) {
		__ktau_pop_shared(kt, s, f, group, incl, excl);
		return;
	}
	if (x == KTAU_XMODE_TRACE) {
		b = ktau_trace_buf(kt);
		if (b)
			ktau_trace_call(b, group, s->id, f->start,
					f->start + incl, kt->depth);
		return;
	}
	__ktau_pop_notify(kt, s, f, group, incl, excl);
}

/*
 * The extra work's entry points are opaque to their callers (noinline;
 * and with GCC __noipa: no register or signature knowledge across the
 * call), so that the hooks compile the same whatever the extra work
 * holds, with or without trace mode.
 */
noinline __noipa void __ktau_pop_extra(struct ktau_task *kt,
				       struct ktau_slot *s,
				       struct ktau_frame *f,
				       unsigned int group, u64 incl, u64 excl)
{
	ktau_pop_extra(kt, s, f, group, incl, excl);
}

/*
 * The same for a system call's exit, with the arguments where
 * __ktau_syscall_exit() has them: the call of __ktau_pop_extra() made it
 * copy incl out of the register that passes @f on its common path, one
 * instruction per system call while the key is off.
 */
static noinline __noipa void
__ktau_syscall_pop_extra(struct ktau_task *kt, struct ktau_slot *s, u64 incl,
			 u64 excl)
{
	ktau_pop_extra(kt, s, &kt->stack[0], KTAU_GROUP_SYSCALL, incl, excl);
}

/*
 * Close the nearest frame of (@group, @id) opened in context @ctx (what
 * ktau_ctx() gave at the routine's entry) and drop the frames above it,
 * which were left open: for exits that know which routine ends, such as a
 * dynamic probe's return. The routine may end in another context than it
 * began in (__local_bh_disable_ip() enters the task's and returns in the
 * softirq handling it began).
 */
void __ktau_stop_id(unsigned int group, u32 id, u64 ctx)
{
	struct ktau_task *kt = current->ktau;
	unsigned long flags;
	unsigned int d;
	u64 cur;
	int i;

	if (unlikely(!kt) || in_nmi())
		return;
	local_irq_save(flags);
	d = kt->depth;
	if (d > KTAU_STACK_DEPTH) {
		if (d != KTAU_DEPTH_DEAD)
			kt->depth = d - 1;
		goto out;
	}
	i = ktau_find_open(kt, d, KTAU_TAG(group, id) | ctx,
			   ~KTAU_TAG_FLAGS | KTAU_TAG_CTX_MASK, ctx);
	if (i < 0) {
		ktau_count_unmatched(kt, 1);
		goto out;
	}
	ktau_drop_above(kt, i, d);
	kt->depth = i + 1;
	/* Closed as a frame of the context it ends in. */
	cur = ktau_ctx(group);
	if (cur != ctx)
		WRITE_ONCE(kt->stack[i].tag,
			   (kt->stack[i].tag & ~KTAU_TAG_CTX_MASK) | cur);
	__ktau_pop(kt, group);
out:
	local_irq_restore(flags);
}
EXPORT_SYMBOL_GPL(__ktau_stop_id);

/*
 * The frame at @d, of a routine that recursed, ends after @incl: the
 * inclusive time its slot gains. A frame with the same routine nested in
 * it (HASREC) gains what those did not charge; a frame nested in another
 * of its routine (RECURSIVE) tells that one what it charged.
 */
u64 __ktau_pop_recursive(struct ktau_task *kt, unsigned int d, u64 incl)
{
	struct ktau_frame *f = &kt->stack[d];
	u64 add = incl, tag = f->tag & ~KTAU_TAG_FLAGS;
	int i;

	if (f->tag & KTAU_TAG_HASREC)
		add -= min(f->dup, incl);
	if (!(f->tag & KTAU_TAG_RECURSIVE)) {
		f->dup = add;	/* for __ktau_pop_extra() */
		return add;
	}
	for (i = (int)d - 1; i >= 0; i--) {
		struct ktau_frame *o = &kt->stack[i];

		if ((o->tag & ~KTAU_TAG_FLAGS) == tag) {
			if (o->tag & KTAU_TAG_HASREC)
				o->dup += incl;
			break;
		}
	}
	f->dup = add;	/* for __ktau_pop_extra() */
	return add;
}
EXPORT_SYMBOL_GPL(__ktau_pop_recursive);

/* An event's extra work; opaque to its caller as the pop's is. */
static noinline __noipa void
__ktau_event_extra(struct ktau_task *kt, struct ktau_slot *s,
		   unsigned int group, u32 id)
{
	if (kt->shared)
		ktau_shared_update(kt, s, group, 0, 0);
	if (ktau_trace_buf(kt))
		ktau_trace_event(kt, group, s->id);
	if (kt->depth)
		ktau_notify_syscall_start(kt, &kt->stack[0]);
	if (ktau_handlers_want(group))
		__ktau_notify(KTAU_HEV_EVENT, group, id, ktau_clock(), 0);
}

/* An event: one more call of @id, with no time. */
void __ktau_event(unsigned int group, u32 id)
{
	struct ktau_task *kt = current->ktau;
	unsigned long flags;
	struct ktau_slot *s;

	if (unlikely(!kt) || in_nmi() || id == KTAU_ID_NONE ||
	    id >= ktau_nr_ids() || READ_ONCE(kt->depth) >= KTAU_DEPTH_DEAD)
		return;
	local_irq_save(flags);
	s = &kt->slots[id & kt->mask];
	if (unlikely(s->id != id))
		s = __ktau_slot_slow(kt, id);
	local64_inc(&s->count);
	/* A handler of the group, or of the system call it is inside. */
	if (ktau_extra_on() &&
	    (READ_ONCE(kt->xmode) ||
	     (READ_ONCE(ktau_handler_groups) &
	      (BIT(group) | BIT(KTAU_GROUP_SYSCALL)))))
		__ktau_event_extra(kt, s, group, id);
	local_irq_restore(flags);
}
EXPORT_SYMBOL_GPL(__ktau_event);

DEFINE_PER_CPU(struct ktau_site *, ktau_irq_hint);

static u32 ktau_site_id(struct ktau_site *site)
{
	int id = READ_ONCE(site->id);

	if (unlikely(!id)) {
		const char *name = site->name;

		if (!strncmp(name, "sysvec_", 7))
			name += 7;
		id = ktau_register_once(&site->id, name, site->group);
		if (id <= 0)
			return KTAU_ID_IRQ;
	}
	return id;
}

void __ktau_irq_enter(void)
{
	struct ktau_task *kt = current->ktau;
	struct ktau_site *site = __this_cpu_read(ktau_irq_hint);
	u32 id = KTAU_ID_IRQ;

	if (site) {
		__this_cpu_write(ktau_irq_hint, NULL);
		id = ktau_site_id(site);
	}
	if (likely(kt))
		ktau_push(kt, KTAU_GROUP_IRQ, id);
}

void __ktau_irq_exit(void)
{
	struct ktau_task *kt = current->ktau;

	if (likely(kt))
		__ktau_pop(kt, KTAU_GROUP_IRQ);
}

/* Give the interrupt in progress (still "irq") the ID of its source. */
static void ktau_irq_name(u32 id)
{
	struct ktau_task *kt = current->ktau;
	unsigned int d;

	if (unlikely(!kt))
		return;
	d = kt->depth;
	if (d && d <= KTAU_STACK_DEPTH &&
	    kt->stack[d - 1].tag == (KTAU_TAG(KTAU_GROUP_IRQ, KTAU_ID_IRQ) |
				     KTAU_TAG_CTX(KTAU_CTX_HARDIRQ)))
		WRITE_ONCE(kt->stack[d - 1].tag,
			   KTAU_TAG(KTAU_GROUP_IRQ, id) |
			   KTAU_TAG_CTX(KTAU_CTX_HARDIRQ));
}

void __ktau_irq_desc(struct irq_desc *desc)
{
	ktau_irq_name(ktau_irq_source(irq_desc_get_irq(desc), desc->action));
}

/* __schedule(), interrupts off: another task takes the CPU. */
void __ktau_sched_out(bool blocked)
{
	struct ktau_task *kt = current->ktau;

	if (unlikely(!kt))
		return;
	ktau_push(kt, KTAU_GROUP_SCHED,
		  blocked ? KTAU_ID_SCHED_VOL : KTAU_ID_SCHED_INVOL);
#ifdef CONFIG_X86_TSC
	if (static_branch_unlikely(&ktau_rebase_key))
		ktau_rebase_out(kt);
#endif
}

/*
 * finish_task_switch(), interrupts off, runqueue locked: the task runs
 * again (or for the first time: then it has no frame to close).
 */
void __ktau_sched_in(void)
{
	if (ktau_rebase_on())
		__ktau_rebase_in();
	ktau_stop_if_top(KTAU_GROUP_SCHED);
}

/*
 * KVM. A vCPU thread's frames, in its KVM_RUN system call: guest mode from
 * the entry to the exit, then the exit, until the next entry or the end of
 * KVM_RUN, with what the host does for it (interrupts, the scheduler while
 * the vCPU halts) nested in it. Interrupts are off at entry and exit.
 */

static_assert(KTAU_KVM_CODES == 0x200);

/* Close the KVM frame on top, guest mode or an exit, if there is one. */
static void ktau_kvm_pop(struct ktau_task *kt)
{
	ktau_pop_if_top(kt, KTAU_GROUP_KVM);
}

/* The index of exit @code in ids[], or KTAU_KVM_CODES: none. */
static unsigned int ktau_kvm_index(unsigned long code)
{
	if (code < 0x100)
		return code;
	if (code - 0x400 < 0x100)
		return 0x100 + code - 0x400;
	return KTAU_KVM_CODES;
}

/**
 * ktau_kvm_exits_register - name the exit reasons of a vendor module
 * @x: its table, from DEFINE_KTAU_KVM_EXITS()
 *
 * Registers "kvm_exit:<NAME>" for every reason in @x's names, from the
 * module's hardware setup, so that the exit hook, which runs with the
 * guest's state loaded, only looks IDs up. A module loaded again gets the
 * same IDs. A reason without a name, or without an ID left, is counted
 * under KTAU_ID_KVM_EXIT.
 */
void ktau_kvm_exits_register(struct ktau_kvm_exits *x)
{
	char name[KTAU_NAME_LEN];
	unsigned int k, i, n;
	const char *p;

	for (k = 0; k < x->nr_names; k++) {
		i = ktau_kvm_index(x->names[k].code);
		if (i >= KTAU_KVM_CODES || READ_ONCE(x->ids[i]))
			continue;
		n = strscpy(name, "kvm_exit:", sizeof(name));
		/* One word, as every routine name: "PF excp" is PF_EXCP. */
		for (p = x->names[k].name; *p && n < sizeof(name) - 1; p++)
			name[n++] = isalnum(*p) ? toupper(*p) : '_';
		name[n] = '\0';
		ktau_register_name_once(&x->ids[i], name, KTAU_GROUP_KVM);
	}
}
EXPORT_SYMBOL_GPL(ktau_kvm_exits_register);

/*
 * The common case at an exit and at an entry: the KVM frame on top (guest
 * mode, or the exit) ends and the next begins in its place, with one
 * clock read and no search of the frames below. Anything else (no KVM
 * frame on top, a clock that disagrees with itself, a shared page or
 * handlers to tell) takes the general pop and push.
 */
static __always_inline bool ktau_kvm_switch(struct ktau_task *kt, u32 next)
{
	unsigned int d = kt->depth - 1;
	struct ktau_frame *f;
	struct ktau_slot *s;
	u64 now, incl, excl;
	u32 id;

	if (unlikely(d >= KTAU_STACK_DEPTH) || ktau_extra_on())
		return false;
	f = &kt->stack[d];
	if (unlikely(!ktau_tag_is(f->tag, KTAU_GROUP_KVM)))
		return false;
	now = ktau_clock();
	incl = now - f->start;
	excl = incl - f->child;
	if (unlikely((s64)excl < 0))
		return false;
	id = KTAU_TAG_ID(f->tag);
	s = &kt->slots[id & kt->mask];
	if (unlikely(s->id != id))
		s = __ktau_slot_slow(kt, id);
	local64_add(incl, &s->incl);
	smp_wmb();	/* incl before excl, pairs with ktau_slot_read() */
	local64_add(excl, &s->excl);
	smp_wmb();	/* excl before count, pairs with ktau_slot_read() */
	local64_inc(&s->count);
	if (d)
		kt->stack[d - 1].child += incl;
	f->child = 0;
	f->start = now;
	/* Last: a sample in an NMI takes the routine from the tag. */
	WRITE_ONCE(f->tag, KTAU_TAG(KTAU_GROUP_KVM, next));
	return true;
}

void __ktau_kvm_entry(void)
{
	struct ktau_task *kt = current->ktau;

	lockdep_assert_irqs_disabled();
	if (unlikely(!kt))
		return;
	if (ktau_kvm_switch(kt, KTAU_ID_KVM_GUEST))
		return;
	ktau_kvm_pop(kt);
	ktau_push(kt, KTAU_GROUP_KVM, KTAU_ID_KVM_GUEST);
}
EXPORT_SYMBOL_GPL(__ktau_kvm_entry);

void __ktau_kvm_exit(struct ktau_kvm_exits *x, unsigned long code)
{
	struct ktau_task *kt = current->ktau;
	unsigned int i;
	u32 id = 0;

	lockdep_assert_irqs_disabled();
	if (unlikely(!kt))
		return;
	i = ktau_kvm_index(code);
	if (likely(i < KTAU_KVM_CODES))
		id = READ_ONCE(x->ids[i]);
	if (unlikely(!id))
		id = KTAU_ID_KVM_EXIT;
	if (ktau_kvm_switch(kt, id))
		return;
	ktau_kvm_pop(kt);
	ktau_push(kt, KTAU_GROUP_KVM, id);
}
EXPORT_SYMBOL_GPL(__ktau_kvm_exit);

void __ktau_kvm_run_end(void)
{
	struct ktau_task *kt = current->ktau;
	unsigned long flags;

	if (unlikely(!kt))
		return;
	local_irq_save(flags);
	ktau_kvm_pop(kt);
	local_irq_restore(flags);
}
EXPORT_SYMBOL_GPL(__ktau_kvm_run_end);
