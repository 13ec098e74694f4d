// Training's plain-C++ foundation (docs/training.md): the zoo's parameter
// totals against the published ones, the roofline and the systolic array
// against hand-computed layers, ASTRA-sim's text workloads, incsim's YAML
// layer lists and Chakra traces read, and their errors with file and line
// (or node).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "training/astra_workload.h"
#include "chakra_nodes.h"
#include "training/chakra_trace.h"
#include "training/compute.h"
#include "training/layer_file.h"
#include "training/model.h"
#include "training/scalesim_topology.h"
#include "training/zoo.h"
#include "temp_file.h"

using namespace incsim;
using namespace incsim::training;

namespace {

const std::string kData = std::string(TEST_DATA) + "/";

// The first UserError message of f, or "" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every zoo model's parameters match the published total") {
  // published: the total its source states; tolerance: the relative
  // difference allowed, 0 where the shapes give the number exactly.
  struct Published {
    const char* name;
    double published;
    double tolerance;
  };
  const Published table[] = {
      // torchvision's model cards give these to the parameter.
      {"alexnet", 61100840, 0},
      {"vgg16", 138357544, 0},
      {"resnet18", 11689512, 0},
      {"resnet50", 25557032, 0},
      // Table 1 of Szegedy et al. sums to 6.8M (its conv1 row undercounts).
      {"googlenet", 6.8e6, 0.04},
      // No published totals: the sums of the described shapes by hand.
      // Stem 17*9*256 + 512 = 39680; 19 blocks x 2 x (256*256*9 + 512) =
      // 22432768; policy 2*256 + 4 + 722*362 + 362 = 262242; value 256 + 2 +
      // 361*256 + 256 + 256 + 1 = 93187.
      {"alphagozero", 22827877, 0},
      // ResNet-50 through layer3 (25557032 less layer4's 14964736 and fc's
      // 2049000 = 8543296) + RPN 1024*9*512 + 512 + 512*18 + 18 + 512*36 + 36.
      {"fasterrcnn", 13290102, 0},
      // 138000 x (8 + 8 + 32 + 32) + 64*32+32 + 32*16+16 + 16*8+8 + 16+1.
      {"ncf", 11042761, 0},
      // Vaswani et al. Table 3: 213M (big), 65M (base).
      {"transformer-big", 213e6, 0.01},
      {"transformer-base", 65e6, 0.035},
      // Devlin et al. §3: 340M; Radford et al. Table 2: 1542M.
      {"bert-large", 340e6, 0.015},
      {"gpt2", 1542e6, 0.011},
      // GPT-3 XL, Brown et al. Table 2.1: 1.3B.
      {"transformer", 1.3e9, 0.015},
  };
  REQUIRE(std::size(table) == zoo_names().size());
  for (const auto& p : table) {
    INFO(p.name);
    const Model m = zoo_model(p.name);
    const double got = static_cast<double>(m.parameters());
    if (p.tolerance == 0)
      CHECK(got == p.published);
    else
      CHECK(std::abs(got / p.published - 1) <= p.tolerance);
    CHECK(m.gradient_bytes(Precision::fp16) == 2 * m.parameters());
  }
  // NetReduce Table 7 gives fp32 gradients in MiB: AlexNet 236 MB (ours
  // 233.1 MiB), VGG-16 528 MB (527.8), ResNet-50 98 MB (97.5).
  CHECK(zoo_model("vgg16").gradient_bytes(Precision::fp32) / double(1 << 20) == Approx(527.8).epsilon(0.001));
  CHECK(zoo_model("resnet50").gradient_bytes(Precision::fp32) / double(1 << 20) == Approx(97.5).epsilon(0.001));
}

TEST_CASE("per-layer gradients are the sizes Klenk's Fig. 1a reduces") {
  // Klenk §II-B: with layer-wise overlap "the mean message size for ResNet
  // is about 1MB" of 50MB; Transformer's 420MB average "about 5MB, with half
  // of all reductions being smaller than 6MB" (fp16).
  auto sizes = [](const char* name) {
    std::vector<double> mb;
    for (const auto& l : zoo_model(name).layers)
      if (l.params > 0) mb.push_back(l.gradient_bytes(Precision::fp16) / 1e6);
    std::sort(mb.begin(), mb.end());
    return mb;
  };
  const auto mean = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); };
  const auto resnet = sizes("resnet50"), transformer = sizes("transformer-big");
  CHECK(mean(resnet) == Approx(1.0).epsilon(0.1));        // 0.95 MB over 54 layers
  CHECK(mean(transformer) == Approx(5.0).epsilon(0.1));   // 4.71 MB over 91 layers
  CHECK(transformer[transformer.size() / 2] < 6.0);       // median 2.1 MB
}

TEST_CASE("layer shapes follow the architectures") {
  const Model alexnet = zoo_model("alexnet");
  // conv1: 11x11/4 with padding 2 on 224 gives 55x55; 3025 x 64 outputs of
  // 363-long dot products, plus bias and ReLU on each output.
  const Layer& conv1 = alexnet.layers[0];
  REQUIRE(conv1.gemms.size() == 1);
  CHECK(conv1.gemms[0].m == 3025);
  CHECK(conv1.gemms[0].n == 64);
  CHECK(conv1.gemms[0].k == 363);
  CHECK(conv1.forward_flops == 2.0 * 3025 * 64 * 363 + 2.0 * 3025 * 64);
  CHECK(conv1.output_elements == 3025 * 64);
  // ResNet-50's forward pass: 4.1 GMACs per image (He et al. Table 1: 3.8
  // billion "FLOPs", counting multiply-adds, before torchvision's stride move).
  CHECK(zoo_model("resnet50").forward_flops() / 2 == Approx(4.1e9).epsilon(0.02));

  // Megatron's splits: per block two column-parallel and two row-parallel
  // layers; a translation decoder block adds its cross attention.
  for (const char* name : {"gpt2", "bert-large", "transformer-big"}) {
    INFO(name);
    const Model m = zoo_model(name);
    int column = 0, row = 0, blocks = 0;
    for (const auto& l : m.layers) {
      column += l.split == TensorSplit::column && l.transformer_block();
      row += l.split == TensorSplit::row;
      blocks = std::max(blocks, l.block + 1);
    }
    const int cross = std::string(name) == "transformer-big" ? 6 : 0;
    CHECK(row == 2 * blocks + cross);
    CHECK(column == 2 * blocks + cross);
  }
  CHECK(zoo_model("gpt2").sequence_length == 1024);
  CHECK(zoo_model("bert-large", {128, {}}).sequence_length == 128);
  // A sequence changes the work, not the parameters (GPT-2's positions
  // stay 1024).
  CHECK(zoo_model("gpt2", {512, {}}).parameters() == zoo_model("gpt2").parameters());
}

