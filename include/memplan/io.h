// Readers and writers. Every reader throws InputError with one line naming
// the file and the place (line, field, tensor, byte offset); none crashes,
// hangs or allocates without bound on malformed input.
#pragma once

#include <filesystem>
#include <memory>
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
  bool per_device = false;           // ExecuTorch's enable_non_cpu_memory_planning
  GraphSpecs specs;                  // one spec per entry, lifetimes and devices given
  std::vector<std::int64_t> ids;     // spec index -> id in the file
};
SpecList readSpecListJson(std::string_view text, const std::string& source_name);

// A spec list handed over in code, as parallel arrays (ExecuTorch's
// plug-in passes its specs so): entry i is spec "specs[i]" with id i.
struct SpecArrays {
  std::vector<Bytes> nbytes;
  std::vector<TimeValue> first, last;        // closed lifetimes [first, last]
  std::vector<std::int64_t> mem_id;          // 0: the algorithm chooses; else 1..kMaxMemId
  std::vector<std::int64_t> inplace_base;    // index of the spec whose storage it reuses; -1: none
  std::string algorithm = "greedy";
  Bytes alignment = 16;
  Bytes extra_padding = 0;
  std::vector<Bytes> input_mem_buffer_sizes;
};
// The spec list of `arrays`, checked as the reader checks a file: arrays of
// one length, sizes and times within memplan's limits, lifetimes with
// first <= last, mem_ids in range, in-place bases that exist and form no
// cycle. Throws InputError naming the place ("specs[3].lifetime: ...").
SpecList specListFromArrays(const SpecArrays& arrays);

// ---- MiniMalloc CSV: id,lower,upper,size[,alignment][,hint][,gaps][,offset] ----
// Also MiniMalloc's other column names (buffer, buffer_id, start, begin, and
// end: an inclusive upper bound). An `offset` column pins buffers
// (Buffer::fixed_offset) when the list is planned; a solution file's
// `offset` column is the solution (memplan::readPlan).
struct BufferList {
  std::vector<std::string> ids;      // as written in the file
  PoolProblem problem;               // lifetimes half-open [lower, upper)
  std::vector<std::optional<Offset>> offsets;  // `offset` column, if any
};
BufferList readMiniMallocCsv(std::string_view text, const std::string& source_name);
// Writes the list (hint and gaps columns when any buffer has them) with
// `offsets` as the offset column; with no offsets, the pins, if any.
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
  OrderResult order;                 // the order search's result, if it ran
  bool order_applied = false;        // the plan is made for order's node lists
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
// Whole file into memory; refuses files above `max_bytes`. Inside an open
// OutputTransaction, the file is remembered as an input of the run.
std::string readFile(const std::filesystem::path& path,
                     std::uint64_t max_bytes = std::uint64_t{4} << 30);
// Writes `data` to `path`, never partially: to a temporary file beside the
// target, synced, then renamed over it. A symlink is written through (its
// target replaced, the link kept); a character device or FIFO (/dev/null,
// /dev/stdout, a pipe) is written in place. Refused, with InputError naming
// the path: a directory, a block device or socket, a read-only file. Inside
// an OutputTransaction open on this thread, the file is staged there and
// written by its commit().
void writeFileAtomic(const std::filesystem::path& path, std::string_view data);

// The files one run writes (a CLI command): all of them or none.
//
//   OutputTransaction outputs;      // readFile and writeFileAtomic now use it
//   ... read inputs, plan, writeFileAtomic(a, ...), writeFileAtomic(b, ...)
//   outputs.commit();               // a and b appear together
//
// stage() checks the target (as writeFileAtomic; also refused: a file the
// run read, compared by device and inode, and a file another output of the
// run names) and writes a temporary file beside it. commit() writes the
// streams in place, then renames every temporary over its target with
// fatal signals held back, so that they happen all together. Destroyed
// without commit() (an exception, a run that failed), it removes its
// temporaries and leaves every target as it was. Temporaries are also
// removed at exit() and, after removeTemporariesOnSignals(), on SIGINT,
// SIGTERM, SIGHUP, SIGQUIT and SIGPIPE. Transactions nest (the innermost is
// current) and belong to the thread that made them.
class OutputTransaction {
 public:
  OutputTransaction();
  ~OutputTransaction();
  OutputTransaction(const OutputTransaction&) = delete;
  OutputTransaction& operator=(const OutputTransaction&) = delete;

  // A file the run reads: never one of its outputs (readFile calls this).
  void protect(const std::filesystem::path& input);
  void stage(const std::filesystem::path& path, std::string_view data);
  void commit();
  // Outputs staged and not yet written.
  std::size_t pending() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend std::string readFile(const std::filesystem::path&, std::uint64_t);
};

// For programs (the CLI): fatal signals remove memplan's temporary files
// before the process dies of them. The handlers are installed only while
// temporaries exist (previous handlers are restored after); a signal the
// program ignores stays ignored. A library leaves signals to its program.
void removeTemporariesOnSignals(bool on = true);

}  // namespace memplan
