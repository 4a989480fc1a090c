/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the KTAU selftests: snapshots through /proc/ktau/profiles,
 * the function registry, /proc/ktau/control, the text profiles and
 * /proc/self/task/TID/schedstat.
 *
 * Helpers return 0 (or a count) on success and -errno on failure, and the
 * tests assert on that. The ktau_must_*() helpers take the test's
 * _metadata and assert themselves.
 */
#ifndef KTAU_UTIL_H
#define KTAU_UTIL_H

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <grp.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/ktau.h>
#include <linux/userfaultfd.h>

#include "../kselftest_harness.h"

#define KTAU_VERSION_PATH	"/proc/ktau/version"
#define KTAU_CONTROL_PATH	"/proc/ktau/control"
#define KTAU_FUNCTIONS_PATH	"/proc/ktau/functions"
#define KTAU_AGGREGATE_PATH	"/proc/ktau/aggregate"
#define KTAU_PROFILES_PATH	"/proc/ktau/profiles"
#define KTAU_COLLECT_PATH	"/proc/ktau/collect"

#define KTAU_NSEC_PER_MSEC	1000000ULL
#define KTAU_NSEC_PER_SEC	1000000000ULL

#define KTAU_ID_GETPPID		(KTAU_ID_SYSCALL_BASE + SYS_getppid)
#define KTAU_ID_READ		(KTAU_ID_SYSCALL_BASE + SYS_read)
#define KTAU_NR_SOFTIRQS	10

/* First snapshot buffer; grown on ENOSPC. */
#define KTAU_SNAP_BUF_INIT	(256 << 10)

#define ktau_log(fmt, ...) fprintf(stderr, "# ktau: " fmt "\n", ##__VA_ARGS__)

/* Group names in group-number order, as /proc/ktau/control lists them. */
static inline const char *ktau_group_name(int group)
{
	static const char * const names[KTAU_NR_GROUPS] = {
		"syscall", "irq", "softirq", "sched", "fault", "signal", "dynamic", "kvm",
	};

	return group >= 0 && group < KTAU_NR_GROUPS ? names[group] : NULL;
}

/* Softirq names in vector order, as /proc/softirqs lists them. */
static inline const char *ktau_softirq_name(int vec)
{
	static const char * const names[KTAU_NR_SOFTIRQS] = {
		"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL",
		"TASKLET", "SCHED", "HRTIMER", "RCU",
	};

	return vec >= 0 && vec < KTAU_NR_SOFTIRQS ? names[vec] : NULL;
}

static inline __u64 ktau_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * KTAU_NSEC_PER_SEC + ts.tv_nsec;
}

/* One nanosleep() call (a signal may cut it short). */
static inline void ktau_sleep_ns(__u64 ns)
{
	struct timespec ts = {
		.tv_sec = ns / KTAU_NSEC_PER_SEC,
		.tv_nsec = ns % KTAU_NSEC_PER_SEC,
	};

	nanosleep(&ts, NULL);
}

/*
 * Two UDP sockets over loopback, @rx bound to a free port: each datagram
 * from @tx to @addr goes through the NET_RX softirq and back to @rx.
 */
struct ktau_udp {
	int rx, tx;
	struct sockaddr_in addr;
};

static inline void ktau_udp_close(struct ktau_udp *u)
{
	if (u->rx >= 0)
		close(u->rx);
	if (u->tx >= 0)
		close(u->tx);
	u->rx = -1;
	u->tx = -1;
}

/* 0, or -errno with nothing left open. */
static inline int ktau_udp_open(struct ktau_udp *u)
{
	socklen_t alen = sizeof(u->addr);
	int ret = 0;

	memset(&u->addr, 0, sizeof(u->addr));
	u->addr.sin_family = AF_INET;
	u->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	u->rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	u->tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (u->rx < 0 || u->tx < 0 ||
	    bind(u->rx, (struct sockaddr *)&u->addr, sizeof(u->addr)) ||
	    getsockname(u->rx, (struct sockaddr *)&u->addr, &alen))
		ret = -errno;
	if (ret)
		ktau_udp_close(u);
	return ret;
}

/* One datagram of @len (at most 256) bytes there and back: 0 or -errno. */
static inline int ktau_udp_roundtrip(struct ktau_udp *u, size_t len)
{
	char msg[256] = "ktau";

	if (len > sizeof(msg))
		return -EINVAL;
	if (sendto(u->tx, msg, len, 0, (struct sockaddr *)&u->addr,
		   sizeof(u->addr)) != (ssize_t)len)
		return errno ? -errno : -EIO;
	if (recv(u->rx, msg, len, 0) != (ssize_t)len)
		return errno ? -errno : -EIO;
	return 0;
}

/* Send @fd over the unix socket @sock: 0 or -errno. */
static inline int ktau_send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, c = 'f';
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &mh, 0) == 1 ? 0 : -errno;
}

/* A descriptor from the unix socket @sock, or -errno. */
static inline int ktau_recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, c;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &mh, 0) != 1)
		return -EIO;
	cm = CMSG_FIRSTHDR(&mh);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -EBADMSG;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* n calls of getppid(), straight to the kernel (no libc caching). */
static inline void ktau_getppid_loop(unsigned int n)
{
	while (n--)
		syscall(SYS_getppid);
}

static inline __u64 ktau_absdiff(__u64 a, __u64 b)
{
	return a > b ? a - b : b - a;
}

