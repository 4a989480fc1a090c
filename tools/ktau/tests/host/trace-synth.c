// SPDX-License-Identifier: GPL-2.0
/*
 * ktau-trace-synth: raw trace files with known content, for the host
 * tests of trace mode (no kernel needed). Each is written through
 * libktau's raw file writer, as ktaud trace writes them, with a profile
 * that matches the trace exactly (as the kernel's would):
 *
 *   ktau-trace-synth nest FILE      two processes, three threads: nesting
 *                                   (a syscall with an interrupt, a softirq
 *                                   in it, a blocked stay), a recursive
 *                                   interrupt, an event, calls split over
 *                                   chunks, a thread that exited, [other]
 *                                   in [other]
 *   ktau-trace-synth lost FILE      the same, and a thread that lost records
 *   ktau-trace-synth badcount FILE  nest with one call count of the profile
 *                                   wrong (the check must fail)
 *   ktau-trace-synth badtime FILE   nest with one inclusive time of the
 *                                   profile 100 ns off (the check must fail)
 *   ktau-trace-synth overlap FILE   a call that ends after the call it is in
 *                                   (cut at the end of its parent: the
 *                                   times no longer match the profile)
 *   ktau-trace-synth rank FILE R    nest as MPI rank R
 *   ktau-trace-synth big FILE N     4 threads of N calls each (a read with
 *                                   an interrupt in every 4th), for timing
 *   ktau-trace-synth user FILE U... nest and the user routines that
 *                                   libktau's runtime wrote (KTAU_TRACE_USER)
 *                                   into the files U
 *   ktau-trace-synth samples FILE   nest with samples (raw file version 3):
 *                                   event "cpu-clock:1000000", threads 100
 *                                   (4 samples: kernel and user, named and
 *                                   not, two at one time; 1 lost of 6
 *                                   taken), 101 (none) and 200 (2)
 *   ktau-trace-synth samples-late FILE  the same, the event set only after
 *                                   the file was started (the writer makes
 *                                   room in the header): the same bytes
 *   ktau-trace-synth samples-bad FILE  samples with a time going back: the
 *                                   writer refuses them (exit 1)
 *   ktau-trace-synth samples-unfinished FILE  samples' file whose writer
 *                                   stopped after the chunks (no finish)
 *   ktau-trace-synth samples-reuse FILE  nest and tid 200 again (pid 200,
 *                                   "again", from 16000 ns) after the first
 *                                   exited; sampled: 100 (samples at the
 *                                   time of an Enter: 1000 in read and in
 *                                   user mode, 8000 in user mode and in
 *                                   write), both tids 200 (4150, 5500 and
 *                                   16000 in page_fault_user, 17500)
 *   ktau-trace-synth dump FILE      read FILE with the library; print its
 *                                   version, records and samples (one line
 *                                   each: the event, threads, samples)
 *   ktau-trace-synth rewrite IN OUT read IN, write it again as ktaud trace
 *                                   --merge does (start, the threads'
 *                                   records, finish)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libktau.h"

#define ID_OTHER	1	/* "[other]": calls without a slot */
#define ID_IRQ		2
#define ID_BLOCKED	3
#define ID_FAULT	5
#define ID_SOFTIRQ	17	/* softirq_TIMER */
#define ID_EVENT	40	/* a dynamic point */
#define ID_READ		32
#define ID_WRITE	33

static const char functions[] =
	"# id group name\n"
	"1 dynamic [other]\n"
	"2 irq irq\n"
	"3 sched sched_blocked\n"
	"5 fault page_fault_user\n"
	"17 softirq softirq_TIMER\n"
	"32 syscall read\n"
	"33 syscall write\n"
	"40 dynamic my_event\n";

struct rec {
	uint64_t s, e;
	uint32_t id;
	uint16_t depth;
	uint8_t kind;
};

struct thr {
	int tid, pid;
	const char *comm;
	uint32_t flags;
	uint64_t lost;
	size_t n;
	struct rec r[64];
};

static void add(struct thr *t, uint64_t s, uint64_t e, uint32_t id, int depth, int kind)
{
	t->r[t->n++] = (struct rec){ s, e, id, (uint16_t)depth, (uint8_t)kind };
}

