/* The runtime compiler, loaded with dlopen when present: NVRTC on NVIDIA,
 * hiprtc on AMD. It turns the batch kernel's source into PTX (NVIDIA) or a
 * code object (AMD) at run time, so neither building nor installing hrx
 * needs a GPU SDK. Private to csrc/backends/hip.
 *
 * Search: $HRX_RTC_LIBRARY alone if set (an exact path); else, NVIDIA:
 * libnvrtc.so, .so.13, .so.12, .so.11.2, then nvidia/cuda_nvrtc/lib and
 * nvidia/cu13/lib under each $HRX_PYTHON_SITE_DIRS entry; AMD: the HIP
 * runtime library itself (ROCm 5 ships hiprtc inside libamdhip64), then
 * libhiprtc.so, .so.6, .so.5, /opt/rocm/lib/libhiprtc.so.
 *
 * Thread-safe: the library is loaded once per process. */
#ifndef HRX_BACKENDS_HIP_HIP_RTC_H_
#define HRX_BACKENDS_HIP_HIP_RTC_H_

#include <stddef.h>

#include "core/status.h"

/* The compiler's entry points. nvrtc* and hiprtc* have the same shapes
 * (results are int-sized enums, 0 on success; programs are opaque
 * pointers); the PTX getters stand where hiprtc has GetCode. The
 * prototypes are hiprtc's (ROCm 5.2 hiprtc.h), which
 * tests/c/test_hip_rtc_prototypes.c checks by mapping these type names onto
 * the real ones; NVRTC's differ only in const qualifiers. */
#ifndef HRX_RTC_TYPES_DEFINED
typedef int hrx_rtc_result_t;
typedef struct hrx_rtc_program_opaque_s* hrx_rtc_program_t;
#endif

typedef struct hrx_rtc_symbols_s {
  hrx_rtc_result_t (*CreateProgram)(hrx_rtc_program_t* program,
                                    const char* source, const char* name,
                                    int header_count, const char** headers,
                                    const char** include_names);
  hrx_rtc_result_t (*CompileProgram)(hrx_rtc_program_t program,
                                     int option_count, const char** options);
  hrx_rtc_result_t (*GetProgramLogSize)(hrx_rtc_program_t program,
                                        size_t* size);
  hrx_rtc_result_t (*GetProgramLog)(hrx_rtc_program_t program, char* log);
  hrx_rtc_result_t (*GetCodeSize)(hrx_rtc_program_t program, size_t* size);
  hrx_rtc_result_t (*GetCode)(hrx_rtc_program_t program, char* code);
  hrx_rtc_result_t (*DestroyProgram)(hrx_rtc_program_t* program);
  const char* (*GetErrorString)(hrx_rtc_result_t result);
} hrx_rtc_symbols_t;

/* Compiles `source` with `options` for the loaded runtime's platform
 * ("nvidia" or "amd"; runtime_library is the HIP runtime in use, or NULL)
 * and returns the image: NUL-terminated PTX on NVIDIA,
 * a code object on AMD (malloc'ed, *out_size bytes; the caller frees it).
 * out_compiler receives e.g. "libnvrtc.so.13". UNAVAILABLE when no compiler
 * loads (with the loader's message); DEVICE_ERROR with the compiler's log
 * when compilation fails. */
hrx_status_t hrx_hip_rtc_compile(const char* platform,
                                 const char* runtime_library,
                                 const char* source,
                                 const char* name, const char* const* options,
                                 int option_count, char** out_image,
                                 size_t* out_size, char* out_compiler,
                                 size_t compiler_capacity);

#endif /* HRX_BACKENDS_HIP_HIP_RTC_H_ */
