// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of the libktau user-level runtime (lib/user.c): the timers'
 * inclusive and exclusive times, callpaths, threads, fork, and the
 * charging of kernel time, with a simulated KTAU shared page in ordinary
 * memory and a simulated clock, so that every value is known exactly.
 * One test per invocation, as host-tests:
 *
 *	user-tests --list          the names of the tests
 *	user-tests NAME OUTDIR     run one (profiles go to OUTDIR/NAME):
 *	                           exit 0 pass, 1 fail, 77 skip
 *
 * tests/host/run-tests.sh turns them into KTAP and passes every
 * directory written under OUTDIR through the strict TAU checker.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/ktau.h>

#include "libktau.h"
#include "host-test.h"
#include "user-internal.h"

static char outdir[512];

/* ---- A simulated clock and page ---------------------------------- */

static uint64_t now_ns;
static void (*on_clock)(unsigned int call);
static unsigned int nclock;

static uint64_t fake_clock(void)
{
	nclock++;
	if (on_clock)
		on_clock(nclock);
	return now_ns;
}

static struct ktau_shared page __attribute__((aligned(4096)));

#define ID_READ		(KTAU_ID_SYSCALL_BASE + 0)
#define ID_WRITE	(KTAU_ID_SYSCALL_BASE + 1)
#define ID_NANOSLEEP	(KTAU_ID_SYSCALL_BASE + 35)

static const char registry_text[] =
	"32 syscall read\n33 syscall write\n67 syscall nanosleep\n"
	"3 sched sched_blocked\n4 sched sched_preempted\n2 irq irq\n";

static void page_init(uint32_t mult, uint32_t shift)
{
	memset(&page, 0, sizeof(page));
	page.size = sizeof(page);
	page.abi = KTAU_ABI_VERSION_MAJOR << 16 | KTAU_ABI_VERSION_MINOR;
	page.nentries = KTAU_SHARED_ENTRIES;
	page.clock_mult = mult;
	page.clock_shift = shift;
	page.tid = getpid();
}

/* The counters of one routine that ended (as the kernel adds them). */
static void page_add(uint32_t group, uint32_t id, uint64_t incl, uint64_t excl)
{
	unsigned int i;

	page.groups[group].count++;
	page.groups[group].incl += incl;
	page.groups[group].excl += excl;
	page.updates++;
	for (i = 0; i < KTAU_SHARED_ENTRIES; i++) {
		if (page.entries[i].id == id || page.entries[i].id == KTAU_ID_NONE) {
			page.entries[i].id = id;
			page.entries[i].group = group;
			page.entries[i].count++;
			page.entries[i].incl += incl;
			page.entries[i].excl += excl;
			return;
		}
	}
	page.unlisted++;
}

/* A kernel routine ended: one whole update of the page. */
static void kernel(uint32_t group, uint32_t id, uint64_t incl, uint64_t excl)
{
	page.seq++;
	page_add(group, id, incl, excl);
	page.seq++;
}

static struct ktau_registry *test_registry(void)
{
	struct ktau_registry *reg = NULL;

	if (ktau_registry_parse(registry_text, strlen(registry_text), &reg))
		return NULL;
	ktau__user_test_registry(reg);
	return reg;
}

/* Clock and page for the calling thread, from time t. */
static int simulate(uint64_t t, int with_page)
{
	now_ns = t;
	ktau__user_test_clock(fake_clock);
	if (!with_page)
		return 0;
	page_init(1, 0);
	return ktau__user_test_page(&page);
}

/* ---- Rows ------------------------------------------------------- */

static struct ktau__row *rows;
static size_t nrows;

static int take_rows(void)
{
	ktau__rows_free(rows, nrows);
	rows = NULL;
	nrows = 0;
	return ktau__user_test_rows(&rows, &nrows);
}

static const struct ktau__row *row(const char *name)
{
	size_t i;

	for (i = 0; i < nrows; i++)
		if (!strcmp(rows[i].name, name))
			return &rows[i];
	return NULL;
}

static void dump_rows(void)
{
	size_t i;

	for (i = 0; i < nrows; i++)
		printf("#   \"%s\" calls %llu subrs %llu excl %llu incl %llu %s\n", rows[i].name,
		       (unsigned long long)rows[i].calls, (unsigned long long)rows[i].subrs,
		       (unsigned long long)rows[i].excl, (unsigned long long)rows[i].incl,
		       rows[i].group);
}

/* A row with exactly these values (ns). */
static int want(const char *name, uint64_t calls, uint64_t excl, uint64_t incl)
{
	const struct ktau__row *r = row(name);

	if (!r) {
		printf("# no row \"%s\"; rows:\n", name);
		dump_rows();
		return 1;
	}
	if (r->calls != calls || r->excl != excl || r->incl != incl) {
		printf("# \"%s\": calls %llu excl %llu incl %llu, expected %llu %llu %llu\n", name,
		       (unsigned long long)r->calls, (unsigned long long)r->excl,
		       (unsigned long long)r->incl, (unsigned long long)calls,
		       (unsigned long long)excl, (unsigned long long)incl);
		dump_rows();
		return 1;
	}
	return 0;
}

#define WANT(name, calls, excl, incl) do { if (want(name, calls, excl, incl)) return 1; } while (0)
#define NOROW(name) CHECK(!row(name), "a row \"%s\" that should not be there", name)

static struct ktau_timer *T(const char *name)
{
	return ktau_timer_get(name);
}

/* Events at given times. */
static int at_start(uint64_t t, const char *name)
{
	now_ns = t;
	return ktau_timer_start(T(name));
}

static int at_stop(uint64_t t, const char *name)
{
	now_ns = t;
	return ktau_timer_stop(T(name));
}

static void subdir(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", outdir, name);
}

/*
 * The process's profile written to OUTDIR/@name: the metadata line (the
 * second) of its first thread's file, or NULL.
 */
static const char *written_metadata(const char *name)
{
	static char text[1 << 16];
	char dir[600], path[700];
	FILE *f;
	int ok;

	subdir(dir, sizeof(dir), name);
	if (ktau_user_write(dir) != 1)
		return NULL;
	snprintf(path, sizeof(path), "%s/profile.0.0.0", dir);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	ok = fgets(text, sizeof(text), f) && fgets(text, sizeof(text), f);
	fclose(f);
	return ok ? text : NULL;
}

/* ---- Tests -------------------------------------------------------- */

/* Inclusive, exclusive, calls, subrs and the callpath, no kernel. */
static int t_timers_basic(void)
{
	CHECK(simulate(1000, 0) == 0, "simulate");
	CHECK(at_start(1000, "main") == 0, "start main");
	CHECK(at_start(1100, "compute") == 0, "start");
	CHECK(at_stop(1600, "compute") == 0, "stop");
	CHECK(at_start(1700, "compute") == 0, "start");
	CHECK(at_stop(1800, "compute") == 0, "stop");
	CHECK(at_stop(2000, "main") == 0, "stop main");
	CHECK(take_rows() == 0, "rows");
	WANT("main", 1, 400, 1000);
	WANT("compute", 2, 600, 600);
	WANT("main => compute", 2, 600, 600);
	CHECK(row("main")->subrs == 2 && row("compute")->subrs == 0, "subrs");
	CHECK(!strcmp(row("main")->group, "TAU_USER"), "group %s", row("main")->group);
	CHECK(!strcmp(row("main => compute")->group, "TAU_CALLPATH|TAU_USER"), "callpath group");
	NOROW("SYSCALL");	/* no page: no kernel entries at all */
	NOROW(KT_OUTSIDE_NAME);
	CHECK(nrows == 3, "%zu rows", nrows);
	return 0;
}

/* Recursion: inclusive time of the outermost activation only. */
static int t_exclusive_recursion(void)
{
	CHECK(simulate(0, 0) == 0, "simulate");
	at_start(0, "a");
	at_start(10, "b");
	at_start(20, "a");
	at_stop(30, "a");
	at_stop(40, "b");
	at_stop(50, "a");
	CHECK(take_rows() == 0, "rows");
	WANT("a", 2, 30, 50);
	WANT("b", 1, 20, 30);
	WANT("a => b", 1, 20, 30);
	WANT("a => b => a", 1, 10, 10);
	CHECK(row("a")->subrs == 1 && row("b")->subrs == 1, "subrs");
	/* Still running timers are closed in the copy, not in the state. */
	at_start(100, "a");
	now_ns = 150;
	CHECK(take_rows() == 0, "rows");
	WANT("a", 3, 80, 100);
	now_ns = 170;
	CHECK(take_rows() == 0, "rows");
	WANT("a", 3, 100, 120);
	CHECK(at_stop(200, "a") == 0, "stop");
	return 0;
}

/* The three routines of the issue: sleep, compute, write. */
static int t_kernel_charging(void)
{
	struct ktau_registry *reg = test_registry();
	int i;

	CHECK(reg && simulate(0, 1) == 0, "setup");
	at_start(0, "main");
	at_start(100, "sleeper");
	kernel(KTAU_GROUP_SCHED, KTAU_ID_SCHED_VOL, 5000, 5000);
	page.seq++;	/* nanosleep: its own update, sched nested in it */
	page_add(KTAU_GROUP_SYSCALL, ID_NANOSLEEP, 5100, 100);
	page.seq++;
	at_stop(5300, "sleeper");
	at_start(5400, "compute");
	at_stop(9400, "compute");
	at_start(9500, "writer");
	for (i = 0; i < 7; i++)
		kernel(KTAU_GROUP_SYSCALL, ID_WRITE, 20, 20);
	at_stop(10000, "writer");
	kernel(KTAU_GROUP_IRQ, KTAU_ID_IRQ, 30, 30);
	at_stop(10100, "main");
	CHECK(take_rows() == 0, "rows");
	/* The sleeper: 5200 ns, of which 5100 in the kernel. */
	WANT("sleeper", 1, 100, 5200);
	WANT("main => sleeper", 1, 100, 5200);
	WANT("main => sleeper => SCHED", 1, 5000, 5000);
	WANT("main => sleeper => SYSCALL", 1, 100, 5100);
	WANT("main => sleeper => sched_blocked", 1, 5000, 5000);
	WANT("main => sleeper => nanosleep", 1, 100, 5100);
	/* compute: no kernel time, no kernel children. */
	WANT("compute", 1, 4000, 4000);
	NOROW("main => compute => SYSCALL");
	NOROW("main => compute => SCHED");
	/* The writer: exactly its 7 write calls. */
	WANT("writer", 1, 360, 500);
	WANT("main => writer => write", 7, 140, 140);
	WANT("main => writer => SYSCALL", 7, 140, 140);
	/* main: the interrupt between its children. */
	WANT("main", 1, 370, 10100);
	WANT("main => IRQ", 1, 30, 30);
	WANT("main => irq", 1, 30, 30);
	/* Flat kernel entries: sums; groups with their TAU groups. */
	WANT("SYSCALL", 8, 240, 5240);
	WANT("SCHED", 1, 5000, 5000);
	WANT("write", 7, 140, 140);
	WANT("BH", 0, 0, 0);
	CHECK(!strcmp(row("SYSCALL")->group, "KERNEL_GROUPS|TAU_KERNEL_MERGE"), "group");
	CHECK(!strcmp(row("write")->group, "TAU_KERNEL_MERGE|KTAU_SYSCALL"), "group");
	CHECK(!strcmp(row("main => writer => write")->group,
		      "TAU_CALLPATH|TAU_KERNEL_MERGE|KTAU_SYSCALL"), "group");
	CHECK(!strcmp(row("main => sleeper => SCHED")->group,
		      "TAU_CALLPATH|KERNEL_GROUPS|TAU_KERNEL_MERGE"), "group");
	{
		struct ktau_user_stats st;

		CHECK(ktau_user_stats(&st) == 0 && st.registered, "stats");
		CHECK(st.kernel_ns == 5000 + 100 + 140 + 30, "kernel_ns %llu",
		      (unsigned long long)st.kernel_ns);
		/* 3 reads: after the sleep, the writes, the irq (and the rows). */
		CHECK(st.page_reads == 3, "page reads %llu", (unsigned long long)st.page_reads);
	}
	ktau_registry_free(reg);
	return 0;
}

