#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The check machinery's own tests: synthetic KTAP, console and results
# files through the functions make check uses (scripts/check-lib.sh), each
# failure mode seen to fail, each good input seen to pass. Also the guest
# runner (scripts/guest/run-tests.sh, under busybox sh) on a typo in
# ktautests=, and scripts/build-image.sh removing the old image when it
# fails. Prints KTAP; exit status 1 when a test failed.
# Run: bash scripts/tests/check-selftest.sh   (no kernel, no QEMU, no cache)
set -eu -o pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/check-lib.sh
. "$top/scripts/check-lib.sh"
T=$(mktemp -d /tmp/ktau-check-selftest.XXXXXX)
trap 'rm -rf "$T"' EXIT

# has VERDICTS STATUS NAME [DETAIL]: a verdict line with this status, this
# exact name and a detail containing DETAIL. Says what it saw otherwise.
has() {
	if awk -F'\t' -v st="$2" -v name="$3" -v det="${4:-}" '
		$1 == st && $2 == name && index($3, det) { found = 1 } END { exit !found }' <<<"$1"; then
		return 0
	fi
	printf '# expected %s "%s"%s; got:\n' "$2" "$3" "${4:+ with detail containing \"$4\"}"
	printf '%s\n' "$1" | sed 's/^/#   /'
	return 1
}
# hasnt VERDICTS STATUS: no verdict line with this status.
hasnt() {
	if ! awk -F'\t' -v st="$2" '$1 == st { found = 1 } END { exit !found }' <<<"$1"; then
		return 0
	fi
	printf '# expected no %s line; got:\n' "$2"
	printf '%s\n' "$1" | sed 's/^/#   /'
	return 1
}
ktap() {	# file case-prefix [gate-prefix [expected]]: parse_ktap, checked to succeed
	parse_ktap "$@" || { echo "# parse_ktap $* failed"; return 1; }
}

# ---- parse_ktap ----
t_ktap_clean_program_passes() {
	printf '%s\n' '# ktau-selftest-begin a' 'TAP version 13' '1..2' 'ok 1 one' \
		'  ok 1 nested subtest, not counted' 'ok 2 two # SKIP no perf' '# ktau-selftest-end a rc=0' >"$T/k"
	v=$(ktap "$T/k" "guest: " "guest: " "a")
	has "$v" PASS "guest: a: one" && has "$v" SKIP "guest: a: two" "SKIP no perf" &&
		has "$v" PASS "guest: every program reported its planned cases" && hasnt "$v" FAIL
}
t_ktap_not_ok_skip_is_a_failure() {
	printf '%s\n' '# ktau-selftest-begin a' '1..3' 'not ok 1 one # SKIP not really' \
		'ok 2 two # skip fine' 'not ok 3 three' '# ktau-selftest-end a rc=1' >"$T/k"
	v=$(ktap "$T/k" "guest: ")
	has "$v" FAIL "guest: a: one" "SKIP not really" && has "$v" SKIP "guest: a: two" &&
		has "$v" FAIL "guest: a: three" && ! has "$v" SKIP "guest: a: one" >/dev/null
}
# A failed case carries the diagnostics printed since the case before it
# (the harness's RUN/OK banners left out), so the summary says why.
t_ktap_failure_detail_is_its_diagnostics() {
	printf '%s\n' '# ktau-selftest-begin a' '1..3' '# RUN           x.one ...' '# noise of one' \
		'#            OK  x.one' 'ok 1 one' '#  RUN           x.two ...' \
		'# a.c:12:two:Expected 6000 (6000) == n (5999)' '# two: Test failed' \
		'#          FAIL  x.two' 'not ok 2 two' '# 5 getppid calls, not 6' 'not ok 3 three' \
		'# ktau-selftest-end a rc=1' >"$T/k"
	v=$(ktap "$T/k" "guest: ")
	has "$v" PASS "guest: a: one" && ! has "$v" PASS "guest: a: one" "noise" >/dev/null &&
		has "$v" FAIL "guest: a: two" "a.c:12:two:Expected 6000 (6000) == n (5999)" &&
		! has "$v" FAIL "guest: a: two" "RUN" >/dev/null &&
		! has "$v" FAIL "guest: a: two" "noise" >/dev/null &&
		has "$v" FAIL "guest: a: three" "5 getppid calls, not 6" &&
		! has "$v" FAIL "guest: a: three" "Expected" >/dev/null
}
t_ktap_missing_program_fails() {
	printf '%s\n' '# ktau-selftest-begin a' '1..1' 'ok 1 one' '# ktau-selftest-end a rc=0' >"$T/k"
	v=$(ktap "$T/k" "smp: " "smp: " "a,b c")
	has "$v" FAIL "smp: b" "not run" && has "$v" FAIL "smp: c" "ktau-selftest-begin c" &&
		! has "$v" PASS "smp: every program reported its planned cases" >/dev/null
}
# program_fails DETAIL LINE...: the guest program "a" printing LINEs fails,
# the program-level verdict saying DETAIL.
program_fails() {
	local detail=$1
	shift
	printf '%s\n' "$@" >"$T/k"
	v=$(ktap "$T/k" "guest: ")
	has "$v" FAIL "guest: a" "$detail"
}
t_ktap_plan_mismatch_fails() {
	program_fails "plan said 3 tests, 2 reported" \
		'# ktau-selftest-begin a' '1..3' 'ok 1 one' 'ok 2 two' '# ktau-selftest-end a rc=0'
}
t_ktap_no_plan_fails() {
	program_fails "no KTAP plan" '# ktau-selftest-begin a' 'ok 1 one' '# ktau-selftest-end a rc=0'
}
t_ktap_crash_without_failed_case_fails() {
	program_fails "exited 139" '# ktau-selftest-begin a' '1..1' 'ok 1 one' '# ktau-selftest-end a rc=139'
}
t_ktap_no_end_marker_fails() {
	program_fails "no end marker" '# ktau-selftest-begin a' '1..2' 'ok 1 one'
}
t_ktap_serial_crlf() {
	printf '%s\r\n' '# ktau-selftest-begin a' '1..1' 'ok 1 one' '# ktau-selftest-end a rc=0' >"$T/k"
	v=$(ktap "$T/k" "guest: " "guest: " "a")
	has "$v" PASS "guest: a: one" && has "$v" PASS "guest: every program reported its planned cases"
}
t_ktap_host_documents_checked() {
	# Two documents without markers (tools/ktau's run-tests.sh, then the
	# checker's); the second reports fewer cases than its plan.
	printf '%s\n' '1..2' 'ok 1 a' 'ok 2 b' 'TAP version 13' '1..3' 'ok 1 taucheck: x' 'ok 2 taucheck: y' >"$T/k"
	v=$(ktap "$T/k" "host: " "host tests: ")
	has "$v" PASS "host: a" && has "$v" PASS "host: taucheck: y" &&
		has "$v" FAIL "host tests: KTAP output 2" "plan said 3 tests, 2 reported" &&
		! has "$v" FAIL "host tests: KTAP output 1" >/dev/null || return 1
	# One document of the two expected.
	printf '%s\n' 'TAP version 13' '1..1' 'ok 1 a' >"$T/k"
	v=$(ktap "$T/k" "host: " "host tests: " docs=2)
	has "$v" FAIL "host tests: KTAP output 2" "missing: 2 KTAP documents expected, 1 found" || return 1
	printf '%s\n' 'TAP version 13' '1..1' 'ok 1 a' 'TAP version 13' '1..1' 'ok 1 b' >"$T/k"
	v=$(ktap "$T/k" "host: " "host tests: " docs=2)
	hasnt "$v" FAIL || return 1
	# Plans alone (no "TAP version" line) also start a document.
	printf '%s\n' '1..1' 'ok 1 a' '1..2' 'ok 1 b' >"$T/k"
	v=$(ktap "$T/k" "host: " "host tests: ")
	has "$v" FAIL "host tests: KTAP output 2" "plan said 2 tests, 1 reported" || return 1
	printf '%s\n' '1..2' 'ok 1 a' 'ok 2 b' >"$T/k"
	v=$(ktap "$T/k" "host: " "host tests: ")
	has "$v" PASS "host tests: every program reported its planned cases" && hasnt "$v" FAIL
}
t_ktap_nothing_fails() {
	: >"$T/k"
	v=$(ktap "$T/k" "host: " "host tests: ")
	has "$v" FAIL "host tests: KTAP output" "none found" || return 1
	v=$(ktap "$T/none" "guest: " "guest: " "a")
	has "$v" FAIL "guest: a" "not run"
}

