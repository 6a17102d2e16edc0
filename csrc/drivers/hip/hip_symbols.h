/* The HIP runtime entry points the hip backend uses: one table, two bindings.
 * No include guard: it is included once per expansion, with these defined:
 *
 *   HRX_HIP_REQUIRED(name, ret, params, amd_symbol, cuda_symbol)
 *   HRX_HIP_OPTIONAL(name, ret, params, amd_symbol, cuda_symbol)
 *
 * `name` is the field of hrx_hip_symbols_t; `amd_symbol` is resolved in
 * libamdhip64 and `cuda_symbol` in libcudart (HIP's NVIDIA platform is the
 * CUDA runtime). HRX_HIP_ABSENT means the platform has no such entry point.
 * A missing REQUIRED symbol makes the backend unavailable; a missing OPTIONAL
 * one leaves its field NULL. Types come from hip_types.h.
 *
 * Where the numbers and prototypes were checked:
 * - AMD: against ROCm 5.2.3 (Debian bookworm libamdhip64-dev 5.2.3-8,
 *   /usr/include/hip) by tests/c/test_hip_constants.c, which assigns each
 *   &amd_symbol below to its field's pointer type with -Werror and
 *   _Static_asserts every HRX_HIP_AMD_* value of hip_constants.h; the
 *   hipDeviceProp_tR0600 offsets against ROCm 6+'s hip_runtime_api.h
 *   (ROCm/rocm-systems projects/hip) by offsetof of a transcription, and by
 *   the same test when it is built against ROCm 6+ headers.
 * - NVIDIA: against CUDA 13.0 (cuda-13.0 toolkit: cuda_runtime_api.h,
 *   driver_types.h) by the same test built with HRX_CHECK_CUDA, which does
 *   the same for each &cuda_symbol and HRX_HIP_CUDA_* value; every symbol
 *   name against `nm -D libcudart.so.13`; and at run time on an H200
 *   (tests/c/test_hip_device.c). cudaMemsetParams' layout
 *   also matches CUDA 10.1-12.x headers. cudaGetDeviceProperties_v2 exists in
 *   CUDA 12.x only (the unversioned name there fills the pre-12 layout);
 *   CUDA 13 exports only the unversioned name, with the current layout.
 *   Only `name`, the first field of every layout, is read.
 * - The entries of users' kernels (the last group) and the driver API entry
 *   points hip_kernels.c obtains at run time (hip_types.h) against ROCm 5.2
 *   and against CUDA 13.0 and 13.5 (the toolkit's headers, and the pip
 *   wheels' as above), including cudaTypedefs.h's PFN_ prototypes; the
 *   NVIDIA path at run time on an H200 (the `device` scenario) and, without
 *   a GPU, against the stand-in libcudart of tests/c/fake_cudart.c.
 */

/* Devices */
HRX_HIP_REQUIRED(GetDeviceCount, hrx_hip_error_t, (int* count),
                 hipGetDeviceCount, cudaGetDeviceCount)
HRX_HIP_REQUIRED(SetDevice, hrx_hip_error_t, (int device),
                 hipSetDevice, cudaSetDevice)
HRX_HIP_REQUIRED(DeviceGetAttribute, hrx_hip_error_t,
                 (int* value, hrx_hip_device_attr_t attr, int device),
                 hipDeviceGetAttribute, cudaDeviceGetAttribute)
/* At least one of the two GetDeviceProperties entries must resolve (checked
 * by the loader). The versioned one fills the newer layout. */
HRX_HIP_OPTIONAL(GetDevicePropertiesVersioned, hrx_hip_error_t,
                 (hrx_hip_device_prop_t* prop, int device),
                 hipGetDevicePropertiesR0600, cudaGetDeviceProperties_v2)
HRX_HIP_OPTIONAL(GetDeviceProperties, hrx_hip_error_t,
                 (hrx_hip_device_prop_t* prop, int device),
                 hipGetDeviceProperties, cudaGetDeviceProperties)
