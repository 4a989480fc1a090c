# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# The verdicts of make check, in one place: scripts/check.sh, scripts/boot.sh
# and the machinery's own test (scripts/tests/check-selftest.sh) source this
# file. Source it; do not run it. It only defines functions.
#
# A verdict is a line "PASS|FAIL|SKIP<TAB>name<TAB>detail"; check.sh counts
# them. Names start with a prefix that says where the case comes from:
#   guest: PROG: CASE        a KTAP case of the guest's main pass
#   host: CASE               a KTAP case of the host tests (tools/ktau)
#   debug: kmemleak: CASE    the debug kernel's kmemleak scan (only there)
#   system: PROG: CASE       a KTAP case of the system test (a Debian 12
#                            system booted with systemd: scripts/system.sh)
#   smp: PROG: CASE          the same cases again, on 2 CPUs
#   tsc-unstable: PROG: CASE the same cases again, 2 CPUs, tsc=unstable
#   bootparam: PROG: CASE    the same cases again, booted with ktau= and
#                            ktau.slots= (ktau_boot expects what they say);
#                            bootparam-bad: the same with ktau=none and a
#                            ktau.slots= out of range
#   mttcg: PROG: CASE        the same cases again, 2 CPUs running in
#                            parallel (multi-threaded TCG); its
#                            "mttcg: ktau-hold: CASE" (nothing switched,
#                            keys held, vCPUs in parallel) are cases of
#                            their own
#   debug: PROG: CASE        the same cases again, on the debug kernel
#   anything else            a gate: lint, builds, checkpatch, smoke, and
#                            the verdicts on a run as a whole ("guest: PROG"
#                            ran as planned, "smp: console clean", ...)

# case | rerun | gate, from a result name (see above).
check_class() {	# name
	case $1 in
	"guest: "*": "*|"host: "*|"debug: kmemleak: "*|"system: "*": "*|"mttcg: ktau-hold: "*) echo case ;;
	"smp: "*": "*|"mttcg: "*": "*|"tsc-unstable: "*": "*|"bootparam: "*": "*|"bootparam-bad: "*": "*|"debug: "*": "*) echo rerun ;;
	*) echo gate ;;
	esac
}

# No warning from KTAU's files in a kernel build's log (the compiler's,
# and objtool's, which the debug kernel's UBSAN and KASAN make stricter: a
# sanitizer call inside a user access window is one). The log holds what
# the build compiled this time: every file in a cold build, the changed
# ones in a warm one. A missing log fails.
build_warnings_verdict() {	# name log
	local w
	if [ ! -f "$2" ]; then
		printf 'FAIL\t%s\tno build log %s\n' "$1" "$2"
		return 0
	fi
	w=$(grep -E '(^|/)(kernel/ktau/|include/(uapi/)?linux/ktau)[^ :]*(:[0-9]+)*: warning' "$2" |
		sed -n 1,3p | tr '\n' ' ')
	if [ -n "$w" ]; then
		printf 'FAIL\t%s\t%s(see %s)\n' "$1" "$w" "$2"
	else
		printf 'PASS\t%s\t\n' "$1"
	fi
}

# A case skipped in one pass must have passed in another: a designed skip
# ("the 2-CPU pass runs it", "only with ktautest.fill_registry") that ran
# nowhere leaves a behaviour untested while the count stays green. One gate
# verdict per skipped case, the pass prefix taken off its name.
skips_ran_elsewhere() {	# results.tsv
	local st name c
	local -A passed=() skipped=()
	[ -f "$1" ] || return 0
	while IFS=$'\t' read -r st name _; do
		case $(check_class "$name") in case|rerun) ;; *) continue ;; esac
		case $name in *": "*": "*) c=${name#*: } ;; *) c=$name ;; esac
		case $st in
		PASS) passed[$c]+="${name%%: *} " ;;
		SKIP) skipped[$c]+="${name%%: *} " ;;
		esac
	done <"$1"
	for c in "${!skipped[@]}"; do
		if [ -n "${passed[$c]:-}" ]; then
			printf 'PASS\tskipped case ran elsewhere: %s\tskipped in %s; passed in %s\n' \
				"$c" "${skipped[$c]% }" "${passed[$c]% }"
		else
			printf 'FAIL\tskipped case ran elsewhere: %s\tskipped in %s, passed in no pass: %s\n' \
				"$c" "${skipped[$c]% }" "the behaviour was not tested"
		fi
	done | sort
}

