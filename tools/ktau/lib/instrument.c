// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: -finstrument-functions. GCC and clang call these two at the
 * entry and exit of every function compiled with the option; each
 * function becomes a timer of the runtime (user.c), named at write time
 * from the ELF symbol tables (elfsym.c).
 *
 * The function address is mapped to its timer through a per-thread,
 * direct-mapped cache, then the registry's lock-free hash; only a
 * function never seen before takes the registry's lock, and while a
 * thread holds or waits for it, its signal handlers' events are dropped
 * (ktau__gen_busy) rather than deadlocked.
 * This file must not itself be compiled with -finstrument-functions;
 * the attribute keeps it safe if it is.
 */
#include "user-internal.h"

#define NOINSTR __attribute__((no_instrument_function))

void __cyg_profile_func_enter(void *fn, void *site) NOINSTR;
void __cyg_profile_func_exit(void *fn, void *site) NOINSTR;

static inline NOINSTR struct ktau_timer *fn_timer(struct kt_thread *th, void *fn)
{
	uintptr_t a = (uintptr_t)fn;
	unsigned int i = (unsigned int)((a >> 4) ^ (a >> 12)) & (KT_ICACHE - 1);
	struct ktau_timer *t = th->ic[i];

	if (t && t->addr == a)
		return t;
	t = ktau__timer_addr(a);
	if (t)
		th->ic[i] = t;
	return t;
}

/* An entry (stop 0) or exit (stop 1) of the function at fn. */
static inline __attribute__((always_inline)) NOINSTR void fn_event(void *fn, int stop)
{
	struct kt_thread *th = ktau__self();
	struct ktau_timer *t;

	if (th->state != KT_LIVE)
		return;
	if (ktau__gen_busy(th)) {
		th->d.dropped++;
		return;
	}
	t = fn_timer(th, fn);
	if (t)
		ktau__event(th, t, stop);
}

void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)site;
	fn_event(fn, 0);
}

void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	fn_event(fn, 1);
}