# ---- classes ----
t_classes() {
	local n want got bad=0
	while IFS='|' read -r n want; do
		got=$(check_class "$n")
		[ "$got" = "$want" ] || { echo "# check_class '$n': $got, not $want"; bad=1; }
	done <<-'EOF'
	guest: ktau_abi: version_matches|case
	host: help|case
	host: taucheck: good/basic|case
	debug: kmemleak: kmemleak_finds_nothing|case
	smp: ktau_churn: churn_readers|rerun
	mttcg: ktau_shared: reader_never_sees_torn_page|rerun
	mttcg: ktau-hold: no_group_switched|case
	bootparam: ktau_boot: table_size_as_booted|rerun
	bootparam: console clean|gate
	bootparam-bad: ktau_boot: groups_as_booted|rerun
	debug: ktau_abi: version_matches|rerun
	guest: ktau_abi|gate
	guest: every program reported its planned cases|gate
	system: ktau_system: system_running|case
	system: ktau_system|gate
	system: console clean|gate
	guest: console clean|gate
	smp: 2 CPUs online|gate
	debug: kmemleak|gate
	host tests: KTAP output 2|gate
	host tests: tools/ktau builds and its tests run|gate
	taucheck: smp tau-0|gate
	checkpatch: patches/0001-x.patch|gate
	build: KTAU kernel|gate
	bench smoke: ktau: every benchmark runs|gate
	check machinery: ktap_clean_program_passes|gate
	EOF
	return $bad
}

# ---- the summary: counts per class, the totals last ----
t_summary() {
	printf 'PASS\tguest: a: one\t\nSKIP\thost: two\tSKIP x\nPASS\tsmp: a: one\t\nFAIL\tdebug: a: one\tboom\n' >"$T/r.tsv"
	printf 'PASS\tbuild: KTAU kernel\t\nPASS\tguest: console clean\t\nMAYBE\tguest: b: odd\t\n' >>"$T/r.tsv"
	local want got rc=0
	want="3 distinct behaviour cases (KTAP cases of the guest main pass, the host tests and the system test): 1 passed, 1 failed, 1 skipped
2 re-runs of those cases (smp: the 2-CPU pass, mttcg: 2 CPUs in parallel threads, tsc-unstable: 2 CPUs with tsc=unstable, bootparam, bootparam-bad: booted with ktau= and ktau.slots=, debug: the debug kernel): 1 passed, 1 failed, 0 skipped
2 gates (lint, builds, checkpatch, smoke, run and console verdicts): 2 passed, 0 failed, 0 skipped
4 passed, 2 failed, 1 skipped"
	got=$(check_summary "$T/r.tsv") || rc=$?
	[ "$got" = "$want" ] || { echo "# check_summary printed:"; printf '%s\n' "$got" | sed 's/^/#   /'; return 1; }
	[ $rc -eq 1 ] || { echo "# check_summary exited $rc with failures"; return 1; }
	printf 'PASS\tguest: a: one\t\n' >"$T/r.tsv"
	check_summary "$T/r.tsv" >/dev/null || { echo "# check_summary failed a clean run"; return 1; }
}

