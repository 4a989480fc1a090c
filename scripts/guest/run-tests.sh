# SPDX-License-Identifier: GPL-2.0
# Runs every selftest binary in /ktau/selftests and every tool test in
# /ktau/tests; the host parses the KTAP.
cd /ktau/selftests || exit 1
rc=0
for t in *; do
	[ -x "$t" ] || continue
	echo "# ktau-selftest-begin $t"
	./"$t"
	r=$?
	echo "# ktau-selftest-end $t rc=$r"
	[ $r -eq 0 ] || rc=1
done
# Tests of the tools (tools/ktau/tests/guest), also KTAP.
if [ -d /ktau/tests ]; then
	cd /ktau/tests || exit 1
	for t in *; do
		[ -x "$t" ] && [ -f "$t" ] || continue
		echo "# ktau-selftest-begin $t"
		./"$t"
		r=$?
		echo "# ktau-selftest-end $t rc=$r"
		[ $r -eq 0 ] || rc=1
	done
fi
# Console messages the host scans: make sure every printk is out.
dmesg >/dev/null
exit $rc
