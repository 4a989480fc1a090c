// SPDX-License-Identifier: GPL-2.0
/*
 * The KTAU permission matrix: every read and control operation, run as
 * root, as an unprivileged user on a task of its own uid, as the same user
 * on a task of another uid, and as that user with only CAP_PERFMON, only
 * CAP_SYS_ADMIN or only CAP_SYS_PTRACE, and each result checked against
 * pm_rows[], which is the table of the "Permissions" section of
 * Documentation/trace/ktau.rst, cell for cell:
 *
 *	KTAU_PERMMATRIX_RST=1 ./ktau_permmatrix
 *
 * prints the table as it must appear there.
 *
 * Then kernel addresses: no view, record or text shows one to anyone,
 * whatever kernel.kptr_restrict says; samples (ABI 1.1) show the kernel
 * addresses of kernel-mode samples only to readers that kallsyms would
 * show them to.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "ktau_util.h"

#define PM_PERIOD_NS	200000	/* sampling period: 5 kHz of the CPU clock */

/* Outcomes: 0 ("yes"), a positive errno, or one of these. */
#define PM_NMISSING	(-1)	/* a snapshot left the task out */
#define PM_DENIED	(-2)	/* the collector counted the member as denied */
#define PM_SKIP		(-3)	/* not in this kernel's ABI */
#define PM_BROKEN	(-4)	/* neither allowed nor denied cleanly */
#define PM_UNSET	(-5)

enum pm_col { C_ROOT, C_SAME, C_OTHER, C_PERFMON, C_SYSADMIN, C_PTRACE, C_NR };

static const char * const pm_col_head[C_NR][2] = {
	{ "root", "" }, { "same uid", "" }, { "other uid", "" }, { "CAP_PERFMON", "only" },
	{ "CAP_SYS_ADMIN", "only" }, { "CAP_SYS_PTRACE", "only" },
};

/* Who calls, and whose task it reads: see the table's introduction. */
static const struct pm_who {
	uid_t uid;
	__u64 caps;		/* KTAU_CAP() bits; root: all */
	uid_t target_uid;
} pm_who[C_NR] = {
	[C_ROOT] = { 0, ~0ull, KTAU_OTHER_ID },
	[C_SAME] = { KTAU_USER_ID, 0, KTAU_USER_ID },
	[C_OTHER] = { KTAU_USER_ID, 0, KTAU_OTHER_ID },
	[C_PERFMON] = { KTAU_USER_ID, KTAU_CAP(CAP_PERFMON), KTAU_OTHER_ID },
	[C_SYSADMIN] = { KTAU_USER_ID, KTAU_CAP(CAP_SYS_ADMIN), KTAU_OTHER_ID },
	[C_PTRACE] = { KTAU_USER_ID, KTAU_CAP(CAP_SYS_PTRACE), KTAU_OTHER_ID },
};

struct pm_ctx {
	enum pm_col col;
	pid_t target;		/* another task: the row's target */
	pid_t sampled;		/* its thread root samples; 0: no sampling rows */
	int ctl_fd;		/* /proc/ktau/control, opened for writing by root */
	int sock;		/* to the test process, to hand over a collector */
	int abi_minor;
};

typedef int (*pm_fn)(struct pm_ctx *c);

struct pm_row {
	const char *op;		/* as in the table of ktau.rst */
	const char *cell[C_NR];
	pm_fn fn;		/* NULL: the test process does it (collect) */
};

static int pm_errno(int ret)
{
	return ret ? errno : 0;
}

/* Read a whole file: 0, or the errno of open or read. */
static int pm_read_file(const char *path, char **out)
{
	size_t len;
	char *s = ktau_slurp(path, &len);

	if (!s)
		return errno;
	if (out)
		*out = s;
	else
		free(s);
	return 0;
}

static int op_read_public(struct pm_ctx *c)
{
	static const char * const files[] = {
		KTAU_VERSION_PATH, KTAU_FUNCTIONS_PATH, KTAU_CONTROL_PATH,
	};
	int ret = 0, r;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(files); i++) {
		r = pm_read_file(files[i], NULL);
		if (i && r != ret)
			return PM_BROKEN;
		ret = r;
	}
	return ret;
}

/* A text profile whose first line names @pid: 0, an errno, or broken. */
static int pm_read_view(const char *path, const char *head, pid_t pid)
{
	char *s = NULL, want[64];
	int ret = pm_read_file(path, &s);

	if (ret)
		return ret;
	snprintf(want, sizeof(want), "%s %d ", head, pid);
	if (strncmp(s, want, strlen(want))) {
		ktau_log("%s begins '%.40s', not '%s'", path, s, want);
		ret = PM_BROKEN;
	}
	free(s);
	return ret;
}

static int op_read_own(struct pm_ctx *c)
{
	char path[64];
	int a, b;

	a = pm_read_view("/proc/self/ktau", "# pid", getpid());
	snprintf(path, sizeof(path), "/proc/self/task/%d/ktau", gettid());
	b = pm_read_view(path, "# tid", gettid());
	return a == b ? a : PM_BROKEN;
}

