// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * _ktau: the C part of the Python package ktau.
 *
 * Deterministic profile: a C profile hook (PyEval_SetProfile) starts and
 * stops a libktau user timer per Python function (the timer handle cached
 * on the code object, co_extra), so that libktau's runtime charges the
 * kernel routines that end in the thread, read from its KTAU shared page
 * with plain loads, to the Python function on top of the stack; libktau
 * writes the TAU profile directory (lib/user.c, lib/userwrite.c).
 *
 * Sampler: KTAU's signal mode (watermark 1, SIGPROF), one kernel sample
 * buffer per sampled thread; the handler walks the thread's interpreter
 * frames (pyframe*.c: the only version-specific code) into a preallocated
 * per-thread ring, async-signal-safely; a drain under the GIL turns code
 * object pointers into (pinned) code objects, and the kernel's records
 * (time, KTAU routine in progress) are paired with the handler's stacks
 * by time in Python (ktau/sample.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/ktau.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "libktau.h"
#include "pyframe.h"

/* ==== Deterministic profile ============================================ */

static Py_ssize_t code_extra = -1;	/* co_extra slot: struct ktau_timer * */
static PyObject *names_seen;		/* name -> (filename, firstlineno) */

/* The timer of a code object: "qualname", or "qualname (file:line)" when
 * another function of that qualified name was seen first. */
static struct ktau_timer *timer_for_code(PyCodeObject *co)
{
	struct ktau_timer *t = NULL;
	PyObject *key, *name, *prev;
	const char *s;

	key = Py_BuildValue("(Oi)", co->co_filename, co->co_firstlineno);
	if (!key)
		goto err;
	name = co->co_qualname;
	Py_INCREF(name);
	for (int pass = 0; pass < 2; pass++) {
		prev = PyDict_GetItemWithError(names_seen, name);
		if (!prev && PyErr_Occurred())
			break;
		if (!prev) {
			if (PyDict_SetItem(names_seen, name, key) < 0)
				break;
			prev = key;
		}
		if (PyObject_RichCompareBool(prev, key, Py_EQ) == 1) {
			s = PyUnicode_AsUTF8(name);
			if (s)
				t = ktau_timer_get(s);
			break;
		}
		if (pass == 0) {
			PyObject *slash = PyUnicode_FromString("/");
			PyObject *base = slash ? PyUnicode_RSplit(co->co_filename, slash, 1) : NULL;
			PyObject *file = NULL, *nn;

			Py_XDECREF(slash);

			if (base && PyList_GET_SIZE(base))
				file = PyList_GET_ITEM(base, PyList_GET_SIZE(base) - 1);
			nn = PyUnicode_FromFormat("%U (%U:%d)", co->co_qualname,
						  file ? file : co->co_filename,
						  co->co_firstlineno);
			Py_XDECREF(base);
			if (!nn)
				break;
			Py_SETREF(name, nn);
		}
	}
	Py_DECREF(name);
	Py_DECREF(key);
	if (t && _PyCode_SetExtra((PyObject *)co, code_extra, t) < 0)
		PyErr_Clear();
err:
	if (PyErr_Occurred())
		PyErr_Clear();
	return t;
}

static inline struct ktau_timer *code_timer(PyCodeObject *co)
{
	void *t = NULL;

	if (_PyCode_GetExtra((PyObject *)co, code_extra, &t) < 0) {
		PyErr_Clear();
		return NULL;
	}
	return t ? t : timer_for_code(co);
}

static unsigned long long hook_errors;

static int prof_hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	struct ktau_timer *t;
	PyCodeObject *co;

	(void)obj;
	(void)arg;
	if (what != PyTrace_CALL && what != PyTrace_RETURN)
		return 0;
	co = PyFrame_GetCode(frame);
	t = code_timer(co);
	Py_DECREF(co);
	if (!t)
		hook_errors++;
	else if (what == PyTrace_CALL)
		ktau_timer_start(t);
	else
		ktau_timer_stop(t);	/* -ENOENT for a frame entered before the hook */
	return 0;
}

/* Install the hook in the calling thread (and start the region's root timer). */
static PyObject *py_enable(PyObject *self, PyObject *args)
{
	const char *root = NULL;

	(void)self;
	if (!PyArg_ParseTuple(args, "|z", &root))
		return NULL;
	if (root && ktau_timer_start_name(root) < 0) {
		PyErr_Format(PyExc_RuntimeError, "ktau: cannot start the timer '%s'", root);
		return NULL;
	}
	PyEval_SetProfile(prof_hook, NULL);
	Py_RETURN_NONE;
}

/* Remove the hook of the calling thread; with a root name, stop it (and
 * every Python function timer still running above it). */
static PyObject *py_disable(PyObject *self, PyObject *args)
{
	const char *root = NULL;

	(void)self;
	if (!PyArg_ParseTuple(args, "|z", &root))
		return NULL;
	PyEval_SetProfile(NULL, NULL);
	if (root)
		ktau_timer_stop_name(root);
	Py_RETURN_NONE;
}

/*
 * For threading.setprofile(): called by sys.setprofile's trampoline with
 * the first event of a new thread; replaces itself with the C hook.
 */
static PyObject *py_thread_hook(PyObject *self, PyObject *args)
{
	PyObject *frame, *event, *arg;

	(void)self;
	if (!PyArg_ParseTuple(args, "OUO", &frame, &event, &arg))
		return NULL;
	PyEval_SetProfile(prof_hook, NULL);
	if (PyFrame_Check(frame) && PyUnicode_CompareWithASCIIString(event, "call") == 0)
		prof_hook(NULL, (PyFrameObject *)frame, PyTrace_CALL, NULL);
	Py_RETURN_NONE;
}

/* reserve(names): names no Python function's timer may take (the kernel
 * routines and groups the profile holds): such a function gets
 * "qualname (file:line)". */
