/* How the bindings call the core where a call may have to wait
 * (submissions: copy, fill, upload, wait_event, record_event, read, flush,
 * graph launch, kernel launch; waits: Stream.synchronize,
 * Event.synchronize): with the GIL kept whenever the call needs no wait,
 * since a thread that gives the GIL away waits to get it back from any
 * thread that keeps running Python (up to a whole switch interval, 5 ms by
 * default).
 *
 * 1. The call runs with the GIL held in the core's non-blocking mode
 *    (hrx_thread_set_nonblocking): it either finishes without waiting or
 *    reports WOULD_BLOCK having changed nothing.
 * 2. A WOULD_BLOCK that the core says is brief
 *    (hrx_status_would_block_briefly: another thread holds the stream's
 *    publication lock for one publication, the batch flusher its lock) is
 *    usually over in microseconds: the call is repeated, still holding the
 *    GIL, for up to HRX_PY_KEEP_GIL_NS. Never while host callbacks are in
 *    flight (hrx_host_callbacks_in_flight): they need the GIL, and work
 *    queued behind them cannot end before they ran. The bound keeps this
 *    from ever becoming a wait for something that waits for the GIL. Other
 *    waits (queued work, queue space, staging memory) are not polled:
 *    they go the blocking way, which on the host backend runs queued work
 *    on the waiting thread instead of polling for an engine.
 * 3. Only then is the GIL released and the call repeated, blocking: first
 *    the stream's completion gate (hrx_stream_wait_completions) and then
 *    the call itself wait with an interruptible hook (wait.h), so Ctrl-C
 *    ends them. Taking the GIL back, the thread is handed it by the
 *    threads that keep it between hrx calls (wait.h,
 *    hrx_py_hand_over_gil), so a long wait costs it the wait plus a few
 *    microseconds, not a switch interval. */
#ifndef HRX_PYTHON_SUBMIT_H_
#define HRX_PYTHON_SUBMIT_H_

#include "state.h"

typedef enum hrx_py_submission_kind_e {
  HRX_PY_SUBMIT_COPY,
  HRX_PY_SUBMIT_COPY_PEER,
  HRX_PY_SUBMIT_FILL,
  HRX_PY_SUBMIT_UPLOAD,
  HRX_PY_SUBMIT_WAIT_EVENT,
  HRX_PY_SUBMIT_RECORD_EVENT,
  HRX_PY_SUBMIT_GRAPH_LAUNCH,
  HRX_PY_SUBMIT_READ,
  HRX_PY_SUBMIT_FLUSH,
  HRX_PY_SUBMIT_SYNCHRONIZE,
  HRX_PY_SUBMIT_EVENT_SYNCHRONIZE,
  HRX_PY_SUBMIT_KERNEL_LAUNCH,
} hrx_py_submission_kind_t;

/* Uploads larger than this skip the attempt with the GIL: staging their
 * bytes is worth letting other threads run meanwhile. */
#define HRX_PY_UPLOAD_KEEP_GIL_BYTES (64u << 10)

/* How long a call that would wait is repeated with the GIL held before the
 * GIL is released (step 2 above). */
#define HRX_PY_KEEP_GIL_NS 100000u

/* One call. The objects it names are BORROWED from open handles: fill it
 * with the GIL held and pass it to hrx_py_submit before anything can
 * release the GIL (a handle closed meanwhile would free them);
 * hrx_py_submit retains them only when it releases the GIL. */
typedef struct hrx_py_submission_s {
  hrx_py_submission_kind_t kind;
  hrx_stream_t* stream;          /* borrowed (all but EVENT_SYNCHRONIZE) */
  hrx_view_t dst;                /* buffer borrowed (COPY, COPY_PEER, FILL,
                                    UPLOAD) */
  hrx_view_t src;                /* buffer borrowed (COPY, COPY_PEER, READ) */
  uint8_t byte;                  /* FILL */
  const void* data;              /* UPLOAD: borrowed host bytes */
  uint64_t length;               /* UPLOAD */
  hrx_event_t* event;            /* borrowed (WAIT_EVENT, EVENT_SYNCHRONIZE) */
  bool timing;                   /* RECORD_EVENT */
  hrx_event_t* out_event;        /* RECORD_EVENT result */
  hrx_graph_t* graph;            /* borrowed (GRAPH_LAUNCH) */
  hrx_completion_t* out_completion;  /* GRAPH_LAUNCH result */
  void* into;                    /* READ into caller memory (read_into):
                                    borrowed, `length` bytes; or NULL */
  hrx_readback_t* out_readback;  /* READ result */
  hrx_kernel_t* kernel;          /* borrowed (KERNEL_LAUNCH) */
  const hrx_launch_config_t* config;  /* KERNEL_LAUNCH */
  const hrx_kernel_arg_t* args;  /* KERNEL_LAUNCH: VIEW arguments' buffers
                                    borrowed */
  size_t arg_count;              /* KERNEL_LAUNCH */
} hrx_py_submission_t;

/* Runs the call as described above. Call with the GIL. Before the
 * blocking retry it retains the objects the call names (another thread
 * may close their handles while the GIL is released) and releases them
 * after it without the GIL (a last buffer release waits for queued work).
 * Returns 0, or -1 with an exception set: the core's failure, or what a
 * signal handler raised during the wait (KeyboardInterrupt). */
int hrx_py_submit(hrx_py_state_t* state, hrx_py_submission_t* submission);

/* Step 1 and 2 above for any call: attempt(arg) in non-blocking mode with
 * the GIL held, repeated while it reports a brief WOULD_BLOCK for up to
 * HRX_PY_KEEP_GIL_NS (not while host callbacks are in flight). Returns its
 * last status: a WOULD_BLOCK means the caller must release the GIL and
 * call blocking. Call with the GIL. */
hrx_status_t hrx_py_attempt_keeping_gil(hrx_status_t (*attempt)(void* arg),
                                        void* arg);

/* A call that asks the runtime (entry.h's runtime queries: a stream's,
 * event's or read's state) the way above: with the GIL kept unless host
 * callbacks are in flight, which the core reports as WOULD_BLOCK in
 * non-blocking mode; then with the GIL released, since on a GPU runtime
 * the call can wait behind a synchronizing one (a deferred free on the
 * cleanup thread) that waits for a callback, which needs the GIL.
 * hold(arg, true) before the GIL is released and hold(arg, false) after it
 * is taken back, both with the GIL: they keep what `arg` borrows from its
 * handle alive meanwhile (another thread may close the handle). Call with
 * the GIL; returns the call's status. */
hrx_status_t hrx_py_runtime_query(hrx_status_t (*query)(void* arg),
                                  void (*hold)(void* arg, bool held),
                                  void* arg);

#ifdef HRX_TESTING_BUILD
/* A new dict {(kind, reason): count} of the submissions that released the
 * GIL so far in this process (testing.c). */
PyObject* hrx_py_testing_gil_releases(void);
#endif

#endif /* HRX_PYTHON_SUBMIT_H_ */
