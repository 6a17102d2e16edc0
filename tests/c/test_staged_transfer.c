/* C tests of staged transfers (csrc/core/staged_transfer.h): the copier
 * copies every byte of odd sizes in pieces, reports only copied prefixes,
 * growing to the whole copy, serves several copies at once, and copies
 * alone when it does not apply; the settings' environment errors; and on
 * the host backend, pipelined uploads, reads and blocking reads from
 * several threads give the bytes back in each stream's order, and a paced
 * read drained by its wait beside a thread that queries it gives every
 * byte. Runs without Python, also under ASan+UBSan and TSan. Prints
 * "N passed, M failed" last; non-zero exit on failure. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/staged_transfer.h"
#include "hrx.h"

#include "check.h"

static void fill_pattern(uint8_t* data, uint64_t n, unsigned seed) {
  for (uint64_t i = 0; i < n; ++i) data[i] = (uint8_t)(i * 131 + seed);
}

static void test_settings(void) {
  hrx_staged_copy_settings_t settings;
  unsetenv("HRX_STAGED_COPY_THREADS");
  unsetenv("HRX_STAGED_COPY_MIN_BYTES");
  CHECK_OK(hrx_staged_copy_settings_from_environment(&settings));
  CHECK(settings.threads >= 1 &&
        settings.threads <= HRX_STAGED_COPY_DEFAULT_MAX_THREADS);
  CHECK(settings.min_bytes == HRX_STAGED_COPY_DEFAULT_MIN_BYTES);
  CHECK(settings.streaming);
  setenv("HRX_STAGED_COPY_STREAMING", "0", 1);
  CHECK_OK(hrx_staged_copy_settings_from_environment(&settings));
  CHECK(!settings.streaming);
  setenv("HRX_STAGED_COPY_STREAMING", "2", 1);
  CHECK_CODE(hrx_staged_copy_settings_from_environment(&settings),
             HRX_STATUS_INVALID_ARGUMENT, "HRX_STAGED_COPY_STREAMING");
  unsetenv("HRX_STAGED_COPY_STREAMING");
  setenv("HRX_STAGED_COPY_THREADS", "0", 1);
  CHECK_OK(hrx_staged_copy_settings_from_environment(&settings));
  CHECK(settings.threads == 0);
  setenv("HRX_STAGED_COPY_THREADS", "65", 1);
  CHECK_CODE(hrx_staged_copy_settings_from_environment(&settings),
             HRX_STATUS_INVALID_ARGUMENT, "HRX_STAGED_COPY_THREADS");
  unsetenv("HRX_STAGED_COPY_THREADS");
  setenv("HRX_STAGED_COPY_MIN_BYTES", "1024", 1);
  CHECK_CODE(hrx_staged_copy_settings_from_environment(&settings),
             HRX_STATUS_INVALID_ARGUMENT, "HRX_STAGED_COPY_MIN_BYTES");
  hrx_device_t* device = NULL;
  CHECK_CODE(hrx_device_open("host", 0, &device),
             HRX_STATUS_INVALID_ARGUMENT, "HRX_STAGED_COPY_MIN_BYTES");
  unsetenv("HRX_STAGED_COPY_MIN_BYTES");
}

/* What a copy reported: the largest prefix, and whether every reported
 * prefix was copied when it was reported. */
typedef struct {
  const uint8_t* dst;
  const uint8_t* src;
  atomic_uint_fast64_t largest;
  atomic_int calls;
  atomic_bool wrong;
} ready_record_t;

static void record_ready(void* user_data, uint64_t ready_bytes) {
  ready_record_t* record = user_data;
  if (memcmp(record->dst, record->src, ready_bytes) != 0) {
    atomic_store(&record->wrong, true);
  }
  uint_fast64_t seen = atomic_load(&record->largest);
  while (seen < ready_bytes &&
         !atomic_compare_exchange_weak(&record->largest, &seen, ready_bytes)) {
  }
  atomic_fetch_add(&record->calls, 1);
}

