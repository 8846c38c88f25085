// Text helpers for one-line messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace memplan {

// Text from input files as it may appear in a message: valid, printable
// UTF-8 is kept; control characters and bytes that are not valid UTF-8
// become \xNN (a garbage header cannot garble a terminal). Cut after `max`
// input bytes with "...".
std::string printable(std::string_view s, std::size_t max = 200);

// The candidate closest to `word` by edit distance, if close enough to be
// what was meant (a typo, a missing or doubled letter); "" otherwise.
std::string closest(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace memplan
