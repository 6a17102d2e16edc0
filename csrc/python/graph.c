/* hrx.Graph and hrx.GraphNode. Host callbacks are Python callables run by
 * one trampoline, the only place a host worker takes the GIL. Every rule
 * (devices, views, dependencies, cycles, sealing) is the core's. */
#include "graph.h"

#include <stdatomic.h>

#include "args.h"
#include "buffer.h"
#include "completion.h"
#include "device_handle.h"
#include "host_threads.h"
#include "launch.h"
#include "property.h"
#include "special.h"
#include "stream.h"
#include "submit.h"
#include "typed_view.h"

typedef struct {
  PyObject_HEAD
  hrx_graph_t* graph;        /* retained; NULL once closed */
  Py_ssize_t node_handles;   /* GraphNode objects naming this Graph */
} hrx_py_graph_t;

typedef struct {
  PyObject_HEAD
  hrx_graph_t* graph;        /* retained: keeps `node` valid */
  hrx_graph_node_t* node;    /* borrowed from graph */
  PyObject* owner;           /* the hrx.Graph (strong), or NULL once
                                cleared; counted in its node_handles */
} hrx_py_graph_node_t;

/* ------------------------------------------------------------ trampoline */

/* Drops a Python reference from any thread. */
static void hrx_py_graph_decref(void* object) {
  hrx_py_host_gil_t gil = hrx_py_host_gil_take();
  Py_DECREF((PyObject*)object);
  hrx_py_host_gil_give(gil);
}

/* Set by hrx._hrx._interpreter_exiting(), which hrx registers with atexit:
 * once the interpreter shuts down, a worker must not take the GIL (it could
 * hang there), so callbacks still queued are skipped. */
static atomic_bool hrx_py_interpreter_exiting = false;

PyObject* hrx_py_graph_interpreter_exiting(PyObject* module,
                                           PyObject* unused) {
  (void)module;
  (void)unused;
  atomic_store(&hrx_py_interpreter_exiting, true);
  Py_RETURN_NONE;
}

/* Runs a host-callback node: calls the callable with no arguments. An
 * exception is kept by the launch's completion (result() re-raises it). */
static hrx_status_t hrx_py_graph_trampoline(void* user_data,
                                            hrx_completion_t* completion) {
  if (atomic_load(&hrx_py_interpreter_exiting)) {
    return hrx_status_create(HRX_STATUS_FAILED_PRECONDITION,
                             "host callback skipped: the interpreter is "
                             "shutting down");
  }
  hrx_py_host_gil_t gil = hrx_py_host_gil_take();
  PyObject* result = PyObject_CallNoArgs((PyObject*)user_data);
  hrx_status_t status = NULL;
  if (result) {
    Py_DECREF(result);
  } else {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (value && traceback) PyException_SetTraceback(value, traceback);
    PyObject* text = value ? PyObject_Str(value) : NULL;
    if (!text) PyErr_Clear();
    const char* message = text ? PyUnicode_AsUTF8(text) : NULL;
    if (!message) PyErr_Clear();
    char buffer[512];
    PyOS_snprintf(buffer, sizeof(buffer), "host callback raised %.100s: %.380s",
                  type ? ((PyTypeObject*)type)->tp_name : "an exception",
                  message ? message : "");
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    if (value) {
      hrx_completion_attach_payload(completion, value, hrx_py_graph_decref);
    }
    status = hrx_status_create(HRX_STATUS_FAILED_PRECONDITION, buffer);
  }
  hrx_py_host_gil_give(gil);
  return status;
}

/* ------------------------------------------------------------- GraphNode */

static PyObject* hrx_py_graph_node_wrap(hrx_py_state_t* state,
                                        PyObject* owner, hrx_graph_t* graph,
                                        hrx_graph_node_t* node) {
  hrx_py_graph_node_t* self =
      PyObject_GC_New(hrx_py_graph_node_t, state->graph_node_type);
  if (!self) return NULL;
  hrx_graph_retain(graph);
  self->graph = graph;
  self->node = node;
  self->owner = Py_NewRef(owner);
  ((hrx_py_graph_t*)owner)->node_handles++;
  PyObject_GC_Track(self);
  return (PyObject*)self;
}

static int hrx_py_graph_node_traverse(PyObject* self, visitproc visit,
                                      void* arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(((hrx_py_graph_node_t*)self)->owner);
  return 0;
}

