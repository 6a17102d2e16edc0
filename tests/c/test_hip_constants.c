/* Compile-time check of the hip backend's declarations against the real
 * runtime headers. Nothing runs: compiling it with -Werror is the test.
 *
 *   AMD:    -D__HIP_PLATFORM_AMD__, <hip/hip_runtime_api.h>
 *   NVIDIA: -DHRX_CHECK_CUDA, <cuda_runtime_api.h>
 *
 * It maps the names of hip_types.h onto the real types, expands
 * hip_symbols.h assigning each real function to its table entry's pointer
 * type (a mismatch in any parameter or the return type is an
 * incompatible-pointer-types error), checks that the int-sized and opaque
 * substitutes the backend really uses have the real types' sizes, and
 * _Static_asserts every constant and offset of hip_constants.h.
 *
 * Build: make -f tests/c/hip.mk hip-constants (hip-constants-cuda). */
#include <stddef.h>

#if defined(HRX_CHECK_CUDA)

#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

/* CUresult: the driver entry points obtained at run time return it. */
typedef CUresult hrx_hip_driver_result_t;

typedef cudaError_t hrx_hip_error_t;
typedef enum cudaMemcpyKind hrx_hip_memcpy_kind_t;
typedef enum cudaDeviceAttr hrx_hip_device_attr_t;
typedef cudaStream_t hrx_hip_stream_t;
typedef cudaEvent_t hrx_hip_event_t;
typedef cudaGraph_t hrx_hip_graph_t;
typedef cudaGraphNode_t hrx_hip_graph_node_t;
typedef cudaGraphExec_t hrx_hip_graph_exec_t;
typedef struct cudaDeviceProp hrx_hip_device_prop_t;
typedef struct cudaMemsetParams hrx_hip_memset_params_t;
typedef cudaHostFn_t hrx_hip_host_fn_t;
typedef cudaLibrary_t hrx_hip_library_t;
typedef cudaKernel_t hrx_hip_kernel_t;
typedef enum cudaJitOption hrx_hip_jit_option_t;
typedef enum cudaLibraryOption hrx_hip_library_option_t;
typedef dim3 hrx_hip_dim3_t;
typedef struct cudaFuncAttributes hrx_hip_func_attributes_t;
typedef enum cudaFuncAttribute hrx_hip_func_attribute_t;
typedef enum cudaDriverEntryPointQueryResult hrx_hip_driver_entry_status_t;
typedef struct cudaKernelNodeParams hrx_hip_kernel_node_params_t;
typedef CUmodule hrx_hip_driver_module_t;
typedef CUfunction hrx_hip_driver_function_t;
/* AMD-only entries (absent on NVIDIA). */
typedef struct hrx_hip_module_opaque_s* hrx_hip_module_t;
typedef struct hrx_hip_function_opaque_s* hrx_hip_function_t;
typedef int hrx_hip_function_attribute_t;
#define HRX_HIP_TYPES_DEFINED 1

#if CUDART_VERSION >= 13000
/* CUDA 13 dropped the _v2 name: the unversioned entry point fills the
 * current layout. The loader binds whichever the library exports. */
#define cudaGetDeviceProperties_v2 cudaGetDeviceProperties
#endif

#else /* AMD */

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>
#include <hip/hip_version.h>

