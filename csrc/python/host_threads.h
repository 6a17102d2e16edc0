/* The GIL on the threads hrx calls Python from that Python did not start:
 * host engines running graph callbacks, a device's cleanup thread dropping
 * a callable, a GPU runtime's callback thread.
 *
 * Such a thread keeps one Python thread state for life, made the first
 * time it takes the GIL, instead of one made and deleted around every
 * callback: making or deleting a thread state takes the interpreter's
 * lock of its thread list, and a fork() that lands while another thread
 * holds it leaves the child waiting for it for ever (before its first
 * line). So:
 * - a state is made (PyThreadState_New) only under a lock that fork()
 *   takes first (os.register_at_fork, registered at import), so no fork
 *   lands during it;
 * - when the thread ends (a pthread key's destructor) its state is only
 *   listed, and deleted later by a thread that holds the GIL (the next
 *   one that takes it here), which a fork() holds too;
 * - in a forked child the list is dropped: CPython's fork handling has
 *   deleted every other thread's state already.
 * A thread with a state of its own (one Python started) uses
 * PyGILState_Ensure as usual. Nested takes on one thread are counted. */
#ifndef HRX_PYTHON_HOST_THREADS_H_
#define HRX_PYTHON_HOST_THREADS_H_

#include "state.h"

typedef struct hrx_py_host_gil_s {
  bool own_state;            /* the thread has a Python state of its own */
  PyGILState_STATE state;    /* when own_state */
} hrx_py_host_gil_t;

/* Takes the GIL on the calling thread (any thread); give it back with
 * hrx_py_host_gil_give. */
hrx_py_host_gil_t hrx_py_host_gil_take(void);
void hrx_py_host_gil_give(hrx_py_host_gil_t taken);

/* A tp_traverse's visit of the Python callables that host callbacks run:
 * pass hrx_py_visit_callable and a hrx_py_callable_visit_t to
 * hrx_graph_visit_host_data or hrx_completion_visit_host_data, whose user
 * data is the callable (borrowed). */
typedef struct {
  visitproc visit;
  void* arg;
} hrx_py_callable_visit_t;
int hrx_py_visit_callable(void* user_data, void* arg);

/* At module exec: the thread-exit hook and the fork handlers (once per
 * process). */
int hrx_py_host_threads_register(PyObject* module);

#endif /* HRX_PYTHON_HOST_THREADS_H_ */
