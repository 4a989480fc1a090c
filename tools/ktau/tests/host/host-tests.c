// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of libktau, with fixtures captured from a real guest run
 * (tests/capture-fixtures.sh). One test per invocation:
 *
 *	host-tests --list            the names of the tests
 *	host-tests NAME FIXTURES     run one: exit 0 pass, 1 fail, 77 skip
 *
 * tests/host/run-tests.sh turns them into KTAP.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/ktau.h>
#include <json-c/json.h>

#include "libktau.h"
#include "internal.h"
#include "host-test.h"

static const char *fx;		/* the fixture directory */
static char tmpdir[256];

static char *slurp(const char *name, size_t *len)
{
	char path[512], *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s", fx, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n + 1);
	if (buf && fread(buf, 1, n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

/* key=value of a .expect file. */
static long expect(const char *file, const char *key)
{
	size_t len;
	char *text = slurp(file, &len), *p, want[64];
	long v = -1;

	if (!text)
		return -1;
	snprintf(want, sizeof(want), "%s=", key);
	for (p = text; (p = strstr(p, want)); p++)
		if (p == text || p[-1] == '\n' || p[-1] == ' ') {
			v = atol(p + strlen(want));
			break;
		}
	free(text);
	return v;
}

static struct ktau_registry *fixture_registry(void)
{
	struct ktau_registry *reg = NULL;
	size_t len;
	char *text = slurp("functions.txt", &len);

	if (text && ktau_registry_parse(text, len, &reg))
		reg = NULL;
	free(text);
	return reg;
}

static struct ktau_snap *fixture_snap(const char *name)
{
	struct ktau_snap *s = NULL;
	size_t len;
	char *buf = slurp(name, &len);

	if (buf && ktau_decode(buf, len, &s) < 0)
		s = NULL;
	free(buf);
	return s;
}

#define ID_GETPPID (KTAU_ID_SYSCALL_BASE + 110)

static uint64_t count_of(const struct ktau_task *t, uint32_t id)
{
	const struct ktau_func_stat *e = ktau_task_find(t, id);

	return e ? e->count : 0;
}

/* ---- tests ---- */

static int t_registry_fixture(void)
{
	struct ktau_registry *reg = fixture_registry(), *again = NULL;
	char *text;
	size_t len;

	CHECK(reg, "functions.txt does not parse");
	CHECK(ktau_registry_size(reg) > 300, "only %zu IDs", ktau_registry_size(reg));
	CHECK(ktau_func_id(reg, "getppid") == ID_GETPPID, "getppid has ID %u",
	      ktau_func_id(reg, "getppid"));
	CHECK(!strcmp(ktau_func_name(reg, ID_GETPPID), "getppid"), "name of 142");
	CHECK(ktau_func_group(reg, ID_GETPPID) == KTAU_GROUP_SYSCALL, "group of getppid");
	CHECK(ktau_func_group(reg, KTAU_ID_SCHED_VOL) == KTAU_GROUP_SCHED, "group of 3");
	CHECK(!strcmp(ktau_func_name(reg, 17), "softirq_TIMER"), "softirq 1");
	CHECK(ktau_registry_format(reg, NULL, &text, &len) == 0, "format");
	CHECK(ktau_registry_parse(text, len, &again) == 0, "format does not parse again");
	CHECK(ktau_registry_size(again) == ktau_registry_size(reg), "sizes differ");
	free(text);
	ktau_registry_free(again);
	ktau_registry_free(reg);
	return 0;
}

static int cmp_entry_id(const void *a, const void *b)
{
	const struct ktau_func_stat *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * c_export_other_boot: @in as if taken in another boot of the same kernel:
 * another boot id, and the registry's IDs in reverse order (the entries
 * renumbered the same way), so that every ID names another routine than
 * in @in while the profile means the same. Written to @out.
 */
static int other_boot_copy(const char *in, const char *out)
{
	struct ktau_registry *reg = NULL, *perm = NULL;
	struct ktau_snap *snap = NULL;
	uint32_t *ids = NULL;
	size_t n = 0, len, i, j, t;
	char *text = NULL, *line, *save, *nt = NULL;
	FILE *f;
	int ret = 1;

	if (ktau_snap_load(in, &snap, &reg) || !reg ||
	    ktau_registry_format(reg, NULL, &text, &len))
		goto out;
	ids = calloc(len, sizeof(*ids));
	f = open_memstream(&nt, &len);
	if (!ids || !f)
		goto out;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (line[0] != '#')
			ids[n++] = strtoul(line, NULL, 10);
	/* ids[] is sorted (format()'s order): ids[i] becomes ids[n - 1 - i]. */
	for (i = 0; i < n; i++)
		fprintf(f, "%u %s %s\n", ids[n - 1 - i],
			ktau_group_name(ktau_func_group(reg, ids[i])) ?: "unknown",
			ktau_func_name(reg, ids[i]));
	if (fclose(f) || ktau_registry_parse(nt, len, &perm))
		goto out;
	for (t = 0; t < snap->ntasks; t++) {
		struct ktau_task *tk = &snap->tasks[t];

		for (i = 0; i < tk->nentries; i++) {
			for (j = 0; j < n && ids[j] != tk->entries[i].id; j++)
				;
			if (j < n)
				tk->entries[i].id = ids[n - 1 - j];
		}
		qsort(tk->entries, tk->nentries, sizeof(*tk->entries), cmp_entry_id);
	}
	snprintf(snap->boot_id, sizeof(snap->boot_id), "00000000-0000-4000-8000-0000000000b2");
	ret = ktau_snap_save(out, snap, perm) ? 1 : 0;
	printf("%zu IDs renumbered\n", n);
out:
	free(ids);
	free(text);
	free(nt);
	ktau_registry_free(reg);
	ktau_registry_free(perm);
	ktau_snap_free(snap);
	return ret;
}

/* A snapshot of one task with one call of each of ids[]. */
static struct ktau_snap *one_task(const uint32_t *ids, size_t n)
{
	struct ktau_snap *s = calloc(1, sizeof(*s));
	size_t i;

	if (!s || !(s->tasks = calloc(1, sizeof(*s->tasks))) ||
	    !(s->tasks[0].entries = calloc(n, sizeof(*s->tasks[0].entries))))
		return NULL;
	s->ntasks = 1;
	s->tasks[0].tid = s->tasks[0].pid = 1;
	s->tasks[0].nentries = n;
	for (i = 0; i < n; i++) {
		s->tasks[0].entries[i].id = ids[i];
		s->tasks[0].entries[i].count = 1;
	}
	return s;
}

/*
 * Renumbering a file of another boot (ktaud export): a name the first
 * boot lacks gets an ID no kernel gives, so that a later file of the first
 * boot cannot collide with it; a fixed ID keeps its generated name
 * (softirq_TIMER stays 17).
 */
static int t_registry_renumber(void)
{
	static const char a1[] = "100 irq eth0\n";
	static const char b[] = "100 irq nvme\n300 irq eth0\n";
	static const char a2[] = "301 irq virtio0\n";
	static const uint32_t bids[] = { 17, 100, 300 }, a2ids[] = { 301 };
	struct ktau_registry *dst = NULL, *rb = NULL, *ra2 = NULL;
	struct ktau_snap *sb = one_task(bids, 3), *sa2 = one_task(a2ids, 1);
	uint32_t nvme;

	CHECK(sb && sa2, "alloc");
	CHECK(!ktau_registry_parse(a1, strlen(a1), &dst) && !ktau_registry_parse(b, strlen(b), &rb) &&
	      !ktau_registry_parse(a2, strlen(a2), &ra2), "parse");
	CHECK(!ktau__registry_renumber(&dst, rb, sb), "renumber");
	CHECK(!ktau_registry_merge(&dst, ra2), "merge");
	nvme = ktau_func_id(dst, "nvme");
	CHECK(nvme >= 0x40000000u, "nvme got ID %u, one a kernel may give", nvme);
	CHECK(ktau_task_find(&sb->tasks[0], 17), "softirq_TIMER renumbered");
	CHECK(ktau_task_find(&sb->tasks[0], 100) && !strcmp(ktau_func_name(dst, 100), "eth0"),
	      "eth0 not matched by name");
	CHECK(!strcmp(ktau_func_name(dst, 301), "virtio0"), "301 is '%s', not virtio0",
	      ktau_func_name(dst, 301));
	CHECK(!strcmp(ktau_func_name(dst, nvme), "nvme"), "nvme's ID names '%s'",
	      ktau_func_name(dst, nvme));
	ktau_snap_free(sb);
	ktau_snap_free(sa2);
	ktau_registry_free(dst);
	ktau_registry_free(rb);
	ktau_registry_free(ra2);
	return 0;
}

static int t_registry_rejects_bad(void)
{
	static const char *const bad[] = {
		"x 1 syscall read\n", "32 syscall\n", "32  read\n", "0 syscall zero\n",
		"99999999999 syscall big\n", "32 syscall read\n32 syscall read\n",
		"-1 syscall neg\n", "32 syscall a-name-that-is-far-too-long-for-any-ktau-registry-entry-it-has-more-than-64-chars\n",
	};
	struct ktau_registry *reg;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		reg = NULL;
		CHECK(ktau_registry_parse(bad[i], strlen(bad[i]), &reg) == -EBADMSG && !reg,
		      "accepted '%s'", bad[i]);
	}
	CHECK(ktau_registry_parse("# c\n\n32 syscall read\n", 21, &reg) == 0, "good one");
	CHECK(!strcmp(ktau_func_name(reg, 32), "read"), "read");
	CHECK(!strcmp(ktau_func_name(reg, 3), "sched_blocked"), "fixed names without registry");
	CHECK(!strcmp(ktau_func_name(reg, 4000), "ktau_id_4000"), "unknown ID name");
	CHECK(ktau_func_group(reg, 4000) == -1, "unknown ID group");
	ktau_registry_free(reg);
	return 0;
}

/* A raw snapshot of the process of @exp (fixtures/@bin), taken by ktaud dump --raw. */
static int check_process(const char *bin, const char *exp)
{
	struct ktau_snap *s = fixture_snap(bin);
	long pid = expect(exp, "pid"), n = expect(exp, "getppid_per_thread");
	size_t i, j;

	CHECK(s, "%s does not decode", bin);
	CHECK(s->ntasks == (size_t)expect(exp, "threads"), "%zu tasks", s->ntasks);
	for (i = 0; i < s->ntasks; i++) {
		const struct ktau_task *t = &s->tasks[i];

		CHECK(t->pid == pid, "task %zu has pid %d, not %ld", i, t->pid, pid);
		CHECK(!strcmp(t->comm, "ktau-test-loop"), "comm '%s'", t->comm);
		CHECK(count_of(t, ID_GETPPID) == (uint64_t)n, "tid %d: %llu getppid, not %ld",
		      t->tid, (unsigned long long)count_of(t, ID_GETPPID), n);
		for (j = 0; j < t->nentries; j++) {
			CHECK(t->entries[j].incl_ns >= t->entries[j].excl_ns, "incl < excl");
			CHECK(!j || t->entries[j].id > t->entries[j - 1].id, "not sorted");
		}
	}
	CHECK(ktau_snap_find(s, pid) && !ktau_snap_aggregate(s), "find");
	ktau_snap_free(s);
	return 0;
}

static int t_decode_process(void)
{
	struct ktau_snap *s;

	if (check_process("process.bin", "process.expect"))
		return 1;
	s = fixture_snap("all1.bin");
	CHECK(s && ktau_snap_aggregate(s), "all1.bin: no aggregate");
	CHECK(s->ntasks > 10, "all1.bin: %zu tasks", s->ntasks);
	ktau_snap_free(s);
	return 0;
}

/* Every prefix that is not a record boundary is an error, never a crash. */

/* Records of the first ABI (1.0, fixtures/abi-1.0) still decode. */
static int t_decode_abi_1_0(void)
{
	char *v;
	size_t len;

	v = slurp("abi-1.0/version.txt", &len);
	CHECK(v && !strncmp(v, "1.0\n", 4), "abi-1.0/version.txt is not 1.0");
	free(v);
	return check_process("abi-1.0/process.bin", "abi-1.0/process.expect");
}
static int t_decode_truncated(void)
{
	static const char *const files[] = { "process.bin", "all1.bin", "thread.bin" };
	struct ktau_snap *s;
	size_t len, cut, f, boundaries;
	char *buf;
	int ret;

	for (f = 0; f < 3; f++) {
		buf = slurp(files[f], &len);
		CHECK(buf, "%s", files[f]);
		boundaries = 0;
		for (cut = 0; cut < len; cut++) {
			char *copy = malloc(cut + 1);	/* exactly cut bytes: ASan sees overreads */

			memcpy(copy, buf, cut);
			s = NULL;
			ret = ktau_decode(copy, cut, &s);
			if (ret >= 0) {
				boundaries++;
				ktau_snap_free(s);
			} else {
				CHECK(ret == -EBADMSG && !s, "%s cut at %zu: %d", files[f], cut, ret);
			}
			free(copy);
		}
		s = fixture_snap(files[f]);
		CHECK(s && boundaries == s->ntasks, "%s: %zu prefixes decode, %zu records",
		      files[f], boundaries, s ? s->ntasks : 0);
		ktau_snap_free(s);
		free(buf);
	}
	return 0;
}

static int t_decode_garbled(void)
{
	static const uint32_t bad_words[] = { 0, 1, 7, 0x80000000u, 0xffffffffu, 0x48 };
	struct ktau_snap *s;
	size_t len, off, w, ok = 0, bad = 0;
	char *buf = slurp("process.bin", &len);
	int ret;

	CHECK(buf, "process.bin");
	for (off = 0; off + 4 <= len; off += 4) {
		for (w = 0; w < sizeof(bad_words) / sizeof(bad_words[0]); w++) {
			char *copy = malloc(len);

			memcpy(copy, buf, len);
			memcpy(copy + off, &bad_words[w], 4);
			s = NULL;
			ret = ktau_decode(copy, len, &s);
			CHECK(ret >= 0 || ret == -EBADMSG, "offset %zu: %d", off, ret);
			if (ret >= 0)
				ok++;
			else
				bad++;
			ktau_snap_free(s);
			free(copy);
		}
	}
	printf("# %zu garbled buffers decoded (values changed), %zu rejected\n", ok, bad);
	CHECK(bad > 0, "nothing was rejected");
	/* Specific rules. */
	{
		char *c = malloc(len);
		struct ktau_task_rec r;

		memcpy(c, buf, len);
		memcpy(&r, c, sizeof(r));
		r.reserved = 1;
		memcpy(c, &r, sizeof(r));
		s = NULL;
		CHECK(ktau_decode(c, len, &s) == -EBADMSG, "reserved != 0 accepted");
		memcpy(c, buf, len);
		memset(c + offsetof(struct ktau_task_rec, comm), 'x', 16);
		CHECK(ktau_decode(c, len, &s) == -EBADMSG, "unterminated comm accepted");
		memcpy(c, buf, len);
		r.reserved = 0;
		r.size += 4;
		memcpy(c, &r, sizeof(r));
		CHECK(ktau_decode(c, len, &s) == -EBADMSG, "size not a multiple of 8 accepted");
		free(c);
	}
	/* The same task twice in one buffer (found by fuzz/fuzz-decode.c). */
	{
		struct ktau_task_rec r;
		char *c;

		memcpy(&r, buf, sizeof(r));
		c = malloc(2 * (size_t)r.size);
		memcpy(c, buf, r.size);
		memcpy(c + r.size, buf, r.size);
		s = NULL;
		CHECK(ktau_decode(c, 2 * (size_t)r.size, &s) == -EBADMSG && !s,
		      "a task twice in one buffer accepted");
		free(c);
	}
	free(buf);
	return 0;
}

static int t_encode_roundtrip(void)
{
	static const char *const files[] = { "process.bin", "all1.bin", "all2.bin", "thread.bin" };
	struct ktau_snap *s;
	size_t len, elen, f;
	char *buf;
	void *enc;

	for (f = 0; f < 4; f++) {
		buf = slurp(files[f], &len);
		s = fixture_snap(files[f]);
		CHECK(buf && s, "%s", files[f]);
		CHECK(ktau_encode(s, &enc, &elen) == 0, "encode");
		CHECK(elen == len && !memcmp(enc, buf, len), "%s: not the same bytes", files[f]);
		free(enc);
		free(buf);
		ktau_snap_free(s);
	}
	return 0;
}

static int t_sum_threads(void)
{
	struct ktau_snap *s = fixture_snap("process.bin"), *p = NULL;
	long n = expect("process.expect", "getppid_per_thread");
	uint64_t excl = 0;
	size_t i;

	CHECK(s, "fixture");
	for (i = 0; i < s->ntasks; i++)
		excl += ktau_task_total_excl(&s->tasks[i]);
	CHECK(ktau_snap_sum(s, &p) == 0, "sum");
	CHECK(p->ntasks == 1, "%zu processes", p->ntasks);
	CHECK(p->tasks[0].flags & KTAU_TASK_PROCESS, "flag");
	CHECK(p->tasks[0].nthreads == s->ntasks, "nthreads %u", p->tasks[0].nthreads);
	CHECK(p->tasks[0].tid == p->tasks[0].pid, "tid of a process");
	CHECK(count_of(&p->tasks[0], ID_GETPPID) == (uint64_t)n * s->ntasks, "getppid %llu",
	      (unsigned long long)count_of(&p->tasks[0], ID_GETPPID));
	CHECK(ktau_task_total_excl(&p->tasks[0]) == excl, "total excl");
	ktau_snap_free(p);
	/* all tasks: processes are fewer, the aggregate stays. */
	ktau_snap_free(s);
	s = fixture_snap("all1.bin");
	CHECK(ktau_snap_sum(s, &p) == 0, "sum all");
	CHECK(p->ntasks < s->ntasks && ktau_snap_aggregate(p), "sum of all1");
	ktau_snap_free(p);
	ktau_snap_free(s);
	return 0;
}

static int t_diff(void)
{
	struct ktau_snap *a = fixture_snap("all1.bin"), *b = fixture_snap("all2.bin"), *d = NULL;
	const struct ktau_task *agg;
	size_t i, j;

	CHECK(a && b, "fixtures");
	CHECK(ktau_snap_diff(a, a, &d) == 0, "diff a a");
	for (i = 0; i < d->ntasks; i++)
		CHECK(d->tasks[i].nentries == 0, "a - a is not empty for tid %d", d->tasks[i].tid);
	ktau_snap_free(d);
	CHECK(ktau_snap_diff(a, b, &d) == 0 && d->is_delta && d->base_ns == a->time_ns, "diff");
	CHECK(d->ntasks == b->ntasks, "tasks of b");
	for (i = 0; i < d->ntasks; i++) {
		const struct ktau_task *bt = &b->tasks[i];

		for (j = 0; j < d->tasks[i].nentries; j++) {
			const struct ktau_func_stat *e = &d->tasks[i].entries[j];
			const struct ktau_func_stat *be = ktau_task_find(bt, e->id);

			CHECK(be && e->count <= be->count && e->excl_ns <= be->excl_ns &&
			      e->incl_ns >= e->excl_ns, "delta larger than total");
		}
	}
	/* Between the snapshots a loop of 300 getppid() ran and exited. */
	agg = ktau_snap_aggregate(d);
	CHECK(agg && count_of(agg, ID_GETPPID) >= 300, "aggregate delta of getppid: %llu",
	      agg ? (unsigned long long)count_of(agg, ID_GETPPID) : 0ULL);
	ktau_snap_free(d);
	ktau_snap_free(a);
	ktau_snap_free(b);
	return 0;
}

static int t_diff_reset_and_accumulate(void)
{
	struct ktau_func_stat ea[] = { { 32, 10, 1000, 500, 0 }, { 33, 5, 100, 100, 0 } };
	struct ktau_func_stat eb[] = { { 32, 3, 300, 200, 0 }, { 33, 7, 150, 120, 0 },
				       { 40, 1, 9, 9, 0 } };
	struct ktau_task ta = { .tid = 5, .pid = 5, .nthreads = 1, .start_ns = 77, .comm = "x",
				.nentries = 2, .entries = ea };
	struct ktau_task tb = ta, tc = ta;
	struct ktau_snap a = { .ntasks = 1, .tasks = &ta }, b = { .ntasks = 1, .tasks = &tb };
	struct ktau_snap *d = NULL, *acc = ktau_snap_new();
	const struct ktau_func_stat *e;

	tb.nentries = 3;
	tb.entries = eb;
	CHECK(ktau_snap_diff(&a, &b, &d) == 0, "diff");
	e = ktau_task_find(&d->tasks[0], 32);
	CHECK(e && e->count == 3 && e->incl_ns == 300, "a reset is taken whole");
	e = ktau_task_find(&d->tasks[0], 33);
	CHECK(e && e->count == 2 && e->incl_ns == 50 && e->excl_ns == 20, "a delta");
	CHECK(ktau_task_find(&d->tasks[0], 40), "a new entry");
	ktau_snap_free(d);
	/* Another task with the same tid (pid reuse) is new. */
	tc.start_ns = 78;
	tc.nentries = 3;
	tc.entries = eb;
	b.tasks = &tc;
	CHECK(ktau_snap_diff(&a, &b, &d) == 0, "diff");
	e = ktau_task_find(&d->tasks[0], 33);
	CHECK(e && e->count == 7, "a reused tid is a new task");
	ktau_snap_free(d);
	CHECK(ktau_snap_accumulate(acc, &a) == 0 && ktau_snap_accumulate(acc, &a) == 0, "acc");
	CHECK(acc->ntasks == 1 && count_of(&acc->tasks[0], 32) == 20, "accumulate adds");
	CHECK(ktau_snap_accumulate(acc, &b) == 0 && acc->ntasks == 2, "accumulate appends");
	ktau_snap_free(acc);
	return 0;
}

static int t_snapfile(void)
{
	struct ktau_snap *s = NULL, *raw = fixture_snap("process.bin"), *again = NULL;
	struct ktau_registry *reg = NULL, *reg2 = NULL;
	char path[512], *buf;
	size_t len, cut;
	void *e1, *e2;
	size_t l1, l2;

	snprintf(path, sizeof(path), "%s/process.ktau", fx);
	CHECK(ktau_snap_load(path, &s, &reg) == 0, "load process.ktau");
	CHECK(!strcmp(s->hostname, "ktau-guest"), "hostname '%s'", s->hostname);
	CHECK(s->release[0] && !s->is_delta, "release");
	CHECK(ktau_func_id(reg, "getppid") == ID_GETPPID, "embedded registry");
	CHECK(ktau_registry_size(reg) < 100, "registry holds only the IDs used");
	/* dump --save writes processes; the raw file has the threads. */
	CHECK(s->ntasks == 1 && (s->tasks[0].flags & KTAU_TASK_PROCESS), "a process");
	CHECK(count_of(&s->tasks[0], ID_GETPPID) == 3 * count_of(&raw->tasks[0], ID_GETPPID),
	      "getppid");
	snprintf(path, sizeof(path), "%s/t.ktau", tmpdir);
	CHECK(ktau_snap_save(path, s, reg) == 0, "save");
	CHECK(ktau_snap_load(path, &again, &reg2) == 0, "load again");
	CHECK(ktau_encode(s, &e1, &l1) == 0 && ktau_encode(again, &e2, &l2) == 0, "encode");
	CHECK(l1 == l2 && !memcmp(e1, e2, l1) && again->time_ns == s->time_ns, "round trip");
	free(e1);
	free(e2);
	/* Truncated files are errors. */
	snprintf(path, sizeof(path), "process.ktau");
	buf = slurp(path, &len);
	for (cut = 0; cut < len; cut++) {
		struct ktau_snap *t = NULL;
		char *copy = malloc(cut + 1);

		memcpy(copy, buf, cut);
		CHECK(ktau_snap_parse_file(copy, cut, &t, NULL) < 0 && !t, "cut at %zu accepted", cut);
		free(copy);
	}
	free(buf);
	ktau_snap_free(s);
	ktau_snap_free(again);
	ktau_snap_free(raw);
	ktau_registry_free(reg);
	ktau_registry_free(reg2);
	return 0;
}

/*
 * Snapshot files keep the wall-clock time and the boot id (header of 240
 * bytes); libktau 1.0's files (192, the fixtures) still read, with both
 * unknown; a header size between the two is refused. The TAU writer
 * gives them as metadata, with TAU's Starting Timestamp of the task.
 */
static char *slurp_abs(const char *path, size_t *len)
{
	const char *save = fx;
	char *buf;

	fx = "";
	buf = slurp(path, len);
	fx = save;
	return buf;
}

static int t_snapfile_wall_boot(void)
{
	static const char id[] = "6f1c2d3e-4b5a-4c6d-8e7f-901234567890";
	struct ktau_snap *s = NULL, *again = NULL;
	struct ktau_registry *reg = NULL;
	char path[600], dir[512], *buf, *text;
	uint64_t want_start;
	uint32_t hsz;
	size_t len;

	snprintf(path, sizeof(path), "%s/abi-1.0/process.ktau", fx);
	CHECK(ktau_snap_load(path, &s, &reg) == 0, "load abi-1.0/process.ktau");
	CHECK(s->wall_ns == 0 && s->boot_id[0] == '\0', "an old file has no wall time or boot id");
	s->wall_ns = 1700000000123456789ull;
	memcpy(s->boot_id, id, sizeof(id));
	snprintf(path, sizeof(path), "%s/wall.ktau", tmpdir);
	CHECK(ktau_snap_save(path, s, reg) == 0, "save");
	CHECK(ktau_snap_load(path, &again, NULL) == 0, "load again");
	CHECK(again->wall_ns == s->wall_ns, "wall_ns %llu", (unsigned long long)again->wall_ns);
	CHECK(!strcmp(again->boot_id, id), "boot id '%s'", again->boot_id);
	ktau_snap_free(again);
	again = NULL;
	buf = slurp_abs(path, &len);
	CHECK(buf && len > 240, "read back");
	memcpy(&hsz, buf + 12, 4);
	CHECK(hsz == 240, "header of %u bytes", hsz);
	hsz = 200;
	memcpy(buf + 12, &hsz, 4);
	CHECK(ktau_snap_parse_file(buf, len, &again, NULL) == -EBADMSG && !again,
	      "a header of 200 bytes accepted");
	free(buf);
	snprintf(dir, sizeof(dir), "%s/tauwall", tmpdir);
	CHECK(ktau_write_tau(dir, s, reg, NULL) == 1, "write");
	snprintf(path, sizeof(path), "%s/profile.0.0.0", dir);
	text = slurp_abs(path, &len);
	CHECK(text, "no %s", path);
	CHECK(strstr(text, "<name>KTAU Boot ID</name><value>6f1c2d3e-4b5a-4c6d-8e7f-901234567890<"),
	      "boot id metadata");
	CHECK(strstr(text, "<name>KTAU Snapshot Time</name><value>2023-11-14T22:13:20.123456Z<"),
	      "snapshot time metadata");
	want_start = (s->wall_ns - (s->time_ns - s->tasks[0].start_ns)) / 1000u;
	snprintf(path, sizeof(path), "<name>Starting Timestamp</name><value>%llu<",
		 (unsigned long long)want_start);
	CHECK(strstr(text, path), "no '%s'", path);
	free(text);
	ktau_snap_free(s);
	ktau_registry_free(reg);
	return 0;
}

/* A strict reader of one TAU profile file (tau-profile-format.md). */
static int check_tau_file(const char *path, long want_getppid, long want_pid)
{
	char line[8192], name[256], group[256];
	unsigned long long calls, subrs;
	double excl, incl;
	int n, i, pc, found = 0, pid_ok = want_pid < 0;
	FILE *f = fopen(path, "r");

	CHECK(f, "open %s", path);
	CHECK(fgets(line, sizeof(line), f) && sscanf(line, "%d templated_functions_MULTI_TIME", &n) == 1 &&
	      strstr(line, " templated_functions_MULTI_TIME\n"), "%s: line 1 '%s'", path, line);
	CHECK(fgets(line, sizeof(line), f), "line 2");
	CHECK(!strncmp(line, "# Name Calls Subrs Excl Incl ProfileCalls # <metadata>"
		       "<attribute><name>Metric Name</name><value>TIME</value></attribute>", 119),
	      "%s: line 2", path);
	CHECK(strstr(line, "</metadata>\n") && strchr(line, '\n') == line + strlen(line) - 1,
	      "metadata end");
	CHECK(!strstr(line, "\"") && !strstr(line, "'"), "unescaped quote in metadata");
	CHECK(strstr(line, "<name>pid</name>") || strstr(line, "aggregate"), "pid metadata");
	CHECK(strstr(line, "<name>tid</name>") || strstr(line, "aggregate"), "tid metadata");
	CHECK(strstr(line, "<name>comm</name>") && strstr(line, "<name>Hostname</name>") &&
	      strstr(line, "<name>OS Release</name>"), "comm, hostname, release metadata");
	if (want_pid >= 0) {
		char want[64];

		snprintf(want, sizeof(want), "<name>pid</name><value>%ld</value>", want_pid);
		pid_ok = !!strstr(line, want);
	}
	CHECK(pid_ok, "%s: pid %ld not in the metadata", path, want_pid);
	for (i = 0; i < n; i++) {
		char *q;

		CHECK(fgets(line, sizeof(line), f) && line[0] == '"', "%s: function line %d", path, i);
		q = strchr(line + 1, '"');
		CHECK(q && q - line - 1 < (long)sizeof(name), "name");
		memcpy(name, line + 1, q - line - 1);
		name[q - line - 1] = '\0';
		CHECK(sscanf(q + 1, " %llu %llu %lf %lf %d GROUP=\"%255[^\"]\"", &calls, &subrs,
			     &excl, &incl, &pc, group) == 6, "%s: line '%s'", path, line);
		CHECK(pc == 0 && excl >= 0 && incl >= excl && subrs == 0, "values: %s", line);
		CHECK(!strncmp(group, "TAU_KERNEL_MERGE|KTAU_", 22) ||
		      !strcmp(group, "KERNEL_GROUPS|TAU_KERNEL_MERGE"), "group '%s'", group);
		if (!strcmp(name, "getppid"))
			found = calls == (unsigned long long)want_getppid;
	}
	CHECK(fgets(line, sizeof(line), f) && !strcmp(line, "0 aggregates\n"), "aggregates");
	CHECK(!fgets(line, sizeof(line), f), "%s: trailing text", path);
	fclose(f);
	CHECK(want_getppid < 0 || found, "%s: getppid %ld not found", path, want_getppid);
	return 0;
}

static int t_tau_threads(void)
{
	struct ktau_snap *s = fixture_snap("process.bin");
	struct ktau_registry *reg = fixture_registry();
	struct ktau_tau_opts o = { .dense_processes = 1 };
	char dir[512], path[600];
	int i, n;

	CHECK(s && reg, "fixtures");
	snprintf(s->hostname, sizeof(s->hostname), "host<&>\"'");
	snprintf(dir, sizeof(dir), "%s/tau", tmpdir);
	n = ktau_write_tau(dir, s, reg, &o);
	CHECK(n == (int)s->ntasks, "%d files", n);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/profile.0.0.%d", dir, i);
		if (check_tau_file(path, expect("process.expect", "getppid_per_thread"),
				   expect("process.expect", "pid")))
			return 1;
	}
	snprintf(path, sizeof(path), "%s/profile.0.0.%d", dir, n);
	CHECK(access(path, F_OK), "an extra file");
	ktau_snap_free(s);
	ktau_registry_free(reg);
	return 0;
}

/* ktaud run's data: processes as dense nodes, threads as dense threads. */
static int t_tau_run_dense(void)
{
	struct ktau_snap *s = NULL;
	struct ktau_registry *reg = NULL;
	struct ktau_tau_opts o = { .dense_processes = 1 };
	static const char *const want[] = { "0.0.0", "0.0.1", "1.0.0", "2.0.0" };
	char dir[512], path[600];
	size_t i;
	int n;

	snprintf(path, sizeof(path), "%s/run.ktau", fx);
	CHECK(ktau_snap_load(path, &s, &reg) == 0, "run.ktau");
	for (i = 0; i < s->ntasks; i++)
		CHECK(s->tasks[i].flags & KTAU_TASK_EXITED, "collected tasks are exited");
	snprintf(dir, sizeof(dir), "%s/taurun", tmpdir);
	n = ktau_write_tau(dir, s, reg, &o);
	CHECK(n == 4, "%d files", n);
	for (i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/profile.%s", dir, want[i]);
		if (check_tau_file(path, expect("run.expect", "getppid_per_thread"), -1))
			return 1;
	}
	ktau_snap_free(s);
	ktau_registry_free(reg);
	return 0;
}

static int t_tau_escaping(void)
{
	struct ktau_func_stat e[] = { { 4000, 1, 10, 5, 0 }, { 4001, 2, 10, 5, 0 },
				      { 4002, 1, 1, 1, 0 } };
	struct ktau_task t = { .tid = 9, .pid = 9, .nthreads = 1, .nentries = 3, .entries = e };
	struct ktau_snap s = { .ntasks = 1, .tasks = &t };
	const char *text = "4000 irq irq5:a\"b<c>\n4001 irq irq5:a\"b<c>\n4002 dynamic SYSCALL\n";
	struct ktau_registry *reg = NULL;
	char dir[512], path[600];

	memcpy(t.comm, "a\"<&>'\n", 8);
	CHECK(ktau_registry_parse(text, strlen(text), &reg) == 0, "registry");
	snprintf(dir, sizeof(dir), "%s/tauesc", tmpdir);
	CHECK(ktau_write_tau(dir, &s, reg, NULL) == 1, "write");
	snprintf(path, sizeof(path), "%s/profile.0.0.0", dir);
	if (check_tau_file(path, -1, 9))
		return 1;
	ktau_registry_free(reg);
	return 0;
}

static int t_json(void)
{
	struct ktau_snap *s = fixture_snap("process.bin");
	struct ktau_registry *reg = fixture_registry();
	json_object *root, *tasks, *t, *ents, *e, *v;
	char *text = NULL;
	size_t len = 0, i, j, found = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(s && f, "fixtures");
	CHECK(ktau_write_json(f, s, reg, 0) == 0, "write");
	fclose(f);
	root = json_tokener_parse(text);
	CHECK(root, "not JSON");
	CHECK(json_object_object_get_ex(root, "tasks", &tasks), "tasks");
	CHECK(json_object_array_length(tasks) == s->ntasks, "ntasks");
	for (i = 0; i < s->ntasks; i++) {
		t = json_object_array_get_idx(tasks, i);
		CHECK(json_object_object_get_ex(t, "entries", &ents), "entries");
		for (j = 0; j < json_object_array_length(ents); j++) {
			e = json_object_array_get_idx(ents, j);
			json_object_object_get_ex(e, "name", &v);
			if (strcmp(json_object_get_string(v), "getppid"))
				continue;
			json_object_object_get_ex(e, "count", &v);
			CHECK(json_object_get_uint64(v) ==
			      (uint64_t)expect("process.expect", "getppid_per_thread"), "count");
			found++;
		}
	}
	CHECK(found == s->ntasks, "getppid in %zu tasks", found);
	json_object_put(root);
	free(text);
	ktau_snap_free(s);
	ktau_registry_free(reg);
	return 0;
}

static int t_folded(void)
{
	struct ktau_snap *s = fixture_snap("process.bin");
	struct ktau_registry *reg = fixture_registry();
	char *text = NULL, *line, *save, *sp;
	size_t len = 0, i;
	uint64_t sum = 0, want = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(s && f, "fixtures");
	CHECK(ktau_write_folded(f, s, reg, 0) == 0, "write");
	fclose(f);
	for (i = 0; i < s->ntasks; i++)
		want += ktau_task_total_excl(&s->tasks[i]);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		sp = strrchr(line, ' ');
		CHECK(sp && strchr(line, ';') && strchr(strchr(line, ';') + 1, ';'), "'%s'", line);
		CHECK(!strncmp(line, "ktau-test-loop-", 15), "'%s'", line);
		sum += strtoull(sp + 1, NULL, 10);
	}
	CHECK(sum == want, "folded sum %llu, total %llu", (unsigned long long)sum,
	      (unsigned long long)want);
	free(text);
	ktau_snap_free(s);
	ktau_registry_free(reg);
	return 0;
}

