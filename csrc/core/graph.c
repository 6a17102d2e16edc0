/* Graphs: copies, fills, kernel launches and host callbacks with explicit
 * dependencies, recorded once and launched on streams any number of times.
 *
 * Ownership (acyclic): a graph retains its device and the buffers and
 * kernels of its nodes, owns its nodes, their user data and their launch
 * arguments (copied at recording), and owns its native graph. A
 * launch with host callbacks owns a hrx_graph_launch_t through its
 * completion, which retains the graph; the launching stream keeps the
 * completion until it is done.
 *
 * Locking: `mutex` guards the node list and the seal. Once sealed (first
 * launch) the nodes, the order and the native graph are immutable, so
 * launches read them without the lock. */
#include "graph.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "buffer.h"
#include "completion.h"
#include "live_device.h"
#include "entry.h"
#include "kernel.h"
#include "base/nonblocking.h"
#include "base/status.h"
#include "stream.h"
#include "wait.h"

typedef enum hrx_graph_node_kind_e {
  HRX_GRAPH_NODE_COPY,
  HRX_GRAPH_NODE_FILL,
  HRX_GRAPH_NODE_HOST,
  HRX_GRAPH_NODE_KERNEL,
} hrx_graph_node_kind_t;

struct hrx_graph_node_s {
  hrx_graph_t* graph;            /* borrowed: the owner */
  uint32_t index;                /* recording order */
  hrx_graph_node_kind_t kind;
  hrx_view_t dst;                /* COPY, FILL: buffer retained */
  hrx_view_t src;                /* COPY: buffer retained */
  uint8_t byte;                  /* FILL */
  hrx_host_fn_t fn;              /* HOST */
  void* user_data;               /* HOST: owned via user_data_free */
  void (*user_data_free)(void*);
  hrx_kernel_t* kernel;          /* KERNEL: retained */
  hrx_kernel_launch_t* launch;   /* KERNEL: owned (hrx_kernel_launch_copy) */
  hrx_buffer_t** buffers;        /* KERNEL: owned array of the VIEW
                                    arguments' buffers, each retained */
  uint32_t buffer_count;
  uint32_t* after;               /* owned: indices of dependencies */
  uint32_t after_count;
  uint32_t after_capacity;
};

struct hrx_graph_s {
  atomic_int ref_count;
  hrx_device_t* device;          /* retained */
  pthread_mutex_t mutex;
  hrx_graph_node_t** nodes;      /* owned; each node owned */
  uint32_t count;
  uint32_t capacity;
  uint32_t host_count;           /* HOST nodes */
  atomic_bool sealed;            /* set under mutex at the first launch */
  uint32_t* order;               /* owned; topological order once sealed */
  hrx_native_graph_t* native;    /* owned; NULL: submitted node by node */
};

/* A graph may have at most this many nodes (indices are 32-bit). */
#define HRX_GRAPH_MAX_NODES (1u << 24)

hrx_status_t hrx_graph_create(hrx_device_t* device, hrx_graph_t** out_graph) {
  if (!device) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "device is NULL");
  }
  HRX_RETURN_IF_ERROR(
      hrx_entry_check(device, HRX_ENTRY_QUERY, "creating a graph"));
  hrx_graph_t* graph = calloc(1, sizeof(*graph));
  if (!graph) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY, "cannot allocate graph");
  }
  atomic_init(&graph->ref_count, 1);
  atomic_init(&graph->sealed, false);
  pthread_mutex_init(&graph->mutex, NULL);
  graph->device = device;
  hrx_device_retain_holder(device, HRX_DEVICE_HOLDER_GRAPH);
  *out_graph = graph;
  return NULL;
}

void hrx_graph_retain(hrx_graph_t* graph) {
  if (graph) atomic_fetch_add_explicit(&graph->ref_count, 1,
                                       memory_order_relaxed);
}

