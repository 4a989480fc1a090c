// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tests of how KTAU matches a routine's exit with its entry across the
 * contexts a task's frames come from: the task itself, a softirq handler
 * run on top of it, a hard interrupt on top of either.
 *
 * A group switched on or off while a routine is in progress leaves an
 * entry without its exit, or an exit without its entry, in whatever
 * context that routine ran. Each case below makes such a sequence by
 * calling the hooks' out-of-line halves (__ktau_start(), __ktau_stop()) as
 * the inline hooks do when their group is on, in the loading task, in a
 * BH work item run on top of it (softirq) and in an irq_work run on top
 * of either (hard interrupt), and checks the loader's own profile
 * afterwards: the calls and inclusive time of signal_delivery (a routine
 * that never runs in an interrupt, nor in a task inside a system call),
 * the exits counted as unmatched, the depth of the stack. Interrupts that
 * come meanwhile open and close their own frames as usual; the checks
 * hold whichever groups are on, as long as no group is switched while the
 * module loads (a switch in progress suspends the unmatched count).
 *
 * Loading leaves those calls, and the unmatched frames the cases make
 * (25), in the loader's profile and the system's totals. It fails with
 * EINVAL when a check fails (the kernel log says which case) and ENODEV
 * when the loader has no profile of its own.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/interrupt.h>
#include <linux/workqueue.h>
#include <linux/irq_work.h>
#include <linux/ktime.h>
#include <linux/ktau.h>
#include <linux/module.h>

#define KTAU_TEST_GROUP	KTAU_GROUP_SIGNAL
#define KTAU_TEST_ID	KTAU_ID_SIGNAL
/* Long beside an interrupt's own time, so that a wrong frame shows. */
#define KTAU_TEST_WAIT_US	1000
#define KTAU_TEST_PILE		20

static struct task_struct *ktau_test_task;
static struct ktau_task *ktau_test_kt;
static bool ktau_test_wrong_ctx;

struct ktau_test_state {
	u64 count;
	u64 incl;
	u64 unmatched;
	u64 stack_overflows;
	unsigned int depth;
};

static void ktau_test_state(struct ktau_test_state *st)
{
	struct ktau_task *kt = ktau_test_kt;
	unsigned int i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i <= kt->mask; i++) {
		if (kt->slots[i].id == KTAU_TEST_ID) {
			st->count = local64_read(&kt->slots[i].count);
			st->incl = local64_read(&kt->slots[i].incl);
		}
	}
	st->unmatched = kt->unmatched;
	st->stack_overflows = kt->stack_overflows;
	st->depth = kt->depth;
}

/* Run @fn in a hard interrupt on this CPU; interrupts must be on. */
static void (*ktau_test_hard_fn)(void);
static bool ktau_test_hard_done;

static void ktau_test_hard(struct irq_work *w)
{
	if (current == ktau_test_task && in_hardirq())
		ktau_test_hard_fn();
	else
		ktau_test_wrong_ctx = true;
	WRITE_ONCE(ktau_test_hard_done, true);
}

static struct irq_work ktau_test_iw = IRQ_WORK_INIT_HARD(ktau_test_hard);

/* Wait for a BH work item or irq_work: a second at most, then the case fails. */
static void ktau_test_wait(bool *done)
{
	u64 until = ktime_get_ns() + NSEC_PER_SEC;

	while (!READ_ONCE(*done)) {
		if (ktime_get_ns() > until) {
			ktau_test_wrong_ctx = true;
			return;
		}
		cpu_relax();
	}
}

static void ktau_test_in_hardirq(void (*fn)(void))
{
	unsigned long flags;

	ktau_test_hard_fn = fn;
	WRITE_ONCE(ktau_test_hard_done, false);
	local_irq_save(flags);
	irq_work_queue(&ktau_test_iw);
	local_irq_restore(flags);
	ktau_test_wait(&ktau_test_hard_done);
}

/*
 * Run @fn in a softirq handler on top of the loading task: the BH work
 * item runs when bottom halves are enabled again.
 */
static void (*ktau_test_soft_fn)(void);
static bool ktau_test_soft_done;

static void ktau_test_soft(struct work_struct *w)
{
	if (current == ktau_test_task && in_serving_softirq())
		ktau_test_soft_fn();
	else
		ktau_test_wrong_ctx = true;
	WRITE_ONCE(ktau_test_soft_done, true);
}

