/* The device's cleanup thread (core/cleanup.h) and the releases deferred to
 * it from host callbacks (core/device.h): they run there, in order, and no
 * caller waits for them, except a device synchronize and the release that
 * would otherwise leave them holding the device's last references. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "core/cleanup.h"
#include "core/live_device.h"
#include "hrx.h"
#include "core/staging.h"
#include "testing/hrx_testing.h"

static atomic_int gate;
static atomic_int ran;
static pthread_t ran_on;

/* Waits until the test opens the gate, then notes that it ran, and where. */
static void gated(void* arg) {
  (void)arg;
  while (!atomic_load(&gate)) sched_yield();
  ran_on = pthread_self();
  atomic_fetch_add(&ran, 1);
}

static int order[4];
static atomic_int order_next;

static void note(void* arg) {
  order[atomic_fetch_add(&order_next, 1)] = (int)(intptr_t)arg;
}

static void sleep_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* Tasks run in order on the cleanup thread; wait waits for those queued
 * before it; destroy runs what is left. */
static void test_tasks_run_in_order_on_their_thread(void) {
  hrx_cleanup_t* cleanup = NULL;
  CHECK_OK(hrx_cleanup_create(&cleanup));
  CHECK(!hrx_cleanup_busy(cleanup) && hrx_cleanup_pending(cleanup) == 0);
  CHECK(!hrx_cleanup_on_thread(cleanup));
  atomic_store(&gate, 0);
  atomic_store(&ran, 0);
  atomic_store(&order_next, 0);
  CHECK(hrx_cleanup_queue(cleanup, gated, NULL));
  for (intptr_t i = 1; i <= 3; ++i) {
    CHECK(hrx_cleanup_queue(cleanup, note, (void*)i));
  }
  sleep_ms(5);
  CHECK(hrx_cleanup_busy(cleanup) && hrx_cleanup_pending(cleanup) == 4);
  CHECK(atomic_load(&order_next) == 0); /* behind the gated task */
  atomic_store(&gate, 1);
  hrx_cleanup_wait(cleanup);
  CHECK(atomic_load(&ran) == 1);
  CHECK(!pthread_equal(ran_on, pthread_self()));
  CHECK(atomic_load(&order_next) == 3);
  CHECK(order[0] == 1 && order[1] == 2 && order[2] == 3);
  CHECK(!hrx_cleanup_busy(cleanup));
  CHECK(hrx_cleanup_queue(cleanup, note, (void*)4));
  hrx_cleanup_destroy(cleanup);
  CHECK(atomic_load(&order_next) == 4 && order[3] == 4);
}

static hrx_device_t* open_counted(void) {
  setenv("HRX_FAULTS", "none", 1);
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  unsetenv("HRX_FAULTS");
  return device;
}

static int64_t live_devices(void) {
  hrx_fault_counts_t counts;
  hrx_fault_query_counts(&counts);
  return counts.devices;
}

static hrx_view_t whole(hrx_buffer_t* buffer) {
  hrx_view_t view;
  hrx_status_free(hrx_view_make(buffer, 0, hrx_buffer_size(buffer), &view));
  return view;
}

/* While a deferred release is running (it could be waiting for a callback
 * that needs a caller's lock), calls of every kind go on, in non-blocking
 * mode and blocking; none runs or waits for it. Device synchronize waits
 * for it. */
static void test_deferred_releases_never_hold_up_callers(void) {
  hrx_device_t* device = open_counted();
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 64, &buffer));
  atomic_store(&gate, 0);
  atomic_store(&ran, 0);
  hrx_device_defer_release(device, gated, NULL);
  CHECK(hrx_device_has_deferred_releases(device));
  hrx_thread_set_nonblocking(true);
  CHECK_OK(hrx_stream_fill(stream, whole(buffer), 1));
  hrx_event_t* event = NULL;
  CHECK_OK(hrx_stream_record_event(stream, &event));
  hrx_thread_set_nonblocking(false);
  CHECK_OK(hrx_stream_fill(stream, whole(buffer), 2));
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  bool done = false;
  CHECK_OK(hrx_event_query(event, &done));
  CHECK(done);
  hrx_buffer_t* more = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 64, &more));
  hrx_buffer_release(more);
  hrx_graph_t* graph = NULL;
  CHECK_OK(hrx_graph_create(device, &graph));
  hrx_graph_release(graph);
  CHECK(atomic_load(&ran) == 0);
  atomic_store(&gate, 1);
  CHECK_OK(hrx_device_synchronize(device, NULL, NULL));
  CHECK(atomic_load(&ran) == 1);
  CHECK(!pthread_equal(ran_on, pthread_self()));
  CHECK(!hrx_device_has_deferred_releases(device));
  hrx_event_release(event);
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  hrx_device_release(device);
  CHECK(live_devices() == 0);
}

