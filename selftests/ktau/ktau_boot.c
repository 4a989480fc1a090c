// SPDX-License-Identifier: GPL-2.0
/*
 * The boot parameters (ktau.rst, "Configuration"): ktau= sets the groups
 * that are on at boot (all, none or a list; unknown names are ignored
 * with a warning), ktau.slots= the table size (a power of two in
 * 16..128, another value ignored with a warning). The expected state is
 * worked out from /proc/cmdline, so that the program checks the default
 * in the main pass and the parameters in the pass that boots with them
 * (make check: "ktau=syscall,sched,nosuchgroup ktau.slots=16", and
 * "ktau=none ktau.slots=256", a size out of range). It must run before
 * anything switches a group: it leaves them as it found them.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/klog.h>
#include <sys/mman.h>

#include "ktau_util.h"

#define ALL_ON		((1ull << KTAU_NR_GROUPS) - 1)

/* The value of NAME= on the kernel command line, or NULL. */
static char *cmdline_param(const char *name)
{
	char *t = ktau_slurp("/proc/cmdline", NULL), *tok, *save = NULL, *v = NULL;
	const char sep[] = { ' ', '\n', 0 };
	size_t len = strlen(name);

	if (!t)
		return NULL;
	for (tok = strtok_r(t, sep, &save); tok; tok = strtok_r(NULL, sep, &save))
		if (!strncmp(tok, name, len) && tok[len] == '=') {
			free(v);	/* the last one counts */
			v = strdup(tok + len + 1);
		}
	free(t);
	return v;
}

static int group_by_name(const char *name)
{
	int g;

	for (g = 0; g < KTAU_NR_GROUPS; g++)
		if (!strcmp(name, ktau_group_name(g)))
			return g;
	return -1;
}

/* The kernel log (dmesg), NUL-terminated; NULL when it cannot be read. */
static char *kernel_log(void)
{
	int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf;

	if (len <= 0)
		return NULL;
	buf = calloc(1, len + 1);
	if (!buf)
		return NULL;
	len = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, len);
	if (len < 0) {
		free(buf);
		return NULL;
	}
	buf[len] = 0;
	return buf;
}

/*
 * ktau=: exactly the groups it names are on (all without it), in the
 * control file and through KTAU_IOC_GET_GROUPS, and each unknown name
 * got its warning in the kernel log.
 */
TEST(groups_as_booted)
{
	char *val = cmdline_param("ktau"), *s, *tok, *save = NULL, *log, want[128];
	__u64 expect = ALL_ON, mask = ~0ull;
	int g, fd, unknown = 0;

	ASSERT_EQ(0, access(KTAU_VERSION_PATH, R_OK));
	log = kernel_log();
	ASSERT_NE(NULL, log) TH_LOG("cannot read the kernel log: %s", strerror(errno));
	if (val && !strcmp(val, "none")) {
		expect = 0;
	} else if (val && strcmp(val, "all")) {
		expect = 0;
		s = strdup(val);
		for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			g = group_by_name(tok);
			if (g >= 0) {
				expect |= 1ull << g;
				continue;
			}
			unknown++;
			snprintf(want, sizeof(want), "ktau: unknown group '%s' in ktau=, ignored",
				 tok);
			EXPECT_NE(NULL, strstr(log, want)) TH_LOG("no warning \"%s\"", want);
		}
		free(s);
	}
	TH_LOG("ktau=%s: groups 0x%llx expected, %d unknown", val ? val : "(none)",
	       (unsigned long long)expect, unknown);
	for (g = 0; g < KTAU_NR_GROUPS; g++) {
		const char *gn = ktau_group_name(g);

		ASSERT_NE(NULL, gn);
		EXPECT_EQ(!!(expect & (1ull << g)), ktau_group_state(gn)) TH_LOG("group %s", gn);
	}
	fd = ktau_must_open_profiles(_metadata);
	ASSERT_EQ(0, ioctl(fd, KTAU_IOC_GET_GROUPS, &mask));
	EXPECT_EQ(expect, mask);
	/* The boot line states the groups. */
	snprintf(want, sizeof(want), "groups 0x%llx\n", (unsigned long long)expect);
	EXPECT_NE(NULL, strstr(log, want)) TH_LOG("no \"%s\" in the kernel log", want);
	close(fd);
	free(log);
	free(val);
}