static int t_watch_series(void)
{
	struct ktau_snap *s, *acc = ktau_snap_new();
	char path[512];
	int i, ndelta = 0;

	for (i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/watch/snap-%06d.ktau", fx, i);
		CHECK(ktau_snap_load(path, &s, NULL) == 0, "%s", path);
		CHECK(s->is_delta == (i > 0), "%s: delta flag", path);
		CHECK(!s->is_delta || s->base_ns < s->time_ns, "base");
		ndelta += s->is_delta;
		CHECK(ktau_snap_accumulate(acc, s) == 0, "accumulate");
		ktau_snap_free(s);
	}
	CHECK(ndelta == 3 && acc->ntasks == 1, "%zu tasks", acc->ntasks);
	CHECK(count_of(&acc->tasks[0], ID_GETPPID) == 200, "getppid %llu",
	      (unsigned long long)count_of(&acc->tasks[0], ID_GETPPID));
	ktau_snap_free(acc);
	return 0;
}

/* ---- Sampling (ABI 1.1): synthetic samples ---- */

static int t_sample_parse(void)
{
	static const struct {
		const char *text;
		uint32_t event, flags;
		uint64_t period;
	} good[] = {
		{ "cpu-clock", KTAU_LIB_EV_CPU_CLOCK, 0, 1000000 },
		{ "cpu-clock:2ms", KTAU_LIB_EV_CPU_CLOCK, 0, 2000000 },
		{ "cpu-clock:10000", KTAU_LIB_EV_CPU_CLOCK, 0, 10000 },
		{ "task-clock:500us:u", KTAU_LIB_EV_TASK_CLOCK, KTAU_LIB_SAMPLE_NO_KERNEL, 500000 },
		{ "cpu-clock:@4000", KTAU_LIB_EV_CPU_CLOCK, KTAU_LIB_SAMPLE_FREQ, 4000 },
		{ "cpu-clock:k", KTAU_LIB_EV_CPU_CLOCK, KTAU_LIB_SAMPLE_NO_USER, 1000000 },
		{ "cycles", KTAU_LIB_EV_CYCLES, KTAU_LIB_SAMPLE_FREQ, 1000 },
		{ "cycles:@250", KTAU_LIB_EV_CYCLES, KTAU_LIB_SAMPLE_FREQ, 250 },
		{ "instructions:1000003:k", KTAU_LIB_EV_INSTRUCTIONS, KTAU_LIB_SAMPLE_NO_USER,
		  1000003 },
		{ "task-clock:1s", KTAU_LIB_EV_TASK_CLOCK, 0, 1000000000 },
	};
	static const char *const bad[] = {
		"", "bogus", "cpu-clock:", "cpu-clock:0", "cpu-clock:5us", "cpu-clock:1x",
		"cpu-clock:@200000", "cpu-clock:@", "cycles:5ms", "cpu-clock:2ms:x",
		"cpu-clock:99999999999999999999", "cycles:2000000000000", "cpu-clock:@-1",
		"cpu-clock:20000000s",
	};
	struct ktau_sample_spec sp;
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		memset(&sp, 0, sizeof(sp));
		sp.flags = KTAU_LIB_SAMPLE_OVERWRITE;
		CHECK(ktau_sample_parse(good[i].text, &sp, NULL) == 0, "'%s' refused", good[i].text);
		CHECK(sp.event == good[i].event && sp.period == good[i].period &&
		      sp.flags == (good[i].flags | KTAU_LIB_SAMPLE_OVERWRITE),
		      "'%s': event %u period %llu flags %#x", good[i].text, sp.event,
		      (unsigned long long)sp.period, sp.flags);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		CHECK(ktau_sample_parse(bad[i], &sp, &why) == -EINVAL && why && *why,
		      "'%s' accepted", bad[i]);
		printf("# '%s': %s\n", bad[i], why);
	}
	memset(&sp, 0, sizeof(sp));
	ktau_sample_parse("cpu-clock:@4000", &sp, NULL);
	CHECK(ktau_sample_period_ns(&sp) == 250000, "period of 4000 Hz");
	CHECK(ktau_sample_check(&sp), "capacity 0 accepted");
	sp.capacity = 24;
	CHECK(ktau_sample_check(&sp), "capacity 24 accepted");
	sp.capacity = 1024;
	CHECK(!ktau_sample_check(&sp), "%s", ktau_sample_check(&sp));
	sp.watermark = 1;
	CHECK(ktau_sample_check(&sp), "a watermark without a signal");
	sp.signo = 9;
	CHECK(ktau_sample_check(&sp), "SIGKILL");
	sp.signo = SIGTERM;
	CHECK(ktau_sample_check(&sp), "SIGTERM");
	sp.signo = SIGRTMIN + 1;
	CHECK(!ktau_sample_check(&sp), "a real-time signal");
	sp.signo = 27;
	CHECK(!ktau_sample_check(&sp), "SIGPROF, watermark 1");
	sp.flags |= KTAU_LIB_SAMPLE_NO_USER | KTAU_LIB_SAMPLE_NO_KERNEL;
	CHECK(ktau_sample_check(&sp), "neither user nor kernel");
	CHECK(!strcmp(ktau_sample_event_name(KTAU_LIB_EV_INSTRUCTIONS), "instructions") &&
	      !ktau_sample_event_name(4), "event names");
	CHECK(strstr(ktau_sample_strerror(-EACCES, 1), "perf_event_paranoid") &&
	      strstr(ktau_sample_strerror(-ENOENT, 1), "cpu-clock") &&
	      strstr(ktau_sample_strerror(-ENOENT, 0), "exec"), "messages");
	return 0;
}

