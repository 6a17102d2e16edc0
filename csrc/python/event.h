/* hrx.Event (event.c): a snapshot of a stream's published work. */
#ifndef HRX_PYTHON_EVENT_H_
#define HRX_PYTHON_EVENT_H_

#include "state.h"

/* The type's spec; module.c creates the type (state->event_type). */
extern PyType_Spec hrx_py_event_spec;

/* A new hrx.Event handle that takes over one reference to `event`; on
 * failure the reference is released and NULL returned. */
PyObject* hrx_py_event_wrap(hrx_py_state_t* state, hrx_event_t* event);
/* Borrowed C event of an hrx.Event, or NULL with an error set. */
hrx_event_t* hrx_py_event_unwrap(hrx_py_state_t* state, PyObject* object);

#endif /* HRX_PYTHON_EVENT_H_ */
