/* Module functions of the C benchmark driver for hrx.bench (bench.c):
 * hrx._hrx.bench_run, bench_launch and bench_kernel_source, in module.c's
 * method table. */
#ifndef HRX_PYTHON_BENCH_H_
#define HRX_PYTHON_BENCH_H_

#include "state.h"

PyObject* hrx_py_bench_run(PyObject* module, PyObject* const* args,
                           Py_ssize_t nargs, PyObject* kwnames);
PyObject* hrx_py_bench_launch(PyObject* module, PyObject* const* args,
                              Py_ssize_t nargs, PyObject* kwnames);
PyObject* hrx_py_bench_kernel_source(PyObject* module, PyObject* language);

#endif /* HRX_PYTHON_BENCH_H_ */
