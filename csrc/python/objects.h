/* Instance layouts of the extension's types, shared between binding files
 * that construct each other's objects. Every handle holds one reference to
 * its C object; NULL means the handle was closed. */
#ifndef HRX_PYTHON_OBJECTS_H_
#define HRX_PYTHON_OBJECTS_H_

#include "module.h"

typedef struct {
  PyObject_HEAD
  hrx_device_t* device;      /* retained; NULL once closed */
} hrx_py_device_t;

typedef struct {
  PyObject_HEAD
  hrx_stream_t* stream;      /* retained; NULL once closed */
} hrx_py_stream_t;

typedef struct {
  PyObject_HEAD
  hrx_buffer_t* buffer;      /* retained; NULL once closed */
  uint64_t offset;           /* this view's range within the allocation */
  uint64_t length;
} hrx_py_buffer_t;

typedef struct {
  PyObject_HEAD
  hrx_event_t* event;        /* retained; NULL once closed */
} hrx_py_event_t;

/* A Readback may be used from several threads at once (readback.c): waits
 * use `readback` with the GIL released, counted in `waiters`; the last of
 * them releases it once the result is kept or close() was called. */
typedef struct {
  PyObject_HEAD
  hrx_readback_t* readback;  /* owned; NULL once released */
  PyObject* result;          /* cached numpy array after wait() */
  int waiters;               /* wait() and done() calls using `readback`
                                without the GIL */
  bool closing;              /* close() was called (also while waits ran
                                or after one kept the result): closed for
                                every later call */
  bool abandoned;            /* a wait() was interrupted: release deferred */
  /* Stream.read_into: the export of `out`, held while `readback` may still
   * write it, released (with the GIL) right after `readback` is. */
  Py_buffer into;
  bool has_into;
} hrx_py_readback_t;

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

typedef struct {
  PyObject_HEAD
  hrx_completion_t* completion;  /* retained */
} hrx_py_completion_t;

typedef struct {
  PyObject_HEAD
  hrx_kernel_t* kernel;          /* retained; NULL once closed */
} hrx_py_kernel_t;

/* A value argument's bytes: numpy's largest number, clongdouble, is 32;
 * a structured (numpy.void) scalar may have up to 64. */
typedef union {
  unsigned char bytes[64];
  long double align;
} hrx_py_kernel_value_t;

/* One launch converted from Python (kernel.c). Every pointer in it is
 * BORROWED from open handles and the argument objects: valid until the GIL
 * is next released (submit.h retains what it needs across a release). */
typedef struct hrx_py_launch_s {
  hrx_kernel_t* kernel;
  hrx_launch_config_t config;
  size_t count;
  hrx_kernel_arg_t args[HRX_KERNEL_MAX_ARGS];
  hrx_py_kernel_value_t values[HRX_KERNEL_MAX_ARGS];
} hrx_py_launch_t;

/* The device a launch's foreign arrays must be on, or NULL with an error
 * (a closed stream or graph): asked only when such an argument comes. */
typedef hrx_device_t* (*hrx_py_launch_device_fn)(PyObject* owner);

/* Converts the arguments of Stream.launch / Graph.kernel (kernel, grid,
 * block, args, shared; args and shared may be NULL for their defaults)
 * into *out, or -1 with an error. Python code the arguments run (their
 * __cuda_array_interface__ or __dlpack__) runs before any handle is
 * borrowed. The rules (types, sizes, what is refused) are in
 * docs/kernels.md, "Arguments". */
int hrx_py_launch_convert(hrx_py_state_t* state, PyObject* kernel,
                          PyObject* grid, PyObject* block, PyObject* args,
                          PyObject* shared, hrx_py_launch_device_fn device_of,
                          PyObject* owner, hrx_py_launch_t* out);

/* Device.compile, Device.load_kernel and Device.kernel_compiler
 * (kernel.c), in Device's method table. */
PyObject* hrx_py_device_compile(PyObject* self, PyObject* const* args,
                                Py_ssize_t nargs, PyObject* kwnames);
PyObject* hrx_py_device_load_kernel(PyObject* self, PyObject* const* args,
                                    Py_ssize_t nargs, PyObject* kwnames);
PyObject* hrx_py_device_kernel_compiler(PyObject* self, PyObject* unused);
#define HRX_PY_DEVICE_COMPILE_DOC                                            \
  "compile($self, source, name, *, options=())\n--\n\n"                   \
  "Compile `source` and return the kernel `name` in it as an hrx.Kernel. "  \
  "`options` (strings) pass through to the device's compiler (host: the "   \
  "system C compiler; NVIDIA: NVRTC; AMD: hiprtc). A compile is looked up " \
  "first in the live device's memory cache and in the disk cache "          \
  "(HRX_KERNEL_CACHE_DIR, default ~/.cache/hrx/kernels), so each kernel "   \
  "is compiled once. A source the compiler rejects raises "                 \
  "InvalidArgumentError with the compiler's log; no compiler raises "       \
  "UnavailableError. The GIL is released while compiling."
#define HRX_PY_DEVICE_LOAD_KERNEL_DOC                                        \
  "load_kernel($self, image, name)\n--\n\n"                               \
  "Load the kernel `name` from an image in the device's image format "      \
  "(Kernel.image, or PTX / cubin / a code object built offline) and "       \
  "return it as an hrx.Kernel. A corrupt or foreign image raises "          \
  "InvalidArgumentError."