/*
 * [other] (calls that found no slot in the kernel's table) has the
 * registry's group, as ktaud writes it, not the group of the first call
 * the page charged to it.
 */
static int t_other_group(void)
{
	struct ktau_registry *reg = test_registry();
	char grp[64];

	CHECK(reg && simulate(0, 1) == 0, "setup");
	at_start(0, "main");
	kernel(KTAU_GROUP_SYSCALL, KTAU_ID_OTHER, 40, 40);
	kernel(KTAU_GROUP_IRQ, KTAU_ID_OTHER, 10, 10);
	at_stop(1000, "main");
	CHECK(take_rows() == 0, "rows");
	WANT("[other]", 2, 50, 50);
	WANT("main => [other]", 2, 50, 50);
	snprintf(grp, sizeof(grp), "TAU_KERNEL_MERGE|KTAU_%s",
		 ktau_group_class(ktau_func_group(NULL, KTAU_ID_OTHER)));
	CHECK(!strcmp(row("[other]")->group, grp), "[other] in %s, not %s",
	      row("[other]")->group, grp);
	ktau_registry_free(reg);
	return 0;
}

/* Clock units: ns = units * mult >> shift; kernel time taken off a
 * frame is rounded up, callpath children down. */
static int t_kernel_clock_units(void)
{
	CHECK(simulate(0, 1) == 0, "setup");
	page.clock_mult = 3;
	page.clock_shift = 1;	/* 1.5 ns a unit */
	at_start(0, "f");
	kernel(KTAU_GROUP_SYSCALL, ID_READ, 11, 11);	/* 16.5 ns */
	kernel(KTAU_GROUP_SYSCALL, ID_READ, 11, 11);	/* 33 ns together */
	at_stop(100, "f");
	at_start(200, "g");
	kernel(KTAU_GROUP_SYSCALL, ID_READ, 1, 1);	/* 1.5 ns */
	at_stop(300, "g");
	CHECK(take_rows() == 0, "rows");
	WANT("f", 1, 67, 100);
	WANT("f => SYSCALL", 2, 33, 33);
	WANT("g", 1, 98, 100);		/* 1.5 rounded up */
	WANT("g => SYSCALL", 1, 1, 1);	/* rounded down */
	WANT("SYSCALL", 3, 34, 34);	/* 23 units */
	return 0;
}

/* An update in progress (seq odd) is not read; the read is retried. */
static int page_seq_odd_step;

static void complete_update(unsigned int call)
{
	(void)call;
	/* Not at the first clock reading (the fast path), at the second:
	 * the first read of the page found seq odd and must try again. */
	if (page_seq_odd_step == 1) {
		page_seq_odd_step = 11;
		return;
	}
	if (page_seq_odd_step == 11 && (page.seq & 1)) {
		/* The kernel finishes: the rest of the counters, seq even. */
		page.groups[KTAU_GROUP_SYSCALL].excl += 40;
		page.groups[KTAU_GROUP_SYSCALL].incl += 40;
		page.entries[0].excl += 40;
		page.entries[0].incl += 40;
		page.seq++;
		page_seq_odd_step = 2;
	}
}

static void bump_seq(unsigned int call)
{
	(void)call;
	if (page_seq_odd_step == 3) {
		/* A routine ends just while the clock is read. */
		kernel(KTAU_GROUP_IRQ, KTAU_ID_IRQ, 5, 5);
		page_seq_odd_step = 4;
	}
}

static int t_seq_odd_retry(void)
{
	struct ktau_registry *reg = test_registry();
	struct ktau_user_stats st;

	CHECK(reg && simulate(0, 1) == 0, "setup");
	at_start(0, "f");
	/* Half an update: count and id written, times not yet. */
	page.seq++;
	page.groups[KTAU_GROUP_SYSCALL].count++;
	page.entries[0].id = ID_WRITE;
	page.entries[0].group = KTAU_GROUP_SYSCALL;
	page.entries[0].count++;
	page_seq_odd_step = 1;
	on_clock = complete_update;
	at_start(100, "g");
	on_clock = NULL;
	CHECK(page_seq_odd_step == 2, "the update was not completed");
	at_stop(200, "g");
	/* The whole update, charged to f (on top when it happened). */
	CHECK(take_rows() == 0, "rows");
	WANT("f => write", 1, 40, 40);
	NOROW("f => g => write");
	/* seq changes while the clock is read: read again. */
	page_seq_odd_step = 3;
	on_clock = bump_seq;
	at_start(300, "h");
	on_clock = NULL;
	at_stop(400, "h");
	CHECK(take_rows() == 0, "rows");
	WANT("f => irq", 1, 5, 5);
	NOROW("f => h => irq");
	/* A page that stays busy: nothing read, counted, read later. */
	page.seq++;
	page.groups[KTAU_GROUP_SYSCALL].count++;
	at_start(500, "g");
	CHECK(ktau_user_stats(&st) == 0, "stats");
	page.groups[KTAU_GROUP_SYSCALL].incl += 7;
	page.groups[KTAU_GROUP_SYSCALL].excl += 7;
	page.seq++;
	at_stop(600, "g");
	CHECK(take_rows() == 0, "rows");
	WANT("f => g => SYSCALL", 1, 7, 7);
	ktau_registry_free(reg);
	return 0;
}

/* Kernel time while no timer runs goes to "[outside timers]". */
static int t_outside_timers(void)
{
	struct ktau_registry *reg = test_registry();

	CHECK(reg && simulate(1000, 1) == 0, "setup");
	kernel(KTAU_GROUP_SYSCALL, ID_READ, 10, 10);
	kernel(KTAU_GROUP_SYSCALL, ID_READ, 10, 10);
	at_start(1100, "main");
	at_stop(1200, "main");
	now_ns = 1300;
	kernel(KTAU_GROUP_FAULT, KTAU_ID_FAULT_USER, 3, 3);
	CHECK(take_rows() == 0, "rows");
	/* Two intervals: 1000..1100 and 1200..1300. */
	WANT(KT_OUTSIDE_NAME, 2, 200 - 23, 200);
	WANT(KT_OUTSIDE_NAME " => SYSCALL", 2, 20, 20);
	WANT(KT_OUTSIDE_NAME " => read", 2, 20, 20);
	WANT(KT_OUTSIDE_NAME " => EXCEPT", 1, 3, 3);
	WANT("main", 1, 100, 100);
	NOROW("main => SYSCALL");
	ktau_registry_free(reg);
	return 0;
}

/* Kernel time beyond the wall time (another clock): incl is raised. */
static int t_clock_adjust(void)
{
	char dir[600];

	CHECK(simulate(0, 1) == 0, "setup");
	at_start(0, "outer");
	at_start(10, "x");
	kernel(KTAU_GROUP_SCHED, KTAU_ID_SCHED_VOL, 100, 100);
	at_stop(60, "x");
	at_stop(70, "outer");
	CHECK(take_rows() == 0, "rows");
	WANT("x", 1, 0, 100);
	WANT("outer => x => SCHED", 1, 100, 100);
	WANT("outer", 1, 0, 100);
	subdir(dir, sizeof(dir), "clock_adjust");
	CHECK(ktau_user_write(dir) == 1, "write");
	return 0;
}

static int t_unmatched_stop(void)
{
	struct ktau_user_stats st;

	CHECK(simulate(0, 0) == 0, "setup");
	at_start(0, "a");
	at_start(10, "b");
	CHECK(at_stop(20, "zzz") == -ENOENT, "a timer that is not running");
	CHECK(ktau_user_stats(&st) == 0 && st.depth == 2 && st.unmatched == 1, "unchanged");
	at_start(30, "c");
	CHECK(at_stop(40, "b") == -EDEADLK, "b below c");
	CHECK(ktau_user_stats(&st) == 0 && st.depth == 1 && st.unmatched == 2, "c and b stopped");
	CHECK(at_stop(50, "a") == 0, "a");
	CHECK(take_rows() == 0, "rows");
	WANT("c", 1, 10, 10);
	WANT("b", 1, 20, 30);
	WANT("a => b => c", 1, 10, 10);
	CHECK(ktau_timer_start(NULL) == -EINVAL && ktau_timer_get("") == NULL &&
	      ktau_timer_start_name(NULL) == -EINVAL, "bad arguments");
	CHECK(ktau_timer_get("same") == ktau_timer_get("same"), "one handle a name");
	CHECK(ktau_timer_start_name("byname") == 0 && ktau_timer_stop_name("byname") == 0,
	      "by name");
	return 0;
}

