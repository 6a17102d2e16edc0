/* The helpers the run-time tests of the hip backend share
 * (hip_test_support.h says what each is). */
#include "hip_test_support.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "drivers/hip/hip_dynamic.h"

const hrx_hal_device_settings_t hrx_test_settings = {
    .batching = true, .streaming_copies = true};

int failures;

/* One source for both platforms: saxpy, a kernel that needs
 * options (HRX_SCALE defined, HRX_ORDER defined then undefined: the options
 * reach the compiler in order) and a C++-linkage kernel. */
const char kernel_source[] =
    "#ifndef HRX_SCALE\n"
    "#error HRX_SCALE is not defined: options did not reach the compiler\n"
    "#endif\n"
    "#ifdef HRX_ORDER\n"
    "#error options were passed out of order\n"
    "#endif\n"
    "extern \"C\" __global__ void saxpy(float* y, const float* x, float a,\n"
    "                                   int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "extern \"C\" __global__ void scaled(unsigned int* out) {\n"
    "  out[blockIdx.x * blockDim.x + threadIdx.x] = HRX_SCALE;\n"
    "}\n"
    "/* Dynamic shared memory: each block sums 0..words-1 through it. */\n"
    "extern \"C\" __global__ void shared_sum(unsigned int* out,\n"
    "                                        unsigned int words) {\n"
    "  extern __shared__ unsigned int scratch[];\n"
    "  for (unsigned int i = threadIdx.x; i < words; i += blockDim.x)\n"
    "    scratch[i] = i;\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0) {\n"
    "    unsigned int sum = 0;\n"
    "    for (unsigned int i = 0; i < words; ++i) sum += scratch[i];\n"
    "    out[blockIdx.x] = sum;\n"
    "  }\n"
    "}\n"
    "__global__ void cpp_linkage(int* p) { *p = 1; }\n";

const char* const kernel_options[3] = {"-DHRX_SCALE=3",
                                       "-DHRX_ORDER=1", "-UHRX_ORDER"};
const char* const kernel_names[3] = {"saxpy", "scaled", "shared_sum"};

void expect_failure(hrx_status_t status, hrx_status_code_t code,
                    const char* what, ...) {
  CHECK(status != NULL, "%s succeeded", what);
  if (!status) return;
  CHECK(hrx_status_code(status) == code, "%s: code %s: %s", what,
        hrx_status_code_name(hrx_status_code(status)),
        hrx_status_message(status));
  va_list needles;
  va_start(needles, what);
  for (const char* needle = va_arg(needles, const char*); needle;
       needle = va_arg(needles, const char*)) {
    CHECK(strstr(hrx_status_message(status), needle) != NULL,
          "%s: no \"%s\" in: %s", what, needle, hrx_status_message(status));
  }
  va_end(needles);
  printf("  %s: %s: %.300s%s\n", what,
         hrx_status_code_name(hrx_status_code(status)),
         hrx_status_message(status),
         strlen(hrx_status_message(status)) > 300 ? "..." : "");
  hrx_status_free(status);
}

void expect_last_error_clean(const char* after) {
  if (!hrx_hip_rt.sym.GetLastError) return;
  hrx_hip_error_t last = hrx_hip_rt.sym.GetLastError();
  CHECK(last == hrx_hip_rt.platform->success, "%s left last error %d", after,
        (int)last);
}

hrx_status_t create_queue(device_fixture_t* f, hrx_native_queue_t** out_queue) {
  int native_priority = 0;
  return f->vt->queue.create(f->device, HRX_STREAM_PRIORITY_NORMAL, 0,
                             out_queue, &native_priority);
}

int hip_scenario_main(int argc, char** argv, const hip_scenario_t* scenarios,
                      size_t count) {
  const hip_scenario_t* chosen = NULL;
  for (size_t i = 0; i < count && !chosen; ++i) {
    if (argc == (scenarios[i].argument ? 3 : 2) &&
        strcmp(argv[1], scenarios[i].name) == 0) {
      chosen = &scenarios[i];
    }
  }
  if (!chosen) {
    fprintf(stderr, "usage: %s", argv[0]);
    for (size_t i = 0; i < count; ++i) {
      fprintf(stderr, "%s %s%s%s", i ? " |" : "", scenarios[i].name,
              scenarios[i].argument ? " " : "",
              scenarios[i].argument ? scenarios[i].argument : "");
    }
    fputc('\n', stderr);
    return 2;
  }
  int rc = chosen->run(chosen->argument ? argv[2] : NULL);
  if (rc == 0 && failures == 0) {
    printf("PASS %s\n", argv[1]);
    return 0;
  }
  printf("FAILED %s (%d failure(s))\n", argv[1], failures);
  return 1;
}
