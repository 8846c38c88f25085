// memplan::Arena: a memory plan at run time. Header-only, C++17, no heap.
//
// A plan -- the header `memplan plan MODEL --emit-c plan.h` writes, or a
// plan file through the library (memplan/c_header.h: runtimeTable) -- says
// for each tensor its pool, offset and size. The caller owns the pools'
// memory; the Arena checks each pool once (present, large enough, aligned to
// the plan's alignment) and then maps a tensor id to its pointer with one
// load and one add: no allocation, no search, no branch on the hot path.
//
//   #include "plan.h"                 // generated: memplan_plan, MEMPLAN_T_*
//   #include "memplan/runtime.h"
//   alignas(MEMPLAN_ALIGNMENT) static unsigned char pool1[MEMPLAN_POOL_1_SIZE];
//   memplan::Pool pools[] = {{pool1, sizeof pool1}};
//   memplan::Arena arena(memplan_plan, pools, 1);   // Arena<memplan_word_t>
//   if (!arena.ok()) { ... arena.error() ... }
//   float* x = arena.as<float>(MEMPLAN_T_INPUT);
//
// alignas needs a power of two; for another alignment (--alignment 24),
// give each pool MEMPLAN_ALIGNMENT - 1 bytes more and pass
// MEMPLAN_ALIGN_UP(buffer). C programs use the header alone:
// MEMPLAN_TENSOR_PTR(pools, MEMPLAN_T_INPUT) is a tensor's address.
//
// Checked mode -- the runtime counterpart of `memplan replay`. Give the
// Arena shadow memory (Arena::shadowWords(plan) words, caller-owned): one
// owner word per granule (the plan's granule: every offset and size is a
// multiple of it). Then, as the program runs:
//   wrote(t)    after a kernel writes tensor t: its granules become t's;
//   read(t)     before a kernel reads t: every granule must still be t's,
//               else the first foreign granule is reported -- poisoned
//               (t or a tensor before it died there) or clobbered (another
//               tensor wrote there since);
//   endStep(s)  after step s: every tensor whose lifetime ends at s (closed
//               lifetimes, graph 0's steps) dies: its bytes are filled with
//               kPoisonByte and its granules marked poisoned, so a later
//               read through a stale pointer finds garbage and read() says
//               so.
// Checks never throw: the first problem is kept (error()) and every later
// call returns false.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <type_traits>

namespace memplan {

// A plan's tables. Word is the generated header's word type (uint32_t when
// every offset and size fits, else uint64_t) or uint64_t for plan files.
template <typename Word>
struct PlanTable {
  std::size_t num_pools = 0;            // pools 1..num_pools
  std::size_t num_tensors = 0;
  std::size_t alignment = 1;            // pool memory must be aligned to this
  std::size_t granule = 1;              // every offset and size is a multiple
  const Word* pool_size = nullptr;      // [num_pools + 1]; [0] unused (constants)
  const Word* tensor_pool = nullptr;    // [num_tensors]
  const Word* tensor_offset = nullptr;  // [num_tensors]
  const Word* tensor_size = nullptr;    // [num_tensors]
  const std::int32_t* first_step = nullptr;  // [num_tensors] closed lifetime
  const std::int32_t* last_step = nullptr;
  const std::int32_t* tensor_graph = nullptr;  // [num_tensors] 0 = main graph

  PlanTable() = default;
  // From any struct with these members: the generated header's plan struct.
  template <typename C, typename = decltype(std::declval<const C&>().tensor_offset)>
  PlanTable(const C& c)  // NOLINT: implicit on purpose
      : num_pools(c.num_pools), num_tensors(c.num_tensors), alignment(c.alignment),
        granule(c.granule), pool_size(c.pool_size), tensor_pool(c.tensor_pool), tensor_offset(c.tensor_offset),
        tensor_size(c.tensor_size), first_step(c.first_step), last_step(c.last_step),
        tensor_graph(c.tensor_graph) {}
};

// One pool's memory, owned by the caller.
struct Pool {
  void* data = nullptr;
  std::size_t size = 0;
};

enum class ArenaIssue : std::uint8_t {
  None,
  PoolMissing,      // fewer pools given than the plan has, or a null pool
  PoolTooSmall,     // a pool smaller than the plan's size for it
  PoolMisaligned,   // a pool not aligned to the plan's alignment
  BadPlan,          // a tensor outside its pool, a pool id out of range
  BadTensor,        // a tensor id out of range
  NoShadow,         // a checked call without shadow memory
  ReadPoisoned,     // read() found bytes of a tensor whose lifetime ended
  ReadClobbered,    // read() found bytes another tensor wrote since
  ReadUnwritten,    // read() found bytes nothing wrote since the Arena began
};

struct ArenaError {
  ArenaIssue issue = ArenaIssue::None;
  std::size_t tensor = 0;       // the tensor concerned
  std::size_t other = 0;        // ReadPoisoned/ReadClobbered: whose bytes were found
  std::size_t pool = 0;
  std::size_t offset = 0;       // first foreign byte in the pool
  std::int32_t step = -1;       // ReadPoisoned: step at whose end `other` died
};

template <typename Word>
class Arena {
 public:
  using Table = PlanTable<Word>;
  static constexpr unsigned char kPoisonByte = 0xA5;

