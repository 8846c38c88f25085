// ExecuTorch programs in another instruction order (see memplan/pte.h,
// pteOrderConstraints and reorderPte).
//
// What may move. The graph of a program (pte_chain.cpp) names the tensors
// each instruction reads and writes, which is what lifetimes need; running
// instructions in another order needs more:
//  1. Values, not only tensors: an instruction may write an Int or a Bool
//     (sym_size, a comparison) that a later one reads. Each value an
//     instruction names is an access: a write where its results go (the
//     last argument and the places before it that repeat it, as the
//     importer reads them; a move's destination; a freed value), a read
//     elsewhere. Tensors are accessed through their storage: views and
//     in-place results (one storage group) are one key, and a tensor a
//     kernel writes that memplan does not plan (its pointer comes at run
//     time, e.g. a view made by et_view) shares the key of every tensor
//     that instruction reads. A storage no instruction wrote before and
//     that is not an input, a constant or state is written where it is
//     first named (a delegate's outputs are not the last argument).
//     Read after write, write after read and write after write keep their
//     order.
//  2. Storage linked by moves, and state (kept between calls, or shared
//     with another method): every instruction naming it keeps its order
//     (their lifetimes were extended to the ends of those chains).
//  3. Control flow: only straight-line segments are reordered. A jump and
//     the destination of a jump are barriers: every instruction stays
//     between the barriers it was between, so a jump lands on the same
//     instruction and skips the same ones; destinations are remapped.
//  4. Layout: a method with several chains, or whose instruction tables or
//     stack traces lie before their lists (their offsets cannot be
//     permuted in place), keeps its order.
//
// Writing: each chain's instruction list is a vector of offsets to tables
// lying after it, so permuting the list is rewriting its slots (and the
// stack trace's, when it has one per instruction); jump destinations are
// rewritten in their tables. Nothing moves. The result is listed field by
// field and compared with the original's listing in the new order.
#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "import/pte_format.h"
#include "memplan/order.h"
#include "memplan/pte.h"

