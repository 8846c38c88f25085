// What the MiniMalloc CSV reader (minimalloc_csv.cpp) tells beside the
// buffer list it reads (memplan/io.h).
#pragma once

#include <string_view>

namespace memplan {

// Whether the header of a CSV buffer list (its first line that is not
// blank) names `column`: a file without rows has no values to show it.
bool csvHasColumn(std::string_view text, std::string_view column);

}  // namespace memplan
