/* Argument conversion shared by the binding files. Each sets a Python error
 * that says what was wrong and what is allowed, and returns -1 on failure.
 *
 * Methods take their arguments in one way, CPython's format strings:
 * METH_NOARGS for none, METH_O for a single positional-only one,
 * METH_VARARGS and PyArg_ParseTuple when all are positional-only (a keyword
 * is then refused as "takes no keyword arguments"), and otherwise
 * METH_VARARGS | METH_KEYWORDS and PyArg_ParseTupleAndKeywords ("$" before
 * keyword-only arguments); each format names the method. The objects are
 * then converted with the functions below. Every method's docstring starts with
 * its text signature, "name($self, a, /)\n--\n\n". */
#ifndef HRX_PYTHON_ARGS_H_
#define HRX_PYTHON_ARGS_H_

#include "state.h"

/* An integer (int or an object with __index__, never bool or float) into
 * int64. TypeError for other types; a value outside int64 is
 * hrx.InvalidArgumentError (a ValueError). May run Python code (__index__):
 * convert arguments before taking references to hrx objects. */
int hrx_py_arg_int64(hrx_py_state_t* state, PyObject* object, const char* what,
                     int64_t* out);
/* A non-negative integer into uint64 (hrx.InvalidArgumentError if negative
 * or too large). */
int hrx_py_arg_uint64(hrx_py_state_t* state, PyObject* object,
                      const char* what, uint64_t* out);

#endif /* HRX_PYTHON_ARGS_H_ */
