// SHA-256 (FIPS 180-4), for recording which file a plan was made from.
#pragma once

#include <string>
#include <string_view>

namespace memplan {

// Lower-case hex digest of `data`.
std::string sha256Hex(std::string_view data);

}  // namespace memplan
