/* Tokens of preprocessed C and the text the source passes write
 * (host_kernel_tokens.h). */
#include "host_kernel_tokens.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

/* ------------------------------------------------------------- tokens */

static bool hrx_is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         c == '$';
}

static bool hrx_is_ident_char(char c) {
  return hrx_is_ident_start(c) || (c >= '0' && c <= '9');
}

static bool hrx_tokens_push(hrx_tokens_t* tokens, hrx_token_kind_t kind,
                            size_t start, size_t length) {
  if (tokens->count == tokens->capacity) {
    size_t capacity = tokens->capacity ? tokens->capacity * 2 : 1024;
    hrx_token_t* grown = realloc(tokens->tokens, capacity * sizeof(*grown));
    if (!grown) return false;
    tokens->tokens = grown;
    tokens->capacity = capacity;
  }
  tokens->tokens[tokens->count++] = (hrx_token_t){kind, start, length};
  return true;
}

hrx_status_t hrx_tokenize(const char* text, size_t length,
                          hrx_tokens_t* out) {
  size_t i = 0;
  bool line_start = true;
  while (i < length) {
    char c = text[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
      continue;
    }
    if (c == '#' && line_start) {
      while (i < length && text[i] != '\n') ++i;
      continue;
    }
    line_start = false;
    size_t start = i;
    hrx_token_kind_t kind = HRX_TOKEN_PUNCT;
    if (hrx_is_ident_start(c)) {
      while (i < length && hrx_is_ident_char(text[i])) ++i;
      /* An encoding prefix (L, u, U, u8) belongs to its literal. */
      if (i < length && (text[i] == '"' || text[i] == '\'')) {
        c = text[i];
      } else {
        if (!hrx_tokens_push(out, HRX_TOKEN_IDENTIFIER, start, i - start)) {
          goto oom;
        }
        continue;
      }
    }
    if (c == '"' || c == '\'') {
      char quote = c;
      ++i;
      while (i < length && text[i] != quote && text[i] != '\n') {
        i += text[i] == '\\' && i + 1 < length ? 2 : 1;
      }
      if (i < length && text[i] == quote) ++i;
      kind = HRX_TOKEN_OTHER;
    } else if ((c >= '0' && c <= '9') ||
               (c == '.' && i + 1 < length && text[i + 1] >= '0' &&
                text[i + 1] <= '9')) {
      /* A preprocessing number, signs after exponents included. */
      ++i;
      while (i < length) {
        char d = text[i];
        if ((d == '+' || d == '-') &&
            (text[i - 1] == 'e' || text[i - 1] == 'E' || text[i - 1] == 'p' ||
             text[i - 1] == 'P')) {
          ++i;
        } else if (hrx_is_ident_char(d) || d == '.') {
          ++i;
        } else {
          break;
        }
      }
      kind = HRX_TOKEN_OTHER;
    } else if (c == '.' && i + 2 < length && text[i + 1] == '.' &&
               text[i + 2] == '.') {
      i += 3;
    } else {
      ++i;
    }
    if (!hrx_tokens_push(out, kind, start, i - start)) goto oom;
  }
  return NULL;
oom:
  return hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                         "cannot tokenize the kernel source");
}

bool hrx_token_is(const char* text, const hrx_token_t* token,
                  const char* spelling) {
  size_t n = strlen(spelling);
  return token->length == n && memcmp(text + token->start, spelling, n) == 0;
}

/* ------------------------------------------------------------- output */

void hrx_text_append(hrx_text_t* out, const char* bytes, size_t n) {
  if (out->failed) return;
  if (out->length + n + 1 > out->capacity) {
    size_t capacity = out->capacity ? out->capacity : 1024;
    while (capacity < out->length + n + 1) capacity *= 2;
    char* grown = realloc(out->text, capacity);
    if (!grown) {
      out->failed = true;
      return;
    }
    out->text = grown;
    out->capacity = capacity;
  }
  memcpy(out->text + out->length, bytes, n);
  out->length += n;
  out->text[out->length] = '\0';
}

void hrx_text_printf(hrx_text_t* out, const char* format, ...) {
  char small[512];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(small, sizeof(small), format, args);
  va_end(args);
  if (n < 0) {
    out->failed = true;
    return;
  }
  if ((size_t)n < sizeof(small)) {
    hrx_text_append(out, small, (size_t)n);
    return;
  }
  char* big = malloc((size_t)n + 1);
  if (!big) {
    out->failed = true;
    return;
  }
  va_start(args, format);
  vsnprintf(big, (size_t)n + 1, format, args);
  va_end(args);
  hrx_text_append(out, big, (size_t)n);
  free(big);
}

void hrx_text_add(hrx_text_t* out, const char* text) {
  hrx_text_append(out, text, strlen(text));
}
