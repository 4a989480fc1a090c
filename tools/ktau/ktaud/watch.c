// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud watch: the daemon. Takes a snapshot every interval and saves what
 * changed since the previous one (a delta) as a snapshot file in a
 * directory, keeping at most --keep files. Files are written to a
 * temporary name and renamed, so a SIGTERM never leaves half a snapshot.
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
#include <sys/stat.h>

#include "ktaud.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud watch [options] [pid...]\n\n"
"Every interval, snapshot the given processes (all readable tasks when none\n"
"is given) and save the change since the previous snapshot as a file\n"
"DIR/snap-NNNNNN.ktau. The first file holds the full profiles (the\n"
"baseline), the others deltas. At most --keep files are kept: its oldest\n"
"are removed (never an earlier watch's). SIGTERM or SIGINT stop it after\n"
"the current file is complete.\n"
"'ktaud export' and 'ktaud plot groups' read the directory.\n\n"
"  -i, --interval S     seconds between snapshots (default 1; fractions ok),\n"
"                       at fixed times: the snapshots' own time does not add up\n"
"  -o, --output DIR     the directory (default: ktau-watch); %%r, %%p, %%h as for\n"
"                       'ktaud run'\n"
"  -k, --keep N         files kept (default 600; 0: no limit)\n"
"  -c, --count N        stop after N snapshots (default: run until stopped)\n"
"  -t, --threads        keep threads apart (default: sum into processes)\n"
"  -D, --daemon         detach into the background\n"
"  -p, --pid PID        watch this process (repeatable; as the pids after\n"
"                       the options)\n"
"      --pid-file FILE  write the daemon's pid there (default with -D:\n"
"                       DIR/ktaud-watch.pid); removed at exit\n"
"  -h, --help           this help\n");
}

/*
 * Snapshot files in the order they were taken: snap-NNNNNN.ktau counts
 * on past 999999 with more digits, which a byte order would put first.
 */
static int cmp_str(const void *a, const void *b)
{
	return strverscmp(*(char * const *)a, *(char * const *)b);
}

/*
 * Remove the oldest snap-*.ktau of this session (numbered from first on)
 * beyond keep; an earlier session's files in the directory are not ours
 * to remove.
 */
static void prune(const char *dir, unsigned long keep, unsigned long first)
{
	char **names = NULL, **nn, path[PATH_MAX + 512];
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *d;

	if (!keep || !(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (strncmp(de->d_name, "snap-", 5) || l < 10 || strcmp(de->d_name + l - 5, ".ktau") ||
		    strtoul(de->d_name + 5, NULL, 10) < first)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nn = realloc(names, cap * sizeof(*names));
			if (!nn)
				break;
			names = nn;
		}
		names[n] = strdup(de->d_name);
		if (names[n])
			n++;
	}
	closedir(d);
	if (n > keep) {
		qsort(names, n, sizeof(*names), cmp_str);
		for (i = 0; i < n - keep; i++) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			unlink(path);
		}
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The next sequence number after the files already in dir. */
static unsigned long next_seq(const char *dir)
{
	unsigned long seq = 0, v;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (sscanf(de->d_name, "snap-%lu.ktau", &v) == 1 && v + 1 > seq)
			seq = v + 1;
	closedir(d);
	return seq;
}

/*
 * Snapshots at fixed times, start + k * interval (CLOCK_MONOTONIC): the
 * time a snapshot takes does not add up. One that took longer than an
 * interval skips the times it missed. A signal ends the sleep; stop is
 * checked by the loop.
 */
static void sleep_until_next(uint64_t start, uint64_t step, uint64_t *k)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC), next;
	struct timespec ts;

	(*k)++;
	if (now >= start + *k * step)
		*k = (now - start) / step + 1;
	next = start + *k * step;
	ts.tv_sec = (time_t)(next / 1000000000u);
	ts.tv_nsec = (long)(next % 1000000000u);
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/* The pid a pid file holds ("N\n"), with its stat; -1: not a pid file. */
static pid_t read_pid(const char *path, struct stat *st)
{
	char buf[24], *end;
	ssize_t n;
	long v;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -1;
	n = fstat(fd, st) || !S_ISREG(st->st_mode) ? -1 : read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 2 || buf[n - 1] != '\n')
		return -1;
	buf[n - 1] = '\0';
	errno = 0;
	v = strtol(buf, &end, 10);
	return errno || *end || v <= 0 || v > INT_MAX ? -1 : (pid_t)v;
}

