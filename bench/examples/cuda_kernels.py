"""CUDA kernels on hrx streams with nothing but ctypes: NVRTC compiles CUDA C
at run time, the CUDA driver API loads it and launches it on
``stream.native_handle`` (a cudaStream_t is a CUstream).

Used by the example workload (kernel_workload.py) and by
tests/test_interop_native.py. Needs an NVIDIA GPU with the hip backend on
the CUDA runtime, the driver's libcuda.so.1 and an NVRTC library
(libnvrtc.so.*, from the CUDA toolkit or the pip package
nvidia-cuda-nvrtc). ``available(device)`` says why not when something is
missing.

Contract: a ``Kernels`` object belongs to one hrx device (one CUDA device
ordinal); it makes that device's primary context (the one the CUDA runtime,
and so hrx, uses) current on the calling thread before every launch.
Launches are asynchronous, like any work on the stream; ordering against
hrx work follows the rules of docs/interop.md ("Kernels on hrx queues").
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import site
import sys
from typing import Any, Dict, List, Optional, Sequence

__all__ = ["SOURCE", "Kernels", "available", "CudaError", "device_address"]

SOURCE = r"""
extern "C" __global__ void add_one(unsigned char* data, unsigned long long n) {
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = (unsigned char)(data[i] + 1);
}

