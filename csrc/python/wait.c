/* Interruptible waits and the GIL hand-over: see wait.h. */
#include "wait.h"

#include <sched.h>
#include <stdatomic.h>
#include <time.h>

/* Slice between signal checks: Ctrl-C is seen within about this long (plus
 * the command the waiting thread may be running on the host backend). */
#define HRX_PY_WAIT_SLICE_NS 50000000ull

/* Threads taking the GIL back after a wait (hrx_py_wait_end). */
static atomic_int hrx_py_gil_returning;

/* Takes the GIL back for `saved`, announced to hrx_py_hand_over_gil. */
static void hrx_py_take_gil_back(PyThreadState* saved) {
  atomic_fetch_add(&hrx_py_gil_returning, 1);
  PyEval_RestoreThread(saved);
  atomic_fetch_sub(&hrx_py_gil_returning, 1);
}

static bool hrx_py_wait_interrupted(void* user_data) {
  hrx_py_wait_t* wait = user_data;
  hrx_py_take_gil_back(wait->saved);
  wait->raised = PyErr_CheckSignals() < 0;
  wait->saved = PyEval_SaveThread();
  return wait->raised;
}

void hrx_py_wait_begin(hrx_py_wait_t* wait) {
  wait->hook.slice_ns = HRX_PY_WAIT_SLICE_NS;
  wait->hook.interrupted = hrx_py_wait_interrupted;
  wait->hook.user_data = wait;
  wait->raised = false;
  wait->saved = PyEval_SaveThread();
}

void hrx_py_wait_end(hrx_py_wait_t* wait) {
  hrx_py_take_gil_back(wait->saved);
  wait->saved = NULL;
}

void hrx_py_hand_over_gil(void) {
  int returning =
      atomic_load_explicit(&hrx_py_gil_returning, memory_order_relaxed);
  if (!returning) return;
  PyThreadState* self = PyEval_SaveThread();
  /* Until one of them took it (the count drops): a short spin, then short
   * sleeps, which leave this core to a waiter that must be scheduled. */
  uint64_t start = hrx_now_ns();
  for (unsigned i = 0; atomic_load(&hrx_py_gil_returning) >= returning;
       ++i) {
    uint64_t waited = hrx_now_ns() - start;
    if (waited >= HRX_PY_HAND_OVER_NS) break;
    if (waited < 20000) {
      sched_yield();
    } else {
      struct timespec nap = {0, 20000};
      nanosleep(&nap, NULL);
    }
  }
  PyEval_RestoreThread(self);
}
