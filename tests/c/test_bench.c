/* Tests of the queue-pool benchmark driver (csrc/bench/bench.c) on the host
 * backend, with tiny sizes. The last line of output is "N passed, M failed";
 * the exit status is 0 only when M is 0. Arguments select tests by name
 * (substring). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "hrx.h"

static int hrx_test_failures; /* checks failed in the current test */

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                    \
      ++hrx_test_failures;                                               \
    }                                                                    \
  } while (0)

/* Checks that `expr` succeeds; prints and frees the status otherwise. */
#define CHECK_OK(expr)                                                       \
  do {                                                                       \
    hrx_status_t check_status_ = (expr);                                     \
    if (check_status_) {                                                     \
      fprintf(stderr, "  %s:%d: %s failed: %s: %s\n", __FILE__, __LINE__,    \
              #expr, hrx_status_code_name(hrx_status_code(check_status_)),   \
              hrx_status_message(check_status_));                           \
      hrx_status_free(check_status_);                                        \
      ++hrx_test_failures;                                                   \
    }                                                                        \
  } while (0)

/* Checks that `expr` fails with `code`, and frees the status. */
#define CHECK_CODE(expr, code)                                                \
  do {                                                                        \
    hrx_status_t check_status_ = (expr);                                      \
    if (hrx_status_code(check_status_) != (code)) {                           \
      fprintf(stderr, "  %s:%d: %s: expected %s, got %s (%s)\n", __FILE__,    \
              __LINE__, #expr, hrx_status_code_name(code),                    \
              hrx_status_code_name(hrx_status_code(check_status_)),           \
              hrx_status_message(check_status_));                             \
      ++hrx_test_failures;                                                    \
    }                                                                         \
    hrx_status_free(check_status_);                                           \
  } while (0)

static hrx_bench_config_t hrx_test_tiny_config(hrx_bench_driver_t driver) {
  hrx_bench_config_t c;
  hrx_bench_config_default(&c);
  c.driver = driver;
  c.lanes = 4;
  c.retained_streams = 4;
  c.small_bytes = 4096;
  c.small_copies = 8;
  c.bulk_bytes = 64 << 10;
  c.bulk_copies = 2;
  c.loaded_copies = 2;
  c.warmup = 1;
  c.samples = 3;
  c.kernel_spin_ns = 2000;
  c.kernel_launches = 16;
  c.backlog_blocks = 8;
  c.backlog_kernels = 1;
  c.transfer_bytes = 64 << 10;
  c.transfer_copies = 2;
  c.compute_samples = 2;
  c.transfer_samples = 2;
  return c;
}

static hrx_device_t* hrx_test_open(int queue_count) {
  hrx_device_t* device = NULL;
  hrx_status_t status = hrx_device_open("host", 0, &device);
  if (status) {
    fprintf(stderr, "  cannot open the host device: %s\n",
            hrx_status_message(status));
    hrx_status_free(status);
    ++hrx_test_failures;
    return NULL;
  }
  CHECK_OK(hrx_device_set_stream_queue_count(device, queue_count));
  return device;
}

static int hrx_test_min(int a, int b) { return a < b ? a : b; }

static bool hrx_test_all_positive(const uint64_t* values, size_t count) {
  if (!values) return false;
  for (size_t i = 0; i < count; ++i) {
    if (values[i] == 0) return false;
  }
  return true;
}

