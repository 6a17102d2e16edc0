/* Pinned host memory in Python (pinned.c): the owner of Device.empty_pinned's
 * arrays (hrx.PinnedMemory), Device.pin's scope (hrx.PinnedScope) and the
 * Device methods that make and query them. */
#ifndef HRX_PYTHON_PINNED_H_
#define HRX_PYTHON_PINNED_H_

#include "state.h"

/* The types' specs; module.c creates the types (state->pinned_memory_type,
 * state->pinned_scope_type). */
extern PyType_Spec hrx_py_pinned_memory_spec;
extern PyType_Spec hrx_py_pinned_scope_spec;

/* Device.empty_pinned(shape, dtype="uint8"), Device.pin(obj) and
 * Device.is_pinned(obj) (device.c lists them). */
PyObject* hrx_py_device_empty_pinned(PyObject* self, PyObject* args,
                                     PyObject* kwargs);
PyObject* hrx_py_device_pin(PyObject* self, PyObject* object);
PyObject* hrx_py_device_is_pinned(PyObject* self, PyObject* object);

#endif /* HRX_PYTHON_PINNED_H_ */
