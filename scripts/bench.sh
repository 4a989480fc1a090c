#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make bench: KTAU's overhead against the unpatched kernel, ftrace and eBPF,
# in guest instructions.
#
# Builds four kernels from the same base (kernel/configs/ktau-guest.config):
# baseline (CONFIG_KTAU=n), KTAU, KTAU without trace mode
# (CONFIG_KTAU_TRACE=n, for the ktau-*-notrace configurations: trace mode
# compiled in but off must cost profile mode nothing), and the peer kernel
# (CONFIG_KTAU=n plus ftrace and BPF, kernel/configs/ktau-peer.config);
# boots each in QEMU (TCG)
# with -icount shift=0,sleep=off, one CPU, so that one guest instruction is
# one virtual nanosecond; and runs the same benchmarks (ktau-micro, see
# tools/ktau/bench/micro.c, driven by scripts/guest/bench-suite.sh) under
# every configuration: baseline; KTAU with every group off, each group
# alone, every group on, every group on with a shared page registered; the
# peer kernel idle, with ftrace's raw_syscalls events, with ftrace's function
# profiler, and with an eBPF program doing per-task, per-syscall count and
# latency accounting (tools/ktau/bench/syscount.bpf.c). On the KTAU kernel,
# in ktau-all, also the cost of one sample (KTAU buffered, KTAU signal per
# sample, perf's mmap ring: tools/ktau/bench/sample-cost.c) and of a libktau
# user timer start/stop pair with and without the shared page, and the
# -finstrument-functions hooks' pairs over 200 and 20,000 functions
# (tools/ktau/bench/user-timer.c).
#
# Usage: scripts/bench.sh [--smoke] [--jobs N]
#   --smoke   tiny iteration counts, one boot per kernel: proves that every
#             configuration boots and every benchmark runs (make check);
#             writes $KTAU_OUT/bench-smoke/results.tsv (PASS/FAIL lines)
#   --jobs N  guests booted at once (default 2; the figures do not depend
#             on it: guest time counts guest instructions)
#   --report  only make the tables and the chart again from the guest logs
#             of the last run
# Environment: KTAU_BENCH_CONFIGS="cfg ..." only these configurations,
# KTAU_BENCH_ONLY=bench,... only these benchmarks (both for trying out;
# "sample" and "timer" are the sampling and user timer programs).
# Output in $KTAU_OUT/bench/: bench.csv, bench.md (tables of instructions
# per operation and ratios to the baseline), bench.rst (the same for
# Documentation/trace/ktau.rst), bench.png (gnuplot), and the
# guest logs in guest-*/.
. "$(dirname "$0")/lib.sh"

smoke=0 jobs=2 append="" report=0
while [ $# -gt 0 ]; do
	case $1 in
	--smoke) smoke=1; shift ;;
	--report) report=1; shift ;;
	--jobs) jobs=$2; shift 2 ;;
	*) die "bench.sh: unknown argument '$1' (see the header of scripts/bench.sh)" ;;
	esac
done
t0=$(date +%s)

if [ $smoke = 1 ]; then
	# Without -icount: much faster to boot (the kernel's busy-wait
	# calibration of the local APIC timer runs slowly under -icount).
	B=$KTAU_OUT/bench-smoke scale=smoke timeout=600 icount=""
	# One boot per kernel, every configuration of it; and the exits on
	# two CPUs, in one configuration.
	runs="baseline:noktau::1 ktau:ktau::1 peer:peer::1 ktau-all-2cpu:ktau:ktau-all:2"
else
	# tsc=reliable: the TSC is a valid clocksource for high-resolution
	# timers at once (there is no HPET or ACPI PM timer to check it
	# against); under -icount shift=0 it runs at exactly 1 GHz.
	# norandmaps: no address-space randomization of user processes (it
	# changes how many page tables a fork copies), so that a run repeats
	# to the instruction.
	B=$KTAU_OUT/bench scale=full timeout=3600
	icount="--icount" append="tsc=reliable tsc_early_khz=1000000 norandmaps"
	# One boot per configuration: each starts from the same state, and
	# runs the benchmarks in the same order. The longest first.
	runs=""
	# NAME-2cpu: configuration NAME booted with two CPUs, only the exit
	# benchmarks (their figures are named BENCH-2cpu): whether an exit's
	# cost grows when exits run on two CPUs at once. Under -icount the
	# CPUs take turns and the clock counts the instructions of both, so
	# a figure is the instructions both CPUs spent per exit.
	for c in ${KTAU_BENCH_CONFIGS:-peer-ftrace-profiler peer-ftrace-syscalls peer-bpf-syscount peer-idle
		 peer-ftrace-kvm peer-perf-kvm baseline ktau-off ktau-off-switched ktau-syscall ktau-irq ktau-softirq ktau-sched ktau-fault
		 ktau-signal ktau-kvm ktau-all ktau-all-shared ktau-all-trace ktau-off-notrace ktau-all-notrace
		 ktau-all-shared-notrace baseline-2cpu ktau-off-2cpu ktau-all-2cpu}; do
		case $c in
		baseline|baseline-2cpu) k=noktau ;;
		ktau-*-trace-notrace) die "configuration '$c': no trace mode without trace mode" ;;
		ktau-*-notrace) k=notrace ;;
		ktau-*) k=ktau ;;
		peer-*) k=peer ;;
		*) die "unknown configuration '$c'" ;;
		esac
		# The guest runs configuration ktau-all on the notrace kernel
		# as on the KTAU kernel; its figures are named after the run.
		case $c in
		*-2cpu) runs="$runs $c:$k:${c%-2cpu}:2" ;;
		*-notrace) runs="$runs $c:$k:${c%-notrace}:1" ;;
		*) runs="$runs $c:$k:$c:1" ;;
		esac
	done
