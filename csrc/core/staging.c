/* Read staging pool (staging.h). */
#include "staging.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "nonblocking.h"
#include "status.h"

#ifdef HRX_TESTING_BUILD
#include "testing/hrx_testing.h"

static atomic_uint_fast64_t hrx_staging_allocated_by_reads;
static atomic_uint_fast64_t hrx_staging_allocated_by_warm_up;

void hrx_staging_query_allocations(uint64_t* out_by_reads,
                                   uint64_t* out_by_warm_up) {
  *out_by_reads = atomic_load(&hrx_staging_allocated_by_reads);
  *out_by_warm_up = atomic_load(&hrx_staging_allocated_by_warm_up);
}
#define HRX_STAGING_COUNT(counter) atomic_fetch_add(&(counter), 1)
#else
#define HRX_STAGING_COUNT(counter) ((void)0)
#endif

enum { HRX_STAGING_CLASSES = 64 };

/* The warm-up's course (staging.h). */
typedef enum hrx_staging_warm_e {
  HRX_STAGING_WARM_NONE = 0,  /* none queued, or it is over */
  HRX_STAGING_WARM_QUEUED,    /* queued, not started: a read may take it over */
  HRX_STAGING_WARM_RUNNING,   /* allocating: a read waits for it */
} hrx_staging_warm_t;

struct hrx_staging_pool_s {
  hrx_backend_device_t* backend;  /* borrowed; outlives the pool */
  pthread_mutex_t mutex;
  hrx_staging_block_t* free[HRX_STAGING_CLASSES];  /* mutex */
  hrx_staging_block_t* pending;   /* reads that may still run; mutex */
  uint64_t cached_bytes;          /* capacity on the free lists; mutex */
  hrx_staging_warm_t warm;        /* mutex */
  pthread_cond_t warmed;          /* `warm` left RUNNING */
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
  pthread_cond_init(&pool->warmed, NULL);
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
  pthread_cond_destroy(&pool->warmed);
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

/* A new block of `capacity` bytes with its event. */
static hrx_status_t hrx_staging_block_create(hrx_staging_pool_t* pool,
                                             uint64_t capacity,
                                             hrx_staging_block_t** out_block) {
  hrx_staging_block_t* block = calloc(1, sizeof(*block));
  if (!block) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a read staging block");
  }
  block->capacity = capacity;
  const hrx_backend_vtable_t* vt = pool->backend->vtable;
  hrx_status_t status = vt->host_alloc(pool->backend, capacity, &block->memory);
  if (!status) status = vt->event_create(pool->backend, &block->event);
  if (status) {
    hrx_staging_block_free(pool->backend, block);
    return status;
  }
  *out_block = block;
  return NULL;
}

/* Takes a free block of class `index` or, for a read of at most
 * HRX_STAGING_WARM_BYTES, the smallest free one up to that size; NULL when
 * there is none. Mutex held. */
static hrx_staging_block_t* hrx_staging_take_free_locked(
    hrx_staging_pool_t* pool, unsigned index, uint64_t length) {
  uint64_t warm_capacity = 0;
  unsigned last = index;
  if (length <= HRX_STAGING_WARM_BYTES) {
    last = hrx_staging_class(HRX_STAGING_WARM_BYTES, &warm_capacity);
  }
  for (unsigned i = index; i <= last; ++i) {
    hrx_staging_block_t* block = pool->free[i];
    if (block) {
      pool->free[i] = block->next;
      pool->cached_bytes -= block->capacity;
      return block;
    }
  }
  return NULL;
}

void hrx_staging_pool_begin_warm(hrx_staging_pool_t* pool) {
  pthread_mutex_lock(&pool->mutex);
  pool->warm = HRX_STAGING_WARM_QUEUED;
  pthread_mutex_unlock(&pool->mutex);
}