/*
 * Read a whole file into a NUL-terminated malloc()ed buffer. Returns NULL
 * with errno set on failure.
 */
static inline char *ktau_slurp(const char *path, size_t *lenp)
{
	size_t len = 0, cap = 8192;
	char *buf, *nbuf;
	int fd, err = 0;
	ssize_t n;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	for (;;) {
		if (cap - len < 4096) {
			if (cap >= (64 << 20)) {
				err = EFBIG;
				break;
			}
			nbuf = realloc(buf, cap * 2);
			if (!nbuf) {
				err = ENOMEM;
				break;
			}
			buf = nbuf;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			err = errno;
			break;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	if (err) {
		free(buf);
		errno = err;
		return NULL;
	}
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
}

/* A decimal number that is the whole string. */
static inline int ktau_parse_u64(const char *s, __u64 *v)
{
	char *end;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

/* What a profile holds for one function ID (zero when absent). */
struct ktau_val {
	__u64 count;
	__u64 incl;
	__u64 excl;
};

/*
 * Check a text profile (/proc/PID/ktau, /proc/PID/task/TID/ktau,
 * /proc/ktau/aggregate) and find one ID in it. After '#' header lines,
 * rows are "id group name calls incl_ns excl_ns", sorted by ID, with
 * calls > 0 and incl_ns >= excl_ns. Returns 1 when id was found (*v
 * filled in), 0 when it was not (*v zeroed), -EBADMSG when the profile
 * breaks a rule.
 */
static inline int ktau_text_parse(const char *text, __u32 id, struct ktau_val *v)
{
	const char *line, *eol;
	char row[512], *tok[32], *save, *t;
	__u64 rid, prev = 0, num[3];
	int ntok, i, found = 0;

	memset(v, 0, sizeof(*v));
	for (line = text; *line; line = *eol ? eol + 1 : eol) {
		eol = strchrnul(line, '\n');
		if (line[0] == '#')
			continue;
		if ((size_t)(eol - line) >= sizeof(row)) {
			ktau_log("profile row too long: %.60s", line);
			return -EBADMSG;
		}
		memcpy(row, line, eol - line);
		row[eol - line] = '\0';
		ntok = 0;
		for (t = strtok_r(row, " ", &save); t && ntok < 32;
		     t = strtok_r(NULL, " ", &save))
			tok[ntok++] = t;
		if (ntok < 6 || ktau_parse_u64(tok[0], &rid)) {
			ktau_log("malformed profile row '%.*s'", (int)(eol - line), line);
			return -EBADMSG;
		}
		for (i = 0; i < 3; i++) {
			if (ktau_parse_u64(tok[ntok - 3 + i], &num[i])) {
				ktau_log("malformed profile row '%.*s'", (int)(eol - line), line);
				return -EBADMSG;
			}
		}
		if (rid <= prev || num[0] == 0 || num[1] < num[2]) {
			ktau_log("profile row '%.*s': IDs not ascending, no calls or incl < excl",
				 (int)(eol - line), line);
			return -EBADMSG;
		}
		prev = rid;
		if (rid == id) {
			v->count = num[0];
			v->incl = num[1];
			v->excl = num[2];
			found = 1;
		}
	}
	return found;
}

/* One ID of a text profile file: 0 (*v zero when absent) or -errno. */
static inline int ktau_text_get(const char *path, __u32 id, struct ktau_val *v)
{
	char *text = ktau_slurp(path, NULL);
	int ret = -errno;

	if (!text) {
		ktau_log("cannot read %s: %s", path, strerror(-ret));
		return ret;
	}
	ret = ktau_text_parse(text, id, v);
	free(text);
	return ret < 0 ? ret : 0;
}

/* True when buf holds "ffff" and 12 more hex digits: a kernel address. */
static inline bool ktau_text_has_kaddr(const char *buf, size_t len)
{
	size_t i, j;
	char c;

	for (i = 0; i + 16 <= len; i++) {
		for (j = 0; j < 16; j++) {
			c = buf[i + j];
			if (j < 4 ? (c != 'f' && c != 'F') : !isxdigit((unsigned char)c))
				break;
		}
		if (j == 16)
			return true;
	}
	return false;
}

/* True when an aligned 64-bit word of a binary buffer is a kernel address. */
static inline bool ktau_bin_has_kaddr(const void *buf, size_t len)
{
	const __u64 *w = buf;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		if ((w[i] >> 48) == 0xffff)
			return true;
	return false;
}

/* The registry of /proc/ktau/functions. */
struct ktau_func {
	__u32 id;
	char group[16];
	char name[64];
};

struct ktau_funcs {
	struct ktau_func *v;
	size_t n;
};

static inline void ktau_funcs_free(struct ktau_funcs *fs)
{
	free(fs->v);
	fs->v = NULL;
	fs->n = 0;
}

/* Write @val to @path in one write(); 0 or -errno. */
static inline int ktau_write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		ret = -errno;
	close(fd);
	return ret;
}

/* Load "id group name" lines; -EBADMSG for a malformed line. */
static inline int ktau_funcs_load(struct ktau_funcs *fs)
{
	char *text, *line, *save, *sp1, *sp2;
	struct ktau_func *nv, *f;
	size_t cap = 0;
	__u64 id;

	ktau_funcs_free(fs);
	text = ktau_slurp(KTAU_FUNCTIONS_PATH, NULL);
	if (!text)
		return -errno;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		if (fs->n == cap) {
			cap = cap ? cap * 2 : 512;
			nv = realloc(fs->v, cap * sizeof(*nv));
			if (!nv) {
				free(text);
				return -ENOMEM;
			}
			fs->v = nv;
		}
		f = &fs->v[fs->n];
		sp1 = strchr(line, ' ');
		sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
		if (!sp2 || sp2 - sp1 - 1 >= (long)sizeof(f->group) ||
		    strlen(sp2 + 1) >= sizeof(f->name) || !sp2[1]) {
			ktau_log("malformed functions line '%s'", line);
			free(text);
			return -EBADMSG;
		}
		*sp1 = '\0';
		if (ktau_parse_u64(line, &id) || id > UINT32_MAX) {
			ktau_log("malformed ID in functions line '%s'", line);
			free(text);
			return -EBADMSG;
		}
		f->id = id;
		memcpy(f->group, sp1 + 1, sp2 - sp1 - 1);
		f->group[sp2 - sp1 - 1] = '\0';
		snprintf(f->name, sizeof(f->name), "%s", sp2 + 1);
		fs->n++;
	}
	free(text);
	return 0;
}

static inline const struct ktau_func *ktau_func_by_name(const struct ktau_funcs *fs,
							const char *name)
{
	size_t i;

	for (i = 0; i < fs->n; i++)
		if (!strcmp(fs->v[i].name, name))
			return &fs->v[i];
	return NULL;
}

static inline const struct ktau_func *ktau_func_by_id(const struct ktau_funcs *fs, __u32 id)
{
	size_t i;

	for (i = 0; i < fs->n; i++)
		if (fs->v[i].id == id)
			return &fs->v[i];
	return NULL;
}

/* /proc/ktau/control: one command per write(2). Returns 0 or -errno. */
static inline int ktau_control_write(const void *cmd, size_t len)
{
	int fd, ret = 0;
	ssize_t n;

	fd = open(KTAU_CONTROL_PATH, O_WRONLY);
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

static inline int ktau_control(const char *cmd)
{
	return ktau_control_write(cmd, strlen(cmd));
}

static inline char *ktau_control_read(void)
{
	return ktau_slurp(KTAU_CONTROL_PATH, NULL);
}

/* The kernel command line has the word @word (or @word=...). */
static inline bool ktau_cmdline_has(const char *word)
{
	char *t = ktau_slurp("/proc/cmdline", NULL), *p;
	size_t n = strlen(word);
	bool ret = false;

	for (p = t; p && (p = strstr(p, word)); p += n)
		if ((p == t || p[-1] == ' ') &&
		    (p[n] == ' ' || p[n] == '=' || p[n] == '\n' || !p[n])) {
			ret = true;
			break;
		}
	free(t);
	return ret;
}

/* The kernel is the debug one of the test runs (ktaudebug=1, check.sh). */
static inline bool ktau_debug_kernel(void)
{
	char *t = ktau_slurp("/proc/cmdline", NULL);
	bool ret = t && strstr(t, "ktaudebug=1");

	free(t);
	return ret;
}

/*
 * The pass where no test may switch a group (ktauhold, check.sh's MTTCG
 * pass: a vCPU may run a stale translation of patched kernel text).
 */
static inline bool ktau_no_switch_pass(void)
{
	return ktau_cmdline_has("ktauhold");
}

/* The N of the "@key N" line of /proc/ktau/control, or -1. */
static inline long ktau_control_count(const char *key)
{
	char *t = ktau_control_read(), *p, want[40];
	long n = -1;

	snprintf(want, sizeof(want), "\n%s ", key);
	p = t ? strstr(t, want) : NULL;
	if (p)
		n = strtol(p + strlen(want), NULL, 10);
	free(t);
	return n;
}

/* 1 when the group is on, 0 when off, -ENOENT when not listed, -errno. */
static inline int ktau_group_state(const char *group)
{
	char *text = ktau_control_read(), *line, *save, want[32];
	size_t len;
	int ret = -ENOENT;

	if (!text)
		return -errno;
	len = snprintf(want, sizeof(want), "%s ", group);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, want, len))
			continue;
		if (!strcmp(line + len, "on"))
			ret = 1;
		else if (!strcmp(line + len, "off"))
			ret = 0;
		else
			ret = -EBADMSG;
		break;
	}
	free(text);
	return ret;
}

