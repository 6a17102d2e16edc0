/* Kernel grids on the host backend (host_grid.h).
 *
 * Blocks are numbered 0 .. blocks - 1 (x fastest, then y, then z) and
 * claimed with one atomic counter, so every block runs exactly once,
 * whoever claims it. `finished` counts blocks that returned; the thread
 * that makes it reach `blocks` is the last one out and hands the queue's
 * token on (await) and wakes waiters. Its increment is a release and the
 * runner's check an acquire, so the blocks' writes are visible to whatever
 * the queue runs next.
 *
 * References: the KERNEL command holds one; the engines hold one while the
 * grid is offered and one per helping thread. */
#include "host_grid.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/status.h"
#include "host_fibers.h"

struct hrx_host_grid_s {
  hrx_host_offer_t offer;          /* first: the engines' view of it */
  atomic_int ref_count;
  hrx_host_engines_t* engines;     /* borrowed; they outlive the grid */
  hrx_host_module_t* module;       /* retained: keeps `entry` mapped */
  hrx_kernel_entry_t entry;
  hrx_kernel_thread_entry_t threads;  /* the fibers' entry, or NULL */
  hrx_dim3 grid_dim;
  hrx_dim3 block_dim;
  uint64_t shared_bytes;
  uint64_t blocks;
  atomic_uint_fast64_t next;       /* next block to claim (may pass blocks) */
  atomic_uint_fast64_t finished;   /* blocks that returned */
  atomic_bool offered;             /* offered to the engines once */
  /* The runnable to list when the last block finishes (await), or NULL. */
  _Atomic(hrx_host_runnable_t*) awaiting;
  pthread_mutex_t mutex;           /* for waiters only */
  pthread_cond_t done_cond;
  atomic_int waiters;
  void* params;                    /* owned; params_align-aligned */
};

/* A thread's dynamic shared memory: one scratch area per thread, grown as
 * launches need, freed when the thread exits. */
static pthread_key_t hrx_host_scratch_key;
static pthread_once_t hrx_host_scratch_once = PTHREAD_ONCE_INIT;

typedef struct {
  void* memory;
  uint64_t size;
} hrx_host_scratch_t;

static void hrx_host_scratch_free(void* value) {
  hrx_host_scratch_t* scratch = value;
  free(scratch->memory);
  free(scratch);
}

static void hrx_host_scratch_init(void) {
  (void)pthread_key_create(&hrx_host_scratch_key, hrx_host_scratch_free);
}

/* At least `size` bytes, 64-byte aligned, or NULL when out of memory. */
static void* hrx_host_scratch(uint64_t size) {
  pthread_once(&hrx_host_scratch_once, hrx_host_scratch_init);
  hrx_host_scratch_t* scratch = pthread_getspecific(hrx_host_scratch_key);
  if (!scratch) {
    scratch = calloc(1, sizeof(*scratch));
    if (!scratch || pthread_setspecific(hrx_host_scratch_key, scratch) != 0) {
      free(scratch);
      return NULL;
    }
  }
  if (scratch->size < size) {
    uint64_t rounded = (size + 63) & ~(uint64_t)63;
    void* memory = aligned_alloc(64, rounded);
    if (!memory) return NULL;
    free(scratch->memory);
    scratch->memory = memory;
    scratch->size = rounded;
  }
  return scratch->memory;
}

static void hrx_host_grid_offer_retain(hrx_host_offer_t* offer) {
  hrx_host_grid_retain((hrx_host_grid_t*)offer);
}

static void hrx_host_grid_offer_release(hrx_host_offer_t* offer) {
  hrx_host_grid_release((hrx_host_grid_t*)offer);
}

static bool hrx_host_grid_help(hrx_host_offer_t* offer);