/* Records in the order the calls end (a parent after its children). */
static int cmp_end(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	if (x->e != y->e)
		return x->e < y->e ? -1 : 1;
	return x->depth > y->depth ? -1 : x->depth < y->depth;
}

static int put_chunk(struct ktau_trace_file *tf, const struct thr *t, size_t from, size_t to,
		     uint32_t flags)
{
	struct ktau_trace_record r[64];
	struct ktau_trace_thread th = { .tid = t->tid, .pid = t->pid, .lost = t->lost,
					.nrecs = t->n, .recs = r };
	size_t i;

	strncpy(th.comm, t->comm, 15);
	memset(r, 0, sizeof(r));
	for (i = 0; i < t->n; i++) {
		r[i].start_ns = t->r[i].s;
		r[i].end_ns = t->r[i].e;
		r[i].id = t->r[i].id;
		r[i].depth = t->r[i].depth;
		r[i].kind = t->r[i].kind;
	}
	return ktau_trace_file_append_thread(tf, &th, from, to, flags);
}

/*
 * The profile of a thread: counts and outermost inclusive times; for
 * [other], every call's (its nested calls are of other routines).
 */
static void profile_of(const struct thr *t, struct ktau_task *task, struct ktau_func_stat *e)
{
	size_t i, j, n = 0;

	memset(task, 0, sizeof(*task));
	task->tid = t->tid;
	task->pid = t->pid;
	task->nthreads = 1;
	task->flags = t->flags & KTAU_LIB_TRACE_EXITED ? KTAU_TASK_EXITED : 0;
	strncpy(task->comm, t->comm, 15);
	task->start_ns = 1;
	for (i = 0; i < t->n; i++) {
		const struct rec *r = &t->r[i];
		int outer = 1;

		if (r->kind != KTAU_LIB_TRACE_CALL)
			continue;
		for (j = 0; j < t->n && r->id != ID_OTHER; j++)
			if (j != i && t->r[j].id == r->id && t->r[j].kind == KTAU_LIB_TRACE_CALL &&
			    t->r[j].s <= r->s && t->r[j].e >= r->e && t->r[j].depth < r->depth)
				outer = 0;
		for (j = 0; j < n; j++)
			if (e[j].id == r->id)
				break;
		if (j == n) {
			memset(&e[n], 0, sizeof(e[n]));
			e[n++].id = r->id;
		}
		e[j].count++;
		if (outer)
			e[j].incl_ns += r->e - r->s;
	}
	for (j = 0; j < n; j++)
		e[j].excl_ns = e[j].incl_ns;	/* not checked */
	/* Sorted by id, as the library keeps entries. */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && e[j - 1].id > e[j].id; j--) {
			struct ktau_func_stat x = e[j];

			e[j] = e[j - 1];
			e[j - 1] = x;
		}
	task->nentries = n;
	task->entries = e;
}

/* t's samples: copies of st[nst] and s[ns], and the two names, at cpu-clock:1ms. */
static int set_samples(struct ktau_trace *t, const struct ktau_trace_sthread *st, size_t nst,
		       const struct ktau_trace_sample *s, size_t ns, const char *const names[2])
{
	size_t i;

	strcpy(t->sample_event, "cpu-clock:1000000");
	t->sthreads = malloc(nst * sizeof(*st));
	t->samples = malloc(ns * sizeof(*s));
	t->sample_names = calloc(2, sizeof(*t->sample_names));
	if (!t->sthreads || !t->samples || !t->sample_names)
		return -1;
	memcpy(t->sthreads, st, nst * sizeof(*st));
	t->nsthreads = nst;
	memcpy(t->samples, s, ns * sizeof(*s));
	t->nsamples = ns;
	for (i = 0; i < 2; i++)
		if (!(t->sample_names[t->nsample_names++] = strdup(names[i])))
			return -1;
	return 0;
}

