// MiniMalloc CSV buffer lists: reading, writing solutions, errors.
#include <gtest/gtest.h>

#include "memplan/io.h"
#include "support/test_support.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;

std::string errorOf(const std::string& text) {
  try {
    readMiniMallocCsv(text, "b.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Csv, ReadsRowsAsHalfOpenBuffers) {
  const BufferList list = readMiniMallocCsv("id,lower,upper,size\nb1,0,3,4\nb2,3,9,16\n", "b.csv");
  ASSERT_EQ(list.ids, (std::vector<std::string>{"b1", "b2"}));
  ASSERT_EQ(list.problem.buffers.size(), 2u);
  const Buffer& b = list.problem.buffers[1];
  EXPECT_EQ(b.id, 1);
  EXPECT_EQ(b.name, "b2");
  EXPECT_EQ(b.start, 3);
  EXPECT_EQ(b.end, 9);
  EXPECT_EQ(b.size, 16u);
  EXPECT_EQ(b.nbytes, 16u);
  EXPECT_EQ(b.alignment, 1u);
  EXPECT_FALSE(b.fixed_offset);
  EXPECT_TRUE(list.offsets.empty());  // no offset column
  EXPECT_TRUE(list.problem.buffers[0].overlaps(list.problem.buffers[0]));
  EXPECT_FALSE(list.problem.buffers[0].overlaps(b));  // [0,3) and [3,9) touch only
}

TEST(Csv, AcceptsCrlfBlankLinesSpacesBomAndAnyColumnOrder) {
  const std::string text =
      "\xEF\xBB\xBF\r\n size , offset,id ,upper,alignment,lower\r\n\r\n"
      " 8 , 32 , x , 5 , 16 , 2 \r\n"
      "\t\r\n"
      "4,, y,7,,0";  // no final newline; empty offset and alignment cells
  const BufferList list = readMiniMallocCsv(text, "b.csv");
  ASSERT_EQ(list.problem.buffers.size(), 2u);
  EXPECT_EQ(list.ids, (std::vector<std::string>{"x", "y"}));
  const Buffer& x = list.problem.buffers[0];
  EXPECT_EQ(x.start, 2);
  EXPECT_EQ(x.end, 5);
  EXPECT_EQ(x.size, 8u);
  EXPECT_EQ(x.alignment, 16u);
  EXPECT_EQ(list.problem.buffers[1].alignment, 1u);
  ASSERT_EQ(list.offsets.size(), 2u);
  EXPECT_EQ(list.offsets[0], std::optional<Offset>(32));
  EXPECT_EQ(list.offsets[1], std::nullopt);
  // In a planning input an offset column pins (MiniMalloc's fixed buffers).
  EXPECT_EQ(x.fixed_offset, std::optional<Offset>(32));
  EXPECT_FALSE(list.problem.buffers[1].fixed_offset);
}

TEST(Csv, HeaderOnlyIsAnEmptyList) {
  const BufferList list = readMiniMallocCsv("id,lower,upper,size\n", "b.csv");
  EXPECT_TRUE(list.problem.buffers.empty());
  EXPECT_TRUE(list.ids.empty());
}

TEST(Csv, ErrorsNameFileLineAndColumn) {
  const std::string h = "id,lower,upper,size\n";
  EXPECT_EQ(errorOf(""), "b.csv: empty file, expected a header line 'id,lower,upper,size'");
  EXPECT_EQ(errorOf("\n \n"), "b.csv: empty file, expected a header line 'id,lower,upper,size'");
  EXPECT_EQ(errorOf(h + "a,0,1,-5\n"),
            "b.csv:2: column 'size': expected a non-negative integer, got '-5'");
  EXPECT_EQ(errorOf(h + "\n\na,0,1,5x\n"),
            "b.csv:4: column 'size': expected a non-negative integer, got '5x'");
  EXPECT_EQ(errorOf(h + "a,0,1,\n"), "b.csv:2: column 'size': expected a non-negative integer, got ''");
  EXPECT_EQ(errorOf(h + "a,1.5,2,4\n"),
            "b.csv:2: column 'lower': expected a non-negative integer, got '1.5'");
  EXPECT_EQ(errorOf(h + "a,0,99999999999999999999,4\n"),
            "b.csv:2: column 'upper': 99999999999999999999 is above the limit of "
            "4611686018427387904");
  EXPECT_EQ(errorOf(h + "a,0,1,4611686018427387905\n"),
            "b.csv:2: column 'size': 4611686018427387905 is above the limit of "
            "4611686018427387904");
  EXPECT_EQ(errorOf(h + "a,5,5,4\n"),
            "b.csv:2: upper 5 must be greater than lower 5 (the lifetime is [lower, upper))");
  EXPECT_EQ(errorOf(h + "a,6,5,4\n"),
            "b.csv:2: upper 5 must be greater than lower 6 (the lifetime is [lower, upper))");
  EXPECT_EQ(errorOf(h + "a,0,1,4\nb,0,1,4\na,2,3,4\n"), "b.csv:4: duplicate id 'a'");
  EXPECT_EQ(errorOf(h + " ,0,1,4\n"), "b.csv:2: column 'id': empty");
  EXPECT_EQ(errorOf(h + "a,0,1\n"), "b.csv:2: expected 4 cells, got 3");
  EXPECT_EQ(errorOf(h + "a,0,1,4,5\n"), "b.csv:2: expected 4 cells, got 5");
  EXPECT_EQ(errorOf("id,lower,upper\n"), "b.csv:1: missing column 'size'");
  EXPECT_EQ(errorOf("id,lower,upper,size,colour\n"),
            "b.csv:1: unknown column 'colour' (expected id, lower, upper, size, alignment, hint, "
            "gaps, offset; or MiniMalloc's buffer, buffer_id, start, begin, end)");
  EXPECT_EQ(errorOf("id,lower,upper,size,id\n"), "b.csv:1: duplicate column 'id'");
  EXPECT_EQ(errorOf("id,lower,upper,size,alignment\na,0,1,4,0\n"),
            "b.csv:2: column 'alignment': expected a positive integer, got '0'");
  EXPECT_EQ(errorOf("id,lower,upper,size,alignment\na,0,1,4,1073741825\n"),
            "b.csv:2: column 'alignment': 1073741825 is above the limit of 1073741824");
  EXPECT_EQ(errorOf("id,lower,upper,size,offset\na,0,1,4,4611686018427387903\n"),
            "b.csv:2: column 'offset': offset + size is above the limit of 4611686018427387904");
  // Bytes that are not printable UTF-8 are escaped, never echoed raw.
  EXPECT_EQ(errorOf("id,lower,upper,size,\xff\x01\xc3\xa9t\xc3\n"),
            "b.csv:1: unknown column '\\xff\\x01\xc3\xa9t\\xc3' (expected id, lower, upper, size, "
            "alignment, hint, gaps, offset; or MiniMalloc's buffer, buffer_id, start, begin, end)");
  EXPECT_EQ(errorOf(h + "a\x01" "b,0,1,x\n"),
            "b.csv:2: column 'size': expected a non-negative integer, got 'x'");
  EXPECT_EQ(errorOf(h + "a,0,1," + std::string(60, '9') + "z\n"),
            "b.csv:2: column 'size': expected a non-negative integer, got '" +
                std::string(40, '9') + "...'");
}

TEST(Csv, WrittenSolutionReadsBackWithOffsets) {
  const std::string text = "id,lower,upper,size,offset\nb1,0,3,4,99\nb2,3,9,4,\nb3,0,9,4,7\n";
  const BufferList list = readMiniMallocCsv(text, "b.csv");
  const std::string out = writeMiniMallocCsv(list, {0, 0, 4});
  // The offset column is replaced by the new solution.
  EXPECT_EQ(out, "id,lower,upper,size,offset\nb1,0,3,4,0\nb2,3,9,4,0\nb3,0,9,4,4\n");
  const BufferList back = readMiniMallocCsv(out, "out.csv");
  EXPECT_EQ(back.ids, list.ids);
  ASSERT_EQ(back.offsets.size(), 3u);
  EXPECT_EQ(back.offsets[2], std::optional<Offset>(4));
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.problem.buffers[i].start, list.problem.buffers[i].start);
    EXPECT_EQ(back.problem.buffers[i].end, list.problem.buffers[i].end);
    EXPECT_EQ(back.problem.buffers[i].size, list.problem.buffers[i].size);
  }
  // Without a solution: the problem, its pins included.
  EXPECT_EQ(writeMiniMallocCsv(list, {}),
            "id,lower,upper,size,offset\nb1,0,3,4,99\nb2,3,9,4,\nb3,0,9,4,7\n");
}

