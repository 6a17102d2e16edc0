/* hrx.Readback (readback.c): an asynchronous device-to-host read. */
#ifndef HRX_PYTHON_READBACK_H_
#define HRX_PYTHON_READBACK_H_

#include "state.h"

/* The type's spec; module.c creates the type (state->readback_type). */
extern PyType_Spec hrx_py_readback_spec;

/* A new hrx.Readback handle that takes over `readback` (released on
 * failure, and NULL returned). */
PyObject* hrx_py_readback_wrap(hrx_py_state_t* state,
                               hrx_readback_t* readback);
/* The same for Stream.read_into: takes the export `into` of its `out`
 * (released with the read, also on failure). */
PyObject* hrx_py_readback_wrap_into(hrx_py_state_t* state,
                                    hrx_readback_t* readback,
                                    Py_buffer* into);
/* Makes wait() of a Stream.read Readback return an array of `dtype` (a
 * numpy.dtype) and `shape` (a tuple) instead of uint8 bytes; both are
 * retained. */
void hrx_py_readback_set_type(PyObject* readback, PyObject* dtype,
                              PyObject* shape);
/* Waits for `readback` (taken over: released here), keeping the GIL when
 * the read is done or about to be (submit.h), and copies its bytes to
 * `out` (at least its length). 0, or -1 with an exception set (the core's
 * failure, or KeyboardInterrupt: then the read is abandoned, its staging
 * returned once it completes, and `out` unchanged). For
 * Stream.read_blocking. */
int hrx_py_readback_copy_out(hrx_py_state_t* state, hrx_readback_t* readback,
                             void* out);

#endif /* HRX_PYTHON_READBACK_H_ */
