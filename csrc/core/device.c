/* The live-device registry. A live device exists per (backend, index) while
 * any reference to it exists; every stream, buffer, event and readback holds
 * one. The registry lock guards the list and every device's reference count,
 * so an open never revives a device that is being torn down. */
#include "device.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_registry.h"
#include "entry.h"
#include "fork.h"
#include "kernel_cache.h"
#include "status.h"
#include "stream.h"
#include "thread_state.h"
#include "wait.h"

#ifdef HRX_TESTING_BUILD
#include "backends/fault/fault_backend.h"
#include "testing/hrx_testing.h"
#endif

/* A release made on a host-callback thread, run later on another thread
 * (entry.h). */
typedef struct hrx_deferred_release_s {
  void (*release)(void* object);
  void* object;                    /* the reference handed over */
  struct hrx_deferred_release_s* next;
} hrx_deferred_release_t;

struct hrx_device_s {
  int ref_count;                   /* guarded by hrx_registry_mutex */
  struct hrx_device_s* next;       /* registry list; guarded likewise */
  pthread_mutex_t release_mutex;
  hrx_deferred_release_t* releases;  /* owned, newest first; release_mutex */
  atomic_bool has_releases;        /* releases != NULL, read without lock */
  bool release_helper;             /* a helper thread drains; release_mutex */
  pthread_cond_t helper_done;      /* release_helper became false */
  atomic_int draining;             /* threads running deferred releases;
                                      written under release_mutex */
  pthread_cond_t drained;          /* draining became 0 */
  pthread_mutex_t failure_mutex;
  hrx_failure_link_t* failed;      /* streams holding an unraised failure;
                                      failure_mutex */
  hrx_staging_pool_t* staging;     /* owned: read staging */
  const hrx_backend_t* backend_type; /* static */
  int index;
  unsigned generation;             /* hrx_fork_current() at creation */
  hrx_backend_device_t* backend;   /* owned */
  hrx_queue_pool_t pool;           /* owned */
  hrx_device_info_t info;          /* immutable after open */
  hrx_batch_settings_t batch;      /* immutable after open */
  atomic_bool batching;            /* the switch; starts at batch.enabled */
  hrx_flusher_t* flusher;          /* owned */
  hrx_kernel_cache_t* kernels;     /* owned: compiled kernel modules */
  atomic_uint_least64_t commands;  /* handed to native queues */
};

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

/* The backend's device count now (a host backend's HRX_HOST_DEVICE_COUNT
 * may grow), at least enough for this device. The backend is loaded (the
 * device's open selected it), so this only reads the count. */
static int hrx_device_backend_count(const hrx_device_t* device) {
  int count = 0;
  hrx_status_free(device->backend_type->load(true, &count));
  return count > device->index ? count : device->index + 1;
}

