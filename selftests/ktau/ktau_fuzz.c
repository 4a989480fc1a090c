// SPDX-License-Identifier: GPL-2.0
/*
 * A fuzzer for every KTAU input: the files of /proc/ktau and the views
 * /proc/PID/ktau and /proc/PID/task/TID/ktau. It opens them with random
 * modes, reads and writes random sizes at random offsets, seeks, and
 * calls ioctls with command numbers near KTAU's, random sizes and flags,
 * and pointers that are NULL, unmapped, kernel addresses, non-canonical,
 * misaligned, read-only, at the end of a mapping (so that a copy runs
 * into an unmapped page) or overlapping the call's other buffers.
 * Meanwhile children and threads come and go: collector members, shared
 * page owners (ABI 1.1), children that exec, a victim process that is
 * killed and replaced while its views are open. Dynamic probes (ABI 1.2)
 * are added and removed through /proc/ktau/probes on a few harmless
 * functions only, and none is left when the fuzzer is done.
 *
 * Each variant fuzzes in a child process with KTAU_FUZZ_THREADS threads:
 * as root, as an unprivileged user and as a user with only CAP_PERFMON;
 * the unprivileged ones also hold descriptors that root opened. Asserted:
 * nothing crashes or hangs; each call fails only with an errno expected
 * for it; an unprivileged caller never gets what it may not have; what
 * the kernel returns is well formed and has no kernel address; and
 * afterwards the groups are as they were, the kernel is not tainted and
 * logged no warning, and exact counts are exact again.
 *
 * Environment:
 *   KTAU_FUZZ_SEED	the seed, decimal or 0x hex (default: from the clock;
 *			always printed, so that a run can be repeated)
 *   KTAU_FUZZ_SECONDS	how long each variant fuzzes (default 2)
 *   KTAU_FUZZ_THREADS	fuzzing threads per variant (default 2, at most 8)
 *   KTAU_FUZZ_VERBOSE	1: log every call (slow)
 *   KTAU_FUZZ_SKIP	KTAU ioctl numbers not to call, such as "9,10,11"
 *			(to get past a known bug)
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <linux/fs.h>

#include "ktau_util.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE	0x100000
#endif

#define FZ_MAX_THREADS	8
#define FZ_RING		48	/* calls remembered per thread */
#define FZ_DESC		160
#define FZ_NFDS		12	/* descriptors per thread */
#define FZ_MAX_LOGGED	25	/* failures printed in full */
#define FZ_SLOW_NS	(10 * KTAU_NSEC_PER_SEC)	/* one call longer: a failure */
#define FZ_MARGIN_S	60	/* beyond the fuzzing time: a hang */
#define FZ_ALL_GROUPS	((1ull << KTAU_NR_GROUPS) - 1)

/*
 * Each thread's memory, at a fixed address far from anything the C
 * library maps, so that its holes stay unmapped: RW scratch pages, a hole
 * right after them, a read-only page, a PROT_NONE page, pages for shared
 * page registrations, a shared memfd page and another hole.
 */
#define FZ_BASE		0x300000000000ull
#define FZ_STRIDE	0x1000000ull
#define FZ_RW_PAGES	16
#define FZ_PG_HOLE1	16
#define FZ_PG_RO	17
#define FZ_PG_NONE	18
#define FZ_PG_SH	19	/* 4 pages */
#define FZ_SH_PAGES	4
#define FZ_PG_MEMFD	23
#define FZ_PG_HOLE2	24
#define FZ_PAGES	25

/* Offsets of the prepared arguments in the read-only page. */
#define FZ_RO_SNAP	0
#define FZ_RO_REG	128
#define FZ_RO_MASK	256
#define FZ_RO_CMD	512
#define FZ_RO_ATTR	640
#define FZ_RO_SREAD	768
#define FZ_RO_PROBE	896

/* What a descriptor refers to. */
enum fz_kind {
	K_VERSION, K_FUNCTIONS, K_CONTROL, K_AGGREGATE, K_PROFILES, K_COLLECT,
	K_TRACE,	/* /proc/ktau/trace (ABI 1.5) */
	K_PROBES,	/* /proc/ktau/probes (ABI 1.2, CONFIG_FPROBE) */
	K_UNKNOWN,	/* another /proc/ktau entry, added after this test */
	K_OWN,		/* a view of the fuzzing process itself */
	K_GONE,		/* a thread of ours that has exited */
	K_VICTIM,	/* a child of ours that is killed and replaced */
	K_FOREIGN,	/* init, kthreadd, the root test process */
	K_BAD,		/* not a descriptor */
	K_NR
};

static const char * const kind_names[K_NR] = {
	"version", "functions", "control", "aggregate", "profiles", "collect",
	"trace", "probes", "unknown", "own", "gone", "victim", "foreign", "badfd",
};

struct fz_entry {
	char path[64];
	enum fz_kind kind;
};

/* Shared with the test process, which prints it when the fuzzer dies. */
struct fz_ring {
	unsigned int pos;
	char desc[FZ_RING][FZ_DESC];
};

struct fz_stats {
	unsigned long calls;
	unsigned long ok;
	unsigned long forks;
	unsigned long threads;
	unsigned long registered;
	unsigned long probes;		/* probes added */
	unsigned long by_errno[134];
};

struct fz_shm {
	int failures;
	int nthreads;
	int done;
	struct fz_ring ring[FZ_MAX_THREADS];
	struct fz_stats stats[FZ_MAX_THREADS];
};

/* What the fuzzing process may do. */
struct fz_cfg {
	bool root;		/* DAC override, CAP_SYS_PTRACE */
	bool perfmon;		/* CAP_PERFMON or CAP_SYS_ADMIN */
	bool shared;		/* ABI 1.1: shared pages and sampling */
	bool hide_kaddr;	/* samples' kernel addresses hidden from users */
	bool hide_kaddr_root;	/* ...and from root (kptr_restrict 2) */
	bool probes;		/* /proc/ktau/probes exists */
	bool trace;		/* /proc/ktau/trace exists (CONFIG_KTAU_TRACE) */
	pid_t tids[FZ_MAX_THREADS];	/* of the fuzzing threads */
	int nthreads;
	bool verbose;
	__u64 skip_nr;		/* KTAU ioctl numbers not to call */
	__u64 seed;
	__u64 deadline;
	pid_t test_pid;		/* the root test process */
	int memfd;
	struct fz_entry *entries;
	int nentries;
	/* Descriptors opened before fork: by root, for the unprivileged ones. */
	int inh_fd[5];
	enum fz_kind inh_kind[5];
	int inh_mode[5];
	int ninh;
	/* Shared by the threads, never closed while they run. */
	int profiles_fd;
	int collect_fd;
	pid_t victim;
	struct fz_shm *shm;
};

struct fz_fd {
	int fd;
	enum fz_kind kind;
	int mode;		/* O_RDONLY, O_WRONLY, O_RDWR or O_PATH */
	bool by_root;		/* opened by root: its credentials are root's */
};

struct fz_thread {
	int idx;
	pthread_t th;
	pid_t tid;
	__u64 rng;
	struct fz_cfg *cfg;
	struct fz_fd fds[FZ_NFDS];
	int nfds;
	char *base;		/* FZ_PAGES pages */
	char *rw;
	size_t rw_size;
	long page;
	bool registered;	/* a shared page of this thread is registered */
	char *reg_page;		/* which, when known and private to the thread */
	pid_t gone_tid;		/* the last short-lived thread */
	unsigned int probed;	/* fz_probe_names this thread may have probed */
	int probe_id;		/* the last probe it added */
	struct fz_ring *ring;
	struct fz_stats *st;
	char *desc;		/* the ring slot of the current call */
};

static struct fz_cfg cfg;

/* xorshift64*: a fast PRNG whose whole state is one seed. */
static __u64 fz_rnd(struct fz_thread *t)
{
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545f4914f6cdd1dull;
}

static __u64 fz_below(struct fz_thread *t, __u64 n)
{
	return n ? fz_rnd(t) % n : 0;
}

static bool fz_chance(struct fz_thread *t, unsigned int percent)
{
	return fz_below(t, 100) < percent;
}

/* splitmix64, to derive the seed of each thread from the run's seed */
static __u64 fz_mix(__u64 x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return (x ^ (x >> 31)) | 1;
}

static const char *fz_errname(int err)
{
	const char *s = err ? strerrorname_np(err) : "0";

	return s ? s : "E?";
}

/* Start the description of the call about to be made. */
static void fz_note(struct fz_thread *t, const char *fmt, ...)
{
	va_list ap;

	t->desc = t->ring->desc[t->ring->pos % FZ_RING];
	va_start(ap, fmt);
	vsnprintf(t->desc, FZ_DESC, fmt, ap);
	va_end(ap);
	__atomic_store_n(&t->ring->pos, t->ring->pos + 1, __ATOMIC_RELEASE);
}

static void fz_fail(struct fz_thread *t, const char *fmt, ...)
{
	int n = __atomic_add_fetch(&cfg.shm->failures, 1, __ATOMIC_RELAXED);
	char msg[256];
	va_list ap;

	if (n > FZ_MAX_LOGGED)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ktau_log("FAIL [thread %d, seed 0x%llx] %s: %s", t->idx,
		 (unsigned long long)cfg.seed, t->desc ? t->desc : "-", msg);
}

/* Account a call's result: ret < 0 means failure with errno err. */
static void fz_result(struct fz_thread *t, long ret, int err, __u64 t0)
{
	__u64 dt = ktau_now_ns() - t0;
	size_t len = strlen(t->desc);

	t->st->calls++;
	if (ret >= 0)
		t->st->ok++;
	else if (err > 0 && err < (int)ARRAY_SIZE(t->st->by_errno))
		t->st->by_errno[err]++;
	snprintf(t->desc + len, FZ_DESC - len, " = %ld%s%s", ret, ret < 0 ? " " : "",
		 ret < 0 ? fz_errname(err) : "");
	if (cfg.verbose)
		ktau_log("[%d] %s", t->idx, t->desc);
	if (dt > FZ_SLOW_NS)
		fz_fail(t, "took %llu ms", (unsigned long long)(dt / KTAU_NSEC_PER_MSEC));
}

/* Pointers. */
enum fz_ptr {
	P_RW, P_RW_END, P_RW_MIS, P_NULL, P_LOW, P_HOLE, P_RO, P_NONE, P_KERN,
	P_NONCANON, P_TEXT, P_MEMFD, P_NR
};

static const __u64 kernel_addrs[] = {
	0xffffffff81000000ull,	/* kernel text */
	0xffff888000000000ull,	/* direct map */
	0xffffc90000000000ull,	/* vmalloc */
	0xffffea0000000000ull,	/* vmemmap */
	0xffffffffff600000ull,	/* vsyscall page */
	0xfffffffffffff000ull,
	0xffffffffffffffffull,
};

static const __u64 noncanon_addrs[] = {
	0x0000800000000000ull,	/* just past user space */
	0x00007ffffffff000ull,	/* TASK_SIZE: the first address past it */
	0x8000000000000000ull,
	0x0000fffffffffff8ull,
};

static char *rw_end(struct fz_thread *t)
{
	return t->rw + t->rw_size;
}

/*
 * A pointer of a random kind. @room: how many bytes from it are in the
 * RW scratch pages (0 when it is not in them).
 */
static char *fz_ptr(struct fz_thread *t, enum fz_ptr *kindp, size_t *room)
{
	enum fz_ptr k;
	char *p;
	__u64 r = fz_below(t, 100);

	if (r < 45)
		k = P_RW;
	else if (r < 55)
		k = P_RW_END;
	else if (r < 60)
		k = P_RW_MIS;
	else
		k = (enum fz_ptr)(P_NULL + fz_below(t, P_NR - P_NULL));
	switch (k) {
	case P_RW:
		p = t->rw + (fz_chance(t, 30) ? 0 : (fz_below(t, t->rw_size) & ~7ul));
		break;
	case P_RW_END:
		p = rw_end(t) - fz_below(t, 129);
		break;
	case P_RW_MIS:
		p = t->rw + (fz_below(t, t->rw_size) | 1);
		break;
	case P_NULL:
		p = NULL;
		break;
	case P_LOW:
		p = (char *)(uintptr_t)(1 + fz_below(t, 0xffff));
		break;
	case P_HOLE:
		p = t->base + FZ_PG_HOLE1 * t->page + fz_below(t, t->page);
		break;
	case P_RO:
		p = t->base + FZ_PG_RO * t->page + fz_below(t, t->page);
		break;
	case P_NONE:
		p = t->base + FZ_PG_NONE * t->page + fz_below(t, t->page);
		break;
	case P_KERN:
		p = (char *)(uintptr_t)kernel_addrs[fz_below(t, ARRAY_SIZE(kernel_addrs))];
		break;
	case P_NONCANON:
		p = (char *)(uintptr_t)noncanon_addrs[fz_below(t, ARRAY_SIZE(noncanon_addrs))];
		break;
	case P_TEXT:
		p = (char *)(uintptr_t)&fz_rnd;
		break;
	default:
		k = P_MEMFD;
		p = t->base + FZ_PG_MEMFD * t->page + (fz_chance(t, 50) ? 0 : fz_below(t, t->page));
		break;
	}
	if (kindp)
		*kindp = k;
	if (room)
		*room = p >= t->rw && p < rw_end(t) ? (size_t)(rw_end(t) - p) : 0;
	return p;
}

/* Sizes and offsets. */
static size_t fz_size(struct fz_thread *t, size_t room)
{
	static const size_t edge[] = {
		0, 1, 7, 8, 63, 64, 65, 71, 72, 4095, 4096, 4097, 65536,
		0x7ffff000, 0x80000000ul, 0xffffffffful, SIZE_MAX / 2, SIZE_MAX,
	};
	__u64 r = fz_below(t, 100);

	if (r < 25 && room)
		return room;
	if (r < 50)
		return edge[fz_below(t, ARRAY_SIZE(edge))];
	if (r < 80)
		return fz_below(t, 4097);
	return fz_below(t, 1 << 20);
}

