#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Does the series build on mainline 6.12.y, not only on Debian's tree?
#
# 1. No line the series adds (overlay files, '+' lines of patches/) uses an
#    identifier that only Debian's tree has (scripts/mainline/debian-only.txt).
# 2. kernel/ktau builds with Debian's additions to the headers it uses
#    taken out: a copy of each such header, reverted to mainline's text,
#    goes in an include directory searched before the tree's own
#    (NOSTDINC_FLAGS comes first on the compiler's command line).
# Prints PASS:/FAIL: lines; exit status 1 on a failure.
. "$(dirname "$0")/lib.sh"

list=$KTAU_TOP/scripts/mainline/debian-only.txt
S=$KTAU_BUILD/static
rc=0

# 1. Identifiers.
ids=$(grep -v '^#' "$list" | cut -f1 | grep -v '^$')
[ -n "$ids" ] || die "no identifiers in $list"
hits=$( {
	overlay_files | while IFS=$'\t' read -r f _; do
		case $f in *.c|*.h|*/Makefile|*/Kconfig) ;; *) continue ;; esac
		sed "s|^|$f: |" "$KTAU_TOP/$f"
	done
	for p in "$KTAU_TOP"/patches/[0-9]*.patch; do
		grep '^+[^+]' "$p" | sed "s|^|${p##*/}: |"
	done
} | grep -wF "$ids" || true)
if [ -z "$hits" ]; then
	echo "PASS: mainline: the series uses no Debian-only identifier ($(echo "$ids" | wc -l) checked)"
else
	printf '%s\n' "$hits" | sed -n 1,5p >&2
	echo "FAIL: mainline: the series uses no Debian-only identifier (see above)"
	rc=1
fi

# 2. kernel/ktau against mainline's perf_event.h.
inc=$KTAU_OUT/mainline/include
rm -rf "$inc"
mkdir -p "$inc/linux"
src=$KTAU_SRC/include/linux/perf_event.h
# Debian's security-perf-allow-further-restriction-of-perf_event_open.patch
# adds exactly this function to the header; mainline has no such function.
awk '/^static inline bool perf_paranoid_any\(void\)$/ { skip = 1 }
     skip && /^}$/ { skip = 0; drop = 1; next }
     skip { next }
     drop && /^$/ { drop = 0; next }
     { drop = 0; print }' "$src" >"$inc/linux/perf_event.h"
if grep -q perf_paranoid_any "$inc/linux/perf_event.h" ||
   [ "$(diff "$src" "$inc/linux/perf_event.h" | grep -c '^<')" -ne 5 ]; then
	echo "FAIL: mainline: kernel/ktau builds against mainline's perf_event.h (could not revert Debian's hunk; has the header changed?)"
	exit 1
fi
log=$KTAU_OUT/logs/mainline-ktau.log
find "$S/kernel/ktau" -name '*.o' -delete 2>/dev/null
if make -C "$KTAU_SRC" O="$S" -j"$KTAU_JOBS" CC="ccache gcc" \
	NOSTDINC_FLAGS="-nostdinc -I$inc" kernel/ktau/ >"$log" 2>&1 &&
   grep -q 'sample\.o' "$log"; then
	echo "PASS: mainline: kernel/ktau builds against mainline's perf_event.h"
else
	grep -E '(error|warning):' "$log" | sed -n 1,5p >&2
	echo "FAIL: mainline: kernel/ktau builds against mainline's perf_event.h (see $log)"
	rc=1
fi
# The next build of this directory must not keep these objects.
find "$S/kernel/ktau" -name '*.o' -delete 2>/dev/null
exit $rc
