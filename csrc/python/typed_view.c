/* Typed views: the checks of the stream and graph calls and typed reads
 * (typed_view.h). */
#include "typed_view.h"

#include <string.h>

#include "buffer.h"
#include "readback.h"

/* ------------------------------------------------------------- checks */

/* Whether `host` is a byte image: bytes, bytearray, or a memoryview of
 * unsigned bytes. */
static bool hrx_py_is_byte_image(PyObject* host, const Py_buffer* view) {
  if (PyBytes_Check(host) || PyByteArray_Check(host)) return true;
  if (!PyMemoryView_Check(host) || !view) return false;
  const char* format = view->format ? view->format : "B";
  if (*format == '@' || *format == '=' || *format == '<' || *format == '>' ||
      *format == '!') {
    ++format;
  }
  return strcmp(format, "B") == 0;
}

int hrx_py_typed_check_host(hrx_py_state_t* state, PyObject* buffer,
                            PyObject* host, const Py_buffer* view,
                            const hrx_py_dlpack_host_t* dlpack,
                            uint64_t length, const char* role,
                            hrx_py_typed_size_rule_t rule) {
  hrx_py_buffer_type_t type;
  if (!hrx_py_buffer_type(state, buffer, &type) || !type.dtype.kind) return 0;
  const char* name = hrx_py_dtype_name(type.dtype);
  uint64_t itemsize = type.dtype.itemsize;
  uint64_t wanted = type.nbytes;
  if (hrx_py_is_byte_image(host, view)) {
    if (rule == HRX_PY_TYPED_EXACT ? length == wanted : length >= wanted) {
      return 0;
    }
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "%s holds %llu bytes; the %s view of shape %R takes %s%llu "
                 "bytes (%llu elements)",
                 role, (unsigned long long)length, name, type.shape,
                 rule == HRX_PY_TYPED_EXACT ? "" : "at least ",
                 (unsigned long long)wanted,
                 (unsigned long long)(wanted / itemsize));
    return -1;
  }
  hrx_py_dtype_t host_type = HRX_PY_DTYPE_UNTYPED;
  bool known;
  const char* described;
  if (view) {
    known = hrx_py_dtype_of_format(view->format, view->itemsize, &host_type);
    described = view->format ? view->format : "B";
  } else if (dlpack && dlpack->managed) {
    known = hrx_py_dtype_of_dlpack(dlpack->dtype_code, dlpack->dtype_bits,
                                   dlpack->dtype_lanes, &host_type);
    described = "a DLPack type hrx does not type views with";
  } else {
    return 0; /* memory of no element type: bytes */
  }
  if (!known) {
    PyErr_Format(PyExc_TypeError,
                 "%s has elements of format '%.50s'; the destination is a %s "
                 "view: pass %s data, bytes, or use an untyped view",
                 role, described, name, name);
    return -1;
  }
  if (host_type.kind != type.dtype.kind ||
      host_type.itemsize != type.dtype.itemsize) {
    const char* host_name = hrx_py_dtype_name(host_type);
    if (rule == HRX_PY_TYPED_EXACT && strncmp(role, "upload", 6) == 0) {
      PyErr_Format(PyExc_TypeError,
                   "%s is %s; the view is %s: hrx copies bytes and never "
                   "converts, so convert it first (e.g. "
                   "array.astype(numpy.%s)) or reinterpret the view "
                   "(view.view(numpy.%s))",
                   role, host_name, name, name, host_name);
    } else {
      PyErr_Format(PyExc_TypeError,
                   "%s is %s; the view is %s: hrx copies bytes and never "
                   "converts, so read into a %s array (e.g. "
                   "numpy.empty(view.shape, numpy.%s)) or reinterpret the "
                   "view (view.view(numpy.%s))",
                   role, host_name, name, name, name, host_name);
    }
    return -1;
  }
  if (rule == HRX_PY_TYPED_EXACT ? length == wanted : length >= wanted) {
    return 0;
  }
  PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
               "%s has %llu %s elements; the view of shape %R %s %llu",
               role, (unsigned long long)(length / itemsize), name,
               type.shape,
               rule == HRX_PY_TYPED_EXACT ? "has" : "needs at least",
               (unsigned long long)(wanted / itemsize));
  return -1;
}

