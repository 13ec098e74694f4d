// Training iterations (workloads/train.h): the overlap arithmetic on a toy
// model whose layer times are given, #wrong on the gradients, push against
// the ring for a transformer on DGX-2, the timeline file, and bad input.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli_run.h"
#include "experiment.h"
#include "run_checked.h"
#include "train.h"
#include "chakra_nodes.h"
#include "training/chakra_trace.h"

using namespace incsim;

namespace {
const std::string kToy = TEST_DATA "/toy4_layers.yaml";

std::vector<tb::Row> train(const std::string& model, const std::string& platform, int gpus,
                           const std::string& algorithm, const std::string& baseline, const tb::KeyValues& params,
                           const std::string& timeline = "", uint32_t tp = 1, uint32_t pp = 1) {
  tb::Options o = tb::run_options(platform, "allreduce", algorithm, "", params);
  o.workload = "train";
  o.model = model;
  o.baseline = baseline;
  o.timeline = timeline;
  o.tp = tp;
  o.pp = pp;
  if (gpus) o.gpus = gpus;
  tb::Experiment e(o);
  std::ostringstream table;
  std::vector<tb::Row> rows;
  REQUIRE_NOTHROW(rows = e.run(&table));
  INFO(table.str());
  for (const auto& r : rows) CHECK(r.wrong() == 0);
  CHECK(e.machine().pool().in_use() == 0);
  return rows;
}

// Bytes the adapters' PCIe links carried, both ways, in a cluster training
// run of `tp_algorithm` in the nodes' tensor-parallel groups and the ring
// across them (its own process: each builds a machine).
nlohmann::json tp_cluster_row(const std::string& tp_algorithm, const std::string& dp_algorithm, const std::string& json,
                              const std::string& extra = "") {
  const cli::Result r = cli::incsim("--platform cluster --nodes 2 --model transformer --tp 8 --batch 2 --quiet "
                                    "-c transformer.layers=1 -c transformer.hidden=256 -c transformer.heads=4 "
                                    "-c transformer.sequence=64 -c transformer.vocabulary=1000 -c train.dp_algorithm=" +
                                    dp_algorithm + " --algorithm " + tp_algorithm + " --json " + json + " " + extra);
  INFO(r.err);
  REQUIRE(r.code == (extra.empty() ? 0 : 1));  // 1: elements differ
  return nlohmann::json::parse(cli::slurp(json))["rows"][0];
}
uint64_t adapter_bytes(const std::string& tp_algorithm, const std::string& json) {
  const auto row = tp_cluster_row(tp_algorithm, "ring", json);
  CHECK(row["wrong"] == 0);
  CHECK(row["tp_allreduces"] == 4);
  uint64_t bytes = 0;
  for (const auto& l : row["links"])
    if (l["from"].get<std::string>().find("hca") != std::string::npos ||
        l["to"].get<std::string>().find("hca") != std::string::npos)
      bytes += l["bytes"].get<uint64_t>();
  return bytes;
}
}  // namespace

TEST_CASE("on a cluster the data-parallel groups of one GPU per node all-reduce in the rail's leaf with train.dp_algorithm=sharp", "[train][cluster]") {
  cli::TempDir d;
  const auto sharp = tp_cluster_row("nvls", "sharp", d.file("sharp.json"));
  const auto ring = tp_cluster_row("nvls", "ring", d.file("ring.json"));
  CHECK(sharp["wrong"] == 0);
  CHECK(sharp["tp_allreduces"] == 4);
  // One trip to the leaf and back, against the 2-GPU ring's two steps.
  CHECK(sharp["comm_us"].get<double>() < ring["comm_us"].get<double>());
  // The count bites: a faulty adder in rail 0's leaf corrupts sums both GPUs 0 take.
  const auto faulty = tp_cluster_row("nvls", "sharp", d.file("faulty.json"),
                                     "-c fault.alu.block=leaf0.port0.reduction_table -c fault.alu.elements=5");
  CHECK(faulty["wrong"] == 2 * 5);
}

TEST_CASE("on a cluster nvls (on the cores or the copy engines), push and pull run each node's tensor-parallel all-reduces inside it", "[train][cluster]") {
  // The data-parallel ring across the nodes alone crosses the adapters: as
  // many bytes as when the tensor-parallel groups run the ring too, in the
  // in-network operations' 128-byte packets.
  cli::TempDir d;
  const uint64_t ring = adapter_bytes("ring -c net.max_payload_bytes=128", d.file("ring.json"));
  CHECK(ring > 0);
  for (const std::string a : {"nvls", "nvls -c nvls.engine=copy", "push", "pull"}) {
    INFO(a);
    CHECK(adapter_bytes(a, d.file("r.json")) == ring);
  }
}

TEST_CASE("one-shot: the iteration is its compute and then its one all-reduce", "[train]") {
  const auto rows = train(kToy, "star", 4, "push", "", {{"train.overlap", "false"}});
  REQUIRE(rows.size() == 1);
  const auto& r = rows[0];
  CHECK(r["buckets"] == 1);
  // 4 layers of 20 + 40 us, and the optimizer: a roofline kernel over 1M
  // weights (12 B each at V100's 900 GB/s, 14.0 us) and its 6 us launch.
  const double optimizer = 12.0 * (1 << 20) / 900e9 * 1e6 + 6;
  CHECK(r["compute_us"] == Approx(240 + optimizer).margin(0.01));
  CHECK(r["comm_us"] > 0);
  CHECK(r["time_us"] == Approx(r["compute_us"] + r["comm_us"]).margin(0.01));  // nothing overlaps
  CHECK(r["exposed_us"] == Approx(r["comm_us"]).margin(0.01));
}

TEST_CASE("layer-wise overlap hides all but the last layer's all-reduce behind the backward pass", "[train]") {
  const auto rows = train(kToy, "star", 4, "push", "", {{"train.bucket_bytes", "1"}});
  const auto& r = rows[0];
  CHECK(r["buckets"] == 4);
  CHECK(r["time_us"] >= r["compute_us"]);
  CHECK(r["exposed_us"] == Approx(r["time_us"] - r["compute_us"]).margin(1e-6));
  // Each 1 MiB push (about 75 us here) outlasts a 40 us backward kernel, so
  // the all-reduces queue: what shows is what the backward pass could not cover.
  CHECK(r["exposed_us"] < r["comm_us"]);
  CHECK(r["exposed_us"] >= r["comm_us"] - 3 * 40 - 0.01);
}

TEST_CASE("DDP buckets: two layers' gradients fill a 2 MiB bucket", "[train]") {
  const auto rows = train(kToy, "star", 4, "ring", "", {{"train.bucket_bytes", std::to_string(2 << 20)}});
  CHECK(rows[0]["buckets"] == 2);
}

TEST_CASE("training's progress is the bytes its collectives moved: 0% through the forward pass, then step by step to 100%",
          "[train][progress]") {
  // The toy's forward pass (80 us) communicates nothing; then 4 buckets of 1 MiB.
  const cli::Result r = cli::incsim("--model " + kToy + " --platform star --gpus 4 --algorithm push "
                                    "-c train.bucket_bytes=1 -c sim.progress_s=0");
  INFO("stderr:\n" << r.err);
  REQUIRE(r.code == 0);
  std::vector<int> percent;
  std::vector<double> sim_us;
  for (const std::string& line : cli::lines(r.err)) {
    std::smatch m;
    REQUIRE(std::regex_search(line, m, std::regex("iteration 1 \\(1 of 1\\): ([0-9]+)%, simulated ([0-9.]+) us")));
    percent.push_back(std::stoi(m[1]));
    sim_us.push_back(std::stod(m[2]));
  }
  REQUIRE(percent.size() >= 20);
  // Counting kernels, the forward pass alone read a third of the iteration
  // and the last bucket sat at 99%; the wall-clock cost is the bytes.
  for (size_t k = 0; k < percent.size(); ++k) {
    if (sim_us[k] <= 80) CHECK(percent[k] == 0);
    if (k > 0) CHECK(percent[k] >= percent[k - 1]);
    if (k > 0) CHECK(percent[k] - percent[k - 1] <= 10);
  }
  CHECK(percent.back() == 100);
}

TEST_CASE("push trains a small transformer on DGX-2 faster than the ring", "[train]") {
  const auto rows = train("transformer", "dgx2", 0, "push", "ring",
                          {{"transformer.layers", "2"}, {"transformer.hidden", "256"}, {"transformer.heads", "4"},
                           {"transformer.sequence", "64"}, {"transformer.vocabulary", "1000"},
                           {"train.bucket_bytes", "1"}});
  REQUIRE(rows.size() == 2);
  CHECK(std::get<std::string>(rows[0].at("algorithm")) == "push");
  CHECK(rows[0]["time_us"] < rows[1]["time_us"]);
  CHECK(rows[0]["speedup"] == Approx(rows[1]["time_us"] / rows[0]["time_us"]));
  CHECK(rows[0]["comm_us"] < rows[1]["comm_us"]);
}

