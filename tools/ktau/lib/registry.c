// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: the function ID registry (/proc/ktau/functions) and group names.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/ktau.h>

#include "libktau.h"
#include "internal.h"

#define NAME_MAX_LEN 64

struct reg_func {
	uint32_t id;
	int group;
	char name[NAME_MAX_LEN];
};

struct ktau_registry {
	size_t n;
	struct reg_func *v;	/* sorted by id */
	char scratch[NAME_MAX_LEN];
};

static const char *const group_names[KTAU_LIB_NR_GROUPS] = {
	"syscall", "irq", "softirq", "sched", "fault", "signal", "dynamic", "kvm",
};

/* The classes of the original KTAU, as in TAU's KERNEL_GROUPS. */
static const char *const group_classes[KTAU_LIB_NR_GROUPS] = {
	"SYSCALL", "IRQ", "BH", "SCHED", "EXCEPT", "SIGNAL", "DYNAMIC", "KVM",
};

_Static_assert(KTAU_LIB_NR_GROUPS == KTAU_NR_GROUPS, "groups of the ABI");

const char *ktau_group_name(int group)
{
	return group >= 0 && group < KTAU_LIB_NR_GROUPS ? group_names[group] : NULL;
}

const char *ktau_group_class(int group)
{
	return group >= 0 && group < KTAU_LIB_NR_GROUPS ? group_classes[group] : "OTHER";
}

int ktau_group_parse(const char *name)
{
	int g;

	for (g = 0; g < KTAU_LIB_NR_GROUPS; g++)
		if (!strcmp(name, group_names[g]))
			return g;
	return -1;
}

