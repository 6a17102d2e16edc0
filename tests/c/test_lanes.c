/* C tests of priority lanes, reserved queues, the least-loaded policy, pool
 * stats (counted at publication) and the connection-budget rule, on the host
 * backend and hip_connections.c. Runs without Python, also under ASan+UBSan
 * and TSan. Prints "N passed, M failed" last; non-zero exit on failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend_registry.h"
#include "drivers/hip/hip_connections.h"
#include "hrx.h"

#include "check.h"

enum { STATS_CAPACITY = HRX_STREAM_LANE_COUNT * HRX_MAX_STREAM_QUEUE_COUNT +
                        HRX_MAX_RESERVED_QUEUES };
static hrx_pool_queue_stats_t stats_buffer[STATS_CAPACITY];

static hrx_pool_stats_t query(hrx_device_t* device) {
  hrx_pool_stats_t stats;
  CHECK_OK(hrx_device_query_pool_stats(device, stats_buffer, STATS_CAPACITY,
                                       &stats));
  return stats;
}

static hrx_stream_t* create(hrx_device_t* device, int priority, bool reserve) {
  hrx_stream_options_t options;
  hrx_stream_options_default(&options);
  options.priority = priority;
  options.reserve = reserve;
  hrx_stream_t* stream = NULL;
  CHECK_OK(hrx_stream_create_with_options(device, &options, &stream));
  return stream;
}

/* Each lane round-robins over its own `count` slots; lanes are lazy and
 * carry the lane's precedence rank on the host backend. */
static void test_lanes(int n) {
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  CHECK_OK(hrx_device_set_stream_queue_count(device, n));
  hrx_stream_t* streams[3][20];
  for (int k = 0; k < 20; ++k) {
    for (int p = HRX_STREAM_PRIORITY_MAX; p >= HRX_STREAM_PRIORITY_MIN; --p) {
      hrx_stream_t* s = create(device, p, false);
      streams[HRX_STREAM_PRIORITY_MAX - p][k] = s;
      CHECK(hrx_stream_queue_index(s) == k % n);
      CHECK(hrx_stream_priority(s) == p);
      CHECK(!hrx_stream_reserved(s));
    }
  }
  /* Different lanes never share a queue. */
  CHECK(hrx_stream_native_handle(streams[0][0]) !=
        hrx_stream_native_handle(streams[1][0]));
  CHECK(hrx_stream_native_handle(streams[1][0]) !=
        hrx_stream_native_handle(streams[2][0]));
  hrx_pool_info_t info;
  hrx_device_query_pool(device, &info);
  int per_lane = n < 20 ? n : 20;
  CHECK(info.queues_created == 3 * per_lane);
  CHECK(info.live_streams == 60);
  hrx_pool_stats_t stats = query(device);
  CHECK(stats.queue_stats_count == 3 * per_lane);
  CHECK(stats_buffer[0].priority == HRX_STREAM_PRIORITY_HIGH);
  CHECK(stats_buffer[stats.queue_stats_count - 1].priority ==
        HRX_STREAM_PRIORITY_LOW);
  /* Precedence ranks: high before normal before low. */
  CHECK(stats_buffer[0].native_priority <
        stats_buffer[per_lane].native_priority);
  CHECK(stats_buffer[per_lane].native_priority <
        stats_buffer[2 * per_lane].native_priority);
  /* The host's connections are its engines. */
  CHECK(strcmp(stats.connections.variable, "HRX_HOST_ENGINES") == 0);
  hrx_device_info_t device_info;
  CHECK_OK(hrx_device_query_info(device, &device_info));
  CHECK(device_info.engines >= 1);
  CHECK(stats.connections.value == device_info.engines);
  CHECK(stats.connections.wanted ==
        n * HRX_STREAM_LANE_COUNT + HRX_CONNECTION_HEADROOM);
  for (int l = 0; l < 3; ++l) {
    for (int k = 0; k < 20; ++k) hrx_stream_release(streams[l][k]);
  }
  hrx_device_release(device);
}

