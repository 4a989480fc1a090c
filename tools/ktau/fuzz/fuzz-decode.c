// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target of libktau's decoders: the binary records of
 * KTAU_IOC_SNAPSHOT and /proc/ktau/collect (ktau_decode), snapshot files
 * (ktau_snap_parse_file) and the registry text (ktau_registry_parse). What
 * decodes must encode back to the same records, and go through diff, sum
 * and every writer without a fault. The same bytes as sample records
 * (ktau_sample_decode) go through the counts per place, the folded stacks
 * and the TAU rows of samples; input that starts with 'k' is kallsyms text
 * (ktau_ksyms_parse). Build and run: make fuzz.
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

/* The input as sample records of thread 1, written with the snapshot. */
static void exercise_samples(const uint8_t *data, size_t size, const struct ktau_snap *s)
{
	struct ktau_sample_rec rec[64];
	struct ktau_sample_profile *p;
	struct ktau_tau_opts o = { .sample_metric = "cpu clock", .sample_period_ns = 1000 };
	size_t len = size < sizeof(rec) / 32 * 24 ? size - size % 24 : sizeof(rec) / 32 * 24;
	char *text = NULL;
	size_t tlen = 0;
	FILE *f;
	int n = ktau_sample_decode(data, len, 1, rec, 64);

	if (n <= 0)
		return;
	p = ktau_sample_profile_new();
	if (!p || ktau_sample_profile_add_samples(p, rec, n, NULL, NULL)) {
		ktau_sample_profile_free(p);
		return;
	}
	if (ktau_sample_profile_total(p) != (uint64_t)n)
		abort();
	o.samples = p;
	f = open_memstream(&text, &tlen);
	if (f) {
		ktau_write_sample_folded(f, p, s, NULL);
		for (size_t i = 0; s && i < s->ntasks && i < 8; i++)
			ktau_write_tau_task(f, s, &s->tasks[i], NULL, 0, i, &o);
		fclose(f);
		free(text);
	}
	ktau_sample_profile_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ktau_registry *reg = NULL;
	struct ktau_snap *s = NULL;
	struct ktau_ksyms *ks = NULL;

	if (size && data[0] == 'k') {
		if (ktau_ksyms_parse((const char *)data + 1, size - 1, &ks) == 0) {
			for (uint64_t a = 0; a < 64; a++)
				ktau_ksyms_name(ks, 0xffffffff81000000ull + a * 4096);
			ktau_ksyms_free(ks);
		}
		return 0;
	}

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
		exercise_samples(data, size, s);
		ktau_snap_free(s);
	} else if (s) {
		abort();
	} else {
		exercise_samples(data, size, NULL);
	}
	return 0;
}