void hrx_staging_pool_warm(void* arg) {
  hrx_staging_pool_t* pool = arg;
  pthread_mutex_lock(&pool->mutex);
  bool mine = pool->warm == HRX_STAGING_WARM_QUEUED;
  if (mine) pool->warm = HRX_STAGING_WARM_RUNNING;
  pthread_mutex_unlock(&pool->mutex);
  if (!mine) return; /* a read came first and allocated for itself */
  uint64_t capacity = 0;
  hrx_staging_class(HRX_STAGING_WARM_BYTES, &capacity);
  hrx_staging_block_t* block = NULL;
  hrx_status_t status = hrx_staging_block_create(pool, capacity, &block);
  hrx_status_free(status); /* cold: the first read allocates instead */
  /* Touched, so the first read does not take its page faults. */
  if (block) memset(block->memory, 0, block->capacity);
  if (block) {
    HRX_STAGING_COUNT(hrx_staging_allocated_by_warm_up);
    hrx_staging_release(pool, block); /* free: the first read takes it */
  }
  hrx_staging_pool_end_warm(pool);
}

void hrx_staging_pool_end_warm(hrx_staging_pool_t* pool) {
  pthread_mutex_lock(&pool->mutex);
  pool->warm = HRX_STAGING_WARM_NONE;
  pthread_cond_broadcast(&pool->warmed);
  pthread_mutex_unlock(&pool->mutex);
}

/* Takes free blocks off the lists, largest first, until the cache holds
 * at most HRX_STAGING_CACHE_BYTES (releases in non-blocking mode may leave
 * more); returns them for the caller to free without the lock. */
static hrx_staging_block_t* hrx_staging_trim(hrx_staging_pool_t* pool) {
  hrx_staging_block_t* evicted = NULL;
  pthread_mutex_lock(&pool->mutex);
  for (unsigned i = HRX_STAGING_CLASSES;
       i-- > 0 && pool->cached_bytes > HRX_STAGING_CACHE_BYTES;) {
    while (pool->free[i] && pool->cached_bytes > HRX_STAGING_CACHE_BYTES) {
      hrx_staging_block_t* block = pool->free[i];
      pool->free[i] = block->next;
      pool->cached_bytes -= block->capacity;
      block->next = evicted;
      evicted = block;
    }
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
  bool nonblocking = hrx_nonblocking();
  /* Reclaiming may free blocks beyond the cache (a pinned free waits for
   * the device): never in non-blocking mode. */
  if (!nonblocking) {
    if (pool->pending) {
      hrx_staging_free_list(pool->backend, hrx_staging_reclaim(pool));
    }
    hrx_staging_free_list(pool->backend, hrx_staging_trim(pool));
  }
  pthread_mutex_lock(&pool->mutex);
  hrx_staging_block_t* block = hrx_staging_take_free_locked(pool, index, length);
  if (!block && nonblocking) {
    pthread_mutex_unlock(&pool->mutex);
    return hrx_would_block("read staging memory to be allocated");
  }
  if (!block && pool->warm == HRX_STAGING_WARM_QUEUED) {
    /* The cleanup thread has not started it: allocating here costs no
     * more than waiting for it to start and allocate. */
    pool->warm = HRX_STAGING_WARM_NONE;
  }
  if (!block && pool->warm == HRX_STAGING_WARM_RUNNING) {
    while (pool->warm == HRX_STAGING_WARM_RUNNING) {
      pthread_cond_wait(&pool->warmed, &pool->mutex);
    }
    block = hrx_staging_take_free_locked(pool, index, length);
  }
  pthread_mutex_unlock(&pool->mutex);
  if (!block) {
    HRX_RETURN_IF_ERROR(hrx_staging_block_create(pool, capacity, &block));
    HRX_STAGING_COUNT(hrx_staging_allocated_by_reads);
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
  /* A host_free may wait (a pinned free waits for the device): in
   * non-blocking mode the block is kept even beyond the cache, which the
   * next blocking acquire trims. */
  bool keep = hrx_nonblocking() ||
              pool->cached_bytes + block->capacity <= HRX_STAGING_CACHE_BYTES;
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
