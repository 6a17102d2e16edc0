/* C tests of graphs and completions through the public API, on the host
 * backend: recording rules, ordering and dependencies, repeated launches,
 * host callbacks (order, failures, the guard), completions and
 * stream_wait_completion, and lifetimes. Also run under ASan and TSan.
 * Prints "N passed, M failed" last and exits non-zero on any failure. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hrx.h"

#include "check.h"

static hrx_view_t whole(hrx_buffer_t* buffer) {
  hrx_view_t view = {buffer, 0, hrx_buffer_size(buffer)};
  return view;
}

static hrx_view_t part(hrx_buffer_t* buffer, uint64_t offset,
                       uint64_t length) {
  hrx_view_t view = {buffer, offset, length};
  return view;
}

static uint8_t read_byte(hrx_stream_t* stream, hrx_buffer_t* buffer,
                         uint64_t offset) {
  uint8_t byte = 0;
  CHECK_OK(hrx_stream_read_blocking(stream, part(buffer, offset, 1), &byte, 1, NULL, NULL));
  return byte;
}

/* A host callback that appends its tag to a shared log and may fail. */
typedef struct {
  pthread_mutex_t mutex;
  char text[256];
  size_t length;
} test_log_t;

typedef struct {
  test_log_t* log;
  char tag;
  bool fail;
  hrx_stream_t* stream;      /* borrowed; a call on it is tried when set */
  hrx_buffer_t* buffer;      /* borrowed; a byte of it is read when set */
  atomic_int* freed;         /* incremented by the user-data free */
  hrx_status_code_t guard_code;
} test_callback_t;

static hrx_status_t test_callback(void* user_data,
                                  hrx_completion_t* completion) {
  test_callback_t* cb = user_data;
  (void)completion;
  pthread_mutex_lock(&cb->log->mutex);
  if (cb->log->length + 1 < sizeof(cb->log->text)) {
    cb->log->text[cb->log->length++] = cb->tag;
  }
  pthread_mutex_unlock(&cb->log->mutex);
  if (cb->stream) {
    /* Calls that submit or wait are refused inside a callback. */
    hrx_status_t status = hrx_stream_synchronize(cb->stream, NULL, NULL);
    cb->guard_code = hrx_status_code(status);
    hrx_status_free(status);
  }
  if (cb->fail) {
    hrx_completion_attach_payload(completion, strdup("payload"), free);
    char message[32];
    snprintf(message, sizeof(message), "callback %c failed", cb->tag);
    return hrx_status_create(HRX_STATUS_DEVICE_ERROR, message);
  }
  return NULL;
}

static void test_callback_free(void* user_data) {
  test_callback_t* cb = user_data;
  if (cb->freed) atomic_fetch_add(cb->freed, 1);
}

static test_log_t* log_create(void) {
  test_log_t* log = calloc(1, sizeof(*log));
  pthread_mutex_init(&log->mutex, NULL);
  return log;
}

static void log_free(test_log_t* log) {
  pthread_mutex_destroy(&log->mutex);
  free(log);
}

static bool log_is(test_log_t* log, const char* expected) {
  pthread_mutex_lock(&log->mutex);
  bool same = log->length == strlen(expected) &&
              memcmp(log->text, expected, log->length) == 0;
  pthread_mutex_unlock(&log->mutex);
  return same;
}

static hrx_device_t* open_host(int index) {
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", index, &device));
  return device;
}

