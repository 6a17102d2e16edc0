/* hrx._hrx.bench_run, bench_launch and bench_kernel_source: the C
 * benchmark driver (csrc/bench/bench.h, bench_kernels.h) for hrx.bench.
 * Arguments are checked here so that Python callers get
 * hrx.InvalidArgumentError (a ValueError) or TypeError naming the
 * argument; the core checks them again. The run holds no Python object and
 * releases the GIL throughout. */
#include "bench.h"

#include "args.h"
#include "device_handle.h"

#include "bench/bench.h"
#include "bench/bench_kernels.h"

/* Reads keyword `name` (NULL: not given, *out keeps its default) as an int in
 * [1, max]. Returns -1 with TypeError or ValueError set. */
static int hrx_py_bench_count(hrx_py_state_t* state, PyObject* object,
                              const char* name,
                              long long max, long long* out) {
  if (!object) return 0;
  char what[64];
  PyOS_snprintf(what, sizeof(what), "bench_run() argument '%s'", name);
  int64_t value = 0;
  if (hrx_py_arg_int64(state, object, what, &value)) return -1;
  if (value < 1 || value > max) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "%s must be a positive int no greater than %lld, got %lld",
                 what, max, (long long)value);
    return -1;
  }
  *out = (long long)value;
  return 0;
}

static int hrx_py_bench_driver(hrx_py_state_t* state, PyObject* object,
                               hrx_bench_driver_t* out_driver) {
  if (!object) return 0;
  if (!PyUnicode_Check(object)) {
    PyErr_Format(PyExc_TypeError,
                 "bench_run() argument 'driver' must be a str ('native' or "
                 "'raw'), not %.100s",
                 Py_TYPE(object)->tp_name);
    return -1;
  }
  const char* name = PyUnicode_AsUTF8(object);
  if (!name) return -1;
  if (!hrx_bench_driver_parse(name, out_driver)) {
    PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
                 "bench_run() argument 'driver' must be 'native' or 'raw', "
                 "got %R",
                 object);
    return -1;
  }
  return 0;
}

/* Sets dict[key] = value and drops the reference to value (also when value
 * is NULL, which fails). */
static int hrx_py_bench_put(PyObject* dict, const char* key, PyObject* value) {
  if (!value) return -1;
  int rc = PyDict_SetItemString(dict, key, value);
  Py_DECREF(value);
  return rc;
}

static PyObject* hrx_py_bench_list(const uint64_t* values, size_t count) {
  PyObject* list = PyList_New((Py_ssize_t)count);
  if (!list) return NULL;
  for (size_t i = 0; i < count; ++i) {
    PyObject* item = PyLong_FromUnsignedLongLong(values[i]);
    if (!item) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, item);
  }
  return list;
}

