/* hrx.Buffer (buffer.c): device memory, or a view of it. */
#ifndef HRX_PYTHON_BUFFER_H_
#define HRX_PYTHON_BUFFER_H_

#include "dtype.h"
#include "state.h"

/* The type's spec; module.c creates the type (state->buffer_type). */
extern PyType_Spec hrx_py_buffer_spec;

/* A new hrx.Buffer handle of [offset, offset + length) of `buffer`, taking
 * over one reference to it; on failure the reference is released (without
 * the GIL) and NULL returned. */
PyObject* hrx_py_buffer_wrap(hrx_py_state_t* state, hrx_buffer_t* buffer,
                             uint64_t offset, uint64_t length);

/* A buffer handle's element type: for an hrx.Buffer, its dtype (kind 0:
 * untyped), shape (BORROWED tuple; NULL when untyped) and length in bytes,
 * also once closed; false (and untyped) for any other object. Sets no
 * error. */
typedef struct {
  hrx_py_dtype_t dtype;
  PyObject* shape;
  uint64_t nbytes;
} hrx_py_buffer_type_t;
bool hrx_py_buffer_type(hrx_py_state_t* state, PyObject* object,
                        hrx_py_buffer_type_t* out);
/* Gives a fresh, untyped whole-allocation handle (hrx_py_allocate's) an
 * element type and shape (a tuple, retained) covering all of its bytes. */
void hrx_py_buffer_set_type(PyObject* buffer, hrx_py_dtype_t dtype,
                            PyObject* shape);

/* allocate(nbytes) shared by Device and Stream; takes over the caller's
 * reference to `device` (released with the GIL released, like every
 * release: handle.h). */
PyObject* hrx_py_allocate(hrx_py_state_t* state, hrx_device_t* device,
                          uint64_t size);

/* The view an hrx.Buffer names, or -1 with an error set (TypeError naming
 * `role` for another object, FailedPreconditionError for a closed one). On
 * success out_view->buffer is RETAINED, so the call survives the handle
 * being closed while the GIL is released; drop it with
 * hrx_py_release_held. */
int hrx_py_buffer_view(hrx_py_state_t* state, PyObject* object,
                       const char* role, hrx_view_t* out_view);
/* The same with out_view->buffer BORROWED from the open handle: valid only
 * until the GIL is next released (submit.h). */
int hrx_py_buffer_view_borrowed(hrx_py_state_t* state, PyObject* object,
                                const char* role, hrx_view_t* out_view);

/* For an object known to be an hrx.Buffer: whether it is open, and then its
 * view, BORROWED as above; sets no error. */
bool hrx_py_buffer_open_view(PyObject* object, hrx_view_t* out_view);

#endif /* HRX_PYTHON_BUFFER_H_ */
