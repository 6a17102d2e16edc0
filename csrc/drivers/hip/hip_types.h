/* The few HIP / CUDA runtime types the hip backend needs, declared without
 * any GPU SDK header. Both runtimes use the same shapes: handles are
 * pointers to opaque structs, error codes and enums are int-sized.
 *
 * tests/c/test_hip_constants.c defines HRX_HIP_TYPES_DEFINED and maps each
 * name below to the real HIP type before including hip_dynamic.h, so that
 * every function-pointer type of the symbol table is checked against the real
 * prototype; it also checks that the substitutes used here have the real
 * types' size. */
#ifndef HRX_DRIVERS_HIP_HIP_TYPES_H_
#define HRX_DRIVERS_HIP_HIP_TYPES_H_

#include <stddef.h>

#ifndef HRX_HIP_TYPES_DEFINED
#define HRX_HIP_TYPES_DEFINED 1

/* hipError_t / cudaError_t: an enum, passed and returned as int. */
typedef int hrx_hip_error_t;
/* hipMemcpyKind / cudaMemcpyKind. */
typedef int hrx_hip_memcpy_kind_t;
/* hipDeviceAttribute_t / cudaDeviceAttr. */
typedef int hrx_hip_device_attr_t;

typedef struct hrx_hip_stream_opaque_s* hrx_hip_stream_t;
typedef struct hrx_hip_event_opaque_s* hrx_hip_event_t;
typedef struct hrx_hip_graph_opaque_s* hrx_hip_graph_t;
typedef struct hrx_hip_graph_node_opaque_s* hrx_hip_graph_node_t;
typedef struct hrx_hip_graph_exec_opaque_s* hrx_hip_graph_exec_t;

/* hipDeviceProp_t / cudaDeviceProp: never declared; their layouts differ
 * between runtimes and versions. Filled into a zeroed buffer of
 * HRX_HIP_DEVICE_PROP_BUFFER_SIZE bytes and read at checked offsets. */
typedef struct hrx_hip_device_prop_opaque_s hrx_hip_device_prop_t;

/* hipMemsetParams / cudaMemsetParams: the layouts differ (see
 * hip_constants.h); callers pass a pointer to the platform's struct. */
typedef struct hrx_hip_memset_params_opaque_s hrx_hip_memset_params_t;

typedef void (*hrx_hip_host_fn_t)(void* user_data);

/* Kernels loaded at run time (the batch kernel, hip_batch.c, and users'
 * kernels, hip_kernels.c). NVIDIA:
 * cudaLibrary_t / cudaKernel_t (runtime API, CUDA 12.0+); AMD: hipModule_t /
 * hipFunction_t. The option enums are int-sized; hrx passes none. */
typedef struct hrx_hip_library_opaque_s* hrx_hip_library_t;
typedef struct hrx_hip_kernel_opaque_s* hrx_hip_kernel_t;
typedef struct hrx_hip_module_opaque_s* hrx_hip_module_t;
typedef struct hrx_hip_function_opaque_s* hrx_hip_function_t;
typedef int hrx_hip_jit_option_t;
typedef int hrx_hip_library_option_t;
/* dim3: three unsigned ints, passed by value. */
typedef struct hrx_hip_dim3_s {
  unsigned int x, y, z;
} hrx_hip_dim3_t;

/* Users' kernels (hip_kernels.c). cudaFuncAttributes: never declared (it
 * grows between CUDA versions); filled into a zeroed buffer of
 * HRX_HIP_FUNC_ATTRIBUTES_BUFFER_SIZE bytes and read at checked offsets.
 * cudaFuncAttribute and hipFunction_attribute: int-sized enums. */
typedef struct hrx_hip_func_attributes_opaque_s hrx_hip_func_attributes_t;
typedef int hrx_hip_func_attribute_t;
typedef int hrx_hip_function_attribute_t;
/* cudaDriverEntryPointQueryResult, and CUresult (the driver API's result,
 * of the entry points obtained through cudaGetDriverEntryPointByVersion). */
typedef int hrx_hip_driver_entry_status_t;
typedef int hrx_hip_driver_result_t;

/* CUmodule and CUfunction: the driver's handles of a library's module and
 * kernel in one context. */
typedef struct hrx_hip_driver_module_opaque_s* hrx_hip_driver_module_t;
typedef struct hrx_hip_driver_function_opaque_s* hrx_hip_driver_function_t;

/* hipKernelNodeParams / cudaKernelNodeParams: the layouts differ (see
 * hip_constants.h); callers pass a pointer to the platform's struct. */
typedef struct hrx_hip_kernel_node_params_opaque_s
    hrx_hip_kernel_node_params_t;

#endif /* HRX_HIP_TYPES_DEFINED */

/* The CUDA driver API entry points hip_kernels.c obtains with
 * cudaGetDriverEntryPointByVersion (a cudaLibrary_t is a CUlibrary, a
 * cudaKernel_t a CUkernel). Checked against cudaTypedefs.h's
 * PFN_<name>_v<version> by tests/c/test_hip_constants.c. */
typedef hrx_hip_driver_result_t (*hrx_hip_pfn_cuKernelGetParamInfo_t)(
    hrx_hip_kernel_t kernel, size_t index, size_t* offset, size_t* size);
typedef hrx_hip_driver_result_t (*hrx_hip_pfn_cuLibraryGetModule_t)(
    hrx_hip_driver_module_t* module, hrx_hip_library_t library);
typedef hrx_hip_driver_result_t (*hrx_hip_pfn_cuKernelGetFunction_t)(
    hrx_hip_driver_function_t* function, hrx_hip_kernel_t kernel);
typedef hrx_hip_driver_result_t (*hrx_hip_pfn_cuGetErrorName_t)(
    hrx_hip_driver_result_t error, const char** name);

#endif /* HRX_DRIVERS_HIP_HIP_TYPES_H_ */
