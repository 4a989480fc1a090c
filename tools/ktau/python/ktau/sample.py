# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""python3 -m ktau sample: KTAU's signal mode with Python stacks.

Every sampled thread has a kernel sample buffer (watermark 1, SIGPROF): at
each counter overflow the kernel buffers {time, ip, KTAU routine in
progress} and signals the thread; the C handler (_ktau.c, pyframe*.c)
walks the interpreter's frames without allocating, refcounting or taking
the GIL, and stores (code object, instruction offset) pairs with the time
into a per-thread ring. A drainer thread (every 50 ms, under the GIL)
pins the code objects (so that an address always names the same code) and
collects the kernel's records. At the end each kernel record is given the
stack of the first handler run at or after its time: the signal is
delivered at the thread's next return to user mode, before any Python
code runs, so that stack is the one the sample was taken in.
"""
import bisect
import os
import sys
import threading

from . import _ktau, _write_before_exec

KTAU_ID_USER = 10
TRUNCATED, BAD, DROPPED = 0x1, 0x2, 0x4
SEP = " => "
_PKG = os.path.dirname(os.path.abspath(__file__))


class Collected:
    def __init__(self):
        self.threads = {}   # tid -> {"stacks": [...], "krec": [...], "stats": {}}
        self.lock = threading.Lock()

    def add(self, d):
        with self.lock:
            for tid, v in d.items():
                t = self.threads.setdefault(tid, {"stacks": [], "krec": [], "stats": {}})
                t["stacks"].extend(v["stacks"])
                t["krec"].extend(v["krec"])
                t["stats"] = v["stats"]


def _line(code, off):
    """Line of the instruction at offset off (code units) of code."""
    b = off * 2
    for start, end, line in code.co_lines():
        if start <= b < end:
            return line if line is not None else code.co_firstlineno
    return code.co_firstlineno


class Namer:
    """Names of code objects: qualname, or 'qualname (file:line)' when
    another function of that qualified name was named first."""

    def __init__(self):
        self.by_code, self.seen = {}, {}

    def name(self, code):
        # By identity: code objects that compare equal (3.11 leaves the
        # file and qualified name out) are still different functions. The
        # code objects are pinned, so an id is never reused meanwhile.
        n = self.by_code.get(id(code))
        if n is None:
            key = (code.co_filename, code.co_firstlineno)
            n = code.co_qualname
            if self.seen.setdefault(n, key) != key:
                n = "%s (%s:%d)" % (n, os.path.basename(code.co_filename), code.co_firstlineno)
                self.seen.setdefault(n, key)
            self.by_code[id(code)] = n
        return n


def _ours(code):
    f = code.co_filename
    return f.startswith(_PKG + os.sep) or f.endswith(os.sep + "runpy.py") or \
        f == "<frozen runpy>"


def resolve(frames, flags, namer):
    """Outermost-first [(function, 'function (file:line)')] of a handler
    stack, without the frames of ktau and runpy that run the script."""
    if flags & DROPPED:
        return [("[dropped]", "[dropped]")]
    if flags & BAD and not frames:
        return [("[bad stack]", "[bad stack]")]
    out = []
    for code, off in reversed(frames):
        if code is None:
            continue
        out.append((code, off))
    k = 0
    while k < len(out) and _ours(out[k][0]):
        k += 1
    if k == len(out) and out:
        return [("[ktau]", "[ktau]")]
    res = [(namer.name(c), "%s (%s:%d)" % (namer.name(c), os.path.basename(c.co_filename),
                                          _line(c, o))) for c, o in out[k:]]
    if flags & TRUNCATED:
        res.insert(0, ("[truncated]", "[truncated]"))
    return res


def pair(stacks, krec):
    """For each kernel record (time, id, user, ip): the index of the first
    handler stack at or after its time, or None."""
    times = [s[0] for s in stacks]
    return [(r, bisect.bisect_left(times, r[0])) for r in krec]


def build(col, registry, namer):
    """Per thread: ([(stack, routine or None, user)], stats, unpaired)."""
    out = []
    for tid in sorted(col.threads, key=lambda t: (t != os.getpid(), t)):
        t = col.threads[tid]
        stacks = sorted(t["stacks"], key=lambda s: s[0])
        res = [None] * len(stacks)
        samples = []
        used = set()
        for r, i in pair(stacks, sorted(t["krec"])):
            if i < len(stacks):
                if res[i] is None:
                    res[i] = resolve(stacks[i][2], stacks[i][1], namer)
                st = res[i]
                used.add(i)
            else:
                st = [("[no Python stack]", "[no Python stack]")]
            _time, rid, user, _ip = r
            routine = None
            if rid != KTAU_ID_USER:
                routine = registry.get(rid, ("ktau_id_%d" % rid, "OTHER"))
            samples.append((st, routine, user))
        out.append((tid, samples, t["stats"], len(stacks) - len(used)))
    return out


def folded(threads):
    counts = {}
    for tid, samples, _st, _u in threads:
        for st, routine, _user in samples:
            key = ["python-%d" % tid] + [f for _n, f in st]
            if routine:
                key.append("[k] " + routine[0])
            k = ";".join(x.replace(";", ",") for x in key)
            counts[k] = counts.get(k, 0) + 1
    return ["%s %d" % kv for kv in sorted(counts.items())]


# TAU callpaths: at most this many functions and characters (the writer
# keeps 512 bytes of a name); deeper samples count in the inclusive time
# of the deepest callpath kept, and in full in the flat rows and the
# folded stacks.
CALLPATH_DEPTH, CALLPATH_CHARS = 32, 440


def _callpath(names):
    k, length = 0, 0
    while k < len(names) and k < CALLPATH_DEPTH:
        length += len(names[k]) + (len(SEP) if k else 0)
        if length > CALLPATH_CHARS:
            break
        k += 1
    return names[:max(k, 1)]


def rows_of(samples):
    """TAU rows (name, group, calls, subrs, excl, incl) of a thread's samples."""
    flat, paths, kflat, kpath = {}, {}, {}, {}
    # A Python function named like a kernel routine (or group) of the
    # file gets " [python]" everywhere, flat and in callpaths.
    knames = {r[0] for _s, r, _u in samples if r} | {r[1] for _s, r, _u in samples if r}

    def py(n):
        return n + " [python]" if n in knames else n

    for st, routine, _user in samples:
        full = [py(n) for n, _f in st]
        for n in set(full):
            flat.setdefault(n, [0, 0])[1] += 1
        if full and routine is None:
            flat[full[-1]][0] += 1
        names = _callpath(full)
        for i in range(1, len(names) + 1):
            p = SEP.join(names[:i])
            e = paths.setdefault(p, [0, 0])
            e[1] += 1
            # A stack cut short has its leaf below the deepest callpath
            # kept: that callpath's last function did not run the sample
            # itself, and its flat row does not count it exclusive.
            if i == len(names) == len(full) and routine is None:
                e[0] += 1
        if routine:
            kflat.setdefault(routine, 0)
            kflat[routine] += 1
            if names:
                kp = (SEP.join(names + [routine[0]]), routine[1])
                kpath[kp] = kpath.get(kp, 0) + 1
    rows = []
    for n, (ex, inc) in flat.items():
        rows.append((n, "TAU_USER", inc, 0, float(ex), float(inc)))
    for p, (ex, inc) in paths.items():
        if SEP in p:
            rows.append((p, "TAU_CALLPATH|TAU_USER", inc, 0, float(ex), float(inc)))
    for (n, cls), c in kflat.items():
        rows.append((n, "TAU_KERNEL_MERGE|KTAU_%s" % cls, c, 0, float(c), float(c)))
    for (p, cls), c in kpath.items():
        rows.append((p, "TAU_CALLPATH|TAU_KERNEL_MERGE|KTAU_%s" % cls, c, 0, float(c),
                     float(c)))
    return rows