int hrx_py_typed_check_host_memory(hrx_py_state_t* state, PyObject* buffer,
                                   PyObject* host,
                                   const hrx_py_host_memory_t* memory,
                                   const char* role,
                                   hrx_py_typed_size_rule_t rule) {
  return hrx_py_typed_check_host(
      state, buffer, host, memory->has_view ? &memory->view : NULL,
      memory->has_view ? NULL : &memory->dlpack, memory->length, role, rule);
}

int hrx_py_typed_check_copy(hrx_py_state_t* state, PyObject* dst,
                            PyObject* src) {
  hrx_py_buffer_type_t dst_type, src_type;
  if (!hrx_py_buffer_type(state, dst, &dst_type) ||
      !hrx_py_buffer_type(state, src, &src_type) || !dst_type.dtype.kind ||
      !src_type.dtype.kind) {
    return 0;
  }
  if (dst_type.dtype.kind == src_type.dtype.kind &&
      dst_type.dtype.itemsize == src_type.dtype.itemsize) {
    return 0;
  }
  PyErr_Format(PyExc_TypeError,
               "copy destination is %s and copy source is %s: hrx copies "
               "bytes and never converts; reinterpret one of them "
               "(src.view(dst.dtype)) to copy the bytes as they are",
               hrx_py_dtype_name(dst_type.dtype),
               hrx_py_dtype_name(src_type.dtype));
  return -1;
}

/* ------------------------------------------------------------- fill */

bool hrx_py_pattern_is_one_byte(const uint8_t* pattern, size_t width) {
  for (size_t i = 1; i < width; ++i) {
    if (pattern[i] != pattern[0]) return false;
  }
  return true;
}

/* Packs a double as a float of `width` bytes, native order; -1 with
 * OutOfRangeError (showing `shown`) when a finite value overflows it. */
static int hrx_py_pack_real(hrx_py_state_t* state, double value, size_t width,
                            uint8_t* out, const char* name, PyObject* shown) {
  int little = hrx_py_host_little_endian();
  int failed = width == 2   ? PyFloat_Pack2(value, (char*)out, little)
               : width == 4 ? PyFloat_Pack4(value, (char*)out, little)
                            : PyFloat_Pack8(value, (char*)out, little);
  if (failed == 0) return 0;
  if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
  PyErr_Clear();
  PyErr_Format(state->errors[HRX_STATUS_OUT_OF_RANGE],
               "fill value %R is out of the range of %s", shown, name);
  return -1;
}

/* True and False, and numpy's bool scalars (numpy.bool, numpy.bool_). */
static bool hrx_py_is_bool(PyObject* value) {
  const char* type = Py_TYPE(value)->tp_name;
  return PyBool_Check(value) || strcmp(type, "numpy.bool") == 0 ||
         strcmp(type, "numpy.bool_") == 0;
}

