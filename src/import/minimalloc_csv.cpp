// MiniMalloc CSV buffer lists (docs/graph-format.md, "Buffer lists").
//
//   id,lower,upper,size[,alignment][,hint][,gaps][,offset]   columns in any order
//   b1,0,3,4                                                 one buffer a row
//
// Read as MiniMalloc's converter reads them: `buffer` and `buffer_id` name
// the id column, `start` and `begin` the lower one; an `end` column is an
// inclusive upper bound (upper = end + 1, gap ends too). The lifetime is
// half-open [lower, upper) and becomes Buffer{start = lower, end = upper}.
// An `offset` column pins buffers (Buffer::fixed_offset), as MiniMalloc's
// solver does; the column is also kept in BufferList::offsets, where a
// solution file's offsets are read from. `hint` is a preferred offset (-1 or
// empty: none). `gaps` lists windows "L-U" (no bytes held in [L, U)) or
// "L-U@lo:hi" (only bytes [lo, hi) held), separated by spaces; gaps are
// clipped to the lifetime (MiniMalloc accepts them outside it, where they
// mean nothing) and must not overlap. Blank lines, CRLF line ends, spaces
// around cells and a UTF-8 byte order mark are accepted.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <string>
#include <unordered_set>

#include "import/minimalloc_csv.h"
#include "support/text.h"
#include "memplan/io.h"
#include "memplan/limits.h"

namespace memplan {
namespace {

enum Column { kId, kLower, kUpper, kSize, kAlignment, kHint, kGaps, kOffset, kColumns };
constexpr const char* kColumnNames[kColumns] = {"id",   "lower", "upper", "size",
                                                "alignment", "hint", "gaps", "offset"};

// Header names MiniMalloc reads, and the column each one is.
struct HeaderName {
  std::string_view name;
  Column column;
  bool inclusive_end = false;
};
constexpr HeaderName kHeaderNames[] = {
    {"id", kId},         {"buffer", kId},       {"buffer_id", kId},
    {"lower", kLower},   {"start", kLower},     {"begin", kLower},
    {"upper", kUpper},   {"end", kUpper, true}, {"size", kSize},
    {"alignment", kAlignment}, {"hint", kHint}, {"gaps", kGaps},
    {"offset", kOffset},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// A cell as it may be shown in a one-line message: at most 40 bytes,
// escaped where not printable UTF-8.
std::string shown(std::string_view s) { return printable(s, 40); }

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

// A non-negative decimal integer spanning all of `s`, at most `max`.
enum class Parse { Ok, NotANumber, TooBig };
Parse parseUnsigned(std::string_view s, std::uint64_t max, std::uint64_t& v) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec == std::errc::invalid_argument || end != s.data() + s.size())
    return Parse::NotANumber;
  if (ec == std::errc::result_out_of_range || v > max) return Parse::TooBig;
  return Parse::Ok;
}

class CsvReader {
 public:
  CsvReader(std::string_view text, const std::string& source) : text_(text), source_(source) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") text_.remove_prefix(3);
  }

  // The header's cells (the first line that is not blank), unchecked.
  std::vector<std::string_view> header() {
    std::vector<std::string_view> cells;
    while (nextLine())
      if (!trim(line_).empty()) {
        splitCells(line_, cells);
        break;
      }
    return cells;
  }

