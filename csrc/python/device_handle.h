/* The hrx.Device handle as every binding file meets it: a Device is made
 * for each `device` property and unwrapped from each argument naming a
 * device, so its layout and handle functions sit in the bottom layer with
 * the other handle helpers (handle.h). Device's methods are in device.c. */
#ifndef HRX_PYTHON_DEVICE_HANDLE_H_
#define HRX_PYTHON_DEVICE_HANDLE_H_

#include "handle.h"

typedef struct {
  PyObject_HEAD
  hrx_device_t* device;      /* retained; NULL once closed */
} hrx_py_device_t;

/* close(), dealloc and the closed check of hrx.Device. */
extern const hrx_py_handle_kind_t hrx_py_device_kind;

/* A new hrx.Device handle that takes over one reference to `device`; on
 * failure the reference is released (without the GIL) and NULL returned. */
PyObject* hrx_py_device_wrap(hrx_py_state_t* state, hrx_device_t* device);
/* A new hrx.Device handle of a device the caller borrows (retained here). */
PyObject* hrx_py_device_ref(hrx_py_state_t* state, hrx_device_t* device);
/* Borrowed C device of an hrx.Device, or NULL with TypeError/closed error:
 * valid until the GIL is next released (retain it to keep it longer). */
hrx_device_t* hrx_py_device_unwrap(hrx_py_state_t* state, PyObject* object);
/* The one argument `device` of a constructor (format "O:Graph"): its
 * borrowed C device and the module state, or NULL with an error set. */
hrx_device_t* hrx_py_device_argument(PyTypeObject* type, PyObject* args,
                                     PyObject* kwargs, const char* format,
                                     hrx_py_state_t** out_state);

/* 0 when the device is the hip backend on NVIDIA (the CUDA protocols
 * apply); else -1 with AttributeError saying that `what` does not apply to
 * this device (hasattr() is then False, as for an object without the
 * protocol). */
int hrx_py_require_cuda(hrx_device_t* device, const char* what);

#endif /* HRX_PYTHON_DEVICE_HANDLE_H_ */
