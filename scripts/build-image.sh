#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the guest initramfs from the repository: static busybox, /init, the
# selftests (built against the ktau kernel's exported headers) and the
# tools. Rebuilt every time; output $KTAU_OUT/guest/initramfs.cpio.gz.
. "$(dirname "$0")/lib.sh"

# A failed build must leave no image behind: the last good one would be
# booted and tested in its place.
rm -f "$KTAU_OUT/guest/initramfs.cpio.gz" "$KTAU_OUT/guest/initramfs.cpio.gz.tmp"
"$KTAU_TOP/scripts/deps.sh" guest tools
[ -n "${KTAU_NO_PREPARE:-}" ] || "$KTAU_TOP/scripts/prepare-tree.sh"
kname=${1:-ktau}
B=$KTAU_BUILD/$kname
[ -f "$B/.config" ] || die "no $kname kernel configured; run scripts/build-kernel.sh $kname"
G=$KTAU_OUT/guest
root=$G/root
rm -rf "$root" "$G/selftests"
mkdir -p "$G/selftests"
mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc,root,ktau/bin,ktau/selftests}

log=$KTAU_OUT/logs/image.log
: >"$log"
# KTAU_HDRS: exported kernel headers to use instead of installing them
# from the kernel build (lets the image be rebuilt while a kernel builds).
if [ -n "${KTAU_HDRS:-}" ]; then
	H=$KTAU_HDRS
else
	logged "$log.headers" make -C "$KTAU_SRC" O="$B" headers_install
	H=$B/usr/include
fi

# Selftests, with the kselftest build (lib.mk) of the prepared tree.
logged "$log.selftests" make -C "$KTAU_SRC/tools/testing/selftests/ktau" \
	OUTPUT="$G/selftests" KHDR_INCLUDES="-isystem $H" \
	USERCFLAGS=-Werror USERLDFLAGS=-static
for t in "$G"/selftests/*; do
	[ -x "$t" ] && [ -f "$t" ] && cp "$t" "$root/ktau/selftests/"
done

# Tools (tools/ktau), when they exist.
if [ -f "$KTAU_TOP/tools/ktau/Makefile" ] && [ -z "${KTAU_NO_TOOLS:-}" ]; then
	logged "$log.tools" make -C "$KTAU_TOP/tools/ktau" O="$G/tools" \
		KHDR_INCLUDES="-isystem $H" STATIC=1 guest
	cp -a "$G/tools/guest/." "$root/ktau/bin/"
	# The kernel's call graph for 'ktaud drill', made by the static ktaud
	# just built (it runs here too); kept in $B while vmlinux and ktaud stay.
	calls=$B/vmlinux.calls
	if [ ! -f "$B/vmlinux" ]; then
		msg "no $B/vmlinux: the image has no call graph for 'ktaud drill'"
	else
		if [ ! -s "$calls" ] || [ "$B/vmlinux" -nt "$calls" ] ||
		   [ "$G/tools/guest/ktaud" -nt "$calls" ]; then
			logged "$log.callgraph" "$G/tools/guest/ktaud" callgraph -o "$calls.tmp" "$B/vmlinux"
			mv "$calls.tmp" "$calls"
		fi
		mkdir -p "$root/ktau/share"
		cp "$calls" "$root/ktau/share/vmlinux.calls"
		msg "call graph: /ktau/share/vmlinux.calls ($(du -h "$calls" | cut -f1), $(wc -l <"$calls") lines)"
	fi
	# Guest tests of the tools: executables that print KTAP.
	if [ -d "$KTAU_TOP/tools/ktau/tests/guest" ]; then
		mkdir -p "$root/ktau/tests"
		cp -a "$KTAU_TOP/tools/ktau/tests/guest/." "$root/ktau/tests/"
	fi
fi

# Python: Debian's python3 with the ktau package (image_python, lib.sh).
if [ -f "$KTAU_TOP/tools/ktau/python/setup.py" ] && [ -z "${KTAU_NO_TOOLS:-}" ]; then
	image_python "$root" "$G/tools" "$log.python"
fi

cp /bin/busybox "$root/bin/busybox"
install -m 0755 "$KTAU_TOP/scripts/guest/init" "$root/init"
install -m 0644 "$KTAU_TOP/scripts/guest/run-tests.sh" "$KTAU_TOP/scripts/guest/demo.sh" \
	"$KTAU_TOP/scripts/guest/bench.sh" "$root/ktau/"
printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n' >"$root/etc/group"

(cd "$root" && find . -print0 | sort -z | cpio --null -o -H newc --quiet -R 0:0) | gzip -1 >"$G/initramfs.cpio.gz.tmp"
mv "$G/initramfs.cpio.gz.tmp" "$G/initramfs.cpio.gz"
msg "guest image: $G/initramfs.cpio.gz ($(du -h "$G/initramfs.cpio.gz" | cut -f1))"
