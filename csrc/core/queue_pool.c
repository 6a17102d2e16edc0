#include "queue_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

static int hrx_lane_index(int priority) {
  return HRX_STREAM_PRIORITY_HIGH - priority;
}

const char* hrx_stream_priority_name(int priority) {
  switch (priority) {
    case HRX_STREAM_PRIORITY_LOW: return "low";
    case HRX_STREAM_PRIORITY_NORMAL: return "normal";
    case HRX_STREAM_PRIORITY_HIGH: return "high";
    default: return NULL;
  }
}

bool hrx_stream_priority_parse(const char* name, int* out_priority) {
  if (!name) return false;
  for (int p = HRX_STREAM_PRIORITY_MIN; p <= HRX_STREAM_PRIORITY_MAX; ++p) {
    if (strcmp(name, hrx_stream_priority_name(p)) == 0) {
      *out_priority = p;
      return true;
    }
  }
  return false;
}

const char* hrx_queue_policy_name(int policy) {
  switch (policy) {
    case HRX_QUEUE_POLICY_ROUND_ROBIN: return "round_robin";
    case HRX_QUEUE_POLICY_LEAST_LOADED: return "least_loaded";
    default: return NULL;
  }
}

bool hrx_queue_policy_parse(const char* name, hrx_queue_policy_t* out_policy) {
  if (!name) return false;
  for (int p = HRX_QUEUE_POLICY_ROUND_ROBIN; p <= HRX_QUEUE_POLICY_LEAST_LOADED;
       ++p) {
    if (strcmp(name, hrx_queue_policy_name(p)) == 0) {
      *out_policy = (hrx_queue_policy_t)p;
      return true;
    }
  }
  return false;
}

static void hrx_queue_pool_plan(hrx_queue_pool_t* pool) {
  if (pool->backend->vtable->plan_connections) {
    pool->backend->vtable->plan_connections(
        pool->backend, HRX_CONNECTIONS_WANTED(pool->count));
  }
}

void hrx_queue_pool_initialize(hrx_backend_device_t* backend,
                               hrx_queue_pool_t* out_pool) {
  memset(out_pool, 0, sizeof(*out_pool));
  pthread_mutex_init(&out_pool->mutex, NULL);
  out_pool->backend = backend;
  out_pool->count = HRX_DEFAULT_STREAM_QUEUE_COUNT;
  out_pool->policy = HRX_QUEUE_POLICY_ROUND_ROBIN;
  hrx_queue_pool_plan(out_pool);
}

static void hrx_pool_queue_destroy(hrx_queue_pool_t* pool,
                                   hrx_pool_queue_t* queue) {
  pool->backend->vtable->queue.destroy(pool->backend, queue->native);
  free(queue);
}

void hrx_queue_pool_deinitialize(hrx_queue_pool_t* pool) {
  for (int lane = 0; lane < HRX_STREAM_LANE_COUNT; ++lane) {
    for (int i = 0; i < HRX_MAX_STREAM_QUEUE_COUNT; ++i) {
      if (pool->slots[lane][i]) {
        hrx_pool_queue_destroy(pool, pool->slots[lane][i]);
        pool->slots[lane][i] = NULL;
      }
    }
  }
  /* Reserved queues went with their streams; none can be left. */
  pthread_mutex_destroy(&pool->mutex);
}

hrx_status_t hrx_queue_pool_set_count(hrx_queue_pool_t* pool, int64_t count) {
  if (count < 1 || count > HRX_MAX_STREAM_QUEUE_COUNT) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "stream queue count must be between 1 and %d; got "
                           "%lld",
                           HRX_MAX_STREAM_QUEUE_COUNT, (long long)count);
  }
  hrx_status_t status = NULL;
  pthread_mutex_lock(&pool->mutex);
  if (count != pool->count) {
    if (pool->first_use) {
      status = hrx_make_status(
          HRX_STATUS_BUSY,
          "stream queue count is %d and cannot change to %lld: the device's "
          "pool queues were already created (set it before the first stream; "
          "it resets only when nothing holds the live device any more)",
          pool->count, (long long)count);
    } else {
      pool->count = (int)count;
      hrx_queue_pool_plan(pool);
    }
  }
  pthread_mutex_unlock(&pool->mutex);
  return status;
}

int hrx_queue_pool_count(hrx_queue_pool_t* pool) {
  pthread_mutex_lock(&pool->mutex);
  int count = pool->count;
  pthread_mutex_unlock(&pool->mutex);
  return count;
}

