# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""Benchmark (not a test): the cost of one sample of python3 -m ktau sample
(KTAU signal mode, watermark 1: the kernel's overflow, the signal, the
handler's walk of the Python frames, the return) at a Python stack depth
of 10 and 50 frames. The workload spins at that depth and times its hot
part with time.thread_time() (the sampled thread's CPU time, handler
included; the drainer thread is not counted); the same workload runs
plain and sampled, interleaved, REPS times, minimum kept:

    cost per sample = (sampled - plain) / samples of the run

With --buffered, each depth also runs python3 -m ktau sample --buffered
(the kernel copies the Python stack into every sample, no signal: KTAU
ABI 1.6), and the ratio buffered / signal is printed (target <= 0.5).

Needs a KTAU kernel with sampling (the guest). Usage:
python3 bench/sample_cost.py [--reps N] [--event cpu-clock:1ms] [--iters N] [--buffered]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

WORK = r'''
import sys, time
def spin(n):
    s = 0
    for i in range(n):
        s += i
    return s
def at(depth, n):
    return spin(n) if depth <= 1 else at(depth - 1, n)
depth, n = int(sys.argv[1]), int(sys.argv[2])
t0 = time.thread_time()
at(depth - 6, n)   # the script's <module> and ktau's frames: about 6 more
print("HOT %.9f" % (time.thread_time() - t0))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--event", default="cpu-clock:1ms")
    ap.add_argument("--iters", type=int, default=2000000)
    ap.add_argument("--buffered", action="store_true")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="ktau-bench-sample.")
    w = os.path.join(d, "work.py")
    with open(w, "w") as f:
        f.write(WORK)
    py = sys.executable
    kinds = ("plain", "sampled", "buffered") if a.buffered else ("plain", "sampled")
    print("depth  mode       plain s   sampled s   samples   ns per sample (%s)" % a.event)
    for depth in (10, 50):
        best = {}
        for rep in range(a.reps):
            for k in kinds:
                if k == "plain":
                    cmd = [py, w]
                else:
                    fo = os.path.join(d, "%s%d-%d.folded" % (k, depth, rep))
                    cmd = [py, "-m", "ktau", "sample", "-q", "-e", a.event, "-d", "64",
                           *(["--buffered"] if k == "buffered" else []),
                           "-o", os.path.join(d, "%s%d-%d" % (k, depth, rep)), "--folded", fo,
                           w]
                r = subprocess.run(cmd + [str(depth), str(a.iters)], capture_output=True,
                                   text=True, cwd=d)
                if r.returncode:
                    sys.exit("%s failed:\n%s" % (k, r.stderr))
                t = float(re.search(r"HOT (\S+)", r.stdout).group(1))
                n = 0
                if k != "plain":  # the samples of the hot part: in spin()
                    with open(fo) as f:
                        n = sum(int(ln.rsplit(" ", 1)[1]) for ln in f
                                if not ln.startswith("#") and ";spin (" in ln)
                if k not in best or t < best[k][0]:
                    best[k] = (t, n)
        tp = best["plain"][0]
        per = {}
        for k in kinds[1:]:
            ts, n = best[k]
            per[k] = (ts - tp) * 1e9 / max(n, 1)
            print("%5d  %-8s %9.4f %11.4f %9d %12.0f" % (depth, "signal" if k == "sampled" else k,
                                                        tp, ts, n, per[k]))
        if a.buffered and per["sampled"] > 0:
            print("%5d  buffered/signal %.2f (target <= 0.50)" % (depth,
                                                                per["buffered"] / per["sampled"]))


if __name__ == "__main__":
    _old = tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="ktau-bench.") as tempfile.tempdir:
        main()   # its work directory is made in (and removed with) this one
    tempfile.tempdir = _old
