// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: sampling (ABI 1.1). The ioctls KTAU_IOC_SAMPLE_START, _READ and
 * _STOP on /proc/ktau/profiles, the strict decoder of their records, the
 * "EVENT:PERIOD" syntax of the tools, and the counts of samples per
 * thread and code location that the writers turn into TAU rows and folded
 * stacks.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/ktau.h>

#include "libktau.h"
#include "internal.h"
#include "sample-internal.h"

_Static_assert(KTAU_LIB_EV_CPU_CLOCK == KTAU_SAMPLE_CPU_CLOCK &&
	       KTAU_LIB_EV_TASK_CLOCK == KTAU_SAMPLE_TASK_CLOCK &&
	       KTAU_LIB_EV_CYCLES == KTAU_SAMPLE_CYCLES &&
	       KTAU_LIB_EV_INSTRUCTIONS == KTAU_SAMPLE_INSTRUCTIONS &&
	       KTAU_LIB_NR_EVENTS == KTAU_NR_SAMPLE_EVENTS, "events of the ABI");
_Static_assert(KTAU_LIB_SAMPLE_FREQ == KTAU_SAMPLE_FREQ &&
	       KTAU_LIB_SAMPLE_NO_USER == KTAU_SAMPLE_NO_USER &&
	       KTAU_LIB_SAMPLE_NO_KERNEL == KTAU_SAMPLE_NO_KERNEL &&
	       KTAU_LIB_SAMPLE_OVERWRITE == KTAU_SAMPLE_OVERWRITE, "flags of the ABI");
_Static_assert(KTAU_LIB_SAMPLE_MAX_CAPACITY == KTAU_SAMPLE_MAX_CAPACITY &&
	       KTAU_LIB_SAMPLE_MAX_FREQ == KTAU_SAMPLE_MAX_FREQ &&
	       KTAU_LIB_SAMPLE_MIN_CLOCK_NS == KTAU_SAMPLE_MIN_CLOCK_NS, "limits of the ABI");
_Static_assert(sizeof(struct ktau_sample) == 24, "ABI 1.1 sample");

#define MAX_PERIOD	(1ULL << 40)	/* the kernel's KTAU_SAMPLE_MAX_PERIOD */
#define DEFAULT_CLOCK_NS 1000000	/* 1 ms */
#define DEFAULT_FREQ	1000

static const char *const event_names[KTAU_LIB_NR_EVENTS] = {
	"cpu-clock", "task-clock", "cycles", "instructions",
};

const char *ktau_sample_event_name(uint32_t event)
{
	return event < KTAU_LIB_NR_EVENTS ? event_names[event] : NULL;
}

static int is_clock(uint32_t event)
{
	return event == KTAU_LIB_EV_CPU_CLOCK || event == KTAU_LIB_EV_TASK_CLOCK;
}

/* The period or frequency alone: NULL when it is valid. */
static const char *check_period(uint32_t event, uint32_t flags, uint64_t period)
{
	if (!period)
		return "the period (or frequency) must not be 0";
	if (flags & KTAU_LIB_SAMPLE_FREQ) {
		if (period > KTAU_LIB_SAMPLE_MAX_FREQ)
			return "the frequency must be at most 100000 Hz (@100000)";
		return NULL;
	}
	if (period > MAX_PERIOD)
		return "the period must be at most 2^40 events (about 18 minutes of a clock)";
	if (is_clock(event) && period < KTAU_LIB_SAMPLE_MIN_CLOCK_NS)
		return "the period of a clock event must be at least 10 us (10000 ns)";
	return NULL;
}