static void hrx_graph_node_free(hrx_graph_node_t* node) {
  hrx_buffer_release(node->dst.buffer);
  hrx_buffer_release(node->src.buffer);
  for (uint32_t i = 0; i < node->buffer_count; ++i) {
    hrx_buffer_release(node->buffers[i]);
  }
  free(node->buffers);
  free(node->launch);
  hrx_kernel_release(node->kernel);
  if (node->user_data_free) node->user_data_free(node->user_data);
  free(node->after);
  free(node);
}

static void hrx_graph_release_object(void* graph) {
  hrx_graph_release(graph);
}

void hrx_graph_release(hrx_graph_t* graph) {
  if (!graph ||
      !hrx_entry_release_last(graph->device, &graph->ref_count,
                              hrx_graph_release_object, graph, true)) {
    return;
  }
  hrx_backend_device_t* backend = hrx_device_backend(graph->device);
  /* Waits for launches of the native graph that may still run. */
  if (graph->native) backend->vtable->graph.destroy(backend, graph->native);
  for (uint32_t i = 0; i < graph->count; ++i) {
    hrx_graph_node_free(graph->nodes[i]);
  }
  free(graph->nodes);
  free(graph->order);
  pthread_mutex_destroy(&graph->mutex);
  hrx_device_release_holder(graph->device, HRX_DEVICE_HOLDER_GRAPH);
  free(graph);
}

hrx_device_t* hrx_graph_device(const hrx_graph_t* graph) {
  return graph->device;
}

size_t hrx_graph_node_count(hrx_graph_t* graph) {
  pthread_mutex_lock(&graph->mutex);
  size_t count = graph->count;
  pthread_mutex_unlock(&graph->mutex);
  return count;
}

bool hrx_graph_is_native(hrx_graph_t* graph) {
  pthread_mutex_lock(&graph->mutex);
  bool native = graph->native != NULL;
  pthread_mutex_unlock(&graph->mutex);
  return native;
}

int hrx_graph_visit_host_data(hrx_graph_t* graph, int holders,
                              int (*visit)(void* user_data, void* arg),
                              void* arg) {
  if (atomic_load(&graph->ref_count) != holders) return 0;
  pthread_mutex_lock(&graph->mutex);
  int result = 0;
  for (uint32_t i = 0; i < graph->count && !result; ++i) {
    const hrx_graph_node_t* node = graph->nodes[i];
    if (node->kind == HRX_GRAPH_NODE_HOST) {
      result = visit(node->user_data, arg);
    }
  }
  pthread_mutex_unlock(&graph->mutex);
  return result;
}

hrx_graph_t* hrx_graph_node_graph(const hrx_graph_node_t* node) {
  return node->graph;
}

size_t hrx_graph_node_index(const hrx_graph_node_t* node) {
  return node->index;
}

/* ------------------------------------------------------------- recording */

static hrx_status_t hrx_graph_check_open_locked(hrx_graph_t* graph) {
  if (atomic_load(&graph->sealed)) {
    return hrx_make_status(HRX_STATUS_FAILED_PRECONDITION,
                           "the graph has been launched and is sealed; "
                           "record nodes before its first launch (or record "
                           "a new graph)");
  }
  if (graph->count >= HRX_GRAPH_MAX_NODES) {
    return hrx_make_status(HRX_STATUS_RESOURCE_EXHAUSTED,
                           "the graph already has %u nodes, the most a graph "
                           "may have",
                           HRX_GRAPH_MAX_NODES);
  }
  return NULL;
}

static hrx_status_t hrx_graph_check_view(hrx_graph_t* graph, hrx_view_t view,
                                         const char* role) {
  return hrx_view_check(graph->device, view, role,
                        "the graph records work for",
                        "a graph's buffers must be of the graph's device");
}

