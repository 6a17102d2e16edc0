/* Interruptible waits: see wait.h. */
#include "wait.h"

/* Slice between signal checks: Ctrl-C is seen within about this long (plus
 * the command the waiting thread may be running on the host backend). */
#define HRX_PY_WAIT_SLICE_NS 50000000ull

static bool hrx_py_wait_interrupted(void* user_data) {
  hrx_py_wait_t* wait = user_data;
  PyEval_RestoreThread(wait->saved);
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
  PyEval_RestoreThread(wait->saved);
  wait->saved = NULL;
}
