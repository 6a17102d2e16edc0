/* The host backend's engines, through the backend interface: the engine
 * count and its environment, strict lane precedence, turns within a lane,
 * event waits that do not hold an engine and host functions that block
 * their engine without stalling other queues. Scenarios that would hang
 * without the rule they check wait with a deadline instead, so they fail.
 * Also run under ASan+UBSan and TSan. */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "drivers/host/host_driver.h"
#include "check.h"

/* The core's settings a driver is opened with here. */
static const hrx_hal_device_settings_t hrx_test_settings = {.batching = true};

/* Long enough to keep one engine busy while the test lists other work. */
#ifdef __SANITIZE_THREAD__
enum { BIG = 16 << 20, BACKLOG = 16 };  /* TSan's memcpy is much slower */
#else
enum { BIG = 16 << 20, BACKLOG = 32 };
#endif

static const uint64_t SECOND = 1000000000u;

static hrx_backend_device_t* open_host(const char* engines) {
  if (engines) setenv("HRX_HOST_ENGINES", engines, 1);
  hrx_backend_device_t* device = NULL;
  hrx_status_t status =
      hrx_host_backend.device_open(0, &hrx_test_settings, &device);
  unsetenv("HRX_HOST_ENGINES");
  CHECK_OK(status);
  return device;
}

static hrx_native_queue_t* make_queue(hrx_backend_device_t* device,
                                      int priority, uint32_t flags) {
  hrx_native_queue_t* queue = NULL;
  int native = -1;
  CHECK_OK(
      device->vtable->queue.create(device, priority, flags, &queue, &native));
  return queue;
}

static hrx_native_queue_t* lane_queue(hrx_backend_device_t* device,
                                      int priority) {
  return make_queue(device, priority, 0);
}

static hrx_native_queue_t* reserved_queue(hrx_backend_device_t* device,
                                          int priority) {
  return make_queue(device, priority, HRX_NATIVE_QUEUE_RESERVED);
}

static uint64_t pending(hrx_backend_device_t* device,
                        hrx_native_queue_t* queue) {
  uint64_t count = 0;
  hrx_status_t status = device->vtable->queue.query(device, queue, &count);
  if (status) CHECK_OK(status);
  return count;
}

/* A poller's pause: it sleeps rather than yields, so that it takes no
 * core's time from the engines it watches. */
static void poll_pause(void) {
  struct timespec pause = {0, 50000};
  nanosleep(&pause, NULL);
}

/* Polls (never helps: queue_query only reads) until the queue has at most
 * `most` commands pending or the deadline passes. */
static bool poll_pending_at_most(hrx_backend_device_t* device,
                                 hrx_native_queue_t* queue, uint64_t most,
                                 uint64_t timeout_ns) {
  uint64_t deadline = hrx_now_ns() + timeout_ns;
  while (pending(device, queue) > most) {
    if (hrx_now_ns() >= deadline) return false;
    poll_pause();
  }
  return true;
}

static bool poll_idle(hrx_backend_device_t* device, hrx_native_queue_t* queue,
                      uint64_t timeout_ns) {
  return poll_pending_at_most(device, queue, 0, timeout_ns);
}

static void finish(hrx_backend_device_t* device, hrx_native_queue_t** queues,
                   int count) {
  for (int i = 0; i < count; ++i) {
    device->vtable->queue.destroy(device, queues[i]);
  }
  device->vtable->destroy(device);
}

/* ------------------------------------------------------ count and names */

static void test_engine_count(void) {
  cpu_set_t set;
  CHECK(sched_getaffinity(0, sizeof(set), &set) == 0);
  hrx_backend_device_t* device = open_host(NULL);
  hrx_device_info_t info;
  CHECK_OK(device->vtable->query_info(device, &info));
  CHECK(info.engines == CPU_COUNT(&set));
  CHECK(strstr(info.runtime, "engine") != NULL);
  hrx_connection_budget_t budget;
  device->vtable->plan_connections(device, 28);
  device->vtable->query_connections(device, &budget);
  CHECK(strcmp(budget.variable, "HRX_HOST_ENGINES") == 0);
  CHECK(budget.value == info.engines);
  CHECK(budget.wanted == 28);
  CHECK(strcmp(budget.source, "hrx") == 0);
  device->vtable->destroy(device);

  device = open_host("3");
  CHECK_OK(device->vtable->query_info(device, &info));
  CHECK(info.engines == 3);
  device->vtable->query_connections(device, &budget);
  CHECK(budget.value == 3 && strcmp(budget.source, "user") == 0);
  device->vtable->destroy(device);
}

