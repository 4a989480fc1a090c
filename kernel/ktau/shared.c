// SPDX-License-Identifier: GPL-2.0-only
/*
 * KTAU shared pages: a thread's kernel counters in a page of its memory.
 *
 * A thread registers a page of its own address space; the page is pinned
 * and, until the registration ends, every kernel routine that ends in the
 * thread is added to it. The thread then reads its kernel time with plain
 * loads, as often as it likes, without a system call: that is what lets a
 * user-level profiler charge kernel time to the user routine that caused
 * it at every timer start and stop.
 *
 * Only the thread writes its page: in its own context or in an interrupt
 * that arrived while it ran, on its CPU. The thread also registers and
 * releases the page itself (ioctl, exec, exit), so a release that clears
 * the pointer cannot race with a writer. A sequence count, odd during an
 * update, lets other readers (another thread of the process, a debugger)
 * take a consistent copy.
 *
 * The pin is long-term memory the user holds in place, so it is charged
 * as locked memory of the address space, as vfio and io_uring charge
 * theirs: against RLIMIT_MEMLOCK (unless CAP_IPC_LOCK), the whole folio
 * when the page is part of a large one.
 */

#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>
#include "internal.h"

static_assert(sizeof(struct ktau_shared) <= PAGE_SIZE);
static_assert(KTAU_SHARED_GROUPS >= KTAU_NR_GROUPS);

/* KTAU_IOC_SHARED_REGISTER: the calling thread registers a page. */
long ktau_shared_register(const struct ktau_shared_reg __user *ureg)
{
	struct ktau_task *kt = ktau_profile(current);
	struct ktau_shared_reg reg;
	struct ktau_shared *sh;
	struct ktau_conv cv;
	unsigned long npages;
	struct page *page;
	int ret;

	if (copy_from_user(&reg, ureg, sizeof(reg)))
		return -EFAULT;
	if (reg.flags || reg.size != sizeof(*sh) ||
	    !PAGE_ALIGNED(reg.addr) || !reg.addr)
		return -EINVAL;
	if (!kt || !current->mm || (current->flags & PF_KTHREAD))
		return -EINVAL;
	if (kt->shared_page)
		return -EBUSY;
	if (!access_ok(u64_to_user_ptr(reg.addr), sizeof(*sh)))
		return -EFAULT;

	/* Writable memory of the caller, kept in place while pinned. */
	ret = pin_user_pages_fast(reg.addr, 1, FOLL_WRITE | FOLL_LONGTERM,
				  &page);
	if (ret != 1)
		return ret < 0 ? ret : -EFAULT;
	npages = folio_nr_pages(page_folio(page));
	ret = account_locked_vm(current->mm, npages, true);
	if (ret) {
		unpin_user_page(page);
		return ret;
	}

	sh = page_address(page);
	memset(sh, 0, sizeof(*sh));
	ktau_conv_get(&cv);
	sh->size = sizeof(*sh);
	sh->abi = KTAU_ABI_VERSION_MAJOR << 16 | KTAU_ABI_VERSION_MINOR;
	sh->nentries = KTAU_SHARED_ENTRIES;
	sh->clock_mult = cv.mult;
	sh->clock_shift = cv.shift;
	sh->tid = task_pid_vnr(current);

	if ((ktau_irq_detail_restricted() && !ktau_perfmon_quiet()) ||
	    ktau_irq_detail_lsm_denied())
		set_bit(KTAU_SHARED_COARSE, &kt->flags);
	else
		clear_bit(KTAU_SHARED_COARSE, &kt->flags);
	static_branch_deferred_inc(&ktau_extra_key);
	mmgrab(current->mm);
	kt->shared_mm = current->mm;
	kt->shared_npages = npages;
	kt->shared_page = page;
	/* The page's header before the pointer, the pointer before the flag. */
	barrier();
	WRITE_ONCE(kt->shared, sh);
	barrier();
	WRITE_ONCE(kt->x_shared, 1);
	return 0;
}

/*
 * End the registration of @kt, which must be current's: from exec, exit
 * and KTAU_IOC_SHARED_UNREGISTER. Writers are current itself and its
 * interrupts, so once the pointer is clear nothing writes the page. The
 * charge goes back to the address space the page was registered in,
 * which exec and exit may already have left.
 */
void ktau_shared_release(struct ktau_task *kt)
{
	struct page *page = kt->shared_page;
	struct mm_struct *mm = kt->shared_mm;

	if (!page)
		return;
	WRITE_ONCE(kt->x_shared, 0);
	barrier();	/* the flag, then the pointer, before the page goes */
	WRITE_ONCE(kt->shared, NULL);
	barrier();
	kt->shared_page = NULL;
	kt->shared_mm = NULL;
	/* The kernel wrote the page: mark it dirty as it is let go. */
	unpin_user_pages_dirty_lock(&page, 1, true);
	/* An address space that is gone takes its count with it. */
	if (mmget_not_zero(mm)) {
		account_locked_vm(mm, kt->shared_npages, false);
		mmput(mm);
	}
	mmdrop(mm);
	static_branch_slow_dec_deferred(&ktau_extra_key);
}

long ktau_shared_unregister(void)
{
	struct ktau_task *kt = ktau_profile(current);

	if (!kt || !kt->shared_page)
		return -ENOENT;
	ktau_shared_release(kt);
	return 0;
}

/*
 * begin_new_exec(): the old address space's registrations end, and so
 * does sampling of the thread.
 */
void ktau_exec(void)
{
	struct ktau_task *kt = ktau_profile(current);

	if (!kt)
		return;
	ktau_shared_release(kt);
	ktau_sample_release(current);
}

/*
 * begin_new_exec(), once the new credentials are committed, of a program
 * that is not dumpable (where perf ends the task's events): it leaves an
 * unprivileged collector.
 */
void ktau_exec_nondumpable(void)
{
	struct ktau_task *kt = ktau_profile(current);

	if (kt) {
		ktau_collect_exec(kt);
		ktau_trace_exec_nondumpable(kt);
	}
}