static int t_sample_decode(void)
{
	struct ktau_sample raw[3] = {
		{ .ip = 0x401000, .time_ns = 10, .id = KTAU_ID_USER, .flags = KTAU_SAMPLE_USER },
		{ .ip = 0xffffffff81000010ull, .time_ns = 20, .id = KTAU_ID_SYSCALL_BASE },
		{ .ip = 0, .time_ns = 30, .id = KTAU_ID_KERNEL },
	};
	struct ktau_sample_rec out[3];
	struct ktau_sample bad;

	CHECK(ktau_sample_decode(raw, sizeof(raw), 77, out, 3) == 3, "decode");
	CHECK(out[0].user && out[0].ip == 0x401000 && out[0].tid == 77 && !out[0].pid &&
	      out[1].id == KTAU_ID_SYSCALL_BASE && !out[1].user && out[2].time_ns == 30, "values");
	CHECK(ktau_sample_decode(raw, sizeof(raw), 77, out, 2) == -ENOSPC, "room");
	CHECK(ktau_sample_decode(raw, sizeof(raw) - 1, 77, out, 3) == -EBADMSG, "length");
	CHECK(ktau_sample_decode(raw, 0, 77, out, 0) == 0, "empty");
	bad = raw[0];
	bad.flags = 0x2;
	CHECK(ktau_sample_decode(&bad, sizeof(bad), 1, out, 1) == -EBADMSG, "flags");
	bad = raw[1];
	bad.flags = KTAU_SAMPLE_USER;
	CHECK(ktau_sample_decode(&bad, sizeof(bad), 1, out, 1) == -EBADMSG, "user, not user_mode");
	bad = raw[0];
	bad.flags = 0;
	CHECK(ktau_sample_decode(&bad, sizeof(bad), 1, out, 1) == -EBADMSG, "user_mode, kernel");
	bad.id = 0;
	CHECK(ktau_sample_decode(&bad, sizeof(bad), 1, out, 1) == -EBADMSG, "id 0");
	return 0;
}

