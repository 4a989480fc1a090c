// SPDX-License-Identifier: GPL-2.0
/*
 * Microbenchmarks of the kernel paths KTAU instruments, for
 * scripts/bench.sh. Each prints the cost of one operation in
 * CLOCK_MONOTONIC nanoseconds, the best of several runs. Under QEMU with
 * -icount shift=0,sleep=off one guest instruction is one virtual
 * nanosecond, so the figures are guest instruction counts.
 *
 * Usage: ktau-micro [-n OPS] [-r RUNS] [-s] BENCH [ARGS...]
 *   -n OPS   operations per run (default: per benchmark)
 *   -r RUNS  runs; the best is printed (default 5)
 *   -s       register a KTAU shared page (KTAU_IOC_SHARED_REGISTER) in
 *            every process of the benchmark that runs the timed loop
 *   -t       trace the calling thread (KTAU trace mode, ABI 1.5), a
 *            buffer of 2^20 records drained before each run, outside the
 *            timing; for exec, also every process CMD starts
 *            (KTAU_TRACE_INHERIT), 2^16 records a thread; the records,
 *            threads, refused attaches and losses go to stderr, and a
 *            refused attach fails the benchmark
 *   -v       print every run's figure on stderr
 * BENCH:
 *   getppid        null system call (loop overhead subtracted)
 *   pipe           ping-pong of one byte between two processes: a round
 *                  trip is two writes, two reads, two context switches
 *   fork           fork, _exit in the child, waitpid in the parent
 *   fault          page faults: mmap 64 pages, write each, munmap; the
 *                  operation is one page
 *   nanosleep      nanosleep(100 us) with a timer slack of 1 ns, less the
 *                  100 us: the system call, the timer interrupt, the
 *                  hrtimer wake-up and the switch back, but not the way
 *                  to the idle loop (under -icount sleep=off an idle CPU
 *                  jumps to the timer's deadline; the way there is
 *                  inside the 100 us)
 *   udp            UDP datagram of 64 bytes to itself over loopback and
 *                  back: the NET_RX softirq
 *   tasks N        getppid with N processes running at once; cost per
 *                  call over all of them (loop overhead subtracted)
 *   exits N        N processes exit at once, n exits in all: each waits
 *                  (EOF on a pipe) until the parent lets all of them go,
 *                  then calls _exit; the parent reaps them. The operation
 *                  is one exit: the wake-up, do_exit, the reaping wait4;
 *                  not the fork (made before the timing)
 *   fulltable      getppid in a task that first made many distinct system
 *                  calls, so that its KTAU table is nearly full
 *   kvm            one exit of a KVM guest completed in user space: a
 *                  real-mode vCPU writing to an I/O port in a loop, each
 *                  write a KVM_RUN that exits with KVM_EXIT_IO (VM made
 *                  once, outside the timing; needs /dev/kvm)
 *   kvmk           one exit handled in the kernel and back to the guest
 *                  (CPUID, which KVM emulates): n CPUIDs in KVM_RUNs of
 *                  64 each, less as many KVM_RUNs of kvm's vCPU, per CPUID
 *   exec CMD...    run CMD (fork, exec, wait): the operation is one run
 *   mktree DIR N K make DIR with N files of K KiB of text (not timed)
 * Output: "BENCH VALUE [extra]", VALUE in ns (instructions) per operation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/ktau.h>
#include <linux/kvm.h>

static int opt_shared;
static int opt_trace;
static int trace_fd = -1;
static const char *prog = "ktau-micro";

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * -s: register a shared page for the calling thread, as a user-level
 * profiler merging kernel and user time does. Not inherited by children,
 * so every process of a benchmark calls it.
 */
static void shared_register(void)
{
	struct ktau_shared_reg reg = { .size = sizeof(struct ktau_shared) };
	void *page;
	int fd;

	if (!opt_shared)
		return;
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		die("mmap");
	fd = open("/proc/ktau/profiles", O_RDONLY);
	if (fd < 0)
		die("/proc/ktau/profiles");
	reg.addr = (uintptr_t)page;
	if (ioctl(fd, KTAU_IOC_SHARED_REGISTER, &reg) < 0)
		die("KTAU_IOC_SHARED_REGISTER");
	close(fd);
}