static int hrx_py_graph_node_clear(PyObject* self) {
  hrx_py_graph_node_t* node = (hrx_py_graph_node_t*)self;
  if (node->owner) {
    ((hrx_py_graph_t*)node->owner)->node_handles--;
    Py_CLEAR(node->owner);
  }
  return 0;
}

static void hrx_py_graph_release(void* graph) {
  /* A last graph reference frees buffers (which wait for queued work) and
   * callables (which take the GIL themselves). */
  hrx_graph_release(graph);
}

/* A GraphNode is never closed: dealloc drops its owner, then its graph. */
static const hrx_py_handle_kind_t hrx_py_graph_node_kind = {
    .name = "graph node",
    .field = offsetof(hrx_py_graph_node_t, graph),
    .release = hrx_py_graph_release,
    .clear = hrx_py_graph_node_clear};

static void hrx_py_graph_node_dealloc(PyObject* self) {
  hrx_py_handle_dealloc(self, &hrx_py_graph_node_kind);
}

static PyObject* hrx_py_graph_node_get_index(PyObject* self, void* closure) {
  (void)closure;
  return PyLong_FromSize_t(
      hrx_graph_node_index(((hrx_py_graph_node_t*)self)->node));
}

static PyObject* hrx_py_graph_node_repr(PyObject* self) {
  return PyUnicode_FromFormat(
      "<hrx.GraphNode %zu>",
      hrx_graph_node_index(((hrx_py_graph_node_t*)self)->node));
}

static PyGetSetDef hrx_py_graph_node_getset[] = {
    {"index", hrx_py_graph_node_get_index, NULL,
     "position of the node in its graph's recording order", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot hrx_py_graph_node_slots[] = {
    {Py_tp_doc, "A node of an hrx.Graph, returned by Graph.copy(), fill(), "
                "kernel() and callback(); name it in after= of later nodes."},
    {Py_tp_dealloc, hrx_py_graph_node_dealloc},
    {Py_tp_traverse, hrx_py_graph_node_traverse},
    {Py_tp_clear, hrx_py_graph_node_clear},
    {Py_tp_getset, hrx_py_graph_node_getset},
    {Py_tp_repr, hrx_py_graph_node_repr},
    {0, NULL},
};

PyType_Spec hrx_py_graph_node_spec = {
    .name = "hrx.GraphNode",
    .basicsize = sizeof(hrx_py_graph_node_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = hrx_py_graph_node_slots,
};

/* ----------------------------------------------------------------- Graph */

static const hrx_py_handle_kind_t hrx_py_graph_kind = {
    .name = "graph",
    .field = offsetof(hrx_py_graph_t, graph),
    .release = hrx_py_graph_release};

HRX_PY_HANDLE_FUNCTIONS(hrx_py_graph, hrx_py_graph_kind)

/* The callables of the graph's host nodes belong to this handle while the
 * C graph has no holder but it and its GraphNode objects (a launch in
 * flight holds it too, and then keeps them alive by itself). */
static int hrx_py_graph_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  hrx_py_graph_t* graph = (hrx_py_graph_t*)self;
  if (!graph->graph) return 0;
  hrx_py_callable_visit_t how = {visit, arg};
  return hrx_graph_visit_host_data(graph->graph,
                                   (int)(1 + graph->node_handles),
                                   hrx_py_visit_callable, &how);
}

static int hrx_py_graph_clear(PyObject* self) {
  hrx_py_handle_close(self, &hrx_py_graph_kind);
  return 0;
}

/* The graph RETAINED for a call that releases the GIL, or NULL with the
 * closed error. Call after converting arguments (they may run Python). */
static hrx_graph_t* hrx_py_graph_hold(PyObject* self) {
  hrx_graph_t* graph = hrx_py_handle_get(self, &hrx_py_graph_kind);
  hrx_graph_retain(graph);
  return graph;
}

static void hrx_py_graph_drop(hrx_graph_t* graph) {
  Py_BEGIN_ALLOW_THREADS
  hrx_graph_release(graph);
  Py_END_ALLOW_THREADS
}

/* Graph(device) */
static PyObject* hrx_py_graph_new(PyTypeObject* type, PyObject* args,
                                  PyObject* kwargs) {
  hrx_py_state_t* state = NULL;
  hrx_device_t* device =
      hrx_py_device_argument(type, args, kwargs, "O:Graph", &state);
  if (!device) return NULL;
  hrx_graph_t* graph = NULL;
  hrx_status_t status = hrx_graph_create(device, &graph);
  if (status) return hrx_py_raise(state, status);
  hrx_py_graph_t* self = PyObject_GC_New(hrx_py_graph_t, type);
  if (!self) {
    hrx_py_graph_drop(graph);
    return NULL;
  }
  self->graph = graph;
  self->node_handles = 0;
  PyObject_GC_Track(self);
  return (PyObject*)self;
}

/* The dependencies named by `after` (an iterable of GraphNode). On success
 * *out_nodes is a new array (PyMem_Free it) and *out_keep a sequence that
 * keeps the node objects, and so their graphs, alive. */
static int hrx_py_graph_after(hrx_py_state_t* state, PyObject* after,
                              PyObject** out_keep, hrx_graph_node_t*** out_nodes,
                              Py_ssize_t* out_count) {
  *out_keep = NULL;
  *out_nodes = NULL;
  *out_count = 0;
  if (!after) return 0;
  if (after == Py_None || PyUnicode_Check(after) || PyBytes_Check(after)) {
    PyErr_Format(PyExc_TypeError,
                 "after must be an iterable of hrx.GraphNode (e.g. a list), "
                 "not %.100s",
                 Py_TYPE(after)->tp_name);
    return -1;
  }
  PyObject* sequence = PySequence_Fast(
      after, "after must be an iterable of hrx.GraphNode (e.g. a list)");
  if (!sequence) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(sequence);
  hrx_graph_node_t** nodes = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*nodes));
  if (!nodes) {
    Py_DECREF(sequence);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(sequence, i);
    if (!PyObject_TypeCheck(item, state->graph_node_type)) {
      PyErr_Format(PyExc_TypeError,
                   "after[%zd] must be an hrx.GraphNode, not %.100s", i,
                   Py_TYPE(item)->tp_name);
      PyMem_Free(nodes);
      Py_DECREF(sequence);
      return -1;
    }
    nodes[i] = ((hrx_py_graph_node_t*)item)->node;
  }
  *out_keep = sequence;
  *out_nodes = nodes;
  *out_count = n;
  return 0;
}