static void check_refused(const char* name, const char* value,
                          const char* part) {
  setenv(name, value, 1);
  hrx_backend_device_t* device = NULL;
  CHECK_CODE(hrx_host_backend.device_open(0, &hrx_test_settings, &device),
             HRX_STATUS_INVALID_ARGUMENT, part);
  CHECK(device == NULL);
  unsetenv(name);
}

static void test_environment_is_checked(void) {
  check_refused("HRX_HOST_ENGINES", "0", "HRX_HOST_ENGINES must be an integer");
  check_refused("HRX_HOST_ENGINES", "two", "from 1 to 1024, got 'two'");
  check_refused("HRX_HOST_ENGINES", "5000", "HRX_HOST_ENGINES");
  check_refused("HRX_HOST_ENGINE_SPIN_US", "-1", "HRX_HOST_ENGINE_SPIN_US");
  check_refused("HRX_HOST_RING_CAPACITY", "1", "HRX_HOST_RING_CAPACITY");
  check_refused("HRX_HOST_MAX_QUEUES", "x", "HRX_HOST_MAX_QUEUES");
  /* The replaced variable names its replacement. */
  check_refused("HRX_HOST_SPIN_US", "10",
                "HRX_HOST_SPIN_US is no longer read by the host backend; "
                "use HRX_HOST_ENGINE_SPIN_US");
  setenv("HRX_HOST_DEVICE_COUNT", "none", 1);
  int count = 0;
  CHECK_CODE(hrx_host_backend.load(false, &count), HRX_STATUS_INVALID_ARGUMENT,
             "HRX_HOST_DEVICE_COUNT must be an integer from 1 to 64");
  unsetenv("HRX_HOST_DEVICE_COUNT");
}

/* ---------------------------------------------------------- scheduling */

typedef struct {
  hrx_backend_device_t* device;
  void* src;
  void* dst;
  uint8_t* bytes;  /* the observed bytes */
} arena_t;

static void arena_open(arena_t* arena, hrx_backend_device_t* device) {
  arena->device = device;
  CHECK_OK(device->vtable->memory.alloc(device, BIG, &arena->src));
  CHECK_OK(device->vtable->memory.alloc(device, BIG, &arena->dst));
  CHECK_OK(device->vtable->memory.alloc(device, 64, (void**)&arena->bytes));
  memset(arena->bytes, 0, 64);
}

static void arena_close(arena_t* arena) {
  arena->device->vtable->memory.free(arena->device, arena->src);
  arena->device->vtable->memory.free(arena->device, arena->dst);
  arena->device->vtable->memory.free(arena->device, arena->bytes);
}

static void fill(arena_t* arena, hrx_native_queue_t* queue, int at,
                 uint8_t byte) {
  CHECK_OK(arena->device->vtable->queue.fill(arena->device, queue,
                                       arena->bytes + at, byte, 1));
}

/* Occupies the only engine with `copies` big copies on `queue`. */
static void keep_busy(arena_t* arena, hrx_native_queue_t* queue, int copies) {
  for (int i = 0; i < copies; ++i) {
    CHECK_OK(arena->device->vtable->queue.copy(arena->device, queue, arena->dst,
                                         arena->src, BIG));
  }
}

/* One engine, two queues of one lane: a small command listed behind a long
 * backlog of another queue runs after one turn of that queue, not after
 * all of it. */
static void test_turns_within_a_lane(void) {
  hrx_backend_device_t* device = open_host("1");
  hrx_native_queue_t* heavy = lane_queue(device, HRX_STREAM_PRIORITY_NORMAL);
  hrx_native_queue_t* light = lane_queue(device, HRX_STREAM_PRIORITY_NORMAL);
  arena_t arena;
  arena_open(&arena, device);
  keep_busy(&arena, heavy, BACKLOG);
  fill(&arena, light, 0, 1);
  CHECK(poll_idle(device, light, 30 * SECOND));
  CHECK(pending(device, heavy) > 0);
  CHECK(poll_idle(device, heavy, 60 * SECOND));
  hrx_native_queue_t* queues[] = {heavy, light};
  arena_close(&arena);
  finish(device, queues, 2);
}

/* ------------------------------------------------------ reserved queues */

/* Long enough for every idle engine to park (they spin 50 us by default),
 * so that only the rule under test can wake one. */