static PyObject* hrx_py_bench_dict(const hrx_bench_result_t* r) {
  const hrx_bench_config_t* c = &r->config;
  PyObject* dict = PyDict_New();
  if (!dict) return NULL;
  size_t rounds = (size_t)r->rounds;
  if (hrx_py_bench_put(dict, "driver",
                       PyUnicode_FromString(hrx_bench_driver_name(c->driver))) ||
      hrx_py_bench_put(dict, "queues", PyLong_FromLong(r->queue_count)) ||
      hrx_py_bench_put(dict, "queues_used", PyLong_FromLong(r->queues_used)) ||
      hrx_py_bench_put(dict, "lanes", PyLong_FromLong(c->lanes)) ||
      hrx_py_bench_put(dict, "retained_streams",
                       PyLong_FromLong(c->retained_streams)) ||
      hrx_py_bench_put(dict, "small_bytes",
                       PyLong_FromUnsignedLongLong(c->small_bytes)) ||
      hrx_py_bench_put(dict, "small_copies",
                       PyLong_FromLong(c->small_copies)) ||
      hrx_py_bench_put(dict, "bulk_bytes",
                       PyLong_FromUnsignedLongLong(c->bulk_bytes)) ||
      hrx_py_bench_put(dict, "bulk_copies", PyLong_FromLong(c->bulk_copies)) ||
      hrx_py_bench_put(dict, "loaded_copies",
                       PyLong_FromLong(c->loaded_copies)) ||
      hrx_py_bench_put(dict, "warmup", PyLong_FromLong(c->warmup)) ||
      hrx_py_bench_put(dict, "samples", PyLong_FromLong(c->samples)) ||
      hrx_py_bench_put(dict, "kernel_spin_ns",
                       PyLong_FromUnsignedLongLong(c->kernel_spin_ns)) ||
      hrx_py_bench_put(dict, "kernel_launches",
                       PyLong_FromLong(c->kernel_launches)) ||
      hrx_py_bench_put(dict, "backlog_blocks",
                       PyLong_FromLong(c->backlog_blocks)) ||
      hrx_py_bench_put(dict, "backlog_kernels",
                       PyLong_FromLong(c->backlog_kernels)) ||
      hrx_py_bench_put(dict, "transfer_bytes",
                       PyLong_FromUnsignedLongLong(c->transfer_bytes)) ||
      hrx_py_bench_put(dict, "transfer_copies",
                       PyLong_FromLong(c->transfer_copies)) ||
      hrx_py_bench_put(dict, "compute_samples",
                       PyLong_FromLong(c->compute_samples)) ||
      hrx_py_bench_put(dict, "transfer_samples",
                       PyLong_FromLong(c->transfer_samples)) ||
      hrx_py_bench_put(dict, "stream_creation_ns",
                       PyLong_FromUnsignedLongLong(r->stream_creation_ns)) ||
      hrx_py_bench_put(dict, "small_round_ns",
                       hrx_py_bench_list(r->small_round_ns, rounds)) ||
      hrx_py_bench_put(dict, "threaded_round_ns",
                       hrx_py_bench_list(r->threaded_round_ns, rounds)) ||
      hrx_py_bench_put(dict, "bulk_round_ns",
                       hrx_py_bench_list(r->bulk_round_ns, rounds)) ||
      hrx_py_bench_put(dict, "idle_sample_ns",
                       hrx_py_bench_list(r->idle_sample_ns,
                                         r->latency_samples)) ||
      hrx_py_bench_put(dict, "loaded_sample_ns",
                       hrx_py_bench_list(r->loaded_sample_ns,
                                         r->latency_samples))) {
    Py_DECREF(dict);
    return NULL;
  }
  /* loaded_<probe>_sample_ns, only for probes that ran. */
  for (int v = 0; v < HRX_BENCH_PROBE_COUNT; ++v) {
    if (!r->loaded_probe_sample_ns[v]) continue;
    char key[64];
    PyOS_snprintf(key, sizeof(key), "loaded_%s_sample_ns",
                  hrx_bench_probe_name(v));
    if (hrx_py_bench_put(dict, key,
                         hrx_py_bench_list(r->loaded_probe_sample_ns[v],
                                           r->latency_samples))) {
      Py_DECREF(dict);
      return NULL;
    }
  }
  /* The contention cases' arrays, only when they ran. */
  if (r->kernel_one_lane_round_ns) {
    if (hrx_py_bench_put(dict, "kernel_one_lane_round_ns",
                         hrx_py_bench_list(r->kernel_one_lane_round_ns,
                                           rounds)) ||
        hrx_py_bench_put(dict, "kernel_lanes_round_ns",
                         hrx_py_bench_list(r->kernel_lanes_round_ns,
                                           rounds))) {
      Py_DECREF(dict);
      return NULL;
    }
  }
  for (int op = 0; op < HRX_BENCH_OP_COUNT; ++op) {
    size_t n = (size_t)(op < HRX_BENCH_OP_TRANSFER_READ ? c->compute_samples
                                                        : c->transfer_samples);
    for (int k = 0; k < HRX_BENCH_CONTENTION_KINDS; ++k) {
      if (!r->contention_sample_ns[op][k]) continue;
      char key[96];
      PyOS_snprintf(key, sizeof(key), "%s_%s_sample_ns",
                    hrx_bench_contention_op_name(op),
                    hrx_bench_contention_kind_name(k));
      if (hrx_py_bench_put(dict, key,
                           hrx_py_bench_list(r->contention_sample_ns[op][k],
                                             n))) {
        Py_DECREF(dict);
        return NULL;
      }
    }
  }
  return dict;
}

