/* The hip backend's NVIDIA kernel path against a stand-in libcudart
 * (fake_cudart.c), without a GPU, one scenario per process (the backend
 * loads its runtime once per process):
 *
 *   test_hip_fake_cudart fake-cuda LIBRARY / fake-cuda-driver LIBRARY
 *       HRX_HIP_LIBRARY=LIBRARY is the stand-in libcudart, built with and
 *       without cudaFuncGetParamInfo: the NVIDIA kernel path through the
 *       vtable, checked against what the stand-in saw (module checks and
 *       refusals, lookups and parameter layouts from the runtime or the
 *       driver, launches and graph kernel nodes with their arguments,
 *       launch batches as rewritten graphs, with nodes turned off and, in
 *       the second build, as exact-size graphs; every queue call given the
 *       queue's stream; unloads after a synchronize).
 *
 * make -f tests/c/hip.mk hip-fake-cuda builds the stand-in and runs both;
 * nothing needs to be installed. Exit status 0 on success. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/nonblocking.h"
#include "drivers/hip/hip_backend.h"
#include "fake_cudart.h"
#include "hip_test_support.h"

/* Loads `text` as a module; the status of module_load. */
static hrx_status_t load_text(device_fixture_t* f, const char* text,
                              hrx_native_module_t** out_module) {
  /* No NUL passed: the backend terminates its copy itself. */
  return f->vt->kernel.module_load(f->device, text, strlen(text), out_module);
}

/* module_load refuses `text` with `code`, the message naming `api` (and
 * `also`, when given), and leaves no library loaded. */
static void expect_refused(device_fixture_t* f,
                           const fake_cudart_state_t* state,
                           const char* text, hrx_status_code_t code,
                           const char* what, const char* api,
                           const char* also) {
  int live = state->libraries_loaded - state->libraries_unloaded;
  hrx_native_module_t* module = NULL;
  expect_failure(load_text(f, text, &module), code, what, api, also, NULL);
  CHECK(module == NULL, "%s: module written on failure", what);
  CHECK(state->libraries_loaded - state->libraries_unloaded == live,
        "%s: a library stayed loaded", what);
  expect_last_error_clean(what);
}

/* module_load accepts `text` (the driver's answer was about the context,
 * not the image); unloads it again. */
static int expect_loaded(device_fixture_t* f, const char* text,
                         const char* what) {
  hrx_native_module_t* module = NULL;
  hrx_status_t status = load_text(f, text, &module);
  CHECK(status == NULL, "%s: %s", what, hrx_status_message(status));
  hrx_status_free(status);
  if (module) f->vt->kernel.module_unload(f->device, module);
  return 0;
}

/* The NVIDIA kernel path against the stand-in libcudart (fake_cudart.c):
 * limits, module checks and refusals, lookups with parameter layouts (from
 * cudaFuncGetParamInfo, or with `driver_params` from the driver's
 * cuKernelGetParamInfo), the shared-memory opt-in, launches and graph
 * kernel nodes with their argument values, refused launches, unloads that
 * synchronize first; and no compiler: UNAVAILABLE naming HRX_RTC_LIBRARY. */
/* How a batch of `count` launches is cut (hip_launch_graphs.h): graph
 * launches and plain launches. */
static void expected_parts(uint32_t count, bool can_disable, int* graphs,
                           int* plains) {
  static const uint32_t tiers[] = {2, 4, 8, 16, 32, 64, 128, 160};
  *graphs = 0;
  *plains = 0;
  if (can_disable) {
    *graphs = 1;
    return;
  }
  while (count > 0) {
    int t = 7;
    while (t >= 0 && tiers[t] > count) --t;
    if (t < 0) {
      ++*plains;
      --count;
    } else {
      ++*graphs;
      count -= tiers[t];
    }
  }
}

