// SPDX-License-Identifier: GPL-2.0
/*
 * ktau-kvm-demo: a tiny virtual machine made with the raw KVM API, for
 * KTAU's kvm group. Each vCPU runs in a thread named as QEMU names them
 * ("CPU 0/KVM", ...), in real mode: it writes one byte to each of PAGES
 * fresh pages of its own (each a nested page fault the first time), then
 * OUTS bytes to port 0x10 (each an exit that this program completes, as
 * QEMU completes port I/O of emulated devices), then halts. A kernel with
 * KTAU shows these exits in each vCPU thread's profile:
 *
 *   ktaud run --save vm.ktau -- ktau-kvm-demo -c 2 -n 100 -p 16
 *   ktaud kvm --input vm.ktau
 *
 * Usage: ktau-kvm-demo [-c VCPUS] [-n OUTS] [-p PAGES] [-w SECONDS]
 * Prints one line per vCPU ("vcpu N: OUTS port writes, PAGES pages,
 * halted") and exits 0, or 1 with the reason on stderr. With -w the vCPU
 * threads stay alive, halted, for SECONDS after those lines (for
 * 'ktaud kvm PID'; the lines are the sign that they are there).
 * Exit codes: 0 ok, 1 KVM failed, 2 bad arguments.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#define MEM_SIZE	0x100000	/* real mode: the first MiB */
#define CODE_GPA	0x1000
#define DATA_SEG	0x2000		/* pages from 0x20000 on */
#define PORT		0x10
#define MAX_VCPUS	8

/*
 * ax = first page's segment, cx = pages, dx = port writes (registers set
 * by KVM_SET_REGS):
 *   l: mov es, ax; mov byte [es:0], 1; add ax, 0x100; loop l
 *   mov cx, dx
 *   m: out PORT, al; loop m
 *   hlt
 */
static const unsigned char code[] = {
	0x8e, 0xc0,
	0x26, 0xc6, 0x06, 0x00, 0x00, 0x01,
	0x05, 0x00, 0x01,
	0xe2, 0xf3,
	0x89, 0xd1,
	0xe6, PORT,
	0xe2, 0xfc,
	0xf4,
};

struct vcpu {
	int index, fd, outs, err;
	struct kvm_run *run;
	pthread_t th;
};

static int vm_fd, run_size, nouts, npages, hold;
/* With -w: the vCPUs wait here until all halted, then until released. */
static pthread_barrier_t halted;

static void vcpu_done(void)
{
	if (hold) {
		pthread_barrier_wait(&halted);
		pthread_barrier_wait(&halted);
	}
}

static void *vcpu_main(void *arg)
{
	struct vcpu *v = arg;
	char name[16];

	snprintf(name, sizeof(name), "CPU %d/KVM", v->index);
	prctl(PR_SET_NAME, name, 0, 0, 0);
	for (;;) {
		if (ioctl(v->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR)
				continue;
			v->err = errno;
			vcpu_done();
			return NULL;
		}
		if (v->run->exit_reason == KVM_EXIT_HLT) {
			vcpu_done();
			return NULL;
		}
		if (v->run->exit_reason != KVM_EXIT_IO || v->run->io.port != PORT) {
			v->err = EPROTO;
			vcpu_done();
			return NULL;
		}
		v->outs++;
	}
}

static int vcpu_setup(struct vcpu *v)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs;

	v->fd = ioctl(vm_fd, KVM_CREATE_VCPU, v->index);
	if (v->fd < 0)
		return -errno;
	v->run = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	if (v->run == MAP_FAILED)
		return -errno;
	if (ioctl(v->fd, KVM_GET_SREGS, &sregs))
		return -errno;
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(v->fd, KVM_SET_SREGS, &sregs))
		return -errno;
	memset(&regs, 0, sizeof(regs));
	regs.rip = CODE_GPA;
	regs.rflags = 0x2;
	regs.rax = DATA_SEG + v->index * npages * 0x100;
	regs.rcx = npages;
	regs.rdx = nouts;
	if (ioctl(v->fd, KVM_SET_REGS, &regs))
		return -errno;
	return 0;
}

