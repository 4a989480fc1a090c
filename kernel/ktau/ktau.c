// SPDX-License-Identifier: GPL-2.0-only
/*
 * KTAU: exact per-task kernel profiles, exported through /proc/ktau.
 */

#include <linux/init.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <uapi/linux/ktau.h>

static int ktau_version_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%u.%u\n", KTAU_ABI_VERSION_MAJOR, KTAU_ABI_VERSION_MINOR);
	return 0;
}

static int __init ktau_proc_init(void)
{
	struct proc_dir_entry *dir;

	dir = proc_mkdir("ktau", NULL);
	if (!dir)
		return -ENOMEM;
	if (!proc_create_single("version", 0444, dir, ktau_version_show)) {
		remove_proc_subtree("ktau", NULL);
		return -ENOMEM;
	}
	return 0;
}
fs_initcall(ktau_proc_init);
