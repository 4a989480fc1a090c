// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU interrupt profiles: the system-wide softirq and local timer counts
 * are the kernel's own (/proc/softirqs, the LOC line of /proc/interrupts),
 * and the time of an interrupt is charged to the interrupt, not to the
 * system call it interrupted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ktau_util.h"

#define N_ROUNDS	200
#define READ_LEN	(8 << 20)
#define READ_NS		KTAU_NSEC_PER_SEC
#define SAMPLES		4096
#define PARANOID	"/proc/sys/kernel/perf_event_paranoid"

FIXTURE(irq) {
	int fd;
	int paranoid;	/* perf_event_paranoid before the test */
	struct ktau_snap a, b;
};

static int sysctl_rw(const char *path, int set);

FIXTURE_SETUP(irq)
{
	ktau_must_have_ktau(_metadata);
	self->fd = ktau_must_open_profiles(_metadata);
	self->paranoid = sysctl_rw(PARANOID, -100);
}

/* The level comes back also after a failed assertion. */
FIXTURE_TEARDOWN(irq)
{
	if (self->paranoid > -100)
		sysctl_rw(PARANOID, self->paranoid);
	ktau_snap_free(&self->a);
	ktau_snap_free(&self->b);
	close(self->fd);
}

/* Per-vector totals of /proc/softirqs (sum over CPUs). */
static int read_proc_softirqs(unsigned long long count[KTAU_NR_SOFTIRQS])
{
	char *text = ktau_slurp("/proc/softirqs", NULL), *line, *save, *p, *end;
	int vec, found = 0;
	size_t len;

	if (!text)
		return -errno;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line += strspn(line, " ");
		for (vec = 0; vec < KTAU_NR_SOFTIRQS; vec++) {
			len = strlen(ktau_softirq_name(vec));
			if (!strncmp(line, ktau_softirq_name(vec), len) && line[len] == ':')
				break;
		}
		if (vec == KTAU_NR_SOFTIRQS)
			continue;
		count[vec] = 0;
		for (p = strchr(line, ':') + 1; *p; p = end) {
			count[vec] += strtoull(p, &end, 10);
			if (end == p)
				break;
		}
		found++;
	}
	free(text);
	return found == KTAU_NR_SOFTIRQS ? 0 : -EBADMSG;
}

/* Local timer interrupts: the LOC line of /proc/interrupts, all CPUs. */
/* The sum over CPUs of the /proc/interrupts line that starts with @tag. */
static int read_proc_interrupts(const char *tag, unsigned long long *count)
{
	char *text = ktau_slurp("/proc/interrupts", NULL), *line, *save, *p, *end;
	unsigned long long n;
	int ret = -EBADMSG;

	if (!text)
		return -errno;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line += strspn(line, " ");
		if (strncmp(line, tag, strlen(tag)))
			continue;
		*count = 0;
		for (p = line + strlen(tag); ; p = end) {
			n = strtoull(p, &end, 10);
			if (end == p)
				break;
			*count += n;
		}
		ret = 0;
		break;
	}
	free(text);
	return ret;
}

/* 200 rounds of a 1 ms sleep and a UDP datagram over loopback. */
static void timer_and_net_load(struct __test_metadata *_metadata)
{
	struct ktau_udp u;
	int i, ret;

	ret = ktau_udp_open(&u);
	ASSERT_EQ(0, ret) TH_LOG("loopback UDP sockets: %s", strerror(-ret));
	for (i = 0; i < N_ROUNDS; i++) {
		ktau_sleep_ns(KTAU_NSEC_PER_MSEC);
		ret = ktau_udp_roundtrip(&u, 256);
		ASSERT_EQ(0, ret) TH_LOG("loopback UDP: %s (is lo up?)", strerror(-ret));
	}
	ktau_udp_close(&u);
}

/*
 * Over a timer and network load, the aggregate count of each softirq
 * vector grows as /proc/softirqs does. The two cannot be read at the same
 * instant, so /proc/softirqs is read on both sides of each snapshot: its
 * growth over the inner window (after the first snapshot, before the
 * second) and over the outer one bracket KTAU's. /proc/softirqs counts a
 * softirq when it starts and KTAU when it ends: one in progress on each
 * CPU at a snapshot may fall on either side (slack of 2 per CPU). The
 * old check, one window and 2% + 5, failed once on the debug kernel,
 * whose aggregate snapshots take long (RCU: KTAU +122, /proc +131).
 */
