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
# waits that -icount's sleep=off jumps over. Even under -icount a boot
# does not repeat exactly (disk I/O completes in host time, systemd starts
# units in parallel), so each configuration boots KTAU_SYSBENCH_RUNS times
# (default 3), interleaved, and the table gives the median, the range,
# the mean and its standard deviation, and the differences of the means
# with their 95% confidence intervals. The CONFIG_KTAU=n kernel has its
# own release name and its own modules, installed in the image beside the
# KTAU kernel's (system.sh --modules: one image for all three), so that
# it loads the same modules; the bench fails when the boots did not load
# as many modules or start as many units.
# Output: $KTAU_OUT/bench/system-boot.{txt,csv}.
. "$(dirname "$0")/lib.sh"

O=$KTAU_OUT/bench/system
mkdir -p "$O"
"$KTAU_TOP/scripts/build-kernel.sh" system-noktau bzImage modules ||
	die "the CONFIG_KTAU=n system kernel did not build"
noktau=$KTAU_BUILD/system-noktau/arch/x86/boot/bzImage
mods=$O/noktau-modules
rm -rf "$mods"
make -C "$KTAU_SRC" O="$KTAU_BUILD/system-noktau" INSTALL_MOD_PATH="$mods" modules_install \
	>"$KTAU_OUT/logs/system-noktau-modules.log" 2>&1 ||
	die "installing the CONFIG_KTAU=n kernel's modules failed; see $KTAU_OUT/logs/system-noktau-modules.log"
csv=$KTAU_OUT/bench/system-boot.csv
runs=${KTAU_SYSBENCH_RUNS:-3}
case $runs in ''|*[!0-9]*|0) die "KTAU_SYSBENCH_RUNS=$runs: give a positive number of boots" ;; esac
echo "config,run,state,run_ns,uptime_s,units,modules" >"$csv"
for r in $(seq 1 "$runs"); do
	for c in ktau-all ktau-none noktau; do
		case $c in
		ktau-all) args=(--append ktau=all) ;;
		ktau-none) args=(--append ktau=none) ;;
		noktau) args=(--kernel "$noktau") ;;
		esac
		msg "boot-time bench: $c, run $r of $runs"
		d=$O/$c-$r
		"$KTAU_TOP/scripts/system.sh" --bench --icount --timeout 1800 --modules "$mods" \
			--out "$d" "${args[@]}" || die "the $c boot failed; see $d/console.log"
		line=$(tr -d '\r' <"$d/results.log" 2>/dev/null | grep -a '^# ktau-boot ' | tail -n 1 || true)
		[ -n "$line" ] || die "the $c boot reported no '# ktau-boot' line; see $d/results.log"
		row=$(printf '%s\n' "$line" | sed -n "s/^# ktau-boot state=\\([^ ]*\\) run_ns=\\([0-9]*\\) uptime_s=\\([0-9.]*\\) units=\\([0-9]*\\) modules=\\([0-9]*\\).*/$c,$r,\\1,\\2,\\3,\\4,\\5/p")
		[ -n "$row" ] || die "the $c boot's '# ktau-boot' line is not as expected: $line"
		printf '%s\n' "$row" >>"$csv"
	done
done
# The same boot for each kernel: as many modules loaded, units started.
same=$(tail -n +2 "$csv" | cut -d, -f1,6,7 | sort -u | awk -F, '{ u[$2]; m[$3] } END { print length(u), length(m) }')
[ "$same" = "1 1" ] || die "the boots differ in units or modules loaded (config,units,modules: $(tail -n +2 "$csv" | cut -d, -f1,6,7 | sort -u | tr '\n' ' ')); see $csv"
sort -t, -k1,1 -k4,4n <(tail -n +2 "$csv") | awk -F, -v runs="$runs" '
# Student t, two-sided 95%, by degrees of freedom (Welch), rounded down.
function t95(df,   i) {
	split("12.71 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228", tt, " ")
	if (df < 1) return 12.71
	if (df <= 10) return tt[int(df)]
	if (df <= 15) return 2.131
	if (df <= 20) return 2.086
	if (df <= 30) return 2.042
	return 1.96
}
{ k = $1; n[k]++; v[k, n[k]] = $4; s[k] += $4; if ($3 != "running") bad[k] = bad[k] " " $3 }
END {
	for (k in n) {
		med[k] = n[k] % 2 ? v[k, (n[k] + 1) / 2] : (v[k, n[k] / 2] + v[k, n[k] / 2 + 1]) / 2
		mean[k] = s[k] / n[k]
		ss = 0
		for (i = 1; i <= n[k]; i++) ss += (v[k, i] - mean[k]) ^ 2
		var[k] = n[k] > 1 ? ss / (n[k] - 1) : 0
	}
	base = med["noktau"]
	printf "Debian 12 boot until \"systemctl is-system-running\" returns (QEMU -icount shift=0,sleep=off, 1 CPU):\n"
	printf "time the CPU ran tasks (rq_cpu_time, guest instructions), %d boots each\n", runs
	printf "%-10s %16s %16s %16s %12s %16s %8s\n", "kernel", "median (ns)", "min", "max",
		"median vs n", "mean (ns)", "sd"
	split("ktau-all ktau-none noktau", order, " ")
	for (i = 1; i <= 3; i++) {
		k = order[i]
		printf "%-10s %16.0f %16.0f %16.0f %+11.2f%% %16.0f %7.2f%%%s\n", k, med[k], v[k, 1],
			v[k, n[k]], base ? (med[k] / base - 1) * 100 : 0, mean[k],
			mean[k] ? 100 * sqrt(var[k]) / mean[k] : 0,
			bad[k] ? "  not running:" bad[k] : ""
	}
	# The difference of the means with its 95% confidence interval
	# (Welch): the cost, or the bound on it that these boots resolve.
	# ktau-all against ktau-none is the same kernel: the cost of the
	# KTAU groups on; against noktau (CONFIG_KTAU=n, with its own
	# modules, loading as many as the others) the cost of KTAU built in,
	# off and on.
	split("ktau-all:noktau ktau-none:noktau ktau-all:ktau-none", pairs, " ")
	for (i = 1; i <= 3; i++) {
		split(pairs[i], pr, ":")
		k = pr[1]
		b = pr[2]
		if (n[k] < 2 || n[b] < 2 || !mean[b])
			continue
		se2 = var[k] / n[k] + var[b] / n[b]
		df = se2 ? se2 ^ 2 / ((var[k] / n[k]) ^ 2 / (n[k] - 1) + (var[b] / n[b]) ^ 2 / (n[b] - 1)) : 1000
		d = 100 * (mean[k] - mean[b]) / mean[b]
		h = 100 * t95(df) * sqrt(se2) / mean[b]
		printf "%s vs %s: mean %+.2f%%, 95%% confidence interval %+.2f%% to %+.2f%% (Welch, df %.0f)\n",
			k, b, d, d - h, d + h, df
	}
}' | tee "$KTAU_OUT/bench/system-boot.txt"