/* Recording rules: every bad input is refused and records nothing. */
static void test_recording_rules(void) {
  hrx_device_t* device = open_host(0);
  hrx_device_t* other = open_host(1);
  hrx_buffer_t* a = NULL;
  hrx_buffer_t* foreign = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 256, &a));
  CHECK_OK(hrx_buffer_allocate(other, 256, &foreign));
  hrx_graph_t* graph = NULL;
  hrx_graph_t* second = NULL;
  CHECK_OK(hrx_graph_create(device, &graph));
  CHECK_OK(hrx_graph_create(device, &second));
  CHECK(hrx_graph_device(graph) == device);

  hrx_graph_node_t* fill = NULL;
  CHECK_OK(hrx_graph_add_fill(graph, part(a, 0, 128), 1, NULL, 0, &fill));
  CHECK(hrx_graph_node_graph(fill) == graph && hrx_graph_node_index(fill) == 0);
  CHECK_CODE(hrx_graph_add_fill(graph, whole(foreign), 1, NULL, 0, NULL),
             HRX_STATUS_INVALID_ARGUMENT, "belongs to device host:1");
  CHECK_CODE(hrx_graph_add_copy(graph, part(a, 0, 8), whole(foreign), NULL, 0,
                                NULL),
             HRX_STATUS_INVALID_ARGUMENT, "graph's device");
  CHECK_CODE(hrx_graph_add_fill(graph, part(a, 0, 0), 1, NULL, 0, NULL),
             HRX_STATUS_INVALID_ARGUMENT, "empty");
  CHECK_CODE(hrx_graph_add_fill(graph, part(a, 250, 10), 1, NULL, 0, NULL),
             HRX_STATUS_OUT_OF_RANGE, "exceeds");
  hrx_view_t none = {NULL, 0, 1};
  CHECK_CODE(hrx_graph_add_fill(graph, none, 1, NULL, 0, NULL),
             HRX_STATUS_INVALID_ARGUMENT, "no buffer");
  CHECK_CODE(hrx_graph_add_copy(graph, part(a, 0, 8), part(a, 4, 8), NULL, 0,
                                NULL),
             HRX_STATUS_INVALID_ARGUMENT, "overlap");
  CHECK_CODE(hrx_graph_add_copy(graph, part(a, 0, 8), part(a, 8, 4), NULL, 0,
                                NULL),
             HRX_STATUS_INVALID_ARGUMENT, "lengths differ");
  CHECK_CODE(hrx_graph_add_host(graph, NULL, NULL, NULL, NULL, 0, NULL),
             HRX_STATUS_INVALID_ARGUMENT, "NULL");
  /* Dependencies: NULL, another graph's node, a missing list. */
  hrx_graph_node_t* foreign_node = NULL;
  CHECK_OK(hrx_graph_add_fill(second, part(a, 0, 1), 2, NULL, 0,
                              &foreign_node));
  hrx_graph_node_t* deps[2] = {fill, NULL};
  CHECK_CODE(hrx_graph_add_fill(graph, part(a, 128, 1), 1, deps, 2, NULL),
             HRX_STATUS_INVALID_ARGUMENT, "dependency 1 is NULL");
  deps[1] = foreign_node;
  CHECK_CODE(hrx_graph_add_fill(graph, part(a, 128, 1), 1, deps, 2, NULL),
             HRX_STATUS_INVALID_ARGUMENT, "another graph");
  CHECK_CODE(hrx_graph_add_fill(graph, part(a, 128, 1), 1, NULL, 1, NULL),
             HRX_STATUS_INVALID_ARGUMENT, "no dependency list");
  CHECK(hrx_graph_node_count(graph) == 1);
  /* A repeated dependency counts once; cycles are refused. */
  hrx_graph_node_t* copy = NULL;
  hrx_graph_node_t* twice[2] = {fill, fill};
  CHECK_OK(hrx_graph_add_copy(graph, part(a, 128, 128), part(a, 0, 128), twice,
                              2, &copy));
  hrx_graph_node_t* last = NULL;
  CHECK_OK(hrx_graph_add_fill(graph, part(a, 255, 1), 3, &copy, 1, &last));
  CHECK_CODE(hrx_graph_add_dependency(graph, fill, last),
             HRX_STATUS_INVALID_ARGUMENT, "cycle");
  CHECK_CODE(hrx_graph_add_dependency(graph, copy, copy),
             HRX_STATUS_INVALID_ARGUMENT, "itself");
  CHECK_CODE(hrx_graph_add_dependency(graph, copy, foreign_node),
             HRX_STATUS_INVALID_ARGUMENT, "another graph");
  CHECK_CODE(hrx_graph_add_dependency(graph, NULL, copy),
             HRX_STATUS_INVALID_ARGUMENT, "required");
  CHECK_OK(hrx_graph_add_dependency(graph, last, fill)); /* already implied */
  CHECK(hrx_graph_node_count(graph) == 3);
  /* Launch rules: other device's stream, empty graph; then sealed. */
  hrx_stream_t* stream = NULL;
  hrx_stream_t* other_stream = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  CHECK_OK(hrx_stream_create(other, &other_stream));
  CHECK_CODE(hrx_graph_launch(graph, other_stream, NULL),
             HRX_STATUS_INVALID_ARGUMENT, "streams of its device");
  hrx_graph_t* empty = NULL;
  CHECK_OK(hrx_graph_create(device, &empty));
  CHECK_CODE(hrx_graph_launch(empty, stream, NULL),
             HRX_STATUS_INVALID_ARGUMENT, "no nodes");
  CHECK_OK(hrx_graph_add_fill(empty, part(a, 0, 1), 9, NULL, 0, NULL));
  hrx_graph_release(empty);
  CHECK_OK(hrx_graph_launch(graph, stream, NULL));
  CHECK(!hrx_graph_is_native(graph)); /* the host backend has none */
  CHECK_CODE(hrx_graph_add_fill(graph, part(a, 0, 1), 1, NULL, 0, NULL),
             HRX_STATUS_FAILED_PRECONDITION, "sealed");
  CHECK_CODE(hrx_graph_add_dependency(graph, last, copy),
             HRX_STATUS_FAILED_PRECONDITION, "sealed");
  CHECK(read_byte(stream, a, 200) == 1 && read_byte(stream, a, 255) == 3);
  hrx_stream_release(other_stream);
  hrx_stream_release(stream);
  hrx_graph_release(second);
  hrx_graph_release(graph);
  hrx_buffer_release(foreign);
  hrx_buffer_release(a);
  hrx_device_release(other);
  hrx_device_release(device);
}

