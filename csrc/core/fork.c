/* pthread_atfork handlers: see fork.h. The registry lock is taken before
 * fork() and released on both sides, so the child never inherits it held by
 * a thread that does not exist there. */
#include "fork.h"

#include <pthread.h>

#include "base/status.h"

atomic_uint hrx_fork_generation;

/* In device.c: the registry's side of the handlers. */
void hrx_device_registry_lock(void);
void hrx_device_registry_unlock(void);
void hrx_device_registry_reset_in_child(void);

static void hrx_fork_prepare(void) { hrx_device_registry_lock(); }

static void hrx_fork_parent(void) { hrx_device_registry_unlock(); }

static void hrx_fork_child(void) {
  atomic_fetch_add_explicit(&hrx_fork_generation, 1, memory_order_relaxed);
  hrx_device_registry_reset_in_child();
}

static pthread_once_t hrx_fork_once = PTHREAD_ONCE_INIT;

static void hrx_fork_register(void) {
  pthread_atfork(hrx_fork_prepare, hrx_fork_parent, hrx_fork_child);
}

void hrx_fork_install(void) { pthread_once(&hrx_fork_once, hrx_fork_register); }

hrx_status_t hrx_fork_stale_error(const char* backend, int index) {
  return hrx_make_status(
      HRX_STATUS_FAILED_PRECONDITION,
      "device %s:%d was opened before this process was forked; a forked "
      "child cannot use its parent's devices, streams, buffers, events or "
      "reads (the host backend's worker threads and the GPU runtime do not "
      "survive fork()). Open a new device in the child (host backend), or "
      "start workers with the 'spawn' or 'forkserver' method",
      backend, index);
}
