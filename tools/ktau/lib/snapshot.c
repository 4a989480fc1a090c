// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: snapshots through /proc/ktau/profiles, the strict decoder of the
 * binary records, and the operations on snapshots (diff, sum, accumulate).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <linux/ktau.h>

#include "libktau.h"
#include "internal.h"
#include "sample-internal.h"

#define SNAP_BUF_INIT	(256 << 10)
#define SNAP_TRIES	8
#define REC_HDR_SIZE	sizeof(struct ktau_task_rec)	/* 72 in ABI 1.0 */
#define KNOWN_REC_FLAGS	(KTAU_REC_AGGREGATE | KTAU_REC_EXITED | KTAU_REC_KTHREAD)

_Static_assert(sizeof(struct ktau_task_rec) == 72, "ABI 1.0 record header");
_Static_assert(sizeof(struct ktau_entry) == 32, "ABI 1.0 entry");
_Static_assert(KTAU_LIB_SELF == KTAU_SNAP_SELF && KTAU_LIB_PIDS == KTAU_SNAP_PIDS &&
	       KTAU_LIB_ALL == KTAU_SNAP_ALL && KTAU_LIB_AGGREGATE == KTAU_SNAP_AGGREGATE &&
	       KTAU_LIB_PROCESS == KTAU_SNAP_PROCESS, "selectors are the ABI's");

struct ktau {
	int fd;
	char *buf;
	size_t cap;
	unsigned long nioctls;
};

int ktau_open(struct ktau **kp)
{
	unsigned int major, minor;
	struct ktau *k;
	int ret;

	*kp = NULL;
	ret = ktau_abi_version(&major, &minor);
	if (ret)
		return ret;
	if (major != KTAU_ABI_VERSION_MAJOR)
		return -EPROTO;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->fd = open(KTAU_PATH_PROFILES, O_RDONLY | O_CLOEXEC);
	if (k->fd < 0) {
		ret = -errno;
		free(k);
		return ret;
	}
	*kp = k;
	return 0;
}

void ktau_close(struct ktau *k)
{
	if (!k)
		return;
	close(k->fd);
	free(k->buf);
	free(k);
}

unsigned long ktau_nr_ioctls(const struct ktau *k)
{
	return k->nioctls;
}

int ktau__fd(const struct ktau *k)
{
	return k->fd;
}

static int reserve(struct ktau *k, size_t cap)
{
	char *nbuf;

	if (cap <= k->cap)
		return 0;
	nbuf = realloc(k->buf, cap);
	if (!nbuf)
		return -ENOMEM;
	k->buf = nbuf;
	k->cap = cap;
	return 0;
}

/* The boot this runs in, as the kernel names it ("" if it does not). */
static void fill_boot_id(char *id, size_t size)
{
	char *text = NULL;
	size_t n = 0;

	if (!ktau__slurp("/proc/sys/kernel/random/boot_id", &text, &n))
		n = strcspn(text, "\n ");
	if (n >= size)
		n = size - 1;
	if (n)
		memcpy(id, text, n);
	id[n] = '\0';
	free(text);
}

void ktau_snap_fill_host(struct ktau_snap *s)
{
	struct utsname u;
	size_t n;

	fill_boot_id(s->boot_id, sizeof(s->boot_id));
	if (uname(&u))
		return;

	n = strnlen(u.nodename, sizeof(s->hostname) - 1);
	memcpy(s->hostname, u.nodename, n);
	s->hostname[n] = '\0';
	n = strnlen(u.release, sizeof(s->release) - 1);
	memcpy(s->release, u.release, n);
	s->release[n] = '\0';
}

/* CLOCK_REALTIME at CLOCK_MONOTONIC @mono, from a pair read now. */
static uint64_t wall_at(uint64_t mono)
{
	struct timespec r, m;
	uint64_t rn, mn;

	if (clock_gettime(CLOCK_MONOTONIC, &m) || clock_gettime(CLOCK_REALTIME, &r))
		return 0;
	mn = (uint64_t)m.tv_sec * 1000000000u + (uint64_t)m.tv_nsec;
	rn = (uint64_t)r.tv_sec * 1000000000u + (uint64_t)r.tv_nsec;
	return mono <= mn && mn - mono < rn ? rn - (mn - mono) : rn;
}

