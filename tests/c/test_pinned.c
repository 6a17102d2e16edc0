/* Pinned host memory (core/pinned.h, hrx.h): allocations from the pool,
 * pinned scopes, and the direct transfers' lifetimes, checked with the
 * host backend's queue held by a gated host function, so that a copy is
 * certainly still queued when its memory is let go. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "core/live_device.h"
#include "hal/device.h"
#include "hrx.h"

static atomic_int gate;

/* Holds its queue until the test opens the gate. */
static void gated(void* arg) {
  (void)arg;
  while (!atomic_load(&gate)) sched_yield();
}

static void sleep_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* Holds the stream's queue (host backend: the native handle is the
 * queue) until the gate opens. */
static void hold_queue(hrx_device_t* device, hrx_stream_t* stream) {
  atomic_store(&gate, 0);
  hrx_backend_device_t* backend = hrx_device_backend(device);
  CHECK_OK(backend->vtable->queue.host_call(
      backend, hrx_stream_native_handle(stream), gated, NULL));
}

static hrx_view_t whole(hrx_buffer_t* buffer) {
  hrx_view_t view = {buffer, 0, hrx_buffer_size(buffer)};
  return view;
}

static void test_allocations_are_pooled_and_found(void) {
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  uint8_t* p = NULL;
  CHECK_OK(hrx_device_pinned_alloc(device, 5000, (void**)&p));
  CHECK(((uintptr_t)p & 4095) == 0);
  CHECK(hrx_device_is_pinned(device, p, 5000));
  CHECK(hrx_device_is_pinned(device, p + 100, 4900));
  CHECK(!hrx_device_is_pinned(device, p + 100, 4901));
  CHECK(!hrx_device_is_pinned(device, p, 0));
  CHECK_CODE(hrx_device_pin(device, p + 64, 64), HRX_STATUS_INVALID_ARGUMENT,
             "overlaps");
  CHECK_CODE(hrx_device_pinned_alloc(device, 0, (void**)&p),
             HRX_STATUS_INVALID_ARGUMENT, NULL);
  CHECK_OK(hrx_device_pinned_free(device, p));
  CHECK(!hrx_device_is_pinned(device, p, 1));
  CHECK_CODE(hrx_device_pinned_free(device, p), HRX_STATUS_INVALID_ARGUMENT,
             "not a pinned allocation");
  uint8_t* again = NULL;
  CHECK_OK(hrx_device_pinned_alloc(device, 5000, (void**)&again));
  CHECK(again == p); /* from the pool */
  CHECK_OK(hrx_device_pinned_free(device, again));
  hrx_device_release(device);
}

/* A pinned allocation freed while its upload is queued stays out of the
 * pool until the upload ran, and the upload reads what it held. */
static void test_free_with_a_queued_upload(void) {
  hrx_device_t* device = NULL;
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 4096, &buffer));
  uint8_t* p = NULL;
  CHECK_OK(hrx_device_pinned_alloc(device, 4096, (void**)&p));
  memset(p, 0x5A, 4096);
  hold_queue(device, stream);
  CHECK_OK(hrx_stream_upload(stream, whole(buffer), p, 4096));
  CHECK_OK(hrx_device_pinned_free(device, p)); /* never waits */
  uint8_t* other = NULL;
  CHECK_OK(hrx_device_pinned_alloc(device, 4096, (void**)&other));
  CHECK(other != p); /* p is held by the queued upload */
  memset(other, 0xFF, 4096);
  atomic_store(&gate, 1);
  uint8_t out[4096];
  CHECK_OK(hrx_stream_read_blocking(stream, whole(buffer), out, sizeof(out),
                                    NULL, NULL));
  CHECK(out[0] == 0x5A && out[4095] == 0x5A);
  /* The cleanup thread gives p back once the upload is done. */
  CHECK_OK(hrx_device_synchronize(device, NULL, NULL));
  uint8_t* reused = NULL;
  CHECK_OK(hrx_device_pinned_alloc(device, 4096, (void**)&reused));
  CHECK(reused == p);
  CHECK_OK(hrx_device_pinned_free(device, reused));
  CHECK_OK(hrx_device_pinned_free(device, other));
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

