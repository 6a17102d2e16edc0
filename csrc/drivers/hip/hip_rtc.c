#include "hip_rtc.h"

#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct hrx_rtc_library_s {
  bool loaded;
  bool amd;
  hrx_rtc_symbols_t sym;
  char name[512];
  char version[32];
  /* NVRTC: the architectures it compiles for (GetSupportedArchs), as
   * numbers (90 for sm_90), ascending; arch_count 0 when it cannot say. */
  int archs[64];
  int arch_count;
  char failure[2048];  /* why nothing loaded */
} hrx_rtc_library_t;

static pthread_mutex_t hrx_rtc_mutex = PTHREAD_MUTEX_INITIALIZER;
static bool hrx_rtc_searched = false;  /* hrx_rtc_mutex */
static hrx_rtc_library_t hrx_rtc;      /* immutable once searched */

/* The most compiler log a message carries. */
#define HRX_RTC_LOG_LIMIT 65536

static void hrx_rtc_note(const char* candidate, const char* why) {
  size_t used = strlen(hrx_rtc.failure);
  if (used + 4 >= sizeof(hrx_rtc.failure)) return;
  snprintf(hrx_rtc.failure + used, sizeof(hrx_rtc.failure) - used, "%s%s: %s",
           used ? "; " : "", candidate, why);
}

/* dlsym's object pointer into a function pointer slot, as POSIX allows. */
static bool hrx_rtc_bind(void* library, const char* symbol, void* slot) {
  void* address = dlsym(library, symbol);
  memcpy(slot, &address, sizeof(address));
  return address != NULL;
}

/* Reads the version and, from NVRTC, the architectures it supports. */
static void hrx_rtc_describe_loaded(void) {
  int major = 0;
  int minor = 0;
  if (hrx_rtc.sym.Version &&
      hrx_rtc.sym.Version(&major, &minor) == HRX_RTC_SUCCESS) {
    snprintf(hrx_rtc.version, sizeof(hrx_rtc.version), "%d.%d", major, minor);
  } else {
    snprintf(hrx_rtc.version, sizeof(hrx_rtc.version), "unknown");
  }
  int count = 0;
  if (hrx_rtc.sym.GetNumSupportedArchs && hrx_rtc.sym.GetSupportedArchs &&
      hrx_rtc.sym.GetNumSupportedArchs(&count) == HRX_RTC_SUCCESS &&
      count > 0 && count <= (int)(sizeof(hrx_rtc.archs) / sizeof(int)) &&
      hrx_rtc.sym.GetSupportedArchs(hrx_rtc.archs) == HRX_RTC_SUCCESS) {
    hrx_rtc.arch_count = count;
  }
}

/* Binds the entry points of `path` ("nvrtc*" or "hiprtc*"). */
static bool hrx_rtc_try(const char* path, bool amd) {
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* error = dlerror();
    hrx_rtc_note(path, error ? error : "cannot be loaded");
    return false;
  }
  const char* prefix = amd ? "hiprtc" : "nvrtc";
  struct {
    const char* suffix;
    void* slot;
    bool required;
  } entries[] = {
      {"CreateProgram", &hrx_rtc.sym.CreateProgram, true},
      {"CompileProgram", &hrx_rtc.sym.CompileProgram, true},
      {"GetProgramLogSize", &hrx_rtc.sym.GetProgramLogSize, true},
      {"GetProgramLog", &hrx_rtc.sym.GetProgramLog, true},
      {amd ? "GetCodeSize" : "GetPTXSize", &hrx_rtc.sym.GetCodeSize, true},
      {amd ? "GetCode" : "GetPTX", &hrx_rtc.sym.GetCode, true},
      {"DestroyProgram", &hrx_rtc.sym.DestroyProgram, true},
      {"GetErrorString", &hrx_rtc.sym.GetErrorString, true},
      {"Version", &hrx_rtc.sym.Version, false},
      {"AddNameExpression", &hrx_rtc.sym.AddNameExpression, false},
      {"GetLoweredName", &hrx_rtc.sym.GetLoweredName, false},
      {amd ? "" : "GetCUBINSize", &hrx_rtc.sym.GetCUBINSize, false},
      {amd ? "" : "GetCUBIN", &hrx_rtc.sym.GetCUBIN, false},
      {amd ? "" : "GetNumSupportedArchs", &hrx_rtc.sym.GetNumSupportedArchs,
       false},
      {amd ? "" : "GetSupportedArchs", &hrx_rtc.sym.GetSupportedArchs, false},
  };
  for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); ++i) {
    if (!entries[i].suffix[0]) continue;
    char symbol[64];
    snprintf(symbol, sizeof(symbol), "%s%s", prefix, entries[i].suffix);
    if (!hrx_rtc_bind(library, symbol, entries[i].slot) &&
        entries[i].required) {
      char why[128];
      snprintf(why, sizeof(why), "has no %s", symbol);
      hrx_rtc_note(path, why);
      memset(&hrx_rtc.sym, 0, sizeof(hrx_rtc.sym));
      dlclose(library);
      return false;
    }
  }
  snprintf(hrx_rtc.name, sizeof(hrx_rtc.name), "%s", path);
  hrx_rtc.amd = amd;
  hrx_rtc.loaded = true;
  hrx_rtc_describe_loaded();
  return true;
}

