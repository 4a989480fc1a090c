// SPDX-License-Identifier: GPL-2.0
/*
 * The command's profile holds what the command did, and nothing of what
 * ktaud's child did before its exec (signal resets, closes, the collector
 * ioctl, ptrace's stop, a failed execve per PATH entry).
 *
 * The child's table is not reset (a reset is a privileged, system-wide
 * control); its values just before the exec are subtracted instead:
 *
 *  - The parent finds the program in PATH as execvp(3) would, so the child
 *    makes one execve, the command's own.
 *  - Right before it, the child takes two KTAU_SNAP_SELF snapshots into a
 *    shared anonymous mapping (no allocation, nothing but the two ioctls;
 *    the snapshot file is close-on-exec; the buffers are touched first so
 *    that the ioctls take no page fault). The first snapshot's ioctl is in
 *    the second; the second's own ioctl, after it, is the difference of the
 *    two in ioctl's row, and is subtracted as well. So every count is
 *    exact; the second ioctl's times are estimated by the first's, and a
 *    routine left with no call is left out with whatever time the
 *    estimate left. An interrupt inside the second ioctl stays (it is not
 *    told apart from the command's).
 *  - After the run, the baseline leaves the final record of the process's
 *    first thread (tid = the child's pid), whose table went on across the
 *    exec. Other threads and processes start after the exec.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/ktau.h>

#include "ktaud.h"

#define EXEC_BASE_HALF	(64 << 10)

struct exec_base_mem {
	struct ktau_snapshot req[2];
	int32_t done;			/* both ioctls succeeded */
	int32_t err;			/* or the errno of the one that failed */
	char buf[2][EXEC_BASE_HALF];
};