static const char kallsyms_text[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff81001000 t clear_page_erms\n"
	"ffffffff81002000 D some_data\n"
	"ffffffff81003000 W ksys_read\n"
	"ffffffffc0000000 t mod_func\t[ktau_mod]\n"
	"garbage line\n";

static int t_ksyms(void)
{
	struct ktau_ksyms *ks = NULL;
	const char *zero = "0000000000000000 T _stext\n0000000000000000 t foo\n";
	const char *n;

	CHECK(ktau_ksyms_parse(kallsyms_text, strlen(kallsyms_text), &ks) == 0, "parse");
	CHECK(ktau_ksyms_size(ks) == 5, "%zu symbols", ktau_ksyms_size(ks));
	n = ktau_ksyms_name(ks, 0xffffffff81001010ull);
	CHECK(n && !strcmp(n, "clear_page_erms"), "%s", n ? n : "NULL");
	/* Data symbols are not functions: the function before them reaches on. */
	n = ktau_ksyms_name(ks, 0xffffffff81002010ull);
	CHECK(n && !strcmp(n, "clear_page_erms"), "%s", n ? n : "NULL");
	n = ktau_ksyms_name(ks, 0xffffffff81000004ull);
	CHECK(n && (!strcmp(n, "_stext") || !strcmp(n, "startup_64")), "%s", n ? n : "NULL");
	n = ktau_ksyms_name(ks, 0xffffffffc0000100ull);
	CHECK(n && !strcmp(n, "mod_func [ktau_mod]"), "%s", n ? n : "NULL");
	CHECK(!ktau_ksyms_name(ks, 0xffffffffc0200000ull), "far past the last symbol");
	CHECK(!ktau_ksyms_name(ks, 0x1000), "below the first");
	ktau_ksyms_free(ks);
	CHECK(ktau_ksyms_parse(zero, strlen(zero), &ks) == -ENODATA, "hidden addresses");
	CHECK(ktau_ksyms_parse("x\n", 2, &ks) == -EBADMSG, "nothing");
	return 0;
}

/* A function of this program with a name to find (PIE: a load bias). */
__attribute__((noinline)) int ktau_test_sampled_function(int x)
{
	return x * 3 + 1;
}

static int t_usyms_self(void)
{
	struct ktau_usyms *u = NULL, *v = NULL;
	char name[512], *maps = NULL, *line, *save, *shifted = NULL;
	uintptr_t fn = (uintptr_t)ktau_test_sampled_function, lib = (uintptr_t)getpid;
	const uintptr_t delta = 0x100000000000ull;
	size_t len = 0, slen = 0;
	FILE *f, *m;
	void *anon;
	int fd, ok;

	CHECK(ktau_usyms_open(0, &u) == 0, "open self");
	CHECK(ktau_usyms_name(u, fn + 4, name, sizeof(name)) == 1 &&
	      !strcmp(name, "ktau_test_sampled_function"), "'%s'", name);
	CHECK(ktau_usyms_name(u, lib, name, sizeof(name)) == 1 && strstr(name, "getpid"),
	      "libc: '%s'", name);
	/* Cached: the same again. */
	CHECK(ktau_usyms_name(u, fn + 4, name, sizeof(name)) == 1 &&
	      !strcmp(name, "ktau_test_sampled_function"), "cached '%s'", name);
	CHECK(ktau_usyms_name(u, 0x10, name, sizeof(name)) == 0 &&
	      !strcmp(name, "[unknown] 0x10"), "'%s'", name);
	/* Code mapped after the maps were read is found by reading them again. */
	anon = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(anon != MAP_FAILED, "mmap");
	usleep(60000);
	CHECK(ktau_usyms_name(u, (uintptr_t)anon + 8, name, sizeof(name)) == 0 &&
	      !strncmp(name, "[unknown] 0x", 12), "anonymous: '%s'", name);
	munmap(anon, 4096);
	/*
	 * An address named unknown (nothing mapped there yet, as in the
	 * middle of an exec) is named once a file is mapped there: the
	 * unknown name is not kept for good.
	 */
	anon = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(anon != MAP_FAILED, "mmap");
	munmap(anon, 4096);
	usleep(60000);
	CHECK(ktau_usyms_name(u, (uintptr_t)anon + 8, name, sizeof(name)) == 0 &&
	      !strncmp(name, "[unknown] 0x", 12), "unmapped: '%s'", name);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "open /proc/self/exe");
	CHECK(mmap(anon, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0) ==
	      anon, "map the program at %p", anon);
	close(fd);
	usleep(60000);
	ok = ktau_usyms_name(u, (uintptr_t)anon + 8, name, sizeof(name));
	munmap(anon, 4096);
	CHECK(ok == 1 && strncmp(name, "[unknown]", 9), "mapped since: %d '%s'", ok, name);
	ktau_usyms_free(u);

	/* The maps of another place: every mapping moved by delta, same names. */
	f = fopen("/proc/self/maps", "r");
	CHECK(f, "maps");
	m = open_memstream(&maps, &len);
	for (;;) {
		char buf[4096];

		if (!fgets(buf, sizeof(buf), f))
			break;
		fputs(buf, m);
	}
	fclose(f);
	fclose(m);
	m = open_memstream(&shifted, &slen);
	for (line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long a, b;
		int pos = 0;

		if (sscanf(line, "%llx-%llx%n", &a, &b, &pos) == 2)
			fprintf(m, "%llx-%llx%s\n", a + delta, b + delta, line + pos);
	}
	fclose(m);
	CHECK(ktau_usyms_parse_maps(shifted, slen, &v) == 0, "parse maps");
	CHECK(ktau_usyms_name(v, fn + delta + 4, name, sizeof(name)) == 1 &&
	      !strcmp(name, "ktau_test_sampled_function"), "moved: '%s'", name);
	CHECK(ktau_usyms_name(v, fn + 4, name, sizeof(name)) == 0 &&
	      !strncmp(name, "[unknown] ", 10), "old place: '%s'", name);
	ktau_usyms_free(v);
	free(maps);
	free(shifted);
	return 0;
}

