// SPDX-License-Identifier: GPL-2.0-only
/*
 * KTAU trace mode: /proc/ktau/trace (ABI 1.5; system-wide sessions 1.6).
 *
 * Each open file is a session. A thread attached to it gets a buffer of
 * its own, a ring of struct ktau_trec, and from then on every routine of
 * the session's groups that the thread completes appends one record with
 * its start and end: written where the profile charges the call
 * (ktau_pop_extra(), under ktau_extra_key), so that the trace's calls
 * are the profile's calls, with one record per call instead of two.
 *
 * Per task, not per CPU: a record needs no thread ID, a thread's records
 * come out in order without a merge, and the only writer is the thread
 * itself, always with interrupts off (every hook that charges a call
 * runs so), so the ring is single-producer without atomics: the writer
 * stores the record, then publishes head with a release; the reader on
 * another CPU takes head with an acquire, copies, and gives the slots
 * back by publishing tail with a release, which the writer reads with an
 * acquire before it reuses them. Interrupts landing on the thread are
 * the thread's records, as they are its profile's. Samples taken in NMI
 * context write no record: they have their own buffer.
 *
 * Lifetime: a buffer is referenced by the session (until it is read to
 * its end after the thread stopped writing to it, by its exit or by an
 * exec of a program that is not dumpable, or the session is closed) and
 * by the thread (until it exits, or execs such a program). The
 * thread's pointer only goes from NULL to a buffer under its alloc_lock,
 * set by an attach, and back to NULL by the thread itself. The ring is
 * freed when the session closes: its pointer is cleared first and, as
 * writers run with interrupts off, a grace period later no writer uses it.
 *
 * Bounds: KTAU_TRACE_MAX_CAPACITY records a buffer, KTAU_TRACE_MAX_TASKS
 * buffers and KTAU_TRACE_MAX_BYTES of rings a session, charged to the
 * opener's memory cgroup; attaches beyond are refused (EBUSY for an
 * explicit attach, counted in refused for an inherited one). A full ring
 * loses new records, counted, and reports them with one KTAU_TRACE_LOST
 * record when there is room again.
 *
 * System-wide (KTAU_TRACE_ALL, CAP_PERFMON): the session is published in
 * ktau_trace_all, so that every user task created from then on is attached
 * at its fork (whether its parent is traced or not), and then every user
 * thread of the opener's pid namespace that exists is attached, except
 * the caller's own threads; attaches beyond the bounds are refused and
 * counted. One such session at a time; its close unpublishes it before
 * the buffers go, a grace period before the fork path could see it freed.
 *
 * Locks: s->lock guards the buffer list, the session's counts and the
 * names of a buffer's thread; forks of traced threads take it (and every
 * fork while a system-wide session runs). A reader takes s->read_lock,
 * which makes it the only one to move its buffers' tails, and holds
 * s->lock only between its copies to user space, never across one: a
 * reader whose buffer faults (swapped out, or held by userfaultfd) holds
 * up no fork.
 *
 * Reuse: the ring of a buffer that went (its thread stopped writing to
 * it and it was read to its end) is kept for the session's next buffer of the same size, up
 * to KTAU_TRACE_POOL rings and KTAU_TRACE_POOL_BYTES (on top of the
 * KTAU_TRACE_MAX_BYTES of live rings, charged likewise), so that a
 * traced job that forks (a shell pipeline, make) does not allocate and
 * clear a ring at every fork. No writer uses such a ring any more; the reader
 * reads a buffer's ring only where its own thread wrote. Kept rings are
 * freed when the session closes.
 */

#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/proc_fs.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/uaccess.h>
#include <linux/capability.h>
#include <linux/pid_namespace.h>
#include <linux/ptrace.h>
#include <linux/refcount.h>
#include <linux/sched/task.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/memcontrol.h>
#include <linux/timekeeping.h>
#include "internal.h"

#define KTAU_TRACE_POOL		16		/* rings kept for reuse */
#define KTAU_TRACE_POOL_BYTES	(32U << 20)	/* and their bytes */

struct ktau_tring {
	struct ktau_trec *ring;
	u32 cap;
};

struct ktau_tsession {
	refcount_t ref;			/* the file's and each buffer's */
	struct mutex lock;		/* the buffer list, attach, names */
	struct mutex read_lock;		/* one reader: tails, reported, and */
					/* taking buffers off the list */
	struct list_head bufs;
	bool closed;
	bool privileged;		/* the opener had CAP_PERFMON */
	bool lsm_denied;		/* opener's LSM: no kernel detail */
	bool all;			/* published in ktau_trace_all */
	bool key;			/* holds ktau_extra_key (under lock) */
	u32 all_cap;			/* its buffers' capacity and groups */
	u64 all_groups;
	struct pid_namespace *ns;	/* the opener's /proc */
	struct pid *opener;		/* KTAU_TRACE_ALL's caller's process */
	struct mem_cgroup *memcg;	/* the opener's, charged */
	u64 clock0, ns0;		/* the clock and CLOCK_MONOTONIC at open */
	u32 id;				/* the boot's count of sessions at open */
	unsigned int nbufs;		/* with buffers being made */
	u64 bytes;
	/* Under lock; with the buffers' own counts, those of the gone. */
	u64 tasks, refused, denied, records, lost;
	/* Rings no buffer uses, for reuse; a buffer may go in any context. */
	spinlock_t pool_lock;
	unsigned int pool_n;
	size_t pool_bytes;
	struct ktau_tring pool[KTAU_TRACE_POOL];
};

static atomic_t ktau_tsession_ids = ATOMIC_INIT(0);

/*
 * Whether a refusal of @kt's thread is still to be counted in @s's
 * refused (and now it is): once a thread, although a system-wide
 * session's walk and the attach at the thread's fork may both refuse a
 * thread forked while the session starts. A thread without a profile of
 * its own is counted each time.
 */
static bool ktau_trace_refuse_once(struct ktau_tsession *s, struct ktau_task *kt)
{
	return !kt || xchg(&kt->trace_refused, s->id) != s->id;
}

