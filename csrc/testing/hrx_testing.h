/* The C API of the testing build (HRX_TESTING_BUILD, see setup.py): what
 * the tests observe beyond the public header. Built into the testing
 * extension and the C tests only, never into what `pip install .` gives a
 * user. Fault injection ($HRX_FAULTS) is the other part of that build:
 * drivers/fault/fault_backend.h. */
#ifndef HRX_TESTING_HRX_TESTING_H_
#define HRX_TESTING_HRX_TESTING_H_

#include "hrx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Commands that streams of this live device have accepted since it was
 * opened, whether handed to a native queue at once or gathered into a
 * pending batch: every copy, fill, upload, read (download and its
 * completion event), event wait, event record and graph launch (a
 * completion gate of wait_completion is host state, not a command). A
 * rejected call adds nothing, so tests use it to check that bad input
 * submitted no work. It publishes pending batches first (batched commands
 * are counted once per batch, keeping the submission path free of a
 * device-wide counter).
 * Thread-safe; the benchmark driver's own native calls are not counted. */
uint64_t hrx_device_commands_submitted(hrx_device_t* device);

/* Staging blocks allocated so far in this process (staging.h): by reads
 * and paced uploads, on their path (and by pinned allocations, whose pool
 * is a staging pool too: pinned.h), and by the warm-up of the device's
 * cleanup thread at open. */
void hrx_staging_query_allocations(uint64_t* out_by_reads,
                                   uint64_t* out_by_warm_up);
/* Read staging blocks evicted (freed beyond the cache) so far in this
 * process: by a device's cleanup thread, and at once on a caller's path
 * (pools without a cleanup thread only). */
void hrx_staging_query_evictions(uint64_t* out_by_cleanup,
                                 uint64_t* out_inline);

/* The free blocks of the process's result memory pool now
 * (core/result_memory.h): their bytes and how many. */
void hrx_result_memory_query_pool(uint64_t* out_cached_bytes,
                                  uint64_t* out_blocks);

/* Transfers that copied pinned host memory directly (pinned.h) in this
 * process so far: uploads and reads. */
void hrx_pinned_query_direct(uint64_t* out_uploads, uint64_t* out_reads);

/* Native objects alive through every fault wrapper of the process: created
 * and not yet destroyed or freed. The fault wrapper
 * (drivers/fault/fault_backend.h) keeps them. */
typedef struct hrx_fault_counts_s {
  int64_t queues;
  int64_t events;
  int64_t allocations;       /* alloc */
  int64_t host_allocations;  /* host_alloc */
  int64_t graphs;            /* native graphs (graph_create) */
  int64_t devices;           /* wrapped backend devices */
  int64_t faults_injected;   /* calls failed on purpose so far */
  /* Copies, fills, batches and kernel launches handed to the wrapped
   * backend so far: a
   * batch of N commands is one (so with batching on, commands accepted
   * exceed this). */
  int64_t native_commands;
  int64_t modules;           /* kernel modules loaded (module_load) */
  int64_t kernel_compiles;   /* kernel_compile calls so far (compiler runs) */
} hrx_fault_counts_t;

void hrx_fault_query_counts(hrx_fault_counts_t* out_counts);

#ifdef __cplusplus
}
#endif

#endif /* HRX_TESTING_HRX_TESTING_H_ */
