/* C tests of the core through the public API, on the host backend: the pool
 * contract, streams, views, events, the publication rule and error paths.
 * Runs without Python, also under ASan+UBSan and TSan. Prints
 * "N passed, M failed" last and exits non-zero on any failure. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hrx.h"
#include "testing/hrx_testing.h"

#include "check.h"

static hrx_device_t* open_host(void) {
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  return device;
}

static hrx_view_t whole(hrx_buffer_t* buffer) {
  hrx_view_t view = {buffer, 0, hrx_buffer_size(buffer)};
  return view;
}

static void test_pool_contract(int n) {
  hrx_device_t* device = open_host();
  hrx_pool_info_t info;
  CHECK(hrx_device_stream_queue_count(device) == 8);
  CHECK_CODE(hrx_device_set_stream_queue_count(device, 0),
             HRX_STATUS_INVALID_ARGUMENT, "between 1 and 64");
  CHECK_CODE(hrx_device_set_stream_queue_count(device, 65),
             HRX_STATUS_INVALID_ARGUMENT, NULL);
  CHECK_CODE(hrx_device_set_stream_queue_count(device, -3),
             HRX_STATUS_INVALID_ARGUMENT, NULL);
  CHECK_OK(hrx_device_set_stream_queue_count(device, n));
  /* A second handle shares the live device. */
  hrx_device_t* again = open_host();
  CHECK(again == device);
  CHECK(hrx_device_stream_queue_count(again) == n);
  /* A queue outside the pool is not first use. */
  hrx_stream_t* fabric = NULL;
  CHECK_OK(hrx_stream_create_dedicated(device, &fabric));
  CHECK(hrx_stream_queue_index(fabric) == -1);
  hrx_device_query_pool(device, &info);
  CHECK(!info.first_use && info.fabric_queues == 1);
  CHECK_OK(hrx_device_set_stream_queue_count(device, n));
  hrx_stream_t* streams[40];
  int count = 2 * n + 1;
  for (int k = 0; k < count; ++k) {
    CHECK_OK(hrx_stream_create(k % 2 ? again : device, &streams[k]));
    CHECK(hrx_stream_queue_index(streams[k]) == k % n);
    CHECK(hrx_stream_native_handle(streams[k]) !=
          hrx_stream_native_handle(fabric));
    hrx_device_query_pool(device, &info);
    CHECK(info.queues_created == (k + 1 < n ? k + 1 : n));
  }
  CHECK_OK(hrx_device_set_stream_queue_count(device, n));
  CHECK_CODE(hrx_device_set_stream_queue_count(device, n + 1),
             HRX_STATUS_BUSY, "cannot change");
  /* The refusal names what holds the live device: two handles, the pool
   * streams and the one outside the pool, a buffer. */
  char holders[96];
  hrx_buffer_t* held = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 16, &held));
  snprintf(holders, sizeof(holders),
           "held by: 2 device handles, %d streams, 1 buffer. ", count + 1);
  CHECK_CODE(hrx_device_set_stream_queue_count(device, n + 1),
             HRX_STATUS_BUSY, holders);
  hrx_buffer_release(held);
  CHECK_CODE(hrx_device_set_stream_queue_count(device, 0),
             HRX_STATUS_INVALID_ARGUMENT, NULL);
  for (int k = 0; k < count; ++k) hrx_stream_release(streams[k]);
  hrx_stream_release(fabric);
  CHECK_CODE(hrx_device_set_stream_queue_count(device, n + 1),
             HRX_STATUS_BUSY, "held by: 2 device handles. ");
  hrx_device_release(again);
  hrx_device_release(device);
  /* Every handle gone: a fresh live device at the default. */
  device = open_host();
  CHECK(hrx_device_stream_queue_count(device) == 8);
  hrx_device_query_pool(device, &info);
  CHECK(info.queues_created == 0 && !info.first_use);
  hrx_device_release(device);
}

/* Field by field: the struct has padding, which a memcmp would read. */
static bool pool_info_equal(const hrx_pool_info_t* a, const hrx_pool_info_t* b) {
  return a->queue_count == b->queue_count &&
         a->queues_created == b->queues_created &&
         a->next_slot == b->next_slot && a->first_use == b->first_use &&
         a->live_streams == b->live_streams &&
         a->fabric_queues == b->fabric_queues;
}

