// SPDX-License-Identifier: GPL-2.0-only
/*
 * KTAU function IDs: every instrumentation point has a small integer ID
 * with a group and a name. Fixed IDs and system calls (KTAU_ID_SYSCALL_BASE
 * plus the call's number) are registered at boot; interrupt sources when
 * first seen; dynamic points at run time. IDs are never reused within a
 * boot: an unregistered ID keeps its name and is only marked gone.
 *
 * Entries are written once, before the count of IDs is published with
 * release semantics, so readers need no lock.
 */

#include <linux/init.h>
#include <linux/jhash.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/interrupt.h>
#include <asm/syscall.h>
#include "internal.h"

const char * const ktau_group_names[KTAU_NR_GROUPS] = {
	[KTAU_GROUP_SYSCALL]	= "syscall",
	[KTAU_GROUP_IRQ]	= "irq",
	[KTAU_GROUP_SOFTIRQ]	= "softirq",
	[KTAU_GROUP_SCHED]	= "sched",
	[KTAU_GROUP_FAULT]	= "fault",
	[KTAU_GROUP_SIGNAL]	= "signal",
	[KTAU_GROUP_DYNAMIC]	= "dynamic",
	[KTAU_GROUP_KVM]	= "kvm",
};

/*
 * Dynamic points (probes, ktau_register_point()) may not take the last
 * IDs: they stay for interrupt sources and KVM exit reasons, which the
 * kernel names when it first sees them, so that a user who probes many
 * functions cannot leave them all under "irq" and "kvm_exit".
 */
#define KTAU_IDS_KEPT		256

struct ktau_func *ktau_funcs;
static unsigned int ktau_next_id;
/* Registrations refused for want of an ID: /proc/ktau/control's ids_full. */
static atomic_long_t ktau_ids_refused = ATOMIC_LONG_INIT(0);
static DEFINE_RAW_SPINLOCK(ktau_reg_lock);
/*
 * The IDs that ktau_register() gave, chained by a hash of their name, in
 * the order of their IDs, so that looking a name up under ktau_reg_lock
 * (interrupts off, from hard interrupt context for a new interrupt
 * source) visits the few IDs of its bucket, not the whole registry.
 * Entries are ID + 1; 0 ends a chain. Under ktau_reg_lock.
 */
#define KTAU_NAME_HASH_BITS	9
static u16 ktau_name_head[1 << KTAU_NAME_HASH_BITS];
static u16 ktau_name_next[KTAU_MAX_IDS];
/* Live points that modules registered (owner set). */
static atomic_t ktau_module_points = ATOMIC_INIT(0);
/* Serialises first sightings of a point (nests outside ktau_reg_lock). */
static DEFINE_RAW_SPINLOCK(ktau_once_lock);

unsigned int ktau_nr_ids(void)
{
	/* Pairs with the release in ktau_register(): entries are complete. */
	return smp_load_acquire(&ktau_next_id);
}

long ktau_ids_full(void)
{
	return atomic_long_read(&ktau_ids_refused);
}

int ktau_group_by_name(const char *name, size_t len)
{
	int g;

	for (g = 0; g < KTAU_NR_GROUPS; g++)
		if (strlen(ktau_group_names[g]) == len &&
		    !strncmp(ktau_group_names[g], name, len))
			return g;
	return -EINVAL;
}

static unsigned int ktau_name_hash(const char *name)
{
	return jhash(name, strlen(name), 0) & (BIT(KTAU_NAME_HASH_BITS) - 1);
}

/* Chain @id, the newest ID, at the end of its name's bucket. */
static void ktau_name_add(unsigned int id)
{
	u16 *link = &ktau_name_head[ktau_name_hash(ktau_funcs[id].name)];

	lockdep_assert_held(&ktau_reg_lock);
	while (*link)
		link = &ktau_name_next[*link - 1];
	*link = id + 1;
}

