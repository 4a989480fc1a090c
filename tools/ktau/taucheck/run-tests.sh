#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Host tests of ktau-taucheck, the strict checker for TAU profile directories.
#
#   run-tests.sh [BUILD_DIR]
#
# Builds the checker into BUILD_DIR (default: build/ beside this script; a
# relative BUILD_DIR is taken from the current directory), then checks that
# every tests/good/<case> passes and that every tests/bad/<case> fails with
# exit status 1, exactly one violation, and a message containing the text of
# tests/bad/<case>/EXPECT. Also builds once with gcc -fanalyzer (skipped when
# the compiler lacks it) and tries the command line. Prints KTAP (TAP version
# 13); exits non-zero when anything failed.
#
# Environment: CC (default gcc), CFLAGS (default -O2; -std=gnu11 -Wall -Wextra
# -Werror are always added).

set -u

here=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in
"") build=$here/build ;;
/*) build=$1 ;;
*) build=$(pwd)/$1 ;;
esac
CC=${CC:-gcc}
CFLAGS=${CFLAGS:--O2}
WFLAGS="-std=gnu11 -Wall -Wextra -Werror"
cd "$here" || exit 1

# libxml2 (Debian: libxml2-dev)
if pkg-config --exists libxml-2.0 2>/dev/null; then
	XML_CFLAGS=$(pkg-config --cflags libxml-2.0)
	XML_LIBS=$(pkg-config --libs libxml-2.0)
elif command -v xml2-config >/dev/null 2>&1; then
	XML_CFLAGS=$(xml2-config --cflags)
	XML_LIBS=$(xml2-config --libs)
else
	XML_CFLAGS=-I/usr/include/libxml2
	XML_LIBS=-lxml2
fi

bin=$build/ktau-taucheck
log=$build/test.log

ngood=0
for d in tests/good/*/; do ngood=$((ngood + 1)); done
nbad=0
for d in tests/bad/*/; do nbad=$((nbad + 1)); done
ncli=8
total=$((2 + ncli + ngood + nbad))

n=0
failed=0
ok() {
	n=$((n + 1))
	echo "ok $n taucheck: $1"
}
notok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n taucheck: $1"
	shift
	for m in "$@"; do
		printf '%s\n' "$m" | sed 's/^/# /'
	done
}
diag() {
	sed 's/^/# /' "$1"
}

echo "TAP version 13"
echo "1..$total"

mkdir -p "$build" || exit 1
# shellcheck disable=SC2086 # flags are word lists
if $CC $CFLAGS $WFLAGS $XML_CFLAGS -o "$bin" main.c taucheck.c \
	$XML_LIBS -lm >"$log" 2>&1; then
	ok "build"
else
	notok "build" "$CC $CFLAGS $WFLAGS $XML_CFLAGS -o $bin main.c taucheck.c $XML_LIBS -lm"
	diag "$log"
	echo "Bail out! ktau-taucheck does not build (libxml2-dev installed?)"
	exit 1
fi

# shellcheck disable=SC2086
if ! $CC -fanalyzer -x c -c -o /dev/null /dev/null >/dev/null 2>&1; then
	n=$((n + 1))
	echo "ok $n taucheck: analyzer # SKIP $CC has no -fanalyzer"
elif $CC $CFLAGS $WFLAGS -fanalyzer $XML_CFLAGS -o "$build/analyzer.out" \
	main.c taucheck.c $XML_LIBS -lm >"$log" 2>&1 && ! [ -s "$log" ]; then
	ok "analyzer"
else
	notok "analyzer" "$CC -fanalyzer reports:"
	diag "$log"
fi

# The command line: exit status 0 / 1 / 2 and --help.
expect_rc() { # name, expected status, command...
	name=$1 want=$2
	shift 2
	"$@" >"$log" 2>&1
	rc=$?
	if [ "$rc" -eq "$want" ]; then
		ok "cli/$name"
	else
		notok "cli/$name" "exit status $rc, expected $want: $*"
		diag "$log"
	fi
}
expect_rc help 0 "$bin" --help
expect_rc no-argument 2 "$bin"
expect_rc unknown-option 2 "$bin" --frobnicate tests/good/callpaths
expect_rc missing-directory 2 "$bin" tests/good/does-not-exist
expect_rc good-file 0 "$bin" tests/good/callpaths/profile.0.0.0
expect_rc bad-file 1 "$bin" tests/bad/calls-negative/profile.0.0.0
expect_rc good-and-bad 1 "$bin" tests/good/callpaths tests/bad/calls-negative
expect_rc bad-and-missing 2 "$bin" tests/bad/calls-negative tests/good/does-not-exist

for d in tests/good/*/; do
	d=${d%/}
	"$bin" "$d" >"$log" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ]; then
		ok "good/${d#tests/good/}"
	else
		notok "good/${d#tests/good/}" "exit status $rc, expected 0"
		diag "$log"
	fi
done

for d in tests/bad/*/; do
	d=${d%/}
	name=bad/${d#tests/bad/}
	if ! [ -s "$d/EXPECT" ]; then
		notok "$name" "$d/EXPECT is missing or empty"
		continue
	fi
	expect=$(cat "$d/EXPECT")
	"$bin" "$d" >"$log" 2>&1
	rc=$?
	nviol=$(grep -c ': \[[a-z0-9-]*\] ' "$log")
	if [ "$rc" -ne 1 ]; then
		notok "$name" "exit status $rc, expected 1"
		diag "$log"
	elif ! grep -qF -- "$expect" "$log"; then
		notok "$name" "no message contains: $expect"
		diag "$log"
	elif [ "$nviol" -ne 1 ]; then
		notok "$name" "$nviol violations, a bad case breaks exactly one rule"
		diag "$log"
	else
		ok "$name"
	fi
done

if [ "$n" -ne "$total" ]; then
	echo "# planned $total tests, ran $n"
	failed=$((failed + 1))
fi
echo "# $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
