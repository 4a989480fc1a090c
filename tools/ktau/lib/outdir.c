// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: output directories that never lose anybody's data.
 *
 * Every writer of a TAU profile directory (ktau_write_tau, the runtime,
 * ktaud merge and combine, the examples) goes through ktau_outdir_open():
 *
 *  - A manifest ".ktau-written.<kind>[.<node>]" in the directory lists,
 *    one relative path a line, what that writer (kind: "kernel", "user",
 *    "merge", ...; node: its node or MPI rank, none: every node) wrote.
 *    A name is added before its file is created, so whatever a reader
 *    finds in the directory is listed by then.
 *  - Opening refuses (-ENOTEMPTY, nothing touched) a directory holding
 *    anything not listed in a manifest of the same kind (a user's own TAU
 *    profile, notes, another kind's output), unless KTAU_OUTDIR_FORCE.
 *  - Then it removes the files its own manifest lists from an earlier run,
 *    and only those that are still as it left them (the inode, size and
 *    time stamped at close; without a stamp, after a crash: regular files
 *    of our names whose content starts like a TAU profile, or empty ones
 *    of the user). A file changed since is kept, still listed, and then
 *    in the way (-EEXIST, said). The manifest is read only when it is the
 *    user's own regular file, with one link, that nobody else may write
 *    (-EPERM), and files are removed relative to the directory without
 *    following a symbolic link. Output of the same kind and node that
 *    another process finished after this one started is not an earlier
 *    run's (-EEXIST, also forced): the manifest's header names its
 *    writer (pid and start), and a line at close when it closed, in
 *    CLOCK_BOOTTIME of this boot. A writer that failed
 *    (ktau__outdir_failed()) removes at close every file it made.
 *  - Files are created with O_EXCL: a file that exists is never replaced
 *    (-EEXIST: another writer has the same node, or a foreign file has the
 *    name). The manifest is locked (flock) while the writer writes: a
 *    second writer of the same kind and node gets -EBUSY.
 *  - From open to close the calling thread blocks SIGXFSZ: a file size
 *    limit (RLIMIT_FSIZE) makes a write fail with EFBIG instead of killing
 *    the process with its files half written; the signal stays pending
 *    and takes its effect (the default kills the process) once close has
 *    removed what the failed write made (the thread's last close: they
 *    nest, in any order). Only SIGXFSZ's bit changes, and only when it
 *    was not blocked already. Open, write and close in one thread (a
 *    close in another leaves the opener's SIGXFSZ blocked). A child made
 *    by fork() meanwhile starts with SIGXFSZ as it was (ktaud trace runs
 *    its command so); one made by posix_spawn(), vfork(), system() or
 *    popen() runs no fork handler and starts with it blocked
 *    (POSIX_SPAWN_SETSIGMASK sets its mask).
 *
 * Thus MPI ranks (each its own node and manifest) and machines writing
 * into one shared directory never overwrite each other.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "libktau.h"
#include "internal.h"

#define MANIFEST	".ktau-written."
/*
 * A manifest: a header line "# ktau-written 1 kind=K node=N host=H pid=P",
 * one line per file or directory ("sub/") this writer made, written before
 * it makes it, and at close a line "=INODE SIZE MTIME_NS NAME" per file:
 * a file is removed later only when it still has that inode, size and
 * time (or, without the line, when its content starts like ours).
 */
#define MANIFEST_HEAD	"# ktau-written 1"

/* A set of relative paths, as the manifests list them. */
struct names {
	char **v;
	size_t n, cap;
};

struct ktau_outdir {
	char *dir;
	char *manifest;		/* its path */
	int fd;			/* the manifest, locked */
	int flags;
	int failed;		/* ktau__outdir_failed(): what it made goes at close */
	struct names kept;	/* the earlier run's files left (changed since) */
	unsigned long xfsz;	/* its hold of SIGXFSZ (ktau__xfsz_hold()) */
};

/* The calling thread's last message (ktau__why_set()). */
#define WHY_SIZE	1024
static __thread char *why;

const char *ktau_output_error(void)
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

mode_t ktau__umask(void)
{
	char *text, *l;
	size_t len;
	unsigned int m;
	mode_t um = 022;

	if (ktau__slurp("/proc/self/status", &text, &len))
		return um;
	l = strstr(text, "\nUmask:");
	if (l && sscanf(l + 7, "%o", &m) == 1)
		um = (mode_t)(m & 0777);
	free(text);
	return um;
}

static int mkdir_p(const char *dir)
{
	char *p, *d = strdup(dir);
	int ret = 0;

	if (!d)
		return -ENOMEM;
	for (p = d + 1; ; p++) {
		if (*p == '/' || !*p) {
			char c = *p;

			*p = '\0';
			if (mkdir(d, 0755) && errno != EEXIST) {
				ret = -errno;
				break;
			}
			*p = c;
			if (!c)
				break;
		}
	}
	free(d);
	return ret;
}

static int names_add(struct names *s, const char *name, size_t len)
{
	char *d;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		char **v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	d = strndup(name, len);
	if (!d)
		return -ENOMEM;
	s->v[s->n++] = d;
	return 0;
}

static int names_has(const struct names *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->v[i], name))
			return 1;
	return 0;
}

