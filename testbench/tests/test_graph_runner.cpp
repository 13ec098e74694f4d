
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
  CHECK(bench.owner.comms[0] == std::make_pair(0, Approx(5).epsilon(1e-9).margin(0).scale(1) == 5 ? 5.0 : 5.0));
  CHECK(bench.owner.comms[1].first == 1);
  CHECK(bench.owner.comms[1].second == Approx(12));
  CHECK(bench.runner.ended_at() / kUs == Approx(15));
}
