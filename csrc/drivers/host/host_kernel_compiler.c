/* Running the system C compiler for host kernels
 * (host_kernel_compiler.h). Children are started with posix_spawn (no
 * shell; each option one argument), in the temporary directory where the
 * C library can change it, so the compiler's messages name "kernel.c". */
#include "host_kernel_compiler.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/environment.h"
#include "base/status.h"
#include "host_kernel_dialect.h"
#include "host_kernel_header.h"
#include "host_kernel_source.h"

extern char** environ;

#if defined(__GLIBC__) && defined(__GLIBC_PREREQ)
#if __GLIBC_PREREQ(2, 29)
#define HRX_HOST_SPAWN_CHDIR 1
#endif
#endif

/* The most of a compiler's output a message carries. */
#define HRX_HOST_COMPILER_LOG_MAX (64u * 1024u)

void hrx_host_compiler_initialize(hrx_host_compiler_t* compiler) {
  pthread_mutex_init(&compiler->mutex, NULL);
  compiler->command = NULL;
}

void hrx_host_compiler_deinitialize(hrx_host_compiler_t* compiler) {
  free(compiler->command);
  pthread_mutex_destroy(&compiler->mutex);
}

/* ------------------------------------------------------------- the argv */

/* A command split at spaces into a NULL-terminated argv with room for
 * more entries; words point into `storage`, argv[0] at `program` once
 * resolved (all owned). */
typedef struct {
  char** argv;
  size_t count;
  size_t capacity;
  char* storage;
  char* program;
} hrx_host_argv_t;

static void hrx_host_argv_free(hrx_host_argv_t* argv) {
  free(argv->argv);
  free(argv->storage);
  free(argv->program);
  memset(argv, 0, sizeof(*argv));
}

static bool hrx_host_argv_split(const char* command, size_t extra,
                                hrx_host_argv_t* out) {
  memset(out, 0, sizeof(*out));
  out->storage = strdup(command);
  size_t words = 0;
  for (const char* c = command; *c; ++c) words += *c != ' ';
  out->capacity = words + extra + 1;
  out->argv = calloc(out->capacity, sizeof(char*));
  if (!out->storage || !out->argv) {
    hrx_host_argv_free(out);
    return false;
  }
  for (char* word = strtok(out->storage, " \t"); word;
       word = strtok(NULL, " \t")) {
    out->argv[out->count++] = word;
  }
  return true;
}

static void hrx_host_argv_push(hrx_host_argv_t* argv, const char* word) {
  if (argv->count + 1 < argv->capacity) {
    argv->argv[argv->count++] = (char*)word;
    argv->argv[argv->count] = NULL;
  }
}

/* ---------------------------------------------------- finding a compiler */

/* `name` found on PATH (or as given when it has a '/'), into `out`. */
static bool hrx_host_find_program(const char* name, char* out, size_t size) {
  if (strchr(name, '/')) {
    if (access(name, X_OK) != 0) return false;
    snprintf(out, size, "%s", name);
    return true;
  }
  const char* path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  while (*path) {
    const char* colon = strchr(path, ':');
    size_t length = colon ? (size_t)(colon - path) : strlen(path);
    if (length) {
      snprintf(out, size, "%.*s/%s", (int)length, path, name);
      struct stat st;
      if (stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
          access(out, X_OK) == 0) {
        return true;
      }
    }
    path += length + (colon ? 1 : 0);
  }
  return false;
}

/* The compiler command: $HRX_HOST_CC, $CC, or cc / gcc / clang found on
 * PATH; *out_variable names where it came from ("" when found on PATH). */
