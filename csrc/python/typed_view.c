/* Typed views: element types, shapes, and the checks of the stream calls
 * (typed_view.h). */
#include "typed_view.h"

#include <string.h>

#include "buffer.h"
#include "readback.h"
#include "stream.h"
#include "submit.h"

/* DLPack type codes (dlpack.h's DLDataTypeCode). */
enum {
  HRX_DL_INT = 0,
  HRX_DL_UINT = 1,
  HRX_DL_FLOAT = 2,
  HRX_DL_COMPLEX = 5,
  HRX_DL_BOOL = 6,
};

static const char kAllowed[] =
    "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
    "float16, float32, float64, complex64 or complex128, in native byte "
    "order";

static bool hrx_py_host_little_endian(void) {
  const uint16_t probe = 1;
  return *(const uint8_t*)&probe == 1;
}

/* Whether (kind, itemsize) is a type views may have. */
static bool hrx_py_dtype_valid(char kind, uint64_t itemsize) {
  switch (kind) {
    case 'b':
      return itemsize == 1;
    case 'i':
    case 'u':
      return itemsize == 1 || itemsize == 2 || itemsize == 4 || itemsize == 8;
    case 'f':
      return itemsize == 2 || itemsize == 4 || itemsize == 8;
    case 'c':
      return itemsize == 8 || itemsize == 16;
    default:
      return false;
  }
}

const char* hrx_py_dtype_name(hrx_py_dtype_t dtype) {
  switch (dtype.kind) {
    case 'b':
      return "bool";
    case 'i':
      return dtype.itemsize == 1   ? "int8"
             : dtype.itemsize == 2 ? "int16"
             : dtype.itemsize == 4 ? "int32"
                                   : "int64";
    case 'u':
      return dtype.itemsize == 1   ? "uint8"
             : dtype.itemsize == 2 ? "uint16"
             : dtype.itemsize == 4 ? "uint32"
                                   : "uint64";
    case 'f':
      return dtype.itemsize == 2   ? "float16"
             : dtype.itemsize == 4 ? "float32"
                                   : "float64";
    case 'c':
      return dtype.itemsize == 8 ? "complex64" : "complex128";
    default:
      return "bytes";
  }
}

const char* hrx_py_dtype_typestr(hrx_py_dtype_t dtype) {
  static const char* const little[] = {"|b1", "|i1", "<i2", "<i4", "<i8",
                                       "|u1", "<u2", "<u4", "<u8", "<f2",
                                       "<f4", "<f8", "<c8", "<c16"};
  static const char* const big[] = {"|b1", "|i1", ">i2", ">i4", ">i8",
                                    "|u1", ">u2", ">u4", ">u8", ">f2",
                                    ">f4", ">f8", ">c8", ">c16"};
  int index;
  int log2 = dtype.itemsize == 1   ? 0
             : dtype.itemsize == 2 ? 1
             : dtype.itemsize == 4 ? 2
                                   : 3;
  switch (dtype.kind) {
    case 'b':
      index = 0;
      break;
    case 'i':
      index = 1 + log2;
      break;
    case 'f':
      index = 9 + log2 - 1;
      break;
    case 'c':
      index = dtype.itemsize == 8 ? 12 : 13;
      break;
    default: /* 'u' and untyped bytes */
      index = 5 + log2;
      break;
  }
  return hrx_py_host_little_endian() ? little[index] : big[index];
}

PyObject* hrx_py_dtype_numpy(hrx_py_dtype_t dtype) {
  PyObject* numpy = PyImport_ImportModule("numpy");
  if (!numpy) return NULL;
  PyObject* result = PyObject_CallMethod(
      numpy, "dtype", "s", dtype.kind ? hrx_py_dtype_name(dtype) : "uint8");
  Py_DECREF(numpy);
  return result;
}

