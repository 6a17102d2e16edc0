/* The conversion of launch arguments that Stream.launch and Graph.kernel
 * share (launch.h). Every rule of a launch (limits, sizes, devices) is the
 * core's; this file only turns Python values into C ones (docs/kernels.md,
 * "Arguments", says which). */
#include "launch.h"

#include <string.h>

#include "args.h"
#include "buffer.h"
#include "dlpack.h"
#include "kernel.h"

/* A grid or block: an int, or a tuple or list of 1 to 3 ints. Extents
 * beyond 32 bits become the largest 32-bit value (the core then names the
 * device's limit); negative ones are refused here. */
static int hrx_py_launch_dims(hrx_py_state_t* state, PyObject* object,
                              const char* what, uint32_t out[3]) {
  out[0] = out[1] = out[2] = 1;
  PyObject* items[3] = {object, NULL, NULL};
  Py_ssize_t count = 1;
  if (PyTuple_Check(object) || PyList_Check(object)) {
    count = PySequence_Fast_GET_SIZE(object);
    if (count < 1 || count > 3) {
      PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                   "%s has %zd extents; give an int or 1 to 3 ints (x, y, z)",
                   what, count);
      return -1;
    }
    for (Py_ssize_t i = 0; i < count; ++i) {
      items[i] = PySequence_Fast_GET_ITEM(object, i);
    }
  }
  static const char* const axes[3] = {"x", "y", "z"};
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* item = items[i];
    int64_t value = 0;
    if (PyLong_CheckExact(item)) {
      int overflow = 0;
      value = PyLong_AsLongLongAndOverflow(item, &overflow);
      if (overflow) value = overflow > 0 ? INT64_MAX : -1;
    } else {
      char name[32];
      PyOS_snprintf(name, sizeof(name), "%s.%s", what, axes[i]);
      if (PyBool_Check(item) || !PyIndex_Check(item)) {
        PyErr_Format(PyExc_TypeError,
                     "%s must be an int or a tuple of 1 to 3 ints, not "
                     "%.100s",
                     what, Py_TYPE(item)->tp_name);
        return -1;
      }
      if (hrx_py_arg_int64(state, item, name, &value) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError)) return -1;
        PyErr_Clear();
        value = INT64_MAX;
      }
    }
    if (value < 0) {
      PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                   "%s.%s is negative; every extent must be at least 1",
                   what, axes[i]);
      return -1;
    }
    out[i] = value > UINT32_MAX ? UINT32_MAX : (uint32_t)value;
  }
  return 0;
}

/* numpy.number, numpy.bool_ and numpy.void, imported once; false when
 * numpy is missing. */
static bool hrx_py_numpy_types(hrx_py_state_t* state) {
  if (!state->numpy_number) {
    PyObject* numpy = PyImport_ImportModule("numpy");
    PyObject** types[3] = {&state->numpy_number, &state->numpy_bool,
                           &state->numpy_void};
    const char* names[3] = {"number", "bool_", "void"};
    bool ok = numpy != NULL;
    for (int i = 0; i < 3; ++i) {
      *types[i] = ok ? PyObject_GetAttrString(numpy, names[i]) : NULL;
      ok = ok && *types[i] && PyType_Check(*types[i]);
    }
    Py_XDECREF(numpy);
    if (!ok) {
      PyErr_Clear();
      for (int i = 0; i < 3; ++i) Py_XSETREF(*types[i], Py_NewRef(Py_None));
    }
  }
  return state->numpy_number != Py_None;
}

/* What an argument names, for messages: "argument 2 (float)". */
#define HRX_PY_ARG_ROLE(buffer, i, item)                                  \
  PyOS_snprintf((buffer), sizeof(buffer), "argument %zd (%.60s)", (i),    \
                Py_TYPE(item)->tp_name)

