#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make kernel-deb: Debian packages of the KTAU kernel for real machines.
# Debian's own amd64 config (package linux-config-6.12) plus ktau.config,
# built with "make bindeb-pkg" out of tree in $KTAU_BUILD/deb. Takes hours
# on 2 cores; not part of make check. The .deb files land in $KTAU_OUT/deb.
# KTAU_DEB_CONFIG_ONLY=1 stops after the configuration (a quick check).
. "$(dirname "$0")/lib.sh"

"$KTAU_TOP/scripts/deps.sh" kernel
missing=()
for p in linux-config-6.12 dpkg-dev debhelper dwarves; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "install ${missing[*]} first (apt-get install ${missing[*]})"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null ||
		die "could not install ${missing[*]}"
fi
"$KTAU_TOP/scripts/prepare-tree.sh"
check_disk 20480
cfg=$(ls /usr/src/linux-config-6.12/config.amd64_none_amd64.xz 2>/dev/null) ||
	die "Debian's amd64 config not found under /usr/src/linux-config-6.12"
B=$KTAU_BUILD/deb
mkdir -p "$B"
xz -dc "$cfg" >"$B/.config"
cd "$KTAU_SRC"
# Debian signs with its own keys, which are not in the source package.
scripts/config --file "$B/.config" --set-str SYSTEM_TRUSTED_KEYS "" \
	--set-str SYSTEM_REVOCATION_KEYS "" --disable MODULE_SIG_ALL \
	--set-str BUILD_SALT "" --set-str LOCALVERSION "-ktau"
scripts/kconfig/merge_config.sh -m -O "$B" "$B/.config" kernel/configs/ktau.config >/dev/null
make O="$B" olddefconfig >/dev/null
grep -q '^CONFIG_KTAU=y' "$B/.config" || die "CONFIG_KTAU did not stay on in Debian's config"
if [ -n "${KTAU_DEB_CONFIG_ONLY:-}" ]; then
	msg "configured $B/.config (Debian amd64 + ktau.config); stopping before the build"
	exit 0
fi
log=$KTAU_OUT/logs/kernel-deb.log
msg "building Debian packages (long); log: $log"
make O="$B" -j"$KTAU_JOBS" CC="ccache gcc" bindeb-pkg >"$log" 2>&1 ||
	{ tail -n 30 "$log" >&2; die "bindeb-pkg failed; log: $log"; }
mkdir -p "$KTAU_OUT/deb"
mv "$KTAU_BUILD"/*.deb "$KTAU_OUT/deb/"
msg "packages in $KTAU_OUT/deb; install with: dpkg -i $KTAU_OUT/deb/linux-image-*.deb"
