// Writing a plan into an ExecuTorch program (see memplan/pte.h).
//
// Why not rebuild the whole flatbuffer: the file holds fields memplan does
// not know (newer schemas add some), inline constant and delegate data
// whose alignment the exporter chose, and segments other tools may address
// by offset. So every byte of the flatbuffer stays where it is, and only
// the plan changes:
//  1. A planned tensor's AllocationDetails table is written in place when
//     it has a slot for each non-zero part of the new offset (FlatBuffers
//     leave out fields equal to their default, so an offset that was 0 has
//     no slot). Otherwise a new AllocationDetails table (memory_id,
//     memory_offset_low, memory_offset_high, all present) is appended after
//     the flatbuffer and the tensor's allocation_info offset points to it.
//     A table several tensors share is only written in place when they all
//     want the same offset.
//  2. non_const_buffer_sizes (int64, every element present) is written in
//     place; a list several methods share is appended anew for the methods
//     that disagree.
//  3. The flatbuffer ends after what was appended (8-aligned). Segments
//     start where they did when the flatbuffer still ends before them;
//     otherwise the whole segment block moves by a multiple of the largest
//     power of two dividing its old start, so every alignment it had holds.
//     The extended header records the new program size and segment base.
//  4. The result is read back: every field but the plan's is the same
//     (describePte), segments are byte-identical, and the plan read back is
//     the plan given. Anything else is an error, never a silent change.
#include <algorithm>
#include <cstring>
#include <map>

#include "import/pte_format.h"
#include "memplan/pte.h"

namespace memplan {
namespace {

using pte::fb::uoffset_t;

template <typename T>
void put(std::string& out, std::size_t at, T value) {
  T le = pte::fb::EndianScalar(value);
  std::memcpy(out.data() + at, &le, sizeof(T));
}

struct Target {
  std::vector<std::vector<Bytes>> sizes;        // per method, the new list
  std::vector<std::optional<Offset>> offsets;   // per tensor, the new offset
};

// What the plan asks for, checked against the program.
Target targets(const PteProgram& p, const Plan& plan) {
  if (plan.graphs.size() != p.methods.size())
    throw InputError(fmt::format("{}: the plan has {} graphs, the program {} methods", p.source,
                                 plan.graphs.size(), p.methods.size()));
  Target t;
  for (std::size_t g = 0; g < p.methods.size(); ++g) {
    const PteMethod& m = p.methods[g];
    const GraphPlan& gp = plan.graphs[g];
    std::vector<Bytes> sizes = m.buffer_sizes;
    for (std::size_t i = 1; i < gp.bufsizes.size(); ++i) {
      if (i < sizes.size()) sizes[i] = gp.bufsizes[i];
      else if (gp.bufsizes[i] > 0)
        throw InputError(fmt::format("{}: {}: the plan uses memory id {}, but the file has buffer "
                                     "sizes for {} (a .pte keeps its memory ids)",
                                     p.source, methodLabel(p, static_cast<GraphId>(g)), i, sizes.empty() ? 0 : sizes.size() - 1));
    }
    t.sizes.push_back(std::move(sizes));
  }
  t.offsets.resize(p.tensors.size());
  for (std::size_t i = 0; i < p.tensors.size(); ++i) {
    const PteTensor& x = p.tensors[i];
    if (!x.allocation) continue;
    const auto g = static_cast<std::size_t>(x.method);
    const GraphPlan& gp = plan.graphs[g];
    const std::string& name = p.model.tensors[i].name;
    const auto m = static_cast<std::size_t>(x.allocation->mem_id);
    if (m >= t.sizes[g].size())
      throw InputError(fmt::format("{}: {}: '{}' is in memory id {}, but the method has no buffer "
                                   "size for it",
                                   p.source, methodLabel(p, static_cast<GraphId>(g)), name, m));
    const SpecId s = i < gp.specs.tensor_spec.size() ? gp.specs.tensor_spec[i] : kNone;
    const Allocation* a = s != kNone ? gp.find(s) : nullptr;
    if (a) {
      if (a->mem_id != x.allocation->mem_id)
        throw InputError(fmt::format("{}: {}: the plan moves '{}' from memory id {} to {} (a .pte "
                                     "keeps its memory ids)",
                                     p.source, methodLabel(p, static_cast<GraphId>(g)), name, x.allocation->mem_id, a->mem_id));
      t.offsets[i] = a->offset;
    } else if (!x.used) {  // named by no instruction: its file offset if it fits, else 0
      const Bytes size = t.sizes[g][m], n = p.model.tensors[i].nbytes;
      t.offsets[i] = x.allocation->offset <= size && n <= size - x.allocation->offset
                         ? x.allocation->offset : 0;
    } else {
      throw InputError(fmt::format("{}: {}: the plan has no place for '{}'", p.source,
                                   methodLabel(p, static_cast<GraphId>(g)), name));
    }
  }
  return t;
}

class Patcher {
 public:
  explicit Patcher(const PteProgram& p) : p_(p), out_(p.bytes) {}

