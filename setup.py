"""Builds the hrx._hrx extension from csrc/ (C11, no GPU SDK needed) and
records the git commit the package is built from in hrx/_build_info.py.

HRX_TESTING_BUILD=1 builds the testing variant of the same extension that
the test suite runs against (see the Makefile): it adds fault injection
(csrc/drivers/fault, $HRX_FAULTS) and the test hooks (csrc/testing,
csrc/python/testing.c). Without it, as for every user's `pip install .`,
none of that is compiled in.

The commit comes from git when the source tree is a git checkout; an sdist
carries the file written when the sdist was made, so a wheel built from it
records the same commit. A copy of the tree without either (e.g. a working
tree copied to a machine without git) takes HRX_SOURCE_COMMIT (40 hex
digits) from the environment; otherwise it records None."""
import glob
import os
import re
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = os.path.dirname(os.path.abspath(__file__))
SWITCH = "HRX_TESTING_BUILD"
BUILD_INFO = os.path.join("hrx", "_build_info.py")


def testing_build():
    value = os.environ.get(SWITCH, "").strip()
    if value not in ("", "0", "1"):
        raise SystemExit(f"{SWITCH} must be 1 (testing build) or 0 / unset "
                         f"(the product), got {value!r}")
    return value == "1"


def sources(testing):
    patterns = ["csrc/base/*.c", "csrc/core/*.c", "csrc/drivers/*.c",
                "csrc/drivers/host/*.c", "csrc/drivers/hip/*.c",
                "csrc/bench/*.c", "csrc/python/*.c"]
    if testing:
        patterns.append("csrc/drivers/fault/*.c")
    found = []
    for pattern in patterns:
        found += sorted(glob.glob(os.path.join(ROOT, pattern)))
    return [os.path.relpath(path, ROOT) for path in found]


def _git(*args):
    try:
        done = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _recorded_info():
    """(commit, dirty) of the file an sdist carries, or (None, None)."""
    values = {}
    try:
        with open(os.path.join(ROOT, BUILD_INFO), encoding="utf-8") as handle:
            exec(handle.read(), values)  # our own two assignments
    except OSError:
        return None, None
    return values.get("GIT_COMMIT"), values.get("GIT_DIRTY")


def _environment_commit():
    value = os.environ.get("HRX_SOURCE_COMMIT", "").strip()
    if not value:
        return None
    if not re.fullmatch(r"[0-9a-f]{40}", value):
        raise SystemExit(f"HRX_SOURCE_COMMIT must be a full commit id (40 hex digits), "
                         f"got {value!r}")
    return value


def build_info():
    """(commit, dirty) of the source being built."""
    top = _git("rev-parse", "--show-toplevel")
    if top and os.path.realpath(top) == os.path.realpath(ROOT):
        commit = _git("rev-parse", "HEAD")
        status = _git("status", "--porcelain", "--untracked-files=no")
        if commit:
            return commit, (bool(status) if status is not None else None)
    recorded = _recorded_info()
    if recorded[0]:
        return recorded
    return _environment_commit(), None


def write_build_info(directory):
    commit, dirty = build_info()
    path = os.path.join(directory, BUILD_INFO)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.unlink(path)  # sdist trees hard-link files; never write through a link
    with open(path, "w", encoding="utf-8") as handle:
        handle.write('"""Written by setup.py: the source this hrx was built from."""\n'
                     f"GIT_COMMIT = {commit!r}\nGIT_DIRTY = {dirty!r}\n")


class BuildPyWithInfo(build_py):
    def run(self):
        super().run()
        if not self.editable_mode:
            write_build_info(self.build_lib)


class BuildExtWithInfo(build_ext):
    """An extension built on its own (the testing and sanitizer builds, into
    a copy of the package) records its source too."""
    def run(self):
        super().run()
        if not self.inplace:
            write_build_info(self.build_lib)


class SdistWithInfo(sdist):
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        write_build_info(base_dir)


TESTING = testing_build()
extension = Extension(
    "hrx._hrx",
    sources=sources(TESTING),
    include_dirs=["csrc/include", "csrc", "hrx/include"],
    define_macros=[("_GNU_SOURCE", "1")] +
                  ([(SWITCH, "1")] if TESTING else []),
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror=implicit-function-declaration",
                        "-fvisibility=hidden"],
    libraries=["dl", "pthread"],
)

if __name__ == "__main__":
    setup(ext_modules=[extension],
          cmdclass={"build_py": BuildPyWithInfo, "build_ext": BuildExtWithInfo,
                    "sdist": SdistWithInfo})
