// SPDX-License-Identifier: GPL-2.0
/*
 * ktau-interp: a tiny bytecode interpreter that profiles its own
 * interpreted functions with KTAU's signal mode (ABI 1.1), as the SysCon
 * 2021 paper "System execution path profiling using hardware performance
 * counters" does for CPython.
 *
 * The interpreter starts sampling of its own thread with a watermark of 1
 * and SIGPROF: the kernel sends a signal at every counter overflow, and the
 * handler (async-signal-safe: a few stores) counts the sample for the
 * interpreted function that is executing, exclusively, and inclusively
 * for every function on the interpreted call stack. The kernel's buffer
 * holds the same samples with their instruction pointers and KTAU
 * routines; the interpreter drains it at safe points (between bytecodes)
 * when the handler says it is half full, and at the end.
 *
 * At exit it writes, under -o DIR (default ktau-interp-profile):
 *   DIR/interp/profile.0.0.0  its interpreted functions: calls, and the
 *                             samples of each (metric: the event name)
 *   DIR/kernel/               the kernel profile of its thread, with the
 *                             samples per kernel routine and per C function
 *                             of the interpreter (MULTI__TIME and
 *                             MULTI__<event>), as libktau writes it
 * and a summary on stdout, with the dominant interpreted function.
 *
 * The program: main(R) calls R times fib(F) (user-mode work), writer(W)
 * (W write() calls of 4 KiB to /dev/null: kernel work) and sleeper(S)
 * (sleeps S ms: neither). Options: -f F (default 24), -w W (2000),
 * -s S (20), -r R (3), -e EVENT:PERIOD (cpu-clock:1ms), -o DIR, -q.
 * Without KTAU sampling it still runs and writes the calls (exit 0, with
 * a warning).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "libktau.h"

enum op {
	OP_PUSH, OP_ARG, OP_SETARG, OP_ADD, OP_SUB, OP_LT, OP_JZ, OP_JMP, OP_CALL, OP_RET,
	OP_POP, OP_WRITE, OP_SLEEP,
};

struct ins {
	unsigned char op;
	long a;
};

enum { F_MAIN, F_FIB, F_WRITER, F_SLEEPER, NFUNCS };

static const char *const fname[NFUNCS] = { "main", "fib", "writer", "sleeper" };

/* fib(n): n < 2 ? n : fib(n - 1) + fib(n - 2) */
static const struct ins fib_code[] = {
	{ OP_ARG, 0 }, { OP_PUSH, 2 }, { OP_LT, 0 }, { OP_JZ, 6 },
	{ OP_ARG, 0 }, { OP_RET, 0 },
	{ OP_ARG, 0 }, { OP_PUSH, 1 }, { OP_SUB, 0 }, { OP_CALL, F_FIB },
	{ OP_ARG, 0 }, { OP_PUSH, 2 }, { OP_SUB, 0 }, { OP_CALL, F_FIB },
	{ OP_ADD, 0 }, { OP_RET, 0 },
};

/* writer(n): while (n) { write(4 KiB); n--; } return 0 */
static const struct ins writer_code[] = {
	{ OP_ARG, 0 }, { OP_JZ, 8 }, { OP_WRITE, 4096 },
	{ OP_ARG, 0 }, { OP_PUSH, 1 }, { OP_SUB, 0 }, { OP_SETARG, 0 }, { OP_JMP, 0 },
	{ OP_PUSH, 0 }, { OP_RET, 0 },
};

/* sleeper(ms): sleep(ms); return 0 */
static const struct ins sleeper_code[] = {
	{ OP_ARG, 0 }, { OP_SLEEP, 0 }, { OP_PUSH, 0 }, { OP_RET, 0 },
};

/* main(r): while (r) { fib(F); writer(W); sleeper(S); r--; } return 0 */
static struct ins main_code[] = {
	{ OP_ARG, 0 }, { OP_JZ, 16 },
	{ OP_PUSH, 0 /* F */ }, { OP_CALL, F_FIB }, { OP_POP, 0 },
	{ OP_PUSH, 0 /* W */ }, { OP_CALL, F_WRITER }, { OP_POP, 0 },
	{ OP_PUSH, 0 /* S */ }, { OP_CALL, F_SLEEPER }, { OP_POP, 0 },
	{ OP_ARG, 0 }, { OP_PUSH, 1 }, { OP_SUB, 0 }, { OP_SETARG, 0 }, { OP_JMP, 0 },
	{ OP_PUSH, 0 }, { OP_RET, 0 },
};

