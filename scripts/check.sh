#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make check: everything the project tests, in one run.
#   static gates  checkpatch --strict on every patch and overlay source file,
#                 sparse and W=1 over kernel/ktau (with and without trace
#                 mode), a CONFIG_KTAU=n build,
#                 the exported series applied with git am to a pristine tree
#   host tests    tools/ktau (KTAP)
#   guest tests   the selftests in QEMU (KTAP), console scanned for problems
# Every result is counted, and counted apart as a distinct behaviour case
# (a KTAP case of the guest's main pass or of the host tests), a re-run (the
# same cases in the 2-CPU pass, smp:, and on the debug kernel, debug:) or a
# gate (lint, builds, checkpatch, smoke, the verdicts on each run as a
# whole); the classes are check_class in scripts/check-lib.sh. The last line
# is "N passed, N failed, N skipped" (all results) and the exit status is 1
# when anything failed.
. "$(dirname "$0")/lib.sh"
. "$KTAU_TOP/scripts/check-lib.sh"
set +e

R=$KTAU_OUT/check
rm -rf "$R"
mkdir -p "$R"
# The guest runs of an earlier check must not be read as this one's.
rm -rf "$KTAU_OUT"/guest-run/{check,smp,tsc-unstable,bootparam,bootparam-bad,debug,noktau,system}
t0=$(date +%s)

result() {	# PASS|FAIL|SKIP name [detail]
	case $1 in
	PASS|FAIL|SKIP) ;;
	*) set -- FAIL "$2" "status was '$1', not PASS, FAIL or SKIP: ${3:-}" ;;
	esac
	printf '%s: %s%s\n' "$1" "$2" "${3:+ ($3)}"
	printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}" >>"$R/results.tsv"
}
# Verdict lines (PASS|FAIL|SKIP<TAB>name<TAB>detail) on stdin, each a result.
count_verdicts() {
	local st name detail
	while IFS=$'\t' read -r st name detail; do
		result "$st" "$name" "$detail"
	done
}
step() { printf '== %s [%ss]\n' "$*" "$(( $(date +%s) - t0 ))"; }
# The counts per class and, last, "N passed, N failed, N skipped".
finish() {
	# The failures again, with their details, where a reader of the end
	# of the output (CI shows the tail) sees them.
	if grep -q '^FAIL' "$R/results.tsv" 2>/dev/null; then
		printf '\n== failures, repeated from above\n'
		awk -F'\t' '$1 == "FAIL" { printf "FAIL: %s%s\n", $2, ($3 != "" ? " (" $3 ")" : "") }' \
			"$R/results.tsv"
	fi
	printf '\ncheck took %ss; results in %s/results.tsv\n' "$(( $(date +%s) - t0 ))" "$R"
	check_summary "$R/results.tsv"
	exit
}

step "dependencies"
if ! "$KTAU_TOP/scripts/deps.sh" all; then
	result FAIL "dependencies installed" "see $KTAU_OUT/logs/apt.log"
	finish
fi

# The check machinery itself: the verdict functions above on synthetic
# KTAP, console and results files, each failure mode seen to fail.
step "check machinery"
bash "$KTAU_TOP/scripts/tests/check-selftest.sh" >"$R/check-selftest.log" 2>&1
count_verdicts < <(parse_ktap "$R/check-selftest.log" "check machinery: ")

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
		grep -E '^(ERROR|WARNING|CHECK)' "$R/checkpatch-$n.log" | sed -n 1,5p
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
		grep -E '^(ERROR|WARNING|CHECK)' "$log" | sed -n 1,5p
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

# The ABI version the documentation names is the header's.
abi=$(sed -n 's/^#define KTAU_ABI_VERSION_MAJOR[[:space:]]*\([0-9]*\)$/\1/p' \
	"$KTAU_TOP/include/uapi/linux/ktau.h").$(sed -n \
	's/^#define KTAU_ABI_VERSION_MINOR[[:space:]]*\([0-9]*\)$/\1/p' "$KTAU_TOP/include/uapi/linux/ktau.h")
abi_abi=$(awk '/currently::/ { f = 1; next } f && NF { print $1; exit }' \
	"$KTAU_TOP/Documentation/ABI/testing/procfs-ktau")
