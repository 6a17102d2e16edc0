/* Launch batches as native graphs: each queue of the hip backend keeps a
 * few straight-line graphs of kernel nodes (one per size tier), made and
 * instantiated the first time a batch needs that size, whose nodes are
 * rewritten for every batch (hipGraphExecKernelNodeSetParams /
 * cudaGraphExecKernelNodeSetParams: function, grid, block, shared memory
 * and argument values) before the graph is launched on the queue's
 * stream. A rewrite does not touch launches of the graph already made, so
 * nothing waits for the device.
 *
 * Sizes: a batch of n launches runs on the smallest tier of at least n
 * nodes with the nodes past n turned off (cudaGraphNodeSetEnabled; a
 * node's state is remembered, so a run of equal batches switches none).
 * Where the runtime cannot turn nodes off (ROCm before 5.3), the batch is
 * cut into exact tiers, largest first, and a single leftover launch goes
 * out as a plain launch.
 *
 * Failure: a graph that cannot be made, rewritten or launched is dropped
 * (made anew next time) and the launches of the batch not yet in a
 * launched graph are reported unpublished, so the caller sends them one by
 * one, and a launch the runtime refuses is named as such.
 *
 * Thread-safe: a queue may be shared by several streams; its graphs are
 * used under a mutex of their own (a launch of the same stream serializes
 * in the runtime anyway). Private to csrc/drivers/hip. */
#ifndef HRX_DRIVERS_HIP_HIP_LAUNCH_GRAPHS_H_
#define HRX_DRIVERS_HIP_HIP_LAUNCH_GRAPHS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "hal/device.h"
#include "hip_types.h"

typedef struct hrx_hip_launch_graphs_s hrx_hip_launch_graphs_t;

/* Whether the runtime has everything launch graphs need (graphs, kernel
 * nodes, instantiation, launch, node rewrites). */
bool hrx_hip_launch_graphs_supported(void);

/* A queue's set, empty (graphs come with the first batches); NULL when
 * out of memory. */
hrx_hip_launch_graphs_t* hrx_hip_launch_graphs_create(void);
/* Frees the graphs; the device is current and the queue's work is done. */
void hrx_hip_launch_graphs_destroy(hrx_hip_launch_graphs_t* graphs);

/* Publishes commands[0..count) (HRX_BATCH_LAUNCH, count >= 2) on `stream`
 * as graph launches, in order. NULL when all were published; otherwise
 * the failure, with *out_published the launches that went out in graphs
 * launched before it (the rest were not published). The device is
 * current. */
hrx_status_t hrx_hip_launch_graphs_submit(hrx_hip_launch_graphs_t* graphs,
                                          hrx_hip_stream_t stream,
                                          const hrx_batch_command_t* commands,
                                          uint32_t count,
                                          uint32_t* out_published);

/* Whether a batch of `count` launches finds every graph it needs
 * instantiated already: otherwise submitting it makes one first, a
 * one-time cost of about 4 µs a node that a caller in non-blocking mode
 * does not pay with its lock held. */
bool hrx_hip_launch_graphs_ready(hrx_hip_launch_graphs_t* graphs,
                                 uint32_t count);

/* device.info's launch_publication for this runtime: how a batch of
 * launches is published (the tiers' sizes, whether nodes are turned off),
 * or why each launch is its own native launch. */
void hrx_hip_launch_graphs_describe(char* text, size_t capacity);

#endif /* HRX_DRIVERS_HIP_HIP_LAUNCH_GRAPHS_H_ */
