#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Developer helper: (re)write one patch of patches/ from edited files.
# Usage: scripts/mkpatch.sh NNNN-name.patch MSGFILE EDITDIR
#   EDITDIR holds the edited upstream files at their tree paths; MSGFILE is
#   the commit message (subject, blank line, description). The patch is made
#   against the pristine tree and written to patches/NNNN-name.patch; add it
#   to patches/series yourself.
. "$(dirname "$0")/lib.sh"

name=${1:?usage: mkpatch.sh NNNN-name.patch MSGFILE EDITDIR}
msgf=${2:?} edit=${3:?}
[ -d "$KTAU_PRISTINE" ] || die "no pristine tree; run scripts/prepare-tree.sh"
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
export GIT_AUTHOR_NAME="KTAU developers" GIT_AUTHOR_EMAIL="ktau@localhost"
export GIT_COMMITTER_NAME="KTAU developers" GIT_COMMITTER_EMAIL="ktau@localhost"
export GIT_AUTHOR_DATE="2024-11-17T00:00:00Z" GIT_COMMITTER_DATE="2024-11-17T00:00:00Z"
git -C "$w" init -q
mapfile -t files < <(cd "$edit" && find . -type f | sed 's,^\./,,' | sort)
for f in "${files[@]}"; do
	mkdir -p "$w/$(dirname "$f")"
	[ -f "$KTAU_PRISTINE/$f" ] && cp "$KTAU_PRISTINE/$f" "$w/$f"
done
git -C "$w" add -A && git -C "$w" commit -q --allow-empty -m base
for f in "${files[@]}"; do cp "$edit/$f" "$w/$f"; done
git -C "$w" add -A && git -C "$w" commit -q -F "$msgf" --cleanup=strip
git -C "$w" format-patch -q -1 --zero-commit --no-signature -N --stdout >"$KTAU_TOP/patches/$name"
msg "wrote patches/$name"
