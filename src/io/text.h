// Text helpers for one-line messages.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memplan {

// Text from input files as it may appear in a message: valid, printable
// UTF-8 is kept; control characters and bytes that are not valid UTF-8
// become \xNN (a garbage header cannot garble a terminal). Cut after `max`
// input bytes with "...".
std::string printable(std::string_view s, std::size_t max = 200);

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

// The candidate closest to `word` by edit distance, if close enough to be
// what was meant (a typo, a missing or doubled letter); "" otherwise.
std::string closest(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace memplan
