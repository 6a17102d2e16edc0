/* The calling thread's non-blocking submission mode
 * (hrx_thread_set_nonblocking), timing events and hrx_stream_query, on the
 * host backend. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "backends/fault/fault_backend.h"
#include "check.h"
#include "device.h"
#include "hrx.h"

#define BIG (256ull << 20)  /* a fill that keeps a host worker busy a while */

static hrx_device_t* open_host(void) {
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  return device;
}

static hrx_view_t whole(hrx_buffer_t* buffer) {
  hrx_view_t view;
  hrx_status_free(hrx_view_make(buffer, 0, hrx_buffer_size(buffer), &view));
  return view;
}

static hrx_view_t part(hrx_buffer_t* buffer, uint64_t offset, uint64_t n) {
  hrx_view_t view;
  hrx_status_free(hrx_view_make(buffer, offset, n, &view));
  return view;
}

/* Without anything to wait for, non-blocking submissions just work, and
 * the mode is per thread with the previous value returned. */
static void test_nonblocking_submits(void) {
  hrx_device_t* device = open_host();
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 64, &buffer));
  CHECK(hrx_thread_set_nonblocking(true) == false);
  CHECK_OK(hrx_stream_fill(stream, part(buffer, 0, 32), 7));
  uint8_t data[32];
  memset(data, 9, sizeof(data));
  CHECK_OK(hrx_stream_upload(stream, part(buffer, 32, 32), data, 32));
  hrx_event_t* event = NULL;
  CHECK_OK(hrx_stream_record_event(stream, &event));
  CHECK_OK(hrx_stream_wait_event(stream, event));
  CHECK(hrx_thread_set_nonblocking(false) == true);
  uint8_t out[64];
  CHECK_OK(hrx_stream_read_blocking(stream, whole(buffer), out, 64,
                                   NULL, NULL));
  CHECK(out[0] == 7 && out[31] == 7 && out[32] == 9 && out[63] == 9);
  hrx_event_release(event);
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

/* A full host ring: WOULD_BLOCK with nothing submitted; the same call made
 * blocking then goes through. */
static void test_full_queue_would_block(void) {
  setenv("HRX_HOST_RING_CAPACITY", "2", 1);
  hrx_device_t* device = open_host();
  unsetenv("HRX_HOST_RING_CAPACITY");
  hrx_device_set_batching(device, false);
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* big = NULL;
  hrx_buffer_t* small = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, BIG, &big));
  CHECK_OK(hrx_buffer_allocate(device, 64, &small));
  for (int i = 0; i < 3; ++i) CHECK_OK(hrx_stream_fill(stream, whole(big), i));
  uint64_t before = hrx_device_commands_submitted(device);
  hrx_thread_set_nonblocking(true);
  CHECK_CODE(hrx_stream_fill(stream, whole(small), 1), HRX_STATUS_WOULD_BLOCK,
             "full host queue");
  uint8_t data[64] = {0};
  CHECK_CODE(hrx_stream_upload(stream, whole(small), data, 64),
             HRX_STATUS_WOULD_BLOCK, NULL);
  hrx_event_t* timing = NULL;
  CHECK_CODE(hrx_stream_record_timing_event(stream, &timing),
             HRX_STATUS_WOULD_BLOCK, NULL);
  CHECK(timing == NULL);
  bool done = true;
  CHECK_OK(hrx_stream_query(stream, &done));
  CHECK(!done);
  hrx_thread_set_nonblocking(false);
  CHECK(hrx_device_commands_submitted(device) == before);
  CHECK_OK(hrx_stream_fill(stream, whole(small), 1));
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  CHECK_OK(hrx_stream_query(stream, &done));
  CHECK(done);
  hrx_buffer_release(big);
  hrx_buffer_release(small);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

/* Under the fault wrapper a call the backend answered with WOULD_BLOCK is
 * neither a call of the fault schedule nor a native command: the blocking
 * retry is the 4th fill and the next one the 5th, which fails the stream. */
