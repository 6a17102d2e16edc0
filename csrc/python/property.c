/* The one getter of the handle types' read-only properties. */
#include "property.h"

#include "objects.h"

PyObject* hrx_py_property_get(PyObject* self, void* closure) {
  const hrx_py_property_t* property = closure;
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  if (!state) return NULL;
  void* object = property->kind->object(self);
  if (!object) {
    hrx_py_raise_closed(state, property->kind->name);
    return NULL;
  }
  return property->read(state, object);
}

PyObject* hrx_py_property_closed(PyObject* self, void* closure) {
  const hrx_py_handle_kind_t* kind = closure;
  return PyBool_FromLong(kind->object(self) == NULL);
}