const char *ktau_sample_check(const struct ktau_sample_spec *sp)
{
	const char *why;

	if (sp->event >= KTAU_LIB_NR_EVENTS)
		return "unknown event (cpu-clock, task-clock, cycles or instructions)";
	if (sp->flags & ~(uint32_t)(KTAU_LIB_SAMPLE_FREQ | KTAU_LIB_SAMPLE_NO_USER |
				   KTAU_LIB_SAMPLE_NO_KERNEL | KTAU_LIB_SAMPLE_OVERWRITE))
		return "unknown flags";
	if ((sp->flags & KTAU_LIB_SAMPLE_NO_USER) && (sp->flags & KTAU_LIB_SAMPLE_NO_KERNEL))
		return "leaving out both user and kernel mode leaves nothing to sample";
	why = check_period(sp->event, sp->flags, sp->period);
	if (why)
		return why;
	if (!sp->capacity || sp->capacity > KTAU_LIB_SAMPLE_MAX_CAPACITY ||
	    (sp->capacity & (sp->capacity - 1)))
		return "the buffer capacity must be a power of two from 1 to 65536 samples";
	if (sp->watermark > sp->capacity)
		return "the watermark must not be above the buffer capacity";
	if (!sp->signo != !sp->watermark)
		return "a signal needs a watermark (1: a signal per sample), and a watermark a signal";
	/* The kernel's list (ABI 1.3): the signals a profiler uses. */
	if (sp->signo && sp->signo != SIGPROF && sp->signo != SIGTRAP && sp->signo != SIGIO &&
	    sp->signo != SIGUSR1 && sp->signo != SIGUSR2 &&
	    (sp->signo < SIGRTMIN || sp->signo > SIGRTMAX))
		return "the signal must be SIGPROF, SIGTRAP, SIGIO, SIGUSR1, SIGUSR2 or a real-time signal";
	return NULL;
}

uint64_t ktau_sample_period_ns(const struct ktau_sample_spec *sp)
{
	if (!is_clock(sp->event) || !sp->period)
		return 0;
	if (sp->flags & KTAU_LIB_SAMPLE_FREQ)
		return 1000000000ULL / sp->period;
	return sp->period;
}

/* A decimal number at *p (advanced); -EINVAL when there is none or it overflows. */
static int parse_num(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t n = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (n > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		n = n * 10 + (*s - '0');
	}
	*p = s;
	*v = n;
	return 0;
}

int ktau_sample_parse(const char *text, struct ktau_sample_spec *sp, const char **whyp)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = { { "", 1 }, { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 } };
	const char *colon = strchr(text, ':'), *p, *why = NULL;
	uint32_t event, flags = 0, mode = 0;
	uint64_t period;
	size_t len = colon ? (size_t)(colon - text) : strlen(text), i;
	char part[64] = "";

	for (event = 0; event < KTAU_LIB_NR_EVENTS; event++)
		if (strlen(event_names[event]) == len && !strncmp(text, event_names[event], len))
			break;
	if (event == KTAU_LIB_NR_EVENTS) {
		why = "unknown event: cpu-clock, task-clock, cycles or instructions";
		goto bad;
	}
	/* The mode: a last part "u" (user mode only) or "k" (kernel only). */
	p = strrchr(text, ':');
	if (p && (!strcmp(p, ":u") || !strcmp(p, ":k"))) {
		mode = p[1] == 'u' ? KTAU_LIB_SAMPLE_NO_KERNEL : KTAU_LIB_SAMPLE_NO_USER;
		len = p > colon ? (size_t)(p - colon - 1) : 0;
	} else {
		len = colon ? strlen(colon + 1) : 0;
	}
	if (len >= sizeof(part) || (colon && !len && !mode)) {
		why = "the period is a number (with ns, us, ms or s for the clocks) or @HZ";
		goto bad;
	}
	if (len)
		memcpy(part, colon + 1, len);
	part[len] = '\0';
	if (!len) {
		period = is_clock(event) ? DEFAULT_CLOCK_NS : DEFAULT_FREQ;
		flags = is_clock(event) ? 0 : KTAU_LIB_SAMPLE_FREQ;
	} else if (part[0] == '@') {
		p = part + 1;
		flags = KTAU_LIB_SAMPLE_FREQ;
		if (parse_num(&p, &period) || *p) {
			why = "a frequency is @ and a number of samples per second (@1000)";
			goto bad;
		}
	} else {
		p = part;
		if (parse_num(&p, &period)) {
			why = "the period is a number (with ns, us, ms or s for the clocks) or @HZ";
			goto bad;
		}
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcmp(p, units[i].unit))
				break;
		if (i == sizeof(units) / sizeof(units[0]) || (*p && !is_clock(event))) {
			why = is_clock(event) ? "the unit of a clock period is ns, us, ms or s" :
			      "the period of a hardware event is a plain number of events, or @HZ";
			goto bad;
		}
		if (period > UINT64_MAX / units[i].ns) {
			why = "the period is too long";
			goto bad;
		}
		period *= units[i].ns;
	}
	why = check_period(event, flags, period);
	if (why)
		goto bad;
	sp->event = event;
	sp->flags = (sp->flags & ~(uint32_t)(KTAU_LIB_SAMPLE_FREQ | KTAU_LIB_SAMPLE_NO_USER |
					     KTAU_LIB_SAMPLE_NO_KERNEL)) | flags | mode;
	sp->period = period;
	return 0;
