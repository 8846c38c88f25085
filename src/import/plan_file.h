// Plan files: what the reader (import/plan_json_reader.cpp) and the writer
// (export/plan_json_writer.cpp) must compute alike, so that `memplan verify`
// maps a plan back onto the specs recomputed from the input.
//
// An allocation of a model's plan is identified by its tensor (`tensor`, the
// TensorId of the storage's base), with the tensor's name beside it for
// people (`id`). Otherwise (spec lists, buffer lists, and plans of versions
// 1 to 3) by its spec's id: the integer id of an ExecuTorch spec list case
// (spec names "id N"), else the name when it is unique in the graph, else
// null plus the spec index. Names are written byte-exactly
// (jsontext::textJson): two names never collide in a plan file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "memplan/plan.h"
#include "memplan/specs.h"

namespace memplan::planfile {

using SpecKey = std::variant<std::monostate, std::int64_t, std::string>;

// The integer of a spec list case's name "id N"; nullopt for any other name.
std::optional<std::int64_t> specListId(const std::string& name);
// Each spec's key in a plan file (see above).
std::vector<SpecKey> specKeys(const GraphSpecs& specs);

// The sections a plan file derives from the plan: the writer writes them
// and the reader checks that a file's copy equals what its plan gives.
nlohmann::ordered_json methodsJson(const Plan& plan);
// null when the methods share no state.
nlohmann::ordered_json sharedStateJson(const Plan& plan);
nlohmann::ordered_json bufferDeviceJson(const GraphPlan& g);

}  // namespace memplan::planfile