/* Dependencies must be nodes of this graph. */
static hrx_status_t hrx_graph_check_after(hrx_graph_t* graph,
                                          hrx_graph_node_t* const* after,
                                          size_t count) {
  if (count && !after) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "%zu dependencies but no dependency list", count);
  }
  for (size_t i = 0; i < count; ++i) {
    if (!after[i]) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "dependency %zu is NULL", i);
    }
    if (after[i]->graph != graph) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "dependency %zu is node %u of another graph; a "
                             "node can depend only on nodes of its own graph",
                             i, after[i]->index);
    }
  }
  return NULL;
}

static bool hrx_graph_node_depends_directly(const hrx_graph_node_t* node,
                                            uint32_t index) {
  for (uint32_t i = 0; i < node->after_count; ++i) {
    if (node->after[i] == index) return true;
  }
  return false;
}

/* Adds `index` to the node's dependencies unless already there. */
static hrx_status_t hrx_graph_node_add_after(hrx_graph_node_t* node,
                                             uint32_t index) {
  if (hrx_graph_node_depends_directly(node, index)) return NULL;
  if (node->after_count == node->after_capacity) {
    uint32_t capacity = node->after_capacity ? node->after_capacity * 2 : 4;
    uint32_t* grown = realloc(node->after, capacity * sizeof(*grown));
    if (!grown) {
      return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                             "cannot grow a node's dependency list");
    }
    node->after = grown;
    node->after_capacity = capacity;
  }
  node->after[node->after_count++] = index;
  return NULL;
}

/* Appends a node whose fields are set (except graph, index, after). Takes
 * the node on success; on failure the caller keeps it. */
static hrx_status_t hrx_graph_append_locked(hrx_graph_t* graph,
                                            hrx_graph_node_t* node,
                                            hrx_graph_node_t* const* after,
                                            size_t count) {
  node->graph = graph;
  node->index = graph->count;
  for (size_t i = 0; i < count; ++i) {
    hrx_status_t status = hrx_graph_node_add_after(node, after[i]->index);
    if (status) {
      free(node->after);
      node->after = NULL;
      node->after_count = node->after_capacity = 0;
      return status;
    }
  }
  if (graph->count == graph->capacity) {
    uint32_t capacity = graph->capacity ? graph->capacity * 2 : 8;
    hrx_graph_node_t** grown =
        realloc(graph->nodes, capacity * sizeof(*grown));
    if (!grown) {
      free(node->after);
      node->after = NULL;
      node->after_count = node->after_capacity = 0;
      return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                             "cannot grow the graph's node list");
    }
    graph->nodes = grown;
    graph->capacity = capacity;
  }
  graph->nodes[graph->count++] = node;
  if (node->kind == HRX_GRAPH_NODE_HOST) graph->host_count++;
  return NULL;
}

/* Validates under the lock, then appends. `node` is a template copied into
 * a new node; its buffers are retained only on success. */
static hrx_status_t hrx_graph_add(hrx_graph_t* graph,
                                  const hrx_graph_node_t* node_template,
                                  hrx_graph_node_t* const* after,
                                  size_t count, hrx_graph_node_t** out_node) {
  if (!graph) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "graph is NULL");
  }
  hrx_graph_node_t* node = malloc(sizeof(*node));
  if (!node) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate a graph node");
  }
  *node = *node_template;
  hrx_status_t entry =
      hrx_entry_check(graph->device, HRX_ENTRY_QUERY, "recording a graph");
  if (entry) {
    free(node);
    return entry;
  }
  pthread_mutex_lock(&graph->mutex);
  hrx_status_t status = hrx_graph_check_open_locked(graph);
  if (!status && (node->kind == HRX_GRAPH_NODE_COPY ||
                  node->kind == HRX_GRAPH_NODE_FILL)) {
    const char* what = node->kind == HRX_GRAPH_NODE_COPY
                           ? "copy destination"
                           : "fill destination";
    status = hrx_graph_check_view(graph, node->dst, what);
  }
  if (!status && node->kind == HRX_GRAPH_NODE_COPY) {
    status = hrx_graph_check_view(graph, node->src, "copy source");
    if (!status) status = hrx_view_check_copy(node->dst, node->src);
  }
  if (!status) status = hrx_graph_check_after(graph, after, count);
  if (!status) status = hrx_graph_append_locked(graph, node, after, count);
  pthread_mutex_unlock(&graph->mutex);
  if (status) {
    free(node);
    return status;
  }
  hrx_buffer_retain(node->dst.buffer);
  hrx_buffer_retain(node->src.buffer);
  for (uint32_t i = 0; i < node->buffer_count; ++i) {
    hrx_buffer_retain(node->buffers[i]);
  }
  hrx_kernel_retain(node->kernel);
  if (out_node) *out_node = node;
  return NULL;
}

