#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The system test: a Debian 12 system with systemd, the KTAU kernel and
# tools installed from their packages, booted under QEMU (TCG).
# Usage: scripts/system.sh [--out DIR] [--timeout S] [--append ARGS]
#                          [--bench] [--icount] [--kernel BZIMAGE]
#                          [--flavour system|debian] [--modules DIR]
#
#   1. the tools' packages (scripts/tools-deb.sh) and the small kernel's
#      (scripts/kernel-deb.sh system), each rebuilt only when changed;
#   2. a Debian 12 root file system with mmdebstrap (minbase plus systemd,
#      udev, kmod, initramfs-tools, dbus, strace, jq, MPICH's mpich,
#      Debian's linux-perf (perf kvm stat) and
#      what the packages depend on), kept as a tarball in
#      $KTAU_CACHE/system and made again only when that list changes. This
#      needs the network (Debian's mirror, deb.debian.org, or KTAU_MIRROR);
#   3. the image: the tarball unpacked, the packages installed in it with
#      dpkg -i in a chroot (the kernel's postinst makes the initramfs with
#      initramfs-tools), a user "ktauuser", the test and its unit, two
#      programs built here (ktau-kvm-demo; ktau-mpi-demo, with mpicc
#      against the packages' libktau-runtime), then an ext4 disk image made
#      with mkfs.ext4 -d (no loop mount); kept in $KTAU_CACHE/system until
#      one of those changes;
#   4. the boot: QEMU with the kernel and initramfs that the package
#      installed in the image's /boot (copied out: -kernel/-initrd stand in
#      for the boot loader), root=/dev/vda, -snapshot so the cached image
#      stays as it was. ktau-system-test.service runs the checks at boot,
#      writes KTAP to the second serial port and reboots (-no-reboot ends
#      QEMU).
# Results in DIR (default $KTAU_OUT/guest-run/system): console.log,
# results.log. Exit 0 when the run finished with every check passed, 1 when
# a check failed or the console shows a kernel problem, 2 when the guest
# did not finish, 3 when something could not be built.
# --bench boots for the boot-time bench instead of the checks (the guest
# reports "# ktau-boot ..." once systemd is up: scripts/system-bench.sh),
# --icount with QEMU -icount shift=0,sleep=off, --kernel with another
# kernel (the CONFIG_KTAU=n build of the same configuration) and the
# package's initramfs.
# --modules DIR adds the modules of another kernel (DIR/lib/modules/
# RELEASE, from make modules_install INSTALL_MOD_PATH=DIR) beside the
# package's (a release of its own), in an image kept apart
# ($KTAU_CACHE/system/image-bench, image-debian-bench), so
# that the same image boots that kernel with its own modules.
# --flavour debian installs the kernel packages of "make kernel-deb"
# (Debian's own amd64 configuration plus KTAU: $KTAU_OUT/deb/debian, which
# must have been built: hours on 2 cores) instead of the small system
# kernel; the image is kept apart ($KTAU_CACHE/system/image-debian) and
# the same checks run (make system-test-deb).
. "$(dirname "$0")/lib.sh"
. "$KTAU_TOP/scripts/check-lib.sh"

out="" timeout=900 append="" mode=test icount=0 kernel="" flavour=system mods=""
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--append) append=$2; shift 2 ;;
	--bench) mode=bench; shift ;;
	--icount) icount=1; shift ;;
	--kernel) kernel=$2; shift 2 ;;
	--flavour) flavour=$2; shift 2 ;;
	--modules) mods=$2; shift 2 ;;
	*) die "usage: system.sh [--out DIR] [--timeout S] [--append ARGS] [--bench] [--icount] [--kernel BZIMAGE] [--flavour system|debian] [--modules DIR]" ;;
	esac