static void test_would_block_is_not_a_fault_call(void) {
  setenv("HRX_HOST_RING_CAPACITY", "2", 1);
  setenv("HRX_FAULTS", "fill:5", 1);
  hrx_device_t* device = open_host();
  unsetenv("HRX_FAULTS");
  unsetenv("HRX_HOST_RING_CAPACITY");
  hrx_device_set_batching(device, false);
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* big = NULL;
  hrx_buffer_t* small = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, BIG, &big));
  CHECK_OK(hrx_buffer_allocate(device, 64, &small));
  for (int i = 0; i < 3; ++i) CHECK_OK(hrx_stream_fill(stream, whole(big), i));
  hrx_fault_counts_t before, after;
  hrx_fault_query_counts(&before);
  hrx_thread_set_nonblocking(true);
  CHECK_CODE(hrx_stream_fill(stream, whole(small), 1), HRX_STATUS_WOULD_BLOCK,
             "full host queue");
  hrx_thread_set_nonblocking(false);
  hrx_fault_query_counts(&after);
  CHECK(after.native_commands == before.native_commands);
  CHECK_OK(hrx_stream_fill(stream, whole(small), 1));
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  CHECK_OK(hrx_stream_fill(stream, whole(small), 2));
  CHECK_CODE(hrx_stream_synchronize(stream, NULL, NULL),
             HRX_STATUS_DEVICE_ERROR,
             "fill call #5 failed");
  hrx_buffer_release(big);
  hrx_buffer_release(small);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

/* Batching: a non-blocking command never publishes a batch, never fills
 * one and never starts one the flusher is not watching. */
static void test_batches_would_block(void) {
  setenv("HRX_BATCH_MAX_COMMANDS", "4", 1);
  setenv("HRX_BATCH_DELAY_US", "10000000", 1);
  hrx_device_t* device = open_host();
  unsetenv("HRX_BATCH_MAX_COMMANDS");
  unsetenv("HRX_BATCH_DELAY_US");
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 1024, &buffer));
  /* The stream's first command goes out alone; the next would start a batch
   * before the flusher lists the stream. */
  hrx_thread_set_nonblocking(true);
  CHECK_OK(hrx_stream_fill(stream, part(buffer, 0, 64), 1));
  CHECK_CODE(hrx_stream_fill(stream, part(buffer, 64, 64), 2),
             HRX_STATUS_WOULD_BLOCK, "deadline thread");
  hrx_thread_set_nonblocking(false);
  CHECK_OK(hrx_stream_fill(stream, part(buffer, 64, 64), 2));
  hrx_thread_set_nonblocking(true);
  CHECK_OK(hrx_stream_fill(stream, part(buffer, 128, 64), 3));
  CHECK_OK(hrx_stream_fill(stream, part(buffer, 192, 64), 4));
  /* The fourth would fill the batch: publishing it may wait. */
  CHECK_CODE(hrx_stream_fill(stream, part(buffer, 256, 64), 5),
             HRX_STATUS_WOULD_BLOCK, "full batch");
  /* Observations and lone commands would publish the pending batch. */
  hrx_event_t* event = NULL;
  CHECK_CODE(hrx_stream_record_event(stream, &event), HRX_STATUS_WOULD_BLOCK,
             "pending batch");
  uint8_t data[64] = {0};
  CHECK_CODE(hrx_stream_upload(stream, part(buffer, 512, 64), data, 64),
             HRX_STATUS_WOULD_BLOCK, "pending batch");
  bool done = true;
  CHECK_OK(hrx_stream_query(stream, &done));
  CHECK(!done);
  hrx_thread_set_nonblocking(false);
  CHECK_OK(hrx_stream_fill(stream, part(buffer, 256, 64), 5));
  CHECK_OK(hrx_stream_record_event(stream, &event));
  CHECK_OK(hrx_event_synchronize(event, NULL, NULL));
  uint8_t out[320];
  CHECK_OK(hrx_stream_read_blocking(stream, part(buffer, 0, 320), out, 320,
                                     NULL, NULL));
  bool right = true;
  for (int i = 0; i < 320; ++i) right = right && out[i] == i / 64 + 1;
  CHECK(right);
  hrx_event_release(event);
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

static atomic_int callback_release;

static hrx_status_t hold_callback(void* user_data,
                                  hrx_completion_t* completion) {
  (void)user_data;
  (void)completion;
  while (!atomic_load(&callback_release)) sched_yield();
  return NULL;
}