TEST_CASE("the timeline is trace-event JSON whose spans add up to the iteration", "[train][timeline]") {
  cli::TempDir d;
  const std::string file = d.file("timeline.json");
  const auto rows = train(kToy, "star", 4, "push", "", {{"train.bucket_bytes", "1"}}, file);
  const auto j = nlohmann::json::parse(cli::slurp(file));
  std::map<int, double> busy;  // per GPU: compute time
  double first = 1e300, last = 0;
  int all_reduces = 0, counters = 0;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "C") {
      ++counters;
      CHECK(e.at("args").at("busiest").get<double>() <= 1.0 + 1e-9);
      CHECK(e.at("args").at("mean").get<double>() <= e.at("args").at("busiest").get<double>() + 1e-12);
    }
    if (e.at("ph") != "X") continue;
    const int tid = e.at("tid");
    const double ts = e.at("ts"), dur = e.at("dur");
    first = std::min(first, ts);
    last = std::max(last, ts + dur);
    if (tid < 4) busy[tid] += dur;
    else ++all_reduces;
  }
  CHECK(all_reduces == 4);
  CHECK(counters == 8);  // each all-reduce's links: on at its start, off at its end
  REQUIRE(busy.size() == 4);
  for (const auto& [gpu, t] : busy) CHECK(t == Approx(rows[0]["compute_us"]).margin(0.01));
  CHECK(last - first == Approx(rows[0]["time_us"]).margin(0.01));
}

TEST_CASE("bad training input is one sentence and exit 2", "[train][errors]") {
  const auto refused = [](const std::string& args, const std::string& sentence) {
    const cli::Result r = cli::incsim(args);
    INFO(args);
    CHECK(r.code == 2);
    CHECK(cli::lines(r.err).size() == 1);
    CHECK_THAT(r.err, Catch::Contains(sentence));
  };
  refused("--model resnet51", "resnet50");
  refused("--model resnet50 --batch 0", "--batch must be between 1");
  refused("--model resnet50 -c train.bucket_bytes=0", "train.bucket_bytes");
  refused("--model resnet50 --precision fp16 --dtype int32", "--precision fp16 sets the gradients' type");
  refused("--model resnet50 --collective broadcast", "training all-reduces its gradients");
  refused("--model resnet50 --algorithm ring --baseline ring", "--baseline ring is the --algorithm too");
  refused("--model resnet50 --compute tpu", "v100");
  refused("--model resnet50 -c train.contention=dma", "train.contention must be sm");
  refused("--workload train", "--workload train needs --model");
  refused("--batch 8", "--batch is for --workload train");
  refused("--model resnet50 --baseline rign", "did you mean 'ring'");
  refused("--model resnet50 --tp 2", "--tp 2 splits transformer blocks as Megatron-LM does, and model 'resnet50' has none");
  refused("--model transformer --platform dgx2 --tp 3", "--tp 3 does not divide the 16 GPUs");
  refused("--model transformer --platform dgx2 --tp 2 --algorithm blink",
          "--algorithm blink numbers its ranks as platform 'dgx2' numbers its GPUs");
  refused("--model transformer --platform dgx2 --tp 4 --algorithm push --baseline blink", "--baseline blink numbers");
  refused("--tp 2", "--tp is for --workload train");
  refused("--pp 2", "--pp is for --workload train");
  const std::string pipe = "--model " TEST_DATA "/toy4_pipeline_layers.yaml --platform star ";
  refused(pipe + "--gpus 4 --pp 3 --batch 6", "--pp 3 does not divide the 4 GPUs");
  refused(pipe + "--gpus 8 --pp 8", "--pp 8 makes more stages than model 'toy4pipe' has layers (4)");
  refused(pipe + "--gpus 4 --pp 2 --batch 6 -c train.microbatches=4", "train.microbatches 4 does not divide the batch of 6");
  refused("--model " TEST_DATA "/toy4_layers.yaml --platform star --gpus 4 --pp 2",
          "gives layer 'l2' no output size, so --pp cannot size the activations");
}

// A transformer small enough for a test: 2 blocks of 64, 4 heads, 16 tokens.
const tb::KeyValues kSmallTransformer{{"transformer.layers", "2"},     {"transformer.hidden", "64"},
                                      {"transformer.heads", "4"},      {"transformer.sequence", "16"},
                                      {"transformer.vocabulary", "100"}, {"train.bucket_bytes", "1"}};
const std::string kSmallTransformerArgs =
    "--model transformer -c transformer.layers=2 -c transformer.hidden=64 -c transformer.heads=4 "
    "-c transformer.sequence=16 -c transformer.vocabulary=100 -c train.bucket_bytes=1 --batch 2 --quiet";

TEST_CASE("tensor parallelism or a pipeline of 1 is data parallel: the same output as without --tp or --pp",
          "[train][tp][pp]") {
  const std::string args = kSmallTransformerArgs + " --platform star --gpus 4 --algorithm ring";
  const cli::Result plain = cli::incsim(args);
  REQUIRE(plain.code == 0);
  for (const std::string one : {" --tp 1", " --pp 1"}) {
    const cli::Result r = cli::incsim(args + one);
    REQUIRE(r.code == 0);
    CHECK(r.out == plain.out);
  }
}

TEST_CASE("tensor parallelism of 2: each group all-reduces its activations 4 times per block, on the critical path", "[train][tp]") {
  // 4 GPUs: tensor-parallel groups 0,1 and 2,3; gradients over 0,2 and 1,3.
  // The software ring's ranks run two collectives on each GPU at once.
  cli::TempDir d;
  const std::string file = d.file("timeline.json");
  // Without SM contention: the gradients' ring, slowing one GPU of a group
  // more than the other, would skew the group's arrivals.
  tb::KeyValues params = kSmallTransformer;
  params.emplace_back("train.contention", "none");
  const auto rows = train("transformer", "star", 4, "ring", "", params, file, 2);
  REQUIRE(rows.size() == 1);
  const auto& r = rows[0];
  CHECK(r["tp_allreduces"] == 8);
  CHECK(r["tp_comm_us"] > 0);
  // Nothing skews a group's GPUs: each waits for all of every all-reduce.
  CHECK(r["tp_exposed_us"] == Approx(r["tp_comm_us"]).epsilon(1e-9));
  // The gradients' exposed time is what follows the flush; the kernels'
  // launches between the all-reduces idle a little more (0.26 us here).
  CHECK(r["time_us"] >= r["compute_us"] + r["tp_exposed_us"] + r["exposed_us"]);
  CHECK(r["time_us"] == Approx(r["compute_us"] + r["tp_exposed_us"] + r["exposed_us"]).epsilon(0.001));
  CHECK(r["buckets"] > 0);
  CHECK(r["comm_us"] > 0);
  // The timeline: a track per group, 8 all-reduces of activations on each tensor-parallel one.
  const auto j = nlohmann::json::parse(cli::slurp(file));
  std::map<int, std::string> tracks;
  std::map<int, int> spans;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") tracks[e.at("tid")] = e.at("args").at("name");
    if (e.at("ph") == "X") ++spans[e.at("tid").get<int>()];
  }
  CHECK(tracks[4] == "gradients, GPUs 0,2");
  CHECK(tracks[5] == "gradients, GPUs 1,3");
  CHECK(tracks[6] == "activations, GPUs 0,1");
  CHECK(tracks[7] == "activations, GPUs 2,3");
  CHECK(spans[6] == 8);
  CHECK(spans[7] == 8);
  CHECK(spans[4] == r["buckets"]);
}

TEST_CASE("push reduces a tensor-parallel group's activations faster than the ring on DGX-2", "[train][tp]") {
  const auto rows = train("transformer", "dgx2", 0, "push", "ring", kSmallTransformer, "", 8);
  REQUIRE(rows.size() == 2);
  // 8 GPUs a group: the ring's 14 steps on the critical path against one pass through the switches.
  CHECK(rows[0]["tp_allreduces"] == 8);
  CHECK(rows[1]["tp_allreduces"] == 8);
  CHECK(rows[0]["tp_comm_us"] < rows[1]["tp_comm_us"]);
  CHECK(rows[0]["time_us"] < rows[1]["time_us"]);
}

namespace {
// The small transformer on a 4-GPU star with the ring, 7 elements summed
// wrong by the ALU of `cores` (gpuN.cores): the row.
tb::Row faulty_run(const std::string& cores, uint32_t tp, uint32_t pp) {
  tb::KeyValues params = kSmallTransformer;
  params.push_back({"fault.alu.block", cores});
  params.push_back({"fault.alu.elements", "7"});
  tb::Options o = tb::run_options("star", "allreduce", "ring", "", params);
  o.workload = "train";
  o.model = "transformer";
  o.batch = 2;
  o.gpus = 4;
  o.tp = tp;
  o.pp = pp;
  tb::Experiment e(o);
  std::ostringstream table;
  return e.run(&table).at(0);
}
}  // namespace

// One tensor-parallel group of all 4 GPUs: one replica, so no gradients to
// all-reduce, and only the activations' all-reduces can go wrong.
TEST_CASE("an activation summed wrong under --tp shows in #wrong", "[train][tp][fault]") {
  const tb::Row r = faulty_run("gpu1.cores", 4, 1);
  CHECK(r["buckets"] == 0);
  CHECK(r["tp_allreduces"] == 8);
  CHECK(r.wrong() > 0);
}

TEST_CASE("a gradient summed wrong shows in the iteration's #wrong", "[train][fault]") {
  tb::Options o = tb::run_options("star", "allreduce", "ring", "",
                                  {{"fault.alu.block", "gpu1.cores"}, {"fault.alu.elements", "7"}});
  o.workload = "train";
  o.model = kToy;
  o.gpus = 4;
  tb::Experiment e(o);
  std::ostringstream table;
  const auto rows = e.run(&table);
  INFO(table.str());
  CHECK(rows[0].wrong() > 0);
}