/* Whether the copy gave every byte and reported only copied prefixes,
 * the last one the whole copy. No CHECK: it runs on several threads. */
static bool copy_is_right(hrx_staged_copier_t* copier, uint64_t n,
                          uint64_t piece, unsigned seed) {
  uint8_t* src = malloc(n);
  uint8_t* dst = calloc(1, n);
  fill_pattern(src, n, seed);
  ready_record_t record = {.dst = dst, .src = src};
  atomic_init(&record.largest, 0);
  atomic_init(&record.calls, 0);
  atomic_init(&record.wrong, false);
  hrx_staged_copy(copier, dst, src, n, piece, record_ready, &record);
  bool right = memcmp(dst, src, n) == 0 &&
               atomic_load(&record.largest) == n &&
               !atomic_load(&record.wrong) && atomic_load(&record.calls) >= 1;
  free(src);
  free(dst);
  return right;
}

static void test_copier(void) {
  hrx_staged_copy_settings_t settings = {.threads = 3, .min_bytes = 65536};
  hrx_staged_copier_t* copier = NULL;
  CHECK_OK(hrx_staged_copier_create(&settings, &copier));
  CHECK(!hrx_staged_copier_applies(copier, 65535));
  CHECK(hrx_staged_copier_applies(copier, 65536));
  const uint64_t sizes[] = {1, 65535, 65536, 65537, 131071, 131073,
                            7 * 65536 + 13, (5u << 20) + 3};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
    CHECK(copy_is_right(copier, sizes[i], 65536, (unsigned)i));
    CHECK(copy_is_right(copier, sizes[i], 0, (unsigned)i + 50));
    CHECK(copy_is_right(copier, sizes[i], 4096, (unsigned)i + 100));
  }
  hrx_staged_copier_destroy(copier);
  /* Streaming: large copies write around the caches, in pieces that start
   * anywhere (odd piece sizes), pipelined or by the caller alone. */
  for (uint32_t threads = 0; threads <= 2; threads += 2) {
    hrx_staged_copy_settings_t streaming = {
        .threads = threads, .min_bytes = 65536, .streaming = true};
    CHECK_OK(hrx_staged_copier_create(&streaming, &copier));
    const uint64_t large = HRX_STAGED_COPY_STREAMING_MIN_BYTES;
    CHECK(copy_is_right(copier, large, 65537, 11 + threads));
    CHECK(copy_is_right(copier, large + 77, 0, 12 + threads));
    CHECK(copy_is_right(copier, large - 1, 4095, 13 + threads));
    hrx_staged_copier_destroy(copier);
  }
  /* Off: the caller copies alone, and reports the whole copy once. */
  hrx_staged_copy_settings_t off = {.threads = 0, .min_bytes = 65536};
  CHECK_OK(hrx_staged_copier_create(&off, &copier));
  CHECK(!hrx_staged_copier_applies(copier, 1u << 20));
  CHECK(copy_is_right(copier, 1u << 20, 65536, 7));
  hrx_staged_copier_destroy(copier);
}

typedef struct {
  hrx_staged_copier_t* copier;
  unsigned seed;
  int wrong;  /* copies that were not right */
} copy_thread_arg_t;

static void* copy_thread(void* arg) {
  copy_thread_arg_t* a = arg;
  for (int i = 0; i < 8; ++i) {
    if (!copy_is_right(a->copier, (1u << 20) + a->seed * 17 + (unsigned)i,
                       i % 2 ? 65536 : 0, a->seed * 10 + (unsigned)i)) {
      a->wrong++;
    }
  }
  return NULL;
}

static void test_copies_at_once(void) {
  hrx_staged_copy_settings_t settings = {.threads = 2, .min_bytes = 65536};
  hrx_staged_copier_t* copier = NULL;
  CHECK_OK(hrx_staged_copier_create(&settings, &copier));
  enum { threads = 4 };
  pthread_t ids[threads];
  copy_thread_arg_t args[threads];
  for (int t = 0; t < threads; ++t) {
    args[t] = (copy_thread_arg_t){copier, (unsigned)t + 1, 0};
    pthread_create(&ids[t], NULL, copy_thread, &args[t]);
  }
  for (int t = 0; t < threads; ++t) {
    pthread_join(ids[t], NULL);
    CHECK(args[t].wrong == 0);
  }
  hrx_staged_copier_destroy(copier);
}

