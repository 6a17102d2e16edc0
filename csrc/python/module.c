/* hrx._hrx: the top of the bindings. The module's definition and init:
 * the exceptions, the heap types made from each type file's spec (the only
 * file that includes every type's header), and the module functions. */
#include "state.h"

#include "bench.h"
#include "buffer.h"
#include "completion.h"
#include "device.h"
#include "event.h"
#include "graph.h"
#include "host_threads.h"
#include "kernel.h"
#include "kernel_module.h"
#include "pinned.h"
#include "result_memory.h"
#include "readback.h"
#include "special.h"
#include "stream.h"
#include "testing.h"

/* (name, status code, doc); the builtin bases beside hrx.Error are
 * hrx_py_builtin_bases'. */
static const struct {
  const char* name;
  hrx_status_code_t code;
  const char* doc;
} hrx_py_error_specs[] = {
    {"hrx.InvalidArgumentError", HRX_STATUS_INVALID_ARGUMENT,
     "An argument has a wrong value (also a ValueError)."},
    {"hrx.BusyError", HRX_STATUS_BUSY,
     "The setting is in use and cannot change now (also a RuntimeError)."},
    {"hrx.OutOfMemoryError", HRX_STATUS_OUT_OF_MEMORY,
     "Device or host memory ran out (also a MemoryError)."},
    {"hrx.UnavailableError", HRX_STATUS_UNAVAILABLE,
     "A backend or device is not available (also a RuntimeError)."},
    {"hrx.ResourceExhaustedError", HRX_STATUS_RESOURCE_EXHAUSTED,
     "The native runtime refused a resource such as a queue (also a "
     "RuntimeError)."},
    {"hrx.OutOfRangeError", HRX_STATUS_OUT_OF_RANGE,
     "An index or byte range is out of bounds (also an IndexError and a "
     "ValueError)."},
    {"hrx.FailedPreconditionError", HRX_STATUS_FAILED_PRECONDITION,
     "The object is not in a state that allows the call, e.g. it is closed "
     "(also a RuntimeError)."},
    {"hrx.DeviceError", HRX_STATUS_DEVICE_ERROR,
     "The native runtime reported an error (also a RuntimeError)."},
};

static PyObject* hrx_py_builtin_bases(hrx_status_code_t code) {
  switch (code) {
    case HRX_STATUS_INVALID_ARGUMENT:
      return PyTuple_Pack(1, PyExc_ValueError);
    case HRX_STATUS_OUT_OF_MEMORY:
      return PyTuple_Pack(1, PyExc_MemoryError);
    case HRX_STATUS_OUT_OF_RANGE:
      return PyTuple_Pack(2, PyExc_IndexError, PyExc_ValueError);
    default:
      return PyTuple_Pack(1, PyExc_RuntimeError);
  }
}

static int hrx_py_add_errors(PyObject* module, hrx_py_state_t* state) {
  state->errors[0] = PyErr_NewExceptionWithDoc(
      "hrx.Error", "Base class of every error hrx raises.", PyExc_Exception,
      NULL);
  if (!state->errors[0] || PyModule_AddObjectRef(module, "Error",
                                                 state->errors[0]) < 0) {
    return -1;
  }
  size_t n = sizeof(hrx_py_error_specs) / sizeof(hrx_py_error_specs[0]);
  for (size_t i = 0; i < n; ++i) {
    PyObject* builtins = hrx_py_builtin_bases(hrx_py_error_specs[i].code);
    if (!builtins) return -1;
    Py_ssize_t k = PyTuple_GET_SIZE(builtins);
    PyObject* bases = PyTuple_New(k + 1);
    if (!bases) {
      Py_DECREF(builtins);
      return -1;
    }
    PyTuple_SET_ITEM(bases, 0, Py_NewRef(state->errors[0]));
    for (Py_ssize_t j = 0; j < k; ++j) {
      PyTuple_SET_ITEM(bases, j + 1, Py_NewRef(PyTuple_GET_ITEM(builtins, j)));
    }
    Py_DECREF(builtins);
    PyObject* type = PyErr_NewExceptionWithDoc(
        hrx_py_error_specs[i].name, hrx_py_error_specs[i].doc, bases, NULL);
    Py_DECREF(bases);
    if (!type) return -1;
    state->errors[hrx_py_error_specs[i].code] = type;
    if (PyModule_AddObjectRef(module, hrx_py_error_specs[i].name + 4, type) <
        0) {
      return -1;
    }
  }
  return 0;
}

