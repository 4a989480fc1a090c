#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Host tests of tools/ktau as KTAP: the unit tests of libktau (host-tests),
# of its user-level runtime (user-tests), ktaud's command line on the
# fixtures, ktaud merge, the example program, and a short run of each fuzz
# target (make fuzz-smoke). Called by 'make check' with O, KTAUD, HOST_TEST,
# USER_TEST, DEMO, DEMO_STATIC, USER_BENCH, FIXTURES, TOOLS, MAKE and CLANG in
# the environment. Every TAU directory written under $W goes through the strict
# checker (c_taucheck, last); inputs that are not strict live in $IN.
# Exit status: 0 when nothing failed.
: "${O:?}" "${KTAUD:?}" "${HOST_TEST:?}" "${FIXTURES:?}" "${TOOLS:?}"
: "${USER_TEST:?}" "${DEMO:?}" "${DEMO_STATIC:?}" "${USER_BENCH:?}"
: "${DRILL_TEST:?}" "${CG_SAMPLE:?}" "${FOREIGN:?}"
W=$(mktemp -d /tmp/ktau-check.XXXXXX) || exit 1
IN=$(mktemp -d /tmp/ktau-check-in.XXXXXX) || exit 1
trap 'rm -rf "$W" "$IN"' EXIT
LOG=$W/log

# ---- ktaud's command line ----
c_help() {
	"$KTAUD" --help >"$LOG" 2>&1 || return 1
	for c in dump run trace watch export merge combine plot functions control sample probe drill callgraph; do
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

# The commands that 'ktaud --help' lists, one a line.
ktaud_commands() {
	"$KTAUD" --help 2>&1 |
		awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }'
}

# 'ktaud help CMD' is 'ktaud CMD --help' for every command the usage
# lists; -V, --version and version print the version.
c_help_and_version() {
	local c
	"$KTAUD" --help >"$W/usage.txt" 2>&1 || return 1
	for c in $(ktaud_commands); do
		"$KTAUD" help "$c" >"$W/h1.txt" 2>&1 || { echo "# ktaud help $c failed"; return 1; }
		"$KTAUD" "$c" --help >"$W/h2.txt" 2>&1 || { echo "# ktaud $c --help failed"; return 1; }
		cmp -s "$W/h1.txt" "$W/h2.txt" || { echo "# ktaud help $c differs"; return 1; }
		grep -q "^Usage: ktaud $c" "$W/h1.txt" || { echo "# ktaud help $c: $(head -n 1 "$W/h1.txt")"; return 1; }
	done
	[ "$(grep -c '^  [a-z]' "$W/usage.txt")" -ge 17 ] || { echo "# commands: $(cat "$W/usage.txt")"; return 1; }
	expect_rc 2 "$KTAUD" help nonsense || return 1
	for c in -V --version version; do
		"$KTAUD" $c | grep -q "^ktaud (libktau [0-9]" || { echo "# ktaud $c"; return 1; }
	done
}

# Options after the file names (export, diff, dump, ...), as perf and git
# take them; 'watch -p' is a pid, as in sample, drill and plot (it was the
# pid file: 'watch -p 1234' wrote a file named 1234).
c_options_anywhere() {
	"$KTAUD" export "$FIXTURES/run.ktau" -T "$W/anywhere" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	[ -f "$W/anywhere/profile.0.0.0" ] || { echo "# export FILE -T DIR wrote nothing"; return 1; }
	"$KTAUD" diff "$FIXTURES/run.ktau" "$FIXTURES/run.ktau" -n 3 >"$LOG" 2>&1 || return 1
	grep -q "more: -n 0 shows all" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	expect_rc 2 "$KTAUD" watch -p not-a-pid -c 1 -o "$W/wp" || return 1
	grep -q "'not-a-pid' is not a pid" "$LOG" || return 1
	[ ! -e not-a-pid ] && [ ! -e "$W/wp" ] || { echo "# watch -p wrote something"; return 1; }
	"$KTAUD" watch --help | grep -q -- "-p, --pid PID" || return 1
	"$KTAUD" watch --help | grep -q -- "--pid-file FILE" || return 1
	expect_rc 2 "$KTAUD" export -t -P "$FIXTURES/run.ktau" || return 1
	grep -q "contradict" "$LOG"
}

# A short option means one thing in every command, and takes its argument
# the same way (issue 14: -t meant threads, tid, top, title and threshold;
# -j took FILE in run, sample and diff only); the old letters say what to
# write.
c_options_one_meaning() {
	local c clash
	for c in $(ktaud_commands); do
		"$KTAUD" "$c" --help | grep -oE -- '^ +-[a-zA-Z]( [A-Z]+)?, --[a-z-]+' |
			sed -E "s/^ +-([a-zA-Z])( ([A-Z]+))?, (--[a-z-]+)/\1 \4\/\3 $c/"
	done >"$W/shorts"
	[ "$(wc -l <"$W/shorts")" -gt 40 ] || { echo "# too few options parsed"; return 1; }
	clash=$(awk '{ if ($1 in m && m[$1] != $2) print $1 ": " m[$1] " (" w[$1] "), " $2 " (" $3 ")";
		       m[$1] = $2; w[$1] = $3 }' "$W/shorts")
	[ -z "$clash" ] || { echo "# one letter, two meanings: $clash"; return 1; }
	expect_rc 2 "$KTAUD" drill -t 0.3 true || return 1
	grep -q -- "-t is --threads in every ktaud command that has it; here write --threshold" \
		"$LOG" || return 1
	expect_rc 2 "$KTAUD" sample -t -p 1 || return 1
	grep -q "here write --tid" "$LOG" || return 1
	expect_rc 2 "$KTAUD" merge -a node x y || return 1
	expect_rc 2 "$KTAUD" kvm -i x || return 1
	grep -q "here write --input" "$LOG" || return 1
	# --json alone is stdout everywhere; the old "--json FILE" before a
	# command is refused, not run as the command.
	expect_rc 2 "$KTAUD" run --json out.json -- true || return 1
	grep -q "write --json=out.json, or end the options with --" "$LOG" || return 1
	[ ! -e out.json ] || return 1
	expect_rc 2 "$KTAUD" sample --folded f.folded -- true || return 1
	grep -q "write --folded=f.folded" "$LOG" || return 1
	expect_rc 2 "$KTAUD" diff --json x.json "$FIXTURES/run.ktau" "$FIXTURES/run.ktau" || return 1
	"$KTAUD" diff --json "$FIXTURES/run.ktau" "$FIXTURES/process.ktau" >"$W/dj" 2>"$LOG" &&
		"$PYTHON" -c 'import json,sys; d = json.load(open(sys.argv[1])); assert d["format"] == "ktau-diff"' \
			"$W/dj" || { echo "# diff --json: not JSON on stdout"; return 1; }
	"$KTAUD" diff -j"$W/dj2" "$FIXTURES/run.ktau" "$FIXTURES/process.ktau" >/dev/null 2>"$LOG" &&
		cmp -s "$W/dj" "$W/dj2" || { echo "# diff -jFILE differs from --json"; return 1; }
	# -j is --json in every command: alone stdout, a FILE only attached;
	# "-j FILE" is refused where a word would be taken for something else.
	expect_rc 2 "$KTAUD" diff -j "$W/dj3" "$FIXTURES/run.ktau" "$FIXTURES/process.ktau" ||
		return 1
	grep -q "a bare -j or --json writes to stdout; write --json=$W/dj3 (or -j$W/dj3)" "$LOG" ||
		return 1
	[ ! -e "$W/dj3" ] || return 1
	expect_rc 2 "$KTAUD" run -j out.json -- true || return 1
	grep -q "'-j' 'out.json': a bare -j writes to stdout" "$LOG" || return 1
	[ ! -e out.json ] || return 1
	expect_rc 2 "$KTAUD" sample -p 1 -j out.json || return 1
	grep -q "write -jout.json, or end the options with --" "$LOG" || return 1
	expect_rc 2 "$KTAUD" sample -p 1 --json out.json || return 1
	grep -q "write --json=out.json" "$LOG" || return 1
	"$KTAUD" export -j"$W/dj6" "$FIXTURES/run.ktau" >/dev/null 2>"$LOG" &&
		"$KTAUD" export -j "$FIXTURES/run.ktau" >"$W/dj7" 2>"$LOG" &&
		cmp -s "$W/dj6" "$W/dj7" || { echo "# export -jFILE differs from -j"; return 1; }
}

# The man page gives each command the options 'ktaud CMD --help' lists (issue
# 14): every option of the help ("-o, --output DIR", as spelled there) is a
# tagged paragraph (.TP) in the command's .SS section of ktaud.1, and every
# tag there is an option of the help.
c_man_options() {
	local c
	awk '/^\.SH/ { cmds = ($2 == "COMMANDS"); cmd = ""; tag = 0; next }
	     cmds && /^\.SS/ { cmd = $2; tag = 0; next }
	     tag && cmd != "" {
		t = $0; gsub(/\\f[BIRP]/, "", t); gsub(/\\-/, "-", t)
		gsub(/[ \t]+/, " ", t); sub(/^ /, "", t); sub(/ $/, "", t)
		print cmd ": " t
	     }
	     { tag = /^\.TP/ }' "$TOOLS/man/ktaud.1" | sort >"$W/man-opts"
	for c in $(ktaud_commands); do
		# Option lines: indented, "-x ..." or "--name ...", up to two spaces.
		"$KTAUD" "$c" --help | sed -n 's/^  *\(-[^ ].*\)/\1/p' |
			sed -e 's/  .*//' -e "s/^/$c: /"
	done | sort >"$W/help-opts"
	[ "$(wc -l <"$W/help-opts")" -gt 100 ] || { echo "# too few options in the help texts"; return 1; }
	comm -23 "$W/help-opts" "$W/man-opts" | sed "s/^/# ktaud --help, not a tag in ktaud.1: /" >"$LOG"
	comm -13 "$W/help-opts" "$W/man-opts" | sed "s/^/# a tag in ktaud.1, not in ktaud --help: /" >>"$LOG"
	[ ! -s "$LOG" ] || { cat "$LOG"; return 1; }
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
	expect_rc 2 "$KTAUD" merge || return 1
	expect_rc 2 "$KTAUD" combine || return 1
	expect_rc 2 "$KTAUD" sample || return 1
	expect_rc 2 "$KTAUD" sample -e bogus true || return 1
	expect_rc 2 "$KTAUD" sample -e cpu-clock:5us true || return 1
	expect_rc 2 "$KTAUD" sample -b 24 true || return 1
	expect_rc 2 "$KTAUD" sample -p 12x || return 1
	expect_rc 2 "$KTAUD" sample -p 1 true || return 1
	expect_rc 2 "$KTAUD" sample -d 1 true || return 1
	expect_rc 2 "$KTAUD" run --sample cycles:1ms true || return 1
	expect_rc 2 "$KTAUD" run --sample-folded x true || return 1
	expect_rc 2 "$KTAUD" functions --group nogroup || return 1
	expect_rc 2 "$KTAUD" probe || return 1
	expect_rc 2 "$KTAUD" probe frobnicate || return 1
	expect_rc 2 "$KTAUD" probe add || return 1
	expect_rc 2 "$KTAUD" probe add f -- || return 1
	expect_rc 2 "$KTAUD" probe add "a function" || return 1
	expect_rc 2 "$KTAUD" probe add $(printf '%070d' 0 | tr 0 f) || return 1
	expect_rc 2 "$KTAUD" probe remove || return 1
	expect_rc 2 "$KTAUD" probe list x || return 1
	expect_rc 2 "$KTAUD" drill || return 1
	expect_rc 2 "$KTAUD" drill --threshold 0 true || return 1
	expect_rc 2 "$KTAUD" drill --threshold 150% true || return 1
	expect_rc 2 "$KTAUD" drill --depth 0 true || return 1
	expect_rc 2 "$KTAUD" drill -r 0 true || return 1
	expect_rc 2 "$KTAUD" drill -p 1 true || return 1
	expect_rc 2 "$KTAUD" drill -d 3 true || return 1
	expect_rc 2 "$KTAUD" drill --vmlinux a --callgraph b true || return 1
	expect_rc 2 "$KTAUD" callgraph || return 1
	expect_rc 2 "$KTAUD" callgraph -o x --callees f "$CG_SAMPLE" || return 1
	expect_rc 2 "$KTAUD" trace || return 1
	expect_rc 2 "$KTAUD" trace -b 1000 true || return 1
	expect_rc 2 "$KTAUD" trace -g nogroup true || return 1
	expect_rc 2 "$KTAUD" trace -p 1 || return 1
	expect_rc 2 "$KTAUD" trace -d 1 true || return 1
	expect_rc 2 "$KTAUD" trace --input x true || return 1
	expect_rc 2 "$KTAUD" trace --merge || return 1
	expect_rc 2 "$KTAUD" trace --check a b
}

# On a host without KTAU: exit 3 and a message that says so.
c_no_ktau() {
	[ -e /proc/ktau ] && { echo "ok $1 no_ktau_errors # SKIP this host has /proc/ktau"; return 0; }
	for cmd in "dump 1" "dump --all" "run true" "functions" "control" "watch -c 1 -o $W/w" \
		"watch -D -o $W/wd" \
		"sample true" "sample -p 1" "run --sample cpu-clock true" "probe list" "probe add f" \
		"probe add f -- true" "probe remove f" "drill true" "trace true" "trace -p 1 -d 1"; do
		expect_rc 3 "$KTAUD" $cmd || return 1
		grep -q "CONFIG_KTAU" "$LOG" || { echo "# '$cmd': no hint to CONFIG_KTAU"; return 1; }
	done
	# watch makes its directory only once KTAU is there.
	[ ! -e "$W/w" ] && [ ! -e "$W/wd" ] || { echo "# watch left its directory"; return 1; }
	echo "ok $1 no_ktau_errors"
}

c_export_fixtures() {
	"$KTAUD" export --tau "$W/t" "$FIXTURES/run.ktau" >"$LOG" 2>&1 || return 1
	[ "$(ls "$W/t" | tr '\n' ' ')" = "profile.0.0.0 profile.0.0.1 profile.1.0.0 profile.2.0.0 " ] ||
		{ echo "# files: $(ls "$W/t")"; return 1; }
	"$KTAUD" export --json "$FIXTURES/watch" >"$W/j" 2>"$LOG" || return 1
	grep -q '"format": "ktau-snapshot"' "$W/j" || return 1
	# A watch that ran past snap-999999 numbers on with 7 digits: taken
	# in order (a byte order puts snap-1000000 first, and the chain of
	# deltas breaks: "started twice").
	mkdir "$W/w7" || return 1
	cp "$FIXTURES/watch/snap-000000.ktau" "$W/w7/snap-999998.ktau" &&
		cp "$FIXTURES/watch/snap-000001.ktau" "$W/w7/snap-999999.ktau" &&
		cp "$FIXTURES/watch/snap-000002.ktau" "$W/w7/snap-1000000.ktau" &&
		cp "$FIXTURES/watch/snap-000003.ktau" "$W/w7/snap-1000001.ktau" || return 1
	"$KTAUD" export --json "$W/w7" >"$W/j7" 2>"$LOG" || return 1
	"$KTAUD" export --json "$FIXTURES/watch" >"$W/j" 2>"$LOG" || return 1
	cmp -s "$W/j" "$W/j7" || { echo "# snap-1000000 and after not in order"; return 1; }
	"$KTAUD" export --folded --processes "$FIXTURES/run.ktau" >"$W/f" 2>"$LOG" || return 1
	[ "$(grep -c ';SYSCALL;getppid ' "$W/f")" -eq 3 ] || return 1
	"$KTAUD" export "$FIXTURES/process.ktau" >"$W/tab" 2>"$LOG" || return 1
	grep -q '^  getppid  *syscall  *3000 ' "$W/tab" || { sed 's/^/#   /' "$W/tab"; return 1; }
	# A snapshot file of the first ABI (1.0, libktau 1.0's 192-byte header).
	"$KTAUD" export "$FIXTURES/abi-1.0/process.ktau" >"$W/tab" 2>"$LOG" || return 1
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
	command -v gnuplot >/dev/null ||
		{ SKIP="no gnuplot (apt-get install gnuplot-nox): the scripts were checked"; return 77; }
	rm -rf "$W/pl" && mkdir "$W/pl" || return 1
	"$KTAUD" plot top --from -o "$W/pl/top.png" "$FIXTURES/process.ktau" >"$LOG" 2>&1 || return 1
	"$KTAUD" plot groups -o "$W/pl/g.svg" "$FIXTURES/watch" >"$LOG" 2>&1 || return 1
	head -c 8 "$W/pl/top.png" | od -An -c | grep -q 'P   N   G' || { echo "# not a PNG"; return 1; }
	grep -q '<svg' "$W/pl/g.svg" || return 1
	# A file ktaud did not write is not replaced (gnuplot writes a file
	# beside it, renamed when complete), but with --force.
	echo theirs >"$W/pl/theirs.svg"
	expect_rc 1 "$KTAUD" plot groups -o "$W/pl/theirs.svg" "$FIXTURES/watch" || return 1
	grep -q "theirs.svg exists and is not a file ktaud wrote (or it changed since): nothing was written; remove it, name another file, or give --force" "$LOG" &&
	[ "$(cat "$W/pl/theirs.svg")" = theirs ] || { sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" plot groups --force -o "$W/pl/theirs.svg" "$FIXTURES/watch" >"$LOG" 2>&1 &&
	grep -q '<svg' "$W/pl/theirs.svg" || { sed 's/^/#   /' "$LOG"; return 1; }
	xattr_ok "$W" || { SKIP="$W's file system keeps no user extended attributes"; return 77; }
	# With a gnuplot that fails, nothing is left beside the outputs; with
	# one during whose run another writer takes the chart's name (new, or
	# written into), that writer's file stays and ktaud's output is kept
	# beside it (exit 1).
	mkdir -p "$W/pl-bin" && cat >"$W/pl-bin/gnuplot" <<'STUB'
#!/bin/sh
out=$(head -1 | sed -n 's/^ktau_output = "\(.*\)"$/\1/p')
echo "<svg/>" >"$out"
[ -n "$RACE" ] && echo precious >"$RACE"
exit ${STUB_RC:-0}
STUB
	chmod +x "$W/pl-bin/gnuplot" || return 1
	expect_rc 1 env PATH="$W/pl-bin:$PATH" STUB_RC=1 "$KTAUD" plot groups -o "$W/pl/n.svg" \
		"$FIXTURES/watch" || return 1
	[ "$(ls -A "$W/pl" | tr '\n' ' ')" = "g.svg theirs.svg top.png " ] ||
		{ echo "# left: $(ls -A "$W/pl")"; return 1; }
	for f in new.svg g.svg; do
		expect_rc 1 env PATH="$W/pl-bin:$PATH" RACE="$W/pl/$f" "$KTAUD" plot groups \
			-o "$W/pl/$f" "$FIXTURES/watch" || return 1
		grep -q "$f appeared or changed while ktaud wrote the chart: not replaced; ktaud's output is in $W/pl/.$f." "$LOG" &&
		[ "$(cat "$W/pl/$f")" = precious ] && [ "$(cat "$W/pl/.$f".*)" = "<svg/>" ] ||
			{ sed 's/^/#   /' "$LOG"; return 1; }
		rm "$W/pl/.$f".*
	done
}

# The call graph command on the test program (the decoder's own tests are
# drill-tests): the file, the callees of a function, the errors.
c_callgraph() {
	"$KTAUD" callgraph -o "$W/cg.calls" "$CG_SAMPLE" >"$LOG" 2>&1 || return 1
	grep -q "13 functions, 8 call others, 15 calls" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(head -1 "$W/cg.calls")" = "# ktau-callgraph 1" ] || return 1
	grep -qx "top mid tail_target" "$W/cg.calls" || return 1
	# From the ELF file and from the call graph file: the same callees.
	"$KTAUD" callgraph --callees helper "$CG_SAMPLE" >"$W/c1" 2>"$LOG" || return 1
	"$KTAUD" callgraph --callees helper "$W/cg.calls" >"$W/c2" 2>"$LOG" || return 1
	[ "$(tr '\n' ' ' <"$W/c1")" = "leaf_a leaf_b " ] && cmp -s "$W/c1" "$W/c2" ||
		{ echo "# helper: $(cat "$W/c1")"; return 1; }
	expect_rc 1 "$KTAUD" callgraph --callees nosuchfunction "$W/cg.calls" || return 1
	grep -q "no function nosuchfunction" "$LOG" || return 1
	expect_rc 1 "$KTAUD" callgraph "$CG_SAMPLE.stripped" || return 1
	grep -q "stripped" "$LOG" || return 1
	expect_rc 1 "$KTAUD" callgraph "$FIXTURES/run.ktau" || return 1
	grep -q "not a call graph file" "$LOG"
}

# The drill tests' workload (guest: ktau-test-faults) touches every page.
c_faults_workload() {
	"$O/tests/ktau-test-faults" -m 2 -r 3 >"$LOG" 2>&1 && grep -qx "faults 1536 pages" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	expect_rc 2 "$O/tests/ktau-test-faults" -m 0
}

# fuzz-trace's rewrite: the writer must take what the reader took, so a
# finish that fails on a trace read from a raw file aborts (a finding), as
# a rewrite that does not read back does. Its harness built with gcc and a
# driver of one input, ktau_trace_file_finish() made to fail (--wrap).
c_fuzz_trace_finish() {
	local d="$W/fuzz-finish"
	mkdir -p "$d" && cat >"$d/drive.c" <<'EOT' || return 1
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "libktau.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int __real_ktau_trace_file_finish(struct ktau_trace_file *tf, const struct ktau_trace *t);
int __wrap_ktau_trace_file_finish(struct ktau_trace_file *tf, const struct ktau_trace *t);

int __wrap_ktau_trace_file_finish(struct ktau_trace_file *tf, const struct ktau_trace *t)
{
	int ret = __real_ktau_trace_file_finish(tf, t);

	return getenv("FINISH_FAILS") ? -EINVAL : ret;
}

int main(int argc, char **argv)
{
	static uint8_t buf[1 << 20];
	FILE *f = argc == 2 ? fopen(argv[1], "rb") : NULL;
	size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;

	if (!f)
		return 2;
	fclose(f);
	return LLVMFuzzerTestOneInput(buf, n);
}
EOT
	$CC -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE $KHDR_INCLUDES -I"$TOOLS/lib" -o "$d/ft" \
		"$TOOLS/fuzz/fuzz-trace.c" "$d/drive.c" -Wl,--wrap=ktau_trace_file_finish \
		"$O/libktau.a" -ljson-c -liberty -lm -pthread >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	"$d/ft" "$TOOLS/fuzz/corpus/trace/samples-v3.ktrace" || { echo "# the seed failed"; return 1; }
	# (its own shell reports the abort, to /dev/null)
	FINISH_FAILS=1 sh -c 'ulimit -c 0; "$0" "$1"; exit $?' "$d/ft" \
		"$TOOLS/fuzz/corpus/trace/samples-v3.ktrace" 2>/dev/null
	[ $? -eq 134 ] || { echo "# a failed finish was not a finding"; return 1; }
}

c_fuzz_smoke() {
	command -v "${CLANG:-clang}" >/dev/null || { SKIP="clang is not installed"; return 77; }
	${MAKE:-make} -s -C "$TOOLS" O="$O" fuzz-smoke >"$LOG" 2>&1 || {
		tail -30 "$LOG" | sed 's/^/#   /'
		grep -q "fsanitize=fuzzer" "$LOG" && ! grep -q "ERROR: " "$LOG" &&
			{ SKIP="clang cannot build libFuzzer targets (apt-get install libclang-rt-14-dev)"; return 77; }
		return 1
	}
	# One "Done N runs in S second(s)" per fuzz target.
	grep -E "^Done [0-9]+ runs" "$LOG" | sed 's/^/# /'
}


# ---- The user-level runtime's example and ktaud merge ----

# A TAU profile as TAU writes it (extra spaces, "TAU_CALLPATH | ..."
# groups, user events): tau_file FILE PID [METRIC] (PID "": no pid metadata).
# A run of 2 s: longer than the kernel time of any thread of run.ktau.
tau_file() {
	pidattr="<attribute><name>pid</name><value>$2</value></attribute>"
	[ -n "$2" ] || pidattr=
	cat >"$1" <<EOT
6 templated_functions_MULTI_${3:-TIME}
# Name Calls Subrs Excl Incl ProfileCalls # <metadata><attribute><name>Metric Name</name><value>${3:-TIME}</value></attribute>$pidattr<attribute><name>Executable</name><value>/bin/app &amp; co</value></attribute><attribute><name>CPU Cores</name><value> 2 </value></attribute></metadata>
".TAU application  " 1 1 500.5 2000000 0 GROUP="TAU_DEFAULT" 
"main int (int, char **)  C" 1 1 1000 1999499.5 0 GROUP="TAU_DEFAULT | TAU_USER" 
"work" 10 0 1998499.5 1998499.5 0 GROUP="TAU_USER" 
".TAU application   => main int (int, char **)  C" 1 1 1000 1999499.5 0 GROUP="TAU_CALLPATH | TAU_DEFAULT" 
".TAU application  => main int (int, char **)  C  => work" 10 0 1998499.5 1998499.5 0 GROUP="TAU_CALLPATH|TAU_USER" 
"idle" 0 0 0 0 0 GROUP="TAU_USER" 
0 aggregates
1 userevents
# eventname numevents max min mean sumsqr
"Message size" 4 10 1 5 120
EOT
}

# run.ktau's processes and threads in start order: "pid tid kernel_ns".
run_tasks() {
	"$KTAUD" export --json "$FIXTURES/run.ktau" | "$PYTHON" -c '
import json, sys
for t in sorted(json.load(sys.stdin)["tasks"], key=lambda t: t["start_ns"]):
    print(t["pid"], t["tid"], t["total_excl_ns"])'
}
run_tasks >"$W/run-tasks" || { echo "Bail out! cannot read $FIXTURES/run.ktau"; exit 1; }
RP0=$(awk 'NR == 1 { print $1 }' "$W/run-tasks")
RT1=$(awk -v p="$RP0" '$1 == p && $2 != p { print $2; exit }' "$W/run-tasks")
RP1=$(awk -v p="$RP0" '$1 == $2 && $1 != p { print $1 }' "$W/run-tasks" | sed -n 1p)
RP2=$(awk -v p="$RP0" '$1 == $2 && $1 != p { print $1 }' "$W/run-tasks" | sed -n 2p)
RK2=$(awk -v p="$RP2" '$2 == p { print $3 }' "$W/run-tasks")
[ -n "$RT1" ] && [ -n "$RP2" ] && [ -n "$RK2" ] ||
	{ echo "Bail out! run.ktau is not one process with 2 threads and 2 children"; exit 1; }
# merge_fixture takes $RP2's kernel time off a top-level routine of 500.5 us.
[ "$RK2" -lt 400000 ] ||
	{ echo "Bail out! run.ktau's process $RP2 has $RK2 ns of kernel time (a capture on a loaded machine?): make -C tools/ktau fixtures again"; exit 1; }

# The processes of run.ktau in start order, read from it (a re-capture
# changes them): $RP0 (threads $RP0, $RT1), $RP1, $RP2; $RK2 the kernel
# time of $RP2 (ns).
make_tau_input() {
	rm -rf "$IN/tau" && mkdir -p "$IN/tau" || return 1
	tau_file "$IN/tau/profile.0.0.0" $1
	tau_file "$IN/tau/profile.0.0.1" $1
	tau_file "$IN/tau/profile.1.0.0" ${1:+$RP1}
	tau_file "$IN/tau/profile.2.0.0" ${1:+$RP2}
}

# The function line of NAME in FILE: "calls subrs excl incl"
fline() {
	awk -v n="\"$2\"" 'substr($0, 1, length(n) + 1) == n " " {
		s = substr($0, length(n) + 2); split(s, f, " "); print f[1], f[2], f[3], f[4] }' "$1"
}