/* Checks a successful result against the config it ran. */
static void hrx_test_check_result(const hrx_bench_result_t* r,
                                  const hrx_bench_config_t* c,
                                  int queue_count) {
  CHECK(r->config.driver == c->driver);
  CHECK(r->config.lanes == c->lanes);
  CHECK(r->config.samples == c->samples);
  CHECK(r->queue_count == queue_count);
  CHECK(r->queues_used ==
        hrx_test_min(queue_count, c->retained_streams + 2 * c->lanes));
  CHECK(r->rounds == c->samples);
  CHECK(r->latency_samples == (size_t)c->samples * (size_t)c->lanes);
  CHECK(r->stream_creation_ns > 0);
  CHECK(hrx_test_all_positive(r->small_round_ns, (size_t)r->rounds));
  CHECK(hrx_test_all_positive(r->threaded_round_ns, (size_t)r->rounds));
  CHECK(hrx_test_all_positive(r->bulk_round_ns, (size_t)r->rounds));
  CHECK(hrx_test_all_positive(r->idle_sample_ns, r->latency_samples));
  CHECK(hrx_test_all_positive(r->loaded_sample_ns, r->latency_samples));
  bool probes = c->loaded_probes && c->driver == HRX_BENCH_DRIVER_NATIVE;
  for (int v = 0; v < HRX_BENCH_PROBE_COUNT; ++v) {
    CHECK(probes ? hrx_test_all_positive(r->loaded_probe_sample_ns[v],
                                         r->latency_samples)
                 : r->loaded_probe_sample_ns[v] == NULL);
  }
  for (int op = 0; op < HRX_BENCH_OP_COUNT; ++op) {
    size_t n = (size_t)(op < HRX_BENCH_OP_TRANSFER_READ ? c->compute_samples
                                                        : c->transfer_samples);
    for (int k = 0; k < HRX_BENCH_CONTENTION_KINDS; ++k) {
      CHECK(c->contention
                ? hrx_test_all_positive(r->contention_sample_ns[op][k], n)
                : r->contention_sample_ns[op][k] == NULL);
    }
  }
  CHECK(c->contention ? hrx_test_all_positive(r->kernel_one_lane_round_ns,
                                              (size_t)r->rounds) &&
                            hrx_test_all_positive(r->kernel_lanes_round_ns,
                                                  (size_t)r->rounds)
                      : r->kernel_one_lane_round_ns == NULL);
  CHECK(r->small_copies_per_round ==
        (uint64_t)c->lanes * (uint64_t)c->small_copies);
  CHECK(r->bulk_copies_per_round ==
        (uint64_t)c->lanes * (uint64_t)c->bulk_copies);
  CHECK(r->bulk_bytes_per_round == r->bulk_copies_per_round * c->bulk_bytes);
}

/* One device lifetime: set the pool size, run, check the result and what the
 * run left in the pool. */
static void hrx_test_run_lifetime(int queue_count,
                                  const hrx_bench_config_t* config) {
  hrx_device_t* device = hrx_test_open(queue_count);
  if (!device) return;
  hrx_bench_result_t* result = NULL;
  CHECK_OK(hrx_bench_run(device, config, &result));
  if (result) {
    hrx_test_check_result(result, config, queue_count);
    hrx_bench_result_free(result);
  }
  hrx_pool_info_t pool;
  hrx_device_query_pool(device, &pool);
  CHECK(pool.live_streams == 0);
  CHECK(pool.fabric_queues == 0);
  if (config->driver == HRX_BENCH_DRIVER_RAW) {
    /* Raw bypasses the pool entirely: no first use, no queues. */
    CHECK(!pool.first_use);
    CHECK(pool.queues_created == 0);
  } else {
    bool probes = config->loaded_probes || config->contention;
    CHECK(pool.first_use);
    /* Plus the high lane's queue of the high-priority probe; the reserved
     * probe queues went with their streams. */
    CHECK(pool.queues_created ==
          hrx_test_min(queue_count,
                       config->retained_streams + 2 * config->lanes) +
              (probes ? 1 : 0));
    hrx_pool_stats_t stats;
    CHECK_OK(hrx_device_query_pool_stats(device, NULL, 0, &stats));
    CHECK(stats.reserved_live == 0);
    CHECK(stats.reserved_created == (probes ? 2u : 0u));
  }
  hrx_device_release(device);
}

static void test_native_queue_counts(void) {
  hrx_bench_config_t c = hrx_test_tiny_config(HRX_BENCH_DRIVER_NATIVE);
  hrx_test_run_lifetime(1, &c);
  hrx_test_run_lifetime(4, &c);
}

/* The contention cases make the probes themselves when the loaded probes
 * do not run, and leave no array when they are off. */
static void test_contention_switch(void) {
  for (int d = 0; d < 2; ++d) {
    hrx_bench_config_t c = hrx_test_tiny_config(
        d ? HRX_BENCH_DRIVER_RAW : HRX_BENCH_DRIVER_NATIVE);
    c.loaded_probes = false;
    hrx_test_run_lifetime(2, &c);
    c.contention = false;
    hrx_test_run_lifetime(2, &c);
  }
}

static void test_raw_queue_counts(void) {
  hrx_bench_config_t c = hrx_test_tiny_config(HRX_BENCH_DRIVER_RAW);
  hrx_test_run_lifetime(1, &c);
  hrx_test_run_lifetime(4, &c);
}

/* More slots than retained streams: the lanes' streams create the remaining
 * queues lazily, outside the timed creation. */