static bool hrx_rtc_try_glob(const char* pattern, bool amd) {
  glob_t found;
  if (glob(pattern, 0, NULL, &found) != 0) {
    hrx_rtc_note(pattern, "no such file");
    return false;
  }
  bool ok = false;
  for (size_t i = 0; i < found.gl_pathc && !ok; ++i) {
    ok = hrx_rtc_try(found.gl_pathv[i], amd);
  }
  globfree(&found);
  return ok;
}

static void hrx_rtc_search(bool amd, const char* runtime_library) {
  const char* exact = getenv("HRX_RTC_LIBRARY");
  if (exact && *exact) {
    /* The note names the path; the message names the variable. */
    hrx_rtc_try(exact, amd);
    return;
  }
  if (amd && runtime_library && hrx_rtc_try(runtime_library, amd)) return;
  static const char* const nvidia[] = {"libnvrtc.so", "libnvrtc.so.13",
                                       "libnvrtc.so.12", "libnvrtc.so.11.2"};
  static const char* const rocm[] = {"libhiprtc.so", "libhiprtc.so.6",
                                     "libhiprtc.so.5",
                                     "/opt/rocm/lib/libhiprtc.so"};
  const char* const* names = amd ? rocm : nvidia;
  for (size_t i = 0; i < 4; ++i) {
    if (hrx_rtc_try(names[i], amd)) return;
  }
  if (amd) return;
  const char* dirs = getenv("HRX_PYTHON_SITE_DIRS");
  if (!dirs) return;
  char* copy = strdup(dirs);
  if (!copy) return;
  char* save = NULL;
  for (char* dir = strtok_r(copy, ":", &save); dir;
       dir = strtok_r(NULL, ":", &save)) {
    char pattern[1024];
    snprintf(pattern, sizeof(pattern), "%s/nvidia/cuda_nvrtc/lib/libnvrtc.so*",
             dir);
    if (hrx_rtc_try_glob(pattern, amd)) break;
    snprintf(pattern, sizeof(pattern), "%s/nvidia/cu13/lib/libnvrtc.so*", dir);
    if (hrx_rtc_try_glob(pattern, amd)) break;
  }
  free(copy);
}

static const char* hrx_rtc_error(hrx_rtc_result_t result) {
  const char* text = hrx_rtc.sym.GetErrorString
                         ? hrx_rtc.sym.GetErrorString(result)
                         : NULL;
  return text ? text : "unknown error";
}

const char* hrx_hip_rtc_format_name(hrx_rtc_format_t format) {
  switch (format) {
    case HRX_RTC_FORMAT_PTX:
      return "ptx";
    case HRX_RTC_FORMAT_CUBIN:
      return "cubin";
    case HRX_RTC_FORMAT_CODE_OBJECT:
      return "hsaco";
  }
  return "unknown";
}