static off_t fz_offset(struct fz_thread *t)
{
	static const off_t edge[] = {
		0, 1, 4095, 4096, 4097, 1ll << 31, 1ll << 62, INT64_MAX, -1, INT64_MIN,
	};
	__u64 r = fz_below(t, 100);

	if (r < 40)
		return 0;
	if (r < 60)
		return fz_below(t, 300);
	if (r < 85)
		return edge[fz_below(t, ARRAY_SIZE(edge))];
	return (off_t)fz_rnd(t);
}

/* The errno of a call is one of those it may return. */
static bool fz_errno_in(int err, const int *set, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (set[i] == err)
			return true;
	return false;
}

#define ERRNO_IN(err, ...) \
	fz_errno_in(err, (const int []){ __VA_ARGS__ }, ARRAY_SIZE(((int []){ __VA_ARGS__ })))

/* A seq_file: no pwrite() (ESPIPE). */
static bool kind_is_seq(enum fz_kind k)
{
	return k != K_PROFILES && k != K_COLLECT && k != K_TRACE && k != K_BAD;
}

/* A view of a task: a text profile, shown only after the ptrace check. */
static bool kind_is_view(enum fz_kind k)
{
	return k == K_OWN || k == K_GONE || k == K_VICTIM || k == K_FOREIGN;
}

/*
 * A task view the caller may read: its own, its children's; others'
 * only as root (CAP_SYS_PTRACE).
 */
static bool view_readable(enum fz_kind k)
{
	return k != K_FOREIGN || cfg.root;
}

/* Descriptors. */
static struct fz_fd *fz_pick_fd(struct fz_thread *t, struct fz_fd *tmp)
{
	__u64 r = fz_below(t, 100);
	int i;

	if (r < 80 && t->nfds)
		return &t->fds[fz_below(t, t->nfds)];
	if (r < 88) {
		tmp->fd = cfg.profiles_fd;
		tmp->kind = K_PROFILES;
		tmp->mode = O_RDONLY;
		tmp->by_root = cfg.root;
	} else if (r < 93) {
		tmp->fd = cfg.collect_fd;
		tmp->kind = K_COLLECT;
		tmp->mode = O_RDONLY;
	} else if (r < 98 && cfg.ninh) {
		i = fz_below(t, cfg.ninh);
		tmp->fd = cfg.inh_fd[i];
		tmp->kind = cfg.inh_kind[i];
		tmp->mode = cfg.inh_mode[i];
		tmp->by_root = true;
	} else {
		tmp->fd = fz_chance(t, 50) ? -1 : 4000 + (int)fz_below(t, 1000);
		tmp->kind = K_BAD;
		tmp->mode = O_RDWR;
	}
	return tmp;
}

static void fz_entry_path(struct fz_thread *t, const struct fz_entry *e, char *path,
			  size_t len)
{
	/* Entries with %d are the victim's or a gone thread's. */
	if (e->kind == K_VICTIM)
		snprintf(path, len, e->path, cfg.victim, cfg.victim);
	else if (e->kind == K_GONE)
		snprintf(path, len, e->path, t->gone_tid);
	else if (e->kind == K_OWN && strstr(e->path, "%d"))
		snprintf(path, len, e->path, t->tid);
	else
		snprintf(path, len, "%s", e->path);
}

static void fz_close_one(struct fz_thread *t)
{
	int i = fz_below(t, t->nfds);

	fz_note(t, "close %d(%s)", t->fds[i].fd, kind_names[t->fds[i].kind]);
	if (close(t->fds[i].fd))
		fz_fail(t, "close: %s", strerror(errno));
	t->fds[i] = t->fds[--t->nfds];
}

static void fz_open(struct fz_thread *t)
{
	static const int modes[] = { O_RDONLY, O_RDONLY, O_RDONLY, O_WRONLY, O_RDWR, O_PATH };
	const struct fz_entry *e = &cfg.entries[fz_below(t, cfg.nentries)];
	int mode = modes[fz_below(t, ARRAY_SIZE(modes))], flags = mode, fd, err;
	bool writing = mode == O_WRONLY || mode == O_RDWR, ok;
	char path[96];
	__u64 t0;

	if (t->nfds == FZ_NFDS)
		fz_close_one(t);
	if (fz_chance(t, 30))
		flags |= O_NONBLOCK;
	if (fz_chance(t, 50))
		flags |= O_CLOEXEC;
	fz_entry_path(t, e, path, sizeof(path));
	fz_note(t, "open %s 0%o", path, flags);
	t0 = ktau_now_ns();
	fd = open(path, flags);
	err = errno;
	fz_result(t, fd, err, t0);
	if (fd >= 0) {
		t->fds[t->nfds].fd = fd;
		t->fds[t->nfds].kind = e->kind;
		t->fds[t->nfds].mode = mode;
		t->fds[t->nfds].by_root = cfg.root;
		t->nfds++;
		if (e->kind == K_AGGREGATE && !cfg.perfmon && mode != O_PATH)
			fz_fail(t, "aggregate opened without CAP_PERFMON");
		if (e->kind == K_CONTROL && writing && !cfg.perfmon)
			fz_fail(t, "control opened for writing without CAP_PERFMON");
		if (writing && !cfg.root)
			fz_fail(t, "a 0444 file or root's control opened for writing by a user");
		return;
	}
	switch (e->kind) {
	case K_CONTROL:
		ok = writing && (err == EACCES || (err == EPERM && !cfg.perfmon));
		break;
	case K_AGGREGATE:
		ok = (err == EPERM && !cfg.perfmon) || (writing && err == EACCES && !cfg.root);
		break;
	case K_VICTIM:
	case K_GONE:
		/*
		 * Gone, or about to be; its pid may be another user's task
		 * by now, whose file is 0400 (ABI 1.13).
		 */
		ok = err == ENOENT || err == ESRCH || (err == EACCES && !cfg.root);
		break;
	case K_FOREIGN:
		/* Another user's /proc/PID/ktau is 0400 (ABI 1.13). */
		ok = err == EACCES && !cfg.root;
		break;
	case K_UNKNOWN:
		ok = ERRNO_IN(err, EACCES, EPERM, ENOENT);
		break;
	default:
		ok = writing && err == EACCES && !cfg.root;
		break;
	}
	if (!ok && err != ENOMEM)
		fz_fail(t, "unexpected %s", fz_errname(err));
}

/* Text that a reader may see: no kernel address in any form. */
static void fz_check_text(struct fz_thread *t, const char *buf, size_t n)
{
	if (ktau_text_has_kaddr(buf, n))
		fz_fail(t, "kernel address in the text read");
}

/* The whole of a text view, read from offset 0: well formed. */
static void fz_check_view(struct fz_thread *t, const char *buf, size_t n)
{
	struct ktau_val v;
	char *s;

	s = malloc(n + 1);
	if (!s)
		return;
	memcpy(s, buf, n);
	s[n] = '\0';
	if (n && s[0] != '#')
		fz_fail(t, "view does not start with '#': %.40s", s);
	else if (ktau_text_parse(s, 0, &v) < 0)
		fz_fail(t, "malformed view");
	free(s);
}

/* Trace chunks read: whole, each its header and nrecs records. */
static void fz_check_trace(struct fz_thread *t, const char *buf, size_t n)
{
	size_t off = 0;

	while (off < n) {
		const struct ktau_trace_chunk *ch = (const void *)(buf + off);

		if (n - off < sizeof(*ch) || ch->size > n - off || ch->reserved ||
		    ch->size != sizeof(*ch) + (size_t)ch->nrecs * sizeof(struct ktau_trace_rec)) {
			fz_fail(t, "malformed trace chunk at %zu of %zu", off, n);
			return;
		}
		off += ch->size;
	}
}

/* The whole probe list, read from offset 0: its header, then one line a probe. */
static void fz_check_probes(struct fz_thread *t, const char *buf, size_t n)
{
	static const char head[] = "# id function owner missed\n";
	char *s, *line, *save, fn[KTAU_PROBE_NAME_LEN];
	unsigned long missed;
	unsigned int id;
	int owner;

	if (n < sizeof(head) - 1 || memcmp(buf, head, sizeof(head) - 1) || buf[n - 1] != '\n') {
		fz_fail(t, "malformed probe list");
		return;
	}
	s = malloc(n + 1);
	if (!s)
		return;
	memcpy(s, buf, n);
	s[n] = '\0';
	for (line = strtok_r(s + sizeof(head) - 1, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%u %63s %d %lu", &id, fn, &owner, &missed) != 4 || !id) {
			fz_fail(t, "malformed probe line: %.60s", line);
			break;
		}
	}
	free(s);
}

/* Errors a read may give, whatever the buffer; false: not this one. */
static bool fz_read_errno_ok(const struct fz_fd *f, int err)
{
	if (f->kind == K_BAD)
		return err == EBADF;
	if (f->mode == O_WRONLY || f->mode == O_PATH)
		return err == EBADF;
	if (ERRNO_IN(err, EFAULT, EINVAL, ENOMEM))
		return true;
	switch (f->kind) {
	case K_PROFILES:
		return err == EIO;
	case K_TRACE:
		return err == ENOSPC;	/* no room for one chunk */
	case K_OWN:
	case K_VICTIM:
	case K_GONE:
		return err == ESRCH;
	case K_FOREIGN:
		return err == ESRCH || (err == EACCES && !cfg.root);
	case K_UNKNOWN:
		return ERRNO_IN(err, EIO, EPERM, EACCES);
	default:
		return false;
	}
}

static void fz_after_read(struct fz_thread *t, const struct fz_fd *f, ssize_t n,
			  size_t count, const char *buf, size_t room, off_t off)
{
	__u32 nrec;

	if ((size_t)n > count) {
		fz_fail(t, "read %zd bytes of %zu", n, count);
		return;
	}
	if (kind_is_view(f->kind) && !view_readable(f->kind) && n > 0)
		fz_fail(t, "read another user's profile");
	if (!n || room < (size_t)n)
		return;
	if (f->kind == K_TRACE) {
		fz_check_trace(t, buf, n);
		return;
	}
	if (f->kind == K_COLLECT) {
		if (ktau_recs_check(buf, n, &nrec))
			fz_fail(t, "collector read malformed records");
		else if (!(((const struct ktau_task_rec *)buf)->flags & KTAU_REC_EXITED))
			fz_fail(t, "collector record without KTAU_REC_EXITED");
		return;
	}
	fz_check_text(t, buf, n);
	/* All of it: the read stopped short of the count and of the buffer's end. */
	if (off != 0 || (size_t)n >= count || (size_t)n >= room)
		return;
	if (kind_is_view(f->kind) || f->kind == K_AGGREGATE)
		fz_check_view(t, buf, n);
	else if (f->kind == K_PROBES)
		fz_check_probes(t, buf, n);
}

static void fz_read(struct fz_thread *t)
{
	struct fz_fd tmp, *f = fz_pick_fd(t, &tmp);
	enum fz_ptr pk;
	size_t room, count;
	char *buf = fz_ptr(t, &pk, &room);
	bool pread_ = fz_chance(t, 40);
	off_t off = pread_ ? fz_offset(t) : -2;
	__u64 t0;
	ssize_t n;
	int err;

	count = fz_size(t, room);
	fz_note(t, "%s %d(%s) buf %p len %zu off %lld", pread_ ? "pread" : "read", f->fd,
		kind_names[f->kind], buf, count, (long long)off);
	t0 = ktau_now_ns();
	n = pread_ ? pread(f->fd, buf, count, off) : read(f->fd, buf, count);
	err = errno;
	fz_result(t, n, err, t0);
	if (n >= 0)
		fz_after_read(t, f, n, count, buf, room, pread_ ? off : -1);
	else if (pread_ && off < 0 ? err != EINVAL : !fz_read_errno_ok(f, err))
		fz_fail(t, "unexpected %s", fz_errname(err));
}

static void fz_readv(struct fz_thread *t)
{
	struct fz_fd tmp, *f = fz_pick_fd(t, &tmp);
	struct iovec *iov;
	size_t room, total = 0;
	int i, cnt, set = 0, err;
	__u64 t0;
	ssize_t n;

	cnt = fz_chance(t, 90) ? (int)fz_below(t, 5) : (fz_chance(t, 50) ? 1025 : -1);
	if (fz_chance(t, 80)) {
		/* The array in the scratch pages, perhaps running off their end. */
		iov = (struct iovec *)(fz_chance(t, 80) ? t->rw + (fz_below(t, t->page) & ~15ul) :
				       rw_end(t) - fz_below(t, 5) * sizeof(*iov));
		for (i = 0; i < cnt && i < 4 && (char *)(iov + i + 1) <= rw_end(t); i++) {
			iov[i].iov_base = fz_ptr(t, NULL, &room);
			iov[i].iov_len = fz_size(t, room);
			total += iov[i].iov_len;
			set++;
		}
	} else {
		iov = (struct iovec *)fz_ptr(t, NULL, NULL);
	}
	fz_note(t, "readv %d(%s) iov %p cnt %d", f->fd, kind_names[f->kind], iov, cnt);
	t0 = ktau_now_ns();
	n = readv(f->fd, iov, cnt);
	err = errno;
	fz_result(t, n, err, t0);
	if (n >= 0) {
		if (kind_is_view(f->kind) && !view_readable(f->kind) && n > 0)
			fz_fail(t, "read another user's profile");
		if (cnt >= 0 && set == cnt && (size_t)n > total)
			fz_fail(t, "readv returned %zd of %zu", n, total);
	} else if (!fz_read_errno_ok(f, err)) {
		fz_fail(t, "unexpected %s", fz_errname(err));
	}
}