fi
# The benchmarks of the two-CPU runs: the exits, of those asked for.
only2=fork,exits1,exits16,exits256
if [ -n "${KTAU_BENCH_ONLY:-}" ]; then
	only2=$(tr , '\n' <<<"$KTAU_BENCH_ONLY" | grep -x -E 'fork|exits(1|16|256)' | paste -sd, || true)
fi
W=$B/work
boot_s=0
if [ $report = 0 ]; then
# Only this script's files: out/bench also has scripts/bench-syscall.sh's.
rm -rf "$B"/guest-* "$B"/work "$B"/bench.* "$B"/chart.dat "$B"/gnuplot.log "$B"/results.tsv
mkdir -p "$B"
"$KTAU_TOP/scripts/deps.sh" bench guest kernel tools

for k in noktau ktau peer; do
	"$KTAU_TOP/scripts/build-kernel.sh" "$k"
done
case $runs in *:notrace:*) "$KTAU_TOP/scripts/build-kernel.sh" notrace ;; esac

# The guest programs and a small image of their own: busybox, /init, the
# suite as /ktau/bench.sh, ktau-micro, the eBPF peer and its loader.
logged "$W/programs.log" make -C "$KTAU_TOP/tools/ktau/bench" O="$W/bin"
# The sampling and user timer benchmarks (the latter links libktau).
tools=$(mkdir -p "$W/tools" && cd "$W/tools" && pwd)
logged "$W/tools.log" make -C "$KTAU_TOP/tools/ktau" O="$tools" STATIC=1 \
	"$tools/guest/ktau-bench-sample-cost" "$tools/guest/ktau-bench-user-timer"
root=$W/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc,root,ktau/bench}
cp /bin/busybox "$root/bin/busybox"
install -m 0755 "$KTAU_TOP/scripts/guest/init" "$root/init"
install -m 0644 "$KTAU_TOP/scripts/guest/bench-suite.sh" "$root/ktau/bench.sh"
cp "$W"/bin/ktau-micro "$W"/bin/ktau-syscount "$W"/bin/syscount.bpf.o \
	"$tools"/guest/ktau-bench-sample-cost "$tools"/guest/ktau-bench-user-timer "$root/ktau/bench/"