static PyObject *py_reserve(PyObject *self, PyObject *args)
{
	PyObject *names, *it, *n;

	(void)self;
	if (!PyArg_ParseTuple(args, "O", &names))
		return NULL;
	it = PyObject_GetIter(names);
	if (!it)
		return NULL;
	while ((n = PyIter_Next(it))) {
		if (!PyDict_Contains(names_seen, n) && PyDict_SetItem(names_seen, n, Py_None) < 0) {
			Py_DECREF(n);
			break;
		}
		Py_DECREF(n);
	}
	Py_DECREF(it);
	if (PyErr_Occurred())
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *py_init(PyObject *self, PyObject *noargs)
{
	int ret;

	(void)self;
	(void)noargs;
	ret = ktau_user_init();
	if (ret < 0) {
		errno = -ret;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	return PyLong_FromLong(ret);
}

static PyObject *py_shared(PyObject *self, PyObject *args)
{
	int on, ret;

	(void)self;
	if (!PyArg_ParseTuple(args, "p", &on))
		return NULL;
	ret = ktau_user_shared(on);
	return PyLong_FromLong(ret);
}

static PyObject *py_output(PyObject *self, PyObject *args)
{
	const char *dir;

	(void)self;
	if (!PyArg_ParseTuple(args, "z", &dir))
		return NULL;
	if (ktau_user_output(dir))
		return PyErr_NoMemory();
	Py_RETURN_NONE;
}

/* expand_path(template): %p, %r, %h and %% expanded as libktau does. */
static PyObject *py_expand_path(PyObject *self, PyObject *args)
{
	const char *tmpl;
	PyObject *r;
	char *p;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &tmpl))
		return NULL;
	p = ktau_output_path(tmpl);
	if (!p)
		return PyErr_NoMemory();
	r = PyUnicode_DecodeFSDefault(p);
	free(p);
	return r;
}

static PyObject *output_error(int ret, const char *dir)
{
	const char *why = ktau_output_error();

	if (why && *why)
		PyErr_Format(PyExc_OSError, "%s", why);
	else
		PyErr_Format(PyExc_OSError, "cannot write the profile to %s: %s", dir ? dir : "?",
			     strerror(-ret));
	return NULL;
}

static PyObject *py_write(PyObject *self, PyObject *args)
{
	const char *dir;
	int ret;

	(void)self;
	if (!PyArg_ParseTuple(args, "z", &dir))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = ktau_user_write(dir);
	Py_END_ALLOW_THREADS
	if (ret < 0)
		return output_error(ret, dir);
	return PyLong_FromLong(ret);
}

static PyObject *py_stats(PyObject *self, PyObject *noargs)
{
	struct ktau_user_stats st;

	(void)self;
	(void)noargs;
	if (ktau_user_stats(&st))
		Py_RETURN_NONE;
	return Py_BuildValue("{s:i,s:i,s:K,s:K,s:K,s:K,s:K,s:K}", "registered", st.registered,
			     "depth", st.depth, "events", (unsigned long long)st.events,
			     "page_reads", (unsigned long long)st.page_reads, "dropped",
			     (unsigned long long)st.dropped, "unmatched",
			     (unsigned long long)st.unmatched, "kernel_ns",
			     (unsigned long long)st.kernel_ns, "hook_errors", hook_errors);
}

