// SPDX-License-Identifier: GPL-2.0
/* ktaud functions: the function ID registry (/proc/ktau/functions). */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "ktaud.h"

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud functions [options]\n\n"
"List the function IDs of the running kernel's KTAU registry: ID, group and\n"
"name. IDs of interrupt sources and dynamic points differ from boot to boot.\n\n"
"  -g, --groups LIST    only these groups, comma-separated (syscall, irq,\n"
"                       softirq, sched, fault, signal, dynamic, kvm; as\n"
"                       'ktaud trace -g'); --group is the same\n"
"  -j, --json[=FILE]    a JSON array on stdout instead of the table, or into FILE\n"
"      --force          replace an existing FILE that ktaud did not write\n"
"  -h, --help           this help\n");
}

int cmd_functions(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "groups", required_argument, NULL, 'g' },
		{ "group", required_argument, NULL, 'g' },
		{ "json", optional_argument, NULL, 'j' },
		{ "force", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ktau_registry *reg = NULL;
	char *text = NULL, *line, *save;
	size_t len;
	int c, ret, json = 0, table = 1;
	unsigned int groups = 0;	/* bit per group; 0: all */
	const char *json_path = NULL;
	json_object *arr = NULL;

	while ((c = getopt_long(argc, argv, "g:j::h", opts, NULL)) != -1) {
		switch (c) {
		case 'g': {
			char *list = strdup(optarg), *g, *gsave;
			int group = 0;

			if (!list)
				return report(-ENOMEM, "functions");
			for (g = strtok_r(list, ",", &gsave); g; g = strtok_r(NULL, ",", &gsave)) {
				group = ktau_group_parse(g);
				if (group < 0 || group >= 32)
					break;
				groups |= 1U << group;
			}
			free(list);
			if (group < 0 || group >= 32 || !groups)
				return usage_err("functions", "unknown group in '%s': syscall, irq, "
						 "softirq, sched, fault, signal, dynamic or kvm, "
						 "comma-separated", optarg);
			break;
		}
		case 'j':
			json = 1;
			json_path = optarg;
			/* JSON on stdout takes the table's place. */
			table = optarg && strcmp(optarg, "-");
			break;
		case 'F': out_force = 1; break;
		case 'h': help(stdout); return EX_KT_OK;
		default: return usage_err("functions", "bad option");
		}
	}
	if (optind < argc)
		return usage_err("functions", "unexpected argument '%s'", argv[optind]);
	ret = ktau_registry_load(&reg);
	if (ret)
		return report(ret, "read /proc/ktau/functions");
	ret = ktau_registry_format(reg, NULL, &text, &len);
	if (ret) {
		ktau_registry_free(reg);
		return report(ret, "functions");
	}
	if (json)
		arr = json_object_new_array();
	if (table)
		printf("%6s %-8s %s\n", "id", "group", "name");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long id;
		char *sp = strchr(line, ' '), *sp2;

		if (line[0] == '#' || !sp || !(sp2 = strchr(sp + 1, ' ')))
			continue;
		*sp = *sp2 = '\0';
		id = strtoul(line, NULL, 10);
		c = ktau_group_parse(sp + 1);
		if (groups && (c < 0 || c >= 32 || !(groups & (1U << c))))
			continue;
		if (json) {
			json_object *o = json_object_new_object();

			json_object_object_add(o, "id", json_object_new_int64(id));
			json_object_object_add(o, "group", json_object_new_string(sp + 1));
			json_object_object_add(o, "name", json_object_new_string(sp2 + 1));
			json_object_array_add(arr, o);
		}
		if (table)
			printf("%6lu %-8s %s\n", id, sp + 1, sp2 + 1);
	}
	ret = EX_KT_OK;
	if (json) {
		ret = write_json_doc(arr, json_path);
		json_object_put(arr);
	}
	free(text);
	ktau_registry_free(reg);
	return fflush(stdout) ? EX_KT_FAIL : ret;
}
