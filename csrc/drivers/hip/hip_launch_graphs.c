/* Launch batches as native graphs (hip_launch_graphs.h). */
#include "hip_launch_graphs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/batch.h"
#include "hip_dynamic.h"
#include "hip_kernels.h"

/* The node counts of the tiers, ascending; the last is the most a batch
 * holds. */
static const uint32_t hrx_hip_launch_tier_nodes[] = {
    2, 4, 8, 16, 32, 64, 128, HRX_BATCH_MAX_COMMANDS};
enum {
  HRX_HIP_LAUNCH_TIERS =
      sizeof(hrx_hip_launch_tier_nodes) / sizeof(hrx_hip_launch_tier_nodes[0])
};

/* What an instantiated node runs, as last written into the exec: a
 * launch equal to it (the same kernel handle, grid, block, shared memory
 * and argument bytes, with no module unloaded since) leaves the node as it
 * is. A repeated batch, such as one step of a loop whose arguments change
 * in a few launches, so rewrites only the nodes that changed: each rewrite
 * costs host time at the call and makes the next graph launch carry the
 * node's new parameters to the device. */
typedef struct hrx_hip_launch_node_s {
  hrx_native_kernel_t* kernel;     /* NULL: not known, rewrite */
  uint64_t unloads;                /* hrx_hip_module_unloads() then */
  uint32_t grid[3];
  uint32_t block[3];
  uint64_t shared_bytes;
  uint32_t arg_count;
  uint32_t bytes;                  /* of `args` in use */
  uint32_t capacity;               /* of `args` */
  uint8_t* args;                   /* owned: each argument's size, then its
                                      value */
} hrx_hip_launch_node_t;

/* One tier: a chain of `nodes` kernel nodes and its instantiation. */
typedef struct hrx_hip_launch_tier_s {
  hrx_hip_graph_t graph;           /* NULL until made */
  hrx_hip_graph_exec_t exec;
  hrx_hip_graph_node_t* node;      /* `nodes` of them */
  hrx_hip_launch_node_t* held;     /* `nodes` of them: what each runs */
  uint32_t enabled;                /* nodes [0, enabled) are on */
} hrx_hip_launch_tier_t;

struct hrx_hip_launch_graphs_s {
  pthread_mutex_t mutex;           /* guards the tiers */
  hrx_hip_launch_tier_t tier[HRX_HIP_LAUNCH_TIERS];
};

bool hrx_hip_launch_graphs_supported(void) {
  const hrx_hip_symbols_t* sym = &hrx_hip_rt.sym;
  return sym->GraphCreate && sym->GraphAddKernelNode &&
         sym->GraphInstantiateWithFlags && sym->GraphLaunch &&
         sym->GraphExecDestroy && sym->GraphDestroy &&
         sym->GraphExecKernelNodeSetParams;
}

hrx_hip_launch_graphs_t* hrx_hip_launch_graphs_create(void) {
  hrx_hip_launch_graphs_t* graphs = calloc(1, sizeof(*graphs));
  if (graphs) pthread_mutex_init(&graphs->mutex, NULL);
  return graphs;
}

/* Whether node record `held` runs `kernel` with `launch` already. */
static bool hrx_hip_launch_node_holds(const hrx_hip_launch_node_t* held,
                                      hrx_native_kernel_t* kernel,
                                      const hrx_kernel_launch_t* launch) {
  if (!held->kernel || held->kernel != kernel ||
      held->unloads != hrx_hip_module_unloads() ||
      held->arg_count != launch->arg_count ||
      held->shared_bytes != launch->shared_bytes ||
      memcmp(held->grid, launch->grid, sizeof(held->grid)) != 0 ||
      memcmp(held->block, launch->block, sizeof(held->block)) != 0) {
    return false;
  }
  const uint8_t* at = held->args;
  const uint8_t* end = held->args + held->bytes;
  for (uint32_t i = 0; i < launch->arg_count; ++i) {
    uint32_t size = launch->arg_sizes[i];
    uint32_t held_size = 0;
    if ((size_t)(end - at) < sizeof(held_size) + size) return false;
    memcpy(&held_size, at, sizeof(held_size));
    at += sizeof(held_size);
    if (held_size != size || memcmp(at, launch->args[i], size) != 0) {
      return false;
    }
    at += size;
  }
  return at == end;
}

/* Records that the node now runs `kernel` with `launch`; where the record
 * cannot grow, it is left unknown (the next batch rewrites the node). */
static void hrx_hip_launch_node_remember(hrx_hip_launch_node_t* held,
                                         hrx_native_kernel_t* kernel,
                                         const hrx_kernel_launch_t* launch) {
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < launch->arg_count; ++i) {
    bytes += sizeof(uint32_t) + launch->arg_sizes[i];
  }
  held->kernel = NULL;
  if (bytes > held->capacity) {
    uint8_t* grown = realloc(held->args, bytes);
    if (!grown) return;
    held->args = grown;
    held->capacity = (uint32_t)bytes;
  }
  uint8_t* at = held->args;
  for (uint32_t i = 0; i < launch->arg_count; ++i) {
    uint32_t size = launch->arg_sizes[i];
    memcpy(at, &size, sizeof(size));
    memcpy(at + sizeof(size), launch->args[i], size);
    at += sizeof(size) + size;
  }
  held->bytes = (uint32_t)bytes;
  held->arg_count = launch->arg_count;
  held->shared_bytes = launch->shared_bytes;
  memcpy(held->grid, launch->grid, sizeof(held->grid));
  memcpy(held->block, launch->block, sizeof(held->block));
  held->unloads = hrx_hip_module_unloads();
  held->kernel = kernel;
}