bad:
	if (whyp)
		*whyp = why;
	return -EINVAL;
}

int ktau_sample_start(struct ktau *k, pid_t tid, const struct ktau_sample_spec *sp)
{
	struct ktau_sample_attr a;

	if (ktau_sample_check(sp) || tid < 0)
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.flags = sp->flags;
	a.tid = tid;
	a.event = sp->event;
	a.period = sp->period;
	a.capacity = sp->capacity;
	a.watermark = sp->watermark;
	a.signo = sp->signo;
	return ioctl(ktau__fd(k), KTAU_IOC_SAMPLE_START, &a) ? -errno : 0;
}

int ktau_sample_decode(const void *buf, size_t len, pid_t tid, struct ktau_sample_rec *out,
		       size_t max)
{
	const unsigned char *p = buf;
	struct ktau_sample s;
	size_t i, n;

	if (len % sizeof(s))
		return -EBADMSG;
	n = len / sizeof(s);
	for (i = 0; i < n; i++) {
		memcpy(&s, p + i * sizeof(s), sizeof(s));
		/* User mode and user_mode go together; no ID is 0. */
		if ((s.flags & ~(uint32_t)KTAU_SAMPLE_USER) || !s.id ||
		    !(s.flags & KTAU_SAMPLE_USER) != (s.id != KTAU_ID_USER))
			return -EBADMSG;
	}
	if (n > max)
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		memcpy(&s, p + i * sizeof(s), sizeof(s));
		memset(&out[i], 0, sizeof(out[i]));
		out[i].ip = s.ip;
		out[i].time_ns = s.time_ns;
		out[i].id = s.id;
		out[i].user = !!(s.flags & KTAU_SAMPLE_USER);
		out[i].tid = tid;
	}
	return (int)n;
}

static int sample_io(struct ktau *k, pid_t tid, struct ktau_sample_rec *v, size_t max,
		     struct ktau_sample_stats *st, unsigned long cmd)
{
	struct ktau_sample_read r;
	struct ktau_sample *raw = NULL;
	int ret;

	if (tid < 0 || (max && !v))
		return -EINVAL;
	if (max > KTAU_SAMPLE_MAX_CAPACITY)
		max = KTAU_SAMPLE_MAX_CAPACITY;
	if (max) {
		raw = malloc(max * sizeof(*raw));
		if (!raw)
			return -ENOMEM;
	}
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	r.tid = tid;
	r.buf = (uintptr_t)raw;
	r.max = max;
	ret = ioctl(ktau__fd(k), cmd, &r) ? -errno : 0;
	if (!ret && r.nread > max)
		ret = -EBADMSG;
	if (!ret && r.nread && raw)
		ret = ktau_sample_decode(raw, (size_t)r.nread * sizeof(*raw),
					 tid ? tid : gettid(), v, max);
	free(raw);
	if (ret < 0)
		return ret;
	if (st) {
		memset(st, 0, sizeof(*st));
		st->taken = r.taken;
		st->lost = r.lost;
		st->signals = r.signals;
		st->buffered = r.buffered;
	}
	return (int)r.nread;
}