/* The system-wide session, if any (KTAU_TRACE_ALL); set under its lock. */
static struct ktau_tsession __rcu *ktau_trace_all;
static DEFINE_MUTEX(ktau_trace_all_lock);

/*
 * The hooks write records only behind ktau_extra_key: a session holds one
 * reference from its first buffer to its close, not one per buffer, so
 * that threads that keep an empty buffer of a closed session (until they
 * exit) keep nothing on. s->lock held.
 */
static void ktau_tsession_key(struct ktau_tsession *s)
{
	lockdep_assert_held(&s->lock);
	if (!s->key) {
		static_branch_deferred_inc(&ktau_extra_key);
		s->key = true;
	}
}

/* The kept rings go: at close (none is kept after it) and at the end. */
static void ktau_tring_free_kept(struct ktau_tsession *s)
{
	struct ktau_tring kept[KTAU_TRACE_POOL];
	unsigned long flags;
	unsigned int n;

	spin_lock_irqsave(&s->pool_lock, flags);
	n = s->pool_n;
	memcpy(kept, s->pool, n * sizeof(kept[0]));
	s->pool_n = 0;
	s->pool_bytes = 0;
	spin_unlock_irqrestore(&s->pool_lock, flags);
	while (n)
		vfree(kept[--n].ring);
}

static void ktau_tsession_put(struct ktau_tsession *s)
{
	if (!refcount_dec_and_test(&s->ref))
		return;
	ktau_tring_free_kept(s);
	mem_cgroup_put(s->memcg);
	put_pid_ns(s->ns);
	put_pid(s->opener);
	kfree(s);
}

/* A ring of @cap records that no writer uses: kept for reuse, or freed. */
static void ktau_tring_keep(struct ktau_tsession *s, struct ktau_trec *ring,
			    u32 cap)
{
	size_t bytes = (size_t)cap * sizeof(*ring);
	unsigned long flags;

	if (!ring)
		return;
	spin_lock_irqsave(&s->pool_lock, flags);
	if (!READ_ONCE(s->closed) && s->pool_n < KTAU_TRACE_POOL &&
	    s->pool_bytes + bytes <= KTAU_TRACE_POOL_BYTES) {
		s->pool[s->pool_n].ring = ring;
		s->pool[s->pool_n].cap = cap;
		s->pool_n++;
		s->pool_bytes += bytes;
		ring = NULL;
	}
	spin_unlock_irqrestore(&s->pool_lock, flags);
	vfree(ring);
}

/* A kept ring of @cap records, or NULL. */
static struct ktau_trec *ktau_tring_take(struct ktau_tsession *s, u32 cap)
{
	struct ktau_trec *ring = NULL;
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&s->pool_lock, flags);
	for (i = 0; i < s->pool_n; i++) {
		if (s->pool[i].cap != cap)
			continue;
		ring = s->pool[i].ring;
		s->pool[i] = s->pool[--s->pool_n];
		s->pool_bytes -= (size_t)cap * sizeof(*ring);
		break;
	}
	spin_unlock_irqrestore(&s->pool_lock, flags);
	return ring;
}

static void ktau_tbuf_put(struct ktau_tbuf *b)
{
	if (!refcount_dec_and_test(&b->ref))
		return;
	/* No writer: the thread let go of it, and the session too. */
	ktau_tring_keep(b->s, b->ring, b->mask + 1);
	ktau_tsession_put(b->s);
	kfree(b);
}

/*
 * A buffer of @cap records for @t in @s, charged to the opener's memory
 * cgroup, within the session's bounds; not yet on the list. Its bytes are
 * reserved under s->lock and the ring allocated outside it, as forks wait
 * on that lock: s->lock not held. NULL with *@err -EBUSY beyond the
 * bounds, -ENOMEM, or -ESRCH once the session closed (only on the fork
 * paths: an attach is an ioctl of the open file, never concurrent with
 * its release).
 */
