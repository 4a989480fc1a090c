// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU dynamic probes (ABI 1.2): KTAU_IOC_PROBE_ADD/REMOVE on
 * /proc/ktau/probes. A probed function is timed in the per-task profile
 * with exact counts, nested in the routine that calls it; probes are
 * refused where they cannot work; they go with their file, at reset, and
 * counting stays right while they come and go under load.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include "ktau_util.h"

#define PROBE_CALLS		1000
#define LOAD_ROUNDS		20

static int probe_add(int fd, const char *name)
{
	return ktau_probe_ioctl(fd, KTAU_IOC_PROBE_ADD, name, 0);
}

static int probe_remove(int fd, const char *name)
{
	return ktau_probe_ioctl(fd, KTAU_IOC_PROBE_REMOVE, name, 0);
}

/* The owner pid /proc/ktau/probes lists for @name; -ENOENT if absent. */
static int probe_listed(const char *name)
{
	char *text = ktau_slurp(KTAU_PROBES_PATH, NULL), *line, *save;
	char fn[KTAU_PROBE_NAME_LEN];
	unsigned long missed;
	int ret = -ENOENT;
	unsigned int id;
	int owner;

	if (!text)
		return -errno;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		if (sscanf(line, "%u %63s %d %lu", &id, fn, &owner, &missed) != 4) {
			ret = -EBADMSG;
			break;
		}
		if (!strcmp(fn, name)) {
			ret = owner;
			break;
		}
	}
	free(text);
	return ret;
}

static int nr_listed(void)
{
	char *text = ktau_slurp(KTAU_PROBES_PATH, NULL), *p;
	int n = 0;

	if (!text)
		return -errno;
	for (p = text; *p; p++)
		if (*p == '\n')
			n++;
	free(text);
	return n - 1;	/* the header */
}

static int open_probes(struct __test_metadata *_metadata)
{
	int fd = open(KTAU_PROBES_PATH, O_RDONLY);

	ASSERT_LE(0, fd) TH_LOG("open %s: %s (kernel without CONFIG_FPROBE?)",
				KTAU_PROBES_PATH, strerror(errno));
	return fd;
}

FIXTURE(probe) {
	int fd;		/* /proc/ktau/probes */
	int pfd;	/* /proc/ktau/profiles */
	struct ktau_snap a, b;
};

FIXTURE_SETUP(probe)
{
	ktau_must_have_ktau(_metadata);
	self->fd = open_probes(_metadata);
	self->pfd = ktau_must_open_profiles(_metadata);
	memset(&self->a, 0, sizeof(self->a));
	memset(&self->b, 0, sizeof(self->b));
}

FIXTURE_TEARDOWN(probe)
{
	close(self->fd);
	close(self->pfd);
	ktau_snap_free(&self->a);
	ktau_snap_free(&self->b);
}

/* Exact counts, nested in the system call, listed and named. */
TEST_F(probe, times_function_exactly)
{
	const struct ktau_task_rec *ra, *rb;
	struct ktau_val p, sys;
	struct ktau_funcs fs = { 0 };
	const struct ktau_func *f;
	int id;

	id = probe_add(self->fd, "__x64_sys_getppid");
	ASSERT_LT(0, id) TH_LOG("add: %s", strerror(-id));
	ASSERT_EQ(getpid(), probe_listed("__x64_sys_getppid"));
	ASSERT_EQ(0, ktau_funcs_load(&fs));
	f = ktau_func_by_id(&fs, id);
	ASSERT_NE(NULL, f);
	EXPECT_STREQ("dynamic", f->group);
	EXPECT_STREQ("__x64_sys_getppid", f->name);
	ktau_funcs_free(&fs);

	ra = ktau_must_snap_self(_metadata, self->pfd, &self->a);
	ktau_getppid_loop(PROBE_CALLS);
	rb = ktau_must_snap_self(_metadata, self->pfd, &self->b);
	p = ktau_val_delta(ra, rb, id);
	sys = ktau_val_delta(ra, rb, KTAU_ID_GETPPID);
	EXPECT_EQ(PROBE_CALLS, p.count);
	EXPECT_EQ(PROBE_CALLS, sys.count);
	EXPECT_LT(0, p.incl);
	EXPECT_LE(p.excl, p.incl);
	/* Nested: the call's exclusive time leaves the probe's out. */
	EXPECT_LE(p.incl, sys.incl - sys.excl)
		TH_LOG("probe incl %llu, getppid incl %llu excl %llu",
		       p.incl, sys.incl, sys.excl);

	ASSERT_EQ(0, probe_remove(self->fd, "__x64_sys_getppid"));
	ASSERT_EQ(-ENOENT, probe_listed("__x64_sys_getppid"));
	ra = ktau_must_snap_self(_metadata, self->pfd, &self->a);
	ktau_getppid_loop(100);
	rb = ktau_must_snap_self(_metadata, self->pfd, &self->b);
	EXPECT_EQ(0, ktau_val_delta(ra, rb, id).count);
}