static void release_device(void* device) { hrx_device_release(device); }

/* The releases deferred while the last handle goes hold references: the
 * last handle's release lets them run first, so the device is gone when it
 * returns (the pool contract's rule 9). */
static void test_last_release_outlives_deferred_releases(void) {
  hrx_device_t* device = open_counted();
  atomic_store(&gate, 0);
  atomic_store(&ran, 0);
  hrx_device_defer_release(device, gated, NULL);
  hrx_device_retain(device);
  hrx_device_defer_release(device, release_device, device);
  CHECK(live_devices() == 1);
  atomic_store(&gate, 1);
  hrx_device_release(device);
  CHECK(atomic_load(&ran) == 1);
  CHECK(live_devices() == 0);
}

/* A deferred release that drops the device's last reference tears the
 * device down on the cleanup thread, which then ends by itself. */
static void test_last_reference_dropped_on_the_cleanup_thread(void) {
  hrx_device_t* device = open_counted();
  hrx_device_retain(device);
  hrx_device_release(device); /* not the last: no deferred release yet */
  hrx_device_defer_release(device, release_device, device);
  for (int i = 0; i < 5000 && live_devices() != 0; ++i) sleep_ms(1);
  CHECK(live_devices() == 0);
  /* A new open starts a fresh device. */
  hrx_device_t* again = open_counted();
  CHECK(live_devices() == 1);
  hrx_device_release(again);
  CHECK(live_devices() == 0);
}

static uint64_t read_allocations(void) {
  uint64_t by_reads = 0, by_warm_up = 0;
  hrx_staging_query_allocations(&by_reads, &by_warm_up);
  return by_reads;
}

static uint64_t warm_allocations(void) {
  uint64_t by_reads = 0, by_warm_up = 0;
  hrx_staging_query_allocations(&by_reads, &by_warm_up);
  return by_warm_up;
}

typedef struct {
  hrx_staging_pool_t* pool;
  hrx_staging_block_t* block;
} acquirer_t;

static void* acquire_small(void* arg) {
  acquirer_t* a = arg;
  CHECK_OK(hrx_staging_acquire(a->pool, 64, &a->block));
  return NULL;
}

/* The staging warm-up (staging.h) on a pool of its own: a read after it
 * takes its block; a read before the cleanup thread started it allocates
 * and the warm-up is dropped; one racing with it never makes both
 * allocate; a non-blocking read never allocates. */
static void test_staging_warm_up(void) {
  /* Under fault injection the device warms up no staging of its own, which
   * would move the process-wide counts at a time of its own. */
  hrx_device_t* device = open_counted();
  hrx_backend_device_t* backend = hrx_device_backend(device);
  hrx_staging_pool_t* pool = NULL;
  CHECK_OK(hrx_staging_pool_create(backend, HRX_STAGING_DEFAULT_CACHE_BYTES,
                                   NULL, &pool));
  hrx_staging_block_t* block = NULL;

  /* Warmed up first: the read takes the warm block. */
  uint64_t reads = read_allocations(), warm = warm_allocations();
  hrx_staging_pool_begin_warm(pool);
  hrx_staging_pool_warm(pool);
  CHECK(warm_allocations() == warm + 1);
  CHECK_OK(hrx_staging_acquire(pool, 64, &block));
  CHECK(block->capacity == HRX_STAGING_WARM_BYTES);
  CHECK(read_allocations() == reads);
  hrx_staging_release(pool, block);

  /* In non-blocking mode a read takes a free block or reports
   * WOULD_BLOCK: this one's size class is empty and too large for the
   * warm block. */
  hrx_thread_set_nonblocking(true);
  CHECK_CODE(hrx_staging_acquire(pool, 1 << 20, &block),
             HRX_STATUS_WOULD_BLOCK, "read staging memory");
  CHECK_OK(hrx_staging_acquire(pool, 64, &block)); /* the warm block */
  hrx_thread_set_nonblocking(false);
  hrx_staging_release(pool, block);
  hrx_staging_pool_destroy(pool);

  /* A read before the warm-up started allocates; the warm-up is dropped. */
  CHECK_OK(hrx_staging_pool_create(backend, HRX_STAGING_DEFAULT_CACHE_BYTES,
                                   NULL, &pool));
  reads = read_allocations();
  warm = warm_allocations();
  hrx_staging_pool_begin_warm(pool);
  CHECK_OK(hrx_staging_acquire(pool, 64, &block));
  CHECK(read_allocations() == reads + 1);
  hrx_staging_pool_warm(pool);
  CHECK(warm_allocations() == warm);
  hrx_staging_release(pool, block);
  hrx_staging_pool_destroy(pool);

  /* A read racing with the warm-up: it takes the warm block (it came
   * while the warm-up ran, and waited, or after it) or allocates (it came
   * first, and the warm-up is dropped); one block is allocated either
   * way. */
  CHECK_OK(hrx_staging_pool_create(backend, HRX_STAGING_DEFAULT_CACHE_BYTES,
                                   NULL, &pool));
  reads = read_allocations();
  warm = warm_allocations();
  hrx_staging_pool_begin_warm(pool);
  acquirer_t a = {pool, NULL};
  pthread_t thread;
  pthread_create(&thread, NULL, acquire_small, &a);
  hrx_staging_pool_warm(pool);
  pthread_join(thread, NULL);
  CHECK(a.block != NULL);
  CHECK(read_allocations() - reads + (warm_allocations() - warm) == 1);
  hrx_staging_release(pool, a.block);
  hrx_staging_pool_destroy(pool);
  hrx_device_release(device);
}

