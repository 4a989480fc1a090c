#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make kernel-deb: Debian packages of the KTAU kernel, with "make bindeb-pkg".
# Usage: scripts/kernel-deb.sh [debian|system]
#   debian  (default) for real machines: Debian's own amd64 config (package
#           linux-config-6.12) plus ktau.config, local version "-ktau",
#           built out of tree in $KTAU_CACHE/deb/debian. Takes hours on 2 cores;
#           not part of make check. Packages in $KTAU_OUT/deb/debian.
#           KTAU_DEB_CONFIG=FILE starts from another configuration instead
#           (your distribution's: /boot/config-$(uname -r)).
#           KTAU_DEB_LOCALMODCONFIG=1 then keeps only the modules loaded on
#           this machine now (make localmodconfig; much shorter build, but
#           the kernel supports only this machine's hardware);
#           KTAU_DEB_LSMOD=FILE takes lsmod's output saved on the machine
#           the kernel is for.
#           Modules are signed with a key the build makes
#           ($KTAU_CACHE/deb/debian/certs/signing_key.pem, which the
#           kernel trusts), so that they load under Secure Boot's lockdown.
#           KTAU_DEB_CONFIG_ONLY=1 stops after the configuration.
#           Debug information (DWARF, BTF and the -dbg package) is off
#           unless KTAU_DEB_DEBUG_INFO=1: Debian's kernel handbook
#           advises the same for custom builds (it makes the build
#           several times larger and slower); KTAU needs none of it.
#   system  the small kernel of the system test (scripts/build-kernel.sh
#           system: the guest config plus scripts/system/system.config,
#           local version "-ktau-test"), built in $KTAU_BUILD/system
#           (the only build there that makes packages).
#           Packages in $KTAU_OUT/deb/system; repackaged only when the
#           kernel or its config changed.
# KTAU_DEB_JOBS sets the parallel jobs (default $KTAU_JOBS).
. "$(dirname "$0")/lib.sh"

flavour=${1:-debian}
case $flavour in
debian|system) ;;
*) die "unknown flavour '$flavour' (debian or system)" ;;
esac

"$KTAU_TOP/scripts/deps.sh" kernel
missing=()
pkgs="dpkg-dev debhelper dwarves"
[ "$flavour" = debian ] && pkgs="$pkgs linux-config-6.12"
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "install ${missing[*]} first (apt-get install ${missing[*]})"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" \
		>>"$KTAU_OUT/logs/apt.log" 2>&1 || die "could not install ${missing[*]}; see $KTAU_OUT/logs/apt.log"
fi
dest=$KTAU_OUT/deb/$flavour
log=$KTAU_OUT/logs/kernel-deb-$flavour.log
B=$KTAU_BUILD/system
[ "$flavour" = debian ] && B=$KTAU_CACHE/deb/debian

