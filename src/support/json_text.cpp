// Parsing and field access for memplan's JSON readers (see json_text.h).
#include "support/json_text.h"

#include <algorithm>

#include "support/text.h"
#include "memplan/types.h"

namespace memplan::jsontext {
namespace {

// Deepest nesting of arrays and objects, by a linear scan that skips
// strings; checked before parsing (nlohmann's callback parser, which could
// count depth itself, is an order of magnitude slower).
std::size_t nestingDepth(std::string_view text, std::size_t limit, std::size_t& stop) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) {
        stop = i;
        return deepest;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// The library's message without its "[json.exception.KIND.N] " tag.
std::string libraryText(std::string_view what) {
  const std::size_t tag = what.find("] ");
  if (tag != std::string_view::npos) what.remove_prefix(tag + 2);
  return oneLine(what);
}

}  // namespace

std::string oneLine(std::string_view s, std::size_t max) {
  std::string out;
  for (char c : s.substr(0, max))
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
  if (s.size() > max) out += "...";
  return out;
}

const char* typeName(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

std::string item(std::string_view base, std::size_t i) {
  return std::string(base) + "[" + std::to_string(i) + "]";
}

std::string member(std::string_view base, std::string_view key) {
  return base.empty() ? std::string(key) : std::string(base) + "." + std::string(key);
}

void Fields::fail(std::string_view at, std::string_view what) const {
  std::string msg = source_ + ": ";
  if (!at.empty()) msg.append(at).append(": ");
  msg.append(what);
  throw InputError(msg);
}

const Fields::Json* Fields::find(const Json& obj, std::string_view key) {
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

const Fields::Json* Fields::optional(const Json& obj, std::string_view key) {
  const Json* v = find(obj, key);
  return v && !v->is_null() ? v : nullptr;
}

const Fields::Json& Fields::require(const Json& obj, std::string_view at,
                                    std::string_view key) const {
  const Json* v = find(obj, key);
  if (!v) fail(member(at, key), "missing");
  return *v;
}

void Fields::knownKeys(const Json& obj, std::string_view at,
                       std::initializer_list<std::string_view> known) const {
  for (const auto& [key, value] : obj.items()) {
    bool ok = false;
    for (std::string_view k : known) ok |= key == k;
    if (!ok) fail(at, "unknown field '" + oneLine(key, 60) + "'");
  }
}

const Fields::Json& Fields::object(const Json& v, std::string_view at) const {
  if (!v.is_object()) fail(at, std::string("expected an object, got ") + typeName(v));
  return v;
}

const Fields::Json& Fields::array(const Json& v, std::string_view at, std::size_t max) const {
  if (!v.is_array()) fail(at, std::string("expected an array, got ") + typeName(v));
  if (v.size() > max)
    fail(at, std::to_string(v.size()) + " entries, above the limit of " + std::to_string(max));
  return v;
}

std::string Fields::str(const Json& v, std::string_view at) const {
  if (!v.is_string()) fail(at, std::string("expected a string, got ") + typeName(v));
  return v.get<std::string>();
}

std::string Fields::text(const Json& v, std::string_view at) const {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_object())
    fail(at, std::string("expected a string or {\"bytes\": \"...\"}, got ") + typeName(v));
  knownKeys(v, at, {"bytes"});
  const Json* bytes = find(v, "bytes");
  if (!bytes) fail(at, "missing 'bytes'");
  const std::string escaped = str(*bytes, member(at, "bytes"));
  auto raw = unescapeBytes(escaped);
  if (!raw)
    fail(member(at, "bytes"), "'" + oneLine(escaped, 60) +
                                  "': a backslash must start \\\\ or \\xNN (two hex digits)");
  return std::move(*raw);
}

std::string dump(const nlohmann::ordered_json& v) {
  return v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

nlohmann::ordered_json textJson(std::string_view s) {
  if (isUtf8(s)) return std::string(s);
  return nlohmann::ordered_json{{"bytes", escapeBytes(s)}};
}

bool Fields::boolean(const Json& v, std::string_view at) const {
  if (!v.is_boolean()) fail(at, std::string("expected true or false, got ") + typeName(v));
  return v.get<bool>();
}

std::uint64_t Fields::unsignedInt(const Json& v, std::string_view at, std::uint64_t max) const {
  if (!v.is_number_unsigned()) {
    std::string what = "expected a non-negative integer, got ";
    what += typeName(v);
    if (v.is_number()) what.append(1, ' ').append(oneLine(v.dump(), 40));
    fail(at, what);
  }
  const auto x = v.get<std::uint64_t>();
  if (x > max) fail(at, std::to_string(x) + " is above the limit of " + std::to_string(max));
  return x;
}

std::int64_t Fields::signedInt(const Json& v, std::string_view at, std::int64_t min,
                               std::int64_t max) const {
  const bool ok = v.is_number_integer() &&
                  (v.is_number_unsigned()
                       ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(max)
                       : v.get<std::int64_t>() >= min && v.get<std::int64_t>() <= max);
  if (!ok)
    fail(at, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                 "], got " + oneLine(v.dump(), 40));
  return v.get<std::int64_t>();
}

nlohmann::json parse(std::string_view text, const std::string& source, std::size_t max_depth) {
  if (max_depth == kMaxDepth) return parse(text, source, Schema{});
  nlohmann::json out;
  parseWith(text, source, max_depth, [&] { out = nlohmann::json::parse(text.begin(), text.end()); });
  return out;
}

bool SaxErrors::parse_error(std::size_t position, const std::string& last_token,
                            const nlohmann::detail::exception& e) {
  // Syntax errors carry their byte; the others (a number beyond a double's
  // range) get the parser's position here, the only place that knows it.
  if (e.id >= 100 && e.id < 200) throw static_cast<const nlohmann::json::parse_error&>(e);
  throw PositionedError(e.what(), position - std::min(position, last_token.size()));
}

void parseWith(std::string_view text, const std::string& source, std::size_t max_depth,
               const std::function<void()>& run) {
  std::size_t stop = 0;
  if (nestingDepth(text, max_depth, stop) > max_depth)
    throw InputError(source + ": byte " + std::to_string(stop) + ": JSON nested deeper than " +
                     std::to_string(max_depth) + " levels");
  try {
    run();
  } catch (const nlohmann::json::parse_error& e) {
    // Position from the byte offset; the library's text after its own
    // "parse error at line L, column C: " prefix says what went wrong.
    const std::size_t at = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    std::string what = e.what();
    const std::size_t colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw InputError(source + ":" + lineColumn(text, at) + ": JSON syntax error: " + oneLine(what));
  } catch (const PositionedError& e) {
    const std::size_t at = std::min<std::size_t>(e.byte, text.size());  // the value's first byte
    throw InputError(source + ":" + lineColumn(text, at) + ": JSON error: " + libraryText(e.what()));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source + ": JSON error: " + libraryText(e.what()));
  }
}

std::string lineColumn(std::string_view text, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < std::min(offset, text.size()); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

std::size_t TreeBudget::cost(const nlohmann::json& v, bool in_object, std::size_t key_size) {
  // libstdc++ and glibc: a json value is 16 bytes; an array slot is one,
  // doubled for the vector's spare capacity, plus the old array while the
  // vector grows (measured: 8 MB of "{}," peaks at the estimate plus the
  // file and ~20 MB of program); an object member is a map node
  // (key string, value, links: 80 bytes + malloc's 16); strings and
  // containers are allocated apart (32 or 24 or 48 bytes + 16), a string's
  // text too beyond 15 bytes.
  constexpr std::size_t kHeap = 16, kSso = 15;
  std::size_t bytes = in_object ? 96 + (key_size > kSso ? key_size + 1 + kHeap : 0) : 48;
  if (v.is_string()) {
    const std::size_t n = v.get_ref<const std::string&>().size();
    bytes += 32 + kHeap + (n > kSso ? n + 1 + kHeap : 0);
  } else if (v.is_object()) {
    bytes += 48 + kHeap;
  } else if (v.is_array() || v.is_binary()) {
    bytes += 24 + kHeap;
  }
  return bytes;
}

void overBudget(std::string_view text, const Cursor& cursor, const std::string& source,
                std::string_view at, const TreeBudget& budget) {
  std::string msg = source + ":" + lineColumn(text, cursor.offset() == 0 ? 0 : cursor.offset() - 1) + ": ";
  if (!at.empty()) msg.append(at).append(": ");
  msg += "values too small and dense: the JSON tree would pass " + std::to_string(budget.limit()) +
         " bytes of memory (" + std::to_string(kTreeBytesPerTextByte) +
         " bytes a byte of text; memplan's own files need at most ~10)";
  throw InputError(msg);
}

namespace {

// Builds the document as the library's DOM parser does, but refuses while
// parsing what `schema` does not allow and what would pass the TreeBudget,
// before the value is built.
class BoundedDom : public TreeSax<BoundedDom> {
  friend TreeSax<BoundedDom>;

 public:
  using json = nlohmann::json;
  BoundedDom(std::string_view text, const std::string& source, const Schema& schema)
      : text_(text), fields_(source), schema_(schema), budget_(text.size()) {}
  json& root() { return root_; }
  Cursor& cursor() { return cursor_; }

  bool key(json::string_t& k) {
    Frame& f = stack_.back();
    if (stack_.size() == 1 && !schema_.root_keys.empty() &&
        std::find(schema_.root_keys.begin(), schema_.root_keys.end(), k) == schema_.root_keys.end())
      fields_.fail(schema_.root_at, "unknown field '" + oneLine(k, 60) + "'");
    f.key = std::move(k);
    f.slot = &(*f.value)[f.key];
    return true;
  }

 private:
  // An open array or object. Paths for messages are rebuilt from the
  // stack when needed: building one for every value would cost more than
  // the value (a hostile document is mostly "{}").
  struct Frame {
    json* value = nullptr;
    std::size_t count = 0, max = SIZE_MAX;  // arrays: entries so far, the limit
    std::string key;                        // objects: the last key
    json* slot = nullptr;                   // objects: where its value goes
  };

  Frame place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return {&root_};
    }
    Frame& parent = stack_.back();
    const bool object = parent.value->is_object();
    if (!budget_.charge(TreeBudget::cost(v, object, parent.key.size())))
      overBudget(text_, cursor_, fields_.source(), path(stack_.size(), true), budget_);
    Frame child;
    if (object) {
      *parent.slot = std::move(v);
      child.value = parent.slot;
    } else {
      if (parent.count == parent.max)
        fail(path(stack_.size(), false), "more than " + std::to_string(parent.max) + " entries, above the limit");
      ++parent.count;
      parent.value->push_back(std::move(v));
      child.value = &parent.value->back();
    }
    // Limits name arrays a few levels down: "graphs[].pools".
    if (child.value->is_array() && stack_.size() <= kSchemaDepth && !schema_.arrays.empty()) {
      const std::string pattern = path(stack_.size(), true, true);
      for (const auto& [p, max] : schema_.arrays)
        if (p == pattern) child.max = max;
    }
    return child;
  }

  // The path of the first `depth` frames (with the value being placed when
  // `placing`): "graphs[2].pools", or with `any_index` "graphs[].pools".
  std::string path(std::size_t depth, bool placing, bool any_index = false) const {
    std::string at;
    for (std::size_t i = 0; i < depth; ++i) {
      const Frame& f = stack_[i];
      if (i + 1 == depth && !placing) break;
      if (f.value->is_object()) at = member(at, f.key);
      else at += any_index ? "[]" : "[" + std::to_string(f.count - (i + 1 < depth ? 1 : 0)) + "]";
    }
    return at;
  }
  [[noreturn]] void fail(const std::string& at, const std::string& what) const { fields_.fail(at, what); }

  bool value(json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(json&& v) {
    stack_.push_back(place(std::move(v)));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  static constexpr std::size_t kSchemaDepth = 4;
  std::string_view text_;
  Fields fields_;
  const Schema& schema_;
  TreeBudget budget_;
  Cursor cursor_;
  json root_;
  std::vector<Frame> stack_;
};

}  // namespace

nlohmann::json parse(std::string_view text, const std::string& source, const Schema& schema) {
  BoundedDom dom(text, source, schema);
  parseWith(text, source, kMaxDepth, [&] { saxParse(text, dom.cursor(), dom); });
  return std::move(dom.root());
}

}  // namespace memplan::jsontext
