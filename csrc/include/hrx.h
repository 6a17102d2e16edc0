/* hrx: a GPU stream runtime whose logical streams share a pool of native
 * queues. This is the only public header of the C core.
 *
 * Conventions (every function below follows them):
 * - Fallible calls return hrx_status_t: NULL means success; otherwise the
 *   caller owns the status and must hrx_status_free() it.
 * - out_* parameters are written only on success ("out is unchanged on
 *   failure").
 * - Heap objects are reference counted: create and open calls return a retained
 *   object, retain adds a reference, release drops one; release(NULL) is a
 *   no-op.
 * - Every object of a device retains its device, so the live device stays
 *   alive while any stream, buffer, event or fabric queue of it is alive.
 * - Thread safety: every function may be called from any thread, unless its
 *   comment says otherwise. Blocking calls are marked "blocks".
 * - Bad arguments are rejected before any work is submitted.
 * - Host callbacks (hrx_host_fn_t) run on a thread that serves a native
 *   queue: there, every call that may block (submit, allocate, read, wait,
 *   synchronize, create a stream, open a device) fails with
 *   FAILED_PRECONDITION, and releases are deferred to the device's cleanup
 *   thread, the one thread that runs them: no other call runs or waits
 *   for a deferred release (hrx_device_synchronize and a release that
 *   would otherwise leave them the device's last references excepted), so
 *   a caller holding a lock that a callback may need (Python's GIL) never
 *   waits for a callback through them. Calls the core answers alone
 *   (building a graph) are
 *   allowed; queries that ask the runtime (an event's, a stream's or a
 *   read's state, elapsed time, free memory, pool statistics) are allowed
 *   on the host backend only:
 *   the CUDA and HIP runtimes forbid runtime calls inside host functions
 *   (cudaLaunchHostFunc, hipLaunchHostFunc), so on hip they fail with
 *   FAILED_PRECONDITION inside a callback.
 *
 * Failures (the same with submission batching on and off):
 * - A command (copy, fill, upload, event wait, kernel launch) that the
 *   device refuses marks its stream failed; its call still returns
 *   success, because with batching its failure may only show once the
 *   call has returned.
 * - Later commands on a failed stream are not run; each is counted.
 * - The failure is raised by the stream's next observation point
 *   (synchronize, record_event, read, read_blocking, flush, graph launch)
 *   and by hrx_device_synchronize, with the failed command's number and
 *   description and how many later commands were not run. Once raised,
 *   the stream is usable again. A failure of the observation point itself
 *   (e.g. the read's own download) is returned at once.
 * - Releasing a stream whose failure was never raised reports it
 *   (hrx_stream_release_checked hands it to the caller; hrx_stream_release
 *   writes it to stderr): a failure is never silent.
 */
#ifndef HRX_H_
#define HRX_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ status */

typedef enum hrx_status_code_e {
  HRX_STATUS_OK = 0,
  HRX_STATUS_INVALID_ARGUMENT = 1,
  HRX_STATUS_BUSY = 2,
  HRX_STATUS_OUT_OF_MEMORY = 3,
  HRX_STATUS_UNAVAILABLE = 4,
  HRX_STATUS_RESOURCE_EXHAUSTED = 5,
  HRX_STATUS_OUT_OF_RANGE = 6,
  HRX_STATUS_FAILED_PRECONDITION = 7,
  HRX_STATUS_DEVICE_ERROR = 8,
  /* Only in non-blocking mode (hrx_thread_set_nonblocking): the call would
   * have had to wait, and did nothing. */
  HRX_STATUS_WOULD_BLOCK = 9,
} hrx_status_code_t;

typedef struct hrx_status_s* hrx_status_t;

hrx_status_code_t hrx_status_code(hrx_status_t status);
/* Borrowed; valid until the status is freed. "" for NULL. */
const char* hrx_status_message(hrx_status_t status);
const char* hrx_status_code_name(hrx_status_code_t code);
void hrx_status_free(hrx_status_t status);
/* For a WOULD_BLOCK (hrx_thread_set_nonblocking): whether what the call
 * would have waited for is normally over within microseconds (another
 * thread holds a lock for one publication), so that repeating the call in
 * non-blocking mode a few times is likely to succeed. False for waits for
 * queued work, queue space, memory, completions and host callbacks, and
 * for any other status. */
bool hrx_status_would_block_briefly(hrx_status_t status);
/* A status of `code` with a copy of `message` (NULL for HRX_STATUS_OK), for
 * callbacks that report failures to hrx (see hrx_host_fn_t). */
hrx_status_t hrx_status_create(hrx_status_code_t code, const char* message);

/* ------------------------------------------------------------------ waits */

/* Every blocking wait (hrx_device_synchronize, hrx_stream_synchronize,
 * hrx_event_synchronize, hrx_readback_wait, hrx_stream_read_blocking) takes
 * a hook through which its caller can abandon it (the bindings raise
 * KeyboardInterrupt this way). With a hook, the wait waits in slices of
 * slice_ns and calls interrupted(user_data) between slices, from the
 * waiting thread; when that returns true the wait returns at once with
 * *out_interrupted set and no error. Nothing is cancelled: the work still
 * runs to completion and the objects it uses stay alive until it has. A
 * NULL hook waits to the end without slices; out_interrupted may be NULL
 * (it is then not written). */
typedef struct hrx_wait_hook_s {
  uint64_t slice_ns;
  bool (*interrupted)(void* user_data);
  void* user_data;
} hrx_wait_hook_t;

/* ------------------------------------------------------------------ backends */

/* Names of the compiled-in backends, in automatic-selection order
 * ("hip", "host"). Returns the count; names are static strings. */
int hrx_backend_names(const char* const** out_names);

/* Loads the backend (once per process) and reports whether it can open a
 * device: NULL when it can; otherwise a status whose message is the
 * loader's or the runtime's own reason, whole. */
hrx_status_t hrx_backend_probe(const char* name);

/* ------------------------------------------------------------------ device */

typedef struct hrx_device_s hrx_device_t;

/* Opens the live device (backend, index). backend NULL selects:
 * $HRX_BACKEND if set, else the first backend whose probe succeeds.
 * Handles of the same (backend, index) share one live device while any
 * object of it is alive; once the last is released it is torn down and the
 * next open starts fresh (pool size back to the default). */
hrx_status_t hrx_device_open(const char* backend, int index,
                             hrx_device_t** out_device);
void hrx_device_retain(hrx_device_t* device);
/* May block: the last release tears the device down (waits for its
 * queues), and a release that would leave only references held by
 * releases deferred from host callbacks first waits for the device's
 * cleanup thread to run them, so that the device is gone when the last
 * handle's release returns. Like every release that may free memory, call
 * it where waiting is allowed (not while holding a lock a host callback
 * may need). */
void hrx_device_release(hrx_device_t* device);

typedef struct hrx_device_info_s {
  char backend[16];     /* "hip", "host" */
  int index;
  char name[256];       /* "NVIDIA H200", "host (8 logical CPUs)" */
  char target[64];      /* "sm_90", "gfx1151", "host-x86_64" */
  char runtime[128];    /* runtime library and version */
  uint64_t total_memory;
  int max_native_queues;  /* 0 when the runtime states no limit */
  /* How the backend was chosen when the live device was created: "backend
   * argument", "HRX_BACKEND", or "automatic" followed by why each earlier
   * backend was passed over (so a fallback to host is never silent). */
  char selection[2048];
  /* How a batch of small commands reaches the device (see
   * hrx_device_set_batching): "one ring slot per batch" (host), "PTX from
   * libnvrtc.so.13 for compute_90" (hip), or why there is no batch kernel
   * and each command is its own native call. */
  char batch_publication[384];
  /* How kernel launches reach the device: gathered like small copies and
   * published as batches ("... a batch is one launch of a native graph of
   * 2 to 160 kernel nodes ...", hip on NVIDIA; "... a batch goes onto the
   * queue's ring in one call ...", host), or one native launch each and
   * why (HRX_BATCH_LAUNCHES, the platform's default, no kernels). */
  char launch_publication[256];
  /* Where buffer memory lives: "nvidia" (CUDA device memory), "amd" (ROCm
   * device memory) or "cpu" (host memory, the host backend). */
  char platform[16];
  /* Host backend: the engine threads that serve the device's queues (the
   * host's hardware connections, HRX_HOST_ENGINES). 0 where the device's
   * own hardware serves the queues. */
  int engines;
  /* Devices the backend has (valid indices: 0 .. device_count - 1); each
   * other device's copy path: hrx_device_query_peer_path. */
  int device_count;
  /* Kernel launch limits, read from the device (all zero on a backend that
   * runs no kernels): threads in one block, a block's and a grid's extent
   * along x, y and z, and the most shared memory one block may use
   * (static and dynamic together, where a kernel opts in to the most). */
  uint32_t max_threads_per_block;
  uint32_t max_block_dim[3];
  uint32_t max_grid_dim[3];
  uint64_t max_shared_bytes_per_block;
} hrx_device_info_t;

