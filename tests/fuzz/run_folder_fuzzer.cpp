// libFuzzer harness of the readers of what a results folder holds, the files
// a user (or a full disk, or a crash) may have damaged: status.json,
// metrics.jsonl and a safetensors checkpoint's layout. The first input byte
// picks the reader, the rest is the file. Beside "never crash, never read
// out of bounds" (the sanitizers), each reader's own contract is checked:
// a status that parses is written back to a text that parses to the same
// status; every tensor of a layout lies inside the bytes it was read from.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "runtime/formats/metrics_log.h"
#include "runtime/formats/run_status.h"
#include "runtime/formats/safetensors_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return -1;
  const std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  using namespace posc::formats;
  switch (data[0] % 3) {
    case 0: {
      if (std::optional<RunStatus> s = parseStatus(file)) {
        std::optional<RunStatus> again = parseStatus(statusJson(*s));
        if (!again || !(*again == *s)) std::abort();  // the round trip must hold
      }
      break;
    }
    case 1: {
      try {
        for (const LossPoint& p : lossCurve(file)) (void)p;
      } catch (const std::runtime_error&) {
      }
      std::vector<std::string> lines;
      for (size_t from = 0; from <= file.size();) {
        size_t end = file.find('\n', from);
        if (end == std::string::npos) end = file.size();
        lines.push_back(file.substr(from, end - from));
        from = end + 1;
      }
      (void)firstDamagedLine(lines);
      break;
    }
    default: {
      try {
        const SafetensorsLayout layout = parseSafetensorsLayout(file);
        for (const TensorLayout& t : layout.tensors)
          if (t.begin > t.end || layout.data_begin + t.end > file.size()) std::abort();
      } catch (const std::runtime_error&) {
      }
      break;
    }
  }
  return 0;
}
