// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU's kvm group (ABI 1.4): a tiny VM made with the raw KVM API runs in
 * the test's own thread, and that thread's profile must show, under its
 * ioctl() calls, the time in guest mode and exactly the exits the guest
 * caused, by reason, as many as KVM's own statistics count. Then the
 * edges: the group switched while the vCPU runs, a vCPU thread killed
 * while it runs, a VM closed while its thread is profiled.
 *
 * Runs where /dev/kvm works: in the test guest, QEMU (TCG, -cpu max)
 * emulates AMD SVM with nested paging. A CPU with SVM or VMX but no
 * /dev/kvm fails; a CPU with neither skips.
 */
#define _GNU_SOURCE
#include <linux/kvm.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "ktau_util.h"

#define KTAU_ID_IOCTL	(KTAU_ID_SYSCALL_BASE + SYS_ioctl)
#define GUEST_MEM	0x100000	/* real mode: the first MiB */
#define CODE_GPA	0x1000
#define IO_PORT		0x10
#define IO_EXITS	50
#define NPF_PAGES	64		/* pages from 0x20000 on */

struct vm {
	int kvm, vm, vcpu, stats;
	struct kvm_run *run;
	size_t run_size;
	void *mem;
};

/* Whether the CPU can run KVM guests at all (/proc/cpuinfo flags). */
static bool cpu_has_virt(void)
{
	char *t = ktau_slurp("/proc/cpuinfo", NULL);
	bool yes = t && (strstr(t, " svm") || strstr(t, " vmx"));

	free(t);
	return yes;
}

static void vm_init(struct vm *v)
{
	memset(v, 0, sizeof(*v));
	v->kvm = -1;
	v->vm = -1;
	v->vcpu = -1;
	v->stats = -1;
}

static void vm_close(struct vm *v)
{
	if (v->run && v->run != MAP_FAILED)
		munmap(v->run, v->run_size);
	if (v->mem && v->mem != MAP_FAILED)
		munmap(v->mem, GUEST_MEM);
	if (v->stats >= 0)
		close(v->stats);
	if (v->vcpu >= 0)
		close(v->vcpu);
	if (v->vm >= 0)
		close(v->vm);
	if (v->kvm >= 0)
		close(v->kvm);
	vm_init(v);
}

/*
 * A VM with GUEST_MEM of memory at guest physical 0 (not populated: the
 * guest's first touch of a page is a nested page fault) and one vCPU in
 * real mode at CODE_GPA running @code. 0, or -errno with v closed.
 */
