// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * CPython 3.11 frame layout (Include/internal/pycore_frame.h, which
 * Debian's python3.11-dev ships): PyThreadState.cframe->current_frame, a
 * chain of _PyInterpreterFrame linked by 'previous', each with f_code and
 * prev_instr. The only file built with Py_BUILD_CORE.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>

#include "pyframe.h"

#if PY_VERSION_HEX < 0x030b0000 || PY_VERSION_HEX >= 0x030c0000
#error "pyframe311.c is for CPython 3.11; add a pyframe file for this version"
#endif

const char ktau_py_walk_version[] = "3.11";

void ktau_py_stack_layout(const void *tsv, struct ktau_py_stack_layout *l)
{
	const PyThreadState *ts = tsv;

	memset(l, 0, sizeof(*l));
	l->base = (uint64_t)(uintptr_t)&ts->cframe;
	l->nderef = 2;
	l->deref_off[0] = 0;
	l->deref_off[1] = offsetof(_PyCFrame, current_frame);
	l->next_off = offsetof(_PyInterpreterFrame, previous);
	l->nfields = 2;
	l->field_off[0] = offsetof(_PyInterpreterFrame, f_code);
	l->field_off[1] = offsetof(_PyInterpreterFrame, prev_instr);
}

uint64_t ktau_py_code_offset(uint64_t co, uint64_t prev_instr)
{
	uint64_t code = co + offsetof(PyCodeObject, co_code_adaptive);

	/* 3.11 starts a frame at prev_instr = first instruction - 1. */
	return prev_instr >= code ? (prev_instr - code) / sizeof(_Py_CODEUNIT) :
				    KTAU_PY_OFF_BEFORE;
}

int ktau_py_frame_incomplete(const void *co, uint64_t off)
{
	/*
	 * _PyFrame_IsIncomplete() also exempts frames owned by a generator,
	 * which the descriptor does not copy: a generator's frame on the
	 * stack has run past its first traceable instruction but for the few
	 * instructions after its first resume, where a sample loses it.
	 */
	return off == KTAU_PY_OFF_BEFORE ||
	       off < (uint64_t)((const PyCodeObject *)co)->_co_firsttraceable;
}

int ktau_py_walk(const void *tsv, uint64_t *out, int max, unsigned int *flags)
{
	const PyThreadState *ts = tsv;
	const _PyCFrame *cf;
	_PyInterpreterFrame *f;
	int n = 0, guard = 0;

	*flags = 0;
	if (!ts)
		return 0;
	cf = *(_PyCFrame *const volatile *)&ts->cframe;
	if (!cf)
		return 0;
	f = *(_PyInterpreterFrame *const volatile *)&cf->current_frame;
	/* guard: a cycle (a chain being rewritten) cannot loop forever */
	for (; f; f = f->previous) {
		PyCodeObject *co = f->f_code;
		intptr_t off;

		if (++guard > 100000 || ((uintptr_t)f & 7) || !co || ((uintptr_t)co & 7) ||
		    Py_TYPE(co) != &PyCode_Type) {
			*flags |= KTAU_PYWALK_BAD;
			break;
		}
		if (_PyFrame_IsIncomplete(f))
			continue;
		if (n == max) {
			*flags |= KTAU_PYWALK_TRUNCATED;
			break;
		}
		off = f->prev_instr - _PyCode_CODE(co);
		if (off < 0)
			off = 0;
		out[2 * n] = (uint64_t)(uintptr_t)co;
		out[2 * n + 1] = (uint64_t)off;
		n++;
	}
	return n;
}
