/* The live-device registry. A live device exists per (backend, index) while
 * any reference to it exists; every stream, buffer, event and readback holds
 * one. The registry lock guards the list and every device's reference count,
 * so an open never revives a device that is being torn down. */
#include "live_device.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/driver.h"
#include "cleanup.h"
#include "pinned.h"
#include "fork.h"
#include "kernel_cache.h"
#include "result_memory.h"
#include "staged_transfer.h"
#include "base/nonblocking.h"
#include "base/status.h"
#include "failure.h"
#include "base/thread_state.h"

#ifdef HRX_TESTING_BUILD
#include "testing/hrx_testing.h"
#endif

struct hrx_device_s {
  int ref_count;                   /* guarded by hrx_registry_mutex */
  int holders[HRX_DEVICE_HOLDER_COUNT]; /* references by holder kind; the
                                      rest of ref_count are releases not yet
                                      run; guarded by hrx_registry_mutex */
  struct hrx_device_s* next;       /* registry list; guarded likewise */
  hrx_cleanup_t* cleanup;          /* owned: deferred releases, staging
                                      warm-up (cleanup.h) */
  hrx_failure_list_t failures;     /* streams holding an unraised
                                      failure (failure.h) */
  hrx_staging_pool_t* staging;     /* owned: read staging */
  hrx_staged_copier_t* copier;     /* owned: pipelined host copies
                                      (staged_transfer.h) */

  hrx_pinned_t* pinned;            /* owned: pinned host memory (pinned.h) */
  const hrx_backend_t* backend_type; /* static */
  int index;
  unsigned generation;             /* hrx_fork_current() at creation */
  hrx_backend_device_t* backend;   /* owned */
  hrx_queue_pool_t pool;           /* owned */
  hrx_device_info_t info;          /* immutable after open */
  hrx_batch_settings_t batch;      /* immutable after open */
  atomic_bool batching;            /* the switch; starts at batch.enabled */
  bool batches_launches;           /* launches join batches while the
                                      switch is on; immutable after open */
  hrx_flusher_t* flusher;          /* owned */
  hrx_pacer_t* pacer;              /* owned: paced transfers (pacing.h) */
  hrx_kernel_cache_t* kernels;     /* owned: compiled kernel modules */
  atomic_uint_least64_t commands;  /* handed to native queues */
  /* The staging warm-up (staging.h): whether this device has one
   * (immutable after open), and whether its first stream queued it. */
  bool warms_staging;
  atomic_bool staging_warm_queued;
};

/* Whether launches are gathered: the user's HRX_BATCH_LAUNCHES, else the
 * driver's default; never without the driver's launch_batch. */
static bool hrx_device_launch_batching_at_open(hrx_device_t* device) {
  const hrx_hal_kernel_vtable_t* kernel = &device->backend->vtable->kernel;
  if (!kernel->launch || !kernel->launch_batch) return false;
  if (device->batch.launches >= 0) return device->batch.launches == 1;
  return kernel->launch_batch_by_default &&
         kernel->launch_batch_by_default(device->backend);
}

/* info.launch_publication when launches are not gathered: why. */
static void hrx_device_describe_unbatched_launches(hrx_device_t* device,
                                                   char* text,
                                                   size_t capacity) {
  const hrx_hal_kernel_vtable_t* kernel = &device->backend->vtable->kernel;
  if (!kernel->launch) {
    snprintf(text, capacity, "no kernels on this backend");
  } else if (!kernel->launch_batch) {
    snprintf(text, capacity,
             "one native launch each: this backend gathers no launches");
  } else if (device->batch.launches == 0) {
    snprintf(text, capacity, "one native launch each (HRX_BATCH_LAUNCHES=0)");
  } else {
    snprintf(text, capacity,
             "one native launch each: gathering launches is off by default "
             "on this platform (HRX_BATCH_LAUNCHES=1 turns it on)");
  }
}

static pthread_mutex_t hrx_registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static hrx_device_t* hrx_registry_head = NULL;