hrx_status_t hrx_device_query_info(hrx_device_t* device,
                                   hrx_device_info_t* out_info);
/* The driver's device under a live device (borrowed; lives as long as the
 * device), for code built against the backend interface (csrc/hal/device.h)
 * beside the runtime: the benchmark's raw baseline drives the device's
 * native queues through it, past the stream layer. Never NULL for an open
 * device. */
struct hrx_backend_device_s* hrx_device_backend(hrx_device_t* device);
hrx_status_t hrx_device_query_free_memory(hrx_device_t* device,
                                          uint64_t* out_free_bytes);
/* Blocks until all work submitted so far to the device's pool queues is
 * done (fabric queues are synchronized through their own stream). Raises
 * the failures of the device's streams that no observation raised yet
 * (the first one's status, naming the others), which makes those streams
 * usable again. Also waits for the releases deferred from host callbacks
 * so far (their memory is free when it returns). Takes a wait hook (see
 * "waits" above). */
hrx_status_t hrx_device_synchronize(hrx_device_t* device,
                                    const hrx_wait_hook_t* hook,
                                    bool* out_interrupted);

/* Pinned host memory (docs/host-memory.md): host memory the device copies
 * to and from directly and asynchronously. hrx_stream_upload,
 * hrx_stream_read_into and hrx_stream_read_blocking copy host memory that
 * lies wholly inside one pinned range of the stream's device with the
 * native asynchronous copy and no staging; other host memory is staged.
 *
 * hrx_device_pinned_alloc: `size` (> 0) bytes of pinned memory (page
 * aligned; cudaHostAlloc / hipHostMalloc on hip), from the device's pool
 * of freed blocks ($HRX_PINNED_CACHE_BYTES) when one fits.
 * hrx_device_pinned_free never waits: the block goes back to the pool once
 * every copy queued with it is done (the device's cleanup thread waits for
 * them). INVALID_ARGUMENT when `ptr` is not an allocation of the device. */
hrx_status_t hrx_device_pinned_alloc(hrx_device_t* device, uint64_t size,
                                     void** out_ptr);
hrx_status_t hrx_device_pinned_free(hrx_device_t* device, void* ptr);
/* Pins `size` bytes of the caller's host memory at `ptr` (cudaHostRegister
 * / hipHostRegister on hip; tracked only on host) until hrx_device_unpin.
 * INVALID_ARGUMENT, nothing pinned, when it overlaps memory already pinned
 * for the device. hrx_device_unpin waits for the copies queued with the
 * memory (wait hook: see "waits" above; when interrupted the memory is no
 * longer used for direct copies and stays pinned until a later
 * hrx_device_unpin of it, or the end of its last copy), then unpins it.
 * INVALID_ARGUMENT when `ptr` is not the start of pinned memory. */
hrx_status_t hrx_device_pin(hrx_device_t* device, void* ptr, uint64_t size);
hrx_status_t hrx_device_unpin(hrx_device_t* device, void* ptr,
                              const hrx_wait_hook_t* hook,
                              bool* out_interrupted);
/* Whether [ptr, ptr + length) lies wholly inside pinned memory of the
 * device (an allocation not freed, or memory pinned and not unpinned):
 * what the transfers above copy directly. Never blocks. */
bool hrx_device_is_pinned(hrx_device_t* device, const void* ptr,
                          uint64_t length);

/* Makes a native stream of another library on this device (a cudaStream_t
 * or hipStream_t hrx did not create; NULL and the runtime's special
 * handles, such as cudaStreamLegacy (1) and cudaStreamPerThread (2), are
 * accepted) wait, on the device, for all work submitted so far to the
 * device's pool queues, without blocking the host (the hip backend records
 * an event at the end of each pool queue that has been created and makes
 * the stream wait for it). On a backend without such streams (host) it
 * blocks until that work is done instead, like hrx_device_synchronize. */
hrx_status_t hrx_device_order_foreign_stream(hrx_device_t* device,
                                             void* foreign_stream);

/* Submission batching (on by default; HRX_BATCHING=0 turns it off for
 * devices opened afterwards). While it is on, small copies and fills on a
 * stream may be gathered and published together as one native operation:
 * at once when the stream's queue is idle and the stream was quiet, else
 * when the batch is full, at the stream's next observation point
 * (synchronize, record_event, read, read_blocking, wait_event, any other
 * command, release; device synchronize; buffer release), or at the latest
 * HRX_BATCH_DELAY_US (default 20) after its first command. Ordering and
 * every other rule of the API are the same either way. A setting of the
 * live device, shared by all its handles; turning it off publishes pending
 * work at once. */
void hrx_device_set_batching(hrx_device_t* device, bool enabled);
bool hrx_device_batching(hrx_device_t* device);

/* ------------------------------------------------------- several devices */

/* Each device of a backend is its own live device: its own pool, setting,
 * queues and memory. Work of several devices meets in two ways only:
 * hrx_stream_copy_peer (a copy between buffers of two devices) and
 * hrx_stream_wait_event with an event of another device of the same
 * backend. Everything else refuses objects of another device
 * (INVALID_ARGUMENT naming both devices and what is allowed). */

/* How copies on the streams of one device reach the memory of another
 * device of its backend. */
typedef enum hrx_peer_path_e {
  /* The devices share memory (host backend): one copy. */
  HRX_PEER_PATH_DIRECT = 0,
  /* Peer access: the device reads and writes the other's memory itself
   * (hip: hipDeviceCanAccessPeer; hrx enables the access on the first
   * copy between the two). */
  HRX_PEER_PATH_PEER = 1,
  /* Through pinned host memory: the stream copies to host memory and from
   * there, two copies in its order (hip without peer access). */
  HRX_PEER_PATH_STAGED = 2,
} hrx_peer_path_t;
/* "direct", "peer", "staged"; NULL for an unknown value. */
const char* hrx_peer_path_name(int path);
/* The path of copies between `device` and the backend's device
 * `other_index` made on streams of `device`. other_index outside
 * [0, device_count) is OUT_OF_RANGE; the device's own index is
 * INVALID_ARGUMENT. */
hrx_status_t hrx_device_query_peer_path(hrx_device_t* device, int other_index,
                                        hrx_peer_path_t* out_path);

/* ------------------------------------------------------------------ pool */

#define HRX_DEFAULT_STREAM_QUEUE_COUNT 8
#define HRX_MAX_STREAM_QUEUE_COUNT 64

/* Sets the live device's pool size. Rules (the pool contract):
 * - count must be in [1, HRX_MAX_STREAM_QUEUE_COUNT], else INVALID_ARGUMENT
 *   (also after first use);
 * - the current value is always accepted;
 * - a different value after first use (the first successful creation of a
 *   pool queue) is BUSY, even once every stream has been released. */
hrx_status_t hrx_device_set_stream_queue_count(hrx_device_t* device,
                                               int64_t count);
int hrx_device_stream_queue_count(hrx_device_t* device);

typedef struct hrx_pool_info_s {
  int queue_count;       /* configured pool size (per priority lane) */
  int queues_created;    /* lane queues created so far, every lane (lazy;
                            reserved queues are in hrx_pool_stats_t) */
  int next_slot;         /* the normal lane's round-robin cursor: the slot
                            its next stream gets under round-robin */
  bool first_use;        /* a pool queue has been created */
  int live_streams;      /* pool streams alive */
  int fabric_queues;     /* live queues outside the pool */
} hrx_pool_info_t;

