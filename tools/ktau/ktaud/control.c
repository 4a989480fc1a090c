// SPDX-License-Identifier: GPL-2.0
/* ktaud control: show or switch the instrumentation groups, reset. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ktaud.h"

static void help(FILE *f)
{
	fprintf(f,
"Usage: ktaud control                     show the groups and table sizes\n"
"       ktaud control <group>|all on|off   switch groups on or off\n"
"       ktaud control reset                zero the aggregate and every\n"
"                                          user task's table\n\n"
"Groups: syscall, irq, softirq, sched, fault, signal, dynamic, kvm.\n"
"Changing anything needs CAP_PERFMON or CAP_SYS_ADMIN.\n\n"
"  -h, --help           this help\n");
}

int cmd_control(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char cmd[64], *text;
	int c, ret;

	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'h': help(stdout); return EX_KT_OK;
		default: return usage_err("control", "bad option");
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0) {
		ret = ktau_control_read(&text);
		if (ret)
			return report(ret, "read /proc/ktau/control");
		fputs(text, stdout);
		free(text);
		return EX_KT_OK;
	}
	if (argc == 1 && !strcmp(argv[0], "reset")) {
		snprintf(cmd, sizeof(cmd), "reset");
	} else if (argc == 2) {
		if (strcmp(argv[0], "all") && ktau_group_parse(argv[0]) < 0)
			return usage_err("control", "unknown group '%s': syscall, irq, softirq, "
					 "sched, fault, signal, dynamic or all", argv[0]);
		if (strcmp(argv[1], "on") && strcmp(argv[1], "off"))
			return usage_err("control", "say 'on' or 'off', not '%s'", argv[1]);
		snprintf(cmd, sizeof(cmd), "%s %s", argv[0], argv[1]);
	} else {
		return usage_err("control", "expected '<group> on|off', 'all on|off' or 'reset'");
	}
	ret = ktau_control(cmd);
	if (ret == -EPERM || ret == -EACCES) {
		err_msg("writing /proc/ktau/control needs CAP_PERFMON or CAP_SYS_ADMIN: "
			"run as root or with that capability");
		return EX_KT_PERM;
	}
	if (ret)
		return report(ret, "write /proc/ktau/control");
	return EX_KT_OK;
}
