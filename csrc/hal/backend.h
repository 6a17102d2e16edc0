/* The native-queue interface every backend implements.
 *
 * The core owns all policy (the pool, streams, publication, validation);
 * a backend only translates these calls into its runtime's and its errors
 * into hrx_status_t. Arguments reaching a backend have been validated by the
 * core: pointers are in bounds, lengths are non-zero, copies do not overlap.
 *
 * Threading: every entry point may be called from any thread, concurrently,
 * including on the same queue. A backend never calls back into the core and
 * never touches Python.
 *
 * Non-blocking mode (core/nonblocking.h, read with hrx_nonblocking()): when
 * the calling thread is in it, a command (copy, fill, upload, download,
 * queue_wait_event, queue_host_call, batch_submit, graph_launch, a timing
 * event_record) that would wait for queue space, staging memory or a
 * one-time native allocation returns HRX_STATUS_WOULD_BLOCK having
 * submitted nothing.
 */
#ifndef HRX_HAL_BACKEND_H_
#define HRX_HAL_BACKEND_H_

#include "hrx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hrx_backend_vtable_s hrx_backend_vtable_t;

/* A backend's device. Backends embed this as their struct's first member. */
typedef struct hrx_backend_device_s {
  const hrx_backend_vtable_t* vtable;
} hrx_backend_device_t;

/* Opaque per-backend objects. */
typedef struct hrx_native_queue_s hrx_native_queue_t;
typedef struct hrx_native_event_s hrx_native_event_t;

/* Static description of a backend: how to load it and open its devices. */
typedef struct hrx_backend_s {
  const char* name;
  /* Loads the runtime once per process (thread-safe, idempotent) and returns
   * the number of devices. A failure explains why the backend is unusable:
   * UNAVAILABLE with the loader's or runtime's message. `opening`: the load
   * is made to open a device (hrx_backend_select), not to list or probe; a
   * runtime that reads process settings only when it starts (hip: the
   * connection budget) gets them applied first, and only then. */
  hrx_status_t (*load)(bool opening, int* out_device_count);
  /* Opens device `index` (already checked against the count). */
  hrx_status_t (*device_open)(int index, hrx_backend_device_t** out_device);
  /* Optional (NULL: nothing to add): fills the parts of
   * hrx_backend_query_info beyond the zeroed defaults. Never loads. */
  void (*describe)(hrx_backend_info_t* out_info);
  /* Whether a host function run by queue_host_call may itself call the
   * runtime (query an event, ask for free memory). False where the runtime
   * forbids runtime calls inside host functions (cudaLaunchHostFunc and
   * hipLaunchHostFunc do: such a call fails, e.g. with
   * cudaErrorNotPermitted); the core then refuses the queries that reach the
   * runtime inside host callbacks (entry.h). */
  bool host_functions_may_call_runtime;
} hrx_backend_t;

/* The backend device under a live device (borrowed; lives as long as the
 * device). Defined by the core, for the benchmark driver's raw baseline,
 * which drives native queues of the device directly. */
hrx_backend_device_t* hrx_device_backend(hrx_device_t* device);

extern const hrx_backend_t hrx_host_backend;
extern const hrx_backend_t hrx_hip_backend;

/* The timeout of a wait that lasts until the work is done (queue_wait,
 * event_wait). */
#define HRX_WAIT_FOREVER UINT64_MAX

/* A host function queued on a native queue (queue_host_call). */
typedef void (*hrx_queue_host_fn_t)(void* user_data);

/* ---------------------------------------------------------------- kernels
 *
 * A backend that runs kernels compiles source into an image, loads images
 * as modules, looks kernels up by name and launches them on a queue. The
 * core owns everything above that: the kernel cache (memory and disk),
 * argument checks against hrx_kernel_info_t and the device's limits, the
 * stream rules. */
typedef struct hrx_native_module_s hrx_native_module_t;
typedef struct hrx_native_kernel_s hrx_native_kernel_t;

/* The most arguments one launch passes, and the most bytes of argument
 * values (the parameter-space limit every HIP and CUDA version accepts). */
#define HRX_KERNEL_MAX_ARGS 128
#define HRX_KERNEL_MAX_ARG_BYTES 4096

/* What compiles kernels for a device: written into the kernel cache key,
 * and named in messages. Every field is a NUL-terminated string. */
