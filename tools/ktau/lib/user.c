// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: the user-level runtime. Timers per thread with callpaths, and
 * the thread's kernel routines charged to the user routine on top of its
 * stack, read from the KTAU shared page (ABI 1.1) with plain loads.
 *
 * Each event (a start or a stop) reads the clock and the page's seq. When
 * seq is what it was at the last read, no kernel routine ended in the
 * thread since: nothing else is done (the fast path, a few loads and
 * compares). Otherwise the page is copied consistently (seqcount), the
 * differences of the group and routine counters since the last read are
 * charged to the frame on top (or to "[outside timers]" when no timer
 * runs), and the frame's exclusive time excludes them when it stops.
 *
 * TAU's rules: inclusive time counts the outermost activation of a
 * recursive routine only (per callpath node it counts each node's own
 * activations); exclusive time is inclusive time less the inclusive time
 * of the timers it started and less the kernel time charged to it. The
 * user clock (CLOCK_MONOTONIC) and the kernel's clock may differ by a few
 * ns: when the kernel time charged to a frame exceeds its wall time less
 * its children, the frame's inclusive time is raised to fit, and the sum
 * of such raises is reported ("KTAU Clock Adjust ns").
 *
 * Concurrency: a thread changes only its own data, with gen odd while it
 * does (a seqlock without atomics read-modify-write). The writer copies
 * other running threads with that count; blocks of a growing array are
 * retired, not freed, while the thread lives. An event that finds gen
 * odd interrupted another event of its thread (a signal handler): it is
 * dropped and counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "internal.h"
#include "user-internal.h"

/*
 * GCC 12's -fanalyzer loses track of a block stored into the thread's
 * data through a pointer (d->kents = ...) and reports it as leaked once
 * the function returns: a false positive (the blocks are freed by
 * ktau__data_free() and free_retired()).
 */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif

#define KT_PAGE		4096
#define KT_HBUCKETS	1024
#define KT_SYNC_TRIES	16
#define KT_COPY_TRIES	1100	/* 100 quick tries, then 1 ms apart: ~1 s */
#define KT_SEQ_UNKNOWN	1u	/* odd: never the seq of a read page */

_Static_assert(sizeof(struct ktau_shared) == KT_PAGE, "the shared page is one 4 KiB page");

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

static struct {
	pthread_mutex_t lock;
	pthread_once_t once;
	pthread_key_t key;
	int key_ok;
	struct kt_thread *threads, *last_thread;
	struct ktau_timer **timers;
	uint32_t ntimers, cap_timers;
	struct ktau_timer *byname[KT_HBUCKETS];
	struct kt_atab *byaddr;		/* grows: look-ups stay flat */
	uint32_t naddr;
	char *outdir;			/* written at exit; NULL: nothing */
	char *trace_dir;		/* KTAU_TRACE_USER: user routines traced */
	int fd;				/* /proc/ktau/profiles */
	int fd_err;			/* why not (-errno) */
	int shared_off, verbose, depth_max;
	/* TAU's throttling: a timer with more than thr_calls calls in a
	 * thread, each under thr_percall_ns inclusive, is no longer timed. */
	int throttle;
	uint64_t thr_calls, thr_percall_ns;
	int rank;			/* MPI rank from the launcher; -1: none */
	char *select_file;		/* KTAU_SELECT_FILE, applied */
	atomic_uint excluded;		/* timers made not timed by it */
	int force;			/* KTAU_PROFILE_FORCE: write among others' files */
	atomic_int reported;
	atomic_int exiting;
	uint64_t (*clock)(void);
	const struct ktau_registry *test_reg;
	uint64_t start_us;	/* CLOCK_REALTIME at the first use */
} g = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.once = PTHREAD_ONCE_INIT,
	.fd = -1,
	.depth_max = KT_DEPTH_DEFAULT,
	.throttle = 1,
	.thr_calls = 100000,
	.thr_percall_ns = 10000,
};

/* A thread that is done (or never could start): its events are dropped. */
static struct kt_thread kt_dead = { .gen = 1, .state = KT_DEAD };

static __thread struct kt_thread *kt_cur __attribute__((tls_model("initial-exec")));
/* The calling thread holds or waits for the lock (with or without state). */
static __thread int kt_locking __attribute__((tls_model("initial-exec")));
/* The calling thread is making its state (its first event). */
static __thread int kt_starting __attribute__((tls_model("initial-exec")));

/*
 * The lock of the timer registry and the thread list. The calling thread
 * is marked while it holds or waits for it: its signal handlers' events
 * are then dropped (ktau__gen_busy), and their first event and new
 * timers refused (kt_lock_busy), rather than deadlocked.
 */
static void kt_lock(void)
{
	struct kt_thread *th = kt_cur;

	kt_locking++;
	if (th && th->state == KT_LIVE)
		th->locking++;
	pthread_mutex_lock(&g.lock);
}

static void kt_unlock(void)
{
	struct kt_thread *th = kt_cur;

	pthread_mutex_unlock(&g.lock);
	if (th && th->state == KT_LIVE && th->locking)
		th->locking--;
	kt_locking--;
}

/* A signal handler interrupted this thread in or before kt_lock(). */
static inline int kt_lock_busy(void)
{
	return kt_locking != 0;
}

void ktau__lock(void)
{
	kt_lock();
}

void ktau__unlock(void)
{
	kt_unlock();
}

int ktau__callpath_depth(void)
{
	return g.depth_max;
}

static inline uint64_t kt_clock(void)
{
	struct timespec ts;

	if (unlikely(g.clock != NULL))
		return g.clock();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Rounded up: the kernel time taken off a frame is never less than what
 * its callpath children show (those are rounded down). */
static inline uint64_t kt_conv_ceil(uint64_t units, uint32_t mult, uint32_t shift)
{
	unsigned __int128 p = (unsigned __int128)units * mult;

	if (!units)
		return 0;
	return (uint64_t)((p + (((unsigned __int128)1 << shift) - 1)) >> shift);
}

/* ---- Memory a signal handler may take ------------------------------ */

/*
 * What an event can allocate (a thread's state at its first event, its
 * growing tables, a new timer and its name) comes from mmap(), which a
 * signal handler may call, never from malloc(), which it may not: a
 * handler that interrupted malloc() in the same thread would wait for
 * the lock its own thread holds, or corrupt the heap. Whole pages: these
 * are few and long-lived (tables double; timers share chunks, below).
 */
struct kt_mhdr {
	size_t bytes;			/* of the mapping */
	size_t pad;			/* keeps what follows 16-byte aligned */
};

static void *kt_zalloc(size_t size)
{
	struct kt_mhdr *h;
	size_t bytes;

	if (size > SIZE_MAX / 2)
		return NULL;
	bytes = (size + sizeof(*h) + KT_PAGE - 1) & ~(size_t)(KT_PAGE - 1);
	h = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h == MAP_FAILED)
		return NULL;
	h->bytes = bytes;
	return h + 1;
}

static void kt_mfree(void *p)
{
	struct kt_mhdr *h = p;

	if (p)
		munmap(h - 1, h[-1].bytes);
}

/*
 * Timers and their names are never freed: they are carved, under the
 * lock, from chunks that stay mapped.
 */
#define KT_CHUNK	(64 << 10)

static void *kt_carve(size_t size)
{
	static char *next;
	static size_t left;
	void *p;

	size = (size + 15) & ~(size_t)15;
	if (size > KT_CHUNK / 4)
		return kt_zalloc(size);
	if (left < size) {
		next = kt_zalloc(KT_CHUNK - sizeof(struct kt_mhdr));
		if (!next) {
			left = 0;
			return NULL;
		}
		left = KT_CHUNK - sizeof(struct kt_mhdr);
	}
	p = next;
	next += size;
	left -= size;
	return p;
}

/* ---- Growable arrays ---------------------------------------------- */

static struct kt_blk *blk_new(size_t cap, size_t esz)
{
	struct kt_blk *b = kt_zalloc(sizeof(*b) + cap * esz);

	if (b)
		b->cap = cap;
	return b;
}

/*
 * A block with room for item 'need' (index): o itself, or a copy in a
 * bigger one (o is then retired); NULL without memory.
 */
static __attribute__((noinline)) struct kt_blk *blk_grow(struct kt_thread *th, struct kt_blk *o,
							 size_t need, size_t esz)
{
	struct kt_blk *n;
	size_t cap;

	if (need < o->cap)
		return o;
	cap = o->cap * 2;
	if (cap <= need)
		cap = need + 1;
	n = blk_new(cap, esz);
	if (!n)
		return NULL;
	memcpy(n->items, o->items, o->cap * esz);
	o->retired = th->retired;
	th->retired = o;
	return n;
}

