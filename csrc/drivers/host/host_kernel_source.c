/* The launcher generator (host_kernel_source.h). */
#include "host_kernel_source.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "host_kernel_module.h"
#include "host_kernel_tokens.h"

static bool hrx_token_is_open(const char* text, const hrx_token_t* token) {
  return token->kind == HRX_TOKEN_PUNCT && token->length == 1 &&
         (text[token->start] == '(' || text[token->start] == '[' ||
          text[token->start] == '{');
}

static bool hrx_token_is_close(const char* text, const hrx_token_t* token) {
  return token->kind == HRX_TOKEN_PUNCT && token->length == 1 &&
         (text[token->start] == ')' || text[token->start] == ']' ||
          text[token->start] == '}');
}

/* The index of the token that closes the bracket opened at `open`, or
 * `end` when it is not closed before `end`. */
static size_t hrx_matching(const char* text, const hrx_token_t* tokens,
                           size_t open, size_t end) {
  int depth = 0;
  for (size_t i = open; i < end; ++i) {
    if (hrx_token_is_open(text, &tokens[i])) {
      ++depth;
    } else if (hrx_token_is_close(text, &tokens[i])) {
      if (--depth == 0) return i;
    }
  }
  return end;
}

/* Words that never name a parameter. */
static bool hrx_is_keyword(const char* text, const hrx_token_t* token) {
  static const char* const words[] = {
      "auto", "char", "const", "double", "enum", "extern", "float", "inline",
      "int", "long", "register", "restrict", "short", "signed", "static",
      "struct", "union", "unsigned", "void", "volatile", "_Alignas",
      "_Atomic", "_Bool", "_Complex", "_Imaginary", "_Noreturn",
      "_Thread_local", "__restrict", "__restrict__", "__const", "__const__",
      "__volatile", "__volatile__", "__inline", "__inline__", "__signed",
      "__signed__", "__attribute__", "__attribute", "__extension__",
      "__typeof__", "__typeof", "typeof", "__int128", "_Float16", "_Float32",
      "_Float64", "_Float128", "_Float32x", "_Float64x", "__float128",
      "__complex__", "__thread", "bool", "__auto_type", "__seg_fs",
      "__seg_gs", "_Decimal32", "_Decimal64", "_Decimal128", "__fp16",
      "__bf16", "__unaligned",
  };
  if (token->kind != HRX_TOKEN_IDENTIFIER) return false;
  for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); ++i) {
    if (hrx_token_is(text, token, words[i])) return true;
  }
  return false;
}

/* Specifier words followed by a parenthesised operand that is part of the
 * type (or an attribute), not a declarator. */
static bool hrx_takes_operand(const char* text, const hrx_token_t* token) {
  static const char* const words[] = {
      "__attribute__", "__attribute", "__typeof__", "__typeof", "typeof",
      "_Alignas", "_Atomic", "__declspec", "__asm__", "__asm", "asm",
  };
  if (token->kind != HRX_TOKEN_IDENTIFIER) return false;
  for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); ++i) {
    if (hrx_token_is(text, token, words[i])) return true;
  }
  return false;
}

/* ----------------------------------------------------- the declarator */

/* Where a parameter's name is and what follows it. */
typedef struct {
  size_t name;        /* token index of the name */
  bool array;         /* the name is followed by [...] */
  size_t array_end;   /* the index of that ']' */
  bool function;      /* the name is followed by (...) */
} hrx_param_name_t;

static bool hrx_is_punct(const char* text, const hrx_token_t* token, char c) {
  return token->kind == HRX_TOKEN_PUNCT && token->length == 1 &&
         text[token->start] == c;
}

