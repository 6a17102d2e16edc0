/* Module state and the status-to-exception mapping (state.h). */
#include "state.h"

hrx_py_state_t* hrx_py_state(PyObject* module) {
  return (hrx_py_state_t*)PyModule_GetState(module);
}

hrx_py_state_t* hrx_py_state_from_type(PyTypeObject* type) {
  PyObject* module = PyType_GetModuleByDef(type, &hrx_py_module_def);
  return module ? hrx_py_state(module) : NULL;
}

int hrx_py_traverse_type(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  return 0;
}

PyObject* hrx_py_raise(hrx_py_state_t* state, hrx_status_t status) {
  hrx_status_code_t code = hrx_status_code(status);
  PyObject* type = (code > 0 && code <= HRX_STATUS_DEVICE_ERROR)
                       ? state->errors[code]
                       : state->errors[0];
  PyErr_SetString(type, hrx_status_message(status));
  hrx_status_free(status);
  return NULL;
}

int hrx_py_raise_int(hrx_py_state_t* state, hrx_status_t status) {
  hrx_py_raise(state, status);
  return -1;
}

void hrx_py_raise_closed(hrx_py_state_t* state, const char* what) {
  PyErr_Format(state->errors[HRX_STATUS_FAILED_PRECONDITION],
               "%s is closed; open a new one", what);
}