void hrx_device_registry_lock(void) { pthread_mutex_lock(&hrx_registry_mutex); }

void hrx_device_registry_unlock(void) {
  pthread_mutex_unlock(&hrx_registry_mutex);
}

/* In a forked child, holding the lock taken before fork(): the parent's
 * devices are left out of the registry (and never torn down here). */
void hrx_device_registry_reset_in_child(void) {
  hrx_registry_head = NULL;
  pthread_mutex_unlock(&hrx_registry_mutex);
}

bool hrx_device_is_stale(const hrx_device_t* device) {
  return device->generation != hrx_fork_current();
}

hrx_status_t hrx_device_check_process(const hrx_device_t* device) {
  if (!hrx_device_is_stale(device)) return NULL;
  return hrx_fork_stale_error(device->info.backend, device->index);
}

static hrx_device_t* hrx_registry_find_locked(const hrx_backend_t* backend,
                                              int index) {
  for (hrx_device_t* d = hrx_registry_head; d; d = d->next) {
    if (d->backend_type == backend && d->index == index) return d;
  }
  return NULL;
}

/* Create and link happen under the registry lock (hrx_live_device_open). */
static hrx_status_t hrx_device_create(const hrx_backend_t* backend_type,
                                      int index, const char* selection,
                                      hrx_device_t** out_device) {
  hrx_device_t* device = calloc(1, sizeof(*device));
  if (!device) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY, "cannot allocate device");
  }
  device->ref_count = 1;
  device->holders[HRX_DEVICE_HOLDER_HANDLE] = 1;
  atomic_init(&device->commands, 0);
  hrx_failure_list_initialize(&device->failures);
  device->backend_type = backend_type;
  device->index = index;
  device->generation = hrx_fork_current();
  /* The core's settings first: a malformed one fails the open before any
   * native work. */
  hrx_chunk_settings_t chunking;
  hrx_staged_copy_settings_t staged_copy;
  uint64_t staging_cache_bytes = 0;
  uint64_t pinned_cache_bytes = 0;
  uint64_t result_cache_bytes = 0;  /* checked here, read by its pool */
  hrx_status_t status = hrx_batch_settings_from_environment(&device->batch);
  if (!status) status = hrx_chunk_settings_from_environment(&chunking);
  if (!status) {
    status = hrx_staging_cache_bytes_from_environment(&staging_cache_bytes);
  }
  if (!status) status = hrx_staged_copy_settings_from_environment(&staged_copy);
  if (!status) status = hrx_staged_copier_create(&staged_copy, &device->copier);

  if (!status) {
    status = hrx_pinned_cache_bytes_from_environment(&pinned_cache_bytes);
  }
  if (!status) {
    status = hrx_result_cache_bytes_from_environment(&result_cache_bytes);
  }
  if (status) {
    hrx_staged_copier_destroy(device->copier);
    free(device);
    return status;
  }
  hrx_hal_device_settings_t settings = {
      .batching = device->batch.enabled,
      .streaming_copies = staged_copy.streaming};
  hrx_hal_opened_device_t opened = {0};
  status = hrx_hal_device_open(backend_type, index, &settings, &opened);
  if (!status) {
    device->backend = opened.device;
    status =
        device->backend->vtable->query_info(device->backend, &device->info);
    if (status) device->backend->vtable->destroy(device->backend);
  }
  if (status) {
    hrx_staged_copier_destroy(device->copier);
    free(device);
    return status;
  }
  if (!status) {
    status = hrx_pacer_create(device->backend, &chunking, &device->pacer);
  }
  if (!status) {
    status = hrx_flusher_create(device->batch.delay_ns, &device->flusher);
    if (status) hrx_pacer_destroy(device->pacer);
  }
  if (!status) {
    status = hrx_cleanup_create(&device->cleanup);
    if (status) {
      hrx_flusher_destroy(device->flusher);
      hrx_pacer_destroy(device->pacer);
    }
  }
  if (!status) {
    status = hrx_staging_pool_create(device->backend, staging_cache_bytes,
                                     device->cleanup, &device->staging);
    if (status) {
      hrx_cleanup_destroy(device->cleanup);
      hrx_flusher_destroy(device->flusher);
      hrx_pacer_destroy(device->pacer);
    }
  }
  if (!status) {
    status = hrx_pinned_create(device, device->backend, pinned_cache_bytes,
                               device->cleanup, &device->pinned);
    if (status) {
      hrx_staging_pool_detach_cleanup(device->staging);
      hrx_cleanup_destroy(device->cleanup);
      hrx_staging_pool_destroy(device->staging);
      hrx_flusher_destroy(device->flusher);
      hrx_pacer_destroy(device->pacer);
    }
  }
  if (!status) {
    status = hrx_kernel_cache_create(&device->kernels);
    if (status) {
      hrx_pinned_detach_cleanup(device->pinned);
      hrx_staging_pool_detach_cleanup(device->staging);
      hrx_cleanup_destroy(device->cleanup);
      hrx_staging_pool_destroy(device->staging);
      hrx_pinned_destroy(device->pinned);
      hrx_flusher_destroy(device->flusher);
      hrx_pacer_destroy(device->pacer);
    }
  }
  /* With every native call numbered (fault injection), no warm-up: it would
   * run at a time of its own. */
  device->warms_staging = !opened.calls_numbered;
  atomic_init(&device->staging_warm_queued, false);
  if (status) {
    device->backend->vtable->destroy(device->backend);
    hrx_staged_copier_destroy(device->copier);
    free(device);
    return status;
  }
  atomic_init(&device->batching, device->batch.enabled);
  device->batches_launches = hrx_device_launch_batching_at_open(device);
  if (!device->backend->vtable->kernel.launch) {
    /* No kernels run here: no launch limits either (hrx.h). */
    device->info.max_threads_per_block = 0;
    memset(device->info.max_block_dim, 0, sizeof(device->info.max_block_dim));
    memset(device->info.max_grid_dim, 0, sizeof(device->info.max_grid_dim));
    device->info.max_shared_bytes_per_block = 0;
  }
  device->info.index = index;
  device->info.device_count = hrx_device_backend_count(device);
  snprintf(device->info.selection, sizeof(device->info.selection), "%s",
           selection);
  hrx_queue_pool_initialize(device->backend, &device->pool);
  *out_device = device;
  return NULL;
}