/* Longest callpath: frames deeper than it belong to the deepest node. */
static int t_depth_limit(void)
{
	char dir[600];
	struct ktau_registry *reg = test_registry();

	setenv("KTAU_CALLPATH_DEPTH", "2", 1);
	CHECK(reg && simulate(0, 1) == 0, "setup");
	at_start(0, "main");
	at_start(10, "a");
	at_start(20, "b");
	at_start(30, "c");
	kernel(KTAU_GROUP_SYSCALL, ID_WRITE, 5, 5);
	at_stop(40, "c");
	at_stop(50, "b");
	at_stop(60, "a");
	at_stop(70, "main");
	CHECK(take_rows() == 0, "rows");
	WANT("main => a", 1, 20, 50);	/* b's 30 ns are a child, not shown */
	NOROW("main => a => b");
	WANT("main => a => write", 1, 5, 5);
	WANT("c", 1, 5, 10);
	WANT("b", 1, 20, 30);
	subdir(dir, sizeof(dir), "depth_limit");
	CHECK(ktau_user_write(dir) == 1, "write");
	ktau_registry_free(reg);
	return 0;
}

/*
 * TAU's throttling (KTAU_THROTTLE_NUMCALLS=100 here, 10 us): "tiny", 1 us
 * a call, stops being timed after its 101st call; its later calls are
 * counted as throttled, its row keeps 101 calls in TAU_USER|TAU_THROTTLED.
 * "slow" (20 us a call) and "outer" keep being timed. A start of "tiny"
 * nested in a throttled start (recursion) is skipped with its stop.
 */
static int t_throttle(void)
{
	const char *text;
	uint64_t t = 0;
	int i;

	setenv("KTAU_THROTTLE_NUMCALLS", "100", 1);
	CHECK(simulate(0, 0) == 0, "simulate");
	at_start(t, "outer");
	/* The simulated clock is in ns. */
	for (i = 0; i < 150; i++, t += 10000) {
		at_start(t + 1000, "tiny");
		at_stop(t + 2000, "tiny");
	}
	for (i = 0; i < 150; i++, t += 30000) {
		at_start(t + 1000, "slow");
		at_stop(t + 21000, "slow");
	}
	/* Recursion of the throttled routine: both levels skipped. */
	at_start(t + 1000, "tiny");
	at_start(t + 2000, "tiny");
	CHECK(at_stop(t + 3000, "tiny") == 0, "inner stop");
	CHECK(at_stop(t + 4000, "tiny") == 0, "outer stop");
	t += 10000;
	at_stop(t, "outer");
	CHECK(take_rows() == 0, "rows");
	WANT("tiny", 101, 101000, 101000);
	CHECK(!strcmp(row("tiny")->group, "TAU_USER|TAU_THROTTLED"), "group %s", row("tiny")->group);
	CHECK(!strcmp(row("outer => tiny")->group, "TAU_CALLPATH|TAU_USER|TAU_THROTTLED"),
	      "callpath group %s", row("outer => tiny")->group);
	WANT("slow", 150, 3000000, 3000000);
	CHECK(!strcmp(row("slow")->group, "TAU_USER"), "slow: group %s", row("slow")->group);
	CHECK(row("outer")->calls == 1 && row("outer")->subrs == 251, "outer: %llu subrs",
	      (unsigned long long)row("outer")->subrs);
	text = written_metadata("throttle");
	CHECK(text, "no metadata written");
	/* 49 more calls and the two of the recursion. */
	CHECK(strstr(text, "<name>KTAU Throttled Calls</name><value>51</value>"), "throttled calls");
	CHECK(strstr(text, "<name>KTAU Throttle</name><value>over 100 calls under 10 us each</value>"),
	      "the rule");
	return 0;
}

/* TAU's '#' wildcard; the select file's syntax and its errors. */
static int t_select_parse(void)
{
	static const struct {
		const char *pat, *s;
		int match;
	} m[] = {
		{ "compute", "compute", 1 }, { "compute", "compute2", 0 }, { "compute", "comput", 0 },
		{ "#", "", 1 }, { "#", "anything", 1 }, { "sort_#(int *)", "sort_5elements(int *)", 1 },
		{ "sort_#(int *)", "sort_5elements(int)", 0 }, { "#_file", "write_file", 1 },
		{ "#_file", "write_filer", 0 }, { "a#b#c", "aXXbYYbc", 1 }, { "a#b#c", "aXXcYYb", 0 },
		{ "demo::Grid::#", "demo::Grid::step(int)", 1 }, { "*", "x", 0 }, { "*", "*", 1 },
		{ "##x", "yx", 1 }, { "", "", 1 }, { "", "x", 0 },
	};
	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "compute\n", "line 1: 'compute' is not a routine list" },
		{ "BEGIN_FILE_EXCLUDE_LIST\n*.so\nEND_FILE_EXCLUDE_LIST\n", "source file lists" },
		{ "BEGIN_EXCLUDE_LIST\nf\n", "ends inside a list" },
		{ "BEGIN_EXCLUDE_LIST\nBEGIN_INCLUDE_LIST\n", "line 2: BEGIN_INCLUDE_LIST inside another list" },
		{ "END_INCLUDE_LIST\n", "line 1: END_INCLUDE_LIST without its BEGIN" },
		{ "BEGIN_EXCLUDE_LIST\nf\nEND_INCLUDE_LIST\n", "line 3: END_INCLUDE_LIST without" },
		{ "BEGIN_EXCLUDE_LIST\n\"#x\nEND_EXCLUDE_LIST\n", "line 2: unbalanced quote" },
	};
	char path[600], err[256];
	size_t i;
	FILE *f;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		CHECK(ktau__select_match(m[i].pat, m[i].s) == m[i].match, "'%s' against '%s': %d",
		      m[i].pat, m[i].s, !m[i].match);
	snprintf(path, sizeof(path), "%s/select.tau", outdir);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f = fopen(path, "w");
		CHECK(f && fputs(bad[i].text, f) >= 0 && !fclose(f), "write %s", path);
		err[0] = '\0';
		CHECK(ktau__select_parse(path, err, sizeof(err)) == -EINVAL, "accepted: %s", bad[i].text);
		CHECK(strstr(err, bad[i].err), "'%s', not '%s'", err, bad[i].err);
		/* A refused file applies nothing. */
		CHECK(!ktau__select_name("f") && !ktau__select_addr(1), "a refused file applied");
	}
	/* A last line of the longest length, without its newline. */
	f = fopen(path, "w");
	CHECK(f && fputs("BEGIN_EXCLUDE_LIST\n", f) >= 0, "write %s", path);
	for (i = 0; i < 4094; i++)
		fputc('a', f);
	CHECK(!fclose(f), "close");
	CHECK(ktau__select_parse(path, err, sizeof(err)) == -EINVAL && strstr(err, "ends inside a list"),
	      "a last line of 4094 bytes: '%s'", err);
	CHECK(ktau__select_parse("/nonexistent/select.tau", err, sizeof(err)) == -ENOENT, "missing");
	CHECK(strstr(err, "cannot open it"), "'%s'", err);
	/* Comments, blank lines, quotes, spaces and CRLF around names. */
	f = fopen(path, "w");
	CHECK(f && fputs("# c\n\nBEGIN_EXCLUDE_LIST\r\n  tiny  \r\n# not a name\n\"#_x\"\n"
			 "END_EXCLUDE_LIST\nBEGIN_INCLUDE_LIST\n\touter\nt#\nEND_INCLUDE_LIST\n", f) >= 0 &&
	      !fclose(f), "write %s", path);
	CHECK(ktau__select_parse(path, err, sizeof(err)) == 0, "refused: %s", err);
	CHECK(ktau__select_name("tiny") && ktau__select_name("a_x") && !ktau__select_name("outer") &&
	      !ktau__select_name("top") && ktau__select_name("other"), "the lists");
	ktau__select_reset();
	CHECK(!ktau__select_name("tiny"), "reset");
	return 0;
}

/*
 * KTAU_SELECT_FILE: an excluded routine is not a timer (its time is its
 * caller's, as if inlined); the profile says which file applied.
 */
static int t_select_exclude(void)
{
	const char *text;
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/select.tau", outdir);
	f = fopen(path, "w");
	CHECK(f && fputs("BEGIN_EXCLUDE_LIST\nti#\nEND_EXCLUDE_LIST\n", f) >= 0 && !fclose(f),
	      "write %s", path);
	setenv("KTAU_SELECT_FILE", path, 1);
	CHECK(simulate(0, 0) == 0, "simulate");
	/*
	 * Made before the first event, which sets the process up (making a
	 * timer does not: it may be done in a signal handler): the lists
	 * reach it then.
	 */
	CHECK(ktau_timer_get("tiny"), "tiny");
	at_start(0, "outer");
	at_start(100, "tiny");
	at_start(200, "inner");
	at_stop(300, "inner");
	CHECK(at_stop(400, "tiny") == 0, "the stop of an excluded routine");
	at_stop(1000, "outer");
	CHECK(take_rows() == 0, "rows");
	CHECK(!row("tiny") && !row("outer => tiny") && !row("outer => tiny => inner"), "tiny timed");
	WANT("outer", 1, 900, 1000);
	WANT("inner", 1, 100, 100);
	WANT("outer => inner", 1, 100, 100);
	text = written_metadata("select");
	CHECK(text, "no metadata written");
	CHECK(strstr(text, "<name>KTAU Excluded Routines</name><value>1</value>"), "excluded count");
	CHECK(strstr(text, "/select.tau</value>"), "no select file in the metadata");
	return 0;
}

/* KTAU_THROTTLE=0: every call is timed. */
static int t_throttle_off(void)
{
	int i;

	setenv("KTAU_THROTTLE_NUMCALLS", "100", 1);
	setenv("KTAU_THROTTLE", "0", 1);
	CHECK(simulate(0, 0) == 0, "simulate");
	for (i = 0; i < 150; i++) {
		at_start(10 * i, "tiny");
		at_stop(10 * i + 1, "tiny");
	}
	CHECK(take_rows() == 0, "rows");
	WANT("tiny", 150, 150, 150);
	CHECK(!strcmp(row("tiny")->group, "TAU_USER"), "group %s", row("tiny")->group);
	return 0;
}