TEST_CASE("the zoo refuses unknown names and impossible transformers") {
  const std::string unknown = error_of([] { zoo_model("resnet51"); });
  CHECK_THAT(unknown, Catch::Contains("unknown model 'resnet51'"));
  CHECK_THAT(unknown, Catch::Contains("alexnet, vgg16, resnet18, resnet50, googlenet"));
  CHECK_THAT(unknown, Catch::Contains("gpt2, transformer"));
  ZooOptions o;
  o.decoder.heads = 3;
  CHECK(error_of([&] { zoo_model("transformer", o); }) ==
        "the transformer's 3 heads do not divide its hidden size 2048");
  o.decoder = {};
  o.decoder.layers = 0;
  CHECK_THAT(error_of([&] { zoo_model("transformer", o); }), Catch::Contains("must all be positive"));
  ZooOptions small;
  small.decoder = {2, 64, 4, 16, 100};
  // 100*64 + 16*64 embeddings, 2 x 12*64*64 + 13*64 blocks, 128 for ln_f.
  CHECK(zoo_model("transformer", small).parameters() == 100 * 64 + 16 * 64 + 2 * (12 * 64 * 64 + 13 * 64) + 128);
}

TEST_CASE("a tensor-parallel shard has 1/N of a block's split layers and all of the rest") {
  ZooOptions small;
  small.decoder = {2, 64, 4, 16, 100};
  const Model m = zoo_model("transformer", small);
  const auto layer = [&](const std::string& name) -> const Layer& {
    for (const auto& l : m.layers)
      if (l.name == name) return l;
    FAIL(name);
    throw;
  };
  // fc1, column: 64 -> 256 on 16 tokens; its input gradient is all-reduced backward.
  const Layer& fc1 = layer("block.0.ffn.fc1");
  const Layer s1 = tensor_shard(fc1, 4);
  CHECK(s1.forward_flops == fc1.forward_flops / 4);
  CHECK(s1.params == (64 * 256 + 256) / 4);
  CHECK(s1.input_elements == 16 * 64);
  CHECK(s1.output_elements == 16 * 256 / 4);
  CHECK(s1.gemms[0].n == 64);
  CHECK(fc1.tp_forward_elements() == 0);
  CHECK(fc1.tp_backward_elements() == 16 * 64);
  // fc2, row: its output is all-reduced forward.
  const Layer& fc2 = layer("block.0.ffn.fc2");
  const Layer s2 = tensor_shard(fc2, 4);
  CHECK(s2.input_elements == 16 * 256 / 4);
  CHECK(s2.output_elements == 16 * 64);
  CHECK(s2.gemms[0].k == 64);
  CHECK(fc2.tp_forward_elements() == 16 * 64);
  CHECK(fc2.tp_backward_elements() == 0);
  // Attention: a quarter of the heads.
  CHECK(tensor_shard(layer("block.0.attn.core"), 4).gemms[0].count == 1);
  // A block's norm, the embedding and the output projection (column, but
  // outside the blocks) stay whole and need no all-reduce.
  for (const char* name : {"block.0.ln1", "embedding", "output"}) {
    INFO(name);
    const Layer& l = layer(name);
    CHECK(tensor_shard(l, 4).forward_flops == l.forward_flops);
    CHECK(tensor_shard(l, 4).params == l.params);
    CHECK(l.tp_forward_elements() + l.tp_backward_elements() == 0);
  }
}

TEST_CASE("the roofline times a hand-computed layer") {
  const RooflineModel v100(roofline_preset("v100"));
  Layer gemm;
  gemm.forward_flops = 1e9;
  gemm.params = 1000000;
  gemm.input_elements = gemm.output_elements = 100000;
  // 16 samples in fp16: 1.6e10 FLOPs at 125e12 x 0.5 = 256 us; bytes (2e5 x
  // 16 + 1e6) x 2 = 8.4 MB at 900 GB/s = 9.3 us: compute-bound, + 6 us.
  LayerTimes t = v100.compute(gemm, 16, Precision::fp16);
  CHECK(t.forward_s == Approx(262e-6));
  CHECK(t.backward_s == Approx(524e-6));

  Layer norm;
  norm.forward_flops = 1e5;
  norm.input_elements = norm.output_elements = 1e6;
  // 16 samples in fp32: 2e6 x 16 x 4 = 128 MB at 900 GB/s = 142.2 us;
  // 1.6e6 FLOPs at 15.7e12 x 0.5 = 0.2 us: memory-bound.
  t = v100.compute(norm, 16, Precision::fp32);
  CHECK(t.forward_s == Approx(1.28e8 / 900e9 + 6e-6));

  // An embedding reads the rows it looks up, not its whole table: 80
  // tokens x 1024 x 16 samples, out and again as the rows read, in fp16.
  Layer embedding;
  embedding.kind = LayerKind::embedding;
  embedding.params = 37000 * 1024;
  embedding.input_elements = 80;
  embedding.output_elements = 80 * 1024;
  CHECK(embedding.forward_bytes(16, Precision::fp16) == (80.0 + 2 * 80 * 1024) * 16 * 2);

  // Klenk's 4:1 projection: a quarter of the kernel, the same launch.
  t = RooflineModel(roofline_preset("v100x4")).compute(gemm, 16, Precision::fp16);
  CHECK(t.forward_s == Approx(256e-6 / 4 + 6e-6));
  // H100 in bf16: 1.6e10 / (989.4e12 x 0.5) = 32.3 us.
  t = RooflineModel(roofline_preset("h100")).compute(gemm, 16, Precision::bf16);
  CHECK(t.forward_s == Approx(1.6e10 / 494.7e12 + 6e-6));

  CHECK(error_of([&] { v100.compute(gemm, 16, Precision::bf16); }) == "v100 does not compute in bf16");
  CHECK(v100.describe() == "v100 roofline: 15.7/125.0/0.0 TFLOP/s fp32/fp16/bf16 x 0.50, 900 GB/s, 6 us per kernel");
  CHECK(parse_precision("bf16") == Precision::bf16);
  CHECK(bytes_per_element(Precision::bf16) == 2);
  CHECK(error_of([] { parse_precision("fp8"); }) == "the precision must be one of fp32, fp16, bf16, not 'fp8'");
  CHECK_THAT(error_of([] { make_compute_model("tpu"); }),
             Catch::Contains("unknown compute model 'tpu'; the compute models are v100, a100, h100, b200, v100x4, "
                             "rtx2080, systolic"));
  // Measured times win over the model's.
  gemm.measured = MeasuredTimes{1e-3, 3e-3};
  t = layer_times(v100, gemm, 16, Precision::fp16);
  CHECK(t.forward_s == 1e-3);
  CHECK(t.backward_s == 3e-3);
}