int ktau__slurp(const char *path, char **textp, size_t *lenp)
{
	size_t len = 0, cap = 16384;
	char *buf, *nbuf;
	ssize_t n;
	int fd, err = 0;

	*textp = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (cap - len < 4096) {
			if (cap >= (256u << 20)) {
				err = -EFBIG;
				break;
			}
			nbuf = realloc(buf, cap * 2);
			if (!nbuf) {
				err = -ENOMEM;
				break;
			}
			buf = nbuf;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (!n)
			break;
		len += n;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*textp = buf;
	if (lenp)
		*lenp = len;
	return 0;
}

static int cmp_func(const void *a, const void *b)
{
	const struct reg_func *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

int ktau_registry_parse(const char *text, size_t len, struct ktau_registry **out)
{
	struct ktau_registry *r;
	const char *line = text, *end = text + len, *eol, *sp1, *sp2;
	struct reg_func *f, *nv;
	size_t cap = 0, i;
	char gname[32];
	uint64_t id;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (; line < end; line = eol + 1) {
		eol = memchr(line, '\n', end - line);
		if (!eol)
			eol = end;
		if (eol == line || line[0] == '#')
			continue;
		if (r->n == cap) {
			cap = cap ? cap * 2 : 512;
			nv = realloc(r->v, cap * sizeof(*nv));
			if (!nv)
				goto nomem;
			r->v = nv;
		}
		f = &r->v[r->n];
		/* "id group name": the name is the rest of the line. */
		if (!isdigit((unsigned char)*line))
			goto bad;
		id = 0;
		for (sp1 = line; sp1 < eol && isdigit((unsigned char)*sp1); sp1++) {
			id = id * 10 + (*sp1 - '0');
			if (id > UINT32_MAX)
				goto bad;
		}
		if (sp1 >= eol || *sp1 != ' ' || !id)
			goto bad;
		sp2 = memchr(sp1 + 1, ' ', eol - sp1 - 1);
		if (!sp2 || sp2 == sp1 + 1 || (size_t)(sp2 - sp1 - 1) >= sizeof(gname) ||
		    sp2 + 1 >= eol || (size_t)(eol - sp2 - 1) >= NAME_MAX_LEN)
			goto bad;
		memcpy(gname, sp1 + 1, sp2 - sp1 - 1);
		gname[sp2 - sp1 - 1] = '\0';
		f->id = id;
		f->group = ktau_group_parse(gname);
		memcpy(f->name, sp2 + 1, eol - sp2 - 1);
		f->name[eol - sp2 - 1] = '\0';
		if (memchr(f->name, '\0', eol - sp2 - 1))
			goto bad;
		r->n++;
		if (eol == end)
			break;
	}
	if (r->n)
		qsort(r->v, r->n, sizeof(*r->v), cmp_func);
	for (i = 1; i < r->n; i++)
		if (r->v[i].id == r->v[i - 1].id)
			goto bad;
	*out = r;
	return 0;
bad:
	ktau_registry_free(r);
	return -EBADMSG;
nomem:
	ktau_registry_free(r);
	return -ENOMEM;
}

int ktau_registry_load(struct ktau_registry **out)
{
	char *text;
	size_t len;
	int ret;

	*out = NULL;
	ret = ktau__slurp(KTAU_PATH_FUNCTIONS, &text, &len);
	if (ret)
		return ret;
	ret = ktau_registry_parse(text, len, out);
	free(text);
	return ret;
}

void ktau_registry_free(struct ktau_registry *reg)
{
	if (!reg)
		return;
	free(reg->v);
	free(reg);
}

size_t ktau_registry_size(const struct ktau_registry *reg)
{
	return reg ? reg->n : 0;
}

static const struct reg_func *reg_find(const struct ktau_registry *reg, uint32_t id)
{
	struct reg_func key = { .id = id };

	if (!reg || !reg->n)
		return NULL;
	return bsearch(&key, reg->v, reg->n, sizeof(*reg->v), cmp_func);
}

static const char *const fixed_names[] = {
	[KTAU_ID_OTHER] = "[other]",
	[KTAU_ID_IRQ] = "irq",
	[KTAU_ID_SCHED_VOL] = "sched_blocked",
	[KTAU_ID_SCHED_INVOL] = "sched_preempted",
	[KTAU_ID_FAULT_USER] = "page_fault_user",
	[KTAU_ID_FAULT_KERNEL] = "page_fault_kernel",
	[KTAU_ID_SIGNAL] = "signal_delivery",
	[KTAU_ID_SYSCALL_BAD] = "syscall_invalid",
	[KTAU_ID_SYSCALL_COMPAT] = "syscall_compat",
	[KTAU_ID_USER] = "user_mode",
	[KTAU_ID_KERNEL] = "kernel_other",
	[KTAU_ID_SOFTIRQ] = "softirq",
	[KTAU_ID_KVM_GUEST] = "kvm_guest",
	[KTAU_ID_KVM_EXIT] = "kvm_exit",
};

static const int fixed_groups[] = {
	[KTAU_ID_OTHER] = KTAU_GROUP_DYNAMIC,
	[KTAU_ID_IRQ] = KTAU_GROUP_IRQ,
	[KTAU_ID_SCHED_VOL] = KTAU_GROUP_SCHED,
	[KTAU_ID_SCHED_INVOL] = KTAU_GROUP_SCHED,
	[KTAU_ID_FAULT_USER] = KTAU_GROUP_FAULT,
	[KTAU_ID_FAULT_KERNEL] = KTAU_GROUP_FAULT,
	[KTAU_ID_SIGNAL] = KTAU_GROUP_SIGNAL,
	[KTAU_ID_SYSCALL_BAD] = KTAU_GROUP_SYSCALL,
	[KTAU_ID_SYSCALL_COMPAT] = KTAU_GROUP_SYSCALL,
	[KTAU_ID_USER] = KTAU_GROUP_DYNAMIC,
	[KTAU_ID_KERNEL] = KTAU_GROUP_DYNAMIC,
	[KTAU_ID_SOFTIRQ] = KTAU_GROUP_SOFTIRQ,
	[KTAU_ID_KVM_GUEST] = KTAU_GROUP_KVM,
	[KTAU_ID_KVM_EXIT] = KTAU_GROUP_KVM,
};

static const char *const softirq_names[] = {
	"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL",
	"TASKLET", "SCHED", "HRTIMER", "RCU",
};

const char *ktau_func_name(const struct ktau_registry *reg, uint32_t id)
{
	static __thread char buf[NAME_MAX_LEN];
	const struct reg_func *f = reg_find(reg, id);

	if (f)
		return f->name;
	if (id < sizeof(fixed_names) / sizeof(fixed_names[0]) && fixed_names[id])
		return fixed_names[id];
	if (id >= KTAU_ID_SOFTIRQ_BASE && id < KTAU_ID_SOFTIRQ_BASE + 10) {
		snprintf(buf, sizeof(buf), "softirq_%s", softirq_names[id - KTAU_ID_SOFTIRQ_BASE]);
		return buf;
	}
	snprintf(buf, sizeof(buf), "ktau_id_%u", id);
	return buf;
}

int ktau_func_group(const struct ktau_registry *reg, uint32_t id)
{
	const struct reg_func *f = reg_find(reg, id);

	if (f)
		return f->group;
	if (id < sizeof(fixed_names) / sizeof(fixed_names[0]) && fixed_names[id])
		return fixed_groups[id];
	if (id >= KTAU_ID_SOFTIRQ_BASE && id < KTAU_ID_SOFTIRQ_BASE + 10)
		return KTAU_GROUP_SOFTIRQ;
	return -1;
}

uint32_t ktau_func_id(const struct ktau_registry *reg, const char *name)
{
	size_t i;

	for (i = 0; reg && i < reg->n; i++)
		if (!strcmp(reg->v[i].name, name))
			return reg->v[i].id;
	for (i = 1; i < sizeof(fixed_names) / sizeof(fixed_names[0]); i++)
		if (fixed_names[i] && !strcmp(fixed_names[i], name))
			return i;
	return 0;
}

static int snap_uses(const struct ktau_snap *snap, uint32_t id)
{
	size_t i;

	for (i = 0; i < snap->ntasks; i++)
		if (ktau_task_find(&snap->tasks[i], id))
			return 1;
	return 0;
}

int ktau_registry_format(const struct ktau_registry *reg,
			 const struct ktau_snap *snap, char **textp, size_t *lenp)
{
	size_t cap = 64, len = 0, i;
	char *text, *nt;
	int n;

	text = malloc(cap);
	if (!text)
		return -ENOMEM;
	len = snprintf(text, cap, "# id group name\n");
	for (i = 0; reg && i < reg->n; i++) {
		const struct reg_func *f = &reg->v[i];
		const char *g = ktau_group_name(f->group);

		if (snap && !snap_uses(snap, f->id))
			continue;
		if (cap - len < 128) {
			cap *= 2;
			nt = realloc(text, cap);
			if (!nt) {
				free(text);
				return -ENOMEM;
			}
			text = nt;
		}
		n = snprintf(text + len, cap - len, "%u %s %s\n", f->id, g ? g : "unknown", f->name);
		len += n;
	}
	*textp = text;
	*lenp = len;
	return 0;
}

int ktau_registry_merge(struct ktau_registry **dstp, const struct ktau_registry *src)
{
	struct ktau_registry *dst = *dstp;
	struct reg_func *nv;
	size_t i, n;

	if (!src)
		return 0;
	if (!dst) {
		dst = calloc(1, sizeof(*dst));
		if (!dst)
			return -ENOMEM;
		*dstp = dst;
	}
	nv = realloc(dst->v, (dst->n + src->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	dst->v = nv;
	/* IDs are never reused within a boot: a duplicate is the same. */
	for (i = 0; i < src->n; i++)
		dst->v[dst->n++] = src->v[i];
	qsort(dst->v, dst->n, sizeof(*dst->v), cmp_func);
	for (i = 1, n = 1; i < dst->n; i++)
		if (dst->v[i].id != dst->v[n - 1].id)
			dst->v[n++] = dst->v[i];
	if (dst->n)
		dst->n = n;
	return 0;
}

static int cmp_stat(const void *a, const void *b)
{
	const struct ktau_func_stat *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * IDs given to routines of another boot that the first lacks: above any
 * ID a kernel gives (a later file of the first boot may use any of those).
 */
#define RENUMBER_BASE	0x40000000u

/*
 * @snap was taken in another boot than the snapshots whose registry is
 * *@dstp: IDs of interrupt sources and dynamic points are not the same
 * there. Give each routine of @snap the ID its name has in *@dstp or among
 * the fixed IDs (a name *@dstp lacks gets a new ID from RENUMBER_BASE up,
 * added to *@dstp with @src's group), so that adding the snapshots adds up
 * routines by name. Entries that end up with one ID are summed.
 */
/* The index in the sorted @from[@n] where @id is or would go. */
static size_t renumber_slot(const uint32_t *from, size_t n, uint32_t id)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (from[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ktau__registry_renumber(struct ktau_registry **dstp, const struct ktau_registry *src,
			    struct ktau_snap *snap)
{
	struct ktau_registry *dst = *dstp;
	uint32_t next = RENUMBER_BASE, *from = NULL, *to = NULL;
	size_t nmap = 0, cap = 0, t, i, j, k, added = 0;
	int ret = 0;

	if (!dst) {
		dst = calloc(1, sizeof(*dst));
		if (!dst)
			return -ENOMEM;
		*dstp = dst;
	}
	for (i = 0; i < dst->n; i++)
		if (dst->v[i].id >= next)
			next = dst->v[i].id + 1;
	for (t = 0; t < snap->ntasks && !ret; t++) {
		struct ktau_task *tk = &snap->tasks[t];

		for (i = 0; i < tk->nentries; i++) {
			uint32_t id = tk->entries[i].id, nid;
			char name[NAME_MAX_LEN];
			struct reg_func *nv;

			/* The IDs seen so far, sorted: each looked up once by name. */
			j = renumber_slot(from, nmap, id);
			if (j < nmap && from[j] == id) {
				tk->entries[i].id = to[j];
				continue;
			}
			snprintf(name, sizeof(name), "%s", ktau_func_name(src, id));
			/* A fixed ID of the same name (softirq_TIMER, ...) stays. */
			if (ktau_func_group(NULL, id) >= 0 && !strcmp(ktau_func_name(NULL, id), name))
				nid = id;
			else
				nid = ktau_func_id(dst, name);
			if (!nid) {
				nid = next++;
				nv = realloc(dst->v, (dst->n + 1) * sizeof(*nv));
				if (!nv) {
					ret = -ENOMEM;
					break;
				}
				dst->v = nv;
				nv[dst->n].id = nid;
				nv[dst->n].group = ktau_func_group(src, id);
				memcpy(nv[dst->n].name, name, sizeof(name));
				dst->n++;
				added++;
			}
			if (nmap == cap) {
				uint32_t *a, *b;

				cap = cap ? cap * 2 : 64;
				a = realloc(from, cap * sizeof(*from));
				if (a)
					from = a;
				b = a ? realloc(to, cap * sizeof(*to)) : NULL;
				if (b)
					to = b;
				if (!a || !b) {
					ret = -ENOMEM;
					break;
				}
			}
			memmove(from + j + 1, from + j, (nmap - j) * sizeof(*from));
			memmove(to + j + 1, to + j, (nmap - j) * sizeof(*to));
			from[j] = id;
			to[j] = nid;
			nmap++;
			tk->entries[i].id = nid;
		}
		/* Sorted by ID again; two IDs of one name become one entry. */
		qsort(tk->entries, tk->nentries, sizeof(*tk->entries), cmp_stat);
		for (i = 0, k = 0; i < tk->nentries; i++) {
			struct ktau_func_stat *e = &tk->entries[i];

			if (k && tk->entries[k - 1].id == e->id) {
				tk->entries[k - 1].count += e->count;
				tk->entries[k - 1].incl_ns += e->incl_ns;
				tk->entries[k - 1].excl_ns += e->excl_ns;
				tk->entries[k - 1].samples += e->samples;
			} else {
				tk->entries[k++] = *e;
			}
		}
		tk->nentries = k;
	}
	/* The registry is sorted by ID for its lookups: once, not per name. */
	if (added)
		qsort(dst->v, dst->n, sizeof(*dst->v), cmp_func);
	free(from);
	free(to);
	return ret;
}