/* Copies @from to @to (mode 0755). 0 or -1. */
static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in, out, ret = 0;
	ssize_t n;

	in = open(from, O_RDONLY | O_CLOEXEC);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			ret = -1;
	if (in < 0 || out < 0)
		ret = -1;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out))
		ret = -1;
	return ret;
}

/*
 * A mapping whose file was deleted or replaced ("(deleted)" in the maps):
 * its old path names another file, which must never give the names.
 * From text alone the addresses are "<file> (deleted)+0x..."; from a live
 * process, the mapped file itself is read through /proc/PID/map_files
 * where the kernel allows it (CAP_SYS_ADMIN), else the same.
 */
static int t_usyms_deleted(void)
{
	static const char other[] = "/bin/true";
	uintptr_t fn = (uintptr_t)ktau_test_sampled_function;
	char name[512], exe[4096], copy[600], line[4096];
	struct ktau_usyms *u = NULL;
	char *maps = NULL;
	size_t len = 0;
	ssize_t n;
	FILE *f, *m;
	int p[2], st, ret = 0;
	pid_t pid;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0, "readlink");
	exe[n] = '\0';
	/* This program's mappings, as if its file had been replaced by another. */
	f = fopen("/proc/self/maps", "r");
	m = open_memstream(&maps, &len);
	CHECK(f && m, "maps");
	while (fgets(line, sizeof(line), f)) {
		char *path = strstr(line, exe);

		if (path && !strcmp(path + strlen(exe), "\n"))
			fprintf(m, "%.*s%s (deleted)\n", (int)(path - line), line, other);
		else
			fputs(line, m);
	}
	fclose(f);
	fclose(m);
	CHECK(ktau_usyms_parse_maps(maps, len, &u) == 0, "parse maps");
	free(maps);
	ktau_usyms_name(u, fn + 4, name, sizeof(name));
	CHECK(!strncmp(name, "true (deleted)+0x", 17), "named from %s: '%s'", other, name);
	ktau_usyms_free(u);
	u = NULL;

	/* A live process whose program file is then replaced. */
	snprintf(copy, sizeof(copy), "%s/prog", tmpdir);
	CHECK(copy_file(exe, copy) == 0, "copy %s", exe);
	CHECK(pipe(p) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (!pid) {
		dup2(p[1], 1);
		execl(copy, copy, "--usyms-child", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	n = read(p[0], line, sizeof(line) - 1);
	close(p[0]);
	if (n <= 0 || unlink(copy) || copy_file(other, copy)) {
		ret = 1;
		printf("# the child did not start, or %s could not be replaced\n", copy);
		goto out;
	}
	line[n] = '\0';
	fn = strtoull(line, NULL, 16);
	if (ktau_usyms_open(pid, &u)) {
		ret = 1;
		printf("# cannot read the maps of %d\n", (int)pid);
		goto out;
	}
	ktau_usyms_name(u, fn + 4, name, sizeof(name));
	if (geteuid() == 0 ? strcmp(name, "ktau_test_sampled_function") :
			     strncmp(name, "prog (deleted)+0x", 17)) {
		ret = 1;
		printf("# live, %s: '%s'\n", geteuid() ? "not root" : "root", name);
	}
out:
	ktau_usyms_free(u);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return ret;
}

/*
 * JIT code named by a perf map: from text (later lines win, sizes bound
 * each entry, bad lines skipped), and a process's own /tmp/perf-PID.map,
 * which is not read when another user owns it.
 */
static int t_usyms_perf_map(void)
{
	static const char text[] = "7f0000001000 100 py::work:/x.py\n"
				   "0x7f0000002000 0x20 jit b\n"
				   "not a line\n7f0000003000 0 empty\n"
				   "7f0000001000 80 py::later:/x.py\n";
	struct ktau_usyms *u = NULL;
	char name[512], path[64];
	int fd, st, ret = 0;
	pid_t pid;

	CHECK(ktau_usyms_parse_maps("", 0, &u) == 0, "empty maps");
	CHECK(ktau_usyms_add_perf_map(u, text, strlen(text)) == 0, "add");
	CHECK(ktau_usyms_name(u, 0x7f0000001010ull, name, sizeof(name)) == 1 &&
	      !strcmp(name, "py::later:/x.py"), "later line: '%s'", name);
	CHECK(ktau_usyms_name(u, 0x7f0000001090ull, name, sizeof(name)) == 0 &&
	      !strncmp(name, "[unknown] ", 10), "beyond its size: '%s'", name);
	CHECK(ktau_usyms_name(u, 0x7f000000201full, name, sizeof(name)) == 1 &&
	      !strcmp(name, "jit b"), "0x form: '%s'", name);
	CHECK(ktau_usyms_name(u, 0x7f0000003000ull, name, sizeof(name)) == 0,
	      "size 0: '%s'", name);
	ktau_usyms_free(u);

	pid = fork();
	CHECK(pid >= 0, "fork");
	if (!pid) {
		pause();
		_exit(0);
	}
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || write(fd, "dead0000 100 jit_child\n", 23) != 23) {
		printf("# %s: %s\n", path, strerror(errno));
		ret = 1;
	}
	if (!ret && ktau_usyms_open(pid, &u)) {
		printf("# open %d\n", (int)pid);
		ret = 1;
	}
	if (!ret && (ktau_usyms_name(u, 0xdead0010ull, name, sizeof(name)) != 1 ||
		     strcmp(name, "jit_child"))) {
		printf("# the process's perf map: '%s'\n", name);
		ret = 1;
	}
	/* Another user's file at that path is not the process's map. */
	if (!ret && geteuid() == 0) {
		if (fchown(fd, 4242, 4242) || ktau_usyms_refresh(u) ||
		    ktau_usyms_name(u, 0xdead0010ull, name, sizeof(name)) != 0) {
			printf("# another owner's map was read: '%s'\n", name);
			ret = 1;
		}
	} else if (!ret) {
		printf("# not root: the owner check was not tried\n");
	}
	ktau_usyms_free(u);
	if (fd >= 0)
		close(fd);
	unlink(path);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return ret;
}

/* Three threads' samples: user code, kernel with kallsyms, kernel hidden. */
static struct ktau_sample_profile *synthetic_profile(struct ktau_ksyms **ksp)
{
	struct ktau_sample_profile *p = ktau_sample_profile_new();
	struct ktau_sample_rec v[] = {
		{ 0x1000, 1, KTAU_ID_USER, 1, 101, 100 },
		{ 0x1000, 2, KTAU_ID_USER, 1, 101, 100 },
		{ 0x2000, 3, KTAU_ID_USER, 1, 101, 100 },
		{ 0xffffffff81001004ull, 4, KTAU_ID_SYSCALL_BASE, 0, 101, 100 },
		{ 0xffffffff81001008ull, 5, KTAU_ID_SYSCALL_BASE, 0, 101, 100 },
		{ 0, 6, KTAU_ID_SCHED_INVOL, 0, 102, 100 },
		{ 0x1000, 7, KTAU_ID_USER, 1, 102, 100 },
	};
	struct ktau_sample_place pl = { .tid = 102, .pid = 100, .id = KTAU_ID_USER, .user = 1,
					.sym = "spin \"loop\" => x", .count = 10 };

	if (!p || ktau_ksyms_parse(kallsyms_text, strlen(kallsyms_text), ksp) ||
	    ktau_sample_profile_add_samples(p, v, sizeof(v) / sizeof(v[0]), NULL, *ksp) ||
	    ktau_sample_profile_add(p, &pl)) {
		ktau_sample_profile_free(p);
		return NULL;
	}
	return p;
}

static int t_sample_profile_folded(void)
{
	struct ktau_ksyms *ks = NULL;
	struct ktau_sample_profile *p = synthetic_profile(&ks);
	struct ktau_task t = { .tid = 101, .pid = 100, .nthreads = 1, .comm = "spinner" };
	struct ktau_snap s = { .ntasks = 1, .tasks = &t };
	const struct ktau_sample_place *pl;
	struct ktau_registry *reg = fixture_registry();
	const char *want =
		"spinner;[k] read;clear_page_erms 2\n"
		"spinner;[unknown] 0x1000 2\n"
		"spinner;[unknown] 0x2000 1\n"
		"tid-102;[k] sched_preempted 1\n"
		"tid-102;[unknown] 0x1000 1\n"
		"tid-102;spin \"loop\" => x 10\n";
	char *text = NULL;
	size_t len = 0, n, i;
	uint64_t sum = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(p && f && reg, "setup");
	pl = ktau_sample_profile_places(p, &n);
	CHECK(n == 6, "%zu places", n);
	for (i = 0; i < n; i++)
		sum += pl[i].count;
	CHECK(sum == 17 && ktau_sample_profile_total(p) == 17, "total %llu",
	      (unsigned long long)sum);
	CHECK(pl[0].tid == 101 && pl[0].user && pl[0].count == 2 &&
	      !strcmp(pl[0].sym, "[unknown] 0x1000"), "first place");
	CHECK(!pl[2].user && !strcmp(pl[2].sym, "clear_page_erms") && pl[2].count == 2,
	      "kernel place: %s", pl[2].sym);
	CHECK(!pl[3].user && !pl[3].sym && pl[3].id == KTAU_ID_SCHED_INVOL, "hidden kernel");
	CHECK(ktau_write_sample_folded(f, p, &s, reg) == 0, "folded");
	fclose(f);
	CHECK(!strcmp(text, want), "folded:\n%s", text);
	free(text);
	ktau_registry_free(reg);
	ktau_sample_profile_free(p);
	ktau_ksyms_free(ks);
	return 0;
}

/* A copy of dir's files under $KTAU_TEST_OUT, for the strict checker. */
static void keep_for_checker(const char *dir, const char *name)
{
	const char *out = getenv("KTAU_TEST_OUT");
	char cmd[1200];

	if (!out)
		return;
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && rm -rf '%s/%s' && cp -r '%s' '%s/%s'", out,
		 out, name, dir, out, name);
	if (system(cmd))
		printf("# could not copy %s to %s\n", dir, out);
}

