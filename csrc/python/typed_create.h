/* Typed buffers made from Python (typed_create.c): Device.empty,
 * Device.zeros, Device.asarray and Stream.to_device. They allocate through
 * the device's allocate method and fill or upload through the stream's
 * methods, so they issue nothing those calls do not check. Only device.c
 * and stream.c include this. Everything here runs with the GIL (the
 * stream methods it calls release it where they wait). */
#ifndef HRX_PYTHON_TYPED_CREATE_H_
#define HRX_PYTHON_TYPED_CREATE_H_

#include "state.h"

/* Device.empty(shape, dtype): a new typed buffer of `device` (a Device
 * handle) covering shape's elements, uninitialized. */
PyObject* hrx_py_typed_empty(hrx_py_state_t* state, PyObject* device,
                             PyObject* shape, PyObject* dtype);
/* Device.zeros(shape, dtype, stream=None): empty, then a byte fill of 0 on
 * `stream` (ordered there; returns at once) or, with None, on a stream of
 * its own that is synchronized before this returns. */
PyObject* hrx_py_typed_zeros(hrx_py_state_t* state, PyObject* device,
                             PyObject* shape, PyObject* dtype,
                             PyObject* stream);
/* Device.asarray(array, dtype=None, stream=None) and Stream.to_device: a
 * typed buffer of numpy.ascontiguousarray(array, dtype)'s dtype and shape
 * (a producer of host DLPack tensors only goes through numpy.from_dlpack)
 * holding its data, uploaded on `stream` (ordered there; `array` may be
 * reused at once) or, with None, on a stream of its own that is
 * synchronized before this returns. */
PyObject* hrx_py_typed_asarray(hrx_py_state_t* state, PyObject* device,
                               PyObject* array, PyObject* dtype,
                               PyObject* stream);

#endif /* HRX_PYTHON_TYPED_CREATE_H_ */
