// Synthetic buffer lists for the benchmarks. Deterministic: a list depends
// only on its parameters and seed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "algorithms/random.h"
#include "memplan/algorithm.h"

namespace memplan::bench {

inline Bytes roundUp(Bytes v, Bytes a) { return (v + a - 1) / a * a; }

inline void addBuffer(PoolProblem& p, TimeValue start, TimeValue end, Bytes nbytes,
                      Bytes alignment = 16) {
  Buffer b;
  b.id = static_cast<BufferId>(p.buffers.size());
  b.name = fmt::format("t{}", b.id);
  b.start = start;
  b.end = std::max(end, start + 1);
  b.nbytes = nbytes;
  b.size = roundUp(std::max<Bytes>(nbytes, 1), alignment);
  b.alignment = alignment;
  p.buffers.push_back(std::move(b));
}

// "a,b,,c" -> {"a", "b", "c"}: a comma-separated flag value.
inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t p = 0; p <= s.size();) {
    const std::size_t q = std::min(s.find(',', p), s.size());
    if (q > p) out.push_back(s.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

// Most buffers alive at one step.
inline std::size_t maxLive(const PoolProblem& p) {
  std::vector<std::pair<TimeValue, int>> ev;
  for (const Buffer& b : p.buffers) {
    ev.emplace_back(b.start, 1);
    ev.emplace_back(b.end, -1);
  }
  std::sort(ev.begin(), ev.end());
  long live = 0, most = 0;
  for (const auto& e : ev) most = std::max(most, live += e.second);
  return static_cast<std::size_t>(most);
}

// Model-like list: operators in sequence, most outputs read by the next few
// operators, some kept for a long skip connection; sizes log-uniform from
// 64 B to 4 MiB. About 2 buffers per step, so concurrency stays bounded
// (like real models) whatever n is.
inline PoolProblem modelLike(std::size_t n, std::uint64_t seed) {
  SplitMix64 rng(seed);
  PoolProblem p;
  p.buffers.reserve(n);
  const auto steps = static_cast<TimeValue>(n / 2 + 1);
  for (std::size_t i = 0; i < n; ++i) {
    const auto start = static_cast<TimeValue>(i / 2);
    TimeValue len = 1 + static_cast<TimeValue>(rng.below(4));
    if (rng.below(20) == 0) len += static_cast<TimeValue>(rng.below(200));  // skip connection
    const double lg = 6 + rng.unit() * 16;  // 2^6 .. 2^22
    addBuffer(p, start, std::min(steps, start + len), static_cast<Bytes>(std::exp2(lg)),
              rng.below(4) == 0 ? 64 : 16);
  }
  return p;
}

// The scale benchmark's lists: n buffers, one starting per step on
// average (starts uniform over n steps), lengths log-uniform in 1..1000
// steps, sizes log-uniform in 64 B..1 MiB (rounded up to 64, aligned to
// 64). About 145 buffers are live at any time whatever n is.
inline PoolProblem logUniform(std::size_t n, std::uint64_t seed) {
  SplitMix64 rng(seed);
  PoolProblem p;
  p.buffers.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto start = static_cast<TimeValue>(rng.below(n));
    const auto len = static_cast<TimeValue>(std::exp(rng.unit() * std::log(1000.0)));
    const auto bytes = static_cast<Bytes>(std::exp2(6 + rng.unit() * 14));
    addBuffer(p, start, start + std::max<TimeValue>(1, len), bytes, 64);
  }
  return p;
}

// Stairs (issue 27's hostile input): buffer i lives [i, i + width), its
// size 1 + (i * 7919) mod 100003 bytes, alignment 1, as MiniMalloc CSV
// rows would give it. Every buffer overlaps the width - 1 before it and
// after it: long, densely overlapping lifetimes.
inline PoolProblem stairs(std::size_t n, std::size_t width) {
  PoolProblem p;
  p.buffers.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    addBuffer(p, static_cast<TimeValue>(i), static_cast<TimeValue>(i + width),
              1 + (i * 7919) % 100003, 1);
  return p;
}

// Random intervals: starts uniform in [0, n), lengths uniform in
// 1..n/4 + 1 steps, sizes uniform in 1..100,000 bytes, alignment 1. About
// n/8 buffers live at once: the live set grows with the list.
inline PoolProblem randomIntervals(std::size_t n, std::uint64_t seed) {
  SplitMix64 rng(seed);
  PoolProblem p;
  p.buffers.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto start = static_cast<TimeValue>(rng.below(n));
    const auto len = static_cast<TimeValue>(1 + rng.below(n / 4 + 1));
    addBuffer(p, start, start + len, 1 + rng.below(100'000), 1);
  }
  return p;
}

// Dense lists, like training-memory traces: n buffers, two starting per
// step, about `live` of them alive at any step whatever n is. Lifetimes
// are mixed: 60% short temporaries (1-8 steps), 40% log-uniform in
// 1..M steps with M chosen so the mean number alive is `live`; sizes
// log-uniform over six orders of magnitude (16 B..16 MiB, aligned to 16).
inline PoolProblem dense(std::size_t n, double live, std::uint64_t seed) {
  // Mean alive = 2 x mean lifetime; log-uniform 1..M has mean (M - 1) / ln M.
  const double short_mean = 4.5, want = live / 2.0;
  double m = 16;
  while (0.6 * short_mean + 0.4 * (m - 1) / std::log(m) < want && m < 1e12) m *= 1.01;
  SplitMix64 rng(seed);
  PoolProblem p;
  p.buffers.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto start = static_cast<TimeValue>(i / 2);
    const TimeValue len = rng.below(10) < 6
                              ? 1 + static_cast<TimeValue>(rng.below(8))
                              : static_cast<TimeValue>(std::exp(rng.unit() * std::log(m)));
    const auto bytes = static_cast<Bytes>(std::exp2(4 + rng.unit() * 20));
    addBuffer(p, start, start + std::max<TimeValue>(1, len), bytes, 16);
  }
  return p;
}

// Like logUniform (sizes 64 B..1 MiB, lengths 1..1000 steps, both
// log-uniform), but with about `live` buffers alive at any step: the starts
// are uniform over fewer steps (mean length about 144.6 steps).
inline PoolProblem logUniformDense(std::size_t n, double live, std::uint64_t seed) {
  SplitMix64 rng(seed);
  PoolProblem p;
  p.buffers.reserve(n);
  const auto steps = static_cast<std::uint64_t>(
      std::max(1.0, static_cast<double>(n) * 144.6 / std::max(1.0, live)));
  for (std::size_t i = 0; i < n; ++i) {
    const auto start = static_cast<TimeValue>(rng.below(steps));
    const auto len = static_cast<TimeValue>(std::exp(rng.unit() * std::log(1000.0)));
    const auto bytes = static_cast<Bytes>(std::exp2(6 + rng.unit() * 14));
    addBuffer(p, start, start + std::max<TimeValue>(1, len), bytes, 1);
  }
  return p;
}

// n buffers resampled from a real trace: each takes the lifetime length
// and size of a buffer of `trace` drawn at random, and starts uniformly
// over the trace's span stretched by n / (its buffer count), so as many
// buffers are alive at once as in the trace on average.
inline PoolProblem resampled(const PoolProblem& trace, std::size_t n, std::uint64_t seed) {
  SplitMix64 rng(seed);
  PoolProblem p;
  p.buffers.reserve(n);
  if (trace.buffers.empty()) return p;
  TimeValue lo = trace.buffers.front().start, hi = trace.buffers.front().end;
  for (const Buffer& b : trace.buffers) {
    lo = std::min(lo, b.start);
    hi = std::max(hi, b.end);
  }
  const double stretch = static_cast<double>(n) / static_cast<double>(trace.buffers.size());
  const auto steps = static_cast<std::uint64_t>(
      std::max(1.0, static_cast<double>(hi - lo) * stretch));
  for (std::size_t i = 0; i < n; ++i) {
    const Buffer& from = trace.buffers[rng.below(trace.buffers.size())];
    const auto start = static_cast<TimeValue>(rng.below(steps));
    addBuffer(p, start, start + (from.end - from.start), from.size, 1);
  }
  return p;
}

// One decoding step of an LLM-like transformer: per layer a K and a V cache
// buffer alive the whole step (state between calls), and the block's
// activations (norm, qkv, scores, probabilities, attention, projections,
// MLP up/gate/down) each read by the next op or two; the residual stream
// lives through the block.
inline PoolProblem transformer(int layers, int seq, int hidden, int heads, int batch,
                               int bytes_per_elem = 2) {
  PoolProblem p;
  const auto H = static_cast<Bytes>(hidden), S = static_cast<Bytes>(seq),
             B = static_cast<Bytes>(batch), E = static_cast<Bytes>(bytes_per_elem),
             NH = static_cast<Bytes>(heads);
  const TimeValue ops_per_layer = 12;
  const TimeValue end = 2 + layers * ops_per_layer + 2;
  for (int l = 0; l < layers; ++l) {
    addBuffer(p, 0, end, B * S * H * E, 64);  // K cache
    addBuffer(p, 0, end, B * S * H * E, 64);  // V cache
  }
  TimeValue t = 1;
  addBuffer(p, 0, t + 1, B * H * E);  // token embedding
  for (int l = 0; l < layers; ++l) {
    const TimeValue s = t;
    addBuffer(p, s, s + ops_per_layer + 1, B * H * E);            // residual in
    addBuffer(p, s + 1, s + 3, B * H * E);                         // rmsnorm
    addBuffer(p, s + 2, s + 4, 3 * B * H * E);                     // qkv
    addBuffer(p, s + 3, s + 5, B * NH * S * 4);                    // scores (fp32)
    addBuffer(p, s + 4, s + 6, B * NH * S * 4);                    // softmax
    addBuffer(p, s + 5, s + 7, B * H * E);                         // attention out
    addBuffer(p, s + 6, s + 8, B * H * E);                         // o-proj
    addBuffer(p, s + 7, s + 9, B * H * E);                         // add + norm
    addBuffer(p, s + 8, s + 11, 4 * B * H * E);                    // mlp up
    addBuffer(p, s + 8, s + 10, 4 * B * H * E);                    // mlp gate
    addBuffer(p, s + 10, s + 12, 4 * B * H * E);                   // gated act
    addBuffer(p, s + 11, s + ops_per_layer + 2, B * H * E);        // mlp down
    t = s + ops_per_layer;
  }
  addBuffer(p, t, t + 2, B * H * E);                              // final norm
  addBuffer(p, t + 1, t + 3, B * 32000 * 4);                      // logits
  return p;
}

// U-Net-like encoder/decoder: encoder outputs live until the mirrored
// decoder level reads them (long, nested lifetimes of varied sizes).
inline PoolProblem unet(int levels, Bytes base_bytes) {
  PoolProblem p;
  TimeValue t = 0;
  std::vector<TimeValue> skip_start;
  std::vector<Bytes> skip_size;
  Bytes size = base_bytes;
  for (int l = 0; l < levels; ++l) {
    addBuffer(p, t, t + 2, size);       // conv a
    addBuffer(p, t + 1, t + 3, size);   // conv b
    skip_start.push_back(t + 2);
    skip_size.push_back(size);
    addBuffer(p, t + 3, t + 5, size / 2);  // downsample
    t += 4;
    size /= 2;
  }
  const TimeValue mid = t + 2 * levels + 4;
  for (int l = levels - 1; l >= 0; --l) {
    const TimeValue use = mid + 4 * (levels - 1 - l);
    addBuffer(p, skip_start[l], use + 1, skip_size[l]);  // skip tensor
    addBuffer(p, use - 1, use + 1, skip_size[l]);        // upsample
    addBuffer(p, use, use + 2, skip_size[l] * 2);        // concat
    addBuffer(p, use + 1, use + 3, skip_size[l]);        // conv
  }
  for (int k = 0; k < 2 * levels + 4; ++k) addBuffer(p, t + k, t + k + 2, size);  // bottleneck
  return p;
}

}  // namespace memplan::bench
