// Small file helpers shared by the test suites.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace posc::testing {

// The whole file as a string (empty if it cannot be read).
inline std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace posc::testing