/* Loads the compiler once; UNAVAILABLE with what was tried when none. */
static hrx_status_t hrx_rtc_load(bool amd, const char* runtime_library) {
  pthread_mutex_lock(&hrx_rtc_mutex);
  if (!hrx_rtc_searched) {
    hrx_rtc_search(amd, runtime_library);
    hrx_rtc_searched = true;
  }
  pthread_mutex_unlock(&hrx_rtc_mutex);
  if (!hrx_rtc.loaded) {
    return hrx_make_status(
        HRX_STATUS_UNAVAILABLE,
        "no runtime compiler (%s) could be loaded: %s; set HRX_RTC_LIBRARY "
        "to the path of %s to use one",
        amd ? "hiprtc" : "NVRTC",
        hrx_rtc.failure[0] ? hrx_rtc.failure : "nothing to try",
        amd ? "libhiprtc.so (or a libamdhip64.so that contains hiprtc)"
            : "libnvrtc.so");
  }
  if (hrx_rtc.amd != amd) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "the runtime compiler loaded in this process (%s) "
                           "is for the other GPU platform",
                           hrx_rtc.name);
  }
  return NULL;
}

/* "sm_90" -> 90; -1 when `target` is not an NVIDIA architecture. */
static int hrx_rtc_sm_number(const char* target) {
  if (strncmp(target, "sm_", 3) != 0) return -1;
  char* end = NULL;
  long number = strtol(target + 3, &end, 10);
  if (end == target + 3 || number <= 0 || number > 100000) return -1;
  return (int)number;
}

/* NVIDIA: the architecture to build for, and whether as a cubin. */
static hrx_status_t hrx_rtc_plan_nvidia(const char* target, bool binary,
                                        hrx_rtc_plan_t* plan) {
  int want = hrx_rtc_sm_number(target);
  if (want < 0) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "%s cannot build for %s: not an NVIDIA "
                           "architecture (sm_XY)",
                           hrx_rtc.name, target);
  }
  int chosen = want;
  bool listed = hrx_rtc.arch_count == 0;  /* unknown: assume it is */
  if (hrx_rtc.arch_count > 0) {
    chosen = -1;
    for (int i = 0; i < hrx_rtc.arch_count; ++i) {
      if (hrx_rtc.archs[i] == want) listed = true;
      if (hrx_rtc.archs[i] <= want && hrx_rtc.archs[i] > chosen) {
        chosen = hrx_rtc.archs[i];
      }
    }
    if (chosen < 0) {
      return hrx_make_status(
          HRX_STATUS_UNAVAILABLE,
          "%s %s compiles for sm_%d to sm_%d, not for the device's %s; point "
          "HRX_RTC_LIBRARY at an NVRTC that supports it",
          hrx_rtc.name, hrx_rtc.version, hrx_rtc.archs[0],
          hrx_rtc.archs[hrx_rtc.arch_count - 1], target);
    }
  }
  if (binary && listed && hrx_rtc.sym.GetCUBIN && hrx_rtc.sym.GetCUBINSize) {
    plan->format = HRX_RTC_FORMAT_CUBIN;
    snprintf(plan->arch, sizeof(plan->arch), "sm_%d", want);
  } else {
    plan->format = HRX_RTC_FORMAT_PTX;
    snprintf(plan->arch, sizeof(plan->arch), "compute_%d", chosen);
  }
  return NULL;
}

hrx_status_t hrx_hip_rtc_plan(const char* platform,
                              const char* runtime_library, const char* target,
                              bool binary, hrx_rtc_plan_t* out_plan) {
  bool amd = strcmp(platform, "amd") == 0;
  HRX_RETURN_IF_ERROR(hrx_rtc_load(amd, runtime_library));
  hrx_rtc_plan_t plan;
  memset(&plan, 0, sizeof(plan));
  plan.amd = amd;
  snprintf(plan.library, sizeof(plan.library), "%s", hrx_rtc.name);
  snprintf(plan.version, sizeof(plan.version), "%s", hrx_rtc.version);
  if (amd) {
    if (strncmp(target, "gfx", 3) != 0) {
      return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                             "%s cannot build for %s: not an AMD "
                             "architecture (gfx...)",
                             hrx_rtc.name, target);
    }
    plan.format = HRX_RTC_FORMAT_CODE_OBJECT;
    size_t n = strcspn(target, ":");
    if (n >= sizeof(plan.arch)) n = sizeof(plan.arch) - 1;
    memcpy(plan.arch, target, n);
    plan.arch[n] = '\0';
  } else {
    HRX_RETURN_IF_ERROR(hrx_rtc_plan_nvidia(target, binary, &plan));
  }
  *out_plan = plan;
  return NULL;
}