/* (major, minor) of the KTAU ABI, or an OSError with why not. */
static PyObject *py_abi(PyObject *self, PyObject *noargs)
{
	unsigned int major, minor;
	int ret;

	(void)self;
	(void)noargs;
	ret = ktau_abi_version(&major, &minor);
	if (ret) {
		errno = -ret;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	return Py_BuildValue("(II)", major, minor);
}

/* {id: (name, group class)} of the kernel's registry (empty without KTAU). */
static PyObject *py_registry(PyObject *self, PyObject *noargs)
{
	struct ktau_registry *reg = NULL;
	PyObject *d = PyDict_New(), *k;
	size_t n;

	(void)self;
	(void)noargs;
	if (!d)
		return NULL;
	if (ktau_registry_load(&reg))
		return d;
	n = ktau_registry_size(reg);
	for (uint32_t id = 0; id < n + 64 && id < 65536; id++) {
		int g = ktau_func_group(reg, id);
		const char *name = ktau_func_name(reg, id);
		PyObject *v;

		if (g < 0 || !name || !strncmp(name, "ktau_id_", 8))
			continue;
		v = Py_BuildValue("(ss)", name, ktau_group_class(g));
		k = v ? PyLong_FromUnsignedLong(id) : NULL;
		if (!k || PyDict_SetItem(d, k, v) < 0) {
			Py_XDECREF(k);
			Py_XDECREF(v);
			ktau_registry_free(reg);
			Py_DECREF(d);
			return NULL;
		}
		Py_DECREF(k);
		Py_DECREF(v);
	}
	ktau_registry_free(reg);
	return d;
}

/*
 * write_rows(dir, kind, node, files): write TAU profile files through
 * ktau_outdir_open (never over others' files); files is a list of
 * (filename, metric, rows, meta), rows (name, group, calls, subrs, excl,
 * incl), meta a list of (name, value).
 */
static PyObject *py_write_rows(PyObject *self, PyObject *args)
{
	const char *dir, *kind;
	PyObject *files;
	struct ktau_outdir *od = NULL;
	int node, ret;
	Py_ssize_t nf;

	(void)self;
	if (!PyArg_ParseTuple(args, "ssiO!", &dir, &kind, &node, &PyList_Type, &files))
		return NULL;
	ret = ktau_outdir_open(dir, kind, node, 0, &od);
	if (ret)
		return output_error(ret, dir);
	nf = PyList_GET_SIZE(files);
	for (Py_ssize_t i = 0; i < nf; i++) {
		PyObject *ent = PyList_GET_ITEM(files, i), *rows, *meta;
		const char *fname, *metric;
		struct ktau_tau_row *rv = NULL;
		const char **mv = NULL;
		Py_ssize_t nr, nm;
		FILE *f;

		if (!PyArg_ParseTuple(ent, "ssO!O!", &fname, &metric, &PyList_Type, &rows,
				      &PyList_Type, &meta))
			goto fail;
		nr = PyList_GET_SIZE(rows);
		nm = PyList_GET_SIZE(meta);
		rv = calloc(nr + 1, sizeof(*rv));
		mv = calloc(2 * nm + 1, sizeof(*mv));
		if (!rv || !mv) {
			free(rv);
			free(mv);
			PyErr_NoMemory();
			goto fail;
		}
		for (Py_ssize_t r = 0; r < nr; r++) {
			unsigned long long calls, subrs;

			if (!PyArg_ParseTuple(PyList_GET_ITEM(rows, r), "ssKKdd", &rv[r].name,
					      &rv[r].group, &calls, &subrs, &rv[r].excl,
					      &rv[r].incl)) {
				free(rv);
				free(mv);
				goto fail;
			}
			rv[r].calls = calls;
			rv[r].subrs = subrs;
		}
		for (Py_ssize_t m = 0; m < nm; m++) {
			if (!PyArg_ParseTuple(PyList_GET_ITEM(meta, m), "ss", &mv[2 * m],
					      &mv[2 * m + 1])) {
				free(rv);
				free(mv);
				goto fail;
			}
		}
		f = ktau_outdir_create(od, fname);
		if (!f) {
			free(rv);
			free(mv);
			output_error(-errno, dir);
			goto fail;
		}
		ret = ktau_write_tau_rows(f, metric, rv, nr, mv, nm);
		if (fclose(f) && !ret)
			ret = -errno;
		free(rv);
		free(mv);
		if (ret) {
			/* OSError(errno, text): a full disk is caught as one. */
			PyObject *e = PyUnicode_FromFormat("cannot write %s/%s: %s", dir, fname,
							   strerror(-ret));

			if (e) {
				PyObject *a = Py_BuildValue("(iO)", -ret, e);

				if (a)
					PyErr_SetObject(PyExc_OSError, a);
				Py_XDECREF(a);
				Py_DECREF(e);
			}
			goto fail;
		}
	}
	ret = ktau_outdir_close(od);
	if (ret)
		return output_error(ret, dir);
	Py_RETURN_NONE;
fail:
	ktau__outdir_failed(od);	/* no part of it left looking whole */
	ktau_outdir_close(od);
	return NULL;
}

/* ==== Sampler ========================================================== */

#define SP_RING_WORDS	(1u << 16)	/* 512 KiB a thread, freed when it ended */
#define SP_RING_MARKERS	256		/* words kept for 128 markers of dropped stacks */
#define SP_DEPTH_DEFAULT 128
#define SP_DEPTH_MAX	512
#define SP_KBUF		4096

struct sp_thread {
	const void *volatile ts;	/* PyThreadState; NULL: not walked any more */
	pid_t tid;
	int sampling;			/* the kernel samples it */
	int ended;			/* its Python thread ended */
	int detached;			/* its handler cannot reach it any more */
	int gone;			/* detached and reported whole: to free */
	/* ring of words written by the handler (head), read by the drain (tail) */
	uint64_t *ring;
	_Atomic uint64_t head, tail;
	_Atomic uint64_t handled, truncated, bad, dropped;
	/* kernel records drained (under lock) */
	pthread_mutex_t lock;
	struct ktau_sample_rec *krec;
	size_t nk, capk;
	struct ktau_sample_stats kst;
	struct sp_thread *next;
};

static struct {
	pthread_mutex_t lock;
	struct ktau *k;
	struct ktau_sample_spec spec;
	struct sp_thread *threads;
	int depth;
	int handler_set;
	int start_err;			/* last error of a thread's start */
	pid_t pid;
	PyObject *pinned;		/* address -> code object (kept alive) */
	/*
	 * Buffered mode (KTAU ABI 1.6): the kernel copies the frame chain
	 * into each sample (a user stack descriptor), no signal; its own
	 * descriptor of /proc/ktau/profiles and read buffers.
	 */
	int buffered, kfd;
	struct ktau_sample *kraw;
	uint64_t *kwords;
} sp = { .lock = PTHREAD_MUTEX_INITIALIZER, .depth = SP_DEPTH_DEFAULT, .kfd = -1 };

/* Buffered mode: kernel buffer and read sizes (capacity * depth * 2 words
 * stays within KTAU_STACK_MAX_WORDS at the deepest chain). */
#define SP_BUF_CAPACITY	2048
#define SP_BUF_READ	256

static __thread struct sp_thread *sp_self __attribute__((tls_model("initial-exec")));

/*
 * The walk reads the interpreter's memory with plain loads, from a signal
 * handler that may interrupt the interpreter anywhere: 3.11 sets
 * tstate->cframe a few instructions before the new cframe's current_frame
 * (stack memory until then), and stack-switching extensions (greenlet)
 * move frames away. A load that faults jumps back here (SIGSEGV, SIGBUS)
 * and the walk counts as bad, with no frames; a fault anywhere else goes
 * to the handler there was before (or kills as it would have).
 */
static __thread sigjmp_buf *volatile sp_walk_env __attribute__((tls_model("initial-exec")));
static struct sigaction sp_old_segv, sp_old_bus;
static int sp_fault_set;

static void sp_fault(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *env = sp_walk_env;
	sigset_t s;

	(void)uc;
	if (env) {
		sp_walk_env = NULL;
		/* Jumped out of, not returned from: unblocked by hand. */
		sigemptyset(&s);
		sigaddset(&s, sig);
		pthread_sigmask(SIG_UNBLOCK, &s, NULL);
		siglongjmp(*env, 1);
	}
	/* Not the walk's: as before; the faulting load runs again there. */
	sigaction(sig, sig == SIGSEGV ? &sp_old_segv : &sp_old_bus, NULL);
	if (si->si_code <= 0)
		raise(sig);	/* sent, not a fault: sent again */
}

static void sp_fault_install(void)
{
	struct sigaction sa = { .sa_sigaction = sp_fault,
				.sa_flags = SA_SIGINFO | SA_ONSTACK };

	if (sp_fault_set)
		return;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &sp_old_segv))
		return;
	if (sigaction(SIGBUS, &sa, &sp_old_bus)) {
		sigaction(SIGSEGV, &sp_old_segv, NULL);
		return;
	}
	sp_fault_set = 1;
}