# A skipped case passes only when another pass ran it.
t_skips_ran_elsewhere() {
	local v
	printf '%s\n' 'SKIP	guest: ktau_c: global.hotplug	SKIP no CPU 1' \
		'PASS	smp: ktau_c: global.hotplug	' 'SKIP	debug: ktau_c: global.hotplug	SKIP no CPU 1' \
		'SKIP	guest: ktau_e: x.failslab	SKIP none' 'SKIP	smp: ktau_e: x.failslab	SKIP none' \
		'PASS	guest: ktau_e: x.other	' 'SKIP	host: c_thing	SKIP no fixtures' \
		'SKIP	build: something	' >"$T/sk.tsv"
	v=$(skips_ran_elsewhere "$T/sk.tsv")
	has "$v" PASS "skipped case ran elsewhere: ktau_c: global.hotplug" "skipped in guest debug; passed in smp" &&
		has "$v" FAIL "skipped case ran elsewhere: ktau_e: x.failslab" "skipped in guest smp, passed in no pass" &&
		has "$v" FAIL "skipped case ran elsewhere: host: c_thing" "skipped in host" &&
		[ "$(printf '%s\n' "$v" | wc -l)" -eq 3 ] || { echo "# gates (a gate's skip is not a case):"; printf '%s\n' "$v" | sed 's/^/#   /'; return 1; }
	printf 'PASS\tguest: a: one\t\n' >"$T/sk.tsv"
	[ -z "$(skips_ran_elsewhere "$T/sk.tsv")" ] || { echo "# verdicts without skips"; return 1; }
}

# A warning from KTAU's files in a kernel build log fails; others do not.
t_build_warnings() {
	local v
	printf '%s\n' '  CC      kernel/ktau/core.o' \
		'/src/drivers/x.c:3:1: warning: not ours' >"$T/bl.log"
	v=$(build_warnings_verdict "build: k" "$T/bl.log")
	has "$v" PASS "build: k" || return 1
	echo 'kernel/ktau/sample.o: warning: objtool: ktau_sample_overflow+0x86d: call to __ubsan_handle_out_of_bounds() with UACCESS enabled' >>"$T/bl.log"
	v=$(build_warnings_verdict "build: k" "$T/bl.log")
	has "$v" FAIL "build: k" "kernel/ktau/sample.o: warning: objtool" || return 1
	printf '%s\n' '/root/src/include/linux/ktau.h:12:5: warning: unused' >"$T/bl.log"
	v=$(build_warnings_verdict "build: k" "$T/bl.log")
	has "$v" FAIL "build: k" "include/linux/ktau.h:12:5: warning" || return 1
	v=$(build_warnings_verdict "build: k" "$T/no-such.log")
	has "$v" FAIL "build: k" "no build log"
}

