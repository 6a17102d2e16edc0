/* C tests of transfer pacing (csrc/core/pacing.h) on the host backend:
 * chunked uploads, reads and copies give the bytes of unchunked ones, a
 * stream's order holds behind held work, a high-priority read completes
 * while a normal stream's backlog is held, an urgent transfer makes the
 * pacer yield its direction until the chunks ahead of it are done, the
 * settings' environment errors, and streams and devices released with
 * held work. Runs without
 * Python, also under ASan+UBSan and TSan. Prints "N passed, M failed" last;
 * non-zero exit on failure. */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/live_device.h"
#include "core/pacing.h"
#include "hal/device.h"
#include "hrx.h"

#include "check.h"

static hrx_view_t whole(hrx_buffer_t* buffer) {
  hrx_view_t view = {buffer, 0, hrx_buffer_size(buffer)};
  return view;
}

static hrx_stream_t* create(hrx_device_t* device, int priority) {
  hrx_stream_options_t options;
  hrx_stream_options_default(&options);
  options.priority = priority;
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create_with_options(device, &options, &stream));
  return stream;
}

static void small_chunks(void) {
  setenv("HRX_CHUNK_BYTES", "65536", 1);
  setenv("HRX_CHUNK_WINDOW_BYTES", "65536", 1);
  unsetenv("HRX_CHUNKING");
}

static void test_settings(void) {
  hrx_chunk_settings_t settings;
  unsetenv("HRX_CHUNK_BYTES");
  unsetenv("HRX_CHUNK_WINDOW_BYTES");
  unsetenv("HRX_CHUNKING");
  CHECK_OK(hrx_chunk_settings_from_environment(&settings));
  CHECK(settings.enabled);
  CHECK(settings.chunk_bytes == HRX_CHUNK_DEFAULT_BYTES);
  CHECK(settings.window_bytes ==
        HRX_CHUNK_DEFAULT_BYTES * HRX_CHUNK_DEFAULT_WINDOW_CHUNKS);
  setenv("HRX_CHUNKING", "0", 1);
  CHECK_OK(hrx_chunk_settings_from_environment(&settings));
  CHECK(!settings.enabled);
  setenv("HRX_CHUNKING", "yes", 1);
  CHECK_CODE(hrx_chunk_settings_from_environment(&settings),
             HRX_STATUS_INVALID_ARGUMENT, "HRX_CHUNKING");
  unsetenv("HRX_CHUNKING");
  setenv("HRX_CHUNK_BYTES", "1024", 1);
  CHECK_CODE(hrx_chunk_settings_from_environment(&settings),
             HRX_STATUS_INVALID_ARGUMENT, "HRX_CHUNK_BYTES");
  setenv("HRX_CHUNK_BYTES", "131072", 1);
  setenv("HRX_CHUNK_WINDOW_BYTES", "131071", 1);
  CHECK_CODE(hrx_chunk_settings_from_environment(&settings),
             HRX_STATUS_INVALID_ARGUMENT, "at least one chunk");
  unsetenv("HRX_CHUNK_WINDOW_BYTES");
  CHECK_OK(hrx_chunk_settings_from_environment(&settings));
  CHECK(settings.window_bytes == 131072 * HRX_CHUNK_DEFAULT_WINDOW_CHUNKS);
  /* A device does not open with a malformed variable. */
  setenv("HRX_CHUNK_BYTES", "x", 1);
  hrx_device_t* device = NULL;
  CHECK_CODE(hrx_device_open("host", 0, &device),
             HRX_STATUS_INVALID_ARGUMENT, "HRX_CHUNK_BYTES");
  unsetenv("HRX_CHUNK_BYTES");
}

/* Uploads, copies and reads of sizes that are not multiples of a chunk;
 * a fill after held reads sees them done; release with held work. */