static void test_bad_priority(void) {
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  hrx_stream_options_t options;
  hrx_stream_options_default(&options);
  CHECK(options.priority == HRX_STREAM_PRIORITY_NORMAL && !options.reserve);
  hrx_stream_t* stream = NULL;
  for (int bad = -3; bad <= 3; bad += 5) {
    options.priority = bad;
    CHECK_CODE(hrx_stream_create_with_options(device, &options, &stream),
               HRX_STATUS_INVALID_ARGUMENT, "between -1 (low) and 1 (high)");
  }
  options.priority = 2;
  options.reserve = true;
  CHECK_CODE(hrx_stream_create_with_options(device, &options, &stream),
             HRX_STATUS_INVALID_ARGUMENT, "got 2");
  CHECK(stream == NULL);
  hrx_pool_stats_t stats = query(device);
  CHECK(!stats.first_use && stats.queue_stats_count == 0);
  int priority = 7;
  CHECK(hrx_stream_priority_parse("high", &priority) && priority == 1);
  CHECK(!hrx_stream_priority_parse("urgent", &priority) && priority == 1);
  CHECK(hrx_stream_priority_name(2) == NULL);
  hrx_device_release(device);
}

/* A reserved queue is shared with nobody, leaves the cursor alone, is
 * counted, and goes with its stream. */
static void test_reserved(void) {
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  CHECK_OK(hrx_device_set_stream_queue_count(device, 2));
  hrx_stream_t* reserved = create(device, HRX_STREAM_PRIORITY_HIGH, true);
  CHECK(hrx_stream_reserved(reserved));
  CHECK(hrx_stream_queue_index(reserved) == -1);
  hrx_pool_info_t info;
  hrx_device_query_pool(device, &info);
  CHECK(info.first_use && info.queues_created == 0 && info.next_slot == 0);
  hrx_stream_t* others[6];
  for (int k = 0; k < 6; ++k) {
    others[k] = create(device, k % 3 - 1, false);
    CHECK(hrx_stream_native_handle(others[k]) !=
          hrx_stream_native_handle(reserved));
  }
  hrx_pool_stats_t stats = query(device);
  CHECK(stats.reserved_live == 1 && stats.reserved_created == 1);
  hrx_pool_queue_stats_t* last = &stats_buffer[stats.queue_stats_count - 1];
  CHECK(last->reserved && last->slot == -1 && last->streams == 1 &&
        last->priority == HRX_STREAM_PRIORITY_HIGH);
  hrx_stream_release(reserved);
  stats = query(device);
  CHECK(stats.reserved_live == 0 && stats.reserved_created == 1);
  CHECK(!stats_buffer[stats.queue_stats_count - 1].reserved);
  for (int k = 0; k < 6; ++k) hrx_stream_release(others[k]);
  hrx_device_release(device);
}

/* Refusals: the runtime's (HRX_HOST_MAX_QUEUES) and the pool's own limit;
 * nothing is left behind either way. */
static void test_reserved_refused(void) {
  setenv("HRX_HOST_MAX_QUEUES", "1", 1);
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  unsetenv("HRX_HOST_MAX_QUEUES");
  hrx_stream_t* first = create(device, HRX_STREAM_PRIORITY_NORMAL, false);
  hrx_pool_stats_t before = query(device);
  hrx_stream_options_t options;
  hrx_stream_options_default(&options);
  options.reserve = true;
  hrx_stream_t* stream = NULL;
  CHECK_CODE(hrx_stream_create_with_options(device, &options, &stream),
             HRX_STATUS_RESOURCE_EXHAUSTED, "cannot create a reserved");
  CHECK(stream == NULL);
  hrx_pool_stats_t after = query(device);
  CHECK(after.reserved_live == 0 && after.reserved_created == 0 &&
        after.reserved_refused == before.reserved_refused + 1 &&
        after.queue_stats_count == before.queue_stats_count);
  hrx_pool_info_t info;
  hrx_device_query_pool(device, &info);
  CHECK(info.live_streams == 1);
  hrx_stream_release(first);
  hrx_device_release(device);

  CHECK_OK(hrx_device_open("host", 0, &device));
  hrx_stream_t* held[HRX_MAX_RESERVED_QUEUES];
  for (int i = 0; i < HRX_MAX_RESERVED_QUEUES; ++i) {
    held[i] = create(device, HRX_STREAM_PRIORITY_LOW, true);
  }
  options.priority = HRX_STREAM_PRIORITY_LOW;
  CHECK_CODE(hrx_stream_create_with_options(device, &options, &stream),
             HRX_STATUS_RESOURCE_EXHAUSTED, "64 reserved queues are alive");
  hrx_stream_release(held[0]);
  CHECK_OK(hrx_stream_create_with_options(device, &options, &held[0]));
  for (int i = 0; i < HRX_MAX_RESERVED_QUEUES; ++i) {
    hrx_stream_release(held[i]);
  }
  hrx_device_release(device);
}

