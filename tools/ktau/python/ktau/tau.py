# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""Reading the TAU profile files the runtime wrote, and what is made of them:
folded stacks and the short table on stderr."""
import os
import re

_ROW = re.compile(r'^"(.*)" (\d+) (\d+) (\S+) (\S+) (\S+) GROUP="(.*)"$')
_META = re.compile(r"<attribute><name>(.*?)</name><value>(.*?)</value></attribute>")
SEP = " => "
FOLDED_HEAD = "# ktau: folded stacks of a Python program (python3 -m ktau)\n"


class Row:
    __slots__ = ("name", "calls", "subrs", "excl", "incl", "group")

    def __init__(self, name, calls, subrs, excl, incl, group):
        self.name, self.calls, self.subrs = name, calls, subrs
        self.excl, self.incl, self.group = excl, incl, group

    @property
    def path(self):
        return self.name.split(SEP)

    def is_callpath(self):
        return "TAU_CALLPATH" in self.group.split("|")

    def is_user(self):
        return "TAU_USER" in self.group.split("|")

    def is_kgroup(self):
        return "KERNEL_GROUPS" in self.group.split("|")

    def kclass(self):
        for g in self.group.split("|"):
            if g.startswith("KTAU_"):
                return g[5:]
        return None


def read_file(path):
    """(metadata dict, [Row]) of one TAU profile file (the strict form)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        first = f.readline()
        n = int(first.split()[0])
        head = f.readline()
        meta = dict(_META.findall(head))
        rows = []
        for _ in range(n):
            m = _ROW.match(f.readline().rstrip("\n"))
            if not m:
                raise ValueError("%s: not a TAU profile row" % path)
            name, calls, subrs, excl, incl, _pc, group = m.groups()
            rows.append(Row(name, int(calls), int(subrs), float(excl), float(incl), group))
    return meta, rows


def read_dir(d):
    """[(file name, metadata, rows)] of profile.N.C.T files, in thread order."""
    out = []
    names = [f for f in os.listdir(d) if f.startswith("profile.")]

    def key(f):
        return tuple(int(x) if x.isdigit() else 0 for x in f.split(".")[1:])

    for f in sorted(names, key=key):
        meta, rows = read_file(os.path.join(d, f))
        out.append((f, meta, rows))
    return out


def thread_label(meta, fname):
    comm = meta.get("comm", "python")
    return "%s-%s" % (comm, meta.get("tid", fname))


def folded(threads):
    """Folded stacks (µs of exclusive time): 'thread;f;g;[k] read N'."""
    lines = []
    for fname, meta, rows in threads:
        label = thread_label(meta, fname)
        flat_user = {r.name: r for r in rows if r.is_user() and not r.is_callpath()}
        under = {}
        for r in rows:
            if not r.is_callpath():
                continue
            p = r.path
            if r.is_user():
                lines.append((label, p, r.excl))
                under[p[-1]] = under.get(p[-1], 0.0) + r.excl
            elif not r.is_kgroup():
                lines.append((label, p[:-1] + ["[k] " + p[-1]], r.excl))
        # Roots: a flat routine's exclusive time less that of its callpaths.
        for name, r in flat_user.items():
            rest = r.excl - under.get(name, 0.0)
            if rest > 0.5:
                lines.append((label, [name], rest))
    out = []
    for label, p, v in lines:
        v = int(round(v))
        if v > 0:
            out.append("%s;%s %d" % (label, ";".join(x.replace(";", ",") for x in p), v))
    return out


def write_folded(path, lines):
    """Write the folded stacks; never over a file this tool did not write."""
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            if f.readline() != FOLDED_HEAD:
                raise OSError("%s exists and is not folded stacks of ktau: not replaced "
                              "(give another --folded path)" % path)
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "x", encoding="utf-8") as f:
        f.write(FOLDED_HEAD)
        for ln in lines:
            f.write(ln + "\n")
    os.replace(tmp, path)


def summary(threads):
    """Per Python function (over all threads): calls, incl, excl (µs), and the
    kernel under it: system calls, kernel time on the CPU, off-CPU time."""
    fn = {}
    for _fname, _meta, rows in threads:
        for r in rows:
            if r.is_user() and not r.is_callpath():
                s = fn.setdefault(r.name, [0, 0.0, 0.0, 0, 0.0, 0.0])
                s[0] += r.calls
                s[1] += r.incl
                s[2] += r.excl
            elif r.is_callpath() and r.is_kgroup():
                p = r.path
                if len(p) < 2:
                    continue
                s = fn.setdefault(p[-2], [0, 0.0, 0.0, 0, 0.0, 0.0])
                if p[-1] == "SYSCALL":
                    s[3] += r.calls
                if p[-1] == "SCHED":
                    s[5] += r.excl
                else:
                    s[4] += r.excl
    return fn


def table(threads, top=15):
    fn = summary(threads)
    order = sorted(fn.items(), key=lambda kv: -kv[1][1])[:top]
    w = max([len("function")] + [min(len(k), 48) for k, _ in order])
    out = ["%-*s %9s %11s %11s %9s %11s %11s" % (w, "function", "calls", "incl ms", "excl ms",
                                                  "syscalls", "kernel ms", "off-CPU ms")]
    for name, s in order:
        out.append("%-*s %9d %11.3f %11.3f %9d %11.3f %11.3f" % (
            w, name[:48], s[0], s[1] / 1e3, s[2] / 1e3, s[3], s[4] / 1e3, s[5] / 1e3))
    return "\n".join(out)
