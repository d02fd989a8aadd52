// The tokens of tk that a token rule cannot describe, lexed as tkc's lexer
// (compiler/frontend/Lexer.cpp) lexes them:
//
// - numbers: int = digit { digit }; float = digit { digit } "." { digit }
//   [ exponent ] | digit { digit } exponent. A "." right after the digits
//   starts a float unless it begins "..", so `0..n` is `0` `..` `n`. A
//   number that runs on into a letter, a digit or "_" (`64k`, `1e`) is no
//   token at all.
// - "^T", which is one token only when the `T` is not followed by a letter,
//   a digit or "_".
//
// The scanner keeps no state.

#include "tree_sitter/parser.h"

#include <stdbool.h>

enum TokenType { INTEGER, FLOAT, TRANSPOSE };

static bool is_digit(int32_t c) { return c >= '0' && c <= '9'; }

static bool is_word_char(int32_t c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_space(int32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

void *tree_sitter_tk_external_scanner_create(void) { return NULL; }

void tree_sitter_tk_external_scanner_destroy(void *payload) { (void)payload; }

unsigned tree_sitter_tk_external_scanner_serialize(void *payload, char *buffer) {
  (void)payload;
  (void)buffer;
  return 0;
}

void tree_sitter_tk_external_scanner_deserialize(void *payload, const char *buffer, unsigned length) {
  (void)payload;
  (void)buffer;
  (void)length;
}

static bool scan_number(TSLexer *lexer, const bool *valid_symbols) {
  bool is_float = false;
  while (is_digit(lexer->lookahead))
    lexer->advance(lexer, false);
  lexer->mark_end(lexer);
  if (lexer->lookahead == '.') {
    lexer->advance(lexer, false);
    if (lexer->lookahead == '.') {
      // `0..n`: the integer ends before the range.
      lexer->result_symbol = INTEGER;
      return valid_symbols[INTEGER];
    }
    is_float = true;
    while (is_digit(lexer->lookahead))
      lexer->advance(lexer, false);
    lexer->mark_end(lexer);
  }
  if (lexer->lookahead == 'e' || lexer->lookahead == 'E') {
    lexer->advance(lexer, false);
    if (lexer->lookahead == '+' || lexer->lookahead == '-')
      lexer->advance(lexer, false);
    if (!is_digit(lexer->lookahead))
      return false;
    while (is_digit(lexer->lookahead))
      lexer->advance(lexer, false);
    is_float = true;
    lexer->mark_end(lexer);
  }
  if (is_word_char(lexer->lookahead))
    return false;
  lexer->result_symbol = is_float ? FLOAT : INTEGER;
  return valid_symbols[lexer->result_symbol];
}

bool tree_sitter_tk_external_scanner_scan(void *payload, TSLexer *lexer, const bool *valid_symbols) {
  (void)payload;
  if (!valid_symbols[INTEGER] && !valid_symbols[FLOAT] && !valid_symbols[TRANSPOSE])
    return false;
  while (is_space(lexer->lookahead))
    lexer->advance(lexer, true);
  if (is_digit(lexer->lookahead))
    return (valid_symbols[INTEGER] || valid_symbols[FLOAT]) && scan_number(lexer, valid_symbols);
  if (lexer->lookahead == '^' && valid_symbols[TRANSPOSE]) {
    lexer->advance(lexer, false);
    if (lexer->lookahead != 'T')
      return false;
    lexer->advance(lexer, false);
    if (is_word_char(lexer->lookahead))
      return false;
    lexer->mark_end(lexer);
    lexer->result_symbol = TRANSPOSE;
    return true;
  }
  return false;
}