void hrx_device_query_pool(hrx_device_t* device, hrx_pool_info_t* out_info);

/* Priority lanes. Each lane is a pool of its own: up to the queue count
 * native queues (the count applies per lane), its own round-robin cursor,
 * its queues created lazily with the lane's native priority. Numerically a
 * larger value is more urgent. */
typedef enum hrx_stream_priority_e {
  HRX_STREAM_PRIORITY_LOW = -1,
  HRX_STREAM_PRIORITY_NORMAL = 0,
  HRX_STREAM_PRIORITY_HIGH = 1,
} hrx_stream_priority_t;
#define HRX_STREAM_PRIORITY_MIN HRX_STREAM_PRIORITY_LOW
#define HRX_STREAM_PRIORITY_MAX HRX_STREAM_PRIORITY_HIGH
#define HRX_STREAM_LANE_COUNT 3
/* "low", "normal", "high"; NULL outside [MIN, MAX]. */
const char* hrx_stream_priority_name(int priority);
/* Inverse of hrx_stream_priority_name; false (out unchanged) if unknown. */
bool hrx_stream_priority_parse(const char* name, int* out_priority);

/* Reserved queues alive at once per device (each owned by one stream). */
#define HRX_MAX_RESERVED_QUEUES 64

/* How a pool stream's queue is chosen within its lane. */
typedef enum hrx_queue_policy_e {
  /* The k-th stream of a lane gets slot k mod count. */
  HRX_QUEUE_POLICY_ROUND_ROBIN = 0,
  /* The slot with the least work in flight at creation time: fewest
   * commands in flight, then fewest bytes in flight, then fewest live
   * streams; ties go to the first such slot at or after the lane's
   * round-robin cursor. A slot whose queue is not created yet has none of
   * either. See hrx_pool_queue_stats_t for what "in flight" means. */
  HRX_QUEUE_POLICY_LEAST_LOADED = 1,
} hrx_queue_policy_t;
/* "round_robin", "least_loaded"; NULL for an unknown value. */
const char* hrx_queue_policy_name(int policy);
/* Inverse of hrx_queue_policy_name; false (out unchanged) if unknown. */
bool hrx_queue_policy_parse(const char* name, hrx_queue_policy_t* out_policy);

/* Sets the live device's queue policy, with the queue count's rule: an
 * unknown policy is INVALID_ARGUMENT; the current value is always accepted;
 * a different value after first use is BUSY. Default: round-robin. */
hrx_status_t hrx_device_set_stream_queue_policy(hrx_device_t* device,
                                                int policy);
hrx_queue_policy_t hrx_device_stream_queue_policy(hrx_device_t* device);

/* Observability of one native queue of the pool. Counts are kept by the
 * core when a command is published (a command: copy, fill, upload, read,
 * event wait or graph launch; bytes: the bytes a copy, fill, upload or read
 * moves; a graph launch counts no bytes). A batch of N small copies and
 * fills counts N commands when the batch is published.
 * "In flight" = published minus known complete. Completion is learned from
 * the backend's queue_query when stats are taken or a least-loaded choice
 * is made: the host backend counts the queue's pending commands exactly
 * (worker tickets), so commands_in_flight is exact there; the hip backend
 * can only tell an idle queue (hipStreamQuery / cudaStreamQuery), so
 * everything published since the queue was last seen idle counts as in
 * flight. bytes_in_flight is always "bytes published since the queue was
 * last seen idle" (an upper bound while it is busy). */
typedef struct hrx_pool_queue_stats_s {
  int priority;             /* the lane, hrx_stream_priority_t */
  int slot;                 /* slot within the lane; -1 for reserved */
  bool reserved;            /* owned by one stream */
  int native_priority;      /* the runtime's priority value it was created
                               with (0 where the runtime has none) */
  int streams;              /* live streams assigned */
  uint64_t streams_assigned;/* streams ever assigned */
  uint64_t commands_submitted;
  uint64_t bytes_submitted;
  uint64_t commands_in_flight;
  uint64_t bytes_in_flight;
  /* Gathering (batching.h): the gathered runs of two or more commands
   * that were handed to the backend in one call each (a launch_batch or
   * batch_submit), and the commands they carried; commands_batched /
   * batches_published is the mean size of a gathered run, and
   * commands_submitted - commands_batched the commands published alone
   * (or as paced transfers). */
  uint64_t batches_published;
  uint64_t commands_batched;
} hrx_pool_queue_stats_t;

/* The hardware connection budget of the device's process (NVIDIA:
 * CUDA_DEVICE_MAX_CONNECTIONS, AMD: GPU_MAX_HW_QUEUES). */
typedef struct hrx_connection_budget_s {
  char variable[40];  /* the environment variable; "" when none applies */
  int wanted;         /* what the pool asks for: count * lanes + headroom */
  int value;          /* in effect (or to be applied); 0 when none applies */
  /* "user" (already set, respected), "hrx" (set by hrx right before the
   * runtime started, because a device open started it), "unset" (nothing
   * set it), "runtime-started" (a device's budget when the runtime had
   * already been started with nothing set, e.g. by listing backends first:
   * the runtime reads the variable only when it starts, so it runs with its
   * default and hrx set nothing; value 0), "not applicable". */
  char source[24];
} hrx_connection_budget_t;

/* Queues beyond the lanes' count * HRX_STREAM_LANE_COUNT that the
 * connection budget leaves room for (reserved and fabric queues). */
#define HRX_CONNECTION_HEADROOM 4
/* The connection budget a pool of `queue_count` queues per lane asks for
 * (hrx_connection_budget_t.wanted): every lane's queues plus the headroom. */
#define HRX_CONNECTIONS_WANTED(queue_count) \
  ((queue_count) * HRX_STREAM_LANE_COUNT + HRX_CONNECTION_HEADROOM)

/* What a backend's load found, for hrx.backends(). */
typedef struct hrx_backend_info_s {
  /* The runtime library the load settled on, as passed to dlopen: the one
   * in use or, when its runtime refused, the first such library; "" for a
   * backend without one or before its load (hrx_backend_probe loads). */
  char library[256];
  /* "nvidia" or "amd" for that library; "" when there is none. */
  char platform[16];
  /* Whether the platform has a connection budget variable; if so,
   * `connections` describes it now (wanted: what the default pool asks). */
  bool has_connections;
  hrx_connection_budget_t connections;
} hrx_backend_info_t;

/* Describes backend `name` (all zero for an unknown name). Never loads
 * anything. */
void hrx_backend_query_info(const char* name, hrx_backend_info_t* out_info);

typedef struct hrx_pool_stats_s {
  int queue_count;          /* per lane */
  hrx_queue_policy_t policy;
  bool first_use;
  int reserved_live;        /* reserved queues alive now */
  uint64_t reserved_created;/* reserved queues ever created */
  uint64_t reserved_refused;/* reserve requests refused (capacity) */
  hrx_connection_budget_t connections;
  int queue_stats_count;    /* entries written to queues */
} hrx_pool_stats_t;

/* Writes the stats of up to `capacity` live pool queues (lanes in order
 * high, normal, low, slots ascending; then reserved queues) into out_queues
 * (may be NULL when capacity is 0) and the totals into out_stats. A capacity
 * of HRX_STREAM_LANE_COUNT * HRX_MAX_STREAM_QUEUE_COUNT +
 * HRX_MAX_RESERVED_QUEUES always suffices. */
hrx_status_t hrx_device_query_pool_stats(hrx_device_t* device,
                                         hrx_pool_queue_stats_t* out_queues,
                                         int capacity,
                                         hrx_pool_stats_t* out_stats);

/* ------------------------------------------------------------------ buffer */

typedef struct hrx_buffer_s hrx_buffer_t;

/* Allocates device memory, usable by every stream of the device. Its memory
 * is returned only once no submitted work can still touch it. */
hrx_status_t hrx_buffer_allocate(hrx_device_t* device, uint64_t size,
                                 hrx_buffer_t** out_buffer);
void hrx_buffer_retain(hrx_buffer_t* buffer);
void hrx_buffer_release(hrx_buffer_t* buffer);
uint64_t hrx_buffer_size(const hrx_buffer_t* buffer);
hrx_device_t* hrx_buffer_device(const hrx_buffer_t* buffer); /* borrowed */
/* The native device address (a host pointer on the host backend). */
void* hrx_buffer_native_pointer(const hrx_buffer_t* buffer);