/* -t: a trace session with the calling thread in it. */
static void trace_start(int inherit)
{
	struct ktau_trace_attr a = {
		.size = sizeof(a), .capacity = 1U << 20,
	};

	/*
	 * Each thread of the command gets a buffer of the same size: 2^16
	 * records (2 MiB), ktaud trace's default, keeps a run's processes
	 * well inside the session's KTAU_TRACE_MAX_BYTES, and is more than
	 * any of them writes.
	 */
	if (inherit) {
		a.flags = KTAU_TRACE_INHERIT;
		a.capacity = 1U << 16;
	}

	trace_fd = open("/proc/ktau/trace", O_RDONLY);
	if (trace_fd < 0)
		die("/proc/ktau/trace");
	if (ioctl(trace_fd, KTAU_IOC_TRACE_ATTACH, &a) < 0)
		die("KTAU_IOC_TRACE_ATTACH");
}

/*
 * Read what the session holds, so that a run finds an empty buffer. Each
 * read() is itself a call of the traced thread, recorded when it returns:
 * the drain ends with a read that found only that much.
 */
static void trace_drain(void)
{
	static char buf[1 << 20];
	ssize_t n;

	if (trace_fd < 0)
		return;
	do {
		n = read(trace_fd, buf, sizeof(buf));
		if (n < 0)
			die("read /proc/ktau/trace");
	} while ((size_t)n > sizeof(struct ktau_trace_chunk) + 4 * sizeof(struct ktau_trace_rec));
}

static void trace_report(void)
{
	struct ktau_trace_stats st;

	if (trace_fd < 0)
		return;
	if (ioctl(trace_fd, KTAU_IOC_TRACE_STATS, &st) < 0)
		die("KTAU_IOC_TRACE_STATS");
	fprintf(stderr, "trace: %llu records, %llu threads, %llu refused, %llu lost\n",
		(unsigned long long)st.records, (unsigned long long)st.tasks,
		(unsigned long long)st.refused, (unsigned long long)st.lost);
	/* A thread left untraced would flatter the figure. */
	if (st.refused) {
		fprintf(stderr, "%s: %llu threads were not traced (trace limits)\n",
			prog, (unsigned long long)st.refused);
		exit(1);
	}
}

/* The empty loop, per iteration, to subtract from system call loops. */
static double empty_loop(long n)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++)
		__asm__ volatile("" ::: "memory");
	return (now_ns() - t0) / n;
}

static double bench_getppid(long n)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	return (now_ns() - t0) / n - empty_loop(n);
}

static double bench_pipe(long n)
{
	int a[2], b[2];
	char c = 0;
	double t;
	pid_t pid;

	if (pipe(a) || pipe(b))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		shared_register();
		for (long i = 0; i < n; i++)
			if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	/* One round trip before timing: the child is up and registered. */
	if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
		die("pipe round trip");
	t = now_ns();
	for (long i = 1; i < n; i++)
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			die("pipe round trip");
	t = (now_ns() - t) / (n - 1);
	waitpid(pid, NULL, 0);
	close(a[0]), close(a[1]), close(b[0]), close(b[1]);
	return t;
}

static double bench_fork(long n)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0)
			_exit(0);
		if (waitpid(pid, NULL, 0) != pid)
			die("waitpid");
	}
	return (now_ns() - t0) / n;
}

#define FAULT_PAGES 64

static double bench_fault(long n)
{
	long rounds = (n + FAULT_PAGES - 1) / FAULT_PAGES;
	size_t len = FAULT_PAGES * 4096;
	double t0 = now_ns();

	for (long r = 0; r < rounds; r++) {
		volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			die("mmap");
		for (size_t off = 0; off < len; off += 4096)
			p[off] = 1;
		munmap((void *)p, len);
	}
	return (now_ns() - t0) / (rounds * FAULT_PAGES);
}

#define SLEEP_NS 100000

static double bench_nanosleep(long n)
{
	struct timespec ts = { 0, SLEEP_NS };
	double t0;

	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		nanosleep(&ts, NULL);
	return (now_ns() - t0) / n - SLEEP_NS;
}

static double bench_udp(long n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	char buf[64] = { 0 };
	double t0;
	int s;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		die("socket");
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(s, (struct sockaddr *)&sa, &len) ||
	    connect(s, (struct sockaddr *)&sa, sizeof(sa)))
		die("udp loopback socket");
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		if (send(s, buf, sizeof(buf), 0) != sizeof(buf) ||
		    recv(s, buf, sizeof(buf), 0) != sizeof(buf))
			die("udp send/recv");
	t0 = (now_ns() - t0) / n;
	close(s);
	return t0;
}