/* Control commands, good and bad. */
#define FZ_CMD(s)	{ s, sizeof(s) - 1 }
static const struct fz_cmd {
	const char *s;
	size_t len;
} fz_cmds[] = {
	FZ_CMD("syscall on"), FZ_CMD("syscall off"), FZ_CMD("irq on"), FZ_CMD("irq off"),
	FZ_CMD("softirq on"), FZ_CMD("softirq off"), FZ_CMD("sched on"), FZ_CMD("sched off"),
	FZ_CMD("fault on"), FZ_CMD("fault off"), FZ_CMD("signal on"), FZ_CMD("signal off"),
	FZ_CMD("dynamic on"), FZ_CMD("dynamic off"), FZ_CMD("all on"), FZ_CMD("all off"),
	FZ_CMD("reset"), FZ_CMD("all on\n"), FZ_CMD("reset\n"), FZ_CMD("sched off\n"),
	FZ_CMD(""), FZ_CMD("\n"), FZ_CMD("all"), FZ_CMD("on"), FZ_CMD(" all on"),
	FZ_CMD("all  on"), FZ_CMD("all on\n\n"), FZ_CMD("ALL ON"), FZ_CMD("syscall"),
	FZ_CMD("syscall maybe"), FZ_CMD("sys on"), FZ_CMD("syscalls on"), FZ_CMD("reset all"),
	FZ_CMD("all on\0junk"), FZ_CMD("all\0 on"), FZ_CMD("irq on "), FZ_CMD("\xff\xfe"),
	FZ_CMD("all on\r\n"), FZ_CMD("7 on"), FZ_CMD("reset\0"), FZ_CMD("all on\n\0"),
	FZ_CMD("0123456789012345678901234567890123456789012345678901234567890123"),
	FZ_CMD("01234567890123456789012345678901234567890123456789012345678901234"),
	FZ_CMD("all on\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"
	       "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"),
};

/* Is this write a good command, which a privileged caller gets done? */
static bool fz_cmd_valid(const char *s, size_t len)
{
	static const char * const good[] = { "on", "off" };
	char buf[80], *arg;
	size_t i;
	int g;

	if (!len || len > 64)
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (buf[len - 1] == '\n')
		buf[--len] = '\0';
	if (strlen(buf) != len)
		return false;
	if (!strcmp(buf, "reset"))
		return true;
	arg = strchr(buf, ' ');
	if (!arg)
		return false;
	*arg++ = '\0';
	for (i = 0; i < ARRAY_SIZE(good); i++)
		if (!strcmp(arg, good[i]))
			break;
	if (i == ARRAY_SIZE(good))
		return false;
	if (!strcmp(buf, "all"))
		return true;
	for (g = 0; g < KTAU_NR_GROUPS; g++)
		if (!strcmp(buf, ktau_group_name(g)))
			return true;
	return false;
}

static void fz_write(struct fz_thread *t)
{
	struct fz_fd tmp, *f = fz_pick_fd(t, &tmp);
	const struct fz_cmd *cmd = NULL;
	bool pwrite_ = fz_chance(t, 20), valid = false, bad_pos, ok;
	off_t off = pwrite_ ? fz_offset(t) : 0;
	size_t len, room, clen = 0;
	char *buf;
	__u64 t0;
	ssize_t n;
	int err;

	if (fz_chance(t, 75)) {
		/* A command, copied into the scratch pages, perhaps across their end. */
		cmd = &fz_cmds[fz_below(t, ARRAY_SIZE(fz_cmds))];
		len = cmd->len;
		if (fz_chance(t, 85))
			buf = t->rw + fz_below(t, t->page);
		else
			buf = rw_end(t) - fz_below(t, len + 1);
		clen = len < (size_t)(rw_end(t) - buf) ? len : (size_t)(rw_end(t) - buf);
		memcpy(buf, cmd->s, clen);
		valid = clen == len && fz_cmd_valid(cmd->s, len);
	} else {
		buf = fz_ptr(t, NULL, &room);
		len = fz_size(t, room);
	}
	/* Offsets the VFS refuses (write(2) uses the file position). */
	bad_pos = (__u64)(pwrite_ ? off : lseek(f->fd, 0, SEEK_CUR)) + len > INT64_MAX;
	fz_note(t, "%s %d(%s) buf %p len %zu%s%.20s%s off %lld", pwrite_ ? "pwrite" : "write",
		f->fd, kind_names[f->kind], buf, len, cmd ? " '" : "", cmd ? cmd->s : "",
		cmd ? "'" : "", (long long)off);
	t0 = ktau_now_ns();
	n = pwrite_ ? pwrite(f->fd, buf, len, off) : write(f->fd, buf, len);
	err = errno;
	fz_result(t, n, err, t0);

	if (n >= 0) {
		if (f->kind != K_CONTROL)
			fz_fail(t, "write to a read-only %s accepted", kind_names[f->kind]);
		else if (!cfg.perfmon)
			fz_fail(t, "control written without CAP_PERFMON");
		else if ((size_t)n != len)
			fz_fail(t, "control took %zd of %zu bytes", n, len);
		else if (!valid && cmd && clen == len)
			fz_fail(t, "bad command accepted");
		return;
	}
	if (pwrite_ && off < 0)
		ok = err == EINVAL;	/* before the descriptor is looked at */
	else if (f->kind == K_BAD || f->mode == O_PATH)
		ok = err == EBADF;
	else if (pwrite_ && kind_is_seq(f->kind))
		ok = err == ESPIPE;	/* seq_open() clears FMODE_PWRITE */
	else if (f->mode == O_RDONLY)
		ok = err == EBADF;
	else if (kind_is_view(f->kind))
		ok = err == EINVAL;	/* no write method */
	else if (err == EFAULT || (err == EINVAL && (bad_pos || (ssize_t)len < 0)))
		ok = true;		/* the VFS's checks */
	else if (f->kind == K_CONTROL)
		ok = cfg.perfmon ? err == EINVAL && !valid : err == EPERM;
	else
		ok = err == EIO || (f->kind == K_UNKNOWN && ERRNO_IN(err, EINVAL, EPERM));
	if (!ok && err != ENOMEM)
		fz_fail(t, "unexpected %s", fz_errname(err));
}

static void fz_lseek(struct fz_thread *t)
{
	struct fz_fd tmp, *f = fz_pick_fd(t, &tmp);
	int whence = fz_chance(t, 80) ? (int)fz_below(t, 3) : (int)fz_below(t, 8);
	off_t off = fz_offset(t), r;
	__u64 t0;
	int err;
	bool ok;

	fz_note(t, "lseek %d(%s) %lld %d", f->fd, kind_names[f->kind], (long long)off, whence);
	t0 = ktau_now_ns();
	r = lseek(f->fd, off, whence);
	err = errno;
	fz_result(t, r, err, t0);
	if (r >= 0)
		return;
	if (f->kind == K_BAD || f->mode == O_PATH)
		ok = err == EBADF;
	else
		/* seq_lseek() may have to show the file again to get there. */
		ok = err == EINVAL || err == ENOMEM ||
		     (kind_is_view(f->kind) && err == ESRCH) ||
		     (f->kind == K_FOREIGN && err == EACCES && !cfg.root) ||
		     (f->kind == K_UNKNOWN && ERRNO_IN(err, EACCES, EPERM, ESPIPE, EIO));
	if (!ok)
		fz_fail(t, "unexpected %s", fz_errname(err));
}

/* ioctls */
static const unsigned int fz_cmds_known[] = {
	KTAU_IOC_SNAPSHOT, KTAU_IOC_COLLECT_JOIN, KTAU_IOC_COLLECT_STATS, KTAU_IOC_GET_GROUPS,
	KTAU_IOC_SET_GROUPS, KTAU_IOC_RESET, KTAU_IOC_SHARED_REGISTER,
	KTAU_IOC_SHARED_UNREGISTER,
#ifdef KTAU_IOC_SAMPLE_START
	KTAU_IOC_SAMPLE_START, KTAU_IOC_SAMPLE_READ, KTAU_IOC_SAMPLE_STOP,
#endif
#ifdef KTAU_IOC_SAMPLE_START_STACK
	KTAU_IOC_SAMPLE_START_STACK, KTAU_IOC_SAMPLE_READ_STACK, KTAU_IOC_SAMPLE_STOP_STACK,
#endif
#ifdef KTAU_IOC_PROBE_ADD
	KTAU_IOC_PROBE_ADD, KTAU_IOC_PROBE_REMOVE,
#endif
};

static const unsigned int fz_cmds_vfs[] = {
	FIONREAD, FIGETBSZ, FIONBIO, FIOASYNC, FIOQSIZE, FS_IOC_GETFLAGS, FS_IOC_GETVERSION,
};

static unsigned int fz_ioctl_cmd_any(struct fz_thread *t)
{
	unsigned int cmd = fz_cmds_known[fz_below(t, ARRAY_SIZE(fz_cmds_known))];
	__u64 r = fz_below(t, 100);

	if (r < 60)
		return cmd;
	if (r < 70)	/* another size */
		return (cmd & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT)) |
		       ((unsigned int)fz_below(t, 1u << _IOC_SIZEBITS) << _IOC_SIZESHIFT);
	if (r < 75)	/* another direction */
		return (cmd & ~(_IOC_DIRMASK << _IOC_DIRSHIFT)) |
		       ((unsigned int)fz_below(t, 4) << _IOC_DIRSHIFT);
	if (r < 85)	/* our type, any number */
		return _IOC(fz_below(t, 4), KTAU_IOC_MAGIC, fz_below(t, 32), fz_below(t, 257));
	if (r < 90)	/* a neighbouring type */
		return (cmd & ~(_IOC_TYPEMASK << _IOC_TYPESHIFT)) |
		       ((KTAU_IOC_MAGIC + (fz_chance(t, 50) ? 1 : -1)) << _IOC_TYPESHIFT);
	if (r < 95)
		return fz_cmds_vfs[fz_below(t, ARRAY_SIZE(fz_cmds_vfs))];
	return (unsigned int)fz_rnd(t);
}

static unsigned int fz_ioctl_cmd(struct fz_thread *t)
{
	unsigned int cmd;

	do
		cmd = fz_ioctl_cmd_any(t);
	while (_IOC_TYPE(cmd) == KTAU_IOC_MAGIC && _IOC_NR(cmd) < 64 &&
	       (cfg.skip_nr & (1ull << _IOC_NR(cmd))));
	return cmd;
}

/* A struct of @size at a random place; *room: bytes of it we may write. */
static char *fz_place(struct fz_thread *t, size_t size, size_t ro_off, size_t *room)
{
	__u64 r = fz_below(t, 100);
	char *p;

	if (r < 70)
		p = t->rw + (fz_below(t, t->rw_size - size) & ~7ul);
	else if (r < 80)
		p = t->rw + fz_below(t, t->rw_size - size);
	else if (r < 90)	/* across the end: the rest is in the hole */
		p = rw_end(t) - 1 - fz_below(t, size - 1);
	else if (r < 95)	/* prepared, read-only */
		p = t->base + FZ_PG_RO * t->page + ro_off;
	else
		p = fz_ptr(t, NULL, NULL);
	*room = p >= t->rw && p < rw_end(t) ? (size_t)(rw_end(t) - p) : 0;
	if (*room > size)
		*room = size;
	return p;
}

/* Bytes of a struct the kernel can read: all, or it gets EFAULT. */
static bool fz_readable(struct fz_thread *t, const char *p, size_t size)
{
	const char *ro = t->base + FZ_PG_RO * t->page;

	return (p >= t->rw && p < rw_end(t) && (size_t)(rw_end(t) - p) >= size) ||
	       (p >= ro && p < ro + t->page && (size_t)(ro + t->page - p) >= size);
}

struct fz_snap_arg {
	struct ktau_snapshot *req;
	bool readable;		/* the kernel can read all of it */
	bool writable;		/* ...and write it back */
	struct ktau_snapshot in;
	size_t buf_room;
	bool overlap;		/* buf overlaps req or pids */
};

static void fz_build_snapshot(struct fz_thread *t, struct fz_snap_arg *a)
{
	static const __u32 npids_edge[] = { 0, 1, 2, 8, KTAU_SNAP_MAX_PIDS, KTAU_SNAP_MAX_PIDS + 1,
					    0x7fffffff, 0xffffffff };
	struct ktau_snapshot s = { 0 };
	size_t room, broom, proom, i;
	__s32 *pids;
	char *p;

	p = fz_place(t, sizeof(s), FZ_RO_SNAP, &room);
	a->req = (struct ktau_snapshot *)p;
	s.size = fz_chance(t, 85) ? sizeof(s) : (__u32)fz_size(t, 0);
	s.flags = fz_chance(t, 85) ? (__u32)fz_below(t, KTAU_SNAP_FLAGS + 1) : (__u32)fz_rnd(t);
	if (fz_chance(t, 70)) {
		pids = (__s32 *)(t->rw + t->page * (1 + fz_below(t, 2)));
		proom = 16;
		for (i = 0; i < proom; i++) {
			static const __s32 odd[] = { 0, -1, 1, 2, INT32_MIN, INT32_MAX };
			__u64 r = fz_below(t, 6);

			pids[i] = r == 0 ? (__s32)t->tid : r == 1 ? getpid() : r == 2 ? cfg.victim :
				  r == 3 ? cfg.test_pid : r == 4 ? t->gone_tid :
				  odd[fz_below(t, ARRAY_SIZE(odd))];
		}
		s.pids = (uintptr_t)pids;
		s.npids = fz_chance(t, 70) ? (__u32)fz_below(t, proom + 1) :
					     npids_edge[fz_below(t, ARRAY_SIZE(npids_edge))];
	} else {
		s.pids = (uintptr_t)fz_ptr(t, NULL, NULL);
		s.npids = npids_edge[fz_below(t, ARRAY_SIZE(npids_edge))];
	}
	if (fz_chance(t, 10))
		s.pids = (uintptr_t)p;	/* the request itself */
	if (fz_chance(t, 10))
		s.buf = (uintptr_t)p;	/* the request itself, or the pids */
	else if (fz_chance(t, 10))
		s.buf = s.pids;
	else
		s.buf = (uintptr_t)fz_ptr(t, NULL, NULL);
	broom = (char *)(uintptr_t)s.buf >= t->rw && (char *)(uintptr_t)s.buf < rw_end(t) ?
		rw_end(t) - (char *)(uintptr_t)s.buf : 0;
	s.buf_size = fz_chance(t, 60) ? broom : fz_size(t, broom);
	s.reserved = fz_chance(t, 90) ? 0 : (__u32)fz_rnd(t);
	s.ntasks = (__u32)fz_rnd(t);
	s.used = fz_rnd(t);
	memcpy(p, &s, room);
	a->in = s;
	a->readable = fz_readable(t, p, sizeof(s));
	if (a->readable && room < sizeof(s))	/* prepared, or whatever is there */
		memcpy(&a->in, p, sizeof(a->in));
	a->writable = room == sizeof(s);
	a->buf_room = 0;
	if ((char *)(uintptr_t)a->in.buf >= t->rw && (char *)(uintptr_t)a->in.buf < rw_end(t))
		a->buf_room = rw_end(t) - (char *)(uintptr_t)a->in.buf;
	a->overlap = (char *)(uintptr_t)a->in.buf < p + sizeof(s) &&
		     (char *)(uintptr_t)a->in.buf + a->in.buf_size > p;
	a->overlap |= a->in.buf == a->in.pids;
}

