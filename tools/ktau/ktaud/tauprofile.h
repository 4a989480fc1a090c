/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ktaud: reading TAU profile directories (profile.N.C.T files, one metric
 * at the top level or MULTI__<metric> subdirectories), leniently, as TAU
 * and other tools write them; for ktaud merge.
 */
#ifndef KTAUD_TAUPROFILE_H
#define KTAUD_TAUPROFILE_H

#include <stddef.h>
#include <stdio.h>

struct tfunc {
	char *name, *group;
	unsigned long long calls, subrs;
	double excl, incl;
	int callpath;
};

struct tevent {
	char *name;
	unsigned long long n;
	double max, min, mean, sumsqr;
};

struct tmeta {
	char *name, *value;
};

struct tfile {
	int node, ctx, thread;
	char *metric;
	struct tfunc *f;
	size_t nf;
	struct tevent *e;
	size_t ne;
	struct tmeta *m;
	size_t nm;
	int meta_dropped;	/* metadata that could not be read */
	int dups;		/* duplicate names dropped */
};

struct tmetric {
	char *dir;		/* MULTI__... or NULL: files at the top level */
	char *metric;
	struct tfile *files;
	size_t n;
};

struct tprofile {
	struct tmetric *m;
	size_t nm;
	size_t time;		/* the metric that gets the kernel times */
};

/*
 * Parse the text of one profile file (NUL-terminated; lines are cut in
 * place) into t, which starts zeroed; name is for the messages (on stderr
 * through err_msg). 0, -EBADMSG (said why) or -ENOMEM. t is to be freed
 * with tfile_free() whatever the result.
 */
int tfile_parse(const char *name, char *text, struct tfile *t);
void tfile_free(struct tfile *t);
/* A profile directory; errors are reported. 0 or -errno. */
int read_profile(const char *dir, struct tprofile *p);
void tprofile_free(struct tprofile *p);

/* The value of metadata attribute name of t, or NULL. */
const char *meta_get(const struct tfile *t, const char *name);
/* Group list g ("A|B") has the group comp. */
int group_has(const char *g, const char *comp);
/* Group list g is one of the kernel's (TAU_KERNEL_MERGE, KERNEL_GROUPS, KTAU_*). */
int is_kernel_group(const char *g);

/*
 * Write file f in the strict form (callpath groups "TAU_CALLPATH|<group
 * of the last element>") with metric o->metric: its metadata (through
 * o->meta_value when set: the value to write for an attribute, NULL to
 * drop it) and then o->meta's, its rows (exclusive values from o->excl
 * when set) and then o->nextra rows from o->rows, its user events. 0 or
 * -EIO.
 */
struct tfile_out {
	const char *metric;
	const char *(*meta_value)(const char *name, const char *value, void *arg);
	void (*meta)(FILE *out, void *arg);
	double (*excl)(const struct tfile *f, size_t i, void *arg);
	size_t nextra;
	void (*rows)(FILE *out, void *arg);
	void *arg;
};
int tfile_write(FILE *out, const struct tfile *f, const struct tfile_out *o);

#endif