/*
 * A function that returns in another context than it was entered in:
 * __local_bh_disable_ip(), out of line with CONFIG_TRACE_IRQFLAGS (the
 * debug kernel), enters in the task's context and returns in the softirq
 * handling it begins whenever a softirq runs on top of the task (here
 * NET_RX, run at the loopback send's local_bh_enable()). Each return
 * closes its own frame: no exit unmatched, no frame left for the next
 * call to take for recursion.
 */
TEST_F(probe, function_returning_in_another_context)
{
	const struct ktau_task_rec *ra, *rb;
	struct ktau_udp u;
	int i, id, ret;

	id = probe_add(self->fd, "__local_bh_disable_ip");
	/* Out of line only with CONFIG_TRACE_IRQFLAGS. */
	if (id == -ENOENT)
		SKIP(return, "__local_bh_disable_ip is inline in this kernel");
	ASSERT_LT(0, id) TH_LOG("add: %s", strerror(-id));
	ret = ktau_udp_open(&u);
	ASSERT_EQ(0, ret) TH_LOG("loopback UDP sockets: %s", strerror(-ret));
	ra = ktau_must_snap_self(_metadata, self->pfd, &self->a);
	for (i = 0; i < 200; i++) {
		ret = ktau_udp_roundtrip(&u, 64);
		ASSERT_EQ(0, ret) TH_LOG("loopback UDP: %s (is lo up?)", strerror(-ret));
	}
	rb = ktau_must_snap_self(_metadata, self->pfd, &self->b);
	ktau_udp_close(&u);
	EXPECT_LE(200, ktau_val_delta(ra, rb, id).count);
	EXPECT_EQ(ra->unmatched, rb->unmatched);
	EXPECT_EQ(ra->stack_overflows, rb->stack_overflows);
	EXPECT_EQ(0, probe_remove(self->fd, "__local_bh_disable_ip"));
}

/* A probed function's inclusive time in the thread's shared page, in ns. */
static __u64 page_incl_ns(const struct ktau_shared *page, __u32 id)
{
	static struct ktau_shared c;
	const struct ktau_shared_entry *e;

	ktau_shared_copy(page, &c);
	e = ktau_shared_entry(&c, id);
	return e ? ktau_shared_ns(&c, e->incl) : 0;
}

/*
 * A probe added again (its frames carry a generation other than 0) is
 * timed the same in the thread's shared page as in its profile: the
 * page used to take the frame's generation for a recursion flag and add
 * the frame's stale "dup" instead of its inclusive time.
 */