/* The -errno the documented checks give for a readable request, 0 if none. */
static int fz_snapshot_einval(const struct ktau_snapshot *s)
{
	if (s->size != sizeof(*s))
		return -EINVAL;
	if (!s->flags || (s->flags & ~KTAU_SNAP_FLAGS) || s->reserved ||
	    s->npids > KTAU_SNAP_MAX_PIDS || !!(s->flags & KTAU_SNAP_PIDS) != !!s->npids ||
	    ((s->flags & KTAU_SNAP_PROCESS) && !(s->flags & KTAU_SNAP_PIDS)))
		return -EINVAL;
	if ((s->flags & KTAU_SNAP_AGGREGATE) && !cfg.perfmon)
		return -EPERM;
	return 0;
}

static void fz_check_snapshot(struct fz_thread *t, const struct fz_snap_arg *a, long ret,
			      int err)
{
	const struct ktau_snapshot *in = &a->in, *out = a->req;
	int want = a->readable ? -fz_snapshot_einval(in) : 0;
	const struct ktau_task_rec *r;
	__u32 nrec;
	size_t off;

	if (ret == 0 && want)
		fz_fail(t, "snapshot accepted; expected %s", fz_errname(want));
	if (ret < 0 && want && err != want)
		fz_fail(t, "snapshot gave %s; expected %s", fz_errname(err), fz_errname(want));
	if (ret < 0 && !want && !ERRNO_IN(err, EFAULT, ENOSPC, ENOMEM, EINVAL))
		fz_fail(t, "snapshot gave unexpected %s", fz_errname(err));
	if (ret < 0 && !want && err == EINVAL && a->readable)
		fz_fail(t, "snapshot EINVAL for a valid request");
	if (!a->writable)
		return;
	if (ret < 0) {
		if (err == ENOSPC && out->used <= in->buf_size)
			fz_fail(t, "ENOSPC with used %llu <= buf_size %llu",
				(unsigned long long)out->used, (unsigned long long)in->buf_size);
		return;
	}
	if (out->used > in->buf_size || out->size != sizeof(*out) || out->flags != in->flags) {
		fz_fail(t, "snapshot answer: used %llu buf_size %llu size %u flags 0x%x",
			(unsigned long long)out->used, (unsigned long long)in->buf_size, out->size,
			out->flags);
		return;
	}
	if (a->overlap || a->buf_room < out->used)
		return;
	if (ktau_recs_check((const char *)(uintptr_t)in->buf, out->used, &nrec)) {
		fz_fail(t, "malformed records");
		return;
	}
	if (nrec != out->ntasks)
		fz_fail(t, "ntasks %u, %u records", out->ntasks, nrec);
	for (off = 0; off < out->used; off += r->size) {
		r = (const void *)((const char *)(uintptr_t)in->buf + off);
		if (!cfg.perfmon && (r->flags & KTAU_REC_AGGREGATE))
			fz_fail(t, "aggregate record without CAP_PERFMON");
		if (!cfg.root && (r->pid == 1 || (r->flags & KTAU_REC_KTHREAD) ||
				  r->pid == cfg.test_pid))
			fz_fail(t, "record of pid %d (%s) for a user", r->pid, r->comm);
	}
	if (ktau_bin_has_kaddr((const char *)(uintptr_t)in->buf, out->used))
		fz_fail(t, "kernel address in the records");
}

static char *fz_sh_page(struct fz_thread *t, int i)
{
	return t->base + (FZ_PG_SH + i) * t->page;
}

#ifdef KTAU_IOC_SAMPLE_START
/* A thread to sample or read samples of; others' only when reading. */
static pid_t fz_sample_tid(struct fz_thread *t, bool start)
{
	static const pid_t odd[] = { -1, INT32_MAX, INT32_MIN, 99999 };
	__u64 r = fz_below(t, 100);

	if (r < 40)
		return 0;
	if (r < 55)
		return t->tid;
	if (r < 65)
		return cfg.tids[fz_below(t, cfg.nthreads)];
	if (r < 75)
		return cfg.victim;
	if (r < 85)
		return t->gone_tid;
	/*
	 * Not init or the test process: a sampler would stay on them
	 * (and root may start one).
	 */
	if (r < 95 && !start)
		return fz_chance(t, 50) ? 1 : cfg.test_pid;
	return odd[fz_below(t, ARRAY_SIZE(odd))];
}

static void fz_build_sample_attr(struct fz_thread *t, struct ktau_sample_attr *a)
{
	static const __u64 periods[] = { 0, 1, 9999, 10000, 100000, 100000, 1000000, 1000000,
					 1ull << 40, (1ull << 40) + 1, ~0ull };
	static const __u64 freqs[] = { 0, 1, 100, 1000, 100000, 100001 };
	static const __u32 caps[] = { 0, 1, 2, 3, 64, 1024, 65536, 65537, 1u << 31 };
	static const __s32 bad_signo[] = { 0, SIGKILL, SIGSTOP, SIGTERM, SIGSEGV, 65, -1 };
	bool ours;
	int i;

	memset(a, 0, sizeof(*a));
	a->size = fz_chance(t, 85) ? sizeof(*a) : (__u32)fz_size(t, 0);
	a->flags = fz_chance(t, 85) ? (__u32)fz_below(t, KTAU_SAMPLE_FLAGS + 1) : (__u32)fz_rnd(t);
	a->tid = fz_sample_tid(t, true);
	a->event = fz_chance(t, 80) ? (__u32)fz_below(t, 2) : (__u32)fz_below(t, 6);
	if (a->flags & KTAU_SAMPLE_FREQ)
		a->period = freqs[fz_below(t, ARRAY_SIZE(freqs))];
	else
		a->period = periods[fz_below(t, ARRAY_SIZE(periods))];
	a->capacity = caps[fz_below(t, ARRAY_SIZE(caps))];
	a->watermark = fz_chance(t, 60) ? 0 : fz_chance(t, 50) ? 1 : a->capacity;
	if (fz_chance(t, 5))
		a->watermark = a->capacity + 1;
	/* Signals only to threads that handle them: ours and the victim. */
	ours = a->tid == 0 || a->tid == cfg.victim;
	for (i = 0; i < cfg.nthreads; i++)
		ours |= a->tid == cfg.tids[i];
	if (a->watermark && ours && fz_chance(t, 80))
		a->signo = fz_chance(t, 50) ? SIGUSR1 : SIGUSR2;
	else if (a->watermark)
		a->signo = bad_signo[fz_below(t, ARRAY_SIZE(bad_signo))];
	a->reserved = fz_chance(t, 90) ? 0 : (__u32)fz_rnd(t);
}

#ifdef KTAU_IOC_SAMPLE_START_STACK
/* A user stack descriptor: mostly valid, its base anywhere in our memory. */
static void fz_build_stack_desc(struct fz_thread *t, struct ktau_stack_desc *d)
{
	static const __u32 depths[] = { 0, 1, 8, 64, KTAU_STACK_MAX_DEPTH,
					KTAU_STACK_MAX_DEPTH + 1 };
	__u32 k;

	memset(d, 0, sizeof(*d));
	d->base = fz_chance(t, 90) ? (uintptr_t)fz_ptr(t, NULL, NULL) : fz_rnd(t);
	d->nderef = fz_chance(t, 90) ? 1 + (__u32)fz_below(t, KTAU_STACK_MAX_DEREF) :
				       (__u32)fz_below(t, 8);
	for (k = 0; k < d->nderef && k < KTAU_STACK_MAX_DEREF; k++)
		d->deref_off[k] = (__u32)fz_below(t, 64) * 8;
	d->nfields = fz_chance(t, 90) ? 1 + (__u32)fz_below(t, KTAU_STACK_MAX_FIELDS) :
					(__u32)fz_below(t, 8);
	for (k = 0; k < d->nfields && k < KTAU_STACK_MAX_FIELDS; k++)
		d->field_off[k] = (__u32)fz_below(t, fz_chance(t, 90) ? 16 : 64) * 8;
	d->next_off = (__u32)fz_below(t, 16) * 8;
	d->max_depth = depths[fz_below(t, ARRAY_SIZE(depths))];
	d->reserved[0] = fz_chance(t, 95) ? 0 : (__u32)fz_rnd(t);
	d->reserved[1] = fz_chance(t, 95) ? 0 : (__u32)fz_rnd(t);
}
#endif

/* Samples read with KTAU_IOC_SAMPLE_READ or _STOP: well formed. */
static void fz_check_samples(struct fz_thread *t, const struct fz_fd *f,
			     const struct ktau_sample_read *in, const struct ktau_sample_read *out,
			     size_t buf_room)
{
	const struct ktau_sample *sm = (const void *)(uintptr_t)in->buf;
	bool hide = f->by_root ? cfg.hide_kaddr_root : cfg.hide_kaddr;
	__u32 i;

	if (out->nread > in->max || out->size != sizeof(*out) || out->buffered > 65536) {
		fz_fail(t, "sample read: nread %u max %u size %u buffered %llu", out->nread,
			in->max, out->size, (unsigned long long)out->buffered);
		return;
	}
	if ((size_t)out->nread * sizeof(*sm) > buf_room)
		return;
	/*
	 * The request itself may lie inside the buffer: then the kernel's
	 * answer, written after the samples, covers some of them.
	 */
	if ((const char *)out < (const char *)(sm + out->nread) &&
	    (const char *)sm < (const char *)(out + 1))
		return;
	for (i = 0; i < out->nread; i++) {
		if (sm[i].flags & ~KTAU_SAMPLE_USER)
			fz_fail(t, "sample flags 0x%x", sm[i].flags);
		else if ((sm[i].flags & KTAU_SAMPLE_USER) && sm[i].ip >= 0x800000000000ull)
			fz_fail(t, "user sample at 0x%llx", (unsigned long long)sm[i].ip);
		else if (!(sm[i].flags & KTAU_SAMPLE_USER) && hide && sm[i].ip)
			fz_fail(t, "kernel address 0x%llx in a sample: hidden from this reader",
				(unsigned long long)sm[i].ip);
	}
}
#endif

/* The address of a page to register: good ones, and all kinds of bad. */
static char *fz_reg_addr(struct fz_thread *t)
{
	__u64 r = fz_below(t, 100);
	enum fz_ptr k;
	char *p;

	if (r < 60)
		return fz_sh_page(t, fz_below(t, 2));
	if (r < 65)
		return t->base + FZ_PG_MEMFD * t->page;
	if (r < 75)
		return fz_sh_page(t, fz_below(t, 2)) + 1 + fz_below(t, t->page - 1);
	if (r < 80)	/* the first page of our code */
		return (char *)((uintptr_t)&fz_rnd & ~(uintptr_t)(t->page - 1));
	/* Anything but the scratch pages, which other calls use. */
	do
		p = fz_ptr(t, &k, NULL);
	while (k == P_RW || k == P_RW_END || k == P_RW_MIS || k == P_MEMFD);
	return p;
}

/* The thread's registered page, when it is ours alone and still mapped. */
static struct ktau_shared *fz_reg_private(struct fz_thread *t)
{
	return t->registered && t->reg_page ? (struct ktau_shared *)t->reg_page : NULL;
}

static void fz_registered(struct fz_thread *t, char *page)
{
	t->registered = true;
	t->st->registered++;
	/* A page of shmem is shared with the other threads' mappings. */
	t->reg_page = page >= fz_sh_page(t, 0) && page < fz_sh_page(t, FZ_SH_PAGES) ? page : NULL;
}

#ifdef KTAU_IOC_PROBE_ADD
/*
 * Names for the probe ioctls. Only the first FZ_PROBE_SAFE can be probed:
 * system calls that return at once and take no lock, which neither KTAU
 * nor the scheduler, interrupts or the fuzzer's own loop call, so that a
 * probe on them (KTAU's push and pop of a frame, 128 return slots) cannot
 * wedge the guest. A fixed few, as every function ever probed keeps an ID
 * of the registry (2048 a boot) until the next boot: however long it
 * runs, the fuzzer takes at most FZ_PROBE_SAFE of them.
 */
static const char * const fz_probe_names[] = {
	"__x64_sys_getppid", "__x64_sys_getpgrp", "__x64_sys_getuid",
	/* EINVAL: refused by KTAU, or no ftrace site (KTAU's own code) */
	"irq_enter", "irq_exit_rcu", "ret_from_fork", "__ktau_pop_slow", "ktau_capable",
	/* ENOENT: not a symbol */
	"ktau_fuzz_no_such_function", "nosuchmodule:nosuchfunction", "__x64_sys_getppid+0x4",
	/* data: EINVAL, or ENOENT without CONFIG_KALLSYMS_ALL */
	"jiffies", "init_task",
	/* ADD: EINVAL; REMOVE: by ID */
	"",
};

