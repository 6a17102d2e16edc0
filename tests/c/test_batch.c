/* Tests of submission batching: the hip batch kernel's launch plan
 * (hip_batch.c, pure host code) and the core's batching policy on the host
 * backend (stream.c, batching.c). The last line of output is "N passed, M
 * failed"; the exit status is 0 only when M is 0. */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drivers/hip/hip_batch.h"
#include "check.h"
#include "core/batching.h"
#include "core/launch_copies.h"
#include "core/live_device.h"
#include "hrx.h"

#define BARRIER (1ull << 57)

static uint8_t memory[1 << 16] __attribute__((aligned(64)));

static hrx_batch_command_t copy_of(size_t dst, size_t src, uint64_t length) {
  hrx_batch_command_t c = {.dst = memory + dst, .src = memory + src,
                           .length = length, .kind = HRX_BATCH_COPY};
  return c;
}

static hrx_batch_command_t fill_of(size_t dst, uint64_t length, uint8_t b) {
  hrx_batch_command_t c = {.dst = memory + dst, .length = length,
                           .kind = HRX_BATCH_FILL, .byte = b};
  return c;
}

static void plan(const hrx_batch_command_t* c, uint32_t n, uint64_t* words,
                 bool* sequential) {
  hrx_hip_batch_plan(c, n, words, sequential);
}

static void test_plan_disjoint_commands_run_in_parallel(void) {
  hrx_batch_command_t c[] = {copy_of(0, 8192, 4096), copy_of(4096, 16384, 4096),
                             fill_of(32768, 100, 7)};
  uint64_t w[3];
  bool sequential = true;
  plan(c, 3, w, &sequential);
  CHECK(!sequential);
  for (int i = 0; i < 3; ++i) CHECK((w[i] & BARRIER) == 0);
  CHECK((w[0] & 0xFFFFFFFFFFFFull) == 4096);
  CHECK(((w[2] >> 48) & 0xff) == 7);
  CHECK((w[2] >> 56 & 1) == 1);  /* fill bit */
  CHECK((w[0] >> 56 & 1) == 0);
}

static void test_plan_same_rewrite_needs_no_barrier(void) {
  /* The benchmark's pattern: the same copy again and again. */
  hrx_batch_command_t c[4];
  for (int i = 0; i < 4; ++i) c[i] = copy_of(0, 8192, 4096);
  uint64_t w[4];
  bool sequential = false;
  plan(c, 4, w, &sequential);
  CHECK(sequential); /* overlapping writes: never the parallel mode */
  for (int i = 0; i < 4; ++i) CHECK((w[i] & BARRIER) == 0);
}

static void test_plan_read_after_write_waits(void) {
  hrx_batch_command_t c[] = {fill_of(0, 4096, 1), copy_of(8192, 0, 4096)};
  uint64_t w[2];
  bool sequential = false;
  plan(c, 2, w, &sequential);
  CHECK(sequential);
  CHECK((w[0] & BARRIER) == 0);
  CHECK((w[1] & BARRIER) != 0);
}

static void test_plan_write_after_read_waits(void) {
  hrx_batch_command_t c[] = {copy_of(8192, 0, 4096), fill_of(100, 10, 3)};
  uint64_t w[2];
  bool sequential = false;
  plan(c, 2, w, &sequential);
  CHECK(sequential);
  CHECK((w[1] & BARRIER) != 0);
}

static void test_plan_overlapping_writes_of_another_shape_wait(void) {
  /* Same destination bytes, different thread mapping: ordered by barrier. */
  hrx_batch_command_t c[] = {copy_of(0, 8192, 4096), copy_of(16, 20480, 4096),
                             copy_of(0, 8193, 4096)};
  uint64_t w[3];
  bool sequential = false;
  plan(c, 3, w, &sequential);
  CHECK(sequential);
  CHECK((w[1] & BARRIER) != 0);
  CHECK((w[2] & BARRIER) != 0); /* unaligned source: byte path */
}

static void test_plan_barrier_resets_the_segment(void) {
  /* After the barrier, a copy into a new range depends on nothing. */
  hrx_batch_command_t c[] = {fill_of(0, 64, 1), copy_of(4096, 0, 64),
                             copy_of(12288, 16384, 64)};
  uint64_t w[3];
  bool sequential = false;
  plan(c, 3, w, &sequential);
  CHECK((w[1] & BARRIER) != 0);
  CHECK((w[2] & BARRIER) == 0);
}

