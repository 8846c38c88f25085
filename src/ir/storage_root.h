// The tensor whose storage a tensor uses: View and InPlace aliases followed
// to their base. Shared by validation (gaps belong to a storage's owner)
// and the lifetimes (one spec per storage).
#pragma once

#include <vector>

#include "memplan/graph.h"

namespace memplan {

// Answers for a model whose alias chains end (validateModel checks that
// first). Every tensor of a walk learns its root, so a chain of n views
// costs O(n) in all, not O(n^2).
class StorageRoots {
 public:
  explicit StorageRoots(const Model& m) : m_(m), root_(m.tensors.size(), kNone) {}

  TensorId operator()(TensorId t) {
    walk_.clear();
    TensorId cur = t;
    while (root_[cur] == kNone && (m_.tensors[cur].alias == AliasKind::View ||
                                   m_.tensors[cur].alias == AliasKind::InPlace)) {
      walk_.push_back(cur);
      cur = m_.tensors[cur].alias_of;
    }
    const TensorId root = root_[cur] != kNone ? root_[cur] : cur;
    root_[cur] = root;
    for (TensorId w : walk_) root_[w] = root;
    return root;
  }

 private:
  const Model& m_;
  std::vector<TensorId> root_;
  std::vector<TensorId> walk_;
};

}  // namespace memplan
