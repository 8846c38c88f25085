// Writes a .tflite model with a TensorFlow Lite Micro offline plan in its
// metadata (see export/tflite_writer.h).
//
// FlatBuffers offsets are unsigned and relative: every table, vector and
// string points forward to what it refers to. So a whole flatbuffer moved
// further into a file stays valid, and new tables written in front of it
// may point into it. The writer:
//  1. reads the original's Model table (verified): its fields, its buffers
//     and metadata vectors, and which buffers tensors and metadata use;
//  2. writes, in front: the root offset and "TFL3", a new Model table whose
//     fields point to the original's operator codes, subgraphs,
//     description, metadata_buffer and signature defs, a new buffers
//     vector (the original's Buffer tables, plus the plan's buffer), a new
//     metadata vector (the original's entries without an old offline plan,
//     plus the new entry), the new Buffer and Metadata tables, the name and
//     the plan's bytes (16-byte aligned, as the schema asks of buffer data);
//  3. pads that head to a multiple of 64 bytes -- every alignment inside the
//     original is kept -- and appends the original file unchanged, except
//     that buffers stored after the flatbuffer (Buffer.offset, models above
//     2 GB) have their absolute offsets moved by the head's size.
// The original root table stays in the file, unreferenced. A replaced plan's
// buffer is reused when nothing else refers to it, so planning a planned
// model again does not grow its buffer list; and when the new plan has the
// old one's length (the same model planned again) and its bytes are its own
// (no other object shares them: planBytesExclusive), its numbers are written
// over the old plan's bytes and nothing else changes: the file keeps its
// size however often it is planned.
// Either way the result is read back before it is returned
// (checkTfliteRewrite): every other buffer, metadata entry and Model field
// the same, the plan the one given.
#include <flatbuffers/flatbuffers.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "import/flatbuffer_reader.h"
#include "export/tflite_writer.h"

namespace memplan {
namespace {

namespace fb = flatbuffers;
using flatbuf::FieldId;
using flatbuf::field;

// TFLite schema: Model's fields in declaration order.
constexpr int kVersion = 0, kBuffers = 4, kMetadata = 6, kModelFields = 8;
constexpr int kSubgraphs = 2, kSubgraphTensors = 0, kTensorBuffer = 2;
constexpr int kBufferOffset = 1;  // field 0 is data
constexpr int kMetadataName = 0, kMetadataBuffer = 1, kMetadataBufferList = 5;
constexpr std::string_view kPlanName = "OfflineMemoryAllocation";
constexpr std::int32_t kPlanVersion = 1;
constexpr std::size_t kHeadAlignment = 64;

// Verified reads of the original flatbuffer.
class Original {
 public:
  Original(const std::uint8_t* data, std::size_t fb_size, const std::string& source)
      : data_(data), source_(source), v_(data, fb_size, [] {
          fb::Verifier::Options o;
          o.max_depth = 16;
          o.max_tables = 1u << 26;
          o.check_alignment = true;
          return o;
        }()) {}

  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    throw InputError(fmt::format("{}: byte {}: {}", source_, at, what));
  }
  std::size_t pos(const void* p) const {
    return static_cast<std::size_t>(static_cast<const std::uint8_t*>(p) - data_);
  }
  const fb::Table* root() {
    const fb::uoffset_t o = v_.VerifyOffset(0);
    if (o == 0) fail(0, "root offset");
    return enter(data_ + o, "Model");
  }
  const fb::Table* enter(const std::uint8_t* p, const char* what) {
    if (!v_.VerifyTableStart(p)) fail(pos(p), fmt::format("{} table does not verify", what));
    v_.EndTable();
    return reinterpret_cast<const fb::Table*>(p);
  }
  // Absolute position of the object an offset field points to, 0 if absent.
  std::size_t target(const fb::Table* t, int id, const char* what) {
    if (!t->VerifyOffset(v_, field(id))) fail(pos(t), fmt::format("field {} does not verify", what));
    const auto off = t->GetOptionalFieldOffset(field(id));
    if (off == 0) return 0;
    const std::uint8_t* slot = reinterpret_cast<const std::uint8_t*>(t) + off;
    return pos(slot) + fb::ReadScalar<fb::uoffset_t>(slot);
  }
  const fb::Vector<std::uint8_t>* byteVector(const fb::Table* t, int id, const char* what) {
    if (!t->VerifyOffset(v_, field(id))) fail(pos(t), fmt::format("field {} does not verify", what));
    const auto* vec = t->GetPointer<const fb::Vector<std::uint8_t>*>(field(id));
    if (vec && !v_.VerifyVector(vec)) fail(pos(vec), fmt::format("vector {} does not verify", what));
    return vec;
  }
  const fb::Vector<fb::uoffset_t>* tables(const fb::Table* t, int id, const char* what) {
    if (!t->VerifyOffset(v_, field(id))) fail(pos(t), fmt::format("field {} does not verify", what));
    const auto* vec = t->GetPointer<const fb::Vector<fb::uoffset_t>*>(field(id));
    if (vec && !v_.VerifyVector(vec)) fail(pos(vec), fmt::format("vector {} does not verify", what));
    return vec;
  }
  // Element i of a vector of tables, verified; its absolute position.
  std::size_t element(const fb::Vector<fb::uoffset_t>* vec, fb::uoffset_t i, const char* what) {
    const auto* slot = reinterpret_cast<const std::uint8_t*>(vec->Data()) + std::size_t{4} * i;
    const fb::uoffset_t o = v_.VerifyOffset(pos(slot));
    if (o == 0) fail(pos(slot), fmt::format("{} {} offset", what, i));
    enter(slot + o, what);
    return pos(slot) + o;
  }
  const fb::Table* at(std::size_t p) const { return reinterpret_cast<const fb::Table*>(data_ + p); }
  template <typename T>
  T scalar(const fb::Table* t, int id, T fallback, const char* what) {
    if (!t->VerifyField<T>(v_, field(id), sizeof(T))) fail(pos(t), fmt::format("field {} does not verify", what));
    return t->GetField<T>(field(id), fallback);
  }
  std::string_view string(const fb::Table* t, int id, const char* what) {
    if (!t->VerifyOffset(v_, field(id))) fail(pos(t), fmt::format("field {} does not verify", what));
    const auto* s = t->GetPointer<const fb::String*>(field(id));
    if (!s) return {};
    if (!v_.VerifyString(s)) fail(pos(s), fmt::format("string {} does not verify", what));
    return s->string_view();
  }
  // Number of fields the table's vtable declares (present or not).
  int declaredFields(const fb::Table* t) const {
    const std::uint8_t* vt = t->GetVTable();
    return (fb::ReadScalar<fb::voffset_t>(vt) - 4) / 2;
  }

