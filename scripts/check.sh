#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check: everything the project tests, in one run.
#   static gates  checkpatch --strict on every patch and overlay source file,
#                 sparse and W=1 over kernel/ktau, a CONFIG_KTAU=n build,
#                 the exported series applied with git am to a pristine tree
#   host tests    tools/ktau (KTAP)
#   guest tests   the selftests in QEMU (KTAP), console scanned for problems
# Every case is counted; the last line is "N passed, N failed, N skipped" and
# the exit status is 1 when anything failed.
. "$(dirname "$0")/lib.sh"
set +e

R=$KTAU_OUT/check
rm -rf "$R"
mkdir -p "$R"
npass=0 nfail=0 nskip=0
t0=$(date +%s)

result() {	# PASS|FAIL|SKIP name [detail]
	case $1 in
	PASS) npass=$((npass + 1)) ;;
	FAIL) nfail=$((nfail + 1)) ;;
	SKIP) nskip=$((nskip + 1)) ;;
	esac
	printf '%s: %s%s\n' "$1" "$2" "${3:+ ($3)}"
	printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}" >>"$R/results.tsv"
}
step() { printf '== %s [%ss]\n' "$*" "$(( $(date +%s) - t0 ))"; }
finish() {
	printf '\ncheck took %ss; results in %s/results.tsv\n' "$(( $(date +%s) - t0 ))" "$R"
	printf '%d passed, %d failed, %d skipped\n' "$npass" "$nfail" "$nskip"
	[ "$nfail" -eq 0 ]
	exit
}

# KTAP from a file: "ok N name", "not ok N name", "# SKIP" directives, plans,
# and the "# ktau-selftest-begin/end NAME rc=R" markers of the guest runner.
# Prints result lines "PASS|FAIL|SKIP<TAB>name<TAB>detail".
parse_ktap() {	# file prefix
	awk -v pfx="$2" '
	function flush() {
		if (bin == "") return
		if (plan >= 0 && seen != plan)
			printf "FAIL\t%s%s\tplan said %d tests, %d reported\n", pfx, bin, plan, seen
		else if (rc != 0 && nfail == 0)
			printf "FAIL\t%s%s\texited %d without a failed test (crash?)\n", pfx, bin, rc
		bin = ""
	}
	/^# ktau-selftest-begin / { flush(); bin = $3; plan = -1; seen = 0; nfail = 0; rc = -1; next }
	/^# ktau-selftest-end / { sub(/.*rc=/, ""); rc = $0 + 0; flush(); next }
	/^1\.\.[0-9]+/ { if (bin != "") plan = substr($1, 4) + 0; next }
	/^(not )?ok [0-9]+/ {
		ok = ($1 == "ok"); line = $0
		sub(/^(not )?ok [0-9]+ */, "", line)
		name = line; dir = ""
		if (index(line, " # ")) { name = substr(line, 1, index(line, " # ") - 1); dir = substr(line, index(line, " # ") + 3) }
		seen++
		st = ok ? "PASS" : "FAIL"
		if (dir ~ /^SKIP/) st = "SKIP"
		if (!ok) nfail++
		printf "%s\t%s%s%s\t%s\n", st, pfx, (bin != "" ? bin ": " : ""), name, dir
	}
	END { if (bin != "") { rc = 1; printf "FAIL\t%s%s\tno end marker (guest stopped?)\n", pfx, bin } }
	' "$1"
}
count_ktap() {	# file prefix
	local st name detail
	while IFS=$'\t' read -r st name detail; do
		result "$st" "$name" "$detail"
	done < <(parse_ktap "$@")
}

step "dependencies"
if ! "$KTAU_TOP/scripts/deps.sh" all; then
	result FAIL "dependencies installed" "see $KTAU_OUT/logs/apt.log"
	finish
fi

step "tree"
if "$KTAU_TOP/scripts/prepare-tree.sh" >"$R/prepare.log" 2>&1; then
	result PASS "tree: series applies, overlay copied"
else
	cat "$R/prepare.log"
	result FAIL "tree: series applies, overlay copied" "see $R/prepare.log"
	finish
fi