static DECLARE_WORK(ktau_test_bh, ktau_test_soft);

static void ktau_test_in_softirq(void (*fn)(void))
{
	ktau_test_soft_fn = fn;
	WRITE_ONCE(ktau_test_soft_done, false);
	local_bh_disable();
	queue_work(system_bh_wq, &ktau_test_bh);
	local_bh_enable();
	ktau_test_wait(&ktau_test_soft_done);
}

static void ktau_test_start(void)
{
	__ktau_start(KTAU_TEST_GROUP, KTAU_TEST_ID);
}

static void ktau_test_stop(void)
{
	__ktau_stop(KTAU_TEST_GROUP);
}

/* The start of the frame whose inclusive time must cover the wait. */
static u64 ktau_test_t0, ktau_test_t1;

static void ktau_test_wait_long(void)
{
	udelay(KTAU_TEST_WAIT_US);
	ktau_test_t1 = ktau_clock();
}

/* A routine of each context nested in the one below: all match. */
static void ktau_test_nested_hard(void)
{
	ktau_test_start();
	ktau_test_stop();
}

static void ktau_test_nested_hard_long(void)
{
	ktau_test_start();
	udelay(KTAU_TEST_WAIT_US / 2);
	ktau_test_stop();
}

static void ktau_test_nested_soft(void)
{
	ktau_test_start();
	ktau_test_in_hardirq(ktau_test_nested_hard_long);
	ktau_test_stop();
}

/*
 * The same routine in each: recursion, so its inclusive time counts the
 * inner instances once, not more than the outer one's time.
 */
static unsigned int ktau_test_nested(void)
{
	ktau_test_t0 = ktau_clock();
	ktau_test_start();
	ktau_test_in_softirq(ktau_test_nested_soft);
	ktau_test_stop();
	ktau_test_t1 = ktau_clock();
	return 3;
}

/*
 * An exit in a hard interrupt whose entry did not run there (the group was
 * switched on inside it) closes nothing, not the frame of the context the
 * interrupt stopped, whether or not the interrupt has a frame of its own.
 */
static unsigned int ktau_test_hard_exit(void)
{
	ktau_test_start();
	ktau_test_t0 = ktau_clock();
	ktau_test_in_hardirq(ktau_test_stop);
	ktau_test_wait_long();
	ktau_test_stop();
	return 1;
}

/* The same over a softirq handler's routine. */
static void ktau_test_hard_exit_soft(void)
{
	ktau_test_start();
	ktau_test_t0 = ktau_clock();
	ktau_test_in_hardirq(ktau_test_stop);
	ktau_test_wait_long();
	ktau_test_stop();
}

static unsigned int ktau_test_hard_exit_in_soft(void)
{
	ktau_test_in_softirq(ktau_test_hard_exit_soft);
	return 1;
}

/*
 * A softirq handler's frame left open (its exit ran with the group off)
 * is not what a later handler's exit without entry closes: the task's
 * routine opened since stays, and the leftover is dropped.
 */
static void ktau_test_softirq_start(void)
{
	__ktau_start(KTAU_GROUP_SOFTIRQ, KTAU_ID_SOFTIRQ_BASE + TASKLET_SOFTIRQ);
}

static void ktau_test_softirq_stop(void)
{
	__ktau_stop(KTAU_GROUP_SOFTIRQ);
}

static unsigned int ktau_test_soft_leftover(void)
{
	ktau_test_in_softirq(ktau_test_softirq_start);
	ktau_test_start();
	ktau_test_t0 = ktau_clock();
	ktau_test_in_softirq(ktau_test_softirq_stop);
	ktau_test_wait_long();
	ktau_test_stop();
	return 1;
}

/*
 * In a hard interrupt with no frame of its own (the irq group off), a
 * routine's exit closes the interrupt's frame of that routine, above a
 * frame left open there, not the task's below.
 */
static void ktau_test_hard_under_leftover(void)
{
	ktau_test_start();
	__ktau_start(KTAU_GROUP_FAULT, KTAU_ID_FAULT_KERNEL);
	ktau_test_stop();
}