namespace memplan {
namespace {

using namespace pte;

// One instruction as far as the order is concerned.
struct PteInstr {
  InstructionType type = kNoInstruction;
  std::vector<std::pair<std::int32_t, bool>> values;  // (value index, written)
  std::int32_t dest = -1;      // a jump's destination (chain index)
  std::size_t dest_at = 0;     // byte position of destination_instruction (0: absent)
  std::int32_t move_from = -1, move_to = -1;
};

// One method's chain, where its lists lie, and what its values are.
struct PteChain {
  std::string fixed;                      // why its order stays ("" = may change)
  std::vector<PteInstr> instrs;
  std::size_t slots = 0;                  // byte position of instruction slot 0
  std::vector<std::size_t> targets;       // each instruction's table
  bool stack = false;                     // a stack trace per instruction
  std::size_t stack_slots = 0;
  std::vector<std::size_t> stack_targets;
  std::vector<std::vector<std::int32_t>> list_items;  // by value: a tensor list's items
};

// A vector of offsets whose tables all lie after it can be permuted.
bool pteSlotsPermutable(std::size_t slots, const std::vector<std::size_t>& targets) {
  const std::size_t end = slots + 4 * targets.size();
  return std::all_of(targets.begin(), targets.end(), [&](std::size_t t) { return t >= end; });
}

// Long (~110 lines) on purpose: the flatbuffer walk from the program's root
// to each chain's instruction slots, one table after the other, every
// offset checked where it is read.
std::vector<PteChain> pteReadChains(const PteProgram& p) {
  const AlignedBytes aligned(p.bytes);
  Reader r(aligned.data(), static_cast<std::size_t>(p.program_size), p.source);
  const fb::Table* program = r.root();
  const auto* plans = r.vector<fb::uoffset_t>(program, program_f::kExecutionPlan, pte::Where{}, "execution_plan");
  std::vector<PteChain> out(p.methods.size());
  for (std::size_t mi = 0; mi < out.size() && plans && mi < plans->size(); ++mi) {
    PteChain& mc = out[mi];
    const auto at = [&](const char* what, std::int64_t index = -1) {
      return pte::Where{what, index, static_cast<std::int64_t>(mi), &p.methods[mi].name};
    };
    const fb::Table* plan = r.tableAt(plans, static_cast<fb::uoffset_t>(mi), at("method"));
    // Tensor lists' items (value indices).
    if (const auto* values = r.vector<fb::uoffset_t>(plan, plan_f::kValues, at("values"), "values")) {
      mc.list_items.resize(values->size());
      for (fb::uoffset_t v = 0; v < values->size(); ++v) {
        const fb::Table* ev = r.tableAt(values, v, at("value", v));
        const auto type = r.scalar<std::uint8_t>(ev, evalue_f::kValType, kNoValue, at("value", v), "val_type");
        if (type != kTensorList && type != kOptionalTensorList) continue;
        const fb::Table* t = r.table(ev, evalue_f::kVal, at("value", v), "tensor list");
        const auto* items = t ? r.vector<std::int32_t>(t, field(0), at("value", v), "items") : nullptr;
        if (!items) continue;
        for (fb::uoffset_t k = 0; k < items->size(); ++k)
          if (items->Get(k) >= 0 && static_cast<std::size_t>(items->Get(k)) < values->size())
            mc.list_items[v].push_back(items->Get(k));
      }
    }
    const auto* chains = r.vector<fb::uoffset_t>(plan, plan_f::kChains, at("chains"), "chains");
    const std::size_t nchains = chains ? chains->size() : 0;
    if (nchains > 1) mc.fixed = fmt::format("the method has {} chains", nchains);
    for (std::size_t c = 0; c < nchains; ++c) {
      const fb::Table* chain = r.tableAt(chains, static_cast<fb::uoffset_t>(c), at("chain", static_cast<std::int64_t>(c)));
      const auto* instrs = r.vector<fb::uoffset_t>(chain, chain_f::kInstructions, at("chain"), "instructions");
      if (!instrs) continue;
      if (c == 0) mc.slots = r.pos(instrs->Data());
      for (fb::uoffset_t k = 0; k < instrs->size(); ++k) {
        const pte::Where w = at("instruction", static_cast<std::int64_t>(mc.instrs.size()));
        const fb::Table* ins = r.tableAt(instrs, k, w);
        if (c == 0) mc.targets.push_back(r.pos(ins));
        PteInstr in;
        in.type = static_cast<InstructionType>(
            r.scalar<std::uint8_t>(ins, instruction_f::kArgsType, kNoInstruction, w, "instr_args_type"));
        const fb::Table* args = in.type >= kKernelCall && in.type <= kFreeCall
                                    ? r.table(ins, instruction_f::kArgs, w, "instr_args")
                                    : nullptr;
        const auto field32 = [&](FieldId f) { return args ? r.scalar<std::int32_t>(args, f, 0, w, "field") : 0; };
        switch (in.type) {
          case kKernelCall:
          case kDelegateCall: {
            const auto* a = args ? r.vector<std::int32_t>(args, kCallSecond, w, "args") : nullptr;
            const std::size_t n = a ? a->size() : 0;
            std::vector<std::int32_t> vals(n);
            for (std::size_t i = 0; i < n; ++i) vals[i] = a->Get(static_cast<fb::uoffset_t>(i));
            // Results: the last argument and the places before it that
            // repeat it (pte_import.cpp, readArgs).
            std::vector<char> written(n, 0);
            if (n > 0) {
              written[n - 1] = 1;
              const std::int32_t last = vals[n - 1];
              const auto* items = last >= 0 && static_cast<std::size_t>(last) < mc.list_items.size()
                                      ? &mc.list_items[static_cast<std::size_t>(last)] : nullptr;
              if (items && !items->empty()) {
                const std::size_t k = items->size();
                bool repeats = k < n;
                for (std::size_t j = 0; j < k && repeats; ++j) repeats = vals[n - 1 - k + j] == (*items)[j];
                if (repeats)
                  for (std::size_t j = 0; j < k; ++j) written[n - 1 - k + j] = 1;
              } else if (n >= 2 && vals[n - 2] == last) {
                written[n - 2] = 1;
              }
            }
            for (std::size_t i = 0; i < n; ++i) in.values.emplace_back(vals[i], written[i] != 0);
            break;
          }
          case kMoveCall:
            in.move_from = field32(kCallFirst);
            in.move_to = field32(kCallSecond);
            in.values = {{in.move_from, false}, {in.move_to, true}};
            break;
          case kJumpFalseCall:
            in.values = {{field32(kCallFirst), false}};
            in.dest = field32(kCallSecond);
            in.dest_at = args ? r.fieldPos(args, kCallSecond) : 0;
            break;
          case kFreeCall:
            in.values = {{field32(kCallFirst), true}};
            break;
          default:
            break;
        }
        mc.instrs.push_back(std::move(in));
      }
      if (c != 0) continue;
      if (const auto* st = r.vector<fb::uoffset_t>(chain, chain_f::kStacktrace, at("chain"), "stacktrace")) {
        if (st->size() != instrs->size()) {
          if (mc.fixed.empty())
            mc.fixed = fmt::format("its stack trace lists {} entries for {} instructions", st->size(), instrs->size());
        } else {
          mc.stack = true;
          mc.stack_slots = r.pos(st->Data());
          for (fb::uoffset_t k = 0; k < st->size(); ++k)
            mc.stack_targets.push_back(r.pos(r.tableAt(st, k, at("stacktrace", k))));
        }
      }
    }
    if (mc.fixed.empty() && (!pteSlotsPermutable(mc.slots, mc.targets) ||
                             (mc.stack && !pteSlotsPermutable(mc.stack_slots, mc.stack_targets))))
      mc.fixed = "its instruction tables lie before their list (the list cannot be permuted in place)";
    if (mc.fixed.empty() && mc.instrs.size() != p.model.graphs[mi].nodes.size())
      mc.fixed = "its graph does not have one node per instruction";
  }
  return out;
}

std::int32_t pteFindRoot(std::vector<std::int32_t>& parent, std::int32_t x) {
  while (parent[static_cast<std::size_t>(x)] != x)
    x = parent[static_cast<std::size_t>(x)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
  return x;
}

// Long (~140 lines) on purpose: one pass over the method's instructions that
// keeps, per value and storage, the last write and the reads since it; split
// up, that state would travel through every piece.
// Steps 1-3 of the comment above for method `m`.
std::vector<std::pair<NodeId, NodeId>> pteMethodEdges(const PteProgram& p, std::size_t m, const PteChain& mc) {
  const PteMethod& pm = p.methods[m];
  const Graph& graph = p.model.graphs[m];
  const auto nv = static_cast<std::int32_t>(pm.value_tensor.size());
  const auto n = static_cast<std::int32_t>(mc.instrs.size());
  // Keys: one per value; a tensor value's key is its storage root's value.
  std::vector<std::int32_t> value_of_tensor;  // TensorId - base -> value
  TensorId base = kNone;
  for (std::int32_t v = 0; v < nv; ++v)
    if (const TensorId t = pm.value_tensor[static_cast<std::size_t>(v)]; t != kNone)
      base = base == kNone ? t : std::min(base, t);
  const auto valueOf = [&](TensorId t) -> std::int32_t {
    const auto i = static_cast<std::size_t>(t - base);
    return t >= base && i < value_of_tensor.size() ? value_of_tensor[i] : -1;
  };
  for (std::int32_t v = 0; v < nv; ++v)
    if (const TensorId t = pm.value_tensor[static_cast<std::size_t>(v)]; t != kNone) {
      const auto i = static_cast<std::size_t>(t - base);
      if (value_of_tensor.size() <= i) value_of_tensor.resize(i + 1, -1);
      value_of_tensor[i] = v;
    }
  std::vector<std::int32_t> parent(static_cast<std::size_t>(nv));
  std::iota(parent.begin(), parent.end(), 0);
  const auto unite = [&](std::int32_t a, std::int32_t b) {
    if (a < 0 || b < 0) return;
    a = pteFindRoot(parent, a);
    b = pteFindRoot(parent, b);
    if (a != b) parent[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);
  };
  const auto tensorOf = [&](std::int32_t v) {
    return v >= 0 && v < nv ? pm.value_tensor[static_cast<std::size_t>(v)] : kNone;
  };
  // Storage groups.
  for (std::int32_t v = 0; v < nv; ++v) {
    const TensorId t = tensorOf(v);
    if (t == kNone) continue;
    const Tensor& x = p.model.tensors[t];
    if (x.alias != AliasKind::None && x.alias_of != kNone) unite(v, valueOf(x.alias_of));
  }
  const auto items = [&](std::int32_t v) -> const std::vector<std::int32_t>& {
    static const std::vector<std::int32_t> none;
    return v >= 0 && static_cast<std::size_t>(v) < mc.list_items.size() ? mc.list_items[static_cast<std::size_t>(v)] : none;
  };
  std::vector<char> ordered(static_cast<std::size_t>(nv), 0);
  std::vector<std::int32_t> linked;  // values moved between
  for (const PteInstr& in : mc.instrs) {
    if (in.type == kMoveCall) {
      std::vector<std::int32_t> all = {in.move_from, in.move_to};
      for (std::int32_t v : {in.move_from, in.move_to})
        for (std::int32_t i : items(v)) all.push_back(i);
      for (std::int32_t v : all) {
        if (v < 0 || v >= nv) continue;
        unite(all[0], v);
        linked.push_back(v);
      }
    }
    if (in.type != kKernelCall && in.type != kDelegateCall) continue;
    // A written tensor memplan does not plan may point into what it reads.
    for (const auto& [v, w] : in.values) {
      const TensorId t = tensorOf(v);
      if (!w || t == kNone || p.tensors[t].allocation || p.model.tensors[t].kind == TensorKind::Constant) continue;
      for (const auto& [u, uw] : in.values) {
        if (uw || u == v) continue;
        unite(v, u);
        for (std::int32_t i : items(u)) unite(v, i);
      }
    }
  }
  for (std::int32_t v : linked) ordered[static_cast<std::size_t>(pteFindRoot(parent, v))] = 1;
  // State, inputs and constants.
  std::vector<char> preexisting(static_cast<std::size_t>(nv), 0);
  for (std::int32_t v = 0; v < nv; ++v) {
    const TensorId t = tensorOf(v);
    if (t == kNone) continue;
    const auto k = static_cast<std::size_t>(pteFindRoot(parent, v));
    if (p.tensors[t].state || p.tensors[t].shared || p.model.tensors[t].kind == TensorKind::MutableBuffer)
      ordered[k] = 1;
    if (p.model.tensors[t].kind == TensorKind::Constant) preexisting[k] = 1;
  }
  for (TensorId t : graph.inputs)
    if (const std::int32_t v = valueOf(t); v >= 0) preexisting[static_cast<std::size_t>(pteFindRoot(parent, v))] = 1;

  std::vector<std::pair<NodeId, NodeId>> edges;
  std::vector<NodeId> last_write(static_cast<std::size_t>(nv), kNone);
  std::vector<NodeId> last_any(static_cast<std::size_t>(nv), kNone);
  std::vector<std::vector<NodeId>> readers(static_cast<std::size_t>(nv));
  std::vector<char> named(static_cast<std::size_t>(nv), 0);
  std::map<std::int32_t, bool> acc;  // one instruction's accesses: key -> written
  for (NodeId i = 0; i < n; ++i) {
    acc.clear();
    const auto add = [&](std::int32_t v, bool w) {
      if (v < 0 || v >= nv) return;
      const std::int32_t k = pteFindRoot(parent, v);
      // A storage first named here, made by no instruction before: written.
      const bool made = tensorOf(v) != kNone && !named[static_cast<std::size_t>(k)] &&
                        !preexisting[static_cast<std::size_t>(k)];
      acc[k] = acc[k] || w || made;
    };
    for (const auto& [v, w] : mc.instrs[static_cast<std::size_t>(i)].values) {
      add(v, w);
      for (std::int32_t it : items(v)) add(it, w);
    }
    for (const auto& [k, w] : acc) {
      const auto ku = static_cast<std::size_t>(k);
      named[ku] = 1;
      if (ordered[ku] && last_any[ku] != kNone) edges.emplace_back(last_any[ku], i);
      last_any[ku] = i;
      if (last_write[ku] != kNone) edges.emplace_back(last_write[ku], i);
      if (w) {
        for (NodeId r : readers[ku]) edges.emplace_back(r, i);
        readers[ku].clear();
        last_write[ku] = i;
      } else {
        readers[ku].push_back(i);
      }
    }
  }
  // Barriers: jumps and their destinations.
  std::vector<char> barrier(static_cast<std::size_t>(n), 0);
  for (NodeId i = 0; i < n; ++i) {
    const PteInstr& in = mc.instrs[static_cast<std::size_t>(i)];
    if (in.type != kJumpFalseCall) continue;
    barrier[static_cast<std::size_t>(i)] = 1;
    if (in.dest >= 0 && in.dest < n) barrier[static_cast<std::size_t>(in.dest)] = 1;
  }
  NodeId prev = kNone;
  std::vector<NodeId> since;  // non-barriers after `prev`
  for (NodeId i = 0; i < n; ++i) {
    if (!barrier[static_cast<std::size_t>(i)]) {
      if (prev != kNone) edges.emplace_back(prev, i);
      since.push_back(i);
      continue;
    }
    for (NodeId s : since) edges.emplace_back(s, i);
    if (prev != kNone) edges.emplace_back(prev, i);
    since.clear();
    prev = i;
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  return edges;
}

std::vector<std::string> pteListingLines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// The original's listing as the reordered program should list it: each
// instruction's (and stack trace entry's) lines under its new index, jump
// destinations remapped.
std::vector<std::string> pteExpectedListing(const std::string& listing,
                                         const std::vector<std::vector<std::int32_t>>& new_index) {
  std::vector<std::string> out = pteListingLines(listing);
  for (std::string& line : out) {
    std::size_t m = 0;
    if (line.rfind("execution_plan[", 0) != 0) continue;
    const std::size_t close = line.find(']');
    m = std::stoul(line.substr(15, close - 15));
    if (m >= new_index.size() || new_index[m].empty()) continue;
    const auto& map = new_index[m];
    for (const char* part : {"].chains[0].instructions[", "].chains[0].stacktrace["}) {
      if (line.compare(close, std::char_traits<char>::length(part), part) != 0) continue;
      const std::size_t from = close + std::char_traits<char>::length(part);
      const std::size_t to = line.find(']', from);
      const std::size_t old = std::stoul(line.substr(from, to - from));
      if (old < map.size()) line.replace(from, to - from, std::to_string(map[old]));
      const std::string key = ".jump_false_call.destination_instruction=";
      const std::size_t d = line.find(key);
      if (d != std::string::npos) {
        const auto dest = std::stol(line.substr(d + key.size()));
        if (dest >= 0 && static_cast<std::size_t>(dest) < map.size())
          line.replace(d + key.size(), std::string::npos, std::to_string(map[static_cast<std::size_t>(dest)]));
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

template <typename T>
void ptePutScalar(std::string& out, std::size_t at, T value) {
  T le = fb::EndianScalar(value);
  std::memcpy(out.data() + at, &le, sizeof(T));
}

void ptePermuteSlots(std::string& out, std::size_t slots, const std::vector<std::size_t>& targets,
                  const std::vector<NodeId>& order) {
  for (std::size_t i = 0; i < order.size(); ++i)
    ptePutScalar<fb::uoffset_t>(out, slots + 4 * i,
                             static_cast<fb::uoffset_t>(targets[static_cast<std::size_t>(order[i])] - (slots + 4 * i)));
}

}  // namespace

OrderConstraints pteOrderConstraints(const PteProgram& program) {
  const std::vector<PteChain> chains = pteReadChains(program);
  OrderConstraints c;
  c.edges.resize(program.methods.size());
  c.fixed.resize(program.methods.size());
  for (std::size_t m = 0; m < program.methods.size(); ++m) {
    c.fixed[m] = chains[m].fixed;
    if (c.fixed[m].empty()) c.edges[m] = pteMethodEdges(program, m, chains[m]);
  }
  return c;
}

PteProgram reorderPte(const PteProgram& program, const std::vector<std::vector<NodeId>>& orders) {
  const std::vector<PteChain> chains = pteReadChains(program);
  OrderConstraints c;
  c.edges.resize(program.methods.size());
  c.fixed.resize(program.methods.size());
  std::string out = program.bytes;
  std::vector<std::vector<std::int32_t>> new_index(program.methods.size());
  std::map<std::size_t, std::int32_t> dest_written;  // a table two jumps share is written once
  for (std::size_t m = 0; m < orders.size() && m < program.methods.size(); ++m) {
    const std::vector<NodeId>& order = orders[m];
    if (order.empty()) continue;
    const PteChain& mc = chains[m];
    const auto label = methodLabel(program, static_cast<GraphId>(m));
    if (!mc.fixed.empty())
      throw InputError(fmt::format("{}: {}: its instructions keep their order: {}", program.source, label, mc.fixed));
    c.edges[m] = pteMethodEdges(program, m, mc);
    if (order.size() != mc.instrs.size() ||
        !isValidOrder(program.model, static_cast<GraphId>(m), order, &c))
      throw InputError(fmt::format("{}: {}: the order is not one its instructions can run in (a value "
                                   "read before it is written, or an instruction across a jump)",
                                   program.source, label));
    const auto n = static_cast<std::int32_t>(order.size());
    auto& map = new_index[m];
    map.assign(order.size(), 0);
    for (std::int32_t i = 0; i < n; ++i) map[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = i;
    ptePermuteSlots(out, mc.slots, mc.targets, order);
    if (mc.stack) ptePermuteSlots(out, mc.stack_slots, mc.stack_targets, order);
    for (const PteInstr& in : mc.instrs) {
      if (in.type != kJumpFalseCall) continue;
      const std::int32_t dest = in.dest >= 0 && in.dest < n ? map[static_cast<std::size_t>(in.dest)] : in.dest;
      if (dest == in.dest) continue;
      const auto [it, fresh] = dest_written.emplace(in.dest_at, dest);
      if (in.dest_at == 0 || (!fresh && it->second != dest))
        throw InputError(fmt::format("{}: {}: a jump's destination cannot be rewritten in place",
                                     program.source, label));
      ptePutScalar<std::int32_t>(out, in.dest_at, dest);
    }
  }
  PteProgram r = program;
  r.bytes = std::move(out);
  r.model = applyOrder(program.model, orders);
  // Nothing but the order changed.
  const std::string name = program.source + " (reordered)";
  if (pteExpectedListing(describePte(program.bytes, program.source, true), new_index) !=
      pteExpectedListing(describePte(r.bytes, name, true), {}))
    throw PlanError(fmt::format("{}: the reordered program lists other fields than the original's "
                                "instructions in the new order", program.source));
  return r;
}

}  // namespace memplan
