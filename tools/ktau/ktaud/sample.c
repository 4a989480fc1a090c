// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud sample: KTAU's in-kernel buffered sampling (ABI 1.1) of the
 * threads of a command, or of running processes, into a TAU profile with
 * the sample counts as a metric of their own and folded stacks.
 *
 * The kernel samples one thread per start, and sampling ends at the
 * thread's exec and exit. For a command, ktaud therefore traces it
 * (ptrace, stops at clone, fork, exec and exit only): every thread and
 * process it creates is sampled from its first instruction, sampling is
 * started again after each exec, and each thread's buffer is drained at
 * its exit stop, when its memory map still names its code. Between those
 * stops the buffers are drained every interval. For running processes
 * (-p), threads are found by scanning /proc/PID/task every interval; what
 * a thread's buffer holds when it exits is lost there.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "ktaud.h"
#include "sample-internal.h"
#include "sample.h"

#define DEFAULT_SPEC	"cpu-clock:1ms"
#define MIN_CAPACITY	64
#define HW_CAPACITY	8192
#define SCAN_MORE_S	0.2
/* Threads sampled at once that the scans of -p and -a start, at most. */
#define MAX_LIVE	1024
/*
 * Threads a session keeps (ever seen), at most: about 100 bytes each; a
 * process's symbols are kept only while it has a live thread.
 */
#define MAX_SEEN	65536

struct sthread {
	pid_t tid, pid;
	int sampling;		/* started, not known to have ended */
	int init_stop;		/* a new tracee: its first stop is ours */
	int gone;
	int failed;		/* could not be sampled: not tried again */
	struct ktau_sample_stats st;	/* the counters of its last read */
	uint64_t taken0, lost0;	/* of samplings ended before (exec) */
	int started;		/* sampled at least once */
	uint64_t start_ns, end_ns;	/* before its first start, after its last read */
	uint64_t nread;		/* samples read */
	unsigned long long born;	/* its start time (/proc stat), 0: unknown */
};

struct sproc {
	pid_t pid;
	unsigned long long born;	/* its start time: a pid used again is another */
	struct ktau_usyms *u;
	int failed;		/* its maps could not be read */
};

/* An index of ids: an open-addressing table, no deletes. */
struct pidix {
	struct ixent {
		pid_t key;
		uint32_t i1;	/* 1 + the index; 0: an empty slot */
	} *v;
	size_t n, used;		/* slots (a power of two), slots in use */
};

struct ssess {
	const char *cmd;
	char spec_text[80];
	struct ktau_sample_spec spec;
	double interval;
	struct ktau *k;
	struct ktau_ksyms *ks;
	int ks_err;
	struct ktau_sample_profile *prof;
	struct ktau_sample_rec *buf;
	struct sthread *th;
	size_t nth, cth;
	struct sproc *pr;
	size_t npr, cpr;
	uint64_t nstarted, nfailed, nexecs;
	int first_err;		/* of the threads that could not be sampled */
	int kernel_dropped;	/* kernel samples not permitted: user mode only */
	int lines;		/* --lines: user code per source line */
	struct ssess_sink sink;	/* ktaud trace --sample: where samples go too */
	size_t nlive;		/* threads sampled, as of the last drain and starts since */
	int limited;		/* a thread was left out: 1 MAX_LIVE, 2 MAX_SEEN (bits) */
	double more_s;		/* when ssess_scan_more() last read /proc */
	struct pidix tix;	/* tid -> its latest thread in th */
	struct pidix pix;	/* pid -> its process in pr */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The capacity for the rate of the spec: two intervals' worth, a power of two. */
static uint32_t auto_capacity(const struct ktau_sample_spec *sp, double interval)
{
	uint64_t ns = ktau_sample_period_ns(sp);
	double rate = ns ? 1e9 / ns : (sp->flags & KTAU_LIB_SAMPLE_FREQ) ? (double)sp->period : 0;
	uint32_t cap = MIN_CAPACITY;

	if (!rate)
		return HW_CAPACITY;
	while (cap < KTAU_LIB_SAMPLE_MAX_CAPACITY && cap < 2 * rate * interval)
		cap *= 2;
	return cap;
}

int ssess_new(const char *cmd, const char *text, double interval, unsigned long capacity,
	      int lines, struct ssess **out)
{
	struct ktau_sample_stats st;
	struct ssess *s;
	const char *why = "";
	unsigned int major = 0, minor = 0;
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return report(-ENOMEM, cmd);
	s->cmd = cmd;
	s->interval = interval;
	s->lines = lines;
	if (ktau_sample_parse(text, &s->spec, &why)) {
		free(s);
		return usage_err(cmd, "bad sampling event '%s': %s", text, why);
	}
	snprintf(s->spec_text, sizeof(s->spec_text), "%s", text);
	s->spec.capacity = capacity ? capacity : auto_capacity(&s->spec, interval);
	why = ktau_sample_check(&s->spec);
	if (why) {
		free(s);
		return usage_err(cmd, "bad --buffer %lu: %s", capacity, why);
	}
	ret = open_ktau(&s->k);
	if (ret) {
		free(s);
		return ret;
	}
	/* A kernel that can sample says ENOENT: the caller is not sampled. */
	ret = ktau_sample_read(s->k, 0, NULL, 0, &st);
	if (ret == -ENOTTY || ret == -EINVAL) {
		ktau_abi_version(&major, &minor);
		err_msg("this kernel's KTAU (ABI %u.%u) cannot sample: sampling needs ABI 1.1; "
			"boot a newer KTAU kernel", major, minor);
		ssess_free(s);
		return EX_KT_NOKTAU;
	}
	s->buf = calloc(s->spec.capacity, sizeof(*s->buf));
	s->prof = ktau_sample_profile_new();
	if (!s->buf || !s->prof ||
	    (lines && ktau_sample_profile_set_flags(s->prof, KTAU_LIB_PROFILE_LINES))) {
		ssess_free(s);
		return report(-ENOMEM, cmd);
	}
	s->ks_err = (s->spec.flags & KTAU_LIB_SAMPLE_NO_KERNEL) ? 0 : ktau_ksyms_load(&s->ks);
	*out = s;
	return 0;
}

void ssess_free(struct ssess *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->npr; i++)
		ktau_usyms_free(s->pr[i].u);
	free(s->pr);
	free(s->th);
	free(s->tix.v);
	free(s->pix.v);
	free(s->buf);
	ktau_sample_profile_free(s->prof);
	ktau_ksyms_free(s->ks);
	ktau_close(s->k);
	free(s);
}

