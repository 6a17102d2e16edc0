/* Run-time compilation of kernels by the hip backend, with hiprtc or NVRTC
 * and no GPU, one scenario per process (the backend loads its compiler once
 * per process):
 *
 *   test_hip_rtc amd-compile LIBRARY
 *       The batch kernel's source, users' kernels and the benchmark's
 *       kernels compile with the hiprtc inside the real libamdhip64 LIBRARY
 *       (ROCm 5) for two AMD architectures, giving ELF code objects; the
 *       toolchain describes the compiler; options reach it in order; a
 *       compile error carries its log; a kernel name of C++ linkage or one
 *       the source lacks is refused.
 *   test_hip_rtc nvidia-compile NVRTC
 *       The same with the NVRTC library at path NVRTC (a toolkit's or the
 *       pip wheel's): cubins for sm_90 and sm_80, PTX for an architecture
 *       newer than the NVRTC knows, a refusal for one older than it
 *       supports; the batch kernel as PTX.
 *   test_hip_rtc rtc-missing PATH
 *       HRX_RTC_LIBRARY=PATH does not exist: the toolchain and compiles are
 *       UNAVAILABLE, naming PATH and the variable.
 *
 * make -f tests/c/hip.mk hip-load runs amd-compile and rtc-missing,
 * hip-compile-nvidia runs nvidia-compile. Exit status 0 on success. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/hip/hip_batch.h"
#include "drivers/hip/hip_kernels.h"
#include "bench/bench_kernel_sources.h"
#include "hip_test_support.h"

/* The compile rules both platforms share, for `target`: the toolchain
 * describes what kernel_compile makes; user kernels with options in order,
 * the benchmark's kernels; a compile error carries the log; a C++ kernel
 * name is refused. Returns the image format the toolchain names. */
