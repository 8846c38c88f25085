// Models with several methods sharing state (a KV cache): ExecuTorch's
// share_mutable_buffers reproduced exactly (pool 2, offsets bumped in
// order, its errors), memplan's own placement, and verify / replay across
// methods. Mirrors ExecuTorch's test_multi_state_plan and
// test_custom_kv_cache_shared_buffers (exir/tests/test_memory_planning.py).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "memplan/memplan.h"
#include "support/test_support.h"

namespace memplan {
namespace {

// Builds models method by method.
struct Builder {
  Model m;
  Builder() { m.name = "test"; }
  GraphId method(const std::string& name) {
    Graph g;
    g.name = name;
    m.graphs.push_back(g);
    const auto id = static_cast<GraphId>(m.graphs.size() - 1);
    m.methods.push_back({name, id});
    return id;
  }
  TensorId tensor(const std::string& name, Bytes nbytes, GraphId g,
                  TensorKind kind = TensorKind::Activation, const std::string& fqn = "") {
    Tensor t;
    t.name = name;
    t.nbytes = nbytes;
    t.graph = g;
    t.kind = kind;
    t.fqn = fqn;
    m.tensors.push_back(t);
    return static_cast<TensorId>(m.tensors.size() - 1);
  }
  TensorId state(const std::string& name, Bytes nbytes, GraphId g, const std::string& fqn) {
    return tensor(name, nbytes, g, TensorKind::MutableBuffer, fqn);
  }
  // An in-place update of `base` (index_put_, copy_): same storage.
  TensorId update(const std::string& name, TensorId base, GraphId g) {
    const TensorId t = tensor(name, m.tensors[base].nbytes, g);
    m.tensors[t].alias = AliasKind::InPlace;
    m.tensors[t].alias_of = base;
    return t;
  }
  void op(GraphId g, const std::string& name, std::vector<TensorId> in, std::vector<TensorId> out) {
    Node n;
    n.name = name;
    n.op = name;
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    m.graphs[g].nodes.push_back(std::move(n));
  }
};

PlanRequest request(const std::string& algorithm, bool executorch) {
  PlanRequest r;
  r.algorithm = algorithm;
  r.options.share_mutable_buffers = executorch;
  return r;
}

// (mem_id, offset) of tensor t.
std::pair<MemId, Offset> placeOf(const Plan& plan, const Model& m, TensorId t) {
  const GraphPlan& g = plan.graphs.at(m.tensors[t].graph);
  const Allocation* a = g.find(g.specs.tensor_spec.at(t));
  return a ? std::pair(a->mem_id, a->offset) : std::pair(MemId{-1}, Offset{0});
}

void expectSafe(const Model& m, const Plan& plan) {
  const Input in = Input::fromModel(m);
  const VerifyResult v = verify(in, plan);
  EXPECT_TRUE(v.ok()) << (v.ok() ? "" : v.violations[0].message);
  const ReplayResult r = replay(in, plan);
  EXPECT_TRUE(r.ok()) << r.message;
}

// ExecuTorch's MultiEntryPointStatefulModel: forward adds its input to the
// state, set_state overwrites it, get_state only reads it.
struct MultiEntryPointStateful {
  Builder b;
  TensorId fwd_state, set_state, get_state;
  MultiEntryPointStateful() {
    const GraphId fwd = b.method("forward");
    const TensorId x = b.tensor("forward.x", 4, fwd);
    fwd_state = b.state("forward.state", 4, fwd, "state");
    const TensorId sum = b.tensor("forward.sum", 4, fwd);
    b.m.graphs[fwd].inputs = {x};
    b.op(fwd, "add", {x, fwd_state}, {sum});
    b.op(fwd, "add_", {fwd_state, x}, {b.update("forward.state_updated", fwd_state, fwd)});
    b.m.graphs[fwd].outputs = {sum};

    const GraphId set = b.method("set_state");
    const TensorId v = b.tensor("set_state.value", 4, set);
    set_state = b.state("set_state.state", 4, set, "state");
    b.m.graphs[set].inputs = {v};
    b.op(set, "copy_", {set_state, v}, {b.update("set_state.state_updated", set_state, set)});

    const GraphId get = b.method("get_state");
    get_state = b.tensor("get_state.state", 4, get, TensorKind::Constant, "state");
    const TensorId out = b.tensor("get_state.out", 4, get);
    b.op(get, "clone", {get_state}, {out});
    b.m.graphs[get].outputs = {out};
  }
};

TEST(MultiMethod, MirrorsExecutorchMultiStatePlan) {
  MultiEntryPointStateful t;
  const Plan plan = planModel(t.b.m, request("greedy", true));
  ASSERT_EQ(plan.methods.size(), 3u);
  // Every method: [0, activations, 16]; the state at mem_id 2, offset 0 in
  // each of the three (ExecuTorch counts 3 such values).
  int at_state = 0;
  for (const MethodPlan& m : plan.methods) {
    const GraphPlan& g = plan.graphs[m.graph];
    ASSERT_EQ(g.bufsizes.size(), 3u) << m.name;
    EXPECT_EQ(g.bufsizes[2], 16u) << m.name;
    for (const Allocation& a : g.allocations)
      if (a.mem_id == 2) {
        ++at_state;
        EXPECT_EQ(a.offset, 0u);
        EXPECT_EQ(g.specs.specs[a.spec].fqn, "state");
      }
  }
  EXPECT_EQ(at_state, 3);
  EXPECT_EQ(plan.graphs[0].bufsizes, (std::vector<Bytes>{0, 32, 16}));  // x, sum
  EXPECT_EQ(plan.graphs[1].bufsizes, (std::vector<Bytes>{0, 16, 16}));  // value
  EXPECT_EQ(plan.graphs[2].bufsizes, (std::vector<Bytes>{0, 16, 16}));  // out
  EXPECT_EQ(sharedState(plan), (std::vector<StateSlot>{{"state", 2, 0, 16}}));
  expectSafe(t.b.m, plan);
}

// ExecuTorch's KVCacheModel: forward updates k_cache and v_cache, reset
// overwrites both; [1, 8, 2, 4] float caches of 256 bytes.
struct KvCacheModel {
  Builder b;
  TensorId fwd_k, fwd_v, reset_k, reset_v;
  KvCacheModel() {
    const GraphId fwd = b.method("forward");
    const TensorId pos = b.tensor("forward.input_pos", 8, fwd);
    const TensorId kv = b.tensor("forward.k_val", 32, fwd), vv = b.tensor("forward.v_val", 32, fwd);
    fwd_k = b.state("forward.k_cache", 256, fwd, "kv_cache.k_cache");
    fwd_v = b.state("forward.v_cache", 256, fwd, "kv_cache.v_cache");
    b.m.graphs[fwd].inputs = {pos, kv, vv};
    const TensorId k1 = b.update("forward.k_out", fwd_k, fwd), v1 = b.update("forward.v_out", fwd_v, fwd);
    b.op(fwd, "update_k", {fwd_k, pos, kv}, {k1});
    b.op(fwd, "update_v", {fwd_v, pos, vv}, {v1});
    const TensorId sum = b.tensor("forward.kv_sum", 256, fwd), out = b.tensor("forward.out", 64, fwd);
    b.op(fwd, "add", {k1, v1}, {sum});
    b.op(fwd, "sum", {sum}, {out});
    b.m.graphs[fwd].outputs = {out};

    const GraphId reset = b.method("reset");
    const TensorId kz = b.tensor("reset.k_zeros", 256, reset), vz = b.tensor("reset.v_zeros", 256, reset);
    reset_k = b.state("reset.k_cache", 256, reset, "kv_cache.k_cache");
    reset_v = b.state("reset.v_cache", 256, reset, "kv_cache.v_cache");
    b.m.graphs[reset].inputs = {kz, vz};
    b.op(reset, "copy_k", {reset_k, kz}, {b.update("reset.k_cache_updated", reset_k, reset)});
    b.op(reset, "copy_v", {reset_v, vz}, {b.update("reset.v_cache_updated", reset_v, reset)});
  }
};

TEST(MultiMethod, MirrorsExecutorchCustomKvCacheSharedBuffers) {
  KvCacheModel t;
  const Plan plan = planModel(t.b.m, request("greedy", true));
  for (const MethodPlan& m : plan.methods) {
    ASSERT_EQ(plan.graphs[m.graph].bufsizes.size(), 3u) << m.name;
    EXPECT_EQ(plan.graphs[m.graph].bufsizes[2], 512u) << m.name;  // 2 * 256
  }
  for (TensorId k : {t.fwd_k, t.reset_k}) EXPECT_EQ(placeOf(plan, t.b.m, k), std::pair(2, Offset{0}));
  for (TensorId v : {t.fwd_v, t.reset_v}) EXPECT_EQ(placeOf(plan, t.b.m, v), std::pair(2, Offset{256}));
  expectSafe(t.b.m, plan);
  // memplan's own placement gives the same state layout here.
  const Plan own = planModel(t.b.m, request("auto", false));
  EXPECT_EQ(sharedState(own), sharedState(plan));
  expectSafe(t.b.m, own);
}

TEST(MultiMethod, StateOrderIsWhereAMethodFirstMutatesIt) {
  // Method a reads "late" (a constant there) before it mutates "early";
  // method b mutates "late". ExecuTorch orders by first mutation: early, late.
  Builder b;
  const GraphId ga = b.method("a");
  const TensorId read_late = b.tensor("a.late", 32, ga, TensorKind::Constant, "late");
  const TensorId early = b.state("a.early", 16, ga, "early");
  const TensorId out = b.tensor("a.out", 32, ga);
  b.op(ga, "use", {read_late}, {out});
  b.op(ga, "bump", {early}, {b.update("a.early_updated", early, ga)});
  b.m.graphs[ga].outputs = {out};
  const GraphId gb = b.method("b");
  const TensorId late = b.state("b.late", 32, gb, "late");
  b.op(gb, "bump", {late}, {b.update("b.late_updated", late, gb)});
  // Not state: a weight with an fqn nobody mutates.
  const TensorId weight = b.tensor("b.weight", 64, gb, TensorKind::Constant, "weight");
  const TensorId y = b.tensor("b.y", 64, gb);
  b.op(gb, "scale", {weight}, {y});
  b.m.graphs[gb].outputs = {y};
  for (bool executorch : {true, false}) {
    const Plan plan = planModel(b.m, request("greedy", executorch));
    EXPECT_EQ(sharedState(plan),
              (std::vector<StateSlot>{{"early", 2, 0, 16}, {"late", 2, 16, 32}}));
    EXPECT_EQ(placeOf(plan, b.m, read_late), std::pair(2, Offset{16}));
    EXPECT_EQ(placeOf(plan, b.m, weight).first, -1);  // a constant stays unplanned
    expectSafe(b.m, plan);
  }
}

std::string errorOf(const Model& m, const PlanRequest& r) {
  try {
    planModel(m, r);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MultiMethod, ExecutorchRefusalsNameMethodAndTensor) {
  {
    KvCacheModel t;  // another tensor of reset in pool 3
    t.b.m.tensors[t.b.m.graphs[1].inputs[0]].mem_id = 3;
    EXPECT_EQ(errorOf(t.b.m, request("greedy", true)),
              "PlanRequest.options.share_mutable_buffers: method 'reset': 'reset.k_zeros' is in "
              "pool 3; ExecuTorch shares mutable buffers only when every other tensor is in pool 1 "
              "(\"Cannot share mutable buffers if all other tensors are not on the default mem_id of "
              "1\")");
    // memplan's own placement takes it: the state pool comes after pool 3.
    const Plan own = planModel(t.b.m, request("auto", false));
    EXPECT_EQ(placeOf(own, t.b.m, t.fwd_k).first, 4);
    EXPECT_EQ(own.graphs[0].bufsizes, (std::vector<Bytes>{0, 320, 0, 0, 512}));
    EXPECT_EQ(own.graphs[1].bufsizes, (std::vector<Bytes>{0, 256, 0, 256, 512}));
    expectSafe(t.b.m, own);
  }
  {
    KvCacheModel t;  // state preset to pool 1
    t.b.m.tensors[t.fwd_v].mem_id = 1;
    EXPECT_EQ(errorOf(t.b.m, request("greedy", true)),
              "PlanRequest.options.share_mutable_buffers: method 'forward': state "
              "'kv_cache.v_cache' (tensor 'forward.v_cache') has a preset pool (mem_id 1); "
              "ExecuTorch refuses to share it (\"Cannot share mutable buffers if they already have "
              "a mem_id or mem_offset assigned\")");
  }
  {
    // A body's preset pool 2 widens forward's pools to [0, x, y]: every
    // tensor of forward is in pool 1, but the pools are not the default.
    KvCacheModel t;
    Model& m = t.b.m;
    Graph body;
    body.name = "body";
    body.parent = 0;
    body.parent_node = 3;
    m.graphs.push_back(body);
    const auto bg = static_cast<GraphId>(m.graphs.size() - 1);
    m.graphs[0].nodes[3].kind = NodeKind::Call;
    m.graphs[0].nodes[3].subgraphs = {bg};
    const TensorId scratch = t.b.tensor("body.scratch", 64, bg);
    m.tensors[scratch].mem_id = 2;
    t.b.op(bg, "fill", {}, {scratch});
    m.graphs[bg].outputs = {scratch};
    EXPECT_EQ(errorOf(m, request("greedy", true)),
              "PlanRequest.options.share_mutable_buffers: method 'forward' has pools [0, 320, 64]; "
              "ExecuTorch shares mutable state only with the default pools [0, activations] "
              "(\"Cannot share mutable state if not using default memory ids\")");
  }
  {
    KvCacheModel t;
    PlanRequest r = request("greedy", true);
    r.options.alloc_mutable_buffers = false;
    EXPECT_EQ(errorOf(t.b.m, r),
              "PlanRequest.options.share_mutable_buffers: cannot leave mutable buffers unplanned "
              "(options.alloc_mutable_buffers false; ExecuTorch: share_mutable_buffers is only "
              "meaningful when alloc_mutable_buffers is True)");
  }
}

TEST(MultiMethod, SingleMethodModelsOnlyShareWhenAsked) {
  Builder b;
  b.m.graphs.push_back({});  // no methods: graphs[0] is the model
  const TensorId x = b.tensor("x", 64, 0), cache = b.state("cache", 128, 0, "");
  const TensorId y = b.tensor("y", 64, 0);
  b.m.graphs[0].inputs = {x};
  b.op(0, "step", {x, cache}, {y});
  b.m.graphs[0].outputs = {y};
  const Plan plain = planModel(b.m, request("greedy", false));
  EXPECT_EQ(plain.main().bufsizes, (std::vector<Bytes>{0, 256}));  // the cache with the rest
  EXPECT_TRUE(sharedState(plain).empty());
  const Plan shared = planModel(b.m, request("greedy", true));
  EXPECT_EQ(shared.main().bufsizes, (std::vector<Bytes>{0, 128, 128}));
  EXPECT_EQ(sharedState(shared), (std::vector<StateSlot>{{"cache", 2, 0, 128}}));  // by name
  expectSafe(b.m, shared);
}

// The example two-method decoder (examples/graphs/decoder_kv.json): a
// prefill of 16 tokens and a one-token decode sharing an 8 KiB KV cache.
TEST(MultiMethod, ExampleDecoderPlansExactlyAndBetter) {
  const Input in = readInput(test::sourceDir() / "examples/graphs/decoder_kv.json");
  ASSERT_EQ(in.model()->methods.size(), 2u);
  const Plan executorch = plan(in, request("greedy", true));
  const Plan own = plan(in, {});
  const std::vector<StateSlot> state = {{"layers.0.attention.kv_cache.k_cache", 2, 0, 4096},
                                        {"layers.0.attention.kv_cache.v_cache", 2, 4096, 4096}};
  EXPECT_EQ(sharedState(executorch), state);
  EXPECT_EQ(sharedState(own), state);
  // ExecuTorch's greedy (memplan's bit-exact copy, held to ExecuTorch's own
  // plans by the conformance tests): at the live-bytes peak in prefill,
  // 512 bytes above it in decode (the peaks are recomputed below).
  EXPECT_EQ(executorch.graphs[0].bufsizes, (std::vector<Bytes>{0, 26624, 8192}));  // prefill
  EXPECT_EQ(executorch.graphs[1].bufsizes, (std::vector<Bytes>{0, 2176, 8192}));   // decode
  EXPECT_EQ(own.graphs[0].bufsizes, (std::vector<Bytes>{0, 26624, 8192}));
  EXPECT_EQ(own.graphs[1].bufsizes, (std::vector<Bytes>{0, 1664, 8192}));
  // Where memplan's numbers come from: pool 1 (activations) is the most
  // bytes live at one step, recomputed here from the plan's own lifetimes
  // and allocation sizes (no plan can be smaller); pool 2 holds the two
  // 4096-byte caches.
  for (const GraphPlan* g : {&own.graphs[0], &own.graphs[1]}) {
    Bytes peak = 0;
    for (TimeValue t = 0; t < g->specs.steps; ++t) {
      Bytes live = 0;
      for (const Allocation& a : g->allocations) {
        const Spec& s = g->specs.specs[a.spec];
        if (a.mem_id == 1 && s.first <= t && t <= s.last) live += a.size;
      }
      peak = std::max(peak, live);
    }
    EXPECT_EQ(g->bufsizes.at(1), peak) << g->graph;
    EXPECT_EQ(g->bufsizes.at(2), state[0].size + state[1].size) << g->graph;
    for (const PoolInfo& p : g->pools) EXPECT_TRUE(p.proven_optimal) << p.mem_id;
  }
  for (const Plan* p : {&executorch, &own}) {
    EXPECT_TRUE(verify(in, *p).ok());
    EXPECT_TRUE(replay(in, *p).ok()) << replay(in, *p).message;
    // The plan file round-trips, methods and state included.
    const std::string text = writePlan(*p, in);
    const Plan back = readPlan(text, "p.json", in);
    EXPECT_EQ(back.methods, p->methods);
    EXPECT_EQ(sharedState(back), sharedState(*p));
    EXPECT_EQ(back.graphs[1].bufsizes, p->graphs[1].bufsizes);
    EXPECT_TRUE(verify(in, back).ok());
  }
}

TEST(MultiMethod, MovedStateFailsVerifyAndReplay) {
  KvCacheModel t;
  const Input in = Input::fromModel(t.b.m);
  Plan p = plan(in, request("greedy", true));
  // reset's v_cache somewhere else than forward's: 256 bytes further.
  GraphPlan& reset = p.graphs[1];
  for (Allocation& a : reset.allocations)
    if (a.spec == reset.specs.tensor_spec[t.reset_v]) a.offset = 512;
  reset.bufsizes[2] = 768;
  const VerifyResult v = verify(in, p);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.violations[0].message,
            "state 'kv_cache.v_cache' is at pool 2 offset 256 (256 bytes) in method 'forward' but "
            "at pool 2 offset 512 (256 bytes) in method 'reset'");
  const ReplayResult r = replay(in, p);
  EXPECT_EQ(r.issue, ReplayIssue::Clobber);
  EXPECT_EQ(r.message,
            "replay: tensor 'reset.v_cache' (graph 1) at mem_id 2 offset 512 holds bytes nothing "
            "wrote, found at graph start (step 0)");

  // An activation of one method over another method's state.
  Plan q = plan(in, request("greedy", true));
  GraphPlan& fwd = q.graphs[0];
  const SpecId out = fwd.specs.tensor_spec[t.b.m.graphs[0].outputs[0]];
  for (Allocation& a : fwd.allocations)
    if (a.spec == out) a.mem_id = 2, a.offset = 0;
  const VerifyResult w = verify(in, q);
  ASSERT_EQ(w.violations.size(), 2u);
  EXPECT_EQ(w.violations[0].message,
            "pool 2: 'forward.k_cache' (bytes [0, 256), steps [0, 7]) and 'forward.out' (bytes [0, "
            "64), steps [6, 7]) are alive at the same time and share bytes");
  // Alive together or not, no method may touch the state's bytes.
  EXPECT_EQ(w.violations[1].message,
            "'forward.out' (method 'forward') at bytes [0, 64) of pool 2 overlaps shared state "
            "[0, 256), which every method keeps");
  EXPECT_FALSE(replay(in, q).ok());
}

TEST(MultiMethod, PlanFileSectionsMustAgreeWithTheGraphs) {
  KvCacheModel t;
  const Input in = Input::fromModel(t.b.m);
  const std::string text = writePlan(plan(in, request("greedy", true)), in);
  const auto json = nlohmann::json::parse(text);
  EXPECT_EQ(json["methods"][1]["name"], "reset");
  EXPECT_EQ(json["shared_state"]["mode"], "executorch");
  EXPECT_EQ(json["shared_state"]["buffers"][1]["mem_offset"], 256);
  const auto errorOfText = [&](const std::string& edited) {
    try {
      readPlan(edited, "p.json", in);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(errorOfText(text), "(no error)");
  std::string moved = text;
  moved.replace(moved.find("\"mem_offset\":256,\"size\":256}"), 16, "\"mem_offset\":0");
  EXPECT_EQ(errorOfText(moved),
            "p.json: shared_state: differs from the state allocations of the methods' graphs");
  std::string renamed = text;
  renamed.replace(renamed.find("{\"name\":\"reset\""), 15, "{\"name\":\"clear\"");
  EXPECT_EQ(errorOfText(renamed),
            "p.json: methods: differs from the input's methods and their graphs' bufsizes");
}


TEST(MultiMethod, PerDeviceStateGetsAPoolPerDevice) {
  KvCacheModel t;
  for (TensorId s : {t.fwd_v, t.reset_v}) t.b.m.tensors[s].device = {"cuda", 0};
  // The in-place updates alias their base: same device.
  for (Tensor& x : t.b.m.tensors)
    if (x.alias == AliasKind::InPlace && t.b.m.tensors[x.alias_of].device.type == "cuda") x.device = {"cuda", 0};
  PlanRequest r = request("auto", false);
  r.options.per_device = true;
  const Plan p = planModel(t.b.m, r);
  // Activations in pool 1 (CPU); state: CPU pool 2 (k), CUDA pool 3 (v).
  EXPECT_EQ(p.graphs[0].bufsizes, (std::vector<Bytes>{0, 320, 256, 256}));
  EXPECT_EQ(p.graphs[0].pool_devices[3], (Device{"cuda", 0}));
  EXPECT_EQ(sharedState(p), (std::vector<StateSlot>{{"kv_cache.k_cache", 2, 0, 256},
                                                    {"kv_cache.v_cache", 3, 0, 256}}));
  expectSafe(t.b.m, p);
}

TEST(MultiMethod, ReportShowsEachMethodAndTheTotal) {
  const std::string model = (test::sourceDir() / "examples/graphs/decoder_kv.json").string();
  const test::CliResult own = test::runCli("plan --bytes " + model);
  EXPECT_EQ(own.exit_code, 0) << own.err;
  EXPECT_NE(own.out.find("methods (state shared by fqn, planned once in its own pool):\n"
                         "  method   pools                    activations             state\n"
                         "  prefill  [0, 26624, 8192]  26.0 KiB (26624 B)  8.0 KiB (8192 B)\n"
                         "  decode   [0, 1664, 8192]     1.6 KiB (1664 B)  8.0 KiB (8192 B)\n"
                         "  total: 34.0 KiB (34816 B) with the methods sharing arenas; 35.6 KiB (36480 B) "
                         "with activations per method\n"),
            std::string::npos)
      << own.out;
  const test::CliResult et = test::runCli("plan -a greedy --share-mutable-buffers --bytes " + model);
  EXPECT_EQ(et.exit_code, 0) << et.err;
  EXPECT_NE(et.out.find("  decode   [0, 2176, 8192]     2.1 KiB (2176 B)  8.0 KiB (8192 B)\n"),
            std::string::npos)
      << et.out;
  // ExecuTorch's refusals are usage errors named by flag.
  const std::string dir = test::tempDir("mm_cli").string();
  const test::CliResult refused =
      test::runCli("plan -q --share-mutable-buffers --no-plan-mutable-buffers " + model);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.err.rfind("memplan: --share-mutable-buffers: cannot leave mutable buffers unplanned", 0), 0u)
      << refused.err;
  // Verify and replay take the recorded mode from the plan file.
  const std::string plan_path = dir + "/p.json";
  ASSERT_EQ(test::runCli("plan -q -a greedy --share-mutable-buffers " + model + " -o " + plan_path).exit_code, 0);
  EXPECT_EQ(test::runCli("verify " + model + " " + plan_path).out, "OK: 61 allocations verified\n");
  EXPECT_EQ(test::runCli("replay " + model + " " + plan_path).exit_code, 0);
}

// Pinned tensors that overlap on purpose (TFLite Micro offline plans may)
// in every method: each method is planned around its own pins, the state
// is placed once, and memplan's own verify accepts the plan.
TEST(MultiMethod, OverlappingPinsPlanAndVerifyInEveryMethod) {
  const std::filesystem::path dir = test::tempDir("multimethod-pins");
  const std::filesystem::path model = dir / "two.json", out = dir / "p.json";
  std::ofstream(model) << R"({"format": "memplan-graph", "version": 2, "name": "two",
    "methods": [{"name": "a", "graph": "a"}, {"name": "b", "graph": "b"}],
    "tensors": [
      {"name": "a.x", "nbytes": 32, "mem_id": 1, "offset": 0},
      {"name": "a.y", "nbytes": 32, "mem_id": 1, "offset": 0},
      {"name": "a.z", "nbytes": 32},
      {"name": "a.cache", "nbytes": 16, "kind": "mutable_buffer", "fqn": "cache"},
      {"name": "b.p", "nbytes": 64, "mem_id": 1, "offset": 0, "graph": "b"},
      {"name": "b.q", "nbytes": 64, "mem_id": 1, "offset": 32, "graph": "b"},
      {"name": "b.r", "nbytes": 16, "graph": "b"},
      {"name": "b.cache", "nbytes": 16, "kind": "mutable_buffer", "fqn": "cache", "graph": "b"}],
    "graphs": [
      {"name": "a", "inputs": ["a.x", "a.y"], "outputs": ["a.z"],
       "nodes": [{"op": "add", "inputs": ["a.x", "a.y", "a.cache"], "outputs": ["a.z"]}]},
      {"name": "b", "inputs": ["b.p", "b.q"], "outputs": ["b.r"],
       "nodes": [{"op": "add", "inputs": ["b.p", "b.q", "b.cache"], "outputs": ["b.r"]}]}]})";
  const test::CliResult refused = test::runCli("plan -q " + model.string());
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("share bytes while both alive"), std::string::npos) << refused.err;