/* A byte range of a buffer. Views are plain values; the buffer they name must
 * be kept alive by whoever holds the view. */
typedef struct hrx_view_s {
  hrx_buffer_t* buffer;  /* borrowed */
  uint64_t offset;
  uint64_t length;
} hrx_view_t;

/* Checks offset + length against the buffer without overflow. */
hrx_status_t hrx_view_make(hrx_buffer_t* buffer, uint64_t offset,
                           uint64_t length, hrx_view_t* out_view);

/* ------------------------------------------------------------------ event */

typedef struct hrx_event_s hrx_event_t;

void hrx_event_retain(hrx_event_t* event);
void hrx_event_release(hrx_event_t* event);
hrx_device_t* hrx_event_device(const hrx_event_t* event); /* borrowed */
/* Whether the work the event snapshots is complete (never waits). An event
 * never recorded counts as complete. */
hrx_status_t hrx_event_query(hrx_event_t* event, bool* out_done);
/* Blocks until the work the event snapshots is complete (wait hook: see
 * "waits" above). */
hrx_status_t hrx_event_synchronize(hrx_event_t* event,
                                   const hrx_wait_hook_t* hook,
                                   bool* out_interrupted);
/* Whether the event was recorded with timing (hrx_stream_record_timing_event). */
bool hrx_event_timing(const hrx_event_t* event);
/* Milliseconds from `start`'s completion to `end`'s (negative when end
 * completed first). Both must be timing events of the same device
 * (INVALID_ARGUMENT otherwise) and complete (FAILED_PRECONDITION while
 * either is not; it never waits). The clock: the device's event timer on
 * hip, the host queue worker's monotonic clock as it passes the record on
 * the host backend. */
hrx_status_t hrx_event_elapsed_ms(hrx_event_t* start, hrx_event_t* end,
                                  double* out_ms);

/* ------------------------------------------------------------------ stream */

typedef struct hrx_stream_s hrx_stream_t;

/* A pool stream of the normal lane: takes the slot the device's policy
 * picks (round-robin by default), creating that slot's native queue on first
 * need. If the native runtime refuses the queue, the error carries its
 * message, the cursor does not advance and nothing is left behind. */
hrx_status_t hrx_stream_create(hrx_device_t* device, hrx_stream_t** out_stream);

/* Options of hrx_stream_create_with_options; start from
 * hrx_stream_options_default() so that later fields keep their defaults. */
typedef struct hrx_stream_options_s {
  int priority;   /* hrx_stream_priority_t; default NORMAL */
  /* A queue of the stream's lane that no other stream shares, created for
   * it and destroyed (after its work) when the stream goes. At most
   * HRX_MAX_RESERVED_QUEUES at once (RESOURCE_EXHAUSTED beyond, as when the
   * runtime refuses the queue); the round-robin cursor is not touched. */
  bool reserve;
} hrx_stream_options_t;

void hrx_stream_options_default(hrx_stream_options_t* out_options);
/* hrx_stream_create with options (NULL = defaults, the same as
 * hrx_stream_create). A priority outside [HRX_STREAM_PRIORITY_MIN, MAX] is
 * INVALID_ARGUMENT. Failure leaves no queue, slot or count behind. */
hrx_status_t hrx_stream_create_with_options(hrx_device_t* device,
                                            const hrx_stream_options_t* options,
                                            hrx_stream_t** out_stream);
/* The stream's lane, and whether its queue is reserved (false for a
 * dedicated stream, whose lane is NORMAL). */
int hrx_stream_priority(const hrx_stream_t* stream);
bool hrx_stream_reserved(const hrx_stream_t* stream);
/* A stream with its own native queue outside the pool (hrx.fabric.Queue):
 * no slot, no effect on the pool setting or its first use. */
hrx_status_t hrx_stream_create_dedicated(hrx_device_t* device,
                                         hrx_stream_t** out_stream);
void hrx_stream_retain(hrx_stream_t* stream);
/* Releasing the last reference publishes pending work; the work still
 * completes, and its buffers stay alive until it has. A failure no
 * observation raised is written to stderr (see "Failures" above). */
void hrx_stream_release(hrx_stream_t* stream);
/* hrx_stream_release, except that a failure no observation raised is
 * handed to the caller in *out_unobserved (the caller owns it and must
 * report it; NULL when there is none or the reference was not the last). */
void hrx_stream_release_checked(hrx_stream_t* stream,
                                hrx_status_t* out_unobserved);
hrx_device_t* hrx_stream_device(const hrx_stream_t* stream); /* borrowed */
/* Pool slot of the stream's queue within its lane; -1 for a dedicated or
 * reserved stream. */
int hrx_stream_queue_index(const hrx_stream_t* stream);
/* The native queue handle (hipStream_t / cudaStream_t, or the host queue). */
void* hrx_stream_native_handle(const hrx_stream_t* stream);

/* Work is executed in submission order on the stream. dst and src must be
 * non-empty, of equal length, on the stream's device and not overlap. */
hrx_status_t hrx_stream_copy(hrx_stream_t* stream, hrx_view_t dst,
                             hrx_view_t src);
hrx_status_t hrx_stream_fill(hrx_stream_t* stream, hrx_view_t dst,
                             uint8_t byte);
/* A copy between buffers of two devices of one backend, in the stream's
 * order (after its earlier work, before its later work; work of the other
 * device is ordered only by events). One of dst and src must be on the
 * stream's device, the other on any device of the same backend (both on
 * the stream's device: an ordinary hrx_stream_copy). Lengths must be equal
 * and non-empty. The path is hrx_device_query_peer_path's. The buffer of
 * the other device is kept alive until the copy is done, like every
 * command's buffers: the stream holds a reference, dropped by the stream's
 * first call after the copy completed or by its release (which waits for
 * the copy). A command like a copy: a failure marks the stream failed
 * (hrx.h, "Failures"). Never batched; in non-blocking mode it reports
 * WOULD_BLOCK before doing anything. */
hrx_status_t hrx_stream_copy_peer(hrx_stream_t* stream, hrx_view_t dst,
                                  hrx_view_t src);
/* Copies `length` bytes from host memory into dst. length must equal
 * dst.length. Pageable memory is read before the call returns; the caller
 * may reuse it at once. Pinned memory of the stream's device
 * (hrx_device_is_pinned) is copied directly and asynchronously: it is read
 * when the stream reaches the upload, so the caller must not modify it
 * before then (an event recorded after the upload, or synchronize, tells
 * when); it stays allocated (or pinned) until the copy is done, whoever
 * lets it go first. Paced like any upload (a large one on a normal or
 * low stream goes in chunks, each copying the memory in place). */
hrx_status_t hrx_stream_upload(hrx_stream_t* stream, hrx_view_t dst,
                               const void* data, uint64_t length);

/* An asynchronous device-to-host read. */
typedef struct hrx_readback_s hrx_readback_t;
hrx_status_t hrx_stream_read(hrx_stream_t* stream, hrx_view_t src,
                             hrx_readback_t** out_readback);
void hrx_readback_release(hrx_readback_t* readback);
/* Releases without waiting for the read to finish (hrx_readback_release
 * waits): an unfinished read's staging memory is returned when its device is
 * torn down. For abandoning a read, e.g. after an interrupted wait; a
 * program that abandons reads in a loop holds their memory until then. */
void hrx_readback_release_deferred(hrx_readback_t* readback);
uint64_t hrx_readback_length(const hrx_readback_t* readback);
hrx_status_t hrx_readback_query(hrx_readback_t* readback, bool* out_done);
/* Blocks until the read is complete, then returns the bytes (borrowed; valid
 * until the readback is released; written only when the read completed).
 * Wait hook: see "waits" above. */
hrx_status_t hrx_readback_wait(hrx_readback_t* readback,
                               const hrx_wait_hook_t* hook,
                               const uint8_t** out_bytes,
                               bool* out_interrupted);
