// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target of the inputs of drilling down: the kernel's static
 * call graph, decoded from an ELF file (ktau_callgraph_from_elf, capstone)
 * or read from its text form (ktau_callgraph_parse), and the list of
 * dynamic probes of /proc/ktau/probes (ktau_probes_parse).
 *
 * An input that starts with the ELF magic is an ELF file (put in a memfd);
 * one that starts with "# ktau-callgraph" is the text form; anything else
 * is the probes list. A call graph read must write back a text form that
 * reads again into the same graph. Build and run: make fuzz.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ktau-drill.h"
#include "memfd.h"

#define CG_TEXT	"# ktau-callgraph"

static int elf_fd = -1;
static char elf_path[64];

static void same_stats(const struct ktau_callgraph *a, const struct ktau_callgraph *b)
{
	struct ktau_callgraph_stats x, y;

	ktau_callgraph_stats(a, &x);
	ktau_callgraph_stats(b, &y);
	if (x.callers != y.callers || x.calls != y.calls)
		abort();	/* the text form lost or added edges */
}

/* Write g as text, read it back, compare; ask for some callees. */
static void exercise(const struct ktau_callgraph *g)
{
	static const char *const names[] = { "main", "a", "f", "schedule", "do_syscall_64" };
	struct ktau_callgraph *again = NULL;
	char *text = NULL;
	size_t len = 0, n, i, k;
	FILE *f = open_memstream(&text, &len);

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *const *c = ktau_callgraph_callees(g, names[i], &n);

		for (k = 0; c && k < n; k++)
			if (!c[k] || !*c[k])
				abort();
	}
	if (!f)
		return;
	if (ktau_callgraph_write(f, g, "fuzz")) {
		fclose(f);
		free(text);
		return;
	}
	if (fclose(f))
		abort();
	if (ktau_callgraph_parse(text, len, &again))
		abort();	/* what is written must read */
	same_stats(g, again);
	ktau_callgraph_free(again);
	free(text);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	elf_fd = fuzz_memfd("fuzz-callgraph", elf_path, sizeof(elf_path));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ktau_callgraph *g = NULL;
	struct ktau_probe_info *v = NULL;
	size_t n = 0, i;

	if (size >= 4 && !memcmp(data, "\177ELF", 4)) {
		fuzz_memfd_set(elf_fd, data, size);
		if (ktau_callgraph_from_elf(elf_path, &g) == 0) {
			exercise(g);
			ktau_callgraph_free(g);
		} else if (g) {
			abort();	/* nothing is returned on failure */
		}
		return 0;
	}
	if (size >= strlen(CG_TEXT) && !memcmp(data, CG_TEXT, strlen(CG_TEXT))) {
		if (ktau_callgraph_parse((const char *)data, size, &g) == 0) {
			exercise(g);
			ktau_callgraph_free(g);
		} else if (g) {
			abort();
		}
		return 0;
	}
	if (ktau_probes_parse((const char *)data, size, &v, &n) == 0) {
		for (i = 0; i < n; i++)
			if (!memchr(v[i].function, '\0', sizeof(v[i].function)) || !v[i].function[0])
				abort();	/* a probe has a function name */
	} else if (v || n) {
		abort();
	}
	free(v);
	return 0;
}