step "checkpatch"
cp="perl $KTAU_SRC/scripts/checkpatch.pl --strict --no-signoff --color=never --show-types"
while read -r p; do
	[ -n "$p" ] || continue
	n=${p##*/}
	if (cd "$KTAU_SRC" && $cp "$p") >"$R/checkpatch-$n.log" 2>&1; then
		result PASS "checkpatch: patches/$n"
	else
		grep -E '^(ERROR|WARNING|CHECK)' "$R/checkpatch-$n.log" | head -5
		result FAIL "checkpatch: patches/$n" "see $R/checkpatch-$n.log"
	fi
done < <(series_patches)
while IFS=$'\t' read -r f t; do
	case $f in
	*.c|*.h|*/Kconfig|*/Makefile) ;;
	*) continue ;;
	esac
	log=$R/checkpatch-$(printf '%s' "$f" | tr '/' '_').log
	if (cd "$KTAU_SRC" && $cp -f "$t") >"$log" 2>&1; then
		result PASS "checkpatch: $f"
	else
		grep -E '^(ERROR|WARNING|CHECK)' "$log" | head -5
		result FAIL "checkpatch: $f" "see $log"
	fi
done < <(overlay_files)

# The boot parameters: core_param(NAME, ...) is "NAME=",
# module_param_cb(NAME, ...) in kernel/ktau is "ktau.NAME=".
undoc="" nparams=0
for n in $(cat "$KTAU_SRC"/kernel/ktau/*.c | sed -n -e 's/^core_param(\([a-z_]*\),.*/\1=/p' \
	-e 's/^module_param_cb(\([a-z_]*\),.*/ktau.\1=/p'); do
	nparams=$((nparams + 1))
	grep -q "^	$n" "$KTAU_SRC/Documentation/admin-guide/kernel-parameters.txt" || undoc="$undoc $n"
done
[ $nparams -gt 0 ] || undoc=" (no boot parameter found in kernel/ktau)"
if [ -z "$undoc" ]; then
	result PASS "kernel-parameters.txt documents every KTAU boot parameter"
else
	result FAIL "kernel-parameters.txt documents every KTAU boot parameter" "missing:$undoc"
fi

step "kernels"
kernel_ok=0
if "$KTAU_TOP/scripts/build-kernel.sh" ktau; then
	result PASS "build: KTAU kernel"
	kernel_ok=1
else
	result FAIL "build: KTAU kernel" "see $KTAU_OUT/logs/kernel-ktau.log"
fi
if "$KTAU_TOP/scripts/build-kernel.sh" noktau; then
	if grep -q '^CONFIG_KTAU=y' "$KTAU_BUILD/noktau/.config"; then
		result FAIL "build: CONFIG_KTAU=n kernel" "KTAU is still on in its .config"
	else
		result PASS "build: CONFIG_KTAU=n kernel"
	fi
else
	result FAIL "build: CONFIG_KTAU=n kernel" "see $KTAU_OUT/logs/kernel-noktau.log"
fi

step "W=1 and sparse over kernel/ktau"
if "$KTAU_TOP/scripts/build-kernel.sh" static prepare >/dev/null 2>&1; then
	S=$KTAU_BUILD/static
	# W=1 first (objects deleted so that they compile again), then C=2,
	# which runs sparse over every file whether or not it compiles.
	find "$S/kernel/ktau" -name '*.o' -delete 2>/dev/null
	make -C "$KTAU_SRC" O="$S" -j"$KTAU_JOBS" CC="ccache gcc" W=1 kernel/ktau/ >"$R/static.log" 2>&1
	src=$?
	w1=$(grep -cE '(warning|error):' "$R/static.log")
	make -C "$KTAU_SRC" O="$S" CC="ccache gcc" C=2 kernel/ktau/ >"$R/sparse.log" 2>&1
	sp=$(grep -cE '(warning|error):' "$R/sparse.log")
	if [ $src -eq 0 ] && [ "$w1" -eq 0 ]; then
		result PASS "W=1: kernel/ktau builds without warnings"
	else
		grep -E '(warning|error):' "$R/static.log" | head -5
		result FAIL "W=1: kernel/ktau builds without warnings" "see $R/static.log"
	fi
	if [ "$sp" -eq 0 ] && grep -q 'CHECK' "$R/sparse.log"; then
		result PASS "sparse: kernel/ktau"
	else
		grep -E '(warning|error):' "$R/sparse.log" | head -5
		result FAIL "sparse: kernel/ktau" "see $R/sparse.log"
	fi
else
	result FAIL "W=1: kernel/ktau builds without warnings" "static build dir did not prepare"
	result FAIL "sparse: kernel/ktau" "static build dir did not prepare"
fi

# The series must build on mainline 6.12.y too, not only on Debian's tree.
step "mainline 6.12"
"$KTAU_TOP/scripts/mainline-check.sh" >"$R/mainline.out" 2>"$R/mainline.log"
grep -q . "$R/mainline.log" && cat "$R/mainline.log"
while read -r st rest; do
	case $st in
	PASS:) result PASS "${rest}" ;;
	FAIL:) result FAIL "${rest}" ;;
	esac