static void* open_gate_later(void* arg) {
  (void)arg;
  sleep_ms(30);
  atomic_store(&gate, 1);
  return NULL;
}

/* Unpinning waits for the copies queued with the memory; a direct read
 * into pinned memory writes it; pinning twice is refused. */
static void test_unpin_waits_for_queued_copies(void) {
  hrx_device_t* device = NULL;
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 4096, &buffer));
  uint8_t* mine = malloc(8192);
  memset(mine, 0x11, 4096);
  memset(mine + 4096, 0, 4096);
  CHECK_OK(hrx_device_pin(device, mine, 8192));
  CHECK_CODE(hrx_device_pin(device, mine, 8192), HRX_STATUS_INVALID_ARGUMENT,
             "pin each memory once");
  CHECK(hrx_device_is_pinned(device, mine + 4096, 4096));
  hold_queue(device, stream);
  CHECK_OK(hrx_stream_upload(stream, whole(buffer), mine, 4096));
  hrx_readback_t* readback = NULL;
  CHECK_OK(hrx_stream_read_into(stream, whole(buffer), mine + 4096, 4096,
                                &readback));
  bool done = true;
  CHECK_OK(hrx_readback_query(readback, &done));
  CHECK(!done);
  pthread_t opener;
  pthread_create(&opener, NULL, open_gate_later, NULL);
  CHECK_OK(hrx_device_unpin(device, mine, NULL, NULL));
  CHECK(atomic_load(&gate) == 1); /* it waited for the gate */
  CHECK(!hrx_device_is_pinned(device, mine, 1));
  CHECK(mine[4096] == 0x11 && mine[8191] == 0x11); /* the read wrote it */
  const uint8_t* bytes = NULL;
  CHECK_OK(hrx_readback_wait(readback, NULL, &bytes, NULL));
  CHECK(bytes == mine + 4096);
  hrx_readback_release(readback);
  pthread_join(opener, NULL);
  CHECK_CODE(hrx_device_unpin(device, mine, NULL, NULL),
             HRX_STATUS_INVALID_ARGUMENT, "not the start");
  free(mine);
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

/* A large read's bytes taken out of its readback: pinned memory of the
 * device, freed back to the read staging. */
static void test_take_a_reads_bytes(void) {
  hrx_device_t* device = NULL;
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 1 << 16, &buffer));
  CHECK_OK(hrx_stream_fill(stream, whole(buffer), 0x42));
  hrx_readback_t* readback = NULL;
  CHECK_OK(hrx_stream_read(stream, whole(buffer), &readback));
  void* taken = NULL;
  hrx_device_t* owner = NULL;
  CHECK_CODE(hrx_readback_take(readback, &taken, &owner),
             HRX_STATUS_FAILED_PRECONDITION, NULL); /* not waited for */
  const uint8_t* bytes = NULL;
  CHECK_OK(hrx_readback_wait(readback, NULL, &bytes, NULL));
  CHECK_OK(hrx_readback_take(readback, &taken, &owner));
  CHECK(taken == bytes && owner == device);
  CHECK_CODE(hrx_readback_take(readback, &taken, &owner),
             HRX_STATUS_FAILED_PRECONDITION, NULL);
  hrx_readback_release(readback);
  CHECK(hrx_device_is_pinned(device, taken, 1 << 16));
  CHECK(((uint8_t*)taken)[0] == 0x42 && ((uint8_t*)taken)[65535] == 0x42);
  CHECK_OK(hrx_device_pinned_free(device, taken));
  hrx_device_release(owner);
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

/* A host device whose large transfers are paced in small chunks (the
 * variables are read at the open). */
static hrx_device_t* open_small_chunks(void) {
  setenv("HRX_CHUNK_BYTES", "65536", 1);
  setenv("HRX_CHUNK_WINDOW_BYTES", "131072", 1);
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  unsetenv("HRX_CHUNK_BYTES");
  unsetenv("HRX_CHUNK_WINDOW_BYTES");
  return device;
}