/* ---- Threads and processes --------------------------------------------- */

/* The thread group of a thread, from /proc; -1 when it is gone. */
static pid_t tgid_of(pid_t tid)
{
	char path[64], line[128];
	pid_t pid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Tgid:", 5)) {
			pid = atoi(line + 5);
			break;
		}
	fclose(f);
	return pid > 0 ? pid : -1;
}

/* PF_KTHREAD of include/linux/sched.h, in /proc/PID/stat's flags. */
#define PROC_PF_KTHREAD	0x00200000UL

/*
 * From /proc/PID/stat (tid 0) or /proc/PID/task/TID/stat: the parent,
 * whether it is a kernel thread, its start time (clock ticks after boot:
 * with the id, who it is); each may be NULL. 0, or -1 when it is gone.
 * By hand: the fields after the command's name, which ends at the last
 * ')'; no Debian library reads this file.
 */
static int proc_stat(pid_t pid, pid_t tid, pid_t *ppid, int *kthread, unsigned long long *born)
{
	char path[80], buf[1024], *p;
	unsigned long long start;
	unsigned long flags;
	int ppid_i;
	ssize_t n;
	int fd;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	/* state ppid pgrp session tty tpgid flags, 6 counts, 6 more, start */
	if (!p || sscanf(p + 1, " %*c %d %*d %*d %*d %*d %lu %*u %*u %*u %*u %*u %*u "
			 "%*d %*d %*d %*d %*d %*d %llu", &ppid_i, &flags, &start) != 3)
		return -1;
	if (ppid)
		*ppid = ppid_i;
	if (kthread)
		*kthread = !!(flags & PROC_PF_KTHREAD);
	if (born)
		*born = start;
	return 0;
}

static struct ixent *ix_find(const struct pidix *x, pid_t key)
{
	size_t m = x->n - 1, h = ((uint32_t)key * 2654435761u) & m;

	while (x->v[h].i1 && x->v[h].key != key)
		h = (h + 1) & m;
	return &x->v[h];
}

/* 1 + the index of key, or 0. */
static size_t ix_get(const struct pidix *x, pid_t key)
{
	return x->n ? ix_find(x, key)->i1 : 0;
}

/* key -> index i (replacing what key had); 0 or -ENOMEM. */
static int ix_put(struct pidix *x, pid_t key, size_t i)
{
	struct ixent *e;

	if (2 * (x->used + 1) > x->n) {
		struct pidix nx = { .n = x->n ? 2 * x->n : 64 };
		size_t k;

		nx.v = calloc(nx.n, sizeof(*nx.v));
		if (!nx.v)
			return -ENOMEM;
		for (k = 0; k < x->n; k++)
			if (x->v[k].i1)
				*ix_find(&nx, x->v[k].key) = x->v[k];
		nx.used = x->used;
		free(x->v);
		*x = nx;
	}
	e = ix_find(x, key);
	if (!e->i1) {
		e->key = key;
		x->used++;
	}
	e->i1 = (uint32_t)(i + 1);
	return 0;
}

/* The thread tid while it is not gone (at most one is: the latest). */
static struct sthread *th_find(struct ssess *s, pid_t tid)
{
	size_t i = ix_get(&s->tix, tid);

	return i && !s->th[i - 1].gone ? &s->th[i - 1] : NULL;
}