# CPython and the ktau package for the Python sampling rows (pystack-*).
image_python "$root" "$tools" "$W/python.log"
# Debian's perf for peer-perf-kvm ('perf kvm stat record' itself), with
# the libraries it links, at their paths (the image has no other ones).
perf=$(command -v perf) || die "no perf: install Debian's linux-perf (scripts/deps.sh bench)"
for f in "$perf" $(ldd "$perf" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
	mkdir -p "$root$(dirname "$f")"
	cp -L "$f" "$root$f"
done
mkdir -p "$root/usr/bin"
[ "$perf" = /usr/bin/perf ] || ln -sf "$perf" "$root/usr/bin/perf"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
# The same bytes every time (file times fixed): a different image changes
# the instructions of the boot, which moves the timer interrupts against
# the benchmarks and their figures by a little.
find "$root" -exec touch -h -d @0 {} +
(cd "$root" && find . -print0 | sort -z | cpio --null -o -H newc --quiet -R 0:0 --reproducible) |
	gzip -1 -n >"$W/initramfs.cpio.gz"

# Boot the guests, $jobs at a time.
boot() {	# name kernel configs cpus
	local cfg="" only=""
	[ -n "$3" ] && cfg="ktaucfg=$3"
	# Every group off from the boot: configurations switch on what they
	# measure, and none pays for a group switched off unless it says so.
	[ "$2" = ktau ] || [ "$2" = notrace ] && cfg="$cfg ktau=none"
	if [ "$4" = 2 ]; then
		only="ktauonly=$only2"
	elif [ -n "${KTAU_BENCH_ONLY:-}" ]; then
		only="ktauonly=$KTAU_BENCH_ONLY"
	fi
	KTAU_IMAGE=$W/initramfs.cpio.gz "$KTAU_TOP/scripts/boot.sh" --kernel "$2" \
		--mode bench $icount --smp "$4" --timeout $timeout \
		--append "ktaubench=$scale $cfg $only ${append:-}" --out "$B/guest-$1" 2>"$B/guest-$1.err"
	echo $? >"$B/guest-$1.rc"
}
msg "booting the guests ($scale), $jobs at a time; logs in $B/guest-*/"
tb=$(date +%s)
for r in $runs; do
	IFS=: read -r name kernel cfgs cpus <<<"$r"
	# Two-CPU runs have nothing to do when no exit benchmark is asked for.
	if [ "$cpus" != 1 ] && [ -z "$only2" ]; then
		mkdir -p "$B/guest-$name"
		echo 0 >"$B/guest-$name.rc"
		continue
	fi
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
	boot "$name" "$kernel" "$cfgs" "$cpus" &
done
wait
boot_s=$(( $(date +%s) - tb ))
fi

# Collect: "kernel,config,benchmark,insns_per_op".
csv=$B/bench.csv
echo "kernel,config,benchmark,insns_per_op,ratio_to_baseline" >"$csv"
: >"$B/bench.raw"
failed=0
for r in $runs; do
	IFS=: read -r name kernel cfgs cpus <<<"$r"
	rc=$(cat "$B/guest-$name.rc" 2>/dev/null || echo 2)
	if [ "$rc" != 0 ]; then
		failed=1
		msg "guest run $name ($kernel) failed (exit $rc): $(head -c 300 "$B/guest-$name.err"); console: $B/guest-$name/console.log"
	fi
	sfx="" csfx=""
	[ "$cpus" = 1 ] || sfx=-${cpus}cpu
	[ "$kernel" = notrace ] && csfx=-notrace
	tr -d '\r' <"$B/guest-$name/results.log" 2>/dev/null |
		awk -v k="$kernel" -v sfx="$sfx" -v csfx="$csfx" \
			'$1 == "BENCH" {print k, $2 csfx, $3 sfx, $4}' >>"$B/bench.raw"
done
awk '$2 == "baseline" {base[$3] = $4} {row[NR] = $0}
     END {
	for (i = 1; i <= NR; i++) {
		split(row[i], f, " ")
		ratio = (f[3] in base && base[f[3]] > 0) ? sprintf("%.4f", f[4] / base[f[3]]) : ""
		printf "%s,%s,%s,%s,%s\n", f[1], f[2], f[3], f[4], ratio
	}
     }' "$B/bench.raw" >>"$csv"

if [ $smoke = 1 ]; then
	# One PASS/FAIL line per configuration: it ran, every benchmark gave a
	# figure. For scripts/check.sh.
	res=$B/results.tsv
	: >"$res"
	for r in $runs; do
		IFS=: read -r name kernel cfgs cpus <<<"$r"
		log=$B/guest-$name/results.log
		# Every benchmark, or the four exit ones on two CPUs.
		want=15 kname=$kernel
		[ "$cpus" = 1 ] || { want=4; kname="$kernel (on $cpus CPUs)"; }
		rc=$(cat "$B/guest-$name.rc" 2>/dev/null || echo 2)
		if [ "$rc" = 2 ] || ! grep -q '^# kernel:' "$log" 2>/dev/null; then
			printf 'FAIL\tbench smoke: %s kernel boots and runs the suite\t%s\n' "$kname" \
				"see $B/guest-$name/console.log" >>"$res"
			continue
		fi
		printf '%s\tbench smoke: %s kernel boots and runs the suite\t%s\n' \
			"$([ "$rc" = 0 ] && echo PASS || echo FAIL)" "$kname" \
			"$([ "$rc" = 0 ] || echo "exit $rc; see $B/guest-$name/")" >>"$res"
		for c in $(sed -n 's/^# kernel: .*configurations: \(.*\), scale:.*/\1/p' "$log" | tr -d '\r'); do
			n=$(grep -c "^BENCH $c " "$log" || true)
			bad=$(grep "^BENCHFAIL $c " "$log" | cut -d' ' -f3 | tr -d '\r' | tr '\n' ' ' || true)
			label=$c
			[ "$cpus" = 1 ] || label="$c on $cpus CPUs"
			if [ "$n" -ge "$want" ] && [ -z "$bad" ]; then
				printf 'PASS\tbench smoke: %s: every benchmark runs\t\n' "$label" >>"$res"
			else
				printf 'FAIL\tbench smoke: %s: every benchmark runs\t%s\n' "$label" \
					"$n figures; failed: ${bad:-none}; see $log" >>"$res"
			fi
			[ "$c" = ktau-all ] && [ "$cpus" = 1 ] || continue
			# Every cost, and a ratio wherever its denominator was
			# measured above zero: the smoke's tiny runs without
			# -icount can measure a cost at or below zero (the run
			# without sampling slower than those with it), and the
			# guest prints no ratio then.
			n=$(tr -d '\r' <"$log" | awk -v c="$c" '
				$1 == "BENCH" && $2 == c && $3 ~ /^(sample|timer)-/ { v[$3] = $4; n++ }
				END {
					want = 9
					if (v["sample-signal"] > 0) want++
					if (v["sample-perf"] > 0) want++
					print (n == want ? 11 : n)
				}')
			if [ "$n" -eq 11 ]; then
				printf 'PASS\tbench smoke: %s: sampling and user timer costs\t\n' "$c" >>"$res"
			else
				printf 'FAIL\tbench smoke: %s: sampling and user timer costs\t%s\n' "$c" \
					"$n of 11 figures; see $log" >>"$res"
			fi
			# CPython's sampling costs (pystack-*): the four costs,
			# ratios only where the signal cost came out above zero.
			n=$(tr -d '\r' <"$log" | awk -v c="$c" '
				$1 == "BENCH" && $2 == c && $3 ~ /^pystack-[0-9]+-(buffered|signal)$/ { n++ }
				END { print n + 0 }')
			if [ "$n" -eq 4 ] && ! grep -q "^BENCHFAIL $c pystack" "$log"; then
				printf 'PASS\tbench smoke: %s: CPython stack sampling costs\t\n' "$c" >>"$res"
			else
				printf 'FAIL\tbench smoke: %s: CPython stack sampling costs\t%s\n' "$c" \
					"$n of 4 figures; see $log" >>"$res"
			fi
		done
	done
	msg "bench smoke took $(( $(date +%s) - t0 ))s (guests ${boot_s}s); results in $res"
	! grep -q '^FAIL' "$res"
	exit
fi

# Tables: instructions per operation, and ratio to the baseline.
order="baseline ktau-off ktau-off-switched ktau-syscall ktau-irq ktau-softirq ktau-sched ktau-fault ktau-signal ktau-kvm ktau-all ktau-all-shared ktau-all-trace ktau-off-notrace ktau-all-notrace ktau-all-shared-notrace peer-idle peer-ftrace-syscalls peer-ftrace-profiler peer-bpf-syscount peer-ftrace-kvm peer-perf-kvm"
micro="getppid pipe fork fault nanosleep udp kvm kvmk work"
scal="getppid tasks1 tasks16 tasks256 fulltable"
exits="fork exits1 exits16 exits256"
exits2="fork-2cpu exits1-2cpu exits16-2cpu exits256-2cpu"
table() {	# kind(value|ratio) benchmarks...
	local kind=$1
	shift
	awk -v kind="$kind" -v order="$order" -v benches="$*" '
	function fmt(v) {
		if (kind == "ratio") return sprintf("%.3f", v)
		return v >= 100000 ? sprintf("%.0f", v) : sprintf("%.1f", v)
	}
	$2 == "baseline" {base[$3] = $4}
	{v[$2, $3] = $4; have[$2] = 1}
	END {
		nb = split(benches, b, " ")
		nc = split(order, c, " ")
		printf "| configuration |"
		for (j = 1; j <= nb; j++) printf " %s |", b[j]
		printf "\n|---|"
		for (j = 1; j <= nb; j++) printf "---:|"
		printf "\n"
		for (i = 1; i <= nc; i++) {
			if (!(c[i] in have)) continue
			# Only configurations with a figure in this table.
			any = 0
			for (j = 1; j <= nb; j++) if ((c[i], b[j]) in v) any = 1
			if (!any) continue
			printf "| %s |", c[i]
			for (j = 1; j <= nb; j++) {
				if (!((c[i], b[j]) in v)) { printf " - |"; continue }
				x = v[c[i], b[j]]
				if (kind == "ratio")
					printf " %s |", (base[b[j]] > 0 ? fmt(x / base[b[j]]) : "-")
				else
					printf " %s |", fmt(x)
			}
			printf "\n"
		}
	}' "$B/bench.raw"
}
# Figures without a baseline (the KTAU kernel only): sampling and timers.
sampling="sample-buffered sample-signal sample-perf sample-ratio-buffered-signal sample-ratio-buffered-perf"
timers="timer-pair-page timer-pair-nopage timer-pair-page-delta"
funcs="timer-funcs-200 timer-funcs-20000 timer-funcs-ratio"
stacks="stack-10-kernel stack-10-signal stack-10-ratio stack-50-kernel stack-50-signal stack-50-ratio"
pystacks="pystack-10-buffered pystack-10-signal pystack-10-ratio pystack-50-buffered pystack-50-signal pystack-50-ratio"
extra() {	# md|rst benchmarks...: one row per configuration that has them
	local kind=$1
	shift
	awk -v kind="$kind" -v order="$order" -v benches="$*" '
	BEGIN {
		label["sample-buffered"] = "buffered"; label["sample-signal"] = "signal"
		label["sample-perf"] = "perf"
		label["sample-ratio-buffered-signal"] = "buffered/signal"
		label["sample-ratio-buffered-perf"] = "buffered/perf"
		label["timer-pair-page"] = "with page"; label["timer-pair-nopage"] = "without page"
		label["timer-pair-page-delta"] = "delta"
		label["timer-funcs-200"] = "200 functions"
		label["timer-funcs-20000"] = "20,000 functions"
		label["timer-funcs-ratio"] = "20,000/200"
		label["stack-10-kernel"] = "10: kernel copy"; label["stack-10-signal"] = "10: signal + walk"
		label["stack-10-ratio"] = "10: ratio"
		label["stack-50-kernel"] = "50: kernel copy"; label["stack-50-signal"] = "50: signal + walk"
		label["stack-50-ratio"] = "50: ratio"
		label["pystack-10-buffered"] = "10: buffered"; label["pystack-10-signal"] = "10: signal"
		label["pystack-10-ratio"] = "10: ratio"
		label["pystack-50-buffered"] = "50: buffered"; label["pystack-50-signal"] = "50: signal"
		label["pystack-50-ratio"] = "50: ratio"
	}
	function fmt(b, x) { return b ~ /ratio/ ? sprintf("%.3f", x) : sprintf("%.1f", x) }
	function line(  j, s) {
		s = "===================="
		for (j = 1; j <= nb; j++) s = s "  =================="
		return s "\n"
	}
	{v[$2, $3] = $4; have[$2, $3] = 1}
	END {
		nb = split(benches, b, " "); nc = split(order, c, " ")
		rows = ""
		for (i = 1; i <= nc; i++) {
			if (!((c[i], b[1]) in have)) continue
			rows = rows sprintf(kind == "md" ? "| %s |" : "%-20s", c[i])
			for (j = 1; j <= nb; j++) {
				x = ((c[i], b[j]) in have) ? fmt(b[j], v[c[i], b[j]]) : "-"
				rows = rows sprintf(kind == "md" ? " %s |" : "  %18s", x)
			}
			rows = rows "\n"
		}
		if (rows == "") {
			if (kind == "md") print "(no figures: the KTAU kernel did not run ktau-all)"
			exit
		}
		if (kind == "md") {
			printf "| configuration |"
			for (j = 1; j <= nb; j++) printf " %s |", label[b[j]]
			printf "\n|---|"
			for (j = 1; j <= nb; j++) printf "---:|"
			printf "\n%s", rows
		} else {
			printf "%s%-20s", line(), "configuration"
			for (j = 1; j <= nb; j++) printf "  %18s", label[b[j]]
			printf "\n%s%s%s", line(), rows, line()
		}
	}' "$B/bench.raw" | sed 's/[[:space:]]*$//'
}
delta() {	# benchmark: instructions over the baseline per configuration
	awk -v bench="$1" -v order="$order" '
	$2 == "baseline" && $3 == bench {base = $4}
	$3 == bench {v[$2] = $4}
	END {
		n = split(order, c, " ")
		for (i = 1; i <= n; i++)
			if (c[i] in v)
				printf "| %s | %.1f | %+.1f | %+.2f%% |\n", c[i], v[c[i]], v[c[i]] - base, 100 * (v[c[i]] - base) / base
	}' "$B/bench.raw"
}
{
	echo "# KTAU overhead benchmarks"
	echo
	echo "Guest instructions per operation (QEMU TCG, -icount shift=0,sleep=off, one CPU: one"
	echo "instruction is one virtual ns), best of the runs; made by \`make bench\`"
	echo "($(date -u +%Y-%m-%d), $(git -C "$KTAU_TOP" describe --always --dirty 2>/dev/null))."
	echo
	echo "Benchmarks: getppid = null system call; pipe = one round trip of a byte between two"
	echo "processes; fork = fork+exit+wait; fault = one page fault (mmap 64 pages, write each,"
	echo "munmap); nanosleep = nanosleep(100 us) less the 100 us (timer slack 1 ns: the"
	echo "system call, the timer interrupt and the wake-up; the idle time is skipped by"
	echo "-icount sleep=off); udp = a 64-byte datagram to itself over loopback and back"
	echo "(NET_RX softirq); kvm = one exit of a KVM guest completed in user space (a vCPU"
	echo "writing to an I/O port: KVM_RUN, the exit, back; under TCG's emulation of AMD SVM,"
	echo "so the exit's own cost is not a real machine's); kvmk = one exit that KVM handles in"
	echo "the kernel and that goes straight back to the guest (CPUID, 64 in each KVM_RUN, less"
	echo "a KVM_RUN of kvm's vCPU); work = busybox tar | gzip -6 of a 512 KiB tree of 64 text files,"
	echo "then gzip -d | tar -x (per run); tasksN = getppid with N processes running at once;"
	echo "fulltable = getppid in a task whose KTAU table is nearly full (60 of 64 slots);"
	echo "exitsN = one exit of N processes let go at once (wake-up, exit, reaping; not the fork)."
	echo "One boot per configuration; baseline = CONFIG_KTAU=n; peer-* = the peer kernel"
	echo "(CONFIG_KTAU=n, ftrace and BPF built in): idle, ftrace raw_syscalls events to the"
	echo "ring buffer, ftrace function profiler, eBPF per-task per-syscall count+latency,"
	echo "ftrace kvm_entry and kvm_exit events (what \`perf kvm stat record\` records)."
	echo "The KTAU kernel boots with ktau=none and each configuration switches on what it"
	echo "measures; ktau-off-switched = every group switched on and off again at run time,"
	echo "after which each return to user space checks for frames a switched-off group left."
	echo "ktau-kvm = the kvm group alone. ktau-all-trace = every group on and the benchmark's"
	echo "thread traced (trace mode, one record per completed call, drained between runs;"
	echo "in work, every process of the pipeline traced too, by inheritance, none refused"
	echo "and no record lost). KUtrace's published cost is about 24 ns per event"
	echo "(two events per system call), on its authors' hardware: published, not measured here."
	echo
	echo "## Instructions per operation"
	echo
	table value $micro
	echo
	echo "## Ratio to the baseline (CONFIG_KTAU=n)"
	echo
	table ratio $micro
	echo
	echo "## Null system call: instructions over the baseline"
	echo
	echo "| configuration | insns per getppid | over baseline | overhead |"
	echo "|---|---:|---:|---:|"
	delta getppid
	echo
	echo "## One KVM exit completed in user space: instructions over the baseline"
	echo
	echo "ktau-kvm less ktau-off is the kvm group's cost per exit (its three hooks: exit,"
	echo "end of KVM_RUN, entry); peer-ftrace-kvm less peer-idle is the cost of recording"
	echo "KVM's kvm_entry and kvm_exit events, as \`perf kvm stat record\` does;"
	echo "peer-perf-kvm less peer-idle is \`perf kvm stat record -a\` itself (Debian's"
	echo "linux-perf $(perf --version 2>/dev/null | cut -d' ' -f3)): its four events (kvm_entry, kvm_exit, kvm_pio, kvm_mmio) into"
	echo "perf's ring buffers and perf reading them into a file, all in the guest."
	echo
	echo "| configuration | insns per exit | over baseline | overhead |"
	echo "|---|---:|---:|---:|"
	delta kvm
	echo
	echo "An exit handled in the kernel (kvmk, CPUID): the kvm group's two hooks (exit,"
	echo "entry), each replacing the frame on top in place."
	echo
	echo "| configuration | insns per exit | over baseline | overhead |"
	echo "|---|---:|---:|---:|"
	delta kvmk
	echo
	echo "Targets (issue 17): KTAU's cost per exit at most a tenth of perf's recording,"
	echo "and at most 5% of the exit's own cost (ktau-off's figure; under TCG's"
	echo "emulation of SVM, not a real machine's exit)."
	echo
	echo "| cost per exit | insns | KTAU's / this | target |"
	echo "|---|---:|---:|---|"
	awk '$3 == "kvm" { v[$2] = $4 }
	END {
		if (!("ktau-kvm" in v) || !("ktau-off" in v)) exit
		k = v["ktau-kvm"] - v["ktau-off"]
		printf "| KTAU (ktau-kvm - ktau-off) | %.1f | | |\n", k
		if (("peer-perf-kvm" in v) && ("peer-idle" in v) && v["peer-perf-kvm"] > v["peer-idle"])
			printf "| perf kvm stat record | %.1f | %.3f | <= 0.1 |\n",
				v["peer-perf-kvm"] - v["peer-idle"], k / (v["peer-perf-kvm"] - v["peer-idle"])
		if (("peer-ftrace-kvm" in v) && ("peer-idle" in v) && v["peer-ftrace-kvm"] > v["peer-idle"])
			printf "| ftrace kvm_entry + kvm_exit | %.1f | %.3f | |\n",
				v["peer-ftrace-kvm"] - v["peer-idle"], k / (v["peer-ftrace-kvm"] - v["peer-idle"])
		printf "| the exit itself (ktau-off) | %.1f | %.3f | <= 0.05 |\n", v["ktau-off"], k / v["ktau-off"]
	}' "$B/bench.raw"
	awk '$3 == "kvmk" { v[$2] = $4 }
	END {
		if (!("ktau-kvm" in v) || !("ktau-off" in v) || v["ktau-off"] <= 0) exit
		k = v["ktau-kvm"] - v["ktau-off"]
		printf "| KTAU, exit handled in the kernel (kvmk) | %.1f | | |\n", k
		if (("peer-perf-kvm" in v) && ("peer-idle" in v) && v["peer-perf-kvm"] > v["peer-idle"])
			printf "| perf kvm stat record, kvmk | %.1f | %.3f | <= 0.1 |\n",
				v["peer-perf-kvm"] - v["peer-idle"], k / (v["peer-perf-kvm"] - v["peer-idle"])
		printf "| the kernel-handled exit itself (ktau-off) | %.1f | %.3f | <= 0.05 |\n",
			v["ktau-off"], k / v["ktau-off"]
	}' "$B/bench.raw"
	echo
	echo "## Trace mode: ktau-all-trace over ktau-all"
	echo
	echo "Targets (issue 16): at most +60 instructions per traced null system call (two"
	echo "records' worth), and the work benchmark, every process traced, within 1%."
	echo
	echo "| benchmark | ktau-all | ktau-all-trace | over ktau-all | ratio | target |"
	echo "|---|---:|---:|---:|---:|---|"
	awk '$2 == "ktau-all" {a[$3] = $4} $2 == "ktau-all-trace" {t[$3] = $4}
	END {
		if (("getppid" in a) && ("getppid" in t))
			printf "| getppid | %.1f | %.1f | %+.1f | %.4f | <= +60 |\n", a["getppid"], t["getppid"],
				t["getppid"] - a["getppid"], t["getppid"] / a["getppid"]
		if (("work" in a) && ("work" in t) && a["work"] > 0)
			printf "| work | %.0f | %.0f | %+.0f | %.4f | <= 1.0100 |\n", a["work"], t["work"],
				t["work"] - a["work"], t["work"] / a["work"]
		if (("work" in a) && first > 0)
			printf "| work, first run | %.0f | %.0f | %+.0f | %.4f | |\n", a["work"], first,
				first - a["work"], first / a["work"]
	}' first="$(cat "$B"/guest-*/results.log | tr -d '\r' |
		awk '$1 == "#" && $2 == "runs" && $3 == "ktau-all-trace" && $4 == "work" {print $5}')" \
		"$B/bench.raw"
	echo
	echo "The best of the runs; in the first run of a session each traced process's"
	echo "buffer is allocated and cleared (2 MiB a thread here), in the next ones the"
	echo "rings of the processes that exited and were read are reused."
	echo
	if grep -q '^notrace ' "$B/bench.raw"; then
	echo "## Trace mode compiled in but off: CONFIG_KTAU_TRACE=y against =n"
	echo
	echo "ktau-*-notrace run the configuration of that name on a kernel built without"
	echo "trace mode (build-kernel.sh notrace: the KTAU kernel's configuration with"
	echo "CONFIG_KTAU_TRACE=n). Target (issue 16): profile mode costs the same whether"
	echo "trace mode is compiled in or not, when no task is traced: every group off, every"
	echo "group on, and every group on with the benchmark's shared page registered (the"
	echo "extra work of every pop switched on). A difference is \"same\" when it is within"
	echo "the spread of the rounds of one boot (the larger of the two boots' best-to-worst)"
	echo "or 0.1% of the figure, whichever is larger: the rounds of fork, work and the exits"
	echo "differ by page allocation and timer interrupts even on one kernel, and two kernel"
	echo "images that differ in code a benchmark never runs differ by a few instructions in"
	echo "pipe (up to 0.06% with every group off, where KTAU runs nothing). make bench fails"
	echo "on a \"DIFFERS\". make check compares the hooks' instructions themselves"
	echo "(scripts/same-hooks.sh)."
	echo
	echo "| benchmark | configuration | trace mode built in | without | difference | spread | |"
	echo "|---|---|---:|---:|---:|---:|---|"
	# The rounds of each run: "# runs CONFIG BENCH v1 v2 ...".
	for g in ktau-off ktau-all ktau-all-shared; do
		for n in "$g" "$g-notrace"; do
			[ -f "$B/guest-$n/results.log" ] || continue
			tr -d '\r' <"$B/guest-$n/results.log" |
				awk -v g="$n" '$1 == "#" && $2 == "runs" {
					lo = hi = $5
					for (i = 6; i <= NF; i++) { if ($i < lo) lo = $i; if ($i > hi) hi = $i }
					print "spread", g, $4, hi - lo
				}'
		done
	done | awk -v benches="$micro $scal" -v cfgs="ktau-off ktau-all ktau-all-shared" '
	$1 == "spread" {sd[$2, $3] = $4; next}
	{v[$2, $3] = $4}
	END {
		n = split(benches, b, " "); nc = split(cfgs, c, " ")
		for (i = 1; i <= n; i++) {
			if (seen[b[i]]++) continue
			for (k = 1; k <= nc; k++) {
				x = c[k]; y = c[k] "-notrace"
				if (!((x, b[i]) in v) || !((y, b[i]) in v)) continue
				a = v[x, b[i]]; z = v[y, b[i]]; d = z - a
				sp = sd[x, b[i]] > sd[y, b[i]] ? sd[x, b[i]] : sd[y, b[i]]
				if (sp < 0.001 * a) sp = 0.001 * a
				printf "| %s | %s | %.1f | %.1f | %+.1f (%+.3f%%) | %.1f | %s |\n", b[i], x, a, z, d,
					(a > 0 ? 100 * d / a : 0), sp, ((d < 0 ? -d : d) <= sp + 0.05 ? "same" : "DIFFERS")
			}
		}
	}' - "$B/bench.raw"
	echo
	fi
	echo "## Scaling: getppid with 1, 16 and 256 tasks, and with a nearly full table"
	echo
	table value $scal
	echo
	table ratio $scal
	echo
	echo "## Exits: 1, 16 and 256 processes exiting at once"
	echo
	echo "The cost of one exit must not grow with the number of tasks exiting together"
	echo "(KTAU folds each exiting task's table into per-CPU totals, no global lock)."
	echo
	table value $exits
	echo
	table ratio $exits
	echo
	echo "The same on two CPUs (NAME-2cpu runs; both CPUs' instructions per exit):"
	echo
	table value $exits2
	echo
	table ratio $exits2
	echo
	echo "## Sampling: instructions per sample"
	echo
	echo "ktau-bench-sample-cost in ktau-all: cpu-clock every 100 us over user-mode work, in one"
	echo "process: KTAU buffered (the kernel appends each sample, one READ at the end), KTAU"
	echo "signal per sample (watermark 1, an empty SIGPROF handler: what an interpreter uses)"
	echo "and perf's mmap ring buffer (as perf record). Instructions per sample: (time with"
	echo "sampling - time without) / samples, the median of the rounds. Targets: buffered/signal"
	echo "<= 0.33, buffered/perf <= 1.00."
	echo
	extra md $sampling
	echo
	echo "## User timers: instructions per start/stop pair"
	echo
	echo "ktau-bench-user-timer in ktau-all: a libktau timer start/stop pair with the thread's"
	echo "shared page registered (kernel time charged at every event) and without, the empty"
	echo "loop subtracted, the best of the rounds; delta = the page's cost per pair."
	echo
	extra md $timers
	echo
	echo "ktau-bench-user-timer -f N: the -finstrument-functions hooks' entry/exit pairs over N"
	echo "distinct functions in turn (page registered), the best of the rounds: the runtime's"
	echo "look-ups (a table by address that grows with the program) stay flat."
	echo
	extra md $funcs
	echo
	echo "ktau-bench-sample-cost -s DEPTH in ktau-all: an interpreter's stack of DEPTH frames in"
	echo "every sample, cpu-clock every 100 us: the kernel copying the frame chain into each"
	echo "buffered sample (user stack descriptor, ABI 1.6) against a signal per sample whose"
	echo "handler walks the chain (the research's method). Instructions per sample, medians;"
	echo "target: kernel copy/signal + walk <= 0.50."
	echo
	extra md $stacks
	echo
	echo "The same with real CPython (/ktau/python/sample_cost.py --buffered in ktau-all:"
	echo "python3 -m ktau sample, cpu-clock every 50 us, a function spinning 10 and 50 Python"
	echo "frames deep; ns per sample = (CPU time sampled - plain) / samples in the spinning"
	echo "function, the best of the runs): --buffered (the kernel copies the Python stack"
	echo "into each sample) against a signal per sample whose handler walks the frames."
	echo "Target: buffered/signal <= 0.50. (At 1 ms the session's fixed costs, spread over"
	echo "20 times fewer samples, dominate: 0.94 and 0.57 in one run, 2026-11-27.)"
	echo
	extra md $pystacks
	echo
	echo "## Repeatability"
	echo
	echo "Largest spread between the runs of one benchmark in one boot, (max - min) / min,"
	echo "over every configuration; the tables show the best run. Two runs of make bench"
	echo "agree to within about 0.05% (-icount, norandmaps, the same image)."
	echo
	# "in": the run (guest-NAME), not the configuration the guest ran.
	awk -v benches="$micro $scal" '{ sub(/\r$/, "") } $1 == "#" && $2 == "runs" {
		min = max = $5
		for (i = 6; i <= NF; i++) { if ($i < min) min = $i; if ($i > max) max = $i }
		run = FILENAME; sub(/\/results\.log$/, "", run); sub(/.*\/guest-/, "", run)
		if (min > 0 && (max - min) / min > worst[$4]) { worst[$4] = (max - min) / min; where[$4] = run }
		seen[$4] = 1
	} END {
		printf "| benchmark | largest spread | in run |\n|---|---:|---|\n"
		n = split(benches, o, " ")
		for (i = 1; i <= n; i++)
			if (o[i] in seen && !(o[i] in done)) {
				printf "| %s | %.2f%% | %s |\n", o[i], 100 * worst[o[i]], where[o[i]]
				done[o[i]] = 1
			}
	}' "$B"/guest-*/results.log
	echo
	echo "## Notes from the guests"
	echo
	grep -h '^# ' "$B"/guest-*/results.log | tr -d '\r' | grep -v '^# runs ' |
		grep -E 'distinct calls|peer-|syscount:|kernel:|sample: buffered/signal|timer: difference|trace: ' | sed 's/^# /    /'
} >"$B/bench.md"