hrx_status_t hrx_host_grid_create(hrx_host_engines_t* engines,
                                  hrx_host_lane_t lane,
                                  hrx_host_kernel_t* kernel,
                                  const hrx_kernel_launch_t* launch,
                                  hrx_host_grid_t** out_grid) {
  const hrx_kernel_layout_t* layout = kernel->layout;
  if (launch->arg_count != layout->param_count) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "kernel '%s' takes %u arguments; the launch "
                           "passes %u",
                           kernel->name, layout->param_count,
                           launch->arg_count);
  }
  for (uint32_t i = 0; i < launch->arg_count; ++i) {
    if (launch->arg_sizes[i] != layout->param_size[i]) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "argument %u of kernel '%s' is %u bytes; its "
                             "parameter is %u bytes",
                             i, kernel->name, launch->arg_sizes[i],
                             layout->param_size[i]);
    }
  }
  hrx_host_grid_t* grid = calloc(1, sizeof(*grid));
  /* aligned_alloc takes a size that is a multiple of the alignment. */
  size_t align = layout->params_align < sizeof(void*) ? sizeof(void*)
                                                      : layout->params_align;
  size_t size = ((layout->params_size ? layout->params_size : 1) + align - 1) &
                ~(align - 1);
  void* params = aligned_alloc(align, size);
  if (!grid || !params) {
    free(grid);
    free(params);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a kernel launch");
  }
  memset(params, 0, size);
  for (uint32_t i = 0; i < launch->arg_count; ++i) {
    memcpy((char*)params + layout->param_offset[i], launch->args[i],
           launch->arg_sizes[i]);
  }
  grid->offer.lane = lane;
  grid->offer.help = hrx_host_grid_help;
  grid->offer.retain = hrx_host_grid_offer_retain;
  grid->offer.release = hrx_host_grid_offer_release;
  atomic_init(&grid->ref_count, 1);
  grid->engines = engines;
  grid->module = kernel->module;
  hrx_host_module_retain(kernel->module);
  grid->entry = layout->entry;
  grid->threads = kernel->threads;
  grid->grid_dim = (hrx_dim3){launch->grid[0], launch->grid[1],
                              launch->grid[2]};
  grid->block_dim = (hrx_dim3){launch->block[0], launch->block[1],
                               launch->block[2]};
  grid->shared_bytes = launch->shared_bytes;
  grid->blocks = (uint64_t)launch->grid[0] * launch->grid[1] * launch->grid[2];
  atomic_init(&grid->next, 0);
  atomic_init(&grid->finished, 0);
  atomic_init(&grid->offered, false);
  atomic_init(&grid->awaiting, NULL);
  atomic_init(&grid->waiters, 0);
  pthread_mutex_init(&grid->mutex, NULL);
  hrx_clock_cond_init(&grid->done_cond);
  grid->params = params;
  *out_grid = grid;
  return NULL;
}

void hrx_host_grid_retain(hrx_host_grid_t* grid) {
  atomic_fetch_add_explicit(&grid->ref_count, 1, memory_order_relaxed);
}

void hrx_host_grid_release(hrx_host_grid_t* grid) {
  if (!grid || atomic_fetch_sub_explicit(&grid->ref_count, 1,
                                         memory_order_acq_rel) != 1) {
    return;
  }
  hrx_host_module_release(grid->module);
  pthread_mutex_destroy(&grid->mutex);
  pthread_cond_destroy(&grid->done_cond);
  free(grid->params);
  free(grid);
}

uint64_t hrx_host_grid_blocks(const hrx_host_grid_t* grid) {
  return grid->blocks;
}

/* The last block has returned: the queue's token goes back to the engines
 * (await) and waiters wake. */
static void hrx_host_grid_finish(hrx_host_grid_t* grid) {
  hrx_host_runnable_t* runnable = atomic_exchange(&grid->awaiting, NULL);
  if (runnable) hrx_host_engines_list(grid->engines, runnable);
  if (atomic_load(&grid->waiters) > 0) {
    pthread_mutex_lock(&grid->mutex);
    pthread_cond_broadcast(&grid->done_cond);
    pthread_mutex_unlock(&grid->mutex);
  }
}