static void let_engines_park(void) {
  struct timespec pause = {0, 100000000};
  nanosleep(&pause, NULL);
}

/* Two fills in order on `light` complete (the later byte stays) while
 * `heavy` still has backlog; then the backlog is waited for. */
static void check_done_before_backlog(arena_t* arena, hrx_native_queue_t* light,
                                      hrx_native_queue_t* heavy) {
  fill(arena, light, 0, 3);
  fill(arena, light, 0, 4);
  CHECK(poll_idle(arena->device, light, 30 * SECOND));
  CHECK(pending(arena->device, heavy) > 0);
  CHECK(arena->bytes[0] == 4);
  CHECK(poll_idle(arena->device, heavy, 60 * SECOND));
}

/* A reserved queue's commands run while a shared queue's long backlog,
 * listed first, still has work. With two engines, a reserved low queue
 * beside a shared high one: the free engine becomes its own at once (lane
 * precedence does not hold it back, and the shared queue keeps its engine).
 * With one engine, no engine is given: the reserved queue takes turns in
 * its lane with a shared queue of that lane. */
static void test_reserved_queue_beside_backlog(const char* engines,
                                               int heavy_priority,
                                               int reserved_priority) {
  hrx_backend_device_t* device = open_host(engines);
  hrx_native_queue_t* heavy = lane_queue(device, heavy_priority);
  hrx_native_queue_t* reserved = reserved_queue(device, reserved_priority);
  arena_t arena;
  arena_open(&arena, device);
  let_engines_park();
  keep_busy(&arena, heavy, BACKLOG);
  /* Listed once an engine serves the backlog: no engine is woken to
   * spread the listed queues then. */
  CHECK(poll_pending_at_most(device, heavy, BACKLOG - 1, 30 * SECOND));
  check_done_before_backlog(&arena, reserved, heavy);
  hrx_native_queue_t* queues[] = {heavy, reserved};
  arena_close(&arena);
  finish(device, queues, 2);
}

/* As many reserved queues as engines, each with a long backlog: at most
 * count - 1 engines are dedicated, so a shared queue's command still gets
 * a turn before the reserved queues are done. */
static void test_shared_queues_progress_beside_reserved_ones(void) {
  hrx_backend_device_t* device = open_host("2");
  hrx_native_queue_t* first = reserved_queue(device,
                                             HRX_STREAM_PRIORITY_NORMAL);
  hrx_native_queue_t* second = reserved_queue(device,
                                              HRX_STREAM_PRIORITY_NORMAL);
  hrx_native_queue_t* shared = lane_queue(device, HRX_STREAM_PRIORITY_NORMAL);
  arena_t arena, other; /* the reserved queues copy at once */
  arena_open(&arena, device);
  arena_open(&other, device);
  let_engines_park();
  keep_busy(&arena, first, BACKLOG);
  keep_busy(&other, second, BACKLOG);
  fill(&arena, shared, 0, 2);
  CHECK(poll_idle(device, shared, 30 * SECOND));
  CHECK(pending(device, first) > 0 && pending(device, second) > 0);
  CHECK(arena.bytes[0] == 2);
  hrx_native_queue_t* queues[] = {first, second, shared};
  for (int i = 0; i < 3; ++i) CHECK(poll_idle(device, queues[i], 60 * SECOND));
  arena_close(&arena);
  arena_close(&other);
  finish(device, queues, 3);
}

/* ------------------------------------------- waits and host functions */

typedef struct {
  atomic_int released;    /* set by the releasing host function */
  atomic_int saw_release; /* set by the waiting one if it saw it in time */
  atomic_int order;
  int release_order;
} gate_t;

static void release_gate(void* arg) {
  gate_t* gate = arg;
  gate->release_order = atomic_fetch_add(&gate->order, 1);
  atomic_store(&gate->released, 1);
}

/* Blocks its engine until the gate is released, for at most 10 s. */
static void wait_for_gate(void* arg) {
  gate_t* gate = arg;
  uint64_t deadline = hrx_now_ns() + 10 * SECOND;
  while (!atomic_load(&gate->released) && hrx_now_ns() < deadline) {
    struct timespec pause = {0, 100000};
    nanosleep(&pause, NULL);
  }
  atomic_store(&gate->saw_release, atomic_load(&gate->released));
}

