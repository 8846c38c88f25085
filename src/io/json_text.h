// Parsing JSON text for memplan's readers (graph JSON, spec lists, plans):
// one place for the depth cap and for turning the library's errors into
// one-line InputErrors that name the file and the position.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace memplan::jsontext {

inline constexpr std::size_t kMaxDepth = 32;

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

}  // namespace memplan::jsontext