done
case $flavour in
system) out=${out:-$KTAU_OUT/guest-run/system} ;;
debian) out=${out:-$KTAU_OUT/guest-run/system-debian} ;;
*) die "unknown flavour '$flavour' (system or debian)" ;;
esac
fail_build() { msg "$*"; exit 3; }
if [ -n "$mods" ]; then
	ls -d "$mods"/lib/modules/*/ >/dev/null 2>&1 || die "--modules $mods: no lib/modules/RELEASE in it"
	mods=$(cd "$mods" && pwd)
fi

"$KTAU_TOP/scripts/deps.sh" system tools-deb || fail_build "packages missing"
[ "$(id -u)" = 0 ] || fail_build "the image is made as root (chroot, dpkg -i, file ownership): run as root"
S=$KTAU_CACHE/system
mkdir -p "$S" "$out"
exec 8>"$S/.lock"
flock 8
check_disk 4096

# 1. The packages. The Debian flavour's kernel is not built here (hours):
# its packages must be there, and must be of this tree's series.
"$KTAU_TOP/scripts/tools-deb.sh" || fail_build "the tools' packages did not build"
if [ "$flavour" = system ]; then
	"$KTAU_TOP/scripts/kernel-deb.sh" system || fail_build "the system kernel's packages did not build"
else
	ls "$KTAU_OUT"/deb/debian/linux-image-*.deb >/dev/null 2>&1 ||
		fail_build "no kernel package in $KTAU_OUT/deb/debian: build it first with make kernel-deb (hours)"
fi
debs=()
for d in "$KTAU_OUT"/deb/tools/{ktaud,libktau2,libktau-runtime2,libktau-dev,python3-ktau}_*.deb "$KTAU_OUT"/deb/$flavour/linux-image-*.deb; do
	case $d in *-dbg_*|*dbgsym*) continue ;; esac
	[ -f "$d" ] || fail_build "no package $d"
	debs+=("$d")
done
own=" $(for d in "${debs[@]}"; do dpkg-deb -f "$d" Package; done | tr '\n' ' ')"

# 2. The base system: what the test needs, plus what the packages depend
# on (first alternatives), so that dpkg -i finds its dependencies there.
# mpich: MPICH's mpirun (hydra) and libmpich12 for ktau-mpi-demo, which is
# built on the host (no compiler in the image).
inc="systemd systemd-sysv udev kmod initramfs-tools dbus strace jq procps mpich linux-perf"
for p in $(for d in "${debs[@]}"; do dpkg-deb -f "$d" Pre-Depends; dpkg-deb -f "$d" Depends; done |
	tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/:any//' -e 's/[[:space:]]//g' | sort -u); do
	case $own in *" $p "*) continue ;; esac
	inc="$inc $p"
done
inc=$(printf '%s\n' $inc | sort -u | tr '\n' ',' | sed 's/,$//')
mirror=${KTAU_MIRROR:-http://deb.debian.org/debian}
base_id=$(printf 'mmdebstrap %s\nbookworm minbase %s\n%s\n' "$(mmdebstrap --version)" "$inc" "$mirror" |
	sha256sum | cut -c1-16)
base=$S/base-$base_id.tar
if [ ! -f "$base" ]; then
	log=$KTAU_OUT/logs/system-mmdebstrap.log
	msg "building the Debian 12 base system with mmdebstrap (network: $mirror); log: $log"
	t=$(date +%s)
	rm -f "$S"/base-*.tar
	mmdebstrap --variant=minbase --include="$inc" --aptopt='Acquire::Retries "3"' \
		bookworm "$S/tmp-$base_id.tar" "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
		>"$log" 2>&1 || { tail -n 20 "$log" >&2; rm -f "$S/tmp-$base_id.tar"; fail_build "mmdebstrap failed; log: $log"; }
	mv "$S/tmp-$base_id.tar" "$base"
	msg "base system in $((  $(date +%s) - t ))s: $(du -h "$base" | cut -f1)"
fi

# 3. The image.
unit=$KTAU_TOP/scripts/system/ktau-system-test.service
test=$KTAU_TOP/scripts/system/ktau-system-test
# The raw-KVM demo VM of the tools, for the test of KVM as modules; built
# here with the host's gcc (the same Debian 12 and glibc as the image).
demo_src=$KTAU_TOP/tools/ktau/examples/kvm-demo.c
demo=$S/ktau-kvm-demo
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -o "$demo" "$demo_src" -pthread ||
	fail_build "ktau-kvm-demo ($demo_src) does not build"
# The MPI example, for the test of MPI ranks: built with the host's mpicc
# (Debian 12's MPICH, as in the image) and -finstrument-functions against
# libktau-dev and libktau-runtime2 as packaged (unpacked in a scratch
# root), so that in the image it runs with the installed libktau-runtime.so.2.
mpi_src=$KTAU_TOP/tools/ktau/examples/mpi-demo.c
mpi_demo=$S/ktau-mpi-demo
X=$S/mpi-root
rm -rf "$X"
for d in "${debs[@]}"; do
	case ${d##*/} in libktau2_*|libktau-runtime2_*|libktau-dev_*) dpkg-deb -x "$d" "$X" ;; esac