/* Finds the declared name among tokens [begin, end) of one parameter. */
static bool hrx_find_param_name(const char* text, const hrx_token_t* tokens,
                                size_t begin, size_t end,
                                hrx_param_name_t* out) {
  bool found = false;
  for (size_t i = begin; i < end; ++i) {
    const hrx_token_t* token = &tokens[i];
    if (hrx_takes_operand(text, token) && i + 1 < end &&
        hrx_is_punct(text, &tokens[i + 1], '(')) {
      i = hrx_matching(text, tokens, i + 1, end);
      continue;
    }
    if (hrx_is_punct(text, token, '(')) {
      size_t close = hrx_matching(text, tokens, i, end);
      /* A parenthesised declarator: ( * name ...) or ( ( ... */
      if (i + 1 < close && (hrx_is_punct(text, &tokens[i + 1], '*') ||
                            hrx_is_punct(text, &tokens[i + 1], '^') ||
                            hrx_is_punct(text, &tokens[i + 1], '('))) {
        return hrx_find_param_name(text, tokens, i + 1, close, out);
      }
      /* A parameter list: the name, if any, came before it. */
      if (found) out->function = true;
      return found;
    }
    if (hrx_is_punct(text, token, '[')) {
      if (found) {
        out->array = true;
        out->array_end = hrx_matching(text, tokens, i, end);
      }
      return found;
    }
    if (token->kind == HRX_TOKEN_IDENTIFIER && !hrx_is_keyword(text, token)) {
      out->name = i;
      out->array = out->function = false;
      found = true;
    }
  }
  return found;
}

/* ------------------------------------------------------------- output */

/* Appends the text of tokens [begin, end) as written: tokens that touch
 * stay together, any space between two tokens (line markers included)
 * becomes one space. `register` and `auto` are left out. */
static void hrx_out_tokens(hrx_text_t* out, const char* text,
                           const hrx_token_t* tokens, size_t begin,
                           size_t end) {
  for (size_t i = begin; i < end; ++i) {
    if (hrx_token_is(text, &tokens[i], "register") ||
        hrx_token_is(text, &tokens[i], "auto")) {
      continue;
    }
    if (i > begin &&
        tokens[i].start != tokens[i - 1].start + tokens[i - 1].length) {
      hrx_text_append(out, " ", 1);
    }
    hrx_text_append(out, text + tokens[i].start, tokens[i].length);
  }
}

/* ------------------------------------------------------------ kernels */

/* One parameter: tokens [begin, end) and where its name is. */
typedef struct {
  size_t begin;
  size_t end;
  hrx_param_name_t name;
} hrx_param_t;

/* Skips attributes and asm labels after a declarator's ')'. */
static size_t hrx_skip_suffixes(const char* text, const hrx_token_t* tokens,
                                size_t i, size_t count) {
  while (i < count && hrx_takes_operand(text, &tokens[i]) && i + 1 < count &&
         hrx_is_punct(text, &tokens[i + 1], '(')) {
    i = hrx_matching(text, tokens, i + 1, count) + 1;
  }
  return i;
}

/* The parameter list of kernel `name`'s definition at file scope: the
 * tokens between its parentheses, (*out_open, *out_close). */
static hrx_status_t hrx_find_definition(const char* text,
                                        const hrx_tokens_t* all,
                                        const char* name, size_t* out_open,
                                        size_t* out_close) {
  const hrx_token_t* tokens = all->tokens;
  size_t count = all->count;
  int depth = 0;
  for (size_t i = 0; i < count; ++i) {
    const hrx_token_t* token = &tokens[i];
    if (hrx_token_is_open(text, token)) {
      ++depth;
      continue;
    }
    if (hrx_token_is_close(text, token)) {
      if (depth > 0) --depth;
      continue;
    }
    if (depth != 0 || token->kind != HRX_TOKEN_IDENTIFIER ||
        !hrx_token_is(text, token, name) || i + 1 >= count ||
        !hrx_is_punct(text, &tokens[i + 1], '(')) {
      continue;
    }
    size_t close = hrx_matching(text, tokens, i + 1, count);
    if (close == count) break;
    size_t after = hrx_skip_suffixes(text, tokens, close + 1, count);
    if (after < count && hrx_is_punct(text, &tokens[after], '{')) {
      *out_open = i + 1;
      *out_close = close;
      return NULL;
    }
    if (after < count && tokens[after].kind == HRX_TOKEN_IDENTIFIER &&
        !hrx_takes_operand(text, &tokens[after])) {
      return hrx_make_status(
          HRX_STATUS_INVALID_ARGUMENT,
          "kernel '%s' has an old-style (K&R) definition; declare its "
          "parameters in the parentheses",
          name);
    }
    /* A declaration or a call: the parentheses were a parameter or
     * argument list; look on after them. */
    i = close;
  }
  return hrx_make_status(
      HRX_STATUS_INVALID_ARGUMENT,
      "the source defines no kernel '%s': no function definition of that "
      "name at file scope (a declaration, a macro or a definition inside "
      "another construct does not count)",
      name);
}

