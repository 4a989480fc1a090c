// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: snapshot files. Layout (little-endian, as the host):
 *
 *	0    char     magic[8]      "KTAUSNAP"
 *	8    u32      version       1
 *	12   u32      hdr_size      240 (192 in files of libktau 1.0: no
 *	                            wall_ns or boot_id; read as unknown)
 *	16   u64      time_ns       CLOCK_MONOTONIC of the snapshot
 *	24   u64      base_ns       for a delta: time of the earlier snapshot
 *	32   u32      nmissing
 *	36   u32      flags         bit 0: a delta; bit 1: the tasks are
 *	                            processes (threads summed)
 *	40   u32      abi_major     of the records (1)
 *	44   u32      abi_minor
 *	48   u32      funcs_len     bytes of registry text after the header
 *	52   u32      reserved      0
 *	56   u64      recs_len      bytes of records after the registry text
 *	64   char     hostname[64]  NUL-terminated
 *	128  char     release[64]   NUL-terminated
 *	192  u64      wall_ns       CLOCK_REALTIME at time_ns (0: unknown)
 *	200  char     boot_id[40]   NUL-terminated ("": unknown)
 *	hdr_size: registry text ("id group name" lines), then the records as
 *	     KTAU_IOC_SNAPSHOT returns them; the file ends with them.
 * A reader takes the header fields it knows and skips the rest (hdr_size).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/ktau.h>

#include "libktau.h"
#include "internal.h"

#define SNAPFILE_MAGIC		"KTAUSNAP"
#define SNAPFILE_VERSION	1
#define SNAPFILE_HDR		240
#define SNAPFILE_HDR_MIN	192	/* libktau 1.0's */

struct snapfile_hdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_size;
	uint64_t time_ns;
	uint64_t base_ns;
	uint32_t nmissing;
	uint32_t flags;
	uint32_t abi_major;
	uint32_t abi_minor;
	uint32_t funcs_len;
	uint32_t reserved;
	uint64_t recs_len;
	char hostname[64];
	char release[64];
	uint64_t wall_ns;
	char boot_id[40];
};

_Static_assert(sizeof(struct snapfile_hdr) == SNAPFILE_HDR, "snapshot file header");

int ktau__write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* path is a snapshot file (a regular file with our magic): 1, else 0. */
static int is_snapfile(const char *path)
{
	char magic[8];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), ok;

	if (fd < 0)
		return 0;
	ok = read(fd, magic, sizeof(magic)) == (ssize_t)sizeof(magic) &&
	     !memcmp(magic, SNAPFILE_MAGIC, 8);
	close(fd);
	return ok;
}

int ktau__snap_write_fd(int fd, const struct ktau_snap *snap, const struct ktau_registry *reg)
{
	struct snapfile_hdr h;
	char *funcs = NULL;
	void *recs = NULL;
	size_t flen = 0, rlen = 0, i, nproc, ntask;
	int ret;

	ret = ktau_registry_format(reg, snap, &funcs, &flen);
	if (ret)
		return ret;
	ret = ktau_encode(snap, &recs, &rlen);
	if (ret || flen > UINT32_MAX) {
		free(funcs);
		return ret ? ret : -EOVERFLOW;
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SNAPFILE_MAGIC, 8);
	h.version = SNAPFILE_VERSION;
	h.hdr_size = SNAPFILE_HDR;
	h.time_ns = snap->time_ns;
	h.base_ns = snap->base_ns;
	h.nmissing = snap->nmissing;
	h.flags = snap->is_delta ? 1 : 0;
	for (i = 0, nproc = 0, ntask = 0; i < snap->ntasks; i++) {
		if (snap->tasks[i].flags & KTAU_TASK_AGGREGATE)
			continue;
		ntask++;
		nproc += !!(snap->tasks[i].flags & KTAU_TASK_PROCESS);
	}
	if (ntask && nproc == ntask)
		h.flags |= 2;
	h.abi_major = KTAU_ABI_VERSION_MAJOR;
	h.abi_minor = KTAU_ABI_VERSION_MINOR;
	h.funcs_len = flen;
	h.recs_len = rlen;
	memcpy(h.hostname, snap->hostname, sizeof(h.hostname) - 1);
	memcpy(h.release, snap->release, sizeof(h.release) - 1);
	h.wall_ns = snap->wall_ns;
	memcpy(h.boot_id, snap->boot_id, sizeof(h.boot_id) - 1);

	ret = ktau__write_all(fd, &h, sizeof(h));
	if (!ret)
		ret = ktau__write_all(fd, funcs, flen);
	if (!ret)
		ret = ktau__write_all(fd, recs, rlen);
	free(funcs);
	free(recs);
	return ret;
}