  void allocation(std::size_t i, Offset offset) {
    const PteTensor& x = p_.tensors[i];
    const auto low = static_cast<std::uint32_t>(offset & 0xffffffffu);
    const auto high = static_cast<std::uint32_t>(offset >> 32);
    const bool fits = (low == 0 || x.offset_low_at) && (high == 0 || x.offset_high_at);
    const auto it = table_wants_.find(x.alloc_table);
    if (fits && (it == table_wants_.end() || it->second == offset)) {
      if (x.offset_low_at) put<std::uint32_t>(out_, x.offset_low_at, low);
      if (x.offset_high_at) put<std::uint32_t>(out_, x.offset_high_at, high);
      table_wants_[x.alloc_table] = offset;
      return;
    }
    appended_.push_back({Kind::Table, x.alloc_slot, static_cast<std::uint32_t>(x.allocation->mem_id), offset, {}});
  }

  void sizes(std::size_t g, const std::vector<Bytes>& sizes) {
    const PteMethod& m = p_.methods[g];
    if (!m.has_buffer_sizes) return;
    const auto it = vector_wants_.find(m.buffer_sizes_data);
    if (it == vector_wants_.end() || it->second == sizes) {
      for (std::size_t i = 0; i < sizes.size(); ++i)
        put<std::int64_t>(out_, m.buffer_sizes_data + 8 * i, static_cast<std::int64_t>(sizes[i]));
      vector_wants_[m.buffer_sizes_data] = sizes;
      return;
    }
    appended_.push_back({Kind::Sizes, m.buffer_sizes_slot, 0, 0, sizes});
  }

  // Lays out what was appended and moves the segments; returns the file.
  std::string finish() {
    if (appended_.empty()) return std::move(out_);  // every change was in place
    const std::size_t start = (p_.program_size + 7) / 8 * 8;
    std::string region;
    const auto here = [&] { return start + region.size(); };
    const auto pad = [&](std::size_t align, std::size_t rem = 0) {
      while (here() % align != rem) region.push_back('\0');
    };
    std::size_t vtable = 0;
    bool have_vtable = false;
    std::vector<std::pair<std::size_t, std::size_t>> links;  // (offset field, target)
    for (const Append& a : appended_) {
      if (a.kind == Kind::Table) {
        if (!have_vtable) {  // one vtable for every new table: all 3 fields present
          pad(2);
          vtable = here();
          for (std::uint16_t v : {std::uint16_t{10}, std::uint16_t{16}, std::uint16_t{4},
                                  std::uint16_t{8}, std::uint16_t{12}}) {
            region.append(2, '\0');
            put<std::uint16_t>(region, region.size() - 2, v);
          }
          have_vtable = true;
        }
        pad(4);
        const std::size_t table = here();
        const std::size_t at = region.size();
        region.append(16, '\0');
        put<std::int32_t>(region, at, static_cast<std::int32_t>(table - vtable));
        put<std::uint32_t>(region, at + 4, a.mem_id);
        put<std::uint32_t>(region, at + 8, static_cast<std::uint32_t>(a.offset & 0xffffffffu));
        put<std::uint32_t>(region, at + 12, static_cast<std::uint32_t>(a.offset >> 32));
        links.emplace_back(a.slot, table);
      } else {
        pad(8, 4);  // the elements after the length are 8-aligned
        const std::size_t vec = here();
        const std::size_t at = region.size();
        region.append(4 + 8 * a.sizes.size(), '\0');
        put<std::uint32_t>(region, at, static_cast<std::uint32_t>(a.sizes.size()));
        for (std::size_t i = 0; i < a.sizes.size(); ++i)
          put<std::int64_t>(region, at + 4 + 8 * i, static_cast<std::int64_t>(a.sizes[i]));
        links.emplace_back(a.slot, vec);
      }
    }
    pad(8);
    const std::uint64_t program_size = here();
    if (program_size >= FLATBUFFERS_MAX_BUFFER_SIZE)
      throw PlanError(fmt::format("{}: the program would grow past 2 GiB", p_.source));
    for (const auto& [slot, target] : links)
      put<uoffset_t>(out_, slot, static_cast<uoffset_t>(target - slot));

    // The flatbuffer, what was appended, then the segments (or whatever
    // followed the flatbuffer) as one block.
    const std::uint64_t old_tail = p_.segment_base != 0 ? p_.segment_base : p_.program_size;
    std::uint64_t new_tail = std::max<std::uint64_t>(old_tail, program_size);
    if (p_.segment_base != 0 && program_size > old_tail) {
      const std::uint64_t align = old_tail & (~old_tail + 1);  // lowest set bit
      new_tail = old_tail + (program_size - old_tail + align - 1) / align * align;
    }
    std::string file = out_.substr(0, p_.program_size);
    file.append(start - file.size(), '\0');
    file += region;
    if (old_tail > program_size)  // the padding before the segments stays as it was
      file.append(out_, program_size, old_tail - program_size);
    file.append(new_tail - file.size(), '\0');
    file.append(out_, old_tail, std::string::npos);
    if (p_.extended_header) {
      put<std::uint64_t>(file, pte::kHeaderAt + 8, program_size);
      if (p_.segment_base != 0) put<std::uint64_t>(file, pte::kHeaderAt + 16, new_tail);
    }
    return file;
  }

