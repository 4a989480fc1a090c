// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud callgraph: the static call graph of a vmlinux (direct calls and
 * tail jumps, decoded with capstone), as the compact text file that
 * 'ktaud drill --callgraph' reads, or the callees of some functions.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ktaud.h"

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud callgraph [options] VMLINUX|CALLS\n\n"
"The kernel functions each function calls directly: the direct calls and\n"
"tail jumps of its code in VMLINUX (an x86-64 vmlinux with its symbol\n"
"table, as the kernel build leaves it), or of a call graph file written\n"
"before. Without --callees, writes the call graph file: a first line\n"
"'# ktau-callgraph 1', then one line per function that calls others,\n"
"'caller callee callee ...' ('ktaud drill --callgraph' reads it).\n"
"Static functions that share a name are one function with the callees of\n"
"all of them.\n\n"
"  -o, --output FILE    write the call graph file to FILE (default: stdout)\n"
"      --callees FUNC   print the callees of FUNC instead, one a line\n"
"                       (may be repeated)\n"
"      --force          replace an existing FILE that ktaud did not write\n"
"  -q, --quiet          no summary on stderr\n"
"  -h, --help           this help\n");
}

int load_callgraph(const char *path, struct ktau_callgraph **g)
{
	unsigned char magic[4] = { 0 };
	FILE *f = fopen(path, "rb");
	int ret;

	*g = NULL;
	if (!f) {
		err_msg("cannot open %s: %s", path, strerror(errno));
		return errno == ENOENT ? EX_KT_USAGE : EX_KT_FAIL;
	}
	if (fread(magic, 1, sizeof(magic), f) != sizeof(magic))
		magic[0] = 0;
	fclose(f);
	if (!memcmp(magic, "\177ELF", 4))
		ret = ktau_callgraph_from_elf(path, g);
	else
		ret = ktau_callgraph_load(path, g);
	if (ret) {
		err_msg("%s: %s", path, ktau_callgraph_strerror(ret));
		return EX_KT_FAIL;
	}
	return EX_KT_OK;
}

int cmd_callgraph(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "callees", required_argument, NULL, 'C' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "force", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ktau_callgraph_stats st;
	struct ktau_callgraph *g;
	const char *out = NULL, **funcs = NULL;
	size_t nfuncs = 0, i, j, n;
	int c, quiet = 0, ret = EX_KT_OK;
	struct out_file of;

	funcs = calloc(argc, sizeof(*funcs));
	if (!funcs)
		return report(-ENOMEM, "callgraph");
	while ((c = getopt_long(argc, argv, "o:cqh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'F': out_force = 1; break;
		case 'c': free(funcs); return moved_short("callgraph", c, "--callees");
		case 'C': funcs[nfuncs++] = optarg; break;
		case 'q': quiet = 1; break;
		case 'h': help(stdout); free(funcs); return EX_KT_OK;
		default: free(funcs); return usage_err("callgraph", "bad option");
		}
	}
	if (optind != argc - 1) {
		free(funcs);
		return usage_err("callgraph", "give one VMLINUX (or call graph file)");
	}
	if (out && nfuncs) {
		free(funcs);
		return usage_err("callgraph", "-o writes the whole graph; --callees prints callees: "
				 "give one of them");
	}
	ret = load_callgraph(argv[optind], &g);
	if (ret) {
		free(funcs);
		return ret;
	}
	if (nfuncs) {
		for (i = 0; i < nfuncs; i++) {
			const char *const *v = ktau_callgraph_callees(g, funcs[i], &n);

			if (!v) {
				err_msg("%s: no function %s in %s", funcs[i], funcs[i], argv[optind]);
				ret = EX_KT_FAIL;
				continue;
			}
			if (nfuncs > 1)
				printf("%s:\n", funcs[i]);
			for (j = 0; j < n; j++)
				printf("%s%s\n", nfuncs > 1 ? "  " : "", v[j]);
		}
		ktau_callgraph_free(g);
		free(funcs);
		return ret;
	}
	free(funcs);
	ret = out_file_open(&of, out ? out : "-");
	if (!ret)
		ret = out_file_close(&of, ktau_callgraph_write(of.f, g, argv[optind]),
				     "the call graph");
	if (ret) {
		ktau_callgraph_free(g);
		return ret;
	}
	ktau_callgraph_stats(g, &st);
	if (!quiet)
		fprintf(stderr, "ktaud: call graph of %s: %zu functions, %zu call others, "
			"%zu calls; %zu names shared by several functions (merged)%s%s\n",
			argv[optind], st.functions, st.callers, st.calls, st.dup_names,
			out ? "; written to " : "", out ? out : "");
	ktau_callgraph_free(g);
	return EX_KT_OK;
}
