// Small file helpers shared by the test suites.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

// A CSV file as rows of cells, RFC 4180 quoting undone ("a,b" is one cell,
// "" inside quotes one quote); the header is row 0.
inline std::vector<std::vector<std::string>> readCsv(const std::filesystem::path& p) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(readFile(p));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        cells.emplace_back();
      } else {
        cells.back() += c;
      }
    }
    rows.push_back(cells);
  }
  return rows;
}

// The index of the header's column `name` (a test failure where there is none).
inline size_t csvColumn(const std::vector<std::string>& header, const std::string& name) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  ADD_FAILURE() << "no column " << name;
  return 0;
}

}  // namespace posc::testing
