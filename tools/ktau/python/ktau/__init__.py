# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""KTAU profiles of Python programs.

Deterministic mode (``python3 -m ktau run script.py``, ``with ktau.profile()``):
every Python function gets a libktau user timer, started and stopped by a C
profile hook; the kernel routines that end in the thread (system calls,
faults, interrupts, time off the CPU) are read from the thread's KTAU shared
page with plain loads at each call and return, and charged to the Python
function on top of the stack. Output: a TAU profile directory (one file per
Python thread), folded stacks, a short table.

Sample mode (``python3 -m ktau sample script.py``): see ktau.sample.
"""
import os
import sys
import threading

from . import _ktau, tau

__all__ = ["profile", "kernel_status", "Profile"]
__version__ = _ktau.version  # libktau's version (lib/libktau.h)


def kernel_status():
    """(ok, message): whether the kernel has KTAU shared pages (ABI >= 1.1)."""
    try:
        major, minor = _ktau.abi()
    except OSError as e:
        return False, ("this kernel has no KTAU (%s): Python functions only, no kernel "
                       "routines" % (e.strerror or e))
    if (major, minor) < (1, 1):
        return False, ("KTAU ABI %d.%d has no shared pages (1.1 needed): Python functions "
                       "only" % (major, minor))
    return True, "KTAU ABI %d.%d" % (major, minor)


def _reserve_kernel_names():
    """Python functions named like a kernel routine or group ("read",
    "SYSCALL") are written as "read (file:line)": one name, one row."""
    reg = _ktau.registry()
    _ktau.reserve([n for n, _c in reg.values()] + sorted({c for _n, c in reg.values()}) +
                  ["SYSCALL", "IRQ", "BH", "SCHED", "EXCEPT", "SIGNAL", "DYNAMIC", "OTHER",
                   "[outside timers]"])


def _finish_output(d, folded_path, quiet, out=sys.stderr):
    """After the runtime wrote d: folded stacks and the table."""
    try:
        threads = tau.read_dir(d)
    except (OSError, ValueError) as e:
        print("ktau: cannot read back %s: %s" % (d, e), file=out)
        return
    if folded_path:
        try:
            tau.write_folded(folded_path, tau.folded(threads))
        except OSError as e:
            print("ktau: %s" % e, file=out)
    if not quiet:
        print(tau.table(threads), file=out)
        print("ktau: %d thread%s profiled; TAU profile in %s%s" % (
            len(threads), "" if len(threads) == 1 else "s", d,
            ", folded stacks in %s" % folded_path if folded_path else ""), file=out)


class Profile:
    """Profile the calling thread (and threads started meanwhile) for a region:

        with ktau.profile("load", out="ktau-load"):
            load()

    The region is a timer of its own (name), the root of the callpaths of
    the Python functions it calls. At the end the TAU profile is written to
    out (with the folded stacks in out + ".folded" unless folded is "").
    """

    def __init__(self, name="ktau.profile", out="ktau-profile", folded=None, quiet=False,
                 threads=True):
        self.name, self.out, self.quiet, self.threads = name, out, quiet, threads
        self.folded = out + ".folded" if folded is None and out else folded
        self.kernel_ok = None
        self.message = None

    def __enter__(self):
        self.kernel_ok, self.message = kernel_status()
        if not self.kernel_ok and not self.quiet:
            print("ktau: %s" % self.message, file=sys.stderr)
        _reserve_kernel_names()
        _ktau.init()
        # The region writes its own profile at its end; none at the exit.
        _ktau.output(None)
        if self.threads:
            threading.setprofile(_ktau.thread_hook)
        _ktau.enable(self.name)
        return self

    def __exit__(self, *exc):
        _ktau.disable(self.name)
        if self.threads:
            threading.setprofile(None)
        if self.out:
            self.files = _ktau.write(self.out)
            _finish_output(self.out, self.folded, self.quiet)
        return False


profile = Profile


def _write_before_exec(write, undo):
    """Make os.exec* write the profile first (an exec ends the process's
    profile: nothing would be written at its exit); undo() after an exec
    that failed (OSError), before the error goes on to the caller."""
    real_execv, real_execve = os.execv, os.execve

    def execv(path, args):
        write()
        try:
            return real_execv(path, args)
        except OSError:
            undo()
            raise

    def execve(path, args, env):
        write()
        try:
            return real_execve(path, args, env)
        except OSError:
            undo()
            raise

    os.execv, os.execve = execv, execve
    return lambda: (setattr(os, "execv", real_execv), setattr(os, "execve", real_execve))
