#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Do KTAU's hooks compile to the same instructions with and without trace
# mode? Compares every function of the objects of kernel/ktau that hold
# hooks, as disassembled with their relocations (call targets, globals,
# static keys by name; addresses and offsets into .text left out), between
# two builds. Allowed to differ: the extra work behind ktau_extra_key
# (shared page, trace, handlers: entered through noinline __noipa
# functions) and fork, exit and exec, which call the trace's functions.
# Usage: scripts/same-hooks.sh BUILD_DIR_A BUILD_DIR_B
# Prints what differs; exit status 1 if a function differs or is in one
# build only, 2 if an object is missing.
set -euo pipefail

OBJS="core.o shared.o handler.o sample.o probe.o registry.o"
ALLOWED=" __ktau_pop_extra __ktau_syscall_pop_extra __ktau_pop_notify __ktau_pop_shared
 __ktau_event_extra ktau_exit ktau_tsk_init ktau_tsk_free ktau_post_fork ktau_exec_nondumpable "

a=${1:?usage: same-hooks.sh BUILD_DIR_A BUILD_DIR_B}
b=${2:?usage: same-hooks.sh BUILD_DIR_A BUILD_DIR_B}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT

# One file per function: its instructions and relocations, normalised.
split() {	# object outdir
	mkdir -p "$2"
	objdump -dr --no-show-raw-insn "$1" | awk -v d="$2" '
		/^[0-9a-f]+ <[^>]+>:$/ { f = substr($2, 2, length($2) - 3); out = d "/" f; next }
		/^Disassembly of section/ { out = ""; next }
		out == "" || !NF { next }
		{
			sub(/^[ \t]*[0-9a-f]+:[ \t]*/, "")
			gsub(/[0-9a-f]+ <[^>]*>/, "<&>")
			gsub(/<[0-9a-f]+ </, "<")
			gsub(/>>/, ">")
			sub(/[ \t]+#.*/, "")
			gsub(/\.(text|rodata|data|bss)[.a-z0-9_]*\+0x[0-9a-f]+/, "SECTION")
			print > out
		}'
}

bad=0 n=0
for o in $OBJS; do
	for d in "$a" "$b"; do
		[ -f "$d/kernel/ktau/$o" ] || { echo "missing: $d/kernel/ktau/$o"; exit 2; }
	done
	split "$a/kernel/ktau/$o" "$w/a/$o"
	split "$b/kernel/ktau/$o" "$w/b/$o"
	for f in $( (ls "$w/a/$o"; ls "$w/b/$o") | sort -u); do
		case $ALLOWED in *" $f "*) continue ;; esac
		n=$((n + 1))
		if [ ! -f "$w/a/$o/$f" ] || [ ! -f "$w/b/$o/$f" ]; then
			echo "in one build only: $o: $f"
			bad=1
		elif ! cmp -s "$w/a/$o/$f" "$w/b/$o/$f"; then
			echo "differs: $o: $f ($(diff "$w/a/$o/$f" "$w/b/$o/$f" | grep -c '^[<>]') lines)"
			bad=1
		fi
	done
done
echo "$n functions of $(echo $OBJS | wc -w) objects compared"
[ $bad = 0 ]