/* Names that would break the format or collide are changed. */
static int t_names(void)
{
	static const char *const bad[] = {
		"write", "SYSCALL", KT_OUTSIDE_NAME, "quote\"d", "a => b", "  spaced   out ",
		"ctl\n\tchars", "\xff\xfe invalid utf8", "ok", "ok [user]",
	};
	struct ktau_registry *reg = test_registry();
	char dir[600];
	size_t i, j;

	CHECK(reg && simulate(0, 1) == 0, "setup");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(at_start(10 * i, bad[i]) == 0, "start %zu", i);
		kernel(KTAU_GROUP_SYSCALL, ID_WRITE, 1, 1);
		CHECK(at_stop(10 * i + 5, bad[i]) == 0, "stop %zu", i);
	}
	CHECK(take_rows() == 0, "rows");
	WANT("write [user]", 1, 4, 5);
	WANT("SYSCALL [user]", 1, 4, 5);
	WANT(KT_OUTSIDE_NAME " [user]", 1, 4, 5);
	WANT("quote'd", 1, 4, 5);
	WANT("a =_ b", 1, 4, 5);
	WANT("spaced out", 1, 4, 5);
	WANT("ctl chars", 1, 4, 5);
	WANT("?? invalid utf8", 1, 4, 5);
	WANT("write [user] => write", 1, 1, 1);
	WANT("write", 10, 10, 10);
	for (i = 0; i < nrows; i++)
		for (j = 0; j < i; j++)
			CHECK(strcmp(rows[i].name, rows[j].name), "duplicate \"%s\"", rows[i].name);
	subdir(dir, sizeof(dir), "names");
	CHECK(ktau_user_write(dir) == 1, "write");
	ktau_registry_free(reg);
	return 0;
}

/* Symbol names as c++filt writes them; others, and junk, as they are. */
static int t_demangle(void)
{
	static const char *const v[][2] = {
		{ "_ZNKSt6vectorIdSaIdEE4sizeEv",
		  "std::vector<double, std::allocator<double> >::size() const" },
		{ "_Z3fooi.isra.0", "foo(int) [clone .isra.0]" },
		{ "_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write" },
		{ "_RNvCskwGfYPst2Cb_3foo16example_function", "foo::example_function" },
		{ "main", "main" },
		{ "_Zjunk", "_Zjunk" },
		{ "_R", "_R" },
		{ "_", "_" },
	};
	char big[2 * KT_NAME_MAX], *d;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		d = ktau__demangle(v[i][0]);
		CHECK(d && !strcmp(d, v[i][1]), "%s: \"%s\", not \"%s\"", v[i][0],
		      d ? d : "(null)", v[i][1]);
		free(d);
	}
	/* At most KT_NAME_MAX bytes, mangled or not. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	d = ktau__demangle(big);
	CHECK(d && strlen(d) == KT_NAME_MAX, "a long name: %zu bytes", d ? strlen(d) : 0);
	free(d);
	return 0;
}

/* An event in a signal handler during another event is dropped. */
static int in_handler_ret;

static void handler(int sig)
{
	(void)sig;
	in_handler_ret = ktau_timer_start_name("in_handler");
}

static void raise_once(unsigned int call)
{
	(void)call;
	on_clock = NULL;
	raise(SIGUSR1);
}

static int t_signal_nested(void)
{
	struct ktau_user_stats st;

	signal(SIGUSR1, handler);
	CHECK(simulate(0, 1) == 0, "setup");
	at_start(0, "f");
	on_clock = raise_once;
	at_stop(10, "f");
	CHECK(in_handler_ret == -EBUSY, "the handler's start returned %d", in_handler_ret);
	CHECK(ktau_user_stats(&st) == 0 && st.dropped == 1 && st.depth == 0, "dropped %llu",
	      (unsigned long long)st.dropped);
	CHECK(take_rows() == 0, "rows");
	NOROW("in_handler");
	WANT("f", 1, 10, 10);
	return 0;
}

/*
 * A thread's first event, two new timers and a new callpath, all in a
 * signal handler that interrupted the thread in malloc() or free(): the
 * runtime must take none of malloc's locks there (a deadlock, cut by
 * alarm(), or a corrupt heap). Each worker only allocates until its
 * handler has run once.
 */
#define SF_THREADS	64

static atomic_int sf_done[SF_THREADS];	/* 1: the handler's events worked, 2: not */
static char sf_names[SF_THREADS][2][32];
static __thread int sf_idx = -1;

static void sf_handler(int sig)
{
	int i = sf_idx, e = errno, ok;
	struct ktau_timer *a, *b;

	(void)sig;
	if (i < 0 || atomic_load(&sf_done[i]))
		return;
	a = ktau_timer_get(sf_names[i][0]);
	b = ktau_timer_get(sf_names[i][1]);
	ok = a && b && !ktau_timer_start(a) && !ktau_timer_start(b) &&
	     !ktau_timer_stop(b) && !ktau_timer_stop(a);
	atomic_store(&sf_done[i], ok ? 1 : 2);
	errno = e;
}

static void *sf_worker(void *arg)
{
	unsigned int x = (unsigned int)(long)arg * 2654435761u + 1;
	volatile char *p;

	sf_idx = (int)(long)arg;
	while (!atomic_load(&sf_done[sf_idx])) {
		x = x * 1103515245u + 12345u;
		/* Above the thread cache's sizes: malloc's arena lock. */
		p = malloc(2048 + (x >> 16) % 60000);
		if (p)
			p[0] = 1;
		free((void *)p);
	}
	return NULL;
}

static int t_signal_first_event(void)
{
	struct sigaction sa = { .sa_handler = sf_handler, .sa_flags = SA_RESTART };
	char dir[600], path[700], line[4096];
	int i, ok = 0, ret, found = 0;
	FILE *f;

	subdir(dir, sizeof(dir), "sigfirst");
	CHECK(ktau_user_init() >= 0, "init");
	CHECK(!sigaction(SIGPROF, &sa, NULL), "sigaction");
	alarm(30);	/* a deadlock fails the test (SIGALRM) rather than hang it */
	for (i = 0; i < SF_THREADS; i++) {
		struct timespec ts = { 0, 20000 + (i * 7919 % 61) * 1000 };
		pthread_t th;

		snprintf(sf_names[i][0], sizeof(sf_names[i][0]), "sig_%d_outer", i);
		snprintf(sf_names[i][1], sizeof(sf_names[i][1]), "sig_%d_inner", i);
		CHECK(!pthread_create(&th, NULL, sf_worker, (void *)(long)i), "create");
		while (!atomic_load(&sf_done[i])) {
			nanosleep(&ts, NULL);
			pthread_kill(th, SIGPROF);
		}
		pthread_join(th, NULL);
		ok += atomic_load(&sf_done[i]) == 1;
	}
	alarm(0);
	CHECK(ok == SF_THREADS, "the handler's events worked in %d of %d threads", ok, SF_THREADS);
	ret = ktau_user_write(dir);
	CHECK(ret >= SF_THREADS, "%d files", ret);
	/* One worker's callpath, made in its handler. */
	for (i = 0; i <= ret && !found; i++) {
		snprintf(path, sizeof(path), "%s/profile.0.0.%d", dir, i);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "\"sig_5_outer => sig_5_inner\" 1 ", 28))
				found = 1;
		fclose(f);
	}
	CHECK(found, "no file has the callpath sig_5_outer => sig_5_inner, 1 call");
	return 0;
}

/*
 * A signal handler in a thread that holds the runtime's lock (as in
 * ktau_user_write()): a new timer is refused (NULL) and an event dropped,
 * rather than the thread waiting for itself.
 */
static struct ktau_timer *sl_new, *sl_old;
static int sl_start;

static void sl_handler(int sig)
{
	(void)sig;
	sl_new = ktau_timer_get("made_in_handler");
	sl_start = ktau_timer_start(sl_old);
}

static int t_signal_in_lock(void)
{
	struct ktau_user_stats st;

	CHECK(ktau_user_init() >= 0, "init");
	sl_old = ktau_timer_get("old");
	CHECK(sl_old, "old");
	signal(SIGUSR2, sl_handler);
	alarm(30);	/* a deadlock fails the test (SIGALRM) rather than hang it */
	ktau__lock();
	raise(SIGUSR2);
	ktau__unlock();
	alarm(0);
	CHECK(!sl_new, "a timer was made under the lock");
	CHECK(sl_start == -EBUSY, "the handler's start returned %d", sl_start);
	CHECK(ktau_user_stats(&st) == 0 && st.dropped == 1 && st.depth == 0,
	      "dropped %llu, depth %d", (unsigned long long)st.dropped, st.depth);
	/* Out of the lock, the same name makes its timer. */
	CHECK(ktau_timer_get("made_in_handler"), "no timer after the lock");
	return 0;
}

/*
 * The same in fork(): a handler that runs while the runtime's fork
 * handler holds its lock. An atfork prepare handler registered before
 * the runtime's runs after it, with the lock held: it raises the signal.
 */
static void sf_prepare(void)
{
	raise(SIGUSR2);
}

static int t_signal_in_fork(void)
{
	int status;
	pid_t pid;

	CHECK(!pthread_atfork(sf_prepare, NULL, NULL), "pthread_atfork");
	CHECK(ktau_user_init() >= 0, "init");
	sl_old = ktau_timer_get("old");
	CHECK(sl_old, "old");
	signal(SIGUSR2, sl_handler);
	alarm(30);	/* a deadlock fails the test (SIGALRM) rather than hang it */
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		_exit(ktau_timer_get("child_timer") ? 0 : 1);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "child: status %#x", status);
	alarm(0);
	CHECK(!sl_new, "a timer was made under the lock");
	CHECK(sl_start == -EBUSY, "the handler's start returned %d", sl_start);
	CHECK(ktau_timer_get("made_in_handler"), "no timer after the fork");
	return 0;
}

/*
 * A handler inside a thread's own first event (a signal while the thread
 * makes its state): its event is dropped, and the thread has one state
 * and one file (it had two: the handler made a second).
 */
static void *first_event_worker(void *arg)
{
	(void)arg;
	on_clock = raise_once;	/* the first clock read is in the set-up */
	ktau_timer_start_name("t_work");
	ktau_timer_stop_name("t_work");
	return NULL;
}

static int t_signal_in_first_event(void)
{
	char dir[600];
	pthread_t th;
	int ret;

	subdir(dir, sizeof(dir), "first-event");
	signal(SIGUSR1, handler);
	CHECK(simulate(0, 0) == 0, "setup");
	CHECK(!pthread_create(&th, NULL, first_event_worker, NULL), "create");
	pthread_join(th, NULL);
	CHECK(in_handler_ret == -EBUSY, "the handler's start returned %d", in_handler_ret);
	ret = ktau_user_write(dir);
	CHECK(ret == 1, "%d files (the worker has one state)", ret);
	return 0;
}