/* -------------------------------------------------------- host policy */

static hrx_device_t* open_host(void) {
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  return device;
}

/* Polls device memory (host memory on this backend) without any hrx call,
 * since every observation point would publish the batch itself. The read
 * races with the worker's write by design, so ThreadSanitizer builds
 * (which would report it) skip the tests that poll. */
#if defined(__SANITIZE_THREAD__)
#define HRX_TEST_CAN_POLL 0
#else
#define HRX_TEST_CAN_POLL 1
#endif

static uint64_t wait_for_byte(volatile uint8_t* p, uint8_t want,
                              uint64_t limit_ns) {
  uint64_t start = hrx_now_ns();
  while (*p != want) {
    if (hrx_now_ns() - start > limit_ns) return UINT64_MAX;
  }
  return hrx_now_ns() - start;
}

static void test_lone_batched_fill_is_published_without_synchronize(void) {
  if (!HRX_TEST_CAN_POLL) return;
  hrx_device_t* device = open_host();
  if (!device) return;
  CHECK(hrx_device_batching(device));
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 4096, &buffer));
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  hrx_view_t a, b;
  CHECK_OK(hrx_view_make(buffer, 0, 64, &a));
  CHECK_OK(hrx_view_make(buffer, 64, 64, &b));
  volatile uint8_t* bytes = hrx_buffer_native_pointer(buffer);
  uint64_t took_ns[20];
  for (int round = 1; round <= 20; ++round) {
    /* The first fill finds the queue idle and the stream quiet, so it goes
     * out at once; the second is batched and nothing else publishes it. */
    CHECK_OK(hrx_stream_fill(stream, a, (uint8_t)round));
    CHECK_OK(hrx_stream_fill(stream, b, (uint8_t)round));
    uint64_t took = wait_for_byte(bytes + 64, (uint8_t)round, 2000000000ull);
    CHECK(took != UINT64_MAX);
    took_ns[round - 1] = took;
    usleep(2000); /* quiet again */
  }
  for (int i = 1; i < 20; ++i) { /* insertion sort */
    for (int j = i; j > 0 && took_ns[j] < took_ns[j - 1]; --j) {
      uint64_t t = took_ns[j];
      took_ns[j] = took_ns[j - 1];
      took_ns[j - 1] = t;
    }
  }
  printf("  lone batched fill visible after %.1f us median, %.1f us max (20)\n",
         took_ns[9] / 1e3, took_ns[19] / 1e3);
  hrx_stream_release(stream);
  hrx_buffer_release(buffer);
  hrx_device_release(device);
}

static void test_switch_off_publishes_pending_work(void) {
  if (!HRX_TEST_CAN_POLL) return;
  setenv("HRX_BATCH_DELAY_US", "10000000", 1); /* the flusher waits 10 s */
  hrx_device_t* device = open_host();
  unsetenv("HRX_BATCH_DELAY_US");
  if (!device) return;
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 4096, &buffer));
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  hrx_view_t a;
  CHECK_OK(hrx_view_make(buffer, 0, 64, &a));
  volatile uint8_t* bytes = hrx_buffer_native_pointer(buffer);
  CHECK_OK(hrx_stream_fill(stream, a, 1));
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  CHECK_OK(hrx_stream_fill(stream, a, 2)); /* not quiet: batched */
  hrx_device_set_batching(device, false);
  CHECK(!hrx_device_batching(device));
  CHECK(wait_for_byte(bytes, 2, 5000000000ull) != UINT64_MAX);
  CHECK_OK(hrx_stream_fill(stream, a, 3)); /* off: straight to the queue */
  CHECK(wait_for_byte(bytes, 3, 5000000000ull) != UINT64_MAX);
  hrx_stream_release(stream);
  hrx_buffer_release(buffer);
  hrx_device_release(device);
}