typedef struct hrx_kernel_toolchain_s {
  char language[16];      /* source language: "cuda", "hip", "c" */
  char compiler[256];     /* the compiler and its version, e.g.
                             "libnvrtc.so.13 13.0", "/usr/bin/cc gcc 12.2.0" */
  char target[64];        /* what images are for: "sm_90", "gfx1151",
                             "host-x86_64" */
  char image_format[16];  /* what kernel_compile makes and module_load
                             takes: "cubin", "ptx", "hsaco", "elf" */
} hrx_kernel_toolchain_t;

/* A kernel as its module describes it. */
typedef struct hrx_kernel_info_s {
  /* The parameters' count, byte offsets and sizes in the kernel's
   * parameter block, where the runtime can tell them; param_count is -1
   * (offsets and sizes zero) where it cannot. */
  int param_count;
  uint32_t param_offset[HRX_KERNEL_MAX_ARGS];
  uint32_t param_size[HRX_KERNEL_MAX_ARGS];
  /* The most threads one block of this kernel may have (its registers can
   * make it lower than the device's limit). */
  uint32_t max_threads_per_block;
  /* Shared memory the kernel declares statically, and the most dynamic
   * shared memory one launch may ask for beyond it. */
  uint64_t static_shared_bytes;
  uint64_t max_dynamic_shared_bytes;
} hrx_kernel_info_t;

/* One launch. The core has checked the dimensions (each in [1, the
 * device's limit], the block's product within the kernel's
 * max_threads_per_block), shared_bytes against max_dynamic_shared_bytes
 * and, where param_count >= 0, the argument count and sizes. */
typedef struct hrx_kernel_launch_s {
  uint32_t grid[3];
  uint32_t block[3];
  uint64_t shared_bytes;      /* dynamic shared memory per block */
  uint32_t arg_count;         /* <= HRX_KERNEL_MAX_ARGS */
  /* args[i] points at argument i's value, arg_sizes[i] bytes (the sizes add
   * up to at most HRX_KERNEL_MAX_ARG_BYTES). Borrowed for the call only: a
   * backend copies the values before it returns. */
  const void* const* args;
  const uint32_t* arg_sizes;
} hrx_kernel_launch_t;

/* A native graph (graph_create) and the description it is built from. */
typedef struct hrx_native_graph_s hrx_native_graph_t;

typedef enum hrx_native_graph_node_kind_e {
  HRX_NATIVE_GRAPH_COPY,  /* device to device, like copy() */
  HRX_NATIVE_GRAPH_FILL,  /* like fill() */
  HRX_NATIVE_GRAPH_KERNEL,  /* like kernel_launch() */
} hrx_native_graph_node_kind_t;

typedef struct hrx_native_graph_node_s {
  hrx_native_graph_node_kind_t kind;
  void* dst;
  const void* src;        /* COPY */
  uint64_t length;
  uint8_t byte;           /* FILL */
  hrx_native_kernel_t* kernel;         /* KERNEL: borrowed; its module stays
                                          loaded while the graph exists */
  const hrx_kernel_launch_t* launch;   /* KERNEL: borrowed for graph_create */
  const uint32_t* after;  /* borrowed: indices of earlier entries */
  uint32_t after_count;
} hrx_native_graph_node_t;

/* One command of a batch (see batch_submit): a copy or a fill the core has
 * validated, as it would pass it to copy() or fill(). */
typedef enum hrx_batch_kind_e {
  HRX_BATCH_COPY = 0,
  HRX_BATCH_FILL = 1,
} hrx_batch_kind_t;

typedef struct hrx_batch_command_s {
  void* dst;
  const void* src;   /* HRX_BATCH_COPY only */
  uint64_t length;   /* > 0 */
  uint8_t kind;      /* hrx_batch_kind_t */
  uint8_t byte;      /* HRX_BATCH_FILL only */
} hrx_batch_command_t;

/* The most commands one batch_submit call receives. It matches the copy
 * kernel's parameter block (hip/hip_batch_kernel.h), which must fit the
 * 4 KiB kernel-argument limit every HIP and CUDA version accepts. */
#define HRX_BATCH_MAX_COMMANDS 160

/* The most bytes one command of a batch moves. The hip copy kernel gives a
 * command one block per 16 KiB along grid y, whose limit is 65535 on every
 * HIP and CUDA device; larger commands are never batched (the core clamps
 * HRX_BATCH_MAX_COPY_BYTES to this, and a backend sends a larger one
 * natively). */
#define HRX_BATCH_MAX_COMMAND_BYTES (65535ull * 16384ull)

/* How a queue is used, for backends that schedule their queues themselves
 * (queue_create's flags). */