static hrx_view_t whole(hrx_buffer_t* buffer) {
  hrx_view_t view = {buffer, 0, hrx_buffer_size(buffer)};
  return view;
}

typedef struct {
  hrx_device_t* device;
  hrx_stream_t* shared;
  unsigned seed;
  int priority;
  int failures;  /* calls that failed or bytes that differed */
} stream_thread_arg_t;

/* Counts a failed call (consuming its status) for the thread's report. */
static void count_failure(stream_thread_arg_t* a, hrx_status_t status) {
  if (!status) return;
  fprintf(stderr, "staged stream thread %u: %s\n", a->seed,
          hrx_status_message(status));
  hrx_status_free(status);
  a->failures++;
}

/* Uploads, copies and reads back (read_into, read_blocking) on a stream
 * of its own and on the shared one. */
static void* stream_thread(void* arg) {
  stream_thread_arg_t* a = arg;
  hrx_stream_options_t options;
  hrx_stream_options_default(&options);
  options.priority = a->priority;
  hrx_stream_t* own = NULL;
  count_failure(a, hrx_stream_create_with_options(a->device, &options, &own));
  const uint64_t n = 65536 * 5 + a->seed;
  uint8_t* data = malloc(n);
  uint8_t* out = malloc(n);
  hrx_buffer_t* x = NULL;
  hrx_buffer_t* y = NULL;
  count_failure(a, hrx_buffer_allocate(a->device, n, &x));
  count_failure(a, hrx_buffer_allocate(a->device, n, &y));
  for (int i = 0; i < 4; ++i) {
    hrx_stream_t* stream = i % 2 ? own : a->shared;
    fill_pattern(data, n, a->seed * 16 + (unsigned)i);
    count_failure(a, hrx_stream_upload(stream, whole(x), data, n));
    memset(data, 0xA5, n);  /* reused at once */
    fill_pattern(data, n, a->seed * 16 + (unsigned)i);
    count_failure(a, hrx_stream_copy(stream, whole(y), whole(x)));
    hrx_readback_t* read = NULL;
    count_failure(a, hrx_stream_read_into(stream, whole(y), out, n, &read));
    const uint8_t* bytes = NULL;
    count_failure(a, hrx_readback_wait(read, NULL, &bytes, NULL));
    if (bytes != out || memcmp(out, data, n) != 0) a->failures++;
    hrx_readback_release(read);
    memset(out, 0, n);
    count_failure(a, hrx_stream_read_blocking(stream, whole(x), out, n, NULL,
                                              NULL));
    if (memcmp(out, data, n) != 0) a->failures++;
  }
  hrx_buffer_release(x);
  hrx_buffer_release(y);
  hrx_stream_release(own);
  free(data);
  free(out);
  return NULL;
}

/* A host device with small chunks and two copy threads that take every
 * transfer of a chunk and more (the variables are read at the open). */
static hrx_device_t* open_pipelined(void) {
  setenv("HRX_CHUNK_BYTES", "65536", 1);
  setenv("HRX_CHUNK_WINDOW_BYTES", "131072", 1);
  setenv("HRX_STAGED_COPY_THREADS", "2", 1);
  setenv("HRX_STAGED_COPY_MIN_BYTES", "65536", 1);
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  unsetenv("HRX_CHUNK_BYTES");
  unsetenv("HRX_CHUNK_WINDOW_BYTES");
  unsetenv("HRX_STAGED_COPY_THREADS");
  unsetenv("HRX_STAGED_COPY_MIN_BYTES");
  return device;
}

