/* hrx.Stream and hrx.fabric.Queue (stream.c). */
#ifndef HRX_PYTHON_STREAM_H_
#define HRX_PYTHON_STREAM_H_

#include "state.h"

/* The types' specs; module.c creates them (state->stream_type, and
 * state->queue_type with Stream as its base). */
extern PyType_Spec hrx_py_stream_spec;
extern PyType_Spec hrx_py_queue_spec;

/* A new handle of `type` (Stream or Queue) that takes over one reference
 * to `stream`; on failure the reference is released (without the GIL) and
 * NULL returned. */
PyObject* hrx_py_stream_wrap(PyTypeObject* type, hrx_stream_t* stream);
/* Borrowed C stream of an hrx.Stream or hrx.fabric.Queue, or NULL with an
 * error set. */
hrx_stream_t* hrx_py_stream_unwrap(hrx_py_state_t* state, PyObject* object);

#endif /* HRX_PYTHON_STREAM_H_ */