HRX_HIP_OPTIONAL(DeviceGetName, hrx_hip_error_t,
                 (char* name, int length, int device),
                 hipDeviceGetName, HRX_HIP_ABSENT)
HRX_HIP_REQUIRED(MemGetInfo, hrx_hip_error_t,
                 (size_t* free_bytes, size_t* total_bytes),
                 hipMemGetInfo, cudaMemGetInfo)
HRX_HIP_REQUIRED(DeviceSynchronize, hrx_hip_error_t, (void),
                 hipDeviceSynchronize, cudaDeviceSynchronize)
/* Reads and clears the calling thread's last runtime error. */
HRX_HIP_OPTIONAL(GetLastError, hrx_hip_error_t, (void),
                 hipGetLastError, cudaGetLastError)

/* Streams */
HRX_HIP_REQUIRED(StreamCreateWithFlags, hrx_hip_error_t,
                 (hrx_hip_stream_t* stream, unsigned int flags),
                 hipStreamCreateWithFlags, cudaStreamCreateWithFlags)
HRX_HIP_REQUIRED(StreamDestroy, hrx_hip_error_t, (hrx_hip_stream_t stream),
                 hipStreamDestroy, cudaStreamDestroy)
HRX_HIP_REQUIRED(StreamSynchronize, hrx_hip_error_t,
                 (hrx_hip_stream_t stream),
                 hipStreamSynchronize, cudaStreamSynchronize)
HRX_HIP_REQUIRED(StreamWaitEvent, hrx_hip_error_t,
                 (hrx_hip_stream_t stream, hrx_hip_event_t event,
                  unsigned int flags),
                 hipStreamWaitEvent, cudaStreamWaitEvent)
HRX_HIP_OPTIONAL(StreamQuery, hrx_hip_error_t, (hrx_hip_stream_t stream),
                 hipStreamQuery, cudaStreamQuery)
HRX_HIP_OPTIONAL(StreamCreateWithPriority, hrx_hip_error_t,
                 (hrx_hip_stream_t* stream, unsigned int flags, int priority),
                 hipStreamCreateWithPriority, cudaStreamCreateWithPriority)
HRX_HIP_OPTIONAL(DeviceGetStreamPriorityRange, hrx_hip_error_t,
                 (int* least_priority, int* greatest_priority),
                 hipDeviceGetStreamPriorityRange,
                 cudaDeviceGetStreamPriorityRange)

/* Between devices (copies between buffers of two devices). */
HRX_HIP_OPTIONAL(DeviceCanAccessPeer, hrx_hip_error_t,
                 (int* can_access, int device, int peer_device),
                 hipDeviceCanAccessPeer, cudaDeviceCanAccessPeer)
HRX_HIP_OPTIONAL(DeviceEnablePeerAccess, hrx_hip_error_t,
                 (int peer_device, unsigned int flags),
                 hipDeviceEnablePeerAccess, cudaDeviceEnablePeerAccess)
HRX_HIP_OPTIONAL(MemcpyPeerAsync, hrx_hip_error_t,
                 (void* dst, int dst_device, const void* src, int src_device,
                  size_t size, hrx_hip_stream_t stream),
                 hipMemcpyPeerAsync, cudaMemcpyPeerAsync)

/* Memory */
HRX_HIP_REQUIRED(Malloc, hrx_hip_error_t, (void** ptr, size_t size),
                 hipMalloc, cudaMalloc)
HRX_HIP_REQUIRED(Free, hrx_hip_error_t, (void* ptr), hipFree, cudaFree)
HRX_HIP_REQUIRED(HostAlloc, hrx_hip_error_t,
                 (void** ptr, size_t size, unsigned int flags),
                 hipHostMalloc, cudaHostAlloc)
HRX_HIP_REQUIRED(HostFree, hrx_hip_error_t, (void* ptr),
                 hipHostFree, cudaFreeHost)
HRX_HIP_OPTIONAL(HostRegister, hrx_hip_error_t,
                 (void* ptr, size_t size, unsigned int flags),
                 hipHostRegister, cudaHostRegister)
