/* Argument conversion shared by the binding files. Each sets a Python error
 * that says what was wrong and what is allowed, and returns -1 on failure.
 *
 * Methods and module functions take their arguments one way: METH_NOARGS
 * for none, METH_O for a single positional-only one, and otherwise
 * METH_FASTCALL (all positional-only: CPython refuses a keyword as "takes
 * no keyword arguments", hrx_py_arg_count checks the count) or
 * METH_FASTCALL | METH_KEYWORDS with hrx_py_arg_parse naming every
 * argument. No argument tuple or dict is built: a submission costs a few
 * hundred nanoseconds, and building them would add a good part of that.
 * Constructors (tp_new), which CPython calls with a tuple and a dict, and
 * the class methods that hand their arguments to one (Device.open,
 * Stream.open), use PyArg_ParseTupleAndKeywords. The objects are then converted with the
 * functions below. Every method's docstring starts with its text
 * signature, "name($self, a, /)\n--\n\n". */
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

/* Exactly `count` positional arguments of a METH_FASTCALL call, else
 * TypeError naming `signature` ("fill(dst, byte)"). */
int hrx_py_arg_count(const char* signature, Py_ssize_t nargs, int count);

/* Arguments of a METH_FASTCALL | METH_KEYWORDS call by name: out[i] is the
 * argument for names[i] (borrowed), NULL when not given. The first
 * `positional` names may also come by position, the others by keyword
 * only; the first `required` must be given. TypeError (naming `function`)
 * for too many, repeated, unknown or missing arguments. */
int hrx_py_arg_parse(const char* function, PyObject* const* args,
                     Py_ssize_t nargs, PyObject* kwnames,
                     const char* const* names, int count, int positional,
                     int required, PyObject** out);

#endif /* HRX_PYTHON_ARGS_H_ */