/*
 * The pid file, made new (O_EXCL) or in place of a stale one (whose pid
 * runs no more); never over another file or a running watch's. 0, or an
 * exit code after a message; its stat in @st.
 */
static int write_pidfile(const char *path, struct stat *st)
{
	char buf[24];
	pid_t old;
	int fd, tries, n;

	for (tries = 0; tries < 3; tries++) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd >= 0 || errno != EEXIST)
			break;
		old = read_pid(path, st);
		if (old < 0) {
			err_msg("%s exists and is not a pid file: it was left as it is; give "
				"another --pid-file", path);
			return EX_KT_FAIL;
		}
		if (!kill(old, 0) || errno == EPERM) {
			err_msg("%s holds pid %d, which runs (another ktaud watch?): give each "
				"watch its own --pid-file (or directory)", path, (int)old);
			return EX_KT_FAIL;
		}
		unlink(path);	/* stale: its watch has ended */
	}
	if (fd < 0) {
		err_msg("cannot write the pid file %s: %s", path, strerror(errno));
		return EX_KT_FAIL;
	}
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (write(fd, buf, (size_t)n) != n || fstat(fd, st)) {
		err_msg("cannot write the pid file %s: %s", path, strerror(errno ? errno : EIO));
		close(fd);
		unlink(path);
		return EX_KT_FAIL;
	}
	close(fd);
	return EX_KT_OK;
}

/*
 * Into the background, as daemon(3) does (a child in a new session, in /,
 * its standard streams on /dev/null), but the command returns only once
 * the daemon's pid is in @pidfile (when there is one; made by
 * write_pidfile()): a script or a service manager (systemd's
 * Type=forking with PIDFile=) that reads the file right after finds the
 * daemon's pid, not the command's. In the daemon: 0, or an exit code
 * after a message (which still reaches the terminal); the command itself
 * exits here, with the daemon's result.
 */
static int rewrite_pidfile(const char *path, struct stat *st);

static int detach(const char *pidfile, struct stat *st)
{
	int p[2], fd;
	char ok = 1;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return report(-errno, "daemon");
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return report(-errno, "daemon");
	}
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &ok, 1) != 1)
			ok = 1;
		_exit(ok ? EX_KT_FAIL : EX_KT_OK);
	}
	close(p[0]);
	if (setsid() < 0 || chdir("/")) {
		report(-errno, "daemon");
		goto fail;
	}
	if (pidfile && rewrite_pidfile(pidfile, st)) {
		err_msg("cannot write the daemon's pid into %s: %s", pidfile, strerror(errno));
		goto fail;
	}
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) {
		report(-errno, "daemon: /dev/null");
		goto fail;
	}
	if (fd > 2)
		close(fd);
	ok = 0;
	if (write(p[1], &ok, 1) != 1)
		ok = 1;
	close(p[1]);
	return EX_KT_OK;
fail:
	/* The command says the daemon failed; it ends here too. */
	close(p[1]);
	return EX_KT_FAIL;
}

/* In the daemon: the pid file made by write_pidfile() gets its pid. */
static int rewrite_pidfile(const char *path, struct stat *st)
{
	struct stat now;
	char buf[24];
	int fd, n, ret = -1;

	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (!fstat(fd, &now) && now.st_ino == st->st_ino && now.st_dev == st->st_dev &&
	    !ftruncate(fd, 0) && pwrite(fd, buf, (size_t)n, 0) == n && !fstat(fd, st))
		ret = 0;
	close(fd);
	return ret;
}