int exec_base_init(struct exec_base *b)
{
	memset(b, 0, sizeof(*b));
	b->fd = open("/proc/ktau/profiles", O_RDONLY | O_CLOEXEC);
	if (b->fd < 0)
		return -errno;
	b->mem = mmap(NULL, sizeof(struct exec_base_mem), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (b->mem == MAP_FAILED) {
		int ret = -errno;

		b->mem = NULL;
		close(b->fd);
		b->fd = -1;
		return ret;
	}
	return 0;
}

void exec_base_free(struct exec_base *b)
{
	if (b->mem)
		munmap(b->mem, sizeof(struct exec_base_mem));
	if (b->fd >= 0)
		close(b->fd);
	b->mem = NULL;
	b->fd = -1;
}

/* In the child, the last thing before execve: async-signal-safe. */
void exec_base_take(struct exec_base *b)
{
	struct exec_base_mem *m = b->mem;
	int i;

	if (!m)
		return;
	/* Its pages faulted in now, not inside the snapshots' ioctls. */
	memset(m->buf, 0, sizeof(m->buf));
	for (i = 0; i < 2; i++) {
		struct ktau_snapshot *r = &m->req[i];

		memset(r, 0, sizeof(*r));
		r->size = sizeof(*r);
		r->flags = KTAU_SNAP_SELF;
		r->buf = (uintptr_t)m->buf[i];
		r->buf_size = EXEC_BASE_HALF;
		if (ioctl(b->fd, KTAU_IOC_SNAPSHOT, r)) {
			m->err = errno;
			return;
		}
	}
	m->done = 1;
}

static const struct ktau_task *one_task(const struct ktau_snap *s)
{
	return s && s->ntasks == 1 ? &s->tasks[0] : NULL;
}

static uint64_t sub_sat(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/*
 * In the parent, after the run: take the baseline out of the record of
 * @pid in @snap. 0 (also when there is no such record: the command left
 * none), or -errno when the baseline is missing or unreadable.
 */
int exec_base_apply(struct exec_base *b, struct ktau_snap *snap, pid_t pid)
{
	struct exec_base_mem *m = b->mem;
	struct ktau_snap *s1 = NULL, *s2 = NULL;
	const struct ktau_task *t1, *t2;
	struct ktau_task *t = NULL;
	size_t i, k;
	int ret = 0;

	if (!m)
		return -EINVAL;
	if (!m->done)
		return -(m->err ? m->err : ENODATA);
	for (i = 0; snap && i < snap->ntasks; i++)
		if (snap->tasks[i].tid == pid && snap->tasks[i].pid == pid &&
		    !(snap->tasks[i].flags & KTAU_TASK_PROCESS))
			t = &snap->tasks[i];
	if (!t)
		return 0;
	if (m->req[0].used > EXEC_BASE_HALF || m->req[1].used > EXEC_BASE_HALF ||
	    ktau_decode(m->buf[0], m->req[0].used, &s1) < 0 ||
	    ktau_decode(m->buf[1], m->req[1].used, &s2) < 0) {
		ret = -EBADMSG;
		goto out;
	}
	t1 = one_task(s1);
	t2 = one_task(s2);
	if (!t1 || !t2 || t1->tid != pid || t2->tid != pid) {
		ret = -EBADMSG;
		goto out;
	}
	/*
	 * Per routine: base = s2, and for ioctl also the call of s2 itself
	 * (s2 - s1: one call, its times estimated by the first's). A routine
	 * left with no call has no time either: what remains is the error of
	 * that estimate.
	 */
	for (i = 0, k = 0; i < t->nentries; i++) {
		struct ktau_func_stat *e = &t->entries[i];
		const struct ktau_func_stat *a = ktau_task_find(t1, e->id);
		const struct ktau_func_stat *c = ktau_task_find(t2, e->id);
		uint64_t cnt = 0, incl = 0, excl = 0;

		if (c) {
			cnt = c->count;
			incl = c->incl_ns;
			excl = c->excl_ns;
		}
		if (c && e->id == KTAU_ID_SYSCALL_BASE + SYS_ioctl) {
			cnt += sub_sat(c->count, a ? a->count : 0);
			incl += sub_sat(c->incl_ns, a ? a->incl_ns : 0);
			excl += sub_sat(c->excl_ns, a ? a->excl_ns : 0);
		}
		e->count = sub_sat(e->count, cnt);
		e->incl_ns = sub_sat(e->incl_ns, incl);
		e->excl_ns = sub_sat(e->excl_ns, excl);
		if (!e->count)
			e->incl_ns = e->excl_ns = 0;
		if (e->excl_ns > e->incl_ns)
			e->excl_ns = e->incl_ns;
		if (e->count || e->samples)
			t->entries[k++] = *e;
	}
	t->nentries = k;
out:
	ktau_snap_free(s1);
	ktau_snap_free(s2);
	return ret;
}

/*
 * The program execvp(3) would run for @name: @name itself when it has a
 * '/', else the first regular, executable file of that name in PATH (the
 * default path of glibc when PATH is unset). 0, or -ENOENT / -EACCES as
 * execvp would fail.
 */
int resolve_command(const char *name, char *path, size_t size)
{
	const char *p = getenv("PATH"), *end;
	int saw_eacces = 0;
	struct stat st;

	if (!*name)
		return -ENOENT;
	if (strchr(name, '/')) {
		if (strlen(name) >= size)
			return -ENAMETOOLONG;
		strcpy(path, name);
		return 0;
	}
	if (!p)
		p = "/bin:/usr/bin";
	for (;; p = end + 1) {
		size_t dl;

		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		dl = end - p;
		/* An empty entry is the current directory. */
		if (dl + 1 + strlen(name) + 1 <= size) {
			if (dl) {
				memcpy(path, p, dl);
				path[dl] = '/';
				strcpy(path + dl + 1, name);
			} else {
				strcpy(path, name);
			}
			if (!stat(path, &st) && S_ISREG(st.st_mode)) {
				if (!access(path, X_OK))
					return 0;
				saw_eacces = 1;
			}
		}
		if (!*end)
			break;
	}
	return saw_eacces ? -EACCES : -ENOENT;
}