/* The table size that ktau.slots= asks for; 64 (and a warning) otherwise. */
static unsigned int expected_slots(struct __test_metadata *_metadata, const char *log)
{
	char *val = cmdline_param("ktau.slots"), *end, want[128];
	unsigned long n;

	if (!val)
		return 64;
	n = strtoul(val, &end, 0);
	if (!*val || *end || n < 16 || n > 128 || (n & (n - 1))) {
		snprintf(want, sizeof(want),
			 "ktau: ktau.slots=%s is not a power of two in 16..128, using 64", val);
		EXPECT_NE(NULL, strstr(log, want)) TH_LOG("no warning \"%s\"", want);
		n = 64;
	}
	free(val);
	return n;
}

struct fill_arg {
	int fd;
	struct ktau_snap *s;
	int ret;
};

/* A new thread with a fresh table makes more distinct calls than it holds. */
static void *fill_thread(void *p)
{
	struct fill_arg *a = p;

	ktau_nop_calls_run(0);
	a->ret = ktau_snap(a->fd, a->s, KTAU_SNAP_SELF, NULL, 0);
	return NULL;
}

/*
 * ktau.slots=: the control file and the boot line say the size, and a
 * task's table holds exactly that many routines (the system call group
 * on), [other] one of them.
 */
TEST(table_size_as_booted)
{
	struct ktau_snap s = { 0 };
	struct fill_arg arg = { .s = &s };
	const struct ktau_task_rec *r;
	char *log = kernel_log(), *ctl, want[64];
	__u64 booted = 0, mask;
	unsigned int slots;
	pthread_t th;
	int ret;

	ASSERT_NE(NULL, log);
	slots = expected_slots(_metadata, log);
	ctl = ktau_control_read();
	ASSERT_NE(NULL, ctl);
	snprintf(want, sizeof(want), "\nslots %u\n", slots);
	EXPECT_NE(NULL, strstr(ctl, want)) TH_LOG("control reads:\n%s\nnot slots %u", ctl, slots);
	snprintf(want, sizeof(want), "ktau: %u slots per task (", slots);
	EXPECT_NE(NULL, strstr(log, want)) TH_LOG("no \"%s\" in the kernel log", want);
	ASSERT_LT(slots + 8, KTAU_NR_NOP_CALLS);
	arg.fd = ktau_must_open_profiles(_metadata);
	ASSERT_EQ(0, ktau_snap_reserve(&s, KTAU_SNAP_BUF_INIT));
	/* The system call group on for the fill, then as booted again. */
	ASSERT_EQ(0, ioctl(arg.fd, KTAU_IOC_GET_GROUPS, &booted));
	mask = booted | (1ull << KTAU_GROUP_SYSCALL);
	ASSERT_EQ(0, ioctl(arg.fd, KTAU_IOC_SET_GROUPS, &mask));
	ret = pthread_create(&th, NULL, fill_thread, &arg);
	if (!ret)
		ret = pthread_join(th, NULL);
	ASSERT_EQ(0, ioctl(arg.fd, KTAU_IOC_SET_GROUPS, &booted));
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, arg.ret);
	r = ktau_snap_next(&s, NULL);
	ASSERT_NE(NULL, r);
	TH_LOG("%u slots: the filled table lists %u routines, %llu table overflows",
	       slots, r->nentries, (unsigned long long)r->table_overflows);
	/* The exact overflow accounting is ktau_overflow's. */
	EXPECT_EQ(slots, r->nentries);
	EXPECT_LT(0, r->table_overflows);
	EXPECT_LT(0, ktau_rec_val(r, KTAU_ID_OTHER).count);
	close(arg.fd);
	ktau_snap_free(&s);
	free(ctl);
	free(log);
}

static int handled;

static void on_usr1(int sig)
{
	__atomic_fetch_add(&handled, 1, __ATOMIC_RELAXED);
}

/*
 * The groups that are on record and those that are off record nothing:
 * system calls, sleeps (sched), fresh pages (fault) and a handled signal
 * (signal) in this thread; interrupts may or may not land on it, so for
 * irq and softirq only "off records nothing" is checked.
 */