/*
 * N processes call getppid() at once, n calls in all. Each waits for the
 * start (EOF on go), loops, reports on done and waits for the end (EOF on
 * quit), so that neither start-up nor exit is timed.
 */
/*
 * A VM with one vCPU in real mode running @code at 0x1000 (a VM each:
 * made once, outside the timing), its first KVM_RUN (the code page's
 * first fault) done; the vCPU's fd, its run structure in *@run.
 */
static int kvm_vcpu(const unsigned char *code, size_t len, struct kvm_run **run)
{
	struct kvm_userspace_memory_region region = { 0 };
	struct kvm_regs regs = { .rip = 0x1000, .rflags = 0x2 };
	struct kvm_sregs sregs;
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC), vm, sz, vcpu;
	char *mem;

	if (kvm < 0)
		die("open /dev/kvm");
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	mem = mmap(NULL, 0x10000, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vm < 0 || sz <= 0 || mem == MAP_FAILED)
		die("KVM_CREATE_VM");
	memcpy(mem + 0x1000, code, len);
	region.memory_size = 0x10000;
	region.userspace_addr = (uintptr_t)mem;
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region))
		die("KVM_SET_USER_MEMORY_REGION");
	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0)
		die("KVM_CREATE_VCPU");
	*run = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (*run == MAP_FAILED || ioctl(vcpu, KVM_GET_SREGS, &sregs))
		die("vCPU");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs) || ioctl(vcpu, KVM_SET_REGS, &regs))
		die("vCPU registers");
	if (ioctl(vcpu, KVM_RUN, 0))
		die("KVM_RUN");
	return vcpu;
}

/* n KVM_RUNs of @vcpu, each ending in a port write; ns per KVM_RUN. */
static double kvm_runs(int vcpu, const struct kvm_run *run, long n)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++)
		if (ioctl(vcpu, KVM_RUN, 0) || run->exit_reason != KVM_EXIT_IO)
			die("KVM_RUN");
	return (now_ns() - t0) / n;
}

/*
 * A vCPU in real mode at 0x1000 running "l: out 0x10, al; jmp l": every
 * KVM_RUN ends with one port write for user space.
 */
static double bench_kvm(long n)
{
	static const unsigned char code[] = { 0xe6, 0x10, 0xeb, 0xfc };
	static struct kvm_run *run;
	static int vcpu = -1;

	if (vcpu < 0)
		vcpu = kvm_vcpu(code, sizeof(code), &run);
	return kvm_runs(vcpu, run, n);
}

#define KVMK_CPUIDS	64

/*
 * An exit that KVM handles in the kernel and that goes straight back to
 * the guest (CPUID, emulated by KVM): each KVM_RUN of this vCPU makes
 * KVMK_CPUIDS of them, then the port write of bench_kvm's vCPU.
 *   l: mov si, 64; m: cpuid; dec si; jnz m; out 0x10, al; jmp l
 * The figure is per CPUID exit: (a KVM_RUN of this vCPU less one of
 * bench_kvm's, timed in turn) / KVMK_CPUIDS.
 */
static double bench_kvmk(long n)
{
	static const unsigned char code[] = {
		0xbe, KVMK_CPUIDS, 0x00,
		0x0f, 0xa2,
		0x4e,
		0x75, 0xfb,
		0xe6, 0x10,
		0xeb, 0xf4,
	};
	static const unsigned char io[] = { 0xe6, 0x10, 0xeb, 0xfc };
	static struct kvm_run *run, *run_io;
	static int vcpu = -1, vcpu_io = -1;
	long m = n / KVMK_CPUIDS > 0 ? n / KVMK_CPUIDS : 1;

	if (vcpu < 0) {
		vcpu = kvm_vcpu(code, sizeof(code), &run);
		vcpu_io = kvm_vcpu(io, sizeof(io), &run_io);
	}
	return (kvm_runs(vcpu, run, m) - kvm_runs(vcpu_io, run_io, m)) / KVMK_CPUIDS;
}