int hrx_py_dtype_convert(hrx_py_state_t* state, PyObject* object,
                         const char* role, hrx_py_dtype_t* out) {
  (void)state;
  PyObject* numpy = PyImport_ImportModule("numpy");
  if (!numpy) return -1;
  PyObject* dtype = PyObject_CallMethod(numpy, "dtype", "O", object);
  Py_DECREF(numpy);
  if (!dtype) return -1;
  PyObject* kind = PyObject_GetAttrString(dtype, "kind");
  PyObject* itemsize = kind ? PyObject_GetAttrString(dtype, "itemsize") : NULL;
  PyObject* order = itemsize ? PyObject_GetAttrString(dtype, "byteorder")
                             : NULL;
  PyObject* fields = order ? PyObject_GetAttrString(dtype, "fields") : NULL;
  int result = -1;
  if (fields) {
    const char* kind_text = PyUnicode_Check(kind) ? PyUnicode_AsUTF8(kind)
                                                  : NULL;
    const char* order_text = PyUnicode_Check(order) ? PyUnicode_AsUTF8(order)
                                                    : NULL;
    long long size = PyLong_Check(itemsize) ? PyLong_AsLongLong(itemsize) : -1;
    if (PyErr_Occurred()) {
      /* fall through with the error */
    } else if (kind_text && order_text && kind_text[0] && !kind_text[1] &&
               fields == Py_None && size > 0 &&
               hrx_py_dtype_valid(kind_text[0], (uint64_t)size) &&
               (order_text[0] == '=' || order_text[0] == '|')) {
      out->kind = kind_text[0];
      out->itemsize = (uint8_t)size;
      result = 0;
    } else {
      PyErr_Format(PyExc_TypeError, "%s must be %s; got %R", role, kAllowed,
                   dtype);
    }
  }
  Py_XDECREF(fields);
  Py_XDECREF(order);
  Py_XDECREF(itemsize);
  Py_XDECREF(kind);
  Py_DECREF(dtype);
  return result;
}

bool hrx_py_dtype_of_format(const char* format, Py_ssize_t itemsize,
                            hrx_py_dtype_t* out) {
  if (!format) format = "B"; /* the buffer protocol's default */
  bool little = hrx_py_host_little_endian();
  switch (*format) {
    case '@':
    case '=':
      ++format;
      break;
    case '<':
      if (!little) return false;
      ++format;
      break;
    case '>':
    case '!':
      if (little) return false;
      ++format;
      break;
    default:
      break;
  }
  char kind = 0;
  if (format[0] == 'Z') {
    if ((format[1] == 'f' || format[1] == 'd') && format[2] == '\0') kind = 'c';
  } else if (format[0] && format[1] == '\0') {
    if (strchr("?", format[0])) kind = 'b';
    if (strchr("bhilqn", format[0])) kind = 'i';
    if (strchr("BHILQN", format[0])) kind = 'u';
    if (strchr("efd", format[0])) kind = 'f';
  }
  if (!kind || itemsize <= 0 || !hrx_py_dtype_valid(kind, (uint64_t)itemsize)) {
    return false;
  }
  out->kind = kind;
  out->itemsize = (uint8_t)itemsize;
  return true;
}

void hrx_py_dtype_to_dlpack(hrx_py_dtype_t dtype, uint8_t* out_code,
                            uint8_t* out_bits) {
  switch (dtype.kind) {
    case 'b':
      *out_code = HRX_DL_BOOL;
      break;
    case 'i':
      *out_code = HRX_DL_INT;
      break;
    case 'f':
      *out_code = HRX_DL_FLOAT;
      break;
    case 'c':
      *out_code = HRX_DL_COMPLEX;
      break;
    default:
      *out_code = HRX_DL_UINT;
      break;
  }
  *out_bits = (uint8_t)(dtype.itemsize * 8);
}

bool hrx_py_dtype_of_dlpack(uint8_t code, uint8_t bits, uint16_t lanes,
                            hrx_py_dtype_t* out) {
  if (lanes != 1 || bits % 8 != 0) return false;
  char kind = code == HRX_DL_BOOL      ? 'b'
              : code == HRX_DL_INT     ? 'i'
              : code == HRX_DL_UINT    ? 'u'
              : code == HRX_DL_FLOAT   ? 'f'
              : code == HRX_DL_COMPLEX ? 'c'
                                       : 0;
  if (!hrx_py_dtype_valid(kind, bits / 8u)) return false;
  out->kind = kind;
  out->itemsize = (uint8_t)(bits / 8u);
  return true;
}