static void test_capacity_refusal(void) {
  setenv("HRX_HOST_MAX_QUEUES", "2", 1);
  hrx_device_t* device = open_host();
  unsetenv("HRX_HOST_MAX_QUEUES");
  CHECK_OK(hrx_device_set_stream_queue_count(device, 4));
  hrx_stream_t* a = NULL;
  hrx_stream_t* b = NULL;
  hrx_stream_t* c = NULL;
  hrx_stream_t* fabric = NULL;
  CHECK_OK(hrx_stream_create_dedicated(device, &fabric));
  CHECK_OK(hrx_stream_create(device, &a));
  hrx_pool_info_t before, after;
  hrx_device_query_pool(device, &before);
  CHECK_CODE(hrx_stream_create(device, &b), HRX_STATUS_RESOURCE_EXHAUSTED,
             "HRX_HOST_MAX_QUEUES");
  CHECK(b == NULL);
  hrx_device_query_pool(device, &after);
  CHECK(pool_info_equal(&before, &after));
  hrx_stream_release(fabric);
  CHECK_OK(hrx_stream_create(device, &b));
  CHECK(hrx_stream_queue_index(b) == 1);
  CHECK_CODE(hrx_stream_create(device, &c), HRX_STATUS_RESOURCE_EXHAUSTED,
             "slot 2 of 4");
  hrx_stream_release(a);
  hrx_stream_release(b);
  hrx_device_release(device);
}

static void test_first_failure_is_not_first_use(void) {
  setenv("HRX_HOST_MAX_QUEUES", "1", 1);
  hrx_device_t* device = open_host();
  unsetenv("HRX_HOST_MAX_QUEUES");
  hrx_stream_t* fabric = NULL;
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create_dedicated(device, &fabric));
  CHECK_CODE(hrx_stream_create(device, &stream),
             HRX_STATUS_RESOURCE_EXHAUSTED, NULL);
  CHECK_OK(hrx_device_set_stream_queue_count(device, 3));
  hrx_stream_release(fabric);
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_CODE(hrx_device_set_stream_queue_count(device, 2), HRX_STATUS_BUSY,
             NULL);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