/* bench_run(device, *, driver="native", lanes=16, retained_streams=16,
 *           small_bytes=4096, small_copies=1024, bulk_bytes=33554432,
 *           bulk_copies=16, loaded_copies=4, warmup=3, samples=15,
 *           loaded_probes=True, kernel_spin_ns=20000, kernel_launches=512,
 *           backlog_blocks=16384, backlog_kernels=4, transfer_bytes=8388608,
 *           transfer_copies=1, compute_samples=16, transfer_samples=8,
 *           contention=True) -> dict; loaded_<probe>_sample_ns keys only
 *           for probes that ran (native driver); the contention arrays
 *           (kernel_*_round_ns, <op>_<kind>_sample_ns) only when
 *           contention is true. */
PyObject* hrx_py_bench_run(PyObject* module, PyObject* const* args,
                           Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {
      "device",           "driver",           "lanes",
      "retained_streams", "small_bytes",      "small_copies",
      "bulk_bytes",       "bulk_copies",      "loaded_copies",
      "warmup",           "samples",          "loaded_probes",
      "kernel_spin_ns",   "kernel_launches",  "backlog_blocks",
      "backlog_kernels",  "transfer_bytes",   "transfer_copies",
      "compute_samples",  "transfer_samples", "contention"};
  PyObject* device_object = NULL;
  PyObject* driver = NULL;
  PyObject* lanes = NULL;
  PyObject* retained_streams = NULL;
  PyObject* small_bytes = NULL;
  PyObject* small_copies = NULL;
  PyObject* bulk_bytes = NULL;
  PyObject* bulk_copies = NULL;
  PyObject* loaded_copies = NULL;
  PyObject* warmup = NULL;
  PyObject* samples = NULL;
  PyObject* loaded_probes = NULL;
  PyObject *spin_ns = NULL, *kernel_launches = NULL, *backlog_blocks = NULL,
           *backlog_kernels = NULL, *transfer_bytes = NULL,
           *transfer_copies = NULL, *compute_samples = NULL,
           *transfer_samples = NULL, *contention = NULL;
  PyObject* parsed[21];
  if (hrx_py_arg_parse("bench_run", args, nargs, kwnames, names, 21, 1, 1,
                       parsed) < 0) {
    return NULL;
  }
  device_object = parsed[0];
  if (parsed[1]) driver = parsed[1];
  if (parsed[2]) lanes = parsed[2];
  if (parsed[3]) retained_streams = parsed[3];
  if (parsed[4]) small_bytes = parsed[4];
  if (parsed[5]) small_copies = parsed[5];
  if (parsed[6]) bulk_bytes = parsed[6];
  if (parsed[7]) bulk_copies = parsed[7];
  if (parsed[8]) loaded_copies = parsed[8];
  if (parsed[9]) warmup = parsed[9];
  if (parsed[10]) samples = parsed[10];
  if (parsed[11]) loaded_probes = parsed[11];
  if (parsed[12]) spin_ns = parsed[12];
  if (parsed[13]) kernel_launches = parsed[13];
  if (parsed[14]) backlog_blocks = parsed[14];
  if (parsed[15]) backlog_kernels = parsed[15];
  if (parsed[16]) transfer_bytes = parsed[16];
  if (parsed[17]) transfer_copies = parsed[17];
  if (parsed[18]) compute_samples = parsed[18];
  if (parsed[19]) transfer_samples = parsed[19];
  if (parsed[20]) contention = parsed[20];
  if (loaded_probes && !PyBool_Check(loaded_probes)) {
    PyErr_Format(PyExc_TypeError,
                 "bench_run() argument 'loaded_probes' must be a bool, not "
                 "%.100s", Py_TYPE(loaded_probes)->tp_name);
    return NULL;
  }
  if (contention && !PyBool_Check(contention)) {
    PyErr_Format(PyExc_TypeError,
                 "bench_run() argument 'contention' must be a bool, not "
                 "%.100s", Py_TYPE(contention)->tp_name);
    return NULL;
  }
  hrx_py_state_t* state = hrx_py_state(module);

  hrx_bench_config_t config;
  hrx_bench_config_default(&config);
  long long v_lanes = config.lanes;
  long long v_retained = config.retained_streams;
  long long v_small_bytes = (long long)config.small_bytes;
  long long v_small_copies = config.small_copies;
  long long v_bulk_bytes = (long long)config.bulk_bytes;
  long long v_bulk_copies = config.bulk_copies;
  long long v_loaded = config.loaded_copies;
  long long v_warmup = config.warmup;
  long long v_samples = config.samples;
  long long v_spin = (long long)config.kernel_spin_ns;
  long long v_launches = config.kernel_launches;
  long long v_blocks = config.backlog_blocks;
  long long v_backlog = config.backlog_kernels;
  long long v_transfer_bytes = (long long)config.transfer_bytes;
  long long v_transfer_copies = config.transfer_copies;
  long long v_compute_samples = config.compute_samples;
  long long v_transfer_samples = config.transfer_samples;
  const long long max_bytes = (long long)HRX_BENCH_MAX_BYTES;
  if (hrx_py_bench_driver(state, driver, &config.driver) ||
      hrx_py_bench_count(state, lanes, "lanes", HRX_BENCH_MAX_LANES, &v_lanes) ||
      hrx_py_bench_count(state, retained_streams, "retained_streams",
                         HRX_BENCH_MAX_STREAMS, &v_retained) ||
      hrx_py_bench_count(state, small_bytes, "small_bytes", max_bytes,
                         &v_small_bytes) ||
      hrx_py_bench_count(state, small_copies, "small_copies", HRX_BENCH_MAX_COPIES,
                         &v_small_copies) ||
      hrx_py_bench_count(state, bulk_bytes, "bulk_bytes", max_bytes, &v_bulk_bytes) ||
      hrx_py_bench_count(state, bulk_copies, "bulk_copies", HRX_BENCH_MAX_COPIES,
                         &v_bulk_copies) ||
      hrx_py_bench_count(state, loaded_copies, "loaded_copies", HRX_BENCH_MAX_COPIES,
                         &v_loaded) ||
      hrx_py_bench_count(state, warmup, "warmup", HRX_BENCH_MAX_ROUNDS, &v_warmup) ||
      hrx_py_bench_count(state, samples, "samples", HRX_BENCH_MAX_ROUNDS,
                         &v_samples) ||
      hrx_py_bench_count(state, spin_ns, "kernel_spin_ns",
                         (long long)HRX_BENCH_MAX_SPIN_NS, &v_spin) ||
      hrx_py_bench_count(state, kernel_launches, "kernel_launches",
                         HRX_BENCH_MAX_COPIES, &v_launches) ||
      hrx_py_bench_count(state, backlog_blocks, "backlog_blocks",
                         HRX_BENCH_MAX_BLOCKS, &v_blocks) ||
      hrx_py_bench_count(state, backlog_kernels, "backlog_kernels",
                         HRX_BENCH_MAX_COPIES, &v_backlog) ||
      hrx_py_bench_count(state, transfer_bytes, "transfer_bytes", max_bytes,
                         &v_transfer_bytes) ||
      hrx_py_bench_count(state, transfer_copies, "transfer_copies",
                         HRX_BENCH_MAX_COPIES, &v_transfer_copies) ||
      hrx_py_bench_count(state, compute_samples, "compute_samples",
                         HRX_BENCH_MAX_ROUNDS, &v_compute_samples) ||
      hrx_py_bench_count(state, transfer_samples, "transfer_samples",
                         HRX_BENCH_MAX_ROUNDS, &v_transfer_samples)) {
    return NULL;
  }
  config.kernel_spin_ns = (uint64_t)v_spin;
  config.kernel_launches = (int)v_launches;
  config.backlog_blocks = (int)v_blocks;
  config.backlog_kernels = (int)v_backlog;
  config.transfer_bytes = (uint64_t)v_transfer_bytes;
  config.transfer_copies = (int)v_transfer_copies;
  config.compute_samples = (int)v_compute_samples;
  config.transfer_samples = (int)v_transfer_samples;
  if (contention) config.contention = contention == Py_True;
  config.lanes = (int)v_lanes;
  config.retained_streams = (int)v_retained;
  config.small_bytes = (uint64_t)v_small_bytes;
  config.small_copies = (int)v_small_copies;
  config.bulk_bytes = (uint64_t)v_bulk_bytes;
  config.bulk_copies = (int)v_bulk_copies;
  config.loaded_copies = (int)v_loaded;
  config.warmup = (int)v_warmup;
  config.samples = (int)v_samples;
  if (loaded_probes) config.loaded_probes = loaded_probes == Py_True;

  hrx_device_t* device = hrx_py_device_unwrap(state, device_object);
  if (!device) return NULL;

  /* Our own reference keeps the device alive even if the Python object is
   * closed by another thread while the GIL is released. */
  hrx_device_retain(device);
  hrx_bench_result_t* result = NULL;
  hrx_status_t status;
  Py_BEGIN_ALLOW_THREADS
  status = hrx_bench_run(device, &config, &result);
  hrx_device_release(device);
  Py_END_ALLOW_THREADS
  if (status) return hrx_py_raise(state, status);

  PyObject* dict = hrx_py_bench_dict(result);
  hrx_bench_result_free(result);
  return dict;
}

