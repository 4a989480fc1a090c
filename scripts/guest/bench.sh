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
	# One dynamic point: a probe on the system call's own function,
	# held by ktaud while the bench runs.
	/ktau/bin/ktaud probe add __x64_sys_getppid >/tmp/probe.out 2>&1 &
	holder=$!
	i=0
	while ! grep -q ' __x64_sys_getppid ' /proc/ktau/probes && [ $i -lt 100 ]; do
		sleep 0.1; i=$((i + 1))
	done
	if grep -q ' __x64_sys_getppid ' /proc/ktau/probes; then
		run ktau-all-probe
	else
		sed 's/^/# /' /tmp/probe.out
		echo "BENCHFAIL ktau-all-probe"
	fi
	kill $holder; wait $holder
	# An in-kernel handler of every group (samples/ktau/ktau_handler):
	# one static call at each start and stop.
	if insmod /ktau/modules/ktau_handler.ko 2>/tmp/insmod.err; then
		run ktau-all-handler
		rmmod ktau_handler
	else
		sed 's/^/# /' /tmp/insmod.err
		echo "BENCHFAIL ktau-all-handler"
	fi
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
