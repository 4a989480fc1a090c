# SPDX-License-Identifier: GPL-2.0
# The overhead suite of scripts/bench.sh, in the guest (it is /ktau/bench.sh
# of the bench image, run by ktaurun=bench, normally under -icount).
# Kernel command line:
#   ktaubench=full|smoke    iteration counts (smoke: tiny, proves each runs)
#   ktaucfg=a,b,...         configurations to run on this kernel (default:
#                           every one the kernel has)
#   ktauonly=a,b,...        only these benchmarks (default: all)
#   ktauruns=N              runs per benchmark (default: 3, smoke 1)
# Prints "BENCH <config> <benchmark> <ns-per-op>" lines (ns are guest
# instructions under -icount shift=0; the best of the runs), "# runs
# <config> <benchmark> <every run>", other "# ..." notes, and one
# "BENCHFAIL <config> <benchmark>" line for every benchmark that failed.
# In ktau-all, also the cost of sampling and of user timers (sampling(),
# below): sample-* per sample, timer-* per start/stop pair, and the ratios
# sample-ratio-buffered-signal and sample-ratio-buffered-perf.
B=/ktau/bench
M=$B/ktau-micro
T=/sys/kernel/tracing
param() { sed -n "s/.*$1=\([a-z0-9,-]*\).*/\1/p" /proc/cmdline; }
scale=$(param ktaubench)
cfgs=$(param ktaucfg | tr , ' ')
only=$(param ktauonly)
rc=0

if [ "$scale" = smoke ]; then
	R=1 NSYS=2000 NPIPE=50 NFORK=10 NFAULT=256 NSLEEP=20 NUDP=50 NKVM=50 NKVMK=640 NEXITS=256
	NTASKS=2560 FILES=8 KIB=4 WRUNS=1 NSAMPLEWORK=2000000 NPAIRS=20000 NPYITERS=200000
else
	R=3 NSYS=200000 NPIPE=10000 NFORK=500 NFAULT=16384 NSLEEP=2000 NUDP=10000 NKVM=2000 NKVMK=64000
	NEXITS=1024 NTASKS=256000 FILES=64 KIB=8 WRUNS=3 NSAMPLEWORK=50000000 NPAIRS=1000000 NPYITERS=2000000
fi
[ -n "$(param ktauruns)" ] && R=$(param ktauruns) WRUNS=$(param ktauruns)

# Which kernel: KTAU, the peer (ftrace and BPF) or the baseline.
if [ -e /proc/ktau/control ]; then
	all="ktau-off ktau-off-switched ktau-syscall ktau-irq ktau-softirq ktau-sched ktau-fault ktau-signal ktau-kvm ktau-all ktau-all-shared ktau-all-trace"
elif mount -t tracefs nodev $T 2>/dev/null && [ -e $T/function_profile_enabled ]; then
	all="peer-idle peer-ftrace-syscalls peer-ftrace-profiler peer-bpf-syscount peer-ftrace-kvm peer-perf-kvm"
else
	all="baseline"
fi
if [ -n "$cfgs" ]; then	# only those of this kernel
	c=$cfgs cfgs=""
	for x in $c; do
		case " $all " in
		*" $x "*) cfgs="$cfgs $x" ;;
		*) echo "BENCHFAIL $x kernel (not a configuration of this kernel)"; rc=1 ;;
		esac
	done
else
	cfgs=$all
fi
echo "# kernel: $(uname -r), configurations: $cfgs, scale: ${scale:-full}"

# The real workload: a file tree made once, archived and compressed, then
# decompressed and unpacked, by busybox tar and gzip. A fixed wall clock
# (the guest's comes from the host's RTC), so that the file times in the
# archive, and the work of compressing it, are the same at every run.
date -s '2024-11-17 00:00:00' >/dev/null
$M mktree /tmp/tree $FILES $KIB || rc=1
work='tar -cf - -C /tmp tree | gzip -6 >/tmp/t.tgz && mkdir -p /tmp/x && gzip -dc /tmp/t.tgz | tar -xf - -C /tmp/x && rm -rf /tmp/x /tmp/t.tgz'

want() {	# benchmark: is it to run (ktauonly)?
	case ",${only:-$1}," in *",$1,"*) return 0 ;; esac
	return 1
}