c_merge_fixture() {
	make_tau_input $RP0 || return 1
	"$KTAUD" merge -o "$W/merged" "$IN/tau" "$FIXTURES/run.ktau" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "4 TAU threads, 4 kernel threads; 4 merged" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "not attributed: the user routines" "$LOG" || return 1
	for f in 0.0.0 0.0.1 1.0.0 2.0.0; do
		p="$W/merged/profile.$f"
		[ "$(fline "$p" ".TAU application => getppid" | cut -d' ' -f1)" = 500 ] ||
			{ echo "# $p: no .TAU application => getppid with 500 calls"; return 1; }
		grep -q '<name>KTAU Merge Match</name><value>pid metadata' "$p" || return 1
		grep -q '"Message size" 4 10 1 5 120$' "$p" || return 1
	done
	grep -q "<name>KTAU Merge tid</name><value>$RT1</value>" "$W/merged/profile.0.0.1" ||
		{ echo "# profile.0.0.1 is not thread $RT1 (the second thread of $RP0 by start)"; return 1; }
	# The top-level routine's exclusive time is reduced by the kernel time
	# (500.5 us less the kernel time of thread $RP2).
	fline "$W/merged/profile.2.0.0" ".TAU application" |
		awk -v k="$RK2" '{ d = $3 - (500.5 - k / 1000); exit !(d > -0.01 && d < 0.01) }' ||
		{ fline "$W/merged/profile.2.0.0" ".TAU application" | sed 's/^/# /'; return 1; }
}

c_merge_options() {
	make_tau_input $RP0 || return 1
	"$KTAUD" merge -q --attach node -o "$W/merged-node" "$IN/tau" "$FIXTURES/run.ktau" >"$LOG" 2>&1 ||
		return 1
	[ "$(fline "$W/merged-node/profile.1.0.0" "[kernel] => getppid" | cut -d' ' -f1)" = 500 ] ||
		return 1
	[ "$(fline "$W/merged-node/profile.1.0.0" ".TAU application" | cut -d' ' -f3)" = 500.5 ] ||
		{ echo "# --attach node changed the user routines"; return 1; }
	"$KTAUD" merge -q --top work -m 0.0.0=$RT1 -m 0.0.1=$RP0 -o "$W/merged-map" "$IN/tau" \
		"$FIXTURES/run.ktau" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "<name>KTAU Merge tid</name><value>$RT1</value>" "$W/merged-map/profile.0.0.0" ||
		return 1
	grep -q '<name>KTAU Merge Match</name><value>--map</value>' "$W/merged-map/profile.0.0.1" ||
		return 1
	[ "$(fline "$W/merged-map/profile.0.0.0" "work => getppid" | cut -d' ' -f1)" = 500 ] ||
		return 1
	# Without pid metadata: nodes 1 and 2 by --pid, node 0 in start order.
	make_tau_input "" || return 1
	"$KTAUD" merge -q --force-map -p 2=$RP1 -p 1=$RP2 -o "$W/merged-pid" "$IN/tau" \
		"$FIXTURES/run.ktau" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "<name>KTAU Merge pid</name><value>$RP1</value>" "$W/merged-pid/profile.2.0.0" &&
	grep -q "<name>KTAU Merge pid</name><value>$RP2</value>" "$W/merged-pid/profile.1.0.0" &&
	grep -q '<name>KTAU Merge Match</name><value>node and process in start order' \
		"$W/merged-pid/profile.0.0.1" || { sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" merge -q --force-map -o "$W/merged-order" "$IN/tau" "$FIXTURES/run.ktau" >"$LOG" 2>&1 &&
	grep -q "<name>KTAU Merge tid</name><value>$RP2</value>" "$W/merged-order/profile.2.0.0"
}

c_merge_multi_metric() {
	rm -rf "$IN/multi" && mkdir -p "$IN/multi/MULTI__TIME" "$IN/multi/MULTI__PAPI_TOT_CYC"
	tau_file "$IN/multi/MULTI__TIME/profile.0.0.0" $RP2
	tau_file "$IN/multi/MULTI__PAPI_TOT_CYC/profile.0.0.0" $RP2 PAPI_TOT_CYC
	"$KTAUD" merge -q -o "$W/merged-multi" "$IN/multi" "$FIXTURES/run.ktau" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(fline "$W/merged-multi/MULTI__TIME/profile.0.0.0" "SYSCALL" | cut -d' ' -f1)" -gt 0 ] &&
	[ "$(fline "$W/merged-multi/MULTI__PAPI_TOT_CYC/profile.0.0.0" "SYSCALL" | cut -d' ' -f3)" = 0 ]
}

# A user profile of another run (another pid, another program): refused,
# nothing written, unless threads are mapped (--map, --pid) or --force-map.
c_merge_mismatch() {
	R=$FIXTURES/run.ktau
	make_tau_input 4242 || return 1
	rm -rf "$IN/mm"
	expect_rc 1 "$KTAUD" merge -q -o "$IN/mm" "$IN/tau" "$R" || return 1
	grep -q "is of pid 4242, which the kernel profile does not have" "$LOG" &&
		grep -q -- "--force-map" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	[ ! -e "$IN/mm" ] || { echo "# output written after a refusal"; return 1; }
	# No pid, and the program is not the kernel process's.
	make_tau_input "" || return 1
	expect_rc 1 "$KTAUD" merge -q -o "$IN/mm" "$IN/tau" "$R" || return 1
	grep -q "is of program 'app & co', but .* is 'ktau-test-loop'" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	# libktau's own profile names its program: the same name merges in start order.
	rm -rf "$IN/named" && mkdir -p "$IN/named" || return 1
	sed 's,/bin/app &amp; co,/usr/bin/ktau-test-loop,' "$IN/tau/profile.2.0.0" >"$IN/named/profile.0.0.0"
	"$KTAUD" merge -q -o "$W/merged-named" "$IN/named" "$R" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	# Told explicitly: --map with a list, or --force-map.
	make_tau_input 4242 || return 1
	"$KTAUD" merge -q -m 0.0.0=$RP0,0.0.1=$RT1 -m 1.0.0=$RP1,2.0.0=$RP2 -o "$W/merged-maplist" \
		"$IN/tau" "$R" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "<name>KTAU Merge tid</name><value>$RP2</value>" "$W/merged-maplist/profile.2.0.0" ||
		return 1
	"$KTAUD" merge -q --force-map -o "$W/merged-forced" "$IN/tau" "$R" >"$LOG" 2>&1 &&
	grep -q 'in start order (--force-map)' "$W/merged-forced/profile.0.0.0"
}

# Output directories: others' files are never removed or replaced; a
# directory that has them is refused (nothing touched) without --force;
# our own earlier files are replaced; export, dump and merge alike.
c_outdir_keeps_others() {
	R=$FIXTURES/run.ktau
	make_tau_input $RP0 || return 1
	rm -rf "$IN/own" "$IN/own.orig" && mkdir -p "$IN/own" || return 1
	tau_file "$IN/own/profile.0.0.0" 4242
	echo "my notes" >"$IN/own/notes.txt"
	cp -a "$IN/own" "$IN/own.orig" || return 1
	expect_rc 1 "$KTAUD" export --tau "$IN/own" "$R" || return 1
	grep -q "is not from an earlier output" "$LOG" && grep -q -- "--force" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	diff -r "$IN/own" "$IN/own.orig" >"$W/diff" 2>&1 || { echo "# changed:"; sed 's/^/#   /' "$W/diff"; return 1; }
	# --force: beside them, never over them (profile.0.0.0 is theirs).
	expect_rc 1 "$KTAUD" export --force --tau "$IN/own" "$R" || return 1
	grep -q "profile.0.0.0 exists" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	cmp -s "$IN/own/profile.0.0.0" "$IN/own.orig/profile.0.0.0" || { echo "# theirs replaced"; return 1; }
	expect_rc 1 "$KTAUD" export --force --tau "$IN/own" "$R" || return 1
	cmp -s "$IN/own/profile.0.0.0" "$IN/own.orig/profile.0.0.0" || { echo "# theirs removed"; return 1; }
	expect_rc 1 "$KTAUD" merge -q -p $RP0 -o "$IN/own" "$IN/tau" "$R" || return 1
	grep -q "is not from an earlier output of this kind (merge)" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	# A subdirectory of somebody's (not gone into): refused by its name.
	rm -rf "$IN/sub" && mkdir -p "$IN/sub/data/deep" && echo x >"$IN/sub/data/deep/f"
	expect_rc 1 "$KTAUD" export --tau "$IN/sub" "$R" || return 1
	grep -q "holds 'data/'" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	# A directory of ours: replaced by the next export, 4 files then 3.
	"$KTAUD" export --tau "$W/ours" "$R" >"$LOG" 2>&1 || return 1
	"$KTAUD" export --processes --tau "$W/ours" "$R" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(ls "$W/ours" | tr '\n' ' ')" = "profile.0.0.0 profile.1.0.0 profile.2.0.0 " ] ||
		{ echo "# files: $(ls "$W/ours")"; return 1; }
	# The same output written by the same node on another machine (a job
	# run on two hosts into one shared directory): not replaced.
	m=$W/ours/.ktau-written.kernel
	[ -f "$m" ] || { echo "# no manifest: $(ls -A "$W/ours")"; return 1; }
	cp "$m" "$IN/manifest.orig" && sed -i "1s/ host=[^ ]* / host=elsewhere-$$ /" "$m" &&
	cp -a "$W/ours" "$IN/ours.orig" || return 1
	expect_rc 1 "$KTAUD" export --tau "$W/ours" "$R" || return 1
	grep -q "that process [0-9]* wrote on host elsewhere-$$: nothing was changed" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	diff -r "$W/ours" "$IN/ours.orig" >"$W/diff" 2>&1 || { echo "# changed:"; sed 's/^/#   /' "$W/diff"; return 1; }
	# An earlier run of ours that did not end (no stamps): its profiles
	# are replaced, but a TAU profile written there since is not ours:
	# refused by its name, nothing removed (profile.0.0.0 stays too).
	grep -v '^=' "$IN/manifest.orig" >"$m"
	"$KTAUD" export --processes --tau "$W/ours" "$R" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -v '^=' "$m" >"$m.new" && mv "$m.new" "$m" || return 1
	tau_file "$W/ours/profile.1.0.0" 4242
	cp "$W/ours/profile.1.0.0" "$IN/tau-since"
	expect_rc 1 "$KTAUD" export --processes --tau "$W/ours" "$R" || return 1
	grep -q "profile.1.0.0 is listed by an earlier run of this writer but is no longer as it left it" "$LOG" &&
		cmp -s "$W/ours/profile.1.0.0" "$IN/tau-since" && [ -f "$W/ours/profile.0.0.0" ] ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	rm "$W/ours/profile.1.0.0"
	"$KTAUD" export --processes --tau "$W/ours" "$R" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	# Another writer's output (the runtime's, merge's) is not ours either.
	"$KTAUD" merge -q -p $RP0 -o "$W/keep-merged" "$IN/tau" "$R" >"$LOG" 2>&1 || return 1
	expect_rc 1 "$KTAUD" export --tau "$W/keep-merged" "$R" || return 1
	# Their notes among ours, with --force: kept, ours replaced.
	echo "my notes" >"$W/ours/notes.txt"
	expect_rc 1 "$KTAUD" export --tau "$W/ours" "$R" || return 1
	"$KTAUD" export --force --tau "$W/ours" "$R" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(cat "$W/ours/notes.txt")" = "my notes" ] && [ -f "$W/ours/profile.0.0.1" ] || return 1
	rm "$W/ours/notes.txt"
	# One of ours that somebody changed since: kept, refused by its name
	# (at every run), none of that run's other files removed.
	"$KTAUD" export --tau "$IN/edited" "$R" >"$LOG" 2>&1 || return 1
	echo "# my remark" >>"$IN/edited/profile.1.0.0"
	cp "$IN/edited/profile.1.0.0" "$IN/edited.orig"
	for i in 1 2; do
		expect_rc 1 "$KTAUD" export --tau "$IN/edited" "$R" || return 1
		grep -q "profile.1.0.0 is listed by an earlier run of this writer" "$LOG" &&
			cmp -s "$IN/edited/profile.1.0.0" "$IN/edited.orig" &&
			[ -f "$IN/edited/profile.0.0.0" ] || { sed 's/^/#   /' "$LOG"; return 1; }
	done
	# The runtime at exit: refused with a message, the app's files intact.
	rm -rf "$IN/app" && mkdir -p "$IN/app" && tau_file "$IN/app/profile.0.0.0" 4242
	cp "$IN/app/profile.0.0.0" "$IN/app.orig"
	KTAU_PROFILE_DIR="$IN/app" "$DEMO" -q -c 1000 -s 1 -S 1 -n 2 -m 2 >"$LOG" 2>&1
	grep -q "libktau: the profile was not written: .*KTAU_PROFILE_FORCE" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	cmp -s "$IN/app/profile.0.0.0" "$IN/app.orig" && [ "$(ls "$IN/app")" = profile.0.0.0 ]
}

# The commands that run a command check their output directory first:
# refused before the command runs (on any host, KTAU or not), nothing
# touched, nothing made.
c_run_checks_output() {
	rm -rf "$IN/busy" "$IN/fresh" && mkdir -p "$IN/busy" && echo "my notes" >"$IN/busy/notes.txt"
	for cmd in "run" "sample" "run --sample cpu-clock" "probe add vfs_read"; do
		expect_rc 1 "$KTAUD" $cmd -o "$IN/busy" -- touch "$IN/ran" || return 1
		grep -q "the command is not run: .*notes.txt" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
		[ ! -e "$IN/ran" ] && [ "$(ls -A "$IN/busy")" = notes.txt ] ||
			{ echo "# '$cmd': ran, or the directory changed: $(ls -A "$IN/busy")"; return 1; }
	done
	# %r, %p, %h in -o: the check is of the expanded name.
	mkdir -p "$IN/busy-0-$(hostname)" && echo x >"$IN/busy-0-$(hostname)/x"
	expect_rc 1 "$KTAUD" run -o "$IN/busy-%r-%h" -- true || return 1
	grep -q "busy-0-$(hostname) holds 'x'" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
}

# --save FILE replaces a file ktaud wrote, nothing else (not another
# file, not a copy of a snapshot file: a user's baseline); refused
# before the command runs; watch warns when it starts a second session
# in a directory (before it opens KTAU).
c_save_and_watch_keep() {
	echo "my notes" >"$IN/notes.ktau"
	expect_rc 1 "$KTAUD" export --save "$IN/notes.ktau" "$FIXTURES/run.ktau" || return 1
	grep -q "notes.ktau exists and is not a file ktaud wrote" "$LOG" &&
		[ "$(cat "$IN/notes.ktau")" = "my notes" ] || { sed 's/^/#   /' "$LOG"; return 1; }
	cp "$FIXTURES/run.ktau" "$IN/baseline.ktau" || return 1
	expect_rc 1 "$KTAUD" export --save "$IN/baseline.ktau" "$FIXTURES/process.ktau" || return 1
	cmp -s "$FIXTURES/run.ktau" "$IN/baseline.ktau" || { echo "# the copy was replaced"; return 1; }
	"$KTAUD" export --save "$IN/again.ktau" "$FIXTURES/run.ktau" >"$LOG" 2>&1 &&
		"$KTAUD" export --save "$IN/again.ktau" "$FIXTURES/process.ktau" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" export "$IN/again.ktau" >"$W/again.tab" 2>"$LOG" &&
		"$KTAUD" export "$FIXTURES/process.ktau" >"$W/process.tab" 2>"$LOG" &&
		cmp -s "$W/again.tab" "$W/process.tab" || { echo "# --save did not replace its own file"; return 1; }
	"$KTAUD" export --force --save "$IN/baseline.ktau" "$FIXTURES/process.ktau" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	rm -rf "$IN/w1" && mkdir -p "$IN/w1" && cp "$FIXTURES/watch/snap-000000.ktau" "$IN/w1/"
	"$KTAUD" watch -c 1 -i 0.01 -o "$IN/w1" >"$LOG" 2>&1
	grep -q "warning: .*w1 already holds the snapshots of an earlier watch" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
}

# Named output files (--json=FILE, --folded FILE, --save FILE, --raw, ...):
# written whole or not at all (a failed write leaves the file as it was
# and no temporary file), a symbolic link not written through, stdout
# checked, and under an MPI launcher one name per rank.
# Whether DIR's file system keeps user extended attributes (ktaud marks its
# single output files with one).
xattr_ok() {
	touch "$1/xattr-probe" &&
	"$PYTHON" -c 'import os, sys; os.setxattr(sys.argv[1], "user.ktau.probe", b"1")' \
		"$1/xattr-probe" 2>/dev/null
}

c_single_file_outputs() {
	R=$FIXTURES/run.ktau
	# ktaud knows its own files by a user extended attribute.
	xattr_ok "$IN" || { SKIP="$IN's file system keeps no user extended attributes"; return 77; }
	rm -rf "$IN/sf" && mkdir -p "$IN/sf" || return 1
	echo "theirs" >"$IN/sf/target" && ln -s "$IN/sf/target" "$IN/sf/link.json" || return 1
	expect_rc 1 "$KTAUD" export --json="$IN/sf/link.json" "$R" || return 1
	grep -q "link.json exists and is a symbolic link (not written through)" "$LOG" &&
	[ "$(cat "$IN/sf/target")" = theirs ] || { sed 's/^/#   /' "$LOG"; return 1; }
	# The file size limit (SIGXFSZ ignored: EFBIG) stops the second write
	# half-way: the first file stays as it was.
	"$KTAUD" export --json="$IN/sf/p.json" "$R" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	cp "$IN/sf/p.json" "$IN/sf.p.json" || return 1
	[ "$(wc -c <"$IN/sf/p.json")" -gt 4096 ] || { echo "# p.json is small"; return 1; }
	(trap '' XFSZ; ulimit -f 4 && exec "$KTAUD" export --json="$IN/sf/p.json" "$R") \
		>"$LOG" 2>&1
	rc=$?
	[ $rc = 1 ] && grep -q "cannot write JSON to $IN/sf/p.json: .*(nothing was written)" "$LOG" ||
		{ echo "# exit $rc"; sed 's/^/#   /' "$LOG"; return 1; }
	cmp -s "$IN/sf/p.json" "$IN/sf.p.json" || { echo "# p.json changed"; return 1; }
	[ "$(ls -A "$IN/sf" | tr '\n' ' ')" = "link.json p.json target " ] ||
		{ echo "# left: $(ls -A "$IN/sf")"; return 1; }
	# The same limit with SIGXFSZ at its default (as a shell usually starts
	# programs): ktaud is not killed half-way with its temporary file left.
	(ulimit -f 4 && exec env --default-signal=XFSZ "$KTAUD" export --json="$IN/sf/p.json" "$R") \
		>"$LOG" 2>&1
	rc=$?
	[ $rc = 1 ] && grep -q "cannot write JSON to $IN/sf/p.json: File too large (nothing was written)" "$LOG" ||
		{ echo "# exit $rc"; sed 's/^/#   /' "$LOG"; return 1; }
	cmp -s "$IN/sf/p.json" "$IN/sf.p.json" || { echo "# p.json changed"; return 1; }
	[ "$(ls -A "$IN/sf" | tr '\n' ' ')" = "link.json p.json target " ] ||
		{ echo "# left: $(ls -A "$IN/sf")"; return 1; }
	# A device is written as it is; a full one is an error, as is a full stdout.
	expect_rc 1 "$KTAUD" export --json=/dev/full "$R" || return 1
	grep -q "cannot write JSON to /dev/full: No space left on device" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" export --json "$R" >/dev/full 2>"$LOG"
	rc=$?
	[ $rc = 1 ] && grep -q "cannot write JSON to stdout: No space left on device" "$LOG" ||
		{ echo "# exit $rc"; sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" export --json=/dev/null "$R" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	# /dev/stdout is standard output, also when it goes to a file (it was
	# refused as a symbolic link).
	"$KTAUD" export --json=/dev/stdout "$R" >"$IN/sf.so.json" 2>"$LOG" &&
	cmp -s "$IN/sf.so.json" "$IN/sf/p.json" || { sed 's/^/#   /' "$LOG"; return 1; }
	# Every rank of a job would write one file: %r is needed.
	for a in --json= --folded= --save=; do
		expect_rc 2 env PMI_RANK=3 "$KTAUD" export "$a$IN/sf/r" "$R" || return 1
		grep -q "sf/r would be written by every MPI rank (this is rank 3): put %r in its name" "$LOG" &&
		[ ! -e "$IN/sf/r" ] || { sed 's/^/#   /' "$LOG"; return 1; }
	done
	env PMI_RANK=3 "$KTAUD" export --json="$IN/sf/r.%r.json" "$R" >"$LOG" 2>&1 &&
	cmp -s "$IN/sf/r.3.json" "$IN/sf/p.json" || { sed 's/^/#   /' "$LOG"; return 1; }
	expect_rc 1 "$KTAUD" export --folded="$IN/sf/link.json" "$R" || return 1
	[ "$(cat "$IN/sf/target")" = theirs ] || return 1
	# A regular file ktaud did not write is not replaced (exit 2), but
	# with --force; its own files are (an extended attribute marks them);
	# an empty file is taken.
	echo theirs >"$IN/sf/user.json"
	for a in --json= --folded=; do
		expect_rc 1 "$KTAUD" export "$a$IN/sf/user.json" "$R" || return 1
		grep -q "sf/user.json exists and is not a file ktaud wrote (or it changed since): nothing was written; remove it, name another file, or give --force to replace it" "$LOG" &&
		[ "$(cat "$IN/sf/user.json")" = theirs ] || { sed 's/^/#   /' "$LOG"; return 1; }
	done
	"$KTAUD" export --force --json="$IN/sf/user.json" "$R" >"$LOG" 2>&1 &&
	cmp -s "$IN/sf/user.json" "$IN/sf/p.json" || { sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" export --folded="$IN/sf/user.json" "$R" >"$LOG" 2>&1 &&
	! cmp -s "$IN/sf/user.json" "$IN/sf/p.json" || { sed 's/^/#   /' "$LOG"; return 1; }
	# A file of ktaud's that was written to since, or copied with its
	# attributes, is no longer taken for ktaud's.
	echo "my note" >>"$IN/sf/user.json"
	expect_rc 1 "$KTAUD" export --json="$IN/sf/user.json" "$R" || return 1
	tail -1 "$IN/sf/user.json" | grep -q "my note" || return 1
	if command -v cp >/dev/null && cp --preserve=xattr "$IN/sf/p.json" "$IN/sf/copy.json" 2>/dev/null; then
		expect_rc 1 "$KTAUD" export --folded="$IN/sf/copy.json" "$R" || return 1
		cmp -s "$IN/sf/copy.json" "$IN/sf/p.json" || return 1
	fi
	# Refused before the command runs, as is an --sample-folded FILE
	# without %r under a launcher.
	echo theirs >"$IN/sf/user2.json"
	expect_rc 1 env LD_PRELOAD="$FAKE_KTAU" "$KTAUD" run --json="$IN/sf/user2.json" \
		-- sh -c 'echo RAN' || return 1
	! grep -q RAN "$LOG" && grep -q "user2.json exists and is not a file ktaud wrote" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	expect_rc 2 env PMI_RANK=3 LD_PRELOAD="$FAKE_KTAU" "$KTAUD" run --sample cpu-clock \
		--sample-folded="$IN/sf/sfold" -- sh -c 'echo RAN' || return 1
	! grep -q RAN "$LOG" && grep -q "sf/sfold would be written by every MPI rank" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	: >"$IN/sf/empty.json"
	"$KTAUD" export --json="$IN/sf/empty.json" "$R" >"$LOG" 2>&1 &&
	cmp -s "$IN/sf/empty.json" "$IN/sf/p.json" || { sed 's/^/#   /' "$LOG"; return 1; }
	echo theirs >"$IN/sf/cg"
	expect_rc 1 "$KTAUD" callgraph -o "$IN/sf/cg" "$CG_SAMPLE" || return 1
	[ "$(cat "$IN/sf/cg")" = theirs ] || return 1
	"$KTAUD" callgraph -q --force -o "$IN/sf/cg" "$CG_SAMPLE" >"$LOG" 2>&1 &&
	head -1 "$IN/sf/cg" | grep -q '^# ktau-callgraph 1$' || { sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" callgraph -q -o "$IN/sf/cg" "$CG_SAMPLE" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	# diff --json=FILE and flame -o, which refused their own earlier files:
	# replaced now, and a file of someone else's is not.
	for i in 1 2; do
		"$KTAUD" diff -j"$IN/sf/d.json" "$R" "$FIXTURES/process.ktau" >/dev/null 2>"$LOG" ||
			{ sed 's/^/#   /' "$LOG"; return 1; }
	done
	echo theirs >"$IN/sf/d2.json"
	expect_rc 1 "$KTAUD" diff -j"$IN/sf/d2.json" "$R" "$FIXTURES/process.ktau" || return 1
	[ "$(cat "$IN/sf/d2.json")" = theirs ] || return 1
	"$KTAUD" export --folded="$IN/sf/st.folded" "$R" >"$LOG" 2>&1 || return 1
	for i in 1 2; do
		"$KTAUD" flame -o "$IN/sf/fl.svg" "$IN/sf/st.folded" >"$LOG" 2>&1 ||
			{ sed 's/^/#   /' "$LOG"; return 1; }
	done
	grep -q '<svg' "$IN/sf/fl.svg" || return 1
	# Both on standard output, by any of its names: refused.
	expect_rc 2 "$KTAUD" export --json=/dev/stdout --folded=- "$R" || return 1
	# A file system with neither renameat2() flags nor hard links nor
	# user extended attributes (vfat; faked): a new FILE and ktaud's own
	# are written (its own known by the mark file beside it), another is
	# not (a new FILE failed with EPERM from link(); a second run with
	# ENOTSUP from the attributes).
	: "${FAKE_OLDFS:?}"
	for i in 1 2; do
		env LD_PRELOAD="$FAKE_OLDFS" "$KTAUD" export --json="$IN/sf/oldfs.json" "$R" >"$LOG" 2>&1 &&
		cmp -s "$IN/sf/oldfs.json" "$IN/sf/p.json" && ! grep -q warning "$LOG" ||
			{ sed 's/^/#   /' "$LOG"; return 1; }
	done
	grep -q '^ktau-output 1 [0-9]*:[0-9]*:[0-9]*\.[0-9]*$' "$IN/sf/.oldfs.json.ktau-mark" || return 1
	echo theirs >"$IN/sf/oldfs2.json"
	expect_rc 1 env LD_PRELOAD="$FAKE_OLDFS" "$KTAUD" export --json="$IN/sf/oldfs2.json" "$R" ||
		return 1
	grep -q "(its file system keeps no extended attributes, by which ktaud knows its own files)" \
		"$LOG" && [ "$(cat "$IN/sf/oldfs2.json")" = theirs ] || { sed 's/^/#   /' "$LOG"; return 1; }
	# ktaud's file written to since, or marked by a mark file of its
	# own name copied from another file: not ktaud's any more.
	echo "my note" >>"$IN/sf/oldfs.json"
	expect_rc 1 env LD_PRELOAD="$FAKE_OLDFS" "$KTAUD" export --json="$IN/sf/oldfs.json" "$R" ||
		return 1
	tail -1 "$IN/sf/oldfs.json" | grep -q "my note" || return 1
	cp "$IN/sf/.oldfs.json.ktau-mark" "$IN/sf/.oldfs2.json.ktau-mark" &&
	expect_rc 1 env LD_PRELOAD="$FAKE_OLDFS" "$KTAUD" export --json="$IN/sf/oldfs2.json" "$R" ||
		return 1
	[ "$(cat "$IN/sf/oldfs2.json")" = theirs ] || return 1
	# A file of someone else's under the mark file's name is not
	# replaced: the output is written, with a warning that a later run
	# needs --force (which then replaces the output, not that file).
	echo "their notes" >"$IN/sf/.oldfs3.json.ktau-mark"
	for i in 1 2; do
		env LD_PRELOAD="$FAKE_OLDFS" "$KTAUD" export --force --json="$IN/sf/oldfs3.json" "$R" \
			>"$LOG" 2>&1 && cmp -s "$IN/sf/oldfs3.json" "$IN/sf/p.json" &&
		grep -q "warning: cannot mark .*oldfs3.json as ktaud's (a file of another's has the name of its mark file): a later run will need --force" "$LOG" ||
			{ sed 's/^/#   /' "$LOG"; return 1; }
	done
	[ "$(cat "$IN/sf/.oldfs3.json.ktau-mark")" = "their notes" ] || return 1
	expect_rc 1 env LD_PRELOAD="$FAKE_OLDFS" "$KTAUD" export --json="$IN/sf/oldfs3.json" "$R" ||
		return 1
}

# A directory into which 'ktaud watch' was started twice: two baselines.
# Adding them up would double the totals: refused, with what to do.
c_watch_two_sessions() {
	rm -rf "$IN/w2" && mkdir -p "$IN/w2" || return 1
	for i in 0 1 2 3; do
		cp "$FIXTURES/watch/snap-00000$i.ktau" "$IN/w2/snap-00000$i.ktau"
		cp "$FIXTURES/watch/snap-00000$i.ktau" "$IN/w2/snap-00000$((i + 4)).ktau"
	done
	expect_rc 1 "$KTAUD" export --tau "$W/w2" "$IN/w2" || return 1
	grep -q "holds 2 'ktaud watch' sessions.*snap-000004.ktau: a second baseline" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	[ ! -e "$W/w2" ] || { echo "# written anyway"; return 1; }
	expect_rc 1 "$KTAUD" export "$IN/w2" || return 1
	# One session's files: fine, and the same as the fixture's.
	"$KTAUD" export "$IN"/w2/snap-00000[0-3].ktau >"$W/one" 2>"$LOG" || return 1
	"$KTAUD" export "$FIXTURES/watch" >"$W/fix" 2>"$LOG" || return 1
	cmp -s "$W/one" "$W/fix" || { echo "# one session differs from the fixture"; return 1; }
	rm "$W/one" "$W/fix"
	# A delta that does not continue the one before: a second session too.
	rm "$IN/w2/snap-000004.ktau"
	expect_rc 1 "$KTAUD" export "$IN/w2" || return 1
	grep -q "a delta that does not continue" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
}

# An MPI job without mpirun: 4 ranks of the instrumented example at once,
# each into its own directory (KTAU_PROFILE_DIR with %r, %h), combined
# into one profile whose nodes are the ranks; and into one shared
# directory, where nothing is lost. Both pass the strict checker.
c_combine_ranks() {
	rm -rf "$IN"/rank-* "$W/shared-ranks"
	pids=
	for r in 0 1 2 3; do
		case $r in
		0) v=OMPI_COMM_WORLD_RANK ;; 1) v=PMI_RANK ;; 2) v=PMIX_RANK ;; 3) v=SLURM_PROCID ;;
		esac
		env $v=$r KTAU_PROFILE_DIR="$IN/rank-%r-%h" "$DEMO" -q -c 1000 -s 1 -S 1 -n 2 -m 2 \
			>"$LOG.$r" 2>&1 &
		pids="$pids $!"
		env $v=$r "$DEMO" -q -o "$W/shared-ranks" -c 1000 -s 1 -S 1 -n 2 -m 2 >"$LOG.s$r" 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do wait $p || { cat "$LOG".* | sed 's/^/#   /'; return 1; }; done
	h=$(hostname)
	for r in 0 1 2 3; do
		[ -f "$IN/rank-$r-$h/profile.$r.0.2" ] || { echo "# rank $r: $(ls "$IN/rank-$r-$h")"; return 1; }
		[ -f "$W/shared-ranks/profile.$r.0.2" ] || { echo "# shared: $(ls "$W/shared-ranks")"; return 1; }
	done
	"$KTAUD" combine -o "$W/combined" "$IN"/rank-3-* "$IN"/rank-1-* "$IN"/rank-0-* "$IN"/rank-2-* \
		>"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "4 inputs, 4 nodes$" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	for r in 0 1 2 3; do
		p="$W/combined/profile.$r.0.0"
		grep -q "<name>Node</name><value>$r</value>" "$p" &&
		grep -q "<name>Hostname</name><value>$h</value>" "$p" &&
		grep -q "<name>KTAU Combine Source</name><value>$IN/rank-$r-$h</value>" "$p" ||
			{ echo "# $p: node, host or source"; return 1; }
		grep -q '^"main" 1 ' "$p" || return 1
	done
	"$TAUCHECK" "$W/combined" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	# Outputs without ranks (all node 0, 1, 2): in argument order.
	"$KTAUD" export --tau "$IN/exp-a" "$FIXTURES/run.ktau" >"$LOG" 2>&1 &&
	"$KTAUD" export --processes --tau "$IN/exp-b" "$FIXTURES/run.ktau" >"$LOG" 2>&1 || return 1
	"$KTAUD" combine -o "$W/combined-runs" "$IN/exp-a" "$IN/exp-b" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "6 nodes (inputs share node numbers" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "<name>KTAU Combine Node</name><value>2</value>" "$W/combined-runs/profile.5.0.0" &&
		grep -q "<name>KTAU Combine Source</name><value>$IN/exp-b</value>" \
			"$W/combined-runs/profile.5.0.0" || return 1
	# Combined again (ours): replaced; different metrics: refused.
	"$KTAUD" combine -q -o "$W/combined-runs" "$IN/exp-b" >"$LOG" 2>&1 || return 1
	[ "$(ls "$W/combined-runs" | tr '\n' ' ')" = "profile.0.0.0 profile.1.0.0 profile.2.0.0 " ] ||
		{ echo "# again: $(ls "$W/combined-runs")"; return 1; }
	rm -rf "$IN/two" && mkdir -p "$IN/two/MULTI__TIME" "$IN/two/MULTI__PAPI_TOT_CYC"
	tau_file "$IN/two/MULTI__TIME/profile.0.0.0" $RP2
	tau_file "$IN/two/MULTI__PAPI_TOT_CYC/profile.0.0.0" $RP2 PAPI_TOT_CYC
	expect_rc 1 "$KTAUD" combine -o "$IN/cmb" "$IN/exp-a" "$IN/two" || return 1
	grep -q "do not have the same metrics" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	# Snapshot files, one per rank ('ktaud run --save prof-%r.ktau'), in
	# argument order; not mixed with directories.
	"$KTAUD" combine -o "$W/combined-snaps" "$FIXTURES/run.ktau" "$FIXTURES/process.ktau" \
		>"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(ls "$W/combined-snaps" | tr '\n' ' ')" = \
	  "profile.0.0.0 profile.0.0.1 profile.0.1.0 profile.0.2.0 profile.1.0.0 " ] ||
		{ echo "# snapshots: $(ls "$W/combined-snaps")"; return 1; }
	grep -q "<name>Hostname</name><value>ktau-guest</value>" "$W/combined-snaps/profile.1.0.0" &&
	grep -q "<name>KTAU Combine Source</name><value>$FIXTURES/process.ktau</value>" \
		"$W/combined-snaps/profile.1.0.0" || return 1
	expect_rc 2 "$KTAUD" combine -o "$IN/cmb" "$IN/exp-a" "$FIXTURES/run.ktau" || return 1
	head -c 300 "$FIXTURES/run.ktau" >"$IN/cut.ktau"
	expect_rc 1 "$KTAUD" combine -o "$IN/cmb" "$FIXTURES/run.ktau" "$IN/cut.ktau" || return 1
	grep -q "truncated or garbled" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
}

