// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * libktau: JSON output, with json-c.
 *
 *	{ "format": "ktau-snapshot", "abi": "1.0", "time_ns": ..,
 *	  "delta": false, "base_ns": .., "hostname": .., "release": ..,
 *	  "nmissing": .., "tasks": [ { "pid": .., "tid": .., "comm": ..,
 *	  "aggregate": .., "process": .., "exited": .., "kthread": ..,
 *	  "nthreads": .., "start_ns": .., "stack_overflows": ..,
 *	  "table_overflows": .., "unmatched": .., "total_excl_ns": ..,
 *	  "entries": [ { "id": .., "name": .., "group": .., "count": ..,
 *	  "incl_ns": .., "excl_ns": .., "samples": .. (when sampled) } ] } ] }
 */
#include <errno.h>
#include <string.h>
#include <json-c/json.h>

#include "libktau.h"

static int add(json_object *o, const char *key, json_object *v)
{
	if (!v)
		return -ENOMEM;
	return json_object_object_add(o, key, v) ? -ENOMEM : 0;
}

static json_object *task_json(const struct ktau_task *t, const struct ktau_registry *reg)
{
	json_object *o = json_object_new_object(), *arr, *e;
	char comm[sizeof(t->comm)];
	const char *g;
	size_t i;
	int err = 0;

	if (!o)
		return NULL;
	memcpy(comm, t->comm, sizeof(comm));
	comm[sizeof(comm) - 1] = '\0';
	err |= add(o, "pid", json_object_new_int(t->pid));
	err |= add(o, "tid", json_object_new_int(t->tid));
	err |= add(o, "comm", json_object_new_string(comm));
	err |= add(o, "aggregate", json_object_new_boolean(!!(t->flags & KTAU_TASK_AGGREGATE)));
	err |= add(o, "process", json_object_new_boolean(!!(t->flags & KTAU_TASK_PROCESS)));
	err |= add(o, "exited", json_object_new_boolean(!!(t->flags & KTAU_TASK_EXITED)));
	err |= add(o, "kthread", json_object_new_boolean(!!(t->flags & KTAU_TASK_KTHREAD)));
	err |= add(o, "nthreads", json_object_new_int64(t->nthreads));
	err |= add(o, "start_ns", json_object_new_uint64(t->start_ns));
	err |= add(o, "stack_overflows", json_object_new_uint64(t->stack_overflows));
	err |= add(o, "table_overflows", json_object_new_uint64(t->table_overflows));
	err |= add(o, "unmatched", json_object_new_uint64(t->unmatched));
	err |= add(o, "total_excl_ns", json_object_new_uint64(ktau_task_total_excl(t)));
	arr = json_object_new_array();
	err |= add(o, "entries", arr);
	for (i = 0; !err && i < t->nentries; i++) {
		const struct ktau_func_stat *s = &t->entries[i];

		e = json_object_new_object();
		if (!e || json_object_array_add(arr, e)) {
			json_object_put(e);
			err = -ENOMEM;
			break;
		}
		g = ktau_group_name(ktau_func_group(reg, s->id));
		err |= add(e, "id", json_object_new_int64(s->id));
		err |= add(e, "name", json_object_new_string(ktau_func_name(reg, s->id)));
		err |= add(e, "group", json_object_new_string(g ? g : "unknown"));
		err |= add(e, "count", json_object_new_uint64(s->count));
		err |= add(e, "incl_ns", json_object_new_uint64(s->incl_ns));
		err |= add(e, "excl_ns", json_object_new_uint64(s->excl_ns));
		if (s->samples)
			err |= add(e, "samples", json_object_new_uint64(s->samples));
	}
	if (err) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

int ktau_write_json(FILE *f, const struct ktau_snap *snap,
		    const struct ktau_registry *reg, int pretty)
{
	json_object *root = json_object_new_object(), *tasks, *t;
	const char *text;
	size_t i;
	int err = 0;

	if (!root)
		return -ENOMEM;
	err |= add(root, "format", json_object_new_string("ktau-snapshot"));
	err |= add(root, "abi", json_object_new_string("1.0"));
	err |= add(root, "time_ns", json_object_new_uint64(snap->time_ns));
	err |= add(root, "delta", json_object_new_boolean(snap->is_delta));
	err |= add(root, "base_ns", json_object_new_uint64(snap->base_ns));
	err |= add(root, "hostname", json_object_new_string(snap->hostname));
	err |= add(root, "release", json_object_new_string(snap->release));
	err |= add(root, "wall_ns", json_object_new_uint64(snap->wall_ns));
	err |= add(root, "boot_id", json_object_new_string(snap->boot_id));
	err |= add(root, "nmissing", json_object_new_int64(snap->nmissing));
	tasks = json_object_new_array();
	err |= add(root, "tasks", tasks);
	for (i = 0; !err && i < snap->ntasks; i++) {
		t = task_json(&snap->tasks[i], reg);
		if (!t || json_object_array_add(tasks, t)) {
			json_object_put(t);
			err = -ENOMEM;
		}
	}
	if (!err) {
		text = json_object_to_json_string_ext(root, pretty ? JSON_C_TO_STRING_PRETTY |
						      JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN);
		if (!text || fputs(text, f) < 0 || fputc('\n', f) < 0)
			err = -EIO;
	}
	json_object_put(root);
	return err ? (err < 0 ? err : -ENOMEM) : 0;
}
