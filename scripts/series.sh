#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Export the KTAU series: the overlay plus patches/ as one numbered
# git format-patch series with a cover letter, in $KTAU_OUT/series.
#
# Usage: scripts/series.sh [export|verify]
#   export   write the series (default)
#   verify   export, then apply it with git am to a pristine copy of the
#            source tree and check the result is the prepared tree
#
# patches/series lists, in order, patches (edits to upstream files) and
# overlay commit messages (patches/overlay/*.msg). An overlay message is a
# commit message whose "Files:" lines name the overlay files (tree paths,
# shell globs) that the commit adds. Every overlay file must be in exactly
# one overlay commit. A patch marked "squash" joins the commit before it.
# patches/cover-letter.txt is the cover letter.
. "$(dirname "$0")/lib.sh"

what=${1:-export}
"$KTAU_TOP/scripts/prepare-tree.sh"
check_series

G=$KTAU_CACHE/git
tid=$(cat "$KTAU_PRISTINE/.ktau-stamp")
export GIT_AUTHOR_NAME="KTAU developers" GIT_AUTHOR_EMAIL="ktau@localhost"
export GIT_COMMITTER_NAME="KTAU developers" GIT_COMMITTER_EMAIL="ktau@localhost"
export GIT_AUTHOR_DATE="2024-11-17T00:00:00Z" GIT_COMMITTER_DATE="2024-11-17T00:00:00Z"
g() { git -C "$G" -c core.autocrlf=false -c gc.auto=0 "$@"; }

# The pristine tree as a git repository, made once per tarball.
if [ "$(cat "$G/.git/ktau-stamp" 2>/dev/null)" != "$tid" ]; then
	msg "making a git repository of the pristine tree (once)"
	rm -rf "$G"
	cp -a "$KTAU_PRISTINE" "$G"
	rm -f "$G/.ktau-stamp"
	g init -q -b upstream
	g add -A -f .
	g commit -q -m "$KTAU_SRCPKG $(dpkg-query -W -f='${Version}' "$KTAU_SRCPKG" 2>/dev/null)"
	g tag -f pristine >/dev/null
	printf "%s\n" "$tid" >"$G/.git/ktau-stamp"
fi

reset_to() {	# branch
	g am --abort >/dev/null 2>&1 || true
	g checkout -q -f -B "$1" pristine
	g clean -q -fdx
}

# Build the series as commits on branch "ktau".
reset_to ktau
mapfile -t OVL < <(overlay_files | cut -f2)
declare -A DONE=() SQUASH=()
while read -r p; do SQUASH[$p]=1; done < <(series_squashed)
while read -r e; do
	case $e in
	*.patch)
		if [ -n "${SQUASH[${e##*/}]:-}" ]; then
			g apply --index --whitespace=nowarn "$e" ||
				die "patches/${e##*/}: git apply failed on the pristine tree"
			g commit -q --amend --no-edit
		else
			g am -q --whitespace=nowarn "$e" >/dev/null 2>&1 ||
				{ g am --abort >/dev/null 2>&1; die "patches/${e##*/}: git am failed on the pristine tree"; }
		fi
		;;
	*.msg)
		globs=$(sed -n 's/^Files:[[:space:]]*//p' "$e")
		[ -n "$globs" ] || die "${e#"$KTAU_TOP"/}: no Files: line"
		n=0
		for t in "${OVL[@]}"; do
			for gl in $globs; do
				# shellcheck disable=SC2053
				if [[ $t == $gl ]]; then
					[ -z "${DONE[$t]:-}" ] || die "$t is in two overlay commits (${DONE[$t]}, ${e##*/})"
					DONE[$t]=${e##*/}
					mkdir -p "$G/$(dirname "$t")"
					cp -p "$KTAU_SRC/$t" "$G/$t"
					g add -f "$t"
					n=$((n + 1))
					break
				fi
			done
		done
		[ $n -gt 0 ] || die "${e#"$KTAU_TOP"/}: its Files: match no overlay file"
		sed '/^Files:/d' "$e" | g commit -q -F - --cleanup=strip
		;;
	esac
done < <(series_entries)
for t in "${OVL[@]}"; do
	[ -n "${DONE[$t]:-}" ] || die "overlay file $t is in no overlay commit; name it in a patches/overlay/*.msg"
done

S=$KTAU_OUT/series
rm -rf "$S"
mkdir -p "$S"
cover=$KTAU_TOP/patches/cover-letter.txt
[ -f "$cover" ] || die "patches/cover-letter.txt is missing"
g config branch.ktau.description "$(cat "$cover")"
g format-patch -q --cover-letter --cover-from-description=subject --zero-commit \
	--no-signature --base=pristine -o "$S" pristine..ktau >/dev/null
msg "series: $(ls "$S" | grep -vc '^0000') patches and a cover letter in $S"
[ "$what" = verify ] || exit 0

# Verify: git am the exported files on a fresh pristine branch; the result
# must be the same tree as the export branch and as the prepared tree.
reset_to ktau-verify
for p in "$S"/*.patch; do
	case ${p##*/} in 0000-*) continue ;; esac
	g am -q --whitespace=nowarn "$p" >/dev/null 2>&1 ||
		{ g am --abort >/dev/null 2>&1; die "exported ${p##*/} does not apply with git am"; }
done
[ "$(g rev-parse 'ktau^{tree}')" = "$(g rev-parse 'ktau-verify^{tree}')" ] ||
	die "git am of the exported series gives a different tree than the series"
diff <(g diff --name-only pristine ktau-verify | sort) <(sort "$KTAU_SRC/.ktau-files") >&2 ||
	die "the series and the prepared tree change different files (above: < series, > tree)"
while read -r f; do
	[ "$(g rev-parse "ktau-verify:$f")" = "$(git hash-object "$KTAU_SRC/$f")" ] ||
		die "$f differs between the series and the prepared tree"
done <"$KTAU_SRC/.ktau-files"
msg "series verified: git am on pristine $KTAU_SRCPKG gives the prepared tree ($(wc -l <"$KTAU_SRC/.ktau-files") files)"
