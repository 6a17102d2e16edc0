#include "hip_kernels.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip_dynamic.h"
#include "hip_ptx_params.h"
#include "hip_rtc.h"

static bool hrx_hip_kernels_amd(void) {
  return hrx_hip_rt.platform == &hrx_hip_platform_amd;
}

/* -------------------------------------------------------------- compile */

hrx_status_t hrx_hip_kernel_toolchain(const char* platform,
                                      const char* runtime_library,
                                      const char* target,
                                      hrx_kernel_compiler_t* out_toolchain) {
  hrx_rtc_plan_t plan;
  HRX_RETURN_IF_ERROR(
      hrx_hip_rtc_plan(platform, runtime_library, target, true, &plan));
  hrx_kernel_compiler_t toolchain;
  memset(&toolchain, 0, sizeof(toolchain));
  snprintf(toolchain.language, sizeof(toolchain.language), "%s",
           plan.amd ? "hip" : "cuda");
  snprintf(toolchain.compiler, sizeof(toolchain.compiler), "%.200s %.40s",
           plan.library, plan.version);
  snprintf(toolchain.target, sizeof(toolchain.target), "%s", target);
  snprintf(toolchain.image_format, sizeof(toolchain.image_format), "%s",
           hrx_hip_rtc_format_name(plan.format));
  *out_toolchain = toolchain;
  return NULL;
}

hrx_status_t hrx_hip_kernel_compile(const char* platform,
                                    const char* runtime_library,
                                    const char* target, const char* source,
                                    const char* const* names,
                                    size_t name_count,
                                    const char* const* options,
                                    size_t option_count, void** out_image,
                                    size_t* out_size,
                                    hrx_kernel_param_record_t* out_params) {
  hrx_rtc_plan_t plan;
  HRX_RETURN_IF_ERROR(
      hrx_hip_rtc_plan(platform, runtime_library, target, true, &plan));
  /* The program's name is what the compiler's log calls the source. */
  char program_name[160];
  snprintf(program_name, sizeof(program_name), "%.120s%s",
           name_count ? names[0] : "kernels", plan.amd ? ".hip" : ".cu");
  char* image = NULL;
  size_t size = 0;
  char* ptx = NULL;
  size_t ptx_size = 0;
  HRX_RETURN_IF_ERROR(hrx_hip_rtc_compile(
      &plan, source, program_name, options, option_count, names, name_count,
      &image, &size, out_params ? &ptx : NULL, &ptx_size));
  for (size_t i = 0; ptx && i < name_count; ++i) {
    hrx_ptx_params_t params;
    if (hrx_hip_ptx_params(ptx, ptx_size, names[i], &params)) {
      out_params[i] = params;
    }
  }
  free(ptx);
  *out_image = image;
  *out_size = size;
  return NULL;
}

void hrx_hip_kernel_describe_image(const char* platform, const void* image,
                                   size_t size, const char* const* names,
                                   size_t name_count,
                                   hrx_kernel_param_record_t* out_params) {
  if (strcmp(platform, "nvidia") != 0 || !image || size < 4) return;
  /* An ELF cubin ("\x7fELF") or a fatbin (magic 0xba55ed50, little-endian)
   * records no types. */
  const unsigned char* bytes = image;
  if (memcmp(bytes, "\x7f" "ELF", 4) == 0 ||
      (bytes[0] == 0x50 && bytes[1] == 0xed && bytes[2] == 0x55 &&
       bytes[3] == 0xba)) {
    return;
  }
  for (size_t i = 0; i < name_count; ++i) {
    hrx_ptx_params_t params;
    if (hrx_hip_ptx_params(image, size, names[i], &params)) {
      out_params[i] = params;
    }
  }
}

/* --------------------------------------------------------------- modules */

static hrx_hip_library_t hrx_hip_library_of(hrx_native_module_t* module) {
  return (hrx_hip_library_t)module;
}

static hrx_hip_module_t hrx_hip_module_of(hrx_native_module_t* module) {
  return (hrx_hip_module_t)module;
}