# The summary of a results.tsv (STATUS<TAB>name<TAB>detail lines): the
# results of each class, then the last line "N passed, N failed, N skipped"
# over all of them. Status 1 when any result failed or is not
# PASS/FAIL/SKIP (counted as failed).
check_summary() {	# results.tsv
	local st name c
	local -A cnt=()
	if [ -f "$1" ]; then
		while IFS=$'\t' read -r st name _; do
			case $st in PASS|FAIL|SKIP) ;; *) st=FAIL ;; esac
			c=$(check_class "$name")
			cnt[$c.$st]=$(( ${cnt[$c.$st]:-0} + 1 ))
			cnt[$st]=$(( ${cnt[$st]:-0} + 1 ))
		done <"$1"
	fi
	for c in case rerun gate; do
		printf '%d ' $(( ${cnt[$c.PASS]:-0} + ${cnt[$c.FAIL]:-0} + ${cnt[$c.SKIP]:-0} ))
		case $c in
		case) printf 'distinct behaviour cases (KTAP cases of the guest main pass, the host tests and the system test): ' ;;
		rerun) printf 're-runs of those cases (smp: the 2-CPU pass, mttcg: 2 CPUs in parallel threads, tsc-unstable: 2 CPUs with tsc=unstable, bootparam, bootparam-bad: booted with ktau= and ktau.slots=, debug: the debug kernel): ' ;;
		gate) printf 'gates (lint, builds, checkpatch, smoke, run and console verdicts): ' ;;
		esac
		printf '%d passed, %d failed, %d skipped\n' "${cnt[$c.PASS]:-0}" "${cnt[$c.FAIL]:-0}" "${cnt[$c.SKIP]:-0}"
	done
	printf '%d passed, %d failed, %d skipped\n' "${cnt[PASS]:-0}" "${cnt[FAIL]:-0}" "${cnt[SKIP]:-0}"
	[ "${cnt[FAIL]:-0}" -eq 0 ]
}