/* Claims and runs one block; false when none was left. */
static bool hrx_host_grid_run_one(hrx_host_grid_t* grid) {
  uint64_t b = atomic_fetch_add_explicit(&grid->next, 1, memory_order_relaxed);
  if (b >= grid->blocks) return false;
  hrx_kernel_block_t block;
  uint64_t gx = grid->grid_dim.x, gy = grid->grid_dim.y;
  block.block_idx.x = (unsigned)(b % gx);
  block.block_idx.y = (unsigned)((b / gx) % gy);
  block.block_idx.z = (unsigned)(b / (gx * gy));
  block.block_dim = grid->block_dim;
  block.grid_dim = grid->grid_dim;
  block.shared = NULL;
  if (grid->shared_bytes) {
    /* Without scratch memory the kernel would fault on its first use of
     * it; the core refuses launches beyond the limit, so this is only an
     * exhausted host. */
    block.shared = hrx_host_scratch(grid->shared_bytes);
    if (!block.shared) abort();
  }
  if (!grid->threads) {
    grid->entry(grid->params, &block);
  } else if (!hrx_host_fibers_run_block(grid->threads, grid->params,
                                        &block)) {
    /* As for scratch memory above: an exhausted host (the core refuses
     * blocks beyond the thread limit). */
    abort();
  }
  if (atomic_fetch_add_explicit(&grid->finished, 1, memory_order_acq_rel) +
          1 ==
      grid->blocks) {
    hrx_host_grid_finish(grid);
  }
  return true;
}

/* A free engine runs one block of an offered grid. */
static bool hrx_host_grid_help(hrx_host_offer_t* offer) {
  return hrx_host_grid_run_one((hrx_host_grid_t*)offer);
}

static bool hrx_host_grid_is_finished(hrx_host_grid_t* grid) {
  return atomic_load_explicit(&grid->finished, memory_order_acquire) ==
         grid->blocks;
}

hrx_host_grid_state_t hrx_host_grid_run(hrx_host_grid_t* grid,
                                        bool (*stop)(void* context,
                                                     uint32_t served),
                                        void* context, uint32_t* served) {
  if (grid->blocks > 1 && !atomic_load(&grid->offered) &&
      !atomic_exchange(&grid->offered, true)) {
    uint64_t helpers = grid->blocks - 1;
    hrx_host_engines_offer(grid->engines, &grid->offer,
                           helpers > 1024 ? 1024 : (int)helpers);
  }
  for (;;) {
    if (!hrx_host_grid_run_one(grid)) break;
    if (*served < UINT32_MAX) ++*served;
    if (atomic_load_explicit(&grid->next, memory_order_relaxed) <
            grid->blocks &&
        stop && stop(context, *served)) {
      return HRX_HOST_GRID_STOPPED;
    }
  }
  /* Nothing is left to claim: helpers need not look at it any more. */
  if (atomic_load(&grid->offered)) {
    hrx_host_engines_withdraw(grid->engines, &grid->offer);
  }
  return hrx_host_grid_is_finished(grid) ? HRX_HOST_GRID_FINISHED
                                         : HRX_HOST_GRID_RUNNING;
}

bool hrx_host_grid_await(hrx_host_grid_t* grid,
                         hrx_host_runnable_t* runnable) {
  atomic_store(&grid->awaiting, runnable);
  if (!hrx_host_grid_is_finished(grid)) return true;
  /* Finished meanwhile: take the registration back, unless the last block's
   * thread took it first (it lists the runnable). */
  hrx_host_runnable_t* expected = runnable;
  return !atomic_compare_exchange_strong(&grid->awaiting, &expected, NULL);
}

bool hrx_host_grid_wait_until(hrx_host_grid_t* grid, uint64_t deadline) {
  if (hrx_host_grid_is_finished(grid)) return true;
  pthread_mutex_lock(&grid->mutex);
  atomic_fetch_add(&grid->waiters, 1);
  bool finished;
  while (!(finished = hrx_host_grid_is_finished(grid))) {
    if (deadline == UINT64_MAX) {
      pthread_cond_wait(&grid->done_cond, &grid->mutex);
      continue;
    }
    struct timespec until = hrx_clock_timespec(deadline);
    if (pthread_cond_timedwait(&grid->done_cond, &grid->mutex, &until) ==
        ETIMEDOUT) {
      finished = hrx_host_grid_is_finished(grid);
      break;
    }
  }
  atomic_fetch_sub(&grid->waiters, 1);
  pthread_mutex_unlock(&grid->mutex);
  return finished;
}