TEST_F_TIMEOUT(irq, softirqs_match_proc_softirqs, 30)
{
	unsigned long long p0[KTAU_NR_SOFTIRQS], p0b[KTAU_NR_SOFTIRQS];
	unsigned long long p1[KTAU_NR_SOFTIRQS], p1b[KTAU_NR_SOFTIRQS];
	unsigned long long inner, outer, total = 0;
	const struct ktau_task_rec *ra, *rb;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct ktau_val dk;
	int vec;

	ASSERT_LT(0, ncpu);
	ASSERT_EQ(0, read_proc_softirqs(p0));
	ra = ktau_must_snap_aggregate(_metadata, self->fd, &self->a);
	ASSERT_EQ(0, read_proc_softirqs(p0b));
	timer_and_net_load(_metadata);
	ASSERT_EQ(0, read_proc_softirqs(p1));
	rb = ktau_must_snap_aggregate(_metadata, self->fd, &self->b);
	ASSERT_EQ(0, read_proc_softirqs(p1b));

	for (vec = 0; vec < KTAU_NR_SOFTIRQS; vec++) {
		dk = ktau_val_delta(ra, rb, KTAU_ID_SOFTIRQ_BASE + vec);
		inner = p1[vec] - p0b[vec];
		outer = p1b[vec] - p0[vec];
		total += inner;
		TH_LOG("softirq %-8s /proc/softirqs +%llu..+%llu, KTAU +%llu calls %llu ns",
		       ktau_softirq_name(vec), inner, outer, dk.count, dk.incl);
		EXPECT_LE(inner, dk.count + 2 * ncpu)
			TH_LOG("softirq %s: KTAU +%llu, /proc/softirqs +%llu inside its window",
			       ktau_softirq_name(vec), dk.count, inner);
		EXPECT_LE(dk.count, outer + 2 * ncpu)
			TH_LOG("softirq %s: KTAU +%llu, /proc/softirqs +%llu around its window",
			       ktau_softirq_name(vec), dk.count, outer);
		/* Totals are rounded down to ns one by one: a delta may gain 1 ns. */
		EXPECT_LE(dk.excl, dk.incl + 1);
	}
	/* The load did raise softirqs: the comparison means something. */
	EXPECT_LE(10, total);
}

/*
 * The same for the timer interrupt and its line of /proc/interrupts: the
 * local APIC timer ("LOC:", apic_timer_interrupt), or, when the kernel
 * could not use it (its calibration fails in a loaded virtual machine)
 * and ticks with the PIT, IRQ 0 ("0:", irq0:timer).
 */
TEST_F_TIMEOUT(irq, local_timer_matches_loc, 30)
{
	const struct ktau_task_rec *ra = NULL, *rb = NULL;
	unsigned long long l[4], p[4], *c, lo, hi;
	struct ktau_funcs fs = { 0 };
	const struct ktau_func *f;
	struct ktau_val dk;
	int i;

	/*
	 * The counters are read just before and just after each snapshot,
	 * so the interrupts KTAU saw between its snapshots are bracketed:
	 * at least those between the inner reads, at most those between the
	 * outer ones (give or take one per CPU: /proc/interrupts counts at
	 * the handler's start, KTAU at the interrupt's end).
	 */
	for (i = 0; i < 4; i++) {
		if (i == 2)
			timer_and_net_load(_metadata);
		if (i == 1)
			ra = ktau_must_snap_aggregate(_metadata, self->fd, &self->a);
		if (i == 3)
			rb = ktau_must_snap_aggregate(_metadata, self->fd, &self->b);
		ASSERT_EQ(0, read_proc_interrupts("LOC:", &l[i]));
		if (read_proc_interrupts("0:", &p[i]))
			p[i] = 0;
	}

	ASSERT_EQ(0, ktau_funcs_load(&fs));
	if (l[3] - l[0] >= 10) {
		f = ktau_func_by_name(&fs, "apic_timer_interrupt");
		c = l;
	} else {
		f = ktau_func_by_name(&fs, "irq0:timer");
		c = p;
		TH_LOG("no local APIC timer ticks: comparing IRQ 0 (the PIT)");
	}
	ASSERT_NE(NULL, f) TH_LOG("timer interrupt not in %s", KTAU_FUNCTIONS_PATH);
	EXPECT_STREQ("irq", f->group);
	dk = ktau_val_delta(ra, rb, f->id);
	lo = c[2] - c[1];
	hi = c[3] - c[0];
	TH_LOG("timer interrupts between %llu and %llu, KTAU %s (ID %u) +%llu calls %llu ns",
	       lo, hi, f->name, f->id, dk.count, dk.incl);
	EXPECT_LE(10, lo);
	EXPECT_LE(lo, dk.count + 2);
	EXPECT_GE(hi + 2, dk.count);
	EXPECT_LT(0, dk.incl);
	ktau_funcs_free(&fs);
}