typedef hipError_t hrx_hip_error_t;
typedef hipMemcpyKind hrx_hip_memcpy_kind_t;
typedef hipDeviceAttribute_t hrx_hip_device_attr_t;
typedef hipStream_t hrx_hip_stream_t;
typedef hipEvent_t hrx_hip_event_t;
typedef hipGraph_t hrx_hip_graph_t;
typedef hipGraphNode_t hrx_hip_graph_node_t;
typedef hipGraphExec_t hrx_hip_graph_exec_t;
typedef hipDeviceProp_t hrx_hip_device_prop_t;
typedef hipMemsetParams hrx_hip_memset_params_t;
typedef hipHostFn_t hrx_hip_host_fn_t;
typedef hipModule_t hrx_hip_module_t;
typedef hipFunction_t hrx_hip_function_t;
typedef dim3 hrx_hip_dim3_t;
typedef hipFunction_attribute hrx_hip_function_attribute_t;
typedef hipKernelNodeParams hrx_hip_kernel_node_params_t;
/* NVIDIA-only entries (absent on AMD). */
typedef struct hrx_hip_library_opaque_s* hrx_hip_library_t;
typedef struct hrx_hip_kernel_opaque_s* hrx_hip_kernel_t;
typedef int hrx_hip_jit_option_t;
typedef int hrx_hip_library_option_t;
typedef struct hrx_hip_func_attributes_opaque_s hrx_hip_func_attributes_t;
typedef int hrx_hip_func_attribute_t;
typedef int hrx_hip_driver_entry_status_t;
typedef int hrx_hip_driver_result_t;
typedef struct hrx_hip_driver_module_opaque_s* hrx_hip_driver_module_t;
typedef struct hrx_hip_driver_function_opaque_s* hrx_hip_driver_function_t;
#define HRX_HIP_TYPES_DEFINED 1

#if HIP_VERSION_MAJOR < 6
/* ROCm 5 predates the versioned entry point; the loader binds it only where
 * the library exports it, and its prototype is the unversioned one with the
 * R0600 struct, which ROCm 6 headers check directly. */
#define hipGetDevicePropertiesR0600 hipGetDeviceProperties
#endif

#endif

#include "hal/device.h"
#include "drivers/hip/hip_dynamic.h"

/* Entries a platform does not have are skipped. */
#define HRX_HIP_ABSENT 0

#if defined(HRX_CHECK_CUDA)
#define HRX_HIP_CHECK_SYMBOL(amd_symbol, cuda_symbol) cuda_symbol
#else
#define HRX_HIP_CHECK_SYMBOL(amd_symbol, cuda_symbol) amd_symbol
#endif

void hrx_hip_check_prototypes(void);
void hrx_hip_check_prototypes(void) {
#define HRX_HIP_REQUIRED(name, ret, params, amd_symbol, cuda_symbol) \
  hrx_hip_pfn_##name hrx_hip_check_##name =                          \
      HRX_HIP_CHECK_SYMBOL(amd_symbol, cuda_symbol);                 \
  (void)hrx_hip_check_##name;
#define HRX_HIP_OPTIONAL HRX_HIP_REQUIRED
#include "drivers/hip/hip_symbols.h"
#undef HRX_HIP_REQUIRED
#undef HRX_HIP_OPTIONAL
}

