"""Kernels the tests compile, written once for every kernel language: the
same text is C on the host backend (hrx_kernel.h gives it threadIdx,
blockIdx, blockDim, gridDim and __global__) and CUDA or HIP C++ on the hip
backend (extern "C" keeps the names unmangled there).

``compile_kernel(device, name)`` compiles one by name; the disk cache
(tests/conftest.py points it at a directory of the session) makes every
later compile of the session a cache read.
"""
from __future__ import annotations

EXTERN_C = '#ifdef __cplusplus\nextern "C"\n#endif\n'

SOURCES = {
    # y = a * x + y over n floats.
    "saxpy": """
__global__ void saxpy(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
""",
    # Every thread of a 3-D grid of 3-D blocks writes where it is.
    "where": """
__global__ void where(unsigned int* out) {
  unsigned int block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x +
                       blockIdx.x;
  unsigned int thread = (threadIdx.z * blockDim.y + threadIdx.y) *
                        blockDim.x + threadIdx.x;
  unsigned int threads = blockDim.x * blockDim.y * blockDim.z;
  out[block * threads + thread] = block * 1000u + thread;
}
""",
    # p[i] += 1 over n bytes: sees what ran before it, is seen after.
    "add_one": """
__global__ void add_one(unsigned char* p, unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = (unsigned char)(p[i] + 1);
}
""",
    # Writes its scalar arguments at fixed offsets (8 bytes apart).
    "record": """
__global__ void record(unsigned char* out, signed char a, short b, int c,
                       long long d, float e, double f, unsigned char g,
                       unsigned long long h) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  *(long long*)(out + 0) = a;
  *(long long*)(out + 8) = b;
  *(long long*)(out + 16) = c;
  *(long long*)(out + 24) = d;
  *(double*)(out + 32) = e;
  *(double*)(out + 40) = f;
  *(unsigned long long*)(out + 48) = g;
  *(unsigned long long*)(out + 56) = h;
}
""",
    # Busy for `spins` iterations, then writes `value`: a kernel that takes
    # a while, for ordering between streams.
    "slow_write": """
__global__ void slow_write(unsigned int* out, unsigned int value,
                           unsigned long long spins) {
  volatile unsigned long long count = 0;
  while (count < spins) count = count + 1;
  out[blockIdx.x] = value;
}
""",
}


def source(name: str) -> str:
    return EXTERN_C + SOURCES[name]


def compile_kernel(device, name: str):
    return device.compile(source(name), name)
