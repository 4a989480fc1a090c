// SPDX-License-Identifier: GPL-2.0
/*
 * KTAU ABI basics: /proc/ktau exists and reports the ABI version this
 * test was built against.
 */
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <linux/ktau.h>

#include "../kselftest_harness.h"

TEST(version_matches_header)
{
	unsigned int major = 0, minor = 0;
	FILE *f = fopen("/proc/ktau/version", "r");

	ASSERT_NE(NULL, f) TH_LOG("no /proc/ktau/version: kernel without CONFIG_KTAU?");
	ASSERT_EQ(2, fscanf(f, "%u.%u", &major, &minor));
	fclose(f);
	EXPECT_EQ(KTAU_ABI_VERSION_MAJOR, major);
	EXPECT_LE(KTAU_ABI_VERSION_MINOR, minor);
}

TEST(version_is_read_only)
{
	/* Root may open it for writing (DAC override); no write succeeds. */
	int fd = open("/proc/ktau/version", O_WRONLY);

	if (fd >= 0) {
		EXPECT_GT(0, write(fd, "2.0\n", 4));
		close(fd);
	}
}

TEST_HARNESS_MAIN
