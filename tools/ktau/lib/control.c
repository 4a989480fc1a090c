// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: /proc/ktau/version, /proc/ktau/control and the exit collector.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/ktau.h>

#include "libktau.h"
#include "internal.h"

int ktau_abi_version(unsigned int *major, unsigned int *minor)
{
	char *text;
	int ret;

	ret = ktau__slurp(KTAU_PATH_VERSION, &text, NULL);
	if (ret)
		return ret == -ENOENT || ret == -ENOTDIR ? -ENOENT : ret;
	if (sscanf(text, "%u.%u", major, minor) != 2)
		ret = -EBADMSG;
	free(text);
	return ret;
}

int ktau_control(const char *cmd)
{
	size_t len = strlen(cmd);
	ssize_t n;
	int fd, ret = 0;

	if (access(KTAU_PATH_VERSION, F_OK))
		return -ENOENT;
	fd = open(KTAU_PATH_CONTROL, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, cmd, len);
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != len)
		ret = -EIO;
	close(fd);
	return ret;
}

int ktau_control_read(char **text)
{
	int ret = ktau__slurp(KTAU_PATH_CONTROL, text, NULL);

	return ret == -ENOTDIR ? -ENOENT : ret;
}

int ktau_collect_open(void)
{
	int fd;

	if (access(KTAU_PATH_VERSION, F_OK))
		return -ENOENT;
	fd = open(KTAU_PATH_COLLECT, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int ktau_collect_join(int fd)
{
	return ioctl(fd, KTAU_IOC_COLLECT_JOIN) ? -errno : 0;
}

int ktau_collect_read(int fd, struct ktau_snap **out)
{
	size_t cap = 1 << 20;
	char *buf = malloc(cap), *nb;
	ssize_t n;
	int ret, total = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		n = read(fd, buf, cap);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EINVAL && cap < (64u << 20)) {
			/* The next record does not fit. */
			cap *= 4;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			continue;
		}
		if (n < 0) {
			ret = -errno;
			free(buf);
			return ret;
		}
		if (!n)
			break;
		ret = ktau_decode(buf, n, out);
		if (ret < 0) {
			free(buf);
			return ret;
		}
		total += ret;
	}
	free(buf);
	if (!*out) {
		*out = ktau_snap_new();
		if (!*out)
			return -ENOMEM;
	}
	return total;
}

int ktau_collect_stats(int fd, uint64_t *collected, uint64_t *dropped, uint64_t *denied)
{
	struct ktau_collect_stats st;

	memset(&st, 0, sizeof(st));
	if (ioctl(fd, KTAU_IOC_COLLECT_STATS, &st))
		return -errno;
	if (collected)
		*collected = st.collected;
	if (dropped)
		*dropped = st.dropped;
	if (denied)
		*denied = st.denied;
	return 0;
}