  const test::CliResult planned =
      test::runCli("plan -q --allow-pinned-overlap " + model.string() + " -o " + out.string());
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const test::CliResult verified = test::runCli("verify " + model.string() + " " + out.string());
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  EXPECT_EQ(verified.out, "OK: 8 allocations verified\n");

  const Input in = readInput(model);
  PlanRequest allow;
  allow.options.allow_pinned_overlap = true;
  const Plan p = plan(in, allow);
  ASSERT_EQ(p.methods.size(), 2u);
  const Model& m = *in.model();
  const auto place = [&](const std::string& name) {
    for (TensorId t = 0; t < static_cast<TensorId>(m.tensors.size()); ++t)
      if (m.tensors[t].name == name) return placeOf(p, m, t);
    return std::pair(MemId{-1}, Offset{0});
  };
  // Pins kept; the free tensors around the bytes the pins hold.
  EXPECT_EQ(place("a.x"), std::pair(MemId{1}, Offset{0}));
  EXPECT_EQ(place("a.y"), std::pair(MemId{1}, Offset{0}));
  EXPECT_EQ(place("a.z"), std::pair(MemId{1}, Offset{32}));
  EXPECT_EQ(place("b.p"), std::pair(MemId{1}, Offset{0}));
  EXPECT_EQ(place("b.q"), std::pair(MemId{1}, Offset{32}));
  EXPECT_EQ(place("b.r"), std::pair(MemId{1}, Offset{96}));
  // The state once, in the pool after every method's own.
  EXPECT_EQ(sharedState(p), (std::vector<StateSlot>{{"cache", 2, 0, 16}}));
  EXPECT_EQ(p.graphs[0].bufsizes, (std::vector<Bytes>{0, 64, 16}));
  EXPECT_EQ(p.graphs[1].bufsizes, (std::vector<Bytes>{0, 112, 16}));
  const VerifyResult v = verify(in, p);
  EXPECT_TRUE(v.ok()) << (v.ok() ? "" : v.violations[0].message);
}

}  // namespace
}  // namespace memplan
