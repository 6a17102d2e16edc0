"""Builds the hrx._hrx extension from csrc/ (C11, no GPU SDK needed).

HRX_TESTING_BUILD=1 builds the testing variant of the same extension that
the test suite runs against (see the Makefile): it adds fault injection
(csrc/backends/fault, $HRX_FAULTS) and the test hooks (csrc/testing,
csrc/python/testing.c). Without it, as for every user's `pip install .`,
none of that is compiled in.
"""
import glob
import os

from setuptools import Extension, setup

ROOT = os.path.dirname(os.path.abspath(__file__))
SWITCH = "HRX_TESTING_BUILD"


def testing_build():
    value = os.environ.get(SWITCH, "").strip()
    if value not in ("", "0", "1"):
        raise SystemExit(f"{SWITCH} must be 1 (testing build) or 0 / unset "
                         f"(the product), got {value!r}")
    return value == "1"


def sources(testing):
    patterns = ["csrc/core/*.c", "csrc/bench/*.c", "csrc/backends/host/*.c",
                "csrc/backends/hip/*.c", "csrc/python/*.c"]
    if testing:
        patterns.append("csrc/backends/fault/*.c")
    found = []
    for pattern in patterns:
        found += sorted(glob.glob(os.path.join(ROOT, pattern)))
    return [os.path.relpath(path, ROOT) for path in found]


TESTING = testing_build()
extension = Extension(
    "hrx._hrx",
    sources=sources(TESTING),
    include_dirs=["csrc/include", "csrc"],
    define_macros=[("_GNU_SOURCE", "1")] +
                  ([(SWITCH, "1")] if TESTING else []),
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror=implicit-function-declaration",
                        "-fvisibility=hidden"],
    libraries=["dl", "pthread"],
)

setup(ext_modules=[extension])
