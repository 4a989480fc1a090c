/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * The CPython internals the sampler needs, behind a small interface: the
 * only place that knows the layout of a CPython version's frames
 * (pyframe311.c for 3.11; a 3.12 or 3.13 port adds pyframe312.c, ... and
 * selects it in setup.py). Everything here is async-signal-safe: plain
 * loads, no allocation, no reference counting, no GIL.
 */
#ifndef KTAU_PYFRAME_H
#define KTAU_PYFRAME_H

#include <stdint.h>

/* Bits of the header word of a walk. */
#define KTAU_PYWALK_TRUNCATED	0x1u	/* deeper than max: the outermost frames are cut */
#define KTAU_PYWALK_BAD		0x2u	/* a frame did not look like one: the walk stopped */
#define KTAU_PYWALK_DROPPED	0x4u	/* no room for the stack: a marker, no frames */
#define KTAU_PYWALK_FAULT	0x8u	/* a load of the walk faulted (with BAD): no frames */

/*
 * Walk the frame chain of thread state ts (a PyThreadState *, as void * so
 * that callers need no internal header), innermost first: for each frame
 * its code object (out[2 i]) and the offset in code units of the
 * instruction executing (out[2 i + 1]), at most max frames. Returns the
 * number of frames; *flags gets KTAU_PYWALK_*. Incomplete frames (being
 * set up) are skipped.
 */
int ktau_py_walk(const void *ts, uint64_t *out, int max, unsigned int *flags);

/*
 * Buffered mode (KTAU ABI 1.6): where the kernel finds the chain of thread
 * state ts at each sample (a user stack descriptor: base, then pointer
 * loads at deref_off[], frames linked at next_off, the words at
 * field_off[] kept: the code object and the instruction pointer).
 */
struct ktau_py_stack_layout {
	uint64_t base;
	uint32_t nderef, deref_off[2], next_off, nfields, field_off[2];
};
void ktau_py_stack_layout(const void *ts, struct ktau_py_stack_layout *l);
/*
 * The offset in code units of instruction pointer prev_instr in code object
 * co; KTAU_PY_OFF_BEFORE when it points before the first instruction (a
 * frame being set up).
 */
#define KTAU_PY_OFF_BEFORE	UINT64_MAX
uint64_t ktau_py_code_offset(uint64_t co, uint64_t prev_instr);
/*
 * Is a frame of code object co (a live PyCodeObject *, as const void *)
 * whose instruction is at off still being set up (CPython's
 * _PyFrame_IsIncomplete(): before the code's first traceable instruction)?
 * Buffered samples copy every frame of the chain; the signal walker skips
 * such frames itself. With the GIL, co pinned.
 */
int ktau_py_frame_incomplete(const void *co, uint64_t off);

/* The version the walker was written for ("3.11"): checked at import. */
extern const char ktau_py_walk_version[];

#endif
