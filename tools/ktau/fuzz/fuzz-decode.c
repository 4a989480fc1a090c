// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target of libktau's decoders: the binary records of
 * KTAU_IOC_SNAPSHOT and /proc/ktau/collect (ktau_decode), snapshot files
 * (ktau_snap_parse_file) and the registry text (ktau_registry_parse). What
 * decodes must encode back to the same records, and go through diff, sum
 * and every writer without a fault. Build and run: make fuzz.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libktau.h"

static void exercise(const struct ktau_snap *s, const struct ktau_registry *reg)
{
	struct ktau_snap *d = NULL, *p = NULL, *again = NULL;
	void *enc;
	size_t len;
	FILE *f;
	char *text = NULL;
	size_t tlen = 0;

	if (ktau_encode(s, &enc, &len) == 0) {
		if (ktau_decode(enc, len, &again) < 0)
			abort();	/* what we encode must decode */
		if (again->ntasks != s->ntasks)
			abort();
		ktau_snap_free(again);
		free(enc);
	}
	if (ktau_snap_diff(s, s, &d) == 0) {
		for (size_t i = 0; i < d->ntasks; i++)
			if (d->tasks[i].nentries)
				abort();	/* s - s is empty */
		ktau_snap_free(d);
	}
	if (ktau_snap_sum(s, &p) == 0)
		ktau_snap_free(p);
	f = open_memstream(&text, &tlen);
	if (f) {
		for (size_t i = 0; i < s->ntasks && i < 8; i++)
			ktau_write_tau_task(f, s, &s->tasks[i], reg, 0, i, NULL);
		ktau_write_folded(f, s, reg, 0);
		ktau_write_json(f, s, reg, 0);
		fclose(f);
		free(text);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ktau_registry *reg = NULL;
	struct ktau_snap *s = NULL;

	if (size >= 8 && !memcmp(data, "KTAUSNAP", 8)) {
		if (ktau_snap_parse_file(data, size, &s, &reg) == 0) {
			exercise(s, reg);
			ktau_snap_free(s);
			ktau_registry_free(reg);
		} else if (s || reg) {
			abort();	/* nothing is returned on failure */
		}
		return 0;
	}
	if (size && (data[0] == '#' || (data[0] >= '0' && data[0] <= '9' && size < 72))) {
		if (ktau_registry_parse((const char *)data, size, &reg) == 0) {
			for (uint32_t id = 0; id < 64; id++)
				ktau_func_name(reg, id);
			ktau_registry_free(reg);
		}
		return 0;
	}
	if (ktau_decode(data, size, &s) >= 0) {
		exercise(s, NULL);
		ktau_snap_free(s);
	} else if (s) {
		abort();
	}
	return 0;
}
