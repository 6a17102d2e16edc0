"""Conformance: kernels written the CUDA way run unchanged on every backend
(docs/kernels.md, "The CUDA dialect").

Each source below is what a CUDA or CuPy user writes: `extern "C"`
without an #ifdef, `__shared__` tiles, `extern __shared__` dynamic shared
memory sized by the launch, `__syncthreads()`, shared and global atomics,
`__device__` helpers. On the hip backend they are CUDA/HIP C++; on the host
backend hrx compiles the same text as C (barriers run the block's threads
as fibers). Every result is checked against numpy.
"""
from __future__ import annotations

import numpy as np
import pytest

import hrx

SAXPY = r"""
extern "C" __global__ void saxpy(const float* __restrict__ x,
                                 float* __restrict__ y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""

# Tree reduction in dynamic shared memory: one partial sum per block.
REDUCE = r"""
extern "C" __global__ void block_sum(const float* in, float* out, int n) {
  extern __shared__ float partial[];
  unsigned int t = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + t;
  partial[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned int half = blockDim.x / 2; half > 0; half >>= 1) {
    if (t < half) partial[t] += partial[t + half];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}
"""

# Inclusive scan of each block (Hillis and Steele), the dynamic shared
# memory declared at file scope inside an extern "C" block.
SCAN = r"""
extern "C" {
extern __shared__ unsigned int scan_buffer[];

__global__ void block_scan(const unsigned int* in, unsigned int* out,
                           int n) {
  unsigned int t = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + t;
  scan_buffer[t] = i < n ? in[i] : 0u;
  __syncthreads();
  for (unsigned int offset = 1; offset < blockDim.x; offset *= 2) {
    unsigned int add = t >= offset ? scan_buffer[t - offset] : 0u;
    __syncthreads();
    scan_buffer[t] += add;
    __syncthreads();
  }
  if (i < n) out[i] = scan_buffer[t];
}
}
"""

# Tiled transpose through a padded __shared__ tile, 32x8 threads per
# 32x32 tile.
TRANSPOSE = r"""
#define TILE 32
#define ROWS 8
extern "C" __global__ void transpose(const float* in, float* out, int rows,
                                     int cols) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS) {
    if (x < cols && y + j < rows) {
      tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    }
  }
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS) {
    if (x < rows && y + j < cols) {
      out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
  }
}
"""

# A 256-bin histogram of bytes: shared bins per block, then global ones.
HISTOGRAM = r"""
extern "C" __global__ void histogram(const unsigned char* data, int n,
                                     unsigned int* bins) {
  __shared__ unsigned int local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x) {
    atomicAdd(&local[data[i]], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x) {
    if (local[b]) atomicAdd(&bins[b], local[b]);
  }
}
"""

# __device__ helpers, __forceinline__, math and intrinsics.
MATH = r"""
__device__ __forceinline__ float square(float v) { return v * v; }
__device__ inline float softplus(float v) { return logf(1.0f + expf(v)); }