typedef enum hrx_native_queue_flags_e {
  /* The queue of one reserved stream, never shared with pool streams: a
   * backend that serves queues with a fixed set of executors gives it an
   * executor of its own when one is free (host: host_engines.h). A runtime
   * whose hardware connections are assigned by the runtime (hip) has
   * nothing to map it to and ignores it. */
  HRX_NATIVE_QUEUE_RESERVED = 1u << 0,
} hrx_native_queue_flags_t;

struct hrx_backend_vtable_s {
  /* Frees the device. Every queue and event of it has been destroyed and
   * every allocation freed before this is called. */
  void (*destroy)(hrx_backend_device_t* device);
  hrx_status_t (*query_info)(hrx_backend_device_t* device,
                             hrx_device_info_t* out_info);
  hrx_status_t (*query_free_memory)(hrx_backend_device_t* device,
                                    uint64_t* out_free_bytes);

  /* Queues. queue_create makes a queue of a priority lane
   * (hrx_stream_priority_t, already validated; HRX_STREAM_PRIORITY_NORMAL
   * for a queue outside the lanes) with `flags` (hrx_native_queue_flags_t,
   * or 0) and writes the runtime's own priority value the queue got to
   * *out_native_priority (0 where the runtime has none). A refused queue
   * (capacity) is RESOURCE_EXHAUSTED carrying the runtime's message, and
   * leaves nothing behind. queue_destroy first waits for the queue's
   * submitted work. */
  hrx_status_t (*queue_create)(hrx_backend_device_t* device, int priority,
                               uint32_t flags, hrx_native_queue_t** out_queue,
                               int* out_native_priority);
  void (*queue_destroy)(hrx_backend_device_t* device, hrx_native_queue_t* queue);
  /* How much submitted work is still pending on the queue: the exact number
   * of pending native commands if the backend can count them, else 0 when
   * the queue is idle and UINT64_MAX when it is busy (or when unsure).
   * Never blocks; also the batching policy's idle test. */
  hrx_status_t (*queue_query)(hrx_backend_device_t* device,
                              hrx_native_queue_t* queue,
                              uint64_t* out_pending);
  /* The hardware connection budget (hrx.h, hrx_connection_budget_t). The
   * core calls plan_connections with what the pool wants while the pool
   * size may still change; a backend applies it when it creates its native
   * context (never before), respecting a value the user set. */
  void (*plan_connections)(hrx_backend_device_t* device, int wanted);
  void (*query_connections)(hrx_backend_device_t* device,
                            hrx_connection_budget_t* out_budget);
  void* (*queue_native_handle)(hrx_native_queue_t* queue);

  /* Device memory. free() does not return the memory until no work
   * submitted before the call, on any queue, can still touch it (it may
   * block until then, as cudaFree and hipFree do). */
  hrx_status_t (*alloc)(hrx_backend_device_t* device, uint64_t size,
                        void** out_ptr);
  void (*free)(hrx_backend_device_t* device, void* ptr);
  /* Host memory the device can transfer to and from asynchronously (pinned
   * on GPUs). The core calls host_free only once no submitted work can
   * still touch the memory (its read staging is pooled, staging.h), so a
   * backend need not wait for anything. */
  hrx_status_t (*host_alloc)(hrx_backend_device_t* device, uint64_t size,
                             void** out_ptr);
  void (*host_free)(hrx_backend_device_t* device, void* ptr);

  /* Asynchronous commands, executed in submission order on the queue. A
   * command is published once the call returns successfully; on failure
   * nothing was submitted. */
  hrx_status_t (*copy)(hrx_backend_device_t* device, hrx_native_queue_t* queue,
                       void* dst, const void* src, uint64_t length);
  hrx_status_t (*fill)(hrx_backend_device_t* device, hrx_native_queue_t* queue,
                       void* dst, uint8_t byte, uint64_t length);
  /* host_src is borrowed only for the duration of the call: the backend
   * copies or stages it before returning. */
  hrx_status_t (*upload)(hrx_backend_device_t* device,
                         hrx_native_queue_t* queue, void* dst,
                         const void* host_src, uint64_t length);
  /* The same from host memory that comes from host_alloc and stays valid
   * and unchanged until the command is done: an asynchronous host-to-device
   * copy of it, with no staging copy (paced uploads, pacing.h). May be
   * NULL: the core uses upload instead. */
  hrx_status_t (*upload_pinned)(hrx_backend_device_t* device,
                                hrx_native_queue_t* queue, void* dst,
                                const void* host_src, uint64_t length);
  /* host_dst comes from host_alloc and stays valid until the command is
   * done. */
  hrx_status_t (*download)(hrx_backend_device_t* device,
                           hrx_native_queue_t* queue, void* host_dst,
                           const void* src, uint64_t length);

