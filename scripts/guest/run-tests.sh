# SPDX-License-Identifier: GPL-2.0
# Runs every selftest binary in /ktau/selftests and every tool test in
# /ktau/tests; the host parses the KTAP.
rc=0
# ktautests=a,b on the kernel command line runs only those (development).
only=$(sed -n 's/.*ktautests=\([^ ]*\).*/\1/p' /proc/cmdline)
# The host checks that a 2-CPU pass had its CPUs.
echo "# ktau-cpus-online $(grep -c '^processor' /proc/cpuinfo)"
# A requested name that is no test program (a typo) is a failed test, not
# nothing run.
for t in $(echo "$only" | tr ',' ' '); do
	[ -x "/ktau/selftests/$t" ] && [ -f "/ktau/selftests/$t" ] && continue
	[ -x "/ktau/tests/$t" ] && [ -f "/ktau/tests/$t" ] && continue
	echo "# ktau-selftest-begin $t"
	echo "TAP version 13"
	echo "1..1"
	echo "# ktautests= names $t, which is not in /ktau/selftests or /ktau/tests"
	echo "not ok 1 requested_program_exists"
	echo "# ktau-selftest-end $t rc=1"
	rc=1
done
# ktauhold (the multi-threaded TCG pass): nothing may patch kernel text
# while the tests run there (see tools/ktau/tests/hold.c); a holder takes
# the keys the tests would switch, before they start, and the groups must
# be the same at the end (no test switched one).
hold_pid=""
if grep -qw ktauhold /proc/cmdline; then
	groups0=$(grep -E ' (on|off)$|^clock ' /proc/ktau/control 2>/dev/null | tr '\n' ' ')
	mkfifo /tmp/hold.fifo
	/ktau/bin/ktau-test-hold >/tmp/hold.fifo 2>/tmp/hold.err &
	hold_pid=$!
	read -r hold_ready </tmp/hold.fifo
fi
# Every executable in a directory, each between markers with its status.
run_dir() {
	cd "$1" || { rc=1; return; }
	for t in *; do
		[ -x "$t" ] && [ -f "$t" ] || continue
		case ",$only," in ",,"|*",$t,"*) ;; *) continue ;; esac
		echo "# ktau-selftest-begin $t"
		./"$t"
		r=$?
		echo "# ktau-selftest-end $t rc=$r"
		[ $r -eq 0 ] || rc=1
	done
}
run_dir /ktau/selftests
# Tests of the tools (tools/ktau/tests/guest), also KTAP.
[ -d /ktau/tests ] && run_dir /ktau/tests
if grep -qw ktauhold /proc/cmdline; then
	echo "# ktau-selftest-begin ktau-hold"
	hrc=0
	echo "TAP version 13"
	echo "1..3"
	if [ "$hold_ready" = ready ] && kill -0 "$hold_pid" 2>/dev/null; then
		echo "ok 1 keys_held_from_start_to_end"
	else
		echo "# ktau-test-hold: $(cat /tmp/hold.err)"
		echo "not ok 1 keys_held_from_start_to_end"
		hrc=1
	fi
	# The holder reads the groups every 50 ms: a switch undone before the
	# end counts too.
	groups1=$(grep -E ' (on|off)$|^clock ' /proc/ktau/control 2>/dev/null | tr '\n' ' ')
	if [ -n "$groups0" ] && [ "$groups0" = "$groups1" ] && [ ! -e /tmp/hold.switched ]; then
		echo "ok 2 no_group_switched"
	else
		echo "# groups at the start: '$groups0', at the end: '$groups1'"
		[ -e /tmp/hold.switched ] && sed 's/^/# /' /tmp/hold.switched
		echo "not ok 2 no_group_switched"
		hrc=1
	fi
	# The pass is worth its name only if the vCPUs ran at the same time.
	par=$(/ktau/bin/ktau-test-hold --parallel 2>&1)
	prc=$?
	echo "# $par"
	if [ $prc -eq 0 ]; then
		echo "ok 3 vcpus_ran_in_parallel"
	else
		echo "not ok 3 vcpus_ran_in_parallel"
		hrc=1
	fi
	# The holder lives on until the reboot: its end would let perf turn
	# its scheduler hooks off, patching text while both vCPUs run.
	# Its own result (rc holds every earlier program's too).
	[ $hrc -eq 0 ] || rc=1
	echo "# ktau-selftest-end ktau-hold rc=$hrc"
fi
# Debug kernels: a kmemleak scan after everything, which must find nothing
# (two scans: an object must look unreferenced twice to be reported).
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
if [ -w /sys/kernel/debug/kmemleak ]; then
	echo "# ktau-selftest-begin kmemleak"
	echo "TAP version 13"
	echo "1..1"
	# A kmemleak that turned itself off refuses the scan (EPERM): that
	# is no clean result.
	if echo scan >/sys/kernel/debug/kmemleak && sleep 1 &&
	   echo scan >/sys/kernel/debug/kmemleak; then
		leaks=$(cat /sys/kernel/debug/kmemleak)
	else
		leaks="kmemleak refused the scan (disabled? see the console)"
	fi
	if [ -z "$leaks" ]; then
		echo "ok 1 kmemleak_finds_nothing"
		r=0
	else
		echo "$leaks" | sed 's/^/# /'
		echo "not ok 1 kmemleak_finds_nothing"
		r=1
	fi
	echo "# ktau-selftest-end kmemleak rc=$r"
	[ $r -eq 0 ] || rc=1
fi
# Console messages the host scans: make sure every printk is out.
dmesg >/dev/null
exit $rc
