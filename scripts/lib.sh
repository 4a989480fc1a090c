# SPDX-License-Identifier: GPL-2.0
# Common settings for the KTAU scripts. Source it; do not run it.
#
# Everything built lives in $KTAU_CACHE (default ~/.cache/ktau), outside the
# repository, so it survives between runs and clones:
#   pristine/linux-source-6.12/   Debian's linux-source tarball, unpacked
#   src/                          the prepared tree (pristine + series + overlay)
#   build/<name>/                 out-of-tree (O=) kernel builds
#   ccache/                       compiler cache
#   git/                          pristine tree as a git repo (series check)
# Logs and results go to $KTAU_OUT (default <repo>/out).

set -eu -o pipefail

KTAU_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KTAU_CACHE=${KTAU_CACHE:-$HOME/.cache/ktau}
KTAU_OUT=${KTAU_OUT:-$KTAU_TOP/out}
KTAU_SRCPKG=linux-source-6.12
KTAU_TARBALL=${KTAU_TARBALL:-/usr/src/$KTAU_SRCPKG.tar.xz}
KTAU_PRISTINE=$KTAU_CACHE/pristine/$KTAU_SRCPKG
KTAU_SRC=$KTAU_CACHE/src
KTAU_BUILD=$KTAU_CACHE/build
KTAU_JOBS=${KTAU_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$KTAU_CACHE/ccache}
# Every script writes its logs here; a fresh clone has no out/ yet.
mkdir -p "$KTAU_OUT/logs"
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
# Kernel builds must not depend on the build time or host, so that ccache hits.
export KBUILD_BUILD_TIMESTAMP=${KBUILD_BUILD_TIMESTAMP:-2024-11-17}
export KBUILD_BUILD_USER=ktau KBUILD_BUILD_HOST=ktau

# Overlay directories of the repository and where they land in the tree.
# A new file lives here; an edit to an existing upstream file lives in
# patches/.
KTAU_OVERLAY_MAP=(
	"kernel:kernel"
	"include:include"
	"Documentation:Documentation"
	"samples:samples"
	"selftests/ktau:tools/testing/selftests/ktau"
)

msg() { printf '%s\n' "ktau: $*" >&2; }
die() { printf '%s\n' "ktau: error: $*" >&2; exit 1; }

# Run a long step with its output in a log; on failure show the tail and
# name the log.
logged() {
	local log=$1; shift
	mkdir -p "$(dirname "$log")"
	if ! "$@" >"$log" 2>&1; then
		tail -n 40 "$log" >&2
		die "'$*' failed; full log: $log"
	fi
}

# Fail early, with a clear message, when the disk is nearly full.
# image_python ROOT TOOLS_OUT LOG: Debian's python3 in an image at ROOT,
# with only the standard library modules the Python tests and benchmarks
# need (scripts/guest/python-files.py), the ktau package (tools/ktau/python,
# built in TOOLS_OUT) in /ktau/python with the benchmark scripts, and
# strace, each with the shared libraries ldd names (the rest of an image
# is static).
image_python() {
	local root=$1 tout=$2 log=$3 pyfiles sofiles f
	logged "$log" make -C "$KTAU_TOP/tools/ktau" O="$tout" python
	mkdir -p "$root/ktau/python"
	cp -a "$tout/python/lib/ktau" "$root/ktau/python/"
	cp "$KTAU_TOP/tools/ktau/python/bench/overhead.py" \
		"$KTAU_TOP/tools/ktau/python/bench/sample_cost.py" "$root/ktau/python/"
	find "$root/ktau/python" -name __pycache__ -prune -exec rm -rf {} +
	pyfiles=$(PYTHONPATH="$tout/python/lib" /usr/bin/python3 \
		"$KTAU_TOP/scripts/guest/python-files.py") || die "cannot list the Python files"
	sofiles=$(for f in $pyfiles /usr/bin/strace "$root"/ktau/python/ktau/*.so; do
		case $f in *.so|/usr/bin/python3*|*/strace) ldd "$f" ;; esac
	done | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) .*/\1/p' | sort -u)
	for f in $pyfiles $sofiles /usr/bin/strace; do
		mkdir -p "$root$(dirname "$f")"
		cp -L "$f" "$root$f"
	done
	ln -sf python3.11 "$root/usr/bin/python3"
	# The dynamic linker where the binaries look for it (/lib64 is a
	# symbolic link on Debian: a copy in the image).
	mkdir -p "$root/lib64"
	[ -e "$root/lib64/ld-linux-x86-64.so.2" ] ||
		cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
	msg "python: $(echo $pyfiles | wc -w) files, $(echo $sofiles | wc -w) shared libraries, $(du -sh "$root/usr" | cut -f1) under /usr"
}