TEST(Csv, WriterKeepsAlignmentAndRejectsUnwritableIds) {
  BufferList list = readMiniMallocCsv("id,lower,upper,size,alignment\na,0,2,8,8\nb,1,2,3,1\n", "b.csv");
  EXPECT_EQ(writeMiniMallocCsv(list, {0, 8}),
            "id,lower,upper,size,alignment,offset\na,0,2,8,8,0\nb,1,2,3,1,8\n");
  list.ids[1] = "b,c";
  EXPECT_THROW(writeMiniMallocCsv(list, {0, 8}), InputError);
  list.ids[1] = "a";
  try {
    writeMiniMallocCsv(list, {0, 8});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "buffer 1: id 'a' is not unique and cannot be written to CSV");
  }
  list.ids[1] = "";
  try {
    writeMiniMallocCsv(list, {0, 8});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "buffer 1: id '' cannot be written to CSV (empty, comma, quote, line break or edge space)");
  }
  EXPECT_THROW(writeMiniMallocCsv(list, {0}), std::invalid_argument);
}

TEST(Csv, BenchmarkFilesReadWithTheirCounts) {
  const fs::path dir = test::dataDir();
  const std::pair<const char*, std::size_t> files[] = {
      {"minimalloc-challenging/A.1048576.csv", 154}, {"minimalloc-challenging/B.1048576.csv", 170},
      {"minimalloc-challenging/C.1048576.csv", 203}, {"minimalloc-challenging/D.1048576.csv", 213},
      {"minimalloc-challenging/E.1048576.csv", 215}, {"minimalloc-challenging/F.1048576.csv", 296},
      {"minimalloc-challenging/G.1048576.csv", 308}, {"minimalloc-challenging/H.1048576.csv", 316},
      {"minimalloc-challenging/I.1048576.csv", 374}, {"minimalloc-challenging/J.1048576.csv", 409},
      {"minimalloc-challenging/K.1048576.csv", 454}, {"minimalloc-challenging/example.12.csv", 5},
      {"traces/resnet50.csv", 1042},                 {"traces/G_1.csv", 816},
      {"traces/S_1.csv", 28526},
  };
  for (const auto& [name, count] : files) {
    const fs::path path = dir / name;
    const BufferList list = readMiniMallocCsv(readFile(path), path.string());
    EXPECT_EQ(list.problem.buffers.size(), count) << name;
    EXPECT_EQ(list.ids.size(), count) << name;
    // Writing the problem back reproduces the file (same rows, same order).
    EXPECT_EQ(writeMiniMallocCsv(list, {}), readFile(path)) << name;
  }
  const BufferList ex = readMiniMallocCsv(readFile(dir / "minimalloc-challenging/example.12.csv"), "e");
  EXPECT_EQ(ex.ids[0], "b1");
  EXPECT_EQ(ex.problem.buffers[0].end, 3);
  EXPECT_EQ(ex.problem.buffers[0].size, 4u);
  const BufferList s1 = readMiniMallocCsv(readFile(dir / "traces/S_1.csv"), "S_1.csv");
  EXPECT_EQ(s1.ids[0], "28524");
  EXPECT_EQ(s1.problem.buffers[0].size, 41473u);
  EXPECT_EQ(s1.problem.buffers[0].end, 2);
}

}  // namespace
}  // namespace memplan
