// The order search in the reports: each graph's bound in the given order
// and in the order found (docs/report-format.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "memplan/plan.h"

namespace memplan::exportutil {

// Lines for the text report ("" when the search did not run).
std::string orderReportText(const Plan& plan, const Model* model, bool exact_bytes);
// The "order" member of the JSON report (null when the search did not run).
nlohmann::json orderReportJson(const Plan& plan);

}  // namespace memplan::exportutil