static const struct ins *const code[NFUNCS] = { main_code, fib_code, writer_code, sleeper_code };

#define MAX_FRAMES	4096
#define MAX_STACK	(4 * MAX_FRAMES)

/* ---- What the signal handler sees and writes ---- */

static volatile sig_atomic_t cur = F_MAIN;	/* the function executing */
static volatile sig_atomic_t active[NFUNCS];	/* its frames on the stack */
static volatile unsigned long excl_samples[NFUNCS], incl_samples[NFUNCS];
static volatile unsigned long nsignals, since_drain;
static volatile sig_atomic_t need_drain;
static unsigned long drain_at;

static void on_sample(int sig)
{
	int f;

	(void)sig;
	nsignals++;
	excl_samples[cur]++;
	for (f = 0; f < NFUNCS; f++)
		if (active[f])
			incl_samples[f]++;
	if (++since_drain >= drain_at)
		need_drain = 1;
}

/* ---- Sampling ---- */

static struct ktau *kt;
static struct ktau_sample_spec spec = { .capacity = 1024, .watermark = 1, .signo = SIGPROF };
static struct ktau_sample_rec sbuf[1024];
static struct ktau_sample_profile *prof;
static struct ktau_usyms *usyms;
static struct ktau_ksyms *ksyms;
static struct ktau_sample_stats sstats;
static unsigned long ndrained;
static int sampling;

static void drain(int stop)
{
	int n;

	need_drain = 0;
	since_drain = 0;
	do {
		n = stop ? ktau_sample_stop(kt, 0, sbuf, spec.capacity, &sstats) :
		    ktau_sample_read(kt, 0, sbuf, spec.capacity, &sstats);
		if (n <= 0)
			break;
		ndrained += n;
		ktau_sample_profile_add_samples(prof, sbuf, n, usyms, ksyms);
	} while (!stop && (unsigned int)n == spec.capacity);
}

/* Start sampling in signal mode; 0, or -errno with a message. */
static int start_sampling(const char *text)
{
	struct sigaction sa = { .sa_handler = on_sample, .sa_flags = SA_RESTART };
	const char *why = NULL;
	int ret;

	if (ktau_sample_parse(text, &spec, &why)) {
		fprintf(stderr, "ktau-interp: bad -e '%s': %s\n", text, why);
		return -EINVAL;
	}
	drain_at = spec.capacity / 2;
	prof = ktau_sample_profile_new();
	if (!prof)
		return -ENOMEM;
	ret = ktau_open(&kt);
	if (ret) {
		fprintf(stderr, "ktau-interp: warning: no KTAU (%s): interpreted calls only\n",
			ktau_strerror(ret));
		return 0;
	}
	ktau_usyms_open(0, &usyms);
	if (!(spec.flags & KTAU_LIB_SAMPLE_NO_KERNEL))
		ktau_ksyms_load(&ksyms);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	ret = ktau_sample_start(kt, 0, &spec);
	if (ret == -EACCES && !(spec.flags & KTAU_LIB_SAMPLE_NO_USER)) {
		/* perf_event_paranoid 2 without CAP_PERFMON: user mode only. */
		spec.flags |= KTAU_LIB_SAMPLE_NO_KERNEL;
		ret = ktau_sample_start(kt, 0, &spec);
		if (!ret)
			fprintf(stderr, "ktau-interp: warning: kernel samples not permitted; "
				"sampling user mode only\n");
	}
	if (ret) {
		fprintf(stderr, "ktau-interp: warning: cannot sample: %s; interpreted calls only\n",
			ktau_sample_strerror(ret, 1));
		return 0;
	}
	sampling = 1;
	return 0;
}

/* ---- The interpreter ---- */

static unsigned long ncalls[NFUNCS];
static int devnull = -1;
static char wbuf[4096];

struct frame {
	int f, pc;
	long arg;
	int sp0;	/* value stack height at the call */
};

static int do_sleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		if (errno != EINTR)
			return -1;
	return 0;
}