/* Splits (open, close) into parameters and finds their names. */
static hrx_status_t hrx_split_params(const char* text,
                                     const hrx_token_t* tokens, size_t open,
                                     size_t close, const char* kernel,
                                     hrx_param_t* params, size_t* out_count) {
  size_t count = 0;
  size_t begin = open + 1;
  if (begin == close ||
      (begin + 1 == close && hrx_token_is(text, &tokens[begin], "void"))) {
    *out_count = 0;
    return NULL;
  }
  for (size_t i = begin; i <= close; ++i) {
    if (i < close && hrx_token_is_open(text, &tokens[i])) {
      i = hrx_matching(text, tokens, i, close);
      continue;
    }
    if (i < close && !hrx_is_punct(text, &tokens[i], ',')) continue;
    if (count == HRX_KERNEL_MAX_ARGS) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "kernel '%s' has more than %d parameters, the "
                             "most a launch passes",
                             kernel, HRX_KERNEL_MAX_ARGS);
    }
    hrx_param_t* param = &params[count];
    param->begin = begin;
    param->end = i;
    if (begin + 1 == i && hrx_token_is(text, &tokens[begin], "...")) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "kernel '%s' is variadic (...); a kernel's "
                             "parameters must be named and fixed",
                             kernel);
    }
    if (!hrx_find_param_name(text, tokens, begin, i, &param->name)) {
      return hrx_make_status(HRX_STATUS_INVALID_ARGUMENT,
                             "parameter %zu of kernel '%s' has no name; "
                             "name every parameter of a kernel",
                             count, kernel);
    }
    ++count;
    begin = i + 1;
  }
  *out_count = count;
  return NULL;
}

/* A member declaration for the parameter: its own text, with an array or
 * function declarator made the pointer that C passes. */
static void hrx_out_member(hrx_text_t* out, const char* text,
                           const hrx_token_t* tokens,
                           const hrx_param_t* param) {
  const hrx_param_name_t* name = &param->name;
  const hrx_token_t* id = &tokens[name->name];
  hrx_text_append(out, "  ", 2);
  if (!name->array && !name->function) {
    hrx_out_tokens(out, text, tokens, param->begin, param->end);
  } else {
    size_t resume = name->array ? name->array_end + 1 : name->name + 1;
    hrx_out_tokens(out, text, tokens, param->begin, name->name);
    hrx_text_printf(out, " (*%.*s) ", (int)id->length, text + id->start);
    hrx_out_tokens(out, text, tokens, resume, param->end);
  }
  hrx_text_append(out, ";\n", 2);
}

/* The parameter's kind (hrx_kernel_param_kind_t) from the words of its
 * declaration; the compiler gives its size. Only C's arithmetic type words
 * and the <stdint.h> / <stddef.h> names are read: anything else (a typedef
 * of the source's, a struct or union, an attribute, long double, complex
 * types) leaves it UNKNOWN, and then only its size is checked. */
