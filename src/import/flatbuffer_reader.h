// Verifying accessors over one FlatBuffers buffer, shared by the TFLite and
// ExecuTorch (.pte) readers. Every accessor checks what it is about to read
// with flatbuffers::Verifier and throws InputError otherwise, naming the
// file, the byte and the place (`Where`, the reader's own description of
// where it is: "subgraph 2 tensor 7", "method 0 'forward' value 12").
//
// memplan reads both formats with its own field tables (vtable offsets),
// not generated code: the schemas are small and fixed, and the reader then
// checks exactly what it uses, with its own error messages.
#pragma once

#include <flatbuffers/flatbuffers.h>
#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "memplan/types.h"

namespace memplan::flatbuf {

namespace fb = flatbuffers;
using FieldId = fb::voffset_t;                  // a field's vtable offset
using TableVector = fb::Vector<fb::uoffset_t>;  // a vector of table offsets

// The vtable offset of field number `id` of a table.
constexpr FieldId field(int id) { return static_cast<FieldId>(4 + 2 * id); }

struct ReaderLimits {
  const char* format = "flatbuffer";  // "not <format> (verifier failed ...)"
  fb::uoffset_t max_tables = 1u << 26;
  // Vectors of 8-byte elements are read in place: their data must be
  // 8-aligned (ExecuTorch's loader requires it; TFLite files may not be).
  bool aligned_wide_elements = false;
};

// `Where` is any type with `std::string str() const`.
template <typename Where>
class Reader {
 public:
  // `size` bytes from `buf` are the flatbuffer (< 2 GiB).
  Reader(const std::uint8_t* buf, std::size_t size, const std::string& source, ReaderLimits limits)
      : buf_(buf), source_(source), limits_(limits), verifier_(buf, size, [&] {
          fb::Verifier::Options o;
          o.max_depth = 16;
          o.max_tables = limits.max_tables;
          o.check_alignment = true;
          return o;
        }()) {}

  const std::string& source() const { return source_; }
  std::size_t pos(const void* p) const {
    return static_cast<std::size_t>(static_cast<const std::uint8_t*>(p) - buf_);
  }

  [[noreturn]] void corrupt(const void* at, const Where& w, const char* what) const {
    throw InputError(fmt::format("{}: not {} (verifier failed at byte {}: {} {})", source_,
                                 limits_.format, pos(at), w.str(), what));
  }
  [[noreturn]] void fail(const void* at, const Where& w, const std::string& what) const {
    throw InputError(fmt::format("{}: byte {}: {}: {}", source_, pos(at), w.str(), what));
  }

  const fb::Table* root() {
    const fb::uoffset_t o = verifier_.VerifyOffset(std::size_t{0});
    if (o == 0) corrupt(buf_, Where{}, "root offset");
    return enter(buf_ + o, Where{}, "table");
  }

  // A sub-table field (nullptr when absent).
  const fb::Table* table(const fb::Table* t, FieldId f, const Where& w, const char* name) {
    if (!t->VerifyOffset(verifier_, f)) corrupt(t, w, name);
    const auto* p = t->GetPointer<const std::uint8_t*>(f);
    return p ? enter(p, w, name) : nullptr;
  }

  // Element `i` of a vector of tables.
  const fb::Table* tableAt(const TableVector* v, fb::uoffset_t i, const Where& w) {
    const auto* slot = reinterpret_cast<const std::uint8_t*>(v->Data()) + std::size_t{4} * i;
    const fb::uoffset_t o = verifier_.VerifyOffset(pos(slot));
    if (o == 0) corrupt(slot, w, "offset");
    return enter(slot + o, w, "table");
  }

  template <typename T>
  const fb::Vector<T>* vector(const fb::Table* t, FieldId f, const Where& w, const char* name) {
    if (!t->VerifyOffset(verifier_, f)) corrupt(t, w, name);
    const auto* v = t->GetPointer<const fb::Vector<T>*>(f);
    if (v && !verifier_.VerifyVector(v)) corrupt(v, w, name);
    if (v && limits_.aligned_wide_elements && sizeof(T) > 4 && pos(v->Data()) % sizeof(T) != 0)
      corrupt(v, w, name);
    return v;
  }

  const fb::String* string(const fb::Table* t, FieldId f, const Where& w, const char* name) {
    if (!t->VerifyOffset(verifier_, f)) corrupt(t, w, name);
    const auto* s = t->GetPointer<const fb::String*>(f);
    if (s && !verifier_.VerifyString(s)) corrupt(s, w, name);
    return s;
  }

  template <typename T>
  T scalar(const fb::Table* t, FieldId f, T fallback, const Where& w, const char* name) const {
    if (!t->VerifyField<T>(verifier_, f, sizeof(T))) corrupt(t, w, name);
    return t->GetField<T>(f, fallback);
  }

  // Byte position of a present field of `t`, 0 when absent.
  std::size_t fieldPos(const fb::Table* t, FieldId f) const {
    const fb::voffset_t o = t->GetOptionalFieldOffset(f);
    return o ? pos(t) + o : 0;
  }

 private:
  // Tables are entered and left at once: the readers' own traversals have a
  // fixed depth, so only the vtable check and the table count matter.
  const fb::Table* enter(const std::uint8_t* p, const Where& w, const char* name) {
    if (!verifier_.VerifyTableStart(p)) corrupt(p, w, name);
    verifier_.EndTable();
    return reinterpret_cast<const fb::Table*>(p);
  }

  const std::uint8_t* buf_;
  const std::string& source_;
  ReaderLimits limits_;
  fb::Verifier verifier_;
};

}  // namespace memplan::flatbuf