TEST(only_those_groups_record)
{
	static const struct { int group; bool forced; } g_all[] = {
		{ KTAU_GROUP_SYSCALL, true }, { KTAU_GROUP_IRQ, false },
		{ KTAU_GROUP_SOFTIRQ, false }, { KTAU_GROUP_SCHED, true },
		{ KTAU_GROUP_FAULT, true }, { KTAU_GROUP_SIGNAL, true },
	};
	struct ktau_snap a = { 0 }, b = { 0 };
	const struct ktau_task_rec *ra, *rb;
	__u64 got[KTAU_NR_GROUPS] = { 0 };
	long page = sysconf(_SC_PAGESIZE);
	const struct ktau_entry *e;
	struct ktau_funcs fs = { 0 };
	char *pages;
	unsigned int i;
	int fd, g;

	ASSERT_NE(SIG_ERR, signal(SIGUSR1, on_usr1));
	pages = mmap(NULL, 32 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, pages);
	fd = ktau_must_open_profiles(_metadata);
	ra = ktau_must_snap_self(_metadata, fd, &a);
	ktau_getppid_loop(10);
	for (i = 0; i < 3; i++)
		ktau_sleep_ns(10 * KTAU_NSEC_PER_MSEC);
	for (i = 0; i < 32; i++)
		pages[i * page] = 1;
	ASSERT_EQ(0, raise(SIGUSR1));
	ASSERT_EQ(1, __atomic_load_n(&handled, __ATOMIC_RELAXED));
	rb = ktau_must_snap_self(_metadata, fd, &b);
	/* After the snapshot: interrupt sources are named when first seen. */
	ASSERT_EQ(0, ktau_funcs_load(&fs));
	e = ktau_rec_entries(rb);
	for (i = 0; i < rb->nentries; i++) {
		const struct ktau_func *f = ktau_func_by_id(&fs, e[i].id);

		if (e[i].id == KTAU_ID_OTHER || e[i].count == ktau_rec_val(ra, e[i].id).count)
			continue;
		ASSERT_NE(NULL, f) TH_LOG("id %u not in %s", e[i].id, KTAU_FUNCTIONS_PATH);
		g = group_by_name(f->group);
		ASSERT_LE(0, g) TH_LOG("id %u: group '%s'", e[i].id, f->group);
		got[g] += e[i].count - ktau_rec_val(ra, e[i].id).count;
	}
	for (i = 0; i < ARRAY_SIZE(g_all); i++) {
		g = g_all[i].group;
		TH_LOG("group %s: %s, %llu calls", ktau_group_name(g),
		       ktau_group_state(ktau_group_name(g)) == 1 ? "on" : "off",
		       (unsigned long long)got[g]);
		if (ktau_group_state(ktau_group_name(g)) != 1) {
			EXPECT_EQ(0, got[g]) TH_LOG("group %s off, recorded", ktau_group_name(g));
		} else if (g_all[i].forced) {
			EXPECT_LT(0, got[g]) TH_LOG("group %s is on but recorded nothing",
						    ktau_group_name(g));
		}
	}
	close(fd);
	munmap(pages, 32 * page);
	ktau_funcs_free(&fs);
	ktau_snap_free(&a);
	ktau_snap_free(&b);
}

/*
 * The highest function ID /proc/ktau/functions lists, of group @group
 * only if not NULL; -1 on error.
 */
static long max_func_id_of(const char *group)
{
	struct ktau_funcs fs = { 0 };
	long max = -1;
	size_t i;

	if (ktau_funcs_load(&fs))
		return -1;
	for (i = 0; i < fs.n; i++)
		if ((long)fs.v[i].id > max && (!group || !strcmp(fs.v[i].group, group)))
			max = fs.v[i].id;
	ktau_funcs_free(&fs);
	return max;
}

static long max_func_id(void)
{
	return max_func_id_of(NULL);
}

/*
 * IDs above @before and below @below that someone other than ktau_self
 * took: an interrupt seen for the first time since its group was switched
 * on (the timer's, as the test switches all groups on) takes its ID
 * whenever it comes.
 */
static long others_between(long before, long below)
{
	struct ktau_funcs fs = { 0 };
	long n = 0;
	size_t i;

	if (ktau_funcs_load(&fs))
		return -1;
	for (i = 0; i < fs.n; i++)
		if ((long)fs.v[i].id > before && (long)fs.v[i].id < below &&
		    strncmp(fs.v[i].name, "ktau_self_", 10))
			n++;
	ktau_funcs_free(&fs);
	return n;
}

