# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""Benchmark (not a test): the cost of python3 -m ktau run (deterministic
mode) against cProfile on a function-call-heavy script, side by side in
one run: each variant runs the same workload in a subprocess, interleaved,
REPS times; the workload times only its hot part (CPU time of the
process, time.process_time) and prints it; the minimum per variant is
kept. Prints a table and the ratios:

    slowdown = profiled / plain; overhead ratio = (ktau - plain) / (cProfile - plain)

Usage: python3 bench/overhead.py [--reps N] [--calls N] [--csv FILE]
(with the package importable: PYTHONPATH=<build>/python/lib).
"""
import argparse
import os
import subprocess
import sys
import tempfile

WORK = r'''
import sys, time
class P:
    def __init__(self, v): self.v = v
    def get(self): return self.v
def leaf(x): return x + 1
def mid(x): return leaf(x) + leaf(x)
def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)
def hot(n):
    s = 0
    for i in range(n):
        s += mid(i) + P(i).get()
    return s + fib(18)
t0 = time.process_time()
hot(int(sys.argv[1]))
print("HOT %.9f" % (time.process_time() - t0))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=100000)
    ap.add_argument("--csv")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="ktau-bench-py.")
    w = os.path.join(d, "work.py")
    with open(w, "w") as f:
        f.write(WORK)
    py = sys.executable
    variants = {
        "plain": [py, w],
        "cProfile": [py, "-m", "cProfile", "-o", os.path.join(d, "cprof.out"), w],
        "ktau run": [py, "-m", "ktau", "run", "-q", "-o", os.path.join(d, "ktau"),
                     "--folded", "", w],
    }
    best = {k: None for k in variants}
    for _ in range(a.reps):
        for k, cmd in variants.items():
            r = subprocess.run(cmd + [str(a.calls)], capture_output=True, text=True, cwd=d)
            if r.returncode:
                sys.exit("%s failed:\n%s" % (k, r.stderr))
            t = float([ln for ln in r.stdout.splitlines() if ln.startswith("HOT ")][0][4:])
            best[k] = t if best[k] is None else min(best[k], t)
    # Python calls in the hot part (per call of hot: 5 per iteration, and fib(18)).
    ncalls = 5 * a.calls + 8361 + 1
    plain = best["plain"]
    print("variant      CPU s (min of %d)   slowdown   ns per Python call added" % a.reps)
    for k, t in best.items():
        print("%-12s %12.4f %14.2fx %14.1f" % (k, t, t / plain, (t - plain) * 1e9 / ncalls))
    ratio = (best["ktau run"] - plain) / (best["cProfile"] - plain)
    print("overhead ratio ktau run / cProfile: %.2f (%d Python calls)" % (ratio, ncalls))
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("variant,cpu_s,slowdown\n")
            for k, t in best.items():
                f.write("%s,%.6f,%.4f\n" % (k, t, t / plain))
            f.write("ratio_ktau_over_cprofile,%.4f,\n" % ratio)


if __name__ == "__main__":
    _old = tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="ktau-bench.") as tempfile.tempdir:
        main()   # its work directory is made in (and removed with) this one
    tempfile.tempdir = _old