/* Run function f with argument arg; its result, or -1 on a VM error. */
static long run(int f, long arg)
{
	static struct frame fr[MAX_FRAMES];
	static long st[MAX_STACK];
	int nf = 0, sp = 0, callee;
	const struct ins *in;
	long a, b;

	fr[0] = (struct frame){ f, 0, arg, 0 };
	ncalls[f]++;
	active[f]++;
	cur = f;
	for (;;) {
		if (need_drain && sampling)
			drain(0);
		in = &code[fr[nf].f][fr[nf].pc++];
		if (sp >= MAX_STACK - 2)
			return -1;
		switch (in->op) {
		case OP_PUSH: st[sp++] = in->a; break;
		case OP_ARG: st[sp++] = fr[nf].arg; break;
		case OP_SETARG: fr[nf].arg = st[--sp]; break;
		case OP_ADD: b = st[--sp]; a = st[--sp]; st[sp++] = a + b; break;
		case OP_SUB: b = st[--sp]; a = st[--sp]; st[sp++] = a - b; break;
		case OP_LT: b = st[--sp]; a = st[--sp]; st[sp++] = a < b; break;
		case OP_JZ:
			if (!st[--sp])
				fr[nf].pc = in->a;
			break;
		case OP_JMP: fr[nf].pc = in->a; break;
		case OP_POP: sp--; break;
		case OP_WRITE:
			if (write(devnull, wbuf, in->a) < 0)
				return -1;
			break;
		case OP_SLEEP:
			if (do_sleep(st[--sp]))
				return -1;
			break;
		case OP_CALL:
			if (nf + 1 >= MAX_FRAMES)
				return -1;
			callee = in->a;
			nf++;
			fr[nf] = (struct frame){ callee, 0, st[--sp], sp };
			ncalls[callee]++;
			/* Active first: the handler never sees cur without a frame. */
			active[callee]++;
			cur = callee;
			break;
		case OP_RET:
			a = st[--sp];
			callee = fr[nf].f;
			if (!nf) {
				active[callee]--;
				return a;
			}
			sp = fr[nf].sp0;
			nf--;
			cur = fr[nf].f;
			active[callee]--;
			st[sp++] = a;
			break;
		default:
			return -1;
		}
	}
}

/* ---- Output ---- */

/* DIR/interp/profile.0.0.0: the interpreted functions and their samples. */
static int write_interp(const char *dir, const char *metric)
{
	struct ktau_tau_row rows[NFUNCS];
	char path[4096], pid[32], total[32], sig[32];
	const char *meta[] = {
		"KTAU Interpreter", "ktau-interp: samples of interpreted functions, counted by "
		"the SIGPROF handler at each overflow (KTAU signal mode, watermark 1); "
		"excl: the function was executing, incl: it was on the interpreted stack",
		"KTAU Sample Spec", metric, "pid", pid, "KTAU Signals Handled", sig,
		"KTAU Samples Taken", total,
	};
	struct ktau_outdir *od;
	int f, ret;
	FILE *out;

	/* Never over anybody's files (see ktau_outdir_open). */
	snprintf(path, sizeof(path), "%s/interp", dir);
	ret = ktau_outdir_open(path, "interp", -1, 0, &od);
	if (ret) {
		fprintf(stderr, "ktau-interp: %s\n", ktau_output_error());
		return ret;
	}
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(sig, sizeof(sig), "%lu", (unsigned long)nsignals);
	snprintf(total, sizeof(total), "%llu", (unsigned long long)sstats.taken);
	for (f = 0; f < NFUNCS; f++)
		rows[f] = (struct ktau_tau_row){ fname[f], "INTERP", ncalls[f], 0,
						 (double)excl_samples[f], (double)incl_samples[f] };
	out = ktau_outdir_create(od, "profile.0.0.0");
	if (!out) {
		ret = -errno;
		fprintf(stderr, "ktau-interp: %s\n", ktau_output_error());
		ktau_outdir_close(od);
		return ret;
	}
	ret = ktau_write_tau_rows(out, ktau_sample_event_name(spec.event), rows, NFUNCS, meta, 5);
	if (fclose(out) && !ret)
		ret = -errno;
	ktau_outdir_close(od);
	return ret;
}

