/* The conversion of launch arguments that Stream.launch and Graph.kernel
 * share (launch.h). Every rule of a launch (limits, sizes, devices) is the
 * core's; this file only turns Python values into C ones (docs/kernels.md,
 * "Arguments", says which). */
#include "launch.h"

#include <float.h>
#include <math.h>
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

/* numpy.number, numpy.bool_, numpy.void, numpy.signedinteger,
 * numpy.unsignedinteger and numpy.floating, imported once; false when
 * numpy is missing. */
static bool hrx_py_numpy_types(hrx_py_state_t* state) {
  if (!state->numpy_number) {
    PyObject* numpy = PyImport_ImportModule("numpy");
    PyObject** types[6] = {&state->numpy_number,  &state->numpy_bool,
                           &state->numpy_void,    &state->numpy_signed,
                           &state->numpy_unsigned, &state->numpy_floating};
    const char* names[6] = {"number",        "bool_",
                            "void",          "signedinteger",
                            "unsignedinteger", "floating"};
    bool ok = numpy != NULL;
    for (int i = 0; i < 6; ++i) {
      *types[i] = ok ? PyObject_GetAttrString(numpy, names[i]) : NULL;
      ok = ok && *types[i] && PyType_Check(*types[i]);
    }
    Py_XDECREF(numpy);
    if (!ok) {
      PyErr_Clear();
      for (int i = 0; i < 6; ++i) Py_XSETREF(*types[i], Py_NewRef(Py_None));
    }
  }
  return state->numpy_number != Py_None;
}

/* What an argument names, for messages: "argument 2 (float)". */
#define HRX_PY_ARG_ROLE(buffer, i, item)                                  \
  PyOS_snprintf((buffer), sizeof(buffer), "argument %zd (%.60s)", (i),    \
                Py_TYPE(item)->tp_name)

/* What a launch knows of one parameter. */
typedef struct {
  int kind;       /* hrx_kernel_param_kind_t; UNKNOWN where not recorded */
  uint32_t size;  /* 0 where not known */
} hrx_py_param_t;

/* The name of parameter i where the kernel records it (borrowed from the
 * kernel, looked up afresh: valid until Python code next runs), or NULL
 * (untyped, unnamed, or the kernel was closed by an argument's code). */
static const char* hrx_py_launch_param_name(hrx_py_state_t* state,
                                            PyObject* kernel_object,
                                            bool typed, Py_ssize_t i) {
  if (!typed) return NULL;
  PyObject* type = NULL;
  PyObject* value = NULL;
  PyObject* traceback = NULL;
  PyErr_Fetch(&type, &value, &traceback);
  hrx_kernel_t* kernel = hrx_py_kernel_unwrap(state, kernel_object);
  if (!kernel) PyErr_Clear();
  PyErr_Restore(type, value, traceback);
  return kernel ? hrx_kernel_attributes(kernel)->param_name[i] : NULL;
}

/* "parameter 2 'a' of kernel 'saxpy' (float32)", or without the name and
 * type where they are not known. */
static const char* hrx_py_param_text(char* buffer, size_t capacity,
                                     Py_ssize_t i, const char* param_name,
                                     const char* kernel,
                                     const hrx_py_param_t* param) {
  char type[32];
  hrx_kernel_param_type_name(param->kind, param->size, type, sizeof(type));
  if (param->kind == HRX_KERNEL_PARAM_UNKNOWN) {
    PyOS_snprintf(type, sizeof(type), "%u bytes", param->size);
  }
  PyOS_snprintf(buffer, capacity, "parameter %zd%s%s%s of kernel '%s' (%s)",
                i, param_name ? " '" : "", param_name ? param_name : "",
                param_name ? "'" : "", kernel, type);
  return buffer;
}

/* A launch's parameters, and their description for messages, made only
 * when a message needs it (formatting costs more than converting). */
typedef struct {
  hrx_py_state_t* state;
  PyObject* kernel_object;
  bool typed;          /* the kinds are the kernel's */
  const char* kernel;  /* its name (a copy once an argument's code ran) */
  hrx_py_param_t param[HRX_KERNEL_MAX_ARGS];
  char text[HRX_KERNEL_MAX_NAME * 2 + 96];
} hrx_py_params_t;

/* Parameter i described (hrx_py_param_text) in params->text. */
static const char* hrx_py_param_describe(hrx_py_params_t* params,
                                         Py_ssize_t i) {
  return hrx_py_param_text(
      params->text, sizeof(params->text), i,
      hrx_py_launch_param_name(params->state, params->kernel_object,
                               params->typed, i),
      params->kernel, &params->param[i]);
}

