/* Typed views (typed_view.c): the element type and shape an hrx.Buffer
 * handle may carry, and the checks and conversions they bring to the
 * stream calls. The core stays byte-based: a typed view is a byte range
 * of an allocation plus this metadata, kept by the binding only. An
 * untyped view (kind 0) is a byte container, exactly as buffers always
 * were. Everything here runs with the GIL. */
#ifndef HRX_PYTHON_TYPED_VIEW_H_
#define HRX_PYTHON_TYPED_VIEW_H_

#include "dlpack.h"
#include "host_memory.h"
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

/* How host memory must match a typed view's size. */
typedef enum {
  HRX_PY_TYPED_EXACT,     /* upload, read_into: the same element count */
  HRX_PY_TYPED_AT_LEAST,  /* read_blocking: at least the view's elements */
} hrx_py_typed_size_rule_t;

/* Checks host memory against the view `buffer` names (an hrx.Buffer, else
 * nothing is checked: the view conversion raises). An untyped view takes
 * any memory (the core checks byte counts). A typed view takes memory of
 * its own element type with a matching element count (`rule`), or a byte
 * image of matching byte count: bytes, bytearray, or a memoryview of
 * unsigned bytes (format "B"). numpy arrays, array.array and DLPack
 * tensors are typed, a numpy uint8 array too. `host` is the object the
 * memory came from; `view` its buffer protocol export (with its format)
 * or NULL, `dlpack` its DLPack tensor or NULL; `length` its bytes. 0, or
 * -1 with TypeError (element types differ; both named) or
 * InvalidArgumentError (counts differ). */
int hrx_py_typed_check_host(hrx_py_state_t* state, PyObject* buffer,
                            PyObject* host, const Py_buffer* view,
                            const hrx_py_dlpack_host_t* dlpack,
                            uint64_t length, const char* role,
                            hrx_py_typed_size_rule_t rule);
/* The same for host memory a stream call holds. */
int hrx_py_typed_check_host_memory(hrx_py_state_t* state, PyObject* buffer,
                                   PyObject* host,
                                   const hrx_py_host_memory_t* memory,
                                   const char* role,
                                   hrx_py_typed_size_rule_t rule);

/* A device copy between two views: when both are typed their element
 * types must be the same (TypeError naming both; hrx copies bytes, it
 * never converts). Other objects pass (the view conversion raises). */
int hrx_py_typed_check_copy(hrx_py_state_t* state, PyObject* dst,
                            PyObject* src);

/* A fill value for a typed view (`dst` an hrx.Buffer with an element
 * type): the element's bytes in `pattern` and *out_width its width.
 * bool views take True/False; integer views an integer (int, numpy
 * integer, __index__) within the type's range; float views a real number
 * (int, float, numpy real) that does not overflow the type; complex views
 * any number. TypeError for a value of another kind, OutOfRangeError for
 * one out of range. May run Python code (__index__, __float__). */
int hrx_py_typed_fill_value(hrx_py_state_t* state, PyObject* dst,
                            PyObject* value,
                            uint8_t pattern[HRX_PY_DTYPE_MAX_ITEMSIZE],
                            size_t* out_width);
/* Whether every byte of a pattern is its first: then a byte fill writes
 * it. */
bool hrx_py_pattern_is_one_byte(const uint8_t* pattern, size_t width);

/* Stream.fill of `dst` (an hrx.Buffer) with a pattern wider than one
 * repeated byte (the core's fills write bytes): the pattern repeated over
 * the view's first part (at most HRX_PY_UPLOAD_KEEP_GIL_BYTES) is
 * uploaded, then copies on the device double the filled part until the
 * view is full; all on `stream` (an hrx.Stream), in its order. The
 * handles are checked before each submission (another thread may close
 * them between two: then the fill stops there with the closed error). 0,
 * or -1 with an exception set. */
int hrx_py_typed_fill_wide(hrx_py_state_t* state, PyObject* stream,
                           PyObject* dst, const uint8_t* pattern,
                           size_t width);

/* Device.empty(shape, dtype): a new typed buffer of `device` (a Device
 * handle) covering shape's elements, uninitialized. */
PyObject* hrx_py_typed_empty(hrx_py_state_t* state, PyObject* device,
                             PyObject* shape, PyObject* dtype);
/* Device.zeros(shape, dtype, stream=None): empty, then a byte fill of 0 on
 * `stream` (ordered there; returns at once) or, with None, on a stream of
 * its own that is synchronized before this returns. */
PyObject* hrx_py_typed_zeros(hrx_py_state_t* state, PyObject* device,
                             PyObject* shape, PyObject* dtype,
                             PyObject* stream);
/* Device.asarray(array, dtype=None, stream=None) and Stream.to_device: a
 * typed buffer of numpy.ascontiguousarray(array, dtype)'s dtype and shape
 * (a producer of host DLPack tensors only goes through numpy.from_dlpack)
 * holding its data, uploaded on `stream` (ordered there; `array` may be
 * reused at once) or, with None, on a stream of its own that is
 * synchronized before this returns. */
PyObject* hrx_py_typed_asarray(hrx_py_state_t* state, PyObject* device,
                               PyObject* array, PyObject* dtype,
                               PyObject* stream);

/* Stream.read's Readback for `source`: a typed view's read returns an
 * array of its element type and shape. Takes over `readback` (a new
 * reference, or NULL: passed through). */
PyObject* hrx_py_typed_readback(hrx_py_state_t* state, PyObject* readback,
                                PyObject* source);

#endif /* HRX_PYTHON_TYPED_VIEW_H_ */