#define HRX_PY_DEVICE_KERNEL_COMPILER_DOC                                    \
  "kernel_compiler($self, /)\n--\n\n"                                     \
  "The device's kernel compiler as a dict: language ('c', 'cuda', 'hip'), " \
  "compiler (program and version), target and image_format. "               \
  "UnavailableError when there is none, saying how to point hrx at one."

/* Borrowed C kernel of an hrx.Kernel, or NULL with an error set. */
hrx_kernel_t* hrx_py_kernel_unwrap(hrx_py_state_t* state, PyObject* object);

/* New Python handles that take over one reference to the C object. On
 * failure the reference is released and NULL returned. */
PyObject* hrx_py_device_wrap(hrx_py_state_t* state, hrx_device_t* device);
/* A new hrx.Device handle of a device the caller borrows (retained here). */
PyObject* hrx_py_device_ref(hrx_py_state_t* state, hrx_device_t* device);
/* {variable, value, wanted, source} (variable and value None when no
 * variable applies). */
PyObject* hrx_py_connection_budget(const hrx_connection_budget_t* budget);
PyObject* hrx_py_stream_wrap(hrx_py_state_t* state, PyTypeObject* type,
                             hrx_stream_t* stream);
PyObject* hrx_py_buffer_wrap(hrx_py_state_t* state, hrx_buffer_t* buffer,
                             uint64_t offset, uint64_t length);
PyObject* hrx_py_event_wrap(hrx_py_state_t* state, hrx_event_t* event);
PyObject* hrx_py_readback_wrap(hrx_py_state_t* state,
                               hrx_readback_t* readback);
/* The same for Stream.read_into: takes the export `into` of its `out`
 * (released with the read, also on failure). */
PyObject* hrx_py_readback_wrap_into(hrx_py_state_t* state,
                                    hrx_readback_t* readback,
                                    Py_buffer* into);
/* Waits for `readback` (taken over: released here), keeping the GIL when
 * the read is done or about to be (submit.h), and copies its bytes to
 * `out` (at least its length). 0, or -1 with an exception set (the core's
 * failure, or KeyboardInterrupt: then the read is abandoned, its staging
 * returned once it completes, and `out` unchanged). For
 * Stream.read_blocking. */
int hrx_py_readback_copy_out(hrx_py_state_t* state, hrx_readback_t* readback,
                             void* out);
PyObject* hrx_py_completion_wrap(hrx_py_state_t* state,
                                 hrx_completion_t* completion);
/* A tp_traverse's visit for the callables of a graph's host nodes (their
 * user data: graph.c's trampoline keeps a Python callable there), through
 * hrx_graph_visit_host_data or hrx_completion_visit_host_data. */
typedef struct {
  visitproc visit;
  void* arg;
} hrx_py_callable_visit_t;
int hrx_py_visit_callable(void* user_data, void* arg);

/* Borrowed C completion of an hrx.Completion, or NULL with TypeError. */
hrx_completion_t* hrx_py_completion_unwrap(hrx_py_state_t* state,
                                           PyObject* object);

/* allocate(nbytes) shared by Device and Stream; takes over the caller's
 * reference to `device` (released with the GIL released, like every
 * release: handle.h). */
PyObject* hrx_py_allocate(hrx_py_state_t* state, hrx_device_t* device,
                          uint64_t size);

/* The view an hrx.Buffer names, or -1 with an error set. On success
 * out_view->buffer is RETAINED, so the call survives the handle being closed
 * while the GIL is released; drop it with hrx_py_release_held. */
int hrx_py_buffer_view(hrx_py_state_t* state, PyObject* object,
                       const char* role, hrx_view_t* out_view);
/* The one argument `device` of a constructor (format "O:Graph"): its
 * borrowed C device and the module state, or NULL with an error set. */
hrx_device_t* hrx_py_device_argument(PyTypeObject* type, PyObject* args,
                                     PyObject* kwargs, const char* format,
                                     hrx_py_state_t** out_state);
/* The same with out_view->buffer BORROWED from the open handle: valid only
 * until the GIL is next released (submit.h). */
int hrx_py_buffer_view_borrowed(hrx_py_state_t* state, PyObject* object,
                                const char* role, hrx_view_t* out_view);
/* Borrowed C event of an hrx.Event, or NULL with an error set. */
hrx_event_t* hrx_py_event_unwrap(hrx_py_state_t* state, PyObject* object);

/* Drops references a call held across a GIL release; any may be NULL. Call
 * it without the GIL: a last buffer release waits for queued work. */
void hrx_py_release_held(hrx_stream_t* stream, hrx_buffer_t* first,
                         hrx_buffer_t* second, hrx_event_t* event);

/* 0 when the device is the hip backend on NVIDIA (the CUDA protocols
 * apply); else -1 with AttributeError saying that `what` does not apply to
 * this device. */
int hrx_py_require_cuda(hrx_device_t* device, const char* what);

/* Raises hrx.FailedPreconditionError("<what> is closed"). */
void hrx_py_raise_closed(hrx_py_state_t* state, const char* what);

#endif /* HRX_PYTHON_OBJECTS_H_ */