static PyObject* hrx_py_backends(PyObject* module, PyObject* unused) {
  (void)module;
  (void)unused;
  const char* const* names = NULL;
  int count = hrx_backend_names(&names);
  PyObject* list = PyList_New(0);
  if (!list) return NULL;
  for (int i = 0; i < count; ++i) {
    hrx_status_t refusal;
    Py_BEGIN_ALLOW_THREADS
    refusal = hrx_backend_probe(names[i]);
    Py_END_ALLOW_THREADS
    hrx_backend_info_t info;
    hrx_backend_query_info(names[i], &info);
    PyObject* connections = info.has_connections
                                ? hrx_py_connection_budget(&info.connections)
                                : Py_NewRef(Py_None);
    PyObject* entry =
        connections
            ? Py_BuildValue(
                  "{s:s,s:O,s:s,s:z,s:z,s:N}", "name", names[i], "available",
                  refusal ? Py_False : Py_True, "reason",
                  hrx_status_message(refusal), "library",
                  info.library[0] ? info.library : NULL, "platform",
                  info.platform[0] ? info.platform : NULL, "connections",
                  connections)
            : NULL;
    hrx_status_free(refusal);
    if (!entry || PyList_Append(list, entry) < 0) {
      Py_XDECREF(entry);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(entry);
  }
  return list;
}

static PyObject* hrx_py_now_ns(PyObject* module, PyObject* unused) {
  (void)module;
  (void)unused;
  return PyLong_FromUnsignedLongLong(hrx_now_ns());
}

static PyMethodDef hrx_py_module_methods[] = {
    {"backends", hrx_py_backends, METH_NOARGS,
     "backends($module, /)\n--\n\n"
     "Return a list of {'name', 'available', 'reason', 'library', "
     "'platform', 'connections'}, in automatic selection order. "
     "library/platform name the runtime the hip backend loaded (None for "
     "host); connections describes the process's hardware connection "
     "budget variable ({variable, value, wanted, source}; None for host). "
     "Listing never sets that variable: opening a hip device does."},
    {"now_ns", hrx_py_now_ns, METH_NOARGS,
     "now_ns($module, /)\n--\n\n"
     "Return the monotonic clock hrx times with, in ns."},
    {"bench_run", (PyCFunction)(void (*)(void))hrx_py_bench_run,
     METH_FASTCALL | METH_KEYWORDS,
     "bench_run($module, /, device, *, driver='native', lanes=16, "
     "retained_streams=16, small_bytes=4096, small_copies=1024, "
     "bulk_bytes=33554432, bulk_copies=16, loaded_copies=4, warmup=3, "
     "samples=15, loaded_probes=True, kernel_spin_ns=20000, "
     "kernel_launches=512, backlog_blocks=16384, backlog_kernels=4, "
     "transfer_bytes=8388608, transfer_copies=1, compute_samples=16, "
     "transfer_samples=8, contention=True)\n--\n\n"
     "Run the queue-pool benchmark's cases in C (driver 'native' or 'raw'); "
     "return a dict of raw timings (see hrx.bench)."},
    {"bench_launch", (PyCFunction)(void (*)(void))hrx_py_bench_launch,
     METH_FASTCALL | METH_KEYWORDS,
     "bench_launch($module, /, device, *, driver='native', kernel='tiny', "
     "grid=1, block=1, spin_ns=0, launches=1000, warmup=100, threads=1, "
     "priority='normal', synchronize_each=False)\n--\n\n"
     "Time launches of a built-in benchmark kernel in C: each of `threads` "
     "threads launches it `launches` times on a stream of its own (driver "
     "'native') or a native queue through the backend interface ('raw'), "
     "then synchronizes (with synchronize_each, after every launch: an "
     "isolated launch's latency). Return {driver, kernel, grid, block, "
     "spin_ns, threads, launches (in all), elapsed_ns (common start to the "
     "slowest thread's end), thread_ns}. The GIL is released."},
    {"bench_kernel_source", hrx_py_bench_kernel_source, METH_O,
     "bench_kernel_source($module, language, /)\n--\n\n"
     "Return the source of the benchmark's built-in kernels (hrx_bench_tiny, "
     "hrx_bench_spin) in a kernel language ('c', 'cuda', 'hip'), or None."},
    {"_interpreter_exiting", hrx_py_graph_interpreter_exiting, METH_NOARGS,
     "_interpreter_exiting($module, /)\n--\n\n"
     "Called at exit (atexit): graph host callbacks still queued are "
     "skipped from then on."},
    {NULL, NULL, 0, NULL},
};

/* The heap types, created in this order (a base before its subtypes) and
 * added to the module under `name`. */
static const struct {
  PyType_Spec* spec;
  const char* name;
  size_t field;          /* offsetof the type in hrx_py_state_t */
  ptrdiff_t base;        /* offsetof its base type there, or -1 */
  bool drop_ordering;    /* tp_richcompare answers only == and != */
} hrx_py_types[] = {
#define HRX_PY_FIELD(name) offsetof(hrx_py_state_t, name)
    {&hrx_py_device_spec, "Device", HRX_PY_FIELD(device_type), -1, true},
    {&hrx_py_buffer_spec, "Buffer", HRX_PY_FIELD(buffer_type), -1, false},
    {&hrx_py_event_spec, "Event", HRX_PY_FIELD(event_type), -1, false},
    {&hrx_py_readback_spec, "Readback", HRX_PY_FIELD(readback_type), -1,
     false},
    {&hrx_py_stream_spec, "Stream", HRX_PY_FIELD(stream_type), -1, false},
    {&hrx_py_queue_spec, "FabricQueue", HRX_PY_FIELD(queue_type),
     HRX_PY_FIELD(stream_type), false},
    {&hrx_py_completion_spec, "Completion", HRX_PY_FIELD(completion_type), -1,
     false},
    {&hrx_py_graph_node_spec, "GraphNode", HRX_PY_FIELD(graph_node_type), -1,
     false},
    {&hrx_py_graph_spec, "Graph", HRX_PY_FIELD(graph_type), -1, false},
    {&hrx_py_kernel_spec, "Kernel", HRX_PY_FIELD(kernel_type), -1, false},
    {&hrx_py_kernel_module_spec, "Module", HRX_PY_FIELD(kernel_module_type),
     -1, false},
    {&hrx_py_pinned_memory_spec, "PinnedMemory",
     HRX_PY_FIELD(pinned_memory_type), -1, false},
    {&hrx_py_pinned_scope_spec, "PinnedScope",
     HRX_PY_FIELD(pinned_scope_type), -1, false},
    {&hrx_py_result_memory_spec, "ResultMemory",
     HRX_PY_FIELD(result_memory_type), -1, false},
#undef HRX_PY_FIELD
};

static PyTypeObject** hrx_py_state_type(hrx_py_state_t* state, size_t field) {
  return (PyTypeObject**)((char*)state + field);
}

static int hrx_py_add_types(PyObject* module, hrx_py_state_t* state) {
  size_t n = sizeof(hrx_py_types) / sizeof(hrx_py_types[0]);
  for (size_t i = 0; i < n; ++i) {
    PyObject* base =
        hrx_py_types[i].base < 0
            ? NULL
            : (PyObject*)*hrx_py_state_type(state,
                                            (size_t)hrx_py_types[i].base);
    PyTypeObject* type = (PyTypeObject*)PyType_FromModuleAndSpec(
        module, hrx_py_types[i].spec, base);
    *hrx_py_state_type(state, hrx_py_types[i].field) = type;
    if (!type ||
        (hrx_py_types[i].drop_ordering && hrx_py_drop_ordering(type) < 0) ||
        PyModule_AddObjectRef(module, hrx_py_types[i].name,
                              (PyObject*)type) < 0) {
      return -1;
    }
  }
  return 0;
}

static int hrx_py_module_exec(PyObject* module) {
  hrx_py_state_t* state = hrx_py_state(module);
  if (hrx_py_add_errors(module, state) < 0) return -1;
  if (hrx_py_host_threads_register(module) < 0) return -1;
  if (hrx_py_add_types(module, state) < 0) return -1;
#ifdef HRX_TESTING_BUILD
  if (hrx_py_testing_register(module) < 0) return -1;
#endif
  if (PyModule_AddIntConstant(module, "DEFAULT_STREAM_QUEUE_COUNT",
                              HRX_DEFAULT_STREAM_QUEUE_COUNT) < 0 ||
      PyModule_AddIntConstant(module, "MAX_STREAM_QUEUE_COUNT",
                              HRX_MAX_STREAM_QUEUE_COUNT) < 0 ||
      PyModule_AddIntConstant(module, "MAX_RESERVED_QUEUES",
                              HRX_MAX_RESERVED_QUEUES) < 0 ||
      PyModule_AddIntConstant(module, "KERNEL_MAX_ARGS",
                              HRX_KERNEL_MAX_ARGS) < 0 ||
      PyModule_AddIntConstant(module, "KERNEL_MAX_ARG_BYTES",
                              HRX_KERNEL_MAX_ARG_BYTES) < 0 ||
      PyModule_AddIntConstant(module, "KERNEL_MAX_MODULE_NAMES",
                              HRX_KERNEL_MAX_MODULE_NAMES) < 0) {
    return -1;
  }
  return 0;
}

static int hrx_py_module_traverse(PyObject* module, visitproc visit,
                                  void* arg) {
  hrx_py_state_t* state = hrx_py_state(module);
  Py_VISIT(state->device_type);
  Py_VISIT(state->stream_type);
  Py_VISIT(state->buffer_type);
  Py_VISIT(state->event_type);
  Py_VISIT(state->readback_type);
  Py_VISIT(state->queue_type);
  Py_VISIT(state->graph_type);
  Py_VISIT(state->graph_node_type);
  Py_VISIT(state->completion_type);
  Py_VISIT(state->kernel_type);
  Py_VISIT(state->kernel_module_type);
  Py_VISIT(state->pinned_memory_type);
  Py_VISIT(state->result_memory_type);
  Py_VISIT(state->pinned_scope_type);
  Py_VISIT(state->numpy_number);
  Py_VISIT(state->numpy_bool);
  Py_VISIT(state->numpy_void);
  Py_VISIT(state->numpy_signed);
  Py_VISIT(state->numpy_unsigned);
  Py_VISIT(state->numpy_floating);
  for (int i = 0; i <= HRX_STATUS_DEVICE_ERROR; ++i) Py_VISIT(state->errors[i]);
  return 0;
}

static int hrx_py_module_clear(PyObject* module) {
  hrx_py_state_t* state = hrx_py_state(module);
  Py_CLEAR(state->device_type);
  Py_CLEAR(state->stream_type);
  Py_CLEAR(state->buffer_type);
  Py_CLEAR(state->event_type);
  Py_CLEAR(state->readback_type);
  Py_CLEAR(state->queue_type);
  Py_CLEAR(state->graph_type);
  Py_CLEAR(state->graph_node_type);
  Py_CLEAR(state->completion_type);
  Py_CLEAR(state->kernel_type);
  Py_CLEAR(state->kernel_module_type);
  Py_CLEAR(state->pinned_memory_type);
  Py_CLEAR(state->result_memory_type);
  Py_CLEAR(state->pinned_scope_type);
  Py_CLEAR(state->numpy_number);
  Py_CLEAR(state->numpy_bool);
  Py_CLEAR(state->numpy_void);
  Py_CLEAR(state->numpy_signed);
  Py_CLEAR(state->numpy_unsigned);
  Py_CLEAR(state->numpy_floating);
  for (int i = 0; i <= HRX_STATUS_DEVICE_ERROR; ++i) Py_CLEAR(state->errors[i]);
  return 0;
}

static void hrx_py_module_free(void* module) {
  hrx_py_module_clear((PyObject*)module);
}

static PyModuleDef_Slot hrx_py_module_slots[] = {
    {Py_mod_exec, hrx_py_module_exec},
    {0, NULL},
};

struct PyModuleDef hrx_py_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "hrx._hrx",
    .m_doc = "C core of hrx: devices, the stream queue pool, streams, "
             "buffers, events, graphs, kernels.",
    .m_size = sizeof(hrx_py_state_t),
    .m_methods = hrx_py_module_methods,
    .m_slots = hrx_py_module_slots,
    .m_traverse = hrx_py_module_traverse,
    .m_clear = hrx_py_module_clear,
    .m_free = hrx_py_module_free,
};

PyMODINIT_FUNC PyInit__hrx(void) {
  return PyModuleDef_Init(&hrx_py_module_def);
}