/* Copies the readback's hrx_readback_length bytes from `bytes` (what
 * hrx_readback_wait returned) into `out` (that many bytes, not
 * overlapping): a large copy is cut into pieces copied by the calling
 * thread and the device's copy threads together (HRX_STAGED_COPY_THREADS,
 * HRX_STAGED_COPY_MIN_BYTES). Never fails; blocks only while copying. For
 * a binding that copies a read out. */
void hrx_readback_copy_out(const hrx_readback_t* readback,
                           const uint8_t* bytes, void* out);
/* Waits for a read of hrx_stream_read and copies its bytes into `out`
 * (hrx_readback_length bytes, not overlapping): hrx_readback_wait, then
 * hrx_readback_copy_out, except that a paced read's chunks are copied as
 * they land, while later ones run, as a read_into's are. For a binding
 * that returns a read's bytes in new memory. Blocking mode only
 * (FAILED_PRECONDITION in non-blocking mode, and for a read_into, whose
 * bytes land in its own `out`). Wait hook: see "waits" above. When
 * interrupted or failed, `out` holds an unspecified part of the bytes;
 * the readback stays usable (a later wait finishes it). */
hrx_status_t hrx_readback_wait_copy(hrx_readback_t* readback, void* out,
                                    const hrx_wait_hook_t* hook,
                                    bool* out_interrupted);
/* Pageable host memory for a read's result (docs/host-memory.md, "Reads
 * into new arrays"): what a binding copies a read into when it returns a
 * new array. hrx_result_memory_alloc gives `size` (> 0) writable bytes,
 * page aligned, from a process-wide pool of freed blocks where one fits
 * (memory already mapped, so the copy does not fault page by page), else
 * a new mapping; *out_capacity is the block's size, which
 * hrx_result_memory_free takes back with the pointer. The pool keeps up to
 * $HRX_RESULT_CACHE_BYTES of free blocks (INVALID_ARGUMENT naming it when
 * malformed) and holds no device. OUT_OF_MEMORY when the system has none.
 * Thread-safe; never waits for a device. */
hrx_status_t hrx_result_memory_alloc(uint64_t size, void** out_ptr,
                                     uint64_t* out_capacity);
void hrx_result_memory_free(void* ptr, uint64_t capacity);
/* Takes a complete read's bytes out of the readback without copying them
 * (for reads of hrx_stream_read, after hrx_readback_wait returned them):
 * *out_ptr is their memory, pinned memory of the device (*out_device,
 * retained for the caller) that the caller now owns and frees with
 * hrx_device_pinned_free (it then goes back to the device's read
 * staging). Afterwards the readback has no bytes; only
 * its release is allowed. FAILED_PRECONDITION, nothing taken, for a read
 * that is not complete or whose bytes were taken, or a read_into. Not
 * while another thread waits for or queries the readback. */
hrx_status_t hrx_readback_take(hrx_readback_t* readback, void** out_ptr,
                               hrx_device_t** out_device);
/* An asynchronous read of src into caller memory: `out` holds `capacity`
 * bytes, exactly src.length (else INVALID_ARGUMENT, nothing submitted), and
 * stays valid until the readback is released. When `out` is pinned memory
 * of the device (hrx_device_is_pinned) the read copies into it directly
 * (one copy, not paced) and `out` holds the bytes once the read is
 * complete. Else the
 * read stages through the device's pool like hrx_stream_read; its bytes are
 * copied into `out` by
 * the first hrx_readback_wait that finds the read complete, or the first
 * hrx_readback_query that reports it done (once, on that caller's thread,
 * helped by the device's copy threads for a large read: staged transfers
 * in docs/api.md), and the wait's out_bytes is `out`. A blocking wait on
 * a paced read copies its chunks as they land, while later ones run. A
 * readback released before the copy, or a read that fails, leaves `out`
 * unchanged or partly written (with the bytes of chunks that landed). */
hrx_status_t hrx_stream_read_into(hrx_stream_t* stream, hrx_view_t src,
                                  void* out, uint64_t capacity,
                                  hrx_readback_t** out_readback);
/* Blocks; reads src into out (capacity bytes, at least src.length), as
 * hrx_stream_read_into and its wait: directly when `out` is pinned memory
 * of the device, else through staging (a paced read's chunks are copied
 * as they land). Wait hook: see "waits" above; when interrupted or failed,
 * `out` is left unchanged or partly written, and the read's staging
 * memory is returned once the read completes (the call does not wait for
 * it; a direct read into pinned memory is waited for, so that nothing
 * writes `out` after the call). */
hrx_status_t hrx_stream_read_blocking(hrx_stream_t* stream, hrx_view_t src,
                                      void* out, uint64_t capacity,
                                      const hrx_wait_hook_t* hook,
                                      bool* out_interrupted);

/* Publishes the stream's pending batch now, without creating an event or
 * waiting: afterwards everything the stream accepted is on its native
 * queue (for code that launches its own work on
 * hrx_stream_native_handle). An observation point: raises a failure of
 * earlier commands. May block for queue space. */
hrx_status_t hrx_stream_flush(hrx_stream_t* stream);

/* Publishes the stream's pending batch now, like hrx_stream_flush, but is
 * no observation point: a failure of earlier commands stays for the next
 * one (the call fails only as a submission does: a released stream, a
 * forked child, WOULD_BLOCK). For bindings taking over a full batch
 * (hrx_thread_take_full_batch). May block for queue space. */
hrx_status_t hrx_stream_publish_batch(hrx_stream_t* stream);
/* Blocks until all work published on the stream is done (wait hook: see
 * "waits" above). */
hrx_status_t hrx_stream_synchronize(hrx_stream_t* stream,
                                    const hrx_wait_hook_t* hook,
                                    bool* out_interrupted);
/* An event that completes when all work published so far on the stream is
 * done. Never waits behind a producer blocked on a full queue. */
hrx_status_t hrx_stream_record_event(hrx_stream_t* stream,
                                     hrx_event_t** out_event);
/* hrx_stream_record_event with an event that also notes when it completed
 * (see hrx_event_elapsed_ms). Unlike a plain record it is a command of the
 * stream (numbered in failure messages like one); on the host backend it
 * is a command of the queue and may wait for queue space. */
hrx_status_t hrx_stream_record_timing_event(hrx_stream_t* stream,
                                            hrx_event_t** out_event);
/* Device-side wait: later work on the stream (and on every stream sharing
 * its queue) starts after the event completes. The event may be of another
 * device of the stream's backend (hip: hipStreamWaitEvent /
 * cudaStreamWaitEvent across devices; host: the other device's queue
 * ticket); an event of another backend is INVALID_ARGUMENT. */
hrx_status_t hrx_stream_wait_event(hrx_stream_t* stream, hrx_event_t* event);
/* Whether all work the stream has accepted is complete; never waits and
 * publishes nothing. False while commands wait in a pending batch or a
 * batch publication is in progress (a lone command is accepted when its
 * call returns). The answer comes from the stream's queue as a whole, so
 * work of other streams sharing it can make it false for longer. */
hrx_status_t hrx_stream_query(hrx_stream_t* stream, bool* out_done);

/* ------------------------------------------------------------------ kernel */

/* Kernels: code compiled for one device and launched on its streams, each
 * launch a command of the stream like a copy (submission order, events,
 * lanes, reserved queues, the failure model, batching: the stream's pending
 * batch is published before a launch, so a launch never overtakes the
 * stream's earlier copies nor is overtaken by later ones).
 *
 * Languages (hrx_kernel_compiler_t.language): "c" on the host backend (the
 * system C compiler; the kernel's view of its launch is hrx_kernel.h,
 * which hrx installs with the Python package), "cuda" through NVRTC and
 * "hip" through hiprtc on the hip backend. A backend without kernels
 * refuses every call below with UNAVAILABLE.
 *
 * Cache: a compile is looked up first among the modules the live device
 * compiled before (same source and options, a module that has the name:
 * the same module, no compiler run), then in the disk cache (see
 * hrx_device_compile_kernel), and only then compiled. A compile covers
 * every kernel the source declares (a __global__ function at file scope or
 * in an extern "C" block, not a template, read from the text), so a later
 * compile of another of them finds the module; where the compiler refuses
 * them together for a kernel not asked for, the names asked for are
 * compiled alone (docs/kernels.md, "Modules"). */
typedef struct hrx_kernel_s hrx_kernel_t;