static void test_policy_setting(void) {
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  CHECK(hrx_device_stream_queue_policy(device) == HRX_QUEUE_POLICY_ROUND_ROBIN);
  CHECK_CODE(hrx_device_set_stream_queue_policy(device, 2),
             HRX_STATUS_INVALID_ARGUMENT, "round_robin (0) and least_loaded");
  CHECK_OK(hrx_device_set_stream_queue_policy(device,
                                              HRX_QUEUE_POLICY_LEAST_LOADED));
  CHECK_OK(hrx_device_set_stream_queue_policy(device,
                                              HRX_QUEUE_POLICY_ROUND_ROBIN));
  /* A reserved queue is first use too. */
  hrx_stream_t* s = create(device, HRX_STREAM_PRIORITY_NORMAL, true);
  CHECK_OK(hrx_device_set_stream_queue_policy(device,
                                              HRX_QUEUE_POLICY_ROUND_ROBIN));
  CHECK_CODE(hrx_device_set_stream_queue_policy(
                 device, HRX_QUEUE_POLICY_LEAST_LOADED),
             HRX_STATUS_BUSY, "cannot change to least_loaded");
  CHECK_CODE(hrx_device_set_stream_queue_policy(device, -1),
             HRX_STATUS_INVALID_ARGUMENT, "unknown stream queue policy -1");
  CHECK_CODE(hrx_device_set_stream_queue_count(device, 3), HRX_STATUS_BUSY,
             NULL);
  hrx_queue_policy_t policy = HRX_QUEUE_POLICY_ROUND_ROBIN;
  CHECK(hrx_queue_policy_parse("least_loaded", &policy) &&
        policy == HRX_QUEUE_POLICY_LEAST_LOADED);
  CHECK(!hrx_queue_policy_parse("fastest", &policy));
  CHECK(hrx_queue_policy_name(5) == NULL);
  hrx_stream_release(s);
  hrx_device_release(device);
}

/* Counting at publication, and least-loaded choosing the idle queue where
 * round-robin would pick the busy one. */
static void test_stats_and_least_loaded(void) {
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  CHECK_OK(hrx_device_set_stream_queue_count(device, 2));
  CHECK_OK(hrx_device_set_stream_queue_policy(device,
                                              HRX_QUEUE_POLICY_LEAST_LOADED));
  hrx_stream_t* a = create(device, HRX_STREAM_PRIORITY_NORMAL, false);
  hrx_stream_t* b = create(device, HRX_STREAM_PRIORITY_NORMAL, false);
  CHECK(hrx_stream_queue_index(a) == 0 && hrx_stream_queue_index(b) == 1);

  const uint64_t big = 32u << 20;
  hrx_buffer_t* src = NULL;
  hrx_buffer_t* dst = NULL;
  CHECK_OK(hrx_buffer_allocate(device, big, &src));
  CHECK_OK(hrx_buffer_allocate(device, big, &dst));
  hrx_view_t vs, vd;
  CHECK_OK(hrx_view_make(src, 0, big, &vs));
  CHECK_OK(hrx_view_make(dst, 0, big, &vd));
  CHECK_OK(hrx_stream_fill(b, vs, 7));
  CHECK_OK(hrx_stream_synchronize(b, NULL, NULL));
  /* Queue 0 gets a backlog; queue 1 is idle. */
  for (int i = 0; i < 16; ++i) CHECK_OK(hrx_stream_copy(a, vd, vs));
  hrx_stream_t* c = create(device, HRX_STREAM_PRIORITY_NORMAL, false);
  /* Round-robin would give slot 0 (the cursor is past slot 1). */
  CHECK(hrx_stream_queue_index(c) == 1);
  hrx_pool_stats_t stats = query(device);
  CHECK(stats.policy == HRX_QUEUE_POLICY_LEAST_LOADED);
  CHECK(stats_buffer[0].commands_submitted == 16);
  CHECK(stats_buffer[0].bytes_submitted == 16 * big);
  CHECK(stats_buffer[0].commands_in_flight <= 16);
  CHECK(stats_buffer[1].commands_submitted == 1);
  CHECK(stats_buffer[1].bytes_submitted == big);
  CHECK(stats_buffer[1].streams == 2 && stats_buffer[1].streams_assigned == 2);
  CHECK_OK(hrx_stream_synchronize(a, NULL, NULL));
  stats = query(device);
  CHECK(stats_buffer[0].commands_in_flight == 0);
  CHECK(stats_buffer[0].bytes_in_flight == 0);
  /* Both idle: fewest streams wins (slot 0 has 1, slot 1 has 2). */
  hrx_stream_t* d = create(device, HRX_STREAM_PRIORITY_NORMAL, false);
  CHECK(hrx_stream_queue_index(d) == 0);
  /* Uploads, reads and event waits are commands too. */
  uint8_t bytes[64] = {0};
  hrx_view_t small;
  CHECK_OK(hrx_view_make(dst, 0, sizeof(bytes), &small));
  CHECK_OK(hrx_stream_upload(d, small, bytes, sizeof(bytes)));
  CHECK_OK(hrx_stream_read_blocking(d, small, bytes, sizeof(bytes), NULL, NULL));
  hrx_event_t* event = NULL;
  CHECK_OK(hrx_stream_record_event(c, &event));
  CHECK_OK(hrx_stream_wait_event(d, event));
  CHECK_OK(hrx_stream_synchronize(d, NULL, NULL));
  stats = query(device);
  CHECK(stats_buffer[0].commands_submitted == 16 + 3);
  CHECK(stats_buffer[0].bytes_submitted == 16 * big + 2 * sizeof(bytes));
  CHECK(stats_buffer[0].commands_in_flight == 0);
  /* Capacity 1 writes one entry; 0 writes none but the totals. */
  hrx_pool_stats_t some;
  CHECK_OK(hrx_device_query_pool_stats(device, stats_buffer, 1, &some));
  CHECK(some.queue_stats_count == 1);
  CHECK_OK(hrx_device_query_pool_stats(device, NULL, 0, &some));
  CHECK(some.queue_stats_count == 0 && some.queue_count == 2);
  CHECK_CODE(hrx_device_query_pool_stats(device, NULL, 1, &some),
             HRX_STATUS_INVALID_ARGUMENT, "capacity");
  hrx_event_release(event);
  hrx_buffer_release(src);
  hrx_buffer_release(dst);
  hrx_stream_release(a);
  hrx_stream_release(b);
  hrx_stream_release(c);
  hrx_stream_release(d);
  hrx_device_release(device);
}

