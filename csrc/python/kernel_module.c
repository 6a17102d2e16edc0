/* hrx.Module: a read-only mapping from kernel names to the hrx.Kernel
 * objects of one compile (kernel_module.h). It holds Python objects only:
 * each kernel keeps the compiled module loaded, and closing a kernel is
 * the kernel's own business. Immutable once made, so thread-safe. */
#include "kernel_module.h"

#include "special.h"

typedef struct {
  PyObject_HEAD
  PyObject* names;    /* tuple of str, in the order compiled */
  PyObject* kernels;  /* dict: str -> hrx.Kernel */
} hrx_py_kernel_module_t;

PyObject* hrx_py_kernel_module_make(hrx_py_state_t* state,
                                    PyObject* const* names,
                                    PyObject* const* kernels,
                                    Py_ssize_t count) {
  hrx_py_kernel_module_t* self = PyObject_GC_New(
      hrx_py_kernel_module_t, state->kernel_module_type);
  if (!self) return NULL;
  self->names = PyTuple_New(count);
  self->kernels = PyDict_New();
  PyObject_GC_Track(self);
  if (!self->names || !self->kernels) {
    Py_DECREF(self);
    return NULL;
  }
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyTuple_SET_ITEM(self->names, i, Py_NewRef(names[i]));
    if (PyDict_SetItem(self->kernels, names[i], kernels[i]) < 0) {
      Py_DECREF(self);
      return NULL;
    }
  }
  return (PyObject*)self;
}

static int hrx_py_kernel_module_traverse(PyObject* self, visitproc visit,
                                         void* arg) {
  hrx_py_kernel_module_t* module = (hrx_py_kernel_module_t*)self;
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(module->names);
  Py_VISIT(module->kernels);
  return 0;
}

static int hrx_py_kernel_module_clear(PyObject* self) {
  hrx_py_kernel_module_t* module = (hrx_py_kernel_module_t*)self;
  Py_CLEAR(module->names);
  Py_CLEAR(module->kernels);
  return 0;
}

static void hrx_py_kernel_module_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  hrx_py_kernel_module_clear(self);
  PyObject_GC_Del(self);
  Py_DECREF(type);
}

/* The kernel `name`, or KeyError naming the module's kernels. */
static PyObject* hrx_py_kernel_module_lookup(PyObject* self, PyObject* name) {
  hrx_py_kernel_module_t* module = (hrx_py_kernel_module_t*)self;
  if (!PyUnicode_Check(name)) {
    PyErr_Format(PyExc_TypeError, "a kernel name is a str, not %.100s",
                 Py_TYPE(name)->tp_name);
    return NULL;
  }
  PyObject* kernel = PyDict_GetItemWithError(module->kernels, name);
  if (kernel) return Py_NewRef(kernel);
  if (PyErr_Occurred()) return NULL;
  PyObject* separator = PyUnicode_FromString(", ");
  PyObject* listed = separator ? PyUnicode_Join(separator, module->names)
                               : NULL;
  Py_XDECREF(separator);
  if (!listed) return NULL;
  PyObject* message = PyUnicode_FromFormat(
      "the module has no kernel %R; its kernels are the names it was "
      "compiled with: %U",
      name, listed);
  Py_DECREF(listed);
  if (message) {
    PyErr_SetObject(PyExc_KeyError, message);
    Py_DECREF(message);
  }
  return NULL;
}

static PyObject* hrx_py_kernel_module_get(PyObject* self, PyObject* name) {
  return hrx_py_kernel_module_lookup(self, name);
}

static Py_ssize_t hrx_py_kernel_module_length(PyObject* self) {
  return PyTuple_GET_SIZE(((hrx_py_kernel_module_t*)self)->names);
}

static int hrx_py_kernel_module_contains(PyObject* self, PyObject* name) {
  return PyDict_Contains(((hrx_py_kernel_module_t*)self)->kernels, name);
}

static PyObject* hrx_py_kernel_module_iter(PyObject* self) {
  return PyObject_GetIter(((hrx_py_kernel_module_t*)self)->names);
}

static PyObject* hrx_py_kernel_module_names(PyObject* self, void* closure) {
  (void)closure;
  return Py_NewRef(((hrx_py_kernel_module_t*)self)->names);
}

static PyObject* hrx_py_kernel_module_repr(PyObject* self) {
  hrx_py_kernel_module_t* module = (hrx_py_kernel_module_t*)self;
  PyObject* separator = PyUnicode_FromString(", ");
  PyObject* listed = separator ? PyUnicode_Join(separator, module->names)
                               : NULL;
  Py_XDECREF(separator);
  if (!listed) return NULL;
  PyObject* repr = PyUnicode_FromFormat("<hrx.Module of %zd kernel%s: %U>",
                                        PyTuple_GET_SIZE(module->names),
                                        PyTuple_GET_SIZE(module->names) == 1
                                            ? ""
                                            : "s",
                                        listed);
  Py_DECREF(listed);
  return repr;
}

static PyObject* hrx_py_kernel_module_new(PyTypeObject* type, PyObject* args,
                                          PyObject* kwargs) {
  (void)type;
  (void)args;
  (void)kwargs;
  PyErr_SetString(PyExc_TypeError,
                  "hrx.Module cannot be created directly; get one with "
                  "device.compile_module(source, names)");
  return NULL;
}

HRX_PY_NEW_FUNCTION(hrx_py_kernel_module, kernel_module_type)

static PyMethodDef hrx_py_kernel_module_methods[] = {
    HRX_PY_NEW_METHOD(hrx_py_kernel_module,
        "__new__($type, *args, **kwargs)\n--\n\n"
        "Refuse with a TypeError: modules come from "
        "device.compile_module()."),
    {"get", hrx_py_kernel_module_get, METH_O,
     "get($self, name, /)\n--\n\n"
     "The hrx.Kernel `name` (module[name] alike). KeyError, listing the "
     "module's kernels, for a name it was not compiled with."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef hrx_py_kernel_module_getset[] = {
    {"names", hrx_py_kernel_module_names, NULL,
     "the kernels' names, in the order compiled (a tuple of str)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot hrx_py_kernel_module_slots[] = {
    {Py_tp_doc, "The kernels of one compile of a source "
                "(Device.compile_module): a read-only mapping from each "
                "name to its hrx.Kernel. The compiler ran once for all of "
                "them. Not created directly."},
    {Py_tp_new, hrx_py_kernel_module_new},
    {Py_tp_dealloc, hrx_py_kernel_module_dealloc},
    {Py_tp_traverse, hrx_py_kernel_module_traverse},
    {Py_tp_clear, hrx_py_kernel_module_clear},
    {Py_tp_methods, hrx_py_kernel_module_methods},
    {Py_tp_getset, hrx_py_kernel_module_getset},
    {Py_tp_repr, hrx_py_kernel_module_repr},
    {Py_tp_iter, hrx_py_kernel_module_iter},
    {Py_mp_subscript, hrx_py_kernel_module_lookup},
    {Py_mp_length, hrx_py_kernel_module_length},
    {Py_sq_length, hrx_py_kernel_module_length},
    {Py_sq_contains, hrx_py_kernel_module_contains},
    {0, NULL},
};

PyType_Spec hrx_py_kernel_module_spec = {
    .name = "hrx.Module",
    .basicsize = sizeof(hrx_py_kernel_module_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = hrx_py_kernel_module_slots,
};
