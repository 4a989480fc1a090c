# SPDX-License-Identifier: GPL-2.0
# Overhead figures, run by ktaurun=bench (normally under -icount).
# Prints "BENCH <setting> <benchmark> <value>" lines.
run() {	# setting
	set -- "$1" $(/ktau/bin/ktau-bench-syscall 200000 7)
	echo "BENCH $1 $2 $3"
}
if [ -w /proc/ktau/control ]; then
	echo "all off" >/proc/ktau/control
	run ktau-off
	for g in syscall irq softirq sched fault signal; do
		echo "all off" >/proc/ktau/control
		echo "$g on" >/proc/ktau/control
		run "ktau-$g"
	done
	echo "all on" >/proc/ktau/control
	run ktau-all
else
	run noktau
fi

# "ktaud dump --all" with 100, 1000 and 5000 other threads: its time and
# its system calls (which must not grow with the number of tasks).
if [ -w /proc/ktau/control ] && [ -z "${KTAU_BENCH_SKIP_THREADS:-}" ]; then
	echo "all on" >/proc/ktau/control
	for n in 100 1000 5000; do
		set -- $(KTAU_BENCH_VERBOSE=1 /ktau/bin/ktau-bench-threads $n /ktau/bin/ktaud dump --all -q)
		echo "BENCHT dump-all $2 $4 $6"
	done
fi
