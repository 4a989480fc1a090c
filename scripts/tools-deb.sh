#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make tools-deb: Debian packages of tools/ktau (ktaud, libktau2,
# libktau-runtime2, libktau-dev, python3-ktau) built with dpkg-buildpackage and checked
# with lintian.
#
# The packaging is tools/ktau/debian. It is built in a copy of tools/ktau
# (the files git knows, plus the kernel's uapi header <linux/ktau.h> as
# uapi/linux/ktau.h) under $KTAU_OUT/tools-deb, so that the build writes
# nothing into the repository. The packages, the .changes and lintian's
# report land in $KTAU_OUT/deb/tools. lintian's remaining tags must be the
# ones explained in tools/ktau/debian/lintian-expected; any other fails.
# Then a program is built against libktau-dev with pkg-config and run
# with libktau2, both unpacked in a scratch root.
. "$(dirname "$0")/lib.sh"

"$KTAU_TOP/scripts/deps.sh" tools-deb
src=$KTAU_TOP/tools/ktau
ver=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
W=$KTAU_OUT/tools-deb
D=$W/ktau-tools-$ver
dest=$KTAU_OUT/deb/tools
files() { (cd "$src" && git ls-files --cached --others --exclude-standard -z .); }
# Built again only when a file of tools/ktau, the uapi header or this
# script changed (make check runs it every time).
id=$( (cd "$src" && files | xargs -0 sha256sum; sha256sum "$KTAU_TOP/include/uapi/linux/ktau.h" "$KTAU_TOP/scripts/tools-deb.sh") |
	sha256sum | cut -d' ' -f1)
if [ "$(cat "$dest/.ktau-stamp" 2>/dev/null)" = "$id" ]; then
	msg "tools packages are up to date in $dest"
	exit 0
fi
rm -rf "$W" "$dest"
mkdir -p "$D/uapi/linux" "$dest"
files | (cd "$src" && xargs -0 cp --parents -t "$D")
cp "$KTAU_TOP/include/uapi/linux/ktau.h" "$D/uapi/linux/"
log=$KTAU_OUT/logs/tools-deb.log
msg "building ktau-tools $ver with dpkg-buildpackage; log: $log"
(cd "$D" && dpkg-buildpackage -b -us -uc) >"$log" 2>&1 ||
	{ tail -n 30 "$log" >&2; die "dpkg-buildpackage failed; log: $log"; }
arch=$(dpkg --print-architecture)
changes=$W/ktau-tools_${ver}_$arch.changes
cp "$W"/*.deb "$changes" "${changes%.changes}.buildinfo" "$dest/"
# lintian: every tag it still reports is named, with why, in
# debian/lintian-expected ("tag package: why"); a tag not named there
# fails, and so does a named one that no longer appears.
lintian --fail-on none --info --display-info --pedantic "$dest/${changes##*/}" \
	>"$dest/lintian.txt" 2>&1 || die "lintian did not run; see $dest/lintian.txt"
! grep -q '^Skipping\|No packages selected' "$dest/lintian.txt" ||
	{ cat "$dest/lintian.txt" >&2; die "lintian checked nothing"; }
got=$(sed -n 's/^[EWIXP]: \([^ :]*\)[^:]*: \([^ ]*\).*/\2 \1/p' "$dest/lintian.txt" | sort -u)
want=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$src/debian/lintian-expected" |
	awk '{print $1, $2}' | sed 's/:$//' | sort -u)
if [ "$got" != "$want" ]; then
	diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") >&2 || true
	die "lintian's tags differ from tools/ktau/debian/lintian-expected (< expected, > seen); report: $dest/lintian.txt"
