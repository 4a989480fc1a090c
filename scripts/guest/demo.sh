# SPDX-License-Identifier: GPL-2.0
# The demo workload: shows what KTAU sees in the guest.
echo "== kernel: $(uname -r)"
echo "== /proc/ktau:"
ls /proc/ktau
echo "== KTAU ABI version: $(cat /proc/ktau/version)"