TEST_CASE("the systolic array times a hand-computed layer (SCALE-Sim, output stationary)") {
  const SystolicModel tpu{SystolicArray{}};
  Layer l;
  l.gemms.push_back({100, 64, 27});
  // Batch 2: Sr = 200, Sc = 64, T = 27 on 32x32: ceil(200/32) x ceil(64/32)
  // = 14 folds, one round over 16 arrays, 2*32 + 32 + 27 - 2 = 121 cycles.
  LayerTimes t = tpu.compute(l, 2, Precision::fp32);
  CHECK(t.forward_s == Approx(121e-9));
  // Input gradient: Sr 200, Sc 27, T 64: 7 folds, 158 cycles. Weight
  // gradient: Sr 27, Sc 64, T 200: 2 folds, 294 cycles.
  CHECK(t.backward_s == Approx((158 + 294) * 1e-9));

  // 1024 x 256 outputs of 100-long products: 32 x 8 = 256 folds, 16 per
  // array, 194 cycles each.
  CHECK(tpu.array().gemm_cycles(1024, 256, 100, 1) == 16 * 194);
  // Attention's per-head products count as separate folds: 80 x 80 is 3 x 3
  // folds, 144 for 16 heads, 9 per array, 158 cycles each.
  CHECK(tpu.array().gemm_cycles(80, 80, 64, 16) == 9 * 158);
  // A pooling layer takes no cycles.
  Layer pool;
  pool.kind = LayerKind::pool;
  CHECK(tpu.compute(pool, 16, Precision::fp32).forward_s == 0);
}

TEST_CASE("ASTRA-sim workloads: DATA, transformer checkpoints, customised and DLRM") {
  AstraWorkload w = read_astra_workload(kData + "astra_data.txt");
  CHECK(w.parallelism == "DATA");
  REQUIRE(w.layers.size() == 2);
  CHECK(w.layers[0].name == "conv1");
  CHECK(w.layers[0].reserved == -1);
  CHECK(w.layers[0].forward.cycles == 1000);
  CHECK(w.layers[0].forward.comm.type == AstraCollective::none);
  CHECK(w.layers[0].input_grad.cycles == 2000);
  CHECK(w.layers[0].weight_grad.cycles == 3000);
  CHECK(w.layers[0].weight_grad.comm.type == AstraCollective::allreduce);
  CHECK(w.layers[0].weight_grad.comm.bytes == 46464);
  CHECK(w.layers[0].update_cycles == 10);
  CHECK(w.layers[1].line == 4);
  CHECK(w.layers[1].weight_grad.comm.bytes == 8392704);

  // Fields separated by runs of tabs, as the published files are.
  w = read_astra_workload(kData + "astra_transformer.txt");
  CHECK(w.parallelism == "HYBRID_TRANSFORMER_FWD_IN_BCKWD");
  CHECK(w.model_parallel_group == 4);
  REQUIRE(w.layers.size() == 3);
  CHECK(w.layers[0].checkpoint);
  CHECK_FALSE(w.layers[1].checkpoint);
  CHECK(w.layers[2].checkpoint_initiates);
  CHECK(w.layers[1].forward.comm.type == AstraCollective::allreduce);
  CHECK(w.layers[1].forward.comm.bytes == 69730304);
  CHECK(w.layers[2].forward.comm.type == AstraCollective::allgather);
  CHECK(w.layers[2].input_grad.comm.type == AstraCollective::reducescatter);
  CHECK(w.layers[2].weight_grad.comm.type == AstraCollective::alltoall);
  CHECK(w.layers[2].forward.cycles == 41838182);

  w = read_astra_workload(kData + "astra_customized.txt");
  REQUIRE(w.layers.size() == 2);
  CHECK(w.layers[0].parallelism == "HYBRID_DATA_MODEL");
  CHECK(w.layers[1].parallelism == "DATA");
  CHECK(w.layers[0].update_cycles == 3229);

  w = read_astra_workload(kData + "astra_dlrm.txt");
  CHECK(w.dlrm_last_bottom_layer == 1);
  CHECK(w.layers[0].forward.comm.type == AstraCollective::alltoall);
  CHECK(w.layers[1].weight_grad.comm.type == AstraCollective::allreduce_alltoall);

  // The early transformer files give no model-parallel group.
  w = parse_astra_workload("HYBRID_TRANSFORMER\n1\nfc -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 1\n", "t");
  CHECK(w.model_parallel_group == 0);
}

TEST_CASE("an ASTRA-sim HYBRID_TRANSFORMER file's forward and input-gradient all-reduces are its layers' model-parallel ones") {
  // astra_hybrid.txt: groups of 2; fc1 all-reduces its output, fc2 its input gradient, both 256 KiB.
  const AstraModel m = astra_model(read_astra_workload(kData + "astra_hybrid.txt"), "h", 1e9);
  CHECK(m.model_parallel_group == 2);
  CHECK(m.update_s == Approx(20e-9));
  REQUIRE(m.model.layers.size() == 2);
  const Layer& fc1 = m.model.layers[0];
  const Layer& fc2 = m.model.layers[1];
  CHECK(fc1.params == (1 << 20) / 4);
  CHECK(fc1.measured->forward_s == Approx(100e-6));
  CHECK(fc1.measured->backward_s == Approx(200e-6));
  // The file's bytes, whatever the batch.
  CHECK(fc1.tp_forward_bytes(32, 4) == 256 << 10);
  CHECK(fc1.tp_backward_bytes(32, 4) == 0);
  CHECK(fc2.tp_forward_bytes(8, 4) == 0);
  CHECK(fc2.tp_backward_bytes(8, 4) == 256 << 10);
  CHECK(tensor_shard(fc1, 2).measured->forward_s == fc1.measured->forward_s);  // the file's times are per NPU

  const auto refusal = [](const std::string& text) {
    return error_of([&] { astra_model(parse_astra_workload(text, "t"), "t", 1e9); });
  };
  // Every collective ASTRA-sim's Layer issues in a model-parallel pass.
  for (const char* kind : {"ALLREDUCE", "ALLTOALL", "ALLGATHER", "REDUCESCATTER"}) {
    const AstraModel k = astra_model(
        parse_astra_workload(std::string("HYBRID_TRANSFORMER\n2\na -1 1 NONE 0 1 NONE 0 1 NONE 0 1\nfc -1 1 ") + kind +
                                 " 8 1 " + kind + " 16 1 NONE 0 1\n",
                             "t"),
        "t", 1e9);
    const TpCollective want = std::string(kind) == "ALLTOALL"        ? TpCollective::alltoall
                              : std::string(kind) == "ALLGATHER"     ? TpCollective::allgather
                              : std::string(kind) == "REDUCESCATTER" ? TpCollective::reducescatter
                                                                     : TpCollective::allreduce;
    CHECK(k.model.layers[1].tp_forward_kind == want);
    CHECK(k.model.layers[1].tp_backward_kind == want);
    CHECK(k.model.layers[1].tp_forward_bytes(1, 4) == 8);
    CHECK(k.model.layers[1].tp_backward_bytes(1, 4) == 16);
  }
  CHECK(refusal("HYBRID_TRANSFORMER\n1\nfc -1 1 NONE 0 1 NONE 0 1 ALLTOALL 8 1\n") ==
        "workload file t, line 3: a HYBRID_TRANSFORMER weight gradient is all-reduced here, not ALLTOALL: incsim "
        "all-reduces the weight gradients in buckets (ASTRA-sim would run it)");
  CHECK(refusal("HYBRID_TRANSFORMER\n1\nfc -1 1 ALLREDUCEALLTOALL 8 1 NONE 0 1 NONE 0 1\n") ==
        "workload file t, line 3: a forward output's ALLREDUCEALLTOALL is read by ASTRA-sim 1.0 but issued by none of "
        "its layers (Layer::issue_*_comm stops with 'no known collective operation'), so it has no meaning to run");
  // ASTRA-sim issues no input-gradient collective for the first layer.
  CHECK(astra_model(parse_astra_workload("MODEL\n1\nfc -1 1 NONE 0 1 ALLREDUCE 8 1 NONE 0 1\n", "t"), "t", 1e9)
            .model.layers[0]
            .tp_backward_bytes(1, 4) == 0);
  CHECK(refusal("DATA\n1\nfc -1 1 ALLREDUCE 8 1 NONE 0 1 NONE 0 1\n") ==
        "workload file t, line 3: a DATA-parallel layer communicates only its weight gradient");
  // HYBRID_MODEL_DATA's model-parallel groups are strided, HYBRID_DATA_MODEL's consecutive.
  const std::string layer = "1\nfc -1 1 ALLREDUCE 8 1 NONE 0 1 ALLREDUCE 8 1\n";
  CHECK(astra_model(parse_astra_workload("HYBRID_MODEL_DATA\n" + layer, "t"), "t", 1e9).strided_groups);
  CHECK_FALSE(astra_model(parse_astra_workload("HYBRID_DATA_MODEL\n" + layer, "t"), "t", 1e9).strided_groups);
  CHECK_THAT(refusal("MICRO\n" + layer),
             Catch::Contains("is MICRO parallel, and incsim runs ASTRA-sim's DATA, MODEL, HYBRID_DATA_MODEL, "
                             "HYBRID_MODEL_DATA, HYBRID_TRANSFORMER, HYBRID_TRANSFORMER_FWD_IN_BCKWD, HYBRID_DLRM and "
                             "HYBRID_DLRM_ENHANCED files only"));
}