#define FZ_PROBE_SAFE	3	/* [0, 3): may be probed */
#define FZ_PROBE_ENOENT	8	/* [3, 8): EINVAL; [8, 11): ENOENT */
#define FZ_PROBE_DATA	11	/* [11, 13): data */
#define FZ_PROBE_EMPTY	13
#define FZ_PROBE_NONUL	-1	/* no NUL in the name's 64 bytes */
#define FZ_PROBE_OTHER	-2

/* Which of fz_probe_names @r names. */
static int fz_probe_class(const struct ktau_probe_req *r)
{
	size_t i;

	if (!memchr(r->name, '\0', sizeof(r->name)))
		return FZ_PROBE_NONUL;
	for (i = 0; i < ARRAY_SIZE(fz_probe_names); i++)
		if (!strcmp(r->name, fz_probe_names[i]))
			return i;
	return FZ_PROBE_OTHER;
}

/* A probe request at a random place; false: the kernel may not read what *r holds. */
static bool fz_build_probe(struct fz_thread *t, struct ktau_probe_req *r, char **argp)
{
	size_t room;
	int i;

	memset(r, 0, sizeof(*r));
	r->size = fz_chance(t, 85) ? sizeof(*r) : (__u32)fz_size(t, 0);
	r->flags = fz_chance(t, 95) ? 0 : (__u32)fz_rnd(t);
	r->reserved = fz_chance(t, 95) ? 0 : (__u32)fz_rnd(t);
	r->id = fz_chance(t, 50) ? t->probe_id : (int)fz_below(t, 4096) - 8;
	if (fz_chance(t, 5)) {
		memset(r->name, 'a', sizeof(r->name));
	} else {
		i = fz_chance(t, 50) ? (int)fz_below(t, FZ_PROBE_SAFE) :
				       (int)fz_below(t, ARRAY_SIZE(fz_probe_names));
		snprintf(r->name, sizeof(r->name), "%s", fz_probe_names[i]);
	}
	*argp = fz_place(t, sizeof(*r), FZ_RO_PROBE, &room);
	memcpy(*argp, r, room);
	if (!fz_readable(t, *argp, sizeof(*r)))
		return false;
	memcpy(r, *argp, sizeof(*r));
	return true;
}

/*
 * Is this outcome of a probe ioctl on /proc/ktau/probes one the ABI
 * allows? @r is what the kernel read when @known. Tracks what was added.
 */
static bool fz_probe_ok(struct fz_thread *t, unsigned int cmd, const struct ktau_probe_req *r,
			bool known, char *arg, long ret, int err)
{
	bool ro = arg >= t->base + FZ_PG_RO * t->page && arg < t->base + (FZ_PG_RO + 1) * t->page;
	int c;

	if (!cfg.perfmon)
		return ret < 0 && err == EPERM;
	if (ret == 0 && cmd == KTAU_IOC_PROBE_ADD) {
		/* The kernel read and wrote it: our memory, which we can read. */
		r = (const struct ktau_probe_req *)arg;
		c = fz_probe_class(r);
		if (c < 0 || c >= FZ_PROBE_SAFE || r->id <= 0 || ro) {
			fz_fail(t, "probe added on '%.63s', ID %d",
				c == FZ_PROBE_NONUL ? "" : r->name, r->id);
			return false;
		}
		t->probed |= 1u << c;
		t->probe_id = r->id;
		t->st->probes++;
		return true;
	}
	if (!known)
		return ret == 0 || ERRNO_IN(err, EFAULT, EINVAL, ENOENT, EEXIST, ENOSPC, ENOMEM);
	c = fz_probe_class(r);
	if (r->size != sizeof(*r) || r->flags || r->reserved || c == FZ_PROBE_NONUL)
		return ret < 0 && err == EINVAL;
	if (cmd == KTAU_IOC_PROBE_REMOVE) {
		if (ret == 0 && c >= 0 && c < FZ_PROBE_SAFE)
			t->probed &= ~(1u << c);
		/* Anyone's probe, by name or ID. */
		return ret == 0 || err == ENOENT;
	}
	if (ret == 0)
		return false;	/* not one of the safe names, or read-only */
	if (c == FZ_PROBE_EMPTY)
		return err == EINVAL;
	if (c >= 0 && c < FZ_PROBE_SAFE)
		/* Added, then taken back: the ID could not be written back. */
		return ERRNO_IN(err, EEXIST, ENOSPC, ENOMEM) || (ro && err == EFAULT);
	if (c >= FZ_PROBE_SAFE && c < FZ_PROBE_ENOENT)
		return err == EINVAL;
	if (c >= FZ_PROBE_ENOENT && c < FZ_PROBE_DATA)
		return err == ENOENT;
	if (c >= FZ_PROBE_DATA)
		return ERRNO_IN(err, EINVAL, ENOENT);
	return ERRNO_IN(err, EINVAL, ENOENT, EEXIST, ENOSPC, ENOMEM);
}

/* On a descriptor of /proc/ktau/probes, a probe ioctl half of the time. */
static unsigned int fz_probe_cmd(struct fz_thread *t, const struct fz_fd *f, unsigned int cmd)
{
	unsigned int pcmd = fz_chance(t, 60) ? KTAU_IOC_PROBE_ADD : KTAU_IOC_PROBE_REMOVE;

	if (f->kind != K_PROBES || fz_chance(t, 50) ||
	    (cfg.skip_nr & (1ull << _IOC_NR(pcmd))))
		return cmd;
	return pcmd;
}

/* Remove what this thread may have added; closing its descriptors would too. */
static void fz_probes_take_back(struct fz_thread *t)
{
	__u64 t0;
	int i, fd = -1, ret;

	for (i = 0; i < t->nfds && fd < 0; i++)
		if (t->fds[i].kind == K_PROBES && t->fds[i].mode != O_PATH)
			fd = t->fds[i].fd;
	if (fd < 0 || (cfg.skip_nr & (1ull << _IOC_NR(KTAU_IOC_PROBE_REMOVE))))
		return;
	for (i = 0; i < FZ_PROBE_SAFE; i++) {
		if (!(t->probed & (1u << i)))
			continue;
		fz_note(t, "take back probe %s on %d", fz_probe_names[i], fd);
		t0 = ktau_now_ns();
		ret = ktau_probe_ioctl(fd, KTAU_IOC_PROBE_REMOVE, fz_probe_names[i], 0);
		fz_result(t, ret ? -1 : 0, -ret, t0);
		/* Gone already: a reset, another thread, its file closed. */
		if (ret && ret != -ENOENT)
			fz_fail(t, "unexpected %s", fz_errname(-ret));
	}
	t->probed = 0;
}
#endif

static void fz_ioctl(struct fz_thread *t)
{
	struct fz_fd tmp, *f = fz_pick_fd(t, &tmp);
	unsigned int cmd = fz_ioctl_cmd(t);
	struct ktau_shared_reg reg = { 0 };
#ifdef KTAU_IOC_PROBE_ADD
	struct ktau_probe_req preq = { 0 };
	bool preq_known = false;
#endif
	struct fz_snap_arg sa = { 0 };
#ifdef KTAU_IOC_SAMPLE_START
	struct ktau_sample_attr attr;
	struct ktau_sample_read srd;
	size_t srd_room = 0;
	bool srd_ok = false;
#endif
#ifdef KTAU_IOC_SAMPLE_START_STACK
	struct ktau_sample_stack_attr sattr;
	struct ktau_sample_stack_read ssrd;
#endif
	bool structured = fz_chance(t, 75), ok = false, was_registered = t->registered;
	size_t room;
	char *arg = NULL;
	__u64 mask = 0, t0;
	long ret;
	int err;

#ifdef KTAU_IOC_PROBE_ADD
	cmd = fz_probe_cmd(t, f, cmd);
#endif
	if (structured && cmd == KTAU_IOC_SNAPSHOT) {
		fz_build_snapshot(t, &sa);
		arg = (char *)sa.req;
	} else if (structured && cmd == KTAU_IOC_SET_GROUPS) {
		mask = fz_chance(t, 80) ? fz_below(t, FZ_ALL_GROUPS + 1) : fz_rnd(t);
		if (fz_chance(t, 50))
			mask = FZ_ALL_GROUPS;	/* keep the groups on, mostly */
		arg = fz_place(t, sizeof(mask), FZ_RO_MASK, &room);
		memcpy(arg, &mask, room);
		structured = fz_readable(t, arg, sizeof(mask));
		if (structured)
			memcpy(&mask, arg, sizeof(mask));
	} else if (structured && cmd == KTAU_IOC_SHARED_REGISTER) {
		reg.addr = (uintptr_t)fz_reg_addr(t);
		reg.size = fz_chance(t, 85) ? sizeof(struct ktau_shared) : (__u32)fz_size(t, 0);
		reg.flags = fz_chance(t, 90) ? 0 : (__u32)fz_rnd(t);
		arg = fz_place(t, sizeof(reg), FZ_RO_REG, &room);
		memcpy(arg, &reg, room);
		if (fz_readable(t, arg, sizeof(reg)))
			memcpy(&reg, arg, sizeof(reg));
		else
			reg.addr = 0;	/* not known */
#ifdef KTAU_IOC_SAMPLE_START
	} else if (structured && cmd == KTAU_IOC_SAMPLE_START) {
		fz_build_sample_attr(t, &attr);
		arg = fz_place(t, sizeof(attr), FZ_RO_ATTR, &room);
		memcpy(arg, &attr, room);
	} else if (structured && (cmd == KTAU_IOC_SAMPLE_READ || cmd == KTAU_IOC_SAMPLE_STOP)) {
		static const __u32 maxes[] = { 0, 1, 2, 65536, 65537, 0xffffffff };

		memset(&srd, 0, sizeof(srd));
		srd.size = fz_chance(t, 85) ? sizeof(srd) : (__u32)fz_size(t, 0);
		srd.tid = fz_sample_tid(t, false);
		srd.buf = (uintptr_t)fz_ptr(t, NULL, &srd_room);
		srd.max = fz_chance(t, 60) ? srd_room / sizeof(struct ktau_sample) :
					     maxes[fz_below(t, ARRAY_SIZE(maxes))];
		arg = fz_place(t, sizeof(srd), FZ_RO_SREAD, &room);
		memcpy(arg, &srd, room);
		srd_ok = room == sizeof(srd);
#endif
#ifdef KTAU_IOC_SAMPLE_START_STACK
	} else if (structured && cmd == KTAU_IOC_SAMPLE_START_STACK) {
		fz_build_sample_attr(t, &sattr.attr);
		fz_build_stack_desc(t, &sattr.stack);
		arg = fz_place(t, sizeof(sattr), FZ_RO_ATTR, &room);
		memcpy(arg, &sattr, room);
	} else if (structured && (cmd == KTAU_IOC_SAMPLE_READ_STACK ||
				  cmd == KTAU_IOC_SAMPLE_STOP_STACK)) {
		size_t wroom = 0;

		memset(&ssrd, 0, sizeof(ssrd));
		ssrd.r.size = fz_chance(t, 85) ? sizeof(ssrd.r) : (__u32)fz_size(t, 0);
		ssrd.r.tid = fz_sample_tid(t, false);
		ssrd.r.buf = (uintptr_t)fz_ptr(t, NULL, &srd_room);
		ssrd.r.max = srd_room / sizeof(struct ktau_sample);
		ssrd.words = (uintptr_t)fz_ptr(t, NULL, &wroom);
		ssrd.max_words = fz_chance(t, 70) ? wroom / 8 : (__u32)fz_rnd(t);
		ssrd.nwords = fz_chance(t, 95) ? 0 : (__u32)fz_rnd(t);
		arg = fz_place(t, sizeof(ssrd), FZ_RO_SREAD, &room);
		memcpy(arg, &ssrd, room);
#endif
#ifdef KTAU_IOC_PROBE_ADD
	} else if (structured && (cmd == KTAU_IOC_PROBE_ADD || cmd == KTAU_IOC_PROBE_REMOVE)) {
		preq_known = fz_build_probe(t, &preq, &arg);
#endif
	} else if (fz_chance(t, 10)) {
		arg = (char *)(uintptr_t)fz_rnd(t);
		structured = false;
	} else {
		arg = fz_ptr(t, NULL, NULL);
		structured = false;
	}

	fz_note(t, "ioctl %d(%s) 0x%x%s arg %p", f->fd, kind_names[f->kind], cmd,
		structured ? "*" : "", arg);
	t0 = ktau_now_ns();
	ret = ioctl(f->fd, cmd, arg);
	err = errno;
	fz_result(t, ret, err, t0);
	if (ret > 0)
		fz_fail(t, "ioctl returned %ld", ret);

	if (f->kind == K_BAD || f->mode == O_PATH) {
		if (ret == 0 || err != EBADF)
			fz_fail(t, "expected EBADF");
		return;
	}
	/* The VFS answers these itself, for any file. */
	if (cmd == FIONREAD || cmd == FIGETBSZ || cmd == FIONBIO || cmd == FIOASYNC ||
	    cmd == FIOQSIZE) {
		if (ret < 0 && !ERRNO_IN(err, EFAULT, ENOTTY, EINVAL))
			fz_fail(t, "unexpected %s", fz_errname(err));
		return;
	}
	if (f->kind == K_TRACE) {
		if (cmd == KTAU_IOC_TRACE_ATTACH)
			ok = ret == 0 || ERRNO_IN(err, EINVAL, EFAULT, EBUSY, ESRCH, EACCES);
		else if (cmd == KTAU_IOC_TRACE_DETACH)
			ok = ret == 0 || ERRNO_IN(err, ESRCH, EFAULT);
		else if (cmd == KTAU_IOC_TRACE_STATS)
			ok = ret == 0 || err == EFAULT;
		else
			ok = ret < 0 && err == ENOTTY;
#ifdef KTAU_IOC_PROBE_ADD
	} else if (f->kind == K_PROBES) {
		if (cmd == KTAU_IOC_PROBE_ADD || cmd == KTAU_IOC_PROBE_REMOVE)
			ok = fz_probe_ok(t, cmd, &preq, structured && preq_known, arg, ret, err);
		else
			ok = ret < 0 && err == ENOTTY;
#endif
	} else if (f->kind == K_COLLECT) {
		if (cmd == KTAU_IOC_COLLECT_JOIN)
			ok = ret == 0 || err == EBUSY;
		else if (cmd == KTAU_IOC_COLLECT_STATS)
			ok = ret == 0 || err == EFAULT;
		else
			ok = ret < 0 && err == ENOTTY;
	} else if (f->kind != K_PROFILES) {
		ok = ret < 0 && (err == ENOTTY || (f->kind == K_UNKNOWN && ERRNO_IN(err, EINVAL,
										 EFAULT, EPERM)));
	} else {
		switch (cmd) {
		case KTAU_IOC_SNAPSHOT:
			if (sa.req)
				fz_check_snapshot(t, &sa, ret, err);
			ok = ret == 0 || ERRNO_IN(err, EFAULT, ENOSPC, ENOMEM, EINVAL, EPERM);
			break;
		case KTAU_IOC_GET_GROUPS:
			ok = ret == 0 || err == EFAULT;
			break;
		case KTAU_IOC_SET_GROUPS:
		case KTAU_IOC_RESET:
			if (!cfg.perfmon)
				ok = ret < 0 && err == EPERM;
			else if (cmd == KTAU_IOC_RESET)
				ok = ret == 0;
			else if (structured)
				ok = mask & ~FZ_ALL_GROUPS ? err == EINVAL && ret < 0 : ret == 0;
			else
				ok = ret == 0 || ERRNO_IN(err, EFAULT, EINVAL);
			break;
		case KTAU_IOC_SHARED_REGISTER:
			if (!cfg.shared) {
				ok = ret < 0 && err == ENOTTY;
				break;
			}
			ok = ret == 0 || ERRNO_IN(err, EFAULT, EINVAL, EBUSY, ENOMEM);
			if (ret == 0 && was_registered)
				fz_fail(t, "a second page registered");
			if (ret < 0 && err == EBUSY && !was_registered)
				fz_fail(t, "EBUSY without a registration");
			if (ret == 0)
				fz_registered(t, (char *)(uintptr_t)reg.addr);
			break;
		case KTAU_IOC_SHARED_UNREGISTER:
			if (!cfg.shared)
				ok = ret < 0 && err == ENOTTY;
			else if (was_registered)
				ok = ret == 0;
			else
				ok = ret < 0 && err == ENOENT;
			if (ret == 0) {
				t->registered = false;
				t->reg_page = NULL;
			}
			break;
#ifdef KTAU_IOC_SAMPLE_START
		case KTAU_IOC_SAMPLE_START:
#ifdef KTAU_IOC_SAMPLE_START_STACK
		case KTAU_IOC_SAMPLE_START_STACK:
#endif
			if (!cfg.shared)
				ok = ret < 0 && err == ENOTTY;
			else
				ok = ret == 0 || ERRNO_IN(err, EFAULT, EINVAL, ESRCH, EBUSY, EACCES,
							  EPERM, ENOMEM, ENOENT, EOPNOTSUPP,
							  ENODEV, EINTR);
			break;
		case KTAU_IOC_SAMPLE_READ:
		case KTAU_IOC_SAMPLE_STOP:
#ifdef KTAU_IOC_SAMPLE_START_STACK
		case KTAU_IOC_SAMPLE_READ_STACK:
		case KTAU_IOC_SAMPLE_STOP_STACK:
#endif
			if (!cfg.shared)
				ok = ret < 0 && err == ENOTTY;
			else
				ok = ret == 0 || ERRNO_IN(err, EFAULT, EINVAL, ESRCH, EACCES,
							  ENOENT, ENOMEM);
			if (ret == 0 && srd_ok)
				fz_check_samples(t, f, &srd, (const void *)arg, srd_room);
			break;
#endif
		default:
			ok = ret < 0 && err == ENOTTY;
			break;
		}
	}
	if (!ok)
		fz_fail(t, "unexpected %s", ret < 0 ? fz_errname(err) : "success");
}