/* A read-only parameter of the ktau_self module, as a number. */
static long self_param(const char *name)
{
	char path[128], *v;
	long n;

	snprintf(path, sizeof(path), "/sys/module/ktau_self/parameters/%s", name);
	v = ktau_slurp(path, NULL);
	if (!v)
		return -1;
	n = strtol(v, NULL, 10);
	free(v);
	return n;
}

/*
 * A full registry (ktau.rst, "Function IDs": KTAU_REGISTRY_IDS IDs a
 * boot, the last KTAU_IDS_KEPT not for dynamic points): registration
 * fails with ENOSPC and changes nothing, a probe on a new function is
 * refused with ENOSPC, and an ID given up is not given out again, so a
 * module that unloads cannot load again; each refusal is counted in
 * ids_full. IDs are never reused within a boot, so this fills the
 * registry for the rest of the boot: it runs only when the command line
 * says ktautest.fill_registry (make check's bootparam-bad pass, where
 * nothing runs after it) and is skipped elsewhere.
 */
#define KTAU_REGISTRY_IDS	2048
#define KTAU_IDS_KEPT		256
#define KTAU_DYNAMIC_IDS	(KTAU_REGISTRY_IDS - KTAU_IDS_KEPT)

/* The "ids_full N" of /proc/ktau/control, or -1. */
static long ids_full(void)
{
	return ktau_control_count("ids_full");
}

TEST(full_registry_refuses_new_ids)
{
	long before, filled, others, pfd, ret, full0;
	char *cmd = ktau_slurp("/proc/cmdline", NULL);
	bool fill = cmd && strstr(cmd, "ktautest.fill_registry");

	free(cmd);
	if (!fill)
		SKIP(return, "fills the registry: only with ktautest.fill_registry");
	ktau_must_have_ktau(_metadata);
	before = max_func_id();
	ASSERT_LT(0, before);
	ASSERT_GT(KTAU_DYNAMIC_IDS - 3, before) TH_LOG("registry already full");
	full0 = ids_full();
	ASSERT_LE(0, full0) TH_LOG("no ids_full in " KTAU_CONTROL_PATH);
	ret = ktau_mod_load("ktau_self", "fill=4096");
	ASSERT_EQ(0, ret) TH_LOG("loading ktau_self fill=4096: %s", strerror(-ret));
	filled = self_param("filled");
	others = others_between(before, KTAU_DYNAMIC_IDS);
	ASSERT_LE(0, others);
	TH_LOG("IDs up to %ld before; ktau_self registered 3 + %ld, others %ld",
	       before, filled, others);
	EXPECT_EQ(ENOSPC, self_param("fill_errno"));
	/*
	 * Its own three points, then the fill up to the last dynamic ID;
	 * interrupt sources seen later may take the IDs kept beyond it.
	 */
	EXPECT_EQ(KTAU_DYNAMIC_IDS - 1 - before - 3 - others, filled);
	EXPECT_EQ(KTAU_DYNAMIC_IDS - 1, max_func_id_of("dynamic"));
	EXPECT_GT(KTAU_REGISTRY_IDS, max_func_id());
	/* The fill's last try. */
	EXPECT_EQ(full0 + 1, ids_full());

	/* A probe on a function never probed in this boot needs a new ID. */
	pfd = open(KTAU_PROBES_PATH, O_RDONLY);
	ASSERT_LE(0, pfd);
	EXPECT_EQ(-ENOSPC, ktau_probe_ioctl(pfd, KTAU_IOC_PROBE_ADD, "vfs_read", 0));
	close(pfd);
	EXPECT_EQ(full0 + 2, ids_full());

	/*
	 * Unloading gives the IDs up, not back: they stay listed, named
	 * for the profiles that hold them, and the module loads no more.
	 */
	ASSERT_EQ(0, ktau_mod_unload("ktau_self"));
	EXPECT_EQ(KTAU_DYNAMIC_IDS - 1, max_func_id_of("dynamic"));
	EXPECT_EQ(-ENOSPC, ktau_mod_load("ktau_self", ""));
	ktau_mod_unload("ktau_self");
	EXPECT_EQ(full0 + 3, ids_full());
}

TEST_HARNESS_MAIN
