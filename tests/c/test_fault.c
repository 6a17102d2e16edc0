/* Fault injection ($HRX_FAULTS, csrc/drivers/fault/) on the host backend:
 * each injected failure surfaces with its documented code, leaves the pool
 * and the live device consistent, and repeated faults leak no native object
 * (queues, events, allocations, host allocations), counted by the wrapper.
 * Also run under ASan+UBSan and TSan. Prints "N passed, M failed" last. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/fault/fault_backend.h"
#include "hrx.h"

#include "check.h"

/* Opens the host device with $HRX_FAULTS = spec. Without batching a failing
 * copy or fill fails its own call; test_batched_faults covers batches. */
static hrx_device_t* open_with_faults(const char* spec) {
  setenv("HRX_FAULTS", spec, 1);
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  unsetenv("HRX_FAULTS");
  if (device) hrx_device_set_batching(device, false);
  return device;
}

static hrx_view_t whole(hrx_buffer_t* buffer) {
  hrx_view_t view = {buffer, 0, hrx_buffer_size(buffer)};
  return view;
}

/* Every native object the wrapper saw is gone. */
static void check_nothing_live(int line) {
  hrx_fault_counts_t c;
  hrx_fault_query_counts(&c);
  bool ok = c.queues == 0 && c.events == 0 && c.allocations == 0 &&
            c.host_allocations == 0 && c.graphs == 0 && c.devices == 0;
  if (ok) {
    hrx_test_passed++;
  } else {
    hrx_test_failed++;
    fprintf(stderr,
            "line %d: live after release: %lld queues, %lld events, %lld "
            "allocations, %lld host allocations, %lld devices\n",
            line, (long long)c.queues, (long long)c.events,
            (long long)c.allocations, (long long)c.host_allocations,
            (long long)c.devices);
  }
}
#define CHECK_NOTHING_LIVE() check_nothing_live(__LINE__)

static void test_bad_spec(void) {
  const char* bad[] = {"alloc", "alloc:0", "alloc:x", "nosuch:1", "copy:150%",
                       "copy:0%", "seed:-1", "alloc:1,,copy:2", "alloc:-2"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
    setenv("HRX_FAULTS", bad[i], 1);
    hrx_device_t* device = NULL;
    CHECK_CODE(hrx_device_open("host", 0, &device),
               HRX_STATUS_INVALID_ARGUMENT, "HRX_FAULTS");
    CHECK(device == NULL);
  }
  unsetenv("HRX_FAULTS");
  CHECK_NOTHING_LIVE();
}

static void test_alloc_fault(void) {
  hrx_device_t* device = open_with_faults("alloc:2,host_alloc:1");
  hrx_buffer_t* a = NULL;
  hrx_buffer_t* b = NULL;
  hrx_buffer_t* c = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 64, &a));
  CHECK_CODE(hrx_buffer_allocate(device, 64, &b), HRX_STATUS_OUT_OF_MEMORY,
             "injected fault: alloc call #2");
  CHECK(b == NULL);
  CHECK_OK(hrx_buffer_allocate(device, 64, &c));
  hrx_fault_counts_t counts;
  hrx_fault_query_counts(&counts);
  CHECK(counts.allocations == 2);
  /* A read whose staging memory is refused submits nothing. */
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  hrx_readback_t* readback = NULL;
  CHECK_CODE(hrx_stream_read(stream, whole(a), &readback),
             HRX_STATUS_OUT_OF_MEMORY, "host_alloc call #1");
  CHECK(readback == NULL);
  hrx_fault_query_counts(&counts);
  CHECK(counts.host_allocations == 0 && counts.events == 0);
  uint8_t out[64];
  CHECK_OK(hrx_stream_fill(stream, whole(a), 3));
  CHECK_OK(hrx_stream_read_blocking(stream, whole(a), out, sizeof(out), NULL, NULL));
  CHECK(out[0] == 3 && out[63] == 3);
  hrx_stream_release(stream);
  hrx_buffer_release(a);
  hrx_buffer_release(c);
  hrx_device_release(device);
  CHECK_NOTHING_LIVE();
}

/* The k-th queue creation fails: the cursor stays, first use is not marked
 * by a failure, and the next creation retries the same slot. */