static int op_read_other(struct pm_ctx *c)
{
	char path[64];
	int a, b;

	snprintf(path, sizeof(path), "/proc/%d/ktau", c->target);
	a = pm_read_view(path, "# pid", c->target);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/ktau", c->target, c->target);
	b = pm_read_view(path, "# tid", c->target);
	return a == b ? a : PM_BROKEN;
}

static int op_snap_self(struct pm_ctx *c)
{
	struct ktau_snap s = { 0 };
	int fd = open(KTAU_PROFILES_PATH, O_RDONLY), ret;

	if (fd < 0)
		return errno;
	ret = -ktau_snap(fd, &s, KTAU_SNAP_SELF, NULL, 0);
	if (!ret && (s.req.ntasks != 1 || !ktau_snap_find(&s, gettid())))
		ret = PM_BROKEN;
	ktau_snap_free(&s);
	close(fd);
	return ret;
}

/* One snapshot's verdict on the target: 0 (in it) or PM_NMISSING. */
static int pm_snap_has(int fd, struct ktau_snap *s, __u32 flags, pid_t target)
{
	const struct ktau_task_rec *r;
	int ret = -ktau_snap(fd, s, flags, &target, flags & KTAU_SNAP_PIDS ? 1 : 0);

	if (ret)
		return ret;
	for (r = ktau_snap_next(s, NULL); r; r = ktau_snap_next(s, r))
		if (r->pid == target)
			return 0;
	return s->req.nmissing ? PM_NMISSING : PM_BROKEN;
}

static int op_snap_other(struct pm_ctx *c)
{
	struct ktau_snap s = { 0 };
	int fd = open(KTAU_PROFILES_PATH, O_RDONLY), a, b, d;

	if (fd < 0)
		return errno;
	a = pm_snap_has(fd, &s, KTAU_SNAP_PIDS, c->target);
	b = pm_snap_has(fd, &s, KTAU_SNAP_PIDS | KTAU_SNAP_PROCESS, c->target);
	d = pm_snap_has(fd, &s, KTAU_SNAP_ALL, c->target);
	ktau_snap_free(&s);
	close(fd);
	if (a != b || a != d) {
		ktau_log("snapshot of %d: PIDS %d, PIDS|PROCESS %d, ALL %d", c->target, a, b, d);
		return PM_BROKEN;
	}
	return a;
}

static int op_read_aggregate(struct pm_ctx *c)
{
	char *s = NULL;
	int ret = pm_read_file(KTAU_AGGREGATE_PATH, &s);

	if (!ret && strncmp(s, "# aggregate tasks ", 18))
		ret = PM_BROKEN;
	free(s);
	return ret;
}

static int op_snap_aggregate(struct pm_ctx *c)
{
	struct ktau_snap s = { 0 };
	int fd = open(KTAU_PROFILES_PATH, O_RDONLY), ret;

	if (fd < 0)
		return errno;
	ret = -ktau_snap(fd, &s, KTAU_SNAP_AGGREGATE, NULL, 0);
	if (!ret && !ktau_snap_aggregate(&s))
		ret = PM_BROKEN;
	ktau_snap_free(&s);
	close(fd);
	return ret;
}

static int op_open_control(struct pm_ctx *c)
{
	int fd = open(KTAU_CONTROL_PATH, O_WRONLY);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/* A command that changes nothing: every group is on. */
static int op_write_control(struct pm_ctx *c)
{
	ssize_t n = write(c->ctl_fd, "all on", 6);

	return n == 6 ? 0 : n < 0 ? errno : PM_BROKEN;
}

static int pm_ioctl(unsigned int cmd, void *arg)
{
	int fd = open(KTAU_PROFILES_PATH, O_RDONLY), ret;

	if (fd < 0)
		return errno;
	ret = pm_errno(ioctl(fd, cmd, arg));
	close(fd);
	return ret;
}

static int op_get_groups(struct pm_ctx *c)
{
	__u64 mask = 0;
	int ret = pm_ioctl(KTAU_IOC_GET_GROUPS, &mask);

	return ret || mask == (1ull << KTAU_NR_GROUPS) - 1 ? ret : PM_BROKEN;
}

static int op_set_groups(struct pm_ctx *c)
{
	__u64 mask = (1ull << KTAU_NR_GROUPS) - 1;

	return pm_ioctl(KTAU_IOC_SET_GROUPS, &mask);
}

static int op_reset(struct pm_ctx *c)
{
	return pm_ioctl(KTAU_IOC_RESET, NULL);
}

/* ENOTTY from an ABI 1.0 kernel: not there. */
static int pm_abi11(struct pm_ctx *c, int ret)
{
	return ret == ENOTTY && c->abi_minor < 1 ? PM_SKIP : ret;
}

static int op_shared(struct pm_ctx *c)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct ktau_shared_reg reg = { .size = sizeof(struct ktau_shared) };
	struct ktau_shared *sh;
	int ret;

	sh = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return PM_BROKEN;
	reg.addr = (uintptr_t)sh;
	ret = pm_abi11(c, pm_ioctl(KTAU_IOC_SHARED_REGISTER, &reg));
	if (!ret) {
		ktau_getppid_loop(10);
		if (sh->tid != gettid() || (sh->seq & 1) || !sh->seq)
			ret = PM_BROKEN;
		if (pm_ioctl(KTAU_IOC_SHARED_UNREGISTER, NULL))
			ret = PM_BROKEN;
	}
	munmap(sh, pg);
	return ret;
}

