/* Every numeric value the hip backend passes to or reads from a runtime, per
 * platform. Nothing else in csrc/drivers/hip spells a runtime number.
 *
 * AMD values are checked at compile time against the real HIP headers by
 * tests/c/test_hip_constants.c (make -f tests/c/hip.mk hip-constants);
 * NVIDIA values against the real CUDA headers by the same file compiled with
 * HRX_CHECK_CUDA (make -f tests/c/hip.mk hip-constants-cuda CUDA_HOME=...).
 * Where each set was last checked is noted at the top of hip_symbols.h. */
#ifndef HRX_DRIVERS_HIP_HIP_CONSTANTS_H_
#define HRX_DRIVERS_HIP_HIP_CONSTANTS_H_

#include <stddef.h>

#include "hip_types.h"

/* ------------------------------------------------------------------ AMD */

/* hipError_t */
#define HRX_HIP_AMD_SUCCESS 0              /* hipSuccess */
#define HRX_HIP_AMD_ERROR_INVALID_VALUE 1  /* hipErrorInvalidValue */
#define HRX_HIP_AMD_ERROR_OUT_OF_MEMORY 2  /* hipErrorOutOfMemory */
/* hipErrorInvalidDeviceFunction */
#define HRX_HIP_AMD_ERROR_INVALID_DEVICE_FUNCTION 98
#define HRX_HIP_AMD_ERROR_NO_DEVICE 100    /* hipErrorNoDevice */
#define HRX_HIP_AMD_ERROR_NOT_FOUND 500    /* hipErrorNotFound */
#define HRX_HIP_AMD_ERROR_NOT_READY 600    /* hipErrorNotReady */
/* hipErrorPeerAccessAlreadyEnabled */
#define HRX_HIP_AMD_ERROR_PEER_ACCESS_ALREADY_ENABLED 704
/* hipErrorHostMemoryAlreadyRegistered */
#define HRX_HIP_AMD_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712

/* Flags */
#define HRX_HIP_AMD_STREAM_NON_BLOCKING 0x1u   /* hipStreamNonBlocking */
#define HRX_HIP_AMD_EVENT_DISABLE_TIMING 0x2u  /* hipEventDisableTiming */
#define HRX_HIP_AMD_EVENT_DEFAULT 0x0u         /* hipEventDefault */
#define HRX_HIP_AMD_HOST_ALLOC_DEFAULT 0x0u    /* hipHostMallocDefault */
#define HRX_HIP_AMD_HOST_REGISTER_DEFAULT 0x0u /* hipHostRegisterDefault */

/* hipMemcpyKind */
#define HRX_HIP_AMD_MEMCPY_HOST_TO_DEVICE 1    /* hipMemcpyHostToDevice */
#define HRX_HIP_AMD_MEMCPY_DEVICE_TO_HOST 2    /* hipMemcpyDeviceToHost */
#define HRX_HIP_AMD_MEMCPY_DEVICE_TO_DEVICE 3  /* hipMemcpyDeviceToDevice */

/* hipDeviceAttribute_t (not used for the target on AMD; kept so the table
 * is complete and checked). */
#define HRX_HIP_AMD_ATTR_COMPUTE_CAPABILITY_MAJOR 23
#define HRX_HIP_AMD_ATTR_COMPUTE_CAPABILITY_MINOR 61
/* Launch limits. AMD has no opt-in for more shared memory (LDS) per
 * block: hipDeviceAttributeSharedMemPerBlockOptin is "CUDA only", so the
 * most a block may use is hipDeviceAttributeMaxSharedMemoryPerBlock. */
#define HRX_HIP_AMD_ATTR_MAX_THREADS_PER_BLOCK 56  /* ...MaxThreadsPerBlock */
#define HRX_HIP_AMD_ATTR_MAX_BLOCK_DIM_X 26        /* ...MaxBlockDimX */
#define HRX_HIP_AMD_ATTR_MAX_BLOCK_DIM_Y 27
#define HRX_HIP_AMD_ATTR_MAX_BLOCK_DIM_Z 28
#define HRX_HIP_AMD_ATTR_MAX_GRID_DIM_X 29         /* ...MaxGridDimX */
#define HRX_HIP_AMD_ATTR_MAX_GRID_DIM_Y 30
#define HRX_HIP_AMD_ATTR_MAX_GRID_DIM_Z 31
/* hipDeviceAttributeMaxSharedMemoryPerBlock */
#define HRX_HIP_AMD_ATTR_MAX_SHARED_PER_BLOCK 74

/* hipFunction_attribute, for hipFuncGetAttribute on a module function. */
#define HRX_HIP_AMD_FUNC_ATTR_MAX_THREADS_PER_BLOCK 0
#define HRX_HIP_AMD_FUNC_ATTR_SHARED_SIZE_BYTES 1

/* hipDeviceProp_t. `name` is the first field of every layout. gcnArchName
 * moved: 396 in the layout filled by the unversioned hipGetDeviceProperties
 * (ROCm 5.x; ROCm 6+ keeps that name for the legacy "R0000" layout), 1160 in
 * the layout filled by hipGetDevicePropertiesR0600 (ROCm 6.0+). */