TEST_CASE("an ASTRA-sim HYBRID_DLRM file: the embedding's all-to-alls apart, every layer's weight gradient all-reduced") {
  // astra_dlrm_run.txt: last bottom layer 1; emb 10 us forward, 20 us input
  // gradient, 50 us weight gradient, 1 MiB all-to-all forward and backward,
  // 1 MiB of gradient; bot 10 + 5 + 5 us, top 100 + 100 + 100 us, 1 MiB each.
  const AstraWorkload w = read_astra_workload(kData + "astra_dlrm_run.txt");
  CHECK(w.parallelism == "HYBRID_DLRM");
  CHECK(w.dlrm_last_bottom_layer == 1);
  REQUIRE(w.layers.size() == 3);
  const AstraModel m = astra_model(w, "d", 1e9);
  REQUIRE(m.dlrm);
  CHECK(m.dlrm->forward_bytes == 1 << 20);
  CHECK(m.dlrm->backward_bytes == 1 << 20);
  CHECK(m.dlrm->last_bottom == 1);
  CHECK(m.dlrm->embedding_waits);
  CHECK(m.model_parallel_group == 0);
  CHECK(m.update_s == Approx(30e-9));
  REQUIRE(m.model.layers.size() == 3);
  const Layer& emb = m.model.layers[0];
  const Layer& bot = m.model.layers[1];
  const Layer& top = m.model.layers[2];
  for (const Layer* l : {&emb, &bot, &top}) {
    INFO(l->name);
    CHECK(l->params == (1 << 20) / 4);
    // No model-parallel collective: the all-to-alls are the embedding's, among all GPUs.
    CHECK(l->tp_forward_bytes(32, 4) == 0);
    CHECK(l->tp_backward_bytes(32, 4) == 0);
  }
  CHECK(emb.measured->forward_s == Approx(10e-6));
  // ASTRA-sim's DLRM loop never computes the embedding's input gradient.
  CHECK(emb.measured->backward_s == Approx(50e-6));
  CHECK(emb.measured->input_grad_after_s == 0);
  // The others' input gradient runs after their weight gradient, as ASTRA-sim's loop runs it.
  CHECK(bot.measured->backward_s == Approx(5e-6));
  CHECK(bot.measured->input_grad_after_s == Approx(5e-6));
  CHECK(top.measured->backward_s == Approx(100e-6));
  CHECK(top.measured->input_grad_after_s == Approx(100e-6));

  AstraWorkload relaxed = w;
  relaxed.parallelism = "HYBRID_DLRM_ENHANCED";
  const AstraModel enhanced = astra_model(relaxed, "e", 1e9);
  REQUIRE(enhanced.dlrm);
  CHECK_FALSE(enhanced.dlrm->embedding_waits);

  // ASTRA-sim's published DLRM_HybridParallel.txt: 8 layers, the bottom MLP
  // layers 1-4, 96 KiB all-to-alls, 3191808 B of MLP gradients.
  const AstraModel published = astra_model(read_astra_workload(kData + "astra_dlrm_published.txt"), "p", 1e9);
  REQUIRE(published.dlrm);
  CHECK(published.dlrm->last_bottom == 4);
  CHECK(published.dlrm->forward_bytes == 98304);
  CHECK(published.dlrm->backward_bytes == 98304);
  CHECK(published.model.layers.size() == 8);
  CHECK(published.model.layers[0].params == 0);
  CHECK(published.model.parameters() == 3191808 / 4);
}

