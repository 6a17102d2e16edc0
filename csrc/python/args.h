/* Argument conversion shared by the binding files. Each sets a Python error
 * that says what was wrong and what is allowed, and returns -1 on failure. */
#ifndef HRX_PYTHON_ARGS_H_
#define HRX_PYTHON_ARGS_H_

#include "module.h"

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

/* Arguments of a METH_FASTCALL | METH_KEYWORDS call by name: out[i] is the
 * argument for names[i] (borrowed), NULL when not given. The first
 * `positional` names may also come by position; the first `required` must
 * be given. TypeError (naming `function`) for too many, repeated, unknown
 * or missing arguments. */
int hrx_py_arg_parse(const char* function, PyObject* const* args,
                     Py_ssize_t nargs, PyObject* kwnames,
                     const char* const* names, int count, int positional,
                     int required, PyObject** out);

#endif /* HRX_PYTHON_ARGS_H_ */