/* ktau_py_walk() under the fault guard. Async-signal-safe. */
static int sp_walk(const void *ts, uint64_t *out, int max, unsigned int *flags)
{
	sigjmp_buf env;
	unsigned int f = 0;
	int n;

	if (!sp_fault_set)
		return ktau_py_walk(ts, out, max, flags);
	if (sigsetjmp(env, 0)) {
		*flags = KTAU_PYWALK_BAD | KTAU_PYWALK_FAULT;
		return 0;
	}
	sp_walk_env = &env;
	n = ktau_py_walk(ts, out, max, &f);
	sp_walk_env = NULL;
	*flags = f;
	return n;
}

/*
 * Count a walk of t with flags (KTAU_PYWALK_*) and reserve words in its
 * ring: the head to write at, or UINT64_MAX when full (counted dropped).
 * Async-signal-safe.
 */
static uint64_t sp_reserve(struct sp_thread *t, unsigned int flags, uint64_t words)
{
	uint64_t head, tail;

	atomic_fetch_add_explicit(&t->handled, 1, memory_order_relaxed);
	if (flags & KTAU_PYWALK_TRUNCATED)
		atomic_fetch_add_explicit(&t->truncated, 1, memory_order_relaxed);
	if (flags & KTAU_PYWALK_BAD)
		atomic_fetch_add_explicit(&t->bad, 1, memory_order_relaxed);
	head = atomic_load_explicit(&t->head, memory_order_relaxed);
	tail = atomic_load_explicit(&t->tail, memory_order_acquire);
	/* Stacks leave SP_RING_MARKERS words for the markers of dropped ones. */
	if (SP_RING_WORDS - (head - tail) < words + (words > 2 ? SP_RING_MARKERS : 0)) {
		atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
		return UINT64_MAX;
	}
	return head;
}

/*
 * A stack that did not fit: a marker (time, no frames) in its place when
 * there is room for one, so that the kernel's record of that sample pairs
 * with it (charged to "[dropped]"), not with a later stack. Async-signal-
 * safe. 0, or -1 when not even the marker fitted (the record then stays
 * unpaired or pairs later: counted in "dropped" all the same).
 */
static int sp_mark_dropped(struct sp_thread *t, uint64_t time_ns)
{
	uint64_t head = atomic_load_explicit(&t->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&t->tail, memory_order_acquire);

	if (SP_RING_WORDS - (head - tail) < 2)
		return -1;
	t->ring[head++ % SP_RING_WORDS] = KTAU_PYWALK_DROPPED;
	t->ring[head++ % SP_RING_WORDS] = time_ns;
	atomic_store_explicit(&t->head, head, memory_order_release);
	return 0;
}

static void sp_handler(int sig, siginfo_t *si, void *uc)
{
	struct sp_thread *t = sp_self;
	uint64_t frames[2 * SP_DEPTH_MAX], head;
	struct timespec now;
	unsigned int flags = 0;
	int saved = errno, n = 0;

	(void)sig;
	(void)si;
	(void)uc;
	if (!t || getpid() != sp.pid)
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (t->ts)
		n = sp_walk(t->ts, frames, sp.depth, &flags);
	head = sp_reserve(t, flags, 2 + 2 * (uint64_t)n);
	if (head == UINT64_MAX) {
		sp_mark_dropped(t, (uint64_t)now.tv_sec * 1000000000ull + now.tv_nsec);
		goto out;
	}
	t->ring[head++ % SP_RING_WORDS] = ((uint64_t)n << 32) | flags;
	t->ring[head++ % SP_RING_WORDS] = (uint64_t)now.tv_sec * 1000000000ull + now.tv_nsec;
	for (int i = 0; i < 2 * n; i++)
		t->ring[head++ % SP_RING_WORDS] = frames[i];
	atomic_store_explicit(&t->head, head, memory_order_release);
out:
	errno = saved;
}

/* Keep the kernel records of t (lock held). */
static void sp_keep(struct sp_thread *t, const struct ktau_sample_rec *v, int n)
{
	if (n <= 0)
		return;
	if (t->nk + n > t->capk) {
		size_t cap = t->capk ? t->capk : 1024;
		struct ktau_sample_rec *nv;

		while (cap < t->nk + n)
			cap *= 2;
		nv = realloc(t->krec, cap * sizeof(*nv));
		if (!nv)
			return;
		t->krec = nv;
		t->capk = cap;
	}
	memcpy(t->krec + t->nk, v, n * sizeof(*v));
	t->nk += n;
}

/*
 * Buffered mode: read up to SP_BUF_READ samples of t with their frames
 * (stop: and end the sampling); each becomes a kernel record and a stack
 * in t's ring, as the handler of the signal mode writes them. The number
 * read, or -errno. t->lock held.
 */
