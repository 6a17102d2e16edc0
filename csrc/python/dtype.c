/* Element types and shapes: conversions and names (dtype.h). */
#include "dtype.h"

#include <string.h>

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

bool hrx_py_host_little_endian(void) {
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
