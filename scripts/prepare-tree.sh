#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Prepare the kernel tree: Debian's linux-source-6.12, then patches/series in
# order, then the overlay (new files). The result is $KTAU_CACHE/src.
#
# The tree is re-prepared whenever the tarball, the series or the overlay
# changes. Work happens in a staging directory first; the tree is touched
# only after every patch applied, and only files whose content changed are
# rewritten, so that an incremental kernel build recompiles just those.
. "$(dirname "$0")/lib.sh"

"$KTAU_TOP/scripts/deps.sh" kernel
# One preparation at a time: builds of several kernels may run at once.
mkdir -p "$KTAU_CACHE"
exec 9>"$KTAU_CACHE/.prepare.lock"
flock 9
[ -f "$KTAU_TARBALL" ] || die "$KTAU_TARBALL not found; install it with: apt-get install $KTAU_SRCPKG"
check_disk 6144
check_series

tarball_id() {
	local v
	v=$(dpkg-query -W -f='${Version}' "$KTAU_SRCPKG" 2>/dev/null || true)
	printf '%s %s %s\n' "$KTAU_TARBALL" "$v" "$(stat -c '%s %Y' "$KTAU_TARBALL")"
}

# 1. The pristine tree, unpacked once per tarball.
tid=$(tarball_id)
if [ "$(cat "$KTAU_PRISTINE/.ktau-stamp" 2>/dev/null)" != "$tid" ]; then
	msg "unpacking $KTAU_TARBALL"
	parent=$(dirname "$KTAU_PRISTINE")
	rm -rf "$parent.tmp" "$parent"
	mkdir -p "$parent.tmp"
	tar -C "$parent.tmp" -xJf "$KTAU_TARBALL" || die "could not unpack $KTAU_TARBALL (disk full?)"
	[ -f "$parent.tmp/$KTAU_SRCPKG/Makefile" ] || die "$KTAU_TARBALL did not contain $KTAU_SRCPKG/"
	printf '%s\n' "$tid" >"$parent.tmp/$KTAU_SRCPKG/.ktau-stamp"
	mv "$parent.tmp" "$parent"
	rm -rf "$KTAU_SRC"	# built from an older tarball
fi

# 2. What the prepared tree must be made of.
mapfile -t PATCHES < <(series_patches)
mapfile -t OVERLAY < <(overlay_files)
stamp=$({
	printf '%s\n' "$tid"
	for p in "${PATCHES[@]}"; do printf 'patch %s\n' "${p##*/}"; sha256sum <"$p"; done
	for o in "${OVERLAY[@]}"; do
		f=${o%%$'\t'*}
		printf 'file %s %s\n' "$o" "$(stat -c %a "$KTAU_TOP/$f")"
		sha256sum <"$KTAU_TOP/$f"
	done
} | sha256sum | cut -d' ' -f1)

if [ -f "$KTAU_SRC/.ktau-stamp" ] && [ "$(cat "$KTAU_SRC/.ktau-stamp")" = "$stamp" ]; then
	exit 0
fi
msg "preparing the kernel tree in $KTAU_SRC"

# 3. Stage: the files the series touches, patched; then the overlay.
stage=$KTAU_CACHE/stage
rm -rf "$stage"
mkdir -p "$stage"
declare -A PATCHED=()
for p in "${PATCHES[@]}"; do
	while read -r f; do
		[ -n "$f" ] || continue
		PATCHED[$f]=1
		if [ -f "$KTAU_PRISTINE/$f" ] && [ ! -e "$stage/$f" ]; then
			mkdir -p "$stage/$(dirname "$f")"
			cp -p "$KTAU_PRISTINE/$f" "$stage/$f"
		fi
	done < <(patch_files "$p")
done
for p in "${PATCHES[@]}"; do
	rej=$KTAU_OUT/logs/${p##*/}.rej
	mkdir -p "$KTAU_OUT/logs"
	rm -f "$rej"
	if ! out=$(cd "$stage" && patch -p1 --batch --forward --fuzz=0 \
			--no-backup-if-mismatch -r "$rej" <"$p" 2>&1); then
		printf '%s\n' "$out" >&2
		[ -s "$rej" ] && { msg "reject ($rej):"; cat "$rej" >&2; }
		die "patch ${p##*/} does not apply to $KTAU_SRCPKG; fix it in patches/ (the tree was left as it was)"
	fi
done
for o in "${OVERLAY[@]}"; do
	f=${o%%$'\t'*} t=${o#*$'\t'}
	[ -e "$KTAU_PRISTINE/$t" ] && die "overlay file $f would replace upstream $t; edit upstream files through patches/"
	[ -n "${PATCHED[$t]:-}" ] && die "overlay file $f is also changed by a patch; give each line one home"
	mkdir -p "$stage/$(dirname "$t")"
	cp "$KTAU_TOP/$f" "$stage/$t"
	chmod "$(stat -c %a "$KTAU_TOP/$f")" "$stage/$t"
done

# 4. The tree: a full copy of the pristine tree, created once.
if [ ! -f "$KTAU_SRC/.ktau-base" ]; then
	rm -rf "$KTAU_SRC" "$KTAU_SRC.tmp"
	msg "copying the pristine tree"
	cp -a "$KTAU_PRISTINE" "$KTAU_SRC.tmp" || die "copying the tree failed (disk full?)"
	rm -f "$KTAU_SRC.tmp/.ktau-stamp"
	: >"$KTAU_SRC.tmp/.ktau-files"
	touch "$KTAU_SRC.tmp/.ktau-base"
	mv "$KTAU_SRC.tmp" "$KTAU_SRC"
fi

# 5. Sync: restore files no longer changed, rewrite files whose content
# differs. Until the new stamp is written, the old and new lists are both
# remembered, so an interrupted run is repaired by the next one.
rm -f "$KTAU_SRC/.ktau-stamp"
mapfile -t NEW < <(cd "$stage" && find . -type f | sed 's,^\./,,' | sort)
sort -u "$KTAU_SRC/.ktau-files" <(printf '%s\n' "${NEW[@]}") | sed '/^$/d' >"$KTAU_SRC/.ktau-files.tmp"
mv "$KTAU_SRC/.ktau-files.tmp" "$KTAU_SRC/.ktau-files"
declare -A INNEW=()
for f in "${NEW[@]}"; do INNEW[$f]=1; done
while read -r f; do
	[ -n "$f" ] && [ -z "${INNEW[$f]:-}" ] || continue
	if [ -f "$KTAU_PRISTINE/$f" ]; then
		cmp -s "$KTAU_PRISTINE/$f" "$KTAU_SRC/$f" || cp "$KTAU_PRISTINE/$f" "$KTAU_SRC/$f"
	else
		rm -f "$KTAU_SRC/$f"
	fi
done <"$KTAU_SRC/.ktau-files"
for f in "${NEW[@]}"; do
	if ! cmp -s "$stage/$f" "$KTAU_SRC/$f"; then
		mkdir -p "$KTAU_SRC/$(dirname "$f")"
		cp "$stage/$f" "$KTAU_SRC/$f.ktau-new"
		mv "$KTAU_SRC/$f.ktau-new" "$KTAU_SRC/$f"
	fi
	chmod "$(stat -c %a "$stage/$f")" "$KTAU_SRC/$f"
done
printf '%s\n' "${NEW[@]}" >"$KTAU_SRC/.ktau-files"
rm -rf "$stage"
printf '%s\n' "$stamp" >"$KTAU_SRC/.ktau-stamp"
msg "tree ready: ${#PATCHES[@]} patches, ${#OVERLAY[@]} overlay files"