abi_rst=$(sed -n 's/.*MAJOR.MINOR``[^`]*(now ``\([0-9.]*\)``).*/\1/p' "$KTAU_TOP/Documentation/trace/ktau.rst")
if [ "$abi_abi" = "$abi" ] && [ "$abi_rst" = "$abi" ]; then
	result PASS "the documentation names the ABI version of the header ($abi)"
else
	result FAIL "the documentation names the ABI version of the header ($abi)" \
		"procfs-ktau says '$abi_abi', ktau.rst '$abi_rst'"
fi

step "kernels"
kernel_ok=0
if "$KTAU_TOP/scripts/build-kernel.sh" ktau; then
	result PASS "build: KTAU kernel"
	# allnoconfig leaves default-y options off: the fragment must
	# name it, or the guest tests would skip trace mode's tests.
	if grep -qx 'CONFIG_KTAU_TRACE=y' "$KTAU_BUILD/ktau/.config"; then
		result PASS "build: KTAU kernel has trace mode (CONFIG_KTAU_TRACE=y)"
	else
		result FAIL "build: KTAU kernel has trace mode (CONFIG_KTAU_TRACE=y)" \
			"not in $KTAU_BUILD/ktau/.config"
	fi
	count_verdicts < <(build_warnings_verdict "build: KTAU kernel: no warning in KTAU's files" \
		"$KTAU_OUT/logs/kernel-ktau.log")
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
		grep -E '(warning|error):' "$R/static.log" | sed -n 1,5p
		result FAIL "W=1: kernel/ktau builds without warnings" "see $R/static.log"
	fi
	if [ "$sp" -eq 0 ] && grep -q 'CHECK' "$R/sparse.log"; then
		result PASS "sparse: kernel/ktau"
	else
		grep -E '(warning|error):' "$R/sparse.log" | sed -n 1,5p
		result FAIL "sparse: kernel/ktau" "see $R/sparse.log"
	fi
else
	result FAIL "W=1: kernel/ktau builds without warnings" "static build dir did not prepare"
	result FAIL "sparse: kernel/ktau" "static build dir did not prepare"
fi
# Without trace mode (CONFIG_KTAU_TRACE=n): kernel/ktau at W=1, and the
# files outside it that its header's stubs change (fork.c calls
# ktau_post_fork()). make bench boots this kernel whole (ktau-*-notrace).
if "$KTAU_TOP/scripts/build-kernel.sh" notrace prepare >/dev/null 2>&1; then
	S=$KTAU_BUILD/notrace
	find "$S/kernel/ktau" -name '*.o' -delete 2>/dev/null
	# HOSTCC as build-kernel.sh has it: another would rebuild objtool,
	# and then every object of make bench's next build of this kernel.
	make -C "$KTAU_SRC" O="$S" -j"$KTAU_JOBS" CC="ccache gcc" HOSTCC="ccache gcc" W=1 kernel/ktau/ \
		>"$R/notrace.log" 2>&1
	src=$?
	make -C "$KTAU_SRC" O="$S" -j"$KTAU_JOBS" CC="ccache gcc" HOSTCC="ccache gcc" kernel/fork.o \
		>>"$R/notrace.log" 2>&1 ||
		src=1
	w1=$(grep -cE '(warning|error):' "$R/notrace.log")
	if [ $src -eq 0 ] && [ "$w1" -eq 0 ] && grep -qx '# CONFIG_KTAU_TRACE is not set' "$S/.config" &&
	   [ ! -e "$S/kernel/ktau/trace.o" ] && [ -e "$S/kernel/ktau/core.o" ]; then
		result PASS "W=1: kernel/ktau builds without trace mode (CONFIG_KTAU_TRACE=n)"
	else
		grep -E '(warning|error):' "$R/notrace.log" | sed -n 1,5p
		result FAIL "W=1: kernel/ktau builds without trace mode (CONFIG_KTAU_TRACE=n)" \
			"see $R/notrace.log and $S/.config"
	fi
	# Trace mode compiled in and off costs profile mode nothing: the
	# hooks' functions are the same instructions in the KTAU kernel that
	# the guests boot and in this one, built as that one was (not W=1).
	make -C "$KTAU_SRC" O="$S" -j"$KTAU_JOBS" CC="ccache gcc" HOSTCC="ccache gcc" kernel/ktau/ \
		>>"$R/notrace.log" 2>&1
	if "$KTAU_TOP/scripts/same-hooks.sh" "$KTAU_BUILD/ktau" "$S" >"$R/same-hooks.log" 2>&1; then
		result PASS "the hooks compile the same with and without trace mode" \
			"$(tail -n 1 "$R/same-hooks.log")"
	else
		sed -n 1,5p "$R/same-hooks.log"
		result FAIL "the hooks compile the same with and without trace mode" "see $R/same-hooks.log"
	fi