static bool nests_in_syscall(const char *group)
{
	return !strcmp(group, "irq") || !strcmp(group, "softirq") ||
	       !strcmp(group, "sched") || !strcmp(group, "fault");
}

/*
 * A thread reads 8 MiB from /dev/zero again and again for a second, so
 * that timer interrupts land inside read(). The time nested in read()
 * (incl - excl) is positive, and it is no more than the time of the
 * routines that can nest there (interrupts, softirqs, the scheduler of
 * cond_resched(), kernel page faults) as this thread's profile counts it.
 */
TEST_F_TIMEOUT(irq, interrupt_time_not_in_syscall_excl, 30)
{
	const struct ktau_task_rec *ra, *rb;
	const struct ktau_entry *e;
	struct ktau_funcs fs = { 0 };
	const struct ktau_func *f;
	__u64 t0, t1, nested, bound = 0, n = 0;
	struct ktau_val rd, d;
	char *buf;
	int zfd;
	__u32 i;

	buf = malloc(READ_LEN);
	ASSERT_NE(NULL, buf);
	memset(buf, 1, READ_LEN);	/* no page fault inside read() */
	zfd = open("/dev/zero", O_RDONLY);
	ASSERT_LE(0, zfd);

	ra = ktau_must_snap_self(_metadata, self->fd, &self->a);
	t0 = ktau_now_ns();
	do {
		ASSERT_EQ(READ_LEN, read(zfd, buf, READ_LEN));
		n++;
	} while (ktau_now_ns() - t0 < READ_NS || n < 3);
	t1 = ktau_now_ns();
	rb = ktau_must_snap_self(_metadata, self->fd, &self->b);
	close(zfd);
	free(buf);

	/* After the load: IDs seen for the first time are listed now. */
	ASSERT_EQ(0, ktau_funcs_load(&fs));
	e = ktau_rec_entries(rb);
	for (i = 0; i < rb->nentries; i++) {
		f = ktau_func_by_id(&fs, e[i].id);
		EXPECT_NE(NULL, f) TH_LOG("ID %u not in %s", e[i].id, KTAU_FUNCTIONS_PATH);
		if (!f || !(nests_in_syscall(f->group) || f->id == KTAU_ID_OTHER))
			continue;
		d = ktau_val_delta(ra, rb, e[i].id);
		if (d.count)
			TH_LOG("  %s %s: +%llu calls %llu ns", f->group, f->name, d.count, d.incl);
		bound += d.incl;
	}

	rd = ktau_val_delta(ra, rb, KTAU_ID_READ);
	/* Totals are rounded down to ns one by one: a delta may gain 1 ns. */
	ASSERT_LE(rd.excl, rd.incl + 1);
	nested = rd.incl - rd.excl;
	TH_LOG("%llu reads in %llu ns: incl %llu excl %llu, nested %llu ns, bound %llu ns",
	       n, t1 - t0, rd.incl, rd.excl, nested, bound);
	EXPECT_EQ(n, rd.count);
	EXPECT_GE(t1 - t0, rd.incl);
	EXPECT_LT(0, nested) TH_LOG("no interrupt time was taken out of read()");
	EXPECT_GE(bound, nested) TH_LOG("read() lost more time than its nested routines took");
	ktau_funcs_free(&fs);
}

static int sysctl_rw(const char *path, int set)
{
	char *t = ktau_slurp(path, NULL), s[16];
	int v = t ? atoi(t) : -100, fd, n;

	free(t);
	if (set > -100) {
		fd = open(path, O_WRONLY);
		if (fd < 0)
			return -100;
		n = snprintf(s, sizeof(s), "%d\n", set);
		if (write(fd, s, n) != n)
			v = -100;
		close(fd);
	}
	return v;
}