static void hrx_hip_launch_tier_drop(hrx_hip_launch_tier_t* tier,
                                     uint32_t nodes) {
  const hrx_hip_symbols_t* sym = &hrx_hip_rt.sym;
  if (tier->exec) (void)hrx_hip_ok(sym->GraphExecDestroy(tier->exec));
  if (tier->graph) (void)hrx_hip_ok(sym->GraphDestroy(tier->graph));
  for (uint32_t i = 0; tier->held && i < nodes; ++i) free(tier->held[i].args);
  free(tier->held);
  free(tier->node);
  *tier = (hrx_hip_launch_tier_t){0};
}

void hrx_hip_launch_graphs_destroy(hrx_hip_launch_graphs_t* graphs) {
  if (!graphs) return;
  for (int i = 0; i < HRX_HIP_LAUNCH_TIERS; ++i) {
    hrx_hip_launch_tier_drop(&graphs->tier[i], hrx_hip_launch_tier_nodes[i]);
  }
  pthread_mutex_destroy(&graphs->mutex);
  free(graphs);
}

/* Makes tier `t`'s chain, every node running `first` (rewritten before
 * the launches that need it otherwise), and instantiates it with every
 * node on. Its node records start unknown. */
static hrx_status_t hrx_hip_launch_tier_make(hrx_hip_launch_graphs_t* graphs,
                                             int t,
                                             const hrx_batch_command_t* first) {
  const hrx_hip_symbols_t* sym = &hrx_hip_rt.sym;
  hrx_hip_launch_tier_t* tier = &graphs->tier[t];
  uint32_t nodes = hrx_hip_launch_tier_nodes[t];
  tier->node = calloc(nodes, sizeof(*tier->node));
  tier->held = calloc(nodes, sizeof(*tier->held));
  if (!tier->node || !tier->held) {
    hrx_hip_launch_tier_drop(tier, nodes);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a launch graph of %u nodes",
                           nodes);
  }
  hrx_hip_error_t err = sym->GraphCreate(&tier->graph, 0);
  if (!hrx_hip_ok(err)) {
    tier->graph = NULL;
    hrx_hip_launch_tier_drop(tier, nodes);
    return HRX_HIP_ERROR(RESOURCE_EXHAUSTED, GraphCreate, err);
  }
  for (uint32_t i = 0; i < nodes; ++i) {
    hrx_status_t status = hrx_hip_graph_add_kernel_node(
        tier->graph, i ? &tier->node[i - 1] : NULL, i ? 1 : 0, first->kernel,
        first->launch, &tier->node[i]);
    if (status) {
      hrx_hip_launch_tier_drop(tier, nodes);
      return status;
    }
  }
  err = sym->GraphInstantiateWithFlags(&tier->exec, tier->graph, 0);
  if (!hrx_hip_ok(err)) {
    tier->exec = NULL;
    hrx_hip_launch_tier_drop(tier, nodes);
    return HRX_HIP_ERROR(RESOURCE_EXHAUSTED, GraphInstantiateWithFlags, err);
  }
  tier->enabled = nodes;
  return NULL;
}

/* Turns nodes [0, count) of the tier on and the rest off, switching only
 * the nodes whose state changes. */
static hrx_status_t hrx_hip_launch_tier_enable(hrx_hip_launch_tier_t* tier,
                                               uint32_t count) {
  const hrx_hip_symbols_t* sym = &hrx_hip_rt.sym;
  while (tier->enabled < count) {
    hrx_hip_error_t err =
        sym->GraphNodeSetEnabled(tier->exec, tier->node[tier->enabled], 1);
    if (!hrx_hip_ok(err)) {
      return HRX_HIP_ERROR(DEVICE_ERROR, GraphNodeSetEnabled, err);
    }
    ++tier->enabled;
  }
  while (tier->enabled > count) {
    hrx_hip_error_t err = sym->GraphNodeSetEnabled(
        tier->exec, tier->node[tier->enabled - 1], 0);
    if (!hrx_hip_ok(err)) {
      return HRX_HIP_ERROR(DEVICE_ERROR, GraphNodeSetEnabled, err);
    }
    --tier->enabled;
  }
  return NULL;
}

/* Runs commands[0..count) (count <= the tier's nodes; equal where nodes
 * cannot be turned off) as one launch of tier `t`. On failure nothing was
 * launched and the tier is dropped. */