/* Threads: each its own stack and file; finalized at thread exit. */
static void *worker(void *arg)
{
	long n = (long)arg, i;
	struct ktau_timer *w = ktau_timer_get("work"), *in = ktau_timer_get("inner");

	for (i = 0; i < n; i++) {
		ktau_timer_start(w);
		ktau_timer_start(in);
		ktau_timer_stop(in);
		ktau_timer_stop(w);
	}
	ktau_timer_start(w);	/* left running: closed at thread exit */
	return NULL;
}

static int t_threads(void)
{
	pthread_t th[3];
	char dir[600], path[700], line[8192], tids[3][32];
	long i;
	FILE *f;
	int ret;

	subdir(dir, sizeof(dir), "threads");
	CHECK(ktau_timer_start_name("main") == 0, "main");
	for (i = 0; i < 3; i++)
		CHECK(!pthread_create(&th[i], NULL, worker, (void *)(i + 2)), "create");
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	CHECK(ktau_timer_stop_name("main") == 0, "main");
	ret = ktau_user_write(dir);
	CHECK(ret == 4, "%d files", ret);
	for (i = 1; i <= 3; i++) {
		int found = 0;

		snprintf(path, sizeof(path), "%s/profile.0.0.%ld", dir, i);
		f = fopen(path, "r");
		CHECK(f, "%s", path);
		while (fgets(line, sizeof(line), f)) {
			char *p = strstr(line, "<name>tid</name><value>");

			if (p)
				snprintf(tids[i - 1], sizeof(tids[i - 1]), "%.20s", p + 23);
			if (!strncmp(line, "\"work\" ", 7)) {
				unsigned long calls = strtoul(line + 7, NULL, 10);

				/* Threads register in creation order or not: n + 1 calls,
				 * n from 2 to 4; the running one closed at exit. */
				CHECK(calls >= 3 && calls <= 5, "work calls %lu", calls);
				found = 1;
			}
			if (strstr(line, "\"main\""))
				FAIL("%s: main in a worker's file", path);
		}
		fclose(f);
		CHECK(found, "%s: no work", path);
	}
	CHECK(strcmp(tids[0], tids[1]) && strcmp(tids[1], tids[2]), "tids not distinct");
	snprintf(path, sizeof(path), "%s/profile.0.0.4", dir);
	CHECK(access(path, F_OK), "an extra file");
	return 0;
}

/* Writing while another thread times: a consistent copy of it (seqlock). */
static volatile int spin_stop;

static void *spinner(void *arg)
{
	struct ktau_timer *a = ktau_timer_get("spin"), *b = ktau_timer_get("spin_inner");
	char name[32];
	long i = 0;

	(void)arg;
	while (!spin_stop) {
		ktau_timer_start(a);
		ktau_timer_start(b);
		/* New timers now and then: the tables grow while copied. */
		if (!(++i % 64) && i < 64 * 200) {
			snprintf(name, sizeof(name), "new_%ld", i / 64);
			ktau_timer_start_name(name);
			ktau_timer_stop_name(name);
		}
		ktau_timer_stop(b);
		ktau_timer_stop(a);
	}
	ktau_timer_start(a);	/* running at exit */
	return NULL;
}

static int t_live_thread(void)
{
	char dir[600], path[700], line[16384];
	int i, ret, running = 0;
	pthread_t th;
	FILE *f;

	subdir(dir, sizeof(dir), "live");
	CHECK(ktau_timer_start_name("main") == 0, "main");
	CHECK(!pthread_create(&th, NULL, spinner, NULL), "thread");
	usleep(20000);
	for (i = 0; i < 50; i++) {
		ret = ktau_user_write(dir);
		CHECK(ret == 2, "write %d: %d files", i, ret);
	}
	snprintf(path, sizeof(path), "%s/profile.0.0.1", dir);
	f = fopen(path, "r");
	CHECK(f, "%s", path);
	while (fgets(line, sizeof(line), f))
		running |= !!strstr(line, "<value>running at write");
	fclose(f);
	CHECK(running, "the thread's state is not 'running at write'");
	spin_stop = 1;
	pthread_join(th, NULL);
	CHECK(ktau_timer_stop_name("main") == 0, "main");
	/* And at exit, the thread finished: written once more. */
	CHECK(ktau_user_output(dir) == 0, "output");
	return 0;
}

/* fork: the child starts its own profile, written to DIR/fork-<pid>. */
static int t_fork(void)
{
	char dir[600], path[800], line[8192];
	int status, seen_child = 0, seen_before = 0;
	pid_t pid;
	FILE *f;

	subdir(dir, sizeof(dir), "fork");
	CHECK(ktau_user_output(dir) == 0, "output");
	CHECK(ktau_timer_start_name("before_fork") == 0 && ktau_timer_stop_name("before_fork") == 0,
	      "before");
	CHECK(ktau_timer_start_name("around_fork") == 0, "around");
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		ktau_timer_start_name("in_child");
		ktau_timer_stop_name("in_child");
		ktau_timer_stop_name("around_fork");
		exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "child");
	CHECK(ktau_timer_stop_name("around_fork") == 0, "around");
	snprintf(path, sizeof(path), "%s/fork-%d/profile.0.0.0", dir, (int)pid);
	f = fopen(path, "r");
	CHECK(f, "the child wrote no %s", path);
	while (fgets(line, sizeof(line), f)) {
		seen_child |= !strncmp(line, "\"around_fork => in_child\" 1 ", 28);
		seen_before |= !!strstr(line, "before_fork");
	}
	fclose(f);
	CHECK(seen_child && !seen_before, "child profile: callpath %d, parent's data %d",
	      seen_child, seen_before);
	snprintf(path, sizeof(path), "%s/fork-%d/profile.0.0.1", dir, (int)pid);
	CHECK(access(path, F_OK), "the child has one thread");
	/* The parent's profile is written at exit (checked by run-tests.sh). */
	return 0;
}

/* Without KTAU: timers work, one message with KTAU_VERBOSE, no kernel rows. */
static void *touch(void *arg)
{
	(void)arg;
	ktau_timer_start_name("t");
	ktau_timer_stop_name("t");
	return NULL;
}

static int t_no_ktau(void)
{
	char log[600], text[4096], dir[600];
	pthread_t th;
	size_t n;
	FILE *f;
	int ret;

	if (!access("/proc/ktau", F_OK)) {
		printf("# this host has /proc/ktau\n");
		return 77;
	}
	subdir(log, sizeof(log), "no_ktau.log");
	fflush(stderr);
	CHECK(freopen(log, "w", stderr), "stderr");
	setenv("KTAU_VERBOSE", "1", 1);
	ret = ktau_user_init();
	CHECK(ret == 0, "ktau_user_init: %d", ret);
	CHECK(ktau_user_shared(1) == -ENOENT, "registration must fail with ENOENT");
	pthread_create(&th, NULL, touch, NULL);
	pthread_join(th, NULL);
	CHECK(ktau_timer_start_name("x") == 0 && ktau_timer_stop_name("x") == 0, "timers");
	fflush(stderr);
	f = fopen(log, "r");
	CHECK(f, "log");
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	CHECK(strstr(text, "CONFIG_KTAU=y"), "no hint: '%s'", text);
	CHECK(!strstr(strstr(text, "libktau:") + 1, "libktau:"), "reported twice: '%s'", text);
	CHECK(take_rows() == 0, "rows");
	NOROW("SYSCALL");
	subdir(dir, sizeof(dir), "no_ktau");
	CHECK(ktau_user_write(dir) == 2, "two threads");
	return 0;
}

static void kernel_during_write(unsigned int call)
{
	(void)call;
	on_clock = NULL;
	kernel(KTAU_GROUP_SYSCALL, ID_WRITE, 55, 55);
}

/* A profile with everything, for the strict checker. */
static int t_write_merged(void)
{
	struct ktau_registry *reg = test_registry();
	char dir[600], path[700], line[16384];
	FILE *f;
	int i, lines = 0;

	CHECK(reg && simulate(0, 1) == 0, "setup");
	kernel(KTAU_GROUP_SYSCALL, ID_READ, 10, 10);
	at_start(100, "main");
	for (i = 0; i < 3; i++) {
		at_start(200 + i * 1000, "io");
		at_start(300 + i * 1000, "read_file");
		kernel(KTAU_GROUP_SYSCALL, ID_READ, 50, 40);
		kernel(KTAU_GROUP_IRQ, KTAU_ID_IRQ, 10, 10);
		at_stop(500 + i * 1000, "read_file");
		kernel(KTAU_GROUP_FAULT, KTAU_ID_FAULT_USER, 30, 30);
		at_stop(900 + i * 1000, "io");
	}
	at_start(5000, "sleep");
	kernel(KTAU_GROUP_SCHED, KTAU_ID_SCHED_VOL, 9000, 9000);
	kernel(KTAU_GROUP_SYSCALL, ID_NANOSLEEP, 9100, 100);
	at_stop(14200, "sleep");
	at_start(14300, "running");
	subdir(dir, sizeof(dir), "merged");
	now_ns = 15000;
	on_clock = kernel_during_write;
	CHECK(ktau_user_write(dir) == 1, "write");
	CHECK(!on_clock, "no clock reading while writing");
	snprintf(path, sizeof(path), "%s/profile.0.0.0", dir);
	f = fopen(path, "r");
	CHECK(f, "%s", path);
	while (fgets(line, sizeof(line), f)) {
		lines++;
		if (lines == 2)
			CHECK(strstr(line, "<name>KTAU Shared Page</name><value>registered</value>") &&
			      strstr(line, "open timers closed at the time of writing"), "metadata");
	}
	fclose(f);
	CHECK(lines > 20, "%d lines", lines);
	/* The writing's own kernel time (55) is not charged later. */
	kernel(KTAU_GROUP_SYSCALL, ID_WRITE, 77, 77);
	CHECK(ktau_timer_stop_name("running") == 0, "stop");
	CHECK(take_rows() == 0, "rows");
	WANT("main => running => write", 1, 77, 77);
	ktau_registry_free(reg);
	return 0;
}

/* ---- Output directories: nobody's data lost ------------------------ */

static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* The file holds exactly text. */
static int same_text(const char *path, const char *text)
{
	char buf[4096];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return !strcmp(buf, text);
}

static int timed_once(const char *name)
{
	return ktau_timer_start_name(name) || ktau_timer_stop_name(name) ? -1 : 0;
}

/*
 * Nothing measured (prog --help): no directory, nothing removed; neither
 * by ktau_user_write nor at exit.
 */
