// File layout of ExecuTorch programs: the extended header and the segments.
#include <algorithm>
#include <array>
#include <cstring>

#include "import/pte_format.h"

namespace memplan::pte {

Layout readLayout(std::string_view bytes, const std::string& source) {
  if (bytes.size() < 8)
    throw InputError(
        fmt::format("{}: not an ExecuTorch program (file is {} bytes)", source, bytes.size()));
  const std::string_view ident = bytes.substr(4, 4);
  if (ident != kIdentifier) {
    const bool printable = std::all_of(ident.begin(), ident.end(),
                                       [](char c) { return c >= 0x20 && c < 0x7f; });
    throw InputError(printable ? fmt::format("{}: byte 4: file identifier '{}' is not '{}'", source,
                                             ident, kIdentifier)
                               : fmt::format("{}: byte 4: no file identifier (expected '{}')",
                                             source, kIdentifier));
  }
  const auto u32 = [&](std::size_t at) {
    std::uint32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    return fb::EndianScalar(v);
  };
  const auto u64 = [&](std::size_t at) {
    std::uint64_t v;
    std::memcpy(&v, bytes.data() + at, 8);
    return fb::EndianScalar(v);
  };
  Layout l;
  l.program_size = bytes.size();
  if (bytes.size() >= kHeaderAt + 8 && bytes.substr(kHeaderAt, 4) == kHeaderMagic) {
    l.header = true;
    l.header_length = u32(kHeaderAt + 4);
    if (l.header_length < kHeaderMinLength || l.header_length > bytes.size() - kHeaderAt)
      throw InputError(fmt::format(
          "{}: byte {}: extended header length {} (expected at least {}, within the {}-byte file)",
          source, kHeaderAt + 4, l.header_length, kHeaderMinLength, bytes.size()));
    l.program_size = u64(kHeaderAt + 8);
    l.segment_base = u64(kHeaderAt + 16);
    if (l.header_length >= kHeaderFullLength) l.segment_data_size = u64(kHeaderAt + 24);
    if (l.program_size < kHeaderAt + l.header_length || l.program_size > bytes.size())
      throw InputError(fmt::format(
          "{}: byte {}: extended header: program size {} lies outside the file ({} bytes)", source,
          kHeaderAt + 8, l.program_size, bytes.size()));
    if (l.segment_base != 0 && (l.segment_base < l.program_size || l.segment_base > bytes.size()))
      throw InputError(fmt::format(
          "{}: byte {}: extended header: segment base offset {} lies outside [{}, {}] (program "
          "end, file size)",
          source, kHeaderAt + 16, l.segment_base, l.program_size, bytes.size()));
    if (l.segment_base != 0 && l.segment_data_size > bytes.size() - l.segment_base)
      throw InputError(fmt::format(
          "{}: byte {}: extended header: {} bytes of segment data from offset {} run past the end "
          "of the file ({} bytes: truncated?)",
          source, kHeaderAt + 24, l.segment_data_size, l.segment_base, bytes.size()));
  }
  if (l.program_size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    throw InputError(fmt::format("{}: the program flatbuffer is {} bytes; FlatBuffers end at 2 GiB",
                                 source, l.program_size));
  return l;
}

AlignedBytes::AlignedBytes(std::string_view bytes) {
  data_ = reinterpret_cast<const std::uint8_t*>(bytes.data());
  if (reinterpret_cast<std::uintptr_t>(data_) % 8 != 0) {
    copy_.resize((bytes.size() + 7) / 8);
    std::memcpy(copy_.data(), bytes.data(), bytes.size());
    data_ = reinterpret_cast<const std::uint8_t*>(copy_.data());
  }
}

unsigned scalarTypeBytes(std::int8_t code) {
  // Byte, Char, Short, Int, Long, Half, Float, Double, ComplexHalf,
  // ComplexFloat, ComplexDouble, Bool, QInt8, QUInt8, QInt32, BFloat16,
  // QUInt4x2, QUInt2x4, Bits1x8, Bits2x4, Bits4x2, Bits8, Bits16,
  // Float8_e5m2, Float8_e4m3fn, Float8_e5m2fnuz, Float8_e4m3fnuz, UInt16,
  // UInt32, UInt64.
  static constexpr std::array<unsigned char, 30> kBytes{1, 1, 2, 4, 8, 2, 4, 8, 4, 8,
                                                         16, 1, 1, 1, 4, 2, 1, 1, 1, 1,
                                                         1, 1, 2, 1, 1, 1, 1, 2, 4, 8};
  if (code < 0 || static_cast<std::size_t>(code) >= kBytes.size()) return 0;
  return kBytes[static_cast<std::size_t>(code)];
}

std::uint64_t hashBytes(const std::uint8_t* p, std::size_t n) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace memplan::pte
