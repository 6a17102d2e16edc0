"""Typed scalar arguments on the host backend (docs/kernels.md,
"Arguments"): the launcher records each parameter's kind and name from the
kernel's declaration, Kernel.params shows them, and a launch converts or
refuses each argument by its parameter's type, with a message naming the
parameter, before anything is queued.
"""
from __future__ import annotations

import numpy as np
import pytest

import hrx
import hrx._hrx
from kernel_sources import compile_kernel

TYPES = r"""
#include <stddef.h>
#include <stdint.h>
typedef float real;
struct pair { int a; double b; };
__global__ void types(long long* out, signed char i8, unsigned short u16,
                      int i32, unsigned int u32, long long i64,
                      unsigned long long u64, float f32, double f64,
                      _Bool flag, char c, size_t size, int64_t s64,
                      const float* restrict p, real r, struct pair s,
                      float m[4], long double ld) {
  if (blockIdx.x || threadIdx.x) return;
  out[0] = i8; out[1] = u16; out[2] = i32; out[3] = u32; out[4] = i64;
  out[5] = (long long)u64; out[6] = (long long)(f32 * 1000);
  out[7] = (long long)(f64 * 1000); out[8] = flag; out[9] = c;
  out[10] = (long long)size; out[11] = s64; out[12] = p != 0;
  out[13] = (long long)r; out[14] = s.a; out[15] = m != 0;
  out[16] = (long long)ld;
}
"""


@pytest.fixture
def saxpy(host):
    return compile_kernel(host, "saxpy")


def _run_saxpy(host, kernel, a, n):
    """y = a * x + y on 4 floats of ones; returns y."""
    s = host.stream()
    x, y = host.allocate(16), host.allocate(16)
    s.upload(x, np.ones(4, np.float32))
    s.fill(y, 0)
    s.launch(kernel, 1, 4, (x, y, a, n))
    return s.read(y).wait().view(np.float32)


def test_params_show_each_declared_type(host):
    k = host.compile(TYPES, "types")
    params = k.params
    assert [p["name"] for p in params] == [
        "out", "i8", "u16", "i32", "u32", "i64", "u64", "f32", "f64", "flag",
        "c", "size", "s64", "p", "r", "s", "m", "ld"]
    char = "int8" if np.iinfo(np.byte).min < 0 else "uint8"
    assert [p["type"] for p in params] == [
        "pointer", "int8", "uint16", "int32", "uint32", "int64", "uint64",
        "float32", "float64", "bool", char, "uint64", "int64", "pointer",
        # A typedef of the source's, a struct by value, long double: only
        # their sizes are recorded.
        "unknown", "unknown", "pointer", "unknown"]
    assert [p["size"] for p in params] == list(k.attributes["param_sizes"])


def test_a_kernel_loaded_from_its_image_keeps_its_types(host, saxpy):
    loaded = host.load_kernel(saxpy.image, "saxpy")
    assert loaded.params == saxpy.params
    assert [p["type"] for p in saxpy.params] == [
        "pointer", "pointer", "float32", "int32"]


def test_an_int_for_a_float_parameter_is_its_value(host, saxpy):
    # The int 2 once arrived as a float's bits (3e-45).
    assert list(_run_saxpy(host, saxpy, 2, 4)) == [2.0] * 4
    assert list(_run_saxpy(host, saxpy, np.float32(0.5), np.int32(4))) == [
        0.5] * 4


def test_typed_values_arrive_as_declared(host):
    k = host.compile(TYPES, "types")
    s = host.stream()
    out = host.allocate(17 * 8)
    s.fill(out, 0)
    pair = np.array([(7, 1.0)], dtype=np.dtype(
        [("a", "<i4"), ("b", "<f8")], align=True))[0]
    args = (out, -128, 65535, -2**31, 2**32 - 1, -2**63, 2**64 - 1, 3,
            0.25, True, 5, 2**40, -3, out, np.float32(9), pair, out,
            np.longdouble(4))
    s.launch(k, 1, 1, args)
    got = list(s.read(out).wait().view(np.int64))
    assert got == [-128, 65535, -2**31, 2**32 - 1, -2**63, -1, 3000, 250, 1,
                   5, 2**40, -3, 1, 9, 7, 1, 4]