static bool hrx_hip_has_modules(void) {
  const hrx_hip_symbols_t* sym = &hrx_hip_rt.sym;
  return hrx_hip_kernels_amd()
             ? sym->ModuleLoadData && sym->ModuleUnload &&
                   sym->ModuleGetFunction && sym->ModuleLaunchKernel
             : sym->LibraryLoadData && sym->LibraryUnload &&
                   sym->LibraryGetKernel && sym->LaunchKernel &&
                   sym->FuncGetAttributes;
}

/* A refused image is the caller's (INVALID_ARGUMENT), unless the runtime
 * ran out of memory. */
#define HRX_HIP_IMAGE_ERROR(name, err)                                    \
  ((err) == hrx_hip_rt.platform->error_out_of_memory                      \
       ? HRX_HIP_ERROR(DEVICE_ERROR, name, err)                           \
       : hrx_status_annotate(HRX_HIP_ERROR(INVALID_ARGUMENT, name, err),  \
                             "the %s cannot load this image",             \
                             hrx_hip_rt.platform->runtime_label))

/* NVIDIA: the driver API entry points, obtained once through
 * cudaGetDriverEntryPointByVersion (runtime 12.5+), so nothing links
 * libcuda; each NULL where the runtime or driver lacks it. */
typedef struct hrx_hip_driver_s {
  hrx_hip_pfn_cuGetErrorName_t get_error_name;
  hrx_hip_pfn_cuLibraryGetModule_t library_get_module;
  hrx_hip_pfn_cuKernelGetFunction_t kernel_get_function;
  hrx_hip_pfn_cuKernelGetParamInfo_t kernel_param_info;
} hrx_hip_driver_t;

static pthread_once_t hrx_hip_driver_once = PTHREAD_ONCE_INIT;
static hrx_hip_driver_t hrx_hip_driver;

static void hrx_hip_driver_entry(const char* symbol, unsigned int version,
                                 void* slot) {
  void* address = NULL;
  hrx_hip_driver_entry_status_t found = -1;
  hrx_hip_error_t err = hrx_hip_rt.sym.GetDriverEntryPointByVersion(
      symbol, &address, version, HRX_HIP_CUDA_ENABLE_DEFAULT, &found);
  if (hrx_hip_ok(err) && found == HRX_HIP_CUDA_DRIVER_ENTRY_POINT_SUCCESS &&
      address) {
    memcpy(slot, &address, sizeof(address));
  }
}

static void hrx_hip_driver_find(void) {
  if (hrx_hip_kernels_amd() || !hrx_hip_rt.sym.GetDriverEntryPointByVersion) {
    return;
  }
  hrx_hip_driver_entry("cuGetErrorName", HRX_HIP_CUDA_GET_ERROR_NAME_VERSION,
                       &hrx_hip_driver.get_error_name);
  hrx_hip_driver_entry("cuLibraryGetModule",
                       HRX_HIP_CUDA_LIBRARY_GET_MODULE_VERSION,
                       &hrx_hip_driver.library_get_module);
  hrx_hip_driver_entry("cuKernelGetFunction",
                       HRX_HIP_CUDA_KERNEL_GET_FUNCTION_VERSION,
                       &hrx_hip_driver.kernel_get_function);
  hrx_hip_driver_entry("cuKernelGetParamInfo",
                       HRX_HIP_CUDA_KERNEL_PARAM_INFO_VERSION,
                       &hrx_hip_driver.kernel_param_info);
}

static const hrx_hip_driver_t* hrx_hip_driver_get(void) {
  pthread_once(&hrx_hip_driver_once, hrx_hip_driver_find);
  return &hrx_hip_driver;
}

/* Whether a driver answer is about the image (a refusal) rather than about
 * the thread's context or a module not loaded yet. */
static bool hrx_hip_driver_refuses(hrx_hip_driver_result_t result) {
  return result != HRX_HIP_CUDA_DRIVER_SUCCESS &&
         result != HRX_HIP_CUDA_DRIVER_ERROR_NOT_FOUND &&
         result != HRX_HIP_CUDA_DRIVER_ERROR_NOT_INITIALIZED &&
         result != HRX_HIP_CUDA_DRIVER_ERROR_DEINITIALIZED &&
         result != HRX_HIP_CUDA_DRIVER_ERROR_INVALID_CONTEXT &&
         result != HRX_HIP_CUDA_DRIVER_ERROR_CONTEXT_IS_DESTROYED;
}

