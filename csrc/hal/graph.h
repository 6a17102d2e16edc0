/* A native graph: nodes with dependencies, built and instantiated once,
 * launched on a queue any number of times. */
#ifndef HRX_HAL_GRAPH_H_
#define HRX_HAL_GRAPH_H_

#include "kernel.h"
#include "objects.h"

typedef enum hrx_native_graph_node_kind_e {
  HRX_NATIVE_GRAPH_COPY,    /* device to device, like a queue's copy() */
  HRX_NATIVE_GRAPH_FILL,    /* like fill() */
  HRX_NATIVE_GRAPH_KERNEL,  /* like a kernel launch (kernel.h) */
} hrx_native_graph_node_kind_t;

typedef struct hrx_native_graph_node_s {
  hrx_native_graph_node_kind_t kind;
  void* dst;
  const void* src;        /* COPY */
  uint64_t length;
  uint8_t byte;           /* FILL */
  hrx_native_kernel_t* kernel;         /* KERNEL: borrowed; its module stays
                                          loaded while the graph exists */
  const hrx_kernel_launch_t* launch;   /* KERNEL: borrowed for create */
  const uint32_t* after;  /* borrowed: indices of earlier entries */
  uint32_t after_count;
} hrx_native_graph_node_t;

/* Optional: all three, or none (the core then submits a graph's nodes in a
 * topological order). */
typedef struct hrx_hal_graph_vtable_s {
  /* Builds and instantiates a graph of `count` nodes given in a topological
   * order (each `after` names earlier entries); UNAVAILABLE when the
   * runtime in use lacks graphs, and the core falls back. */
  hrx_status_t (*create)(hrx_backend_device_t* device,
                         const hrx_native_graph_node_t* nodes, size_t count,
                         hrx_native_graph_t** out_graph);
  /* Runs it once on the queue, in order with the queue's other work. */
  hrx_status_t (*launch)(hrx_backend_device_t* device,
                         hrx_native_queue_t* queue, hrx_native_graph_t* graph);
  /* Waits until no launch of it can still run, then frees it. */
  void (*destroy)(hrx_backend_device_t* device, hrx_native_graph_t* graph);
} hrx_hal_graph_vtable_t;

#endif /* HRX_HAL_GRAPH_H_ */
