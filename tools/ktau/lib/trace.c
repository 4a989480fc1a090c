// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: trace mode (ABI 1.5). Sessions on /proc/ktau/trace, a strict
 * walker of the chunk stream that read() returns, the per-thread model
 * of a trace, and raw trace files.
 *
 * Raw trace file (little-endian, as the host; version 3 when it has a
 * samples part, else 2 when it has a cut part, else 1, so that a reader
 * of an earlier version reads what it can):
 *
 *	0    char     magic[8]      "KTAUTRAC"
 *	8    u32      version       1, 2 or 3
 *	12   u32      hdr_size      320; 328 in version 3 (and in an unfinished
 *	                            version 1 file that was to have samples)
 *	16   u32      abi_major     of the records
 *	20   u32      abi_minor
 *	24   u32      flags         bit 0: complete (the sizes below are set);
 *	                            bit 1: the profile is the kernel's own
 *	                            (final profiles from the exit collector)
 *	28   s32      rank          MPI rank; -1: none
 *	32   u64      start_ns      CLOCK_MONOTONIC when tracing started
 *	40   u64      end_ns        ... and ended
 *	48   u64      realtime_ns   CLOCK_REALTIME at start_ns
 *	56   u64      groups        1 << KTAU_GROUP_*; 0: every group
 *	64   u64      chunks_len    bytes of chunks after the header
 *	72   u32      funcs_len     bytes of registry text after the chunks
 *	76   u32      cut_len       bytes of the cut part (0 in version 1)
 *	80   u64      prof_len      bytes of profile records after that
 *	88   u64      stats[6]      struct ktau_trace_stats of the session
 *	136  char     hostname[64]  NUL-terminated
 *	200  char     release[64]   NUL-terminated
 *	264  char     command[48]   NUL-terminated (cut)
 *	312  u64      user_len      bytes of user routines after the profile
 *	320  u64      sample_len    (version 3 only) bytes of the samples part
 *	                            at the end
 *	hdr_size: the chunks as read() returned them, then the registry text
 *	     ("id group name" lines), then the profile of the same run as
 *	     KTAU_IOC_SNAPSHOT records, then the user's own routines: u32
 *	     the number of names, the names (u32 length, bytes), zeros to a
 *	     multiple of 8, and chunks of their records (ids
 *	     KTAU_LIB_TRACE_USER | name index); then the cut part: u32 n,
 *	     u32 0, and n entries { s32 tid, u32 id, u64 calls }: calls of
 *	     routine id that the writer cut from thread tid's profile (ktaud
 *	     trace leaves out what the command's first process ran before
 *	     its exec), sorted by tid and id; then (version 3) the samples
 *	     part, which ends the file. Its offsets, from its start:
 *
 *	0    char     event[32]     the sampler's event, NUL-terminated, zeros
 *	                            after it; "": no samples (every count 0)
 *	32   u32      flags         KTAU_SAMPLE_* flags the sampler ran with
 *	36   u32      nthreads      sampled threads
 *	40   u32      nnames        names of samples
 *	44   u32      reserved      0
 *	48   u64      nsamples      the sum of the threads' n
 *	56   the names: nnames x { u32 length (> 0), bytes (no NUL) }, zeros
 *	     to a multiple of 8 (from the part's start); then nthreads x 48
 *	     bytes { s32 tid, s32 pid, u64 start_ns, end_ns, taken, lost, n }
 *	     (the sampler ran within [start_ns, end_ns]; the kernel's counters
 *	     when it stopped; n samples); then the samples, thread by thread
 *	     in that order, in time order within a thread and within its
 *	     window, nsamples x 32 bytes { u64 ip, u64 time_ns, u32 id, u32
 *	     flags (bit 0: user mode), u32 name (index of a name, or
 *	     0xffffffff: none), u32 0 }.
 *
 * A file whose writer did not finish (flag 0 clear; every length 0, the
 * samples' too) holds chunks to its end; it is read up to its last whole
 * chunk and marked truncated. The writer starts every file as version 1,
 * with a header of 328 bytes when samples are to come (sample_len 0 until
 * then), which readers of version 1 take (they skip hdr_size bytes), and
 * sets the version at finish.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/ktau.h>

#include "libktau.h"
#include "internal.h"

#define KTAU_PATH_TRACE		"/proc/ktau/trace"
#define TRACEFILE_MAGIC		"KTAUTRAC"
#define TRACEFILE_VERSION	3	/* the newest read */
#define TRACEFILE_HDR		320	/* versions 1 and 2 */
#define TRACEFILE_HDR3		328	/* version 3: and sample_len */
#define TF_COMPLETE		0x1
#define TF_KERNEL_PROFILE	0x2
#define TF_FLAGS		0x3

struct tracefile_hdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_size;
	uint32_t abi_major;
	uint32_t abi_minor;
	uint32_t flags;
	int32_t rank;
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t realtime_ns;
	uint64_t groups;
	uint64_t chunks_len;
	uint32_t funcs_len;
	uint32_t cut_len;
	uint64_t prof_len;
	uint64_t stats[6];
	char hostname[64];
	char release[64];
	char command[48];
	uint64_t user_len;
	uint64_t sample_len;		/* version 3 */
};

/* The samples part: its head, a sampled thread, a sample. */
struct tracefile_samples {
	char event[32];
	uint32_t flags;
	uint32_t nthreads;
	uint32_t nnames;
	uint32_t reserved;
	uint64_t nsamples;
};

struct tracefile_sthread {
	int32_t tid, pid;
	uint64_t start_ns, end_ns, taken, lost, n;
};

struct tracefile_sample {
	uint64_t ip, time_ns;
	uint32_t id, flags, name, reserved;
};

#define TF_SAMPLE_USER		0x1

_Static_assert(sizeof(struct tracefile_hdr) == TRACEFILE_HDR3 &&
	       offsetof(struct tracefile_hdr, sample_len) == TRACEFILE_HDR, "trace file header");
_Static_assert(sizeof(struct tracefile_samples) == 56 && sizeof(struct tracefile_sthread) == 48 &&
	       sizeof(struct tracefile_sample) == 32, "trace file samples");
_Static_assert(sizeof(struct ktau_trace_record) == sizeof(struct ktau_trace_rec),
	       "trace record");
_Static_assert(sizeof(struct ktau_trace_chunk) == 48, "trace chunk");
_Static_assert(KTAU_LIB_TRACE_INHERIT == KTAU_TRACE_INHERIT && KTAU_LIB_TRACE_ALL == KTAU_TRACE_ALL,
	       "attach flags");
_Static_assert(KTAU_LIB_TRACE_MAX_CAPACITY == KTAU_TRACE_MAX_CAPACITY, "capacity");

/* The calling thread's last message (ktau__why_set()). */
#define WHY_SIZE	512
static __thread char *why;

const char *ktau_trace_error(void)
{
	return why ? why : "";
}

static void why_clear(void)
{
	if (why)
		why[0] = '\0';
}

static int fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = ktau__why_set(&why, WHY_SIZE, err, fmt, ap);
	va_end(ap);
	return err;
}

/* ---- Sessions ------------------------------------------------------ */

struct ktau_trace_session {
	int fd;
	char *buf;
	size_t cap;
};