static hrx_status_t hrx_device_create(const hrx_backend_t* backend_type,
                                      int index, const char* selection,
                                      hrx_device_t** out_device) {
  hrx_device_t* device = calloc(1, sizeof(*device));
  if (!device) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY, "cannot allocate device");
  }
  device->ref_count = 1;
  atomic_init(&device->commands, 0);
  atomic_init(&device->has_releases, false);
  pthread_mutex_init(&device->release_mutex, NULL);
  pthread_cond_init(&device->helper_done, NULL);
  pthread_cond_init(&device->drained, NULL);
  atomic_init(&device->draining, 0);
  pthread_mutex_init(&device->failure_mutex, NULL);
  device->backend_type = backend_type;
  device->index = index;
  device->generation = hrx_fork_current();
  hrx_status_t status = backend_type->device_open(index, &device->backend);
  if (!status) {
#ifdef HRX_TESTING_BUILD
    /* The testing build only: $HRX_FAULTS wraps the backend device in
     * fault injection. */
    status = hrx_fault_wrap_from_env(&device->backend);
#endif
    if (!status) {
      status =
          device->backend->vtable->query_info(device->backend, &device->info);
    }
    if (status) device->backend->vtable->destroy(device->backend);
  }
  if (status) {
    free(device);
    return status;
  }
  status = hrx_batch_settings_from_environment(&device->batch);
  if (!status) {
    status = hrx_flusher_create(device->batch.delay_ns, &device->flusher);
  }
  if (!status) {
    status = hrx_staging_pool_create(device->backend, &device->staging);
    if (status) hrx_flusher_destroy(device->flusher);
  }
  if (!status) {
    status = hrx_kernel_cache_create(&device->kernels);
    if (status) {
      hrx_staging_pool_destroy(device->staging);
      hrx_flusher_destroy(device->flusher);
    }
  }
  if (status) {
    device->backend->vtable->destroy(device->backend);
    free(device);
    return status;
  }
  atomic_init(&device->batching, device->batch.enabled);
  if (!device->backend->vtable->kernel_launch) {
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

hrx_status_t hrx_device_open(const char* backend_name, int index,
                             hrx_device_t** out_device) {
  const hrx_backend_t* backend = NULL;
  char selection[sizeof(((hrx_device_info_t*)0)->selection)];
  HRX_RETURN_IF_ERROR(
      hrx_entry_check(NULL, HRX_ENTRY_BLOCKING, "opening a device"));
  hrx_fork_install();
  HRX_RETURN_IF_ERROR(hrx_backend_select(backend_name, index, &backend,
                                         selection, sizeof(selection)));
  hrx_status_t status = NULL;
  pthread_mutex_lock(&hrx_registry_mutex);
  hrx_device_t* device = hrx_registry_find_locked(backend, index);
  if (device) {
    device->ref_count++;
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

void hrx_device_retain(hrx_device_t* device) {
  if (!device) return;
  pthread_mutex_lock(&hrx_registry_mutex);
  device->ref_count++;
  pthread_mutex_unlock(&hrx_registry_mutex);
}

static void hrx_device_release_object(void* device) {
  hrx_device_release(device);
}

/* The thread's on_release_helper and drain_depth are thread_state.h's. */

void hrx_device_release(hrx_device_t* device) {
  if (!device) return;
  if (hrx_entry_release(device, hrx_device_release_object, device)) return;
  /* A call from a thread that may wait: releases deferred by callbacks go
   * first (they hold references to the device), and a helper draining
   * them finishes first, so that the last reference is dropped here and
   * the device is gone when this returns (the pool contract's rule 9). */
  hrx_device_run_deferred_releases(device);
  const hrx_thread_state_t* thread = hrx_thread_state();
  if (!thread->on_release_helper && thread->drain_depth == 0) {
    pthread_mutex_lock(&device->release_mutex);
    while (device->release_helper) {
      pthread_cond_wait(&device->helper_done, &device->release_mutex);
    }
    pthread_mutex_unlock(&device->release_mutex);
  }
  pthread_mutex_lock(&hrx_registry_mutex);
  bool last = --device->ref_count == 0;
  if (last) {
    hrx_device_t** link = &hrx_registry_head;
    while (*link != device) link = &(*link)->next;
    *link = device->next;
  }
  pthread_mutex_unlock(&hrx_registry_mutex);
  if (!last) return;
  /* No stream, buffer, event or deferred release is left: they all held
   * references. */
  hrx_flusher_destroy(device->flusher);
  hrx_queue_pool_deinitialize(&device->pool);
  /* Every queue waited for its work: staging is no longer written, and no
   * launch of a cached module is left. */
  hrx_staging_pool_destroy(device->staging);
  hrx_kernel_cache_destroy(device->kernels);
  device->backend->vtable->destroy(device->backend);
  pthread_mutex_destroy(&device->release_mutex);
  pthread_cond_destroy(&device->helper_done);
  pthread_cond_destroy(&device->drained);
  pthread_mutex_destroy(&device->failure_mutex);
  free(device);
}

bool hrx_device_has_deferred_releases(hrx_device_t* device) {
  return atomic_load_explicit(&device->has_releases, memory_order_acquire) ||
         atomic_load_explicit(&device->draining, memory_order_acquire);
}

void hrx_device_run_deferred_releases(hrx_device_t* device) {
  if (!hrx_device_has_deferred_releases(device)) return;
  /* Inside a drain, the outer call finishes the list. */
  hrx_thread_state_t* thread = hrx_thread_state();
  if (thread->drain_depth) return;
  thread->drain_depth++;
  pthread_mutex_lock(&device->release_mutex);
  for (;;) {
    if (device->releases) {
      hrx_deferred_release_t* list = device->releases;
      device->releases = NULL;
      /* Draining is counted before the list is marked empty, so that
       * hrx_device_has_deferred_releases never sees neither. */
      atomic_fetch_add(&device->draining, 1);
      atomic_store(&device->has_releases, false);
      pthread_mutex_unlock(&device->release_mutex);
      /* Oldest first. */
      hrx_deferred_release_t* ordered = NULL;
      while (list) {
        hrx_deferred_release_t* next = list->next;
        list->next = ordered;
        ordered = list;
        list = next;
      }
      while (ordered) {
        hrx_deferred_release_t* next = ordered->next;
        ordered->release(ordered->object);
        free(ordered);
        ordered = next;
      }
      pthread_mutex_lock(&device->release_mutex);
      if (atomic_fetch_sub(&device->draining, 1) == 1) {
        pthread_cond_broadcast(&device->drained);
      }
      continue;
    }
    /* Releases another thread took are finished before this call goes on,
     * so that they are done by the time it returns. */
    if (atomic_load(&device->draining) == 0) break;
    pthread_cond_wait(&device->drained, &device->release_mutex);
  }
  pthread_mutex_unlock(&device->release_mutex);
  thread->drain_depth--;
}

/* Drains the device's deferred releases when no other call comes, then
 * drops the reference its starter took for it. It says it is done only
 * after that drop, unless the drop was the last (then nobody can be
 * waiting: a waiter holds a reference). */
static void* hrx_device_release_helper(void* arg) {
  hrx_device_t* device = arg;
  hrx_thread_state()->on_release_helper = true;
  for (;;) {
    hrx_device_run_deferred_releases(device);
    pthread_mutex_lock(&device->release_mutex);
    bool more = device->releases != NULL;
    pthread_mutex_unlock(&device->release_mutex);
    if (!more) break;
  }
  pthread_mutex_lock(&hrx_registry_mutex);
  bool last = device->ref_count == 1;
  if (!last) device->ref_count--;
  pthread_mutex_unlock(&hrx_registry_mutex);
  pthread_mutex_lock(&device->release_mutex);
  device->release_helper = false;
  pthread_cond_broadcast(&device->helper_done);
  pthread_mutex_unlock(&device->release_mutex);
  /* Ours was the only reference left: tear the device down here. */
  if (last) hrx_device_release(device);
  return NULL;
}

void hrx_device_defer_release(hrx_device_t* device,
                              void (*release)(void* object), void* object) {
  hrx_deferred_release_t* entry = malloc(sizeof(*entry));
  if (!entry) {
    /* Neither releasing here (it would wait for this callback's queue) nor
     * keeping a record is possible: the object stays alive. */
    fprintf(stderr,
            "hrx: out of memory deferring a release made in a host "
            "callback; the object is kept alive\n");
    return;
  }
  entry->release = release;
  entry->object = object;
  pthread_mutex_lock(&device->release_mutex);
  entry->next = device->releases;
  device->releases = entry;
  atomic_store(&device->has_releases, true);
  bool start = !device->release_helper;
  if (start) device->release_helper = true;
  pthread_mutex_unlock(&device->release_mutex);
  if (!start) return;
  /* The helper's own reference; the entries hold theirs. */
  pthread_mutex_lock(&hrx_registry_mutex);
  device->ref_count++;
  pthread_mutex_unlock(&hrx_registry_mutex);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  int error = pthread_create(&thread, &attr, hrx_device_release_helper,
                             device);
  pthread_attr_destroy(&attr);
  if (error) {
    /* The next call from another thread drains the list instead. */
    pthread_mutex_lock(&device->release_mutex);
    device->release_helper = false;
    pthread_mutex_unlock(&device->release_mutex);
    pthread_mutex_lock(&hrx_registry_mutex);
    device->ref_count--;
    pthread_mutex_unlock(&hrx_registry_mutex);
  }
}

void hrx_device_list_failure(hrx_device_t* device, hrx_failure_link_t* link) {
  pthread_mutex_lock(&device->failure_mutex);
  if (!link->listed) {
    link->listed = true;
    link->prev = NULL;
    link->next = device->failed;
    if (device->failed) device->failed->prev = link;
    device->failed = link;
  }
  pthread_mutex_unlock(&device->failure_mutex);
}

static void hrx_device_unlist_failure_locked(hrx_device_t* device,
                                             hrx_failure_link_t* link) {
  if (!link->listed) return;
  if (link->prev) {
    link->prev->next = link->next;
  } else {
    device->failed = link->next;
  }
  if (link->next) link->next->prev = link->prev;
  link->prev = link->next = NULL;
  link->listed = false;
}

void hrx_device_unlist_failure(hrx_device_t* device, hrx_failure_link_t* link) {
  pthread_mutex_lock(&device->failure_mutex);
  hrx_device_unlist_failure_locked(device, link);
  pthread_mutex_unlock(&device->failure_mutex);
}

/* Raises every listed stream's failure: the first one's status, naming how
 * many other streams failed too (their messages follow, shortened). NULL
 * when none. */
static hrx_status_t hrx_device_take_failures(hrx_device_t* device) {
  hrx_status_t first = NULL;
  int others = 0;
  char more[512] = "";
  pthread_mutex_lock(&device->failure_mutex);
  while (device->failed) {
    hrx_failure_link_t* link = device->failed;
    hrx_device_unlist_failure_locked(device, link);
    hrx_status_t status = hrx_stream_take_failure_of_link(link);
    if (!status) continue;
    if (!first) {
      first = status;
      continue;
    }
    size_t used = strlen(more);
    snprintf(more + used, sizeof(more) - used, "%s%.160s", others ? "; " : "",
             hrx_status_message(status));
    ++others;
    hrx_status_free(status);
  }
  pthread_mutex_unlock(&device->failure_mutex);
  if (first && others) {
    first = hrx_status_annotate(first, "%d other stream%s of the device "
                                       "failed too (%s); first",
                                others, others == 1 ? "" : "s", more);
  }
  return first;
}

hrx_kernel_cache_t* hrx_device_kernel_cache(hrx_device_t* device) {
  return device->kernels;
}

hrx_staging_pool_t* hrx_device_staging(hrx_device_t* device) {
  return device->staging;
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
  return NULL;
}

hrx_status_t hrx_device_query_free_memory(hrx_device_t* device,
                                          uint64_t* out_free_bytes) {
  HRX_RETURN_IF_ERROR(hrx_entry_check(device, HRX_ENTRY_RUNTIME_QUERY,
                                      "querying free memory"));
  return device->backend->vtable->query_free_memory(device->backend,
                                                    out_free_bytes);
}

const hrx_batch_settings_t* hrx_device_batch_settings(hrx_device_t* device) {
  return &device->batch;
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

hrx_status_t hrx_device_synchronize(hrx_device_t* device,
                                    const hrx_wait_hook_t* hook,
                                    bool* out_interrupted) {
  bool interrupted = false;
  if (!out_interrupted) out_interrupted = &interrupted;
  *out_interrupted = false;
  HRX_RETURN_IF_ERROR(hrx_entry_check(device, HRX_ENTRY_BLOCKING,
                                      "synchronizing a device"));
  hrx_batch_thread_observed();
  hrx_flusher_publish_all(device->flusher);
  enum { capacity = HRX_STREAM_LANE_COUNT * HRX_MAX_STREAM_QUEUE_COUNT };
  hrx_native_queue_t* queues[capacity];
  int n = hrx_queue_pool_snapshot(&device->pool, queues, capacity);
  for (int i = 0; i < n && !*out_interrupted; ++i) {
    HRX_RETURN_IF_ERROR(
        hrx_wait_queue(device->backend, queues[i], hook,
                       out_interrupted));
  }
  /* Reserved queues may go with their streams meanwhile: the snapshot
   * keeps each alive until it is released here. */
  hrx_pool_queue_t* reserved[HRX_MAX_RESERVED_QUEUES];
  int r = hrx_queue_pool_snapshot_reserved(&device->pool, reserved,
                                           HRX_MAX_RESERVED_QUEUES);
  hrx_status_t status = NULL;
  for (int i = 0; i < r && !status && !*out_interrupted; ++i) {
    status = hrx_wait_queue(device->backend, reserved[i]->native, hook,
                            out_interrupted);
  }
  for (int i = 0; i < r; ++i) {
    hrx_queue_pool_release_reserved(&device->pool, reserved[i]);
  }
  if (*out_interrupted) return status;
  /* Failures of the device's streams that no observation raised yet. */
  return hrx_status_prefer(hrx_device_take_failures(device), status);
}

hrx_status_t hrx_device_set_stream_queue_count(hrx_device_t* device,
                                               int64_t count) {
  HRX_RETURN_IF_ERROR(hrx_entry_check(device, HRX_ENTRY_QUERY,
                                      "setting the stream queue count"));
  return hrx_queue_pool_set_count(&device->pool, count);
}

int hrx_device_stream_queue_count(hrx_device_t* device) {
  /* A stale device's pool lock may be held by a thread lost in the fork. */
  if (hrx_device_is_stale(device)) return device->pool.count;
  return hrx_queue_pool_count(&device->pool);
}

void hrx_device_query_pool(hrx_device_t* device, hrx_pool_info_t* out_info) {
  hrx_queue_pool_query(&device->pool, out_info);
}

hrx_status_t hrx_device_set_stream_queue_policy(hrx_device_t* device,
                                                int policy) {
  HRX_RETURN_IF_ERROR(hrx_entry_check(device, HRX_ENTRY_QUERY,
                                      "setting the stream queue policy"));
  return hrx_queue_pool_set_policy(&device->pool, policy);
}

hrx_queue_policy_t hrx_device_stream_queue_policy(hrx_device_t* device) {
  /* A stale device's pool lock may be held by a thread lost in the fork. */
  if (hrx_device_is_stale(device)) return device->pool.policy;
  return hrx_queue_pool_policy(&device->pool);
}

hrx_status_t hrx_device_query_pool_stats(hrx_device_t* device,
                                         hrx_pool_queue_stats_t* out_queues,
                                         int capacity,
                                         hrx_pool_stats_t* out_stats) {
  HRX_RETURN_IF_ERROR(hrx_entry_check(device, HRX_ENTRY_RUNTIME_QUERY,
                                      "querying pool statistics"));
  return hrx_queue_pool_stats(&device->pool, out_queues, capacity, out_stats);
}