int ktau_snapshot(struct ktau *k, unsigned int flags, const pid_t *pids,
		  size_t npids, struct ktau_snap **out)
{
	struct ktau_snapshot req;
	struct ktau_snap *s = NULL;
	int ret = -ENOSPC, tries;

	*out = NULL;
	if (npids > KTAU_SNAP_MAX_PIDS)
		return -E2BIG;
	for (tries = 0; tries < SNAP_TRIES && ret == -ENOSPC; tries++) {
		ret = reserve(k, k->cap ? k->cap : SNAP_BUF_INIT);
		if (ret)
			return ret;
		memset(&req, 0, sizeof(req));
		req.size = sizeof(req);
		req.flags = flags;
		req.pids = (uintptr_t)pids;
		req.npids = npids;
		req.buf = (uintptr_t)k->buf;
		req.buf_size = k->cap;
		k->nioctls++;
		ret = ioctl(k->fd, KTAU_IOC_SNAPSHOT, &req) ? -errno : 0;
		if (ret == -ENOSPC) {
			/* Tasks may be born before the retry: add a margin. */
			if (req.used > (1ULL << 32))
				return -EOVERFLOW;
			ret = reserve(k, req.used + req.used / 2 + (64 << 10));
			if (ret)
				return ret;
			ret = -ENOSPC;
		}
	}
	if (ret)
		return ret;
	if (req.used > req.buf_size)
		return -EBADMSG;
	ret = ktau_decode(k->buf, req.used, &s);
	if (ret < 0)
		return ret;
	if (s->ntasks != req.ntasks) {
		ktau_snap_free(s);
		return -EBADMSG;
	}
	s->time_ns = req.time_ns;
	s->nmissing = req.nmissing;
	s->wall_ns = wall_at(req.time_ns);
	ktau_snap_fill_host(s);
	*out = s;
	return 0;
}

/* ---- snapshots in memory ---- */

struct ktau_snap *ktau_snap_new(void)
{
	return calloc(1, sizeof(struct ktau_snap));
}

void ktau__task_release(struct ktau_task *t)
{
	free(t->entries);
	t->entries = NULL;
	t->nentries = 0;
}

void ktau_snap_free(struct ktau_snap *snap)
{
	size_t i;

	if (!snap)
		return;
	for (i = 0; i < snap->ntasks; i++)
		ktau__task_release(&snap->tasks[i]);
	free(snap->tasks);
	free(snap);
}

/* Room for one more task; returns it zeroed, or NULL. */
static struct ktau_task *snap_push(struct ktau_snap *s)
{
	struct ktau_task *nt;
	size_t cap = s->ntasks ? s->ntasks : 0;

	/* Grow in powers of two: capacity is implied by ntasks. */
	if (!(s->ntasks & (s->ntasks - 1)) || !s->ntasks) {
		cap = s->ntasks ? s->ntasks * 2 : 4;
		if (cap < 4)
			cap = 4;
		nt = realloc(s->tasks, cap * sizeof(*nt));
		if (!nt)
			return NULL;
		s->tasks = nt;
	}
	nt = &s->tasks[s->ntasks++];
	memset(nt, 0, sizeof(*nt));
	return nt;
}

int ktau_snap_add_task(struct ktau_snap *snap, const struct ktau_task *t)
{
	struct ktau_task *nt;
	struct ktau_func_stat *e = NULL;

	if (t->nentries) {
		e = malloc(t->nentries * sizeof(*e));
		if (!e)
			return -ENOMEM;
		memcpy(e, t->entries, t->nentries * sizeof(*e));
	}
	nt = snap_push(snap);
	if (!nt) {
		free(e);
		return -ENOMEM;
	}
	*nt = *t;
	nt->entries = e;
	return 0;
}

int ktau_snap_dup(const struct ktau_snap *snap, struct ktau_snap **out)
{
	struct ktau_snap *s = ktau_snap_new();
	size_t i;
	int ret;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	*s = *snap;
	s->ntasks = 0;
	s->tasks = NULL;
	for (i = 0; i < snap->ntasks; i++) {
		ret = ktau_snap_add_task(s, &snap->tasks[i]);
		if (ret) {
			ktau_snap_free(s);
			return ret;
		}
	}
	*out = s;
	return 0;
}

const struct ktau_task *ktau_snap_find(const struct ktau_snap *snap, pid_t tid)
{
	size_t i;

	for (i = 0; i < snap->ntasks; i++)
		if (snap->tasks[i].tid == tid && !(snap->tasks[i].flags & KTAU_TASK_AGGREGATE))
			return &snap->tasks[i];
	return NULL;
}