/* The samples of "samples": see the top. */
static int add_samples(struct ktau_trace *t)
{
	static const struct ktau_trace_sthread st[] = {
		{ .tid = 100, .pid = 100, .start_ns = 500, .end_ns = 15000, .taken = 6, .lost = 1,
		  .first = 0, .n = 4 },
		{ .tid = 101, .pid = 100, .start_ns = 1000, .end_ns = 9000 },
		{ .tid = 200, .pid = 200, .start_ns = 4000, .end_ns = 6000, .taken = 2, .first = 4,
		  .n = 2 },
	};
	static const struct ktau_trace_sample s[] = {
		{ 0xffffffff81234567ull, 1200, ID_READ, 0, 0 },
		{ 0x401000, 5500, 10, 1, 1 },
		{ 0x401234, 5500, 10, 1, UINT32_MAX },
		{ 0, 8500, ID_WRITE, 0, UINT32_MAX },	/* an address hidden */
		{ 0x400800, 4150, 10, 1, 1 },	/* between the fault and the write */
		{ 0xffffffff81234567ull, 4300, ID_WRITE, 0, 0 },
	};
	static const char *const names[] = { "ksys_read", "main" };

	t->sample_flags = KTAU_LIB_SAMPLE_OVERWRITE;
	return set_samples(t, st, sizeof(st) / sizeof(st[0]), s, sizeof(s) / sizeof(s[0]), names);
}

/*
 * The samples of "samples-reuse" (see the top): tid 200 sampled twice,
 * once per thread of that tid, each in its thread's time.
 */
static int add_reuse_samples(struct ktau_trace *t)
{
	static const struct ktau_trace_sthread st[] = {
		{ .tid = 100, .pid = 100, .start_ns = 500, .end_ns = 15000, .taken = 4,
		  .first = 0, .n = 4 },
		{ .tid = 200, .pid = 200, .start_ns = 3900, .end_ns = 6100, .taken = 2, .first = 4,
		  .n = 2 },
		{ .tid = 200, .pid = 200, .start_ns = 15500, .end_ns = 19000, .taken = 2, .first = 6,
		  .n = 2 },
	};
	static const struct ktau_trace_sample s[] = {
		/* At read's Enter: in read (after it), in user mode (before). */
		{ 0xffffffff81000001ull, 1000, ID_READ, 0, UINT32_MAX },
		{ 0x401000, 1000, 10, 1, 1 },
		/* At write's Enter: in user mode (before), in write (after). */
		{ 0x401100, 8000, 10, 1, 1 },
		{ 0xffffffff81000002ull, 8000, ID_WRITE, 0, 0 },
		{ 0x400800, 4150, 10, 1, 1 },
		{ 0, 5500, ID_OTHER, 0, UINT32_MAX },
		{ 0xffffffff81000003ull, 16000, ID_FAULT, 0, UINT32_MAX },
		{ 0x400900, 17500, 10, 1, 1 },
	};
	static const char *const names[] = { "ksys_write", "main" };

	return set_samples(t, st, sizeof(st) / sizeof(st[0]), s, sizeof(s) / sizeof(s[0]), names);
}

static void nest(struct thr *th, size_t *nth)
{
	struct thr *a = &th[0], *b = &th[1], *c = &th[2];

	*nth = 3;
	memset(th, 0, 3 * sizeof(*th));
	*a = (struct thr){ .tid = 100, .pid = 100, .comm = "main" };
	add(a, 1000, 5000, ID_READ, 0, KTAU_LIB_TRACE_CALL);
	add(a, 2000, 2500, ID_IRQ, 1, KTAU_LIB_TRACE_CALL);
	add(a, 2100, 2400, ID_SOFTIRQ, 2, KTAU_LIB_TRACE_CALL);
	add(a, 3000, 4500, ID_BLOCKED, 1, KTAU_LIB_TRACE_CALL);
	add(a, 6000, 6500, ID_FAULT, 0, KTAU_LIB_TRACE_CALL);
	add(a, 7000, 7000, ID_EVENT, 0, KTAU_LIB_TRACE_EVENT);
	add(a, 8000, 9000, ID_WRITE, 0, KTAU_LIB_TRACE_CALL);
	/* An interrupt in an interrupt; and two calls that start together. */
	add(a, 10000, 12000, ID_IRQ, 0, KTAU_LIB_TRACE_CALL);
	add(a, 10500, 11000, ID_IRQ, 1, KTAU_LIB_TRACE_CALL);
	add(a, 13000, 14000, ID_WRITE, 0, KTAU_LIB_TRACE_CALL);
	add(a, 13000, 13500, ID_FAULT, 1, KTAU_LIB_TRACE_CALL);
	*b = (struct thr){ .tid = 101, .pid = 100, .comm = "worker" };
	add(b, 1500, 2500, ID_WRITE, 0, KTAU_LIB_TRACE_CALL);
	add(b, 2600, 2600, ID_EVENT, 0, KTAU_LIB_TRACE_EVENT);
	add(b, 3000, 8000, ID_READ, 0, KTAU_LIB_TRACE_CALL);
	add(b, 3100, 7900, ID_BLOCKED, 1, KTAU_LIB_TRACE_CALL);
	*c = (struct thr){ .tid = 200, .pid = 200, .comm = "child", .flags = KTAU_LIB_TRACE_EXITED };
	add(c, 4000, 4100, ID_FAULT, 0, KTAU_LIB_TRACE_CALL);
	add(c, 4200, 4900, ID_WRITE, 0, KTAU_LIB_TRACE_CALL);
	/* [other] in [other]: a fault in a system call, neither with a slot. */
	add(c, 5000, 6000, ID_OTHER, 0, KTAU_LIB_TRACE_CALL);
	add(c, 5200, 5400, ID_OTHER, 1, KTAU_LIB_TRACE_CALL);
}