# Bad inputs: a clear message and a non-zero exit, never a crash.
merge_err() {
	want=$1 text=$2
	shift 2
	"$KTAUD" merge -q -o "$IN/out" "$@" >"$LOG" 2>&1
	rc=$?
	[ $rc -eq "$want" ] || { echo "# 'merge $*' exited $rc, not $want"; sed 's/^/#   /' "$LOG"; return 1; }
	grep -q -- "$text" "$LOG" || { echo "# 'merge $*': no '$text' in:"; sed 's/^/#   /' "$LOG"; return 1; }
}

c_merge_bad_inputs() {
	make_tau_input $RP0 || return 1
	R=$FIXTURES/run.ktau
	merge_err 2 "give a TAU profile directory" "$IN/tau" || return 1
	merge_err 2 "bad --map" -m 0.0=5 "$IN/tau" "$R" || return 1
	merge_err 2 "bad --attach" --attach middle "$IN/tau" "$R" || return 1
	merge_err 2 "bad --pid" -p x "$IN/tau" "$R" || return 1
	"$KTAUD" merge -q -o "$IN/tau" "$IN/tau" "$R" >"$LOG" 2>&1
	[ $? -eq 2 ] && grep -q "is the input TAU directory" "$LOG" || return 1
	merge_err 1 "is not a directory" "$IN/nonexistent" "$R" || return 1
	mkdir -p "$IN/empty"
	merge_err 1 "has no TAU profile files" "$IN/empty" "$R" || return 1
	mkdir -p "$IN/bad1" && echo "garbage" >"$IN/bad1/profile.0.0.0"
	merge_err 1 "profile.0.0.0:1: line 1" "$IN/bad1" "$R" || return 1
	mkdir -p "$IN/bad2" && sed '1s/^6 /9 /' "$IN/tau/profile.0.0.0" >"$IN/bad2/profile.0.0.0"
	merge_err 1 "9 function lines announced" "$IN/bad2" "$R" || return 1
	mkdir -p "$IN/bad3" && sed 's/^"work" 10 0/"work" -1 0/' "$IN/tau/profile.0.0.0" >"$IN/bad3/profile.0.0.0"
	merge_err 1 "non-negative integers" "$IN/bad3" "$R" || return 1
	"$KTAUD" export --tau "$IN/kernel-tau" "$R" >"$LOG" 2>&1 || return 1
	merge_err 1 "already has kernel data" "$IN/kernel-tau" "$R" || return 1
	head -c 300 "$R" >"$IN/trunc.ktau"
	merge_err 1 "truncated or garbled" "$IN/tau" "$IN/trunc.ktau" || return 1
	merge_err 1 "thread 4242 is not in the kernel profile" -m 0.0.0=4242 "$IN/tau" "$R" || return 1
	merge_err 1 "there is no profile.7.0.0" -m 7.0.0=$RP0 "$IN/tau" "$R" || return 1
	merge_err 1 "threads summed" -p "$(sed -n "s/^pid=//p" "$FIXTURES/process.expect")" "$IN/tau" \
		"$FIXTURES/process.ktau" || return 1
	merge_err 1 "no TAU thread matched" -p 0=999 -p 1=999 -p 2=999 "$IN/tau" "$R" || return 1
	[ ! -e "$IN/out" ] || { echo "# output written after an error"; return 1; }
}

# The example, built with -finstrument-functions (PIE and static): names
# from the symbol tables, one file a thread, the forked child apart.
demo_check() {
	d=$1
	ls "$d" | tr '\n' ' ' | grep -q "^fork-[0-9]* profile.0.0.0 profile.0.0.1 profile.0.0.2 $" ||
		{ echo "# $d: $(ls "$d" | tr '\n' ' ')"; return 1; }
	for r in main compute sleeper write_file read_file pipe_demo fork_child "main => write_file"; do
		[ "$(fline "$d/profile.0.0.0" "$r" | cut -d' ' -f1)" = 1 ] ||
			{ echo "# $d/profile.0.0.0: no '$r' with 1 call"; return 1; }
	done
	cat "$d"/profile.0.0.1 "$d"/profile.0.0.2 >"$W/threads.txt"
	grep -q '^"producer => produce_one" 40 ' "$W/threads.txt" || { echo "# produce_one"; return 1; }
	grep -q '^"consumer => consume_one" 41 ' "$W/threads.txt" || { echo "# consume_one"; return 1; }
	grep -q '^"write_file" 1 ' "$d"/fork-*/profile.0.0.0 || { echo "# the child"; return 1; }
	! grep -q '"compute"' "$d"/fork-*/profile.0.0.0 || { echo "# the parent's data in the child"; return 1; }
	grep -q '<name>KTAU Shared Page</name>' "$d/profile.0.0.0"
}

c_demo_pie() {
	"$DEMO" -q -f -o "$W/demo" -c 1000 -s 1 -S 2 -n 8 -m 40 >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	demo_check "$W/demo"
}

