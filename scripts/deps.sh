#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install the Debian packages the project uses, if any is missing.
# Usage: scripts/deps.sh [group...]   (groups: kernel guest tools bench tools-deb system cross all)
. "$(dirname "$0")/lib.sh"

declare -A GROUP=(
	[kernel]="linux-source-6.12 build-essential gcc make flex bison bc libelf-dev libssl-dev cpio kmod xz-utils rsync ccache sparse perl python3 git"
	[guest]="qemu-system-x86 busybox-static cpio gzip"
	[tools]="gcc g++ make pkg-config libjson-c-dev libdw-dev libotf2-trace-dev otf2-tools libxml2-dev gnuplot-nox clang libclang-rt-14-dev libcapstone-dev libiberty-dev python3-dev python3-setuptools python3-pip strace"
	[bench]="gcc make clang libbpf-dev libelf-dev zlib1g-dev gnuplot-nox busybox-static qemu-system-x86 cpio gzip linux-perf"
	[tools-deb]="dpkg-dev debhelper fakeroot lintian gcc pkgconf libjson-c-dev libdw-dev libcapstone-dev libiberty-dev libotf2-trace-dev dh-python python3-dev python3-setuptools"
	[system]="dpkg-dev debhelper mmdebstrap e2fsprogs qemu-system-x86 libxml2-dev libmpich-dev pkgconf"
	[cross]="gcc-riscv64-linux-gnu binutils-riscv64-linux-gnu"
)

want=()
[ $# -gt 0 ] || set -- all
for g in "$@"; do
	if [ "$g" = all ]; then
		for k in "${!GROUP[@]}"; do want+=(${GROUP[$k]}); done
	else
		[ -n "${GROUP[$g]:-}" ] || die "unknown package group '$g' (kernel guest tools bench tools-deb system cross all)"
		want+=(${GROUP[$g]})
	fi
done

missing=()
for p in $(printf '%s\n' "${want[@]}" | sort -u); do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

msg "installing missing packages: ${missing[*]}"
[ "$(id -u)" = 0 ] || die "packages missing (${missing[*]}); run as root or install them: apt-get install ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
log=$KTAU_OUT/logs/apt.log
mkdir -p "$(dirname "$log")"
if ! apt-get install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
	msg "apt-get install failed, updating the package lists and retrying"
	apt-get update >>"$log" 2>&1 || true
	apt-get install -y --no-install-recommends "${missing[@]}" >>"$log" 2>&1 ||
		{ tail -n 20 "$log" >&2; die "could not install ${missing[*]}; see $log"; }
fi