// 4 layers of 262144 weights: 2 MiB of fp16 or bf16 gradients, all-reduced
// as half or bfloat16 elements; 7 wrong results in GPU 1's cores reach all
// 4 GPUs, as they do in fp32.
TEST_CASE("fp16 and bf16 gradients are all-reduced as half and bfloat16, and a fault in them counts",
          "[train][precision][fault]") {
  for (const std::string precision : {"fp16", "bf16"})
    for (const bool fault : {false, true}) {
      const std::string args = "--model " + kToy + " --platform star --gpus 4 --algorithm ring --compute a100 " +
                               "--precision " + precision +
                               (fault ? " -c fault.alu.block=gpu1.cores -c fault.alu.elements=7" : "");
      INFO(args);
      const cli::Result r = cli::incsim(args + " --quiet");
      INFO(r.err);
      CHECK(r.code == (fault ? 1 : 0));
      CHECK_THAT(r.out, Catch::Contains("2.0 MiB of " + precision + " gradients"));
      const auto rows = cli::lines(r.out);
      CHECK_THAT(rows.back(), Catch::EndsWith(fault ? " 28" : " 0"));
    }
}

TEST_CASE("an ASTRA-sim DATA workload trains with its own times and gradient sizes", "[train][astra]") {
  // astra_data.txt: conv1 1000 + 2000 + 3000 cycles and 46464 B of gradient,
  // fc1 500 + 600 + 700 cycles and 8392704 B; updates 10 and 20 cycles; 1 GHz.
  // ASTRA-sim's DATA loop never computes layer 0's input gradient: 7.83 - 2 us.
  const auto rows = train(TEST_DATA "/astra_data.txt", "star", 4, "ring", "", {});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["compute_us"] == Approx(5.83).margin(1e-6));
  CHECK(rows[0]["buckets"] == 1);  // 8.4 MB: one 25 MiB bucket
  CHECK(rows[0]["comm_us"] > 0);
}

TEST_CASE("a SCALE-Sim topology trains with the systolic array's cycles for its convolutions", "[train][scalesim]") {
  // scalesim_two.csv: Conv1 on 10x10x4 by 32 3x3 filters (8x8 out: GEMM 64
  // x 32 x 36), FC2 on 64 inputs to 32 (1 x 32 x 64). Cycles per GEMM on
  // 16 arrays of 32x32: ceil(folds / 16) x (2 x 32 + 32 + T - 2), forward
  // (Sr, Sc, T) = (m, n, k), backward (m, k, n) and (k, n, m): Conv1 130 +
  // 126 + 158, FC2 158 + 126 + 95, at 1 GHz.
  tb::Options o = tb::run_options("star", "allreduce", "ring", "", {{"train.overlap", "false"}});
  o.workload = "train";
  o.model = TEST_DATA "/scalesim_two.csv";
  o.compute = "systolic";
  o.batch = 1;
  o.gpus = 4;
  tb::Experiment e(o);
  std::vector<tb::Row> rows;
  REQUIRE_NOTHROW(rows = e.run(nullptr));
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["compute_us"] == Approx(0.793).margin(1e-9));
  CHECK(rows[0]["buckets"] == 1);
  CHECK(rows[0].wrong() == 0);
}

TEST_CASE("an ASTRA-sim DATA layer's all-reduce starts after its weight gradient and before its input gradient", "[train][astra]") {
  // A bucket per layer: fc1's all-reduce starts after the forward pass (1.5
  // us) and fc1's weight gradient (0.7 us), while fc1's input gradient (0.6
  // us) and conv1's weight gradient (3 us) run; conv1's follows it at once.
  // So the iteration is 2.2 us, the all-reduces and the updates (0.03 us);
  // the input gradient first would make it 2.8 us.
  const auto rows = train(TEST_DATA "/astra_data.txt", "star", 4, "ring", "", {{"train.bucket_bytes", "1000"}});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["buckets"] == 2);
  CHECK(rows[0]["time_us"] - rows[0]["comm_us"] == Approx(2.23).margin(1e-3));
}

TEST_CASE("an ASTRA-sim workload incsim does not run is refused with its file", "[train][astra][errors]") {
  const cli::Result r = cli::incsim("--model " TEST_DATA "/astra_customized.txt");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("astra_customized.txt is HYBRID_CUSTOMIZED parallel, and incsim runs ASTRA-sim's "
                                    "DATA, MODEL, HYBRID_DATA_MODEL, HYBRID_MODEL_DATA, HYBRID_TRANSFORMER, "
                                    "HYBRID_TRANSFORMER_FWD_IN_BCKWD, HYBRID_DLRM and HYBRID_DLRM_ENHANCED files only"));
  CHECK(cli::lines(r.err).size() == 1);
  // A DLRM file whose last bottom layer is its last layer.
  const cli::Result dlrm = cli::incsim("--model " TEST_DATA "/astra_dlrm.txt");
  CHECK(dlrm.code == 2);
  CHECK_THAT(dlrm.err, Catch::Contains("astra_dlrm.txt, line 1: the last bottom layer 1 leaves no top layer of the 2"));
  CHECK(cli::lines(dlrm.err).size() == 1);
}

const std::string kPipeline = TEST_DATA "/toy4_pipeline_layers.yaml";

