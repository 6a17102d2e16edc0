/* Result memory (core/result_memory.h, hrx.h's hrx_result_memory_alloc):
 * the process-wide pool of pageable blocks that reads' results are copied
 * into. Blocks are writable and sized in whole granules; a freed block is
 * taken by the next request of a like size and never while in use; the
 * limit ($HRX_RESULT_CACHE_BYTES) bounds what stays and pushes the oldest
 * out; a malformed limit and a zero size are refused; a child forked while
 * another thread uses the pool can use it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/result_memory.h"
#include "hrx.h"
#include "testing/hrx_testing.h"

#define MIB (1ull << 20)

static uint64_t cached_bytes(void) {
  uint64_t bytes = 0, blocks = 0;
  hrx_result_memory_query_pool(&bytes, &blocks);
  return bytes;
}

static uint64_t cached_blocks(void) {
  uint64_t bytes = 0, blocks = 0;
  hrx_result_memory_query_pool(&bytes, &blocks);
  return blocks;
}

typedef struct {
  void* ptr;
  uint64_t capacity;
} block_t;

static block_t take(uint64_t size) {
  block_t block = {0};
  CHECK_OK(hrx_result_memory_alloc(size, &block.ptr, &block.capacity));
  return block;
}

static void give(block_t block) {
  hrx_result_memory_free(block.ptr, block.capacity);
}

static void test_blocks_and_reuse(void) {
  unsetenv("HRX_RESULT_CACHE_BYTES");
  block_t a = take(3 * MIB + 1);
  CHECK(a.capacity == 4 * MIB);
  CHECK(((uintptr_t)a.ptr & 4095) == 0);
  memset(a.ptr, 0xab, 3 * MIB + 1);   /* all of it is writable */
  block_t b = take(3 * MIB);
  CHECK(b.ptr != a.ptr);               /* a is in use */
  give(a);
  CHECK(cached_blocks() == 1 && cached_bytes() == 4 * MIB);
  block_t c = take(4 * MIB);           /* a like size: a's block */
  CHECK(c.ptr == a.ptr && c.capacity == 4 * MIB && cached_blocks() == 0);
  give(c);
  /* Not for a request of less than half the block, nor a larger one. */
  block_t small = take(1 * MIB);
  CHECK(small.ptr != a.ptr && small.capacity == 2 * MIB);
  block_t large = take(5 * MIB);
  CHECK(large.ptr != a.ptr && cached_blocks() == 1);
  give(small);
  give(large);
  give(b);
  CHECK(cached_blocks() == 4);
  /* The smallest fitting block is taken: a 4 MiB one (a's or b's), not
   * large's (6). */
  block_t fit = take(3 * MIB + 7);
  CHECK((fit.ptr == b.ptr || fit.ptr == a.ptr) && fit.capacity == 4 * MIB);
  give(fit);
  CHECK_CODE(hrx_result_memory_alloc(0, &fit.ptr, &fit.capacity),
             HRX_STATUS_INVALID_ARGUMENT, "at least 1");
}

static void test_limit(void) {
  /* The limit in force is the one the latest allocation read; a block
   * freed then applies a lowered limit to the whole pool. */
  setenv("HRX_RESULT_CACHE_BYTES", "0", 1);
  give(take(MIB));
  CHECK(cached_bytes() == 0 && cached_blocks() == 0);
  setenv("HRX_RESULT_CACHE_BYTES", "8388608", 1);   /* 8 MiB */
  block_t a = take(4 * MIB), b = take(4 * MIB), c = take(4 * MIB);
  CHECK(cached_bytes() <= 8 * MIB);
  give(a);
  give(b);
  CHECK(cached_bytes() == 8 * MIB);
  give(c);                 /* pushes the oldest (a) out */
  CHECK(cached_bytes() == 8 * MIB && cached_blocks() == 2);
  block_t again = take(4 * MIB);
  CHECK(again.ptr == b.ptr || again.ptr == c.ptr);
  give(again);
  uint64_t before = cached_bytes();
  block_t huge = take(16 * MIB);   /* beyond the limit: never kept */
  give(huge);
  CHECK(cached_bytes() == before);
  setenv("HRX_RESULT_CACHE_BYTES", "-3", 1);
  void* ptr = NULL;
  uint64_t capacity = 0;
  CHECK_CODE(hrx_result_memory_alloc(MIB, &ptr, &capacity),
             HRX_STATUS_INVALID_ARGUMENT, "HRX_RESULT_CACHE_BYTES");
  CHECK(ptr == NULL);
  setenv("HRX_RESULT_CACHE_BYTES", "0", 1);
  give(take(MIB));
  CHECK(cached_bytes() == 0);
  unsetenv("HRX_RESULT_CACHE_BYTES");
}

/* Takes and gives blocks until told to stop; counts what failed (the
 * check counters are the main thread's). */
static atomic_int stop;
static atomic_int churn_failures;
static void* churn(void* arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    void* ptr = NULL;
    uint64_t capacity = 0;
    hrx_status_t status = hrx_result_memory_alloc(2 * MIB, &ptr, &capacity);
    if (status) {
      hrx_status_free(status);
      atomic_fetch_add(&churn_failures, 1);
      continue;
    }
    memset(ptr, 1, 4096);
    hrx_result_memory_free(ptr, capacity);
  }
  return NULL;
}

static void test_fork_while_in_use(void) {
  pthread_t thread;
  atomic_store(&stop, 0);
  CHECK(pthread_create(&thread, NULL, churn, NULL) == 0);
  for (int i = 0; i < 20; ++i) {
    pid_t child = fork();
    if (child == 0) {
      block_t block = take(2 * MIB);
      memset(block.ptr, 2, 2 * MIB);
      give(block);
      _exit(0);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child &&
          WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  atomic_store(&stop, 1);
  pthread_join(thread, NULL);
  CHECK(atomic_load(&churn_failures) == 0);
}

int main(void) {
  test_blocks_and_reuse();
  test_limit();
  test_fork_while_in_use();
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