/* Count @id in *@src if it is an interrupt source, in *@gen if "irq" or "softirq". */
static void count_irq_id(const struct ktau_funcs *fs, __u32 id, unsigned int *src,
			 unsigned int *gen)
{
	const struct ktau_func *f = ktau_func_by_id(fs, id);

	if (!f || (strcmp(f->group, "irq") && strcmp(f->group, "softirq")))
		return;
	if (id == KTAU_ID_IRQ || id == KTAU_ID_SOFTIRQ)
		(*gen)++;
	else
		(*src)++;
}

/*
 * Interrupts land on this thread (the tick while it spins, NET_RX and
 * TIMER softirqs in its loopback traffic); count the entries of its own
 * profile, binary and text, that name a source (*src) and that do not
 * ("irq", "softirq": *gen).
 */
static void irq_entries(struct __test_metadata *_metadata, unsigned int *src,
			unsigned int *gen)
{
	int fd = ktau_must_open_profiles(_metadata);
	struct ktau_funcs fs = { 0 };
	struct ktau_snap s = { 0 };
	const struct ktau_task_rec *r;
	const struct ktau_entry *e;
	char *text;
	__u64 end = ktau_now_ns() + 200 * KTAU_NSEC_PER_MSEC;
	__u32 i;

	*src = *gen = 0;
	timer_and_net_load(_metadata);
	while (ktau_now_ns() < end)
		;
	r = ktau_must_snap_self(_metadata, fd, &s);
	ASSERT_EQ(0, ktau_funcs_load(&fs));
	e = ktau_rec_entries(r);
	for (i = 0; i < r->nentries; i++)
		count_irq_id(&fs, e[i].id, src, gen);
	text = ktau_slurp("/proc/thread-self/ktau", NULL);
	ASSERT_NE(NULL, text);
	if (strstr(text, " softirq_") || strstr(text, "TIMER"))
		(*src)++;
	free(text);
	ktau_funcs_free(&fs);
	ktau_snap_free(&s);
	close(fd);
}

static void irq_detail_hidden(struct __test_metadata *_metadata)
{
	unsigned int src, gen;

	irq_entries(_metadata, &src, &gen);
	TH_LOG("paranoid 2, no CAP_PERFMON: %u source entries, %u generic", src, gen);
	EXPECT_EQ(0, src);
	EXPECT_LE(1, gen);
}

static void irq_detail_shown(struct __test_metadata *_metadata)
{
	unsigned int src, gen;

	irq_entries(_metadata, &src, &gen);
	TH_LOG("%u source entries, %u generic", src, gen);
	EXPECT_LE(1, src);
}

/*
 * perf's policy for kernel detail (ABI 1.3): at perf_event_paranoid 2 or
 * more, a reader without CAP_PERFMON gets its interrupts as "irq" and
 * "softirq" totals, not per source; at 1, or with CAP_PERFMON, per source.
 */
TEST_F_TIMEOUT(irq, sources_follow_perf_paranoid, 60)
{
	int old = sysctl_rw(PARANOID, -100);

	ASSERT_LE(-1, old) TH_LOG("no %s: CONFIG_PERF_EVENTS?", PARANOID);
	ASSERT_EQ(old, sysctl_rw(PARANOID, 2));
	ktau_run_as(_metadata, KTAU_USER_ID, 0, irq_detail_hidden);
	ktau_run_as(_metadata, KTAU_USER_ID, KTAU_CAP(CAP_PERFMON), irq_detail_shown);
	ASSERT_EQ(2, sysctl_rw(PARANOID, 1));
	ktau_run_as(_metadata, KTAU_USER_ID, 0, irq_detail_shown);
	sysctl_rw(PARANOID, old);
}

/* The whole of a text view through @fd (from its start), or NULL. */
static char *read_view(int fd)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap), *more;
	ssize_t n;

	if (!buf || lseek(fd, 0, SEEK_SET))
		goto fail;
	while ((n = read(fd, buf + len, cap - 1 - len)) > 0) {
		len += n;
		if (len < cap - 1)
			continue;
		more = realloc(buf, cap * 2);
		if (!more)
			goto fail;
		buf = more;
		cap *= 2;
	}
	if (n < 0)
		goto fail;
	buf[len] = '\0';
	return buf;
fail:
	free(buf);
	return NULL;
}

/*
 * The entries of interrupts in a text view ("id group name ..." lines of
 * the irq and softirq groups): by source (*src, a name that is not its
 * group's) and folded (*gen, "irq" and "softirq").
 */