static hrx_status_t hrx_hip_driver_refusal(const char* api,
                                           hrx_hip_driver_result_t result) {
  const char* name = NULL;
  const hrx_hip_driver_t* driver = hrx_hip_driver_get();
  if (driver->get_error_name) driver->get_error_name(result, &name);
  return hrx_make_status(
      result == HRX_HIP_CUDA_DRIVER_ERROR_OUT_OF_MEMORY
          ? HRX_STATUS_OUT_OF_MEMORY
          : HRX_STATUS_INVALID_ARGUMENT,
      "the %s cannot load this image: %s failed: %s (CUresult %d)",
      hrx_hip_rt.platform->runtime_label, api, name ? name : "error",
      (int)result);
}

/* NVIDIA: loads the library into the current context, where an image that
 * is corrupt or for another architecture fails (cudaLibraryLoadData alone
 * defers that to the first launch when modules load lazily, the default
 * since CUDA 12.2): the whole image through the driver's
 * cuLibraryGetModule, else its first kernel through cuKernelGetFunction
 * (what a launch does), else the runtime's attribute query of that
 * kernel. An answer about the thread's context rather than the image
 * leaves the check to the next step, and the last to the first launch. */
static hrx_status_t hrx_hip_library_check(hrx_hip_library_t library) {
  const hrx_hip_symbols_t* sym = &hrx_hip_rt.sym;
  const hrx_hip_driver_t* driver = hrx_hip_driver_get();
  if (driver->library_get_module) {
    hrx_hip_driver_module_t module = NULL;
    hrx_hip_driver_result_t result =
        driver->library_get_module(&module, library);
    if (result == HRX_HIP_CUDA_DRIVER_SUCCESS) return NULL;
    if (hrx_hip_driver_refuses(result)) {
      return hrx_hip_driver_refusal("cuLibraryGetModule", result);
    }
  }
  if (!sym->LibraryGetKernelCount || !sym->LibraryEnumerateKernels) {
    return NULL;  /* checked at lookup instead */
  }
  unsigned int count = 0;
  hrx_hip_error_t err = sym->LibraryGetKernelCount(&count, library);
  if (!hrx_hip_ok(err)) return HRX_HIP_IMAGE_ERROR(LibraryGetKernelCount, err);
  if (count == 0) return NULL;
  hrx_hip_kernel_t first = NULL;
  err = sym->LibraryEnumerateKernels(&first, 1, library);
  if (!hrx_hip_ok(err)) {
    return HRX_HIP_IMAGE_ERROR(LibraryEnumerateKernels, err);
  }
  if (driver->kernel_get_function) {
    hrx_hip_driver_function_t function = NULL;
    hrx_hip_driver_result_t result =
        driver->kernel_get_function(&function, first);
    if (hrx_hip_driver_refuses(result)) {
      return hrx_hip_driver_refusal("cuKernelGetFunction", result);
    }
    return NULL;
  }
  char attributes[HRX_HIP_FUNC_ATTRIBUTES_BUFFER_SIZE];
  memset(attributes, 0, sizeof(attributes));
  err = sym->FuncGetAttributes((hrx_hip_func_attributes_t*)attributes,
                               (const void*)first);
  if (!hrx_hip_ok(err)) return HRX_HIP_IMAGE_ERROR(FuncGetAttributes, err);
  return NULL;
}