static hrx_status_t hrx_host_compiler_command(char** out_command,
                                              const char** out_variable) {
  static const char* const variables[] = {"HRX_HOST_CC", "CC"};
  for (size_t i = 0; i < 2; ++i) {
    const char* value = NULL;
    HRX_RETURN_IF_ERROR(hrx_env_string(variables[i], &value));
    if (value && strspn(value, " \t") < strlen(value)) {
      *out_command = strdup(value);
      *out_variable = variables[i];
      return *out_command ? NULL
                          : hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                                            "cannot copy the compiler "
                                            "command");
    }
  }
  static const char* const programs[] = {"cc", "gcc", "clang"};
  char found[4096];
  for (size_t i = 0; i < 3; ++i) {
    if (hrx_host_find_program(programs[i], found, sizeof(found))) {
      *out_command = strdup(found);
      *out_variable = "";
      return *out_command ? NULL
                          : hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                                            "cannot copy the compiler "
                                            "command");
    }
  }
  const char* path = getenv("PATH");
  return hrx_make_status(
      HRX_STATUS_UNAVAILABLE,
      "no C compiler for host kernels: HRX_HOST_CC and CC are unset and "
      "none of cc, gcc, clang is on PATH (%.1024s); install one, or set "
      "HRX_HOST_CC to a C compiler (a path or a command on PATH)",
      path ? path : "unset");
}

/* ----------------------------------------------------------- running it */

/* Runs argv (argv[0] a path) with stdin from /dev/null and stdout and
 * stderr into `log` (a path in `dir`), in `dir` where posix_spawn can
 * change directory. *out_exit: the exit status, or -1 when it was killed
 * by a signal (*out_signal). */
static hrx_status_t hrx_host_run(char* const* argv, const char* dir,
                                 const char* log, int* out_exit,
                                 int* out_signal) {
  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot prepare to run the C compiler");
  }
  int error = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null",
                                               O_RDONLY, 0);
  if (!error) {
    error = posix_spawn_file_actions_addopen(
        &actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  }
  if (!error) error = posix_spawn_file_actions_adddup2(&actions, 1, 2);
#ifdef HRX_HOST_SPAWN_CHDIR
  if (!error) error = posix_spawn_file_actions_addchdir_np(&actions, dir);
#else
  (void)dir;
#endif
  pid_t pid = 0;
  if (!error) error = posix_spawn(&pid, argv[0], &actions, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "cannot run the C compiler %s: %s", argv[0],
                           strerror(error));
  }
  int wstatus = 0;
  pid_t waited;
  do {
    waited = waitpid(pid, &wstatus, 0);
  } while (waited < 0 && errno == EINTR);
  if (waited < 0) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "cannot wait for the C compiler %s: %s", argv[0],
                           strerror(errno));
  }
  *out_signal = 0;
  if (WIFEXITED(wstatus)) {
    *out_exit = WEXITSTATUS(wstatus);
  } else {
    *out_exit = -1;
    *out_signal = WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0;
  }
  return NULL;
}

/* The whole of a file, NUL-terminated (malloc'ed), at most `limit` bytes
 * (the rest is cut); NULL when it cannot be read. */
static char* hrx_host_read_file(const char* path, size_t limit,
                                size_t* out_size) {
  FILE* file = fopen(path, "rb");
  if (!file) return NULL;
  size_t capacity = 4096, size = 0;
  char* data = malloc(capacity + 1);
  while (data) {
    if (size == capacity) {
      if (capacity >= limit) break;
      capacity *= 2;
      char* grown = realloc(data, capacity + 1);
      if (!grown) {
        free(data);
        data = NULL;
        break;
      }
      data = grown;
    }
    size_t n = fread(data + size, 1, capacity - size, file);
    if (n == 0) break;
    size += n;
  }
  bool failed = ferror(file);
  fclose(file);
  if (!data || failed) {
    free(data);
    return NULL;
  }
  if (size > limit) size = limit;
  data[size] = '\0';
  if (out_size) *out_size = size;
  return data;
}

static hrx_status_t hrx_host_write_file(const char* path, const void* data,
                                        size_t size, const char* what) {
  FILE* file = fopen(path, "wb");
  bool ok = file && fwrite(data, 1, size, file) == size;
  if (file && fclose(file) != 0) ok = false;
  if (ok) return NULL;
  return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                         "cannot write the %s to %s: %s", what, path,
                         strerror(errno));
}