extern "C" __global__ void math(const float* __restrict__ x, float* out,
                                int* ints, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = __ldg(&x[i]);
  out[4 * i + 0] = sqrtf(square(v) + 1.0f);
  out[4 * i + 1] = fmaxf(v, 0.5f) + softplus(v);
  out[4 * i + 2] = __fdividef(v, 3.0f);
  out[4 * i + 3] = min(v, 1.0f) + max(v, -1.0f);
  ints[i] = min(i, 7) + max(i - 5, 0);
}
"""

# Global atomics of every kind on int, unsigned int and float: every
# thread takes part, so each result is a reduction over all of them.
ATOMICS = r"""
extern "C" __global__ void atomics(int* i, unsigned int* u, float* f,
                                   int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  atomicAdd(&i[0], t);
  atomicSub(&i[1], t);
  atomicMax(&i[2], t - n / 2);
  atomicMin(&i[3], t - n / 2);
  atomicOr(&i[4], 1 << (t % 31));
  atomicAnd(&u[0], ~(1u << (t % 32)));
  atomicMax(&u[1], (unsigned int)t * 3u);
  atomicMin(&u[2], (unsigned int)t + 5u);
  atomicAdd(&u[3], 2u);
  atomicAdd(&f[0], 0.5f);
  atomicExch(&i[5], 42);
  atomicCAS(&i[6], 0, t + 1);   /* only the first thread swaps */
  atomicExch(&f[1], 2.5f);
}
"""


def compile_source(device, source, name):
    return device.compile(source, name)


def test_saxpy_with_extern_c(device, stream):
    k = compile_source(device, SAXPY, "saxpy")
    n = 1000
    x = np.linspace(-3, 3, n, dtype=np.float32)
    y = np.arange(n, dtype=np.float32)
    bx, by = device.allocate(4 * n), device.allocate(4 * n)
    stream.upload(bx, x)
    stream.upload(by, y)
    stream.launch(k, (n + 127) // 128, 128,
                  (bx, by, np.float32(2.5), np.int32(n)))
    out = stream.read(by).wait().view(np.float32)
    np.testing.assert_allclose(out, 2.5 * x + y, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("block", [32, 256, 1024])
def test_tree_reduction_in_dynamic_shared_memory(device, stream, block):
    k = compile_source(device, REDUCE, "block_sum")
    n = 5000
    rng = np.random.default_rng(1)
    data = rng.standard_normal(n).astype(np.float32)
    blocks = (n + block - 1) // block
    bin_, bout = device.allocate(4 * n), device.allocate(4 * blocks)
    stream.upload(bin_, data)
    stream.launch(k, blocks, block, (bin_, bout, np.int32(n)),
                  shared=4 * block)
    out = stream.read(bout).wait().view(np.float32)
    padded = np.zeros(blocks * block, np.float32)
    padded[:n] = data
    expected = padded.reshape(blocks, block).astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_inclusive_block_scan(device, stream):
    k = compile_source(device, SCAN, "block_scan")
    n, block = 3000, 256
    rng = np.random.default_rng(2)
    data = rng.integers(0, 1000, n, dtype=np.uint32)
    blocks = (n + block - 1) // block
    bin_, bout = device.allocate(4 * n), device.allocate(4 * n)
    stream.upload(bin_, data)
    stream.launch(k, blocks, block, (bin_, bout, np.int32(n)),
                  shared=4 * block)
    out = stream.read(bout).wait().view(np.uint32)
    expected = np.concatenate([np.cumsum(data[b:b + block], dtype=np.uint32)
                               for b in range(0, n, block)])
    np.testing.assert_array_equal(out, expected)


def test_tiled_transpose_through_a_shared_tile(device, stream):
    k = compile_source(device, TRANSPOSE, "transpose")
    rows, cols = 100, 75
    matrix = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    bin_, bout = device.allocate(matrix.nbytes), device.allocate(matrix.nbytes)
    stream.upload(bin_, matrix)
    stream.launch(k, ((cols + 31) // 32, (rows + 31) // 32), (32, 8),
                  (bin_, bout, np.int32(rows), np.int32(cols)))
    out = stream.read(bout).wait().view(np.float32).reshape(cols, rows)
    np.testing.assert_array_equal(out, matrix.T)


def test_histogram_with_shared_and_global_atomics(device, stream):
    k = compile_source(device, HISTOGRAM, "histogram")
    n = 100_000
    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, n, dtype=np.uint8)
    bdata, bbins = device.allocate(n), device.allocate(4 * 256)
    stream.upload(bdata, data)
    stream.fill(bbins, 0)
    stream.launch(k, 16, 128, (bdata, np.int32(n), bbins))
    out = stream.read(bbins).wait().view(np.uint32)
    np.testing.assert_array_equal(out, np.bincount(data, minlength=256))


def test_device_helpers_math_and_intrinsics(device, stream):
    k = compile_source(device, MATH, "math")
    n = 64
    x = np.linspace(-4, 4, n, dtype=np.float32)
    bx, bout, bints = (device.allocate(4 * n), device.allocate(16 * n),
                       device.allocate(4 * n))
    stream.upload(bx, x)
    stream.launch(k, 2, 32, (bx, bout, bints, np.int32(n)))
    out = stream.read(bout).wait().view(np.float32).reshape(n, 4)
    ints = stream.read(bints).wait().view(np.int32)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out[:, 0], np.sqrt(x64 * x64 + 1), rtol=1e-5)
    np.testing.assert_allclose(
        out[:, 1], np.maximum(x64, 0.5) + np.log1p(np.exp(x64)), rtol=1e-5)
    np.testing.assert_allclose(out[:, 2], x64 / 3, rtol=1e-5)
    np.testing.assert_allclose(
        out[:, 3], np.minimum(x64, 1) + np.maximum(x64, -1), rtol=1e-6)
    i = np.arange(n)
    np.testing.assert_array_equal(ints, np.minimum(i, 7) +
                                  np.maximum(i - 5, 0))


def test_global_atomics(device, stream):
    k = compile_source(device, ATOMICS, "atomics")
    n = 1000
    ints = np.array([0, 0, -(1 << 30), 1 << 30, 0, 7, 0], np.int32)
    uints = np.array([0xFFFFFFFF, 0, 0xFFFFFFFF, 0], np.uint32)
    floats = np.zeros(2, np.float32)
    bi, bu, bf = (device.allocate(ints.nbytes), device.allocate(uints.nbytes),
                  device.allocate(floats.nbytes))
    stream.upload(bi, ints)
    stream.upload(bu, uints)
    stream.upload(bf, floats)
    stream.launch(k, (n + 127) // 128, 128, (bi, bu, bf, np.int32(n)))
    got_i = stream.read(bi).wait().view(np.int32)
    got_u = stream.read(bu).wait().view(np.uint32)
    got_f = stream.read(bf).wait().view(np.float32)
    t = np.arange(n)
    or_bits = 0
    for bit in set(t % 31):
        or_bits |= 1 << int(bit)
    assert list(got_i[:5]) == [t.sum(), -t.sum(), n - 1 - n // 2, -(n // 2),
                               or_bits]
    assert got_i[5] == 42
    assert 1 <= got_i[6] <= n          # one thread's t + 1
    assert list(got_u) == [0, 3 * (n - 1), 5, 2 * n]
    assert list(got_f) == [0.5 * n, 2.5]


def test_barrier_blocks_run_on_several_engines(device, stream):
    """Many blocks of a barrier kernel at once: each block's threads see
    their own shared memory, whichever engine thread runs them."""
    k = compile_source(device, SCAN, "block_scan")
    block, blocks = 64, 200
    n = block * blocks
    data = np.ones(n, np.uint32)
    bin_, bout = device.allocate(4 * n), device.allocate(4 * n)
    stream.upload(bin_, data)
    for _ in range(3):
        stream.launch(k, blocks, block, (bin_, bout, np.int32(n)),
                      shared=4 * block)
    out = stream.read(bout).wait().view(np.uint32).reshape(blocks, block)
    np.testing.assert_array_equal(out, np.tile(np.arange(1, block + 1),
                                               (blocks, 1)))


# ------------------------------------------------------ the host backend


def test_host_compile_errors_keep_the_sources_lines(host):
    """The dialect pass keeps the source's lines: an error after an
    extern "C" block and an extern __shared__ declaration spread over
    lines is reported at its own line."""
    source = ('extern "C" {\n'
              '__global__ void k(float* p) {\n'
              '  extern __shared__\n'
              '      float s[];\n'
              '  p[0] = s[0];\n'
              '}\n'
              '}\n'
              'extern "C" __global__ void bad(int* p) {\n'
              '  p[0] = ;\n'
              '}\n')
    with pytest.raises(hrx.InvalidArgumentError) as error:
        host.compile(source, "bad")
    assert "kernel.c:9" in str(error.value)


def test_host_kernels_without_barriers_keep_the_one_after_another_path(host):
    """A module that never calls __syncthreads runs its threads one after
    another (the fast path): later threads see what earlier ones wrote,
    which the fibers of a barrier module would not promise."""
    source = r"""
