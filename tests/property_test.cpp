// Property tests on random models (tests/support/random_graph.h).
//
// For every graph and every registered algorithm: the plan passes the
// verifier and the replay; the exact search is never above a heuristic; auto
// is deterministic and never above an algorithm it contains; a corrupted plan that the replay rejects is rejected by
// the verifier too. MEMPLAN_PROPERTY_GRAPHS sets the number of graphs
// (default 2000; nightly runs use more).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "memplan/io.h"
#include "memplan/plan.h"
#include "memplan/replay.h"
#include "memplan/verify.h"
#include "support/random_graph.h"

namespace memplan {
namespace {

using test::paramsForIndex;
using test::randomCase;
using test::RandomCase;

std::uint64_t graphCount(std::uint64_t fallback) {
  if (const char* env = std::getenv("MEMPLAN_PROPERTY_GRAPHS")) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0' && n > 0) return n;
  }
  return fallback;
}

// Failures reported in detail (the rest are counted): keeps a broken build's
// log readable. MEMPLAN_PROPERTY_REPORT raises it.
const int kMaxReported = [] {
  const char* env = std::getenv("MEMPLAN_PROPERTY_REPORT");
  return env ? std::max(1, std::atoi(env)) : 10;
}();

Bytes mainHeight(const Plan& plan) {
  const auto& b = plan.main().bufsizes;
  return std::accumulate(b.begin(), b.end(), Bytes{0});
}

std::string firstViolation(const VerifyResult& v) {
  return v.violations.empty() ? "" : v.violations.front().message;
}

// ExecuTorch defects that the ExecuTorch-exact algorithms reproduce on
// purpose (they must match ExecuTorch bit for bit); "" when none applies.
std::string executorchDefect(const Model& model, const Plan& plan) {
  for (const Tensor& t : model.tensors)
    if (t.alias == AliasKind::ShareWith) return "in-place results placed last (defect 3)";
  for (GraphId g = 1; g < static_cast<GraphId>(model.graphs.size()); ++g) {
    const auto& body = plan.graphs[g].bufsizes;
    const auto& parent = plan.graphs[model.graphs[g].parent].bufsizes;
    for (std::size_t m = 1; m < body.size(); ++m)
      if (body[m] > (m < parent.size() ? parent[m] : 0))
        return "body pool not reserved in a parent pool without specs";
  }
  return "";
}

// Plans `c` with `algorithm`; nullopt when planning refused (PlanError is
// allowed only for huge sizes: the sum may exceed the 2^62 limit).
// Effort is small: these tests are about correctness, benches about quality.
std::optional<Plan> planCase(const RandomCase& c, const std::string& algorithm, bool huge,
                             int& failures, double effort = 0.05) {
  PlanRequest request;
  request.algorithm = algorithm;
  request.options = c.options;
  request.params.effort = effort;
  try {
    return planModel(c.model, request);
  } catch (const PlanError& e) {
    if (!huge && failures++ < kMaxReported)
      ADD_FAILURE() << c.summary << ": " << algorithm << " refused: " << e.what();
  } catch (const InputError& e) {
    if (failures++ < kMaxReported)
      ADD_FAILURE() << c.summary << ": " << algorithm << " rejected the model: " << e.what();
  }
  return std::nullopt;
}

TEST(Property, GeneratorIsDeterministicAndValid) {
  for (std::uint64_t i = 0; i < 200; ++i) {
    const RandomCase a = randomCase(i, paramsForIndex(i));
    const RandomCase b = randomCase(i, paramsForIndex(i));
    ASSERT_NO_THROW(validateModel(a.model)) << a.summary;
    ASSERT_EQ(writeGraphJson(a.model), writeGraphJson(b.model)) << a.summary;
  }
  // Seeds give different models, with the features switched on.
  std::size_t views = 0, bodies = 0, share = 0, in_place = 0;
  for (std::uint64_t i = 0; i < 200; ++i) {
    const RandomCase c = randomCase(i);
    bodies += c.model.graphs.size() - 1;
    for (const Tensor& t : c.model.tensors) {
      views += t.alias == AliasKind::View;
      share += t.alias == AliasKind::ShareWith;
      in_place += t.alias == AliasKind::InPlace;
    }
  }
  EXPECT_GT(views, 50u);
  EXPECT_GT(bodies, 50u);
  EXPECT_GT(share, 20u);
  EXPECT_GT(in_place, 50u);
}

TEST(Property, EveryAlgorithmVerifiesAndReplays) {
  const std::vector<std::string> names = algorithmNames();
  ASSERT_FALSE(names.empty());
  const std::uint64_t graphs = graphCount(2000);
  int failures = 0;
  std::uint64_t plans = 0, refused = 0, replay_reads = 0, exact_checked = 0;
  const bool has_exact = makeAlgorithm("exact") != nullptr;
  std::map<std::string, std::uint64_t> failed_by;  // "algorithm: check" -> graphs
  std::map<std::string, std::uint64_t> known;      // ExecuTorch defects reproduced
  for (std::uint64_t i = 0; i < graphs; ++i) {
    const auto params = paramsForIndex(i);
    const RandomCase c = randomCase(i, params);
    std::map<std::string, Bytes> height;
    for (const std::string& name : names) {
      // Every 16th graph at full effort, so the default budgets run too.
      const std::optional<Plan> plan =
          planCase(c, name, params.huge_sizes, failures, i % 16 == 5 ? 1.0 : 0.05);
      if (!plan) {
        ++refused;
        if (!params.huge_sizes) ++failed_by[name + ": refused"];
        continue;
      }
      ++plans;
      const VerifyResult v = verifyPlan(*plan);
      ReplayOptions o;
      o.force_sparse = i % 8 == 7;  // both shadow kinds see every feature
      const ReplayResult r = replayPlan(c.model, *plan, o);
      replay_reads += r.reads;
      // Only valid plans of memplan's own algorithms count for the
      // exact-search comparison: ExecuTorch's may sit unaligned after an
      // unaligned reserved prefix (the verifier warns, as ExecuTorch does
      // it), which no aligned plan can match.
      if (v.ok() && r.ok() && !makeAlgorithm(name)->info().executorch_exact) height[name] = mainHeight(*plan);
      if ((!v.ok() || !r.ok()) && makeAlgorithm(name)->info().executorch_exact) {
        const std::string defect = executorchDefect(c.model, *plan);
        if (!defect.empty()) {
          ++known[name + ": " + defect];
          continue;
        }
      }
      if (!v.ok()) ++failed_by[name + ": verifier"];
      if (!v.ok() && failures++ < kMaxReported)
        ADD_FAILURE() << c.summary << ": " << name << ": verifier: " << firstViolation(v);
      if (!r.ok()) ++failed_by[name + ": replay"];
      if (!r.ok() && failures++ < kMaxReported)
        ADD_FAILURE() << c.summary << ": " << name << ": " << r.message;
    }
    if (has_exact && height.count("exact")) {
      ++exact_checked;
      for (const auto& [name, h] : height)
        if (height["exact"] > h && ++failed_by["exact above " + name] && failures++ < kMaxReported)
          ADD_FAILURE() << c.summary << ": exact needs " << height["exact"] << " bytes, " << name
                        << " " << h;
    }
  }
  std::printf("property: %llu graphs, %zu algorithms, %llu plans verified and replayed "
              "(%llu checked reads), %llu refused (huge sizes), %llu exact comparisons\n",
              static_cast<unsigned long long>(graphs), names.size(),
              static_cast<unsigned long long>(plans), static_cast<unsigned long long>(replay_reads),
              static_cast<unsigned long long>(refused),
              static_cast<unsigned long long>(exact_checked));
  for (const auto& [what, n] : known)
    std::printf("  known ExecuTorch defect, %s: %llu graphs\n", what.c_str(),
                static_cast<unsigned long long>(n));
  for (const auto& [what, n] : failed_by)
    std::printf("  FAILED %s: %llu graphs\n", what.c_str(), static_cast<unsigned long long>(n));
  EXPECT_GT(plans, graphs * names.size() * 9 / 10);
}

TEST(Property, AutoIsDeterministic) {
  ASSERT_TRUE(makeAlgorithm("auto"));
  const std::uint64_t graphs = graphCount(2000) / 8;
  int failures = 0;
  for (std::uint64_t i = 0; i < graphs && failures < kMaxReported; ++i) {
    const RandomCase c = randomCase(i * 8 + 3, paramsForIndex(i * 8 + 3));
    std::optional<Plan> a = planCase(c, "auto", true, failures);
    std::optional<Plan> b = planCase(c, "auto", true, failures);
    if (!a || !b) continue;
    a->planning_seconds = b->planning_seconds = 0;
    if (writePlanJson(*a, &c.model) != writePlanJson(*b, &c.model) && failures++ < kMaxReported)
      ADD_FAILURE() << c.summary << ": two auto runs gave different plan JSON";
  }
}

// auto is never larger than any algorithm it contains, pool by pool, at the
// same effort: first fit and best fit (run in full), ExecuTorch's greedy
// (when its plan is safe) and local_search (auto's first stages, run the
// same way). Graphs with control-flow bodies are left out: a body's arena
// becomes its parent's reserved prefix, so the parents' problems differ.
TEST(Property, AutoNeverAboveItsParts) {
  const std::uint64_t graphs = graphCount(2000) / 8;
  int failures = 0;
  std::uint64_t compared = 0;
  for (std::uint64_t i = 0; i < graphs && failures < kMaxReported; ++i) {
    auto params = paramsForIndex(i * 8 + 1);
    params.huge_sizes = false;
    const RandomCase c = randomCase(i * 8 + 1, params);
    if (c.model.graphs.size() != 1) continue;
    const double effort = i % 4 == 0 ? 0.3 : 0.05;
    const std::optional<Plan> a = planCase(c, "auto", false, failures, effort);
    if (!a) continue;
    for (const char* part : {"first_fit", "best_fit", "greedy", "local_search"}) {
      const std::optional<Plan> p = planCase(c, part, false, failures, effort);
      if (!p || p->main().pools.size() != a->main().pools.size()) continue;
      // ExecuTorch's plan only counts where it is safe and aligned as memplan
      // aligns (the verifier warns where ExecuTorch leaves a tensor unaligned).
      if (std::string(part) == "greedy") {
        const VerifyResult v = verifyPlan(*p);
        if (!v.ok() || !v.warnings.empty()) continue;
      }
      const bool greedy = std::string(part) == "greedy";
      for (std::size_t k = 0; k < p->main().pools.size(); ++k) {
        const PoolInfo& x = a->main().pools[k];
        const PoolInfo& y = p->main().pools[k];
        if (x.mem_id != y.mem_id) continue;
        // ExecuTorch sizes its shared objects by unaligned nbytes: count
        // the bytes its offsets use, as memplan counts them.
        Bytes other = y.size;
        if (greedy) {
          other = 0;
          for (const Allocation& al : p->main().allocations)
            if (al.mem_id == y.mem_id) other = std::max(other, al.offset + al.size);
          other += other > 0 ? p->extra_padding : 0;
        }
        ++compared;
        if (x.size > other && failures++ < kMaxReported)
          ADD_FAILURE() << c.summary << ": auto needs " << x.size << " bytes in pool " << x.mem_id
                        << ", " << part << " " << other;
      }
    }
  }
  std::printf("auto against its parts: %llu pool comparisons\n",
              static_cast<unsigned long long>(compared));
  EXPECT_GT(compared, graphs);
}

// Corrupt valid plans (move one allocation); the shadow kinds must agree,
// and whatever the replay rejects, the verifier must reject too.
TEST(Property, ReplayAndVerifierAgreeOnCorruptedPlans) {
  const std::uint64_t graphs = graphCount(2000) / 4;
  int failures = 0;
  std::uint64_t corrupted = 0, caught_by_replay = 0, caught_by_verifier = 0;
  for (std::uint64_t i = 0; i < graphs && failures < kMaxReported; ++i) {
    auto params = paramsForIndex(i);
    params.huge_sizes = false;
    const RandomCase c = randomCase(i + 1000003, params);
    std::optional<Plan> plan = planCase(c, "best_fit", false, failures);
    if (!plan) continue;
    test::Rng rng(i);
    GraphPlan& gp = plan->graphs[rng.below(plan->graphs.size())];
    if (gp.allocations.empty()) continue;
    Allocation& a = gp.allocations[rng.below(gp.allocations.size())];
    const Bytes pool = gp.bufsizes[a.mem_id];
    if (pool <= a.size) continue;
    const Bytes align = std::max<Bytes>(c.options.alignment, 1);
    a.offset = rng.below((pool - a.size) / align + 1) * align;
    ++corrupted;
    ReplayOptions sparse;
    sparse.force_sparse = true;
    const ReplayResult dense_r = replayPlan(c.model, *plan);
    const ReplayResult sparse_r = replayPlan(c.model, *plan, sparse);
    const VerifyResult v = verifyPlan(*plan);
    caught_by_replay += !dense_r.ok();
    caught_by_verifier += !v.ok();
    if (dense_r.message != sparse_r.message && failures++ < kMaxReported)
      ADD_FAILURE() << c.summary << ": dense replay: '" << dense_r.message << "', sparse: '"
                    << sparse_r.message << "'";
    if (!dense_r.ok() && v.ok() && failures++ < kMaxReported)
      ADD_FAILURE() << c.summary << ": replay found '" << dense_r.message
                    << "' but the verifier accepted the plan";
  }
  std::printf("corrupted plans: %llu, rejected by replay %llu, by verifier %llu\n",
              static_cast<unsigned long long>(corrupted),
              static_cast<unsigned long long>(caught_by_replay),
              static_cast<unsigned long long>(caught_by_verifier));
  EXPECT_GT(caught_by_replay, 0u);
}

}  // namespace
}  // namespace memplan