#define HRX_HIP_AMD_PROP_NAME_OFFSET 0
#define HRX_HIP_AMD_PROP_NAME_SIZE 256
#define HRX_HIP_AMD_PROP_R0000_GCN_ARCH_NAME_OFFSET 396
#define HRX_HIP_AMD_PROP_R0000_SIZE 792
#define HRX_HIP_AMD_PROP_R0600_GCN_ARCH_NAME_OFFSET 1160
#define HRX_HIP_AMD_PROP_R0600_SIZE 1472
#define HRX_HIP_AMD_PROP_GCN_ARCH_NAME_SIZE 256

/* hipMemsetParams, for hipGraphAddMemsetNode. */
typedef struct hrx_hip_amd_memset_params_s {
  void* dst;
  unsigned int element_size;
  size_t height;
  size_t pitch;
  unsigned int value;
  size_t width;
} hrx_hip_amd_memset_params_t;

/* hipKernelNodeParams, for hipGraphAddKernelNode. `func` is the module's
 * hipFunction_t (HIP takes one where it finds no host function). */
typedef struct hrx_hip_amd_kernel_node_params_s {
  hrx_hip_dim3_t block;
  void** extra;
  void* func;
  hrx_hip_dim3_t grid;
  void** kernel_params;
  unsigned int shared_bytes;
} hrx_hip_amd_kernel_node_params_t;

/* --------------------------------------------------------------- NVIDIA */

/* cudaError_t */
#define HRX_HIP_CUDA_SUCCESS 0              /* cudaSuccess */
#define HRX_HIP_CUDA_ERROR_INVALID_VALUE 1  /* cudaErrorInvalidValue */
#define HRX_HIP_CUDA_ERROR_OUT_OF_MEMORY 2  /* cudaErrorMemoryAllocation */
/* cudaErrorInvalidDeviceFunction */
#define HRX_HIP_CUDA_ERROR_INVALID_DEVICE_FUNCTION 98
#define HRX_HIP_CUDA_ERROR_NO_DEVICE 100    /* cudaErrorNoDevice */
#define HRX_HIP_CUDA_ERROR_NOT_FOUND 500    /* cudaErrorSymbolNotFound */
#define HRX_HIP_CUDA_ERROR_NOT_READY 600    /* cudaErrorNotReady */
/* cudaErrorPeerAccessAlreadyEnabled */
#define HRX_HIP_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED 704
/* cudaErrorHostMemoryAlreadyRegistered */
#define HRX_HIP_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712

/* Flags */
#define HRX_HIP_CUDA_STREAM_NON_BLOCKING 0x1u   /* cudaStreamNonBlocking */
#define HRX_HIP_CUDA_EVENT_DISABLE_TIMING 0x2u  /* cudaEventDisableTiming */
#define HRX_HIP_CUDA_EVENT_DEFAULT 0x0u         /* cudaEventDefault */
#define HRX_HIP_CUDA_HOST_ALLOC_DEFAULT 0x0u    /* cudaHostAllocDefault */
#define HRX_HIP_CUDA_HOST_REGISTER_DEFAULT 0x0u /* cudaHostRegisterDefault */

/* cudaMemcpyKind */
#define HRX_HIP_CUDA_MEMCPY_HOST_TO_DEVICE 1    /* cudaMemcpyHostToDevice */
#define HRX_HIP_CUDA_MEMCPY_DEVICE_TO_HOST 2    /* cudaMemcpyDeviceToHost */
#define HRX_HIP_CUDA_MEMCPY_DEVICE_TO_DEVICE 3  /* cudaMemcpyDeviceToDevice */

/* cudaDeviceAttr */
#define HRX_HIP_CUDA_ATTR_COMPUTE_CAPABILITY_MAJOR 75
#define HRX_HIP_CUDA_ATTR_COMPUTE_CAPABILITY_MINOR 76
/* Launch limits. A block may use more shared memory than
 * cudaDevAttrMaxSharedMemoryPerBlock (48 KiB) once its kernel opts in
 * (cudaFuncAttributeMaxDynamicSharedMemorySize), up to
 * cudaDevAttrMaxSharedMemoryPerBlockOptin. */
#define HRX_HIP_CUDA_ATTR_MAX_THREADS_PER_BLOCK 1  /* ...MaxThreadsPerBlock */
#define HRX_HIP_CUDA_ATTR_MAX_BLOCK_DIM_X 2        /* ...MaxBlockDimX */
#define HRX_HIP_CUDA_ATTR_MAX_BLOCK_DIM_Y 3
#define HRX_HIP_CUDA_ATTR_MAX_BLOCK_DIM_Z 4
#define HRX_HIP_CUDA_ATTR_MAX_GRID_DIM_X 5         /* ...MaxGridDimX */
#define HRX_HIP_CUDA_ATTR_MAX_GRID_DIM_Y 6
#define HRX_HIP_CUDA_ATTR_MAX_GRID_DIM_Z 7
/* cudaDevAttrMaxSharedMemoryPerBlockOptin */
#define HRX_HIP_CUDA_ATTR_MAX_SHARED_PER_BLOCK_OPTIN 97