/* Set a fixed ID's entry in @funcs, at boot. */
static void __init ktau_set(struct ktau_func *funcs, unsigned int id,
			    const char *name, unsigned int group)
{
	strscpy(funcs[id].name, name, KTAU_NAME_LEN);
	funcs[id].group = group;
	funcs[id].live = 1;
}

/*
 * Give @name in @group the next free ID, owned by @owner (a module, NULL:
 * built-in code). Safe in any context but NMI: interrupt sources
 * register from hard interrupt context.
 */
static int __ktau_register(const char *name, unsigned int group,
			   struct module *owner)
{
	unsigned int limit = KTAU_MAX_IDS;
	unsigned long flags;
	int id;

	/* Pairs with the release in ktau_registry_init(). */
	if (!smp_load_acquire(&ktau_funcs) || group >= KTAU_NR_GROUPS ||
	    !name || !*name)
		return -EINVAL;
	if (group == KTAU_GROUP_DYNAMIC)
		limit -= KTAU_IDS_KEPT;
	raw_spin_lock_irqsave(&ktau_reg_lock, flags);
	id = ktau_next_id;
	if (id >= limit) {
		id = -ENOSPC;
		atomic_long_inc(&ktau_ids_refused);
	} else {
		strscpy(ktau_funcs[id].name, name, KTAU_NAME_LEN);
		ktau_funcs[id].group = group;
		ktau_funcs[id].live = 1;
		ktau_funcs[id].owner = owner;
		ktau_funcs[id].of_module = !!owner;
		if (owner)
			atomic_inc(&ktau_module_points);
		ktau_name_add(id);
		/* Publish the entry before its ID; see ktau_nr_ids(). */
		smp_store_release(&ktau_next_id, id + 1);
	}
	raw_spin_unlock_irqrestore(&ktau_reg_lock, flags);
	return id;
}

int ktau_register(const char *name, unsigned int group)
{
	return __ktau_register(name, group, NULL);
}

/**
 * __ktau_register_point - get a function ID for a dynamic instrumentation point
 * @name: name shown in /proc/ktau/functions and in profiles
 * @group: a KTAU_GROUP_* value, usually KTAU_GROUP_DYNAMIC
 * @owner: the module registering it (THIS_MODULE through
 *	ktau_register_point()), NULL for built-in code
 *
 * Only @owner may unregister the point; what a module leaves registered
 * is unregistered when it goes (ktau_registry_module_notify()). This
 * guards against mistakes, not against a module: modules are kernel code.
 *
 * Return: the new ID, or a negative errno (-ENOSPC when all IDs are used).
 */
int __ktau_register_point(const char *name, unsigned int group,
			  struct module *owner)
{
	return __ktau_register(name, group, owner);
}
EXPORT_SYMBOL_GPL(__ktau_register_point);

/*
 * A point that was registered and is gone, registered again under the
 * same name and group (a probe added a second time): its old ID, so that
 * the profiles of both times add up; otherwise a new ID. A gone ID whose
 * generation has wrapped to 0 (2^CONFIG_KTAU_GEN_BITS unregistrations) is
 * retired: a frame left open in its first registration would carry that
 * generation and look current again.
 */
static int ktau_find_or_register(const char *name, unsigned int group,
				 bool live_too)
{
	char want[KTAU_NAME_LEN];
	unsigned long flags;
	unsigned int h, id;

	/* The name as registered: cut to KTAU_NAME_LEN, hashed that way. */
	strscpy(want, name, sizeof(want));
	h = ktau_name_hash(want);
	raw_spin_lock_irqsave(&ktau_reg_lock, flags);
	for (id = ktau_name_head[h]; id--; id = ktau_name_next[id]) {
		struct ktau_func *f = &ktau_funcs[id];

		/*
		 * Not a module's point: live, the module could unregister
		 * it; gone, the name is the module's own.
		 */
		if (!f->of_module && (f->live ? live_too : f->gen != 0) &&
		    f->group == group && !strcmp(f->name, want)) {
			WRITE_ONCE(f->live, 1);
			raw_spin_unlock_irqrestore(&ktau_reg_lock, flags);
			return id;
		}
	}
	raw_spin_unlock_irqrestore(&ktau_reg_lock, flags);
	return ktau_register(name, group);
}