/* Children: collector members, shared page owners, exec. */
static int fz_wait(struct fz_thread *t, pid_t pid, const char *what, bool killed)
{
	__u64 end = ktau_now_ns() + FZ_SLOW_NS;
	int status;
	pid_t r;

	while ((r = waitpid(pid, &status, WNOHANG)) == 0 && ktau_now_ns() < end)
		ktau_sleep_ns(KTAU_NSEC_PER_MSEC);
	if (r == 0) {
		fz_fail(t, "%s %d did not finish in %llu s", what, pid,
			(unsigned long long)(FZ_SLOW_NS / KTAU_NSEC_PER_SEC));
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return -1;
	}
	if (r < 0) {
		fz_fail(t, "waitpid: %s", strerror(errno));
		return -1;
	}
	if (WIFSIGNALED(status) && !killed) {
		fz_fail(t, "%s died of signal %d", what, WTERMSIG(status));
		return -1;
	}
	return WEXITSTATUS(status);
}

/*
 * A forked child; async-signal-safe calls only (the parent has threads).
 * Exit status: 0, or the step that went wrong.
 */
static void fz_child(struct fz_thread *t, __u64 r)
{
	struct ktau_shared *sh = fz_reg_private(t);
	struct ktau_shared_reg reg = { 0 };
	unsigned int i, n = 1 + r % 50;
	__u32 seq;

	if (r & 1)
		ioctl(cfg.collect_fd, KTAU_IOC_COLLECT_JOIN);
	if (cfg.shared) {
		/* A registration is not inherited... */
		if (ioctl(cfg.profiles_fd, KTAU_IOC_SHARED_UNREGISTER) != -1 || errno != ENOENT)
			_exit(10);
		/* ...and the parent's page, now the child's copy, stays still. */
		if (sh) {
			seq = __atomic_load_n(&sh->seq, __ATOMIC_ACQUIRE);
			ktau_getppid_loop(5);
			if (__atomic_load_n(&sh->seq, __ATOMIC_ACQUIRE) != seq)
				_exit(11);
		}
		if ((r & 2) && !(cfg.skip_nr & (1ull << _IOC_NR(KTAU_IOC_SHARED_REGISTER)))) {
			reg.addr = (uintptr_t)fz_sh_page(t, 1);
			reg.size = sizeof(struct ktau_shared);
			if (ioctl(cfg.profiles_fd, KTAU_IOC_SHARED_REGISTER, &reg) &&
			    errno != ENOMEM)
				_exit(12);
		}
	}
	for (i = 0; i < n; i++)
		syscall(SYS_getppid);
	if ((r & 12) == 12 && !access("/bin/true", X_OK))
		execl("/bin/true", "true", (char *)NULL);
	_exit(0);
}

static void fz_fork(struct fz_thread *t)
{
	__u64 r = fz_rnd(t);
	pid_t pid;
	int st;

	fz_note(t, "fork (0x%llx)%s%s", (unsigned long long)(r & 0xff),
		t->registered ? " registered " : "",
		t->registered && !t->reg_page ? "(shared)" : "");
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fz_result(t, -1, errno, ktau_now_ns());
		if (errno != EAGAIN && errno != ENOMEM)
			fz_fail(t, "fork: %s", strerror(errno));
		return;
	}
	if (pid == 0)
		fz_child(t, r);
	t->st->forks++;
	st = fz_wait(t, pid, "child", false);
	fz_result(t, st, 0, ktau_now_ns());
	if (st > 0)
		fz_fail(t, "child failed at step %d (10 inherited, 11 copy updated, 12 register)",
			st);
}

struct fz_short {
	struct fz_thread *t;
	pid_t tid;
	bool registered;
};

static void *fz_short_thread(void *arg)
{
	struct fz_short *s = arg;
	struct ktau_shared_reg reg = {
		.addr = (uintptr_t)fz_sh_page(s->t, 2),
		.size = sizeof(struct ktau_shared),
	};

	s->tid = gettid();
	if (s->tid & 1)
		ioctl(cfg.collect_fd, KTAU_IOC_COLLECT_JOIN);
	if (cfg.shared && (s->tid & 2) &&
	    !(cfg.skip_nr & (1ull << _IOC_NR(KTAU_IOC_SHARED_REGISTER))))
		s->registered = !ioctl(cfg.profiles_fd, KTAU_IOC_SHARED_REGISTER, &reg);
	ktau_getppid_loop(10);
	/* Exits registered: the exit ends it. */
	return NULL;
}

static void fz_thread_op(struct fz_thread *t)
{
	struct fz_short s = { .t = t };
	const struct ktau_shared *sh = (const void *)fz_sh_page(t, 2);
	pthread_t th;
	__u32 seq;
	int err;

	fz_note(t, "thread");
	err = pthread_create(&th, NULL, fz_short_thread, &s);
	if (err) {
		if (err != EAGAIN)
			fz_fail(t, "pthread_create: %s", strerror(err));
		return;
	}
	pthread_join(th, NULL);
	t->st->threads++;
	t->gone_tid = s.tid;
	fz_result(t, s.tid, 0, ktau_now_ns());
	if (!s.registered)
		return;
	t->st->registered++;
	if (sh->tid != s.tid || sh->size != sizeof(*sh) || sh->nentries != KTAU_SHARED_ENTRIES ||
	    sh->abi != (KTAU_ABI_VERSION_MAJOR << 16 | KTAU_ABI_VERSION_MINOR) || (sh->seq & 1))
		fz_fail(t, "thread's page: tid %d (want %d) size %u nentries %u abi 0x%x seq %u",
			sh->tid, s.tid, sh->size, sh->nentries, sh->abi, sh->seq);
	seq = __atomic_load_n(&sh->seq, __ATOMIC_ACQUIRE);
	ktau_getppid_loop(5);
	if (__atomic_load_n(&sh->seq, __ATOMIC_ACQUIRE) != seq)
		fz_fail(t, "the page of an exited thread still changes");
}

/* The counts of a shared page entry, by function ID. */
static __u64 fz_sh_count(const struct ktau_shared *sh, __u32 id)
{
	unsigned int i;

	for (i = 0; i < KTAU_SHARED_ENTRIES; i++)
		if (sh->entries[i].id == id)
			return sh->entries[i].count;
	return 0;
}

