// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU permissions, as an unprivileged user (uid/gid 1000, no groups, no
 * capabilities): a process reads its own profile and no one else's, cannot
 * switch groups or read the system-wide totals, and sees no kernel
 * address anywhere.
 */
#include <dirent.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>

#include "ktau_util.h"

#define USER_ID		KTAU_USER_ID
#define BUF_SIZE	(1024 * 1024)

FIXTURE(perm) {
	int unused;
};

FIXTURE_SETUP(perm)
{
	ktau_must_have_ktau(_metadata);
	ASSERT_EQ(0, geteuid()) TH_LOG("the permission tests start as root");
}

FIXTURE_TEARDOWN(perm)
{
}

static void run_as_user(struct __test_metadata *_metadata,
			void (*fn)(struct __test_metadata *_metadata))
{
	ktau_run_as(_metadata, USER_ID, 0, fn);
}

/* Opening path fails with EACCES or EPERM. */
static void expect_open_denied(struct __test_metadata *_metadata, const char *path, int flags)
{
	int fd = open(path, flags);

	if (fd >= 0) {
		close(fd);
		EXPECT_EQ(-1, fd) TH_LOG("%s opened", path);
		return;
	}
	EXPECT_TRUE(errno == EACCES || errno == EPERM)
		TH_LOG("%s: %s, not EACCES or EPERM", path, strerror(errno));
}

/* Reading path fails with EACCES or EPERM, at open or at the first read. */
static void expect_read_denied(struct __test_metadata *_metadata, const char *path)
{
	char buf[256];
	int fd, err;
	ssize_t n;

	fd = open(path, O_RDONLY);
	if (fd < 0) {
		EXPECT_TRUE(errno == EACCES || errno == EPERM)
			TH_LOG("open %s: %s, not EACCES or EPERM", path, strerror(errno));
		return;
	}
	n = read(fd, buf, sizeof(buf));
	err = errno;
	close(fd);
	EXPECT_EQ(-1, n) TH_LOG("%s read: %.*s", path, n > 0 ? (int)n : 0, buf);
	if (n < 0)
		EXPECT_TRUE(err == EACCES || err == EPERM)
			TH_LOG("read %s: %s, not EACCES or EPERM", path, strerror(err));
}

static void own_profile(struct __test_metadata *_metadata)
{
	struct ktau_snap s = { 0 };
	char path[64], *text;
	int fd;

	ktau_getppid_loop(10);
	text = ktau_slurp("/proc/self/ktau", NULL);
	ASSERT_NE(NULL, text) TH_LOG("/proc/self/ktau: %s", strerror(errno));
	EXPECT_EQ(0, strncmp(text, "# pid ", 6));
	free(text);
	snprintf(path, sizeof(path), "/proc/self/task/%d/ktau", gettid());
	text = ktau_slurp(path, NULL);
	ASSERT_NE(NULL, text) TH_LOG("%s: %s", path, strerror(errno));
	EXPECT_EQ(0, strncmp(text, "# tid ", 6));
	free(text);

	fd = ktau_must_open_profiles(_metadata);
	ktau_must_snap_self(_metadata, fd, &s);
	EXPECT_LE(10, ktau_rec_val(ktau_snap_find(&s, gettid()), KTAU_ID_GETPPID).count);
	ASSERT_EQ(0, ktau_snap(fd, &s, KTAU_SNAP_PIDS, &(pid_t){ gettid() }, 1));
	EXPECT_EQ(1, s.req.ntasks);
	EXPECT_EQ(0, s.req.nmissing);
	ktau_snap_free(&s);
	close(fd);
}

TEST_F_TIMEOUT(perm, user_reads_own_profile, 10)
{
	run_as_user(_metadata, own_profile);
}

static void others_denied(struct __test_metadata *_metadata)
{
	expect_read_denied(_metadata, "/proc/1/ktau");
	expect_read_denied(_metadata, "/proc/1/task/1/ktau");
	expect_read_denied(_metadata, "/proc/2/ktau");
}

TEST_F_TIMEOUT(perm, user_cannot_read_others, 10)
{
	char *text;

	/* Root can: the files are there. */
	text = ktau_slurp("/proc/1/ktau", NULL);
	ASSERT_NE(NULL, text) TH_LOG("root cannot read /proc/1/ktau: %s", strerror(errno));
	free(text);
	run_as_user(_metadata, others_denied);
}