/* Compute-bound: `iterations` dependent multiply-adds per float. */
extern "C" __global__ void fma_loop(float* data, unsigned long long n,
                                    unsigned iterations) {
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = data[i];
  for (unsigned k = 0; k < iterations; ++k) x = fmaf(x, 0.999f, 0.001f);
  data[i] = x;
}
"""

_THREADS = 256


class CudaError(RuntimeError):
    """A driver or NVRTC call failed; the message names the call and code."""


def _site_dirs() -> List[str]:
    dirs = list(sys.path)
    try:
        dirs += site.getsitepackages()
    except AttributeError:
        pass
    return [d for d in dict.fromkeys(dirs) if d and os.path.isdir(d)]


def _nvrtc_candidates() -> List[str]:
    names = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"]
    found = ctypes.util.find_library("nvrtc")
    if found:
        names.append(found)
    for base in _site_dirs():
        names += sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib", "libnvrtc.so*")),
                        reverse=True)
    for base in ("/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu"):
        names += sorted(glob.glob(os.path.join(base, "libnvrtc.so*")), reverse=True)
    return [n for n in names if "builtins" not in os.path.basename(n)]


def _load(candidates: Sequence[str]) -> ctypes.CDLL:
    errors = []
    for name in candidates:
        try:
            return ctypes.CDLL(name)
        except OSError as error:
            errors.append(str(error))
    raise CudaError("cannot load any of " + ", ".join(candidates[:6]) +
                    (f" ({errors[-1]})" if errors else ""))


def available(device: Any) -> Optional[str]:
    """None when kernels can run on this hrx device, else the reason."""
    info = device.info
    if info.get("backend") != "hip" or info.get("platform") != "nvidia":
        return f"needs the hip backend on an NVIDIA GPU (device is {info.get('backend')}, " \
               f"platform {info.get('platform')})"
    try:
        _load(["libcuda.so.1", "libcuda.so"])
        _load(_nvrtc_candidates())
    except CudaError as error:
        return str(error)
    return None


class Kernels:
    """SOURCE compiled for one hrx device; launches on native handles."""

    def __init__(self, device: Any, source: str = SOURCE) -> None:
        reason = available(device)
        if reason:
            raise CudaError(reason)
        info = device.info
        self.ordinal = int(info["index"])
        self.arch = str(info["target"])           # "sm_90"
        self._cuda = _load(["libcuda.so.1", "libcuda.so"])
        self._nvrtc = _load(_nvrtc_candidates())
        self._declare()
        self._check(self._cuda.cuInit(0), "cuInit")
        cu_device = ctypes.c_int()
        self._check(self._cuda.cuDeviceGet(ctypes.byref(cu_device), self.ordinal),
                    "cuDeviceGet")
        self._context = ctypes.c_void_p()
        self._check(self._cuda.cuDevicePrimaryCtxRetain(ctypes.byref(self._context), cu_device),
                    "cuDevicePrimaryCtxRetain")
        self._current()
        image = self._compile(source)
        self._module = ctypes.c_void_p()
        self._check(self._cuda.cuModuleLoadData(ctypes.byref(self._module), image),
                    "cuModuleLoadData")
        self._functions: Dict[str, ctypes.c_void_p] = {}

    # -------------------------------------------------------------- set-up

    def _declare(self) -> None:
        c = self._cuda
        for name in ("cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent",
                     "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel",
                     "cuGetErrorName"):
            getattr(c, name).restype = ctypes.c_int
        c.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [
            ctypes.c_uint, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        c.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
        c.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
        c.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                          ctypes.c_char_p]
        n = self._nvrtc
        for name in ("nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetProgramLogSize",
                     "nvrtcGetProgramLog", "nvrtcGetCUBINSize", "nvrtcGetCUBIN",
                     "nvrtcGetPTXSize", "nvrtcGetPTX", "nvrtcDestroyProgram"):
            getattr(n, name).restype = ctypes.c_int
        n.nvrtcGetErrorString.restype = ctypes.c_char_p

    def _check(self, code: int, call: str) -> None:
        if code != 0:
            name = ctypes.c_char_p()
            self._cuda.cuGetErrorName(code, ctypes.byref(name))
            raise CudaError(f"{call} failed: {name.value.decode() if name.value else code}")

    def _nvrtc_check(self, code: int, call: str) -> None:
        if code != 0:
            raise CudaError(f"{call} failed: {self._nvrtc.nvrtcGetErrorString(code).decode()}")

    def _compile(self, source: str) -> bytes:
        """A cubin for the device's exact architecture (no PTX JIT, so the
        NVRTC may be newer than the driver's PTX support); PTX for
        compute_XX if this NVRTC has no cubin entry points."""
        n = self._nvrtc
        program = ctypes.c_void_p()
        self._nvrtc_check(n.nvrtcCreateProgram(ctypes.byref(program), source.encode(),
                                               b"hrx_kernels.cu", 0, None, None),
                          "nvrtcCreateProgram")
        try:
            use_cubin = hasattr(n, "nvrtcGetCUBIN")
            arch = self.arch if use_cubin else self.arch.replace("sm_", "compute_")
            options = (ctypes.c_char_p * 2)(f"--gpu-architecture={arch}".encode(), b"-std=c++14")
            code = n.nvrtcCompileProgram(program, 2, options)
            if code != 0:
                size = ctypes.c_size_t()
                n.nvrtcGetProgramLogSize(program, ctypes.byref(size))
                log = ctypes.create_string_buffer(size.value + 1)
                n.nvrtcGetProgramLog(program, log)
                raise CudaError(f"nvrtcCompileProgram failed for {arch}: "
                                f"{log.value.decode(errors='replace')}")
            size = ctypes.c_size_t()
            getter_size, getter = ((n.nvrtcGetCUBINSize, n.nvrtcGetCUBIN) if use_cubin
                                   else (n.nvrtcGetPTXSize, n.nvrtcGetPTX))
            self._nvrtc_check(getter_size(program, ctypes.byref(size)), "nvrtcGet*Size")
            image = ctypes.create_string_buffer(size.value)
            self._nvrtc_check(getter(program, image), "nvrtcGet*")
            return image.raw
        finally:
            n.nvrtcDestroyProgram(ctypes.byref(program))

    def _current(self) -> None:
        self._check(self._cuda.cuCtxSetCurrent(self._context), "cuCtxSetCurrent")

    def _function(self, name: str) -> ctypes.c_void_p:
        if name not in self._functions:
            function = ctypes.c_void_p()
            self._check(self._cuda.cuModuleGetFunction(ctypes.byref(function), self._module,
                                                       name.encode()), "cuModuleGetFunction")
            self._functions[name] = function
        return self._functions[name]

    # ------------------------------------------------------------ launches

    def _launch(self, name: str, elements: int, stream_handle: int,
                arguments: Sequence[Any]) -> None:
        self._current()
        blocks = max(1, (elements + _THREADS - 1) // _THREADS)
        if blocks > 2 ** 31 - 1:
            raise ValueError(f"{elements} elements need more than 2**31 - 1 blocks")
        holders = list(arguments)
        pointers = (ctypes.c_void_p * len(holders))(
            *[ctypes.cast(ctypes.pointer(h), ctypes.c_void_p) for h in holders])
        self._check(self._cuda.cuLaunchKernel(self._function(name), blocks, 1, 1, _THREADS, 1, 1,
                                              0, ctypes.c_void_p(stream_handle), pointers, None),
                    f"cuLaunchKernel({name})")

    def add_one(self, stream_handle: int, address: int, nbytes: int) -> None:
        """data[i] += 1 for each of nbytes bytes at device address
        ``address``, queued on the native stream ``stream_handle``."""
        self._launch("add_one", nbytes, stream_handle,
                     [ctypes.c_void_p(address), ctypes.c_ulonglong(nbytes)])

    def fma_loop(self, stream_handle: int, address: int, floats: int, iterations: int) -> None:
        """``iterations`` dependent multiply-adds on each of ``floats``
        floats at ``address`` (compute-bound), on ``stream_handle``."""
        self._launch("fma_loop", floats, stream_handle,
                     [ctypes.c_void_p(address), ctypes.c_ulonglong(floats),
                      ctypes.c_uint(iterations)])


def device_address(buffer: Any) -> int:
    """The device address of an hrx buffer view, through DLPack (no copy):
    the first byte of the view."""
    capsule = buffer.__dlpack__(stream=-1)
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    pointer = get(capsule, b"dltensor")
    # DLManagedTensor starts with DLTensor, whose first field is `data`.
    return ctypes.c_void_p.from_address(pointer).value or 0