hrx_status_t hrx_queue_pool_set_policy(hrx_queue_pool_t* pool, int policy) {
  if (!hrx_queue_policy_name(policy)) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "unknown stream queue policy %d; the policies are "
                           "round_robin (%d) and least_loaded (%d)",
                           policy, HRX_QUEUE_POLICY_ROUND_ROBIN,
                           HRX_QUEUE_POLICY_LEAST_LOADED);
  }
  hrx_status_t status = NULL;
  pthread_mutex_lock(&pool->mutex);
  if ((hrx_queue_policy_t)policy != pool->policy) {
    if (pool->first_use) {
      status = hrx_make_status(
          HRX_STATUS_BUSY,
          "stream queue policy is %s and cannot change to %s: the device's "
          "pool queues were already created (set it before the first stream; "
          "it resets only when nothing holds the live device any more)",
          hrx_queue_policy_name(pool->policy), hrx_queue_policy_name(policy));
    } else {
      pool->policy = (hrx_queue_policy_t)policy;
    }
  }
  pthread_mutex_unlock(&pool->mutex);
  return status;
}

hrx_queue_policy_t hrx_queue_pool_policy(hrx_queue_pool_t* pool) {
  pthread_mutex_lock(&pool->mutex);
  hrx_queue_policy_t policy = pool->policy;
  pthread_mutex_unlock(&pool->mutex);
  return policy;
}

/* Learns completion from the backend (pool mutex held) and returns the
 * commands and bytes in flight. */
static void hrx_pool_queue_observe(hrx_queue_pool_t* pool,
                                   hrx_pool_queue_t* queue,
                                   uint64_t* out_commands,
                                   uint64_t* out_bytes) {
  /* Snapshot before asking: whatever is idle then includes these. */
  uint64_t commands = atomic_load(&queue->commands);
  uint64_t bytes = atomic_load(&queue->bytes);
  uint64_t pending = UINT64_MAX;
  hrx_status_t status =
      pool->backend->vtable->queue.query(pool->backend, queue->native, &pending);
  if (status) {
    hrx_status_free(status);
    pending = UINT64_MAX; /* unknown: keep the last knowledge */
  }
  if (pending == 0) {
    if (commands > queue->commands_done) queue->commands_done = commands;
    if (bytes > queue->bytes_done) queue->bytes_done = bytes;
  }
  uint64_t in_flight = commands - queue->commands_done;
  if (pending != UINT64_MAX && pending < in_flight) in_flight = pending;
  *out_commands = in_flight;
  *out_bytes = bytes - queue->bytes_done;
}

/* Creates a pool queue of lane `priority` (pool mutex held). */
static hrx_status_t hrx_pool_queue_create(hrx_queue_pool_t* pool, int priority,
                                          int slot,
                                          hrx_pool_queue_t** out_queue) {
  hrx_pool_queue_t* queue = calloc(1, sizeof(*queue));
  if (!queue) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a pool queue record");
  }
  uint32_t flags = slot < 0 ? HRX_NATIVE_QUEUE_RESERVED : 0;
  hrx_status_t status = pool->backend->vtable->queue.create(
      pool->backend, priority, flags, &queue->native, &queue->native_priority);
  if (status) {
    free(queue);
    return status;
  }
  queue->priority = priority;
  queue->slot = slot;
  queue->reserved = slot < 0;
  atomic_init(&queue->commands, 0);
  atomic_init(&queue->bytes, 0);
  atomic_init(&queue->batches, 0);
  atomic_init(&queue->batched, 0);
  pool->first_use = true;
  *out_queue = queue;
  return NULL;
}

/* The slot of the lane that the policy picks (pool mutex held). */
static int hrx_queue_pool_pick(hrx_queue_pool_t* pool, int lane) {
  int n = pool->count;
  int start = (int)(pool->lane_cursor[lane] % (uint64_t)n);
  if (pool->policy == HRX_QUEUE_POLICY_ROUND_ROBIN) return start;
  int best = start;
  uint64_t best_commands = UINT64_MAX, best_bytes = UINT64_MAX;
  int best_streams = 0;
  for (int k = 0; k < n; ++k) {
    int slot = (start + k) % n;
    hrx_pool_queue_t* queue = pool->slots[lane][slot];
    uint64_t commands = 0, bytes = 0;
    int streams = 0;
    if (queue) {
      hrx_pool_queue_observe(pool, queue, &commands, &bytes);
      streams = queue->streams;
    }
    bool better = commands < best_commands ||
                  (commands == best_commands &&
                   (bytes < best_bytes ||
                    (bytes == best_bytes && streams < best_streams)));
    if (better) {
      best = slot;
      best_commands = commands;
      best_bytes = bytes;
      best_streams = streams;
    }
  }
  return best;
}