static bool fz_page_zero(const char *p, long len)
{
	long i;

	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* Shared page registrations and what may happen to the page meanwhile. */
static void fz_shared(struct fz_thread *t)
{
	struct ktau_shared_reg reg = { .size = sizeof(struct ktau_shared) };
	struct ktau_shared *sh = fz_reg_private(t);
	__u64 r = fz_below(t, 6), before;
	char *page;
	__u32 seq;
	void *p;
	long ret;
	int err;

	if (!cfg.shared || (cfg.skip_nr & (1ull << _IOC_NR(KTAU_IOC_SHARED_REGISTER))))
		return;
	if (!t->registered || r == 0) {
		/* Our page, or the memfd's: shmem, truncated while pinned. */
		page = fz_chance(t, 80) ? fz_sh_page(t, 0) : t->base + FZ_PG_MEMFD * t->page;
		reg.addr = (uintptr_t)page;
		fz_note(t, "register %p%s", page, t->registered ? " (again)" : "");
		ret = ioctl(cfg.profiles_fd, KTAU_IOC_SHARED_REGISTER, &reg);
		err = errno;
		fz_result(t, ret, err, ktau_now_ns());
		/* Another thread may be truncating the memfd: EFAULT. */
		if (t->registered ? !(ret < 0 && err == EBUSY) :
		    ret != 0 && !(err == EFAULT && page != fz_sh_page(t, 0)))
			fz_fail(t, "unexpected %s", ret ? fz_errname(err) : "success");
		if (ret)
			return;
		fz_registered(t, page);
		sh = fz_reg_private(t);
		if (sh && (sh->tid != t->tid || sh->size != sizeof(*sh) || (sh->seq & 1) ||
			   sh->nentries != KTAU_SHARED_ENTRIES || sh->clock_mult == 0))
			fz_fail(t, "page header: tid %d size %u seq %u nentries %u mult %u",
				sh->tid, sh->size, sh->seq, sh->nentries, sh->clock_mult);
		if (!sh) {
			fz_note(t, "truncate the memfd under the registered page");
			if (ftruncate(cfg.memfd, 0) || ftruncate(cfg.memfd, t->page))
				fz_fail(t, "ftruncate: %s", strerror(errno));
			ktau_getppid_loop(5);
			fz_result(t, 0, 0, ktau_now_ns());
		}
		return;
	}
	switch (sh ? r : 5) {
	case 1:		/* counts exactly, when nobody can switch groups */
		seq = __atomic_load_n(&sh->seq, __ATOMIC_ACQUIRE);
		before = fz_sh_count(sh, KTAU_ID_GETPPID);
		fz_note(t, "100 getppid, registered");
		ktau_getppid_loop(100);
		fz_result(t, 0, 0, ktau_now_ns());
		if ((sh->seq & 1) || (!cfg.perfmon && sh->seq - seq < 200))
			fz_fail(t, "page %ld: seq %u after %u; size %u abi 0x%x tid %d (%d)",
				((char *)sh - fz_sh_page(t, 0)) / t->page, sh->seq, seq, sh->size,
				sh->abi, sh->tid, t->tid);
		if (!cfg.perfmon && fz_sh_count(sh, KTAU_ID_GETPPID) - before != 100)
			fz_fail(t, "getppid counted %llu times of 100",
				(unsigned long long)(fz_sh_count(sh, KTAU_ID_GETPPID) - before));
		break;
	case 2:		/* unmapped and replaced: the new page stays untouched */
		fz_note(t, "replace the registered page");
		p = mmap(sh, t->page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (p != sh) {
			fz_fail(t, "mmap: %s", strerror(errno));
			break;
		}
		t->reg_page = NULL;	/* registered, but no longer visible */
		ktau_getppid_loop(10);
		fz_result(t, 0, 0, ktau_now_ns());
		if (!fz_page_zero(p, t->page))
			fz_fail(t, "the kernel wrote to a page mapped after the registered one");
		break;
	case 3:		/* made read-only: the kernel still writes it, nothing else */
		fz_note(t, "registered page read-only");
		mprotect(sh, t->page, PROT_READ);
		seq = __atomic_load_n(&sh->seq, __ATOMIC_ACQUIRE);
		ktau_getppid_loop(10);
		if (!cfg.perfmon && __atomic_load_n(&sh->seq, __ATOMIC_ACQUIRE) == seq)
			fz_fail(t, "a read-only registered page is not updated");
		mprotect(sh, t->page, PROT_READ | PROT_WRITE);
		fz_result(t, 0, 0, ktau_now_ns());
		break;
	default:
		fz_note(t, "unregister");
		ret = ioctl(cfg.profiles_fd, KTAU_IOC_SHARED_UNREGISTER);
		err = errno;
		fz_result(t, ret, err, ktau_now_ns());
		if (ret)
			fz_fail(t, "unexpected %s", fz_errname(err));
		t->registered = false;
		t->reg_page = NULL;
		break;
	}
}

/* The victim: a child that makes system calls until it is killed. */
static pid_t fz_victim_start(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* Signals of samplers that the fuzzers start on it. */
		signal(SIGUSR1, SIG_IGN);
		signal(SIGUSR2, SIG_IGN);
		for (;;)
			syscall(SYS_getppid);
	}
	return pid;
}

static void fz_victim(struct fz_thread *t)
{
	pid_t old = cfg.victim;

	fz_note(t, "replace victim %d", old);
	kill(old, SIGKILL);
	fz_wait(t, old, "victim", true);
	__atomic_store_n(&cfg.victim, fz_victim_start(), __ATOMIC_RELEASE);
	fz_result(t, cfg.victim, 0, ktau_now_ns());
}

static void fz_one(struct fz_thread *t)
{
	__u64 r = fz_below(t, 1000);

	if (r < 90)
		fz_open(t);
	else if (r < 120)
		t->nfds ? fz_close_one(t) : fz_open(t);
	else if (r < 300)
		fz_read(t);
	else if (r < 340)
		fz_readv(t);
	else if (r < 480)
		fz_write(t);
	else if (r < 520)
		fz_lseek(t);
	else if (r < 940)
		fz_ioctl(t);
	else if (r < 955)
		fz_fork(t);
	else if (r < 970)
		fz_thread_op(t);
	else if (r < 995)
		fz_shared(t);
	else if (t->idx == 0)
		fz_victim(t);
}

static int fz_map(struct fz_thread *t)
{
	char *b = (char *)(uintptr_t)(FZ_BASE + t->idx * FZ_STRIDE);
	struct ktau_snapshot *s;
	struct ktau_shared_reg *reg;
	long pg = t->page;

	t->base = mmap(b, FZ_PAGES * pg, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (t->base == MAP_FAILED)
		return -errno;
	b = t->base;
	t->rw = b;
	t->rw_size = FZ_RW_PAGES * pg;
	if (mprotect(b, FZ_RW_PAGES * pg, PROT_READ | PROT_WRITE) ||
	    mprotect(b + FZ_PG_RO * pg, pg, PROT_READ | PROT_WRITE) ||
	    mprotect(b + FZ_PG_SH * pg, FZ_SH_PAGES * pg, PROT_READ | PROT_WRITE) ||
	    mmap(b + FZ_PG_MEMFD * pg, pg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 cfg.memfd, 0) == MAP_FAILED)
		return -errno;
	/* Good arguments, where the kernel can read them but not write back. */
	s = (struct ktau_snapshot *)(b + FZ_PG_RO * pg + FZ_RO_SNAP);
	ktau_snap_req(s, KTAU_SNAP_SELF, NULL, 0, t->rw, t->rw_size);
	reg = (struct ktau_shared_reg *)(b + FZ_PG_RO * pg + FZ_RO_REG);
	reg->addr = (uintptr_t)(b + (FZ_PG_SH + 3) * pg);
	reg->size = sizeof(struct ktau_shared);
	*(__u64 *)(b + FZ_PG_RO * pg + FZ_RO_MASK) = FZ_ALL_GROUPS;
	memcpy(b + FZ_PG_RO * pg + FZ_RO_CMD, "all on", sizeof("all on"));
#ifdef KTAU_IOC_SAMPLE_START
	{
		struct ktau_sample_attr *a = (void *)(b + FZ_PG_RO * pg + FZ_RO_ATTR);
		struct ktau_sample_read *rd = (void *)(b + FZ_PG_RO * pg + FZ_RO_SREAD);

		a->size = sizeof(*a);
		a->event = KTAU_SAMPLE_CPU_CLOCK;
		a->period = 1000000;
		a->capacity = 64;
		rd->size = sizeof(*rd);
		rd->buf = (uintptr_t)t->rw;
		rd->max = 16;
	}
#endif
#ifdef KTAU_IOC_PROBE_ADD
	{
		/* Good, but the ID cannot be written back: EFAULT, nothing added. */
		struct ktau_probe_req *pr = (void *)(b + FZ_PG_RO * pg + FZ_RO_PROBE);

		pr->size = sizeof(*pr);
		snprintf(pr->name, sizeof(pr->name), "%s", fz_probe_names[0]);
	}
#endif
	if (mprotect(b + FZ_PG_RO * pg, pg, PROT_READ) ||
	    munmap(b + FZ_PG_HOLE1 * pg, pg) || munmap(b + FZ_PG_HOLE2 * pg, pg))
		return -errno;
	return 0;
}

static void *fz_thread_main(void *arg)
{
	struct fz_thread *t = arg;

	t->tid = gettid();
	cfg.tids[t->idx] = t->tid;
	t->gone_tid = t->tid + 100000;
	while (ktau_now_ns() < cfg.deadline)
		fz_one(t);
#ifdef KTAU_IOC_PROBE_ADD
	fz_probes_take_back(t);
#endif
	while (t->nfds)
		fz_close_one(t);
	/* A thread may end with its page registered: the exit ends it. */
	return NULL;
}

/* The /proc entries: those we know, and any other in /proc/ktau. */
static int fz_entries(void)
{
	static const struct fz_entry known[] = {
		{ KTAU_VERSION_PATH, K_VERSION }, { KTAU_FUNCTIONS_PATH, K_FUNCTIONS },
		{ KTAU_CONTROL_PATH, K_CONTROL }, { KTAU_AGGREGATE_PATH, K_AGGREGATE },
		{ KTAU_PROFILES_PATH, K_PROFILES }, { KTAU_COLLECT_PATH, K_COLLECT },
		{ "/proc/ktau/trace", K_TRACE }, { KTAU_PROBES_PATH, K_PROBES },
		{ "/proc/self/ktau", K_OWN }, { "/proc/thread-self/ktau", K_OWN },
		{ "/proc/self/task/%d/ktau", K_OWN }, { "/proc/self/task/%d/ktau", K_GONE },
		{ "/proc/%d/ktau", K_VICTIM }, { "/proc/%d/task/%d/ktau", K_VICTIM },
		{ "/proc/1/ktau", K_FOREIGN }, { "/proc/1/task/1/ktau", K_FOREIGN },
		{ "/proc/2/ktau", K_FOREIGN },
	};
	struct fz_entry *e;
	struct dirent *de;
	size_t i;
	DIR *d;
	int n;

	e = calloc(ARRAY_SIZE(known) + 32, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (i = n = 0; i < ARRAY_SIZE(known); i++)
		if ((known[i].kind != K_PROBES || cfg.probes) &&
		    (known[i].kind != K_TRACE || cfg.trace))
			e[n++] = known[i];
	snprintf(e[n].path, sizeof(e[n].path), "/proc/%d/ktau", cfg.test_pid);
	e[n++].kind = K_FOREIGN;
	d = opendir("/proc/ktau");
	while (d && (de = readdir(d)) && n < (int)ARRAY_SIZE(known) + 32) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(e[n].path, sizeof(e[n].path), "/proc/ktau/%.40s", de->d_name);
		for (i = 0; i < ARRAY_SIZE(known); i++)
			if (!strcmp(known[i].path, e[n].path))
				break;
		if (i == ARRAY_SIZE(known)) {
			ktau_log("fuzzing a /proc/ktau entry this test does not know: %s",
				 e[n].path);
			e[n++].kind = K_UNKNOWN;
		}
	}
	if (d)
		closedir(d);
	cfg.entries = e;
	cfg.nentries = n;
	return 0;
}

static void fz_on_signal(int sig)
{
}

/* The fuzzing process. Exit status: 0, or 1 when a setup step failed. */
static void fz_process(int nthreads)
{
	struct sigaction sa = { .sa_handler = fz_on_signal, .sa_flags = SA_RESTART };
	struct fz_thread *t = calloc(nthreads, sizeof(*t));
	int i, err;

	/* Samplers that the fuzzers start signal their threads. */
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	cfg.nthreads = nthreads;
	if (!t || fz_entries())
		_exit(1);
	cfg.memfd = memfd_create("ktau_fuzz", 0);
	if (cfg.memfd < 0 || ftruncate(cfg.memfd, sysconf(_SC_PAGESIZE)))
		_exit(1);
	cfg.profiles_fd = open(KTAU_PROFILES_PATH, O_RDONLY);
	cfg.collect_fd = open(KTAU_COLLECT_PATH, O_RDONLY);
	if (cfg.profiles_fd < 0 || cfg.collect_fd < 0)
		_exit(1);
	cfg.victim = fz_victim_start();
	for (i = 0; i < nthreads; i++) {
		t[i].idx = i;
		t[i].cfg = &cfg;
		t[i].page = sysconf(_SC_PAGESIZE);
		t[i].rng = fz_mix(cfg.seed + i);
		t[i].ring = &cfg.shm->ring[i];
		t[i].st = &cfg.shm->stats[i];
		err = fz_map(&t[i]);
		if (err) {
			ktau_log("cannot map the fuzzing pages: %s", strerror(-err));
			_exit(1);
		}
	}
	for (i = 1; i < nthreads; i++)
		if (pthread_create(&t[i].th, NULL, fz_thread_main, &t[i]))
			_exit(1);
	fz_thread_main(&t[0]);
	for (i = 1; i < nthreads; i++)
		pthread_join(t[i].th, NULL);
	kill(cfg.victim, SIGKILL);
	waitpid(cfg.victim, NULL, 0);
	__atomic_store_n(&cfg.shm->done, 1, __ATOMIC_RELEASE);
	_exit(0);
}

/* The test side. */
FIXTURE(fuzz) {
	__u64 groups;		/* before the test: restored after */
	int kmsg;		/* /dev/kmsg, at its end before the test */
	char tainted[32];
};

FIXTURE_VARIANT(fuzz) {
	uid_t uid;
	__u64 caps;
	bool root;
};

FIXTURE_VARIANT_ADD(fuzz, root) {
	.uid = 0,
	.root = true,
};

FIXTURE_VARIANT_ADD(fuzz, user) {
	.uid = KTAU_USER_ID,
	.caps = 0,
};

FIXTURE_VARIANT_ADD(fuzz, perfmon) {
	.uid = KTAU_USER_ID,
	.caps = KTAU_CAP(CAP_PERFMON),
};

static unsigned long fz_env(const char *name, unsigned long def)
{
	const char *s = getenv(name);

	return s && *s ? strtoul(s, NULL, 0) : def;
}

static __u64 fz_seed(void)
{
	static __u64 seed;
	const char *s = getenv("KTAU_FUZZ_SEED");

	if (!seed)
		seed = s && *s ? strtoull(s, NULL, 0) : fz_mix(ktau_now_ns() ^ getpid());
	return seed;
}

static int fz_groups(__u64 *mask)
{
	int fd = open(KTAU_PROFILES_PATH, O_RDONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, KTAU_IOC_GET_GROUPS, mask))
		ret = -errno;
	close(fd);
	return ret;
}

static int fz_set_groups(__u64 mask)
{
	int fd = open(KTAU_PROFILES_PATH, O_RDONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, KTAU_IOC_SET_GROUPS, &mask))
		ret = -errno;
	close(fd);
	return ret;
}

static void fz_read_tainted(char *buf, size_t len)
{
	char *s = ktau_slurp("/proc/sys/kernel/tainted", NULL);

	snprintf(buf, len, "%s", s ? s : "?");
	free(s);
}

FIXTURE_SETUP(fuzz)
{
	ktau_must_have_ktau(_metadata);
	ASSERT_EQ(0, geteuid()) TH_LOG("the fuzzer starts as root");
	ASSERT_EQ(0, fz_groups(&self->groups));
	fz_read_tainted(self->tainted, sizeof(self->tainted));
	self->kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (self->kmsg >= 0)
		lseek(self->kmsg, 0, SEEK_END);
	else
		TH_LOG("no /dev/kmsg (%s): the kernel log is not checked", strerror(errno));
}

FIXTURE_TEARDOWN_PARENT(fuzz)
{
	EXPECT_EQ(0, fz_set_groups(self->groups));
}

