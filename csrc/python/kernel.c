/* hrx.Kernel: a kernel compiled or loaded for one device (Device.compile
 * and Device.load_kernel, in device.c, make them). */
#include "kernel.h"

#include "device_handle.h"
#include "property.h"
#include "special.h"

typedef struct {
  PyObject_HEAD
  hrx_kernel_t* kernel;          /* retained; NULL once closed */
} hrx_py_kernel_t;

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

PyObject* hrx_py_kernel_wrap(hrx_py_state_t* state, hrx_kernel_t* kernel) {
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

static PyObject* hrx_py_kernel_params(hrx_py_state_t* state, void* kernel) {
  (void)state;
  const hrx_kernel_attributes_t* a = hrx_kernel_attributes(kernel);
  if (a->param_count < 0) Py_RETURN_NONE;
  PyObject* tuple = PyTuple_New(a->param_count);
  for (int i = 0; tuple && i < a->param_count; ++i) {
    char type[32];
    hrx_kernel_param_type_name(a->param_kind[i], a->param_size[i], type,
                               sizeof(type));
    PyObject* name = a->param_name[i] ? PyUnicode_FromString(a->param_name[i])
                                      : Py_NewRef(Py_None);
    PyObject* param =
        name ? Py_BuildValue("{s:N,s:s,s:I}", "name", name, "type", type,
                             "size", (unsigned int)a->param_size[i])
             : NULL;
    if (!param) {
      Py_CLEAR(tuple);
      break;
    }
    PyTuple_SET_ITEM(tuple, i, param);
  }
  return tuple;
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
    HRX_PY_PROPERTY("params", hrx_py_kernel_kind, hrx_py_kernel_params,
                    "the parameters as a tuple of dicts: name (None where "
                    "not recorded), type ('pointer', 'int32', 'uint8', "
                    "'int32/uint32' where the signedness is not recorded, "
                    "'float32', 'bool', 'unknown') and size in bytes; None "
                    "where the runtime cannot tell the parameters"),
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

PyType_Spec hrx_py_kernel_spec = {
    .name = "hrx.Kernel",
    .basicsize = sizeof(hrx_py_kernel_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = hrx_py_kernel_slots,
};