static inline bool ktau_all_groups_on(void)
{
	int g;

	for (g = 0; g < KTAU_NR_GROUPS; g++)
		if (ktau_group_state(ktau_group_name(g)) != 1)
			return false;
	return true;
}

/* /proc/self/task/TID/schedstat: on-CPU ns, run-queue wait ns, switches in. */
struct ktau_schedstat {
	unsigned long long oncpu_ns;
	unsigned long long delay_ns;
	unsigned long long pcount;
};

static inline int ktau_schedstat_read(pid_t tid, struct ktau_schedstat *ss)
{
	char path[64];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	n = fscanf(f, "%llu %llu %llu", &ss->oncpu_ns, &ss->delay_ns, &ss->pcount);
	fclose(f);
	return n == 3 ? 0 : -EBADMSG;
}

/* A snapshot: the request with the kernel's answers, and the records. */
struct ktau_snap {
	struct ktau_snapshot req;
	char *buf;
	size_t cap;
};

/* Grow the buffer to cap bytes, touched now so that a snapshot faults nothing. */
static inline int ktau_snap_reserve(struct ktau_snap *s, size_t cap)
{
	char *nbuf;

	if (cap <= s->cap)
		return 0;
	nbuf = realloc(s->buf, cap);
	if (!nbuf)
		return -ENOMEM;
	memset(nbuf, 0, cap);
	s->buf = nbuf;
	s->cap = cap;
	return 0;
}

