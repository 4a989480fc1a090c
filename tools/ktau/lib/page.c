// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: the calling thread's shared page (ABI 1.1) for other timer
 * libraries: register a page, read a consistent copy of its group totals
 * or of one routine, in nanoseconds, with plain loads (no system call).
 * The protocol is the one <linux/ktau.h> states: seq odd while the kernel
 * writes the page, read again after the copy.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/ktau.h>

#include "libktau.h"
#include "internal.h"

#define PAGE_BYTES	4096
/* A reader in another thread may find the kernel writing; it tries again. */
#define PAGE_TRIES	1000

_Static_assert(sizeof(struct ktau_shared) == PAGE_BYTES, "one 4 KiB page");
_Static_assert(KTAU_PAGE_GROUPS >= KTAU_SHARED_GROUPS, "every group of the page");

struct ktau_page {
	struct ktau_shared *p;
	int fd;			/* /proc/ktau/profiles, for the unregister */
	pid_t pid, tid;		/* the process and thread that registered it */
};

int ktau_page_register(struct ktau_page **out)
{
	struct ktau_shared_reg reg;
	struct ktau_page *pg;
	int err;

	*out = NULL;
	pg = calloc(1, sizeof(*pg));
	if (!pg)
		return -ENOMEM;
	pg->fd = open(KTAU_PATH_PROFILES, O_RDONLY | O_CLOEXEC);
	if (pg->fd < 0) {
		err = errno == ENOENT ? -ENOENT : -errno;
		free(pg);
		return err;
	}
	pg->p = mmap(NULL, PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pg->p == MAP_FAILED) {
		err = -errno;
		goto out_close;
	}
	memset(&reg, 0, sizeof(reg));
	reg.addr = (uintptr_t)pg->p;
	reg.size = sizeof(struct ktau_shared);
	if (ioctl(pg->fd, KTAU_IOC_SHARED_REGISTER, &reg)) {
		err = -errno;
		goto out_unmap;
	}
	if (pg->p->size != sizeof(struct ktau_shared) ||
	    pg->p->abi >> 16 != KTAU_ABI_VERSION_MAJOR ||
	    pg->p->nentries > KTAU_SHARED_ENTRIES || !pg->p->clock_mult) {
		ioctl(pg->fd, KTAU_IOC_SHARED_UNREGISTER);
		err = -EPROTO;
		goto out_unmap;
	}
	pg->pid = getpid();
	pg->tid = gettid();
	*out = pg;
	return 0;
out_unmap:
	munmap(pg->p, PAGE_BYTES);
out_close:
	close(pg->fd);
	free(pg);
	return err;
}

int ktau_page_unregister(struct ktau_page *pg)
{
	int err = 0;

	if (!pg)
		return 0;
	/*
	 * A forked child's copy, or a page whose thread is gone: no
	 * registration is left to end (the kernel ended it at fork, exec or
	 * exit), only the memory.
	 */
	if (getpid() == pg->pid && gettid() != pg->tid &&
	    !(syscall(SYS_tgkill, pg->pid, pg->tid, 0) && errno == ESRCH))
		return -EPERM;
	if (getpid() == pg->pid && gettid() == pg->tid &&
	    ioctl(pg->fd, KTAU_IOC_SHARED_UNREGISTER))
		err = -errno;
	munmap(pg->p, PAGE_BYTES);
	close(pg->fd);
	free(pg);
	return err;
}

uint32_t ktau_page_seq(const struct ktau_page *pg)
{
	return atomic_load_explicit((const _Atomic uint32_t *)&pg->p->seq, memory_order_acquire);
}

uint64_t ktau__conv(uint64_t units, uint32_t mult, uint32_t shift)
{
	return (uint64_t)(((unsigned __int128)units * mult) >> shift);
}

/* The page's shift, bounded as the runtime bounds it. */
static uint32_t page_shift(uint32_t shift)
{
	return shift < 96 ? shift : 95;
}

/*
 * A consistent copy of @len bytes at @off of the page into @dst, and the
 * seq it belongs to; -EAGAIN when the kernel kept writing it.
 */
static int page_copy(const struct ktau_page *pg, void *dst, size_t off, size_t len, uint32_t *seq)
{
	const _Atomic uint32_t *sp = (const _Atomic uint32_t *)&pg->p->seq;
	uint32_t s1, s2;
	int i;

	for (i = 0; i < PAGE_TRIES; i++) {
		s1 = atomic_load_explicit(sp, memory_order_acquire);
		if (s1 & 1)
			continue;
		memcpy(dst, (const char *)pg->p + off, len);
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(sp, memory_order_relaxed);
		if (s1 == s2) {
			*seq = s1;
			return 0;
		}
	}
	return -EAGAIN;
}

/* On the stack, no allocation: these may be called in a signal handler. */
int ktau_page_read(const struct ktau_page *pg, struct ktau_page_totals *t)
{
	struct ktau_shared c;
	uint64_t off = 0, guest = 0, all = 0;
	uint32_t seq, i, mult, shift;
	int err;

	memset(t, 0, sizeof(*t));
	err = page_copy(pg, &c, 0, sizeof(c), &seq);
	if (err)
		return err;
	mult = c.clock_mult;
	shift = page_shift(c.clock_shift);
	t->seq = seq;
	t->updates = c.updates;
	t->unlisted = c.unlisted;
	for (i = 0; i < KTAU_SHARED_GROUPS; i++) {
		t->groups[i].count = c.groups[i].count;
		t->groups[i].incl_ns = ktau__conv(c.groups[i].incl, mult, shift);
		t->groups[i].excl_ns = ktau__conv(c.groups[i].excl, mult, shift);
		all += c.groups[i].excl;
	}
	for (i = 0; i < c.nentries && i < KTAU_SHARED_ENTRIES; i++) {
		if (KTAU_ID_IS_OFF_CPU(c.entries[i].id))
			off += c.entries[i].excl;
		else if (KTAU_ID_IS_GUEST(c.entries[i].id))
			guest += c.entries[i].excl;
	}
	t->offcpu_ns = ktau__conv(off, mult, shift);
	t->guest_ns = ktau__conv(guest, mult, shift);
	t->oncpu_ns = ktau__conv(all - off - guest, mult, shift);
	return 0;
}

int ktau_page_routine(const struct ktau_page *pg, uint32_t id, struct ktau_page_routine *r)
{
	struct ktau_shared_entry e[KTAU_SHARED_ENTRIES];
	uint32_t seq, n, i, mult = pg->p->clock_mult, shift = page_shift(pg->p->clock_shift);
	int err;

	memset(r, 0, sizeof(*r));
	r->id = id;
	if (id == KTAU_ID_NONE)
		return -EINVAL;
	err = page_copy(pg, e, offsetof(struct ktau_shared, entries), sizeof(e), &seq);
	if (err)
		return err;
	r->seq = seq;
	n = pg->p->nentries < KTAU_SHARED_ENTRIES ? pg->p->nentries : KTAU_SHARED_ENTRIES;
	for (i = 0; i < n; i++) {
		if (e[i].id != id)
			continue;
		r->group = e[i].group;
		r->count = e[i].count;
		r->incl_ns = ktau__conv(e[i].incl, mult, shift);
		r->excl_ns = ktau__conv(e[i].excl, mult, shift);
		return 0;
	}
	return -ENOENT;
}