 private:
  const std::uint8_t* data_;
  const std::string& source_;
  fb::Verifier v_;
};

// The head written in front of the original: little-endian, positions
// absolute in the new file.
class Head {
 public:
  std::size_t size() const { return b_.size(); }
  void pad(std::size_t alignment) { b_.resize((b_.size() + alignment - 1) / alignment * alignment, 0); }
  // Pads so that position + `ahead` is a multiple of `alignment`.
  void padAhead(std::size_t ahead, std::size_t alignment) {
    while ((b_.size() + ahead) % alignment != 0) b_.push_back(0);
  }
  std::size_t reserve(std::size_t n) {
    const std::size_t at = b_.size();
    b_.resize(at + n, 0);
    return at;
  }
  template <typename T>
  void put(std::size_t at, T value) {
    value = fb::EndianScalar(value);
    std::memcpy(b_.data() + at, &value, sizeof(T));
  }
  template <typename T>
  std::size_t append(T value) {
    const std::size_t at = reserve(sizeof(T));
    put(at, value);
    return at;
  }
  void appendBytes(const void* data, std::size_t n) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    b_.insert(b_.end(), p, p + n);
  }
  // An offset field at `slot` pointing to absolute `target` (> slot).
  void link(std::size_t slot, std::size_t target) {
    put<fb::uoffset_t>(slot, static_cast<fb::uoffset_t>(target - slot));
  }
  // A vtable for `fields` slots of 4 bytes each, then its table: returns the
  // table's position; field k lives at table + 4 + 4k when present.
  std::size_t table(const std::vector<bool>& present) {
    pad(2);
    const std::size_t vt = append<fb::voffset_t>(static_cast<fb::voffset_t>(4 + 2 * present.size()));
    append<fb::voffset_t>(static_cast<fb::voffset_t>(4 + 4 * present.size()));
    for (std::size_t k = 0; k < present.size(); ++k)
      append<fb::voffset_t>(present[k] ? static_cast<fb::voffset_t>(4 + 4 * k) : 0);
    pad(4);
    const std::size_t t = reserve(4 + 4 * present.size());
    put<fb::soffset_t>(t, static_cast<fb::soffset_t>(t - vt));
    return t;
  }
  std::string take() { return std::string(b_.begin(), b_.end()); }

