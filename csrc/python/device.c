/* hrx.Device: a handle on a live device. Its handle functions (made and
 * unwrapped by every type) are in device_handle.c. */
#include "device.h"

#include <string.h>

#include "args.h"
#include "buffer.h"
#include "device_handle.h"
#include "kernel.h"
#include "kernel_module.h"
#include "pinned.h"
#include "property.h"
#include "special.h"
#include "stream.h"
#include "typed_create.h"
#include "wait.h"

HRX_PY_HANDLE_FUNCTIONS(hrx_py_device, hrx_py_device_kind)

static hrx_device_t* hrx_py_device_get(PyObject* self) {
  return hrx_py_handle_get(self, &hrx_py_device_kind);
}

/* The batching switch's argument: True or False only (1 or "no" would hide
 * mistakes). Returns 0/1, or -1 with TypeError set. */
static int hrx_py_batching_arg(PyObject* value) {
  if (!PyBool_Check(value)) {
    PyErr_Format(PyExc_TypeError,
                 "batching must be True or False, not %.100s",
                 Py_TYPE(value)->tp_name);
    return -1;
  }
  return value == Py_True;
}

/* Opening a hip device may set the connection budget variables in the C
 * environment (hip_connections.h) with the GIL released. Copies their C
 * values into os.environ, Python's own copy, by writing its mapping
 * directly (os.environ[...] = would call putenv back into C). GIL held. */
static int hrx_py_environ_follow_budget(void) {
  static const char* const names[] = {"CUDA_DEVICE_MAX_CONNECTIONS",
                                      "GPU_MAX_HW_QUEUES",
                                      "HRX_CONNECTION_BUDGET_SET"};
  PyObject* os = PyImport_ImportModule("os");
  if (!os) return -1;
  PyObject* environ = PyObject_GetAttrString(os, "environ");
  Py_DECREF(os);
  if (!environ) return -1;
  PyObject* data = PyObject_GetAttrString(environ, "_data");
  int result = data ? 0 : -1;
  for (size_t i = 0; data && i < sizeof(names) / sizeof(names[0]); ++i) {
    const char* value = getenv(names[i]);
    PyObject* key = PyObject_CallMethod(environ, "encodekey", "s", names[i]);
    PyObject* text =
        value ? PyObject_CallMethod(environ, "encodevalue", "s", value) : NULL;
    if (!key || (value && !text)) {
      result = -1;
    } else if (text) {
      if (PyObject_SetItem(data, key, text) < 0) result = -1;
    } else if (PyMapping_HasKey(data, key) && PyObject_DelItem(data, key) < 0) {
      result = -1;
    }
    Py_XDECREF(key);
    Py_XDECREF(text);
    if (result < 0) break;
  }
  Py_XDECREF(data);
  Py_DECREF(environ);
  return result;
}

/* Device.open(index=0, backend=None, *, batching=None) and Device(...). */
static PyObject* hrx_py_device_open_impl(PyTypeObject* type, PyObject* args,
                                         PyObject* kwargs) {
  static char* keywords[] = {"index", "backend", "batching", NULL};
  PyObject* index_object = NULL;
  const char* backend = NULL;
  PyObject* batching_object = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|Oz$O:open", keywords,
                                   &index_object, &backend,
                                   &batching_object)) {
    return NULL;
  }
  hrx_py_state_t* state = hrx_py_state_from_type(type);
  if (!state) return NULL;
  int batching = -1;
  if (batching_object != Py_None) {
    batching = hrx_py_batching_arg(batching_object);
    if (batching < 0) return NULL;
  }
  int64_t index = 0;
  if (index_object &&
      hrx_py_arg_int64(state, index_object, "device index", &index) < 0) {
    if (!PyErr_ExceptionMatches(PyExc_ValueError)) return NULL;
    PyErr_Clear();
    index = INT64_MAX; /* beyond int64: out of range, reported below */
  }
  if (index < 0 || index > INT32_MAX) {
    PyErr_Format(state->errors[HRX_STATUS_OUT_OF_RANGE],
                 "device index must be between 0 and %d; got %lld", INT32_MAX,
                 (long long)index);
    return NULL;
  }
  hrx_device_t* device = NULL;
  hrx_status_t status;
  Py_BEGIN_ALLOW_THREADS
  status = hrx_device_open(backend, (int)index, &device);
  if (!status && batching >= 0) hrx_device_set_batching(device, batching);
  Py_END_ALLOW_THREADS
  if (status) return hrx_py_raise(state, status);
  PyObject* wrapped = hrx_py_device_wrap(state, device);
  if (wrapped && hrx_py_environ_follow_budget() < 0) Py_CLEAR(wrapped);
  return wrapped;
}

static PyObject* hrx_py_device_new(PyTypeObject* type, PyObject* args,
                                   PyObject* kwargs) {
  return hrx_py_device_open_impl(type, args, kwargs);
}

static PyObject* hrx_py_device_open(PyObject* cls, PyObject* args,
                                    PyObject* kwargs) {
  return hrx_py_device_open_impl((PyTypeObject*)cls, args, kwargs);
}

