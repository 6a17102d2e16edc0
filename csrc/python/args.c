/* Integer arguments (args.h). */
#include "args.h"

/* The int value of `object` (a new reference), or NULL with TypeError for
 * bool, float and every other non-integer. */
static PyObject* hrx_py_index(PyObject* object, const char* what) {
  if (PyBool_Check(object) || !PyIndex_Check(object)) {
    PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what,
                 Py_TYPE(object)->tp_name);
    return NULL;
  }
  return PyNumber_Index(object);
}

int hrx_py_arg_int64(hrx_py_state_t* state, PyObject* object, const char* what,
                     int64_t* out) {
  PyObject* index = hrx_py_index(object, what);
  if (!index) return -1;
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(index, &overflow);
  Py_DECREF(index);
  if (value == -1 && PyErr_Occurred()) return -1;
  if (overflow) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "%s is out of the 64-bit integer range", what);
    return -1;
  }
  *out = value;
  return 0;
}

int hrx_py_arg_uint64(hrx_py_state_t* state, PyObject* object,
                      const char* what, uint64_t* out) {
  PyObject* index = hrx_py_index(object, what);
  if (!index) return -1;
  if (PyObject_RichCompareBool(index, Py_False, Py_LT) == 1) {
    Py_DECREF(index);
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "%s must be >= 0", what);
    return -1;
  }
  unsigned long long value = PyLong_AsUnsignedLongLong(index);
  Py_DECREF(index);
  if (value == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "%s is out of the 64-bit unsigned range", what);
    return -1;
  }
  *out = value;
  return 0;
}

int hrx_py_arg_count(const char* signature, Py_ssize_t nargs, int count) {
  if (nargs == count) return 0;
  PyErr_Format(PyExc_TypeError, "%s takes %d argument%s (%zd given)", signature,
               count, count == 1 ? "" : "s", nargs);
  return -1;
}

int hrx_py_arg_parse(const char* function, PyObject* const* args,
                     Py_ssize_t nargs, PyObject* kwnames,
                     const char* const* names, int count, int positional,
                     int required, PyObject** out) {
  for (int i = 0; i < count; ++i) out[i] = NULL;
  if (nargs > positional) {
    PyErr_Format(PyExc_TypeError,
                 "%s() takes at most %d positional argument%s (%zd given)",
                 function, positional, positional == 1 ? "" : "s", nargs);
    return -1;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) out[i] = args[i];
  Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < keywords; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    int found = -1;
    for (int i = 0; i < count && found < 0; ++i) {
      if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0) found = i;
    }
    if (found < 0) {
      PyErr_Format(PyExc_TypeError,
                   "%s() got an unexpected keyword argument '%U'", function,
                   key);
      return -1;
    }
    if (out[found]) {
      PyErr_Format(PyExc_TypeError,
                   "%s() got multiple values for argument '%s'", function,
                   names[found]);
      return -1;
    }
    out[found] = args[nargs + k];
  }
  for (int i = 0; i < required; ++i) {
    if (!out[i]) {
      PyErr_Format(PyExc_TypeError,
                   "%s() missing required argument '%s' (pos %d)", function,
                   names[i], i + 1);
      return -1;
    }
  }
  return 0;
}