# ---- console ----
t_console_patterns_caught() {
	local l bad=0
	while read -r l; do
		printf '[    1.000000] ok line\n%s\n' "$l" >"$T/con"
		console_problems "$T/con" >/dev/null || { echo "# not caught: $l"; bad=1; }
	done <<-'EOF'
	[   12.345678] BUG kmalloc-64 (Not tainted): Poison overwritten
	[   12.345678] BUG: KASAN: slab-use-after-free in ktau_exit+0x10/0x20
	[   12.345678] kernel BUG at kernel/ktau/core.c:123!
	[   33.000000] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:
	[   33.000000] rcu: INFO: rcu_preempt self-detected stall on CPU
	[   33.000000] rcu: INFO: rcu_preempt detected expedited stalls on CPUs/tasks: { 1-... } 21 jiffies s: 93 root: 0x2/.
	[    5.000000] ktau_fuzz[123]: segfault at 0 ip 0000000000401000 sp 00007ffc sp error 4
	[    0.100000] ktau: out of memory, KTAU stays off
	[   99.000000] kmemleak: Kernel memory leak detector disabled
	[    1.000000] WARNING: CPU: 0 PID: 1 at kernel/ktau/core.c:1 ktau_init+0x1/0x2
	[    1.000000] Oops: 0000 [#1] PREEMPT SMP
	[    1.000000] watchdog: BUG: soft lockup - CPU#0 stuck for 22s!
	EOF
	return $bad
}
t_console_clean_passes() {
	printf '%s\r\n' '[    0.000000] Linux version 6.12.0-ktau' '[    0.500000] ktau: profiling on: syscall irq softirq sched fault signal' \
		'[    1.000000] Run /init as init process' '[    2.000000] reboot: Power down' >"$T/con"
	! console_problems "$T/con" || { echo "# a clean console was reported"; return 1; }
	printf '%s\n' 'KTAU-GUEST-DONE rc=0 tainted=0' >"$T/res"
	v=$(run_verdicts guest "$T/con" "$T/res" 0)
	has "$v" PASS "guest: console clean" && has "$v" PASS "guest: run finished" &&
		has "$v" PASS "guest: kernel not tainted" && hasnt "$v" FAIL
}
t_console_problem_fails_run() {
	printf '%s\n' '[    1.0] ok' '[   12.3] BUG kmalloc-64 (Not tainted): Poison overwritten' >"$T/con"
	printf '%s\n' 'KTAU-GUEST-DONE rc=0 tainted=0' >"$T/res"
	v=$(run_verdicts debug "$T/con" "$T/res" 1)
	has "$v" FAIL "debug: console clean" "2:[   12.3] BUG kmalloc-64"
}

# ---- end of run: finished, tainted, CPUs ----
t_tainted_fails() {
	: >"$T/con"
	printf '%s\r\n' 'ok' 'KTAU-GUEST-DONE rc=0 tainted=4609' >"$T/res"
	v=$(run_verdicts smp "$T/con" "$T/res" 0)
	has "$v" FAIL "smp: kernel not tainted" "tainted=4609: P proprietary module (bit 0), W kernel warning (bit 9), O out-of-tree module (bit 12)"
}
t_taint_not_reported_fails() {
	: >"$T/con"
	printf '%s\n' 'KTAU-GUEST-DONE rc=0' >"$T/res"
	v=$(run_verdicts guest "$T/con" "$T/res" 0)
	has "$v" FAIL "guest: kernel not tainted" "reported no /proc/sys/kernel/tainted"
}
t_unfinished_run_fails() {
	: >"$T/con"
	printf '%s\n' '# ktau-selftest-begin a' >"$T/res"
	v=$(run_verdicts guest "$T/con" "$T/res" 1)
	has "$v" FAIL "guest: run finished" &&
		has "$v" FAIL "guest: kernel not tainted" || return 1
	printf '%s\n' 'KTAU-GUEST-DONE rc=0 tainted=0' >"$T/res"
	v=$(run_verdicts guest "$T/con" "$T/res" 2)
	has "$v" FAIL "guest: run finished" "status 2"
}
t_cpus() {
	printf '%s\r\n' '# ktau-cpus-online 1' >"$T/res"
	v=$(cpus_verdict smp "$T/res" 2)
	has "$v" FAIL "smp: 2 CPUs online" "the guest saw 1" || return 1
	printf '%s\r\n' '# ktau-cpus-online 2' >"$T/res"
	v=$(cpus_verdict smp "$T/res" 2)
	has "$v" PASS "smp: 2 CPUs online" || return 1
	: >"$T/res"
	v=$(cpus_verdict smp "$T/res" 2)
	has "$v" FAIL "smp: 2 CPUs online" "no CPU count"
}

# ---- expected programs and ktautests= ----
mkroot() {
	rm -rf "$T/root"
	mkdir -p "$T/root/ktau/selftests" "$T/root/ktau/tests/sub"
	printf '#!/bin/sh\necho "TAP version 13"\necho "1..1"\necho "ok 1 %s_works"\n' a >"$T/root/ktau/selftests/ktau_a"
	printf '#!/bin/sh\necho "TAP version 13"\necho "1..1"\necho "ok 1 %s_works"\n' b >"$T/root/ktau/tests/b-tests"
	chmod +x "$T/root/ktau/selftests/ktau_a" "$T/root/ktau/tests/b-tests"
	: >"$T/root/ktau/selftests/notes.txt"
}
t_image_programs_and_ktautests() {
	mkroot
	[ "$(image_programs "$T/root" | tr '\n' ' ')" = "ktau_a b-tests " ] ||
		{ echo "# image_programs: $(image_programs "$T/root" | tr '\n' ' ')"; return 1; }
	[ "$(ktautests_list "console=ttyS0 ktautests=ktau_a,b-tests x=1" | tr '\n' ' ')" = "ktau_a b-tests " ] ||
		{ echo "# ktautests_list wrong"; return 1; }
	[ -z "$(ktautests_unknown "ktautests=ktau_a,b-tests" "$T/root")" ] ||
		{ echo "# ktautests_unknown reported a known name"; return 1; }
	[ "$(ktautests_unknown "ktau=all ktautests=ktau_a,ktau_typo,notes.txt" "$T/root" | tr '\n' ' ')" = "ktau_typo notes.txt " ] ||
		{ echo "# ktautests_unknown: $(ktautests_unknown "ktautests=ktau_a,ktau_typo,notes.txt" "$T/root")"; return 1; }
}
# The guest runner itself, its paths moved under $T, under busybox sh.
t_guest_runner_typo_fails() {
	command -v busybox >/dev/null || { echo "no busybox on this host" >"$T/skip"; return 77; }
	mkroot
	echo "console=ttyS0 ktaurun=check ktautests=ktau_a,ktau_typo" >"$T/cmdline"
	printf 'processor\t: 0\nprocessor\t: 1\n' >"$T/cpuinfo"
	sed -e "s,/ktau/,$T/root/ktau/,g" -e "s,/proc/cmdline,$T/cmdline,g" \
		-e "s,/proc/cpuinfo,$T/cpuinfo,g" -e "s,/sys/kernel/debug,$T/nodebugfs,g" \
		-e 's,^mount ,: ,' -e 's,^dmesg ,: ,' "$top/scripts/guest/run-tests.sh" >"$T/run-tests.sh"
	rc=0
	busybox sh "$T/run-tests.sh" >"$T/results.log" 2>&1 || rc=$?
	[ $rc -ne 0 ] || { echo "# the runner exited 0 with a typo in ktautests="; sed 's/^/#   /' "$T/results.log"; return 1; }
	v=$(ktap "$T/results.log" "guest: " "guest: " "ktau_a ktau_typo")
	has "$v" PASS "guest: ktau_a: a_works" && has "$v" FAIL "guest: ktau_typo: requested_program_exists" &&
		! has "$v" PASS "guest: b-tests: b_works" >/dev/null &&
		v=$(cpus_verdict smp "$T/results.log" 2) && has "$v" PASS "smp: 2 CPUs online"
}

# The runner's kmemleak scan on the debug kernel: clean when the scan works
# and reports nothing, failed when it reports leaks or is refused.
kmemleak_run() {	# what /sys/kernel/debug/kmemleak is: null | leaks | refused
	rm -rf "$T/dbg" && mkdir -p "$T/dbg"
	case $1 in
	null) ln -s /dev/null "$T/dbg/kmemleak" ;;
	leaks) echo "unreferenced object 0xffff888003a1b2c0 (size 64):" >"$T/dbg/kmemleak" ;;
	refused) mkdir "$T/dbg/kmemleak" ;;
	esac
	mkroot
	rm -f "$T/root/ktau/selftests/ktau_a" "$T/root/ktau/tests/b-tests"
	: >"$T/cmdline"
	printf 'processor\t: 0\n' >"$T/cpuinfo"
	sed -e "s,/ktau/,$T/root/ktau/,g" -e "s,/proc/cmdline,$T/cmdline,g" \
		-e "s,/proc/cpuinfo,$T/cpuinfo,g" -e "s,/sys/kernel/debug,$T/dbg,g" -e 's,sleep 1,:,' \
		-e 's,^mount ,: ,' -e 's,^dmesg ,: ,' "$top/scripts/guest/run-tests.sh" >"$T/run-tests.sh"
	busybox sh "$T/run-tests.sh" >"$T/results.log" 2>&1 || true
	ktap "$T/results.log" "debug: " "debug: " "kmemleak"
}
t_guest_runner_kmemleak() {
	command -v busybox >/dev/null || { echo "no busybox on this host" >"$T/skip"; return 77; }
	v=$(kmemleak_run null)
	has "$v" PASS "debug: kmemleak: kmemleak_finds_nothing" || return 1
	v=$(kmemleak_run leaks)
	has "$v" FAIL "debug: kmemleak: kmemleak_finds_nothing" || return 1
	v=$(kmemleak_run refused)
	has "$v" FAIL "debug: kmemleak: kmemleak_finds_nothing"
}