  /* Events. event_record makes the event complete once the work submitted
   * to the queue so far is done (it records at the queue's current end). It
   * must not wait for space in the queue. queue_wait_event makes later work on the queue wait
   * on the device for the event's last record. */
  hrx_status_t (*event_create)(hrx_backend_device_t* device,
                               hrx_native_event_t** out_event);
  void (*event_destroy)(hrx_backend_device_t* device, hrx_native_event_t* event);
  hrx_status_t (*event_record)(hrx_backend_device_t* device,
                               hrx_native_queue_t* queue,
                               hrx_native_event_t* event);
  hrx_status_t (*queue_wait_event)(hrx_backend_device_t* device,
                                   hrx_native_queue_t* queue,
                                   hrx_native_event_t* event);
  hrx_status_t (*event_query)(hrx_backend_device_t* device,
                              hrx_native_event_t* event, bool* out_done);

  /* Batches (optional; NULL means the core publishes each command with
   * copy() or fill()). Publishes commands[0..count) as few native operations
   * as the backend can (host: one ring slot; hip: one copy-kernel launch),
   * executed in order, after the queue's earlier work. count is in
   * [2, HRX_BATCH_MAX_COMMANDS]. On failure *out_published (never NULL) is
   * the number of leading commands that were published anyway; the others
   * were not. It may wait for queue space like copy(). */
  hrx_status_t (*batch_submit)(hrx_backend_device_t* device,
                               hrx_native_queue_t* queue,
                               const hrx_batch_command_t* commands,
                               uint32_t count,
                               uint32_t* out_published);

  /* Host functions. fn(user_data) runs on a host thread once the queue's
   * earlier work is done, and the queue's later work starts after it has
   * returned. fn never calls back into the backend. Required. */
  hrx_status_t (*queue_host_call)(hrx_backend_device_t* device,
                                  hrx_native_queue_t* queue,
                                  hrx_queue_host_fn_t fn, void* user_data);

  /* Native graphs: optional (all three NULL when the backend has none; the
   * core then submits a graph's nodes in a topological order).
   * graph_create builds and instantiates a graph of `count` nodes given in a
   * topological order (each `after` names earlier entries); UNAVAILABLE when
   * the runtime in use lacks graphs, and the core falls back. graph_launch
   * runs it once on the queue, in order with the queue's other work.
   * graph_destroy waits until no launch of it can still run, then frees it. */
  hrx_status_t (*graph_create)(hrx_backend_device_t* device,
                               const hrx_native_graph_node_t* nodes,
                               size_t count, hrx_native_graph_t** out_graph);
  hrx_status_t (*graph_launch)(hrx_backend_device_t* device,
                               hrx_native_queue_t* queue,
                               hrx_native_graph_t* graph);
  void (*graph_destroy)(hrx_backend_device_t* device,
                        hrx_native_graph_t* graph);

  /* Waits: queue_wait for everything submitted to the queue so far,
   * event_wait for the event's last record, each for at most about
   * timeout_ns, then *out_done says whether the work was done (a timeout
   * cancels nothing). HRX_WAIT_FOREVER waits until it is done. Callers
   * wait in slices to handle signals between them; a backend sleeps rather
   * than spins for a long timeout. queue_wait may report not done before
   * its timeout where the runtime cannot query a queue (the caller then
   * waits on an event it records), but never with HRX_WAIT_FOREVER. */
  hrx_status_t (*queue_wait)(hrx_backend_device_t* device,
                             hrx_native_queue_t* queue, uint64_t timeout_ns,
                             bool* out_done);
  hrx_status_t (*event_wait)(hrx_backend_device_t* device,
                             hrx_native_event_t* event, uint64_t timeout_ns,
                             bool* out_done);

  /* Timing events (optional: both or neither). event_create_timing makes
   * an event that also notes when the work before each record completed
   * (hip: an event created with timing; host: each record is a command
   * that reads the worker's clock, so it may wait for queue space).
   * event_elapsed_ms: milliseconds between two such events' last records;
   * FAILED_PRECONDITION when either was never recorded or is not complete
   * (it never waits). */
  hrx_status_t (*event_create_timing)(hrx_backend_device_t* device,
                                      hrx_native_event_t** out_event);
  hrx_status_t (*event_elapsed_ms)(hrx_backend_device_t* device,
                                   hrx_native_event_t* start,
                                   hrx_native_event_t* end, double* out_ms);