/* A private temporary directory for one compile, and its files' paths. */
typedef struct {
  char dir[4096];
  char source[4200];
  char header[4200];
  char preprocessed[4200];
  char object[4200];
  char log[4200];
} hrx_host_workdir_t;

static hrx_status_t hrx_host_workdir_create(hrx_host_workdir_t* work) {
  const char* tmp = getenv("TMPDIR");
  snprintf(work->dir, sizeof(work->dir), "%s/hrx-kernel-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(work->dir)) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "cannot create a directory to compile in (%s): "
                           "%s; set TMPDIR to a writable directory",
                           work->dir, strerror(errno));
  }
  snprintf(work->source, sizeof(work->source), "%s/kernel.c", work->dir);
  snprintf(work->header, sizeof(work->header), "%s/hrx_kernel.h", work->dir);
  snprintf(work->preprocessed, sizeof(work->preprocessed), "%s/kernel.i",
           work->dir);
  snprintf(work->object, sizeof(work->object), "%s/kernel.so", work->dir);
  snprintf(work->log, sizeof(work->log), "%s/compiler.log", work->dir);
  return NULL;
}

/* Removes the directory and what the compiler left in it. */
static void hrx_host_workdir_remove(hrx_host_workdir_t* work) {
  DIR* dir = opendir(work->dir);
  if (dir) {
    struct dirent* entry;
    char path[8192];
    while ((entry = readdir(dir)) != NULL) {
      if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) {
        continue;
      }
      snprintf(path, sizeof(path), "%s/%s", work->dir, entry->d_name);
      unlink(path);
    }
    closedir(dir);
  }
  rmdir(work->dir);
}

/* A file of the work directory as the child sees it: relative where it
 * runs there. */
static const char* hrx_host_workdir_name(const char* path) {
#ifdef HRX_HOST_SPAWN_CHDIR
  const char* slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
#else
  return path;
#endif
}

/* Runs one step; a refusal is INVALID_ARGUMENT with the compiler's log. */
static hrx_status_t hrx_host_compile_step(hrx_host_argv_t* argv,
                                          hrx_host_workdir_t* work,
                                          const char* step) {
  int exit_status = 0, signal = 0;
  HRX_RETURN_IF_ERROR(
      hrx_host_run(argv->argv, work->dir, work->log, &exit_status, &signal));
  if (exit_status == 0) return NULL;
  char* log = hrx_host_read_file(work->log, HRX_HOST_COMPILER_LOG_MAX, NULL);
  hrx_status_t status;
  if (exit_status < 0) {
    status = hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "the C compiler (%s) was killed by signal %d "
                             "while %s the kernel source:\n%s",
                             argv->argv[0], signal, step, log ? log : "");
  } else {
    status = hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "the C compiler (%s) rejected the kernel source "
                             "(exit status %d while %s):\n%s",
                             argv->argv[0], exit_status, step,
                             log ? log : "");
  }
  free(log);
  return status;
}

/* The resolved argv prefix of the current command (program path first). */
static hrx_status_t hrx_host_compiler_argv(size_t extra,
                                           hrx_host_argv_t* out,
                                           const char** out_variable) {
  char* command = NULL;
  HRX_RETURN_IF_ERROR(hrx_host_compiler_command(&command, out_variable));
  bool ok = hrx_host_argv_split(command, extra + 1, out);
  free(command);
  if (!ok) {
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot split the compiler command");
  }
  if (out->count == 0) {
    hrx_host_argv_free(out);
    return hrx_make_status(HRX_STATUS_UNAVAILABLE, "the compiler command %s "
                           "is empty; set HRX_HOST_CC to a C compiler",
                           *out_variable);
  }
  /* posix_spawn takes a path: resolve the program on PATH once here. */
  char found[4096];
  if (!hrx_host_find_program(out->argv[0], found, sizeof(found))) {
    hrx_status_t status = hrx_make_status(
        HRX_STATUS_UNAVAILABLE,
        "the C compiler '%s'%s%s cannot be run (not found, or not "
        "executable); set HRX_HOST_CC to a C compiler (a path or a command "
        "on PATH)",
        out->argv[0], *out_variable[0] ? " named by " : "", *out_variable);
    hrx_host_argv_free(out);
    return status;
  }
  out->program = strdup(found);
  if (!out->program) {
    hrx_host_argv_free(out);
    return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                           "cannot copy the compiler path");
  }
  out->argv[0] = out->program;
  return NULL;
}

