/* Element types and shapes (dtype.c): what a typed hrx.Buffer view
 * carries besides its bytes, with their conversions from Python (numpy
 * dtypes, shape arguments) and their names in numpy, the buffer protocol,
 * DLPack and the CUDA Array Interface. Knows no binding type. Everything
 * here runs with the GIL. */
#ifndef HRX_PYTHON_DTYPE_H_
#define HRX_PYTHON_DTYPE_H_

#include <stdbool.h>
#include <stdint.h>

#include "state.h"

/* An element type: a numeric numpy dtype in native byte order that DLPack
 * describes. */
typedef struct {
  char kind;         /* 'b' bool, 'i' signed, 'u' unsigned, 'f' float,
                        'c' complex; 0: untyped (bytes) */
  uint8_t itemsize;  /* bytes; 1 when untyped */
} hrx_py_dtype_t;

#define HRX_PY_DTYPE_UNTYPED ((hrx_py_dtype_t){0, 1})
/* The widest element (complex128) in bytes. */
#define HRX_PY_DTYPE_MAX_ITEMSIZE 16

/* numpy's name of the type: "float32", "bool", "uint8"; "bytes" when
 * untyped. Static storage. */
const char* hrx_py_dtype_name(hrx_py_dtype_t dtype);
/* numpy.dtype(object) as an element type, or -1 with an error: TypeError
 * (naming `role` and what is allowed) for a dtype hrx does not type views
 * with (structured, object, strings, dates, long double, another byte
 * order), numpy's own error for what is not a dtype. Imports numpy. */
int hrx_py_dtype_convert(hrx_py_state_t* state, PyObject* object,
                         const char* role, hrx_py_dtype_t* out);
/* The numpy.dtype of a typed element type (new reference), or NULL with
 * an error. */
PyObject* hrx_py_dtype_numpy(hrx_py_dtype_t dtype);
/* The element type of a buffer protocol format with that item size ("f",
 * "<i", "Zd"; native byte order); false for any other format. */
bool hrx_py_dtype_of_format(const char* format, Py_ssize_t itemsize,
                            hrx_py_dtype_t* out);
/* DLPack's (code, bits) of a typed element type, and back (lanes 1). */
void hrx_py_dtype_to_dlpack(hrx_py_dtype_t dtype, uint8_t* out_code,
                            uint8_t* out_bits);
bool hrx_py_dtype_of_dlpack(uint8_t code, uint8_t bits, uint16_t lanes,
                            hrx_py_dtype_t* out);
/* The CUDA Array Interface typestr ("<f4", "|b1"). Static storage. */
const char* hrx_py_dtype_typestr(hrx_py_dtype_t dtype);

/* A shape argument (an int or a sequence of ints, each >= 0, at most one
 * of them -1: inferred from `nbytes`) for elements of `itemsize` bytes.
 * With `nbytes` (has_nbytes) the shape must cover exactly that many
 * bytes. On success *out_shape is a new tuple and *out_nbytes its size in
 * bytes. -1 with TypeError or InvalidArgumentError otherwise. May run
 * Python code (__index__). */
int hrx_py_shape_convert(hrx_py_state_t* state, PyObject* shape,
                         uint64_t itemsize, bool has_nbytes, uint64_t nbytes,
                         PyObject** out_shape, uint64_t* out_nbytes);

/* Whether this host stores numbers little-endian (the native byte order
 * element types are in). */
bool hrx_py_host_little_endian(void);

#endif /* HRX_PYTHON_DTYPE_H_ */
