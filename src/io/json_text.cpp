#include "io/json_text.h"

#include "io/text.h"
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
  nlohmann::json out;
  parseWith(text, source, max_depth, [&] { out = nlohmann::json::parse(text.begin(), text.end()); });
  return out;
}

bool SaxErrors::parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
  // As the DOM parser does: the library's own exception, turned into an
  // InputError by parseWith.
  if (e.id >= 100 && e.id < 200) throw static_cast<const nlohmann::json::parse_error&>(e);
  if (e.id >= 400 && e.id < 500) throw static_cast<const nlohmann::json::out_of_range&>(e);
  throw static_cast<const nlohmann::json::other_error&>(e);
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
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < at; ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string what = e.what();
    const std::size_t colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw InputError(source + ":" + std::to_string(line) + ":" + std::to_string(col) +
                     ": JSON syntax error: " + oneLine(what));
  } catch (const nlohmann::json::exception& e) {
    // Numbers beyond double range and the like: no position from the library.
    std::string what = e.what();
    const std::size_t tag = what.find("] ");
    if (tag != std::string::npos) what = what.substr(tag + 2);
    throw InputError(source + ": JSON error: " + oneLine(what));
  }
}

}  // namespace memplan::jsontext