# bindeb-pkg leaves the packages in the parent of the build directory;
# each flavour gets its own parent so that they never mix.
collect() {
	rm -rf "$dest"
	mkdir -p "$dest"
	local found=0 f
	for f in "$(dirname "$B")"/*.deb "$(dirname "$B")"/*.buildinfo "$(dirname "$B")"/*.changes; do
		[ -f "$f" ] || continue
		mv "$f" "$dest/"
		found=1
	done
	[ $found = 1 ] || die "bindeb-pkg wrote no package next to $B; log: $log"
}

if [ "$flavour" = system ]; then
	start=$(date +%s)
	# Packaged again only when the prepared tree or a config fragment
	# changed (bindeb-pkg links the kernel again each time, with a new
	# build number, so the build's own files cannot tell).
	"$KTAU_TOP/scripts/prepare-tree.sh"
	kid() {
		cat "$KTAU_SRC/.ktau-stamp" "$KTAU_SRC/kernel/configs/ktau-guest.config" \
			"$KTAU_SRC/kernel/configs/ktau.config" "$KTAU_TOP/scripts/system/system.config" |
			sha256sum | cut -d' ' -f1
	}
	if [ "$(cat "$dest/.ktau-stamp" 2>/dev/null)" = "$(kid)" ] && ls "$dest"/linux-image-*.deb >/dev/null 2>&1; then
		msg "system kernel packages are up to date in $dest"
		exit 0
	fi
	# The kernel itself, as make check's other kernels are built.
	"$KTAU_TOP/scripts/build-kernel.sh" system
	msg "packaging the system kernel with bindeb-pkg; log: $log"
	make -C "$KTAU_SRC" O="$B" -j"${KTAU_DEB_JOBS:-$KTAU_JOBS}" CC="ccache gcc" HOSTCC="ccache gcc" \
		bindeb-pkg >"$log" 2>&1 || { tail -n 30 "$log" >&2; die "bindeb-pkg failed; log: $log"; }
	collect
	kid >"$dest/.ktau-stamp"
	msg "system kernel packages in $dest ($(( $(date +%s) - start ))s): $(cd "$dest" && echo *.deb)"
	exit 0
fi

"$KTAU_TOP/scripts/prepare-tree.sh"
check_disk 20480
mkdir -p "$B"
if [ -n "${KTAU_DEB_CONFIG:-}" ]; then
	[ -f "$KTAU_DEB_CONFIG" ] || die "KTAU_DEB_CONFIG=$KTAU_DEB_CONFIG: no such file"
	cp "$KTAU_DEB_CONFIG" "$B/.config"
else
	cfg=$(ls /usr/src/linux-config-6.12/config.amd64_none_amd64.xz 2>/dev/null) ||
		die "Debian's amd64 config not found under /usr/src/linux-config-6.12"
	xz -dc "$cfg" >"$B/.config"
fi
cd "$KTAU_SRC"
# The distribution signs with its own keys, which are not in the source.
# Modules are signed with a key made by the build (MODULE_SIG_ALL).
ktau_deb_config() {
	scripts/config --file "$B/.config" --set-str SYSTEM_TRUSTED_KEYS "" \
		--set-str SYSTEM_REVOCATION_KEYS "" --enable MODULE_SIG_ALL \
		--set-str MODULE_SIG_KEY certs/signing_key.pem \
		--set-str BUILD_SALT "" --set-str LOCALVERSION "-ktau"
	if [ "${KTAU_DEB_DEBUG_INFO:-0}" != 1 ]; then
		scripts/config --file "$B/.config" --disable DEBUG_INFO \
			--disable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT --disable DEBUG_INFO_DWARF4 \
			--disable DEBUG_INFO_DWARF5 --enable DEBUG_INFO_NONE
	fi
	scripts/kconfig/merge_config.sh -m -O "$B" "$B/.config" kernel/configs/ktau.config >/dev/null
	make O="$B" olddefconfig >/dev/null
}
ktau_deb_config
if [ "${KTAU_DEB_LOCALMODCONFIG:-}" = 1 ]; then
	if [ -n "${KTAU_DEB_LSMOD:-}" ]; then
		cp "$KTAU_DEB_LSMOD" "$B/lsmod.txt"
	else
		lsmod >"$B/lsmod.txt" ||
			die "lsmod failed: localmodconfig needs the modules loaded on this machine (/proc/modules), or KTAU_DEB_LSMOD=FILE (lsmod's output, from the target machine)"
	fi
	make O="$B" LSMOD="$B/lsmod.txt" localmodconfig </dev/null >/dev/null 2>"$KTAU_OUT/logs/localmodconfig.log" ||
		die "make localmodconfig failed; see $KTAU_OUT/logs/localmodconfig.log"
	ktau_deb_config
	msg "localmodconfig: $(grep -c '=m$' "$B/.config") modules left (those loaded now)"
fi
grep -q '^CONFIG_KTAU=y' "$B/.config" || die "CONFIG_KTAU did not stay on in Debian's config"
if [ "${KTAU_DEB_DEBUG_INFO:-0}" != 1 ] && grep -q '^CONFIG_DEBUG_INFO=y' "$B/.config"; then
	die "CONFIG_DEBUG_INFO stayed on; set KTAU_DEB_DEBUG_INFO=1 to build with it"
fi
if [ -n "${KTAU_DEB_CONFIG_ONLY:-}" ]; then
	msg "configured $B/.config (Debian amd64 + ktau.config); stopping before the build"
	exit 0
fi
msg "building Debian packages (long); log: $log"
start=$(date +%s)
make O="$B" -j"${KTAU_DEB_JOBS:-$KTAU_JOBS}" CC="ccache gcc" bindeb-pkg >"$log" 2>&1 ||
	{ tail -n 30 "$log" >&2; die "bindeb-pkg failed; log: $log"; }
collect
msg "packages in $dest ($(( $(date +%s) - start ))s); install with: dpkg -i $dest/linux-image-*.deb"