hrx_status_t hrx_graph_add_copy(hrx_graph_t* graph, hrx_view_t dst,
                                hrx_view_t src,
                                hrx_graph_node_t* const* after,
                                size_t dependency_count,
                                hrx_graph_node_t** out_node) {
  hrx_graph_node_t node = {.kind = HRX_GRAPH_NODE_COPY, .dst = dst,
                           .src = src};
  return hrx_graph_add(graph, &node, after, dependency_count, out_node);
}

hrx_status_t hrx_graph_add_fill(hrx_graph_t* graph, hrx_view_t dst,
                                uint8_t byte, hrx_graph_node_t* const* after,
                                size_t dependency_count,
                                hrx_graph_node_t** out_node) {
  hrx_graph_node_t node = {.kind = HRX_GRAPH_NODE_FILL, .dst = dst,
                           .byte = byte};
  return hrx_graph_add(graph, &node, after, dependency_count, out_node);
}

hrx_status_t hrx_graph_add_host(hrx_graph_t* graph, hrx_host_fn_t fn,
                                void* user_data,
                                void (*user_data_free)(void* user_data),
                                hrx_graph_node_t* const* after,
                                size_t dependency_count,
                                hrx_graph_node_t** out_node) {
  if (!fn) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "host callback function is NULL");
  }
  hrx_graph_node_t node = {.kind = HRX_GRAPH_NODE_HOST, .fn = fn,
                           .user_data = user_data,
                           .user_data_free = user_data_free};
  return hrx_graph_add(graph, &node, after, dependency_count, out_node);
}

hrx_status_t hrx_graph_add_kernel(hrx_graph_t* graph, hrx_kernel_t* kernel,
                                  const hrx_launch_config_t* config,
                                  const hrx_kernel_arg_t* args,
                                  size_t arg_count,
                                  hrx_graph_node_t* const* after,
                                  size_t dependency_count,
                                  hrx_graph_node_t** out_node) {
  if (!graph) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "graph is NULL");
  }
  hrx_kernel_prepared_t* prepared = malloc(sizeof(*prepared));
  if (!prepared) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot prepare a kernel node");
  }
  hrx_status_t status = hrx_kernel_prepare_launch(
      kernel, graph->device, "the graph records work for",
      "a graph's buffers and kernels must be of the graph's device", config,
      args, arg_count, prepared);
  hrx_graph_node_t node = {.kind = HRX_GRAPH_NODE_KERNEL, .kernel = kernel};
  if (!status) {
    node.launch = hrx_kernel_launch_copy(prepared);
    node.buffers = calloc(arg_count ? arg_count : 1, sizeof(hrx_buffer_t*));
    if (!node.launch || !node.buffers) {
      status = hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                               "cannot copy a kernel node's arguments");
    }
  }
  free(prepared);
  for (size_t i = 0; !status && i < arg_count; ++i) {
    if (args[i].kind == HRX_KERNEL_ARG_VIEW) {
      node.buffers[node.buffer_count++] = args[i].view.buffer;
    }
  }
  if (!status) {
    status = hrx_graph_add(graph, &node, after, dependency_count, out_node);
  }
  if (status) {
    free(node.launch);
    free(node.buffers);
  }
  return status;
}