/* The range of Python ints a parameter takes: [low, high] (low <= 0). */
static void hrx_py_int_range(const hrx_py_param_t* param, uint32_t size,
                             long long* low, unsigned long long* high) {
  unsigned bits = 8u * size;
  unsigned long long all = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  long long min = bits >= 64 ? INT64_MIN : -(1ll << (bits - 1));
  switch (param->kind) {
    case HRX_KERNEL_PARAM_SIGNED:
      *low = min;
      *high = all >> 1;
      break;
    case HRX_KERNEL_PARAM_UNSIGNED:
      *low = 0;
      *high = all;
      break;
    case HRX_KERNEL_PARAM_BOOL:
      *low = 0;
      *high = 1;
      break;
    default:  /* signedness not recorded: either */
      *low = min;
      *high = all;
      break;
  }
}

/* A Python int into `size` bytes (1, 2, 4 or 8), little-endian two's
 * complement, within the parameter's range (hrx_py_int_range). */
static int hrx_py_launch_int(hrx_py_state_t* state, PyObject* item,
                             Py_ssize_t i, uint32_t size,
                             hrx_py_params_t* params,
                             hrx_py_kernel_value_t* out) {
  const hrx_py_param_t* param = &params->param[i];
  if (size != 1 && size != 2 && size != 4 && size != 8) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "argument %zd is an int; %s is %u bytes, which no int fills "
                 "(an int fills a 1, 2, 4 or 8-byte parameter); pass a numpy "
                 "scalar of its type",
                 i, hrx_py_param_describe(params, i), size);
    return -1;
  }
  long long low = 0;
  unsigned long long high = 0;
  hrx_py_int_range(param, size, &low, &high);
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
    fits = fits && bits <= high;
  } else if (overflow < 0) {
    fits = false;
  } else {
    fits = value < 0 ? value >= low : (unsigned long long)value <= high;
  }
  if (!fits) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "argument %zd (int %R) is out of range for %s: it takes %lld "
                 "to %llu",
                 i, item, hrx_py_param_describe(params, i), low, high);
    return -1;
  }
  for (uint32_t b = 0; b < size; ++b) {
    out->bytes[b] = (unsigned char)(bits >> (8 * b));
  }
  return 0;
}

/* A double into a float parameter of `size` bytes (2, 4 or 8). */
static int hrx_py_launch_float(hrx_py_state_t* state, double number,
                               PyObject* item, Py_ssize_t i, uint32_t size,
                               hrx_py_params_t* params,
                               hrx_py_kernel_value_t* out) {
  if (size == 8) {
    memcpy(out->bytes, &number, 8);
    return 0;
  }
  if (size == 4) {
    float narrow = (float)number;
    memcpy(out->bytes, &narrow, 4);
    return 0;
  }
#if PY_VERSION_HEX >= 0x030B0000
  if (size == 2) {
    return PyFloat_Pack2(number, (char*)out->bytes, 1);
  }
#endif
  PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
               "argument %zd is %s; %s is %u bytes (a float fills a 4-byte "
               "float or an 8-byte double parameter); pass a numpy scalar "
               "of its type",
               i, PyLong_Check(item) ? "an int" : "a float",
               hrx_py_param_describe(params, i), size);
  return -1;
}

/* The numpy scalar type a parameter takes, for messages. */
static const char* hrx_py_numpy_hint(const hrx_py_param_t* param,
                                     char* buffer, size_t capacity) {
  unsigned bits = 8u * param->size;
  switch (param->kind) {
    case HRX_KERNEL_PARAM_SIGNED:
      PyOS_snprintf(buffer, capacity, "an int or numpy.int%u", bits);
      break;
    case HRX_KERNEL_PARAM_UNSIGNED:
      PyOS_snprintf(buffer, capacity, "an int or numpy.uint%u", bits);
      break;
    case HRX_KERNEL_PARAM_INTEGER:
      PyOS_snprintf(buffer, capacity, "an int, numpy.int%u or numpy.uint%u",
                    bits, bits);
      break;
    case HRX_KERNEL_PARAM_FLOAT:
      PyOS_snprintf(buffer, capacity, "a float, an int or numpy.float%u",
                    bits);
      break;
    case HRX_KERNEL_PARAM_BOOL:
      PyOS_snprintf(buffer, capacity, "a bool or numpy.bool_");
      break;
    case HRX_KERNEL_PARAM_POINTER:
      PyOS_snprintf(buffer, capacity, "a buffer or view, a device array, 0 "
                    "(null), or an address as numpy.uintp");
      break;
    default:
      PyOS_snprintf(buffer, capacity, "a numpy scalar of %u bytes",
                    param->size);
      break;
  }
  return buffer;
}

