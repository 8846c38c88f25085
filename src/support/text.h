// Text helpers for one-line messages.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/types.h"  // printable, closest

namespace memplan {


// Whether `s` is valid UTF-8 (no overlong forms, surrogates or code points
// above U+10FFFF): what a JSON string can hold.
bool isUtf8(std::string_view s);

// memplan's escape for names that are not valid UTF-8 (names are bytes in
// ONNX, TFLite and .pte files): each byte that is not part of a valid UTF-8
// sequence becomes \xNN (two lower-case hex digits) and each backslash \\;
// the rest is kept. The result is valid UTF-8, and unescapeBytes gives back
// the exact bytes (it also takes upper-case hex digits). nullopt: a
// backslash not followed by '\' or xNN.
std::string escapeBytes(std::string_view s);
std::optional<std::string> unescapeBytes(std::string_view s);


}  // namespace memplan
