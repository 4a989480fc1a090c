// SPDX-License-Identifier: GPL-2.0
/* ktaud: helpers shared by the subcommands. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "ktaud.h"
#include "internal.h"

const char *prog = "ktaud";

void err_msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'ktaud %s --help'.\n", cmd ? cmd : "");
	return EX_KT_USAGE;
}

/*
 * A short option means one thing in every command that has it (as in perf
 * and git); the letters below once meant something else in some commands.
 */
int moved_short(const char *cmd, int c, const char *instead)
{
	static const struct { char c; const char *name; } common[] = {
		{ 'a', "--all" }, { 'c', "--count" }, { 'D', "--daemon" },
		{ 'i', "--interval" }, { 's', "--sort" }, { 't', "--threads" },
	};
	const char *name = "?";
	size_t i;

	for (i = 0; i < sizeof(common) / sizeof(common[0]); i++)
		if (common[i].c == c)
			name = common[i].name;
	return usage_err(cmd, "-%c is %s in every ktaud command that has it; here write %s",
			 c, name, instead);
}

int bare_before_command(const char *cmd, char **argv, int optind_now, int bare_end)
{
	const char *o;

	if (!bare_end || bare_end != optind_now || !argv[optind_now])
		return EX_KT_OK;
	o = argv[bare_end - 1];
	/* A short option's FILE is attached (-jFILE), a long one's after "=". */
	return usage_err(cmd, "'%s' '%s': a bare %s writes to stdout, and '%s' would be the command; "
			 "write %s%s%s, or end the options with --", o, argv[optind_now], o,
			 argv[optind_now], o, o[1] == '-' ? "=" : "", argv[optind_now]);
}

uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static struct sigaction xfsz_old;
static int xfsz_saved;

void xfsz_ignore(void)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };

	sigemptyset(&ign.sa_mask);
	xfsz_saved = !sigaction(SIGXFSZ, &ign, &xfsz_old);
}

void xfsz_restore(void)
{
	if (xfsz_saved)
		sigaction(SIGXFSZ, &xfsz_old, NULL);
}

int report(int err, const char *what)
{
	switch (-err) {
	case ENOENT:
		err_msg("%s: this kernel has no KTAU (/proc/ktau is missing); "
			"boot a kernel built with CONFIG_KTAU=y", what);
		return EX_KT_NOKTAU;
	case EPROTO:
		err_msg("%s: the kernel's KTAU ABI (/proc/ktau/version) is not version %d.x; "
			"use a ktaud built for this kernel", what, 1);
		return EX_KT_NOKTAU;
	case EPERM:
		err_msg("%s: operation not permitted: it needs CAP_PERFMON or CAP_SYS_ADMIN "
			"(run as root, or: setcap cap_perfmon+ep $(command -v ktaud))", what);
		return EX_KT_PERM;
	case EACCES:
		err_msg("%s: permission denied (another user's task needs CAP_SYS_PTRACE)", what);
		return EX_KT_PERM;
	case EBADMSG:
		err_msg("%s: malformed KTAU data (truncated or garbled)", what);
		return EX_KT_FAIL;
	default:
		err_msg("%s: %s", what, strerror(-err));
		return EX_KT_FAIL;
	}
}

int parse_pid(const char *s, pid_t *pid)
{
	unsigned long v;

	if (parse_uint(s, &v) || v == 0 || v > 0x7fffffff)
		return -EINVAL;
	*pid = v;
	return 0;
}

int parse_uint(const char *s, unsigned long *v)
{
	char *end;

	if (!*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

int parse_seconds(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(*v) || *v <= 0 || *v > 86400 * 365)
		return -EINVAL;
	return 0;
}

const char *fmt_ns(char *buf, size_t size, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, size, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, size, "%.2f us", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, size, "%.2f ms", ns / 1e6);
	else
		snprintf(buf, size, "%.3f s", ns / 1e9);
	return buf;
}

