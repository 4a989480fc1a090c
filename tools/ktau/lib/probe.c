// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: dynamic probes (ABI 1.2) through /proc/ktau/probes: add and
 * remove them with ioctls on an open file (the probes added on it live
 * as long as it), list them from its text.
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

_Static_assert(KTAU_LIB_PROBE_MAX == KTAU_PROBE_MAX, "probes of the ABI");
_Static_assert(KTAU_LIB_PROBE_NAME_LEN == KTAU_PROBE_NAME_LEN, "names of the ABI");

int ktau_probes_open(void)
{
	int fd;

	if (access(KTAU_PATH_VERSION, F_OK))
		return -ENOENT;
	fd = open(KTAU_PATH_PROBES, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOTTY : -errno;
	return fd;
}

static int probe_req(int fd, unsigned long cmd, const char *name, uint32_t id, uint32_t *idp)
{
	struct ktau_probe_req req = { .size = sizeof(req), .id = (int32_t)id };
	size_t len = name ? strlen(name) : 0;

	if (len >= sizeof(req.name))
		return -EINVAL;
	if (len)
		memcpy(req.name, name, len);
	if (ioctl(fd, cmd, &req))
		return errno == ENOTTY ? -ENOTTY : -errno;
	if (idp)
		*idp = (uint32_t)req.id;
	return 0;
}

int ktau_probe_add(int fd, const char *name, uint32_t *id)
{
	if (!name || !*name)
		return -EINVAL;
	return probe_req(fd, KTAU_IOC_PROBE_ADD, name, 0, id);
}

int ktau_probe_remove(int fd, const char *name)
{
	if (!name || !*name)
		return -EINVAL;
	return probe_req(fd, KTAU_IOC_PROBE_REMOVE, name, 0, NULL);
}

int ktau_probe_remove_id(int fd, uint32_t id)
{
	return probe_req(fd, KTAU_IOC_PROBE_REMOVE, NULL, id, NULL);
}

int ktau_probes_parse(const char *text, size_t len, struct ktau_probe_info **vp, size_t *np)
{
	const char *line = text, *end = text + len, *eol;
	struct ktau_probe_info *v = NULL, *nv;
	size_t n = 0, cap = 0;
	char buf[256], fn[KTAU_LIB_PROBE_NAME_LEN + 1];
	unsigned long long missed;
	unsigned int id;
	int owner, pos;

	*vp = NULL;
	*np = 0;
	for (; line < end; line = eol + 1) {
		eol = memchr(line, '\n', end - line);
		if (!eol)
			eol = end;
		if (eol == line || *line == '#')
			continue;
		if ((size_t)(eol - line) >= sizeof(buf))
			goto bad;
		memcpy(buf, line, eol - line);
		buf[eol - line] = '\0';
		pos = 0;
		/* "<id> <function> <owner pid> <missed>" */
		if (sscanf(buf, "%u %64s %d %llu%n", &id, fn, &owner, &missed, &pos) != 4 ||
		    buf[pos] || buf[0] < '0' || buf[0] > '9' || owner < 0 ||
		    strlen(fn) >= KTAU_LIB_PROBE_NAME_LEN)
			goto bad;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n].id = id;
		strcpy(v[n].function, fn);
		v[n].owner = owner;
		v[n].missed = missed;
		n++;
	}
	*vp = v;
	*np = n;
	return 0;
bad:
	free(v);
	return -EBADMSG;
}

int ktau_probes_list(struct ktau_probe_info **v, size_t *n)
{
	char *text;
	size_t len;
	int ret;

	*v = NULL;
	*n = 0;
	if (access(KTAU_PATH_VERSION, F_OK))
		return -ENOENT;
	ret = ktau__slurp(KTAU_PATH_PROBES, &text, &len);
	if (ret)
		return ret == -ENOENT ? -ENOTTY : ret;
	ret = ktau_probes_parse(text, len, v, n);
	free(text);
	return ret;
}

const char *ktau_probe_strerror(int err, int add)
{
	switch (-err) {
	case EPERM:
	case EACCES:
		return "not permitted: probes need CAP_PERFMON or CAP_SYS_ADMIN (run as root, "
		       "or: setcap cap_perfmon+ep $(command -v ktaud))";
	case ENOENT:
		return add ? "no such kernel function (see /proc/kallsyms; a module's function "
			     "as module:function)"
			   : "not probed (see 'ktaud probe list')";
	case EINVAL:
		return add ? "this function cannot be probed: it is not traceable (notrace, "
			     "inlined, KTAU's own code) or not the start of a function; try "
			     "its caller or a callee"
			   : "a malformed request (a name of at most 63 bytes)";
	case EEXIST:
		return "already probed (see 'ktaud probe list'); its calls are timed already";
	case ENOSPC:
		return "too many probes: at most 64 at one time, system-wide (or no function "
		       "ID left); remove some ('ktaud probe list', 'ktaud probe remove')";
	case EOPNOTSUPP:
		return "this kernel cannot probe: it was built without fprobe "
		       "(CONFIG_FPROBE, CONFIG_FUNCTION_TRACER)";
	case ENOTTY:
		return "this kernel's KTAU has no dynamic probes (ABI 1.2 needed; "
		       "/proc/ktau/probes is missing)";
	default:
		return strerror(-err);
	}
}