namespace {
// A pipeline run through the binary (a test case runs one simulation in
// process): its one row, and the timeline's tracks and span counts.
struct PipelineRun {
  nlohmann::json row;
  std::map<int, std::string> tracks;
  std::map<int, int> spans;
};
PipelineRun pipeline_run(const std::string& args) {
  cli::TempDir d;
  const cli::Result r = cli::incsim(args + " --quiet --json " + d.file("r.json") + " --timeline " + d.file("t.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  PipelineRun run;
  const auto rows = nlohmann::json::parse(cli::slurp(d.file("r.json"))).at("rows");
  REQUIRE(rows.size() == 1);
  run.row = rows[0];
  const auto timeline = nlohmann::json::parse(cli::slurp(d.file("t.json")));
  for (const auto& e : timeline.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") run.tracks[e.at("tid")] = e.at("args").at("name");
    if (e.at("ph") == "X") ++run.spans[e.at("tid").get<int>()];
  }
  return run;
}
PipelineRun pipeline(int pp, int m) {
  return pipeline_run("--workload train --model " + kPipeline + " --platform star --gpus 4 --algorithm ring --pp " +
                      std::to_string(pp) + " -c train.microbatches=" + std::to_string(m) + " --batch 16");
}
}  // namespace

TEST_CASE("2 stages on a 4-GPU star: each micro-batch's activations forward and gradients back, #wrong 0",
          "[train][pp]") {
  // Stages GPUs 0,1 and 2,3; pipelines 0-2 and 1-3; gradients over 0,1 and 2,3.
  for (const int m : {2, 4}) {
    INFO(m << " micro-batches");
    const PipelineRun run = pipeline(2, m);
    const auto& r = run.row;
    CHECK(r["wrong"] == 0);
    CHECK(r["microbatches"] == m);
    CHECK(r["p2p"] == 2 * m * (2 - 1));
    CHECK(r["p2p_us"] > 0);
    CHECK(r["buckets"] == 2);  // the default 25 MiB: one per stage
    // A stage's 2 layers, each micro-batch, and the optimizer over its 0.5M weights.
    CHECK(r["compute_us"].get<double>() > 2 * 600 * m);
    CHECK(run.tracks.at(0) == "stage 0, gpu0.compute");
    CHECK(run.tracks.at(3) == "stage 1, gpu3.compute");
    CHECK(run.tracks.at(4) == "gradients, GPUs 0,1");
    CHECK(run.tracks.at(6) == "activations, GPU 0 to 2");
    CHECK(run.tracks.at(7) == "gradients, GPU 2 to 0");
    for (int link = 6; link < 10; ++link) CHECK(run.spans.at(link) == m);
    for (int g = 0; g < 4; ++g) CHECK(run.spans.at(g) == 2 * 2 * m + 1);  // 2 layers forward and backward, the optimizer
  }
}

TEST_CASE("the 1F1B bubble is (pp - 1) / (m + pp - 1) of the pipeline when compute dominates", "[train][pp]") {
  // 4 stages of one layer on 4 GPUs (no data parallelism): 600 us of a
  // stage's compute per micro-batch against transfers of 4 to 16 KiB (a few
  // us each, 2 (pp - 1) of them on the critical path), so within 3%.
  for (const int m : {4, 8}) {
    INFO(m << " micro-batches");
    const auto r = pipeline(4, m).row;
    CHECK(r["p2p"] == 2 * m * 3);
    const double busy = 600.0 * m, bubble = r["bubble_us"];
    CHECK(bubble / (bubble + busy) == Approx(3.0 / (m + 3)).epsilon(0.03));
    CHECK(bubble >= 3 * 600);
  }
}

namespace {
using training::ChakraCollective;
using training::ChakraNode;
using training::ChakraNodeType;
using training::ChakraTrace;

// Four ranks: 100 us of compute, an all-reduce of 1 MiB among all, then each
// rank sends 64 KiB to the next (a ring of sends, a custom collective's step)
// and, once its receive is in, computes 50 us and then (a control
// dependency on the send too) 50 us more.
std::vector<ChakraTrace> chakra_step(int ranks) {
  std::vector<ChakraTrace> set(ranks);
  for (int r = 0; r < ranks; ++r) {
    ChakraNode forward = chakra_node(1, ChakraNodeType::compute);
    forward.duration_micros = 100;
    ChakraNode all_reduce = chakra_node(2, ChakraNodeType::collective, {1});
    all_reduce.comm_type = ChakraCollective::all_reduce;
    all_reduce.comm_size = 1 << 20;
    ChakraNode send = chakra_node(3, ChakraNodeType::send, {2});
    send.comm_dst = (r + 1) % ranks;
    ChakraNode recv = chakra_node(4, ChakraNodeType::recv, {2});
    recv.comm_src = (r + ranks - 1) % ranks;
    for (ChakraNode* p2p : {&send, &recv}) p2p->comm_size = 64 << 10, p2p->comm_tag = 1;
    ChakraNode first = chakra_node(5, ChakraNodeType::compute, {4});
    first.duration_micros = 50;
    ChakraNode second = chakra_node(6, ChakraNodeType::compute);
    second.ctrl_deps = {5, 3};
    second.duration_micros = 50;
    set[r].version = "0.0.4";
    set[r].nodes = {forward, all_reduce, send, recv, first, second};
  }
  return set;
}

std::string write_set(const cli::TempDir& d, const std::vector<ChakraTrace>& set) {
  const std::string name = d.file("step");
  for (size_t r = 0; r < set.size(); ++r) training::write_chakra_trace(name + "." + std::to_string(r) + ".et", set[r]);
  return name + ".et";
}

// One collective alone on the same platform, through the binary: its time.
double collective_us(const std::string& args) {
  cli::TempDir d;
  const cli::Result r = cli::incsim(args + " --quiet --json " + d.file("r.json"));
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(cli::slurp(d.file("r.json"))).at("rows").at(0).at("time_us");
}
}  // namespace

// ASTRA-sim names a set by its prefix (--workload-configuration=.../step
// reads step.0.et, ...); users paste that, or one rank's file.
TEST_CASE("a Chakra trace set is named as NAME.et, by ASTRA-sim's prefix, or by one rank's file", "[train][chakra]") {
  cli::TempDir d;
  const std::string et = write_set(d, chakra_step(4));
  const std::string prefix = et.substr(0, et.size() - 3);
  CHECK(training::chakra_set_name(et) == prefix);
  CHECK(training::chakra_set_name(prefix) == prefix);
  CHECK(training::chakra_set_name(prefix + ".2.et") == prefix);
  CHECK(training::chakra_set_name("gpt2").empty());
  std::string rows;
  for (const std::string& model : {et, prefix, prefix + ".0.et"}) {
    const cli::Result r = cli::incsim("--model " + model + " --platform star --gpus 4 --algorithm ring --quiet");
    INFO(model << "\n" << r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("running chakra trace set " + prefix + " (4 ranks"));
    if (rows.empty()) rows = r.out;
    CHECK(r.out == rows);
  }
}

TEST_CASE("a Chakra trace set runs on a 4-GPU star: compute, an all-reduce, sends and a dependency chain",
          "[train][chakra]") {
  cli::TempDir d;
  const std::string model = write_set(d, chakra_step(4));
  const cli::Result r = cli::incsim("--model " + model + " --platform star --gpus 4 --algorithm ring --quiet --json " +
                                    d.file("r.json") + " --timeline " + d.file("t.json"));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const auto row = nlohmann::json::parse(cli::slurp(d.file("r.json"))).at("rows").at(0);
  CHECK(row["wrong"] == 0);
  CHECK(row["collectives"] == 1);
  CHECK(row["p2p"] == 4);
  CHECK(row["compute_us"] == Approx(200).margin(1e-9));
  // The timeline: a span per compute node, the all-reduce, each transfer.
  std::map<int, std::vector<std::pair<double, double>>> spans;  // [track]: (start, duration)
  const auto timeline = nlohmann::json::parse(cli::slurp(d.file("t.json")));
  for (const auto& e : timeline.at("traceEvents"))
    if (e.at("ph") == "X") spans[e.at("tid").get<int>()].emplace_back(e.at("ts").get<double>(), e.at("dur").get<double>());
  REQUIRE(spans.size() == 4 + 1 + 4);
  for (int g = 0; g < 4; ++g) CHECK(spans[g].size() == 3);
  REQUIRE(spans[4].size() == 1);
  // The all-reduce starts when the forward compute ends and takes what it
  // takes alone on the star; the sends go side by side (each GPU's port
  // sends one and receives one), then the 50 + 50 us chain.
  const double all_reduce = collective_us("--collective allreduce --sizes 1048576 --platform star --gpus 4 --algorithm ring");
  CHECK(spans[4][0].first == Approx(100).margin(1e-6));
  CHECK(spans[4][0].second == Approx(all_reduce).margin(0.01));
  double transfer = 0;
  for (int l = 5; l < 9; ++l) {
    REQUIRE(spans[l].size() == 1);
    CHECK(spans[l][0].first == Approx(100 + all_reduce).margin(0.01));
    transfer = std::max(transfer, spans[l][0].second);
  }
  const double alone = collective_us("--collective broadcast --sizes 65536 --platform star --gpus 2 --algorithm ring");
  CHECK(transfer >= alone - 0.01);
  CHECK(transfer < 1.2 * alone);
  CHECK(row["time_us"] == Approx(100 + all_reduce + transfer + 50 + 50).margin(0.01));
  CHECK(row["comm_us"] == Approx(all_reduce + transfer).margin(0.01));
  CHECK(row["exposed_us"] == Approx(row["time_us"].get<double>() - 200).margin(1e-6));
}

// ASTRA-sim's custom collectives are written as each rank sending, then
// receiving once its send has gone (a COMM_RECV_NODE depending on the
// COMM_SEND_NODE): sends leave at once there (its network API schedules the
// chunk at sim_send) and a receive matches the send of its tag, peers and
// size in order.
TEST_CASE("Chakra sends leave once issued and receives match them by tag in order, as ASTRA-sim's do",
          "[train][chakra]") {
  // Two ranks exchange 64 KiB: each sends tag 1, then tag 2 after it; rank
  // 0 receives tag 1 then 2, rank 1 tag 2 then 1; each receive waits for
  // the rank's own sends; then 10 us of compute.
  std::vector<ChakraTrace> set(2);
  for (int r = 0; r < 2; ++r) {
    ChakraNode first = chakra_node(1, ChakraNodeType::send), second = chakra_node(2, ChakraNodeType::send, {1});
    ChakraNode a = chakra_node(3, ChakraNodeType::recv, {2}), b = chakra_node(4, ChakraNodeType::recv, {3});
    first.comm_tag = 1, second.comm_tag = 2;
    a.comm_tag = r == 0 ? 1 : 2, b.comm_tag = r == 0 ? 2 : 1;
    for (ChakraNode* n : {&first, &second}) n->comm_dst = 1 - r;
    for (ChakraNode* n : {&a, &b}) n->comm_src = 1 - r;
    for (ChakraNode* n : {&first, &second, &a, &b}) n->comm_size = 64 << 10;
    ChakraNode compute = chakra_node(5, ChakraNodeType::compute, {4});
    compute.duration_micros = 10;
    set[r].version = "0.0.4";
    set[r].nodes = {first, second, a, b, compute};
  }
  cli::TempDir d;
  const cli::Result r =
      cli::incsim("--model " + write_set(d, set) + " --platform star --gpus 2 --algorithm ring --quiet --json " +
                  d.file("r.json"));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("leaves once issued, its receive matched by tag, peers, size and order"));
  const auto row = nlohmann::json::parse(cli::slurp(d.file("r.json"))).at("rows").at(0);
  CHECK(row["wrong"] == 0);
  CHECK(row["p2p"] == 4);
  // Each link's two transfers one after the other, the links side by side,
  // then the compute: the receives wait for nothing more.
  const double one = collective_us("--collective broadcast --sizes 65536 --platform star --gpus 2 --algorithm ring");
  CHECK(row["time_us"].get<double>() >= 2 * one + 10 - 0.01);
  CHECK(row["time_us"].get<double>() < 2 * 1.2 * one + 10);
}

TEST_CASE("Chakra process groups run side by side, and a compute node without a duration takes the roofline's time",
          "[train][chakra]") {
  // Ranks 0,1 all-reduce 256 KiB in group 'a' while 2,3 all-gather it in
  // 'b'; each computes 785 MFLOP first: 100 us at V100's 15.7 TFLOP/s x
  // 0.5, and the 6 us launch.
  std::vector<ChakraTrace> set(4);
  for (int r = 0; r < 4; ++r) {
    ChakraNode compute = chakra_node(1, ChakraNodeType::compute);
    compute.num_ops = 785000000;
    compute.tensor_size = 4096;
    ChakraNode coll = chakra_node(2, ChakraNodeType::collective, {1});
    coll.comm_type = r < 2 ? ChakraCollective::all_reduce : ChakraCollective::all_gather;
    coll.comm_size = 256 << 10;
    coll.pg_name = r < 2 ? "a" : "b";
    set[r].nodes = {compute, coll};
  }
  cli::TempDir d;
  const cli::Result r = cli::incsim("--model " + write_set(d, set) + " --platform star --gpus 4 --algorithm ring " +
                                    "--baseline nvls --quiet --json " + d.file("r.json"));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("2 process groups ('a': allreduce of 256K; 'b': allgather of 256K)"));
  const auto rows = nlohmann::json::parse(cli::slurp(d.file("r.json"))).at("rows");
  REQUIRE(rows.size() == 2);
  for (const auto& row : rows) {
    CHECK(row["wrong"] == 0);
    CHECK(row["collectives"] == 2);
    CHECK(row["compute_us"] == Approx(106).margin(1e-6));
    CHECK(row["time_us"] == Approx(106 + row["comm_us"].get<double>()).margin(0.01));
  }
  CHECK(rows[0]["speedup"] == Approx(rows[1]["time_us"].get<double>() / rows[0]["time_us"].get<double>()));
}