static void test_lazy_queues_beyond_retained(void) {
  for (int d = 0; d < 2; ++d) {
    hrx_bench_config_t c = hrx_test_tiny_config(
        d ? HRX_BENCH_DRIVER_RAW : HRX_BENCH_DRIVER_NATIVE);
    c.retained_streams = 2;
    c.lanes = 3;
    hrx_test_run_lifetime(16, &c);  /* uses 2 + 6 = 8 queues */
  }
}

/* Copies shorter than the 64-byte check prefix, and odd sizes. */
static void test_small_sizes(void) {
  for (int d = 0; d < 2; ++d) {
    hrx_bench_config_t c = hrx_test_tiny_config(
        d ? HRX_BENCH_DRIVER_RAW : HRX_BENCH_DRIVER_NATIVE);
    c.small_bytes = 1;
    c.bulk_bytes = 4099;
    c.lanes = 1;
    c.retained_streams = 1;
    hrx_test_run_lifetime(2, &c);
  }
}

/* Both drivers one after another on one device lifetime, native first, then
 * native again (the pool cursor continues, so it reuses the queues). */
static void test_repeated_runs_share_device(void) {
  hrx_device_t* device = hrx_test_open(4);
  if (!device) return;
  hrx_bench_config_t native = hrx_test_tiny_config(HRX_BENCH_DRIVER_NATIVE);
  hrx_bench_config_t raw = hrx_test_tiny_config(HRX_BENCH_DRIVER_RAW);
  const hrx_bench_config_t* order[] = {&native, &raw, &native};
  for (int i = 0; i < 3; ++i) {
    hrx_bench_result_t* result = NULL;
    CHECK_OK(hrx_bench_run(device, order[i], &result));
    if (result) {
      hrx_test_check_result(result, order[i], 4);
      hrx_bench_result_free(result);
    }
  }
  hrx_pool_info_t pool;
  hrx_device_query_pool(device, &pool);
  /* + one high-lane queue per native run: the probes round-robin too. */
  CHECK(pool.queues_created == 4 + 2);
  CHECK(pool.live_streams == 0);
  hrx_device_release(device);
}

static void test_invalid_arguments(void) {
  hrx_device_t* device = hrx_test_open(2);
  if (!device) return;
  hrx_bench_config_t good = hrx_test_tiny_config(HRX_BENCH_DRIVER_NATIVE);
  hrx_bench_result_t* sentinel = (hrx_bench_result_t*)&good;
  hrx_bench_result_t* result = sentinel;

  CHECK_CODE(hrx_bench_run(NULL, &good, &result),
             HRX_STATUS_INVALID_ARGUMENT);
  CHECK_CODE(hrx_bench_run(device, NULL, &result),
             HRX_STATUS_INVALID_ARGUMENT);
  CHECK_CODE(hrx_bench_run(device, &good, NULL), HRX_STATUS_INVALID_ARGUMENT);

  struct {
    const char* what;
    hrx_bench_config_t config;
  } bad[32];
  int n = 0;
#define HRX_TEST_BAD(field, value)        \
  do {                                    \
    bad[n].what = #field " = " #value;    \
    bad[n].config = good;                 \
    bad[n].config.field = (value);        \
    ++n;                                  \
  } while (0)
  HRX_TEST_BAD(driver, (hrx_bench_driver_t)7);
  HRX_TEST_BAD(lanes, 0);
  HRX_TEST_BAD(lanes, HRX_BENCH_MAX_LANES + 1);
  HRX_TEST_BAD(retained_streams, 0);
  HRX_TEST_BAD(retained_streams, -3);
  HRX_TEST_BAD(small_bytes, 0);
  HRX_TEST_BAD(small_copies, 0);
  HRX_TEST_BAD(bulk_bytes, 0);
  HRX_TEST_BAD(bulk_bytes, HRX_BENCH_MAX_BYTES + 1);
  HRX_TEST_BAD(bulk_copies, 0);
  HRX_TEST_BAD(loaded_copies, 0);
  HRX_TEST_BAD(warmup, 0);
  HRX_TEST_BAD(samples, 0);
  HRX_TEST_BAD(samples, HRX_BENCH_MAX_ROUNDS + 1);
  HRX_TEST_BAD(kernel_spin_ns, 0);
  HRX_TEST_BAD(kernel_spin_ns, HRX_BENCH_MAX_SPIN_NS + 1);
  HRX_TEST_BAD(kernel_launches, 0);
  HRX_TEST_BAD(backlog_blocks, 0);
  HRX_TEST_BAD(backlog_blocks, HRX_BENCH_MAX_BLOCKS + 1);
  HRX_TEST_BAD(backlog_kernels, 0);
  HRX_TEST_BAD(transfer_bytes, 0);
  HRX_TEST_BAD(transfer_copies, 0);
  HRX_TEST_BAD(compute_samples, 0);
  HRX_TEST_BAD(transfer_samples, 0);
#undef HRX_TEST_BAD
  for (int i = 0; i < n; ++i) {
    hrx_status_t status = hrx_bench_run(device, &bad[i].config, &result);
    if (hrx_status_code(status) != HRX_STATUS_INVALID_ARGUMENT) {
      fprintf(stderr, "  %s: expected INVALID_ARGUMENT, got %s\n",
              bad[i].what, hrx_status_code_name(hrx_status_code(status)));
      ++hrx_test_failures;
    }
    hrx_status_free(status);
  }
  /* Out is unchanged on failure, and a rejected config touches no pool. */
  CHECK(result == sentinel);
  hrx_pool_info_t pool;
  hrx_device_query_pool(device, &pool);
  CHECK(!pool.first_use);
  CHECK(pool.queues_created == 0);
  hrx_device_release(device);
}

