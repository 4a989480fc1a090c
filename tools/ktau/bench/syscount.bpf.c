// SPDX-License-Identifier: GPL-2.0
/*
 * The eBPF peer of KTAU's system call group, for scripts/bench.sh: per
 * task, per system call, the number of calls and their total latency, as
 * bcc's "syscount -L" keeps them (there per system call or per process),
 * on the raw tracepoints sys_enter and sys_exit.
 *
 * Built with clang -target bpf; no BTF of the kernel is needed (no CO-RE):
 * a raw tracepoint's arguments are plain u64s, sys_enter's second the
 * system call's number. Loaded by syscount.c.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "syscount.h"

struct start {
	__u64 ts;	/* bpf_ktime_get_ns() at sys_enter */
	__u64 nr;	/* system call number */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32);
	__type(value, struct start);
} start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct key);
	__type(value, struct sc_stat);
} stats SEC(".maps");

SEC("raw_tracepoint/sys_enter")
int sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct start s = { .ts = bpf_ktime_get_ns(), .nr = ctx->args[1] };

	bpf_map_update_elem(&start, &tid, &s, BPF_ANY);
	return 0;
}

SEC("raw_tracepoint/sys_exit")
int sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct sc_stat *v, zero = {};
	struct start *s;
	struct key k;
	__u64 delta;

	s = bpf_map_lookup_elem(&start, &tid);
	if (!s)
		return 0;
	delta = bpf_ktime_get_ns() - s->ts;
	k.tid = tid;
	k.nr = s->nr;
	bpf_map_delete_elem(&start, &tid);
	v = bpf_map_lookup_elem(&stats, &k);
	if (!v) {
		bpf_map_update_elem(&stats, &k, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&stats, &k);
		if (!v)
			return 0;
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->total_ns, delta);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