/* Room for one more item in *v (n used of *cap); 0 or -ENOMEM. */
static int grow(void *vp, size_t n, size_t *cap, size_t size)
{
	void **v = vp, *nv;
	size_t ncap = *cap ? *cap * 2 : 16;

	if (n < *cap)
		return 0;
	nv = realloc(*v, ncap * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

static struct sthread *th_add(struct ssess *s, pid_t tid, pid_t pid)
{
	struct sthread *t;

	if (grow(&s->th, s->nth, &s->cth, sizeof(*t)) || ix_put(&s->tix, tid, s->nth))
		return NULL;
	t = &s->th[s->nth++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->pid = pid;
	return t;
}

static struct sproc *proc_of(struct ssess *s, pid_t pid)
{
	struct sproc *p;
	size_t i = ix_get(&s->pix, pid);

	if (i)
		return &s->pr[i - 1];
	if (grow(&s->pr, s->npr, &s->cpr, sizeof(*p)) || ix_put(&s->pix, pid, s->npr))
		return NULL;
	p = &s->pr[s->npr++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	return p;
}

/* The user symbols of a process, read at the first need. */
static struct ktau_usyms *usyms_of(struct ssess *s, pid_t pid)
{
	struct sproc *p = pid > 0 ? proc_of(s, pid) : NULL;

	if (!p || p->failed)
		return NULL;
	if (!p->u && ktau_usyms_open(pid, &p->u))
		p->failed = 1;
	return p->u;
}

/* A new program in the process: its symbols are read again. */
static void proc_exec(struct ssess *s, pid_t pid)
{
	struct sproc *p = proc_of(s, pid);

	if (!p)
		return;
	ktau_usyms_free(p->u);
	p->u = NULL;
	p->failed = 0;
}

static void th_start(struct ssess *s, struct sthread *t)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	int ret = ktau_sample_start(s->k, t->tid, &s->spec);

	/* At perf_event_paranoid 2, kernel samples need CAP_PERFMON. */
	if (ret == -EACCES && !(s->spec.flags & (KTAU_LIB_SAMPLE_NO_KERNEL |
						 KTAU_LIB_SAMPLE_NO_USER))) {
		s->spec.flags |= KTAU_LIB_SAMPLE_NO_KERNEL;
		if (!ktau_sample_start(s->k, t->tid, &s->spec)) {
			s->kernel_dropped = 1;
			err_msg("warning: kernel samples are not permitted (kernel."
				"perf_event_paranoid; CAP_PERFMON): sampling user mode only");
			ret = 0;
		} else {
			s->spec.flags &= ~(uint32_t)KTAU_LIB_SAMPLE_NO_KERNEL;
		}
	}
	if (!ret) {
		t->taken0 += t->st.taken;
		t->lost0 += t->st.lost;
		memset(&t->st, 0, sizeof(t->st));
		if (!t->sampling)
			s->nlive++;
		t->sampling = 1;
		if (!t->started) {
			t->started = 1;
			t->start_ns = t->end_ns = t0;
		}
		s->nstarted++;
		return;
	}
	t->failed = 1;
	if (ret == -ESRCH)
		return;		/* gone already */
	if (!s->nfailed++) {
		s->first_err = ret;
		err_msg("warning: cannot sample thread %d: %s", (int)t->tid,
			ktau_sample_strerror(ret, 1));
	}
}

/* n samples of t read into s->buf: to the sink and into the counts. */
static void th_take(struct ssess *s, struct sthread *t, size_t n)
{
	struct ktau_usyms *u;
	size_t i;

	if (!n)
		return;
	for (i = 0; i < n; i++)
		s->buf[i].pid = t->pid;
	t->nread += n;
	u = usyms_of(s, t->pid);
	if (s->sink.samples && s->sink.samples(s->sink.arg, (size_t)(t - s->th), t->tid, t->pid,
					       s->buf, n, u, s->ks))
		err_msg("warning: out of memory: samples of thread %d lost from the trace",
			(int)t->tid);
	if (ktau_sample_profile_add_samples(s->prof, s->buf, n, u, s->ks))
		err_msg("warning: out of memory: samples of thread %d lost", (int)t->tid);
}

/* Drain what the thread's buffer holds; stop: then end its sampling. */
static void th_drain(struct ssess *s, struct sthread *t, int stop)
{
	struct ktau_sample_stats st;
	int n;

	while (t->sampling) {
		n = ktau_sample_read(s->k, t->tid, s->buf, s->spec.capacity, &st);
		if (n < 0) {
			if (n != -ENOENT && n != -ESRCH)
				err_msg("warning: thread %d: cannot read its samples: %s",
					(int)t->tid, ktau_sample_strerror(n, 0));
			t->sampling = 0;
			break;
		}
		t->st = st;
		t->end_ns = now_ns(CLOCK_MONOTONIC);
		th_take(s, t, (size_t)n);
		if ((uint32_t)n < s->spec.capacity)
			break;
	}
	if (stop && t->sampling) {
		/* What came in between, then the end. */
		n = ktau_sample_stop(s->k, t->tid, s->buf, s->spec.capacity, &st);
		if (n >= 0) {
			t->st = st;
			t->end_ns = now_ns(CLOCK_MONOTONIC);
			th_take(s, t, (size_t)n);
		}
		t->sampling = 0;
	}
}

static void drain_all(struct ssess *s, int stop)
{
	size_t i;

	for (i = 0; i < s->nth; i++)
		if (s->th[i].sampling)
			th_drain(s, &s->th[i], stop);
}

/* A thread seen for the first time: sample it. */
static struct sthread *th_new(struct ssess *s, pid_t tid, pid_t pid, int init_stop)
{
	struct sthread *t = th_find(s, tid);

	if (t)
		return t;
	struct sproc *p;
	unsigned long long born = 0;

	if (pid <= 0)
		pid = tgid_of(tid);
	if (pid <= 0)
		pid = tid;
	/* A pid used again: the process's symbols are another program's. */
	p = proc_of(s, pid);
	if (p && !proc_stat(pid, 0, NULL, NULL, &born)) {
		if (p->born && p->born != born)
			proc_exec(s, pid);
		p->born = born;
	}
	t = th_add(s, tid, pid);
	if (!t)
		return NULL;
	if (proc_stat(pid, tid, NULL, NULL, &t->born))
		t->born = 0;
	t->init_stop = init_stop;
	th_start(s, t);
	return t;
}

/* ---- Tracing a command --------------------------------------------------- */

int ssess_child_prepare(void)
{
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
		return -errno;
	/* Until the tracer has set its options; sampling starts at the exec. */
	raise(SIGSTOP);
	return 0;
}

/* After an exec: the process has one thread, w, sampled from the start. */
static void on_exec(struct ssess *s, pid_t w)
{
	struct sthread *t;
	size_t i;

	for (i = 0; i < s->nth; i++)
		if (s->th[i].pid == w && s->th[i].tid != w && !s->th[i].gone) {
			s->th[i].gone = 1;
			s->th[i].sampling = 0;
		}
	proc_exec(s, w);
	t = th_find(s, w);
	if (!t)
		t = th_add(s, w, w);
	if (!t)
		return;
	t->pid = w;
	t->sampling = 0;	/* the kernel ended it at the exec */
	s->nexecs++;
	th_start(s, t);
}

/* One wait status of a tracee; 1 when it has terminated. */
static int on_wait(struct ssess *s, pid_t w, int st)
{
	struct sthread *t = th_find(s, w);
	unsigned long msg = 0;
	siginfo_t si;
	int inject = 0;

	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		if (t) {
			t->sampling = 0;
			t->gone = 1;
		}
		return 1;
	}
	if (!WIFSTOPPED(st))
		return 0;
	switch ((unsigned int)st >> 16) {
	case PTRACE_EVENT_CLONE:
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		if (!ptrace(PTRACE_GETEVENTMSG, w, NULL, &msg))
			th_new(s, (pid_t)msg, 0, 1);
		break;
	case PTRACE_EVENT_EXEC:
		on_exec(s, w);
		break;
	case PTRACE_EVENT_EXIT:
		/* Its memory map is still there: name its last samples now. */
		if (t)
			th_drain(s, t, 0);
		break;
	case 0:
		if (WSTOPSIG(st) == SIGSTOP && (!t || t->init_stop)) {
			/* A new tracee's first stop (it may come before the event). */
			t = th_new(s, w, 0, 0);
			if (t)
				t->init_stop = 0;
			break;
		}
		/* A group stop has no siginfo: job control stops are not kept. */
		if (!ptrace(PTRACE_GETSIGINFO, w, NULL, &si))
			inject = WSTOPSIG(st);
		break;
	default:
		break;
	}
	ptrace(PTRACE_CONT, w, NULL, (void *)(long)inject);
	return 0;
}

int ssess_trace(struct ssess *s, pid_t pid, int cfd, struct ktau_snap **snap, int *status)
{
	sigset_t chld, old;
	struct timespec ts;
	double next, left;
	int st, main_done = 0, ret = 0, ticking = !!s->sink.tick;
	pid_t w;

	/* The child's stop before its exec. */
	while ((w = waitpid(pid, &st, __WALL)) < 0 && errno == EINTR)
		;
	if (w < 0)
		return -errno;
	if (!WIFSTOPPED(st)) {
		*status = st;
		return 0;
	}
	if (ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)(PTRACE_O_TRACECLONE |
	    PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT))) {
		ret = -errno;
		kill(pid, SIGKILL);
		ptrace(PTRACE_CONT, pid, NULL, NULL);
		waitpid(pid, status, __WALL);
		return ret;
	}
	if (!th_add(s, pid, pid)) {
		kill(pid, SIGKILL);
		ptrace(PTRACE_CONT, pid, NULL, NULL);
		waitpid(pid, status, __WALL);
		return -ENOMEM;
	}
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	ptrace(PTRACE_CONT, pid, NULL, NULL);
	next = now_s() + s->interval;
	for (;;) {
		while ((w = waitpid(-1, &st, __WALL | WNOHANG)) > 0)
			if (on_wait(s, w, st) && w == pid) {
				*status = st;
				main_done = 1;
			}
		if (main_done || (w < 0 && errno == ECHILD))
			break;
		left = next - now_s();
		if (left <= 0) {
			drain_all(s, 0);
			if (cfd >= 0)
				ktau_collect_read(cfd, snap);
			/* The sink failed: the command is not left running. */
			if (ticking && s->sink.tick(s->sink.arg)) {
				ticking = 0;
				kill(pid, SIGKILL);
			}
			next += s->interval;
			if (next < now_s())
				next = now_s() + s->interval;
			continue;
		}
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - ts.tv_sec) * 1e9);
		sigtimedwait(&chld, NULL, &ts);
	}
	if (!main_done)
		ret = -ECHILD;
	/* Tasks left running: sampling ends, and their stops are let go. */
	drain_all(s, 1);
	while ((w = waitpid(-1, &st, __WALL | WNOHANG)) > 0)
		on_wait(s, w, st);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ret;
}