/* big: 4 threads, n reads each, an irq in every 4th; profile to match. */
static int big(const char *path, long n)
{
	struct ktau_trace *t = ktau_trace_new();
	struct ktau_trace_thread th = { 0 };
	struct ktau_trace_file *tf;
	struct ktau_func_stat e[2];
	struct ktau_task task;
	size_t k, per = (size_t)n + (size_t)n / 4, chunk = 65536;
	long i;
	int fd, ret = 0, tn;

	th.recs = calloc(per + 1, sizeof(*th.recs));
	if (!t || !th.recs || ktau_registry_parse(functions, strlen(functions), &t->reg)) {
		free(th.recs);
		ktau_trace_free(t);
		return 1;
	}
	t->profile = ktau_snap_new();
	t->kernel_profile = 1;
	strcpy(t->hostname, "synth");
	strcpy(t->command, "synth big");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ktau_trace_file_start(fd, t, &tf))
		return 1;
	for (tn = 0; tn < 4 && !ret; tn++) {
		uint64_t at = 1000 + (uint64_t)tn * 7, rd = 0, irq = 0, irqns = 0;

		th.tid = 300 + tn;
		th.pid = 300;
		snprintf(th.comm, sizeof(th.comm), "big-%d", tn);
		th.nrecs = 0;
		for (i = 0; i < n; i++) {
			if (i % 4 == 3) {
				th.recs[th.nrecs++] = (struct ktau_trace_record){ at + 100, at + 150,
										   ID_IRQ, 1,
										   KTAU_LIB_TRACE_CALL, 0 };
				irq++;
				irqns += 50;
			}
			th.recs[th.nrecs++] = (struct ktau_trace_record){ at, at + 400, ID_READ, 0,
									   KTAU_LIB_TRACE_CALL, 0 };
			rd++;
			at += 1000;
		}
		for (k = 0; k < th.nrecs && !ret; k += chunk)
			ret = ktau_trace_file_append_thread(tf, &th, k, k + chunk < th.nrecs ?
							    k + chunk : th.nrecs, 0);
		memset(&task, 0, sizeof(task));
		memset(e, 0, sizeof(e));
		task.tid = th.tid;
		task.pid = th.pid;
		task.nthreads = 1;
		memcpy(task.comm, th.comm, sizeof(task.comm));
		e[0] = (struct ktau_func_stat){ ID_IRQ, irq, irqns, irqns, 0 };
		e[1] = (struct ktau_func_stat){ ID_READ, rd, rd * 400, rd * 400 - irqns, 0 };
		task.entries = e;
		task.nentries = irq ? 2 : 1;
		if (!irq)
			task.entries = &e[1];
		ret = ret ? ret : ktau_snap_add_task(t->profile, &task);
	}
	if (!ret)
		ret = ktau_trace_file_finish(tf, t);
	free(th.recs);
	ktau_trace_free(t);
	return ret || close(fd);
}

