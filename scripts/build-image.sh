#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the guest initramfs from the repository: static busybox, /init, the
# selftests (built against the ktau kernel's exported headers) and the
# tools. Rebuilt every time; output $KTAU_OUT/guest/initramfs.cpio.gz.
. "$(dirname "$0")/lib.sh"

"$KTAU_TOP/scripts/deps.sh" guest
"$KTAU_TOP/scripts/prepare-tree.sh"
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
logged "$log.headers" make -C "$KTAU_SRC" O="$B" headers_install

# Selftests, with the kselftest build (lib.mk) of the prepared tree.
logged "$log.selftests" make -C "$KTAU_SRC/tools/testing/selftests/ktau" \
	OUTPUT="$G/selftests" KHDR_INCLUDES="-isystem $B/usr/include" \
	USERCFLAGS=-Werror USERLDFLAGS=-static
for t in "$G"/selftests/*; do
	[ -x "$t" ] && [ -f "$t" ] && cp "$t" "$root/ktau/selftests/"
done

# Tools (tools/ktau), when they exist.
if [ -f "$KTAU_TOP/tools/ktau/Makefile" ]; then
	logged "$log.tools" make -C "$KTAU_TOP/tools/ktau" O="$G/tools" \
		KHDR_INCLUDES="-isystem $B/usr/include" STATIC=1 guest
	cp -a "$G/tools/guest/." "$root/ktau/bin/" 2>/dev/null || true
fi

cp /bin/busybox "$root/bin/busybox"
install -m 0755 "$KTAU_TOP/scripts/guest/init" "$root/init"
install -m 0644 "$KTAU_TOP/scripts/guest/run-tests.sh" "$KTAU_TOP/scripts/guest/demo.sh" "$root/ktau/"
printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n' >"$root/etc/group"

(cd "$root" && find . -print0 | sort -z | cpio --null -o -H newc --quiet -R 0:0) | gzip -1 >"$G/initramfs.cpio.gz.tmp"
mv "$G/initramfs.cpio.gz.tmp" "$G/initramfs.cpio.gz"
msg "guest image: $G/initramfs.cpio.gz ($(du -h "$G/initramfs.cpio.gz" | cut -f1))"
