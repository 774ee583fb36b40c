// The layout of a long-context document's body: anchored pieces (the
// evidence) at exact offsets, distractors at random places in the free
// regions between them, filler everywhere else; and the keys a document
// draws. Internal to runtime/longctx.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/longctx/statements.h"
#include "runtime/task/python_random.h"

namespace posc::longctx {

// Draws keys that no statement of the document uses yet, and every other
// random choice of a document (one PythonRandom stream, randbelow only).
class KeyPool {
 public:
  explicit KeyPool(task::PythonRandom& rng) : rng_(rng) {}

  Key fresh();
  // A fresh key sharing half `shared_half` (0 first, 1 second) with `like`;
  // throws std::invalid_argument when every such key is taken.
  Key nearDuplicate(const Key& like, int shared_half);
  // Uniform in [0, n).
  int draw(int n) { return static_cast<int>(rng_.randbelow(static_cast<uint64_t>(n))); }

 private:
  bool used(const Key& k) const;
  bool take(const Key& k);
  task::PythonRandom& rng_;
  std::vector<Key> used_;
};

// One piece with a fixed body offset.
struct Placed {
  int offset = 0;
  Span span;
};

// Fills a body of `body` tokens: anchored pieces at their offsets, each
// distractor in a free region with room for it (chosen with probability
// proportional to the room), at a uniformly drawn insertion point among the
// region's filler, and filler words elsewhere. The body's statements carry
// body offsets, in order of appearance. Throws std::invalid_argument when a
// distractor finds no room.
Span layBody(int body, std::vector<Placed> anchored, std::vector<Span> distractors, KeyPool& rng);

}  // namespace posc::longctx
