// The outputs README.md and docs/*.md show are what memplan prints today.
//
// Marked blocks are run and compared (the convention is in docs/README.md):
//   - a fenced block whose info string is `console` is a transcript: each
//     line starting with "$ " is a command (a trailing backslash continues
//     it), the lines up to the next command are what it prints;
//   - `<!-- output of: COMMAND -->` just above a fenced block: the block is
//     COMMAND's output;
//   - a fenced block whose info string is `pycon` is a Python session:
//     its ">>> " statements (and their "... " lines) run in the build's
//     interpreter with the module just built (tests/support/docs_pycon.py
//     replays them), and the transcript it prints must be the block;
//   - `<!-- setup: COMMAND -->` just above any of them runs COMMAND first,
//     unchecked (copy a model to the short name the text uses).
// Each document runs in a scratch directory that looks like the source
// tree (examples/, tests/, .cache/models/ linked; build/ holds links to the
// built programs; `memplan` is on PATH), blocks in document order, so a
// block may read what an earlier one wrote. Output is stdout then stderr.
// Both sides are normalised before comparing: trailing blanks, planning
// times ("planned in 0.01 s", "planning_seconds"); a line "..." (also
// "/* ... */", " * ...", "// ...", "# ...") in the document stands for any
// number of lines; output that is JSON on both sides is compared as JSON
// (so the document may lay it out compactly).
//
// MEMPLAN_UPDATE_DOCS=1 rewrites the blocks that differ with what memplan
// prints (then review the diff).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace memplan::test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string joinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// ---- the documents --------------------------------------------------------

// One command and the output the document shows for it.
struct Step {
  std::string command;
  bool pycon = false;                   // command: the Python session's text
  std::vector<std::string> expected;
  std::size_t line = 0;                 // 1-based line of the command
  std::size_t out_begin = 0, out_end = 0;  // 0-based line range of `expected`
};

struct Block {
  std::size_t line = 0;                 // 1-based line of the opening fence
  std::string setup;                    // <!-- setup: ... -->
  std::string indent;                   // the fence's indentation
  std::vector<Step> steps;
};

// The text of an HTML comment `<!-- KEY: VALUE -->` on one line, or "".
std::string marker(const std::string& line, const std::string& key) {
  static const std::regex re(R"(^\s*<!--\s*([a-z ]+):\s*(.*?)\s*-->\s*$)");
  std::smatch m;
  if (std::regex_match(line, m, re) && m[1] == key) return m[2];
  return "";
}

std::vector<Block> parseDoc(const std::vector<std::string>& lines, std::string& error) {
  std::vector<Block> blocks;
  static const std::regex fence(R"(^(\s*)(```+)\s*([^`\s]*).*$)");
  std::string setup, output_of;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (const std::string s = marker(lines[i], "setup"); !s.empty()) {
      setup += (setup.empty() ? "" : "\n") + s;
      continue;
    }
    if (const std::string o = marker(lines[i], "output of"); !o.empty()) {
      output_of = o;
      continue;
    }
    if (!std::regex_match(lines[i], m, fence)) {
      if (!lines[i].empty()) {  // markers sit right above their block
        setup.clear();
        output_of.clear();
      }
      continue;
    }
    const std::string indent = m[1], ticks = m[2], info = m[3];
    // The closing fence: at least as many backticks, nothing else.
    std::size_t end = i + 1;
    for (; end < lines.size(); ++end) {
      const std::size_t at = lines[end].find_first_not_of(' ');
      if (at == std::string::npos || lines[end].compare(at, ticks.size(), ticks) != 0) continue;
      if (lines[end].find_first_not_of("` ", at) == std::string::npos) break;
    }
    if (end >= lines.size()) {
      error = "line " + std::to_string(i + 1) + ": unclosed fence";
      return blocks;
    }
    Block b;
    b.line = i + 1;
    b.setup = setup;
    b.indent = indent;
    auto body = [&](std::size_t k) {
      return lines[k].compare(0, indent.size(), indent) == 0 ? lines[k].substr(indent.size()) : lines[k];
    };
    if (!output_of.empty()) {
      Step s;
      s.command = output_of;
      s.line = i + 1;
      s.out_begin = i + 1;
      s.out_end = end;
      for (std::size_t k = i + 1; k < end; ++k) s.expected.push_back(body(k));
      b.steps.push_back(std::move(s));
    } else if (info == "pycon") {
      Step s;
      s.pycon = true;
      s.line = i + 1;
      s.out_begin = i + 1;
      s.out_end = end;
      for (std::size_t k = i + 1; k < end; ++k) s.expected.push_back(body(k));
      s.command = joinLines(s.expected);
      b.steps.push_back(std::move(s));
    } else if (info == "console") {
      for (std::size_t k = i + 1; k < end; ++k) {
        const std::string text = body(k);
        if (text.rfind("$ ", 0) == 0) {
          Step s;
          s.line = k + 1;
          s.command = text.substr(2);
          while (!s.command.empty() && s.command.back() == '\\' && k + 1 < end)
            s.command += "\n" + body(++k);
          s.out_begin = s.out_end = k + 1;
          b.steps.push_back(std::move(s));
        } else if (b.steps.empty()) {
          error = "line " + std::to_string(k + 1) + ": a console block starts with a \"$ \" command";
          return blocks;
        } else {
          b.steps.back().expected.push_back(text);
          b.steps.back().out_end = k + 1;
        }
      }
      if (b.steps.empty()) {
        error = "line " + std::to_string(i + 1) + ": a console block without a \"$ \" command";
        return blocks;
      }
    }
    if (!b.steps.empty()) blocks.push_back(std::move(b));
    setup.clear();
    output_of.clear();
    i = end;
  }
  return blocks;
}

