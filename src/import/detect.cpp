// Input format detection: the extension decides when it is known; otherwise
// the content does (TFLite or ExecuTorch file identifier, JSON object, CSV
// header, ONNX protobuf structure). JSON is a spec list when its top-level object has a
// "specs" key and does not declare "format": "memplan-graph".
#include <algorithm>
#include <cctype>
#include <string>

#include "memplan/import.h"

namespace memplan {
namespace {

std::string lowerExtension(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  const std::size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view skipBomAndSpace(std::string_view s) {
  if (s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);
  while (!s.empty() && isSpace(s.front())) s.remove_prefix(1);
  return s;
}

// Position just past `"key"` followed by optional space and a colon, or npos.
std::size_t findKey(std::string_view text, std::string_view quoted_key, std::size_t from = 0) {
  for (std::size_t at = text.find(quoted_key, from); at != std::string_view::npos;
       at = text.find(quoted_key, at + 1)) {
    std::size_t i = at + quoted_key.size();
    while (i < text.size() && isSpace(text[i])) ++i;
    if (i < text.size() && text[i] == ':') return i + 1;
  }
  return std::string_view::npos;
}

InputKind jsonKind(std::string_view text) {
  for (std::size_t at = findKey(text, "\"format\""); at != std::string_view::npos;
       at = findKey(text, "\"format\"", at)) {
    std::size_t i = at;
    while (i < text.size() && isSpace(text[i])) ++i;
    if (text.substr(i, 15) == "\"memplan-graph\"") return InputKind::GraphJson;
  }
  return findKey(text, "\"specs\"") != std::string_view::npos ? InputKind::SpecList
                                                               : InputKind::GraphJson;
}

// First line holds the MiniMalloc columns id, lower, upper and size.
bool looksLikeCsv(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  int found = 0;
  while (true) {
    const std::size_t comma = line.find(',');
    std::string_view cell = line.substr(0, comma);
    while (!cell.empty() && isSpace(cell.front())) cell.remove_prefix(1);
    while (!cell.empty() && isSpace(cell.back())) cell.remove_suffix(1);
    for (std::string_view name : {"id", "lower", "upper", "size"}) found += cell == name;
    if (comma == std::string_view::npos) break;
    line.remove_prefix(comma + 1);
  }
  return found == 4;
}

bool readVarint(std::string_view s, std::size_t& pos, std::uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64 && pos < s.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(s[pos++]);
    value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return true;
  }
  return false;
}

// Walks the top-level protobuf fields: well formed to the last byte, with
// ONNX ModelProto's ir_version (1, varint) and graph (7, message).
bool looksLikeOnnx(std::string_view s) {
  bool ir_version = false, graph = false;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::uint64_t key = 0, value = 0;
    if (!readVarint(s, pos, key)) return false;
    const std::uint64_t field = key >> 3;
    if (field == 0 || field > 64) return false;
    switch (key & 7) {
      case 0:
        if (!readVarint(s, pos, value)) return false;
        ir_version |= field == 1;
        break;
      case 1:
        if (s.size() - pos < 8) return false;
        pos += 8;
        break;
      case 2:
        if (!readVarint(s, pos, value) || value > s.size() - pos) return false;
        pos += static_cast<std::size_t>(value);
        graph |= field == 7;
        break;
      case 5:
        if (s.size() - pos < 4) return false;
        pos += 4;
        break;
      default:
        return false;
    }
  }
  return ir_version && graph;
}

}  // namespace

InputKind detectInputKind(const std::string& path, std::string_view bytes) {
  if (bytes.empty()) throw InputError(path + ": empty file");
  const std::string ext = lowerExtension(path);
  if (ext == ".json") return jsonKind(bytes);
  if (ext == ".csv") return InputKind::Csv;
  if (ext == ".onnx") return InputKind::Onnx;
  if (ext == ".tflite") return InputKind::Tflite;
  if (ext == ".pte") return InputKind::Pte;

  if (bytes.size() >= 8 && bytes.substr(4, 4) == "TFL3") return InputKind::Tflite;
  if (bytes.size() >= 8 && bytes.substr(4, 4) == "ET12") return InputKind::Pte;
  const std::string_view text = skipBomAndSpace(bytes);
  if (!text.empty() && text.front() == '{') return jsonKind(text);
  if (looksLikeCsv(text)) return InputKind::Csv;
  if (looksLikeOnnx(bytes)) return InputKind::Onnx;
  throw InputError(path +
                   ": unknown input format (expected memplan graph JSON, an ExecuTorch spec "
                   "list JSON, MiniMalloc CSV, ONNX, TFLite or an ExecuTorch program)");
}

}  // namespace memplan
