/* The public calls on a device (hrx.h, hrx_device_*) that make the entry
 * check (entry.h) before anything else: open, release, synchronize, the
 * pool settings and the queries that ask the runtime. What they act on is
 * the live device's (live_device.h). */
#include <stdbool.h>

#include "backend_registry.h"
#include "base/status.h"
#include "batching.h"
#include "entry.h"
#include "failure.h"
#include "fork.h"
#include "live_device.h"
#include "wait.h"

hrx_status_t hrx_device_open(const char* backend_name, int index,
                             hrx_device_t** out_device) {
  const hrx_backend_t* backend = NULL;
  char selection[sizeof(((hrx_device_info_t*)0)->selection)];
  HRX_RETURN_IF_ERROR(
      hrx_entry_check(NULL, HRX_ENTRY_BLOCKING, "opening a device"));
  hrx_fork_install();
  HRX_RETURN_IF_ERROR(hrx_backend_select(backend_name, index, &backend,
                                         selection, sizeof(selection)));
  return hrx_live_device_open(backend, index, selection, out_device);
}

/* Releases one reference whose holder was already counted out; deferred
 * where the entry check says so (it then runs again on the cleanup
 * thread). */
static void hrx_device_release_reference(void* device) {
  if (hrx_entry_release(device, hrx_device_release_reference, device)) return;
  hrx_live_device_release(device);
}

void hrx_device_release_holder(hrx_device_t* device,
                               hrx_device_holder_t holder) {
  if (!device) return;
  hrx_device_uncount_holder(device, holder);
  hrx_device_release_reference(device);
}

void hrx_device_release(hrx_device_t* device) {
  hrx_device_release_holder(device, HRX_DEVICE_HOLDER_HANDLE);
}

hrx_status_t hrx_device_query_free_memory(hrx_device_t* device,
                                          uint64_t* out_free_bytes) {
  HRX_RETURN_IF_ERROR(hrx_entry_check(device, HRX_ENTRY_RUNTIME_QUERY,
                                      "querying free memory"));
  return hrx_device_backend(device)->vtable->query_free_memory(
      hrx_device_backend(device), out_free_bytes);
}

hrx_status_t hrx_device_synchronize(hrx_device_t* device,
                                    const hrx_wait_hook_t* hook,
                                    bool* out_interrupted) {
  bool interrupted = false;
  if (!out_interrupted) out_interrupted = &interrupted;
  *out_interrupted = false;
  HRX_RETURN_IF_ERROR(hrx_entry_check(device, HRX_ENTRY_BLOCKING,
                                      "synchronizing a device"));
  hrx_batch_thread_observed();
  /* Held transfers are published as the window allows; the queues'
   * waits below then cover them. */
  if (!hrx_pacer_wait_idle(hrx_device_pacer(device), hook, out_interrupted)) return NULL;
  hrx_flusher_publish_all(hrx_device_flusher(device));
  hrx_queue_pool_t* pool = hrx_device_pool(device);
  hrx_backend_device_t* backend = hrx_device_backend(device);
  enum { capacity = HRX_STREAM_LANE_COUNT * HRX_MAX_STREAM_QUEUE_COUNT };
  hrx_native_queue_t* queues[capacity];
  int n = hrx_queue_pool_snapshot(pool, queues, capacity);
  for (int i = 0; i < n && !*out_interrupted; ++i) {
    HRX_RETURN_IF_ERROR(
        hrx_wait_queue(backend, queues[i], hook,
                       out_interrupted));
  }
  /* Reserved queues may go with their streams meanwhile: the snapshot
   * keeps each alive until it is released here. */
  hrx_pool_queue_t* reserved[HRX_MAX_RESERVED_QUEUES];
  int r = hrx_queue_pool_snapshot_reserved(pool, reserved,
                                           HRX_MAX_RESERVED_QUEUES);
  hrx_status_t status = NULL;
  for (int i = 0; i < r && !status && !*out_interrupted; ++i) {
    status = hrx_wait_queue(backend, reserved[i]->native, hook,
                            out_interrupted);
  }
  for (int i = 0; i < r; ++i) {
    hrx_queue_pool_release_reserved(pool, reserved[i]);
  }
  if (*out_interrupted) return status;
  /* Releases callbacks deferred so far are done too: the memory they held
   * is free when this returns. */
  if (!hrx_wait_sliced(hrx_cleanup_wait_for, hrx_device_cleanup(device), hook,
                       out_interrupted)) {
    return status;
  }
  /* Failures of the device's streams that no observation raised yet. */
  return hrx_status_prefer(
      hrx_failure_list_take_all(hrx_device_failures(device)), status);
}

/* A pool setting refused after first use (BUSY) gains what keeps the live
 * device alive and how to let it go; other statuses pass unchanged. */
static hrx_status_t hrx_device_explain_busy(hrx_device_t* device,
                                            hrx_status_t status) {
  if (!status || hrx_status_code(status) != HRX_STATUS_BUSY) return status;
  char holders[512];
  hrx_device_describe_holders(device, holders, sizeof(holders));
  hrx_status_t explained = hrx_make_status(
      HRX_STATUS_BUSY,
      "%s. The live device is held by: %s. To start afresh, close or drop "
      "every one of them (close() streams and device handles, del the "
      "others and every variable that refers to them, gc.collect() for "
      "reference cycles), then open the device again",
      hrx_status_message(status), holders);
  hrx_status_free(status);
  return explained;
}

hrx_status_t hrx_device_set_stream_queue_count(hrx_device_t* device,
                                               int64_t count) {
  HRX_RETURN_IF_ERROR(hrx_entry_check(device, HRX_ENTRY_QUERY,
                                      "setting the stream queue count"));
  return hrx_device_explain_busy(
      device, hrx_queue_pool_set_count(hrx_device_pool(device), count));
}

hrx_status_t hrx_device_set_stream_queue_policy(hrx_device_t* device,
                                                int policy) {
  HRX_RETURN_IF_ERROR(hrx_entry_check(device, HRX_ENTRY_QUERY,
                                      "setting the stream queue policy"));
  return hrx_device_explain_busy(
      device, hrx_queue_pool_set_policy(hrx_device_pool(device), policy));
}

hrx_status_t hrx_device_query_pool_stats(hrx_device_t* device,
                                         hrx_pool_queue_stats_t* out_queues,
                                         int capacity,
                                         hrx_pool_stats_t* out_stats) {
  HRX_RETURN_IF_ERROR(hrx_entry_check(device, HRX_ENTRY_RUNTIME_QUERY,
                                      "querying pool statistics"));
  return hrx_queue_pool_stats(hrx_device_pool(device), out_queues, capacity,
                              out_stats);
}