/* TypeError: the argument is not of a kind the parameter takes. */
static int hrx_py_launch_mismatch(Py_ssize_t i, PyObject* item,
                                  hrx_py_params_t* params) {
  char hint[96];
  PyErr_Format(PyExc_TypeError,
               "argument %zd (%.60s) does not match %s; pass %s",
               i, Py_TYPE(item)->tp_name, hrx_py_param_describe(params, i),
               hrx_py_numpy_hint(&params->param[i], hint, sizeof(hint)));
  return -1;
}

/* Whether a bool goes to the parameter: a bool, or a 1-byte unsigned or
 * unrecorded-signedness integer (how PTX records C++'s bool). */
static bool hrx_py_takes_bool(const hrx_py_param_t* param) {
  return param->kind == HRX_KERNEL_PARAM_UNKNOWN ||
         param->kind == HRX_KERNEL_PARAM_BOOL ||
         (param->size == 1 && (param->kind == HRX_KERNEL_PARAM_UNSIGNED ||
                               param->kind == HRX_KERNEL_PARAM_INTEGER));
}

/* Whether a pointer (a buffer, a device array) goes to the parameter. */
static bool hrx_py_takes_pointer(const hrx_py_param_t* param) {
  return param->kind == HRX_KERNEL_PARAM_UNKNOWN ||
         param->kind == HRX_KERNEL_PARAM_POINTER ||
         (param->kind == HRX_KERNEL_PARAM_INTEGER &&
          param->size == sizeof(void*));
}

/* Whether a numpy scalar of `size` bytes whose kind is `numpy_kind` ('b',
 * 'i', 'u', 'f', or 0 for another) goes to the parameter: of its size
 * where that is known, and of its kind where that is. */
