// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of what 'ktaud probe' and 'ktaud drill' decide without a
 * kernel: the parser of /proc/ktau/probes, the start of a drill for each
 * kind of KTAU routine, the descent decision on fabricated measurements,
 * and the call graph decoder on a program built with known calls
 * (callgraph/cg-a.c, cg-b.c; ARG is the directory with cg-sample, its
 * stripped copy and its debug-only copy).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ktau-drill.h"
#include "host-test.h"

static const char *dir;

static int t_probes_parse(void)
{
	static const char good[] =
		"# id function owner missed\n"
		"130 __x64_sys_getppid 245 0\n"
		"131 ext4:ext4_file_write_iter 1 18446744073709551615\n";
	static const char *const bad[] = {
		"130 __x64_sys_getppid 245\n",		/* a field missing */
		"130 __x64_sys_getppid 245 0 extra\n",	/* one too many */
		"x __x64_sys_getppid 245 0\n",		/* not an id */
		"130 __x64_sys_getppid -3 0\n",		/* a negative pid */
		"-1 f 1 0\n",
	};
	struct ktau_probe_info *v;
	char longname[200];
	size_t n, i;

	CHECK(!ktau_probes_parse(good, strlen(good), &v, &n), "good text refused");
	CHECK(n == 2, "%zu probes, not 2", n);
	CHECK(v[0].id == 130 && !strcmp(v[0].function, "__x64_sys_getppid") && v[0].owner == 245 &&
	      v[0].missed == 0, "first probe: %u %s %d", v[0].id, v[0].function, (int)v[0].owner);
	CHECK(v[1].id == 131 && !strcmp(v[1].function, "ext4:ext4_file_write_iter") &&
	      v[1].missed == UINT64_MAX, "second probe: %u %s", v[1].id, v[1].function);
	free(v);
	/* The header alone, and nothing at all: no probes. */
	CHECK(!ktau_probes_parse(good, 27, &v, &n) && n == 0 && !v, "the header alone");
	CHECK(!ktau_probes_parse("", 0, &v, &n) && n == 0, "empty text");
	for (i = 0; i < NTESTS(bad); i++)
		CHECK(ktau_probes_parse(bad[i], strlen(bad[i]), &v, &n) == -EBADMSG,
		      "bad line %zu accepted: %s", i, bad[i]);
	/* A name longer than the ABI allows. */
	memset(longname, 'f', sizeof(longname));
	memcpy(longname, "1 ", 2);
	strcpy(longname + 100, " 1 0\n");
	CHECK(ktau_probes_parse(longname, strlen(longname), &v, &n) == -EBADMSG,
	      "a 98-byte name accepted");
	/* Every error has a sentence that says what to do. */
	CHECK(strstr(ktau_probe_strerror(-EPERM, 1), "CAP_PERFMON"), "EPERM");
	CHECK(strstr(ktau_probe_strerror(-ENOENT, 1), "no such kernel function"), "ENOENT add");
	CHECK(strstr(ktau_probe_strerror(-ENOENT, 0), "not probed"), "ENOENT remove");
	CHECK(strstr(ktau_probe_strerror(-EINVAL, 1), "cannot be probed"), "EINVAL");
	CHECK(strstr(ktau_probe_strerror(-ENOSPC, 1), "at most 64"), "ENOSPC");
	CHECK(strstr(ktau_probe_strerror(-EOPNOTSUPP, 1), "fprobe"), "EOPNOTSUPP");
	return 0;
}

/* The kernel functions of a fabricated kallsyms. */
static int fake_has(const char *name, void *arg)
{
	static const char *const have[] = {
		"__x64_sys_read", "__do_sys_getppid", "handle_mm_fault", "net_rx_action",
		"run_rebalance_domains", "arch_do_signal_or_restart", "ext4_file_write_iter",
	};
	size_t i;

	(void)arg;
	for (i = 0; i < NTESTS(have); i++)
		if (!strcmp(name, have[i]))
			return 1;
	return 0;
}