static void test_stream_commands(void) {
  hrx_device_t* device = open_host();
  hrx_device_info_t info;
  CHECK_OK(hrx_device_query_info(device, &info));
  CHECK(strcmp(info.platform, "cpu") == 0);
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  hrx_buffer_t* a = NULL;
  hrx_buffer_t* b = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 4096, &a));
  CHECK_OK(hrx_buffer_allocate(device, 4096, &b));
  CHECK_CODE(hrx_buffer_allocate(device, 0, &b), HRX_STATUS_INVALID_ARGUMENT,
             NULL);
  uint8_t pattern[4096];
  for (int i = 0; i < 4096; ++i) pattern[i] = (uint8_t)(i * 7);
  CHECK_OK(hrx_stream_upload(stream, whole(a), pattern, sizeof(pattern)));
  memset(pattern, 0, sizeof(pattern)); /* upload must have copied already */
  CHECK_OK(hrx_stream_fill(stream, whole(b), 0x11));
  hrx_view_t head, tail;
  CHECK_OK(hrx_view_make(a, 0, 1024, &head));
  CHECK_OK(hrx_view_make(b, 3072, 1024, &tail));
  CHECK_OK(hrx_stream_copy(stream, tail, head));
  uint8_t out[4096];
  CHECK_OK(hrx_stream_read_blocking(stream, whole(b), out, sizeof(out), NULL, NULL));
  bool ok = true;
  for (int i = 0; i < 4096; ++i) {
    uint8_t expected = i < 3072 ? 0x11 : (uint8_t)((i - 3072) * 7);
    ok = ok && out[i] == expected;
  }
  CHECK(ok);
  /* Bad input is refused before submission and changes nothing: the
   * device's count of accepted commands does not move. */
  uint64_t accepted = hrx_device_commands_submitted(device);
  hrx_view_t view;
  CHECK_CODE(hrx_view_make(a, 4000, 100, &view), HRX_STATUS_OUT_OF_RANGE, NULL);
  CHECK_CODE(hrx_view_make(a, UINT64_MAX, 2, &view), HRX_STATUS_OUT_OF_RANGE,
             NULL);
  hrx_view_t overlap_dst = {a, 0, 100}, overlap_src = {a, 50, 100};
  CHECK_CODE(hrx_stream_copy(stream, overlap_dst, overlap_src),
             HRX_STATUS_INVALID_ARGUMENT, "overlap");
  hrx_view_t adjacent = {a, 100, 100};
  CHECK_OK(hrx_stream_copy(stream, overlap_dst, adjacent));
  hrx_view_t short_view = {b, 0, 10};
  CHECK_CODE(hrx_stream_copy(stream, short_view, whole(a)),
             HRX_STATUS_INVALID_ARGUMENT, "lengths differ");
  hrx_view_t empty = {b, 0, 0};
  CHECK_CODE(hrx_stream_fill(stream, empty, 1), HRX_STATUS_INVALID_ARGUMENT,
             "empty");
  hrx_view_t wild = {b, 4090, 10};
  CHECK_CODE(hrx_stream_fill(stream, wild, 1), HRX_STATUS_OUT_OF_RANGE, NULL);
  CHECK_CODE(hrx_stream_upload(stream, whole(b), pattern, 10),
             HRX_STATUS_INVALID_ARGUMENT, "lengths must be equal");
  CHECK_CODE(hrx_stream_read_blocking(stream, whole(b), out, 10, NULL, NULL),
             HRX_STATUS_INVALID_ARGUMENT, "at least");
  /* One valid copy (adjacent ranges) was accepted among the refusals. */
  CHECK(hrx_device_commands_submitted(device) == accepted + 1);
  uint8_t again[4096];
  CHECK_OK(hrx_stream_read_blocking(stream, whole(b), again, sizeof(again), NULL, NULL));
  CHECK(memcmp(out, again, sizeof(out)) == 0);
  /* Asynchronous read. */
  hrx_readback_t* readback = NULL;
  CHECK_OK(hrx_stream_read(stream, tail, &readback));
  const uint8_t* bytes = NULL;
  CHECK_OK(hrx_readback_wait(readback, NULL, &bytes, NULL));
  CHECK(hrx_readback_length(readback) == 1024 && bytes[1] == 7);
  hrx_readback_release(readback);
  /* Foreign device. */
  hrx_device_t* other = NULL;
  setenv("HRX_HOST_DEVICE_COUNT", "2", 1);
  CHECK_OK(hrx_device_open("host", 1, &other));
  CHECK(other != device);
  hrx_buffer_t* foreign = NULL;
  CHECK_OK(hrx_buffer_allocate(other, 4096, &foreign));
  CHECK_CODE(hrx_stream_copy(stream, whole(a), whole(foreign)),
             HRX_STATUS_INVALID_ARGUMENT, "belongs to device host:1");
  hrx_stream_t* other_stream = NULL;
  CHECK_OK(hrx_stream_create(other, &other_stream));
  hrx_event_t* foreign_event = NULL;
  CHECK_OK(hrx_stream_record_event(other_stream, &foreign_event));
  /* Work of two devices meets through an event wait and copy_peer. */
  CHECK_OK(hrx_stream_wait_event(stream, foreign_event));
  CHECK_OK(hrx_device_query_info(device, &info));
  CHECK(info.device_count == 2);
  hrx_peer_path_t path = HRX_PEER_PATH_STAGED;
  CHECK_OK(hrx_device_query_peer_path(device, 1, &path));
  CHECK(path == HRX_PEER_PATH_DIRECT);
  CHECK(strcmp(hrx_peer_path_name(path), "direct") == 0);
  CHECK(hrx_peer_path_name(7) == NULL);
  CHECK_CODE(hrx_device_query_peer_path(device, 0, &path),
             HRX_STATUS_INVALID_ARGUMENT, "is this device");
  CHECK_CODE(hrx_device_query_peer_path(device, 2, &path),
             HRX_STATUS_OUT_OF_RANGE, "valid: 0..1");
  CHECK_OK(hrx_stream_fill(stream, whole(a), 0x5A));
  CHECK_OK(hrx_stream_copy_peer(stream, whole(foreign), whole(a)));
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  uint8_t got[16] = {0};
  hrx_view_t first;
  CHECK_OK(hrx_view_make(foreign, 0, sizeof(got), &first));
  CHECK_OK(hrx_stream_read_blocking(other_stream, first, got, sizeof(got),
                                    NULL, NULL));
  CHECK(got[0] == 0x5A && got[15] == 0x5A);
  CHECK_CODE(hrx_stream_copy_peer(stream, whole(foreign), head),
             HRX_STATUS_INVALID_ARGUMENT, "lengths differ");
  CHECK_CODE(hrx_stream_copy_peer(other_stream, whole(a), whole(a)),
             HRX_STATUS_INVALID_ARGUMENT,
             "runs on a stream of its destination's or its source's device");
  hrx_event_release(foreign_event);
  hrx_stream_release(other_stream);
  hrx_buffer_release(foreign);
  hrx_device_release(other);
  CHECK_CODE(hrx_device_open("host", 7, &other), HRX_STATUS_OUT_OF_RANGE,
             "out of range");
  CHECK_CODE(hrx_device_open("nonsense", 0, &other),
             HRX_STATUS_INVALID_ARGUMENT, "expected one of");
  /* Buffers dropped with work in flight stay alive until it is done. */
  hrx_buffer_t* big_src = NULL;
  hrx_buffer_t* big_dst = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 8 << 20, &big_src));
  CHECK_OK(hrx_buffer_allocate(device, 8 << 20, &big_dst));
  CHECK_OK(hrx_stream_fill(stream, whole(big_src), 0x5a));
  CHECK_OK(hrx_stream_copy(stream, whole(big_dst), whole(big_src)));
  hrx_buffer_release(big_src);
  hrx_view_t probe = {big_dst, (8 << 20) - 4, 4};
  uint8_t last[4] = {0};
  CHECK_OK(hrx_stream_read_blocking(stream, probe, last, 4, NULL, NULL));
  CHECK(last[0] == 0x5a && last[3] == 0x5a);
  hrx_buffer_release(big_dst);
  hrx_buffer_release(a);
  hrx_buffer_release(b);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