# The same figures as reST tables, for Documentation/trace/ktau.rst.
rst() {	# benchmarks...
	awk -v order="$order" -v benches="$*" '
	function fmt(x) { return x >= 100000 ? sprintf("%.0f", x) : sprintf("%.1f", x) }
	function pct(p) {
		return (p < 10 && p > -10) ? sprintf("%+.2f%%", p) : (p < 100 ? sprintf("%+.1f%%", p) : sprintf("%+.0f%%", p))
	}
	function line(  j) {
		printf "%s", "===================="
		for (j = 1; j <= nb; j++) printf "  %s", "========="
		printf "\n"
	}
	$2 == "baseline" {base[$3] = $4}
	{v[$2, $3] = $4; have[$2] = 1}
	END {
		nb = split(benches, b, " "); nc = split(order, c, " ")
		line()
		printf "%-20s", "configuration"
		for (j = 1; j <= nb; j++) printf "  %9s", b[j]
		printf "\n"
		line()
		for (i = 1; i <= nc; i++) {
			if (!(c[i] in have)) continue
			printf "%-20s", c[i]
			for (j = 1; j <= nb; j++) {
				x = v[c[i], b[j]]
				if (c[i] == "baseline" || !(b[j] in base)) cell = fmt(x)
				else cell = pct(100 * (x - base[b[j]]) / base[b[j]])
				printf "  %9s", cell
			}
			printf "\n"
		}
		line()
	}' "$B/bench.raw" | sed 's/[[:space:]]*$//'
}
{ rst $micro; echo; rst $scal; echo; extra rst $sampling; echo; extra rst $timers; } >"$B/bench.rst"

