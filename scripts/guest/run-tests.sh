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
