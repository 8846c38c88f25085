// Devices: their text form and the order ExecuTorch partitions them in.
#include "memplan/graph.h"

namespace memplan {

int deviceTypeRank(std::string_view type) {
  if (type == "cpu") return 0;   // ExecuTorch DeviceType::CPU
  if (type == "cuda") return 1;  // ExecuTorch DeviceType::CUDA
  return 2;
}

std::optional<Device> parseDevice(std::string_view text) {
  const std::size_t colon = text.find(':');
  Device d;
  d.type = std::string(text.substr(0, colon));
  if (d.type.empty()) return std::nullopt;
  for (char c : d.type)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return std::nullopt;
  if (colon == std::string_view::npos) return d;
  const std::string_view digits = text.substr(colon + 1);
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  std::int32_t index = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    index = index * 10 + (c - '0');
  }
  d.index = index;
  return d;
}

}  // namespace memplan