  BufferList read() {
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

      const std::string_view id = cell(cells, kId);
      if (id.empty()) fail(columnLabel(kId) + ": empty");
      if (!seen.insert(id).second) fail("duplicate id '" + shown(id) + "'");

      Buffer b;
      b.id = static_cast<BufferId>(list.problem.buffers.size());
      b.name = std::string(id);
      const std::uint64_t lower = number(cells, kLower, kMaxTime);
      const std::uint64_t upper_cell = number(cells, kUpper, kMaxTime - inclusive_);
      const std::uint64_t upper = upper_cell + inclusive_;
      if (upper <= lower) {
        if (inclusive_)
          fail(header_[kUpper] + " " + std::to_string(upper_cell) + " must be at least " +
               header_[kLower] + " " + std::to_string(lower) + " (the lifetime is [" +
               header_[kLower] + ", " + header_[kUpper] + "], " + header_[kUpper] + " inclusive)");
        fail(header_[kUpper] + " " + std::to_string(upper) + " must be greater than " +
             header_[kLower] + " " + std::to_string(lower) + " (the lifetime is [" +
             header_[kLower] + ", " + header_[kUpper] + "))");
      }
      b.start = static_cast<TimeValue>(lower);
      b.end = static_cast<TimeValue>(upper);
      b.size = number(cells, kSize, kMaxBytes);
      b.nbytes = b.size;
      if (column_[kAlignment] >= 0 && !cell(cells, kAlignment).empty()) {
        b.alignment = number(cells, kAlignment, limits::kMaxAlignment);
        if (b.alignment == 0)
          fail(columnLabel(kAlignment) + ": expected a positive integer, got '0'");
      }
      if (column_[kHint] >= 0) {
        // Empty or negative (MiniMalloc writes -1): no hint.
        const std::string_view h = cell(cells, kHint);
        std::uint64_t ignored = 0;
        const bool negative = h.size() > 1 && h[0] == '-' &&
                              parseUnsigned(h.substr(1), kMaxTime, ignored) == Parse::Ok;
        if (!h.empty() && !negative) b.hint = number(cells, kHint, kMaxBytes);
      }
      if (column_[kGaps] >= 0) b.gaps = gaps(cell(cells, kGaps), b);
      if (has_offset) {
        std::optional<Offset> offset;
        if (!cell(cells, kOffset).empty()) {
          offset = number(cells, kOffset, kMaxBytes);
          if (!checkedAdd(*offset, b.size))
            fail(columnLabel(kOffset) + ": offset + size is above the limit of " +
                 std::to_string(kMaxBytes));
        }
        b.fixed_offset = offset;
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
  static constexpr std::size_t kMaxRows = limits::kMaxSpecs;  // the memory budget (memplan/limits.h)
  // Steps of a lifetime: memplan's limit (2^62), so that a step plus one
  // and sums of steps never overflow further on.
  static constexpr std::uint64_t kMaxTime = static_cast<std::uint64_t>(limits::kMaxTime);

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

  // "column 'start'": the column as the file names it.
  std::string columnLabel(Column c) const { return "column '" + header_[c] + "'"; }

  void readHeader(const std::vector<std::string_view>& cells) {
    std::fill(std::begin(column_), std::end(column_), -1);
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const HeaderName* found = nullptr;
      for (const HeaderName& h : kHeaderNames)
        if (cells[i] == h.name) found = &h;
      if (!found)
        fail("unknown column '" + shown(cells[i]) +
             "' (expected id, lower, upper, size, alignment, hint, gaps, offset; or MiniMalloc's "
             "buffer, buffer_id, start, begin, end)");
      if (column_[found->column] >= 0)
        fail("duplicate column '" + shown(cells[i]) + "'" +
             (header_[found->column] == found->name
                  ? std::string()
                  : " (another name of '" + header_[found->column] + "')"));
      column_[found->column] = static_cast<int>(i);
      header_[found->column] = std::string(found->name);
      if (found->inclusive_end) inclusive_ = 1;
    }
    for (Column c : {kId, kLower, kUpper, kSize})
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
    switch (parseUnsigned(s, max, v)) {
      case Parse::Ok: return v;
      case Parse::NotANumber:
        fail(columnLabel(c) + ": expected a non-negative integer, got '" + shown(s) + "'");
      case Parse::TooBig:
        fail(columnLabel(c) + ": " + shown(s) + " is above the limit of " + std::to_string(max));
    }
    return v;
  }

  // The gaps cell: "L-U" or "L-U@lo:hi" tokens separated by spaces.
  std::vector<Gap> gaps(std::string_view text, const Buffer& b) const {
    std::vector<Gap> out;
    const auto bad = [&](std::string_view token, const std::string& why) {
      fail(columnLabel(kGaps) + ": '" + shown(token) + "' " + why);
    };
    const auto num = [&](std::string_view token, std::string_view s, std::uint64_t max) {
      std::uint64_t v = 0;
      if (parseUnsigned(s, max, v) != Parse::Ok)
        bad(token, "is not L-U or L-U@lo:hi with non-negative integers" +
                       std::string(inclusive_ ? " (U inclusive)" : ""));
      return v;
    };
    while (!text.empty()) {
      const std::size_t space = text.find_first_of(" \t");
      const std::string_view token = text.substr(0, space);
      text = space == std::string_view::npos ? std::string_view{} : text.substr(space + 1);
      if (token.empty()) continue;
      if (out.size() >= kMaxGapsPerBuffer)
        bad(token, "is one gap too many (at most " + std::to_string(kMaxGapsPerBuffer) + ")");
      const std::size_t at = token.find('@');
      const std::string_view span = token.substr(0, at);
      const std::size_t dash = span.find('-');
      if (dash == std::string_view::npos) bad(token, "has no '-' (expected L-U or L-U@lo:hi)");
      Gap g;
      const std::uint64_t lo_t = num(token, span.substr(0, dash), kMaxTime);
      const std::uint64_t hi_t = num(token, span.substr(dash + 1), kMaxTime - inclusive_) + inclusive_;
      g.start = static_cast<TimeValue>(lo_t);
      g.end = static_cast<TimeValue>(hi_t);
      if (at != std::string_view::npos) {
        const std::string_view window = token.substr(at + 1);
        const std::size_t colon = window.find(':');
        if (colon == std::string_view::npos) bad(token, "has no ':' in its window (lo:hi)");
        const Bytes lo = num(token, window.substr(0, colon), kMaxBytes);
        const Bytes hi = num(token, window.substr(colon + 1), kMaxBytes);
        if (lo > hi || hi > b.size)
          bad(token, "has a window outside the buffer's " + std::to_string(b.size) +
                         " bytes (0 <= lo <= hi <= size)");
        g.window = std::pair<Bytes, Bytes>{lo, hi};
      }
      // Clipped to the lifetime; what is left empty means nothing.
      g.start = std::max(g.start, b.start);
      g.end = std::min(g.end, b.end);
      if (g.start < g.end) out.push_back(g);
    }
    std::sort(out.begin(), out.end(), [](const Gap& x, const Gap& y) { return x.start < y.start; });
    for (std::size_t i = 1; i < out.size(); ++i)
      if (out[i].start < out[i - 1].end)
        fail(columnLabel(kGaps) + ": gaps [" + std::to_string(out[i - 1].start) + ", " +
             std::to_string(out[i - 1].end) + ") and [" + std::to_string(out[i].start) + ", " +
             std::to_string(out[i].end) + ") overlap");
    return out;
  }

  // Bounds the work and memory one cell can ask for.
  static constexpr std::size_t kMaxGapsPerBuffer = 1 << 16;

  std::string_view text_;
  const std::string& source_;
  std::size_t pos_ = 0;
  std::string_view line_;
  std::size_t line_no_ = 0;
  int column_[kColumns] = {-1, -1, -1, -1, -1, -1, -1, -1};
  std::string header_[kColumns];     // each column's name in the file
  std::uint64_t inclusive_ = 0;      // 1 with an `end` column
  std::size_t width_ = 0;
};

// A cell a spreadsheet would evaluate (OWASP's CSV injection list: = + - @,
// tab, carriage return first), unless it is a plain number such as "-1".
bool looksLikeFormula(std::string_view cell) {
  if (cell.empty() || std::string_view("=+-@\t\r").find(cell.front()) == std::string_view::npos)
    return false;
  const std::string_view digits = cell.substr(1);
  const bool number = (cell.front() == '-' || cell.front() == '+') && !digits.empty() &&
                      digits.find_first_not_of("0123456789") == std::string_view::npos;
  return !number;
}

std::string gapText(const Gap& g) {
  std::string s = std::to_string(g.start) + "-" + std::to_string(g.end);
  if (g.window) s += "@" + std::to_string(g.window->first) + ":" + std::to_string(g.window->second);
  return s;
}

}  // namespace