static hrx_status_t hrx_hip_launch_tier_run(hrx_hip_launch_graphs_t* graphs,
                                            int t, hrx_hip_stream_t stream,
                                            const hrx_batch_command_t* commands,
                                            uint32_t count) {
  hrx_hip_launch_tier_t* tier = &graphs->tier[t];
  if (!tier->exec) {
    HRX_RETURN_IF_ERROR(hrx_hip_launch_tier_make(graphs, t, &commands[0]));
  }
  hrx_status_t status = NULL;
  if (count != tier->enabled) status = hrx_hip_launch_tier_enable(tier, count);
  for (uint32_t i = 0; i < count && !status; ++i) {
    hrx_hip_launch_node_t* held = &tier->held[i];
    if (hrx_hip_launch_node_holds(held, commands[i].kernel,
                                  commands[i].launch)) {
      continue;
    }
    held->kernel = NULL;  /* unknown until the rewrite went through */
    status = hrx_hip_graph_exec_set_kernel_node(
        tier->exec, tier->node[i], commands[i].kernel, commands[i].launch);
    if (!status) {
      hrx_hip_launch_node_remember(held, commands[i].kernel,
                                   commands[i].launch);
    }
  }
  if (!status) {
    hrx_hip_error_t err = hrx_hip_rt.sym.GraphLaunch(tier->exec, stream);
    if (!hrx_hip_ok(err)) {
      status = HRX_HIP_ERROR(DEVICE_ERROR, GraphLaunch, err);
    }
  }
  if (status) hrx_hip_launch_tier_drop(tier, hrx_hip_launch_tier_nodes[t]);
  return status;
}

/* Whether the runtime can turn an instantiated graph's nodes off. */
static bool hrx_hip_launch_can_disable(void) {
  return hrx_hip_rt.sym.GraphNodeSetEnabled != NULL;
}

/* The next part of a batch of `rest` (>= 1) launches: its tier, or -1 for
 * one plain launch, and in *out_take how many launches it carries. Where
 * nodes can be turned off, the smallest tier that holds them all (the
 * largest if none does); otherwise the largest of at most `rest` nodes. */
static int hrx_hip_launch_part(uint32_t rest, uint32_t* out_take) {
  int t = -1;
  if (hrx_hip_launch_can_disable()) {
    t = 0;
    while (t < HRX_HIP_LAUNCH_TIERS - 1 &&
           hrx_hip_launch_tier_nodes[t] < rest) {
      ++t;
    }
  } else {
    t = HRX_HIP_LAUNCH_TIERS - 1;
    while (t >= 0 && hrx_hip_launch_tier_nodes[t] > rest) --t;
  }
  uint32_t nodes = t < 0 ? 1 : hrx_hip_launch_tier_nodes[t];
  *out_take = nodes < rest ? nodes : rest;
  return t;
}

bool hrx_hip_launch_graphs_ready(hrx_hip_launch_graphs_t* graphs,
                                 uint32_t count) {
  bool ready = true;
  pthread_mutex_lock(&graphs->mutex);
  while (count > 0 && ready) {
    uint32_t take = 0;
    int t = hrx_hip_launch_part(count, &take);
    ready = t < 0 || graphs->tier[t].exec != NULL;
    count -= take;
  }
  pthread_mutex_unlock(&graphs->mutex);
  return ready;
}

hrx_status_t hrx_hip_launch_graphs_submit(hrx_hip_launch_graphs_t* graphs,
                                          hrx_hip_stream_t stream,
                                          const hrx_batch_command_t* commands,
                                          uint32_t count,
                                          uint32_t* out_published) {
  *out_published = 0;
  hrx_status_t status = NULL;
  pthread_mutex_lock(&graphs->mutex);
  while (*out_published < count && !status) {
    const hrx_batch_command_t* part = commands + *out_published;
    uint32_t take = 0;
    int t = hrx_hip_launch_part(count - *out_published, &take);
    status = t < 0
                 ? hrx_hip_kernel_launch(part->kernel, stream, part->launch)
                 : hrx_hip_launch_tier_run(graphs, t, stream, part, take);
    if (!status) *out_published += take;
  }
  pthread_mutex_unlock(&graphs->mutex);
  return status;
}

void hrx_hip_launch_graphs_describe(char* text, size_t capacity) {
  if (!hrx_hip_launch_graphs_supported()) {
    snprintf(text, capacity,
             "gathered like small copies; this runtime cannot rewrite graph "
             "kernel nodes, so each launch of a batch is its own native "
             "launch");
  } else if (hrx_hip_launch_can_disable()) {
    snprintf(text, capacity,
             "gathered like small copies; a batch is one launch of a native "
             "graph of %u to %u kernel nodes, rewritten in place (unused "
             "nodes turned off)",
             hrx_hip_launch_tier_nodes[0],
             hrx_hip_launch_tier_nodes[HRX_HIP_LAUNCH_TIERS - 1]);
  } else {
    snprintf(text, capacity,
             "gathered like small copies; a batch is a few launches of native "
             "graphs of exact sizes (%u to %u kernel nodes), rewritten in "
             "place",
             hrx_hip_launch_tier_nodes[0],
             hrx_hip_launch_tier_nodes[HRX_HIP_LAUNCH_TIERS - 1]);
  }
}