TEST_CASE("a Chakra ALL_TO_ALL runs as NCCL's all-to-all, exact, and takes what it takes alone", "[train][chakra]") {
  // chakra_step with its all-reduce an all-to-all of 1 MiB per rank (NCCL's under --algorithm ring too).
  std::vector<ChakraTrace> set = chakra_step(4);
  for (auto& t : set) t.nodes[1].comm_type = ChakraCollective::all_to_all;
  cli::TempDir d;
  const cli::Result r = cli::incsim("--model " + write_set(d, set) + " --platform star --gpus 4 --algorithm ring " +
                                    "--json " + d.file("r.json") + " --timeline " + d.file("t.json"));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("alltoall of 1M"));
  const auto row = nlohmann::json::parse(cli::slurp(d.file("r.json"))).at("rows").at(0);
  CHECK(row["wrong"] == 0);
  CHECK(row["collectives"] == 1);
  // Its span on the group's track (after the 4 ranks') is what it takes alone.
  double span = -1;
  const auto timeline = nlohmann::json::parse(cli::slurp(d.file("t.json")));
  for (const auto& e : timeline.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("tid") == 4) span = e.at("dur").get<double>();
  CHECK(span == Approx(collective_us("--collective alltoall --sizes 1048576 --platform star --gpus 4")).margin(0.01));
}

TEST_CASE("an ASTRA-sim ALLTOALL runs as NCCL's all-to-all in its model-parallel group, exact", "[train][astra][tp]") {
  // astra_alltoall.txt on 8 GPUs: 2 groups of 4, 2 replicas; per group fc's
  // 256 KiB all-reduce forward, experts' 1 MiB all-to-all forward and backward.
  cli::TempDir d;
  const cli::Result r = cli::incsim("--model " TEST_DATA "/astra_alltoall.txt --platform star --gpus 8 --json " +
                                    d.file("r.json") + " --timeline " + d.file("t.json"));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("of 256K 1M (all-to-all)"));
  const auto row = nlohmann::json::parse(cli::slurp(d.file("r.json"))).at("rows").at(0);
  CHECK(row["wrong"] == 0);
  CHECK(row["tp_allreduces"] == 3);  // the group's activation collectives, all-to-alls too
  const double alone = collective_us("--collective alltoall --sizes 1048576 --platform star --gpus 4");
  int alltoalls = 0;
  const auto timeline = nlohmann::json::parse(cli::slurp(d.file("t.json")));
  for (const auto& e : timeline.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("name") == "all-to-all activations (1M)") {
      ++alltoalls;
      CHECK(e.at("dur").get<double>() == Approx(alone).epsilon(0.02));
    }
  CHECK(alltoalls == 2 * 2);
}

TEST_CASE("a Chakra all-reduce summed wrong shows in #wrong", "[train][chakra][fault]") {
  cli::TempDir d;
  const cli::Result r = cli::incsim("--model " + write_set(d, chakra_step(4)) + " --platform star --gpus 4 " +
                                    "--algorithm ring -c fault.alu.block=gpu1.cores -c fault.alu.elements=7 --quiet " +
                                    "--json " + d.file("r.json"));
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(nlohmann::json::parse(cli::slurp(d.file("r.json"))).at("rows").at(0).at("wrong") > 0);
}

TEST_CASE("bad Chakra input is one sentence and exit 2", "[train][chakra][errors]") {
  cli::TempDir d;
  const auto refused = [](const std::string& args, const std::string& sentence) {
    const cli::Result r = cli::incsim(args);
    INFO(args << "\n" << r.err);
    CHECK(r.code == 2);
    CHECK(cli::lines(r.err).size() == 1);
    CHECK_THAT(r.err, Catch::Contains(sentence));
  };
  const std::string model = "--model " + write_set(d, chakra_step(4)) + " --platform star ";
  refused(model + "--gpus 8", "has 4 ranks (" + d.file("step") + ".0.et to " + d.file("step") +
                                  ".3.et) and platform 'star' runs 8 GPUs");
  refused(model + "--gpus 4 --batch 8", "--batch is not for a Chakra trace");
  refused(model + "--gpus 4 --tp 2", "--tp is not for a Chakra trace");
  // A gather incsim cannot run.
  std::vector<ChakraTrace> set = chakra_step(4);
  for (auto& t : set) t.nodes[1].comm_type = ChakraCollective::gather;
  const std::string name = write_set(d, set);
  refused("--model " + name + " --platform star --gpus 4", "node 2: collective type GATHER, which incsim does not run");
  // Rank 3 all-reduces another size.
  set = chakra_step(4);
  set[3].nodes[1].comm_size = 1 << 10;
  refused("--model " + write_set(d, set) + " --platform star --gpus 4",
          "step.3.et, node 2: collective 1 of the process group of all ranks on this rank is not rank 0's");
  // Each rank receives before it sends: the traces wait for each other.
  set = chakra_step(4);
  for (auto& t : set) t.nodes[2].data_deps = {4};
  refused("--model " + write_set(d, set) + " --platform star --gpus 4",
          "never issues (the traces wait for each other)");
}

TEST_CASE("an ASTRA-sim HYBRID_TRANSFORMER workload runs its model-parallel all-reduces in --tp groups", "[train][astra][tp]") {
  // astra_hybrid.txt: model_parallel_NPU_group 2, so on 4 GPUs 2 groups of 2
  // and 2 replicas; fc1 and fc2 each 100 + 200 us of compute, 2 all-reduces
  // of 256 KiB per group on the critical path, 1 MiB of gradient each.
  const auto rows = train(TEST_DATA "/astra_hybrid.txt", "star", 4, "ring", "", {});
  REQUIRE(rows.size() == 1);
  const auto& r = rows[0];
  CHECK(r["compute_us"] == Approx(600.02).margin(1e-6));  // and the updates: 20 cycles at 1 GHz
  CHECK(r["tp_allreduces"] == 2);
  CHECK(r["buckets"] == 1);  // 2 MiB: one 25 MiB bucket
  // Each group's all-reduces take what one takes alone on 2 GPUs of a star
  // (fc2's input gradient comes before the gradients are all-reduced).
  const double alone = collective_us("--collective allreduce --sizes 262144 --platform star --gpus 2 --algorithm ring");
  CHECK(r["tp_comm_us"] == Approx(2 * alone).epsilon(0.02));
  CHECK(r["time_us"] >= r["compute_us"] + r["tp_exposed_us"] + r["exposed_us"]);
  CHECK(r["time_us"] == Approx(r["compute_us"] + r["tp_exposed_us"] + r["exposed_us"]).epsilon(0.001));
  // --tp other than the file's group is refused.
  const cli::Result bad = cli::incsim("--model " TEST_DATA "/astra_hybrid.txt --platform star --gpus 4 --tp 4");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--tp 4: workload file " TEST_DATA "/astra_hybrid.txt runs model-parallel groups of 2 NPUs"));
}

TEST_CASE("an ASTRA-sim HYBRID_TRANSFORMER workload runs its forward ALLGATHER and REDUCESCATTER as ASTRA-sim does",
          "[train][astra][tp]") {
  // astra_allgather.txt: groups of 2 on 4 GPUs. Per group and iteration,
  // by hand: embed's forward ALLGATHER of 131072 B per NPU (ASTRA-sim's
  // size: each NPU's share, so incsim's all-gather of 262144 B), fc1's
  // forward ALLREDUCE of 262144 B and input-gradient ALLGATHER of 131072
  // B per NPU, fc2's forward REDUCESCATTER of 262144 B (each NPU's input)
  // and input-gradient ALLREDUCE of 262144 B: 2 all-gathers, 1
  // reduce-scatter and 2 all-reduces, each what it takes alone on 2 GPUs.
  const auto rows = train(TEST_DATA "/astra_allgather.txt", "star", 4, "ring", "", {});
  REQUIRE(rows.size() == 1);
  const auto& r = rows[0];
  CHECK(r["wrong"] == 0);
  CHECK(r["tp_allreduces"] == 5);
  CHECK(r["compute_us"] == Approx(750.03).margin(1e-6));  // 50 + 100 + 100 us each way, and 30 cycles of updates
  const std::string two = " --sizes 262144 --platform star --gpus 2 --algorithm ring";
  const double gather = collective_us("--collective allgather" + two);
  const double scatter = collective_us("--collective reducescatter" + two);
  const double reduce = collective_us("--collective allreduce" + two);
  CHECK(r["tp_comm_us"] == Approx(2 * gather + scatter + 2 * reduce).epsilon(0.02));
  // A REDUCESCATTER that does not split over the group's GPUs is refused, naming the file.
  cli::TempDir d;
  const std::string odd = d.write("odd.txt", "HYBRID_TRANSFORMER model_parallel_NPU_group: 2\n2\n"
                                             "a -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 1\n"
                                             "b -1 1 REDUCESCATTER 12 1 NONE 0 1 ALLREDUCE 8 1\n");
  const cli::Result bad = cli::incsim("--model " + odd + " --platform star --gpus 4 --quiet");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("workload file " + odd + ": a REDUCESCATTER of 12 bytes does not split into "
                                      "whole 4-byte elements over the 2 GPUs of a model-parallel group"));
}