static int t_nothing_measured(void)
{
	char dir[600], atexit_dir[600];
	struct stat st;
	int status;
	pid_t pid;

	subdir(atexit_dir, sizeof(atexit_dir), "nothing-at-exit");
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		if (ktau_user_output(atexit_dir) || ktau_user_init() < 0)
			_exit(3);
		exit(0);	/* the runtime's atexit runs */
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "child");
	CHECK(stat(atexit_dir, &st) && errno == ENOENT, "%s was made at exit, with nothing "
	      "measured", atexit_dir);
	subdir(dir, sizeof(dir), "nothing");
	CHECK(ktau_user_init() >= 0, "init");
	CHECK(ktau_user_write(dir) == 0, "files written with nothing measured");
	CHECK(stat(dir, &st) && errno == ENOENT, "%s was made with nothing measured", dir);
	return 0;
}

/*
 * A directory with somebody else's files (a TAU profile of the program,
 * notes): refused, nothing touched. Our own earlier files are replaced.
 */
static int t_outdir_foreign(void)
{
	static const char theirs[] = "1 templated_functions_MULTI_TIME\n# theirs\n";
	char dir[600], path[700], notes[700];
	int ret;

	subdir(dir, sizeof(dir), "foreign");
	CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
	snprintf(path, sizeof(path), "%s/profile.0.0.0", dir);
	snprintf(notes, sizeof(notes), "%s/notes.txt", dir);
	CHECK(write_text(path, theirs) == 0 && write_text(notes, "my notes\n") == 0, "files");
	CHECK(timed_once("work") == 0, "timer");
	ret = ktau_user_write(dir);
	CHECK(ret == -ENOTEMPTY, "a directory with others' files: %d, not -ENOTEMPTY", ret);
	CHECK(strstr(ktau_output_error(), "notes.txt") || strstr(ktau_output_error(), "profile.0.0.0"),
	      "the message names no file: '%s'", ktau_output_error());
	CHECK(same_text(path, theirs) && same_text(notes, "my notes\n"), "their files changed");
	snprintf(notes, sizeof(notes), "%s/.ktau-written.user.0", dir);
	CHECK(access(notes, F_OK), "a refused directory got %s", notes);
	/* Not a TAU directory: gone before the strict checker sees it. */
	snprintf(notes, sizeof(notes), "%s/notes.txt", dir);
	CHECK(unlink(path) == 0 && unlink(notes) == 0 && rmdir(dir) == 0, "clean up");
	/* Ours alone: written, then replaced by the next write. */
	subdir(dir, sizeof(dir), "own");
	CHECK(ktau_user_write(dir) == 1, "first write");
	CHECK(ktau_user_write(dir) == 1, "our own earlier files are not foreign");
	snprintf(path, sizeof(path), "%s/.ktau-written.user.0", dir);
	CHECK(!access(path, F_OK), "no manifest %s", path);
	return 0;
}

/* Remove what the outdir tests below made in @dir, then @dir. */
static void outdir_clean(const char *dir)
{
	static const char *const names[] = {
		".ktau-written.user.0", "profile.0.0.0", "victim.txt", "lnk", "partial",
	};
	char path[800];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* A manifest of the user kind for node 0: header, names, stamp lines. */
static int write_manifest(const char *dir, int pid, const char *body)
{
	char path[700], text[2048], host[256];

	if (gethostname(host, sizeof(host)))
		return -1;
	host[sizeof(host) - 1] = '\0';
	snprintf(path, sizeof(path), "%s/.ktau-written.user.0", dir);
	snprintf(text, sizeof(text), "# ktau-written 1 kind=user node=0 host=%s pid=%d\n%s", host,
		 pid, body);
	return write_text(path, text);
}

/* The stamp line a writer puts in its manifest for @path, named @name. */
static int stamp_line(char *buf, size_t size, const char *path, const char *name)
{
	struct stat st;

	if (lstat(path, &st) && stat(path, &st))
		return -1;
	snprintf(buf, size, "=%llu %llu %llu %s\n", (unsigned long long)st.st_ino,
		 (unsigned long long)st.st_size,
		 st.st_mtim.tv_sec * 1000000000ULL + st.st_mtim.tv_nsec, name);
	return 0;
}

/*
 * The line a writer adds to its manifest at close, as if it closed @ns
 * after this boot began: "# closed boot=ID ns=NS".
 */
static int closed_line(char *buf, size_t size, unsigned long long ns)
{
	char id[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	if (!f)
		return -1;
	if (!fgets(id, sizeof(id), f))
		id[0] = '\0';
	fclose(f);
	id[strcspn(id, "\n")] = '\0';
	snprintf(buf, size, "# closed boot=%s ns=%llu\n", id, ns);
	return id[0] ? 0 : -1;
}

/*
 * A manifest that this user's writer cannot have made (writable by
 * others: planted in a shared directory) names a file to remove: it is
 * refused and nothing is removed; so is one with two links. One of ours
 * that lists a path through a symbolic link (planted beside it) removes
 * nothing through the link.
 */
static int t_outdir_planted(void)
{
	static const char victim[] = "their data\n";
	char dir[600], home[600], path[700], stamp[900], body[2048];
	int ret;

	subdir(dir, sizeof(dir), "planted");
	CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
	snprintf(path, sizeof(path), "%s/victim.txt", dir);
	CHECK(write_text(path, victim) == 0 && stamp_line(stamp, sizeof(stamp), path,
							  "victim.txt") == 0, "victim");
	snprintf(body, sizeof(body), "victim.txt\n%s", stamp);
	CHECK(write_manifest(dir, 1, body) == 0, "manifest");
	snprintf(path, sizeof(path), "%s/.ktau-written.user.0", dir);
	CHECK(chmod(path, 0666) == 0, "chmod");
	CHECK(timed_once("work") == 0, "timer");
	ret = ktau_user_write(dir);
	CHECK(ret == -EPERM, "a manifest writable by others: %d, not -EPERM", ret);
	CHECK(strstr(ktau_output_error(), ".ktau-written.user.0"), "the message names no "
	      "manifest: '%s'", ktau_output_error());
	/* Not writable by others, but a hard link (to a file elsewhere). */
	CHECK(chmod(path, 0644) == 0, "chmod");
	snprintf(stamp, sizeof(stamp), "%s/partial", dir);
	CHECK(link(path, stamp) == 0, "link");
	ret = ktau_user_write(dir);
	CHECK(ret == -EPERM, "a manifest with two links: %d, not -EPERM", ret);
	snprintf(path, sizeof(path), "%s/victim.txt", dir);
	CHECK(same_text(path, victim), "%s was removed or changed", path);
	outdir_clean(dir);

	/* Through a link: home/victim.txt listed as lnk/victim.txt. */
	subdir(home, sizeof(home), "planted-home");
	subdir(dir, sizeof(dir), "planted-link");
	CHECK(mkdir(home, 0755) == 0 && mkdir(dir, 0755) == 0, "mkdir");
	snprintf(path, sizeof(path), "%s/lnk", dir);
	CHECK(symlink("planted-home", path) == 0, "symlink");
	snprintf(path, sizeof(path), "%s/victim.txt", home);
	CHECK(write_text(path, victim) == 0 && stamp_line(stamp, sizeof(stamp), path,
							  "lnk/victim.txt") == 0, "victim");
	snprintf(body, sizeof(body), "lnk\nlnk/victim.txt\n%s", stamp);
	CHECK(write_manifest(dir, 1, body) == 0, "manifest");
	ret = ktau_user_write(dir);
	/* The link itself, listed but not a file of ours, is in the way. */
	CHECK(ret == -EEXIST && strstr(ktau_output_error(), "/lnk "), "a listed link: %d (%s)",
	      ret, ktau_output_error());
	CHECK(same_text(path, victim), "%s was removed through the link", path);
	outdir_clean(dir);
	outdir_clean(home);
	return 0;
}

/*
 * Another process's output of the same kind and node, closed while this
 * one ran (two programs, or ranks with one number, in one directory):
 * refused, kept. The same closed before this process started is an
 * earlier run's: replaced.
 */
static int t_outdir_concurrent(void)
{
	static const char prof[] = "1 templated_functions_MULTI_TIME\n# Name Calls Subrs Excl "
		"Incl ProfileCalls # <metadata><attribute><name>KTAU Test</name><value>1</value>"
		"</attribute></metadata>\n\"main\" 1 0 1 1 0 GROUP=\"TAU_DEFAULT\"\n";
	char dir[600], path[700], body[256], closed[128];
	struct timespec now;
	int ret;

	subdir(dir, sizeof(dir), "concurrent");
	CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
	snprintf(path, sizeof(path), "%s/profile.0.0.0", dir);
	CHECK(write_text(path, prof) == 0, "profile");
	/* Closed now by pid 1 (not this process nor its child): beyond a tick. */
	usleep(100000);
	CHECK(clock_gettime(CLOCK_BOOTTIME, &now) == 0, "clock");
	CHECK(closed_line(closed, sizeof(closed),
			  now.tv_sec * 1000000000ULL + now.tv_nsec) == 0, "boot id");
	snprintf(body, sizeof(body), "profile.0.0.0\n%s", closed);
	CHECK(write_manifest(dir, 1, body) == 0, "manifest");
	CHECK(timed_once("work") == 0, "timer");
	ret = ktau_user_write(dir);
	CHECK(ret == -EEXIST, "another process's output of this run: %d, not -EEXIST", ret);
	CHECK(strstr(ktau_output_error(), "while this process ran"), "message: '%s'",
	      ktau_output_error());
	CHECK(same_text(path, prof), "the other process's profile was replaced");
	/* Closed 1 ns into this boot, before this process started: an earlier run's. */
	CHECK(closed_line(closed, sizeof(closed), 1) == 0, "boot id");
	snprintf(body, sizeof(body), "profile.0.0.0\n%s", closed);
	CHECK(write_manifest(dir, 1, body) == 0, "manifest");
	ret = ktau_user_write(dir);
	CHECK(ret == 1, "an earlier run's output: %d (%s)", ret, ktau_output_error());
	CHECK(!same_text(path, prof), "the earlier run's profile is still there");
	/* This process's own output, written again: replaced. */
	ret = ktau_user_write(dir);
	CHECK(ret == 1, "this process's own output again: %d (%s)", ret, ktau_output_error());
	return 0;
}

/*
 * A writer killed before it finished: its empty file is removed (nobody's
 * data); a listed file changed since (or cut short) is kept, and the
 * message says so, at every later run, not "not from an earlier output".
 */
static int t_outdir_killed(void)
{
	char dir[600], path[700];
	int ret, i;
	FILE *f;

	subdir(dir, sizeof(dir), "killed");
	CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
	snprintf(path, sizeof(path), "%s/profile.0.0.0", dir);
	CHECK(write_text(path, "") == 0, "empty profile");
	CHECK(write_manifest(dir, 1, "profile.0.0.0\n") == 0, "manifest");
	CHECK(timed_once("work") == 0, "timer");
	ret = ktau_user_write(dir);
	CHECK(ret == 1, "an empty file of a killed writer: %d (%s)", ret, ktau_output_error());
	outdir_clean(dir);

	subdir(dir, sizeof(dir), "killed-partial");
	CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
	snprintf(path, sizeof(path), "%s/profile.0.0.0", dir);
	CHECK(write_text(path, "1 templ") == 0, "partial profile");
	CHECK(write_manifest(dir, 1, "profile.0.0.0\n") == 0, "manifest");
	for (i = 0; i < 2; i++) {
		ret = ktau_user_write(dir);
		CHECK(ret == -EEXIST, "run %d: a changed file of an earlier run: %d, not -EEXIST",
		      i + 1, ret);
		CHECK(strstr(ktau_output_error(), "earlier run of this writer"),
		      "run %d: message '%s'", i + 1, ktau_output_error());
		CHECK(same_text(path, "1 templ"), "run %d: the kept file changed", i + 1);
	}
	outdir_clean(dir);

	/* This writer's complete file, changed by the user: kept at every run. */
	subdir(dir, sizeof(dir), "killed-edited");
	CHECK(ktau_user_write(dir) == 1, "first write");
	snprintf(path, sizeof(path), "%s/profile.0.0.0", dir);
	f = fopen(path, "a");
	CHECK(f && fputs("# my note\n", f) >= 0 && !fclose(f), "append to %s", path);
	for (i = 0; i < 3; i++) {
		ret = ktau_user_write(dir);
		CHECK(ret == -EEXIST, "run %d: a file the user changed: %d, not -EEXIST", i + 2, ret);
		CHECK(strstr(ktau_output_error(), "earlier run of this writer"),
		      "run %d: message '%s'", i + 2, ktau_output_error());
		f = fopen(path, "r");
		CHECK(f, "run %d: the changed file was removed", i + 2);
		fclose(f);
	}
	outdir_clean(dir);
	return 0;
}

/* Many routines: a thread whose profile file is large. */
static void *many_routines(void *arg)
{
	char name[32];
	int i;

	(void)arg;
	for (i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "routine_number_%d", i);
		if (timed_once(name))
			return (void *)1;
	}
	return NULL;
}

/*
 * A write that fails part way (RLIMIT_FSIZE, in a child) removes every
 * file it made: no profile looks whole with a thread missing. With
 * SIGXFSZ ignored the write returns its own error, -EFBIG, not a generic
 * one; left to its default, the process still dies of it (as it would
 * have), but only after the failed write's files are gone.
 */
static int outdir_write_fails(const char *name, int ignore)
{
	struct rlimit rl = { 3500, 3500 }, core = { 0, 0 };
	char dir[600], path[700];
	void *tret = NULL;
	pthread_t th;
	int status, ret;
	pid_t pid;

	subdir(dir, sizeof(dir), name);
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		if (timed_once("main_work") || pthread_create(&th, NULL, many_routines, NULL) ||
		    pthread_join(th, &tret) || tret)
			_exit(2);
		signal(SIGXFSZ, ignore ? SIG_IGN : SIG_DFL);
		if (setrlimit(RLIMIT_CORE, &core) || setrlimit(RLIMIT_FSIZE, &rl))
			_exit(3);
		ret = ktau_user_write(dir);
		_exit(ret == -EFBIG ? 0 : ret < 0 && ret > -100 ? 10 + -ret : 4);
	}
	CHECK(waitpid(pid, &status, 0) == pid, "child");
	if (ignore)
		CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "child: status %#x (exit 2 "
		      "threads, 3 rlimit, 4 written, 10 + errno: not EFBIG)", status);
	else
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ, "child: status %#x, "
		      "not killed by SIGXFSZ (exit 2 threads, 3 rlimit, 0 or 10 + errno "
		      "lived)", status);
	snprintf(path, sizeof(path), "%s/profile.0.0.0", dir);
	CHECK(access(path, F_OK), "%s stayed after the write failed", path);
	snprintf(path, sizeof(path), "%s/profile.0.0.1", dir);
	CHECK(access(path, F_OK), "%s stayed after its write failed", path);
	snprintf(path, sizeof(path), "%s/.ktau-written.user.0", dir);
	unlink(path);
	rmdir(dir);
	return 0;
}