/* ----------------------------------------------------------- kernels */

/* bench_kernel_source(language) -> str | None */
PyObject* hrx_py_bench_kernel_source(PyObject* module, PyObject* language) {
  (void)module;
  if (!PyUnicode_Check(language)) {
    PyErr_Format(PyExc_TypeError,
                 "bench_kernel_source() argument must be a str ('c', "
                 "'cuda' or 'hip'), not %.100s",
                 Py_TYPE(language)->tp_name);
    return NULL;
  }
  const char* name = PyUnicode_AsUTF8(language);
  if (!name) return NULL;
  const char* source = hrx_bench_kernel_source(name);
  if (!source) Py_RETURN_NONE;
  return PyUnicode_FromString(source);
}

/* A str keyword among `names` (count of them) into its index. */
static int hrx_py_bench_choice(hrx_py_state_t* state, PyObject* object,
                               const char* what, const char* const* names,
                               int count, int* out) {
  if (!object) return 0;
  if (!PyUnicode_Check(object)) {
    PyErr_Format(PyExc_TypeError, "bench_launch() argument '%s' must be a "
                 "str, not %.100s", what, Py_TYPE(object)->tp_name);
    return -1;
  }
  for (int i = 0; i < count; ++i) {
    if (PyUnicode_CompareWithASCIIString(object, names[i]) == 0) {
      *out = i;
      return 0;
    }
  }
  PyErr_Format(state->errors[HRX_STATUS_INVALID_ARGUMENT],
               "bench_launch() argument '%s' is %R; one of %s", what, object,
               count == 2 ? "'native', 'raw' / 'tiny', 'spin'"
                          : "'high', 'normal', 'low'");
  return -1;
}

