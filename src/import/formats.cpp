// The input format registry (see memplan/formats.h): one row per format.
// Detection: the extension decides when one format claims it; otherwise
// the content does (TFLite or ExecuTorch file identifier, JSON object, CSV
// header, ONNX protobuf structure). JSON is a plan when its "format" is
// "memplan-plan", a spec list when its top-level object has a "specs" key
// and does not declare "format": "memplan-graph", else a graph.
#include <algorithm>
#include <cctype>
#include <string>

#include <fmt/format.h>

#include "memplan/formats.h"

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

// Whether some "format" key of the JSON text has the string value `value`.
bool hasFormat(std::string_view text, std::string_view value) {
  const std::string quoted = "\"" + std::string(value) + "\"";
  for (std::size_t at = findKey(text, "\"format\""); at != std::string_view::npos;
       at = findKey(text, "\"format\"", at)) {
    std::size_t i = at;
    while (i < text.size() && isSpace(text[i])) ++i;
    if (text.substr(i, quoted.size()) == quoted) return true;
  }
  return false;
}

bool isJsonObject(std::string_view bytes) {
  const std::string_view text = skipBomAndSpace(bytes);
  return !text.empty() && text.front() == '{';
}

bool sniffPlan(std::string_view bytes) {
  return isJsonObject(bytes) && hasFormat(bytes, "memplan-plan") && !hasFormat(bytes, "memplan-graph");
}

bool sniffSpecList(std::string_view bytes) {
  return isJsonObject(bytes) && !hasFormat(bytes, "memplan-graph") &&
         findKey(bytes, "\"specs\"") != std::string_view::npos;
}

bool sniffPte(std::string_view bytes) { return bytes.size() >= 8 && bytes.substr(4, 4) == "ET12"; }
bool sniffTflite(std::string_view bytes) { return bytes.size() >= 8 && bytes.substr(4, 4) == "TFL3"; }

// First line holds the MiniMalloc columns id, lower, upper and size.
bool looksLikeCsv(std::string_view bytes) {
  const std::string_view text = skipBomAndSpace(bytes);
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

InputContent readPteContent(std::string_view bytes, const std::string& name, const ImportOptions&) {
  return std::make_shared<const PteProgram>(readPte(std::string(bytes), name));
}

}  // namespace

const std::vector<InputFormat>& inputFormats() {
  static const std::vector<InputFormat> kFormats = {
      {.name = "plan", .description = "a memplan plan", .plural = "memplan plans",
       .extensions = {".json"}, .sniff = sniffPlan,
       .refusal = "this is a memplan plan, not a model; use `memplan verify|replay|report MODEL "
                  "PLAN`"},
      {.name = "pte", .description = "an ExecuTorch program", .plural = "ExecuTorch programs",
       .extensions = {".pte"}, .sniff = sniffPte, .read = readPteContent,
       .abilities = kCarriesPlan | kWritesPte},
      {.name = "tflite", .description = "a TFLite model", .plural = "TFLite models",
       .extensions = {".tflite"}, .sniff = sniffTflite,
       .read = [](std::string_view b, const std::string& n, const ImportOptions& o) -> InputContent {
         return importTflite(b, n, o);
       },
       .import_options = kImportUnknownSizeBytes | kImportIgnoreOfflinePlan,
       .abilities = kCarriesPlan | kWritesTflite | kRunsOnTfliteMicro},
      {.name = "spec_list", .description = "an ExecuTorch spec list", .plural = "ExecuTorch spec lists",
       .extensions = {".json"}, .sniff = sniffSpecList,
       .read = [](std::string_view b, const std::string& n, const ImportOptions&) -> InputContent {
         return readSpecListJson(b, n);
       }},
      {.name = "graph_json", .description = "a memplan graph JSON", .plural = "memplan graphs",
       .extensions = {".json"}, .sniff = isJsonObject,
       .read = [](std::string_view b, const std::string& n, const ImportOptions&) -> InputContent {
         return readGraphJson(b, n);
       },
       .abilities = kCarriesPlan},
      {.name = "csv", .description = "a MiniMalloc CSV buffer list", .plural = "MiniMalloc CSV buffer lists",
       .extensions = {".csv"}, .sniff = looksLikeCsv,
       .read = [](std::string_view b, const std::string& n, const ImportOptions&) -> InputContent {
         return readMiniMallocCsv(b, n);
       }},
      {.name = "onnx", .description = "an ONNX model", .plural = "ONNX models",
       .extensions = {".onnx"}, .sniff = looksLikeOnnx,
       .read = [](std::string_view b, const std::string& n, const ImportOptions& o) -> InputContent {
         return importOnnx(b, n, o);
       },
       .import_options = kImportInputShapes | kImportDims | kImportAliasViews | kImportUnknownSizeBytes},
  };
  return kFormats;
}