# The guest's /init, its paths moved under $T: its last line reports the
# taint value, which the host reads back.
t_guest_init_reports_taint() {
	command -v busybox >/dev/null || { echo "no busybox on this host" >"$T/skip"; return 77; }
	mkdir -p "$T/init"
	echo "console=ttyS0 ktaurun=boot" >"$T/init/cmdline"
	echo 4608 >"$T/init/tainted"
	sed -e "s,/proc/cmdline,$T/init/cmdline,g" -e "s,/proc/sys/kernel/tainted,$T/init/tainted,g" \
		-e "s,/dev/ttyS1,$T/init/ttyS1,g" -e 's,^/bin/busybox ,: ,' -e 's,^mount ,: ,' \
		-e 's,^ip ,: ,' -e 's,^hostname ,: ,' -e 's,^sync,:,' -e 's,^reboot ,: ,' \
		"$top/scripts/guest/init" >"$T/init/init"
	busybox sh "$T/init/init" >"$T/init/out" 2>&1 || { sed 's/^/# /' "$T/init/out"; return 1; }
	[ "$(guest_tainted "$T/init/ttyS1")" = 4608 ] ||
		{ echo "# the init reported:"; sed 's/^/#   /' "$T/init/ttyS1"; return 1; }
	v=$(run_verdicts guest /dev/null "$T/init/ttyS1" 0)
	has "$v" FAIL "guest: kernel not tainted" "W kernel warning (bit 9), O out-of-tree module (bit 12)"
}

# ---- TAU archives ----
t_taucheck_archives() {
	mkdir -p "$T/a/run/good" "$T/a/run/bad"
	: >"$T/a/run/good/profile.0.0.0"
	: >"$T/a/run/bad/profile.0.0.0"
	# shellcheck disable=SC2016 # a script for the checker's place
	printf '#!/bin/sh\ncase $1 in */bad) echo "bad: counts do not add up"; exit 1 ;; esac\n' >"$T/tc"
	chmod +x "$T/tc"
	{
		echo "ok 1 x"
		echo "# ktau-archive-begin run"
		tar czf - -C "$T/a" run | base64 | sed 's/$/\r/'
		echo "# ktau-archive-end"
		echo "# ktau-archive-begin broken"
		echo "bm90IGEgdGFyYmFsbAo="
		echo "# ktau-archive-end"
	} >"$T/res"
	v=$(taucheck_archives "$T/res" "$T/x" smp "$T/tc")
	has "$v" PASS "taucheck: smp run/good" && has "$v" FAIL "taucheck: smp run/bad" "counts do not add up" &&
		has "$v" FAIL "taucheck: smp archive archive-2.b64 unpacks"
}

# ---- one copy of the machinery ----
t_one_copy() {
	local f bad=0
	for f in scripts/check.sh scripts/boot.sh; do
		# shellcheck disable=SC2016 # the literal source line
		grep -q '^\. "\$KTAU_TOP/scripts/check-lib.sh"' "$top/$f" || { echo "# $f does not source check-lib.sh"; bad=1; }
		grep -qE '^(parse_ktap|console_problems)\(\)|^bad=' "$top/$f" && { echo "# $f has its own copy"; bad=1; }
	done
	return $bad
}

# ---- build-image.sh: a failed build leaves no image ----
t_failed_image_build_leaves_no_image() {
	mkdir -p "$T/tree/scripts" "$T/out/guest"
	cp "$top/scripts/build-image.sh" "$top/scripts/lib.sh" "$T/tree/scripts/"
	printf '#!/bin/sh\necho "deps: stub failure" >&2\nexit 1\n' >"$T/tree/scripts/deps.sh"
	chmod +x "$T/tree/scripts/deps.sh"
	echo old >"$T/out/guest/initramfs.cpio.gz"
	if KTAU_OUT=$T/out KTAU_CACHE=$T/cache bash "$T/tree/scripts/build-image.sh" ktau >"$T/bi.log" 2>&1; then
		echo "# the stubbed build succeeded"; return 1
	fi
	[ ! -e "$T/out/guest/initramfs.cpio.gz" ] || { echo "# the old image is still there after a failed build"; return 1; }
}