/* The line of a function: "calls subrs excl incl" (NULL when missing). */
static int tau_line(const char *path, const char *name, char *vals, size_t size)
{
	char line[1024], want[600];
	FILE *f = fopen(path, "r");
	int found = 0;

	if (!f)
		return 0;
	snprintf(want, sizeof(want), "\"%s\" ", name);
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, want, strlen(want)))
			continue;
		found = 1;
		snprintf(vals, size, "%s", line + strlen(want));
		*strstr(vals, " 0 GROUP=") = '\0';
	}
	fclose(f);
	return found;
}

/* The address of its caller's call instruction (its return address less one). */
static __attribute__((noinline)) uintptr_t call_pc(void)
{
	return (uintptr_t)__builtin_return_address(0) - 1;
}

/* The line of folded text that starts with prefix, into out; 0 when none. */
static int folded_line(const char *text, const char *prefix, char *out, size_t size)
{
	const char *l;

	for (l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, prefix, strlen(prefix)))
			continue;
		snprintf(out, size, "%.*s", (int)strcspn(l, "\n"), l);
		return 1;
	}
	return 0;
}

/*
 * Samples per source line (KTAU_LIB_PROFILE_LINES). This program has its
 * debug information (-g): the address of a call in it has the call's
 * line. Its place is "function [{file} {line}]" (TAU's name), its TAU row
 * "[SAMPLE] function [{file} {line}]", its folded stack the function and
 * "file.c:LINE" above it; a place without a line keeps its plain name, and
 * without the flag every place is per function, as before.
 */
static int t_sample_lines(void)
{
	struct ktau_sample_profile *p = ktau_sample_profile_new();
	struct ktau_sample_profile *q = ktau_sample_profile_new();
	struct ktau_func_stat e = { KTAU_ID_USER, 0, 0, 0, 5 };
	struct ktau_task t = { .tid = gettid(), .pid = getpid(), .nthreads = 1,
			       .comm = "lines", .nentries = 1, .entries = &e };
	struct ktau_snap s = { .ntasks = 1, .tasks = &t };
	struct ktau_tau_opts o = { .dense_processes = 1, .sample_metric = "cpu-clock",
				   .samples = p, .sample_period_ns = 1000000 };
	struct ktau_sample_place inl = { .tid = t.tid, .pid = t.pid, .id = KTAU_ID_USER,
					 .user = 1, .count = 2,
					 .sym = "inner [inlined into outer] [{/src/a;b c.h} {7}]" };
	struct ktau_sample_rec v[4];
	const struct ktau_sample_place *pl;
	struct ktau_usyms *u = NULL;
	char file[4096], want[4200], got[4300], dir[512], path[600], vals[256];
	char *text = NULL;
	size_t len = 0, n, i;
	uintptr_t pc;
	int line, l;
	FILE *f;

	CHECK(p && q, "profiles");
	CHECK(ktau_sample_profile_set_flags(p, 0x2) == -EINVAL &&
	      ktau_sample_profile_set_flags(NULL, 0) == -EINVAL, "unknown flags");
	CHECK(ktau_sample_profile_set_flags(p, KTAU_LIB_PROFILE_LINES) == 0, "lines");
	CHECK(ktau_usyms_open(0, &u) == 0, "open self");
	line = __LINE__ + 1;
	pc = call_pc();
	l = ktau_usyms_srcline(u, pc, file, sizeof(file));
	/* The file as the compiler was given it, in the directory it ran in. */
	CHECK(l == line && file[0] == '/' && strlen(file) > 24 &&
	      !strcmp(file + strlen(file) - 24, "/tests/host/host-tests.c"),
	      "line %d (want %d) of '%s'", l, line, file);
	printf("# %s:%d\n", file, l);
	/* Cached: the same again; no room for the file: none. */
	CHECK(ktau_usyms_srcline(u, pc, got, sizeof(got)) == line && !strcmp(got, file), "cached");
	CHECK(ktau_usyms_srcline(u, pc, got, 4) == 0 && !got[0], "small buffer");
	CHECK(ktau_usyms_srcline(u, 0x10, got, sizeof(got)) == 0 && !got[0], "unknown address");
	CHECK(ktau_usyms_srcline(NULL, pc, got, sizeof(got)) == 0, "no usyms");
	/* Three samples at the call, one where no file is mapped. */
	memset(v, 0, sizeof(v));
	for (i = 0; i < 4; i++) {
		v[i].ip = i < 3 ? pc : 0x10;
		v[i].id = KTAU_ID_USER;
		v[i].user = 1;
		v[i].tid = t.tid;
		v[i].pid = t.pid;
	}
	CHECK(ktau_sample_profile_add_samples(p, v, 4, u, NULL) == 0 &&
	      ktau_sample_profile_add_samples(q, v, 4, u, NULL) == 0 &&
	      ktau_sample_profile_add(p, &inl) == 0, "add");
	snprintf(want, sizeof(want), "t_sample_lines [{%s} {%d}]", file, line);
	pl = ktau_sample_profile_places(p, &n);
	CHECK(n == 3 && !strcmp(pl[0].sym, want) && pl[0].count == 3, "place '%s'",
	      n ? pl[0].sym : "");
	CHECK(!strcmp(pl[1].sym, "[unknown] 0x10"), "no line: '%s'", pl[1].sym);
	pl = ktau_sample_profile_places(q, &n);
	CHECK(n == 2 && !strcmp(pl[0].sym, "t_sample_lines"), "without the flag: '%s'",
	      pl[0].sym);
	/* The TAU rows, which the strict checker reads (c_taucheck). */
	snprintf(dir, sizeof(dir), "%s/taulines", tmpdir);
	CHECK(ktau_write_tau(dir, &s, NULL, &o) == 1, "write");
	snprintf(path, sizeof(path), "%s/MULTI__cpu-clock/profile.0.0.0", dir);
	snprintf(got, sizeof(got), "[SAMPLE] %s", want);
	CHECK(tau_line(path, got, vals, sizeof(vals)) && !strcmp(vals, "3 0 3 3"), "row '%s': %s",
	      got, vals);
	CHECK(tau_line(path, "[SAMPLE] inner [inlined into outer] [{/src/a;b c.h} {7}]", vals,
		       sizeof(vals)), "inlined row");
	CHECK(tau_line(path, "[SAMPLE] [unknown] 0x10", vals, sizeof(vals)), "plain row");
	keep_for_checker(dir, "tau-sample-lines");
	/* Folded: the line a frame above the function's, no ';' or space in it. */
	f = open_memstream(&text, &len);
	CHECK(f && ktau_write_sample_folded(f, p, &s, NULL) == 0, "folded");
	fclose(f);
	snprintf(want, sizeof(want), "lines;t_sample_lines;host-tests.c:%d 3", line);
	CHECK(folded_line(text, "lines;t_sample_lines;", got, sizeof(got)) && !strcmp(got, want),
	      "folded '%s', want '%s'", got, want);
	CHECK(folded_line(text, "lines;inner", got, sizeof(got)) &&
	      !strcmp(got, "lines;inner [inlined into outer];a:b_c.h:7 2"), "folded inlined '%s'",
	      got);
	CHECK(folded_line(text, "lines;[unknown]", got, sizeof(got)) &&
	      !strcmp(got, "lines;[unknown] 0x10 1"), "folded plain '%s'", got);
	free(text);
	ktau_usyms_free(u);
	ktau_sample_profile_free(p);
	ktau_sample_profile_free(q);
	return 0;
}

