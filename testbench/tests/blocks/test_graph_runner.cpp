// training::GraphRunner on hand-made graphs over two compute engines, its
// communications a stub that takes a fixed time (the communicator's own
// times are test_platforms'): every end time below is worked out by hand.
#include <catch2/catch.hpp>
#include <map>
#include <tuple>
#include <systemc>

#include "gpu/compute_engine.h"
#include "training/graph_runner.h"
#include "training/step_graph.h"

using namespace incsim;
using training::Graph;
using training::GraphRunner;
using Kind = Graph::Kind;

namespace {
const sc_core::sc_time kUs(1, sc_core::SC_US);

// Each communication takes 4 us per unit of its size (size 0: 4 us), and
// every end is recorded.
struct StubOwner : GraphRunner::Owner {
  sc_core::sc_event fire;
  std::function<void()> pending;
  std::map<uint32_t, double> computed_at;  // [node]: end, us
  std::vector<std::pair<int, double>> comms;  // (stream, end us)
  StubOwner() {
    sc_core::sc_spawn_options opt;
    opt.spawn_method();
    opt.dont_initialize();
    opt.set_sensitivity(&fire);
    sc_core::sc_spawn([this] { std::exchange(pending, nullptr)(); }, "stub_comm", &opt);
  }
  void launch(int, const GraphRunner::Instance& in, std::function<void()> done) override {
    REQUIRE(!pending);  // one at a time in these graphs
    pending = std::move(done);
    fire.notify((in.size + 1) * 4 * kUs);
  }
  void computed(uint32_t node, const sc_core::sc_time&) override {
    computed_at[node] = sc_core::sc_time_stamp() / kUs;
  }
  void ended(int stream, const GraphRunner::Instance&, const sc_core::sc_time&) override {
    comms.emplace_back(stream, sc_core::sc_time_stamp() / kUs);
  }
};

// Two GPUs' compute engines, the stub and the runner.
struct Bench {
  gpu::ComputeEngine gpu0{"gpu0_compute"}, gpu1{"gpu1_compute"};
  StubOwner owner;
  GraphRunner runner{"runner", {&gpu0, &gpu1}, owner};
  Graph graph;
  std::tuple<StubOwner&, GraphRunner&, Graph&> parts() { return {owner, runner, graph}; }
};

uint32_t compute(Graph& g, int rank, double us) {
  return g.add_compute(rank, us * 1e-6, static_cast<int>(gpu::ComputeEngine::Phase::Node));
}
uint32_t comm(Graph& g, Kind kind, int rank, int stream, int place, int size, int key = -1) {
  return g.add_communication(kind, rank, stream, place, 0, size, key);
}
}  // namespace

TEST_CASE("a diamond of kernels and a collective ends when worked out by hand", "[graph]") {
  Bench bench;
  auto [owner, runner, g] = bench.parts();
  const int group = g.add_stream(2);
  // a (2 us, GPU 0) -> b (3 us, GPU 0) and c (5 us, GPU 1) -> the two ranks'
  // all-reduce (4 us) -> d (1 us, GPU 0), with e (6 us) queued behind it.
  const uint32_t a = compute(g, 0, 2), b = compute(g, 0, 3), c = compute(g, 1, 5);
  const uint32_t r0 = comm(g, Kind::collective, 0, group, 0, 0), r1 = comm(g, Kind::collective, 1, group, 1, 0);
  const uint32_t d = compute(g, 0, 1), e = compute(g, 0, 6);
  g.depend(a, b);
  g.depend(a, c);
  g.depend(b, r0);
  g.depend(c, r1);
  g.depend(r0, d);
  g.queue_behind(d, e);
  runner.start(g);
  CHECK_FALSE(runner.done());
  sc_core::sc_start();
  REQUIRE(runner.done());
  // b ends at 2 + 3, c at 2 + 5: the all-reduce waits for c, ends at 7 + 4;
  // d at 12, e behind it at 18.
  CHECK(owner.computed_at[a] == Approx(2));
  CHECK(owner.computed_at[b] == Approx(5));
  CHECK(owner.computed_at[c] == Approx(7));
  REQUIRE(owner.comms.size() == 1);
  CHECK(owner.comms[0].second == Approx(11));
  CHECK(owner.computed_at[d] == Approx(12));
  CHECK(owner.computed_at[e] == Approx(18));
  CHECK(runner.ended_at() / kUs == Approx(18));
  CHECK(runner.left() == 0);
}