static struct ktau_tbuf *ktau_tbuf_new(struct ktau_tsession *s,
				       struct task_struct *t, u32 cap,
				       u32 flags, u64 groups, int *err)
{
	size_t bytes = (size_t)cap * sizeof(struct ktau_trec);
	struct mem_cgroup *old;
	struct ktau_tbuf *b;

	lockdep_assert_not_held(&s->lock);
	*err = 0;
	mutex_lock(&s->lock);
	if (s->closed)
		*err = -ESRCH;
	else if (s->nbufs >= KTAU_TRACE_MAX_TASKS ||
		 s->bytes + bytes > KTAU_TRACE_MAX_BYTES)
		*err = -EBUSY;
	if (!*err) {
		s->nbufs++;
		s->bytes += bytes;
	}
	mutex_unlock(&s->lock);
	if (*err)
		return NULL;

	old = set_active_memcg(s->memcg);
	b = kzalloc(sizeof(*b), GFP_KERNEL_ACCOUNT);
	if (b) {
		b->ring = ktau_tring_take(s, cap);
		if (!b->ring)
			b->ring = __vmalloc(bytes, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	}
	set_active_memcg(old);
	if (!b || !b->ring) {
		kfree(b);
		mutex_lock(&s->lock);
		s->nbufs--;
		s->bytes -= bytes;
		mutex_unlock(&s->lock);
		*err = -ENOMEM;
		return NULL;
	}
	refcount_set(&b->ref, 1);
	b->s = s;
	refcount_inc(&s->ref);
	b->task = t;
	b->mask = cap - 1;
	b->flags = flags;
	b->groups = groups;
	return b;
}

/* A new buffer that was not published goes; s->lock held. */
static void ktau_tbuf_unnew(struct ktau_tsession *s, struct ktau_tbuf *b)
{
	lockdep_assert_held(&s->lock);
	s->nbufs--;
	s->bytes -= (size_t)(b->mask + 1) * sizeof(struct ktau_trec);
	ktau_tbuf_put(b);
}

/* A new buffer goes on the list: one more thread attached. s->lock held. */
static void ktau_tbuf_add(struct ktau_tsession *s, struct ktau_tbuf *b)
{
	lockdep_assert_held(&s->lock);
	list_add_tail(&b->node, &s->bufs);
	s->tasks++;
}

/*
 * Publish @b as @kt's (task @t) buffer: -EEXIST when the thread has a live
 * one of the same session or exits, -EBUSY when it has one of another
 * session. A buffer whose session closed (no ring) or is closing is
 * replaced; it goes, a grace period later, in *@old.
 */
static int ktau_tbuf_publish(struct task_struct *t, struct ktau_task *kt,
			     struct ktau_tbuf *b, struct ktau_tbuf **old)
{
	struct ktau_tbuf *cur;
	int err = 0;

	*old = NULL;
	task_lock(t);
	cur = kt->trace;
	if (t->flags & PF_EXITING)
		err = -EEXIST;
	else if (cur && READ_ONCE(cur->ring) && !READ_ONCE(cur->s->closed))
		err = cur->s == b->s ? -EEXIST : -EBUSY;
	if (!err) {
		refcount_inc(&b->ref);		/* the thread's */
		smp_store_release(&kt->trace, b);
		/*
		 * After the pointer: a pop that sees the flag and a NULL
		 * buffer tests for NULL (ktau_pop_extra()).
		 */
		WRITE_ONCE(kt->x_trace, 1);
		*old = cur;
	}
	task_unlock(t);
	return err;
}

/*
 * The thread's own pointer goes; called by the thread itself, so no
 * interrupt of it is in the middle of a record: no grace period.
 */
static void ktau_trace_drop(struct task_struct *t, struct ktau_task *kt)
{
	struct ktau_tbuf *b;

	task_lock(t);
	b = kt->trace;
	WRITE_ONCE(kt->x_trace, 0);
	WRITE_ONCE(kt->trace, NULL);
	task_unlock(t);
	if (!b)
		return;
	/* After its last record: pairs with the reader's acquire. */
	smp_store_release(&b->stopped, true);
	ktau_tbuf_put(b);
}

/*
 * A new user task @tsk (profile @kt), on the task list and not yet run
 * (copy_process() past its last failure, a context that may sleep): the
 * system-wide session's buffer, unless it has one (inherited at its fork,
 * or given by the session's walk, which may have found it on the list
 * already). Not at ktau_tsk_init(): a fork that began before the session
 * was published and joined the list after the walk passed would be traced
 * by neither. After the publish the session takes and drops
 * tasklist_lock, which this fork held to join the list: either that came
 * after, and the walk sees the task, or before, and the publish is seen
 * here. The children of a system-wide session's threads come here, not
 * through inheritance at ktau_tsk_init(), so that each is tried (and a
 * refusal counted) once; the session's opener's own threads are left out,
 * as the walk leaves them.
 */
void ktau_trace_post_fork(struct task_struct *tsk, struct ktau_task *kt)
{
	struct ktau_tbuf *b, *old;
	struct ktau_tsession *s;
	int err;

	if (!rcu_access_pointer(ktau_trace_all))
		return;
	rcu_read_lock();
	s = rcu_dereference(ktau_trace_all);
	if (s && !refcount_inc_not_zero(&s->ref))
		s = NULL;
	rcu_read_unlock();
	if (!s)
		return;
	/* Traced already (inherited from another session): counted, once. */
	task_lock(tsk);
	b = kt->trace;
	err = 0;
	if (b && READ_ONCE(b->ring) && !READ_ONCE(b->s->closed))
		/* This session's already: its walk came first. */
		err = b->s == s ? -EEXIST : -EBUSY;
	task_unlock(tsk);
	b = NULL;
	/* Only tasks the opener's pid namespace sees, not its own threads. */
	if (err == -EEXIST || (!err && (!task_pid_nr_ns(tsk, s->ns) ||
					task_tgid(tsk) == s->opener)))
		goto out;
	if (!err)
		b = ktau_tbuf_new(s, tsk, s->all_cap, KTAU_TRACE_INHERIT, s->all_groups, &err);
	mutex_lock(&s->lock);
	if (b && s->closed)
		err = -ESRCH;
	else if (b)
		err = ktau_tbuf_publish(tsk, kt, b, &old);
	if (b && !err) {
		ktau_tbuf_add(s, b);
		ktau_tsession_key(s);
		/* Of a closed(-ing) session; the task never ran: no writer. */
		if (old)
			ktau_tbuf_put(old);
	} else {
		/* Not in another session (inherited) either: counted. */
		s->refused += err != -EEXIST && err != -ESRCH &&
			      ktau_trace_refuse_once(s, kt);
		if (b)
			ktau_tbuf_unnew(s, b);
	}
	mutex_unlock(&s->lock);
out:
	ktau_tsession_put(s);
}

/*
 * The writer's slow path (ktau_trace_try() has the fast one): a record
 * that may not fit, or that follows lost ones, and events. Interrupts
 * off, the thread's own context.
 */
void ktau_trace_put_slow(struct ktau_tbuf *b, u64 start, u64 end, u32 id,
			 unsigned int depth, u8 kind)
{
	struct ktau_trec *ring = READ_ONCE(b->ring), *r;
	unsigned long head = b->head, tail;
	unsigned int need;

	/* Stopped: lost_pending may be the reader's now (after the exit). */
	if (!ring || READ_ONCE(b->stopped))
		return;
	need = b->lost_pending ? 2 : 1;
	tail = smp_load_acquire(&b->tail);	/* the reader is done with them */
	if (head - tail + need > (unsigned long)b->mask + 1) {
		if (!b->lost_pending++)
			b->lost_first = end;
		b->lost_last = end;
		WRITE_ONCE(b->lost, b->lost + 1);
		return;
	}
	if (b->lost_pending) {
		r = &ring[head++ & b->mask];
		*r = (struct ktau_trec){
			.start = b->lost_first,
			.end = b->lost_last,
			.id = min_t(u64, b->lost_pending, U32_MAX),
			.kind = KTAU_TRACE_LOST,
		};
		b->lost_pending = 0;
	}
	r = &ring[head++ & b->mask];
	*r = (struct ktau_trec){
		.start = start,
		.end = end,
		.id = id,
		.depth = min_t(unsigned int, depth, U16_MAX),
		.kind = kind,
	};
	smp_store_release(&b->head, head);	/* the record before head */
}

/* An event of @id of @group. */
void ktau_trace_event(struct ktau_task *kt, unsigned int group, u32 id)
{
	struct ktau_tbuf *b = READ_ONCE(kt->trace);
	u64 now;

	if (b && (b->groups & BIT_ULL(group))) {
		now = ktau_clock();
		ktau_trace_put_slow(b, now, now, id, kt->depth, KTAU_TRACE_EVENT);
	}
}

/*
 * Fork (ktau_tsk_init(), the parent's context): a child of a thread
 * traced with KTAU_TRACE_INHERIT is traced from its first instruction,
 * in the same session, with the same size and groups. The system-wide
 * session's come later, in ktau_trace_post_fork().
 */
void ktau_trace_fork(struct ktau_task *parent, struct task_struct *tsk,
		     struct ktau_task *kt)
{
	struct ktau_tsession *s = NULL;
	struct ktau_tbuf *pb, *b;
	u32 cap = 0, flags = 0;
	u64 groups = 0;
	int err;

	if ((tsk->flags & PF_KTHREAD) || !parent || !READ_ONCE(parent->trace))
		return;
	/*
	 * Another task's attach may replace the parent's buffer (of a closed
	 * session) and free it, and its session, while this fork sleeps: take
	 * what is needed under the lock that replacing takes.
	 */
	task_lock(current);
	pb = parent->trace;
	/* A system-wide session's children come in ktau_trace_post_fork(). */
	if (pb && (pb->flags & KTAU_TRACE_INHERIT) && !READ_ONCE(pb->stopped) &&
	    !READ_ONCE(pb->s->all)) {
		s = pb->s;
		refcount_inc(&s->ref);
		cap = pb->mask + 1;
		flags = pb->flags;
		groups = pb->groups;
	}
	task_unlock(current);
	if (!s)
		return;
	b = ktau_tbuf_new(s, tsk, cap, flags, groups, &err);
	mutex_lock(&s->lock);
	if (b && s->closed) {
		ktau_tbuf_unnew(s, b);
	} else if (b) {
		ktau_tbuf_add(s, b);
		ktau_tsession_key(s);
		/* The child runs nothing yet: its pointer is set without a race. */
		refcount_inc(&b->ref);
		kt->trace = b;
		kt->x_trace = 1;
	} else if (err != -ESRCH) {
		s->refused++;
	}
	mutex_unlock(&s->lock);
	ktau_tsession_put(s);
}

/*
 * A task freed with a buffer: only one that never ran (its fork failed,
 * copy_process()'s error path, which may sleep), as every other let go
 * of it at exit; the buffer ends without a thread. Readers use b->task
 * under s->lock (ktau_tbuf_tid()), and the task may be freed right after
 * this without a grace period (delayed_free_task() without CONFIG_MEMCG):
 * the buffer is named under that lock.
 */
void ktau_trace_free(struct ktau_task *kt)
{
	struct ktau_tbuf *b = kt->trace;
	struct ktau_tsession *s;

	if (!b)
		return;
	might_sleep();
	s = b->s;
	kt->x_trace = 0;
	kt->trace = NULL;
	mutex_lock(&s->lock);
	WRITE_ONCE(b->stopped, true);
	smp_store_release(&b->named, true);	/* tid 0: none */
	smp_store_release(&b->exited, true);
	mutex_unlock(&s->lock);
	ktau_tbuf_put(b);
}

/*
 * The thread stops writing: at its exit, where the exit collector copies
 * its table (interrupts off), so that the trace holds exactly the calls
 * of that final profile.
 */
void ktau_trace_stop(struct ktau_task *kt)
{
	struct ktau_tbuf *b = READ_ONCE(kt->trace);

	if (!b)
		return;
	/* After its last record: pairs with the reader's acquire. */
	smp_store_release(&b->stopped, true);
}

/*
 * The thread lets go of @b and may be freed while @b is still read: keep
 * its names in @b for ktau_tbuf_tid().
 */
static void ktau_tbuf_name(struct ktau_tsession *s, struct ktau_tbuf *b,
			   struct task_struct *tsk)
{
	b->tid = task_pid_nr_ns(tsk, s->ns);
	b->pid = task_tgid_nr_ns(tsk, s->ns);
	get_task_comm(b->comm, tsk);
	smp_store_release(&b->named, true);	/* the names before */
}

/* do_exit(): the buffer stays in the session until read; names kept. */
void ktau_trace_exit(struct task_struct *tsk, struct ktau_task *kt)
{
	struct ktau_tbuf *b = READ_ONCE(kt->trace);
	struct ktau_tsession *s;

	if (!b)
		return;
	s = b->s;
	/* After its last record: pairs with the reader's acquire. */
	smp_store_release(&b->stopped, true);
	ktau_tbuf_name(s, b, tsk);
	smp_store_release(&b->exited, true);	/* the names before */
	ktau_trace_drop(tsk, kt);
}

/*
 * A program that is not dumpable, once its credentials are committed:
 * what it does is not an unprivileged opener's to see (denied). Under
 * exec_update_lock held for writing: no attach replaces @kt's buffer
 * meanwhile (ktau_trace_attach()).
 */
void ktau_trace_exec_nondumpable(struct ktau_task *kt)
{
	struct ktau_tbuf *b = READ_ONCE(kt->trace);
	struct ktau_tsession *s;
	bool traced;

	if (!b || b->s->privileged)
		return;
	s = b->s;
	/* One that KTAU_IOC_TRACE_DETACH stopped was not traced any more. */
	traced = !READ_ONCE(b->stopped);
	/*
	 * No record after this one, set by the thread itself: its hooks,
	 * and its interrupts, see it. Then the reader ends the buffer with
	 * a last chunk and retires it, as it does an exited thread's.
	 */
	smp_store_release(&b->stopped, true);
	mutex_lock(&s->lock);
	if (traced && !b->detached)
		s->denied++;
	b->detached = true;
	mutex_unlock(&s->lock);
	/* Its records stay to be read after the thread is gone. */
	ktau_tbuf_name(s, b, current);
	ktau_trace_drop(current, kt);
}

static int ktau_trace_open(struct inode *inode, struct file *file)
{
	struct ktau_tsession *s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	unsigned long flags;
	u64 ns;

	if (!s)
		return -ENOMEM;
	refcount_set(&s->ref, 1);
	mutex_init(&s->lock);
	mutex_init(&s->read_lock);
	spin_lock_init(&s->pool_lock);
	INIT_LIST_HEAD(&s->bufs);
	s->privileged = ktau_perfmon_quiet();
	s->lsm_denied = ktau_irq_detail_lsm_denied();
	s->ns = get_pid_ns(task_active_pid_ns(current));
	s->memcg = get_mem_cgroup_from_mm(current->mm);
	/*
	 * The pair that converts the session's clock to the opener's
	 * CLOCK_MONOTONIC (its time namespace's): read back to back, so
	 * that no interrupt or preemption between them shifts every time.
	 */
	local_irq_save(flags);
	s->clock0 = ktau_clock();
	ns = ktime_get_ns();
	local_irq_restore(flags);
	s->ns0 = ktau_timens(ns, ktau_timens_offset());
	s->id = atomic_inc_return(&ktau_tsession_ids);
	file->private_data = s;
	return 0;
}

/*
 * Close: every ring goes (writers see it NULL, and a grace period later
 * none uses it); buffers of threads that live on stay, empty, until
 * their thread lets go of them.
 */
static int ktau_trace_release(struct inode *inode, struct file *file)
{
	struct ktau_tsession *s = file->private_data;
	struct ktau_tbuf *b, *n;
	LIST_HEAD(gone);

	/*
	 * Closed before it is unpublished: a new system-wide session, which
	 * can start only then, replaces this one's buffers (closed) rather
	 * than refuse their threads. No fork takes a new reference after the
	 * grace period below.
	 */
	if (s->all)
		mutex_lock(&ktau_trace_all_lock);
	mutex_lock(&s->lock);
	WRITE_ONCE(s->closed, true);
	list_splice_init(&s->bufs, &gone);
	mutex_unlock(&s->lock);
	if (s->all) {
		RCU_INIT_POINTER(ktau_trace_all, NULL);
		mutex_unlock(&ktau_trace_all_lock);
	}
	/* Seen closed by every later ktau_tring_keep(): nothing kept after. */
	ktau_tring_free_kept(s);
	list_for_each_entry(b, &gone, node) {
		WRITE_ONCE(b->stopped, true);
		b->old_ring = b->ring;
		WRITE_ONCE(b->ring, NULL);
	}
	/* Writers run with interrupts off: after this, none has a ring. */
	synchronize_rcu();
	/* Threads that live on keep an empty buffer, and nothing on. */
	if (s->key)
		static_branch_slow_dec_deferred(&ktau_extra_key);
	list_for_each_entry_safe(b, n, &gone, node) {
		list_del(&b->node);
		vfree(b->old_ring);
		ktau_tbuf_put(b);
	}
	ktau_tsession_put(s);
	return 0;
}

static bool ktau_trace_may(struct task_struct *t)
{
	return t == current || perfmon_capable() ||
	       ptrace_may_access(t, PTRACE_MODE_READ_REALCREDS);
}

/*
 * Give @t (profile @kt, a reference held) a buffer in @s: -EEXIST when it
 * has a live one, -EBUSY beyond the session's bounds. An empty buffer of a
 * closed session that @t had goes to *@oldp if @oldp is not NULL (the
 * caller puts it a grace period later), else here after one.
 */
static int ktau_trace_attach_task(struct ktau_tsession *s, struct task_struct *t,
				  struct ktau_task *kt, const struct ktau_trace_attr *a,
				  struct ktau_tbuf **oldp)
{
	struct ktau_tbuf *b, *old = NULL;
	int err;

	/*
	 * As perf_event_open(): no exec between the check and the publish,
	 * so that a thread that becomes a set-user-ID program meanwhile is
	 * not traced for an opener that may not trace it now (its exec
	 * drops the buffer, ktau_trace_exec_nondumpable(), under the same
	 * lock held for writing). The whole-system walk (@oldp) waits
	 * killably: any signal would end it half done, with success.
	 */
	err = oldp ? down_read_killable(&t->signal->exec_update_lock) :
		     down_read_interruptible(&t->signal->exec_update_lock);
	if (err)
		return err;
	if (!ktau_trace_may(t)) {
		err = -EACCES;
		goto unlock;
	}
	b = ktau_tbuf_new(s, t, a->capacity, a->flags & KTAU_TRACE_INHERIT, a->groups, &err);
	if (b) {
		mutex_lock(&s->lock);
		/*
		 * Not closed: an attach is an ioctl of the open file. The key
		 * before the pointer: records from the first call on.
		 */
		ktau_tsession_key(s);
		err = ktau_tbuf_publish(t, kt, b, &old);
		if (!err)
			ktau_tbuf_add(s, b);
		else
			ktau_tbuf_unnew(s, b);
		mutex_unlock(&s->lock);
	}
unlock:
	up_read(&t->signal->exec_update_lock);
	if (old && oldp) {
		*oldp = old;
	} else if (old) {
		/* The thread may be looking at it with interrupts off. */
		synchronize_rcu();
		ktau_tbuf_put(old);
	}
	return err;
}

/*
 * KTAU_TRACE_ALL: publish @s for every fork from now on, then attach
 * every user thread that exists (see the top of this file).
 */
static int ktau_trace_attach_all(struct ktau_tsession *s, const struct ktau_trace_attr *a)
{
	struct task_struct **v, *p, *t;
	struct ktau_tbuf **olds;
	unsigned int n = 0, nold = 0, max, i, refused = 0;
	int err = 0;

	/* The opener's privilege too: what the session shows is its. */
	if (!perfmon_capable() || !s->privileged)
		return -EPERM;
	if (a->tid)
		return -EINVAL;
	/*
	 * Room for the threads that exist, and for some made meanwhile, up
	 * to the session's bound: those beyond are counted refused.
	 */
	max = min(READ_ONCE(nr_threads) + 256, KTAU_TRACE_MAX_TASKS);
	v = kvmalloc_array(2 * (size_t)max, sizeof(*v), GFP_KERNEL_ACCOUNT);
	if (!v)
		return -ENOMEM;
	olds = (struct ktau_tbuf **)(v + max);
	mutex_lock(&ktau_trace_all_lock);
	if (rcu_access_pointer(ktau_trace_all) || READ_ONCE(s->closed)) {
		mutex_unlock(&ktau_trace_all_lock);
		kvfree(v);
		return -EBUSY;
	}
	mutex_lock(&s->lock);
	s->all_cap = a->capacity;
	s->all_groups = a->groups;
	s->opener = get_pid(task_tgid(current));
	WRITE_ONCE(s->all, true);
	mutex_unlock(&s->lock);
	rcu_assign_pointer(ktau_trace_all, s);
	mutex_unlock(&ktau_trace_all_lock);
	/*
	 * See ktau_trace_post_fork(): a fork joins the task list under
	 * tasklist_lock and then looks for the session. Either it did so
	 * before this section, and the walk below sees it on the list, or
	 * after, and it sees the session. The walk itself needs only RCU.
	 */
	read_lock(&tasklist_lock);
	read_unlock(&tasklist_lock);

	rcu_read_lock();
	for_each_process_thread(p, t) {
		if ((t->flags & (PF_KTHREAD | PF_EXITING)) || same_thread_group(t, current) ||
		    !task_pid_nr_ns(t, s->ns))
			continue;
		if (n == max) {
			/* More threads than room: counted. */
			refused += ktau_trace_refuse_once(s, ktau_profile(t));
			continue;
		}
		get_task_struct(t);
		v[n++] = t;
	}
	rcu_read_unlock();
	for (i = 0; i < n; i++) {
		struct ktau_task *kt = ktau_profile(v[i]);
		struct ktau_tbuf *old = NULL;
		int e = -EINTR;

		/*
		 * Killed: the threads not reached are counted refused. The
		 * lock's wait is not the only place to notice it: an
		 * uncontended down_read_killable() does not look.
		 */
		if (err != -EINTR && fatal_signal_pending(current))
			err = -EINTR;
		/* A thread without a profile of its own cannot be traced. */
		if (err != -EINTR)
			e = kt ? ktau_trace_attach_task(s, v[i], kt, a, &old) : -ENOMEM;
		if (e == -EINTR)
			err = e;
		if (e && e != -EEXIST)
			refused += ktau_trace_refuse_once(s, kt);
		if (old)
			olds[nold++] = old;
		put_task_struct(v[i]);
	}
	if (nold) {
		/* The threads may be looking at them with interrupts off. */
		synchronize_rcu();
		for (i = 0; i < nold; i++)
			ktau_tbuf_put(olds[i]);
	}
	mutex_lock(&s->lock);
	s->refused += refused;
	mutex_unlock(&s->lock);
	kvfree(v);
	return 0;
}

static int ktau_trace_attach(struct ktau_tsession *s,
			     const struct ktau_trace_attr __user *uattr)
{
	struct ktau_trace_attr a;
	struct task_struct *t;
	struct ktau_task *kt;
	int err;

	if (copy_from_user(&a, uattr, sizeof(a)))
		return -EFAULT;
	if (a.size != sizeof(a) || (a.flags & ~KTAU_TRACE_FLAGS) ||
	    a.capacity < 2 || a.capacity > KTAU_TRACE_MAX_CAPACITY ||
	    (a.capacity & (a.capacity - 1)) ||
	    (a.groups & ~(BIT_ULL(KTAU_NR_GROUPS) - 1)))
		return -EINVAL;
	if (!a.groups)
		a.groups = BIT_ULL(KTAU_NR_GROUPS) - 1;
	if (a.flags & KTAU_TRACE_ALL)
		return ktau_trace_attach_all(s, &a);
	rcu_read_lock();
	t = a.tid ? find_task_by_pid_ns(a.tid, s->ns) : current;
	if (t)
		get_task_struct(t);
	rcu_read_unlock();
	if (!t)
		return -ESRCH;
	kt = ktau_profile(t);
	if (!kt || (t->flags & PF_KTHREAD))
		err = kt ? -EINVAL : -ESRCH;
	else
		err = ktau_trace_attach_task(s, t, kt, &a, NULL);
	put_task_struct(t);
	return err == -EEXIST ? -EBUSY : err;
}

/*
 * The thread of @b, in the session's namespace: its tid, and its tgid and
 * name if asked; s->lock held. Its task is used only while it holds @b
 * (until it exits, or a non-dumpable exec drops @b), which comes long
 * before the task can be freed (an RCU grace period after its release),
 * or until a failed fork names @b under s->lock; then the names kept.
 */
static pid_t ktau_tbuf_tid(struct ktau_tsession *s, struct ktau_tbuf *b,
			   pid_t *pid, char *comm)
{
	pid_t tid;

	lockdep_assert_held(&s->lock);
	rcu_read_lock();
	/* Pairs with the release in ktau_tbuf_name(): the names first. */
	if (smp_load_acquire(&b->named)) {
		tid = b->tid;
		if (pid)
			*pid = b->pid;
		if (comm)
			memcpy(comm, b->comm, TASK_COMM_LEN);
	} else {
		tid = task_pid_nr_ns(b->task, s->ns);
		if (pid)
			*pid = task_tgid_nr_ns(b->task, s->ns);
		if (comm)
			__get_task_comm(comm, TASK_COMM_LEN, b->task);
	}
	rcu_read_unlock();
	return tid;
}

/* Stop recording @tid (0: the caller); its records stay to be read. */
static int ktau_trace_detach(struct ktau_tsession *s, const s32 __user *utid)
{
	struct ktau_tbuf *b, *found = NULL;
	s32 tid;

	if (get_user(tid, utid))
		return -EFAULT;
	if (!tid)
		tid = task_pid_nr_ns(current, s->ns);
	mutex_lock(&s->lock);
	list_for_each_entry(b, &s->bufs, node) {
		if (b->detached || READ_ONCE(b->stopped) ||
		    ktau_tbuf_tid(s, b, NULL, NULL) != tid ||
		    /* pairs with the release in ktau_trace_exit() */
		    smp_load_acquire(&b->exited))
			continue;
		WRITE_ONCE(b->stopped, true);
		refcount_inc(&b->ref);
		found = b;
		break;
	}
	mutex_unlock(&s->lock);
	if (!found)
		return -ESRCH;
	/*
	 * The thread may be writing a record on another CPU, with interrupts
	 * off, having seen it running: a grace period later none is, so the
	 * chunk that reports the detach is the buffer's last.
	 */
	synchronize_rcu();
	mutex_lock(&s->lock);
	found->detached = true;
	mutex_unlock(&s->lock);
	ktau_tbuf_put(found);
	return 0;
}

static int ktau_trace_stats(struct ktau_tsession *s,
			    struct ktau_trace_stats __user *ust)
{
	struct ktau_trace_stats st = {};
	struct ktau_tbuf *b;

	mutex_lock(&s->lock);
	st.tasks = s->tasks;
	st.refused = s->refused;
	st.denied = s->denied;
	st.records = s->records;
	st.lost = s->lost;
	list_for_each_entry(b, &s->bufs, node) {
		/* Pairs with the writer's release of head. */
		unsigned long head = smp_load_acquire(&b->head);

		st.records += head;
		st.lost += READ_ONCE(b->lost);
		/* The reader moves tail under read_lock only. */
		st.buffered += head - READ_ONCE(b->tail);
	}
	mutex_unlock(&s->lock);
	return copy_to_user(ust, &st, sizeof(st)) ? -EFAULT : 0;
}

static long ktau_trace_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	struct ktau_tsession *s = file->private_data;

	switch (cmd) {
	case KTAU_IOC_TRACE_ATTACH:
		return ktau_trace_attach(s, (const void __user *)arg);
	case KTAU_IOC_TRACE_DETACH:
		return ktau_trace_detach(s, (const s32 __user *)arg);
	case KTAU_IOC_TRACE_STATS:
		return ktau_trace_stats(s, (void __user *)arg);
	}
	return -ENOTTY;
}

