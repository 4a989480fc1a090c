#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make demo: boot the KTAU guest, run a workload under "ktaud run" in it and
# print what KTAU saw. Everything lands in $KTAU_OUT/demo/: the guest's
# output (demo.txt), its TAU profile directory (tau/, for ParaProf or
# pprof), the merged kernel/user profile of ktau-merge-demo (merged/), the
# snapshot (run.ktau), JSON (run.json) and a bar chart of the
# top kernel routines (top.png, drawn here with gnuplot).
. "$(dirname "$0")/lib.sh"

D=$KTAU_OUT/demo
rm -rf "$D"
mkdir -p "$D"
rc=0
"$KTAU_TOP/scripts/boot.sh" --kernel ktau --mode demo --timeout 600 --out "$D/guest" || rc=$?
sed -e '/^KTAU-GUEST-DONE/d' -e '/^KTAU-DEMO-ARCHIVE-BEGIN/,/^KTAU-DEMO-ARCHIVE-END/d' \
	"$D/guest/results.log" | tee "$D/demo.txt"
[ $rc -eq 0 ] || die "the demo failed; console log: $D/guest/console.log"
sed -n '/^KTAU-DEMO-ARCHIVE-BEGIN/,/^KTAU-DEMO-ARCHIVE-END/p' "$D/guest/results.log" |
	sed '1d;$d' | tr -d '\r' | base64 -d | tar xzf - -C "$D" ||
	die "could not unpack the demo's files from $D/guest/results.log"

make -s -C "$KTAU_TOP/tools/ktau" O="$KTAU_OUT/host" >/dev/null ||
	die "building ktaud for the host failed (make -C tools/ktau)"
"$KTAU_OUT/host/ktaud" plot top -o "$D/top.png" \
	--title "KTAU demo: top kernel routines" --from "$D/run.ktau" ||
	die "ktaud plot failed"
[ -f "$D/merged/profile.0.0.0" ] || die "the demo wrote no merged profile ($D/merged/)"
msg "demo files in $D: tau/ (TAU profiles), merged/ (kernel time under the"
msg "user routines that caused it), run.ktau, run.json, top.png"
