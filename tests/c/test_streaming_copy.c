/* hrx_streaming_copy (base/streaming_copy.h): the bytes memcpy would give,
 * at every alignment of either side and every tail length, and nothing
 * written outside the destination; hrx_host_copy either way. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/streaming_copy.h"
#include "check.h"

#define GUARD 64
#define GUARD_BYTE 0xa5

static void fill_pattern(uint8_t* data, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) data[i] = (uint8_t)(i * 151 + seed * 7 + 1);
}

/* Copies `n` bytes from src + src_offset to dst + dst_offset, inside
 * guard bytes; whether the copy is exact and the guards untouched. */
static bool copy_is_exact(size_t n, size_t dst_offset, size_t src_offset,
                          unsigned seed) {
  size_t span = (n + 2 * GUARD + 64 + 63) & ~(size_t)63;
  uint8_t* src = aligned_alloc(64, span);
  uint8_t* dst = aligned_alloc(64, span);
  if (!src || !dst) {
    free(src);
    free(dst);
    return false;
  }
  fill_pattern(src, span, seed);
  memset(dst, GUARD_BYTE, span);
  uint8_t* out = dst + GUARD + dst_offset;
  const uint8_t* in = src + GUARD + src_offset;
  hrx_streaming_copy(out, in, n);
  bool exact = memcmp(out, in, n) == 0;
  for (uint8_t* p = dst; p < out; ++p) exact = exact && *p == GUARD_BYTE;
  for (uint8_t* p = out + n; p < dst + span; ++p) {
    exact = exact && *p == GUARD_BYTE;
  }
  free(src);
  free(dst);
  return exact;
}

static void test_small_lengths_every_alignment(void) {
  int wrong = 0;
  for (size_t n = 0; n <= 200; ++n) {
    for (size_t dst_offset = 0; dst_offset < 17; ++dst_offset) {
      for (size_t src_offset = 0; src_offset < 17; src_offset += 3) {
        if (!copy_is_exact(n, dst_offset, src_offset,
                           (unsigned)(n + dst_offset))) {
          wrong++;
        }
      }
    }
  }
  CHECK(wrong == 0);
}

static void test_large_lengths(void) {
  const size_t lengths[] = {4096, 65536 + 63, (1u << 20) + 17, 5u << 20};
  for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); ++i) {
    CHECK(copy_is_exact(lengths[i], 0, 0, (unsigned)i));
    CHECK(copy_is_exact(lengths[i], 5, 9, (unsigned)i + 10));
    CHECK(copy_is_exact(lengths[i], 15, 0, (unsigned)i + 20));
  }
}

/* hrx_host_copy: the same bytes either way; a zero length touches
 * nothing. */
static void test_host_copy(void) {
  uint8_t src[300], dst[300];
  fill_pattern(src, sizeof(src), 3);
  for (int streaming = 0; streaming <= 1; ++streaming) {
    memset(dst, 0, sizeof(dst));
    hrx_host_copy(dst + 1, src + 2, 257, streaming);
    CHECK(memcmp(dst + 1, src + 2, 257) == 0);
    CHECK(dst[0] == 0 && dst[258] == 0);
    hrx_host_copy(NULL, NULL, 0, streaming);
  }
}

int main(void) {
#if defined(__x86_64__)
  CHECK(hrx_streaming_copy_bypasses_caches());
#endif
  test_small_lengths_every_alignment();
  test_large_lengths();
  test_host_copy();
  printf("%d passed, %d failed\n", hrx_test_passed, hrx_test_failed);
  return hrx_test_failed ? 1 : 0;
}
