#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Boot a built kernel with the guest image in QEMU (TCG).
# Usage: scripts/boot.sh [--kernel NAME] [--mode check|demo|shell]
#                        [--timeout S] [--icount] [--smp N] [--mttcg]
#                        [--append ARGS] [--out DIR]
# --mttcg: multi-threaded TCG (vCPUs run in parallel host threads; every
# other run uses one host thread). Only for runs that patch no kernel text
# after boot (see mttcg_append in scripts/check.sh).
# The serial console goes to DIR/console.log and the guest's results (second
# serial port) to DIR/results.log. Exit status: 0 when the guest finished and
# the console is clean, 1 when the console shows a kernel problem, the kernel
# is tainted at the end, the guest's run failed, or a ktautests= name in
# --append is no program of the image, 2 when the guest did not finish
# (hang or crash).
. "$(dirname "$0")/lib.sh"
. "$KTAU_TOP/scripts/check-lib.sh"

kname=ktau mode=check timeout=600 icount=0 smp=1 append="" out="" tcg=single
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kname=$2; shift 2 ;;
	--mode) mode=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--icount) icount=1; shift ;;
	--smp) smp=$2; shift 2 ;;
	--mttcg) tcg=multi; shift ;;
	--append) append=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) die "boot.sh: unknown argument '$1' (see the header of scripts/boot.sh)" ;;
	esac
done
# No output of an earlier run may outlive this one, whatever stops it.
out=${out:-$KTAU_OUT/guest-run/$kname-$mode}
mkdir -p "$out"
rm -f "$out/console.log" "$out/results.log"
"$KTAU_TOP/scripts/deps.sh" guest
img=${KTAU_IMAGE:-$KTAU_OUT/guest/initramfs.cpio.gz}
kernel=${KTAU_KERNEL:-$KTAU_BUILD/$kname/arch/x86/boot/bzImage}
[ -f "$kernel" ] || die "no kernel at $kernel; run scripts/build-kernel.sh $kname"
[ -f "$img" ] || die "no guest image at $img; run scripts/build-image.sh"
# A ktautests= name that is no test program of the image would run
# nothing: refuse it here when the image's tree is at hand (the guest
# reports it as a failed test too).
if [ -z "${KTAU_IMAGE:-}" ] && [ -d "$KTAU_OUT/guest/root/ktau" ]; then
	unknown=$(ktautests_unknown "$append" "$KTAU_OUT/guest/root" | tr '\n' ' ')
	[ -z "$unknown" ] || die "ktautests= names ${unknown}which the image does not have; its test programs are: $(image_programs "$KTAU_OUT/guest/root" | tr '\n' ' ')"
fi

# Modules must be those of the kernel booted (the image has the ktau
# kernel's): the example modules of samples/ktau and the test module of
# kernel/ktau go in a second archive, which the kernel unpacks over the
# first.
mods=$KTAU_BUILD/$kname/samples/ktau
if [ -z "${KTAU_IMAGE:-}" ] && ls "$mods"/*.ko >/dev/null 2>&1; then
	m=$out/modules-root
	rm -rf "$m"
	mkdir -p "$m/ktau/modules"
	cp "$mods"/*.ko "$m/ktau/modules/"
	if ls "$KTAU_BUILD/$kname/kernel/ktau"/*.ko >/dev/null 2>&1; then
		cp "$KTAU_BUILD/$kname/kernel/ktau"/*.ko "$m/ktau/modules/"
	fi
	{ cat "$img"; (cd "$m" && find . | sort | cpio -o -H newc --quiet -R 0:0 | gzip -1); } >"$out/initramfs.cpio.gz"
	img=$out/initramfs.cpio.gz
fi

cmdline="console=ttyS0 panic=-1 oops=panic ktaurun=$mode $append"
# One core per socket: the firmware's MP table (the guest has no ACPI)
# lists one CPU per socket, so -smp 2 alone would boot one CPU.
# Single-threaded TCG: with one host thread per vCPU (MTTCG), a vCPU can
# run a stale translation of code that another vCPU's static key patching
# (text_poke_bp(), int3) has already restored, and trap on an int3 the
# kernel no longer knows: an "Oops: int3" that real CPUs cannot produce.
qemu=(qemu-system-x86_64 -machine pc -accel tcg,thread=$tcg -cpu max -m 1024
	-smp "$smp,sockets=$smp,cores=1,threads=1"
	-kernel "$kernel" -initrd "$img" -no-reboot -display none -nodefaults)
# -icount makes one guest instruction one virtual nanosecond (benchmarks).
# Without it, TCG guests read the host's TSC, which the guest kernel often
# fails to calibrate against the PIT under load (and it has no HPET or PM
# timer without ACPI): tell it the host's TSC rate when the host has a
# constant one.
if [ "$icount" = 1 ]; then
	qemu+=(-icount shift=0,sleep=off)
elif grep -qw constant_tsc /proc/cpuinfo; then
	khz=$(awk '/^cpu MHz/ { printf "%d", $4 * 1000; exit }' /proc/cpuinfo)
	# The host's TSC is reliable; without tsc=reliable the clocksource
	# watchdog compares it with jiffies, which lag under TCG, and drops
	# it for a jiffies clock that runs slow.
	[ -n "$khz" ] && [ "$khz" -gt 0 ] &&
		cmdline="$cmdline tsc_early_khz=$khz tsc=reliable"
fi
qemu+=(-append "$cmdline")

if [ "$mode" = shell ]; then
	exec "${qemu[@]}" -serial mon:stdio -serial "file:$out/results.log"
fi
set +e
timeout -k 10 "$timeout" "${qemu[@]}" -serial "file:$out/console.log" \
	-serial "file:$out/results.log" </dev/null >"$out/qemu.log" 2>&1
qrc=$?
set -e

# Anything the kernel should never print fails the run (the patterns:
# KTAU_CONSOLE_BAD in scripts/check-lib.sh), and so does a run with no end.
rc=0
qemu_run_verdict "$out" $qrc "$timeout" "the guest" || rc=$?
[ $rc -eq 0 ] || exit $rc
done_line=$(guest_done_line "$out/results.log")
tainted=$(guest_tainted "$out/results.log")
if [ -z "$tainted" ]; then
	msg "the guest did not report /proc/sys/kernel/tainted (is its /init up to date? run scripts/build-image.sh); results: $out/results.log"
	exit 1
elif [ "$tainted" -ne 0 ]; then
	msg "the kernel is tainted (tainted=$tainted: $(taint_bits "$tainted")); find the cause in $out/console.log"
	exit 1
fi
case $done_line in
*" rc=0 "*|*" rc=0") exit 0 ;;
*) exit 1 ;;
esac