# Chart: ratio to the baseline per benchmark, for the main configurations.
chart_cfgs="ktau-off ktau-all ktau-all-shared peer-idle peer-bpf-syscount peer-ftrace-syscalls peer-ftrace-profiler"
awk -v cfgs="$chart_cfgs" -v benches="$micro" '
	$2 == "baseline" {base[$3] = $4}
	{v[$2, $3] = $4}
	END {
		nc = split(cfgs, c, " "); nb = split(benches, b, " ")
		printf "bench"
		for (i = 1; i <= nc; i++) printf " %s", c[i]
		printf "\n"
		for (j = 1; j <= nb; j++) {
			printf "%s", b[j]
			for (i = 1; i <= nc; i++)
				printf " %s", ((c[i], b[j]) in v && base[b[j]] > 0) ? v[c[i], b[j]] / base[b[j]] : "NaN"
			printf "\n"
		}
	}' "$B/bench.raw" >"$B/chart.dat"
ncols=$(echo $chart_cfgs | wc -w)
gnuplot <<EOF >"$B/gnuplot.log" 2>&1 || msg "gnuplot failed; see $B/gnuplot.log"
set terminal pngcairo size 1200,600 noenhanced font ",10"
set output "$B/bench.png"
set title "Cost per operation relative to CONFIG_KTAU=n (guest instructions, QEMU -icount)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 2
set yrange [0.8:*]
set ytics (1, 1.1, 1.25, 1.5, 2, 3, 4, 6, 8, 12, 16)
set grid ytics
set ylabel "ratio to baseline (log scale)"
set key outside right top vertical
plot for [i=2:$((ncols + 1))] "$B/chart.dat" using i:xtic(1) title columnheader(i)
EOF

cat "$B/bench.md"
elapsed=$(( $(date +%s) - t0 ))
msg "bench took ${elapsed}s (guests ${boot_s}s); results in $B/: bench.csv bench.md bench.rst bench.png"
[ $failed = 0 ] || die "some guest runs failed; see above"
# Issue 16's target as a verdict: trace mode compiled in and off costs
# profile mode nothing beyond the spread of the rounds.
if grep -qF '| DIFFERS |' "$B/bench.md"; then
	grep -F '| DIFFERS |' "$B/bench.md" >&2
	die "profile mode's cost changes with trace mode compiled in (CONFIG_KTAU_TRACE=y, no session): see \"Trace mode compiled in but off\" in $B/bench.md"
fi