static void test_release_publishes_and_buffers_wait(void) {
  setenv("HRX_BATCH_DELAY_US", "10000000", 1);
  hrx_device_t* device = open_host();
  unsetenv("HRX_BATCH_DELAY_US");
  if (!device) return;
  hrx_buffer_t* src = NULL;
  hrx_buffer_t* dst = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 1 << 16, &src));
  CHECK_OK(hrx_buffer_allocate(device, 1 << 16, &dst));
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  hrx_view_t s, d;
  CHECK_OK(hrx_view_make(src, 0, 1 << 16, &s));
  CHECK_OK(hrx_view_make(dst, 0, 1 << 16, &d));
  CHECK_OK(hrx_stream_fill(stream, s, 9));
  CHECK_OK(hrx_stream_copy(stream, d, s)); /* batched behind the fill */
  /* Dropping the source publishes the batch before its memory goes. */
  hrx_buffer_release(src);
  hrx_stream_release(stream);
  const uint8_t* out = hrx_buffer_native_pointer(dst);
  hrx_stream_t* reader = NULL;
  CHECK_OK(hrx_stream_create(device, &reader));
  CHECK_OK(hrx_device_synchronize(device, NULL, NULL));
  int bad = 0;
  for (int i = 0; i < (1 << 16); ++i) bad += out[i] != 9;
  CHECK(bad == 0);
  hrx_stream_release(reader);
  hrx_buffer_release(dst);
  hrx_device_release(device);
}

typedef struct {
  const char* name;
  void (*run)(void);
} hrx_test_t;

/* A command the copy kernel's grid cannot cover is never batched: the
 * setting is capped at HRX_BATCH_MAX_COMMAND_BYTES, and the hip backend
 * sends a batch holding a larger one natively. */
static void test_batched_commands_fit_the_kernel_grid(void) {
  hrx_batch_settings_t settings;
  char text[32];
  snprintf(text, sizeof(text), "%llu",
           (unsigned long long)HRX_BATCH_MAX_COMMAND_BYTES);
  setenv("HRX_BATCH_MAX_COPY_BYTES", text, 1);
  CHECK_OK(hrx_batch_settings_from_environment(&settings));
  CHECK(settings.max_command_bytes == HRX_BATCH_MAX_COMMAND_BYTES);
  setenv("HRX_BATCH_MAX_COPY_BYTES", "1073741824", 1); /* 65536 blocks */
  CHECK_CODE(hrx_batch_settings_from_environment(&settings),
             HRX_STATUS_INVALID_ARGUMENT, "HRX_BATCH_MAX_COPY_BYTES");
  unsetenv("HRX_BATCH_MAX_COPY_BYTES");
  hrx_batch_command_t commands[2] = {
      {.length = 64, .kind = HRX_BATCH_FILL},
      {.length = HRX_BATCH_MAX_COMMAND_BYTES, .kind = HRX_BATCH_FILL}};
  CHECK(hrx_hip_batch_fits(commands, 2));
  commands[1].length = HRX_BATCH_MAX_COMMAND_BYTES + 1;
  CHECK(!hrx_hip_batch_fits(commands, 2));
}

/* Commands published on the device's pool queues so far (pool stats, which
 * publish nothing). */
static uint64_t published_commands(hrx_device_t* device) {
  static hrx_pool_queue_stats_t queues[64];
  hrx_pool_stats_t stats;
  CHECK_OK(hrx_device_query_pool_stats(device, queues, 64, &stats));
  uint64_t count = 0;
  for (int i = 0; i < stats.queue_stats_count; ++i) {
    count += queues[i].commands_submitted;
  }
  return count;
}

/* Whether `want` commands are published within `ms` milliseconds. */
static bool published_within(hrx_device_t* device, uint64_t want, int ms) {
  for (int i = 0; i <= ms; ++i) {
    if (published_commands(device) >= want) return true;
    usleep(1000);
  }
  return false;
}

static atomic_int gate;

/* Holds its queue until the test opens the gate. */
static void gated(void* arg) {
  (void)arg;
  while (!atomic_load(&gate)) sched_yield();
}

/* The batch window (batch_window.h), in publication order: the stream's
 * queue is held by a closed gate; two partial batches go out at the
 * flusher's delay. With HRX_BATCH_HOLD_US set, a third is held, since the
 * first is still queued, until the gate opens and the first completes;
 * without it, the third goes out at its delay too. The delay (50 ms) is
 * long beside the four commands of a batch, so that each group of four is
 * one batch however slowly they come (a sanitizer's build), and the hold
 * is seen over six delays. */
