/* Pageable host memory for the results of reads (result_memory.h). */
#include "result_memory.h"

#include <pthread.h>
#include <stdbool.h>
#include <sys/mman.h>

#include "base/environment.h"
#include "base/status.h"

/* A free block: its mapping and when it was freed (a count). */
typedef struct hrx_result_block_s {
  void* memory;
  uint64_t capacity;
  uint64_t freed;
} hrx_result_block_t;

/* The process's pool; the mutex guards every field. */
static struct {
  pthread_mutex_t mutex;
  hrx_result_block_t free[HRX_RESULT_MAX_FREE_BLOCKS];
  int free_count;
  uint64_t cached_bytes;
  uint64_t limit;        /* the limit the latest allocation read */
  uint64_t frees;        /* blocks freed so far: their age */
} hrx_result_pool = {.mutex = PTHREAD_MUTEX_INITIALIZER,
                     .limit = HRX_RESULT_DEFAULT_CACHE_BYTES};

static void hrx_result_pool_lock(void) {
  pthread_mutex_lock(&hrx_result_pool.mutex);
}

static void hrx_result_pool_unlock(void) {
  pthread_mutex_unlock(&hrx_result_pool.mutex);
}

/* A fork while another thread holds the mutex leaves the child a usable
 * one: the forking thread holds it across the fork. */
static pthread_once_t hrx_result_fork_once = PTHREAD_ONCE_INIT;

static void hrx_result_register_fork(void) {
  (void)pthread_atfork(hrx_result_pool_lock, hrx_result_pool_unlock,
                       hrx_result_pool_unlock);
}

hrx_status_t hrx_result_cache_bytes_from_environment(uint64_t* out_bytes) {
  int64_t value = 0;
  HRX_RETURN_IF_ERROR(hrx_env_int(
      "HRX_RESULT_CACHE_BYTES", (int64_t)HRX_RESULT_DEFAULT_CACHE_BYTES, 0,
      (int64_t)HRX_RESULT_MAX_CACHE_BYTES, &value));
  *out_bytes = (uint64_t)value;
  return NULL;
}

#ifdef HRX_TESTING_BUILD
#include "testing/hrx_testing.h"

void hrx_result_memory_query_pool(uint64_t* out_cached_bytes,
                                  uint64_t* out_blocks) {
  hrx_result_pool_lock();
  *out_cached_bytes = hrx_result_pool.cached_bytes;
  *out_blocks = (uint64_t)hrx_result_pool.free_count;
  hrx_result_pool_unlock();
}
#endif

/* Takes free block `i` off the list (mutex held). */
static hrx_result_block_t hrx_result_take_locked(int i) {
  hrx_result_block_t block = hrx_result_pool.free[i];
  hrx_result_pool.free[i] =
      hrx_result_pool.free[--hrx_result_pool.free_count];
  hrx_result_pool.cached_bytes -= block.capacity;
  return block;
}

hrx_status_t hrx_result_memory_alloc(uint64_t size, void** out_ptr,
                                     uint64_t* out_capacity) {
  if (size == 0) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "result memory of 0 bytes: the size must be at "
                           "least 1");
  }
  uint64_t limit = 0;
  HRX_RETURN_IF_ERROR(hrx_result_cache_bytes_from_environment(&limit));
  pthread_once(&hrx_result_fork_once, hrx_result_register_fork);
  uint64_t granule = HRX_RESULT_MEMORY_GRANULE;
  if (size > UINT64_MAX - granule) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot map %llu bytes of result memory",
                           (unsigned long long)size);
  }
  uint64_t capacity = (size + granule - 1) / granule * granule;
  uint64_t largest = size <= UINT64_MAX / 2 ? 2 * size : UINT64_MAX;
  if (largest < capacity) largest = capacity;

  hrx_result_pool_lock();
  hrx_result_pool.limit = limit;
  int best = -1;
  for (int i = 0; i < hrx_result_pool.free_count; ++i) {
    uint64_t have = hrx_result_pool.free[i].capacity;
    if (have >= size && have <= largest &&
        (best < 0 || have < hrx_result_pool.free[best].capacity)) {
      best = i;
    }
  }
  hrx_result_block_t block = {0};
  if (best >= 0) block = hrx_result_take_locked(best);
  hrx_result_pool_unlock();
  if (block.memory) {
    *out_ptr = block.memory;
    *out_capacity = block.capacity;
    return NULL;
  }

  void* memory = mmap(NULL, capacity, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot map %llu bytes of result memory",
                           (unsigned long long)capacity);
  }
#ifdef MADV_HUGEPAGE
  (void)madvise(memory, capacity, MADV_HUGEPAGE);  /* a hint only */
#endif
  *out_ptr = memory;
  *out_capacity = capacity;
  return NULL;
}

void hrx_result_memory_free(void* ptr, uint64_t capacity) {
  if (!ptr) return;
  /* What leaves the pool is unmapped after the mutex is let go. */
  hrx_result_block_t out[HRX_RESULT_MAX_FREE_BLOCKS + 1];
  int out_count = 0;
  hrx_result_pool_lock();
  uint64_t limit = hrx_result_pool.limit;
  bool keep = capacity <= limit;
  /* The oldest go until the block fits (or, when it is not kept, until
   * the pool is within a limit that was lowered since). */
  while (hrx_result_pool.free_count > 0 &&
         (hrx_result_pool.cached_bytes + (keep ? capacity : 0) > limit ||
          (keep && hrx_result_pool.free_count == HRX_RESULT_MAX_FREE_BLOCKS))) {
    int oldest = 0;
    for (int i = 1; i < hrx_result_pool.free_count; ++i) {
      if (hrx_result_pool.free[i].freed < hrx_result_pool.free[oldest].freed) {
        oldest = i;
      }
    }
    out[out_count++] = hrx_result_take_locked(oldest);
  }
  if (keep) {
    hrx_result_pool.free[hrx_result_pool.free_count++] =
        (hrx_result_block_t){ptr, capacity, ++hrx_result_pool.frees};
    hrx_result_pool.cached_bytes += capacity;
  } else {
    out[out_count++] = (hrx_result_block_t){ptr, capacity, 0};
  }
  hrx_result_pool_unlock();
  for (int i = 0; i < out_count; ++i) {
    (void)munmap(out[i].memory, out[i].capacity);
  }
}