TEST_F(probe, shared_page_times_readded_probe)
{
	const struct ktau_task_rec *ra, *rb;
	struct ktau_shared *page;
	__u64 before, ns;
	struct ktau_val p;
	int id;

	page = mmap(NULL, sizeof(*page), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	id = probe_add(self->fd, "__x64_sys_getppid");
	ASSERT_LT(0, id);
	ASSERT_EQ(0, probe_remove(self->fd, "__x64_sys_getppid"));
	ASSERT_EQ(id, probe_add(self->fd, "__x64_sys_getppid"));
	ASSERT_EQ(0, ktau_shared_register(self->pfd, page, sizeof(*page), 0));
	before = page_incl_ns(page, id);
	ra = ktau_must_snap_self(_metadata, self->pfd, &self->a);
	ktau_getppid_loop(PROBE_CALLS);
	rb = ktau_must_snap_self(_metadata, self->pfd, &self->b);
	ns = page_incl_ns(page, id) - before;
	p = ktau_val_delta(ra, rb, id);
	TH_LOG("probe incl: page %llu ns, profile %llu ns", (unsigned long long)ns,
	       (unsigned long long)p.incl);
	EXPECT_EQ(PROBE_CALLS, p.count);
	EXPECT_LT(0, p.incl);
	/* The same times, to the rounding of the page's clock units. */
	EXPECT_GE(ns + ns / 1000 + 10, p.incl);
	EXPECT_LE(ns, p.incl + p.incl / 1000 + 10);
	EXPECT_EQ(0, ktau_shared_unregister(self->pfd));
	EXPECT_EQ(0, probe_remove(self->fd, "__x64_sys_getppid"));
	munmap(page, sizeof(*page));
}

/* Two probes on one path nest in each other: read -> vfs_read. */
TEST_F(probe, probes_nest)
{
	const struct ktau_task_rec *ra, *rb;
	struct ktau_val outer, inner;
	int i, devnull, o, in;
	char c;

	devnull = open("/dev/null", O_RDONLY);
	ASSERT_LE(0, devnull);
	o = probe_add(self->fd, "__x64_sys_read");
	ASSERT_LT(0, o) TH_LOG("add: %s", strerror(-o));
	in = probe_add(self->fd, "vfs_read");
	ASSERT_LT(0, in) TH_LOG("add: %s", strerror(-in));
	ra = ktau_must_snap_self(_metadata, self->pfd, &self->a);
	for (i = 0; i < PROBE_CALLS; i++)
		ASSERT_EQ(0, read(devnull, &c, 1));
	rb = ktau_must_snap_self(_metadata, self->pfd, &self->b);
	outer = ktau_val_delta(ra, rb, o);
	inner = ktau_val_delta(ra, rb, in);
	EXPECT_EQ(PROBE_CALLS, outer.count);
	EXPECT_EQ(PROBE_CALLS, inner.count);
	EXPECT_LE(inner.incl, outer.incl - outer.excl);
	EXPECT_EQ(0, rb->unmatched - ra->unmatched);
	close(devnull);
}

/* The same function probed again keeps its ID. */
TEST_F(probe, same_function_same_id)
{
	int id1, id2;

	id1 = probe_add(self->fd, "__x64_sys_getppid");
	ASSERT_LT(0, id1);
	ASSERT_EQ(-EEXIST, probe_add(self->fd, "__x64_sys_getppid"));
	ASSERT_EQ(0, probe_remove(self->fd, "__x64_sys_getppid"));
	id2 = probe_add(self->fd, "__x64_sys_getppid");
	EXPECT_EQ(id1, id2);
	/* Remove by ID (empty name). */
	ASSERT_EQ(0, ktau_probe_ioctl(self->fd, KTAU_IOC_PROBE_REMOVE, "", id2));
	ASSERT_EQ(-ENOENT, ktau_probe_ioctl(self->fd, KTAU_IOC_PROBE_REMOVE, "", id2));
}

/*
 * Two functions whose names share their first 39 characters: each gets
 * its own ID and its whole name (ABI 1.3; names used to be cut at 39
 * characters, and a probe on the second found the first's ID). Found in
 * /proc/kallsyms; a candidate that cannot be probed (no ftrace site) is
 * passed over.
 */
static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char * const *)a, *(char * const *)b);
}

