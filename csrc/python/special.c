/* Special methods with documentation of their own (special.h). */
#include "special.h"

PyObject* hrx_py_new_method(PyObject* args, PyObject* kwargs, size_t field) {
  Py_ssize_t count = PyTuple_GET_SIZE(args);
  if (count < 1 || !PyType_Check(PyTuple_GET_ITEM(args, 0))) {
    PyErr_SetString(PyExc_TypeError,
                    "__new__(X, ...): X must be the type to create");
    return NULL;
  }
  PyTypeObject* subtype = (PyTypeObject*)PyTuple_GET_ITEM(args, 0);
  hrx_py_state_t* state = hrx_py_state_from_type(subtype);
  if (!state) {   /* not a type of this module */
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "__new__(%s): %s is not a type of hrx",
                 subtype->tp_name, subtype->tp_name);
    return NULL;
  }
  PyTypeObject* type = *(PyTypeObject**)((char*)state + field);
  if (!PyType_IsSubtype(subtype, type)) {
    PyErr_Format(PyExc_TypeError, "%s.__new__(%s): %s is not a subtype of %s",
                 type->tp_name, subtype->tp_name, subtype->tp_name,
                 type->tp_name);
    return NULL;
  }
  PyObject* rest = PyTuple_GetSlice(args, 1, count);
  if (!rest) return NULL;
  PyObject* made = type->tp_new(subtype, rest, kwargs);
  Py_DECREF(rest);
  return made;
}

int hrx_py_drop_ordering(PyTypeObject* type) {
  static const char* const names[] = {"__lt__", "__le__", "__gt__", "__ge__"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    if (PyDict_DelItemString(type->tp_dict, names[i]) < 0) return -1;
  }
  PyType_Modified(type);
  return 0;
}