typedef enum { HRX_PY_GRAPH_COPY, HRX_PY_GRAPH_FILL, HRX_PY_GRAPH_CALLBACK }
    hrx_py_graph_op_t;

/* Records one node; the arguments are converted before the graph is held. */
static PyObject* hrx_py_graph_record(PyObject* self, hrx_py_graph_op_t op,
                                     PyObject* first, PyObject* second,
                                     PyObject* after) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  int64_t byte = 0;
  hrx_py_buffer_type_t typed;
  if (op == HRX_PY_GRAPH_COPY &&
      hrx_py_typed_check_copy(state, first, second) < 0) {
    return NULL;
  }
  if (op == HRX_PY_GRAPH_FILL && hrx_py_buffer_type(state, first, &typed) &&
      typed.dtype.kind) {
    /* A typed view: its element, which a graph's byte fill writes only
     * when it is one repeated byte. */
    uint8_t pattern[HRX_PY_DTYPE_MAX_ITEMSIZE];
    size_t width = 0;
    if (hrx_py_typed_fill_value(state, first, second, pattern, &width) < 0) {
      return NULL;
    }
    if (!hrx_py_pattern_is_one_byte(pattern, width)) {
      PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                   "a graph fill writes one repeated byte; %R as %s is not "
                   "(fill it with Stream.fill, or copy from a buffer that "
                   "holds it)",
                   second, hrx_py_dtype_name(typed.dtype));
      return NULL;
    }
    byte = pattern[0];
  } else if (op == HRX_PY_GRAPH_FILL) {
    if (hrx_py_arg_int64(state, second, "fill byte", &byte) < 0) return NULL;
    if (byte < 0 || byte > 255) {
      PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                   "fill byte must be between 0 and 255; got %lld",
                   (long long)byte);
      return NULL;
    }
  }
  if (op == HRX_PY_GRAPH_CALLBACK && !PyCallable_Check(first)) {
    PyErr_Format(PyExc_TypeError, "callback must be callable, not %.100s",
                 Py_TYPE(first)->tp_name);
    return NULL;
  }
  PyObject* keep = NULL;
  hrx_graph_node_t** nodes = NULL;
  Py_ssize_t count = 0;
  if (hrx_py_graph_after(state, after, &keep, &nodes, &count) < 0) return NULL;
  hrx_view_t dst = {0}, src = {0};
  hrx_graph_t* graph = NULL;
  bool ok = true;
  if (op == HRX_PY_GRAPH_COPY) {
    ok = hrx_py_buffer_view(state, first, "copy destination", &dst) == 0 &&
         hrx_py_buffer_view(state, second, "copy source", &src) == 0;
  } else if (op == HRX_PY_GRAPH_FILL) {
    ok = hrx_py_buffer_view(state, first, "fill destination", &dst) == 0;
  }
  if (ok) {
    graph = hrx_py_graph_hold(self);
    ok = graph != NULL;
  }
  hrx_graph_node_t* node = NULL;
  hrx_status_t status = NULL;
  if (ok) {
    if (op == HRX_PY_GRAPH_CALLBACK) {
      /* The graph owns this reference once the node is recorded. */
      Py_INCREF(first);
      status = hrx_graph_add_host(graph, hrx_py_graph_trampoline, first,
                                  hrx_py_graph_decref, nodes, (size_t)count,
                                  &node);
      if (status) Py_DECREF(first);
    } else {
      Py_BEGIN_ALLOW_THREADS
      status = op == HRX_PY_GRAPH_COPY
                   ? hrx_graph_add_copy(graph, dst, src, nodes, (size_t)count,
                                        &node)
                   : hrx_graph_add_fill(graph, dst, (uint8_t)byte, nodes,
                                        (size_t)count, &node);
      Py_END_ALLOW_THREADS
    }
  }
  PyObject* result = NULL;
  if (ok && !status) {
    result = hrx_py_graph_node_wrap(state, self, graph, node);
  }
  Py_BEGIN_ALLOW_THREADS
  hrx_py_release_held(NULL, dst.buffer, src.buffer, NULL);
  hrx_graph_release(graph);
  Py_END_ALLOW_THREADS
  PyMem_Free(nodes);
  Py_XDECREF(keep);
  if (status) return hrx_py_raise(state, status);
  return result;
}