TEST_CASE("an ASTRA-sim DLRM file its loop would misrun is refused with its file and line") {
  const auto refusal = [](const std::string& text) {
    return error_of([&] { astra_model(parse_astra_workload(text, "t"), "t", 1e9); });
  };
  const std::string emb = "emb -1 1 ALLTOALL 64 1 ALLTOALL 64 1 NONE 0 1\n";
  const std::string fc = "fc -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 1\n";
  CHECK(refusal("HYBRID_DLRM 0\n3\n" + emb + fc + fc) ==
        "workload file t, line 1: the last bottom layer 0 is not above the embedding (layer 0), and ASTRA-sim would "
        "issue the embedding's all-to-all and never wait for it");
  CHECK(refusal("HYBRID_DLRM_ENHANCED 2\n3\n" + emb + fc + fc) ==
        "workload file t, line 1: the last bottom layer 2 leaves no top layer of the 3 (numbered from 0), and "
        "ASTRA-sim issues the embedding's backward all-to-all from the first top layer's input gradient");
  CHECK(refusal("HYBRID_DLRM 1\n3\nemb -1 1 ALLREDUCE 64 1 ALLTOALL 64 1 NONE 0 1\n" + fc + fc) ==
        "workload file t, line 3: the embedding's forward collective is ALLTOALL or NONE in a HYBRID_DLRM file, not "
        "ALLREDUCE");
  CHECK(refusal("HYBRID_DLRM 1\n3\nemb -1 1 ALLTOALL 64 1 ALLTOALL 66 1 NONE 0 1\n" + fc + fc) ==
        "workload file t, line 3: the embedding's input-gradient all-to-all of 66 bytes is no whole number of 4-byte "
        "fp32 elements");
  CHECK(refusal("HYBRID_DLRM 1\n3\n" + emb + fc + "top -1 1 ALLTOALL 64 1 NONE 0 1 ALLREDUCE 8 1\n") ==
        "workload file t, line 5: a HYBRID_DLRM layer above the embedding (layer 0) has a forward or input-gradient "
        "collective, which ASTRA-sim's DLRM loop never issues or never waits for");
  CHECK(refusal("HYBRID_DLRM 1\n3\n" + emb + fc + "top -1 1 NONE 0 1 NONE 0 1 ALLTOALL 8 1\n") ==
        "workload file t, line 5: a HYBRID_DLRM weight gradient is all-reduced here, not ALLTOALL: incsim all-reduces "
        "the weight gradients in buckets (ASTRA-sim would run it)");
  CHECK(refusal("HYBRID_DLRM 1\n3\n" + emb + fc + "top -1 1 NONE 0 1 NONE 0 1 ALLREDUCEALLTOALL 8 1\n") ==
        "workload file t, line 5: a weight gradient's ALLREDUCEALLTOALL is read by ASTRA-sim 1.0 but issued by none "
        "of its layers (Layer::issue_*_comm stops with 'no known collective operation'), so it has no meaning to run");
  // astra_dlrm.txt: 2 layers, the last bottom one the top one.
  const std::string file = kData + "astra_dlrm.txt";
  CHECK(error_of([&] { astra_model(read_astra_workload(file), file, 1e9); }) ==
        "workload file " + file + ", line 1: the last bottom layer 1 leaves no top layer of the 2 (numbered from 0), "
        "and ASTRA-sim issues the embedding's backward all-to-all from the first top layer's input gradient");
  // The header's last bottom layer.
  auto parse_error = [](const std::string& text) { return error_of([&] { parse_astra_workload(text, "w.txt"); }); };
  CHECK(parse_error("HYBRID_DLRM\n1\n" + fc) ==
        "workload file w.txt, line 1: the parallelism HYBRID_DLRM needs the number of its last bottom layer");
  CHECK(parse_error("HYBRID_DLRM four\n1\n" + fc) ==
        "workload file w.txt, line 1: the last bottom layer must be a whole number, not 'four'");
}

TEST_CASE("an ASTRA-sim model-parallel ALLTOALL is an all-to-all of its bytes in the layer's group") {
  // astra_alltoall.txt: fc all-reduces 256 KiB forward; experts all-to-alls 1 MiB forward and backward.
  const AstraModel m = astra_model(read_astra_workload(kData + "astra_alltoall.txt"), "a", 1e9);
  CHECK(m.model_parallel_group == 4);
  REQUIRE(m.model.layers.size() == 2);
  const Layer& fc = m.model.layers[0];
  const Layer& experts = m.model.layers[1];
  CHECK(fc.tp_forward_kind == TpCollective::allreduce);
  CHECK(fc.tp_forward_bytes(32, 4) == 256 << 10);
  CHECK(experts.tp_forward_kind == TpCollective::alltoall);
  CHECK(experts.tp_backward_kind == TpCollective::alltoall);
  CHECK(experts.tp_forward_bytes(32, 4) == 1 << 20);
  CHECK(experts.tp_backward_bytes(32, 4) == 1 << 20);
  // The first layer's input gradient is never exchanged, all-to-all or not.
  const AstraModel first = astra_model(
      parse_astra_workload("MODEL\n1\nfc -1 1 NONE 0 1 ALLTOALL 8 1 NONE 0 1\n", "t"), "t", 1e9);
  CHECK(first.model.layers[0].tp_backward_bytes(1, 4) == 0);
  CHECK(first.model.layers[0].tp_backward_kind == TpCollective::allreduce);
}

TEST_CASE("an ASTRA-sim FWD_IN_BCKWD file recomputes from the nearest checkpoint at or below each layer that initiates one") {
  // astra_recompute.txt: checkpoint 1, fc3 (layer 3) initiates: fc1 and fc2 again before fc3's backward.
  const AstraModel m = astra_model(read_astra_workload(kData + "astra_recompute.txt"), "r", 1e9);
  CHECK(m.model_parallel_group == 2);
  CHECK_FALSE(m.strided_groups);
  REQUIRE(m.model.layers.size() == 4);
  CHECK(m.model.layers[0].recompute_from == -1);
  CHECK(m.model.layers[1].recompute_from == -1);
  CHECK(m.model.layers[2].recompute_from == -1);
  CHECK(m.model.layers[3].recompute_from == 1);

  // ASTRA-sim's own Transformer_HybridParallel_Fwd_In_Bckwd.txt header, on 21 layers.
  const auto file = [](const std::string& head, int layers) {
    std::string text = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 4 " + head + "\n" +
                       std::to_string(layers) + "\n";
    for (int i = 0; i < layers; ++i) text += "l" + std::to_string(i) + " -1 1 ALLREDUCE 8 1 NONE 0 1 ALLREDUCE 8 1\n";
    return text;
  };
  const AstraModel t = astra_model(parse_astra_workload(file("checkpoints: 2 2 11 checkpoint_initiates: 2 19 10", 21), "t"), "t", 1e9);
  for (int i = 0; i < 21; ++i) {
    INFO("layer " << i);
    CHECK(t.model.layers[i].recompute_from == (i == 19 ? 11 : i == 10 ? 2 : -1));
  }

  // Checkpoints ASTRA-sim's walk would misread.
  const auto refusal = [&](const std::string& head, int layers) {
    return error_of([&] { astra_model(parse_astra_workload(file(head, layers), "t"), "t", 1e9); });
  };
  CHECK(refusal("checkpoints: 1 2 checkpoint_initiates: 1 1", 3) ==
        "workload file t, line 1: layer 1 (l1) initiates a recomputation with no checkpoint at or below it, so "
        "ASTRA-sim would look for one below layer 0");
  CHECK(refusal("checkpoints: 1 1 checkpoint_initiates: 1 1", 3) ==
        "workload file t, line 1: layer 1 (l1) both is a checkpoint and initiates a recomputation, which ASTRA-sim "
        "would carry on past it into layers whose backward pass has run");
  CHECK(refusal("checkpoints: 1 0 checkpoint_initiates: 2 1 2", 3) ==
        "workload file t, line 1: layer 1 (l1) and layer 2 (l2) both recompute from the checkpoint at layer 0 (l0), "
        "and ASTRA-sim would stop the second one's recomputation at the first and skip the backward pass of the "
        "layers above the first up to the second");
}