static int sp_kread_stacks(struct sp_thread *t, pid_t tid, int stop)
{
	struct ktau_sample_stack_read r;
	struct ktau_sample_rec rec;
	uint64_t head, w = 0;
	unsigned int i, f, n;

	memset(&r, 0, sizeof(r));
	r.r.size = sizeof(r.r);
	r.r.tid = tid;
	r.r.buf = (uintptr_t)sp.kraw;
	r.r.max = SP_BUF_READ;
	r.words = (uintptr_t)sp.kwords;
	r.max_words = SP_BUF_READ * (uint32_t)sp.depth * 2;
	if (ioctl(sp.kfd, stop ? KTAU_IOC_SAMPLE_STOP_STACK : KTAU_IOC_SAMPLE_READ_STACK, &r))
		return -errno;
	t->kst.taken = r.r.taken;
	t->kst.lost = r.r.lost;
	t->kst.buffered = r.r.buffered;
	for (i = 0; i < r.r.nread; i++) {
		const struct ktau_sample *s = &sp.kraw[i];
		unsigned int flags = 0;

		memset(&rec, 0, sizeof(rec));
		rec.ip = s->ip;
		rec.time_ns = s->time_ns;
		rec.id = s->id;
		rec.user = !!(s->flags & KTAU_SAMPLE_USER);
		rec.tid = t->tid;
		sp_keep(t, &rec, 1);
		n = KTAU_SAMPLE_NFRAMES(s->flags);
		if (s->flags & KTAU_SAMPLE_STACK_CUT)
			flags |= KTAU_PYWALK_TRUNCATED;
		if (s->flags & KTAU_SAMPLE_STACK_FAULT)
			flags |= KTAU_PYWALK_BAD;
		head = sp_reserve(t, flags, 2 + 2 * (uint64_t)n);
		if (head == UINT64_MAX) {
			sp_mark_dropped(t, s->time_ns);
			w += 2 * n;
			continue;
		}
		t->ring[head++ % SP_RING_WORDS] = ((uint64_t)n << 32) | flags;
		t->ring[head++ % SP_RING_WORDS] = s->time_ns;
		for (f = 0; f < n; f++, w += 2) {
			t->ring[head++ % SP_RING_WORDS] = sp.kwords[w];
			t->ring[head++ % SP_RING_WORDS] = ktau_py_code_offset(sp.kwords[w],
									      sp.kwords[w + 1]);
		}
		atomic_store_explicit(&t->head, head, memory_order_release);
	}
	return (int)r.r.nread;
}

/* Drain the kernel buffer of t (stop: and end its sampling). */
static void sp_kdrain(struct sp_thread *t, int stop)
{
	static struct ktau_sample_rec buf[SP_KBUF];
	static pthread_mutex_t buflock = PTHREAD_MUTEX_INITIALIZER;
	int n;

	pthread_mutex_lock(&buflock);
	pthread_mutex_lock(&t->lock);
	if (t->sampling && sp.buffered) {
		pid_t tid = t->tid == (pid_t)syscall(SYS_gettid) ? 0 : t->tid;

		do
			n = sp_kread_stacks(t, tid, 0);
		while (n == SP_BUF_READ);
		if (stop)
			n = sp_kread_stacks(t, tid, 1);
		if (stop || n == -ENOENT || n == -ESRCH)
			t->sampling = 0;
	} else if (t->sampling && sp.k) {
		pid_t tid = t->tid == (pid_t)syscall(SYS_gettid) ? 0 : t->tid;

		do {
			n = stop ? ktau_sample_stop(sp.k, tid, buf, SP_KBUF, &t->kst) :
				   ktau_sample_read(sp.k, tid, buf, SP_KBUF, &t->kst);
			sp_keep(t, buf, n);
		} while (!stop && n == SP_KBUF);
		if (stop || n == -ENOENT || n == -ESRCH)
			t->sampling = 0;
	}
	pthread_mutex_unlock(&t->lock);
	pthread_mutex_unlock(&buflock);
}

/* A guard in the thread state's dict: freed when the Python thread ends,
 * before its thread state is: the handler stops walking it then. */
typedef struct {
	PyObject_HEAD
	struct sp_thread *t;
} GuardObject;

static void guard_dealloc(GuardObject *g)
{
	struct sp_thread *t = g->t;

	if (t) {
		t->ts = NULL;
		t->ended = 1;
		if (t == sp_self && getpid() == sp.pid)
			sp_kdrain(t, 1);
		if (t == sp_self) {
			/* The thread's last handler run has returned by now: signals
			 * of this thread run on it, and it is here. */
			sp_self = NULL;
			t->detached = 1;
		}
	}
	Py_TYPE(g)->tp_free((PyObject *)g);
}

static PyTypeObject GuardType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "_ktau._SamplerGuard",
	.tp_basicsize = sizeof(GuardObject),
	.tp_dealloc = (destructor)guard_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
};

static PyObject *sp_error(int ret, int start)
{
	PyErr_Format(PyExc_OSError, "%s", ktau_sample_strerror(ret, start));
	return NULL;
}

static int sp_test;	/* tests: the handler without KTAU (SIGPROF from setitimer) */

/* sample_setup(spec_text, depth[, test[, buffered]]): the spec and the
 * signal handler; test: without KTAU, for signals the caller sends (host
 * tests); buffered: the kernel copies the stacks, no signal (ABI 1.6). */
