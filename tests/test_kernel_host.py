"""Kernels on the host backend only (docs/kernels.md, "Host kernels"): the
system C compiler and its log, a missing compiler, options, the launcher's
handling of parameters, hrx_kernel.h (indices, the threads of a block one
after another, dynamic shared memory, warp intrinsics refused), images saved and
loaded (foreign ones refused), a full queue, and a backend without
kernels.
"""
from __future__ import annotations

import os
import pathlib
import subprocess

import numpy as np
import pytest

import hrx
import hrx._hrx
from kernel_sources import compile_kernel


def test_the_compiler_is_described(host):
    compiler = host.kernel_compiler()
    assert compiler["language"] == "c"
    assert compiler["image_format"] == "elf"
    assert compiler["target"] == host.info["target"]
    assert compiler["compiler"].startswith("/")


def test_a_compile_error_carries_the_compilers_log(host):
    with pytest.raises(hrx.InvalidArgumentError) as error:
        host.compile("__global__ void k(int* p) {\n  p[0] = ;\n}\n", "k")
    message = str(error.value)
    assert "rejected the kernel source" in message
    assert "kernel.c:2" in message and "error" in message


def test_a_missing_compiler_is_unavailable(host, monkeypatch):
    monkeypatch.setenv("HRX_HOST_CC", "/nonexistent/cc")
    with pytest.raises(hrx.UnavailableError, match="HRX_HOST_CC"):
        host.compile("__global__ void other(void) {}\n", "other")
    monkeypatch.delenv("HRX_HOST_CC")
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(hrx.UnavailableError) as error:
        host.kernel_compiler()
    assert "none of cc, gcc, clang is on PATH" in str(error.value)
    assert "HRX_HOST_CC" in str(error.value)  # how to point hrx at one


def test_options_reach_the_compiler(host):
    source = "__global__ void k(int* p) { p[0] = VALUE; }\n"
    s = host.stream()
    b = host.allocate(4)
    k = host.compile(source, "k", options=["-DVALUE=7", "-O1"])
    s.launch(k, 1, 1, (b,))
    assert s.read(b).wait().view(np.int32)[0] == 7
    with pytest.raises(hrx.InvalidArgumentError, match="VALUE"):
        host.compile(source, "k")  # undeclared without the option
    with pytest.raises(TypeError, match="options must be a sequence"):
        host.compile(source, "k", options="-O2")


def test_the_installed_header_compiles_and_is_included_once(host):
    assert (pathlib.Path(hrx.kernel_include_dir()) / "hrx_kernel.h").is_file()
    source = ("#include <hrx_kernel.h>\n#include \"hrx_kernel.h\"\n"
              "HRX_KERNEL void k(unsigned* p) { p[0] = gridDim.x; }\n")
    k = host.compile(source, "k", options=[f"-I{hrx.kernel_include_dir()}"])
    s = host.stream()
    b = host.allocate(4)
    s.launch(k, 3, 1, (b,))
    assert s.read(b).wait().view(np.uint32)[0] == 3


def test_parameters_as_declared(host):
    source = """
struct pair { int a; double b; };
__global__ void params(long long out[3], const int n, register char c,
                       struct pair p, void (*f)(void), float m[2][3]) {
  out[0] = n + c; out[1] = p.a + (long long)p.b; out[2] = f == 0 && m == 0;
}
"""
    k = host.compile(source, "params")
    attributes = k.attributes
    assert attributes["param_count"] == 6
    assert attributes["param_sizes"] == (8, 4, 1, 16, 8, 8)
    s = host.stream()
    out = host.allocate(24)
    pair = np.array([(40, 2.5)], dtype=np.dtype(
        [("a", "<i4"), ("b", "<f8")], align=True))[0]
    s.launch(k, 1, 1, (out, 5, 3, pair, 0, 0))
    assert list(s.read(out).wait().view(np.int64)) == [8, 42, 1]


