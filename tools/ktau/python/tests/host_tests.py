# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""Host tests of the Python package ktau (no KTAU needed): usage
host_tests.py CASE WORKDIR; exit 0 pass, 1 fail, 77 skip. The package must
be importable (PYTHONPATH: the build's lib directory)."""
import os
import signal
import subprocess
import sys
import textwrap

import ktau
from ktau import tau

PY = sys.executable


def fail(msg):
    print("# " + msg.replace("\n", "\n# "))
    sys.exit(1)


def script(work, name, body):
    p = os.path.join(work, name)
    with open(p, "w") as f:
        f.write(textwrap.dedent(body))
    return p


def run(work, args, expect=0):
    env = dict(os.environ)
    r = subprocess.run([PY, "-m", "ktau"] + args, cwd=work, env=env, capture_output=True,
                       text=True, timeout=120)
    if r.returncode != expect:
        fail("python3 -m ktau %s: exit %d, expected %d\n%s%s" % (
            " ".join(args), r.returncode, expect, r.stdout, r.stderr))
    return r


def rows(d, thread=0):
    threads = tau.read_dir(d)
    return {r.name: r for r in threads[thread][2]}, threads


# Exact calls per function and callpath; the table and the no-KTAU message.
def case_run_counts(work):
    s = script(work, "counts.py", """
        def leaf(i):
            return i * 2
        def mid(n):
            s = 0
            for i in range(n):
                s += leaf(i)
            return s
        def SCHED():
            return 0
        def main():
            for _ in range(7):
                mid(3)
            leaf(0)
            SCHED()
        main()
    """)
    r = run(work, ["run", "-o", "p-counts", s])
    if not os.path.exists("/proc/ktau") and "no KTAU" not in r.stderr:
        fail("no message about the missing KTAU:\n" + r.stderr)
    if "main" not in r.stderr or "TAU profile in p-counts" not in r.stderr:
        fail("no table:\n" + r.stderr)
    rw, threads = rows(os.path.join(work, "p-counts"))
    want = {"main": 1, "mid": 7, "leaf": 22, "<module> => main => mid": 7,
            "<module> => main => mid => leaf": 21, "<module> => main => leaf": 1,
            "<module>": 1}
    for name, calls in want.items():
        if name not in rw or rw[name].calls != calls:
            fail("%s: %s calls, expected %d" % (name, rw[name].calls if name in rw else "no",
                                                 calls))
    if not any(n.startswith("SCHED (counts.py:") for n in rw) or "SCHED" in rw:
        fail("a Python function named like a kernel group is not told apart: %s" % sorted(rw))
    if any("_run_script" in n or "runpy" in n for n in rw):
        fail("ktau's own frames are in the profile")
    if len(threads) != 1:
        fail("%d threads" % len(threads))
    with open(os.path.join(work, "p-counts.folded")) as f:
        lines = f.read().splitlines()
    if lines[0] != tau.FOLDED_HEAD.strip() or not any(
            ln.split(" ")[0].endswith(";<module>;main;mid;leaf") for ln in lines[1:]):
        fail("folded stacks:\n" + "\n".join(lines))
    # A second run replaces what the first wrote.
    run(work, ["run", "-q", "-o", "p-counts", s])


# Threads started with threading are profiled, each a file of its own.
def case_threads(work):
    s = script(work, "threads.py", """
        import threading
        def work(n):
            return sum(range(n))
        def body():
            for _ in range(5):
                work(1000)
        ts = [threading.Thread(target=body) for _ in range(3)]
        for t in ts: t.start()
        for t in ts: t.join()
        # one that ends after the script: still joined and written
        threading.Thread(target=body).start()
    """)
    run(work, ["run", "-q", "-o", "p-threads", s])
    threads = tau.read_dir(os.path.join(work, "p-threads"))
    if len(threads) != 5:
        fail("%d thread files, expected 5" % len(threads))
    for fname, meta, rs in threads[1:]:
        rw = {r.name: r for r in rs}
        if rw.get("body") is None or rw["body"].calls != 1 or rw["work"].calls != 5:
            fail("%s: body/work calls wrong" % fname)
        if "Thread.run => body => work" not in rw:
            fail("%s: no callpath Thread.run => body => work" % fname)


# A script that raises, exits with a status, is interrupted: the status of
# python3, and the profile is written.
def case_exit_status(work):
    for name, body, rc in (
            ("raises.py", "def f():\n    raise ValueError('x')\nf()\n", 1),
            ("exits.py", "import sys\ndef f():\n    sys.exit(3)\nf()\n", 3),
            ("intr.py", "def f():\n    raise KeyboardInterrupt\nf()\n", 130)):
        s = script(work, name, body)
        d = "p-" + name[:-3]
        r = run(work, ["run", "-q", "-o", d, s], expect=rc)
        rw, _ = rows(os.path.join(work, d))
        if rw.get("f") is None or rw["f"].calls != 1:
            fail("%s: f not profiled" % name)
        if rc != 3 and name[:-3] not in ("exits",) and "Traceback" not in r.stderr:
            fail("%s: no traceback" % name)
        if "_run_script" in r.stderr:
            fail("%s: ktau's frames in the traceback:\n%s" % (name, r.stderr))


# fork: the child writes <dir>/fork-<pid>; exec: what ran before is written.
def case_fork_exec(work):
    s = script(work, "forker.py", """
        import os, sys
        def child():
            return sum(range(100))
        def parent():
            pid = os.fork()
            if pid == 0:
                child()
                sys.exit(0)
            os.waitpid(pid, 0)
        def before_exec():
            os.execv(sys.executable, [sys.executable, "-c", "pass"])
        parent()
        before_exec()
    """)
    d = os.path.join(work, "p-fork")
    import shutil
    shutil.rmtree(d, ignore_errors=True)   # fork-<pid> of earlier runs stay
    run(work, ["run", "-q", "-o", "p-fork", s])
    forks = [x for x in os.listdir(d) if x.startswith("fork-")]
    if len(forks) != 1:
        fail("fork directories: %s" % forks)
    rw, _ = rows(os.path.join(d, forks[0]))
    if rw.get("child") is None or rw["child"].calls != 1:
        fail("the child's profile has no child()")
    rw, _ = rows(d)
    if rw.get("parent") is None or rw.get("before_exec") is None:
        fail("the profile written before exec lacks parent or before_exec")


# with ktau.profile(name): the region is the root of the callpaths.
def case_region_api(work):
    s = script(work, "region.py", """
        import ktau
        def inner(): return 1
        def work():
            for _ in range(4): inner()
        def outside(): return 2
        outside()
        with ktau.profile("region", out="p-region", quiet=True):
            work()
        outside()
    """)
    env = dict(os.environ)
    r = subprocess.run([PY, s], cwd=work, env=env, capture_output=True, text=True, timeout=60)
    if r.returncode:
        fail(r.stderr)
    rw, _ = rows(os.path.join(work, "p-region"))
    if rw.get("region") is None or rw["region"].calls != 1:
        fail("no region timer")
    if "region => work => inner" not in rw or rw["region => work => inner"].calls != 4:
        fail("no callpath region => work => inner with 4 calls: %s" % sorted(rw))
    if "outside" in rw:
        fail("a function outside the region was profiled")


# The folded file never replaces a file ktau did not write; the TAU
# directory never takes others' files.
def case_keeps_foreign(work):
    s = script(work, "tiny.py", "def f(): pass\nf()\n")
    with open(os.path.join(work, "mine.folded"), "w") as f:
        f.write("my own data 1\n")
    r = run(work, ["run", "-q", "-o", "p-tiny", "--folded", "mine.folded", s])
    with open(os.path.join(work, "mine.folded")) as f:
        if f.read() != "my own data 1\n":
            fail("a foreign folded file was replaced")
    if "not replaced" not in r.stderr:
        fail("no message:\n" + r.stderr)
    os.makedirs(os.path.join(work, "p-other"), exist_ok=True)
    with open(os.path.join(work, "p-other", "notes.txt"), "w") as f:
        f.write("keep\n")
    r = run(work, ["run", "-q", "-o", "p-other", s])
    if "not written" not in r.stderr or os.listdir(os.path.join(work, "p-other")) != \
            ["notes.txt"]:
        fail("a directory with others' files was written to:\n" + r.stderr)


# A sample-mode write that fails part way (RLIMIT_FSIZE on its second
# file) leaves none of its files: no profile that looks whole but lacks
# a thread; and the error says so.
def case_write_rows_fails(work):
    out = os.path.join(work, "p-fails")
    s = script(work, "fails.py", """
        import resource, signal, sys
        from ktau import _ktau
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        def rows(n):
            return [("f%d" % i, "TAU_PYTHON", 1, 0, 1.0, 1.0) for i in range(n)]
        files = [("profile.0.0.0", "TIME", rows(3), [("Name", "one")]),
                 ("profile.0.0.1", "TIME", rows(4000), [("Name", "two")])]
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
        try:
            _ktau.write_rows(sys.argv[1], "python-sample", 0, files)
        except OSError as e:
            import errno
            print("refused:", e, "EFBIG" if e.errno == errno.EFBIG else e.errno)
            sys.exit(0)
        sys.exit(3)
        """)
    r = subprocess.run([PY, s, out], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("write_rows over RLIMIT_FSIZE: exit %d (3: no error)\n%s%s" % (
            r.returncode, r.stdout, r.stderr))
    if "File too large" not in r.stdout or "EFBIG" not in r.stdout:
        fail("the error does not say why (OSError with errno EFBIG): " + r.stdout)
    left = sorted(f for f in os.listdir(out) if not f.startswith(".ktau-written"))
    if left:
        fail("files left after the failed write: %s" % left)


# Sample mode on a kernel without KTAU: refused with a message, exit 2.
def case_sample_refuses(work):
    if os.path.exists("/proc/ktau"):
        print("# SKIP: this kernel has KTAU")
        return 77
    s = script(work, "tiny2.py", "pass\n")
    r = run(work, ["sample", "-o", "p-s", s], expect=2)
    if "needs a kernel with KTAU sampling" not in r.stderr:
        fail(r.stderr)
    r = run(work, ["frob", s], expect=2)
    return 0


# The signal handler's frame walk on this CPython, without KTAU: SIGPROF
# from setitimer(ITIMER_PROF) runs the same handler; its stacks must name
# the functions running, with lines inside them, truncated and counted
# beyond the depth, in threads too, and survive functions created and
# freed while sampled. Buffered samples' frames being set up (before the
# code's first RESUME, CPython's _PyFrame_IsIncomplete()) are dropped as
# the walker skips them: the test of frame_incomplete() on code with and
# without cells (whose first RESUME comes after MAKE_CELL).
def case_walker(work):
    s = script(work, "walker.py", """
        import dis, signal, sys, threading
        from ktau import _ktau, sample
        def plain(n):
            return n + 1
        def outer():
            x = 1
            def inner():
                return x
            return inner
        for f in (plain, outer):
            ops = [i.opname for i in dis.get_instructions(f, show_caches=True)]
            first = ops.index("RESUME")
            assert _ktau.frame_incomplete(f.__code__, -1), f
            assert _ktau.frame_incomplete(f.__code__, first - 1), (f, first)
            assert not _ktau.frame_incomplete(f.__code__, first), (f, first)
            assert not _ktau.frame_incomplete(f.__code__, first + 1), (f, first)
            print("first RESUME of %s at %d" % (f.__name__, first))
        assert ops.index("RESUME") > 0, ops
        _ktau.sample_setup("cpu-clock:1ms", 16, True)
        _ktau.sample_start()
        def spin(n):
            s = 0
            for i in range(n):
                s += i
            return s
        def deep(n):
            return spin(3000000) if n == 0 else deep(n - 1)
        def fresh(i):
            # a code object made and freed while sampling
            ns = {}
            exec(compile("def f%d(n):\\n    s = 0\\n    for i in range(n): s += i\\n    return s\\n"
                         % i, "<fresh>", "exec"), ns)
            return ns["f%d" % i](200000)
        def in_thread():
            _ktau.sample_start()
            spin(3000000)
        signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)
        spin(3000000)
        deep(40)
        for i in range(50):
            fresh(i)
        t = threading.Thread(target=in_thread)
        t.start(); t.join()
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        # A walk that faults (a frame chain caught mid-update): the process
        # lives, the stack is bad, with no frames.
        _ktau.sample_test_fault()
        _ktau.sample_test_fault()
        d = _ktau.sample_drain(True)
        faulted = [s for v in d.values() for s in v["stacks"] if s[1] & 0x8]
        assert len(faulted) == 2 and all(s[1] & sample.BAD and not s[2] for s in faulted), faulted
        assert sample.resolve((), faulted[0][1], sample.Namer()) == [("[bad stack]",) * 2]
        for v in d.values():
            v["stacks"] = [s for s in v["stacks"] if not s[1] & 0x8]
        namer = sample.Namer()
        tot = trunc = 0
        names = set()
        for tid, v in d.items():
            for time_ns, flags, frames in v["stacks"]:
                tot += 1
                st = sample.resolve(frames, flags, namer)
                if flags & sample.TRUNCATED:
                    trunc += 1
                    assert st[0][0] == "[truncated]", st
                    assert len(frames) == 16, len(frames)
                names.update(n for n, _f in st)
                for n, f in st:
                    if n == "spin":
                        line = int(f.rsplit(":", 1)[1].rstrip(")"))
                        lo = spin.__code__.co_firstlineno
                        assert lo <= line <= lo + 4, f
        print("samples", tot, "truncated", trunc, "threads", len(d), sorted(names))
        assert {"spin", "deep", "in_thread"} <= names, names
        assert trunc > 0 and tot > 20 and len(d) == 2
    """)
    env = dict(os.environ)
    r = subprocess.run([PY, s], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    print("# " + r.stdout.strip())
    if r.returncode:
        fail(r.stdout + r.stderr)
    # The walk's fault guard leaves every other fault as it was: a crash.
    s = script(work, "segv.py", """
        import ctypes
        from ktau import _ktau
        _ktau.sample_setup("cpu-clock:1ms", 16, True)
        _ktau.sample_start()
        _ktau.sample_test_fault()
        print("guarded", flush=True)
        ctypes.string_at(8)
        print("not reached", flush=True)
    """)
    r = subprocess.run([PY, s], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    if r.returncode != -signal.SIGSEGV or r.stdout != "guarded\n":
        fail("a fault outside the walk: exit %s, %r %r" % (r.returncode, r.stdout, r.stderr))


# The sample mode's TAU rows and folded stacks from made-up samples: deep
# stacks (callpaths capped so that names stay unique), kernel routines
# under the Python function, a Python function named like a routine.
def case_sample_rows(work):
    from ktau import sample
    deep = [("[truncated]", "[truncated]")] + [("deep", "deep (d.py:3)")] * 64
    rd = ("read", "SYSCALL")
    # Cut short with its leaf below the deepest callpath kept: that
    # callpath's last function ("outer") is not exclusive there (the strict
    # checker compares it with its flat row; seen on the debug kernel).
    cut = [("outer", "outer (o.py:1)")] * 40 + [("leaf", "leaf (o.py:5)")]
    samples = [(deep, None, 1), (deep, rd, 0), (cut, None, 1),
               ([("main", "main (m.py:9)"), ("read", "read (m.py:2)")], None, 1),
               ([("main", "main (m.py:9)"), ("read", "read (m.py:2)")], rd, 0),
               ([("[no Python stack]", "[no Python stack]")], None, 1)]
    threads = [(100, samples, {"handled": 5, "truncated": 2}, 0)]
    d = os.path.join(work, "p-sample-rows")
    sample.write(d, "cpu-clock", "cpu-clock:1ms", threads)
    rw, _ = rows(d)
    want = {"deep": (1, 2), "outer": (0, 1), "leaf": (1, 1),
            "read [python]": (1, 2), "main => read [python]": None,
            "main => read [python] => read": (1, 1), "read": (2, 2)}
    for name, v in want.items():
        if v is None:
            continue
        if name not in rw or (rw[name].excl, rw[name].incl) != v:
            fail("%s: %s, expected excl/incl %s" % (
                name, (rw[name].excl, rw[name].incl) if name in rw else "missing", v))
    if max(len(n) for n in rw) > 500:
        fail("a callpath longer than the writer keeps")
    for name, r in rw.items():
        if " => " in name and name.split(" => ")[-1] == "outer" and r.excl:
            fail("%s: excl %s, but outer never ran a sample itself" % (name[:60], r.excl))
    lines = sample.folded(threads)
    if "python-100;main (m.py:9);read (m.py:2);[k] read 1" not in lines or \
            not any(ln.startswith("python-100;[truncated];deep (d.py:3);") for ln in lines):
        fail("folded:\n" + "\n".join(lines))


# pip install --no-build-isolation of the package, offline, into a target.
def case_pip_install(work):
    import shutil
    here = os.path.dirname(os.path.abspath(__file__))
    top = os.path.join(here, "..", "..", "..", "..")
    # A copy of what the build reads, so that pip's in-tree build leaves the
    # source tree as it is.
    copy = os.path.join(work, "pip-src")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(os.path.join(here, ".."), os.path.join(copy, "tools/ktau/python"),
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    shutil.copytree(os.path.join(top, "tools/ktau/lib"), os.path.join(copy, "tools/ktau/lib"))
    shutil.copytree(os.path.join(top, "include/uapi"), os.path.join(copy, "include/uapi"))
    src = os.path.join(copy, "tools/ktau/python")
    tgt = os.path.join(work, "pip-target")
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    r = subprocess.run([PY, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                        "--target", tgt, src], env=env, capture_output=True, text=True,
                       timeout=600)
    if r.returncode:
        fail("pip install failed:\n" + r.stdout + r.stderr)
    env["PYTHONPATH"] = tgt
    r = subprocess.run([PY, "-c", "import ktau, ktau._ktau; print(ktau.__file__)"], env=env,
                       capture_output=True, text=True, cwd=work)
    if r.returncode or not r.stdout.startswith(tgt):
        fail("the installed package does not import:\n" + r.stdout + r.stderr)


def main():
    case, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    fn = globals().get("case_" + case)
    if not fn:
        print("# no case %s" % case)
        return 2
    return fn(work) or 0


if __name__ == "__main__":
    sys.exit(main())
