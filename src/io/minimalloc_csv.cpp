// MiniMalloc CSV buffer lists (docs/graph-format.md, "Buffer lists").
//
//   id,lower,upper,size[,alignment][,offset]     header, columns in any order
//   b1,0,3,4                                     one buffer a row
//
// The lifetime is half-open [lower, upper) and becomes Buffer{start = lower,
// end = upper}. An `offset` column is a previous solution: it is kept in
// BufferList::offsets, never turned into pinned offsets (the caller decides
// whether to verify it or to plan afresh). Blank lines, CRLF line ends,
// spaces around cells and a UTF-8 byte order mark are accepted.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <string>
#include <unordered_set>

#include "memplan/io.h"

namespace memplan {
namespace {

enum Column { kId, kLower, kUpper, kSize, kAlignment, kOffset, kColumns };
constexpr const char* kColumnNames[kColumns] = {"id", "lower", "upper",
                                                "size", "alignment", "offset"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// A cell as it may be shown in a one-line message: printable, at most 40 chars.
std::string shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 40))
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (s.size() > 40) out += "...";
  return out;
}

// Splits on commas; no quoting (MiniMalloc writes none).
void splitCells(std::string_view line, std::vector<std::string_view>& cells) {
  cells.clear();
  for (;;) {
    const std::size_t comma = line.find(',');
    cells.push_back(trim(line.substr(0, comma)));
    if (comma == std::string_view::npos) return;
    line.remove_prefix(comma + 1);
  }
}

class Reader {
 public:
  Reader(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  BufferList read() {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") text_.remove_prefix(3);
    // Rows are at most the line count; the cap keeps BufferId in range.
    const std::size_t lines =
        static_cast<std::size_t>(std::count(text_.begin(), text_.end(), '\n')) + 1;

    BufferList list;
    std::vector<std::string_view> cells;
    std::unordered_set<std::string_view> seen;
    bool have_header = false;
    bool has_offset = false;
    while (nextLine()) {
      if (trim(line_).empty()) continue;
      splitCells(line_, cells);
      if (!have_header) {
        readHeader(cells);
        have_header = true;
        has_offset = column_[kOffset] >= 0;
        const std::size_t rows = std::min<std::size_t>(lines, kMaxRows);
        list.ids.reserve(rows);
        list.problem.buffers.reserve(rows);
        if (has_offset) list.offsets.reserve(rows);
        seen.reserve(rows);
        continue;
      }
      if (list.problem.buffers.size() >= kMaxRows)
        fail("more than " + std::to_string(kMaxRows) + " buffers");
      if (cells.size() != width_)
        fail("expected " + std::to_string(width_) + " cells, got " +
             std::to_string(cells.size()));

      const std::string_view id = cells[static_cast<std::size_t>(column_[kId])];
      if (id.empty()) fail("column 'id': empty");
      if (!seen.insert(id).second) fail("duplicate id '" + shown(id) + "'");

      Buffer b;
      b.id = static_cast<BufferId>(list.problem.buffers.size());
      b.name = std::string(id);
      const std::uint64_t lower = number(cells, kLower, kMaxTime);
      const std::uint64_t upper = number(cells, kUpper, kMaxTime);
      if (upper <= lower)
        fail("upper " + std::to_string(upper) + " must be greater than lower " +
             std::to_string(lower) + " (the lifetime is [lower, upper))");
      b.start = static_cast<TimeValue>(lower);
      b.end = static_cast<TimeValue>(upper);
      b.size = number(cells, kSize, kMaxBytes);
      b.nbytes = b.size;
      if (column_[kAlignment] >= 0 && !cell(cells, kAlignment).empty()) {
        b.alignment = number(cells, kAlignment, kMaxBytes);
        if (b.alignment == 0 || (b.alignment & (b.alignment - 1)) != 0)
          fail("column 'alignment': expected a power of two, got '" +
               shown(cell(cells, kAlignment)) + "'");
      }
      if (has_offset) {
        std::optional<Offset> offset;
        if (!cell(cells, kOffset).empty()) {
          offset = number(cells, kOffset, kMaxBytes);
          if (!checkedAdd(*offset, b.size))
            fail("column 'offset': offset + size is above the limit of " +
                 std::to_string(kMaxBytes));
        }
        list.offsets.push_back(offset);
      }
      list.ids.emplace_back(id);
      list.problem.buffers.push_back(std::move(b));
    }
    if (!have_header) throw InputError(source_ + ": empty file, expected a header line " +
                                       "'id,lower,upper,size'");
    return list;
  }

 private:
  static constexpr std::size_t kMaxRows = 0x7fffffff;  // BufferId is 32 bits
  static constexpr std::uint64_t kMaxTime = 0x7fffffffffffffffULL;

  bool nextLine() {
    if (pos_ > text_.size()) return false;
    const std::size_t nl = text_.find('\n', pos_);
    const std::size_t end = nl == std::string_view::npos ? text_.size() : nl;
    line_ = text_.substr(pos_, end - pos_);
    if (!line_.empty() && line_.back() == '\r') line_.remove_suffix(1);
    pos_ = end + 1;
    ++line_no_;
    return true;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(source_ + ":" + std::to_string(line_no_) + ": " + what);
  }

  void readHeader(const std::vector<std::string_view>& cells) {
    std::fill(std::begin(column_), std::end(column_), -1);
    for (std::size_t i = 0; i < cells.size(); ++i) {
      int found = -1;
      for (int c = 0; c < kColumns; ++c)
        if (cells[i] == kColumnNames[c]) found = c;
      if (found < 0)
        fail("unknown column '" + shown(cells[i]) +
             "' (expected id, lower, upper, size, alignment, offset)");
      if (column_[found] >= 0) fail("duplicate column '" + shown(cells[i]) + "'");
      column_[found] = static_cast<int>(i);
    }
    for (int c : {kId, kLower, kUpper, kSize})
      if (column_[c] < 0) fail(std::string("missing column '") + kColumnNames[c] + "'");
    width_ = cells.size();
  }

  std::string_view cell(const std::vector<std::string_view>& cells, Column c) const {
    return cells[static_cast<std::size_t>(column_[c])];
  }

  std::uint64_t number(const std::vector<std::string_view>& cells, Column c,
                       std::uint64_t max) const {
    const std::string_view s = cell(cells, c);
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec == std::errc::invalid_argument || end != s.data() + s.size())
      fail(std::string("column '") + kColumnNames[c] +
           "': expected a non-negative integer, got '" + shown(s) + "'");
    if (ec == std::errc::result_out_of_range || v > max)
      fail(std::string("column '") + kColumnNames[c] + "': " + shown(s) +
           " is above the limit of " + std::to_string(max));
    return v;
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t pos_ = 0;
  std::string_view line_;
  std::size_t line_no_ = 0;
  int column_[kColumns] = {-1, -1, -1, -1, -1, -1};
  std::size_t width_ = 0;
};

}  // namespace

