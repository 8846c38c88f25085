// The algorithm registry: one line per algorithm, each defined in its own
// file in this folder (the searching ones, lists of stages, in auto.cpp).
#include <algorithm>

#include "memplan/algorithm.h"

namespace memplan {

// Factories, one per algorithm file.
// (keep in the same order as kAlgorithms below)
std::unique_ptr<Algorithm> makeNaiveAlgorithm();            // naive.cpp
std::unique_ptr<Algorithm> makeGreedyAlgorithm();           // greedy.cpp
std::unique_ptr<Algorithm> makeGreedyNoOverlapAlgorithm();  // greedy.cpp
std::unique_ptr<Algorithm> makeExecutorchSuiteAlgorithm();  // greedy.cpp

std::unique_ptr<Algorithm> makeBestFitAlgorithm();      // best_fit.cpp
std::unique_ptr<Algorithm> makeFirstFitAlgorithm();     // best_fit.cpp
std::unique_ptr<Algorithm> makeLocalSearchAlgorithm();  // auto.cpp (lists of stages)
std::unique_ptr<Algorithm> makeAutoAlgorithm();         // auto.cpp
std::unique_ptr<Algorithm> makeExactAlgorithm();        // auto.cpp
std::unique_ptr<Algorithm> makeTflmGreedyAlgorithm();   // tflm_greedy.cpp

namespace {
struct Entry {
  std::string_view name;
  std::unique_ptr<Algorithm> (*make)();
};
constexpr Entry kAlgorithms[] = {
    {"", nullptr},  // placeholder so the table is never empty
    {"best_fit", makeBestFitAlgorithm},
    {"first_fit", makeFirstFitAlgorithm},
    {"local_search", makeLocalSearchAlgorithm},
    {"auto", makeAutoAlgorithm},
    {"exact", makeExactAlgorithm},
    {"naive", makeNaiveAlgorithm},
    {"greedy", makeGreedyAlgorithm},
    {"greedy_no_overlap", makeGreedyNoOverlapAlgorithm},
    {"suite", makeExecutorchSuiteAlgorithm},
    {"tflm_greedy", makeTflmGreedyAlgorithm},
};
}  // namespace

std::unique_ptr<Algorithm> makeAlgorithm(std::string_view name) {
  for (const Entry& e : kAlgorithms)
    if (e.make && e.name == name) return e.make();
  return nullptr;
}

const AlgorithmInfo* findAlgorithmInfo(std::string_view name) {
  for (const Entry& e : kAlgorithms)
    if (e.make && e.name == name) return &e.make()->info();  // static data
  return nullptr;
}

std::vector<std::string> algorithmNames() {
  std::vector<std::string> names;
  for (const Entry& e : kAlgorithms)
    if (e.make) names.emplace_back(e.name);
  return names;
}

}  // namespace memplan