  /* Kernels (optional: all six, or none; NULL where the backend runs no
   * kernels, and the core refuses them with UNAVAILABLE).
   *
   * kernel_toolchain describes the compiler kernel_compile would use,
   * without compiling; UNAVAILABLE when there is none, saying what was
   * looked for and how to point hrx at one. kernel_compile compiles
   * `source` with `options` (passed through to the compiler, in order) into
   * an image (malloc'ed, *out_size bytes; the caller frees it) that defines
   * at least the kernels in names[0..name_count) (the names the caller will
   * look up; a backend may generate per-kernel code from them). A source the
   * compiler rejects is INVALID_ARGUMENT whose message carries the
   * compiler's own log. May block for as long as the compiler runs.
   *
   * module_load loads an image (a kernel_compile image, or one the user
   * built offline in the toolchain's image_format; the backend keeps no
   * pointer into `image`). An image the runtime cannot load (corrupt, of
   * another architecture or format) is INVALID_ARGUMENT with the runtime's
   * message; nothing stays loaded. module_unload waits until no launch of
   * the module's kernels can still run, then unloads it (its kernels go
   * with it). module_get_kernel looks a kernel up by its symbol name
   * (INVALID_ARGUMENT naming it when the module defines none) and
   * describes it; the kernel is borrowed from the module.
   *
   * kernel_launch is an asynchronous command like copy(): in order with
   * the queue's other work, published once the call returns successfully,
   * nothing submitted on failure; it may wait for queue space like copy()
   * (and reports WOULD_BLOCK in non-blocking mode instead). A kernel that
   * faults on the device fails later work of the runtime's context the way
   * the runtime reports it; a launch the runtime refuses at the call is a
   * failed command (its status is returned). */
  hrx_status_t (*kernel_toolchain)(hrx_backend_device_t* device,
                                   hrx_kernel_toolchain_t* out_toolchain);
  hrx_status_t (*kernel_compile)(hrx_backend_device_t* device,
                                 const char* source,
                                 const char* const* names, size_t name_count,
                                 const char* const* options,
                                 size_t option_count, void** out_image,
                                 size_t* out_size);
  hrx_status_t (*module_load)(hrx_backend_device_t* device, const void* image,
                              size_t size, hrx_native_module_t** out_module);
  void (*module_unload)(hrx_backend_device_t* device,
                        hrx_native_module_t* module);
  hrx_status_t (*module_get_kernel)(hrx_backend_device_t* device,
                                    hrx_native_module_t* module,
                                    const char* name,
                                    hrx_native_kernel_t** out_kernel,
                                    hrx_kernel_info_t* out_info);
  hrx_status_t (*kernel_launch)(hrx_backend_device_t* device,
                                hrx_native_queue_t* queue,
                                hrx_native_kernel_t* kernel,
                                const hrx_kernel_launch_t* launch);

  /* Optional: makes a native stream of the runtime that the backend did
   * not create (a handle another library made, or a special handle of the
   * runtime, NULL included) wait on the device for the event's last
   * record. NULL where the backend has no such streams (host). */
  hrx_status_t (*foreign_stream_wait_event)(hrx_backend_device_t* device,
                                            void* foreign_stream,
                                            hrx_native_event_t* event);

  /* Copies between devices of the backend (optional: both or neither;
   * NULL where the backend cannot, and the core refuses such copies).
   * Devices are named by index; `other` is never the device's own.
   * peer_path: how copies on queues of `device` reach memory of device
   * `other` (hrx_peer_path_t). peer_copy: copies `length` bytes from `src`
   * (memory of device src_index) to `dst` (device dst_index) on `queue`,
   * in order with its other work; one of the two indices is the device's
   * own. For HRX_PEER_PATH_STAGED the core passes `staging`, at least
   * `length` bytes from the device's host_alloc that it keeps until the
   * copy is done; otherwise NULL. queue_wait_event and event_query accept
   * events of the backend's other devices too. */
  hrx_status_t (*peer_path)(hrx_backend_device_t* device, int other,
                            hrx_peer_path_t* out_path);
  hrx_status_t (*peer_copy)(hrx_backend_device_t* device,
                            hrx_native_queue_t* queue, void* dst,
                            int dst_index, const void* src, int src_index,
                            uint64_t length, void* staging);
};

#ifdef __cplusplus
}
#endif

#endif /* HRX_HAL_BACKEND_H_ */
