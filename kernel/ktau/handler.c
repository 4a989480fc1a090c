// SPDX-License-Identifier: GPL-2.0-only
/*
 * KTAU in-kernel handlers: other kernel code attaches its own tool to the
 * KTAU hooks. A handler gives a mask of groups and a function that is
 * called at each start, stop or event of those groups, in the context of
 * the hook: interrupts off, in any task, possibly with the runqueue lock
 * held (group sched). It must not sleep, take locks that may be held
 * around the scheduler or call KTAU.
 *
 * With no handler registered (and no shared page) the hooks pass over a
 * patched-out jump, ktau_extra_key. With one, they call __ktau_notify(),
 * which makes a static call to its function; with more, the static call
 * goes to ktau_handler_dispatch(), which calls each whose mask has the
 * group.
 */

#include <linux/mutex.h>
#include <linux/rculist.h>
#include "internal.h"

unsigned long ktau_handler_groups;
struct ktau_handler *ktau_handler_one;
DEFINE_STATIC_CALL(ktau_handler_call, ktau_handler_dispatch);

static LIST_HEAD(ktau_handlers);
static DEFINE_MUTEX(ktau_handler_lock);

/*
 * A start, stop or event of @group, which ktau_handlers_want(): to the
 * handler, or to the dispatcher. Called by the hooks.
 */
void __ktau_notify(unsigned int kind, unsigned int group, u32 id, u64 clock,
		   u64 incl)
{
	struct ktau_hevent ev;

	ev.kind = kind;
	ev.group = group;
	ev.id = id;
	ev.clock = clock;
	ev.incl = incl;
	static_call(ktau_handler_call)(READ_ONCE(ktau_handler_one), &ev);
}

/* More than one handler: each one whose mask has the event's group. */
void ktau_handler_dispatch(struct ktau_handler *unused,
			   const struct ktau_hevent *ev)
{
	struct ktau_handler *h;

	list_for_each_entry_rcu(h, &ktau_handlers, node)
		if (h->groups & BIT(ev->group))
			h->func(h, ev);
}

/*
 * Point the hooks at the handlers now registered; under the lock. A hook
 * reads ktau_handler_one, then makes the static call: the call goes to
 * the dispatcher, which ignores its argument, whenever ktau_handler_one
 * may be about to change, so that a handler's function is only ever
 * called with that handler.
 */
static void ktau_handler_update(void)
{
	struct ktau_handler *h, *one = NULL;
	unsigned long groups = 0;
	unsigned int n = 0;

	list_for_each_entry(h, &ktau_handlers, node) {
		groups |= h->groups;
		one = h;
		n++;
	}
	if (n != 1)
		one = NULL;
	static_call_update(ktau_handler_call, &ktau_handler_dispatch);
	/* Hooks run with interrupts off: RCU readers. */
	synchronize_rcu();
	/* Only the dispatcher, which checks each mask, sees new groups. */
	WRITE_ONCE(ktau_handler_groups, groups);
	WRITE_ONCE(ktau_handler_one, one);
	if (one) {
		synchronize_rcu();
		static_call_update(ktau_handler_call, one->func);
	}
}

/**
 * ktau_handler_register - call a function at each start, stop or event
 * @h: the handler: @h->func and @h->groups set; stays in use until
 *     ktau_handler_unregister() returns
 *
 * @h->func runs in the hooks' context (see the top of this file) with the
 * event: its kind, group, function ID, clock and, at a stop, the
 * routine's inclusive time in clock units.
 *
 * Group kvm has no handler events: its hooks run with the guest's state
 * loaded (between the guest's and the host's xsave, debug and speculation
 * control state, with GIF clear on AMD), where no other code may run.
 *
 * Return: 0, or -EINVAL for a handler without function or groups, or
 * with group kvm.
 */
int ktau_handler_register(struct ktau_handler *h)
{
	if (!h || !h->func || !h->groups ||
	    (h->groups & ~(BIT(KTAU_NR_GROUPS) - 1)) ||
	    (h->groups & BIT(KTAU_GROUP_KVM)))
		return -EINVAL;
	mutex_lock(&ktau_handler_lock);
	list_add_tail_rcu(&h->node, &ktau_handlers);
	ktau_handler_update();
	mutex_unlock(&ktau_handler_lock);
	static_branch_deferred_inc(&ktau_extra_key);
	return 0;
}
EXPORT_SYMBOL_GPL(ktau_handler_register);

/**
 * ktau_handler_unregister - stop calling a handler
 * @h: a handler given to ktau_handler_register()
 *
 * When this returns, @h->func is not running and will not be called.
 */
void ktau_handler_unregister(struct ktau_handler *h)
{
	static_branch_slow_dec_deferred(&ktau_extra_key);
	mutex_lock(&ktau_handler_lock);
	list_del_rcu(&h->node);
	ktau_handler_update();
	mutex_unlock(&ktau_handler_lock);
}
EXPORT_SYMBOL_GPL(ktau_handler_unregister);