static int t_drill_start(void)
{
	static const struct {
		const char *routine;
		int group, ret;
		const char *fn;		/* or a word of the reason */
	} cases[] = {
		{ "read", 0, 0, "__x64_sys_read" },
		{ "getppid", 0, 0, "__do_sys_getppid" },	/* no __x64_sys_ here */
		{ "write", 0, -ENOENT, "kallsyms" },
		{ "syscall_invalid", 0, -ENOENT, "system call" },
		{ "page_fault_user", 4, 0, "handle_mm_fault" },
		{ "page_fault_kernel", 4, 0, "handle_mm_fault" },
		{ "softirq_NET_RX", 2, 0, "net_rx_action" },
		{ "softirq_SCHED", 2, 0, "run_rebalance_domains" },	/* the older name */
		{ "softirq_TIMER", 2, -ENOENT, "kallsyms" },
		{ "softirq_BOGUS", 2, -ENOENT, "softirq" },
		{ "sched_blocked", 3, -EINVAL, "off-CPU" },
		{ "sched_preempted", 3, -EINVAL, "off-CPU" },
		{ "irq_4_ttyS0", 1, -ENOENT, "hard interrupt" },
		{ "signal_delivery", 5, 0, "arch_do_signal_or_restart" },
		{ "ext4_file_write_iter", 6, 0, "ext4_file_write_iter" },
		{ "user_mode", 6, -EINVAL, "samples" },
		{ "mystery", 9, -ENOENT, "group" },
	};
	char fn[KTAU_LIB_PROBE_NAME_LEN];
	const char *why;
	size_t i;
	int ret;

	for (i = 0; i < NTESTS(cases); i++) {
		fn[0] = '\0';
		ret = ktau_drill_start(cases[i].routine, cases[i].group, fake_has, NULL, fn,
				       sizeof(fn), &why);
		CHECK(ret == cases[i].ret, "%s: %d, not %d (%s)", cases[i].routine, ret,
		      cases[i].ret, why ? why : fn);
		if (!ret)
			CHECK(!strcmp(fn, cases[i].fn), "%s starts at %s, not %s", cases[i].routine,
			      fn, cases[i].fn);
		else
			CHECK(why && strstr(why, cases[i].fn), "%s: reason '%s' without '%s'",
			      cases[i].routine, why ? why : "(none)", cases[i].fn);
	}
	/* Without kallsyms (has NULL) every candidate is taken. */
	CHECK(!ktau_drill_start("getppid", 0, NULL, NULL, fn, sizeof(fn), &why) &&
	      !strcmp(fn, "__x64_sys_getppid"), "no has(): %s", fn);
	/* A buffer too small is no start. */
	CHECK(ktau_drill_start("read", 0, NULL, NULL, fn, 8, &why) == -ENOENT, "small buffer");
	return 0;
}

