// Hostile paths and hostile names (issue 21): outputs that are special
// files, symlinks, read-only files or the input itself; runs that fail or are
// interrupted while writing; names that are not UTF-8; inputs whose size
// once made memplan quadratic. Each test asserts the outcome (exit code,
// message, the bytes on disk), never a duration.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <thread>

#include "memplan/c_header.h"
#include "memplan/memplan.h"
#include "memplan/report.h"
#include "support/test_support.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;
using test::runCli;

std::string quote(const fs::path& p) { return "'" + p.string() + "'"; }
fs::path tiny() { return test::sourceDir() / "examples" / "graphs" / "tiny.json"; }

void writeText(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary).write(text.data(), static_cast<std::streamsize>(text.size()));
}

// Files a run left in `dir` besides `keep`, temporaries included.
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool hasTemporary(const fs::path& dir) {
  for (const std::string& n : entries(dir))
    if (n.find(".tmp.") != std::string::npos) return true;
  return false;
}

bool oneLine(const std::string& err) { return std::count(err.begin(), err.end(), '\n') == 1; }

// ---- item 6: an output that is an input ----

TEST(HostilePaths, OutputThatIsTheInputIsRefused) {
  const fs::path dir = test::tempDir("hostile-same");
  const fs::path in = dir / "in.json";
  fs::copy_file(tiny(), in);
  const std::string original = test::readText(in);
  fs::create_symlink("in.json", dir / "link.json");
  fs::create_hard_link(in, dir / "hard.json");
  for (const char* flag : {"-o", "--html", "--svg", "--emit-c"}) {
    for (const char* target : {"in.json", "link.json", "hard.json"}) {
      SCOPED_TRACE(std::string(flag) + " " + target);
      const auto r = runCli("plan -q " + quote(in) + " " + flag + " " + quote(dir / target));
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_TRUE(oneLine(r.err)) << r.err;
      EXPECT_NE(r.err.find("not overwritten"), std::string::npos) << r.err;
      EXPECT_EQ(test::readText(in), original);
      EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
    }
  }
  // The input named through the link: refused the same way.
  const auto r = runCli("plan -q " + quote(dir / "link.json") + " -o " + quote(in));
  EXPECT_EQ(r.err, "memplan: " + in.string() + ": is the same file as the input " +
                       (dir / "link.json").string() + "; not overwritten\n");
  // Two outputs of one run that are one file.
  const auto twice = runCli("plan -q " + quote(in) + " -o " + quote(dir / "a.json") + " --svg " +
                            quote(dir / "a.json"));
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_EQ(twice.err, "memplan: " + (dir / "a.json").string() + ": is also written as " +
                           (dir / "a.json").string() + " by this command\n");
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"hard.json", "in.json", "link.json"}));
  EXPECT_EQ(runCli("import " + quote(in) + " -o " + quote(in)).exit_code, 2);
  EXPECT_EQ(test::readText(in), original);
  fs::remove_all(dir);
}

// ---- item 5: special files are written in place or refused, never replaced ----

TEST(HostilePaths, DevicesAndFifosAreWrittenInPlace) {
  const fs::path dir = test::tempDir("hostile-special");
  // /dev/null: written, still the device.
  auto r = runCli("plan -q " + quote(tiny()) + " -o /dev/null --emit-c /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // /dev/full: the write fails (exit 2), the device stays, nothing else is written.
  if (::stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)) {
    r = runCli("plan -q " + quote(tiny()) + " -o " + quote(dir / "p.json") + " --emit-c /dev/full");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "memplan: /dev/full: write failed: No space left on device\n");
    ASSERT_EQ(::stat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_FALSE(fs::exists(dir / "p.json"));
  }
  // /dev/stdout (here a file the shell opened): the plan follows what was printed.
  r = runCli("plan " + quote(tiny()) + " --bytes -o /dev/stdout");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::size_t plan_at = r.out.find("{\n  \"format\": \"memplan-plan\"");
  ASSERT_NE(plan_at, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("main pool 1"), std::string::npos);
  EXPECT_LT(r.out.find("main pool 1"), plan_at);  // the report first, not overwritten
  EXPECT_TRUE(nlohmann::json::accept(r.out.substr(plan_at)));
  // A FIFO: read by another thread, still a FIFO afterwards.
  const fs::path fifo = dir / "plan.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    char buf[4096];
    for (ssize_t n; fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
    if (fd >= 0) ::close(fd);
  });
  r = runCli("plan -q " + quote(tiny()) + " -o " + quote(fifo));
  reader.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(got.rfind("{\n  \"format\": \"memplan-plan\"", 0), 0u) << got;
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // A directory is refused.
  fs::create_directory(dir / "d.json");
  r = runCli("plan -q " + quote(tiny()) + " -o " + quote(dir / "d.json"));
  EXPECT_EQ(r.err, "memplan: " + (dir / "d.json").string() + ": cannot write: is a directory\n");
  EXPECT_FALSE(hasTemporary(dir));
  fs::remove_all(dir);
}