static bool hrx_py_numpy_fits(const hrx_py_param_t* param, char numpy_kind,
                              uint32_t size) {
  if (param->kind == HRX_KERNEL_PARAM_UNKNOWN) {
    return param->size == 0 || size == param->size;
  }
  if (numpy_kind == 'b') return size == 1 && hrx_py_takes_bool(param);
  if (size != param->size) return false;
  switch (param->kind) {
    case HRX_KERNEL_PARAM_SIGNED:
      return numpy_kind == 'i';
    case HRX_KERNEL_PARAM_UNSIGNED:
      return numpy_kind == 'u';
    case HRX_KERNEL_PARAM_INTEGER:
    case HRX_KERNEL_PARAM_POINTER:
      return numpy_kind == 'i' || numpy_kind == 'u';
    case HRX_KERNEL_PARAM_FLOAT:
      return numpy_kind == 'f';
    default:
      return false;
  }
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
  hrx_status_t status = hrx_device_query_info(d, &device->info);
  if (status) {
    /* Described as unknown rather than left uninitialized. */
    memset(&device->info, 0, sizeof(device->info));
    hrx_status_free(status);
  }
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
  /* The parameters' kinds and sizes, copied: an argument's own Python code
   * (a foreign array's interface) could close the kernel. */
  hrx_kernel_t* kernel = hrx_py_kernel_unwrap(state, kernel_object);
  if (!kernel) goto done;
  const hrx_kernel_attributes_t* attributes = hrx_kernel_attributes(kernel);
  int params_known = attributes->param_count;
  /* Typed only where the count matches: otherwise the core names the
   * count, and no argument is judged against the wrong parameter. */
  bool typed = params_known >= 0 && count == params_known;
  hrx_py_params_t params;
  params.state = state;
  params.kernel_object = kernel_object;
  params.typed = typed;
  for (Py_ssize_t i = 0; i < count; ++i) {
    params.param[i].size = i < params_known ? attributes->param_size[i] : 0;
    params.param[i].kind = typed ? attributes->param_kind[i]
                                 : HRX_KERNEL_PARAM_UNKNOWN;
  }
  /* The kernel's name for messages; copied before a foreign array's code
   * runs (it could close the kernel). */
  const char* name = hrx_kernel_name(kernel);
  params.kernel = name;
  char name_copy[HRX_KERNEL_MAX_NAME + 1];
  bool ran_python = false;
  /* Its info (several KiB) is filled only when a foreign array asks. */
  hrx_py_launch_device_t device;
  device.known = false;
  /* Values first (they may run Python code), buffers after. */
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* item = items[i];
    const hrx_py_param_t* param = &params.param[i];
    hrx_kernel_arg_t* arg = &out->args[i];
    hrx_py_kernel_value_t* value = &out->values[i];
    arg->kind = HRX_KERNEL_ARG_VALUE;
    arg->value = value;
    if (PyObject_TypeCheck(item, state->buffer_type)) {
      if (!hrx_py_takes_pointer(param)) {
        hrx_py_launch_mismatch(i, item, &params);
        goto done;
      }
      arg->kind = HRX_KERNEL_ARG_VIEW;
      continue;
    }
    bool numpy = !PyLong_CheckExact(item) && !PyFloat_CheckExact(item) &&
                 !PyBool_Check(item) && hrx_py_is_numpy_scalar(state, item);
    if (PyLong_Check(item) && !PyBool_Check(item) && !numpy) {
      if (param->kind == HRX_KERNEL_PARAM_POINTER) {
        /* 0 is the null pointer; another int is most likely a slip (a
         * size for a buffer): an address is passed on purpose as
         * numpy.uintp. */
        int sign = PyObject_RichCompareBool(item, Py_False, Py_NE);
        if (sign < 0) goto done;
        if (sign) {
          hrx_py_launch_mismatch(i, item, &params);
          goto done;
        }
      }
      if (param->kind == HRX_KERNEL_PARAM_FLOAT) {
        /* An int for a float parameter: its value, converted. */
        double number = PyLong_AsDouble(item);
        bool fits = !(number == -1.0 && PyErr_Occurred());
        if (!fits) PyErr_Clear();
        if (fits && param->size == 4 && isfinite(number) &&
            fabs(number) > FLT_MAX) {
          fits = false;
        }
        if (!fits) {
          PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                       "argument %zd (int %R) is out of range for %s",
                       i, item, hrx_py_param_describe(&params, i));
          goto done;
        }
        arg->size = param->size;
        if (hrx_py_launch_float(state, number, item, i, arg->size,
                                &params, value) < 0) {
          goto done;
        }
        continue;
      }
      arg->size = param->size ? param->size : 8;
      if (hrx_py_launch_int(state, item, i, arg->size, &params, value) < 0) {
        goto done;
      }
      continue;
    }
    if (PyFloat_Check(item) && !numpy) {
      if (param->kind != HRX_KERNEL_PARAM_UNKNOWN &&
          param->kind != HRX_KERNEL_PARAM_FLOAT) {
        hrx_py_launch_mismatch(i, item, &params);
        goto done;
      }
      arg->size = param->size ? param->size : 8;
      if (hrx_py_launch_float(state, PyFloat_AS_DOUBLE(item), item, i,
                              arg->size, &params, value) < 0) {
        goto done;
      }
      continue;
    }
    if (PyBool_Check(item)) {
      if (!hrx_py_takes_bool(param)) {
        hrx_py_launch_mismatch(i, item, &params);
        goto done;
      }
      arg->size = param->size ? param->size : 1;
      if (hrx_py_launch_int(state, item, i, arg->size, &params, value) < 0) {
        goto done;
      }
      continue;
    }
    /* The slower kinds: what an argument is called in their messages. */
    char role[96];
    HRX_PY_ARG_ROLE(role, i, item);
    if (numpy) {
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
      char numpy_kind = 0;
      if (PyObject_TypeCheck(item, (PyTypeObject*)state->numpy_bool)) {
        numpy_kind = 'b';
      } else if (PyObject_TypeCheck(item,
                                    (PyTypeObject*)state->numpy_signed)) {
        numpy_kind = 'i';
      } else if (PyObject_TypeCheck(item,
                                    (PyTypeObject*)state->numpy_unsigned)) {
        numpy_kind = 'u';
      } else if (PyObject_TypeCheck(item,
                                    (PyTypeObject*)state->numpy_floating)) {
        numpy_kind = 'f';
      }
      if (!hrx_py_numpy_fits(param, numpy_kind, arg->size)) {
        hrx_py_launch_mismatch(i, item, &params);
        goto done;
      }
      continue;
    }
    bool cuda = PyObject_HasAttrString(item, "__cuda_array_interface__");
    bool dlpack = !cuda && PyObject_HasAttrString(item, "__dlpack__");
    if (cuda || dlpack) {
      if (!hrx_py_takes_pointer(param)) {
        hrx_py_launch_mismatch(i, item, &params);
        goto done;
      }
      if (!ran_python) {
        PyOS_snprintf(name_copy, sizeof(name_copy), "%s", name);
        name = name_copy;
        params.kernel = name;
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