static int pm_sample_start_sig(struct pm_ctx *c, pid_t tid, __u32 flags, int signo)
{
	/* With a signal, at most one per 64 samples: none in this short run. */
	struct ktau_sample_attr a = {
		.size = sizeof(a), .flags = flags, .tid = tid, .event = KTAU_SAMPLE_CPU_CLOCK,
		.period = PM_PERIOD_NS, .capacity = 64, .watermark = signo ? 64 : 0,
		.signo = signo,
	};

	return pm_abi11(c, pm_ioctl(KTAU_IOC_SAMPLE_START, &a));
}

static int pm_sample_start(struct pm_ctx *c, pid_t tid, __u32 flags)
{
	return pm_sample_start_sig(c, tid, flags, 0);
}

static int pm_sample_stop(pid_t tid)
{
	struct ktau_sample_read r = { .size = sizeof(r), .tid = tid };

	return pm_ioctl(KTAU_IOC_SAMPLE_STOP, &r);
}

static int pm_sample_self(struct pm_ctx *c, __u32 flags)
{
	int ret = pm_sample_start(c, 0, flags);

	if (!ret && pm_sample_stop(0))
		ret = PM_BROKEN;
	return ret;
}

static int op_sample_self_user(struct pm_ctx *c)
{
	return pm_sample_self(c, KTAU_SAMPLE_NO_KERNEL);
}

static int op_sample_self_kernel(struct pm_ctx *c)
{
	return pm_sample_self(c, 0);
}

static int op_sample_other(struct pm_ctx *c)
{
	int ret;

	ret = pm_sample_start(c, c->target, KTAU_SAMPLE_NO_KERNEL);

	if (!ret && pm_sample_stop(c->target))
		ret = PM_BROKEN;
	return ret;
}

/* @pid runs (not a zombie): /proc/PID/stat, which anyone may read. */
static bool pm_alive(pid_t pid)
{
	char path[64], *t, *p;
	bool alive = false;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	t = ktau_slurp(path, NULL);
	p = t ? strrchr(t, ')') : NULL;
	if (p && p[1] == ' ')
		alive = p[2] != 'Z' && p[2] != 'X';
	free(t);
	return alive;
}

/*
 * A sampler that signals another task needs kill permission (ABI 1.3):
 * ptrace attach access, or CAP_PERFMON with CAP_KILL. The target must
 * live on either way.
 */
static int op_sample_other_signal(struct pm_ctx *c)
{
	int ret;

	ret = pm_sample_start_sig(c, c->target, KTAU_SAMPLE_NO_KERNEL, SIGPROF);
	if (!ret && pm_sample_stop(c->target))
		ret = PM_BROKEN;
	if (!pm_alive(c->target))
		ret = PM_BROKEN;
	return ret;
}

/* The samples of a task root samples: stats only, nothing taken away. */
static int op_sample_read_other(struct pm_ctx *c)
{
	struct ktau_sample_read r = { .size = sizeof(r), .tid = c->sampled ?: c->target };

	return pm_abi11(c, pm_ioctl(KTAU_IOC_SAMPLE_READ, &r));
}

/*
 * The table. Keep it and the one in Documentation/trace/ktau.rst equal:
 * KTAU_PERMMATRIX_RST=1 prints it in the form of the rst.
 */
/* Dynamic probes (ABI 1.2). */
static int op_read_probes(struct pm_ctx *c)
{
	return pm_read_file("/proc/ktau/probes", NULL);
}

static int op_probe(struct pm_ctx *c)
{
	int fd = open("/proc/ktau/probes", O_RDONLY), ret;

	if (fd < 0)
		return errno;
	ret = ktau_probe_ioctl(fd, KTAU_IOC_PROBE_ADD, "vfs_read", 0);
	if (ret > 0)
		ret = ktau_probe_ioctl(fd, KTAU_IOC_PROBE_REMOVE, "vfs_read", 0) ? PM_BROKEN : 0;
	else
		ret = -ret;
	close(fd);
	return ret;
}