TEST_CASE("an ASTRA-sim HYBRID_TRANSFORMER_FWD_IN_BCKWD workload recomputes its layers from the checkpoint in the backward pass",
          "[train][astra][tp]") {
  // astra_recompute.txt: groups of 2 on 4 GPUs; checkpoint fc1, fc3
  // initiates: before fc3's backward, fc1 and fc2 run forward again (100 us
  // each) and fc1 all-reduces its output again. The same file read as
  // HYBRID_TRANSFORMER does neither.
  cli::TempDir d;
  const std::string text = cli::slurp(TEST_DATA "/astra_recompute.txt");
  const std::string plain_file =
      d.write("plain.txt", "HYBRID_TRANSFORMER model_parallel_NPU_group: 2" + text.substr(text.find('\n')));
  const std::string args = " --platform star --gpus 4 --algorithm ring";
  const PipelineRun recomputed = pipeline_run("--model " TEST_DATA "/astra_recompute.txt" + args);
  const PipelineRun plain = pipeline_run("--model " + plain_file + args);
  for (const auto* run : {&recomputed, &plain}) {
    CHECK(run->row["wrong"] == 0);
    CHECK(run->tracks.at(6) == "activations, GPUs 0,1");
  }
  // Forward fc1 and fc3, input gradient fc2 and fc3; and fc1's forward again.
  CHECK(plain.row["tp_allreduces"] == 4);
  CHECK(recomputed.row["tp_allreduces"] == 5);
  CHECK(recomputed.row["compute_us"].get<double>() - plain.row["compute_us"].get<double>() == Approx(200).margin(1e-6));
  CHECK(recomputed.row["time_us"].get<double>() > plain.row["time_us"].get<double>() + 200);
  // Each GPU: 4 layers forward and backward and the optimizer, and 2 recomputed; each group 1 more all-reduce.
  for (int g = 0; g < 4; ++g) {
    CHECK(plain.spans.at(g) == 9);
    CHECK(recomputed.spans.at(g) == 11);
  }
  for (const int group : {6, 7}) CHECK(recomputed.spans.at(group) == plain.spans.at(group) + 1);
}

TEST_CASE("an ASTRA-sim HYBRID_MODEL_DATA workload runs its model-parallel all-reduces in strided groups",
          "[train][astra][tp]") {
  // astra_model_data.txt with --tp 4 on 8 GPUs: model-parallel groups
  // 0,2,4,6 and 1,3,5,7; data-parallel groups of consecutive GPUs 0,1 2,3 4,5 6,7.
  const PipelineRun run =
      pipeline_run("--model " TEST_DATA "/astra_model_data.txt --platform star --gpus 8 --tp 4 --algorithm ring");
  CHECK(run.row["wrong"] == 0);
  CHECK(run.row["tp_allreduces"] == 2);
  CHECK(run.row["buckets"] == 1);
  for (int t = 0; t < 4; ++t)
    CHECK(run.tracks.at(8 + t) == "gradients, GPUs " + std::to_string(2 * t) + "," + std::to_string(2 * t + 1));
  CHECK(run.tracks.at(12) == "activations, GPUs 0,2,4,6");
  CHECK(run.tracks.at(13) == "activations, GPUs 1,3,5,7");
  for (const int track : {12, 13}) CHECK(run.spans.at(track) == 2);
  for (int t = 8; t < 12; ++t) CHECK(run.spans.at(t) == 1);
  // The header says so.
  const cli::Result r =
      cli::incsim("--model " TEST_DATA "/astra_model_data.txt --platform star --gpus 8 --tp 4 --algorithm ring");
  CHECK_THAT(r.out, Catch::Contains("tensor parallel in 2 groups of 4 GPUs strided by 2 (0,2,4,6 the first, as "
                                    "ASTRA-sim's HYBRID_MODEL_DATA lays them out), data parallel over 2 replicas"));
}

namespace {
// astra_dlrm_run.txt (layer 0 the embedding, last bottom layer 1): emb 10 us
// forward and 50 us weight gradient (its 20 us input gradient never runs),
// bot 10 + 10 us, top 100 + 200 us, so 380 us of compute and 30 ns of
// updates; a 1 MiB all-to-all forward and backward, 3 MiB of gradients
// (one bucket, ready once the embedding's backward kernel has run).
const std::string kDlrm = TEST_DATA "/astra_dlrm_run.txt";
// One all-to-all of 1 MiB and the gradients' all-reduce, alone on a 4-GPU star.
double dlrm_alltoall_us() { return collective_us("--collective alltoall --sizes 1048576 --platform star --gpus 4"); }
double dlrm_allreduce_us() {
  return collective_us("--collective allreduce --sizes 3145728 --platform star --gpus 4 --algorithm ring");
}
}  // namespace

TEST_CASE("an ASTRA-sim HYBRID_DLRM workload hides its embedding all-to-alls behind the bottom layers and waits for "
          "them at the top layer and the embedding",
          "[train][astra][dlrm]") {
  // Without SM contention, every GPU: emb forward (10 us), the all-to-all
  // (A) beside bot's forward (10 us), top forward and backward (300 us), the
  // all-to-all beside bot's backward (10 us), emb's backward (50 us), the
  // gradients' all-reduce (R), the updates: 360.03 + 2A + R, of which
  // 2 (A - 10) waits for the all-to-alls.
  const auto rows = train(kDlrm, "star", 4, "ring", "", {{"train.contention", "none"}});
  REQUIRE(rows.size() == 1);
  const auto& r = rows[0];
  const double a = dlrm_alltoall_us(), ar = dlrm_allreduce_us();
  CHECK(r["compute_us"] == Approx(380.03).margin(1e-6));
  CHECK(r["alltoalls"] == 2);
  CHECK(r["buckets"] == 1);
  CHECK(r["a2a_comm_us"] == Approx(2 * a).epsilon(0.01));
  CHECK(r["a2a_exposed_us"] == Approx(2 * (a - 10)).epsilon(0.01));
  CHECK(r["comm_us"] == Approx(ar).epsilon(0.01));
  CHECK(r["time_us"] == Approx(360.03 + 2 * a + ar).epsilon(0.002));
  CHECK(r["time_us"] == Approx(r["compute_us"] + r["a2a_exposed_us"] + r["exposed_us"]).margin(0.01));
}

TEST_CASE("an ASTRA-sim HYBRID_DLRM_ENHANCED workload runs the embedding's backward without waiting for its all-to-all",
          "[train][astra][dlrm]") {
  // As HYBRID_DLRM, but emb's backward runs beside the backward all-to-all
  // with bot's (60 us, longer than A), so only the forward one waits:
  // 370.03 + A + R.
  cli::TempDir d;
  const std::string text = cli::slurp(kDlrm);
  {
    std::ofstream out(d.file("enhanced.txt"));
    out << "HYBRID_DLRM_ENHANCED" << text.substr(text.find(' '));
  }
  const auto rows = train(d.file("enhanced.txt"), "star", 4, "ring", "", {{"train.contention", "none"}});
  REQUIRE(rows.size() == 1);
  const auto& r = rows[0];
  const double a = dlrm_alltoall_us(), ar = dlrm_allreduce_us();
  CHECK(r["alltoalls"] == 2);
  CHECK(r["a2a_comm_us"] == Approx(2 * a).epsilon(0.01));
  CHECK(r["a2a_exposed_us"] == Approx(a - 10).epsilon(0.01));
  CHECK(r["time_us"] == Approx(370.03 + a + ar).epsilon(0.002));
}

TEST_CASE("ASTRA-sim's published DLRM_HybridParallel.txt runs unchanged on DGX-2, exact, and its all-to-alls' data count "
          "in #wrong",
          "[train][astra][dlrm]") {
  const std::string model = "--model " TEST_DATA "/astra_dlrm_published.txt ";
  cli::TempDir d;
  const cli::Result r = cli::incsim(model + "--platform dgx2 --quiet --json " + d.file("r.json"));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const auto row = nlohmann::json::parse(cli::slurp(d.file("r.json"))).at("rows").at(0);
  CHECK(row["wrong"] == 0);
  CHECK(row["alltoalls"] == 2);
  // 19020 cycles forward, 32358 backward (the embedding's input gradient
  // not run), 3288 of updates, at 1 GHz.
  CHECK(row["compute_us"].get<double>() == Approx(54.666).margin(1e-6));
  CHECK(row["a2a_comm_us"].get<double>() > 0);
  // Push reduces the gradients on the copy engines, so only the all-to-alls
  // run on GPU 1's cores, whose fault garbles 7 elements.
  const cli::Result faulty = cli::incsim(model + "--platform star --gpus 4 --algorithm push --quiet --json " +
                                         d.file("f.json") + " -c fault.alu.block=gpu1.cores -c fault.alu.elements=7");
  CHECK(faulty.code == 1);
  CHECK(nlohmann::json::parse(cli::slurp(d.file("f.json"))).at("rows").at(0).at("wrong") == 7);
  // Its all-to-alls span every GPU: no --tp.
  const cli::Result tp = cli::incsim(model + "--platform star --gpus 8 --tp 2");
  CHECK(tp.code == 2);
  CHECK(cli::lines(tp.err).size() == 1);
  CHECK_THAT(tp.err, Catch::Contains("astra_dlrm_published.txt is a DLRM one, whose embedding all-to-alls and "
                                     "weight-gradient all-reduces span every GPU, so it runs without --tp and --pp"));
  const cli::Result micro = cli::incsim(model + "--platform star --gpus 4 -c train.microbatches=2");
  CHECK(micro.code == 2);
  CHECK_THAT(micro.err, Catch::Contains("train.microbatches 2: workload file " TEST_DATA
                                        "/astra_dlrm_published.txt is a DLRM one, whose embedding all-to-alls run once "
                                        "per iteration"));
}