static int hrx_param_kind(const char* text, const hrx_token_t* tokens,
                          const hrx_param_t* param) {
  static const char* const qualifiers[] = {
      "const", "volatile", "register", "restrict", "__restrict",
      "__restrict__", "__const", "__const__", "__volatile", "__volatile__",
      "__extension__",
  };
  static const struct {
    const char* word;
    int kind;
  } named[] = {
      {"int8_t", HRX_KERNEL_PARAM_SIGNED},
      {"int16_t", HRX_KERNEL_PARAM_SIGNED},
      {"int32_t", HRX_KERNEL_PARAM_SIGNED},
      {"int64_t", HRX_KERNEL_PARAM_SIGNED},
      {"intptr_t", HRX_KERNEL_PARAM_SIGNED},
      {"intmax_t", HRX_KERNEL_PARAM_SIGNED},
      {"ptrdiff_t", HRX_KERNEL_PARAM_SIGNED},
      {"ssize_t", HRX_KERNEL_PARAM_SIGNED},
      {"uint8_t", HRX_KERNEL_PARAM_UNSIGNED},
      {"uint16_t", HRX_KERNEL_PARAM_UNSIGNED},
      {"uint32_t", HRX_KERNEL_PARAM_UNSIGNED},
      {"uint64_t", HRX_KERNEL_PARAM_UNSIGNED},
      {"uintptr_t", HRX_KERNEL_PARAM_UNSIGNED},
      {"uintmax_t", HRX_KERNEL_PARAM_UNSIGNED},
      {"size_t", HRX_KERNEL_PARAM_UNSIGNED},
  };
  if (param->name.array || param->name.function) return HRX_KERNEL_PARAM_POINTER;
  int is_signed = 0, is_unsigned = 0, is_char = 0, integer = 0, longs = 0;
  int is_float = 0, is_double = 0, is_bool = 0, words = 0;
  int named_kind = HRX_KERNEL_PARAM_UNKNOWN;
  for (size_t i = param->begin; i < param->end; ++i) {
    if (i == param->name.name) continue;
    const hrx_token_t* token = &tokens[i];
    if (hrx_is_punct(text, token, '*')) return HRX_KERNEL_PARAM_POINTER;
    if (token->kind != HRX_TOKEN_IDENTIFIER) return HRX_KERNEL_PARAM_UNKNOWN;
    bool qualifier = false;
    for (size_t q = 0; q < sizeof(qualifiers) / sizeof(*qualifiers); ++q) {
      qualifier = qualifier || hrx_token_is(text, token, qualifiers[q]);
    }
    if (qualifier) continue;
    ++words;
    if (hrx_token_is(text, token, "signed") ||
        hrx_token_is(text, token, "__signed") ||
        hrx_token_is(text, token, "__signed__")) {
      is_signed = 1;
    } else if (hrx_token_is(text, token, "unsigned")) {
      is_unsigned = 1;
    } else if (hrx_token_is(text, token, "char")) {
      is_char = 1;
    } else if (hrx_token_is(text, token, "short") ||
               hrx_token_is(text, token, "int")) {
      integer = 1;
    } else if (hrx_token_is(text, token, "long")) {
      ++longs;
    } else if (hrx_token_is(text, token, "float")) {
      is_float = 1;
    } else if (hrx_token_is(text, token, "double")) {
      is_double = 1;
    } else if (hrx_token_is(text, token, "_Bool") ||
               hrx_token_is(text, token, "bool")) {
      is_bool = 1;
    } else {
      size_t n = 0;
      while (n < sizeof(named) / sizeof(*named) &&
             !hrx_token_is(text, token, named[n].word)) {
        ++n;
      }
      if (n == sizeof(named) / sizeof(*named)) return HRX_KERNEL_PARAM_UNKNOWN;
      named_kind = named[n].kind;
    }
  }
  if (named_kind != HRX_KERNEL_PARAM_UNKNOWN) {
    return words == 1 ? named_kind : HRX_KERNEL_PARAM_UNKNOWN;
  }
  if (is_bool || is_float || is_double) {
    bool alone = words == is_bool + is_float + is_double;
    if (!alone || is_bool + is_float + is_double != 1) {
      return HRX_KERNEL_PARAM_UNKNOWN;  /* long double, mixtures */
    }
    return is_bool ? HRX_KERNEL_PARAM_BOOL : HRX_KERNEL_PARAM_FLOAT;
  }
  if (!(is_signed || is_unsigned || is_char || integer || longs) ||
      (is_signed && is_unsigned)) {
    return HRX_KERNEL_PARAM_UNKNOWN;
  }
  if (is_unsigned) return HRX_KERNEL_PARAM_UNSIGNED;
  if (is_char && !is_signed) {
    return (char)-1 < 0 ? HRX_KERNEL_PARAM_SIGNED : HRX_KERNEL_PARAM_UNSIGNED;
  }
  return HRX_KERNEL_PARAM_SIGNED;
}

/* The entries' view of the parameter block (hrx_p). */
static void hrx_out_params(hrx_text_t* out, const char* name, size_t count) {
  if (count) {
    hrx_text_printf(out,
                   "  const struct hrx_kernel_params__%s* hrx_p =\n"
                   "      (const struct hrx_kernel_params__%s*)hrx_params;\n",
                   name, name);
  } else {
    hrx_text_add(out, "  (void)hrx_params;\n");
  }
}