static int t_drill_decide(void)
{
	/* handle_mm_fault (1000 us) and its callees, in ns. */
	struct ktau_drill_callee c[] = {
		{ "__perf_sw_event", 20000, 500 },
		{ "__handle_mm_fault", 900000, 500 },
		{ "lock_vma_under_rcu", 30000, 500 },
	};
	size_t best = 99;

	/* Concentrated: descend into the callee with the most time. */
	CHECK(ktau_drill_decide(1000000, c, 3, 0.5, 1, 8, &best) == KTAU_DRILL_DESCEND &&
	      best == 1, "descend: best %zu", best);
	/* Exactly the threshold is enough; a bit less is spread. */
	CHECK(ktau_drill_decide(1800000, c, 3, 0.5, 1, 8, &best) == KTAU_DRILL_DESCEND,
	      "at the threshold");
	CHECK(ktau_drill_decide(1800002, c, 3, 0.5, 1, 8, &best) == KTAU_DRILL_SPREAD &&
	      best == 1, "below the threshold: best %zu", best);
	/* Another threshold. */
	CHECK(ktau_drill_decide(1000000, c, 3, 0.95, 1, 8, &best) == KTAU_DRILL_SPREAD,
	      "95%%");
	CHECK(ktau_drill_decide(3000000, c, 3, 0.3, 1, 8, &best) == KTAU_DRILL_DESCEND,
	      "30%%");
	/* Spread over several callees: none has half. */
	c[1].incl_ns = 300000;
	c[0].incl_ns = 290000;
	c[2].incl_ns = 280000;
	CHECK(ktau_drill_decide(1000000, c, 3, 0.5, 2, 8, &best) == KTAU_DRILL_SPREAD &&
	      best == 1, "spread: best %zu", best);
	/* The depth limit comes first, measured or not. */
	CHECK(ktau_drill_decide(1000000, c, 3, 0.5, 8, 8, &best) == KTAU_DRILL_DEPTH, "depth 8");
	CHECK(ktau_drill_decide(0, NULL, 0, 0.5, 3, 3, &best) == KTAU_DRILL_DEPTH, "depth 3");
	CHECK(ktau_drill_decide(0, NULL, 0, 0.5, 2, 3, &best) == KTAU_DRILL_NONE, "nothing");
	/* Nothing measured in the parent or callees. */
	c[0].incl_ns = c[1].incl_ns = c[2].incl_ns = 0;
	CHECK(ktau_drill_decide(1000000, c, 3, 0.5, 1, 8, &best) == KTAU_DRILL_NO_TIME, "no time");
	c[1].incl_ns = 10;
	CHECK(ktau_drill_decide(0, c, 3, 0.5, 1, 8, &best) == KTAU_DRILL_NO_TIME, "no parent");
	/* Ties: more calls wins, then the first. */
	c[0].incl_ns = c[2].incl_ns = 700;
	c[1].incl_ns = 0;
	c[2].calls = 900;
	CHECK(ktau_drill_decide(1000, c, 3, 0.5, 1, 8, &best) == KTAU_DRILL_DESCEND && best == 2,
	      "tie by calls: %zu", best);
	c[2].calls = 500;
	CHECK(ktau_drill_decide(1000, c, 3, 0.5, 1, 8, &best) == KTAU_DRILL_DESCEND && best == 0,
	      "tie: %zu", best);
	/* A callee with more time than the parent (also called elsewhere) descends. */
	c[0].incl_ns = 5000;
	CHECK(ktau_drill_decide(1000, c, 3, 0.5, 1, 8, &best) == KTAU_DRILL_DESCEND && best == 0,
	      "more than the parent");
	CHECK(strstr(ktau_drill_verdict_text(KTAU_DRILL_SPREAD), "concentrate"), "text");
	return 0;
}

/* The callees of fn, joined with spaces ("-" when fn is unknown). */
static const char *callees(const struct ktau_callgraph *g, const char *fn)
{
	static char buf[1024];
	const char *const *v;
	size_t n, i;

	v = ktau_callgraph_callees(g, fn, &n);
	if (!v)
		return "-";
	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		if (i)
			strcat(buf, " ");
		strncat(buf, v[i], sizeof(buf) - strlen(buf) - 2);
	}
	return buf;
}

/* What cg-a.c and cg-b.c say each function calls. */
static int check_sample_graph(const struct ktau_callgraph *g, const char *what)
{
	static const char *const want[][2] = {
		{ "_start", "b_entry coldy indirect rec top" },
		{ "top", "mid tail_target" },		/* a call and a tail jump */
		{ "mid", "helper" },
		{ "helper", "leaf_a leaf_b" },		/* both static helpers */
		{ "b_entry", "helper" },
		{ "indirect", "leaf_a" },		/* not leaf_c: a pointer */
		{ "coldy", "cold_fn leaf_a" },		/* with its cold part's call */
		{ "rec", "leaf_c" },			/* not itself */
		{ "leaf_a", "" },
		{ "tail_target", "" },
		{ "__fentry__", "-" },			/* not a function one times */
		{ "coldy.cold", "-" },			/* part of coldy */
		{ "nonexistent", "-" },
	};
	struct ktau_callgraph_stats st;
	size_t i;

	for (i = 0; i < NTESTS(want); i++)
		CHECK(!strcmp(callees(g, want[i][0]), want[i][1]), "%s: %s calls '%s', not '%s'",
		      what, want[i][0], callees(g, want[i][0]), want[i][1]);
	ktau_callgraph_stats(g, &st);
	CHECK(st.functions == 13 && st.callers == 8 && st.calls == 15,
	      "%s: %zu functions, %zu callers, %zu calls", what, st.functions, st.callers, st.calls);
	return 0;
}