  // Shadow words checked mode needs for `plan`: one per granule of every
  // pool (pools back to back), then one per tensor (the main graph's tensors
  // ordered by their last step, so endStep finds the dying ones directly).
  static std::size_t shadowWords(const Table& plan) {
    std::size_t words = plan.num_tensors;
    const std::size_t g = plan.granule ? plan.granule : 1;
    for (std::size_t p = 1; p <= plan.num_pools; ++p)
      words += (static_cast<std::size_t>(plan.pool_size[p]) + g - 1) / g;
    return words;
  }

  // `pools[i]` holds pool i + 1 (the array is copied; the memory stays the
  // caller's). `shadow` (optional) turns checked mode on.
  Arena(const Table& plan, const Pool* pools, std::size_t num_pools,
        std::uint32_t* shadow = nullptr, std::size_t shadow_words = 0)
      : plan_(plan), shadow_(shadow) {
    init(pools, num_pools, shadow_words);
  }

  bool ok() const { return error_.issue == ArenaIssue::None; }
  const ArenaError& error() const { return error_; }
  bool checked() const { return shadow_ != nullptr; }
  const Table& plan() const { return plan_; }

  // The hot path: a tensor's bytes. No check (ids come from the plan).
  void* data(std::size_t tensor) const {
    return base_[plan_.tensor_pool[tensor]] + plan_.tensor_offset[tensor];
  }
  template <typename T>
  T* as(std::size_t tensor) const {
    return static_cast<T*>(data(tensor));
  }
  std::size_t size(std::size_t tensor) const { return static_cast<std::size_t>(plan_.tensor_size[tensor]); }

  // Checked mode (see the top of this file).
  bool wrote(std::size_t tensor) {
    if (!usable(tensor)) return false;
    const Span s = span(tensor);
    for (std::size_t g = s.begin; g < s.end; ++g) shadow_[g] = owner(tensor);
    return true;
  }
  bool read(std::size_t tensor) {
    if (!usable(tensor)) return false;
    const Span s = span(tensor);
    for (std::size_t g = s.begin; g < s.end; ++g) {
      const std::uint32_t w = shadow_[g];
      if (w == owner(tensor)) continue;
      const std::size_t pool = static_cast<std::size_t>(plan_.tensor_pool[tensor]);
      const std::size_t offset = (g - shadow_base_[pool]) * granule_;
      if (w & kPoisonBit) {
        const std::size_t dead = w & ~kPoisonBit;
        fail(ArenaIssue::ReadPoisoned, tensor, dead, pool, offset);
        error_.step = plan_.last_step ? plan_.last_step[dead] : -1;
      } else if (w == kFree) {
        fail(ArenaIssue::ReadUnwritten, tensor, tensor, pool, offset);
      } else {
        fail(ArenaIssue::ReadClobbered, tensor, w - 1, pool, offset);
      }
      return false;
    }
    return true;
  }
  // After step `step` of graph 0 (steps in increasing order): tensors whose
  // lifetime ends there -- or earlier, for steps not reported -- die.
  bool endStep(std::int32_t step) {
    if (!ok()) return false;
    if (!shadow_ || !plan_.last_step) {
      fail(ArenaIssue::NoShadow, 0, 0, 0, 0);
      return false;
    }
    for (; dying_ < dying_end_ && plan_.last_step[by_last_[dying_]] <= step; ++dying_)
      if (!release(by_last_[dying_])) return false;
    return true;
  }
  // Kills one tensor now (a control-flow body's tensors, whose steps are
  // their body's own).
  bool release(std::size_t tensor) {
    if (!usable(tensor)) return false;
    const Span s = span(tensor);
    for (std::size_t g = s.begin; g < s.end; ++g)
      if (shadow_[g] == owner(tensor)) shadow_[g] = kPoisonBit | static_cast<std::uint32_t>(tensor);
    std::memset(data(tensor), kPoisonByte, size(tensor));
    return true;
  }

  // One line describing error(), for logs.
  int describe(char* out, std::size_t n) const {
    static const char* const kWhat[] = {"ok", "pool missing", "pool too small", "pool misaligned",
                                        "bad plan", "bad tensor id", "no shadow memory",
                                        "read of poisoned bytes", "read of clobbered bytes",
                                        "read of bytes never written"};
    const ArenaError& e = error_;
    return std::snprintf(out, n, "%s: tensor %zu, pool %zu, offset %zu (other tensor %zu, step %d)",
                         kWhat[static_cast<int>(e.issue)], e.tensor, e.pool, e.offset, e.other,
                         static_cast<int>(e.step));
  }