static double bench_tasks(long n, int ntasks)
{
	int go[2], done[2], quit[2];
	long per = n / ntasks;
	double t0, t;
	char c = 0;
	int i;

	if (per < 1)
		per = 1;
	if (pipe(go) || pipe(done) || pipe(quit))
		die("pipe");
	for (i = 0; i < ntasks; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid)
			continue;
		close(go[1]), close(quit[1]), close(done[0]);
		shared_register();
		if (write(done[1], &c, 1) != 1 || read(go[0], &c, 1) != 0)
			_exit(1);
		for (long k = 0; k < per; k++)
			syscall(SYS_getppid);
		if (write(done[1], &c, 1) != 1 || read(quit[0], &c, 1) != 0)
			_exit(1);
		_exit(0);
	}
	close(go[0]), close(quit[0]), close(done[1]);
	for (i = 0; i < ntasks; i++)	/* every task is ready */
		if (read(done[0], &c, 1) != 1)
			die("tasks: ready");
	t0 = now_ns();
	close(go[1]);
	for (i = 0; i < ntasks; i++)
		if (read(done[0], &c, 1) != 1)
			die("tasks: done");
	t = (now_ns() - t0) / (per * ntasks);
	close(quit[1]);
	close(done[0]);
	while (wait(NULL) > 0)
		;
	return t - empty_loop(per);
}

/*
 * n exits in rounds of @ntasks processes that exit at once (KTAU folds
 * each exiting task's table into per-CPU totals: its cost per exit must
 * not grow with the number of tasks exiting together).
 */
static double bench_exits(long n, int ntasks)
{
	long rounds = (n + ntasks - 1) / ntasks;
	double t = 0, t0;
	int go[2], ready[2], i;
	char c = 0;

	for (long r = 0; r < rounds; r++) {
		if (pipe(go) || pipe(ready))
			die("pipe");
		for (i = 0; i < ntasks; i++) {
			pid_t pid = fork();

			if (pid < 0)
				die("fork");
			if (pid)
				continue;
			close(go[1]), close(ready[0]);
			if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 0)
				_exit(1);
			_exit(0);
		}
		close(go[0]), close(ready[1]);
		for (i = 0; i < ntasks; i++)	/* every process waits in read() */
			if (read(ready[0], &c, 1) != 1)
				die("exits: ready");
		close(ready[0]);
		t0 = now_ns();
		close(go[1]);
		for (i = 0; i < ntasks; i++) {
			int status;

			if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
				die("exits: a process failed");
		}
		t += now_ns() - t0;
	}
	return t / (rounds * ntasks);
}

/* Entries in the calling thread's KTAU profile, -1 without KTAU. */
static int own_entries(void)
{
	static char buf[1 << 16];
	struct ktau_snapshot s = {
		.size = sizeof(s), .flags = KTAU_SNAP_SELF,
		.buf = (uintptr_t)buf, .buf_size = sizeof(buf),
	};
	int fd = open("/proc/ktau/profiles", O_RDONLY), r;

	if (fd < 0)
		return -1;
	r = ioctl(fd, KTAU_IOC_SNAPSHOT, &s);
	close(fd);
	if (r < 0 || s.ntasks < 1)
		return -1;
	return ((struct ktau_task_rec *)buf)->nentries;
}