fi
# The development package works: a program built with pkg-config against
# libktau-dev and libktau2 unpacked in a scratch root links the shared
# library by its soname and runs (encode/decode of an empty snapshot).
X=$W/devcheck
mkdir -p "$X/root"
for p in libktau2 libktau-runtime2 libktau-dev; do dpkg-deb -x "$dest/${p}_${ver}_$arch.deb" "$X/root"; done
cat >"$X/t.c" <<'EOC'
#include <libktau.h>
#include <stdlib.h>
int main(void)
{
	struct ktau_snap *s = ktau_snap_new(), *d = NULL;
	void *buf = NULL;
	size_t len = 0;

	if (!s || ktau_encode(s, &buf, &len) || ktau_decode(buf, len, &d))
		return 1;
	ktau_snap_free(s);
	ktau_snap_free(d);
	free(buf);
	return 0;
}
EOC
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
pcd=$X/root/usr/lib/$ma/pkgconfig
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Wextra -Werror -o "$X/t" "$X/t.c" \
	$(PKG_CONFIG_SYSROOT_DIR=$X/root PKG_CONFIG_PATH=$pcd pkg-config --cflags --libs libktau) \
	>"$X/log" 2>&1 || { cat "$X/log" >&2; die "a program does not build with libktau-dev's header and libktau.pc"; }
readelf -d "$X/t" | grep 'NEEDED.*\[libktau\.so\.2\]' >/dev/null || die "a program built against libktau-dev does not need libktau.so.2"
LD_LIBRARY_PATH=$X/root/usr/lib/$ma "$X/t" || die "a program built against libktau-dev does not run with libktau2"
# The runtime: a program built with -finstrument-functions against
# libktau-runtime.pc needs libktau-runtime.so.2 and writes its routine's
# calls; the packages' symbols files carry the version nodes.
cat >"$X/rt.c" <<'EOC'
#include <libktau.h>
#include <stdio.h>
#include <string.h>
static void __attribute__((noinline)) work(void) { }
int main(void)
{
	for (int i = 0; i < 3; i++)
		work();
	return strcmp(ktau_version(), LIBKTAU_VERSION) != 0;
}
EOC
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Wextra -Werror -finstrument-functions -o "$X/rt" "$X/rt.c" \
	$(PKG_CONFIG_SYSROOT_DIR=$X/root PKG_CONFIG_PATH=$pcd pkg-config --cflags --libs libktau-runtime) \
	>"$X/log" 2>&1 || { cat "$X/log" >&2; die "a program does not build with libktau-runtime.pc"; }
readelf -d "$X/rt" | grep 'NEEDED.*\[libktau-runtime\.so\.2\]' >/dev/null ||
	die "a program built against libktau-runtime.pc does not need libktau-runtime.so.2"
KTAU_PROFILE_DIR=$X/rtprof LD_LIBRARY_PATH=$X/root/usr/lib/$ma "$X/rt" ||
	die "a program built against libktau-runtime does not run with libktau-runtime2"
grep -q '^"main => work" 3 ' "$X/rtprof/profile.0.0.0" ||
	die "the runtime of libktau-runtime2 did not write 'main => work' with 3 calls ($X/rtprof)"
for p in libktau2:KTAU_2.0 libktau-runtime2:KTAU_RUNTIME_2.0; do
	dpkg-deb --ctrl-tarfile "$dest/${p%%:*}_${ver}_$arch.deb" | tar -xO ./symbols 2>/dev/null |
		grep -q "^ [a-z_]*@${p#*:} " || die "${p%%:*} has no symbols file with ${p#*:}"
done
# python3-ktau: its extension loads in the host's python3 (Debian 12's
# 3.11, the one it was built for) and names the CPython it walks.
dpkg-deb -x "$dest/python3-ktau_${ver}_$arch.deb" "$X/root"
PYTHONPATH=$X/root/usr/lib/python3/dist-packages python3 -c 'import ktau, ktau._ktau, ktau.tau' \
	>"$X/pylog" 2>&1 || { cat "$X/pylog" >&2; die "python3-ktau's module does not import"; }
printf '%s\n' "$id" >"$dest/.ktau-stamp"
msg "packages in $dest: $(cd "$dest" && echo *.deb); lintian: $(printf '%s\n' "$got" | grep -c . || true) tag(s), each explained in tools/ktau/debian/lintian-expected"
