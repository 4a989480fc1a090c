// SPDX-License-Identifier: GPL-2.0
/*
 * ktaud kvm: the vCPU threads of KVM virtual machines (the kvm group, ABI
 * 1.4). For each process with vCPU threads, each such thread: its KVM_RUN
 * calls, time in guest mode, in exits (what the host did for the guest,
 * with what nested in it) and off the CPU, and its exits by reason, as
 * 'perf kvm stat report' shows them, from a live snapshot or a saved one.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <linux/ktau.h>

#include "ktaud.h"

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud kvm [options] <pid>...\n"
"       ktaud kvm [options] --input FILE\n\n"
"The vCPU threads of KVM virtual machines (QEMU's \"CPU 0/KVM\", ...): for each\n"
"thread with KVM routines, its KVM_RUN calls, the time in guest mode, in\n"
"exits (from the exit to the next entry, with the interrupts and scheduling\n"
"nested in them) and off the CPU, then its exits by reason: count, total\n"
"and average time, share of the exits' time. Needs the kvm group on\n"
"('ktaud control kvm on').\n\n"
"      --input FILE     a snapshot saved with 'ktaud dump --save' or\n"
"                       'ktaud run --save' (on this machine or another)\n"
"  -j, --json[=FILE]    JSON on stdout instead of the tables, or into FILE\n"
"      --force          replace an existing FILE that ktaud did not write\n"
"  -h, --help           this help\n\n"
"Exit: 0 ok, 1 no vCPU thread found or an unreadable input, 2 bad argument,\n"
"3 no KTAU, 4 not permitted, 5 no such process.\n");
}

/* What one vCPU thread did under KVM_RUN. */
struct vcpu_sum {
	const struct ktau_task *t;
	uint64_t guest_ns, guest_entries;
	uint64_t exit_ns, exits;
	uint64_t off_ns;
	uint64_t run_calls, run_ns;	/* ioctl(), all of them */
};

static int is_kvm_thread(const struct ktau_task *t, const struct ktau_registry *reg)
{
	size_t i;

	for (i = 0; i < t->nentries; i++)
		if (ktau_func_group(reg, t->entries[i].id) == KTAU_GROUP_KVM &&
		    t->entries[i].count)
			return 1;
	return 0;
}

static void vcpu_sum(const struct ktau_task *t, const struct ktau_registry *reg,
		     uint32_t ioctl_id, struct vcpu_sum *s)
{
	size_t i;

	memset(s, 0, sizeof(*s));
	s->t = t;
	s->off_ns = ktau_task_offcpu(t);
	for (i = 0; i < t->nentries; i++) {
		const struct ktau_func_stat *e = &t->entries[i];

		if (e->id == KTAU_ID_KVM_GUEST) {
			s->guest_ns += e->excl_ns;
			s->guest_entries += e->count;
		} else if (ktau_func_group(reg, e->id) == KTAU_GROUP_KVM) {
			s->exit_ns += e->incl_ns;
			s->exits += e->count;
		} else if (ioctl_id && e->id == ioctl_id) {
			s->run_calls = e->count;
			s->run_ns = e->incl_ns;
		}
	}
}

/* The reason part of an exit's name: "kvm_exit:NPF" -> "NPF". */
static const char *reason_of(const char *name)
{
	const char *c = strchr(name, ':');

	return c ? c + 1 : "(no name)";
}

