/* hrx.Kernel, Device.compile / load_kernel / kernel_compiler, and the
 * conversion of launch arguments that Stream.launch and Graph.kernel
 * share. Every rule of a launch (limits, sizes, devices) is the core's;
 * this file only turns Python values into C ones (docs/kernels.md,
 * "Arguments", says which). */
#include <string.h>

#include "args.h"
#include "dlpack.h"
#include "objects.h"
#include "property.h"
#include "special.h"

/* ------------------------------------------------------------- Kernel */

static void hrx_py_kernel_release(void* kernel) {
  /* A last release may wait (a module's unload, the device's teardown). */
  hrx_kernel_release(kernel);
}

static const hrx_py_handle_kind_t hrx_py_kernel_kind = {
    .name = "kernel",
    .field = offsetof(hrx_py_kernel_t, kernel),
    .release = hrx_py_kernel_release};

HRX_PY_HANDLE_FUNCTIONS(hrx_py_kernel, hrx_py_kernel_kind)

hrx_kernel_t* hrx_py_kernel_unwrap(hrx_py_state_t* state, PyObject* object) {
  return hrx_py_handle_unwrap(state, object, state->kernel_type,
                              &hrx_py_kernel_kind);
}

static PyObject* hrx_py_kernel_wrap(hrx_py_state_t* state,
                                    hrx_kernel_t* kernel) {
  hrx_py_kernel_t* self = PyObject_GC_New(hrx_py_kernel_t, state->kernel_type);
  if (!self) {
    hrx_py_release_without_gil(hrx_py_kernel_release, kernel);
    return NULL;
  }
  self->kernel = kernel;
  PyObject_GC_Track(self);
  return (PyObject*)self;
}

static PyObject* hrx_py_kernel_name(hrx_py_state_t* state, void* kernel) {
  (void)state;
  return PyUnicode_FromString(hrx_kernel_name(kernel));
}

static PyObject* hrx_py_kernel_device(hrx_py_state_t* state, void* kernel) {
  return hrx_py_device_ref(state, hrx_kernel_device(kernel));
}

static PyObject* hrx_py_kernel_image(hrx_py_state_t* state, void* kernel) {
  (void)state;
  const void* image = NULL;
  size_t size = 0;
  hrx_kernel_image(kernel, &image, &size);
  return PyBytes_FromStringAndSize(image, (Py_ssize_t)size);
}

/* A tuple of `count` unsigned ints. */
static PyObject* hrx_py_uint_tuple(const uint32_t* values, int count) {
  PyObject* tuple = PyTuple_New(count);
  for (int i = 0; tuple && i < count; ++i) {
    PyObject* value = PyLong_FromUnsignedLong(values[i]);
    if (!value) {
      Py_CLEAR(tuple);
      break;
    }
    PyTuple_SET_ITEM(tuple, i, value);
  }
  return tuple;
}

static PyObject* hrx_py_kernel_attributes(hrx_py_state_t* state,
                                          void* kernel) {
  (void)state;
  hrx_kernel_attributes_t a;
  hrx_kernel_query_attributes(kernel, &a);
  bool known = a.param_count >= 0;
  PyObject* sizes =
      known ? hrx_py_uint_tuple(a.param_size, a.param_count)
            : Py_NewRef(Py_None);
  PyObject* offsets =
      known ? hrx_py_uint_tuple(a.param_offset, a.param_count)
            : Py_NewRef(Py_None);
  PyObject* count = known ? PyLong_FromLong(a.param_count) : Py_NewRef(Py_None);
  if (!sizes || !offsets || !count) {
    Py_XDECREF(sizes);
    Py_XDECREF(offsets);
    Py_XDECREF(count);
    return NULL;
  }
  return Py_BuildValue("{s:N,s:N,s:N,s:I,s:K,s:K}", "param_count", count,
                       "param_sizes", sizes, "param_offsets", offsets,
                       "max_threads_per_block", a.max_threads_per_block,
                       "static_shared_bytes",
                       (unsigned long long)a.static_shared_bytes,
                       "max_dynamic_shared_bytes",
                       (unsigned long long)a.max_dynamic_shared_bytes);
}

static PyObject* hrx_py_kernel_origin(hrx_py_state_t* state, void* kernel) {
  (void)state;
  return PyUnicode_FromString(
      hrx_kernel_origin_name(hrx_kernel_origin(kernel)));
}

static PyObject* hrx_py_kernel_cache_path(hrx_py_state_t* state,
                                          void* kernel) {
  (void)state;
  const char* path = hrx_kernel_cache_path(kernel);
  if (!path) Py_RETURN_NONE;
  return PyUnicode_DecodeFSDefault(path);
}

static PyObject* hrx_py_kernel_cache_note(hrx_py_state_t* state,
                                          void* kernel) {
  (void)state;
  return PyUnicode_DecodeFSDefault(hrx_kernel_cache_note(kernel));
}