c_demo_static() {
	# Without -o or KTAU_PROFILE_DIR: ./ktau-profile.
	(unset KTAU_PROFILE_DIR; "$DEMO_STATIC" -q -c 1000 -s 1 -S 1 -n 2 -m 2) >"$LOG" 2>&1 &&
		[ -f ktau-profile/profile.0.0.2 ] || { echo "# no ./ktau-profile"; return 1; }
	KTAU_PROFILE_DIR="$W/demo-static-%p" "$DEMO_STATIC" -q -f -c 1000 -s 1 -S 2 -n 8 -m 40 \
		>"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	set -- "$W"/demo-static-*
	[ $# -eq 1 ] && [ -d "$1" ] || { echo "# %p was not expanded: $*"; return 1; }
	demo_check "$1"
}

# A C++ program: its routines as c++filt writes them (libiberty), in
# flat rows and callpaths, and no mangled name left.
c_demo_cxx() {
	f="$W/cxx/profile.0.0.0"
	t0=$(date +%s%6N)
	"$CXX_DEMO" -o "$W/cxx" -n 7 >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	t1=$(date +%s%6N)
	# TAU's own metadata of the run.
	st=$(sed -n 's,.*<name>Starting Timestamp</name><value>\([0-9]*\)</value>.*,\1,p' "$f")
	[ -n "$st" ] && [ "$st" -ge "$t0" ] && [ "$st" -le "$t1" ] ||
		{ echo "# Starting Timestamp '$st' not within $t0..$t1"; return 1; }
	for m in "Executable</name><value>$(readlink -f "$CXX_DEMO")<" \
		"Command Line</name><value>$CXX_DEMO -o $W/cxx -n 7<" "CWD</name><value>$(pwd -P)<"; do
		grep -qF "<name>$m" "$f" || { echo "# no <name>$m in $f"; return 1; }
	done
	for r in "demo::Grid::step(int)" "main => demo::Grid::step(int)"; do
		[ "$(fline "$f" "$r" | cut -d' ' -f1)" = 7 ] ||
			{ echo "# $f: no '$r' with 7 calls"; return 1; }
	done
	r="double demo::sum<double>(std::vector<double, std::allocator<double> > const&)"
	[ "$(fline "$f" "$r" | cut -d' ' -f1)" = 1 ] || { echo "# $f: no '$r'"; return 1; }
	! grep -q '"_Z' "$f" || { echo "# mangled: $(grep -o '"_Z[^"]*' "$f" | head -3)"; return 1; }
}

# Sample names through libdwfl (lib/dwname.c): a stripped program whose
# debug information is in a build-id directory (KTAU_DEBUGINFO_PATH) gets
# its static function's name and the inlined function at a call site;
# without the debug information, only "<file>+0x<offset>".
c_sample_names_dwfl() {
	d=$W/dwfl
	rm -rf "$d" && mkdir -p "$d" || return 1
	$CC -std=gnu11 -Wall -Wextra -Werror -g -O1 -Wl,--build-id -o "$d/dwp" "$TOOLS/tests/host/dw-prog.c" ||
		return 1
	id=$(readelf -n "$d/dwp" | sed -n 's/.*Build ID: //p')
	[ ${#id} -gt 2 ] || { echo "# no build-id in $d/dwp"; return 1; }
	mkdir -p "$d/dbg/.build-id/$(echo "$id" | cut -c1-2)" &&
		objcopy --only-keep-debug "$d/dwp" "$d/dbg/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug" &&
		strip --strip-all "$d/dwp" || return 1
	"$d/dwp" >"$d/out" &
	pid=$!
	for i in 1 2 3 4 5 6 7 8 9 10; do [ -s "$d/out" ] && break; sleep 0.1; done
	read -r fn site v <"$d/out"
	KTAU_DEBUGINFO_PATH=$d/dbg "$HOST_TEST" --usyms-name $pid "$fn" "$site" >"$d/with" 2>&1
	"$HOST_TEST" --usyms-name $pid "$fn" "$site" >"$d/without" 2>&1
	kill $pid
	wait $pid 2>/dev/null
	sed 's/^/# with debug information: /' "$d/with"
	[ "$(cat "$d/with")" = "hidden_static
inlined_here [inlined into outer_fn]" ] || return 1
	grep -q '^dwp+0x' "$d/without" || { sed 's/^/# without: /' "$d/without"; return 1; }
}

# Samples per source line (KTAU_LIB_PROFILE_LINES, what 'ktaud sample
# --lines' asks for): with the debug information of KTAU_DEBUGINFO_PATH the
# call site in the inlined function is the TAU row "[SAMPLE] inlined_here
# [inlined into outer_fn] [{<dw-prog.c>} {<its marked line>}]", which the
# strict checker takes; without it, and through the static libktau.a (no
# libdw, even for a program with its debug information in it), the rows
# are the plain per-function ones, never a line.
c_sample_lines_dwfl() {
	d=$W/dwlines src=$TOOLS/tests/host/dw-prog.c
	rm -rf "$d" && mkdir -p "$d" || return 1
	$CC -std=gnu11 -Wall -Wextra -Werror -g -O1 -Wl,--build-id -o "$d/dwp" "$src" || return 1
	id=$(readelf -n "$d/dwp" | sed -n 's/.*Build ID: //p')
	dbg=$d/dbg/.build-id/$(echo "$id" | cut -c1-2)
	mkdir -p "$dbg" && cp "$d/dwp" "$d/dwp-g" &&
		objcopy --only-keep-debug "$d/dwp" "$dbg/$(echo "$id" | cut -c3-).debug" &&
		strip --strip-all "$d/dwp" || return 1
	line=$(grep -n "c_sample_lines_dwfl: the call site's line" "$src" | cut -d: -f1)
	case $src in /*) ;; *) src=$(pwd)/$src ;; esac
	cat >"$d/st.c" <<'EOT'
#include <stdio.h>
#include <stdlib.h>
#include "libktau.h"
int main(int argc, char **argv)
{
	unsigned long long a = argc == 3 ? strtoull(argv[2], NULL, 16) : 0;
	char name[256], file[4096] = "?";
	struct ktau_usyms *u;
	int line;

	if (argc != 3 || ktau_usyms_open(atoi(argv[1]), &u))
		return 1;
	ktau_usyms_name(u, a, name, sizeof(name));
	line = ktau_usyms_srcline(u, a, file, sizeof(file));
	printf("%s %d '%s'\n", name, line, file);
	return 0;
}
EOT
	$CC -std=gnu11 -Wall -Werror $KHDR_INCLUDES -I"$TOOLS/lib" -o "$d/st" "$d/st.c" \
		"$O/libktau.a" -ljson-c -liberty -lm -pthread || return 1
	! readelf -d "$d/st" | grep -q 'NEEDED.*libdw' || { echo "# st needs libdw"; return 1; }
	for p in dwp dwp-g; do
		"$d/$p" >"$d/$p.out" &
		echo $! >"$d/$p.pid"
	done
	for i in 1 2 3 4 5 6 7 8 9 10; do [ -s "$d/dwp.out" ] && [ -s "$d/dwp-g.out" ] && break; sleep 0.1; done
	read -r fn site v <"$d/dwp.out"
	read -r gfn gsite v <"$d/dwp-g.out"
	pid=$(cat "$d/dwp.pid") gpid=$(cat "$d/dwp-g.pid")
	KTAU_DEBUGINFO_PATH=$d/dbg "$HOST_TEST" --sample-lines $pid "$d/with" "$site" "$site" "$fn" \
		>"$d/with.txt" 2>&1
	"$HOST_TEST" --sample-lines $pid "$d/without" "$site" "$fn" >"$d/without.txt" 2>&1
	"$HOST_TEST" --sample-lines $gpid "$d/in-file" "$gsite" >"$d/in-file.txt" 2>&1
	"$d/st" $gpid "$gsite" >"$d/static.txt" 2>&1
	kill $pid $gpid
	wait $pid $gpid 2>/dev/null
	sed 's/^/# with debug information: /' "$d/with.txt"
	want="inlined_here [inlined into outer_fn] [{$src} {$line}]"
	[ -n "$line" ] && [ "$(head -n 1 "$d/with.txt")" = "$want" ] ||
		{ echo "# want: $want"; return 1; }
	# The static function's entry has a line of its own (the function's).
	grep -q '^hidden_static \[{.*/dw-prog\.c} {[1-9][0-9]*}\]$' "$d/with.txt" || return 1
	[ "$(fline "$d/with/MULTI__cpu-clock/profile.0.0.0" "[SAMPLE] $want" | cut -d' ' -f1)" = 2 ] ||
		{ echo "# no row '[SAMPLE] $want' of 2 samples"; return 1; }
	"$TAUCHECK" "$d/with" >"$LOG" 2>&1 || { sed 's/^/# /' "$LOG"; return 1; }
	# No debug information: the names of the ELF reader, no line.
	! grep -q '\[{' "$d/without.txt" && grep -q '^dwp+0x' "$d/without.txt" &&
		fline "$d/without/MULTI__cpu-clock/profile.0.0.0" "[SAMPLE] $(head -n 1 "$d/without.txt")" |
		grep -q . || { sed 's/^/# without: /' "$d/without.txt"; return 1; }
	# Debug information in the file: a line through libdw, none without it.
	[ "$(cat "$d/in-file.txt")" = "$want" ] || { sed 's/^/# in the file: /' "$d/in-file.txt"; return 1; }
	[ "$(cat "$d/static.txt")" = "outer_fn 0 ''" ] || { sed 's/^/# static: /' "$d/static.txt"; return 1; }
	# The options (sampling itself needs a KTAU kernel, which the host has not).
	expect_rc 2 "$KTAUD" run --sample-lines -o "$d/ktaud" -- true || return 1
	grep -q -- "--sample-lines needs --sample" "$LOG" || return 1
	expect_rc 3 "$KTAUD" sample --lines -o "$d/ktaud" -- true
}

# Snapshot files of two boots: IDs of IRQs and dynamic points (and of
# anything, in general) name other routines there. export adds them up by
# name: a copy of run.ktau whose IDs are all permuted, with another boot
# id, adds exactly the same values to every routine.
c_export_other_boot() {
	"$HOST_TEST" --other-boot "$FIXTURES/run.ktau" "$W/ob.ktau" >"$LOG" 2>&1 || return 1
	"$KTAUD" export --json "$FIXTURES/run.ktau" >"$W/ob1.json" 2>"$LOG" || return 1
	"$KTAUD" export --json "$W/ob.ktau" >"$W/ob2.json" 2>"$LOG" || return 1
	"$KTAUD" export --json "$FIXTURES/run.ktau" "$W/ob.ktau" >"$W/ob12.json" 2>"$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "ob.ktau (and the files after it of that boot) was taken in another boot than .*: its routines are matched by name" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	# One note per other boot, not one per file: two more copies of that
	# boot, and the first boot's file between them.
	cp "$W/ob.ktau" "$W/ob-b.ktau" && cp "$W/ob.ktau" "$W/ob-c.ktau" || return 1
	"$KTAUD" export --json "$FIXTURES/run.ktau" "$W/ob.ktau" "$W/ob-b.ktau" "$FIXTURES/run.ktau" \
		"$W/ob-c.ktau" >"$W/ob5.json" 2>"$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(grep -c 'was taken in another boot' "$LOG")" -eq 1 ] || { sed 's/^/#   /' "$LOG"; return 1; }
	"$PYTHON" - "$W" <<'PY'
import json, sys
def byname(path):
    s = {}
    for t in json.load(open(path))["tasks"]:
        for e in t["entries"]:
            k = (t["tid"], e["name"], e["group"])
            c = s.setdefault(k, [0, 0, 0])
            c[0] += e["count"]; c[1] += e["excl_ns"]; c[2] += e["incl_ns"]
    return s
w = sys.argv[1]
a, b, ab = byname(w + "/ob1.json"), byname(w + "/ob2.json"), byname(w + "/ob12.json")
assert a == b, "the copy does not mean the same profile: %s" % sorted(set(a.items()) ^ set(b.items()))[:4]
for path, times in ((w + "/ob12.json", 2), (w + "/ob5.json", 5)):
    got = byname(path)
    want = {k: [times * x for x in v] for k, v in a.items()}
    bad = [(k, got.get(k), v) for k, v in want.items() if got.get(k) != v]
    bad += [(k, v, None) for k, v in got.items() if k not in want]
    assert not bad, "%s: %d routines wrong, e.g. %s" % (path, len(bad), bad[:3])
print("# %d routines, each twice, and five times" % len(a))
PY
}

# --json[=FILE] and --folded[=FILE]: into a file, the same bytes as on
# stdout; one on stdout and the other into a file together; both on
# stdout refused.
c_json_file_forms() {
	R=$FIXTURES/run.ktau
	"$KTAUD" export --json "$R" >"$W/j-out" 2>"$LOG" || return 1
	"$KTAUD" export --json="$W/j-file" "$R" >"$W/j-stdout" 2>"$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	cmp -s "$W/j-out" "$W/j-file" || { echo "# --json=FILE differs from --json"; return 1; }
	[ ! -s "$W/j-stdout" ] || { echo "# --json=FILE also wrote to stdout"; return 1; }
	"$KTAUD" export --folded "$R" >"$W/f-out" 2>"$LOG" || return 1
	"$KTAUD" export -j --folded="$W/f-file" "$R" >"$W/j-out2" 2>"$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	cmp -s "$W/f-out" "$W/f-file" && cmp -s "$W/j-out" "$W/j-out2" ||
		{ echo "# --json with --folded=FILE: not the same outputs"; return 1; }
	expect_rc 2 "$KTAUD" export --json --folded "$R" || return 1
	grep -q "both write to stdout" "$LOG"
}

# 'make' alone builds the libraries, ktaud and the examples, as the
# Makefile's header says (a rule put before 'all' once made it build only
# the Python module).
c_make_default() {
	"$MAKE" -n -C "$TOOLS" O="$W/mk" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	for f in ktaud ktau-merge-demo libktau.so. libktau-runtime.so.; do
		grep -q -- "-o $W/mk/$f" "$LOG" || { echo "# 'make' does not build $f"; return 1; }
	done
}

# The C example with KTAU_SELECT_FILE=$W/NAME.tau, its profile in $W/NAME.
sel_demo() {
	KTAU_SELECT_FILE="$W/$1.tau" "$DEMO" -q -o "$W/$1" -c 1000 -s 1 -S 1 -n 2 -m 2 >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
}

# KTAU_SELECT_FILE (TAU's selective instrumentation format) on the
# -finstrument-functions runtime: excluded routines are not timers and
# their callees move up to the caller; an include list times only what it
# names; names match demangled or mangled; a bad file is said on stderr
# and then every routine is timed.
c_select() {
	f="$W/sel-cxx/profile.0.0.0"
	printf '%s\n' '# the STL is noise here' BEGIN_EXCLUDE_LIST 'std::#' '__gnu_cxx::#' \
		'bool __gnu_cxx::#' '_ZNK4demo4Grid5totalEv' END_EXCLUDE_LIST >"$W/sel-cxx.tau"
	KTAU_SELECT_FILE="$W/sel-cxx.tau" "$CXX_DEMO" -o "$W/sel-cxx" -n 7 >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	! grep -q '^"\(std::\|__gnu_cxx::\|bool __gnu_cxx::\|demo::Grid::total\)' "$f" ||
		{ echo "# excluded routines timed:"; grep '^"\(std\|__gnu\|bool\|demo::Grid::total\)' "$f" |
		  head -3 | sed 's/^/#   /'; return 1; }
	# step() calls only the STL: no callee left; sum() is main's now.
	[ "$(fline "$f" "demo::Grid::step(int)" | cut -d' ' -f1-2)" = "7 0" ] ||
		{ echo "# step: $(fline "$f" "demo::Grid::step(int)")"; return 1; }
	r="main => double demo::sum<double>(std::vector<double, std::allocator<double> > const&)"
	[ "$(fline "$f" "$r" | cut -d' ' -f1-2)" = "1 0" ] || { echo "# no '$r' without callees"; return 1; }
	grep -q "<name>KTAU Select File</name><value>$W/sel-cxx.tau</value>" "$f" &&
		grep -q "<name>KTAU Excluded Routines</name><value>[1-9][0-9]*</value>" "$f" ||
		{ echo "# no select metadata in $f"; return 1; }
	# An include list: main and the *_file routines; the threads, which
	# ran none of them, write nothing.
	printf '%s\n' BEGIN_INCLUDE_LIST main '"#_file"' END_INCLUDE_LIST >"$W/sel-inc.tau"
	sel_demo sel-inc || return 1
	[ "$(ls "$W/sel-inc")" = profile.0.0.0 ] || { echo "# $(ls "$W/sel-inc" | tr '\n' ' ')"; return 1; }
	[ "$(grep -o '^"[^"]*"' "$W/sel-inc/profile.0.0.0" | LC_ALL=C sort | tr '\n' ' ')" = \
		'"main => read_file" "main => write_file" "main" "read_file" "write_file" ' ] ||
		{ grep -o '^"[^"]*"' "$W/sel-inc/profile.0.0.0" | sed 's/^/#   /'; return 1; }
	# An include list that names no routine of the program: said.
	printf '%s\n' BEGIN_INCLUDE_LIST 'int main(int, char **) C' END_INCLUDE_LIST >"$W/sel-none.tau"
	sel_demo sel-none || return 1
	grep -q "sel-none.tau: its include list names no routine" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	# A file for TAU's source instrumentor: refused, said, all timed.
	printf '%s\n' BEGIN_FILE_EXCLUDE_LIST '*.so' END_FILE_EXCLUDE_LIST >"$W/sel-bad.tau"
	sel_demo sel-bad || return 1
	grep -q "KTAU_SELECT_FILE=$W/sel-bad.tau: line 1: .*source file lists.*; timing every routine" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(fline "$W/sel-bad/profile.0.0.0" "main => compute" | cut -d' ' -f1)" = 1 ] ||
		{ echo "# compute not timed after a refused file"; return 1; }
	grep -q "<name>KTAU Select File</name><value>none</value>" "$W/sel-bad/profile.0.0.0"
}

# ktaud diff: a run against itself changes nothing; a snapshot against
# its own TAU export agrees (calls exactly, times to the files' rounding);
# two runs give the change that their JSON exports say; bad input fails.
c_diff() {
	"$KTAUD" diff "$FIXTURES/run.ktau" "$FIXTURES/run.ktau" >"$LOG" 2>&1 || return 1
	grep -q "^[1-9][0-9]* routines, 0 changed$" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" export --tau "$W/diff-tau" "$FIXTURES/run.ktau" >/dev/null 2>&1 || return 1
	"$KTAUD" diff -j"$W/diff1.json" "$W/diff-tau" "$FIXTURES/run.ktau" >"$LOG" 2>&1 || return 1
	"$KTAUD" diff -j "$FIXTURES/run.ktau" "$FIXTURES/process.ktau" >"$W/diff2.json" 2>"$LOG" ||
		return 1
	"$KTAUD" export --json "$FIXTURES/run.ktau" >"$W/diff-a.json" 2>/dev/null || return 1
	"$KTAUD" export --json "$FIXTURES/process.ktau" >"$W/diff-b.json" 2>/dev/null || return 1
	"$PYTHON" - "$W" <<'PY' || return 1
import json, sys
w = sys.argv[1]
d1 = json.load(open(w + "/diff1.json"))["routines"]
assert d1, "no routines"
for r in d1:
    assert r["calls_a"] == r["calls_b"], r
    assert abs(r["excl_us_a"] - r["excl_us_b"]) < 0.01, r
    assert abs(r["incl_us_a"] - r["incl_us_b"]) < 0.01, r
def sums(path):
    s = {}
    snap = json.load(open(path))
    tasks = [t for t in snap["tasks"] if not t["aggregate"] and not t["process"]] or \
            [t for t in snap["tasks"] if t["process"]]
    for t in tasks:
        for e in t["entries"]:
            c = s.setdefault(e["name"], [0, 0])
            c[0] += e["count"]
            c[1] += e["excl_ns"]
    return s
a, b = sums(w + "/diff-a.json"), sums(w + "/diff-b.json")
d2 = {r["name"]: r for r in json.load(open(w + "/diff2.json"))["routines"]}
assert set(d2) == set(a) | set(b), (sorted(d2), sorted(set(a) | set(b)))
for n, r in d2.items():
    assert r["calls_a"] == a.get(n, [0, 0])[0] and r["calls_b"] == b.get(n, [0, 0])[0], r
    assert abs(r["excl_us_a"] * 1e3 - a.get(n, [0, 0])[1]) < 1, r
    assert abs(r["excl_us_b"] * 1e3 - b.get(n, [0, 0])[1]) < 1, r
    assert ("in_a" in r) == (n not in a) and ("in_b" in r) == (n not in b), r
PY
	expect_rc 2 "$KTAUD" diff "$FIXTURES/run.ktau" || return 1
	expect_rc 1 "$KTAUD" diff "$FIXTURES/run.ktau" "$W/no-such-run" || return 1
	expect_rc 1 "$KTAUD" diff "$FIXTURES/run.ktau" "$FIXTURES/functions.txt" || return 1
	echo mine >"$W/diff-mine.json"
	expect_rc 1 "$KTAUD" diff -j"$W/diff-mine.json" "$FIXTURES/run.ktau" "$FIXTURES/run.ktau" ||
		return 1
	[ "$(cat "$W/diff-mine.json")" = mine ] || return 1
	expect_rc 2 "$KTAUD" diff -s bogus "$FIXTURES/run.ktau" "$FIXTURES/run.ktau"
}

# ktaud flame: folded stacks laid out to their values (widths, nesting,
# tooltips, kernel frames apart); a snapshot spans its kernel profile's
# exclusive time; the demo's callpaths make 'main' as wide as its
# inclusive time; an existing file is kept; bad input writes nothing.
c_flame() {
	printf 'main;compute 30\nmain;io;write_[k] 10\n# a comment\nmain 10\n' >"$W/f.folded"
	"$KTAUD" flame -o "$W/f.svg" --title 'a <test> & "more"' "$W/f.folded" >"$LOG" 2>&1 || return 1
	"$KTAUD" flame -o "$W/s.svg" "$FIXTURES/run.ktau" >"$LOG" 2>&1 || return 1
	"$KTAUD" export --json "$FIXTURES/run.ktau" >"$W/s.json" 2>/dev/null || return 1
	"$DEMO" -q -o "$W/flame-demo" -c 1000 -s 1 -S 1 -n 4 -m 4 >"$LOG" 2>&1 || return 1
	"$KTAUD" flame -o "$W/d.svg" "$W/flame-demo" >"$LOG" 2>&1 || return 1
	"$PYTHON" - "$W" <<'PY' || return 1
import json, re, sys
import xml.etree.ElementTree as ET
w = sys.argv[1]
NS = "{http://www.w3.org/2000/svg}"
def frames(path):
    root = ET.parse(path).getroot()
    out = []
    for g in root.iter(NS + "g"):
        t = g.find(NS + "title").text
        r = g.find(NS + "rect").attrib
        m = re.match(r"(.*) \(([0-9.e+]+) (\S+), ([0-9.]+)%\)$", t)
        out.append((m.group(1), float(m.group(2)), float(r["x"]), float(r["y"]),
                    float(r["width"]), r["fill"]))
    return root, out
root, f = frames(w + "/f.svg")
assert root.find(NS + "text").text == 'a <test> & "more"', root.find(NS + "text").text
by = {n: (v, x, y, wd, fill) for n, v, x, y, wd, fill in f}
assert sorted(by) == ["all", "compute", "io", "main", "write_[k]"], sorted(by)
assert by["all"][0] == 50 and by["main"][0] == 50 and by["compute"][0] == 30, by
assert abs(by["compute"][3] - 0.6 * by["all"][3]) < 0.05, by
assert abs(by["io"][1] - (by["compute"][1] + by["compute"][3])) < 0.05, by
assert by["write_[k]"][2] == by["io"][2] - 16 and by["io"][2] == by["main"][2] - 16, by
b = re.match(r"rgb\((\d+),(\d+),(\d+)\)", by["write_[k]"][4]).groups()
assert int(b[2]) > int(b[0]), ("kernel frames are blue", by)
_, s = frames(w + "/s.svg")
snap = json.load(open(w + "/s.json"))
tot = sum(e["excl_ns"] for t in snap["tasks"] if not t["aggregate"] for e in t["entries"])
# Titles give values to 6 significant digits.
assert s[0][0] == "all" and abs(s[0][1] - tot) <= 5e-6 * tot, (s[0], tot)
_, d = frames(w + "/d.svg")
incl = None
for line in open(w + "/flame-demo/profile.0.0.0"):
    if line.startswith('"main" '):
        incl = float(line.split()[4])
mains = [v for n, v, *_ in d if n == "main"]
assert incl and len(mains) == 1 and abs(mains[0] - incl) <= 0.001 * incl, (mains, incl)
PY
	# Its own SVG is replaced; another file is not.
	"$KTAUD" flame -o "$W/f.svg" "$W/f.folded" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	echo mine >"$W/f-mine.svg"
	expect_rc 1 "$KTAUD" flame -o "$W/f-mine.svg" "$W/f.folded" || return 1
	[ "$(cat "$W/f-mine.svg")" = mine ] || return 1
	printf 'main;compute\n' >"$W/bad.folded"
	expect_rc 1 "$KTAUD" flame -o "$W/bad.svg" "$W/bad.folded" || return 1
	[ ! -e "$W/bad.svg" ] || { echo "# bad.svg written"; return 1; }
	expect_rc 2 "$KTAUD" flame
}

# libktau's own profile without kernel data (KTAU_SHARED=0) merges too.
c_merge_user_only() {
	# main must run longer than the kernel time of run.ktau's main thread
	# (twice it, in its sleep), or that time goes under "[kernel]".
	k0=$(awk 'NR == 1 { print $3 }' "$W/run-tasks")
	KTAU_SHARED=0 "$DEMO" -q -o "$IN/demo-user" -c 1000 -s $((k0 / 500000 + 10)) -S 1 -n 4 -m 4 \
		>"$LOG" 2>&1 || return 1
	"$KTAUD" merge -p $RP0 -o "$W/merged-demo" "$IN/demo-user" "$FIXTURES/run.ktau" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "profile.0.0.2: not merged (the process has no thread left" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(fline "$W/merged-demo/profile.0.0.0" "main => getppid" | cut -d' ' -f1)" = 500 ]
}

c_bench_user_timer() {
	"$USER_BENCH" -n 20000 -r 1 >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	sed 's/^/# /' "$LOG"
	grep -q "^without page: " "$LOG"
}

# The interpreter example without KTAU sampling (this host): it runs, says
# so, and writes its interpreted calls (fib(15) makes 1973 calls).
c_interp() {
	: "${INTERP:?}"
	"$INTERP" -o "$W/interp" -f 15 -w 10 -s 1 -r 1 >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	[ -e /proc/ktau ] || grep -q "interpreted calls only" "$LOG" || return 1
	[ "$(fline "$W/interp/interp/profile.0.0.0" fib | cut -d' ' -f1)" = 1973 ] ||
		{ echo "# no fib with 1973 calls"; return 1; }
	"$INTERP" -e cpu-clock:1us >"$LOG" 2>&1
	[ $? -eq 2 ] && grep -q "at least 10 us" "$LOG"
}

# The Python package (tools/ktau/python, built by "make python" into
# $PYLIB) on this kernel (no KTAU: Python functions only): each case is a
# function of python/tests/host_tests.py.
py_case() {
	: "${PYTHON:?}" "${PYLIB:?}"
	PYTHONPATH="$PYLIB" "$PYTHON" "$TOOLS/python/tests/host_tests.py" "$1" "$W/py" >"$LOG" 2>&1
	rc=$?
	sed 's/^\([^#]\)/# \1/' "$LOG"
	[ $rc -eq 77 ] && SKIP=$(sed -n 's/^# SKIP: //p' "$LOG")
	return $rc
}
c_py_run_counts() { py_case run_counts; }
c_py_threads() { py_case threads; }
c_py_exit_status() { py_case exit_status; }
c_py_fork_exec() { py_case fork_exec; }
c_py_region_api() { py_case region_api; }
c_py_keeps_foreign() { py_case keeps_foreign; }
c_py_write_rows_fails() { py_case write_rows_fails; }
c_py_sample_refuses() { py_case sample_refuses; }
c_py_walker() { py_case walker; }
# The extension's thread-local storage is in glibc's static block
# (initial-exec, for the signal handler), loaded with dlopen(): its spare
# bytes (~1.6 KiB) are shared with every library loaded later that needs
# them too (libgomp: "cannot allocate memory in static TLS block"). Kept
# small: it was 1,624 bytes (two message buffers).
c_py_static_tls() {
	: "${PYLIB:?}"
	so=$(ls "$PYLIB"/ktau/_ktau*.so) || return 1
	tls=$(readelf -lW "$so" | awk '$1 == "TLS" { print $6 }')
	[ -z "$tls" ] || tls=$(printf '%d' "$tls")
	echo "# $(basename "$so"): TLS block ${tls:-none} bytes"
	[ -n "$tls" ] && [ "$tls" -le 256 ]
}
c_py_sample_rows() { py_case sample_rows; }
c_py_pip_install() { py_case pip_install; }

# The new sources under gcc -fanalyzer (warnings are errors).
c_analyzer() {
	cc=${CC:-gcc}
	echo 'int main(void){return 0;}' >"$IN/a.c"
	$cc -fanalyzer -c -o "$IN/a.o" "$IN/a.c" 2>/dev/null ||
		{ SKIP="$cc has no -fanalyzer"; return 77; }
	for f in lib/outdir.c lib/user.c lib/userwrite.c lib/elfsym.c lib/instrument.c ktaud/merge.c ktaud/combine.c ktaud/tauprofile.c \
		lib/callgraph.c lib/probe.c lib/drill.c ktaud/probe.c ktaud/drill.c ktaud/callgraph.c \
		ktaud/traceout.c ktaud/trace.c ktaud/common.c ktaud/run.c; do
		$cc -std=gnu11 -O1 -fanalyzer -Wall -Wextra -Werror -D_GNU_SOURCE $KHDR_INCLUDES \
			-I"$TOOLS/lib" -I"$TOOLS/ktaud" -c -o "$IN/an.o" "$TOOLS/$f" >"$LOG" 2>&1 ||
			{ echo "# $f:"; sed 's/^/#   /' "$LOG" | head -40; return 1; }
	done
}

# ---- Trace mode on synthetic raw traces (tests/host/trace-synth.c) ----
# ktaud trace --input writes every product; --check reads the OTF2 archive
# back (libotf2) and compares it with the profile the raw file holds.
c_trace_synthetic() {
	: "${TRACE_SYNTH:?}"
	"$TRACE_SYNTH" nest "$IN/nest.ktrace" || return 1
	"$KTAUD" trace --input "$IN/nest.ktrace" -o "$W/trace-nest" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "3 threads in 2 processes, 19 records" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	for f in trace.ktrace traces.otf2 traces.def traces/100.evt trace.json profile.0.0.0 \
		profile.0.0.1 profile.1.0.0; do
		[ -s "$W/trace-nest/$f" ] || { echo "# no $f: $(ls "$W/trace-nest")"; return 1; }
	done
	cmp -s "$IN/nest.ktrace" "$W/trace-nest/trace.ktrace" || { echo "# raw copy differs"; return 1; }
	# Converting the copy into its own directory would remove it first:
	# refused, the directory as it was.
	ls -la "$W/trace-nest" >"$W/nest.before"
	expect_rc 2 "$KTAUD" trace --input "$W/trace-nest/trace.ktrace" -o "$W/trace-nest/" || return 1
	grep -q "is in the output directory" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	ls -la "$W/trace-nest" | cmp -s - "$W/nest.before" &&
	cmp -s "$IN/nest.ktrace" "$W/trace-nest/trace.ktrace" || { echo "# the directory changed"; return 1; }
	"$KTAUD" trace --check "$W/trace-nest" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "3 locations, 7 regions, 36 events, 17 enter/leave pairs (0 of user routines); nesting errors 0" "$LOG" &&
	grep -q "3 threads compared (12 routines: 0 count and 0 time mismatches" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	# otf2-print (otf2-tools) reads it too: the nested interrupt and its softirq.
	if command -v otf2-print >/dev/null; then
		otf2-print "$W/trace-nest/traces.otf2" >"$W/nest.print" 2>&1 ||
			{ sed 's/^/#   /' "$W/nest.print" | head; return 1; }
		[ "$(grep -c '^ENTER' "$W/nest.print")" = 17 ] &&
		[ "$(grep -c '^LEAVE' "$W/nest.print")" = 17 ] &&
		grep -q 'ENTER  *100  *2100  Region: "softirq_TIMER"' "$W/nest.print" ||
			{ sed 's/^/#   /' "$W/nest.print"; return 1; }
	fi
	# Perfetto JSON: valid, a complete event per call, an instant per event.
	"$PYTHON" - "$W/trace-nest/trace.json" <<'PY' || return 1
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
i = [e for e in ev if e["ph"] == "i"]
assert len(x) == 17 and len(i) == 2, (len(x), len(i))
r = [e for e in x if e["name"] == "read" and e["tid"] == 100][0]
assert r["ts"] == 0.5 and r["dur"] == 4.0 and r["cat"] == "syscall", r
PY
	if command -v gnuplot >/dev/null; then
		head -c 8 "$W/trace-nest/timeline.png" | od -An -c | grep -q 'P   N   G' ||
			{ echo "# timeline.png is not a PNG"; return 1; }
	fi
}

# A thread with lost records: counted in the archive (metric and marker),
# left out of the exact comparison; the others still compared.
c_trace_lost() {
	"$TRACE_SYNTH" lost "$IN/lost.ktrace" || return 1
	"$KTAUD" trace --input "$IN/lost.ktrace" -o "$W/trace-lost" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" trace --check "$W/trace-lost" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "3 threads compared .*1 with lost records (7 lost, 7 in the raw trace)" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	command -v otf2-print >/dev/null || return 0
	otf2-marker "$W/trace-lost/traces.otf2" >"$W/lost.marker" 2>&1 &&
	grep -q "Duration 7000, Scope: LOCATION:102, Text: \"7 records lost from 2000 to 9000 ns\"" \
		"$W/lost.marker" || { sed 's/^/#   /' "$W/lost.marker"; return 1; }
}

# The user's own routines: libktau's runtime writes them when
# KTAU_TRACE_USER names a directory (ktaud trace sets it for the command);
# they become regions of paradigm user on the threads' locations, nested
# as main => run_threads => ..., left out of the comparison with the
# kernel's profile.
c_trace_user() {
	rm -rf "$IN/tu" && mkdir -p "$IN/tu"
	KTAU_TRACE_USER="$IN/tu" "$DEMO" -q -o "$IN/tu-prof" -c 1000 -s 1 -S 1 -n 2 -m 2 -f \
		>"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(ls "$IN"/tu/user.*.ktuser | wc -l)" = 2 ] || { echo "# $(ls "$IN/tu")"; return 1; }
	"$TRACE_SYNTH" user "$IN/user.ktrace" "$IN"/tu/user.*.ktuser || return 1
	"$KTAUD" trace --input "$IN/user.ktrace" -o "$W/trace-user" >"$LOG" 2>&1 &&
	"$KTAUD" trace --check "$W/trace-user" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "nesting errors 0, time going back 0, left open 0" "$LOG" &&
	grep -Eq "pairs \([1-9][0-9]* of user routines\)" "$LOG" &&
	grep -q "3 threads compared (12 routines: 0 count" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	"$PYTHON" - "$W/trace-user/trace.json" <<'PY' || return 1
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
u = [e for e in ev if e.get("cat") == "user"]
names = {e["name"] for e in u}
assert {"main", "compute", "write_file"} <= names, names
# main encloses the others of its thread.
m = [e for e in u if e["name"] == "main"]
assert len(m) == 2, m        # the process and its forked child
for e in u:
    mm = [x for x in m if x["tid"] == e["tid"]]
    if mm:
        assert mm[0]["ts"] <= e["ts"] and e["ts"] + e["dur"] <= mm[0]["ts"] + mm[0]["dur"] + 0.001, e
PY
	command -v otf2-print >/dev/null || return 0
	otf2-print -G "$W/trace-user/traces.otf2" >"$W/u.print" 2>&1 &&
	grep -q 'REGION .*Name: "main" .*Paradigm: USER' "$W/u.print" &&
	grep -q 'GROUP .*Name: "User"' "$W/u.print" ||
		{ grep -E 'REGION|GROUP' "$W/u.print" | head | sed 's/^/#   /'; return 1; }
}

# 'ktaud trace -- COMMAND' end to end on this host, with a stand-in for
# the kernel's sessions (tests/host/fake-ktau.c, LD_PRELOAD; the guest
# tests run it on the real kernel): ktaud attaches itself with INHERIT
# before the fork and detaches itself after it, leaves its own records
# out, passes the command's exit status through, and the user routines
# of libktau's runtime in the command (the demo and its forked child)
# come into the archive.
c_trace_command_fake() {
	: "${FAKE_KTAU:?}"
	[ -e /proc/ktau ] && { SKIP="this host has KTAU"; return 77; }
	rm -f "$IN/fake.log"
	FAKE_KTAU_LOG="$IN/fake.log" LD_PRELOAD="$FAKE_KTAU" "$KTAUD" trace -b 1024 -g syscall,irq \
		-o "$W/trace-cmd" -- "$DEMO" -q -o "$IN/cmd-prof" -c 1000 -s 1 -S 1 -n 2 -m 2 -f \
		>"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "4 threads in 2 processes" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	me=$(awk '/attach/ { print $1; exit }' "$IN/fake.log")
	[ "$(sed -n 1p "$IN/fake.log")" = "$me attach 0 1 1024 3" ] &&
	grep -q "^$me detach 0\$" "$IN/fake.log" &&
	grep -q "join" "$IN/fake.log" && ! grep -q "^$me join" "$IN/fake.log" ||
		{ sed 's/^/#   /' "$IN/fake.log"; return 1; }
	# ktaud's own chunk (its pid) is left out; the demo's threads are in.
	"$KTAUD" trace --check "$W/trace-cmd" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	otf2-print "$W/trace-cmd/traces.otf2" >"$W/cmd.print" 2>&1 || return 1
	! grep -q "^ENTER  *$me " "$W/cmd.print" || { echo "# ktaud's own records are in"; return 1; }
	[ "$(grep -c 'ENTER .*Region: "main"' "$W/cmd.print")" = 2 ] &&
	grep -q 'ENTER .*Region: "consume_one"' "$W/cmd.print" ||
		{ head -20 "$W/cmd.print" | sed 's/^/#   /'; return 1; }
	ls "$W/trace-cmd" | grep -q ktuser && { echo "# the runtime's files were left"; return 1; }
	# The command's exit status; a command that does not exist.
	LD_PRELOAD="$FAKE_KTAU" "$KTAUD" trace -q -o "$IN/trace-st" -- sh -c 'exit 7' >"$LOG" 2>&1
	[ $? -eq 7 ] || { echo "# exit status not passed through"; return 1; }
	expect_rc 127 env LD_PRELOAD="$FAKE_KTAU" "$KTAUD" trace -q -o "$IN/trace-nf" -- /nonexistent/cmd ||
		return 1
	# -p PID -d S: each thread of the process attached (with INHERIT).
	rm -f "$IN/fake.log"
	sleep 10 &
	sl=$!
	FAKE_KTAU_LOG="$IN/fake.log" LD_PRELOAD="$FAKE_KTAU" "$KTAUD" trace -q -p $sl -d 0.3 		-o "$IN/trace-pid" >"$LOG" 2>&1
	rc=$?
	kill $sl
	[ $rc -eq 0 ] && grep -q " attach $sl 1 65536 0\$" "$IN/fake.log" &&
	grep -q " detach $sl\$" "$IN/fake.log" || { sed 's/^/#   /' "$LOG" "$IN/fake.log"; return 1; }
	expect_rc 5 env LD_PRELOAD="$FAKE_KTAU" "$KTAUD" trace -p 999999 -d 1 -o "$IN/trace-nopid"
}

# ktaud ignores SIGXFSZ for its own writes; the command it traces gets the
# disposition ktaud was started with, default or ignored (signal 25: bit
# 24 of SigIgn in /proc/PID/status). ktaud run and sample: the guest's
# ktaud-tests, t_run_keeps_sigxfsz.
c_command_keeps_sigxfsz() {
	: "${FAKE_KTAU:?}"
	[ -e /proc/ktau ] && { SKIP="this host has KTAU"; return 77; }
	local want got sig cmd='sed -n "s/^SigIgn:[[:space:]]*//p" /proc/self/status >"$0"'
	for want in 0 1; do
		rm -f "$IN/xfsz-$want.sigign"
		sig=--default-signal=XFSZ
		[ $want = 1 ] && sig=--ignore-signal=XFSZ
		env $sig LD_PRELOAD="$FAKE_KTAU" "$KTAUD" trace -q -o "$IN/xfsz-$want" \
			-- sh -c "$cmd" "$IN/xfsz-$want.sigign" >"$LOG" 2>&1 ||
			{ sed 's/^/#   /' "$LOG"; return 1; }
		got=$(cat "$IN/xfsz-$want.sigign" 2>/dev/null)
		case $got in
		[0-9a-f]*) ;;
		*) echo "# no SigIgn from the command"; sed 's/^/#   /' "$LOG"; return 1 ;;
		esac
		[ $(( 0x$got >> 24 & 1 )) = $want ] ||
			{ echo "# ktaud started with SIGXFSZ ignored=$want: the command's SigIgn $got"; return 1; }
	done
}

# A kernel with KTAU but without trace mode (CONFIG_KTAU_TRACE=n: no
# /proc/ktau/trace): every way of tracing says so, not "no KTAU", exits 3
# and writes nothing.
c_trace_kernel_without_trace_mode() {
	: "${FAKE_KTAU:?}"
	[ -e /proc/ktau ] && { SKIP="this host has KTAU"; return 77; }
	local a
	for a in "-- true" "-p $$ -d 1" "-a -d 1"; do
		# shellcheck disable=SC2086
		expect_rc 3 env FAKE_KTAU_NOTRACE=1 LD_PRELOAD="$FAKE_KTAU" "$KTAUD" trace \
			-o "$IN/tnt" $a || return 1
		grep -q "this kernel has KTAU but no trace mode .*CONFIG_KTAU_TRACE=y" "$LOG" ||
			{ sed 's/^/#   /' "$LOG"; return 1; }
		[ ! -e "$IN/tnt" ] || { echo "# wrote $IN/tnt"; return 1; }
	done
}

# The check must fail when the trace and the profile disagree.
c_trace_check_fails() {
	for c in badcount badtime overlap; do
		"$TRACE_SYNTH" $c "$IN/$c.ktrace" || return 1
		"$KTAUD" trace -q --input "$IN/$c.ktrace" -o "$IN/trace-$c" >"$LOG" 2>&1 ||
			{ sed 's/^/#   /' "$LOG"; return 1; }
		expect_rc 1 "$KTAUD" trace --check "$IN/trace-$c" || return 1
		grep -q "FAILED" "$LOG" || return 1
	done
	grep -q "page_fault_user: inclusive 1500 ns in the trace, 1700 ns in the profile (2 calls, 0 cut)" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
}

# Corrupt raw traces: an error that says what is wrong; nothing written.
# A cut part (raw file version 2): the calls ktaud cut from a thread's
# profile with their records before the command's exec; --check allows a
# nanosecond of rounding for each. overlap's page_fault_user of thread 100
# is 200 ns off with 2 calls: 197 cut calls make it pass, 196 do not; a cut
# part out of order is refused.
add_cuts() {	# in out entries (tid:id:calls ...)
	"$PYTHON" - "$@" <<'PY'
import struct, sys
src, dst, entries = sys.argv[1], sys.argv[2], sys.argv[3:]
b = bytearray(open(src, "rb").read())
part = struct.pack("<II", len(entries), 0)
for e in entries:
    tid, fid, calls = (int(x) for x in e.split(":"))
    part += struct.pack("<iIQ", tid, fid, calls)
struct.pack_into("<I", b, 8, 2)
struct.pack_into("<I", b, 76, len(part))
open(dst, "wb").write(bytes(b) + part)
PY
}
c_trace_cut() {
	"$TRACE_SYNTH" overlap "$IN/cut.ktrace" || return 1
	[ "$(od -An -tu4 -j8 -N4 "$IN/cut.ktrace" | tr -d ' ')" = 1 ] ||
		{ echo "# a file without cuts is not version 1"; return 1; }
	for n in 197 196; do
		add_cuts "$IN/cut.ktrace" "$IN/cut$n.ktrace" 100:5:$n 101:3:1 || return 1
		"$KTAUD" trace -q --input "$IN/cut$n.ktrace" -o "$IN/trace-cut$n" >"$LOG" 2>&1 ||
			{ sed 's/^/#   /' "$LOG"; return 1; }
	done
	"$KTAUD" trace --check "$IN/trace-cut197" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q ": 198 calls cut from the profile before the command's exec" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	expect_rc 1 "$KTAUD" trace --check "$IN/trace-cut196" || return 1
	grep -q "page_fault_user: inclusive 1500 ns in the trace, 1700 ns in the profile (2 calls, 196 cut)" \
		"$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	add_cuts "$IN/cut.ktrace" "$IN/cut-order.ktrace" 101:3:1 100:5:1 || return 1
	expect_rc 1 "$KTAUD" trace --input "$IN/cut-order.ktrace" -o "$IN/trace-cut-order" || return 1
	grep -q "bad cut entry 1" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
}

c_trace_corrupt() {
	"$TRACE_SYNTH" nest "$IN/c.ktrace" || return 1
	head -c 400 "$IN/c.ktrace" >"$IN/c-trunc.ktrace"
	# chunk size, record kind, header version
	cp "$IN/c.ktrace" "$IN/c-size.ktrace"
	printf '\231' | dd of="$IN/c-size.ktrace" bs=1 seek=320 conv=notrunc 2>/dev/null
	cp "$IN/c.ktrace" "$IN/c-kind.ktrace"
	printf '\011' | dd of="$IN/c-kind.ktrace" bs=1 seek=390 conv=notrunc 2>/dev/null
	cp "$IN/c.ktrace" "$IN/c-vers.ktrace"
	printf '\003' | dd of="$IN/c-vers.ktrace" bs=1 seek=8 conv=notrunc 2>/dev/null
	printf 'not a trace' >"$IN/c-text.ktrace"
	for c in trunc size kind vers text; do
		expect_rc 1 "$KTAUD" trace --input "$IN/c-$c.ktrace" -o "$IN/c-out-$c" || return 1
		[ ! -e "$IN/c-out-$c" ] || { echo "# $c: output written"; return 1; }
	done
	grep -q "not a KTAU raw trace file" "$LOG" || return 1
	expect_rc 1 "$KTAUD" trace --input "$IN/c-kind.ktrace" -o "$IN/c-out" || return 1
	grep -q "kind 9, id 17, start 2100, end 2400" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	# An archive that is not one: an error, not a crash.
	mkdir -p "$IN/c-arch" && cp "$IN/c.ktrace" "$IN/c-arch/trace.ktrace" &&
		printf 'junk' >"$IN/c-arch/traces.otf2"
	expect_rc 1 "$KTAUD" trace --check "$IN/c-arch"
}

# The output directory: others' files refused (nothing touched), our own
# earlier output replaced.
# A file size limit met while trace --input writes its products (ktaud
# ignores SIGXFSZ): each product that did not fit is said and gone, no
# partial trace.json or picture (gnuplot does not say its write failed:
# the PNG must end with its IEND chunk), exit 1; the raw copy's error is
# the write's own, not EIO.
c_trace_file_size_limit() {
	local u
	"$TRACE_SYNTH" nest "$IN/fs.ktrace" || return 1
	[ "$(wc -c <"$IN/fs.ktrace")" -lt 2048 ] || { echo "# the synthetic trace grew"; return 1; }
	# ulimit -f counts 512-byte blocks in dash, 1024-byte ones in bash.
	rm -f "$IN/fsu"
	(ulimit -f 1 && trap '' XFSZ && exec head -c 4096 /dev/zero >"$IN/fsu") 2>/dev/null
	u=$(wc -c <"$IN/fsu")
	[ "$u" = 512 ] || [ "$u" = 1024 ] || { echo "# ulimit -f 1 let $u bytes through"; return 1; }
	rm -rf "$W/trace-fs"
	(ulimit -f $((2048 / u)) && exec "$KTAUD" trace --input "$IN/fs.ktrace" -o "$W/trace-fs") >"$LOG" 2>&1
	rc=$?
	[ $rc = 1 ] && grep -q "trace.json was not written: File too large" "$LOG" &&
	[ ! -e "$W/trace-fs/trace.json" ] && cmp -s "$IN/fs.ktrace" "$W/trace-fs/trace.ktrace" ||
		{ echo "# exit $rc"; ls -l "$W/trace-fs" | sed 's/^/#   /'; sed 's/^/#   /' "$LOG"; return 1; }
	if command -v gnuplot >/dev/null; then
		grep -q "timeline.png was not drawn: File too large" "$LOG" &&
		[ ! -e "$W/trace-fs/timeline.png" ] ||
			{ ls -l "$W/trace-fs" | sed 's/^/#   /'; sed 's/^/#   /' "$LOG"; return 1; }
	fi
	rm -rf "$W/trace-fs"
	(ulimit -f $((1024 / u)) && exec "$KTAUD" trace --input "$IN/fs.ktrace" -o "$W/trace-fs") >"$LOG" 2>&1
	rc=$?
	[ $rc = 1 ] && grep -q "copy the raw trace: File too large" "$LOG" &&
	[ ! -e "$W/trace-fs/trace.ktrace" ] ||
		{ echo "# exit $rc"; ls -l "$W/trace-fs" | sed 's/^/#   /'; sed 's/^/#   /' "$LOG"; return 1; }
	rm -rf "$W/trace-fs"
}

c_trace_outdir() {
	"$TRACE_SYNTH" nest "$IN/o.ktrace" || return 1
	mkdir -p "$IN/trace-theirs" && echo mine >"$IN/trace-theirs/notes.txt"
	expect_rc 1 "$KTAUD" trace --input "$IN/o.ktrace" -o "$IN/trace-theirs" || return 1
	[ "$(ls -A "$IN/trace-theirs")" = notes.txt ] || return 1
	"$KTAUD" trace -q --input "$IN/o.ktrace" -o "$IN/trace-ours" >"$LOG" 2>&1 &&
	"$KTAUD" trace -q --input "$IN/o.ktrace" -o "$IN/trace-ours" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" trace --check "$IN/trace-ours" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
}

# MPI: ranks' traces (each named by its rank, in one shared directory or
# apart) merge into one archive with a system tree node per rank.
# ---- trace samples: the raw file's samples part (library side) ----
# Raw trace files version 3 (lib/trace.c): a header of 328 bytes (u64
# sample_len at 320) and a samples part at the end, written by libktau's
# writer (ktau-trace-synth samples: 3 sampled threads, 101 without
# samples; kernel and user samples, named and not). The library reads
# back what it wrote, also when the event came after the file was started
# (samples-late: the chunks move to make room), and when it writes a
# loaded trace again (rewrite, as 'ktaud trace --merge' does); files
# without samples stay version 1 (no cuts) or 2.
c_trace_samples_roundtrip() {
	local f="$IN/smp.ktrace" fields
	"$TRACE_SYNTH" samples "$f" && "$TRACE_SYNTH" samples-late "$IN/smp-late.ktrace" || return 1
	fields=$(od -An -tu4 -j8 -N8 "$f" | tr -s ' ')
	[ "$fields" = " 3 328" ] || { echo "# version, header size:$fields"; return 1; }
	# sample_len: 56 + names 21 (80 padded) + 3 threads x 48 + 6 samples x 32
	[ "$(od -An -tu8 -j320 -N8 "$f" | tr -d ' ')" = 416 ] ||
		{ echo "# sample_len $(od -An -tu8 -j320 -N8 "$f")"; return 1; }
	"$PYTHON" - "$f" <<'PY' || return 1
import struct, sys
b = open(sys.argv[1], "rb").read()
chunks, funcs, cut, prof = struct.unpack_from("<QIIQ", b, 64)
user, samples = struct.unpack_from("<QQ", b, 312)
assert 328 + chunks + funcs + prof + user + cut + samples == len(b), (chunks, funcs, prof, user, cut, samples, len(b))
assert b[len(b) - samples:len(b) - samples + 18] == b"cpu-clock:1000000\0"
PY
	cmp -s "$f" "$IN/smp-late.ktrace" || { echo "# the event set late: other bytes"; return 1; }
	cmp -s "$f" "$TOOLS/fuzz/corpus/trace/samples-v3.ktrace" ||
		{ echo "# fuzz/corpus/trace/samples-v3.ktrace is not ktau-trace-synth samples' file"; return 1; }
	"$TRACE_SYNTH" dump "$f" >"$W/smp.dump" 2>&1 || { sed 's/^/#   /' "$W/smp.dump"; return 1; }
	cat >"$W/smp.want" <<'EOT'
threads 3 records 19 truncated 0 cuts 0
event 'cpu-clock:1000000' flags 0x8 threads 3 samples 6 names 2
sthread 100 pid 100 [500, 15000] taken 6 lost 1 first 0 n 4
  sample 0xffffffff81234567 at 1200 id 32 kernel ksys_read
  sample 0x401000 at 5500 id 10 user main
  sample 0x401234 at 5500 id 10 user -
  sample 0 at 8500 id 33 kernel -
sthread 101 pid 100 [1000, 9000] taken 0 lost 0 first 4 n 0
sthread 200 pid 200 [4000, 6000] taken 2 lost 0 first 4 n 2
  sample 0x400800 at 4150 id 10 user main
  sample 0xffffffff81234567 at 4300 id 33 kernel ksys_read
EOT
	diff "$W/smp.want" "$W/smp.dump" >"$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	# Written again from the loaded trace: the same samples, version 3.
	"$TRACE_SYNTH" rewrite "$f" "$IN/smp-again.ktrace" &&
	"$TRACE_SYNTH" dump "$IN/smp-again.ktrace" >"$W/smp-again.dump" 2>&1 ||
		{ sed 's/^/#   /' "$W/smp-again.dump"; return 1; }
	diff "$W/smp.want" "$W/smp-again.dump" >"$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(od -An -tu4 -j8 -N4 "$IN/smp-again.ktrace" | tr -d ' ')" = 3 ] || return 1
	# What the reader would refuse, the writer does not write.
	expect_rc 1 "$TRACE_SYNTH" samples-bad "$IN/smp-bad.ktrace" &&
	grep -q "the samples cannot be written: sample 1 of thread 100: at 1100 ns, before" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	# ktaud reads it (a copy of the raw file, the products, the check).
	"$KTAUD" trace --input "$f" -o "$W/trace-smp" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	cmp -s "$f" "$W/trace-smp/trace.ktrace" || { echo "# raw copy differs"; return 1; }
	"$KTAUD" trace --check "$W/trace-smp" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	# Without samples: version 1 and its 320 bytes, also written again.
	"$TRACE_SYNTH" nest "$IN/nosmp.ktrace" &&
	"$TRACE_SYNTH" rewrite "$IN/nosmp.ktrace" "$IN/nosmp-again.ktrace" || return 1
	for g in nosmp nosmp-again; do
		fields=$(od -An -tu4 -j8 -N8 "$IN/$g.ktrace" | tr -s ' ')
		[ "$fields" = " 1 320" ] || { echo "# $g: version, header size:$fields"; return 1; }
	done
	"$TRACE_SYNTH" dump "$IN/nosmp.ktrace" | grep -q "^event '' flags 0 threads 0 samples 0 names 0\$" ||
		return 1
	# Unfinished (its writer stopped before finish): version 1 with room
	# for sample_len (328 bytes, as libktau 2.2 reads a version 1 file),
	# flags and lengths 0, sample_len too; read as truncated.
	"$TRACE_SYNTH" samples-unfinished "$IN/smp-stopped.ktrace" || return 1
	fields=$(od -An -tu4 -j8 -N8 "$IN/smp-stopped.ktrace" | tr -s ' ')
	[ "$fields" = " 1 328" ] || { echo "# unfinished: version, header size:$fields"; return 1; }
	[ "$(od -An -tu8 -j320 -N8 "$IN/smp-stopped.ktrace" | tr -d ' ')" = 0 ] || return 1
	"$TRACE_SYNTH" dump "$IN/smp-stopped.ktrace" >"$LOG" 2>&1 &&
	grep -q "^threads 3 records 19 truncated 1 cuts 0\$" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	# The same with a partial chunk at the end (made from the finished file).
	"$PYTHON" - "$f" "$IN/smp-unfinished.ktrace" <<'PY' || return 1
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
chunks = struct.unpack_from("<Q", b, 64)[0]
struct.pack_into("<I", b, 8, 1)
struct.pack_into("<I", b, 24, 0)
for off, fmt in ((64, "<Q"), (72, "<I"), (76, "<I"), (80, "<Q"), (312, "<Q"), (320, "<Q")):
    struct.pack_into(fmt, b, off, 0)
open(sys.argv[2], "wb").write(bytes(b[:328 + chunks + 20]))
PY
	"$TRACE_SYNTH" dump "$IN/smp-unfinished.ktrace" >"$LOG" 2>&1 &&
	grep -q "^threads 3 records 19 truncated 1 cuts 0\$" "$LOG" &&
	grep -q "^event '' flags 0 threads 0 samples 0" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" trace -q --input "$IN/smp-unfinished.ktrace" -o "$IN/trace-smp-unfinished" >"$LOG" 2>&1 &&
	grep -q "unfinished (its writer stopped): its 20 last bytes" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
}