int open_ktau(struct ktau **k)
{
	int ret = ktau_open(k);

	return ret ? report(ret, "open /proc/ktau/profiles") : 0;
}

struct ktau_registry *load_registry(void)
{
	struct ktau_registry *reg = NULL;
	int ret = ktau_registry_load(&reg);

	if (ret) {
		err_msg("warning: cannot read /proc/ktau/functions (%s); routines are shown by ID",
			strerror(-ret));
		return NULL;
	}
	return reg;
}

void group_totals(const struct ktau_task *t, const struct ktau_registry *reg,
		  uint64_t *calls, uint64_t *excl)
{
	size_t i;
	int g;

	for (i = 0; i < t->nentries; i++) {
		g = ktau_func_group(reg, t->entries[i].id);
		if (g < 0 || g >= KTAU_LIB_NR_GROUPS)
			g = KTAU_LIB_NR_GROUPS;
		calls[g] += t->entries[i].count;
		excl[g] += t->entries[i].excl_ns;
	}
}

/* Sorting of table rows. */
static const struct ktau_registry *sort_reg;
static const char *sort_key;

static int cmp_row(const void *a, const void *b)
{
	const struct ktau_func_stat *x = *(const struct ktau_func_stat * const *)a;
	const struct ktau_func_stat *y = *(const struct ktau_func_stat * const *)b;
	uint64_t vx, vy;

	if (!strcmp(sort_key, "name"))
		return strcmp(ktau_func_name(sort_reg, x->id), ktau_func_name(sort_reg, y->id));
	if (!strcmp(sort_key, "id"))
		return x->id < y->id ? -1 : x->id > y->id;
	if (!strcmp(sort_key, "incl")) {
		vx = x->incl_ns;
		vy = y->incl_ns;
	} else if (!strcmp(sort_key, "calls")) {
		vx = x->count;
		vy = y->count;
	} else if (!strcmp(sort_key, "avg")) {
		vx = x->count ? x->incl_ns / x->count : 0;
		vy = y->count ? y->incl_ns / y->count : 0;
	} else {
		vx = x->excl_ns;
		vy = y->excl_ns;
	}
	if (vx != vy)
		return vx > vy ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void print_task(FILE *f, const struct ktau_snap *snap, const struct ktau_task *t,
		       const struct ktau_registry *reg, const struct table_opts *o)
{
	const struct ktau_func_stat **rows;
	char b1[32], b2[32], b3[32], b4[32], comm[17];
	uint64_t total = ktau_task_total_excl(t), oncpu = ktau_task_oncpu_excl(t);
	size_t i, n;

	memcpy(comm, t->comm, 16);
	comm[16] = '\0';
	if (t->flags & KTAU_TASK_AGGREGATE)
		fprintf(f, "aggregate (all tasks, system-wide)");
	else if (t->flags & KTAU_TASK_PROCESS)
		fprintf(f, "process %d (%s), %u thread%s", t->pid, comm, t->nthreads,
			t->nthreads == 1 ? "" : "s");
	else
		fprintf(f, "thread %d of process %d (%s)", t->tid, t->pid, comm);
	if (t->flags & KTAU_TASK_EXITED)
		fprintf(f, ", exited");
	if (t->flags & KTAU_TASK_KTHREAD)
		fprintf(f, ", kernel thread");
	fprintf(f, ": kernel time on CPU %s", fmt_ns(b1, sizeof(b1), oncpu));
	if (!(t->flags & (KTAU_TASK_AGGREGATE | KTAU_TASK_EXITED | KTAU_TASK_PROCESS)) &&
	    !snap->is_delta && snap->time_ns > t->start_ns)
		fprintf(f, " of %s since start (%.1f%%)",
			fmt_ns(b2, sizeof(b2), snap->time_ns - t->start_ns),
			100.0 * oncpu / (snap->time_ns - t->start_ns));
	fprintf(f, ", off CPU %s", fmt_ns(b4, sizeof(b4), ktau_task_offcpu(t)));
	if (ktau_task_guest(t))
		fprintf(f, ", in guest mode %s", fmt_ns(b4, sizeof(b4), ktau_task_guest(t)));
	if (snap->is_delta && snap->time_ns > snap->base_ns)
		fprintf(f, " in the last %s", fmt_ns(b2, sizeof(b2), snap->time_ns - snap->base_ns));
	fputc('\n', f);
	if (t->stack_overflows || t->table_overflows || t->unmatched)
		fprintf(f, "  overflows: stack %llu, table %llu, unmatched %llu\n",
			(unsigned long long)t->stack_overflows,
			(unsigned long long)t->table_overflows, (unsigned long long)t->unmatched);
	if (!t->nentries) {
		fprintf(f, "  (no kernel routines recorded)\n\n");
		return;
	}
	rows = malloc(t->nentries * sizeof(*rows));
	if (!rows)
		return;
	for (i = 0; i < t->nentries; i++)
		rows[i] = &t->entries[i];
	sort_reg = reg;
	sort_key = o->sort ? o->sort : "excl";
	qsort(rows, t->nentries, sizeof(*rows), cmp_row);
	n = o->top && o->top < t->nentries ? o->top : t->nentries;
	fprintf(f, "  %-28s %-8s %12s %12s %12s %12s %7s\n", "routine", "group", "calls",
		"exclusive", "inclusive", "average", "share");
	for (i = 0; i < n; i++) {
		const struct ktau_func_stat *e = rows[i];
		const char *g = ktau_group_name(ktau_func_group(reg, e->id));

		fprintf(f, "  %-28s %-8s %12llu %12s %12s %12s %6.2f%%\n",
			ktau_func_name(reg, e->id), g ? g : "?", (unsigned long long)e->count,
			fmt_ns(b1, sizeof(b1), e->excl_ns), fmt_ns(b2, sizeof(b2), e->incl_ns),
			fmt_ns(b3, sizeof(b3), e->count ? e->incl_ns / e->count : 0),
			total ? 100.0 * e->excl_ns / total : 0.0);
	}
	if (n < t->nentries)
		fprintf(f, "  ... %zu more routines (--top 0 shows all)\n", t->nentries - n);
	fputc('\n', f);
	free(rows);
}

void print_tables(FILE *f, const struct ktau_snap *snap, const struct ktau_registry *reg,
		  const struct table_opts *o)
{
	size_t i;

	fprintf(f, "# share: of the task's kernel time, on and off the CPU (exclusive); "
		"average: inclusive per call\n");
	for (i = 0; i < snap->ntasks; i++)
		print_task(f, snap, &snap->tasks[i], reg, o);
}

int outdir_report(int err, const char *cmd)
{
	const char *why = ktau_output_error();

	if (!*why) {
		err_msg("%s: %s", cmd, strerror(-err));
		return EX_KT_FAIL;
	}
	err_msg("%s: %s%s", cmd, why, err == -ENOTEMPTY ? " (or give --force: files that are "
		"not its own are never replaced)" : "");
	return EX_KT_FAIL;
}

char *output_path(const char *tmpl)
{
	char *p = ktau_output_path(tmpl);

	if (!p)
		report(-ENOMEM, "output path");
	return p;
}

/*
 * Under an MPI launcher, a file named by @tmpl without %r would be
 * written by every rank: an exit code after a message, or EX_KT_OK.
 */
static int rank_unique(const char *tmpl)
{
	int r = ktau_mpi_rank();
	const char *p;

	if (r < 0 || !strcmp(tmpl, "-") || !strncmp(tmpl, "/dev/", 5))
		return EX_KT_OK;
	for (p = tmpl; (p = strchr(p, '%')); p += 2)
		if (p[1] == 'r')
			return EX_KT_OK;
		else if (!p[1])
			break;
	err_msg("%s would be written by every MPI rank (this is rank %d): put %%r in its name "
		"(e.g. %s.%%r)", tmpl, r, tmpl);
	return EX_KT_USAGE;
}

/*
 * Single output files that ktaud wrote carry this extended attribute, its
 * value the file's inode, size and modification time when it was
 * written: a later run may replace such a file while it is as ktaud left
 * it. Any other existing file with something in it (a user's, a copy, one
 * appended to since) is left alone unless --force (out_force) is given.
 */
#define OUT_FILE_XATTR	"user.ktau.output"
int out_force;

bool is_stdout_name(const char *path)
{
	return !strcmp(path, "-") || !strcmp(path, "/dev/stdout") || !strcmp(path, "/dev/fd/1");
}

static int out_mark(char *buf, size_t len, const struct stat *st)
{
	return snprintf(buf, len, "%llu:%lld:%lld.%09ld", (unsigned long long)st->st_ino,
			(long long)st->st_size, (long long)st->st_mtim.tv_sec,
			st->st_mtim.tv_nsec);
}

/*
 * Where the file system keeps no user extended attributes (NFSv3, vfat),
 * the mark is a small file beside FILE instead: ".NAME.ktau-mark", holding
 * OUT_MARK_HEAD and the mark. It is written only where no such file is or
 * where it is one of these, and read only when the attribute cannot be.
 */
#define OUT_MARK_SUFFIX	".ktau-mark"
#define OUT_MARK_HEAD	"ktau-output 1 "

/* ".NAME@suffix" in @path's directory (the temporary file, the mark file). */
static char *out_beside(const char *path, const char *suffix)
{
	const char *slash = strrchr(path, '/');

	return slash ? ktau__strfmt("%.*s/.%s%s", (int)(slash - path), path, slash + 1, suffix)
		     : ktau__strfmt(".%s%s", path, suffix);
}

static char *out_mark_path(const char *path)
{
	return out_beside(path, OUT_MARK_SUFFIX);
}

/* The mark file's content in @buf: its length, or -1 (none, or not one). */
static ssize_t out_mark_read(const char *mpath, char *buf, size_t len)
{
	int fd = open(mpath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	ssize_t n = -1;

	if (fd < 0)
		return -1;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode))
		n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return strncmp(buf, OUT_MARK_HEAD, strlen(OUT_MARK_HEAD)) ? -1 : n;
}

