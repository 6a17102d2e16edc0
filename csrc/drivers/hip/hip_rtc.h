/* The runtime compiler, loaded with dlopen when present: NVRTC on NVIDIA,
 * hiprtc on AMD. It turns CUDA or HIP C++ into an image for the device at
 * run time (the batch kernel, hip_batch.h, and users' kernels,
 * hip_kernels.h), so neither building nor installing hrx needs a GPU SDK.
 * Private to csrc/drivers/hip.
 *
 * Search: $HRX_RTC_LIBRARY alone if set (an exact path); else, NVIDIA:
 * libnvrtc.so, .so.13, .so.12, .so.11.2, then nvidia/cuda_nvrtc/lib and
 * nvidia/cu13/lib under each $HRX_PYTHON_SITE_DIRS entry; AMD: the HIP
 * runtime library itself (ROCm 5 ships hiprtc inside libamdhip64), then
 * libhiprtc.so, .so.6, .so.5, /opt/rocm/lib/libhiprtc.so.
 *
 * Thread-safe: the library is searched for once per process (the first
 * caller's platform decides which); compilations may run concurrently. */
#ifndef HRX_DRIVERS_HIP_HIP_RTC_H_
#define HRX_DRIVERS_HIP_HIP_RTC_H_

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

/* The compiler's entry points. nvrtc* and hiprtc* have the same shapes
 * (results are int-sized enums, 0 on success; programs are opaque
 * pointers); NVRTC's PTX getters stand where hiprtc has GetCode. The
 * prototypes are hiprtc's (ROCm 5.2 hiprtc.h), which
 * tests/c/test_hip_rtc_prototypes.c checks by mapping these type names onto
 * the real ones; NVRTC's (checked by the same file against nvrtc.h) differ
 * only in const qualifiers of CreateProgram's and CompileProgram's string
 * arrays. */
#ifndef HRX_RTC_TYPES_DEFINED
typedef int hrx_rtc_result_t;
typedef struct hrx_rtc_program_opaque_s* hrx_rtc_program_t;
#endif

/* nvrtcResult / hiprtcResult codes hrx tells apart: the same numbers in
 * both (checked against both headers). */
#define HRX_RTC_SUCCESS 0
#define HRX_RTC_ERROR_OUT_OF_MEMORY 1
#define HRX_RTC_ERROR_BUILTIN_OPERATION_FAILURE 7

typedef struct hrx_rtc_symbols_s {
  /* Required. */
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
  /* Optional on both (NULL when the library lacks them): the compiler's
   * version, and the symbol a name expression (a kernel's name) compiles
   * to, which tells an extern "C" kernel from a C++ one. */
  hrx_rtc_result_t (*Version)(int* major, int* minor);
  hrx_rtc_result_t (*AddNameExpression)(hrx_rtc_program_t program,
                                        const char* name_expression);
  hrx_rtc_result_t (*GetLoweredName)(hrx_rtc_program_t program,
                                     const char* name_expression,
                                     const char** lowered_name);
  /* Optional, NVRTC only (11.1 / 11.2 and later): the binary for an exact
   * architecture, and the architectures this NVRTC compiles for. */
  hrx_rtc_result_t (*GetCUBINSize)(hrx_rtc_program_t program, size_t* size);
  hrx_rtc_result_t (*GetCUBIN)(hrx_rtc_program_t program, char* cubin);
  hrx_rtc_result_t (*GetNumSupportedArchs)(int* count);
  hrx_rtc_result_t (*GetSupportedArchs)(int* archs);
} hrx_rtc_symbols_t;

/* What an image is. */
typedef enum hrx_rtc_format_e {
  HRX_RTC_FORMAT_PTX,          /* NVIDIA: text for a virtual architecture,
                                  NUL-terminated; the driver compiles it */
  HRX_RTC_FORMAT_CUBIN,        /* NVIDIA: ELF for an exact architecture */
  HRX_RTC_FORMAT_CODE_OBJECT,  /* AMD: ELF code object (hsaco) */
} hrx_rtc_format_t;

/* "ptx", "cubin", "hsaco". */
const char* hrx_hip_rtc_format_name(hrx_rtc_format_t format);

/* How the loaded compiler builds for one device (hrx_hip_rtc_plan). */
typedef struct hrx_rtc_plan_s {
  bool amd;
  hrx_rtc_format_t format;
  /* The architecture the image is for: "sm_90" (a cubin), "compute_90"
   * (PTX), "gfx90a" (feature suffixes dropped: the image runs in either
   * mode). */
  char arch[48];
  char library[512];  /* the compiler library, as passed to dlopen */
  char version[32];   /* "13.0"; "unknown" without a Version entry point */
} hrx_rtc_plan_t;

/* Loads the compiler for `platform` ("nvidia" or "amd"; runtime_library:
 * the HIP runtime in use, where ROCm 5 keeps hiprtc, or NULL) and decides
 * how to build for the device architecture `target` ("sm_90", "gfx90a").
 * NVIDIA: `binary` asks for a cubin for the exact architecture where this
 * NVRTC has GetCUBIN and lists the architecture; otherwise (or when
 * `binary` is false) PTX for the device's virtual architecture, or for the
 * newest older one this NVRTC supports (the driver compiles PTX for newer
 * devices). AMD: a code object for the target. Never compiles. UNAVAILABLE
 * when no compiler loads (naming every library tried and HRX_RTC_LIBRARY)
 * or when it cannot build for the target. */
hrx_status_t hrx_hip_rtc_plan(const char* platform,
                              const char* runtime_library, const char* target,
                              bool binary, hrx_rtc_plan_t* out_plan);

/* Compiles `source` (named program_name in messages) as `plan` says: the
 * architecture option first ("--gpu-architecture=sm_90",
 * "--offload-arch=gfx90a"), then options[0..option_count) in order. The
 * image goes to *out_image (malloc'ed, *out_size bytes, followed by a NUL
 * byte not counted in the size except for PTX, whose NVRTC size includes
 * it; the caller frees it). names[0..name_count) (may be empty) are the
 * kernels the caller will look up by symbol: where the compiler resolves
 * name expressions, each must compile to that very symbol (an extern "C"
 * kernel), else INVALID_ARGUMENT says so. A source or option the compiler
 * rejects is INVALID_ARGUMENT carrying the compiler's log (whole up to
 * 64 KiB, then cut with a note). out_ptx (may be NULL): on NVIDIA the PTX
 * of the compile (the image itself when that is PTX; for a cubin what
 * nvrtcGetPTX gives beside it), malloc'ed and NUL-terminated,
 * *out_ptx_size bytes; NULL where there is none (AMD, or an NVRTC that
 * keeps no PTX beside a cubin): the compile still succeeds. */
hrx_status_t hrx_hip_rtc_compile(const hrx_rtc_plan_t* plan,
                                 const char* source, const char* program_name,
                                 const char* const* options,
                                 size_t option_count,
                                 const char* const* names, size_t name_count,
                                 char** out_image, size_t* out_size,
                                 char** out_ptx, size_t* out_ptx_size);

#endif /* HRX_DRIVERS_HIP_HIP_RTC_H_ */