static int check_compile(const char* platform, const char* library,
                         const char* target, const char* want_language,
                         const char* want_format) {
  hrx_kernel_compiler_t toolchain;
  CHECK_OK(hrx_hip_kernel_toolchain(platform, library, target, &toolchain));
  printf("  %s: language %s, compiler \"%s\", target %s, format %s\n",
         target, toolchain.language, toolchain.compiler, toolchain.target,
         toolchain.image_format);
  CHECK(strcmp(toolchain.language, want_language) == 0, "language %s",
        toolchain.language);
  CHECK(strcmp(toolchain.target, target) == 0, "target %s", toolchain.target);
  CHECK(strcmp(toolchain.image_format, want_format) == 0, "format %s",
        toolchain.image_format);
  CHECK(strstr(toolchain.compiler, "rtc") != NULL ||
            strstr(toolchain.compiler, "amdhip64") != NULL,
        "compiler %s", toolchain.compiler);
  CHECK(strchr(toolchain.compiler, ' ') != NULL &&
            strstr(toolchain.compiler, "unknown") == NULL,
        "no version in \"%s\"", toolchain.compiler);

  void* image = NULL;
  size_t size = 0;
  hrx_kernel_param_record_t params[3];
  for (int i = 0; i < 3; ++i) params[i].count = -1;
  CHECK_OK(hrx_hip_kernel_compile(platform, library, target, kernel_source,
                                  kernel_names, 3, kernel_options, 3, &image,
                                  &size, params));
  /* saxpy(float* y, const float* x, float a, int n) as the PTX records it:
   * the int as .u32, the float as .f32, pointers as .u64 (with .ptr in
   * newer PTX versions). Always where the image is PTX; beside a cubin
   * only where this NVRTC keeps the PTX. */
  if (strcmp(want_language, "cuda") == 0) {
    printf("  %s: saxpy's parameter types %s\n", target,
           params[0].count >= 0 ? "recorded from the PTX"
                                : "not recorded (no PTX beside the cubin)");
    if (strcmp(want_format, "ptx") == 0) {
      CHECK(params[0].count == 4, "%s: saxpy's types not read from the PTX",
            target);
    }
    if (params[0].count == 4) {
      CHECK((params[0].kind[0] == HRX_KERNEL_PARAM_INTEGER ||
             params[0].kind[0] == HRX_KERNEL_PARAM_POINTER) &&
                params[0].size[0] == 8 &&
                params[0].kind[2] == HRX_KERNEL_PARAM_FLOAT &&
                params[0].size[2] == 4 &&
                params[0].kind[3] == HRX_KERNEL_PARAM_INTEGER &&
                params[0].size[3] == 4,
            "%s: saxpy's parameter types", target);
    }
  } else {
    CHECK(params[0].count == -1, "%s: hiprtc recorded types", target);
  }
  bool elf = size > 4 && memcmp(image, "\x7f" "ELF", 4) == 0;
  if (strcmp(want_format, "ptx") == 0) {
    CHECK(!elf && strstr((const char*)image, ".entry saxpy") != NULL,
          "%s: not PTX with saxpy (%zu bytes)", target, size);
  } else {
    CHECK(elf, "%s: not an ELF %s (%zu bytes)", target, want_format, size);
  }
  printf("  %s: user kernels, %zu bytes of %s\n", target, size, want_format);
  free(image);

  image = NULL;
  CHECK_OK(hrx_hip_kernel_compile(platform, library, target,
                                  hrx_bench_kernel_source("cuda"),
                                  hrx_bench_kernel_symbols,
                                  HRX_BENCH_KERNEL_COUNT, NULL, 0, &image,
                                  &size, NULL));
  CHECK(image && size > 4, "%s: empty benchmark kernels", target);
  printf("  %s: benchmark kernels, %zu bytes of %s\n", target, size,
         want_format);
  free(image);

  /* Without the options the source's #error fires: the log says which. */
  image = NULL;
  expect_failure(hrx_hip_kernel_compile(platform, library, target,
                                        kernel_source, kernel_names, 3, NULL,
                                        0, &image, &size, NULL),
                 HRX_STATUS_INVALID_ARGUMENT, "compile error",
                 "options did not reach the compiler", "saxpy", NULL);
  CHECK(image == NULL, "image written on failure");
  const char* broken = "extern \"C\" __global__ void k(int* p) { *p = q; }\n";
  const char* k_name = "k";
  expect_failure(hrx_hip_kernel_compile(platform, library, target, broken,
                                        &k_name, 1, NULL, 0, &image, &size, NULL),
                 HRX_STATUS_INVALID_ARGUMENT, "undefined identifier", "*p = q",
                 NULL);
  /* A kernel of C++ linkage cannot be looked up by its name. */
  const char* cpp_name = "cpp_linkage";
  expect_failure(hrx_hip_kernel_compile(platform, library, target,
                                        kernel_source, &cpp_name, 1,
                                        kernel_options, 3, &image, &size, NULL),
                 HRX_STATUS_INVALID_ARGUMENT, "C++ kernel name", "cpp_linkage",
                 "extern \"C\"", NULL);
  /* A name the source does not define. */
  const char* missing = "no_such_kernel";
  expect_failure(hrx_hip_kernel_compile(platform, library, target,
                                        kernel_source, &missing, 1,
                                        kernel_options, 3, &image, &size, NULL),
                 HRX_STATUS_INVALID_ARGUMENT, "missing kernel name",
                 "no_such_kernel", NULL);
  /* A bad option is the caller's too. */
  const char* bad_option = "--no-such-option-hrx";
  expect_failure(hrx_hip_kernel_compile(platform, library, target,
                                        kernel_source, kernel_names, 1,
                                        &bad_option, 1, &image, &size, NULL),
                 HRX_STATUS_INVALID_ARGUMENT, "bad option", NULL);
  return 0;
}

static int scenario_amd_compile(const char* library) {
  const char* targets[] = {"gfx90a:sramecc+:xnack-", "gfx1030"};
  for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); ++i) {
    char* image = NULL;
    size_t size = 0;
    char description[384] = "";
    hrx_status_t status = hrx_hip_batch_compile(
        "amd", library, targets[i], &image, &size, description,
        sizeof(description));
    CHECK(status == NULL, "compile for %s: %s", targets[i],
          hrx_status_message(status));
    hrx_status_free(status);
    if (!image) continue;
    CHECK(size > 4 && memcmp(image, "\x7f" "ELF", 4) == 0,
          "%s: not an ELF code object (%zu bytes)", targets[i], size);
    CHECK(strstr(description, "code object from") != NULL,
          "description: %s", description);
    printf("  %s: %zu bytes, %s\n", targets[i], size, description);
    free(image);
  }
  /* Users' kernels and the benchmark's, for two architectures. */
  if (check_compile("amd", library, "gfx90a", "hip", "hsaco")) return 1;
  if (check_compile("amd", library, "gfx1030", "hip", "hsaco")) return 1;
  hrx_kernel_compiler_t toolchain;
  expect_failure(hrx_hip_kernel_toolchain("amd", library, "sm_90", &toolchain),
                 HRX_STATUS_UNAVAILABLE, "an NVIDIA target on AMD", "sm_90",
                 NULL);
  return 0;
}