TEST_F(probe, long_names_not_cut)
{
	char *syms = ktau_slurp("/proc/kallsyms", NULL), *line, *save = NULL;
	char name[128], t, **v = NULL;
	struct ktau_funcs fs = { 0 };
	const struct ktau_func *fa, *fb;
	size_t n = 0, i;
	int ida = 0, idb = 0;

	ASSERT_NE(NULL, syms);
	for (line = strtok_r(syms, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%*s %c %127s", &t, name) != 2 || (t != 't' && t != 'T') ||
		    strchr(name, '.') || strlen(name) < 40 || strlen(name) > 63)
			continue;
		v = realloc(v, (n + 1) * sizeof(*v));
		ASSERT_NE(NULL, v);
		v[n++] = strdup(name);
	}
	free(syms);
	qsort(v, n, sizeof(*v), str_cmp);
	for (i = 1; i < n && idb <= 0; i++) {
		if (strncmp(v[i - 1], v[i], 39) || !strcmp(v[i - 1], v[i]))
			continue;
		ida = probe_add(self->fd, v[i - 1]);
		if (ida <= 0)
			continue;
		idb = probe_add(self->fd, v[i]);
		if (idb <= 0)
			probe_remove(self->fd, v[i - 1]);
	}
	/* In /proc/kallsyms: two probe-able functions of 40+ characters. */
	ASSERT_LT(0, idb) TH_LOG("none with the same first 39 characters");
	i--;
	TH_LOG("%s (%d) and %s (%d)", v[i - 1], ida, v[i], idb);
	EXPECT_NE(ida, idb);
	ASSERT_EQ(0, ktau_funcs_load(&fs));
	fa = ktau_func_by_id(&fs, ida);
	fb = ktau_func_by_id(&fs, idb);
	ASSERT_NE(NULL, fa);
	ASSERT_NE(NULL, fb);
	EXPECT_STREQ(v[i - 1], fa->name);
	EXPECT_STREQ(v[i], fb->name);
	ktau_funcs_free(&fs);
	EXPECT_EQ(0, probe_remove(self->fd, v[i - 1]));
	EXPECT_EQ(0, probe_remove(self->fd, v[i]));
	while (n)
		free(v[--n]);
	free(v);
}

/* Refused, each with its errno, and nothing added. */
/*
 * IDs are never given out again within the boot: another function
 * probed after a probe was removed gets an ID that no function had (the
 * same function again gets its old one, above); the removed probe's ID,
 * if still listed, still names its function.
 */
TEST_F(probe, ids_never_reused)
{
	struct ktau_funcs fs = { 0 };
	const struct ktau_func *f;
	int id1, id2;

	id1 = probe_add(self->fd, "__x64_sys_getppid");
	ASSERT_LT(0, id1);
	ASSERT_EQ(0, probe_remove(self->fd, "__x64_sys_getppid"));
	ASSERT_EQ(0, ktau_funcs_load(&fs));
	f = ktau_func_by_id(&fs, id1);
	if (f)
		EXPECT_STREQ("__x64_sys_getppid", f->name);
	id2 = probe_add(self->fd, "__x64_sys_getpid");
	ASSERT_LT(0, id2);
	EXPECT_NE(id1, id2);
	EXPECT_EQ(NULL, ktau_func_by_id(&fs, id2)) TH_LOG("id %d was given before", id2);
	ASSERT_EQ(0, probe_remove(self->fd, "__x64_sys_getpid"));
	ktau_funcs_free(&fs);
}

struct blocked_reader {
	int p[2];
	pid_t tid;
	int done;
};

#define BLOCKED_NS	(200 * KTAU_NSEC_PER_MSEC)

static void *blocked_reader_fn(void *arg)
{
	struct blocked_reader *b = arg;
	char c;

	__atomic_store_n(&b->tid, gettid(), __ATOMIC_RELEASE);
	if (read(b->p[0], &c, 1) == 1)
		__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	/* Blocked again, so that it can be looked at; not probed now. */
	read(b->p[0], &c, 1);
	return NULL;
}

/* The state letter of a thread of this process. */
static char thread_state(pid_t tid)
{
	return ktau_task_state(getpid(), tid);
}