/* Whether `target` is reachable from `from` by following dependencies
 * (from depends, directly or not, on target). */
static bool hrx_graph_reaches_locked(hrx_graph_t* graph, uint32_t from,
                                     uint32_t target, uint8_t* seen,
                                     uint32_t* stack) {
  uint32_t depth = 0;
  stack[depth++] = from;
  seen[from] = 1;
  while (depth) {
    const hrx_graph_node_t* node = graph->nodes[stack[--depth]];
    for (uint32_t i = 0; i < node->after_count; ++i) {
      uint32_t next = node->after[i];
      if (next == target) return true;
      if (!seen[next]) {
        seen[next] = 1;
        stack[depth++] = next;
      }
    }
  }
  return false;
}

hrx_status_t hrx_graph_add_dependency(hrx_graph_t* graph,
                                      hrx_graph_node_t* node,
                                      hrx_graph_node_t* after) {
  if (!graph) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT, "graph is NULL");
  }
  if (!node || !after) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "both nodes of a dependency are required");
  }
  pthread_mutex_lock(&graph->mutex);
  hrx_status_t status = NULL;
  if (atomic_load(&graph->sealed)) {
    status = hrx_graph_check_open_locked(graph);
  } else if (node->graph != graph || after->graph != graph) {
    status = hrx_make_status(
        HRX_STATUS_INVALID_ARGUMENT,
        "%s is a node of another graph; dependencies join nodes of one graph",
        node->graph != graph ? "the dependent node" : "the dependency");
  } else if (node == after) {
    status = hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "node %u cannot depend on itself", node->index);
  } else {
    uint8_t* seen = calloc(graph->count, 1);
    uint32_t* stack = malloc(graph->count * sizeof(*stack));
    if (!seen || !stack) {
      status = hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                               "cannot check the graph for a cycle");
    } else if (hrx_graph_reaches_locked(graph, after->index, node->index,
                                        seen, stack)) {
      status = hrx_make_status(
          HRX_STATUS_INVALID_ARGUMENT,
          "node %u already runs before node %u; making it wait for node %u "
          "would create a cycle",
          node->index, after->index, after->index);
    } else {
      status = hrx_graph_node_add_after(node, after->index);
    }
    free(seen);
    free(stack);
  }
  pthread_mutex_unlock(&graph->mutex);
  return status;
}

/* ------------------------------------------------------------------ seal */

/* Kahn's algorithm; ties go to the earlier-recorded node, so a graph
 * recorded in dependency order runs in recording order. */
static hrx_status_t hrx_graph_sort_locked(hrx_graph_t* graph,
                                          uint32_t** out_order) {
  uint32_t n = graph->count;
  uint32_t edges = 0;
  for (uint32_t i = 0; i < n; ++i) edges += graph->nodes[i]->after_count;
  uint32_t* order = malloc(n * sizeof(*order));
  uint32_t* waiting = calloc(n, sizeof(*waiting));   /* unmet dependencies */
  uint32_t* first = calloc((size_t)n + 1, sizeof(*first));  /* CSR rows */
  uint32_t* dependents = malloc((edges ? edges : 1) * sizeof(*dependents));
  uint32_t* fill = calloc((size_t)n, sizeof(*fill));
  uint8_t* done = calloc((size_t)n, 1);
  if (!order || !waiting || !first || !dependents || !fill || !done) {
    free(order);
    free(waiting);
    free(first);
    free(dependents);
    free(fill);
    free(done);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot order the graph's %u nodes", n);
  }
  for (uint32_t i = 0; i < n; ++i) {
    const hrx_graph_node_t* node = graph->nodes[i];
    waiting[i] = node->after_count;
    for (uint32_t k = 0; k < node->after_count; ++k) first[node->after[k] + 1]++;
  }
  for (uint32_t i = 0; i < n; ++i) first[i + 1] += first[i];
  for (uint32_t i = 0; i < n; ++i) {
    const hrx_graph_node_t* node = graph->nodes[i];
    for (uint32_t k = 0; k < node->after_count; ++k) {
      uint32_t d = node->after[k];
      dependents[first[d] + fill[d]++] = i;
    }
  }
  /* The ready node of least index comes next: `scan` never passes a ready
   * node (it moves back when a node before it becomes ready). */
  uint32_t placed = 0;
  uint32_t scan = 0;
  while (placed < n) {
    while (scan < n && (done[scan] || waiting[scan])) scan++;
    /* Acyclic by construction, so some node is always ready. */
    uint32_t next = scan;
    done[next] = 1;
    order[placed++] = next;
    for (uint32_t k = first[next]; k < first[next + 1]; ++k) {
      uint32_t dependent = dependents[k];
      if (--waiting[dependent] == 0 && dependent < scan) scan = dependent;
    }
  }
  free(waiting);
  free(first);
  free(dependents);
  free(fill);
  free(done);
  *out_order = order;
  return NULL;
}