/* Graphs: not before the first launch prepared them, never node by node;
 * and while a launch's host callbacks are in flight, no non-blocking
 * submission proceeds (a callback may need the caller's global lock). */
static void test_graphs_and_callbacks_would_block(void) {
  hrx_device_t* device = open_host();
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* buffer = NULL;
  hrx_graph_t* graph = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 64, &buffer));
  CHECK_OK(hrx_graph_create(device, &graph));
  CHECK_OK(hrx_graph_add_host(graph, hold_callback, NULL, NULL, NULL, 0, NULL));
  hrx_thread_set_nonblocking(true);
  CHECK_CODE(hrx_graph_launch(graph, stream, NULL), HRX_STATUS_WOULD_BLOCK,
             "first launch");
  hrx_thread_set_nonblocking(false);
  atomic_store(&callback_release, 0);
  hrx_completion_t* completion = NULL;
  CHECK_OK(hrx_graph_launch(graph, stream, &completion));
  hrx_thread_set_nonblocking(true);
  CHECK_CODE(hrx_graph_launch(graph, stream, NULL), HRX_STATUS_WOULD_BLOCK,
             NULL);
  CHECK_CODE(hrx_stream_fill(stream, whole(buffer), 1), HRX_STATUS_WOULD_BLOCK,
             "host callbacks");
  hrx_thread_set_nonblocking(false);
  atomic_store(&callback_release, 1);
  bool done = false;
  CHECK_OK(hrx_completion_wait(completion, -1, &done));
  CHECK(done);
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  hrx_thread_set_nonblocking(true);
  CHECK_OK(hrx_stream_fill(stream, whole(buffer), 1));
  /* The host backend has no native graphs. */
  CHECK_CODE(hrx_graph_launch(graph, stream, NULL), HRX_STATUS_WOULD_BLOCK,
             "node by node");
  hrx_thread_set_nonblocking(false);
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  hrx_completion_release(completion);
  hrx_graph_release(graph);
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

/* Timing events: elapsed time in ms between completed timing events;
 * refused for plain events and before completion. */
static void test_timing_events(void) {
  hrx_device_t* device = open_host();
  hrx_device_set_batching(device, false);
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* big = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, BIG, &big));
  hrx_event_t* start = NULL;
  hrx_event_t* end = NULL;
  hrx_event_t* plain = NULL;
  CHECK_OK(hrx_stream_record_timing_event(stream, &start));
  CHECK(hrx_event_timing(start));
  CHECK_OK(hrx_stream_fill(stream, whole(big), 3));
  CHECK_OK(hrx_stream_fill(stream, whole(big), 4));
  CHECK_OK(hrx_stream_record_timing_event(stream, &end));
  CHECK_OK(hrx_stream_record_event(stream, &plain));
  CHECK(!hrx_event_timing(plain));
  double ms = -1;
  bool done = true;
  CHECK_OK(hrx_event_query(end, &done));
  if (!done) {
    CHECK_CODE(hrx_event_elapsed_ms(start, end, &ms),
               HRX_STATUS_FAILED_PRECONDITION, "not complete");
  }
  CHECK_OK(hrx_event_synchronize(end, NULL, NULL));
  CHECK_OK(hrx_event_elapsed_ms(start, end, &ms));
  /* Two 256 MiB fills take well over a microsecond, and under a minute. */
  CHECK(ms > 0.001 && ms < 60000.0);
  double back = 0;
  CHECK_OK(hrx_event_elapsed_ms(end, start, &back));
  CHECK(back == -ms);
  CHECK_CODE(hrx_event_elapsed_ms(start, plain, &ms),
             HRX_STATUS_INVALID_ARGUMENT, "without timing");
  CHECK_CODE(hrx_event_elapsed_ms(NULL, end, &ms), HRX_STATUS_INVALID_ARGUMENT,
             NULL);
  hrx_event_release(start);
  hrx_event_release(end);
  hrx_event_release(plain);
  hrx_buffer_release(big);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

/* Several threads in non-blocking mode, each repeating refused calls
 * blocking, keep every command and its order (run under TSan too). */
typedef struct {
  hrx_device_t* device;
  int seed;
  bool right;
} worker_t;

