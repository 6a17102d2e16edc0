/* Fibers for the blocks of host kernels that use barriers (host_fibers.h). */
#include "host_fibers.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

/* AddressSanitizer follows stack switches only when told of them.
 * ThreadSanitizer is not told: a block's fibers run on one OS thread and
 * switch only at barriers, so to it they are that thread, never
 * concurrent (its fiber API crashes in its dynamic thread-local storage
 * interceptor when a fiber reads a kernel module's thread-local data). */
#if defined(__SANITIZE_ADDRESS__)
#define HRX_FIBERS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HRX_FIBERS_ASAN 1
#endif
#endif
#ifdef HRX_FIBERS_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

/* One thread's fibers: `capacity` stacks in one mapping, each above its
 * guard page, and a context per stack. */
typedef struct {
  char* mapping;
  size_t mapping_size;
  size_t slot_size;            /* guard page + stack */
  size_t page;
  uint32_t capacity;
  ucontext_t* contexts;        /* [capacity] */
  bool* returned;              /* [capacity] */
  ucontext_t scheduler;        /* where fibers switch back to */
  uint32_t current;            /* the running fiber */
  /* The block being run. */
  hrx_kernel_thread_entry_t entry;
  const void* params;
  const hrx_kernel_block_t* block;
  /* The scheduler's stack, for AddressSanitizer. */
  const void* scheduler_stack;
  size_t scheduler_stack_size;
} hrx_host_fibers_t;

static pthread_key_t hrx_host_fibers_key;
static pthread_once_t hrx_host_fibers_once = PTHREAD_ONCE_INIT;


static void hrx_host_fibers_free(void* value) {
  hrx_host_fibers_t* fibers = value;
  if (fibers->mapping) munmap(fibers->mapping, fibers->mapping_size);
  free(fibers->contexts);
  free(fibers->returned);
  free(fibers);
}

static void hrx_host_fibers_init(void) {
  (void)pthread_key_create(&hrx_host_fibers_key, hrx_host_fibers_free);
}

/* The calling thread's fibers with room for `count`, or NULL. */
static hrx_host_fibers_t* hrx_host_fibers_get(uint32_t count) {
  pthread_once(&hrx_host_fibers_once, hrx_host_fibers_init);
  hrx_host_fibers_t* fibers = pthread_getspecific(hrx_host_fibers_key);
  if (!fibers) {
    fibers = calloc(1, sizeof(*fibers));
    if (!fibers || pthread_setspecific(hrx_host_fibers_key, fibers) != 0) {
      free(fibers);
      return NULL;
    }
    long page = sysconf(_SC_PAGESIZE);
    fibers->page = page > 0 ? (size_t)page : 4096;
    size_t stack = (HRX_HOST_FIBER_STACK_BYTES + fibers->page - 1) &
                   ~(fibers->page - 1);
    fibers->slot_size = fibers->page + stack;
  }
  if (fibers->capacity >= count) return fibers;
  /* Grow to a power of two (fewer remappings as blocks grow). */
  uint32_t capacity = 32;
  while (capacity < count) capacity *= 2;
  size_t size = (size_t)capacity * fibers->slot_size;
  char* mapping = mmap(NULL, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ucontext_t* contexts = calloc(capacity, sizeof(*contexts));
  bool* returned = calloc(capacity, sizeof(*returned));
  bool ok = mapping != MAP_FAILED && contexts && returned;
  for (uint32_t i = 0; ok && i < capacity; ++i) {
    ok = mprotect(mapping + (size_t)i * fibers->slot_size, fibers->page,
                  PROT_NONE) == 0;
  }
  if (!ok) {
    if (mapping != MAP_FAILED) munmap(mapping, size);
    free(contexts);
    free(returned);
    return NULL;
  }
  if (fibers->mapping) munmap(fibers->mapping, fibers->mapping_size);
  free(fibers->contexts);
  free(fibers->returned);
  fibers->mapping = mapping;
  fibers->mapping_size = size;
  fibers->capacity = capacity;
  fibers->contexts = contexts;
  fibers->returned = returned;
  return fibers;
}

static char* hrx_host_fiber_stack(hrx_host_fibers_t* fibers, uint32_t i) {
  return fibers->mapping + (size_t)i * fibers->slot_size + fibers->page;
}

static size_t hrx_host_fiber_stack_size(hrx_host_fibers_t* fibers) {
  return fibers->slot_size - fibers->page;
}

/* A fiber's barrier: back to the scheduler, resumed in the next round. */
static void hrx_host_fibers_barrier(void* scheduler) {
  hrx_host_fibers_t* fibers = scheduler;
#ifdef HRX_FIBERS_ASAN
  void* fake_stack = NULL;
  __sanitizer_start_switch_fiber(&fake_stack, fibers->scheduler_stack,
                                 fibers->scheduler_stack_size);
#endif
  swapcontext(&fibers->contexts[fibers->current], &fibers->scheduler);
#ifdef HRX_FIBERS_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, &fibers->scheduler_stack,
                                  &fibers->scheduler_stack_size);
#endif
}