/* Builds the native graph of a device-only graph where the backend has one.
 * UNAVAILABLE from the backend means "no graphs here": fall back. */
static hrx_status_t hrx_graph_build_native_locked(hrx_graph_t* graph) {
  hrx_backend_device_t* backend = hrx_device_backend(graph->device);
  if (graph->host_count || !backend->vtable->graph.create) return NULL;
  uint32_t n = graph->count;
  hrx_native_graph_node_t* nodes = calloc(n, sizeof(*nodes));
  uint32_t* position = malloc(n * sizeof(*position));
  uint32_t edges = 0;
  for (uint32_t i = 0; i < n; ++i) edges += graph->nodes[i]->after_count;
  uint32_t* after = malloc((edges ? edges : 1) * sizeof(*after));
  hrx_status_t status = NULL;
  if (!nodes || !position || !after) {
    status = hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                             "cannot describe the graph's %u nodes", n);
  } else {
    for (uint32_t i = 0; i < n; ++i) position[graph->order[i]] = i;
    uint32_t used = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const hrx_graph_node_t* node = graph->nodes[graph->order[i]];
      hrx_native_graph_node_t* out = &nodes[i];
      if (node->kind == HRX_GRAPH_NODE_KERNEL) {
        out->kind = HRX_NATIVE_GRAPH_KERNEL;
        out->kernel = hrx_kernel_native(node->kernel);
        out->launch = node->launch;
      } else {
        out->kind = node->kind == HRX_GRAPH_NODE_COPY ? HRX_NATIVE_GRAPH_COPY
                                                      : HRX_NATIVE_GRAPH_FILL;
        out->dst = hrx_view_pointer(node->dst);
        out->length = node->dst.length;
        if (node->kind == HRX_GRAPH_NODE_COPY) {
          out->src = hrx_view_pointer(node->src);
        }
        out->byte = node->byte;
      }
      out->after = after + used;
      out->after_count = node->after_count;
      for (uint32_t k = 0; k < node->after_count; ++k) {
        after[used++] = position[node->after[k]];
      }
    }
    status = backend->vtable->graph.create(backend, nodes, n, &graph->native);
    if (status && hrx_status_code(status) == HRX_STATUS_UNAVAILABLE) {
      hrx_status_free(status);
      status = NULL;
      graph->native = NULL;
    }
  }
  free(nodes);
  free(position);
  free(after);
  return status;
}