TEST_CASE("a malformed ASTRA-sim workload names its file and line") {
  const std::string bad = kData + "astra_bad_collective.txt";
  CHECK(error_of([&] { read_astra_workload(bad); }) ==
        "workload file " + bad +
            ", line 4: the weight-gradient collective must be one of NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER, "
            "ALLTOALL, ALLREDUCEALLTOALL, not 'BROADCAST'");
  const std::string layer = "fc -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 1\n";
  auto error = [](const std::string& text) { return error_of([&] { parse_astra_workload(text, "w.txt"); }); };
  CHECK(error("") == "workload file w.txt is empty");
  CHECK(error("PIPELINE\n1\n" + layer) ==
        "workload file w.txt, line 1: the parallelism must be one of DATA, HYBRID_TRANSFORMER, "
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD, HYBRID_DLRM, HYBRID_DLRM_ENHANCED, MODEL, HYBRID_DATA_MODEL, "
        "HYBRID_MODEL_DATA, HYBRID_CUSTOMIZED, MICRO, DISTRIBUTED_INFERENCE, not 'PIPELINE'");
  CHECK(error("DATA 4\n1\n" + layer) == "workload file w.txt, line 1: unexpected '4' after the parallelism DATA");
  CHECK(error("DATA\n") == "workload file w.txt ends early: no layer count on its second line");
  CHECK(error("DATA\ntwo\n" + layer) ==
        "workload file w.txt, line 2: the layer count must be a non-negative whole number, not 'two'");
  CHECK(error("DATA\n2\n" + layer) == "workload file w.txt ends early: its second line gives 2 layers, it has 1");
  CHECK(error("DATA\n1\n" + layer + layer) ==
        "workload file w.txt, line 4: more layers than the 1 its second line gives");
  CHECK(error("DATA\n1\nfc -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8\n") ==
        "workload file w.txt, line 3: a layer has 12 fields (name, reserved, then compute cycles, collective and "
        "bytes for forward, input gradient and weight gradient, update cycles), not 11");
  CHECK(error("DATA\n1\nfc -1 -5 NONE 0 1 NONE 0 1 ALLREDUCE 8 1\n") ==
        "workload file w.txt, line 3: the forward compute time must be a non-negative whole number, not '-5'");
  CHECK(error("DATA\n1\nfc -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8.5 1\n") ==
        "workload file w.txt, line 3: the weight-gradient collective size must be a non-negative whole number, "
        "not '8.5'");
  CHECK(error("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 checkpoints: 2 0\n1\n" + layer) ==
        "workload file w.txt, line 1: checkpoints: lists fewer than its 2 layers");
  CHECK(error("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2\n1\n" + layer) ==
        "workload file w.txt, line 1: the parallelism HYBRID_TRANSFORMER_FWD_IN_BCKWD needs 'checkpoints: N' and N "
        "layer numbers");
  CHECK(error("HYBRID_TRANSFORMER_FWD_IN_BCKWD checkpoints: 1 5 checkpoint_initiates: 0\n1\n" + layer) ==
        "workload file w.txt, line 1: checkpoints: names layer 5 of 1 (numbered from 0)");
  CHECK(error("HYBRID_CUSTOMIZED\n1\nfc -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 1 PIPE\n") ==
        "workload file w.txt, line 3: a layer's parallelism must be one of DATA, HYBRID_TRANSFORMER, "
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD, HYBRID_DLRM, HYBRID_DLRM_ENHANCED, MODEL, HYBRID_DATA_MODEL, "
        "HYBRID_MODEL_DATA, MICRO, DISTRIBUTED_INFERENCE, not 'PIPE'");
  CHECK_THAT(error_of([&] { read_astra_workload(kData); }), Catch::Contains("is not a file"));
}

TEST_CASE("incsim's YAML layer list") {
  const Model m = read_layer_file(kData + "toy_layers.yaml");
  CHECK(m.name == "toy");
  REQUIRE(m.layers.size() == 3);
  CHECK(m.layers[0].params == 1049600);
  CHECK(m.layers[0].forward_flops == 2.0 * 1024 * 1024);  // from its GEMM
  CHECK(m.layers[0].input_elements == 1024);
  CHECK(m.layers[1].kind == LayerKind::attention);
  CHECK(m.layers[1].gemms[1].count == 16);
  CHECK(m.layers[1].forward_flops == 1e7);  // given
  CHECK(m.layers[1].block == 0);
  CHECK(m.layers[1].split == TensorSplit::heads);
  REQUIRE(m.layers[2].measured);
  CHECK(m.layers[2].measured->forward_s == Approx(12.5e-6));
  CHECK(m.layers[2].measured->backward_s == Approx(25e-6));
  CHECK(m.parameters() == 1049600 + 10250);

  const std::string bad = kData + "bad_layers.yaml";
  CHECK(error_of([&] { read_layer_file(bad); }) ==
        "layer file " + bad + ", line 6: 'params' must be a whole number of at least 0");
}

TEST_CASE("a layer file's errors name the file and the line") {
  auto error = [&](const std::string& text) {
    TempFile f(text);
    const std::string message = error_of([&] { read_layer_file(f.path); });
    // The file's name varies: keep what follows it.
    return message.rfind("layer file " + f.path, 0) == 0 ? message.substr(11 + f.path.size()) : message;
  };
  CHECK(error("layers:\n  - name: a\n    parms: 3\n") ==
        ", line 3: unknown key 'parms' in a layer; the keys are name, kind, params, gemms, forward_flops, "
        "input_elements, output_elements, block, split, forward_us, backward_us");
  CHECK(error("layers:\n  - name: a\n    kind: lstm\n") ==
        ", line 3: a layer's kind must be one of conv, linear, embedding, attention, norm, pool, elementwise, not "
        "'lstm'");
  CHECK(error("layers:\n  - name: a\n    gemms: [[1, 2]]\n") ==
        ", line 3: a GEMM is a list [m, n, k] or [m, n, k, count]");
  CHECK(error("layers:\n  - name: a\n    forward_us: 3\n") ==
        ", line 2: a layer gives forward_us and backward_us together, or neither");
  CHECK(error("name: x\nlayers: []\n") == ", line 2: the list of layers is empty; a model has at least one layer");
  CHECK(error("layers:\n  - name: a\n    forward_flops: .nan\n") ==
        ", line 3: 'forward_flops' must be a number of at least 0");
}

// SCALE-Sim v2's conv_nets/alexnet.csv (its first two layers) and a fully
// connected layer as SCALE-Sim writes one: a filter covering its input.
TEST_CASE("a SCALE-Sim topology is read as SCALE-Sim computes it") {
  const Model m = parse_scalesim_topology(
      "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
      "Conv1     ,224         ,224        ,11           ,11          ,3       ,96        ,4      ,\n"
      "\n"
      "Conv2     ,27         ,27        ,5            ,5           ,96      ,256       ,1      ,\n"
      "FC7, 1, 4096, 1, 4096, 1, 4096, 1\n"
      "Wide, 9, 9, 3, 3, 2, 5, 2, 3,\n",
      "dir/alexnet.csv");
  CHECK(m.name == "alexnet");
  REQUIRE(m.layers.size() == 4);
  // (224 - 11) / 4 + 1 = 54 rounded down, as SCALE-Sim v1 (v2 rounds up to 55).
  CHECK(m.layers[0].gemms[0].m == 54 * 54);
  CHECK(m.layers[0].gemms[0].n == 96);
  CHECK(m.layers[0].gemms[0].k == 11 * 11 * 3);
  CHECK(m.layers[0].params == 11 * 11 * 3 * 96);  // no bias
  CHECK(m.layers[0].forward_flops == 2.0 * 54 * 54 * 96 * 11 * 11 * 3);
  CHECK(m.layers[0].input_elements == 224 * 224 * 3);
  CHECK(m.layers[0].output_elements == 54 * 54 * 96);
  CHECK(m.layers[1].gemms[0].m == 23 * 23);
  CHECK(m.layers[2].gemms[0].m == 1);
  CHECK(m.layers[2].params == 4096ull * 4096);
  // A stride along the width of its own: 4 rows of 3 columns.
  CHECK(m.layers[3].gemms[0].m == 4 * 3);
  CHECK(m.parameters() == 11 * 11 * 3 * 96 + 5 * 5 * 96 * 256 + 4096ull * 4096 + 3 * 3 * 2 * 5);
}