static int scenario_fake_cuda(const char* library, bool driver_params) {
  setenv("HRX_HIP_LIBRARY", library, 1);
  setenv("HRX_RTC_LIBRARY", "/nonexistent/hrx-test/libnvrtc.so", 1);
  int count = 0;
  CHECK_OK(hrx_hip_backend.load(true, &count));
  CHECK(strcmp(hrx_hip_platform(), "nvidia") == 0, "platform %s",
        hrx_hip_platform());
  void* handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  fake_cudart_state_fn state_fn = NULL;
  void* address = handle ? dlsym(handle, "fake_cudart_state") : NULL;
  memcpy(&state_fn, &address, sizeof(address));
  CHECK(state_fn != NULL, "%s has no fake_cudart_state", library);
  if (!state_fn) return 1;
  const fake_cudart_state_t* state = state_fn();

  device_fixture_t fx = {0};
  device_fixture_t* f = &fx;
  /* Batching off: the batch kernel is not prepared (there is no compiler).
   * Staging copies around the caches, as a live device's by default. */
  const hrx_hal_device_settings_t unbatched = {.batching = false,
                                               .streaming_copies = true};
  CHECK_OK(hrx_hip_backend.device_open(0, &unbatched, &fx.device));
  fx.vt = fx.device->vtable;
  const hrx_backend_vtable_t* vt = fx.vt;
  hrx_device_info_t info;
  CHECK_OK(vt->query_info(f->device, &info));
  CHECK(strcmp(info.target, "sm_90") == 0, "target %s", info.target);
  CHECK(info.max_threads_per_block == 1024 && info.max_block_dim[0] == 1024 &&
            info.max_block_dim[1] == 1024 && info.max_block_dim[2] == 64 &&
            info.max_grid_dim[0] == 2147483647u &&
            info.max_grid_dim[1] == 65535 && info.max_grid_dim[2] == 65535,
        "launch limits %u %u %u %u %u %u %u", info.max_threads_per_block,
        info.max_block_dim[0], info.max_block_dim[1], info.max_block_dim[2],
        info.max_grid_dim[0], info.max_grid_dim[1], info.max_grid_dim[2]);
  CHECK(info.max_shared_bytes_per_block == 232448,
        "shared %llu is not the opt-in maximum",
        (unsigned long long)info.max_shared_bytes_per_block);

  hrx_kernel_compiler_t toolchain;
  expect_failure(vt->kernel.toolchain(f->device, &toolchain),
                 HRX_STATUS_UNAVAILABLE, "no compiler", "NVRTC",
                 "HRX_RTC_LIBRARY", "/nonexistent/hrx-test/libnvrtc.so", NULL);
  void* image = NULL;
  size_t size = 0;
  hrx_kernel_param_record_t record = {.count = -1};
  expect_failure(vt->kernel.compile(f->device, "x", kernel_names, 1, NULL, 0,
                                    &image, &size, &record),
                 HRX_STATUS_UNAVAILABLE, "compile without a compiler",
                 "HRX_RTC_LIBRARY", NULL);
  CHECK(record.count == -1, "parameter record written on failure");

  hrx_native_queue_t* queue = NULL;
  CHECK_OK(create_queue(f, &queue));

  static const char good[] =
      "FAKE-IMAGE\n"
      "kernel saxpy 0 8,8,4,4\n"
      "kernel big 1024 8,1,8\n"
      "kernel opaque 0 ?\n"
      "kernel none 0 -\n";
  hrx_native_module_t* module = NULL;
  CHECK_OK(load_text(f, good, &module));
  CHECK(state->driver_function_queries == 0,
        "the kernel check ran although cuLibraryGetModule loaded the image");

  hrx_native_kernel_t* saxpy = NULL;
  hrx_kernel_attributes_t ki;
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "saxpy", &saxpy, &ki));
  CHECK(ki.param_count == 4, "saxpy: %d parameters", ki.param_count);
  static const uint32_t saxpy_offsets[] = {0, 8, 16, 20};
  static const uint32_t saxpy_sizes[] = {8, 8, 4, 4};
  for (int i = 0; i < 4; ++i) {
    CHECK(ki.param_offset[i] == saxpy_offsets[i] &&
              ki.param_size[i] == saxpy_sizes[i],
          "saxpy parameter %d: %u at %u", i, ki.param_size[i],
          ki.param_offset[i]);
  }
  CHECK(ki.max_threads_per_block == 1024 && ki.static_shared_bytes == 0 &&
            ki.max_dynamic_shared_bytes == 232448,
        "saxpy: %u threads, %llu static, %llu dynamic",
        ki.max_threads_per_block, (unsigned long long)ki.static_shared_bytes,
        (unsigned long long)ki.max_dynamic_shared_bytes);
  CHECK(state->max_dynamic_shared_set == 232448,
        "opt-in set to %d, want 232448", state->max_dynamic_shared_set);
  if (driver_params) {
    CHECK(state->driver_param_queries > 0 && state->runtime_param_queries == 0,
          "parameters not from cuKernelGetParamInfo");
  } else {
    CHECK(state->runtime_param_queries > 0 && state->driver_param_queries == 0,
          "parameters not from cudaFuncGetParamInfo");
  }

  hrx_native_kernel_t* kernel = NULL;
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "big", &kernel, &ki));
  CHECK(ki.param_count == 3 && ki.param_offset[1] == 8 &&
            ki.param_size[1] == 1 && ki.param_offset[2] == 16 &&
            ki.param_size[2] == 8,
        "big: %d parameters", ki.param_count);
  CHECK(ki.static_shared_bytes == 1024 &&
            ki.max_dynamic_shared_bytes == 232448 - 1024,
        "big: %llu static, %llu dynamic",
        (unsigned long long)ki.static_shared_bytes,
        (unsigned long long)ki.max_dynamic_shared_bytes);
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "opaque", &kernel, &ki));
  CHECK(ki.param_count == -1 && ki.param_size[0] == 0 &&
            ki.param_offset[0] == 0,
        "opaque: %d parameters", ki.param_count);
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "none", &kernel, &ki));
  CHECK(ki.param_count == 0, "none: %d parameters", ki.param_count);
  kernel = NULL;
  expect_failure(vt->kernel.module_get_kernel(f->device, module, "missing", &kernel,
                                       &ki),
                 HRX_STATUS_INVALID_ARGUMENT, "a missing kernel",
                 "\"missing\"", "cudaLibraryGetKernel", "extern \"C\"", NULL);
  CHECK(kernel == NULL, "kernel written on failure");
  expect_last_error_clean("a missing kernel");

  /* A launch passes the handle, dimensions, shared bytes, queue and the
   * argument values (copied at the call). */
  void* y = (void*)(uintptr_t)0x1000;
  void* x = (void*)(uintptr_t)0x2000;
  float a = 2.5f;
  int n = 99;
  const void* args[] = {&y, &x, &a, &n};
  const uint32_t arg_sizes[] = {8, 8, 4, 4};
  hrx_kernel_launch_t launch = {.grid = {7, 2, 1}, .block = {128, 2, 1},
                                .shared_bytes = 4096, .arg_count = 4,
                                .args = args, .arg_sizes = arg_sizes};
  CHECK_OK(vt->kernel.launch(f->device, queue, saxpy, &launch));
  a = 0.0f;
  n = 0;
  const fake_cudart_launch_t* seen = &state->last_launch;
  float seen_a = 0.0f;
  int seen_n = 0;
  void* seen_y = NULL;
  memcpy(&seen_y, seen->values, 8);
  memcpy(&seen_a, seen->values + 16, 4);
  memcpy(&seen_n, seen->values + 20, 4);
  CHECK(seen->function == (const void*)saxpy && seen->grid[0] == 7 &&
            seen->grid[1] == 2 && seen->grid[2] == 1 &&
            seen->block[0] == 128 && seen->block[1] == 2 &&
            seen->shared == 4096 &&
            seen->stream == vt->queue.native_handle(queue),
        "the launch reached the runtime changed");
  CHECK(seen_y == y && seen_a == 2.5f && seen_n == 99,
        "launch arguments %p %g %d", seen_y, (double)seen_a, seen_n);
  int launches = state->launches;
  hrx_kernel_launch_t too_big = launch;
  too_big.block[0] = 2048;
  expect_failure(vt->kernel.launch(f->device, queue, saxpy, &too_big),
                 HRX_STATUS_DEVICE_ERROR, "a refused launch",
                 "cudaLaunchKernel", NULL);
  CHECK(state->launches == launches, "a refused launch counted");
  expect_last_error_clean("a refused launch");

  /* A graph kernel node gets the same, after its dependency. */
  {
    uint8_t* buffer = NULL;
    CHECK_OK(vt->memory.alloc(f->device, 64, (void**)&buffer));
    const uint32_t after_first = 0;
    const uint32_t after_kernel = 1;
    hrx_native_graph_node_t nodes[3] = {
        {.kind = HRX_NATIVE_GRAPH_FILL, .dst = buffer, .length = 32,
         .byte = 1},
        {.kind = HRX_NATIVE_GRAPH_KERNEL, .kernel = saxpy, .launch = &launch,
         .after = &after_first, .after_count = 1},
        {.kind = HRX_NATIVE_GRAPH_COPY, .dst = buffer + 32, .src = buffer,
         .length = 32, .after = &after_kernel, .after_count = 1},
    };
    a = 4.0f;
    n = 7;
    hrx_native_graph_t* graph = NULL;
    CHECK_OK(vt->graph.create(f->device, nodes, 3, &graph));
    const fake_cudart_launch_t* node = &state->kernel_node;
    memcpy(&seen_a, node->values + 16, 4);
    memcpy(&seen_n, node->values + 20, 4);
    CHECK(node->function == (const void*)saxpy && node->grid[0] == 7 &&
              node->block[1] == 2 && node->shared == 4096 &&
              seen_a == 4.0f && seen_n == 7,
          "kernel node: %g %d", (double)seen_a, seen_n);
    CHECK(state->kernel_node_dependencies == 1 &&
              state->kernel_node_first_dependency != NULL,
          "kernel node after %zu nodes", state->kernel_node_dependencies);
    CHECK_OK(vt->graph.launch(f->device, queue, graph));
    vt->graph.destroy(f->device, graph);
    vt->memory.free(f->device, buffer);
  }

  /* Launch batches: graph launches whose kernel nodes carry each launch's
   * own arguments in order. Where nodes can be turned off, one graph
   * launch per batch (a smaller batch on the same tier turns the tail off,
   * a larger one on again); the stand-in built without
   * cudaGraphNodeSetEnabled (fake-cuda-driver) takes the path of runtimes
   * that cannot: exact-size graphs, largest first, a last single launch
   * made plainly. */
  bool can_disable = !driver_params;
  {
    enum { COUNT = 7 };
    int values[COUNT];
    const void* batch_args[COUNT][4];
    hrx_kernel_launch_t launches[COUNT];
    hrx_batch_command_t commands[COUNT];
    for (int i = 0; i < COUNT; ++i) {
      values[i] = 100 + i;
      batch_args[i][0] = &y;
      batch_args[i][1] = &x;
      batch_args[i][2] = &a;
      batch_args[i][3] = &values[i];
      launches[i] = launch;
      launches[i].args = batch_args[i];
      launches[i].grid[0] = (uint32_t)(1 + i);
      commands[i] = (hrx_batch_command_t){.kind = HRX_BATCH_LAUNCH,
                                          .kernel = saxpy,
                                          .launch = &launches[i]};
    }
    const uint32_t sizes[] = {COUNT, 5, COUNT, 2};
    for (size_t b = 0; b < sizeof(sizes) / sizeof(sizes[0]); ++b) {
      uint32_t size = sizes[b];
      int graph_launches = state->graph_launches;
      int run = state->graph_kernels_run;
      int plain = state->launches;
      uint32_t published = 0;
      CHECK_OK(vt->kernel.launch_batch(f->device, queue, commands, size,
                                       &published));
      for (int i = 0; i < COUNT; ++i) values[i] = -1;  /* taken at the call */
      CHECK(published == size, "batch of %u: %u published", size, published);
      int graphs = 0, plains = 0;
      expected_parts(size, can_disable, &graphs, &plains);
      CHECK(state->graph_launches == graph_launches + graphs &&
                state->launches == plain + plains,
            "batch of %u: %d graph launches, %d plain", size,
            state->graph_launches - graph_launches, state->launches - plain);
      CHECK(state->graph_kernels_run == run + (int)size - plains,
            "batch of %u ran %d kernels", size,
            state->graph_kernels_run - run);
      for (uint32_t i = 0; i + (uint32_t)plains < size &&
                           run + (int)i < FAKE_MAX_GRAPH_LOG;
           ++i) {
        const fake_cudart_launch_t* seen = &state->graph_log[run + (int)i];
        int seen_value = 0;
        memcpy(&seen_value, seen->values + 20, 4);
        CHECK(seen->function == (const void*)saxpy &&
                  seen->grid[0] == 1 + i && seen_value == 100 + (int)i &&
                  seen->stream == vt->queue.native_handle(queue),
              "batch of %u, launch %u: grid %u, value %d", size, i,
              seen->grid[0], seen_value);
      }
      for (int i = 0; i < COUNT; ++i) values[i] = 100 + i;
    }
    /* In non-blocking mode a batch that needs a graph not made yet is
     * WOULD_BLOCK with nothing launched; one whose graph exists goes. */
    {
      hrx_batch_command_t many[40];
      for (int i = 0; i < 40; ++i) many[i] = commands[i % COUNT];
      int graph_launches = state->graph_launches;
      uint32_t published = 1;
      bool previous = hrx_thread_set_nonblocking(true);
      hrx_status_t status =
          vt->kernel.launch_batch(f->device, queue, many, 40, &published);
      CHECK(hrx_status_code(status) == HRX_STATUS_WOULD_BLOCK &&
                published == 0 && state->graph_launches == graph_launches,
            "a batch needing a new graph in non-blocking mode: %s, %u",
            hrx_status_message(status), published);
      hrx_status_free(status);
      CHECK_OK(vt->kernel.launch_batch(f->device, queue, many, COUNT,
                                       &published));
      hrx_thread_set_nonblocking(previous);
      CHECK_OK(vt->kernel.launch_batch(f->device, queue, many, 40,
                                       &published));
      int graphs_7 = 0, graphs_40 = 0, plains = 0;
      expected_parts(COUNT, can_disable, &graphs_7, &plains);
      expected_parts(40, can_disable, &graphs_40, &plains);
      CHECK(published == 40 &&
                state->graph_launches == graph_launches + graphs_7 + graphs_40,
            "non-blocking batches: %d graph launches",
            state->graph_launches - graph_launches);
    }
    /* A node that already holds its launch is left as it is: the same
     * batch again rewrites no node, one argument changed rewrites that
     * node alone (and the graph runs the new value), and after a module
     * unload every node is rewritten, since a kernel loaded later may get
     * an unloaded one's handle. */
    {
      uint32_t published = 0;
      CHECK_OK(vt->kernel.launch_batch(f->device, queue, commands, COUNT,
                                       &published));
      int updates = state->graph_node_updates;
      CHECK_OK(vt->kernel.launch_batch(f->device, queue, commands, COUNT,
                                       &published));
      CHECK(published == COUNT && state->graph_node_updates == updates,
            "the same batch again: %d nodes rewritten",
            state->graph_node_updates - updates);
      values[2] = 7;
      updates = state->graph_node_updates;
      int graph_launches = state->graph_launches;
      CHECK_OK(vt->kernel.launch_batch(f->device, queue, commands, COUNT,
                                       &published));
      values[2] = 102;
      CHECK(state->graph_node_updates == updates + 1,
            "one argument changed: %d nodes rewritten",
            state->graph_node_updates - updates);
      /* The changed launch is node 2 of the batch's first graph; that graph
       * is the latest launched only where one graph takes the batch. */
      int graphs = 0, plains = 0;
      expected_parts(COUNT, can_disable, &graphs, &plains);
      if (graphs == 1) {
        int seen_value = 0;
        memcpy(&seen_value, state->last_graph_log[2].values + 20, 4);
        CHECK(state->graph_launches == graph_launches + 1 &&
                  state->last_graph_kernels == COUNT && seen_value == 7,
              "the changed node ran %d", seen_value);
      }
      CHECK(expect_loaded(f, "FAKE-IMAGE\nkernel k 0 8\n",
                          "a module loaded and unloaded") == 0,
            "a module loaded and unloaded");
      updates = state->graph_node_updates;
      CHECK_OK(vt->kernel.launch_batch(f->device, queue, commands, COUNT,
                                       &published));
      CHECK(state->graph_node_updates == updates + COUNT - plains,
            "after a module unload: %d nodes rewritten",
            state->graph_node_updates - updates);
    }
    /* A launch the runtime refuses inside a batch: the graph is dropped and
     * the launches go one by one, the refused one reported with the ones
     * before it published. */
    launches[3].block[0] = 2048;
    uint32_t published = 0;
    int plain = state->launches;
    expect_failure(vt->kernel.launch_batch(f->device, queue, commands, COUNT,
                                           &published),
                   HRX_STATUS_DEVICE_ERROR, "a refused launch in a batch",
                   "cudaLaunchKernel", NULL);
    CHECK(published == 3 && state->launches == plain + 3,
          "refused in a batch: %u published, %d plain launches", published,
          state->launches - plain);
    expect_last_error_clean("a refused launch in a batch");
    launches[3].block[0] = launch.block[0];
  }

  /* module_unload synchronizes the device before it unloads. */
  int synchronizes = state->device_synchronizes;
  vt->kernel.module_unload(f->device, module);
  CHECK(state->device_synchronizes > synchronizes &&
            state->synchronizes_at_last_unload == state->device_synchronizes,
        "module_unload did not synchronize first");

  /* Refusals: the runtime's and the driver's, nothing left loaded. */
  expect_refused(f, state, "NOT AN IMAGE", HRX_STATUS_INVALID_ARGUMENT,
                 "a corrupt image", "cudaLibraryLoadData",
                 "cannot load this image");
  expect_refused(f, state, "FAKE-IMAGE\nload=2\nkernel k 0 8\n",
                 HRX_STATUS_OUT_OF_MEMORY, "out of memory at load",
                 "cudaLibraryLoadData", NULL);
  expect_refused(f, state, "FAKE-IMAGE\nmodule=209\nkernel k 0 8\n",
                 HRX_STATUS_INVALID_ARGUMENT, "an image for another GPU",
                 "cuLibraryGetModule", "CUDA_ERROR_NO_BINARY_FOR_GPU");
  expect_refused(f, state, "FAKE-IMAGE\nmodule=2\nkernel k 0 8\n",
                 HRX_STATUS_OUT_OF_MEMORY, "out of memory in the context",
                 "cuLibraryGetModule", NULL);
  int queries = state->driver_function_queries;
  expect_refused(f, state, "FAKE-IMAGE\nmodule=500\nfunction=218\n"
                 "kernel k 0 8\n",
                 HRX_STATUS_INVALID_ARGUMENT, "a kernel that cannot load",
                 "cuKernelGetFunction", "cannot load this image");
  CHECK(state->driver_function_queries == queries + 1,
        "cuKernelGetFunction was not asked");
  expect_refused(f, state, "", HRX_STATUS_INVALID_ARGUMENT, "an empty image",
                 "empty", NULL);
  /* Answers about the context, not the image, leave it loaded. */
  expect_loaded(f, "FAKE-IMAGE\nmodule=201\nkernel k 0 8\n",
                "no context for cuLibraryGetModule");
  expect_loaded(f, "FAKE-IMAGE\nmodule=500\nfunction=201\nkernel k 0 8\n",
                "no context for cuKernelGetFunction");
  expect_loaded(f, "FAKE-IMAGE\nmodule=500\n", "no module, no kernels");

  /* The opt-in refused: the kernel keeps the runtime's limit. */
  CHECK_OK(load_text(f, "FAKE-IMAGE\nsetattr=1\nkernel k 0 8\n", &module));
  CHECK_OK(vt->kernel.module_get_kernel(f->device, module, "k", &kernel, &ki));
  CHECK(ki.max_dynamic_shared_bytes == 49152,
        "refused opt-in: %llu dynamic bytes",
        (unsigned long long)ki.max_dynamic_shared_bytes);
  expect_last_error_clean("a refused opt-in");
  vt->kernel.module_unload(f->device, module);

  /* More parameters than one launch passes. */
  char many[1024] = "FAKE-IMAGE\nkernel many 0 4";
  for (int i = 1; i <= HRX_KERNEL_MAX_ARGS; ++i) strcat(many, ",4");
  strcat(many, "\n");
  CHECK_OK(load_text(f, many, &module));
  expect_failure(vt->kernel.module_get_kernel(f->device, module, "many", &kernel,
                                       &ki),
                 HRX_STATUS_INVALID_ARGUMENT, "too many parameters",
                 "\"many\"", "more than 128", NULL);
  vt->kernel.module_unload(f->device, module);

  CHECK(state->libraries_loaded == state->libraries_unloaded,
        "%d libraries loaded, %d unloaded", state->libraries_loaded,
        state->libraries_unloaded);
  /* Every call on the queue hands the runtime the queue's stream. */
  {
    uint8_t* memory = NULL;
    CHECK_OK(vt->memory.alloc(f->device, 64, (void**)&memory));
    CHECK_OK(vt->queue.fill(f->device, queue, memory, 7, 32));
    CHECK_OK(vt->queue.copy(f->device, queue, memory + 32, memory, 32));
    uint64_t pending = 1;
    bool done = false;
    CHECK_OK(vt->queue.query(f->device, queue, &pending));
    CHECK_OK(vt->queue.wait(f->device, queue, 1000000, &done));
    CHECK(done, "a finite wait of an idle queue not done");
    CHECK_OK(vt->queue.wait(f->device, queue, HRX_WAIT_FOREVER, &done));
    CHECK(vt->queue.native_handle(queue) != (void*)queue,
          "the native handle is the queue's record, not its stream");
    vt->memory.free(f->device, memory);
    CHECK(state->bad_streams == 0, "%d calls got a handle that is no stream",
          state->bad_streams);
  }
  /* Staged uploads of pageable memory, small (memcpy), through the ring and
   * through a block (both written around the caches: the device's
   * settings ask for it), from sources at odd addresses: the bytes. */
  {
    const uint64_t sizes[] = {1000, (256u << 10) + 3, (5u << 20) + 1};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
      const uint64_t n = sizes[i];
      uint8_t* source = malloc(n + 1);
      uint8_t* back = malloc(n);
      uint8_t* memory = NULL;
      CHECK(source && back, "malloc");
      for (uint64_t k = 0; k < n; ++k) {
        source[k + 1] = (uint8_t)(k * 13 + i);
      }
      CHECK_OK(vt->memory.alloc(f->device, n, (void**)&memory));
      CHECK_OK(vt->queue.upload(f->device, queue, memory, source + 1, n));
      bool done = false;
      CHECK_OK(vt->queue.wait(f->device, queue, HRX_WAIT_FOREVER, &done));
      memcpy(back, memory, n);  /* the stand-in's device memory is host's */
      CHECK(memcmp(back, source + 1, n) == 0,
            "a staged upload of %llu bytes moved the wrong bytes",
            (unsigned long long)n);
      vt->memory.free(f->device, memory);
      free(source);
      free(back);
    }
  }
  /* Pinned host memory: caller memory is registered and unregistered;
   * memory pinned already (registered before: "already registered";
   * cudaHostAlloc'd: "invalid value", told apart by cudaHostGetFlags) is
   * usable as it is and never unregistered; transfers of either are plain
   * async copies on the queue's stream. */
  {
    const int registrations = state->host_registrations;
    const int unregistrations = state->host_unregistrations;
    uint8_t* host = malloc(4096);
    uint8_t* pinned = NULL;
    uint8_t* memory = NULL;
    bool registered = false;
    CHECK(host != NULL, "malloc");
    CHECK_OK(vt->memory.host_register(f->device, host, 4096, &registered));
    CHECK(registered, "caller memory not registered");
    CHECK(state->host_registrations == registrations + 1,
          "cudaHostRegister not called");
    registered = true;
    CHECK_OK(vt->memory.host_register(f->device, host, 4096, &registered));
    CHECK(!registered, "registered memory registered again");
    CHECK(state->host_registrations == registrations + 1,
          "a second registration counted");
    CHECK_OK(vt->memory.host_alloc(f->device, 4096, (void**)&pinned));
    registered = true;
    CHECK_OK(vt->memory.host_register(f->device, pinned, 4096, &registered));
    CHECK(!registered, "already pinned memory registered again");
    CHECK_OK(vt->memory.alloc(f->device, 4096, (void**)&memory));
    memset(host, 0x5A, 4096);
    memset(pinned, 0, 4096);
    CHECK_OK(vt->queue.upload_pinned(f->device, queue, memory, host, 4096));
    CHECK_OK(vt->queue.download(f->device, queue, pinned, memory, 4096));
    bool done = false;
    CHECK_OK(vt->queue.wait(f->device, queue, HRX_WAIT_FOREVER, &done));
    CHECK(pinned[0] == 0x5A && pinned[4095] == 0x5A,
          "the direct copies did not move the bytes");
    vt->memory.host_unregister(f->device, host);
    CHECK(state->host_unregistrations == unregistrations + 1,
          "cudaHostUnregister not called");
    vt->memory.free(f->device, memory);
    vt->memory.host_free(f->device, pinned);
    free(host);
    CHECK(state->bad_streams == 0, "%d calls got a handle that is no stream",
          state->bad_streams);
  }
  vt->queue.destroy(f->device, queue);
  CHECK(state->bad_streams == 0, "%d calls got a handle that is no stream",
        state->bad_streams);
  vt->destroy(f->device);
  return 0;
}

static int run_fake_cuda(const char* library) {
  return scenario_fake_cuda(library, false);
}

static int run_fake_cuda_driver(const char* library) {
  return scenario_fake_cuda(library, true);
}

static const hip_scenario_t scenarios[] = {
    {"fake-cuda", "LIBRARY", run_fake_cuda},
    {"fake-cuda-driver", "LIBRARY", run_fake_cuda_driver},
};

int main(int argc, char** argv) {
  return hip_scenario_main(argc, argv, scenarios,
                           sizeof(scenarios) / sizeof(scenarios[0]));
}
