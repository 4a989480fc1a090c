# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""python3 -m ktau run|sample [options] script.py [args]"""
import argparse
import os
import sys
import threading
import traceback

from . import _ktau, kernel_status, _finish_output, _write_before_exec, _reserve_kernel_names

USAGE = """python3 -m ktau run [-o DIR] [--folded FILE] [-q] script.py [args]
       python3 -m ktau sample [-e SPEC] [-d DEPTH] [--buffered] [-o DIR] [--folded FILE] [-q]
                              script.py [args]

run     deterministic profile: every Python function with calls, inclusive and
        exclusive time and, under it, the kernel routines that ran during it
        (from the thread's KTAU shared page: no system call per Python call)
sample  statistical profile in KTAU's signal mode: each sample has the Python
        stack and the KTAU kernel routine in progress (needs KTAU sampling);
        with --buffered the kernel copies the Python stack into each sample
        itself, no signal per sample (needs KTAU ABI 1.6)
"""


def _parser(mode):
    p = argparse.ArgumentParser(prog="python3 -m ktau %s" % mode, usage=USAGE)
    p.add_argument("-o", "--output", default=None,
                   help="TAU profile directory (default ktau-profile for run, "
                        "ktau-sample for sample; %%p: the pid)")
    p.add_argument("--folded", default=None,
                   help="folded stacks file (default DIR.folded; '' for none)")
    p.add_argument("-q", "--quiet", action="store_true", help="no table on stderr")
    if mode == "sample":
        p.add_argument("-e", "--event", default="cpu-clock:1ms",
                       help="EVENT[:PERIOD] as ktaud sample takes it (default cpu-clock:1ms)")
        p.add_argument("-d", "--depth", type=int, default=128,
                       help="Python frames kept per sample, innermost first (1..512; "
                            "1..128 with --buffered)")
        p.add_argument("--buffered", action="store_true",
                       help="the kernel copies the Python stack into each sample "
                            "(a user stack descriptor, KTAU ABI 1.6): no signal per sample")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    return p


def _load(script):
    try:
        with open(script, "rb") as f:
            src = f.read()
    except OSError as e:
        print("ktau: cannot read %s: %s" % (script, e.strerror), file=sys.stderr)
        sys.exit(2)
    return compile(src, script, "exec")


def _print_tb(e):
    """The traceback from the script's frames on (not ktau's)."""
    tb = e.__traceback__
    while tb and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    traceback.print_exception(type(e), e, tb)


def _run_script(code, script, args, enable=None, disable=None):
    """Run code as __main__ (enable() just before it, disable() just after,
    so that only the script's frames are seen); its exit status."""
    sys.argv[:] = [script] + args
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    globs = {"__name__": "__main__", "__file__": script, "__package__": None,
             "__cached__": None, "__spec__": None, "__builtins__": __builtins__}
    status = 0
    try:
        if enable:
            enable()
        try:
            exec(code, globs)
        finally:
            if disable:
                disable()
    except SystemExit as e:
        status = e.code
    except KeyboardInterrupt as e:
        _print_tb(e)
        status = 130
    except BaseException as e:  # the script raised: report it as python3 would
        _print_tb(e)
        status = 1
    return status


def _join_threads():
    """Wait for the script's non-daemon threads, as the interpreter would."""
    me = threading.current_thread()
    for t in threading.enumerate():
        if t is not me and not t.daemon and t is not threading.main_thread():
            t.join()


def _status(code):
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def cmd_run(opts):
    # %p, %r, %h: expanded here, as libktau would (and read back from there).
    out = _ktau.expand_path(opts.output or "ktau-profile")
    folded = out + ".folded" if opts.folded is None else opts.folded
    code = _load(opts.script)
    ok, msg = kernel_status()
    if not ok:
        print("ktau: %s" % msg, file=sys.stderr)
    # libktau's exit directory: a forked child writes <out>/fork-<pid>.
    _ktau.output(os.path.abspath(out).replace("%", "%%"))
    _reserve_kernel_names()
    registered = _ktau.init()
    if ok and registered != 1:
        print("ktau: the thread's shared page could not be registered: Python functions "
              "only", file=sys.stderr)
    pid = os.getpid()
    done = []

    def write():
        if done and done[0] == os.getpid():
            return
        done[:] = [os.getpid()]
        _ktau.disable()
        threading.setprofile(None)
        try:
            n = _ktau.write(None)
        except OSError as e:
            print("ktau: the profile was not written: %s" % e, file=sys.stderr)
            return
        finally:
            _ktau.output(None)   # written (or said why not): not again at the exit
        if os.getpid() == pid and n:
            _finish_output(out, folded, opts.quiet)
        elif n and not opts.quiet:
            print("ktau: forked process %d: profile in %s/fork-%d" % (
                os.getpid(), out, os.getpid()), file=sys.stderr)

    def undo():
        """An os.exec* that failed: profiling goes on (the profile written
        before it is written again, whole, at the end)."""
        done[:] = []
        _ktau.output(os.path.abspath(out).replace("%", "%%"))
        threading.setprofile(_ktau.thread_hook)
        _ktau.enable()

    restore = _write_before_exec(write, undo)
    threading.setprofile(_ktau.thread_hook)
    try:
        status = _run_script(code, opts.script, opts.args, _ktau.enable, _ktau.disable)
        _join_threads()
    finally:
        write()
        restore()
    return _status(status)


def cmd_sample(opts):
    from . import sample
    return sample.main(opts, _load, _run_script, _join_threads, _status)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0 if argv else 2
    mode, rest = argv[0], argv[1:]
    if mode not in ("run", "sample"):
        sys.stderr.write("ktau: unknown command '%s'\n%s" % (mode, USAGE))
        return 2
    opts = _parser(mode).parse_args(rest)
    return cmd_run(opts) if mode == "run" else cmd_sample(opts)


if __name__ == "__main__":
    sys.exit(main())
