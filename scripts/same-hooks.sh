#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Are KTAU's hook functions the same instructions with and without trace
# mode? Compares, function by function, the disassembly of the objects of
# two builds of kernel/ktau (addresses and the targets of calls and jumps
# by name and offset, so that only code that differs shows).
# Usage: scripts/same-hooks.sh BUILD_DIR_A BUILD_DIR_B
# Prints the functions that differ; exit status 1 if any, 2 if one is
# missing. The extra work behind ktau_extra_key (shared page, trace,
# handlers), fork, exit and the /proc files may differ and are not listed.
set -euo pipefail

HOOKS="core.o:__ktau_syscall_exit core.o:ktau_syscall_exit_slow core.o:ktau_push
core.o:__ktau_pop_slow core.o:__ktau_pop_recursive core.o:__ktau_slot_slow
core.o:ktau_stop_if_top core.o:__ktau_start core.o:__ktau_stop core.o:__ktau_stop_id
core.o:__ktau_event core.o:__ktau_irq_enter core.o:__ktau_irq_exit core.o:__ktau_sched_in
core.o:__ktau_sched_out core.o:__ktau_kvm_entry core.o:__ktau_kvm_exit core.o:ktau_kvm_pop
core.o:ktau_user_work_fn sample.o:ktau_sample_overflow"

a=${1:?usage: same-hooks.sh BUILD_DIR_A BUILD_DIR_B}
b=${2:?usage: same-hooks.sh BUILD_DIR_A BUILD_DIR_B}

# One function's instructions, without addresses: "jmp <f+0x1c>" stays.
# (Without relocations: a call out of the object shows as a call to the
# next instruction in both, so only the code around it is compared.)
dis() {	# object function
	objdump -d --no-show-raw-insn "$1" --disassemble="$2" |
		awk -v f="$2" '$2 == "<" f ">:" { on = 1; next } on && /^$/ { exit } on' |
		sed -E 's/^ *[0-9a-f]+:\t//; s/[0-9a-f]+ <([^>]+)>/<\1>/g; s/[[:space:]]+#.*//'
}

bad=0 missing=0 n=0
for h in $HOOKS; do
	o=${h%%:*} f=${h#*:}
	for d in "$a" "$b"; do
		[ -f "$d/kernel/ktau/$o" ] || { echo "missing: $d/kernel/ktau/$o"; missing=1; continue 2; }
	done
	da=$(dis "$a/kernel/ktau/$o" "$f") db=$(dis "$b/kernel/ktau/$o" "$f")
	if [ -z "$da" ] || [ -z "$db" ]; then
		echo "missing: $f in one of the two $o"
		missing=1
	elif [ "$da" != "$db" ]; then
		echo "differs: $f ($(diff <(echo "$da") <(echo "$db") | grep -c '^[<>]') lines)"
		bad=1
	fi
	n=$((n + 1))
done
echo "$n hook functions compared"
[ $missing = 0 ] || exit 2
[ $bad = 0 ]
