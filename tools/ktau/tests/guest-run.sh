#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Boot a KTAU kernel with a small guest image that holds only the tools of
# tools/ktau and their guest tests (no selftests): quick to build, and
# independent of the selftests. The full image of scripts/build-image.sh
# runs the same tests as part of the project's check.
#
# Usage: tools/ktau/tests/guest-run.sh [--capture SCRIPT] [--out DIR]
#   --capture SCRIPT   run SCRIPT in the guest instead of tests/guest/*
# Environment:
#   KTAU_KERNEL  the bzImage (default: the ktau build of scripts/build-kernel.sh)
#   KTAU_HDRS    exported kernel headers with <linux/ktau.h> (default: the
#                repository's include/uapi)
#   KTAU_OUT     where to build (default /tmp/ktau-tools-guest)
#   KTAU_VMLINUX the kernel's vmlinux, for the call graph of 'ktaud drill'
#                (default: beside the bzImage's build, if there)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/.." && pwd)
top=$(cd "$tools/../.." && pwd)
capture="" out=""
while [ $# -gt 0 ]; do
	case $1 in
	--capture) capture=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) echo "guest-run.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
O=${KTAU_OUT:-/tmp/ktau-tools-guest}
out=${out:-$O/run}
kernel=${KTAU_KERNEL:-${KTAU_CACHE:-$HOME/.cache/ktau}/build/ktau/arch/x86/boot/bzImage}
hdrs=${KTAU_HDRS:-$top/include/uapi}
[ -f "$kernel" ] || { echo "guest-run.sh: no kernel at $kernel (set KTAU_KERNEL)" >&2; exit 1; }

make -s -C "$tools" O="$O/tools" KHDR_INCLUDES="-isystem $hdrs" STATIC=1 guest
root=$O/root
rm -rf "$root"
mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc,root,ktau/bin,ktau/selftests,ktau/tests}
cp -a "$O/tools/guest/." "$root/ktau/bin/"
vmlinux=${KTAU_VMLINUX:-${kernel%/arch/x86/boot/bzImage}/vmlinux}
if [ -f "$vmlinux" ]; then
	mkdir -p "$root/ktau/share"
	"$O/tools/guest/ktaud" callgraph -q -o "$root/ktau/share/vmlinux.calls" "$vmlinux"
fi
if [ -n "$capture" ]; then
	install -m 0755 "$capture" "$root/ktau/tests/"
else
	cp -a "$here/guest/." "$root/ktau/tests/"
fi
cp /bin/busybox "$root/bin/busybox"
install -m 0755 "$top/scripts/guest/init" "$root/init"
install -m 0644 "$top/scripts/guest/run-tests.sh" "$root/ktau/"
printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n' >"$root/etc/group"
(cd "$root" && find . -print0 | sort -z | cpio --null -o -H newc --quiet -R 0:0) |
	gzip -1 >"$O/initramfs.cpio.gz"
rc=0
KTAU_OUT=$O KTAU_KERNEL=$kernel KTAU_IMAGE=$O/initramfs.cpio.gz \
	bash "$top/scripts/boot.sh" --mode check --timeout 600 --out "$out" || rc=$?
grep -v '^KTAU-FIXTURES' "$out/results.log" | grep -E '^(not ok|ok|# SKIP|1\.\.)' | grep -v '^ok .*capture' | head -100 || true
echo "guest-run.sh: results in $out/results.log (boot.sh exit $rc)"
exit $rc
