// The layout of a long-context document's body (layout.h).
#include "runtime/longctx/layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace posc::longctx {

Key KeyPool::fresh() {
  for (;;) {
    Key k{draw(kKeyHalves), draw(kKeyHalves)};
    if (take(k)) return k;
  }
}

Key KeyPool::nearDuplicate(const Key& like, int shared_half) {
  std::vector<int> free;
  for (int h = 0; h < kKeyHalves; ++h) {
    Key k = shared_half == 0 ? Key{like.first, h} : Key{h, like.second};
    if (!used(k)) free.push_back(h);
  }
  if (free.empty())
    throw std::invalid_argument(fmt::format("too many near-duplicate distractors: a key has only {} near duplicates",
                                            2 * (kKeyHalves - 1)));
  int h = free[static_cast<size_t>(draw(static_cast<int>(free.size())))];
  Key k = shared_half == 0 ? Key{like.first, h} : Key{h, like.second};
  take(k);
  return k;
}

bool KeyPool::used(const Key& k) const { return std::find(used_.begin(), used_.end(), k) != used_.end(); }

bool KeyPool::take(const Key& k) {
  if (used(k)) return false;
  used_.push_back(k);
  return true;
}

Span layBody(int body, std::vector<Placed> anchored, std::vector<Span> distractors, KeyPool& rng) {
  std::sort(anchored.begin(), anchored.end(), [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
  // Free regions [begin, end) between anchored pieces.
  struct Region {
    int begin, end;
    std::vector<Span> pieces;
    int used = 0;
  };
  std::vector<Region> regions;
  int cursor = 0;
  for (const Placed& p : anchored) {
    regions.push_back(Region{cursor, p.offset, {}, 0});
    cursor = p.offset + p.span.size();
  }
  regions.push_back(Region{cursor, body, {}, 0});

  // Each distractor goes to a region that still has room for it, chosen with
  // probability proportional to that room.
  for (Span& d : distractors) {
    int room = 0;
    for (const Region& r : regions)
      if (r.end - r.begin - r.used >= d.size()) room += r.end - r.begin - r.used;
    if (room == 0)
      throw std::invalid_argument(fmt::format(
          "the document is too short: no room left in its body for distractor {} of {} ({} tokens)",
          &d - distractors.data() + 1, distractors.size(), d.size()));
    int pick = rng.draw(room);
    for (Region& r : regions) {
      int left = r.end - r.begin - r.used;
      if (left < d.size()) continue;
      if (pick < left) {
        r.used += d.size();
        r.pieces.push_back(std::move(d));
        break;
      }
      pick -= left;
    }
  }

  Span laid;
  laid.tokens.reserve(static_cast<size_t>(body));
  auto filler = [&](int n) {
    for (int i = 0; i < n; ++i) laid.tokens.push_back(token::kFirstFiller + rng.draw(kFillerWords));
  };
  for (size_t r = 0; r < regions.size(); ++r) {
    Region& region = regions[r];
    int fill = region.end - region.begin - region.used;
    // Insertion points among the region's filler tokens, one per piece.
    std::vector<std::pair<int, size_t>> at;
    for (size_t i = 0; i < region.pieces.size(); ++i) at.emplace_back(rng.draw(fill + 1), i);
    std::stable_sort(at.begin(), at.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    int written = 0;
    for (auto& [point, index] : at) {
      filler(point - written);
      written = point;
      append(laid, region.pieces[index]);
    }
    filler(fill - written);
    if (r < anchored.size()) append(laid, anchored[r].span);
  }
  return laid;
}

}  // namespace posc::longctx
