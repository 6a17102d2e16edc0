/* Users' kernels on the hip backend: hal/kernel.h's entries in the
 * runtime's terms. Private to csrc/drivers/hip.
 *
 * Compile: CUDA C++ through NVRTC into a cubin for the device's exact
 * architecture (PTX where the NVRTC cannot make one, hip_rtc.h); HIP C++
 * through hiprtc into a code object. Kernels are looked up by symbol name,
 * so sources declare them extern "C"; where the compiler resolves name
 * expressions, kernel_compile refuses a name that compiled to a C++
 * (mangled) symbol, saying so.
 *
 * Handles: an hrx_native_module_t* is the runtime's own module (NVIDIA:
 * the cudaLibrary_t of cudaLibraryLoadData; AMD: the hipModule_t of
 * hipModuleLoadData) and an hrx_native_kernel_t* its kernel (cudaKernel_t;
 * hipFunction_t). Nothing is allocated per kernel: a launch is one runtime
 * call (cudaLaunchKernel with the cudaKernel_t as the function;
 * hipModuleLaunchKernel), which copies the argument values before it
 * returns; a batch of launches rewrites kernel nodes of a graph instead
 * (hrx_hip_graph_exec_set_kernel_node, hip_launch_graphs.h).
 *
 * Everything a launch would otherwise do once per kernel happens at lookup:
 * the attribute query loads the kernel into the device's context (CUDA
 * loads library kernels lazily), and a kernel whose limit of dynamic
 * shared memory lies below what the device allows is raised to it
 * (cudaFuncAttributeMaxDynamicSharedMemorySize, per device). So a launch
 * never waits for a one-time native allocation; like copy(), it relies on
 * the runtime's queue taking the command without waiting (hal/objects.h,
 * non-blocking mode).
 *
 * Thread-safe: every function may be called from any thread; those that
 * touch a device expect it to be current (hrx_hip_make_current). */
#ifndef HRX_DRIVERS_HIP_HIP_KERNELS_H_
#define HRX_DRIVERS_HIP_HIP_KERNELS_H_

#include "hal/device.h"
#include "hip_types.h"
#include "base/status.h"

/* The compiler kernel_compile would use for `target` on `platform`
 * ("nvidia", "amd"; runtime_library: the HIP runtime in use, or NULL), and
 * what it makes. Loads the compiler; compiles nothing; needs no device. */
hrx_status_t hrx_hip_kernel_toolchain(const char* platform,
                                      const char* runtime_library,
                                      const char* target,
                                      hrx_kernel_compiler_t* out_toolchain);

/* hal/kernel.h's compile for `target`; needs no device. On NVIDIA each
 * out_params[i] (may be NULL) is read from the PTX NVRTC produced
 * (hip_ptx_params.h), where NVRTC gives the PTX and the entry's parameters
 * are readable; left as it is otherwise (AMD: hiprtc gives no PTX). */
hrx_status_t hrx_hip_kernel_compile(const char* platform,
                                    const char* runtime_library,
                                    const char* target, const char* source,
                                    const char* const* names,
                                    size_t name_count,
                                    const char* const* options,
                                    size_t option_count, void** out_image,
                                    size_t* out_size,
                                    hrx_kernel_param_record_t* out_params);

/* hal/kernel.h's describe_image on `platform` ("nvidia", "amd"): on
 * NVIDIA, where the image is PTX (text, not an ELF cubin or a fatbin), each
 * out_params[i] is read from its entry names[i] (hip_ptx_params.h) where
 * that is readable; otherwise nothing is written. Pure: needs no runtime. */
void hrx_hip_kernel_describe_image(const char* platform, const void* image,
                                   size_t size, const char* const* names,
                                   size_t name_count,
                                   hrx_kernel_param_record_t* out_params);

/* Loads an image (cubin, PTX or fatbin on NVIDIA; a code object on AMD;
 * copied first, so `image` need not be NUL-terminated) and, on NVIDIA,
 * loads it into the current context (through the driver's
 * cuLibraryGetModule / cuKernelGetFunction, where the runtime reaches
 * them) so that a corrupt image or one for another architecture is refused
 * here rather than at its first launch.
 * INVALID_ARGUMENT with the runtime's message when the runtime refuses it
 * (OUT_OF_MEMORY when it ran out); nothing stays loaded. UNAVAILABLE when
 * the runtime lacks module loading (NVIDIA: CUDA 12.0 or later). */
hrx_status_t hrx_hip_module_load(const void* image, size_t size,
                                 hrx_native_module_t** out_module);

/* Unloads the module. No launch of its kernels may still run (the caller
 * synchronized the device). */
void hrx_hip_module_unload(hrx_native_module_t* module);

/* Looks a kernel up by symbol and describes it (hal/kernel.h); `device` gives
 * the device's limits (max_threads_per_block, max_shared_bytes_per_block).
 * INVALID_ARGUMENT naming the kernel when the module defines none, or when
 * the kernel cannot run on the device or takes more than
 * HRX_KERNEL_MAX_ARGS parameters. */
hrx_status_t hrx_hip_module_get_kernel(hrx_native_module_t* module,
                                       const char* name,
                                       const hrx_device_info_t* device,
                                       hrx_native_kernel_t** out_kernel,
                                       hrx_kernel_attributes_t* out_info);

/* One launch on `stream` (hal/kernel.h's launch, already checked by the
 * core). A launch the runtime refuses returns its error, with the runtime's
 * last error cleared. */
hrx_status_t hrx_hip_kernel_launch(hrx_native_kernel_t* kernel,
                                   hrx_hip_stream_t stream,
                                   const hrx_kernel_launch_t* launch);

/* Rewrites kernel node `node` of an instantiated graph to run `kernel`
 * with `launch` (function, grid, block, shared memory and argument values,
 * which the runtime copies); launches of `exec` made before are not
 * affected. UNAVAILABLE when the runtime cannot. */
hrx_status_t hrx_hip_graph_exec_set_kernel_node(
    hrx_hip_graph_exec_t exec, hrx_hip_graph_node_t node,
    hrx_native_kernel_t* kernel, const hrx_kernel_launch_t* launch);

/* How many modules were unloaded in this process so far. The runtime may
 * give a kernel loaded later the handle of one unloaded, so whoever keeps a
 * kernel handle to compare with later ones (hip_launch_graphs.c) keeps
 * this count beside it, and a handle remembered before an unload matches
 * nothing after it. */
uint64_t hrx_hip_module_unloads(void);

/* Adds a kernel node to a native graph after deps[0..dep_count). The
 * argument values are copied by the runtime. UNAVAILABLE when the runtime
 * has no kernel nodes, or (AMD) takes no module function in one, so that
 * the caller falls back to running the graph node by node. */
hrx_status_t hrx_hip_graph_add_kernel_node(hrx_hip_graph_t graph,
                                           const hrx_hip_graph_node_t* deps,
                                           size_t dep_count,
                                           hrx_native_kernel_t* kernel,
                                           const hrx_kernel_launch_t* launch,
                                           hrx_hip_graph_node_t* out_node);

#endif /* HRX_DRIVERS_HIP_HIP_KERNELS_H_ */