static uint64_t inline_evictions(void) {
  uint64_t by_cleanup = 0, at_once = 0;
  hrx_staging_query_evictions(&by_cleanup, &at_once);
  return at_once;
}

/* A pool without a cleanup thread and a cache of zero: a released block is
 * freed at once, except in non-blocking mode, where it is kept until the
 * next blocking acquire. */
static void test_staging_beyond_the_cache(void) {
  hrx_device_t* device = open_counted();
  hrx_backend_device_t* backend = hrx_device_backend(device);
  hrx_staging_pool_t* pool = NULL;
  CHECK_OK(hrx_staging_pool_create(backend, 0, NULL, &pool));
  hrx_staging_block_t* block = NULL;
  uint64_t evicted = inline_evictions();
  CHECK_OK(hrx_staging_acquire(pool, 4096, &block));
  hrx_staging_release(pool, block);
  CHECK(inline_evictions() == evicted + 1);
  CHECK_OK(hrx_staging_acquire(pool, 4096, &block));
  hrx_thread_set_nonblocking(true);
  hrx_staging_release(pool, block);
  hrx_thread_set_nonblocking(false);
  CHECK(inline_evictions() == evicted + 1);
  CHECK_OK(hrx_staging_acquire(pool, 8192, &block));
  CHECK(inline_evictions() == evicted + 2);
  hrx_staging_release(pool, block);
  CHECK(inline_evictions() == evicted + 3);
  hrx_staging_pool_destroy(pool);
  hrx_device_release(device);
}

/* A cache of 64 KiB holding a 4 KiB block: a 64 KiB block released
 * displaces it and is taken again by the next transfer of its size (no new
 * allocation), where keeping the older block would allocate and free a
 * cache-sized block on every transfer; a block larger than the cache is
 * not kept, and leaves the cached one alone. */
static void test_staging_keeps_the_block_freed_last(void) {
  hrx_device_t* device = open_counted();
  hrx_backend_device_t* backend = hrx_device_backend(device);
  hrx_staging_pool_t* pool = NULL;
  const uint64_t cache = 64 << 10;
  CHECK_OK(hrx_staging_pool_create(backend, cache, NULL, &pool));
  hrx_staging_block_t* small = NULL;
  hrx_staging_block_t* large = NULL;
  CHECK_OK(hrx_staging_acquire(pool, 4096, &small));
  hrx_staging_release(pool, small);
  uint64_t evicted = inline_evictions();
  uint64_t reads = read_allocations();
  CHECK_OK(hrx_staging_acquire(pool, cache, &large));
  CHECK(large->capacity == cache);
  CHECK(read_allocations() == reads + 1);
  void* memory = large->memory;
  hrx_staging_release(pool, large);
  CHECK(inline_evictions() == evicted + 1);  /* the 4 KiB block */
  for (int round = 0; round < 3; ++round) {
    CHECK_OK(hrx_staging_acquire(pool, cache, &large));
    CHECK(large->memory == memory);
    hrx_staging_release(pool, large);
  }
  CHECK(read_allocations() == reads + 1);
  CHECK(inline_evictions() == evicted + 1);
  hrx_staging_block_t* huge = NULL;
  CHECK_OK(hrx_staging_acquire(pool, 2 * cache, &huge));
  hrx_staging_release(pool, huge);
  CHECK(inline_evictions() == evicted + 2);  /* only the huge block */
  CHECK_OK(hrx_staging_acquire(pool, cache, &large));
  CHECK(large->memory == memory);
  hrx_staging_release(pool, large);
  hrx_staging_pool_destroy(pool);
  hrx_device_release(device);
}

int main(void) {
  test_staging_warm_up();
  test_staging_beyond_the_cache();
  test_staging_keeps_the_block_freed_last();
  test_tasks_run_in_order_on_their_thread();
  test_deferred_releases_never_hold_up_callers();
  test_last_release_outlives_deferred_releases();
  test_last_reference_dropped_on_the_cleanup_thread();
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
