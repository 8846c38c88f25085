// Replay on small hostile inputs (tests/data/hostile-replay): its work
// follows tensors and steps, never bytes; its counters saturate; it accepts
// exactly the pinned overlaps verify accepts. And every command's failed
// standard output is an error.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>

#include "memplan/memplan.h"
#include "verify/replay.h"
#include "support/test_support.h"

namespace memplan::test {
namespace {

namespace fs = std::filesystem;

fs::path hostile(const std::string& name) { return dataDir() / "hostile-replay" / name; }

ReplayResult planAndReplay(const fs::path& path, std::optional<Bytes> alignment = std::nullopt) {
  const Input in = readInput(path);
  PlanRequest request;
  if (alignment) request.options.alignment = *alignment;
  const Plan p = plan(in, request);
  EXPECT_TRUE(verify(in, p).ok()) << path;
  return replay(in, p);
}

// A shadow visits a few cells or runs per write and check however large the
// tensor: a 128 MiB buffer next to a 1-byte one once cost 2^27 cells each.
void expectWorkFollowsOperations(const ReplayResult& r) {
  EXPECT_GT(r.shadow_work, 0u);
  EXPECT_LE(r.shadow_work, 4 * (r.writes + r.reads));
}

TEST(HostileReplay, HugeBuffersNextToAOneByteBufferCostTheirCount) {
  const ReplayResult r = planAndReplay(hostile("slow.csv"));
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.writes, 301u);
  EXPECT_EQ(r.reads, 301u);
  EXPECT_EQ(r.steps, 300u);
  expectWorkFollowsOperations(r);
}

TEST(HostileReplay, HugeTensorsOfAGraphAtAlignmentOneCostTheirCount) {
  const ReplayResult r = planAndReplay(hostile("rs200.json"), Bytes{1});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.writes, 202u);
  EXPECT_EQ(r.reads, 605u);
  EXPECT_EQ(r.steps, 201u);
  expectWorkFollowsOperations(r);
}

TEST(HostileReplay, AThousandReadsOfA256MiBTensorCostAThousandChecks) {
  const ReplayResult r = planAndReplay(hostile("manyreads1000.tflite"));
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.writes, 2u);
  EXPECT_EQ(r.reads, 2003u);
  EXPECT_EQ(r.steps, 1u);
  expectWorkFollowsOperations(r);
}

// The same plans through the command line (they once took 9 to 26 s each).
TEST(HostileReplay, CliReplaysTheHugeTensorFilesQuickly) {
  const fs::path dir = tempDir("hostile-replay-cli");
  struct Case {
    std::string file, flags, expected;
  };
  for (const Case& c : {Case{"slow.csv", "", "OK: 301 writes, 301 reads checked over 300 steps\n"},
                        Case{"rs200.json", "--alignment 1", "OK: 202 writes, 605 reads checked over 201 steps\n"},
                        Case{"manyreads1000.tflite", "", "OK: 2 writes, 2003 reads checked over 1 steps\n"}}) {
    const fs::path out = dir / (c.file + (c.file.ends_with(".csv") ? ".sol.csv" : ".plan.json"));
    const std::string in = hostile(c.file).string();
    ASSERT_EQ(runCli("plan -q " + c.flags + " " + in + " -o " + out.string()).exit_code, 0) << c.file;
    const CliResult r = runCli("replay " + in + " " + out.string());
    EXPECT_EQ(r.exit_code, 0) << c.file << ": " << r.err;
    EXPECT_EQ(r.out, c.expected) << c.file;
  }
}

// Bodies run 4^32 and 4^40 times: the counts saturate, they do not wrap.
TEST(HostileReplay, CountsOfExponentialBodiesSaturate) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  for (const char* name : {"cd32.json", "if_dag_40.tflite"}) {
    const ReplayResult r = planAndReplay(hostile(name));
    ASSERT_TRUE(r.ok()) << name << ": " << r.message;
    EXPECT_EQ(r.writes, kMax) << name;
    EXPECT_EQ(r.reads, kMax) << name;
    EXPECT_EQ(r.steps, kMax) << name;
  }
  const fs::path dir = tempDir("hostile-replay-counts");
  const std::string in = hostile("cd32.json").string(), out = (dir / "p.json").string();
  ASSERT_EQ(runCli("plan -q " + in + " -o " + out).exit_code, 0);
  EXPECT_EQ(runCli("replay " + in + " " + out).out,
            "OK: 18446744073709551615 writes, 18446744073709551615 reads checked over "
            "18446744073709551615 steps\n");
}