static void test_queue_create_fault(void) {
  hrx_device_t* device = open_with_faults("queue_create:1,queue_create:3");
  hrx_pool_info_t info;
  hrx_stream_t* s[3] = {NULL, NULL, NULL};
  CHECK_OK(hrx_device_set_stream_queue_count(device, 4));
  CHECK_CODE(hrx_stream_create(device, &s[0]), HRX_STATUS_RESOURCE_EXHAUSTED,
             "pool slot 0 of 4: injected fault: queue_create call #1");
  hrx_device_query_pool(device, &info);
  CHECK(!info.first_use && info.next_slot == 0 && info.queues_created == 0 &&
        info.live_streams == 0);
  /* Not first use yet: the count may still change. */
  CHECK_OK(hrx_device_set_stream_queue_count(device, 2));
  CHECK_OK(hrx_stream_create(device, &s[0]));
  CHECK(hrx_stream_queue_index(s[0]) == 0);
  CHECK_CODE(hrx_stream_create(device, &s[1]), HRX_STATUS_RESOURCE_EXHAUSTED,
             "pool slot 1 of 2");
  hrx_device_query_pool(device, &info);
  CHECK(info.first_use && info.next_slot == 1 && info.queues_created == 1 &&
        info.live_streams == 1);
  CHECK_OK(hrx_stream_create(device, &s[1]));
  CHECK(hrx_stream_queue_index(s[1]) == 1);
  CHECK_OK(hrx_stream_create(device, &s[2]));
  CHECK(hrx_stream_queue_index(s[2]) == 0);
  hrx_fault_counts_t counts;
  hrx_fault_query_counts(&counts);
  CHECK(counts.queues == 2);
  /* A second open shares the live device: HRX_FAULTS is read only when a
   * live device is created. */
  hrx_device_t* again = open_with_faults("none"); /* same live device */
  CHECK(again == device);
  hrx_device_release(again);
  for (int i = 0; i < 3; ++i) hrx_stream_release(s[i]);
  hrx_device_release(device);
  CHECK_NOTHING_LIVE();
}

/* Stream failure semantics: a command the device refuses fails its stream
 * (its call succeeds); later commands are not run; the next observation
 * point raises the failure, naming the command and how many were not run;
 * then the stream works again. Observation points fail at once for their
 * own native calls. Run with batching off and on: the outcome is the same. */
