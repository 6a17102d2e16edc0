/* Read staging pool (staging.h). */
#include "staging.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/environment.h"
#include "base/nonblocking.h"
#include "base/status.h"

#ifdef HRX_TESTING_BUILD
#include "testing/hrx_testing.h"

static atomic_uint_fast64_t hrx_staging_allocated_by_reads;
static atomic_uint_fast64_t hrx_staging_allocated_by_warm_up;
static atomic_uint_fast64_t hrx_staging_evicted_by_cleanup;
static atomic_uint_fast64_t hrx_staging_evicted_inline;

void hrx_staging_query_evictions(uint64_t* out_by_cleanup,
                                 uint64_t* out_inline) {
  *out_by_cleanup = atomic_load(&hrx_staging_evicted_by_cleanup);
  *out_inline = atomic_load(&hrx_staging_evicted_inline);
}

void hrx_staging_query_allocations(uint64_t* out_by_reads,
                                   uint64_t* out_by_warm_up) {
  *out_by_reads = atomic_load(&hrx_staging_allocated_by_reads);
  *out_by_warm_up = atomic_load(&hrx_staging_allocated_by_warm_up);
}
#define HRX_STAGING_COUNT(counter) atomic_fetch_add(&(counter), 1)
#define HRX_STAGING_COUNT_N(counter, n) atomic_fetch_add(&(counter), (n))
#else
#define HRX_STAGING_COUNT(counter) ((void)0)
#define HRX_STAGING_COUNT_N(counter, n) ((void)(n))
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
  uint64_t cache_bytes;           /* immutable */
  pthread_mutex_t mutex;
  hrx_cleanup_t* cleanup;         /* borrowed, or NULL; mutex */
  bool detached;                  /* evicted blocks are kept; mutex */
  hrx_staging_block_t* evicted;   /* to be freed; mutex */
  bool free_queued;               /* a free of `evicted` is queued; mutex */
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

hrx_status_t hrx_staging_cache_bytes_from_environment(uint64_t* out_bytes) {
  int64_t value = 0;
  HRX_RETURN_IF_ERROR(hrx_env_int(
      "HRX_STAGING_CACHE_BYTES", (int64_t)HRX_STAGING_DEFAULT_CACHE_BYTES, 0,
      (int64_t)HRX_STAGING_MAX_CACHE_BYTES, &value));
  *out_bytes = (uint64_t)value;
  return NULL;
}

hrx_status_t hrx_staging_pool_create(hrx_backend_device_t* backend,
                                     uint64_t cache_bytes,
                                     hrx_cleanup_t* cleanup,
                                     hrx_staging_pool_t** out_pool) {
  hrx_staging_pool_t* pool = calloc(1, sizeof(*pool));
  if (!pool) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate the read staging pool");
  }
  pool->backend = backend;
  pool->cache_bytes = cache_bytes;
  pool->cleanup = cleanup;
  pthread_mutex_init(&pool->mutex, NULL);
  pthread_cond_init(&pool->warmed, NULL);
  *out_pool = pool;
  return NULL;
}

static void hrx_staging_block_free(hrx_backend_device_t* backend,
                                   hrx_staging_block_t* block) {
  if (block->event) backend->vtable->event.destroy(backend, block->event);
  if (block->memory) backend->vtable->memory.host_free(backend, block->memory);
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
  hrx_staging_free_list(pool->backend, pool->evicted);
  pthread_cond_destroy(&pool->warmed);
  pthread_mutex_destroy(&pool->mutex);
  free(pool);
}

void hrx_staging_pool_detach_cleanup(hrx_staging_pool_t* pool) {
  pthread_mutex_lock(&pool->mutex);
  pool->cleanup = NULL;
  pool->detached = true;
  pthread_mutex_unlock(&pool->mutex);
}

static uint64_t hrx_staging_free_counted(hrx_backend_device_t* backend,
                                         hrx_staging_block_t* list) {
  uint64_t count = 0;
  for (hrx_staging_block_t* b = list; b; b = b->next) ++count;
  hrx_staging_free_list(backend, list);
  return count;
}

/* The cleanup thread's task: frees the evicted blocks. */
static void hrx_staging_free_evicted(void* arg) {
  hrx_staging_pool_t* pool = arg;
  pthread_mutex_lock(&pool->mutex);
  hrx_staging_block_t* list = pool->evicted;
  pool->evicted = NULL;
  pool->free_queued = false;
  pthread_mutex_unlock(&pool->mutex);
  HRX_STAGING_COUNT_N(hrx_staging_evicted_by_cleanup,
                      hrx_staging_free_counted(pool->backend, list));
}

/* Evicts `list` (blocks that do not fit the cache): hands them to the
 * cleanup thread, keeps them (detached, or no thread and non-blocking), or
 * frees them here (no thread). Never holds the mutex across a free. */
static void hrx_staging_evict(hrx_staging_pool_t* pool,
                              hrx_staging_block_t* list) {
  if (!list) return;
  pthread_mutex_lock(&pool->mutex);
  bool inline_free = !pool->cleanup && !pool->detached && !hrx_nonblocking();
  if (!inline_free) {
    while (list) {
      hrx_staging_block_t* next = list->next;
      list->next = pool->evicted;
      pool->evicted = list;
      list = next;
    }
    if (pool->cleanup && !pool->free_queued) {
      pool->free_queued =
          hrx_cleanup_queue(pool->cleanup, hrx_staging_free_evicted, pool);
    }
  } else if (pool->evicted) {
    /* Kept earlier in non-blocking mode: freed with these. */
    hrx_staging_block_t* kept = pool->evicted;
    pool->evicted = NULL;
    while (kept) {
      hrx_staging_block_t* next = kept->next;
      kept->next = list;
      list = kept;
      kept = next;
    }
  }
  pthread_mutex_unlock(&pool->mutex);
  if (inline_free) {
    HRX_STAGING_COUNT_N(hrx_staging_evicted_inline,
                        hrx_staging_free_counted(pool->backend, list));
  }
}