hrx_status_t hrx_live_device_open(const hrx_backend_t* backend, int index,
                                  const char* selection,
                                  hrx_device_t** out_device) {
  hrx_status_t status = NULL;
  pthread_mutex_lock(&hrx_registry_mutex);
  hrx_device_t* device = hrx_registry_find_locked(backend, index);
  if (device) {
    device->ref_count++;
    device->holders[HRX_DEVICE_HOLDER_HANDLE]++;
  } else {
    /* Opening under the registry lock keeps one live device per key. */
    status = hrx_device_create(backend, index, selection, &device);
    if (!status) {
      device->next = hrx_registry_head;
      hrx_registry_head = device;
    }
  }
  pthread_mutex_unlock(&hrx_registry_mutex);
  if (!status) *out_device = device;
  return status;
}

void hrx_device_stream_created(hrx_device_t* device) {
  if (!device->warms_staging ||
      atomic_load_explicit(&device->staging_warm_queued,
                           memory_order_relaxed) ||
      atomic_exchange(&device->staging_warm_queued, true)) {
    return;
  }
  hrx_staging_pool_begin_warm(device->staging);
  if (!hrx_cleanup_queue(device->cleanup, hrx_staging_pool_warm,
                         device->staging)) {
    hrx_staging_pool_end_warm(device->staging); /* cold (out of memory) */
  }
}

void hrx_device_retain(hrx_device_t* device) {
  hrx_device_retain_holder(device, HRX_DEVICE_HOLDER_HANDLE);
}

