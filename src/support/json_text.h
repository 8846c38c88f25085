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
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
// A library error other than a syntax error, with the parser's position.
struct PositionedError : std::runtime_error {
  PositionedError(const std::string& what, std::size_t at) : std::runtime_error(what), byte(at) {}
  std::size_t byte;
};
struct SaxErrors {
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& e);
};
// A SAX handler that builds a tree: every scalar goes to Derived::value,
// every container to Derived::open and Derived::close (which may be
// private: Derived befriends TreeSax<Derived>).
template <typename Derived>
struct TreeSax : SaxErrors {
  using json = nlohmann::json;
  bool null() { return self().value(json(nullptr)); }
  bool boolean(bool b) { return self().value(json(b)); }
  bool number_integer(json::number_integer_t v) { return self().value(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return self().value(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) { return self().value(json(v)); }
  bool string(json::string_t& s) { return self().value(json(std::move(s))); }
  bool binary(json::binary_t& b) { return self().value(json::binary(std::move(b))); }
  bool start_object(std::size_t) { return self().open(json::object()); }
  bool start_array(std::size_t) { return self().open(json::array()); }
  bool end_object() { return self().close(); }
  bool end_array() { return self().close(); }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

// Where a SAX parse is: the parser reads through a TrackedChars iterator,
// which leaves the byte after the last one read here, so that a handler
// refusing a value can say where it is (the library gives its handlers no
// position).
struct Cursor {
  const char* base = nullptr;
  const char* at = nullptr;
  std::size_t offset() const { return static_cast<std::size_t>(at - base); }
};
struct TrackedChars {
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;
  const char* p = nullptr;
  Cursor* cursor = nullptr;
  reference operator*() const { return *p; }
  TrackedChars& operator++() {
    cursor->at = ++p;
    return *this;
  }
  TrackedChars operator++(int) {
    TrackedChars before = *this;
    ++*this;
    return before;
  }
  bool operator==(const TrackedChars& o) const { return p == o.p; }
};
// sax_parse over `text` with `cursor` following the parser.
template <typename Sax>
void saxParse(std::string_view text, Cursor& cursor, Sax& sax) {
  cursor.base = cursor.at = text.data();
  nlohmann::json::sax_parse(TrackedChars{text.data(), &cursor},
                            TrackedChars{text.data() + text.size(), &cursor}, &sax);
}
// "LINE:COL" of byte `offset` of `text` (both from 1).
std::string lineColumn(std::string_view text, std::size_t offset);

// Memory a JSON tree may take. The library's values cost far more than
// their text ("{}," is 3 bytes of text and ~100 bytes of tree), so a
// document of tiny values packed densely would need ~36 bytes a byte.
// Readers charge each value as they build it (estimates of the library's
// allocations) and refuse the value that takes the tree past
// kTreeBytesPerTextByte times the text (plus kTreeSlackBytes): memplan's own
// files need at most ~10 a byte.
inline constexpr std::size_t kTreeBytesPerTextByte = 16;
inline constexpr std::size_t kTreeSlackBytes = std::size_t{1} << 20;
class TreeBudget {
 public:
  explicit TreeBudget(std::size_t text_bytes)
      : limit_(text_bytes * kTreeBytesPerTextByte + kTreeSlackBytes) {}
  // Cost of one value, placed in an array or under an object key of `key_size`.
  static std::size_t cost(const nlohmann::json& v, bool in_object, std::size_t key_size);
  // Adds `bytes`; false once the tree is past the limit.
  bool charge(std::size_t bytes) {
    used_ += bytes;
    return used_ <= limit_;
  }
  std::size_t used() const { return used_; }
  void reset(std::size_t used) { used_ = used; }
  std::size_t limit() const { return limit_; }

 private:
  std::size_t limit_;
  std::size_t used_ = 0;
};
// "SOURCE:LINE:COL: AT: JSON values need more than N bytes of memory ..."
[[noreturn]] void overBudget(std::string_view text, const Cursor& cursor, const std::string& source,
                             std::string_view at, const TreeBudget& budget);

// What a reader accepts, checked while the document is parsed, before a
// refused value is built: the root object's members (`root_at` names the
// root in messages: "" or "top level"), and arrays' entries, by pattern
// ("graphs[].allocations": any graph's allocations).
struct Schema {
  std::string root_at;
  std::vector<std::string_view> root_keys;  // empty: any
  std::vector<std::pair<std::string_view, std::size_t>> arrays;
};
// Parses as parse() does, refusing as `schema` says and within a TreeBudget.
nlohmann::json parse(std::string_view text, const std::string& source, const Schema& schema);

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