extern "C" __global__ void order(unsigned int* out) {
  extern __shared__ unsigned int seen[];
  unsigned int t = threadIdx.x;
  seen[t] = t == 0 ? 0u : seen[t - 1] + 1u;
  out[t] = seen[t];
}
"""
    k = host.compile(source, "order")
    s = host.stream()
    out = np.zeros(128, np.uint32)
    s.launch(k, 1, 128, (out,), shared=4 * 128)
    s.synchronize()
    np.testing.assert_array_equal(out, np.arange(128))


def test_host_barriers_release_when_the_remaining_threads_arrive(host):
    """Threads that returned early no longer take part in a barrier (as on
    GPUs); the rest pass it together, and every thread's own index
    survives the switches."""
    source = r"""
extern "C" __global__ void early(unsigned int* out) {
  __shared__ unsigned int count;
  unsigned int t = threadIdx.x + blockDim.x * threadIdx.y;
  if (t == 0) count = 0;
  __syncthreads();
  if (threadIdx.x % 2) return;
  atomicAdd(&count, 1u);
  __syncthreads();
  __syncthreads();
  out[blockIdx.x * blockDim.x * blockDim.y + t] = count * 1000u + t;
}
"""
    k = host.compile(source, "early")
    s = host.stream()
    block = (8, 4)
    out = np.zeros(3 * 32, np.uint32)
    s.launch(k, 3, block, (out,))
    s.synchronize()
    t = np.tile(np.arange(32), 3)
    even = t % 2 == 0
    np.testing.assert_array_equal(out[even], 16 * 1000 + t[even])
    assert (out[~even] == 0).all()


def test_host_fibers_take_the_largest_block(host):
    k = compile_source(host, REDUCE, "block_sum")
    limit = host.info["max_threads_per_block"]
    data = np.ones(limit, np.float32)
    out = np.zeros(1, np.float32)
    s = host.stream()
    s.launch(k, 1, limit, (data, out, np.int32(limit)), shared=4 * limit)
    s.synchronize()
    assert out[0] == limit
    with pytest.raises(hrx.InvalidArgumentError, match="threads"):
        s.launch(k, 1, (32, limit // 32 + 1), (data, out, np.int32(limit)),
                 shared=4 * limit)