static int ktau_slots(void)
{
	FILE *f = fopen("/proc/ktau/control", "r");
	char line[128];
	int n = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "slots %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/*
 * System calls that are harmless with these arguments (they fail on a
 * bad descriptor, a NULL pointer or an invalid value, or only read).
 */
static const long fill_calls[][4] = {
	{ SYS_read, -1, 0, 0 }, { SYS_write, -1, 0, 0 }, { SYS_close, -1 },
	{ SYS_fstat, -1, 0 }, { SYS_lseek, -1, 0, 0 }, { SYS_ioctl, -1, 0, 0 },
	{ SYS_pread64, -1, 0, 0 }, { SYS_pwrite64, -1, 0, 0 },
	{ SYS_readv, -1, 0, 0 }, { SYS_writev, -1, 0, 0 },
	{ SYS_access, 0, 0 }, { SYS_sched_yield }, { SYS_mincore, 1, 0, 0 },
	{ SYS_madvise, 0, 0, 0 }, { SYS_dup, -1 }, { SYS_dup2, -1, -1 },
	{ SYS_getitimer, 99, 0 }, { SYS_getpid }, { SYS_sendfile, -1, -1, 0 },
	{ SYS_connect, -1, 0, 0 }, { SYS_accept, -1, 0, 0 },
	{ SYS_shutdown, -1, 0 }, { SYS_getsockname, -1, 0, 0 },
	{ SYS_fcntl, -1, 0, 0 }, { SYS_flock, -1, 0 }, { SYS_fsync, -1 },
	{ SYS_fdatasync, -1 }, { SYS_truncate, 0, 0 }, { SYS_ftruncate, -1, 0 },
	{ SYS_getdents64, -1, 0, 0 }, { SYS_chdir, 0 }, { SYS_fchdir, -1 },
	{ SYS_rename, 0, 0 }, { SYS_mkdir, 0, 0 }, { SYS_rmdir, 0 },
	{ SYS_link, 0, 0 }, { SYS_unlink, 0 }, { SYS_readlink, 0, 0, 0 },
	{ SYS_chmod, 0, 0 }, { SYS_fchmod, -1, 0 }, { SYS_fchown, -1, 0, 0 },
	{ SYS_gettimeofday, 0, 0 }, { SYS_getrlimit, 99, 0 },
	{ SYS_getrusage, 99, 0 }, { SYS_sysinfo, 0 }, { SYS_times, 0 },
	{ SYS_getuid }, { SYS_getgid }, { SYS_geteuid }, { SYS_getegid },
	{ SYS_getpgrp }, { SYS_getgroups, 0, 0 }, { SYS_getpgid, 0 },
	{ SYS_getsid, 0 }, { SYS_capget, 0, 0 }, { SYS_statfs, 0, 0 },
	{ SYS_fstatfs, -1, 0 }, { SYS_getpriority, 99, 0 },
	{ SYS_sched_getparam, -1, 0 }, { SYS_sched_getscheduler, -1 },
	{ SYS_gettid }, { SYS_time, 0 }, { SYS_fadvise64, -1, 0, 0, },
	{ SYS_timer_gettime, -1, 0 }, { SYS_clock_getres, 99, 0 },
	{ SYS_epoll_wait, -1, 0, 0 }, { SYS_utimes, 0, 0 },
	{ SYS_get_mempolicy, 0, 0, 0 }, { SYS_inotify_rm_watch, -1, 0 },
	{ SYS_openat, -1, 0, 0 }, { SYS_mkdirat, -1, 0, 0 },
	{ SYS_fchownat, -1, 0, 0 }, { SYS_unlinkat, -1, 0, 0 },
	{ SYS_readlinkat, -1, 0, 0 }, { SYS_faccessat, -1, 0, 0 },
	{ SYS_tee, -1, -1, 0 }, { SYS_sync_file_range, -1, 0, 0 },
	{ SYS_vmsplice, -1, 0, 0 }, { SYS_utimensat, -1, 0, 0 },
	{ SYS_timerfd_gettime, -1, 0 }, { SYS_syncfs, -1 },
	{ SYS_getcpu, 0, 0, 0 }, { SYS_getrandom, 0, 0, 0 },
};

#define NR_FILL ((int)(sizeof(fill_calls) / sizeof(fill_calls[0])))

/*
 * Fill the table: distinct system calls until KTAU's table of this task
 * has all but four slots in use (all of the list without KTAU), so that
 * the routines of the timed loop (getppid, the timer interrupt and its
 * softirqs, the scheduler) still find a slot. Prints how many entries
 * and slots it reached on stderr.
 */
static void fill_table(void)
{
	int slots = ktau_slots(), i, used = 0;

	syscall(SYS_getppid);
	for (i = 0; i < NR_FILL; i++) {
		if (slots > 0 && (used = own_entries()) >= slots - 4)
			break;
		syscall(fill_calls[i][0], fill_calls[i][1], fill_calls[i][2],
			fill_calls[i][3], 0, 0, 0);
	}
	used = own_entries();
	fprintf(stderr, "%s: fulltable: %d distinct calls, %d of %d slots used\n",
		prog, i, used, slots);
}

static double bench_exec(char **argv)
{
	double t0 = now_ns();
	int status;
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "%s: exec: %s failed (status %#x)\n", prog, argv[0], status);
		exit(1);
	}
	return now_ns() - t0;
}

