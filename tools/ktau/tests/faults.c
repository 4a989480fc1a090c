// SPDX-License-Identifier: GPL-2.0
/*
 * ktau-test-faults: a workload whose kernel time is page faults, for the
 * drill tests. R times: map an anonymous region of M MiB, write one byte
 * to every page (each write faults: the kernel allocates and clears a
 * page), unmap it. Transparent huge pages are refused for the region, so
 * that every 4 KiB page faults on its own.
 *
 * Usage: ktau-test-faults [-m MiB] [-r R]   (default 16 MiB, 8 rounds)
 * Prints "faults N pages" (the pages touched) at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	long mib = 16, rounds = 8, page = sysconf(_SC_PAGESIZE), r, off, pages = 0;
	size_t len;
	int c;

	while ((c = getopt(argc, argv, "m:r:")) != -1) {
		switch (c) {
		case 'm': mib = atol(optarg); break;
		case 'r': rounds = atol(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-m MiB] [-r ROUNDS]\n", argv[0]);
			return 2;
		}
	}
	if (mib <= 0 || mib > 4096 || rounds <= 0) {
		fprintf(stderr, "%s: -m 1..4096 MiB, -r at least 1\n", argv[0]);
		return 2;
	}
	len = (size_t)mib << 20;
	for (r = 0; r < rounds; r++) {
		volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		madvise((void *)p, len, MADV_NOHUGEPAGE);
		for (off = 0; off < (long)len; off += page) {
			p[off] = 1;
			pages++;
		}
		munmap((void *)p, len);
	}
	printf("faults %ld pages\n", pages);
	return 0;
}