hrx_status_t hrx_hip_module_load(const void* image, size_t size,
                                 hrx_native_module_t** out_module) {
  if (!hrx_hip_has_modules()) {
    return hrx_make_status(
        HRX_STATUS_UNAVAILABLE, "%s (%s) cannot load kernel images (needs %s)",
        hrx_hip_rt.platform->runtime_label, hrx_hip_rt.library_name,
        hrx_hip_kernels_amd() ? "hipModuleLoadData and hipModuleUnload"
                              : "the library API of CUDA 12.0 or later");
  }
  if (size == 0) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "the kernel image is empty");
  }
  /* PTX is text the runtime reads up to its NUL; an image read from a file
   * may lack one. */
  char* copy = malloc(size + 1);
  if (!copy) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot copy a kernel image of %zu bytes", size);
  }
  memcpy(copy, image, size);
  copy[size] = '\0';
  const hrx_hip_symbols_t* sym = &hrx_hip_rt.sym;
  hrx_status_t status = NULL;
  void* module = NULL;
  if (hrx_hip_kernels_amd()) {
    hrx_hip_module_t handle = NULL;
    hrx_hip_error_t err = sym->ModuleLoadData(&handle, copy);
    if (!hrx_hip_ok(err)) {
      status = HRX_HIP_IMAGE_ERROR(ModuleLoadData, err);
    }
    module = handle;
  } else {
    hrx_hip_library_t library = NULL;
    hrx_hip_error_t err =
        sym->LibraryLoadData(&library, copy, NULL, NULL, 0, NULL, NULL, 0);
    if (!hrx_hip_ok(err)) {
      status = HRX_HIP_IMAGE_ERROR(LibraryLoadData, err);
    } else {
      status = hrx_hip_library_check(library);
      if (status) (void)hrx_hip_ok(sym->LibraryUnload(library));
    }
    module = library;
  }
  free(copy);
  if (status) return status;
  *out_module = (hrx_native_module_t*)module;
  return NULL;
}

/* Counted before the runtime may hand the handles out again. */
static atomic_uint_fast64_t hrx_hip_unloads;

uint64_t hrx_hip_module_unloads(void) {
  return atomic_load_explicit(&hrx_hip_unloads, memory_order_acquire);
}

void hrx_hip_module_unload(hrx_native_module_t* module) {
  if (!module) return;
  atomic_fetch_add_explicit(&hrx_hip_unloads, 1, memory_order_release);
  hrx_hip_error_t err =
      hrx_hip_kernels_amd()
          ? hrx_hip_rt.sym.ModuleUnload(hrx_hip_module_of(module))
          : hrx_hip_rt.sym.LibraryUnload(hrx_hip_library_of(module));
  (void)hrx_hip_ok(err);  /* nothing to report to; the error is cleared */
}

/* --------------------------------------------------------------- lookups */

/* One parameter's place: 1 found, 0 past the last, -1 the runtime cannot
 * tell. */
static int hrx_hip_param_at(hrx_hip_kernel_t kernel, size_t index,
                            size_t* offset, size_t* size) {
  const hrx_hip_symbols_t* sym = &hrx_hip_rt.sym;
  if (sym->FuncGetParamInfo) {
    hrx_hip_error_t err =
        sym->FuncGetParamInfo((const void*)kernel, index, offset, size);
    if (hrx_hip_ok(err)) return 1;
    return err == hrx_hip_rt.platform->error_invalid_value ? 0 : -1;
  }
  const hrx_hip_driver_t* driver = hrx_hip_driver_get();
  if (!driver->kernel_param_info) return -1;
  hrx_hip_driver_result_t result =
      driver->kernel_param_info(kernel, index, offset, size);
  if (result == HRX_HIP_CUDA_DRIVER_SUCCESS) return 1;
  return result == HRX_HIP_CUDA_DRIVER_ERROR_INVALID_VALUE ? 0 : -1;
}

/* NVIDIA: the parameters' layout, where the runtime or driver can tell. */
static hrx_status_t hrx_hip_describe_params(hrx_hip_kernel_t kernel,
                                            const char* name,
                                            hrx_kernel_attributes_t* info) {
  info->param_count = -1;
  for (size_t i = 0; i <= HRX_KERNEL_MAX_ARGS; ++i) {
    size_t offset = 0;
    size_t size = 0;
    int found = hrx_hip_param_at(kernel, i, &offset, &size);
    if (found < 0) {
      memset(info->param_offset, 0, sizeof(info->param_offset));
      memset(info->param_size, 0, sizeof(info->param_size));
      return NULL;
    }
    if (found == 0) {
      info->param_count = (int)i;
      return NULL;
    }
    if (i == HRX_KERNEL_MAX_ARGS) break;
    info->param_offset[i] = (uint32_t)offset;
    info->param_size[i] = (uint32_t)size;
  }
  return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                         "kernel \"%s\" takes more than %d parameters, the "
                         "most one launch passes",
                         name, HRX_KERNEL_MAX_ARGS);
}

