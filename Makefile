# SPDX-License-Identifier: GPL-2.0
# KTAU for Linux 6.12: top-level targets. See README.md.

SHELL := /bin/bash
S := scripts

.PHONY: all demo check prepare kernel kernel-noktau image tools series \
	kernel-deb tools-deb system-test system-test-deb shell bench-syscall bench bench-system fuzz clean distclean help

all: kernel tools

help:
	@echo "make demo         build everything, boot the guest, show what KTAU sees"
	@echo "make check        every test; last line 'N passed, N failed, N skipped'"
	@echo "make prepare      prepare the kernel tree (pristine + patches/ + overlay)"
	@echo "make kernel       build the KTAU guest kernel (kernel-noktau: CONFIG_KTAU=n)"
	@echo "make image        build the guest initramfs"
	@echo "make tools        build libktau and ktaud for this host"
	@echo "make series       export the patch series to out/series/"
	@echo "make kernel-deb   Debian kernel packages for real machines (long)"
	@echo "make tools-deb    Debian packages of the tools (ktaud, libktau2, libktau-runtime2, libktau-dev)"
	@echo "make system-test  Debian 12 + systemd + the KTAU packages, booted in QEMU"
	@echo "make system-test-deb  the same with the kernel of make kernel-deb"
	@echo "make shell        boot the guest with a shell on this terminal"
	@echo "make bench-syscall null-syscall overhead in guest instructions (-icount)"
	@echo "make fuzz         long fuzz runs: in-guest ktau_fuzz on the debug kernel and"
	@echo "                  the host parsers' libFuzzer targets (FUZZ_SECONDS=300 each)"
	@echo "make bench         overhead vs CONFIG_KTAU=n, ftrace and eBPF (-icount): out/bench/"
	@echo "                  then bench-system"
	@echo "make bench-system boot-time cost of KTAU on a Debian 12 system boot (-icount)"

prepare:
	$(S)/prepare-tree.sh

kernel:
	$(S)/build-kernel.sh ktau

kernel-noktau:
	$(S)/build-kernel.sh noktau

image: kernel
	$(S)/build-image.sh ktau

tools:
	@if [ -f tools/ktau/Makefile ]; then $(MAKE) -C tools/ktau O=$(CURDIR)/out/host; fi

demo: image
	$(S)/demo.sh

check:
	$(S)/check.sh

series:
	$(S)/series.sh export

kernel-deb:
	$(S)/kernel-deb.sh

tools-deb:
	$(S)/tools-deb.sh

system-test:
	$(S)/system.sh

system-test-deb:
	$(S)/system.sh --flavour debian --timeout 1800

shell: image
	$(S)/boot.sh --mode shell

bench-syscall:
	$(S)/bench-syscall.sh

bench:
	$(S)/bench.sh
	$(S)/system-bench.sh

bench-system:
	$(S)/system-bench.sh

fuzz:
	$(S)/fuzz.sh

clean:
	rm -rf out

# Also drops the build cache (kernel trees, builds, ccache).
distclean: clean
	rm -rf $${KTAU_CACHE:-$$HOME/.cache/ktau}