done <"$R/mainline.out"
[ "$(grep -c '^\(PASS\|FAIL\):' "$R/mainline.out")" -eq 2 ] ||
	result FAIL "mainline: scripts/mainline-check.sh ran both checks" "see $R/mainline.log"

step "series"
if "$KTAU_TOP/scripts/series.sh" verify >"$R/series.log" 2>&1; then
	result PASS "series: git am on pristine $KTAU_SRCPKG gives the prepared tree"
	# The exported commits add new files without touching MAINTAINERS
	# (that is a patch of its own), so checkpatch's FILE_PATH_CHANGES
	# question is answered here instead: get_maintainer.pl must name the
	# KTAU entry for every file the series adds.
	unmaintained=""
	while read -r f; do
		[ -f "$KTAU_PRISTINE/$f" ] && continue
		(cd "$KTAU_SRC" && perl scripts/get_maintainer.pl --no-git --no-git-fallback \
			--no-rolestats --subsystem --no-email -f "$f" 2>/dev/null) | grep -q '^KTAU' ||
			unmaintained="$unmaintained $f"
	done <"$KTAU_SRC/.ktau-files"
	if [ -z "$unmaintained" ]; then
		result PASS "MAINTAINERS: the KTAU entry covers every new file"
	else
		result FAIL "MAINTAINERS: the KTAU entry covers every new file" "not covered:$unmaintained"
	fi
	for p in "$KTAU_OUT"/series/*.patch; do
		n=${p##*/}
		case $n in 0000-*) continue ;; esac
		if (cd "$KTAU_SRC" && $cp --ignore FILE_PATH_CHANGES "$p") >"$R/checkpatch-series-$n.log" 2>&1; then
			result PASS "checkpatch: series/$n"
		else
			grep -E '^(ERROR|WARNING|CHECK)' "$R/checkpatch-series-$n.log" | head -5
			result FAIL "checkpatch: series/$n" "see $R/checkpatch-series-$n.log"
		fi
	done
else
	tail -n 20 "$R/series.log"
	result FAIL "series: git am on pristine $KTAU_SRCPKG gives the prepared tree" "see $R/series.log"
fi

step "host tests"
if [ -f "$KTAU_TOP/tools/ktau/Makefile" ]; then
	make -C "$KTAU_TOP/tools/ktau" O="$KTAU_OUT/host" check >"$R/host.log" 2>&1
	hrc=$?
	count_ktap "$R/host.log" "host: "
	if [ $hrc -ne 0 ] && ! grep -q '^not ok' "$R/host.log"; then
		tail -n 20 "$R/host.log"
		result FAIL "host: tools/ktau builds and its tests run" "see $R/host.log"
	fi
fi

# The verdict on one boot.sh run: PREFIX, its output dir under
# guest-run/, and boot.sh's status (1: a failed test or a console report,
# else: it did not finish).
boot_result() {
	local log=$KTAU_OUT/guest-run/$2/console.log
	case $3 in
	0) result PASS "$1: finished, console clean" ;;
	1) result FAIL "$1: finished, console clean" "see $log" ;;
	*) result FAIL "$1: finished, console clean" "did not finish; see $log" ;;
	esac
}

step "guest"
if [ $kernel_ok = 1 ] && "$KTAU_TOP/scripts/build-image.sh" ktau >"$R/image.log" 2>&1; then
	"$KTAU_TOP/scripts/boot.sh" --kernel ktau --mode check --timeout "${KTAU_GUEST_TIMEOUT:-900}" \
		--out "$KTAU_OUT/guest-run/check" 2>"$R/boot.log"
	brc=$?
	cat "$R/boot.log"
	count_ktap "$KTAU_OUT/guest-run/check/results.log" "guest: "
	# TAU directories the guest tests wrote come back as archives; every
	# one must pass the strict checker.
	tc=$KTAU_OUT/host/ktau-taucheck
	awk '/^# ktau-archive-begin /{n++; f=sprintf("%s/archive-%d.b64", d, n); next}
	     /^# ktau-archive-end/{f=""; next} f{print > f}' d="$R" \
		"$KTAU_OUT/guest-run/check/results.log"
	for a in "$R"/archive-*.b64; do
		[ -f "$a" ] || continue
		x=${a%.b64}
		mkdir -p "$x"
		# The serial line turns "\n" into "\r\n".
		if ! tr -d '\r' <"$a" | base64 -d | tar xzf - -C "$x"; then
			result FAIL "taucheck: guest archive ${a##*/} unpacks"
			continue
		fi
		while read -r d; do
			if [ -x "$tc" ] && "$tc" "$d" >"$d.taucheck" 2>&1; then
				result PASS "taucheck: guest ${d#"$x"/}"
			else
				head -3 "$d.taucheck" 2>/dev/null
				result FAIL "taucheck: guest ${d#"$x"/}" "see $d.taucheck"
			fi
		done < <(find "$x" -name 'profile.*' | sed -e 's,/[^/]*$,,' -e 's,/MULTI__[^/]*$,,' | sort -u)
	done
	boot_result guest check $brc