static PyObject *py_sample_setup(PyObject *self, PyObject *args)
{
	struct sigaction sa = { .sa_sigaction = sp_handler, .sa_flags = SA_RESTART | SA_SIGINFO };
	const char *text, *why = NULL;
	int depth, ret, buffered = 0;

	(void)self;
	if (!PyArg_ParseTuple(args, "si|pp", &text, &depth, &sp_test, &buffered))
		return NULL;
	if (depth < 1 || depth > (buffered ? KTAU_STACK_MAX_DEPTH : SP_DEPTH_MAX)) {
		PyErr_Format(PyExc_ValueError, "depth must be 1..%d%s",
			     buffered ? KTAU_STACK_MAX_DEPTH : SP_DEPTH_MAX,
			     buffered ? " in buffered mode" : "");
		return NULL;
	}
	memset(&sp.spec, 0, sizeof(sp.spec));
	if (ktau_sample_parse(text, &sp.spec, &why)) {
		PyErr_Format(PyExc_ValueError, "bad sample spec '%s': %s", text, why);
		return NULL;
	}
	sp.spec.capacity = SP_KBUF;
	sp.spec.watermark = 1;
	sp.spec.signo = SIGPROF;
	sp.depth = depth;
	sp.pid = getpid();
	if (!sp.k && !sp_test) {
		ret = ktau_open(&sp.k);
		if (ret) {
			PyErr_Format(PyExc_OSError, "no KTAU: %s", ktau_strerror(ret));
			return NULL;
		}
	}
	if (!sp.pinned && !(sp.pinned = PyDict_New()))
		return NULL;
	if (buffered && !sp_test) {
		unsigned int major = 0, minor = 0;

		if (ktau_abi_version(&major, &minor) || major != 1 || minor < 6) {
			PyErr_Format(PyExc_OSError, "buffered stacks need KTAU ABI 1.6 (user stack "
				     "descriptors); this kernel has %u.%u: sample without --buffered",
				     major, minor);
			return NULL;
		}
		if (sp.kfd < 0)
			sp.kfd = open("/proc/ktau/profiles", O_RDONLY | O_CLOEXEC);
		free(sp.kraw);
		free(sp.kwords);
		sp.kraw = calloc(SP_BUF_READ, sizeof(*sp.kraw));
		sp.kwords = calloc((size_t)SP_BUF_READ * depth * 2, sizeof(*sp.kwords));
		if (sp.kfd < 0 || !sp.kraw || !sp.kwords)
			return PyErr_SetFromErrno(PyExc_OSError);
		sp.buffered = 1;
	}
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL))
		return PyErr_SetFromErrno(PyExc_OSError);
	if (!sp.buffered)
		sp_fault_install();
	sp.handler_set = 1;
	return PyUnicode_FromString(ktau_sample_event_name(sp.spec.event));
}

/* Start the kernel's sampling of the calling thread t; 0 or -errno. */
static int sp_start(struct sp_thread *t)
{
	struct ktau_sample_stack_attr a;
	struct ktau_py_stack_layout l;

	if (!sp.buffered)
		return ktau_sample_start(sp.k, 0, &sp.spec);
	ktau_py_stack_layout(t->ts, &l);
	memset(&a, 0, sizeof(a));
	a.attr.size = sizeof(a.attr);
	a.attr.flags = sp.spec.flags;
	a.attr.event = sp.spec.event;
	a.attr.period = sp.spec.period;
	a.attr.capacity = SP_BUF_CAPACITY;
	a.stack.base = l.base;
	a.stack.nderef = l.nderef;
	memcpy(a.stack.deref_off, l.deref_off, sizeof(l.deref_off));
	a.stack.next_off = l.next_off;
	a.stack.nfields = l.nfields;
	memcpy(a.stack.field_off, l.field_off, sizeof(l.field_off));
	a.stack.max_depth = (uint32_t)sp.depth;
	return ioctl(sp.kfd, KTAU_IOC_SAMPLE_START_STACK, &a) ? -errno : 0;
}

/* Start sampling the calling thread. */
static PyObject *py_sample_start(PyObject *self, PyObject *noargs)
{
	PyObject *dict, *guard;
	struct sp_thread *t;
	int ret;

	(void)self;
	(void)noargs;
	if (!sp.handler_set) {
		PyErr_SetString(PyExc_RuntimeError, "sample_setup() first");
		return NULL;
	}
	if ((sp_self && sp_self->sampling) || getpid() != sp.pid)
		Py_RETURN_NONE;	/* sampled already, or a forked child: not sampled */
	t = calloc(1, sizeof(*t));
	if (!t || !(t->ring = malloc(SP_RING_WORDS * sizeof(uint64_t)))) {
		free(t);
		return PyErr_NoMemory();
	}
	pthread_mutex_init(&t->lock, NULL);
	t->tid = (pid_t)syscall(SYS_gettid);
	t->ts = PyThreadState_Get();
	dict = PyThreadState_GetDict();
	guard = PyObject_New(PyObject, &GuardType);
	if (!dict || !guard) {
		Py_XDECREF(guard);
		free(t->ring);
		free(t);
		return NULL;
	}
	((GuardObject *)guard)->t = t;
	PyDict_SetItemString(dict, "_ktau_sampler_guard", guard);
	Py_DECREF(guard);
	sp_self = t;
	pthread_mutex_lock(&sp.lock);
	t->next = sp.threads;
	sp.threads = t;
	pthread_mutex_unlock(&sp.lock);
	if (sp_test)
		Py_RETURN_NONE;
	ret = sp_start(t);
	if (ret == -EACCES && !(sp.spec.flags & KTAU_LIB_SAMPLE_NO_USER)) {
		sp.spec.flags |= KTAU_LIB_SAMPLE_NO_KERNEL;
		ret = sp_start(t);
	}
	if (ret) {
		sp.start_err = ret;
		return sp_error(ret, 1);
	}
	t->sampling = 1;
	Py_RETURN_NONE;
}

/* For threading.setprofile(): start sampling in a new thread, then remove
 * the profile function (no per-call cost). */
static PyObject *py_sample_thread_hook(PyObject *self, PyObject *args)
{
	PyObject *r;

	(void)args;
	PyEval_SetProfile(NULL, NULL);
	r = py_sample_start(self, NULL);
	if (!r)
		PyErr_Clear();	/* counted in sp.start_err; the thread runs unsampled */
	Py_XDECREF(r);
	Py_RETURN_NONE;
}

/*
 * Copy len bytes at addr without faulting on memory that is not mapped:
 * process_vm_readv() on ourselves, or (a kernel without it,
 * CONFIG_CROSS_MEMORY_ATTACH=n) through a pipe, whose write() says EFAULT.
 * 0, or -1 when the memory cannot be read.
 */
static int safe_read(void *dst, const void *addr, size_t len)
{
	static int pipefd[2] = { -1, -1 };
	struct iovec local = { dst, len }, remote = { (void *)addr, len };
	ssize_t n;

	n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	if (n >= 0 || (errno != ENOSYS && errno != EPERM))
		return -1;
	if (pipefd[0] < 0 && pipe2(pipefd, O_CLOEXEC | O_NONBLOCK))
		return -1;
	if (write(pipefd[1], addr, len) != (ssize_t)len)
		return -1;
	return read(pipefd[0], dst, len) == (ssize_t)len ? 0 : -1;
}