/* A lookup that finds nothing is the caller's. */
static hrx_status_t hrx_hip_lookup_failure(const char* api, const char* name,
                                           hrx_hip_error_t err) {
  const hrx_hip_platform_t* platform = hrx_hip_rt.platform;
  bool missing = err == platform->error_not_found ||
                 err == platform->error_invalid_device_function ||
                 err == platform->error_invalid_value;
  hrx_status_t status = hrx_hip_error_status_at(
      __FILE__, __LINE__,
      missing ? HRX_STATUS_INVALID_ARGUMENT : HRX_STATUS_DEVICE_ERROR, api,
      err);
  return missing ? hrx_status_annotate(
                       status,
                       "the module defines no kernel named \"%s\" (kernels "
                       "are looked up by symbol name: declare them extern "
                       "\"C\")",
                       name)
                 : hrx_status_annotate(status, "looking up kernel \"%s\"",
                                       name);
}

static hrx_status_t hrx_hip_describe_nvidia(hrx_hip_kernel_t kernel,
                                            const char* name,
                                            const hrx_device_info_t* device,
                                            hrx_kernel_attributes_t* info) {
  const hrx_hip_symbols_t* sym = &hrx_hip_rt.sym;
  char attributes[HRX_HIP_FUNC_ATTRIBUTES_BUFFER_SIZE];
  memset(attributes, 0, sizeof(attributes));
  hrx_hip_error_t err = sym->FuncGetAttributes(
      (hrx_hip_func_attributes_t*)attributes, (const void*)kernel);
  if (!hrx_hip_ok(err)) {
    return hrx_status_annotate(
        HRX_HIP_ERROR(INVALID_ARGUMENT, FuncGetAttributes, err),
        "kernel \"%s\" cannot run on this device", name);
  }
  size_t static_shared = 0;
  int max_threads = 0;
  int max_dynamic_now = 0;
  memcpy(&static_shared, attributes + HRX_HIP_CUDA_FUNC_SHARED_SIZE_BYTES_OFFSET,
         sizeof(static_shared));
  memcpy(&max_threads,
         attributes + HRX_HIP_CUDA_FUNC_MAX_THREADS_PER_BLOCK_OFFSET,
         sizeof(max_threads));
  memcpy(&max_dynamic_now,
         attributes + HRX_HIP_CUDA_FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES_OFFSET,
         sizeof(max_dynamic_now));
  info->max_threads_per_block = max_threads > 0 ? (uint32_t)max_threads : 0;
  info->static_shared_bytes = static_shared;
  uint64_t allowed = device->max_shared_bytes_per_block > static_shared
                         ? device->max_shared_bytes_per_block - static_shared
                         : 0;
  uint64_t now = max_dynamic_now > 0 ? (uint64_t)max_dynamic_now : 0;
  if (allowed > now && allowed <= INT32_MAX && sym->FuncSetAttribute) {
    /* The opt-in, once per lookup: launches may then ask for up to the
     * device's limit. Refused, the kernel keeps what it had. */
    err = sym->FuncSetAttribute((const void*)kernel,
                                HRX_HIP_CUDA_FUNC_MAX_DYNAMIC_SHARED_SIZE,
                                (int)allowed);
    if (hrx_hip_ok(err)) now = allowed;
  }
  info->max_dynamic_shared_bytes = now;
  return hrx_hip_describe_params(kernel, name, info);
}