static const struct pm_row pm_rows[] = {
	{ "read ``version``, ``functions``, ``control``",
	  { "yes", "yes", "yes", "yes", "yes", "yes" }, op_read_public },
	{ "read own text profile",
	  { "yes", "yes", "yes", "yes", "yes", "yes" }, op_read_own },
	{ "read another task's text profile",
	  { "yes", "yes [#d]_", "EACCES", "EACCES", "EACCES", "EACCES [#o]_" }, op_read_other },
	{ "snapshot self (``KTAU_SNAP_SELF``)",
	  { "yes", "yes", "yes", "yes", "yes", "yes" }, op_snap_self },
	{ "snapshot another task",
	  { "yes", "yes [#d]_", "nmissing", "nmissing", "nmissing", "yes" }, op_snap_other },
	{ "read ``/proc/ktau/aggregate``",
	  { "yes", "EPERM", "EPERM", "yes", "yes", "EPERM" }, op_read_aggregate },
	{ "``KTAU_SNAP_AGGREGATE``",
	  { "yes", "EPERM", "EPERM", "yes", "yes", "EPERM" }, op_snap_aggregate },
	{ "open ``control`` for writing",
	  { "yes", "EACCES", "EACCES", "EACCES", "EACCES", "EACCES" }, op_open_control },
	{ "write ``control`` opened by root",
	  { "yes", "EPERM", "EPERM", "yes", "yes", "EPERM" }, op_write_control },
	{ "``KTAU_IOC_GET_GROUPS``",
	  { "yes", "yes", "yes", "yes", "yes", "yes" }, op_get_groups },
	{ "``KTAU_IOC_SET_GROUPS``",
	  { "yes", "EPERM", "EPERM", "yes", "yes", "EPERM" }, op_set_groups },
	{ "``KTAU_IOC_RESET``",
	  { "yes", "EPERM", "EPERM", "yes", "yes", "EPERM" }, op_reset },
	{ "collect exited members",
	  { "yes", "yes [#d]_", "denied [#c]_", "yes", "yes", "yes" }, NULL },
	{ "shared page of own thread",
	  { "yes", "yes", "yes", "yes", "yes", "yes" }, op_shared },
	{ "sample own thread, user mode [#p]_",
	  { "yes", "yes", "yes", "yes", "yes", "yes" }, op_sample_self_user },
	{ "sample own thread, with kernel [#p]_",
	  { "yes", "EACCES", "EACCES", "yes", "yes", "EACCES" }, op_sample_self_kernel },
	{ "sample another task [#p]_",
	  { "yes", "yes [#d]_", "EACCES", "yes", "yes", "yes" }, op_sample_other },
	{ "sample another task with a signal [#p]_",
	  { "yes", "yes [#d]_", "EPERM", "EPERM", "EPERM", "yes" }, op_sample_other_signal },
	{ "read another task's samples",
	  { "yes", "yes [#d]_", "EACCES", "yes", "yes", "yes" }, op_sample_read_other },
	{ "read ``/proc/ktau/probes``",
	  { "yes", "yes", "yes", "yes", "yes", "yes" }, op_read_probes },
	{ "add or remove a dynamic probe",
	  { "yes", "EPERM", "EPERM", "yes", "yes", "EPERM" }, op_probe },
};

#define PM_NROWS	ARRAY_SIZE(pm_rows)

/* What a cell says: an outcome; *dump: only for a dumpable target. */
static int pm_cell(const char *cell, bool *dump)
{
	static const struct {
		const char *word;
		int outcome;
	} words[] = {
		{ "yes", 0 }, { "EACCES", EACCES }, { "EPERM", EPERM },
		{ "nmissing", PM_NMISSING }, { "denied", PM_DENIED },
	};
	size_t i, len = strcspn(cell, " ");

	if (dump)
		*dump = !!strstr(cell, "[#d]");
	for (i = 0; i < ARRAY_SIZE(words); i++)
		if (strlen(words[i].word) == len && !strncmp(cell, words[i].word, len))
			return words[i].outcome;
	return PM_UNSET;
}

static const char *pm_outcome(int o, char *buf, size_t len)
{
	switch (o) {
	case 0:
		return "yes";
	case PM_NMISSING:
		return "nmissing";
	case PM_DENIED:
		return "denied";
	case PM_SKIP:
		return "(not in this ABI)";
	case PM_BROKEN:
		return "BROKEN";
	case PM_UNSET:
		return "(not run)";
	}
	snprintf(buf, len, "%s", strerrorname_np(o) ? strerrorname_np(o) : "E?");
	return buf;
}

static void pm_rst_rule(FILE *f, const size_t *w)
{
	static const char eq[] = "============================================================";
	size_t c;

	for (c = 0; c <= C_NR; c++)
		fprintf(f, "%s%.*s", c ? "  " : "", (int)w[c], eq);
	fputc('\n', f);
}

static void pm_rst_row(FILE *f, const size_t *w, const char *first, const char * const *cells)
{
	char line[512];
	int n;
	size_t c;

	n = snprintf(line, sizeof(line), "%-*s", (int)w[0], first);
	for (c = 0; c < C_NR; c++)
		n += snprintf(line + n, sizeof(line) - n, "  %-*s", (int)w[c + 1], cells[c]);
	while (n && line[n - 1] == ' ')
		line[--n] = '\0';
	fprintf(f, "%s\n", line);
}

/* The table, as reStructuredText. */
static void pm_print_rst(FILE *f)
{
	const char *head[2][C_NR];
	size_t w[C_NR + 1] = { strlen("operation") }, i, c;

	for (c = 0; c < C_NR; c++) {
		head[0][c] = pm_col_head[c][0];
		head[1][c] = pm_col_head[c][1];
		w[c + 1] = strlen(head[0][c]);
	}
	for (i = 0; i < PM_NROWS; i++) {
		if (strlen(pm_rows[i].op) > w[0])
			w[0] = strlen(pm_rows[i].op);
		for (c = 0; c < C_NR; c++)
			if (strlen(pm_rows[i].cell[c]) > w[c + 1])
				w[c + 1] = strlen(pm_rows[i].cell[c]);
	}
	pm_rst_rule(f, w);
	pm_rst_row(f, w, "operation", head[0]);
	pm_rst_row(f, w, "", head[1]);
	pm_rst_rule(f, w);
	for (i = 0; i < PM_NROWS; i++)
		pm_rst_row(f, w, pm_rows[i].op, pm_rows[i].cell);
	pm_rst_rule(f, w);
}