int ktau_register_again(const char *name, unsigned int group)
{
	return ktau_find_or_register(name, group, false);
}

static int __ktau_register_once(unsigned int *idp, const char *name,
				unsigned int group, bool reuse)
{
	unsigned long flags;
	int id;

	raw_spin_lock_irqsave(&ktau_once_lock, flags);
	id = READ_ONCE(*idp);
	if (!id) {
		id = reuse ? ktau_find_or_register(name, group, true) :
			     ktau_register(name, group);
		if (id > 0)
			WRITE_ONCE(*idp, id);
	}
	raw_spin_unlock_irqrestore(&ktau_once_lock, flags);
	return id;
}

/*
 * The ID of a point that registers when first seen, *@idp once set: two
 * CPUs that see the point at once get the same ID. Any context but NMI.
 */
int ktau_register_once(unsigned int *idp, const char *name, unsigned int group)
{
	return __ktau_register_once(idp, name, group, false);
}

/*
 * As ktau_register_once(), but a name already registered in @group keeps
 * its ID: a module loaded again names the same routines with the same IDs.
 */
int ktau_register_name_once(unsigned int *idp, const char *name,
			    unsigned int group)
{
	return __ktau_register_once(idp, name, group, true);
}

/*
 * Device interrupts are named "irq<N>:<action name>". The ID of IRQ N is
 * cached with the action it was named after (the low 32 bits of the
 * action's address above the ID, in one word that the interrupt path
 * reads whole), so that a number given to another device gets a new
 * name; the table covers every IRQ number of the boot (nr_irqs).
 */
static u64 *ktau_irq_ids;
static unsigned int ktau_nr_irq_ids;

static u64 ktau_irq_key(const struct irqaction *action, u32 id)
{
	return (u64)(u32)(unsigned long)action << 32 | id;
}

u32 ktau_irq_source(unsigned int irq, const struct irqaction *action)
{
	char name[KTAU_NAME_LEN];
	unsigned long flags;
	u64 key;
	int id;

	if (!ktau_irq_ids || irq >= ktau_nr_irq_ids)
		return KTAU_ID_IRQ;
	key = READ_ONCE(ktau_irq_ids[irq]);
	if (likely((u32)key && key == ktau_irq_key(action, (u32)key)))
		return (u32)key;

	raw_spin_lock_irqsave(&ktau_once_lock, flags);
	key = ktau_irq_ids[irq];
	if ((u32)key && key == ktau_irq_key(action, (u32)key)) {
		id = (u32)key;
	} else {
		snprintf(name, sizeof(name), "irq%u:%s", irq,
			 action && action->name ? action->name : "none");
		/* The same device again (a driver reloaded): its old ID. */
		id = ktau_find_or_register(name, KTAU_GROUP_IRQ, true);
		if (id > 0)
			WRITE_ONCE(ktau_irq_ids[irq], ktau_irq_key(action, id));
	}
	raw_spin_unlock_irqrestore(&ktau_once_lock, flags);
	return id > 0 ? id : KTAU_ID_IRQ;
}

/* @f's point is gone; under ktau_reg_lock. */
static void ktau_point_gone(struct ktau_func *f)
{
	lockdep_assert_held(&ktau_reg_lock);
	/* Frames still open with the old generation are dropped. */
	WRITE_ONCE(f->gen, (f->gen + 1) & KTAU_GEN_MASK);
	WRITE_ONCE(f->live, 0);
	if (f->owner)
		atomic_dec(&ktau_module_points);
	f->owner = NULL;
}

/**
 * __ktau_unregister_point - mark a dynamic point as gone
 * @id: an ID returned by ktau_register_point()
 * @owner: the module giving it up (THIS_MODULE through
 *	ktau_unregister_point()), NULL for built-in code
 *
 * The ID is not reused, so profiles that hold it stay meaningful. Only
 * the module that registered the point (built-in code for KTAU's own, a
 * probe's) may give it up: another's ID is refused with a line in the
 * log, so that a module cannot end a probe or another module's points.
 */
