#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Host tests of tools/ktau as KTAP: the unit tests of libktau (host-tests),
# ktaud's command line on the fixtures, and a short fuzz run of the
# decoder. Called by 'make check' with O, KTAUD, HOST_TEST, FIXTURES, TOOLS,
# MAKE and CLANG in the environment. Exit status: 0 when nothing failed.
: "${O:?}" "${KTAUD:?}" "${HOST_TEST:?}" "${FIXTURES:?}" "${TOOLS:?}"
W=$(mktemp -d /tmp/ktau-check.XXXXXX) || exit 1
trap 'rm -rf "$W"' EXIT
LOG=$W/log

# ---- ktaud's command line ----
c_help() {
	"$KTAUD" --help >"$LOG" 2>&1 || return 1
	for c in dump run watch export plot functions control; do
		"$KTAUD" $c --help >>"$LOG" 2>&1 || { echo "# ktaud $c --help failed"; return 1; }
	done
	[ -f "$TOOLS/man/ktaud.1" ] && man -l "$TOOLS/man/ktaud.1" >/dev/null 2>&1 || true
}

expect_rc() {
	want=$1; shift
	"$@" >"$LOG" 2>&1
	rc=$?
	[ $rc -eq "$want" ] || { echo "# '$*' exited $rc, not $want"; sed 's/^/#   /' "$LOG"; return 1; }
}

c_bad_arguments() {
	expect_rc 2 "$KTAUD" || return 1
	expect_rc 2 "$KTAUD" nonsense || return 1
	expect_rc 2 "$KTAUD" dump || return 1
	expect_rc 2 "$KTAUD" dump 12x || return 1
	expect_rc 2 "$KTAUD" dump --sort bogus 1 || return 1
	expect_rc 2 "$KTAUD" run || return 1
	expect_rc 2 "$KTAUD" watch --interval -1 || return 1
	expect_rc 2 "$KTAUD" control syscall maybe || return 1
	expect_rc 2 "$KTAUD" control nogroup on || return 1
	expect_rc 2 "$KTAUD" plot top -o x.gif 1 || return 1
	expect_rc 2 "$KTAUD" export || return 1
	expect_rc 2 "$KTAUD" functions --group nogroup
}

# On a host without KTAU: exit 3 and a message that says so.
c_no_ktau() {
	[ -e /proc/ktau ] && { echo "ok $1 no_ktau_errors # SKIP this host has /proc/ktau"; return 0; }
	for cmd in "dump 1" "dump --all" "run true" "functions" "control" "watch -c 1 -o $W/w"; do
		expect_rc 3 "$KTAUD" $cmd || return 1
		grep -q "CONFIG_KTAU" "$LOG" || { echo "# '$cmd': no hint to CONFIG_KTAU"; return 1; }
	done
	echo "ok $1 no_ktau_errors"
}

c_export_fixtures() {
	"$KTAUD" export --tau "$W/t" "$FIXTURES/run.ktau" >"$LOG" 2>&1 || return 1
	[ "$(ls "$W/t" | tr '\n' ' ')" = "profile.0.0.0 profile.0.0.1 profile.1.0.0 profile.2.0.0 " ] ||
		{ echo "# files: $(ls "$W/t")"; return 1; }
	"$KTAUD" export --json "$FIXTURES/watch" >"$W/j" 2>"$LOG" || return 1
	grep -q '"format": "ktau-snapshot"' "$W/j" || return 1
	"$KTAUD" export --folded --processes "$FIXTURES/run.ktau" >"$W/f" 2>"$LOG" || return 1
	[ "$(grep -c ';SYSCALL;getppid ' "$W/f")" -eq 3 ] || return 1
	"$KTAUD" export "$FIXTURES/process.ktau" >"$W/tab" 2>"$LOG" || return 1
	grep -q '^  getppid  *syscall  *3000 ' "$W/tab" || { sed 's/^/#   /' "$W/tab"; return 1; }
	# A garbled file is an error with a message, not a crash.
	head -c 300 "$FIXTURES/process.ktau" >"$W/bad.ktau"
	expect_rc 1 "$KTAUD" export "$W/bad.ktau" || return 1
	grep -q "truncated or garbled" "$LOG"
}

