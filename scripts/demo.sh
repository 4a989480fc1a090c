#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make demo: boot the KTAU guest, run the demo workload in it and print what
# KTAU saw. Output also goes to $KTAU_OUT/demo/.
. "$(dirname "$0")/lib.sh"

D=$KTAU_OUT/demo
rm -rf "$D"
mkdir -p "$D"
rc=0
"$KTAU_TOP/scripts/boot.sh" --kernel ktau --mode demo --timeout 600 --out "$D" || rc=$?
sed '/^KTAU-GUEST-DONE/d' "$D/results.log" | tee "$D/demo.txt"
[ $rc -eq 0 ] || die "the demo failed; console log: $D/console.log"
msg "demo output in $D (console: $D/console.log)"
