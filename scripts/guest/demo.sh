# SPDX-License-Identifier: GPL-2.0
# The demo workload: shows what KTAU sees in the guest.
echo "== kernel: $(uname -r), KTAU ABI $(cat /proc/ktau/version)"
echo "== /proc/ktau/control:"
cat /proc/ktau/control
echo "== a workload: find, gzip, sleep"
sh -c 'find / -xdev >/dev/null 2>&1; dd if=/dev/zero bs=64k count=64 2>/dev/null | gzip -1 >/dev/null; sleep 0.2; cat /proc/$$/ktau' >/tmp/prof.txt
cat /tmp/prof.txt
echo "== system-wide (/proc/ktau/aggregate), top lines:"
head -25 /proc/ktau/aggregate