int ktau_trace_open(struct ktau_trace_session **out)
{
	struct ktau_trace_session *s;
	unsigned int major, minor;
	int ret;

	*out = NULL;
	why_clear();
	ret = ktau_abi_version(&major, &minor);
	if (ret)
		return ret == -ENOENT ? fail(-ENOENT, "this kernel has no KTAU "
					     "(/proc/ktau/version is missing)") : ret;
	if (major != KTAU_ABI_VERSION_MAJOR)
		return fail(-EPROTO, "KTAU ABI %u.%u: this libktau reads ABI %d", major, minor,
			    KTAU_ABI_VERSION_MAJOR);
	if (minor < 5)
		return fail(-ENOTTY, "KTAU ABI %u.%u has no trace mode (it came with ABI 1.5)",
			    major, minor);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = open(KTAU_PATH_TRACE, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		ret = -errno;
		free(s);
		if (ret == -ENOENT && access("/proc/ktau/version", F_OK) == 0)
			return fail(ret, "no %s: this kernel has KTAU but was built without "
				    "trace mode (CONFIG_KTAU_TRACE=n)", KTAU_PATH_TRACE);
		return fail(ret, "cannot open %s: %s", KTAU_PATH_TRACE, strerror(-ret));
	}
	*out = s;
	return 0;
}

int ktau_trace_fd(const struct ktau_trace_session *s)
{
	return s->fd;
}

void ktau_trace_close(struct ktau_trace_session *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	free(s->buf);
	free(s);
}

int ktau_trace_attach(struct ktau_trace_session *s, pid_t tid, unsigned int flags,
		      uint32_t capacity, uint64_t groups)
{
	struct ktau_trace_attr a = {
		.size = sizeof(a), .flags = flags, .tid = tid, .capacity = capacity,
		.groups = groups,
	};

	if (flags & ~KTAU_TRACE_FLAGS || !capacity || capacity & (capacity - 1) ||
	    capacity > KTAU_TRACE_MAX_CAPACITY || groups >> KTAU_NR_GROUPS)
		return -EINVAL;
	return ioctl(s->fd, KTAU_IOC_TRACE_ATTACH, &a) ? -errno : 0;
}

int ktau_trace_detach(struct ktau_trace_session *s, pid_t tid)
{
	__s32 t = tid;

	return ioctl(s->fd, KTAU_IOC_TRACE_DETACH, &t) ? -errno : 0;
}

int ktau_trace_stats(struct ktau_trace_session *s, struct ktau_trace_totals *st)
{
	struct ktau_trace_stats k;

	if (ioctl(s->fd, KTAU_IOC_TRACE_STATS, &k))
		return -errno;
	memset(st, 0, sizeof(*st));
	st->tasks = k.tasks;
	st->records = k.records;
	st->lost = k.lost;
	st->refused = k.refused;
	st->denied = k.denied;
	st->buffered = k.buffered;
	return 0;
}

ssize_t ktau_trace_read(struct ktau_trace_session *s, const void **buf)
{
	ssize_t n;

	if (!s->buf) {
		/* One full buffer of the largest capacity is one chunk. */
		s->cap = sizeof(struct ktau_trace_chunk) +
			 (size_t)KTAU_TRACE_MAX_CAPACITY * sizeof(struct ktau_trace_rec);
		s->cap = s->cap < (32u << 20) ? 32u << 20 : s->cap;
		s->buf = malloc(s->cap);
		if (!s->buf)
			return -ENOMEM;
	}
	do
		n = read(s->fd, s->buf, s->cap);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	*buf = s->buf;
	return n;
}

/* ---- The chunk stream ---------------------------------------------- */

int ktau_trace_next_chunk(const void *buf, size_t len, size_t *off,
			  struct ktau_trace_chunk_info *ci)
{
	const char *p = (const char *)buf + *off;
	struct ktau_trace_chunk c;
	struct ktau_trace_rec r;
	size_t left = len - *off, i, recs;

	if (*off >= len)
		return 0;
	if (left < sizeof(c))
		return fail(-EBADMSG, "chunk at byte %zu: %zu bytes left, a chunk header has %zu",
			    *off, left, sizeof(c));
	memcpy(&c, p, sizeof(c));
	recs = (size_t)c.nrecs * sizeof(r);
	if (c.size < sizeof(c) || c.size % 8 || c.size > left ||
	    (uint64_t)c.nrecs * sizeof(r) > c.size - sizeof(c))
		return fail(-EBADMSG, "chunk at byte %zu: size %u does not hold its header and "
			    "%u records (%zu bytes left)", *off, c.size, c.nrecs, left);
	if (c.nrecs > KTAU_TRACE_MAX_CAPACITY)
		return fail(-EBADMSG, "chunk at byte %zu: %u records, more than a buffer holds",
			    *off, c.nrecs);
	if (c.reserved || c.flags & ~(uint32_t)(KTAU_TRACE_EXITED | KTAU_TRACE_DETACHED) ||
	    c.tid < 0 || c.pid < 0 || !memchr(c.comm, '\0', sizeof(c.comm)))
		return fail(-EBADMSG, "chunk at byte %zu: bad header (tid %d, pid %d, flags 0x%x, "
			    "reserved %u, comm not terminated: %d)", *off, c.tid, c.pid, c.flags,
			    c.reserved, !memchr(c.comm, '\0', sizeof(c.comm)));
	/* The records are the last bytes of the chunk (the header may grow). */
	ci->recs = p + c.size - recs;
	for (i = 0; i < c.nrecs; i++) {
		memcpy(&r, (const char *)ci->recs + i * sizeof(r), sizeof(r));
		if (r.reserved || r.kind < KTAU_TRACE_CALL || r.kind > KTAU_TRACE_LOST ||
		    r.end_ns < r.start_ns || !r.id ||
		    (r.kind == KTAU_TRACE_EVENT && r.start_ns != r.end_ns))
			return fail(-EBADMSG, "record %zu of the chunk at byte %zu (tid %d): kind %u, "
				    "id %u, start %llu, end %llu, reserved %u is not a valid record",
				    i, *off, c.tid, r.kind, r.id, (unsigned long long)r.start_ns,
				    (unsigned long long)r.end_ns, r.reserved);
	}
	ci->tid = c.tid;
	ci->pid = c.pid;
	ci->flags = c.flags;
	memcpy(ci->comm, c.comm, sizeof(ci->comm));
	ci->lost = c.lost;
	ci->nrecs = c.nrecs;
	*off += c.size;
	return 1;
}

void ktau_trace_chunk_record(const struct ktau_trace_chunk_info *ci, size_t i,
			     struct ktau_trace_record *r)
{
	memcpy(r, (const char *)ci->recs + i * sizeof(*r), sizeof(*r));
}

/* ---- The model ----------------------------------------------------- */

struct ktau_trace *ktau_trace_new(void)
{
	struct ktau_trace *t = calloc(1, sizeof(*t));

	if (t)
		t->rank = -1;
	return t;
}

void ktau_trace_free(struct ktau_trace *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nthreads; i++)
		free(t->threads[i].recs);
	free(t->threads);
	free(t->index);
	for (i = 0; i < t->nuser_names; i++)
		free(t->user_names[i]);
	free(t->user_names);
	ktau_registry_free(t->reg);
	ktau_snap_free(t->profile);
	free(t->cuts);
	free(t->sthreads);
	free(t->samples);
	for (i = 0; i < t->nsample_names; i++)
		free(t->sample_names[i]);
	free(t->sample_names);
	free(t);
}