def table(threads, top=15):
    total = sum(len(s) for _t, s, _st, _u in threads) or 1
    incl, excl, kern = {}, {}, {}
    for _tid, samples, _st, _u in threads:
        for st, routine, _user in samples:
            names = [n for n, _f in st]
            for n in set(names):
                incl[n] = incl.get(n, 0) + 1
            if names:
                if routine:
                    kern[names[-1]] = kern.get(names[-1], 0) + 1
                else:
                    excl[names[-1]] = excl.get(names[-1], 0) + 1
    order = sorted(incl.items(), key=lambda kv: -kv[1])[:top]
    w = max([len("function")] + [min(len(k), 48) for k, _ in order])
    out = ["%-*s %8s %7s %8s %7s %8s" % (w, "function", "incl", "incl%", "excl", "excl%",
                                          "kernel")]
    for n, c in order:
        out.append("%-*s %8d %6.1f%% %8d %6.1f%% %8d" % (
            w, n[:48], c, 100.0 * c / total, excl.get(n, 0), 100.0 * excl.get(n, 0) / total,
            kern.get(n, 0)))
    return "\n".join(out)


def write(out, metric, spec, threads, period_ns=None):
    files = []
    for i, (tid, samples, st, unpaired) in enumerate(threads):
        meta = [("pid", str(os.getpid())), ("tid", str(tid)),
                ("KTAU Sample Spec", spec),
                ("KTAU Python Sampler",
                 "python3 -m ktau sample: KTAU signal mode (watermark 1, SIGPROF); the handler "
                 "walks the CPython frames; each kernel sample (metric: samples) has the "
                 "Python stack of the first handler run at or after it"),
                ("KTAU Samples", str(len(samples))),
                ("KTAU Handler Runs", str(st.get("handled", 0))),
                ("KTAU Stacks Truncated", str(st.get("truncated", 0))),
                ("KTAU Stacks Bad", str(st.get("bad", 0))),
                ("KTAU Stacks Dropped", str(st.get("dropped", 0))),
                ("KTAU Stacks Unpaired", str(unpaired)),
                ("KTAU Samples Lost", str(st.get("lost", 0)))]
        files.append(("profile.0.0.%d" % i, metric, rows_of(samples), meta))
    _ktau.write_rows(out, "python-sample", 0, files)