/* Whether @path (a regular file, @st) is as ktaud left it; errno ENOTSUP: no attributes. */
static bool out_file_ours(const char *path, const struct stat *st)
{
	char v[128], want[96], line[128], *mpath;
	ssize_t n = lgetxattr(path, OUT_FILE_XATTR, v, sizeof(v) - 1);

	out_mark(want, sizeof(want), st);
	if (n >= 0) {
		v[n] = '\0';
		return !strcmp(v, want);
	}
	if (errno != ENOTSUP)
		return false;
	/* No attributes here: the mark file, "ktau-output 1 MARK\n". */
	mpath = out_mark_path(path);
	n = mpath ? out_mark_read(mpath, v, sizeof(v)) : -1;
	free(mpath);
	snprintf(line, sizeof(line), OUT_MARK_HEAD "%s\n", want);
	if (n > 0 && !strcmp(v, line))
		return true;
	errno = ENOTSUP;	/* for the message: the attributes could not tell */
	return false;
}

/*
 * Where the file system keeps no attributes, the mark file of @path
 * (published by then) with @mark: 0 or -errno.
 */
static int out_mark_file_write(const char *path, const char *mark)
{
	char old[128], *mpath = out_mark_path(path);
	int mfd, ret = 0;

	if (!mpath)
		return -ENOMEM;
	/* Someone else's file of that name is left as it is. */
	if (!access(mpath, F_OK) && out_mark_read(mpath, old, sizeof(old)) < 0) {
		free(mpath);
		return -EEXIST;
	}
	mfd = open(mpath, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
	free(mpath);
	if (mfd < 0)
		return -errno;
	if (dprintf(mfd, OUT_MARK_HEAD "%s\n", mark) < 0)
		ret = -errno;
	if (close(mfd) && !ret)
		ret = -errno;
	return ret;
}

static void out_mark_warn(const char *path, int err)
{
	fprintf(stderr, "%s: warning: cannot mark %s as ktaud's (%s): a later run will need "
		"--force to replace it\n", prog, path, err == -EEXIST ? "a file of another's "
		"has the name of its mark file" : strerror(-err));
}

/*
 * Whether @path may be written: EX_KT_OK, with of->direct set for a device
 * or FIFO (written as it is) and of->existed, of->dev and of->ino for a
 * file that is there; or an exit code after a message.
 */
static int out_path_check(const char *path, struct out_file *of)
{
	struct stat st, to;

	if (lstat(path, &st))
		return EX_KT_OK;
	/* Through a link only to a device or FIFO (/dev/stderr, a pipe). */
	to = st;
	if (S_ISLNK(st.st_mode) && stat(path, &to))
		to.st_mode = S_IFLNK;
	if (S_ISCHR(to.st_mode) || S_ISFIFO(to.st_mode)) {
		of->direct = true;
		return EX_KT_OK;
	}
	if (!S_ISREG(st.st_mode)) {
		err_msg("%s exists and is %s: nothing was written; name a file", path,
			S_ISDIR(st.st_mode) ? "a directory" : S_ISLNK(st.st_mode) ?
			"a symbolic link (not written through)" : "not a regular file");
		return EX_KT_FAIL;
	}
	if (st.st_size && !out_force && !out_file_ours(path, &st)) {
		int e = errno;

		err_msg("%s exists and is not a file ktaud wrote (or it changed since): nothing "
			"was written; remove it, name another file, or give --force to replace "
			"it%s", path, e == ENOTSUP ? " (its file system keeps no extended "
			"attributes, by which ktaud knows its own files)" : "");
		return EX_KT_FAIL;
	}
	of->existed = true;
	of->dev = st.st_dev;
	of->ino = st.st_ino;
	return EX_KT_OK;
}

/*
 * The file at @path is still the one out_path_check() let ktaud replace:
 * the same inode, and (without --force) still empty or still as ktaud
 * left it (someone may have written into it meanwhile).
 */
static bool out_still_as_seen(const char *path, const struct out_file *of)
{
	struct stat st;

	if (lstat(path, &st) || st.st_dev != of->dev || st.st_ino != of->ino)
		return false;
	return out_force || !st.st_size || out_file_ours(path, &st);
}

int out_file_check(const char *tmpl)
{
	struct out_file of = { 0 };
	char *path;
	int ret;

	if (!tmpl || is_stdout_name(tmpl))
		return EX_KT_OK;
	ret = rank_unique(tmpl);
	if (ret)
		return ret;
	path = output_path(tmpl);
	if (!path)
		return EX_KT_FAIL;
	ret = out_path_check(path, &of);
	free(path);
	return ret;
}

/* A device or FIFO, opened without creating or truncating anything. */
static int out_open_direct(struct out_file *of)
{
	struct stat st;
	int fd = open(of->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
		close(fd);
		return -EEXIST;
	}
	of->f = fdopen(fd, "w");
	if (!of->f) {
		close(fd);
		return -errno;
	}
	return 0;
}

int out_file_open(struct out_file *of, const char *tmpl)
{
	int fd, ret;

	memset(of, 0, sizeof(*of));
	/* Standard output by its names too: a file it goes to is the shell's. */
	if (is_stdout_name(tmpl)) {
		of->f = stdout;
		return EX_KT_OK;
	}
	ret = rank_unique(tmpl);
	if (ret)
		return ret;
	of->path = output_path(tmpl);
	if (!of->path)
		return EX_KT_FAIL;
	ret = out_path_check(of->path, of);
	if (ret) {
		free(of->path);
		of->path = NULL;
		return ret;
	}
	if (of->direct) {
		ret = out_open_direct(of);
		if (!ret)
			return EX_KT_OK;
		err_msg("cannot write %s: %s", of->path, ret == -EEXIST ?
			"it is no longer a device or FIFO" : strerror(-ret));
		goto fail;
	}
	/* Beside it, so that the rename at the end stays in one file system. */
	of->tmp = out_beside(of->path, ".XXXXXX");
	if (!of->tmp) {
		report(-ENOMEM, "output file");
		goto fail;
	}
	fd = mkstemp(of->tmp);
	if (fd < 0) {
		err_msg("cannot write %s: cannot create a file beside it: %s", of->path,
			strerror(errno));
		free(of->tmp);
		of->tmp = NULL;
		goto fail;
	}
	/* mkstemp's 0600, as the umask would have made it. */
	(void)fchmod(fd, 0666 & ~ktau__umask());
	of->f = fdopen(fd, "w");
	if (of->f)
		return EX_KT_OK;
	err_msg("cannot write %s: %s", of->path, strerror(errno));
	close(fd);
	unlink(of->tmp);
	free(of->tmp);
	of->tmp = NULL;
fail:
	free(of->path);
	of->path = NULL;
	return EX_KT_FAIL;
}

/*
 * The complete temporary file takes FILE's name, atomically, only if FILE
 * is still what out_path_check() saw: absent (RENAME_NOREPLACE, or link()
 * where the file system has no renameat2() flags, or a check and rename
 * where it has no hard links either), or the same file
 * (RENAME_EXCHANGE, the one swapped out checked and swapped back when it
 * is another). -EEXIST: someone else's file took the name meanwhile.
 */
static int out_publish(const struct out_file *of)
{
	struct stat st;

	if (!of->existed) {
		if (!renameat2(AT_FDCWD, of->tmp, AT_FDCWD, of->path, RENAME_NOREPLACE))
			return 0;
		if (errno != EINVAL && errno != ENOSYS)
			return -errno;
		if (!link(of->tmp, of->path)) {
			unlink(of->tmp);
			return 0;
		}
		if (errno != EPERM && errno != ENOTSUP && errno != ENOSYS)
			return -errno;
		/* Neither (vfat, some FUSE): check, then rename. */
		if (!lstat(of->path, &st))
			return -EEXIST;
		return rename(of->tmp, of->path) ? -errno : 0;
	}
	if (!renameat2(AT_FDCWD, of->tmp, AT_FDCWD, of->path, RENAME_EXCHANGE)) {
		if (out_still_as_seen(of->tmp, of)) {
			unlink(of->tmp);
			return 0;
		}
		(void)renameat2(AT_FDCWD, of->tmp, AT_FDCWD, of->path, RENAME_EXCHANGE);
		return -EEXIST;
	}
	if (errno == ENOENT)	/* removed meanwhile: as if never there */
		return renameat2(AT_FDCWD, of->tmp, AT_FDCWD, of->path, RENAME_NOREPLACE) ?
		       -errno : 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	if (!out_still_as_seen(of->path, of))
		return -EEXIST;
	return rename(of->tmp, of->path) ? -errno : 0;
}

int out_file_close(struct out_file *of, int err, const char *what)
{
	const char *name = of->path ? of->path : "stdout";
	int ret = err, e = errno, mret;
	struct stat st;
	char mark[96];

	if (!of->f)
		return EX_KT_FAIL;
	/* The writers say -EIO for any failed write: the stream knows why. */
	if (ret == -EIO && ferror(of->f) && e > 0 && e != EIO)
		ret = -e;
	/*
	 * Ours, for the next run (best effort: a later run then needs
	 * --force). Without attributes the mark file is written once the
	 * file has its name: before, it would still describe the file that
	 * the publishing checks for being as ktaud left it.
	 */
	mark[0] = '\0';
	if (!ret && of->tmp) {
		if (fflush(of->f) || fstat(fileno(of->f), &st))
			ret = -errno;
		else if (out_mark(mark, sizeof(mark), &st) > 0 &&
			 !fsetxattr(fileno(of->f), OUT_FILE_XATTR, mark, strlen(mark), 0))
			mark[0] = '\0';
		else if (errno != ENOTSUP) {
			out_mark_warn(of->path, -errno);
			mark[0] = '\0';
		}
	}
	if (of->f == stdout) {
		if ((fflush(stdout) || ferror(stdout)) && !ret)
			ret = -(errno ? errno : EIO);
	} else if (fclose(of->f) && !ret) {
		ret = -errno;
	}
	of->f = NULL;
	if (!ret && of->tmp) {
		ret = out_publish(of);
		if (!ret && mark[0] && (mret = out_mark_file_write(of->path, mark)))
			out_mark_warn(of->path, mret);
		if (ret == -EEXIST) {
			err_msg("%s appeared or changed while ktaud wrote %s: not replaced; "
				"ktaud's output is in %s", of->path, what, of->tmp);
			free(of->tmp);
			free(of->path);
			of->tmp = of->path = NULL;
			return EX_KT_FAIL;
		}
	}
	if (ret && of->tmp)
		unlink(of->tmp);
	if (ret)
		err_msg("cannot write %s to %s: %s%s", what, name, strerror(-ret),
			of->tmp ? " (nothing was written)" : "");
	free(of->tmp);
	free(of->path);
	of->tmp = of->path = NULL;
	return ret ? EX_KT_FAIL : EX_KT_OK;
}

void out_file_discard(struct out_file *of)
{
	if (of->f && of->f != stdout)
		fclose(of->f);
	if (of->tmp)
		unlink(of->tmp);
	free(of->tmp);
	free(of->path);
	memset(of, 0, sizeof(*of));
}

int expand_outputs(struct out_opts *o)
{
	const char **paths[4] = { &o->tau_dir, &o->json_path, &o->folded_path, &o->save_path };
	size_t i;

	for (i = 0; i < 4; i++) {
		int ret;

		/*
		 * Refused before anything runs (the TAU directory has its
		 * node); --json, --folded and --save FILE, expanded as they
		 * are written, checked as out_file_open() will.
		 */
		if (i == 3 && *paths[i] && is_stdout_name(*paths[i])) {
			err_msg("--save needs a file, not standard output (a snapshot file is "
				"binary): give a FILE");
			return EX_KT_USAGE;
		}
		if (i) {
			ret = *paths[i] ? out_file_check(*paths[i]) : EX_KT_OK;
			if (ret)
				return ret;
			continue;
		}
		if (!*paths[i] || !strcmp(*paths[i], "-") || !strchr(*paths[i], '%'))
			continue;
		o->owned[i] = output_path(*paths[i]);
		if (!o->owned[i])
			return EX_KT_FAIL;
		*paths[i] = o->owned[i];
	}
	return EX_KT_OK;
}

int prepare_outputs(struct out_opts *o)
{
	int ret;

	o->rank = ktau_mpi_rank();
	o->has_rank = o->rank >= 0;
	ret = expand_outputs(o);
	if (ret || !o->tau_dir)
		return ret;
	ret = ktau_outdir_open(o->tau_dir, "kernel", o->has_rank ? o->rank : -1,
			       KTAU_OUTDIR_CHECK | (o->force ? KTAU_OUTDIR_FORCE : 0), NULL);
	return ret ? outdir_report(ret, "the command is not run") : EX_KT_OK;
}

void free_outputs(struct out_opts *o)
{
	size_t i;

	for (i = 0; i < 4; i++) {
		free(o->owned[i]);
		o->owned[i] = NULL;
	}
}

/* What one output gets: a snapshot and its registry, or a JSON document. */
struct out_job {
	const struct ktau_snap *snap;
	const struct ktau_registry *reg;
	struct json_object *doc;
};

static int put_json(FILE *f, const struct out_job *j)
{
	return ktau_write_json(f, j->snap, j->reg, 1);
}

static int put_folded(FILE *f, const struct out_job *j)
{
	return ktau_write_folded(f, j->snap, j->reg, 0);
}

static int put_snap(FILE *f, const struct out_job *j)
{
	int ret = fflush(f) ? -errno : ktau__snap_write_fd(fileno(f), j->snap, j->reg);
	struct stat st;

	/* On the disk before it takes FILE's name; a device or FIFO as it is. */
	if (!ret && !fstat(fileno(f), &st) && S_ISREG(st.st_mode) && fsync(fileno(f)))
		ret = -errno;
	return ret;
}

static int put_doc(FILE *f, const struct out_job *j)
{
	return fputs(json_object_to_json_string_ext(j->doc, JSON_C_TO_STRING_PRETTY), f) < 0 ||
	       fputc('\n', f) == EOF ? -EIO : 0;
}

/*
 * @put into @path (NULL or "-": stdout); an exit code, what went wrong
 * said as "cannot write @what to @path".
 */
static int write_to(const char *path, const char *what,
		    int (*put)(FILE *f, const struct out_job *j), const struct out_job *j)
{
	struct out_file of;
	int ret = out_file_open(&of, path ? path : "-");

	if (ret)
		return ret;
	return out_file_close(&of, put(of.f, j), what);
}

int write_outputs(const struct ktau_snap *snap, const struct ktau_registry *reg,
		  const struct out_opts *o)
{
	const struct out_job job = { .snap = snap, .reg = reg };
	struct ktau_tau_opts topts = { 0 };
	int ret;

	if (o->tau_opts)
		topts = *o->tau_opts;
	topts.dense_processes = o->dense;
	topts.force = o->force;
	topts.has_rank = o->has_rank;
	topts.rank = o->rank;

	if (o->tau_dir) {
		ret = ktau_write_tau(o->tau_dir, snap, reg, &topts);
		if (ret < 0)
			return outdir_report(ret, "the TAU profile was not written");
	}
	/*
	 * As every single output file: an existing FILE is replaced only
	 * when ktaud wrote it (a copy, or another host's file of that name
	 * on a shared directory, is not), or with --force.
	 */
	if (o->save_path && (ret = write_to(o->save_path, "the snapshot", put_snap, &job)))
		return ret;
	if (o->json_path && (ret = write_to(o->json_path, "JSON", put_json, &job)))
		return ret;
	if (o->folded_path && (ret = write_to(o->folded_path, "folded stacks", put_folded, &job)))
		return ret;
	return EX_KT_OK;
}

int write_json_doc(struct json_object *o, const char *path)
{
	return write_to(path, "JSON", put_doc, &(struct out_job){ .doc = o });
}

int write_json_folded(const struct ktau_snap *snap, const struct ktau_registry *reg,
		      const char *json_path, const char *folded_path)
{
	struct out_opts oo = { .json_path = json_path, .folded_path = folded_path };
	int ret = EX_KT_OK;

	if (!json_path && !folded_path)
		return ret;
	ret = expand_outputs(&oo);
	if (!ret)
		ret = write_outputs(snap, reg, &oo);
	free_outputs(&oo);
	return ret;
}

int json_folded_to_stdout(const char *cmd, const char *json_path, const char *folded_path,
			  int *to_stdout)
{
	int j = json_path && is_stdout_name(json_path), f = folded_path && is_stdout_name(folded_path);

	if (j && f)
		return usage_err(cmd, "--json and --folded both write to stdout: choose one, "
				 "or give one a file (--json=FILE)");
	*to_stdout = j || f;
	return EX_KT_OK;
}