static void names_free(struct names *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* The lines of a manifest's text (not its header) into s. */
static int names_parse(struct names *s, const char *text)
{
	const char *l, *e;
	int ret = 0;

	for (l = text; *l && !ret; l = *e ? e + 1 : e) {
		e = strchrnul(l, '\n');
		if (e > l && *l != '#' && *l != '=')
			ret = names_add(s, l, (size_t)(e - l));
	}
	return ret;
}

/* Manifest name ".ktau-written.<kind>[.<node>]" is of kind. */
static int manifest_kind_is(const char *name, const char *kind)
{
	size_t l = strlen(kind);

	if (strncmp(name, MANIFEST, sizeof(MANIFEST) - 1))
		return 0;
	name += sizeof(MANIFEST) - 1;
	return !strncmp(name, kind, l) && (!name[l] || name[l] == '.');
}

static int is_manifest(const char *name)
{
	return !strncmp(name, MANIFEST, sizeof(MANIFEST) - 1);
}

/* Everything the manifests of kind in top/prefix list, as paths from top. */
static int read_manifests(const char *top, const char *prefix, const char *kind,
			  struct names *s)
{
	struct names here = { 0 };
	struct dirent *de;
	char path[PATH_MAX], *text;
	size_t len, i;
	int ret = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s%s%s", top, *prefix ? "/" : "", prefix);
	d = opendir(path);
	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		if (!manifest_kind_is(de->d_name, kind))
			continue;
		if (snprintf(path, sizeof(path), "%s%s%s/%s", top, *prefix ? "/" : "", prefix,
			     de->d_name) >= (int)sizeof(path) ||
		    ktau__slurp(path, &text, &len))
			continue;
		ret = names_parse(&here, text);
		free(text);
	}
	closedir(d);
	for (i = 0; !ret && i < here.n; i++) {
		if (!*prefix) {
			ret = names_add(s, here.v[i], strlen(here.v[i]));
			continue;
		}
		if (snprintf(path, sizeof(path), "%s/%s", prefix, here.v[i]) < (int)sizeof(path))
			ret = names_add(s, path, strlen(path));
	}
	names_free(&here);
	return ret;
}

/* A directory of ours to look into: a metric's, or one with a manifest. */
static int worth_entering(const char *path, const char *name)
{
	struct dirent *de;
	int found = !strncmp(name, "MULTI__", 7);
	DIR *d;

	if (found)
		return 1;
	d = opendir(path);
	if (!d)
		return 0;
	while (!found && (de = readdir(d)))
		found = is_manifest(de->d_name);
	closedir(d);
	return found;
}

/*
 * What top/prefix holds, as paths from top: files into files, and the
 * directories gone into (at most 4 deep; only metric directories and
 * those with a manifest) into dirs; an empty directory, or one not gone
 * into, is a file ("sub/"), a manifest is neither.
 */
static int list_tree(const char *top, const char *prefix, struct names *files,
		     struct names *dirs, int depth)
{
	char path[PATH_MAX], rel[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int ret = 0, empty = 1;
	DIR *d;

	snprintf(path, sizeof(path), "%s%s%s", top, *prefix ? "/" : "", prefix);
	d = opendir(path);
	if (!d)
		return errno == ENOENT && depth ? 0 : -errno;
	while (!ret && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		empty = 0;
		if (is_manifest(de->d_name))
			continue;
		if (snprintf(rel, sizeof(rel), "%s%s%s", prefix, *prefix ? "/" : "", de->d_name) >=
		    (int)sizeof(rel) - 2 ||
		    snprintf(path, sizeof(path), "%s/%s", top, rel) >= (int)sizeof(path))
			continue;
		if (!lstat(path, &st) && S_ISDIR(st.st_mode)) {
			if (depth < 4 && worth_entering(path, de->d_name)) {
				ret = names_add(dirs, rel, strlen(rel));
				if (!ret)
					ret = list_tree(top, rel, files, dirs, depth + 1);
				continue;
			}
			strcat(rel, "/");
		}
		ret = names_add(files, rel, strlen(rel));
	}
	closedir(d);
	if (!ret && empty && depth) {
		snprintf(rel, sizeof(rel), "%s/", prefix);
		ret = names_add(files, rel, strlen(rel));
	}
	return ret;
}

/*
 * The first thing in dir that no manifest of kind lists, into bad: 1, or
 * 0 when there is none, or -errno. The manifests are read after the
 * listing (a writer lists a name before it makes the file), and what is
 * not listed must still be there (its writer may have removed it).
 */
static int find_foreign(const char *dir, const char *kind, char *bad, size_t badsz)
{
	struct names files = { 0 }, dirs = { 0 }, listed = { 0 };
	char path[PATH_MAX];
	struct stat st;
	size_t i;
	int ret;

	ret = list_tree(dir, "", &files, &dirs, 0);
	if (!ret)
		ret = read_manifests(dir, "", kind, &listed);
	for (i = 0; !ret && i < dirs.n; i++)
		ret = read_manifests(dir, dirs.v[i], kind, &listed);
	for (i = 0; !ret && i < files.n; i++) {
		if (names_has(&listed, files.v[i]))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, files.v[i]) >= (int)sizeof(path) ||
		    lstat(path, &st))
			continue;	/* removed meanwhile by its writer */
		snprintf(bad, badsz, "%s", files.v[i]);
		ret = 1;
	}
	names_free(&files);
	names_free(&dirs);
	names_free(&listed);
	return ret;
}

/*
 * The directory that holds @rel ("file" or "sub/file", as a writer lists
 * them) in the directory @dfd, opened without following a symbolic link
 * (one planted in a shared directory would lead the removal anywhere),
 * and in *@base its last component: an fd to close, or -1.
 */