static void view_irq_lines(const char *text, unsigned int *src, unsigned int *gen)
{
	char group[32], name[64];

	*src = *gen = 0;
	for (; text; text = strchr(text, '\n'), text = text ? text + 1 : NULL) {
		if (sscanf(text, "%*u %31s %63s", group, name) != 2 ||
		    (strcmp(group, "irq") && strcmp(group, "softirq")))
			continue;
		if (strcmp(group, name))
			(*src)++;
		else
			(*gen)++;
	}
}

static bool view_has_sources(const char *text)
{
	unsigned int src, gen;

	view_irq_lines(text, &src, &gen);
	return src;
}

static bool has_folded(const char *text)
{
	unsigned int src, gen;

	view_irq_lines(text, &src, &gen);
	return gen;
}

/*
 * Source entries of thread @tid in a snapshot through @fd, of the
 * KTAU_SNAP_AGGREGATE record when @tid is 0; or -errno (-ENODATA when
 * the record has neither sources nor the folded "irq" or "softirq").
 */
static int snap_sources(int fd, pid_t tid)
{
	struct ktau_funcs fs = { 0 };
	struct ktau_snap s = { 0 };
	const struct ktau_task_rec *r;
	const struct ktau_entry *e;
	int n = 0, folded = 0, ret;
	__u32 i;

	if (tid)
		ret = ktau_snap(fd, &s, KTAU_SNAP_PIDS, &tid, 1);
	else
		ret = ktau_snap(fd, &s, KTAU_SNAP_AGGREGATE, NULL, 0);
	if (!ret)
		ret = ktau_funcs_load(&fs);
	r = ret ? NULL : tid ? ktau_snap_find(&s, tid) : ktau_snap_aggregate(&s);
	if (!ret && !r)
		ret = -ESRCH;
	for (i = 0; r && i < r->nentries; i++) {
		const struct ktau_func *f;

		e = ktau_rec_entries(r);
		f = ktau_func_by_id(&fs, e[i].id);
		if (e[i].id == KTAU_ID_IRQ || e[i].id == KTAU_ID_SOFTIRQ)
			folded += e[i].count > 0;
		else if (f && (!strcmp(f->group, "irq") || !strcmp(f->group, "softirq")))
			n++;
	}
	ktau_funcs_free(&fs);
	ktau_snap_free(&s);
	/* No interrupt at all: nothing to tell a coarse view by. */
	if (!ret && !n && !folded)
		ret = -ENODATA;
	return ret ? ret : n;
}

/*
 * A descriptor keeps its opener's view (ABI 1.13): at perf_event_paranoid
 * 2, an unprivileged thread's /proc/thread-self/ktau and
 * /proc/ktau/profiles, handed to root, show root its interrupts as "irq"
 * and "softirq" only (before, the view was the reader's: per source),
 * in the thread's records and in the KTAU_SNAP_AGGREGATE record root may
 * ask for (it had them, against ABI 1.13, until fixed), while root's own
 * descriptors show the sources.
 */