static void __attribute__((constructor)) pm_rst(void)
{
	const char *e = getenv("KTAU_PERMMATRIX_RST");

	if (e && *e && strcmp(e, "0")) {
		pm_print_rst(stdout);
		exit(0);
	}
}

static void *pm_target_thread(void *arg)
{
	int *p = arg;
	pid_t tid = gettid();

	ktau_getppid_loop(100);
	if (write(p[1], &tid, sizeof(tid)) != sizeof(tid))
		_exit(1);
	for (;;)
		pause();
	return NULL;
}

/*
 * A task to read, of uid: it waits, with its profile, until killed. Its
 * second thread (*tid2) is the one root samples.
 */
static pid_t pm_target(struct __test_metadata *_metadata, uid_t uid, bool dumpable,
		       pid_t *tid2)
{
	pthread_t th;
	int q[2];
	pid_t pid;

	ASSERT_EQ(0, pipe(q));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(q[0]);
		if (ktau_become(uid, 0) || prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0) ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL))
			_exit(1);
		ktau_getppid_loop(100);
		if (pthread_create(&th, NULL, pm_target_thread, q))
			_exit(1);
		for (;;)
			pause();
	}
	close(q[1]);
	ASSERT_EQ(sizeof(*tid2), read(q[0], tid2, sizeof(*tid2)))
		TH_LOG("target of uid %u did not start", uid);
	close(q[0]);
	return pid;
}

static void pm_target_end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * The collect row, in the test process: a collector opened by the caller
 * (cfd), a member that joins it and exits as @uid, not dumpable unless
 * @dumpable (ABI 1.7). Collected: yes; counted as denied: denied.
 */
static int pm_collect(int cfd, uid_t uid, bool dumpable)
{
	struct ktau_collect_stats st = { 0 };
	const struct ktau_task_rec *r;
	char buf[8192];
	int status;
	ssize_t n;
	pid_t pid;

	if (cfd < 0)
		return -cfd;
	pid = fork();
	if (pid < 0)
		return PM_BROKEN;
	if (pid == 0) {
		if (ioctl(cfd, KTAU_IOC_COLLECT_JOIN) || ktau_become(uid, 0) ||
		    (!dumpable && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)))
			_exit(1);
		ktau_getppid_loop(10);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || status)
		return PM_BROKEN;
	n = read(cfd, buf, sizeof(buf));
	if (n < 0 || ioctl(cfd, KTAU_IOC_COLLECT_STATS, &st))
		return PM_BROKEN;
	r = (const void *)buf;
	if (n > 0 && st.collected == 1 && !st.denied && r->tid == pid &&
	    ktau_rec_val(r, KTAU_ID_GETPPID).count == 10)
		return 0;
	if (n == 0 && st.denied == 1 && !st.collected)
		return PM_DENIED;
	ktau_log("collector: read %zd, collected %llu, denied %llu", n,
		 (unsigned long long)st.collected, (unsigned long long)st.denied);
	return PM_BROKEN;
}

/* One caller: every row as @col, against @target; outcomes in out[]. */
static void pm_caller(struct pm_ctx *c, int *out)
{
	int cfd;
	size_t i;

	if (c->col != C_ROOT && ktau_become(pm_who[c->col].uid, pm_who[c->col].caps)) {
		ktau_log("cannot become uid %u: %s", pm_who[c->col].uid, strerror(errno));
		_exit(1);
	}
	for (i = 0; i < PM_NROWS; i++)
		if (pm_rows[i].fn)
			out[i] = pm_rows[i].fn(c);
	/* The collector: opened here, used by the test process. */
	cfd = open(KTAU_COLLECT_PATH, O_RDONLY);
	if (ktau_send_fd(c->sock, cfd < 0 ? open("/dev/null", O_RDONLY) : cfd))
		_exit(1);
	_exit(cfd < 0 ? 2 : 0);
}

/* What the columns share. */
struct pm_env {
	int ctl_fd;
	int abi_minor;
};

FIXTURE(pm) {
	struct pm_env env;
	char paranoid[16];	/* restored after */
	char kptr[16];
};

static int pm_sysctl_get(const char *path, char *buf, size_t len)
{
	char *s = ktau_slurp(path, NULL);

	if (!s)
		return -errno;
	snprintf(buf, len, "%s", s);
	free(s);
	return 0;
}

#define PM_PARANOID	"/proc/sys/kernel/perf_event_paranoid"
#define PM_KPTR		"/proc/sys/kernel/kptr_restrict"

FIXTURE_SETUP(pm)
{
	char *v;

	ktau_must_have_ktau(_metadata);
	ASSERT_EQ(0, geteuid()) TH_LOG("the permission tests start as root");
	v = ktau_slurp(KTAU_VERSION_PATH, NULL);
	ASSERT_NE(NULL, v);
	self->env.abi_minor = strchr(v, '.') ? atoi(strchr(v, '.') + 1) : 0;
	free(v);
	self->env.ctl_fd = open(KTAU_CONTROL_PATH, O_WRONLY);
	ASSERT_LE(0, self->env.ctl_fd);
	/* The table is for perf_event_paranoid 2, the upstream default. */
	self->paranoid[0] = '\0';
	self->kptr[0] = '\0';
	if (!pm_sysctl_get(PM_PARANOID, self->paranoid, sizeof(self->paranoid)))
		ASSERT_EQ(0, ktau_write_file(PM_PARANOID, "2"));
	pm_sysctl_get(PM_KPTR, self->kptr, sizeof(self->kptr));
}