static PyObject* hrx_py_graph_copy(PyObject* self, PyObject* const* args,
                                   Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"dst", "src", "after"};
  PyObject *dst, *src, *after = NULL;
  PyObject* parsed[3];
  if (hrx_py_arg_parse("copy", args, nargs, kwnames, names, 3, 2, 2, parsed) <
      0) {
    return NULL;
  }
  dst = parsed[0];
  src = parsed[1];
  if (parsed[2]) after = parsed[2];
  return hrx_py_graph_record(self, HRX_PY_GRAPH_COPY, dst, src, after);
}

static PyObject* hrx_py_graph_fill(PyObject* self, PyObject* const* args,
                                   Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"dst", "byte", "after"};
  PyObject *dst, *byte, *after = NULL;
  PyObject* parsed[3];
  if (hrx_py_arg_parse("fill", args, nargs, kwnames, names, 3, 2, 2, parsed) <
      0) {
    return NULL;
  }
  dst = parsed[0];
  byte = parsed[1];
  if (parsed[2]) after = parsed[2];
  return hrx_py_graph_record(self, HRX_PY_GRAPH_FILL, dst, byte, after);
}

static PyObject* hrx_py_graph_callback(PyObject* self, PyObject* const* args,
                                       Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"fn", "after"};
  PyObject *fn, *after = NULL;
  PyObject* parsed[2];
  if (hrx_py_arg_parse("callback", args, nargs, kwnames, names, 2, 1, 1,
                       parsed) < 0) {
    return NULL;
  }
  fn = parsed[0];
  if (parsed[1]) after = parsed[1];
  return hrx_py_graph_record(self, HRX_PY_GRAPH_CALLBACK, fn, NULL, after);
}

/* The graph's device, for a kernel node's foreign arrays. */
static hrx_device_t* hrx_py_graph_launch_device(PyObject* self) {
  hrx_graph_t* graph = hrx_py_handle_get(self, &hrx_py_graph_kind);
  return graph ? hrx_graph_device(graph) : NULL;
}

