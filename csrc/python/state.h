/* Module state of the CPython extension hrx._hrx and the mapping of the
 * core's statuses to its exceptions: the bottom of the bindings, which
 * every other file includes. Only csrc/python/ includes Python.h. The
 * module uses multi-phase init; all types and exceptions live in module
 * state (created and added by module.c). */
#ifndef HRX_PYTHON_STATE_H_
#define HRX_PYTHON_STATE_H_

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
  PyTypeObject* kernel_module_type;  /* hrx.Module */
  PyTypeObject* pinned_memory_type;
  PyTypeObject* pinned_scope_type;
  PyTypeObject* result_memory_type; /* hrx.ResultMemory */
  /* numpy.number, numpy.bool_ and numpy.void, imported at the first
   * kernel argument that needs them (NULL before; Py_None when numpy is
   * missing). */
  PyObject* numpy_number;
  PyObject* numpy_bool;
  PyObject* numpy_void;
  /* numpy.signedinteger, numpy.unsignedinteger and numpy.floating, with
   * the three above (the kinds a typed parameter takes). */
  PyObject* numpy_signed;
  PyObject* numpy_unsigned;
  PyObject* numpy_floating;
  /* Exceptions, indexed by hrx_status_code_t (index 0 is hrx.Error). */
  PyObject* errors[HRX_STATUS_DEVICE_ERROR + 1];
} hrx_py_state_t;

/* The module's definition (module.c); used here only as the identity that
 * finds the module of a type. */
extern struct PyModuleDef hrx_py_module_def;

hrx_py_state_t* hrx_py_state(PyObject* module);
/* Module state from an instance of one of the module's heap types (or a
 * subclass of one), or NULL with an error set. */
hrx_py_state_t* hrx_py_state_from_type(PyTypeObject* type);

/* tp_traverse of the handle types that keep no Python object: visits the
 * heap type only. */
int hrx_py_traverse_type(PyObject* self, visitproc visit, void* arg);

/* Raises the hrx.Error subclass for the status's code with its message and
 * frees the status. Returns NULL, for `return hrx_py_raise(...)`. GIL
 * held, as for every function of the bindings unless it says otherwise. */
PyObject* hrx_py_raise(hrx_py_state_t* state, hrx_status_t status);
/* For int-returning slots: raises and returns -1. */
int hrx_py_raise_int(hrx_py_state_t* state, hrx_status_t status);

/* Raises hrx.FailedPreconditionError("<what> is closed; open a new one"). */
void hrx_py_raise_closed(hrx_py_state_t* state, const char* what);

#endif /* HRX_PYTHON_STATE_H_ */