static void test_events_across_queues(void) {
  hrx_device_t* device = open_host();
  CHECK_OK(hrx_device_set_stream_queue_count(device, 2));
  hrx_stream_t* producer = NULL;
  hrx_stream_t* consumer = NULL;
  CHECK_OK(hrx_stream_create(device, &producer));
  CHECK_OK(hrx_stream_create(device, &consumer));
  CHECK(hrx_stream_queue_index(producer) != hrx_stream_queue_index(consumer));
  hrx_buffer_t* big = NULL;
  hrx_buffer_t* copy = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 16 << 20, &big));
  CHECK_OK(hrx_buffer_allocate(device, 16 << 20, &copy));
  for (int round = 0; round < 4; ++round) {
    CHECK_OK(hrx_stream_fill(producer, whole(big), (uint8_t)(round + 1)));
  }
  hrx_event_t* event = NULL;
  CHECK_OK(hrx_stream_record_event(producer, &event));
  CHECK_OK(hrx_stream_wait_event(consumer, event));
  CHECK_OK(hrx_stream_copy(consumer, whole(copy), whole(big)));
  hrx_view_t end = {copy, (16 << 20) - 1, 1};
  uint8_t byte = 0;
  CHECK_OK(hrx_stream_read_blocking(consumer, end, &byte, 1, NULL, NULL));
  CHECK(byte == 4);
  bool done = false;
  CHECK_OK(hrx_event_query(event, &done));
  CHECK(done);
  hrx_event_release(event);
  /* An event of an empty stream is complete at once. */
  hrx_stream_t* idle = NULL;
  CHECK_OK(hrx_stream_create(device, &idle));
  CHECK_OK(hrx_stream_record_event(idle, &event));
  CHECK_OK(hrx_event_synchronize(event, NULL, NULL));
  hrx_event_release(event);
  hrx_stream_release(idle);
  hrx_buffer_release(big);
  hrx_buffer_release(copy);
  hrx_stream_release(producer);
  hrx_stream_release(consumer);
  hrx_device_release(device);
}

/* Publication rule: with a full ring and a producer blocked on it, observers
 * (record_event) still return at once. The queue is held back by a device
 * wait on a stream whose work is itself held by a gate command. */
typedef struct {
  hrx_stream_t* stream;
  hrx_buffer_t* buffer;
  volatile int finished;
} producer_args_t;

static void* producer_main(void* arg) {
  producer_args_t* args = arg;
  for (int i = 0; i < 8; ++i) {
    hrx_status_free(hrx_stream_fill(args->stream, whole(args->buffer), 1));
  }
  __atomic_store_n(&args->finished, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

static void test_publication_rule(void) {
  setenv("HRX_HOST_RING_CAPACITY", "2", 1);
  hrx_device_t* device = open_host();
  unsetenv("HRX_HOST_RING_CAPACITY");
  CHECK_OK(hrx_device_set_stream_queue_count(device, 2));
  hrx_stream_t* gate = NULL;
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create(device, &gate));
  CHECK_OK(hrx_stream_create(device, &stream));
  hrx_buffer_t* big = NULL;
  hrx_buffer_t* small = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 64 << 20, &big));
  CHECK_OK(hrx_buffer_allocate(device, 64, &small));
  /* The gate queue is busy for a while with large fills. */
  CHECK_OK(hrx_stream_fill(gate, whole(big), 1));
  CHECK_OK(hrx_stream_fill(gate, whole(big), 2));
  hrx_event_t* gate_event = NULL;
  CHECK_OK(hrx_stream_record_event(gate, &gate_event));
  CHECK_OK(hrx_stream_wait_event(stream, gate_event));
  producer_args_t args = {stream, small, 0};
  pthread_t thread;
  pthread_create(&thread, NULL, producer_main, &args);
  usleep(1000);
  hrx_event_t* observed = NULL;
  CHECK_OK(hrx_stream_record_event(stream, &observed));
  /* Usually the producer is still blocked here; the observer returned
   * regardless. Either way the event covers only published work. */
  pthread_join(thread, NULL);
  CHECK(args.finished == 1);
  CHECK_OK(hrx_event_synchronize(observed, NULL, NULL));
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  hrx_event_release(observed);
  hrx_event_release(gate_event);
  hrx_buffer_release(big);
  hrx_buffer_release(small);
  hrx_stream_release(gate);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