check_disk() {
	local need_mb=${1:-4096} dir=$KTAU_CACHE avail
	mkdir -p "$dir"
	avail=$(df -Pm "$dir" | awk 'NR==2 {print $4}')
	if [ "$avail" -lt "$need_mb" ]; then
		die "only ${avail} MiB free under $dir, need about ${need_mb} MiB; free space or set KTAU_CACHE to a larger disk"
	fi
}

# Files of the overlay as "repo-path<TAB>tree-path" lines, sorted.
overlay_files() {
	local m src dst f
	for m in "${KTAU_OVERLAY_MAP[@]}"; do
		src=${m%%:*} dst=${m#*:}
		[ -d "$KTAU_TOP/$src" ] || continue
		(cd "$KTAU_TOP" && git ls-files --cached --others --exclude-standard -- "$src") |
		while read -r f; do
			[ -f "$KTAU_TOP/$f" ] || continue
			printf '%s\t%s\n' "$f" "$dst${f#"$src"}"
		done
	done | sort
}

# Entries of patches/series, in order, as paths. An entry is either a patch
# (NNNN-*.patch, an edit to upstream files) or an overlay commit message
# (overlay/*.msg: which new files of the overlay go into one commit of the
# exported series, and why; see scripts/series.sh).
series_entries() {
	local p
	[ -f "$KTAU_TOP/patches/series" ] || return 0
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e 's/[[:space:]]\{1,\}squash$//' "$KTAU_TOP/patches/series" |
	while read -r p; do
		[ -n "$p" ] || continue
		[ -f "$KTAU_TOP/patches/$p" ] || die "patches/series names $p, which does not exist"
		printf '%s\n' "$KTAU_TOP/patches/$p"
	done
}

# Patches marked "squash" in patches/series: in the export they join the
# commit before them (an overlay commit that needs an upstream edit, such
# as its boot parameters' documentation, in the same patch).
series_squashed() {
	[ -f "$KTAU_TOP/patches/series" ] || return 0
	sed -n -e 's/#.*//' -e 's/^\([^[:space:]]*\.patch\)[[:space:]]\{1,\}squash[[:space:]]*$/\1/p' \
		"$KTAU_TOP/patches/series"
}

# Only the patches of the series.
series_patches() {
	series_entries | grep '\.patch$' || true
}

# Files a patch touches (tree paths).
patch_files() {
	sed -n -e 's,^+++ b/\([^[:space:]]*\).*,\1,p' -e 's,^--- a/\([^[:space:]]*\).*,\1,p' "$1" | sort -u
}

# Die (in the calling shell) when patches/series names a missing file.
check_series() {
	local p
	[ -f "$KTAU_TOP/patches/series" ] || return 0
	while read -r p; do
		[ -n "$p" ] || continue
		p=${p%%[[:space:]]*}
		[ -f "$KTAU_TOP/patches/$p" ] || die "patches/series names $p, which does not exist"
		case $p in
		*.patch|overlay/*.msg) ;;
		*) die "patches/series: '$p' is neither a .patch nor an overlay/*.msg" ;;
		esac
	done < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$KTAU_TOP/patches/series")
}
