// The one pseudo-random generator of memplan: the library's randomized
// searches, the tests' random inputs and the benchmarks' synthetic lists.
//
// SplitMix64 (Steele, Lea, Flood 2014): 64 bits of state, one add and three
// xor-shift-multiplies per draw. Draws are defined here bit for bit, never
// by std distributions (whose results differ between standard libraries),
// so a seed names the same sequence on every machine.
#pragma once

#include <cstdint>

namespace memplan {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (modulo draw: bias below 2^-40 for n < 2^24); 0 for
  // n <= 1 without consuming a draw.
  std::uint64_t below(std::uint64_t n) { return n <= 1 ? 0 : next() % n; }
  // Uniform in [lo, hi]; lo when hi <= lo.
  std::int64_t range(std::int64_t lo, std::int64_t hi) {
    if (hi <= lo) return lo;
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
  }
  // Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return unit() < p; }

 private:
  std::uint64_t state_;
};

}  // namespace memplan