static int cmp_exit(const void *a, const void *b)
{
	const struct ktau_func_stat *x = *(const struct ktau_func_stat *const *)a;
	const struct ktau_func_stat *y = *(const struct ktau_func_stat *const *)b;

	if (x->incl_ns != y->incl_ns)
		return x->incl_ns > y->incl_ns ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The thread's exit routines, most time first; *n of them. */
static const struct ktau_func_stat **exits_of(const struct ktau_task *t,
					      const struct ktau_registry *reg, size_t *n)
{
	const struct ktau_func_stat **v = calloc(t->nentries + 1, sizeof(*v));
	size_t i;

	*n = 0;
	if (!v)
		return NULL;
	for (i = 0; i < t->nentries; i++)
		if (t->entries[i].id != KTAU_ID_KVM_GUEST && t->entries[i].count &&
		    ktau_func_group(reg, t->entries[i].id) == KTAU_GROUP_KVM)
			v[(*n)++] = &t->entries[i];
	qsort(v, *n, sizeof(*v), cmp_exit);
	return v;
}

static void print_vcpu(const struct vcpu_sum *s, const struct ktau_registry *reg)
{
	const struct ktau_func_stat **v;
	char b1[32], b2[32], b3[32], b4[32], comm[17];
	size_t i, n;

	memcpy(comm, s->t->comm, 16);
	comm[16] = '\0';
	printf("  thread %d \"%s\": ioctl %llu calls, %s; guest mode %s (%llu entries), "
	       "exits %s (%llu), off CPU %s\n", s->t->tid, comm,
	       (unsigned long long)s->run_calls, fmt_ns(b1, sizeof(b1), s->run_ns),
	       fmt_ns(b2, sizeof(b2), s->guest_ns), (unsigned long long)s->guest_entries,
	       fmt_ns(b3, sizeof(b3), s->exit_ns), (unsigned long long)s->exits,
	       fmt_ns(b4, sizeof(b4), s->off_ns));
	v = exits_of(s->t, reg, &n);
	if (!v)
		return;
	printf("    %-24s %10s %12s %12s %7s\n", "exit reason", "exits", "time", "average",
	       "share");
	for (i = 0; i < n; i++)
		printf("    %-24s %10llu %12s %12s %6.2f%%\n",
		       reason_of(ktau_func_name(reg, v[i]->id)),
		       (unsigned long long)v[i]->count, fmt_ns(b1, sizeof(b1), v[i]->incl_ns),
		       fmt_ns(b2, sizeof(b2), v[i]->incl_ns / v[i]->count),
		       s->exit_ns ? 100.0 * v[i]->incl_ns / s->exit_ns : 0.0);
	free(v);
}

static json_object *json_vcpu(const struct vcpu_sum *s, const struct ktau_registry *reg)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();
	const struct ktau_func_stat **v;
	char comm[17];
	size_t i, n;

	memcpy(comm, s->t->comm, 16);
	comm[16] = '\0';
	json_object_object_add(o, "tid", json_object_new_int(s->t->tid));
	json_object_object_add(o, "comm", json_object_new_string(comm));
	json_object_object_add(o, "ioctl_calls", json_object_new_int64(s->run_calls));
	json_object_object_add(o, "ioctl_ns", json_object_new_int64(s->run_ns));
	json_object_object_add(o, "guest_ns", json_object_new_int64(s->guest_ns));
	json_object_object_add(o, "guest_entries", json_object_new_int64(s->guest_entries));
	json_object_object_add(o, "exit_ns", json_object_new_int64(s->exit_ns));
	json_object_object_add(o, "exits", json_object_new_int64(s->exits));
	json_object_object_add(o, "off_cpu_ns", json_object_new_int64(s->off_ns));
	v = exits_of(s->t, reg, &n);
	for (i = 0; v && i < n; i++) {
		json_object *e = json_object_new_object();

		json_object_object_add(e, "reason",
				       json_object_new_string(reason_of(ktau_func_name(reg, v[i]->id))));
		json_object_object_add(e, "count", json_object_new_int64(v[i]->count));
		json_object_object_add(e, "incl_ns", json_object_new_int64(v[i]->incl_ns));
		json_object_object_add(e, "excl_ns", json_object_new_int64(v[i]->excl_ns));
		json_object_array_add(arr, e);
	}
	free(v);
	json_object_object_add(o, "exit_reasons", arr);
	return o;
}

