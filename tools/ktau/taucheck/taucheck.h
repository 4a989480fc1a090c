/* SPDX-License-Identifier: GPL-2.0 */
/*
 * taucheck: strict checker for TAU plain-text profile directories
 * (profile.<node>.<context>.<thread> files, one directory per metric),
 * following /work/shared/tau-profile-format.md; see README.md for the
 * list of rules.
 *
 * Every violation is written to @errors as one line:
 *
 *	<file>:<line>: [<rule>] <message>
 *	<file or directory>: [<rule>] <message>	(no line, e.g. layout)
 *
 * Both functions return the number of violations found (0: the input
 * conforms), or TAUCHECK_IO_ERROR when a file or directory could not be
 * read (the reason is written to @errors as "<path>: error: ..."; the
 * violations found in what could be read are written too). Not
 * thread-safe: a process checks one thing at a time.
 */
#ifndef TAUCHECK_H
#define TAUCHECK_H

#include <stdio.h>

#define TAUCHECK_IO_ERROR (-1)

/*
 * Check a profile directory: either profile.<n>.<c>.<t> files directly in
 * @dir (one metric), or only MULTI__<metric> subdirectories each holding
 * such files (several metrics); every file, the numbering of the files
 * and the consistency between files and metric directories.
 */
int taucheck_dir(const char *dir, FILE *errors);

/*
 * Check one profile file on its own: its name, its content and, when it
 * sits in a MULTI__<metric> directory, that the directory name matches
 * the metric in the file. Rules that need the other files of the
 * directory (numbering gaps, consistency between files) are checked by
 * taucheck_dir() only.
 */
int taucheck_file(const char *path, FILE *errors);

/*
 * Check the content of one profile file held in memory, the @len bytes at
 * @data (not NUL-terminated), as taucheck_file() checks a file's content;
 * @name is only used in the messages, and no name or directory rule is
 * checked. For tests and fuzzing.
 */
int taucheck_text(const char *name, const void *data, size_t len, FILE *errors);

#endif /* TAUCHECK_H */