static inline void ktau_snap_free(struct ktau_snap *s)
{
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

static inline void ktau_snap_req(struct ktau_snapshot *req, __u32 flags, const pid_t *pids,
				 __u32 npids, void *buf, __u64 buf_size)
{
	memset(req, 0, sizeof(*req));
	req->size = sizeof(*req);
	req->flags = flags;
	req->pids = (uintptr_t)pids;
	req->npids = npids;
	req->buf = (uintptr_t)buf;
	req->buf_size = buf_size;
}

/* One KTAU_IOC_SNAPSHOT: 0 or -errno. */
static inline int ktau_snapshot_ioctl(int fd, struct ktau_snapshot *req)
{
	return ioctl(fd, KTAU_IOC_SNAPSHOT, req) ? -errno : 0;
}

static inline const struct ktau_entry *ktau_rec_entries(const struct ktau_task_rec *r)
{
	/* The entries end the record: a later header may be longer. */
	return (const void *)((const char *)r + r->size -
			      (size_t)r->nentries * sizeof(struct ktau_entry));
}

/*
 * Check a sequence of records (a snapshot or what the collector read):
 * sizes add up, reserved fields are zero, comm is terminated, and every
 * entry has a nonzero ID, appears once and has incl >= excl. Returns 0 and
 * the number of records, or -EBADMSG.
 */
static inline int ktau_recs_check(const char *buf, size_t len, __u32 *nrecs)
{
	const struct ktau_task_rec *r;
	const struct ktau_entry *e;
	size_t off = 0;
	__u32 n = 0, i, j;

	while (off < len) {
		r = (const void *)(buf + off);
		if (len - off < sizeof(*r) || r->size % 8 || r->size > len - off ||
		    r->size < sizeof(*r) + (size_t)r->nentries * sizeof(*e)) {
			ktau_log("record %u at %zu: bad size %u for %u entries (%zu bytes left)",
				 n, off, len - off < sizeof(*r) ? 0 : r->size,
				 len - off < sizeof(*r) ? 0 : r->nentries, len - off);
			return -EBADMSG;
		}
		if (r->reserved || !memchr(r->comm, '\0', sizeof(r->comm))) {
			ktau_log("record of tid %d: reserved %u or comm not terminated",
				 r->tid, r->reserved);
			return -EBADMSG;
		}
		e = ktau_rec_entries(r);
		for (i = 0; i < r->nentries; i++) {
			if (!e[i].id || (!e[i].count && !e[i].samples) ||
			    e[i].incl_ns < e[i].excl_ns) {
				ktau_log("tid %d id %u: samples %u count %llu incl %llu excl %llu",
					 r->tid, e[i].id, e[i].samples, e[i].count,
					 e[i].incl_ns, e[i].excl_ns);
				return -EBADMSG;
			}
			for (j = 0; j < i; j++) {
				if (e[j].id == e[i].id) {
					ktau_log("tid %d: id %u listed twice", r->tid, e[i].id);
					return -EBADMSG;
				}
			}
		}
		off += r->size;
		n++;
	}
	*nrecs = n;
	return 0;
}

/*
 * Take a snapshot into s, growing its buffer on ENOSPC, and check it.
 * Returns 0 or -errno (-EBADMSG: the kernel's answer breaks the ABI).
 */
static inline int ktau_snap(int fd, struct ktau_snap *s, __u32 flags, const pid_t *pids,
			    __u32 npids)
{
	int ret = -ENOSPC, tries;
	__u32 n;

	for (tries = 0; tries < 8 && ret == -ENOSPC; tries++) {
		ret = ktau_snap_reserve(s, s->cap ? s->cap : KTAU_SNAP_BUF_INIT);
		if (ret)
			return ret;
		ktau_snap_req(&s->req, flags, pids, npids, s->buf, s->cap);
		ret = ktau_snapshot_ioctl(fd, &s->req);
		if (ret != -ENOSPC)
			break;
		if (s->req.used <= s->req.buf_size) {
			ktau_log("ENOSPC with used %llu <= buf_size %llu",
				 s->req.used, s->req.buf_size);
			return -EBADMSG;
		}
		if (ktau_snap_reserve(s, s->req.used * 2))
			return -ENOMEM;
	}
	if (ret)
		return ret;
	if (s->req.used > s->req.buf_size) {
		ktau_log("used %llu > buf_size %llu", s->req.used, s->req.buf_size);
		return -EBADMSG;
	}
	ret = ktau_recs_check(s->buf, s->req.used, &n);
	if (ret)
		return ret;
	if (n != s->req.ntasks) {
		ktau_log("ntasks %u but %u records", s->req.ntasks, n);
		return -EBADMSG;
	}
	return 0;
}

/* The record after r (the first when r is NULL), NULL at the end. */
static inline const struct ktau_task_rec *ktau_snap_next(const struct ktau_snap *s,
							 const struct ktau_task_rec *r)
{
	size_t off = r ? (size_t)((const char *)r - s->buf) + r->size : 0;

	return off < s->req.used ? (const void *)(s->buf + off) : NULL;
}

/* The record of thread tid (not the aggregate), or NULL. */
static inline const struct ktau_task_rec *ktau_snap_find(const struct ktau_snap *s, pid_t tid)
{
	const struct ktau_task_rec *r;

	for (r = ktau_snap_next(s, NULL); r; r = ktau_snap_next(s, r))
		if (r->tid == tid && !(r->flags & KTAU_REC_AGGREGATE))
			return r;
	return NULL;
}

static inline const struct ktau_task_rec *ktau_snap_aggregate(const struct ktau_snap *s)
{
	const struct ktau_task_rec *r;

	for (r = ktau_snap_next(s, NULL); r; r = ktau_snap_next(s, r))
		if (r->flags & KTAU_REC_AGGREGATE)
			return r;
	return NULL;
}

static inline const struct ktau_entry *ktau_rec_find(const struct ktau_task_rec *r, __u32 id)
{
	const struct ktau_entry *e;
	__u32 i;

	if (!r)
		return NULL;
	e = ktau_rec_entries(r);
	for (i = 0; i < r->nentries; i++)
		if (e[i].id == id)
			return &e[i];
	return NULL;
}

static inline struct ktau_val ktau_rec_val(const struct ktau_task_rec *r, __u32 id)
{
	const struct ktau_entry *e = ktau_rec_find(r, id);
	struct ktau_val v = { 0 };

	if (e) {
		v.count = e->count;
		v.incl = e->incl_ns;
		v.excl = e->excl_ns;
	}
	return v;
}

/* What happened to id between records a and b (b taken later). */
static inline struct ktau_val ktau_val_delta(const struct ktau_task_rec *a,
					     const struct ktau_task_rec *b, __u32 id)
{
	struct ktau_val va = ktau_rec_val(a, id), vb = ktau_rec_val(b, id), d;

	d.count = vb.count - va.count;
	d.incl = vb.incl - va.incl;
	d.excl = vb.excl - va.excl;
	return d;
}

static inline __u64 ktau_rec_sum_excl(const struct ktau_task_rec *r)
{
	const struct ktau_entry *e = ktau_rec_entries(r);
	__u64 sum = 0;
	__u32 i;

	for (i = 0; i < r->nentries; i++)
		sum += e[i].excl_ns;
	return sum;
}

/* The users of the permission tests: uid and gid, no supplementary groups. */
#define KTAU_PROBES_PATH	"/proc/ktau/probes"

#define KTAU_USER_ID		1000
#define KTAU_OTHER_ID		1001
#define KTAU_CAP(cap)		(1ull << (cap))

/* @dir's file system honours set-user-ID bits (not mounted nosuid). */
static inline bool ktau_suid_works(const char *dir)
{
	struct statvfs v;

	return !statvfs(dir, &v) && !(v.f_flag & ST_NOSUID);
}

/* Copy @from to a new file @to, then give it @mode; 0 or -errno. */
static inline int ktau_copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in, out, ret = 0;
	ssize_t n;

	in = open(from, O_RDONLY);
	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0700);
	if (out < 0) {
		ret = -errno;
		close(in);
		return ret;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n) {
			ret = -EIO;
			break;
		}
	if (n < 0)
		ret = -errno;
	if (!ret && fchmod(out, mode))
		ret = -errno;
	close(in);
	close(out);
	return ret;
}