/* ------------------------------------------------------------- shapes */

int hrx_py_shape_convert(hrx_py_state_t* state, PyObject* shape,
                         uint64_t itemsize, bool has_nbytes, uint64_t nbytes,
                         PyObject** out_shape, uint64_t* out_nbytes) {
  PyObject* items;
  if (PyIndex_Check(shape)) {
    items = PyTuple_Pack(1, shape);
  } else if (PySequence_Check(shape) && !PyUnicode_Check(shape) &&
             !PyBytes_Check(shape)) {
    items = PySequence_Tuple(shape);
  } else {
    PyErr_Format(PyExc_TypeError,
                 "shape must be an int or a sequence of ints, not %.100s",
                 Py_TYPE(shape)->tp_name);
    return -1;
  }
  if (!items) return -1;
  Py_ssize_t ndim = PyTuple_GET_SIZE(items);
  PyObject* result = PyTuple_New(ndim);
  if (!result) {
    Py_DECREF(items);
    return -1;
  }
  Py_ssize_t inferred = -1;
  uint64_t known = 1; /* product of the given extents */
  bool overflow = false;
  for (Py_ssize_t i = 0; i < ndim; ++i) {
    PyObject* item = PyTuple_GET_ITEM(items, i);
    if (PyBool_Check(item) || !PyIndex_Check(item)) {
      PyErr_Format(PyExc_TypeError, "shape entries must be ints, not %.100s",
                   Py_TYPE(item)->tp_name);
      goto fail;
    }
    int64_t extent = 0;
    PyObject* index = PyNumber_Index(item);
    if (!index) goto fail;
    int too_large = 0;
    extent = PyLong_AsLongLongAndOverflow(index, &too_large);
    Py_DECREF(index);
    if (extent == -1 && PyErr_Occurred()) goto fail;
    if (too_large || extent < -1 || (extent == -1 && inferred >= 0) ||
        (extent == -1 && !has_nbytes)) {
      PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                   "shape %R: extents must be >= 0%s", items,
                   has_nbytes ? ", with at most one -1 (inferred)" : "");
      goto fail;
    }
    if (extent == -1) {
      inferred = i;
      continue;
    }
    if (extent && known > UINT64_MAX / (uint64_t)extent) overflow = true;
    known *= (uint64_t)extent;
    PyObject* value = PyLong_FromLongLong(extent);
    if (!value) goto fail;
    PyTuple_SET_ITEM(result, i, value);
  }
  if (!overflow && known > UINT64_MAX / itemsize) overflow = true;
  if (overflow) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "shape %R holds more bytes than any memory", items);
    goto fail;
  }
  uint64_t bytes = known * itemsize;
  if (inferred >= 0) {
    uint64_t rest = known ? nbytes / bytes : 0;
    if (!known || rest * bytes != nbytes) {
      PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                   "shape %R: %llu bytes are not a whole number of rows of "
                   "%llu bytes, so -1 cannot be inferred",
                   items, (unsigned long long)nbytes,
                   (unsigned long long)bytes);
      goto fail;
    }
    PyObject* value = PyLong_FromUnsignedLongLong(rest);
    if (!value) goto fail;
    PyTuple_SET_ITEM(result, inferred, value);
    bytes = nbytes;
  }
  if (has_nbytes && bytes != nbytes) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "shape %R of %llu-byte elements covers %llu bytes; the view "
                 "has %llu (slice the view to the size first)",
                 items, (unsigned long long)itemsize,
                 (unsigned long long)bytes, (unsigned long long)nbytes);
    goto fail;
  }
  Py_DECREF(items);
  *out_shape = result;
  *out_nbytes = bytes;
  return 0;
fail:
  Py_DECREF(items);
  Py_DECREF(result);
  return -1;
}

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
                 "a fill value of %s elements must be a number, not a bool", name);
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