static hrx_status_t hrx_graph_seal(hrx_graph_t* graph) {
  if (atomic_load(&graph->sealed)) return NULL;
  pthread_mutex_lock(&graph->mutex);
  hrx_status_t status = NULL;
  if (!atomic_load(&graph->sealed)) {
    if (graph->count == 0) {
      status = hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                               "the graph has no nodes; record at least one "
                               "copy, fill, kernel launch or host callback "
                               "before launching");
    }
    if (!status) status = hrx_graph_sort_locked(graph, &graph->order);
    if (!status) {
      status = hrx_graph_build_native_locked(graph);
      if (status) {
        free(graph->order);
        graph->order = NULL;
      }
    }
    if (!status) atomic_store(&graph->sealed, true);
  }
  pthread_mutex_unlock(&graph->mutex);
  return status;
}

/* ---------------------------------------------------------------- launch */

/* One host call of a launch: a callback node, or the final marker. */
typedef struct hrx_graph_call_s {
  struct hrx_graph_launch_s* launch;  /* borrowed: the owner */
  const hrx_graph_node_t* node;       /* borrowed; NULL: the final marker */
} hrx_graph_call_t;

/* Owned by the launch's completion (its held object). */
typedef struct hrx_graph_launch_s {
  hrx_graph_t* graph;              /* retained */
  hrx_completion_t* completion;    /* borrowed: the owner */
  uint32_t call_count;
  hrx_graph_call_t calls[];        /* host nodes in order, then the marker */
} hrx_graph_launch_t;

static void hrx_graph_launch_free(void* held) {
  hrx_graph_launch_t* launch = held;
  hrx_graph_release(launch->graph);
  free(launch);
}

/* The graph's host data belongs to the launch while it holds the graph's
 * only reference. */
static int hrx_graph_launch_visit(void* held,
                                  int (*visit)(void* user_data, void* arg),
                                  void* arg) {
  hrx_graph_launch_t* launch = held;
  return hrx_graph_visit_host_data(launch->graph, 1, visit, arg);
}

static void hrx_graph_run_call(void* user_data) {
  hrx_graph_call_t* call = user_data;
  if (call->node) {
    hrx_completion_run(call->launch->completion, call->node->fn,
                       call->node->user_data);
  } else {
    hrx_host_callbacks_queued(-1);
    hrx_completion_finish(call->launch->completion);
  }
}

typedef struct {
  hrx_graph_t* graph;
  hrx_graph_launch_t* launch;  /* NULL for a device-only graph */
} hrx_graph_submit_args_t;

static hrx_status_t hrx_graph_submit_nodes(hrx_backend_device_t* backend,
                                           hrx_native_queue_t* queue,
                                           hrx_graph_submit_args_t* args) {
  const hrx_backend_vtable_t* vt = backend->vtable;
  hrx_graph_t* graph = args->graph;
  uint32_t call = 0;
  for (uint32_t i = 0; i < graph->count; ++i) {
    const hrx_graph_node_t* node = graph->nodes[graph->order[i]];
    uint8_t* dst = NULL;
    if (node->kind == HRX_GRAPH_NODE_COPY ||
        node->kind == HRX_GRAPH_NODE_FILL) {
      dst = hrx_view_pointer(node->dst);
    }
    hrx_status_t status = NULL;
    switch (node->kind) {
      case HRX_GRAPH_NODE_COPY:
        status = vt->queue.copy(backend, queue, dst, hrx_view_pointer(node->src),
                          node->dst.length);
        break;
      case HRX_GRAPH_NODE_FILL:
        status = vt->queue.fill(backend, queue, dst, node->byte, node->dst.length);
        break;
      case HRX_GRAPH_NODE_HOST:
        status = vt->queue.host_call(backend, queue, hrx_graph_run_call,
                                     &args->launch->calls[call++]);
        break;
      case HRX_GRAPH_NODE_KERNEL:
        status = vt->kernel.launch(backend, queue,
                                   hrx_kernel_native(node->kernel),
                                   node->launch);
        break;
    }
    if (status) return status;
  }
  if (args->launch) {
    HRX_RETURN_IF_ERROR(vt->queue.host_call(backend, queue, hrx_graph_run_call,
                                            &args->launch->calls[call]));
  }
  return NULL;
}