HRX_HIP_OPTIONAL(HostUnregister, hrx_hip_error_t, (void* ptr),
                 hipHostUnregister, cudaHostUnregister)
HRX_HIP_OPTIONAL(HostGetFlags, hrx_hip_error_t,
                 (unsigned int* flags, void* ptr),
                 hipHostGetFlags, cudaHostGetFlags)
HRX_HIP_REQUIRED(MemcpyAsync, hrx_hip_error_t,
                 (void* dst, const void* src, size_t size,
                  hrx_hip_memcpy_kind_t kind, hrx_hip_stream_t stream),
                 hipMemcpyAsync, cudaMemcpyAsync)
HRX_HIP_REQUIRED(MemsetAsync, hrx_hip_error_t,
                 (void* dst, int value, size_t size, hrx_hip_stream_t stream),
                 hipMemsetAsync, cudaMemsetAsync)

/* Events */
HRX_HIP_REQUIRED(EventCreateWithFlags, hrx_hip_error_t,
                 (hrx_hip_event_t* event, unsigned int flags),
                 hipEventCreateWithFlags, cudaEventCreateWithFlags)
HRX_HIP_REQUIRED(EventDestroy, hrx_hip_error_t, (hrx_hip_event_t event),
                 hipEventDestroy, cudaEventDestroy)
HRX_HIP_REQUIRED(EventRecord, hrx_hip_error_t,
                 (hrx_hip_event_t event, hrx_hip_stream_t stream),
                 hipEventRecord, cudaEventRecord)
HRX_HIP_REQUIRED(EventQuery, hrx_hip_error_t, (hrx_hip_event_t event),
                 hipEventQuery, cudaEventQuery)
HRX_HIP_REQUIRED(EventSynchronize, hrx_hip_error_t, (hrx_hip_event_t event),
                 hipEventSynchronize, cudaEventSynchronize)
HRX_HIP_REQUIRED(EventElapsedTime, hrx_hip_error_t,
                 (float* milliseconds, hrx_hip_event_t start,
                  hrx_hip_event_t end),
                 hipEventElapsedTime, cudaEventElapsedTime)

/* Errors and versions */
HRX_HIP_REQUIRED(GetErrorName, const char*, (hrx_hip_error_t error),
                 hipGetErrorName, cudaGetErrorName)
HRX_HIP_REQUIRED(GetErrorString, const char*, (hrx_hip_error_t error),
                 hipGetErrorString, cudaGetErrorString)
HRX_HIP_REQUIRED(RuntimeGetVersion, hrx_hip_error_t, (int* version),
                 hipRuntimeGetVersion, cudaRuntimeGetVersion)
HRX_HIP_REQUIRED(DriverGetVersion, hrx_hip_error_t, (int* version),
                 hipDriverGetVersion, cudaDriverGetVersion)

/* Graphs and host functions (the hip backend's native graphs and
 * queue_host_call). Also checked against CUDA 13.5's headers from the pip
 * wheels nvidia-cuda-runtime and nvidia-cuda-crt 13.5.37 (their include/
 * directories merged as CUDA_HOME/include for hip-constants-cuda). */
HRX_HIP_OPTIONAL(GraphCreate, hrx_hip_error_t,
                 (hrx_hip_graph_t* graph, unsigned int flags),
                 hipGraphCreate, cudaGraphCreate)
HRX_HIP_OPTIONAL(GraphAddMemcpyNode1D, hrx_hip_error_t,
                 (hrx_hip_graph_node_t* node, hrx_hip_graph_t graph,
                  const hrx_hip_graph_node_t* dependencies,
                  size_t dependency_count, void* dst, const void* src,
                  size_t size, hrx_hip_memcpy_kind_t kind),
                 hipGraphAddMemcpyNode1D, cudaGraphAddMemcpyNode1D)
HRX_HIP_OPTIONAL(GraphAddMemsetNode, hrx_hip_error_t,
                 (hrx_hip_graph_node_t* node, hrx_hip_graph_t graph,
                  const hrx_hip_graph_node_t* dependencies,
                  size_t dependency_count,
                  const hrx_hip_memset_params_t* params),
                 hipGraphAddMemsetNode, cudaGraphAddMemsetNode)
