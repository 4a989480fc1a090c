# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""Build of the ktau package: the C extension _ktau links libktau's sources
(tools/ktau/lib, without the parts that need json-c or capstone) and the
frame walker of the running CPython version (src/pyframe3XX.c)."""
import os
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = os.path.join(HERE, "..", "lib")
# The kernel's uapi header <linux/ktau.h>: the repository's, or the copy
# next to tools/ktau that the Debian build (scripts/tools-deb.sh) makes.
UAPI_DIRS = [os.path.join(HERE, "..", "..", "..", "include", "uapi"),
             os.path.join(HERE, "..", "uapi")]
UAPI = next((d for d in UAPI_DIRS if os.path.isfile(os.path.join(d, "linux", "ktau.h"))), None)
if UAPI is None:
    sys.exit("ktau: no linux/ktau.h under %s" % " or ".join(UAPI_DIRS))

# libktau without json.c (json-c), callgraph.c and drill.c (capstone) and
# instrument.c (-finstrument-functions hooks: not for an extension).
SKIP = {"json.c", "callgraph.c", "drill.c", "instrument.c"}
lib_srcs = sorted(os.path.join("..", "lib", f) for f in os.listdir(LIB)
                  if f.endswith(".c") and f not in SKIP)

# One version number: libktau's (lib/libktau.h, LIBKTAU_VERSION).
with open(os.path.join(LIB, "libktau.h"), encoding="utf-8") as f:
    VERSION = next(l.split('"')[1] for l in f if l.startswith("#define LIBKTAU_VERSION "))

# The one version-specific file: CPython's frame layout.
WALKERS = {(3, 11): "src/pyframe311.c"}
walker = WALKERS.get(sys.version_info[:2])
if walker is None:
    sys.exit("ktau: no frame walker for CPython %d.%d (have: %s); add src/pyframe%d%d.c"
             % (sys.version_info[:2] + (", ".join("%d.%d" % v for v in WALKERS),)
                + sys.version_info[:2]))

ext = Extension(
    "ktau._ktau",
    sources=["src/_ktau.c", walker] + lib_srcs,
    include_dirs=["src", os.path.join("..", "lib"), UAPI],
    define_macros=[("_GNU_SOURCE", "1")],
    extra_compile_args=["-std=gnu11", "-Wall", "-Wextra", "-Werror",
                        "-Wno-missing-field-initializers", "-Wno-cast-function-type",
                        "-fvisibility=hidden"],
    libraries=["m", "iberty"],
)

setup(
    name="ktau",
    version=VERSION,
    description="KTAU profiles of Python programs: Python functions with the kernel "
                "routines that ran on their behalf",
    packages=["ktau"],
    ext_modules=[ext],
    python_requires=">=3.11",
)
