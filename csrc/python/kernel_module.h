/* hrx.Module (kernel_module.c): the kernels of one compile of a source
 * (Device.compile_module, in device.c, makes them). */
#ifndef HRX_PYTHON_KERNEL_MODULE_H_
#define HRX_PYTHON_KERNEL_MODULE_H_

#include "state.h"

/* The type's spec; module.c creates the type (state->kernel_module_type). */
extern PyType_Spec hrx_py_kernel_module_spec;

/* A new hrx.Module of `kernels` (hrx.Kernel objects, borrowed: the module
 * takes references of its own), named by `names` (str objects, borrowed),
 * `count` of each. NULL with an error set on failure. */
PyObject* hrx_py_kernel_module_make(hrx_py_state_t* state,
                                    PyObject* const* names,
                                    PyObject* const* kernels,
                                    Py_ssize_t count);

#endif /* HRX_PYTHON_KERNEL_MODULE_H_ */
