// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target of the two TAU profile readers: the strict checker
 * (taucheck/taucheck.c, with libxml2 for the metadata) and the lenient
 * reader of ktaud merge (ktaud/tauprofile.c).
 *
 * An input is the text of one profile file, or a whole profile directory
 * written the way head(1) prints several files:
 *
 *	==> profile.0.0.0 <==
 *	...
 *	==> MULTI__TIME/profile.0.0.1 <==
 *	...
 *
 * (names of letters, digits, '.', '_' and '-', at most one directory
 * level). A file goes through taucheck_text() and tfile_parse(); a
 * directory is written to a scratch directory and goes through
 * taucheck_dir() and read_profile(). What the strict checker accepts, the
 * lenient reader must read (for a directory: when it has a TIME metric).
 * Build and run: make fuzz.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ktaud.h"
#include "tauprofile.h"
#include "taucheck.h"

#define DIR_MARK	"==> "
#define MAX_FILES	32

static FILE *devnull;
static char scratch[160];

/* ktaud's messages, formatted and dropped (common.c is not linked). */
void err_msg(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
}

static void exercise(const struct tfile *t)
{
	size_t i;

	meta_get(t, "pid");
	meta_get(t, "tid");
	for (i = 0; i < t->nf; i++) {
		if (!t->f[i].name || !t->f[i].group || !*t->f[i].group)
			abort();	/* every function read has a name and groups */
		is_kernel_group(t->f[i].group);
		group_has(t->f[i].group, "TAU_CALLPATH");
		if (t->f[i].excl > t->f[i].incl)
			abort();	/* the reader clamps excl to incl */
	}
}

static void one_file(const uint8_t *data, size_t size)
{
	struct tfile t = { 0 };
	char *text = malloc(size + 1);
	int strict, lenient;

	if (!text)
		return;
	memcpy(text, data, size);
	text[size] = '\0';
	strict = taucheck_text("profile.0.0.0", data, size, devnull);
	lenient = tfile_parse("profile.0.0.0", text, &t);
	if (!lenient)
		exercise(&t);
	if (strict == 0 && lenient)
		abort();	/* strict accepts, merge does not */
	tfile_free(&t);
	free(text);
}

/* Remove what the last directory input left in the scratch directory. */
static void clear_dir(const char *dir, int depth)
{
	struct dirent *de;
	char path[384];
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) && depth == 0) {	/* a MULTI__ directory */
			clear_dir(path, 1);
			rmdir(path);
		}
	}
	closedir(d);
}

static int name_ok(const char *s, size_t n)
{
	size_t i, slashes = 0;

	if (!n || n > 100 || s[0] == '/' || s[0] == '.' || s[n - 1] == '/')
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '/') {
			if (++slashes > 1 || s[i + 1] == '.')
				return 0;
		} else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) {
			return 0;
		}
	}
	return 1;
}

static void write_file(const char *name, size_t nlen, const uint8_t *data, size_t size)
{
	char path[384];
	const char *slash = memchr(name, '/', nlen);
	int fd;

	if (slash) {
		snprintf(path, sizeof(path), "%s/%.*s", scratch, (int)(slash - name), name);
		mkdir(path, 0700);
	}
	snprintf(path, sizeof(path), "%s/%.*s", scratch, (int)nlen, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();	/* the scratch directory is full? */
	close(fd);
}

static void one_dir(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	struct tprofile prof = { 0 };
	size_t nfiles = 0, i;
	int strict, lenient, has_time = 0;

	clear_dir(scratch, 0);
	while (p < end && nfiles < MAX_FILES) {
		const uint8_t *eol = memchr(p, '\n', (size_t)(end - p)), *body, *next;
		const char *name = (const char *)p + 4;
		size_t nlen;

		if (!eol || (size_t)(eol - p) < 8 || memcmp(p, DIR_MARK, 4) ||
		    memcmp(eol - 4, " <==", 4))
			break;
		nlen = (size_t)(eol - 4 - p - 4);
		body = eol + 1;
		for (next = body; next < end; next++)
			if ((next == body || next[-1] == '\n') && end - next >= 4 &&
			    !memcmp(next, DIR_MARK, 4))
				break;
		if (name_ok(name, nlen)) {
			write_file(name, nlen, body, (size_t)(next - body));
			nfiles++;
		}
		p = next;
	}
	strict = taucheck_dir(scratch, devnull);
	lenient = read_profile(scratch, &prof);
	if (!lenient) {
		for (i = 0; i < prof.nm; i++) {
			has_time |= strstr(prof.m[i].metric, "TIME") != NULL;
			for (size_t j = 0; j < prof.m[i].n; j++)
				exercise(&prof.m[i].files[j]);
		}
		if (!has_time || prof.time >= prof.nm)
			abort();	/* read_profile() fails without a time metric */
	}
	if (strict == 0 && lenient && lenient != -EINVAL)
		abort();	/* strict accepts; merge only refuses a profile without TIME */
	tprofile_free(&prof);
}

static void cleanup(void)
{
	clear_dir(scratch, 0);
	rmdir(scratch);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	devnull = fopen("/dev/null", "w");
	snprintf(scratch, sizeof(scratch), "%s/ktau-fuzz-tau.XXXXXX",
		 tmp && *tmp && strlen(tmp) < 128 ? tmp : "/tmp");
	if (!devnull || !mkdtemp(scratch)) {
		fprintf(stderr, "fuzz-tau: cannot open /dev/null or create %s: %s\n", scratch,
			strerror(errno));
		exit(1);
	}
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= 4 && !memcmp(data, DIR_MARK, 4))
		one_dir(data, size);
	else
		one_file(data, size);
	return 0;
}