 private:
  std::vector<std::uint8_t> b_;
};

// Byte range [lo, hi) of the original.
struct ByteRange {
  std::size_t lo = 0, hi = 0;
  bool meets(std::size_t a, std::size_t b) const { return a < hi && lo < b; }
};

// A table's inline bytes and its vtable.
bool tableMeets(const Original& in, const fb::Table* t, const ByteRange& s) {
  const std::uint8_t* vt = t->GetVTable();
  const std::size_t at = in.pos(t), vt_at = in.pos(vt);
  return s.meets(at, at + fb::ReadScalar<fb::voffset_t>(vt + 2)) ||
         s.meets(vt_at, vt_at + fb::ReadScalar<fb::voffset_t>(vt));
}

// A vtable as a FlatBuffers builder writes one, at `at`, for a table at
// `table`: even size >= 4, every field inside the table, and the table no
// longer than its last field plus padding (TFLite's tables hold no structs,
// so no field is longer than 8 bytes).
bool plausibleVtable(const std::uint8_t* data, std::size_t fb_size, std::size_t at, std::size_t table) {
  const auto vsize = fb::ReadScalar<fb::voffset_t>(data + at);
  const auto tsize = fb::ReadScalar<fb::voffset_t>(data + at + 2);
  if (vsize < 4 || vsize % 2 != 0 || tsize < 4 || at + vsize > fb_size || table + tsize > fb_size) return false;
  std::size_t last = 4;
  for (std::size_t k = at + 4; k < at + vsize; k += 2) {
    const auto field_at = fb::ReadScalar<fb::voffset_t>(data + k);
    if (field_at != 0 && (field_at < 4 || field_at >= tsize)) return false;
    last = std::max<std::size_t>(last, field_at);
  }
  return tsize <= last + 16;
}

// Whether a table after the span may have its vtable in it: a table finds
// its vtable backwards (soffset), so every 4-aligned word after the span is
// read as one, and a plausible vtable it lands on counts. Conservative:
// other words may look like tables, which only costs the in-place rewrite.
bool vtableMayLieIn(const std::uint8_t* data, std::size_t fb_size, const ByteRange& s) {
  for (std::size_t p = (s.hi + 3) / 4 * 4; p + 4 <= fb_size; p += 4) {
    const auto vt = static_cast<std::int64_t>(p) - fb::ReadScalar<fb::soffset_t>(data + p);
    if (vt < 0 || vt % 2 != 0 || static_cast<std::size_t>(vt) + 4 > fb_size) continue;
    const auto at = static_cast<std::size_t>(vt);
    if (s.meets(at, at + fb::ReadScalar<fb::voffset_t>(data + at)) && plausibleVtable(data, fb_size, at, p))
      return true;
  }
  return false;
}

// Whether the old plan's bytes (its data vector, `s`) belong to it alone, so
// that they may be overwritten. FlatBuffers may share any bytes between
// objects (a weight buffer's Buffer table pointing at the plan's vector, a
// name inside it), and offsets point forward: an object before the span is
// reached only through objects before it. So every object before the span
// must be one whose extent this knows -- the Model table, the buffers and
// metadata vectors, Buffer and Metadata tables and their data and names --
// and clear of it; everything else the Model points to must come after it,
// where only a vtable offset can point back into it.
bool planBytesExclusive(Original& in, const std::uint8_t* data, std::size_t fb_size,
                        const fb::Table* model, const std::size_t (&target)[kModelFields],
                        std::size_t plan_table, const ByteRange& s) {
  if (tableMeets(in, model, s)) return false;
  for (int id = 1; id < kModelFields; ++id)
    if (id != kBuffers && id != kMetadata && target[id] != 0 && target[id] < s.hi) return false;
  for (const int id : {kBuffers, kMetadata}) {
    const auto* vec = in.tables(model, id, id == kBuffers ? "buffers" : "metadata");
    if (!vec) continue;
    if (s.meets(in.pos(vec), in.pos(vec) + 4 + 4 * std::size_t{vec->size()})) return false;
    for (fb::uoffset_t i = 0; i < vec->size(); ++i) {
      const std::size_t at = in.element(vec, i, id == kBuffers ? "buffer" : "metadata");
      if (at >= s.hi) continue;
      const fb::Table* t = in.at(at);
      if (tableMeets(in, t, s) || in.declaredFields(t) > 3) return false;
      if (id == kBuffers && at != plan_table) {
        const auto* v = in.byteVector(t, 0, "data");
        if (v && s.meets(in.pos(v), in.pos(v) + 4 + v->size())) return false;
      } else if (id == kMetadata) {
        const std::size_t name = in.target(t, kMetadataName, "name");
        in.string(t, kMetadataName, "name");
        if (name != 0 && s.meets(name, name + 5 + fb::ReadScalar<fb::uoffset_t>(data + name))) return false;
      }
    }
  }
  return !vtableMayLieIn(data, fb_size, s);
}

