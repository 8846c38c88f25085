// The C header export: content, determinism, and real compilers -- every
// header is compiled as C99, C11, C++11 and C++17 with -Wall -Wextra
// -Werror -pedantic and run; the program prints the tables and they must
// equal the plan.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "memplan/c_header.h"
#include "memplan/io.h"
#include "memplan/plan.h"
#include "support/test_support.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;

Plan planOf(const Model& m) {
  PlanRequest r;
  return planModel(m, r);
}

Model exampleModel() {
  return readGraphJson(test::readText(test::sourceDir() / "examples/runtime/tiny_cnn.json"),
                       "tiny_cnn.json");
}

// A chain of tensors with the given names (a -> b -> c ...), float32 [n].
Model chain(const std::vector<std::string>& names, std::int64_t n = 4) {
  Model m;
  m.name = "chain";
  for (const std::string& name : names) {
    Tensor t;
    t.name = name;
    t.shape = {n};
    t.dtype = DType::Float32;
    t.nbytes = *denseBytes(t.shape, t.dtype);
    m.tensors.push_back(t);
  }
  Graph g;
  g.name = "main";
  g.inputs = {0};
  g.outputs = {static_cast<TensorId>(names.size() - 1)};
  for (std::size_t i = 0; i + 1 < names.size(); ++i) {
    Node node;
    node.name = "op" + std::to_string(i);
    node.op = "op";
    node.inputs = {static_cast<TensorId>(i)};
    node.outputs = {static_cast<TensorId>(i + 1)};
    g.nodes.push_back(node);
  }
  m.graphs.push_back(g);
  return m;
}