/* Records converted per copy to user space. */
#define KTAU_TRACE_BATCH	32

struct ktau_tclock {
	struct ktau_conv cv;
	u64 now_clock;
	u64 now_ns;
	bool coarse;
};

/*
 * A clock value as CLOCK_MONOTONIC ns, from the session's reference: every
 * record of a session is converted from the same point, so that records
 * drained by different reads keep their order to the clock's resolution
 * (a reference per read would shift them by the clock's rate error times
 * the time between reads); over a long session they drift from
 * CLOCK_MONOTONIC by that rate error.
 */
static u64 ktau_tclock_ns(const struct ktau_tclock *c, u64 t)
{
	if ((s64)(c->now_clock - t) < 0)
		return c->now_ns + ktau_to_ns(&c->cv, t - c->now_clock);
	return c->now_ns - min(c->now_ns, ktau_to_ns(&c->cv, c->now_clock - t));
}

/* Interrupt sources the reader may not see: under "irq" and "softirq". */
static u32 ktau_trace_id(const struct ktau_tclock *c, const struct ktau_trec *r)
{
	if (!c->coarse || r->kind == KTAU_TRACE_LOST)
		return r->id;
	return ktau_coarse_id(r->id);
}

/* What a chunk tells of its buffer's thread, taken under s->lock. */
struct ktau_tbuf_names {
	pid_t tid, pid;
	char comm[TASK_COMM_LEN];
	bool detached;
};