done
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
# shellcheck disable=SC2046
mpicc -std=gnu11 -O2 -Wall -Wextra -Werror -finstrument-functions -o "$mpi_demo" "$mpi_src" \
	$(PKG_CONFIG_SYSROOT_DIR=$X PKG_CONFIG_PATH=$X/usr/lib/$ma/pkgconfig pkg-config --cflags --libs libktau-runtime) ||
	fail_build "ktau-mpi-demo ($mpi_src) does not build"
readelf -d "$mpi_demo" | grep 'NEEDED.*\[libktau-runtime\.so\.2\]' >/dev/null ||
	fail_build "ktau-mpi-demo does not need libktau-runtime.so.2"
rm -rf "$X"
# A program with its debug information, for 'ktaud sample --lines' with the
# packaged ktaud (libdw): tools/ktau/tests/spin.c with -g, its source path
# mapped to /usr/src/ktau so that it is the same from any clone; and the
# lines of its spinning function, ktau_test_spin_user(), which the test
# wants its samples in.
spin_src=$KTAU_TOP/tools/ktau/tests/spin.c
spin=$S/ktau-test-spin-g
gcc -std=gnu11 -O1 -g -Wall -Wextra -Werror -fdebug-prefix-map="$KTAU_TOP"=/usr/src/ktau \
	-o "$spin" "$spin_src" -pthread || fail_build "ktau-test-spin ($spin_src) does not build"
spin_lines=$(awk '/^__attribute__\(\(noinline\)\) unsigned long ktau_test_spin_user\(/ { a = NR }
	a && !b && /^}/ { b = NR } END { if (a && b) print a, b }' "$spin_src")