// FlatBuffers reads scalars in place: a copy aligned to 8 bytes.
std::vector<std::uint64_t> alignedCopy(std::string_view bytes) {
  std::vector<std::uint64_t> words((bytes.size() + 7) / 8);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

std::uint32_t wordAt(std::string_view bytes, std::size_t at) {
  std::uint32_t v;
  std::memcpy(&v, bytes.data() + at, 4);
  return fb::EndianScalar(v);
}

// What the read-back check compares of one file: positions are absolute
// in that file; a buffer's bytes are its data vector's elements, or the
// range its offset and size name outside the flatbuffer.
struct RewriteLayout {
  bool has_version = false;
  std::uint32_t version = 0;
  std::size_t target[kModelFields] = {};
  struct Buf {
    std::size_t table = 0, at = 0, size = 0;
    std::size_t offset_field = 0;  // position of Buffer.offset when stored outside, else 0
    std::size_t vector = 0;        // position of the data vector, 0 if none
  };
  std::vector<Buf> buffers;
  std::vector<std::pair<std::string, std::uint32_t>> metadata;  // name, buffer
  std::optional<std::uint32_t> plan_buffer;
};

RewriteLayout::Buf readBuffer(Original& in, std::size_t at, std::size_t file_size) {
  const fb::Table* t = in.at(at);
  RewriteLayout::Buf b;
  b.table = at;
  if (const auto* v = in.byteVector(t, 0, "data")) {
    b.vector = in.pos(v);
    b.at = b.vector + 4;
    b.size = v->size();
  }
  const auto offset = in.scalar<std::uint64_t>(t, kBufferOffset, 0, "offset");
  if (offset > 1) {
    const auto size = in.scalar<std::uint64_t>(t, kBufferOffset + 1, 0, "size");
    if (offset > file_size || size > file_size - offset) in.fail(at, "buffer outside the file");
    b.offset_field = at + t->GetOptionalFieldOffset(field(kBufferOffset));
    b.at = static_cast<std::size_t>(offset);
    b.size = static_cast<std::size_t>(size);
  }
  return b;
}

RewriteLayout readRewriteLayout(std::string_view bytes, const std::string& name) {
  const std::vector<std::uint64_t> aligned = alignedCopy(bytes);
  const auto* data = reinterpret_cast<const std::uint8_t*>(aligned.data());
  Original in(data, std::min<std::size_t>(bytes.size(), FLATBUFFERS_MAX_BUFFER_SIZE - 1), name);
  const fb::Table* model = in.root();
  RewriteLayout l;
  l.has_version = model->GetOptionalFieldOffset(field(kVersion)) != 0;
  l.version = in.scalar<std::uint32_t>(model, kVersion, 0, "version");
  for (int id = 1; id < kModelFields; ++id) l.target[id] = in.target(model, id, "Model field");
  if (const auto* bufs = in.tables(model, kBuffers, "buffers"))
    for (fb::uoffset_t i = 0; i < bufs->size(); ++i)
      l.buffers.push_back(readBuffer(in, in.element(bufs, i, "buffer"), bytes.size()));
  if (const auto* meta = in.tables(model, kMetadata, "metadata"))
    for (fb::uoffset_t i = 0; i < meta->size(); ++i) {
      const fb::Table* t = in.at(in.element(meta, i, "metadata"));
      l.metadata.emplace_back(std::string(in.string(t, kMetadataName, "name")),
                              in.scalar<std::uint32_t>(t, kMetadataBuffer, 0, "buffer"));
      if (l.metadata.back().first == kPlanName) l.plan_buffer = l.metadata.back().second;
    }
  return l;
}

// Whether the original's plan vector was its own (planBytesExclusive).
bool oldPlanExclusive(std::string_view bytes, const std::string& name, const RewriteLayout::Buf& plan) {
  const std::vector<std::uint64_t> aligned = alignedCopy(bytes);
  const auto* data = reinterpret_cast<const std::uint8_t*>(aligned.data());
  const std::size_t fb_size = std::min<std::size_t>(bytes.size(), FLATBUFFERS_MAX_BUFFER_SIZE - 1);
  Original in(data, fb_size, name);
  const fb::Table* model = in.root();
  std::size_t target[kModelFields] = {};
  for (int id = 1; id < kModelFields; ++id) target[id] = in.target(model, id, "Model field");
  return planBytesExclusive(in, data, fb_size, model, target, plan.table, ByteRange{plan.vector, plan.at + plan.size});
}

[[noreturn]] void rewriteFailed(const std::string& source, const std::string& what) {
  throw PlanError(fmt::format("{}: the rewritten model differs beyond its plan: {}; nothing written",
                              source, what));
}

// The plan the written file carries: [version, subgraphs, n, offsets...].
void checkPlanWords(std::string_view written, const RewriteLayout& w, std::int32_t subgraphs,
                    const std::vector<std::int32_t>& offsets, const std::string& source) {
  if (!w.plan_buffer || *w.plan_buffer >= w.buffers.size()) rewriteFailed(source, "it has no offline plan");
  const RewriteLayout::Buf& b = w.buffers[*w.plan_buffer];
  std::vector<std::int32_t> want = {kPlanVersion, subgraphs, static_cast<std::int32_t>(offsets.size())};
  want.insert(want.end(), offsets.begin(), offsets.end());
  bool same = b.size == 4 * want.size();
  for (std::size_t k = 0; same && k < want.size(); ++k) {
    std::int32_t v;
    std::memcpy(&v, written.data() + b.at + 4 * k, 4);
    same = fb::EndianScalar(v) == want[k];
  }
  if (!same) rewriteFailed(source, "the offline plan read back is not the plan given");
}

// Every buffer but the plan's holds the same bytes; every metadata entry but
// the plan's is the same, in the same order.
void checkBuffersAndMetadata(std::string_view original, std::string_view written,
                             const RewriteLayout& o, const RewriteLayout& w, const std::string& source) {
  const std::size_t plan = *w.plan_buffer;
  if (w.buffers.size() < o.buffers.size() || w.buffers.size() > std::max(o.buffers.size(), plan + 1))
    rewriteFailed(source, fmt::format("{} buffers became {}", o.buffers.size(), w.buffers.size()));
  for (std::size_t i = 0; i < w.buffers.size(); ++i) {
    if (i == plan) continue;
    const bool had = i < o.buffers.size();
    const std::string_view before = had ? original.substr(o.buffers[i].at, o.buffers[i].size) : "";
    if (written.substr(w.buffers[i].at, w.buffers[i].size) != before ||
        (had && (o.buffers[i].offset_field != 0) != (w.buffers[i].offset_field != 0)))
      rewriteFailed(source, fmt::format("buffer {} (weights or constants) changed", i));
  }
  std::vector<std::pair<std::string, std::uint32_t>> kept[2];
  for (int k = 0; k < 2; ++k)
    for (const auto& entry : (k == 0 ? o : w).metadata)
      if (entry.first != kPlanName) kept[k].push_back(entry);
  if (kept[0] != kept[1]) rewriteFailed(source, "a metadata entry other than the plan changed");
}

// The original flatbuffer follows the new head (or is the file, rewritten in
// place): the same bytes where the Model's other fields (operator codes,
// subgraphs and their operators, description, metadata_buffer, signature
// defs) point, except the old plan's bytes when they were its own and the
// offsets of buffers stored outside the flatbuffer, moved with it.
void checkOriginalKept(std::string_view original, std::string_view written, const RewriteLayout& o,
                       const RewriteLayout& w, const std::vector<ByteRange>& may_change,
                       const std::string& source) {
  if (written.size() < original.size()) rewriteFailed(source, "the file shrank");
  const std::size_t base = written.size() - original.size();
  if (o.has_version != w.has_version || o.version != w.version) rewriteFailed(source, "the Model version changed");
  for (int id = 1; id < kModelFields; ++id) {
    if (id == kBuffers || id == kMetadata) continue;
    if ((o.target[id] == 0) != (w.target[id] == 0) || (o.target[id] && w.target[id] != base + o.target[id]))
      rewriteFailed(source, fmt::format("Model field {} points elsewhere", id));
  }
  std::size_t k = 0;
  for (std::size_t i = 0; i < original.size(); ++i) {
    if (original[i] == written[base + i]) continue;
    while (k < may_change.size() && may_change[k].hi <= i) ++k;
    if (k == may_change.size() || i < may_change[k].lo)
      rewriteFailed(source, fmt::format("byte {} of the original (now {}) changed", i, base + i));
  }
}

// What the rewrite keeps of the original Model (absolute positions in it).
struct OriginalFields {
  std::size_t old_target[kModelFields] = {};  // by field id; 0: absent
  bool has_version = false;
  std::uint32_t version = 0;
  std::vector<std::size_t> buffer_tables;
  std::vector<std::size_t> kept_metadata;  // entries other than the plan
  std::size_t plan_buffer = 0;             // the buffer the plan goes to
};

// The original Model's fields, buffers and metadata; fails on fields newer
// than memplan knows.
OriginalFields readOriginalFields(Original& in, const std::uint8_t* data, std::size_t fb_size) {
  OriginalFields m;
  const fb::Table* model = in.root();
  if (in.declaredFields(model) > kModelFields)
    for (int id = kModelFields; id < in.declaredFields(model); ++id)
      if (model->GetOptionalFieldOffset(field(id)) != 0)
        in.fail(in.pos(model), fmt::format("Model field {} is newer than memplan knows; the file "
                                           "cannot be rewritten safely",
                                           id));
  static constexpr const char* kNames[kModelFields] = {
      "version", "operator_codes", "subgraphs", "description",
      "buffers", "metadata_buffer", "metadata", "signature_defs"};
  for (int id = 1; id < kModelFields; ++id) m.old_target[id] = in.target(model, id, kNames[id]);
  m.has_version = model->GetOptionalFieldOffset(field(kVersion)) != 0;
  m.version = in.scalar<std::uint32_t>(model, kVersion, 0, "version");

  if (const auto* bufs = in.tables(model, kBuffers, "buffers"))
    for (fb::uoffset_t i = 0; i < bufs->size(); ++i)
      m.buffer_tables.push_back(in.element(bufs, i, "buffer"));

  // Buffers referred to by anything but an old plan.
  std::vector<bool> used(m.buffer_tables.size(), false);
  const auto use = [&](std::uint32_t b) {
    if (b < used.size()) used[b] = true;
  };
  if (const auto* sgs = in.tables(model, kSubgraphs, "subgraphs"))
    for (fb::uoffset_t s = 0; s < sgs->size(); ++s) {
      const fb::Table* sg = in.at(in.element(sgs, s, "subgraph"));
      if (const auto* tensors = in.tables(sg, kSubgraphTensors, "tensors"))
        for (fb::uoffset_t t = 0; t < tensors->size(); ++t)
          use(in.scalar<std::uint32_t>(in.at(in.element(tensors, t, "tensor")), kTensorBuffer, 0,
                                       "buffer"));
    }
  if (m.old_target[kMetadataBufferList]) {
    const auto* list =
        reinterpret_cast<const fb::Vector<std::int32_t>*>(data + m.old_target[kMetadataBufferList]);
    fb::Verifier v(data, fb_size);
    if (!v.VerifyVector(list)) in.fail(m.old_target[kMetadataBufferList], "metadata_buffer does not verify");
    for (std::int32_t b : *list)
      if (b >= 0) use(static_cast<std::uint32_t>(b));
  }
  std::optional<std::uint32_t> old_plan_buffer;
  if (const auto* meta = in.tables(model, kMetadata, "metadata"))
    for (fb::uoffset_t i = 0; i < meta->size(); ++i) {
      const std::size_t p = in.element(meta, i, "metadata");
      const fb::Table* t = in.at(p);
      const auto buffer = in.scalar<std::uint32_t>(t, kMetadataBuffer, 0, "buffer");
      if (in.string(t, kMetadataName, "name") == kPlanName) {
        old_plan_buffer = buffer;
      } else {
        m.kept_metadata.push_back(p);
        use(buffer);
      }
    }
  m.plan_buffer = m.buffer_tables.size();
  if (old_plan_buffer && *old_plan_buffer < m.buffer_tables.size() && !used[*old_plan_buffer])
    m.plan_buffer = *old_plan_buffer;
  return m;
}

// The subgraph count the plan's header records.
std::int32_t subgraphCount(const OriginalFields& m, const std::uint8_t* data) {
  return static_cast<std::int32_t>(
      m.old_target[kSubgraphs] ? fb::ReadScalar<fb::uoffset_t>(data + m.old_target[kSubgraphs]) : 0);
}

// A plan replacing one of the same length (the same model planned again)
// is written over the old plan's bytes: the file does not grow. nullopt
// when the old plan cannot be overwritten so.
std::optional<std::string> overwriteOldPlan(std::string_view bytes, Original& in,
                                            const std::uint8_t* data, std::size_t fb_size,
                                            const OriginalFields& m,
                                            const std::vector<std::int32_t>& offsets) {
  const fb::Table* model = in.root();
  const std::size_t plan_bytes = 12 + 4 * offsets.size();
  if (m.plan_buffer < m.buffer_tables.size()) {
    const fb::Table* t = in.at(m.buffer_tables[m.plan_buffer]);
    const std::size_t vec = in.target(t, 0, "data");
    const auto external = in.scalar<std::uint64_t>(t, kBufferOffset, 0, "offset");
    if (vec != 0 && external <= 1 && vec + 4 + plan_bytes <= fb_size &&
        fb::ReadScalar<fb::uoffset_t>(data + vec) == plan_bytes &&
        planBytesExclusive(in, data, fb_size, model, m.old_target, m.buffer_tables[m.plan_buffer],
                           ByteRange{vec, vec + 4 + plan_bytes})) {
      std::string out(bytes);
      std::size_t at = vec + 4;
      const auto put = [&](std::int32_t v) {
        const std::int32_t le = fb::EndianScalar(v);
        std::memcpy(out.data() + at, &le, 4);
        at += 4;
      };
      put(kPlanVersion);
      put(subgraphCount(m, data));
      put(static_cast<std::int32_t>(offsets.size()));
      for (std::int32_t o : offsets) put(o);
      return out;
    }
  }
  return std::nullopt;
}

// A new head (the Model table, the buffer and metadata vectors, the plan)
// followed by the original, whose buffers stored outside the flatbuffer
// have their offsets moved.
std::string writeWithNewHead(std::string_view bytes, Original& in, const std::uint8_t* data,
                             OriginalFields m, const std::vector<std::int32_t>& offsets) {
  const bool empty_first = m.buffer_tables.empty();  // a model without buffers gets buffer 0 empty
  if (empty_first) m.plan_buffer = 1;

  // The head. Model table first: everything it points to comes after.
  Head h;
  h.reserve(4);
  h.appendBytes("TFL3", 4);
  std::vector<bool> present(kModelFields, false);
  present[kVersion] = m.has_version;
  for (int id = 1; id < kModelFields; ++id) present[id] = m.old_target[id] != 0;
  present[kBuffers] = present[kMetadata] = true;
  const std::size_t table = h.table(present);
  h.link(0, table);
  const auto slot = [&](int id) { return table + 4 + 4 * static_cast<std::size_t>(id); };
  if (m.has_version) h.put<std::uint32_t>(slot(kVersion), m.version);

  const std::size_t buffer_count = std::max(m.buffer_tables.size(), m.plan_buffer + 1);
  h.pad(4);
  const std::size_t buffers_vec = h.append<std::uint32_t>(static_cast<std::uint32_t>(buffer_count));
  const std::size_t buffers_slots = h.reserve(4 * buffer_count);
  const std::size_t metadata_vec =
      h.append<std::uint32_t>(static_cast<std::uint32_t>(m.kept_metadata.size() + 1));
  const std::size_t metadata_slots = h.reserve(4 * (m.kept_metadata.size() + 1));
  h.link(slot(kBuffers), buffers_vec);
  h.link(slot(kMetadata), metadata_vec);

  const std::size_t plan_table = h.table({true});             // Buffer {data}
  std::size_t empty_table = 0;
  if (empty_first) empty_table = h.table({false});            // Buffer {}
  const std::size_t entry_table = h.table({true, true});      // Metadata {name, buffer}
  h.put<std::uint32_t>(entry_table + 8, static_cast<std::uint32_t>(m.plan_buffer));
  h.pad(4);
  const std::size_t name = h.append<std::uint32_t>(static_cast<std::uint32_t>(kPlanName.size()));
  h.appendBytes(kPlanName.data(), kPlanName.size());
  h.append<std::uint8_t>(0);
  h.link(entry_table + 4, name);
  h.padAhead(4, 16);
  const std::size_t plan_vec = h.append<std::uint32_t>(static_cast<std::uint32_t>(12 + 4 * offsets.size()));
  h.append<std::int32_t>(kPlanVersion);
  h.append<std::int32_t>(subgraphCount(m, data));
  h.append<std::int32_t>(static_cast<std::int32_t>(offsets.size()));
  for (std::int32_t o : offsets) h.append<std::int32_t>(o);
  h.link(plan_table + 4, plan_vec);
  h.pad(kHeadAlignment);
  const std::size_t shift = h.size();

  // Links into the original, now `shift` bytes further.
  for (int id = 1; id < kModelFields; ++id)
    if (m.old_target[id] && id != kBuffers && id != kMetadata) h.link(slot(id), shift + m.old_target[id]);
  for (std::size_t k = 0; k < buffer_count; ++k) {
    const std::size_t target = k == m.plan_buffer         ? plan_table
                               : empty_first && k == 0 ? empty_table
                                                       : shift + m.buffer_tables[k];
    h.link(buffers_slots + 4 * k, target);
  }
  for (std::size_t k = 0; k < m.kept_metadata.size(); ++k)
    h.link(metadata_slots + 4 * k, shift + m.kept_metadata[k]);
  h.link(metadata_slots + 4 * m.kept_metadata.size(), entry_table);

  // The original, with external buffer offsets moved.
  std::string out = h.take();
  const std::size_t base = out.size();
  out.append(bytes.data(), bytes.size());
  for (std::size_t p : m.buffer_tables) {
    const fb::Table* t = in.at(p);
    const auto offset = in.scalar<std::uint64_t>(t, kBufferOffset, 0, "offset");
    if (offset <= 1) continue;  // 0/1: data inline or none
    const std::uint64_t moved = fb::EndianScalar(offset + shift);
    std::memcpy(out.data() + base + p + t->GetOptionalFieldOffset(field(kBufferOffset)), &moved, 8);
  }
  return out;
}

}  // namespace