TEST_F_TIMEOUT(irq, passed_descriptor_keeps_opener_view, 60)
{
	int old = sysctl_rw(PARANOID, -100), sv[2], go[2], tfd, pfd, fd, status, r;
	char path[64], *text;
	pid_t pid;

	ASSERT_LE(-1, old) TH_LOG("no %s: CONFIG_PERF_EVENTS?", PARANOID);
	ASSERT_EQ(old, sysctl_rw(PARANOID, 2));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		__u64 end;
		struct ktau_udp u;
		char c;
		int i;

		/* The parent's ends: its exit or failure ends the wait below. */
		close(go[1]);
		close(sv[0]);
		if (ktau_become(KTAU_USER_ID, 0) || ktau_udp_open(&u))
			_exit(1);
		for (i = 0; i < 100; i++) {
			ktau_sleep_ns(KTAU_NSEC_PER_MSEC);
			if (ktau_udp_roundtrip(&u, 256))
				_exit(2);
		}
		end = ktau_now_ns() + 200 * KTAU_NSEC_PER_MSEC;
		while (ktau_now_ns() < end)
			;
		tfd = open("/proc/thread-self/ktau", O_RDONLY);
		pfd = open(KTAU_PROFILES_PATH, O_RDONLY);
		if (tfd < 0 || pfd < 0 || ktau_send_fd(sv[1], tfd) || ktau_send_fd(sv[1], pfd))
			_exit(3);
		/* Alive until root has read. */
		_exit(read(go[0], &c, 1) == 1 ? 0 : 4);
	}
	/* The child's ends: its exit before sending ends the receive. */
	close(go[0]);
	close(sv[1]);
	tfd = ktau_recv_fd(sv[0]);
	pfd = ktau_recv_fd(sv[0]);
	ASSERT_LE(0, tfd);
	ASSERT_LE(0, pfd);
	/* Root's own view of the thread: interrupts by source. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/ktau", pid, pid);
	fd = open(path, O_RDONLY);
	ASSERT_LE(0, fd) TH_LOG("%s: %s", path, strerror(errno));
	text = read_view(fd);
	ASSERT_NE(NULL, text);
	EXPECT_TRUE(view_has_sources(text)) TH_LOG("no interrupt source in %s", path);
	free(text);
	close(fd);
	fd = ktau_must_open_profiles(_metadata);
	r = snap_sources(fd, pid);
	EXPECT_LT(0, r) TH_LOG("root's snapshot: %d", r);
	r = snap_sources(fd, 0);
	EXPECT_LT(0, r) TH_LOG("root's aggregate: %d", r);
	close(fd);
	/* Through the descriptors the thread opened: no source. */
	text = read_view(tfd);
	ASSERT_NE(NULL, text);
	EXPECT_FALSE(view_has_sources(text)) TH_LOG("sources through the passed descriptor");
	free(text);
	r = snap_sources(pfd, pid);
	EXPECT_EQ(0, r) TH_LOG("snapshot through the passed descriptor: %d", r);
	/* Root may ask for the aggregate; its sources are the opener's view too. */
	r = snap_sources(pfd, 0);
	EXPECT_EQ(0, r) TH_LOG("aggregate through the passed descriptor: %d", r);
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("child: %#x", status);
	close(tfd);
	close(pfd);
	close(go[1]);
	close(sv[0]);
	sysctl_rw(PARANOID, old);
}

/*
 * /proc/ktau/aggregate is opened with CAP_PERFMON, but its text is made
 * at each read, for the reader: at perf_event_paranoid 2, a reader
 * without the capability (here, root's descriptor kept across dropping
 * privileges) sees the interrupts as "irq" and "softirq" only. Before, the
 * aggregate text always had the sources.
 */
TEST_F_TIMEOUT(irq, aggregate_text_is_the_readers_view, 60)
{
	int old = sysctl_rw(PARANOID, -100), fd, status;
	char *text;
	pid_t pid;

	ASSERT_LE(-1, old) TH_LOG("no %s: CONFIG_PERF_EVENTS?", PARANOID);
	ASSERT_EQ(old, sysctl_rw(PARANOID, 2));
	timer_and_net_load(_metadata);
	fd = open(KTAU_AGGREGATE_PATH, O_RDONLY);
	ASSERT_LE(0, fd) TH_LOG("%s: %s", KTAU_AGGREGATE_PATH, strerror(errno));
	text = read_view(fd);
	ASSERT_NE(NULL, text);
	EXPECT_TRUE(view_has_sources(text)) TH_LOG("no interrupt source in root's aggregate");
	free(text);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (ktau_become(KTAU_USER_ID, 0))
			_exit(1);
		text = read_view(fd);
		if (!text)
			_exit(2);
		if (view_has_sources(text))
			_exit(3);
		/* Not vacuous: the interrupts are there, folded. */
		_exit(has_folded(text) ? 0 : 4);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("status %#x (1 become, 2 read, 3 sources shown, 4 no folded entry)", status);
	close(fd);
	sysctl_rw(PARANOID, old);
}

/* What sampled_irq_ids() counts. */
struct irq_ids {
	unsigned int src;	/* samples in an interrupt source */
	unsigned int gen;	/* in "irq" or "softirq" */
	unsigned int gen_ip;	/* those of kernel mode with an address */
	unsigned int kern_ip;	/* kernel-mode samples with an address */
};

/*
 * Load this thread with interrupts while its sampler (started on it)
 * runs, read its samples through @fd, or a descriptor of
 * /proc/ktau/profiles opened now if @fd is -1 (stopping the sampler if
 * @stop), and add their counts to @ids; -errno of the read, or 0.
 */