static void check_batch_hold(bool hold) {
  setenv("HRX_BATCH_DELAY_US", "50000", 1);
  if (hold) setenv("HRX_BATCH_HOLD_US", "10000000", 1);
  hrx_device_t* device = open_host();
  unsetenv("HRX_BATCH_DELAY_US");
  unsetenv("HRX_BATCH_HOLD_US");
  if (!device) return;
  CHECK_OK(hrx_device_set_stream_queue_count(device, 1));
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 4096, &buffer));
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  atomic_store(&gate, 0);
  hrx_backend_device_t* backend = hrx_device_backend(device);
  CHECK_OK(backend->vtable->queue.host_call(
      backend, hrx_stream_native_handle(stream), gated, NULL));
  uint64_t base = published_commands(device);
  for (int batch = 0; batch < 3; ++batch) {
    for (int i = 0; i < 4; ++i) {
      hrx_view_t view;
      CHECK_OK(hrx_view_make(buffer, (uint64_t)(64 * (4 * batch + i)), 64,
                             &view));
      CHECK_OK(hrx_stream_fill(stream, view, (uint8_t)(1 + 4 * batch + i)));
    }
    uint64_t want = base + 4u * (uint64_t)(batch + 1);
    if (batch < 2 || !hold) {
      CHECK(published_within(device, want, 5000));
    } else {
      CHECK(!published_within(device, want, 300));  /* held */
    }
  }
  atomic_store(&gate, 1);
  CHECK(published_within(device, base + 12, 5000));
  uint8_t bytes[12 * 64];
  hrx_view_t all;
  CHECK_OK(hrx_view_make(buffer, 0, sizeof(bytes), &all));
  CHECK_OK(hrx_stream_read_blocking(stream, all, bytes, sizeof(bytes), NULL,
                                    NULL));
  int wrong = 0;
  for (int i = 0; i < 12; ++i) wrong += bytes[64 * i + 63] != 1 + i;
  CHECK(wrong == 0);
  hrx_stream_release(stream);
  hrx_buffer_release(buffer);
  hrx_device_release(device);
}

static void test_a_partial_batch_is_held_behind_two_queued(void) {
  check_batch_hold(true);
}

static void test_without_a_hold_each_batch_goes_at_its_delay(void) {
  check_batch_hold(false);
}

/* A launch of `count` arguments of `size` bytes each, argument i's bytes
 * all i + seed. */
typedef struct {
  hrx_kernel_launch_t launch;
  const void* args[8];
  uint32_t sizes[8];
  uint8_t values[8][256];
} test_launch_t;

static void test_launch_init(test_launch_t* t, uint32_t count, uint32_t size,
                             uint8_t seed) {
  memset(t, 0, sizeof(*t));
  t->launch.grid[0] = 3;
  t->launch.block[0] = 32;
  t->launch.arg_count = count;
  for (uint32_t i = 0; i < count; ++i) {
    memset(t->values[i], (int)(i + seed), size);
    t->args[i] = t->values[i];
    t->sizes[i] = size;
  }
  t->launch.args = t->args;
  t->launch.arg_sizes = t->sizes;
}

static bool test_launch_equal(const hrx_kernel_launch_t* copy,
                              const test_launch_t* t) {
  if (copy->arg_count != t->launch.arg_count || copy->grid[0] != 3 ||
      copy->block[0] != 32) {
    return false;
  }
  for (uint32_t i = 0; i < copy->arg_count; ++i) {
    if (copy->arg_sizes[i] != t->sizes[i] ||
        memcmp(copy->args[i], t->values[i], t->sizes[i]) != 0 ||
        copy->args[i] == t->args[i] ||
        ((uintptr_t)copy->args[i] & 15) != 0) {
      return false;
    }
  }
  return true;
}

