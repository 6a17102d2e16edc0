/* The parameters of a kernel as PTX declares them: the types NVRTC records
 * for each parameter of an entry (".param .f32 saxpy_param_2"), read from
 * the PTX of a kernel hrx compiled, so that launches from Python convert
 * and check scalar arguments by type (hrx.h, hrx_kernel_param_kind_t).
 * Private to csrc/drivers/hip.
 *
 * Kinds: .u8 to .u64 are INTEGER (signedness not recorded: NVRTC writes a
 * C int as .u32, a pointer as .u64); .s8 to .s64 SIGNED; .f16, .f32 and
 * .f64 FLOAT; a parameter with .ptr POINTER; .b types, arrays (a struct by
 * value: ".param .align 8 .b8 name[16]") and anything else UNKNOWN, their
 * sizes still recorded. Offsets follow the parameter block's layout: each
 * parameter at the next multiple of its alignment (.align N where given,
 * else its element's size).
 *
 * Pure text processing; thread-safe. */
#ifndef HRX_DRIVERS_HIP_HIP_PTX_PARAMS_H_
#define HRX_DRIVERS_HIP_HIP_PTX_PARAMS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/kernel.h"

/* What the PTX says of one entry's parameters: the record hal/kernel.h's
 * compile hands the core. */
typedef hrx_kernel_param_record_t hrx_ptx_params_t;

/* Finds the entry `name` (".entry name(") in `ptx` (`length` bytes, need
 * not end in NUL) and describes its parameters into *out. False, *out
 * unchanged, when there is no such entry or its parameter list is not one
 * this reader knows (more than HRX_KERNEL_MAX_ARGS parameters, a
 * declaration it cannot read): then the kernel's types stay unknown. */
bool hrx_hip_ptx_params(const char* ptx, size_t length, const char* name,
                        hrx_ptx_params_t* out);

#endif /* HRX_DRIVERS_HIP_HIP_PTX_PARAMS_H_ */