/* ------------------------------------------------------------ describe */

hrx_status_t hrx_host_compiler_describe(hrx_host_compiler_t* compiler,
                                        hrx_kernel_compiler_t* out) {
  char* command = NULL;
  const char* variable = "";
  HRX_RETURN_IF_ERROR(hrx_host_compiler_command(&command, &variable));
  pthread_mutex_lock(&compiler->mutex);
  bool known = compiler->command && strcmp(compiler->command, command) == 0;
  if (known) *out = compiler->toolchain;
  pthread_mutex_unlock(&compiler->mutex);
  if (known) {
    free(command);
    return NULL;
  }
  hrx_host_argv_t argv;
  hrx_status_t status = hrx_host_compiler_argv(2, &argv, &variable);
  hrx_host_workdir_t work;
  if (!status) {
    status = hrx_host_workdir_create(&work);
    if (status) hrx_host_argv_free(&argv);
  }
  if (status) {
    free(command);
    return status;
  }
  hrx_host_argv_push(&argv, "--version");
  int exit_status = 0, signal = 0;
  status = hrx_host_run(argv.argv, work.dir, work.log, &exit_status, &signal);
  char* version = NULL;
  if (!status) version = hrx_host_read_file(work.log, 4096, NULL);
  if (!status && (exit_status != 0 || !version)) {
    status = hrx_make_status(
        HRX_STATUS_UNAVAILABLE,
        "the C compiler %s%s%s does not run (`%s --version` %s %d): %.512s; "
        "set HRX_HOST_CC to a working C compiler",
        argv.argv[0], variable[0] ? " named by " : "", variable,
        argv.argv[0], exit_status < 0 ? "died of signal" : "exited with",
        exit_status < 0 ? signal : exit_status, version ? version : "");
  }
  hrx_kernel_compiler_t toolchain;
  memset(&toolchain, 0, sizeof(toolchain));
  if (!status) {
    char* newline = strchr(version, '\n');
    if (newline) *newline = '\0';
    snprintf(toolchain.language, sizeof(toolchain.language), "c");
    snprintf(toolchain.compiler, sizeof(toolchain.compiler), "%.100s %.150s",
             argv.argv[0], version);
    struct utsname uts;
    snprintf(toolchain.target, sizeof(toolchain.target), "host-%.56s",
             uname(&uts) == 0 ? uts.machine : "unknown");
    snprintf(toolchain.image_format, sizeof(toolchain.image_format), "elf");
  }
  free(version);
  hrx_host_workdir_remove(&work);
  hrx_host_argv_free(&argv);
  if (status) {
    free(command);
    return status;
  }
  pthread_mutex_lock(&compiler->mutex);
  free(compiler->command);
  compiler->command = command;
  compiler->toolchain = toolchain;
  pthread_mutex_unlock(&compiler->mutex);
  *out = toolchain;
  return NULL;
}

/* -------------------------------------------------------------- compile */

/* Rewrites the preprocessed source's CUDA dialect into C
 * (host_kernel_dialect.h) and appends the generated launcher. */