/* NVRTC from a toolkit or the pip wheel, no GPU: cubins for the exact
 * architecture, PTX for one newer than this NVRTC knows, a clear refusal
 * for one older than it supports, and the batch kernel as PTX. */
static int scenario_nvidia_compile(const char* library) {
  setenv("HRX_RTC_LIBRARY", library, 1);
  if (check_compile("nvidia", NULL, "sm_90", "cuda", "cubin")) return 1;
  if (check_compile("nvidia", NULL, "sm_80", "cuda", "cubin")) return 1;
  /* An architecture past the newest this NVRTC lists: PTX for the newest
   * one below it, which the driver compiles for the device. */
  hrx_kernel_compiler_t toolchain;
  CHECK_OK(hrx_hip_kernel_toolchain("nvidia", NULL, "sm_999", &toolchain));
  CHECK(strcmp(toolchain.image_format, "ptx") == 0, "sm_999 format %s",
        toolchain.image_format);
  if (check_compile("nvidia", NULL, "sm_999", "cuda", "ptx")) return 1;
  expect_failure(hrx_hip_kernel_toolchain("nvidia", NULL, "sm_10", &toolchain),
                 HRX_STATUS_UNAVAILABLE, "an architecture older than NVRTC's",
                 "sm_10", "HRX_RTC_LIBRARY", NULL);
  expect_failure(hrx_hip_kernel_toolchain("nvidia", NULL, "gfx90a", &toolchain),
                 HRX_STATUS_UNAVAILABLE, "an AMD target on NVIDIA", "gfx90a",
                 NULL);
  char* image = NULL;
  size_t size = 0;
  char description[384] = "";
  CHECK_OK(hrx_hip_batch_compile("nvidia", NULL, "sm_90", &image, &size,
                                 description, sizeof(description)));
  CHECK(strncmp(description, "PTX from libnvrtc.so", 20) == 0 &&
            strstr(description, "for compute_90") != NULL,
        "batch kernel: %s", description);
  CHECK(image && strstr(image, ".entry hrx_batch_execute") != NULL,
        "batch kernel is not PTX");
  printf("  batch kernel: %s\n", description);
  free(image);
  return 0;
}

/* No compiler where HRX_RTC_LIBRARY points: UNAVAILABLE naming the path and
 * the variable, from both the toolchain and a compile. */
static int scenario_rtc_missing(const char* path) {
  setenv("HRX_RTC_LIBRARY", path, 1);
  hrx_kernel_compiler_t toolchain;
  expect_failure(hrx_hip_kernel_toolchain("amd", NULL, "gfx90a", &toolchain),
                 HRX_STATUS_UNAVAILABLE, "toolchain", path, "HRX_RTC_LIBRARY",
                 "hiprtc", NULL);
  void* image = NULL;
  size_t size = 0;
  expect_failure(hrx_hip_kernel_compile("amd", NULL, "gfx90a", kernel_source,
                                        kernel_names, 1, NULL, 0, &image,
                                        &size, NULL),
                 HRX_STATUS_UNAVAILABLE, "compile", path, NULL);
  CHECK(image == NULL, "image written on failure");
  return 0;
}

static const hip_scenario_t scenarios[] = {
    {"amd-compile", "LIBRARY", scenario_amd_compile},
    {"nvidia-compile", "NVRTC", scenario_nvidia_compile},
    {"rtc-missing", "PATH", scenario_rtc_missing},
};

int main(int argc, char** argv) {
  return hip_scenario_main(argc, argv, scenarios,
                           sizeof(scenarios) / sizeof(scenarios[0]));
}