/* 0 when item 'need' of *field exists or was made; -ENOMEM. */
#define blk_reserve(th, field, need, esz) ({					\
	struct kt_blk *nb_ = *(field);						\
	if (unlikely((size_t)(need) >= nb_->cap)) {				\
		nb_ = blk_grow(th, nb_, need, esz);				\
		if (nb_)							\
			*(field) = nb_;						\
	}									\
	nb_ ? 0 : -ENOMEM;							\
})

static void free_retired(struct kt_thread *th)
{
	struct kt_blk *b, *next;

	for (b = th->retired; b; b = next) {
		next = b->retired;
		kt_mfree(b);
	}
	th->retired = NULL;
}

void ktau__data_free(struct kt_data *d)
{
	kt_mfree(d->trace);
	kt_mfree(d->stack);
	kt_mfree(d->flat);
	kt_mfree(d->nodes);
	kt_mfree(d->kents);
	memset(d, 0, sizeof(*d));
}

/* ---- Timers ------------------------------------------------------- */

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static uint32_t hash_addr(uintptr_t a)
{
	uint64_t x = (uint64_t)a * 0x9E3779B97F4A7C15ull;

	return (uint32_t)(x >> 32);
}

/*
 * Under the lock. A table outgrown stays mapped (all of them together are
 * less than the last), so that a look-up by ID never reads freed memory.
 */
static struct ktau_timer *timer_new(void)
{
	struct ktau_timer *t;

	if (g.ntimers == g.cap_timers) {
		uint32_t cap = g.cap_timers ? g.cap_timers * 2 : 256;
		struct ktau_timer **n = kt_zalloc(cap * sizeof(*n));

		if (!n)
			return NULL;
		if (g.ntimers)
			memcpy(n, g.timers, g.ntimers * sizeof(*n));
		__atomic_store_n(&g.timers, n, __ATOMIC_RELEASE);
		g.cap_timers = cap;
	}
	if (g.ntimers == KT_NONE - 1)
		return NULL;
	t = kt_carve(sizeof(*t));
	if (!t)
		return NULL;
	t->id = g.ntimers;
	g.timers[g.ntimers] = t;
	__atomic_store_n(&g.ntimers, g.ntimers + 1, __ATOMIC_RELEASE);
	return t;
}

/*
 * The hash chains only grow, at their head, with a release store: look-ups
 * need no lock; creation takes it and looks again.
 */
static struct ktau_timer *find_name(uint32_t h, const char *name)
{
	struct ktau_timer *t;

	for (t = __atomic_load_n(&g.byname[h], __ATOMIC_ACQUIRE); t; t = t->next)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

/*
 * Timers by function address (-finstrument-functions): a table that grows
 * four-fold when it holds twice as many timers as buckets, so that a
 * look-up walks about one timer however many functions the program has.
 * Growing relinks every timer into the new table, then publishes it; a
 * look-up without the lock that races with it may miss (a chain it
 * follows can lead into the new table's), never loop, and a miss is
 * looked up again under the lock. Old tables stay mapped.
 */
struct kt_atab {
	uint32_t mask;
	struct ktau_timer *b[];
};

#define KT_ATAB_MIN	1024

static struct ktau_timer *find_addr(uintptr_t addr)
{
	const struct kt_atab *tab = __atomic_load_n(&g.byaddr, __ATOMIC_ACQUIRE);
	struct ktau_timer *t;

	if (!tab)
		return NULL;
	for (t = __atomic_load_n(&tab->b[hash_addr(addr) & tab->mask], __ATOMIC_ACQUIRE); t;
	     t = __atomic_load_n(&t->next, __ATOMIC_ACQUIRE))
		if (t->addr == addr)
			return t;
	return NULL;
}

/* Under the lock: a table of 4 * @old's buckets with every timer, or NULL. */
static struct kt_atab *atab_grow(struct kt_atab *old)
{
	uint32_t size = old ? (old->mask + 1) * 4 : KT_ATAB_MIN, i;
	struct kt_atab *n = kt_zalloc(sizeof(*n) + size * sizeof(n->b[0]));
	struct ktau_timer *t, *next;

	if (!n)
		return NULL;
	n->mask = size - 1;
	for (i = 0; old && i <= old->mask; i++) {
		for (t = old->b[i]; t; t = next) {
			uint32_t h = hash_addr(t->addr) & n->mask;

			next = t->next;
			__atomic_store_n(&t->next, n->b[h], __ATOMIC_RELEASE);
			n->b[h] = t;
		}
	}
	__atomic_store_n(&g.byaddr, n, __ATOMIC_RELEASE);
	return n;
}

struct ktau_timer *ktau_timer_get(const char *name)
{
	struct ktau_timer *t;
	size_t len;
	char *copy;
	uint32_t h;

	if (!name || !*name)
		return NULL;
	h = hash_str(name) % KT_HBUCKETS;
	t = find_name(h, name);
	if (t || kt_lock_busy())
		return t;
	len = strlen(name) + 1;
	kt_lock();
	t = find_name(h, name);
	if (!t) {
		copy = kt_carve(len);
		t = copy ? timer_new() : NULL;
		if (t) {
			memcpy(copy, name, len);
			t->name = copy;
			t->untimed = ktau__select_name(copy) ? KT_EXCLUDED : 0;
			if (t->untimed)
				atomic_fetch_add_explicit(&g.excluded, 1, memory_order_relaxed);
			t->next = g.byname[h];
			__atomic_store_n(&g.byname[h], t, __ATOMIC_RELEASE);
		}
	}
	kt_unlock();
	return t;
}

struct ktau_timer *ktau__timer_addr(uintptr_t addr)
{
	struct kt_atab *tab;
	struct ktau_timer *t;
	uint32_t h;

	t = find_addr(addr);
	if (t || kt_lock_busy())
		return t;
	kt_lock();
	t = find_addr(addr);
	tab = g.byaddr;
	if (!t && (!tab || g.naddr >= 2 * (tab->mask + 1)))
		tab = atab_grow(tab) ?: tab;
	if (!t && tab) {
		t = timer_new();
		if (t) {
			h = hash_addr(addr) & tab->mask;
			t->is_addr = 1;
			t->addr = addr;
			t->untimed = ktau__select_addr(addr) ? KT_EXCLUDED : 0;
			if (t->untimed)
				atomic_fetch_add_explicit(&g.excluded, 1, memory_order_relaxed);
			t->next = tab->b[h];
			__atomic_store_n(&tab->b[h], t, __ATOMIC_RELEASE);
			g.naddr++;
		}
	}
	kt_unlock();
	return t;
}

/* Without the lock too: ntimers is published after its entry. */
struct ktau_timer *ktau__timer_by_id(uint32_t id)
{
	return id < __atomic_load_n(&g.ntimers, __ATOMIC_ACQUIRE) ?
		__atomic_load_n(&g.timers, __ATOMIC_ACQUIRE)[id] : NULL;
}

const char *ktau_user_output_error(void)
{
	return ktau_output_error();
}

void ktau__throttle_rule(char *buf, size_t size)
{
	if (!g.throttle)
		snprintf(buf, size, "off");
	else
		snprintf(buf, size, "over %llu calls under %llu us each",
			 (unsigned long long)g.thr_calls,
			 (unsigned long long)(g.thr_percall_ns / 1000));
}

uint32_t ktau__ntimers(void)
{
	return g.ntimers;
}

/* ---- Process and thread set-up ------------------------------------ */

static void kt_atexit(void);
static void kt_thread_exit(void *arg);
static void kt_fork_prepare(void);
static void kt_fork_parent(void);
static void kt_fork_child(void);

static int env_flag(const char *name, int dflt)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return dflt;
	return strcmp(v, "0") && strcasecmp(v, "no") && strcasecmp(v, "off");
}

/* A positive count from the environment, times @unit; -1 if not one. */
static int env_u64(const char *name, uint64_t *v, uint64_t unit)
{
	const char *s = getenv(name);
	unsigned long long x;
	char *end;

	if (!s || !*s)
		return 0;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end || !x || x > UINT64_MAX / unit) {
		if (g.verbose)
			fprintf(stderr, "libktau: %s=%s is not a positive count; ignored\n", name, s);
		return -1;
	}
	*v = x * unit;
	return 0;
}

/*
 * The output directory: "%p" becomes the pid, "%r" the MPI rank, "%h"
 * the host name (ktau_output_path); a relative one is taken from the
 * working directory of now (not of the exit).
 */