/* The most arguments one launch passes, and the most bytes of argument
 * values together (the parameter-space limit every HIP and CUDA version
 * accepts). */
#define HRX_KERNEL_MAX_ARGS 128
#define HRX_KERNEL_MAX_ARG_BYTES 4096
/* The longest kernel name, and the most compiler options of one compile. */
#define HRX_KERNEL_MAX_NAME 255
#define HRX_KERNEL_MAX_OPTIONS 256

/* What compiles kernels for a device. Every field is a NUL-terminated
 * string; all of them are part of the disk cache's key. */
typedef struct hrx_kernel_compiler_s {
  char language[16];      /* source language: "c", "cuda", "hip" */
  char compiler[256];     /* the compiler and its version */
  char target[64];        /* what images are for: "host-x86_64", "sm_90" */
  char image_format[16];  /* what images are: "elf", "cubin", "ptx", "hsaco" */
} hrx_kernel_compiler_t;

/* Describes the device's kernel compiler without compiling (the host
 * backend runs the compiler once for its version). UNAVAILABLE when the
 * backend runs no kernels or has no compiler, saying what was looked for
 * and how to point hrx at one. Blocks. */
hrx_status_t hrx_device_query_kernel_compiler(hrx_device_t* device,
                                              hrx_kernel_compiler_t* out);

/* Compiles `source` and looks up the kernel `name` in it (a C identifier:
 * letters, digits and '_', not starting with a digit, at most
 * HRX_KERNEL_MAX_NAME characters; C++ kernels need extern "C" or their
 * mangled name). `options` (option_count entries, may be NULL when 0; at
 * most HRX_KERNEL_MAX_OPTIONS) pass through to the compiler in order, each
 * one argument. A source the compiler rejects is INVALID_ARGUMENT carrying
 * the compiler's own log; a source that defines no kernel `name` is
 * INVALID_ARGUMENT naming it.
 *
 * Caching (see above). The disk cache holds one file per (source, options,
 * names, compiler) in $HRX_KERNEL_CACHE_DIR, else $XDG_CACHE_HOME/hrx/kernels,
 * else ~/.cache/hrx/kernels; HRX_KERNEL_CACHE=0 turns it off. An entry
 * carries its whole key and a checksum of its image: a corrupt, truncated
 * or foreign entry is never loaded, but compiled again and rewritten. An
 * entry is written to a temporary file and renamed into place. A cache
 * directory that cannot be written leaves the kernel uncached, which
 * hrx_kernel_cache_note states (nothing is printed).
 * Blocks while the compiler runs. */
hrx_status_t hrx_device_compile_kernel(hrx_device_t* device,
                                       const char* source, const char* name,
                                       const char* const* options,
                                       size_t option_count,
                                       hrx_kernel_t** out_kernel);
/* Compiles `source` once and looks up each kernel of names[0..name_count)
 * in it (1 to HRX_KERNEL_MAX_MODULE_NAMES distinct names, each as
 * hrx_device_compile_kernel's `name`): out_kernels[i] is names[i]'s, all of
 * one module (a module of the source and options cached with these names
 * is reused, and hrx_device_compile_kernel of one of them finds it too).
 * Errors as hrx_device_compile_kernel's, and a name given twice is
 * INVALID_ARGUMENT; on failure no kernel is made. Blocks while the compiler
 * runs. */
#define HRX_KERNEL_MAX_MODULE_NAMES 1024
hrx_status_t hrx_device_compile_kernels(hrx_device_t* device,
                                        const char* source,
                                        const char* const* names,
                                        size_t name_count,
                                        const char* const* options,
                                        size_t option_count,
                                        hrx_kernel_t** out_kernels);
/* Loads the kernel `name` from an image in the device's image format (the
 * bytes of hrx_kernel_image, or an image built offline: PTX or cubin on
 * NVIDIA, a code object on AMD, a shared object hrx compiled on the host
 * backend). The bytes are copied. An image the runtime cannot load
 * (corrupt, of another architecture or format, on the host backend one hrx
 * did not build) is INVALID_ARGUMENT with the reason; nothing stays
 * loaded. Blocks. */
hrx_status_t hrx_device_load_kernel(hrx_device_t* device, const void* image,
                                    size_t size, const char* name,
                                    hrx_kernel_t** out_kernel);
void hrx_kernel_retain(hrx_kernel_t* kernel);
/* The module stays loaded while a launch of it may still run. */
void hrx_kernel_release(hrx_kernel_t* kernel);
hrx_device_t* hrx_kernel_device(const hrx_kernel_t* kernel); /* borrowed */
/* Borrowed; valid while the kernel is. */
const char* hrx_kernel_name(const hrx_kernel_t* kernel);
/* The image of the kernel's module (borrowed; valid while the kernel is),
 * which hrx_device_load_kernel takes on a device of the same compiler
 * target. */
void hrx_kernel_image(const hrx_kernel_t* kernel, const void** out_image,
                      size_t* out_size);

/* What a kernel parameter is, where the compiler's record of the kernel
 * says (hrx_kernel_attributes_t.param_kind). A launch from Python converts
 * and checks each argument by it (docs/kernels.md, "Arguments"); the C API
 * passes bytes and checks only that a VIEW goes to a parameter that may
 * hold a pointer (POINTER, INTEGER or UNKNOWN). */
typedef enum hrx_kernel_param_kind_e {
  /* Not recorded (a struct by value, a typedef hrx does not know, every
   * parameter of a kernel whose types are unknown): only its size is. */
  HRX_KERNEL_PARAM_UNKNOWN = 0,
  HRX_KERNEL_PARAM_POINTER = 1,
  HRX_KERNEL_PARAM_SIGNED = 2,    /* a signed integer of its size */
  HRX_KERNEL_PARAM_UNSIGNED = 3,  /* an unsigned integer of its size */
  /* An integer whose signedness is not recorded, or a pointer where it is
   * pointer-sized: PTX's .u and .b types, which NVRTC writes for C's
   * signed ints and for pointers alike. */
  HRX_KERNEL_PARAM_INTEGER = 4,
  HRX_KERNEL_PARAM_FLOAT = 5,     /* an IEEE binary float of its size */
  HRX_KERNEL_PARAM_BOOL = 6,      /* C's _Bool / C++'s bool */
} hrx_kernel_param_kind_t;

/* A parameter's type as messages and Kernel.params name it, into `out`
 * (`capacity` bytes, 32 are always enough): "pointer", "int32", "uint8",
 * "int32/uint32" (INTEGER; "int64/uint64/pointer" at 8 bytes), "float32",
 * "bool", "unknown". Returns `out`. */
const char* hrx_kernel_param_type_name(int kind, uint32_t size, char* out,
                                       size_t capacity);

/* A kernel as its module describes it. */
typedef struct hrx_kernel_attributes_s {
  /* The parameters' count, and each one's byte offset and size in the
   * kernel's parameter block, where the runtime can tell them (host: always;
   * CUDA 12.4 and later: cuFuncGetParamInfo); -1 (offsets and sizes zero)
   * where it cannot, and then a launch's argument count and sizes are not
   * checked. */
  int param_count;
  uint32_t param_offset[HRX_KERNEL_MAX_ARGS];
  uint32_t param_size[HRX_KERNEL_MAX_ARGS];
  /* Each parameter's kind (an hrx_kernel_param_kind_t; all UNKNOWN where
   * the types are not recorded: the host backend records them from the
   * kernel's declaration, NVIDIA from the PTX of kernels hrx compiled or
   * of a PTX image loaded, docs/kernels.md), and its name where the
   * declaration is read (host), else NULL (borrowed: valid while the
   * kernel is). */
  uint8_t param_kind[HRX_KERNEL_MAX_ARGS];
  const char* param_name[HRX_KERNEL_MAX_ARGS];
  /* The most threads one block of this kernel may have. */
  uint32_t max_threads_per_block;
  /* Shared memory the kernel declares statically, and the most dynamic
   * shared memory one launch may ask for. */
  uint64_t static_shared_bytes;
  uint64_t max_dynamic_shared_bytes;
} hrx_kernel_attributes_t;
void hrx_kernel_query_attributes(const hrx_kernel_t* kernel,
                                 hrx_kernel_attributes_t* out);
