"""Checks that the sanitizer run of the Python suite (``make
test-python-asan``) really runs an ASan+UBSan-built extension, and that its
setup would report an error: a run that could not fail would prove nothing.
Skipped outside that run (HRX_EXPECT_SANITIZED unset).
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import hrx

pytestmark = pytest.mark.skipif(
    not os.environ.get("HRX_EXPECT_SANITIZED"),
    reason="only in the sanitizer run (make test-python-asan)")


def test_the_extension_is_the_sanitized_build():
    assert hrx._hrx.__file__.startswith(os.environ["HRX_EXPECT_SANITIZED"])
    with open("/proc/self/maps") as maps:
        mapped = maps.read()
    assert "libasan" in mapped
    assert "libubsan" in mapped  # loaded only as the extension's dependency


def test_a_heap_overflow_would_be_reported():
    code = ("import ctypes\n"
            "libc = ctypes.CDLL(None)\n"
            "libc.malloc.restype = ctypes.c_void_p\n"
            "p = libc.malloc(16)\n"
            "ctypes.memset(p, 0, 32)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode != 0
    assert "heap-buffer-overflow" in result.stderr
