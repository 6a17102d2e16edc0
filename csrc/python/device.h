/* hrx.Device (device.c): its methods, among them those that make the
 * device's streams, buffers and kernels. */
#ifndef HRX_PYTHON_DEVICE_H_
#define HRX_PYTHON_DEVICE_H_

#include "state.h"

/* The type's spec; module.c creates the type (state->device_type). */
extern PyType_Spec hrx_py_device_spec;

/* {variable, value, wanted, source} (variable and value None when no
 * variable applies), for Device.pool_stats and hrx.backends(). */
PyObject* hrx_py_connection_budget(const hrx_connection_budget_t* budget);

#endif /* HRX_PYTHON_DEVICE_H_ */