/* Opens the host device with one environment knob of the host backend set
 * (read when the live device is created). */
static hrx_device_t* hrx_test_open_with(const char* name, const char* value,
                                        int queue_count) {
  setenv(name, value, 1);
  hrx_device_t* device = hrx_test_open(queue_count);
  unsetenv(name);
  return device;
}

/* After a failed run the pool has no live stream and the device still runs
 * the benchmark. */
static void hrx_test_check_recovered(hrx_device_t* device) {
  hrx_pool_info_t pool;
  hrx_device_query_pool(device, &pool);
  CHECK(pool.live_streams == 0);
  CHECK(pool.fabric_queues == 0);
  hrx_bench_config_t c = hrx_test_tiny_config(HRX_BENCH_DRIVER_NATIVE);
  c.retained_streams = 1;
  c.lanes = 1;
  c.loaded_probes = false; /* three queues: all the device allows */
  c.contention = false;
  hrx_bench_result_t* result = NULL;
  CHECK_OK(hrx_bench_run(device, &c, &result));
  hrx_bench_result_free(result);
}

/* A probe's queue is refused (the high lane's, then a reserved one): the run
 * fails cleanly, reserved queues are gone, nothing is counted live. */
static void test_probe_refusal_cleans_up(void) {
  const char* limits[] = {"3", "4"};
  for (int i = 0; i < 2; ++i) {
    hrx_device_t* device =
        hrx_test_open_with("HRX_HOST_MAX_QUEUES", limits[i], 8);
    if (!device) return;
    hrx_bench_config_t c = hrx_test_tiny_config(HRX_BENCH_DRIVER_NATIVE);
    c.retained_streams = 1;
    c.lanes = 1;
    hrx_bench_result_t* result = NULL;
    CHECK_CODE(hrx_bench_run(device, &c, &result),
               HRX_STATUS_RESOURCE_EXHAUSTED);
    CHECK(result == NULL);
    hrx_pool_info_t pool;
    hrx_device_query_pool(device, &pool);
    CHECK(pool.live_streams == 0);
    hrx_pool_stats_t stats;
    CHECK_OK(hrx_device_query_pool_stats(device, NULL, 0, &stats));
    CHECK(stats.reserved_live == 0 && stats.reserved_refused == (unsigned)i);
    hrx_device_release(device);
  }
}

/* The runtime refuses a queue in the middle of setup (after the timed
 * retained streams, while the lanes' streams are created): the run returns
 * the refusal and leaves nothing behind. Under ASan this also checks that the
 * partial setup is freed. */
static void test_queue_refusal_cleans_up(void) {
  for (int d = 0; d < 2; ++d) {
    hrx_device_t* device = hrx_test_open_with("HRX_HOST_MAX_QUEUES", "3", 8);
    if (!device) return;
    hrx_bench_config_t c = hrx_test_tiny_config(
        d ? HRX_BENCH_DRIVER_RAW : HRX_BENCH_DRIVER_NATIVE);
    c.retained_streams = 2;
    c.lanes = 2; /* 6 streams on 6 of 8 slots; the 4th queue is refused */
    hrx_bench_result_t* result = NULL;
    CHECK_CODE(hrx_bench_run(device, &c, &result),
               HRX_STATUS_RESOURCE_EXHAUSTED);
    CHECK(result == NULL);
    hrx_pool_info_t pool;
    hrx_device_query_pool(device, &pool);
    CHECK(pool.live_streams == 0);
    CHECK(pool.queues_created == (d ? 0 : 3));
    /* Raw destroyed its 3 queues, so a native run on the same device can
     * create its 3 (the native pool's queues stay: no retry there). */
    if (d) hrx_test_check_recovered(device);
    hrx_device_release(device);
  }
}

