// SPDX-License-Identifier: GPL-2.0
/*
 * A small program with known calls, for the host test of the call graph
 * decoder (lib/callgraph.c): built with -pg -mfentry like a kernel,
 * -nostdlib -static, linked with cg-b.c. Each function's comment says
 * which callees the decoder must find.
 */
#define NOINLINE __attribute__((noinline, noclone))

/* ftrace's hook, called at every function's entry: never an edge. */
__asm__(".globl __fentry__\n.type __fentry__, @function\n__fentry__:\n\tret\n"
	".size __fentry__, .-__fentry__\n");

volatile int sink;

NOINLINE int leaf_a(int x) { sink = x; return x + 1; }	/* none */
NOINLINE int leaf_c(int x) { sink = x * 3; return x; }	/* none */
NOINLINE int tail_target(int x) { sink = x; return x * 5; }	/* none */
int b_entry(int x);

/* The helper of this file; cg-b.c has another "helper": one node. */
static NOINLINE int helper(int x) { return leaf_a(x) + 1; }	/* leaf_a */

NOINLINE int mid(int x) { return helper(x) * 2; }	/* helper */

/* A call, then a tail call (jmp): mid, tail_target. */
NOINLINE int top(int x)
{
	sink = mid(x);
	return tail_target(x + 1);
}

/* Through a pointer only: no edge to leaf_c. */
int (*volatile fp)(int) = leaf_c;
NOINLINE int indirect(int x) { return fp(x) + leaf_a(x); }	/* leaf_a */

/* The unlikely branch goes to coldy.cold: its call is coldy's. */
__attribute__((cold)) NOINLINE void cold_fn(void) { sink = -1; }
NOINLINE int coldy(int x)	/* cold_fn, leaf_a */
{
	if (__builtin_expect(x == 12345, 0)) {
		cold_fn();
		sink = 7;
	}
	return leaf_a(x);
}

/* Recursion is not an edge to itself. */
NOINLINE int rec(int x) { return x > 0 ? rec(x - 1) + (sink = x) : leaf_c(x); } /* leaf_c */

void _start(void)	/* top, indirect, coldy, rec, b_entry */
{
	sink = top(1) + indirect(2) + coldy(sink) + rec(sink) + b_entry(3);
	for (;;)
		__asm__ volatile("mov $60, %%eax; xor %%edi, %%edi; syscall" ::: "memory");
}