int hrx_py_typed_fill_wide(hrx_py_state_t* state, PyObject* stream,
                           PyObject* dst, const uint8_t* pattern,
                           size_t width) {
  hrx_py_buffer_type_t type;
  hrx_py_buffer_type(state, dst, &type);
  uint64_t nbytes = type.nbytes;
  /* The first part: whole elements, small enough to keep the GIL. */
  uint64_t first = HRX_PY_UPLOAD_KEEP_GIL_BYTES / width * width;
  if (first > nbytes) first = nbytes;
  uint8_t* host = PyMem_Malloc(first ? (size_t)first : 1);
  if (!host) {
    PyErr_NoMemory();
    return -1;
  }
  for (uint64_t at = 0; at < first; at += width) memcpy(host + at, pattern, width);
  hrx_py_submission_t upload = {.kind = HRX_PY_SUBMIT_UPLOAD,
                                .data = host,
                                .length = first};
  upload.stream = hrx_py_stream_unwrap(state, stream);
  bool ok = upload.stream && hrx_py_buffer_view_borrowed(
                                 state, dst, "fill destination",
                                 &upload.dst) == 0;
  if (ok) {
    upload.dst.length = first;
    ok = hrx_py_submit(state, &upload) == 0;
  }
  PyMem_Free(host);
  for (uint64_t filled = first; ok && filled < nbytes;) {
    uint64_t step = filled < nbytes - filled ? filled : nbytes - filled;
    hrx_py_submission_t copy = {.kind = HRX_PY_SUBMIT_COPY};
    copy.stream = hrx_py_stream_unwrap(state, stream);
    ok = copy.stream && hrx_py_buffer_view_borrowed(state, dst,
                                                    "fill destination",
                                                    &copy.dst) == 0;
    if (!ok) break;
    copy.src = copy.dst;
    copy.src.length = step;
    copy.dst.offset += filled;
    copy.dst.length = step;
    ok = hrx_py_submit(state, &copy) == 0;
    filled += step;
  }
  return ok ? 0 : -1;
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

/* ------------------------------------------------------------ creation */

PyObject* hrx_py_typed_empty(hrx_py_state_t* state, PyObject* device,
                             PyObject* shape, PyObject* dtype) {
  hrx_py_dtype_t type;
  /* numpy.dtype(None) is float64; a buffer's dtype is never implied. */
  if (dtype == Py_None) {
    PyErr_SetString(PyExc_TypeError,
                    "dtype must be given (e.g. numpy.float32), not None");
    return NULL;
  }
  if (hrx_py_dtype_convert(state, dtype, "dtype", &type) < 0) return NULL;
  PyObject* extents = NULL;
  uint64_t nbytes = 0;
  if (hrx_py_shape_convert(state, shape, type.itemsize, false, 0, &extents,
                           &nbytes) < 0) {
    return NULL;
  }
  if (nbytes == 0) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "shape %R holds no elements; a buffer holds at least one "
                 "byte",
                 extents);
    Py_DECREF(extents);
    return NULL;
  }
  PyObject* size = PyLong_FromUnsignedLongLong(nbytes);
  PyObject* buffer =
      size ? PyObject_CallMethod(device, "allocate", "O", size) : NULL;
  Py_XDECREF(size);
  if (buffer) hrx_py_buffer_set_type(buffer, type, extents);
  Py_DECREF(extents);
  return buffer;
}

/* The stream argument of zeros and asarray: None or an hrx.Stream (or
 * fabric.Queue); TypeError otherwise. */
static int hrx_py_typed_stream_arg(hrx_py_state_t* state, PyObject* stream) {
  if (stream == Py_None || PyObject_TypeCheck(stream, state->stream_type)) {
    return 0;
  }
  PyErr_Format(PyExc_TypeError, "stream must be an hrx.Stream or None, not "
               "%.100s", Py_TYPE(stream)->tp_name);
  return -1;
}

/* stream.<method>(buffer, argument) on `stream`, or with None on a new
 * stream of `device` that is synchronized and closed before returning. */
