/* Python thread states of threads Python did not start: see
 * host_threads.h. */
#include "host_threads.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Guards the making of states and the list of states to delete; fork()
 * takes it first (hrx_py_host_threads_before_fork). Never held while
 * waiting for the GIL. */
static pthread_mutex_t hrx_py_states_mutex = PTHREAD_MUTEX_INITIALIZER;

typedef struct hrx_py_retired_s {
  PyThreadState* state;
  struct hrx_py_retired_s* next;
} hrx_py_retired_t;

/* States of threads that ended, to delete with the GIL held; mutex. */
static hrx_py_retired_t* hrx_py_retired;
static atomic_int hrx_py_retired_count;

/* The calling thread's kept state, and how deep its takes are nested. */
static _Thread_local PyThreadState* hrx_py_kept;
static _Thread_local int hrx_py_kept_depth;

/* Its destructor lists the state when the thread ends. */
static pthread_key_t hrx_py_kept_key;

static void hrx_py_kept_thread_ended(void* state) {
  hrx_py_retired_t* entry = malloc(sizeof(*entry));
  if (!entry) return; /* the state stays until the interpreter ends */
  entry->state = state;
  pthread_mutex_lock(&hrx_py_states_mutex);
  entry->next = hrx_py_retired;
  hrx_py_retired = entry;
  atomic_fetch_add(&hrx_py_retired_count, 1);
  pthread_mutex_unlock(&hrx_py_states_mutex);
}

/* Deletes the states of ended threads. With the GIL held. */
static void hrx_py_delete_retired(void) {
  if (!atomic_load_explicit(&hrx_py_retired_count, memory_order_relaxed)) {
    return;
  }
  pthread_mutex_lock(&hrx_py_states_mutex);
  hrx_py_retired_t* list = hrx_py_retired;
  hrx_py_retired = NULL;
  atomic_store(&hrx_py_retired_count, 0);
  pthread_mutex_unlock(&hrx_py_states_mutex);
  while (list) {
    hrx_py_retired_t* next = list->next;
    PyThreadState_Clear(list->state);
    PyThreadState_Delete(list->state);
    free(list);
    list = next;
  }
}

hrx_py_host_gil_t hrx_py_host_gil_take(void) {
  hrx_py_host_gil_t taken = {.own_state = false};
  if (hrx_py_kept) {
    if (hrx_py_kept_depth++ == 0) PyEval_RestoreThread(hrx_py_kept);
    hrx_py_delete_retired();
    return taken;
  }
  if (PyGILState_GetThisThreadState()) {
    taken.own_state = true;
    taken.state = PyGILState_Ensure();
    return taken;
  }
  pthread_mutex_lock(&hrx_py_states_mutex);
  PyThreadState* state = PyThreadState_New(PyInterpreterState_Main());
  pthread_mutex_unlock(&hrx_py_states_mutex);
  if (!state) {
    /* Out of memory: the usual way (a state per take). */
    taken.own_state = true;
    taken.state = PyGILState_Ensure();
    return taken;
  }
  hrx_py_kept = state;
  hrx_py_kept_depth = 1;
  pthread_setspecific(hrx_py_kept_key, state);
  PyEval_RestoreThread(state);
  hrx_py_delete_retired();
  return taken;
}

void hrx_py_host_gil_give(hrx_py_host_gil_t taken) {
  if (taken.own_state) {
    PyGILState_Release(taken.state);
    return;
  }
  if (--hrx_py_kept_depth == 0) PyEval_SaveThread();
}

/* os.register_at_fork's handlers. */
static PyObject* hrx_py_host_threads_before_fork(PyObject* module,
                                                 PyObject* unused) {
  (void)module;
  (void)unused;
  /* Waited for with the GIL held: the holder never waits for it. */
  pthread_mutex_lock(&hrx_py_states_mutex);
  Py_RETURN_NONE;
}

static PyObject* hrx_py_host_threads_after_fork_in_parent(PyObject* module,
                                                          PyObject* unused) {
  (void)module;
  (void)unused;
  pthread_mutex_unlock(&hrx_py_states_mutex);
  Py_RETURN_NONE;
}

static PyObject* hrx_py_host_threads_after_fork_in_child(PyObject* module,
                                                         PyObject* unused) {
  (void)module;
  (void)unused;
  /* CPython deleted every other thread's state in the child. */
  while (hrx_py_retired) {
    hrx_py_retired_t* next = hrx_py_retired->next;
    free(hrx_py_retired);
    hrx_py_retired = next;
  }
  atomic_store(&hrx_py_retired_count, 0);
  pthread_mutex_unlock(&hrx_py_states_mutex);
  Py_RETURN_NONE;
}

static PyMethodDef hrx_py_fork_handlers[] = {
    {"_before_fork", hrx_py_host_threads_before_fork, METH_NOARGS, NULL},
    {"_after_fork_in_parent", hrx_py_host_threads_after_fork_in_parent,
     METH_NOARGS, NULL},
    {"_after_fork_in_child", hrx_py_host_threads_after_fork_in_child,
     METH_NOARGS, NULL},
};

static bool hrx_py_host_threads_registered;

int hrx_py_host_threads_register(PyObject* module) {
  if (hrx_py_host_threads_registered) return 0;
  if (pthread_key_create(&hrx_py_kept_key, hrx_py_kept_thread_ended) != 0) {
    PyErr_SetString(PyExc_RuntimeError,
                    "hrx: cannot create a thread-specific key");
    return -1;
  }
  PyObject* handlers[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3; ++i) {
    handlers[i] = PyCFunction_New(&hrx_py_fork_handlers[i], module);
  }
  PyObject* os = PyImport_ImportModule("os");
  PyObject* register_at_fork =
      os ? PyObject_GetAttrString(os, "register_at_fork") : NULL;
  PyObject* result = NULL;
  if (register_at_fork && handlers[0] && handlers[1] && handlers[2]) {
    PyObject* args = PyTuple_New(0);
    PyObject* kwargs = Py_BuildValue("{s:O,s:O,s:O}", "before", handlers[0],
                                     "after_in_parent", handlers[1],
                                     "after_in_child", handlers[2]);
    if (args && kwargs) result = PyObject_Call(register_at_fork, args, kwargs);
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
  }
  Py_XDECREF(register_at_fork);
  Py_XDECREF(os);
  for (int i = 0; i < 3; ++i) Py_XDECREF(handlers[i]);
  if (!result) return -1;
  Py_DECREF(result);
  hrx_py_host_threads_registered = true;
  return 0;
}

int hrx_py_visit_callable(void* user_data, void* arg) {
  hrx_py_callable_visit_t* how = arg;
  return how->visit((PyObject*)user_data, how->arg);
}