// ADD(a, b) -> c, all three pinned at offset 0 by a TFLite Micro offline
// plan: with --allow-pinned-overlap plan, verify and replay all accept it;
// without, plan refuses it and verify and replay both reject the carried plan.
TEST(HostileReplay, PinnedOverlapVerifyAndReplayAgree) {
  const fs::path dir = tempDir("hostile-replay-pinned");
  const std::string in = hostile("offl_overlap.tflite").string(), out = (dir / "oo.json").string();
  ASSERT_EQ(runCli("plan -q --allow-pinned-overlap " + in + " -o " + out).exit_code, 0);
  EXPECT_EQ(runCli("verify " + in + " " + out).out, "OK: 3 allocations verified\n");
  const CliResult replayed = runCli("replay " + in + " " + out);
  EXPECT_EQ(replayed.exit_code, 0) << replayed.out;
  EXPECT_EQ(replayed.out, "OK: 3 writes, 8 reads checked over 1 steps\n");
  EXPECT_EQ(runCli("verify --allow-pinned-overlap " + in).exit_code, 0);
  EXPECT_EQ(runCli("replay --allow-pinned-overlap " + in).exit_code, 0);

  const CliResult refused = runCli("plan -q " + in + " -o " + (dir / "no.json").string());
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("share bytes while both alive"), std::string::npos) << refused.err;
  EXPECT_EQ(runCli("verify " + in).exit_code, 1);
  const CliResult clobbered = runCli("replay " + in);
  EXPECT_EQ(clobbered.exit_code, 1);
  EXPECT_NE(clobbered.out.find("CLOBBERED: replay: tensor 'main_t0'"), std::string::npos) << clobbered.out;
}

// The flag lets pinned tensors share bytes, nothing more: a tensor that is
// not pinned over a live pinned one is refused by both checkers.
TEST(HostileReplay, PinnedOverlapAllowsNoFreeTensorOverAPinnedOne) {
  const Input in = readInput(hostile("offl_overlap.tflite"));
  Plan p = carriedPlan(in, true);
  ASSERT_TRUE(verify(in, p).ok());
  ASSERT_TRUE(replay(in, p).ok());
  // The output c (written by the ADD while it reads a and b) unpinned.
  GraphPlan& main = p.graphs[0];
  bool unpinned = false;
  for (Spec& s : main.specs.specs) {
    if (s.name != "main_t2") continue;
    s.offset.reset();
    unpinned = true;
  }
  ASSERT_TRUE(unpinned);
  EXPECT_FALSE(verify(in, p).ok());
  const ReplayResult r = replay(in, p);
  ASSERT_EQ(r.issue, ReplayIssue::Clobber) << r.message;
  EXPECT_EQ(r.writer, "main_t2");
}

// Runs the CLI with standard output sent to `target` (a shell redirection).
CliResult runCliTo(const std::string& args, const std::string& redirect) {
  const fs::path dir = tempDir("hostile-stdout");
  const fs::path err = dir / "stderr";
  const std::string cmd = std::string(MEMPLAN_CLI) + " " + args + " " + redirect + " 2>" + err.string() +
                          " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = readText(err);
  fs::remove_all(dir);
  return r;
}

// A full disk or a closed standard output loses the command's product:
// exit 2 with one line naming standard output, for every command.
TEST(HostileReplay, FailedStandardOutputIsAnErrorForEveryCommand) {
  const fs::path dir = tempDir("hostile-stdout-cmds");
  const std::string model = (sourceDir() / "examples" / "graphs" / "mlp.json").string();
  const std::string plan_path = (dir / "mlp.plan.json").string();
  ASSERT_EQ(runCli("plan -q " + model + " -o " + plan_path).exit_code, 0);
  for (const std::string& args :
       {"import " + model, "plan " + model, "plan --json " + model, "verify " + model + " " + plan_path,
        "replay " + model + " " + plan_path, "report " + model + " " + plan_path, std::string("algorithms"),
        std::string("--help")}) {
    const CliResult full = runCliTo(args, ">/dev/full");
    EXPECT_EQ(full.exit_code, 2) << args;
    EXPECT_EQ(full.err, "memplan: standard output: write failed: No space left on device\n") << args;
    const CliResult closed = runCliTo(args, ">&-");
    EXPECT_EQ(closed.exit_code, 2) << args;
    EXPECT_EQ(closed.err, "memplan: standard output: write failed: Bad file descriptor\n") << args;
  }
  // The run's files are written all or none: none when stdout failed.
  const fs::path lost = dir / "lost.plan.json";
  EXPECT_EQ(runCliTo("plan --json " + model + " -o " + lost.string(), ">/dev/full").exit_code, 2);
  EXPECT_FALSE(fs::exists(lost));
  EXPECT_EQ(runCliTo("plan --json " + model + " -o " + lost.string(), ">/dev/null").exit_code, 0);
  EXPECT_TRUE(fs::exists(lost));
}

}  // namespace
}  // namespace memplan::test