static hrx_status_t hrx_hip_describe_amd(hrx_hip_function_t function,
                                         const hrx_device_info_t* device,
                                         hrx_kernel_attributes_t* info) {
  const hrx_hip_symbols_t* sym = &hrx_hip_rt.sym;
  int max_threads = 0;
  int static_shared = 0;
  if (!sym->FuncGetAttribute ||
      !hrx_hip_ok(sym->FuncGetAttribute(
          &max_threads, HRX_HIP_AMD_FUNC_ATTR_MAX_THREADS_PER_BLOCK,
          function)) ||
      max_threads <= 0) {
    max_threads = (int)device->max_threads_per_block;
  }
  if (!sym->FuncGetAttribute ||
      !hrx_hip_ok(sym->FuncGetAttribute(
          &static_shared, HRX_HIP_AMD_FUNC_ATTR_SHARED_SIZE_BYTES,
          function)) ||
      static_shared < 0) {
    static_shared = 0;
  }
  info->max_threads_per_block = (uint32_t)max_threads;
  info->static_shared_bytes = (uint64_t)static_shared;
  info->max_dynamic_shared_bytes =
      device->max_shared_bytes_per_block > (uint64_t)static_shared
          ? device->max_shared_bytes_per_block - (uint64_t)static_shared
          : 0;
  /* HIP has no parameter query: the core cannot check argument sizes. */
  info->param_count = -1;
  return NULL;
}

hrx_status_t hrx_hip_module_get_kernel(hrx_native_module_t* module,
                                       const char* name,
                                       const hrx_device_info_t* device,
                                       hrx_native_kernel_t** out_kernel,
                                       hrx_kernel_attributes_t* out_info) {
  hrx_kernel_attributes_t info;
  memset(&info, 0, sizeof(info));
  if (hrx_hip_kernels_amd()) {
    hrx_hip_function_t function = NULL;
    hrx_hip_error_t err = hrx_hip_rt.sym.ModuleGetFunction(
        &function, hrx_hip_module_of(module), name);
    if (!hrx_hip_ok(err)) {
      return hrx_hip_lookup_failure(hrx_hip_rt.names.ModuleGetFunction, name,
                                    err);
    }
    HRX_RETURN_IF_ERROR(hrx_hip_describe_amd(function, device, &info));
    *out_kernel = (hrx_native_kernel_t*)function;
  } else {
    hrx_hip_kernel_t kernel = NULL;
    hrx_hip_error_t err = hrx_hip_rt.sym.LibraryGetKernel(
        &kernel, hrx_hip_library_of(module), name);
    if (!hrx_hip_ok(err)) {
      return hrx_hip_lookup_failure(hrx_hip_rt.names.LibraryGetKernel, name,
                                    err);
    }
    HRX_RETURN_IF_ERROR(hrx_hip_describe_nvidia(kernel, name, device, &info));
    *out_kernel = (hrx_native_kernel_t*)kernel;
  }
  *out_info = info;
  return NULL;
}

/* -------------------------------------------------------------- launches */

hrx_status_t hrx_hip_kernel_launch(hrx_native_kernel_t* kernel,
                                   hrx_hip_stream_t stream,
                                   const hrx_kernel_launch_t* launch) {
  /* The runtimes take void** but only read the values. */
  void** args = (void**)(uintptr_t)launch->args;
  hrx_hip_error_t err;
  if (hrx_hip_kernels_amd()) {
    err = hrx_hip_rt.sym.ModuleLaunchKernel(
        (hrx_hip_function_t)kernel, launch->grid[0], launch->grid[1],
        launch->grid[2], launch->block[0], launch->block[1], launch->block[2],
        (unsigned int)launch->shared_bytes, stream, args, NULL);
    if (hrx_hip_ok(err)) return NULL;
    return HRX_HIP_ERROR(DEVICE_ERROR, ModuleLaunchKernel, err);
  }
  hrx_hip_dim3_t grid = {launch->grid[0], launch->grid[1], launch->grid[2]};
  hrx_hip_dim3_t block = {launch->block[0], launch->block[1],
                          launch->block[2]};
  err = hrx_hip_rt.sym.LaunchKernel((const void*)kernel, grid, block, args,
                                    (size_t)launch->shared_bytes, stream);
  if (hrx_hip_ok(err)) return NULL;
  return HRX_HIP_ERROR(DEVICE_ERROR, LaunchKernel, err);
}

