/* How fast the staged copier (csrc/core/staged_transfer.h) copies a large
 * host buffer into another, by copy-thread count, with its large copies
 * written around the CPU caches (streaming) and through them (memcpy):
 * the host side of a staged pageable transfer, with no device. Both
 * buffers are touched first, as a reused numpy array and pooled staging
 * are.
 *
 *   bash bench/scripts/staged_copy_rate.sh [MiB [repeats [threads,...]]]
 *
 * Each (threads, streaming) setting has its own copier; the repeats are
 * interleaved across the settings, so that every setting sees the same
 * machine. Prints the median GB/s (10^9 bytes/s) and range of each, and
 * streaming over memcpy per thread count. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/streaming_copy.h"
#include "core/staged_transfer.h"

#define MAX_SETTINGS 32
#define MAX_REPEATS 64

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* values, int n) {
  qsort(values, (size_t)n, sizeof(double), compare_doubles);
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

int main(int argc, char** argv) {
  uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 256;
  int repeats = argc > 2 ? atoi(argv[2]) : 5;
  const char* thread_list = argc > 3 ? argv[3] : "0,1,2,4,8";
  if (mib == 0 || repeats < 1 || repeats > MAX_REPEATS) {
    fprintf(stderr, "usage: %s [MiB >= 1 [repeats 1..%d [threads,...]]]\n",
            argv[0], MAX_REPEATS);
    return 2;
  }
  uint64_t bytes = mib << 20;
  uint32_t threads[MAX_SETTINGS / 2];
  int thread_counts = 0;
  for (const char* p = thread_list; *p && thread_counts < MAX_SETTINGS / 2;) {
    char* end = NULL;
    unsigned long n = strtoul(p, &end, 10);
    if (end == p || n > HRX_STAGED_COPY_MAX_THREADS) {
      fprintf(stderr, "threads: numbers 0..%d separated by commas\n",
              HRX_STAGED_COPY_MAX_THREADS);
      return 2;
    }
    threads[thread_counts++] = (uint32_t)n;
    p = *end == ',' ? end + 1 : end;
  }
  uint8_t* src = malloc(bytes);
  uint8_t* dst = malloc(bytes);
  if (!src || !dst) {
    fprintf(stderr, "cannot allocate 2 x %llu MiB\n", (unsigned long long)mib);
    return 1;
  }
  for (uint64_t i = 0; i < bytes; ++i) src[i] = (uint8_t)(i * 131 + 7);
  memset(dst, 0, bytes);

  int settings_count = 2 * thread_counts;
  hrx_staged_copier_t* copiers[MAX_SETTINGS];
  double rates[MAX_SETTINGS][MAX_REPEATS];
  for (int s = 0; s < settings_count; ++s) {
    hrx_staged_copy_settings_t settings = {
        .threads = threads[s / 2],
        .min_bytes = HRX_STAGED_COPY_MIN_MIN_BYTES,
        .streaming = s % 2 == 1};
    hrx_status_t status = hrx_staged_copier_create(&settings, &copiers[s]);
    if (status) {
      fprintf(stderr, "%s\n", hrx_status_message(status));
      return 1;
    }
    /* Warm-up: starts the threads. */
    hrx_staged_copy(copiers[s], dst, src, bytes, 0, NULL, NULL);
  }
  for (int r = 0; r < repeats; ++r) {
    for (int s = 0; s < settings_count; ++s) {
      double start = now_seconds();
      hrx_staged_copy(copiers[s], dst, src, bytes, 0, NULL, NULL);
      rates[s][r] = (double)bytes / (now_seconds() - start) / 1e9;
    }
  }
  if (memcmp(dst, src, bytes) != 0) {
    fprintf(stderr, "FAILED: the copy's bytes are wrong\n");
    return 1;
  }
  printf("# staged copy rate: %llu MiB, %d repeats interleaved, streaming "
         "stores %s on this build\n",
         (unsigned long long)mib, repeats,
         hrx_streaming_copy_bypasses_caches() ? "used" : "not used");
  printf("%-8s %-10s %12s %17s %10s\n", "threads", "copies", "median GB/s",
         "range", "streaming");
  for (int s = 0; s < settings_count; ++s) {
    double low = rates[s][0], high = rates[s][0];
    for (int r = 1; r < repeats; ++r) {
      if (rates[s][r] < low) low = rates[s][r];
      if (rates[s][r] > high) high = rates[s][r];
    }
    double mid = median(rates[s], repeats);
    char ratio[16] = "";
    if (s % 2 == 1) {
      double plain[MAX_REPEATS];
      memcpy(plain, rates[s - 1], sizeof(double) * (size_t)repeats);
      snprintf(ratio, sizeof(ratio), "%.2fx", mid / median(plain, repeats));
    }
    printf("%-8u %-10s %12.2f %8.2f - %6.2f %10s\n", threads[s / 2],
           s % 2 ? "streaming" : "memcpy", mid, low, high, ratio);
    hrx_staged_copier_destroy(copiers[s]);
  }
  free(src);
  free(dst);
  return 0;
}