FIXTURE_TEARDOWN_PARENT(pm)
{
	if (self->paranoid[0])
		EXPECT_EQ(0, ktau_write_file(PM_PARANOID, self->paranoid));
	if (self->kptr[0])
		EXPECT_EQ(0, ktau_write_file(PM_KPTR, self->kptr));
	EXPECT_EQ(0, ktau_control("all on"));
}

/* Root samples @tid (user mode): whose samples the callers read. */
static int pm_root_sample(pid_t tid)
{
	struct ktau_sample_attr a = {
		.size = sizeof(a), .flags = KTAU_SAMPLE_NO_KERNEL, .tid = tid,
		.event = KTAU_SAMPLE_CPU_CLOCK, .period = PM_PERIOD_NS, .capacity = 64,
	};

	return pm_ioctl(KTAU_IOC_SAMPLE_START, &a);
}

/*
 * Run every row in column col against target; compare with the table,
 * where want_col says which column's cells hold (a non-dumpable target
 * turns the "[#d]" cells into those of "other uid").
 */
/*
 * Init and kthreadd, which root does not sample: reading their samples,
 * where allowed, finds no sampler; a kernel thread is never sampled, for
 * anyone (its flag is public in /proc/PID/stat, so EINVAL before the
 * permission check tells nothing).
 */
static int pm_want_unsampled(const struct pm_ctx *c, pm_fn fn, int want)
{
	if (c->sampled)
		return want;
	if (fn == op_sample_read_other && !want)
		want = ENOENT;
	else if (c->target == 2 && (fn == op_sample_other || fn == op_sample_other_signal))
		want = EINVAL;
	return want;
}