/* The compiler's log, whole up to HRX_RTC_LOG_LIMIT (malloc'ed; "" when
 * there is none; NULL only when out of memory). */
static char* hrx_rtc_log(hrx_rtc_program_t program) {
  size_t size = 0;
  if (hrx_rtc.sym.GetProgramLogSize(program, &size) != HRX_RTC_SUCCESS ||
      size == 0) {
    return strdup("");
  }
  char* log = calloc(1, size + 128);  /* room for the note of a cut */
  if (!log) return NULL;
  if (hrx_rtc.sym.GetProgramLog(program, log) != HRX_RTC_SUCCESS) {
    log[0] = '\0';
    return log;
  }
  size_t length = strlen(log);
  while (length && (log[length - 1] == '\n' || log[length - 1] == '\0')) {
    log[--length] = '\0';
  }
  if (length > HRX_RTC_LOG_LIMIT) {
    char note[96];
    int n = snprintf(note, sizeof(note),
                     "\n[log cut: the first %d of %zu bytes shown]",
                     HRX_RTC_LOG_LIMIT, length);
    memcpy(log + HRX_RTC_LOG_LIMIT, note, (size_t)n + 1);
  }
  return log;
}

/* Registers each name as a name expression before the compile. */
static hrx_status_t hrx_rtc_add_names(hrx_rtc_program_t program,
                                      const char* program_name,
                                      const char* const* names,
                                      size_t name_count) {
  for (size_t i = 0; i < name_count; ++i) {
    hrx_rtc_result_t result = hrx_rtc.sym.AddNameExpression(program, names[i]);
    if (result != HRX_RTC_SUCCESS) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "%s cannot take the kernel name \"%s\" of %s: %s",
                             hrx_rtc.name, names[i], program_name,
                             hrx_rtc_error(result));
    }
  }
  return NULL;
}

/* After the compile: each name must be the symbol it compiled to. */
static hrx_status_t hrx_rtc_check_names(hrx_rtc_program_t program,
                                        const char* program_name,
                                        const char* const* names,
                                        size_t name_count) {
  for (size_t i = 0; i < name_count; ++i) {
    const char* lowered = NULL;
    hrx_rtc_result_t result =
        hrx_rtc.sym.GetLoweredName(program, names[i], &lowered);
    if (result != HRX_RTC_SUCCESS || !lowered) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "%s found no kernel \"%s\" in %s: %s",
                             hrx_rtc.name, names[i], program_name,
                             result ? hrx_rtc_error(result) : "no symbol");
    }
    if (strcmp(lowered, names[i]) != 0) {
      return hrx_make_status(
          HRX_STATUS_INVALID_ARGUMENT,
          "kernel \"%s\" of %s has C++ linkage (its symbol is %s); kernels "
          "are looked up by symbol name, so declare it extern \"C\"",
          names[i], program_name, lowered);
    }
  }
  return NULL;
}

/* NVIDIA: the PTX beside a cubin (nvrtcGetPTX, bound as GetCode), or NULL
 * where this NVRTC keeps none for a real architecture. */
static char* hrx_rtc_ptx(hrx_rtc_program_t program) {
  size_t size = 0;
  if (hrx_rtc.sym.GetCodeSize(program, &size) != HRX_RTC_SUCCESS ||
      size == 0) {
    return NULL;
  }
  char* ptx = malloc(size + 1);
  if (!ptx) return NULL;
  if (hrx_rtc.sym.GetCode(program, ptx) != HRX_RTC_SUCCESS) {
    free(ptx);
    return NULL;
  }
  ptx[size] = 0;
  return ptx;
}

/* The failure of CompileProgram: the source or options, unless the
 * compiler itself could not work. */
static hrx_status_t hrx_rtc_compile_failure(const hrx_rtc_plan_t* plan,
                                            hrx_rtc_program_t program,
                                            const char* program_name,
                                            hrx_rtc_result_t result) {
  hrx_status_code_t code = HRX_STATUS_INVALID_ARGUMENT;
  if (result == HRX_RTC_ERROR_OUT_OF_MEMORY) code = HRX_STATUS_OUT_OF_MEMORY;
  if (result == HRX_RTC_ERROR_BUILTIN_OPERATION_FAILURE) {
    code = HRX_STATUS_UNAVAILABLE;
  }
  char* log = hrx_rtc_log(program);
  hrx_status_t status = hrx_make_status(
      code, "compiling %s with %s %s for %s failed: %s%s%s", program_name,
      plan->library, plan->version, plan->arch, hrx_rtc_error(result),
      log && log[0] ? "\n" : "", log ? log : "");
  free(log);
  return status;
}