static PyObject* hrx_py_device_clone(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_device_t* device = hrx_py_device_get(self);
  if (!device) return NULL;
  return hrx_py_device_ref(hrx_py_state_from_type(Py_TYPE(self)), device);
}

static PyObject* hrx_py_device_set_stream_queue_count(PyObject* self,
                                                      PyObject* count_object) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  int64_t count = 0;
  /* Convert first: __index__ may run Python code that closes this handle. */
  if (hrx_py_arg_int64(state, count_object, "stream queue count", &count) <
      0) {
    if (!PyErr_ExceptionMatches(PyExc_ValueError)) return NULL;
    PyErr_Clear();
    count = INT64_MAX; /* out of range either way: report the bounds */
  }
  hrx_device_t* device = hrx_py_device_get(self);
  if (!device) return NULL;
  hrx_status_t status = hrx_device_set_stream_queue_count(device, count);
  if (status) return hrx_py_raise(state, status);
  Py_RETURN_NONE;
}

/* priority: "high" / "normal" / "low" or an int (1 / 0 / -1; the core
 * checks the range). */
static int hrx_py_arg_priority(hrx_py_state_t* state, PyObject* object,
                               int* out) {
  if (PyUnicode_Check(object)) {
    const char* name = PyUnicode_AsUTF8(object);
    if (!name) return -1;
    if (!hrx_stream_priority_parse(name, out)) {
      PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                   "unknown stream priority %R; use \"high\", \"normal\", "
                   "\"low\" or an int from %d (low) to %d (high)",
                   object, HRX_STREAM_PRIORITY_MIN, HRX_STREAM_PRIORITY_MAX);
      return -1;
    }
    return 0;
  }
  int64_t value = 0;
  if (hrx_py_arg_int64(state, object, "stream priority", &value) < 0) {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError,
                   "stream priority must be \"high\", \"normal\", \"low\" "
                   "or an int, not %.100s", Py_TYPE(object)->tp_name);
      return -1;
    }
    if (!PyErr_ExceptionMatches(PyExc_ValueError)) return -1;
    PyErr_Clear();
    value = INT64_MAX;
  }
  if (value < INT32_MIN || value > INT32_MAX) value = INT32_MAX;
  *out = (int)value; /* the core rejects values outside the range */
  return 0;
}

static PyObject* hrx_py_device_stream(PyObject* self, PyObject* const* args,
                                      Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"priority", "reserve"};
  PyObject* priority_object = NULL;
  PyObject* reserve_object = NULL;
  PyObject* parsed[2];
  if (hrx_py_arg_parse("stream", args, nargs, kwnames, names, 2, 0, 0, parsed) <
      0) {
    return NULL;
  }
  if (parsed[0]) priority_object = parsed[0];
  if (parsed[1]) reserve_object = parsed[1];
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  hrx_stream_options_t options;
  hrx_stream_options_default(&options);
  /* Convert first: __index__ may run Python code that closes this handle. */
  if (priority_object && priority_object != Py_None &&
      hrx_py_arg_priority(state, priority_object, &options.priority) < 0) {
    return NULL;
  }
  if (reserve_object) {
    if (!PyBool_Check(reserve_object)) {
      PyErr_Format(PyExc_TypeError, "reserve must be a bool, not %.100s",
                   Py_TYPE(reserve_object)->tp_name);
      return NULL;
    }
    options.reserve = reserve_object == Py_True;
  }
  hrx_device_t* device = hrx_py_device_get(self);
  if (!device) return NULL;
  hrx_stream_t* stream = NULL;
  hrx_status_t status;
  hrx_device_retain(device); /* survives close() from another thread */
  Py_BEGIN_ALLOW_THREADS
  status = hrx_stream_create_with_options(device, &options, &stream);
  hrx_device_release(device);
  Py_END_ALLOW_THREADS
  if (status) return hrx_py_raise(state, status);
  return hrx_py_stream_wrap(state->stream_type, stream);
}

static PyObject* hrx_py_device_allocate(PyObject* self, PyObject* size) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  uint64_t nbytes = 0;
  /* Convert first: __index__ may run Python code that closes this handle. */
  if (hrx_py_arg_uint64(state, size, "buffer size", &nbytes) < 0) return NULL;
  hrx_device_t* device = hrx_py_device_get(self);
  if (!device) return NULL;
  hrx_device_retain(device);
  return hrx_py_allocate(state, device, nbytes);
}

/* empty(shape, dtype) */
static PyObject* hrx_py_device_empty(PyObject* self, PyObject* const* args,
                                     Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"shape", "dtype"};
  PyObject* given[2];
  if (hrx_py_arg_parse("empty", args, nargs, kwnames, names, 2, 2, 2, given) <
      0) {
    return NULL;
  }
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  return hrx_py_typed_empty(state, self, given[0], given[1]);
}

/* zeros(shape, dtype, stream=None) */
static PyObject* hrx_py_device_zeros(PyObject* self, PyObject* const* args,
                                     Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"shape", "dtype", "stream"};
  PyObject* given[3];
  if (hrx_py_arg_parse("zeros", args, nargs, kwnames, names, 3, 3, 2, given) <
      0) {
    return NULL;
  }
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  return hrx_py_typed_zeros(state, self, given[0], given[1],
                            given[2] ? given[2] : Py_None);
}

