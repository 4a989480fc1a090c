// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud combine: the TAU profile directories of the ranks of an MPI job
 * (or of several machines, or runs) into one TAU profile directory whose
 * nodes are the ranks, every file with its host name in the metadata.
 *
 * Nodes: when the inputs' nodes are all different (each rank wrote its
 * rank as its node: the runtime, 'ktaud run' under a launcher), they
 * keep their order; when two inputs have the same node (outputs written
 * outside a launcher, all node 0), the inputs are taken in argument
 * order. Either way nodes are then numbered densely from 0, as the TAU
 * readers want; the original node and directory are in the metadata
 * ("KTAU Combine Node", "KTAU Combine Source"). Contexts and threads are
 * kept. Every input must have the same metrics.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ktaud.h"
#include "internal.h"
#include "tauprofile.h"

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud combine [options] <tau-dir>...\n"
"       ktaud combine [options] <snapshot-file>...\n\n"
"Join the TAU profile directories of the ranks of an MPI job (one per rank,\n"
"as 'ktaud run -o prof-%%r' or KTAU_PROFILE_DIR=prof-%%r write them, on one\n"
"machine or several) into one TAU profile directory whose nodes are the\n"
"ranks. Nodes keep their order when every input has other node numbers\n"
"(the ranks); when inputs share a node number they are taken in argument\n"
"order. Nodes are numbered densely from 0; contexts and threads are kept.\n"
"Every file gets its host name (\"Hostname\"), and \"KTAU Combine Node\" and\n"
"\"KTAU Combine Source\" (where it came from) in its metadata.\n"
"Snapshot files ('ktaud run --save prof-%%r.ktau'), one per rank: node N is\n"
"the N-th file (give them in rank order), its processes contexts 0, 1, ...\n\n"
"  -o, --output DIR     the combined profile (default: ktau-combined); %%r,\n"
"                       %%p, %%h as for 'ktaud run'\n"
"  -f, --force          write into a directory that holds files combine did\n"
"                       not write (none of them is replaced)\n"
"  -q, --quiet          no summary\n"
"  -h, --help           this help\n\n"
"Exit: 0 ok, 1 an unreadable input, inputs with different metrics, or the\n"
"output refused, 2 bad argument.\n");
}

/* One node of an input, and the node it becomes. */
struct unit {
	size_t input;
	int node, to;
	const char *host;	/* from the input's manifest, for files without one */
};

struct cfile {
	const struct unit *u;
	const struct tfile *f;
	const char *source;
	char node[16], orig[16];
};

static const char *cf_meta_value(const char *name, const char *value, void *arg)
{
	struct cfile *x = arg;

	if (!strcmp(name, "Node"))
		return x->node;
	/* An earlier combine's: this one writes its own. */
	if (!strncmp(name, "KTAU Combine", 12))
		return NULL;
	return value;
}

static void cf_meta(FILE *out, void *arg)
{
	const struct cfile *x = arg;

	/* Every file says where it ran. */
	if (!meta_get(x->f, "Hostname") && x->u->host)
		ktau__meta(out, "Hostname", x->u->host);
	ktau__meta(out, "KTAU Combine Node", x->orig);
	ktau__meta(out, "KTAU Combine Source", x->source);
}

/* The host of the writer of dir, from a manifest of libktau, or NULL. */
static char *manifest_host(const char *dir)
{
	char path[4096], line[512], *host = NULL, *h;
	struct dirent *de;
	DIR *d = opendir(dir);
	FILE *f;

	if (!d)
		return NULL;
	while (!host && (de = readdir(d))) {
		if (strncmp(de->d_name, ".ktau-written.", 14))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) && (h = strstr(line, " host=")))
			host = strndup(h + 6, strcspn(h + 6, " \n"));
		fclose(f);
	}
	closedir(d);
	return host;
}

static int cmp_unit_node(const void *a, const void *b)
{
	const struct unit *x = a, *y = b;

	return x->node != y->node ? (x->node < y->node ? -1 : 1) :
	       x->input < y->input ? -1 : x->input > y->input;
}

static int cmp_unit_input(const void *a, const void *b)
{
	const struct unit *x = a, *y = b;

	return x->input != y->input ? (x->input < y->input ? -1 : 1) :
	       x->node < y->node ? -1 : x->node > y->node;
}

/* The metric of the same name in p, or NULL. */
static const struct tmetric *find_metric(const struct tprofile *p, const char *metric)
{
	size_t i;

	for (i = 0; i < p->nm; i++)
		if (!strcmp(p->m[i].metric, metric))
			return &p->m[i];
	return NULL;
}