static int t_callgraph_elf(void)
{
	struct ktau_callgraph *g, *g2;
	struct ktau_callgraph_stats st;
	char path[4096], *text = NULL;
	size_t len = 0;
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/cg-sample", dir);
	ret = ktau_callgraph_from_elf(path, &g);
	CHECK(!ret, "%s: %s", path, ktau_callgraph_strerror(ret));
	if (check_sample_graph(g, "ELF"))
		return 1;
	ktau_callgraph_stats(g, &st);
	CHECK(st.dup_names == 1, "%zu names of several functions, not 1 (helper)", st.dup_names);
	/* The text form reads back the same. */
	f = open_memstream(&text, &len);
	CHECK(f && !ktau_callgraph_write(f, g, "cg-sample") && !fclose(f), "write");
	printf("%s", text);
	CHECK(!strncmp(text, "# ktau-callgraph 1\n", 19), "no magic line");
	CHECK(strstr(text, "\ntop mid tail_target\n"), "no line of top");
	ret = ktau_callgraph_parse(text, len, &g2);
	CHECK(!ret, "parse: %d", ret);
	if (check_sample_graph(g2, "text"))
		return 1;
	ktau_callgraph_free(g2);
	free(text);
	ktau_callgraph_free(g);
	return 0;
}

static int t_callgraph_errors(void)
{
	static const char *const bad[] = {
		"",
		"top mid\n",				/* no magic line */
		"# ktau-callgraph 2\ntop mid\n",	/* another version */
		"# ktau-callgraph 1\ntop  mid\n",	/* an empty name */
		"# ktau-callgraph 1\ntop mid\x01\n",	/* a control character */
	};
	struct ktau_callgraph *g;
	char path[4096];
	size_t i, n;
	int ret, fd;

	for (i = 0; i < NTESTS(bad); i++) {
		ret = ktau_callgraph_parse(bad[i], strlen(bad[i]), &g);
		CHECK(ret == -EBADMSG && !g, "bad text %zu: %d", i, ret);
	}
	/* A graph of comments only is an empty graph; a name may only call. */
	ret = ktau_callgraph_parse("# ktau-callgraph 1\n# nothing\n", 29, &g);
	CHECK(!ret && !ktau_callgraph_callees(g, "x", &n), "comments only");
	ktau_callgraph_free(g);
	ret = ktau_callgraph_parse("# ktau-callgraph 1\na b\nb\n", 25, &g);
	CHECK(!ret && !strcmp(callees(g, "a"), "b") && !strcmp(callees(g, "b"), ""), "a b");
	ktau_callgraph_free(g);
	/* Files that are no vmlinux, each with its own reason. */
	snprintf(path, sizeof(path), "%s/cg-sample.stripped", dir);
	ret = ktau_callgraph_from_elf(path, &g);
	CHECK(ret == -ENODATA && strstr(ktau_callgraph_strerror(ret), "stripped"),
	      "stripped: %d", ret);
	snprintf(path, sizeof(path), "%s/cg-sample.debug", dir);
	ret = ktau_callgraph_from_elf(path, &g);
	CHECK(ret == -ENOMSG && strstr(ktau_callgraph_strerror(ret), "debug"),
	      "debug-only: %d", ret);
	snprintf(path, sizeof(path), "%s/not-elf.XXXXXX", dir);
	fd = mkstemp(path);
	CHECK(fd >= 0 && write(fd, bad[2], strlen(bad[2])) > 0 && !close(fd), "mkstemp");
	ret = ktau_callgraph_from_elf(path, &g);
	unlink(path);
	CHECK(ret == -ENOEXEC && strstr(ktau_callgraph_strerror(ret), "vmlinuz"),
	      "not ELF: %d", ret);
	ret = ktau_callgraph_from_elf("/nonexistent/vmlinux", &g);
	CHECK(ret == -ENOENT, "missing: %d", ret);
	ret = ktau_callgraph_load("/nonexistent/vmlinux.calls", &g);
	CHECK(ret == -ENOENT, "missing text: %d", ret);
	return 0;
}

static const struct host_test tests[] = {
	{ "probes_parse", t_probes_parse },
	{ "drill_start", t_drill_start },
	{ "drill_decide", t_drill_decide },
	{ "callgraph_elf", t_callgraph_elf },
	{ "callgraph_errors", t_callgraph_errors },
};

int main(int argc, char **argv)
{
	const struct host_test *t;
	int ret = test_args(argc, argv, tests, NTESTS(tests), "DIR");

	if (ret >= 0)
		return ret;
	t = test_find(tests, NTESTS(tests), argv[1]);
	if (!t)
		return 2;
	dir = argv[2];
	return t->fn();
}