void __ktau_unregister_point(int id, struct module *owner)
{
	struct ktau_func *f;
	unsigned long flags;
	bool theirs;

	if (id < KTAU_ID_SYSCALL_BASE + NR_syscalls || id >= ktau_nr_ids())
		return;
	f = &ktau_funcs[id];
	raw_spin_lock_irqsave(&ktau_reg_lock, flags);
	/*
	 * Once: a second unregister would move a retired ID's generation
	 * off 0, and ktau_find_or_register() would give the ID out again.
	 */
	theirs = f->live && f->owner != owner;
	if (f->live && !theirs)
		ktau_point_gone(f);
	raw_spin_unlock_irqrestore(&ktau_reg_lock, flags);
	if (theirs)
		pr_warn_ratelimited("ktau: %s: point %d (%s) is not its own; not unregistered\n",
				    owner ? owner->name : "kernel", id, f->name);
}
EXPORT_SYMBOL_GPL(__ktau_unregister_point);

/*
 * A module going away: the points it left registered go with it, so that
 * their frames are dropped and no later module at the same address owns
 * them. Module unloading is rare and runs in process context; the scan
 * covers the dynamic IDs once.
 */
static int ktau_registry_module_notify(struct notifier_block *nb,
				       unsigned long action, void *data)
{
	struct module *mod = data;
	unsigned int id, nr, left = 0;
	unsigned long flags;

	/* Pairs with the release in ktau_registry_init(). */
	if (action != MODULE_STATE_GOING || !smp_load_acquire(&ktau_funcs))
		return NOTIFY_DONE;
	/* Most modules never register a point: no scan with interrupts off. */
	if (!atomic_read(&ktau_module_points))
		return NOTIFY_DONE;
	raw_spin_lock_irqsave(&ktau_reg_lock, flags);
	nr = ktau_next_id;
	for (id = KTAU_ID_SYSCALL_BASE + NR_syscalls; id < nr; id++) {
		struct ktau_func *f = &ktau_funcs[id];

		if (f->owner == mod && f->live) {
			ktau_point_gone(f);
			left++;
		}
	}
	raw_spin_unlock_irqrestore(&ktau_reg_lock, flags);
	if (left)
		pr_warn("ktau: %s left %u points registered; unregistered\n",
			mod->name, left);
	return NOTIFY_DONE;
}

static struct notifier_block ktau_registry_module_nb = {
	.notifier_call = ktau_registry_module_notify,
};

static int __init ktau_registry_module_init(void)
{
	return register_module_notifier(&ktau_registry_module_nb);
}
core_initcall(ktau_registry_module_init);

#ifdef CONFIG_X86_64
/* The name column of the system call table (kernel/ktau/Makefile). */
static const char * const ktau_syscall_names[] __initconst = {
#include "syscall_names.h"
};
#endif

/*
 * The name of system call @nr as user space knows it ("uname", as strace
 * and the man pages say), "ni_syscall" for a number the kernel does not
 * implement, "syscall_<nr>" where the table has no names.
 */
static void __init ktau_syscall_name(unsigned int nr, char *buf, size_t len)
{
#if defined(CONFIG_KALLSYMS) && defined(CONFIG_X86_64)
	char sym[KSYM_SYMBOL_LEN];
	const char *p;

	sprint_symbol_no_offset(sym, (unsigned long)sys_call_table[nr]);
	p = strstr(sym, "sys_");
	if (p && !strcmp(p + 4, "ni_syscall")) {
		strscpy(buf, "ni_syscall", len);
		return;
	}
#endif
#ifdef CONFIG_X86_64
	if (nr < ARRAY_SIZE(ktau_syscall_names) && ktau_syscall_names[nr]) {
		strscpy(buf, ktau_syscall_names[nr], len);
		return;
	}
#endif
	snprintf(buf, len, "syscall_%u", nr);
}