/*
 * A probe removed while a task is inside the function (a reader blocked
 * in pipe_read()): that frame's exit never comes, so the function gets
 * no call; the frame is dropped and counted as unmatched when the task's
 * system call ends, and the read() itself is one call as usual. The
 * reader's stay off the CPU ended inside the dropped frame: it is still
 * the read()'s child, not read()'s exclusive time too (it was, counted
 * twice, until the dropped frame's children went to the frame below).
 */
TEST_F(probe, removed_while_task_inside)
{
	struct blocked_reader b = { 0 };
	const struct ktau_task_rec *ra, *rb;
	struct ktau_val rd, bl;
	pthread_t th;
	int id, i;

	ASSERT_EQ(0, pipe(b.p));
	id = probe_add(self->fd, "pipe_read");
	ASSERT_LT(0, id) TH_LOG("add pipe_read: %s", strerror(-id));
	ASSERT_EQ(0, pthread_create(&th, NULL, blocked_reader_fn, &b));
	for (i = 0; i < 5000 && (!__atomic_load_n(&b.tid, __ATOMIC_ACQUIRE) ||
				 thread_state(b.tid) != 'S'); i++)
		usleep(1000);
	ASSERT_EQ('S', thread_state(b.tid));
	ASSERT_EQ(0, ktau_snap(self->pfd, &self->a, KTAU_SNAP_PIDS, &b.tid, 1));
	ra = ktau_snap_find(&self->a, b.tid);
	ASSERT_NE(NULL, ra);
	ASSERT_EQ(0, probe_remove(self->fd, "pipe_read"));
	usleep(BLOCKED_NS / 1000);
	ASSERT_EQ(1, write(b.p[1], "x", 1));
	for (i = 0; i < 5000 && !__atomic_load_n(&b.done, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	ASSERT_EQ(1, __atomic_load_n(&b.done, __ATOMIC_ACQUIRE));
	for (i = 0; i < 5000 && thread_state(b.tid) != 'S'; i++)
		usleep(1000);
	ASSERT_EQ(0, ktau_snap(self->pfd, &self->b, KTAU_SNAP_PIDS, &b.tid, 1));
	rb = ktau_snap_find(&self->b, b.tid);
	ASSERT_NE(NULL, rb);
	TH_LOG("pipe_read +%llu, read +%llu, unmatched +%llu",
	       ktau_val_delta(ra, rb, id).count, ktau_val_delta(ra, rb, KTAU_ID_READ).count,
	       (unsigned long long)(rb->unmatched - ra->unmatched));
	EXPECT_EQ(0, ktau_val_delta(ra, rb, id).count);
	EXPECT_EQ(1, ktau_val_delta(ra, rb, KTAU_ID_READ).count);
	EXPECT_EQ(1, rb->unmatched - ra->unmatched);
	rd = ktau_val_delta(ra, rb, KTAU_ID_READ);
	bl = ktau_val_delta(ra, rb, KTAU_ID_SCHED_VOL);
	TH_LOG("read: incl %llu excl %llu ns; sched_blocked: incl %llu ns",
	       (unsigned long long)rd.incl, (unsigned long long)rd.excl,
	       (unsigned long long)bl.incl);
	EXPECT_LE(BLOCKED_NS, bl.incl);
	EXPECT_GT(BLOCKED_NS / 2, rd.excl);
	ASSERT_EQ(1, write(b.p[1], "x", 1));
	ASSERT_EQ(0, pthread_join(th, NULL));
	close(b.p[0]);
	close(b.p[1]);
}

/*
 * The kernel's name of function @base: @base itself, or a copy the
 * compiler made (@base.isra.0, @base.constprop.0, ...); false if none.
 */
static bool kallsyms_clone(const char *base, char *out, size_t n)
{
	char *text = ktau_slurp("/proc/kallsyms", NULL), *line, *save;
	char name[128], type;
	unsigned long long addr;
	size_t len = strlen(base);
	bool found = false;

	if (!text)
		return false;
	for (line = strtok_r(text, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%llx %c %127s", &addr, &type, name) != 3 ||
		    strncmp(name, base, len) || (name[len] && name[len] != '.'))
			continue;
		snprintf(out, n, "%s", name);
		found = true;
	}
	free(text);
	return found;
}

TEST_F(probe, refused)
{
	struct ktau_probe_req req;
	int before = nr_listed(), id;
	char name[128];
	bool found;

	EXPECT_EQ(-ENOENT, probe_add(self->fd, "ktau_no_such_function"));
	/* KTAU's own code is built without ftrace sites. */
	EXPECT_EQ(-EINVAL, probe_add(self->fd, "ktau_set_groups"));
	/* noinstr entry code. */
	EXPECT_EQ(-EINVAL, probe_add(self->fd, "exc_page_fault"));
	/* Opens a KTAU frame and returns: would interleave. */
	EXPECT_EQ(-EINVAL, probe_add(self->fd, "irq_enter_rcu"));
	/*
	 * Spans a guest entry: would interleave with the kvm group's frames
	 * (vcpu_enter_guest is inlined into its caller here: no symbol).
	 */
	found = kallsyms_clone("vcpu_enter_guest", name, sizeof(name));
	EXPECT_EQ(found ? -EINVAL : -ENOENT,
		  probe_add(self->fd, found ? name : "vcpu_enter_guest"));
	EXPECT_EQ(-EINVAL, probe_add(self->fd, "svm_vcpu_run"));
	/*
	 * Closes the sched frame __schedule() opened; by the name the
	 * compiler gave it (finish_task_switch.isra.0 here: the deny list
	 * matched names exactly, so that one was accepted).
	 */
	ASSERT_TRUE(kallsyms_clone("finish_task_switch", name, sizeof(name)));
	EXPECT_EQ(-EINVAL, probe_add(self->fd, name)) TH_LOG("%s accepted", name);
	/* One function, two names (SYSCALL_DEFINE's alias): one probe. */
	id = probe_add(self->fd, "__x64_sys_getppid");
	ASSERT_LT(0, id);
	EXPECT_EQ(-EEXIST, probe_add(self->fd, "__do_sys_getppid"));
	EXPECT_EQ(0, probe_remove(self->fd, "__x64_sys_getppid"));
	EXPECT_EQ(-EINVAL, probe_add(self->fd, ""));
	EXPECT_EQ(-ENOENT, probe_remove(self->fd, "vfs_read"));

	memset(&req, 0, sizeof(req));
	req.size = sizeof(req) - 1;
	snprintf(req.name, sizeof(req.name), "%s", "vfs_read");
	EXPECT_EQ(-1, ioctl(self->fd, KTAU_IOC_PROBE_ADD, &req));
	EXPECT_EQ(EINVAL, errno);
	req.size = sizeof(req);
	req.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KTAU_IOC_PROBE_ADD, &req));
	EXPECT_EQ(EINVAL, errno);
	req.flags = 0;
	req.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, KTAU_IOC_PROBE_ADD, &req));
	EXPECT_EQ(EINVAL, errno);
	req.reserved = 0;
	memset(req.name, 'a', sizeof(req.name));	/* no NUL */
	EXPECT_EQ(-1, ioctl(self->fd, KTAU_IOC_PROBE_ADD, &req));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KTAU_IOC_PROBE_ADD, NULL));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KTAU_IOC_PROBE_ADD + 1, &req));
	EXPECT_EQ(ENOTTY, errno);
	/* Probes are added on /proc/ktau/probes only. */
	snprintf(req.name, sizeof(req.name), "%s", "vfs_read");
	EXPECT_EQ(-1, ioctl(self->pfd, KTAU_IOC_PROBE_ADD, &req));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(before, nr_listed());
}