static int t_tau_samples(void)
{
	struct ktau_func_stat e[] = {
		{ KTAU_ID_USER, 0, 0, 0, 40 },
		{ KTAU_ID_SYSCALL_BASE, 10, 5000, 4000, 5 },	/* read */
		{ ID_GETPPID, 3, 300, 300, 0 },
	};
	struct ktau_task t[2] = {
		{ .tid = 101, .pid = 100, .nthreads = 1, .comm = "spinner", .nentries = 3,
		  .entries = e },
		{ .tid = 102, .pid = 100, .nthreads = 1, .comm = "spinner", .nentries = 1,
		  .entries = &e[2] },
	};
	struct ktau_snap s = { .ntasks = 2, .tasks = t };
	struct ktau_ksyms *ks = NULL;
	struct ktau_sample_profile *p = synthetic_profile(&ks);
	struct ktau_registry *reg = fixture_registry();
	struct ktau_tau_opts o = { .dense_processes = 1, .sample_metric = "cpu-clock",
				   .samples = p, .sample_period_ns = 1000000 };
	char dir[512], path[700], v[256];

	CHECK(p && reg, "setup");
	snprintf(dir, sizeof(dir), "%s/tausamples", tmpdir);
	/* A single-metric profile there before: the layout changes. */
	CHECK(ktau_write_tau(dir, &s, reg, NULL) == 2, "single");
	CHECK(ktau_write_tau(dir, &s, reg, &o) == 2, "multi");
	snprintf(path, sizeof(path), "%s/profile.0.0.0", dir);
	CHECK(access(path, F_OK), "a profile file beside MULTI__ directories");
	snprintf(path, sizeof(path), "%s/MULTI__TIME/profile.0.0.0", dir);
	CHECK(tau_line(path, "user_mode", v, sizeof(v)) && !strcmp(v, "40 0 0 0"),
	      "TIME user_mode: %s", v);
	CHECK(tau_line(path, "read", v, sizeof(v)) && !strcmp(v, "10 0 4 5"), "TIME read: %s", v);
	CHECK(tau_line(path, "[SAMPLE] [unknown] 0x1000", v, sizeof(v)) &&
	      !strcmp(v, "2 0 2000 2000"), "TIME [SAMPLE]: %s", v);
	CHECK(tau_line(path, "[SAMPLE] [k] clear_page_erms", v, sizeof(v)), "kernel [SAMPLE]");
	CHECK(tau_line(path, "DYNAMIC", v, sizeof(v)) && !strcmp(v, "40 0 0 0"), "DYNAMIC: %s", v);
	snprintf(path, sizeof(path), "%s/MULTI__cpu-clock/profile.0.0.0", dir);
	CHECK(tau_line(path, "user_mode", v, sizeof(v)) && !strcmp(v, "40 0 40 40"),
	      "samples user_mode: %s", v);
	CHECK(tau_line(path, "read", v, sizeof(v)) && !strcmp(v, "10 0 5 5"), "samples read: %s",
	      v);
	CHECK(tau_line(path, "SYSCALL", v, sizeof(v)) && !strcmp(v, "13 0 5 5"), "SYSCALL: %s", v);
	CHECK(tau_line(path, "[SAMPLE] [unknown] 0x1000", v, sizeof(v)) &&
	      !strcmp(v, "2 0 2 2"), "samples [SAMPLE]: %s", v);
	/* The second thread: its cleaned symbol; no [SAMPLE] of the first. */
	snprintf(path, sizeof(path), "%s/MULTI__cpu-clock/profile.0.0.1", dir);
	CHECK(tau_line(path, "[SAMPLE] spin 'loop' =_ x", v, sizeof(v)) &&
	      !strcmp(v, "10 0 10 10"), "cleaned name: %s", v);
	CHECK(!tau_line(path, "[SAMPLE] [unknown] 0x2000", v, sizeof(v)), "thread 101's row");
	keep_for_checker(dir, "tau-samples");
	/* Without samples again: one metric, no MULTI__ directory left. */
	o.samples = NULL;
	e[0].samples = e[1].samples = 0;
	CHECK(ktau_write_tau(dir, &s, reg, &o) == 2, "single again");
	snprintf(path, sizeof(path), "%s/MULTI__TIME", dir);
	CHECK(access(path, F_OK), "MULTI__TIME left behind");
	snprintf(path, sizeof(path), "%s/profile.0.0.1", dir);
	CHECK(!access(path, F_OK), "no profile.0.0.1");
	ktau_sample_profile_free(p);
	ktau_ksyms_free(ks);
	ktau_registry_free(reg);
	return 0;
}

/* Samples survive encoding, saving and diffs; a diff keeps sample-only entries. */
static int t_snap_samples(void)
{
	struct ktau_func_stat ea[] = { { KTAU_ID_USER, 0, 0, 0, 7 }, { 40, 2, 20, 10, 1 } };
	struct ktau_func_stat eb[] = { { KTAU_ID_USER, 0, 0, 0, 19 }, { 40, 2, 20, 10, 1 } };
	struct ktau_task ta = { .tid = 5, .pid = 5, .nthreads = 1, .start_ns = 9, .comm = "x",
				.nentries = 2, .entries = ea };
	struct ktau_task tb = ta;
	struct ktau_snap a = { .ntasks = 1, .tasks = &ta }, b = { .ntasks = 1, .tasks = &tb };
	struct ktau_snap *d = NULL, *r = NULL;
	const struct ktau_func_stat *e;
	void *buf;
	size_t len;

	tb.entries = eb;
	CHECK(ktau_encode(&b, &buf, &len) == 0, "encode");
	CHECK(ktau_decode(buf, len, &r) == 1, "decode");
	free(buf);
	e = ktau_task_find(&r->tasks[0], KTAU_ID_USER);
	CHECK(e && e->samples == 19 && !e->count, "samples decoded");
	ktau_snap_free(r);
	CHECK(ktau_snap_diff(&a, &b, &d) == 0, "diff");
	CHECK(d->tasks[0].nentries == 1, "%zu entries", d->tasks[0].nentries);
	e = ktau_task_find(&d->tasks[0], KTAU_ID_USER);
	CHECK(e && e->samples == 12, "sample diff");
	CHECK(ktau_snap_accumulate(d, &b) == 0, "accumulate");
	e = ktau_task_find(&d->tasks[0], KTAU_ID_USER);
	CHECK(e && e->samples == 31, "sample sum");
	ktau_snap_free(d);
	CHECK(!strcmp(ktau_func_name(NULL, KTAU_ID_USER), "user_mode") &&
	      ktau_func_group(NULL, KTAU_ID_KERNEL) == KTAU_GROUP_DYNAMIC, "fixed names");
	return 0;
}

static int t_tau_rows(void)
{
	struct ktau_tau_row rows[] = {
		{ "fib", "INTERP", 10, 0, 120, 120 },
		{ "write_loop", "INTERP", 2, 0, 30, 30 },
		{ "idle", "INTERP", 0, 0, 0, 0 },
	};
	const char *meta[] = { "Interpreter", "ktau-interp <&>" };
	char *text = NULL, dir[512], path[600];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(ktau_write_tau_rows(f, "SAMPLES", rows, 3, meta, 1) == 0, "write");
	fclose(f);
	CHECK(!strncmp(text, "3 templated_functions_MULTI_SAMPLES\n# Name Calls Subrs Excl Incl "
		       "ProfileCalls # <metadata><attribute><name>Metric Name</name><value>"
		       "SAMPLES</value></attribute><attribute><name>Interpreter</name><value>"
		       "ktau-interp &lt;&amp;&gt;</value></attribute></metadata>\n\"fib\" 10 0 120 "
		       "120 0 GROUP=\"INTERP\"\n", 250), "%s", text);
	free(text);
	snprintf(dir, sizeof(dir), "%s/taurows", tmpdir);
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/profile.0.0.0", dir);
	f = fopen(path, "w");
	CHECK(f && ktau_write_tau_rows(f, "SAMPLES", rows, 3, meta, 1) == 0, "file");
	fclose(f);
	keep_for_checker(dir, "tau-rows");
	f = fopen("/dev/null", "w");
	rows[2].excl = 1;
	CHECK(ktau_write_tau_rows(f, "SAMPLES", rows, 3, NULL, 0) == -EINVAL, "values, no calls");
	rows[2].excl = 0;
	rows[2].name = "fib";
	CHECK(ktau_write_tau_rows(f, "SAMPLES", rows, 3, NULL, 0) == -EINVAL, "duplicate");
	rows[2].name = "idle";
	CHECK(ktau_write_tau_rows(f, "MY METRIC", rows, 3, NULL, 0) == -EINVAL, "metric");
	rows[1].excl = 31;
	CHECK(ktau_write_tau_rows(f, "SAMPLES", rows, 3, NULL, 0) == -EINVAL, "excl > incl");
	fclose(f);
	return 0;
}

/*
 * MPI ranks writing one directory at once (ktaud run under mpirun): each
 * rank's processes are contexts of its node; nothing lost or replaced.
 */
struct rank_write {
	const char *dir;
	struct ktau_snap *s;
	struct ktau_registry *reg;
};

static int rank_write(int i, void *arg)
{
	const struct rank_write *w = arg;
	struct ktau_tau_opts o = { .dense_processes = 1, .has_rank = 1, .rank = i };

	return ktau_write_tau(w->dir, w->s, w->reg, &o) == 4 ? 0 : 1;
}

static int t_tau_ranks_concurrent(void)
{
	enum { NRANKS = 4 };
	static const char *const want[] = { "0.0", "0.1", "1.0", "2.0" };
	struct ktau_snap *s = NULL;
	struct ktau_registry *reg = NULL;
	char dir[512], path[600];
	int i, j;

	snprintf(path, sizeof(path), "%s/run.ktau", fx);
	CHECK(ktau_snap_load(path, &s, &reg) == 0, "run.ktau");
	snprintf(dir, sizeof(dir), "%s/ranks", tmpdir);
	CHECK(run_together(NRANKS, rank_write, &(struct rank_write){ dir, s, reg }) == 0,
	      "a rank failed to write");
	for (i = 0; i < NRANKS; i++)
		for (j = 0; j < 4; j++) {
			snprintf(path, sizeof(path), "%s/profile.%d.%s", dir, i, want[j]);
			if (check_tau_file(path, expect("run.expect", "getppid_per_thread"), -1))
				return 1;
		}
	/* Again (a second job): each rank replaces its own files only. */
	{
		struct ktau_tau_opts o = { .dense_processes = 1, .has_rank = 1, .rank = 2 };

		int fd, ret, status;
		pid_t pid;

		/* A process of its own: one that ran beside rank 2 may not replace it. */
		fflush(stdout);
		pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0)
			_exit(ktau_write_tau(dir, s, reg, &o) == 4 ? 0 : 1);
		CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
		      "rank 2 again");
		/* This process ran while rank 2's writer did: refused, nothing removed. */
		ret = ktau_write_tau(dir, s, reg, &o);
		CHECK(ret == -EEXIST && strstr(ktau_output_error(), "while this process ran"),
		      "rank 2 from a process that ran beside its writer: %d (%s)", ret,
		      ktau_output_error());
		snprintf(path, sizeof(path), "%s/profile.2.0.0", dir);
		CHECK(!access(path, F_OK), "the refused writer removed rank 2's files");
		snprintf(path, sizeof(path), "%s/profile.3.2.0", dir);
		CHECK(!access(path, F_OK), "rank 2 removed rank 3's files");
		/* Another process writing rank 2 right now (its manifest locked). */
		snprintf(path, sizeof(path), "%s/.ktau-written.kernel.2", dir);
		fd = open(path, O_RDONLY);
		CHECK(fd >= 0 && !flock(fd, LOCK_EX), "lock %s", path);
		ret = ktau_write_tau(dir, s, reg, &o);
		close(fd);
		CHECK(ret == -EBUSY && strstr(ktau_output_error(), "node 2"),
		      "two writers of rank 2 at once: %d (%s)", ret, ktau_output_error());
		snprintf(path, sizeof(path), "%s/profile.2.0.0", dir);
		CHECK(!access(path, F_OK), "the busy writer removed files");
	}
	keep_for_checker(dir, "ranks");
	ktau_snap_free(s);
	ktau_registry_free(reg);
	return 0;
}