/* dump FILE: what the library reads of a raw file. */
static int dump(const char *path)
{
	struct ktau_trace *t;
	size_t i, k;

	if (ktau_trace_load(path, &t)) {
		fprintf(stderr, "%s: %s\n", path, ktau_trace_error());
		return 1;
	}
	printf("threads %zu records %llu truncated %d cuts %zu\n", t->nthreads,
	       (unsigned long long)t->nrecs, t->truncated, t->ncuts);
	printf("event '%s' flags %#x threads %zu samples %zu names %zu\n", t->sample_event,
	       t->sample_flags, t->nsthreads, t->nsamples, t->nsample_names);
	for (i = 0; i < t->nsthreads; i++) {
		const struct ktau_trace_sthread *st = &t->sthreads[i];

		printf("sthread %d pid %d [%llu, %llu] taken %llu lost %llu first %zu n %zu\n", st->tid,
		       st->pid, (unsigned long long)st->start_ns, (unsigned long long)st->end_ns,
		       (unsigned long long)st->taken, (unsigned long long)st->lost, st->first, st->n);
		for (k = st->first; k < st->first + st->n; k++) {
			const struct ktau_trace_sample *s = &t->samples[k];

			printf("  sample %#llx at %llu id %u %s %s\n", (unsigned long long)s->ip,
			       (unsigned long long)s->time_ns, s->id, s->user ? "user" : "kernel",
			       s->name == UINT32_MAX ? "-" : t->sample_names[s->name]);
		}
	}
	ktau_trace_free(t);
	return 0;
}

/* rewrite IN OUT: read and write again through the library. */
static int rewrite(const char *in, const char *out)
{
	struct ktau_trace_file *tf;
	struct ktau_trace *t;
	int fd, ret;

	if (ktau_trace_load(in, &t)) {
		fprintf(stderr, "%s: %s\n", in, ktau_trace_error());
		return 1;
	}
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ret = fd < 0 ? -errno : ktau_trace_file_start(fd, t, &tf);
	if (!ret)
		ret = ktau_trace_file_append_trace(tf, t);
	if (!ret)
		ret = ktau_trace_file_finish(tf, t);
	if (ret)
		fprintf(stderr, "%s: %s\n", out, *ktau_trace_error() ? ktau_trace_error() :
			strerror(-ret));
	ktau_trace_free(t);
	return ret || close(fd);
}