static hrx_status_t hrx_queue_pool_acquire_reserved(
    hrx_queue_pool_t* pool, int priority, hrx_pool_queue_t** out_queue) {
  int free_index = -1;
  for (int i = 0; i < HRX_MAX_RESERVED_QUEUES && free_index < 0; ++i) {
    if (!pool->reserved[i]) free_index = i;
  }
  if (free_index < 0) {
    pool->reserved_refused++;
    return hrx_make_status(
        HRX_STATUS_RESOURCE_EXHAUSTED,
        "cannot reserve a queue: %d reserved queues are alive, the most a "
        "device allows (release a reserved stream first)",
        HRX_MAX_RESERVED_QUEUES);
  }
  hrx_pool_queue_t* queue = NULL;
  hrx_status_t status = hrx_pool_queue_create(pool, priority, -1, &queue);
  if (status) {
    pool->reserved_refused++;
    return hrx_status_annotate(status,
                               "cannot create a reserved %s-priority queue",
                               hrx_stream_priority_name(priority));
  }
  queue->refs = 1; /* the stream's */
  pool->reserved[free_index] = queue;
  pool->reserved_live++;
  pool->reserved_created++;
  *out_queue = queue;
  return NULL;
}

hrx_status_t hrx_queue_pool_acquire(hrx_queue_pool_t* pool, int priority,
                                    bool reserve,
                                    hrx_pool_queue_t** out_queue) {
  hrx_status_t status = NULL;
  hrx_pool_queue_t* queue = NULL;
  pthread_mutex_lock(&pool->mutex);
  int lane = hrx_lane_index(priority);
  if (reserve) {
    status = hrx_queue_pool_acquire_reserved(pool, priority, &queue);
  } else {
    int slot = hrx_queue_pool_pick(pool, lane);
    queue = pool->slots[lane][slot];
    if (!queue) {
      status = hrx_pool_queue_create(pool, priority, slot, &queue);
      if (status) {
        status = hrx_status_annotate(
            status, "cannot create native queue for %s-priority pool slot %d "
            "of %d", hrx_stream_priority_name(priority), slot, pool->count);
      } else {
        pool->slots[lane][slot] = queue;
        pool->queues_created++;
      }
    }
    if (!status) {
      pool->lane_cursor[lane] = (uint64_t)slot + 1;
    }
  }
  if (!status) {
    queue->streams++;
    queue->streams_assigned++;
    pool->live_streams++;
    *out_queue = queue;
  }
  pthread_mutex_unlock(&pool->mutex);
  return status;
}

void hrx_queue_pool_stream_released(hrx_queue_pool_t* pool,
                                    hrx_pool_queue_t* queue) {
  bool destroy = false;
  pthread_mutex_lock(&pool->mutex);
  pool->live_streams--;
  queue->streams--;
  if (queue->reserved) {
    for (int i = 0; i < HRX_MAX_RESERVED_QUEUES; ++i) {
      if (pool->reserved[i] == queue) pool->reserved[i] = NULL;
    }
    pool->reserved_live--;
    destroy = --queue->refs == 0;
  }
  pthread_mutex_unlock(&pool->mutex);
  /* Waits for the queue's work, so its buffers are no longer in use. */
  if (destroy) hrx_pool_queue_destroy(pool, queue);
}

void hrx_queue_pool_fabric_added(hrx_queue_pool_t* pool) {
  pthread_mutex_lock(&pool->mutex);
  pool->fabric_queues++;
  pthread_mutex_unlock(&pool->mutex);
}

void hrx_queue_pool_fabric_removed(hrx_queue_pool_t* pool) {
  pthread_mutex_lock(&pool->mutex);
  pool->fabric_queues--;
  pthread_mutex_unlock(&pool->mutex);
}

int hrx_queue_pool_snapshot(hrx_queue_pool_t* pool, hrx_native_queue_t** out,
                            int capacity) {
  int n = 0;
  pthread_mutex_lock(&pool->mutex);
  for (int lane = 0; lane < HRX_STREAM_LANE_COUNT; ++lane) {
    for (int i = 0; i < HRX_MAX_STREAM_QUEUE_COUNT && n < capacity; ++i) {
      if (pool->slots[lane][i]) out[n++] = pool->slots[lane][i]->native;
    }
  }
  pthread_mutex_unlock(&pool->mutex);
  return n;
}