static void test_streams(void) {
  hrx_device_t* device = open_pipelined();
  hrx_stream_t* shared = NULL;
  CHECK_OK(hrx_stream_create(device, &shared));
  enum { threads = 4 };
  pthread_t ids[threads];
  stream_thread_arg_t args[threads];
  for (int t = 0; t < threads; ++t) {
    /* A high-priority stream's uploads are not paced: staged whole. */
    args[t] = (stream_thread_arg_t){
        device, shared, (unsigned)t + 1,
        t == 3 ? HRX_STREAM_PRIORITY_HIGH : HRX_STREAM_PRIORITY_NORMAL, 0};
    pthread_create(&ids[t], NULL, stream_thread, &args[t]);
  }
  for (int t = 0; t < threads; ++t) {
    pthread_join(ids[t], NULL);
    CHECK(args[t].failures == 0);
  }
  CHECK_OK(hrx_device_synchronize(device, NULL, NULL));
  hrx_stream_release(shared);
  hrx_device_release(device);
}

typedef struct {
  hrx_readback_t* read;
  atomic_bool stop;
  int failures;
} poll_arg_t;

static void* poll_thread(void* arg) {
  poll_arg_t* a = arg;
  while (!atomic_load(&a->stop)) {
    bool done = false;
    hrx_status_t status = hrx_readback_query(a->read, &done);
    if (status) {
      hrx_status_free(status);
      a->failures++;
    }
  }
  return NULL;
}

/* A paced read_into drained by its wait while another thread queries it
 * (which may fill `into` itself once done): every byte, once. */
static void test_drain_beside_queries(void) {
  hrx_device_t* device = open_pipelined();
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  const uint64_t n = 65536 * 24 + 5;
  uint8_t* data = malloc(n);
  uint8_t* out = malloc(n);
  fill_pattern(data, n, 9);
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_buffer_allocate(device, n, &buffer));
  CHECK_OK(hrx_stream_upload(stream, whole(buffer), data, n));
  for (int round = 0; round < 6; ++round) {
    memset(out, 0, n);
    poll_arg_t poll = {.failures = 0};
    atomic_init(&poll.stop, false);
    CHECK_OK(hrx_stream_read_into(stream, whole(buffer), out, n, &poll.read));
    pthread_t poller;
    pthread_create(&poller, NULL, poll_thread, &poll);
    const uint8_t* bytes = NULL;
    CHECK_OK(hrx_readback_wait(poll.read, NULL, &bytes, NULL));
    atomic_store(&poll.stop, true);
    pthread_join(poller, NULL);
    CHECK(poll.failures == 0);
    CHECK(bytes == out && memcmp(out, data, n) == 0);
    hrx_readback_release(poll.read);
  }
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  hrx_device_release(device);
  free(data);
  free(out);
}

typedef struct {
  hrx_readback_t* read;
  uint8_t* out;
  int failures;
} wait_copy_arg_t;

static void* wait_copy_thread(void* arg) {
  wait_copy_arg_t* a = arg;
  hrx_status_t status = hrx_readback_wait_copy(a->read, a->out, NULL, NULL);
  if (status) {
    hrx_status_free(status);
    a->failures++;
  }
  return NULL;
}

/* hrx_readback_wait_copy: a paced read's bytes copied into new memory as
 * they land (also by two waits at once, each into its own memory, and
 * again after the first), an unpaced read's, and the refusals. */