const struct ktau_task *ktau_snap_aggregate(const struct ktau_snap *snap)
{
	size_t i;

	for (i = 0; i < snap->ntasks; i++)
		if (snap->tasks[i].flags & KTAU_TASK_AGGREGATE)
			return &snap->tasks[i];
	return NULL;
}

const struct ktau_func_stat *ktau_task_find(const struct ktau_task *t, uint32_t id)
{
	size_t lo = 0, hi = t->nentries, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->entries[mid].id == id)
			return &t->entries[mid];
		if (t->entries[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

enum { SUM_ON = 1, SUM_OFF = 2, SUM_GUEST = 4 };

/* Sum of the exclusive times of t's entries of the kinds in mask. */
static uint64_t sum_excl(const struct ktau_task *t, unsigned int mask)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < t->nentries; i++) {
		uint32_t id = t->entries[i].id;
		unsigned int kind = KTAU_ID_IS_OFF_CPU(id) ? SUM_OFF :
				    KTAU_ID_IS_GUEST(id) ? SUM_GUEST : SUM_ON;

		if (kind & mask)
			sum += t->entries[i].excl_ns;
	}
	return sum;
}

uint64_t ktau_task_total_excl(const struct ktau_task *t)
{
	return sum_excl(t, SUM_ON | SUM_OFF | SUM_GUEST);
}

uint64_t ktau_task_oncpu_excl(const struct ktau_task *t)
{
	return sum_excl(t, SUM_ON);
}

uint64_t ktau_task_offcpu(const struct ktau_task *t)
{
	return sum_excl(t, SUM_OFF);
}