static int open_parent(int dfd, const char *rel, const char **base)
{
	const char *slash = strchr(rel, '/');
	char sub[NAME_MAX + 1];

	*base = rel;
	if (!slash)
		return fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	if (strchr(slash + 1, '/') || slash == rel || (size_t)(slash - rel) > NAME_MAX)
		return -1;
	memcpy(sub, rel, (size_t)(slash - rel));
	sub[slash - rel] = '\0';
	*base = slash + 1;
	return openat(dfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/*
 * A file we wrote and nobody changed into something else (no stamp: its
 * writer did not close the directory). A TAU profile is ours only with
 * KTAU's metadata (every libktau and ktaud writer puts a "KTAU ..." item
 * in it): TAU itself writes profile.N.C.T files of the same names, for
 * example into the directory of a run that crashed. An empty file of
 * this user (a writer killed between creating and writing it) holds
 * nobody's data.
 */
static int looks_ours(int pfd, const char *base)
{
	char *head, *end;
	struct stat st;
	size_t got = 0, max = 1 << 20;
	ssize_t n;
	int fd, ok = 0;

	if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
		return 0;
	if (!st.st_size && st.st_uid == geteuid())
		return 1;
	if (strncmp(base, "profile.", 8))
		return !strncmp(base, "samples", 7) && strstr(base, ".folded");
	head = malloc(max + 1);
	if (!head)
		return 0;
	fd = openat(pfd, base, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	while (fd >= 0 && got < max && (n = read(fd, head + got, max - got)) > 0)
		got += (size_t)n;
	if (fd >= 0)
		close(fd);
	head[got] = '\0';
	/* The header line, then the metadata on the next line. */
	end = strchr(head, '\n');
	if (got && head[0] >= '0' && head[0] <= '9' && end) {
		*end = '\0';
		ok = strstr(head, " templated_functions_MULTI_") != NULL;
		end = strstr(end + 1, "</metadata>");
		if (end)
			*end = '\0';
		ok = ok && end && strstr(strchr(head, '\0') + 1, "<name>KTAU ");
	}
	free(head);
	return ok;
}

/*
 * The stamp line of name in manifest text: 1 when the file @base in the
 * directory @pfd still matches it, 0 when it does not, -1 when there is
 * no stamp for name.
 */
static int stamp_matches(const char *text, const char *name, int pfd, const char *base)
{
	unsigned long long ino, size, mtime;
	const char *l, *e;
	struct stat st;
	int off;

	for (l = text; *l; l = *e ? e + 1 : e) {
		e = strchrnul(l, '\n');
		if (*l != '=' || sscanf(l, "=%llu %llu %llu %n", &ino, &size, &mtime, &off) != 3 ||
		    (size_t)(e - l - off) != strlen(name) || strncmp(l + off, name, strlen(name)))
			continue;
		if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			return 0;
		return st.st_ino == ino && (unsigned long long)st.st_size == size &&
		       st.st_mtim.tv_sec * 1000000000ULL + st.st_mtim.tv_nsec == mtime;
	}
	return -1;
}

/*
 * Remove what the old manifest text lists and is still as we left it,
 * relative to the directory @dfd and never through a symbolic link. The
 * files listed that stay (changed since, or not recognisable as ours)
 * go into @kept, and with them (not @dry) the directories that stay. @dry:
 * only find what would stay.
 */
static int remove_listed(int dfd, const char *text, struct names *kept, int dry)
{
	struct names s = { 0 };
	const char *base;
	struct stat st;
	size_t i, l;
	int m, pfd, ret;

	ret = names_parse(&s, text);
	for (i = 0; i < s.n && !ret; i++) {
		l = strlen(s.v[i]);
		if (strstr(s.v[i], "..") || s.v[i][0] == '/' || s.v[i][l - 1] == '/')
			continue;
		pfd = open_parent(dfd, s.v[i], &base);
		if (pfd < 0)
			continue;
		m = stamp_matches(text, s.v[i], pfd, base);
		if (m > 0 || (m < 0 && looks_ours(pfd, base))) {
			/* Not removable (a directory it cannot write): stays listed. */
			if (!dry && unlinkat(pfd, base, 0) && errno != ENOENT)
				ret = names_add(kept, s.v[i], l);
		} else if (!fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW)) {
			ret = names_add(kept, s.v[i], l);
		}
		close(pfd);
	}
	/* Then the directories it made, when they are empty. */
	for (i = 0; i < s.n && !ret && !dry; i++) {
		l = strlen(s.v[i]);
		if (l < 2 || s.v[i][l - 1] != '/' || strstr(s.v[i], "..") || s.v[i][0] == '/' ||
		    strchr(s.v[i], '/') != s.v[i] + l - 1)
			continue;
		s.v[i][l - 1] = '\0';
		m = unlinkat(dfd, s.v[i], AT_REMOVEDIR) && errno != ENOENT;
		s.v[i][l - 1] = '/';
		if (m)
			ret = names_add(kept, s.v[i], l);
	}
	names_free(&s);
	return ret;
}

static int write_all(int fd, const char *s, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * The value of "key=" in the header line of manifest text, into buf
 * (empty when there is none).
 */
static void header_field(const char *text, const char *key, char *buf, size_t size)
{
	const char *e = strchrnul(text, '\n'), *p = text;
	size_t k = strlen(key), n;

	buf[0] = '\0';
	if (strncmp(text, MANIFEST_HEAD " ", sizeof(MANIFEST_HEAD)))
		return;
	while (p < e) {
		p = strchr(p, ' ');
		if (!p || p >= e)
			return;
		p++;
		if (!strncmp(p, key, k) && p[k] == '=') {
			p += k + 1;
			n = strcspn(p, " \n");
			snprintf(buf, size, "%.*s", (int)n, p);
			return;
		}
	}
}

/*
 * Whether the earlier run whose manifest text is @old ran on this host
 * (@host): only then are its files this writer's to replace. Another
 * machine's writer of the same kind and node (a job run on several nodes
 * into one shared directory, each as node 0) wrote files of the same
 * names: they are not replaced, whatever their stamps.
 */
static int same_host(const char *old, const char *host)
{
	char was[HOST_NAME_MAX + 2];

	header_field(old, "host", was, sizeof(was));
	return !was[0] || !strcmp(was, host);
}

static int refuse_host(const char *dir, const char *kind, int node, const char *old)
{
	char host[HOST_NAME_MAX + 2], pid[24];

	header_field(old, "host", host, sizeof(host));
	header_field(old, "pid", pid, sizeof(pid));
	if (node >= 0)
		return fail(-EEXIST, "%s holds the %s output of node %d that process %s wrote on "
			    "host %s: nothing was changed; give each machine its own directory "
			    "(%%h in its name) or node (an MPI rank), or remove that output first",
			    dir, kind, node, pid, host);
	return fail(-EEXIST, "%s holds the %s output that process %s wrote on host %s: nothing "
		    "was changed; give each machine its own directory (%%h in its name), or "
		    "remove that output first", dir, kind, pid, host);
}

/* This boot's id (/proc/sys/kernel/random/boot_id) into buf; "" if unknown. */
static void boot_id(char *buf, size_t size)
{
	char *text;
	size_t len;

	buf[0] = '\0';
	if (ktau__slurp("/proc/sys/kernel/random/boot_id", &text, &len))
		return;
	snprintf(buf, size, "%.*s", (int)strcspn(text, " \n"), text);
	free(text);
}

/*
 * This task's time namespace's CLOCK_BOOTTIME offset (ns): its clock minus
 * the initial namespace's; 0 without time namespaces.
 */
static long long boottime_offset_ns(void)
{
	long long sec = 0, nsec = 0;
	char *text, *l;
	size_t len;

	if (ktau__slurp("/proc/self/timens_offsets", &text, &len))
		return 0;
	l = strstr(text, "boottime ");
	if (!l || sscanf(l + 9, "%lld %lld", &sec, &nsec) != 2)
		sec = nsec = 0;
	free(text);
	return sec * 1000000000LL + nsec;
}

/* CLOCK_BOOTTIME of the initial time namespace: one clock for every writer. */
static unsigned long long boottime_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_BOOTTIME, &ts))
		return 0;
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec - (unsigned long long)boottime_offset_ns();
}