 private:
  enum class Kind { Table, Sizes };
  struct Append {
    Kind kind;
    std::size_t slot;           // the offset field to point at it
    std::uint32_t mem_id;
    Offset offset;
    std::vector<Bytes> sizes;
  };
  const PteProgram& p_;
  std::string out_;             // the file, patched in place
  std::vector<Append> appended_;
  std::map<std::size_t, Offset> table_wants_;
  std::map<std::size_t, std::vector<Bytes>> vector_wants_;
};

// The first line where two listings differ.
std::string firstDifference(const std::string& a, const std::string& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const std::size_t from = a.rfind('\n', i == 0 ? 0 : i - 1);
  const std::size_t start = from == std::string::npos ? 0 : from + 1;
  const auto line = [&](const std::string& s) {
    const std::size_t end = s.find('\n', start);
    return s.substr(start, end == std::string::npos ? std::string::npos : end - start);
  };
  return fmt::format("'{}' became '{}'", line(a), line(b));
}

void checkWritten(const PteProgram& p, const std::string& out, const Target& want) {
  const std::string name = p.source + " (rewritten)";
  if (pte::fieldHash(p.bytes, p.source) != pte::fieldHash(out, name)) {
    // Formatted only to say where.
    throw PlanError(fmt::format("{}: the rewritten program differs beyond its plan: {}", p.source,
                                firstDifference(describePte(p.bytes, p.source, false),
                                                describePte(out, name, false))));
  }
  const PteProgram back = readPte(out, name);
  for (std::size_t s = 0; s < p.segments.size(); ++s) {
    const auto& seg = p.segments[s];
    if (seg.size == 0) continue;
    if (p.bytes.compare(p.segment_base + seg.offset, seg.size, back.bytes,
                        back.segment_base + seg.offset, seg.size) != 0)
      throw PlanError(fmt::format("{}: segment {} changed while rewriting", p.source, s));
  }
  for (std::size_t g = 0; g < p.methods.size(); ++g)
    if (p.methods[g].has_buffer_sizes && back.methods[g].buffer_sizes != want.sizes[g])
      throw PlanError(fmt::format("{}: {}: buffer sizes read back differ from the plan", p.source,
                                  methodLabel(p, static_cast<GraphId>(g))));
  for (std::size_t i = 0; i < p.tensors.size(); ++i) {
    if (!want.offsets[i]) continue;
    const auto& a = back.tensors[i].allocation;
    if (!a || a->mem_id != p.tensors[i].allocation->mem_id || a->offset != *want.offsets[i])
      throw PlanError(fmt::format("{}: '{}' reads back at another place than planned", p.source,
                                  p.model.tensors[i].name));
  }
}

}  // namespace

std::string writePte(const PteProgram& p, const Plan& plan) {
  const Target want = targets(p, plan);
  Patcher patcher(p);
  for (std::size_t i = 0; i < p.tensors.size(); ++i)
    if (want.offsets[i]) patcher.allocation(i, *want.offsets[i]);
  for (std::size_t g = 0; g < p.methods.size(); ++g) patcher.sizes(g, want.sizes[g]);
  std::string out = patcher.finish();
  checkWritten(p, out, want);
  return out;
}

}  // namespace memplan
