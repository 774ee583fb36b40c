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

// Writes `content` to the file, replacing it.
inline void writeFile(const std::filesystem::path& p, const std::string& content) {
  std::ofstream out(p, std::ios::binary);
  out << content;
}

}  // namespace posc::testing