static void test_launch_copies_reuse_given_back_blocks(void) {
  hrx_launch_copies_t copies = {0};
  test_launch_t a, b;
  test_launch_init(&a, 3, 8, 1);
  test_launch_init(&b, 2, 4, 7);
  hrx_kernel_launch_t* first = hrx_launch_copies_make(&copies, &a.launch);
  CHECK(first && test_launch_equal(first, &a));
  /* The caller's values change after the copy: the copy keeps its own. */
  memset(a.values[0], 0xee, 8);
  CHECK(((const uint8_t*)first->args[0])[0] == 1);
  test_launch_init(&a, 3, 8, 1);
  hrx_launch_copies_give_back(&copies, first);
  CHECK(copies.count == 1);
  hrx_kernel_launch_t* second = hrx_launch_copies_make(&copies, &b.launch);
  CHECK(second == first);  /* the block came back */
  CHECK(test_launch_equal(second, &b));
  CHECK(copies.count == 0);
  hrx_launch_copies_give_back(&copies, second);
  hrx_launch_copies_give_back(&copies, NULL);
  CHECK(copies.count == 1);
  hrx_launch_copies_clear(&copies);
  CHECK(copies.count == 0 && copies.free == NULL);
}

static void test_launch_copies_large_launches_are_not_kept(void) {
  hrx_launch_copies_t copies = {0};
  test_launch_t big;
  test_launch_init(&big, 8, 256, 3);
  CHECK(hrx_launch_copy_bytes(&big.launch) > HRX_LAUNCH_COPY_BLOCK_BYTES);
  hrx_kernel_launch_t* copy = hrx_launch_copies_make(&copies, &big.launch);
  CHECK(copy && test_launch_equal(copy, &big));
  hrx_launch_copies_give_back(&copies, copy);  /* freed, not listed */
  CHECK(copies.count == 0 && copies.free == NULL);
}

static void test_launch_copies_keep_at_most_two_batches(void) {
  hrx_launch_copies_t copies = {0};
  enum { N = HRX_LAUNCH_COPY_FREE_MAX + 5 };
  static hrx_kernel_launch_t* made[N];
  test_launch_t t;
  test_launch_init(&t, 1, 8, 0);
  for (int i = 0; i < N; ++i) {
    made[i] = hrx_launch_copies_make(&copies, &t.launch);
    CHECK(made[i] != NULL);
  }
  for (int i = 0; i < N; ++i) hrx_launch_copies_give_back(&copies, made[i]);
  CHECK(copies.count == HRX_LAUNCH_COPY_FREE_MAX);
  hrx_launch_copies_clear(&copies);
}

int main(int argc, char** argv) {
  static const hrx_test_t tests[] = {
      {"a_partial_batch_is_held_behind_two_queued",
       test_a_partial_batch_is_held_behind_two_queued},
      {"without_a_hold_each_batch_goes_at_its_delay",
       test_without_a_hold_each_batch_goes_at_its_delay},
      {"launch_copies_reuse_given_back_blocks",
       test_launch_copies_reuse_given_back_blocks},
      {"launch_copies_large_launches_are_not_kept",
       test_launch_copies_large_launches_are_not_kept},
      {"launch_copies_keep_at_most_two_batches",
       test_launch_copies_keep_at_most_two_batches},
      {"batched_commands_fit_the_kernel_grid",
       test_batched_commands_fit_the_kernel_grid},
      {"plan_disjoint_commands_run_in_parallel",
       test_plan_disjoint_commands_run_in_parallel},
      {"plan_same_rewrite_needs_no_barrier",
       test_plan_same_rewrite_needs_no_barrier},
      {"plan_read_after_write_waits", test_plan_read_after_write_waits},
      {"plan_write_after_read_waits", test_plan_write_after_read_waits},
      {"plan_overlapping_writes_of_another_shape_wait",
       test_plan_overlapping_writes_of_another_shape_wait},
      {"plan_barrier_resets_the_segment",
       test_plan_barrier_resets_the_segment},
      {"lone_batched_fill_is_published_without_synchronize",
       test_lone_batched_fill_is_published_without_synchronize},
      {"switch_off_publishes_pending_work",
       test_switch_off_publishes_pending_work},
      {"release_publishes_and_buffers_wait",
       test_release_publishes_and_buffers_wait},
  };
  int passed = 0, failed = 0;
  for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); ++i) {
    if (argc > 1 && !strstr(tests[i].name, argv[1])) continue;
    int failed_before = hrx_test_failed;
    tests[i].run();
    bool ok = hrx_test_failed == failed_before;
    printf("%s %s\n", ok ? "ok  " : "FAIL", tests[i].name);
    if (ok) ++passed; else ++failed;
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
