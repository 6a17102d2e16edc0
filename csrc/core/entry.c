/* The entry check (entry.h). */
#include "entry.h"

#include "live_device.h"
#include "base/nonblocking.h"
#include "base/status.h"
#include "base/thread_state.h"

void hrx_entry_callback_begin(void) {
  hrx_thread_state()->in_host_callback = true;
}

void hrx_entry_callback_end(void) {
  hrx_thread_state()->in_host_callback = false;
}

bool hrx_entry_in_callback(void) {
  return hrx_thread_state()->in_host_callback;
}

/* The refusal inside a host callback (entry.h). */
static hrx_status_t hrx_entry_check_in_callback(hrx_device_t* device,
                                                hrx_entry_kind_t kind,
                                                const char* what) {
  if (kind == HRX_ENTRY_QUERY) return NULL;
  if (kind == HRX_ENTRY_RUNTIME_QUERY) {
    if (device == NULL || hrx_device_callbacks_may_call_runtime(device)) {
      return NULL;
    }
    return hrx_make_status(
        HRX_STATUS_FAILED_PRECONDITION,
        "%s is not allowed inside a graph host callback on this backend: "
        "its runtime forbids runtime calls inside host functions "
        "(cudaLaunchHostFunc, hipLaunchHostFunc); query after the launch's "
        "completion instead",
        what);
  }
  return hrx_make_status(
      HRX_STATUS_FAILED_PRECONDITION,
      "%s is not allowed inside a graph host callback: the queue running "
      "the callback waits for it to return; do this after the launch's "
      "completion instead",
      what);
}

hrx_status_t hrx_entry_check_mode(hrx_device_t* device, hrx_entry_kind_t kind,
                                  const char* what, bool* out_nonblocking) {
  const hrx_thread_state_t* thread = hrx_thread_state();
  bool in_callback = thread->in_host_callback;
  bool nonblocking = thread->nonblocking;
  *out_nonblocking = nonblocking;
  if (device) HRX_RETURN_IF_ERROR(hrx_device_check_process(device));
  if (in_callback) return hrx_entry_check_in_callback(device, kind, what);
  /* nonblocking.h: a callback may need the caller's global lock, and work
   * queued behind it waits for it; the blocking retry waits without it. */
  if (nonblocking && kind != HRX_ENTRY_QUERY &&
      hrx_host_callbacks_in_flight()) {
    return hrx_would_block("host callbacks in flight");
  }
  return NULL;
}

hrx_status_t hrx_entry_check(hrx_device_t* device, hrx_entry_kind_t kind,
                             const char* what) {
  bool nonblocking;
  return hrx_entry_check_mode(device, kind, what, &nonblocking);
}

bool hrx_entry_release(hrx_device_t* device, void (*release)(void* object),
                       void* object) {
  if (hrx_device_is_stale(device)) return true; /* fork.h */
  if (!hrx_entry_in_callback()) return false;
  hrx_device_defer_release(device, release, object);
  return true;
}

bool hrx_entry_release_last(hrx_device_t* device, atomic_int* ref_count,
                            void (*release)(void* object), void* object,
                            bool destroy_may_wait) {
  if (device && hrx_entry_release(device, release, object)) return false;
  if (device && destroy_may_wait && hrx_thread_state()->nonblocking) {
    int count = atomic_load_explicit(ref_count, memory_order_relaxed);
    while (count > 1) {
      if (atomic_compare_exchange_weak_explicit(ref_count, &count, count - 1,
                                                memory_order_acq_rel,
                                                memory_order_relaxed)) {
        return false;
      }
    }
    /* The last reference: its destruction may wait. */
    hrx_device_defer_release(device, release, object);
    return false;
  }
  return atomic_fetch_sub_explicit(ref_count, 1, memory_order_acq_rel) == 1;
}
