/* The calling thread's non-blocking submission mode
 * (hrx_thread_set_nonblocking), timing events and hrx_stream_query, on the
 * host backend. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "drivers/fault/fault_backend.h"
#include "check.h"
#include "core/live_device.h"
#include "hrx.h"

#define BIG (256ull << 20)  /* a fill that keeps a host worker busy a while */

static hrx_device_t* open_host(void) {
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  return device;
}

/* A host device with a stream, a buffer of `bytes` (none when 0) and, with
 * `big`, a second one of BIG bytes. Variables the test sets around it
 * apply to the device. */
typedef struct {
  hrx_device_t* device;
  hrx_stream_t* stream;
  hrx_buffer_t* buffer;
  hrx_buffer_t* big;
} fixture_t;

static fixture_t fixture_open(uint64_t bytes, bool big) {
  fixture_t f = {open_host(), NULL, NULL, NULL};
  CHECK_OK(hrx_stream_create(f.device, &f.stream));
  if (big) CHECK_OK(hrx_buffer_allocate(f.device, BIG, &f.big));
  if (bytes) CHECK_OK(hrx_buffer_allocate(f.device, bytes, &f.buffer));
  return f;
}

static void fixture_close(fixture_t* f) {
  hrx_buffer_release(f->big);
  hrx_buffer_release(f->buffer);
  hrx_stream_release(f->stream);
  hrx_device_release(f->device);
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
  fixture_t f = fixture_open(64, false);
  CHECK(hrx_thread_set_nonblocking(true) == false);
  CHECK_OK(hrx_stream_fill(f.stream, part(f.buffer, 0, 32), 7));
  uint8_t data[32];
  memset(data, 9, sizeof(data));
  CHECK_OK(hrx_stream_upload(f.stream, part(f.buffer, 32, 32), data, 32));
  hrx_event_t* event = NULL;
  CHECK_OK(hrx_stream_record_event(f.stream, &event));
  CHECK_OK(hrx_stream_wait_event(f.stream, event));
  CHECK(hrx_thread_set_nonblocking(false) == true);
  uint8_t out[64];
  CHECK_OK(hrx_stream_read_blocking(f.stream, whole(f.buffer), out, 64,
                                   NULL, NULL));
  CHECK(out[0] == 7 && out[31] == 7 && out[32] == 9 && out[63] == 9);
  hrx_event_release(event);
  fixture_close(&f);
}

/* A full host ring: WOULD_BLOCK with nothing submitted; the same call made
 * blocking then goes through. */
static void test_full_queue_would_block(void) {
  setenv("HRX_HOST_RING_CAPACITY", "2", 1);
  fixture_t f = fixture_open(64, true);
  unsetenv("HRX_HOST_RING_CAPACITY");
  hrx_device_set_batching(f.device, false);
  for (int i = 0; i < 3; ++i) {
    CHECK_OK(hrx_stream_fill(f.stream, whole(f.big), i));
  }
  uint64_t before = hrx_device_commands_submitted(f.device);
  hrx_thread_set_nonblocking(true);
  CHECK_CODE(hrx_stream_fill(f.stream, whole(f.buffer), 1),
             HRX_STATUS_WOULD_BLOCK,
             "full host queue");
  uint8_t data[64] = {0};
  CHECK_CODE(hrx_stream_upload(f.stream, whole(f.buffer), data, 64),
             HRX_STATUS_WOULD_BLOCK, NULL);
  hrx_event_t* timing = NULL;
  CHECK_CODE(hrx_stream_record_timing_event(f.stream, &timing),
             HRX_STATUS_WOULD_BLOCK, NULL);
  CHECK(timing == NULL);
  bool done = true;
  CHECK_OK(hrx_stream_query(f.stream, &done));
  CHECK(!done);
  hrx_thread_set_nonblocking(false);
  CHECK(hrx_device_commands_submitted(f.device) == before);
  CHECK_OK(hrx_stream_fill(f.stream, whole(f.buffer), 1));
  CHECK_OK(hrx_stream_synchronize(f.stream, NULL, NULL));
  CHECK_OK(hrx_stream_query(f.stream, &done));
  CHECK(done);
  fixture_close(&f);
}

/* Under the fault wrapper a call the backend answered with WOULD_BLOCK is
 * neither a call of the fault schedule nor a native command: the blocking
 * retry is the 4th fill and the next one the 5th, which fails the stream. */