/* asarray(array, dtype=None, stream=None) */
static PyObject* hrx_py_device_asarray(PyObject* self, PyObject* const* args,
                                       Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"array", "dtype", "stream"};
  PyObject* given[3];
  if (hrx_py_arg_parse("asarray", args, nargs, kwnames, names, 3, 3, 1,
                       given) < 0) {
    return NULL;
  }
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  return hrx_py_typed_asarray(state, self, given[0],
                              given[1] ? given[1] : Py_None,
                              given[2] ? given[2] : Py_None);
}

static PyObject* hrx_py_device_synchronize(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_device_t* device = hrx_py_device_get(self);
  if (!device) return NULL;
  bool interrupted = false;
  hrx_device_retain(device);
  hrx_py_wait_t wait;
  hrx_py_wait_begin(&wait);
  hrx_status_t status =
      hrx_device_synchronize(device, &wait.hook, &interrupted);
  hrx_device_release(device);
  hrx_py_wait_end(&wait);
  if (status) return hrx_py_raise(hrx_py_state_from_type(Py_TYPE(self)), status);
  if (interrupted) return NULL;
  Py_RETURN_NONE;
}

static PyObject* hrx_py_device_pool_info(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_device_t* device = hrx_py_device_get(self);
  if (!device) return NULL;
  hrx_pool_info_t info;
  hrx_device_query_pool(device, &info);
  return Py_BuildValue("{s:i,s:i,s:i,s:O,s:i,s:i}", "queue_count",
                       info.queue_count, "queues_created", info.queues_created,
                       "next_slot", info.next_slot, "first_use",
                       info.first_use ? Py_True : Py_False, "live_streams",
                       info.live_streams, "fabric_queues", info.fabric_queues);
}

static PyObject* hrx_py_device_set_stream_queue_policy(PyObject* self,
                                                       PyObject* policy) {
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  if (!PyUnicode_Check(policy)) {
    PyErr_Format(PyExc_TypeError,
                 "stream queue policy must be a str (\"round_robin\" or "
                 "\"least_loaded\"), not %.100s", Py_TYPE(policy)->tp_name);
    return NULL;
  }
  const char* name = PyUnicode_AsUTF8(policy);
  if (!name) return NULL;
  hrx_queue_policy_t value;
  if (!hrx_queue_policy_parse(name, &value)) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "unknown stream queue policy %R; use \"round_robin\" or "
                 "\"least_loaded\"", policy);
    return NULL;
  }
  hrx_device_t* device = hrx_py_device_get(self);
  if (!device) return NULL;
  hrx_status_t status = hrx_device_set_stream_queue_policy(device, value);
  if (status) return hrx_py_raise(state, status);
  Py_RETURN_NONE;
}

static PyObject* hrx_py_device_stream_queue_policy(hrx_py_state_t* state,
                                                   void* device) {
  (void)state;
  return PyUnicode_FromString(
      hrx_queue_policy_name(hrx_device_stream_queue_policy(device)));
}

PyObject* hrx_py_connection_budget(const hrx_connection_budget_t* budget) {
  PyObject* variable = budget->variable[0]
                           ? PyUnicode_FromString(budget->variable)
                           : Py_NewRef(Py_None);
  if (!variable) return NULL;
  PyObject* value = budget->variable[0] && budget->value > 0
                        ? PyLong_FromLong(budget->value)
                        : Py_NewRef(Py_None);
  if (!value) {
    Py_DECREF(variable);
    return NULL;
  }
  return Py_BuildValue("{s:N,s:N,s:i,s:s}", "variable", variable, "value",
                       value, "wanted", budget->wanted, "source",
                       budget->source);
}