// ---- comparing ------------------------------------------------------------

// What may differ run to run, and trailing blanks.
std::vector<std::string> normalise(std::vector<std::string> lines) {
  static const std::regex seconds(R"(planned in [0-9]+\.[0-9]+ s)");
  static const std::regex json_seconds(R"("planning_seconds": *[-+0-9.eE]+)");
  for (std::string& l : lines) {
    while (!l.empty() && (l.back() == ' ' || l.back() == '\t' || l.back() == '\r')) l.pop_back();
    l = std::regex_replace(l, seconds, "planned in <t> s");
    l = std::regex_replace(l, json_seconds, "\"planning_seconds\": 0");
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

bool isEllipsis(const std::string& line) {
  static const std::regex re(R"(^\s*(/\*\s*\.\.\.\s*\*/|\*\s*\.\.\.|//\s*\.\.\.|#\s*\.\.\.|\.\.\.)\s*$)");
  return std::regex_match(line, re);
}

// Lines of `doc` against `out`; an ellipsis line matches any run of lines.
bool linesMatch(const std::vector<std::string>& doc, std::size_t d,
                const std::vector<std::string>& out, std::size_t o) {
  if (d == doc.size()) return o == out.size();
  if (isEllipsis(doc[d])) {
    for (std::size_t k = o; k <= out.size(); ++k)
      if (linesMatch(doc, d + 1, out, k)) return true;
    return false;
  }
  return o < out.size() && doc[d] == out[o] && linesMatch(doc, d + 1, out, o + 1);
}

std::optional<nlohmann::json> asJson(const std::vector<std::string>& lines) {
  const std::string text = joinLines(lines);
  if (text.find_first_of("{[") != text.find_first_not_of(" \n")) return std::nullopt;
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

bool outputMatches(const std::vector<std::string>& expected, const std::vector<std::string>& actual) {
  const auto doc = normalise(expected), out = normalise(actual);
  if (linesMatch(doc, 0, out, 0)) return true;
  const auto dj = asJson(doc), oj = asJson(out);
  return dj && oj && *dj == *oj;
}

// ---- running --------------------------------------------------------------

// A directory that looks like the source tree to the documents' commands.
fs::path scratchTree(const std::string& name) {
  const fs::path dir = tempDir("docs-" + name);
  for (const auto& e : fs::directory_iterator(sourceDir())) {
    const std::string n = e.path().filename().string();
    if (n == "build" || n == ".git" || n == ".cache") continue;
    fs::create_symlink(e.path(), dir / n);
  }
  fs::create_directories(dir / ".cache");
  if (fs::exists(modelsDir())) fs::create_directory_symlink(modelsDir(), dir / ".cache" / "models");
  const fs::path bin = fs::path(MEMPLAN_CLI).parent_path();
  fs::create_directories(dir / "build");
  for (const auto& e : fs::directory_iterator(bin)) {
    const std::string n = e.path().filename().string();
    if (n == "memplan" || n == "examples" || n == "tests" || n == "bench" || n == "python")
      fs::create_symlink(e.path(), dir / "build" / n);
  }
  return dir;
}

struct Ran {
  std::vector<std::string> output;      // stdout, then stderr
  int status = 0;
};

Ran runIn(const fs::path& dir, const std::string& command) {
  {
    std::ofstream(dir / ".docs-command.sh") << command << "\n";
  }
  const fs::path bin = fs::path(MEMPLAN_CLI).parent_path();
  const std::string cmd = "cd '" + dir.string() + "' && PATH='" + bin.string() +
                          "':/usr/bin:/bin LC_ALL=C.UTF-8 /bin/sh .docs-command.sh "
                          ">.docs-stdout 2>.docs-stderr </dev/null";
  const int status = std::system(cmd.c_str());
  Ran r;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.output = splitLines(readText(dir / ".docs-stdout") + readText(dir / ".docs-stderr"));
  return r;
}

// A pycon block, replayed by the build's Python with the module just built.
Ran runPycon(const fs::path& dir, const std::string& session) {
#ifdef MEMPLAN_DOCS_PYTHON
  {
    std::ofstream(dir / ".docs-pycon.txt") << session;
  }
  return runIn(dir, "PYTHONPATH=build/python PYTHONDONTWRITEBYTECODE=1 '" MEMPLAN_DOCS_PYTHON
                    "' tests/support/docs_pycon.py .docs-pycon.txt");
#else
  (void)dir, (void)session;
  return {{"no Python module in this build (MEMPLAN_PYTHON)"}, 1};
#endif
}

// Paths under .cache/models the commands name, when they are missing.
std::string missingModel(const std::string& commands) {
  static const std::regex re(R"(\.cache/models/[^\s'"]+)");
  for (std::sregex_iterator it(commands.begin(), commands.end(), re), end; it != end; ++it) {
    const fs::path p = modelsDir() / it->str().substr(std::string(".cache/models/").size());
    if (!fs::exists(p)) return p.string();
  }
  return "";
}

std::vector<std::string> documents() {
  std::vector<std::string> out = {"README.md"};
  std::vector<std::string> docs;
  for (const auto& e : fs::directory_iterator(sourceDir() / "docs"))
    if (e.path().extension() == ".md") docs.push_back("docs/" + e.path().filename().string());
  std::sort(docs.begin(), docs.end());
  out.insert(out.end(), docs.begin(), docs.end());
  return out;
}

class Documents : public testing::TestWithParam<std::string> {};

TEST_P(Documents, ShowWhatMemplanPrints) {
  const std::string rel = GetParam();
  const fs::path path = sourceDir() / rel;
  std::vector<std::string> lines = splitLines(readText(path));
  std::string error;
  const std::vector<Block> blocks = parseDoc(lines, error);
  ASSERT_EQ(error, "") << rel;
  if (blocks.empty()) return;  // shows no output (DocsChecker.DocumentsShowCheckedOutput counts them)
  std::string all;
  for (const Block& b : blocks) {
    all += b.setup + "\n";
    for (const Step& s : b.steps)
      for (const std::string& l : splitLines(s.command))  // a session's statements, not its output
        if (!s.pycon || l.starts_with(">>> ") || l.starts_with("... ")) all += l + "\n";
  }
  if (const std::string missing = missingModel(all); !missing.empty()) MEMPLAN_MISSING_DATA() << missing;
#ifndef MEMPLAN_DOCS_PYTHON
  // A build without the module (MEMPLAN_PYTHON=OFF, the sanitizers) checks
  // the other blocks; the Python sessions are checked where it is built.
  for (const Block& b : blocks)
    for (const Step& s : b.steps)
      if (s.pycon && dataRequired())
        MEMPLAN_CANNOT_RUN("no Python module in this build") << rel << ": Python sessions";
#endif

  std::string name = rel;
  std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '-');
  const fs::path dir = scratchTree(name);
  const bool update = std::getenv("MEMPLAN_UPDATE_DOCS") && std::string(std::getenv("MEMPLAN_UPDATE_DOCS")) == "1";
  std::vector<std::pair<const Step*, std::vector<std::string>>> rewrites;
  for (const Block& b : blocks) {
    if (!b.setup.empty()) {
      const Ran r = runIn(dir, "set -e\n" + b.setup);
      ASSERT_EQ(r.status, 0) << rel << ":" << b.line << ": setup failed: " << b.setup << "\n"
                             << joinLines(r.output);
    }
    for (const Step& s : b.steps) {
#ifndef MEMPLAN_DOCS_PYTHON
      if (s.pycon) continue;
#endif
      const Ran r = s.pycon ? runPycon(dir, s.command) : runIn(dir, s.command);
      if (outputMatches(s.expected, r.output)) continue;
      if (update) {
        rewrites.push_back({&s, r.output});
        continue;
      }
      ADD_FAILURE() << rel << ":" << s.line << ": "
                    << (s.pycon ? "the Python session" : "`" + s.command + "`") << " prints\n"
                    << joinLines(r.output) << "-- but the document shows\n"
                    << joinLines(s.expected)
                    << "-- (MEMPLAN_UPDATE_DOCS=1 build/tests/docs_test rewrites it)";
    }
  }
  if (!rewrites.empty()) {
    // Bottom up, so earlier line numbers stay valid.
    std::sort(rewrites.begin(), rewrites.end(),
              [](const auto& a, const auto& b) { return a.first->out_begin > b.first->out_begin; });
    for (const auto& [step, output] : rewrites) {
      std::string indent;
      for (const Block& b : blocks)
        for (const Step& s : b.steps)
          if (&s == step) indent = b.indent;
      std::vector<std::string> text;
      for (const std::string& l : normalise(output)) text.push_back(l.empty() ? l : indent + l);
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(step->out_begin),
                  lines.begin() + static_cast<std::ptrdiff_t>(step->out_end));
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(step->out_begin), text.begin(), text.end());
    }
    std::ofstream(path, std::ios::binary) << joinLines(lines);
    ADD_FAILURE() << rel << ": " << rewrites.size() << " output(s) rewritten; review the diff";
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Docs, Documents, testing::ValuesIn(documents()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           std::replace_if(n.begin(), n.end(),
                                           [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
                           return n;
                         });

// ---- the checker itself ---------------------------------------------------

std::vector<Block> parse(const std::string& text) {
  std::string error;
  auto blocks = parseDoc(splitLines(text), error);
  EXPECT_EQ(error, "");
  return blocks;
}

TEST(DocsChecker, FindsTranscriptsAndMarkedBlocksOnly) {
  const auto blocks = parse(
      "text\n```\n$ not checked\n```\n"
      "```console\n$ memplan verify a.pte \\\n    b.json\nOK: 3 allocations verified\n$ true\n```\n"
      "<!-- setup: cp x y -->\n<!-- output of: cat y -->\n```c\nint x;\n```\n"
      "<!-- output of: stale -->\n\nprose in between\n```json\n{}\n```\n");
  ASSERT_EQ(blocks.size(), 2u);
  ASSERT_EQ(blocks[0].steps.size(), 2u);
  EXPECT_EQ(blocks[0].steps[0].command, "memplan verify a.pte \\\n    b.json");
  EXPECT_EQ(blocks[0].steps[0].line, 6u);
  EXPECT_EQ(blocks[0].steps[0].expected, std::vector<std::string>{"OK: 3 allocations verified"});
  EXPECT_TRUE(blocks[0].steps[1].expected.empty());
  EXPECT_EQ(blocks[1].setup, "cp x y");
  ASSERT_EQ(blocks[1].steps.size(), 1u);
  EXPECT_EQ(blocks[1].steps[0].command, "cat y");
  EXPECT_EQ(blocks[1].steps[0].expected, std::vector<std::string>{"int x;"});

  std::string error;
  parseDoc(splitLines("```console\noutput without a command\n```\n"), error);
  EXPECT_EQ(error, "line 2: a console block starts with a \"$ \" command");
}

TEST(DocsChecker, ComparesWhatMattersOnly) {
  using V = std::vector<std::string>;
  EXPECT_TRUE(outputMatches({"a  ", "b"}, {"a", "b", ""}));
  EXPECT_FALSE(outputMatches({"a", "b"}, {"a", "c"}));
  EXPECT_FALSE(outputMatches({"a"}, {"a", "b"}));
  EXPECT_TRUE(outputMatches({"memplan: m.tflite, algorithm auto, planned in 0.01 s"},
                            {"memplan: m.tflite, algorithm auto, planned in 12.34 s"}));
  EXPECT_FALSE(outputMatches({"memplan: m.tflite, algorithm auto, planned in 0.01 s"},
                             {"memplan: m.tflite, algorithm greedy, planned in 0.01 s"}));
  EXPECT_TRUE(outputMatches({"head", "...", "tail"}, {"head", "x", "y", "tail"}));
  EXPECT_TRUE(outputMatches({"head", "/* ... */", "tail"}, {"head", "tail"}));
  EXPECT_TRUE(outputMatches({"head", " * ...", "tail"}, {"head", " * x", "tail"}));
  EXPECT_FALSE(outputMatches({"head", "...", "tail"}, {"head", "x", "tall"}));
  EXPECT_FALSE(outputMatches({"offset 8208 ..."}, {"offset 0 ..."}));  // "..." inside a line is text
  // JSON: layout and key order free, values exact; timings normalised.
  EXPECT_TRUE(outputMatches(V{"{\"b\": [1, 2], \"a\": 1, \"planning_seconds\": 7.8e-05}"},
                            V{"{", "  \"a\": 1,", "  \"b\": [", "    1,", "    2", "  ],",
                              "  \"planning_seconds\": 0.25", "}"}));
  EXPECT_FALSE(outputMatches(V{"{\"a\": 1}"}, V{"{\"a\": 2}"}));
}

// Commands see the source tree's files and the built programs; what they
// write stays in the scratch tree.
TEST(DocsChecker, RunsCommandsInTheScratchTree) {
  const fs::path dir = scratchTree("self");
  EXPECT_TRUE(fs::exists(dir / "examples/graphs/mlp.json"));
  EXPECT_TRUE(fs::exists(dir / "build/memplan"));
  Ran r = runIn(dir, "echo err >&2; memplan --help >/dev/null && echo on PATH; exit 3");
  EXPECT_EQ(r.output, (std::vector<std::string>{"on PATH", "err"}));  // stdout, then stderr
  EXPECT_EQ(r.status, 3);
  r = runIn(dir, "./build/memplan plan -q examples/graphs/mlp.json -o build/p.json && ls build/p.json");
  EXPECT_EQ(r.output, std::vector<std::string>{"build/p.json"});
  EXPECT_FALSE(fs::exists(fs::path(MEMPLAN_CLI).parent_path() / "p.json"));  // written in the scratch tree
  fs::remove_all(dir);
}

// A pycon block is one step: the session, replayed by the build's Python.
TEST(DocsChecker, ReplaysPythonSessions) {
  const auto blocks = parse("```pycon\n>>> x = 6\n>>> for k in (1, 2):\n...     print(k * x)\n6\n12\n```\n");
  ASSERT_EQ(blocks.size(), 1u);
  ASSERT_EQ(blocks[0].steps.size(), 1u);
  EXPECT_TRUE(blocks[0].steps[0].pycon);
  EXPECT_EQ(blocks[0].steps[0].expected.size(), 5u);
#ifdef MEMPLAN_DOCS_PYTHON
  const fs::path dir = scratchTree("pycon");
  const Ran r = runPycon(dir, ">>> x = 6\nignored\n>>> for k in (1, 2):\n...     print(k * x)\n"
                              ">>> x\n>>> int('seven')\n>>> import memplan\n");
  EXPECT_EQ(r.output, (std::vector<std::string>{
                          ">>> x = 6", ">>> for k in (1, 2):", "...     print(k * x)", "6", "12",
                          ">>> x", "6", ">>> int('seven')", "Traceback (most recent call last):",
                          "  ...", "ValueError: invalid literal for int() with base 10: 'seven'",
                          ">>> import memplan"}));
  fs::remove_all(dir);
#endif
}

// The documents do show checked output: a parser that found nothing would
// pass every document.
TEST(DocsChecker, DocumentsShowCheckedOutput) {
  std::size_t steps = 0, files = 0;
  for (const std::string& rel : documents()) {
    std::string error;
    const auto blocks = parseDoc(splitLines(readText(sourceDir() / rel)), error);
    EXPECT_EQ(error, "") << rel;
    std::size_t here = 0;
    for (const Block& b : blocks) here += b.steps.size();
    steps += here;
    files += here > 0;
  }
  EXPECT_GE(files, 6u);
  EXPECT_GE(steps, 15u);
}

}  // namespace
}  // namespace memplan::test