static void control_denied(struct __test_metadata *_metadata)
{
	static const char * const cmds[] = { "all off", "syscall off", "reset" };
	char *before, *after;
	__u64 mask;
	size_t i;
	int fd;

	before = ktau_control_read();
	ASSERT_NE(NULL, before) TH_LOG("the control file is readable by all");
	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		fd = open(KTAU_CONTROL_PATH, O_WRONLY);
		if (fd < 0) {
			/* Mode 0644: refused at open already. */
			EXPECT_TRUE(errno == EACCES || errno == EPERM)
				TH_LOG("open for writing: %s", strerror(errno));
			continue;
		}
		EXPECT_EQ(-1, write(fd, cmds[i], strlen(cmds[i]))) TH_LOG("'%s' taken", cmds[i]);
		EXPECT_EQ(EPERM, errno);
		close(fd);
	}
	/* Nor through the control ioctls, which need CAP_PERFMON. */
	fd = open(KTAU_PROFILES_PATH, O_RDONLY);
	ASSERT_LE(0, fd);
	mask = 0;
	EXPECT_EQ(-1, ioctl(fd, KTAU_IOC_SET_GROUPS, &mask));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, ioctl(fd, KTAU_IOC_RESET));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(0, ioctl(fd, KTAU_IOC_GET_GROUPS, &mask));
	EXPECT_EQ((1ull << KTAU_NR_GROUPS) - 1, mask);
	close(fd);

	after = ktau_control_read();
	ASSERT_NE(NULL, after);
	EXPECT_STREQ(before, after);
	free(before);
	free(after);
}

TEST_F_TIMEOUT(perm, user_cannot_write_control, 10)
{
	run_as_user(_metadata, control_denied);
	EXPECT_TRUE(ktau_all_groups_on());
}

static void aggregate_denied(struct __test_metadata *_metadata)
{
	struct ktau_snapshot req;
	char *buf = malloc(BUF_SIZE);
	int fd;

	ASSERT_NE(NULL, buf);
	expect_open_denied(_metadata, KTAU_AGGREGATE_PATH, O_RDONLY);
	fd = ktau_must_open_profiles(_metadata);
	ktau_snap_req(&req, KTAU_SNAP_AGGREGATE, NULL, 0, buf, BUF_SIZE);
	EXPECT_EQ(-EPERM, ktau_snapshot_ioctl(fd, &req));
	close(fd);
	free(buf);
}

TEST_F_TIMEOUT(perm, user_cannot_read_aggregate, 10)
{
	run_as_user(_metadata, aggregate_denied);
}

static void others_missing(struct __test_metadata *_metadata)
{
	const struct ktau_task_rec *r;
	struct ktau_snap s = { 0 };
	pid_t one = 1;
	int fd;

	fd = ktau_must_open_profiles(_metadata);
	ASSERT_EQ(0, ktau_snap(fd, &s, KTAU_SNAP_PIDS, &one, 1));
	EXPECT_EQ(0, s.req.ntasks);
	EXPECT_EQ(1, s.req.nmissing);
	EXPECT_EQ(0, s.req.used);

	ASSERT_EQ(0, ktau_snap(fd, &s, KTAU_SNAP_PIDS | KTAU_SNAP_PROCESS, &one, 1));
	EXPECT_EQ(0, s.req.ntasks);
	EXPECT_LE(1, s.req.nmissing);

	/* Every task it may read: only its own. */
	ASSERT_EQ(0, ktau_snap(fd, &s, KTAU_SNAP_ALL, NULL, 0));
	EXPECT_LE(1, s.req.ntasks);
	EXPECT_NE(NULL, ktau_snap_find(&s, gettid()));
	for (r = ktau_snap_next(&s, NULL); r; r = ktau_snap_next(&s, r)) {
		EXPECT_EQ(getpid(), r->pid) TH_LOG("got tid %d (%s)", r->tid, r->comm);
		EXPECT_EQ(0, r->flags & (KTAU_REC_KTHREAD | KTAU_REC_AGGREGATE));
	}
	ktau_snap_free(&s);
	close(fd);
}

TEST_F_TIMEOUT(perm, user_snapshots_only_own, 10)
{
	run_as_user(_metadata, others_missing);
}