static int t_outdir_write_fails(void)
{
	return outdir_write_fails("write-fails", 1);
}

static int t_outdir_write_fails_signal(void)
{
	return outdir_write_fails("write-fails-signal", 0);
}

/* Whether the calling thread has signal @sig blocked: 1, 0, or -1. */
static int sig_blocked(int sig)
{
	sigset_t now;

	if (pthread_sigmask(SIG_BLOCK, NULL, &now))
		return -1;
	return sigismember(&now, sig);
}

/*
 * SIGXFSZ is held back from the first open to the last close of a
 * thread's directories, closed in any order, and not in a child forked
 * meanwhile (ktaud trace runs its command so): the command must not start
 * with it blocked. Only its bit changes: a signal the caller blocks while
 * a directory is open stays blocked; a SIGXFSZ the caller had blocked
 * stays blocked.
 */
static int t_outdir_xfsz_mask(void)
{
	struct ktau_outdir *a = NULL, *b = NULL;
	char dir[600], dir2[700], path[800];
	sigset_t usr1, xfsz;
	int status;
	pid_t pid;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	subdir(dir, sizeof(dir), "xfsz-mask");
	snprintf(dir2, sizeof(dir2), "%s/inner", dir);
	CHECK(sig_blocked(SIGXFSZ) == 0, "SIGXFSZ blocked before the test");
	CHECK(ktau_outdir_open(dir, "user", 0, 0, &a) == 0, "open: %s", ktau_output_error());
	CHECK(sig_blocked(SIGXFSZ) == 1, "SIGXFSZ not held while a directory is open");
	CHECK(ktau_outdir_open(dir2, "user", 0, 0, &b) == 0, "open: %s", ktau_output_error());
	CHECK(pthread_sigmask(SIG_BLOCK, &usr1, NULL) == 0, "block SIGUSR1");
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct ktau_outdir *c = NULL;

		if (sig_blocked(SIGXFSZ) != 0)
			_exit(1);
		if (sig_blocked(SIGUSR1) != 1)
			_exit(2);
		/* Its own directory's hold is not the inherited one's to end. */
		snprintf(path, sizeof(path), "%s/child", dir);
		if (ktau_outdir_open(path, "user", 0, 0, &c) || sig_blocked(SIGXFSZ) != 1)
			_exit(3);
		ktau_outdir_close(b);
		_exit(sig_blocked(SIGXFSZ) != 1 ? 4 : ktau_outdir_close(c) ? 3 : 0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status), "child");
	CHECK(WEXITSTATUS(status) != 1, "a child forked with a directory open has SIGXFSZ blocked");
	CHECK(WEXITSTATUS(status) != 2, "a child forked with a directory open lost SIGUSR1's block");
	CHECK(WEXITSTATUS(status) != 3, "the child could not write its own directory");
	CHECK(WEXITSTATUS(status) != 4, "an inherited directory's close ended the child's own hold");
	CHECK(!WEXITSTATUS(status), "child: exit %d", WEXITSTATUS(status));
	/* The outer one first. */
	CHECK(ktau_outdir_close(a) == 0, "close outer");
	CHECK(sig_blocked(SIGXFSZ) == 1, "SIGXFSZ not held after the outer close, the inner open");
	CHECK(ktau_outdir_close(b) == 0, "close inner");
	CHECK(sig_blocked(SIGXFSZ) == 0, "SIGXFSZ still blocked after the last close");
	CHECK(sig_blocked(SIGUSR1) == 1, "the close unblocked SIGUSR1, blocked after the open");
	CHECK(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL) == 0, "unblock SIGUSR1");
	/* Blocked by the caller before: still blocked after the close. */
	CHECK(pthread_sigmask(SIG_BLOCK, &xfsz, NULL) == 0, "block SIGXFSZ");
	CHECK(ktau_outdir_open(dir2, "user", 0, 0, &a) == 0, "open: %s", ktau_output_error());
	CHECK(ktau_outdir_close(a) == 0, "close");
	CHECK(sig_blocked(SIGXFSZ) == 1, "the close unblocked a SIGXFSZ the caller had blocked");
	CHECK(pthread_sigmask(SIG_UNBLOCK, &xfsz, NULL) == 0, "unblock SIGXFSZ");
	snprintf(path, sizeof(path), "%s/.ktau-written.user.0", dir2);
	unlink(path);
	rmdir(dir2);
	snprintf(path, sizeof(path), "%s/child/.ktau-written.user.0", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/child", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/.ktau-written.user.0", dir);
	unlink(path);
	rmdir(dir);
	return 0;
}

/* KTAU_PROFILE_FORCE=1: written among others' files, none of them replaced. */
static int t_outdir_force(void)
{
	static const char theirs[] = "1 templated_functions_MULTI_TIME\n# theirs\n";
	char dir[600], path[700], notes[700];
	int ret;

	setenv("KTAU_PROFILE_FORCE", "1", 1);
	subdir(dir, sizeof(dir), "force");
	CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
	snprintf(notes, sizeof(notes), "%s/notes.txt", dir);
	CHECK(write_text(notes, "my notes\n") == 0, "notes");
	CHECK(timed_once("work") == 0, "timer");
	CHECK(ktau_user_write(dir) == 1, "forced write");
	CHECK(ktau_user_write(dir) == 1, "forced write again");
	CHECK(same_text(notes, "my notes\n"), "the notes changed");
	snprintf(path, sizeof(path), "%s/profile.0.0.0", dir);
	CHECK(!access(path, F_OK), "no profile");
	/* A file of ours by name, not by origin: never replaced. */
	subdir(dir, sizeof(dir), "force-clash");
	CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
	snprintf(path, sizeof(path), "%s/profile.0.0.0", dir);
	CHECK(write_text(path, theirs) == 0, "theirs");
	ret = ktau_user_write(dir);
	CHECK(ret == -EEXIST, "a file of the same name: %d, not -EEXIST", ret);
	CHECK(same_text(path, theirs), "their profile.0.0.0 was replaced");
	/* Not a TAU directory: left for the checker. */
	CHECK(unlink(path) == 0 && unlink(notes) == 0, "clean up");
	return 0;
}