# A copy of the samples file with one thing wrong (the offsets found from
# the file: the part is its last sample_len bytes).
samples_tamper() {	# in out case
	"$PYTHON" - "$@" <<'PY'
import struct, sys
src, dst, case = sys.argv[1:4]
b = bytearray(open(src, "rb").read())
slen = struct.unpack_from("<Q", b, 320)[0]
base = len(b) - slen
nthreads, nnames = struct.unpack_from("<II", b, base + 36)
off = base + 56
names = []
for i in range(nnames):
    l = struct.unpack_from("<I", b, off)[0]
    names.append(off)
    off += 4 + l
pad = off
off = base + (off - base + 7) // 8 * 8
thr = [off + 48 * i for i in range(nthreads)]
smp = off + 48 * nthreads
nsamples = (len(b) - smp) // 32
s = [smp + 32 * i for i in range(nsamples)]
def put(fmt, at, v):
    struct.pack_into(fmt, b, at, v)
def get(fmt, at):
    return struct.unpack_from(fmt, b, at)[0]
if case == "back":         # sample 1 of thread 100 before sample 0
    put("<Q", s[1] + 8, get("<Q", s[0] + 8) - 100)
elif case == "window":     # the last sample of thread 200 after its end
    put("<Q", s[5] + 8, get("<Q", thr[2] + 16) + 500)
elif case == "name":
    put("<I", s[0] + 24, nnames)
elif case == "reserved":
    put("<I", s[2] + 28, 1)
elif case == "head-reserved":
    put("<I", base + 44, 1)
elif case == "sflags":
    put("<I", s[3] + 20, 2)
elif case == "flags":
    put("<I", base + 32, 0x18)
elif case == "short":      # a sample less in the part, the header agreeing
    del b[-32:]
    put("<Q", 320, slen - 32)
elif case == "long":
    b += bytes(8)
    put("<Q", 320, slen + 8)
elif case == "nsum":       # the threads' n add up to nsamples - 1
    put("<Q", thr[2] + 40, get("<Q", thr[2] + 40) - 1)
elif case == "nover":
    put("<Q", thr[0] + 40, get("<Q", thr[0] + 40) + 3)
elif case == "winorder":   # thread 101: start after end
    put("<Q", thr[1] + 8, get("<Q", thr[1] + 16) + 1)
elif case == "event":
    b[base:base + 32] = b"x" * 32
elif case == "noevent":
    b[base:base + 32] = bytes(32)
elif case == "name-empty":
    put("<I", names[0], 0)
elif case == "name-nul":
    b[names[0] + 5] = 0
elif case == "pad":
    assert pad % 8 != base % 8
    b[pad] = 1
elif case == "trunc":      # the file cut short, the header not told
    del b[-8:]
elif case == "version4":
    put("<I", 8, 4)
elif case == "hdr320":
    put("<I", 12, 320)
else:
    sys.exit("unknown case " + case)
open(dst, "wb").write(bytes(b))
PY
}