# KTAP from a file: "ok N name", "not ok N name", "# SKIP" directives, plans,
# and the "# ktau-selftest-begin/end NAME rc=R" markers of the guest runner.
# KTAP outside the markers (the host tests) is taken as documents, one per
# plan. Prints verdict lines: one per test case (CASE-PREFIX), and gate lines
# (GATE-PREFIX, default CASE-PREFIX) for each program or document whose plan
# and reported cases differ, that exited non-zero without a failed case, that
# did not finish, and for each program of EXPECTED (names separated by spaces
# or commas) that has no begin marker (an EXPECTED word "docs=N": at least N
# KTAP documents outside the markers); when there is no such problem, one
# PASS line "GATE-PREFIXevery program reported its planned cases".
# "ok ... # SKIP" is a skip; "not ok ... # SKIP" is a failure.
parse_ktap() {	# file case-prefix [gate-prefix [expected]]
	local f=$1
	# No file (the guest never ran): every expected program is missing.
	[ -f "$f" ] || f=/dev/null
	awk -v pfx="$2" -v gpfx="${3:-$2}" -v want="${4:-}" -v file="$1" '
	function problem(label, what) {
		printf "FAIL\t%s%s\t%s\n", gpfx, label, what
		bad++
	}
	function open_doc(name) {
		flush()
		isopen = 1; bin = name; plan = -1; seen = 0; nfail = 0; rc = 0; ndiag = 0
		if (name == "") { ndoc++; label = "KTAP output " ndoc }
		else { nprog++; label = name; ran[name] = 1 }
	}
	function flush() {
		if (!isopen) return
		if (rc == -1)
			problem(label, sprintf("no end marker (the guest stopped in it?); %d cases reported, plan %s", seen, plan < 0 ? "not seen" : plan))
		else if (plan < 0)
			problem(label, sprintf("no KTAP plan (1..N) line; %d cases reported", seen))
		else if (seen != plan)
			problem(label, sprintf("plan said %d tests, %d reported", plan, seen))
		if (rc > 0 && nfail == 0)
			problem(label, sprintf("exited %d without a failed test (crash?)", rc))
		isopen = 0; bin = ""
	}
	{ sub(/\r+$/, "") }
	/^# ktau-selftest-begin / { open_doc($3); rc = -1; next }
	/^# ktau-selftest-end / {
		if (!isopen || bin == "") next
		sub(/.*rc=/, ""); rc = $0 + 0; flush(); next
	}
	/^TAP version / { if (!isopen || (bin == "" && (plan >= 0 || seen > 0))) open_doc(""); next }
	/^1\.\.[0-9]+/ {
		if (!isopen || (bin == "" && plan >= 0)) open_doc("")
		plan = substr($1, 4) + 0; next
	}
	# Diagnostics since the last case line: the first three that say
	# something (not the harness'"'"'s RUN/OK/FAIL banners) are a failed
	# case'"'"'s detail, so that the summary says why without the log.
	/^# / && !/^# ktau-/ {
		d = substr($0, 3); gsub(/\t/, " ", d); sub(/^ +/, "", d)
		if (d != "" && d !~ /^(RUN|OK|FAIL|SKIP|PASSED|FAILED|Totals|SKIPPED) / && d !~ /Test failed/ && ndiag < 3)
			diag[++ndiag] = d
		next
	}
	/^(not )?ok [0-9]+/ {
		if (!isopen) open_doc("")
		ok = ($1 == "ok"); line = $0
		sub(/^(not )?ok [0-9]+ */, "", line)
		name = line; dir = ""
		if (index(line, " # ")) { name = substr(line, 1, index(line, " # ") - 1); dir = substr(line, index(line, " # ") + 3) }
		seen++
		st = ok ? "PASS" : "FAIL"
		if (ok && toupper(dir) ~ /^SKIP/) st = "SKIP"
		if (!ok) {
			nfail++
			for (i = 1; i <= ndiag; i++)
				dir = dir (dir != "" ? " | " : "") diag[i]
			if (length(dir) > 300) dir = substr(dir, 1, 297) "..."
		}
		ndiag = 0
		printf "%s\t%s%s%s\t%s\n", st, pfx, (bin != "" ? bin ": " : ""), name, dir
	}
	END {
		flush()
		n = split(want, w, /[ ,]+/)
		for (i = 1; i <= n; i++)
			if (w[i] ~ /^docs=[0-9]+$/) {
				if (ndoc < substr(w[i], 6) + 0)
					problem("KTAP output " (ndoc + 1), sprintf("missing: %d KTAP documents expected, %d found", substr(w[i], 6) + 0, ndoc))
			} else if (w[i] != "" && !(w[i] in ran))
				problem(w[i], "not run: no \"# ktau-selftest-begin " w[i] "\" line (the guest stopped before it, or the image lacks it)")
		if (nprog + ndoc == 0 && n == 0)
			problem("KTAP output", "none found in " file)
		else if (bad == 0)
			printf "PASS\t%severy program reported its planned cases\t%d programs, %d KTAP documents\n", gpfx, nprog, ndoc
	}
	' "$f"
}

# Lines of a console log that show a kernel problem: panics, oopses,
# warnings, BUG reports (with or without a colon: SLUB says "BUG
# kmalloc-64 (Not tainted): ..."), sanitizer, lockdep and RCU reports,
# stalls, user-space segfaults, list and object debugging, kmemleak turning
# itself off, and KTAU's own failure to start. Prints "LINE:text" for each; status 0 when any was found.
KTAU_CONSOLE_BAD='Kernel panic|Oops|WARNING:|BUG:|(^|\] )BUG [^ ]|kernel BUG at|KASAN|UBSAN|kmemleak: [0-9]+ new suspected|possible circular locking|inconsistent lock state|possible recursive locking|suspicious RCU usage|detected stall|detected expedited stall|general protection fault|segfault at|Call Trace:|INFO: task .* blocked|watchdog: BUG|Sleeping function called|sleeping function called from invalid context|list_add corruption|list_del corruption|ODEBUG:|ktau: out of memory, KTAU stays off|kmemleak: Kernel memory leak detector disabled'
console_problems() {	# console.log
	[ -f "$1" ] || return 1
	tr -d '\r' <"$1" | grep -aEn "$KTAU_CONSOLE_BAD"
}

