/* hrx._hrx.bench_run: the C benchmark driver (csrc/bench/bench.h) for
 * hrx.bench. Arguments are checked here so that Python callers get
 * hrx.InvalidArgumentError (a ValueError) or TypeError naming the argument; the core checks them again. The
 * run holds no Python object and releases the GIL throughout. */
#include "module.h"

#include "args.h"

#include "bench/bench.h"

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
  return dict;
}

/* bench_run(device, *, driver="native", lanes=16, retained_streams=16,
 *           small_bytes=4096, small_copies=1024, bulk_bytes=33554432,
 *           bulk_copies=16, loaded_copies=4, warmup=3, samples=15,
 *           loaded_probes=True) -> dict; loaded_<probe>_sample_ns keys only
 *           for probes that ran (native driver). */
PyObject* hrx_py_bench_run(PyObject* module, PyObject* args,
                           PyObject* kwargs) {
  static char* keywords[] = {"device",        "driver",      "lanes",
                             "retained_streams", "small_bytes", "small_copies",
                             "bulk_bytes",    "bulk_copies", "loaded_copies",
                             "warmup",        "samples",
                             "loaded_probes", NULL};
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
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "O|$OOOOOOOOOOO:bench_run", keywords, &device_object,
          &driver, &lanes, &retained_streams, &small_bytes, &small_copies,
          &bulk_bytes, &bulk_copies, &loaded_copies, &warmup, &samples,
          &loaded_probes)) {
    return NULL;
  }
  if (loaded_probes && !PyBool_Check(loaded_probes)) {
    PyErr_Format(PyExc_TypeError,
                 "bench_run() argument 'loaded_probes' must be a bool, not "
                 "%.100s", Py_TYPE(loaded_probes)->tp_name);
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
                         &v_samples)) {
    return NULL;
  }
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