/* With chunking on, a large upload of pinned memory on a normal stream is
 * paced, its chunks reading the memory in place: freed while chunks are
 * held, the memory stays out of the pool until the last one ran. */
static void test_paced_upload_in_place(void) {
  hrx_device_t* device = open_small_chunks();
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* buffer = NULL;
  const uint64_t n = 1 << 20;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, n, &buffer));
  uint8_t* p = NULL;
  CHECK_OK(hrx_device_pinned_alloc(device, n, (void**)&p));
  memset(p, 0x6B, n);
  hold_queue(device, stream);
  CHECK_OK(hrx_stream_upload(stream, whole(buffer), p, n));
  CHECK_OK(hrx_device_pinned_free(device, p));
  uint8_t* other = NULL;
  CHECK_OK(hrx_device_pinned_alloc(device, n, (void**)&other));
  CHECK(other != p);
  memset(other, 0xFF, n);
  atomic_store(&gate, 1);
  uint8_t* out = malloc(n);
  CHECK_OK(hrx_stream_read_blocking(stream, whole(buffer), out, n, NULL,
                                    NULL));
  CHECK(out[0] == 0x6B && out[n - 1] == 0x6B && out[n / 2] == 0x6B);
  free(out);
  CHECK_OK(hrx_device_synchronize(device, NULL, NULL));
  CHECK_OK(hrx_device_pinned_free(device, other));
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

/* With chunking on, a large read into pinned memory on a normal stream is
 * paced, its chunks landing in the memory in place: with the queue held,
 * chunks stay held on the host; a readback released meanwhile leaves them
 * to land, and unpinning the memory waits for every chunk (not for the
 * released readback, which nobody waits for); a second read's wait gives
 * the memory itself, complete. */
static void test_paced_read_in_place(void) {
  hrx_device_t* device = open_small_chunks();
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* buffer = NULL;
  const uint64_t n = (1 << 20) + 5;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, n, &buffer));
  CHECK_OK(hrx_stream_fill(stream, whole(buffer), 0x5C));
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  uint8_t* mine = malloc(n);
  memset(mine, 0, n);
  CHECK_OK(hrx_device_pin(device, mine, n));
  hold_queue(device, stream);
  hrx_readback_t* readback = NULL;
  CHECK_OK(hrx_stream_read_into(stream, whole(buffer), mine, n, &readback));
  bool done = true;
  CHECK_OK(hrx_readback_query(readback, &done));
  CHECK(!done);
  hrx_readback_release_deferred(readback);   /* chunks still held */
  pthread_t opener;
  pthread_create(&opener, NULL, open_gate_later, NULL);
  CHECK_OK(hrx_device_unpin(device, mine, NULL, NULL));
  CHECK(atomic_load(&gate) == 1); /* it waited for the gate */
  CHECK(mine[0] == 0x5C && mine[n / 2] == 0x5C && mine[n - 1] == 0x5C);
  pthread_join(opener, NULL);
  /* Pinned again: a read waited for gives the memory itself. */
  memset(mine, 0, n);
  CHECK_OK(hrx_device_pin(device, mine, n));
  CHECK_OK(hrx_stream_read_into(stream, whole(buffer), mine, n, &readback));
  const uint8_t* bytes = NULL;
  CHECK_OK(hrx_readback_wait(readback, NULL, &bytes, NULL));
  CHECK(bytes == mine && mine[0] == 0x5C && mine[n - 1] == 0x5C);
  hrx_readback_release(readback);
  CHECK_OK(hrx_device_unpin(device, mine, NULL, NULL));
  free(mine);
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

int main(void) {
  test_allocations_are_pooled_and_found();
  test_free_with_a_queued_upload();
  test_unpin_waits_for_queued_copies();
  test_take_a_reads_bytes();
  test_paced_upload_in_place();
  test_paced_read_in_place();
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
