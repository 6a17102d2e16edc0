/* Compile-time check of the runtime compiler's entry points (hip_rtc.h)
 * against the real hiprtc.h: each real function is assigned to its table
 * entry's pointer type, so any parameter or return-type mismatch is an
 * incompatible-pointer-types error under -Werror.
 *
 * Build: make -f tests/c/hip.mk hip-rtc-prototypes. */
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hiprtc.h>

typedef hiprtcResult hrx_rtc_result_t;
typedef hiprtcProgram hrx_rtc_program_t;
#define HRX_RTC_TYPES_DEFINED 1

#include "backends/hip/hip_rtc.h"

_Static_assert(sizeof(hiprtcResult) == sizeof(int), "results are int-sized");
_Static_assert(HIPRTC_SUCCESS == 0, "success is 0");

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
  };
  (void)s;
}
