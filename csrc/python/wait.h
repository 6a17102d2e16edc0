/* Blocking waits that Ctrl-C can interrupt. A wait runs with the GIL
 * released, in slices; between slices the hook takes the GIL back and runs
 * Python's signal handlers (PyErr_CheckSignals). If one raises (e.g.
 * KeyboardInterrupt), the wait stops and the exception stays set.
 *
 * Taking the GIL back after a wait: a thread that keeps the GIL between
 * hrx calls (one that submits in a loop, never waiting) would otherwise
 * make the waiter wait for CPython's switch interval (5 ms by default)
 * before it gets the GIL. Such a thread hands the GIL over at its next hrx
 * call (hrx_py_hand_over_gil): it lets the GIL go and waits, briefly,
 * until the threads taking it back have it. */
#ifndef HRX_PYTHON_WAIT_H_
#define HRX_PYTHON_WAIT_H_

#include "state.h"

typedef struct hrx_py_wait_s {
  hrx_wait_hook_t hook;     /* pass &wait.hook to a blocking wait */
  PyThreadState* saved;     /* the thread state while the GIL is released */
  bool raised;              /* a signal handler raised: its error is set */
} hrx_py_wait_t;

/* Releases the GIL (like Py_BEGIN_ALLOW_THREADS) and prepares the hook. */
void hrx_py_wait_begin(hrx_py_wait_t* wait);
/* Takes the GIL back (like Py_END_ALLOW_THREADS), announced to the
 * threads that hand it over. */
void hrx_py_wait_end(hrx_py_wait_t* wait);

/* Call with the GIL, between hrx calls, where nothing borrowed from a
 * handle is used afterwards: when threads are taking the GIL back after a
 * wait, lets it go until one of them has it (at most HRX_PY_HAND_OVER_NS:
 * the waiter may first have to be scheduled), then takes it again. Costs
 * one atomic load otherwise. */
#define HRX_PY_HAND_OVER_NS 20000000u
void hrx_py_hand_over_gil(void);

#endif /* HRX_PYTHON_WAIT_H_ */