static void test_command_faults(bool batching) {
  hrx_device_t* device =
      open_with_faults("copy:2,fill:2,upload:1,download:1,wait_event:1,"
                       "synchronize:1,event_synchronize:2");
  hrx_device_set_batching(device, batching);
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  hrx_buffer_t* src = NULL;
  hrx_buffer_t* dst = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 256, &src));
  CHECK_OK(hrx_buffer_allocate(device, 256, &dst));
  CHECK_OK(hrx_stream_fill(stream, whole(src), 0x11));
  CHECK_OK(hrx_stream_fill(stream, whole(dst), 0x22));  /* fill #2 fails */
  CHECK_OK(hrx_stream_fill(stream, whole(dst), 0x33));  /* not run */
  /* The synchronize fault (#1) is its own; the stored failure wins. */
  CHECK_CODE(hrx_stream_synchronize(stream, NULL, NULL), HRX_STATUS_DEVICE_ERROR,
             "command 2 of this stream (fill of 256 bytes) failed: "
             "injected fault: fill call #2");
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));  /* raised once */
  uint8_t out[256];
  uint8_t data[256];
  memset(data, 0x44, sizeof(data));
  CHECK_OK(hrx_stream_upload(stream, whole(src), data, sizeof(data)));
  CHECK_OK(hrx_stream_copy(stream, whole(dst), whole(src)));  /* not run */
  CHECK_CODE(hrx_stream_read_blocking(stream, whole(dst), out, sizeof(out), NULL, NULL),
             HRX_STATUS_DEVICE_ERROR,
             "(upload of 256 bytes) failed: injected fault: upload call #1 "
             "failed (HRX_FAULTS); 1 later command of this stream was not run");
  /* A read fails at once for its own download (#1). */
  CHECK_CODE(hrx_stream_read_blocking(stream, whole(src), out, sizeof(out), NULL, NULL),
             HRX_STATUS_DEVICE_ERROR, "injected fault: download call #1");
  /* The upload was refused: src keeps its 0x11. */
  CHECK_OK(hrx_stream_read_blocking(stream, whole(src), out, sizeof(out), NULL, NULL));
  CHECK(out[0] == 0x11 && out[255] == 0x11);
  CHECK_OK(hrx_stream_copy(stream, whole(dst), whole(src)));  /* copy #1 */
  CHECK_OK(hrx_stream_copy(stream, whole(src), whole(dst)));  /* #2 fails */
  hrx_event_t* event = NULL;
  CHECK_CODE(hrx_stream_record_event(stream, &event), HRX_STATUS_DEVICE_ERROR,
             "copy call #2");
  CHECK(event == NULL);
  CHECK_OK(hrx_stream_record_event(stream, &event));
  CHECK_OK(hrx_stream_wait_event(stream, event));  /* wait_event #1 fails */
  CHECK_CODE(hrx_event_synchronize(event, NULL, NULL), HRX_STATUS_DEVICE_ERROR,
             "event_synchronize call #2");
  CHECK_OK(hrx_stream_wait_event(stream, event));  /* not run */
  /* A device synchronize raises a stream's failure too. */
  CHECK_CODE(hrx_device_synchronize(device, NULL, NULL), HRX_STATUS_DEVICE_ERROR,
             "(event wait) failed: injected fault: wait_event call #1");
  CHECK_OK(hrx_stream_wait_event(stream, event));
  CHECK_OK(hrx_event_synchronize(event, NULL, NULL));
  hrx_event_release(event);
  CHECK_OK(hrx_stream_read_blocking(stream, whole(dst), out, sizeof(out), NULL, NULL));
  CHECK(out[0] == 0x11 && out[255] == 0x11);
  /* Nothing failed since: the release has nothing to report. */
  hrx_status_t unobserved = NULL;
  hrx_stream_release_checked(stream, &unobserved);
  CHECK(unobserved == NULL);
  hrx_buffer_release(src);
  hrx_buffer_release(dst);
  hrx_device_release(device);
  CHECK_NOTHING_LIVE();
}

/* Closing a stream with a failure nothing raised hands it over. */
static void test_unobserved_failure(bool batching) {
  hrx_device_t* device = open_with_faults("fill:1");
  hrx_device_set_batching(device, batching);
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 64, &buffer));
  CHECK_OK(hrx_stream_fill(stream, whole(buffer), 1));
  CHECK_OK(hrx_stream_fill(stream, whole(buffer), 2));
  hrx_status_t unobserved = NULL;
  hrx_stream_release_checked(stream, &unobserved);
  CHECK_CODE(unobserved, HRX_STATUS_DEVICE_ERROR,
             "stream released with a failure no observation raised: command "
             "1 of this stream (fill of 64 bytes) failed");
  hrx_buffer_release(buffer);
  hrx_device_release(device);
  CHECK_NOTHING_LIVE();
}

/* Failing event creation or recording leaves no event behind; read staging
 * is pooled (its blocks and their events live until the device goes). */
static void test_event_faults(void) {
  hrx_device_t* device = open_with_faults(
      "event_create:1,event_record:2,event_record:3");
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 128, &buffer));
  CHECK_OK(hrx_stream_fill(stream, whole(buffer), 9));
  hrx_event_t* event = NULL;
  CHECK_CODE(hrx_stream_record_event(stream, &event), HRX_STATUS_DEVICE_ERROR,
             "event_create call #1");
  CHECK(event == NULL);
  CHECK_OK(hrx_stream_record_event(stream, &event)); /* create #2, record #1 */
  hrx_event_release(event);
  event = NULL;
  CHECK_CODE(hrx_stream_record_event(stream, &event), HRX_STATUS_DEVICE_ERROR,
             "event_record call #2"); /* create #3 */
  CHECK(event == NULL);
  hrx_fault_counts_t counts;
  hrx_fault_query_counts(&counts);
  CHECK(counts.events == 0);
  /* A read: its staging block's event is created (#4), recording it after
   * the download is refused (#3); the block goes back to the pool. */
  hrx_readback_t* readback = NULL;
  CHECK_CODE(hrx_stream_read(stream, whole(buffer), &readback),
             HRX_STATUS_DEVICE_ERROR, "event_record call #3");
  CHECK(readback == NULL);
  hrx_fault_query_counts(&counts);
  CHECK(counts.events == 1 && counts.host_allocations == 1);
  uint8_t out[128];
  CHECK_OK(hrx_stream_read_blocking(stream, whole(buffer), out, sizeof(out), NULL, NULL));
  CHECK(out[0] == 9 && out[127] == 9);
  hrx_fault_query_counts(&counts);
  CHECK(counts.events == 1 && counts.host_allocations == 1); /* reused */
  hrx_buffer_release(buffer);
  hrx_stream_release(stream);
  hrx_device_release(device);
  CHECK_NOTHING_LIVE();
}