int ktau_sample_read(struct ktau *k, pid_t tid, struct ktau_sample_rec *v, size_t max,
		     struct ktau_sample_stats *st)
{
	return sample_io(k, tid, v, max, st, KTAU_IOC_SAMPLE_READ);
}

int ktau_sample_stop(struct ktau *k, pid_t tid, struct ktau_sample_rec *v, size_t max,
		     struct ktau_sample_stats *st)
{
	return sample_io(k, tid, v, max, st, KTAU_IOC_SAMPLE_STOP);
}

const char *ktau_sample_strerror(int err, int start)
{
	switch (-err) {
	case EINVAL:
		return start ? "the kernel refused the arguments (event, period, buffer capacity, "
			       "watermark or signal)" : "the kernel refused the read's arguments";
	case EACCES:
	case EPERM:
		return start ? "not permitted (kernel.perf_event_paranoid): samples in the kernel "
			       "need CAP_PERFMON unless perf_event_paranoid <= 1, another user's "
			       "thread needs CAP_PERFMON, and at perf_event_paranoid 3 any sampling "
			       "needs CAP_SYS_ADMIN; sample user mode only, or run as root" :
			       "permission denied: another user's thread needs CAP_PERFMON or "
			       "ptrace access";
	case EBUSY:
		return "the thread is already sampled (by this or another tool)";
	case ENOENT:
		return start ? "the event does not exist on this machine (no hardware PMU: use "
			       "cpu-clock or task-clock)" :
			       "the thread is not sampled (sampling ends at its exec and exit)";
	case ESRCH:
		return "the thread does not exist (any more)";
	case ENOTTY:
		return "this kernel's KTAU cannot sample (sampling needs KTAU ABI 1.1)";
	case EOPNOTSUPP:
		return "the PMU cannot sample this event";
	default:
		return ktau_strerror(err);
	}
}

/* ---- Counts per place ---------------------------------------------------- */

struct ktau_sample_profile {
	struct ktau_sample_place *v;
	size_t n, cap;
	uint32_t *idx;		/* open addressing: index + 1, 0 empty */
	size_t icap;
	uint64_t total;
	unsigned int flags;	/* KTAU_LIB_PROFILE_* */
};

struct ktau_sample_profile *ktau_sample_profile_new(void)
{
	return calloc(1, sizeof(struct ktau_sample_profile));
}

int ktau_sample_profile_set_flags(struct ktau_sample_profile *p, unsigned int flags)
{
	if (!p || (flags & ~(unsigned int)KTAU_LIB_PROFILE_LINES))
		return -EINVAL;
	p->flags = flags;
	return 0;
}

void ktau_sample_profile_free(struct ktau_sample_profile *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++)
		free((char *)p->v[i].sym);
	free(p->v);
	free(p->idx);
	free(p);
}