static PyObject* hrx_py_device_pool_stats(PyObject* self, PyObject* unused) {
  (void)unused;
  hrx_device_t* device = hrx_py_device_get(self);
  if (!device) return NULL;
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  enum {
    capacity = HRX_STREAM_LANE_COUNT * HRX_MAX_STREAM_QUEUE_COUNT +
               HRX_MAX_RESERVED_QUEUES
  };
  hrx_pool_queue_stats_t* queues = PyMem_Calloc(capacity, sizeof(*queues));
  if (!queues) return PyErr_NoMemory();
  hrx_pool_stats_t stats;
  hrx_status_t status;
  hrx_device_retain(device);
  Py_BEGIN_ALLOW_THREADS
  status = hrx_device_query_pool_stats(device, queues, capacity, &stats);
  hrx_device_release(device);
  Py_END_ALLOW_THREADS
  if (status) {
    PyMem_Free(queues);
    return hrx_py_raise(state, status);
  }
  PyObject* list = PyList_New(0);
  for (int i = 0; list && i < stats.queue_stats_count; ++i) {
    const hrx_pool_queue_stats_t* q = &queues[i];
    PyObject* slot = q->slot < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(q->slot);
    PyObject* entry =
        slot ? Py_BuildValue(
                   "{s:s,s:N,s:O,s:i,s:i,s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
                   "priority",
                   hrx_stream_priority_name(q->priority), "slot", slot,
                   "reserved", q->reserved ? Py_True : Py_False,
                   "native_priority", q->native_priority, "streams",
                   q->streams, "streams_assigned",
                   (unsigned long long)q->streams_assigned,
                   "commands_submitted",
                   (unsigned long long)q->commands_submitted, "bytes_submitted",
                   (unsigned long long)q->bytes_submitted,
                   "commands_in_flight",
                   (unsigned long long)q->commands_in_flight, "bytes_in_flight",
                   (unsigned long long)q->bytes_in_flight, "batches_published",
                   (unsigned long long)q->batches_published,
                   "commands_batched",
                   (unsigned long long)q->commands_batched)
             : NULL;
    if (!entry || PyList_Append(list, entry) < 0) {
      Py_XDECREF(entry);
      Py_CLEAR(list);
      break;
    }
    Py_DECREF(entry);
  }
  PyMem_Free(queues);
  if (!list) return NULL;
  PyObject* budget = hrx_py_connection_budget(&stats.connections);
  if (!budget) {
    Py_DECREF(list);
    return NULL;
  }
  return Py_BuildValue(
      "{s:i,s:s,s:O,s:i,s:K,s:K,s:N,s:N}", "queue_count", stats.queue_count,
      "policy", hrx_queue_policy_name(stats.policy), "first_use",
      stats.first_use ? Py_True : Py_False, "reserved_live",
      stats.reserved_live, "reserved_created",
      (unsigned long long)stats.reserved_created, "reserved_refused",
      (unsigned long long)stats.reserved_refused, "connections", budget,
      "queues", list);
}

static PyObject* hrx_py_device_info(hrx_py_state_t* state, void* device) {
  hrx_device_info_t info;
  hrx_status_t status = hrx_device_query_info(device, &info);
  if (status) return hrx_py_raise(state, status);
  /* Each other device of the backend: how copies reach it. */
  PyObject* peer = PyDict_New();
  if (!peer) return NULL;
  for (int other = 0; other < info.device_count; ++other) {
    if (other == info.index) continue;
    hrx_peer_path_t path = HRX_PEER_PATH_DIRECT;
    status = hrx_device_query_peer_path(device, other, &path);
    if (status) {
      Py_DECREF(peer);
      return hrx_py_raise(state, status);
    }
    PyObject* key = PyLong_FromLong(other);
    PyObject* value = key ? PyUnicode_FromString(hrx_peer_path_name(path))
                          : NULL;
    int failed = !value || PyDict_SetItem(peer, key, value) < 0;
    Py_XDECREF(key);
    Py_XDECREF(value);
    if (failed) {
      Py_DECREF(peer);
      return NULL;
    }
  }
  return Py_BuildValue(
      "{s:s,s:i,s:s,s:s,s:s,s:K,s:i,s:s,s:s,s:s,s:s,s:i,s:i,s:N,s:I,"
      "s:(III),s:(III),s:K}",
      "backend", info.backend, "index", info.index, "name", info.name,
      "target", info.target, "runtime", info.runtime, "total_memory",
      (unsigned long long)info.total_memory, "max_native_queues",
      info.max_native_queues, "selection", info.selection,
      "batch_publication", info.batch_publication, "launch_publication",
      info.launch_publication, "platform", info.platform,
      "engines", info.engines, "device_count", info.device_count, "peer",
      peer, "max_threads_per_block", info.max_threads_per_block,
      "max_block_dim", info.max_block_dim[0], info.max_block_dim[1],
      info.max_block_dim[2], "max_grid_dim", info.max_grid_dim[0],
      info.max_grid_dim[1], info.max_grid_dim[2],
      "max_shared_bytes_per_block",
      (unsigned long long)info.max_shared_bytes_per_block);
}

static PyObject* hrx_py_device_free_memory(hrx_py_state_t* state,
                                           void* device) {
  uint64_t free_bytes = 0;
  hrx_status_t status;
  hrx_device_retain(device);
  Py_BEGIN_ALLOW_THREADS
  status = hrx_device_query_free_memory(device, &free_bytes);
  hrx_device_release(device);
  Py_END_ALLOW_THREADS
  if (status) return hrx_py_raise(state, status);
  return PyLong_FromUnsignedLongLong(free_bytes);
}

static PyObject* hrx_py_device_stream_queue_count(hrx_py_state_t* state,
                                                  void* device) {
  (void)state;
  return PyLong_FromLong(hrx_device_stream_queue_count(device));
}