/* With batching, a copy that fails inside a published batch fails the
 * stream: the rest of its batch and later commands are not run, the next
 * observation point raises it once, and nothing leaks. */
static void test_batched_faults(void) {
  hrx_device_t* device = open_with_faults("copy:3");
  hrx_device_set_batching(device, true);
  hrx_stream_t* stream = NULL;
  hrx_buffer_t* big = NULL;
  hrx_buffer_t* src = NULL;
  hrx_buffer_t* dst = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_buffer_allocate(device, 32 << 20, &big));
  CHECK_OK(hrx_buffer_allocate(device, 96, &src));
  CHECK_OK(hrx_buffer_allocate(device, 96, &dst));
  CHECK_OK(hrx_stream_fill(stream, whole(src), 0xAB));
  CHECK_OK(hrx_stream_fill(stream, whole(dst), 0x00));
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  CHECK_OK(hrx_stream_fill(stream, whole(big), 1)); /* keeps the queue busy */
  for (int i = 0; i < 6; ++i) {
    hrx_view_t to = {dst, (uint64_t)i * 16, 16};
    hrx_view_t from = {src, (uint64_t)i * 16, 16};
    CHECK_OK(hrx_stream_copy(stream, to, from));
  }
  CHECK_CODE(hrx_stream_synchronize(stream, NULL, NULL), HRX_STATUS_DEVICE_ERROR,
             "copy call #3 failed (HRX_FAULTS); 3 later commands of this "
             "stream were not run");
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL)); /* reported once */
  uint8_t out[96];
  CHECK_OK(hrx_stream_read_blocking(stream, whole(dst), out, sizeof(out), NULL, NULL));
  for (int i = 0; i < 6; ++i) {
    CHECK(out[i * 16] == (i < 2 ? 0xAB : 0x00));
    CHECK(out[i * 16 + 15] == (i < 2 ? 0xAB : 0x00));
  }
  hrx_buffer_release(big);
  hrx_buffer_release(src);
  hrx_buffer_release(dst);
  hrx_stream_release(stream);
  hrx_device_release(device);
  CHECK_NOTHING_LIVE();
}

/* Random programs under random faults of every kind: every failure has its
 * documented code, and once everything is released nothing is left. */