TEST_CASE("a SCALE-Sim topology's errors name the file and the line") {
  auto error = [&](const std::string& body) {
    return error_of([&] { parse_scalesim_topology("Layer name, ...,\n" + body, "t.csv"); });
  };
  CHECK(error("Conv1, 224, 224, 11, 11, 3, 96,\n") ==
        "SCALE-Sim topology t.csv, line 2: a layer is a name and 7 numbers (IFMAP height, IFMAP width, filter "
        "height, filter width, channels, filters, stride) and optionally a stride along the width, not 7 fields");
  CHECK(error("Conv1, 224, 224, 11, 11, 3, 0, 4,\n") ==
        "SCALE-Sim topology t.csv, line 2: the filters of 'Conv1' must be a whole number from 1 to 16777216, not '0'");
  CHECK(error("\nConv1, 224, 2x4, 11, 11, 3, 96, 4,\n") ==
        "SCALE-Sim topology t.csv, line 3: the IFMAP width of 'Conv1' must be a whole number from 1 to 16777216, "
        "not '2x4'");
  CHECK(error("Conv1, 224, 224, 11, 11, -3, 96, 4,\n") ==
        "SCALE-Sim topology t.csv, line 2: the channels of 'Conv1' must be a whole number from 1 to 16777216, not '-3'");
  CHECK(error("Conv1, 8, 8, 11, 11, 3, 96, 4,\n") ==
        "SCALE-Sim topology t.csv, line 2: the filter of 'Conv1' (11x11) is larger than its input (8x8)");
  CHECK(error("DP1, 8, 8, 3, 3, 3, 96, 1,\n") ==
        "SCALE-Sim topology t.csv, line 2: 'DP1' is a depth-wise layer to SCALE-Sim v2 ('DP' in its name), which "
        "incsim does not read");
  CHECK(error(", 8, 8, 3, 3, 3, 96, 1,\n") == "SCALE-Sim topology t.csv, line 2: a layer has no name");
  CHECK(error("\n\n") == "SCALE-Sim topology t.csv has no layer after its header line");
  CHECK_THAT(error_of([&] { read_scalesim_topology(kData + "none.csv"); }), Catch::Contains("does not exist"));
}

namespace {

// Two ranks: each computes, all-reduces 1 MiB, then rank 0 sends 4 KiB to
// rank 1 (a custom collective's point-to-point step).
std::vector<ChakraTrace> two_ranks() {
  std::vector<ChakraTrace> ranks(2);
  for (int r = 0; r < 2; ++r) {
    ranks[r].version = "0.0.4";
    ChakraNode comp = chakra_node(1, ChakraNodeType::compute);
    comp.duration_micros = 150;
    comp.num_ops = 1000000;
    comp.tensor_size = 4096;
    comp.is_cpu_op = false;
    ChakraNode coll = chakra_node(2, ChakraNodeType::collective, {1});
    coll.comm_type = ChakraCollective::all_reduce;
    coll.comm_size = 1 << 20;
    coll.pg_name = "0";
    ChakraNode p2p = chakra_node(3, r == 0 ? ChakraNodeType::send : ChakraNodeType::recv, {2});
    (r == 0 ? p2p.comm_dst : p2p.comm_src) = 1 - r;
    p2p.comm_size = 4096;
    p2p.comm_tag = 7;
    ranks[r].nodes = {comp, coll, p2p};
  }
  return ranks;
}

void write_all(const std::string& name, const std::vector<ChakraTrace>& ranks) {
  for (size_t r = 0; r < ranks.size(); ++r) write_chakra_trace(name + "." + std::to_string(r) + ".et", ranks[r]);
}

}  // namespace

TEST_CASE("Chakra traces: compute, collective, send and receive nodes with their dependencies") {
  TempDir dir;
  const std::string name = dir.file("step");
  write_all(name, two_ranks());
  const auto ranks = read_chakra_traces(name);
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0].version == "0.0.4");
  REQUIRE(ranks[0].nodes.size() == 3);
  const ChakraNode& comp = ranks[0].nodes[0];
  CHECK(comp.type == ChakraNodeType::compute);
  CHECK(comp.duration_micros == 150);
  CHECK(comp.num_ops == 1000000);
  CHECK(comp.tensor_size == 4096);
  CHECK_FALSE(comp.is_cpu_op);
  const ChakraNode& coll = ranks[1].nodes[1];
  CHECK(coll.type == ChakraNodeType::collective);
  CHECK(coll.comm_type == ChakraCollective::all_reduce);
  CHECK(coll.comm_size == 1 << 20);
  CHECK(coll.data_deps == std::vector<uint64_t>{1});
  CHECK(coll.pg_name == "0");
  CHECK(ranks[0].nodes[2].type == ChakraNodeType::send);
  CHECK(ranks[0].nodes[2].comm_dst == 1);
  CHECK(ranks[1].nodes[2].type == ChakraNodeType::recv);
  CHECK(ranks[1].nodes[2].comm_src == 0);
  CHECK(ranks[1].nodes[2].comm_tag == 7);
  CHECK(std::string(to_string(coll.comm_type)) == "ALL_REDUCE");

  // Chakra's protoio reads gzip-compressed traces as well.
  REQUIRE(std::system(("gzip -n " + name + ".0.et && mv " + name + ".0.et.gz " + name + ".0.et").c_str()) == 0);
  const auto again = read_chakra_traces(name);
  CHECK(again[0].nodes.size() == 3);
  CHECK(again[0].nodes[2].comm_size == 4096);
}