uint64_t ktau_task_guest(const struct ktau_task *t)
{
	return sum_excl(t, SUM_GUEST);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct ktau_func_stat *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_task(const void *a, const void *b)
{
	const struct ktau_task *x = a, *y = b;
	int ax = !!(x->flags & KTAU_TASK_AGGREGATE), ay = !!(y->flags & KTAU_TASK_AGGREGATE);

	if (ax != ay)
		return ay - ax;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	/* A process (threads summed) after its main thread: same_task() tells them apart. */
	return !!(x->flags & KTAU_TASK_PROCESS) - !!(y->flags & KTAU_TASK_PROCESS);
}

void ktau_snap_sort(struct ktau_snap *snap)
{
	if (snap->ntasks > 1)
		qsort(snap->tasks, snap->ntasks, sizeof(*snap->tasks), cmp_task);
}

/* ---- the decoder ---- */

static int dup_tasks(const struct ktau_snap *s, size_t first);

int ktau_decode(const void *buf, size_t len, struct ktau_snap **out)
{
	const unsigned char *p = buf;
	struct ktau_task_rec rec;
	struct ktau_entry ent;
	struct ktau_snap *s = *out;
	struct ktau_task *t;
	size_t off = 0, first, i;
	int ret = -EBADMSG, nrec = 0, created = 0;

	if (!s) {
		s = ktau_snap_new();
		if (!s)
			return -ENOMEM;
		created = 1;
	}
	first = s->ntasks;
	while (off < len) {
		if (len - off < REC_HDR_SIZE)
			goto bad;
		memcpy(&rec, p + off, sizeof(rec));
		if (rec.size % 8 || rec.size < REC_HDR_SIZE || rec.size > len - off ||
		    (uint64_t)rec.nentries * sizeof(ent) > rec.size - REC_HDR_SIZE)
			goto bad;
		if (rec.reserved || !memchr(rec.comm, '\0', sizeof(rec.comm)) ||
		    (rec.flags & ~KNOWN_REC_FLAGS))
			goto bad;
		if ((rec.flags & KTAU_REC_AGGREGATE) ? (rec.pid || rec.tid)
						     : (rec.pid <= 0 || rec.tid <= 0))
			goto bad;
		t = snap_push(s);
		if (!t) {
			ret = -ENOMEM;
			goto fail;
		}
		t->tid = rec.tid;
		t->pid = rec.pid;
		t->flags = rec.flags;
		t->nthreads = 1;
		memcpy(t->comm, rec.comm, sizeof(t->comm));
		t->start_ns = rec.start_ns;
		t->stack_overflows = rec.stack_overflows;
		t->table_overflows = rec.table_overflows;
		t->unmatched = rec.unmatched;
		if (rec.nentries) {
			const unsigned char *ep = p + off + rec.size -
						  (size_t)rec.nentries * sizeof(ent);

			t->entries = malloc((size_t)rec.nentries * sizeof(*t->entries));
			if (!t->entries) {
				ret = -ENOMEM;
				goto fail;
			}
			t->nentries = rec.nentries;
			for (i = 0; i < rec.nentries; i++) {
				memcpy(&ent, ep + i * sizeof(ent), sizeof(ent));
				if (!ent.id || ent.incl_ns < ent.excl_ns)
					goto bad;
				t->entries[i].id = ent.id;
				t->entries[i].count = ent.count;
				t->entries[i].incl_ns = ent.incl_ns;
				t->entries[i].excl_ns = ent.excl_ns;
				t->entries[i].samples = ent.samples;
			}
			qsort(t->entries, t->nentries, sizeof(*t->entries), cmp_entry);
			for (i = 1; i < t->nentries; i++)
				if (t->entries[i].id == t->entries[i - 1].id)
					goto bad;
		}
		off += rec.size;
		nrec++;
	}
	/* A buffer holds each task once (and one aggregate at the most). */
	ret = dup_tasks(s, first);
	if (ret)
		goto fail;
	*out = s;
	return nrec;
bad:
	ret = -EBADMSG;
fail:
	/* Leave *out as it was before the call. */
	while (s->ntasks > first)
		ktau__task_release(&s->tasks[--s->ntasks]);
	if (created)
		ktau_snap_free(s);
	return ret;
}

int ktau_encode(const struct ktau_snap *snap, void **bufp, size_t *lenp)
{
	struct ktau_task_rec rec;
	struct ktau_entry ent;
	size_t len = 0, i, j, off = 0;
	unsigned char *buf;

	*bufp = NULL;
	*lenp = 0;
	for (i = 0; i < snap->ntasks; i++) {
		if (snap->tasks[i].nentries > (UINT32_MAX - REC_HDR_SIZE) / sizeof(ent))
			return -EOVERFLOW;
		len += REC_HDR_SIZE + snap->tasks[i].nentries * sizeof(ent);
	}
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < snap->ntasks; i++) {
		const struct ktau_task *t = &snap->tasks[i];

		memset(&rec, 0, sizeof(rec));
		rec.size = REC_HDR_SIZE + t->nentries * sizeof(ent);
		rec.nentries = t->nentries;
		rec.tid = t->tid;
		rec.pid = t->pid;
		rec.flags = t->flags & KNOWN_REC_FLAGS;
		memcpy(rec.comm, t->comm, sizeof(rec.comm));
		rec.comm[sizeof(rec.comm) - 1] = '\0';
		rec.start_ns = t->start_ns;
		rec.stack_overflows = t->stack_overflows;
		rec.table_overflows = t->table_overflows;
		rec.unmatched = t->unmatched;
		memcpy(buf + off, &rec, sizeof(rec));
		off += sizeof(rec);
		for (j = 0; j < t->nentries; j++) {
			memset(&ent, 0, sizeof(ent));
			ent.id = t->entries[j].id;
			ent.count = t->entries[j].count;
			ent.incl_ns = t->entries[j].incl_ns;
			ent.excl_ns = t->entries[j].excl_ns;
			ent.samples = t->entries[j].samples > UINT32_MAX ? UINT32_MAX :
				      (uint32_t)t->entries[j].samples;
			memcpy(buf + off, &ent, sizeof(ent));
			off += sizeof(ent);
		}
	}
	*bufp = buf;
	*lenp = len;
	return 0;
}

/* ---- diff, sum, accumulate ---- */

static int same_task(const struct ktau_task *a, const struct ktau_task *b)
{
	if ((a->flags & KTAU_TASK_AGGREGATE) || (b->flags & KTAU_TASK_AGGREGATE))
		return (a->flags & KTAU_TASK_AGGREGATE) && (b->flags & KTAU_TASK_AGGREGATE);
	return a->tid == b->tid && a->pid == b->pid && a->start_ns == b->start_ns &&
	       (a->flags & KTAU_TASK_PROCESS) == (b->flags & KTAU_TASK_PROCESS);
}

static uint64_t sat_sub(uint64_t b, uint64_t a)
{
	return b >= a ? b - a : b;
}

