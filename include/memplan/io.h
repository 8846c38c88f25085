// Readers and writers. Every reader throws InputError with one line naming
// the file and the place (line, field, tensor, byte offset); none crashes,
// hangs or allocates without bound on malformed input.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/graph.h"
#include "memplan/plan.h"

namespace memplan {

// ---- memplan graph JSON (docs/graph-format.md) ----
Model readGraphJson(std::string_view text, const std::string& source_name);
std::string writeGraphJson(const Model& model);

// ---- ExecuTorch spec list (the conformance case format) ----
struct SpecList {
  std::string name;
  std::string algorithm;             // one of ExecuTorch's: "greedy", "naive", ...
  Bytes alignment = 16;
  Bytes extra_padding = 0;
  std::vector<Bytes> input_mem_buffer_sizes;  // empty = null
  GraphSpecs specs;                  // one spec per entry, lifetimes given
  std::vector<std::int64_t> ids;     // spec index -> id in the file
};
SpecList readSpecListJson(std::string_view text, const std::string& source_name);

// ---- MiniMalloc CSV: id,lower,upper,size[,alignment][,offset] ----
struct BufferList {
  std::vector<std::string> ids;      // as written in the file
  PoolProblem problem;               // lifetimes half-open [lower, upper)
  std::vector<std::optional<Offset>> offsets;  // `offset` column, if any
};
BufferList readMiniMallocCsv(std::string_view text, const std::string& source_name);
std::string writeMiniMallocCsv(const BufferList& list, const std::vector<Offset>& offsets);

// ---- plan JSON (docs/plan-format.md) ----
std::string writePlanJson(const Plan& plan, const Model* model);
struct PlanJsonOptions {
  // planning_seconds varies run to run; drop it for byte-identical files.
  bool include_timing = true;
};
std::string writePlanJson(const Plan& plan, const Model* model, const PlanJsonOptions& options);
// What a plan file says about how it was made: its input's file and how
// it was read, and the request (algorithm, options, padding, search
// settings). Plans of version 1 record no source nor import options.
// Throws InputError naming the file and the field.
struct PlanProvenance {
  std::optional<SourceInfo> source;
  ImportOptions import_options;
  PlanRequest request;
};
PlanProvenance readPlanProvenance(std::string_view text, const std::string& source_name);
// Reads a plan written by writePlanJson back onto `skeleton`: a Plan whose
// graphs hold the specs computed from the input (and the options the plan
// was made with) but no allocations. Fills bufsizes, pools and allocations
// (matched by id); throws InputError on any mismatch (unknown id, graph
// count, pool count) naming the file and the field. Used by `memplan verify`
// and `memplan replay`.
Plan readPlanJson(std::string_view text, const std::string& source_name, Plan skeleton);

// ---- files ----
// Whole file into memory; refuses files above `max_bytes`.
std::string readFile(const std::filesystem::path& path,
                     std::uint64_t max_bytes = std::uint64_t{4} << 30);
// Writes to a temporary file beside `path`, then renames: never partial.
void writeFileAtomic(const std::filesystem::path& path, std::string_view data);

}  // namespace memplan