/*
 * When this program started (its image: a shell's last command is
 * exec()ed late), or this process was forked from it (a child inherits
 * the variable): to the ns. A library loaded later (dlopen(), Python's
 * import) starts at its load: documented. The offset is taken once, so
 * that the fork handler only reads the clock (async-signal-safe).
 */
static unsigned long long exec_ns, start_offset_ns;

/*
 * SIGXFSZ held back in a thread while it writes: how many writes hold it
 * (output directories open, the runtime's trace file), and whether the
 * first one blocked it (it was not blocked before). Only SIGXFSZ's bit is
 * ever changed: signals the caller blocks or unblocks meanwhile stay so.
 */
static __thread unsigned int xfsz_holds;
static __thread int xfsz_blocked;
/*
 * The holds' period in this thread, unique in the process: a release
 * from another thread (a reused thread ID too), or in a child of a fork
 * (which starts with none), is not one of them.
 */
static __thread unsigned long xfsz_period;
static unsigned long xfsz_periods;

static void xfsz_unblock(void)
{
	sigset_t set;

	if (xfsz_blocked) {
		sigemptyset(&set);
		sigaddset(&set, SIGXFSZ);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	xfsz_blocked = 0;
	xfsz_holds = 0;
	xfsz_period = 0;
}

unsigned long ktau__xfsz_hold(void)
{
	sigset_t set, old;

	if (xfsz_holds++)
		return xfsz_period;
	xfsz_period = __atomic_add_fetch(&xfsz_periods, 1, __ATOMIC_RELAXED);
	sigemptyset(&set);
	sigaddset(&set, SIGXFSZ);
	xfsz_blocked = !pthread_sigmask(SIG_BLOCK, &set, &old) && !sigismember(&old, SIGXFSZ);
	return xfsz_period;
}

void ktau__xfsz_release(unsigned long period)
{
	if (period && period == xfsz_period && xfsz_holds && !--xfsz_holds)
		xfsz_unblock();
}

static void outdir_note_fork(void)
{
	struct timespec ts;

	if (!clock_gettime(CLOCK_BOOTTIME, &ts))
		exec_ns = ts.tv_sec * 1000000000ULL + ts.tv_nsec - start_offset_ns;
	/* A child forked while its parent writes starts as the parent did. */
	xfsz_unblock();
}

__attribute__((constructor)) static void outdir_note_start(void)
{
	start_offset_ns = (unsigned long long)boottime_offset_ns();
	outdir_note_fork();
	pthread_atfork(NULL, NULL, outdir_note_fork);
}

/*
 * When this process started as the program it is, in boottime_ns(): the
 * later of its fork (/proc/self/stat, in this namespace's clock, to a
 * clock tick: *@slack is then a tick) and the start of its program (to
 * the ns: *@slack 0); 0 when unknown.
 */
static unsigned long long process_start_ns(unsigned long long *slack)
{
	unsigned long long ticks, fork_ns;
	long hz = sysconf(_SC_CLK_TCK);
	char *text, *p;
	size_t len;
	int i;

	*slack = 0;
	if (hz <= 0 || ktau__slurp("/proc/self/stat", &text, &len))
		return exec_ns;
	/* After the name (which may hold spaces): state is field 3. */
	p = strrchr(text, ')');
	for (i = 3; p && i <= 22; i++)
		p = strchr(p + 1, ' ');
	ticks = p ? strtoull(p + 1, NULL, 10) : 0;
	free(text);
	if (!ticks)
		return exec_ns;
	fork_ns = ticks * (1000000000ULL / (unsigned long long)hz) -
		  (unsigned long long)boottime_offset_ns();
	if (fork_ns <= exec_ns)
		return exec_ns;
	/* A child forked after the program started: known to a tick. */
	*slack = 1000000000ULL / (unsigned long long)hz;
	return fork_ns;
}

/*
 * Only a manifest this user's writer made is read: a regular file with
 * one link that nobody else may write, and either the user's own or, in
 * a directory that only its owner may write, that owner's (a server that
 * maps the user to another owner: NFS root_squash). Another one (planted
 * in a shared directory, or a hard link to a file elsewhere) would name
 * what to remove.
 */
static int manifest_trusted(int fd, const char *dir, const char *manifest)
{
	struct stat st, ds;

	if (fstat(fd, &st))
		return fail(-errno, "%s: %s", manifest, strerror(errno));
	/*
	 * Writable by others, and ours: a file system that shows every file
	 * so (CIFS file_mode=0777, WSL's drvfs) keeps the bits after chmod;
	 * there, ownership alone decides. Anywhere else, somebody else may
	 * have written it: refused, its mode put back.
	 */
	if (S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) &&
	    !fchmod(fd, st.st_mode & 07755)) {
		mode_t was = st.st_mode & 07777;

		if (!fstat(fd, &st) && (st.st_mode & (S_IWGRP | S_IWOTH)))
			return st.st_nlink == 1 ? 0 : fail(-EPERM, "%s has %lu links: nothing was "
							   "changed; remove it if it is yours",
							   manifest, (unsigned long)st.st_nlink);
		(void)fchmod(fd, was);
		st.st_mode = (st.st_mode & ~07777) | was;
	}
	if (S_ISREG(st.st_mode) && st.st_nlink == 1 && !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
	    (st.st_uid == geteuid() ||
	     (!stat(dir, &ds) && ds.st_uid == st.st_uid && !(ds.st_mode & (S_IWGRP | S_IWOTH)))))
		return 0;
	return fail(-EPERM, "%s is not a list of files that this user's writer made (owner uid %u, "
		    "%lu links, mode %03o): nothing was changed; remove it if it is yours, or "
		    "write into another directory", manifest, (unsigned int)st.st_uid,
		    (unsigned long)st.st_nlink, (unsigned int)(st.st_mode & 07777));
}