int hrx_queue_pool_snapshot_reserved(hrx_queue_pool_t* pool,
                                     hrx_pool_queue_t** out, int capacity) {
  int n = 0;
  pthread_mutex_lock(&pool->mutex);
  for (int i = 0; i < HRX_MAX_RESERVED_QUEUES && n < capacity; ++i) {
    if (pool->reserved[i]) {
      pool->reserved[i]->refs++;
      out[n++] = pool->reserved[i];
    }
  }
  pthread_mutex_unlock(&pool->mutex);
  return n;
}

void hrx_queue_pool_release_reserved(hrx_queue_pool_t* pool,
                                     hrx_pool_queue_t* queue) {
  pthread_mutex_lock(&pool->mutex);
  bool last = --queue->refs == 0;
  pthread_mutex_unlock(&pool->mutex);
  if (last) hrx_pool_queue_destroy(pool, queue);
}

void hrx_queue_pool_query(hrx_queue_pool_t* pool, hrx_pool_info_t* out_info) {
  /* Padding included, so that two snapshots compare equal byte for byte. */
  memset(out_info, 0, sizeof(*out_info));
  pthread_mutex_lock(&pool->mutex);
  out_info->queue_count = pool->count;
  out_info->queues_created = pool->queues_created;
  /* The normal lane's next slot under round-robin. */
  out_info->next_slot = (int)(pool->lane_cursor[hrx_lane_index(
                                  HRX_STREAM_PRIORITY_NORMAL)] %
                              (uint64_t)pool->count);
  out_info->first_use = pool->first_use;
  out_info->live_streams = pool->live_streams;
  out_info->fabric_queues = pool->fabric_queues;
  pthread_mutex_unlock(&pool->mutex);
}

static void hrx_pool_queue_fill_stats(hrx_queue_pool_t* pool,
                                      hrx_pool_queue_t* queue,
                                      hrx_pool_queue_stats_t* out) {
  memset(out, 0, sizeof(*out));
  out->priority = queue->priority;
  out->slot = queue->slot;
  out->reserved = queue->reserved;
  out->native_priority = queue->native_priority;
  out->streams = queue->streams;
  out->streams_assigned = queue->streams_assigned;
  hrx_pool_queue_observe(pool, queue, &out->commands_in_flight,
                         &out->bytes_in_flight);
  /* Read after observing, so in flight never exceeds submitted. */
  out->commands_submitted = atomic_load(&queue->commands);
  out->bytes_submitted = atomic_load(&queue->bytes);
  out->batches_published = atomic_load(&queue->batches);
  out->commands_batched = atomic_load(&queue->batched);
}

hrx_status_t hrx_queue_pool_stats(hrx_queue_pool_t* pool,
                                  hrx_pool_queue_stats_t* out_queues,
                                  int capacity, hrx_pool_stats_t* out_stats) {
  if (capacity < 0 || (capacity > 0 && !out_queues) || !out_stats) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "pool stats need an output and a non-negative "
                           "capacity (got %d)", capacity);
  }
  memset(out_stats, 0, sizeof(*out_stats));
  int n = 0;
  pthread_mutex_lock(&pool->mutex);
  for (int lane = 0; lane < HRX_STREAM_LANE_COUNT; ++lane) {
    for (int i = 0; i < HRX_MAX_STREAM_QUEUE_COUNT && n < capacity; ++i) {
      if (pool->slots[lane][i]) {
        hrx_pool_queue_fill_stats(pool, pool->slots[lane][i], &out_queues[n++]);
      }
    }
  }
  for (int i = 0; i < HRX_MAX_RESERVED_QUEUES && n < capacity; ++i) {
    if (pool->reserved[i]) {
      hrx_pool_queue_fill_stats(pool, pool->reserved[i], &out_queues[n++]);
    }
  }
  out_stats->queue_count = pool->count;
  out_stats->policy = pool->policy;
  out_stats->first_use = pool->first_use;
  out_stats->reserved_live = pool->reserved_live;
  out_stats->reserved_created = pool->reserved_created;
  out_stats->reserved_refused = pool->reserved_refused;
  out_stats->queue_stats_count = n;
  int wanted = HRX_CONNECTIONS_WANTED(pool->count);
  pthread_mutex_unlock(&pool->mutex);
  hrx_connection_budget_t* budget = &out_stats->connections;
  if (pool->backend->vtable->query_connections) {
    pool->backend->vtable->query_connections(pool->backend, budget);
  } else {
    budget->wanted = wanted;
    snprintf(budget->source, sizeof(budget->source), "not applicable");
  }
  return NULL;
}
