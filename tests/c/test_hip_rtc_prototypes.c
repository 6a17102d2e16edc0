/* Compile-time check of the runtime compiler's entry points (hip_rtc.h)
 * against the real headers: each real function is assigned to its table
 * entry's pointer type, so any parameter or return-type mismatch is an
 * incompatible-pointer-types error under -Werror; the result codes hrx
 * tells apart are _Static_asserted.
 *
 *   hiprtc: -D__HIP_PLATFORM_AMD__, <hip/hiprtc.h>
 *   NVRTC:  -DHRX_CHECK_NVRTC, <nvrtc.h>
 *
 * Build: make -f tests/c/hip.mk hip-rtc-prototypes (hip-rtc-prototypes-nvrtc
 * NVRTC_INCLUDE=...). */
#if defined(HRX_CHECK_NVRTC)

#include <nvrtc.h>

typedef nvrtcResult hrx_rtc_result_t;
typedef nvrtcProgram hrx_rtc_program_t;
#define HRX_RTC_TYPES_DEFINED 1

#include "drivers/hip/hip_rtc.h"

_Static_assert(sizeof(nvrtcResult) == sizeof(int), "results are int-sized");
_Static_assert(HRX_RTC_SUCCESS == NVRTC_SUCCESS, "NVRTC_SUCCESS");
_Static_assert(HRX_RTC_ERROR_OUT_OF_MEMORY == NVRTC_ERROR_OUT_OF_MEMORY,
               "NVRTC_ERROR_OUT_OF_MEMORY");
_Static_assert(HRX_RTC_ERROR_BUILTIN_OPERATION_FAILURE ==
                   NVRTC_ERROR_BUILTIN_OPERATION_FAILURE,
               "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE");

/* CreateProgram and CompileProgram take `const char* const*` here where
 * hiprtc (and the table) has `const char**`: the same pointers, so the
 * table binds them; their NVRTC prototypes are checked as such below. */
void hrx_rtc_check_prototypes(void);
void hrx_rtc_check_prototypes(void) {
  hrx_rtc_symbols_t s = {
      .GetProgramLogSize = nvrtcGetProgramLogSize,
      .GetProgramLog = nvrtcGetProgramLog,
      .GetCodeSize = nvrtcGetPTXSize,
      .GetCode = nvrtcGetPTX,
      .DestroyProgram = nvrtcDestroyProgram,
      .GetErrorString = nvrtcGetErrorString,
      .Version = nvrtcVersion,
      .AddNameExpression = nvrtcAddNameExpression,
      .GetLoweredName = nvrtcGetLoweredName,
      .GetCUBINSize = nvrtcGetCUBINSize,
      .GetCUBIN = nvrtcGetCUBIN,
      .GetNumSupportedArchs = nvrtcGetNumSupportedArchs,
      .GetSupportedArchs = nvrtcGetSupportedArchs,
  };
  (void)s;
  nvrtcResult (*create)(nvrtcProgram*, const char*, const char*, int,
                        const char* const*, const char* const*) =
      nvrtcCreateProgram;
  nvrtcResult (*compile)(nvrtcProgram, int, const char* const*) =
      nvrtcCompileProgram;
  (void)create;
  (void)compile;
}

#else /* hiprtc */

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hiprtc.h>

typedef hiprtcResult hrx_rtc_result_t;
typedef hiprtcProgram hrx_rtc_program_t;
#define HRX_RTC_TYPES_DEFINED 1

#include "drivers/hip/hip_rtc.h"

_Static_assert(sizeof(hiprtcResult) == sizeof(int), "results are int-sized");
_Static_assert(HRX_RTC_SUCCESS == HIPRTC_SUCCESS, "HIPRTC_SUCCESS");
_Static_assert(HRX_RTC_ERROR_OUT_OF_MEMORY == HIPRTC_ERROR_OUT_OF_MEMORY,
               "HIPRTC_ERROR_OUT_OF_MEMORY");
_Static_assert(HRX_RTC_ERROR_BUILTIN_OPERATION_FAILURE ==
                   HIPRTC_ERROR_BUILTIN_OPERATION_FAILURE,
               "HIPRTC_ERROR_BUILTIN_OPERATION_FAILURE");

void hrx_rtc_check_prototypes(void);
void hrx_rtc_check_prototypes(void) {
  hrx_rtc_symbols_t s = {
      .CreateProgram = hiprtcCreateProgram,
      .CompileProgram = hiprtcCompileProgram,
      .GetProgramLogSize = hiprtcGetProgramLogSize,
      .GetProgramLog = hiprtcGetProgramLog,
      .GetCodeSize = hiprtcGetCodeSize,
      .GetCode = hiprtcGetCode,
      .DestroyProgram = hiprtcDestroyProgram,
      .GetErrorString = hiprtcGetErrorString,
      .Version = hiprtcVersion,
      .AddNameExpression = hiprtcAddNameExpression,
      .GetLoweredName = hiprtcGetLoweredName,
  };
  (void)s;
}

#endif
