"""The benchmark's kernels (csrc/bench/bench_kernels.h,
hrx/bench/kernel_launches.py): the built-ins exist for every kernel
language, run and do what they say (tiny writes every block's word; spin
takes at least its time), and the C driver (native and raw) and the Python
driver launch and time them, checking their output.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

import hrx
import hrx._hrx
from hrx.bench import kernel_launches


def test_the_built_ins_exist_for_every_language():
    for language in ("c", "cuda", "hip"):
        source = hrx._hrx.bench_kernel_source(language)
        assert "hrx_bench_tiny" in source and "hrx_bench_spin" in source
        if language != "c":
            assert source.count('extern "C"') == 2
    assert hrx._hrx.bench_kernel_source("fortran") is None
    assert "%globaltimer" in hrx._hrx.bench_kernel_source("cuda")
    assert "wall_clock64" in hrx._hrx.bench_kernel_source("hip")


def test_tiny_writes_every_block(device, stream):
    k = kernel_launches.builtin_kernel(device, "tiny")
    out = device.allocate(4 * 100)
    stream.fill(out, 0)
    stream.launch(k, 100, 32, (out,))
    assert set(stream.read(out).wait().view(np.uint32)) == {1}


def test_spin_takes_at_least_its_time(device, stream):
    k = kernel_launches.builtin_kernel(device, "spin")
    out = device.allocate(4)
    stream.fill(out, 0)
    stream.synchronize()
    ns = 30_000_000
    start = time.perf_counter_ns()
    stream.launch(k, 1, 1, (np.uint64(ns), out))
    stream.synchronize()
    assert time.perf_counter_ns() - start >= ns
    assert stream.read(out).wait().view(np.uint32)[0] == 1


@pytest.mark.parametrize("driver", ["native", "raw"])
def test_the_c_driver_times_launches(device, driver):
    r = hrx._hrx.bench_launch(device, driver=driver, launches=200, warmup=10,
                              threads=2, grid=4, block=8)
    assert (r["driver"], r["kernel"], r["threads"], r["launches"]) == (
        driver, "tiny", 2, 400)
    assert len(r["thread_ns"]) == 2
    assert 0 < max(r["thread_ns"]) <= r["elapsed_ns"]


def test_the_c_driver_spins_on_a_lane(device):
    ns = 5_000_000
    r = hrx._hrx.bench_launch(device, kernel="spin", spin_ns=ns, launches=2,
                              warmup=0, priority="high")
    assert r["spin_ns"] == ns and r["elapsed_ns"] >= 2 * ns


def test_the_python_driver_times_launches(device):
    r = kernel_launches.launch_rate(device, launches=100, warmup=5,
                                    threads=3, grid=2)
    assert (r["driver"], r["threads"], r["launches"]) == ("python", 3, 300)
    assert 0 < max(r["thread_ns"]) <= r["elapsed_ns"]
    with pytest.raises(ValueError, match="unknown benchmark kernel"):
        kernel_launches.builtin_kernel(device, "huge")