/* The parts of a gated scenario: an arena, a closed gate and an event. */
typedef struct {
  arena_t arena;
  gate_t gate;
  hrx_native_event_t* event;
} scene_t;

static void scene_open(scene_t* scene, hrx_backend_device_t* device) {
  memset(scene, 0, sizeof(*scene));
  arena_open(&scene->arena, device);
  CHECK_OK(device->vtable->event.create(device, &scene->event));
}

static void scene_close(scene_t* scene, hrx_backend_device_t* device) {
  device->vtable->event.destroy(device, scene->event);
  arena_close(&scene->arena);
}

/* One engine; queues of the three lanes wait on an event that a host
 * function holds back, so they are all listed at the same moment when it
 * returns: the engine serves high, then normal, then low, although they
 * were submitted the other way round. Each pair of lanes writes one shared
 * byte; the later writer's byte stays. */
static void test_strict_lane_precedence(void) {
  hrx_backend_device_t* device = open_host("1");
  hrx_native_queue_t* gate_queue = lane_queue(device, HRX_STREAM_PRIORITY_LOW);
  hrx_native_queue_t* low = lane_queue(device, HRX_STREAM_PRIORITY_LOW);
  hrx_native_queue_t* normal = lane_queue(device, HRX_STREAM_PRIORITY_NORMAL);
  hrx_native_queue_t* high = lane_queue(device, HRX_STREAM_PRIORITY_HIGH);
  scene_t scene;
  scene_open(&scene, device);
  CHECK_OK(device->vtable->queue.host_call(device, gate_queue, wait_for_gate,
                                           &scene.gate));
  CHECK_OK(device->vtable->event.record(device, gate_queue, scene.event));
  hrx_native_queue_t* lanes[] = {low, normal, high};
  for (int i = 0; i < 3; ++i) {
    CHECK_OK(device->vtable->queue.wait_event(device, lanes[i], scene.event));
  }
  enum { HIGH_NORMAL = 0, NORMAL_LOW = 1, HIGH_LOW = 2 };
  fill(&scene.arena, low, NORMAL_LOW, 'l');
  fill(&scene.arena, low, HIGH_LOW, 'l');
  fill(&scene.arena, normal, HIGH_NORMAL, 'n');
  fill(&scene.arena, normal, NORMAL_LOW, 'n');
  fill(&scene.arena, high, HIGH_NORMAL, 'h');
  fill(&scene.arena, high, HIGH_LOW, 'h');
  /* Time for the engine to meet each queue's wait and set it aside. */
  struct timespec settle = {0, 200000000};
  nanosleep(&settle, NULL);
  CHECK(pending(device, high) == 3);
  atomic_store(&scene.gate.released, 1);
  hrx_native_queue_t* queues[] = {gate_queue, low, normal, high};
  for (int i = 0; i < 4; ++i) CHECK(poll_idle(device, queues[i], 30 * SECOND));
  CHECK(atomic_load(&scene.gate.saw_release));
  CHECK(scene.arena.bytes[HIGH_NORMAL] == 'n');
  CHECK(scene.arena.bytes[NORMAL_LOW] == 'l');
  CHECK(scene.arena.bytes[HIGH_LOW] == 'l');
  scene_close(&scene, device);
  finish(device, queues, 4);
}

static void check_done(hrx_backend_device_t* device,
                       hrx_native_queue_t* queue) {
  bool done = false;
  CHECK_OK(device->vtable->queue.wait(device, queue, 30 * SECOND, &done));
  CHECK(done);
}

/* Host functions that block their engine until a host function of another
 * queue has run: with `engines` engines and `pairs` such pairs, every
 * blocked one is released (another thread takes the engine's place). */
static void test_blocking_host_functions(const char* engines, int pairs) {
  hrx_backend_device_t* device = open_host(engines);
  enum { MAX_PAIRS = 4 };
  hrx_native_queue_t* queues[2 * MAX_PAIRS];
  gate_t gates[MAX_PAIRS];
  memset(gates, 0, sizeof(gates));
  for (int i = 0; i < 2 * pairs; ++i) {
    queues[i] = lane_queue(device, HRX_STREAM_PRIORITY_NORMAL);
  }
  for (int p = 0; p < pairs; ++p) {
    CHECK_OK(device->vtable->queue.host_call(device, queues[2 * p],
                                             wait_for_gate, &gates[p]));
  }
  for (int p = 0; p < pairs; ++p) {
    CHECK_OK(device->vtable->queue.host_call(
        device, queues[2 * p + 1], release_gate, &gates[p]));
  }
  for (int i = 0; i < 2 * pairs; ++i) check_done(device, queues[i]);
  for (int p = 0; p < pairs; ++p) CHECK(atomic_load(&gates[p].saw_release));
  finish(device, queues, 2 * pairs);
}

