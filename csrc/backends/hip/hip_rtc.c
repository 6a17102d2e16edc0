#include "backends/hip/hip_rtc.h"

#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct hrx_rtc_library_s {
  bool loaded;
  hrx_rtc_symbols_t sym;
  char name[512];
  char failure[2048];  /* why nothing loaded */
} hrx_rtc_library_t;

static pthread_mutex_t hrx_rtc_mutex = PTHREAD_MUTEX_INITIALIZER;
static bool hrx_rtc_searched = false;  /* hrx_rtc_mutex */
static hrx_rtc_library_t hrx_rtc;      /* immutable once searched */

static void hrx_rtc_note(const char* candidate, const char* why) {
  size_t used = strlen(hrx_rtc.failure);
  if (used + 4 >= sizeof(hrx_rtc.failure)) return;
  snprintf(hrx_rtc.failure + used, sizeof(hrx_rtc.failure) - used, "%s%s: %s",
           used ? "; " : "", candidate, why);
}

/* Binds the entry points of `path` with `prefix` ("nvrtc" / "hiprtc"). */
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
    void** slot;
  } entries[] = {
      {"CreateProgram", (void**)&hrx_rtc.sym.CreateProgram},
      {"CompileProgram", (void**)&hrx_rtc.sym.CompileProgram},
      {"GetProgramLogSize", (void**)&hrx_rtc.sym.GetProgramLogSize},
      {"GetProgramLog", (void**)&hrx_rtc.sym.GetProgramLog},
      {amd ? "GetCodeSize" : "GetPTXSize", (void**)&hrx_rtc.sym.GetCodeSize},
      {amd ? "GetCode" : "GetPTX", (void**)&hrx_rtc.sym.GetCode},
      {"DestroyProgram", (void**)&hrx_rtc.sym.DestroyProgram},
      {"GetErrorString", (void**)&hrx_rtc.sym.GetErrorString},
  };
  for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); ++i) {
    char symbol[64];
    snprintf(symbol, sizeof(symbol), "%s%s", prefix, entries[i].suffix);
    *entries[i].slot = dlsym(library, symbol);
    if (!*entries[i].slot) {
      char why[128];
      snprintf(why, sizeof(why), "has no %s", symbol);
      hrx_rtc_note(path, why);
      memset(&hrx_rtc.sym, 0, sizeof(hrx_rtc.sym));
      dlclose(library);
      return false;
    }
  }
  snprintf(hrx_rtc.name, sizeof(hrx_rtc.name), "%s", path);
  hrx_rtc.loaded = true;
  return true;
}

static bool hrx_rtc_try_glob(const char* pattern, bool amd) {
  glob_t found;
  if (glob(pattern, 0, NULL, &found) != 0) return false;
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

hrx_status_t hrx_hip_rtc_compile(const char* platform,
                                 const char* runtime_library,
                                 const char* source,
                                 const char* name, const char* const* options,
                                 int option_count, char** out_image,
                                 size_t* out_size, char* out_compiler,
                                 size_t compiler_capacity) {
  bool amd = strcmp(platform, "amd") == 0;
  pthread_mutex_lock(&hrx_rtc_mutex);
  if (!hrx_rtc_searched) {
    hrx_rtc_search(amd, runtime_library);
    hrx_rtc_searched = true;
  }
  pthread_mutex_unlock(&hrx_rtc_mutex);
  if (!hrx_rtc.loaded) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "no runtime compiler (%s) could be loaded: %s",
                           amd ? "hiprtc" : "NVRTC",
                           hrx_rtc.failure[0] ? hrx_rtc.failure
                                              : "nothing to try");
  }
  snprintf(out_compiler, compiler_capacity, "%s", hrx_rtc.name);
  hrx_rtc_program_t program = NULL;
  hrx_rtc_result_t result =
      hrx_rtc.sym.CreateProgram(&program, source, name, 0, NULL, NULL);
  if (result != 0) {
    return hrx_make_status(HRX_STATUS_DEVICE_ERROR,
                           "%s: creating the program failed: %s",
                           hrx_rtc.name, hrx_rtc_error(result));
  }
  hrx_status_t status = NULL;
  result = hrx_rtc.sym.CompileProgram(program, option_count,
                                      (const char**)options);
  if (result != 0) {
    size_t log_size = 0;
    char* log = NULL;
    if (hrx_rtc.sym.GetProgramLogSize(program, &log_size) == 0 && log_size) {
      log = calloc(1, log_size + 1);
      if (log && hrx_rtc.sym.GetProgramLog(program, log) != 0) log[0] = 0;
    }
    status = hrx_make_status(HRX_STATUS_DEVICE_ERROR,
                             "%s: compiling the batch kernel failed: %s%s%.1500s",
                             hrx_rtc.name, hrx_rtc_error(result),
                             log && log[0] ? ": " : "", log ? log : "");
    free(log);
  } else {
    size_t size = 0;
    result = hrx_rtc.sym.GetCodeSize(program, &size);
    char* image = result == 0 && size ? malloc(size + 1) : NULL;
    if (!image) {
      status = hrx_make_status(HRX_STATUS_DEVICE_ERROR,
                               "%s: no compiled code (%s)", hrx_rtc.name,
                               result ? hrx_rtc_error(result) : "empty");
    } else if ((result = hrx_rtc.sym.GetCode(program, image)) != 0) {
      free(image);
      status = hrx_make_status(HRX_STATUS_DEVICE_ERROR,
                               "%s: reading the compiled code failed: %s",
                               hrx_rtc.name, hrx_rtc_error(result));
    } else {
      image[size] = 0;
      *out_image = image;
      *out_size = size;
    }
  }
  hrx_rtc.sym.DestroyProgram(&program);
  return status;
}