/* Deterministic text: words from a small vocabulary, a fixed LCG. */
static int mktree(const char *dir, int nfiles, int kib)
{
	static const char *words[] = {
		"kernel", "task", "profile", "syscall", "interrupt", "timer",
		"the", "of", "a", "to", "in", "page", "fault", "signal", "sched",
		"exclusive", "inclusive", "count", "table", "slot", "tau",
	};
	uint32_t x = 12345;
	char path[4096];

	if (mkdir(dir, 0755) && errno != EEXIST)
		die(dir);
	for (int i = 0; i < nfiles; i++) {
		FILE *f;
		long left = kib * 1024L;

		if (i % 16 == 0) {
			snprintf(path, sizeof(path), "%s/d%02d", dir, i / 16);
			if (mkdir(path, 0755) && errno != EEXIST)
				die(path);
		}
		snprintf(path, sizeof(path), "%s/d%02d/f%03d.txt", dir, i / 16, i);
		f = fopen(path, "w");
		if (!f)
			die(path);
		while (left > 0) {
			const char *w;

			x = x * 1103515245 + 12345;
			w = words[(x >> 16) % (sizeof(words) / sizeof(words[0]))];
			left -= fprintf(f, "%s%s", w, (x >> 8) % 11 ? " " : "\n");
			if ((x >> 4) % 97 == 0)
				left -= fprintf(f, "%u ", x);
		}
		fclose(f);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long n = 0;
	int runs = 5, opt, ntasks = 0, verbose = 0;
	double best = -1, v;
	const char *bench;

	while ((opt = getopt(argc, argv, "+n:r:stv")) != -1) {
		switch (opt) {
		case 'v': verbose = 1; break;
		case 'n': n = atol(optarg); break;
		case 'r': runs = atoi(optarg); break;
		case 's': opt_shared = 1; break;
		case 't': opt_trace = 1; break;
		default: goto usage;
		}
	}
	if (optind >= argc || runs < 1 || n < 0)
		goto usage;
	bench = argv[optind++];
	if (!strcmp(bench, "mktree")) {
		if (argc - optind != 3)
			goto usage;
		return mktree(argv[optind], atoi(argv[optind + 1]), atoi(argv[optind + 2]));
	}
	if (!strcmp(bench, "tasks") || !strcmp(bench, "exits")) {
		if (optind >= argc || (ntasks = atoi(argv[optind])) < 1)
			goto usage;
	}
	if (!strcmp(bench, "exec") && optind >= argc)
		goto usage;
	if (!n)
		n = !strcmp(bench, "fork") || !strcmp(bench, "exits") ? 2000 :
		    !strcmp(bench, "exec") ? 1 :
		    !strcmp(bench, "getppid") || !strcmp(bench, "fulltable") ||
		    !strcmp(bench, "tasks") ? 200000 : 20000;
	if (!strcmp(bench, "pipe") && n < 2)
		n = 2;

	shared_register();
	if (opt_trace)
		trace_start(!strcmp(bench, "exec"));
	if (!strcmp(bench, "fulltable"))
		fill_table();
	for (int r = 0; r < runs; r++) {
		trace_drain();
		if (!strcmp(bench, "getppid") || !strcmp(bench, "fulltable"))
			v = bench_getppid(n);
		else if (!strcmp(bench, "pipe"))
			v = bench_pipe(n);
		else if (!strcmp(bench, "fork"))
			v = bench_fork(n);
		else if (!strcmp(bench, "fault"))
			v = bench_fault(n);
		else if (!strcmp(bench, "nanosleep"))
			v = bench_nanosleep(n);
		else if (!strcmp(bench, "udp"))
			v = bench_udp(n);
		else if (!strcmp(bench, "tasks"))
			v = bench_tasks(n, ntasks);
		else if (!strcmp(bench, "exits"))
			v = bench_exits(n, ntasks);
		else if (!strcmp(bench, "exec"))
			v = bench_exec(argv + optind);
		else if (!strcmp(bench, "kvm"))
			v = bench_kvm(n);
		else if (!strcmp(bench, "kvmk"))
			v = bench_kvmk(n);
		else
			goto usage;
		if (verbose)
			fprintf(stderr, "%s: run %d: %.1f\n", bench, r, v);
		if (best < 0 || v < best)
			best = v;
	}
	trace_drain();
	trace_report();
	printf("%s %.1f\n", bench, best);
	return 0;
usage:
	fprintf(stderr, "usage: %s [-n OPS] [-r RUNS] [-s] [-t] [-v] BENCH [ARGS...]\n"
		"  BENCH: getppid pipe fork fault nanosleep udp kvm kvmk tasks N exits N fulltable\n"
		"         exec CMD... | mktree DIR NFILES KIB\n", prog);
	return 2;
}
