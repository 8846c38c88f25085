// Builds ExecuTorch program files (.pte) for tests, with FlatBuffers'
// low-level builder: methods with any values and instructions, inline
// constants and delegate data, segments behind an extended header. Field
// ids follow the public schema (schema/program.fbs); the builder leaves out
// fields equal to their default, as ExecuTorch's serializer does.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace memplan::test {

namespace fbb = flatbuffers;

struct PteValueSpec {
  enum Kind { Null, Int, Bool, Double, Tensor, String, IntList, TensorList, OptionalTensorList };
  Kind kind = Null;
  // Tensor
  std::int8_t scalar_type = 6;  // float
  std::vector<std::int32_t> sizes;
  std::uint32_t data_buffer_idx = 0;
  std::optional<std::pair<std::uint32_t, std::uint64_t>> alloc;  // (memory id, offset)
  std::string fqn;
  std::int8_t shape_dynamism = 0;
  // Int / Bool / Double / String / lists
  std::int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<std::int64_t> ints;
  std::vector<std::int32_t> items;
};

struct PteInstrSpec {
  enum Kind { Kernel = 1, Delegate = 2, Move = 3, Jump = 4, Free = 5 };
  Kind kind = Kernel;
  std::int32_t a = 0, b = 0;  // op/delegate index, move from/to, cond/destination, value
  std::vector<std::int32_t> args;
};

struct PteMethodSpec {
  std::string name = "forward";
  std::vector<PteValueSpec> values;
  std::vector<std::int32_t> inputs, outputs;
  std::vector<PteInstrSpec> instructions;
  std::vector<std::pair<std::string, std::string>> operators;
  struct Delegate {
    std::string id;
    std::uint8_t location = 0;  // 0 inline, 1 segment
    std::uint32_t index = 0;
  };
  std::vector<Delegate> delegates;
  std::optional<std::vector<std::int64_t>> buffer_sizes;

  // Helpers: each returns the new value's index.
  std::int32_t add(PteValueSpec v) {
    values.push_back(std::move(v));
    return static_cast<std::int32_t>(values.size() - 1);
  }
  std::int32_t tensor(std::vector<std::int32_t> sizes, std::uint32_t mem_id, std::uint64_t offset,
                      std::int8_t type = 6) {
    PteValueSpec v;
    v.kind = PteValueSpec::Tensor;
    v.scalar_type = type;
    v.sizes = std::move(sizes);
    v.alloc = std::make_pair(mem_id, offset);
    return add(std::move(v));
  }
  std::int32_t constant(std::vector<std::int32_t> sizes, std::uint32_t buffer) {
    PteValueSpec v;
    v.kind = PteValueSpec::Tensor;
    v.sizes = std::move(sizes);
    v.data_buffer_idx = buffer;
    return add(std::move(v));
  }
  std::int32_t unplanned(std::vector<std::int32_t> sizes) {
    PteValueSpec v;
    v.kind = PteValueSpec::Tensor;
    v.sizes = std::move(sizes);
    return add(std::move(v));
  }
  std::int32_t integer(std::int64_t i) {
    PteValueSpec v;
    v.kind = PteValueSpec::Int;
    v.i = i;
    return add(std::move(v));
  }
  std::int32_t boolean(bool b) {
    PteValueSpec v;
    v.kind = PteValueSpec::Bool;
    v.i = b;
    return add(std::move(v));
  }
  std::int32_t list(std::vector<std::int32_t> items, bool optional = false) {
    PteValueSpec v;
    v.kind = optional ? PteValueSpec::OptionalTensorList : PteValueSpec::TensorList;
    v.items = std::move(items);
    return add(std::move(v));
  }
  std::int32_t op(const std::string& name, const std::string& overload = "out") {
    for (std::size_t i = 0; i < operators.size(); ++i)
      if (operators[i] == std::make_pair(name, overload)) return static_cast<std::int32_t>(i);
    operators.emplace_back(name, overload);
    return static_cast<std::int32_t>(operators.size() - 1);
  }
  // An out-variant kernel: inputs, then the out arguments, then them again
  // (one tensor, or a tensor list of several), as ExecuTorch emits it.
  void kernel(const std::string& name, std::vector<std::int32_t> ins, std::vector<std::int32_t> outs) {
    PteInstrSpec i;
    i.kind = PteInstrSpec::Kernel;
    i.a = op(name);
    i.args = std::move(ins);
    for (std::int32_t o : outs) i.args.push_back(o);
    if (outs.size() == 1) i.args.push_back(outs[0]);
    else if (!outs.empty()) i.args.push_back(list(outs));
    instructions.push_back(std::move(i));
  }
  void rawKernel(const std::string& name, std::vector<std::int32_t> args) {
    PteInstrSpec i;
    i.kind = PteInstrSpec::Kernel;
    i.a = op(name);
    i.args = std::move(args);
    instructions.push_back(std::move(i));
  }
  void delegate(std::int32_t index, std::vector<std::int32_t> args) {
    PteInstrSpec i;
    i.kind = PteInstrSpec::Delegate;
    i.a = index;
    i.args = std::move(args);
    instructions.push_back(std::move(i));
  }
  void move(std::int32_t from, std::int32_t to) {
    instructions.push_back({PteInstrSpec::Move, from, to, {}});
  }
  void jump(std::int32_t cond, std::int32_t dest) {
    instructions.push_back({PteInstrSpec::Jump, cond, dest, {}});
  }
  void free(std::int32_t value) { instructions.push_back({PteInstrSpec::Free, value, 0, {}}); }
};