static void test_bytes_and_order(void) {
  small_chunks();
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  hrx_stream_t* stream = create(device, HRX_STREAM_PRIORITY_NORMAL);
  const uint64_t n = 65536 * 5 + 123;
  uint8_t* data = malloc(n);
  uint8_t* out = malloc(n);
  for (uint64_t i = 0; i < n; ++i) data[i] = (uint8_t)(i * 7 + 1);
  hrx_buffer_t* a = NULL;
  hrx_buffer_t* b = NULL;
  CHECK_OK(hrx_buffer_allocate(device, n, &a));
  CHECK_OK(hrx_buffer_allocate(device, n, &b));
  CHECK_OK(hrx_stream_upload(stream, whole(a), data, n));
  memset(data, 0, 100);  /* the upload copied the caller's data */
  CHECK_OK(hrx_stream_copy(stream, whole(b), whole(a)));
  hrx_readback_t* reads[4];
  for (int i = 0; i < 4; ++i) {
    CHECK_OK(hrx_stream_read(stream, whole(b), &reads[i]));
  }
  bool done = true;
  CHECK_OK(hrx_stream_query(stream, &done));
  hrx_view_t head = {b, 0, 4096};
  CHECK_OK(hrx_stream_fill(stream, head, 0xEE));  /* after the reads */
  for (int i = 0; i < 4; ++i) {
    const uint8_t* bytes = NULL;
    CHECK_OK(hrx_readback_wait(reads[i], NULL, &bytes, NULL));
    CHECK(bytes[0] == 1 && bytes[n - 1] == (uint8_t)((n - 1) * 7 + 1));
    CHECK(bytes[100] == (uint8_t)(100 * 7 + 1));
    hrx_readback_release(reads[i]);
  }
  CHECK_OK(hrx_stream_read_blocking(stream, whole(b), out, n, NULL, NULL));
  CHECK(out[0] == 0xEE && out[4095] == 0xEE && out[4096] == (uint8_t)(4096 * 7 + 1));
  /* Released with held work: the readbacks first, then the stream. */
  for (int i = 0; i < 4; ++i) {
    CHECK_OK(hrx_stream_read(stream, whole(b), &reads[i]));
  }
  for (int i = 0; i < 4; ++i) hrx_readback_release_deferred(reads[i]);
  CHECK_OK(hrx_stream_upload(stream, whole(a), out, n));
  hrx_stream_release(stream);
  hrx_buffer_release(a);
  hrx_buffer_release(b);
  hrx_device_release(device);
  free(data);
  free(out);
}

/* A high-priority read completes while a normal stream's backlog is still
 * held (completion order, never time). */
static void test_urgent_read(void) {
  small_chunks();
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  hrx_stream_t* bulk = create(device, HRX_STREAM_PRIORITY_NORMAL);
  hrx_stream_t* urgent = create(device, HRX_STREAM_PRIORITY_HIGH);
  hrx_buffer_t* big = NULL;
  hrx_buffer_t* small = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 8 << 20, &big));
  CHECK_OK(hrx_buffer_allocate(device, 4096, &small));
  CHECK_OK(hrx_stream_fill(urgent, whole(small), 6));
  CHECK_OK(hrx_device_synchronize(device, NULL, NULL));
  enum { backlog = 6 };
  hrx_readback_t* reads[backlog];
  for (int i = 0; i < backlog; ++i) {
    CHECK_OK(hrx_stream_read(bulk, whole(big), &reads[i]));
  }
  hrx_readback_t* probe = NULL;
  CHECK_OK(hrx_stream_read(urgent, whole(small), &probe));
  const uint8_t* bytes = NULL;
  CHECK_OK(hrx_readback_wait(probe, NULL, &bytes, NULL));
  CHECK(bytes[0] == 6);
  bool done = true;
  CHECK_OK(hrx_readback_query(reads[backlog - 1], &done));
  CHECK(!done);
  hrx_readback_release(probe);
  CHECK_OK(hrx_device_synchronize(device, NULL, NULL));
  for (int i = 0; i < backlog; ++i) {
    CHECK_OK(hrx_readback_query(reads[i], &done));
    CHECK(done);
    hrx_readback_release(reads[i]);
  }
  hrx_stream_release(bulk);
  hrx_stream_release(urgent);
  hrx_buffer_release(big);
  hrx_buffer_release(small);
  hrx_device_release(device);
}

static atomic_int gate;

/* Holds its queue until the test opens the gate. */
static void gated(void* arg) {
  (void)arg;
  while (!atomic_load(&gate)) sched_yield();
}

/* Whether the read is done within `ms` milliseconds. */
static bool done_within(hrx_readback_t* read, int ms) {
  for (int i = 0; i <= ms; ++i) {
    bool done = false;
    CHECK_OK(hrx_readback_query(read, &done));
    if (done) return true;
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
  }
  return false;
}