void hrx_device_retain_holder(hrx_device_t* device,
                              hrx_device_holder_t holder) {
  if (!device) return;
  pthread_mutex_lock(&hrx_registry_mutex);
  device->ref_count++;
  device->holders[holder]++;
  pthread_mutex_unlock(&hrx_registry_mutex);
}

void hrx_device_uncount_holder(hrx_device_t* device,
                               hrx_device_holder_t holder) {
  pthread_mutex_lock(&hrx_registry_mutex);
  device->holders[holder]--;
  pthread_mutex_unlock(&hrx_registry_mutex);
}

void hrx_device_describe_holders(hrx_device_t* device, char* text,
                                 size_t capacity) {
  static const char* const names[HRX_DEVICE_HOLDER_COUNT][2] = {
      {"device handle", "device handles"}, {"stream", "streams"},
      {"buffer", "buffers"},               {"event", "events"},
      {"graph", "graphs"},                 {"kernel", "kernels"},
      {"pending read", "pending reads"}};
  int counts[HRX_DEVICE_HOLDER_COUNT];
  pthread_mutex_lock(&hrx_registry_mutex);
  int pending = device->ref_count;
  for (int i = 0; i < HRX_DEVICE_HOLDER_COUNT; ++i) {
    counts[i] = device->holders[i];
    pending -= counts[i];
  }
  pthread_mutex_unlock(&hrx_registry_mutex);
  size_t used = 0;
  text[0] = '\0';
  for (int i = 0; i <= HRX_DEVICE_HOLDER_COUNT; ++i) {
    int count = i < HRX_DEVICE_HOLDER_COUNT ? counts[i] : pending;
    if (count <= 0 || used >= capacity) continue;
    const char* name = i < HRX_DEVICE_HOLDER_COUNT
                           ? names[i][count != 1]
                           : (count == 1 ? "release not yet run"
                                         : "releases not yet run");
    int n = snprintf(text + used, capacity - used, "%s%d %s",
                     used ? ", " : "", count, name);
    if (n > 0) used += (size_t)n;
  }
}


/* Tears down a device whose last reference is gone (it is out of the
 * registry). Also a task of the device's cleanup thread. */
static void hrx_device_teardown(void* arg) {
  hrx_device_t* device = arg;
  /* No stream, buffer, event or deferred release is left: they all held
   * references. What the cleanup thread still has queued (staging
   * warm-up) runs before it stops; on the cleanup thread itself it ends
   * after the task that called this. Staging evicted from now on is kept
   * until the pool goes. */
  hrx_staging_pool_detach_cleanup(device->staging);
  hrx_pinned_detach_cleanup(device->pinned);
  hrx_cleanup_destroy(device->cleanup);
  hrx_flusher_destroy(device->flusher);
  /* Nothing is held (every stream is gone); its threads end once the
   * chunks in flight completed, before the queues and staging go. */
  hrx_pacer_destroy(device->pacer);
  hrx_queue_pool_deinitialize(&device->pool);
  /* Every queue waited for its work: staging is no longer written, and no
   * launch of a cached module is left. */
  hrx_staging_pool_destroy(device->staging);
  /* No call is in progress (they held references): no copy either. */
  hrx_staged_copier_destroy(device->copier);

  /* No pinned range is left: each held a reference. */
  hrx_pinned_destroy(device->pinned);
  hrx_kernel_cache_destroy(device->kernels);
  device->backend->vtable->destroy(device->backend);
  hrx_failure_list_deinitialize(&device->failures);
  free(device);
}