# The guest's last line: "KTAU-GUEST-DONE rc=R tainted=T" (scripts/guest/init).
guest_done_line() {	# results.log
	[ -f "$1" ] || return 0
	tr -d '\r' <"$1" | { grep -a '^KTAU-GUEST-DONE' || true; } | tail -n 1
}

# The verdict on a QEMU run of boot.sh or system.sh (OUT: its directory,
# with console.log, results.log and qemu.log), from QEMU's exit status and
# the console: status 0 when the run ended normally; else a message on
# stderr (WHAT: "the guest", "the system") and status 1 (the kernel
# reported a problem) or 2 (no end: a timeout, QEMU failed, or the guest
# stopped before its "KTAU-GUEST-DONE" line).
qemu_run_verdict() {	# out qemu-status timeout what
	local problems
	if problems=$(console_problems "$1/console.log"); then
		printf '%s\n' "$problems" | sed -n 1,5p >&2
		msg "the kernel reported a problem; console log: $1/console.log"
		return 1
	fi
	if [ "$2" -eq 124 ] || [ "$2" -eq 137 ]; then
		msg "$4 did not finish within ${3}s (hang?); console log: $1/console.log"
		return 2
	fi
	if [ "$2" -ne 0 ]; then
		cat "$1/qemu.log" >&2
		msg "qemu failed (exit $2); see $1/qemu.log and $1/console.log"
		return 2
	fi
	if [ -z "$(guest_done_line "$1/results.log")" ]; then
		msg "$4 stopped before its run finished; console log: $1/console.log"
		return 2
	fi
}

# The value of /proc/sys/kernel/tainted the guest reported at its end
# (empty when it reported none).
guest_tainted() {	# results.log
	guest_done_line "$1" | sed -n 's/.* tainted=\([0-9]*\).*/\1/p'
}

# The taint flags set in a /proc/sys/kernel/tainted value, as letters with
# their meaning (Documentation/admin-guide/tainted-kernels.rst).
taint_bits() {	# value
	local v=$1 i out=""
	local -a names=("P proprietary module" "F forced module load" "S CPU out of spec"
		"R forced module unload" "M machine check" "B bad page" "U taint requested by user"
		"D kernel died (oops or BUG)" "A ACPI table overridden" "W kernel warning"
		"C staging driver" "I firmware bug workaround" "O out-of-tree module"
		"E unsigned module" "L soft lockup" "K live patch" "X auxiliary taint"
		"T randstruct" "N test module")
	for ((i = 0; i < 64 && v > 0; i++, v >>= 1)); do
		[ $((v & 1)) -eq 1 ] || continue
		out="$out${out:+, }${names[$i]:-bit $i} (bit $i)"
	done
	printf '%s\n' "${out:-none}"
}

# Verdicts on one guest run as a whole (gates): it finished, its console is
# clean, the kernel was not tainted at the end. BOOT_RC is boot.sh's status
# (2: the guest did not finish).
run_verdicts() {	# prefix console.log results.log boot-rc
	local pfx=$1 con=$2 res=$3 brc=$4 t lines
	if [ -n "$(guest_done_line "$res")" ] && [ "$brc" != 2 ]; then
		printf 'PASS\t%s: run finished\t\n' "$pfx"
	else
		printf 'FAIL\t%s: run finished\t%s\n' "$pfx" \
			"no KTAU-GUEST-DONE line or boot.sh status $brc (hang, crash or timeout); see $con"
	fi
	if lines=$(console_problems "$con"); then
		printf 'FAIL\t%s: console clean\t%s\n' "$pfx" \
			"$(printf '%s\n' "$lines" | sed -n 1p); see $con"
	elif [ -f "$con" ]; then
		printf 'PASS\t%s: console clean\t\n' "$pfx"
	else
		printf 'FAIL\t%s: console clean\tno console log at %s\n' "$pfx" "$con"
	fi
	t=$(guest_tainted "$res")
	if [ -z "$t" ]; then
		printf 'FAIL\t%s: kernel not tainted\t%s\n' "$pfx" \
			"the guest reported no /proc/sys/kernel/tainted (no 'tainted=' in its KTAU-GUEST-DONE line); see $res"
	elif [ "$t" -ne 0 ]; then
		printf 'FAIL\t%s: kernel not tainted\t%s\n' "$pfx" \
			"tainted=$t: $(taint_bits "$t"); find the cause in $con"
	else
		printf 'PASS\t%s: kernel not tainted\t\n' "$pfx"
	fi
}