/* Puts a free block on its class's list, counted in the cache. Mutex
 * held. */
static void hrx_staging_push_free_locked(hrx_staging_pool_t* pool,
                                         hrx_staging_block_t* block) {
  uint64_t capacity = 0;
  unsigned index = hrx_staging_class(block->capacity, &capacity);
  pool->cached_bytes += block->capacity;
  block->next = pool->free[index];
  pool->free[index] = block;
}

/* Takes free blocks but `keep` (may be NULL) off the lists, largest first,
 * until the cache holds at most cache_bytes; returns them for the caller
 * to evict without the lock. Mutex held. */
static hrx_staging_block_t* hrx_staging_trim_locked(
    hrx_staging_pool_t* pool, const hrx_staging_block_t* keep) {
  hrx_staging_block_t* evicted = NULL;
  for (unsigned i = HRX_STAGING_CLASSES;
       i-- > 0 && pool->cached_bytes > pool->cache_bytes;) {
    hrx_staging_block_t** link = &pool->free[i];
    while (*link && pool->cached_bytes > pool->cache_bytes) {
      hrx_staging_block_t* block = *link;
      if (block == keep) {
        link = &block->next;
        continue;
      }
      *link = block->next;
      pool->cached_bytes -= block->capacity;
      block->next = evicted;
      evicted = block;
    }
  }
  return evicted;
}

/* Caches a free block, evicting older free blocks, the largest first, to
 * make room for it; a block larger than the whole cache is evicted itself.
 * The block freed last is kept before older ones: a transfer repeated at
 * one size takes it next, where a cache already holding anything would
 * otherwise free and allocate a block as large as the cache on every
 * transfer. Mutex held; returns the evicted blocks for the caller to evict
 * without the lock. */
static hrx_staging_block_t* hrx_staging_cache_locked(
    hrx_staging_pool_t* pool, hrx_staging_block_t* block) {
  if (block->capacity > pool->cache_bytes) {
    block->next = NULL;
    return block;
  }
  hrx_staging_push_free_locked(pool, block);
  return hrx_staging_trim_locked(pool, block);
}

/* Moves the pending blocks whose reads are complete to the free lists;
 * returns the blocks that no longer fit the cache (the caller frees them
 * without the lock). */
static hrx_staging_block_t* hrx_staging_reclaim(hrx_staging_pool_t* pool) {
  pthread_mutex_lock(&pool->mutex);
  hrx_staging_block_t* list = pool->pending;
  pool->pending = NULL;
  pthread_mutex_unlock(&pool->mutex);
  if (!list) return NULL;
  hrx_staging_block_t* still = NULL;
  hrx_staging_block_t* done = NULL;
  while (list) {
    hrx_staging_block_t* next = list->next;
    bool complete = false;
    hrx_status_t status = pool->backend->vtable->event.query(
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
    hrx_staging_block_t* out = hrx_staging_cache_locked(pool, done);
    while (out) {
      hrx_staging_block_t* after = out->next;
      out->next = evicted;
      evicted = out;
      out = after;
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
  hrx_status_t status = vt->memory.host_alloc(pool->backend, capacity, &block->memory);
  if (!status) status = vt->event.create(pool->backend, &block->event);
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

/* Trims the cache to the pool's cache_bytes (releases in non-blocking
 * mode may leave more); returns the evicted blocks for the caller to evict
 * without the lock. */
static hrx_staging_block_t* hrx_staging_trim(hrx_staging_pool_t* pool) {
  pthread_mutex_lock(&pool->mutex);
  hrx_staging_block_t* evicted = hrx_staging_trim_locked(pool, NULL);
  pthread_mutex_unlock(&pool->mutex);
  return evicted;
}

hrx_status_t hrx_staging_acquire(hrx_staging_pool_t* pool, uint64_t length,
                                 hrx_staging_block_t** out_block) {
  uint64_t capacity = 0;
  unsigned index = hrx_staging_class(length, &capacity);
  if (capacity < length) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "a transfer of %llu bytes is too large to stage",
                           (unsigned long long)length);
  }
  bool nonblocking = hrx_nonblocking();
  /* Reclaiming evicts blocks beyond the cache (only queries, and hands
   * them to the cleanup thread or keeps them in non-blocking mode). */
  {
    /* `pending` is read under the mutex: another thread may be adding
     * to it. */
    hrx_staging_evict(pool, hrx_staging_reclaim(pool));
    hrx_staging_evict(pool, hrx_staging_trim(pool));
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
  hrx_staging_block_t* evicted = NULL;
  pthread_mutex_lock(&pool->mutex);
  /* Beyond the cache, blocks are evicted (hrx_staging_cache_locked); in
   * non-blocking mode a pool without a cleanup thread keeps this one (even
   * beyond the cache) for the next blocking acquire to trim. */
  if (hrx_nonblocking() && !pool->cleanup) {
    hrx_staging_push_free_locked(pool, block);
  } else {
    evicted = hrx_staging_cache_locked(pool, block);
  }
  pthread_mutex_unlock(&pool->mutex);
  hrx_staging_evict(pool, evicted);
}

void hrx_staging_release_pending(hrx_staging_pool_t* pool,
                                 hrx_staging_block_t* block) {
  if (!block) return;
  pthread_mutex_lock(&pool->mutex);
  block->next = pool->pending;
  pool->pending = block;
  pthread_mutex_unlock(&pool->mutex);
}