/* bench_launch(device, *, driver="native", kernel="tiny", grid=1, block=1,
 *              spin_ns=0, launches=1000, warmup=100, threads=1,
 *              priority="normal", synchronize_each=False) -> dict */
PyObject* hrx_py_bench_launch(PyObject* module, PyObject* const* args,
                              Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const names[] = {
      "device",  "driver",   "kernel", "grid",    "block",
      "spin_ns", "launches", "warmup", "threads", "priority",
      "synchronize_each"};
  PyObject* given[11];
  if (hrx_py_arg_parse("bench_launch", args, nargs, kwnames, names, 11, 1, 1,
                       given) < 0) {
    return NULL;
  }
  PyObject* synchronize_each = given[10];
  if (synchronize_each && !PyBool_Check(synchronize_each)) {
    PyErr_Format(PyExc_TypeError,
                 "bench_launch() argument 'synchronize_each' must be True or "
                 "False, not %.100s",
                 Py_TYPE(synchronize_each)->tp_name);
    return NULL;
  }
  PyObject *device_object = given[0], *driver = given[1], *kernel = given[2],
           *grid = given[3], *block = given[4], *spin = given[5],
           *launches = given[6], *warmup = given[7], *threads = given[8],
           *priority = given[9];
  hrx_py_state_t* state = hrx_py_state(module);
  hrx_bench_launch_config_t config;
  hrx_bench_launch_config_default(&config);
  static const char* const drivers[] = {"native", "raw"};
  static const char* const kernels[] = {"tiny", "spin"};
  static const char* const lanes[] = {"low", "normal", "high"};
  int driver_index = 0, kernel_index = 0, lane = 1;
  long long v_grid = 1, v_block = 1, v_launches = (long long)config.launches,
            v_threads = 1;
  uint64_t v_spin = 0, v_warmup = config.warmup;
  if (hrx_py_bench_choice(state, driver, "driver", drivers, 2,
                          &driver_index) ||
      hrx_py_bench_choice(state, kernel, "kernel", kernels, 2,
                          &kernel_index) ||
      hrx_py_bench_choice(state, priority, "priority", lanes, 3, &lane) ||
      hrx_py_bench_count(state, grid, "grid", UINT32_MAX, &v_grid) ||
      hrx_py_bench_count(state, block, "block", UINT32_MAX, &v_block) ||
      hrx_py_bench_count(state, launches, "launches",
                         (long long)HRX_BENCH_MAX_LAUNCHES, &v_launches) ||
      hrx_py_bench_count(state, threads, "threads",
                         HRX_BENCH_MAX_LAUNCH_THREADS, &v_threads) ||
      (spin && hrx_py_arg_uint64(state, spin, "spin_ns", &v_spin)) ||
      (warmup && hrx_py_arg_uint64(state, warmup, "warmup", &v_warmup))) {
    return NULL;
  }
  config.driver = (hrx_bench_driver_t)driver_index;
  config.kernel = (hrx_bench_kernel_t)kernel_index;
  config.priority = lane - 1;
  config.grid = (uint32_t)v_grid;
  config.block = (uint32_t)v_block;
  config.spin_ns = v_spin;
  config.launches = (uint64_t)v_launches;
  config.warmup = v_warmup;
  config.threads = (int)v_threads;
  config.synchronize_each = synchronize_each == Py_True;
  hrx_device_t* device = hrx_py_device_unwrap(state, device_object);
  if (!device) return NULL;
  hrx_bench_launch_result_t* result = PyMem_Calloc(1, sizeof(*result));
  if (!result) return PyErr_NoMemory();
  hrx_status_t status;
  hrx_device_retain(device);
  Py_BEGIN_ALLOW_THREADS
  status = hrx_bench_launch_run(device, &config, result);
  hrx_device_release(device);
  Py_END_ALLOW_THREADS
  PyObject* dict = NULL;
  if (status) {
    hrx_py_raise(state, status);
  } else {
    dict = Py_BuildValue(
        "{s:s,s:s,s:I,s:I,s:K,s:i,s:K,s:K,s:N}", "driver",
        drivers[driver_index], "kernel", kernels[kernel_index], "grid",
        config.grid, "block", config.block, "spin_ns",
        (unsigned long long)config.spin_ns, "threads", config.threads,
        "launches", (unsigned long long)result->launches, "elapsed_ns",
        (unsigned long long)result->elapsed_ns, "thread_ns",
        hrx_py_bench_list(result->thread_ns, (size_t)config.threads));
  }
  PyMem_Free(result);
  return dict;
}