/*
 * The line a writer adds at close: "# closed boot=ID ns=BOOTTIME_NS". In
 * manifest text @old, its time when it was of this boot, else 0.
 */
#define CLOSED_LINE	"# closed "
static unsigned long long closed_ns(const char *old)
{
	const char *l = strstr(old, "\n" CLOSED_LINE);
	char was[64], now[64];
	unsigned long long ns;

	if (!l || sscanf(l + sizeof(CLOSED_LINE), "boot=%63s ns=%llu", was, &ns) != 2)
		return 0;
	boot_id(now, sizeof(now));
	return now[0] && !strcmp(was, now) ? ns : 0;
}

/* Whether a file that manifest text @old lists is still in @dir. */
static int any_listed(const char *dir, const char *old)
{
	struct names s = { 0 };
	const char *base;
	struct stat st;
	int dfd, pfd, found = 0;
	size_t i;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || names_parse(&s, old))
		found = 1;	/* not known: as if there */
	for (i = 0; i < s.n && !found; i++) {
		if (s.v[i][strlen(s.v[i]) - 1] == '/' || strstr(s.v[i], ".."))
			continue;
		pfd = open_parent(dfd, s.v[i], &base);
		if (pfd < 0)
			continue;
		found = !fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW);
		close(pfd);
	}
	if (dfd >= 0)
		close(dfd);
	names_free(&s);
	return found;
}

/*
 * The earlier output @old of this kind and node was closed, in this boot,
 * after this process started (as the program it is: a shell's last
 * command is exec()ed in the shell's process), by another process (not
 * this one: the same pid and start), and some of it is still there: the
 * two ran at once (ranks with one number, two jobs or programs in one
 * directory, a program and one it started), and replacing it would lose
 * that process's output. 0, or -EEXIST said. Times are this host's
 * CLOCK_BOOTTIME of the initial time namespace, not a file server's.
 */
static int refuse_concurrent(const char *dir, const char *kind, int node, const char *old)
{
	char pid[24], start[24], host[HOST_NAME_MAX + 2];
	unsigned long long slack, me = process_start_ns(&slack), closed = closed_ns(old);

	header_field(old, "pid", pid, sizeof(pid));
	header_field(old, "start", start, sizeof(start));
	if (!me || !closed || closed <= me + slack ||
	    (atoi(pid) == (int)getpid() && strtoull(start, NULL, 10) == me) ||
	    !any_listed(dir, old))
		return 0;
	header_field(old, "host", host, sizeof(host));
	if (node >= 0)
		return fail(-EEXIST, "%s holds the %s output of node %d that process %s on %s "
			    "wrote while this process ran: nothing was changed; give each process "
			    "its own directory (%%p, %%h in its name) or node (an MPI rank), or "
			    "remove that output first", dir, kind, node, pid,
			    host[0] ? host : "this host");
	return fail(-EEXIST, "%s holds the %s output that process %s on %s wrote while this "
		    "process ran: nothing was changed; give each process its own directory (%%p, "
		    "%%h in its name), or remove that output first", dir, kind, pid,
		    host[0] ? host : "this host");
}

/* The message of a directory that holds bad, a file not listed. */
static int refuse(const char *dir, const char *kind, const char *bad)
{
	return fail(-ENOTEMPTY, "%s holds '%s', which is not from an earlier output of this kind "
		    "(%s): nothing was changed; write into another (or an empty) directory", dir,
		    bad, kind);
}