TEST_CASE("pipeline and tensor parallelism of 2 on an 8-GPU star: every stage's groups all-reduce activations 4 times per block and "
          "micro-batch, every GPU sends, gradients per stage and place",
          "[train][tp][pp]") {
  // Stage 0 GPUs 0-3 (the embedding and block 0), stage 1 GPUs 4-7 (block 1
  // and the output); tensor-parallel groups 0,1 2,3 4,5 6,7; pipelines
  // (replicas) 0,1-4,5 and 2,3-6,7; gradients over 0,2 1,3 4,6 5,7.
  const int m = 2;
  const PipelineRun run = pipeline_run(kSmallTransformerArgs + " --platform star --gpus 8 --algorithm ring --pp 2 --tp 2");
  const auto& r = run.row;
  CHECK(r["wrong"] == 0);
  CHECK(r["microbatches"] == m);
  CHECK(r["tp_allreduces"] == 2 * 4 * m);  // a pipeline's: 2 stages of 1 block, 2 forward and 2 backward each
  CHECK(r["p2p"] == 2 * m * (2 - 1) * 2);  // every GPU of a stage's group sends
  // A GPU waits for all of its group's all-reduces, and a little more: the
  // GPUs of a group receive their micro-batches over their own links, ns apart.
  CHECK(r["tp_exposed_us"].get<double>() >= r["tp_comm_us"].get<double>());
  CHECK(r["tp_exposed_us"].get<double>() == Approx(r["tp_comm_us"].get<double>()).epsilon(0.01));
  CHECK(r["bubble_us"] > 0);
  REQUIRE(run.tracks.size() == 8 + 4 + 4 + 8);  // compute, gradients, activations' all-reduces, links
  CHECK(run.tracks.at(0) == "stage 0, gpu0.compute");
  CHECK(run.tracks.at(7) == "stage 1, gpu7.compute");
  const std::vector<std::string> gradients{"gradients, GPUs 0,2", "gradients, GPUs 1,3", "gradients, GPUs 4,6",
                                           "gradients, GPUs 5,7"};
  int buckets = 0;
  for (int t = 0; t < 4; ++t) {
    CHECK(run.tracks.at(8 + t) == gradients[t]);
    CHECK(run.tracks.at(12 + t) == "activations, GPUs " + std::to_string(2 * t) + "," + std::to_string(2 * t + 1));
    CHECK(run.spans.at(12 + t) == 4 * m);
    buckets += run.spans.at(8 + t);
  }
  CHECK(buckets == 2 * r["buckets"].get<int>());  // each stage's buckets, in each of its 2 places
  CHECK(run.tracks.at(16) == "activations, GPU 0 to 4");
  CHECK(run.tracks.at(23) == "gradients, GPU 7 to 3");
  for (int link = 16; link < 24; ++link) CHECK(run.spans.at(link) == m);
}

TEST_CASE("pipeline and tensor parallelism of 2: the iteration is the stages' compute, the bubble and the activations' all-reduces",
          "[train][tp][pp]") {
  // toy2_tp_pipeline_layers.yaml: one layer a stage, 200 + 400 us measured,
  // 100 + 200 us on each GPU of a group of 2; one replica, so no gradients.
  // Each micro-batch: one all-reduce of 1024 x 4 samples x 4 B in each
  // group (l1's output forward, l2's input gradient backward), each as long
  // as one alone on 2 GPUs of a star. Without SM contention: the transfers
  // and one stage's all-reduces on the cores would slow the other stage's
  // kernels.
  const int m = 4;
  const auto r = pipeline_run("--workload train --model " TEST_DATA "/toy2_tp_pipeline_layers.yaml --platform star "
                              "--gpus 4 --algorithm ring --pp 2 --tp 2 --batch 16 -c train.microbatches=4 "
                              "-c train.contention=none")
                     .row;
  CHECK(r["wrong"] == 0);
  CHECK(r["buckets"] == 0);
  CHECK(r["tp_allreduces"] == 2 * m);
  CHECK(r["p2p"] == 2 * m * 2);
  // The optimizer over a GPU's 128K weights: 12 B each at 900 GB/s and a 6 us launch.
  const double optimizer = 12.0 * 131072 / 900e9 * 1e6 + 6;
  CHECK(r["compute_us"].get<double>() == Approx(m * 300 + optimizer).margin(0.01));
  const double alone = collective_us("--collective allreduce --sizes 16384 --platform star --gpus 2 --algorithm ring");
  CHECK(r["tp_comm_us"].get<double>() == Approx(m * alone).epsilon(0.05));
  CHECK(r["tp_exposed_us"].get<double>() >= r["tp_comm_us"].get<double>());
  CHECK(r["tp_exposed_us"].get<double>() == Approx(r["tp_comm_us"].get<double>()).epsilon(0.01));
  // 1F1B's bubble: (pp - 1) / (m + pp - 1) of the pipeline, the transfers
  // and the other stage's all-reduces on the critical path a few us more.
  const double bubble = r["bubble_us"], busy = 300.0 * m;
  CHECK(bubble >= 300);
  CHECK(bubble / (bubble + busy) == Approx(1.0 / (m + 1)).epsilon(0.05));
  // Balanced stages and no gradients: nothing else is exposed.
  CHECK(r["exposed_us"].get<double>() == Approx(0).margin(0.01));
  CHECK(r["time_us"].get<double>() ==
        Approx(r["compute_us"].get<double>() + r["tp_exposed_us"].get<double>() + bubble).margin(0.01));
}

TEST_CASE("a pipeline's exposed gradients are each stage's all-reduce after its own last kernel, on the critical path",
          "[train][pp]") {
  // toy2_tp_pipeline_layers.yaml without --tp: a layer a stage, 2 replicas,
  // each stage's 1 MiB of gradients one bucket that fills with its last
  // backward kernel. Under 1F1B stage 0's ends last, so its all-reduce (as
  // long as one alone on 2 GPUs of a star) is what the optimizer waits for.
  const auto r = pipeline_run("--workload train --model " TEST_DATA "/toy2_tp_pipeline_layers.yaml --platform star "
                              "--gpus 4 --algorithm ring --pp 2 --batch 16 -c train.microbatches=4 "
                              "-c train.contention=none")
                     .row;
  const double alone = collective_us("--collective allreduce --sizes 1M --platform star --gpus 2 --algorithm ring");
  CHECK(r["exposed_us"].get<double>() == Approx(alone).epsilon(0.02));
  const auto& stages = r["dp_exposed_stages"];
  REQUIRE(stages.size() == 2);
  CHECK(stages[0].get<double>() == r["exposed_us"].get<double>());
  CHECK(stages[1].get<double>() == Approx(alone).epsilon(0.02));
}

TEST_CASE("an activation summed wrong in a later stage's tensor-parallel group shows in #wrong", "[train][tp][pp][fault]") {
  // Stage 1's group: GPUs 2 and 3; one replica, so only the activations' all-reduces add.
  const tb::Row r = faulty_run("gpu3.cores", 2, 2);
  CHECK(r["buckets"] == 0);
  CHECK(r["tp_allreduces"] == 2 * 4 * 2);
  CHECK(r.wrong() > 0);
}

// SM contention (train.contention, docs/training.md): toy3_contention_layers.yaml
// on DGX-2, one all-reduce of 1 MiB per layer. The ring's 12 channels
// (ring.channels on dgx2) hold 12 of each V100's 80 SMs while it runs.
const std::string kToy3 = TEST_DATA "/toy3_contention_layers.yaml";