static unsigned int ktau_test_leftover_in_hard(void)
{
	ktau_test_start();
	ktau_test_t0 = ktau_clock();
	ktau_test_wait_long();
	ktau_test_in_hardirq(ktau_test_hard_under_leftover);
	ktau_test_stop();
	return 2;
}

/* Frames left open by hard interrupts do not pile up on the stack. */
static unsigned int ktau_test_hard_pile(void)
{
	int i;

	for (i = 0; i < KTAU_TEST_PILE; i++)
		ktau_test_in_hardirq(ktau_test_start);
	ktau_test_in_hardirq(ktau_test_nested_hard);
	return 1;
}

struct ktau_test_case {
	const char *name;
	unsigned int (*run)(void);	/* the calls of the routine it makes */
	unsigned int unmatched;
	bool timed;		/* a frame's time covers ktau_test_t0..t1 */
	bool bounded;		/* all the time is within ktau_test_t0..t1 */
};

static const struct ktau_test_case ktau_test_cases[] = {
	{ "nested", ktau_test_nested, 0, false, true },
	{ "hard_exit", ktau_test_hard_exit, 1, true },
	{ "hard_exit_in_soft", ktau_test_hard_exit_in_soft, 1, true },
	{ "soft_leftover", ktau_test_soft_leftover, 2, true },
	{ "leftover_in_hard", ktau_test_leftover_in_hard, 1, true },
	{ "hard_pile", ktau_test_hard_pile, KTAU_TEST_PILE, false },
};

static bool ktau_test_run(const struct ktau_test_case *c)
{
	struct ktau_test_state a, b;
	unsigned int calls;
	bool ok = true;

	ktau_test_wrong_ctx = false;
	preempt_disable();
	ktau_test_state(&a);
	calls = c->run();
	ktau_test_state(&b);
	preempt_enable();
	if (ktau_test_wrong_ctx) {
		pr_err("%s: a BH work item or irq_work did not run on top of the loader in time\n",
		       c->name);
		return false;
	}
	if (b.count - a.count != calls || b.unmatched - a.unmatched != c->unmatched ||
	    b.depth != a.depth || b.stack_overflows != a.stack_overflows) {
		pr_err("%s: calls %llu (want %u), unmatched %llu (want %u), depth %u -> %u, stack overflows %llu\n",
		       c->name, b.count - a.count, calls, b.unmatched - a.unmatched,
		       c->unmatched, a.depth, b.depth,
		       b.stack_overflows - a.stack_overflows);
		ok = false;
	}
	if (c->bounded && b.incl - a.incl > ktau_test_t1 - ktau_test_t0) {
		pr_err("%s: inclusive time %llu, more than the routine's %llu (clock units)\n",
		       c->name, b.incl - a.incl, ktau_test_t1 - ktau_test_t0);
		ok = false;
	}
	if (c->timed && b.incl - a.incl < ktau_test_t1 - ktau_test_t0) {
		pr_err("%s: inclusive time %llu, less than the routine's %llu (clock units)\n",
		       c->name, b.incl - a.incl, ktau_test_t1 - ktau_test_t0);
		ok = false;
	}
	return ok;
}

static int __init ktau_test_init(void)
{
	unsigned int i, failed = 0;

	ktau_test_task = current;
	ktau_test_kt = ktau_profile(current);
	if (!ktau_test_kt) {
		pr_err("the loading task has no profile of its own\n");
		return -ENODEV;
	}
	for (i = 0; i < ARRAY_SIZE(ktau_test_cases); i++) {
		failed += !ktau_test_run(&ktau_test_cases[i]);
		/* A late callback would run the next case's function. */
		if (ktau_test_wrong_ctx) {
			failed += ARRAY_SIZE(ktau_test_cases) - i - 1;
			break;
		}
	}
	cancel_work_sync(&ktau_test_bh);
	irq_work_sync(&ktau_test_iw);
	if (failed) {
		pr_err("%u of %zu cases failed\n", failed, ARRAY_SIZE(ktau_test_cases));
		return -EINVAL;
	}
	pr_info("all %zu cases passed\n", ARRAY_SIZE(ktau_test_cases));
	return 0;
}

static void __exit ktau_test_exit(void)
{
}

module_init(ktau_test_init);
module_exit(ktau_test_exit);
MODULE_DESCRIPTION("Tests of KTAU's frame matching across contexts");
MODULE_LICENSE("GPL");