HRX_HIP_OPTIONAL(GraphInstantiateWithFlags, hrx_hip_error_t,
                 (hrx_hip_graph_exec_t* exec, hrx_hip_graph_t graph,
                  unsigned long long flags),
                 hipGraphInstantiateWithFlags, cudaGraphInstantiateWithFlags)
HRX_HIP_OPTIONAL(GraphLaunch, hrx_hip_error_t,
                 (hrx_hip_graph_exec_t exec, hrx_hip_stream_t stream),
                 hipGraphLaunch, cudaGraphLaunch)
HRX_HIP_OPTIONAL(GraphExecDestroy, hrx_hip_error_t,
                 (hrx_hip_graph_exec_t exec),
                 hipGraphExecDestroy, cudaGraphExecDestroy)
HRX_HIP_OPTIONAL(GraphDestroy, hrx_hip_error_t, (hrx_hip_graph_t graph),
                 hipGraphDestroy, cudaGraphDestroy)
HRX_HIP_OPTIONAL(LaunchHostFunc, hrx_hip_error_t,
                 (hrx_hip_stream_t stream, hrx_hip_host_fn_t fn,
                  void* user_data),
                 hipLaunchHostFunc, cudaLaunchHostFunc)

/* Kernels loaded at run time: the batch kernel (hip_batch.c). NVIDIA loads
 * PTX through the runtime's library API and launches with cudaLaunchKernel;
 * AMD loads a code object as a module and launches it as a module
 * function. */
HRX_HIP_OPTIONAL(LibraryLoadData, hrx_hip_error_t,
                 (hrx_hip_library_t* library, const void* code,
                  hrx_hip_jit_option_t* jit_options, void** jit_values,
                  unsigned int jit_count,
                  hrx_hip_library_option_t* library_options,
                  void** library_values, unsigned int library_count),
                 HRX_HIP_ABSENT, cudaLibraryLoadData)
HRX_HIP_OPTIONAL(LibraryGetKernel, hrx_hip_error_t,
                 (hrx_hip_kernel_t* kernel, hrx_hip_library_t library,
                  const char* name),
                 HRX_HIP_ABSENT, cudaLibraryGetKernel)
HRX_HIP_OPTIONAL(LaunchKernel, hrx_hip_error_t,
                 (const void* function, hrx_hip_dim3_t grid,
                  hrx_hip_dim3_t block, void** args, size_t shared_bytes,
                  hrx_hip_stream_t stream),
                 HRX_HIP_ABSENT, cudaLaunchKernel)
HRX_HIP_OPTIONAL(ModuleLoadData, hrx_hip_error_t,
                 (hrx_hip_module_t* module, const void* image),
                 hipModuleLoadData, HRX_HIP_ABSENT)
HRX_HIP_OPTIONAL(ModuleGetFunction, hrx_hip_error_t,
                 (hrx_hip_function_t* function, hrx_hip_module_t module,
                  const char* name),
                 hipModuleGetFunction, HRX_HIP_ABSENT)
HRX_HIP_OPTIONAL(ModuleLaunchKernel, hrx_hip_error_t,
                 (hrx_hip_function_t function, unsigned int grid_x,
                  unsigned int grid_y, unsigned int grid_z,
                  unsigned int block_x, unsigned int block_y,
                  unsigned int block_z, unsigned int shared_bytes,
                  hrx_hip_stream_t stream, void** params, void** extra),
                 hipModuleLaunchKernel, HRX_HIP_ABSENT)

/* Users' kernels (hip_kernels.c): unloading, attributes, parameter layout
 * and graph kernel nodes. NVIDIA passes the cudaKernel_t of
 * cudaLibraryGetKernel wherever the runtime API takes a function ("if the
 * specified function does not exist, then it is assumed to be a
 * cudaKernel_t"); AMD's hipFuncGetAttributes / hipFuncSetAttribute take
 * host functions only, so module functions are described with
 * hipFuncGetAttribute. */