/* A more urgent queue whose event wait names a host function of another
 * queue: with one engine, the wait must not hold the engine, or the host
 * function it waits for never runs. The engine is kept busy while the work
 * is listed, so that it meets the wait first. */
static void test_event_wait_does_not_hold_an_engine(void) {
  hrx_backend_device_t* device = open_host("1");
  hrx_native_queue_t* busy = lane_queue(device, HRX_STREAM_PRIORITY_LOW);
  hrx_native_queue_t* source = lane_queue(device, HRX_STREAM_PRIORITY_NORMAL);
  hrx_native_queue_t* waiter = lane_queue(device, HRX_STREAM_PRIORITY_HIGH);
  scene_t scene;
  scene_open(&scene, device);
  keep_busy(&scene.arena, busy, 1);
  CHECK_OK(device->vtable->queue.host_call(device, source, release_gate,
                                           &scene.gate));
  CHECK_OK(device->vtable->event.record(device, source, scene.event));
  CHECK_OK(device->vtable->queue.wait_event(device, waiter, scene.event));
  fill(&scene.arena, waiter, 0, 7);
  CHECK(poll_idle(device, waiter, 30 * SECOND));
  CHECK(atomic_load(&scene.gate.released));
  CHECK(scene.arena.bytes[0] == 7);
  hrx_native_queue_t* queues[] = {busy, source, waiter};
  for (int i = 0; i < 3; ++i) check_done(device, queues[i]);
  scene_close(&scene, device);
  finish(device, queues, 3);
}

/* A waiter's chain: queue B waits on an event of A, C on one of B; only a
 * final host function (engines only) releases it all. */
static void test_chained_event_waits(void) {
  hrx_backend_device_t* device = open_host("1");
  hrx_native_queue_t* queues[3];
  hrx_native_event_t* events[2];
  gate_t gate;
  memset(&gate, 0, sizeof(gate));
  for (int i = 0; i < 3; ++i) {
    queues[i] = lane_queue(device, HRX_STREAM_PRIORITY_HIGH - i);
  }
  for (int i = 0; i < 2; ++i) {
    CHECK_OK(device->vtable->event.create(device, &events[i]));
  }
  /* The low queue runs last by precedence and is the chain's root. */
  CHECK_OK(device->vtable->queue.host_call(device, queues[2], release_gate,
                                           &gate));
  CHECK_OK(device->vtable->event.record(device, queues[2], events[0]));
  CHECK_OK(device->vtable->queue.wait_event(device, queues[1], events[0]));
  CHECK_OK(device->vtable->queue.host_call(device, queues[1], release_gate,
                                           &gate));
  CHECK_OK(device->vtable->event.record(device, queues[1], events[1]));
  CHECK_OK(device->vtable->queue.wait_event(device, queues[0], events[1]));
  CHECK_OK(device->vtable->queue.host_call(device, queues[0], release_gate,
                                           &gate));
  for (int i = 0; i < 3; ++i) CHECK(poll_idle(device, queues[i], 30 * SECOND));
  CHECK(atomic_load(&gate.order) == 3);
  for (int i = 0; i < 2; ++i) device->vtable->event.destroy(device, events[i]);
  finish(device, queues, 3);
}

int main(void) {
  test_engine_count();
  test_environment_is_checked();
  test_strict_lane_precedence();
  test_turns_within_a_lane();
  test_reserved_queue_beside_backlog("2", HRX_STREAM_PRIORITY_HIGH,
                                     HRX_STREAM_PRIORITY_LOW);
  test_reserved_queue_beside_backlog("2", HRX_STREAM_PRIORITY_NORMAL,
                                     HRX_STREAM_PRIORITY_HIGH);
  test_reserved_queue_beside_backlog("1", HRX_STREAM_PRIORITY_NORMAL,
                                     HRX_STREAM_PRIORITY_NORMAL);
  test_shared_queues_progress_beside_reserved_ones();
  test_blocking_host_functions("1", 1);
  test_blocking_host_functions("1", 4);
  test_blocking_host_functions("2", 4);
  test_event_wait_does_not_hold_an_engine();
  test_chained_event_waits();
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