int hrx_py_typed_fill_value(hrx_py_state_t* state, PyObject* dst,
                            PyObject* value,
                            uint8_t pattern[HRX_PY_DTYPE_MAX_ITEMSIZE],
                            size_t* out_width) {
  hrx_py_buffer_type_t type;
  hrx_py_buffer_type(state, dst, &type);
  hrx_py_dtype_t dtype = type.dtype;
  const char* name = hrx_py_dtype_name(dtype);
  size_t width = dtype.itemsize;
  *out_width = width;
  memset(pattern, 0, HRX_PY_DTYPE_MAX_ITEMSIZE);
  bool is_bool = hrx_py_is_bool(value);
  if (dtype.kind == 'b') {
    if (!is_bool) {
      PyErr_Format(PyExc_TypeError,
                   "a fill value of bool elements must be True or False, not "
                   "%.100s",
                   Py_TYPE(value)->tp_name);
      return -1;
    }
    int truth = PyObject_IsTrue(value);
    if (truth < 0) return -1;
    pattern[0] = (uint8_t)truth;
    return 0;
  }
  if (is_bool) {
    PyErr_Format(PyExc_TypeError,
                 "a fill value of %s elements must be a number, not a bool",
                 name);
    return -1;
  }
  if (dtype.kind == 'i' || dtype.kind == 'u') {
    if (!PyIndex_Check(value)) {
      PyErr_Format(PyExc_TypeError,
                   "a fill value of %s elements must be an integer, not %.100s",
                   name, Py_TYPE(value)->tp_name);
      return -1;
    }
    PyObject* index = PyNumber_Index(value);
    if (!index) return -1;
    unsigned bits = (unsigned)width * 8;
    bool in_range;
    uint64_t raw = 0;
    if (dtype.kind == 'i') {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
      long long low = bits == 64 ? INT64_MIN : -(1LL << (bits - 1));
      long long high = bits == 64 ? INT64_MAX : (1LL << (bits - 1)) - 1;
      in_range = !overflow && v >= low && v <= high;
      raw = (uint64_t)v;
    } else {
      int overflow = 0;
      long long sign = PyLong_AsLongLongAndOverflow(index, &overflow);
      bool negative = overflow < 0 || (!overflow && sign < 0);
      unsigned long long v = 0;
      bool too_large = false;
      if (!negative && !PyErr_Occurred()) {
        v = PyLong_AsUnsignedLongLong(index);
        too_large = v == (unsigned long long)-1 && PyErr_Occurred();
        if (too_large) PyErr_Clear();
      }
      in_range = !negative && !too_large &&
                 (bits == 64 || v <= ((1ULL << bits) - 1));
      raw = v;
    }
    if (PyErr_Occurred()) {
      Py_DECREF(index);
      return -1;
    }
    if (!in_range) {
      PyErr_Format(state->errors[HRX_STATUS_OUT_OF_RANGE],
                   "fill value %R is out of the range of %s", index, name);
      Py_DECREF(index);
      return -1;
    }
    Py_DECREF(index);
    /* The low `width` bytes in native order. */
    if (hrx_py_host_little_endian()) {
      memcpy(pattern, &raw, width);
    } else {
      memcpy(pattern, (uint8_t*)&raw + (8 - width), width);
    }
    return 0;
  }
  /* float and complex */
  Py_complex number = {0.0, 0.0};
  if (dtype.kind == 'f') {
    if (PyComplex_Check(value)) {
      PyErr_Format(PyExc_TypeError,
                   "a fill value of %s elements must be a real number, not "
                   "complex",
                   name);
      return -1;
    }
    number.real = PyFloat_AsDouble(value);
    if (number.real == -1.0 && PyErr_Occurred()) {
      if (PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "a fill value of %s elements must be a real number, not "
                     "%.100s",
                     name, Py_TYPE(value)->tp_name);
      } else if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        PyErr_Format(state->errors[HRX_STATUS_OUT_OF_RANGE],
                     "fill value %R is out of the range of %s", value, name);
      }
      return -1;
    }
    return hrx_py_pack_real(state, number.real, width, pattern, name, value);
  }
  number = PyComplex_AsCComplex(value);
  if (number.real == -1.0 && PyErr_Occurred()) {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError,
                   "a fill value of %s elements must be a number, not %.100s",
                   name, Py_TYPE(value)->tp_name);
    }
    return -1;
  }
  size_t half = width / 2;
  if (hrx_py_pack_real(state, number.real, half, pattern, name, value) < 0 ||
      hrx_py_pack_real(state, number.imag, half, pattern + half, name,
                       value) < 0) {
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------- reads */

PyObject* hrx_py_typed_readback(hrx_py_state_t* state, PyObject* readback,
                                PyObject* source) {
  if (!readback) return NULL;
  hrx_py_buffer_type_t type;
  if (!hrx_py_buffer_type(state, source, &type) || !type.dtype.kind) {
    return readback;
  }
  PyObject* dtype = hrx_py_dtype_numpy(type.dtype);
  if (!dtype) {
    Py_DECREF(readback);
    return NULL;
  }
  hrx_py_readback_set_type(readback, dtype, type.shape);
  Py_DECREF(dtype);
  return readback;
}
