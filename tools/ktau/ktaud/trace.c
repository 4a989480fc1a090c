// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud trace: trace mode (ABI 1.5). Runs a command (or attaches to the
 * threads of a process), drains the kernel's per-thread trace buffers while
 * it runs, and writes into one directory the raw trace, an OTF2 archive,
 * Chrome/Perfetto JSON, a gnuplot timeline and the TAU profile of the same
 * run; --input converts a saved raw trace, --check reads an archive back
 * and compares it with the profile, --merge joins the traces of MPI ranks.
 * --sample also samples the command's threads (sample.c's session, which
 * then runs the command under ptrace and drains the trace at its ticks),
 * or with -p the process's threads (the sampler's attach mode, drained in
 * the -p loop): its samples go into the raw file, the OTF2 archive, the
 * JSON, the TAU profile and the gnuplot timeline (a dot each).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/ktau.h>

#include "internal.h"
#include "ktaud.h"
#include "sample.h"
#include "trace.h"

#define DEFAULT_CAPACITY	65536

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud trace [options] [--] <command> [args...]\n"
"       ktaud trace [options] -p PID -d SECONDS\n"
"       ktaud trace [options] -a -d SECONDS\n"
"       ktaud trace --input RAW [-o DIR]\n"
"       ktaud trace --check DIR\n"
"       ktaud trace --merge -o OUT DIR...\n\n"
"Trace every kernel routine that the command and every task it starts\n"
"complete (or the threads of process PID for SECONDS): one record per call\n"
"with its start and end, drained while it runs. Writes into DIR:\n"
"  trace.ktrace        the raw trace (chunks as the kernel gave them, the\n"
"                      registry, the profile); 'ktaud trace --input' reads it\n"
"  traces.otf2 (.def, traces/)  the OTF2 archive (Vampir, otf2-print): one\n"
"                      location per thread, grouped per process; kernel\n"
"                      routines as regions in groups 'KTAU <group>'\n"
"  trace.json          Chrome/Perfetto trace events (ui.perfetto.dev)\n"
"  timeline.png        the busiest threads over time (gnuplot)\n"
"  profile.N.C.T       the TAU profile of the same run (paraprof, pprof)\n"
"Under an MPI launcher every name has the rank: trace.RANK.ktrace,\n"
"traces.RANK.otf2, ...; ranks can share DIR. DIR must not exist, or hold\n"
"only what an earlier 'ktaud trace' wrote there (which is replaced).\n\n"
"  -o, --output DIR     the directory (default ktau-trace; %%r the MPI rank,\n"
"                       %%p ktaud's pid, %%h the host name)\n"
"  -g, --groups LIST    groups to trace, comma-separated (syscall, irq,\n"
"                       softirq, sched, fault, signal, dynamic, kvm; default:\n"
"                       all)\n"
"  -b, --buffer N       records per thread buffer, a power of two (default\n"
"                       %d, at most %u); a full buffer loses records,\n"
"                       counted and shown with their time span\n"
"  -i, --interval S     drain every S seconds (default 0.05)\n"
"  -p, --pid PID        trace the threads of a running process ...\n"
"  -a, --all            trace the whole system: every user thread but ktaud's,\n"
"                       and every task started meanwhile (CAP_PERFMON; KTAU\n"
"                       ABI 1.6) ...\n"
"  -d, --duration S     ... for S seconds (or until it exits; or until\n"
"                       SIGINT/SIGTERM/SIGHUP)\n"
"  -n, --top N          threads in the timeline (default 8)\n"
"      --sample SPEC    also sample the command's threads (with -p: the\n"
"                       process's and its children's; with -a: every user\n"
"                       thread; either way at most 1024 at once, 65536 in\n"
"                       all), as 'ktaud sample -e SPEC' does\n"
"                       (EVENT[:PERIOD][:u|:k]): every sample in\n"
"                       the timeline, an OTF2 metric \"ktau samples EVENT\" with\n"
"                       its function and KTAU routine, a JSON instant of\n"
"                       category \"sample\"; and the sampler's summary\n"
"      --input RAW      convert a raw trace file into DIR\n"
"      --check DIR      read DIR's OTF2 archives back (libotf2) and check them:\n"
"                       nesting and time order per thread, and per routine of\n"
"                       each thread without losses, pairs = the profile's calls\n"
"                       and inclusive time = the profile's (1 ns per call)\n"
"      --merge          join the traces in the DIRs (MPI ranks) into one\n"
"                       archive in OUT, a system tree node per rank\n"
"  -q, --quiet          no progress and summary\n"
"  -h, --help           this help\n\n"
"Exit status: the command's (as 'ktaud run'), or 0, 1 failure, 2 usage,\n"
"3 no KTAU or no trace mode, 4 permission, 5 no such process; --check:\n"
"1 when a check fails.\n", DEFAULT_CAPACITY, KTAU_LIB_TRACE_MAX_CAPACITY);
}

struct topts {
	const char *dir;
	uint64_t groups;
	uint32_t capacity;
	double interval;
	unsigned long top;
	int quiet;
	int rank;		/* -1: none */
	pid_t self;		/* ktaud's thread: its records are left out */
	/* the run */
	struct ktau_trace *t;
	struct ktau_trace_file *tf;
	int bad_stream;
	double t0, last_progress;
	int progress_shown;
	/*
	 * -- CMD: the child's own records before its exec are not the
	 * command's. The child writes the time right before its execv() into
	 * *exec_ns (CLOCK_MONOTONIC, like the records; a shared page, no
	 * system call). Its first thread's chunks are held until that time
	 * is there; then records that ended before it are left out (kept in
	 * cut[] to take them out of its profile too), until one ends after.
	 */
	pid_t cut_pid;		/* 0: nothing to cut */
	int cut_done;
	uint64_t *exec_ns;	/* shared with the child; 0: not yet */
	uint64_t cut_at;
	char *held;
	size_t held_len, held_cap;
	struct ktau_trace_rec *cut;
	size_t ncut;
	/*
	 * --sample: the sampler (sample.c), which traces the command with
	 * ptrace and drains the trace session at its ticks (with -p: started
	 * on the process's threads and drained in the -p loop); the samples
	 * of each of its threads (by its index), named as they come.
	 */
	struct ssess *ss;
	struct ktau_trace_session *sess;
	int tick_rc;
	struct sbucket *sb;
	size_t nsb;
	struct trace_strtab snames;
};

