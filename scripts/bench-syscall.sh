#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Null system call overhead of KTAU, in guest instructions: boots the
# CONFIG_KTAU=n and the KTAU kernel under QEMU -icount shift=0,sleep=off
# (one guest instruction is one virtual ns) and runs ktau-bench-syscall
# with every group off, each group alone and every group on.
# Also: the cost of "ktaud dump --all" with 100, 1000 and 5000 threads.
# Output: tables on stdout and in $KTAU_OUT/bench/{syscall,dump-all}.txt.
. "$(dirname "$0")/lib.sh"

"$KTAU_TOP/scripts/build-kernel.sh" ktau
"$KTAU_TOP/scripts/build-kernel.sh" noktau
"$KTAU_TOP/scripts/build-image.sh" ktau
B=$KTAU_OUT/bench
mkdir -p "$B"
: >"$B/syscall.raw"
for k in noktau ktau; do
	"$KTAU_TOP/scripts/boot.sh" --kernel "$k" --mode bench --icount --smp 1 \
		--timeout 900 --out "$B/run-$k" ||
		die "the bench guest ($k) failed; console log: $B/run-$k/console.log"
	grep '^BENCH ' "$B/run-$k/results.log" >>"$B/syscall.raw"
	if grep -q '^BENCHFAIL' "$B/run-$k/results.log"; then
		grep -h -B5 '^BENCHFAIL' "$B/run-$k/results.log" >&2
		die "a benchmark failed in the $k guest; see $B/run-$k/results.log"
	fi
done
base=$(awk '$2 == "noktau" {print $4}' "$B/syscall.raw")
[ -n "$base" ] || die "no baseline figure in $B/syscall.raw"
{
	printf '%-14s %12s %10s\n' "kernel/groups" "insns/call" "delta"
	awk -v base="$base" '{printf "%-14s %12.1f %+10.1f\n", $2, $4, $4 - base}' "$B/syscall.raw"
} | tee "$B/syscall.txt"

# ktaud dump --all against the number of threads (run in the KTAU guest).
grep '^BENCHT dump-all ' "$B/run-ktau/results.log" >"$B/dump-all.raw" || true
if [ -s "$B/dump-all.raw" ]; then
	{
		printf '%-8s %14s %12s %10s\n' threads "insns" "insns/task" syscalls
		awk '{printf "%-8d %14d %12.0f %10d\n", $3, $4, $4 / $3, $5}' "$B/dump-all.raw"
	} | tee "$B/dump-all.txt"
fi