static void test_wait_copy(void) {
  hrx_device_t* device = open_pipelined();
  hrx_stream_t* stream = NULL;
  hrx_stream_t* urgent = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  hrx_stream_options_t options;
  hrx_stream_options_default(&options);
  options.priority = HRX_STREAM_PRIORITY_HIGH; /* never paced */
  CHECK_OK(hrx_stream_create_with_options(device, &options, &urgent));
  const uint64_t n = 65536 * 24 + 5;
  uint8_t* data = malloc(n);
  uint8_t* outs[2] = {malloc(n), malloc(n)};
  fill_pattern(data, n, 21);
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_buffer_allocate(device, n, &buffer));
  CHECK_OK(hrx_stream_upload(stream, whole(buffer), data, n));
  for (int round = 0; round < 4; ++round) {
    hrx_readback_t* read = NULL;
    CHECK_OK(hrx_stream_read(round % 2 ? urgent : stream, whole(buffer),
                             &read));
    memset(outs[0], 0, n);
    memset(outs[1], 0, n);
    wait_copy_arg_t args[2] = {{read, outs[0], 0}, {read, outs[1], 0}};
    pthread_t other;
    pthread_create(&other, NULL, wait_copy_thread, &args[1]);
    wait_copy_thread(&args[0]);
    pthread_join(other, NULL);
    CHECK(args[0].failures == 0 && args[1].failures == 0);
    CHECK(memcmp(outs[0], data, n) == 0 && memcmp(outs[1], data, n) == 0);
    /* Complete now: copied again, whole, and still waitable. */
    memset(outs[0], 0, n);
    CHECK_OK(hrx_readback_wait_copy(read, outs[0], NULL, NULL));
    CHECK(memcmp(outs[0], data, n) == 0);
    const uint8_t* bytes = NULL;
    CHECK_OK(hrx_readback_wait(read, NULL, &bytes, NULL));
    CHECK(bytes && memcmp(bytes, data, n) == 0);
    hrx_readback_release(read);
  }
  /* Refused: a read_into's bytes land in its own out; non-blocking mode. */
  hrx_readback_t* into = NULL;
  CHECK_OK(hrx_stream_read_into(stream, whole(buffer), outs[1], n, &into));
  CHECK_CODE(hrx_readback_wait_copy(into, outs[0], NULL, NULL),
             HRX_STATUS_FAILED_PRECONDITION, "read_into");
  hrx_readback_release(into);
  hrx_readback_t* read = NULL;
  CHECK_OK(hrx_stream_read(stream, whole(buffer), &read));
  bool previous = hrx_thread_set_nonblocking(true);
  CHECK_CODE(hrx_readback_wait_copy(read, outs[0], NULL, NULL),
             HRX_STATUS_FAILED_PRECONDITION, "non-blocking");
  hrx_thread_set_nonblocking(previous);
  hrx_readback_release(read);
  hrx_buffer_release(buffer);
  hrx_stream_release(urgent);
  hrx_stream_release(stream);
  hrx_device_release(device);
  free(data);
  free(outs[0]);
  free(outs[1]);
}

/* A paced read whose fourth chunk fails: the copying wait reports the
 * failure, and the stream reads again once it was reported. */
static void test_wait_copy_of_a_failing_read(void) {
  setenv("HRX_FAULTS", "download:4", 1);
  hrx_device_t* device = open_pipelined();
  unsetenv("HRX_FAULTS");
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  const uint64_t n = 65536 * 8 + 3;
  uint8_t* data = malloc(n);
  uint8_t* out = malloc(n);
  fill_pattern(data, n, 5);
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_buffer_allocate(device, n, &buffer));
  CHECK_OK(hrx_stream_upload(stream, whole(buffer), data, n));
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  hrx_readback_t* read = NULL;
  hrx_status_t status = hrx_stream_read(stream, whole(buffer), &read);
  if (!status) {
    status = hrx_readback_wait_copy(read, out, NULL, NULL);
    hrx_readback_release(read);
  }
  CHECK_CODE(status, HRX_STATUS_DEVICE_ERROR, "injected fault");
  hrx_stream_synchronize(stream, NULL, NULL); /* reports it, if not yet */
  CHECK_OK(hrx_stream_read(stream, whole(buffer), &read));
  memset(out, 0, n);
  CHECK_OK(hrx_readback_wait_copy(read, out, NULL, NULL));
  CHECK(memcmp(out, data, n) == 0);
  hrx_readback_release(read);
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  hrx_device_release(device);
  free(data);
  free(out);
}

int main(void) {
  test_settings();
  test_copier();
  test_copies_at_once();
  test_streams();
  test_drain_beside_queries();
  test_wait_copy();
  test_wait_copy_of_a_failing_read();
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