static void expect_no_kaddr_text(struct __test_metadata *_metadata, const char *path, int *nread)
{
	size_t len;
	char *text;

	text = ktau_slurp(path, &len);
	if (!text)
		return;
	(*nread)++;
	EXPECT_FALSE(ktau_text_has_kaddr(text, len)) TH_LOG("kernel address in %s", path);
	free(text);
}

static void no_kernel_addresses(struct __test_metadata *_metadata)
{
	struct ktau_snap s = { 0 };
	char path[300];
	struct dirent *de;
	int fd, nread = 0;
	DIR *d;

	/* Every /proc/ktau file it can read. */
	d = opendir("/proc/ktau");
	ASSERT_NE(NULL, d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/ktau/%s", de->d_name);
		expect_no_kaddr_text(_metadata, path, &nread);
	}
	closedir(d);
	EXPECT_LE(3, nread) TH_LOG("version, control and functions are readable by all");

	/* Its own profiles, text and binary. */
	nread = 0;
	expect_no_kaddr_text(_metadata, "/proc/self/ktau", &nread);
	snprintf(path, sizeof(path), "/proc/self/task/%d/ktau", gettid());
	expect_no_kaddr_text(_metadata, path, &nread);
	EXPECT_EQ(2, nread);

	fd = ktau_must_open_profiles(_metadata);
	ASSERT_EQ(0, ktau_snap(fd, &s, KTAU_SNAP_ALL, NULL, 0));
	EXPECT_FALSE(ktau_bin_has_kaddr(s.buf, s.req.used));
	ktau_must_snap_self(_metadata, fd, &s);
	EXPECT_FALSE(ktau_bin_has_kaddr(s.buf, s.req.used));
	ktau_snap_free(&s);
	close(fd);
}

/*
 * A user process whose only capability is CAP_PERFMON: the aggregate and
 * the control ioctls are open to it; the root-owned control file and
 * other users' profiles stay closed (Documentation/trace/ktau.rst).
 */
static void perfmon_only(struct __test_metadata *_metadata)
{
	const struct ktau_task_rec *r;
	struct ktau_snap snap = { 0 };
	__u64 mask, all = (1ull << KTAU_NR_GROUPS) - 1;
	char *text;
	int fd;

	text = ktau_slurp("/proc/self/status", NULL);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "CapEff:\t0000004000000000\n")) TH_LOG("not CAP_PERFMON only");
	free(text);

	text = ktau_slurp("/proc/ktau/aggregate", NULL);
	EXPECT_NE(NULL, text) TH_LOG("aggregate: %s", strerror(errno));
	free(text);
	fd = open(KTAU_PROFILES_PATH, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ktau_snap(fd, &snap, KTAU_SNAP_AGGREGATE, NULL, 0))
		TH_LOG("KTAU_SNAP_AGGREGATE: %s", strerror(errno));
	r = ktau_snap_next(&snap, NULL);
	ASSERT_NE(NULL, r);
	EXPECT_TRUE(r->flags & KTAU_REC_AGGREGATE);
	mask = all & ~(1ull << KTAU_GROUP_SIGNAL);
	EXPECT_EQ(0, ioctl(fd, KTAU_IOC_SET_GROUPS, &mask)) TH_LOG("%s", strerror(errno));
	mask = 0;
	EXPECT_EQ(0, ioctl(fd, KTAU_IOC_GET_GROUPS, &mask));
	EXPECT_EQ(all & ~(1ull << KTAU_GROUP_SIGNAL), mask);
	EXPECT_EQ(0, ioctl(fd, KTAU_IOC_SET_GROUPS, &all));
	close(fd);
	ktau_snap_free(&snap);

	expect_open_denied(_metadata, KTAU_CONTROL_PATH, O_WRONLY);
	expect_read_denied(_metadata, "/proc/1/ktau");
}

TEST_F_TIMEOUT(perm, perfmon_only_reads_aggregate_and_controls, 10)
{
	ktau_run_as(_metadata, USER_ID, KTAU_CAP(CAP_PERFMON), perfmon_only);
	EXPECT_TRUE(ktau_all_groups_on());
}

TEST_F_TIMEOUT(perm, user_sees_no_kernel_address, 10)
{
	run_as_user(_metadata, no_kernel_addresses);
}

TEST_HARNESS_MAIN
