#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build a kernel of the prepared tree out of tree, with ccache.
# Usage: scripts/build-kernel.sh NAME [make targets...]
#   NAME   ktau     guest base + KTAU
#          noktau   guest base, CONFIG_KTAU=n
#          static   like ktau, used only for W=1/sparse runs over kernel/ktau
#          notrace  like ktau, CONFIG_KTAU_TRACE=n (the W=1 build of
#                   kernel/ktau without trace mode; make bench's
#                   ktau-*-notrace configurations)
#          debug    like ktau, plus KASAN, lockdep, UBSAN, kmemleak, ...
#          peer     guest base, CONFIG_KTAU=n, plus ftrace and BPF
#                   (ktau-peer.config: the peers of scripts/bench.sh)
#          system   like ktau, plus what a Debian 12 system with systemd
#                   needs (scripts/system/system.config: the system test)
#          system-noktau  the same, CONFIG_KTAU=n (boot-time bench)
# The build directory is $KTAU_BUILD/NAME; bzImage is in arch/x86/boot/.
. "$(dirname "$0")/lib.sh"

name=${1:?usage: build-kernel.sh NAME [targets...]}
shift
case $name in
ktau|static|notrace) frags="ktau-guest.config ktau.config" ;;
noktau) frags="ktau-guest.config" ;;
debug) frags="ktau-guest.config ktau.config ktau-debug.config" ;;
peer) frags="ktau-guest.config ktau-peer.config" ;;
system) frags="ktau-guest.config ktau.config" ;;
system-noktau) frags="ktau-guest.config" ;;
*) die "unknown kernel '$name' (ktau noktau static notrace debug peer system system-noktau)" ;;
esac
# Fragments that are not part of the kernel series (the repository's own).
extra=
case $name in system|system-noktau) extra=$KTAU_TOP/scripts/system/system.config ;; esac
[ $# -gt 0 ] || set -- bzImage modules

"$KTAU_TOP/scripts/prepare-tree.sh"
check_disk 3072
B=$KTAU_BUILD/$name
mkdir -p "$B" "$CCACHE_DIR"
log=$KTAU_OUT/logs/kernel-$name.log

# Configuration: allnoconfig plus the fragments, redone when a fragment
# changed. merge_config.sh warns when a requested value did not make it;
# that is an error here, so the config is exactly what the fragments say.
cfgs=()
for f in $frags; do cfgs+=("$KTAU_SRC/kernel/configs/$f"); done
[ -z "$extra" ] || cfgs+=("$extra")
case $name in noktau|peer|system-noktau) printf "# CONFIG_KTAU is not set\n" >"$B/noktau.config"; cfgs+=("$B/noktau.config") ;; esac
# Its modules go into the system image beside the KTAU kernel's: another
# release name, so that each kernel finds its own (system-bench.sh).
case $name in system-noktau) printf 'CONFIG_LOCALVERSION="-ktau-test-off"\n' >>"$B/noktau.config" ;; esac
case $name in notrace) printf "# CONFIG_KTAU_TRACE is not set\n" >"$B/notrace.config"; cfgs+=("$B/notrace.config") ;; esac
cfgid=$(cat "${cfgs[@]}" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$B/.ktau-config" 2>/dev/null)" != "$cfgid" ] || [ ! -f "$B/.config" ]; then
	msg "configuring $name kernel ($frags${extra:+ ${extra##*/}})"
	(cd "$KTAU_SRC" && scripts/kconfig/merge_config.sh -n -O "$B" "${cfgs[@]}") >"$log.config" 2>&1 ||
		{ tail -n 30 "$log.config" >&2; die "configuring the $name kernel failed; log: $log.config"; }
	if grep -A3 'Value requested for' "$log.config" | grep 'Actual value' >/dev/null; then
		grep -A3 'Value requested for' "$log.config" >&2
		die "config fragments ask for values the $name kernel cannot have; log: $log.config"
	fi
	printf '%s\n' "$cfgid" >"$B/.ktau-config"
fi

msg "building $name kernel ($*), log: $log"
start=$(date +%s)
if ! make -C "$KTAU_SRC" O="$B" -j"$KTAU_JOBS" CC="ccache gcc" HOSTCC="ccache gcc" "$@" >"$log" 2>&1; then
	grep -E 'error|Error' "$log" | sed -n 1,20p >&2
	die "building the $name kernel failed; full log: $log"
fi
msg "$name kernel built in $(( $(date +%s) - start ))s"