/* hip_connections.c's rule, without a GPU: unset -> hrx sets and marks it;
 * the user's value is kept; hrx's own (inherited) value is resized. */
static void test_connection_rule(void) {
  const char* var = "CUDA_DEVICE_MAX_CONNECTIONS";
  unsetenv(var);
  unsetenv("HRX_CONNECTION_BUDGET_SET");
  hrx_connection_budget_t budget;
  hrx_hip_connections_current("nvidia", &budget);
  CHECK(strcmp(budget.source, "unset") == 0 && budget.value == 0);
  hrx_hip_connections_preview("nvidia", 28, &budget);
  CHECK(strcmp(budget.source, "pending") == 0 && budget.value == 28);
  CHECK(getenv(var) == NULL);
  hrx_hip_connections_apply("nvidia", 52, &budget);
  CHECK(strcmp(budget.source, "hrx") == 0 && budget.value == 32 &&
        budget.wanted == 52 && strcmp(budget.variable, var) == 0);
  CHECK(getenv(var) && strcmp(getenv(var), "32") == 0);
  hrx_hip_connections_current("nvidia", &budget);
  CHECK(strcmp(budget.source, "hrx") == 0 && budget.value == 32);
  /* hrx's own value (e.g. inherited by a child) is resized. */
  hrx_hip_connections_apply("nvidia", 7, &budget);
  CHECK(strcmp(budget.source, "hrx") == 0 && budget.value == 7);
  /* The user's value is respected. */
  setenv(var, "8", 1);
  hrx_hip_connections_apply("nvidia", 52, &budget);
  CHECK(strcmp(budget.source, "user") == 0 && budget.value == 8);
  CHECK(strcmp(getenv(var), "8") == 0);
  hrx_hip_connections_current("nvidia", &budget);
  CHECK(strcmp(budget.source, "user") == 0);
  unsetenv(var);
  unsetenv("HRX_CONNECTION_BUDGET_SET");
  CHECK(strcmp(hrx_hip_connections_variable("amd"), "GPU_MAX_HW_QUEUES") == 0);
  CHECK(hrx_hip_connections_variable("host") == NULL);
  hrx_hip_connections_apply("other", 9, &budget);
  CHECK(strcmp(budget.source, "not applicable") == 0);
}

/* Probing the hip backend (what listing backends does) loads the runtime
 * where one is installed (Debian's libamdhip64 without a GPU here) and
 * leaves the environment alone: only opening a device applies the budget. */