static int vm_open_with(struct vm *v, const unsigned char *code, size_t len,
			bool irqchip)
{
	struct kvm_userspace_memory_region region = { 0 };
	struct kvm_sregs sregs;
	struct kvm_regs regs = { 0 };
	int n, err;

	vm_init(v);
	v->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (v->kvm < 0)
		return -errno;
	err = -EINVAL;
	if (ioctl(v->kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		goto fail;
	v->vm = ioctl(v->kvm, KVM_CREATE_VM, 0);
	if (v->vm < 0)
		goto fail_errno;
	v->mem = mmap(NULL, GUEST_MEM, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (v->mem == MAP_FAILED)
		goto fail_errno;
	memcpy((char *)v->mem + CODE_GPA, code, len);
	region.memory_size = GUEST_MEM;
	region.userspace_addr = (unsigned long)v->mem;
	if (ioctl(v->vm, KVM_SET_USER_MEMORY_REGION, &region))
		goto fail_errno;
	/* An in-kernel local APIC: a halted vCPU then waits in the kernel. */
	if (irqchip && ioctl(v->vm, KVM_CREATE_IRQCHIP, 0))
		goto fail_errno;
	v->vcpu = ioctl(v->vm, KVM_CREATE_VCPU, 0);
	if (v->vcpu < 0)
		goto fail_errno;
	n = ioctl(v->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (n <= 0)
		goto fail_errno;
	v->run_size = n;
	v->run = mmap(NULL, v->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      v->vcpu, 0);
	if (v->run == MAP_FAILED)
		goto fail_errno;
	if (ioctl(v->vcpu, KVM_GET_SREGS, &sregs))
		goto fail_errno;
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(v->vcpu, KVM_SET_SREGS, &sregs))
		goto fail_errno;
	regs.rip = CODE_GPA;
	regs.rflags = 0x2;
	if (ioctl(v->vcpu, KVM_SET_REGS, &regs))
		goto fail_errno;
	v->stats = ioctl(v->vcpu, KVM_GET_STATS_FD, NULL);
	if (v->stats < 0)
		goto fail_errno;
	return 0;
fail_errno:
	err = -errno;
fail:
	vm_close(v);
	return err;
}

static int vm_open(struct vm *v, const unsigned char *code, size_t len)
{
	return vm_open_with(v, code, len, false);
}

/* KVM's own count @name of the vCPU (binary stats), or -1. */
static long long vcpu_stat(struct vm *v, const char *name)
{
	struct kvm_stats_header h;
	long long val = -1;
	size_t dsz;
	char *d;
	__u32 i;

	if (pread(v->stats, &h, sizeof(h), 0) != sizeof(h))
		return -1;
	dsz = sizeof(struct kvm_stats_desc) + h.name_size;
	d = malloc(dsz * h.num_desc);
	if (!d || pread(v->stats, d, dsz * h.num_desc, h.desc_offset) !=
		  (ssize_t)(dsz * h.num_desc))
		goto out;
	for (i = 0; i < h.num_desc; i++) {
		struct kvm_stats_desc *sd = (void *)(d + i * dsz);
		__u64 x;

		if (strcmp(sd->name, name))
			continue;
		if (pread(v->stats, &x, sizeof(x), h.data_offset + sd->offset) ==
		    sizeof(x))
			val = x;
		break;
	}
out:
	free(d);
	return val;
}

/*
 * Run the vCPU until it halts: each port write exits to user space, which
 * carries on. The number of KVM_RUN calls, or -errno; *outs gets the
 * port writes seen.
 */
static int vm_run_to_hlt(struct vm *v, int *outs)
{
	int runs = 0;

	*outs = 0;
	for (;;) {
		runs++;
		if (ioctl(v->vcpu, KVM_RUN, 0) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		switch (v->run->exit_reason) {
		case KVM_EXIT_IO:
			if (v->run->io.direction != KVM_EXIT_IO_OUT ||
			    v->run->io.port != IO_PORT)
				return -EPROTO;
			(*outs)++;
			break;
		case KVM_EXIT_HLT:
			return runs;
		default:
			ktau_log("unexpected KVM exit %u", v->run->exit_reason);
			return -EPROTO;
		}
	}
}

/*
 * Real-mode code: IO_EXITS writes to IO_PORT, then hlt.
 *   mov cx, IO_EXITS; l: out IO_PORT, al; loop l; hlt
 */
static const unsigned char io_code[] = {
	0xb9, IO_EXITS & 0xff, IO_EXITS >> 8,
	0xe6, IO_PORT,
	0xe2, 0xfc,
	0xf4,
};

/*
 * Real-mode code: a byte written to each of NPF_PAGES fresh 4 KiB pages
 * from 0x20000 (segment 0x2000, + 0x100 a page), then one port write and
 * hlt.
 *   mov cx, NPF_PAGES; mov ax, 0x2000
 *   l: mov es, ax; mov byte [es:0], 1; add ax, 0x100; loop l
 *   out IO_PORT, al; hlt
 */
static const unsigned char npf_code[] = {
	0xb9, NPF_PAGES & 0xff, NPF_PAGES >> 8,
	0xb8, 0x00, 0x20,
	0x8e, 0xc0,
	0x26, 0xc6, 0x06, 0x00, 0x00, 0x01,
	0x05, 0x00, 0x01,
	0xe2, 0xf3,
	0xe6, IO_PORT,
	0xf4,
};

/* Real-mode code: jmp $ (exits only on host interrupts). */
static const unsigned char spin_code[] = { 0xeb, 0xfe };

static void kvm_ready(struct __test_metadata *_metadata)
{
	struct vm v;
	int ret;

	ktau_must_have_ktau(_metadata);
	if (access("/dev/kvm", F_OK) && !cpu_has_virt())
		SKIP(return, "no SVM or VMX on this CPU: no KVM guest can run");
	ret = vm_open(&v, io_code, sizeof(io_code));
	ASSERT_EQ(0, ret) TH_LOG("cannot make a VM: %s (KVM configured? kvm_amd, kvm_intel?)",
				 strerror(-ret));
	vm_close(&v);
}

/* The delta of every kvm routine between two records of one thread. */
struct kvm_sum {
	struct ktau_val guest, ioio, hlt, npf, ioctl;
	__u64 exits, exits_incl;	/* every kvm_exit:* routine */
	__u64 other_excl;		/* kvm_exit:* but IOIO, HLT, NPF */
};

static void kvm_sum(struct __test_metadata *_metadata, const struct ktau_task_rec *a,
		    const struct ktau_task_rec *b, struct kvm_sum *s)
{
	struct ktau_funcs fs = { 0 };
	const struct ktau_func *f;
	size_t i;

	memset(s, 0, sizeof(*s));
	ASSERT_EQ(0, ktau_funcs_load(&fs));
	s->guest = ktau_val_delta(a, b, KTAU_ID_KVM_GUEST);
	s->ioctl = ktau_val_delta(a, b, KTAU_ID_IOCTL);
	f = ktau_func_by_id(&fs, KTAU_ID_KVM_GUEST);
	ASSERT_NE(NULL, f);
	EXPECT_STREQ("kvm", f->group);
	EXPECT_STREQ("kvm_guest", f->name);
	for (i = 0; i < fs.n; i++) {
		struct ktau_val d;

		f = &fs.v[i];
		if (strcmp(f->group, "kvm") || f->id == KTAU_ID_KVM_GUEST)
			continue;
		EXPECT_EQ(0, strncmp(f->name, "kvm_exit", 8)) TH_LOG("%s", f->name);
		d = ktau_val_delta(a, b, f->id);
		s->exits += d.count;
		s->exits_incl += d.incl;
		/* The kvm_exit tracepoint's names (SVM, VMX), uppercased. */
		if (!strcmp(f->name, "kvm_exit:IO") ||
		    !strcmp(f->name, "kvm_exit:IO_INSTRUCTION"))
			s->ioio = d;
		else if (!strcmp(f->name, "kvm_exit:HLT"))
			s->hlt = d;
		else if (!strcmp(f->name, "kvm_exit:NPF") ||
			 !strcmp(f->name, "kvm_exit:EPT_VIOLATION"))
			s->npf = d;
		else
			s->other_excl += d.excl;
		if (d.count)
			TH_LOG("%s: %llu calls, incl %llu ns, excl %llu ns", f->name,
			       d.count, d.incl, d.excl);
	}
	TH_LOG("kvm_guest: %llu calls, %llu ns; ioctl: %llu calls, incl %llu ns",
	       s->guest.count, s->guest.incl, s->ioctl.count, s->ioctl.incl);
	ktau_funcs_free(&fs);
}

/* Snapshot of the calling thread into *s; its record. */
static const struct ktau_task_rec *snap_self(struct __test_metadata *_metadata, int fd,
					     struct ktau_snap *s)
{
	const struct ktau_task_rec *r;

	if (ktau_snap(fd, s, KTAU_SNAP_SELF, NULL, 0)) {
		TH_LOG("snapshot of self failed");
		return NULL;
	}
	r = ktau_snap_find(s, gettid());
	if (!r)
		TH_LOG("no record of self");
	return r;
}

/*
 * One measured run of @code to its hlt, between two snapshots of the
 * calling thread, checked against KVM's own counts: exactly the guest's
 * exits, each stay in guest mode ending with an exit, guest mode and
 * exits nested in the ioctl()s. *s gets the deltas, *outs the port
 * writes.
 */
static void measured_run(struct __test_metadata *_metadata, const unsigned char *code,
			 size_t len, struct kvm_sum *s, int *outs)
{
	const struct ktau_task_rec *a, *b;
	struct ktau_snap s1 = { 0 }, s2 = { 0 };
	long long io0, exits0, halt0, pf0;
	int fd, runs;
	struct vm v;

	ASSERT_EQ(0, vm_open(&v, code, len));
	fd = ktau_must_open_profiles(_metadata);
	io0 = vcpu_stat(&v, "io_exits");
	exits0 = vcpu_stat(&v, "exits");
	halt0 = vcpu_stat(&v, "halt_exits");
	pf0 = vcpu_stat(&v, "pf_taken");
	ASSERT_LE(0, io0);
	ASSERT_LE(0, exits0);
	ASSERT_LE(0, halt0);
	ASSERT_LE(0, pf0);
	a = snap_self(_metadata, fd, &s1);
	ASSERT_NE(NULL, a);
	runs = vm_run_to_hlt(&v, outs);
	ASSERT_LT(0, runs) TH_LOG("KVM_RUN: %s", strerror(-runs));
	b = snap_self(_metadata, fd, &s2);
	ASSERT_NE(NULL, b);
	kvm_sum(_metadata, a, b, s);
	/* Exactly the guest's exits, as KVM counts them. */
	EXPECT_EQ((__u64)*outs, s->ioio.count);
	EXPECT_EQ((__u64)(vcpu_stat(&v, "io_exits") - io0), s->ioio.count);
	EXPECT_EQ(1, s->hlt.count);
	EXPECT_EQ((__u64)(vcpu_stat(&v, "halt_exits") - halt0), s->hlt.count);
	EXPECT_EQ((__u64)(vcpu_stat(&v, "exits") - exits0), s->exits);
	EXPECT_EQ((__u64)(vcpu_stat(&v, "pf_taken") - pf0), s->npf.count);
	/* Each stay in guest mode ends with an exit. */
	EXPECT_EQ(s->exits, s->guest.count);
	EXPECT_LT(0, s->guest.excl);
	EXPECT_EQ(s->guest.incl, s->guest.excl);
	/* The KVM_RUN calls, and the snapshot's own ioctl. */
	EXPECT_EQ((__u64)runs + 1, s->ioctl.count);
	/* Guest mode and exits nest in the ioctl()s. */
	EXPECT_GE(s->ioctl.incl, s->guest.incl + s->exits_incl);
	/* Nothing left open, nothing closed twice. */
	EXPECT_EQ(a->unmatched, b->unmatched);
	ktau_snap_free(&s1);
	ktau_snap_free(&s2);
	close(fd);
	vm_close(&v);
}

TEST(port_writes_and_hlt_are_exact)
{
	struct kvm_sum s;
	int outs;

	kvm_ready(_metadata);
	measured_run(_metadata, io_code, sizeof(io_code), &s, &outs);
	EXPECT_EQ(IO_EXITS, outs);
}

TEST(nested_page_faults_match_kvm_stats)
{
	struct kvm_sum s;
	int outs;

	kvm_ready(_metadata);
	measured_run(_metadata, npf_code, sizeof(npf_code), &s, &outs);
	EXPECT_EQ(1, outs);
	/* Every page written, and the code's page, fault once at least. */
	EXPECT_LE(NPF_PAGES + 1, s.npf.count);
}

struct toggler {
	int stop;	/* __atomic */
	int flips;
};

static void *toggle_fn(void *p)
{
	struct toggler *t = p;

	while (!__atomic_load_n(&t->stop, __ATOMIC_RELAXED)) {
		if (ktau_control("kvm off") || ktau_control("kvm on"))
			break;
		t->flips++;
		/*
		 * Each switch patches code on every CPU and asks every user
		 * task to check its frames: a few hundred are enough.
		 */
		usleep(1000);
	}
	return NULL;
}

/*
 * The group switched off and on while the vCPU runs, then left on: a
 * measured run afterwards is exact again (no frame of the switching
 * stays open to swallow it).
 */
TEST(group_switched_while_running)
{
	struct toggler t = { 0 };
	int i, outs, ret;
	struct kvm_sum s;
	pthread_t th;
	struct vm v;

	kvm_ready(_metadata);
	if (geteuid())
		SKIP(return, "switching groups needs root");
	ASSERT_EQ(0, pthread_create(&th, NULL, toggle_fn, &t));
	for (i = 0; i < 20; i++) {
		ASSERT_EQ(0, vm_open(&v, io_code, sizeof(io_code)));
		ret = vm_run_to_hlt(&v, &outs);
		EXPECT_LT(0, ret);
		vm_close(&v);
	}
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	TH_LOG("group switched %d times during 20 VMs", t.flips);
	EXPECT_LT(0, t.flips);
	ASSERT_EQ(0, ktau_control("kvm on"));
	measured_run(_metadata, io_code, sizeof(io_code), &s, &outs);
	EXPECT_EQ(IO_EXITS, outs);
}

static void on_usr1(int sig)
{
	(void)sig;
}

struct kicker {
	pthread_t target;
	unsigned int ms;
};

static void *kick_fn(void *p)
{
	struct kicker *k = p;

	usleep(k->ms * 1000);
	pthread_kill(k->target, SIGUSR1);
	return NULL;
}

/*
 * A vCPU that halts with interrupts off and an in-kernel local APIC waits
 * in the kernel until a signal ends KVM_RUN: the wait is off-CPU time
 * (sched_blocked) nested in the HLT exit, which lasts until KVM_RUN
 * returns.
 */
TEST(halted_vcpu_waits_in_its_hlt_exit)
{
	static const unsigned char cli_hlt[] = { 0xfa, 0xf4 };
	const struct ktau_task_rec *a, *b;
	struct ktau_snap s1 = { 0 }, s2 = { 0 };
	struct kicker k = { .ms = 200 };
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct ktau_val blocked;
	struct kvm_sum s;
	pthread_t th;
	struct vm v;
	int fd, ret;

	kvm_ready(_metadata);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));	/* no SA_RESTART */
	ASSERT_EQ(0, vm_open_with(&v, cli_hlt, sizeof(cli_hlt), true));
	fd = ktau_must_open_profiles(_metadata);
	a = snap_self(_metadata, fd, &s1);
	ASSERT_NE(NULL, a);
	k.target = pthread_self();
	ASSERT_EQ(0, pthread_create(&th, NULL, kick_fn, &k));
	ret = ioctl(v.vcpu, KVM_RUN, 0);
	EXPECT_EQ(-1, ret);
	EXPECT_EQ(EINTR, errno);
	b = snap_self(_metadata, fd, &s2);
	ASSERT_NE(NULL, b);
	pthread_join(th, NULL);
	kvm_sum(_metadata, a, b, &s);
	blocked = ktau_val_delta(a, b, KTAU_ID_SCHED_VOL);
	TH_LOG("HLT: %llu, incl %llu ns; sched_blocked: %llu, %llu ns",
	       s.hlt.count, s.hlt.incl, blocked.count, blocked.excl);
	EXPECT_EQ(1, s.hlt.count);
	EXPECT_LE(1, blocked.count);
	/* Most of the 200 ms off the CPU, and all of that in the HLT exit. */
	EXPECT_LE(k.ms * KTAU_NSEC_PER_MSEC / 2, blocked.excl);
	EXPECT_LE(blocked.excl, s.hlt.incl);
	/* Each figure is rounded down to a ns on its own: 2 ns of slack. */
	EXPECT_LE(blocked.excl, s.hlt.incl - s.hlt.excl + 2);
	EXPECT_EQ(a->unmatched, b->unmatched);
	ktau_snap_free(&s1);
	ktau_snap_free(&s2);
	close(fd);
	vm_close(&v);
	signal(SIGUSR1, SIG_DFL);
}

/*
 * A vCPU thread killed while its guest spins in KVM_RUN, and a VM whose
 * fds are closed before its memory is unmapped: nothing that the console
 * scan, the taint check and the debug kernel's checks (KASAN, lockdep,
 * kmemleak) would catch, and the profiles still read.
 */
TEST(vcpu_killed_and_vm_closed)
{
	struct ktau_snap sn = { 0 };
	int fd, status, i, ready[2];
	struct vm v;
	char c;
	pid_t pid;

	kvm_ready(_metadata);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, pipe(ready));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			close(ready[0]);
			if (vm_open(&v, spin_code, sizeof(spin_code)))
				_exit(2);
			if (write(ready[1], "r", 1) != 1)
				_exit(2);
			ioctl(v.vcpu, KVM_RUN, 0);
			_exit(3);
		}
		close(ready[1]);
		ASSERT_EQ(1, read(ready[0], &c, 1)) TH_LOG("the child could not make its VM");
		close(ready[0]);
		/* Into KVM_RUN, and a few exits (host interrupts) in. */
		usleep(50000 + i * 50000);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status));
	}
	ASSERT_EQ(0, vm_open(&v, io_code, sizeof(io_code)));
	close(v.stats);
	close(v.vcpu);
	close(v.vm);
	close(v.kvm);
	munmap(v.run, v.run_size);
	munmap(v.mem, GUEST_MEM);
	fd = ktau_must_open_profiles(_metadata);
	ASSERT_EQ(0, ktau_snap(fd, &sn, KTAU_SNAP_SELF, NULL, 0));
	ktau_snap_free(&sn);
	close(fd);
}

/*
 * The exit reasons are named when the vendor module sets up, not at their
 * first exit (whose hook runs with the guest's state loaded): a reason no
 * test makes, a guest shutdown, is in the registry all the same.
 */
TEST(exit_names_registered_at_setup)
{
	struct ktau_funcs fs = { 0 };
	char *t;
	const char *want;

	kvm_ready(_metadata);
	t = ktau_slurp("/proc/cpuinfo", NULL);
	ASSERT_NE(NULL, t);
	want = strstr(t, " svm") ? "kvm_exit:SHUTDOWN" : "kvm_exit:TRIPLE_FAULT";
	free(t);
	ASSERT_EQ(0, ktau_funcs_load(&fs));
	EXPECT_NE(NULL, ktau_func_by_name(&fs, want)) TH_LOG("%s not registered", want);
	ktau_funcs_free(&fs);
}

TEST_HARNESS_MAIN