@pytest.mark.parametrize("source,part", [
    ("void k(int a, ...) {}\n", "variadic"),
    ("void k(a) int a; {}\n", "old-style"),
    ("void k(int);\n", "defines no kernel 'k'"),
    ("#define k(x) x\nint y = k(1);\n", "defines no kernel 'k'"),
    ("__global__ void k(int* p) { p[0] = __shfl_sync(~0u, p[0], 1); }\n",
     "__shfl_sync is a warp intrinsic"),
    ("__global__ void k(int* p) { p[0] = warpSize; }\n",
     "warpSize is a warp intrinsic"),
    ("__global__ void k(int* p) { p[0] = __syncthreads_or(p[1]); }\n",
     "__syncthreads_or is not supported by host kernels"),
    ("__global__ void k(float* p) { extern __shared__ float s[4]; }\n",
     "must read `extern __shared__ T name\\[\\];`"),
])
def test_sources_the_launcher_refuses(host, source, part):
    with pytest.raises(hrx.InvalidArgumentError, match=part):
        host.compile(source, "k")


def test_threads_of_a_block_run_in_order_with_shared_memory(host):
    """The documented model: a block's threads run one after another (x
    fastest), sharing the block's dynamic shared memory."""
    source = """
__global__ void scan(unsigned* out) {
  unsigned* shared = (unsigned*)hrx_dynamic_shared;
  unsigned t = threadIdx.x + blockDim.x * threadIdx.y;
  shared[t] = t + (t ? shared[t - 1] : 0);     /* earlier threads ran */
  if (t == blockDim.x * blockDim.y - 1) out[blockIdx.x] = shared[t];
}
"""
    k = host.compile(source, "scan")
    s = host.stream()
    out = host.allocate(4 * 8)
    s.launch(k, 8, (16, 4), (out,), shared=64 * 4)
    assert list(s.read(out).wait().view(np.uint32)) == [sum(range(64))] * 8
    with pytest.raises(hrx.InvalidArgumentError, match="max_dynamic_shared"):
        s.launch(k, 1, 1, (out,), shared=host.info["max_shared_bytes_per_block"]
                 + 1)