else
	result FAIL "W=1: kernel/ktau builds without trace mode (CONFIG_KTAU_TRACE=n)" \
		"notrace build dir did not prepare"
fi

# A script of PASS:/FAIL: lines, which must print both of its two checks.
two_checks() {	# name script
	"$KTAU_TOP/scripts/$2" >"$R/$1.out" 2>"$R/$1.log"
	grep -q . "$R/$1.log" && cat "$R/$1.log"
	while read -r st rest; do
		case $st in
		PASS:) result PASS "${rest}" ;;
		FAIL:) result FAIL "${rest}" ;;
		esac
	done <"$R/$1.out"
	[ "$(grep -c '^\(PASS\|FAIL\):' "$R/$1.out")" -eq 2 ] ||
		result FAIL "$1: scripts/$2 ran both checks" "see $R/$1.log"
}
# The series must build on mainline 6.12.y too, not only on Debian's tree.
step "mainline 6.12"
two_checks mainline mainline-check.sh
# And where there is no TSC: KTAU's Kconfig allows every 64-bit
# architecture with the generic entry code.
step "another architecture (riscv64)"
two_checks riscv64 cross-check.sh

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
			--no-rolestats --subsystem --no-email -f "$f" 2>/dev/null) | grep '^KTAU' >/dev/null ||
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
			grep -E '^(ERROR|WARNING|CHECK)' "$R/checkpatch-series-$n.log" | sed -n 1,5p
			result FAIL "checkpatch: series/$n" "see $R/checkpatch-series-$n.log"
		fi
	done
else
	tail -n 20 "$R/series.log"
	result FAIL "series: git am on pristine $KTAU_SRCPKG gives the prepared tree" "see $R/series.log"
fi

step "host tests"
if [ -f "$KTAU_TOP/tools/ktau/Makefile" ]; then
	env -u KTAU_HOST_ONLY make -C "$KTAU_TOP/tools/ktau" O="$KTAU_OUT/host" check >"$R/host.log" 2>&1
	hrc=$?
	# Two KTAP documents: tools/ktau's tests, then the strict checker's.
	count_verdicts < <(parse_ktap "$R/host.log" "host: " "host tests: " docs=2)
	if [ $hrc -ne 0 ] && ! grep -q '^not ok' "$R/host.log"; then
		tail -n 20 "$R/host.log"
		result FAIL "host tests: tools/ktau builds and its tests run" "see $R/host.log"
	fi
fi

# The verdicts on one guest run (boot.sh --out guest-run/NAME): its KTAP,
# every program it was asked to run present and as planned, finished,
# console clean, kernel not tainted, [at least MIN-CPUS CPUs online], and
# every TAU directory its tests wrote through the strict checker.
guest_run() {	# prefix run-name boot-rc expected-programs [min-cpus]
	local d=$KTAU_OUT/guest-run/$2
	count_verdicts < <(parse_ktap "$d/results.log" "$1: " "$1: " "$4")
	count_verdicts < <(run_verdicts "$1" "$d/console.log" "$d/results.log" "$3")
	[ -z "${5:-}" ] || count_verdicts < <(cpus_verdict "$1" "$d/results.log" "$5")
	count_verdicts < <(taucheck_archives "$d/results.log" "$R/archives-$2" "$1" \
		"$KTAU_OUT/host/ktau-taucheck")
}