/* The yield, in completion order: a normal stream's two-chunk read is in
 * flight behind a closed gate on its queue, with room in the window for a
 * third chunk. A paced read of another normal stream (another queue) then
 * goes out at once and completes while the gate is closed; but after an
 * urgent read of the same direction (`urgent`: a high-priority stream's)
 * it is held until the chunks in flight then are done, which the gate
 * decides. Uploads of a high-priority stream yield the other direction
 * only (`upload`: the urgent transfer is an upload; the read is not
 * held). */
static void check_yield(bool urgent, bool upload) {
  setenv("HRX_CHUNK_BYTES", "65536", 1);
  setenv("HRX_CHUNK_WINDOW_BYTES", "196608", 1);   /* three chunks */
  setenv("HRX_HOST_ENGINES", "4", 1);
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  unsetenv("HRX_HOST_ENGINES");
  CHECK_OK(hrx_device_set_stream_queue_count(device, 2));
  hrx_stream_t* ahead = create(device, HRX_STREAM_PRIORITY_NORMAL);
  hrx_stream_t* later = create(device, HRX_STREAM_PRIORITY_NORMAL);
  hrx_stream_t* high = create(device, HRX_STREAM_PRIORITY_HIGH);
  CHECK(hrx_stream_native_handle(ahead) != hrx_stream_native_handle(later));
  hrx_buffer_t* two = NULL;
  hrx_buffer_t* one = NULL;
  hrx_buffer_t* small = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 2 * 65536, &two));
  CHECK_OK(hrx_buffer_allocate(device, 65536, &one));
  CHECK_OK(hrx_buffer_allocate(device, 4096, &small));
  CHECK_OK(hrx_stream_fill(high, whole(two), 1));
  CHECK_OK(hrx_stream_fill(high, whole(one), 2));
  CHECK_OK(hrx_stream_fill(high, whole(small), 3));
  CHECK_OK(hrx_device_synchronize(device, NULL, NULL));

  atomic_store(&gate, 0);
  hrx_backend_device_t* backend = hrx_device_backend(device);
  CHECK_OK(backend->vtable->queue.host_call(
      backend, hrx_stream_native_handle(ahead), gated, NULL));
  hrx_readback_t* backlog = NULL;
  CHECK_OK(hrx_stream_read(ahead, whole(two), &backlog));
  hrx_readback_t* probe = NULL;
  uint8_t data[4096];
  memset(data, 9, sizeof(data));
  if (urgent && upload) {
    CHECK_OK(hrx_stream_upload(high, whole(small), data, sizeof(data)));
  } else if (urgent) {
    CHECK_OK(hrx_stream_read(high, whole(small), &probe));
    CHECK(done_within(probe, 5000));
  }
  hrx_readback_t* next = NULL;
  CHECK_OK(hrx_stream_read(later, whole(one), &next));
  bool held = urgent && !upload;
  if (held) {
    CHECK(!done_within(next, 100));   /* the gate holds it */
  } else {
    CHECK(done_within(next, 5000));
  }
  CHECK(!done_within(backlog, 0));
  atomic_store(&gate, 1);
  const uint8_t* bytes = NULL;
  CHECK_OK(hrx_readback_wait(next, NULL, &bytes, NULL));
  CHECK(bytes[0] == 2 && bytes[65535] == 2);
  CHECK_OK(hrx_readback_wait(backlog, NULL, &bytes, NULL));
  CHECK(bytes[0] == 1 && bytes[2 * 65536 - 1] == 1);
  if (probe) {
    CHECK_OK(hrx_readback_wait(probe, NULL, &bytes, NULL));
    CHECK(bytes[0] == 3);
    hrx_readback_release(probe);
  }
  hrx_readback_release(backlog);
  hrx_readback_release(next);
  CHECK_OK(hrx_device_synchronize(device, NULL, NULL));
  hrx_stream_release(ahead);
  hrx_stream_release(later);
  hrx_stream_release(high);
  hrx_buffer_release(two);
  hrx_buffer_release(one);
  hrx_buffer_release(small);
  hrx_device_release(device);
}

static void test_urgent_transfers_make_the_pacer_yield(void) {
  check_yield(false, false);   /* no urgent transfer: not held */
  check_yield(true, false);    /* an urgent read: the next read is held */
  check_yield(true, true);     /* an urgent upload: reads are not */
}

int main(void) {
  test_settings();
  test_bytes_and_order();
  test_urgent_read();
  test_urgent_transfers_make_the_pacer_yield();
  unsetenv("HRX_CHUNK_BYTES");
  unsetenv("HRX_CHUNK_WINDOW_BYTES");
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