static PyObject* hrx_py_kernel_repr(PyObject* self) {
  hrx_kernel_t* kernel = ((hrx_py_kernel_t*)self)->kernel;
  if (!kernel) return PyUnicode_FromString("<hrx.Kernel (closed)>");
  hrx_device_info_t info;
  hrx_status_free(hrx_device_query_info(hrx_kernel_device(kernel), &info));
  return PyUnicode_FromFormat("<hrx.Kernel %s on %s:%d (%s)>",
                              hrx_kernel_name(kernel), info.backend,
                              info.index,
                              hrx_kernel_origin_name(hrx_kernel_origin(kernel)));
}

static PyObject* hrx_py_kernel_new(PyTypeObject* type, PyObject* args,
                                   PyObject* kwargs) {
  (void)type;
  (void)args;
  (void)kwargs;
  PyErr_SetString(PyExc_TypeError,
                  "hrx.Kernel cannot be created directly; get one with "
                  "device.compile(source, name) or device.load_kernel(image, "
                  "name)");
  return NULL;
}

HRX_PY_NEW_FUNCTION(hrx_py_kernel, kernel_type)

static PyMethodDef hrx_py_kernel_methods[] = {
    HRX_PY_NEW_METHOD(hrx_py_kernel,
        "__new__($type, *args, **kwargs)\n--\n\n"
        "Refuse with a TypeError: kernels come from device.compile() or "
        "device.load_kernel()."),
    HRX_PY_HANDLE_METHODS(hrx_py_kernel,
                          "Drop the kernel; launches in flight still run "
                          "(the module stays loaded until they are done)."),
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef hrx_py_kernel_getset[] = {
    HRX_PY_PROPERTY("name", hrx_py_kernel_kind, hrx_py_kernel_name,
                    "the kernel's name in its module"),
    HRX_PY_PROPERTY("device", hrx_py_kernel_kind, hrx_py_kernel_device,
                    "the device the kernel was compiled or loaded for"),
    HRX_PY_PROPERTY("image", hrx_py_kernel_kind, hrx_py_kernel_image,
                    "the module's image as bytes, for Device.load_kernel on "
                    "a device of the same compiler target"),
    HRX_PY_PROPERTY("attributes", hrx_py_kernel_kind,
                    hrx_py_kernel_attributes,
                    "dict: param_count, param_sizes and param_offsets (None "
                    "where the runtime cannot tell them), "
                    "max_threads_per_block, static_shared_bytes, "
                    "max_dynamic_shared_bytes"),
    HRX_PY_PROPERTY("origin", hrx_py_kernel_kind, hrx_py_kernel_origin,
                    "where the module came from: 'compiled', 'memory cache', "
                    "'disk cache' or 'image'"),
    HRX_PY_PROPERTY("cache_path", hrx_py_kernel_kind, hrx_py_kernel_cache_path,
                    "the disk cache entry the module was read from or "
                    "written to, or None (cache_note says why)"),
    HRX_PY_PROPERTY("cache_note", hrx_py_kernel_kind, hrx_py_kernel_cache_note,
                    "why there is no disk cache entry, or that one was found "
                    "corrupt and rebuilt; '' when there is nothing to say"),
    HRX_PY_CLOSED_PROPERTY(hrx_py_kernel_kind),
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot hrx_py_kernel_slots[] = {
    {Py_tp_doc, "A kernel compiled (Device.compile) or loaded "
                "(Device.load_kernel) for one device; launch it with "
                "Stream.launch or record it in a graph with Graph.kernel. "
                "Not created directly."},
    {Py_tp_new, hrx_py_kernel_new},
    {Py_tp_dealloc, hrx_py_kernel_dealloc},
    {Py_tp_traverse, hrx_py_traverse_type},
    {Py_tp_methods, hrx_py_kernel_methods},
    {Py_tp_getset, hrx_py_kernel_getset},
    {Py_tp_repr, hrx_py_kernel_repr},
    {0, NULL},
};

static PyType_Spec hrx_py_kernel_spec = {
    .name = "hrx.Kernel",
    .basicsize = sizeof(hrx_py_kernel_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = hrx_py_kernel_slots,
};

int hrx_py_kernel_register(PyObject* module, hrx_py_state_t* state) {
  state->kernel_type =
      (PyTypeObject*)PyType_FromModuleAndSpec(module, &hrx_py_kernel_spec, NULL);
  if (!state->kernel_type) return -1;
  return PyModule_AddObjectRef(module, "Kernel", (PyObject*)state->kernel_type);
}

/* ------------------------------------------------------ Device methods */

/* A str argument as UTF-8 without NUL characters (borrowed from it). */
static const char* hrx_py_text(hrx_py_state_t* state, PyObject* object,
                               const char* what) {
  if (!PyUnicode_Check(object)) {
    PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", what,
                 Py_TYPE(object)->tp_name);
    return NULL;
  }
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(object, &size);
  if (text && strlen(text) != (size_t)size) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "%s contains a NUL character", what);
    return NULL;
  }
  return text;
}