int shell(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Compiles a program printing the header's tables in each language mode,
// runs it, and returns what it printed per mode (all must agree).
std::string compileAndRun(const std::string& header, const std::string& prefix, const std::string& name) {
  std::string lo = prefix, up = prefix;
  for (char& c : lo) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const fs::path dir = test::tempDir("c-header-" + name);
  std::ofstream(dir / "plan.h", std::ios::binary) << header;
  std::ostringstream prog;
  prog << "#include <stdio.h>\n#include \"plan.h\"\n#include \"plan.h\"\n"
       << "int main(void) {\n  unsigned i, n = " << up << "_NUM_TENSORS;\n"
       << "  printf(\"%u %u %u %u\\n\", (unsigned)" << up << "_NUM_POOLS, n, (unsigned)" << lo
       << "_plan.alignment, (unsigned)" << lo << "_plan.granule);\n"
       << "  for (i = 0; i <= " << up << "_NUM_POOLS; ++i) printf(\"%llu\\n\", (unsigned long long)" << lo
       << "_pool_size[i]);\n"
       << "  for (i = 0; i < n; ++i) printf(\"%llu %llu %llu %d %d\\n\", (unsigned long long)" << lo
       << "_tensor_pool[i], (unsigned long long)" << lo << "_plan.tensor_offset[i], (unsigned long long)"
       << lo << "_tensor_size[i], (int)" << lo << "_tensor_first_step[i], (int)" << lo
       << "_plan.last_step[i]);\n  return 0;\n}\n";
  std::ofstream(dir / "main.c") << prog.str();
  std::ofstream(dir / "main.cc") << prog.str();
  std::string first;
  struct Mode {
    const char* compiler;
    const char* std;
    const char* source;
  };
  const Mode modes[] = {{MEMPLAN_C_COMPILER, "c99", "main.c"},
                        {MEMPLAN_C_COMPILER, "c11", "main.c"},
                        {MEMPLAN_CXX_COMPILER, "c++11", "main.cc"},
                        {MEMPLAN_CXX_COMPILER, "c++17", "main.cc"}};
  for (const Mode& m : modes) {
    const std::string exe = (dir / (std::string("prog-") + m.std)).string();
    const std::string log = (dir / "log").string();
    const std::string cmd = std::string(m.compiler) + " -std=" + m.std +
                            " -Wall -Wextra -Werror -pedantic -I" + dir.string() + " " +
                            (dir / m.source).string() + " -o " + exe + " >" + log + " 2>&1";
    EXPECT_EQ(shell(cmd), 0) << m.std << ": " << test::readText(log);
    const std::string out = (dir / (std::string("out-") + m.std)).string();
    EXPECT_EQ(shell(exe + " >" + out), 0) << m.std;
    const std::string printed = fs::exists(out) ? test::readText(out) : "";
    if (first.empty()) first = printed;
    EXPECT_EQ(printed, first) << m.std;
  }
  fs::remove_all(dir);
  return first;
}

std::string expectedTables(const RuntimeTable& t) {
  std::ostringstream s;
  s << t.pool_size.size() - 1 << " " << t.tensor_offset.size() << " " << t.alignment << " " << t.granule << "\n";
  for (std::uint64_t p : t.pool_size) s << p << "\n";
  for (std::size_t i = 0; i < t.tensor_offset.size(); ++i)
    s << t.tensor_pool[i] << " " << t.tensor_offset[i] << " " << t.tensor_size[i] << " " << t.first_step[i]
      << " " << t.last_step[i] << "\n";
  return s.str();
}

TEST(CHeader, ExampleNetwork) {
  const Model m = exampleModel();
  const Plan plan = planOf(m);
  CHeaderOptions o;
  o.prefix = "tiny_cnn";
  o.source = "tiny_cnn.json";
  const std::string h = writeCHeader(plan, &m, o);
  EXPECT_EQ(h, writeCHeader(plan, &m, o));  // deterministic bytes
  const RuntimeTable t = runtimeTable(plan, &m);
  ASSERT_EQ(t.tensor_offset.size(), 7u);  // 8 activations, flat is relu2's view
  EXPECT_EQ(t.pool_size, (std::vector<std::uint64_t>{0, plan.main().bufsizes[1]}));
  EXPECT_EQ(t.alignment, 16u);
  EXPECT_EQ(t.first_node_step, 1);
  EXPECT_NE(h.find(fmt::format("#define TINY_CNN_POOL_1_SIZE {}u\n", plan.main().bufsizes[1])), std::string::npos);
  EXPECT_NE(h.find("#define TINY_CNN_ALIGNMENT 16u\n"), std::string::npos);
  EXPECT_NE(h.find("  TINY_CNN_T_IMAGE = 0, /* image [1x8x8x1 float32] */\n"), std::string::npos) << h;
  EXPECT_NE(h.find("  TINY_CNN_T_FLAT = 5, /* flat: shares the storage of relu2 */\n"), std::string::npos);
  EXPECT_NE(h.find("typedef uint32_t tiny_cnn_word_t;"), std::string::npos);
  // Every allocation appears with its plan values.
  for (std::size_t i = 0; i < t.tensor_offset.size(); ++i) {
    const Allocation* a = plan.main().find(t.specs[i]);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(t.tensor_offset[i], a->offset);
    EXPECT_EQ(t.tensor_size[i], a->size);
  }
  EXPECT_EQ(compileAndRun(h, "tiny_cnn", "example"), expectedTables(t));
}

TEST(CHeader, NamesBecomeUniqueIdentifiersAndSafeComments) {
  const Model m = chain({"a/b", "a-b", "A_B", "*/ int evil; /*", "?\?=x?\?/", "", "9lives", "caf\xc3\xa9",
                         std::string(200, 'z'), "x__y", "_T_"});
  const Plan plan = planOf(m);
  const std::string h = writeCHeader(plan, &m, {});
  const RuntimeTable t = runtimeTable(plan, &m);
  EXPECT_EQ(t.identifiers[0], "A_B");
  EXPECT_EQ(t.identifiers[1], "A_B_2");
  EXPECT_EQ(t.identifiers[2], "A_B_3");
  EXPECT_EQ(t.identifiers[3], "INT_EVIL");
  EXPECT_EQ(t.identifiers[4], "X");
  EXPECT_EQ(t.identifiers[5], "SPEC5");  // an empty name: the spec number
  EXPECT_EQ(t.identifiers[6], "9LIVES");
  EXPECT_EQ(t.identifiers[7], "CAF");
  EXPECT_EQ(t.identifiers[8], std::string(60, 'Z'));
  EXPECT_EQ(t.identifiers[9], "X_Y");
  EXPECT_EQ(t.identifiers[10], "T");
  EXPECT_EQ(h.find("int evil; /*"), std::string::npos);  // no comment ends early
  EXPECT_NE(h.find("* / int evil; / *"), std::string::npos) << h;
  EXPECT_EQ(h.find("??"), std::string::npos);
  EXPECT_EQ(compileAndRun(h, "memplan", "names"), expectedTables(t));
}

TEST(CHeader, PrefixMustBeACIdentifier) {
  const Model m = chain({"x", "y"});
  const Plan plan = planOf(m);
  for (const char* bad : {"", "9net", "a__b", "_Net", "__x", "my-net", "a b"}) {
    CHeaderOptions o;
    o.prefix = bad;
    EXPECT_THROW(writeCHeader(plan, &m, o), InputError) << bad;
  }
  CHeaderOptions o;
  o.prefix = "MyNet";
  const std::string h = writeCHeader(plan, &m, o);
  EXPECT_NE(h.find("#define MYNET_NUM_TENSORS 2u"), std::string::npos);
  EXPECT_NE(h.find("static const mynet_plan_t mynet_plan"), std::string::npos);
  EXPECT_NE(h.find("MYNET_T_X = 0"), std::string::npos);
  EXPECT_EQ(compileAndRun(h, "MyNet", "prefix"), expectedTables(runtimeTable(plan, &m)));
}

TEST(CHeader, WideOffsetsUse64BitWords) {
  Model m = chain({"small", "huge", "out"});
  m.tensors[1].shape = {std::int64_t{3} << 30};  // 12 GiB of float32
  m.tensors[1].nbytes = *denseBytes(m.tensors[1].shape, DType::Float32);
  const Plan plan = planOf(m);
  const std::string h = writeCHeader(plan, &m, {});
  EXPECT_NE(h.find("typedef uint64_t memplan_word_t;"), std::string::npos);
  EXPECT_NE(h.find("ull"), std::string::npos);
  EXPECT_EQ(compileAndRun(h, "memplan", "wide"), expectedTables(runtimeTable(plan, &m)));
}

TEST(CHeader, NothingPlannedStillCompiles) {
  Model m = chain({"in", "out"});
  PlanRequest r;
  r.options.alloc_graph_input = false;
  r.options.alloc_graph_output = false;
  const Plan plan = planModel(m, r);
  const std::string h = writeCHeader(plan, &m, {});
  EXPECT_NE(h.find("#define MEMPLAN_NUM_TENSORS 0u"), std::string::npos);
  EXPECT_EQ(compileAndRun(h, "memplan", "empty"), expectedTables(runtimeTable(plan, &m)));
}

TEST(CHeader, CliWritesTheSameBytesEveryRun) {
  const fs::path dir = test::tempDir("c-header-cli");
  const std::string input = (test::sourceDir() / "examples/runtime/tiny_cnn.json").string();
  const auto a = dir / "a.h", b = dir / "b.h";
  ASSERT_EQ(test::runCli("plan -q " + input + " --emit-c " + a.string()).exit_code, 0);
  ASSERT_EQ(test::runCli("plan -q " + input + " --emit-c " + b.string()).exit_code, 0);
  EXPECT_EQ(test::readText(a), test::readText(b));
  const Model m = exampleModel();
  CHeaderOptions o;
  o.source = "tiny_cnn.json";
  EXPECT_EQ(test::readText(a), writeCHeader(planOf(m), &m, o));
  const test::CliResult bad = test::runCli("plan -q " + input + " --emit-c " + a.string() + " --c-prefix 9x");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--c-prefix"), std::string::npos) << bad.err;
  EXPECT_EQ(test::runCli("plan -q " + input + " --c-prefix net").exit_code, 2);  // without --emit-c
  fs::remove_all(dir);
}


// Any alignment (here 24, not a power of two) gives a header that compiles
// as C99, C11, C++11 and C++17; a C program places tensors with its macros
// alone (MEMPLAN_ALIGN_UP, MEMPLAN_TENSOR_PTR) and finds each one aligned
// and at its offset.
TEST(CHeader, AnyAlignmentAndCMacros) {
  const Model m = exampleModel();
  PlanRequest request;
  request.options.alignment = 24;
  const Plan plan = planModel(m, request);
  ASSERT_EQ(plan.options.alignment, 24u);
  const std::string h = writeCHeader(plan, &m, CHeaderOptions{});
  const RuntimeTable t = runtimeTable(plan, &m);
  EXPECT_EQ(compileAndRun(h, "memplan", "align24"), expectedTables(t));

  const fs::path dir = test::tempDir("c-header-macros");
  std::ofstream(dir / "plan.h", std::ios::binary) << h;
  std::ofstream(dir / "main.c") << R"(#include <stdio.h>
#include <stdint.h>
#include "plan.h"
static unsigned char storage[MEMPLAN_POOL_1_SIZE + MEMPLAN_ALIGNMENT - 1u + 1u];
int main(void) {
  void* pools[2];
  unsigned t, bad = 0;
  pools[0] = 0;
  pools[1] = MEMPLAN_ALIGN_UP(storage + 1);
  if (!MEMPLAN_IS_ALIGNED(pools[1])) bad++;
  for (t = 0; t < MEMPLAN_NUM_TENSORS; ++t) {
    unsigned char* p = (unsigned char*)MEMPLAN_TENSOR_PTR(pools, t);
    if ((uintptr_t)(p - (unsigned char*)pools[1]) != memplan_tensor_offset[t]) bad++;
    if ((uintptr_t)p % MEMPLAN_ALIGNMENT != 0u) bad++;
  }
  printf("%u bad\n", bad);
  return bad != 0;
}
)";
  const std::string exe = (dir / "prog").string();
  const std::string cmd = std::string(MEMPLAN_C_COMPILER) + " -std=c99 -Wall -Wextra -Werror -pedantic -I" +
                          dir.string() + " " + (dir / "main.c").string() + " -o " + exe + " >" +
                          (dir / "log").string() + " 2>&1";
  ASSERT_EQ(shell(cmd), 0) << test::readText((dir / "log").string());
  EXPECT_EQ(shell(exe + " >" + (dir / "out").string()), 0);
  EXPECT_EQ(test::readText((dir / "out").string()), "0 bad\n");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace memplan
