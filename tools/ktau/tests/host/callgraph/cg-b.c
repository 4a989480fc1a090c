// SPDX-License-Identifier: GPL-2.0
/* The second file of the call graph test program (see cg-a.c). */
#define NOINLINE __attribute__((noinline, noclone))

extern volatile int sink;
NOINLINE int leaf_b(int x) { sink = x; return x - 1; }	/* none */

/* Another static "helper": merged with cg-a.c's into one node. */
static NOINLINE int helper(int x) { return leaf_b(x) * 3; }	/* leaf_b */

NOINLINE int b_entry(int x) { return helper(x) + 1; }	/* helper */
