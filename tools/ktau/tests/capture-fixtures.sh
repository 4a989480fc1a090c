#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Capture the fixtures of the host tests from a real guest run: boots a
# KTAU kernel with the tools and the capture below (tests/guest-run.sh)
# and unpacks what the guest printed into tools/ktau/tests/host/fixtures/.
#
# Environment: as tests/guest-run.sh (KTAU_KERNEL, KTAU_HDRS, KTAU_OUT). Re-runnable; the fixtures
# change with every capture (times, pids), the tests do not depend on them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
fixtures=$here/host/fixtures
out=${KTAU_OUT:-/tmp/ktau-capture}
export KTAU_OUT=$out

mkdir -p "$out"
cat >"$out/capture" <<'GUEST'
#!/bin/sh
# Runs in the guest: workloads with known numbers, their snapshots.
PATH=/ktau/bin:$PATH
F=/tmp/fx
mkdir -p $F && cd /tmp || exit 1
echo "TAP version 13"
echo "1..1"
ktau-test-loop -n 1000 -t 2 -k 3 -m 5 -p >/tmp/ready &
pid=$!
while ! grep -q ready /tmp/ready 2>/dev/null; do usleep 50000; done
cat /proc/ktau/functions >$F/functions.txt
cat /proc/ktau/version >$F/version.txt
ktaud dump -q --raw $F/process.bin --save $F/process.ktau $pid
ktaud dump -q --tid --raw $F/thread.bin $pid
ktaud dump -q --all --aggregate --raw $F/all1.bin
ktau-test-loop -n 300 >/dev/null
ktaud dump -q --all --aggregate --raw $F/all2.bin
kill -TERM $pid
wait $pid
{
	echo "pid=$pid"
	echo "threads=3"
	echo "getppid_per_thread=1000"
	echo "sleeps_main=3"
	echo "hostname=$(hostname)"
	echo "release=$(uname -r)"
} >$F/process.expect
ktaud run -q -o /tmp/run-tau --save $F/run.ktau -- ktau-test-loop -n 500 -t 1 -f 2 -x 3
echo "exit=$?" >$F/run.expect
echo "processes=3 threads=4 getppid_per_thread=500" >>$F/run.expect
ktau-test-loop -n 200 -k 8 -m 50 -p >/tmp/ready2 &
pid2=$!
ktaud watch -i 0.1 -c 4 -o $F/watch $pid2
kill -TERM $pid2
echo "KTAU-FIXTURES-BEGIN"
tar cf - -C $F . | gzip -9 | base64
echo "KTAU-FIXTURES-END"
echo "ok 1 capture"
GUEST
bash "$here/guest-run.sh" --capture "$out/capture" --out "$out/capture-run" >/dev/null || true
res=$out/capture-run/results.log
grep -q KTAU-FIXTURES-END "$res" || { echo "capture: no fixtures in $res" >&2; exit 1; }
# Everything but abi-1.0/, the files of the first ABI kept to prove that
# old snapshots still read.
mkdir -p "$fixtures"
find "$fixtures" -mindepth 1 -maxdepth 1 ! -name abi-1.0 -exec rm -rf {} +
sed -n '/KTAU-FIXTURES-BEGIN/,/KTAU-FIXTURES-END/p' "$res" | sed '1d;$d' | tr -d '\r' |
	base64 -d | gunzip | tar xf - -C "$fixtures"
echo "capture: fixtures in $fixtures:"
ls -l "$fixtures"