# ---- boot.sh with a stand-in QEMU that writes the given console and results ----
fakeboot() {	# console-text results-text boot.sh-args...: boot.sh's status
	local con=$1 res=$2
	shift 2
	rm -rf "$T/bt"
	mkdir -p "$T/bt/scripts" "$T/bt/bin" "$T/bt/out/guest/root/ktau/selftests"
	cp "$top/scripts/boot.sh" "$top/scripts/lib.sh" "$top/scripts/check-lib.sh" "$T/bt/scripts/"
	printf '#!/bin/sh\nexit 0\n' >"$T/bt/scripts/deps.sh"
	printf '%s\n' "$con" >"$T/bt/console.txt"
	printf '%s\n' "$res" >"$T/bt/results.txt"
	# shellcheck disable=SC2016 # the stand-in's own script
	printf '#!/bin/bash\nn=0\nwhile [ $# -gt 0 ]; do\n  if [ "$1" = -serial ]; then n=$((n + 1)); f=${2#file:}\n    [ $n = 1 ] && cp %s "$f"; [ $n = 2 ] && cp %s "$f"; fi\n  shift\ndone\nexit 0\n' \
		"$T/bt/console.txt" "$T/bt/results.txt" >"$T/bt/bin/qemu-system-x86_64"
	chmod +x "$T/bt/scripts/deps.sh" "$T/bt/bin/qemu-system-x86_64"
	: >"$T/bt/bzImage"
	: >"$T/bt/out/guest/initramfs.cpio.gz"
	install -m 0755 /dev/null "$T/bt/out/guest/root/ktau/selftests/ktau_a"
	env -u KTAU_IMAGE PATH="$T/bt/bin:$PATH" KTAU_OUT="$T/bt/out" KTAU_CACHE="$T/bt/cache" KTAU_KERNEL="$T/bt/bzImage" \
		bash "$T/bt/scripts/boot.sh" --out "$T/bt/run" "$@" >"$T/bt/log" 2>&1
}
t_boot_sh_verdicts() {
	local rc
	fakeboot "[ 1.0] Linux" "KTAU-GUEST-DONE rc=0 tainted=0" && rc=0 || rc=$?
	[ $rc -eq 0 ] || { echo "# a clean run: boot.sh exited $rc"; sed 's/^/#   /' "$T/bt/log"; return 1; }
	fakeboot "[ 1.0] BUG kmalloc-64 (Not tainted): Poison overwritten" "KTAU-GUEST-DONE rc=0 tainted=0" && rc=0 || rc=$?
	[ $rc -eq 1 ] || { echo "# a SLUB report: boot.sh exited $rc, not 1"; return 1; }
	fakeboot "[ 1.0] Linux" "KTAU-GUEST-DONE rc=0 tainted=512" && rc=0 || rc=$?
	{ [ $rc -eq 1 ] && grep -q 'W kernel warning' "$T/bt/log"; } ||
		{ echo "# tainted=512: boot.sh exited $rc"; sed 's/^/#   /' "$T/bt/log"; return 1; }
	fakeboot "[ 1.0] Linux" "KTAU-GUEST-DONE rc=1 tainted=0" && rc=0 || rc=$?
	[ $rc -eq 1 ] || { echo "# a failed guest run: boot.sh exited $rc, not 1"; return 1; }
	fakeboot "[ 1.0] Linux" "# ktau-selftest-begin a" && rc=0 || rc=$?
	[ $rc -eq 2 ] || { echo "# an unfinished run: boot.sh exited $rc, not 2"; return 1; }
	# An earlier run's output must not survive a refused one.
	mkdir -p "$T/bt.stale"
	echo "KTAU-GUEST-DONE rc=0 tainted=0" >"$T/bt.stale/results.log"
	fakeboot "[ 1.0] Linux" "KTAU-GUEST-DONE rc=0 tainted=0" --append "ktautests=ktau_a,ktau_typo" \
		--out "$T/bt.stale" && rc=0 || rc=$?
	{ [ $rc -eq 1 ] && grep -q 'ktautests= names ktau_typo' "$T/bt/log" && [ ! -e "$T/bt.stale/results.log" ]; } ||
		{ echo "# a typo in ktautests=: boot.sh exited $rc"; sed 's/^/#   /' "$T/bt/log"; return 1; }
}