hrx_status_t hrx_hip_rtc_compile(const hrx_rtc_plan_t* plan,
                                 const char* source, const char* program_name,
                                 const char* const* options,
                                 size_t option_count,
                                 const char* const* names, size_t name_count,
                                 char** out_image, size_t* out_size,
                                 char** out_ptx, size_t* out_ptx_size) {
  if (out_ptx) *out_ptx = NULL;
  HRX_RETURN_IF_ERROR(hrx_rtc_load(plan->amd, NULL));
  if (option_count > 4096) {
    return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                           "%zu compiler options; at most 4096", option_count);
  }
  const char** all = calloc(option_count + 1, sizeof(*all));
  if (!all) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot allocate %zu compiler options",
                           option_count + 1);
  }
  char arch_option[96];
  snprintf(arch_option, sizeof(arch_option), "%s%s",
           plan->amd ? "--offload-arch=" : "--gpu-architecture=", plan->arch);
  all[0] = arch_option;
  for (size_t i = 0; i < option_count; ++i) all[i + 1] = options[i];

  bool check_names = name_count > 0 && hrx_rtc.sym.AddNameExpression &&
                     hrx_rtc.sym.GetLoweredName;
  hrx_rtc_program_t program = NULL;
  hrx_rtc_result_t result =
      hrx_rtc.sym.CreateProgram(&program, source, program_name, 0, NULL, NULL);
  if (result != HRX_RTC_SUCCESS) {
    free(all);
    return hrx_make_status(
        result == HRX_RTC_ERROR_OUT_OF_MEMORY ? HRX_STATUS_OUT_OF_MEMORY
                                              : HRX_STATUS_INVALID_ARGUMENT,
        "%s: creating the program %s failed: %s", hrx_rtc.name, program_name,
        hrx_rtc_error(result));
  }
  hrx_status_t status =
      check_names ? hrx_rtc_add_names(program, program_name, names, name_count)
                  : NULL;
  if (!status) {
    result = hrx_rtc.sym.CompileProgram(program, (int)option_count + 1, all);
    if (result != HRX_RTC_SUCCESS) {
      status = hrx_rtc_compile_failure(plan, program, program_name, result);
    }
  }
  if (!status && check_names) {
    status = hrx_rtc_check_names(program, program_name, names, name_count);
  }
  if (!status) {
    bool cubin = plan->format == HRX_RTC_FORMAT_CUBIN;
    size_t size = 0;
    result = cubin ? hrx_rtc.sym.GetCUBINSize(program, &size)
                   : hrx_rtc.sym.GetCodeSize(program, &size);
    char* image =
        result == HRX_RTC_SUCCESS && size ? malloc(size + 1) : NULL;
    if (!image) {
      status = hrx_make_status(
          result == HRX_RTC_SUCCESS && size ? HRX_STATUS_OUT_OF_MEMORY
                                            : HRX_STATUS_DEVICE_ERROR,
          "%s: no compiled %s for %s (%s)", hrx_rtc.name,
          hrx_hip_rtc_format_name(plan->format), program_name,
          result ? hrx_rtc_error(result) : size ? "out of memory" : "empty");
    } else if ((result = cubin ? hrx_rtc.sym.GetCUBIN(program, image)
                               : hrx_rtc.sym.GetCode(program, image)) !=
               HRX_RTC_SUCCESS) {
      free(image);
      status = hrx_make_status(HRX_STATUS_DEVICE_ERROR,
                               "%s: reading the compiled %s failed: %s",
                               hrx_rtc.name, program_name,
                               hrx_rtc_error(result));
    } else {
      image[size] = 0;
      *out_image = image;
      *out_size = size;
      if (out_ptx && !plan->amd) {
        *out_ptx = cubin ? hrx_rtc_ptx(program) : strdup(image);
        *out_ptx_size = *out_ptx ? strlen(*out_ptx) : 0;
      }
    }
  }
  hrx_rtc.sym.DestroyProgram(&program);
  free(all);
  return status;
}