/* Kernel log lines since the test began that no test may cause. */
static int fz_kmsg_bad(int fd)
{
	static const char * const bad[] = {
		"WARNING:", "BUG:", "Oops", "KASAN", "UBSAN", "general protection",
		"Call Trace", "kernel BUG", "list_add corruption", "list_del corruption",
		"suspicious RCU", "circular locking", "ODEBUG", "refcount_t:", "ktau",
	};
	char rec[2048], *msg;
	int n = 0;
	ssize_t len;
	size_t i;

	if (fd < 0)
		return 0;
	for (;;) {
		len = read(fd, rec, sizeof(rec) - 1);
		if (len < 0 && errno == EPIPE)
			continue;	/* overwritten records */
		if (len <= 0)
			break;
		rec[len] = '\0';
		for (i = 0; i < ARRAY_SIZE(bad); i++) {
			if (strstr(rec, bad[i])) {
				msg = strchr(rec, ';');
				ktau_log("kernel log: %s", msg ? msg + 1 : rec);
				n++;
				break;
			}
		}
	}
	return n;
}

static void fz_print_ring(struct fz_shm *shm)
{
	unsigned int i, j, pos;

	for (i = 0; i < (unsigned int)shm->nthreads; i++) {
		pos = __atomic_load_n(&shm->ring[i].pos, __ATOMIC_ACQUIRE);
		ktau_log("last calls of thread %u (newest last):", i);
		for (j = pos > FZ_RING ? pos - FZ_RING : 0; j < pos; j++)
			ktau_log("  %s", shm->ring[i].desc[j % FZ_RING]);
	}
}

static void fz_print_stats(struct fz_shm *shm, const char *variant, unsigned long secs)
{
	unsigned long calls = 0, ok = 0, forks = 0, threads = 0, reg = 0, probes = 0;
	unsigned long e[134] = { 0 };
	char line[1024];
	size_t len = 0;
	int i, j;

	for (i = 0; i < shm->nthreads; i++) {
		calls += shm->stats[i].calls;
		ok += shm->stats[i].ok;
		forks += shm->stats[i].forks;
		threads += shm->stats[i].threads;
		reg += shm->stats[i].registered;
		probes += shm->stats[i].probes;
		for (j = 0; j < 134; j++)
			e[j] += shm->stats[i].by_errno[j];
	}
	for (j = 0; j < 134; j++)
		if (e[j])
			len += snprintf(line + len, sizeof(line) - len, " %s %lu",
					fz_errname(j), e[j]);
	ktau_log("%s: %lu calls in %lu s by %d threads, %lu succeeded", variant, calls, secs,
		 shm->nthreads, ok);
	ktau_log("%s: %lu children, %lu short threads, %lu registrations, %lu probes added",
		 variant, forks, threads, reg, probes);
	ktau_log("%s: errors:%s", variant, line);
}

/* After the fuzz: the kernel still counts exactly. */
static void fz_sanity(struct __test_metadata *_metadata)
{
	const struct ktau_task_rec *ra, *rb;
	struct ktau_snap a = { 0 }, b = { 0 };
	struct ktau_collect_stats cs;
	struct ktau_shared_reg reg = { .size = sizeof(struct ktau_shared) };
	struct ktau_shared *sh;
	char buf[16384];
	int fd, cfd, status;
	pid_t pid;
	ssize_t n;

	fd = ktau_must_open_profiles(_metadata);
	ra = ktau_must_snap_self(_metadata, fd, &a);
	ktau_getppid_loop(1000);
	rb = ktau_must_snap_self(_metadata, fd, &b);
	EXPECT_EQ(1000, ktau_val_delta(ra, rb, KTAU_ID_GETPPID).count);
	ktau_snap_free(&a);
	ktau_snap_free(&b);

	/* A collector still collects. */
	cfd = ktau_must_open_collect(_metadata);
	pid = ktau_must_fork_member(_metadata, cfd);
	if (pid == 0) {
		ktau_getppid_loop(100);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	n = read(cfd, buf, sizeof(buf));
	ASSERT_LT(0, n) TH_LOG("collector: %s", strerror(errno));
	ASSERT_EQ(0, ktau_recs_check(buf, n, &(__u32){ 0 }));
	ra = (const void *)buf;
	EXPECT_EQ(pid, ra->tid);
	EXPECT_EQ(100, ktau_rec_val(ra, KTAU_ID_GETPPID).count);
	ASSERT_EQ(0, ioctl(cfd, KTAU_IOC_COLLECT_STATS, &cs));
	EXPECT_EQ(0, cs.queued);
	EXPECT_EQ(0, cs.dropped + cs.denied);
	close(cfd);

	/* A shared page still counts exactly. */
	if (cfg.shared) {
		sh = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, sh);
		reg.addr = (uintptr_t)sh;
		ASSERT_EQ(0, ioctl(fd, KTAU_IOC_SHARED_REGISTER, &reg))
			TH_LOG("%s", strerror(errno));
		ktau_getppid_loop(100);
		EXPECT_EQ(100, fz_sh_count(sh, KTAU_ID_GETPPID));
		EXPECT_EQ(0, sh->seq & 1);
		EXPECT_EQ(gettid(), sh->tid);
		EXPECT_EQ(0, ioctl(fd, KTAU_IOC_SHARED_UNREGISTER));
		munmap(sh, sysconf(_SC_PAGESIZE));
	}
	close(fd);
}

/* Probes listed in /proc/ktau/probes (0 without it), the list in *text. */
static int fz_probes_listed(char **text)
{
	char *p;
	int n = 0;

	*text = cfg.probes ? ktau_slurp(KTAU_PROBES_PATH, NULL) : NULL;
	if (!*text)
		return cfg.probes ? -errno : 0;
	for (p = *text; (p = strchr(p, '\n')); p++)
		n++;
	return n - 1;	/* the header */
}

static int fz_sysctl(const char *path)
{
	char *s = ktau_slurp(path, NULL);
	int v = s ? atoi(s) : 2;

	free(s);
	return v;
}

static int fz_abi_minor(void)
{
	char *v = ktau_slurp(KTAU_VERSION_PATH, NULL);
	unsigned int major = 0, minor = 0;

	if (v && sscanf(v, "%u.%u", &major, &minor) != 2)
		minor = 0;
	free(v);
	return major == KTAU_ABI_VERSION_MAJOR ? (int)minor : -1;
}

TEST_F_TIMEOUT(fuzz, run, 30)
{
	unsigned long secs = fz_env("KTAU_FUZZ_SECONDS", 2);
	int nthreads = fz_env("KTAU_FUZZ_THREADS", 2), status, n, i, minor;
	const char *vname = variant->root ? "root" : variant->caps ? "perfmon" : "user";
	__u64 groups = 0, hard, before;
	struct ktau_snap snap = { 0 };
	struct fz_shm *shm;
	int pfd, kptr, paranoid, probes;
	char *skip, *end, *listed;
	char tainted[32];
	pid_t pid;

	if (nthreads < 1)
		nthreads = 1;
	if (nthreads > FZ_MAX_THREADS)
		nthreads = FZ_MAX_THREADS;
	minor = fz_abi_minor();
	ASSERT_LE(0, minor) TH_LOG("ABI major version is not %d", KTAU_ABI_VERSION_MAJOR);
	memset(&cfg, 0, sizeof(cfg));
	cfg.seed = fz_mix(fz_seed() + (variant->root ? 0 : variant->caps ? 2 : 1));
	cfg.root = variant->root;
	cfg.perfmon = variant->root || (variant->caps & KTAU_CAP(CAP_PERFMON));
	cfg.shared = minor >= 1;
	kptr = fz_sysctl("/proc/sys/kernel/kptr_restrict");
	paranoid = fz_sysctl("/proc/sys/kernel/perf_event_paranoid");
	cfg.hide_kaddr = !(kptr == 0 && paranoid <= 1);
	cfg.hide_kaddr_root = kptr >= 2;
	cfg.probes = !access(KTAU_PROBES_PATH, F_OK);
	cfg.trace = !access("/proc/ktau/trace", F_OK);
	cfg.verbose = fz_env("KTAU_FUZZ_VERBOSE", 0);
	skip = getenv("KTAU_FUZZ_SKIP");
	while (skip && *skip) {
		i = strtoul(skip, &end, 0);
		if (end == skip || i >= 64)
			break;
		cfg.skip_nr |= 1ull << i;
		skip = *end ? end + 1 : end;
	}
	if (cfg.skip_nr)
		ktau_log("not calling KTAU ioctls 0x%llx (KTAU_FUZZ_SKIP)",
			 (unsigned long long)cfg.skip_nr);
	cfg.test_pid = getpid();
	ktau_log("%s: KTAU_FUZZ_SEED=0x%llx (this variant 0x%llx), %lu s, %d threads, ABI 1.%d",
		 vname, (unsigned long long)fz_seed(), (unsigned long long)cfg.seed, secs,
		 nthreads, minor);
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, shm);
	shm->nthreads = nthreads;
	cfg.shm = shm;

	/* Root's descriptors, which the unprivileged fuzzers inherit. */
	if (!variant->root) {
		static const struct fz_entry inh[] = {
			{ KTAU_CONTROL_PATH, K_CONTROL }, { KTAU_AGGREGATE_PATH, K_AGGREGATE },
			{ "/proc/1/ktau", K_FOREIGN }, { KTAU_PROFILES_PATH, K_PROFILES },
			{ KTAU_PROBES_PATH, K_PROBES },
		};
		static const int mode[] = { O_WRONLY, O_RDONLY, O_RDONLY, O_RDONLY, O_RDONLY };

		for (i = 0; i < (int)ARRAY_SIZE(inh); i++) {
			if (inh[i].kind == K_PROBES && !cfg.probes)
				continue;
			cfg.inh_fd[cfg.ninh] = open(inh[i].path, mode[i]);
			ASSERT_LE(0, cfg.inh_fd[cfg.ninh])
				TH_LOG("%s: %s", inh[i].path, strerror(errno));
			cfg.inh_kind[cfg.ninh] = inh[i].kind;
			cfg.inh_mode[cfg.ninh++] = mode[i];
		}
	}

	/* A user cannot reset: our own count survives its fuzzing. */
	ktau_getppid_loop(1000);
	pfd = ktau_must_open_profiles(_metadata);
	ASSERT_EQ(0, ktau_snap(pfd, &snap, KTAU_SNAP_SELF, NULL, 0));
	before = ktau_rec_val(ktau_snap_find(&snap, gettid()), KTAU_ID_GETPPID).count;

	probes = fz_probes_listed(&listed);
	free(listed);

	fflush(stdout);
	fflush(stderr);
	cfg.deadline = ktau_now_ns() + secs * KTAU_NSEC_PER_SEC;
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (!variant->root && ktau_become(variant->uid, variant->caps)) {
			ktau_log("cannot become uid %u: %s", variant->uid, strerror(errno));
			_exit(1);
		}
		fz_process(nthreads);
	}
	for (i = 0; i < cfg.ninh; i++)
		close(cfg.inh_fd[i]);

	/* Wait, with a deadline of our own: a hang shows the calls in progress. */
	hard = cfg.deadline + FZ_MARGIN_S * KTAU_NSEC_PER_SEC;
	while ((n = waitpid(pid, &status, WNOHANG)) == 0 && ktau_now_ns() < hard)
		ktau_sleep_ns(20 * KTAU_NSEC_PER_MSEC);
	if (n == 0) {
		fz_print_ring(shm);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		ASSERT_NE(0, n) TH_LOG("the fuzzer hung (seed 0x%llx)",
				       (unsigned long long)cfg.seed);
	}
	if (WIFSIGNALED(status) || WEXITSTATUS(status) || shm->failures)
		fz_print_ring(shm);
	fz_print_stats(shm, vname, secs);
	EXPECT_TRUE(WIFEXITED(status)) TH_LOG("the fuzzer died of signal %d (seed 0x%llx)",
					      WTERMSIG(status), (unsigned long long)cfg.seed);
	EXPECT_EQ(0, WIFEXITED(status) ? WEXITSTATUS(status) : 0);
	EXPECT_EQ(1, shm->done);
	EXPECT_EQ(0, shm->failures) TH_LOG("%d failures; repeat with KTAU_FUZZ_SEED=0x%llx",
					   shm->failures, (unsigned long long)fz_seed());
	/* Its probes went with it: taken back, or with their files. */
	n = fz_probes_listed(&listed);
	EXPECT_EQ(probes, n) TH_LOG("probes before the fuzzer %d, after it %d:\n%s", probes, n,
				    listed ? listed : "");
	free(listed);

	/* An unprivileged fuzzer changed nothing; restore what root changed. */
	ASSERT_EQ(0, fz_groups(&groups));
	ASSERT_EQ(0, ktau_snap(pfd, &snap, KTAU_SNAP_SELF, NULL, 0));
	if (!cfg.perfmon) {
		EXPECT_EQ(self->groups, groups) TH_LOG("groups changed by a user");
		EXPECT_LE(before, ktau_rec_val(ktau_snap_find(&snap, gettid()),
					       KTAU_ID_GETPPID).count) TH_LOG("reset by a user");
	}
	ktau_snap_free(&snap);
	close(pfd);
	ASSERT_EQ(0, fz_set_groups(FZ_ALL_GROUPS));
	fz_sanity(_metadata);
	ASSERT_EQ(0, fz_set_groups(self->groups));
	ASSERT_EQ(0, fz_groups(&groups));
	EXPECT_EQ(self->groups, groups);

	EXPECT_EQ(0, fz_kmsg_bad(self->kmsg));
	fz_read_tainted(tainted, sizeof(tainted));
	EXPECT_STREQ(self->tainted, tainted) TH_LOG("the kernel is tainted now");
	munmap(shm, sizeof(*shm));
}

/* The harness's deadline: the fuzzing time and then some. */
static void __attribute__((constructor(KSELFTEST_PRIO_TEST + 10))) fz_timeout(void)
{
	_fuzz_run_object->timeout = fz_env("KTAU_FUZZ_SECONDS", 2) + 2 * FZ_MARGIN_S;
}

TEST_HARNESS_MAIN
