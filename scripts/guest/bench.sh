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