/*
 * The boot entries are written to an array that only becomes ktau_funcs
 * once complete, so that an interrupt source registering meanwhile (from
 * hard interrupt context) waits for the registry instead of racing it.
 */
int __init ktau_registry_init(void)
{
	char name[KTAU_NAME_LEN];
	struct ktau_func *funcs;
	unsigned int i;

	BUILD_BUG_ON(KTAU_ID_SYSCALL_BASE + NR_syscalls + KTAU_IDS_KEPT >= KTAU_MAX_IDS);
	BUILD_BUG_ON(KTAU_ID_SOFTIRQ_BASE + NR_SOFTIRQS > KTAU_ID_SYSCALL_BASE);

	funcs = kcalloc(KTAU_MAX_IDS, sizeof(*funcs), GFP_KERNEL);
	if (!funcs)
		return -ENOMEM;

	ktau_set(funcs, KTAU_ID_OTHER, "[other]", KTAU_GROUP_DYNAMIC);
	ktau_set(funcs, KTAU_ID_IRQ, "irq", KTAU_GROUP_IRQ);
	ktau_set(funcs, KTAU_ID_SCHED_VOL, "sched_blocked", KTAU_GROUP_SCHED);
	ktau_set(funcs, KTAU_ID_SCHED_INVOL, "sched_preempted", KTAU_GROUP_SCHED);
	ktau_set(funcs, KTAU_ID_FAULT_USER, "page_fault_user", KTAU_GROUP_FAULT);
	ktau_set(funcs, KTAU_ID_FAULT_KERNEL, "page_fault_kernel", KTAU_GROUP_FAULT);
	ktau_set(funcs, KTAU_ID_SIGNAL, "signal_delivery", KTAU_GROUP_SIGNAL);
	ktau_set(funcs, KTAU_ID_SYSCALL_BAD, "syscall_invalid", KTAU_GROUP_SYSCALL);
	ktau_set(funcs, KTAU_ID_SYSCALL_COMPAT, "syscall_compat", KTAU_GROUP_SYSCALL);
	ktau_set(funcs, KTAU_ID_USER, "user_mode", KTAU_GROUP_DYNAMIC);
	ktau_set(funcs, KTAU_ID_KERNEL, "kernel_other", KTAU_GROUP_DYNAMIC);
	ktau_set(funcs, KTAU_ID_SOFTIRQ, "softirq", KTAU_GROUP_SOFTIRQ);
	ktau_set(funcs, KTAU_ID_KVM_GUEST, "kvm_guest", KTAU_GROUP_KVM);
	ktau_set(funcs, KTAU_ID_KVM_EXIT, "kvm_exit", KTAU_GROUP_KVM);
	for (i = 0; i < NR_SOFTIRQS; i++) {
		snprintf(name, sizeof(name), "softirq_%s", softirq_to_name[i]);
		ktau_set(funcs, KTAU_ID_SOFTIRQ_BASE + i, name, KTAU_GROUP_SOFTIRQ);
	}
	for (i = 0; i < NR_syscalls; i++) {
		ktau_syscall_name(i, name, sizeof(name));
		/* Unimplemented numbers keep their ID but are not listed. */
		if (!strcmp(name, "ni_syscall"))
			continue;
		ktau_set(funcs, KTAU_ID_SYSCALL_BASE + i, name, KTAU_GROUP_SYSCALL);
	}
	ktau_next_id = KTAU_ID_SYSCALL_BASE + NR_syscalls;
	/* nr_irqs is fixed once the interrupt code is set up, before us. */
	ktau_irq_ids = kcalloc(nr_irqs, sizeof(*ktau_irq_ids), GFP_KERNEL);
	if (ktau_irq_ids)
		ktau_nr_irq_ids = nr_irqs;
	/* Publish the entries and the next ID; see ktau_nr_ids(). */
	smp_store_release(&ktau_funcs, funcs);
	return 0;
}