b() {	# name micro-args...
	local name=$1 out
	shift
	want "$name" || return 0
	if out=$($M -v $flags "$@" 2>/tmp/bench.err); then
		set -- $out
		echo "BENCH $cfg $name $2"
		echo "# runs $cfg $name $(sed -n 's/.*: run [0-9]*: //p' /tmp/bench.err | tr '\n' ' ')"
	else
		echo "BENCHFAIL $cfg $name"
		sed 's/^/# /' /tmp/bench.err
		rc=1
	fi
	grep -h 'distinct calls' /tmp/bench.err 2>/dev/null | sed "s/^/# $cfg: /"
	# Trace mode: every record read, none lost (a lost record is cheaper
	# than a written one, and would flatter the figure).
	if grep -q '^trace: ' /tmp/bench.err; then
		grep -h '^trace: ' /tmp/bench.err | sed "s/^/# $cfg $name: /"
		grep -q '^trace: .* 0 lost$' /tmp/bench.err ||
			{ echo "BENCHFAIL $cfg $name trace-lost"; rc=1; }
	fi
}

suite() {
	b getppid -r $R -n $NSYS getppid
	b pipe -r $R -n $NPIPE pipe
	b fork -r $R -n $NFORK fork
	b fault -r $R -n $NFAULT fault
	b nanosleep -r $R -n $NSLEEP nanosleep
	b udp -r $R -n $NUDP udp
	b kvm -r $R -n $NKVM kvm
	b kvmk -r $R -n $NKVMK kvmk
	b work -r $WRUNS exec sh -c "$work"
	b tasks1 -r $R -n $NTASKS tasks 1
	b tasks16 -r $R -n $NTASKS tasks 16
	b tasks256 -r $R -n $NTASKS tasks 256
	b exits1 -r $R -n $NEXITS exits 1
	b exits16 -r $R -n $NEXITS exits 16
	b exits256 -r $R -n $NEXITS exits 256
	b fulltable -r $R -n $NSYS fulltable
}

# A program of tools/ktau/bench whose output the awk program turns into
# BENCH lines (its own lines become notes); BENCHFAIL when it fails or the
# awk program finds no figure.
parsed() {	# name awk-program command...
	local name=$1 prog=$2
	shift 2
	want "$name" || return 0
	if "$@" >/tmp/bench.out 2>/tmp/bench.err && awk -v c="$cfg" "$prog" /tmp/bench.out; then
		sed "s/^/# $cfg: $name: /" /tmp/bench.out
	else
		echo "BENCHFAIL $cfg $name"
		sed 's/^/# /' /tmp/bench.out /tmp/bench.err
		rc=1
	fi
}