/*
 * Snapshot files, one per rank (ktaud run --save prof-%r.ktau): node i is
 * the i-th file, its processes contexts, as 'ktaud run' writes a rank.
 */
static int combine_snapshots(char **files, size_t n, const char *outdir, int force, int quiet)
{
	struct ktau_outdir *od = NULL;
	size_t i;
	int ret, rc = EX_KT_OK;

	ret = ktau_outdir_open(outdir, "combine", -1, force ? KTAU_OUTDIR_FORCE : 0, &od);
	if (ret)
		return outdir_report(ret, "combine");
	for (i = 0; i < n && !rc; i++) {
		const char *meta[] = { "KTAU Combine Source", files[i] };
		struct ktau_tau_opts o = { .dense_processes = 1, .has_rank = 1, .rank = (int)i,
					   .extra_meta = meta, .nextra = 1 };
		struct ktau_registry *reg = NULL;
		struct ktau_snap *snap = NULL;

		ret = ktau_snap_load(files[i], &snap, &reg);
		if (ret == -EBADMSG)
			err_msg("%s is not a KTAU snapshot file, or it is truncated or garbled",
				files[i]);
		else if (ret)
			err_msg("cannot read %s: %s", files[i], strerror(-ret));
		else if (!snap->ntasks)
			err_msg("%s has no task: rank %zu would have no profile", files[i], i);
		if (!ret && snap->ntasks) {
			ktau_snap_sort(snap);
			ret = ktau_write_tau_into(od, snap, reg, &o);
			if (ret < 0)
				rc = outdir_report(ret, "combine");
			else if (!quiet)
				fprintf(stderr, "ktaud combine:   node %zu <- %s (%s, %d file%s)\n", i,
					files[i], snap->hostname[0] ? snap->hostname : "host unknown",
					ret, ret == 1 ? "" : "s");
		} else {
			rc = EX_KT_FAIL;
		}
		ktau_snap_free(snap);
		ktau_registry_free(reg);
	}
	if (rc)
		ktau__outdir_failed(od);	/* no combination missing nodes */
	ret = ktau_outdir_close(od);
	if (ret && !rc)
		rc = report(ret, "close the output directory");
	if (!rc && !quiet)
		fprintf(stderr, "ktaud combine: %zu snapshot file%s, %zu nodes (in argument order); "
			"profile: %s/ (paraprof, pprof)\n", n, n == 1 ? "" : "s", n, outdir);
	return rc;
}