void hrx_live_device_release(hrx_device_t* device) {
  /* A thread the teardown joins (the pacer's, the flusher's) neither waits
   * nor tears down: a last release there goes to the cleanup thread, as a
   * non-blocking one does. */
  bool nonblocking = hrx_nonblocking() || hrx_thread_state()->device_thread;
  bool on_cleanup = hrx_cleanup_on_thread(device->cleanup);
  pthread_mutex_lock(&hrx_registry_mutex);
  /* Releases deferred by callbacks hold references (each at least one).
   * When they may be all that is left besides this one, let the cleanup
   * thread run them first, so that the last handle's release is the one
   * that tears the device down (the pool contract's rule 9). A task of the
   * cleanup thread never waits for its own thread; a non-blocking release
   * never waits. */
  if (!nonblocking && !on_cleanup &&
      (uint64_t)(device->ref_count - 1) <=
          hrx_cleanup_pending(device->cleanup)) {
    pthread_mutex_unlock(&hrx_registry_mutex);
    hrx_cleanup_wait(device->cleanup);
    pthread_mutex_lock(&hrx_registry_mutex);
  }
  bool last = --device->ref_count == 0;
  if (last) {
    /* Out of the registry now: the next open starts a fresh device. */
    hrx_device_t** link = &hrx_registry_head;
    while (*link != device) link = &(*link)->next;
    *link = device->next;
  }
  pthread_mutex_unlock(&hrx_registry_mutex);
  if (!last) return;
  /* The teardown waits for the queues: in non-blocking mode the cleanup
   * thread does it (and then ends). */
  if (nonblocking && !on_cleanup &&
      hrx_cleanup_queue(device->cleanup, hrx_device_teardown, device)) {
    return;
  }
  hrx_device_teardown(device);
}

bool hrx_device_has_deferred_releases(hrx_device_t* device) {
  return hrx_cleanup_busy(device->cleanup);
}

void hrx_device_defer_release(hrx_device_t* device,
                              void (*release)(void* object), void* object) {
  if (hrx_cleanup_queue(device->cleanup, release, object)) return;
  /* Neither releasing here (it would wait for this callback's queue) nor
   * keeping a record is possible: the object stays alive. */
  fprintf(stderr,
          "hrx: out of memory deferring a release made in a host "
          "callback; the object is kept alive\n");
}

hrx_failure_list_t* hrx_device_failures(hrx_device_t* device) {
  return &device->failures;
}

hrx_cleanup_t* hrx_device_cleanup(hrx_device_t* device) {
  return device->cleanup;
}

int hrx_device_backend_count(const hrx_device_t* device) {
  int count = 0;
  hrx_status_free(device->backend_type->load(true, &count));
  return count > device->index ? count : device->index + 1;
}

hrx_kernel_cache_t* hrx_device_kernel_cache(hrx_device_t* device) {
  return device->kernels;
}

hrx_staging_pool_t* hrx_device_staging(hrx_device_t* device) {
  return device->staging;
}

hrx_staged_copier_t* hrx_device_staged_copier(hrx_device_t* device) {
  return device->copier;
}

hrx_pinned_t* hrx_device_pinned(hrx_device_t* device) {
  return device->pinned;
}

bool hrx_device_callbacks_may_call_runtime(const hrx_device_t* device) {
  return device->backend_type->host_functions_may_call_runtime;
}

hrx_backend_device_t* hrx_device_backend(hrx_device_t* device) {
  return device->backend;
}

hrx_queue_pool_t* hrx_device_pool(hrx_device_t* device) {
  return &device->pool;
}

const hrx_device_info_t* hrx_device_info(hrx_device_t* device) {
  return &device->info;
}

hrx_status_t hrx_device_check_same(hrx_device_t* expected,
                                   hrx_device_t* other, const char* role,
                                   const char* holder, const char* rule) {
  if (other == expected) return NULL;
  return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                         "%s belongs to device %s:%d, but %s device %s:%d; %s",
                         role, other->info.backend, other->info.index, holder,
                         expected->info.backend, expected->info.index, rule);
}

hrx_status_t hrx_device_check_same_backend(hrx_device_t* expected,
                                           hrx_device_t* other,
                                           const char* role,
                                           const char* holder,
                                           const char* rule) {
  if (other->backend_type == expected->backend_type) return NULL;
  return hrx_device_check_same(expected, other, role, holder, rule);
}

const char* hrx_peer_path_name(int path) {
  switch (path) {
    case HRX_PEER_PATH_DIRECT:
      return "direct";
    case HRX_PEER_PATH_PEER:
      return "peer";
    case HRX_PEER_PATH_STAGED:
      return "staged";
  }
  return NULL;
}