static void test_would_block_is_not_a_fault_call(void) {
  setenv("HRX_HOST_RING_CAPACITY", "2", 1);
  setenv("HRX_FAULTS", "fill:5", 1);
  fixture_t f = fixture_open(64, true);
  unsetenv("HRX_FAULTS");
  unsetenv("HRX_HOST_RING_CAPACITY");
  hrx_device_set_batching(f.device, false);
  for (int i = 0; i < 3; ++i) {
    CHECK_OK(hrx_stream_fill(f.stream, whole(f.big), i));
  }
  hrx_fault_counts_t before, after;
  hrx_fault_query_counts(&before);
  hrx_thread_set_nonblocking(true);
  CHECK_CODE(hrx_stream_fill(f.stream, whole(f.buffer), 1),
             HRX_STATUS_WOULD_BLOCK,
             "full host queue");
  hrx_thread_set_nonblocking(false);
  hrx_fault_query_counts(&after);
  CHECK(after.native_commands == before.native_commands);
  CHECK_OK(hrx_stream_fill(f.stream, whole(f.buffer), 1));
  CHECK_OK(hrx_stream_synchronize(f.stream, NULL, NULL));
  CHECK_OK(hrx_stream_fill(f.stream, whole(f.buffer), 2));
  CHECK_CODE(hrx_stream_synchronize(f.stream, NULL, NULL),
             HRX_STATUS_DEVICE_ERROR,
             "fill call #5 failed");
  fixture_close(&f);
}

/* Whether the first `count` bytes of the buffer are 64 ones, 64 twos, and
 * so on (what the tests below write, in order). */
static bool ladder_is(hrx_stream_t* stream, hrx_buffer_t* buffer,
                      uint64_t count) {
  uint8_t out[1024];
  CHECK(count <= sizeof(out));
  CHECK_OK(hrx_stream_read_blocking(stream, part(buffer, 0, count), out, count,
                                   NULL, NULL));
  bool right = true;
  for (uint64_t i = 0; i < count; ++i) right = right && out[i] == i / 64 + 1;
  return right;
}

/* Batching with room in the queue: non-blocking commands start, fill and
 * publish batches, and observations and lone commands publish the pending
 * batch first, none of them reporting WOULD_BLOCK. */
static void test_batches_publish_without_waiting(void) {
  setenv("HRX_BATCH_MAX_COMMANDS", "4", 1);
  setenv("HRX_BATCH_DELAY_US", "10000000", 1);
  fixture_t f = fixture_open(1024, false);
  unsetenv("HRX_BATCH_MAX_COMMANDS");
  unsetenv("HRX_BATCH_DELAY_US");
  uint64_t before = hrx_device_commands_submitted(f.device);
  hrx_thread_set_nonblocking(true);
  /* The first goes out alone; the second starts a batch (the flusher
   * starts watching the stream), the fifth fills and publishes it. */
  for (int i = 0; i < 5; ++i) {
    CHECK_OK(hrx_stream_fill(f.stream, part(f.buffer, (uint64_t)i * 64, 64),
                             (uint8_t)(i + 1)));
  }
  hrx_event_t* event = NULL;
  CHECK_OK(hrx_stream_fill(f.stream, part(f.buffer, 320, 64), 6));
  CHECK_OK(hrx_stream_record_event(f.stream, &event));  /* publishes fill 6 */
  CHECK_OK(hrx_stream_fill(f.stream, part(f.buffer, 384, 64), 7));
  uint8_t data[64];
  memset(data, 8, sizeof(data));
  CHECK_OK(hrx_stream_upload(f.stream, part(f.buffer, 448, 64), data, 64));
  hrx_thread_set_nonblocking(false);
  /* Seven fills, the event record and the upload, each accepted once. */
  CHECK(hrx_device_commands_submitted(f.device) == before + 9);
  CHECK_OK(hrx_event_synchronize(event, NULL, NULL));
  CHECK(ladder_is(f.stream, f.buffer, 512));
  hrx_event_release(event);
  fixture_close(&f);
}

/* Batching with the queue full: the command that fills the batch is still
 * accepted (the batch stays pending, whole), and what would have to
 * publish it before going on (the next command, record_event, a lone
 * command) reports WOULD_BLOCK having changed nothing; the same calls made
 * blocking then go through in order. */