/* A Python int into `size` bytes (1, 2, 4 or 8), little-endian two's
 * complement: values from the size's signed minimum to its unsigned
 * maximum fit (the parameter's signedness is not known). */
static int hrx_py_launch_int(hrx_py_state_t* state, PyObject* item,
                             Py_ssize_t i, uint32_t size, const char* kernel,
                             hrx_py_kernel_value_t* out) {
  if (size != 1 && size != 2 && size != 4 && size != 8) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "argument %zd is an int; parameter %zd of kernel '%s' is %u "
                 "bytes, which no int fills (an int fills a 1, 2, 4 or "
                 "8-byte parameter); pass a numpy scalar of its type",
                 i, i, kernel, size);
    return -1;
  }
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(item, &overflow);
  if (value == -1 && PyErr_Occurred()) return -1;
  unsigned long long bits = (unsigned long long)value;
  bool fits = true;
  if (overflow > 0) {
    bits = PyLong_AsUnsignedLongLong(item);
    if (bits == (unsigned long long)-1 && PyErr_Occurred()) {
      PyErr_Clear();
      fits = false;
    }
  } else if (overflow < 0) {
    fits = false;
  }
  if (fits && size < 8) {
    long long low = -(1ll << (8 * size - 1));
    unsigned long long high = (1ull << (8 * size)) - 1;
    fits = overflow > 0 ? bits <= high
                        : value >= low && (value < 0 ||
                                           (unsigned long long)value <= high);
  }
  if (!fits) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "argument %zd (int %R) does not fit parameter %zd of kernel "
                 "'%s' (%u bytes: from the signed minimum to the unsigned "
                 "maximum of that size)",
                 i, item, i, kernel, size);
    return -1;
  }
  for (uint32_t b = 0; b < size; ++b) {
    out->bytes[b] = (unsigned char)(bits >> (8 * b));
  }
  return 0;
}

/* Whether the item is a numpy scalar whose bytes are a C value: a number,
 * a bool_, or a structured scalar (numpy.void, for struct parameters). */
static bool hrx_py_is_numpy_scalar(hrx_py_state_t* state, PyObject* item) {
  if (!hrx_py_numpy_types(state)) return false;
  return PyObject_TypeCheck(item, (PyTypeObject*)state->numpy_number) ||
         PyObject_TypeCheck(item, (PyTypeObject*)state->numpy_bool) ||
         PyObject_TypeCheck(item, (PyTypeObject*)state->numpy_void);
}

/* The device of the launch, described (for foreign arrays). */
typedef struct {
  bool known;
  hrx_device_info_t info;
} hrx_py_launch_device_t;

static int hrx_py_launch_device(hrx_py_launch_device_t* device,
                                hrx_py_launch_device_fn device_of,
                                PyObject* owner) {
  if (device->known) return 0;
  hrx_device_t* d = device_of(owner);
  if (!d) return -1;
  hrx_status_free(hrx_device_query_info(d, &device->info));
  device->known = true;
  return 0;
}

/* The data pointer of an object with __cuda_array_interface__ (CUDA
 * memory; only on NVIDIA devices). */
static int hrx_py_launch_cuda_array(hrx_py_state_t* state, PyObject* item,
                                    const char* role,
                                    const hrx_device_info_t* info,
                                    void** out) {
  if (strcmp(info->platform, "nvidia") != 0) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "%s has __cuda_array_interface__ (CUDA memory), but the "
                 "launch runs on device %s:%d (%s); pass memory of that "
                 "device",
                 role, info->backend, info->index, info->platform);
    return -1;
  }
  PyObject* interface =
      PyObject_GetAttrString(item, "__cuda_array_interface__");
  if (!interface) return -1;
  PyObject* data = PyDict_Check(interface)
                       ? PyDict_GetItemString(interface, "data")
                       : NULL;
  PyObject* pointer = data && PyTuple_Check(data) && PyTuple_GET_SIZE(data) > 0
                          ? PyTuple_GET_ITEM(data, 0)
                          : NULL;
  if (!pointer || !PyLong_Check(pointer)) {
    Py_DECREF(interface);
    PyErr_Format(PyExc_TypeError,
                 "%s: __cuda_array_interface__ has no 'data': (pointer, "
                 "read_only)",
                 role);
    return -1;
  }
  *out = PyLong_AsVoidPtr(pointer);
  Py_DECREF(interface);
  return PyErr_Occurred() ? -1 : 0;
}