HRX_HIP_OPTIONAL(LibraryUnload, hrx_hip_error_t, (hrx_hip_library_t library),
                 HRX_HIP_ABSENT, cudaLibraryUnload)
HRX_HIP_OPTIONAL(LibraryGetKernelCount, hrx_hip_error_t,
                 (unsigned int* count, hrx_hip_library_t library),
                 HRX_HIP_ABSENT, cudaLibraryGetKernelCount)
HRX_HIP_OPTIONAL(LibraryEnumerateKernels, hrx_hip_error_t,
                 (hrx_hip_kernel_t* kernels, unsigned int count,
                  hrx_hip_library_t library),
                 HRX_HIP_ABSENT, cudaLibraryEnumerateKernels)
HRX_HIP_OPTIONAL(ModuleUnload, hrx_hip_error_t, (hrx_hip_module_t module),
                 hipModuleUnload, HRX_HIP_ABSENT)
HRX_HIP_OPTIONAL(FuncGetAttributes, hrx_hip_error_t,
                 (hrx_hip_func_attributes_t* attributes, const void* function),
                 HRX_HIP_ABSENT, cudaFuncGetAttributes)
HRX_HIP_OPTIONAL(FuncSetAttribute, hrx_hip_error_t,
                 (const void* function, hrx_hip_func_attribute_t attribute,
                  int value),
                 HRX_HIP_ABSENT, cudaFuncSetAttribute)
HRX_HIP_OPTIONAL(FuncGetAttribute, hrx_hip_error_t,
                 (int* value, hrx_hip_function_attribute_t attribute,
                  hrx_hip_function_t function),
                 hipFuncGetAttribute, HRX_HIP_ABSENT)
/* The runtime's own parameter query (in the CUDA 12.8 and 13 runtimes);
 * where it is missing, the driver's cuKernelGetParamInfo (CUDA 12.4+) is
 * reached through cudaGetDriverEntryPointByVersion (runtime 12.5+), which
 * needs no link to libcuda. */
HRX_HIP_OPTIONAL(FuncGetParamInfo, hrx_hip_error_t,
                 (const void* function, size_t index, size_t* offset,
                  size_t* size),
                 HRX_HIP_ABSENT, cudaFuncGetParamInfo)
HRX_HIP_OPTIONAL(GetDriverEntryPointByVersion, hrx_hip_error_t,
                 (const char* symbol, void** function,
                  unsigned int cuda_version, unsigned long long flags,
                  hrx_hip_driver_entry_status_t* status),
                 HRX_HIP_ABSENT, cudaGetDriverEntryPointByVersion)
HRX_HIP_OPTIONAL(GraphAddKernelNode, hrx_hip_error_t,
                 (hrx_hip_graph_node_t* node, hrx_hip_graph_t graph,
                  const hrx_hip_graph_node_t* dependencies,
                  size_t dependency_count,
                  const hrx_hip_kernel_node_params_t* params),
                 hipGraphAddKernelNode, cudaGraphAddKernelNode)
/* Launch batches (hip_launch_graphs.h): an instantiated graph's kernel
 * nodes rewritten in place, and nodes turned off. hipGraphNodeSetEnabled
 * came after ROCm 5.2, whose headers this table is checked against: AMD
 * goes without it (exact-size graphs). */
HRX_HIP_OPTIONAL(GraphExecKernelNodeSetParams, hrx_hip_error_t,
                 (hrx_hip_graph_exec_t exec, hrx_hip_graph_node_t node,
                  const hrx_hip_kernel_node_params_t* params),
                 hipGraphExecKernelNodeSetParams,
                 cudaGraphExecKernelNodeSetParams)
HRX_HIP_OPTIONAL(GraphNodeSetEnabled, hrx_hip_error_t,
                 (hrx_hip_graph_exec_t exec, hrx_hip_graph_node_t node,
                  unsigned int enabled),
                 HRX_HIP_ABSENT, cudaGraphNodeSetEnabled)