void ssess_set_sink(struct ssess *s, const struct ssess_sink *k)
{
	if (k)
		s->sink = *k;
	else
		memset(&s->sink, 0, sizeof(s->sink));
}

size_t ssess_nthreads(const struct ssess *s)
{
	return s->nth;
}

int ssess_thread(const struct ssess *s, size_t i, struct ssess_thread *out)
{
	const struct sthread *t = i < s->nth ? &s->th[i] : NULL;

	memset(out, 0, sizeof(*out));
	if (!t || !t->started)
		return 0;
	out->tid = t->tid;
	out->pid = t->pid;
	out->start_ns = t->start_ns;
	out->end_ns = t->end_ns;
	out->taken = t->taken0 + t->st.taken;
	out->lost = t->lost0 + t->st.lost;
	out->nread = t->nread;
	return 1;
}

const char *ssess_event(const struct ssess *s, char *buf, size_t size)
{
	const char *ev = ktau_sample_event_name(s->spec.event);

	snprintf(buf, size, "%s:%s%llu", ev ? ev : "?",
		 s->spec.flags & KTAU_LIB_SAMPLE_FREQ ? "@" : "",
		 (unsigned long long)s->spec.period);
	return buf;
}

uint32_t ssess_flags(const struct ssess *s)
{
	return s->spec.flags;
}

/* ---- Output ------------------------------------------------------------ */

void ssess_tau_opts(const struct ssess *s, struct ktau_tau_opts *o)
{
	o->sample_metric = ktau_sample_event_name(s->spec.event);
	o->samples = s->prof;
	o->sample_period_ns = ktau_sample_period_ns(&s->spec);
}

int ssess_write_folded(const struct ssess *s, const char *path, const struct ktau_snap *snap,
		       const struct ktau_registry *reg)
{
	struct out_file of;
	int ret;

	if (!path)
		return EX_KT_OK;
	ret = out_file_open(&of, path);
	if (ret)
		return ret;
	return out_file_close(&of, ktau_write_sample_folded(of.f, s->prof, snap, reg),
			      "the folded samples");
}

int ssess_write_outputs(const struct ssess *s, const struct run_args *ra,
			const struct ktau_snap *snap, const struct ktau_registry *reg,
			struct out_opts *oo)
{
	struct ktau_tau_opts topts = { 0 };
	char name[48];
	int rc;

	/* The run's metadata (run_command()). */
	if (oo->tau_opts)
		topts = *oo->tau_opts;
	ssess_tau_opts(s, &topts);
	if (!ra->sample_folded) {
		if (oo->has_rank)
			snprintf(name, sizeof(name), "samples.%d.folded", oo->rank);
		else
			snprintf(name, sizeof(name), "samples.folded");
		topts.samples_folded = name;
	}
	oo->tau_opts = &topts;
	rc = write_outputs(snap, reg, oo);
	oo->tau_opts = NULL;
	if (!rc && ra->sample_folded)
		rc = ssess_write_folded(s, ra->sample_folded, snap, reg);
	return rc;
}

struct top_item {
	char *label;
	uint64_t count;
};

static int cmp_top(const void *a, const void *b)
{
	return strcmp(((const struct top_item *)a)->label, ((const struct top_item *)b)->label);
}

static int cmp_top_count(const void *a, const void *b)
{
	const struct top_item *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->label, y->label);
}