/* The call of the kernel with the parameter block's members. */
static void hrx_out_call(hrx_text_t* out, const char* text,
                         const hrx_token_t* tokens, const char* name,
                         const hrx_param_t* params, size_t count,
                         const char* indent) {
  hrx_text_printf(out, "%s%s(", indent, name);
  for (size_t i = 0; i < count; ++i) {
    const hrx_token_t* id = &tokens[params[i].name.name];
    hrx_text_printf(out, "%shrx_p->%.*s", i ? ", " : "", (int)id->length,
                   text + id->start);
  }
  hrx_text_add(out, ");\n");
}

static void hrx_out_kernel(hrx_text_t* out, const char* text,
                           const hrx_token_t* tokens, const char* name,
                           const hrx_param_t* params, size_t count) {
  hrx_text_printf(out, "\n# 1 \"<hrx launcher of %s>\"\n", name);
  if (count) {
    hrx_text_printf(out, "struct hrx_kernel_params__%s {\n", name);
    for (size_t i = 0; i < count; ++i) {
      hrx_out_member(out, text, tokens, &params[i]);
    }
    hrx_text_append(out, "};\n", 3);
    for (int pass = 0; pass < 2; ++pass) {
      hrx_text_printf(out,
                     "static const unsigned int hrx_kernel_%s__%s[] = {\n",
                     pass ? "sizes" : "offsets", name);
      for (size_t i = 0; i < count; ++i) {
        const hrx_token_t* id = &tokens[params[i].name.name];
        if (pass) {
          hrx_text_printf(
              out, "  sizeof(((struct hrx_kernel_params__%s*)0)->%.*s),\n",
              name, (int)id->length, text + id->start);
        } else {
          hrx_text_printf(
              out, "  __builtin_offsetof(struct hrx_kernel_params__%s, %.*s),\n",
              name, (int)id->length, text + id->start);
        }
      }
      hrx_text_append(out, "};\n", 3);
    }
    /* Each parameter's kind and name, for the backend's checks of a
     * launch's arguments (optional symbols: an image without them has
     * parameters of unknown kind). */
    hrx_text_printf(out,
                   "__attribute__((visibility(\"default\"))) const unsigned "
                   "char hrx_kernel_param_kinds__%s[] = {",
                   name);
    for (size_t i = 0; i < count; ++i) {
      hrx_text_printf(out, "%s%d", i ? ", " : "",
                     hrx_param_kind(text, tokens, &params[i]));
    }
    hrx_text_printf(out,
                   "};\n__attribute__((visibility(\"default\"))) const "
                   "char hrx_kernel_param_names__%s[] = \"",
                   name);
    for (size_t i = 0; i < count; ++i) {
      const hrx_token_t* id = &tokens[params[i].name.name];
      hrx_text_printf(out, "%.*s\\0", (int)id->length, text + id->start);
    }
    hrx_text_append(out, "\";\n", 3);
  }
  /* The thread entry: one thread, on the fiber the backend made for it. */
  hrx_text_printf(
      out,
      "static void hrx_kernel_thread__%s(const void* hrx_params,\n"
      "    const hrx_kernel_block_t* hrx_block,\n"
      "    const hrx_kernel_fiber_t* hrx_fiber) {\n",
      name);
  hrx_out_params(out, name, count);
  hrx_text_add(out,
               "  hrx_kernel_thread_t* hrx_t = &hrx_kernel_thread;\n"
               "  hrx_t->block_idx = hrx_block->block_idx;\n"
               "  hrx_t->block_dim = hrx_block->block_dim;\n"
               "  hrx_t->grid_dim = hrx_block->grid_dim;\n"
               "  hrx_t->shared = hrx_block->shared;\n"
               "  hrx_t->barrier = hrx_fiber->barrier;\n"
               "  hrx_t->scheduler = hrx_fiber->scheduler;\n"
               "  hrx_t->thread_idx = hrx_fiber->thread_idx;\n"
               "  hrx_kernel_block_begin(hrx_block->shared);\n");
  hrx_out_call(out, text, tokens, name, params, count, "  ");
  hrx_text_add(out, "}\n");
  hrx_text_printf(
      out,
      "__attribute__((visibility(\"default\"))) const "
      "hrx_kernel_thread_entry_t\n"
      "    hrx_kernel_threads__%s = hrx_kernel_thread__%s;\n",
      name, name);
  /* The entry: every thread of a block, one after another. */
  hrx_text_printf(
      out,
      "static void hrx_kernel_entry__%s(const void* hrx_params,\n"
      "    const hrx_kernel_block_t* hrx_block) {\n",
      name);
  hrx_out_params(out, name, count);
  hrx_text_add(out,
               "  hrx_kernel_thread_t* hrx_t = &hrx_kernel_thread;\n"
               "  const hrx_dim3 hrx_dim = hrx_block->block_dim;\n"
               "  hrx_t->block_idx = hrx_block->block_idx;\n"
               "  hrx_t->block_dim = hrx_dim;\n"
               "  hrx_t->grid_dim = hrx_block->grid_dim;\n"
               "  hrx_t->shared = hrx_block->shared;\n"
               "  hrx_t->barrier = 0;\n"
               "  hrx_kernel_block_begin(hrx_block->shared);\n"
               "  for (unsigned int hrx_z = 0; hrx_z < hrx_dim.z; ++hrx_z) {\n"
               "    for (unsigned int hrx_y = 0; hrx_y < hrx_dim.y; ++hrx_y) {\n"
               "      for (unsigned int hrx_x = 0; hrx_x < hrx_dim.x; ++hrx_x) "
               "{\n"
               "        hrx_t->thread_idx.x = hrx_x;\n"
               "        hrx_t->thread_idx.y = hrx_y;\n"
               "        hrx_t->thread_idx.z = hrx_z;\n");
  hrx_out_call(out, text, tokens, name, params, count, "        ");
  hrx_text_add(out, "      }\n    }\n  }\n}\n");
  if (count) {
    hrx_text_printf(
        out,
        "__attribute__((visibility(\"default\"))) const hrx_kernel_layout_t\n"
        "    hrx_kernel_layout__%s = {%d, %zu,\n"
        "    sizeof(struct hrx_kernel_params__%s),\n"
        "    __alignof__(struct hrx_kernel_params__%s),\n"
        "    hrx_kernel_offsets__%s, hrx_kernel_sizes__%s,\n"
        "    hrx_kernel_entry__%s};\n",
        name, HRX_KERNEL_ABI, count, name, name, name, name, name);
  } else {
    hrx_text_printf(
        out,
        "__attribute__((visibility(\"default\"))) const hrx_kernel_layout_t\n"
        "    hrx_kernel_layout__%s = {%d, 0, 0, 1, 0, 0,\n"
        "    hrx_kernel_entry__%s};\n",
        name, HRX_KERNEL_ABI, name);
  }
}