/* At most KTAU_PROBE_MAX at once: system call wrappers, all traceable. */
TEST_F(probe, limit)
{
	char *text = ktau_slurp("/proc/kallsyms", NULL), *line, *save;
	char name[128], type;
	unsigned long long addr;
	int added = 0, ret;

	ASSERT_NE(NULL, text);
	for (line = strtok_r(text, "\n", &save); line && added < KTAU_PROBE_MAX + 1;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%llx %c %127s", &addr, &type, name) != 3 ||
		    strncmp(name, "__x64_sys_", 10) || strchr(line, '['))
			continue;
		ret = probe_add(self->fd, name);
		if (ret == -EINVAL || ret == -EEXIST)
			continue;
		if (added == KTAU_PROBE_MAX) {
			EXPECT_EQ(-ENOSPC, ret);
			added++;
			break;
		}
		ASSERT_LT(0, ret) TH_LOG("add %s: %s", name, strerror(-ret));
		added++;
	}
	free(text);
	ASSERT_EQ(KTAU_PROBE_MAX + 1, added) TH_LOG("too few system call wrappers to fill");
	EXPECT_EQ(KTAU_PROBE_MAX, nr_listed());
	close(self->fd);
	self->fd = open_probes(_metadata);
	EXPECT_EQ(0, nr_listed());
}