static void pm_run(struct __test_metadata *_metadata, const struct pm_env *env,
		   enum pm_col col, pid_t target, pid_t sampled, uid_t member_uid,
		   bool dumpable)
{
	struct pm_ctx c = {
		.col = col, .target = target, .sampled = sampled, .ctl_fd = env->ctl_fd,
		.abi_minor = env->abi_minor,
	};
	char b1[32], b2[32];
	int *out, sv[2], status, cfd, want, bad = 0;
	bool dump;
	size_t i;
	pid_t pid;

	if (sampled && env->abi_minor >= 1)
		EXPECT_EQ(0, pm_root_sample(sampled))
			TH_LOG("root cannot sample %d: %s", sampled, strerror(errno));
	out = mmap(NULL, PM_NROWS * sizeof(*out), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, out);
	for (i = 0; i < PM_NROWS; i++)
		out[i] = PM_UNSET;
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	c.sock = sv[1];
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(sv[0]);
		pm_caller(&c, out);
	}
	close(sv[1]);
	cfd = ktau_recv_fd(sv[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("caller died of signal %d", WTERMSIG(status));
	ASSERT_NE(1, WEXITSTATUS(status));
	for (i = 0; i < PM_NROWS; i++)
		if (!pm_rows[i].fn)
			out[i] = pm_collect(WEXITSTATUS(status) == 2 ? -EACCES : cfd, member_uid,
					    dumpable);
	close(cfd);
	close(sv[0]);

	for (i = 0; i < PM_NROWS; i++) {
		want = pm_cell(pm_rows[i].cell[col], &dump);
		if (dump && !dumpable)
			want = pm_cell(pm_rows[i].cell[C_OTHER], NULL);
		want = pm_want_unsampled(&c, pm_rows[i].fn, want);
		if (out[i] == PM_SKIP || out[i] == want)
			continue;
		bad++;
		TH_LOG("%s, as %s, target pid %d (%sdumpable), member uid %u: %s; the table: %s",
		       pm_rows[i].op, pm_col_head[col][0], target, dumpable ? "" : "non-",
		       member_uid, pm_outcome(out[i], b1, sizeof(b1)),
		       pm_outcome(want, b2, sizeof(b2)));
	}
	EXPECT_EQ(0, bad);
	munmap(out, PM_NROWS * sizeof(*out));
	if (sampled && env->abi_minor >= 1)
		EXPECT_EQ(0, pm_sample_stop(sampled));
}

static void pm_column(struct __test_metadata *_metadata, const struct pm_env *env,
		      enum pm_col col)
{
	uid_t uid = pm_who[col].target_uid;
	pid_t t1, t2, s1, s2;

	t1 = pm_target(_metadata, uid, true, &s1);
	t2 = pm_target(_metadata, uid, false, &s2);
	pm_run(_metadata, env, col, t1, s1, uid, true);
	pm_run(_metadata, env, col, t2, s2, uid, false);
	/*
	 * Init and a kernel thread: root's, never "same uid"; root samples
	 * neither (see pm_want_unsampled()).
	 */
	if (col != C_SAME) {
		pm_run(_metadata, env, col, 1, 0, uid, true);
		pm_run(_metadata, env, col, 2, 0, uid, true);
	}
	pm_target_end(t1);
	pm_target_end(t2);
}

TEST_F_TIMEOUT(pm, root, 60)
{
	pm_column(_metadata, &self->env, C_ROOT);
}

TEST_F_TIMEOUT(pm, same_uid, 60)
{
	pm_column(_metadata, &self->env, C_SAME);
}

TEST_F_TIMEOUT(pm, other_uid, 60)
{
	pm_column(_metadata, &self->env, C_OTHER);
}

TEST_F_TIMEOUT(pm, perfmon_only, 60)
{
	pm_column(_metadata, &self->env, C_PERFMON);
}

TEST_F_TIMEOUT(pm, sys_admin_only, 60)
{
	pm_column(_metadata, &self->env, C_SYSADMIN);
}

TEST_F_TIMEOUT(pm, sys_ptrace_only, 60)
{
	pm_column(_metadata, &self->env, C_PTRACE);
}

/* The table is well formed: every cell is an outcome the test knows. */
TEST_F(pm, table)
{
	size_t i, c;
	int bad = 0;

	for (i = 0; i < PM_NROWS; i++) {
		for (c = 0; c < C_NR; c++) {
			if (pm_cell(pm_rows[i].cell[c], NULL) != PM_UNSET)
				continue;
			ktau_log("row %zu column %zu: '%s'", i, c, pm_rows[i].cell[c]);
			bad++;
		}
	}
	EXPECT_EQ(0, bad);
}

/*
 * Kernel addresses, in any form: "ffff" and 12 more hex digits, 16 hex
 * digits after "0x", or a decimal number of a kernel address.
 */
static bool pm_text_has_kaddr(const char *s, size_t len)
{
	unsigned long long v;
	const char *p;
	char *end;

	if (ktau_text_has_kaddr(s, len))
		return true;
	for (p = s; p < s + len; p++) {
		if (p[0] == '0' && p + 18 <= s + len && (p[1] == 'x' || p[1] == 'X')) {
			v = strtoull(p + 2, &end, 16);
			if (end - p >= 18 && (v >> 47))
				return true;
		}
		if (*p >= '1' && *p <= '9' && (p == s || p[-1] < '0' || p[-1] > '9')) {
			v = strtoull(p, &end, 10);
			if ((v >> 48) == 0xffff)
				return true;
			p = end - 1;
		}
	}
	return false;
}

/* Everything the caller can read: no kernel address anywhere. */
static void pm_no_kaddr(struct __test_metadata *_metadata)
{
	static const char * const files[] = {
		KTAU_VERSION_PATH, KTAU_FUNCTIONS_PATH, KTAU_CONTROL_PATH, KTAU_AGGREGATE_PATH,
		"/proc/self/ktau", "/proc/thread-self/ktau", "/proc/1/ktau", "/proc/2/ktau",
	};
	static const __u32 flags[] = {
		KTAU_SNAP_SELF, KTAU_SNAP_ALL, KTAU_SNAP_AGGREGATE,
	};
	struct ktau_snap s = { 0 };
	char *text, buf[65536];
	int fd, cfd, status, nread = 0;
	size_t i, len;
	ssize_t n;
	pid_t pid;

	for (i = 0; i < ARRAY_SIZE(files); i++) {
		text = ktau_slurp(files[i], &len);
		if (!text)
			continue;
		nread++;
		EXPECT_FALSE(pm_text_has_kaddr(text, len)) TH_LOG("kernel address in %s", files[i]);
		free(text);
	}
	EXPECT_LE(5, nread);
	fd = ktau_must_open_profiles(_metadata);
	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		if (ktau_snap(fd, &s, flags[i], NULL, 0))
			continue;
		EXPECT_FALSE(ktau_bin_has_kaddr(s.buf, s.req.used))
			TH_LOG("kernel address in a snapshot, flags 0x%x", flags[i]);
	}
	ktau_snap_free(&s);
	close(fd);

	/* What a collector hands out. */
	cfd = open(KTAU_COLLECT_PATH, O_RDONLY);
	ASSERT_LE(0, cfd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		ioctl(cfd, KTAU_IOC_COLLECT_JOIN);
		ktau_getppid_loop(10);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	n = read(cfd, buf, sizeof(buf));
	ASSERT_LT(0, n);
	EXPECT_FALSE(ktau_bin_has_kaddr(buf, n));
	close(cfd);
}

/* The detector finds what it looks for: /proc/kallsyms as root, kptr 0. */
static void pm_detector_works(struct __test_metadata *_metadata)
{
	char *text;
	size_t len;

	/* The guest kernel has CONFIG_KALLSYMS: a missing file is a failure. */
	text = ktau_slurp("/proc/kallsyms", &len);
	ASSERT_NE(NULL, text) TH_LOG("no /proc/kallsyms: the detector cannot be cross-checked");
	if (len > 1 << 20)
		len = 1 << 20;
	EXPECT_TRUE(pm_text_has_kaddr(text, len)) TH_LOG("kallsyms: %.60s", text);
	free(text);
	EXPECT_TRUE(pm_text_has_kaddr("a 18446744071578845184 b", 24));
	EXPECT_TRUE(pm_text_has_kaddr("ip 0xffffffff81000000\n", 22));
	EXPECT_FALSE(pm_text_has_kaddr("142 syscall getppid 1000 230000 230000\n", 39));
}

TEST_F_TIMEOUT(pm, no_kernel_address_in_views, 60)
{
	static const char * const kptr[] = { "0", "1", "2" };
	size_t i;

	ASSERT_NE(0, self->kptr[0]) TH_LOG("no kernel.kptr_restrict");
	ASSERT_EQ(0, ktau_write_file(PM_KPTR, "0"));
	pm_detector_works(_metadata);
	for (i = 0; i < ARRAY_SIZE(kptr); i++) {
		ASSERT_EQ(0, ktau_write_file(PM_KPTR, kptr[i]));
		pm_no_kaddr(_metadata);
		ktau_run_as(_metadata, KTAU_USER_ID, 0, pm_no_kaddr);
		ktau_run_as(_metadata, KTAU_USER_ID, KTAU_CAP(CAP_PERFMON), pm_no_kaddr);
	}
}

/* Kernel time in a loop of reads: kernel-mode samples. */
static void pm_kernel_work(unsigned int ms)
{
	__u64 end = ktau_now_ns() + ms * KTAU_NSEC_PER_MSEC;
	char buf[4096];
	int fd;

	while (ktau_now_ns() < end) {
		fd = open(KTAU_FUNCTIONS_PATH, O_RDONLY);
		while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
}

/*
 * Sample the caller in the kernel and read the samples: kernel-mode ones
 * carry their address when want is 1 and 0 when want is 0. Returns the
 * number of kernel-mode samples seen.
 */
static int pm_sample_kaddr(struct __test_metadata *_metadata, int want)
{
	struct ktau_sample_attr a = {
		.size = sizeof(a), .event = KTAU_SAMPLE_CPU_CLOCK, .period = PM_PERIOD_NS,
		.capacity = 4096,
	};
	struct ktau_sample sm[4096];
	struct ktau_sample_read r = {
		.size = sizeof(r), .buf = (uintptr_t)sm, .max = ARRAY_SIZE(sm),
	};
	int fd = ktau_must_open_profiles(_metadata), nk = 0, shown = 0;
	__u32 i;

	ASSERT_EQ(0, ioctl(fd, KTAU_IOC_SAMPLE_START, &a)) TH_LOG("%s", strerror(errno));
	pm_kernel_work(300);
	ASSERT_EQ(0, ioctl(fd, KTAU_IOC_SAMPLE_STOP, &r)) TH_LOG("%s", strerror(errno));
	close(fd);
	for (i = 0; i < r.nread; i++) {
		if (sm[i].flags & KTAU_SAMPLE_USER)
			continue;
		nk++;
		if (!sm[i].ip)
			continue;
		shown++;
		EXPECT_EQ(0xffff, sm[i].ip >> 48)
			TH_LOG("kernel sample at 0x%llx", (unsigned long long)sm[i].ip);
	}
	EXPECT_LT(0, nk) TH_LOG("%u samples, none in the kernel", r.nread);
	EXPECT_EQ(want ? nk : 0, shown)
		TH_LOG("%d of %d kernel addresses shown; want %s", shown, nk,
		       want ? "all" : "none");
	return nk;
}

static void pm_sample_kaddr_hidden(struct __test_metadata *_metadata)
{
	pm_sample_kaddr(_metadata, 0);
}

static void pm_sample_kaddr_shown(struct __test_metadata *_metadata)
{
	pm_sample_kaddr(_metadata, 1);
}

/*
 * Sample addresses are shown as kallsyms shows them (to the opener of
 * /proc/ktau/profiles): kptr_restrict 0 with perf_event_paranoid <= 1, to
 * everyone; kptr_restrict 0 or 1, to CAP_SYSLOG; kptr_restrict 2, to no
 * one.
 */
TEST_F_TIMEOUT(pm, sample_kernel_addresses, 60)
{
	static const struct {
		const char *kptr, *paranoid;
		int root, perfmon;
	} cases[] = {
		{ "0", "1", 1, 1 }, { "0", "2", 1, 0 }, { "1", "1", 1, 0 },
		{ "1", "2", 1, 0 }, { "2", "1", 0, 0 }, { "2", "2", 0, 0 },
	};
	void (*fn)(struct __test_metadata *_metadata);
	size_t i;

	if (self->env.abi_minor < 1)
		SKIP(return, "no sampling before ABI 1.1");
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		TH_LOG("kptr_restrict %s, perf_event_paranoid %s", cases[i].kptr,
		       cases[i].paranoid);
		ASSERT_EQ(0, ktau_write_file(PM_KPTR, cases[i].kptr));
		ASSERT_EQ(0, ktau_write_file(PM_PARANOID, cases[i].paranoid));
		pm_sample_kaddr(_metadata, cases[i].root);
		fn = pm_sample_kaddr_hidden;
		if (cases[i].perfmon)
			fn = pm_sample_kaddr_shown;
		ktau_run_as(_metadata, KTAU_USER_ID, KTAU_CAP(CAP_PERFMON), fn);
	}
}

TEST_HARNESS_MAIN