const InputFormat* findInputFormat(std::string_view name) {
  for (const InputFormat& f : inputFormats())
    if (f.name == name) return &f;
  return nullptr;
}

const InputFormat& detectInputFormat(const std::string& path, std::string_view bytes) {
  if (bytes.empty()) throw InputError(path + ": empty file");
  const std::string ext = lowerExtension(path);
  std::vector<const InputFormat*> claim;
  for (const InputFormat& f : inputFormats())
    if (std::find(f.extensions.begin(), f.extensions.end(), ext) != f.extensions.end()) claim.push_back(&f);
  if (claim.size() == 1) return *claim.front();
  if (!claim.empty()) {
    for (const InputFormat* f : claim)
      if (f->sniff && f->sniff(bytes)) return *f;
    return *claim.back();  // its reader says what is wrong
  }
  for (const InputFormat& f : inputFormats())
    if (f.sniff && f.sniff(bytes)) return f;
  std::vector<std::string_view> inputs;
  for (const InputFormat& f : inputFormats())
    if (f.read) inputs.push_back(f.description);
  std::string known;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    known += (i == 0 ? "" : i + 1 == inputs.size() ? " or " : ", ") + std::string(inputs[i]);
  throw InputError(fmt::format("{}: unknown input format (expected {})", path, known));
}

std::string formatsReading(ImportOption bit) {
  std::vector<std::string> names;
  for (const InputFormat& f : inputFormats())
    if (f.import_options & bit) names.emplace_back(f.plural);
  if (names.empty()) return "no input";
  std::sort(names.begin(), names.end());
  // "ONNX models" and "TFLite models": "ONNX and TFLite models".
  const auto lastWord = [](const std::string& n) { return n.substr(n.rfind(' ') + 1); };
  const std::string noun = lastWord(names.front());
  bool shared = names.size() > 1;
  for (const std::string& n : names) shared = shared && n.find(' ') != std::string::npos && lastWord(n) == noun;
  if (shared)
    for (std::string& n : names) n.resize(n.rfind(' '));
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return shared ? out + " " + noun : out;
}

void checkImportOptions(const InputFormat& format, const ImportOptions& o, const std::string& path) {
  const ImportOptions defaults;
  const std::pair<ImportOption, std::pair<std::string_view, bool>> fields[] = {
      {kImportInputShapes, {"input_shapes", !o.input_shapes.empty()}},
      {kImportDims, {"dims", !o.dims.empty()}},
      {kImportAliasViews, {"alias_views", o.alias_views != defaults.alias_views}},
      {kImportUnknownSizeBytes, {"unknown_size_bytes", o.unknown_size_bytes != defaults.unknown_size_bytes}},
      {kImportIgnoreOfflinePlan, {"ignore_offline_plan", o.ignore_offline_plan != defaults.ignore_offline_plan}},
  };
  for (const auto& [bit, field] : fields)
    if (field.second && !(format.import_options & bit))
      throw InputError(fmt::format("ImportOptions.{}: applies to {} only; {} is {}", field.first,
                                   formatsReading(bit), path, format.description));
}

}  // namespace memplan