def main(opts, load, run_script, join_threads, status_of):
    from . import tau
    out = _ktau.expand_path(opts.output or "ktau-sample")
    folded_path = out + ".folded" if opts.folded is None else opts.folded
    code = load(opts.script)
    try:
        major, minor = _ktau.abi()
    except OSError as e:
        print("ktau: sample mode needs a kernel with KTAU sampling (ABI 1.1); this one has "
              "no KTAU (%s). Use 'python3 -m ktau run' for a profile without it."
              % (e.strerror or e), file=sys.stderr)
        return 2
    if (major, minor) < (1, 1):
        print("ktau: sample mode needs KTAU ABI 1.1 (sampling); this kernel has %d.%d"
              % (major, minor), file=sys.stderr)
        return 2
    try:
        metric = _ktau.sample_setup(opts.event, opts.depth, False,
                                    getattr(opts, "buffered", False))
    except (OSError, ValueError) as e:
        print("ktau: %s" % e, file=sys.stderr)
        return 2
    col = Collected()
    stop = threading.Event()

    def drainer():
        while not stop.wait(0.05):
            col.add(_ktau.sample_drain())

    pid = os.getpid()
    os.register_at_fork(after_in_child=_ktau.sample_forget)
    dt = threading.Thread(target=drainer, name="ktau-drain", daemon=True)
    dt.start()
    try:
        _ktau.sample_start()
    except OSError as e:
        stop.set()
        print("ktau: cannot sample: %s" % e, file=sys.stderr)
        return 2
    done = []

    def finish():
        """Collect, write the profile, print the table: once, in this process
        (at the end, or before an os.exec*, which ends the sampling)."""
        if done or os.getpid() != pid:
            return 0
        done.append(1)
        threading.setprofile(None)
        stop.set()
        if threading.current_thread() is not dt:
            dt.join()
        col.add(_ktau.sample_drain(True))
        threads = build(col, _ktau.registry(), Namer())
        try:
            write(out, metric, opts.event, threads)
        except (OSError, ValueError) as e:
            print("ktau: the profile was not written: %s" % e, file=sys.stderr)
            return 1
        if folded_path:
            try:
                tau.write_folded(folded_path, folded(threads))
            except OSError as e:
                print("ktau: %s" % e, file=sys.stderr)
        if not opts.quiet:
            n = sum(len(s) for _t, s, _st, _u in threads)
            trunc = sum(st.get("truncated", 0) for _t, _s, st, _u in threads)
            print(table(threads), file=sys.stderr)
            print("ktau: %d samples (%s) in %d thread%s%s; TAU profile in %s%s" % (
                n, opts.event, len(threads), "" if len(threads) == 1 else "s",
                ", %d stacks truncated at %d frames" % (trunc, opts.depth) if trunc else "",
                out, ", folded stacks in %s" % folded_path if folded_path else ""),
                file=sys.stderr)
        return 0

    def undo():
        print("ktau: os.exec* failed: the profile written before it stays; the rest of "
              "the run is not sampled", file=sys.stderr)

    restore = _write_before_exec(finish, undo)
    threading.setprofile(_ktau.sample_thread_hook)
    try:
        status = run_script(code, opts.script, opts.args)
        join_threads()
    finally:
        rc = finish()
        restore()
    return rc or status_of(status)
