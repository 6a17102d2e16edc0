/* The one getter of the handle types' read-only properties. */
#include "property.h"

PyObject* hrx_py_property_get(PyObject* self, void* closure) {
  const hrx_py_property_t* property = closure;
  void* object = hrx_py_handle_get(self, property->kind);
  if (!object) return NULL;
  return property->read(hrx_py_state_from_type(Py_TYPE(self)), object);
}

PyObject* hrx_py_property_closed(PyObject* self, void* closure) {
  const hrx_py_handle_kind_t* kind = closure;
  return PyBool_FromLong(hrx_py_handle_object(self, kind) == NULL);
}