hrx_status_t hrx_device_query_peer_path(hrx_device_t* device, int other_index,
                                        hrx_peer_path_t* out_path) {
  const hrx_device_info_t* info = &device->info;
  int count = hrx_device_backend_count(device);
  if (other_index < 0 || other_index >= count) {
    return hrx_make_status(HRX_STATUS_OUT_OF_RANGE,
                           "device index %d is out of range: backend '%s' has "
                           "%d device%s (valid: 0..%d)",
                           other_index, info->backend, count,
                           count == 1 ? "" : "s", count - 1);
  }
  if (other_index == device->index) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "device %s:%d is this device; a copy path is "
                           "between two devices",
                           info->backend, other_index);
  }
  HRX_RETURN_IF_ERROR(hrx_device_check_process(device));
  const hrx_backend_vtable_t* vtable = device->backend->vtable;
  if (!vtable->peer_path) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "the %s backend cannot copy between devices",
                           info->backend);
  }
  return vtable->peer_path(device->backend, other_index, out_path);
}

void hrx_device_count_commands(hrx_device_t* device, uint64_t count) {
  atomic_fetch_add_explicit(&device->commands, count, memory_order_relaxed);
}

#ifdef HRX_TESTING_BUILD
uint64_t hrx_device_commands_submitted(hrx_device_t* device) {
  /* Commands waiting in pending batches are counted when their batch is
   * published: publish them all first. */
  hrx_flusher_publish_all(device->flusher);
  return atomic_load_explicit(&device->commands, memory_order_relaxed);
}
#endif /* HRX_TESTING_BUILD */

hrx_status_t hrx_device_query_info(hrx_device_t* device,
                                   hrx_device_info_t* out_info) {
  *out_info = device->info;
  out_info->device_count = hrx_device_backend_count(device);
  /* batch_publication may settle after open (the hip backend prepares its
   * kernel with the native context): take the backend's current text. */
  hrx_device_info_t now;
  hrx_status_t status =
      device->backend->vtable->query_info(device->backend, &now);
  if (status) {
    hrx_status_free(status);
  } else {
    memcpy(out_info->batch_publication, now.batch_publication,
           sizeof(out_info->batch_publication));
  }
  if (!device->batches_launches) {
    hrx_device_describe_unbatched_launches(
        device, out_info->launch_publication,
        sizeof(out_info->launch_publication));
  }
  return NULL;
}


const hrx_batch_settings_t* hrx_device_batch_settings(hrx_device_t* device) {
  return &device->batch;
}

hrx_pacer_t* hrx_device_pacer(hrx_device_t* device) {
  return device->pacer;
}

hrx_flusher_t* hrx_device_flusher(hrx_device_t* device) {
  return device->flusher;
}

void hrx_device_set_batching(hrx_device_t* device, bool enabled) {
  atomic_store(&device->batching, enabled);
  /* Work batched before the switch goes out now, not at its deadline. */
  if (!enabled) hrx_flusher_publish_all(device->flusher);
}

bool hrx_device_batching(hrx_device_t* device) {
  return atomic_load_explicit(&device->batching, memory_order_relaxed);
}

bool hrx_device_batches_launches(hrx_device_t* device) {
  return device->batches_launches && hrx_device_batching(device);
}



int hrx_device_stream_queue_count(hrx_device_t* device) {
  /* A stale device's pool lock may be held by a thread lost in the fork. */
  if (hrx_device_is_stale(device)) return device->pool.count;
  return hrx_queue_pool_count(&device->pool);
}

void hrx_device_query_pool(hrx_device_t* device, hrx_pool_info_t* out_info) {
  hrx_queue_pool_query(&device->pool, out_info);
}


hrx_queue_policy_t hrx_device_stream_queue_policy(hrx_device_t* device) {
  /* A stale device's pool lock may be held by a thread lost in the fork. */
  if (hrx_device_is_stale(device)) return device->pool.policy;
  return hrx_queue_pool_policy(&device->pool);
}