/*
 * A set-user-ID (root's, when run as root) copy of this program, @path
 * (@len bytes), in a new directory made from the template @dir: 0; 1
 * when /tmp is mounted nosuid (nothing left); or -errno.
 */
static inline int ktau_suid_copy(char *dir, char *path, size_t len)
{
	if (!mkdtemp(dir))
		return -errno;
	if (!ktau_suid_works(dir)) {
		rmdir(dir);
		return 1;
	}
	if (chmod(dir, 0755))
		return -errno;
	snprintf(path, len, "%s/prog", dir);
	return ktau_copy_file("/proc/self/exe", path, 04755);
}

/*
 * Become uid (gid uid, no supplementary groups) with exactly the
 * capabilities in caps (KTAU_CAP() bits) permitted and effective, none
 * inheritable, and dumpable as after an exec(). Returns 0 or -errno.
 */
static inline int ktau_become(uid_t uid, __u64 caps)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = { { 0 } };

	if (prctl(PR_SET_KEEPCAPS, caps ? 1 : 0, 0, 0, 0) || setgroups(0, NULL) ||
	    setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		return -errno;
	data[0].permitted = (__u32)caps;
	data[0].effective = (__u32)caps;
	data[1].permitted = (__u32)(caps >> 32);
	data[1].effective = (__u32)(caps >> 32);
	if (syscall(SYS_capset, &hdr, data) ||
	    prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
		return -errno;
	return 0;
}

/* The effective capabilities of the calling thread, from /proc. */
static inline int ktau_cap_eff(__u64 *caps)
{
	char *status = ktau_slurp("/proc/thread-self/status", NULL), *p;
	int ret = -EBADMSG;

	if (!status)
		return -errno;
	p = strstr(status, "\nCapEff:\t");
	if (p && sscanf(p + 9, "%llx", (unsigned long long *)caps) == 1)
		ret = 0;
	free(status);
	return ret;
}

/*
 * Run fn in a child that has become uid with caps (see ktau_become());
 * the child's failures are the test's.
 */
static inline void ktau_run_as(struct __test_metadata *_metadata, uid_t uid, __u64 caps,
			       void (*fn)(struct __test_metadata *_metadata))
{
	__u64 eff = ~0ull;
	int status;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		ASSERT_EQ(0, ktau_become(uid, caps)) TH_LOG("become %u: %s", uid, strerror(errno));
		ASSERT_EQ(uid, geteuid());
		ASSERT_EQ(0, ktau_cap_eff(&eff));
		ASSERT_EQ(caps, eff) TH_LOG("CapEff %llx, want %llx", eff, caps);
		fn(_metadata);
		_exit(_metadata->exit_code);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child died of signal %d", WTERMSIG(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
}

/* Shared pages and sampling (ABI 1.1); 0 or -errno. */
static inline int ktau_shared_register(int fd, void *addr, __u32 size, __u32 flags)
{
	struct ktau_shared_reg reg = {
		.addr = (uintptr_t)addr, .size = size, .flags = flags,
	};

	return ioctl(fd, KTAU_IOC_SHARED_REGISTER, &reg) ? -errno : 0;
}

static inline int ktau_shared_unregister(int fd)
{
	return ioctl(fd, KTAU_IOC_SHARED_UNREGISTER) ? -errno : 0;
}

static inline __u32 ktau_shared_seq(const struct ktau_shared *sh)
{
	return __atomic_load_n(&sh->seq, __ATOMIC_ACQUIRE);
}

/* A consistent copy of the page, as a reader on another CPU takes it. */
static inline void ktau_shared_copy(const struct ktau_shared *sh, struct ktau_shared *out)
{
	__u32 seq;

	do {
		do
			seq = ktau_shared_seq(sh);
		while (seq & 1);
		memcpy(out, sh, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while (ktau_shared_seq(sh) != seq);
}

/* The page's entry of @id, or NULL. */
static inline const struct ktau_shared_entry *
ktau_shared_entry(const struct ktau_shared *sh, __u32 id)
{
	__u32 i;

	for (i = 0; i < KTAU_SHARED_ENTRIES; i++)
		if (sh->entries[i].id == id)
			return &sh->entries[i];
	return NULL;
}

/*
 * Wait up to @ms for the next page fault that userfaultfd @uffd holds (a
 * thread of ours touched a page registered with it): 0, or -1 when none
 * came or the message was another event.
 */
static inline int ktau_uffd_wait_fault(int uffd, int ms)
{
	struct pollfd p = { .fd = uffd, .events = POLLIN };
	struct uffd_msg msg;

	if (poll(&p, 1, ms) != 1 || read(uffd, &msg, sizeof(msg)) != sizeof(msg))
		return -1;
	return msg.event == UFFD_EVENT_PAGEFAULT ? 0 : -1;
}

/* The page's clock units in ns. */
static inline __u64 ktau_shared_ns(const struct ktau_shared *sh, __u64 units)
{
	return (__u64)(((__uint128_t)units * sh->clock_mult) >> sh->clock_shift);
}

static inline int ktau_sample_start(int fd, pid_t tid, __u32 event, __u64 period,
				    __u32 cap, __u32 watermark, int signo, __u32 flags)
{
	struct ktau_sample_attr a = {
		.size = sizeof(a), .flags = flags, .tid = tid, .event = event,
		.period = period, .capacity = cap, .watermark = watermark,
		.signo = signo,
	};

	return ioctl(fd, KTAU_IOC_SAMPLE_START, &a) ? -errno : 0;
}

static inline int ktau_sample_read(int fd, pid_t tid, struct ktau_sample *buf,
				   __u32 max, struct ktau_sample_read *r, bool stop)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	r->tid = tid;
	r->buf = (uintptr_t)buf;
	r->max = max;
	return ioctl(fd, stop ? KTAU_IOC_SAMPLE_STOP : KTAU_IOC_SAMPLE_READ, r) ? -errno : 0;
}

/*
 * A dynamic probe ioctl (ABI 1.2) on /proc/ktau/probes, by name or, with
 * an empty name, by ID: the function ID (ADD), 0 (REMOVE) or -errno.
 */
static inline int ktau_probe_ioctl(int fd, unsigned long cmd, const char *name, int id)
{
	struct ktau_probe_req req = { .size = sizeof(req), .id = id };

	if (strlen(name) >= sizeof(req.name))
		return -ENAMETOOLONG;
	memcpy(req.name, name, strlen(name) + 1);
	if (ioctl(fd, cmd, &req))
		return -errno;
	return cmd == KTAU_IOC_PROBE_ADD ? req.id : 0;
}

/*
 * System calls that return at once, with an error or nothing changed,
 * when called with these arguments (-1 is a bad descriptor, NULL a bad
 * pointer, 0 a zero length), and touch no user memory: distinct routines
 * to fill a task's table with. Neither ioctl() (the snapshot) nor the
 * memory management calls a snapshot's buffer could need are among them.
 */
struct ktau_nop_call {
	long nr;
	long a[4];
};

#define KTAU_FD1(name)	{ SYS_##name, { -1, 0, 0, 0 } }
#define KTAU_FD2(name)	{ SYS_##name, { -1, -1, 0, 0 } }
#define KTAU_NOARG(name) { SYS_##name, { 0, 0, 0, 0 } }

static const struct ktau_nop_call ktau_nop_calls[] = {
	KTAU_FD1(read), KTAU_FD1(write), KTAU_FD1(close), KTAU_FD1(fstat),
	KTAU_FD1(lseek), KTAU_FD1(pread64), KTAU_FD1(pwrite64), KTAU_FD1(readv),
	KTAU_FD1(writev), KTAU_FD1(dup), KTAU_FD2(dup2), KTAU_FD1(fcntl),
	KTAU_FD1(flock), KTAU_FD1(fsync), KTAU_FD1(fdatasync), KTAU_FD1(ftruncate),
	KTAU_FD1(getdents), KTAU_FD1(fchdir), KTAU_FD1(fchmod), KTAU_FD1(fchown),
	KTAU_FD1(fstatfs), KTAU_FD1(readahead), KTAU_FD1(fgetxattr),
	KTAU_FD1(fsetxattr), KTAU_FD1(flistxattr), KTAU_FD1(fremovexattr),
	KTAU_FD1(getdents64), KTAU_FD1(fadvise64), KTAU_FD1(epoll_wait),
	KTAU_FD1(epoll_ctl), KTAU_FD1(inotify_add_watch), KTAU_FD1(inotify_rm_watch),
	KTAU_FD1(sync_file_range), KTAU_FD1(syncfs), KTAU_FD1(setns),
	KTAU_FD2(sendfile), KTAU_FD1(connect), KTAU_FD1(accept), KTAU_FD1(sendto),
	KTAU_FD1(recvfrom), KTAU_FD1(sendmsg), KTAU_FD1(recvmsg), KTAU_FD1(shutdown),
	KTAU_FD1(bind), KTAU_FD1(listen), KTAU_FD1(getsockname), KTAU_FD1(getpeername),
	KTAU_FD1(setsockopt), KTAU_FD1(getsockopt), KTAU_FD1(accept4),
	KTAU_FD1(recvmmsg), KTAU_FD1(sendmmsg), KTAU_FD1(fallocate), KTAU_FD1(preadv),
	KTAU_FD1(pwritev), KTAU_FD2(copy_file_range), KTAU_FD2(tee), KTAU_FD2(splice),
	KTAU_FD1(vmsplice), KTAU_FD1(timerfd_gettime), KTAU_FD1(timerfd_settime),
	KTAU_FD1(epoll_pwait), KTAU_FD1(fanotify_mark), KTAU_FD1(preadv2),
	KTAU_FD1(pwritev2), KTAU_FD1(fsconfig), KTAU_FD1(fsmount),
	KTAU_NOARG(getpid), KTAU_NOARG(getuid), KTAU_NOARG(getgid),
	KTAU_NOARG(geteuid), KTAU_NOARG(getegid), KTAU_NOARG(getppid),
	KTAU_NOARG(getpgrp), KTAU_NOARG(gettid), KTAU_NOARG(getpgid),
	KTAU_NOARG(getsid), KTAU_NOARG(times), KTAU_NOARG(getpriority),
	KTAU_NOARG(sched_getscheduler), KTAU_NOARG(sched_get_priority_max),
	KTAU_NOARG(sched_get_priority_min), KTAU_NOARG(getgroups),
	KTAU_NOARG(sigaltstack), KTAU_NOARG(gettimeofday), KTAU_NOARG(clock_getres),
	KTAU_NOARG(getcpu), KTAU_NOARG(getrandom), KTAU_NOARG(mincore),
	KTAU_NOARG(madvise), KTAU_NOARG(msync), KTAU_NOARG(membarrier),
	KTAU_NOARG(poll), KTAU_NOARG(getrusage), KTAU_NOARG(getitimer),
	KTAU_NOARG(getrlimit), KTAU_NOARG(prlimit64), KTAU_NOARG(capget),
	KTAU_NOARG(getresuid), KTAU_NOARG(getresgid), KTAU_NOARG(sysinfo),
	KTAU_NOARG(uname), KTAU_NOARG(get_robust_list),
};

#define KTAU_NR_NOP_CALLS	ARRAY_SIZE(ktau_nop_calls)

/* Each of the first n of ktau_nop_calls once (n 0: all of them). */
static inline void ktau_nop_calls_run(unsigned int n)
{
	unsigned int i;

	if (!n || n > KTAU_NR_NOP_CALLS)
		n = KTAU_NR_NOP_CALLS;
	for (i = 0; i < n; i++) {
		const long *a = ktau_nop_calls[i].a;

		syscall(ktau_nop_calls[i].nr, a[0], a[1], a[2], a[3]);
	}
}

/*
 * The state letter of a task from /proc/<pid>/task/<tid>/stat ('S' while
 * it sleeps, in a blocking call say), '?' when it cannot be read.
 */
static inline char ktau_task_state(pid_t pid, pid_t tid)
{
	char path[64], *t, *p, st = '?';

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	t = ktau_slurp(path, NULL);
	p = t ? strrchr(t, ')') : NULL;
	if (p && p[1])
		st = p[2];
	free(t);
	return st;
}

/* Fail (never skip) on a kernel without KTAU; make sure every group is on. */
static inline void ktau_must_have_ktau(struct __test_metadata *_metadata)
{
	ASSERT_EQ(0, access(KTAU_VERSION_PATH, R_OK))
		TH_LOG("no /proc/ktau: kernel without CONFIG_KTAU?");
	if (geteuid() == 0 && !ktau_all_groups_on()) {
		TH_LOG("some KTAU groups were off; switching all on");
		ASSERT_EQ(0, ktau_control("all on"));
	}
}

static inline int ktau_must_open_profiles(struct __test_metadata *_metadata)
{
	int fd = open(KTAU_PROFILES_PATH, O_RDONLY);

	ASSERT_LE(0, fd) TH_LOG("open %s: %s", KTAU_PROFILES_PATH, strerror(errno));
	return fd;
}

static inline int ktau_must_open_collect(struct __test_metadata *_metadata)
{
	int fd = open(KTAU_COLLECT_PATH, O_RDONLY);

	ASSERT_LE(0, fd) TH_LOG("open %s: %s", KTAU_COLLECT_PATH, strerror(errno));
	return fd;
}

/*
 * Fork a child that joins the collector cfd: 0 in the child, once it has
 * joined (it exits 2 if it cannot); the child's pid in the parent.
 */
static inline pid_t ktau_must_fork_member(struct __test_metadata *_metadata, int cfd)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0 && ioctl(cfd, KTAU_IOC_COLLECT_JOIN))
		_exit(2);
	return pid;
}