BufferList readMiniMallocCsv(std::string_view text, const std::string& source_name) {
  return CsvReader(text, source_name).read();
}

bool csvHasColumn(std::string_view text, std::string_view column) {
  const std::vector<std::string_view> cells = CsvReader(text, "").header();
  return std::find(cells.begin(), cells.end(), column) != cells.end();
}

std::string writeMiniMallocCsv(const BufferList& list, const std::vector<Offset>& offsets) {
  const auto& buffers = list.problem.buffers;
  if (!offsets.empty() && offsets.size() != buffers.size())
    throw std::invalid_argument("writeMiniMallocCsv: " + std::to_string(offsets.size()) +
                                " offsets for " + std::to_string(buffers.size()) + " buffers");
  bool aligned = false, hinted = false, gapped = false, pinned = false;
  for (const Buffer& b : buffers) {
    aligned |= b.alignment > 1;
    hinted |= b.hint.has_value();
    gapped |= !b.gaps.empty();
    pinned |= b.fixed_offset.has_value();
  }
  // A solution's offsets, or else the problem's pins.
  const bool offset_column = !offsets.empty() || pinned;

  std::unordered_set<std::string> written;
  written.reserve(buffers.size());
  std::string out = "id,lower,upper,size";
  if (aligned) out += ",alignment";
  if (hinted) out += ",hint";
  if (gapped) out += ",gaps";
  if (offset_column) out += ",offset";
  out += '\n';
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    const std::string id = i < list.ids.size() ? list.ids[i]
                           : !b.name.empty()   ? b.name
                                               : std::to_string(i);
    if (id.empty() || id.find_first_of(",\"\r\n") != std::string::npos ||
        trim(id).size() != id.size())
      throw InputError("buffer " + std::to_string(i) + ": id '" + shown(id) +
                       "' cannot be written to CSV (empty, comma, quote, line break or edge space)");
    if (looksLikeFormula(id))
      throw InputError("buffer " + std::to_string(i) + ": id '" + shown(id) +
                       "' cannot be written to CSV: it starts with '" + shown(id.substr(0, 1)) +
                       "', and spreadsheets would run the cell as a formula");
    // The reader refuses duplicate ids: never write a file it cannot read.
    if (!written.insert(id).second)
      throw InputError("buffer " + std::to_string(i) + ": id '" + shown(id) +
                       "' is not unique and cannot be written to CSV");
    out += id;
    out += ',' + std::to_string(b.start) + ',' + std::to_string(b.end) + ',' +
           std::to_string(b.size);
    if (aligned) out += ',' + std::to_string(b.alignment);
    if (hinted) out += ',' + (b.hint ? std::to_string(*b.hint) : std::string("-1"));
    if (gapped) {
      out += ',';
      for (std::size_t k = 0; k < b.gaps.size(); ++k) out += (k ? " " : "") + gapText(b.gaps[k]);
    }
    if (!offsets.empty()) out += ',' + std::to_string(offsets[i]);
    else if (offset_column) out += ',' + (b.fixed_offset ? std::to_string(*b.fixed_offset) : "");
    out += '\n';
  }
  return out;
}

}  // namespace memplan