/* DIR/kernel/: the thread's kernel profile, with the drained samples. */
static int write_kernel(const char *dir, struct ktau_snap *snap)
{
	struct ktau_registry *reg = NULL;
	struct ktau_tau_opts o = {
		.sample_metric = ktau_sample_event_name(spec.event), .samples = prof,
		.sample_period_ns = ktau_sample_period_ns(&spec),
	};
	char path[4096];
	int ret;

	snprintf(path, sizeof(path), "%s/kernel", dir);
	ktau_registry_load(&reg);
	ret = ktau_write_tau(path, snap, reg, &o);
	ktau_registry_free(reg);
	return ret < 0 ? ret : 0;
}

int main(int argc, char **argv)
{
	const char *dir = "ktau-interp-profile", *text = "cpu-clock:1ms";
	long F = 24, W = 2000, S = 20, R = 3, result;
	struct ktau_snap *snap = NULL;
	unsigned long total = 0;
	sigset_t prof_set;
	int c, f, quiet = 0, dom = F_MAIN, ret;

	while ((c = getopt(argc, argv, "f:w:s:r:e:o:qh")) != -1) {
		switch (c) {
		case 'f': F = atol(optarg); break;
		case 'w': W = atol(optarg); break;
		case 's': S = atol(optarg); break;
		case 'r': R = atol(optarg); break;
		case 'e': text = optarg; break;
		case 'o': dir = optarg; break;
		case 'q': quiet = 1; break;
		default:
			fprintf(stderr, "usage: ktau-interp [-f F] [-w W] [-s MS] [-r R] "
				"[-e EVENT:PERIOD] [-o DIR] [-q]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (F < 0 || F > 40 || W < 0 || S < 0 || S > 10000 || R < 0) {
		fprintf(stderr, "ktau-interp: -f 0..40, -w, -r >= 0, -s 0..10000 ms\n");
		return 2;
	}
	main_code[2].a = F;
	main_code[5].a = W;
	main_code[8].a = S;
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (devnull < 0) {
		perror("ktau-interp: /dev/null");
		return 1;
	}
	if (start_sampling(text))
		return 2;

	result = run(F_MAIN, R);
	if (result < 0) {
		fprintf(stderr, "ktau-interp: the interpreter failed\n");
		return 1;
	}
	/* The kernel profile with its samples first: they end with sampling. */
	if (kt && ktau_snapshot(kt, KTAU_LIB_SELF, NULL, 0, &snap))
		snap = NULL;
	sigemptyset(&prof_set);
	sigaddset(&prof_set, SIGPROF);
	sigprocmask(SIG_BLOCK, &prof_set, NULL);
	if (sampling)
		drain(1);

	for (f = 0; f < NFUNCS; f++) {
		total += excl_samples[f];
		if (excl_samples[f] > excl_samples[dom])
			dom = f;
	}
	ret = write_interp(dir, text);
	if (ret)
		fprintf(stderr, "ktau-interp: cannot write %s/interp: %s\n", dir, strerror(-ret));
	if (!ret && snap) {
		ret = write_kernel(dir, snap);
		if (ret)
			fprintf(stderr, "ktau-interp: cannot write %s/kernel: %s\n", dir,
				strerror(-ret));
	}
	if (!quiet) {
		printf("ktau-interp: %s: %lu signals handled, %llu sent, %llu samples taken, "
		       "%llu lost, %lu drained\n", text, (unsigned long)nsignals,
		       (unsigned long long)sstats.signals, (unsigned long long)sstats.taken,
		       (unsigned long long)sstats.lost, ndrained);
		for (f = 0; f < NFUNCS; f++)
			printf("  %-8s calls %8lu  samples excl %6lu (%5.1f%%)  incl %6lu\n", fname[f],
			       ncalls[f], (unsigned long)excl_samples[f],
			       total ? 100.0 * excl_samples[f] / total : 0.0,
			       (unsigned long)incl_samples[f]);
		if (total)
			printf("ktau-interp: dominant interpreted function: %s (%.1f%% of %lu "
			       "samples)\n", fname[dom], 100.0 * excl_samples[dom] / total, total);
		printf("ktau-interp: profiles in %s/interp and %s/kernel\n", dir, dir);
	}
	ktau_snap_free(snap);
	ktau_sample_profile_free(prof);
	ktau_usyms_free(usyms);
	ktau_ksyms_free(ksyms);
	ktau_close(kt);
	return ret ? 1 : 0;
}