/* Snapshot the calling thread; its record. */
static inline const struct ktau_task_rec *
ktau_must_snap_self(struct __test_metadata *_metadata, int fd, struct ktau_snap *s)
{
	const struct ktau_task_rec *r;

	ASSERT_EQ(0, ktau_snap(fd, s, KTAU_SNAP_SELF, NULL, 0));
	ASSERT_EQ(1, s->req.ntasks);
	r = ktau_snap_find(s, gettid());
	ASSERT_NE(NULL, r) TH_LOG("KTAU_SNAP_SELF did not return tid %d", gettid());
	return r;
}

/* Snapshot the system-wide totals; the aggregate record. */
static inline const struct ktau_task_rec *
ktau_must_snap_aggregate(struct __test_metadata *_metadata, int fd, struct ktau_snap *s)
{
	const struct ktau_task_rec *r;

	ASSERT_EQ(0, ktau_snap(fd, s, KTAU_SNAP_AGGREGATE, NULL, 0));
	ASSERT_EQ(1, s->req.ntasks);
	r = ktau_snap_aggregate(s);
	ASSERT_NE(NULL, r) TH_LOG("KTAU_SNAP_AGGREGATE returned no KTAU_REC_AGGREGATE record");
	return r;
}

/*
 * The test modules (samples/ktau), in $KTAU_MODULES (default
 * /ktau/modules): load with parameters, unload; 0 or -errno.
 */