# Sampling and user timers, in ktau-all only: the same on every KTAU
# configuration. sample: ktau-bench-sample-cost, instructions per sample of
# cpu-clock every 100 us, KTAU buffered (one READ at the end), KTAU signal
# per sample (watermark 1, SIGPROF) and perf's mmap ring, in one process,
# the medians of the rounds. timer: ktau-bench-user-timer, a libktau timer
# start/stop pair with the shared page registered and without, the best of
# the rounds.
sample_awk='
$1 == "ktau" && $2 == "buffered" {b = $(NF - 1)}
$1 == "ktau" && $2 == "signal" {s = $(NF - 1)}
$1 == "perf" && $2 == "mmap" {p = $(NF - 1)}
END {
	# Each figure must be there; under -icount they are positive. Without
	# it (the smoke run, wall-clock time under TCG), a cost below the
	# noise may come out negative: no ratio is made of it then (bench.sh
	# shows "-" for it).
	if (b == "" || s == "" || p == "") exit 1
	printf "BENCH %s sample-buffered %s\nBENCH %s sample-signal %s\n", c, b, c, s
	printf "BENCH %s sample-perf %s\n", c, p
	if (s > 0) printf "BENCH %s sample-ratio-buffered-signal %.4f\n", c, b / s
	if (p > 0) printf "BENCH %s sample-ratio-buffered-perf %.4f\n", c, b / p
}'
timer_awk='
$1 == "with" && $2 == "page:" {w = $3}
$1 == "without" && $2 == "page:" {wo = $3}
END {
	if (w == "" || wo == "") exit 1
	printf "BENCH %s timer-pair-page %s\nBENCH %s timer-pair-nopage %s\n", c, w, c, wo
	printf "BENCH %s timer-pair-page-delta %.1f\n", c, w - wo
}'
# funcs: the -finstrument-functions hooks' pairs over 200 and 20,000
# distinct functions (ktau-bench-user-timer -f): the runtime's look-ups
# stay flat as a program grows.
funcs_awk='
$1 == "functions" && $2 ~ /^[0-9]+:$/ {n = $2; sub(":", "", n); x[n] = $3}
END {
	if (!("200" in x) || !("20000" in x)) exit 1
	printf "BENCH %s timer-funcs-200 %s\nBENCH %s timer-funcs-20000 %s\n", c, x["200"], c, x["20000"]
	if (x["200"] > 0) printf "BENCH %s timer-funcs-ratio %.4f\n", c, x["20000"] / x["200"]
}'
# stack: ktau-bench-sample-cost -s DEPTH, instructions per sample with an
# interpreter's stack of DEPTH frames: the kernel copying it into every
# buffered sample (ABI 1.6) against a signal per sample whose handler walks
# it (the research's method); at 10 and 50 frames.
stack_awk='
$1 == "ktau" && $2 == "stack" {k = $(NF - 1)}
$1 == "ktau" && $2 == "signal" && $3 == "+" {w = $(NF - 1)}
$1 == "stack" && $2 == "of" {d = $3}
END {
	if (k == "" || w == "" || d == "") exit 1
	printf "BENCH %s stack-%d-kernel %s\nBENCH %s stack-%d-signal %s\n", c, d, k, c, d, w
	if (w > 0) printf "BENCH %s stack-%d-ratio %.4f\n", c, d, k / w
}'
# pystack: real CPython (python3 -m ktau sample, /ktau/python/sample_cost.py)
# at 10 and 50 Python frames: ns (instructions) per sample of the kernel
# copying the Python stack into a buffered sample (ABI 1.6) against a
# signal per sample whose handler walks the frames.
pystack_awk='
$1 ~ /^[0-9]+$/ && $2 == "signal" {s[$1] = $NF}
$1 ~ /^[0-9]+$/ && $2 == "buffered" && NF > 3 {b[$1] = $NF}
END {
	if (!(10 in s) || !(10 in b) || !(50 in s) || !(50 in b)) exit 1
	for (d = 10; d <= 50; d += 40) {
		printf "BENCH %s pystack-%d-buffered %s\nBENCH %s pystack-%d-signal %s\n", c, d, b[d], c, d, s[d]
		if (s[d] > 0) printf "BENCH %s pystack-%d-ratio %.4f\n", c, d, b[d] / s[d]
	}
}'
funcs_both() {
	$B/ktau-bench-user-timer -f 200 -n $NPAIRS -r $R &&
		$B/ktau-bench-user-timer -f 20000 -n $NPAIRS -r $R
}
sampling() {
	parsed sample "$sample_awk" \
		$B/ktau-bench-sample-cost -e cpu-clock -p 100000 -n $NSAMPLEWORK -r $((R + 2))
	parsed timer "$timer_awk" $B/ktau-bench-user-timer -n $NPAIRS -r $R
	parsed funcs "$funcs_awk" funcs_both
	for d in 10 50; do
		parsed stack "$stack_awk" \
			$B/ktau-bench-sample-cost -e cpu-clock -p 100000 -n $NSAMPLEWORK \
			-r $((R + 2)) -s $d
	done
	parsed pystack "$pystack_awk" env PYTHONPATH=/ktau/python \
		/usr/bin/python3 /ktau/python/sample_cost.py --buffered --event cpu-clock:50us \
		--reps $R --iters $NPYITERS
}

