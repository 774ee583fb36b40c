// The surface forms of long-context documents: statements in the three
// templates, the questions, and their lengths (document.h lists the forms).
// Internal to runtime/longctx.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/longctx/document.h"

namespace posc::longctx {

// What a statement says about its key: a value, or another key
// (composition's first hop).
struct Object {
  std::optional<Key> key;
  int value = 0;
};

std::vector<int32_t> keyTokens(const Key& k);
std::vector<int32_t> objectTokens(const Object& o);

// A run of body tokens laid out as one piece: a statement, or for order the
// pair with the filler between them. Statement offsets are relative to it.
struct Span {
  std::vector<int32_t> tokens;
  std::vector<Statement> statements;
  int size() const { return static_cast<int>(tokens.size()); }
};

// Moves a statement's offsets (begin, end, key token) by `by` tokens.
void shift(Statement& st, int by);
// Appends `piece` to `run`, its statements moved to their offsets in `run`.
void append(Span& run, const Span& piece);

// One statement in template `templ`, opened by `correction` when asked.
Span statementSpan(int templ, const Key& key, const Object& object, StatementRole role, bool correction);
// Its length; the longest a template writes (a key object and the marker).
int statementLength(int templ, bool key_object, bool correction);
int longestStatement(int templ);

// Q: [get | what under] kx ky
std::vector<int32_t> keyQuestion(int templ, const Key& key);
// Q: chain [get | what under] kx ky (composition's main question)
std::vector<int32_t> chainQuestion(int templ, const Key& key);
// Q: [get | what] first kx ky kx' ky'
std::vector<int32_t> orderQuestion(int templ, const Key& a, const Key& b);

// Tokens of the main question, and of the header (`rule r .`), of a spec.
int questionLength(const DocumentSpec& spec);
int headerLength(const DocumentSpec& spec);

}  // namespace posc::longctx
