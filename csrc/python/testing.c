/* The testing build's module functions (HRX_TESTING_BUILD, see setup.py),
 * in the spirit of CPython's _testcapi: what the test suite observes beyond
 * the API. Not compiled into what `pip install .` gives a user. */
#ifdef HRX_TESTING_BUILD
#include "testing.h"

#include "device_handle.h"
#include "submit.h"
#include "testing/hrx_testing.h"

/* The fault wrapper's counts (hrx_fault_query_counts). */
static PyObject* hrx_py_testing_live_native_objects(PyObject* module,
                                                    PyObject* unused) {
  (void)module;
  (void)unused;
  hrx_fault_counts_t c;
  hrx_fault_query_counts(&c);
  return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}",
                       "queues", (long long)c.queues, "events",
                       (long long)c.events, "allocations",
                       (long long)c.allocations, "host_allocations",
                       (long long)c.host_allocations, "graphs",
                       (long long)c.graphs, "devices", (long long)c.devices,
                       "faults_injected", (long long)c.faults_injected,
                       "native_commands", (long long)c.native_commands,
                       "modules", (long long)c.modules, "kernel_compiles",
                       (long long)c.kernel_compiles);
}

static PyObject* hrx_py_testing_commands_submitted(PyObject* module,
                                                   PyObject* object) {
  hrx_device_t* device = hrx_py_device_unwrap(hrx_py_state(module), object);
  if (!device) return NULL;
  return PyLong_FromUnsignedLongLong(hrx_device_commands_submitted(device));
}

static PyObject* hrx_py_testing_submissions_released_gil(PyObject* module,
                                                         PyObject* unused) {
  (void)module;
  (void)unused;
  return hrx_py_testing_gil_releases();
}

/* {first: a, second: b} of a pair of the runtime's counters. */
static PyObject* hrx_py_testing_pair(void (*query)(uint64_t*, uint64_t*),
                                     const char* first, const char* second) {
  uint64_t a = 0;
  uint64_t b = 0;
  query(&a, &b);
  return Py_BuildValue("{s:K,s:K}", first, (unsigned long long)a, second,
                       (unsigned long long)b);
}

static PyObject* hrx_py_testing_staging_allocations(PyObject* module,
                                                    PyObject* unused) {
  (void)module;
  (void)unused;
  return hrx_py_testing_pair(hrx_staging_query_allocations, "reads",
                             "warm_up");
}

static PyObject* hrx_py_testing_staging_evictions(PyObject* module,
                                                  PyObject* unused) {
  (void)module;
  (void)unused;
  return hrx_py_testing_pair(hrx_staging_query_evictions, "cleanup",
                             "inline");
}

static PyObject* hrx_py_testing_pinned_direct(PyObject* module,
                                              PyObject* unused) {
  (void)module;
  (void)unused;
  return hrx_py_testing_pair(hrx_pinned_query_direct, "uploads", "reads");
}

static PyObject* hrx_py_testing_result_pool(PyObject* module,
                                            PyObject* unused) {
  (void)module;
  (void)unused;
  return hrx_py_testing_pair(hrx_result_memory_query_pool, "cached_bytes",
                             "blocks");
}

static PyMethodDef hrx_py_testing_methods[] = {
    {"_testing_live_native_objects", hrx_py_testing_live_native_objects,
     METH_NOARGS,
     "_testing_live_native_objects($module, /)\n--\n\n"
     "Return a dict of the native objects alive through the fault-injection "
     "wrapper ($HRX_FAULTS set when the live device was "
     "created): queues, events, allocations, host_allocations, graphs, "
     "devices, modules (kernel modules loaded), faults_injected, "
     "native_commands and kernel_compiles so far."},
    {"_testing_commands_submitted", hrx_py_testing_commands_submitted, METH_O,
     "_testing_commands_submitted($module, device, /)\n--\n\n"
     "Return the commands the live device's streams have accepted "
     "(hrx_device_commands_submitted)."},
    {"_testing_submissions_released_gil",
     hrx_py_testing_submissions_released_gil, METH_NOARGS,
     "_testing_submissions_released_gil($module, /)\n--\n\n"
     "Return {(kind, reason): count} of the calls (copy, fill, upload, "
     "wait_event, record_event, graph_launch, read, flush, synchronize, "
     "event_synchronize) that released the GIL in this process so far, "
     "with the core's reason (its WOULD_BLOCK message, or 'large "
     "upload')."},
    {"_testing_staging_allocations", hrx_py_testing_staging_allocations,
     METH_NOARGS,
     "_testing_staging_allocations($module, /)\n--\n\n"
     "Return {'reads': n, 'warm_up': n}: the read staging blocks allocated "
     "in this process so far by reads, on their path, and by the warm-up "
     "of a device's cleanup thread when it opened."},
    {"_testing_staging_evictions", hrx_py_testing_staging_evictions,
     METH_NOARGS,
     "_testing_staging_evictions($module, /)\n--\n\n"
     "Return {'cleanup': n, 'inline': n}: the read staging blocks freed "
     "beyond the cache ($HRX_STAGING_CACHE_BYTES) in this process so far, "
     "by a device's cleanup thread and at once on a caller's path."},
    {"_testing_pinned_direct", hrx_py_testing_pinned_direct, METH_NOARGS,
     "_testing_pinned_direct($module, /)\n--\n\n"
     "Return {'uploads': n, 'reads': n}: the transfers that copied pinned "
     "host memory directly, with no staging, in this process so far."},
    {"_testing_result_pool", hrx_py_testing_result_pool, METH_NOARGS,
     "_testing_result_pool($module, /)\n--\n\n"
     "Return {'cached_bytes': n, 'blocks': n}: the free blocks the "
     "process's pool of result memory (Readback.wait()'s large arrays) "
     "keeps now."},
    {NULL, NULL, 0, NULL},
};

int hrx_py_testing_register(PyObject* module) {
  return PyModule_AddFunctions(module, hrx_py_testing_methods);
}
#endif /* HRX_TESTING_BUILD */