static hrx_status_t hrx_host_append_launcher(hrx_host_workdir_t* work,
                                             const char* const* names,
                                             size_t name_count) {
  size_t size = 0;
  char* text = hrx_host_read_file(work->preprocessed, (size_t)1 << 30, &size);
  if (!text) {
    return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                           "cannot read the preprocessed kernel source %s",
                           work->preprocessed);
  }
  char* c_text = NULL;
  size_t c_size = 0;
  bool barriers = false;
  hrx_status_t status =
      hrx_host_kernel_dialect(text, size, &c_text, &c_size, &barriers);
  free(text);
  if (status) return status;
  char* launcher = NULL;
  status = hrx_host_kernel_launcher(c_text, c_size, names, name_count,
                                    &launcher);
  if (status) {
    free(c_text);
    return status;
  }
  FILE* file = fopen(work->preprocessed, "wb");
  bool ok = file && fwrite(c_text, 1, c_size, file) == c_size &&
            fputs(launcher, file) >= 0;
  if (file && fclose(file) != 0) ok = false;
  free(c_text);
  free(launcher);
  if (ok) return NULL;
  return hrx_make_status(HRX_STATUS_UNAVAILABLE,
                         "cannot write the kernel launcher to %s",
                         work->preprocessed);
}

hrx_status_t hrx_host_compiler_compile(hrx_host_compiler_t* compiler,
                                       const char* source,
                                       const char* const* names,
                                       size_t name_count,
                                       const char* const* options,
                                       size_t option_count, void** out_image,
                                       size_t* out_size) {
  (void)compiler;
  enum { OWN_ARGS = 10 };
  hrx_host_argv_t argv;
  const char* variable = "";
  HRX_RETURN_IF_ERROR(
      hrx_host_compiler_argv(OWN_ARGS + option_count, &argv, &variable));
  size_t prefix = argv.count;
  hrx_host_workdir_t work;
  hrx_status_t status = hrx_host_workdir_create(&work);
  if (status) {
    hrx_host_argv_free(&argv);
    return status;
  }
  status = hrx_host_write_file(work.source, source, strlen(source),
                               "kernel source");
  if (!status) {
    status = hrx_host_write_file(work.header, hrx_host_kernel_header,
                                 sizeof(hrx_host_kernel_header) - 1,
                                 "kernel header");
  }
  if (!status) {
    /* 1: preprocess, with hrx's header first. */
    hrx_host_argv_push(&argv, "-E");
    hrx_host_argv_push(&argv, "-include");
    hrx_host_argv_push(&argv, hrx_host_workdir_name(work.header));
    hrx_host_argv_push(&argv, hrx_host_workdir_name(work.source));
    hrx_host_argv_push(&argv, "-o");
    hrx_host_argv_push(&argv, hrx_host_workdir_name(work.preprocessed));
    for (size_t i = 0; i < option_count; ++i) {
      hrx_host_argv_push(&argv, options[i]);
    }
    status = hrx_host_compile_step(&argv, &work, "preprocessing");
  }
  /* 2: the launcher. */
  if (!status) status = hrx_host_append_launcher(&work, names, name_count);
  if (!status) {
    /* 3: the shared object. */
    argv.count = prefix;
    argv.argv[prefix] = NULL;
    hrx_host_argv_push(&argv, "-shared");
    hrx_host_argv_push(&argv, "-fPIC");
    hrx_host_argv_push(&argv, "-O2");
    /* CUDA's `inline` (C++'s): a definition is emitted where a call is
     * not inlined, instead of C99's missing external definition. Before
     * the caller's options, which may say otherwise. */
    hrx_host_argv_push(&argv, "-fgnu89-inline");
    hrx_host_argv_push(&argv, hrx_host_workdir_name(work.preprocessed));
    hrx_host_argv_push(&argv, "-o");
    hrx_host_argv_push(&argv, hrx_host_workdir_name(work.object));
    for (size_t i = 0; i < option_count; ++i) {
      hrx_host_argv_push(&argv, options[i]);
    }
    status = hrx_host_compile_step(&argv, &work, "compiling");
  }
  void* image = NULL;
  size_t size = 0;
  if (!status) {
    image = hrx_host_read_file(work.object, (size_t)1 << 30, &size);
    if (!image) {
      status = hrx_make_status(HRX_STATUS_UNAVAILABLE,
                               "the C compiler made no readable shared "
                               "object (%s)",
                               work.object);
    }
  }
  hrx_host_workdir_remove(&work);
  hrx_host_argv_free(&argv);
  if (status) return status;
  *out_image = image;
  *out_size = size;
  return NULL;
}