struct PteProgramSpec {
  std::vector<PteMethodSpec> methods;
  std::vector<std::string> constant_buffers;   // Program.constant_buffer (inline)
  std::vector<std::string> delegate_data;      // Program.backend_delegate_data (inline)
  std::vector<std::string> segments;           // after the flatbuffer
  std::optional<std::vector<std::uint64_t>> constant_segment_offsets;  // with segment 0
  bool extended_header = false;                // also implied by segments
  std::uint64_t segment_alignment = 128;
};

inline std::string buildPte(const PteProgramSpec& spec) {
  fbb::FlatBufferBuilder b;
  const auto f = [](int id) { return static_cast<fbb::voffset_t>(4 + 2 * id); };
  using Off = fbb::Offset<void>;
  const auto table = [&](auto&& fill) {
    const auto start = b.StartTable();
    fill();
    return Off(b.EndTable(start));
  };
  const auto bytes = [&](const std::string& data) {
    b.ForceVectorAlignment(data.size(), 1, 16);
    return b.CreateVector(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
  };

  // Segments first: their offsets go into the program.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seg_places;
  std::string seg_data;
  for (const std::string& s : spec.segments) {
    while (seg_data.size() % spec.segment_alignment) seg_data.push_back('\0');
    seg_places.emplace_back(seg_data.size(), s.size());
    seg_data += s;
  }

  std::vector<Off> plans;
  for (const PteMethodSpec& m : spec.methods) {
    std::vector<Off> values;
    for (const PteValueSpec& v : m.values) {
      Off val;
      std::uint8_t type = 0;
      switch (v.kind) {
        case PteValueSpec::Null: type = 1; val = table([] {}); break;
        case PteValueSpec::Int:
          type = 2;
          val = table([&] { b.AddElement<std::int64_t>(f(0), v.i, 0); });
          break;
        case PteValueSpec::Bool:
          type = 3;
          val = table([&] { b.AddElement<std::uint8_t>(f(0), static_cast<std::uint8_t>(v.i), 0); });
          break;
        case PteValueSpec::Double:
          type = 4;
          val = table([&] { b.AddElement<double>(f(0), v.d, 0.0); });
          break;
        case PteValueSpec::String: {
          type = 6;
          const auto s = b.CreateString(v.s);
          val = table([&] { b.AddOffset(f(0), s); });
          break;
        }
        case PteValueSpec::IntList: {
          type = 7;
          const auto items = b.CreateVector(v.ints);
          val = table([&] { b.AddOffset(f(0), items); });
          break;
        }
        case PteValueSpec::TensorList:
        case PteValueSpec::OptionalTensorList: {
          type = v.kind == PteValueSpec::TensorList ? 10 : 11;
          const auto items = b.CreateVector(v.items);
          val = table([&] { b.AddOffset(f(0), items); });
          break;
        }
        case PteValueSpec::Tensor: {
          type = 5;
          const auto sizes = b.CreateVector(v.sizes);
          std::vector<std::uint8_t> order(v.sizes.size());
          for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint8_t>(i);
          const auto dim_order = b.CreateVector(order);
          Off alloc;
          if (v.alloc)
            alloc = table([&] {
              b.AddElement<std::uint32_t>(f(0), v.alloc->first, 0);
              b.AddElement<std::uint32_t>(f(1), static_cast<std::uint32_t>(v.alloc->second & 0xffffffffu), 0);
              b.AddElement<std::uint32_t>(f(2), static_cast<std::uint32_t>(v.alloc->second >> 32), 0);
            });
          Off extra;
          if (!v.fqn.empty()) {
            const auto name = b.CreateString(v.fqn);
            extra = table([&] { b.AddOffset(f(1), name); });
          }
          val = table([&] {
            b.AddElement<std::int8_t>(f(0), v.scalar_type, 0);
            b.AddOffset(f(2), sizes);
            b.AddOffset(f(3), dim_order);
            b.AddElement<std::uint32_t>(f(5), v.data_buffer_idx, 0);
            if (v.alloc) b.AddOffset(f(6), alloc);
            b.AddElement<std::int8_t>(f(8), v.shape_dynamism, 0);
            if (!v.fqn.empty()) b.AddOffset(f(9), extra);
          });
          break;
        }
      }
      values.push_back(table([&] {
        b.AddElement<std::uint8_t>(f(0), type, 0);
        b.AddOffset(f(1), val);
      }));
    }
    std::vector<Off> instrs;
    for (const PteInstrSpec& i : m.instructions) {
      Off args;
      if (i.kind == PteInstrSpec::Kernel || i.kind == PteInstrSpec::Delegate) {
        const auto list = b.CreateVector(i.args);
        args = table([&] {
          b.AddElement<std::int32_t>(f(0), i.a, 0);
          b.AddOffset(f(1), list);
        });
      } else {
        args = table([&] {
          b.AddElement<std::int32_t>(f(0), i.a, 0);
          if (i.kind != PteInstrSpec::Free) b.AddElement<std::int32_t>(f(1), i.b, 0);
        });
      }
      instrs.push_back(table([&] {
        b.AddElement<std::uint8_t>(f(0), static_cast<std::uint8_t>(i.kind), 0);
        b.AddOffset(f(1), args);
      }));
    }
    const auto instr_vec = b.CreateVector(instrs);
    const auto chain = table([&] { b.AddOffset(f(2), instr_vec); });
    const auto chains = b.CreateVector(std::vector<Off>{chain});
    std::vector<Off> ops;
    for (const auto& [name, overload] : m.operators) {
      const auto n = b.CreateString(name);
      const auto o = b.CreateString(overload);
      ops.push_back(table([&] {
        b.AddOffset(f(0), n);
        b.AddOffset(f(1), o);
      }));
    }
    const auto op_vec = b.CreateVector(ops);
    std::vector<Off> dels;
    for (const auto& d : m.delegates) {
      const auto id = b.CreateString(d.id);
      const auto processed = table([&] {
        b.AddElement<std::int8_t>(f(0), static_cast<std::int8_t>(d.location), 0);
        b.AddElement<std::uint32_t>(f(1), d.index, 0);
      });
      const auto key = b.CreateString("key");
      const auto value = bytes("v");
      const auto cs = table([&] {
        b.AddOffset(f(0), key);
        b.AddOffset(f(1), value);
      });
      const auto specs = b.CreateVector(std::vector<Off>{cs});
      dels.push_back(table([&] {
        b.AddOffset(f(0), id);
        b.AddOffset(f(1), processed);
        b.AddOffset(f(2), specs);
      }));
    }
    const auto del_vec = b.CreateVector(dels);
    const auto values_vec = b.CreateVector(values);
    const auto inputs = b.CreateVector(m.inputs);
    const auto outputs = b.CreateVector(m.outputs);
    const auto name = b.CreateString(m.name);
    fbb::Offset<fbb::Vector<std::int64_t>> sizes;
    if (m.buffer_sizes) sizes = b.CreateVector(*m.buffer_sizes);
    const auto inp = b.CreateString("T1#1($)");
    const auto outp = b.CreateString("$");
    const auto meta = table([&] {
      b.AddOffset(f(0), inp);
      b.AddOffset(f(1), outp);
    });
    plans.push_back(table([&] {
      b.AddOffset(f(0), name);
      b.AddOffset(f(1), meta);
      b.AddOffset(f(2), values_vec);
      b.AddOffset(f(3), inputs);
      b.AddOffset(f(4), outputs);
      b.AddOffset(f(5), chains);
      b.AddOffset(f(6), op_vec);
      b.AddOffset(f(7), del_vec);
      if (m.buffer_sizes) b.AddOffset(f(8), sizes);
    }));
  }
  const auto plan_vec = b.CreateVector(plans);
  std::vector<Off> cbufs;
  for (const std::string& c : spec.constant_buffers) {
    const auto data = bytes(c);
    cbufs.push_back(table([&] { b.AddOffset(f(0), data); }));
  }
  const auto cbuf_vec = b.CreateVector(cbufs);
  std::vector<Off> dd;
  for (const std::string& c : spec.delegate_data) {
    const auto data = bytes(c);
    dd.push_back(table([&] { b.AddOffset(f(0), data); }));
  }
  const auto dd_vec = b.CreateVector(dd);
  std::vector<Off> segs;
  for (const auto& place : seg_places)  // no structured binding: clang 14 cannot capture one
    segs.push_back(table([&] {
      b.AddElement<std::uint64_t>(f(0), place.first, 0);
      b.AddElement<std::uint64_t>(f(1), place.second, 0);
    }));
  const auto seg_vec = b.CreateVector(segs);
  Off cseg;
  if (spec.constant_segment_offsets) {
    const auto offs = b.CreateVector(*spec.constant_segment_offsets);
    cseg = table([&] {
      b.AddElement<std::uint32_t>(f(0), 0, 0);
      b.AddOffset(f(1), offs);
    });
  }
  const auto root = table([&] {
    b.AddOffset(f(1), plan_vec);
    b.AddOffset(f(2), cbuf_vec);
    b.AddOffset(f(3), dd_vec);
    b.AddOffset(f(4), seg_vec);
    if (spec.constant_segment_offsets) b.AddOffset(f(5), cseg);
  });
  b.Finish(root, "ET12");
  std::string data(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
  if (!spec.extended_header && spec.segments.empty()) return data;

  // The extended header goes right after the root offset and identifier,
  // padded to 16 (the largest force_align), the root offset moved past it.
  const std::size_t header = 32, padded = 32;
  std::uint32_t root_off;
  std::memcpy(&root_off, data.data(), 4);
  root_off += static_cast<std::uint32_t>(padded);
  std::string out(8 + padded, '\0');
  std::memcpy(out.data(), &root_off, 4);
  std::memcpy(out.data() + 4, data.data() + 4, 4);
  const std::uint64_t program_size = data.size() + padded;
  const std::uint64_t base =
      seg_data.empty() ? 0 : (program_size + spec.segment_alignment - 1) / spec.segment_alignment * spec.segment_alignment;
  const std::uint32_t len = header;
  const std::uint64_t seg_size = seg_data.size();
  std::memcpy(out.data() + 8, "eh00", 4);
  std::memcpy(out.data() + 12, &len, 4);
  std::memcpy(out.data() + 16, &program_size, 8);
  std::memcpy(out.data() + 24, &base, 8);
  std::memcpy(out.data() + 32, &seg_size, 8);
  out += data.substr(8);
  if (!seg_data.empty()) {
    out.append(base - out.size(), '\0');
    out += seg_data;
  }
  return out;
}

}  // namespace memplan::test
