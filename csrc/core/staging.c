/* Read staging pool (staging.h). */
#include "staging.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "status.h"

enum { HRX_STAGING_CLASSES = 64 };

struct hrx_staging_pool_s {
  hrx_backend_device_t* backend;  /* borrowed; outlives the pool */
  pthread_mutex_t mutex;
  hrx_staging_block_t* free[HRX_STAGING_CLASSES];  /* mutex */
  hrx_staging_block_t* pending;   /* reads that may still run; mutex */
  uint64_t cached_bytes;          /* capacity on the free lists; mutex */
};

static unsigned hrx_staging_class(uint64_t length, uint64_t* out_capacity) {
  uint64_t capacity = HRX_STAGING_MIN_BYTES;
  unsigned index = 0;
  while (capacity < length && index + 1 < HRX_STAGING_CLASSES) {
    capacity <<= 1;
    ++index;
  }
  *out_capacity = capacity;
  return index;
}

hrx_status_t hrx_staging_pool_create(hrx_backend_device_t* backend,
                                     hrx_staging_pool_t** out_pool) {
  hrx_staging_pool_t* pool = calloc(1, sizeof(*pool));
  if (!pool) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate the read staging pool");
  }
  pool->backend = backend;
  pthread_mutex_init(&pool->mutex, NULL);
  *out_pool = pool;
  return NULL;
}

static void hrx_staging_block_free(hrx_backend_device_t* backend,
                                   hrx_staging_block_t* block) {
  if (block->event) backend->vtable->event_destroy(backend, block->event);
  if (block->memory) backend->vtable->host_free(backend, block->memory);
  free(block);
}

static void hrx_staging_free_list(hrx_backend_device_t* backend,
                                  hrx_staging_block_t* list) {
  while (list) {
    hrx_staging_block_t* next = list->next;
    hrx_staging_block_free(backend, list);
    list = next;
  }
}

void hrx_staging_pool_destroy(hrx_staging_pool_t* pool) {
  if (!pool) return;
  for (unsigned i = 0; i < HRX_STAGING_CLASSES; ++i) {
    hrx_staging_free_list(pool->backend, pool->free[i]);
  }
  hrx_staging_free_list(pool->backend, pool->pending);
  pthread_mutex_destroy(&pool->mutex);
  free(pool);
}

/* Moves the pending blocks whose reads are complete to the free lists;
 * returns the blocks that no longer fit the cache (the caller frees them
 * without the lock). */
static hrx_staging_block_t* hrx_staging_reclaim(hrx_staging_pool_t* pool) {
  pthread_mutex_lock(&pool->mutex);
  hrx_staging_block_t* list = pool->pending;
  pool->pending = NULL;
  pthread_mutex_unlock(&pool->mutex);
  hrx_staging_block_t* still = NULL;
  hrx_staging_block_t* done = NULL;
  while (list) {
    hrx_staging_block_t* next = list->next;
    bool complete = false;
    hrx_status_t status = pool->backend->vtable->event_query(
        pool->backend, list->event, &complete);
    hrx_status_free(status);
    hrx_staging_block_t** into = complete && !status ? &done : &still;
    list->next = *into;
    *into = list;
    list = next;
  }
  hrx_staging_block_t* evicted = NULL;
  pthread_mutex_lock(&pool->mutex);
  while (still) {
    hrx_staging_block_t* next = still->next;
    still->next = pool->pending;
    pool->pending = still;
    still = next;
  }
  while (done) {
    hrx_staging_block_t* next = done->next;
    uint64_t capacity = 0;
    unsigned index = hrx_staging_class(done->capacity, &capacity);
    if (pool->cached_bytes + done->capacity > HRX_STAGING_CACHE_BYTES) {
      done->next = evicted;
      evicted = done;
    } else {
      pool->cached_bytes += done->capacity;
      done->next = pool->free[index];
      pool->free[index] = done;
    }
    done = next;
  }
  pthread_mutex_unlock(&pool->mutex);
  return evicted;
}

hrx_status_t hrx_staging_acquire(hrx_staging_pool_t* pool, uint64_t length,
                                 hrx_staging_block_t** out_block) {
  uint64_t capacity = 0;
  unsigned index = hrx_staging_class(length, &capacity);
  if (capacity < length) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "a read of %llu bytes is too large to stage",
                           (unsigned long long)length);
  }
  hrx_staging_block_t* evicted = NULL;
  if (pool->pending) evicted = hrx_staging_reclaim(pool);
  hrx_staging_free_list(pool->backend, evicted);
  pthread_mutex_lock(&pool->mutex);
  hrx_staging_block_t* block = pool->free[index];
  if (block) {
    pool->free[index] = block->next;
    pool->cached_bytes -= block->capacity;
  }
  pthread_mutex_unlock(&pool->mutex);
  if (!block) {
    block = calloc(1, sizeof(*block));
    if (!block) {
      return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                             "cannot allocate a read staging block");
    }
    block->capacity = capacity;
    const hrx_backend_vtable_t* vt = pool->backend->vtable;
    hrx_status_t status = vt->host_alloc(pool->backend, capacity,
                                         &block->memory);
    if (!status) status = vt->event_create(pool->backend, &block->event);
    if (status) {
      hrx_staging_block_free(pool->backend, block);
      return status;
    }
  }
  block->next = NULL;
  *out_block = block;
  return NULL;
}

void hrx_staging_release(hrx_staging_pool_t* pool, hrx_staging_block_t* block) {
  if (!block) return;
  uint64_t capacity = 0;
  unsigned index = hrx_staging_class(block->capacity, &capacity);
  pthread_mutex_lock(&pool->mutex);
  bool keep = pool->cached_bytes + block->capacity <= HRX_STAGING_CACHE_BYTES;
  if (keep) {
    pool->cached_bytes += block->capacity;
    block->next = pool->free[index];
    pool->free[index] = block;
  }
  pthread_mutex_unlock(&pool->mutex);
  if (!keep) hrx_staging_block_free(pool->backend, block);
}

void hrx_staging_release_pending(hrx_staging_pool_t* pool,
                                 hrx_staging_block_t* block) {
  if (!block) return;
  pthread_mutex_lock(&pool->mutex);
  block->next = pool->pending;
  pool->pending = block;
  pthread_mutex_unlock(&pool->mutex);
}