# Each wrong file refused (exit 1, nothing written), saying why.
c_trace_samples_refused() {
	local f="$IN/smpr.ktrace" c why
	"$TRACE_SYNTH" samples "$f" || return 1
	while IFS='|' read -r c why; do
		samples_tamper "$f" "$IN/smpr-$c.ktrace" "$c" || { echo "# $c: not made"; return 1; }
		expect_rc 1 "$KTAUD" trace --input "$IN/smpr-$c.ktrace" -o "$IN/trace-smpr-$c" </dev/null ||
			{ echo "# $c: not refused"; return 1; }
		grep -q -- "$why" "$LOG" || { echo "# $c: not '$why':"; sed 's/^/#   /' "$LOG"; return 1; }
		[ ! -e "$IN/trace-smpr-$c" ] || { echo "# $c: output written"; return 1; }
	done <<'EOT'
back|sample 1 of thread 100: at 1100 ns, before the one before it (1200 ns)
window|sample 1 of thread 200: at 6500 ns, outside its window \[4000, 6000\]
name|sample 0 of thread 100: name 2 of 2
reserved|sample 2 of thread 100: flags 0x1, reserved field 0x1
head-reserved|samples part: reserved field 0x1 is not 0
sflags|sample 3 of thread 100: flags 0x2, reserved field 0
flags|samples part: unknown sampler flags 0x18
short|samples part: 6 samples of 32 bytes do not fill its last 160 bytes
long|samples part: 6 samples of 32 bytes do not fill its last 200 bytes
nsum|samples part: nsamples 6, the threads' n add up to 5
nover|sampled thread 0 (tid 100): 7 samples, but nsamples 6 leaves 6
winorder|sampled thread 1: tid 101, pid 100, window \[9001, 9000\]
event|samples part: the event is not NUL-terminated
noevent|samples part without an event has flags 0x8, 3 threads, 2 names, 6 samples
name-empty|samples part: name 0 is empty
name-nul|samples part: name 0 has a NUL inside
pad|samples part: the names' padding is not 0
trunc|+ 0 + 0 + 416 bytes) do not fill it
version4|raw trace file version 4: this libktau reads versions 1 to 3
hdr320|raw trace file version 3 with a header of 320 bytes (328 at least)
EOT
}

# ---- trace samples: ktaud trace --sample, OTF2, JSON, --check ----

# The sampler goes with a command, -p or -a (--input, --merge, --check
# refuse it); a bad spec is a usage error, with -p too; a kernel that
# cannot sample (no KTAU; fake-ktau.so's trace mode without sampling)
# fails as 'ktaud sample' does there, before anything is written.
c_trace_sample_usage() {
	local a
	"$KTAUD" trace --help | grep -q -- "--sample SPEC" || { echo "# no --sample in the help"; return 1; }
	for a in "--input $IN/x.ktrace" "--check $IN" "--merge $IN"; do
		# shellcheck disable=SC2086
		expect_rc 2 "$KTAUD" trace -o "$IN/tsu" --sample cpu-clock $a || return 1
		grep -q -- "--sample goes with a command .* or a running process (-p PID -d SECONDS)" "$LOG" ||
			{ sed 's/^/#   /' "$LOG"; return 1; }
	done
	expect_rc 2 "$KTAUD" trace -o "$IN/tsu" --sample bogus -- true || return 1
	grep -q "bad sampling event 'bogus'" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	expect_rc 2 "$KTAUD" trace -o "$IN/tsu" --sample bogus -p 1 -d 1 || return 1
	grep -q "bad sampling event 'bogus'" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	expect_rc 2 "$KTAUD" trace -o "$IN/tsu" --sample cpu-clock -p 1 || return 1
	grep -q -- "-p needs -d SECONDS" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	expect_rc 2 "$KTAUD" trace -o "$IN/tsu" --sample cpu-clock:5us -- true || return 1
	[ ! -e "$IN/tsu" ] || { echo "# a refused --sample wrote $IN/tsu"; return 1; }
	[ -e /proc/ktau ] && return 0
	expect_rc 3 "$KTAUD" trace -o "$IN/tsu" --sample cpu-clock -- true || return 1
	grep -q "no KTAU" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	expect_rc 3 env LD_PRELOAD="$FAKE_KTAU" "$KTAUD" trace -o "$IN/tsu" --sample cpu-clock -- true ||
		return 1
	cp "$LOG" "$W/tsu.log"
	expect_rc 3 env LD_PRELOAD="$FAKE_KTAU" "$KTAUD" sample -o "$IN/tsu-s" -- true || return 1
	sed 's/^ktaud sample:/ktaud trace:/' "$LOG" | cmp -s - "$W/tsu.log" ||
		{ echo "# not what ktaud sample says:"; sed 's/^/#   /' "$W/tsu.log" "$LOG"; return 1; }
	[ ! -e "$IN/tsu" ] || { echo "# a failed --sample wrote $IN/tsu"; return 1; }
}