static uint64_t hrx_test_meminfo_bytes(const char* key) {
  FILE* file = fopen("/proc/meminfo", "r");
  if (!file) return 0;
  char line[256];
  uint64_t kib = 0;
  size_t n = strlen(key);
  while (fgets(line, sizeof(line), file)) {
    if (strncmp(line, key, n) == 0 && line[n] == ':') {
      kib = strtoull(line + n + 1, NULL, 10);
      break;
    }
  }
  fclose(file);
  return kib * 1024;
}

/* An allocation the device cannot make, after the first small lane's buffers
 * were allocated: OUT_OF_MEMORY, nothing left behind. Only where the kernel
 * refuses such an allocation up front (overcommit heuristic or strict), so
 * the test never touches more memory than exists. */
static void test_allocation_failure_cleans_up(void) {
  FILE* file = fopen("/proc/sys/vm/overcommit_memory", "r");
  int mode = -1;
  if (file) {
    if (fscanf(file, "%d", &mode) != 1) mode = -1;
    fclose(file);
  }
  uint64_t memory =
      hrx_test_meminfo_bytes("MemTotal") + hrx_test_meminfo_bytes("SwapTotal");
  if ((mode != 0 && mode != 2) || memory == 0 ||
      memory >= HRX_BENCH_MAX_BYTES / 2) {
    fprintf(stderr, "  (skipped: the kernel may overcommit a %llu-byte "
                    "allocation)\n",
            (unsigned long long)HRX_BENCH_MAX_BYTES);
    return;
  }
  hrx_device_t* device = hrx_test_open(4);
  if (!device) return;
  for (int d = 0; d < 2; ++d) {
    hrx_bench_config_t c = hrx_test_tiny_config(
        d ? HRX_BENCH_DRIVER_RAW : HRX_BENCH_DRIVER_NATIVE);
    c.bulk_bytes = HRX_BENCH_MAX_BYTES;
    hrx_bench_result_t* result = NULL;
    CHECK_CODE(hrx_bench_run(device, &c, &result), HRX_STATUS_OUT_OF_MEMORY);
    CHECK(result == NULL);
  }
  hrx_test_check_recovered(device);
  hrx_device_release(device);
}

/* A two-slot ring: producers (including the threaded case's workers) keep
 * waiting for space in the native queue. */
static void test_tiny_ring(void) {
  for (int d = 0; d < 2; ++d) {
    hrx_bench_config_t c = hrx_test_tiny_config(
        d ? HRX_BENCH_DRIVER_RAW : HRX_BENCH_DRIVER_NATIVE);
    hrx_device_t* device =
        hrx_test_open_with("HRX_HOST_RING_CAPACITY", "2", 2);
    if (!device) return;
    hrx_bench_result_t* result = NULL;
    CHECK_OK(hrx_bench_run(device, &c, &result));
    if (result) {
      hrx_test_check_result(result, &c, 2);
      hrx_bench_result_free(result);
    }
    hrx_device_release(device);
  }
}

static void test_config_and_driver_names(void) {
  hrx_bench_config_t c;
  hrx_bench_config_default(&c);
  CHECK(c.driver == HRX_BENCH_DRIVER_NATIVE);
  CHECK(c.lanes == 16 && c.retained_streams == 16);
  CHECK(c.small_bytes == 4096 && c.small_copies == 1024);
  CHECK(c.bulk_bytes == 32u << 20 && c.bulk_copies == 16);
  CHECK(c.loaded_copies == 4 && c.warmup == 3 && c.samples == 15);
  CHECK(c.loaded_probes);
  CHECK(strcmp(hrx_bench_probe_name(HRX_BENCH_PROBE_HIGH), "high") == 0);
  CHECK(strcmp(hrx_bench_probe_name(HRX_BENCH_PROBE_RESERVED), "reserved") ==
        0);
  CHECK(strcmp(hrx_bench_probe_name(HRX_BENCH_PROBE_RESERVED_HIGH),
               "reserved_high") == 0);
  CHECK(hrx_bench_probe_name(HRX_BENCH_PROBE_COUNT) == NULL);

  hrx_bench_driver_t driver = HRX_BENCH_DRIVER_RAW;
  CHECK(hrx_bench_driver_parse("native", &driver) &&
        driver == HRX_BENCH_DRIVER_NATIVE);
  CHECK(hrx_bench_driver_parse("raw", &driver) &&
        driver == HRX_BENCH_DRIVER_RAW);
  CHECK(!hrx_bench_driver_parse("python", &driver) &&
        driver == HRX_BENCH_DRIVER_RAW);
  CHECK(!hrx_bench_driver_parse(NULL, &driver));
  CHECK(strcmp(hrx_bench_driver_name(HRX_BENCH_DRIVER_NATIVE), "native") == 0);
  CHECK(strcmp(hrx_bench_driver_name(HRX_BENCH_DRIVER_RAW), "raw") == 0);
  CHECK(hrx_bench_driver_name((hrx_bench_driver_t)9) == NULL);
  hrx_bench_result_free(NULL);
}