/* The calling thread's fibers while it runs a block (makecontext passes
 * only ints to a fiber's function). */
static __thread hrx_host_fibers_t* hrx_host_fibers_running;

/* A fiber's first frame: runs its thread, then returns to the scheduler
 * (uc_link). */
static void hrx_host_fiber_main(void) {
  hrx_host_fibers_t* fibers = hrx_host_fibers_running;
#ifdef HRX_FIBERS_ASAN
  __sanitizer_finish_switch_fiber(NULL, &fibers->scheduler_stack,
                                  &fibers->scheduler_stack_size);
#endif
  uint32_t i = fibers->current;
  const hrx_kernel_block_t* block = fibers->block;
  uint32_t bx = block->block_dim.x, by = block->block_dim.y;
  hrx_kernel_fiber_t fiber;
  fiber.thread_idx.x = i % bx;
  fiber.thread_idx.y = (i / bx) % by;
  fiber.thread_idx.z = i / (bx * by);
  fiber.barrier = hrx_host_fibers_barrier;
  fiber.scheduler = fibers;
  fibers->entry(fibers->params, block, &fiber);
  fibers->returned[fibers->current] = true;
#ifdef HRX_FIBERS_ASAN
  __sanitizer_start_switch_fiber(NULL, fibers->scheduler_stack,
                                 fibers->scheduler_stack_size);
#endif
}

/* Makes fiber i start at hrx_host_fiber_main on its own stack. Out of
 * line: getcontext "returns twice" for the compiler, which would otherwise
 * keep the caller's variables out of registers (the context is never
 * resumed where getcontext saved it: makecontext replaces that). */
static __attribute__((noinline)) bool hrx_host_fiber_prepare(
    hrx_host_fibers_t* fibers, uint32_t i) {
  ucontext_t* context = &fibers->contexts[i];
  if (getcontext(context) != 0) return false;
  context->uc_stack.ss_sp = hrx_host_fiber_stack(fibers, i);
  context->uc_stack.ss_size = hrx_host_fiber_stack_size(fibers);
  context->uc_link = &fibers->scheduler;
  makecontext(context, hrx_host_fiber_main, 0);
  fibers->returned[i] = false;
  return true;
}

bool hrx_host_fibers_run_block(hrx_kernel_thread_entry_t entry,
                               const void* params,
                               const hrx_kernel_block_t* block) {
  uint64_t count = (uint64_t)block->block_dim.x * block->block_dim.y *
                   block->block_dim.z;
  if (count == 0) return true;
  if (count > UINT32_MAX / 2) return false;
  hrx_host_fibers_t* fibers = hrx_host_fibers_get((uint32_t)count);
  if (!fibers) return false;
  fibers->entry = entry;
  fibers->params = params;
  fibers->block = block;
  for (uint32_t i = 0; i < count; ++i) {
    if (!hrx_host_fiber_prepare(fibers, i)) return false;
  }
  hrx_host_fibers_t* outer = hrx_host_fibers_running;
  hrx_host_fibers_running = fibers;
  /* Rounds: each fiber that has not returned runs to its next barrier or
   * its end; a round ends at a barrier every such fiber reached. */
  uint64_t running = count;
  while (running > 0) {
    for (uint32_t i = 0; i < count; ++i) {
      if (fibers->returned[i]) continue;
      fibers->current = i;
#ifdef HRX_FIBERS_ASAN
      void* fake_stack = NULL;
      __sanitizer_start_switch_fiber(&fake_stack,
                                     hrx_host_fiber_stack(fibers, i),
                                     hrx_host_fiber_stack_size(fibers));
#endif
      swapcontext(&fibers->scheduler, &fibers->contexts[i]);
#ifdef HRX_FIBERS_ASAN
      __sanitizer_finish_switch_fiber(fake_stack, NULL, NULL);
#endif
      if (fibers->returned[i]) --running;
    }
  }
  hrx_host_fibers_running = outer;
  return true;
}