/* dst = b - a (a may be NULL), entries that did not change left out. */
static int task_diff(struct ktau_task *dst, const struct ktau_task *a, const struct ktau_task *b)
{
	const struct ktau_func_stat *ea;
	struct ktau_func_stat d;
	size_t i, n = 0;

	*dst = *b;
	dst->entries = NULL;
	dst->nentries = 0;
	if (!b->nentries)
		return 0;
	dst->entries = malloc(b->nentries * sizeof(*dst->entries));
	if (!dst->entries)
		return -ENOMEM;
	for (i = 0; i < b->nentries; i++) {
		d = b->entries[i];
		ea = a ? ktau_task_find(a, d.id) : NULL;
		if (ea) {
			if (d.count < ea->count || d.incl_ns < ea->incl_ns ||
			    d.excl_ns < ea->excl_ns) {
				/* Reset in between: take b's values whole. */
			} else {
				d.count -= ea->count;
				d.incl_ns -= ea->incl_ns;
				d.excl_ns -= ea->excl_ns;
				/* Each entry is consistent in itself, but not
				 * the difference of two: keep incl >= excl. */
				if (d.incl_ns < d.excl_ns)
					d.incl_ns = d.excl_ns;
			}
			/* Sample counts restart with each sampling of the thread. */
			d.samples = sat_sub(d.samples, ea->samples);
		}
		if (!d.count && !d.incl_ns && !d.excl_ns && !d.samples)
			continue;
		dst->entries[n++] = d;
	}
	dst->nentries = n;
	if (a) {
		dst->stack_overflows = sat_sub(b->stack_overflows, a->stack_overflows);
		dst->table_overflows = sat_sub(b->table_overflows, a->table_overflows);
		dst->unmatched = sat_sub(b->unmatched, a->unmatched);
	}
	return 0;
}

static int cmp_task_ptr(const void *a, const void *b)
{
	const struct ktau_task *x = *(const struct ktau_task * const *)a;
	const struct ktau_task *y = *(const struct ktau_task * const *)b;

	return cmp_task(x, y);
}

