/* What the stand-in libcudart (fake_cudart.c) saw, for the `fake-cuda`
 * scenarios of test_hip_fake_cudart.c, which read it with
 * dlsym("fake_cudart_state"). */
#ifndef HRX_TESTS_C_FAKE_CUDART_H_
#define HRX_TESTS_C_FAKE_CUDART_H_

#include <stddef.h>

#define FAKE_MAX_PARAMS 160
#define FAKE_MAX_GRAPH_LOG 64

typedef struct fake_cudart_launch_s {
  const void* function;        /* the kernel handle launched */
  unsigned int grid[3];
  unsigned int block[3];
  size_t shared;
  void* stream;
  unsigned char values[4096];  /* the arguments, as the kernel lays them */
} fake_cudart_launch_t;

typedef struct fake_cudart_state_s {
  int libraries_loaded;
  int libraries_unloaded;
  int device_synchronizes;
  int synchronizes_at_last_unload;  /* device_synchronizes then */
  int max_dynamic_shared_set;       /* cudaFuncAttributeMaxDynamic... */
  int runtime_param_queries;
  int driver_param_queries;
  int driver_function_queries;
  int launches;
  fake_cudart_launch_t last_launch;
  fake_cudart_launch_t kernel_node;
  size_t kernel_node_dependencies;
  const void* kernel_node_first_dependency;
  /* Launches of instantiated graphs: how many, and the kernel nodes they
   * ran (the enabled ones, in node order, with the parameters the exec
   * held then), the first FAKE_MAX_GRAPH_LOG of them. */
  int graph_launches;
  int graph_kernels_run;
  int graph_node_updates;   /* cudaGraphExecKernelNodeSetParams calls */
  int graph_node_switches;  /* cudaGraphNodeSetEnabled calls */
  fake_cudart_launch_t graph_log[FAKE_MAX_GRAPH_LOG];
  /* The kernel nodes the latest graph launch ran, the same way. */
  int last_graph_kernels;
  fake_cudart_launch_t last_graph_log[FAKE_MAX_GRAPH_LOG];
  /* Calls given a stream handle the stand-in did not make. */
  int bad_streams;
  /* cudaHostRegister and cudaHostUnregister calls that succeeded. */
  int host_registrations;
  int host_unregistrations;
} fake_cudart_state_t;

typedef const fake_cudart_state_t* (*fake_cudart_state_fn)(void);

#endif /* HRX_TESTS_C_FAKE_CUDART_H_ */
