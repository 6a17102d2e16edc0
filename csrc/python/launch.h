/* Kernel launch arguments from Python (launch.c), for Stream.launch and
 * Graph.kernel. */
#ifndef HRX_PYTHON_LAUNCH_H_
#define HRX_PYTHON_LAUNCH_H_

#include "state.h"

/* A value argument's bytes: numpy's largest number, clongdouble, is 32;
 * a structured (numpy.void) scalar may have up to 64. */
typedef union {
  unsigned char bytes[64];
  long double align;
} hrx_py_kernel_value_t;

/* One launch converted from Python. Every pointer in it is BORROWED from
 * open handles and the argument objects: valid until the GIL is next
 * released (submit.h retains what it needs across a release). */
typedef struct hrx_py_launch_s {
  hrx_kernel_t* kernel;
  hrx_launch_config_t config;
  size_t count;
  hrx_kernel_arg_t args[HRX_KERNEL_MAX_ARGS];
  hrx_py_kernel_value_t values[HRX_KERNEL_MAX_ARGS];
} hrx_py_launch_t;

/* The device a launch's foreign arrays must be on, or NULL with an error
 * (a closed stream or graph): asked only when such an argument comes. */
typedef hrx_device_t* (*hrx_py_launch_device_fn)(PyObject* owner);

/* Converts the arguments of Stream.launch / Graph.kernel (kernel, grid,
 * block, args, shared; args and shared may be NULL for their defaults)
 * into *out, or -1 with an error. Python code the arguments run (their
 * __cuda_array_interface__ or __dlpack__) runs before any handle is
 * borrowed. The rules (types, sizes, what is refused) are in
 * docs/kernels.md, "Arguments". */
int hrx_py_launch_convert(hrx_py_state_t* state, PyObject* kernel,
                          PyObject* grid, PyObject* block, PyObject* args,
                          PyObject* shared, hrx_py_launch_device_fn device_of,
                          PyObject* owner, hrx_py_launch_t* out);

#endif /* HRX_PYTHON_LAUNCH_H_ */