int cmd_kvm(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'I' },
		{ "json", optional_argument, NULL, 'j' },
		{ "force", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *input = NULL;
	struct ktau_snap *snap = NULL;
	struct ktau_registry *reg = NULL;
	struct ktau *k = NULL;
	json_object *root = NULL, *procs = NULL, *cur = NULL, *vcpus = NULL;
	pid_t *pids = NULL, last = -1;
	size_t npids, i, found = 0;
	uint32_t ioctl_id;
	int c, ret, json = 0, table = 1, rc = EX_KT_OK;
	const char *json_path = NULL;

	while ((c = getopt_long(argc, argv, "ij::h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': return moved_short("kvm", c, "--input");
		case 'I': input = optarg; break;
		case 'j':
			json = 1;
			json_path = optarg;
			/* JSON on stdout takes the tables' place. */
			table = optarg && strcmp(optarg, "-");
			break;
		case 'F': out_force = 1; break;
		case 'h': help(stdout); return EX_KT_OK;
		default: return usage_err("kvm", "bad option");
		}
	}
	npids = argc - optind;
	if (!npids && !input)
		return usage_err("kvm", "give the pids of VM processes (QEMU's), or --input FILE");
	if (npids && input)
		return usage_err("kvm", "give pids or --input, not both");
	if (input) {
		ret = ktau_snap_load(input, &snap, &reg);
		if (ret) {
			err_msg("cannot read snapshot %s: %s", input, strerror(-ret));
			return EX_KT_FAIL;
		}
	} else {
		pids = calloc(npids, sizeof(*pids));
		if (!pids)
			return report(-ENOMEM, "kvm");
		for (i = 0; i < npids; i++)
			if (parse_pid(argv[optind + i], &pids[i])) {
				free(pids);
				return usage_err("kvm", "'%s' is not a pid (a positive number)",
						 argv[optind + i]);
			}
		rc = open_ktau(&k);
		if (rc)
			goto out;
		ret = ktau_snapshot(k, KTAU_LIB_PIDS | KTAU_LIB_PROCESS, pids, npids, &snap);
		if (ret) {
			rc = report(ret, "snapshot");
			goto out;
		}
		if (!snap->ntasks) {
			err_msg("no such process: none of the pids is a process that exists "
				"and that you may read");
			rc = EX_KT_GONE;
			goto out;
		}
		reg = load_registry();
	}
	ktau_snap_sort(snap);
	ioctl_id = ktau_func_id(reg, "ioctl");
	if (json) {
		root = json_object_new_object();
		procs = json_object_new_array();
		json_object_object_add(root, "processes", procs);
	}
	for (i = 0; i < snap->ntasks; i++) {
		const struct ktau_task *t = &snap->tasks[i];
		struct vcpu_sum s;

		if (t->flags & KTAU_TASK_AGGREGATE || !is_kvm_thread(t, reg))
			continue;
		vcpu_sum(t, reg, ioctl_id, &s);
		found++;
		if (t->pid != last) {
			last = t->pid;
			if (json) {
				cur = json_object_new_object();
				vcpus = json_object_new_array();
				json_object_object_add(cur, "pid", json_object_new_int(t->pid));
				json_object_object_add(cur, "vcpu_threads", vcpus);
				json_object_array_add(procs, cur);
			}
			if (table)
				printf("process %d\n", t->pid);
		}
		if (json)
			json_object_array_add(vcpus, json_vcpu(&s, reg));
		if (table)
			print_vcpu(&s, reg);
	}
	if (json) {
		ret = write_json_doc(root, json_path);
		if (ret)
			rc = ret;
		json_object_put(root);
	}
	if (!found) {
		err_msg("no vCPU thread: no thread has KVM routines (is the kvm group on? "
			"'ktaud control' shows it; was the VM run under a KTAU kernel "
			"with KVM, ABI 1.4 or later?)");
		rc = EX_KT_FAIL;
	}
out:
	if (fflush(stdout) && rc == EX_KT_OK)
		rc = EX_KT_FAIL;
	ktau_snap_free(snap);
	ktau_registry_free(reg);
	ktau_close(k);
	free(pids);
	return rc;
}