static void test_probe_leaves_the_budget_alone(void) {
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  unsetenv("GPU_MAX_HW_QUEUES");
  unsetenv("HRX_CONNECTION_BUDGET_SET");
  hrx_status_t refusal = hrx_backend_probe("hip");
  bool available = refusal == NULL;
  hrx_status_free(refusal);
  CHECK(getenv("CUDA_DEVICE_MAX_CONNECTIONS") == NULL);
  CHECK(getenv("GPU_MAX_HW_QUEUES") == NULL);
  CHECK(getenv("HRX_CONNECTION_BUDGET_SET") == NULL);
  setenv("GPU_MAX_HW_QUEUES", "3", 1);
  hrx_status_free(hrx_backend_probe("hip"));
  CHECK(strcmp(getenv("GPU_MAX_HW_QUEUES"), "3") == 0);
  unsetenv("GPU_MAX_HW_QUEUES");
  /* Without a hip device the automatic choice opens host and applies
   * nothing. */
  const char* chosen = getenv("HRX_BACKEND");
  if (!available && !(chosen && *chosen)) {
    hrx_device_t* device = NULL;
    CHECK_OK(hrx_device_open(NULL, 0, &device));
    CHECK(getenv("CUDA_DEVICE_MAX_CONNECTIONS") == NULL);
    CHECK(getenv("GPU_MAX_HW_QUEUES") == NULL);
    CHECK(getenv("HRX_CONNECTION_BUDGET_SET") == NULL);
    if (device) hrx_device_release(device);
  }
}

/* Under the fault wrapper (HRX_FAULTS) lane and reserved queues are
 * created through it: a refused one leaves nothing, the next works and
 * keeps its lane's native priority; queue queries pass through. */
static void test_fault_wrapper_forwards(void) {
  setenv("HRX_FAULTS", "queue_create:1,queue_create:3", 1);
  hrx_device_t* device = NULL;
  CHECK_OK(hrx_device_open("host", 0, &device));
  unsetenv("HRX_FAULTS");
  if (!device) return;
  hrx_stream_options_t options;
  hrx_stream_options_default(&options);
  options.priority = HRX_STREAM_PRIORITY_HIGH;
  hrx_stream_t* stream = NULL;
  CHECK_CODE(hrx_stream_create_with_options(device, &options, &stream),
             HRX_STATUS_RESOURCE_EXHAUSTED, "injected fault: queue_create");
  hrx_pool_stats_t stats = query(device);
  CHECK(!stats.first_use && stats.queue_stats_count == 0);
  hrx_stream_t* high = create(device, HRX_STREAM_PRIORITY_HIGH, false);
  options.reserve = true;
  CHECK_CODE(hrx_stream_create_with_options(device, &options, &stream),
             HRX_STATUS_RESOURCE_EXHAUSTED, "cannot create a reserved");
  hrx_stream_t* reserved = create(device, HRX_STREAM_PRIORITY_LOW, true);
  stats = query(device);
  CHECK(stats.queue_stats_count == 2 && stats.reserved_refused == 1);
  CHECK(stats_buffer[0].priority == HRX_STREAM_PRIORITY_HIGH &&
        stats_buffer[1].reserved);
  CHECK(stats_buffer[0].native_priority < stats_buffer[1].native_priority);
  CHECK(stats.connections.wanted ==
        HRX_DEFAULT_STREAM_QUEUE_COUNT * HRX_STREAM_LANE_COUNT +
            HRX_CONNECTION_HEADROOM);
  hrx_buffer_t* buffer = NULL;
  CHECK_OK(hrx_buffer_allocate(device, 4096, &buffer));
  hrx_view_t view;
  CHECK_OK(hrx_view_make(buffer, 0, 4096, &view));
  CHECK_OK(hrx_stream_fill(high, view, 1));
  CHECK_OK(hrx_stream_synchronize(high, NULL, NULL));
  stats = query(device);
  CHECK(stats_buffer[0].commands_submitted == 1 &&
        stats_buffer[0].commands_in_flight == 0);
  hrx_buffer_release(buffer);
  hrx_stream_release(high);
  hrx_stream_release(reserved);
  hrx_device_release(device);
}

int main(void) {
  /* The statistics count commands at publication, and the least-loaded
   * policy reads them: bulk copies go out whole here, not paced
   * (test_pacing.c covers pacing). */
  setenv("HRX_CHUNKING", "0", 1);
  const int counts[] = {1, 2, 4, 8, 16};
  for (int i = 0; i < 5; ++i) test_lanes(counts[i]);
  test_bad_priority();
  test_reserved();
  test_reserved_refused();
  test_policy_setting();
  test_stats_and_least_loaded();
  test_connection_rule();
  test_probe_leaves_the_budget_alone();
  test_fault_wrapper_forwards();
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