step "guest"
image_ok=0 progs=""
if [ $kernel_ok = 1 ] && "$KTAU_TOP/scripts/build-image.sh" ktau >"$R/image.log" 2>&1; then
	image_ok=1
	# What the guest must report: every test program of the image.
	progs=$(image_programs "$KTAU_OUT/guest/root" | tr '\n' ' ')
	[ -n "$progs" ] ||
		result FAIL "guest: the image has test programs" "none in $KTAU_OUT/guest/root/ktau/{selftests,tests}; see $R/image.log"
	"$KTAU_TOP/scripts/boot.sh" --kernel ktau --mode check --timeout "${KTAU_GUEST_TIMEOUT:-900}" \
		--out "$KTAU_OUT/guest-run/check" 2>"$R/boot.log"
	brc=$?
	cat "$R/boot.log"
	guest_run guest check $brc "$progs"
else
	[ $kernel_ok = 1 ] && { tail -n 20 "$R/image.log"; }
	result FAIL "guest: image built and booted" "kernel or image build failed; see $R/image.log"
fi
# A guest run of the KTAU kernel: NAME (its directory under guest-run/
# and the prefix of its results), TIMEOUT, CPUS, kernel command line with
# a ktautests= list, which must name only programs of the image. With
# more than one CPU, fewer online fails the run.
extra_pass() {
	local unknown brc expect
	unknown=$(ktautests_unknown "$4" "$KTAU_OUT/guest/root" | tr '\n' ' ')
	if [ -n "$unknown" ]; then
		result FAIL "$1: ktautests= names only programs of the image" \
			"not in the image: ${unknown}(fix the list in scripts/check.sh)"
	else
		result PASS "$1: ktautests= names only programs of the image"
	fi
	"$KTAU_TOP/scripts/boot.sh" --kernel ktau --mode check --smp "$3" --timeout "$2" \
		--append "$4" --out "$KTAU_OUT/guest-run/$1" ${5:-} 2>>"$R/boot.log"
	brc=$?
	# Multi-threaded TCG only: QEMU may run a stale translation of text
	# the kernel itself patches while it boots (a static key, before any
	# test: "Oops: int3" in sched_clock_cpu seen once, 2026-11-28). One
	# more boot then, said in a result line; a crash once a test has
	# begun, or twice, fails as any other.
	if [ "${5:-}" = --mttcg ] && grep -q 'Oops: int3' "$KTAU_OUT/guest-run/$1/console.log" 2>/dev/null &&
	   ! grep -q '^# ktau-selftest-begin' "$KTAU_OUT/guest-run/$1/results.log" 2>/dev/null; then
		cp "$KTAU_OUT/guest-run/$1/console.log" "$R/$1-first-boot-console.log"
		"$KTAU_TOP/scripts/boot.sh" --kernel ktau --mode check --smp "$3" --timeout "$2" \
			--append "$4" --out "$KTAU_OUT/guest-run/$1" ${5:-} 2>>"$R/boot.log"
		brc=$?
		result PASS "$1: booted again after QEMU's stale patched text at boot" \
			"the first boot's console: $R/$1-first-boot-console.log"
	fi
	expect=$(ktautests_list "$4" | tr '\n' ' ')
	# ktauhold: the guest reports the holder's checks as program ktau-hold.
	case " $4 " in *" ktauhold "*) expect="${expect}ktau-hold" ;; esac
	if [ "$3" -gt 1 ]; then
		guest_run "$1" "$1" $brc "$expect" "$3"
	else
		guest_run "$1" "$1" $brc "$expect"
	fi
}
# Two CPUs: readers, hotplug and group switches across CPUs (the tests
# whose figures do not depend on having the host to themselves), and the
# tools' guest tests; then with the TSC marked unstable, where routines
# that change CPU are rebased.
smp_append="ktautests=ktau_churn,ktau_stress,ktau_shared,ktau_syscall,ktau_exit,ktau_probe,ktau_modules,ktau_clock,ktau_sched,ktau_irq,ktau_sample,ktau_control,ktau_overflow,drill-tests,ktaud-tests,merge-tests,sample-tests,python-tests,ktau_kvm"
tsc_append="tsc=unstable ktautests=ktau_clock,ktau_stress,ktau_churn"
# Two CPUs that really run at the same time (multi-threaded TCG; every
# other pass runs one host thread, so readers and writers only
# interleave): readers against writers, exit storms, shared-page readers,
# sampling. Nothing may patch kernel text there (QEMU may run a stale
# translation of a site another vCPU patched: "Oops: int3" seen with
# ktau_churn), so no test of the pass switches a group, and ktauhold has
# the guest hold the keys the tests take and drop (shared pages, trace
# sessions, perf's) from before the first test; the guest reports that
# as program ktau-hold, with the groups unchanged all along (read every
# 50 ms) and the vCPUs seen running at the same time (2 spinners on 2
# CPUs do at least 1.25 times the work of one, best of three).
mttcg_append="tsc=reliable ktauhold ktautests=ktau_stress,ktau_exit,ktau_shared,ktau_sample,ktau_syscall,ktau_sched,ktau_irq,ktau_trace,ktau_clock,ktau_events"
# The boot parameters: two groups and an unknown name, the smallest
# table; then no group and a size out of range (ignored, 64). ktau_boot
# works out what to expect from /proc/cmdline. The second, the last boot
# of the pass, also fills the function registry (ktautest.fill_registry),
# which stays full for the rest of a boot.
bootparam_append="ktau=syscall,sched,nosuchgroup ktau.slots=16 ktautests=ktau_boot"
bootparam2_append="ktau=none ktau.slots=256 ktautest.fill_registry ktautests=ktau_boot"
step "guest, 2 CPUs"
if [ $image_ok = 1 ]; then
	extra_pass smp 900 2 "$smp_append"
	step "guest, 2 CPUs, tsc=unstable"
	extra_pass tsc-unstable 300 2 "$tsc_append"
	step "guest, 2 CPUs in parallel (multi-threaded TCG)"
	extra_pass mttcg 600 2 "$mttcg_append" --mttcg
	step "guest, boot parameters"
	extra_pass bootparam 180 1 "$bootparam_append"
	extra_pass bootparam-bad 180 1 "$bootparam2_append"
