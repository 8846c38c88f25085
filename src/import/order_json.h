// The order search's record in plan JSON ("order", docs/plan-format.md):
// each graph's bounds before and after, and, when the plan was made for a
// new order, its node list.
#pragma once

#include <nlohmann/json.hpp>

#include "support/json_text.h"
#include "memplan/plan.h"

namespace memplan {

// null when the search did not run.
nlohmann::ordered_json orderJson(const Plan& plan);
// Reads "order" back; throws InputError naming the field.
void readOrderJson(const jsontext::Fields& fields, const nlohmann::json& value, OrderResult& order,
                   bool& applied);

}  // namespace memplan
