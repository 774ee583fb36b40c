// Reading the launcher's environment: see process_group.h.
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "runtime/distributed/process_group.h"

namespace posc::dist {
namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

long parseInt(const char* name, const std::string& text, long lo, long hi) {
  size_t used = 0;
  long v = 0;
  try {
    v = std::stol(text, &used);
  } catch (...) {
    used = 0;
  }
  if (used != text.size() || used == 0 || v < lo || v > hi)
    throw LaunchError(fmt::format("{}={}: expected a whole number from {} to {}", name, text, lo, hi));
  return v;
}

}  // namespace

std::string Launch::describe() const { return fmt::format("rank {} of {}", rank, world_size); }

std::optional<Launch> launchFromEnvironment() {
  const auto world = env("WORLD_SIZE"), rank = env("RANK");
  if (!world) {
    if (rank)
      throw LaunchError(fmt::format("RANK={} is set but WORLD_SIZE is not; a launcher sets both (torchrun does)",
                                    *rank));
    return std::nullopt;
  }
  Launch l;
  l.world_size = static_cast<int>(parseInt("WORLD_SIZE", *world, 1, 1 << 16));
  if (l.world_size == 1 && !rank) return std::nullopt;
  if (!rank) throw LaunchError(fmt::format("WORLD_SIZE={} is set but RANK is not", *world));
  l.rank = static_cast<int>(parseInt("RANK", *rank, 0, l.world_size - 1));
  if (l.world_size == 1) return std::nullopt;
  if (const auto local = env("LOCAL_RANK")) l.local_rank = static_cast<int>(parseInt("LOCAL_RANK", *local, 0, 1 << 16));
  const auto addr = env("MASTER_ADDR"), port = env("MASTER_PORT");
  if (!addr || !port)
    throw LaunchError(fmt::format("{} (WORLD_SIZE={}) needs MASTER_ADDR and MASTER_PORT: where rank 0 hosts the "
                                  "rendezvous",
                                  l.describe(), l.world_size));
  l.master_addr = *addr;
  l.master_port = static_cast<int>(parseInt("MASTER_PORT", *port, 1, 65535));
  if (const auto t = env("POSC_DIST_TIMEOUT"))
    l.timeout = std::chrono::seconds(parseInt("POSC_DIST_TIMEOUT", *t, 1, 7 * 24 * 3600));
  return l;
}

}  // namespace posc::dist