std::string writeTfliteOfflinePlan(std::string_view bytes, const std::string& source_name,
                                   const std::vector<std::int32_t>& offsets) {
  // The importer checks the parts of the file memplan reads (and sizes).
  const TfliteTensorIndex index = tfliteTensorIndex(bytes, source_name);
  if (offsets.size() != index.total)
    throw InputError(fmt::format("{}: {} offline offsets for {} tensors", source_name,
                                 offsets.size(), index.total));
  const std::vector<std::uint64_t> aligned = alignedCopy(bytes);
  const auto* data = reinterpret_cast<const std::uint8_t*>(aligned.data());
  const std::size_t fb_size = std::min<std::size_t>(bytes.size(), FLATBUFFERS_MAX_BUFFER_SIZE - 1);
  Original in(data, fb_size, source_name);
  const OriginalFields fields = readOriginalFields(in, data, fb_size);
  std::optional<std::string> out = overwriteOldPlan(bytes, in, data, fb_size, fields, offsets);
  if (!out) out = writeWithNewHead(bytes, in, data, fields, offsets);
  // What was written reads back (the importer verifies every part it reads)
  // and differs from the original in its plan alone.
  importTflite(*out, source_name + " (rewritten)", ImportOptions{.unknown_size_bytes = 1});
  checkTfliteRewrite(bytes, *out, source_name, offsets);
  return std::move(*out);
}