/* Many threads on shared streams. */
typedef struct {
  hrx_stream_t* stream;
  hrx_buffer_t* src;
  hrx_buffer_t* dst;
  int lane;
  int errors;
} worker_args_t;

static void* worker_main(void* arg) {
  worker_args_t* args = arg;
  hrx_view_t src = {args->src, (uint64_t)args->lane * 256, 256};
  hrx_view_t dst = {args->dst, (uint64_t)args->lane * 256, 256};
  for (int i = 0; i < 500; ++i) {
    hrx_status_t status = hrx_stream_fill(args->stream, src, (uint8_t)i);
    if (!status) status = hrx_stream_copy(args->stream, dst, src);
    if (status) {
      args->errors++;
      hrx_status_free(status);
    }
  }
  uint8_t out[256];
  hrx_status_t status = hrx_stream_read_blocking(args->stream, dst, out, 256, NULL, NULL);
  if (status || out[0] != (uint8_t)499 || out[255] != (uint8_t)499) {
    args->errors++;
  }
  hrx_status_free(status);
  return NULL;
}

/* ring_capacity "2" makes producers of several streams sharing a queue wait
 * for space all the time. */
static void test_threads(const char* ring_capacity) {
  if (ring_capacity) setenv("HRX_HOST_RING_CAPACITY", ring_capacity, 1);
  hrx_device_t* device = open_host();
  unsetenv("HRX_HOST_RING_CAPACITY");
  CHECK_OK(hrx_device_set_stream_queue_count(device, 3));
  enum { kThreads = 8 };
  hrx_stream_t* streams[4];
  for (int i = 0; i < 4; ++i) CHECK_OK(hrx_stream_create(device, &streams[i]));
  hrx_buffer_t* src = NULL;
  hrx_buffer_t* dst = NULL;
  CHECK_OK(hrx_buffer_allocate(device, kThreads * 256, &src));
  CHECK_OK(hrx_buffer_allocate(device, kThreads * 256, &dst));
  pthread_t threads[kThreads];
  worker_args_t args[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    args[i] = (worker_args_t){streams[i % 4], src, dst, i, 0};
    pthread_create(&threads[i], NULL, worker_main, &args[i]);
  }
  int errors = 0;
  for (int i = 0; i < kThreads; ++i) {
    pthread_join(threads[i], NULL);
    errors += args[i].errors;
  }
  CHECK(errors == 0);
  CHECK_OK(hrx_device_synchronize(device, NULL, NULL));
  hrx_buffer_release(src);
  hrx_buffer_release(dst);
  for (int i = 0; i < 4; ++i) hrx_stream_release(streams[i]);
  hrx_device_release(device);
}

static void test_status(void) {
  CHECK(hrx_status_code(NULL) == HRX_STATUS_OK);
  CHECK(strcmp(hrx_status_message(NULL), "") == 0);
  hrx_status_free(NULL);
  hrx_stream_release(NULL);
  hrx_buffer_release(NULL);
  hrx_event_release(NULL);
  hrx_device_release(NULL);
  hrx_readback_release(NULL);
  CHECK(hrx_backend_probe("host") == NULL);
  hrx_status_t refusal = hrx_backend_probe("nonsense");
  CHECK(strstr(hrx_status_message(refusal), "unknown backend") != NULL);
  hrx_status_free(refusal);
}

int main(void) {
  test_status();
  const int counts[] = {1, 2, 4, 8, 16};
  for (int i = 0; i < 5; ++i) test_pool_contract(counts[i]);
  test_capacity_refusal();
  test_first_failure_is_not_first_use();
  test_stream_commands();
  test_events_across_queues();
  test_publication_rule();
  test_threads(NULL);
  test_threads("2");
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