void ssess_summary(const struct ssess *s, const struct ktau_registry *reg, unsigned long top)
{
	const struct ktau_sample_place *pl;
	struct top_item *v;
	uint64_t user = 0, kernel = 0, taken = 0, lost = 0, lined = 0, total;
	size_t n, i, m, nthreads = 0;

	for (i = 0; i < s->nth; i++) {
		taken += s->th[i].taken0 + s->th[i].st.taken;
		lost += s->th[i].lost0 + s->th[i].st.lost;
	}
	pl = ktau_sample_profile_places(s->prof, &n);
	for (i = 0; i < n; i++) {
		size_t fn, flen;
		const char *file;
		unsigned long line;

		*(pl[i].user ? &user : &kernel) += pl[i].count;
		if (pl[i].user && pl[i].sym &&
		    ktau__srcline_split(pl[i].sym, &fn, &file, &flen, &line))
			lined += pl[i].count;
	}
	total = user + kernel;
	for (i = 0; i < s->nth; i++)
		nthreads += s->th[i].taken0 + s->th[i].st.taken > 0;
	fprintf(stderr, "ktaud: samples (%s, %s): %llu in %zu thread%s (%llu user, %llu kernel), "
		"%llu taken, %llu lost\n", s->spec_text,
		s->spec.flags & KTAU_LIB_SAMPLE_NO_KERNEL ? "user mode only" :
		s->spec.flags & KTAU_LIB_SAMPLE_NO_USER ? "kernel only" : "user and kernel",
		(unsigned long long)total, nthreads, nthreads == 1 ? "" : "s",
		(unsigned long long)user, (unsigned long long)kernel,
		(unsigned long long)taken, (unsigned long long)lost);
	if (s->nfailed)
		fprintf(stderr, "ktaud: warning: %llu thread%s not sampled (%s)\n",
			(unsigned long long)s->nfailed, s->nfailed == 1 ? "" : "s",
			ktau_sample_strerror(s->first_err, 1));
	if (s->limited & 1)
		fprintf(stderr, "ktaud: warning: %zu threads were sampled at once, the bound: "
			"threads found meanwhile were not sampled\n", (size_t)MAX_LIVE);
	if (s->limited & 2)
		fprintf(stderr, "ktaud: warning: %d threads were seen, the bound: threads found "
			"later were not sampled\n", MAX_SEEN);
	if (lost)
		fprintf(stderr, "ktaud: warning: samples were lost: a shorter --interval or a "
			"larger --buffer (%u now) keeps them\n", s->spec.capacity);
	if (kernel && !s->ks)
		fprintf(stderr, "ktaud: kernel samples are named by their KTAU routine only "
			"(/proc/kallsyms: %s)\n", s->ks_err == -EACCES ?
			"addresses hidden by kernel.kptr_restrict" : strerror(-s->ks_err));
	if (s->lines && user && lined < user)
		fprintf(stderr, "ktaud: --lines: %llu of %llu user samples have a source line (the "
			"others: no debug information with lines; see KTAU_DEBUGINFO_PATH)\n",
			(unsigned long long)lined, (unsigned long long)user);
	if (!top || !total)
		return;
	v = calloc(n, sizeof(*v));
	if (!v)
		return;
	for (i = 0; i < n; i++) {
		int r = pl[i].user ? asprintf(&v[i].label, "%s", pl[i].sym ? pl[i].sym : "?") :
			asprintf(&v[i].label, "[k] %s", ktau_func_name(reg, pl[i].id));

		v[i].count = pl[i].count;
		if (r < 0) {
			v[i].label = NULL;
			goto out;
		}
	}
	/* The same code in several threads counts once. */
	qsort(v, n, sizeof(*v), cmp_top);
	for (i = 0, m = 0; i < n; i++) {
		if (m && !strcmp(v[m - 1].label, v[i].label)) {
			v[m - 1].count += v[i].count;
			free(v[i].label);
		} else {
			v[m++] = v[i];
		}
	}
	n = m;
	qsort(v, n, sizeof(*v), cmp_top_count);
	fprintf(stderr, "ktaud: top sampled code:");
	for (i = 0; i < n && i < top; i++)
		fprintf(stderr, "%s %s %.1f%% (%llu)", i ? "," : "", v[i].label,
			100.0 * v[i].count / total, (unsigned long long)v[i].count);
	fputc('\n', stderr);
out:
	for (i = 0; i < n; i++)
		free(v[i].label);
	free(v);
}

/* ---- ktaud sample ------------------------------------------------------------ */

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud sample [options] [--] <command> [args...]\n"
"       ktaud sample [options] -p ID[,ID...]\n\n"
"Sample the threads of a command, or of running processes, with KTAU's\n"
"in-kernel buffered sampling: the kernel buffers {address, time, KTAU routine}\n"
"at each overflow of a counter of the thread, and counts the samples of each\n"
"kernel routine in the thread's profile. Writes a TAU profile directory with\n"
"two metrics, MULTI__TIME (the exact kernel times) and MULTI__<EVENT> (the\n"
"samples: per kernel routine, and per sampled function as \"[SAMPLE] name\"\n"
"rows), and folded stacks of the samples. A command is run as by 'ktaud run'\n"
"(its exit status is passed through) and traced, so that every thread and\n"
"process it creates is sampled from its start.\n\n"
"  -e, --event SPEC     EVENT[:PERIOD][:u|:k] (default " DEFAULT_SPEC ")\n"
"                       EVENT: cpu-clock, task-clock (software), cycles,\n"
"                       instructions (hardware PMU); PERIOD: for the clocks a\n"
"                       time (ns, us, ms, s; at least 10us), for the others a\n"
"                       number of events; or @HZ, samples per second (at most\n"
"                       100000); :u user mode only, :k kernel only\n"
"  -i, --interval S     drain the kernel buffers every S seconds (default 0.1)\n"
"  -b, --buffer N       kernel buffer per thread in samples, a power of two up\n"
"                       to 65536 (default: two intervals of samples)\n"
"  -p, --pid ID[,ID]    sample running processes: all their threads, also new\n"
"                       ones, and the processes they start (looked for at\n"
"                       most every 0.2 s; at most 1024 threads at once,\n"
"                       65536 in all); until all exit, --duration or\n"
"                       SIGINT/SIGTERM/SIGHUP\n"
"      --tid            the IDs of -p are threads, not processes\n"
"  -d, --duration S     with -p: stop after S seconds\n"
"  -o, --output DIR     the TAU profile directory (default ktau-profile); %%r\n"
"                       the MPI rank, %%p ktaud's pid, %%h the host name; under\n"
"                       an MPI launcher files are on node RANK (as 'ktaud run')\n"
"  -f, --force          write DIR even when it holds files ktaud did not write\n"
"                       (none of them is replaced), and replace an existing\n"
"                       FILE that ktaud did not write\n"
"      --folded[=FILE]  folded stacks of the samples (default DIR/samples.folded,\n"
"                       DIR/samples.RANK.folded under an MPI launcher;\n"
"                       alone: stdout): \"comm;function N\" for user code,\n"
"                       \"comm;[k] routine;function N\" for the kernel\n"
"      --lines          user code per source line where its debug information\n"
"                       has lines: rows \"[SAMPLE] function [{file} {line}]\"\n"
"                       (TAU's names), folded \"comm;function;file.c:LINE N\"\n"
"  -j, --json[=FILE]    also write the kernel profile as JSON on stdout, or\n"
"                       into FILE (--json=FILE, -jFILE)\n"
"      --save FILE      also save a snapshot file (for 'ktaud export')\n"
"  -n, --top N          entries in the summaries (default 5)\n"
"  -q, --quiet          no summary\n"
"  -h, --help           this help\n\n"
"Kernel samples need CAP_PERFMON at kernel.perf_event_paranoid 2 (without it\n"
"ktaud samples user mode only, and says so); kernel functions are named from\n"
"/proc/kallsyms when the kernel shows its addresses, else by KTAU routine.\n"
"Exit status: the command's; with -p 0, or 2 bad argument, 3 no KTAU or no\n"
"sampling, 4 permission, 5 no such process.\n");
}

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/*
 * Whether thread tid of process pid was seen: sampled, or gone or failed
 * while it still exists (the same start time); a tid used again is new.
 */