TEST_CASE("sends match receives by key, a link's transfers run one at a time", "[graph]") {
  Bench bench;
  auto [owner, runner, g] = bench.parts();
  const int link = g.add_stream(2);
  g.keys = 2;
  // GPU 0 computes 1 us, then sends key 0 (4 us) and key 1 (8 us); GPU 1
  // posts key 1's receive at once, key 0's after a 2 us kernel. Key 1's pair
  // matches at 1 us and ends at 9; key 0's, matched at 2, waits for the link
  // and ends at 13. The kernel after key 1's receive runs from 9 to 10.
  const uint32_t k0 = compute(g, 0, 1), k1 = compute(g, 1, 2);
  const uint32_t s0 = comm(g, Kind::send, 0, link, 0, 0, 0), s1 = comm(g, Kind::send, 0, link, 0, 1, 1);
  const uint32_t r1 = comm(g, Kind::recv, 1, link, 1, 1, 1), r0 = comm(g, Kind::recv, 1, link, 1, 0, 0);
  (void)r0;
  const uint32_t after = compute(g, 1, 1);
  g.depend(k0, s0);
  g.depend(k0, s1);
  g.depend(k1, r0);
  g.depend(r1, after);
  runner.start(g);
  CHECK(runner.unmatched() == r1);  // posted, and no send yet
  sc_core::sc_start();
  REQUIRE(runner.done());
  REQUIRE(owner.comms.size() == 2);
  CHECK(owner.comms[0].second == Approx(9));
  CHECK(owner.comms[1].second == Approx(13));
  CHECK(owner.computed_at[after] == Approx(10));
}

TEST_CASE("members issuing different collectives as the same one stop the run", "[graph]") {
  Bench bench;
  auto [owner, runner, g] = bench.parts();
  const int group = g.add_stream(2);
  comm(g, Kind::collective, 0, group, 0, 0);
  const uint32_t other = comm(g, Kind::collective, 1, group, 1, 1);
  runner.start(g);
  REQUIRE(runner.mismatch());
  CHECK(runner.mismatch()->node == other);
  CHECK(runner.mismatch()->k == 0);
}

// training::lower_step on two GPUs, kernels of 1 us forward and 2 us
// backward, the optimizer step 1 us, each communication 4 us (the stub).
namespace {
using Phase = gpu::ComputeEngine::Phase;
using Edge = training::StepKernel::Edge;
training::StepKernel kernel(Phase phase, int layer, double us) { return {phase, layer, us * 1e-6, -1}; }
}  // namespace

TEST_CASE("a data-parallel step: both GPUs' backward passes, then the bucket, then the optimizer", "[graph]") {
  Bench bench;
  training::Layout layout;
  layout.gpus = 2;
  const training::StepGraph step = training::lower_step(
      layout, 1, {{kernel(Phase::Forward, 0, 1), kernel(Phase::Backward, 0, 2)}}, {{1024}}, {0}, 1e-6);
  bench.runner.start(step.graph);
  sc_core::sc_start();
  REQUIRE(bench.runner.done());
  // Backward ends at 3 on both, the all-reduce at 7, the optimizer at 8.
  REQUIRE(bench.owner.comms.size() == 1);
  CHECK(bench.owner.comms[0].first == step.dp_stream);
  CHECK(bench.owner.comms[0].second == Approx(7));
  CHECK(bench.runner.ended_at() / kUs == Approx(8));
}

TEST_CASE("a two-stage pipeline: activations forward, gradients back, each stage's optimizer after its last kernel",
          "[graph]") {
  Bench bench;
  training::Layout layout;
  layout.gpus = layout.pp = 2;
  std::vector<std::vector<training::StepKernel>> kernels{
      {kernel(Phase::Forward, 0, 1), kernel(Phase::Backward, 0, 2)},
      {kernel(Phase::Forward, 1, 1), kernel(Phase::Backward, 1, 2)}};
  kernels[0][0].send = kernels[1][0].wait = Edge::activation;
  kernels[1][1].send = kernels[0][1].wait = Edge::gradient;
  const training::StepGraph step = training::lower_step(layout, 1, kernels, {{}, {}}, {-1, -1}, 1e-6);
  bench.runner.start(step.graph);
  sc_core::sc_start();
  REQUIRE(bench.runner.done());
  // GPU 0's forward ends at 1, its activations reach GPU 1 at 5 (link 0),
  // whose forward and backward end at 8 (its optimizer at 9); the gradients
  // reach GPU 0 at 12 (link 1), its backward ends at 14, its optimizer at 15.
  REQUIRE(bench.owner.comms.size() == 2);
  CHECK(bench.owner.comms[0].first == 0);
  CHECK(bench.owner.comms[0].second == Approx(5));
  CHECK(bench.owner.comms[1].first == 1);
  CHECK(bench.owner.comms[1].second == Approx(12));
  for (uint32_t i = 0; i < step.graph.nodes.size(); ++i)
    if (step.what[i] < 0 && step.graph.nodes[i].kind == Kind::compute)
      CHECK(bench.owner.computed_at[i] == Approx(step.graph.nodes[i].rank == 1 ? 9 : 15));
  CHECK(bench.runner.ended_at() / kUs == Approx(15));
}
