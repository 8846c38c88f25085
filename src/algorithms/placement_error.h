// The PlanError of a buffer that cannot be placed: it names the buffer, so
// that a caller who knows where the buffer comes from (a CSV row) can say so.
#pragma once

#include <string>
#include <utility>

#include "memplan/types.h"

namespace memplan {

class PlacementError : public PlanError {
 public:
  PlacementError(const std::string& what, std::string buffer)
      : PlanError(what), buffer_(std::move(buffer)) {}
  const std::string& buffer() const { return buffer_; }

 private:
  std::string buffer_;
};

}  // namespace memplan
