// TensorBoard event files (runtime/formats/tensorboard_events.h), byte by
// byte against hand-computed encodings; TensorBoard's own reader reads a
// whole run's files in tests/formats/check_tensorboard.py.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/formats/tensorboard_events.h"

namespace {

using namespace posc::formats;

TEST(TensorBoardEvents, Crc32cIsCastagnolis) {
  // The check value of CRC-32C (RFC 3720, B.4) and of the empty string.
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  // tfrecord's mask: rotate right by 15, add 0xa282ead8.
  const uint32_t c = 0xE3069283u;
  EXPECT_EQ(maskedCrc32c("123456789"), ((c >> 15) | (c << 17)) + 0xA282EAD8u);
}

TEST(TensorBoardEvents, ScalarEventsAreTheProtosTheyClaim) {
  // Event{wall_time: 1.5, step: 300, summary{value{tag: "l", simple_value: 2}}}
  const std::string e = scalarEvent(1.5, 300, {{"l", 2.0f}});
  std::string want;
  want += '\x09';  // field 1, 64-bit
  double w = 1.5;
  want.append(reinterpret_cast<const char*>(&w), 8);
  want += "\x10\xAC\x02";                // field 2 varint: 300
  want += "\x2A\x0A";                    // field 5, 10 bytes: the summary
  want += "\x0A\x08";                    // Summary.value, 8 bytes
  want += "\x0A\x01l";                   // Value.tag "l"
  want += "\x15";                        // Value.simple_value, 32-bit
  float v = 2.0f;
  want.append(reinterpret_cast<const char*>(&v), 4);
  EXPECT_EQ(e, want);
  const std::string r = eventRecord(e);
  ASSERT_EQ(r.size(), 8 + 4 + e.size() + 4);
  uint64_t length = 0;
  std::memcpy(&length, r.data(), 8);
  EXPECT_EQ(length, e.size());
  uint32_t crc = 0;
  std::memcpy(&crc, r.data() + 8, 4);
  EXPECT_EQ(crc, maskedCrc32c(r.substr(0, 8)));
  std::memcpy(&crc, r.data() + 12 + e.size(), 4);
  EXPECT_EQ(crc, maskedCrc32c(e));
}

TEST(TensorBoardEvents, AWriterStartsWithTheFileVersion) {
  const auto dir = std::filesystem::temp_directory_path() / ("posc-tb-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::path file;
  {
    EventWriter w(dir / "tensorboard");
    w.scalars(10, {{"seed0/loss", 0.5f}});
    file = w.path();
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  const std::string all = bytes.str();
  EXPECT_NE(all.find("brain.Event:2"), std::string::npos);
  EXPECT_NE(all.find("seed0/loss"), std::string::npos);
  EXPECT_EQ(file.filename().string().rfind("events.out.tfevents.", 0), 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
