/* Shared declarations of the CPython extension hrx._hrx. Only csrc/python/
 * includes Python.h. The module uses multi-phase init; all types and
 * exceptions live in module state. */
#ifndef HRX_PYTHON_MODULE_H_
#define HRX_PYTHON_MODULE_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "hrx.h"

typedef struct hrx_py_state_s {
  PyTypeObject* device_type;
  PyTypeObject* stream_type;
  PyTypeObject* buffer_type;
  PyTypeObject* event_type;
  PyTypeObject* readback_type;
  PyTypeObject* queue_type;       /* hrx.fabric.Queue */
  PyTypeObject* graph_type;
  PyTypeObject* graph_node_type;
  PyTypeObject* completion_type;
  PyTypeObject* kernel_type;
  /* numpy.number, numpy.bool_ and numpy.void, imported at the first
   * kernel argument that needs them (NULL before; Py_None when numpy is
   * missing). */
  PyObject* numpy_number;
  PyObject* numpy_bool;
  PyObject* numpy_void;
  /* Exceptions, indexed by hrx_status_code_t (index 0 is hrx.Error). */
  PyObject* errors[HRX_STATUS_DEVICE_ERROR + 1];
} hrx_py_state_t;

hrx_py_state_t* hrx_py_state(PyObject* module);
/* Module state from an instance of one of the module's heap types. */
hrx_py_state_t* hrx_py_state_from_type(PyTypeObject* type);

/* tp_traverse of the handle types that keep no Python object: visits the
 * heap type only. */
int hrx_py_traverse_type(PyObject* self, visitproc visit, void* arg);

/* Raises the hrx.Error subclass for the status's code with its message and
 * frees the status. Returns NULL, for `return hrx_py_raise(...)`. */
PyObject* hrx_py_raise(hrx_py_state_t* state, hrx_status_t status);
/* For int-returning slots: raises and returns -1. */
int hrx_py_raise_int(hrx_py_state_t* state, hrx_status_t status);

/* Borrowed C device of an hrx.Device, or NULL with TypeError/closed error. */
hrx_device_t* hrx_py_device_unwrap(hrx_py_state_t* state, PyObject* object);
/* Borrowed C stream of an hrx.Stream or hrx.fabric.Queue, or NULL with an
 * error set. */
hrx_stream_t* hrx_py_stream_unwrap(hrx_py_state_t* state, PyObject* object);

/* Type specs registered by the module, one file each. */
int hrx_py_device_register(PyObject* module, hrx_py_state_t* state);
int hrx_py_stream_register(PyObject* module, hrx_py_state_t* state);
int hrx_py_buffer_register(PyObject* module, hrx_py_state_t* state);
int hrx_py_event_register(PyObject* module, hrx_py_state_t* state);
int hrx_py_readback_register(PyObject* module, hrx_py_state_t* state);
int hrx_py_graph_register(PyObject* module, hrx_py_state_t* state);
int hrx_py_completion_register(PyObject* module, hrx_py_state_t* state);
int hrx_py_kernel_register(PyObject* module, hrx_py_state_t* state);

/* Module-level functions defined outside module.c. */
PyObject* hrx_py_bench_run(PyObject* module, PyObject* args, PyObject* kwargs);
PyObject* hrx_py_bench_launch(PyObject* module, PyObject* args,
                              PyObject* kwargs);
PyObject* hrx_py_bench_kernel_source(PyObject* module, PyObject* language);
PyObject* hrx_py_graph_interpreter_exiting(PyObject* module, PyObject* unused);
#ifdef HRX_TESTING_BUILD
/* The testing build's module functions (testing.c). */
int hrx_py_testing_register(PyObject* module);
#endif

#endif /* HRX_PYTHON_MODULE_H_ */