/* The attributes' param_count, and param_size without a copy (borrowed;
 * valid while the kernel is; NULL when the count is -1). */
int hrx_kernel_param_sizes(const hrx_kernel_t* kernel,
                           const uint32_t** out_sizes);
/* The attributes themselves, without a copy (borrowed; valid while the
 * kernel is). */
const hrx_kernel_attributes_t* hrx_kernel_attributes(
    const hrx_kernel_t* kernel);

/* Where the kernel's module came from. */
typedef enum hrx_kernel_origin_e {
  HRX_KERNEL_ORIGIN_COMPILED = 0,      /* the compiler ran for it */
  HRX_KERNEL_ORIGIN_MEMORY_CACHE = 1,  /* the live device had it already */
  HRX_KERNEL_ORIGIN_DISK_CACHE = 2,    /* read from the disk cache */
  HRX_KERNEL_ORIGIN_IMAGE = 3,         /* hrx_device_load_kernel */
} hrx_kernel_origin_t;
hrx_kernel_origin_t hrx_kernel_origin(const hrx_kernel_t* kernel);
/* "compiled", "memory cache", "disk cache", "image"; NULL otherwise. */
const char* hrx_kernel_origin_name(int origin);
/* The disk cache entry of the kernel's module (a path it was read from or
 * written to; borrowed, valid while the kernel is), or NULL when there is
 * none; hrx_kernel_cache_note then says why (the cache is off, the
 * directory cannot be written, ...), and also says when an entry was
 * found corrupt and rebuilt. "" when there is nothing to say. */
const char* hrx_kernel_cache_path(const hrx_kernel_t* kernel);
const char* hrx_kernel_cache_note(const hrx_kernel_t* kernel);

/* A launch's shape. */
typedef struct hrx_launch_config_s {
  uint32_t grid[3];      /* blocks along x, y, z */
  uint32_t block[3];     /* threads of one block along x, y, z */
  uint64_t shared_bytes; /* dynamic shared memory of each block */
} hrx_launch_config_t;

/* One argument of a launch. */
typedef enum hrx_kernel_arg_kind_e {
  /* `size` bytes at `value`, copied before the call returns. */
  HRX_KERNEL_ARG_VALUE = 0,
  /* The device address of the view's first byte (pointer-sized). The view
   * must be a non-empty, in-bounds range of a buffer of the launch's
   * device; the buffer stays alive until the launch is done (freeing
   * memory waits for submitted work). */
  HRX_KERNEL_ARG_VIEW = 1,
} hrx_kernel_arg_kind_t;

typedef struct hrx_kernel_arg_s {
  hrx_kernel_arg_kind_t kind;
  uint32_t size;        /* VALUE */
  const void* value;    /* VALUE; borrowed for the call */
  hrx_view_t view;      /* VIEW */
} hrx_kernel_arg_t;

static inline hrx_kernel_arg_t hrx_kernel_arg_value(const void* value,
                                                    uint32_t size) {
  hrx_kernel_arg_t arg = {HRX_KERNEL_ARG_VALUE, size, value, {0, 0, 0}};
  return arg;
}
static inline hrx_kernel_arg_t hrx_kernel_arg_view(hrx_view_t view) {
  hrx_kernel_arg_t arg = {HRX_KERNEL_ARG_VIEW, 0, 0, view};
  return arg;
}

/* Launches the kernel on the stream: a command in the stream's order,
 * counted like any other (hrx.h, "Failures": a launch the device refuses
 * marks the stream failed). Checked before anything is submitted
 * (INVALID_ARGUMENT, naming the limit and where it comes from):
 * - the kernel is of the stream's device;
 * - each grid and block extent is at least 1 and at most the device's
 *   max_grid_dim / max_block_dim (hrx_device_info_t); the block's threads
 *   at most the kernel's and the device's max_threads_per_block;
 * - shared_bytes at most the kernel's max_dynamic_shared_bytes, and with
 *   its static shared memory at most the device's
 *   max_shared_bytes_per_block;
 * - at most HRX_KERNEL_MAX_ARGS arguments of at most
 *   HRX_KERNEL_MAX_ARG_BYTES bytes together; a VALUE is 1 byte or more
 *   with a value; a VIEW as described above;
 * - where the kernel's param_count is known, exactly that many arguments,
 *   each of its parameter's size; a VIEW only for a parameter that may hold
 *   a pointer (param_kind POINTER, INTEGER or UNKNOWN).
 * Non-blocking mode: like a copy (WOULD_BLOCK when the queue is full). */
hrx_status_t hrx_stream_launch(hrx_stream_t* stream, hrx_kernel_t* kernel,
                               const hrx_launch_config_t* config,
                               const hrx_kernel_arg_t* args,
                               size_t arg_count);

/* ------------------------------------------------------------------ graph */

/* A graph records copies, fills, kernel launches and host callbacks as
 * nodes with explicit dependencies, and is launched on a stream any number
 * of times.
 *
 * Rules (each is checked when the node is recorded, before anything is
 * stored):
 * - buffers must be of the graph's device; views must be non-empty and in
 *   bounds; copies need equal lengths and disjoint ranges (as on a stream);
 *   kernel launches follow hrx_stream_launch's rules;
 * - dependencies must be nodes of this graph (NULL and nodes of another graph
 *   are INVALID_ARGUMENT); a repeated dependency counts once;
 * - hrx_graph_add_dependency refuses an edge that would close a cycle;
 * - a graph is sealed by its first launch: recording afterwards is
 *   FAILED_PRECONDITION (its native form is instantiated once).
 * The graph retains every buffer and kernel its nodes name, until the graph
 * is freed.
 *
 * Launch: every node runs after the nodes it depends on, and the whole launch
 * runs after the stream's earlier work and before its later work (it goes
 * through the stream's ordinary submission path). A graph of device work only
 * becomes one native graph on backends that have them (hip: a hipGraph /
 * cudaGraph instantiated once, launched with one call); otherwise its nodes
 * are submitted in a topological order.
 *
 * Host callbacks run on a host worker thread once their dependencies are
 * complete; nodes that depend on them start after they return. A callback
 * may not call hrx functions that submit, allocate, read or wait (they fail
 * with FAILED_PRECONDITION there: the queue that runs the callback waits
 * for it), nor, on hip, query an event's, a stream's or a read's state,
 * elapsed time, free memory or pool statistics (the runtime forbids runtime calls inside host functions); releases it makes (a garbage collector included) are deferred to
 * the device's cleanup thread (see the conventions at the top). Nor should it wait for
 * other threads' hrx calls: freeing device memory (a buffer's last release)
 * waits for all of the device's queued work, callbacks included, as
 * cudaFree does.
 *
 * Thread safety: a graph may be recorded into and launched from several
 * threads; calls are serialised by the graph's lock. */
typedef struct hrx_graph_s hrx_graph_t;
/* A node: owned by its graph, valid while the graph is alive. */
typedef struct hrx_graph_node_s hrx_graph_node_t;
/* A launch's host-side completion (see below). */
typedef struct hrx_completion_s hrx_completion_t;

/* A host callback. Returns NULL on success; a failure is kept by the launch's
 * completion (the first failure of a launch wins; later nodes still run). */
typedef hrx_status_t (*hrx_host_fn_t)(void* user_data,
                                      hrx_completion_t* completion);

hrx_status_t hrx_graph_create(hrx_device_t* device, hrx_graph_t** out_graph);
void hrx_graph_retain(hrx_graph_t* graph);
void hrx_graph_release(hrx_graph_t* graph);
hrx_device_t* hrx_graph_device(const hrx_graph_t* graph); /* borrowed */
size_t hrx_graph_node_count(hrx_graph_t* graph);
/* True once a launch ran the graph as one native graph. */
bool hrx_graph_is_native(hrx_graph_t* graph);

/* `after` lists dependency_count nodes of this graph (may be NULL when the
 * count is 0). */
hrx_status_t hrx_graph_add_copy(hrx_graph_t* graph, hrx_view_t dst,
                                hrx_view_t src,
                                hrx_graph_node_t* const* after,
                                size_t dependency_count,
                                hrx_graph_node_t** out_node);