# Switch a configuration on (setup) and off (teardown).
setup() {
	flags=""
	case $1 in
	ktau-all-shared)
		echo "all on" >/proc/ktau/control; flags=-s ;;
	ktau-all-trace)
		# Trace mode: the benchmark's thread traced, every group (in
		# work, the processes of the pipeline too).
		echo "all on" >/proc/ktau/control; flags=-t ;;
	ktau-all)
		echo "all on" >/proc/ktau/control ;;
	ktau-off-switched)
		# Every group off at run time: a group switched off makes every
		# return to user space check for frames it left open.
		echo "all on" >/proc/ktau/control
		echo "all off" >/proc/ktau/control ;;
	ktau-*)
		# The KTAU kernel boots with ktau=none: a group is switched off
		# only when an earlier configuration of the same boot left it on
		# (make check's smoke run).
		grep -q ' on$' /proc/ktau/control && echo "all off" >/proc/ktau/control
		g=${1#ktau-}
		[ "$g" = off ] || echo "$g on" >/proc/ktau/control ;;
	peer-ftrace-syscalls)
		echo 1 >$T/events/raw_syscalls/enable ;;
	peer-ftrace-kvm)
		# What 'perf kvm stat record' records: KVM's entry and exit
		# events (here into ftrace's ring, with no reader).
		echo 1 >$T/events/kvm/kvm_entry/enable &&
		echo 1 >$T/events/kvm/kvm_exit/enable || return 1 ;;
	peer-perf-kvm)
		# 'perf kvm stat record' itself (Debian's perf, copied in with
		# its libraries by scripts/bench.sh), system-wide: KVM's
		# events (kvm_entry, kvm_exit, kvm_pio, kvm_mmio) into perf's
		# ring buffers, which perf reads into a file in the guest's
		# memory. It starts with its events off and turns them on
		# when told through its control FIFO; the ack says they are.
		rm -f /tmp/perf.data.kvm /tmp/perf.ctl /tmp/perf.ack
		mkfifo /tmp/perf.ctl /tmp/perf.ack || return 1
		(cd /tmp && exec /usr/bin/perf kvm stat record -q -a -D -1 \
			--control fifo:/tmp/perf.ctl,/tmp/perf.ack) >/tmp/perf.out 2>&1 &
		perfpid=$!
		ack=$(timeout 120 sh -c 'echo enable >/tmp/perf.ctl && head -n 1 /tmp/perf.ack')
		[ "$ack" = ack ] || {
			echo "# perf kvm stat record did not start (ack '$ack'):"
			kill -INT $perfpid 2>/dev/null; wait $perfpid
			sed 's/^/# /' /tmp/perf.out
			return 1
		} ;;
	peer-ftrace-profiler)
		echo 1 >$T/function_profile_enabled ;;
	peer-bpf-syscount)
		rm -f /tmp/bpf.ready
		$B/ktau-syscount $B/syscount.bpf.o /tmp/bpf.ready >/tmp/bpf.out 2>&1 &
		bpfpid=$!
		i=0
		while [ ! -e /tmp/bpf.ready ] && [ $i -lt 600 ]; do
			kill -0 $bpfpid 2>/dev/null || break
			sleep 0.1; i=$((i + 1))
		done
		[ -e /tmp/bpf.ready ] || { sed 's/^/# /' /tmp/bpf.out; return 1; } ;;
	esac
	[ -e /proc/ktau/control ] && echo "# $1: $(grep ' on$' /proc/ktau/control | cut -d' ' -f1 | tr '\n' ' ')"
	return 0
}

teardown() {
	case $1 in
	peer-ftrace-kvm)
		echo 0 >$T/events/kvm/kvm_entry/enable
		echo 0 >$T/events/kvm/kvm_exit/enable
		echo "# $1: $(grep -h -E '^(entries|overrun)' $T/per_cpu/cpu0/stats | tr '\n' ' ')"
		echo >$T/trace ;;
	peer-ftrace-syscalls)
		echo 0 >$T/events/raw_syscalls/enable
		echo "# $1: $(grep -h -E '^(entries|overrun)' $T/per_cpu/cpu0/stats | tr '\n' ' ')"
		echo >$T/trace ;;
	peer-perf-kvm)
		# What perf recorded: its own report of the exits, which must
		# count the benchmark's port writes, and no lost events.
		# perf ends by the SIGINT it was stopped with, re-raised once
		# its data is written (exit status 130).
		kill -INT $perfpid
		wait $perfpid
		case $? in 0|130) ;; *) echo "BENCHFAIL $1 perf-record"; rc=1 ;; esac
		sed 's/^/# /' /tmp/perf.out
		(cd /tmp && /usr/bin/perf kvm stat report --event=vmexit) >/tmp/perf.rep 2>&1 ||
			{ echo "BENCHFAIL $1 perf-report"; rc=1; }
		awk '$1 == "VM-EXIT" { h = 1; next } h && NF >= 3 && $2 ~ /^[0-9]+$/' /tmp/perf.rep |
			sed "s/^ */# $1: perf kvm stat: /"
		grep -i lost /tmp/perf.rep | sed 's/^/# /'
		if grep -qi 'lost' /tmp/perf.rep || ! awk '$1 == "io" && $2 > 0 { f = 1 } END { exit !f }' /tmp/perf.rep; then
			echo "BENCHFAIL $1 perf-counts"; rc=1
		fi
		rm -f /tmp/perf.data.kvm* /tmp/perf.ctl /tmp/perf.ack ;;
	peer-ftrace-profiler)
		echo 0 >$T/function_profile_enabled
		echo "# $1: $(grep -c . $T/trace_stat/function0) functions profiled" ;;
	peer-bpf-syscount)
		kill -TERM $bpfpid
		wait $bpfpid || { echo "BENCHFAIL $1 accounting"; rc=1; }
		sed 's/^/# /' /tmp/bpf.out ;;
	esac
}

for cfg in $cfgs; do
	if setup $cfg; then
		suite
		[ "$cfg" = ktau-all ] && sampling
		teardown $cfg
	else
		echo "BENCHFAIL $cfg setup"
		rc=1
	fi
done
[ -e /proc/ktau/control ] && echo "all on" >/proc/ktau/control
exit $rc