/*
 * One chunk of @b's records into @ubuf (at most @room bytes), or its last,
 * empty, chunk once it exited or was detached. Bytes written, 0 when it
 * has nothing, or -errno. s->read_lock held, not s->lock: a copy that
 * faults (a page swapped out, or held by userfaultfd) must not hold up
 * the forks and attaches that take s->lock.
 */
static ssize_t ktau_trace_chunk(struct ktau_tbuf *b, const struct ktau_tbuf_names *nm,
				const struct ktau_tclock *c, char __user *ubuf,
				size_t room)
{
	struct ktau_trace_rec out[KTAU_TRACE_BATCH];
	struct ktau_trace_chunk ch = {};
	unsigned long head, tail;
	size_t n, done = 0, k, i;
	struct ktau_trec *ring = b->ring;
	bool exited, last, pend;

	if (!ring)
		return 0;
	/* Pairs with the release in ktau_trace_exit(): no record after. */
	exited = smp_load_acquire(&b->exited);
	/* Pairs with the releases after the thread's last record. */
	last = (exited || nm->detached) && smp_load_acquire(&b->stopped);
	/*
	 * Records lost after the thread's last one: no record that found
	 * room again reports them, so its trace ends with their LOST record.
	 */
	pend = exited && b->lost_pending;
	/* Pairs with the writer's release: the records before head. */
	head = smp_load_acquire(&b->head);
	tail = b->tail;
	if (head == tail && !pend && (!last || b->reported))
		return 0;
	if (room < sizeof(ch) + (head != tail || pend ? sizeof(out[0]) : 0))
		return -ENOSPC;
	n = min_t(size_t, head - tail, (room - sizeof(ch)) / sizeof(out[0]));
	while (done < n) {
		k = min_t(size_t, n - done, KTAU_TRACE_BATCH);
		for (i = 0; i < k; i++) {
			const struct ktau_trec *r = &ring[(tail + done + i) & b->mask];

			memset(&out[i], 0, sizeof(out[i]));
			out[i].start_ns = ktau_tclock_ns(c, r->start);
			out[i].end_ns = ktau_tclock_ns(c, r->end);
			out[i].id = ktau_trace_id(c, r);
			out[i].depth = r->depth;
			out[i].kind = r->kind;
		}
		if (copy_to_user(ubuf + sizeof(ch) + done * sizeof(out[0]), out,
				 k * sizeof(out[0])))
			return -EFAULT;
		done += k;
	}
	/* The LOST record after the thread's last: when it fits as well. */
	pend = pend && tail + n == head &&
	       room >= sizeof(ch) + (n + 1) * sizeof(out[0]);
	if (pend) {
		memset(&out[0], 0, sizeof(out[0]));
		out[0].start_ns = ktau_tclock_ns(c, b->lost_first);
		out[0].end_ns = ktau_tclock_ns(c, b->lost_last);
		out[0].id = min_t(u64, b->lost_pending, U32_MAX);
		out[0].kind = KTAU_TRACE_LOST;
		if (copy_to_user(ubuf + sizeof(ch) + n * sizeof(out[0]), out,
				 sizeof(out[0])))
			return -EFAULT;
	}
	ch.size = sizeof(ch) + (n + pend) * sizeof(out[0]);
	ch.nrecs = n + pend;
	ch.tid = nm->tid;
	ch.pid = nm->pid;
	memcpy(ch.comm, nm->comm, sizeof(ch.comm));
	ch.lost = READ_ONCE(b->lost);
	if (last && tail + n == head && (pend || !(exited && b->lost_pending)))
		ch.flags = (exited ? KTAU_TRACE_EXITED : 0) |
			   (nm->detached ? KTAU_TRACE_DETACHED : 0);
	if (copy_to_user(ubuf, &ch, sizeof(ch)))
		return -EFAULT;
	/* Reported once copied: a fault leaves the last chunk to read again. */
	if (ch.flags)
		b->reported = true;
	if (pend)
		b->lost_pending = 0;
	/* The slots go back to the writer after they were copied. */
	smp_store_release(&b->tail, tail + n);
	return ch.size;
}

