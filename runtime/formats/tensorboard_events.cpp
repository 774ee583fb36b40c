// TensorBoard event files: see runtime/formats/tensorboard_events.h.
#include "runtime/formats/tensorboard_events.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace posc::formats {
namespace {

const std::array<uint32_t, 256>& crcTable() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli
      t[i] = c;
    }
    return t;
  }();
  return table;
}

// Protocol-buffer wire format, the three field types posc writes.
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void key(std::string& out, int field, int wire_type) { varint(out, static_cast<uint64_t>(field) << 3 | wire_type); }
void bytesField(std::string& out, int field, std::string_view bytes) {
  key(out, field, 2);
  varint(out, bytes.size());
  out.append(bytes);
}
template <typename T>
void fixedField(std::string& out, int field, T value) {  // double: wire type 1, float: 5
  key(out, field, sizeof(T) == 8 ? 1 : 5);
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));  // little-endian hosts (x86-64, AArch64)
  out.append(raw, sizeof(T));
}

template <typename T>
std::string littleEndian(T v) {
  std::string out(sizeof(T), '\0');
  for (size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return out;
}

double now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = crcTable()[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t maskedCrc32c(std::string_view data) {
  const uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

std::string scalarEvent(double wall_time, int64_t step, const std::vector<std::pair<std::string, float>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    bytesField(v, 1, tag);
    fixedField(v, 2, value);
    bytesField(summary, 1, v);
  }
  std::string event;
  fixedField(event, 1, wall_time);
  key(event, 2, 0);
  varint(event, static_cast<uint64_t>(step));
  bytesField(event, 5, summary);
  return event;
}

std::string fileVersionEvent(double wall_time) {
  std::string event;
  fixedField(event, 1, wall_time);
  bytesField(event, 3, "brain.Event:2");
  return event;
}

std::string eventRecord(std::string_view event) {
  const std::string length = littleEndian<uint64_t>(event.size());
  std::string out = length + littleEndian<uint32_t>(maskedCrc32c(length));
  out.append(event);
  out += littleEndian<uint32_t>(maskedCrc32c(event));
  return out;
}

EventWriter::EventWriter(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  const double t = now();
  // Several files in one folder (a resumed run) are read as one stream.
  path_ = dir / fmt::format("events.out.tfevents.{}.{}.{}.posc", static_cast<long long>(t), host, ::getpid());
  file_ = std::fopen(path_.c_str(), "ab");
  if (!file_)
    throw std::runtime_error(fmt::format("cannot write '{}': {}", path_.string(), std::strerror(errno)));
  write(fileVersionEvent(t));
}

EventWriter::~EventWriter() {
  if (file_) std::fclose(file_);
}

void EventWriter::scalars(int64_t step, const std::vector<std::pair<std::string, float>>& values) {
  write(scalarEvent(now(), step, values));
}

void EventWriter::write(std::string_view event) {
  const std::string record = eventRecord(event);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() || std::fflush(file_) != 0)
    throw std::runtime_error(fmt::format("cannot write '{}': {}", path_.string(), std::strerror(errno)));
}

}  // namespace posc::formats