/* kernel(kernel, grid, block, args=(), shared=0, *, after=()) */
static PyObject* hrx_py_graph_kernel(PyObject* self, PyObject* const* args,
                                     Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"kernel", "grid",   "block",
                                      "args",   "shared", "after"};
  PyObject* given[6];
  if (hrx_py_arg_parse("kernel", args, nargs, kwnames, names, 6, 5, 3, given) <
      0) {
    return NULL;
  }
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  PyObject* keep = NULL;
  hrx_graph_node_t** nodes = NULL;
  Py_ssize_t count = 0;
  if (hrx_py_graph_after(state, given[5], &keep, &nodes, &count) < 0) {
    return NULL;
  }
  hrx_py_launch_t* launch = PyMem_Malloc(sizeof(*launch));
  PyObject* result = NULL;
  if (!launch) {
    PyErr_NoMemory();
  } else if (hrx_py_launch_convert(state, given[0], given[1], given[2],
                                   given[3], given[4],
                                   hrx_py_graph_launch_device, self,
                                   launch) == 0) {
    /* The launch borrows handles: recorded with the GIL held (recording
     * never waits). */
    hrx_graph_t* graph = hrx_py_handle_get(self, &hrx_py_graph_kind);
    hrx_graph_node_t* node = NULL;
    hrx_status_t status =
        graph ? hrx_graph_add_kernel(graph, launch->kernel, &launch->config,
                                     launch->args, launch->count, nodes,
                                     (size_t)count, &node)
              : NULL;
    if (status) {
      hrx_py_raise(state, status);
    } else if (graph) {
      result = hrx_py_graph_node_wrap(state, self, graph, node);
    }
  }
  PyMem_Free(launch);
  PyMem_Free(nodes);
  Py_XDECREF(keep);
  return result;
}

static PyObject* hrx_py_graph_add_dependency(PyObject* self,
                                             PyObject* const* args,
                                             Py_ssize_t nargs,
                                             PyObject* kwnames) {
  static const char* const names[] = {"node", "after"};
  PyObject* objects[2];
  if (hrx_py_arg_parse("add_dependency", args, nargs, kwnames, names, 2, 2, 2,
                       objects) < 0) {
    return NULL;
  }
  PyObject *node_object = objects[0], *after_object = objects[1];
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  for (int i = 0; i < 2; ++i) {
    if (!PyObject_TypeCheck(objects[i], state->graph_node_type)) {
      PyErr_Format(PyExc_TypeError, "%s must be an hrx.GraphNode, not %.100s",
                   names[i], Py_TYPE(objects[i])->tp_name);
      return NULL;
    }
  }
  hrx_graph_t* graph = hrx_py_graph_hold(self);
  if (!graph) return NULL;
  hrx_status_t status = hrx_graph_add_dependency(
      graph, ((hrx_py_graph_node_t*)node_object)->node,
      ((hrx_py_graph_node_t*)after_object)->node);
  hrx_py_graph_drop(graph);
  if (status) return hrx_py_raise(state, status);
  Py_RETURN_NONE;
}

static PyObject* hrx_py_graph_launch(PyObject* self, PyObject* stream_object) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_stream_t* stream = hrx_py_stream_unwrap(state, stream_object);
  if (!stream) return NULL;
  hrx_py_submission_t s = {.kind = HRX_PY_SUBMIT_GRAPH_LAUNCH,
                           .stream = stream,
                           .graph = hrx_py_handle_get(self, &hrx_py_graph_kind)};
  if (!s.graph) return NULL;
  if (hrx_py_submit(state, &s) < 0) return NULL;
  if (!s.out_completion) Py_RETURN_NONE;
  return hrx_py_completion_wrap(state, s.out_completion);
}

static PyObject* hrx_py_graph_device_of(hrx_py_state_t* state, void* graph) {
  return hrx_py_device_ref(state, hrx_graph_device(graph));
}

static PyObject* hrx_py_graph_node_count(hrx_py_state_t* state, void* graph) {
  (void)state;
  return PyLong_FromSize_t(hrx_graph_node_count(graph));
}

static PyObject* hrx_py_graph_native(hrx_py_state_t* state, void* graph) {
  (void)state;
  return PyBool_FromLong(hrx_graph_is_native(graph));
}

HRX_PY_NEW_FUNCTION(hrx_py_graph, graph_type)

