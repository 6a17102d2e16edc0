/* hrx.Completion (completion.c): the host-side completion of a graph
 * launch with host callbacks. */
#ifndef HRX_PYTHON_COMPLETION_H_
#define HRX_PYTHON_COMPLETION_H_

#include "state.h"

/* The type's spec; module.c creates the type (state->completion_type). */
extern PyType_Spec hrx_py_completion_spec;

/* A new hrx.Completion handle that takes over one reference to
 * `completion`; on failure the reference is released (without the GIL)
 * and NULL returned. */
PyObject* hrx_py_completion_wrap(hrx_py_state_t* state,
                                 hrx_completion_t* completion);
/* Borrowed C completion of an hrx.Completion, or NULL with TypeError. */
hrx_completion_t* hrx_py_completion_unwrap(hrx_py_state_t* state,
                                           PyObject* object);

#endif /* HRX_PYTHON_COMPLETION_H_ */