static PyObject* hrx_py_device_set_batching(PyObject* self,
                                            PyObject* enabled_object) {
  int enabled = hrx_py_batching_arg(enabled_object);
  if (enabled < 0) return NULL;
  hrx_device_t* device = hrx_py_device_get(self);
  if (!device) return NULL;
  hrx_device_retain(device);
  Py_BEGIN_ALLOW_THREADS
  hrx_device_set_batching(device, enabled);
  hrx_device_release(device);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

static PyObject* hrx_py_device_batching_of(hrx_py_state_t* state,
                                           void* device) {
  (void)state;
  return PyBool_FromLong(hrx_device_batching(device));
}

static PyObject* hrx_py_device_richcompare(PyObject* self, PyObject* other,
                                           int op) {
  if ((op != Py_EQ && op != Py_NE) || Py_TYPE(other) != Py_TYPE(self)) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  hrx_device_t* a = ((hrx_py_device_t*)self)->device;
  hrx_device_t* b = ((hrx_py_device_t*)other)->device;
  bool equal = a && a == b;
  return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

static Py_hash_t hrx_py_device_hash(PyObject* self) {
  Py_hash_t hash = (Py_hash_t)((uintptr_t)((hrx_py_device_t*)self)->device >> 4);
  return hash == -1 ? -2 : hash;
}

static PyObject* hrx_py_device_repr(PyObject* self) {
  hrx_device_t* device = ((hrx_py_device_t*)self)->device;
  if (!device) return PyUnicode_FromString("<hrx.Device (closed)>");
  hrx_device_info_t info;
  hrx_status_free(hrx_device_query_info(device, &info));
  return PyUnicode_FromFormat("<hrx.Device %s:%d %s (%s), %d stream queues>",
                              info.backend, info.index, info.name, info.target,
                              hrx_device_stream_queue_count(device));
}

/* __eq__ and __ne__ as methods with docstrings of their own (METH_COEXIST
 * replaces the generic wrappers); == and != go through tp_richcompare. */
static PyObject* hrx_py_device_eq(PyObject* self, PyObject* other) {
  return hrx_py_device_richcompare(self, other, Py_EQ);
}

static PyObject* hrx_py_device_ne(PyObject* self, PyObject* other) {
  return hrx_py_device_richcompare(self, other, Py_NE);
}

static PyObject* hrx_py_device_hash_method(PyObject* self, PyObject* unused) {
  (void)unused;
  return PyLong_FromSsize_t(hrx_py_device_hash(self));
}

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

/* The compiler options of a compile: `given` (a sequence of str, or NULL
 * for none) as C strings borrowed from its items, in *out_options
 * (PyMem_Free it) with *out_sequence holding the items (Py_XDECREF it). */
static int hrx_py_compile_options(hrx_py_state_t* state, PyObject* given,
                                  PyObject** out_sequence,
                                  const char*** out_options,
                                  Py_ssize_t* out_count) {
  PyObject* sequence = NULL;
  Py_ssize_t count = 0;
  if (given) {
    if (PyUnicode_Check(given) || PyBytes_Check(given)) {
      PyErr_SetString(PyExc_TypeError,
                      "options must be a sequence of str (e.g. a list), not "
                      "one string");
      return -1;
    }
    sequence = PySequence_Fast(given, "options must be a sequence of str");
    if (!sequence) return -1;
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
  if (!ok) {
    PyMem_Free(options);
    Py_XDECREF(sequence);
    return -1;
  }
  *out_sequence = sequence;
  *out_options = options;
  *out_count = count;
  return 0;
}

/* compile(source, name, *, options=()) */
static PyObject* hrx_py_device_compile(PyObject* self, PyObject* const* args,
                                       Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {"source", "name", "options"};
  PyObject* given[3];
  if (hrx_py_arg_parse("compile", args, nargs, kwnames, names, 3, 2, 2, given) <
      0) {
    return NULL;
  }
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  const char* source = hrx_py_text(state, given[0], "kernel source");
  const char* name =
      source ? hrx_py_text(state, given[1], "kernel name") : NULL;
  if (!name) return NULL;
  PyObject* sequence = NULL;
  const char** options = NULL;
  Py_ssize_t count = 0;
  if (hrx_py_compile_options(state, given[2], &sequence, &options, &count) <
      0) {
    return NULL;
  }
  hrx_device_t* device = hrx_py_device_unwrap(state, self);
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

static void hrx_py_device_kernel_release(void* kernel) {
  hrx_kernel_release(kernel);
}

/* compile_module(source, names, *, options=()) */
static PyObject* hrx_py_device_compile_module(PyObject* self,
                                              PyObject* const* args,
                                              Py_ssize_t nargs,
                                              PyObject* kwnames) {
  static const char* const keywords[] = {"source", "names", "options"};
  PyObject* given[3];
  if (hrx_py_arg_parse("compile_module", args, nargs, kwnames, keywords, 3, 2,
                       2, given) < 0) {
    return NULL;
  }
  hrx_py_state_t* state = hrx_py_state_from_type(Py_TYPE(self));
  const char* source = hrx_py_text(state, given[0], "kernel source");
  if (!source) return NULL;
  if (PyUnicode_Check(given[1]) || PyBytes_Check(given[1])) {
    PyErr_SetString(PyExc_TypeError,
                    "names must be a sequence of str (e.g. a list), not one "
                    "string; compile(source, name) compiles one kernel");
    return NULL;
  }
  PyObject* name_items = PySequence_Fast(given[1],
                                         "names must be a sequence of str");
  if (!name_items) return NULL;
  Py_ssize_t name_count = PySequence_Fast_GET_SIZE(name_items);
  PyObject* sequence = NULL;
  const char** options = NULL;
  Py_ssize_t count = 0;
  const char** names = NULL;
  hrx_kernel_t** kernels = NULL;
  PyObject** wrapped = NULL;
  PyObject* result = NULL;
  if (name_count > HRX_KERNEL_MAX_MODULE_NAMES) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "%zd kernel names; a compile takes 1 to %d", name_count,
                 HRX_KERNEL_MAX_MODULE_NAMES);
    goto done;
  }
  size_t slots = name_count ? (size_t)name_count : 1;
  names = PyMem_Calloc(slots, sizeof(*names));
  kernels = PyMem_Calloc(slots, sizeof(*kernels));
  wrapped = PyMem_Calloc(slots, sizeof(*wrapped));
  if (!names || !kernels || !wrapped) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < name_count; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(name_items, i);
    if (!PyUnicode_Check(item)) {
      PyErr_Format(PyExc_TypeError, "names must be str; name %zd is %.100s",
                   i, Py_TYPE(item)->tp_name);
      goto done;
    }
    names[i] = hrx_py_text(state, item, "kernel name");
    if (!names[i]) goto done;
  }
  if (hrx_py_compile_options(state, given[2], &sequence, &options, &count) <
      0) {
    goto done;
  }
  hrx_device_t* device = hrx_py_device_unwrap(state, self);
  if (!device) goto done;
  hrx_status_t status;
  hrx_device_retain(device); /* survives close() from another thread */
  Py_BEGIN_ALLOW_THREADS
  status = hrx_device_compile_kernels(device, source, names,
                                      (size_t)name_count, options,
                                      (size_t)count, kernels);
  hrx_device_release(device);
  Py_END_ALLOW_THREADS
  if (status) {
    hrx_py_raise(state, status);
    goto done;
  }
  bool ok = true;
  for (Py_ssize_t i = 0; i < name_count; ++i) {
    /* Each wrap takes its kernel's reference, also on failure. */
    wrapped[i] = ok ? hrx_py_kernel_wrap(state, kernels[i]) : NULL;
    if (!ok) hrx_py_release_without_gil(hrx_py_device_kernel_release,
                                        kernels[i]);
    ok = ok && wrapped[i];
  }
  if (ok) {
    result = hrx_py_kernel_module_make(
        state, PySequence_Fast_ITEMS(name_items), wrapped, name_count);
  }
  for (Py_ssize_t i = 0; i < name_count; ++i) Py_XDECREF(wrapped[i]);
done:
  PyMem_Free(names);
  PyMem_Free(kernels);
  PyMem_Free(wrapped);
  PyMem_Free(options);
  Py_XDECREF(sequence);
  Py_DECREF(name_items);
  return result;
}

/* load_kernel(image, name) */
static PyObject* hrx_py_device_load_kernel(PyObject* self,
                                           PyObject* const* args,
                                           Py_ssize_t nargs,
                                           PyObject* kwnames) {
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

static PyObject* hrx_py_device_kernel_compiler(PyObject* self,
                                               PyObject* unused) {
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


#define HRX_PY_DEVICE_OPEN_DOC                                             \
  "Open a handle on device `index` of `backend`: the live device that "    \
  "every handle of the same (backend, index) shares. backend None means "  \
  "$HRX_BACKEND, else the first available of hrx.backends(). batching "    \
  "True or False sets the live device's batching switch; None leaves it."

HRX_PY_NEW_FUNCTION(hrx_py_device, device_type)

static PyMethodDef hrx_py_device_methods[] = {
    HRX_PY_NEW_METHOD(
        hrx_py_device,
        "__new__($type, index=0, backend=None, *, batching=None)\n--\n\n"
        "The same as Device.open(index, backend, batching=batching)."),
    {"open", (PyCFunction)(void (*)(void))hrx_py_device_open,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "open($type, index=0, backend=None, *, "
     "batching=None)\n--\n\n" HRX_PY_DEVICE_OPEN_DOC},
    {"clone", hrx_py_device_clone, METH_NOARGS,
     "clone($self, /)\n--\n\n"
     "Return another handle on the same live device."},
    HRX_PY_HANDLE_METHODS(hrx_py_device,
                          "Drop this handle only: other handles, streams, "
                          "buffers, events, graphs and kernels of the device "
                          "keep working, and the live device (its pool "
                          "size, queues and settings) goes once nothing of "
                          "it is left."),
    {"set_stream_queue_count", hrx_py_device_set_stream_queue_count, METH_O,
     "set_stream_queue_count($self, n, /)\n--\n\n"
     "Set the pool size, 1..MAX_STREAM_QUEUE_COUNT, before the first pool "
     "queue is created (BusyError after, unless n is the current value; it "
     "names what still holds the live device)."},
    {"set_batching", hrx_py_device_set_batching, METH_O,
     "set_batching($self, enabled, /)\n--\n\n"
     "Turn submission batching on or off for the live device (all its "
     "handles); off publishes pending work at once."},
    {"set_stream_queue_policy", hrx_py_device_set_stream_queue_policy, METH_O,
     "set_stream_queue_policy($self, policy, /)\n--\n\n"
     "Set the queue policy, \"round_robin\" (the default) or "
     "\"least_loaded\", before the first pool queue is created (BusyError "
     "after, unless it is the current policy)."},
    {"stream", (PyCFunction)(void (*)(void))hrx_py_device_stream,
     METH_FASTCALL | METH_KEYWORDS,
     "stream($self, /, *, priority='normal', reserve=False)\n--\n\n"
     "Return a Stream on a queue of the priority's lane, chosen by the queue "
     "policy; reserve=True gives it a queue of its own. priority: "
     "\"high\", \"normal\" or \"low\", or 1, 0, -1; None is \"normal\"."},
    {"empty_pinned", (PyCFunction)(void (*)(void))hrx_py_device_empty_pinned,
     METH_VARARGS | METH_KEYWORDS,
     "empty_pinned($self, shape, dtype='uint8')\n--\n\n"
     "Return a new uninitialised numpy array of pinned host memory of this "
     "device (from its pinned pool): uploads from it and reads into it "
     "copy directly and asynchronously. Its base (hrx.PinnedMemory) owns "
     "the memory, which goes back to the pool once nothing refers to it "
     "and the copies queued with it are done."},
    {"pin", hrx_py_device_pin, METH_O,
     "pin($self, obj, /)\n--\n\n"
     "Return a context manager that pins obj's C-contiguous host memory for "
     "this device inside the with block (__enter__ returns obj) and unpins "
     "it on exit, after the copies queued with it are done."},
    {"is_pinned", hrx_py_device_is_pinned, METH_O,
     "is_pinned($self, obj, /)\n--\n\n"
     "Whether obj's host memory lies wholly in pinned memory of this "
     "device (an empty_pinned array or memory inside a pin scope): the "
     "memory uploads and reads copy directly."},
    {"pool_stats", hrx_py_device_pool_stats, METH_NOARGS,
     "pool_stats($self, /)\n--\n\n"
     "Return a dict: queue_count (per lane), policy, first_use, "
     "reserved_live, reserved_created, reserved_refused, connections "
     "{variable, value, wanted, source}, queues [{priority, slot, "
     "reserved, native_priority, streams, streams_assigned, "
     "commands_submitted, bytes_submitted, commands_in_flight, "
     "bytes_in_flight, batches_published, commands_batched}]. "
     "native_priority is the runtime's stream priority "
     "on hip and the lane's rank on the host backend (0 high, 1 normal, "
     "2 low)."},
    {"allocate", hrx_py_device_allocate, METH_O,
     "allocate($self, nbytes, /)\n--\n\n"
     "Allocate nbytes of device memory; return the (untyped) Buffer."},
    {"empty", (PyCFunction)(void (*)(void))hrx_py_device_empty,
     METH_FASTCALL | METH_KEYWORDS,
     "empty($self, /, shape, dtype)\n--\n\n"
     "Allocate a typed Buffer of shape (an int or ints) and dtype (a "
     "numeric numpy dtype); its memory is not initialized."},
    {"zeros", (PyCFunction)(void (*)(void))hrx_py_device_zeros,
     METH_FASTCALL | METH_KEYWORDS,
     "zeros($self, /, shape, dtype, stream=None)\n--\n\n"
     "empty(shape, dtype) filled with zeros: on stream (ordered there, "
     "returns at once) or, with None, on a stream of its own that is "
     "synchronized before this returns."},
    {"asarray", (PyCFunction)(void (*)(void))hrx_py_device_asarray,
     METH_FASTCALL | METH_KEYWORDS,
     "asarray($self, /, array, dtype=None, stream=None)\n--\n\n"
     "Return a typed Buffer holding numpy.ascontiguousarray(array, dtype): "
     "its dtype and shape, its data uploaded on stream (ordered there; "
     "array may be reused at once) or, with None, on a stream of its own "
     "that is synchronized before this returns."},
    {"synchronize", hrx_py_device_synchronize, METH_NOARGS,
     "synchronize($self, /)\n--\n\n"
     "Wait for all work on the pool's queues (not fabric queues); raise a "
     "failed command of any of its streams."},
    {"compile", (PyCFunction)(void (*)(void))hrx_py_device_compile,
     METH_FASTCALL | METH_KEYWORDS,
     "compile($self, source, name, *, options=())\n--\n\n"
     "Compile `source` and return the kernel `name` in it as an hrx.Kernel. "
     "`options` (strings) pass through to the device's compiler (host: the "
     "system C compiler; NVIDIA: NVRTC; AMD: hiprtc). A compile is looked up "
     "first in the live device's memory cache and in the disk cache "
     "(HRX_KERNEL_CACHE_DIR, default ~/.cache/hrx/kernels), so each kernel "
     "is compiled once; a compile covers every kernel the source declares "
     "(__global__ at file scope), so compiling another of them runs no "
     "compiler (docs/kernels.md, Modules). A source the compiler rejects raises "
     "InvalidArgumentError with the compiler's log; no compiler raises "
     "UnavailableError. The GIL is released while compiling."},
    {"compile_module",
     (PyCFunction)(void (*)(void))hrx_py_device_compile_module,
     METH_FASTCALL | METH_KEYWORDS,
     "compile_module($self, source, names, *, options=())\n--\n\n"
     "Compile `source` once and return an hrx.Module of its kernels "
     "`names` (a sequence of 1 to hrx.KERNEL_MAX_MODULE_NAMES distinct "
     "str): module[name] or module.get(name) is each one's hrx.Kernel. "
     "Cached like compile(): a compile(source, name) of one of the names "
     "with the same options then finds the module. Errors as compile()'s; "
     "a name given twice raises InvalidArgumentError."},
    {"load_kernel", (PyCFunction)(void (*)(void))hrx_py_device_load_kernel,
     METH_FASTCALL | METH_KEYWORDS,
     "load_kernel($self, image, name)\n--\n\n"
     "Load the kernel `name` from an image in the device's image format "
     "(Kernel.image, or PTX / cubin / a code object built offline) and "
     "return it as an hrx.Kernel. A corrupt or foreign image raises "
     "InvalidArgumentError."},
    {"kernel_compiler", hrx_py_device_kernel_compiler, METH_NOARGS,
     "kernel_compiler($self, /)\n--\n\n"
     "The device's kernel compiler as a dict: language ('c', 'cuda', 'hip'), "
     "compiler (program and version), target and image_format. "
     "UnavailableError when there is none, saying how to point hrx at one."},
    {"pool_info", hrx_py_device_pool_info, METH_NOARGS,
     "pool_info($self, /)\n--\n\n"
     "Return a dict: queue_count, queues_created, next_slot, first_use, "
     "live_streams, fabric_queues."},
    {"__eq__", hrx_py_device_eq, METH_O | METH_COEXIST,
     "__eq__($self, value, /)\n--\n\n"
     "Whether value is a handle on the same live device (a clone, or the "
     "same (backend, index) opened again while the live device lives)."},
    {"__ne__", hrx_py_device_ne, METH_O | METH_COEXIST,
     "__ne__($self, value, /)\n--\n\n"
     "Whether value is not a handle on the same live device."},
    {"__hash__", hrx_py_device_hash_method, METH_NOARGS | METH_COEXIST,
     "__hash__($self, /)\n--\n\n"
     "Return the hash of the live device: equal handles hash alike."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef hrx_py_device_getset[] = {
    HRX_PY_PROPERTY("info", hrx_py_device_kind, hrx_py_device_info,
                    "dict: backend, index, name, target, runtime, "
                    "total_memory, max_native_queues, selection (how the "
                    "backend was chosen), batch_publication (how batched "
                    "commands reach the device), launch_publication (how "
                    "kernel launches do), platform, engines (host: "
                    "the engine threads serving the queues; else 0), "
                    "device_count (devices of the backend), peer ({other "
                    "index: 'direct', 'peer' or 'staged'}: how "
                    "Stream.copy_peer reaches each other device), and the "
                    "kernel launch limits max_threads_per_block, "
                    "max_block_dim (x, y, z), max_grid_dim (x, y, z), "
                    "max_shared_bytes_per_block (all 0 where the backend "
                    "runs no kernels)"),
    HRX_PY_PROPERTY("free_memory", hrx_py_device_kind,
                    hrx_py_device_free_memory, "free device memory in bytes"),
    HRX_PY_PROPERTY("stream_queue_count", hrx_py_device_kind,
                    hrx_py_device_stream_queue_count,
                    "the pool size (per priority lane)"),
    HRX_PY_PROPERTY("stream_queue_policy", hrx_py_device_kind,
                    hrx_py_device_stream_queue_policy,
                    "the queue policy: \"round_robin\" or \"least_loaded\""),
    HRX_PY_PROPERTY("batching", hrx_py_device_kind, hrx_py_device_batching_of,
                    "whether submission batching is on (set_batching changes "
                    "it)"),
    HRX_PY_CLOSED_PROPERTY(hrx_py_device_kind),
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot hrx_py_device_slots[] = {
    {Py_tp_doc, "Device(index=0, backend=None, *, batching=None)\n--\n\n"
                "A handle on a live device (the same as Device.open). "
                "Handles of the same (backend, index) share one live "
                "device, its pool setting and queues, and compare equal."},
    {Py_tp_new, hrx_py_device_new},
    {Py_tp_dealloc, hrx_py_device_dealloc},
    {Py_tp_traverse, hrx_py_traverse_type},
    {Py_tp_methods, hrx_py_device_methods},
    {Py_tp_getset, hrx_py_device_getset},
    {Py_tp_richcompare, hrx_py_device_richcompare},
    {Py_tp_hash, hrx_py_device_hash},
    {Py_tp_repr, hrx_py_device_repr},
    {0, NULL},
};

PyType_Spec hrx_py_device_spec = {
    .name = "hrx.Device",
    .basicsize = sizeof(hrx_py_device_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = hrx_py_device_slots,
};
