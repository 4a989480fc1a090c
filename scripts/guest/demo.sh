# SPDX-License-Identifier: GPL-2.0
# The demo, run by ktaurun=demo: a small workload under "ktaud run", its
# kernel profile, and the files it wrote, sent to the host as a base64 tar
# archive between two marker lines (scripts/demo.sh unpacks it).
echo "== kernel $(uname -r), KTAU ABI $(cat /proc/ktau/version)"
mkdir -p /tmp/demo
cd /tmp/demo || exit 1
echo "== ktaud run -- sh -c 'find, gzip, sleep, ls in a pipe'"
ktaud run -o tau --save run.ktau --json=run.json -- sh -c '
	find / -xdev >/dev/null 2>&1
	dd if=/dev/zero bs=64k count=64 2>/dev/null | gzip -1 >/dev/null
	sleep 0.2
	ls -lR /proc/self/ >/dev/null 2>&1 | cat' || exit 1
echo "== ktau-merge-demo -o merged (libktau timers with -finstrument-functions,"
echo "   kernel time charged to the user routine that caused it)"
ktau-merge-demo -o merged || exit 1
echo "== merged profile of the main thread, kernel routines under user routines"
grep -E '^"[^"]* => [^"]*" ' merged/profile.0.0.0 | sort -t' ' -k4 -rn 2>/dev/null | head -12
echo "== ktaud dump --aggregate (system-wide, top routines)"
ktaud dump --aggregate --top 12 2>&1
echo "KTAU-DEMO-ARCHIVE-BEGIN"
tar cf - tau merged run.ktau run.json | gzip | base64
echo "KTAU-DEMO-ARCHIVE-END"
