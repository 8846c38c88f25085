// MiniMalloc's own test cases (google/minimalloc: tests/converter_test.cc,
// tests/solver_test.cc, tests/validator_test.cc), translated into memplan's
// terms: the same problems as CSV text, planned or verified by memplan. A
// MiniMalloc capacity is a pool capacity (PlanOptions::capacities[1]);
// "infeasible" is memplan's CapacityError; the validator's verdicts are the
// verifier's (and the replay's). docs/peers.md has the table.
#include <gtest/gtest.h>

#include "memplan/memplan.h"
#include "support/test_support.h"

namespace memplan {
namespace {

BufferList csv(const std::string& text) { return readMiniMallocCsv(text, "mm.csv"); }

std::string csvError(const std::string& text) {
  try {
    csv(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

struct Row {
  std::string id;
  TimeValue start, end;
  Bytes size;
  Bytes alignment = 1;
  std::vector<Gap> gaps = {};
  std::optional<Offset> offset = std::nullopt;
};

void expectRows(const BufferList& list, const std::vector<Row>& rows) {
  ASSERT_EQ(list.problem.buffers.size(), rows.size());
  ASSERT_EQ(list.ids.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i));
    const Buffer& b = list.problem.buffers[i];
    EXPECT_EQ(list.ids[i], rows[i].id);
    EXPECT_EQ(b.start, rows[i].start);
    EXPECT_EQ(b.end, rows[i].end);
    EXPECT_EQ(b.size, rows[i].size);
    EXPECT_EQ(b.alignment, rows[i].alignment);
    EXPECT_EQ(b.gaps, rows[i].gaps);
    EXPECT_EQ(b.fixed_offset, rows[i].offset);
  }
}

Gap gap(TimeValue start, TimeValue end) { return Gap{start, end, std::nullopt}; }
Gap gap(TimeValue start, TimeValue end, Bytes lo, Bytes hi) {
  return Gap{start, end, std::pair<Bytes, Bytes>{lo, hi}};
}

// ---- converter_test.cc ------------------------------------------------------

TEST(PeersMiniMallocConverter, FromCsvProblemOnly) {
  expectRows(csv("lower,size,id,upper\n6,18,1,12\n5,15,0,10\n"),
             {{"1", 6, 12, 18}, {"0", 5, 10, 15}});
}

TEST(PeersMiniMallocConverter, FromCsvWithAlignment) {
  expectRows(csv("begin,size,buffer,upper,alignment\n6,18,1,12,2\n5,15,0,10,1\n"),
             {{"1", 6, 12, 18, 2}, {"0", 5, 10, 15, 1}});
}

TEST(PeersMiniMallocConverter, FromCsvWithEmptyGaps) {
  expectRows(csv("start,size,buffer_id,upper,alignment,gaps\n6,18,1,12,2,\n5,15,0,10,1,\n"),
             {{"1", 6, 12, 18, 2}, {"0", 5, 10, 15, 1}});
}

TEST(PeersMiniMallocConverter, FromCsvWithGaps) {
  // MiniMalloc keeps gaps outside the lifetime ([9, 11) and [12, 14) of a
  // buffer alive in [5, 10)); memplan clips them to it: they mean nothing
  // where the buffer is not alive.
  expectRows(csv("start,size,buffer,upper,alignment,gaps\n"
                 "6,18,1,12,2,7-9 \n5,15,0,10,1,9-11 12-14@2:13\n"),
             {{"1", 6, 12, 18, 2, {gap(7, 9)}}, {"0", 5, 10, 15, 1, {gap(9, 10)}}});
}

TEST(PeersMiniMallocConverter, FromCsvWithEndColumn) {
  // `end` is inclusive: upper = end + 1, gap ends too.
  expectRows(csv("start,size,buffer,end,alignment,gaps\n6,18,1,11,2,7-8 \n5,15,0,9,1,9-10 12-13\n"),
             {{"1", 6, 12, 18, 2, {gap(7, 9)}}, {"0", 5, 10, 15, 1, {gap(9, 10)}}});
}

TEST(PeersMiniMallocConverter, FromCsvWithSolution) {
  // In a problem, offsets are fixed (pinned) buffers.
  const BufferList list = csv("start,size,offset,buffer,upper\n6,18,21,1,12\n5,15,1,0,10\n");
  expectRows(list, {{"1", 6, 12, 18, 1, {}, 21}, {"0", 5, 10, 15, 1, {}, 1}});
  EXPECT_EQ(list.offsets, (std::vector<std::optional<Offset>>{21, 1}));
}

TEST(PeersMiniMallocConverter, FromCsvBufferIdWeirdAndStringIds) {
  expectRows(csv("start,size,buffer_id,upper\n6,18,1,12\n5,15,0,10\n"),
             {{"1", 6, 12, 18}, {"0", 5, 10, 15}});
  expectRows(csv("start,size,buffer,upper\n6,18,20,12\n5,15,10,10\n"),
             {{"20", 6, 12, 18}, {"10", 5, 10, 15}});
  expectRows(csv("start,size,buffer,upper\n6,18,Big,12\n5,15,Little,10\n"),
             {{"Big", 6, 12, 18}, {"Little", 5, 10, 15}});
}

TEST(PeersMiniMallocConverter, BogusInputsAreRefusedNamingThePlace) {
  EXPECT_EQ(csvError("start,size,buffer,upper\na,b,c,d\ne,f,g,h\n"),
            "mm.csv:2: column 'start': expected a non-negative integer, got 'a'");
  EXPECT_EQ(csvError("start,size,offset,buffer,upper\n6,18,a,1,12\n5,15,b,0,10\n"),
            "mm.csv:2: column 'offset': expected a non-negative integer, got 'a'");
  EXPECT_EQ(csvError("start,size,buffer,upper,gaps\n6,18,1,12,1-2-3\n5,15,0,10,\n"),
            "mm.csv:2: column 'gaps': '1-2-3' is not L-U or L-U@lo:hi with non-negative integers");
  EXPECT_EQ(csvError("start,size,buffer,upper,gaps\n6,18,1,12,A-B\n5,15,0,10,\n"),
            "mm.csv:2: column 'gaps': 'A-B' is not L-U or L-U@lo:hi with non-negative integers");
  EXPECT_EQ(csvError("start,size,upper\n6,18,1,12\n5,15,10\n"), "mm.csv:1: missing column 'id'");
  EXPECT_EQ(csvError("start,size,offset,buffer,upper,upper\n6,18,21,1,12\n5,15,1,0,10\n"),
            "mm.csv:1: duplicate column 'upper'");
  EXPECT_EQ(csvError("start,size,offset,buffer,upper\n6,18,21,1,12\n5,15,1,0,10,100\n"),
            "mm.csv:3: expected 5 cells, got 6");
  // Two names of one column are a duplicate too.
  EXPECT_EQ(csvError("id,buffer,lower,upper,size\n"),
            "mm.csv:1: duplicate column 'buffer' (another name of 'id')");
}

// MiniMalloc's writer output (its ToCsv tests), read and written back by
// memplan byte for byte.
TEST(PeersMiniMallocConverter, ItsWriterOutputReadsAndWritesBackUnchanged) {
  const char* kFiles[] = {
      "id,lower,upper,size,alignment,gaps\n0,5,10,15,1,\n1,6,12,18,2,7-8 9-10@1:17\n",  // ToCsv
      "id,lower,upper,size,gaps\n0,5,10,15,\n1,6,12,18,7-8 9-10\n",      // WithoutAlignment
      "id,lower,upper,size,alignment\n0,5,10,15,1\n1,6,12,18,2\n",       // WithoutGaps
      "id,lower,upper,size,alignment,gaps,offset\n0,5,10,15,1,,1\n1,6,12,18,2,7-8 9-10,21\n",
      "id,lower,upper,size,alignment,gaps\n10,5,10,15,1,\n20,6,12,18,2,7-8 9-10\n",  // WeirdIDs
      "id,lower,upper,size,alignment,gaps\nLittle,5,10,15,1,\nBig,6,12,18,2,7-8 9-10\n",
      "id,lower,upper,size,hint,gaps\na,0,4,8,-1,\nb,1,3,8,16,1-2@0:4\n",  // hint
  };
  for (const char* text : kFiles) {
    SCOPED_TRACE(text);
    EXPECT_EQ(writeMiniMallocCsv(csv(text), {}), text);
  }
  const BufferList gapped = csv(kFiles[0]);
  EXPECT_EQ(gapped.problem.buffers[1].gaps, (std::vector<Gap>{gap(7, 8), gap(9, 10, 1, 17)}));
  const BufferList hinted = csv(kFiles[6]);
  EXPECT_EQ(hinted.problem.buffers[0].hint, std::nullopt);  // -1: none
  EXPECT_EQ(hinted.problem.buffers[1].hint, std::optional<Offset>(16));
  // ToCsvOldFormat: `start`/`end`, ends inclusive; read as the new format.
  const BufferList old = csv("id,start,end,size,alignment,gaps\nLittle,5,9,15,1,\nBig,6,11,18,2,7-7 9-9\n");
  EXPECT_EQ(writeMiniMallocCsv(old, {}), kFiles[5]);
}

// ---- solver_test.cc -----------------------------------------------------------

// Plans `text` (auto) within `capacity`: the pool size, or nullopt when
// memplan finds it does not fit (CapacityError).
std::optional<Bytes> fit(const std::string& text, Bytes capacity, Plan* out = nullptr) {
  const Input in = Input::fromBuffers(csv(text));
  PlanRequest r;
  r.options.capacities = {std::nullopt, capacity};
  try {
    Plan p = plan(in, r);
    const VerifyResult v = verify(in, p);
    EXPECT_TRUE(v.ok()) << v.violations.front().message;
    EXPECT_TRUE(replay(in, p).ok());
    const Bytes size = p.main().bufsizes.size() > 1 ? p.main().bufsizes[1] : 0;
    if (out) *out = std::move(p);
    return size;
  } catch (const CapacityError&) {
    return std::nullopt;
  }
}

const char* kHeader = "id,lower,upper,size\n";

TEST(PeersMiniMallocSolver, InfeasibleProblemsDoNotFit) {
  EXPECT_EQ(fit(std::string(kHeader) + "a,0,2,3\n", 2), std::nullopt);              // BufferTooBig
  EXPECT_EQ(fit(std::string(kHeader) + "a,0,2,2\nb,0,2,2\n", 3), std::nullopt);      // Trivial
  EXPECT_EQ(fit(std::string(kHeader) +                                                // Tricky
                    "a,0,1,3\nb,0,3,1\nc,4,5,3\nd,2,5,1\ne,1,2,2\nf,3,4,2\ng,1,4,1\n",
                4),
            std::nullopt);
}

TEST(PeersMiniMallocSolver, FeasibleProblemsFit) {
  EXPECT_EQ(fit(kHeader, 0), 0u);                                                   // EmptyProblem
  EXPECT_EQ(fit(std::string(kHeader) + "a,0,2,2\n", 2), 2u);                        // SingleBuffer
  EXPECT_EQ(fit(std::string(kHeader) + "a,0,2,2\nb,1,3,2\n", 4), 4u);               // TwoBuffers
  EXPECT_EQ(fit(std::string(kHeader) + "a,1,2,1\nb,0,2,1\nc,2,3,2\nd,1,3,1\ne,0,1,2\n", 3),
            3u);                                                                    // FiveBuffers
  EXPECT_EQ(fit(std::string(kHeader) + "a,0,2,2\nb,1,3,2\nc,3,5,2\nd,4,6,2\n", 4), 4u);  // TwoPartitions
  EXPECT_EQ(fit("id,lower,upper,size,alignment\na,0,2,1,2\nb,0,2,1,2\n", 4), 4u);  // EvenAlignment
}

TEST(PeersMiniMallocSolver, FixedBuffers) {
  // FixedBufferFeasible: c pinned at 1 (an `offset` cell in the problem).
  Plan p;
  EXPECT_EQ(fit("id,lower,upper,size,offset\na,1,2,1,\nb,0,2,1,\nc,2,3,2,1\nd,1,3,1,\ne,0,1,2,\n", 3,
                &p),
            3u);
  ASSERT_EQ(p.main().allocations.size(), 5u);
  EXPECT_EQ(p.main().allocations[2].offset, 1u);
  // FixedBufferInfeasible: a pinned at 0 leaves no room (memplan used to
  // ignore the offset column and call this a fit).
  EXPECT_EQ(fit("id,lower,upper,size,offset\na,1,2,1,0\nb,0,2,1,\nc,2,3,2,\nd,1,3,1,\ne,0,1,2,\n", 3),
            std::nullopt);
}

// Gaps need an algorithm that honours them (AlgorithmInfo::honours_gaps);
// without one the buffers hold all their bytes and these do not fit.
TEST(PeersMiniMallocSolver, BuffersWithGapsFit) {
  EXPECT_EQ(fit("id,lower,upper,size,gaps\na,0,4,2,1-3\nb,1,3,2,\n", 2), 2u);  // BuffersWithGaps
  EXPECT_EQ(fit("id,lower,upper,size,gaps\na,0,10,2,0-5@0:1\nb,0,10,2,5-10@1:2\n", 3),
            3u);  // Tetris
  EXPECT_EQ(fit("id,lower,upper,size,gaps\n"
                "a,0,108,30,36-72@10:30 72-108@20:30\n"
                "b,36,144,50,36-72@20:30 72-108@10:40\n"
                "c,84,144,42,114-129@0:28 129-144@0:14\n"
                "d,84,129,42,99-114@14:42 114-129@28:42\n"
                "e,99,144,70,99-114@28:42 114-129@14:56\n"
                "f,0,144,30,72-108@0:20 108-144@0:10\n",
                144),
            144u);  // Stairs
}

// ---- validator_test.cc --------------------------------------------------------

enum class Verdict { Good, BadSolution, BadFixed, BadOffset, BadOverlap, BadAlignment };

// Checks `solution` offsets (one per row, or fewer) for `problem` within
// `capacity`, as `memplan verify --capacity 1=CAPACITY` does; the replay must
// agree.
Verdict validate(const std::string& problem, const std::vector<std::string>& offsets, Bytes capacity) {
  const Input in = Input::fromBuffers(csv(problem));
  std::string solution = "id,lower,upper,size,offset\n";
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    const Buffer& b = in.buffers()->problem.buffers[i];
    solution += in.buffers()->ids[i] + "," + std::to_string(b.start) + "," + std::to_string(b.end) +
                "," + std::to_string(b.size) + "," + offsets[i] + "\n";
  }
  Plan p;
  try {
    p = readPlan(solution, "solution.csv", in);
  } catch (const InputError& e) {
    const std::string what = e.what();
    if (what.find("rows do not match") != std::string::npos) return Verdict::BadSolution;
    if (what.find("column 'offset'") != std::string::npos) return Verdict::BadOffset;
    ADD_FAILURE() << what;
    return Verdict::BadSolution;
  }
  p.options.capacities = {std::nullopt, capacity};
  const VerifyResult v = verify(in, p);
  const ReplayResult r = replay(in, p);
  EXPECT_EQ(v.ok(), r.ok()) << (v.ok() ? r.message : v.violations[0].message);
  if (v.ok()) return Verdict::Good;
  const std::string& m = v.violations[0].message;
  if (m.find("is pinned at") != std::string::npos) return Verdict::BadFixed;
  if (m.find("capacity") != std::string::npos) return Verdict::BadOffset;
  if (m.find("share bytes") != std::string::npos) return Verdict::BadOverlap;
  if (m.find("not aligned") != std::string::npos) return Verdict::BadAlignment;
  ADD_FAILURE() << m;
  return Verdict::BadSolution;
}

TEST(PeersMiniMallocValidator, GoodSolutions) {
  EXPECT_EQ(validate("id,lower,upper,size\na,0,1,2\nb,1,3,1\nc,2,4,1\nd,3,5,1\n", {"0", "0", "1", "0"}, 2),
            Verdict::Good);
  EXPECT_EQ(validate("id,lower,upper,size,gaps\na,0,10,2,1-9\nb,5,15,2,6-14\n", {"0", "0"}, 2),
            Verdict::Good);  // WithGaps
  EXPECT_EQ(validate("id,lower,upper,size,gaps\na,0,10,2,1-8\nb,5,15,2,8-14\n", {"0", "0"}, 2),
            Verdict::Good);  // WithGapsEdgeCase
  EXPECT_EQ(validate("id,lower,upper,size,gaps\na,0,10,2,0-5@0:1\nb,0,10,2,5-10@1:2\n", {"0", "1"}, 3),
            Verdict::Good);  // Tetris
}

TEST(PeersMiniMallocValidator, BadSolutions) {
  const std::string three = "id,lower,upper,size\na,0,1,2\nb,1,2,1\nc,1,2,1\n";
  EXPECT_EQ(validate(three, {"0", "0"}, 2), Verdict::BadSolution);     // wrong number of offsets
  EXPECT_EQ(validate("id,lower,upper,size,offset\na,0,1,2,\nb,1,2,1,\nc,1,2,1,0\n", {"0", "0", "1"}, 2),
            Verdict::BadFixed);                                        // c is fixed at 0
  EXPECT_EQ(validate(three, {"0", "0", "-1"}, 2), Verdict::BadOffset);  // negative
  EXPECT_EQ(validate(three, {"0", "0", "2"}, 2), Verdict::BadOffset);   // beyond the capacity
  EXPECT_EQ(validate(three, {"0", "0", "0"}, 2), Verdict::BadOverlap);
  EXPECT_EQ(validate("id,lower,upper,size,alignment\na,0,1,2,1\nb,1,2,1,2\n", {"0", "1"}, 2),
            Verdict::BadAlignment);
  EXPECT_EQ(validate("id,lower,upper,size,gaps\na,0,10,2,1-7\nb,5,15,2,8-14\n", {"0", "0"}, 2),
            Verdict::BadOverlap);  // GapOverlap
}

}  // namespace
}  // namespace memplan