static int th_known(struct ssess *s, pid_t pid, pid_t tid)
{
	size_t i = ix_get(&s->tix, tid);
	unsigned long long born;

	if (!i)
		return 0;
	if (!s->th[i - 1].gone)
		return 1;
	/* No start time: that thread was gone at once; this one is another. */
	return s->th[i - 1].born && (proc_stat(pid, tid, NULL, NULL, &born) ||
				     born == s->th[i - 1].born);
}

/* Add the threads of process pid that are new, within the bounds. */
static void scan_process(struct ssess *s, pid_t pid)
{
	char path[64];
	struct dirent *de;
	pid_t tid;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		tid = atoi(de->d_name);
		if (tid <= 0 || th_known(s, pid, tid))
			continue;
		if (s->nlive >= MAX_LIVE || s->nth >= MAX_SEEN) {
			s->limited |= s->nth >= MAX_SEEN ? 2 : 1;
			break;
		}
		th_new(s, tid, pid, 0);
	}
	closedir(d);
}

/*
 * After a drain: a thread whose sampling ended is gone, or it ran exec
 * (its process has a new program): then it is sampled again.
 */
static size_t check_threads(struct ssess *s)
{
	unsigned long long born;
	unsigned char *live_p;
	struct sthread *t;
	size_t i, k, live = 0;

	for (i = 0; i < s->nth; i++) {
		t = &s->th[i];
		/* The same thread (its start time), not another one of its tid. */
		if (!t->gone && !t->sampling && !t->failed && tgid_of(t->tid) == t->pid &&
		    t->born && !proc_stat(t->pid, t->tid, NULL, NULL, &born) && born == t->born) {
			proc_exec(s, t->pid);
			s->nexecs++;
			th_start(s, t);
		}
		if (!t->sampling)
			t->gone = 1;
		live += !t->gone;
	}
	s->nlive = live;
	/*
	 * A process without a live thread lets go of its symbols (its samples
	 * were named as they were read): -a and -p go through many processes.
	 */
	live_p = calloc(s->npr + 1, 1);
	if (!live_p)
		return live;
	for (i = 0; i < s->nth; i++)
		if (!s->th[i].gone && (k = ix_get(&s->pix, s->th[i].pid)))
			live_p[k - 1] = 1;
	for (i = 0; i < s->npr; i++)
		if (!live_p[i] && s->pr[i].u) {
			ktau_usyms_free(s->pr[i].u);
			s->pr[i].u = NULL;
		}
	free(live_p);
	return live;
}

/* The live threads sampled, for a snapshot. */
static size_t live_tids(const struct ssess *s, pid_t *v)
{
	size_t i, n = 0;

	for (i = 0; i < s->nth; i++)
		if (!s->th[i].gone)
			v[n++] = s->th[i].tid;
	return n;
}

/* Tasks of prev that cur does not have (they exited): kept in gone. */
static int keep_departed(const struct ktau_snap *prev, const struct ktau_snap *cur,
			 struct ktau_snap *gone)
{
	size_t i, j;
	int ret;