static void test_batches_would_block_on_a_full_queue(void) {
  setenv("HRX_HOST_RING_CAPACITY", "2", 1);
  setenv("HRX_BATCH_MAX_COMMANDS", "4", 1);
  setenv("HRX_BATCH_DELAY_US", "10000000", 1);
  fixture_t f = fixture_open(1024, true);
  unsetenv("HRX_HOST_RING_CAPACITY");
  unsetenv("HRX_BATCH_MAX_COMMANDS");
  unsetenv("HRX_BATCH_DELAY_US");
  /* One big fill running, two queued: the ring is full for a while. */
  for (int i = 0; i < 3; ++i) {
    CHECK_OK(hrx_stream_fill(f.stream, whole(f.big), i));
  }
  uint64_t before = hrx_device_commands_submitted(f.device);
  hrx_thread_set_nonblocking(true);
  for (int i = 0; i < 4; ++i) {
    CHECK_OK(hrx_stream_fill(f.stream, part(f.buffer, (uint64_t)i * 64, 64),
                             (uint8_t)(i + 1)));
  }
  CHECK_CODE(hrx_stream_fill(f.stream, part(f.buffer, 256, 64), 5),
             HRX_STATUS_WOULD_BLOCK, "full host queue");
  hrx_event_t* event = NULL;
  CHECK_CODE(hrx_stream_record_event(f.stream, &event), HRX_STATUS_WOULD_BLOCK,
             "pending batch");
  CHECK(event == NULL);
  uint8_t data[64];
  memset(data, 6, sizeof(data));
  CHECK_CODE(hrx_stream_upload(f.stream, part(f.buffer, 320, 64), data, 64),
             HRX_STATUS_WOULD_BLOCK, "pending batch");
  bool done = true;
  CHECK_OK(hrx_stream_query(f.stream, &done));
  CHECK(!done);
  hrx_thread_set_nonblocking(false);
  /* The four accepted fills (published by this count), nothing else. */
  CHECK(hrx_device_commands_submitted(f.device) == before + 4);
  CHECK_OK(hrx_stream_fill(f.stream, part(f.buffer, 256, 64), 5));
  CHECK_OK(hrx_stream_upload(f.stream, part(f.buffer, 320, 64), data, 64));
  CHECK_OK(hrx_stream_record_event(f.stream, &event));
  CHECK_OK(hrx_event_synchronize(event, NULL, NULL));
  CHECK(ladder_is(f.stream, f.buffer, 384));
  hrx_event_release(event);
  fixture_close(&f);
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
  fixture_t f = fixture_open(64, false);
  hrx_graph_t* graph = NULL;
  CHECK_OK(hrx_graph_create(f.device, &graph));
  CHECK_OK(hrx_graph_add_host(graph, hold_callback, NULL, NULL, NULL, 0, NULL));
  hrx_thread_set_nonblocking(true);
  CHECK_CODE(hrx_graph_launch(graph, f.stream, NULL), HRX_STATUS_WOULD_BLOCK,
             "first launch");
  hrx_thread_set_nonblocking(false);
  atomic_store(&callback_release, 0);
  hrx_completion_t* completion = NULL;
  CHECK_OK(hrx_graph_launch(graph, f.stream, &completion));
  hrx_thread_set_nonblocking(true);
  CHECK_CODE(hrx_graph_launch(graph, f.stream, NULL), HRX_STATUS_WOULD_BLOCK,
             NULL);
  CHECK_CODE(hrx_stream_fill(f.stream, whole(f.buffer), 1),
             HRX_STATUS_WOULD_BLOCK,
             "host callbacks");
  hrx_thread_set_nonblocking(false);
  atomic_store(&callback_release, 1);
  bool done = false;
  CHECK_OK(hrx_completion_wait(completion, -1, &done));
  CHECK(done);
  CHECK_OK(hrx_stream_synchronize(f.stream, NULL, NULL));
  hrx_thread_set_nonblocking(true);
  CHECK_OK(hrx_stream_fill(f.stream, whole(f.buffer), 1));
  /* The host backend has no native graphs. */
  CHECK_CODE(hrx_graph_launch(graph, f.stream, NULL), HRX_STATUS_WOULD_BLOCK,
             "node by node");
  hrx_thread_set_nonblocking(false);
  CHECK_OK(hrx_stream_synchronize(f.stream, NULL, NULL));
  hrx_completion_release(completion);
  hrx_graph_release(graph);
  fixture_close(&f);
}

/* Timing events: elapsed time in ms between completed timing events;
 * refused for plain events and before completion. */
static void test_timing_events(void) {
  fixture_t f = fixture_open(0, true);
  hrx_device_set_batching(f.device, false);
  hrx_event_t* start = NULL;
  hrx_event_t* end = NULL;
  hrx_event_t* plain = NULL;
  CHECK_OK(hrx_stream_record_timing_event(f.stream, &start));
  CHECK(hrx_event_timing(start));
  CHECK_OK(hrx_stream_fill(f.stream, whole(f.big), 3));
  CHECK_OK(hrx_stream_fill(f.stream, whole(f.big), 4));
  CHECK_OK(hrx_stream_record_timing_event(f.stream, &end));
  CHECK_OK(hrx_stream_record_event(f.stream, &plain));
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
  fixture_close(&f);
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

int main(void) {
  test_nonblocking_submits();
  test_full_queue_would_block();
  test_would_block_is_not_a_fault_call();
  test_batches_publish_without_waiting();
  test_batches_would_block_on_a_full_queue();
  test_graphs_and_callbacks_would_block();
  test_timing_events();
  test_threads_nonblocking();
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