# ---- check.sh itself, end to end, with every build and boot stubbed ----
# The stubs: an image with the programs check.sh's 2-CPU pass names plus
# ktau_a and b-tests, and guest runs that report each program they were
# asked for with one passing case, 2 CPUs when booted with --smp 2, and an
# untainted kernel. FAKE_BREAK spoils one thing: "taint" (the debug run
# ends tainted=512), "drop" (the 2-CPU run leaves out its last program),
# "skip" (the main run reports a "not ok ... # SKIP"), "nokmemleak" (the
# debug run ends without its kmemleak scan), "bench" (bench.sh
# stops before it writes its results; the last run's are still there),
# "system" (the system test reports a failed case), "notrace" (the KTAU
# kernel's .config lacks CONFIG_KTAU_TRACE=y).
mkcheck() {
	local c=$T/ck
	rm -rf "$c"
	mkdir -p "$c/tree/scripts/tests" "$c/bin" "$c/cache/src/scripts" "$c/cache/src/kernel/ktau" \
		"$c/cache/src/Documentation/admin-guide"
	cp "$top/scripts/check.sh" "$top/scripts/lib.sh" "$top/scripts/check-lib.sh" "$c/tree/scripts/"
	# The ABI version gate reads the header and the two documents.
	mkdir -p "$c/tree/include/uapi/linux" "$c/tree/Documentation/ABI/testing" \
		"$c/tree/Documentation/trace"
	cp "$top/include/uapi/linux/ktau.h" "$c/tree/include/uapi/linux/"
	cp "$top/Documentation/ABI/testing/procfs-ktau" "$c/tree/Documentation/ABI/testing/"
	cp "$top/Documentation/trace/ktau.rst" "$c/tree/Documentation/trace/"
	(cd "$c/tree" && git init -q . 2>/dev/null) || true
	printf '#!/bin/sh\nexit 0\n' >"$c/tree/scripts/deps.sh"
	printf '#!/bin/sh\necho "PASS: mainline: a"; echo "PASS: mainline: b"\n' >"$c/tree/scripts/mainline-check.sh"
	chmod +x "$c/tree/scripts/mainline-check.sh"
	printf '#!/bin/sh\necho "PASS: riscv64: a"; echo "PASS: riscv64: b"\n' >"$c/tree/scripts/cross-check.sh"
	chmod +x "$c/tree/scripts/cross-check.sh"
	cp "$c/tree/scripts/deps.sh" "$c/tree/scripts/prepare-tree.sh"
	printf '#!/bin/sh\necho "TAP version 13"; echo "1..1"; echo "ok 1 stub"\n' >"$c/tree/scripts/tests/check-selftest.sh"
	cat >"$c/tree/scripts/build-kernel.sh" <<-'EOF'
	#!/bin/bash
	mkdir -p "$KTAU_OUT/logs" && echo "  CC      kernel/ktau/core.o" >"$KTAU_OUT/logs/kernel-$1.log"
	mkdir -p "$KTAU_CACHE/build/$1/arch/x86/boot"
	: >"$KTAU_CACHE/build/$1/arch/x86/boot/bzImage"
	: >"$KTAU_CACHE/build/$1/.config"
	case $1/${FAKE_BREAK:-} in
	notrace/*) echo "# CONFIG_KTAU_TRACE is not set" >"$KTAU_CACHE/build/$1/.config" ;;
	ktau/notrace) ;;
	ktau/*) echo "CONFIG_KTAU_TRACE=y" >"$KTAU_CACHE/build/$1/.config" ;;
	esac
	EOF
	printf '#!/bin/sh\necho "106 functions of 6 objects compared"\n' >"$c/tree/scripts/same-hooks.sh"
	cat >"$c/tree/scripts/series.sh" <<-'EOF'
	#!/bin/bash
	mkdir -p "$KTAU_OUT/series"
	: >"$KTAU_OUT/series/0001-x.patch"
	EOF
	cat >"$c/tree/scripts/bench.sh" <<-'EOF'
	#!/bin/bash
	[ "${FAKE_BREAK:-}" != bench ] || exit 1
	mkdir -p "$KTAU_OUT/bench-smoke"
	printf 'PASS\tbench smoke: ktau: every benchmark runs\t\n' >"$KTAU_OUT/bench-smoke/results.tsv"
	EOF
	cat >"$c/tree/scripts/build-image.sh" <<-'EOF'
	#!/bin/bash
	G=$KTAU_OUT/guest
	rm -rf "$G"
	mkdir -p "$G/root/ktau/selftests" "$G/root/ktau/tests"
	for p in ktau_a $(sed -n 's/^\(smp\|tsc\|mttcg\|bootparam2\?\)_append=".*ktautests=\(.*\)"$/\2/p' "$(dirname "$0")/check.sh" | tr , '\n' | sort -u); do
		install -m 0755 /dev/null "$G/root/ktau/selftests/$p"
	done
	install -m 0755 /dev/null "$G/root/ktau/tests/b-tests"
	: >"$G/initramfs.cpio.gz"
	EOF
	cat >"$c/tree/scripts/boot.sh" <<-'EOF'
	#!/bin/bash
	. "$(dirname "$0")/lib.sh"
	. "$KTAU_TOP/scripts/check-lib.sh"
	out="" smp=1 append="" mode=check
	while [ $# -gt 0 ]; do
		case $1 in
		--mttcg) shift; continue ;;
		--out) out=$2 ;; --smp) smp=$2 ;; --append) append=$2 ;; --mode) mode=$2 ;;
		esac
		shift 2
	done
	mkdir -p "$out"
	run=${out##*/} taint=0
	echo "[    0.0] Linux version 6.12.0-ktau" >"$out/console.log"
	progs=$(ktautests_list "$append")
	[ -n "$progs" ] || progs=$(image_programs "$KTAU_OUT/guest/root")
	case " $append " in *" ktauhold "*) progs="$progs ktau-hold" ;; esac
	[ "$run" != debug ] || [ "${FAKE_BREAK:-}" = nokmemleak ] || progs="$progs kmemleak"
	[ "$run/${FAKE_BREAK:-}" != debug/taint ] || taint=512
	[ "$run/${FAKE_BREAK:-}" != smp/drop ] || progs=$(echo $progs | sed 's/ [^ ]*$//')
	{
		if [ "$mode" = boot ]; then
			echo "no /proc/ktau"
		else
			echo "# ktau-cpus-online $smp"
			for p in $progs; do
				printf '# ktau-selftest-begin %s\nTAP version 13\n1..1\n' "$p"
				if [ "$run/${FAKE_BREAK:-}" = check/skip ] && [ "$p" = ktau_a ]; then
					echo "not ok 1 works # SKIP it did not"
				else
					echo "ok 1 works"
				fi
				echo "# ktau-selftest-end $p rc=0"
			done
		fi
		echo "KTAU-GUEST-DONE rc=0 tainted=$taint"
	} | sed 's/$/\r/' >"$out/results.log"
	EOF
	cat >"$c/tree/scripts/system.sh" <<-'EOF'
	#!/bin/bash
	out=$2
	mkdir -p "$out"
	echo "[    0.0] Linux version 6.12.0-ktau-test" >"$out/console.log"
	r="ok 1 works"
	[ "${FAKE_BREAK:-}" != system ] || r="not ok 1 works"
	printf '# ktau-selftest-begin ktau_system\n1..1\n%s\n# ktau-selftest-end ktau_system rc=0\nKTAU-GUEST-DONE rc=0 tainted=0\n' \
		"$r" >"$out/results.log"
	EOF
	printf '#!/usr/bin/perl\nexit 0;\n' >"$c/cache/src/scripts/checkpatch.pl"
	echo 'core_param(ktau, ktau_groups, charp, 0444);' >"$c/cache/src/kernel/ktau/core.c"
	printf '\tktau=\t\t[KNL] groups\n' >"$c/cache/src/Documentation/admin-guide/kernel-parameters.txt"
	: >"$c/cache/src/.ktau-files"
	# make: the W=1 and sparse runs (nothing to warn about, sparse ran),
	# which build the objects of kernel/ktau in the O= directory.
	cat >"$c/bin/make" <<-'EOF'
	#!/bin/bash
	o=
	for a; do case $a in O=*) o=${a#O=} ;; esac; done
	case " $* " in *" kernel/ktau/ "*) [ -z "$o" ] || { mkdir -p "$o/kernel/ktau" && : >"$o/kernel/ktau/core.o"; } ;; esac
	echo "  CHECK   kernel/ktau/core.c"
	EOF
	chmod +x "$c"/tree/scripts/*.sh "$c/tree/scripts/tests/check-selftest.sh" "$c/bin/make"
}
runcheck() {	# FAKE_BREAK value: check.sh's status; output in $T/ck/log
	PATH=$T/ck/bin:$PATH KTAU_CACHE=$T/ck/cache KTAU_OUT=$T/ck/out FAKE_BREAK=$1 \
		bash "$T/ck/tree/scripts/check.sh" >"$T/ck/log" 2>&1
}
t_check_sh_end_to_end() {
	local rc last
	mkcheck
	runcheck "" && rc=0 || rc=$?
	last=$(tail -n 1 "$T/ck/log")
	{ [ $rc -eq 0 ] && [[ $last =~ ^[0-9]+\ passed,\ 0\ failed,\ 0\ skipped$ ]]; } ||
		{ echo "# a clean run: status $rc, last line '$last'"; grep -E '^FAIL' "$T/ck/log" | sed 's/^/#   /'; return 1; }
	! grep -q 'failures, repeated' "$T/ck/log" || { echo "# a clean run lists failures"; return 1; }
	# Main pass: ktau_a, the programs of the 2-CPU lists, b-tests, and the
	# debug kernel's kmemleak; re-runs: each 2-CPU list again, and the
	# main pass's programs on the debug kernel.
	local lists nsmp ntsc nbp nprog
	lists=$(sed -n 's/^\(smp\|tsc\|mttcg\|bootparam2\?\)_append=".*ktautests=\(.*\)"$/\1 \2/p' "$top/scripts/check.sh")
	nsmp=$(printf '%s\n' "$lists" | awk '$1 == "smp" { print split($2, a, ",") }')
	ntsc=$(printf '%s\n' "$lists" | awk '$1 == "tsc" { print split($2, a, ",") }')
	nmt=$(printf '%s\n' "$lists" | awk '$1 == "mttcg" { print split($2, a, ",") }')
	[ "${nmt:-0}" -gt 0 ] || { echo "# no mttcg_append list in check.sh"; return 1; }
	nbp=$(printf '%s\n' "$lists" | awk '$1 ~ /^bootparam/ { n += split($2, a, ",") } END { print n }')
	[ "${nbp:-0}" -gt 0 ] || { echo "# no bootparam_append list in check.sh"; return 1; }
	nprog=$(printf '%s\n' "$lists" | cut -d' ' -f2 | tr ',' '\n' | sort -u | wc -l)
	nprog=$((nprog + 2))
	# Distinct cases: the main pass's, kmemleak's, the system test's and
	# the mttcg pass's ktau-hold.
	{ grep -qx "$((nprog + 3)) distinct behaviour cases (KTAP cases of the guest main pass, the host tests and the system test): $((nprog + 3)) passed, 0 failed, 0 skipped" "$T/ck/log" &&
	grep -qx "$((nsmp + ntsc + nmt + nbp + nprog)) re-runs of those cases (smp: the 2-CPU pass, mttcg: 2 CPUs in parallel threads, tsc-unstable: 2 CPUs with tsc=unstable, bootparam, bootparam-bad: booted with ktau= and ktau.slots=, debug: the debug kernel): $((nsmp + ntsc + nmt + nbp + nprog)) passed, 0 failed, 0 skipped" "$T/ck/log" &&
	grep -q '^PASS: debug: kmemleak: works$' "$T/ck/log" && grep -q '^PASS: smp: 2 CPUs online' "$T/ck/log"; } ||
		{ echo "# the counts of a clean run:"; tail -n 5 "$T/ck/log" | sed 's/^/#   /'; return 1; }
	for b in taint drop skip nokmemleak bench system notrace; do
		runcheck $b && rc=0 || rc=$?
		last=$(tail -n 1 "$T/ck/log")
		{ [ $rc -eq 1 ] && [[ $last =~ ^[0-9]+\ passed,\ 1\ failed,\ [0-9]+\ skipped$ ]]; } ||
			{ echo "# FAKE_BREAK=$b: status $rc, last line '$last'"; grep -E '^FAIL' "$T/ck/log" | sed 's/^/#   /'; return 1; }
		case $b in
		taint) grep -q '^FAIL: debug: kernel not tainted (tainted=512: W kernel warning' "$T/ck/log" ;;
		drop) grep -q "^FAIL: smp: $(printf '%s\n' "$lists" | awk '$1 == "smp" { n = split($2, a, ","); print a[n] }') (not run" "$T/ck/log" ;;
		skip) grep -q '^FAIL: guest: ktau_a: works (SKIP it did not)' "$T/ck/log" ;;
		nokmemleak) grep -q '^FAIL: debug: kmemleak (not run' "$T/ck/log" ;;
		bench) grep -q '^FAIL: bench smoke: kernels, programs and image build' "$T/ck/log" ;;
		system) grep -q '^FAIL: system: ktau_system: works' "$T/ck/log" ;;
		notrace) grep -q '^FAIL: build: KTAU kernel has trace mode (CONFIG_KTAU_TRACE=y)' "$T/ck/log" ;;
		esac || { echo "# FAKE_BREAK=$b: no such failure in"; grep -E '^FAIL' "$T/ck/log" | sed 's/^/#   /'; return 1; }
		# ... and repeated among the last lines, which CI shows.
		tail -n 8 "$T/ck/log" | grep -A1 -x '== failures, repeated from above' | grep '^FAIL: ' >/dev/null ||
			{ echo "# FAKE_BREAK=$b: the failure is not repeated at the end:"; tail -n 8 "$T/ck/log" | sed 's/^/#   /'; return 1; }
	done
}

tests=$(declare -F | awk '$3 ~ /^t_/ { print $3 }')
echo "TAP version 13"
echo "1..$(echo "$tests" | wc -l)"
n=0 fails=0
for t in $tests; do
	n=$((n + 1))
	rm -f "$T/skip"
	rc=0
	out=$( (set +e; $t) 2>&1) || rc=$?
	[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^\([^#]\)/# \1/'
	case $rc in
	0) echo "ok $n ${t#t_}" ;;
	77) echo "ok $n ${t#t_} # SKIP $(cat "$T/skip" 2>/dev/null)" ;;
	*) echo "not ok $n ${t#t_}"; fails=$((fails + 1)) ;;
	esac
done
[ $fails -eq 0 ]