/* A kernel node's parameters in the platform's layout (the two differ,
 * hip_constants.h); `storage` holds them, the result points into it. The
 * argument values stay the launch's: the runtime copies them at the call
 * that takes the parameters. */
typedef union hrx_hip_kernel_node_storage_u {
  hrx_hip_amd_kernel_node_params_t amd;
  hrx_hip_cuda_kernel_node_params_t cuda;
} hrx_hip_kernel_node_storage_t;

static const hrx_hip_kernel_node_params_t* hrx_hip_kernel_node_params(
    hrx_native_kernel_t* kernel, const hrx_kernel_launch_t* launch,
    hrx_hip_kernel_node_storage_t* storage) {
  void** args = (void**)(uintptr_t)launch->args;
  hrx_hip_dim3_t grid = {launch->grid[0], launch->grid[1], launch->grid[2]};
  hrx_hip_dim3_t block = {launch->block[0], launch->block[1],
                          launch->block[2]};
  unsigned int shared = (unsigned int)launch->shared_bytes;
  if (hrx_hip_kernels_amd()) {
    storage->amd = (hrx_hip_amd_kernel_node_params_t){
        .block = block, .extra = NULL, .func = (void*)kernel, .grid = grid,
        .kernel_params = args, .shared_bytes = shared};
  } else {
    storage->cuda = (hrx_hip_cuda_kernel_node_params_t){
        .func = (void*)kernel, .grid = grid, .block = block,
        .shared_bytes = shared, .kernel_params = args, .extra = NULL};
  }
  return (const hrx_hip_kernel_node_params_t*)storage;
}

hrx_status_t hrx_hip_graph_exec_set_kernel_node(
    hrx_hip_graph_exec_t exec, hrx_hip_graph_node_t node,
    hrx_native_kernel_t* kernel, const hrx_kernel_launch_t* launch) {
  const hrx_hip_symbols_t* sym = &hrx_hip_rt.sym;
  if (!sym->GraphExecKernelNodeSetParams) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "the %s cannot rewrite a graph's kernel nodes",
                           hrx_hip_rt.platform->runtime_label);
  }
  hrx_hip_kernel_node_storage_t storage;
  hrx_hip_error_t err = sym->GraphExecKernelNodeSetParams(
      exec, node, hrx_hip_kernel_node_params(kernel, launch, &storage));
  if (!hrx_hip_ok(err)) {
    return HRX_HIP_ERROR(DEVICE_ERROR, GraphExecKernelNodeSetParams, err);
  }
  return NULL;
}

hrx_status_t hrx_hip_graph_add_kernel_node(hrx_hip_graph_t graph,
                                           const hrx_hip_graph_node_t* deps,
                                           size_t dep_count,
                                           hrx_native_kernel_t* kernel,
                                           const hrx_kernel_launch_t* launch,
                                           hrx_hip_graph_node_t* out_node) {
  const hrx_hip_symbols_t* sym = &hrx_hip_rt.sym;
  if (!sym->GraphAddKernelNode) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "the %s has no graph kernel nodes",
                           hrx_hip_rt.platform->runtime_label);
  }
  hrx_hip_kernel_node_storage_t storage;
  hrx_hip_error_t err = sym->GraphAddKernelNode(
      out_node, graph, deps, dep_count,
      hrx_hip_kernel_node_params(kernel, launch, &storage));
  if (hrx_hip_kernels_amd() &&
      err == hrx_hip_rt.platform->error_invalid_device_function) {
    /* HIP releases that look kernel nodes up among host functions only. */
    hrx_hip_forget_error(err);
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "this %s takes no module kernel in a graph "
                           "kernel node",
                           hrx_hip_rt.platform->runtime_label);
  }
  if (!hrx_hip_ok(err)) {
    return HRX_HIP_ERROR(DEVICE_ERROR, GraphAddKernelNode, err);
  }
  return NULL;
}