static PyMethodDef hrx_py_graph_methods[] = {
    HRX_PY_NEW_METHOD(hrx_py_graph,
                      "__new__($type, device)\n--\n\n"
                      "Create an empty graph of device."),
    {"copy", (PyCFunction)(void (*)(void))hrx_py_graph_copy,
     METH_FASTCALL | METH_KEYWORDS,
     "copy($self, dst, src, *, after=())\n--\n\n"
     "Record a device copy between equal, non-overlapping views, run after "
     "the nodes in after; return its GraphNode."},
    {"fill", (PyCFunction)(void (*)(void))hrx_py_graph_fill,
     METH_FASTCALL | METH_KEYWORDS,
     "fill($self, dst, byte, *, after=())\n--\n\n"
     "Record setting every byte of dst to byte (0..255), after the nodes in "
     "after; return its GraphNode. For a typed dst, byte is an element "
     "value (as Stream.fill takes) whose bytes must all be equal (0, or -1 "
     "in a signed integer view)."},
    {"kernel", (PyCFunction)(void (*)(void))hrx_py_graph_kernel,
     METH_FASTCALL | METH_KEYWORDS,
     "kernel($self, /, kernel, grid, block, args=(), shared=0, *, "
     "after=())\n--\n\n"
     "Record a launch of an hrx.Kernel of the graph's device, run after the "
     "nodes in after; return its GraphNode. grid, block, args and shared as "
     "in Stream.launch; the argument values are copied now and the graph "
     "keeps the kernel and the buffers alive. A native kernel node where "
     "the device has native graphs."},
    {"callback", (PyCFunction)(void (*)(void))hrx_py_graph_callback,
     METH_FASTCALL | METH_KEYWORDS,
     "callback($self, fn, *, after=())\n--\n\n"
     "Record a call of fn() on a host worker thread once the nodes in after "
     "are done; nodes after it wait for it; return its GraphNode. An "
     "exception is re-raised by the launch's Completion.result(). fn must "
     "not submit, allocate or wait on hrx objects "
     "(FailedPreconditionError)."},
    {"add_dependency", (PyCFunction)(void (*)(void))hrx_py_graph_add_dependency,
     METH_FASTCALL | METH_KEYWORDS,
     "add_dependency($self, node, after)\n--\n\n"
     "Make node run after the node `after` (refused if it would close a "
     "cycle)."},
    {"launch", hrx_py_graph_launch, METH_O,
     "launch($self, stream, /)\n--\n\n"
     "Run the graph on the stream, after its earlier work and before its "
     "later work. Graphs with host callbacks return a Completion; "
     "device-only graphs return None (record an event on the stream to "
     "wait for them). The first launch seals the graph."},
    HRX_PY_HANDLE_METHODS(hrx_py_graph,
                          "Drop this handle; launches in "
                          "flight still complete."),
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef hrx_py_graph_getset[] = {
    HRX_PY_PROPERTY("device", hrx_py_graph_kind, hrx_py_graph_device_of,
                    "the graph's device"),
    HRX_PY_PROPERTY("node_count", hrx_py_graph_kind, hrx_py_graph_node_count,
                    "nodes recorded"),
    HRX_PY_PROPERTY("native", hrx_py_graph_kind, hrx_py_graph_native,
                    "whether launches run as one native graph (hip, device "
                    "work only); known after the first launch"),
    HRX_PY_CLOSED_PROPERTY(hrx_py_graph_kind),
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot hrx_py_graph_slots[] = {
    {Py_tp_doc, "Graph(device)\n--\n\n"
                "Copies, fills, kernel launches and host callbacks recorded "
                "with explicit dependencies (after=[nodes]) and launched on "
                "streams of the device any number of times with "
                "graph.launch(stream). The graph keeps its buffers and "
                "kernels alive."},
    {Py_tp_new, hrx_py_graph_new},
    {Py_tp_dealloc, hrx_py_graph_dealloc},
    {Py_tp_traverse, hrx_py_graph_traverse},
    {Py_tp_clear, hrx_py_graph_clear},
    {Py_tp_methods, hrx_py_graph_methods},
    {Py_tp_getset, hrx_py_graph_getset},
    {0, NULL},
};

PyType_Spec hrx_py_graph_spec = {
    .name = "hrx.Graph",
    .basicsize = sizeof(hrx_py_graph_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = hrx_py_graph_slots,
};
