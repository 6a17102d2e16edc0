/* The hrx.Device handle (device_handle.h). */
#include "device_handle.h"

#include <string.h>

static void hrx_py_device_release(void* device) {
  /* The last release tears the device down, waiting for its queues. */
  hrx_device_release(device);
}

const hrx_py_handle_kind_t hrx_py_device_kind = {
    .name = "device",
    .field = offsetof(hrx_py_device_t, device),
    .release = hrx_py_device_release};

PyObject* hrx_py_device_wrap(hrx_py_state_t* state, hrx_device_t* device) {
  hrx_py_device_t* self =
      PyObject_GC_New(hrx_py_device_t, state->device_type);
  if (!self) {
    hrx_py_release_without_gil(hrx_py_device_release, device);
    return NULL;
  }
  self->device = device;
  PyObject_GC_Track(self);
  return (PyObject*)self;
}

PyObject* hrx_py_device_ref(hrx_py_state_t* state, hrx_device_t* device) {
  hrx_device_retain(device);
  return hrx_py_device_wrap(state, device);
}

hrx_device_t* hrx_py_device_unwrap(hrx_py_state_t* state, PyObject* object) {
  return hrx_py_handle_unwrap(state, object, state->device_type,
                              &hrx_py_device_kind);
}

hrx_device_t* hrx_py_device_argument(PyTypeObject* type, PyObject* args,
                                     PyObject* kwargs, const char* format,
                                     hrx_py_state_t** out_state) {
  static char* keywords[] = {"device", NULL};
  PyObject* object = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords, &object)) {
    return NULL;
  }
  *out_state = hrx_py_state_from_type(type);
  return *out_state ? hrx_py_device_unwrap(*out_state, object) : NULL;
}

int hrx_py_require_cuda(hrx_device_t* device, const char* what) {
  hrx_device_info_t info;
  hrx_status_t status = hrx_device_query_info(device, &info);
  bool cuda = !status && strcmp(info.platform, "nvidia") == 0;
  hrx_status_free(status);
  if (cuda) return 0;
  PyErr_Format(PyExc_AttributeError,
               "%s applies only to the hip backend on NVIDIA GPUs (CUDA); "
               "this device is %s (%s)%s",
               what, info.backend, info.platform,
               strcmp(info.platform, "amd") == 0
                   ? "; use __dlpack__ or native_handle instead"
                   : "; use __dlpack__ instead");
  return -1;
}