static char *expand_dir(const char *tmpl)
{
	char cwd[4096], *path, *out;

	if (!*tmpl)
		return strdup("");
	path = ktau_output_path(tmpl);
	if (!path || path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return path;
	out = ktau__strfmt("%s/%s", cwd, path);
	free(path);
	return out;
}

/*
 * KTAU_SELECT_FILE: the user asked for it, so what goes wrong is said on
 * stderr whatever KTAU_VERBOSE says; the program then runs with every
 * routine timed, and the profile's metadata say that no list applied.
 */
static void kt_select(const char *path)
{
	struct ktau_timer *t;
	char err[256];
	uint32_t i;
	long n;

	if (ktau__select_parse(path, err, sizeof(err))) {
		fprintf(stderr, "libktau: KTAU_SELECT_FILE=%s: %s; timing every routine\n", path, err);
		return;
	}
	n = ktau__select_resolve();
	if (n < 0) {
		fprintf(stderr, "libktau: KTAU_SELECT_FILE=%s: %s; timing every routine\n", path,
			strerror((int)-n));
		return;
	}
	g.select_file = strdup(path);
	/*
	 * Named timers made before the process was set up (ktau_timer_get()
	 * does not set it up: it may run in a signal handler) get the lists
	 * now; those made from here on, when they are made.
	 */
	kt_lock();
	for (i = 0; i < KT_HBUCKETS; i++)
		for (t = g.byname[i]; t; t = t->next)
			if (!(t->untimed & KT_EXCLUDED) && ktau__select_name(t->name)) {
				__atomic_fetch_or(&t->untimed, KT_EXCLUDED, __ATOMIC_RELAXED);
				atomic_fetch_add_explicit(&g.excluded, 1, memory_order_relaxed);
			}
	kt_unlock();
	if (!n && ktau__select_includes())
		fprintf(stderr, "libktau: KTAU_SELECT_FILE=%s: its include list names no routine of "
			"the program's objects: only named timers it names are timed\n", path);
	else if (g.verbose)
		fprintf(stderr, "libktau: KTAU_SELECT_FILE=%s: %ld routines listed\n", path, n);
}

const char *ktau__select_file(void)
{
	return g.select_file;
}

uint32_t ktau__select_excluded(void)
{
	return atomic_load_explicit(&g.excluded, memory_order_relaxed);
}

static void kt_process_init(void)
{
	const char *v;
	unsigned int major, minor;
	int ret;

	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		g.start_us = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
	}
	g.verbose = env_flag("KTAU_VERBOSE", 0);
	g.shared_off = !env_flag("KTAU_SHARED", 1);
	g.force = env_flag("KTAU_PROFILE_FORCE", 0);
	g.rank = ktau_mpi_rank();
	v = getenv("KTAU_CALLPATH_DEPTH");
	if (v && *v) {
		long d = strtol(v, NULL, 10);

		if (d >= 1 && d <= KT_DEPTH_MAX)
			g.depth_max = (int)d;
		else if (g.verbose)
			fprintf(stderr, "libktau: KTAU_CALLPATH_DEPTH=%s is not in 1..%d; using %d\n",
				v, KT_DEPTH_MAX, g.depth_max);
	}
	g.throttle = env_flag("KTAU_THROTTLE", 1);
	env_u64("KTAU_THROTTLE_NUMCALLS", &g.thr_calls, 1);
	if (env_u64("KTAU_THROTTLE_PERCALL", &g.thr_percall_ns, 1000) && g.verbose)
		fprintf(stderr, "libktau: KTAU_THROTTLE_PERCALL is microseconds; using %llu\n",
			(unsigned long long)g.thr_percall_ns / 1000);
	v = getenv("KTAU_TRACE_USER");
	if (v && *v)
		g.trace_dir = strdup(v);
	v = getenv("KTAU_SELECT_FILE");
	if (v && *v)
		kt_select(v);
	v = getenv("KTAU_PROFILE_DIR");
	if (!g.outdir)
		g.outdir = expand_dir(v ? v : "ktau-profile");
	if (g.outdir && !*g.outdir) {
		free(g.outdir);
		g.outdir = NULL;
	}
	g.key_ok = !pthread_key_create(&g.key, kt_thread_exit);
	pthread_atfork(kt_fork_prepare, kt_fork_parent, kt_fork_child);
	atexit(kt_atexit);

	if (g.shared_off) {
		g.fd_err = -ECANCELED;
		return;
	}
	ret = ktau_abi_version(&major, &minor);
	if (!ret && major != KTAU_ABI_VERSION_MAJOR)
		ret = -EPROTO;
	else if (!ret && minor < 1)
		ret = -ENOTTY;
	if (!ret) {
		g.fd = open(KTAU_PATH_PROFILES, O_RDONLY | O_CLOEXEC);
		if (g.fd < 0)
			ret = -errno;
	}
	g.fd_err = ret;
}

/* Strings to stderr in one write(), async-signal-safe; NULL ends them. */
static void kt_say(const char *s, ...)
{
	char buf[512];
	size_t len = 0, n;
	va_list ap;

	va_start(ap, s);
	for (; s; s = va_arg(ap, const char *)) {
		n = strlen(s);
		if (n > sizeof(buf) - 1 - len)
			n = sizeof(buf) - 1 - len;
		memcpy(buf + len, s, n);
		len += n;
	}
	va_end(ap);
	if (write(STDERR_FILENO, buf, len) < 0)
		return;
}

static void report_unregistered(int err)
{
	const char *why, *what;

	if (!g.verbose || atomic_exchange(&g.reported, 1))
		return;
	switch (-err) {
	case ECANCELED:
		why = "KTAU_SHARED=0";
		what = "unset KTAU_SHARED to charge kernel time";
		break;
	case ENOENT:
		why = "this kernel has no KTAU (/proc/ktau is missing)";
		what = "boot a kernel built with CONFIG_KTAU=y";
		break;
	case ENOTTY:
		why = "this kernel's KTAU has no shared pages (ABI older than 1.1)";
		what = "boot a KTAU kernel with ABI 1.1";
		break;
	case EPROTO:
		why = "the kernel's KTAU ABI is not the one of this libktau";
		what = "use a libktau built for this kernel";
		break;
	case EBUSY:
		why = "the thread already has a page registered (by another library?)";
		what = "register one page per thread";
		break;
	default:
		why = strerrordesc_np(-err);
		what = "see ktaud(1) and Documentation/trace/ktau.rst";
		break;
	}
	/* A thread's first event may be in a signal handler: no stdio. */
	kt_say("libktau: kernel routines are not charged to user timers: ", why ? why : "?",
	       "; the timers work without them (", what, ")\n", NULL);
}

static void kt_page_reset_copy(struct kt_thread *th)
{
	memset(th->last, 0, sizeof(*th->last));
	th->seq = KT_SEQ_UNKNOWN;
}

/*
 * Map and register a page of our own for the calling thread; *pp is the
 * page, not yet attached to a thread (kt_page_attach()).
 */