int main(int argc, char **argv)
{
	static struct thr th[8], again;
	static struct ktau_func_stat ents[8][64];
	struct ktau_trace *t = ktau_trace_new();
	struct ktau_trace_file *tf;
	struct ktau_task task;
	size_t nth = 0, i;
	const char *what, *path;
	int fd, ret, rank = -1;

	if (argc < 3 || !t) {
		fprintf(stderr, "usage: %s nest|lost|badcount|badtime|overlap|rank|samples|dump FILE "
			"[RANK]\n", argv[0]);
		return 2;
	}
	what = argv[1];
	path = argv[2];
	if (!strcmp(what, "rank")) {
		if (argc != 4)
			return 2;
		rank = atoi(argv[3]);
	}
	if (!strcmp(what, "user") && argc < 4)
		return 2;
	if (!strcmp(what, "big"))
		return argc == 4 ? big(path, atol(argv[3])) : 2;
	if (!strcmp(what, "dump"))
		return dump(path);
	if (!strcmp(what, "rewrite"))
		return argc == 4 ? rewrite(path, argv[3]) : 2;
	nest(th, &nth);
	if (!strcmp(what, "lost")) {
		struct thr *d = &th[nth++];

		*d = (struct thr){ .tid = 102, .pid = 100, .comm = "lossy", .lost = 7 };
		add(d, 1000, 1500, ID_WRITE, 0, KTAU_LIB_TRACE_CALL);
		add(d, 1600, 1700, ID_READ, 0, KTAU_LIB_TRACE_CALL);
		/* 7 calls lost: the first ended at 2000, the last at 9000. */
		add(d, 2000, 9000, 7, 0, KTAU_LIB_TRACE_LOST);
		add(d, 9500, 9900, ID_WRITE, 0, KTAU_LIB_TRACE_CALL);
	} else if (!strcmp(what, "overlap")) {
		/* The fault "ends" after the write it is in. */
		th[0].r[th[0].n - 1].e = 14200;
	} else if (!strcmp(what, "samples") || !strcmp(what, "samples-bad") ||
		   !strcmp(what, "samples-unfinished")) {
		if (add_samples(t))
			return 1;
		if (!strcmp(what, "samples-bad"))
			t->samples[1].time_ns = 1100;
	} else if (!strcmp(what, "samples-reuse")) {
		/* Not in the profile: the kernel's would hold one tid 200. */
		again = (struct thr){ .tid = 200, .pid = 200, .comm = "again",
				      .flags = KTAU_LIB_TRACE_EXITED };
		add(&again, 16000, 16500, ID_FAULT, 0, KTAU_LIB_TRACE_CALL);
		add(&again, 17000, 18000, ID_WRITE, 0, KTAU_LIB_TRACE_CALL);
		if (add_reuse_samples(t))
			return 1;
	} else if (strcmp(what, "nest") && strcmp(what, "badcount") && strcmp(what, "badtime") &&
		   strcmp(what, "rank") && strcmp(what, "user") && strcmp(what, "samples-late")) {
		fprintf(stderr, "%s: unknown case %s\n", argv[0], what);
		return 2;
	}
	t->start_ns = 500;
	t->end_ns = 20000;
	t->realtime_ns = 1700000000000000000ULL;
	t->rank = rank;
	strcpy(t->hostname, "synth");
	strcpy(t->release, "6.12.0-ktau");
	snprintf(t->command, sizeof(t->command), "synth %s", what);
	if (ktau_registry_parse(functions, strlen(functions), &t->reg))
		return 1;
	t->profile = ktau_snap_new();
	t->kernel_profile = 1;
	for (i = 0; i < nth; i++) {
		profile_of(&th[i], &task, ents[i]);
		if (!strcmp(what, "badcount") && i == 0)
			ents[i][0].count++;
		if (!strcmp(what, "badtime") && i == 1)
			ents[i][0].incl_ns += 100;
		if (ktau_snap_add_task(t->profile, &task))
			return 1;
		t->stats.records += th[i].n;
		t->stats.lost += th[i].lost;
	}
	t->stats.tasks = nth;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ktau_trace_file_start(fd, t, &tf)) {
		perror(path);
		return 1;
	}
	ret = 0;
	if (!strcmp(what, "samples-late")) {
		if (add_samples(t))
			return 1;
		/* The same bytes as "samples". */
		memset(t->command, 0, sizeof(t->command));
		strcpy(t->command, "synth samples");
	}
	/* Two chunks per thread, in two reads: a drain does not wait for
	 * whole calls. */
	for (i = 0; i < nth && !ret; i++) {
		qsort(th[i].r, th[i].n, sizeof(th[i].r[0]), cmp_end);
		ret = put_chunk(tf, &th[i], 0, th[i].n / 2, 0);
	}
	for (i = 0; i < nth && !ret; i++)
		ret = put_chunk(tf, &th[i], th[i].n / 2, th[i].n, th[i].flags);
	/* Tid 200 again, once the first has exited: a thread of its own. */
	if (!ret && again.n)
		ret = put_chunk(tf, &again, 0, again.n, again.flags);
	if (!ret && !strcmp(what, "samples-unfinished")) {
		ktau_trace_free(t);
		return close(fd) ? 1 : 0;	/* as a writer that was killed */
	}
	/* The user routines: their own threads (other tids), as read. */
	for (i = 3; !ret && !strcmp(what, "user") && i < (size_t)argc; i++) {
		FILE *f = fopen(argv[i], "r");
		static char ubuf[1 << 20];
		size_t n = f ? fread(ubuf, 1, sizeof(ubuf), f) : 0;

		if (f)
			fclose(f);
		ret = ktau_trace_add_user(t, ubuf, n);
		if (ret)
			fprintf(stderr, "%s: %s: %s\n", argv[0], argv[i], ktau_trace_error());
	}
	if (!ret)
		ret = ktau_trace_file_finish(tf, t);
	if (ret || close(fd)) {
		fprintf(stderr, "%s: cannot write %s: %s\n", argv[0], path,
			ret && *ktau_trace_error() ? ktau_trace_error() : strerror(ret ? -ret : errno));
		return 1;
	}
	ktau_trace_free(t);
	return 0;
}