 private:
  static constexpr std::uint32_t kFree = 0;
  static constexpr std::uint32_t kPoisonBit = 0x80000000u;
  static constexpr std::size_t kMaxPools = 64;
  struct Span {
    std::size_t begin, end;
  };

  void init(const Pool* pools, std::size_t num_pools, std::size_t shadow_words) {
    const Table& plan = plan_;
    std::uint32_t* shadow = shadow_;
    granule_ = plan.granule ? plan.granule : 1;
    const std::size_t align = plan.alignment ? plan.alignment : 1;
    if (plan.num_pools >= kMaxPools) return fail(ArenaIssue::BadPlan, 0, 0, plan.num_pools, 0);
    if (num_pools < plan.num_pools) return fail(ArenaIssue::PoolMissing, 0, 0, num_pools + 1, 0);
    for (std::size_t p = 1; p <= plan.num_pools; ++p) {
      const Pool& pool = pools[p - 1];
      const auto need = static_cast<std::size_t>(plan.pool_size[p]);
      base_[p] = static_cast<unsigned char*>(pool.data);
      if (need == 0) continue;
      if (!pool.data) return fail(ArenaIssue::PoolMissing, 0, 0, p, 0);
      if (pool.size < need) return fail(ArenaIssue::PoolTooSmall, 0, 0, p, pool.size);
      if (reinterpret_cast<std::uintptr_t>(pool.data) % align != 0)
        return fail(ArenaIssue::PoolMisaligned, 0, 0, p, 0);
    }
    for (std::size_t t = 0; t < plan.num_tensors; ++t) {
      const auto p = static_cast<std::size_t>(plan.tensor_pool[t]);
      if (p < 1 || p > plan.num_pools ||
          plan.tensor_offset[t] > plan.pool_size[p] ||
          plan.tensor_size[t] > plan.pool_size[p] - plan.tensor_offset[t])
        return fail(ArenaIssue::BadPlan, t, 0, p, static_cast<std::size_t>(plan.tensor_offset[t]));
    }
    if (shadow) {
      if (shadow_words < shadowWords(plan)) return fail(ArenaIssue::NoShadow, 0, 0, 0, 0);
      std::size_t at = 0;
      for (std::size_t p = 1; p <= plan.num_pools; ++p) {
        shadow_base_[p] = at;
        at += (static_cast<std::size_t>(plan.pool_size[p]) + granule_ - 1) / granule_;
      }
      for (std::size_t i = 0; i < at; ++i) shadow_[i] = kFree;
      // The main graph's tensors by last step (ties by id), in the shadow's
      // tail; std::sort needs no memory of its own.
      by_last_ = shadow_ + at;
      dying_end_ = 0;
      for (std::size_t t = 0; t < plan.num_tensors; ++t)
        if (!plan.tensor_graph || plan.tensor_graph[t] == 0) by_last_[dying_end_++] = static_cast<std::uint32_t>(t);
      if (plan.last_step)
        std::sort(by_last_, by_last_ + dying_end_, [&](std::uint32_t a, std::uint32_t b) {
          return plan.last_step[a] != plan.last_step[b] ? plan.last_step[a] < plan.last_step[b] : a < b;
        });
    }
  }

  static std::uint32_t owner(std::size_t tensor) { return static_cast<std::uint32_t>(tensor) + 1; }
  Span span(std::size_t tensor) const {
    const auto pool = static_cast<std::size_t>(plan_.tensor_pool[tensor]);
    const std::size_t base = shadow_base_[pool];
    const auto offset = static_cast<std::size_t>(plan_.tensor_offset[tensor]);
    const std::size_t end = offset + static_cast<std::size_t>(plan_.tensor_size[tensor]);
    return {base + offset / granule_, base + (end + granule_ - 1) / granule_};
  }
  bool usable(std::size_t tensor) {
    if (!ok()) return false;
    if (tensor >= plan_.num_tensors) {
      fail(ArenaIssue::BadTensor, tensor, 0, 0, 0);
      return false;
    }
    if (!shadow_) {
      fail(ArenaIssue::NoShadow, tensor, 0, 0, 0);
      return false;
    }
    return true;
  }
  void fail(ArenaIssue issue, std::size_t tensor, std::size_t other, std::size_t pool,
            std::size_t offset) {
    if (!ok()) return;
    error_ = {issue, tensor, other, pool, offset, -1};
  }

  Table plan_;
  std::uint32_t* shadow_;
  unsigned char* base_[kMaxPools] = {};
  std::size_t granule_ = 1;
  std::size_t shadow_base_[kMaxPools] = {};
  std::uint32_t* by_last_ = nullptr;  // in the shadow memory
  std::size_t dying_ = 0, dying_end_ = 0;
  ArenaError error_;
};

// The generated header's plan struct names its word type.
template <typename C>
Arena(const C&, const Pool*, std::size_t, std::uint32_t* = nullptr, std::size_t = 0)
    -> Arena<std::remove_cv_t<std::remove_pointer_t<decltype(std::declval<const C&>().tensor_offset)>>>;

}  // namespace memplan
