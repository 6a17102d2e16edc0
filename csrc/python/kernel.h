/* hrx.Kernel (kernel.c): a kernel compiled or loaded for one device. */
#ifndef HRX_PYTHON_KERNEL_H_
#define HRX_PYTHON_KERNEL_H_

#include "state.h"

/* The type's spec; module.c creates the type (state->kernel_type). */
extern PyType_Spec hrx_py_kernel_spec;

/* A new hrx.Kernel handle that takes over one reference to `kernel`; on
 * failure the reference is released (without the GIL) and NULL
 * returned. */
PyObject* hrx_py_kernel_wrap(hrx_py_state_t* state, hrx_kernel_t* kernel);
/* Borrowed C kernel of an hrx.Kernel, or NULL with an error set. */
hrx_kernel_t* hrx_py_kernel_unwrap(hrx_py_state_t* state, PyObject* object);

#endif /* HRX_PYTHON_KERNEL_H_ */