int hrx_py_launch_convert(hrx_py_state_t* state, PyObject* kernel_object,
                          PyObject* grid, PyObject* block, PyObject* args,
                          PyObject* shared, hrx_py_launch_device_fn device_of,
                          PyObject* owner, hrx_py_launch_t* out) {
  if (hrx_py_launch_dims(state, grid, "grid", out->config.grid) < 0 ||
      hrx_py_launch_dims(state, block, "block", out->config.block) < 0) {
    return -1;
  }
  out->config.shared_bytes = 0;
  if (shared && hrx_py_arg_uint64(state, shared, "shared",
                                  &out->config.shared_bytes) < 0) {
    return -1;
  }
  PyObject* sequence = NULL;
  PyObject* const* items = NULL;
  Py_ssize_t count = 0;
  if (args && PyTuple_CheckExact(args)) {
    items = &PyTuple_GET_ITEM(args, 0);
    count = PyTuple_GET_SIZE(args);
  } else if (args && args != Py_None) {
    if (PyUnicode_Check(args) || PyBytes_Check(args)) {
      PyErr_SetString(PyExc_TypeError,
                      "args must be a tuple or list of kernel arguments, not "
                      "a string");
      return -1;
    }
    /* A tuple of its own: an argument's Python code cannot change it. */
    sequence = PySequence_Check(args) ? PySequence_Tuple(args) : NULL;
    if (!sequence) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError,
                   "args must be a tuple or list of kernel arguments, not "
                   "%.100s",
                   Py_TYPE(args)->tp_name);
      return -1;
    }
    items = &PyTuple_GET_ITEM(sequence, 0);
    count = PyTuple_GET_SIZE(sequence);
  }
  int result = -1;
  if (count > HRX_KERNEL_MAX_ARGS) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "%zd arguments; a launch passes at most %d", count,
                 HRX_KERNEL_MAX_ARGS);
    goto done;
  }
  /* The parameters' sizes, copied: an argument's own Python code (a
   * foreign array's interface) could close the kernel. */
  hrx_kernel_t* kernel = hrx_py_kernel_unwrap(state, kernel_object);
  if (!kernel) goto done;
  const uint32_t* known = NULL;
  int params = hrx_kernel_param_sizes(kernel, &known);
  uint32_t sizes[HRX_KERNEL_MAX_ARGS];
  for (Py_ssize_t i = 0; i < count; ++i) {
    sizes[i] = known && i < params ? known[i] : 0;
  }
  /* The kernel's name for messages; copied before a foreign array's code
   * runs (it could close the kernel). */
  const char* name = hrx_kernel_name(kernel);
  char name_copy[HRX_KERNEL_MAX_NAME + 1];
  bool ran_python = false;
  hrx_py_launch_device_t device = {.known = false};
  /* Values first (they may run Python code), buffers after. */
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* item = items[i];
    hrx_kernel_arg_t* arg = &out->args[i];
    hrx_py_kernel_value_t* value = &out->values[i];
    arg->kind = HRX_KERNEL_ARG_VALUE;
    arg->value = value;
    if (PyObject_TypeCheck(item, state->buffer_type)) {
      arg->kind = HRX_KERNEL_ARG_VIEW;
      continue;
    }
    if (PyLong_Check(item) && !PyBool_Check(item)) {
      arg->size = sizes[i] ? sizes[i] : 8;
      if (hrx_py_launch_int(state, item, i, arg->size, name, value) < 0) {
        goto done;
      }
      continue;
    }
    if (PyFloat_Check(item)) {
      double number = PyFloat_AS_DOUBLE(item);
      uint32_t size = sizes[i] ? sizes[i] : 8;
      if (size == 4) {
        float narrow = (float)number;
        memcpy(value->bytes, &narrow, 4);
      } else if (size == 8) {
        memcpy(value->bytes, &number, 8);
      } else {
        PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                     "argument %zd is a float; parameter %zd of kernel '%s' "
                     "is %u bytes (a float fills a 4-byte float or an "
                     "8-byte double parameter); pass a numpy scalar of its "
                     "type",
                     i, i, name, size);
        goto done;
      }
      arg->size = size;
      continue;
    }
    if (PyBool_Check(item)) {
      arg->size = sizes[i] ? sizes[i] : 1;
      if (hrx_py_launch_int(state, item, i, arg->size, name, value) < 0) {
        goto done;
      }
      continue;
    }
    /* The slower kinds: what an argument is called in their messages. */
    char role[96];
    HRX_PY_ARG_ROLE(role, i, item);
    if (hrx_py_is_numpy_scalar(state, item)) {
      Py_buffer bytes;
      if (PyObject_GetBuffer(item, &bytes, PyBUF_SIMPLE) < 0) goto done;
      bool fits = bytes.len > 0 && (size_t)bytes.len <= sizeof(value->bytes);
      if (fits) memcpy(value->bytes, bytes.buf, (size_t)bytes.len);
      arg->size = (uint32_t)bytes.len;
      PyBuffer_Release(&bytes);
      if (!fits) {
        PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                     "%s is a numpy scalar of %u bytes; at most %zu",
                     role, arg->size, sizeof(value->bytes));
        goto done;
      }
      continue;
    }
    bool cuda = PyObject_HasAttrString(item, "__cuda_array_interface__");
    bool dlpack = !cuda && PyObject_HasAttrString(item, "__dlpack__");
    if (cuda || dlpack) {
      if (!ran_python) {
        PyOS_snprintf(name_copy, sizeof(name_copy), "%s", name);
        name = name_copy;
      }
      ran_python = true;
      void* pointer = NULL;
      if (hrx_py_launch_device(&device, device_of, owner) < 0) goto done;
      int got = cuda ? hrx_py_launch_cuda_array(state, item, role,
                                                &device.info, &pointer)
                     : hrx_py_dlpack_device_address(state, item,
                                                    &device.info, role,
                                                    &pointer);
      if (got < 0) goto done;
      memcpy(value->bytes, &pointer, sizeof(pointer));
      arg->size = (uint32_t)sizeof(pointer);
      continue;
    }
    PyErr_Format(PyExc_TypeError,
                 "%s is not a kernel argument: pass an hrx.Buffer or view, "
                 "an int, a float, a bool, a numpy scalar, or an array with "
                 "__cuda_array_interface__ or __dlpack__ on the launch's "
                 "device",
                 role);
    goto done;
  }
  /* No Python code runs from here: borrow the handles. */
  if (ran_python) {
    kernel = hrx_py_kernel_unwrap(state, kernel_object);
    if (!kernel) goto done;
  }
  for (Py_ssize_t i = 0; i < count; ++i) {
    if (out->args[i].kind != HRX_KERNEL_ARG_VIEW) continue;
    if (hrx_py_buffer_open_view(items[i], &out->args[i].view)) continue;
    char role[96];  /* closed: the message names it */
    HRX_PY_ARG_ROLE(role, i, items[i]);
    if (hrx_py_buffer_view_borrowed(state, items[i], role,
                                    &out->args[i].view) < 0) {
      goto done;
    }
  }
  out->kernel = kernel;
  out->count = (size_t)count;
  result = 0;
done:
  Py_XDECREF(sequence);
  return result;
}
