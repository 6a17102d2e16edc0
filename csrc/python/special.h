/* Special methods with documentation of their own. CPython documents the
 * __new__ it adds for a tp_new generically ("Create and return a new
 * object") and adds every ordering comparison for a tp_richcompare; these
 * helpers give a type a __new__ whose docstring says what it takes and
 * leave out the comparisons the type does not answer. */
#ifndef HRX_PYTHON_SPECIAL_H_
#define HRX_PYTHON_SPECIAL_H_

#include <stddef.h>

#include "state.h"

/* Type.__new__(subtype, *args, **kwargs), as CPython's generic wrapper:
 * checks that `subtype` is a subtype of the module's type at `field`
 * (offsetof in hrx_py_state_t; a static method gets no type of its own)
 * and calls that type's tp_new. */
PyObject* hrx_py_new_method(PyObject* args, PyObject* kwargs, size_t field);

/* Defines <prefix>_new_method for the state's type `field`, and the
 * PyMethodDef entry of __new__ that replaces the generic one
 * (METH_COEXIST); `doc` is a string literal that starts with the text
 * signature ("__new__($type, device)\n--\n\n..."). */
#define HRX_PY_NEW_FUNCTION(prefix, field)                                \
  static PyObject* prefix##_new_method(PyObject* unused, PyObject* args,  \
                                       PyObject* kwargs) {                \
    (void)unused;                                                         \
    return hrx_py_new_method(args, kwargs,                                \
                             offsetof(hrx_py_state_t, field));            \
  }
#define HRX_PY_NEW_METHOD(prefix, doc)                                    \
  {"__new__", (PyCFunction)(void (*)(void))prefix##_new_method,           \
   METH_VARARGS | METH_KEYWORDS | METH_STATIC | METH_COEXIST, doc}

/* Removes __lt__, __le__, __gt__ and __ge__ from a type whose
 * tp_richcompare answers only == and != (NotImplemented otherwise), so
 * that they are inherited from object like those of a Python class that
 * defines only __eq__: `a < b` still raises TypeError. 0, or -1 with an
 * exception set. */
int hrx_py_drop_ordering(PyTypeObject* type);

#endif /* HRX_PYTHON_SPECIAL_H_ */