/*
 * Written to a temporary file of this process, then linked into place
 * (never replacing) or, replace set, renamed over a snapshot file; never
 * over anything else. -EEXIST when path is taken.
 */
static int snap_save(const char *path, const struct ktau_snap *snap,
		     const struct ktau_registry *reg, int replace)
{
	char *tmp;
	int fd, ret;

	/* Written to a temporary file and moved: never seen half-written. */
	/* A unique name (a pid is not, across the hosts of a shared directory). */
	tmp = ktau__strfmt("%s.tmp-XXXXXX", path);
	if (!tmp)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		/* Not FILE's own error: a missing directory, no permission. */
		if (ret == -EEXIST)
			ret = -EAGAIN;
		goto out;
	}
	if (fchmod(fd, 0644 & ~ktau__umask())) {
		ret = -errno;
		close(fd);
		unlink(tmp);
		goto out;
	}
	ret = ktau__snap_write_fd(fd, snap, reg);
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && link(tmp, path)) {
		ret = -errno;
		if (ret == -EEXIST && replace && is_snapfile(path))
			ret = rename(tmp, path) ? -errno : 0;
	}
	unlink(tmp);
out:
	free(tmp);
	return ret;
}

int ktau_snap_save(const char *path, const struct ktau_snap *snap,
		   const struct ktau_registry *reg)
{
	return snap_save(path, snap, reg, 1);
}

int ktau_snap_save_new(const char *path, const struct ktau_snap *snap,
		       const struct ktau_registry *reg)
{
	return snap_save(path, snap, reg, 0);
}

int ktau_snap_parse_file(const void *buf, size_t len, struct ktau_snap **out,
			 struct ktau_registry **regp)
{
	const char *p = buf;
	struct snapfile_hdr h;
	struct ktau_registry *reg = NULL;
	struct ktau_snap *s = NULL;
	int ret;

	*out = NULL;
	if (regp)
		*regp = NULL;
	if (len < SNAPFILE_HDR_MIN)
		return -EBADMSG;
	memset(&h, 0, sizeof(h));
	memcpy(&h, p, SNAPFILE_HDR_MIN);
	if (h.hdr_size >= SNAPFILE_HDR && h.hdr_size <= len)
		memcpy(&h, p, SNAPFILE_HDR);
	if (memcmp(h.magic, SNAPFILE_MAGIC, 8) || h.version != SNAPFILE_VERSION ||
	    h.hdr_size < SNAPFILE_HDR_MIN || h.hdr_size > len || h.hdr_size % 8 ||
	    (h.hdr_size > SNAPFILE_HDR_MIN && h.hdr_size < SNAPFILE_HDR) ||
	    !memchr(h.boot_id, '\0', sizeof(h.boot_id)) ||
	    h.abi_major != KTAU_ABI_VERSION_MAJOR || h.reserved || (h.flags & ~3u) ||
	    h.funcs_len > len - h.hdr_size ||
	    h.recs_len != len - h.hdr_size - h.funcs_len ||
	    !memchr(h.hostname, '\0', sizeof(h.hostname)) ||
	    !memchr(h.release, '\0', sizeof(h.release)))
		return -EBADMSG;
	ret = ktau_registry_parse(p + h.hdr_size, h.funcs_len, &reg);
	if (ret)
		return ret;
	s = ktau_snap_new();
	if (!s) {
		ktau_registry_free(reg);
		return -ENOMEM;
	}
	ret = ktau_decode(p + h.hdr_size + h.funcs_len, h.recs_len, &s);
	if (ret < 0) {
		ktau_snap_free(s);
		ktau_registry_free(reg);
		return ret;
	}
	s->time_ns = h.time_ns;
	s->base_ns = h.base_ns;
	s->nmissing = h.nmissing;
	s->is_delta = h.flags & 1;
	if (h.flags & 2) {
		size_t i;

		for (i = 0; i < s->ntasks; i++)
			if (!(s->tasks[i].flags & KTAU_TASK_AGGREGATE))
				s->tasks[i].flags |= KTAU_TASK_PROCESS;
	}
	memcpy(s->hostname, h.hostname, sizeof(s->hostname));
	memcpy(s->release, h.release, sizeof(s->release));
	s->wall_ns = h.wall_ns;
	memcpy(s->boot_id, h.boot_id, sizeof(s->boot_id));
	*out = s;
	if (regp)
		*regp = reg;
	else
		ktau_registry_free(reg);
	return 0;
}

int ktau_snap_load(const char *path, struct ktau_snap **out, struct ktau_registry **regp)
{
	char *buf;
	size_t len;
	int ret;

	*out = NULL;
	ret = ktau__slurp(path, &buf, &len);
	if (ret)
		return ret;
	ret = ktau_snap_parse_file(buf, len, out, regp);
	free(buf);
	return ret;
}