/* The code object at address a, kept alive from its first resolution; None
 * when a no longer holds a code object. */
static PyObject *sp_code(uint64_t a)
{
	PyObject *key = PyLong_FromUnsignedLongLong(a), *co;
	PyObject hdr;

	if (!key)
		return NULL;
	co = PyDict_GetItemWithError(sp.pinned, key);
	if (co || PyErr_Occurred()) {
		Py_DECREF(key);
		Py_XINCREF(co);
		return co;
	}
	/*
	 * Read its header without trusting the address: the code object may
	 * have been freed since the sample (its memory unmapped, or on an
	 * allocator's free list, whose link overwrites the reference count
	 * with an address or NULL). A live code object has the type and a
	 * small positive count. (Freed and reused by another code object, it
	 * would be named after that one: the window is the drain interval.)
	 */
	if (safe_read(&hdr, (const void *)(uintptr_t)a, sizeof(hdr)) ||
	    hdr.ob_type != &PyCode_Type || hdr.ob_refcnt <= 0 || hdr.ob_refcnt > (1L << 30)) {
		Py_DECREF(key);
		Py_RETURN_NONE;
	}
	co = (PyObject *)(uintptr_t)a;
	if (PyDict_SetItem(sp.pinned, key, co) < 0)
		co = NULL;
	Py_DECREF(key);
	Py_XINCREF(co);
	return co;
}

/* Free the threads that ended and were reported whole (the drain's, under the GIL). */
static void sp_free_gone(void)
{
	struct sp_thread **pp, *t;

	pthread_mutex_lock(&sp.lock);
	for (pp = &sp.threads; (t = *pp);) {
		if (!t->gone) {
			pp = &t->next;
			continue;
		}
		*pp = t->next;
		pthread_mutex_destroy(&t->lock);
		free(t->krec);
		free(t);
	}
	pthread_mutex_unlock(&sp.lock);
}

/*
 * Move what the handlers wrote into Python objects: a dict tid ->
 * {"stacks": [(time_ns, flags, ((code, offset), ...)), ...],
 *  "krec": [(time_ns, id, user, ip), ...], "stats": {...}}.
 * final: stop every thread's sampling first.
 */
static PyObject *py_sample_drain(PyObject *self, PyObject *args)
{
	PyObject *out = PyDict_New();
	struct sp_thread *t;
	int final = 0;

	(void)self;
	if (!out || !PyArg_ParseTuple(args, "|p", &final)) {
		Py_XDECREF(out);
		return NULL;
	}
	if (getpid() != sp.pid)
		return out;
	pthread_mutex_lock(&sp.lock);
	t = sp.threads;
	pthread_mutex_unlock(&sp.lock);
	for (; t; t = t->next) {
		PyObject *stacks = PyList_New(0), *krec = PyList_New(0), *ent, *key;
		uint64_t head, tail;

		if (final && t == sp_self)
			t->ts = NULL;
		sp_kdrain(t, final);
		head = atomic_load_explicit(&t->head, memory_order_acquire);
		tail = atomic_load_explicit(&t->tail, memory_order_relaxed);
		while (stacks && t->ring && tail < head) {
			uint64_t hdr = t->ring[tail % SP_RING_WORDS];
			uint64_t time = t->ring[(tail + 1) % SP_RING_WORDS];
			int n = (int)(hdr >> 32);
			PyObject *fr = PyTuple_New(n), *s;

			int k = 0;

			tail += 2;
			for (int i = 0; fr && i < n; i++) {
				PyObject *co = sp_code(t->ring[tail % SP_RING_WORDS]);
				unsigned long long off = t->ring[(tail + 1) % SP_RING_WORDS];

				tail += 2;
				if (!co) {
					Py_CLEAR(fr);
					break;
				}
				/* A frame being set up, as the signal walker skips them. */
				if (co != Py_None && ktau_py_frame_incomplete(co, off)) {
					Py_DECREF(co);
					continue;
				}
				PyTuple_SET_ITEM(fr, k, Py_BuildValue("(NK)", co, off));
				if (!PyTuple_GET_ITEM(fr, k++)) {
					Py_CLEAR(fr);
					break;
				}
			}
			if (fr && k < n && _PyTuple_Resize(&fr, k) < 0)
				fr = NULL;
			if (!fr)
				break;
			s = Py_BuildValue("(KIN)", (unsigned long long)time, (unsigned int)hdr, fr);
			if (!s || PyList_Append(stacks, s) < 0) {
				Py_XDECREF(s);
				break;
			}
			Py_DECREF(s);
			/* tail moves on only once the entry is out */
			atomic_store_explicit(&t->tail, tail, memory_order_release);
		}
		if (t->detached && t->ring && tail == head) {
			free(t->ring);
			t->ring = NULL;
		}
		pthread_mutex_lock(&t->lock);
		for (size_t i = 0; krec && i < t->nk; i++) {
			PyObject *r = Py_BuildValue("(KIiK)", (unsigned long long)t->krec[i].time_ns,
						    t->krec[i].id, (int)t->krec[i].user,
						    (unsigned long long)t->krec[i].ip);

			if (!r || PyList_Append(krec, r) < 0) {
				Py_XDECREF(r);
				break;
			}
			Py_DECREF(r);
		}
		t->nk = 0;
		pthread_mutex_unlock(&t->lock);
		if (PyErr_Occurred() || !stacks || !krec) {
			Py_XDECREF(stacks);
			Py_XDECREF(krec);
			Py_DECREF(out);
			return NULL;
		}
		ent = Py_BuildValue("{s:N,s:N,s:{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:i}}", "stacks",
				    stacks, "krec", krec, "stats", "handled",
				    (unsigned long long)atomic_load(&t->handled), "truncated",
				    (unsigned long long)atomic_load(&t->truncated), "bad",
				    (unsigned long long)atomic_load(&t->bad), "dropped",
				    (unsigned long long)atomic_load(&t->dropped), "taken",
				    (unsigned long long)t->kst.taken, "lost",
				    (unsigned long long)t->kst.lost, "signals",
				    (unsigned long long)t->kst.signals, "ended", t->ended);
		key = ent ? PyLong_FromLong(t->tid) : NULL;
		if (!key || PyDict_SetItem(out, key, ent) < 0) {
			Py_XDECREF(key);
			Py_XDECREF(ent);
			Py_DECREF(out);
			return NULL;
		}
		Py_DECREF(key);
		Py_DECREF(ent);
		/* Ended, and all of it reported now: freed (its last stats were). */
		if (t->detached && !t->ring && !t->sampling && !t->nk)
			t->gone = 1;
	}
	sp_free_gone();
	return out;
}