static size_t hash_tid(int32_t tid, size_t mask)
{
	return ((uint32_t)tid * 2654435761u) & mask;
}

/* The index of the thread being written with tid (not exited), or -1. */
static long find_live(const struct ktau_trace *t, int32_t tid)
{
	size_t h;

	if (!t->index_cap)
		return -1;
	for (h = hash_tid(tid, t->index_cap - 1); t->index[h]; h = (h + 1) & (t->index_cap - 1)) {
		const struct ktau_trace_thread *th = &t->threads[t->index[h] - 1];

		if (th->tid == tid && !(th->flags & KTAU_LIB_TRACE_EXITED))
			return (long)t->index[h] - 1;
	}
	return -1;
}

static int index_add(struct ktau_trace *t, size_t i)
{
	size_t h, j;

	if ((t->nthreads + 1) * 2 > t->index_cap) {
		size_t cap = t->index_cap ? t->index_cap * 2 : 64;
		size_t *v = calloc(cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		free(t->index);
		t->index = v;
		t->index_cap = cap;
		for (j = 0; j < t->nthreads; j++) {
			if (j == i)
				continue;
			for (h = hash_tid(t->threads[j].tid, cap - 1); v[h]; h = (h + 1) & (cap - 1))
				;
			v[h] = j + 1;
		}
	}
	for (h = hash_tid(t->threads[i].tid, t->index_cap - 1); t->index[h];
	     h = (h + 1) & (t->index_cap - 1))
		;
	t->index[h] = i + 1;
	return 0;
}

/* The last thread with tid and pid (exited or not), or -1. */
static long find_any(const struct ktau_trace *t, int32_t tid, int32_t pid)
{
	size_t i;

	for (i = t->nthreads; i > 0; i--)
		if (t->threads[i - 1].tid == tid && t->threads[i - 1].pid == pid)
			return (long)i - 1;
	return -1;
}

static int add_chunk(struct ktau_trace *t, const struct ktau_trace_chunk_info *ci, int user)
{
	struct ktau_trace_thread *th;
	struct ktau_trace_record r;
	long k = user ? find_any(t, ci->tid, ci->pid) : find_live(t, ci->tid);
	size_t i;

	if (k < 0) {
		if (t->nthreads == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 16;
			struct ktau_trace_thread *v = realloc(t->threads, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			t->threads = v;
			t->cap = cap;
		}
		th = &t->threads[t->nthreads];
		memset(th, 0, sizeof(*th));
		th->tid = ci->tid;
		th->pid = ci->pid;
		t->nthreads++;
		if (index_add(t, t->nthreads - 1)) {
			t->nthreads--;
			return -ENOMEM;
		}
		k = (long)t->nthreads - 1;
	}
	th = &t->threads[k];
	if (th->nrecs + ci->nrecs > th->cap) {
		size_t cap = th->cap ? th->cap : 256;
		struct ktau_trace_record *v;

		while (cap < th->nrecs + ci->nrecs)
			cap *= 2;
		v = realloc(th->recs, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		th->recs = v;
		th->cap = cap;
	}
	for (i = 0; i < ci->nrecs; i++) {
		ktau_trace_chunk_record(ci, i, &r);
		if (user) {
			if (r.kind != KTAU_LIB_TRACE_CALL || !(r.id & KTAU_LIB_TRACE_USER) ||
			    (r.id & ~KTAU_LIB_TRACE_USER) >= t->nuser_names)
				return fail(-EBADMSG, "user record %zu of thread %d: kind %u, id 0x%x "
					    "is not a user routine", i, ci->tid, r.kind, r.id);
			th->recs[th->nrecs++] = r;
			th->ncalls++;
			continue;
		}
		if (r.id & KTAU_LIB_TRACE_USER)
			return fail(-EBADMSG, "record %zu of thread %d: id 0x%x is a user routine's",
				    i, ci->tid, r.id);
		if (th->nrecs && r.end_ns < th->recs[th->nrecs - 1].end_ns)
			th->disorder++;
		th->recs[th->nrecs++] = r;
		if (r.kind == KTAU_LIB_TRACE_LOST)
			th->lost_recs += r.id;
		else if (r.kind == KTAU_LIB_TRACE_EVENT)
			th->nevents++;
		else
			th->ncalls++;
	}
	t->nrecs += ci->nrecs;
	if (user) {
		if (!th->comm[0])
			memcpy(th->comm, ci->comm, sizeof(th->comm));
		t->user_lost += ci->lost;
		th->user_lost += ci->lost;
		return 0;
	}
	if (ci->pid)
		th->pid = ci->pid;
	th->flags |= ci->flags;
	memcpy(th->comm, ci->comm, sizeof(th->comm));
	if (ci->lost > th->lost)
		th->lost = ci->lost;
	th->nchunks++;
	return 0;
}

static int add_chunks(struct ktau_trace *t, const void *buf, size_t len, int user)
{
	struct ktau_trace_chunk_info ci;
	size_t off = 0;
	int ret, n = 0;

	while ((ret = ktau_trace_next_chunk(buf, len, &off, &ci)) > 0) {
		ret = add_chunk(t, &ci, user);
		if (ret)
			return ret == -ENOMEM ? fail(ret, "out of memory for the trace") : ret;
		n++;
	}
	if (!user)
		t->bytes += off;
	return ret < 0 ? ret : n;
}

int ktau_trace_add_chunks(struct ktau_trace *t, const void *buf, size_t len)
{
	return add_chunks(t, buf, len, 0);
}

const char *ktau_trace_name(const struct ktau_trace *t, uint32_t id)
{
	if (id & KTAU_LIB_TRACE_USER) {
		id &= ~KTAU_LIB_TRACE_USER;
		return id < t->nuser_names && t->user_names[id] ? t->user_names[id] : "?";
	}
	return ktau_func_name(t->reg, id);
}

int ktau_trace_group(const struct ktau_trace *t, uint32_t id)
{
	return id & KTAU_LIB_TRACE_USER ? KTAU_LIB_GROUP_USER : ktau_func_group(t->reg, id);
}

/* The names of a user part (u32 count, u32 length + bytes each) at *off. */
static int add_user_names(struct ktau_trace *t, const char *p, size_t len, size_t *off,
			  uint32_t n, size_t *base)
{
	size_t i;
	char **v;

	if (n > KTAU_TRACE_MAX_CAPACITY)
		return fail(-EBADMSG, "%u user routine names: too many", n);
	v = realloc(t->user_names, (t->nuser_names + n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	t->user_names = v;
	*base = t->nuser_names;
	for (i = 0; i < n; i++) {
		uint32_t l;

		if (len - *off < 4)
			return fail(-EBADMSG, "user routine names cut short");
		memcpy(&l, p + *off, 4);
		*off += 4;
		if (l > len - *off || l > 4096 || memchr(p + *off, '\0', l))
			return fail(-EBADMSG, "bad user routine name %zu", i);
		v[t->nuser_names] = strndup(p + *off, l);
		if (!v[t->nuser_names])
			return -ENOMEM;
		t->nuser_names++;
		*off += l;
	}
	return 0;
}

struct user_thr {
	int32_t tid, pid;
	char comm[16];
	uint32_t nrecs, pad;
	uint64_t lost;
};

struct user_rec {
	uint64_t t0, t1;
	uint32_t timer, depth;
};

int ktau_trace_add_user(struct ktau_trace *t, const void *buf, size_t len)
{
	const char *p = buf;
	uint32_t hdr[4], i, k;
	size_t off = 8 + sizeof(hdr), base;
	int ret;

	why_clear();
	if (len < off || memcmp(p, "KTAUUSER", 8))
		return fail(-EBADMSG, "not a file of user routines (no KTAUUSER header)");
	memcpy(hdr, p + 8, sizeof(hdr));
	if (hdr[0] != 1)
		return fail(-EBADMSG, "user routines file version %u: this libktau reads 1", hdr[0]);
	ret = add_user_names(t, p, len, &off, hdr[1], &base);
	if (ret)
		return ret;
	for (i = 0; i < hdr[2]; i++) {
		struct ktau_trace_chunk_info ci = { 0 };
		struct ktau_trace_record *recs;
		struct user_thr th;
		struct user_rec r;

		if (len - off < sizeof(th))
			return fail(-EBADMSG, "user routines of thread %u cut short", i);
		memcpy(&th, p + off, sizeof(th));
		off += sizeof(th);
		if (th.tid <= 0 || th.pid <= 0 || th.nrecs > (len - off) / sizeof(r) ||
		    !memchr(th.comm, '\0', sizeof(th.comm)))
			return fail(-EBADMSG, "bad user routines of thread %u (tid %d, %u records)", i,
				    th.tid, th.nrecs);
		recs = calloc(th.nrecs + 1, sizeof(*recs));
		if (!recs)
			return -ENOMEM;
		for (k = 0; k < th.nrecs; k++) {
			memcpy(&r, p + off + (size_t)k * sizeof(r), sizeof(r));
			if (r.t1 < r.t0 || r.timer >= hdr[1] || r.depth > 0xffff) {
				free(recs);
				return fail(-EBADMSG, "bad user record %u of thread %d", k, th.tid);
			}
			recs[k].start_ns = r.t0;
			recs[k].end_ns = r.t1;
			recs[k].id = KTAU_LIB_TRACE_USER | (uint32_t)(base + r.timer);
			recs[k].depth = (uint16_t)r.depth;
			recs[k].kind = KTAU_LIB_TRACE_CALL;
		}
		off += (size_t)th.nrecs * sizeof(r);
		ci.tid = th.tid;
		ci.pid = th.pid;
		memcpy(ci.comm, th.comm, sizeof(ci.comm));
		ci.lost = th.lost;
		ci.nrecs = th.nrecs;
		ci.recs = recs;
		ret = add_chunk(t, &ci, 1);
		free(recs);
		if (ret)
			return ret;
	}
	return off == len ? 0 : fail(-EBADMSG, "%zu bytes after the user routines", len - off);
}

/* ---- Raw trace files ----------------------------------------------- */

struct ktau_trace_file {
	int fd;
	uint32_t hdr_size;		/* TRACEFILE_HDR3: room for samples */
	uint64_t chunks_len;
};

/*
 * The header of a file started (or finished) with @hdr_size bytes: version
 * 1, also with room for the samples' length, so that a reader of version 1
 * (libktau 2.2) reads the chunks of a file whose writer stopped before
 * finish; finish sets the version of what it wrote.
 */
static void fill_hdr(struct tracefile_hdr *h, const struct ktau_trace *t, uint32_t hdr_size)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, TRACEFILE_MAGIC, 8);
	h->version = 1;
	h->hdr_size = hdr_size;
	h->abi_major = KTAU_ABI_VERSION_MAJOR;
	h->abi_minor = KTAU_ABI_VERSION_MINOR;
	h->rank = t->rank;
	h->start_ns = t->start_ns;
	h->end_ns = t->end_ns;
	h->realtime_ns = t->realtime_ns;
	h->groups = t->groups;
	h->stats[0] = t->stats.tasks;
	h->stats[1] = t->stats.records;
	h->stats[2] = t->stats.lost;
	h->stats[3] = t->stats.refused;
	h->stats[4] = t->stats.denied;
	h->stats[5] = t->stats.buffered;
	memcpy(h->hostname, t->hostname, sizeof(h->hostname) - 1);
	memcpy(h->release, t->release, sizeof(h->release) - 1);
	memcpy(h->command, t->command, sizeof(h->command) - 1);
}

int ktau_trace_file_start(int fd, const struct ktau_trace *t, struct ktau_trace_file **out)
{
	struct tracefile_hdr h;
	struct ktau_trace_file *tf;
	int ret;

	uint32_t hdr_size = t->sample_event[0] ? TRACEFILE_HDR3 : TRACEFILE_HDR;

	*out = NULL;
	fill_hdr(&h, t, hdr_size);
	ret = ktau__write_all(fd, &h, hdr_size);
	if (ret)
		return ret;
	tf = calloc(1, sizeof(*tf));
	if (!tf)
		return -ENOMEM;
	tf->fd = fd;
	tf->hdr_size = hdr_size;
	*out = tf;
	return 0;
}

int ktau_trace_file_append(struct ktau_trace_file *tf, const void *chunks, size_t len)
{
	int ret = ktau__write_all(tf->fd, chunks, len);

	if (!ret)
		tf->chunks_len += len;
	return ret;
}

int ktau_trace_file_append_thread(struct ktau_trace_file *tf, const struct ktau_trace_thread *th,
				  size_t from, size_t to, uint32_t flags)
{
	struct ktau_trace_chunk c = {
		.size = (uint32_t)(sizeof(c) + (to - from) * sizeof(struct ktau_trace_rec)),
		.nrecs = (uint32_t)(to - from), .tid = th->tid, .pid = th->pid, .flags = flags,
		.lost = th->lost,
	};
	int ret;

	if (from > to || to > th->nrecs || to - from > KTAU_TRACE_MAX_CAPACITY)
		return -EINVAL;
	memcpy(c.comm, th->comm, sizeof(c.comm));
	c.comm[sizeof(c.comm) - 1] = '\0';
	ret = ktau_trace_file_append(tf, &c, sizeof(c));
	if (ret || from == to)
		return ret;
	return ktau_trace_file_append(tf, th->recs + from, (to - from) * sizeof(*th->recs));
}

int ktau_trace_file_append_trace(struct ktau_trace_file *tf, const struct ktau_trace *t)
{
	struct ktau_trace_thread k;
	size_t i, j, n, from;
	int ret = 0;

	for (i = 0; !ret && i < t->nthreads; i++) {
		const struct ktau_trace_thread *th = &t->threads[i];

		k = *th;
		k.recs = malloc((th->nrecs + 1) * sizeof(*k.recs));
		if (!k.recs)
			return -ENOMEM;
		for (j = 0, n = 0; j < th->nrecs; j++)
			if (!(th->recs[j].id & KTAU_LIB_TRACE_USER))
				k.recs[n++] = th->recs[j];
		k.nrecs = n;
		from = 0;
		do {
			size_t to = n - from > KTAU_TRACE_MAX_CAPACITY ? from + KTAU_TRACE_MAX_CAPACITY
								      : n;

			ret = ktau_trace_file_append_thread(tf, &k, from, to, to == n ? th->flags : 0);
			from = to;
		} while (!ret && from < n);
		free(k.recs);
	}
	return ret;
}

/* The user part: names, then a chunk per thread of its user records. */
static int write_user(struct ktau_trace_file *tf, const struct ktau_trace *t, uint64_t *len)
{
	static const char zeros[8];
	uint32_t n = (uint32_t)t->nuser_names, l;
	struct ktau_trace_thread u;
	size_t i, j, k, at = 4;
	int ret;

	ret = ktau__write_all(tf->fd, &n, sizeof(n));
	for (i = 0; !ret && i < n; i++) {
		l = (uint32_t)strlen(t->user_names[i]);
		ret = ktau__write_all(tf->fd, &l, sizeof(l));
		if (!ret)
			ret = ktau__write_all(tf->fd, t->user_names[i], l);
		at += 4 + l;
	}
	if (!ret && at % 8)
		ret = ktau__write_all(tf->fd, zeros, 8 - at % 8);
	at += at % 8 ? 8 - at % 8 : 0;
	for (i = 0; !ret && i < t->nthreads; i++) {
		const struct ktau_trace_thread *th = &t->threads[i];

		u = *th;
		u.recs = malloc((th->nrecs + 1) * sizeof(*u.recs));
		if (!u.recs)
			return -ENOMEM;
		for (j = 0, k = 0; j < th->nrecs; j++)
			if (th->recs[j].id & KTAU_LIB_TRACE_USER)
				u.recs[k++] = th->recs[j];
		u.nrecs = k;
		u.lost = th->user_lost;
		for (j = 0; !ret && (j < k || (!j && u.lost)); j += KTAU_TRACE_MAX_CAPACITY) {
			size_t to = j + KTAU_TRACE_MAX_CAPACITY < k ? j + KTAU_TRACE_MAX_CAPACITY : k;

			ret = ktau_trace_file_append_thread(tf, &u, j, to, 0);
			if (!ret)
				at += sizeof(struct ktau_trace_chunk) +
				      (to - j) * sizeof(struct ktau_trace_rec);
		}
		free(u.recs);
	}
	*len = at;
	return ret;
}

/* The cut part; its bytes in *@len. */
static int write_cuts(struct ktau_trace_file *tf, const struct ktau_trace *t, uint32_t *len)
{
	uint32_t head[2] = { (uint32_t)t->ncuts, 0 };
	int ret;

	*len = 0;
	if (t->ncuts > (UINT32_MAX - sizeof(head)) / sizeof(*t->cuts))
		return -EOVERFLOW;
	ret = ktau__write_all(tf->fd, head, sizeof(head));
	if (!ret)
		ret = ktau__write_all(tf->fd, t->cuts, t->ncuts * sizeof(*t->cuts));
	if (!ret)
		*len = (uint32_t)(sizeof(head) + t->ncuts * sizeof(*t->cuts));
	return ret;
}

/* The cut part of a file: @len bytes at @p. */
static int parse_cuts(struct ktau_trace *t, const char *p, size_t len)
{
	uint32_t head[2];
	size_t i;

	if (len < sizeof(head))
		return fail(-EBADMSG, "cut part of %zu bytes", len);
	memcpy(head, p, sizeof(head));
	if (head[1] || (len - sizeof(head)) / sizeof(*t->cuts) != head[0] ||
	    (len - sizeof(head)) % sizeof(*t->cuts))
		return fail(-EBADMSG, "bad cut part: %u entries in %zu bytes", head[0], len);
	t->cuts = malloc(head[0] ? head[0] * sizeof(*t->cuts) : 1);
	if (!t->cuts)
		return -ENOMEM;
	memcpy(t->cuts, p + sizeof(head), head[0] * sizeof(*t->cuts));
	t->ncuts = head[0];
	/* Sorted, once each, and no more calls than a thread could have cut. */
	for (i = 0; i < t->ncuts; i++)
		if (t->cuts[i].tid <= 0 || !t->cuts[i].calls || t->cuts[i].calls > UINT32_MAX ||
		    (i && (t->cuts[i].tid < t->cuts[i - 1].tid ||
			   (t->cuts[i].tid == t->cuts[i - 1].tid &&
			    t->cuts[i].id <= t->cuts[i - 1].id))))
			return fail(-EBADMSG, "bad cut entry %zu (tid %d, id %u, %llu calls)", i,
				    t->cuts[i].tid, t->cuts[i].id,
				    (unsigned long long)t->cuts[i].calls);
	return 0;
}

/* The samples part of a file: @len bytes at @p, into t's sample fields. */
static int parse_samples(struct ktau_trace *t, const char *p, size_t len)
{
	struct tracefile_samples sh;
	const char *end;
	size_t off = sizeof(sh), i, k, at = 0, rest;

	if (len < sizeof(sh))
		return fail(-EBADMSG, "samples part of %zu bytes (its head is %zu)", len, sizeof(sh));
	memcpy(&sh, p, sizeof(sh));
	end = memchr(sh.event, '\0', sizeof(sh.event));
	if (!end)
		return fail(-EBADMSG, "samples part: the event is not NUL-terminated");
	for (i = (size_t)(end - sh.event); i < sizeof(sh.event); i++)
		if (sh.event[i])
			return fail(-EBADMSG, "samples part: bytes after the event's NUL are not 0");
	if (sh.reserved)
		return fail(-EBADMSG, "samples part: reserved field %#x is not 0", sh.reserved);
	if (sh.flags & ~(uint32_t)KTAU_SAMPLE_FLAGS)
		return fail(-EBADMSG, "samples part: unknown sampler flags %#x", sh.flags);
	if (!sh.event[0] && (sh.flags || sh.nthreads || sh.nnames || sh.nsamples))
		return fail(-EBADMSG, "samples part without an event has flags %#x, %u threads, "
			    "%u names, %llu samples", sh.flags, sh.nthreads, sh.nnames,
			    (unsigned long long)sh.nsamples);
	memcpy(t->sample_event, sh.event, sizeof(t->sample_event));
	t->sample_flags = sh.flags;
	/* The names: 5 bytes each at least. */
	if (sh.nnames > (len - off) / 5)
		return fail(-EBADMSG, "samples part: %u names in %zu bytes", sh.nnames, len - off);
	t->sample_names = calloc((size_t)sh.nnames + 1, sizeof(*t->sample_names));
	if (!t->sample_names)
		return -ENOMEM;
	for (i = 0; i < sh.nnames; i++) {
		uint32_t l;

		if (len - off < 4)
			return fail(-EBADMSG, "samples part: name %zu cut short", i);
		memcpy(&l, p + off, 4);
		off += 4;
		if (l > len - off)
			return fail(-EBADMSG, "samples part: name %zu of %u bytes cut short", i, l);
		if (!l || memchr(p + off, '\0', l))
			return fail(-EBADMSG, "samples part: name %zu %s", i,
				    l ? "has a NUL inside" : "is empty");
		t->sample_names[i] = strndup(p + off, l);
		if (!t->sample_names[i])
			return -ENOMEM;
		t->nsample_names++;
		off += l;
	}
	for (; off % 8; off++)
		if (off >= len || p[off])
			return fail(-EBADMSG, "samples part: the names' padding is %s",
				    off >= len ? "cut short" : "not 0");
	/* The sizes add up: the threads, then nsamples samples exactly. */
	if (sh.nthreads > (len - off) / sizeof(struct tracefile_sthread))
		return fail(-EBADMSG, "samples part: %u threads in %zu bytes", sh.nthreads,
			    len - off);
	rest = len - off - sh.nthreads * sizeof(struct tracefile_sthread);
	if (rest % sizeof(struct tracefile_sample) ||
	    rest / sizeof(struct tracefile_sample) != sh.nsamples)
		return fail(-EBADMSG, "samples part: %llu samples of %zu bytes do not fill its last "
			    "%zu bytes", (unsigned long long)sh.nsamples,
			    sizeof(struct tracefile_sample), rest);
	t->sthreads = malloc(((size_t)sh.nthreads + 1) * sizeof(*t->sthreads));
	t->samples = malloc(((size_t)sh.nsamples + 1) * sizeof(*t->samples));
	if (!t->sthreads || !t->samples)
		return -ENOMEM;
	for (i = 0; i < sh.nthreads; i++) {
		struct ktau_trace_sthread *st = &t->sthreads[i];
		struct tracefile_sthread ft;

		memcpy(&ft, p + off + i * sizeof(ft), sizeof(ft));
		if (ft.tid <= 0 || ft.pid <= 0 || ft.start_ns > ft.end_ns)
			return fail(-EBADMSG, "sampled thread %zu: tid %d, pid %d, window [%llu, %llu]",
				    i, ft.tid, ft.pid, (unsigned long long)ft.start_ns,
				    (unsigned long long)ft.end_ns);
		if (ft.n > sh.nsamples - at)
			return fail(-EBADMSG, "sampled thread %zu (tid %d): %llu samples, but nsamples "
				    "%llu leaves %llu", i, ft.tid, (unsigned long long)ft.n,
				    (unsigned long long)sh.nsamples,
				    (unsigned long long)(sh.nsamples - at));
		st->tid = ft.tid;
		st->pid = ft.pid;
		st->start_ns = ft.start_ns;
		st->end_ns = ft.end_ns;
		st->taken = ft.taken;
		st->lost = ft.lost;
		st->first = at;
		st->n = (size_t)ft.n;
		at += (size_t)ft.n;
	}
	if (at != sh.nsamples)
		return fail(-EBADMSG, "samples part: nsamples %llu, the threads' n add up to %zu",
			    (unsigned long long)sh.nsamples, at);
	off += sh.nthreads * sizeof(struct tracefile_sthread);
	t->nsthreads = sh.nthreads;
	for (i = 0; i < t->nsthreads; i++) {
		const struct ktau_trace_sthread *st = &t->sthreads[i];

		for (k = st->first; k < st->first + st->n; k++) {
			struct ktau_trace_sample *s = &t->samples[k];
			struct tracefile_sample fs;

			memcpy(&fs, p + off + k * sizeof(fs), sizeof(fs));
			if (fs.reserved || fs.flags & ~TF_SAMPLE_USER)
				return fail(-EBADMSG, "sample %zu of thread %d: flags %#x, reserved "
					    "field %#x", k - st->first, st->tid, fs.flags, fs.reserved);
			if (fs.name != UINT32_MAX && fs.name >= sh.nnames)
				return fail(-EBADMSG, "sample %zu of thread %d: name %u of %u",
					    k - st->first, st->tid, fs.name, sh.nnames);
			if (fs.time_ns < st->start_ns || fs.time_ns > st->end_ns)
				return fail(-EBADMSG, "sample %zu of thread %d: at %llu ns, outside "
					    "its window [%llu, %llu]", k - st->first, st->tid,
					    (unsigned long long)fs.time_ns,
					    (unsigned long long)st->start_ns,
					    (unsigned long long)st->end_ns);
			if (k > st->first && fs.time_ns < t->samples[k - 1].time_ns)
				return fail(-EBADMSG, "sample %zu of thread %d: at %llu ns, before "
					    "the one before it (%llu ns)", k - st->first, st->tid,
					    (unsigned long long)fs.time_ns,
					    (unsigned long long)t->samples[k - 1].time_ns);
			s->ip = fs.ip;
			s->time_ns = fs.time_ns;
			s->id = fs.id;
			s->user = fs.flags & TF_SAMPLE_USER;
			s->name = fs.name;
		}
	}
	t->nsamples = (size_t)sh.nsamples;
	return 0;
}

/*
 * The samples part of t, in memory (*@out, @len bytes); "" as the event:
 * an empty part. -EINVAL (ktau_trace_error() says why) when the reader
 * would refuse it.
 */
static int build_samples(const struct ktau_trace *t, char **out, size_t *len)
{
	struct tracefile_samples sh = { 0 };
	struct ktau_trace *chk;
	size_t i, k, off, nsamples = 0, names = 0;
	char *b, msg[WHY_SIZE];
	int ret;

	*out = NULL;
	*len = 0;
	if (!memchr(t->sample_event, '\0', sizeof(t->sample_event)))
		return fail(-EINVAL, "the sample event is not NUL-terminated");
	if (t->sample_event[0]) {
		if (t->nsthreads > UINT32_MAX || t->nsample_names > UINT32_MAX)
			return -EOVERFLOW;
		for (i = 0; i < t->nsthreads; i++) {
			const struct ktau_trace_sthread *st = &t->sthreads[i];

			if (st->first > t->nsamples || st->n > t->nsamples - st->first)
				return fail(-EINVAL, "sampled thread %zu (tid %d): samples %zu.. of "
					    "%zu beyond the trace's %zu", i, st->tid, st->first,
					    st->n, t->nsamples);
			nsamples += st->n;
		}
		for (i = 0; i < t->nsample_names; i++) {
			size_t l = t->sample_names[i] ? strlen(t->sample_names[i]) : 0;

			if (l > UINT32_MAX)
				return -EOVERFLOW;
			names += 4 + l;
		}
		memcpy(sh.event, t->sample_event, sizeof(sh.event));
		sh.flags = t->sample_flags;
		sh.nthreads = (uint32_t)t->nsthreads;
		sh.nnames = (uint32_t)t->nsample_names;
		sh.nsamples = nsamples;
	}
	off = sizeof(sh) + names;
	off += off % 8 ? 8 - off % 8 : 0;
	*len = off + sh.nthreads * sizeof(struct tracefile_sthread) +
	       nsamples * sizeof(struct tracefile_sample);
	b = calloc(1, *len);
	if (!b)
		return -ENOMEM;
	memcpy(b, &sh, sizeof(sh));
	off = sizeof(sh);
	for (i = 0; i < sh.nnames; i++) {
		uint32_t l = (uint32_t)(t->sample_names[i] ? strlen(t->sample_names[i]) : 0);

		memcpy(b + off, &l, 4);
		memcpy(b + off + 4, t->sample_names[i], l);
		off += 4 + l;
	}
	off += off % 8 ? 8 - off % 8 : 0;
	for (i = 0; i < sh.nthreads; i++) {
		const struct ktau_trace_sthread *st = &t->sthreads[i];
		struct tracefile_sthread ft = {
			.tid = st->tid, .pid = st->pid, .start_ns = st->start_ns,
			.end_ns = st->end_ns, .taken = st->taken, .lost = st->lost, .n = st->n,
		};

		memcpy(b + off + i * sizeof(ft), &ft, sizeof(ft));
	}
	off += sh.nthreads * sizeof(struct tracefile_sthread);
	for (i = 0; i < sh.nthreads; i++) {
		const struct ktau_trace_sthread *st = &t->sthreads[i];

		for (k = st->first; k < st->first + st->n; k++) {
			const struct ktau_trace_sample *s = &t->samples[k];
			struct tracefile_sample fs = {
				.ip = s->ip, .time_ns = s->time_ns, .id = s->id,
				.flags = s->user ? TF_SAMPLE_USER : 0, .name = s->name,
			};

			memcpy(b + off, &fs, sizeof(fs));
			off += sizeof(fs);
		}
	}
	/* What the reader would refuse is not written. */
	chk = ktau_trace_new();
	ret = chk ? parse_samples(chk, b, *len) : -ENOMEM;
	ktau_trace_free(chk);
	if (ret == -EBADMSG) {
		snprintf(msg, sizeof(msg), "%s", ktau_trace_error());
		ret = fail(-EINVAL, "the samples cannot be written: %s", msg);
	}
	if (ret) {
		free(b);
		*len = 0;
		return ret;
	}
	*out = b;
	return 0;
}

/*
 * A file started without room for the samples' length (no sample event
 * at ktau_trace_file_start): its chunks move on to make it, read back
 * through /proc/self/fd when the file was opened for writing only.
 */
static int grow_hdr(struct ktau_trace_file *tf)
{
	const off_t d = TRACEFILE_HDR3 - TRACEFILE_HDR;
	uint64_t left = tf->chunks_len;
	size_t bs = 1 << 16;
	char *b = malloc(bs), path[64];
	int ret = 0, rfd = tf->fd;

	if (!b)
		return -ENOMEM;
	if (left && pread(rfd, b, 1, TRACEFILE_HDR) < 0 && errno == EBADF) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", tf->fd);
		rfd = open(path, O_RDONLY | O_CLOEXEC);
		if (rfd < 0)
			ret = fail(-errno, "cannot read the chunks back to make room for the "
				   "samples (%s): %s", path, strerror(errno));
	}
	while (left && !ret) {
		size_t n = left < bs ? (size_t)left : bs;
		off_t at = (off_t)(TRACEFILE_HDR + left - n);
		ssize_t r = pread(rfd, b, n, at);

		if (r == (ssize_t)n)
			r = pwrite(tf->fd, b, n, at + d);
		if (r != (ssize_t)n)
			ret = r < 0 ? -errno : -EIO;
		left -= n;
	}
	free(b);
	if (rfd != tf->fd && rfd >= 0)
		close(rfd);
	if (!ret && lseek(tf->fd, (off_t)(TRACEFILE_HDR3 + tf->chunks_len), SEEK_SET) < 0)
		ret = -errno;
	if (!ret)
		tf->hdr_size = TRACEFILE_HDR3;
	return ret;
}

int ktau_trace_file_finish(struct ktau_trace_file *tf, const struct ktau_trace *t)
{
	struct tracefile_hdr h;
	char *funcs = NULL, *samples = NULL;
	void *prof = NULL;
	size_t flen = 0, plen = 0, slen = 0;
	uint64_t ulen = 0, clen;
	uint32_t cutlen = 0;
	int ret = 0;

	/* Samples (or room for them from the start): version 3. */
	if (t->sample_event[0] || tf->hdr_size == TRACEFILE_HDR3)
		ret = build_samples(t, &samples, &slen);
	if (!ret && samples && tf->hdr_size != TRACEFILE_HDR3)
		ret = grow_hdr(tf);
	if (!ret && t->reg)
		ret = ktau_registry_format(t->reg, NULL, &funcs, &flen);
	if (!ret && t->profile)
		ret = ktau_encode(t->profile, &prof, &plen);
	if (!ret && flen > UINT32_MAX)
		ret = -EOVERFLOW;
	if (!ret)
		ret = ktau__write_all(tf->fd, funcs, flen);
	if (!ret)
		ret = ktau__write_all(tf->fd, prof, plen);
	clen = tf->chunks_len;
	if (!ret && t->nuser_names)
		ret = write_user(tf, t, &ulen);
	if (!ret && t->ncuts)
		ret = write_cuts(tf, t, &cutlen);
	if (!ret && samples)
		ret = ktau__write_all(tf->fd, samples, slen);
	if (!ret) {
		fill_hdr(&h, t, tf->hdr_size);
		h.flags = TF_COMPLETE | (t->profile && t->kernel_profile ? TF_KERNEL_PROFILE : 0);
		h.chunks_len = clen;
		h.funcs_len = (uint32_t)flen;
		h.prof_len = plen;
		h.user_len = ulen;
		h.cut_len = cutlen;
		h.sample_len = slen;
		h.version = samples ? 3 : cutlen ? 2 : 1;
		if (pwrite(tf->fd, &h, tf->hdr_size, 0) != (ssize_t)tf->hdr_size)
			ret = -EIO;
	}
	free(funcs);
	free(prof);
	free(samples);
	free(tf);
	return ret;
}

int ktau_trace_parse_file(const void *buf, size_t len, struct ktau_trace **out)
{
	const char *p = buf;
	struct tracefile_hdr h;
	struct ktau_trace *t;
	size_t chunks_len;
	int ret;

	*out = NULL;
	why_clear();
	if (len < TRACEFILE_HDR || memcmp(p, TRACEFILE_MAGIC, 8))
		return fail(-EBADMSG, "not a KTAU raw trace file (no \"%s\" header)",
			    TRACEFILE_MAGIC);
	memset(&h, 0, sizeof(h));
	memcpy(&h, p, TRACEFILE_HDR);
	if (h.version < 1 || h.version > TRACEFILE_VERSION)
		return fail(-EBADMSG, "raw trace file version %u: this libktau reads versions "
			    "1 to %d", h.version, TRACEFILE_VERSION);
	if (h.version >= 3 && (h.hdr_size < TRACEFILE_HDR3 || h.hdr_size > len))
		return fail(-EBADMSG, "raw trace file version %u with a header of %u bytes (%d "
			    "at least)", h.version, h.hdr_size, TRACEFILE_HDR3);
	if (h.version >= 3)
		memcpy(&h.sample_len, p + TRACEFILE_HDR, sizeof(h.sample_len));
	if (h.abi_major != KTAU_ABI_VERSION_MAJOR)
		return fail(-EBADMSG, "records of ABI %u.%u: this libktau reads ABI %d",
			    h.abi_major, h.abi_minor, KTAU_ABI_VERSION_MAJOR);
	if (h.hdr_size < TRACEFILE_HDR || h.hdr_size % 8 || h.hdr_size > len ||
	    (h.version == 1 && h.cut_len) ||
	    h.flags & ~TF_FLAGS || h.rank < -1 || !memchr(h.hostname, '\0', sizeof(h.hostname)) ||
	    !memchr(h.release, '\0', sizeof(h.release)) ||
	    !memchr(h.command, '\0', sizeof(h.command)))
		return fail(-EBADMSG, "bad raw trace file header");
	if (h.flags & TF_COMPLETE) {
		const uint64_t part[] = { h.chunks_len, h.funcs_len, h.prof_len, h.user_len,
					  h.cut_len, h.sample_len };
		uint64_t left = len - h.hdr_size;
		size_t i;

		for (i = 0; i < sizeof(part) / sizeof(part[0]) && part[i] <= left; i++)
			left -= part[i];
		if (i < sizeof(part) / sizeof(part[0]) || left)
			return fail(-EBADMSG, "raw trace file of %zu bytes: its parts (%llu + %u + %llu "
				    "+ %llu + %u + %llu bytes) do not fill it", len,
				    (unsigned long long)h.chunks_len, h.funcs_len,
				    (unsigned long long)h.prof_len, (unsigned long long)h.user_len,
				    h.cut_len, (unsigned long long)h.sample_len);
		if (h.version >= 3 && !h.sample_len)
			return fail(-EBADMSG, "raw trace file version %u without its samples part",
				    h.version);
		chunks_len = h.chunks_len;
	} else {
		if (h.chunks_len || h.funcs_len || h.prof_len || h.user_len || h.cut_len ||
		    h.sample_len)
			return fail(-EBADMSG, "bad raw trace file header");
		chunks_len = len - h.hdr_size;
	}
	t = ktau_trace_new();
	if (!t)
		return -ENOMEM;
	t->rank = h.rank;
	t->start_ns = h.start_ns;
	t->end_ns = h.end_ns;
	t->realtime_ns = h.realtime_ns;
	t->groups = h.groups;
	t->stats.tasks = h.stats[0];
	t->stats.records = h.stats[1];
	t->stats.lost = h.stats[2];
	t->stats.refused = h.stats[3];
	t->stats.denied = h.stats[4];
	t->stats.buffered = h.stats[5];
	t->kernel_profile = !!(h.flags & TF_KERNEL_PROFILE);
	memcpy(t->hostname, h.hostname, sizeof(t->hostname));
	memcpy(t->release, h.release, sizeof(t->release));
	memcpy(t->command, h.command, sizeof(h.command));
	if (h.flags & TF_COMPLETE) {
		ret = ktau_trace_add_chunks(t, p + h.hdr_size, chunks_len);
		if (ret >= 0)
			ret = ktau_registry_parse(p + h.hdr_size + chunks_len, h.funcs_len, &t->reg);
		if (ret == -EBADMSG && !*ktau_trace_error())
			fail(ret, "bad registry text in the raw trace file");
		if (ret >= 0 && h.prof_len) {
			t->profile = ktau_snap_new();
			ret = t->profile ? ktau_decode(p + h.hdr_size + chunks_len + h.funcs_len,
						       h.prof_len, &t->profile) : -ENOMEM;
			if (ret == -EBADMSG)
				fail(ret, "bad profile records in the raw trace file");
		}
		if (ret >= 0 && h.user_len) {
			const char *u = p + h.hdr_size + chunks_len + h.funcs_len + h.prof_len;
			size_t off = 4, base = 0;
			uint32_t n;

			if (h.user_len < 4) {
				ret = fail(-EBADMSG, "user part cut short");
			} else {
				memcpy(&n, u, 4);
				ret = add_user_names(t, u, h.user_len, &off, n, &base);
			}
			off += off % 8 ? 8 - off % 8 : 0;
			if (!ret && (base || off > h.user_len))
				ret = fail(-EBADMSG, "bad user part of the raw trace file");
			if (!ret)
				ret = add_chunks(t, u + off, h.user_len - off, 1);
		}
		if (ret >= 0 && h.cut_len)
			ret = parse_cuts(t, p + h.hdr_size + chunks_len + h.funcs_len + h.prof_len +
					 h.user_len, h.cut_len);
		if (ret >= 0 && h.sample_len)
			ret = parse_samples(t, p + h.hdr_size + chunks_len + h.funcs_len + h.prof_len +
					    h.user_len + h.cut_len, h.sample_len);
	} else {
		/* An unfinished file: its whole chunks. */
		struct ktau_trace_chunk_info ci;
		size_t off = 0, good = 0;

		while ((ret = ktau_trace_next_chunk(p + h.hdr_size, chunks_len, &off, &ci)) > 0)
			good = off;
		ret = ktau_trace_add_chunks(t, p + h.hdr_size, good);
		t->truncated = 1;
		t->truncated_bytes = chunks_len - good;
	}
	if (ret < 0) {
		ktau_trace_free(t);
		return ret;
	}
	*out = t;
	return 0;
}

int ktau_trace_load(const char *path, struct ktau_trace **out)
{
	char *buf;
	size_t len;
	int ret;

	*out = NULL;
	why_clear();
	ret = ktau__slurp(path, &buf, &len);
	if (ret)
		return fail(ret, "cannot read %s: %s", path, strerror(-ret));
	ret = ktau_trace_parse_file(buf, len, out);
	free(buf);
	return ret;
}

/* ---- Calls in time order ------------------------------------------- */

static int cmp_start(const void *a, const void *b)
{
	const struct ktau_trace_record *x = *(const struct ktau_trace_record *const *)a;
	const struct ktau_trace_record *y = *(const struct ktau_trace_record *const *)b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	/* A user routine encloses the kernel routines that start with it. */
	if ((x->id & KTAU_LIB_TRACE_USER) != (y->id & KTAU_LIB_TRACE_USER))
		return x->id & KTAU_LIB_TRACE_USER ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	/* The longer one encloses the other. */
	if (x->end_ns != y->end_ns)
		return x->end_ns > y->end_ns ? -1 : 1;
	return x < y ? -1 : x > y;
}

int ktau_trace_sorted(const struct ktau_trace_thread *th, const struct ktau_trace_record ***out,
		      size_t *n)
{
	const struct ktau_trace_record **v;
	size_t i, k = 0;

	*out = NULL;
	*n = 0;
	v = malloc((th->nrecs + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < th->nrecs; i++)
		v[k++] = &th->recs[i];
	qsort(v, k, sizeof(*v), cmp_start);
	*out = v;
	*n = k;
	return 0;
}

int ktau_trace_walk(const struct ktau_trace_thread *th,
		    int (*fn)(void *arg, int enter, uint64_t ts, const struct ktau_trace_record *r),
		    void *arg, uint64_t *clamped)
{
	const struct ktau_trace_record **v, **stack;
	uint64_t *ends, last = 0;
	size_t n, i, sp = 0;
	int ret;

	if (clamped)
		*clamped = 0;
	ret = ktau_trace_sorted(th, &v, &n);
	if (ret)
		return ret;
	stack = malloc((n + 1) * sizeof(*stack));
	ends = malloc((n + 1) * sizeof(*ends));
	if (!stack || !ends) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i <= n && !ret; i++) {
		const struct ktau_trace_record *r = i < n ? v[i] : NULL;

		if (r && r->kind != KTAU_LIB_TRACE_CALL) {
			/* Points: at their (start) time, between the calls. */
			while (sp && ends[sp - 1] <= r->start_ns && !ret) {
				sp--;
				last = ends[sp];
				ret = fn(arg, 0, ends[sp], stack[sp]);
			}
			if (!ret)
				ret = fn(arg, 2, r->start_ns < last ? last : r->start_ns, r);
			continue;
		}
		/* Leave what ended before r starts (everything at the end). */
		while (sp && (!r || ends[sp - 1] <= r->start_ns) && !ret) {
			sp--;
			last = ends[sp];
			ret = fn(arg, 0, ends[sp], stack[sp]);
		}
		if (!r || ret)
			break;
		stack[sp] = r;
		ends[sp] = r->end_ns;
		/* A call that ends after the one it is in: cut at its end. */
		if (sp && ends[sp] > ends[sp - 1]) {
			ends[sp] = ends[sp - 1];
			if (clamped)
				(*clamped)++;
		}
		sp++;
		last = r->start_ns;
		ret = fn(arg, 1, r->start_ns, r);
	}
out:
	free(stack);
	free(ends);
	free(v);
	return ret;
}