int cmd_combine(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *outarg = "ktau-combined";
	struct tprofile *prof = NULL;
	struct ktau_outdir *od = NULL;
	struct unit *units = NULL;
	char **hosts = NULL, *outdir = NULL, name[4200];
	size_t nin, nunits = 0, i, j, k, u;
	int c, force = 0, quiet = 0, rc = EX_KT_OK, ret, disjoint = 1;

	while ((c = getopt_long(argc, argv, "o:fqh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': outarg = optarg; break;
		case 'f': force = 1; break;
		case 'q': quiet = 1; break;
		case 'h': help(stdout); return EX_KT_OK;
		default: return usage_err("combine", "bad option");
		}
	}
	nin = (size_t)(argc - optind);
	if (!nin)
		return usage_err("combine", "give the TAU profile directories of the ranks");
	if (!*outarg)
		return usage_err("combine", "-o needs a directory name");
	outdir = output_path(outarg);
	prof = calloc(nin, sizeof(*prof));
	hosts = calloc(nin, sizeof(*hosts));
	if (!outdir || !prof || !hosts) {
		rc = report(-ENOMEM, "combine");
		goto out;
	}
	/* Snapshot files, or TAU directories: not both. */
	for (i = 0, j = 0; i < nin; i++) {
		struct stat st;

		j += !stat(argv[optind + i], &st) && S_ISREG(st.st_mode);
	}
	if (j && j != nin) {
		rc = usage_err("combine", "give TAU profile directories or snapshot files, not both");
		goto out;
	}
	if (j) {
		rc = combine_snapshots(argv + optind, nin, outdir, force, quiet);
		goto out;
	}
	for (i = 0; i < nin; i++) {
		if (read_profile(argv[optind + i], &prof[i])) {
			rc = EX_KT_FAIL;
			goto out;
		}
		hosts[i] = manifest_host(argv[optind + i]);
	}
	/* The same metrics everywhere: a node without one breaks the readers. */
	for (i = 1; i < nin; i++) {
		int same = prof[i].nm == prof[0].nm;

		for (j = 0; same && j < prof[0].nm; j++)
			same = find_metric(&prof[i], prof[0].m[j].metric) != NULL;
		if (!same) {
			err_msg("%s and %s do not have the same metrics (%s%s and %s%s): combine "
				"profiles of the same kind", argv[optind], argv[optind + i],
				prof[0].m[0].metric, prof[0].nm > 1 ? ", ..." : "",
				prof[i].m[0].metric, prof[i].nm > 1 ? ", ..." : "");
			rc = EX_KT_FAIL;
			goto out;
		}
	}
	/* The nodes of every input (files are sorted by node). */
	for (i = 0; i < nin; i++)
		nunits += prof[i].m[0].n;
	units = calloc(nunits ? nunits : 1, sizeof(*units));
	if (!units) {
		rc = report(-ENOMEM, "combine");
		goto out;
	}
	nunits = 0;
	for (i = 0; i < nin; i++) {
		const struct tmetric *m = &prof[i].m[0];

		for (j = 0; j < m->n; j++) {
			if (j && m->files[j].node == m->files[j - 1].node)
				continue;
			for (k = 0; k < nunits; k++)
				if (units[k].node == m->files[j].node)
					disjoint = 0;
			units[nunits++] = (struct unit){ i, m->files[j].node, 0, hosts[i] };
		}
	}
	qsort(units, nunits, sizeof(*units), disjoint ? cmp_unit_node : cmp_unit_input);
	for (u = 0; u < nunits; u++)
		units[u].to = (int)u;

	ret = ktau_outdir_open(outdir, "combine", -1, force ? KTAU_OUTDIR_FORCE : 0, &od);
	if (ret) {
		rc = outdir_report(ret, "combine");
		goto out;
	}
	for (u = 0; u < nunits && !rc; u++) {
		const struct tprofile *p = &prof[units[u].input];
		struct cfile x = { .u = &units[u], .source = argv[optind + units[u].input] };
		struct tfile_out o = { .meta_value = cf_meta_value, .meta = cf_meta, .arg = &x };

		snprintf(x.node, sizeof(x.node), "%d", units[u].to);
		snprintf(x.orig, sizeof(x.orig), "%d", units[u].node);
		for (i = 0; i < prof[0].nm && !rc; i++) {
			const struct tmetric *m = find_metric(p, prof[0].m[i].metric);

			o.metric = m->metric;
			for (j = 0; j < m->n && !rc; j++) {
				const struct tfile *f = &m->files[j];
				FILE *out;

				if (f->node != units[u].node)
					continue;
				snprintf(name, sizeof(name), "%s%s%sprofile.%d.%d.%d",
					 prof[0].nm > 1 ? "MULTI__" : "",
					 prof[0].nm > 1 ? m->metric : "", prof[0].nm > 1 ? "/" : "",
					 units[u].to, f->ctx, f->thread);
				out = ktau_outdir_create(od, name);
				if (!out) {
					rc = outdir_report(-errno, "combine");
					break;
				}
				x.f = f;
				ret = tfile_write(out, f, &o);
				if (fclose(out) && !ret)
					ret = -errno;
				if (ret) {
					ktau__outdir_discard(od, name);
					rc = outdir_report(ret, "combine");
				}
			}
		}
	}
	if (!rc && !quiet) {
		fprintf(stderr, "ktaud combine: %zu input%s, %zu node%s%s\n", nin, nin == 1 ? "" : "s",
			nunits, nunits == 1 ? "" : "s", disjoint ? "" :
			" (inputs share node numbers: numbered in argument order)");
		for (u = 0; u < nunits; u++) {
			const struct tfile *f0 = NULL;
			const struct tmetric *m = &prof[units[u].input].m[0];

			for (j = 0; j < m->n && !f0; j++)
				if (m->files[j].node == units[u].node)
					f0 = &m->files[j];
			fprintf(stderr, "ktaud combine:   node %d <- %s node %d (%s)\n", units[u].to,
				argv[optind + units[u].input], units[u].node,
				f0 && meta_get(f0, "Hostname") ? meta_get(f0, "Hostname") :
				units[u].host ? units[u].host : "host unknown");
		}
		fprintf(stderr, "ktaud combine: profile: %s/ (paraprof, pprof)\n", outdir);
	}
out:
	if (rc)
		ktau__outdir_failed(od);
	ret = ktau_outdir_close(od);
	if (ret && !rc)
		rc = report(ret, "close the output directory");
	if (prof)
		for (i = 0; i < nin; i++)
			tprofile_free(&prof[i]);
	if (hosts)
		for (i = 0; i < nin; i++)
			free(hosts[i]);
	free(hosts);
	free(prof);
	free(units);
	free(outdir);
	return rc;
}