static long long test_repeated_faults(unsigned seed, int rounds,
                                      bool batching) {
  char spec[256];
  snprintf(spec, sizeof(spec),
           "seed:%u,alloc:10%%,host_alloc:10%%,queue_create:25%%,copy:10%%,"
           "fill:10%%,upload:10%%,download:10%%,event_create:10%%,"
           "event_record:10%%,wait_event:10%%,synchronize:5%%,"
           "event_synchronize:5%%",
           seed);
  hrx_fault_counts_t before;
  hrx_fault_query_counts(&before);
  hrx_device_t* device = open_with_faults(spec);
  hrx_device_set_batching(device, batching);
  /* One pool queue: streams touch the same buffers without events, which
   * is race-free only when their work shares a queue (TSan runs this). */
  CHECK_OK(hrx_device_set_stream_queue_count(device, 1));
  enum { STREAMS = 6, BUFFERS = 4 };
  hrx_stream_t* streams[STREAMS] = {0};
  hrx_buffer_t* buffers[BUFFERS] = {0};
  hrx_event_t* event = NULL;
  int bad_codes = 0;
  srand(seed);
  for (int round = 0; round < rounds; ++round) {
    int s = rand() % STREAMS;
    int b = rand() % BUFFERS;
    int c = (b + 1) % BUFFERS;
    hrx_status_t status = NULL;
    hrx_status_code_t allowed = HRX_STATUS_DEVICE_ERROR;
    if (!streams[s]) {
      status = hrx_stream_create(device, &streams[s]);
      allowed = HRX_STATUS_RESOURCE_EXHAUSTED;
    } else if (!buffers[b]) {
      status = hrx_buffer_allocate(device, 512, &buffers[b]);
      allowed = HRX_STATUS_OUT_OF_MEMORY;
    } else {
      uint8_t bytes[512];
      memset(bytes, round & 0xff, sizeof(bytes));
      hrx_readback_t* readback = NULL;
      switch (rand() % 9) {
        case 0:
          if (buffers[c]) {
            status = hrx_stream_copy(streams[s], whole(buffers[c]),
                                     whole(buffers[b]));
          }
          break;
        case 1:
          status = hrx_stream_fill(streams[s], whole(buffers[b]), 1);
          break;
        case 2:
          status = hrx_stream_upload(streams[s], whole(buffers[b]), bytes, 512);
          break;
        case 3:
          status = hrx_stream_read(streams[s], whole(buffers[b]), &readback);
          if (status && hrx_status_code(status) == HRX_STATUS_OUT_OF_MEMORY) {
            allowed = HRX_STATUS_OUT_OF_MEMORY;
          }
          if (!status && rand() % 2) {
            const uint8_t* got = NULL;
            status = hrx_readback_wait(readback, NULL, &got, NULL);
          }
          hrx_readback_release(readback);
          break;
        case 4:
          hrx_event_release(event);
          event = NULL;
          status = hrx_stream_record_event(streams[s], &event);
          break;
        case 5:
          if (event) status = hrx_stream_wait_event(streams[s], event);
          break;
        case 6:
          status = rand() % 2 ? hrx_stream_synchronize(streams[s], NULL, NULL)
                              : (event ? hrx_event_synchronize(event, NULL, NULL) : NULL);
          break;
        case 7:
          hrx_stream_release_checked(streams[s], &status);
          streams[s] = NULL;
          break;
        case 8:
          hrx_buffer_release(buffers[b]);
          buffers[b] = NULL;
          break;
      }
    }
    if (status) {
      if (hrx_status_code(status) != allowed ||
          !strstr(hrx_status_message(status), "injected fault")) {
        if (bad_codes++ < 5) {
          fprintf(stderr, "unexpected %s: %s\n",
                  hrx_status_code_name(hrx_status_code(status)),
                  hrx_status_message(status));
        }
      }
      hrx_status_free(status);
    }
  }
  CHECK(bad_codes == 0);
  hrx_event_release(event);
  for (int i = 0; i < STREAMS; ++i) {
    hrx_status_t unobserved = NULL;
    hrx_stream_release_checked(streams[i], &unobserved);
    hrx_status_free(unobserved);
  }
  for (int i = 0; i < BUFFERS; ++i) hrx_buffer_release(buffers[i]);
  hrx_device_release(device);
  CHECK_NOTHING_LIVE();
  hrx_fault_counts_t after;
  hrx_fault_query_counts(&after);
  long long injected = after.faults_injected - before.faults_injected;
  CHECK(injected > rounds / 50);
  return injected;
}

int main(void) {
  test_bad_spec();
  test_alloc_fault();
  test_queue_create_fault();
  test_command_faults(false);
  test_command_faults(true);
  test_unobserved_failure(false);
  test_unobserved_failure(true);
  test_event_faults();
  test_batched_faults();
  long long injected = 0;
  int rounds = 0;
  for (unsigned seed = 1; seed <= 8; ++seed) {
    injected += test_repeated_faults(seed, 5000, seed % 2 == 0);
    rounds += 5000;
  }
  hrx_fault_counts_t counts;
  hrx_fault_query_counts(&counts);
  printf("faults: %lld injected in total, %lld in %d random operations over 8 "
         "seeds (4 with batching); nothing left alive\n",
         (long long)counts.faults_injected, injected, rounds);
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