/* The rank from the launchers' variables, and the output path templates. */
static int t_mpi_rank_templates(void)
{
	char host[256], want[600], *p;

	unsetenv("OMPI_COMM_WORLD_RANK");
	unsetenv("PMIX_RANK");
	unsetenv("PMI_RANK");
	unsetenv("SLURM_PROCID");
	CHECK(ktau_mpi_rank() == -1, "a rank outside a launcher");
	setenv("SLURM_PROCID", "0", 1);
	setenv("PMI_RANK", "5", 1);
	CHECK(ktau_mpi_rank() == 5, "PMI_RANK before SLURM_PROCID (mpirun in an allocation)");
	setenv("PMIX_RANK", "6", 1);
	CHECK(ktau_mpi_rank() == 6, "PMIX_RANK");
	setenv("OMPI_COMM_WORLD_RANK", "7", 1);
	CHECK(ktau_mpi_rank() == 7, "OMPI_COMM_WORLD_RANK first");
	setenv("OMPI_COMM_WORLD_RANK", "x7", 1);
	CHECK(ktau_mpi_rank() == 6, "a bad value is skipped");
	CHECK(gethostname(host, sizeof(host)) == 0, "hostname");
	p = ktau_output_path("out-%r/%h/%p-%%-%q");
	snprintf(want, sizeof(want), "out-6/%s/%d-%%-%%q", host, (int)getpid());
	CHECK(p && !strcmp(p, want), "'%s', not '%s'", p ? p : "(null)", want);
	free(p);
	unsetenv("PMIX_RANK");
	unsetenv("PMI_RANK");
	unsetenv("SLURM_PROCID");
	unsetenv("OMPI_COMM_WORLD_RANK");
	p = ktau_output_path("r%r");
	CHECK(p && !strcmp(p, "r0"), "%%r outside a launcher: '%s'", p ? p : "(null)");
	free(p);
	return 0;
}

/* A text file of this content: 0 when it has it. */
static int text_is(const char *path, const char *text)
{
	char buf[256];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strcmp(buf, text);
}

/*
 * Snapshot files replace only snapshot files (--save FILE); watch's never
 * replace anything (two watches in one directory).
 */
static int t_snap_save_no_replace(void)
{
	struct ktau_snap *s = NULL;
	struct ktau_registry *reg = NULL;
	char path[512], notes[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/process.ktau", fx);
	CHECK(ktau_snap_load(path, &s, &reg) == 0, "load");
	snprintf(notes, sizeof(notes), "%s/notes.txt", tmpdir);
	f = fopen(notes, "w");
	CHECK(f && fputs("my notes\n", f) >= 0 && !fclose(f), "notes");
	CHECK(ktau_snap_save(notes, s, reg) == -EEXIST, "a text file was replaced");
	CHECK(text_is(notes, "my notes\n") == 0, "the notes changed");
	snprintf(path, sizeof(path), "%s/snap-000000.ktau", tmpdir);
	CHECK(ktau_snap_save_new(path, s, reg) == 0, "save_new");
	CHECK(ktau_snap_save_new(path, s, reg) == -EEXIST, "save_new replaced a file");
	CHECK(ktau_snap_save(path, s, reg) == 0, "a snapshot file is replaced by save");
	snprintf(notes, sizeof(notes), "%s/snap-000000.ktau.tmp-%d", tmpdir, (int)getpid());
	CHECK(access(notes, F_OK), "a temporary file is left");
	ktau_snap_free(s);
	ktau_registry_free(reg);
	return 0;
}

/* Kernel time on the CPU and off it: the scheduler's two routines apart. */
static int t_on_off_cpu(void)
{
	struct ktau_func_stat e[] = {
		{ .id = KTAU_ID_SCHED_VOL, .count = 10, .incl_ns = 100, .excl_ns = 100 },
		{ .id = KTAU_ID_SCHED_INVOL, .count = 2, .incl_ns = 50, .excl_ns = 50 },
		{ .id = ID_GETPPID, .count = 7, .incl_ns = 9, .excl_ns = 7 },
		{ .id = KTAU_ID_IRQ, .count = 1, .incl_ns = 3, .excl_ns = 3 },
		{ .id = KTAU_ID_KVM_GUEST, .count = 4, .incl_ns = 1000, .excl_ns = 1000 },
	};
	struct ktau_task t = { .entries = e, .nentries = 5 };
	struct ktau_snap *s = fixture_snap("thread.bin");
	size_t i;

	CHECK(ktau_task_oncpu_excl(&t) == 10, "on CPU %llu",
	      (unsigned long long)ktau_task_oncpu_excl(&t));
	CHECK(ktau_task_offcpu(&t) == 150, "off CPU %llu", (unsigned long long)ktau_task_offcpu(&t));
	CHECK(ktau_task_guest(&t) == 1000, "guest %llu", (unsigned long long)ktau_task_guest(&t));
	CHECK(ktau_task_total_excl(&t) == 1160, "total");
	CHECK(KTAU_ID_IS_GUEST(KTAU_ID_KVM_GUEST) && !KTAU_ID_IS_GUEST(KTAU_ID_KVM_EXIT) &&
	      !KTAU_ID_IS_OFF_CPU(KTAU_ID_KVM_GUEST), "guest IDs");
	CHECK(KTAU_ID_IS_OFF_CPU(KTAU_ID_SCHED_VOL) && KTAU_ID_IS_OFF_CPU(KTAU_ID_SCHED_INVOL) &&
	      !KTAU_ID_IS_OFF_CPU(KTAU_ID_IRQ) && !KTAU_ID_IS_OFF_CPU(ID_GETPPID), "off-CPU IDs");
	CHECK(s, "fixture");
	for (i = 0; i < s->ntasks; i++)
		CHECK(ktau_task_oncpu_excl(&s->tasks[i]) + ktau_task_offcpu(&s->tasks[i]) ==
		      ktau_task_total_excl(&s->tasks[i]), "task %zu: on + off != total", i);
	ktau_snap_free(s);
	return 0;
}

static const struct host_test tests[] = {
	{ "on_off_cpu", t_on_off_cpu },
	{ "registry_fixture", t_registry_fixture },
	{ "registry_renumber", t_registry_renumber },
	{ "registry_rejects_bad", t_registry_rejects_bad },
	{ "decode_process", t_decode_process },
	{ "decode_abi_1_0", t_decode_abi_1_0 },
	{ "decode_truncated", t_decode_truncated },
	{ "decode_garbled", t_decode_garbled },
	{ "encode_roundtrip", t_encode_roundtrip },
	{ "sum_threads", t_sum_threads },
	{ "diff", t_diff },
	{ "diff_reset_and_accumulate", t_diff_reset_and_accumulate },
	{ "snapfile", t_snapfile },
	{ "snapfile_wall_boot", t_snapfile_wall_boot },
	{ "tau_threads", t_tau_threads },
	{ "tau_run_dense", t_tau_run_dense },
	{ "tau_escaping", t_tau_escaping },
	{ "json", t_json },
	{ "folded", t_folded },
	{ "watch_series", t_watch_series },
	{ "sample_parse", t_sample_parse },
	{ "sample_decode", t_sample_decode },
	{ "ksyms", t_ksyms },
	{ "usyms_self", t_usyms_self },
	{ "usyms_deleted", t_usyms_deleted },
	{ "usyms_perf_map", t_usyms_perf_map },
	{ "sample_profile_folded", t_sample_profile_folded },
	{ "tau_samples", t_tau_samples },
	{ "sample_lines", t_sample_lines },
	{ "snap_samples", t_snap_samples },
	{ "tau_rows", t_tau_rows },
	{ "tau_ranks_concurrent", t_tau_ranks_concurrent },
	{ "mpi_rank_templates", t_mpi_rank_templates },
	{ "snap_save_no_replace", t_snap_save_no_replace },
};

int main(int argc, char **argv)
{
	const struct host_test *t;
	char cmd[300];
	int ret;

	if (argc == 4 && !strcmp(argv[1], "--other-boot"))
		return other_boot_copy(argv[2], argv[3]);
	/* The process of usyms_deleted whose program file is replaced. */
	if (argc == 2 && !strcmp(argv[1], "--usyms-child")) {
		printf("%lx\n", (unsigned long)(uintptr_t)ktau_test_sampled_function);
		fflush(stdout);
		pause();
		return 0;
	}
	/* Names of addresses of a live process (c_sample_names_dwfl). */
	if (argc >= 3 && !strcmp(argv[1], "--usyms-name")) {
		struct ktau_usyms *u;
		char name[512];
		int i;

		if (ktau_usyms_open(atoi(argv[2]), &u))
			return 1;
		for (i = 3; i < argc; i++) {
			ktau_usyms_name(u, strtoull(argv[i], NULL, 16), name, sizeof(name));
			printf("%s\n", name);
		}
		ktau_usyms_free(u);
		return 0;
	}
	/*
	 * Samples of a live process per source line (c_sample_lines_dwfl):
	 * one sample at each address, a profile with KTAU_LIB_PROFILE_LINES
	 * written as TAU directory DIR; prints each place's name.
	 */
	if (argc >= 4 && !strcmp(argv[1], "--sample-lines")) {
		struct ktau_func_stat e = { KTAU_ID_USER, 0, 0, 0, argc - 4 };
		struct ktau_task t = { .tid = atoi(argv[2]), .pid = atoi(argv[2]),
				       .nthreads = 1, .comm = "dwp", .nentries = 1,
				       .entries = &e };
		struct ktau_snap s = { .ntasks = 1, .tasks = &t };
		struct ktau_sample_profile *p = ktau_sample_profile_new();
		struct ktau_tau_opts o = { .sample_metric = "cpu-clock", .samples = p };
		const struct ktau_sample_place *pl;
		struct ktau_sample_rec r = { .id = KTAU_ID_USER, .user = 1, .tid = t.tid,
					     .pid = t.pid };
		struct ktau_usyms *u;
		size_t n;
		int i;

		if (!p || ktau_sample_profile_set_flags(p, KTAU_LIB_PROFILE_LINES) ||
		    ktau_usyms_open(t.pid, &u))
			return 1;
		for (i = 4; i < argc; i++) {
			r.ip = strtoull(argv[i], NULL, 16);
			if (ktau_sample_profile_add_samples(p, &r, 1, u, NULL))
				return 1;
		}
		pl = ktau_sample_profile_places(p, &n);
		for (i = 0; i < (int)n; i++)
			printf("%s\n", pl[i].sym);
		ret = ktau_write_tau(argv[3], &s, NULL, &o) == 1 ? 0 : 1;
		ktau_usyms_free(u);
		ktau_sample_profile_free(p);
		return ret;
	}
	ret = test_args(argc, argv, tests, NTESTS(tests), "FIXTURE-DIR");
	if (ret >= 0)
		return ret;
	fx = argv[2];
	if (access(fx, R_OK)) {
		printf("# no fixtures at %s\n", fx);
		return 77;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ktau-host-tests.XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	t = test_find(tests, NTESTS(tests), argv[1]);
	if (!t)
		return 2;
	ret = t->fn();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		ret = ret ? ret : 1;
	return ret;
}