/* Dependencies decide the order, not recording order; launches repeat. */
static void test_order_and_repeats(void) {
  hrx_device_t* device = open_host(0);
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  hrx_buffer_t* a = NULL;
  hrx_buffer_t* b = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 1 << 16, &a));
  CHECK_OK(hrx_buffer_allocate(device, 1 << 16, &b));
  hrx_graph_t* graph = NULL;
  CHECK_OK(hrx_graph_create(device, &graph));
  /* Recorded backwards: copy a->b first, then fill a; the dependency added
   * afterwards makes the fill run first. */
  hrx_graph_node_t* copy = NULL;
  hrx_graph_node_t* fill = NULL;
  CHECK_OK(hrx_graph_add_copy(graph, whole(b), whole(a), NULL, 0, &copy));
  CHECK_OK(hrx_graph_add_fill(graph, whole(a), 0x42, NULL, 0, &fill));
  CHECK_OK(hrx_graph_add_dependency(graph, copy, fill));
  for (int round = 0; round < 50; ++round) {
    CHECK_OK(hrx_stream_fill(stream, whole(b), 0));
    CHECK_OK(hrx_graph_launch(graph, stream, NULL));
    /* Stream work after the launch sees its result. */
    CHECK_OK(hrx_stream_fill(stream, part(a, 0, 1), 0x43));
  }
  CHECK(read_byte(stream, b, 0) == 0x42 && read_byte(stream, b, 65535) == 0x42);
  CHECK(read_byte(stream, a, 0) == 0x43);
  hrx_graph_release(graph);
  hrx_buffer_release(a);
  hrx_buffer_release(b);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

/* Host callbacks run in dependency order, after the device work they
 * depend on; failures reach the completion; the guard refuses waits. */