# 'ktaud trace --sample SPEC -- COMMAND' end to end on this host, with the
# kernel's sessions and sampling faked (fake-sample.so before fake-ktau.so):
# ktaud traces the command with ptrace as 'ktaud sample' does (a sampler
# started at its exec, again at its own exec (-x), one per thread), drains
# the trace session at the sampler's ticks, and every sample the summary
# counts is in the timeline: the OTF2 archive (a location per sampled
# thread, none of which has records here), the JSON, the check.
c_trace_sample_command_fake() {
	local spin="$O/tests/ktau-test-spin" n
	: "${FAKE_SAMPLE:?}"
	[ -e /proc/ktau ] && { SKIP="this host has KTAU"; return 77; }
	rm -f "$IN/fs.log"
	FAKE_KTAU_LOG="$IN/fs.log" LD_PRELOAD="$FAKE_SAMPLE $FAKE_KTAU" "$KTAUD" trace \
		--sample cpu-clock:1ms -o "$W/trace-fs" -- "$spin" -x -u 100 -t 2 >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(grep -c ' sample start ' "$IN/fs.log")" = 4 ] || { sed 's/^/#   /' "$IN/fs.log"; return 1; }
	n=$(sed -n 's/^ktaud: samples (cpu-clock:1ms, user and kernel): \([0-9]*\) in 3 threads .*/\1/p' "$LOG")
	[ -n "$n" ] && [ "$n" -gt 100 ] || { sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(grep -c '"cat":"sample"' "$W/trace-fs/trace.json")" = "$n" ] ||
		{ echo "# $(grep -c '"cat":"sample"' "$W/trace-fs/trace.json") samples in the JSON, $n sampled"; return 1; }
	"$KTAUD" trace --check "$W/trace-fs" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "3 locations, 0 regions, $n events" "$LOG" &&
	grep -q "samples: $n in the archive, $n in the raw trace, of 3 sampled threads; 0 problems" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	"$PYTHON" - "$W/trace-fs/trace.json" <<'PY' || return 1
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
s = [e for e in ev if e.get("cat") == "sample"]
tids = {e["tid"] for e in s}
assert len(tids) == 3, tids
names = {(e["tid"], e["args"]["name"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert {t for t, _ in names} == tids, names
for t in tids:
    ts = [e["ts"] for e in s if e["tid"] == t]
    assert ts == sorted(ts), t
# Alternately user and kernel (the fake): named "[unknown]" (no mapped
# file) and by their KTAU routine (the kernel's address is hidden).
for e in s:
    a = e["args"]
    assert e["name"] == ("[unknown]" if a["user"] else "[kernel] " + a["routine"]), e
    assert (a["ip"] == "0x0") != a["user"], e
assert len({e["args"]["user"] for e in s}) == 2
PY
	command -v otf2-print >/dev/null || return 0
	otf2-print "$W/trace-fs/traces.otf2" >"$W/fs.print" 2>&1 || { head "$W/fs.print"; return 1; }
	[ "$(grep -c '^METRIC .*"ktau samples cpu-clock"' "$W/fs.print")" = "$n" ] ||
		{ head "$W/fs.print" | sed 's/^/#   /'; return 1; }
}

# ktau-test-spin -p -u 20 ARGS in the background, its "ready" line in
# FILE awaited (at most 5 s): its pid in sp.
spin_ready() {
	local f=$1 i
	shift
	"$O/tests/ktau-test-spin" -p -u 20 "$@" >"$f" &
	sp=$!
	for i in $(seq 50); do
		grep -q "^ready $sp\$" "$f" && break
		sleep 0.1
	done
}

# 'ktaud trace -p PID -d S --sample SPEC' end to end on this host (the
# kernel's sessions and sampling faked): a sampler on each thread of the
# running process, as 'ktaud sample -p' starts them (no ptrace), drained
# in the -p loop beside the trace session, stopped at the end; every
# sample in the archive, the JSON and the check. A process that exits
# before -d ends the run, its samples kept.
c_trace_sample_pid_fake() {
	local spin="$O/tests/ktau-test-spin" n sp
	: "${FAKE_SAMPLE:?}"
	[ -e /proc/ktau ] && { SKIP="this host has KTAU"; return 77; }
	rm -f "$IN/fsp.log" "$IN/fsp.ready"
	spin_ready "$IN/fsp.ready" -t 2
	FAKE_KTAU_LOG="$IN/fsp.log" LD_PRELOAD="$FAKE_SAMPLE $FAKE_KTAU" "$KTAUD" trace \
		-p $sp -d 0.4 --sample cpu-clock:1ms -o "$W/trace-fsp" >"$LOG" 2>&1
	rc=$?
	kill $sp
	wait $sp 2>/dev/null
	[ $rc -eq 0 ] || { echo "# exited $rc"; sed 's/^/#   /' "$LOG"; return 1; }
	# Three threads, each traced and sampled by ktaud itself, each stopped.
	[ "$(grep -c " sample start " "$IN/fsp.log")" = 3 ] &&
	[ "$(grep -c " sample stop " "$IN/fsp.log")" = 3 ] &&
	grep -q " sample start $sp\$" "$IN/fsp.log" && grep -q " attach $sp 1 65536 0\$" "$IN/fsp.log" &&
	[ "$(awk '{ print $1 }' "$IN/fsp.log" | sort -u | wc -l)" = 1 ] ||
		{ sed 's/^/#   /' "$IN/fsp.log"; return 1; }
	n=$(sed -n 's/^ktaud: samples (cpu-clock:1ms, user and kernel): \([0-9]*\) in 3 threads .*/\1/p' "$LOG")
	[ -n "$n" ] && [ "$n" -gt 300 ] || { sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(grep -c '"cat":"sample"' "$W/trace-fsp/trace.json")" = "$n" ] ||
		{ echo "# $(grep -c '"cat":"sample"' "$W/trace-fsp/trace.json") samples in the JSON, $n sampled"; return 1; }
	"$TRACE_SYNTH" dump "$W/trace-fsp/trace.ktrace" >"$LOG" 2>&1 &&
	grep -q "^event 'cpu-clock:1000000' flags 0 threads 3 samples $n names" "$LOG" ||
		{ sed 's/^/#   /' "$LOG" | head; return 1; }
	"$KTAUD" trace --check "$W/trace-fsp" >"$LOG" 2>&1 &&
	grep -q "samples: $n in the archive, $n in the raw trace, of 3 sampled threads; 0 problems" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	# A process that exits after 1 s of a 5 s run: the run ends, checked
	# (it was 0.3 s: on a loaded host ktaud's start took most of it, and
	# the 0.05 s traced gave no sample).
	sleep 1 &
	sp=$!
	LD_PRELOAD="$FAKE_SAMPLE $FAKE_KTAU" "$KTAUD" trace -p $sp -d 5 --sample cpu-clock:1ms \
		-o "$W/trace-fsp2" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	wait $sp
	grep -q "^ktaud trace: traced 1 threads of process $sp for [0-2]\." "$LOG" &&
	grep -q "^ktaud: samples (cpu-clock:1ms, user and kernel): [1-9][0-9]* in 1 thread " "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" trace --check "$W/trace-fsp2" >"$LOG" 2>&1 &&
	grep -q "of 1 sampled threads; 0 problems" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	# A process the target starts while it is traced (a shell that starts
	# a 2 s sleep after 0.3 s; the fake samples by wall time) is sampled
	# too, from the scan after its start, and stopped at the end.
	rm -f "$IN/fsc.log" "$IN/fsc.pid"
	sh -c "sleep 0.3; sleep 2 & echo \$! >\"$IN/fsc.pid\"; wait" &
	sp=$!
	FAKE_KTAU_LOG="$IN/fsc.log" LD_PRELOAD="$FAKE_SAMPLE $FAKE_KTAU" "$KTAUD" trace \
		-p $sp -d 1.2 --sample cpu-clock:1ms -o "$W/trace-fsc" >"$LOG" 2>&1
	rc=$?
	wait $sp 2>/dev/null
	child=$(cat "$IN/fsc.pid" 2>/dev/null)
	[ $rc -eq 0 ] && [ -n "$child" ] || { echo "# exited $rc, child '$child'"; sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(grep -c " sample start " "$IN/fsc.log")" = "$(grep -c " sample \(stop\|gone\) " "$IN/fsc.log")" ] &&
	grep -q " sample start $child\$" "$IN/fsc.log" ||
		{ echo "# child $child"; sed 's/^/#   /' "$IN/fsc.log"; return 1; }
	n=$(sed -n 's/^ktaud: samples (cpu-clock:1ms, user and kernel): \([0-9]*\) in [0-9]* threads .*/\1/p' "$LOG")
	[ -n "$n" ] && [ "$(grep -c "\"pid\":$child,.*\"cat\":\"sample\"\|\"cat\":\"sample\".*\"pid\":$child," \
		"$W/trace-fsc/trace.json")" -gt 100 ] || { echo "# no samples of child $child"; sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" trace --check "$W/trace-fsc" >"$LOG" 2>&1 &&
	grep -q "samples: $n in the archive, $n in the raw trace, of [0-9]* sampled threads; 0 problems" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
}

# 'ktaud trace -a -d S --sample SPEC' (the kernel's sessions and sampling
# faked): a sampler on every user thread of the host (/proc, at the start
# and every 0.2 s), not on kernel threads, not on ktaud itself; each
# stopped at the end, every sample in the archive and the check.
c_trace_sample_all_fake() {
	local n sp self k st
	: "${FAKE_SAMPLE:?}"
	[ -e /proc/ktau ] && { SKIP="this host has KTAU"; return 77; }
	rm -f "$IN/fsa.log" "$IN/fsa.ready"
	spin_ready "$IN/fsa.ready" -t 1
	FAKE_KTAU_LOG="$IN/fsa.log" LD_PRELOAD="$FAKE_SAMPLE $FAKE_KTAU" "$KTAUD" trace \
		-a -d 0.5 --sample cpu-clock:1ms -o "$W/trace-fsa" >"$LOG" 2>&1
	rc=$?
	kill $sp
	wait $sp 2>/dev/null
	[ $rc -eq 0 ] || { echo "# exited $rc"; sed 's/^/#   /' "$LOG"; return 1; }
	self=$(awk '{ print $1; exit }' "$IN/fsa.log")
	[ "$(grep -c " sample start " "$IN/fsa.log")" = "$(grep -c " sample \(stop\|gone\) " "$IN/fsa.log")" ] &&
	grep -q " sample start $sp\$" "$IN/fsa.log" && ! grep -q " sample start $self\$" "$IN/fsa.log" ||
		{ echo "# spinner $sp, ktaud $self"; sed 's/^/#   /' "$IN/fsa.log" | head -40; return 1; }
	# Kernel threads (PF_KTHREAD in /proc/PID/stat) are left alone.
	# A thread that exited meanwhile (the host's own come and go) is passed.
	for k in $(awk '/ sample start / { print $4 }' "$IN/fsa.log"); do
		st=$(cat "/proc/$k/stat" 2>/dev/null) || continue
		st=$(printf '%s\n' "$st" | sed 's/.*) //' | cut -d' ' -f7)
		case $st in
		[0-9]*) ;;
		*) continue ;;
		esac
		[ $(( st & 0x200000 )) = 0 ] || { echo "# kernel thread $k sampled"; return 1; }
	done
	n=$(sed -n 's/^ktaud: samples (cpu-clock:1ms, user and kernel): \([0-9]*\) in [0-9]* threads .*/\1/p' "$LOG")
	[ -n "$n" ] && [ "$n" -gt 100 ] || { sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" trace --check "$W/trace-fsa" >"$LOG" 2>&1 &&
	grep -q "samples: $n in the archive, $n in the raw trace, of [0-9]* sampled threads; 0 problems" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
}

# Samples a little outside their thread's window (the kernel stamps them
# with ktime_get_mono_fast_ns, the window is ktaud's CLOCK_MONOTONIC; the
# fake sampler's FAKE_SAMPLE_SKEW_NS): the window grows to hold them, and
# the raw file is finished (version 3), its samples all there.
c_trace_sample_clock_skew() {
	local spin="$O/tests/ktau-test-spin" n
	[ -e /proc/ktau ] && { SKIP="this host has KTAU"; return 77; }
	FAKE_SAMPLE_SKEW_NS=3000000 LD_PRELOAD="$FAKE_SAMPLE $FAKE_KTAU" "$KTAUD" trace \
		--sample cpu-clock:1ms -o "$W/trace-skew" -- "$spin" -u 50 -t 1 >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	n=$(sed -n 's/^ktaud: samples (cpu-clock:1ms, user and kernel): \([0-9]*\) in 2 threads .*/\1/p' "$LOG")
	[ -n "$n" ] && [ "$n" -gt 50 ] || { sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(od -An -tu4 -j8 -N8 "$W/trace-skew/trace.ktrace" | tr -s ' ')" = " 3 328" ] || return 1
	"$TRACE_SYNTH" dump "$W/trace-skew/trace.ktrace" >"$LOG" 2>&1 &&
	grep -q "^event 'cpu-clock:1000000' flags 0 threads 2 samples $n names" "$LOG" ||
		{ sed 's/^/#   /' "$LOG" | head; return 1; }
	"$KTAUD" trace --check "$W/trace-skew" >"$LOG" 2>&1 &&
	grep -q "samples: $n in the archive, $n in the raw trace, of 2 sampled threads; 0 problems" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
}

# -a --sample's bound is of threads sampled at once (1024), not of
# threads ever seen: 1300 short-lived processes (13 batches of 100
# sleeps of 0.3 s) come and go during the run, then a spinner starts; it
# is sampled, and the summary reports no bound reached. (Skipped on a
# host with more than 500 threads: the bound could be reached for real.)
c_trace_sample_all_bound() {
	local n sp tp b
	[ -e /proc/ktau ] && { SKIP="this host has KTAU"; return 77; }
	n=$(ls -d /proc/[0-9]*/task/[0-9]* 2>/dev/null | wc -l)
	[ "$n" -le 500 ] || { SKIP="$n threads on this host"; return 77; }
	rm -f "$IN/fsb.log" "$IN/fsb.ready"
	FAKE_KTAU_LOG="$IN/fsb.log" LD_PRELOAD="$FAKE_SAMPLE $FAKE_KTAU" "$KTAUD" trace \
		-a -d 30 -i 0.1 --sample cpu-clock:1ms -o "$W/trace-fsb" >"$LOG" 2>&1 &
	tp=$!
	sleep 0.5
	for b in $(seq 13); do
		for n in $(seq 100); do sleep 0.3 & done
		sleep 0.35
	done
	sleep 0.4
	spin_ready "$IN/fsb.ready" -t 0
	sleep 0.6
	kill $sp
	wait $sp 2>/dev/null
	kill -INT $tp
	wait $tp || { echo "# ktaud trace -a exited $?"; sed 's/^/#   /' "$LOG" | tail; return 1; }
	[ "$(grep -c " sample start " "$IN/fsb.log")" -gt 1024 ] ||
		{ echo "# only $(grep -c " sample start " "$IN/fsb.log") threads sampled"; return 1; }
	grep -q " sample start $sp\$" "$IN/fsb.log" && ! grep -q "the bound:" "$LOG" ||
		{ echo "# spinner $sp"; grep "bound\|samples (" "$LOG" | sed 's/^/#   /'; return 1; }
}

# Wait (at most 20 s) until FILE has N lines matching RE.
wait_lines() {
	local i
	for i in $(seq 200); do
		[ "$(grep -c "$1" "$2" 2>/dev/null)" -ge "$3" ] && return 0
		sleep 0.1
	done
	return 1
}

# A sampler ends only with its thread: SIGHUP (as SIGINT and SIGTERM)
# ends 'ktaud trace -p --sample' early with the sampler stopped and the
# products written; under nohup (SIGHUP ignored) a hangup does not stop
# it, SIGTERM then does.
c_trace_sample_signals_fake() {
	local sp tp rc
	[ -e /proc/ktau ] && { SKIP="this host has KTAU"; return 77; }
	rm -f "$IN/fsh.log"
	sleep 30 &
	sp=$!
	FAKE_KTAU_LOG="$IN/fsh.log" LD_PRELOAD="$FAKE_SAMPLE $FAKE_KTAU" "$KTAUD" trace -p $sp \
		-d 30 --sample cpu-clock:1ms -o "$W/trace-fsh" >"$LOG" 2>&1 &
	tp=$!
	# Once it samples (a fixed 0.7 s was not always enough on a loaded
	# host: SIGHUP came before its handler, exit 129).
	wait_lines " sample start $sp\$" "$IN/fsh.log" 1 ||
		{ echo "# no sampling after 20 s"; kill $tp $sp; return 1; }
	kill -HUP $tp
	wait $tp
	rc=$?
	[ $rc -eq 0 ] && grep -q " sample stop $sp " "$IN/fsh.log" && [ -s "$W/trace-fsh/trace.json" ] ||
		{ echo "# SIGHUP: exit $rc"; sed 's/^/#   /' "$IN/fsh.log" "$LOG" | tail; kill $sp; return 1; }
	sh -c 'trap "" HUP; exec "$@"' sh env FAKE_KTAU_LOG="$IN/fsh.log" \
		LD_PRELOAD="$FAKE_SAMPLE $FAKE_KTAU" "$KTAUD" trace -p $sp -d 30 --sample cpu-clock:1ms \
		-o "$W/trace-fsh2" >"$LOG" 2>&1 &
	tp=$!
	wait_lines " sample start $sp\$" "$IN/fsh.log" 2 ||
		{ echo "# no sampling after 20 s"; kill $tp $sp; return 1; }
	kill -HUP $tp
	sleep 0.5
	kill -0 $tp 2>/dev/null || { echo "# a hangup under nohup stopped it"; kill $sp; return 1; }
	kill -TERM $tp
	wait $tp
	rc=$?
	kill $sp
	wait $sp 2>/dev/null
	[ $rc -eq 0 ] && [ "$(grep -c " sample stop $sp " "$IN/fsh.log")" = 2 ] ||
		{ echo "# SIGTERM under nohup: exit $rc"; sed 's/^/#   /' "$IN/fsh.log" | tail; return 1; }
}

# The samples in the products of a raw trace with samples (ktau-trace-synth
# samples: threads 100, 101, 200 of the nest trace sampled): each an OTF2
# Metric event of class 1 ("ktau samples cpu-clock", its running count,
# and "ktau sample ip") with the attributes "sampled function" and "ktau
# routine", in time order among the Enter/Leave of its thread; the event
# metrics move to class 2 (the archive of a trace without samples keeps
# them at 1, and has no sample class). A JSON instant of category sample
# each; the TAU profile's second metric is the event's, with rows
# "[SAMPLE] function".
# The timeline PNG marks the samples: a data block $samples of a dot
# above its thread's row at its time (trace-synth's 6, on the rows of
# main 100 and child 200), plotted as
# "samples"; a trace without samples has neither. gnuplot is a stand-in
# here that keeps the script it is given and writes the smallest file
# ktaud takes for a whole PNG (its signature and an IEND chunk).
c_trace_sample_timeline() {
	mkdir -p "$W/gpfake"
	cat >"$W/gpfake/gnuplot" <<EOF2
#!/bin/sh
cat >"$W/gpfake/script.\$\$"
printf '\211PNG\r\n\032\n\000\000\000\000IEND\256B\`\202'
EOF2
	chmod +x "$W/gpfake/gnuplot"
	rm -f "$W"/gpfake/script.*
	"$TRACE_SYNTH" samples "$IN/tst.ktrace" || return 1
	PATH="$W/gpfake:$PATH" "$KTAUD" trace --input "$IN/tst.ktrace" -o "$W/trace-tst" \
		>"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	gp=$(ls "$W"/gpfake/script.* 2>/dev/null)
	[ -n "$gp" ] && [ "$(echo "$gp" | wc -l)" = 1 ] || { echo "# gnuplot not run once"; return 1; }
	n=$(awk '/^\$samples << EOD$/ { s = 1; next } s && /^EOD$/ { s = 0 } s { n++ }
		END { print n + 0 }' "$gp")
	[ "$n" = 6 ] || { echo "# $n dots in \$samples, not 6"; sed 's/^/#   /' "$gp"; return 1; }
	grep -q '^plot .*\$samples using 1:2 with points .*title "samples"$' "$gp" ||
		{ echo "# the samples are not plotted"; return 1; }
	# Every dot above a row that exists, within the run.
	awk '/^\$samples << EOD$/ { s = 1; next } s && /^EOD$/ { s = 0 }
		s && !($1 >= 0 && $1 < 0.014 && ($2 == 0.42 || $2 == 2.42)) { bad = 1 }
		END { exit bad }' "$gp" || { echo "# a dot outside the rows or the run"; return 1; }
	rm -f "$W"/gpfake/script.*
	"$TRACE_SYNTH" nest "$IN/tsn.ktrace" || return 1
	PATH="$W/gpfake:$PATH" "$KTAUD" trace --input "$IN/tsn.ktrace" -o "$W/trace-tsn" \
		>"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	gp=$(ls "$W"/gpfake/script.* 2>/dev/null)
	[ -n "$gp" ] || { echo "# gnuplot not run for the trace without samples"; return 1; }
	! grep -q 'samples' "$gp" || { echo "# samples in a timeline without samples"; return 1; }
}

c_trace_sample_products() {
	"$TRACE_SYNTH" samples "$IN/tsp.ktrace" || return 1
	"$KTAUD" trace --input "$IN/tsp.ktrace" -o "$W/trace-tsp" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "traces.otf2 (OTF2, 42 events" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	"$KTAUD" trace --check "$W/trace-tsp" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "samples: 6 in the archive, 6 in the raw trace, of 3 sampled threads; 0 problems" "$LOG" &&
	grep -q "3 threads compared (12 routines: 0 count and 0 time mismatches" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	fline "$W/trace-tsp/MULTI__cpu-clock/profile.0.0.0" "[SAMPLE] main" | grep -q "^1 0 1 1$" &&
	fline "$W/trace-tsp/MULTI__cpu-clock/profile.0.0.0" "[SAMPLE] [k] ksys_read" | grep -q "^1 0 1 1$" ||
		{ echo "# no [SAMPLE] rows: $(ls "$W/trace-tsp")"; return 1; }
	"$PYTHON" - "$W/trace-tsp/trace.json" <<'PY' || return 1
import json, sys
d = json.load(open(sys.argv[1]))
t0 = d["otherData"]["t0_ns"]
s = [e for e in d["traceEvents"] if e.get("cat") == "sample"]
got = sorted((e["tid"], round(e["ts"] * 1000) + t0, e["name"], e["args"]["ip"], e["args"]["routine"],
              e["args"]["user"], e["ph"], e["s"]) for e in s)
want = sorted([(100, 1200, "ksys_read", "0xffffffff81234567", "read", 0),
               (100, 5500, "main", "0x401000", "user_mode", 1),
               (100, 5500, "[unknown]", "0x401234", "user_mode", 1),
               (100, 8500, "[kernel] write", "0x0", "write", 0),
               (200, 4150, "main", "0x400800", "user_mode", 1),
               (200, 4300, "ksys_read", "0xffffffff81234567", "write", 0)])
assert [g[:6] for g in got] == want, got
assert all(g[6:] == ("i", "t") for g in got), got
PY
	command -v otf2-print >/dev/null || return 0
	otf2-print "$W/trace-tsp/traces.otf2" >"$W/tsp.print" 2>&1 &&
	otf2-print -G "$W/trace-tsp/traces.otf2" >"$W/tsp.defs" 2>&1 ||
		{ sed 's/^/#   /' "$W/tsp.print" | head; return 1; }
	grep -qi warn "$W/tsp.print" "$W/tsp.defs" && { grep -i warn "$W/tsp.print" "$W/tsp.defs"; return 1; }
	# On the traced threads' locations (each has records): every location
	# with samples has Enter events too, and there are no others.
	awk '$1 == "ENTER" { e[$2] = 1 } $1 == "METRIC" && /ktau samples/ { m[$2] = 1 }
	     END { for (l in m) if (!(l in e)) { print "# samples on location " l ", which has no Enter"; bad = 1 }
		   exit bad }' "$W/tsp.print" || return 1
	[ "$(awk '$1 == "METRIC" && /ktau samples/ { print $2 }' "$W/tsp.print" | sort -u | tr '\n' ' ')" = "100 200 " ] ||
		{ echo "# samples on locations $(awk '$1 == "METRIC" && /ktau samples/ { print $2 }' "$W/tsp.print" | sort -u | tr '\n' ' ')"; return 1; }
	[ "$(grep -c '^METRIC .*Metric: 1, 2 Values: ("ktau samples cpu-clock" <1>; UINT64; [1-4]), ("ktau sample ip" <2>; UINT64; [0-9]*)$' "$W/tsp.print")" = 6 ] &&
	[ "$(grep -c 'ADDITIONAL ATTRIBUTES: ("sampled function" <0>; STRING; "[^"]*" <[0-9]*>), ("ktau routine" <1>; STRING; "[^"]*" <[0-9]*>)$' "$W/tsp.print")" = 6 ] &&
	grep -q 'METRIC  *100  *8500  Metric: 1, 2 Values: ("ktau samples cpu-clock" <1>; UINT64; 4), ("ktau sample ip" <2>; UINT64; 0)$' "$W/tsp.print" &&
	grep -q '"sampled function" <0>; STRING; "\[kernel\] write"' "$W/tsp.print" &&
	grep -q 'METRIC  *101  *2600  Metric: 2, 1 Value: ("ktau event my_event"' "$W/tsp.print" ||
		{ grep METRIC -A1 "$W/tsp.print" | sed 's/^/#   /'; return 1; }
	# Location 100 in time order: read entered at 1000, its sample at
	# 1200, the interrupt at 2000.
	awk '$2 == 100 { print $1, $3 }' "$W/tsp.print" | head -3 | tr '\n' ' ' |
		grep -q "^ENTER 1000 METRIC 1200 ENTER 2000 $" ||
		{ awk '$2 == 100' "$W/tsp.print" | head -5 | sed 's/^/#   /'; return 1; }
	grep -q 'METRIC_CLASS  *1  Occurrence: ASYNCHRONOUS, Kind: ABSTRACT, 2 Members: "ktau samples cpu-clock" <1>, "ktau sample ip" <2>' "$W/tsp.defs" &&
	grep -q 'METRIC_MEMBER  *2  Name: "ktau sample ip" .*Mode: ABSOLUTE_POINT.*Unit: "address"' "$W/tsp.defs" &&
	grep -q 'METRIC_MEMBER  *1  Name: "ktau samples cpu-clock" .*Mode: ACCUMULATED_START.*Unit: "samples"' "$W/tsp.defs" &&
	grep -q 'ATTRIBUTE  *0  Name: "sampled function"' "$W/tsp.defs" ||
		{ grep -E 'METRIC|ATTRIBUTE' "$W/tsp.defs" | sed 's/^/#   /'; return 1; }
	# Without samples: no sample class, the event metric at 1.
	"$TRACE_SYNTH" nest "$IN/tsp-nest.ktrace" &&
	"$KTAUD" trace -q --input "$IN/tsp-nest.ktrace" -o "$IN/trace-tsp-nest" >"$LOG" 2>&1 || return 1
	otf2-print "$IN/trace-tsp-nest/traces.otf2" >"$W/tspn.print" 2>&1 &&
	otf2-print -G "$IN/trace-tsp-nest/traces.otf2" >>"$W/tspn.print" 2>&1 || return 1
	grep -q 'METRIC  *101  *2600  Metric: 1, 1 Value: ("ktau event my_event"' "$W/tspn.print" &&
	! grep -qE 'ktau sample|ATTRIBUTE' "$W/tspn.print" || { grep -E 'METRIC|ATTR' "$W/tspn.print" | sed 's/^/#   /'; return 1; }
}

# A copy of ktau-trace-synth's samples file with fields of its samples
# part changed, each still valid for the library (sample_set IN OUT
# thread|sample INDEX FIELD VALUE ...): the check must find what the
# archive (written from the original) and the raw file disagree on.
sample_set() {
	"$PYTHON" - "$@" <<'PY'
import struct, sys
src, dst, edits = sys.argv[1], sys.argv[2], sys.argv[3:]
b = bytearray(open(src, "rb").read())
slen = struct.unpack_from("<Q", b, 320)[0]
base = len(b) - slen
nthreads, nnames = struct.unpack_from("<II", b, base + 36)
off = base + 56
for i in range(nnames):
    off += 4 + struct.unpack_from("<I", b, off)[0]
off = base + (off - base + 7) // 8 * 8
fields = {"thread": (off, 48, {"tid": ("<i", 0), "pid": ("<i", 4), "start": ("<Q", 8),
                                "end": ("<Q", 16), "taken": ("<Q", 24), "lost": ("<Q", 32),
                                "n": ("<Q", 40)}),
          "sample": (off + 48 * nthreads, 32, {"ip": ("<Q", 0), "time": ("<Q", 8),
                                                "name": ("<I", 24)})}
while edits:
    kind, i, f, v = edits[:4]
    edits = edits[4:]
    start, size, fs = fields[kind]
    fmt, at = fs[f]
    struct.pack_into(fmt, b, start + size * int(i) + at, int(v))
open(dst, "wb").write(bytes(b))
PY
}

# Sampled threads without records get locations of their own, in the
# group of their process (named as its traced threads) or in a group of
# their own: the samples file with thread 101 (no samples) as 102 of
# process 100, and 200 (2 samples) as 300 of a process 300 without
# records.
c_trace_sample_own_locations() {
	"$TRACE_SYNTH" samples "$IN/tso-in.ktrace" &&
	sample_set "$IN/tso-in.ktrace" "$IN/tso.ktrace" thread 1 tid 102 thread 2 tid 300 thread 2 pid 300 ||
		return 1
	"$KTAUD" trace --input "$IN/tso.ktrace" -o "$W/trace-tso" >"$LOG" 2>&1 &&
	"$KTAUD" trace --check "$W/trace-tso" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "5 locations, 7 regions, 42 events" "$LOG" &&
	grep -q "samples: 6 in the archive, 6 in the raw trace, of 3 sampled threads; 0 problems" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	"$PYTHON" - "$W/trace-tso/trace.json" <<'PY' || return 1
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
m = {(e["name"], e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M"}
assert m[("thread_name", 100, 102)] == "main", m
assert m[("thread_name", 300, 300)] == "sampled", m
assert m[("process_name", 300, 300)] == "pid 300", m
assert not [k for k in m if k[0] == "process_name" and k[1] == 100 and k[2] != 100], m
s = sorted((e["tid"], e["name"]) for e in ev if e.get("cat") == "sample" and e["pid"] == 300)
assert s == [(300, "ksys_read"), (300, "main")], s
PY
	command -v otf2-print >/dev/null || return 0
	otf2-print "$W/trace-tso/traces.otf2" >"$W/tso.print" 2>&1 &&
	otf2-print -G "$W/trace-tso/traces.otf2" >>"$W/tso.print" 2>&1 || return 1
	grep -q 'LOCATION  *102  Name: "main (tid 102)" <[0-9]*>, Type: CPU_THREAD, # Events: 0, Group: "main (pid 100)"' "$W/tso.print" &&
	grep -q 'LOCATION  *300  Name: "sampled (tid 300)" <[0-9]*>, Type: CPU_THREAD, # Events: 2, Group: "pid 300"' "$W/tso.print" &&
	grep -q 'LOCATION_GROUP .*Name: "pid 300"' "$W/tso.print" &&
	[ "$(grep -c '^METRIC  *300 .*"ktau samples cpu-clock"' "$W/tso.print")" = 2 ] ||
		{ grep -E 'LOCATION|^METRIC' "$W/tso.print" | sed 's/^/#   /'; return 1; }
}

# A tid used again (ktau-trace-synth samples-reuse: tid 200 of pid 200
# exited at 6000 ns, and came back at 16000 ns, a thread of its own): each
# sampled thread's samples go on the location of the thread of its tid and
# pid whose records its window overlaps best, the second's on the second
# (reuse 1: location 1 << 32 | 200); --check maps them the same way and
# finds samples on a thread's location after it exited (its tid in use
# again: the second's samples on the first, from a sampler's window over
# both). Samples at the time of an Enter go before it, but for those taken
# in the routine it enters, after it, as their "ktau routine" says.
c_trace_sample_reuse() {
	"$TRACE_SYNTH" samples-reuse "$IN/tsr.ktrace" || return 1
	"$KTAUD" trace --input "$IN/tsr.ktrace" -o "$W/trace-tsr" >"$LOG" 2>&1 &&
	"$KTAUD" trace --check "$W/trace-tsr" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "4 locations, 7 regions, 48 events" "$LOG" &&
	grep -q "samples: 8 in the archive, 8 in the raw trace, of 3 sampled threads; 0 problems" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	# The second sampler's window over both threads of tid 200 (more of
	# the first's): its samples go on the first's location, after its exit.
	sample_set "$IN/tsr.ktrace" "$IN/tsr-wide.ktrace" thread 2 start 3000 thread 2 end 17600 &&
	"$KTAUD" trace -q --input "$IN/tsr-wide.ktrace" -o "$IN/trace-tsr-wide" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	expect_rc 1 "$KTAUD" trace --check "$IN/trace-tsr-wide" || return 1
	grep -q "location 200: a sample at 17500 ns, after its thread exited (tid 200 was in use again from 16000 ns)" "$LOG" ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	command -v otf2-print >/dev/null || return 0
	otf2-print "$W/trace-tsr/traces.otf2" >"$W/tsr.print" 2>&1 || { head "$W/tsr.print"; return 1; }
	awk '$1 == "METRIC" && /ktau samples/ { print $2, $3 }' "$W/tsr.print" | sort -n | tr '\n' ' ' >"$W/tsr.got"
	[ "$(cat "$W/tsr.got")" = "100 1000 100 1000 100 8000 100 8000 200 4150 200 5500 4294967496 16000 4294967496 17500 " ] ||
		{ echo "# samples (location time): $(cat "$W/tsr.got")"; return 1; }
	# Location 100: user mode, read's Enter, the sample in read; the same
	# at 8000 with write. The second tid 200: its fault's Enter first.
	awk '$2 == 100 && ($3 == 1000 || $3 == 8000) { print $1, $3 }' "$W/tsr.print" | tr '\n' ' ' |
		grep -q "^METRIC 1000 ENTER 1000 METRIC 1000 METRIC 8000 ENTER 8000 METRIC 8000 $" ||
		{ awk '$2 == 100' "$W/tsr.print" | head -4 | sed 's/^/#   /'; return 1; }
	awk '$2 == 4294967496 { print $1, $3 }' "$W/tsr.print" | head -2 | tr '\n' ' ' |
		grep -q "^ENTER 16000 METRIC 16000 $" || { awk '$2 == 4294967496' "$W/tsr.print" | sed 's/^/#   /'; return 1; }
	grep -A1 '^METRIC  *100  *1000 ' "$W/tsr.print" | grep '"sampled function"' | sed 's/.*"sampled function" <0>; STRING; "\([^"]*\)".*/\1/' |
		tr '\n' '|' | grep -q '^main|\[kernel\] read|$' || { grep -A1 '^METRIC  *100 ' "$W/tsr.print" | sed 's/^/#   /'; return 1; }
}

# The check of the samples: against the raw file beside the archive, it
# fails when a location has more or fewer samples than its threads, a
# sample lies outside its thread's window, a thread's counters cannot
# hold its samples (also when n + lost would wrap around), a sampled
# thread has no location, a sample's time, address or function is not the
# raw trace's; the raw file itself as it was passes.
c_trace_sample_check_fails() {
	local d="$W/trace-tsf" c
	"$TRACE_SYNTH" samples "$IN/tsf.ktrace" || return 1
	"$KTAUD" trace -q --input "$IN/tsf.ktrace" -o "$d" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	"$TRACE_SYNTH" nest "$IN/tsf-none.ktrace" || return 1
	# thread 200: [4000, 6000], samples at 4150 and 4300; thread 100: n 4,
	# 6 taken, 1 lost; thread 101: [1000, 9000], none.
	sample_set "$IN/tsf.ktrace" "$IN/tsf-window.ktrace" thread 2 start 4200 sample 4 time 4250 &&
	sample_set "$IN/tsf.ktrace" "$IN/tsf-taken.ktrace" thread 0 taken 4 &&
	sample_set "$IN/tsf.ktrace" "$IN/tsf-moved.ktrace" thread 0 n 3 thread 1 n 1 &&
	sample_set "$IN/tsf.ktrace" "$IN/tsf-noloc.ktrace" thread 2 tid 300 thread 2 pid 300 &&
	sample_set "$IN/tsf.ktrace" "$IN/tsf-wrap.ktrace" thread 0 lost 18446744073709551614 &&
	sample_set "$IN/tsf.ktrace" "$IN/tsf-time.ktrace" sample 4 time 4160 &&
	sample_set "$IN/tsf.ktrace" "$IN/tsf-ip.ktrace" sample 0 ip 4096 &&
	sample_set "$IN/tsf.ktrace" "$IN/tsf-function.ktrace" sample 0 name 1 || return 1
	while IFS='|' read -r c why; do
		cp "$IN/tsf-$c.ktrace" "$d/trace.ktrace" || return 1
		expect_rc 1 "$KTAUD" trace --check "$d" || { echo "# $c: the check passed"; return 1; }
		grep -q "FAILED" "$LOG" && grep -q -- "$why" "$LOG" || { echo "# $c: not '$why'"; sed 's/^/#   /' "$LOG"; return 1; }
	done <<'EOT'
none|location 100: 4 samples in the archive, 0 in the raw trace
window|location 200: a sample at 4150 ns, outside its sampler's window
taken|sampled thread 100: 4 samples and 1 lost, but 4 taken
moved|location 101: 0 samples in the archive, 1 in the raw trace
noloc|sampled thread 300: no location 300 in the archive
wrap|sampled thread 100: 4 samples and 18446744073709551614 lost, but 6 taken
time|location 200: sample 1 at 4150 ns, ip 0x400800; the raw trace's at 4160 ns, ip 0x400800
ip|location 100: sample 1 at 1200 ns, ip 0xffffffff81234567; the raw trace's at 1200 ns, ip 0x1000
function|location 100: sample 1 at 1200 ns in 'ksys_read'; the raw trace's in 'main'
EOT
	cp "$IN/tsf.ktrace" "$d/trace.ktrace" &&
	"$KTAUD" trace --check "$d" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
}

c_trace_merge() {
	for r in 0 1 2; do
		"$TRACE_SYNTH" rank "$IN/r$r.ktrace" $r || return 1
		"$KTAUD" trace -q --input "$IN/r$r.ktrace" -o "$W/trace-ranks" >"$LOG" 2>&1 ||
			{ sed 's/^/#   /' "$LOG"; return 1; }
	done
	for f in trace.1.ktrace traces.1.otf2 trace.1.json profile.1.0.0 profile.2.1.0; do
		[ -e "$W/trace-ranks/$f" ] || { echo "# no $f: $(ls "$W/trace-ranks")"; return 1; }
	done
	"$KTAUD" trace --check "$W/trace-ranks" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	[ "$(grep -c ': ok$' "$LOG")" = 3 ] || { sed 's/^/#   /' "$LOG"; return 1; }
	# Into one of its inputs: refused, nothing changed.
	ls -la "$W/trace-ranks" >"$W/ranks.before"
	expect_rc 2 "$KTAUD" trace --merge -o "$W/trace-ranks" "$W/trace-ranks" ||
		return 1
	grep -q "is one of the traces to merge" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	ls -la "$W/trace-ranks" | cmp -s - "$W/ranks.before" || { echo "# trace-ranks changed"; return 1; }
	"$KTAUD" trace --merge -o "$IN/trace-merged" "$W/trace-ranks" >"$LOG" 2>&1 ||
		{ sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "3 ranks in" "$LOG" || return 1
	# A merged archive is its own kind: a trace run into it is refused.
	ls -la "$IN/trace-merged" >"$W/merged.before"
	expect_rc 1 "$KTAUD" trace -q --input "$IN/r1.ktrace" -o "$IN/trace-merged" || return 1
	grep -q "not from an earlier output of this kind" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	ls -la "$IN/trace-merged" | cmp -s - "$W/merged.before" || { echo "# trace-merged changed"; return 1; }
	"$KTAUD" trace --check "$IN/trace-merged" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	grep -q "9 locations, 7 regions, 108 events, 51 enter/leave pairs (0 of user routines)" "$LOG" &&
	grep -q "9 threads compared" "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	command -v otf2-print >/dev/null || return 0
	otf2-print -G "$IN/trace-merged/traces.otf2" >"$W/m.print" 2>&1 || return 1
	grep -q 'SYSTEM_TREE_NODE .*Name: "rank 2"' "$W/m.print" &&
	grep -q 'LOCATION_GROUP .*Name: "rank 1: child (pid 200)"' "$W/m.print" ||
		{ grep -E 'SYSTEM_TREE|LOCATION_GROUP' "$W/m.print" | sed 's/^/#   /'; return 1; }
}

echo "TAP version 13"
units=$("$HOST_TEST" --list) || exit 1
uunits=$("$USER_TEST" --list) || exit 1
dunits=$("$DRILL_TEST" --list) || exit 1
nunits=$(echo "$units" | wc -l)
# Every TAU directory these tests write goes through the strict checker.
c_taucheck() {
	"$KTAUD" export --tau "$W/tc-run" "$FIXTURES/run.ktau" >"$LOG" 2>&1 || return 1
	"$KTAUD" export --tau "$W/tc-process" "$FIXTURES/process.ktau" >>"$LOG" 2>&1 || return 1
	"$KTAUD" export --tau "$W/tc-watch" "$FIXTURES/watch" >>"$LOG" 2>&1 || return 1
	dirs=$(find "$W" -name 'profile.*.*.*' | sed -e 's,/[^/]*$,,' -e 's,/MULTI__[^/]*$,,' | sort -u)
	[ "$(echo "$dirs" | wc -l)" -ge 20 ] || { echo "# too few TAU directories: $dirs"; return 1; }
	echo "# $(echo "$dirs" | wc -l) TAU directories"
	for d in $dirs; do
		"$TAUCHECK" "$d" >"$W/tc.out" 2>&1 ||
			{ sed 's/^/# /' "$W/tc.out"; return 1; }
	done
}

# ---- the kernel's ABI header ----
# One layout for 64- and 32-bit callers: /proc/ktau's compat ioctl passes
# the command, whose number holds the argument's size, unchanged, so every
# struct of <linux/ktau.h> must have the size a 32-bit build gives it (a
# hidden tail pad made KTAU_IOC_SAMPLE_START_STACK ENOTTY for i386 tasks).
# The 64-bit sizes come from a program built here; gcc -m32 then checks
# them with only the compiler (its x86 <asm/types.h> is the same header).
c_uapi_compat_layout() {
	local h="$TOOLS/../../include/uapi/linux/ktau.h" structs s
	structs=$(sed -n 's/^struct \(ktau_[a-z0-9_]*\) {$/\1/p' "$h")
	[ "$(echo $structs | wc -w)" -ge 15 ] || { echo "# structs: $structs"; return 1; }
	{
		printf '#include <stdio.h>\n#include <linux/ktau.h>\nint main(void)\n{\n'
		for s in $structs; do
			printf '\tprintf("_Static_assert(sizeof(struct %s) == %%zu, \"%s\");\\n", sizeof(struct %s));\n' \
				"$s" "$s" "$s"
		done
		printf '\treturn 0;\n}\n'
	} >"$W/uapi64.c"
	$CC -std=gnu11 $KHDR_INCLUDES -o "$W/uapi64" "$W/uapi64.c" || return 1
	{ echo '#include <linux/ktau.h>'; "$W/uapi64"; } >"$W/uapi32.c" || return 1
	$CC -m32 -std=gnu11 -fsyntax-only $KHDR_INCLUDES -idirafter /usr/include/x86_64-linux-gnu \
		"$W/uapi32.c" >"$LOG" 2>&1 || { sed 's/^/#   /' "$LOG"; return 1; }
	echo "# $(echo $structs | wc -w) structs, one size on both ABIs"
}

# The decoders' fixtures are of the ABI the kernel writes now (issue 19:
# they were of 1.0 while the kernel wrote 1.2); 'make fixtures' captures
# them again (abi-1.0/ stays, to prove that old snapshots read).
c_fixtures_current_abi() {
	local h="$TOOLS/../../include/uapi/linux/ktau.h" want have
	want=$(sed -n 's/^#define KTAU_ABI_VERSION_MAJOR[[:space:]]*\([0-9]*\)$/\1/p' "$h").$(
		sed -n 's/^#define KTAU_ABI_VERSION_MINOR[[:space:]]*\([0-9]*\)$/\1/p' "$h")
	have=$(cat "$FIXTURES/version.txt")
	[ "$have" = "$want" ] ||
		{ echo "# fixtures of ABI '$have', <linux/ktau.h> is ABI '$want': run make -C tools/ktau fixtures"; return 1; }
}

# ---- libktau as other tools link it ----
# The functions libktau.h declares (gcc -aux-info: the compiler's own list),
# split at the runtime section, which is libktau-runtime's.
lib_declared() {
	printf '#include "libktau.h"\n' >"$W/ai.c"
	$CC -std=gnu11 -D_GNU_SOURCE $KHDR_INCLUDES -I"$TOOLS/lib" -fsyntax-only \
		-aux-info "$W/ai.txt" "$W/ai.c" || return 1
	rt0=$(grep -n '^/\* ==== User-level instrumentation' "$TOOLS/lib/libktau.h" | cut -d: -f1)
	rt1=$(awk -v a="$rt0" 'NR > a && /^\/\* ==== / { print NR; exit }' "$TOOLS/lib/libktau.h")
	[ -n "$rt0" ] && [ -n "$rt1" ] || { echo "# no runtime section in libktau.h"; return 1; }
	sed -n 's,^/\* [^ ]*/libktau\.h:\([0-9]*\):[A-Z]* \*/ [^(]*[ *]\([a-z_0-9]*\) (.*,\1 \2,p' "$W/ai.txt" |
		awk -v a="$rt0" -v b="$rt1" '{ print ($1 > a && $1 < b ? "rt" : "reader"), $2 }' |
		sort >"$W/declared.txt"
	[ "$(wc -l <"$W/declared.txt")" -ge 100 ] || { echo "# declarations: $(wc -l <"$W/declared.txt")"; return 1; }
}

# Each library exports exactly its part of the header, each symbol with
# its version node; nothing internal (ktau__*, test hooks); the reader
# has no -finstrument-functions hooks and does not need capstone.
c_lib_exports() {
	lib_declared || return 1
	# The reader's versions: KTAU_2.0, and KTAU_2.1 (source lines of samples).
	for l in 'libktau:KTAU_2\.[01]:reader' libktau-runtime:KTAU_RUNTIME_2.0:rt; do
		so=$O/${l%%:*}.so.2 ver=${l#*:} part=${ver#*:} ver=${ver%:*}
		[ -f "$so" ] || { echo "# no $so"; return 1; }
		nm -D --defined-only "$so" | awk '$2 != "A" { print $3 }' >"$W/exp.txt"
		grep -v "@@$ver\$" "$W/exp.txt" | sed "s/^/# $(basename "$so") exports, not as $ver: /" |
			head -n 5 | grep . && return 1
		sed 's/@@.*//' "$W/exp.txt" | grep -v '^__cyg_profile_func_' | sort >"$W/got.txt"
		awk -v p="$part" '$1 == p { print $2 }' "$W/declared.txt" | sort >"$W/want.txt"
		comm -3 "$W/want.txt" "$W/got.txt" >"$W/diff.txt"
		[ -s "$W/diff.txt" ] && { sed "s/^/# $(basename "$so") declared (left) or exported (right) only: /" \
			"$W/diff.txt" | head -n 20; return 1; }
	done
	nm -D --defined-only "$O/libktau.so.2" | grep -q ' ktau_usyms_srcline@@KTAU_2\.1$' ||
		{ echo "# ktau_usyms_srcline is not KTAU_2.1's"; return 1; }
	! nm -D --defined-only "$O/libktau.so.2" | grep -q __cyg_profile ||
		{ echo "# libktau.so defines the -finstrument-functions hooks"; return 1; }
	nm -D --defined-only "$O/libktau-runtime.so.2" | grep -q '__cyg_profile_func_enter@@' ||
		{ echo "# libktau-runtime.so has no hooks"; return 1; }
	! readelf -d "$O/libktau.so.2" | grep -q 'NEEDED.*capstone' ||
		{ echo "# libktau.so needs capstone"; return 1; }
	readelf -d "$O/libktau.so.2" | grep -q 'SONAME.*\[libktau\.so\.2\]' || return 1
	readelf -d "$O/libktau-runtime.so.2" | grep -q 'SONAME.*\[libktau-runtime\.so\.2\]'
}

# A profiler with -finstrument-functions hooks of its own in a shared
# library links libktau (the reader) before it: its hooks are the ones
# called. (With the hooks in libktau.so, libktau's were, and the
# profiler's never ran.)
c_lib_foreign_hooks() {
	mkdir -p "$W/fh" && cd "$W/fh" || return 1
	cat >prof.c <<'EOT'
#include <stdio.h>
static int calls;
__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *f, void *s)
{ (void)f; (void)s; calls++; }
__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *f, void *s)
{ (void)f; (void)s; }
__attribute__((no_instrument_function)) int prof_calls(void) { return calls; }
EOT
	cat >app.c <<'EOT'
#include <stdio.h>
#include <string.h>
#include "libktau.h"
int prof_calls(void) __attribute__((no_instrument_function));
static int __attribute__((noinline)) f(int i) { return i * 3; }
int main(void)
{
	int s = 0;
	for (int i = 0; i < 10; i++)
		s += f(i);
	printf("%d %d %s\n", s, prof_calls(), ktau_version());
	return strcmp(ktau_version(), LIBKTAU_VERSION) != 0;
}
EOT
	$CC -shared -fPIC -o libprof.so prof.c || return 1
	$CC -std=gnu11 -finstrument-functions $KHDR_INCLUDES -I"$TOOLS/lib" -o app app.c \
		-L"$O" -lktau -L. -lprof -Wl,--no-as-needed || return 1
	out=$(LD_LIBRARY_PATH="$O:." ./app) || { echo "# app: $out"; return 1; }
	cd "$W" || return 1
	# main and f(0..9): 11 enters seen by the profiler's hooks.
	[ "$out" = "135 11 $(sed -n 's/^#define LIBKTAU_VERSION "\(.*\)"$/\1/p' "$TOOLS/lib/libktau.h")" ] ||
		{ echo "# app printed '$out', not 135 11 VERSION"; return 1; }
}

# The shared-page example on a kernel without KTAU (the host): exit 3 and
# a message that says what to boot.
c_foreign_timer_no_ktau() {
	expect_rc 3 "$FOREIGN" -t || return 1
	grep -q 'no KTAU shared pages.*CONFIG_KTAU=y' "$LOG" || { sed 's/^/#   /' "$LOG"; return 1; }
	expect_rc 2 "$FOREIGN" -n x
}

# make install, the tree moved elsewhere: a program built with pkg-config
# against the moved copy (relocatable .pc files) links the runtime, runs
# with it and writes its profile; ktau_version() is the .pc's version.
c_lib_installed_moved() {
	$MAKE -C "$TOOLS" O="$O" DESTDIR="$W/inst" PREFIX=/opt/ktau install >"$LOG" 2>&1 ||
		{ tail -n 20 "$LOG" | sed 's/^/#   /'; return 1; }
	mv "$W/inst/opt/ktau" "$W/moved" || return 1
	pcd=$(dirname "$(find "$W/moved" -name libktau-runtime.pc)")
	[ -f "$pcd/libktau.pc" ] || { echo "# no libktau.pc next to libktau-runtime.pc"; return 1; }
	flags=$(PKG_CONFIG_PATH=$pcd pkg-config --cflags --libs libktau-runtime) || return 1
	case $flags in *"$W/moved/"*) ;; *) echo "# pkg-config: $flags"; return 1 ;; esac
	ver=$(PKG_CONFIG_PATH=$pcd pkg-config --modversion libktau-runtime)
	cat >"$W/rt.c" <<'EOT'
#include <stdio.h>
#include <unistd.h>
#include "libktau.h"
static void __attribute__((noinline)) work(void) { getppid(); }
int main(void)
{
	for (int i = 0; i < 5; i++)
		work();
	puts(ktau_version());
	return 0;
}
EOT
	# shellcheck disable=SC2086
	$CC -std=gnu11 -finstrument-functions $KHDR_INCLUDES -o "$W/rt" "$W/rt.c" $flags || return 1
	readelf -d "$W/rt" | grep -q 'NEEDED.*\[libktau-runtime\.so\.2\]' ||
		{ echo "# the program does not need libktau-runtime.so.2"; return 1; }
	out=$(KTAU_PROFILE_DIR="$W/rtprof" LD_LIBRARY_PATH=$(dirname "$pcd") "$W/rt") ||
		{ echo "# the program failed: $out"; return 1; }
	[ "$out" = "$ver" ] || { echo "# ktau_version() '$out', .pc '$ver'"; return 1; }
	[ "$(fline "$W/rtprof/profile.0.0.0" "main => work" | cut -d' ' -f1)" = 5 ] ||
		{ echo "# no 'main => work' with 5 calls in $W/rtprof"; ls "$W/rtprof" | sed 's/^/#   /'; return 1; }
}

cli="c_help c_help_and_version c_options_anywhere c_options_one_meaning c_man_options c_bad_arguments c_no_ktau c_export_fixtures c_plot c_merge_fixture c_merge_options
c_merge_multi_metric c_merge_mismatch c_outdir_keeps_others c_run_checks_output c_watch_two_sessions
c_single_file_outputs
c_combine_ranks c_trace_synthetic c_trace_lost c_trace_check_fails c_trace_kernel_without_trace_mode c_trace_cut c_trace_corrupt c_trace_outdir c_trace_file_size_limit
c_trace_merge c_trace_user c_trace_command_fake c_command_keeps_sigxfsz c_trace_samples_roundtrip c_trace_samples_refused
c_trace_sample_usage c_trace_sample_command_fake c_trace_sample_pid_fake c_trace_sample_all_fake c_trace_sample_all_bound c_trace_sample_signals_fake c_trace_sample_clock_skew c_trace_sample_products c_trace_sample_timeline c_trace_sample_own_locations
c_trace_sample_check_fails c_trace_sample_reuse
c_save_and_watch_keep c_merge_bad_inputs c_demo_pie c_demo_static c_demo_cxx c_select c_make_default c_sample_names_dwfl c_sample_lines_dwfl c_export_other_boot c_json_file_forms c_diff c_flame c_merge_user_only
c_bench_user_timer c_interp c_callgraph c_faults_workload c_analyzer c_fuzz_trace_finish c_fuzz_smoke
c_py_run_counts c_py_threads c_py_exit_status c_py_fork_exec c_py_region_api c_py_keeps_foreign c_py_write_rows_fails
c_py_sample_refuses c_py_walker c_py_static_tls c_py_sample_rows c_py_pip_install
c_lib_exports c_lib_foreign_hooks c_lib_installed_moved c_foreign_timer_no_ktau c_taucheck
c_uapi_compat_layout c_fixtures_current_abi"
# For trying out one change: KTAU_HOST_ONLY="c_NAME ..." runs only those
# command tests (make check never sets it).
if [ -n "${KTAU_HOST_ONLY:-}" ]; then
	echo "# KTAU_HOST_ONLY: only $KTAU_HOST_ONLY"
	units= uunits= dunits= cli=$KTAU_HOST_ONLY nunits=0
fi
echo "1..$((nunits + $(echo $uunits | wc -w) + $(echo $dunits | wc -w) + $(echo $cli | wc -w)))"
n=0 fails=0
for t in $units; do
	n=$((n + 1))
	KTAU_TEST_OUT="$W/unit" "$HOST_TEST" "$t" "$FIXTURES" >"$W/out" 2>&1
	rc=$?
	sed 's/^\([^#]\)/# \1/' "$W/out"
	case $rc in
	0) echo "ok $n $t" ;;
	77) echo "ok $n $t # SKIP no fixtures" ;;
	*) echo "not ok $n $t"; fails=$((fails + 1)) ;;
	esac
done
# The runtime's tests write their profiles under $W/user.
for t in $uunits; do
	n=$((n + 1))
	"$USER_TEST" "$t" "$W/user" >"$W/out" 2>&1
	rc=$?
	sed 's/^\([^#]\)/# \1/' "$W/out"
	case $rc in
	0) echo "ok $n $t" ;;
	77) echo "ok $n $t # SKIP" ;;
	*) echo "not ok $n $t"; fails=$((fails + 1)) ;;
	esac
done
# Probes and drill: the decisions and the call graph decoder.
for t in $dunits; do
	n=$((n + 1))
	"$DRILL_TEST" "$t" "$(dirname "$CG_SAMPLE")" >"$W/out" 2>&1
	rc=$?
	sed 's/^\([^#]\)/# \1/' "$W/out"
	case $rc in
	0) echo "ok $n $t" ;;
	*) echo "not ok $n $t"; fails=$((fails + 1)) ;;
	esac
done
cd "$W" || exit 1
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