/* A hang (a lost wake-up in a queue, a stuck barrier) must fail the run,
 * not stall CI: each test gets HRX_TEST_TIMEOUT_S seconds. */
enum { HRX_TEST_TIMEOUT_S = 120 };
static const char* volatile hrx_test_current = "";
static volatile sig_atomic_t hrx_test_passed;
static volatile sig_atomic_t hrx_test_failed;

/* Async-signal-safe: write(2) of preformatted pieces only. */
static void hrx_test_write_int(int value) {
  char digits[16];
  int n = 0;
  do {
    digits[sizeof(digits) - 1 - n++] = (char)('0' + value % 10);
    value /= 10;
  } while (value > 0 && n < (int)sizeof(digits));
  ssize_t ignored = write(STDOUT_FILENO, digits + sizeof(digits) - n,
                          (size_t)n);
  (void)ignored;
}

static void hrx_test_write(const char* text) {
  size_t n = 0;
  while (text[n]) ++n;
  ssize_t ignored = write(STDOUT_FILENO, text, n);
  (void)ignored;
}

static void hrx_test_on_timeout(int signal_number) {
  (void)signal_number;
  hrx_test_write("FAIL ");
  hrx_test_write(hrx_test_current);
  hrx_test_write(" (timed out: hang)\n");
  hrx_test_write_int(hrx_test_passed);
  hrx_test_write(" passed, ");
  hrx_test_write_int(hrx_test_failed + 1);
  hrx_test_write(" failed\n");
  _exit(3);
}

typedef struct hrx_test_case_s {
  const char* name;
  void (*run)(void);
} hrx_test_case_t;

/* With arguments, runs only the tests whose names contain one of them. */
static bool hrx_test_selected(const char* name, int argc, char** argv) {
  if (argc < 2) return true;
  for (int i = 1; i < argc; ++i) {
    if (strstr(name, argv[i])) return true;
  }
  return false;
}

int main(int argc, char** argv) {
  static const hrx_test_case_t cases[] = {
      {"config_and_driver_names", test_config_and_driver_names},
      {"invalid_arguments", test_invalid_arguments},
      {"native_queue_counts", test_native_queue_counts},
      {"raw_queue_counts", test_raw_queue_counts},
      {"contention_switch", test_contention_switch},
      {"lazy_queues_beyond_retained", test_lazy_queues_beyond_retained},
      {"small_sizes", test_small_sizes},
      {"repeated_runs_share_device", test_repeated_runs_share_device},
      {"tiny_ring", test_tiny_ring},
      {"queue_refusal_cleans_up", test_queue_refusal_cleans_up},
      {"probe_refusal_cleans_up", test_probe_refusal_cleans_up},
      {"allocation_failure_cleans_up", test_allocation_failure_cleans_up},
  };
  struct sigaction action;
  memset(&action, 0, sizeof(action));
  action.sa_handler = hrx_test_on_timeout;
  sigemptyset(&action.sa_mask);
  sigaction(SIGALRM, &action, NULL);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    if (!hrx_test_selected(cases[i].name, argc, argv)) continue;
    hrx_test_failures = 0;
    hrx_test_current = cases[i].name;
    alarm(HRX_TEST_TIMEOUT_S);
    cases[i].run();
    alarm(0);
    if (hrx_test_failures) {
      printf("FAIL %s\n", cases[i].name);
      ++hrx_test_failed;
    } else {
      printf("ok   %s\n", cases[i].name);
      ++hrx_test_passed;
    }
    fflush(stdout);
  }
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
