#include "support/text.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "memplan/types.h"

namespace memplan {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], 0 if invalid
// (overlong forms, surrogates and code points above U+10FFFF included).
std::size_t utf8Length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  return n;
}

// `s` with each byte that is neither part of a valid UTF-8 sequence nor an
// ASCII byte `keep` accepts written \xNN; a kept backslash becomes
// `backslash`.
template <class Keep>
std::string hexEscaped(std::string_view s, Keep keep, std::string_view backslash) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x80 ? (keep(c) ? 1 : 0) : utf8Length(s, i);
    if (n > 0) {
      if (c == '\\') out.append(backslash);
      else out.append(s.substr(i, n));
      i += n;
      continue;
    }
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
    ++i;
  }
  return out;
}

}  // namespace

bool isUtf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = utf8Length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string escapeBytes(std::string_view s) {
  return hexEscaped(s, [](unsigned char) { return true; }, "\\\\");
}

std::optional<std::string> unescapeBytes(std::string_view s) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (i + 1 < s.size() && s[i + 1] == '\\') {
      out += '\\';
      ++i;
      continue;
    }
    if (i + 3 >= s.size() || s[i + 1] != 'x') return std::nullopt;
    const int hi = hex(s[i + 2]), lo = hex(s[i + 3]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 3;
  }
  return out;
}

std::string printable(std::string_view s, std::size_t max) {
  std::string out =
      hexEscaped(s.substr(0, max), [](unsigned char c) { return c >= 0x20 && c < 0x7f; }, "\\");
  if (s.size() > max) out += "...";
  return out;
}

std::string closest(std::string_view word, const std::vector<std::string>& candidates) {
  // Levenshtein distance, case-insensitive; O(|word| * |candidate|) each.
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  const auto distance = [&](std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      std::size_t diag = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        const std::size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (lower(a[i - 1]) != lower(b[j - 1]))});
        diag = up;
      }
    }
    return row[b.size()];
  };
  if (word.empty() || word.size() > 64) return "";
  std::string best;
  // Close enough: a third of the letters wrong (at least 2), or a prefix.
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const bool prefix = word.size() >= 3 && c.size() > word.size() &&
                        std::equal(word.begin(), word.end(), c.begin());
    const std::size_t d = prefix ? 1 : distance(word, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string formatBytes(Bytes bytes, bool exact) {
  std::string text;
  if (bytes < 1024) {
    text = fmt::format("{} B", bytes);
  } else {
    // Pick the unit after rounding, so 1048575 B reads "1.0 MiB", not
    // "1024.0 KiB".
    static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = static_cast<double>(bytes) / 1024.0;
    std::size_t unit = 0;
    while (unit + 1 < std::size(kUnits) && std::round(value * 10.0) >= 1024.0 * 10.0) {
      value /= 1024.0;
      ++unit;
    }
    text = fmt::format("{:.1f} {}", value, kUnits[unit]);
  }
  if (exact && bytes >= 1024) text += fmt::format(" ({} B)", bytes);
  return text;
}

}  // namespace memplan