BufferList readMiniMallocCsv(std::string_view text, const std::string& source_name) {
  return Reader(text, source_name).read();
}

std::string writeMiniMallocCsv(const BufferList& list, const std::vector<Offset>& offsets) {
  const auto& buffers = list.problem.buffers;
  if (!offsets.empty() && offsets.size() != buffers.size())
    throw std::invalid_argument("writeMiniMallocCsv: " + std::to_string(offsets.size()) +
                                " offsets for " + std::to_string(buffers.size()) + " buffers");
  bool aligned = false;
  for (const Buffer& b : buffers) aligned |= b.alignment > 1;

  std::unordered_set<std::string> written;
  written.reserve(buffers.size());
  std::string out = "id,lower,upper,size";
  if (aligned) out += ",alignment";
  if (!offsets.empty()) out += ",offset";
  out += '\n';
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    const std::string id = i < list.ids.size() ? list.ids[i]
                           : !b.name.empty()   ? b.name
                                               : std::to_string(i);
    if (id.empty() || id.find_first_of(",\r\n") != std::string::npos ||
        trim(id).size() != id.size())
      throw InputError("buffer " + std::to_string(i) + ": id '" + shown(id) +
                       "' cannot be written to CSV (empty, comma, line break or edge space)");
    // The reader refuses duplicate ids: never write a file it cannot read.
    if (!written.insert(id).second)
      throw InputError("buffer " + std::to_string(i) + ": id '" + shown(id) +
                       "' is not unique and cannot be written to CSV");
    out += id;
    out += ',' + std::to_string(b.start) + ',' + std::to_string(b.end) + ',' +
           std::to_string(b.size);
    if (aligned) out += ',' + std::to_string(b.alignment);
    if (!offsets.empty()) out += ',' + std::to_string(offsets[i]);
    out += '\n';
  }
  return out;
}

}  // namespace memplan