else
	result FAIL "smp: guest run" "no guest image (see the guest step above)"
fi
# The same tests on a debug kernel (KASAN, lockdep, UBSAN, kmemleak, list
# and object debugging, SLUB debugging): any report fails the run. It ends
# with a kmemleak scan, reported as the program "kmemleak".
step "debug kernel"
if "$KTAU_TOP/scripts/build-kernel.sh" debug; then
	result PASS "build: debug kernel (KASAN, lockdep, UBSAN, kmemleak)"
	count_verdicts < <(build_warnings_verdict "build: debug kernel: no warning in KTAU's files" \
		"$KTAU_OUT/logs/kernel-debug.log")
	if [ $image_ok = 1 ]; then
		"$KTAU_TOP/scripts/boot.sh" --kernel debug --mode check --timeout "${KTAU_GUEST_TIMEOUT:-1800}" \
			--append ktaudebug=1 --out "$KTAU_OUT/guest-run/debug" 2>>"$R/boot.log"
		brc=$?
		guest_run debug debug $brc "$progs kmemleak"
	else
		result FAIL "debug: guest run" "no guest image (see the guest step above)"
	fi
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
else
	result FAIL "guest: CONFIG_KTAU=n kernel boots, has no /proc/ktau" \
		"not booted: no CONFIG_KTAU=n kernel or no guest image (see the build and guest steps above)"
fi

# The system test (scripts/system.sh): a Debian 12 system with systemd,
# the KTAU kernel (small configuration) and the tools installed from their
# Debian packages, booted in QEMU; its checks run as a service at boot.
# Its base system comes from Debian's mirror with mmdebstrap: the network
# is needed the first time and whenever its package list changes.
step "system test (Debian 12 with systemd, packages)"
"$KTAU_TOP/scripts/system.sh" --out "$KTAU_OUT/guest-run/system" 2>"$R/system.log"
src=$?
cat "$R/system.log"
if [ $src = 3 ]; then
	result FAIL "system: packages, base system and image built" "see $R/system.log"
else
	result PASS "system: packages, base system and image built"
	guest_run system system $src ktau_system
fi

# --- bench smoke (scripts/bench.sh --smoke): builds the peer kernel
# (ftrace, BPF), boots the baseline, KTAU and peer kernels once each and
# runs every benchmark under every configuration with tiny counts.
step "bench smoke"
rm -f "$KTAU_OUT/bench-smoke/results.tsv"	# an earlier run's must not count
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

# Every case that some pass skipped ran in another (a designed skip).
count_verdicts < <(skips_ran_elsewhere "$R/results.tsv")
finish