	for (i = 0; prev && i < prev->ntasks; i++) {
		for (j = 0; j < cur->ntasks; j++)
			if (cur->tasks[j].tid == prev->tasks[i].tid &&
			    cur->tasks[j].start_ns == prev->tasks[i].start_ns)
				break;
		if (j < cur->ntasks)
			continue;
		ret = ktau_snap_add_task(gone, &prev->tasks[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static int snap_threads(struct ssess *s, struct ktau_snap **out)
{
	pid_t *tids = malloc((s->nth + 1) * sizeof(*tids));
	size_t n;
	int ret;

	*out = NULL;
	if (!tids)
		return -ENOMEM;
	n = live_tids(s, tids);
	ret = n ? ktau_snapshot(s->k, KTAU_LIB_PIDS, tids, n, out) : 0;
	if (!ret && !*out)
		*out = ktau_snap_new();
	free(tids);
	return ret ? ret : (*out ? 0 : -ENOMEM);
}

/* Whether this kernel has /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN). */
static int has_children_file(void)
{
	static int has = -1;
	char path[64];

	if (has < 0) {
		snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)gettid());
		has = !access(path, R_OK);
	}
	return has;
}

/* pid into the set x and the list *v (*n of *cap) when it is new; 0 or -ENOMEM. */
static int set_add(struct pidix *x, pid_t **v, size_t *n, size_t *cap, pid_t pid)
{
	if (ix_get(x, pid))
		return 0;
	if (grow(v, *n, cap, sizeof(**v)) || ix_put(x, pid, *n))
		return -ENOMEM;
	(*v)[(*n)++] = pid;
	return 0;
}

/* The children of each thread of process pid (from its children files) into the set. */
static int children_of(pid_t pid, struct pidix *x, pid_t **v, size_t *n, size_t *cap)
{
	char path[96];
	struct dirent *de;
	int ret = 0, c;
	DIR *d;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;	/* gone */
	while (!ret && (de = readdir(d))) {
		int tid = atoi(de->d_name);

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, tid);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (!ret && fscanf(f, "%d", &c) == 1)
			if (c > 0)
				ret = set_add(x, v, n, cap, (pid_t)c);
		fclose(f);
	}
	closedir(d);
	return ret;
}

/* The same from every process's stat file: a kernel without children files. */
static int children_scan(struct pidix *x, pid_t **v, size_t *n, size_t *cap)
{
	struct dirent *de;
	pid_t pid, ppid;
	int pass, kthread, ret = 0;
	size_t before;
	DIR *d;

	/* Passes until none is new: a child may come before its parent in /proc. */
	for (pass = 0; pass < 8 && !ret; pass++) {
		before = *n;
		d = opendir("/proc");
		if (!d)
			return -errno;
		while (!ret && (de = readdir(d))) {
			pid = (pid_t)atoi(de->d_name);
			if (pid > 0 && !ix_get(x, pid) && !proc_stat(pid, 0, &ppid, &kthread, NULL) &&
			    !kthread && ix_get(x, ppid))
				ret = set_add(x, v, n, cap, pid);
		}
		closedir(d);
		if (*n == before)
			break;
	}
	return ret;
}

/*
 * Add to the processes *v (n of them, malloc'ed) every process whose
 * parent is among them, and their children in turn; 0 or -errno.
 */
static int ssess_children(pid_t **v, size_t *n)
{
	struct pidix x = { 0 };
	size_t cap = *n, i;
	int ret = 0;

	for (i = 0; i < *n && !ret; i++)
		ret = ix_put(&x, (*v)[i], i);
	if (ret)
		;
	else if (has_children_file())
		for (i = 0; i < *n && !ret; i++)	/* *n grows: grandchildren too */
			ret = children_of((*v)[i], &x, v, n, &cap);
	else
		ret = children_scan(&x, v, n, &cap);
	free(x.v);
	return ret;
}

void ssess_scan_more(struct ssess *s, int all)
{
	pid_t self = getpid(), pid, *v = NULL;
	struct pidix x = { 0 };
	double t = now_s();
	struct dirent *de;
	size_t i, n = 0, cap = 0;
	int kthread;
	DIR *d;

	/* Not more often than every SCAN_MORE_S (the first time always). */
	if (s->more_s && t - s->more_s < SCAN_MORE_S)
		return;
	s->more_s = t;
	if (all) {
		d = opendir("/proc");
		if (!d)
			return;
		while ((de = readdir(d))) {
			pid = (pid_t)atoi(de->d_name);
			if (pid > 0 && pid != self && !proc_stat(pid, 0, NULL, &kthread, NULL) &&
			    !kthread)
				scan_process(s, pid);
		}
		closedir(d);
		return;
	}
	/* The processes sampled now, then their children (and theirs). */
	for (i = 0; i < s->nth; i++)
		if (!s->th[i].gone && set_add(&x, &v, &n, &cap, s->th[i].pid))
			goto out;
	/* Every one: a process found before may have new threads. */
	if (n && !ssess_children(&v, &n))
		for (i = 0; i < n; i++)
			if (v[i] != self)
				scan_process(s, v[i]);
out:
	free(x.v);
	free(v);
}

void ssess_scan(struct ssess *s, pid_t pid)
{
	pid_t tgid = tgid_of(pid);

	/* A thread's id names its process's threads too (/proc/TID/task). */
	scan_process(s, tgid > 0 ? tgid : pid);
}

size_t ssess_drain(struct ssess *s, int stop)
{
	drain_all(s, stop);
	return stop ? 0 : check_threads(s);
}

int ssess_started(struct ssess *s)
{
	if (s->nstarted)
		return 0;
	err_msg("no thread could be sampled: %s", ktau_sample_strerror(s->first_err, 1));
	return s->first_err == -EACCES || s->first_err == -EPERM ? EX_KT_PERM :
	       s->first_err == -ESRCH ? EX_KT_GONE : EX_KT_FAIL;
}

struct attach_args {
	pid_t *ids;
	size_t nids;
	int tids;		/* the ids are threads */
	double duration;	/* 0: no limit */
	struct run_args *ra;
};

static int sample_attach(struct ssess *s, struct attach_args *aa)
{
	struct ktau_snap *base = NULL, *prev = NULL, *cur = NULL, *gone = NULL, *delta = NULL;
	struct ktau_registry *reg = NULL;
	struct out_opts oo = aa->ra->oo;
	struct sigaction sa = { .sa_handler = on_stop }, old_int, old_term, old_hup;
	struct timespec ts;
	double t0, end, left;
	size_t i, live, nprocs;
	pid_t *procs;
	int ret, rc = EX_KT_OK;

	for (i = 0; i < aa->nids; i++) {
		pid_t pid = tgid_of(aa->ids[i]);

		if (pid < 0) {
			err_msg("%s %d does not exist", aa->tids ? "thread" : "process",
				(int)aa->ids[i]);
			return EX_KT_GONE;
		}
		if (!aa->tids && pid != aa->ids[i]) {
			err_msg("%d is a thread of process %d, not a process: give --tid to sample "
				"that thread only, or -p %d", (int)aa->ids[i], (int)pid, (int)pid);
			return EX_KT_USAGE;
		}
	}
	/*
	 * The profiles before sampling: the profile covers what comes after;
	 * of the processes too that the named ones started (they are sampled).
	 */
	procs = malloc(aa->nids * sizeof(*procs));
	if (!procs)
		return report(-ENOMEM, "sample");
	memcpy(procs, aa->ids, aa->nids * sizeof(*procs));
	nprocs = aa->nids;
	if (!aa->tids)
		ssess_children(&procs, &nprocs);
	ret = ktau_snapshot(s->k, KTAU_LIB_PIDS | (aa->tids ? 0 : KTAU_LIB_PROCESS), procs,
			    nprocs, &base);
	free(procs);
	if (ret)
		return report(ret, "snapshot");
	gone = ktau_snap_new();
	if (!gone) {
		ktau_snap_free(base);
		return report(-ENOMEM, "sample");
	}
	/*
	 * A sampler ends only with its thread (or its exec): from the first
	 * start on, SIGINT, SIGTERM and SIGHUP stop them all before ktaud
	 * exits.
	 */
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	/* Under nohup, a hangup is not a stop. */
	sigaction(SIGHUP, NULL, &old_hup);
	if (old_hup.sa_handler != SIG_IGN)
		sigaction(SIGHUP, &sa, NULL);
	for (i = 0; i < aa->nids; i++) {
		if (aa->tids)
			th_new(s, aa->ids[i], 0, 0);
		else
			ssess_scan(s, aa->ids[i]);
	}
	if (!aa->tids)
		ssess_scan_more(s, 0);
	ret = ssess_started(s);
	if (ret) {
		ssess_drain(s, 1);
		rc = ret;
		goto out_signals;
	}
	t0 = now_s();
	end = aa->duration ? t0 + aa->duration : 0;
	while (!stop_flag) {
		left = s->interval;
		if (end && end - now_s() < left)
			left = end - now_s();
		if (left > 0) {
			ts.tv_sec = (time_t)left;
			ts.tv_nsec = (long)((left - ts.tv_sec) * 1e9);
			nanosleep(&ts, NULL);
		}
		if (!aa->tids) {
			/* While it lives: its pid may name another process later. */
			for (i = 0; i < aa->nids; i++)
				if (th_find(s, aa->ids[i]))
					ssess_scan(s, aa->ids[i]);
			ssess_scan_more(s, 0);
		}
		live = ssess_drain(s, 0);
		ret = snap_threads(s, &cur);
		if (ret || keep_departed(prev, cur, gone)) {
			report(ret ? ret : -ENOMEM, "snapshot");
			rc = EX_KT_FAIL;
			break;
		}
		ktau_snap_free(prev);
		prev = cur;
		cur = NULL;
		if (!live || (end && now_s() >= end))
			break;
	}
	/* The last profiles, with their samples, before sampling stops. */
	if (!rc) {
		ret = snap_threads(s, &cur);
		if (!ret)
			ret = keep_departed(prev, cur, gone);
		if (!ret) {
			ktau_snap_free(prev);
			prev = cur;
			cur = NULL;
		}
		ktau_snap_free(cur);
	}
	ssess_drain(s, 1);
out_signals:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	if (rc)
		goto out;
	for (i = 0; !ret && i < gone->ntasks; i++)
		ret = ktau_snap_add_task(prev, &gone->tasks[i]);
	if (!ret)
		ret = ktau_snap_diff(base, prev, &delta);
	if (ret) {
		rc = report(ret, "sample");
		goto out;
	}
	ktau_snap_sort(delta);
	reg = load_registry();
	ktau_snap_fill_host(delta);
	rc = ssess_write_outputs(s, aa->ra, delta, reg, &oo);
	if (!aa->ra->quiet) {
		fprintf(stderr, "ktaud: sampled %zu thread%s for %.3f s\n", s->nth,
			s->nth == 1 ? "" : "s", now_s() - t0);
		ssess_summary(s, reg, aa->ra->top);
		if (!rc)
			fprintf(stderr, "ktaud: TAU profile: %s/ (%zu threads; pprof, paraprof)\n",
				oo.tau_dir, delta->ntasks);
	}
out:
	ktau_registry_free(reg);
	ktau_snap_free(base);
	ktau_snap_free(prev);
	ktau_snap_free(gone);
	ktau_snap_free(delta);
	return rc;
}

/* "1,2,3" into ids. */
static int parse_ids(const char *arg, pid_t **ids, size_t *n)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	pid_t *v, id;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (parse_pid(tok, &id)) {
			free(copy);
			return -EINVAL;
		}
		v = realloc(*ids, (*n + 1) * sizeof(*v));
		if (!v) {
			free(copy);
			return -ENOMEM;
		}
		*ids = v;
		v[(*n)++] = id;
	}
	free(copy);
	return *n ? 0 : -EINVAL;
}