#define HRX_SAME_OFFSET(ours, field, real, real_field)                 \
  _Static_assert(offsetof(ours, field) == offsetof(real, real_field), \
                 #ours "." #field " is at " #real "." #real_field)

#if defined(HRX_CHECK_CUDA)

/* The substitutes of hip_types.h. */
_Static_assert(sizeof(cudaError_t) == sizeof(int), "cudaError_t is an int");
_Static_assert(sizeof(enum cudaMemcpyKind) == sizeof(int), "memcpy kind");
_Static_assert(sizeof(enum cudaDeviceAttr) == sizeof(int), "device attr");
_Static_assert(sizeof(cudaStream_t) == sizeof(void*), "stream handle");
_Static_assert(sizeof(cudaEvent_t) == sizeof(void*), "event handle");
_Static_assert(sizeof(dim3) == 3 * sizeof(unsigned int), "dim3");
_Static_assert(sizeof(enum cudaJitOption) == sizeof(int), "jit option");
_Static_assert(sizeof(enum cudaLibraryOption) == sizeof(int), "lib option");

_Static_assert(HRX_HIP_CUDA_SUCCESS == cudaSuccess, "cudaSuccess");
_Static_assert(HRX_HIP_CUDA_ERROR_OUT_OF_MEMORY == cudaErrorMemoryAllocation,
               "cudaErrorMemoryAllocation");
_Static_assert(HRX_HIP_CUDA_ERROR_NO_DEVICE == cudaErrorNoDevice,
               "cudaErrorNoDevice");
_Static_assert(HRX_HIP_CUDA_ERROR_NOT_READY == cudaErrorNotReady,
               "cudaErrorNotReady");
_Static_assert(HRX_HIP_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED ==
                   cudaErrorPeerAccessAlreadyEnabled,
               "cudaErrorPeerAccessAlreadyEnabled");
_Static_assert(HRX_HIP_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED ==
                   cudaErrorHostMemoryAlreadyRegistered,
               "cudaErrorHostMemoryAlreadyRegistered");
_Static_assert(HRX_HIP_CUDA_STREAM_NON_BLOCKING == cudaStreamNonBlocking,
               "cudaStreamNonBlocking");
_Static_assert(HRX_HIP_CUDA_EVENT_DISABLE_TIMING == cudaEventDisableTiming,
               "cudaEventDisableTiming");
_Static_assert(HRX_HIP_CUDA_EVENT_DEFAULT == cudaEventDefault,
               "cudaEventDefault");
_Static_assert(HRX_HIP_CUDA_HOST_ALLOC_DEFAULT == cudaHostAllocDefault,
               "cudaHostAllocDefault");
_Static_assert(HRX_HIP_CUDA_HOST_REGISTER_DEFAULT == cudaHostRegisterDefault,
               "cudaHostRegisterDefault");
_Static_assert(HRX_HIP_CUDA_MEMCPY_HOST_TO_DEVICE == cudaMemcpyHostToDevice,
               "cudaMemcpyHostToDevice");
_Static_assert(HRX_HIP_CUDA_MEMCPY_DEVICE_TO_HOST == cudaMemcpyDeviceToHost,
               "cudaMemcpyDeviceToHost");
_Static_assert(HRX_HIP_CUDA_MEMCPY_DEVICE_TO_DEVICE ==
                   cudaMemcpyDeviceToDevice,
               "cudaMemcpyDeviceToDevice");
_Static_assert(HRX_HIP_CUDA_ATTR_COMPUTE_CAPABILITY_MAJOR ==
                   cudaDevAttrComputeCapabilityMajor,
               "cudaDevAttrComputeCapabilityMajor");
_Static_assert(HRX_HIP_CUDA_ATTR_COMPUTE_CAPABILITY_MINOR ==
                   cudaDevAttrComputeCapabilityMinor,
               "cudaDevAttrComputeCapabilityMinor");

_Static_assert(offsetof(struct cudaDeviceProp, name) ==
                   HRX_HIP_CUDA_PROP_NAME_OFFSET,
               "cudaDeviceProp.name offset");
_Static_assert(offsetof(struct cudaDeviceProp, totalGlobalMem) ==
                   HRX_HIP_CUDA_PROP_TOTAL_GLOBAL_MEM_OFFSET,
               "cudaDeviceProp.totalGlobalMem offset");
_Static_assert(sizeof(((struct cudaDeviceProp*)0)->name) ==
                   HRX_HIP_CUDA_PROP_NAME_SIZE,
               "cudaDeviceProp.name size");
_Static_assert(sizeof(struct cudaDeviceProp) <= HRX_HIP_DEVICE_PROP_BUFFER_SIZE,
               "cudaDeviceProp fits the property buffer");

/* Users' kernels. */
_Static_assert(sizeof(enum cudaFuncAttribute) == sizeof(int), "func attr");
_Static_assert(sizeof(enum cudaDriverEntryPointQueryResult) == sizeof(int),
               "entry point query result");
_Static_assert(sizeof(CUresult) == sizeof(int), "CUresult");
_Static_assert(HRX_HIP_CUDA_ERROR_INVALID_VALUE == cudaErrorInvalidValue,
               "cudaErrorInvalidValue");
_Static_assert(HRX_HIP_CUDA_ERROR_INVALID_DEVICE_FUNCTION ==
                   cudaErrorInvalidDeviceFunction,
               "cudaErrorInvalidDeviceFunction");
_Static_assert(HRX_HIP_CUDA_ERROR_NOT_FOUND == cudaErrorSymbolNotFound,
               "cudaErrorSymbolNotFound");
_Static_assert(HRX_HIP_CUDA_ATTR_MAX_THREADS_PER_BLOCK ==
                   cudaDevAttrMaxThreadsPerBlock,
               "cudaDevAttrMaxThreadsPerBlock");
_Static_assert(HRX_HIP_CUDA_ATTR_MAX_BLOCK_DIM_X == cudaDevAttrMaxBlockDimX,
               "cudaDevAttrMaxBlockDimX");
_Static_assert(HRX_HIP_CUDA_ATTR_MAX_BLOCK_DIM_Y == cudaDevAttrMaxBlockDimY,
               "cudaDevAttrMaxBlockDimY");
_Static_assert(HRX_HIP_CUDA_ATTR_MAX_BLOCK_DIM_Z == cudaDevAttrMaxBlockDimZ,
               "cudaDevAttrMaxBlockDimZ");
_Static_assert(HRX_HIP_CUDA_ATTR_MAX_GRID_DIM_X == cudaDevAttrMaxGridDimX,
               "cudaDevAttrMaxGridDimX");
_Static_assert(HRX_HIP_CUDA_ATTR_MAX_GRID_DIM_Y == cudaDevAttrMaxGridDimY,
               "cudaDevAttrMaxGridDimY");
_Static_assert(HRX_HIP_CUDA_ATTR_MAX_GRID_DIM_Z == cudaDevAttrMaxGridDimZ,
               "cudaDevAttrMaxGridDimZ");
_Static_assert(HRX_HIP_CUDA_ATTR_MAX_SHARED_PER_BLOCK_OPTIN ==
                   cudaDevAttrMaxSharedMemoryPerBlockOptin,
               "cudaDevAttrMaxSharedMemoryPerBlockOptin");
_Static_assert(HRX_HIP_CUDA_FUNC_MAX_DYNAMIC_SHARED_SIZE ==
                   cudaFuncAttributeMaxDynamicSharedMemorySize,
               "cudaFuncAttributeMaxDynamicSharedMemorySize");
_Static_assert(offsetof(struct cudaFuncAttributes, sharedSizeBytes) ==
                   HRX_HIP_CUDA_FUNC_SHARED_SIZE_BYTES_OFFSET,
               "cudaFuncAttributes.sharedSizeBytes offset");
_Static_assert(sizeof(((struct cudaFuncAttributes*)0)->sharedSizeBytes) ==
                   sizeof(size_t),
               "cudaFuncAttributes.sharedSizeBytes size");
_Static_assert(offsetof(struct cudaFuncAttributes, maxThreadsPerBlock) ==
                   HRX_HIP_CUDA_FUNC_MAX_THREADS_PER_BLOCK_OFFSET,
               "cudaFuncAttributes.maxThreadsPerBlock offset");
_Static_assert(offsetof(struct cudaFuncAttributes,
                        maxDynamicSharedSizeBytes) ==
                   HRX_HIP_CUDA_FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES_OFFSET,
               "cudaFuncAttributes.maxDynamicSharedSizeBytes offset");
_Static_assert(sizeof(((struct cudaFuncAttributes*)0)->maxThreadsPerBlock) ==
                       sizeof(int) &&
                   sizeof(((struct cudaFuncAttributes*)0)
                              ->maxDynamicSharedSizeBytes) == sizeof(int),
               "cudaFuncAttributes int fields");
_Static_assert(sizeof(struct cudaFuncAttributes) <=
                   HRX_HIP_FUNC_ATTRIBUTES_BUFFER_SIZE,
               "cudaFuncAttributes fits the attribute buffer");
_Static_assert(HRX_HIP_CUDA_ENABLE_DEFAULT == cudaEnableDefault,
               "cudaEnableDefault");
_Static_assert(HRX_HIP_CUDA_DRIVER_ENTRY_POINT_SUCCESS ==
                   cudaDriverEntryPointSuccess,
               "cudaDriverEntryPointSuccess");
_Static_assert(HRX_HIP_CUDA_DRIVER_SUCCESS == CUDA_SUCCESS, "CUDA_SUCCESS");
_Static_assert(HRX_HIP_CUDA_DRIVER_ERROR_INVALID_VALUE ==
                   CUDA_ERROR_INVALID_VALUE,
               "CUDA_ERROR_INVALID_VALUE");
_Static_assert(HRX_HIP_CUDA_DRIVER_ERROR_OUT_OF_MEMORY ==
                   CUDA_ERROR_OUT_OF_MEMORY,
               "CUDA_ERROR_OUT_OF_MEMORY");
_Static_assert(HRX_HIP_CUDA_DRIVER_ERROR_NOT_INITIALIZED ==
                   CUDA_ERROR_NOT_INITIALIZED,
               "CUDA_ERROR_NOT_INITIALIZED");
_Static_assert(HRX_HIP_CUDA_DRIVER_ERROR_DEINITIALIZED ==
                   CUDA_ERROR_DEINITIALIZED,
               "CUDA_ERROR_DEINITIALIZED");
_Static_assert(HRX_HIP_CUDA_DRIVER_ERROR_INVALID_CONTEXT ==
                   CUDA_ERROR_INVALID_CONTEXT,
               "CUDA_ERROR_INVALID_CONTEXT");
_Static_assert(HRX_HIP_CUDA_DRIVER_ERROR_NOT_FOUND == CUDA_ERROR_NOT_FOUND,
               "CUDA_ERROR_NOT_FOUND");
_Static_assert(HRX_HIP_CUDA_DRIVER_ERROR_CONTEXT_IS_DESTROYED ==
                   CUDA_ERROR_CONTEXT_IS_DESTROYED,
               "CUDA_ERROR_CONTEXT_IS_DESTROYED");
/* The driver entry points as hip_kernels.c calls them: a cudaKernel_t is
 * a CUkernel, a cudaLibrary_t a CUlibrary; the versions are those of the
 * PFN_ typedefs. */
_Static_assert(__builtin_types_compatible_p(cudaKernel_t, CUkernel),
               "cudaKernel_t is a CUkernel");
_Static_assert(__builtin_types_compatible_p(cudaLibrary_t, CUlibrary),
               "cudaLibrary_t is a CUlibrary");
_Static_assert(__builtin_types_compatible_p(
                   PFN_cuKernelGetParamInfo_v12040,
                   hrx_hip_pfn_cuKernelGetParamInfo_t),
               "cuKernelGetParamInfo's prototype");
_Static_assert(HRX_HIP_CUDA_KERNEL_PARAM_INFO_VERSION == 12040,
               "the version of PFN_cuKernelGetParamInfo_v12040");
_Static_assert(__builtin_types_compatible_p(PFN_cuLibraryGetModule_v12000,
                                            hrx_hip_pfn_cuLibraryGetModule_t),
               "cuLibraryGetModule's prototype");
_Static_assert(HRX_HIP_CUDA_LIBRARY_GET_MODULE_VERSION == 12000,
               "the version of PFN_cuLibraryGetModule_v12000");
_Static_assert(__builtin_types_compatible_p(PFN_cuKernelGetFunction_v12000,
                                            hrx_hip_pfn_cuKernelGetFunction_t),
               "cuKernelGetFunction's prototype");
_Static_assert(HRX_HIP_CUDA_KERNEL_GET_FUNCTION_VERSION == 12000,
               "the version of PFN_cuKernelGetFunction_v12000");
_Static_assert(__builtin_types_compatible_p(PFN_cuGetErrorName_v6000,
                                            hrx_hip_pfn_cuGetErrorName_t),
               "cuGetErrorName's prototype");
_Static_assert(HRX_HIP_CUDA_GET_ERROR_NAME_VERSION == 6000,
               "the version of PFN_cuGetErrorName_v6000");

_Static_assert(sizeof(hrx_hip_cuda_kernel_node_params_t) ==
                   sizeof(struct cudaKernelNodeParams),
               "cudaKernelNodeParams size");
HRX_SAME_OFFSET(hrx_hip_cuda_kernel_node_params_t, func,
                struct cudaKernelNodeParams, func);
HRX_SAME_OFFSET(hrx_hip_cuda_kernel_node_params_t, grid,
                struct cudaKernelNodeParams, gridDim);
HRX_SAME_OFFSET(hrx_hip_cuda_kernel_node_params_t, block,
                struct cudaKernelNodeParams, blockDim);
HRX_SAME_OFFSET(hrx_hip_cuda_kernel_node_params_t, shared_bytes,
                struct cudaKernelNodeParams, sharedMemBytes);
HRX_SAME_OFFSET(hrx_hip_cuda_kernel_node_params_t, kernel_params,
                struct cudaKernelNodeParams, kernelParams);
HRX_SAME_OFFSET(hrx_hip_cuda_kernel_node_params_t, extra,
                struct cudaKernelNodeParams, extra);

_Static_assert(sizeof(hrx_hip_cuda_memset_params_t) ==
                   sizeof(struct cudaMemsetParams),
               "cudaMemsetParams size");
HRX_SAME_OFFSET(hrx_hip_cuda_memset_params_t, dst, struct cudaMemsetParams,
                dst);
HRX_SAME_OFFSET(hrx_hip_cuda_memset_params_t, pitch, struct cudaMemsetParams,
                pitch);
HRX_SAME_OFFSET(hrx_hip_cuda_memset_params_t, value, struct cudaMemsetParams,
                value);
HRX_SAME_OFFSET(hrx_hip_cuda_memset_params_t, element_size,
                struct cudaMemsetParams, elementSize);
HRX_SAME_OFFSET(hrx_hip_cuda_memset_params_t, width, struct cudaMemsetParams,
                width);
HRX_SAME_OFFSET(hrx_hip_cuda_memset_params_t, height, struct cudaMemsetParams,
                height);

#else /* AMD */

_Static_assert(sizeof(hipError_t) == sizeof(int), "hipError_t is an int");
_Static_assert(sizeof(hipMemcpyKind) == sizeof(int), "memcpy kind");
_Static_assert(sizeof(hipDeviceAttribute_t) == sizeof(int), "device attr");
_Static_assert(sizeof(hipStream_t) == sizeof(void*), "stream handle");
_Static_assert(sizeof(hipEvent_t) == sizeof(void*), "event handle");
_Static_assert(sizeof(dim3) == 3 * sizeof(unsigned int), "dim3");
_Static_assert(sizeof(hipModule_t) == sizeof(void*), "module handle");
_Static_assert(sizeof(hipFunction_t) == sizeof(void*), "function handle");

_Static_assert(HRX_HIP_AMD_SUCCESS == hipSuccess, "hipSuccess");
_Static_assert(HRX_HIP_AMD_ERROR_OUT_OF_MEMORY == hipErrorOutOfMemory,
               "hipErrorOutOfMemory");
_Static_assert(HRX_HIP_AMD_ERROR_NO_DEVICE == hipErrorNoDevice,
               "hipErrorNoDevice");
_Static_assert(HRX_HIP_AMD_ERROR_NOT_READY == hipErrorNotReady,
               "hipErrorNotReady");
_Static_assert(HRX_HIP_AMD_ERROR_PEER_ACCESS_ALREADY_ENABLED ==
                   hipErrorPeerAccessAlreadyEnabled,
               "hipErrorPeerAccessAlreadyEnabled");
_Static_assert(HRX_HIP_AMD_ERROR_HOST_MEMORY_ALREADY_REGISTERED ==
                   hipErrorHostMemoryAlreadyRegistered,
               "hipErrorHostMemoryAlreadyRegistered");
_Static_assert(HRX_HIP_AMD_STREAM_NON_BLOCKING == hipStreamNonBlocking,
               "hipStreamNonBlocking");
_Static_assert(HRX_HIP_AMD_EVENT_DISABLE_TIMING == hipEventDisableTiming,
               "hipEventDisableTiming");
_Static_assert(HRX_HIP_AMD_EVENT_DEFAULT == hipEventDefault,
               "hipEventDefault");
_Static_assert(HRX_HIP_AMD_HOST_ALLOC_DEFAULT == hipHostMallocDefault,
               "hipHostMallocDefault");
_Static_assert(HRX_HIP_AMD_HOST_REGISTER_DEFAULT == hipHostRegisterDefault,
               "hipHostRegisterDefault");
_Static_assert(HRX_HIP_AMD_MEMCPY_HOST_TO_DEVICE == hipMemcpyHostToDevice,
               "hipMemcpyHostToDevice");
_Static_assert(HRX_HIP_AMD_MEMCPY_DEVICE_TO_HOST == hipMemcpyDeviceToHost,
               "hipMemcpyDeviceToHost");
_Static_assert(HRX_HIP_AMD_MEMCPY_DEVICE_TO_DEVICE == hipMemcpyDeviceToDevice,
               "hipMemcpyDeviceToDevice");
_Static_assert(HRX_HIP_AMD_ATTR_COMPUTE_CAPABILITY_MAJOR ==
                   hipDeviceAttributeComputeCapabilityMajor,
               "hipDeviceAttributeComputeCapabilityMajor");
_Static_assert(HRX_HIP_AMD_ATTR_COMPUTE_CAPABILITY_MINOR ==
                   hipDeviceAttributeComputeCapabilityMinor,
               "hipDeviceAttributeComputeCapabilityMinor");

_Static_assert(offsetof(hipDeviceProp_t, name) == HRX_HIP_AMD_PROP_NAME_OFFSET,
               "hipDeviceProp_t.name offset");
_Static_assert(sizeof(((hipDeviceProp_t*)0)->name) ==
                   HRX_HIP_AMD_PROP_NAME_SIZE,
               "hipDeviceProp_t.name size");
_Static_assert(sizeof(((hipDeviceProp_t*)0)->gcnArchName) ==
                   HRX_HIP_AMD_PROP_GCN_ARCH_NAME_SIZE,
               "hipDeviceProp_t.gcnArchName size");
_Static_assert(sizeof(hipDeviceProp_t) <= HRX_HIP_DEVICE_PROP_BUFFER_SIZE,
               "hipDeviceProp_t fits the property buffer");
#if HIP_VERSION_MAJOR < 6
/* ROCm 5: hipDeviceProp_t is the layout of the unversioned entry point. */
_Static_assert(offsetof(hipDeviceProp_t, gcnArchName) ==
                   HRX_HIP_AMD_PROP_R0000_GCN_ARCH_NAME_OFFSET,
               "hipDeviceProp_t (R0000).gcnArchName offset");
_Static_assert(sizeof(hipDeviceProp_t) == HRX_HIP_AMD_PROP_R0000_SIZE,
               "hipDeviceProp_t (R0000) size");
#else
/* ROCm 6+: hipDeviceProp_t is hipDeviceProp_tR0600. */
_Static_assert(offsetof(hipDeviceProp_tR0600, gcnArchName) ==
                   HRX_HIP_AMD_PROP_R0600_GCN_ARCH_NAME_OFFSET,
               "hipDeviceProp_tR0600.gcnArchName offset");
_Static_assert(sizeof(hipDeviceProp_tR0600) == HRX_HIP_AMD_PROP_R0600_SIZE,
               "hipDeviceProp_tR0600 size");
#endif

/* Users' kernels. */
_Static_assert(sizeof(hipFunction_attribute) == sizeof(int), "func attr");
_Static_assert(HRX_HIP_AMD_ERROR_INVALID_VALUE == hipErrorInvalidValue,
               "hipErrorInvalidValue");
_Static_assert(HRX_HIP_AMD_ERROR_INVALID_DEVICE_FUNCTION ==
                   hipErrorInvalidDeviceFunction,
               "hipErrorInvalidDeviceFunction");
_Static_assert(HRX_HIP_AMD_ERROR_NOT_FOUND == hipErrorNotFound,
               "hipErrorNotFound");
_Static_assert(HRX_HIP_AMD_ATTR_MAX_THREADS_PER_BLOCK ==
                   hipDeviceAttributeMaxThreadsPerBlock,
               "hipDeviceAttributeMaxThreadsPerBlock");
_Static_assert(HRX_HIP_AMD_ATTR_MAX_BLOCK_DIM_X ==
                   hipDeviceAttributeMaxBlockDimX,
               "hipDeviceAttributeMaxBlockDimX");
_Static_assert(HRX_HIP_AMD_ATTR_MAX_BLOCK_DIM_Y ==
                   hipDeviceAttributeMaxBlockDimY,
               "hipDeviceAttributeMaxBlockDimY");
_Static_assert(HRX_HIP_AMD_ATTR_MAX_BLOCK_DIM_Z ==
                   hipDeviceAttributeMaxBlockDimZ,
               "hipDeviceAttributeMaxBlockDimZ");
_Static_assert(HRX_HIP_AMD_ATTR_MAX_GRID_DIM_X == hipDeviceAttributeMaxGridDimX,
               "hipDeviceAttributeMaxGridDimX");
_Static_assert(HRX_HIP_AMD_ATTR_MAX_GRID_DIM_Y == hipDeviceAttributeMaxGridDimY,
               "hipDeviceAttributeMaxGridDimY");
_Static_assert(HRX_HIP_AMD_ATTR_MAX_GRID_DIM_Z == hipDeviceAttributeMaxGridDimZ,
               "hipDeviceAttributeMaxGridDimZ");
_Static_assert(HRX_HIP_AMD_ATTR_MAX_SHARED_PER_BLOCK ==
                   hipDeviceAttributeMaxSharedMemoryPerBlock,
               "hipDeviceAttributeMaxSharedMemoryPerBlock");
_Static_assert(HRX_HIP_AMD_FUNC_ATTR_MAX_THREADS_PER_BLOCK ==
                   HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
               "HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK");
_Static_assert(HRX_HIP_AMD_FUNC_ATTR_SHARED_SIZE_BYTES ==
                   HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
               "HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES");

_Static_assert(sizeof(hrx_hip_amd_kernel_node_params_t) ==
                   sizeof(hipKernelNodeParams),
               "hipKernelNodeParams size");
HRX_SAME_OFFSET(hrx_hip_amd_kernel_node_params_t, block, hipKernelNodeParams,
                blockDim);
HRX_SAME_OFFSET(hrx_hip_amd_kernel_node_params_t, extra, hipKernelNodeParams,
                extra);
HRX_SAME_OFFSET(hrx_hip_amd_kernel_node_params_t, func, hipKernelNodeParams,
                func);
HRX_SAME_OFFSET(hrx_hip_amd_kernel_node_params_t, grid, hipKernelNodeParams,
                gridDim);
HRX_SAME_OFFSET(hrx_hip_amd_kernel_node_params_t, kernel_params,
                hipKernelNodeParams, kernelParams);
HRX_SAME_OFFSET(hrx_hip_amd_kernel_node_params_t, shared_bytes,
                hipKernelNodeParams, sharedMemBytes);

_Static_assert(sizeof(hrx_hip_amd_memset_params_t) == sizeof(hipMemsetParams),
               "hipMemsetParams size");
HRX_SAME_OFFSET(hrx_hip_amd_memset_params_t, dst, hipMemsetParams, dst);
HRX_SAME_OFFSET(hrx_hip_amd_memset_params_t, element_size, hipMemsetParams,
                elementSize);
HRX_SAME_OFFSET(hrx_hip_amd_memset_params_t, height, hipMemsetParams, height);
HRX_SAME_OFFSET(hrx_hip_amd_memset_params_t, pitch, hipMemsetParams, pitch);
HRX_SAME_OFFSET(hrx_hip_amd_memset_params_t, value, hipMemsetParams, value);
HRX_SAME_OFFSET(hrx_hip_amd_memset_params_t, width, hipMemsetParams, width);

#endif

/* The backend passes its own types where the runtime's are expected: the
 * host functions of queue_host_call go to LaunchHostFunc unchanged, and the
 * graph handles are stored in hrx_native_graph_t* and node arrays. */
_Static_assert(__builtin_types_compatible_p(hrx_queue_host_fn_t,
                                            hrx_hip_host_fn_t),
               "queue_host_call's function type is the runtime's host fn");
_Static_assert(sizeof(hrx_hip_graph_t) == sizeof(void*), "graph handle");
_Static_assert(sizeof(hrx_hip_graph_node_t) == sizeof(void*),
               "graph node handle");
_Static_assert(sizeof(hrx_hip_graph_exec_t) == sizeof(void*),
               "executable graph handle");
