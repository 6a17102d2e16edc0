#include "queue_pool.h"

#include <string.h>

#include "status.h"

void hrx_queue_pool_initialize(hrx_backend_device_t* backend,
                               hrx_queue_pool_t* out_pool) {
  memset(out_pool, 0, sizeof(*out_pool));
  pthread_mutex_init(&out_pool->mutex, NULL);
  out_pool->backend = backend;
  out_pool->count = HRX_DEFAULT_STREAM_QUEUE_COUNT;
}

void hrx_queue_pool_deinitialize(hrx_queue_pool_t* pool) {
  for (int i = 0; i < HRX_MAX_STREAM_QUEUE_COUNT; ++i) {
    if (pool->slots[i]) {
      pool->backend->vtable->queue_destroy(pool->backend, pool->slots[i]);
      pool->slots[i] = NULL;
    }
  }
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
          "it resets only when every handle of the device is gone)",
          pool->count, (long long)count);
    } else {
      pool->count = (int)count;
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

hrx_status_t hrx_queue_pool_acquire(hrx_queue_pool_t* pool, int* out_slot,
                                    hrx_native_queue_t** out_queue) {
  hrx_status_t status = NULL;
  pthread_mutex_lock(&pool->mutex);
  int slot = (int)(pool->cursor % (uint64_t)pool->count);
  if (!pool->slots[slot]) {
    hrx_native_queue_t* queue = NULL;
    status = pool->backend->vtable->queue_create(pool->backend, &queue);
    if (status) {
      status = hrx_status_annotate(
          status, "cannot create native queue for pool slot %d of %d", slot,
          pool->count);
    } else {
      pool->slots[slot] = queue;
      pool->queues_created++;
      pool->first_use = true;
    }
  }
  if (!status) {
    pool->cursor++;
    pool->live_streams++;
    *out_slot = slot;
    *out_queue = pool->slots[slot];
  }
  pthread_mutex_unlock(&pool->mutex);
  return status;
}

void hrx_queue_pool_stream_released(hrx_queue_pool_t* pool) {
  pthread_mutex_lock(&pool->mutex);
  pool->live_streams--;
  pthread_mutex_unlock(&pool->mutex);
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
  for (int i = 0; i < HRX_MAX_STREAM_QUEUE_COUNT && n < capacity; ++i) {
    if (pool->slots[i]) out[n++] = pool->slots[i];
  }
  pthread_mutex_unlock(&pool->mutex);
  return n;
}

void hrx_queue_pool_query(hrx_queue_pool_t* pool, hrx_pool_info_t* out_info) {
  pthread_mutex_lock(&pool->mutex);
  out_info->queue_count = pool->count;
  out_info->queues_created = pool->queues_created;
  out_info->next_slot = (int)(pool->cursor % (uint64_t)pool->count);
  out_info->first_use = pool->first_use;
  out_info->live_streams = pool->live_streams;
  out_info->fabric_queues = pool->fabric_queues;
  pthread_mutex_unlock(&pool->mutex);
}