# CPUs the guest had online when its tests began ("# ktau-cpus-online N",
# scripts/guest/run-tests.sh). Verdict: at least MIN.
cpus_verdict() {	# prefix results.log min
	local n=""
	[ -f "$2" ] && n=$(tr -d '\r' <"$2" | sed -n 's/^# ktau-cpus-online \([0-9]*\)$/\1/p' | sed -n 1p)
	if [ -n "$n" ] && [ "$n" -ge "$3" ]; then
		printf 'PASS\t%s: %s CPUs online\t%s\n' "$1" "$3" "the guest saw $n"
	else
		printf 'FAIL\t%s: %s CPUs online\t%s\n' "$1" "$3" \
			"the guest saw ${n:-no CPU count (no '# ktau-cpus-online' line)}; check boot.sh's -smp and the guest kernel's NR_CPUS; see $2"
	fi
}

# The test programs of a guest image root, as scripts/guest/run-tests.sh
# finds them: executables in ktau/selftests, then ktau/tests.
image_programs() {	# image-root
	local d t
	for d in "$1/ktau/selftests" "$1/ktau/tests"; do
		[ -d "$d" ] || continue
		for t in "$d"/*; do
			[ -f "$t" ] && [ -x "$t" ] && printf '%s\n' "${t##*/}"
		done
	done
	return 0
}

# The ktautests= list of a kernel command line, one name a line.
ktautests_list() {	# cmdline
	printf '%s\n' "$1" | tr ' ' '\n' | sed -n 's/^ktautests=//p' | tail -n 1 | tr ',' '\n' | sed '/^$/d'
}

# Names of a ktautests= list that are not programs of the image.
ktautests_unknown() {	# cmdline image-root
	local n progs
	progs=$(image_programs "$2")
	while read -r n; do
		grep -qxF -- "$n" <<<"$progs" || printf '%s\n' "$n"
	done < <(ktautests_list "$1")
}

# TAU directories the guest tests wrote come back in results.log as base64
# archives ("# ktau-archive-begin" ... "# ktau-archive-end"); each is
# unpacked under DIR and every TAU directory in it passes the strict
# checker TAUCHECK. Verdict lines are named "taucheck: PREFIX DIR".
taucheck_archives() {	# results.log dir prefix taucheck
	local res=$1 dir=$2 pfx=$3 tc=$4 a x d n=0
	rm -rf "$dir"
	mkdir -p "$dir"
	[ -f "$res" ] || return 0
	tr -d '\r' <"$res" | awk '/^# ktau-archive-begin/ { n++; f = sprintf("%s/archive-%d.b64", d, n); next }
	     /^# ktau-archive-end/ { f = ""; next } f { print > f }' d="$dir"
	for a in "$dir"/archive-*.b64; do
		[ -f "$a" ] || continue
		x=${a%.b64}
		mkdir -p "$x"
		if ! base64 -d <"$a" | tar xzf - -C "$x" 2>"$x.err"; then
			printf 'FAIL\ttaucheck: %s archive %s unpacks\t%s\n' "$pfx" "${a##*/}" \
				"$(head -n 1 "$x.err"); see $a"
			continue
		fi
		while read -r d; do
			n=$((n + 1))
			if [ -x "$tc" ] && "$tc" "$d" >"$d.taucheck" 2>&1; then
				printf 'PASS\ttaucheck: %s %s\t\n' "$pfx" "${d#"$x"/}"
			else
				[ -x "$tc" ] || echo "no strict checker at $tc (make -C tools/ktau)" >"$d.taucheck"
				printf 'FAIL\ttaucheck: %s %s\t%s\n' "$pfx" "${d#"$x"/}" \
					"$(head -n 1 "$d.taucheck"); see $d.taucheck"
			fi
		done < <(find "$x" -name 'profile.*' | sed -e 's,/[^/]*$,,' -e 's,/MULTI__[^/]*$,,' | sort -u)
	done
}
