// SPDX-License-Identifier: GPL-2.0
/*
 * A program whose names only debug information gives (c_sample_names_dwfl):
 * a static function, which a stripped program has no symbol for, and code
 * inlined into another function, whose call site has the line of the
 * marked statement (c_sample_lines_dwfl). It prints their addresses and
 * waits.
 */
#include <stdio.h>
#include <unistd.h>

static __attribute__((noinline)) int hidden_static(int x)
{
	return x * 7 + 3;
}

/* The address of the call to it (its return address less one). */
static __attribute__((noinline)) void *call_site(void)
{
	return (char *)__builtin_return_address(0) - 1;
}

static inline __attribute__((always_inline)) void *inlined_here(volatile int *acc)
{
	void *pc;

	*acc += 1;
	pc = call_site();	/* c_sample_lines_dwfl: the call site's line */
	*acc += 2;
	return pc;
}

__attribute__((noinline)) int outer_fn(int x, void **pc)
{
	volatile int acc = x;

	*pc = inlined_here(&acc);
	return acc;
}

int main(void)
{
	void *pc;
	int v = outer_fn(hidden_static(1), &pc);

	printf("%lx %lx %d\n", (unsigned long)hidden_static, (unsigned long)pc, v);
	fflush(stdout);
	pause();
	return 0;
}