// ---- item 7: symlinks are written through, read-only files refused ----

TEST(HostilePaths, SymlinksAreWrittenThroughAndReadOnlyFilesKept) {
  const fs::path dir = test::tempDir("hostile-links");
  writeText(dir / "real.json", "old\n");
  fs::create_symlink("real.json", dir / "link.json");
  fs::create_symlink("sub/new.json", dir / "dangling.json");
  fs::create_directory(dir / "sub");
  auto r = runCli("plan -q " + quote(tiny()) + " -o " + quote(dir / "link.json") + " --svg " +
                  quote(dir / "dangling.json"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_TRUE(fs::is_symlink(dir / "dangling.json"));
  EXPECT_EQ(test::readText(dir / "real.json").rfind("{\n  \"format\": \"memplan-plan\"", 0), 0u);
  EXPECT_EQ(test::readText(dir / "sub" / "new.json").rfind("<?xml", 0), 0u);
  // A loop of links.
  fs::create_symlink("loop2.json", dir / "loop1.json");
  fs::create_symlink("loop1.json", dir / "loop2.json");
  r = runCli("plan -q " + quote(tiny()) + " -o " + quote(dir / "loop1.json"));
  EXPECT_EQ(r.err, "memplan: " + (dir / "loop1.json").string() +
                       ": cannot write: too many levels of symbolic links\n");
  // Read-only (0444): refused, even for root, and left as it was.
  writeText(dir / "ro.json", "keep me\n");
  fs::permissions(dir / "ro.json", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  r = runCli("plan -q " + quote(tiny()) + " -o " + quote(dir / "ro.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "memplan: " + (dir / "ro.json").string() +
                       ": is read-only; not replaced (make it writable to allow it)\n");
  EXPECT_EQ(test::readText(dir / "ro.json"), "keep me\n");
  // A replaced file keeps its permissions.
  writeText(dir / "mode.json", "x\n");
  fs::permissions(dir / "mode.json", fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(runCli("plan -q " + quote(tiny()) + " -o " + quote(dir / "mode.json")).exit_code, 0);
  EXPECT_EQ(fs::status(dir / "mode.json").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_FALSE(hasTemporary(dir));
  EXPECT_FALSE(hasTemporary(dir / "sub"));
  fs::remove_all(dir);
}

// ---- item 8: all outputs or none ----

TEST(HostilePaths, AFailedRunWritesNoOutput) {
  const fs::path dir = test::tempDir("hostile-fail");
  writeText(dir / "p.json", "previous\n");
  // The C header fails after the plan file is staged: neither is written.
  auto r = runCli("plan -q " + quote(tiny()) + " -o " + quote(dir / "p.json") + " --html " +
                  quote(dir / "p.html") + " --emit-c " + quote(dir / "p.h") + " --c-prefix 'no good'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(oneLine(r.err)) << r.err;
  EXPECT_EQ(entries(dir), std::vector<std::string>{"p.json"});
  EXPECT_EQ(test::readText(dir / "p.json"), "previous\n");
  // The last output cannot be written: the earlier ones are not either.
  fs::create_directory(dir / "p.svg");
  r = runCli("plan -q " + quote(tiny()) + " -o " + quote(dir / "p.json") + " --html " +
             quote(dir / "p.html") + " --svg " + quote(dir / "p.svg"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"p.json", "p.svg"}));
  EXPECT_EQ(test::readText(dir / "p.json"), "previous\n");
  // Does not fit (exit 3): nothing written.
  r = runCli("plan -q " + quote(tiny()) + " -o " + quote(dir / "q.json") + " --capacity 1=16");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(fs::exists(dir / "q.json"));
  // And a run that works writes them all.
  fs::remove(dir / "p.svg");
  r = runCli("plan -q " + quote(tiny()) + " -o " + quote(dir / "p.json") + " --html " +
             quote(dir / "p.html") + " --svg " + quote(dir / "p.svg") + " --emit-c " + quote(dir / "p.h"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"p.h", "p.html", "p.json", "p.svg"}));
  fs::remove_all(dir);
}

// A chain of `n` tensors, one node each: big enough that writing its
// outputs takes a while.
std::string chainGraph(std::size_t n) {
  std::string s = "{\"format\":\"memplan-graph\",\"version\":1,\"tensors\":[\n";
  for (std::size_t i = 0; i < n; ++i)
    s += (i ? ",\n" : "") + std::string("{\"name\":\"t") + std::to_string(i) +
         "\",\"shape\":[1,64],\"dtype\":\"float32\"}";
  s += "],\"graphs\":[{\"name\":\"main\",\"inputs\":[\"t0\"],\"outputs\":[\"t" + std::to_string(n - 1) +
       "\"],\"nodes\":[\n";
  for (std::size_t i = 0; i + 1 < n; ++i)
    s += (i ? ",\n" : "") + std::string("{\"op\":\"Relu\",\"inputs\":[\"t") + std::to_string(i) +
         "\"],\"outputs\":[\"t" + std::to_string(i + 1) + "\"]}";
  s += "]}]}\n";
  return s;
}

// Runs the CLI and sends SIGINT after `delay`; returns the wait status.
int runInterrupted(const std::vector<std::string>& args, std::chrono::microseconds delay) {
  std::vector<char*> argv;
  std::string cli = MEMPLAN_CLI;
  argv.push_back(cli.data());
  std::vector<std::string> copy = args;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::this_thread::sleep_for(delay);
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(HostilePaths, InterruptedRunsLeaveAllOutputsOrNone) {
  const fs::path dir = test::tempDir("hostile-sigint");
  writeText(dir / "chain.json", chainGraph(30000));
  const std::vector<std::string> outputs = {"p.json", "p.html", "p.svg", "p.h"};
  const std::vector<std::string> args = {"plan",   "-q",       (dir / "chain.json").string(),
                                         "-a",     "naive",    "-o",
                                         (dir / "p.json").string(), "--html", (dir / "p.html").string(),
                                         "--svg",  (dir / "p.svg").string(), "--emit-c",
                                         (dir / "p.h").string()};
  // How long a whole run takes here; the signals are spread over it.
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = runCli("plan -q " + quote(dir / "chain.json") + " -a naive -o " + quote(dir / "p.json") +
                        " --html " + quote(dir / "p.html") + " --svg " + quote(dir / "p.svg") +
                        " --emit-c " + quote(dir / "p.h"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto whole = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  int complete = 0, none = 0;
  for (int trial = 0; trial < 8; ++trial) {
    for (const std::string& o : outputs) fs::remove(dir / o);
    const int status = runInterrupted(args, whole * (trial + 1) / 6);  // the last ones too late
    SCOPED_TRACE("trial " + std::to_string(trial));
    EXPECT_FALSE(hasTemporary(dir)) << "temporary files left";
    std::size_t present = 0;
    for (const std::string& o : outputs) present += fs::exists(dir / o);
    EXPECT_TRUE(present == 0 || present == outputs.size()) << present << " of the outputs written";
    if (present == outputs.size()) {
      ++complete;
    } else {
      ++none;
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << status;
    }
  }
  std::printf("interrupted runs: %d wrote every output, %d none\n", complete, none);
  fs::remove_all(dir);
}

// ---- the library's side of it ----

TEST(HostilePaths, OutputTransactionCommitsAllOrNothing) {
  const fs::path dir = test::tempDir("hostile-tx");
  {
    OutputTransaction tx;
    writeFileAtomic(dir / "a.txt", "A");
    writeFileAtomic(dir / "b.txt", "B");
    EXPECT_EQ(tx.pending(), 2u);
    EXPECT_FALSE(fs::exists(dir / "a.txt"));  // staged, not written
    EXPECT_TRUE(hasTemporary(dir));
  }  // not committed
  EXPECT_TRUE(entries(dir).empty());
  {
    OutputTransaction tx;
    writeFileAtomic(dir / "a.txt", "A");
    writeFileAtomic(dir / "b.txt", "B");
    tx.commit();
    EXPECT_EQ(tx.pending(), 0u);
  }
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"a.txt", "b.txt"}));
  EXPECT_EQ(test::readText(dir / "b.txt"), "B");
  {
    OutputTransaction tx;
    EXPECT_EQ(readFile(dir / "a.txt"), "A");  // an input of this transaction now
    try {
      writeFileAtomic(dir / "a.txt", "overwritten");
      ADD_FAILURE() << "an input was staged as an output";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), (dir / "a.txt").string() + ": is an input of this command; not overwritten");
    }
  }
  EXPECT_EQ(test::readText(dir / "a.txt"), "A");
  // Without a transaction, each write is its own.
  writeFileAtomic(dir / "a.txt", "again");
  EXPECT_EQ(test::readText(dir / "a.txt"), "again");
  EXPECT_FALSE(hasTemporary(dir));
  fs::remove_all(dir);
}

// ---- item 9: names that are not UTF-8 ----

// Two buffers whose names differ only in an invalid byte and its U+FFFD
// replacement: the plan tells them apart, verify and replay accept it.
TEST(HostileNames, NonUtf8IdsRoundTripThroughPlanFiles) {
  const fs::path dir = test::tempDir("hostile-names");
  writeText(dir / "b.csv", "id,lower,upper,size\nx\xff,0,4,16\nx\xef\xbf\xbd,0,4,16\n\\xff,0,4,8\n");
  auto r = runCli("plan -q " + quote(dir / "b.csv") + " -o " + quote(dir / "p.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string plan = test::readText(dir / "p.json");
  EXPECT_NE(plan.find(R"({"id":{"bytes":"x\\xff"},"mem_id":1)"), std::string::npos) << plan;
  EXPECT_NE(plan.find("{\"id\":\"x\xef\xbf\xbd\",\"mem_id\":1"), std::string::npos) << plan;
  EXPECT_NE(plan.find(R"({"id":"\\xff","mem_id":1)"), std::string::npos) << plan;  // valid UTF-8: as it is
  r = runCli("verify " + quote(dir / "b.csv") + " " + quote(dir / "p.json"));
  EXPECT_EQ(r.out, "OK: 3 allocations verified\n") << r.err;
  r = runCli("replay " + quote(dir / "b.csv") + " " + quote(dir / "p.json"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // As a CSV solution: the bytes as they were.
  r = runCli("plan -q " + quote(dir / "b.csv") + " -o " + quote(dir / "p.csv"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::readText(dir / "p.csv").rfind("id,lower,upper,size,offset\nx\xff,0,4,16,", 0), 0u);
  EXPECT_EQ(runCli("verify " + quote(dir / "b.csv") + " " + quote(dir / "p.csv")).exit_code, 0);
  fs::remove_all(dir);
}

// A model whose tensor names are bytes: graph JSON, plan JSON (by tensor id,
// version 4) and back, exactly.
TEST(HostileNames, NonUtf8TensorNamesRoundTripThroughGraphAndPlan) {
  Model m = readGraphJson(test::readText(tiny()), "tiny.json");
  m.tensors[0].name = "x\xff";
  m.tensors[1].name = "x\xef\xbf\xbd";
  m.tensors[2].name = "x\xff";  // the same name twice: ids still tell them apart
  const std::string graph = writeGraphJson(m);
  const Input in = readInput(graph, "g.json");
  ASSERT_TRUE(in.model());
  EXPECT_EQ(in.model()->tensors[0].name, "x\xff");
  EXPECT_EQ(in.model()->tensors[2].name, "x\xff");
  EXPECT_EQ(writeGraphJson(*in.model()), graph);
  const Plan p = plan(in);
  const std::string text = writePlan(p, in);
  EXPECT_NE(text.find("\"version\": 4"), std::string::npos);
  EXPECT_NE(text.find(R"({"id":{"bytes":"x\\xff"},"tensor":0,)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"({"id":{"bytes":"x\\xff"},"tensor":2,)"), std::string::npos) << text;
  const Plan back = readPlan(text, "p.json", in);
  EXPECT_TRUE(verify(in, back).ok());
  EXPECT_TRUE(replay(in, back).ok());
  EXPECT_EQ(writePlan(back, in), text);
  // A plan naming tensor 0 by another name was made for another input.
  std::string renamed = text;
  const std::string from = R"({"bytes":"x\\xff"},"tensor":0,)";
  for (std::size_t at = renamed.find(from); at != std::string::npos; at = renamed.find(from))
    renamed.replace(at, from.size(), R"("y","tensor":0,)");
  try {
    (void)readPlan(renamed, "p.json", in);
    ADD_FAILURE() << "renamed tensor accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "p.json: graphs[0].allocations[0].id: tensor 0 is 'x\xff' in the input, 'y' here");
  }
}

// Plans written before version 4 (allocations by name) still read.
TEST(HostileNames, Version3PlansStillRead) {
  const Input in = readInput(tiny());
  const Plan p = plan(in);
  std::string v3 = writePlan(p, in);
  v3.replace(v3.find("\"version\": 4"), 12, "\"version\": 3");
  for (std::size_t at = v3.find(",\"tensor\":"); at != std::string::npos; at = v3.find(",\"tensor\":", at)) {
    const std::size_t end = v3.find(',', at + 1);
    v3.erase(at, end - at);
  }
  ASSERT_EQ(v3.find("tensor\":"), std::string::npos);
  const Plan back = readPlan(v3, "v3.json", in);
  EXPECT_TRUE(verify(in, back).ok());
  ASSERT_EQ(back.main().allocations.size(), p.main().allocations.size());
  for (std::size_t i = 0; i < p.main().allocations.size(); ++i)
    EXPECT_EQ(back.main().allocations[i].offset, p.main().allocations[i].offset);
}

// ---- item 11: SVG, CSV cells, limits that name the file ----

TEST(HostileNames, SvgStaysWellFormedWithNoncharacters) {
  Model m = readGraphJson(test::readText(tiny()), "tiny.json");
  m.tensors[0].name = "a\xef\xbf\xbe";  // U+FFFE
  m.tensors[1].name = "b\xef\xbf\xbf<&";  // U+FFFF
  PlanRequest r;
  r.algorithm = "naive";
  const Plan p = planModel(m, r);
  const std::string svg = renderSvg(p, &m, {});
  EXPECT_EQ(svg.find("\xef\xbf\xbe"), std::string::npos);
  EXPECT_EQ(svg.find("\xef\xbf\xbf"), std::string::npos);
  EXPECT_NE(svg.find("a\xef\xbf\xbd"), std::string::npos);
  EXPECT_NE(svg.find("b\xef\xbf\xbd&lt;&amp;"), std::string::npos);
}

TEST(HostileNames, CsvCellsSpreadsheetsWouldMisreadAreNotWritten) {
  const auto write = [](const std::string& id) {
    BufferList list;
    list.ids = {id};
    Buffer b;
    b.start = 0;
    b.end = 1;
    b.size = 4;
    list.problem.buffers = {b};
    try {
      return writeMiniMallocCsv(list, {0});
    } catch (const InputError& e) {
      return std::string("refused: ") + e.what();
    }
  };
  EXPECT_EQ(write("=HYPERLINK(\"http://x\")"),
            "refused: buffer 0: id '=HYPERLINK(\"http://x\")' cannot be written to CSV (empty, comma, "
            "quote, line break or edge space)");
  EXPECT_EQ(write("=SUM(A1)"), "refused: buffer 0: id '=SUM(A1)' cannot be written to CSV: it starts "
                               "with '=', and spreadsheets would run the cell as a formula");
  EXPECT_EQ(write("\"a"), "refused: buffer 0: id '\"a' cannot be written to CSV (empty, comma, quote, "
                          "line break or edge space)");
  for (const char* formula : {"+x", "-x", "@x", "\tx"})
    EXPECT_EQ(write(formula).rfind("refused:", 0), 0u) << formula;
  EXPECT_EQ(write("-1"), "id,lower,upper,size,offset\n-1,0,1,4,0\n");  // a number, not a formula
  EXPECT_EQ(write("b=1"), "id,lower,upper,size,offset\nb=1,0,1,4,0\n");
}

TEST(HostileNames, LimitsHoldForEveryImporterAndNameTheFile) {
  Model m = readGraphJson(test::readText(tiny()), "model.onnx");
  m.name = "model.onnx";
  m.tensors[0].shape.assign(65, 1);
  try {
    validateModel(m);
    ADD_FAILURE() << "rank 65 accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "model.onnx: tensor 0 'a': rank 65 is above the limit of 64");
  }
  // Steps the C header cannot hold: the message names the input.
  const fs::path dir = test::tempDir("hostile-steps");
  writeText(dir / "late.csv", "id,lower,upper,size\na,4611686018427387903,4611686018427387904,16\n");
  const auto r = runCli("plan -q " + quote(dir / "late.csv") + " --emit-c " + quote(dir / "late.h"));
  EXPECT_EQ(r.err, "memplan: " + (dir / "late.csv").string() +
                       ": a: step 4611686018427387903 does not fit an int32, the C header's type for steps\n");
  EXPECT_FALSE(fs::exists(dir / "late.h"));
  fs::remove_all(dir);
}

// ---- items 2 and 3 at sizes that were quadratic (the times are in
// bench/hostile; here the outcomes) ----

std::string viewChain(std::size_t n, const char* kind) {
  std::string s = "{\"format\":\"memplan-graph\",\"version\":1,\"tensors\":[{\"name\":\"t0\",\"shape\":[16],"
                  "\"dtype\":\"float32\"}";
  for (std::size_t i = 1; i < n; ++i)
    s += ",\n{\"name\":\"t" + std::to_string(i) + "\",\"shape\":[16],\"dtype\":\"float32\",\"alias\":{\"kind\":\"" +
         kind + "\",\"of\":" + std::to_string(i - 1) + "}}";
  s += "],\"graphs\":[{\"name\":\"main\",\"outputs\":[" + std::to_string(n - 1) +
       "],\"nodes\":[{\"op\":\"Make\",\"outputs\":[0]}";
  for (std::size_t i = 1; i < n; ++i)
    s += ",\n{\"op\":\"View\",\"inputs\":[" + std::to_string(i - 1) + "],\"outputs\":[" + std::to_string(i) + "]}";
  return s + "]}]}\n";
}

TEST(HostileScale, LongAliasChainsPlanVerifyAndReplay) {
  for (const char* kind : {"view", "inplace", "share"}) {
    SCOPED_TRACE(kind);
    const Input in = readInput(viewChain(50000, kind), "chain.json");
    PlanRequest r;
    r.algorithm = "best_fit";
    const Plan p = plan(in, r);
    EXPECT_TRUE(verify(in, p).ok());
    EXPECT_TRUE(replay(in, p).ok());
    // Views and in-place results are one storage; shares each their own.
    EXPECT_EQ(p.main().allocations.size(), std::string(kind) == "share" ? 50000u : 1u);
  }
}

TEST(HostileScale, ManyTensorsOfOneNameGetDistinctCIdentifiers) {
  std::string s = "{\"format\":\"memplan-graph\",\"version\":1,\"tensors\":[";
  constexpr int kN = 20000;
  for (int i = 0; i < kN; ++i) s += std::string(i ? "," : "") + "{\"name\":\"x\",\"nbytes\":16}";
  s += "],\"graphs\":[{\"name\":\"main\",\"outputs\":[" + std::to_string(kN - 1) + "],\"nodes\":[";
  for (int i = 0; i < kN; ++i)
    s += std::string(i ? "," : "") + "{\"op\":\"f\",\"inputs\":[" + (i ? std::to_string(i - 1) : "") +
         "],\"outputs\":[" + std::to_string(i) + "]}";
  s += "]}]}";
  const Input in = readInput(s, "x.json");
  PlanRequest r;
  r.algorithm = "naive";
  const std::string header = writeCHeader(plan(in, r), in.modelOrNull(), {});
  EXPECT_NE(header.find("  MEMPLAN_T_X = 0,"), std::string::npos);
  EXPECT_NE(header.find("  MEMPLAN_T_X_2 = 1,"), std::string::npos);
  EXPECT_NE(header.find("  MEMPLAN_T_X_20000 = 19999,"), std::string::npos);
  EXPECT_EQ(header.find("MEMPLAN_T_X_20001"), std::string::npos);
}

TEST(HostileScale, ControlFlowNestedBeyondTheLimitIsRefused) {
  // Graph g runs graph g+1 through a call node, 66 graphs deep.
  std::string s = "{\"format\":\"memplan-graph\",\"version\":1,\"tensors\":[{\"name\":\"t\",\"nbytes\":4}],"
                  "\"graphs\":[";
  for (int g = 0; g < 66; ++g) {
    s += std::string(g ? "," : "") + "{\"name\":\"g" + std::to_string(g) + "\",\"nodes\":[";
    if (g < 65) s += "{\"op\":\"call\",\"kind\":\"call\",\"subgraphs\":[" + std::to_string(g + 1) + "]}";
    s += "]}";
  }
  s += "]}";
  try {
    (void)readInput(s, "deep.json");
    ADD_FAILURE() << "66 graphs deep accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "deep.json: graph 65 'g65': control-flow bodies nested 65 deep, above the limit of 64");
  }
}

// ---- issue 27: memory that follows the model, not graphs x tensors ----

// Runs the CLI with `args` as a child process: its exit code, standard
// error and peak RSS in MB (wait4 gives the child's own).
struct MeasuredRun {
  int exit_code = -1;
  double peak_mb = 0;
  std::string err;
};

MeasuredRun runMeasured(const std::vector<std::string>& args, const fs::path& dir) {
  const fs::path err = dir / "stderr";
  const pid_t pid = fork();
  if (pid == 0) {
    const int out_fd = open("/dev/null", O_WRONLY);
    const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out_fd < 0 || err_fd < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) _exit(126);
    std::vector<char*> argv{const_cast<char*>(MEMPLAN_CLI)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(MEMPLAN_CLI, argv.data());
    _exit(127);
  }
  MeasuredRun r;
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid) return r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.peak_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;
  r.err = test::readText(err);
  return r;
}

// Sanitizers keep freed memory in quarantine and shadow every byte.
#if defined(__SANITIZE_ADDRESS__)
constexpr double kMemoryFactor = 4;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr double kMemoryFactor = 4;
#else
constexpr double kMemoryFactor = 1;
#endif
#else
constexpr double kMemoryFactor = 1;
#endif

// plan (which verifies), verify, replay and report of `in`: each exits 0
// within `cap_mb` of peak RSS.
void expectEveryCommandWithin(const fs::path& in, double cap_mb) {
  const fs::path dir = in.parent_path();
  const std::string plan_file = (dir / "plan.json").string();
  const std::vector<std::vector<std::string>> commands = {
      {"plan", "-q", in.string(), "-o", plan_file},
      {"verify", in.string(), plan_file},
      {"replay", in.string(), plan_file},
      {"report", in.string(), plan_file}};
  for (const auto& args : commands) {
    const MeasuredRun r = runMeasured(args, dir);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_LT(r.peak_mb, cap_mb * kMemoryFactor) << args[0] << " of " << in.filename().string();
  }
}

// genbodies: main runs n bodies of one tensor each through call nodes.
// Per-graph tables over every tensor of the model made this n^2: 426 MB at
// n = 10,000 (1.62 GB at 20,000, a 2.6 MB file); now 64 MB.
std::string manyBodies(std::size_t n) {
  std::string s = "{\"format\":\"memplan-graph\",\"version\":1,\"tensors\":[{\"name\":\"x\",\"nbytes\":16,"
                  "\"graph\":0},{\"name\":\"y\",\"nbytes\":16,\"graph\":0}";
  for (std::size_t i = 0; i < n; ++i) s += ",{\"name\":\"\",\"nbytes\":16,\"graph\":" + std::to_string(i + 1) + "}";
  s += "],\"graphs\":[{\"name\":\"m\",\"inputs\":[0],\"outputs\":[1],\"nodes\":[";
  for (std::size_t i = 0; i < n; ++i)
    s += "{\"kind\":\"call\",\"inputs\":[0],\"subgraphs\":[" + std::to_string(i + 1) + "]},";
  s += "{\"op\":\"f\",\"inputs\":[0],\"outputs\":[1]}]}";
  for (std::size_t i = 0; i < n; ++i)
    s += ",{\"nodes\":[{\"inputs\":[0],\"outputs\":[" + std::to_string(i + 2) + "]}]}";
  return s + "]}";
}

TEST(HostileScale, ManyBodiesCostMemoryLinearInTheModel) {
  const fs::path dir = test::tempDir("hostile-bodies");
  writeText(dir / "bodies.json", manyBodies(10000));
  expectEveryCommandWithin(dir / "bodies.json", 192);
  fs::remove_all(dir);
}

// tests/data/hostile-models/q_1500_500.tflite (62 KB): 1,500 CALL_ONCE
// bodies whose subgraph entries all point to one table of 500 tensors, so
// the model holds 750,000 tensors. Planning it took 4.75 GB; now 350 MB.
TEST(HostileScale, SharedSubgraphTablesCostMemoryLinearInTheModel) {
  const fs::path dir = test::tempDir("hostile-shared");
  fs::copy_file(test::dataDir() / "hostile-models" / "q_1500_500.tflite", dir / "q.tflite");
  expectEveryCommandWithin(dir / "q.tflite", 768);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace memplan
