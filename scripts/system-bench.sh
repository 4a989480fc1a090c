#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The cost of KTAU on a whole distribution boot: the system test's Debian 12
# image (scripts/system.sh) booted under QEMU -icount (one guest
# instruction is one virtual nanosecond, so the counts repeat) with the
# KTAU kernel and ktau=all (the default), with ktau=none, and with the
# CONFIG_KTAU=n kernel of the same configuration (build-kernel.sh
# system-noktau), each until systemd says the boot is over. The figure is
# the time the CPU spent running tasks by then (rq_cpu_time summed over
# /proc/schedstat: guest instructions), which does not count the idle
# waits that -icount's sleep=off jumps over; the uptime is shown too.
# Output: $KTAU_OUT/bench/system-boot.{txt,csv}.
. "$(dirname "$0")/lib.sh"

O=$KTAU_OUT/bench/system
mkdir -p "$O"
"$KTAU_TOP/scripts/build-kernel.sh" system-noktau bzImage ||
	die "the CONFIG_KTAU=n system kernel did not build"
noktau=$KTAU_BUILD/system-noktau/arch/x86/boot/bzImage
csv=$KTAU_OUT/bench/system-boot.csv
echo "config,state,run_ns,uptime_s,units" >"$csv"
for c in ktau-all ktau-none noktau; do
	case $c in
	ktau-all) args=(--append ktau=all) ;;
	ktau-none) args=(--append ktau=none) ;;
	noktau) args=(--kernel "$noktau") ;;
	esac
	msg "boot-time bench: $c"
	"$KTAU_TOP/scripts/system.sh" --bench --icount --timeout 1800 --out "$O/$c" "${args[@]}" ||
		die "the $c boot failed; see $O/$c/console.log"
	line=$(tr -d '\r' <"$O/$c/results.log" | grep -a '^# ktau-boot ' | tail -n 1)
	[ -n "$line" ] || die "the $c boot reported no '# ktau-boot' line; see $O/$c/results.log"
	printf '%s\n' "$line" | sed -n "s/^# ktau-boot state=\\([^ ]*\\) run_ns=\\([0-9]*\\) uptime_s=\\([0-9.]*\\) units=\\([0-9]*\\).*/$c,\\1,\\2,\\3,\\4/p" >>"$csv"
done
awk -F, 'NR > 1 { cfg[NR] = $1; st[NR] = $2; ns[NR] = $3; up[NR] = $4; if ($1 == "noktau") base = $3; n = NR }
END {
	printf "Debian 12 boot to \"systemctl is-system-running\" (QEMU -icount shift=0,sleep=off, 1 CPU)\n"
	printf "%-10s %-9s %16s %10s %12s\n", "kernel", "state", "task run (ns)", "uptime (s)", "vs KTAU=n"
	for (i = 2; i <= n; i++)
		printf "%-10s %-9s %16d %10.2f %+11.2f%%\n", cfg[i], st[i], ns[i], up[i], base ? (ns[i] / base - 1) * 100 : 0
}' "$csv" | tee "$KTAU_OUT/bench/system-boot.txt"
