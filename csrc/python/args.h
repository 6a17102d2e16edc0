/* Argument conversion shared by the binding files. Each sets a Python error
 * that says what was wrong and what is allowed, and returns -1 on failure. */
#ifndef HRX_PYTHON_ARGS_H_
#define HRX_PYTHON_ARGS_H_

#include "module.h"

/* An integer (int or an object with __index__, never bool or float) into
 * int64. TypeError for other types; OverflowError becomes ValueError. */
int hrx_py_arg_int64(PyObject* object, const char* what, int64_t* out);
/* A non-negative integer into uint64 (ValueError if negative). */
int hrx_py_arg_uint64(PyObject* object, const char* what, uint64_t* out);

#endif /* HRX_PYTHON_ARGS_H_ */