int cmd_sample(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "interval", required_argument, NULL, 'i' },
		{ "buffer", required_argument, NULL, 'b' },
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", no_argument, NULL, 'I' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "folded", optional_argument, NULL, 'F' },
		{ "json", optional_argument, NULL, 'j' },
		{ "save", required_argument, NULL, 'S' },
		{ "top", required_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "lines", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct run_args ra = { .oo = { .tau_dir = "ktau-profile", .dense = 1 }, .top = 5,
			       .cmd_name = "sample" };
	struct attach_args aa = { .ra = &ra };
	const char *spec = DEFAULT_SPEC;
	unsigned long capacity = 0;
	double interval = 0.1;
	struct ssess *s = NULL;
	int c, ret, bare_end = 0, lines = 0;

	while ((c = getopt_long(argc, argv, "+e:i:b:p:td:o:j::n:qfh", opts, NULL)) != -1) {
		switch (c) {
		case 'e': spec = optarg; break;
		case 'i':
			if (parse_seconds(optarg, &interval) || interval < 0.001 || interval > 3600)
				return usage_err("sample", "bad --interval '%s': seconds, from "
						 "0.001 to 3600", optarg);
			break;
		case 'b':
			if (parse_uint(optarg, &capacity) || !capacity ||
			    capacity > KTAU_LIB_SAMPLE_MAX_CAPACITY || (capacity & (capacity - 1)))
				return usage_err("sample", "bad --buffer '%s': a power of two from "
						 "1 to 65536 samples", optarg);
			break;
		case 'p':
			ret = parse_ids(optarg, &aa.ids, &aa.nids);
			if (ret) {
				free(aa.ids);
				return ret == -ENOMEM ? report(ret, "sample") :
				       usage_err("sample", "bad --pid '%s': ids, separated by commas",
						 optarg);
			}
			break;
		case 't': free(aa.ids); return moved_short("sample", c, "--tid");
		case 'I': aa.tids = 1; break;
		case 'd':
			if (parse_seconds(optarg, &aa.duration)) {
				free(aa.ids);
				return usage_err("sample", "bad --duration '%s': seconds", optarg);
			}
			break;
		case 'o': ra.oo.tau_dir = optarg; break;
		/* -j, --json and --folded alone: stdout; a FILE only attached. */
		case 'F':
			ra.sample_folded = optarg ? optarg : "-";
			bare_end = optarg ? bare_end : optind;
			break;
		case 'j':
			ra.oo.json_path = optarg ? optarg : "-";
			bare_end = optarg ? bare_end : optind;
			break;
		case 'S': ra.oo.save_path = optarg; break;
		case 'n':
			if (parse_uint(optarg, &ra.top)) {
				free(aa.ids);
				return usage_err("sample", "bad --top '%s': a number", optarg);
			}
			break;
		case 'q': ra.quiet = 1; break;
		case 'l': lines = 1; break;
		case 'h': free(aa.ids); help(stdout); return EX_KT_OK;
		default: free(aa.ids); return usage_err("sample", "bad option");
		}
	}
	/* A bare --json before a word first: with -p, the word is its FILE. */
	ret = bare_before_command("sample", argv, optind, bare_end);
	if (ret)
		;
	else if (!*ra.oo.tau_dir)
		ret = usage_err("sample", "-o needs a directory name");
	else if (aa.nids && optind < argc)
		ret = usage_err("sample", "give a command or -p, not both");
	else if (!aa.nids && optind >= argc)
		ret = usage_err("sample", "nothing to sample: ktaud sample [options] -- "
				"command args..., or -p PID");
	else if ((aa.tids || aa.duration) && !aa.nids)
		ret = usage_err("sample", "--tid and --duration go with -p");
	else if ((ret = json_folded_to_stdout("sample", ra.oo.json_path, ra.sample_folded, &c)))
		;
	else if (!(ret = prepare_outputs(&ra.oo)) && !(ret = out_file_check(ra.sample_folded)))
		ret = ssess_new("sample", spec, interval, capacity, lines, &s);
	if (!ret) {
		if (aa.nids) {
			ret = sample_attach(s, &aa);
		} else {
			ra.cmd = argv + optind;
			ra.ss = s;
			ret = run_command(&ra);
		}
	}
	ssess_free(s);
	free_outputs(&ra.oo);
	free(aa.ids);
	return ret;
}