else
	[ $kernel_ok = 1 ] && { tail -n 20 "$R/image.log"; }
	result FAIL "guest: image built and booted" "kernel or image build failed; see $R/image.log"
fi
# A guest run of the KTAU kernel on two CPUs: NAME (its directory under
# guest-run/ and the prefix of its results), TIMEOUT, kernel command line.
smp_pass() {
	"$KTAU_TOP/scripts/boot.sh" --kernel ktau --mode check --smp 2 --timeout "$2" \
		--append "$3" --out "$KTAU_OUT/guest-run/$1" 2>>"$R/boot.log"
	local brc=$?
	count_ktap "$KTAU_OUT/guest-run/$1/results.log" "$1: "
	boot_result "$1" "$1" $brc
}
# Two CPUs: readers, hotplug and group switches across CPUs (the tests
# whose figures do not depend on having the host to themselves).
if [ $kernel_ok = 1 ] && [ -f "$KTAU_OUT/guest/initramfs.cpio.gz" ]; then
	step "guest, 2 CPUs"
	smp_pass smp 600 "ktautests=ktau_churn,ktau_stress,ktau_shared,ktau_syscall,ktau_exit,ktau_probe,ktau_modules,ktau_clock"
	# The TSC marked unstable: routines that change CPU are rebased.
	step "guest, 2 CPUs, tsc=unstable"
	smp_pass tsc-unstable 300 "tsc=unstable ktautests=ktau_clock,ktau_stress,ktau_churn"
fi
# The same tests on a debug kernel (KASAN, lockdep, UBSAN, kmemleak, list
# and object debugging, SLUB debugging): any report fails the run.
step "debug kernel"
if "$KTAU_TOP/scripts/build-kernel.sh" debug; then
	result PASS "build: debug kernel (KASAN, lockdep, UBSAN, kmemleak)"
	"$KTAU_TOP/scripts/boot.sh" --kernel debug --mode check --timeout "${KTAU_GUEST_TIMEOUT:-1800}" \
		--append ktaudebug=1 --out "$KTAU_OUT/guest-run/debug" 2>>"$R/boot.log"
	brc=$?
	count_ktap "$KTAU_OUT/guest-run/debug/results.log" "debug: "
	boot_result debug debug $brc
else
	result FAIL "build: debug kernel (KASAN, lockdep, UBSAN, kmemleak)" "see $KTAU_OUT/logs/kernel-debug.log"
fi

if [ -f "$KTAU_BUILD/noktau/arch/x86/boot/bzImage" ] && [ -f "$KTAU_OUT/guest/initramfs.cpio.gz" ]; then
	if "$KTAU_TOP/scripts/boot.sh" --kernel noktau --mode boot --timeout 300 \
		--out "$KTAU_OUT/guest-run/noktau" 2>>"$R/boot.log" &&
	   grep -q 'no /proc/ktau' "$KTAU_OUT/guest-run/noktau/results.log"; then
		result PASS "guest: CONFIG_KTAU=n kernel boots, has no /proc/ktau"
	else
		result FAIL "guest: CONFIG_KTAU=n kernel boots, has no /proc/ktau" "see $KTAU_OUT/guest-run/noktau/console.log"
	fi
fi

# --- bench smoke (scripts/bench.sh --smoke): builds the peer kernel
# (ftrace, BPF), boots the baseline, KTAU and peer kernels once each and
# runs every benchmark under every configuration with tiny counts.
step "bench smoke"
"$KTAU_TOP/scripts/bench.sh" --smoke >"$R/bench-smoke.log" 2>&1
if [ -s "$KTAU_OUT/bench-smoke/results.tsv" ]; then
	while IFS=$'\t' read -r st name detail; do
		result "$st" "$name" "$detail"
	done <"$KTAU_OUT/bench-smoke/results.tsv"
else
	tail -n 20 "$R/bench-smoke.log"
	result FAIL "bench smoke: kernels, programs and image build" "see $R/bench-smoke.log"
fi
# --- end bench smoke

finish
