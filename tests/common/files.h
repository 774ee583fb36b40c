// Small file helpers shared by the test suites.
#pragma once

#include <gtest/gtest.h>

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

// An empty folder `name` under the test's temporary directory.
inline std::filesystem::path scratchDir(const std::string& name) {
  const std::filesystem::path p = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

}  // namespace posc::testing