/* cudaFuncAttribute */
#define HRX_HIP_CUDA_FUNC_MAX_DYNAMIC_SHARED_SIZE 8  /* ...DynamicSharedMemorySize */

/* cudaFuncAttributes: `size_t sharedSizeBytes` first, `int
 * maxThreadsPerBlock` after three size_t, `int maxDynamicSharedSizeBytes`
 * after five more ints; the same offsets since CUDA 9, later versions only
 * append fields. Filled into a zeroed buffer this large (the struct is
 * 144 bytes in CUDA 13). */
#define HRX_HIP_CUDA_FUNC_SHARED_SIZE_BYTES_OFFSET 0
#define HRX_HIP_CUDA_FUNC_MAX_THREADS_PER_BLOCK_OFFSET 24
#define HRX_HIP_CUDA_FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES_OFFSET 44
#define HRX_HIP_FUNC_ATTRIBUTES_BUFFER_SIZE 1024

/* cudaGetDriverEntryPointByVersion: flags cudaEnableDefault, the
 * cudaDriverEntryPointQueryResult of a symbol that was found, and the
 * driver API version of each entry point obtained (cuGetErrorName 6.0,
 * cuLibraryGetModule and cuKernelGetFunction 12.0, cuKernelGetParamInfo
 * 12.4). */
#define HRX_HIP_CUDA_ENABLE_DEFAULT 0x0ull
#define HRX_HIP_CUDA_DRIVER_ENTRY_POINT_SUCCESS 0
#define HRX_HIP_CUDA_GET_ERROR_NAME_VERSION 6000u
#define HRX_HIP_CUDA_LIBRARY_GET_MODULE_VERSION 12000u
#define HRX_HIP_CUDA_KERNEL_GET_FUNCTION_VERSION 12000u
#define HRX_HIP_CUDA_KERNEL_PARAM_INFO_VERSION 12040u
/* CUresult values: an index past the last parameter; and the answers that
 * say nothing about an image (no current context, the driver going away,
 * nothing loaded yet) rather than refusing it. */
#define HRX_HIP_CUDA_DRIVER_SUCCESS 0                    /* CUDA_SUCCESS */
#define HRX_HIP_CUDA_DRIVER_ERROR_INVALID_VALUE 1
#define HRX_HIP_CUDA_DRIVER_ERROR_OUT_OF_MEMORY 2
#define HRX_HIP_CUDA_DRIVER_ERROR_NOT_INITIALIZED 3
#define HRX_HIP_CUDA_DRIVER_ERROR_DEINITIALIZED 4
#define HRX_HIP_CUDA_DRIVER_ERROR_INVALID_CONTEXT 201
#define HRX_HIP_CUDA_DRIVER_ERROR_NOT_FOUND 500
#define HRX_HIP_CUDA_DRIVER_ERROR_CONTEXT_IS_DESTROYED 709

/* cudaDeviceProp: `char name[256]`, its first field, and `size_t
 * totalGlobalMem` after cudaUUID_t uuid (16 bytes), char luid[8] and
 * unsigned int luidDeviceNodeMask (256 + 16 + 8 + 4 = 284, aligned to 8);
 * the same layout since CUDA 10. Read so that opening a device needs no
 * context (cudaMemGetInfo would create it, and with it fix the connection
 * budget, hip_connections.h). */
#define HRX_HIP_CUDA_PROP_NAME_OFFSET 0
#define HRX_HIP_CUDA_PROP_NAME_SIZE 256
#define HRX_HIP_CUDA_PROP_TOTAL_GLOBAL_MEM_OFFSET 288

/* cudaMemsetParams, for cudaGraphAddMemsetNode. */
typedef struct hrx_hip_cuda_memset_params_s {
  void* dst;
  size_t pitch;
  unsigned int value;
  unsigned int element_size;
  size_t width;
  size_t height;
} hrx_hip_cuda_memset_params_t;

/* cudaKernelNodeParams, for cudaGraphAddKernelNode (the same layout since
 * CUDA 10). `func` may be a cudaKernel_t. */
typedef struct hrx_hip_cuda_kernel_node_params_s {
  void* func;
  hrx_hip_dim3_t grid;
  hrx_hip_dim3_t block;
  unsigned int shared_bytes;
  void** kernel_params;
  void** extra;
} hrx_hip_cuda_kernel_node_params_t;

/* ---------------------------------------------------------------- both */

/* hipDeviceProp_t / cudaDeviceProp are filled into a zeroed buffer this
 * large: several times the largest known layout (cudaDeviceProp is about
 * 1 KiB in CUDA 12-13, hipDeviceProp_tR0600 1472 bytes). */
#define HRX_HIP_DEVICE_PROP_BUFFER_SIZE 8192

#endif /* HRX_DRIVERS_HIP_HIP_CONSTANTS_H_ */