int cmd_watch(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "keep", required_argument, NULL, 'k' },
		{ "count", required_argument, NULL, 'c' },
		{ "threads", no_argument, NULL, 't' },
		{ "daemon", no_argument, NULL, 'D' },
		{ "pid", required_argument, NULL, 'p' },
		{ "pid-file", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir_arg = "ktau-watch", *pidfile_arg = NULL;
	char *dir_own = NULL;	/* -o with %r, %p, %h expanded */
	char dir[PATH_MAX], pidfile[PATH_MAX] = "", path[PATH_MAX + 32];
	unsigned long keep = 600, count = 0, seq, first_seq, taken = 0;
	struct ktau_snap *prev = NULL, *cur = NULL, *delta = NULL, *out = NULL;
	struct ktau_registry *reg = NULL;
	struct sigaction sa = { .sa_handler = on_signal };
	struct ktau *k = NULL;
	double interval = 1;
	uint64_t start, step, slot = 0;
	int c, threads = 0, daemonize = 0, rc = EX_KT_OK, ret, wrote_pidfile = 0;
	unsigned int flags = KTAU_LIB_ALL;
	pid_t *pids = NULL, *pid_opts = NULL;
	size_t npids, npid_opts = 0, i, j;
	struct stat st, pid_st;

	while ((c = getopt_long(argc, argv, "i:o:k:c:tDp:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (parse_seconds(optarg, &interval) || interval < 0.01)
				return usage_err("watch", "bad --interval '%s': seconds, at least 0.01",
						 optarg);
			break;
		case 'o': dir_arg = optarg; break;
		case 'k':
			if (parse_uint(optarg, &keep))
				return usage_err("watch", "bad --keep '%s': a number", optarg);
			break;
		case 'c':
			if (parse_uint(optarg, &count))
				return usage_err("watch", "bad --count '%s': a number", optarg);
			break;
		case 't': threads = 1; break;
		case 'D': daemonize = 1; break;
		case 'p': {
			pid_t *v = realloc(pid_opts, (npid_opts + 1) * sizeof(*v));

			if (!v || parse_pid(optarg, &v[npid_opts])) {
				free(v ? v : pid_opts);
				return v ? usage_err("watch", "'%s' is not a pid", optarg)
					 : report(-ENOMEM, "watch");
			}
			pid_opts = v;
			npid_opts++;
			break;
		}
		case 'F': pidfile_arg = optarg; break;
		case 'h': help(stdout); return EX_KT_OK;
		default: return usage_err("watch", "bad option");
		}
	}
	dir_own = output_path(dir_arg);
	if (!dir_own) {
		free(pid_opts);
		return EX_KT_FAIL;
	}
	dir_arg = dir_own;
	/* -p PID and the pids after the options: one list. */
	npids = argc - optind + npid_opts;
	if (npids) {
		pids = calloc(npids, sizeof(*pids));
		if (!pids) {
			free(pid_opts);
			free(dir_own);
			return report(-ENOMEM, "watch");
		}
		for (i = 0; i < npid_opts; i++)
			pids[i] = pid_opts[i];
		for (; i < npids; i++)
			if (parse_pid(argv[optind + i - npid_opts], &pids[i])) {
				free(pids);
				free(pid_opts);
				free(dir_own);
				return usage_err("watch", "'%s' is not a pid",
						 argv[optind + i - npid_opts]);
			}
		flags = KTAU_LIB_PIDS | KTAU_LIB_PROCESS;
	}
	free(pid_opts);
	/* A second session in one directory: export would add both up. */
	if (realpath(dir_arg, dir) && next_seq(dir))
		err_msg("warning: %s already holds the snapshots of an earlier watch: this one "
			"starts a new session (a new baseline) there, which 'ktaud export %s' "
			"will refuse to add to the other; export each session's files, or watch "
			"into a new directory", dir_arg, dir_arg);
	/*
	 * KTAU and the pids checked before anything is made (no empty
	 * directory on a kernel without KTAU) and before detaching, so that
	 * errors reach the user.
	 */
	rc = open_ktau(&k);
	if (rc)
		goto out;
	ret = ktau_snapshot(k, flags, pids, npids, &prev);
	if (ret) {
		rc = report(ret, "snapshot");
		goto out;
	}
	for (i = 0; i < npids; i++) {
		for (j = 0; j < prev->ntasks && prev->tasks[j].pid != pids[i]; j++)
			;
		if (j == prev->ntasks) {
			err_msg("process %d does not exist or may not be read", pids[i]);
			rc = EX_KT_GONE;
			goto out;
		}
	}
	ktau_snap_free(prev);
	prev = NULL;
	if (mkdir(dir_arg, 0755) && errno != EEXIST) {
		err_msg("cannot create %s: %s", dir_arg, strerror(errno));
		rc = EX_KT_FAIL;
		goto out;
	}
	if (!realpath(dir_arg, dir)) {
		err_msg("%s: %s", dir_arg, strerror(errno));
		rc = EX_KT_FAIL;
		goto out;
	}
	if (pidfile_arg) {
		if (pidfile_arg[0] == '/')
			snprintf(pidfile, sizeof(pidfile), "%s", pidfile_arg);
		else if (getcwd(path, sizeof(path)))
			snprintf(pidfile, sizeof(pidfile), "%.2048s/%.1024s", path, pidfile_arg);
	} else if (daemonize) {
		snprintf(pidfile, sizeof(pidfile), "%.4000s/ktaud-watch.pid", dir);
	}
	/* Claimed before detaching, so that a refusal reaches the user. */
	if (pidfile[0]) {
		rc = write_pidfile(pidfile, &pid_st);
		if (rc)
			goto out;
		wrote_pidfile = 1;
	}
	if (daemonize) {
		rc = detach(wrote_pidfile ? pidfile : NULL, &pid_st);
		if (rc)
			goto out;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	seq = first_seq = next_seq(dir);
	start = now_ns(CLOCK_MONOTONIC);
	step = (uint64_t)(interval * 1e9);
	while (!stop) {
		ret = ktau_snapshot(k, flags, pids, npids, &cur);
		if (ret) {
			rc = report(ret, "snapshot");
			break;
		}
		/* IDs of new interrupt sources appear at run time. */
		ktau_registry_free(reg);
		reg = load_registry();
		if (prev) {
			ret = ktau_snap_diff(prev, cur, &delta);
		} else {
			ret = ktau_snap_dup(cur, &delta);
		}
		if (!ret && !threads)
			ret = ktau_snap_sum(delta, &out);
		else if (!ret)
			ret = ktau_snap_dup(delta, &out);
		if (ret) {
			rc = report(ret, "watch");
			break;
		}
		/* A bounded footprint: tasks without a change are left out. */
		for (i = j = 0; i < out->ntasks; i++) {
			if (out->tasks[i].nentries || !prev)
				out->tasks[j++] = out->tasks[i];
			else
				free(out->tasks[i].entries);
		}
		out->ntasks = j;
		snprintf(path, sizeof(path), "%s/snap-%06lu.ktau", dir, seq++);
		ret = ktau_snap_save_new(path, out, reg);
		if (ret == -EEXIST) {
			err_msg("%s exists: another ktaud watch writes into %s; stopped (give "
				"each watch its own directory)", path, dir);
			rc = EX_KT_FAIL;
			break;
		}
		if (ret) {
			err_msg("cannot write %s: %s", path, strerror(-ret));
			rc = EX_KT_FAIL;
			break;
		}
		prune(dir, keep, first_seq);
		ktau_snap_free(prev);
		ktau_snap_free(delta);
		ktau_snap_free(out);
		prev = cur;
		cur = delta = out = NULL;
		if (count && ++taken >= count)
			break;
		if (!stop)
			sleep_until_next(start, step, &slot);
	}
out:
	/* Only while it is still ours (not replaced since). */
	if (wrote_pidfile && read_pid(pidfile, &st) == getpid() && st.st_ino == pid_st.st_ino &&
	    st.st_dev == pid_st.st_dev)
		unlink(pidfile);
	ktau_snap_free(prev);
	ktau_snap_free(cur);
	ktau_snap_free(delta);
	ktau_snap_free(out);
	ktau_registry_free(reg);
	ktau_close(k);
	free(pids);
	free(dir_own);
	return rc;
}