static int check_only(const char *dir, const char *kind, unsigned int flags)
{
	char bad[PATH_MAX];
	struct stat st;
	int ret;

	if (stat(dir, &st))
		return errno == ENOENT ? 0 : fail(-errno, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(-ENOTDIR, "%s is not a directory", dir);
	if (access(dir, W_OK | X_OK))
		return fail(-errno, "cannot write in %s: %s", dir, strerror(errno));
	if (flags & KTAU_OUTDIR_FORCE)
		return 0;
	ret = find_foreign(dir, kind, bad, sizeof(bad));
	if (ret > 0)
		return refuse(dir, kind, bad);
	return ret ? fail(ret, "cannot read %s: %s", dir, strerror(-ret)) : 0;
}

int ktau_outdir_open(const char *dir, const char *kind, int node, unsigned int flags,
		     struct ktau_outdir **out)
{
	struct ktau_outdir *od;
	struct utsname u;
	char bad[PATH_MAX], head[512], *old = NULL;
	unsigned long long slack;
	size_t oldlen = 0, i;
	int ret, created = 0;

	if (out)
		*out = NULL;
	why_clear();
	if (!dir || !*dir || !kind || !*kind || strchr(kind, '/') || strchr(kind, '.'))
		return fail(-EINVAL, "no output directory given");
	if (flags & KTAU_OUTDIR_CHECK)
		return check_only(dir, kind, flags);
	if (!out)
		return fail(-EINVAL, "no place for the directory's handle");
	od = calloc(1, sizeof(*od));
	if (!od)
		return -ENOMEM;
	od->fd = -1;
	od->flags = (int)flags;
	od->dir = strdup(dir);
	od->manifest = node >= 0 ? ktau__strfmt("%s/" MANIFEST "%s.%d", dir, kind, node)
				 : ktau__strfmt("%s/" MANIFEST "%s", dir, kind);
	if (!od->dir || !od->manifest) {
		ret = -ENOMEM;
		goto err;
	}
	ret = mkdir_p(dir);
	if (ret) {
		fail(ret, "cannot create the directory %s: %s", dir, strerror(-ret));
		goto err;
	}
	od->fd = open(od->manifest, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (od->fd >= 0)
		created = 1;
	else if (errno == EEXIST)
		od->fd = open(od->manifest, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (od->fd < 0) {
		struct stat st;

		ret = -errno;
		if (!lstat(od->manifest, &st) && st.st_uid != geteuid())
			fail(ret, "%s holds the %s output%s of another user (uid %u: %s): nothing "
			     "was changed; write into a directory of your own", dir, kind,
			     node >= 0 ? " of this node" : "", (unsigned int)st.st_uid,
			     od->manifest);
		else
			fail(ret, "cannot write in %s: %s", dir, strerror(-ret));
		goto err;
	}
	if (!created) {
		ret = manifest_trusted(od->fd, dir, od->manifest);
		if (ret)
			goto err;
	}
	if (flock(od->fd, LOCK_EX | LOCK_NB)) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		/* Made by us but taken by the other writer: it is its now. */
		created = 0;
		if (node >= 0)
			fail(ret, "another process is writing the %s output of node %d into %s right "
			     "now: give each process its own directory (%%r, or %%h-%%p: a pid "
			     "is not unique across machines, in its name) or its own node (an "
			     "MPI rank)", kind, node, dir);
		else
			fail(ret, "another process is writing %s output into %s right now: give each "
			     "process its own directory (%%h-%%p in its name: a pid is not unique "
			     "across machines)", kind, dir);
		goto err;
	}
	if (!(flags & KTAU_OUTDIR_FORCE)) {
		ret = find_foreign(dir, kind, bad, sizeof(bad));
		if (ret > 0) {
			ret = refuse(dir, kind, bad);
			goto err;
		}
		if (ret) {
			fail(ret, "cannot read %s: %s", dir, strerror(-ret));
			goto err;
		}
	}
	if (uname(&u))
		strcpy(u.nodename, "?");
	/* The earlier run's files of this writer, and only those. */
	if (!created) {
		char buf[8192];
		ssize_t n;

		while ((n = read(od->fd, buf, sizeof(buf))) > 0) {
			char *o = realloc(old, oldlen + (size_t)n + 1);

			if (!o) {
				ret = -ENOMEM;
				goto err;
			}
			old = o;
			memcpy(old + oldlen, buf, (size_t)n);
			oldlen += (size_t)n;
			old[oldlen] = '\0';
		}
		if (old && !same_host(old, u.nodename)) {
			ret = refuse_host(dir, kind, node, old);
			goto err;
		}
		/* Also forced: its files are another process's, not foreign ones. */
		if (old) {
			ret = refuse_concurrent(dir, kind, node, old);
			if (ret)
				goto err;
		}
		if (old) {
			int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			/* What stays, first: a file of it changed since is in the way. */
			ret = dfd < 0 ? -errno : remove_listed(dfd, old, &od->kept, 1);
			if (!ret && !(flags & KTAU_OUTDIR_FORCE) && od->kept.n &&
			    od->kept.v[0][strlen(od->kept.v[0]) - 1] != '/') {
				ret = fail(-EEXIST, "%s/%s is listed by an earlier run of this "
					   "writer but is no longer as it left it (changed or replaced "
					   "since, or cut short by a writer that was stopped): nothing "
					   "was changed; move or remove it and run again", dir,
					   od->kept.v[0]);
			} else if (!ret) {
				names_free(&od->kept);
				ret = remove_listed(dfd, old, &od->kept, 0);
				if (ret)
					fail(ret, "cannot remove the earlier %s output in %s: %s", kind,
					     dir, strerror(-ret));
			}
			if (dfd >= 0)
				close(dfd);
			if (ret) {
				if (!*ktau_output_error())
					fail(ret, "%s: %s", dir, strerror(-ret));
				goto err;
			}
		}
		free(old);
		old = NULL;
		if (ftruncate(od->fd, 0) || lseek(od->fd, 0, SEEK_SET)) {
			ret = -errno;
			goto err;
		}
	}
	snprintf(head, sizeof(head), MANIFEST_HEAD " kind=%s node=%d host=%s pid=%d start=%llu\n",
		 kind, node, u.nodename, (int)getpid(), process_start_ns(&slack));
	ret = write_all(od->fd, head, strlen(head));
	/*
	 * Kept (forced past them): still listed, so that they are not taken
	 * as foreign, with a stamp that matches no file, so that they are
	 * never taken as this writer's to remove.
	 */
	for (i = 0; i < od->kept.n && !ret; i++) {
		char line[PATH_MAX + 16];

		snprintf(line, sizeof(line), "%s\n", od->kept.v[i]);
		ret = write_all(od->fd, line, strlen(line));
		if (!ret && line[strlen(line) - 2] != '/') {
			snprintf(line, sizeof(line), "=0 0 0 %s\n", od->kept.v[i]);
			ret = write_all(od->fd, line, strlen(line));
		}
	}
	if (ret)
		goto err;
	od->xfsz = ktau__xfsz_hold();
	*out = od;
	return 0;
err:
	if (created)
		unlink(od->manifest);
	if (od->fd >= 0)
		close(od->fd);
	free(old);
	names_free(&od->kept);
	free(od->dir);
	free(od->manifest);
	free(od);
	if (!*ktau_output_error())
		fail(ret, "%s: %s", dir, strerror(-ret));
	return ret;
}

FILE *ktau_outdir_create(struct ktau_outdir *od, const char *name)
{
	char path[PATH_MAX], line[PATH_MAX + 2];
	const char *slash = strchr(name, '/');
	off_t before;
	FILE *f;
	int fd, ret;

	if (!*name || name[0] == '/' || strstr(name, "..") || (slash && strchr(slash + 1, '/'))) {
		fail(-EINVAL, "bad file name '%s'", name);
		errno = EINVAL;
		return NULL;
	}
	if (slash) {
		/* One level: MULTI__<metric>/; listed when this writer makes it. */
		snprintf(path, sizeof(path), "%s/%.*s", od->dir, (int)(slash - name), name);
		if (!mkdir(path, 0755)) {
			snprintf(line, sizeof(line), "%.*s/\n", (int)(slash - name), name);
			ret = write_all(od->fd, line, strlen(line));
			if (ret) {
				errno = -ret;
				return NULL;
			}
		} else if (errno != EEXIST) {
			fail(-errno, "cannot create %s: %s", path, strerror(errno));
			return NULL;
		}
	}
	snprintf(line, sizeof(line), "%s\n", name);
	before = lseek(od->fd, 0, SEEK_CUR);
	ret = before < 0 ? -errno : write_all(od->fd, line, strlen(line));
	if (ret) {
		/* No part of a name left listed (a failed write removes what is). */
		if (before >= 0 && !ftruncate(od->fd, before))
			lseek(od->fd, before, SEEK_SET);
		fail(ret, "cannot write the list of files in %s: %s", od->dir, strerror(-ret));
		errno = -ret;
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/%s", od->dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		int e = errno;

		/* Not ours: off the list again. */
		if (!ftruncate(od->fd, before))
			lseek(od->fd, before, SEEK_SET);

		if (e == EEXIST && names_has(&od->kept, name))
			fail(-e, "%s is listed by an earlier run of this writer but is no longer as "
			     "it left it (changed or replaced since, or cut short by a writer that "
			     "was stopped): it was left as it is; move or remove it and run again",
			     path);
		else if (e == EEXIST)
			fail(-e, "%s exists and this writer did not write it: another process writes "
			     "the same node into %s (two ranks with one number? two jobs in one "
			     "directory?), or it is somebody else's; it was left as it is", path,
			     od->dir);
		else
			fail(-e, "cannot create %s: %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		int e = errno;

		close(fd);
		errno = e;
	}
	return f;
}

/* Remove @name ("file" or "sub/file") of od's directory, never through a link. */
void ktau__outdir_discard(struct ktau_outdir *od, const char *name)
{
	int dfd = open(od->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), pfd = -1;
	const char *base;

	if (dfd >= 0)
		pfd = open_parent(dfd, name, &base);
	if (pfd >= 0) {
		unlinkat(pfd, base, 0);
		close(pfd);
	}
	if (dfd >= 0)
		close(dfd);
}

int ktau__stream_err(FILE *f)
{
	int e = errno;

	errno = 0;
	if (fflush(f) && errno)
		return -errno;
	errno = e;
	return ferror(f) ? -EIO : 0;
}

void ktau__outdir_failed(struct ktau_outdir *od)
{
	if (od)
		od->failed = 1;
}

/*
 * A failed write: every file it made, then its directories, go; @made is
 * what its manifest lists (this writer's files and directories, and the
 * earlier run's it kept, which stay).
 */
static void discard_made(struct ktau_outdir *od, struct names *made)
{
	size_t i, l;
	int dfd;

	for (i = 0; i < made->n; i++)
		if (made->v[i][strlen(made->v[i]) - 1] != '/' && !names_has(&od->kept, made->v[i]))
			ktau__outdir_discard(od, made->v[i]);
	dfd = open(od->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (i = 0; dfd >= 0 && i < made->n; i++) {
		l = strlen(made->v[i]);
		if (made->v[i][l - 1] != '/' || strchr(made->v[i], '/') != made->v[i] + l - 1)
			continue;
		made->v[i][l - 1] = '\0';
		unlinkat(dfd, made->v[i], AT_REMOVEDIR);
		made->v[i][l - 1] = '/';
	}
	if (dfd >= 0)
		close(dfd);
}

/* The directory of od. */
const char *ktau_outdir_path(const struct ktau_outdir *od)
{
	return od->dir;
}

int ktau_outdir_adopt(struct ktau_outdir *od, const char *name, const char *src)
{
	char path[PATH_MAX];
	FILE *f;
	int ret = 0;

	/* Listed and made empty (O_EXCL), then replaced by src: ours only. */
	f = ktau_outdir_create(od, name);
	if (!f)
		return -errno;
	snprintf(path, sizeof(path), "%s/%s", od->dir, name);
	if (!rename(src, path)) {
		fclose(f);
		return 0;
	}
	if (errno == EXDEV) {
		/* Another file system: copied. */
		char buf[65536];
		size_t n;
		FILE *in = fopen(src, "re");

		if (!in)
			ret = -errno;
		/* The failed write's errno: glibc drops the buffer, a flush says nothing. */
		while (in && (n = fread(buf, 1, sizeof(buf), in)) > 0)
			if (fwrite(buf, 1, n, f) != n) {
				ret = errno ? -errno : -EIO;
				break;
			}
		if (in && ferror(in))
			ret = -EIO;
		if (in)
			fclose(in);
		if (fclose(f) && !ret)
			ret = -errno;
		if (!ret) {
			unlink(src);
			return 0;
		}
		unlink(path);	/* no partial copy left looking complete */
	} else {
		ret = -errno;
		fclose(f);
	}
	fail(ret, "cannot move %s to %s: %s", src, path, strerror(-ret));
	return ret;
}

int ktau_outdir_close(struct ktau_outdir *od)
{
	char path[PATH_MAX], line[PATH_MAX + 80];
	struct stat st;
	size_t i;
	int ret = 0;

	if (!od)
		return 0;
	/*
	 * Stamps of the files listed: what the next run of this writer may
	 * remove; or, the write failed, those files removed.
	 */
	if (od->fd >= 0 && !fstat(od->fd, &st) && st.st_size > 0 && st.st_size < (64 << 20)) {
		struct names made = { 0 };
		char *text = malloc((size_t)st.st_size + 1);
		ssize_t n = text ? pread(od->fd, text, (size_t)st.st_size, 0) : -1;

		if (n >= 0) {
			text[n] = '\0';
			ret = names_parse(&made, text);
		}
		free(text);
		if (od->failed) {
			discard_made(od, &made);
			names_free(&made);	/* no stamps */
		}
		for (i = 0; i < made.n && !ret; i++) {
			/* Kept from an earlier run: not as this writer left it. */
			if (names_has(&od->kept, made.v[i]))
				continue;
			snprintf(path, sizeof(path), "%s/%s", od->dir, made.v[i]);
			if (lstat(path, &st) || !S_ISREG(st.st_mode))
				continue;
			snprintf(line, sizeof(line), "=%llu %llu %llu %s\n",
				 (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
				 st.st_mtim.tv_sec * 1000000000ULL + st.st_mtim.tv_nsec, made.v[i]);
			ret = write_all(od->fd, line, strlen(line));
		}
		names_free(&made);
	}
	/* When it closed, for a later writer's question "did we run at once?". */
	if (od->fd >= 0 && !ret && !od->failed) {
		char id[64];

		boot_id(id, sizeof(id));
		if (id[0]) {
			snprintf(line, sizeof(line), CLOSED_LINE "boot=%s ns=%llu\n", id,
				 boottime_ns());
			ret = write_all(od->fd, line, strlen(line));
		}
	}
	if (od->fd >= 0 && close(od->fd) && !ret)
		ret = -errno;
	names_free(&od->kept);
	free(od->dir);
	free(od->manifest);
	/* A file size limit's SIGXFSZ, if a write met it, now takes effect. */
	ktau__xfsz_release(od->xfsz);
	free(od);
	return ret;
}

/* ---- MPI ranks and output path templates ---------------------------- */

int ktau_mpi_rank(void)
{
	/* The launchers' own first: under mpirun in a Slurm allocation,
	 * SLURM_PROCID is mpirun's (0 in every rank). */
	static const char *const vars[] = {
		"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID",
	};
	size_t i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);
		char *end;
		long r;

		if (!v || *v < '0' || *v > '9')
			continue;
		errno = 0;
		r = strtol(v, &end, 10);
		if (!errno && !*end && r >= 0 && r < INT_MAX)
			return (int)r;
	}
	return -1;
}

char *ktau_output_path(const char *tmpl)
{
	char pid[24], rank[24], host[HOST_NAME_MAX + 1], *out = NULL;
	const char *s;
	size_t len = 0;
	FILE *m;
	int r = ktau_mpi_rank();

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(rank, sizeof(rank), "%d", r < 0 ? 0 : r);
	if (gethostname(host, sizeof(host)))
		strcpy(host, "unknown");
	host[sizeof(host) - 1] = '\0';
	m = open_memstream(&out, &len);
	if (!m)
		return NULL;
	for (s = tmpl; *s; s++) {
		if (s[0] != '%' || !s[1]) {
			fputc(*s, m);
			continue;
		}
		switch (*++s) {
		case 'p': fputs(pid, m); break;
		case 'r': fputs(rank, m); break;
		case 'h': fputs(host, m); break;
		case '%': fputc('%', m); break;
		default: fputc('%', m); fputc(*s, m); break;
		}
	}
	if (fclose(m)) {
		free(out);
		return NULL;
	}
	return out;
}