hrx_status_t hrx_graph_add_fill(hrx_graph_t* graph, hrx_view_t dst,
                                uint8_t byte, hrx_graph_node_t* const* after,
                                size_t dependency_count,
                                hrx_graph_node_t** out_node);
/* On success the graph owns user_data and calls user_data_free(user_data)
 * (if not NULL) when it is freed; on failure the caller keeps it. */
hrx_status_t hrx_graph_add_host(hrx_graph_t* graph, hrx_host_fn_t fn,
                                void* user_data,
                                void (*user_data_free)(void* user_data),
                                hrx_graph_node_t* const* after,
                                size_t dependency_count,
                                hrx_graph_node_t** out_node);
/* A kernel launch node, checked like hrx_stream_launch against the graph's
 * device (the kernel must be of it; VIEW arguments of its buffers). The
 * argument values are copied; the graph retains the kernel and the buffers
 * of VIEW arguments. On a backend with native graphs it becomes a kernel
 * node of the native graph. */
hrx_status_t hrx_graph_add_kernel(hrx_graph_t* graph, hrx_kernel_t* kernel,
                                  const hrx_launch_config_t* config,
                                  const hrx_kernel_arg_t* args,
                                  size_t arg_count,
                                  hrx_graph_node_t* const* after,
                                  size_t dependency_count,
                                  hrx_graph_node_t** out_node);
/* Makes `node` run after `after` (both of this graph). */
hrx_status_t hrx_graph_add_dependency(hrx_graph_t* graph,
                                      hrx_graph_node_t* node,
                                      hrx_graph_node_t* after);
hrx_graph_t* hrx_graph_node_graph(const hrx_graph_node_t* node); /* borrowed */
/* Position of the node in recording order (0, 1, ...). */
size_t hrx_graph_node_index(const hrx_graph_node_t* node);
/* For a binding's garbage collector: calls visit(user_data, arg) for
 * every host node, in recording order, but only while the graph has exactly
 * `holders` references (all of them the caller's: no launch in flight and
 * no other holder), so that the user data is owned by the caller's objects
 * alone. Stops at the first non-zero result and returns it; 0 otherwise. */
int hrx_graph_visit_host_data(hrx_graph_t* graph, int holders,
                              int (*visit)(void* user_data, void* arg),
                              void* arg);

/* Launches the graph on the stream (same device; at least one node). A graph
 * with host callbacks yields a retained completion in *out_completion; a
 * graph of device work only yields NULL there (order after it with
 * hrx_stream_record_event). out_completion may be NULL (the launch runs all
 * the same). The launch keeps the graph alive until it is complete. */
hrx_status_t hrx_graph_launch(hrx_graph_t* graph, hrx_stream_t* stream,
                              hrx_completion_t** out_completion);

/* ------------------------------------------------------------- completion */

/* Completes when every node of one launch, host callbacks included, is done.
 * It is a host-side latch set by the launch's last host call, never a native
 * event. */
void hrx_completion_retain(hrx_completion_t* completion);
void hrx_completion_release(hrx_completion_t* completion);
bool hrx_completion_done(hrx_completion_t* completion);
/* Blocks until done or timeout_ns passed (negative: no limit). *out_done
 * says which. */
hrx_status_t hrx_completion_wait(hrx_completion_t* completion,
                                 int64_t timeout_ns, bool* out_done);
/* NULL when done and no callback failed; a copy of the first callback
 * failure; FAILED_PRECONDITION while not done. */
hrx_status_t hrx_completion_result(hrx_completion_t* completion);
/* For a failing callback, before it returns its status: attaches a payload
 * (e.g. the exception a binding captured) to the failure. Kept if this is the
 * launch's first failure, else freed at once with payload_free. */
void hrx_completion_attach_payload(hrx_completion_t* completion,
                                   void* payload,
                                   void (*payload_free)(void* payload));
/* The first failure's payload (borrowed; valid while the completion is), or
 * NULL. */
void* hrx_completion_payload(hrx_completion_t* completion);
/* For a binding's garbage collector: calls visit(user_data, arg) for every
 * host node of the launched graph, in recording order, but only while the
 * launch holds the graph's only reference (no handle and no other launch
 * holds it), so that the user data is kept alive by this completion alone
 * (see hrx_graph_visit_host_data). Stops at the first non-zero result and
 * returns it; 0 otherwise. */
int hrx_completion_visit_host_data(hrx_completion_t* completion,
                                   int (*visit)(void* user_data, void* arg),
                                   void* arg);

/* Orders the stream's later work after the completion: until it is done,
 * every later submission, record_event and synchronize on the stream first
 * waits for it on the host (blocks). A completion is host-side, so it may
 * come from a launch on any device. hrx_stream_synchronize and
 * hrx_stream_read_blocking wait for it with their wait hook; before other
 * calls a binding that must stay interruptible calls
 * hrx_stream_wait_completions. */
hrx_status_t hrx_stream_wait_completion(hrx_stream_t* stream,
                                        hrx_completion_t* completion);
/* Blocks until every completion hrx_stream_wait_completion named for the
 * stream is done (wait hook: see "waits" above). In non-blocking mode
 * (below) it reports WOULD_BLOCK instead of waiting. */
hrx_status_t hrx_stream_wait_completions(hrx_stream_t* stream,
                                         const hrx_wait_hook_t* hook,
                                         bool* out_interrupted);

/* --------------------------------------------------------- non-blocking */

/* Sets the calling thread's non-blocking submission mode; returns the
 * previous setting. For bindings that hold a global lock around calls
 * (Python's GIL): they submit with the lock held in this mode and release
 * the lock only to repeat a call that reported HRX_STATUS_WOULD_BLOCK.
 *
 * While it is on, the submissions hrx_stream_copy, _fill, _upload,
 * _wait_event, _record_event, _record_timing_event, _read, _flush and
 * hrx_graph_launch either finish without waiting for another thread or
 * return HRX_STATUS_WOULD_BLOCK before anything is submitted, counted or
 * changed; the same call made again with the mode off then does the work.
 * They report it when the call would wait for queue space, for a lock that
 * a producer may hold while it waits, for a completion named by
 * hrx_stream_wait_completion, for host callbacks in flight (which may need
 * the caller's global lock), for another thread's publication of the
 * stream's pending batch, for one-time preparation (a graph's first
 * launch, staging memory to allocate, the batch kernel), or for a graph's
 * launch node by node (which could find the queue full part-way). The
 * waits hrx_stream_synchronize, hrx_event_synchronize and
 * hrx_readback_wait, and hrx_stream_wait_completions, return at once when
 * their work is done and report WOULD_BLOCK otherwise.
 * hrx_status_would_block_briefly says which WOULD_BLOCKs are usually over
 * within microseconds. A WOULD_BLOCK is never a stream failure: the
 * command was not accepted, not numbered and not counted. Other calls that
 * may block also report it at their start while host callbacks are in
 * flight; past that they ignore the mode.
 *
 * Releases made in this mode never wait: the last release of a buffer,
 * stream, graph or completion, and a device's teardown, are handed to the
 * device's cleanup thread (which runs them soon after); a read's release
 * does not wait for the read (its staging memory is returned once the
 * read completes, as hrx_readback_release_deferred). */
bool hrx_thread_set_nonblocking(bool nonblocking);

/* In non-blocking mode a small command (a copy, fill or kernel launch that
 * joins its stream's pending batch) that fills the batch leaves it pending
 * instead of publishing it, because publishing a full batch is the one long
 * part of such a command. This says whether the calling thread's last such
 * submission did so (and clears the note): the binding then releases its
 * global lock and calls hrx_stream_publish_batch on that stream. Left
 * alone, the batch goes out with the stream's next command or at the
 * batch delay. */
bool hrx_thread_take_full_batch(void);

/* Whether host callbacks (hrx_host_fn_t) are queued or running anywhere in
 * the process. Never waits. While they are, a thread that holds a lock a
 * callback may need (Python's GIL) must not wait with it held, not even
 * briefly: retrying a non-blocking call cannot succeed before the
 * callbacks ran. */
bool hrx_host_callbacks_in_flight(void);

/* ------------------------------------------------------------------ time */

/* Monotonic nanoseconds, for benchmarks and timeouts. */
uint64_t hrx_now_ns(void);

#ifdef __cplusplus
}
#endif

#endif /* HRX_H_ */
