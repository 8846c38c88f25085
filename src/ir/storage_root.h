// The tensor whose storage a tensor uses: View and InPlace aliases followed
// to their base. Shared by validation (gaps belong to a storage's owner)
// and the lifetimes (one spec per storage).
#pragma once

#include <unordered_map>
#include <vector>

#include "memplan/graph.h"

namespace memplan {

// Answers for a model whose alias chains end (validateModel checks that
// first). Every tensor of a walk learns its root, so a chain of n views
// costs O(n) in all, not O(n^2). Only aliases are remembered, so the
// memory follows the tensors asked about, not the model (lifetimes ask
// about one graph's tensors at a time).
class StorageRoots {
 public:
  explicit StorageRoots(const Model& m) : m_(m) {}

  TensorId operator()(TensorId t) {
    walk_.clear();
    TensorId cur = t;
    TensorId root = kNone;
    while (root == kNone) {
      const Tensor& x = m_.tensors[cur];
      if (x.alias != AliasKind::View && x.alias != AliasKind::InPlace) {
        root = cur;
      } else if (const auto it = root_.find(cur); it != root_.end()) {
        root = it->second;
      } else {
        walk_.push_back(cur);
        cur = x.alias_of;
      }
    }
    for (TensorId w : walk_) root_[w] = root;
    return root;
  }

 private:
  const Model& m_;
  std::unordered_map<TensorId, TensorId> root_;  // alias -> its storage's owner
  std::vector<TensorId> walk_;
};

}  // namespace memplan