static int kt_page_open(struct ktau_shared **pp)
{
	struct ktau_shared_reg reg;
	struct ktau_shared *p;
	void *m;
	int err;

	*pp = NULL;
	if (g.fd < 0)
		return g.fd_err ? g.fd_err : -ENOENT;
	m = mmap(NULL, KT_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -errno;
	memset(&reg, 0, sizeof(reg));
	reg.addr = (uintptr_t)m;
	reg.size = sizeof(struct ktau_shared);
	if (ioctl(g.fd, KTAU_IOC_SHARED_REGISTER, &reg)) {
		err = -errno;
		munmap(m, KT_PAGE);
		return err;
	}
	p = m;
	if (p->size != sizeof(*p) || p->abi >> 16 != KTAU_ABI_VERSION_MAJOR ||
	    p->nentries > KTAU_SHARED_ENTRIES) {
		ioctl(g.fd, KTAU_IOC_SHARED_UNREGISTER);
		munmap(m, KT_PAGE);
		return -EPROTO;
	}
	*pp = p;
	return 0;
}

/* A page from kt_page_open() that no thread took. */
static void kt_page_close(struct ktau_shared *p)
{
	ioctl(g.fd, KTAU_IOC_SHARED_UNREGISTER);
	munmap(p, KT_PAGE);
}

/*
 * The thread's page from now on: the first read charges everything the
 * page holds (since its registration) to the interval without timers.
 */
static void kt_page_attach(struct kt_thread *th, struct ktau_shared *p)
{
	th->page = p;
	th->page_mapped = 1;
	th->registered = 1;
	th->reg_err = 0;
	th->d.had_page = 1;
	kt_page_reset_copy(th);
	th->seqp = &p->seq;
}

/* Register a page of our own for the calling thread. */
static int kt_register(struct kt_thread *th)
{
	struct ktau_shared *p;
	int err = kt_page_open(&p);

	if (!err)
		kt_page_attach(th, p);
	return err;
}

static void kt_unregister(struct kt_thread *th)
{
	th->seqp = NULL;
	if (th->page_mapped) {
		if (th->registered && g.fd >= 0)
			ioctl(g.fd, KTAU_IOC_SHARED_UNREGISTER);
		munmap(th->page, KT_PAGE);
	}
	th->page = NULL;
	th->page_mapped = 0;
	th->registered = 0;
}

static void kt_comm(struct kt_thread *th)
{
	char name[17] = "";

	if (!prctl(PR_GET_NAME, name, 0, 0, 0)) {
		name[16] = '\0';
		memcpy(th->comm, name, sizeof(th->comm) - 1);
		th->comm[sizeof(th->comm) - 1] = '\0';
	}
}

static int kt_data_init(struct kt_data *d)
{
	uint32_t nt = __atomic_load_n(&g.ntimers, __ATOMIC_RELAXED);	/* a size hint */
	struct kt_node *n0;

	d->stack = blk_new(32, sizeof(struct kt_frame));
	d->flat = blk_new(nt > 64 ? nt + 16 : 64, sizeof(struct kt_flat));
	d->nodes = blk_new(64, sizeof(struct kt_node));
	d->kents = blk_new(32, sizeof(struct kt_kent));
	if (!d->stack || !d->flat || !d->nodes || !d->kents)
		return -ENOMEM;
	if (g.trace_dir) {
		d->trace = blk_new(1024, sizeof(struct kt_trec));
		if (!d->trace)
			return -ENOMEM;
	}
	n0 = KT_ITEMS(d->nodes, struct kt_node);
	n0->parent = 0;
	n0->timer = KT_NONE;
	n0->depth = 1;
	n0->hnext = KT_NONE;
	n0->kfirst = KT_NONE;
	d->nnodes = 1;
	d->mult = 1;
	d->shift = 0;
	return 0;
}

static void kt_thread_free(struct kt_thread *th)
{
	ktau__data_free(&th->d);
	free_retired(th);
	kt_mfree(th->hash);
	kt_mfree(th->last);
	kt_mfree(th->cur);
	kt_mfree(th);
}

static struct kt_thread *kt_thread_make(void)
{
	struct ktau_shared *page = NULL;
	struct kt_thread *th;
	uint64_t t_reg;
	uint32_t i;
	int reg_err;

	/*
	 * A signal handler's first event while its thread holds the lock:
	 * dropped, and the thread starts at its next event.
	 */
	if (kt_lock_busy())
		return &kt_dead;
	pthread_once(&g.once, kt_process_init);
	if (atomic_load(&g.exiting)) {
		kt_cur = &kt_dead;
		return &kt_dead;
	}
	/*
	 * The page first: what the set-up below costs in the kernel (the
	 * mmap()s of its state and tables, their page faults) is then in
	 * the page, and charged to the
	 * interval without timers, which starts here.
	 */
	reg_err = g.shared_off ? -ECANCELED : kt_page_open(&page);
	t_reg = kt_clock();
	th = kt_zalloc(sizeof(*th));
	if (!th) {
		if (page)
			kt_page_close(page);
		kt_cur = &kt_dead;
		return &kt_dead;
	}
	th->last = kt_zalloc(sizeof(*th->last));
	th->cur = kt_zalloc(sizeof(*th->cur));
	th->hash_cap = 128;
	th->hash = kt_zalloc(th->hash_cap * sizeof(*th->hash));
	if (!th->last || !th->cur || !th->hash || kt_data_init(&th->d)) {
		kt_thread_free(th);
		if (page)
			kt_page_close(page);
		kt_cur = &kt_dead;
		return &kt_dead;
	}
	for (i = 0; i < th->hash_cap; i++)
		th->hash[i] = KT_NONE;
	th->pid = getpid();
	th->tid = (pid_t)syscall(SYS_gettid);
	kt_comm(th);
	th->state = KT_LIVE;
	/* Busy until set up: a signal handler's event meanwhile is dropped. */
	ktau__gen_begin(th);
	kt_cur = th;
	if (g.key_ok)
		pthread_setspecific(g.key, th);
	kt_lock();
	if (g.last_thread)
		g.last_thread->next = th;
	else
		g.threads = th;
	g.last_thread = th;
	kt_unlock();

	th->reg_err = reg_err;
	if (page)
		kt_page_attach(th, page);
	if (th->reg_err)
		report_unregistered(th->reg_err);
	th->d.idle_open = 1;
	th->d.idle_t0 = page ? t_reg : kt_clock();
	ktau__gen_end(th);
	return th;
}

/*
 * A signal handler's first event inside the thread's own first event is
 * dropped, as one under the lock: the thread has one state.
 */
static struct kt_thread *kt_thread_init(void)
{
	struct kt_thread *th;

	if (kt_starting)
		return &kt_dead;
	kt_starting = 1;
	th = kt_thread_make();
	kt_starting = 0;
	return th;
}

uint64_t ktau__start_us(void)
{
	return g.start_us;
}

struct kt_thread *ktau__self(void)
{
	struct kt_thread *th = kt_cur;

	if (likely(th != NULL))
		return th;
	return kt_thread_init();
}

/* ---- The data of a thread ------------------------------------------ */

#define gen_begin ktau__gen_begin
#define gen_end ktau__gen_end

/*
 * Another thread is copying this one's data (ktau_user_write): wait
 * between two events until it is done, so that a thread that times
 * without pause does not make the copy fail forever.
 */
void ktau__pause(struct kt_thread *th)
{
	while (atomic_load_explicit(&th->pause_req, memory_order_acquire))
		sched_yield();
}

static uint32_t node_hash(uint32_t parent, uint32_t timer)
{
	return (parent * 0x9E3779B1u) ^ (timer * 0x85EBCA77u);
}

static int rehash(struct kt_thread *th)
{
	uint32_t cap = th->hash_cap * 2, i, *h;
	struct kt_node *nodes = KT_ITEMS(th->d.nodes, struct kt_node);

	h = kt_zalloc(cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (i = 0; i < cap; i++)
		h[i] = KT_NONE;
	for (i = 1; i < th->d.nnodes; i++) {
		uint32_t b = node_hash(nodes[i].parent, nodes[i].timer) & (cap - 1);

		nodes[i].hnext = h[b];
		h[b] = i;
	}
	kt_mfree(th->hash);
	th->hash = h;
	th->hash_cap = cap;
	return 0;
}

/* The node of timer under parent (0: a root); KT_NONE without memory. */
static uint32_t node_get(struct kt_thread *th, uint32_t parent, uint32_t timer)
{
	struct kt_data *d = &th->d;
	struct kt_node *nodes = KT_ITEMS(d->nodes, struct kt_node), *n;
	uint32_t b = node_hash(parent, timer) & (th->hash_cap - 1), i;

	for (i = th->hash[b]; i != KT_NONE; i = nodes[i].hnext)
		if (nodes[i].parent == parent && nodes[i].timer == timer)
			return i;
	if (d->nnodes >= KT_NONE - 1 || blk_reserve(th, &d->nodes, d->nnodes, sizeof(*n)))
		return KT_NONE;
	nodes = KT_ITEMS(d->nodes, struct kt_node);
	i = d->nnodes;
	n = &nodes[i];
	memset(n, 0, sizeof(*n));
	n->parent = parent;
	n->timer = timer;
	n->depth = parent ? nodes[parent].depth + 1 : 1;
	n->kfirst = KT_NONE;
	n->hnext = th->hash[b];
	th->hash[b] = i;
	d->nnodes++;
	if (d->nnodes > th->hash_cap)
		rehash(th);
	return i;
}

static struct kt_kent *kent_get(struct kt_thread *th, uint32_t node, uint32_t id, uint32_t group)
{
	struct kt_data *d = &th->d;
	struct kt_node *n = &KT_ITEMS(d->nodes, struct kt_node)[node];
	struct kt_kent *k = KT_ITEMS(d->kents, struct kt_kent);
	uint32_t i;

	for (i = n->kfirst; i != KT_NONE; i = k[i].next)
		if (k[i].id == id)
			return &k[i];
	if (d->nkents >= KT_NONE - 1 || blk_reserve(th, &d->kents, d->nkents, sizeof(*k)))
		return NULL;
	k = KT_ITEMS(d->kents, struct kt_kent);
	i = d->nkents;
	memset(&k[i], 0, sizeof(k[i]));
	k[i].id = id;
	k[i].group = group;
	k[i].next = n->kfirst;
	n->kfirst = i;
	d->nkents++;
	return &k[i];
}

static void kc_add(struct kt_kcounts *c, uint64_t count, uint64_t incl, uint64_t excl)
{
	c->count += count;
	c->incl += incl;
	c->excl += excl;
}

/*
 * Charge what changed between th->last and th->cur to the frame on top
 * (or to the interval without timers). The kernel time of the charge is
 * the sum of the groups' exclusive times; it is never taken as less than
 * any inclusive time charged (so that a callpath child never exceeds its
 * parent, whatever the kernel reports).
 */
static void kt_charge(struct kt_thread *th)
{
	struct kt_data *d = &th->d;
	const struct kt_pagecopy *c = th->cur, *l = th->last;
	struct kt_frame *top = d->depth ? &KT_ITEMS(d->stack, struct kt_frame)[d->depth - 1] : NULL;
	uint32_t node = top ? top->node : 0, i;
	struct kt_node *n = &KT_ITEMS(d->nodes, struct kt_node)[node];
	uint64_t gsum = 0, esum = 0, imax = 0, k;

	for (i = 0; i < KTAU_SHARED_GROUPS; i++) {
		uint64_t dc = c->g[i].count - l->g[i].count;
		uint64_t di = c->g[i].incl - l->g[i].incl;
		uint64_t de = c->g[i].excl - l->g[i].excl;

		if (!dc && !di && !de)
			continue;
		kc_add(&n->kg[i], dc, di, de);
		gsum += de;
		if (di > imax)
			imax = di;
	}
	for (i = 0; i < KTAU_SHARED_ENTRIES; i++) {
		const struct ktau_shared_entry *e = &c->e[i], *o = &l->e[i];
		uint64_t dc, di, de;
		struct kt_kent *ke;

		if (e->id == KTAU_ID_NONE)
			continue;
		if (o->id == e->id) {
			dc = e->count - o->count;
			di = e->incl - o->incl;
			de = e->excl - o->excl;
		} else {
			/* A new routine in this entry: it starts from zero. */
			dc = e->count;
			di = e->incl;
			de = e->excl;
		}
		if (!dc && !di && !de)
			continue;
		/*
		 * [other] takes calls of any group that found no slot; the
		 * page names the group of its first. Its group is the
		 * registry's, as in ktaud's profiles.
		 */
		ke = kent_get(th, node, e->id, e->id == KTAU_ID_OTHER ?
			      (uint32_t)ktau_func_group(NULL, KTAU_ID_OTHER) : e->group);
		if (ke)
			kc_add(&ke->c, dc, di, de);
		esum += de;
		if (di > imax)
			imax = di;
	}
	d->unlisted = c->unlisted;
	k = gsum;
	if (esum > k)
		k = esum;
	if (imax > k)
		k = imax;
	if (top)
		top->kraw += k;
	else
		d->idle_kraw += k;
	d->kraw_total += k;
	d->page_reads++;
}

/*
 * A consistent copy of the page into th->cur, at a clock reading that no
 * kernel routine ended around. Returns 1 with *t set, 0 when the page
 * stayed busy (nothing read; the next event tries again).
 */
static int kt_read_page(struct kt_thread *th, uint64_t *t, uint32_t *seq)
{
	const struct ktau_shared *p = th->page;
	const volatile uint32_t *sp = th->seqp;
	uint32_t s1, s2;
	int i;

	for (i = 0; i < KT_SYNC_TRIES; i++) {
		s1 = *sp;
		*t = kt_clock();
		s2 = *sp;
		if (s2 & 1)
			continue;
		atomic_thread_fence(memory_order_acquire);
		th->cur->unlisted = p->unlisted;
		memcpy(th->cur->g, (const void *)p->groups, sizeof(th->cur->g));
		memcpy(th->cur->e, (const void *)p->entries, sizeof(th->cur->e));
		atomic_thread_fence(memory_order_acquire);
		if (*sp != s2)
			continue;
		/* Aligned with the clock; after three tries, consistent is enough
		 * (a clock that is a system call changes seq itself). */
		if (s1 == s2 || i >= 2) {
			*seq = s2;
			if (p->clock_mult) {
				th->d.mult = p->clock_mult;
				th->d.shift = p->clock_shift < 96 ? p->clock_shift : 95;
			}
			return 1;
		}
	}
	th->d.sync_fail++;
	return 0;
}

static void kt_swap(struct kt_thread *th, uint32_t seq)
{
	struct kt_pagecopy *x = th->last;

	th->last = th->cur;
	th->cur = x;
	th->seq = seq;
}

static __attribute__((noinline)) uint64_t kt_sync(struct kt_thread *th, uint64_t t)
{
	uint32_t seq;

	if (kt_read_page(th, &t, &seq)) {
		kt_charge(th);
		kt_swap(th, seq);
	}
	return t;
}

/*
 * The time of an event, after charging the kernel routines that ended
 * since the last one. The fast path: seq unchanged around the clock.
 */
static inline uint64_t kt_event_time(struct kt_thread *th)
{
	const volatile uint32_t *sp = th->seqp;
	uint64_t t;
	uint32_t s;

	if (!sp)
		return kt_clock();
	s = *sp;
	t = kt_clock();
	if (likely(s == th->seq && *sp == s))
		return t;
	return kt_sync(th, t);
}

/* Close the interval without timers (if there is anything in it). */
static void close_idle(struct kt_data *d, uint64_t now)
{
	uint64_t k, wall, incl;

	if (!d->idle_open)
		return;
	d->idle_open = 0;
	wall = now > d->idle_t0 ? now - d->idle_t0 : 0;
	if (!wall && !d->idle_kraw)
		return;
	k = kt_conv_ceil(d->idle_kraw, d->mult, d->shift);
	incl = wall;
	if (k > incl) {
		d->clock_adjust += k - incl;
		incl = k;
	}
	d->outside.calls++;
	d->outside.incl += incl;
	d->outside.excl += incl - k;
	d->idle_kraw = 0;
}

/*
 * Close the frame on top. @rule: a real stop, to which the throttling
 * rule applies (not the frames closed in a copy for writing).
 */
static void kt_pop(struct kt_data *d, uint64_t now, int rule)
{
	struct kt_frame *f = &KT_ITEMS(d->stack, struct kt_frame)[--d->depth];
	struct kt_flat *fl = &KT_ITEMS(d->flat, struct kt_flat)[f->timer];
	uint64_t k = kt_conv_ceil(f->kraw, d->mult, d->shift);
	uint64_t incl = now > f->t0 ? now - f->t0 : 0, excl;

	if (f->child + k > incl) {
		d->clock_adjust += f->child + k - incl;
		incl = f->child + k;
	}
	excl = incl - f->child - k;
	if (d->trace) {
		/* Room was made at its push (kt_push). */
		if (d->ntrace < d->trace->cap && d->ntrace < KT_TRACE_MAX)
			KT_ITEMS(d->trace, struct kt_trec)[d->ntrace++] =
				(struct kt_trec){ f->t0, now > f->t0 ? now : f->t0, f->timer, d->depth };
		else
			d->trace_lost++;
	}
	fl->calls++;
	fl->excl += excl;
	if (fl->active && !--fl->active) {
		fl->incl += incl;
		/* TAU's rule, once no frame of it is open in the thread. */
		if (rule && g.throttle && fl->calls > g.thr_calls &&
		    fl->incl < fl->calls * g.thr_percall_ns)
			__atomic_fetch_or(&__atomic_load_n(&g.timers, __ATOMIC_ACQUIRE)[f->timer]->untimed,
					  KT_THROTTLED, __ATOMIC_RELAXED);
	}
	if (f->owns) {
		struct kt_node *n = &KT_ITEMS(d->nodes, struct kt_node)[f->node];

		n->calls++;
		n->incl += incl;
		n->excl += excl;
	}
	if (d->depth) {
		KT_ITEMS(d->stack, struct kt_frame)[d->depth - 1].child += incl;
	} else {
		d->idle_open = 1;
		d->idle_t0 = now;
		d->idle_kraw = 0;
	}
}

void ktau__close_all(struct kt_data *d, uint64_t now)
{
	while (d->depth)
		kt_pop(d, now, 0);
	close_idle(d, now);
}

static int kt_push(struct kt_thread *th, uint32_t timer, uint64_t now)
{
	struct kt_data *d = &th->d;
	struct kt_frame *parent = NULL, *f;
	struct kt_node *nodes;
	struct kt_flat *flat;
	uint32_t node;
	int owns;

	if (!d->depth)
		close_idle(d, now);
	if (blk_reserve(th, &d->stack, d->depth, sizeof(*f)) ||
	    blk_reserve(th, &d->flat, timer, sizeof(*flat)))
		return -ENOMEM;
	/* A slot for each frame open, for when it pops (no memory: lost). */
	if (d->trace && d->ntrace + d->depth < KT_TRACE_MAX)
		(void)blk_reserve(th, &d->trace, d->ntrace + d->depth, sizeof(struct kt_trec));
	if (d->nflat <= timer)
		d->nflat = timer + 1;
	if (d->depth)
		parent = &KT_ITEMS(d->stack, struct kt_frame)[d->depth - 1];
	nodes = KT_ITEMS(d->nodes, struct kt_node);
	if (parent && (!parent->owns || nodes[parent->node].depth >= (uint32_t)g.depth_max)) {
		node = parent->node;
		owns = 0;
	} else {
		node = node_get(th, parent ? parent->node : 0, timer);
		if (node == KT_NONE)
			return -ENOMEM;
		owns = 1;
		nodes = KT_ITEMS(d->nodes, struct kt_node);
	}
	flat = KT_ITEMS(d->flat, struct kt_flat);
	if (parent) {
		flat[parent->timer].subrs++;
		if (parent->owns)
			nodes[parent->node].subrs++;
	}
	flat[timer].active++;
	f = &KT_ITEMS(d->stack, struct kt_frame)[d->depth];
	f->timer = timer;
	f->node = node;
	f->owns = owns;
	f->t0 = now;
	f->child = 0;
	f->kraw = 0;
	d->depth++;
	return 0;
}

/*
 * A start of a timer not timed: of an excluded one, nothing; of a
 * throttled one, counted, and its stop is skipped.
 */
static __attribute__((noinline)) int kt_skip_start(struct kt_thread *th, uint32_t timer,
						   uint32_t untimed)
{
	struct kt_data *d = &th->d;

	/* An excluded routine is not measured: not even an event. */
	if (untimed & KT_EXCLUDED)
		return 0;
	d->events++;
	if (blk_reserve(th, &d->flat, timer, sizeof(struct kt_flat)))
		return -ENOMEM;
	if (d->nflat <= timer)
		d->nflat = timer + 1;
	KT_ITEMS(d->flat, struct kt_flat)[timer].skipped++;
	d->throttled_calls++;
	return 0;
}

int ktau__start_in(struct kt_thread *th, struct ktau_timer *t)
{
	uint32_t untimed;

	if (unlikely(atomic_load_explicit(&g.exiting, memory_order_relaxed)))
		return -ESHUTDOWN;
	untimed = __atomic_load_n(&t->untimed, __ATOMIC_RELAXED);
	if (unlikely(untimed))
		return kt_skip_start(th, t->id, untimed);
	th->d.events++;
	return kt_push(th, t->id, kt_event_time(th));
}

int ktau__stop_in(struct kt_thread *th, struct ktau_timer *t)
{
	struct kt_frame *st;
	uint64_t now;
	uint32_t k, untimed;
	int ret = 0;

	if (unlikely(atomic_load_explicit(&g.exiting, memory_order_relaxed)))
		return -ESHUTDOWN;
	/* Only a throttled timer has starts that were skipped. */
	untimed = __atomic_load_n(&t->untimed, __ATOMIC_RELAXED);
	if (unlikely(untimed) && (untimed & KT_EXCLUDED))
		return 0;
	th->d.events++;
	if (unlikely(untimed)) {
		if (t->id < th->d.nflat && KT_ITEMS(th->d.flat, struct kt_flat)[t->id].skipped) {
			/* The stop of a start that was not timed. */
			KT_ITEMS(th->d.flat, struct kt_flat)[t->id].skipped--;
			return 0;
		}
	}
	now = kt_event_time(th);
	st = KT_ITEMS(th->d.stack, struct kt_frame);
	for (k = th->d.depth; k > 0; k--)
		if (st[k - 1].timer == t->id)
			break;
	if (!k) {
		th->d.unmatched++;
		return -ENOENT;
	}
	if (k != th->d.depth) {
		/* Timers above it did not stop (longjmp, exception). */
		th->d.unmatched += th->d.depth - k;
		ret = -EDEADLK;
	}
	while (th->d.depth >= k)
		kt_pop(&th->d, now, 1);
	return ret;
}

/* An event that finds gen odd interrupted one of its thread: dropped. */
static int kt_busy(struct kt_thread *th)
{
	if (th->state == KT_LIVE)
		th->d.dropped++;
	return -EBUSY;
}

static inline int by_handle(struct ktau_timer *t, int stop)
{
	struct kt_thread *th = ktau__self();

	if (unlikely(ktau__gen_busy(th)))
		return kt_busy(th);
	if (unlikely(!t))
		return -EINVAL;
	return ktau__event(th, t, stop);
}

int ktau_timer_start(struct ktau_timer *t)
{
	return by_handle(t, 0);
}

int ktau_timer_stop(struct ktau_timer *t)
{
	return by_handle(t, 1);
}

static int by_name(const char *name, int stop)
{
	struct kt_thread *th = ktau__self();
	struct ktau_timer *t;

	if (!name || !*name)
		return -EINVAL;
	if (ktau__gen_busy(th))
		return kt_busy(th);
	t = ktau_timer_get(name);
	if (!t)
		return -ENOMEM;
	return ktau__event(th, t, stop);
}

int ktau_timer_start_name(const char *name)
{
	return by_name(name, 0);
}

int ktau_timer_stop_name(const char *name)
{
	return by_name(name, 1);
}

int ktau_user_init(void)
{
	struct kt_thread *th = ktau__self();

	if (th == &kt_dead)
		return atomic_load(&g.exiting) ? -ESHUTDOWN : -ENOMEM;
	return th->seqp != NULL;
}

int ktau_user_stats(struct ktau_user_stats *st)
{
	struct kt_thread *th = ktau__self();

	memset(st, 0, sizeof(*st));
	if (th == &kt_dead)
		return -ESRCH;
	st->registered = th->seqp != NULL;
	st->depth = (int)th->d.depth;
	st->events = th->d.events;
	st->page_reads = th->d.page_reads;
	st->dropped = th->d.dropped;
	st->unmatched = th->d.unmatched;
	st->kernel_ns = ktau__conv(th->d.kraw_total, th->d.mult, th->d.shift);
	return 0;
}

/* Charge what the page holds now, as an event would (no timer change). */
static void kt_sync_now(struct kt_thread *th)
{
	if (th->seqp && *th->seqp != th->seq)
		kt_sync(th, 0);
}

int ktau_user_shared(int on)
{
	struct kt_thread *th = ktau__self();
	int ret = 0;

	if (th == &kt_dead)
		return -ESRCH;
	gen_begin(th);
	if (!on && th->page) {
		kt_sync_now(th);
		kt_unregister(th);
		th->reg_err = -ECANCELED;
	} else if (on && !th->page) {
		ret = kt_register(th);
		th->reg_err = ret;
	}
	gen_end(th);
	return ret ? ret : th->seqp != NULL;
}

int ktau_user_output(const char *dir)
{
	char *d = NULL;

	pthread_once(&g.once, kt_process_init);
	if (dir && *dir) {
		d = expand_dir(dir);
		if (!d)
			return -ENOMEM;
	}
	kt_lock();
	free(g.outdir);
	g.outdir = d;
	kt_unlock();
	return 0;
}

/* ---- Copies for the writer ----------------------------------------- */

static struct kt_blk *blk_copy(const struct kt_blk *b, size_t n, size_t esz)
{
	struct kt_blk *c;

	if (n > b->cap)
		return NULL;	/* torn: count and block do not belong together */
	c = blk_new(n ? n : 1, esz);
	if (c)
		memcpy(c->items, b->items, n * esz);
	return c;
}

/* A deep copy of d (its counts read once, in 'src'). */
static int data_copy(struct kt_data *dst, const struct kt_data *src)
{
	*dst = *src;
	/* The thread's trace is its own: the copy is closed without it. */
	dst->trace = NULL;
	dst->ntrace = 0;
	dst->stack = blk_copy(src->stack, src->depth, sizeof(struct kt_frame));
	dst->flat = blk_copy(src->flat, src->nflat, sizeof(struct kt_flat));
	dst->nodes = blk_copy(src->nodes, src->nnodes, sizeof(struct kt_node));
	dst->kents = blk_copy(src->kents, src->nkents, sizeof(struct kt_kent));
	if (!dst->stack || !dst->flat || !dst->nodes || !dst->kents) {
		ktau__data_free(dst);
		return -EAGAIN;
	}
	return 0;
}

/* Indexes that the closing and the writer follow are in range. */
static int data_valid(const struct kt_data *d)
{
	const struct kt_frame *f = KT_ITEMS(d->stack, struct kt_frame);
	const struct kt_node *n = KT_ITEMS(d->nodes, struct kt_node);
	uint32_t i;

	for (i = 0; i < d->depth; i++)
		if (f[i].timer >= d->nflat || f[i].node >= d->nnodes)
			return 0;
	for (i = 1; i < d->nnodes; i++)
		if (n[i].parent >= i || (n[i].timer >= d->nflat && n[i].timer != KT_NONE))
			return 0;
	return d->nnodes >= 1;
}

/* Copy th (under g.lock). Another running thread: with its gen. */
static int thread_snap(struct kt_thread *th, struct kt_thread *self, uint64_t now,
		       struct kt_tsnap *ts)
{
	struct kt_data tmp;
	unsigned int g1, g2;
	int i;

	memset(ts, 0, sizeof(*ts));
	ts->pid = th->pid;
	ts->tid = th->tid;
	memcpy(ts->comm, th->comm, sizeof(ts->comm));
	ts->state = th->state;
	ts->reg_err = th->reg_err;
	if (th == self || th->state != KT_LIVE) {
		if (data_copy(&ts->d, &th->d))
			return -ENOMEM;
	} else {
		/* Ask it to wait after its current event (see ktau__pause). */
		atomic_store(&th->pause_req, 1);
		for (i = 0; ; i++) {
			if (i == KT_COPY_TRIES) {
				atomic_store(&th->pause_req, 0);
				return -EAGAIN;
			}
			if (i > 100) {
				/* Descheduled in an event, or blocked: give it time. */
				struct timespec ts1 = { 0, 1000000 };

				nanosleep(&ts1, NULL);
			}
			g1 = atomic_load_explicit(&th->gen, memory_order_acquire);
			if (g1 & 1) {
				sched_yield();
				continue;
			}
			memcpy(&tmp, (const void *)&th->d, sizeof(tmp));
			if (data_copy(&ts->d, &tmp))
				goto retry;
			atomic_thread_fence(memory_order_acquire);
			g2 = atomic_load_explicit(&th->gen, memory_order_relaxed);
			if (g1 == g2 && data_valid(&ts->d))
				break;
			ktau__data_free(&ts->d);
retry:
			sched_yield();
		}
		atomic_store(&th->pause_req, 0);
	}
	if (!data_valid(&ts->d)) {
		ktau__data_free(&ts->d);
		return -EBADMSG;
	}
	ts->running = ts->d.depth > 0 && th->state == KT_LIVE && !th->closed;
	if (th->state == KT_LIVE)
		ktau__close_all(&ts->d, now);
	return 0;
}

/* Write every thread into dir; self is the calling thread (or NULL). */
static int kt_write_all(const char *dir, struct kt_thread *self)
{
	struct ktau_registry *own_reg = NULL;
	const struct ktau_registry *reg;
	struct kt_tsnap *snaps = NULL;
	struct ktau_outdir *od = NULL;
	struct kt_thread *th;
	char **names, path[4096];
	uint32_t nnames = 0;
	size_t n = 0, cap = 0, i;
	uint64_t now;
	int ret = 0, nfiles = 0, skipped = 0, node = g.rank < 0 ? 0 : g.rank;

	names = ktau__timer_names(&nnames);
	if (!names && nnames)
		return -ENOMEM;
	reg = g.test_reg;
	if (!reg && !ktau_registry_load(&own_reg))
		reg = own_reg;
	now = kt_clock();
	kt_lock();
	for (th = g.threads; th; th = th->next) {
		if (th->state == KT_DEAD)
			continue;
		if (n == cap) {
			struct kt_tsnap *ns;

			cap = cap ? cap * 2 : 16;
			ns = realloc(snaps, cap * sizeof(*ns));
			if (!ns) {
				ret = -ENOMEM;
				break;
			}
			snaps = ns;
		}
		/* A thread that never timed anything and was charged nothing. */
		if (!th->d.events && !th->d.kraw_total)
			continue;
		if (thread_snap(th, self, now, &snaps[n])) {
			skipped++;
			fprintf(stderr, "libktau: the profile of thread %d could not be taken (it "
				"was in the middle of a timer call, or memory ran out): not written\n",
				(int)th->tid);
			continue;
		}
		n++;
	}
	kt_unlock();

	/* Nothing measured (prog --help): nothing written, nothing removed. */
	if (!ret && n)
		ret = ktau_outdir_open(dir, "user", node, g.force ? KTAU_OUTDIR_FORCE : 0, &od);
	for (i = 0; !ret && i < n; i++) {
		struct ktau__row *rows = NULL;
		size_t nrows = 0;
		FILE *f;

		ret = ktau__rows(&snaps[i], names, nnames, reg, &rows, &nrows);
		if (ret)
			break;
		snprintf(path, sizeof(path), "profile.%d.0.%zu", node, i);
		f = ktau_outdir_create(od, path);
		if (!f) {
			ret = -errno;
			ktau__rows_free(rows, nrows);
			break;
		}
		ret = ktau__write_rows(f, &snaps[i], rows, nrows, node, (int)i);
		if (fclose(f) && !ret)
			ret = -errno;
		ktau__rows_free(rows, nrows);
		if (!ret)
			nfiles++;
	}
	/*
	 * Failed: none of the files this write made stays, so that no reader
	 * takes part of the threads for all of them.
	 */
	if (ret)
		ktau__outdir_failed(od);
	if (od) {
		int c = ktau_outdir_close(od);

		if (c && !ret)
			ret = c;
	}
	for (i = 0; i < n; i++)
		ktau__data_free(&snaps[i].d);
	free(snaps);
	ktau__names_free(names, nnames);
	ktau_registry_free(own_reg);
	(void)skipped;	/* each said above */
	return ret ? ret : nfiles;
}

/* After ktau_user_write: the kernel time of the writing is not charged. */
static void kt_absorb(struct kt_thread *th)
{
	uint64_t t, before;
	uint32_t seq, i;

	if (!th->seqp || !kt_read_page(th, &t, &seq))
		return;
	before = 0;
	for (i = 0; i < KTAU_SHARED_GROUPS; i++)
		before += th->cur->g[i].excl - th->last->g[i].excl;
	th->d.absorbed += before;
	kt_swap(th, seq);
}

int ktau_user_write(const char *dir)
{
	struct kt_thread *th = ktau__self();
	char *own = NULL;
	int ret;

	if (th == &kt_dead)
		th = NULL;
	if (!dir) {
		kt_lock();
		own = g.outdir ? strdup(g.outdir) : NULL;
		kt_unlock();
		if (!own)
			return -EINVAL;
		dir = own;
	}
	if (th) {
		gen_begin(th);
		kt_sync_now(th);
		kt_comm(th);
	}
	ret = kt_write_all(dir, th);
	if (th) {
		kt_absorb(th);
		gen_end(th);
	}
	free(own);
	return ret;
}

/* ---- Exit, thread exit, fork --------------------------------------- */

/*
 * The user routines of every thread, for ktaud trace, into
 * dir/user.<pid>.ktuser (never replacing a file): "KTAUUSER", version 1,
 * the number of names, of threads, the pid; the timer names (u32 length,
 * bytes), then per thread its tid, pid, comm[16], records, lost records
 * and the records (struct kt_trec). lib/trace.c reads it.
 */
static void kt_write_trace(const char *dir)
{
	uint32_t nnames = 0, nth = 0, hdr[4], i;
	char **names, path[4096];
	struct kt_thread *th;
	unsigned long hold;
	FILE *f;
	int fd, err;

	for (th = g.threads; th; th = th->next)
		nth += th->d.trace != NULL;
	snprintf(path, sizeof(path), "%s/user.%d.ktuser", dir, (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		fprintf(stderr, "libktau: cannot write the trace of the user routines to %s: %s\n",
			path, strerror(errno));
		return;
	}
	/* Over a file size limit: EFBIG and the file removed, not a kill mid-way. */
	hold = ktau__xfsz_hold();
	names = ktau__timer_names(&nnames);
	hdr[0] = 1;
	hdr[1] = names ? nnames : 0;
	hdr[2] = nth;
	hdr[3] = (uint32_t)getpid();
	fwrite("KTAUUSER", 1, 8, f);
	fwrite(hdr, sizeof(hdr), 1, f);
	for (i = 0; i < hdr[1]; i++) {
		uint32_t l = names[i] ? (uint32_t)strlen(names[i]) : 0;

		fwrite(&l, sizeof(l), 1, f);
		fwrite(names[i] ? names[i] : "", 1, l, f);
	}
	for (th = g.threads; th; th = th->next) {
		struct {
			int32_t tid, pid;
			char comm[16];
			uint32_t nrecs, pad;
			uint64_t lost;
		} t = { th->tid, th->pid, { 0 }, 0, 0, 0 };

		if (!th->d.trace)
			continue;
		memcpy(t.comm, th->comm, sizeof(t.comm));
		t.nrecs = th->d.ntrace;
		t.lost = th->d.trace_lost;
		fwrite(&t, sizeof(t), 1, f);
		fwrite(th->d.trace->items, sizeof(struct kt_trec), t.nrecs, f);
	}
	if (names)
		ktau__names_free(names, nnames);
	err = -ktau__stream_err(f);
	if (err) {
		fclose(f);
		/* A file cut short would pass for a trace of fewer threads. */
		unlink(path);
		fprintf(stderr, "libktau: cannot write %s: %s (removed)\n", path, strerror(err));
	} else if (fclose(f)) {
		int e = errno;

		unlink(path);
		fprintf(stderr, "libktau: cannot write %s: %s (removed)\n", path, strerror(e));
	}
	ktau__xfsz_release(hold);
}

static void kt_atexit(void)
{
	struct kt_thread *th = kt_cur;
	int ret;

	if (th && th != &kt_dead && th->state == KT_LIVE) {
		gen_begin(th);
		/* The name first: its system call is then in the last read. */
		kt_comm(th);
		ktau__close_all(&th->d, kt_event_time(th));
		th->closed = 1;
		gen_end(th);
	}
	/* From here on, events of every thread are dropped. */
	atomic_store(&g.exiting, 1);
	if (g.trace_dir && g.threads)
		kt_write_trace(g.trace_dir);
	if (!g.outdir || !g.threads)
		return;
	ret = kt_write_all(g.outdir, th && th != &kt_dead ? th : NULL);
	if (ret == -ENOTEMPTY)
		fprintf(stderr, "libktau: the profile was not written: %s (KTAU_PROFILE_DIR names "
			"it; KTAU_PROFILE_FORCE=1 writes among those files)\n", ktau_output_error());
	else if (ret < 0 && *ktau_output_error())
		fprintf(stderr, "libktau: the profile was not written: %s\n", ktau_output_error());
	else if (ret < 0 && (ret == -EACCES || ret == -EPERM || ret == -EROFS))
		fprintf(stderr, "libktau: cannot write the profile to %s: %s "
			"(set KTAU_PROFILE_DIR to a writable directory)\n", g.outdir,
			strerror(-ret));
	else if (ret < 0)
		fprintf(stderr, "libktau: cannot write the profile to %s: %s\n", g.outdir,
			strerror(-ret));
	else if (g.verbose && !ret)
		fprintf(stderr, "libktau: nothing was measured: no profile written\n");
	else if (g.verbose)
		fprintf(stderr, "libktau: %d profile file%s in %s\n", ret, ret == 1 ? "" : "s",
			g.outdir);
}

static void kt_thread_exit(void *arg)
{
	struct kt_thread *th = arg;

	if (!th || th == &kt_dead || th->state != KT_LIVE)
		return;
	gen_begin(th);
	/* The name first: its system call is then in the last read. */
	kt_comm(th);
	ktau__close_all(&th->d, atomic_load(&g.exiting) ? kt_clock() : kt_event_time(th));
	th->closed = 1;
	kt_unregister(th);
	gen_end(th);
	kt_lock();
	th->state = KT_FINISHED;
	free_retired(th);
	kt_mfree(th->hash);
	th->hash = NULL;
	kt_mfree(th->last);
	kt_mfree(th->cur);
	th->last = th->cur = NULL;
	kt_unlock();
	kt_cur = &kt_dead;
}

/* Marked as kt_lock() marks it: a handler during fork() waits for nothing. */
static void kt_fork_prepare(void)
{
	kt_lock();
}

static void kt_fork_parent(void)
{
	kt_unlock();
}

/* The child starts its own profile: its thread only, from zero. */
static void kt_reset_data(struct kt_data *d, uint64_t now)
{
	struct kt_frame *f = KT_ITEMS(d->stack, struct kt_frame);
	struct kt_flat *fl = KT_ITEMS(d->flat, struct kt_flat);
	struct kt_node *n = KT_ITEMS(d->nodes, struct kt_node);
	uint32_t i, active, skipped;

	for (i = 0; i < d->depth; i++) {
		f[i].t0 = now;
		f[i].child = 0;
		f[i].kraw = 0;
	}
	for (i = 0; i < d->nflat; i++) {
		/* The child's stack is the parent's, timed and throttled frames. */
		active = fl[i].active;
		skipped = fl[i].skipped;
		memset(&fl[i], 0, sizeof(fl[i]));
		fl[i].active = active;
		fl[i].skipped = skipped;
	}
	for (i = 0; i < d->nnodes; i++) {
		n[i].calls = n[i].subrs = n[i].incl = n[i].excl = 0;
		memset(n[i].kg, 0, sizeof(n[i].kg));
		n[i].kfirst = KT_NONE;
	}
	d->nkents = 0;
	memset(&d->outside, 0, sizeof(d->outside));
	d->idle_t0 = now;
	d->idle_kraw = 0;
	d->events = d->page_reads = d->dropped = d->unmatched = d->sync_fail = 0;
	d->throttled_calls = 0;
	d->clock_adjust = d->kraw_total = d->absorbed = d->unlisted = 0;
	d->had_page = 0;
	d->ntrace = 0;
	d->trace_lost = 0;
}

static void kt_fork_child(void)
{
	struct kt_thread *self = kt_cur, *th, *next;
	char *od;

	/* Locked (kt_fork_prepare()) until the state is the child's own. */
	for (th = g.threads; th; th = next) {
		next = th->next;
		if (th == self)
			continue;
		if (th->page_mapped)
			munmap(th->page, KT_PAGE);
		kt_thread_free(th);
	}
	g.threads = g.last_thread = NULL;
	if (self && self != &kt_dead) {
		self->next = NULL;
		g.threads = g.last_thread = self;
		self->pid = getpid();
		self->tid = (pid_t)syscall(SYS_gettid);
		kt_reset_data(&self->d, kt_clock());
		if (self->page_mapped) {
			/* Not inherited: a private copy of the parent's page. */
			self->seqp = NULL;
			munmap(self->page, KT_PAGE);
			self->page = NULL;
			self->page_mapped = self->registered = 0;
			self->reg_err = kt_register(self);
		} else if (self->page) {
			/* A simulated page (tests): from what it holds now. */
			uint64_t t;
			uint32_t seq;

			self->d.had_page = 1;
			if (kt_read_page(self, &t, &seq))
				kt_swap(self, seq);
		}
	}
	if (g.outdir && asprintf(&od, "%s/fork-%d", g.outdir, (int)getpid()) >= 0) {
		free(g.outdir);
		g.outdir = od;
	}
	kt_unlock();
}

/* ---- Test hooks ---------------------------------------------------- */

void ktau__user_test_clock(uint64_t (*fn)(void))
{
	g.clock = fn;
}

void ktau__user_test_registry(const struct ktau_registry *reg)
{
	g.test_reg = reg;
}

int ktau__user_test_page(struct ktau_shared *page)
{
	struct kt_thread *th = ktau__self();
	uint64_t t;
	uint32_t seq;

	if (th == &kt_dead)
		return -ESRCH;
	gen_begin(th);
	if (th->page) {
		kt_sync_now(th);
		kt_unregister(th);
	}
	if (page) {
		th->page = page;
		th->seqp = &page->seq;
		th->registered = 1;
		th->reg_err = 0;
		th->d.had_page = 1;
		kt_page_reset_copy(th);
		/* Charged from what the page holds now. */
		if (kt_read_page(th, &t, &seq))
			kt_swap(th, seq);
	}
	gen_end(th);
	return 0;
}

int ktau__user_test_rows(struct ktau__row **rows, size_t *nrows)
{
	struct kt_thread *th = ktau__self();
	struct kt_tsnap ts;
	char **names;
	uint32_t nnames = 0;
	int ret;

	if (th == &kt_dead)
		return -ESRCH;
	names = ktau__timer_names(&nnames);
	if (!names && nnames)
		return -ENOMEM;
	gen_begin(th);
	kt_sync_now(th);
	kt_lock();
	ret = thread_snap(th, th, kt_clock(), &ts);
	kt_unlock();
	gen_end(th);
	if (!ret) {
		ret = ktau__rows(&ts, names, nnames, g.test_reg, rows, nrows);
		ktau__data_free(&ts.d);
	}
	ktau__names_free(names, nnames);
	return ret;
}