static void test_callbacks(void) {
  hrx_device_t* device = open_host(0);
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create(device, &stream));
  hrx_buffer_t* a = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 4096, &a));
  test_log_t* log = log_create();
  atomic_int freed = 0;
  test_callback_t first = {.log = log, .tag = 'A', .freed = &freed};
  test_callback_t second = {.log = log, .tag = 'B', .fail = true,
                            .freed = &freed};
  test_callback_t third = {.log = log, .tag = 'C', .fail = true,
                           .stream = stream, .freed = &freed};
  hrx_graph_t* graph = NULL;
  CHECK_OK(hrx_graph_create(device, &graph));
  hrx_graph_node_t* fill = NULL;
  hrx_graph_node_t* n1 = NULL;
  hrx_graph_node_t* n2 = NULL;
  hrx_graph_node_t* n3 = NULL;
  CHECK_OK(hrx_graph_add_host(graph, test_callback, &third, test_callback_free,
                              NULL, 0, &n3));
  CHECK_OK(hrx_graph_add_host(graph, test_callback, &second,
                              test_callback_free, NULL, 0, &n2));
  CHECK_OK(hrx_graph_add_fill(graph, whole(a), 7, NULL, 0, &fill));
  CHECK_OK(hrx_graph_add_host(graph, test_callback, &first, test_callback_free,
                              &fill, 1, &n1));
  CHECK_OK(hrx_graph_add_dependency(graph, n2, n1));
  CHECK_OK(hrx_graph_add_dependency(graph, n3, n2));
  for (int round = 0; round < 3; ++round) {
    hrx_completion_t* completion = NULL;
    CHECK_OK(hrx_graph_launch(graph, stream, &completion));
    CHECK(completion != NULL);
    bool done = false;
    CHECK_OK(hrx_completion_wait(completion, -1, &done));
    CHECK(done && hrx_completion_done(completion));
    /* B failed first; C's failure is dropped (first wins). */
    CHECK_CODE(hrx_completion_result(completion), HRX_STATUS_DEVICE_ERROR,
               "callback B failed");
    CHECK(hrx_completion_payload(completion) != NULL &&
          strcmp(hrx_completion_payload(completion), "payload") == 0);
    hrx_completion_release(completion);
  }
  CHECK(log_is(log, "ABCABCABC"));
  CHECK(third.guard_code == HRX_STATUS_FAILED_PRECONDITION);
  CHECK(read_byte(stream, a, 4095) == 7);
  CHECK(atomic_load(&freed) == 0);
  hrx_graph_release(graph);
  /* The stream gives finished launches (and so the graph) back at its next
   * call; the graph owned the user data. */
  CHECK_OK(hrx_stream_synchronize(stream, NULL, NULL));
  CHECK(atomic_load(&freed) == 3);
  log_free(log);
  hrx_buffer_release(a);
  hrx_stream_release(stream);
  hrx_device_release(device);
}

/* A callback that blocks until released, to observe pending states. */
typedef struct {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  bool open;
  atomic_int entered;
} test_gate_t;

static hrx_status_t test_gate_callback(void* user_data,
                                       hrx_completion_t* completion) {
  (void)completion;
  test_gate_t* gate = user_data;
  atomic_fetch_add(&gate->entered, 1);
  pthread_mutex_lock(&gate->mutex);
  while (!gate->open) pthread_cond_wait(&gate->cond, &gate->mutex);
  pthread_mutex_unlock(&gate->mutex);
  return NULL;
}

static void* test_gate_opener(void* arg) {
  test_gate_t* gate = arg;
  usleep(50000);
  pthread_mutex_lock(&gate->mutex);
  gate->open = true;
  pthread_cond_broadcast(&gate->cond);
  pthread_mutex_unlock(&gate->mutex);
  return NULL;
}

/* Completions: timeouts, result before done, wait_completion ordering on
 * another queue, and a graph released while its launch runs. */
