/* What the host backend's source passes (host_kernel_source.c,
 * host_kernel_dialect.c) read and write: the tokens of preprocessed C
 * (identifiers, one-character punctuation and "...", and everything else,
 * numbers, string and character literals, as OTHER; each token a span of
 * the text it came from), and the growable text they write out.
 *
 * Pure text processing; thread-safe. */
#ifndef HRX_DRIVERS_HOST_HOST_KERNEL_TOKENS_H_
#define HRX_DRIVERS_HOST_HOST_KERNEL_TOKENS_H_

#include <stdbool.h>
#include <stddef.h>

#include "hrx.h"

typedef enum {
  HRX_TOKEN_IDENTIFIER,
  HRX_TOKEN_PUNCT,     /* one character, or "..." */
  HRX_TOKEN_OTHER,     /* numbers, string and character literals */
} hrx_token_kind_t;

typedef struct {
  hrx_token_kind_t kind;
  size_t start;
  size_t length;
} hrx_token_t;

typedef struct {
  hrx_token_t* tokens;  /* owned (free) */
  size_t count;
  size_t capacity;
} hrx_tokens_t;

/* Splits preprocessed C into tokens, dropping line markers and #pragma
 * lines (a '#' first on its line) and whitespace; appends to *out (start
 * from zeroes), which the caller frees even on failure. */
hrx_status_t hrx_tokenize(const char* text, size_t length, hrx_tokens_t* out);

/* Whether the token is spelled `spelling`. */
bool hrx_token_is(const char* text, const hrx_token_t* token,
                  const char* spelling);

/* Text written piece by piece, always NUL-terminated once anything was
 * written (start from zeroes; the writer frees `text`). A piece that
 * cannot be stored sets `failed` and every later piece is dropped, so a
 * pass checks once at its end. */
typedef struct {
  char* text;
  size_t length;
  size_t capacity;
  bool failed;
} hrx_text_t;

void hrx_text_append(hrx_text_t* out, const char* bytes, size_t n);
void hrx_text_add(hrx_text_t* out, const char* text);
void hrx_text_printf(hrx_text_t* out, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* HRX_DRIVERS_HOST_HOST_KERNEL_TOKENS_H_ */