/* Without CAP_PERFMON nothing can be added; the list is readable. */
static void add_as_user(struct __test_metadata *_metadata)
{
	int fd = open(KTAU_PROBES_PATH, O_RDONLY);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EPERM, probe_add(fd, "vfs_read"));
	EXPECT_EQ(-EPERM, probe_remove(fd, "vfs_read"));
	EXPECT_LE(0, nr_listed());
	close(fd);
}

static void add_as_perfmon(struct __test_metadata *_metadata)
{
	int fd = open(KTAU_PROBES_PATH, O_RDONLY);

	ASSERT_LE(0, fd);
	EXPECT_LT(0, probe_add(fd, "vfs_read"));
	EXPECT_EQ(0, probe_remove(fd, "vfs_read"));
	close(fd);
}

TEST(permissions)
{
	ktau_must_have_ktau(_metadata);
	ktau_run_as(_metadata, KTAU_USER_ID, 0, add_as_user);
	ktau_run_as(_metadata, KTAU_USER_ID, KTAU_CAP(CAP_PERFMON), add_as_perfmon);
}

/* The holder is killed: its probes go with its file. */
TEST(killed_owner_loses_probes)
{
	int sync[2], fd;
	pid_t pid;
	char c;

	ktau_must_have_ktau(_metadata);
	ASSERT_EQ(0, pipe(sync));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		fd = open(KTAU_PROBES_PATH, O_RDONLY);
		if (fd < 0 || probe_add(fd, "vfs_read") <= 0)
			_exit(1);
		if (write(sync[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(sync[1]);
	ASSERT_EQ(1, read(sync[0], &c, 1));
	EXPECT_EQ(pid, probe_listed("vfs_read"));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	EXPECT_EQ(-ENOENT, probe_listed("vfs_read"));
	close(sync[0]);
}

/*
 * The adder exits, its file lives on in another process: the probe stays,
 * and its owner is listed as 0 (ABI 1.7), not as the number of a process
 * that is gone and may be another one's.
 */
TEST(exited_adder_listed_as_zero)
{
	int fd, status;
	pid_t pid;

	ktau_must_have_ktau(_metadata);
	fd = open(KTAU_PROBES_PATH, O_RDONLY);
	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(probe_add(fd, "vfs_read") > 0 ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status) TH_LOG("the child could not add the probe");
	EXPECT_EQ(0, probe_listed("vfs_read"));
	close(fd);
	EXPECT_EQ(-ENOENT, probe_listed("vfs_read"));
}

/* A file shared with a child keeps the probes until the last close. */
TEST(last_close_removes)
{
	int fd = open(KTAU_PROBES_PATH, O_RDONLY), fd2;

	ASSERT_LE(0, fd);
	ASSERT_LT(0, probe_add(fd, "vfs_read"));
	fd2 = dup(fd);
	close(fd);
	EXPECT_EQ(getpid(), probe_listed("vfs_read"));
	close(fd2);
	EXPECT_EQ(-ENOENT, probe_listed("vfs_read"));
}

TEST_F(probe, reset_removes)
{
	ASSERT_LT(0, probe_add(self->fd, "vfs_read"));
	ASSERT_EQ(0, ktau_control("reset"));
	EXPECT_EQ(-ENOENT, probe_listed("vfs_read"));
	EXPECT_EQ(-ENOENT, probe_remove(self->fd, "vfs_read"));
}

/* Probes added and removed while another thread runs through them. */
struct load {
	int stop;		/* __atomic */
	unsigned long calls;	/* __atomic: getppid() calls returned */
	int pfd;
	pid_t tid;
};

static void *load_fn(void *arg)
{
	struct load *l = arg;

	__atomic_store_n(&l->tid, gettid(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&l->stop, __ATOMIC_RELAXED)) {
		syscall(SYS_getppid);
		__atomic_store_n(&l->calls, l->calls + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static unsigned long load_calls(struct load *l)
{
	return __atomic_load_n(&l->calls, __ATOMIC_ACQUIRE);
}

TEST_F(probe, add_remove_under_load)
{
	const struct ktau_task_rec *ra, *rb;
	struct load l = { 0 };
	const struct ktau_entry *e;
	struct ktau_val p, sys;
	unsigned long c0, c1, inside = 0;
	pthread_t th;
	int i, j, id = 0;
	__u32 k;

	ASSERT_EQ(1, ktau_group_state("dynamic")) TH_LOG("the dynamic group is off");
	ASSERT_EQ(0, pthread_create(&th, NULL, load_fn, &l));
	while (!__atomic_load_n(&l.tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	ASSERT_EQ(0, ktau_snap(self->pfd, &self->a, KTAU_SNAP_PIDS, &l.tid, 1));
	ra = ktau_snap_find(&self->a, l.tid);
	ASSERT_NE(NULL, ra);
	for (i = 0; i < LOAD_ROUNDS; i++) {
		id = probe_add(self->fd, "__x64_sys_getppid");
		ASSERT_LT(0, id);
		/*
		 * Calls c0 + 2 ... c1 began after the add returned (call
		 * c0 + 1 had not returned when c0 was read) and returned
		 * before the remove: the probe timed each of them.
		 */
		c0 = load_calls(&l);
		usleep(2000);
		for (j = 0; j < 5000 && load_calls(&l) < c0 + 3; j++)
			usleep(1000);
		c1 = load_calls(&l);
		ASSERT_EQ(0, probe_remove(self->fd, "__x64_sys_getppid"));
		if (c1 > c0 + 1)
			inside += c1 - c0 - 1;
	}
	ASSERT_EQ(0, ktau_snap(self->pfd, &self->b, KTAU_SNAP_PIDS, &l.tid, 1));
	__atomic_store_n(&l.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	rb = ktau_snap_find(&self->b, l.tid);
	ASSERT_NE(NULL, rb) TH_LOG("the thread's record is gone");
	p = ktau_val_delta(ra, rb, id);
	sys = ktau_val_delta(ra, rb, KTAU_ID_GETPPID);
	TH_LOG("%lu calls, %lu while the probe was surely in, %llu probed",
	       l.calls, inside, p.count);
	/* The probe fired: at least two calls a round were inside it. */
	EXPECT_LE(2 * LOAD_ROUNDS, inside);
	EXPECT_LE(inside, p.count);
	EXPECT_LT(0, p.incl);
	EXPECT_LE(p.count, sys.count);
	EXPECT_LE(p.incl, sys.incl - sys.excl);
	/* A probe removed while a call was inside leaves that frame open. */
	EXPECT_LE(rb->unmatched - ra->unmatched, LOAD_ROUNDS);
	e = ktau_rec_entries(rb);
	for (k = 0; k < rb->nentries; k++)
		EXPECT_LE(e[k].excl_ns, e[k].incl_ns) TH_LOG("id %u", e[k].id);
}

TEST_HARNESS_MAIN