static int number(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

int main(int argc, char **argv)
{
	struct kvm_userspace_memory_region region = { 0 };
	struct vcpu vcpus[MAX_VCPUS];
	int kvm, c, i, ret, nvcpus = 1, rc = 0;
	void *mem;

	nouts = 100;
	npages = 16;
	while ((c = getopt(argc, argv, "c:n:p:w:h")) != -1) {
		switch (c) {
		case 'c':
			if (number(optarg, 1, MAX_VCPUS, &nvcpus))
				goto usage;
			break;
		case 'n':
			if (number(optarg, 1, 65535, &nouts))
				goto usage;
			break;
		case 'p':
			if (number(optarg, 1, 64, &npages))
				goto usage;
			break;
		case 'w':
			if (number(optarg, 1, 3600, &hold))
				goto usage;
			break;
		case 'h':
			printf("Usage: ktau-kvm-demo [-c VCPUS (1-%d)] [-n OUTS (1-65535)] "
			       "[-p PAGES (1-64)] [-w SECONDS]\n", MAX_VCPUS);
			return 0;
		default:
			goto usage;
		}
	}
	if (optind < argc)
		goto usage;
	/* Every vCPU's pages below 1 MiB: segments up to 0xf000. */
	if (nvcpus * npages > 200) {
		fprintf(stderr, "ktau-kvm-demo: VCPUS x PAGES must be at most 200\n");
		return 2;
	}
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		fprintf(stderr, "ktau-kvm-demo: cannot open /dev/kvm: %s (a kernel with KVM, "
			"and kvm_amd or kvm_intel loaded, on a CPU with SVM or VMX)\n",
			strerror(errno));
		return 1;
	}
	vm_fd = ioctl(kvm, KVM_CREATE_VM, 0);
	run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (vm_fd < 0 || run_size <= 0 || mem == MAP_FAILED) {
		fprintf(stderr, "ktau-kvm-demo: cannot create the VM: %s\n", strerror(errno));
		return 1;
	}
	memcpy((char *)mem + CODE_GPA, code, sizeof(code));
	region.memory_size = MEM_SIZE;
	region.userspace_addr = (uintptr_t)mem;
	if (ioctl(vm_fd, KVM_SET_USER_MEMORY_REGION, &region)) {
		fprintf(stderr, "ktau-kvm-demo: cannot give the VM memory: %s\n", strerror(errno));
		return 1;
	}
	memset(vcpus, 0, sizeof(vcpus));
	for (i = 0; i < nvcpus; i++) {
		vcpus[i].index = i;
		ret = vcpu_setup(&vcpus[i]);
		if (ret) {
			fprintf(stderr, "ktau-kvm-demo: cannot set up vCPU %d: %s\n", i,
				strerror(-ret));
			return 1;
		}
	}
	if (hold)
		pthread_barrier_init(&halted, NULL, nvcpus + 1);
	for (i = 0; i < nvcpus; i++) {
		ret = pthread_create(&vcpus[i].th, NULL, vcpu_main, &vcpus[i]);
		if (ret) {
			fprintf(stderr, "ktau-kvm-demo: cannot start vCPU %d: %s\n", i,
				strerror(ret));
			return 1;
		}
	}
	if (hold) {
		pthread_barrier_wait(&halted);
		for (i = 0; i < nvcpus; i++)
			printf("vcpu %d: %d port writes, %d pages, halted%s\n", i, vcpus[i].outs,
			       npages, vcpus[i].err ? " (failed)" : "");
		fflush(stdout);
		sleep(hold);
		pthread_barrier_wait(&halted);
	}
	for (i = 0; i < nvcpus; i++) {
		pthread_join(vcpus[i].th, NULL);
		if (vcpus[i].err) {
			fprintf(stderr, "ktau-kvm-demo: vCPU %d: KVM_RUN: %s\n", i,
				strerror(vcpus[i].err));
			rc = 1;
			continue;
		}
		if (!hold)
			printf("vcpu %d: %d port writes, %d pages, halted\n", i, vcpus[i].outs,
			       npages);
	}
	return rc;
usage:
	fprintf(stderr, "ktau-kvm-demo: bad arguments; usage: ktau-kvm-demo [-c VCPUS (1-%d)] "
		"[-n OUTS (1-65535)] [-p PAGES (1-64)] [-w SECONDS]\n", MAX_VCPUS);
	return 2;
}