static uint32_t place_hash(const struct ktau_sample_place *pl)
{
	uint32_t h = 2166136261u ^ (uint32_t)pl->tid;
	const char *s;

	h = (h * 16777619u) ^ pl->id;
	h = (h * 16777619u) ^ pl->user;
	for (s = pl->sym ? pl->sym : ""; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static int same_place(const struct ktau_sample_place *a, const struct ktau_sample_place *b)
{
	return a->tid == b->tid && a->id == b->id && a->user == b->user &&
	       !a->sym == !b->sym && (!a->sym || !strcmp(a->sym, b->sym));
}

static int grow_index(struct ktau_sample_profile *p)
{
	size_t cap = p->icap ? p->icap * 2 : 256, i, j;
	uint32_t *idx;

	if (cap > UINT32_MAX)
		return -ENOMEM;
	idx = calloc(cap, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (i = 0; i < p->n; i++) {
		for (j = place_hash(&p->v[i]) & (cap - 1); idx[j]; j = (j + 1) & (cap - 1))
			;
		idx[j] = i + 1;
	}
	free(p->idx);
	p->idx = idx;
	p->icap = cap;
	return 0;
}

int ktau_sample_profile_add(struct ktau_sample_profile *p, const struct ktau_sample_place *pl)
{
	struct ktau_sample_place *np;
	size_t j;
	char *sym = NULL;

	if (2 * (p->n + 1) > p->icap && grow_index(p))
		return -ENOMEM;
	for (j = place_hash(pl) & (p->icap - 1); p->idx[j]; j = (j + 1) & (p->icap - 1)) {
		np = &p->v[p->idx[j] - 1];
		if (same_place(np, pl)) {
			np->count += pl->count;
			if (!np->pid)
				np->pid = pl->pid;
			p->total += pl->count;
			return 0;
		}
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;

		np = realloc(p->v, cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		p->v = np;
		p->cap = cap;
	}
	if (pl->sym) {
		sym = strdup(pl->sym);
		if (!sym)
			return -ENOMEM;
	}
	np = &p->v[p->n];
	*np = *pl;
	np->sym = sym;
	p->idx[j] = ++p->n;
	p->total += pl->count;
	return 0;
}

/* The longest "[SAMPLE] <symbol>" row name (ktau__sample_rows). */
#define SROW_MAX	511
#define SROW_PREFIX	"[SAMPLE] "

/*
 * With KTAU_LIB_PROFILE_LINES, the name of user code that has a source
 * line: "function [{file} {line}]", as TAU's own samples. The function is
 * cut, never the line, so that the row's name keeps it.
 */
static void add_srcline(char *name, size_t size, struct ktau_usyms *u, uint64_t ip)
{
	char file[4096], sfx[4200];
	size_t room = size - 1 < SROW_MAX - strlen(SROW_PREFIX) ? size - 1 :
		      SROW_MAX - strlen(SROW_PREFIX);
	size_t fn = strlen(name);
	int line = ktau_usyms_srcline(u, ip, file, sizeof(file)), len;

	if (line <= 0)
		return;
	len = snprintf(sfx, sizeof(sfx), " [{%s} {%d}]", file, line);
	if (len < 0 || (size_t)len >= sizeof(sfx) || (size_t)len + 1 > room)
		return;
	if (fn > room - len)
		fn = room - len;
	memcpy(name + fn, sfx, len + 1);
}

int ktau__srcline_split(const char *sym, size_t *fn, const char **file, size_t *flen,
			unsigned long *line)
{
	size_t n = strlen(sym), d;
	const char *o = NULL, *q;

	/* "... [{FILE} {LINE}]": the digits of LINE, back from its "}]". */
	if (n < 10 || strcmp(sym + n - 2, "}]"))
		return 0;
	for (d = n - 2; d > 0 && sym[d - 1] >= '0' && sym[d - 1] <= '9'; d--)
		;
	if (d == n - 2 || sym[d] == '0' || d < 3 || memcmp(sym + d - 3, "} {", 3))
		return 0;
	/* The last " [{" before it, after a function name. */
	for (q = strstr(sym, " [{"); q && q < sym + d - 3; q = strstr(q + 1, " [{"))
		o = q;
	if (!o || o == sym || o + 3 == sym + d - 3)
		return 0;
	*fn = (size_t)(o - sym);
	*file = o + 3;
	*flen = (size_t)(sym + d - 3 - (o + 3));
	*line = strtoul(sym + d, NULL, 10);
	return 1;
}

int ktau_sample_profile_add_samples(struct ktau_sample_profile *p,
				    const struct ktau_sample_rec *v, size_t n,
				    struct ktau_usyms *u, const struct ktau_ksyms *ks)
{
	struct ktau_sample_place pl;
	char name[1024];
	size_t i;
	int ret, named;

	for (i = 0; i < n; i++) {
		memset(&pl, 0, sizeof(pl));
		pl.tid = v[i].tid;
		pl.pid = v[i].pid;
		pl.id = v[i].id;
		pl.user = v[i].user;
		pl.count = 1;
		/* A kernel address that kallsyms does not name: no symbol. */
		named = ktau_sample_name(&v[i], u, ks, NULL, name, sizeof(name));
		if (named > 0 && v[i].user && (p->flags & KTAU_LIB_PROFILE_LINES))
			add_srcline(name, sizeof(name), u, v[i].ip);
		if (named > 0 || v[i].user)
			pl.sym = name;
		ret = ktau_sample_profile_add(p, &pl);
		if (ret)
			return ret;
	}
	return 0;
}

const struct ktau_sample_place *ktau_sample_profile_places(const struct ktau_sample_profile *p,
							   size_t *n)
{
	*n = p ? p->n : 0;
	return p ? p->v : NULL;
}

uint64_t ktau_sample_profile_total(const struct ktau_sample_profile *p)
{
	return p ? p->total : 0;
}

/* ---- For the TAU writer ---------------------------------------------------- */

static int cmp_srow(const void *a, const void *b)
{
	return strcmp(((const struct ktau__srow *)a)->name, ((const struct ktau__srow *)b)->name);
}

void ktau__srows_free(struct ktau__srow *rows, size_t n)
{
	size_t i;

	for (i = 0; rows && i < n; i++)
		free(rows[i].name);
	free(rows);
}

int ktau__sample_rows(const struct ktau_sample_profile *p, const struct ktau_task *t,
		      struct ktau__srow **rowsp, size_t *np)
{
	struct ktau__srow *rows = NULL;
	char raw[600], name[SROW_MAX + 1];
	size_t i, n = 0, m;

	*rowsp = NULL;
	*np = 0;
	if (!p || !p->n || (t->flags & KTAU_TASK_AGGREGATE))
		return 0;
	for (i = 0; i < p->n; i++) {
		const struct ktau_sample_place *pl = &p->v[i];

		if (!pl->sym || ((t->flags & KTAU_TASK_PROCESS) ? pl->pid != t->pid
								 : pl->tid != t->tid))
			continue;
		if (!rows) {
			rows = calloc(p->n - i, sizeof(*rows));
			if (!rows)
				return -ENOMEM;
		}
		snprintf(raw, sizeof(raw), SROW_PREFIX "%s%s", pl->user ? "" : "[k] ", pl->sym);
		ktau__clean_name(name, sizeof(name), raw);
		rows[n].name = strdup(name);
		rows[n].count = pl->count;
		if (!rows[n++].name) {
			ktau__srows_free(rows, n);
			return -ENOMEM;
		}
	}
	if (!n)
		return 0;
	/* Places that differ only in what cleaning took out become one row. */
	qsort(rows, n, sizeof(*rows), cmp_srow);
	for (i = 1, m = 1; i < n; i++) {
		if (!strcmp(rows[i].name, rows[m - 1].name)) {
			rows[m - 1].count += rows[i].count;
			free(rows[i].name);
		} else {
			rows[m++] = rows[i];
		}
	}
	*rowsp = rows;
	*np = m;
	return 0;
}

int ktau__has_samples(const struct ktau_snap *snap, const struct ktau_tau_opts *opts)
{
	size_t i, j;

	if (opts && ktau_sample_profile_total(opts->samples))
		return 1;
	for (i = 0; i < snap->ntasks; i++)
		for (j = 0; j < snap->tasks[i].nentries; j++)
			if (snap->tasks[i].entries[j].samples)
				return 1;
	return 0;
}

void ktau__metric_name(char *dst, size_t size, const char *src)
{
	size_t i;

	/* At most 37 bytes (pprof reads it into char[64] after 27 others). */
	if (size > 38)
		size = 38;
	for (i = 0; src && src[i] && i + 1 < size; i++) {
		char c = src[i];

		dst[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			 c == '-' || c == '.' || c == '+' ? c : '_';
	}
	dst[i] = '\0';
	/* Not empty, and no second TIME metric. */
	if (!i || strstr(dst, "TIME"))
		snprintf(dst, size, "SAMPLES");
}