/* -EBADMSG when two tasks of s from first on are the same task, else 0 (or -ENOMEM). */
static int dup_tasks(const struct ktau_snap *s, size_t first)
{
	size_t i, n = s->ntasks - first;
	const struct ktau_task **idx;
	int ret = 0;

	if (n < 2)
		return 0;
	idx = malloc(n * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		idx[i] = &s->tasks[first + i];
	qsort(idx, n, sizeof(*idx), cmp_task_ptr);
	for (i = 1; i < n && !ret; i++)
		if (same_task(idx[i - 1], idx[i]))
			ret = -EBADMSG;
	free(idx);
	return ret;
}

int ktau_snap_diff(const struct ktau_snap *a, const struct ktau_snap *b,
		   struct ktau_snap **out)
{
	const struct ktau_task **idx = NULL, **hit;
	struct ktau_snap *s;
	struct ktau_task *t;
	size_t i;
	int ret = 0;

	*out = NULL;
	s = ktau_snap_new();
	if (!s)
		return -ENOMEM;
	*s = *b;
	s->tasks = NULL;
	s->ntasks = 0;
	s->base_ns = a->time_ns;
	s->is_delta = 1;
	if (a->ntasks) {
		idx = malloc(a->ntasks * sizeof(*idx));
		if (!idx) {
			free(s);
			return -ENOMEM;
		}
		for (i = 0; i < a->ntasks; i++)
			idx[i] = &a->tasks[i];
		qsort(idx, a->ntasks, sizeof(*idx), cmp_task_ptr);
	}
	for (i = 0; i < b->ntasks && !ret; i++) {
		const struct ktau_task *bt = &b->tasks[i], *match = NULL;

		hit = a->ntasks ? bsearch(&bt, idx, a->ntasks, sizeof(*idx), cmp_task_ptr) : NULL;
		if (hit && same_task(*hit, bt))
			match = *hit;
		t = snap_push(s);
		if (!t) {
			ret = -ENOMEM;
			break;
		}
		ret = task_diff(t, match, bt);
		if (ret)
			s->ntasks--;
	}
	free(idx);
	if (ret) {
		ktau_snap_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

/* dst += src, both sorted by ID. */
static int task_add(struct ktau_task *dst, const struct ktau_task *src)
{
	struct ktau_func_stat *m;
	size_t i = 0, j = 0, n = 0;

	if (src->nentries) {
		m = malloc((dst->nentries + src->nentries) * sizeof(*m));
		if (!m)
			return -ENOMEM;
		while (i < dst->nentries || j < src->nentries) {
			if (j == src->nentries ||
			    (i < dst->nentries && dst->entries[i].id < src->entries[j].id)) {
				m[n++] = dst->entries[i++];
			} else if (i == dst->nentries || src->entries[j].id < dst->entries[i].id) {
				m[n++] = src->entries[j++];
			} else {
				m[n] = dst->entries[i++];
				m[n].count += src->entries[j].count;
				m[n].incl_ns += src->entries[j].incl_ns;
				m[n].excl_ns += src->entries[j].excl_ns;
				m[n].samples += src->entries[j++].samples;
				n++;
			}
		}
		free(dst->entries);
		dst->entries = m;
		dst->nentries = n;
	}
	dst->stack_overflows += src->stack_overflows;
	dst->table_overflows += src->table_overflows;
	dst->unmatched += src->unmatched;
	return 0;
}

int ktau_snap_sum(const struct ktau_snap *snap, struct ktau_snap **out)
{
	struct ktau_snap *sorted = NULL, *s;
	struct ktau_task *cur = NULL;
	size_t i;
	int ret;

	*out = NULL;
	ret = ktau_snap_dup(snap, &sorted);
	if (ret)
		return ret;
	ktau_snap_sort(sorted);
	s = ktau_snap_new();
	if (!s) {
		ktau_snap_free(sorted);
		return -ENOMEM;
	}
	*s = *snap;
	s->tasks = NULL;
	s->ntasks = 0;
	for (i = 0; i < sorted->ntasks; i++) {
		const struct ktau_task *t = &sorted->tasks[i];

		if ((t->flags & KTAU_TASK_AGGREGATE) || !cur || cur->pid != t->pid ||
		    (cur->flags & KTAU_TASK_AGGREGATE)) {
			ret = ktau_snap_add_task(s, t);
			if (ret)
				goto fail;
			cur = &s->tasks[s->ntasks - 1];
			if (!(t->flags & KTAU_TASK_AGGREGATE)) {
				cur->flags |= KTAU_TASK_PROCESS;
				cur->tid = t->pid;
				if (!t->nthreads)
					cur->nthreads = 1;
			}
			continue;
		}
		ret = task_add(cur, t);
		if (ret)
			goto fail;
		cur->nthreads += t->nthreads ? t->nthreads : 1;
		/* All exited: the process is exited. */
		cur->flags &= t->flags | KTAU_TASK_PROCESS | KTAU_TASK_KTHREAD;
		if (t->tid == t->pid) {
			memcpy(cur->comm, t->comm, sizeof(cur->comm));
			cur->start_ns = t->start_ns;
		}
	}
	ktau_snap_free(sorted);
	*out = s;
	return 0;
fail:
	ktau_snap_free(sorted);
	ktau_snap_free(s);
	return ret;
}

int ktau_snap_accumulate(struct ktau_snap *a, const struct ktau_snap *b)
{
	size_t i, j;
	int ret;

	for (i = 0; i < b->ntasks; i++) {
		const struct ktau_task *bt = &b->tasks[i];

		for (j = 0; j < a->ntasks; j++)
			if (same_task(&a->tasks[j], bt))
				break;
		if (j < a->ntasks)
			ret = task_add(&a->tasks[j], bt);
		else
			ret = ktau_snap_add_task(a, bt);
		if (ret)
			return ret;
	}
	if (b->time_ns > a->time_ns)
		a->time_ns = b->time_ns;
	if (b->is_delta && (!a->base_ns || b->base_ns < a->base_ns))
		a->base_ns = b->base_ns;
	if (!a->hostname[0])
		memcpy(a->hostname, b->hostname, sizeof(a->hostname));
	if (!a->release[0])
		memcpy(a->release, b->release, sizeof(a->release));
	if (b->wall_ns > a->wall_ns)
		a->wall_ns = b->wall_ns;
	if (!a->boot_id[0])
		memcpy(a->boot_id, b->boot_id, sizeof(a->boot_id));
	return 0;
}

const char *ktau_strerror(int err)
{
	switch (-err) {
	case ENOENT:
		return "no /proc/ktau: this kernel was built without KTAU (CONFIG_KTAU=y)";
	case EPROTO:
		return "the kernel's KTAU ABI version is not supported by this libktau";
	case EBADMSG:
		return "malformed KTAU data (truncated or garbled)";
	case EPERM:
		return "operation not permitted: it needs CAP_PERFMON or CAP_SYS_ADMIN";
	case EACCES:
		return "permission denied";
	default:
		return strerror(-err);
	}
}
