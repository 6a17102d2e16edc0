/* The testing build's module functions (testing.c; HRX_TESTING_BUILD
 * only). */
#ifndef HRX_PYTHON_TESTING_H_
#define HRX_PYTHON_TESTING_H_

#include "state.h"

#ifdef HRX_TESTING_BUILD
/* Adds the _testing_* functions to the module, at module exec. */
int hrx_py_testing_register(PyObject* module);
#endif

#endif /* HRX_PYTHON_TESTING_H_ */