static hrx_status_t hrx_graph_submit(hrx_backend_device_t* backend,
                                     hrx_native_queue_t* queue,
                                     void* user_data) {
  hrx_graph_submit_args_t* args = user_data;
  if (args->graph->native) {
    return backend->vtable->graph.launch(backend, queue, args->graph->native);
  }
  hrx_status_t status = hrx_graph_submit_nodes(backend, queue, args);
  if (status) {
    /* Nodes already submitted still run and may name this launch: wait for
     * them so that the launch can be freed. */
    hrx_status_free(hrx_wait_queue(backend, queue, NULL, NULL));
    return hrx_status_annotate(status, "graph launch failed part-way (the "
                                       "nodes before the failure ran)");
  }
  return NULL;
}

hrx_status_t hrx_graph_launch(hrx_graph_t* graph, hrx_stream_t* stream,
                              hrx_completion_t** out_completion) {
  if (!graph || !stream) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "a launch needs a graph and a stream");
  }
  HRX_RETURN_IF_ERROR(hrx_device_check_same(
      hrx_stream_device(stream), graph->device, "the graph",
      "the stream runs on", "a graph launches only on streams of its device"));
  HRX_RETURN_IF_ERROR(hrx_stream_enter(stream, "launching a graph"));
  if (hrx_nonblocking()) {
    /* Sealing may instantiate a native graph; a launch node by node could
     * find the queue full part-way, when nothing can be taken back. */
    if (!atomic_load(&graph->sealed)) {
      return hrx_would_block("the graph's first launch to prepare it");
    }
    if (!graph->native) {
      return hrx_would_block("a launch node by node");
    }
  }
  HRX_RETURN_IF_ERROR(hrx_graph_seal(graph));

  hrx_graph_submit_args_t args = {graph, NULL};
  hrx_completion_t* completion = NULL;
  if (graph->host_count) {
    uint32_t calls = graph->host_count + 1;
    hrx_graph_launch_t* launch =
        malloc(sizeof(*launch) + calls * sizeof(launch->calls[0]));
    if (!launch) {
      return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                             "cannot allocate a graph launch");
    }
    hrx_status_t status =
        hrx_completion_create(graph->device, launch, hrx_graph_launch_free,
                              hrx_graph_launch_visit, &completion);
    if (status) {
      free(launch);
      return status;
    }
    hrx_graph_retain(graph);
    launch->graph = graph;
    launch->completion = completion;
    launch->call_count = calls;
    uint32_t k = 0;
    for (uint32_t i = 0; i < graph->count; ++i) {
      const hrx_graph_node_t* node = graph->nodes[graph->order[i]];
      if (node->kind == HRX_GRAPH_NODE_HOST) {
        launch->calls[k++] = (hrx_graph_call_t){launch, node};
      }
    }
    launch->calls[k] = (hrx_graph_call_t){launch, NULL};
    args.launch = launch;
    /* Until the final marker runs (nonblocking.h). */
    hrx_host_callbacks_queued(1);
  }
  hrx_command_t command = {.submit = hrx_graph_submit,
                                  .user_data = &args,
                                  .what = "graph launch",
                                  .observes = true};
  hrx_status_t status = hrx_stream_submit(stream, &command);
  /* A failed launch never reaches its final marker (the nodes it did
   * submit have run: hrx_graph_submit waited for them). */
  if (status && args.launch) hrx_host_callbacks_queued(-1);
  if (!status && completion) {
    status = hrx_stream_track_completion(stream, completion);
    if (status) {
      /* Cannot track it: wait here instead, so its last reference is ours. */
      bool done = false;
      hrx_status_free(hrx_completion_wait(completion, -1, &done));
    }
  }
  if (status) {
    hrx_completion_release(completion);
    return status;
  }
  if (out_completion) {
    *out_completion = completion;
  } else {
    hrx_completion_release(completion);
  }
  return NULL;
}
