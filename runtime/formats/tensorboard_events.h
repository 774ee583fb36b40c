// TensorBoard's event files, written without TensorFlow or protobuf: scalars
// (the training loss, learning rate, tokens/s, accuracy per length during
// training) beside metrics.jsonl, so that `tensorboard --logdir runs/` shows
// posc's runs with anyone else's.
//
// The format (TensorFlow's tfrecord of Event protos): each record is its
// length (uint64, little-endian), the masked CRC-32C of those 8 bytes, the
// serialised Event, and the masked CRC-32C of it. The first event holds
// file_version "brain.Event:2"; each later one a wall time, a step and a
// Summary of tagged simple values. Only the fields posc writes are encoded,
// by hand: Event {1: wall_time double, 2: step int64, 3: file_version string,
// 5: summary}, Summary {1: value}, Summary.Value {1: tag string, 2:
// simple_value float}. tests/formats reads posc's files back with
// TensorBoard's own reader.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace posc::formats {

// CRC-32C (Castagnoli), and its masked form as tfrecord stores it.
uint32_t crc32c(std::string_view data);
uint32_t maskedCrc32c(std::string_view data);

// One serialised Event of scalars at a step.
std::string scalarEvent(double wall_time, int64_t step, const std::vector<std::pair<std::string, float>>& scalars);
// The first Event of a file.
std::string fileVersionEvent(double wall_time);
// A record of the file: length, its CRC, the event, its CRC.
std::string eventRecord(std::string_view event);

// Appends scalars to events.out.tfevents.<seconds>.<host>.posc in a folder
// (created), flushed after every write so a killed run keeps what it logged.
// Throws std::runtime_error naming the file when it cannot be written.
class EventWriter {
 public:
  explicit EventWriter(const std::filesystem::path& dir);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void scalars(int64_t step, const std::vector<std::pair<std::string, float>>& values);
  const std::filesystem::path& path() const { return path_; }

 private:
  void write(std::string_view event);
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace posc::formats