TEST_CASE("a malformed Chakra trace names the file and the node") {
  TempDir dir;
  auto error = [&](std::vector<ChakraTrace> ranks) {
    const std::string name = dir.file("bad");
    for (int r = 0; r < 4; ++r) std::remove((name + "." + std::to_string(r) + ".et").c_str());
    write_all(name, ranks);
    const std::string message = error_of([&] { read_chakra_traces(name); });
    const std::string prefix = "chakra trace " + dir.path.string();
    return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
  };
  auto ranks = two_ranks();
  ranks[1].nodes[1].data_deps = {9};
  CHECK(error(ranks) == "/bad.1.et, node 2: depends on node 9, which the trace does not have");
  ranks = two_ranks();
  ranks[0].nodes[0].ctrl_deps = {3};
  CHECK(error(ranks) == "/bad.0.et, node 1: is on a dependency cycle (or waits for one)");
  ranks = two_ranks();
  ranks[0].nodes[1].id = 1;
  CHECK(error(ranks) == "/bad.0.et, node 1: the id appears twice");
  ranks = two_ranks();
  ranks[1].nodes[2].comm_tag = 8;
  CHECK(error(ranks) == "/bad.0.et, node 3: a send of 4096 B with tag 7 to rank 1 that rank 1 never receives");
  ranks = two_ranks();
  ranks[0].nodes.pop_back();
  CHECK(error(ranks) == "/bad.1.et, node 3: a receive of 4096 B with tag 7 from rank 0 that rank 0 never sends");
  ranks = two_ranks();
  ranks[0].nodes[2].comm_dst = 2;
  CHECK(error(ranks) == "/bad.0.et, node 3: sends to rank 2 of 2");
  ranks = two_ranks();
  ranks[1].nodes[2].comm_src = -1;
  CHECK(error(ranks) == "/bad.1.et, node 3: a receive has no comm_src");
  CHECK(error_of([&] { read_chakra_traces(dir.file("none")); }) == "no chakra trace " + dir.file("none.0.et"));

  // A file cut short, and one that is not a trace at all.
  const std::string cut = dir.file("cut.0.et");
  write_chakra_trace(cut, two_ranks()[0]);
  std::filesystem::resize_file(cut, std::filesystem::file_size(cut) - 5);
  CHECK_THAT(error_of([&] { read_chakra_trace(cut); }),
             Catch::Contains("cut.0.et: message 3 of") && Catch::Contains("does not parse: the file is truncated"));
  TempFile text("DATA\n1\n", ".et");
  CHECK_THAT(error_of([&] { read_chakra_trace(text.path); }), Catch::Contains("does not parse"));
}

TEST_CASE("a Chakra trace too large, inflating too far or corrupt is one sentence naming the file or node") {
  TempDir dir;
  // comm_size 2^62: over incsim's largest collective, said with the file and node.
  auto ranks = two_ranks();
  ranks[1].nodes[1].comm_size = uint64_t{1} << 62;
  write_all(dir.file("huge"), ranks);
  CHECK(error_of([&] { read_chakra_traces(dir.file("huge")); }) ==
        "chakra trace " + dir.file("huge.1.et") + ", node 2: comm_size 4611686018427387904 B is larger than 1 TiB, the "
        "largest collective incsim runs");
  // A gzip stream with its deflate data damaged: corrupt, not empty.
  const std::string z = dir.file("z.0.et");
  write_chakra_trace(z, two_ranks()[0]);
  REQUIRE(std::system(("gzip -n " + z + " && mv " + z + ".gz " + z).c_str()) == 0);
  {
    std::fstream f(z, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(12);
    f.write("\xff\xff\xff\xff\xff\xff", 6);
  }
  CHECK_THAT(error_of([&] { read_chakra_trace(z); }),
             Catch::StartsWith("chakra trace " + z + ": the gzip stream is corrupt or truncated (zlib: "));
  // Over 64 MiB: refused from its size before a byte is read.
  const std::string big = dir.write("big.0.et", "");
  std::filesystem::resize_file(big, (std::uintmax_t{64} << 20) + 1);
  CHECK(error_of([&] { read_chakra_trace(big); }) ==
        "chakra trace " + big + " is 64.0 MiB; a chakra trace is at most 64 MiB");
  // Empty nodes two bytes each: refused at the node cap, not after gigabytes.
  const std::string many = dir.write("many.0.et", std::string("\x07\x0a\x05" "0.0.4", 8) + std::string(2 * 300000, '\0'));
  CHECK(error_of([&] { read_chakra_trace(many); }) ==
        "chakra trace " + many + ": the trace has more than 262144 nodes, the most incsim runs of one rank");
  // And a gzip file under 1 MiB that would inflate past 64 MiB: nodes
  // named by 65,533 bytes of 'a' (a message of 65,537 bytes: its length, a
  // varint of 3 bytes, then the name's tag, length and bytes).
  std::string inflated("\x07\x0a\x05" "0.0.4", 8);
  const std::string node = std::string("\x81\x80\x04\x12\xfd\xff\x03", 7) + std::string(65533, 'a');
  while (inflated.size() <= (std::size_t{65} << 20)) inflated += node;
  const std::string bomb = dir.write("bomb.0.et", inflated);
  REQUIRE(std::system(("gzip -n " + bomb + " && mv " + bomb + ".gz " + bomb).c_str()) == 0);
  CHECK(std::filesystem::file_size(bomb) < (1u << 20));
  CHECK(error_of([&] { read_chakra_trace(bomb); }) ==
        "chakra trace " + bomb + ": the gzip stream inflates to more than 64 MiB, the most a trace holds");
}

TEST_CASE("a Chakra trace encoded by hand reads as Chakra's schema says") {
  // Protobuf's wire format byte by byte, with et_def.proto's field numbers
  // (not incsim's writer): GlobalMetadata {version "0.0.4"}; Node {id 3,
  // type COMP_NODE, duration_micros 9, attr {name "num_ops", int64_val
  // 100}}; Node {id 5, type COMM_COLL_NODE, data_deps [3] (packed), attr
  // {"comm_type", int64_val 2 = ALL_GATHER}, attr {"comm_size", uint64_val
  // 300}}, each preceded by its length.
  const std::string meta = "\x0a\x05"
                           "0.0.4";
  const std::string a = std::string("\x08\x03\x18\x04\x38\x09\x52\x0b\x0a\x07", 10) + "num_ops" + "\x48\x64";
  const std::string b = std::string("\x08\x05\x18\x07\x2a\x01\x03\x52\x0d\x0a\x09", 11) + "comm_type" + "\x48\x02" +
                        "\x52\x0e\x0a\x09" + "comm_size" + "\x68\xac\x02";
  REQUIRE(a.size() == 19);
  REQUIRE(b.size() == 38);
  TempFile f(std::string(1, static_cast<char>(meta.size())) + meta + std::string(1, 19) + a + std::string(1, 38) + b,
             ".et");
  const ChakraTrace t = read_chakra_trace(f.path);
  CHECK(t.version == "0.0.4");
  REQUIRE(t.nodes.size() == 2);
  CHECK(t.nodes[0].id == 3);
  CHECK(t.nodes[0].type == ChakraNodeType::compute);
  CHECK(t.nodes[0].duration_micros == 9);
  CHECK(t.nodes[0].num_ops == 100);
  CHECK(t.nodes[1].type == ChakraNodeType::collective);
  CHECK(t.nodes[1].data_deps == std::vector<uint64_t>{3});
  CHECK(t.nodes[1].comm_type == ChakraCollective::all_gather);
  CHECK(t.nodes[1].comm_size == 300);
}
