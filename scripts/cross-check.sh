#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Does a kernel with KTAU build and link where there is no TSC? KTAU's
# Kconfig allows every 64-bit architecture with the generic entry code
# (riscv64, s390, loongarch besides x86-64); x86-64 always has
# CONFIG_X86_TSC, so the x86 builds never compile the other side of
# KTAU's #ifdefs (a definition inside one once kept every other
# architecture from linking). riscv64, cross-compiled with Debian's
# gcc-riscv64-linux-gnu:
#
# 1. allnoconfig plus scripts/cross/riscv64.config (KTAU with what its
#    optional parts need) gives CONFIG_KTAU=y and the options listed
#    there, and vmlinux links;
# 2. kernel/ktau builds without a warning at W=1 for riscv64.
# Prints PASS:/FAIL: lines; exit status 1 on a failure.
. "$(dirname "$0")/lib.sh"

frag=$KTAU_TOP/scripts/cross/riscv64.config
O=$KTAU_BUILD/riscv64
log=$KTAU_OUT/logs/cross-riscv64.log
mkdir -p "$O" "$(dirname "$log")"
"$KTAU_TOP/scripts/deps.sh" cross
"$KTAU_TOP/scripts/prepare-tree.sh"

km() {
	make -C "$KTAU_SRC" O="$O" ARCH=riscv CROSS_COMPILE=riscv64-linux-gnu- \
		CC="ccache riscv64-linux-gnu-gcc" -j"$KTAU_JOBS" "$@"
}

rc=0
# 1. The configuration and the link.
if ! km allnoconfig KCONFIG_ALLCONFIG="$frag" >"$log" 2>&1; then
	tail -n 5 "$log" >&2
	echo "FAIL: riscv64: vmlinux with KTAU links (allnoconfig failed; see $log)"
	echo "FAIL: riscv64: kernel/ktau builds without warnings at W=1 (not run: no configuration)"
	exit 1
fi
want=$(sed -n -e '/^CONFIG_/p' -e '/^# CONFIG_[A-Z0-9_]* is not set$/p' "$frag")
missing=$(while read -r l; do
	grep -qxF -- "$l" "$O/.config" || printf '%s ' "$l"
done <<<"$want")
if [ -z "$want" ] || [ -n "$missing" ]; then
	[ -n "$want" ] || missing="every option ($frag names none)"
	echo "FAIL: riscv64: vmlinux with KTAU links (the configuration lacks $missing; see $O/.config)"
	echo "FAIL: riscv64: kernel/ktau builds without warnings at W=1 (not run: no configuration)"
	exit 1
fi
rm -f "$O/vmlinux"
if km vmlinux >>"$log" 2>&1 && [ -f "$O/vmlinux" ] &&
   riscv64-linux-gnu-nm "$O/vmlinux" | grep ' ktau_gap_key$' >/dev/null; then
	echo "PASS: riscv64: vmlinux with KTAU links ($(printf '%s\n' "$want" | wc -l) options of $(basename "$frag"), no X86_TSC)"
else
	grep -E '(error|undefined reference)' "$log" | sed -n 1,5p >&2 || true
	echo "FAIL: riscv64: vmlinux with KTAU links (see $log)"
	rc=1
fi

# 2. W=1 on KTAU's own files: every warning of that build counts (the
# headers' too: include/linux/ktau.h holds the clock's non-TSC side).
wlog=$KTAU_OUT/logs/cross-riscv64-w1.log
find "$O/kernel/ktau" -name '*.o' -delete 2>/dev/null || true
if km W=1 kernel/ktau/ >"$wlog" 2>&1; then
	w=$(grep -E '(warning|error):' "$wlog" || true)
	if ! grep -E 'CC +kernel/ktau/core\.o' "$wlog" >/dev/null; then
		echo "FAIL: riscv64: kernel/ktau builds without warnings at W=1 (nothing compiled; see $wlog)"
		rc=1
	elif [ -z "$w" ]; then
		echo "PASS: riscv64: kernel/ktau builds without warnings at W=1"
	else
		printf '%s\n' "$w" | sed -n 1,5p >&2
		echo "FAIL: riscv64: kernel/ktau builds without warnings at W=1 (see $wlog)"
		rc=1
	fi
else
	grep -E '(error|warning):' "$wlog" | sed -n 1,5p >&2 || true
	echo "FAIL: riscv64: kernel/ktau builds without warnings at W=1 (build failed; see $wlog)"
	rc=1
fi
exit $rc