/*
 * MPI ranks (the launchers' variables) writing into one directory at
 * once: each its own node, nothing lost; and %r, %p, %h in the path.
 */
static int rank_runtime(int i, void *arg)
{
	static const char *const vars[] = {
		"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID",
	};
	char r[16];

	snprintf(r, sizeof(r), "%d", i);
	setenv(vars[i % 4], r, 1);
	return ktau_user_output(arg) || timed_once("rank_work") ? 3 : 0;	/* written at exit */
}

static int t_ranks_shared_dir(void)
{
	enum { NRANKS = 8 };
	char dir[600], path[800], want[64], line[8192], host[256];
	int i, status, ok;
	pid_t pid;
	FILE *f;

	subdir(dir, sizeof(dir), "ranks");
	CHECK(run_together(NRANKS, rank_runtime, dir) == 0, "a rank failed");
	for (i = 0; i < NRANKS; i++) {
		snprintf(path, sizeof(path), "%s/profile.%d.0.0", dir, i);
		f = fopen(path, "r");
		CHECK(f, "rank %d wrote no %s", i, path);
		snprintf(want, sizeof(want), "<name>Node</name><value>%d</value>", i);
		ok = fgets(line, sizeof(line), f) && fgets(line, sizeof(line), f) && strstr(line, want);
		fclose(f);
		CHECK(ok, "%s: no Node %d metadata", path, i);
	}
	/* Templates: rank 0 of pid P on host H. */
	CHECK(gethostname(host, sizeof(host)) == 0, "hostname");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		snprintf(path, sizeof(path), "%s/tmpl-%%r-%%h-%%p", outdir);
		setenv("KTAU_PROFILE_DIR", path, 1);
		setenv("PMI_RANK", "0", 1);
		exit(timed_once("templated") ? 3 : 0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "template child");
	snprintf(path, sizeof(path), "%s/tmpl-0-%s-%d/profile.0.0.0", outdir, host, (int)pid);
	CHECK(!access(path, F_OK), "no %s", path);
	return 0;
}


/*
 * A child with the user trace on in @dir (made here), from a simulated
 * clock at 1000: the pid in the parent, 0 in the child, -1 on error.
 */
static pid_t fork_user_traced(const char *dir)
{
	pid_t pid;

	if (mkdir(dir, 0755))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		setenv("KTAU_TRACE_USER", dir, 1);
		simulate(1000, 0);
	}
	return pid;
}

/* The user trace file the child @pid wrote into @dir, into @buf: bytes, or -1. */
static ssize_t read_user_trace(const char *dir, pid_t pid, char *buf, size_t size)
{
	char path[800];
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/user.%d.ktuser", dir, (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	len = fread(buf, 1, size, f);
	fclose(f);
	return (ssize_t)len;
}
/*
 * KTAU_TRACE_USER (ktaud trace): every completed routine with its start
 * and end, written at exit (a routine still open then ends at the exit)
 * and read back by libktau's trace reader, nested in time order.
 */
struct ev {
	int enter;
	uint64_t ts;
	char name[32];
};

static int collect(void *arg, int enter, uint64_t ts, const struct ktau_trace_record *r)
{
	struct { struct ev v[16]; int n; const struct ktau_trace *t; } *c = arg;

	if (c->n < 16) {
		c->v[c->n].enter = enter;
		c->v[c->n].ts = ts;
		snprintf(c->v[c->n].name, sizeof(c->v[c->n].name), "%s",
			 ktau_trace_name(c->t, r->id));
		c->n++;
	}
	return 0;
}

static int t_trace_user(void)
{
	static const struct { int enter; uint64_t ts; const char *name; } want[] = {
		{ 1, 1000, "main" }, { 1, 1100, "compute" }, { 0, 1600, "compute" },
		{ 1, 1700, "io" }, { 0, 1800, "io" }, { 0, 2500, "main" },
	};
	struct { struct ev v[16]; int n; const struct ktau_trace *t; } c = { .n = 0 };
	char dir[600], buf[4096];
	struct ktau_trace *t;
	int status, i;
	ssize_t len;
	pid_t pid;

	subdir(dir, sizeof(dir), "trace-user");
	pid = fork_user_traced(dir);
	CHECK(pid >= 0, "fork in %s", dir);
	if (pid == 0) {
		if (at_start(1000, "main") || at_start(1100, "compute") || at_stop(1600, "compute") ||
		    at_start(1700, "io") || at_stop(1800, "io"))
			_exit(1);
		now_ns = 2500;		/* main is still open at the exit */
		exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "child");
	len = read_user_trace(dir, pid, buf, sizeof(buf));
	CHECK(len >= 0, "no user trace of %d in %s", (int)pid, dir);
	t = ktau_trace_new();
	CHECK(t && ktau_trace_add_user(t, buf, (size_t)len) == 0, "read back: %s", ktau_trace_error());
	CHECK(t->nthreads == 1 && t->threads[0].nrecs == 3 && t->threads[0].tid == pid,
	      "%zu threads, %zu records", t->nthreads, t->nthreads ? t->threads[0].nrecs : 0);
	c.t = t;
	CHECK(ktau_trace_walk(&t->threads[0], collect, &c, NULL) == 0 && c.n == 6, "%d events", c.n);
	for (i = 0; i < 6; i++)
		CHECK(c.v[i].enter == want[i].enter && c.v[i].ts == want[i].ts &&
		      !strcmp(c.v[i].name, want[i].name), "event %d: %d %llu %s", i, c.v[i].enter,
		      (unsigned long long)c.v[i].ts, c.v[i].name);
	/* A corrupt file is an error, not a crash. */
	buf[8] = 9;
	CHECK(ktau_trace_add_user(t, buf, (size_t)len) == -EBADMSG, "bad version accepted");
	CHECK(ktau_trace_add_user(t, buf, 20) == -EBADMSG, "cut file accepted");
	ktau_trace_free(t);
	return 0;
}

/*
 * A profile written while the thread's routines run, with the user trace
 * on: the copy closed for the file must leave the thread's trace alone
 * (it freed the live trace block, and its closing added records to it).
 */
static int t_trace_user_write_live(void)
{
	char dir[600], out[600], buf[4096];
	struct ktau_trace *t;
	ssize_t len;
	int status;
	pid_t pid;

	subdir(dir, sizeof(dir), "trace-live");
	subdir(out, sizeof(out), "trace-live-profile");
	pid = fork_user_traced(dir);
	CHECK(pid >= 0, "fork in %s", dir);
	if (pid == 0) {
		if (at_start(1000, "main") || at_start(1100, "inner"))
			_exit(1);
		now_ns = 1150;
		if (ktau_user_write(out) != 1)
			_exit(2);
		if (at_stop(1200, "inner") || at_start(1300, "io") || at_stop(1400, "io"))
			_exit(3);
		now_ns = 2000;
		exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "child: status %#x", status);
	len = read_user_trace(dir, pid, buf, sizeof(buf));
	CHECK(len >= 0, "no user trace of %d in %s", (int)pid, dir);
	t = ktau_trace_new();
	CHECK(t && ktau_trace_add_user(t, buf, (size_t)len) == 0, "read back: %s", ktau_trace_error());
	/* inner, io, main: none from the copy's closing. */
	CHECK(t->nthreads == 1 && t->threads[0].nrecs == 3, "%zu threads, %zu records",
	      t->nthreads, t->nthreads ? t->threads[0].nrecs : 0);
	ktau_trace_free(t);
	return 0;
}

static const struct host_test tests[] = {
	{ "user_timers_basic", t_timers_basic },
	{ "user_exclusive_recursion", t_exclusive_recursion },
	{ "user_kernel_charging", t_kernel_charging },
	{ "user_other_group", t_other_group },
	{ "user_kernel_clock_units", t_kernel_clock_units },
	{ "user_seq_odd_retry", t_seq_odd_retry },
	{ "user_outside_timers", t_outside_timers },
	{ "user_clock_adjust", t_clock_adjust },
	{ "user_unmatched_stop", t_unmatched_stop },
	{ "user_depth_limit", t_depth_limit },
	{ "user_throttle", t_throttle },
	{ "user_throttle_off", t_throttle_off },
	{ "user_select_parse", t_select_parse },
	{ "user_select_exclude", t_select_exclude },
	{ "user_names", t_names },
	{ "user_demangle", t_demangle },
	{ "user_signal_nested", t_signal_nested },
	{ "user_signal_first_event", t_signal_first_event },
	{ "user_signal_in_lock", t_signal_in_lock },
	{ "user_signal_in_fork", t_signal_in_fork },
	{ "user_signal_in_first_event", t_signal_in_first_event },
	{ "user_threads", t_threads },
	{ "user_live_thread", t_live_thread },
	{ "user_fork", t_fork },
	{ "user_no_ktau", t_no_ktau },
	{ "user_write_merged", t_write_merged },
	{ "user_nothing_measured", t_nothing_measured },
	{ "user_outdir_foreign", t_outdir_foreign },
	{ "user_outdir_planted", t_outdir_planted },
	{ "user_outdir_concurrent", t_outdir_concurrent },
	{ "user_outdir_killed", t_outdir_killed },
	{ "user_outdir_write_fails", t_outdir_write_fails },
	{ "user_outdir_write_fails_signal", t_outdir_write_fails_signal },
	{ "user_outdir_xfsz_mask", t_outdir_xfsz_mask },
	{ "user_outdir_force", t_outdir_force },
	{ "user_ranks_shared_dir", t_ranks_shared_dir },
	{ "user_trace", t_trace_user },
	{ "user_trace_write_live", t_trace_user_write_live },
};

int main(int argc, char **argv)
{
	const struct host_test *t;
	int ret;

	ret = test_args(argc, argv, tests, NTESTS(tests), "OUTDIR");
	if (ret >= 0)
		return ret;
	snprintf(outdir, sizeof(outdir), "%s", argv[2]);
	mkdir(outdir, 0755);
	/* Nothing at exit unless a test asks for it (ktau_user_output). */
	setenv("KTAU_PROFILE_DIR", "", 1);
	unsetenv("KTAU_VERBOSE");
	unsetenv("KTAU_CALLPATH_DEPTH");
	unsetenv("KTAU_SHARED");
	t = test_find(tests, NTESTS(tests), argv[1]);
	if (!t)
		return 2;
	ret = t->fn();
	ktau__rows_free(rows, nrows);
	return ret;
}
