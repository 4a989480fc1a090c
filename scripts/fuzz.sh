#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make fuzz: the long fuzz runs that make check runs briefly.
#   1. ktau_fuzz, the in-guest fuzzer of every /proc/ktau entry, on the
#      debug kernel (KASAN, lockdep, kmemleak, ...) for FUZZ_SECONDS per
#      variant (root, user, CAP_PERFMON only; default 300), seed from
#      KTAU_FUZZ_SEED or random (printed);
#   2. the libFuzzer targets of the host-side parsers, FUZZ_SECONDS each
#      (tools/ktau: make fuzz): decode (libktau's binary records, snapshot
#      files, registry and kallsyms text), tau (TAU profile files and
#      directories: the strict checker and ktaud merge's reader), symbols
#      (/proc/PID/maps text, ELF symbol tables, the sample spec), callgraph
#      (the kernel's call graph from an ELF file or as text, the probes
#      list).
# Any crash, kernel report, leak or failed invariant fails the run.
. "$(dirname "$0")/lib.sh"

secs=${FUZZ_SECONDS:-300}
case $secs in *[!0-9]*|"") die "FUZZ_SECONDS must be a number of seconds" ;; esac
rc=0

"$KTAU_TOP/scripts/build-kernel.sh" debug
"$KTAU_TOP/scripts/build-image.sh" ktau
append="ktaudebug=1 ktautests=ktau_fuzz KTAU_FUZZ_SECONDS=$secs"
[ -n "${KTAU_FUZZ_SEED:-}" ] && append="$append KTAU_FUZZ_SEED=$KTAU_FUZZ_SEED"
out=$KTAU_OUT/fuzz/guest
msg "ktau_fuzz on the debug kernel, ${secs}s per variant; log: $out/results.log"
# Three variants one after the other, plus the debug kernel's slowness.
if "$KTAU_TOP/scripts/boot.sh" --kernel debug --mode check --append "$append" \
	--timeout $((secs * 3 * 2 + 600)) --out "$out"; then
	msg "ktau_fuzz: no crash, no kernel report, no leak"
else
	grep -E '^not ok|^# .*(seed|Expected)' "$out/results.log" | sed -n 1,20p >&2
	msg "ktau_fuzz failed; console: $out/console.log, results: $out/results.log"
	rc=1
fi

msg "libFuzzer on the host-side parsers, ${secs}s per target"
if ! make -C "$KTAU_TOP/tools/ktau" O="$KTAU_OUT/host" fuzz FUZZ_TIME="$secs"; then
	msg "the libFuzzer run failed; crashes in $KTAU_OUT/host/fuzz/crashes/"
	rc=1
fi
exit $rc