@pytest.mark.parametrize("a, n, message", [
    (2.0, 1024.0,
     r"argument 3 \(float\) does not match parameter 3 'n' of kernel "
     r"'saxpy' \(int32\); pass an int or numpy.int32"),
    (np.float64(2.0), 4,
     r"argument 2 \(numpy.float64\) does not match parameter 2 'a' of "
     r"kernel 'saxpy' \(float32\); pass a float, an int or numpy.float32"),
    (2.0, np.int64(4),
     r"argument 3 \(numpy.int64\) does not match parameter 3 'n' .*"
     r"\(int32\)"),
    (2.0, np.uint32(4),
     r"argument 3 \(numpy.uint32\) does not match parameter 3 'n'"),
    (np.int32(2), 4,
     r"argument 2 \(numpy.int32\) does not match parameter 2 'a'"),
    (True, 4, r"argument 2 \(bool\) does not match parameter 2 'a'"),
    (2.0, True, r"argument 3 \(bool\) does not match parameter 3 'n'"),
    (2.0, np.bool_(True),
     r"argument 3 \(numpy.bool_?\) does not match parameter 3 'n'"),
])
def test_a_value_of_another_kind_is_refused_naming_the_parameter(
        host, saxpy, a, n, message):
    s = host.stream()
    x, y = host.allocate(16), host.allocate(16)
    before = hrx._hrx._testing_commands_submitted(host)
    with pytest.raises(TypeError, match=message):
        s.launch(saxpy, 1, 4, (x, y, a, n))
    g = hrx.Graph(host)
    with pytest.raises(TypeError, match=message):
        g.kernel(saxpy, 1, 4, (x, y, a, n))
    assert hrx._hrx._testing_commands_submitted(host) == before


def test_buffers_go_only_to_pointers(host, saxpy):
    s = host.stream()
    x, y = host.allocate(16), host.allocate(16)
    with pytest.raises(TypeError, match=r"argument 2 \(hrx.Buffer\) does not "
                       r"match parameter 2 'a' .*\(float32\)"):
        s.launch(saxpy, 1, 4, (x, y, x, 4))
    with pytest.raises(TypeError, match=r"argument 1 \(int\) does not match "
                       r"parameter 1 'y' .*\(pointer\); pass a buffer"):
        s.launch(saxpy, 1, 4, (x, 5, 2.0, 4))
    with pytest.raises(TypeError, match=r"argument 0 \(float\) does not match "
                       r"parameter 0 'x'"):
        s.launch(saxpy, 1, 4, (1.0, y, 2.0, 4))
    # 0 is the null pointer, numpy.uintp an address on purpose: n = 0 here,
    # so neither is read.
    s.launch(saxpy, 1, 4, (0, np.uintp(0), 2.0, 0))
    s.synchronize()


@pytest.mark.parametrize("source_type, value, low, high", [
    ("int", 2**31, -2**31, 2**31 - 1),
    ("int", -2**31 - 1, -2**31, 2**31 - 1),
    ("unsigned int", -1, 0, 2**32 - 1),
    ("unsigned char", 256, 0, 255),
    ("signed char", 128, -128, 127),
    ("long long", 2**63, -2**63, 2**63 - 1),
    ("unsigned long long", 2**64, 0, 2**64 - 1),
    ("_Bool", 2, 0, 1),
])
def test_an_int_out_of_its_parameters_range_is_refused(host, source_type,
                                                       value, low, high):
    k = host.compile(
        f"__global__ void take(long long* out, {source_type} v) "
        "{ out[0] = (long long)v; }", "take")
    out = host.allocate(8)
    with pytest.raises(hrx.InvalidArgumentError,
                       match=rf"argument 1 \(int {value}\) is out of range "
                             rf"for parameter 1 'v' of kernel 'take' "
                             rf"\(.*\): it takes {low} to {high}"):
        host.stream().launch(k, 1, 1, (out, value))


def test_an_int_too_large_for_a_float_is_refused(host, saxpy):
    x, y = host.allocate(16), host.allocate(16)
    with pytest.raises(hrx.InvalidArgumentError,
                       match=r"argument 2 \(int 1000.*\) is out of range for "
                             r"parameter 2 'a'"):
        host.stream().launch(saxpy, 1, 4, (x, y, 10**40, 4))


def test_a_wrong_count_is_named_before_any_type(host, saxpy):
    x = host.allocate(16)
    with pytest.raises(hrx.InvalidArgumentError,
                       match="kernel 'saxpy' takes 4 arguments; got 3"):
        host.stream().launch(saxpy, 1, 4, (x, 2.0, 1.5))


def test_unknown_kinds_check_only_the_size(host):
    k = host.compile(TYPES, "types")
    out = host.allocate(17 * 8)
    pair = np.zeros((), np.dtype([("a", "<i4"), ("b", "<f8")], align=True))
    base = [out, 0, 0, 0, 0, 0, 0, 0.0, 0.0, False, 0, 0, 0, out, 1.0,
            pair[()], out, np.longdouble(0)]
    s = host.stream()
    # A float for a typedef of float: 4 bytes, as before types were known.
    s.launch(k, 1, 1, base)
    wrong = list(base)
    wrong[15] = np.int64(0)
    with pytest.raises(TypeError, match=r"argument 15 \(numpy.int64\) does "
                       r"not match parameter 15 's' of kernel 'types' "
                       r"\(16 bytes\)"):
        s.launch(k, 1, 1, wrong)
    s.synchronize()