void checkTfliteRewrite(std::string_view original, std::string_view written, const std::string& source_name,
                        const std::vector<std::int32_t>& offsets) {
  const RewriteLayout o = readRewriteLayout(original, source_name);
  const RewriteLayout w = readRewriteLayout(written, source_name + " (rewritten)");
  const std::int32_t subgraphs =
      o.target[kSubgraphs] ? static_cast<std::int32_t>(wordAt(original, o.target[kSubgraphs])) : 0;
  checkPlanWords(written, w, subgraphs, offsets, source_name);
  checkBuffersAndMetadata(original, written, o, w, source_name);
  // What may differ in the copy of the original: the old plan's vector when
  // it is still the plan's and its own, external buffers' offsets.
  std::vector<ByteRange> may_change;
  if (o.plan_buffer && *o.plan_buffer < o.buffers.size() && *o.plan_buffer == *w.plan_buffer &&
      written.size() == original.size() && o.buffers[*o.plan_buffer].vector != 0 &&
      oldPlanExclusive(original, source_name, o.buffers[*o.plan_buffer]))
    may_change.push_back({o.buffers[*o.plan_buffer].vector, o.buffers[*o.plan_buffer].at + o.buffers[*o.plan_buffer].size});
  for (const RewriteLayout::Buf& b : o.buffers)
    if (b.offset_field != 0) may_change.push_back({b.offset_field, b.offset_field + 8});
  std::sort(may_change.begin(), may_change.end(), [](const ByteRange& a, const ByteRange& b) { return a.lo < b.lo; });
  checkOriginalKept(original, written, o, w, may_change, source_name);
}

}  // namespace memplan