[ -n "$spin_lines" ] || fail_build "ktau_test_spin_user() not found in $spin_src"
img_id=$( {
	echo "$base_id"
	sha256sum "${debs[@]}" "$unit" "$test" "$demo_src" "$mpi_src" "$spin_src" "$0" | cut -d' ' -f1
	printf '%s\n' "$KTAU_CONSOLE_BAD"
	[ -z "$mods" ] || (cd "$mods" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
} | sha256sum | cut -c1-16)
I=$S/image
[ "$flavour" = debian ] && I=$S/image-debian
[ -z "$mods" ] || I=$I-bench
if [ "$(cat "$I/.ktau-stamp" 2>/dev/null)" != "$img_id" ]; then
	log=$KTAU_OUT/logs/system-image.log
	msg "making the system image (dpkg -i of ${#debs[@]} packages, mkfs.ext4 -d); log: $log"
	t=$(date +%s)
	rm -rf "$I"
	mkdir -p "$I/root"
	R=$I/root
	make_image() {
		tar -C "$R" -xf "$base"
		mkdir -p "$R/tmp/ktau-debs"
		cp "${debs[@]}" "$R/tmp/ktau-debs/"
		echo ktau-test >"$R/etc/hostname"
		printf '/dev/vda / ext4 defaults 0 1\n' >"$R/etc/fstab"
		# dpkg -i in the chroot, with /proc, /sys and /dev (the kernel's
		# postinst runs update-initramfs), in a mount namespace of its own.
		unshare -m --propagation private sh -ec '
			mount -t proc proc "$1/proc"
			mount -t sysfs sysfs "$1/sys"
			mount --rbind /dev "$1/dev"
			chroot "$1" sh -ec "
				dpkg -i /tmp/ktau-debs/*.deb
				useradd -m -s /bin/bash ktauuser
				passwd -d root  # a throwaway test image: root logs in on the console
			"' sh "$R"
		rm -rf "$R/tmp/ktau-debs"
		# The package's kernel, before other modules come in.
		# (exactly one: the image has no other kernel), and the other
		# kernel's beside it, never over it.
		kver=$(cd "$R/lib/modules" && ls)
		[ -n "$kver" ] && [ "$(printf '%s\n' "$kver" | wc -l)" = 1 ] ||
			fail_build "the kernel packages left $(printf '%s\n' "$kver" | grep -c .) module trees in /lib/modules, not one: $(echo $kver)"
		if [ -n "$mods" ]; then
			[ ! -e "$mods/lib/modules/$kver" ] ||
				fail_build "--modules $mods: its lib/modules/$kver is the package kernel's own release; give the other kernel another LOCALVERSION"
			cp -a "$mods/lib/modules/." "$R/lib/modules/"
		fi
		install -m 0755 "$test" "$R/usr/local/sbin/ktau-system-test"
		install -m 0755 "$demo" "$R/usr/local/bin/ktau-kvm-demo"
		install -m 0755 "$mpi_demo" "$R/usr/local/bin/ktau-mpi-demo"
		install -m 0755 "$spin" "$R/usr/local/bin/ktau-test-spin-g"
		mkdir -p "$R/usr/local/share/ktau-system-test"
		echo "$spin_lines /usr/src/ktau/tools/ktau/tests/spin.c" \
			>"$R/usr/local/share/ktau-system-test/spin-lines"
		printf '%s\n' "$KTAU_CONSOLE_BAD" >"$R/usr/local/share/ktau-system-test/console-bad"
		install -m 0644 "$unit" "$R/etc/systemd/system/"
		ln -sf /etc/systemd/system/ktau-system-test.service \
			"$R/etc/systemd/system/multi-user.target.wants/ktau-system-test.service"
		cp "$R/boot/vmlinuz-$kver" "$I/vmlinuz"
		cp "$R/boot/initrd.img-$kver" "$I/initrd.img"
		rm -f "$I/disk.img"
		# The files and a quarter more, at least 2 GiB (Debian's
		# configuration installs some 4,000 modules).
		size=$(du -sm "$R" | cut -f1)
		size=$(( size + size / 4 + 256 ))
		[ $size -ge 2048 ] || size=2048
		truncate -s ${size}M "$I/disk.img"
		mkfs.ext4 -q -F -L ktau-root -d "$R" "$I/disk.img"
		rm -rf "$R"
	}
	set +e
	(set -e; make_image) >"$log" 2>&1
	rc=$?
	set -e
	[ $rc = 0 ] || { tail -n 30 "$log" >&2; rm -rf "$I"; fail_build "making the image failed; log: $log"; }
	printf '%s\n' "$img_id" >"$I/.ktau-stamp"
	msg "image made in $(( $(date +%s) - t ))s: kernel $(file -b "$I/vmlinuz" | sed -n 's/.*version \([^ ]*\).*/\1/p')"
fi

# 4. The boot.
rm -f "$out"/{console,results,qemu}.log
cmdline="root=/dev/vda ro console=ttyS0 panic=-1 ktausystem=$mode $append"
qopt=()
if [ $icount = 1 ]; then
	qopt+=(-icount shift=0,sleep=off)
elif grep -qw constant_tsc /proc/cpuinfo; then
	khz=$(awk '/^cpu MHz/ { printf "%d", $4 * 1000; exit }' /proc/cpuinfo)
	[ -n "$khz" ] && [ "$khz" -gt 0 ] && cmdline="$cmdline tsc_early_khz=$khz tsc=reliable"
fi
msg "booting the system image (log: $out/console.log)"
t=$(date +%s)
set +e
timeout -k 10 "$timeout" qemu-system-x86_64 -machine pc -accel tcg,thread=single -cpu max -m 1024 \
	-smp 1 -kernel "${kernel:-$I/vmlinuz}" -initrd "$I/initrd.img" -append "$cmdline" \
	-drive "file=$I/disk.img,format=raw,if=virtio" -snapshot \
	-no-reboot -display none -nodefaults "${qopt[@]}" \
	-serial "file:$out/console.log" -serial "file:$out/results.log" </dev/null >"$out/qemu.log" 2>&1
qrc=$?
set -e
msg "system run took $(( $(date +%s) - t ))s"
rc=0
qemu_run_verdict "$out" $qrc "$timeout" "the system" || rc=$?
[ $rc -eq 0 ] || exit $rc
done_line=$(guest_done_line "$out/results.log")
case $done_line in
*" rc=0 tainted=0") exit 0 ;;
*) msg "system test: $done_line; results: $out/results.log"; exit 1 ;;
esac