PyObject* hrx_py_device_compile(PyObject* self, PyObject* const* args,
                                Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"source", "name", "options"};
  PyObject* given[3];
  if (hrx_py_arg_parse("compile", args, nargs, kwnames, names, 3, 2, 2,
                       given) < 0) {
    return NULL;
  }
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  const char* source = hrx_py_text(state, given[0], "kernel source");
  const char* name =
      source ? hrx_py_text(state, given[1], "kernel name") : NULL;
  if (!name) return NULL;
  PyObject* sequence = NULL;
  Py_ssize_t count = 0;
  if (given[2]) {
    if (PyUnicode_Check(given[2]) || PyBytes_Check(given[2])) {
      PyErr_SetString(PyExc_TypeError,
                      "options must be a sequence of str (e.g. a list), not "
                      "one string");
      return NULL;
    }
    sequence = PySequence_Fast(given[2], "options must be a sequence of str");
    if (!sequence) return NULL;
    count = PySequence_Fast_GET_SIZE(sequence);
  }
  const char** options = PyMem_Calloc(count ? (size_t)count : 1,
                                      sizeof(char*));
  bool ok = options != NULL;
  if (!ok) PyErr_NoMemory();
  for (Py_ssize_t i = 0; ok && i < count; ++i) {
    options[i] = hrx_py_text(state, PySequence_Fast_GET_ITEM(sequence, i),
                             "each compiler option");
    ok = options[i] != NULL;
  }
  hrx_device_t* device = ok ? hrx_py_device_unwrap(state, self) : NULL;
  PyObject* result = NULL;
  if (device) {
    hrx_kernel_t* kernel = NULL;
    hrx_status_t status;
    hrx_device_retain(device); /* survives close() from another thread */
    Py_BEGIN_ALLOW_THREADS
    status = hrx_device_compile_kernel(device, source, name, options,
                                       (size_t)count, &kernel);
    hrx_device_release(device);
    Py_END_ALLOW_THREADS
    result = status ? hrx_py_raise(state, status)
                    : hrx_py_kernel_wrap(state, kernel);
  }
  PyMem_Free(options);
  Py_XDECREF(sequence);
  return result;
}

PyObject* hrx_py_device_load_kernel(PyObject* self, PyObject* const* args,
                                    Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"image", "name"};
  PyObject* given[2];
  if (hrx_py_arg_parse("load_kernel", args, nargs, kwnames, names, 2, 2, 2,
                       given) < 0) {
    return NULL;
  }
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  const char* name = hrx_py_text(state, given[1], "kernel name");
  if (!name) return NULL;
  Py_buffer image;
  if (PyObject_GetBuffer(given[0], &image, PyBUF_C_CONTIGUOUS) < 0) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "image must be bytes-like (bytes, bytearray, memoryview), "
                 "not %.100s",
                 Py_TYPE(given[0])->tp_name);
    return NULL;
  }
  hrx_device_t* device = hrx_py_device_unwrap(state, self);
  PyObject* result = NULL;
  if (device) {
    hrx_kernel_t* kernel = NULL;
    hrx_status_t status;
    hrx_device_retain(device);
    Py_BEGIN_ALLOW_THREADS
    status = hrx_device_load_kernel(device, image.buf, (size_t)image.len,
                                    name, &kernel);
    hrx_device_release(device);
    Py_END_ALLOW_THREADS
    result = status ? hrx_py_raise(state, status)
                    : hrx_py_kernel_wrap(state, kernel);
  }
  PyBuffer_Release(&image);
  return result;
}

PyObject* hrx_py_device_kernel_compiler(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_device_t* device = hrx_py_device_unwrap(state, self);
  if (!device) return NULL;
  hrx_kernel_compiler_t compiler;
  hrx_status_t status;
  hrx_device_retain(device);
  Py_BEGIN_ALLOW_THREADS
  status = hrx_device_query_kernel_compiler(device, &compiler);
  hrx_device_release(device);
  Py_END_ALLOW_THREADS
  if (status) return hrx_py_raise(state, status);
  return Py_BuildValue("{s:s,s:s,s:s,s:s}", "language", compiler.language,
                       "compiler", compiler.compiler, "target",
                       compiler.target, "image_format",
                       compiler.image_format);
}

/* ---------------------------------------------------- launch arguments */

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
    hrx_py_buffer_t* buffer = (hrx_py_buffer_t*)items[i];
    if (buffer->buffer) {
      out->args[i].view =
          (hrx_view_t){buffer->buffer, buffer->offset, buffer->length};
      continue;
    }
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
