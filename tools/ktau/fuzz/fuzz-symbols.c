// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target of the parsers of libktau's user-side symbolization
 * (sampling): the text of /proc/PID/maps (ktau_usyms_parse_maps), the ELF
 * files it names (program headers for the load bias, section headers,
 * symbol and string tables: lib/elfsym.c) and the sample spec
 * (ktau_sample_parse).
 *
 * An input is maps text, optionally followed by a NUL byte and an ELF
 * image. The image is put in a memfd, and "@ELF" in the maps text stands
 * for its path; with no maps text (the input starts with NUL), the image
 * is mapped at 0x400000 from offset 0 and at 0x401000 from offset 0x1000.
 * The first line also goes through ktau_sample_parse(). Only the memfd can
 * be opened: other paths in the maps text fail with ENOENT (open() is
 * wrapped), so the fuzzer never reads the host's files. Addresses across
 * every mapping are then named. Build and run: make fuzz.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libktau.h"
#include "memfd.h"

#define ELF_TOKEN	"@ELF"
#define DEFAULT_MAPS	"00400000-00401000 r-xp 00000000 00:00 0 @ELF\n" \
			"00401000-00403000 r-xp 00001000 00:00 0 @ELF\n"

static int elf_fd = -1;
static char elf_path[64];

/* Linked with -Wl,--wrap=open: only the memfd opens. */
int __real_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	if (flags & O_CREAT) {
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	if (strcmp(path, elf_path)) {
		errno = ENOENT;
		return -1;
	}
	return __real_open(path, flags, mode);
}

/* maps with every "@ELF" replaced by the memfd's path; NULL: no memory. */
static char *expand(const char *maps, size_t len)
{
	size_t n = 0, plen = strlen(elf_path), o = 0, i;
	char *out;

	for (i = 0; i + 4 <= len; i++)
		n += !memcmp(maps + i, ELF_TOKEN, 4);
	out = malloc(len + n * plen + 1);
	if (!out)
		return NULL;
	for (i = 0; i < len;) {
		if (i + 4 <= len && !memcmp(maps + i, ELF_TOKEN, 4)) {
			memcpy(out + o, elf_path, plen);
			o += plen;
			i += 4;
		} else {
			out[o++] = maps[i++];
		}
	}
	out[o] = '\0';
	return out;
}

static void spec(const uint8_t *data, size_t size)
{
	struct ktau_sample_spec sp = { 0 };
	const char *why = NULL;
	char line[128];
	size_t n;

	for (n = 0; n < size && data[n] != '\n' && data[n]; n++)
		;
	if (n >= sizeof(line))
		return;
	memcpy(line, data, n);
	line[n] = '\0';
	if (ktau_sample_parse(line, &sp, &why) == 0) {
		if (!sp.period)
			abort();	/* a spec has a period or frequency */
	} else if (!why) {
		abort();	/* a refusal says why */
	}
}

/* Some addresses of every mapping in the maps text: start, end, steps. */
static void names(struct ktau_usyms *u, const char *maps)
{
	const char *line;
	char buf[300];
	int k;

	for (line = maps; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		unsigned long long lo, hi;

		if (sscanf(line, "%llx-%llx", &lo, &hi) != 2 || hi <= lo)
			continue;
		for (k = 0; k <= 64; k++) {
			ktau_usyms_name(u, lo + (hi - lo) / 64 * k, buf, sizeof(buf));
			if (!memchr(buf, '\0', sizeof(buf)))
				abort();
		}
		ktau_usyms_name(u, lo - 1, buf, sizeof(buf));
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	elf_fd = fuzz_memfd("fuzz-symbols", elf_path, sizeof(elf_path));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t mlen = nul ? (size_t)(nul - data) : size;
	struct ktau_usyms *u = NULL;
	char *maps;

	spec(data, size);
	/* The image: what follows the NUL (an empty file without one). */
	fuzz_memfd_set(elf_fd, nul ? nul + 1 : data, nul ? size - mlen - 1 : 0);
	maps = mlen ? expand((const char *)data, mlen) : expand(DEFAULT_MAPS, strlen(DEFAULT_MAPS));
	if (!maps)
		return 0;
	if (ktau_usyms_parse_maps(maps, strlen(maps), &u) == 0) {
		names(u, maps);
		ktau_usyms_free(u);
	}
	free(maps);
	return 0;
}