static int hrx_py_typed_submit_one(PyObject* device, PyObject* stream,
                                   const char* method, PyObject* buffer,
                                   PyObject* argument) {
  if (stream != Py_None) {
    PyObject* done =
        PyObject_CallMethod(stream, method, "OO", buffer, argument);
    Py_XDECREF(done);
    return done ? 0 : -1;
  }
  PyObject* own = PyObject_CallMethod(device, "stream", NULL);
  if (!own) return -1;
  PyObject* done = PyObject_CallMethod(own, method, "OO", buffer, argument);
  if (done) {
    Py_DECREF(done);
    done = PyObject_CallMethod(own, "synchronize", NULL);
  }
  /* close() keeps a pending error: it is called with none set. */
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyObject* closed = PyObject_CallMethod(own, "close", NULL);
  if (!closed) PyErr_WriteUnraisable(own);
  Py_XDECREF(closed);
  PyErr_Restore(type, value, traceback);
  Py_DECREF(own);
  Py_XDECREF(done);
  return done ? 0 : -1;
}

PyObject* hrx_py_typed_zeros(hrx_py_state_t* state, PyObject* device,
                             PyObject* shape, PyObject* dtype,
                             PyObject* stream) {
  if (hrx_py_typed_stream_arg(state, stream) < 0) return NULL;
  PyObject* buffer = hrx_py_typed_empty(state, device, shape, dtype);
  if (!buffer) return NULL;
  /* A byte fill: zero is all zero bytes in every dtype. */
  PyObject* untyped = PyObject_CallMethod(buffer, "view", "O", Py_None);
  PyObject* zero = PyLong_FromLong(0);
  int result = untyped && zero ? hrx_py_typed_submit_one(device, stream,
                                                         "fill", untyped, zero)
                               : -1;
  Py_XDECREF(zero);
  Py_XDECREF(untyped);
  if (result < 0) Py_CLEAR(buffer);
  return buffer;
}

PyObject* hrx_py_typed_asarray(hrx_py_state_t* state, PyObject* device,
                               PyObject* array, PyObject* dtype,
                               PyObject* stream) {
  if (hrx_py_typed_stream_arg(state, stream) < 0) return NULL;
  if (PyObject_TypeCheck(array, state->buffer_type)) {
    PyErr_SetString(PyExc_TypeError,
                    "asarray takes host data (a numpy array, a sequence, a "
                    "host DLPack tensor); for an hrx.Buffer copy it on the "
                    "device with stream.copy(dst, src)");
    return NULL;
  }
  PyObject* numpy = PyImport_ImportModule("numpy");
  if (!numpy) return NULL;
  /* A DLPack producer numpy does not take as an array (no buffer protocol,
   * no __array__) is imported through DLPack first. */
  PyObject* source = NULL;
  if (!PyObject_CheckBuffer(array) &&
      PyObject_HasAttrString(array, "__dlpack__") &&
      !PyObject_HasAttrString(array, "__array__")) {
    source = PyObject_CallMethod(numpy, "from_dlpack", "O", array);
  } else {
    source = Py_NewRef(array);
  }
  PyObject* host = source ? PyObject_CallMethod(numpy, "ascontiguousarray",
                                                "OO", source, dtype)
                          : NULL;
  Py_XDECREF(source);
  Py_DECREF(numpy);
  if (!host) return NULL;
  PyObject* host_shape = PyObject_GetAttrString(host, "shape");
  PyObject* host_dtype =
      host_shape ? PyObject_GetAttrString(host, "dtype") : NULL;
  PyObject* buffer = host_dtype ? hrx_py_typed_empty(state, device, host_shape,
                                                     host_dtype)
                                : NULL;
  if (buffer &&
      hrx_py_typed_submit_one(device, stream, "upload", buffer, host) < 0) {
    Py_CLEAR(buffer);
  }
  Py_XDECREF(host_dtype);
  Py_XDECREF(host_shape);
  Py_DECREF(host);
  return buffer;
}
