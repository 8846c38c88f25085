// Writes a .tflite whose subgraphs run their operators in a new order (see
// export/tflite_writer.h, reorderTfliteOperators).
//
// A subgraph's operators are a vector of offsets to Operator tables, each
// relative to its own slot and pointing forward. The tables lie after the
// vector, so every slot may point to any of them: permuting the vector is
// rewriting its slots, nothing moves. The result is read back and its
// operators compared with the model in the new order.
#include <flatbuffers/flatbuffers.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "memplan/import.h"
#include "memplan/order.h"
#include "export/tflite_writer.h"

namespace memplan {
namespace {

namespace fb = flatbuffers;
using ReorderOffsets = fb::Vector<fb::uoffset_t>;

constexpr fb::voffset_t kReorderModelSubgraphs = 4 + 2 * 2;
constexpr fb::voffset_t kReorderSubgraphTensors = 4 + 2 * 0, kReorderSubgraphOperators = 4 + 2 * 3;

// The file subgraph of each graph of the model: the one holding its tensors.
std::vector<std::int64_t> reorderFileSubgraphs(const Model& model, const TfliteTensorIndex& index,
                                        const std::vector<std::size_t>& first_tensor) {
  std::vector<std::int64_t> out(model.graphs.size(), -1);
  for (std::size_t t = 0; t < model.tensors.size() && t < index.index.size(); ++t) {
    const GraphId g = model.tensors[t].graph;
    if (out[g] >= 0) continue;
    const auto at = std::upper_bound(first_tensor.begin(), first_tensor.end(),
                                     static_cast<std::size_t>(index.index[t]));
    out[g] = static_cast<std::int64_t>(at - first_tensor.begin()) - 1;
  }
  return out;
}

void reorderPermuteSlots(std::uint8_t* slots, const std::vector<NodeId>& order) {
  std::vector<std::size_t> target(order.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    target[i] = 4 * i + fb::ReadScalar<fb::uoffset_t>(slots + 4 * i);
  for (std::size_t i = 0; i < order.size(); ++i)
    fb::WriteScalar<fb::uoffset_t>(slots + 4 * i,
                                   static_cast<fb::uoffset_t>(target[order[i]] - 4 * i));
}

}  // namespace

std::string reorderTfliteOperators(std::string_view bytes, const std::string& name,
                                   const Model& model,
                                   const std::vector<std::vector<NodeId>>& orders) {
  const TfliteTensorIndex index = tfliteTensorIndex(bytes, name);  // verifies what it reads
  std::string out(bytes);
  auto* data = reinterpret_cast<std::uint8_t*>(out.data());
  fb::Verifier v(data, std::min<std::size_t>(out.size(), FLATBUFFERS_MAX_BUFFER_SIZE - 1));
  const auto* root = fb::GetRoot<fb::Table>(data);
  const auto* subgraphs = root->GetPointer<const ReorderOffsets*>(kReorderModelSubgraphs);
  if (!subgraphs || !v.VerifyVector(subgraphs))
    throw InputError(fmt::format("{}: no subgraphs to reorder", name));
  std::vector<const fb::Table*> tables;
  std::vector<std::size_t> first_tensor;
  std::size_t count = 0;
  for (fb::uoffset_t s = 0; s < subgraphs->size(); ++s) {
    const auto* sg = reinterpret_cast<const fb::Table*>(reinterpret_cast<const std::uint8_t*>(subgraphs->Data()) +
                                                        4 * s + subgraphs->Get(s));
    tables.push_back(sg);
    first_tensor.push_back(count);
    if (const auto* t = sg->GetPointer<const ReorderOffsets*>(kReorderSubgraphTensors)) count += t->size();
  }
  const std::vector<std::int64_t> file_sg = reorderFileSubgraphs(model, index, first_tensor);
  for (std::size_t g = 0; g < orders.size() && g < model.graphs.size(); ++g) {
    if (orders[g].empty()) continue;
    const auto* ops = file_sg[g] < 0 ? nullptr
                                     : tables[static_cast<std::size_t>(file_sg[g])]
                                           ->GetPointer<const ReorderOffsets*>(kReorderSubgraphOperators);
    if (!ops || !v.VerifyVector(ops) || ops->size() != orders[g].size())
      throw InputError(fmt::format("{}: graph {} ('{}'): the order does not fit the subgraph's "
                                   "operators", name, g, model.graphs[g].name));
    reorderPermuteSlots(const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(ops->Data())),
                 orders[g]);
  }
  // Read back: the operators run in the new order.
  const Model back = importTflite(out, name + " (reordered)", ImportOptions{.unknown_size_bytes = 1});
  const Model expected = applyOrder(model, orders);
  for (std::size_t g = 0; g < expected.graphs.size() && g < back.graphs.size(); ++g)
    for (std::size_t n = 0; n < expected.graphs[g].nodes.size(); ++n)
      if (back.graphs[g].nodes[n].outputs != expected.graphs[g].nodes[n].outputs)
        throw InputError(fmt::format("{}: reordered graph {} reads back with another order", name, g));
  return out;
}

}  // namespace memplan
