#include "nonblocking.h"

#include <stdatomic.h>

#include "status.h"

static atomic_int hrx_host_callbacks;

bool hrx_thread_set_nonblocking(bool nonblocking) {
  hrx_thread_state_t* thread = hrx_thread_state();
  bool previous = thread->nonblocking;
  thread->nonblocking = nonblocking;
  return previous;
}

hrx_status_t hrx_would_block(const char* what) {
  /* Built without printf: a binding that keeps its global lock makes one
   * for every call that has to wait. */
  return hrx_status_make_prefixed(HRX_STATUS_WOULD_BLOCK,
                                  "a non-blocking submission would wait for ",
                                  what);
}

hrx_status_t hrx_would_block_briefly(const char* what) {
  return hrx_status_mark_brief(hrx_would_block(what));
}

void hrx_host_callbacks_queued(int delta) {
  atomic_fetch_add(&hrx_host_callbacks, delta);
}

bool hrx_host_callbacks_in_flight(void) {
  return atomic_load(&hrx_host_callbacks) > 0;
}