hrx_status_t hrx_host_kernel_launcher(const char* preprocessed, size_t length,
                                      const char* const* names,
                                      size_t name_count, char** out_code) {
  hrx_tokens_t tokens = {0};
  hrx_text_t out = {0};
  hrx_param_t* params = malloc(HRX_KERNEL_MAX_ARGS * sizeof(*params));
  hrx_status_t status =
      params ? hrx_tokenize(preprocessed, length, &tokens)
             : hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                               "cannot allocate the launcher's parameters");
  hrx_text_printf(&out,
                 "\n# 1 \"<hrx launcher>\"\n"
                 "__attribute__((visibility(\"default\"))) const unsigned int "
                 "hrx_kernel_module_abi = %d;\n",
                 HRX_KERNEL_ABI);
  for (size_t k = 0; k < name_count && !status; ++k) {
    size_t open = 0, close = 0, count = 0;
    status = hrx_find_definition(preprocessed, &tokens, names[k], &open,
                                 &close);
    if (!status) {
      status = hrx_split_params(preprocessed, tokens.tokens, open, close,
                                names[k], params, &count);
    }
    if (!status) {
      hrx_out_kernel(&out, preprocessed, tokens.tokens, names[k], params,
                     count);
    }
  }
  if (!status && out.failed) {
    status = hrx_make_status(HRX_STATUS_OUT_OF_MEMORY,
                             "cannot generate the kernel launcher");
  }
  free(tokens.tokens);
  free(params);
  if (status) {
    free(out.text);
    return status;
  }
  *out_code = out.text;
  return NULL;
}
