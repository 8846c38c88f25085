// A small convolutional network run twice: once with every tensor in its
// own heap allocation, once inside the arena memplan planned for it (the
// header `memplan plan tiny_cnn.json --emit-c tiny_cnn_plan.h --c-prefix
// tiny_cnn` writes). The outputs must be bit-identical; the arena run is
// also made in memplan::Arena's checked mode, which poisons every tensor
// when its lifetime ends and reports any read of foreign bytes.
//
//   image [1x8x8x1] -> conv 3x3 (4) -> relu -> conv 3x3 (4) -> add (residual)
//   -> relu -> reshape [1x256] -> matmul + bias [1x10] -> logits
//
// Weights are fixed and deterministic (an integer generator, exact in
// float), so every run computes the same bits. Exit 0 when the runs agree.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <vector>

#include "memplan/runtime.h"
#include "tiny_cnn_plan.h"

namespace {

constexpr int kH = 8, kW = 8, kC = 4, kClasses = 10;

// Deterministic values in [-1, 1) with 1/64 steps: exact in float.
struct Weights {
  float conv1_w[kC * 3 * 3 * 1], conv1_b[kC];
  float conv2_w[kC * 3 * 3 * kC], conv2_b[kC];
  float fc_w[kH * kW * kC * kClasses], fc_b[kClasses];
  float image[kH * kW];
  Weights() {
    std::uint32_t s = 12345;
    const auto next = [&s] {
      s = s * 1103515245u + 12345u;
      return static_cast<float>(static_cast<int>((s >> 16) % 128) - 64) / 64.0f;
    };
    for (float& v : conv1_w) v = next();
    for (float& v : conv1_b) v = next();
    for (float& v : conv2_w) v = next();
    for (float& v : conv2_b) v = next();
    for (float& v : fc_w) v = next();
    for (float& v : fc_b) v = next();
    for (float& v : image) v = next();
  }
};

// NHWC, "same" zero padding; weights [cout][3][3][cin].
void conv3x3(const float* in, int cin, const float* w, const float* b, int cout, float* out) {
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x)
      for (int o = 0; o < cout; ++o) {
        float acc = b[o];
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx) {
            const int yy = y + dy, xx = x + dx;
            if (yy < 0 || yy >= kH || xx < 0 || xx >= kW) continue;
            for (int i = 0; i < cin; ++i)
              acc += in[(yy * kW + xx) * cin + i] * w[((o * 3 + dy + 1) * 3 + dx + 1) * cin + i];
          }
        out[(y * kW + x) * cout + o] = acc;
      }
}
void relu(const float* in, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}
void add(const float* a, const float* b, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
// out[1 x m] = in[1 x k] * w[k x m] + bias
void matmulAdd(const float* in, int k, const float* w, const float* bias, int m, float* out) {
  for (int j = 0; j < m; ++j) {
    float acc = bias[j];
    for (int i = 0; i < k; ++i) acc += in[i] * w[i * m + j];
    out[j] = acc;
  }
}

// Where each tensor lives: a heap allocation of its own, or the arena.
struct Tensors {
  virtual ~Tensors() = default;
  virtual float* at(int id) = 0;
  // Checked mode hooks; no-ops for the heap run.
  virtual bool wrote(int) { return true; }
  virtual bool read(int) { return true; }
  virtual bool endStep(std::int32_t) { return true; }
};

struct Heap final : Tensors {
  std::vector<std::unique_ptr<float[]>> storage;
  Heap() {
    for (std::size_t t = 0; t < TINY_CNN_NUM_TENSORS; ++t)
      storage.emplace_back(new float[tiny_cnn_tensor_size[t] / sizeof(float)]);
  }
  float* at(int id) override { return storage[static_cast<std::size_t>(id)].get(); }
};

struct Planned final : Tensors {
  memplan::Arena<tiny_cnn_word_t>& arena;
  bool checked;
  Planned(memplan::Arena<tiny_cnn_word_t>& a, bool c) : arena(a), checked(c) {}
  float* at(int id) override { return arena.as<float>(static_cast<std::size_t>(id)); }
  bool wrote(int id) override { return !checked || arena.wrote(static_cast<std::size_t>(id)); }
  bool read(int id) override { return !checked || arena.read(static_cast<std::size_t>(id)); }
  bool endStep(std::int32_t s) override { return !checked || arena.endStep(s); }
};

// Runs the network; false when a checked read fails. Node n runs at step
// TINY_CNN_NODE_STEP(n); the view `flat` is relu2's storage.
bool run(const Weights& w, Tensors& t, float logits[kClasses]) {
  std::memcpy(t.at(TINY_CNN_T_IMAGE), w.image, sizeof w.image);
  bool ok = t.wrote(TINY_CNN_T_IMAGE) && t.endStep(0);
  const int n = kH * kW * kC;
  int node = 0;
  const auto step = [&](std::initializer_list<int> inputs, int output, auto kernel) {
    for (int i : inputs) ok = ok && t.read(i);
    kernel();
    ok = ok && t.wrote(output);
    for (int i : inputs) ok = ok && t.read(i);  // still intact after the write
    ok = ok && t.endStep(TINY_CNN_NODE_STEP(node++));
  };
  step({TINY_CNN_T_IMAGE}, TINY_CNN_T_CONV1,
       [&] { conv3x3(t.at(TINY_CNN_T_IMAGE), 1, w.conv1_w, w.conv1_b, kC, t.at(TINY_CNN_T_CONV1)); });
  step({TINY_CNN_T_CONV1}, TINY_CNN_T_RELU1, [&] { relu(t.at(TINY_CNN_T_CONV1), n, t.at(TINY_CNN_T_RELU1)); });
  step({TINY_CNN_T_RELU1}, TINY_CNN_T_CONV2,
       [&] { conv3x3(t.at(TINY_CNN_T_RELU1), kC, w.conv2_w, w.conv2_b, kC, t.at(TINY_CNN_T_CONV2)); });
  step({TINY_CNN_T_CONV2, TINY_CNN_T_RELU1}, TINY_CNN_T_RESIDUAL,
       [&] { add(t.at(TINY_CNN_T_CONV2), t.at(TINY_CNN_T_RELU1), n, t.at(TINY_CNN_T_RESIDUAL)); });
  step({TINY_CNN_T_RESIDUAL}, TINY_CNN_T_RELU2, [&] { relu(t.at(TINY_CNN_T_RESIDUAL), n, t.at(TINY_CNN_T_RELU2)); });
  // Reshape is a view: nothing moves, the same bytes are read as [1x256].
  step({TINY_CNN_T_RELU2}, TINY_CNN_T_FLAT, [] {});
  step({TINY_CNN_T_FLAT}, TINY_CNN_T_LOGITS,
       [&] { matmulAdd(t.at(TINY_CNN_T_FLAT), n, w.fc_w, w.fc_b, kClasses, t.at(TINY_CNN_T_LOGITS)); });
  ok = ok && t.read(TINY_CNN_T_LOGITS);
  std::memcpy(logits, t.at(TINY_CNN_T_LOGITS), sizeof(float) * kClasses);
  return ok && t.endStep(TINY_CNN_OUTPUT_STEP);
}

alignas(TINY_CNN_ALIGNMENT) unsigned char pool1[TINY_CNN_POOL_1_SIZE];

}  // namespace