static void test_completion_ordering(void) {
  hrx_device_t* device = open_host(0);
  CHECK_OK(hrx_device_set_stream_queue_count(device, 2));
  hrx_stream_t* s1 = NULL;
  hrx_stream_t* s2 = NULL;
  CHECK_OK(hrx_stream_create(device, &s1));
  CHECK_OK(hrx_stream_create(device, &s2));
  CHECK(hrx_stream_queue_index(s1) != hrx_stream_queue_index(s2));
  hrx_buffer_t* a = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 1024, &a));
  CHECK_OK(hrx_stream_fill(s1, whole(a), 0));
  CHECK_OK(hrx_stream_synchronize(s1, NULL, NULL));
  test_gate_t gate = {.open = false};
  pthread_mutex_init(&gate.mutex, NULL);
  pthread_cond_init(&gate.cond, NULL);
  hrx_graph_t* graph = NULL;
  CHECK_OK(hrx_graph_create(device, &graph));
  hrx_graph_node_t* wait_node = NULL;
  CHECK_OK(hrx_graph_add_host(graph, test_gate_callback, &gate, NULL, NULL, 0,
                              &wait_node));
  CHECK_OK(hrx_graph_add_fill(graph, part(a, 0, 512), 1, &wait_node, 1, NULL));
  hrx_completion_t* completion = NULL;
  CHECK_OK(hrx_graph_launch(graph, s1, &completion));
  /* Dropped while launched: the launch keeps it alive. */
  hrx_graph_release(graph);
  bool done = true;
  CHECK_OK(hrx_completion_wait(completion, 1000000, &done));
  CHECK(!done && !hrx_completion_done(completion));
  CHECK_CODE(hrx_completion_result(completion),
             HRX_STATUS_FAILED_PRECONDITION, "not complete");
  CHECK_CODE(hrx_stream_wait_completion(s2, NULL),
             HRX_STATUS_INVALID_ARGUMENT, "NULL");
  CHECK_OK(hrx_stream_wait_completion(s2, completion));
  pthread_t opener;
  pthread_create(&opener, NULL, test_gate_opener, &gate);
  /* s2's later fill waits (on the host) for the completion, so it lands
   * after the graph's fill of the same bytes. */
  CHECK_OK(hrx_stream_fill(s2, part(a, 0, 256), 2));
  CHECK(hrx_completion_done(completion));
  CHECK(read_byte(s2, a, 0) == 2 && read_byte(s2, a, 300) == 1);
  pthread_join(opener, NULL);
  CHECK_OK(hrx_completion_result(completion));
  CHECK(hrx_completion_payload(completion) == NULL);
  /* Waiting for a done completion is free. */
  CHECK_OK(hrx_stream_wait_completion(s2, completion));
  CHECK_OK(hrx_stream_synchronize(s2, NULL, NULL));
  hrx_completion_release(completion);
  CHECK(atomic_load(&gate.entered) == 1);

  /* The stream released while a launch runs waits for its callbacks. */
  gate.open = false;
  CHECK_OK(hrx_graph_create(device, &graph));
  CHECK_OK(hrx_graph_add_host(graph, test_gate_callback, &gate, NULL, NULL, 0,
                              NULL));
  CHECK_OK(hrx_graph_launch(graph, s1, NULL));
  hrx_graph_release(graph);
  pthread_create(&opener, NULL, test_gate_opener, &gate);
  hrx_stream_release(s1);
  CHECK(atomic_load(&gate.entered) == 2);
  pthread_join(opener, NULL);
  pthread_cond_destroy(&gate.cond);
  pthread_mutex_destroy(&gate.mutex);
  hrx_buffer_release(a);
  hrx_stream_release(s2);
  hrx_device_release(device);
}

/* Several threads launch the same graph at once; every launch completes. */
typedef struct {
  hrx_graph_t* graph;
  hrx_device_t* device;
  int ok;
} test_launcher_t;

static void* test_launcher_main(void* arg) {
  test_launcher_t* launcher = arg;
  hrx_stream_t* stream = NULL;
  if (hrx_stream_create(launcher->device, &stream)) return NULL;
  for (int i = 0; i < 20; ++i) {
    hrx_completion_t* completion = NULL;
    hrx_status_t status = hrx_graph_launch(launcher->graph, stream, &completion);
    if (status) {
      hrx_status_free(status);
      continue;
    }
    bool done = false;
    hrx_status_free(hrx_completion_wait(completion, -1, &done));
    if (done) launcher->ok++;
    hrx_completion_release(completion);
  }
  hrx_stream_release(stream);
  return NULL;
}

static hrx_status_t test_count_callback(void* user_data,
                                        hrx_completion_t* completion) {
  (void)completion;
  atomic_fetch_add((atomic_int*)user_data, 1);
  return NULL;
}

/* The graph writes no memory: launches on different queues would race on
 * it (that is the caller's to order). */
static void test_concurrent_launches(void) {
  hrx_device_t* device = open_host(0);
  atomic_int calls = 0;
  hrx_graph_t* graph = NULL;
  CHECK_OK(hrx_graph_create(device, &graph));
  hrx_graph_node_t* first = NULL;
  CHECK_OK(hrx_graph_add_host(graph, test_count_callback, &calls, NULL, NULL,
                              0, &first));
  CHECK_OK(hrx_graph_add_host(graph, test_count_callback, &calls, NULL,
                              &first, 1, NULL));
  test_launcher_t launchers[4];
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i) {
    launchers[i] = (test_launcher_t){graph, device, 0};
    pthread_create(&threads[i], NULL, test_launcher_main, &launchers[i]);
  }
  int ok = 0;
  for (int i = 0; i < 4; ++i) {
    pthread_join(threads[i], NULL);
    ok += launchers[i].ok;
  }
  CHECK(ok == 80 && atomic_load(&calls) == 160);
  hrx_graph_release(graph);
  hrx_device_release(device);
}

int main(void) {
  setenv("HRX_HOST_DEVICE_COUNT", "2", 1);
  test_recording_rules();
  test_order_and_repeats();
  test_callbacks();
  test_completion_ordering();
  test_concurrent_launches();
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