static void* nonblocking_worker(void* arg) {
  worker_t* worker = arg;
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* buffer = NULL;
  hrx_status_free(hrx_stream_create(worker->device, &stream));
  hrx_status_free(hrx_buffer_allocate(worker->device, 4096, &buffer));
  for (int round = 0; round < 200; ++round) {
    hrx_view_t view = part(buffer, (uint64_t)(round % 64) * 64, 64);
    uint8_t byte = (uint8_t)(worker->seed + round);
    hrx_thread_set_nonblocking(true);
    hrx_status_t status = hrx_stream_fill(stream, view, byte);
    hrx_thread_set_nonblocking(false);
    if (hrx_status_code(status) == HRX_STATUS_WOULD_BLOCK) {
      hrx_status_free(status);
      status = hrx_stream_fill(stream, view, byte);
    }
    hrx_status_free(status);
  }
  uint8_t out[4096];
  hrx_status_free(hrx_stream_read_blocking(stream, whole(buffer), out, 4096,
                                           NULL, NULL));
  worker->right = true;
  for (int slot = 0; slot < 64; ++slot) {
    /* Rounds 0..199 wrote slot round % 64; the last to write a slot: */
    int last = slot < 8 ? 192 + slot : 128 + slot;
    uint8_t expected = (uint8_t)(worker->seed + last);
    worker->right = worker->right && out[slot * 64] == expected &&
                    out[slot * 64 + 63] == expected;
  }
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  return NULL;
}

static void test_threads_nonblocking(void) {
  setenv("HRX_HOST_RING_CAPACITY", "4", 1);
  hrx_device_t* device = open_host();
  unsetenv("HRX_HOST_RING_CAPACITY");
  CHECK_OK(hrx_device_set_stream_queue_count(device, 2));
  enum { THREADS = 6 };
  pthread_t threads[THREADS];
  worker_t workers[THREADS];
  for (int i = 0; i < THREADS; ++i) {
    workers[i] = (worker_t){device, i * 31, false};
    pthread_create(&threads[i], NULL, nonblocking_worker, &workers[i]);
  }
  for (int i = 0; i < THREADS; ++i) {
    pthread_join(threads[i], NULL);
    CHECK(workers[i].right);
  }
  hrx_device_release(device);
}

static atomic_int release_gate;
static atomic_int release_ran;

/* A deferred release that holds the device's release helper until the
 * test opens the gate. */
static void held_release(void* object) {
  (void)object;
  while (!atomic_load(&release_gate)) sched_yield();
  atomic_store(&release_ran, 1);
}

/* While deferred releases of the device wait or run (they may wait for
 * queued work), a non-blocking submission reports WOULD_BLOCK at its entry
 * and changes nothing; once they are done it goes through. */
static void test_deferred_releases_would_block(void) {
  hrx_device_t* device = open_host();
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 64, &buffer));
  atomic_store(&release_gate, 0);
  hrx_device_defer_release(device, held_release, NULL);
  uint64_t before = hrx_device_commands_submitted(device);
  hrx_thread_set_nonblocking(true);
  CHECK_CODE(hrx_stream_fill(stream, whole(buffer), 1), HRX_STATUS_WOULD_BLOCK,
             "deferred releases");
  hrx_thread_set_nonblocking(false);
  CHECK(hrx_device_commands_submitted(device) == before);
  CHECK(!atomic_load(&release_ran));
  atomic_store(&release_gate, 1);
  /* The blocking call waits for the helper's drain, then runs. */
  CHECK_OK(hrx_stream_fill(stream, whole(buffer), 1));
  CHECK(atomic_load(&release_ran));
  uint8_t data[64] = {0};
  hrx_thread_set_nonblocking(true);
  CHECK_OK(hrx_stream_upload(stream, whole(buffer), data, 64));
  hrx_thread_set_nonblocking(false);
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

int main(void) {
  test_nonblocking_submits();
  test_full_queue_would_block();
  test_would_block_is_not_a_fault_call();
  test_batches_would_block();
  test_graphs_and_callbacks_would_block();
  test_deferred_releases_would_block();
  test_timing_events();
  test_threads_nonblocking();
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
