/* Typed views (typed_view.c): the rules an element type and shape
 * (dtype.h) bring to the stream and graph calls on an hrx.Buffer handle
 * that carries them: checks of host memory, copies and fill values, and
 * the typed result of a read. The core stays byte-based: a typed view is
 * a byte range of an allocation plus this metadata, kept by the binding
 * only. An untyped view (kind 0) is a byte container, exactly as buffers
 * always were. Issues no stream command. Everything here runs with the
 * GIL. */
#ifndef HRX_PYTHON_TYPED_VIEW_H_
#define HRX_PYTHON_TYPED_VIEW_H_

#include "dlpack.h"
#include "dtype.h"
#include "host_memory.h"
#include "state.h"

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

/* Stream.read's Readback for `source`: a typed view's read returns an
 * array of its element type and shape. Takes over `readback` (a new
 * reference, or NULL: passed through). */
PyObject* hrx_py_typed_readback(hrx_py_state_t* state, PyObject* readback,
                                PyObject* source);

#endif /* HRX_PYTHON_TYPED_VIEW_H_ */
