# SPDX-License-Identifier: GPL-2.0
"""Print the files of Debian's python3 that the guest's Python tests need:
the interpreter, the standard library modules that the ktau package, the
tests and their workloads import (found by importing them here, with the
ktau package on sys.path), and the encodings Python starts with. The
image gets these and nothing else of the 50 MB standard library; the
shared libraries are added by build-image.sh with ldd."""
import os
import sys

# What the tests and workloads import beyond the ktau package.
EXTRA = ["argparse", "bisect", "re", "textwrap", "threading", "traceback", "subprocess",
         "signal", "shutil", "tempfile", "time", "json", "random", "encodings.latin_1",
         "encodings.ascii", "encodings.utf_8", "encodings.aliases", "runpy",
         "importlib.machinery", "importlib.util", "pkgutil", "cProfile", "pstats", "optparse"]

for m in EXTRA + ["ktau", "ktau.__main__", "ktau.sample", "ktau.tau"]:
    __import__(m)
stdlib = os.path.dirname(os.__file__)
files = {os.path.realpath(sys.executable)}
for m in list(sys.modules.values()):
    f = getattr(m, "__file__", None)
    if f and os.path.realpath(f).startswith(stdlib + os.sep):
        files.add(f)
for f in sorted(files):
    print(f)
