/* Blocking waits that Ctrl-C can interrupt. A wait runs with the GIL
 * released, in slices; between slices the hook takes the GIL back and runs
 * Python's signal handlers (PyErr_CheckSignals). If one raises (e.g.
 * KeyboardInterrupt), the wait stops and the exception stays set. */
#ifndef HRX_PYTHON_WAIT_H_
#define HRX_PYTHON_WAIT_H_

#include "module.h"

typedef struct hrx_py_wait_s {
  hrx_wait_hook_t hook;     /* pass &wait.hook to a blocking wait */
  PyThreadState* saved;     /* the thread state while the GIL is released */
  bool raised;              /* a signal handler raised: its error is set */
} hrx_py_wait_t;

/* Releases the GIL (like Py_BEGIN_ALLOW_THREADS) and prepares the hook. */
void hrx_py_wait_begin(hrx_py_wait_t* wait);
/* Takes the GIL back (like Py_END_ALLOW_THREADS). */
void hrx_py_wait_end(hrx_py_wait_t* wait);

#endif /* HRX_PYTHON_WAIT_H_ */