struct sbucket {
	struct ktau_trace_sample *v;
	size_t n, cap;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

/* File names: NAME[.RANK].EXT */
static void fname(char *buf, size_t size, const char *stem, int rank, const char *ext)
{
	if (rank >= 0)
		snprintf(buf, size, "%s.%d%s", stem, rank, ext);
	else
		snprintf(buf, size, "%s%s", stem, ext);
}

static int parse_groups(const char *s, uint64_t *mask)
{
	char *d = strdup(s), *tok, *save = NULL;
	int g, ret = 0;

	*mask = 0;
	if (!d)
		return -1;
	for (tok = strtok_r(d, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all")) {
			*mask = 0;
			free(d);
			return 0;
		}
		g = ktau_group_parse(tok);
		if (g < 0) {
			ret = -1;
			break;
		}
		*mask |= 1ULL << g;
	}
	free(d);
	return ret || !*mask ? -1 : 0;
}

static void progress(struct topts *o, int final)
{
	double t = now_s();

	if (o->quiet || (!final && (t - o->t0 < 2 || t - o->last_progress < 2)))
		return;
	if (final && !o->progress_shown)
		return;
	o->last_progress = t;
	o->progress_shown = 1;
	fprintf(stderr, "%sktaud trace: %.1f s: %llu records, %.1f MB, %llu lost%s",
		isatty(2) ? "\r" : "", t - o->t0, (unsigned long long)o->t->nrecs,
		o->t->bytes / 1e6, (unsigned long long)o->t->stats.lost,
		isatty(2) && !final ? "" : "\n");
}

/* Read what the session has: into the raw file and the model. 1 when a
 * read returned data, 0 when nothing was buffered, or an exit code < 0. */
/* A chunk into the raw file and the model. */
static int keep_chunk(struct topts *o, const void *chunk, size_t len)
{
	int ret = ktau_trace_file_append(o->tf, chunk, len);

	if (ret)
		return -report(ret, "write the raw trace");
	ret = ktau_trace_add_chunks(o->t, chunk, len);
	if (ret < 0)
		return -report(ret, "keep the trace");
	return 0;
}

/*
 * A chunk of the child's first thread without its records that ended
 * before @cut (in place); those go to o->cut. Once a record ends after
 * @cut, so do all later ones: nothing more to cut.
 */
static int cut_chunk(struct topts *o, char *c, uint64_t cut)
{
	const size_t hs = sizeof(struct ktau_trace_chunk), rs = sizeof(struct ktau_trace_rec);
	struct ktau_trace_chunk h;
	struct ktau_trace_rec r, *v;
	size_t i, n = 0;

	memcpy(&h, c, hs);
	for (i = 0; i < h.nrecs; i++) {
		memcpy(&r, c + hs + i * rs, rs);
		if (r.end_ns >= cut) {
			memcpy(c + hs + n++ * rs, &r, rs);
			o->cut_done = 1;
			continue;
		}
		v = realloc(o->cut, (o->ncut + 1) * sizeof(*v));
		if (!v)
			return -report(-ENOMEM, "trace");
		o->cut = v;
		o->cut[o->ncut++] = r;
	}
	/* An empty chunk still carries the thread's flags and lost count. */
	h.nrecs = n;
	h.size = hs + n * rs;
	memcpy(c, &h, hs);
	return keep_chunk(o, c, h.size);
}

/* The held chunks, cut at @cut (UINT64_MAX: nothing of them is kept). */
static int flush_held(struct topts *o, uint64_t cut)
{
	size_t off = 0;
	int ret = 0;

	while (!ret && off + sizeof(struct ktau_trace_chunk) <= o->held_len) {
		struct ktau_trace_chunk h;

		memcpy(&h, o->held + off, sizeof(h));
		ret = cut_chunk(o, o->held + off, cut);
		off += h.size;
	}
	free(o->held);
	o->held = NULL;
	o->held_len = o->held_cap = 0;
	return ret;
}

/* The time of the child's exec, once it wrote it. */
static uint64_t exec_time(struct topts *o)
{
	if (!o->cut_at && o->exec_ns)
		o->cut_at = __atomic_load_n(o->exec_ns, __ATOMIC_ACQUIRE);
	return o->cut_at;
}

/* A chunk of the child's first thread while records may be cut. */
static int first_thread_chunk(struct topts *o, const void *chunk, size_t len)
{
	char *c;
	int ret;

	if (o->held_len + len > o->held_cap) {
		size_t cap = (o->held_len + len) * 2;

		c = realloc(o->held, cap);
		if (!c)
			return -report(-ENOMEM, "trace");
		o->held = c;
		o->held_cap = cap;
	}
	memcpy(o->held + o->held_len, chunk, len);
	o->held_len += len;
	if (!exec_time(o))
		return 0;	/* held */
	ret = flush_held(o, o->cut_at);
	return ret;
}

/*
 * One more call of @id cut from thread @tid's profile, in t->cuts (the raw
 * file keeps them: --check allows each its own rounding). 0 or -ENOMEM.
 */
static int note_cut(struct ktau_trace *t, pid_t tid, uint32_t id)
{
	struct ktau_trace_cut *v;
	size_t i;

	for (i = 0; i < t->ncuts; i++)
		if (t->cuts[i].tid == tid && t->cuts[i].id == id) {
			t->cuts[i].calls++;
			return 0;
		}
	v = realloc(t->cuts, (t->ncuts + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	t->cuts = v;
	for (i = t->ncuts; i > 0 && (v[i - 1].tid > tid ||
				     (v[i - 1].tid == tid && v[i - 1].id > id)); i--)
		v[i] = v[i - 1];
	v[i] = (struct ktau_trace_cut){ .tid = tid, .id = id, .calls = 1 };
	t->ncuts++;
	return 0;
}

/*
 * The records left out of the child's trace, out of its final profile
 * too: per call its count, inclusive time and exclusive time (less the
 * calls nested in it, which were left out as well). A routine left with
 * no call is left out. Each duration was rounded to the nanosecond on its
 * own, unlike the profile's sum: the calls cut are kept in t->cuts.
 */
static void cut_profile(struct topts *o, pid_t pid)
{
	struct ktau_snap *p = o->t->profile;
	struct ktau_task *t = NULL;
	size_t i, j, k;
	int nomem = 0;

	for (i = 0; p && i < p->ntasks; i++)
		if (p->tasks[i].tid == pid && p->tasks[i].pid == pid)
			t = &p->tasks[i];
	if (!t)
		return;
	for (i = 0; i < o->ncut; i++) {
		const struct ktau_trace_rec *r = &o->cut[i];
		uint64_t incl = r->end_ns - r->start_ns, inner = 0;
		struct ktau_func_stat *e = NULL;

		if (r->kind != KTAU_TRACE_CALL)
			continue;
		for (j = 0; j < o->ncut; j++) {
			const struct ktau_trace_rec *c = &o->cut[j];

			if (c->kind == KTAU_TRACE_CALL && c->depth == r->depth + 1 &&
			    c->start_ns >= r->start_ns && c->end_ns <= r->end_ns)
				inner += c->end_ns - c->start_ns;
		}
		for (k = 0; k < t->nentries; k++)
			if (t->entries[k].id == r->id)
				e = &t->entries[k];
		if (!e)
			continue;
		if (e->count && note_cut(o->t, pid, r->id) && !nomem++)
			err_msg("warning: out of memory: --check of this trace may see the "
				"rounding of the calls cut before the exec as mismatches");
		e->count -= e->count ? 1 : 0;
		e->incl_ns -= e->incl_ns > incl ? incl : e->incl_ns;
		incl = incl > inner ? incl - inner : 0;
		e->excl_ns -= e->excl_ns > incl ? incl : e->excl_ns;
	}
	for (i = 0, k = 0; i < t->nentries; i++) {
		if (!t->entries[i].count && !t->entries[i].samples)
			continue;
		if (t->entries[i].excl_ns > t->entries[i].incl_ns)
			t->entries[i].excl_ns = t->entries[i].incl_ns;
		t->entries[k++] = t->entries[i];
	}
	t->nentries = k;
}

static int drain_once(struct ktau_trace_session *s, struct topts *o)
{
	struct ktau_trace_chunk_info ci;
	const void *buf;
	size_t off = 0, before;
	ssize_t n;
	int ret;

	n = ktau_trace_read(s, &buf);
	if (n < 0)
		return -report((int)n, "read /proc/ktau/trace");
	if (!n)
		return 0;
	for (;;) {
		before = off;
		ret = ktau_trace_next_chunk(buf, (size_t)n, &off, &ci);
		if (ret <= 0)
			break;
		if (ci.tid == o->self && ci.pid == o->self)
			continue;	/* ktaud's own, before its detach */
		if (o->cut_pid && !o->cut_done && ci.tid == o->cut_pid && ci.pid == o->cut_pid)
			ret = first_thread_chunk(o, (const char *)buf + before, off - before);
		else
			ret = keep_chunk(o, (const char *)buf + before, off - before);
		if (ret < 0)
			return ret;
	}
	if (ret < 0) {
		err_msg("the kernel returned a malformed trace stream: %s (the rest of this read "
			"is left out)", ktau_trace_error());
		o->bad_stream = 1;
	}
	return 1;
}

/*
 * Drain until nothing is buffered: at most 8 reads while it runs, 256 at
 * the end (tasks the command left running may go on writing).
 */
static int drain(struct ktau_trace_session *s, struct topts *o, int all)
{
	int ret, rounds = 0;

	do
		ret = drain_once(s, o);
	while (ret > 0 && ++rounds < (all ? 256 : 8));
	if (ret >= 0)
		ktau_trace_stats(s, &o->t->stats);
	return ret < 0 ? -ret : 0;
}

/* ---- The outputs ------------------------------------------------------ */

/* Run gnuplot with the script on its stdin, its stdout into f. */
static int run_gnuplot(const char *script, size_t len, FILE *out)
{
	int pfd[2], st;
	pid_t pid;
	ssize_t w;

	fflush(out);
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (!pid) {
		dup2(pfd[0], 0);
		dup2(fileno(out), 1);
		execlp("gnuplot", "gnuplot", (char *)NULL);
		_exit(127);
	}
	close(pfd[0]);
	signal(SIGPIPE, SIG_IGN);
	while (len) {
		w = write(pfd[1], script, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		script += w;
		len -= (size_t)w;
	}
	close(pfd[1]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) == 127)
		return -ENOENT;
	return WEXITSTATUS(st) ? -EIO : 0;
}

struct written {
	char otf2[96], json[96], png[96];
	int tau_files;
	uint64_t events;
};

/*
 * The samples of t counted per thread and code, as 'ktaud sample' counts
 * them for its TAU profile (rows "[SAMPLE] function" of the metric of
 * the event); NULL when it has none or out of memory.
 */
static struct ktau_sample_profile *trace_sample_profile(const struct ktau_trace *t)
{
	struct ktau_sample_profile *p;
	size_t j, i;

	if (!t->nsamples || !(p = ktau_sample_profile_new()))
		return NULL;
	for (j = 0; j < t->nsthreads; j++) {
		const struct ktau_trace_sthread *st = &t->sthreads[j];

		for (i = 0; i < st->n && st->first + i < t->nsamples; i++) {
			const struct ktau_trace_sample *x = &t->samples[st->first + i];
			struct ktau_sample_place pl = { .tid = st->tid, .pid = st->pid, .id = x->id,
							.user = x->user, .count = 1 };

			if (x->name < t->nsample_names)
				pl.sym = t->sample_names[x->name];
			else if (x->user)
				pl.sym = "[unknown]";
			if (ktau_sample_profile_add(p, &pl)) {
				ktau_sample_profile_free(p);
				return NULL;
			}
		}
	}
	return p;
}

/* Everything but the raw file, from t, into od. An exit code. */
/*
 * Whether the PNG at @path ends with its IEND chunk: gnuplot does not
 * always say when its writes failed (a file size limit, a full disk).
 * 0, -EFBIG when the file reached the file size limit, else -EIO.
 */
static int png_complete(const char *path)
{
	static const unsigned char iend[8] = { 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82 };
	unsigned char b[8];
	struct stat st = { 0 };
	struct rlimit rl;
	int fd, ok;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	ok = !fstat(fd, &st) && st.st_size >= 8 &&
	     pread(fd, b, sizeof(b), st.st_size - 8) == 8 && !memcmp(b, iend, sizeof(b));
	close(fd);
	if (ok)
		return 0;
	if (!getrlimit(RLIMIT_FSIZE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    (unsigned long long)st.st_size >= (unsigned long long)rl.rlim_cur)
		return -EFBIG;
	return -EIO;
}

static int write_products(struct ktau_outdir *od, struct ktau_trace *t, int rank,
			  unsigned long top, struct written *wr)
{
	char name[80], *script = NULL, title[160];
	struct ktau_trace *tv[1] = { t };
	int ranks[1] = { rank }, ret, rc = EX_KT_OK;
	size_t slen = 0;
	FILE *f;

	memset(wr, 0, sizeof(*wr));
	fname(name, sizeof(name), "traces", rank, "");
	ret = trace_write_otf2(od, name, tv, 1, ranks, &wr->events);
	if (ret) {
		err_msg("the OTF2 archive was not written: %s",
			*ktau_output_error() ? ktau_output_error() : strerror(-ret));
		rc = EX_KT_FAIL;
	} else {
		snprintf(wr->otf2, sizeof(wr->otf2), "%s.otf2", name);
	}

	fname(name, sizeof(name), "trace", rank, ".json");
	f = ktau_outdir_create(od, name);
	ret = f ? trace_write_json(f, t) : -errno;
	if (f && fclose(f) && !ret)
		ret = -errno;
	if (ret) {
		if (f)
			ktau__outdir_discard(od, name);	/* no part of it left */
		err_msg("%s was not written: %s", name,
			f ? strerror(-ret) : ktau_output_error());
		rc = EX_KT_FAIL;
	} else {
		snprintf(wr->json, sizeof(wr->json), "%s", name);
	}

	fname(name, sizeof(name), "timeline", rank, ".png");
	snprintf(title, sizeof(title), "KTAU trace: %s%s%s", t->command,
		 t->hostname[0] ? " on " : "", t->hostname);
	f = open_memstream(&script, &slen);
	ret = f ? trace_timeline_script(f, t, (unsigned int)top, title) : -ENOMEM;
	if (f && fclose(f) && !ret)
		ret = -ENOMEM;
	if (!ret) {
		FILE *png = ktau_outdir_create(od, name);
		char path[4096];

		ret = png ? run_gnuplot(script, slen, png) : -errno;
		if (png && fclose(png) && !ret)
			ret = -errno;
		/* No empty or broken picture is left behind. */
		snprintf(path, sizeof(path), "%s/%s", ktau_outdir_path(od), name);
		if (!ret && png)
			ret = png_complete(path);
		if (ret && png)
			unlink(path);
		if (ret == -ENOENT && png)
			err_msg("no %s: gnuplot is needed to draw it (apt-get install gnuplot-nox; "
				"or 'ktaud trace --input' elsewhere)", name);
		else if (ret) {
			err_msg("%s was not drawn: %s", name,
				png ? strerror(-ret) : ktau_output_error());
			rc = EX_KT_FAIL;
		} else
			snprintf(wr->png, sizeof(wr->png), "%s", name);
	}
	free(script);

	if (t->profile) {
		struct ktau_tau_opts to = { .dense_processes = 1, .has_rank = rank >= 0,
					    .rank = rank };
		const char *meta[] = { "KTAU Trace", wr->otf2[0] ? wr->otf2 : "(none)" };
		struct ktau_sample_profile *sp = NULL;
		struct ktau_sample_spec spec = { 0 };

		to.extra_meta = meta;
		to.nextra = 1;
		/* Sampled (--sample): the samples' metric is their event's, as
		 * 'ktaud run --sample' writes it. */
		if (t->sample_event[0] && !ktau_sample_parse(t->sample_event, &spec, NULL)) {
			to.sample_metric = ktau_sample_event_name(spec.event);
			to.sample_period_ns = ktau_sample_period_ns(&spec);
			to.samples = sp = trace_sample_profile(t);
		}
		ktau_snap_sort(t->profile);
		ret = ktau_write_tau_into(od, t->profile, t->reg, &to);
		ktau_sample_profile_free(sp);
		if (ret < 0) {
			rc = outdir_report(ret, "the TAU profile was not written");
		} else {
			wr->tau_files = ret;
		}
	}
	return rc;
}

static void summary(const struct topts *o, const struct ktau_trace *t, const char *dir,
		    const struct written *wr, const char *raw)
{
	size_t i, nproc = 0, j;

	if (o->quiet)
		return;
	for (i = 0; i < t->nthreads; i++) {
		for (j = 0; j < i; j++)
			if (t->threads[j].pid == t->threads[i].pid)
				break;
		nproc += j == i;
	}
	fprintf(stderr, "ktaud trace: %zu thread%s in %zu process%s, %llu records (%.1f MB), "
		"%llu lost", t->nthreads, t->nthreads == 1 ? "" : "s", nproc,
		nproc == 1 ? "" : "es", (unsigned long long)t->nrecs, t->bytes / 1e6,
		(unsigned long long)t->stats.lost);
	if (t->stats.refused || t->stats.denied)
		fprintf(stderr, ", %llu tasks refused (session limit), %llu denied (set-user-ID)",
			(unsigned long long)t->stats.refused, (unsigned long long)t->stats.denied);
	if (raw[0])
		fprintf(stderr, "\nktaud trace: in %s/: %s (raw)", dir, raw);
	else
		fprintf(stderr, "\nktaud trace: in %s/: no raw copy", dir);
	if (wr->otf2[0])
		fprintf(stderr, ", %s (OTF2, %llu events: Vampir, otf2-print)", wr->otf2,
			(unsigned long long)wr->events);
	if (wr->json[0])
		fprintf(stderr, ", %s (ui.perfetto.dev)", wr->json);
	if (wr->png[0])
		fprintf(stderr, ", %s", wr->png);
	if (wr->tau_files)
		fprintf(stderr, ", %d TAU profile files (paraprof)", wr->tau_files);
	fputc('\n', stderr);
	for (i = 0, j = 0; i < t->nthreads; i++)
		j += t->threads[i].disorder;
	if (j)
		fprintf(stderr, "ktaud trace: warning: %zu records ended before the record before "
			"them (the kernel gives them in end order): the clock went back?\n", j);
	if (t->stats.lost)
		fprintf(stderr, "ktaud trace: %llu records were lost (full buffers): a larger -b, "
			"a shorter -i, or fewer groups (-g) keep them\n",
			(unsigned long long)t->stats.lost);
}

static void fill_meta(struct ktau_trace *t, struct topts *o, char **cmd, int argc)
{
	struct ktau_snap tmp = { 0 };
	size_t l = 0;
	int i;

	ktau_snap_fill_host(&tmp);
	memcpy(t->hostname, tmp.hostname, sizeof(t->hostname));
	memcpy(t->release, tmp.release, sizeof(t->release));
	for (i = 0; cmd && i < argc && l + 1 < sizeof(t->command); i++) {
		snprintf(t->command + l, sizeof(t->command) - l, "%s%s", i ? " " : "", cmd[i]);
		l = strlen(t->command);
	}
	t->rank = o->rank;
	t->groups = o->groups;
	t->realtime_ns = now_ns(CLOCK_REALTIME);
	t->start_ns = now_ns(CLOCK_MONOTONIC);
	if (o->ss) {
		ssess_event(o->ss, t->sample_event, sizeof(t->sample_event));
		t->sample_flags = ssess_flags(o->ss);
	}
}

/* Open the directory and the raw file for a run. An exit code. */
static int open_run(struct topts *o, struct ktau_outdir **od, FILE **rawf, char *raw,
		    size_t rawsize)
{
	int ret;

	ret = ktau_outdir_open(o->dir, "trace", o->rank, 0, od);
	if (ret)
		return outdir_report(ret, "nothing was traced");
	fname(raw, rawsize, "trace", o->rank, ".ktrace");
	*rawf = ktau_outdir_create(*od, raw);
	if (!*rawf) {
		err_msg("%s", ktau_output_error());
		ktau_outdir_close(*od);
		return EX_KT_FAIL;
	}
	ret = ktau_trace_file_start(fileno(*rawf), o->t, &o->tf);
	if (ret) {
		err_msg("cannot write %s/%s: %s", o->dir, raw, strerror(-ret));
		fclose(*rawf);
		ktau_outdir_close(*od);
		return EX_KT_FAIL;
	}
	return EX_KT_OK;
}

/* After the run: the raw file completed, the products, the summary. */
static int finish_run(struct topts *o, struct ktau_outdir *od, FILE *rawf, const char *raw)
{
	struct written wr;
	int ret, rc = EX_KT_OK;

	o->t->end_ns = now_ns(CLOCK_MONOTONIC);
	o->t->reg = load_registry();
	ret = ktau_trace_file_finish(o->tf, o->t);
	o->tf = NULL;
	if (fclose(rawf) && !ret)
		ret = -errno;
	if (ret) {
		err_msg("cannot complete %s/%s: %s", o->dir, raw, strerror(-ret));
		rc = EX_KT_FAIL;
	}
	progress(o, 1);
	ret = write_products(od, o->t, o->rank, o->top, &wr);
	if (ret)
		rc = ret;
	ret = ktau_outdir_close(od);
	if (ret && !rc)
		rc = report(ret, "close the output directory");
	summary(o, o->t, o->dir, &wr, raw);
	if (o->bad_stream && !rc)
		rc = EX_KT_FAIL;
	return rc;
}

static int read_file(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "re");
	size_t cap = 1 << 16, n = 0, r;
	char *b = malloc(cap), *nb;

	while (f && b && (r = fread(b + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			nb = realloc(b, cap * 2);
			if (!nb)
				break;
			b = nb;
			cap *= 2;
		}
	}
	if (!f || !b || ferror(f) || (n == cap)) {
		int e = f && b ? EIO : errno ? errno : ENOMEM;

		if (f)
			fclose(f);
		free(b);
		return -e;
	}
	fclose(f);
	*buf = b;
	*len = n;
	return 0;
}

/* The user routines that libktau's runtime wrote into dir; dir removed. */
static void add_user_routines(struct ktau_trace *t, const char *dir)
{
	struct dirent *de;
	char path[4096 + 256];
	DIR *d = opendir(dir);
	int ret;

	while (d && (de = readdir(d))) {
		char *buf = NULL;
		size_t len = 0;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (strncmp(de->d_name, "user.", 5) || !strstr(de->d_name, ".ktuser")) {
			err_msg("warning: %s is not the runtime's: left as it is", path);
			continue;
		}
		ret = read_file(path, &buf, &len);
		if (!ret) {
			ret = ktau_trace_add_user(t, buf, len);
			free(buf);
		}
		if (ret)
			err_msg("warning: the user routines in %s are left out: %s", path,
				*ktau_trace_error() ? ktau_trace_error() : strerror(-ret));
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static int attach_error(int err, const char *who)
{
	switch (-err) {
	case ENOENT:
		if (access("/proc/ktau/version", F_OK) == 0)
			err_msg("cannot trace %s: this kernel has KTAU but no trace mode "
				"(/proc/ktau/trace is missing); boot a kernel built with "
				"CONFIG_KTAU_TRACE=y", who);
		else
			err_msg("cannot trace %s: this kernel has no KTAU (/proc/ktau is missing); "
				"boot a kernel built with CONFIG_KTAU=y", who);
		return EX_KT_NOKTAU;
	case ENOTTY:
	case EPROTO:
		err_msg("cannot trace %s: %s", who, *ktau_trace_error() ? ktau_trace_error() :
			"this kernel has no KTAU trace mode (ABI 1.5)");
		return EX_KT_NOKTAU;
	case EPERM:
	case EACCES:
		err_msg("cannot trace %s: permission denied (another user's process needs "
			"CAP_PERFMON or ptrace access)", who);
		return EX_KT_PERM;
	case ESRCH:
		err_msg("cannot trace %s: no such process", who);
		return EX_KT_GONE;
	default:
		err_msg("cannot trace %s: %s", who, *ktau_trace_error() ? ktau_trace_error() :
			strerror(-err));
		return EX_KT_FAIL;
	}
}

/* ---- --sample: the sampler's samples into the trace ------------------ */

/* A batch of samples of the sampler's thread th: named now, kept. */
static int on_samples(void *arg, size_t th, pid_t tid, pid_t pid, const struct ktau_sample_rec *v,
		      size_t n, struct ktau_usyms *u, const struct ktau_ksyms *ks)
{
	struct topts *o = arg;
	struct sbucket *b;
	char name[512];
	size_t i;
	long r;

	(void)tid;
	(void)pid;
	if (th >= o->nsb) {
		size_t cap = th + 16;
		struct sbucket *nb = realloc(o->sb, cap * sizeof(*nb));

		if (!nb)
			return -ENOMEM;
		memset(nb + o->nsb, 0, (cap - o->nsb) * sizeof(*nb));
		o->sb = nb;
		o->nsb = cap;
	}
	b = &o->sb[th];
	if (b->n + n > b->cap) {
		size_t cap = b->cap * 2 > b->n + n ? b->cap * 2 : b->n + n + 256;
		struct ktau_trace_sample *nv = realloc(b->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		b->v = nv;
		b->cap = cap;
	}
	for (i = 0; i < n; i++) {
		struct ktau_trace_sample *p = &b->v[b->n++];

		p->ip = v[i].ip;
		p->time_ns = v[i].time_ns;
		p->id = v[i].id;
		p->user = v[i].user;
		/* Named while the process's memory map is there; the unnamed
		 * are named by the writers ("[kernel] routine", "[unknown]"). */
		r = ktau_sample_name(&v[i], u, ks, NULL, name, sizeof(name)) == 1 ?
		    trace_str_ref(&o->snames, name) : -1;
		p->name = r >= 0 && r < UINT32_MAX ? (uint32_t)r : UINT32_MAX;
	}
	return 0;
}

/* Every interval of the sampler: the trace session drained. */
static int on_tick(void *arg)
{
	struct topts *o = arg;
	int ret = drain(o->sess, o, 0);

	if (ret) {
		o->tick_rc = ret;
		return ret;
	}
	progress(o, 0);
	return 0;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct ktau_trace_sample *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

static void free_samples(struct topts *o)
{
	size_t i;

	for (i = 0; i < o->nsb; i++)
		free(o->sb[i].v);
	free(o->sb);
	o->sb = NULL;
	o->nsb = 0;
	trace_strtab_free(&o->snames);
	memset(&o->snames, 0, sizeof(o->snames));
}

/*
 * The samples into the trace: per thread the sampler ever sampled, its
 * window (widened to its samples' times) and counters, its samples in
 * time order (a thread without records gets a location of its own in the
 * archive).
 */
static void fill_samples(struct topts *o)
{
	struct ktau_trace *t = o->t;
	struct ssess_thread info;
	size_t n = ssess_nthreads(o->ss), i, nst = 0, total = 0;

	t->sample_flags = ssess_flags(o->ss);
	for (i = 0; i < n; i++)
		if (ssess_thread(o->ss, i, &info)) {
			nst++;
			total += i < o->nsb ? o->sb[i].n : 0;
		}
	t->sthreads = calloc(nst + 1, sizeof(*t->sthreads));
	t->samples = malloc((total + 1) * sizeof(*t->samples));
	if (!t->sthreads || !t->samples) {
		err_msg("warning: out of memory: the samples are left out of the trace");
		free(t->sthreads);
		free(t->samples);
		t->sthreads = NULL;
		t->samples = NULL;
		free_samples(o);
		return;
	}
	for (i = 0; i < n; i++) {
		struct ktau_trace_sthread *st;
		struct sbucket *b = i < o->nsb ? &o->sb[i] : NULL;
		size_t k;

		if (!ssess_thread(o->ss, i, &info))
			continue;
		st = &t->sthreads[t->nsthreads++];
		st->tid = info.tid;
		st->pid = info.pid;
		st->start_ns = info.start_ns;
		st->end_ns = info.end_ns;
		st->taken = info.taken;
		st->lost = info.lost;
		st->first = t->nsamples;
		st->n = b ? b->n : 0;
		if (!st->n)
			continue;
		/* The kernel gives them oldest first: sorted unless a clock quirk. */
		for (k = 1; k < b->n && b->v[k - 1].time_ns <= b->v[k].time_ns; k++)
			;
		if (k < b->n)
			qsort(b->v, b->n, sizeof(*b->v), cmp_sample);
		/*
		 * The window is ktaud's CLOCK_MONOTONIC around the starts and
		 * reads; the kernel stamps samples with ktime_get_mono_fast_ns(),
		 * which may stand a little apart (and a sample be taken right
		 * before the start returned): the window grows to hold its
		 * samples, which the raw file keeps within it.
		 */
		if (b->v[0].time_ns < st->start_ns)
			st->start_ns = b->v[0].time_ns;
		if (b->v[b->n - 1].time_ns > st->end_ns)
			st->end_ns = b->v[b->n - 1].time_ns;
		memcpy(t->samples + t->nsamples, b->v, b->n * sizeof(*b->v));
		t->nsamples += b->n;
	}
	/* The names: the trace's now (ktau_trace_free() frees them). */
	t->sample_names = o->snames.v;
	t->nsample_names = o->snames.n;
	free(o->snames.hash);
	memset(&o->snames, 0, sizeof(o->snames));
	free_samples(o);
}

static int trace_command(struct topts *o, char **cmd, int argc)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int, old_quit;
	struct ktau_trace_session *s = NULL;
	struct ktau_outdir *od = NULL;
	FILE *rawf = NULL;
	char raw[64], udir[4096], path[4096];
	int cfd, pfd[2], ret, status = 0, rc, child_err = 0;
	pid_t pid, w;
	ssize_t n;

	/* One execve in the child, the command's: found here, as execvp would. */
	ret = resolve_command(cmd[0], path, sizeof(path));
	if (ret) {
		err_msg("cannot run '%s': %s", cmd[0], strerror(-ret));
		return ret == -ENOENT ? 127 : 126;
	}
	ret = ktau_trace_open(&s);
	if (ret)
		return attach_error(ret, cmd[0]);
	cfd = ktau_collect_open();
	if (cfd < 0) {
		ktau_trace_close(s);
		return report(cfd, "open /proc/ktau/collect");
	}
	o->t = ktau_trace_new();
	if (!o->t) {
		ret = report(-ENOMEM, "trace");
		goto out;
	}
	fill_meta(o->t, o, cmd, argc);
	ret = open_run(o, &od, &rawf, raw, sizeof(raw));
	if (ret)
		goto out;
	/* Where libktau's runtime in the command writes its user routines. */
	{
		const char *tmp = getenv("TMPDIR");

		snprintf(udir, sizeof(udir), "%s/ktaud-user.XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(udir))
			udir[0] = '\0';
	}
	o->exec_ns = mmap(NULL, sizeof(*o->exec_ns), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (o->exec_ns == MAP_FAILED) {
		o->exec_ns = NULL;
		ret = report(-errno, "mmap");
		goto out_run;
	}
	if (pipe2(pfd, O_CLOEXEC)) {
		ret = report(-errno, "pipe");
		goto out_run;
	}
	/* Attach ourselves with INHERIT: the child is traced from its first
	 * instruction; we detach in the parent right after the fork. */
	ret = ktau_trace_attach(s, 0, KTAU_LIB_TRACE_INHERIT, o->capacity, o->groups);
	if (ret) {
		ret = attach_error(ret, cmd[0]);
		close(pfd[0]);
		close(pfd[1]);
		goto out_run;
	}
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	o->t0 = now_s();
	o->cut_done = 0;
	pid = fork();
	if (pid < 0) {
		ret = report(-errno, "fork");
		ktau_trace_detach(s, 0);
		goto out_run;
	}
	if (!pid) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		xfsz_restore();
		close(pfd[0]);
		ret = ktau_collect_join(cfd);
		child_err = 0x10000;
		/* Sampled: traced by the parent (sample.c), stopped until it is ready. */
		if (!ret && o->ss) {
			ret = ssess_child_prepare();
			child_err = 0x20000;
		}
		if (ret) {
			child_err |= -ret;
			if (write(pfd[1], &child_err, sizeof(child_err)) < 0)
				_exit(126);
			_exit(126);
		}
		if (udir[0])
			setenv("KTAU_TRACE_USER", udir, 1);
		/* The cut: the vDSO's clock, no system call. */
		__atomic_store_n(o->exec_ns, now_ns(CLOCK_MONOTONIC), __ATOMIC_RELEASE);
		execv(path, cmd);
		child_err = errno;
		if (write(pfd[1], &child_err, sizeof(child_err)) < 0)
			_exit(127);
		_exit(child_err == ENOENT ? 127 : 126);
	}
	o->cut_pid = pid;
	ret = ktau_trace_detach(s, 0);
	if (ret)
		err_msg("warning: cannot detach ktaud itself: %s (its records are left out)",
			strerror(-ret));
	close(pfd[1]);
	rc = 0;
	if (o->ss) {
		/* The sampler's loop: ptrace stops, its drains, then ours. */
		struct ssess_sink sk = { .arg = o, .samples = on_samples, .tick = on_tick };

		o->sess = s;
		ssess_set_sink(o->ss, &sk);
		ret = ssess_trace(o->ss, pid, cfd, &o->t->profile, &status);
		if (ret) {
			report(ret, "trace the command");
			status = 1 << 8;
		}
		rc = o->tick_rc;
	} else {
		/* Drain while the command runs. */
		for (;;) {
			w = waitpid(pid, &status, WNOHANG);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				report(-errno, "waitpid");
				status = 1 << 8;
				break;
			}
			ret = drain(s, o, 0);
			if (ret) {
				rc = ret;
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				break;
			}
			if (ktau_collect_read(cfd, &o->t->profile) < 0)
				break;
			if (w == pid)
				break;
			progress(o, 0);
			sleep_s(o->interval);
		}
	}
	n = read(pfd[0], &child_err, sizeof(child_err));
	if (n != sizeof(child_err))
		child_err = 0;
	close(pfd[0]);
	/* The last exits are queued before the parent is woken. */
	if (!rc)
		rc = drain(s, o, 1);
	/* Still held: the child never came to its exec (nothing ran). */
	if (o->held) {
		ret = flush_held(o, exec_time(o) ? o->cut_at : UINT64_MAX);
		if (ret && !rc)
			rc = -ret;
	}
	ktau_collect_read(cfd, &o->t->profile);
	cut_profile(o, pid);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	if (child_err & 0x10000) {
		err_msg("cannot join the KTAU collector: %s", strerror(child_err & 0xffff));
		ret = EX_KT_FAIL;
	} else if (child_err & 0x20000) {
		err_msg("cannot trace the command to sample its threads (ptrace: %s; see "
			"kernel.yama.ptrace_scope); trace it without --sample, or sample a "
			"running process with 'ktaud sample -p PID'", strerror(child_err & 0xffff));
		ret = EX_KT_PERM;
	} else if (child_err) {
		err_msg("cannot run '%s': %s", cmd[0], strerror(child_err));
		ret = WEXITSTATUS(status);
	} else {
		ret = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	}
	if (!o->t->profile)
		o->t->profile = ktau_snap_new();
	if (o->t->profile) {
		ktau_snap_fill_host(o->t->profile);
		o->t->profile->time_ns = now_ns(CLOCK_MONOTONIC);
		o->t->kernel_profile = 1;
	}
	if (!o->quiet) {
		if (WIFSIGNALED(status))
			fprintf(stderr, "ktaud trace: %s killed by signal %d after %.3f s\n", cmd[0],
				WTERMSIG(status), now_s() - o->t0);
		else
			fprintf(stderr, "ktaud trace: %s exited with status %d after %.3f s\n",
				cmd[0], WEXITSTATUS(status), now_s() - o->t0);
	}
	if (udir[0])
		add_user_routines(o->t, udir);
	if (o->ss)
		fill_samples(o);
	{
		int frc = finish_run(o, od, rawf, raw);

		rc = frc ? frc : rc;
	}
	/* The sampler's summary, as 'ktaud sample' prints it. */
	if (o->ss && !o->quiet)
		ssess_summary(o->ss, o->t->reg, 5);
	/* The command's status, unless it succeeded: then ours. */
	if (!ret)
		ret = rc;
	ktau_trace_free(o->t);
	free(o->held);
	free(o->cut);
	free_samples(o);
	if (o->exec_ns)
		munmap(o->exec_ns, sizeof(*o->exec_ns));
	close(cfd);
	ktau_trace_close(s);
	return ret;
out_run:
	if (udir[0])
		rmdir(udir);
	ktau_trace_file_finish(o->tf, o->t);
	fclose(rawf);
	ktau_outdir_close(od);
out:
	ktau_trace_free(o->t);
	free(o->held);
	free(o->cut);
	free_samples(o);
	if (o->exec_ns)
		munmap(o->exec_ns, sizeof(*o->exec_ns));
	close(cfd);
	ktau_trace_close(s);
	return ret;
}

/* Attach the threads of pid not attached yet; the number attached or < 0. */
static int attach_threads(struct ktau_trace_session *s, struct topts *o, pid_t pid,
			  pid_t **tids, size_t *ntids, int *first_err)
{
	char path[64];
	struct dirent *de;
	size_t i;
	int n = 0, ret;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -ESRCH;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		pid_t *v;

		if (tid <= 0)
			continue;
		for (i = 0; i < *ntids; i++)
			if ((*tids)[i] == tid)
				break;
		if (i < *ntids)
			continue;
		ret = ktau_trace_attach(s, tid, KTAU_LIB_TRACE_INHERIT, o->capacity, o->groups);
		if (ret && ret != -EBUSY) {
			if (!*first_err && ret != -ESRCH)
				*first_err = ret;
			continue;
		}
		v = realloc(*tids, (*ntids + 1) * sizeof(*v));
		if (!v)
			break;
		*tids = v;
		(*tids)[(*ntids)++] = tid;
		n++;
	}
	closedir(d);
	return n;
}

/* The profile of a -p or -a run: the snapshot now (@flags, @pids) minus @before. */
static void profile_since(struct topts *o, struct ktau *k, const struct ktau_snap *before,
			  unsigned int flags, const pid_t *pids, size_t npids,
			  struct ktau_snap **after)
{
	if (k && before && !ktau_snapshot(k, flags, pids, npids, after))
		ktau_snap_diff(before, *after, &o->t->profile);
	if (o->t->profile)
		ktau_snap_fill_host(o->t->profile);
}

/* What a -p or -a run holds, freed. */
static void run_free(struct topts *o, struct ktau *k, struct ktau_snap *before,
		     struct ktau_snap *after, struct ktau_trace_session *s)
{
	ktau_snap_free(before);
	ktau_snap_free(after);
	ktau_close(k);
	ktau_trace_free(o->t);
	ktau_trace_close(s);
}

static volatile sig_atomic_t all_stop;

static void all_stop_handler(int sig)
{
	(void)sig;
	all_stop = 1;
}

/*
 * SIGINT, SIGTERM and SIGHUP end a -p or -a run early, its products
 * written: and the samplers (which end only with their threads) stopped.
 */
static void stop_signals_on(struct sigaction old[3])
{
	struct sigaction sa = { .sa_handler = all_stop_handler };

	sigemptyset(&sa.sa_mask);
	all_stop = 0;
	sigaction(SIGINT, &sa, &old[0]);
	sigaction(SIGTERM, &sa, &old[1]);
	/* Under nohup, a hangup is not a stop. */
	sigaction(SIGHUP, NULL, &old[2]);
	if (old[2].sa_handler != SIG_IGN)
		sigaction(SIGHUP, &sa, NULL);
}

static void stop_signals_off(const struct sigaction old[3])
{
	sigaction(SIGINT, &old[0], NULL);
	sigaction(SIGTERM, &old[1], NULL);
	sigaction(SIGHUP, &old[2], NULL);
}

/* A -p or -a run given up before its loop: the raw file finished, the signals back. */
static void abandon_run(struct topts *o, struct ktau_outdir *od, FILE *rawf,
			const struct sigaction old_sig[3])
{
	stop_signals_off(old_sig);
	ktau_trace_file_finish(o->tf, o->t);
	fclose(rawf);
	ktau_outdir_close(od);
}

/*
 * --sample with -p (the threads of pid and of the processes it starts) or
 * -a (pid 0: every user thread, at most 1024 at once): the samples
 * to the trace, the samplers started; 0, or an exit code when none could
 * be (then every sampler is stopped).
 */
static int start_samplers(struct topts *o, pid_t pid)
{
	struct ssess_sink sk = { .arg = o, .samples = on_samples };
	int rc;

	ssess_set_sink(o->ss, &sk);
	if (pid) {
		ssess_scan(o->ss, pid);
		ssess_scan_more(o->ss, 0);
	} else {
		ssess_scan_more(o->ss, 1);
	}
	rc = ssess_started(o->ss);
	if (rc)
		ssess_drain(o->ss, 1);
	return rc;
}

static int trace_pid(struct topts *o, pid_t pid, double duration)
{
	struct ktau_trace_session *s = NULL;
	struct ktau_snap *before = NULL, *after = NULL;
	struct ktau_outdir *od = NULL;
	struct ktau *k = NULL;
	pid_t *tids = NULL;
	size_t ntids = 0, i;
	FILE *rawf = NULL;
	struct sigaction old_sig[3];
	char raw[64], who[32];
	int ret, rc = 0, err = 0;

	snprintf(who, sizeof(who), "process %d", (int)pid);
	if (kill(pid, 0) && errno == ESRCH) {
		err_msg("no process %d", (int)pid);
		return EX_KT_GONE;
	}
	ret = ktau_trace_open(&s);
	if (ret)
		return attach_error(ret, who);
	o->t = ktau_trace_new();
	if (!o->t) {
		ktau_trace_close(s);
		return report(-ENOMEM, "trace");
	}
	fill_meta(o->t, o, NULL, 0);
	snprintf(o->t->command, sizeof(o->t->command), "pid %d", (int)pid);
	/* The profile: snapshots around the trace (not exact at the edges). */
	if (!ktau_open(&k))
		ktau_snapshot(k, KTAU_LIB_PIDS | KTAU_LIB_PROCESS, &pid, 1, &before);
	ret = open_run(o, &od, &rawf, raw, sizeof(raw));
	if (ret)
		goto out;
	o->t0 = now_s();
	ret = attach_threads(s, o, pid, &tids, &ntids, &err);
	if (ret <= 0)
		rc = attach_error(err ? err : -ESRCH, who);
	stop_signals_on(old_sig);
	/* --sample: a sampler on each thread, as 'ktaud sample -p' starts them. */
	if (!rc && o->ss) {
		rc = start_samplers(o, pid);
		for (i = 0; rc && i < ntids; i++)
			ktau_trace_detach(s, tids[i]);
	}
	if (rc) {
		abandon_run(o, od, rawf, old_sig);
		goto out;
	}
	while (!all_stop && now_s() - o->t0 < duration) {
		rc = drain(s, o, 0);
		if (rc)
			break;
		if (attach_threads(s, o, pid, &tids, &ntids, &err) < 0)
			break;	/* it exited */
		/* The sampler: new threads, then the buffers (named while it lives). */
		if (o->ss) {
			ssess_scan(o->ss, pid);
			ssess_scan_more(o->ss, 0);
			ssess_drain(o->ss, 0);
		}
		progress(o, 0);
		sleep_s(o->interval);
	}
	/* The samplers stopped (their last samples read), then the trace. */
	if (o->ss)
		ssess_drain(o->ss, 1);
	stop_signals_off(old_sig);
	for (i = 0; i < ntids; i++)
		ktau_trace_detach(s, tids[i]);
	if (!rc)
		rc = drain(s, o, 1);
	profile_since(o, k, before, KTAU_LIB_PIDS | KTAU_LIB_PROCESS, &pid, 1, &after);
	if (!o->quiet)
		fprintf(stderr, "ktaud trace: traced %zu threads of process %d for %.3f s\n", ntids,
			(int)pid, now_s() - o->t0);
	if (o->ss)
		fill_samples(o);
	ret = finish_run(o, od, rawf, raw);
	rc = rc ? rc : ret;
	/* The sampler's summary, as 'ktaud sample' prints it. */
	if (o->ss && !o->quiet)
		ssess_summary(o->ss, o->t->reg, 5);
out:
	free_samples(o);
	free(tids);
	run_free(o, k, before, after, s);
	return rc ? rc : ret;
}

/*
 * -a: the whole system (ABI 1.6, CAP_PERFMON) for duration seconds or
 * until SIGINT/SIGTERM: every user thread but ktaud's, and every task
 * started meanwhile. The profile: snapshots of every task around it.
 */
static int trace_all(struct topts *o, double duration)
{
	struct ktau_trace_session *s = NULL;
	struct ktau_snap *before = NULL, *after = NULL;
	struct sigaction old_sig[3];
	struct ktau_outdir *od = NULL;
	struct ktau *k = NULL;
	FILE *rawf = NULL;
	char raw[64];
	int ret, rc = 0;

	ret = ktau_trace_open(&s);
	if (ret)
		return attach_error(ret, "the system");
	o->t = ktau_trace_new();
	if (!o->t) {
		ktau_trace_close(s);
		return report(-ENOMEM, "trace");
	}
	fill_meta(o->t, o, NULL, 0);
	snprintf(o->t->command, sizeof(o->t->command), "the whole system");
	if (!ktau_open(&k))
		ktau_snapshot(k, KTAU_LIB_ALL, NULL, 0, &before);
	/* Attached first: a refusal leaves no output directory behind. */
	o->t0 = now_s();
	ret = ktau_trace_attach(s, 0, KTAU_LIB_TRACE_ALL, o->capacity, o->groups);
	if (ret) {
		if (ret == -EINVAL)
			err_msg("cannot trace the whole system: this kernel's trace mode has no "
				"system-wide sessions (they came with KTAU ABI 1.6)");
		else if (ret == -EBUSY)
			err_msg("cannot trace the whole system: another system-wide trace session "
				"is open (one at a time)");
		rc = ret == -EINVAL || ret == -EBUSY ? EX_KT_FAIL :
		     ret == -EPERM ? (err_msg("cannot trace the whole system: it needs "
					      "CAP_PERFMON or CAP_SYS_ADMIN"), EX_KT_PERM) :
		     attach_error(ret, "the system");
		goto out;
	}
	ret = open_run(o, &od, &rawf, raw, sizeof(raw));
	if (ret)
		goto out;
	stop_signals_on(old_sig);
	/* --sample: a sampler on every user thread, new ones every interval. */
	if (o->ss) {
		rc = start_samplers(o, 0);
		if (rc) {
			abandon_run(o, od, rawf, old_sig);
			goto out;
		}
	}
	while (!all_stop && now_s() - o->t0 < duration) {
		rc = drain(s, o, 0);
		if (rc)
			break;
		if (o->ss) {
			ssess_scan_more(o->ss, 1);
			ssess_drain(o->ss, 0);
		}
		progress(o, 0);
		sleep_s(o->interval);
	}
	/* The samplers stopped (their last samples read), then the trace. */
	if (o->ss)
		ssess_drain(o->ss, 1);
	stop_signals_off(old_sig);
	if (!rc)
		rc = drain(s, o, 1);
	profile_since(o, k, before, KTAU_LIB_ALL, NULL, 0, &after);
	if (!o->quiet)
		fprintf(stderr, "ktaud trace: traced the whole system for %.3f s: %llu threads, "
			"%llu refused (session bounds)\n", now_s() - o->t0,
			(unsigned long long)o->t->stats.tasks,
			(unsigned long long)o->t->stats.refused);
	if (o->ss)
		fill_samples(o);
	ret = finish_run(o, od, rawf, raw);
	rc = rc ? rc : ret;
	if (o->ss && !o->quiet)
		ssess_summary(o->ss, o->t->reg, 5);
out:
	free_samples(o);
	run_free(o, k, before, after, s);
	return rc ? rc : ret;
}

/*
 * Whether the output directory @dir is @in (a directory) or, with
 * @parent, the directory that holds the file @in: opening @dir as the
 * output removes the earlier run's files there, the input among them.
 */
static int output_is_input(const char *dir, const char *in, int parent)
{
	char rin[PATH_MAX], rout[PATH_MAX], *slash;

	if (!realpath(in, rin) || !realpath(dir, rout))
		return 0;	/* the output does not exist yet */
	if (parent) {
		slash = strrchr(rin, '/');
		if (slash)
			*(slash == rin ? slash + 1 : slash) = '\0';
	}
	return !strcmp(rin, rout);
}

/* --input RAW: the products of a saved raw trace (and a copy of it). */
static int convert(struct topts *o, const char *path)
{
	struct ktau_outdir *od;
	struct ktau_trace *t;
	struct written wr;
	char raw[64], *buf = NULL;
	size_t len = 0;
	FILE *f, *in;
	int ret, rc;

	if (output_is_input(o->dir, path, 1))
		return usage_err("trace", "%s is in the output directory %s, whose earlier "
				 "products this conversion replaces: give another one with -o",
				 path, o->dir);
	ret = ktau_trace_load(path, &t);
	if (ret) {
		err_msg("%s: %s", path, *ktau_trace_error() ? ktau_trace_error() : strerror(-ret));
		return EX_KT_FAIL;
	}
	if (t->truncated)
		err_msg("warning: %s is unfinished (its writer stopped): its %zu last bytes, a "
			"partial chunk, are left out", path, t->truncated_bytes);
	ret = ktau_outdir_open(o->dir, "trace", t->rank, 0, &od);
	if (ret) {
		ktau_trace_free(t);
		return outdir_report(ret, "nothing was written");
	}
	/* The raw file too, so that the directory is complete for --check. */
	fname(raw, sizeof(raw), "trace", t->rank, ".ktrace");
	in = fopen(path, "re");
	f = ktau_outdir_create(od, raw);
	rc = EX_KT_OK;
	if (!in || !f) {
		err_msg("cannot copy %s: %s", path, !in ? strerror(errno) : ktau_output_error());
		rc = EX_KT_FAIL;
	} else {
		char b[65536];
		size_t n;

		ret = 0;
		/* The failed write's errno: glibc drops the buffer, a flush says nothing. */
		while (!ret && (n = fread(b, 1, sizeof(b), in)) > 0)
			if (fwrite(b, 1, n, f) != n)
				ret = errno ? -errno : -EIO;
		if (!ret && ferror(in))
			ret = -EIO;
		if (!ret)
			ret = ktau__stream_err(f);
		if (ret)
			rc = report(ret, "copy the raw trace");
	}
	if (in)
		fclose(in);
	if (f && fclose(f) && !rc)
		rc = report(-errno, "copy the raw trace");
	if (rc) {
		/* No part of it left looking like the whole raw trace. */
		if (f)
			ktau__outdir_discard(od, raw);
		raw[0] = '\0';
	}
	(void)buf;
	(void)len;
	ret = write_products(od, t, t->rank, o->top, &wr);
	if (ret && !rc)
		rc = ret;
	ret = ktau_outdir_close(od);
	if (ret && !rc)
		rc = report(ret, "close the output directory");
	summary(o, t, o->dir, &wr, raw);
	ktau_trace_free(t);
	return rc;
}

/* ---- --check and --merge ------------------------------------------------ */

static int cmp_rank(const void *a, const void *b)
{
	const struct ktau_trace *x = *(struct ktau_trace *const *)a;
	const struct ktau_trace *y = *(struct ktau_trace *const *)b;

	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static void free_traces(struct ktau_trace **tv, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		ktau_trace_free(tv[i]);
	free(tv);
}

/* The raw traces of dir: trace.ktrace, or every trace.RANK.ktrace by rank. */
static int load_dir(const char *dir, struct ktau_trace ***tv, size_t *n, int only_plain)
{
	struct dirent *de;
	char path[4096];
	DIR *d = opendir(dir);
	int ret = 0;

	*tv = NULL;
	*n = 0;
	if (!d) {
		err_msg("cannot read %s: %s", dir, strerror(errno));
		return EX_KT_FAIL;
	}
	while (!ret && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		struct ktau_trace *t, **v;

		if (strncmp(de->d_name, "trace.", 6) || l < 12 ||
		    strcmp(de->d_name + l - 7, ".ktrace"))
			continue;
		if (only_plain >= 0 && (only_plain != !strcmp(de->d_name, "trace.ktrace")))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (ktau_trace_load(path, &t)) {
			err_msg("%s: %s", path, ktau_trace_error());
			ret = EX_KT_FAIL;
			break;
		}
		v = realloc(*tv, (*n + 1) * sizeof(*v));
		if (!v) {
			ktau_trace_free(t);
			ret = report(-ENOMEM, "load");
			break;
		}
		*tv = v;
		(*tv)[(*n)++] = t;
	}
	closedir(d);
	if (ret) {
		free_traces(*tv, *n);
		*tv = NULL;
		*n = 0;
	} else if (*n) {
		qsort(*tv, *n, sizeof(**tv), cmp_rank);
	}
	return ret;
}

static int check_one(const char *anchor, struct ktau_trace **tv, size_t n)
{
	struct trace_check r;
	int ret;

	ret = trace_check_archive(anchor, tv, n, stdout, &r);
	if (ret < 0) {
		err_msg("cannot read the OTF2 archive %s: %s", anchor, strerror(-ret));
		return EX_KT_FAIL;
	}
	printf("%s: %llu locations, %llu regions, %llu events, %llu enter/leave pairs (%llu of user "
	       "routines); nesting errors %llu, time going back %llu, left open %llu\n", anchor,
	       (unsigned long long)r.locations, (unsigned long long)r.regions,
	       (unsigned long long)r.events, (unsigned long long)r.enters,
	       (unsigned long long)r.user_pairs,
	       (unsigned long long)r.nesting_errors, (unsigned long long)r.time_errors,
	       (unsigned long long)r.unclosed);
	printf("%s: against the profile: %llu threads compared (%llu routines: %llu count and "
	       "%llu time mismatches, largest inclusive difference %lld ns; %llu missing), "
	       "%llu with lost records (%llu lost, %llu in the raw trace) and %llu not "
	       "comparable left out\n", anchor, (unsigned long long)r.threads_compared,
	       (unsigned long long)r.routines_compared, (unsigned long long)r.count_mismatches,
	       (unsigned long long)r.time_mismatches, (long long)r.max_time_diff,
	       (unsigned long long)r.missing, (unsigned long long)r.threads_lost,
	       (unsigned long long)r.lost_in_archive, (unsigned long long)r.lost_in_trace,
	       (unsigned long long)r.threads_uncompared);
	{
		uint64_t cut = 0;

		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; k < tv[i]->ncuts; k++)
				cut += tv[i]->cuts[k].calls;
		if (cut)
			printf("%s: %llu calls cut from the profile before the command's exec, each "
			       "its own nanosecond of rounding\n", anchor, (unsigned long long)cut);
	}
	if (!ret && !r.threads_compared && !r.threads_lost) {
		/* Kernel records but no thread to compare: something is wrong. */
		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; tv[i]->kernel_profile && k < tv[i]->nthreads; k++)
				for (size_t j = 0; j < tv[i]->threads[k].nrecs; j++)
					if (!(tv[i]->threads[k].recs[j].id & KTAU_LIB_TRACE_USER)) {
						printf("%s: no thread could be compared with the "
						       "profile\n", anchor);
						return 1;
					}
	}
	if (r.sample_threads || r.samples)
		printf("%s: samples: %llu in the archive, %llu in the raw trace, of %llu sampled "
		       "threads; %llu problems\n", anchor, (unsigned long long)r.samples,
		       (unsigned long long)r.samples_in_trace, (unsigned long long)r.sample_threads,
		       (unsigned long long)r.sample_errors);
	printf("%s: %s\n", anchor, ret ? "FAILED" : "ok");
	return ret ? 1 : 0;
}

static int check_dir(const char *dir)
{
	struct ktau_trace **tv = NULL;
	struct dirent *de;
	char path[4096];
	size_t n = 0;
	int rc = EX_KT_OK, found = 0, ret;
	DIR *d = opendir(dir);

	if (!d) {
		err_msg("cannot read %s: %s", dir, strerror(errno));
		return EX_KT_FAIL;
	}
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		int rank;
		char tail;

		if (strncmp(de->d_name, "traces", 6) || l < 11 || strcmp(de->d_name + l - 5, ".otf2"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		found++;
		if (!strcmp(de->d_name, "traces.otf2")) {
			/* One trace, or the merge of every rank's. */
			ret = load_dir(dir, &tv, &n, 1);
			if (!ret && !n)
				ret = load_dir(dir, &tv, &n, 0);
		} else if (sscanf(de->d_name, "traces.%d.otf%c", &rank, &tail) == 2) {
			char rp[4096];
			struct ktau_trace *t;

			snprintf(rp, sizeof(rp), "%s/trace.%d.ktrace", dir, rank);
			ret = ktau_trace_load(rp, &t);
			if (ret) {
				err_msg("%s: %s", rp, ktau_trace_error());
				ret = EX_KT_FAIL;
			} else {
				tv = malloc(sizeof(*tv));
				if (tv) {
					tv[0] = t;
					n = 1;
				} else {
					ktau_trace_free(t);
					ret = EX_KT_FAIL;
				}
			}
		} else {
			continue;
		}
		if (!ret && !n) {
			err_msg("%s: no raw trace (trace*.ktrace) beside it to compare with", path);
			ret = EX_KT_FAIL;
		}
		if (!ret)
			ret = check_one(path, tv, n);
		if (ret)
			rc = ret;
		free_traces(tv, n);
		tv = NULL;
		n = 0;
	}
	closedir(d);
	if (!found) {
		err_msg("%s holds no OTF2 archive (traces*.otf2)", dir);
		return EX_KT_FAIL;
	}
	return rc;
}

static int merge(struct topts *o, char **dirs, int ndirs)
{
	struct ktau_trace **all = NULL, **tv;
	struct ktau_outdir *od;
	uint64_t nevents;
	size_t n = 0, nall = 0, i;
	int *ranks = NULL, ret, rc = EX_KT_OK, d;

	for (d = 0; d < ndirs; d++)
		if (output_is_input(o->dir, dirs[d], 0))
			return usage_err("trace", "the output directory %s is one of the traces to "
					 "merge: give another one with -o", o->dir);
	for (d = 0; d < ndirs; d++) {
		ret = load_dir(dirs[d], &tv, &n, -1);
		if (ret)
			goto out;
		if (!n) {
			err_msg("%s holds no raw trace (trace*.ktrace)", dirs[d]);
			ret = EX_KT_FAIL;
			goto out;
		}
		{
			struct ktau_trace **v = realloc(all, (nall + n) * sizeof(*all));

			if (!v) {
				free_traces(tv, n);
				ret = report(-ENOMEM, "merge");
				goto out;
			}
			all = v;
		}
		memcpy(all + nall, tv, n * sizeof(*tv));
		nall += n;
		free(tv);
	}
	/* Ranks: their own when all have distinct ones, else argument order. */
	ranks = calloc(nall, sizeof(*ranks));
	if (!ranks) {
		ret = report(-ENOMEM, "merge");
		goto out;
	}
	if (nall > 1)
		qsort(all, nall, sizeof(*all), cmp_rank);
	for (i = 0; i < nall; i++)
		ranks[i] = all[i]->rank;
	for (i = 0; i < nall; i++)
		if (ranks[i] < 0 || (i && ranks[i] == ranks[i - 1]))
			break;
	if (i < nall) {
		err_msg("warning: the traces do not all have distinct MPI ranks: they are numbered "
			"0..%zu in the order found", nall - 1);
		for (i = 0; i < nall; i++)
			ranks[i] = all[i]->rank = (int)i;
	}
	/* Its own kind: a later trace run into the directory is refused. */
	ret = ktau_outdir_open(o->dir, "tracemerge", -1, 0, &od);
	if (ret) {
		ret = outdir_report(ret, "nothing was written");
		goto out;
	}
	/* The raw traces (for --check), then the archive. */
	for (i = 0; i < nall && !rc; i++) {
		char raw[64];
		FILE *f;

		fname(raw, sizeof(raw), "trace", ranks[i], ".ktrace");
		f = ktau_outdir_create(od, raw);
		if (!f) {
			err_msg("%s", ktau_output_error());
			rc = EX_KT_FAIL;
			break;
		}
		{
			struct ktau_trace_file *tf;

			ret = ktau_trace_file_start(fileno(f), all[i], &tf);
			/* The chunks again, one per thread. */
			if (!ret)
				ret = ktau_trace_file_append_trace(tf, all[i]);
			if (!ret)
				ret = ktau_trace_file_finish(tf, all[i]);
		}
		if (fclose(f) && !ret)
			ret = -errno;
		if (ret)
			rc = report(ret, "write a raw trace");
	}
	if (!rc) {
		ret = trace_write_otf2(od, "traces", all, nall, ranks, &nevents);
		if (ret) {
			err_msg("the OTF2 archive was not written: %s",
				*ktau_output_error() ? ktau_output_error() : strerror(-ret));
			rc = EX_KT_FAIL;
		} else if (!o->quiet) {
			fprintf(stderr, "ktaud trace: %zu ranks in %s/traces.otf2 (%llu events)\n", nall,
				o->dir, (unsigned long long)nevents);
		}
	}
	ret = ktau_outdir_close(od);
	if (ret && !rc)
		rc = report(ret, "close the output directory");
	ret = rc;
out:
	for (i = 0; i < nall; i++)
		ktau_trace_free(all[i]);
	free(all);
	free(ranks);
	return ret;
}

int cmd_trace(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "groups", required_argument, NULL, 'g' },
		{ "buffer", required_argument, NULL, 'b' },
		{ "interval", required_argument, NULL, 'i' },
		{ "pid", required_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'a' },
		{ "duration", required_argument, NULL, 'd' },
		{ "top", required_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "input", required_argument, NULL, 'I' },
		{ "check", required_argument, NULL, 'C' },
		{ "merge", no_argument, NULL, 'M' },
		{ "sample", required_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct topts o = { .dir = "ktau-trace", .capacity = DEFAULT_CAPACITY, .interval = 0.05,
			   .top = 8, .rank = -1 };
	const char *input = NULL, *check = NULL, *sample = NULL;
	char *dir = NULL;
	double duration = -1;
	unsigned long v;
	pid_t pid = 0;
	int c, do_merge = 0, all = 0, ret;

	while ((c = getopt_long(argc, argv, "+o:g:b:i:p:ad:n:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': o.dir = optarg; break;
		case 'g':
			if (parse_groups(optarg, &o.groups))
				return usage_err("trace", "bad --groups '%s': names of groups (syscall, "
						 "irq, softirq, sched, fault, signal, dynamic, kvm), "
						 "comma-separated, or all", optarg);
			break;
		case 'b':
			if (parse_uint(optarg, &v) || !v || v & (v - 1) ||
			    v > KTAU_LIB_TRACE_MAX_CAPACITY)
				return usage_err("trace", "bad --buffer '%s': a power of two of records, "
						 "at most %u", optarg, KTAU_LIB_TRACE_MAX_CAPACITY);
			o.capacity = (uint32_t)v;
			break;
		case 'i':
			if (parse_seconds(optarg, &o.interval) || o.interval < 0.001 ||
			    o.interval > 60)
				return usage_err("trace", "bad --interval '%s': seconds, from 0.001 "
						 "to 60", optarg);
			break;
		case 'p':
			if (parse_pid(optarg, &pid))
				return usage_err("trace", "bad --pid '%s'", optarg);
			break;
		case 'a': all = 1; break;
		case 'd':
			if (parse_seconds(optarg, &duration) || duration <= 0)
				return usage_err("trace", "bad --duration '%s': seconds", optarg);
			break;
		case 'n':
			if (parse_uint(optarg, &o.top) || !o.top || o.top > 64)
				return usage_err("trace", "bad --top '%s': 1 to 64 threads", optarg);
			break;
		case 'q': o.quiet = 1; break;
		case 'I': input = optarg; break;
		case 'C': check = optarg; break;
		case 'M': do_merge = 1; break;
		case 'E': sample = optarg; break;
		case 'h': help(stdout); return EX_KT_OK;
		default: return usage_err("trace", "bad option");
		}
	}
	if (!*o.dir)
		return usage_err("trace", "-o needs a directory name");
	if (!!input + !!check + do_merge + !!pid + all > 1)
		return usage_err("trace", "--input, --check, --merge, -p and -a go one at a time");
	if (sample && (input || check || do_merge))
		return usage_err("trace", "--sample goes with a command (ktaud trace --sample SPEC "
				 "-- command args...) or a running process (-p PID -d SECONDS)");
	if (check) {
		if (optind < argc)
			return usage_err("trace", "--check takes one directory");
		return check_dir(check);
	}
	if (do_merge) {
		if (optind >= argc)
			return usage_err("trace", "--merge needs the directories of the ranks' traces");
		dir = output_path(o.dir);
		if (!dir)
			return EX_KT_FAIL;
		o.dir = dir;
		ret = merge(&o, argv + optind, argc - optind);
		free(dir);
		return ret;
	}
	if ((pid || all) && duration < 0)
		return usage_err("trace", "%s needs -d SECONDS", pid ? "-p" : "-a");
	if (!pid && !all && duration >= 0)
		return usage_err("trace", "-d goes with -p or -a");
	if ((input || pid || all) && optind < argc)
		return usage_err("trace", "a command goes with none of --input, -p and -a");
	if (!input && !pid && !all && optind >= argc)
		return usage_err("trace", "no command to trace: ktaud trace [options] -- command "
				 "args...");
	dir = output_path(o.dir);
	if (!dir)
		return EX_KT_FAIL;
	o.dir = dir;
	if (input) {
		ret = convert(&o, input);
		free(dir);
		return ret;
	}
	/* The sampler first: a spec or a kernel that cannot sample writes nothing. */
	if (sample) {
		ret = ssess_new("trace", sample, o.interval, 0, 0, &o.ss);
		if (ret) {
			free(dir);
			return ret;
		}
	}
	o.rank = ktau_mpi_rank();
	o.self = getpid();
	ret = all ? trace_all(&o, duration) : pid ? trace_pid(&o, pid, duration) :
	      trace_command(&o, argv + optind, argc - optind);
	ssess_free(o.ss);
	free(dir);
	return ret;
}