/*
 * read(): whole chunks, one or more per thread with records, as many as
 * fit; 0 when nothing is buffered. The buffers of exited threads go once
 * their last chunk was read.
 */
static ssize_t ktau_trace_read(struct file *file, char __user *ubuf,
			       size_t len, loff_t *ppos)
{
	struct ktau_tsession *s = file->private_data;
	struct ktau_tbuf *b, *n;
	struct ktau_tclock c;
	LIST_HEAD(gone);
	ssize_t done = 0, r = 0;

	ktau_conv_get(&c.cv);
	c.coarse = ktau_irq_detail_hidden(s->privileged) || s->lsm_denied;
	c.now_clock = s->clock0;
	c.now_ns = s->ns0;
	/* Interruptible: another reader's copy may wait for a slow fault. */
	if (mutex_lock_interruptible(&s->read_lock))
		return -ERESTARTSYS;
	mutex_lock(&s->lock);
	b = list_first_entry_or_null(&s->bufs, struct ktau_tbuf, node);
	while (b) {
		struct ktau_tbuf_names nm;

		/* Nothing to read, and no last chunk yet (see ktau_trace_chunk()). */
		if (smp_load_acquire(&b->head) == b->tail && !READ_ONCE(b->stopped)) {
			b = list_is_last(&b->node, &s->bufs) ? NULL : list_next_entry(b, node);
			continue;
		}
		/*
		 * Names as they are now: a chunk carries those of its read.
		 * s->lock is not held across the copies (see ktau_trace_chunk()).
		 * Only a reader, under read_lock, takes a buffer off the list,
		 * or the release, which the VFS never runs during a read():
		 * @b stays on the list, with the list's reference.
		 */
		nm.tid = ktau_tbuf_tid(s, b, &nm.pid, nm.comm);
		nm.detached = b->detached;
		mutex_unlock(&s->lock);
		do {
			r = ktau_trace_chunk(b, &nm, &c, ubuf + done, len - done);
			if (r > 0)
				done += r;
		} while (r > 0 && !b->reported);
		mutex_lock(&s->lock);
		n = list_is_last(&b->node, &s->bufs) ? NULL : list_next_entry(b, node);
		/*
		 * Its thread let go of it: exited, or a program that is not
		 * dumpable (both name it first; pairs with the release in
		 * ktau_tbuf_name()).
		 */
		if (b->reported && smp_load_acquire(&b->named)) {
			list_move(&b->node, &gone);
			s->nbufs--;
			s->bytes -= (size_t)(b->mask + 1) * sizeof(struct ktau_trec);
			s->records += b->head;
			s->lost += b->lost;
		}
		if (r < 0)
			break;
		b = n;
	}
	mutex_unlock(&s->lock);
	mutex_unlock(&s->read_lock);
	list_for_each_entry_safe(b, n, &gone, node) {
		list_del(&b->node);
		ktau_tbuf_put(b);
	}
	/* A buffer too small for even one chunk is the caller's error. */
	if (!done && r == -ENOSPC)
		return -ENOSPC;
	if (!done && r < 0)
		return r;
	return done;
}

const struct proc_ops ktau_trace_ops = {
	.proc_open		= ktau_trace_open,
	.proc_release		= ktau_trace_release,
	.proc_read		= ktau_trace_read,
	.proc_ioctl		= ktau_trace_ioctl,
#ifdef CONFIG_COMPAT
	.proc_compat_ioctl	= compat_ptr_ioctl,
#endif
	.proc_lseek		= noop_llseek,
};