/*
 * Tests (sample_setup(..., test=True), the calling thread sampled): one
 * handler run whose walk faults at its first load (the thread state in a
 * page that cannot be read), as a walk of a frame chain caught mid-update
 * would. The process lives; the drain has a stack with BAD|FAULT.
 */
static PyObject *py_sample_test_fault(PyObject *self, PyObject *noargs)
{
	struct sp_thread *t = sp_self;
	const void *ts;
	void *page;

	(void)self;
	(void)noargs;
	if (!sp_test || !t) {
		PyErr_SetString(PyExc_RuntimeError, "sample_setup(..., test=True) and "
				"sample_start() first");
		return NULL;
	}
	page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return PyErr_SetFromErrno(PyExc_OSError);
	ts = t->ts;
	t->ts = page;
	raise(SIGPROF);
	t->ts = ts;
	munmap(page, 4096);
	Py_RETURN_NONE;
}

/* The sampler in a forked child: nothing is sampled there. */
static PyObject *py_sample_forget(PyObject *self, PyObject *noargs)
{
	(void)self;
	(void)noargs;
	sp_self = NULL;
	sp.pid = -1;
	Py_RETURN_NONE;
}

/* ktau_py_frame_incomplete() on a code object and an offset (-1: before
 * the first instruction), for the tests. */
static PyObject *py_frame_incomplete(PyObject *self, PyObject *args)
{
	long long off;
	PyObject *co;

	(void)self;
	if (!PyArg_ParseTuple(args, "O!L", &PyCode_Type, &co, &off))
		return NULL;
	return PyBool_FromLong(ktau_py_frame_incomplete(co, off < 0 ? KTAU_PY_OFF_BEFORE :
							(uint64_t)off));
}

static PyObject *py_walk_version(PyObject *self, PyObject *noargs)
{
	(void)self;
	(void)noargs;
	return PyUnicode_FromString(ktau_py_walk_version);
}

static PyMethodDef methods[] = {
	{ "enable", py_enable, METH_VARARGS, "enable([root]): profile the calling thread" },
	{ "disable", py_disable, METH_VARARGS, "disable([root]): stop profiling it" },
	{ "thread_hook", py_thread_hook, METH_VARARGS, "for threading.setprofile()" },
	{ "reserve", py_reserve, METH_VARARGS, "reserve(names): not for Python functions" },
	{ "init", py_init, METH_NOARGS, "start libktau's runtime in this thread: 1 page, 0 not" },
	{ "shared", py_shared, METH_VARARGS, "shared(on): (un)register the thread's page" },
	{ "output", py_output, METH_VARARGS, "output(dir): libktau's exit directory (None: none)" },
	{ "expand_path", py_expand_path, METH_VARARGS,
	  "expand_path(template): %p, %r, %h, %% expanded as libktau does" },
	{ "write", py_write, METH_VARARGS, "write(dir): write the TAU profile now; files" },
	{ "stats", py_stats, METH_NOARGS, "the runtime's counters of the calling thread" },
	{ "abi", py_abi, METH_NOARGS, "(major, minor) of the KTAU ABI, or OSError" },
	{ "registry", py_registry, METH_NOARGS, "{id: (name, class)} of KTAU routines" },
	{ "write_rows", py_write_rows, METH_VARARGS, "write_rows(dir, kind, node, files)" },
	{ "sample_setup", py_sample_setup, METH_VARARGS, "sample_setup(spec, depth): metric" },
	{ "sample_start", py_sample_start, METH_NOARGS, "sample the calling thread" },
	{ "sample_thread_hook", py_sample_thread_hook, METH_VARARGS, "for threading.setprofile()" },
	{ "sample_drain", py_sample_drain, METH_VARARGS, "sample_drain([final]): the samples" },
	{ "sample_test_fault", py_sample_test_fault, METH_NOARGS,
	  "tests: a handler run whose frame walk faults" },
	{ "sample_forget", py_sample_forget, METH_NOARGS, "after fork: sample nothing" },
	{ "walk_version", py_walk_version, METH_NOARGS, "the CPython version of the walker" },
	{ "frame_incomplete", py_frame_incomplete, METH_VARARGS,
	  "frame_incomplete(code, offset): is that frame being set up (for tests)" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef moddef = {
	PyModuleDef_HEAD_INIT, "_ktau", "KTAU profiling of Python programs (C part)", -1, methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ktau(void)
{
	PyObject *m;
	char v[16];

	snprintf(v, sizeof(v), "%d.%d", PY_MAJOR_VERSION, PY_MINOR_VERSION);
	if (strcmp(v, ktau_py_walk_version)) {
		PyErr_Format(PyExc_ImportError, "_ktau was built with the frame walker of CPython "
			     "%s, not %s", ktau_py_walk_version, v);
		return NULL;
	}
	if (PyType_Ready(&GuardType) < 0)
		return NULL;
	if (code_extra < 0) {
		code_extra = _PyEval_RequestCodeExtraIndex(NULL);
		if (code_extra < 0)
			return NULL;
	}
	names_seen = PyDict_New();
	if (!names_seen)
		return NULL;
	m = PyModule_Create(&moddef);
	if (m && PyModule_AddStringConstant(m, "version", ktau_version())) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