int main() {
  static const Weights w;
  float heap_logits[kClasses], arena_logits[kClasses], checked_logits[kClasses];

  Heap heap;
  run(w, heap, heap_logits);
  std::size_t heap_bytes = 0;
  for (std::size_t t = 0; t < TINY_CNN_NUM_TENSORS; ++t) heap_bytes += tiny_cnn_tensor_size[t];

  const memplan::Pool pools[] = {{pool1, sizeof pool1}};
  memplan::Arena arena(tiny_cnn_plan, pools, 1);
  if (!arena.ok()) {
    char why[160];
    arena.describe(why, sizeof why);
    std::printf("arena: %s\n", why);
    return 1;
  }
  Planned planned(arena, false);
  run(w, planned, arena_logits);

  static std::uint32_t shadow[TINY_CNN_SHADOW_WORDS];
  memplan::Arena checked_arena(tiny_cnn_plan, pools, 1, shadow, TINY_CNN_SHADOW_WORDS);
  Planned checked(checked_arena, true);
  const bool clean = run(w, checked, checked_logits);
  if (!clean) {
    char why[160];
    checked_arena.describe(why, sizeof why);
    std::printf("checked run: %s\n", why);
  }

  std::printf("logits:");
  for (float v : arena_logits) std::printf(" %.6f", static_cast<double>(v));
  std::printf("\nheap: %zu bytes in %u allocations; arena: %u bytes (pool 1)\n", heap_bytes,
              static_cast<unsigned>(TINY_CNN_NUM_TENSORS), static_cast<unsigned>(TINY_CNN_POOL_1_SIZE));
  const bool same = std::memcmp(heap_logits, arena_logits, sizeof heap_logits) == 0 &&
                    std::memcmp(heap_logits, checked_logits, sizeof heap_logits) == 0;
  std::printf("%s\n", same && clean ? "bit-identical; checked run clean" : "MISMATCH");
  return same && clean ? 0 : 1;
}
