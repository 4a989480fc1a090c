// SPDX-License-Identifier: GPL-2.0
/*
 * ktau-taucheck: check TAU plain-text profile directories strictly.
 *
 * Usage: ktau-taucheck [--help] DIR...
 *
 * Exit status: 0 when every argument conforms, 1 when violations were found
 * (one line each on stderr), 2 on a usage error or when something could not
 * be read.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "taucheck.h"

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [--help] DIR...\n"
		"Check TAU plain-text profile directories strictly: profile.<node>.<context>.<thread>\n"
		"files directly in DIR (one metric) or only MULTI__<metric> subdirectories holding\n"
		"them (several metrics). A profile file may be given instead of a directory; it is\n"
		"then checked on its own.\n"
		"\n"
		"Each violation is printed on stderr as\n"
		"  FILE:LINE: [RULE] MESSAGE   or   PATH: [RULE] MESSAGE\n"
		"(the rules are listed in tools/ktau/taucheck/README.md).\n"
		"\n"
		"Exit status: 0 all conform, 1 violations found, 2 usage or I/O error.\n",
		prog);
}

int main(int argc, char **argv)
{
	int i, first = 1, violations = 0, ioerr = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout, argv[0]);
			return 0;
		}
		if (!strcmp(argv[i], "--")) {
			first = i + 1;
			break;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (first >= argc) {
		usage(stderr, argv[0]);
		return 2;
	}
	for (i = first; i < argc; i++) {
		struct stat st;
		int n;

		if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode))
			n = taucheck_file(argv[i], stderr);
		else
			n = taucheck_dir(argv[i], stderr);
		if (n == TAUCHECK_IO_ERROR) {
			ioerr = 1;
		} else if (n > 0) {
			fprintf(stderr, "%s: %d violation%s\n", argv[i], n,
				n == 1 ? "" : "s");
			violations += n;
		} else {
			printf("%s: ok\n", argv[i]);
		}
	}
	if (ioerr)
		return 2;
	return violations ? 1 : 0;
}
