// Parsing JSON text for memplan's readers (graph JSON, spec lists, plans):
// one place for the depth cap, for turning the library's errors into
// one-line InputErrors that name the file and the position, and for reading
// typed fields (Fields), so every reader words its errors the same way:
//
//   "model.json: tensors[12].shape[2]: expected a non-negative integer, got a string"
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "memplan/limits.h"

namespace memplan::jsontext {

inline constexpr std::size_t kMaxDepth = limits::kMaxJsonDepth;

// One line: control characters replaced, long text cut with "...".
std::string oneLine(std::string_view s, std::size_t max = 200);

// "null", "a boolean", "an integer", "a number", "a string", "an array",
// "an object": for messages.
const char* typeName(const nlohmann::json& v);

// Parses `text`; throws InputError "SOURCE:LINE:COL: JSON syntax error: ..."
// (or "SOURCE: byte N: JSON nested deeper than 32 levels", or
// "SOURCE: JSON error: ..." for numbers out of range).
nlohmann::json parse(std::string_view text, const std::string& source,
                     std::size_t max_depth = kMaxDepth);

// The same checks and messages around any parse of `text` that throws the
// library's exceptions: `run` calls nlohmann::json::parse or sax_parse (a
// SAX handler derives from SaxErrors for the errors).
void parseWith(std::string_view text, const std::string& source, std::size_t max_depth,
               const std::function<void()>& run);
struct SaxErrors {
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& e);
};

// "base[i]" and "base.key": JSON paths for messages.
std::string item(std::string_view base, std::size_t i);
std::string member(std::string_view base, std::string_view key);

// A string as memplan's JSON files write it: the string itself when it is
// valid UTF-8, else {"bytes": "..."} holding its escapeBytes() form (io/text.h),
// so that names read from model files, which are bytes, come back exactly.
// Fields::text reads both.
nlohmann::ordered_json textJson(std::string_view s);

// A document as memplan's writers write it: one line, no trailing newline.
// Strings go in through textJson (valid UTF-8); invalid bytes would be
// replaced, a guard only.
std::string dump(const nlohmann::ordered_json& v);

// Typed field access for one document. Every failure throws InputError
// "SOURCE: PATH: what" (PATH left out when empty).
class Fields {
 public:
  using Json = nlohmann::json;
  explicit Fields(std::string source) : source_(std::move(source)) {}
  const std::string& source() const { return source_; }

  [[noreturn]] void fail(std::string_view at, std::string_view what) const;

  // The member, or null when absent.
  static const Json* find(const Json& obj, std::string_view key);
  // The member, or null when absent or JSON null.
  static const Json* optional(const Json& obj, std::string_view key);
  // The member; "AT.KEY: missing" when absent.
  const Json& require(const Json& obj, std::string_view at, std::string_view key) const;
  // Refuses members not in `known`: "AT: unknown field 'k'".
  void knownKeys(const Json& obj, std::string_view at,
                 std::initializer_list<std::string_view> known) const;

  const Json& object(const Json& v, std::string_view at) const;
  const Json& array(const Json& v, std::string_view at, std::size_t max_entries) const;
  std::string str(const Json& v, std::string_view at) const;
  // A string, or {"bytes": "..."} (textJson): the bytes it stands for.
  std::string text(const Json& v, std::string_view at) const;
  bool boolean(const Json& v, std::string_view at) const;
  std::uint64_t unsignedInt(const Json& v, std::string_view at, std::uint64_t max) const;
  std::int64_t signedInt(const Json& v, std::string_view at, std::int64_t min,
                         std::int64_t max) const;

 private:
  std::string source_;
};

}  // namespace memplan::jsontext