c_plot() {
	"$KTAUD" plot top --from --script "$W/top.gp" -o "$W/top.png" "$FIXTURES/process.ktau" \
		>"$LOG" 2>&1 || return 1
	grep -q '"getppid"' "$W/top.gp" || return 1
	"$KTAUD" plot groups --script "$W/g.gp" -o "$W/g.svg" "$FIXTURES/watch" >"$LOG" 2>&1 ||
		return 1
	command -v gnuplot >/dev/null || { echo "# no gnuplot: scripts only"; return 0; }
	"$KTAUD" plot top --from -o "$W/top.png" "$FIXTURES/process.ktau" >"$LOG" 2>&1 || return 1
	"$KTAUD" plot groups -o "$W/g.svg" "$FIXTURES/watch" >"$LOG" 2>&1 || return 1
	head -c 8 "$W/top.png" | od -An -c | grep -q 'P   N   G' || { echo "# not a PNG"; return 1; }
	grep -q '<svg' "$W/g.svg"
}

c_fuzz_smoke() {
	command -v "${CLANG:-clang}" >/dev/null || { SKIP="clang is not installed"; return 77; }
	${MAKE:-make} -s -C "$TOOLS" O="$O" fuzz FUZZ_TIME=20 >"$LOG" 2>&1 || {
		tail -30 "$LOG" | sed 's/^/#   /'
		grep -q "fsanitize=fuzzer" "$LOG" && ! grep -q "ERROR: " "$LOG" &&
			{ SKIP="clang cannot build libFuzzer targets (apt-get install libclang-rt-14-dev)"; return 77; }
		return 1
	}
	grep -E "^(#[0-9]+ +DONE|Done [0-9]+ runs)" "$LOG" | tail -1 | sed 's/^/# /'
}

echo "TAP version 13"
units=$("$HOST_TEST" --list) || exit 1
nunits=$(echo "$units" | wc -l)
# Every TAU directory these tests write goes through the strict checker.
c_taucheck() {
	"$KTAUD" export --tau "$W/tc-run" "$FIXTURES/run.ktau" >"$LOG" 2>&1 || return 1
	"$KTAUD" export --tau "$W/tc-process" "$FIXTURES/process.ktau" >>"$LOG" 2>&1 || return 1
	"$KTAUD" export --tau "$W/tc-watch" "$FIXTURES/watch" >>"$LOG" 2>&1 || return 1
	dirs=$(find "$W" -name 'profile.*.*.*' | sed 's,/[^/]*$,,' | sort -u)
	[ "$(echo "$dirs" | wc -w)" -ge 3 ] || { echo "# too few TAU directories: $dirs"; return 1; }
	for d in $dirs; do
		"$TAUCHECK" "$d" >"$W/tc.out" 2>&1 ||
			{ sed 's/^/# /' "$W/tc.out"; return 1; }
	done
}

cli="c_help c_bad_arguments c_no_ktau c_export_fixtures c_plot c_fuzz_smoke c_taucheck"
echo "1..$((nunits + $(echo $cli | wc -w)))"
n=0 fails=0
for t in $units; do
	n=$((n + 1))
	"$HOST_TEST" "$t" "$FIXTURES" >"$W/out" 2>&1
	rc=$?
	sed 's/^\([^#]\)/# \1/' "$W/out"
	case $rc in
	0) echo "ok $n $t" ;;
	77) echo "ok $n $t # SKIP no fixtures" ;;
	*) echo "not ok $n $t"; fails=$((fails + 1)) ;;
	esac
done
for t in $cli; do
	n=$((n + 1))
	SKIP=
	if [ $t = c_no_ktau ]; then
		$t $n || { echo "not ok $n no_ktau_errors"; fails=$((fails + 1)); }
		continue
	fi
	$t
	rc=$?
	case $rc in
	0) echo "ok $n ${t#c_}" ;;
	77) echo "ok $n ${t#c_} # SKIP $SKIP" ;;
	*) echo "not ok $n ${t#c_}"; fails=$((fails + 1)) ;;
	esac
done
[ $fails -eq 0 ]