def test_images_load_and_foreign_ones_are_refused(host, tmp_path):
    k = compile_kernel(host, "add_one")
    image = k.image
    assert image[:4] == b"\x7fELF"
    loaded = host.load_kernel(image, "add_one")
    assert loaded.origin == "image" and "image" in loaded.cache_note
    s = host.stream()
    b = host.allocate(64)
    s.fill(b, 1)
    s.launch(loaded, 1, 64, (b, 64))
    assert set(s.read(b).wait()) == {2}
    with pytest.raises(hrx.InvalidArgumentError, match="no kernel named"):
        host.load_kernel(image, "saxpy")
    with pytest.raises(hrx.InvalidArgumentError, match="not an ELF file"):
        host.load_kernel(b"\0" * 4096, "add_one")
    with pytest.raises(hrx.InvalidArgumentError, match="truncated"):
        host.load_kernel(image[:len(image) // 2], "add_one")
    plain = tmp_path / "plain.c"
    plain.write_text("int f(void) { return 1; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "p.so"),
                    str(plain)], check=True)
    with pytest.raises(hrx.InvalidArgumentError, match="module marker"):
        host.load_kernel((tmp_path / "p.so").read_bytes(), "f")
    with pytest.raises(TypeError, match="bytes-like"):
        host.load_kernel("not bytes", "add_one")


def test_a_full_queue_releases_the_gil_and_runs_every_launch(fresh):
    out = fresh("""
        import threading
        from kernel_sources import compile_kernel
        dev = hrx.Device.open(0, backend="host")
        k = compile_kernel(dev, "add_one")
        s = dev.stream()
        b = dev.allocate(1 << 16)
        s.fill(b, 0)
        s.synchronize()
        for _ in range(200):                 # 8-slot ring: fills up
            s.launch(k, 256, 256, (b, 1 << 16))
        assert set(s.read(b).wait()) == {200}
        released = hrx._hrx._testing_submissions_released_gil()
        full = sum(n for (kind, why), n in released.items()
                   if kind == "kernel_launch" and "full host queue" in why)
        assert full > 0, released
        print("ok")
    """, env={"HRX_HOST_RING_CAPACITY": "8",
              # Launches published alone: gathered ones wait for the ring
              # in the publication of their full batch, which releases the
              # GIL as such (test_launch_batching.py).
              "HRX_BATCH_LAUNCHES": "0",
              "PYTHONPATH": os.pathsep.join(
                  [os.environ.get("PYTHONPATH", ""),
                   os.path.dirname(os.path.abspath(__file__))])})
    assert out.strip() == "ok"


def test_a_backend_without_kernels_refuses_them(fresh):
    out = fresh("""
        dev = hrx.Device.open(0, backend="host")
        assert dev.info["max_threads_per_block"] == 0
        assert dev.info["max_grid_dim"] == (0, 0, 0)
        for call in (lambda: dev.compile("void k(void) {}", "k"),
                     lambda: dev.kernel_compiler(),
                     lambda: dev.load_kernel(b"x" * 64, "k")):
            try:
                call()
            except hrx.UnavailableError as e:
                assert "runs no kernels" in str(e), str(e)
            else:
                raise AssertionError("no UnavailableError")
        print("ok")
    """, env={"HRX_FAULTS": "no_kernels"})
    assert out.strip() == "ok"


def test_host_arrays_pass_their_address_through_dlpack(host):
    """On the host backend a kernel addresses host memory: a numpy array
    (DLPack, device (1, 0)) is passed as its data pointer, offset
    included."""
    k = compile_kernel(host, "add_one")
    s = host.stream()
    array = np.arange(64, dtype=np.uint8)
    s.launch(k, 1, 32, (array[16:], 32))      # a view: its own first byte
    s.synchronize()
    expected = np.arange(64, dtype=np.uint8)
    expected[16:48] += 1
    np.testing.assert_array_equal(array, expected)


def test_cuda_arrays_are_refused_on_the_host(host):
    class CudaArray:
        __cuda_array_interface__ = {"data": (0, False), "shape": (4,),
                                    "typestr": "<u1", "version": 3}

    k = compile_kernel(host, "add_one")
    with pytest.raises(hrx.InvalidArgumentError,
                       match="__cuda_array_interface__"):
        host.stream().launch(k, 1, 1, (CudaArray(), 4))


def test_a_more_urgent_lane_runs_between_the_blocks_of_a_long_kernel(fresh):
    """One engine: a long grid of a normal-lane stream yields it between
    blocks, so a high-priority stream's kernel finishes while the grid has
    blocks left. The grid writes a numpy array (host memory), which shows
    how many blocks have run without any thread of this process helping a
    queue; a grid that was nearly done before the urgent launch proves
    nothing, so the run is repeated with longer blocks then."""
    out = fresh("""
        import time
        from kernel_sources import compile_kernel
        dev = hrx.Device.open(0, backend="host")
        slow = compile_kernel(dev, "slow_write")
        tiny = compile_kernel(dev, "add_one")
        normal, high = dev.stream(), dev.stream(priority="high")
        flag = dev.allocate(4)
        blocks = 100
        for attempt in range(5):
            done = np.zeros(blocks, np.uint32)
            spins = np.uint64(400000 << attempt)
            normal.launch(slow, blocks, 1, (done, np.uint32(1), spins))
            time.sleep(0.01)
            high.launch(tiny, 1, 1, (flag, 1))
            urgent = high.record_event()
            before = int(done.sum())
            while not urgent.query():
                time.sleep(0.0005)
            after = int(done.sum())
            normal.synchronize()
            assert int(done.sum()) == blocks
            if before < blocks // 2:
                break                        # the grid had far to go
        else:
            raise AssertionError("the grid always ran out first")
        assert after < blocks, (before, after)
        print("ok", before, after)
    """, env={"HRX_HOST_ENGINES": "1",
              "PYTHONPATH": os.pathsep.join(
                  [os.environ.get("PYTHONPATH", ""),
                   os.path.dirname(os.path.abspath(__file__))])})
    assert out.startswith("ok")