static inline const char *ktau_mod_dir(void)
{
	const char *d = getenv("KTAU_MODULES");

	return d && *d ? d : "/ktau/modules";
}

static inline int ktau_mod_load(const char *name, const char *params)
{
	char path[512];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s.ko", ktau_mod_dir(), name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (syscall(SYS_finit_module, fd, params, 0))
		ret = -errno;
	close(fd);
	return ret;
}

static inline int ktau_mod_unload(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

/* Exactly @calls of @id in @r, and no overflow or unmatched frame; logged. */
static inline bool ktau_recycle_ok(struct __test_metadata *_metadata, int round,
				   const struct ktau_task_rec *r, __u32 id, __u64 calls)
{
	struct ktau_val v = r ? ktau_rec_val(r, id) : (struct ktau_val){ 0 };

	if (r && v.count == calls && !r->stack_overflows && !r->table_overflows &&
	    !r->unmatched)
		return true;
	TH_LOG("round %d: ID %u: %llu calls, not %llu; overflows %llu %llu, unmatched %llu",
	       round, id, (unsigned long long)v.count, (unsigned long long)calls,
	       (unsigned long long)(r ? r->stack_overflows : 0),
	       (unsigned long long)(r ? r->table_overflows : 0),
	       (unsigned long long)(r ? r->unmatched : 0));
	return false;
}

/*
 * Tables of exited tasks are reused, cleaned when freed: @rounds times, a
 * child runs @busy and exits, then another runs @fresh, which makes
 * exactly @calls calls of @id, and waits while the parent reads its
 * profile through @pfd. The rounds in which it had not exactly those
 * calls, or had an overflow or unmatched frame: logged, and counted.
 * @around, if any, runs in the parent with 1 before the busy child is
 * forked and with 0 once it is reaped.
 */
static inline int ktau_recycle_rounds(struct __test_metadata *_metadata, int pfd,
				      int rounds, void (*busy)(void),
				      void (*fresh)(void), __u32 id, __u64 calls,
				      void (*around)(int before))
{
	int round, bad = 0, status, go[2], done[2];
	struct ktau_snap a = { 0 };
	pid_t pid;
	char c;

	for (round = 0; round < rounds; round++) {
		if (around)
			around(1);
		pid = fork();
		if (pid == 0) {
			busy();
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status)
			return -1;
		if (around)
			around(0);
		/* Its table is freed after a grace period. */
		ktau_sleep_ns(5 * KTAU_NSEC_PER_MSEC);
		if (pipe(go) || pipe(done))
			return -1;
		pid = fork();
		if (pid == 0) {
			fresh();
			if (write(done[1], "x", 1) != 1 || read(go[0], &c, 1) != 1)
				_exit(2);
			_exit(0);
		}
		if (pid < 0 || read(done[0], &c, 1) != 1 ||
		    ktau_snap(pfd, &a, KTAU_SNAP_PIDS, &pid, 1))
			return -1;
		bad += !ktau_recycle_ok(_metadata, round, ktau_snap_find(&a, pid), id, calls);
		if (write(go[1], "x", 1) != 1 || waitpid(pid, &status, 0) != pid || status)
			return -1;
		close(go[0]);
		close(go[1]);
		close(done[0]);
		close(done[1]);
	}
	ktau_snap_free(&a);
	return bad;
}

#endif /* KTAU_UTIL_H */