TEST_CASE("the ring holds 12 of 80 SMs: a kernel it overlaps ends d x 12/80 later, one it covers runs at 68/80",
          "[train][contention]") {
  cli::TempDir d;
  const std::string file = d.file("timeline.json");
  const auto rows = train(kToy3, "dgx2", 0, "ring", "", {{"train.bucket_bytes", "1"}}, file);
  std::map<std::string, double> kernel, reduce;  // GPU 0's kernels and the all-reduces, by name: their time
  const auto j = nlohmann::json::parse(cli::slurp(file));
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    if (e.at("tid") == 0) kernel[e.at("name")] = e.at("dur");
    if (e.at("tid") == 16) reduce[e.at("name")] = e.at("dur");
  }
  const double d3 = reduce.at("all-reduce bucket 0 (1.0 MiB)"), d2 = reduce.at("all-reduce bucket 1 (1.0 MiB)"),
               d1 = reduce.at("all-reduce bucket 2 (1.0 MiB)");
  // Nothing runs beside the forward kernels and l3's backward.
  CHECK(kernel.at("l1") == Approx(100).margin(1e-6));
  CHECK(kernel.at("l3 backward") == Approx(200).margin(1e-6));
  // l3's all-reduce (d3 us) inside l2's backward kernel of 1000 us: d3 us at
  // 68/80 of its speed leave d3 x 12/80 us of its work over.
  REQUIRE(d3 < 1000);
  CHECK(kernel.at("l2 backward") == Approx(1000 + d3 * 12 / 80).margin(1e-3));
  // l2's all-reduce covers l1's backward kernel of 20 us: all of it at 68/80.
  REQUIRE(d2 > 20 * 80.0 / 68);
  CHECK(kernel.at("l1 backward") == Approx(20 * 80.0 / 68).margin(1e-3));
  // The critical path: forward, l3's and l2's backward, l2's and l1's
  // all-reduces, then the optimizer (786432 weights, 12 B each at 900 GB/s,
  // and its launch), which nothing slows.
  const double optimizer = 12.0 * 786432 / 900e9 * 1e6 + 6;
  CHECK(kernel.at("optimizer") == Approx(optimizer).margin(1e-3));
  CHECK(rows[0]["time_us"] == Approx(300 + 200 + 1000 + d3 * 12 / 80 + d2 + d1 + optimizer).margin(0.01));
  // The compute column stays the kernels' time at full speed.
  CHECK(rows[0]["compute_us"] == Approx(300 + 1220 + optimizer).margin(0.01));
}

TEST_CASE("train.contention=none gives the rows of before, and push on the copy engines takes no SMs", "[train][contention]") {
  const std::string args = "--model " + kToy3 + " --platform dgx2 -c train.bucket_bytes=1 --quiet";
  const auto rows = [&](const std::string& more) {
    const cli::Result r = cli::incsim(args + more);
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto all = cli::lines(r.out);
    std::vector<std::string> out;
    for (const auto& l : all)
      if (l[0] != '#') out.push_back(l);
    return out;
  };
  // incsim's rows before contention was modelled (main at c86bcee), byte for byte.
  const auto off = rows(" --algorithm push --baseline ring -c train.contention=none");
  REQUIRE(off.size() == 2);
  CHECK(off[0] == "        push         1      1545.0      1536.5        25.7         8.6       3    1.05        0");
  CHECK(off[1] == "        ring         1      1620.2      1536.5       155.6        83.7       3    1.00        0");
  // Push: the same row with and without contention.
  CHECK(rows(" --algorithm push") == rows(" --algorithm push -c train.contention=none"));
  // The ring's iteration grows by l3's all-reduce x 12/80 (the first test):
  // 155.6 / 3 x 12 / 80 = 7.8 us. Exposed is what follows the last kernel:
  // 80.2 us, the 11.3 us the kernels were slowed by being in the time only.
  const auto on = rows(" --algorithm ring");
  REQUIRE(on.size() == 1);
  CHECK(on[0] == "        ring         1      1628.0      1536.5       155.6        80.2       3        0");
}

TEST_CASE("a Chakra compute node beside a ring all-reduce on its GPU loses 12 of 80 SMs while it runs",
          "[train][chakra][contention]") {
  // Each of 4 ranks issues a compute node of 1000 us and an all-reduce of
  // 1 MiB at once: the ring (12 channels) runs inside the compute.
  std::vector<ChakraTrace> set(4);
  for (auto& t : set) {
    ChakraNode compute = chakra_node(1, ChakraNodeType::compute);
    compute.duration_micros = 1000;
    ChakraNode all_reduce = chakra_node(2, ChakraNodeType::collective);
    all_reduce.comm_type = ChakraCollective::all_reduce;
    all_reduce.comm_size = 1 << 20;
    t.version = "0.0.4";
    t.nodes = {compute, all_reduce};
  }
  cli::TempDir d;
  const std::string model = write_set(d, set);
  const auto spans = [&](const std::string& more) {
    const cli::Result r = cli::incsim("--model " + model + " --platform star --gpus 4 --algorithm ring --quiet" + more +
                                      " --timeline " + d.file("t.json"));
    INFO(r.err);
    REQUIRE(r.code == 0);
    std::map<int, double> dur;  // [track]: the span's time
    const auto timeline = nlohmann::json::parse(cli::slurp(d.file("t.json")));
    for (const auto& e : timeline.at("traceEvents"))
      if (e.at("ph") == "X") dur[e.at("tid").get<int>()] = e.at("dur").get<double>();
    return dur;
  };
  const auto on = spans(""), off = spans(" -c train.contention=none");
  const double all_reduce = on.at(4);
  REQUIRE(all_reduce < 1000);
  for (int g = 0; g < 4; ++g) {
    CHECK(on.at(g) == Approx(1000 + all_reduce * 12 / 80).margin(1e-3));
    CHECK(off.at(g) == Approx(1000).margin(1e-6));
  }
  CHECK(off.at(4) == Approx(all_reduce).margin(1e-6));  // the all-reduce itself is as fast
}

// NetReduce's Ethernet machines run the same training (issue 37): each
// bucket a real all-reduce by the RoCE hosts (and the FPGA), checked.
namespace {
// The rows of a training run on an Ethernet platform, through the binary (a
// process per run: each builds its machine).
nlohmann::json ethernet_train(const std::string& args, const std::string& json, std::string* out = nullptr) {
  const cli::Result r = cli::incsim(args + " --model " + kToy + " -c train.bucket_bytes=1 --quiet --json " + json);
  INFO(args << "\n" << r.err);
  REQUIRE(r.code == 0);
  if (out) *out = r.out;
  return nlohmann::json::parse(cli::slurp(json))["rows"];
}
}  // namespace

TEST_CASE("train on a NetReduce rack of 4 hosts: four 1 MiB buckets in-network, every element right", "[train][netreduce]") {
  tb::Options o = tb::run_options("rack", "allreduce", "netreduce", "", {{"train.bucket_bytes", "1"}});
  o.workload = "train";
  o.model = kToy;
  o.hosts = 4;
  o.warmup = 1;
  o.iterations = 2;
  tb::Experiment e(o);
  std::ostringstream table;
  std::vector<tb::Row> rows;
  REQUIRE_NOTHROW(rows = e.run(&table));
  INFO(table.str());
  REQUIRE(rows.size() == 2);
  for (const auto& r : rows) {
    CHECK(r.wrong() == 0);
    CHECK(r["buckets"] == 4);
    // Compute: toy4's 4 x 60 us and the optimizer; the last layer's bucket
    // (the first all-reduced) overlaps the three backward kernels before it.
    CHECK(r["compute_us"] > 240);
    CHECK(r["comm_us"] > 4 * 90);  // 1 MiB at 11.57 GB/s of payload: 90.6 us each, at least
    CHECK(r["time_us"] > r["compute_us"] + 90);
  }
  CHECK(rows[0]["time_us"] == Approx(rows[1]["time_us"]).epsilon(1e-3));
  CHECK(e.machine().pool().in_use() == 0);
}

TEST_CASE("NetReduce's training iteration is shorter than the ring's on a rack of 4 hosts", "[train][netreduce]") {
  std::string header;
  const auto nr = ethernet_train("--platform rack --hosts 4 --algorithm netreduce", "train_nr.json", &header)[0];
  // The rack's hosts are its GPUs (not its FPGA), with NetReduce Testbed 1's RTX 2080 by default.
  CHECK_THAT(header, Catch::Contains("data parallel on 4 of 4 GPUs, platform rack"));
  CHECK_THAT(header, Catch::Contains("# compute: rtx2080 roofline"));
  const auto ring = ethernet_train("--platform rack --hosts 4 --algorithm ring", "train_ring.json")[0];
  CHECK(nr["wrong"] == 0);
  CHECK(ring["wrong"] == 0);
  CHECK(nr["compute_us"] == ring["compute_us"]);
  // The ring moves 2(P-1)/P = 1.5 times NetReduce's bytes per host; both
  // near the line rate, so the all-reduces take about 1.5 times as long.
  const double comm = ring["comm_us"].get<double>() / nr["comm_us"].get<double>();
  CHECK(comm > 1.3);
  CHECK(comm < 1.6);
  CHECK(nr["time_us"].get<double>() < ring["time_us"].get<double>());
}

TEST_CASE("train on spine-leaf and on the multi-GPU machines: every algorithm exact, under loss too",
          "[train][netreduce]") {
  for (const char* alg : {"netreduce", "ring"})
    CHECK(ethernet_train(std::string("--platform spineleaf --racks 2 --hosts-per-rack 2 --algorithm ") + alg,
                         "train_sl.json")[0]["wrong"] == 0);
  for (const char* alg : {"pnetreduce", "tencent", "flatring"})
    CHECK(ethernet_train(std::string("--platform multigpu --machines 2 --gpus-per-machine 2 --algorithm ") + alg,
                         "train_mg.json")[0]["wrong"] == 0);
  // Loss: each bucket waits for its connections to drain before the next starts.
  const auto lossy = ethernet_train("--platform rack --hosts 4 --algorithm netreduce -c link.loss=0.001 --iterations 2",
                                    "train_loss.json");
  for (const auto& r : lossy) CHECK(r["wrong"] == 0);
}
