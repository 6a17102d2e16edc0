"""Builds the hrx._hrx extension from csrc/ (C11, no GPU SDK needed)."""
import glob
import os

from setuptools import Extension, setup

ROOT = os.path.dirname(os.path.abspath(__file__))


def sources():
    patterns = ["csrc/core/*.c", "csrc/backends/host/*.c",
                "csrc/backends/hip/*.c", "csrc/backends/fault/*.c",
                "csrc/python/*.c"]
    found = []
    for pattern in patterns:
        found += sorted(glob.glob(os.path.join(ROOT, pattern)))
    return [os.path.relpath(path, ROOT) for path in found]


extension = Extension(
    "hrx._hrx",
    sources=sources(),
    include_dirs=["csrc/include", "csrc/core", "csrc/backends", "csrc"],
    define_macros=[("_GNU_SOURCE", "1")],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror=implicit-function-declaration",
                        "-fvisibility=hidden"],
    libraries=["dl", "pthread"],
)

setup(ext_modules=[extension])