static int sampled_irq_ids(struct __test_metadata *_metadata, int fd, struct irq_ids *ids,
			   bool stop)
{
	static struct ktau_sample samples[SAMPLES];
	struct ktau_funcs fs = { 0 };
	struct ktau_sample_read sr;
	unsigned int gen;
	__u64 end;
	int rfd = fd, ret;
	__u32 i;

	timer_and_net_load(_metadata);
	end = ktau_now_ns() + 100 * KTAU_NSEC_PER_MSEC;
	while (ktau_now_ns() < end)
		;
	if (rfd < 0)
		rfd = open(KTAU_PROFILES_PATH, O_RDONLY);
	if (rfd < 0)
		return -errno;
	ret = ktau_sample_read(rfd, 0, samples, SAMPLES, &sr, stop);
	if (fd < 0)
		close(rfd);
	if (!ret)
		ret = ktau_funcs_load(&fs);
	for (i = 0; !ret && i < sr.nread; i++) {
		bool kip = !(samples[i].flags & KTAU_SAMPLE_USER) && samples[i].ip;

		gen = ids->gen;
		count_irq_id(&fs, samples[i].id, &ids->src, &ids->gen);
		ids->kern_ip += kip;
		ids->gen_ip += kip && ids->gen != gen;
	}
	ktau_funcs_free(&fs);
	return ret;
}

/*
 * The routine IDs of samples are interrupt sources as in profiles: at
 * perf_event_paranoid 2, a thread without CAP_PERFMON that reads the
 * samples root's sampler took of it (kernel mode included, which it
 * could not have started itself) gets "irq" and "softirq", not the
 * sources (ABI 1.14; before, the IDs were passed through as taken), and
 * through root's descriptor, which shows kernel addresses, a kernel-mode
 * sample in an interrupt has none (its handler would name the source);
 * root reading its own samples gets the sources.
 */
TEST_F_TIMEOUT(irq, samples_keep_the_readers_view, 60)
{
	struct irq_ids ids = { 0 };
	unsigned int round;
	int go[2], done[2], status;
	pid_t pid;
	char c;

	ASSERT_LE(-1, self->paranoid) TH_LOG("no %s: CONFIG_PERF_EVENTS?", PARANOID);
	ASSERT_EQ(self->paranoid, sysctl_rw(PARANOID, 2));
	/* Root's own samples: the interrupts show in them at all. */
	ASSERT_EQ(0, ktau_sample_start(self->fd, 0, KTAU_SAMPLE_CPU_CLOCK, 100 * 1000,
				       SAMPLES, 0, 0, 0));
	ASSERT_EQ(0, sampled_irq_ids(_metadata, self->fd, &ids, true));
	TH_LOG("root: %u samples in interrupt sources, %u in irq/softirq", ids.src, ids.gen);
	if (!ids.src)
		SKIP(return, "no sample of root's landed in an interrupt source");
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(go[1]);
		close(done[0]);
		if (ktau_become(KTAU_USER_ID, 0) || write(done[1], "r", 1) != 1 ||
		    read(go[0], &c, 1) != 1)
			_exit(1);
		memset(&ids, 0, sizeof(ids));
		/*
		 * Through root's descriptor until a sample lands in an
		 * interrupt and one elsewhere in the kernel, for a few rounds;
		 * then through its own, stopping.
		 */
		for (round = 0; round < 10 && !ids.src && !(ids.gen && ids.kern_ip); round++)
			if (sampled_irq_ids(_metadata, self->fd, &ids, false))
				_exit(2);
		if (sampled_irq_ids(_metadata, -1, &ids, true))
			_exit(2);
		if (ids.src)
			_exit(3);
		if (!ids.gen)
			_exit(4);
		_exit(ids.gen_ip ? 5 : ids.kern_ip ? 0 : 6);
	}
	close(go[0]);
	close(done[1]);
	ASSERT_EQ(1, read(done[0], &c, 1));
	EXPECT_EQ(0, ktau_sample_start(self->fd, pid, KTAU_SAMPLE_CPU_CLOCK, 100 * 1000,
				       SAMPLES, 0, 0, 0));
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("status %#x (%s; %s)", status,
		       "1 become, 2 read, 3 sources in its samples, 4 none in irq/softirq",
		       "5 an interrupt's kernel address, 6 no kernel address at all");
	close(go[1]);
	close(done[0]);
}

TEST_HARNESS_MAIN
