#include "train.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <set>
#include <sstream>

#include "elements/data_pattern.h"
#include "core/error.h"
#include "core/param.h"
#include "core/units.h"
#include "gpu/compute_engine.h"
#include "training/astra_workload.h"
#include "training/layer_file.h"
#include "training/scalesim_topology.h"
#include "training/zoo.h"

namespace incsim::tb {

namespace {
const Param<uint64_t> kBucketBytes{
    "train.bucket_bytes", 25ull << 20, Range::at_least(1).at_most(1ull << 40),
    "gradients are all-reduced in buckets as the backward pass fills them, last layer first; a bucket closes once "
    "it holds this many bytes (PyTorch DDP's bucket_cap_mb, 25 MiB); 1: one all-reduce per layer, as Klenk §VI-E "
    "and MultiTree §VI-C overlap them"};
const Param<std::string> kDpAlgorithm{
    "train.dp_algorithm", "", Range::none(),
    "the data-parallel groups' all-reduce algorithm in every run, --algorithm's and --baseline's, so that the two "
    "compare the tensor-parallel groups' algorithms alone (on a cluster with --tp G: nvls, push or pull inside "
    "each node, ring across); empty: each run's own"};
const Param<bool> kOverlap{"train.overlap", true, Range::none(),
                           "all-reduce the buckets while the backward pass goes on; false: one all-reduce of every "
                           "gradient after it (Klenk §VI-E's one-shot)"};

// --model transformer's shape; the defaults are GPT-3 XL's (Brown et al. 2020, Table 2.1).
const training::DecoderShape kGpt3Xl;
const Param<uint32_t> kLayers{"transformer.layers", kGpt3Xl.layers, Range::at_least(1).at_most(1024),
                              "--model transformer: decoder blocks (GPT-3 XL: 24)"};
const Param<uint32_t> kHidden{"transformer.hidden", kGpt3Xl.hidden, Range::at_least(1).at_most(1 << 17),
                              "--model transformer: hidden size (GPT-3 XL: 2048)"};
const Param<uint32_t> kHeads{"transformer.heads", kGpt3Xl.heads, Range::at_least(1).at_most(1024),
                             "--model transformer: attention heads, dividing the hidden size (GPT-3 XL: 16)"};
const Param<uint32_t> kSequence{"transformer.sequence", kGpt3Xl.sequence, Range::at_least(1).at_most(1 << 20),
                                "--model transformer: tokens per sample (GPT-3 XL: 2048)"};
const Param<uint32_t> kVocabulary{"transformer.vocabulary", kGpt3Xl.vocabulary, Range::at_least(1).at_most(1 << 24),
                                  "--model transformer: vocabulary (GPT-2 and GPT-3's BPE: 50257)"};

const Param<uint32_t> kMicrobatches{
    "train.microbatches", 1, Range::at_least(1).at_most(1 << 16),
    "micro-batches the batch is cut into, run through the pipeline stages in 1F1B order (default --pp: the fewest "
    "that fill the pipeline; the bubble is (pp - 1) / (m + pp - 1) of the iteration, Narayanan et al. 2021 §2.2)"};

const Param<double> kAstraClock{"train.astra_clock_ghz", 1.0, Range::above(0).at_most(100),
                                "the clock an ASTRA-sim workload file's cycles count (ASTRA-sim's system layer "
                                "ticks 1 cycle per ns: 1 GHz)"};

using Phase = gpu::ComputeEngine::Phase;
// 97.5 MiB: a size that is no whole number of units.
std::string mib(uint64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return os.str();
}
bool ends_with(const std::string& s, const std::string& end) {
  return s.size() > end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}
bool is_file(const std::string& name) { return name.find('/') != std::string::npos || ends_with(name, ".yaml"); }
// "0,2,4,6"
std::string gpu_list(const std::vector<int>& gpus) {
  std::string text;
  for (size_t r = 0; r < gpus.size(); ++r) text += (r ? "," : "") + std::to_string(gpus[r]);
  return text;
}
}  // namespace

// One iteration of one algorithm in flight (the runner holds its state):
// what the rows measure.
struct TrainWorkload::Iteration {
  explicit Iteration(size_t a) : algorithm(a) {}
  size_t algorithm;
  sc_core::sc_time t0;
  std::vector<double> dp_comm_us;           // [data-parallel group]
  std::vector<sc_core::sc_time> dp_end;     // [data-parallel group]: when its last all-reduce ended
  std::vector<double> tp_comm_us;           // [tensor-parallel group]
  uint64_t tp_done = 0;                     // all-reduces of activations
  std::vector<double> busy_us;              // [GPU]: its kernels' time before the optimizer step
  std::vector<sc_core::sc_time> last_end;   // [GPU]: when its last kernel (or all-reduce of activations) ended
  std::vector<size_t> ended;                // [GPU]: its kernels that ended
  uint64_t p2p = 0;
  double p2p_us = 0;
  double tp_wait_us = 0;                    // summed over the GPUs
  uint64_t exchanged = 0;                   // embedding all-to-alls that ended
  double exchange_us = 0;                   // their time, summed
  double exchange_wait_us = 0;              // the GPUs' idle time waiting for them, summed over the GPUs
  uint64_t wrong = 0;
};

TrainWorkload::TrainWorkload(const Options& o, Config& cfg) : TrainingWorkload(o) {
  refuse_options(opt_, {"traffic", "load"}, "applies to synthetic traffic, not to training");
  if (opt_.was_given("collective") && opt_.collective != "allreduce")
    throw UserError("training all-reduces its gradients; --collective " + opt_.collective + " is not for --workload train");
  if (opt_.was_given("sizes")) throw UserError("--sizes is for collectives; training's sizes are its gradient buckets");
  if (!opt_.jobs.empty()) throw UserError("a jobs: list runs collectives; training runs one data-parallel job");
  // NetReduce's Ethernet machines: their job (the ring's connections, the
  // ACL rules, the aggregator arrays) is one ring of every host, set up for
  // one algorithm.
  const bool ethernet = is_netreduce_platform(opt_.platform);
  if (ethernet && !opt_.baseline.empty())
    throw UserError("platform " + opt_.platform + " trains with one algorithm per run (NetReduce's connections and ACL "
                    "rules are set up for it); run --algorithm " + opt_.baseline + " in a run of its own");
  if (ethernet && opt_.gpus) throw UserError("platform " + opt_.platform + " trains on all its hosts: it takes no --gpus");
  if (opt_.model.empty())
    throw UserError("--workload train needs --model: " + training::name_list(training::zoo_names()) +
                    ", or a YAML layer list");
  precision_ = training::parse_precision(opt_.precision);
  // fp16 and bf16 gradients are all-reduced as half and bfloat16 elements.
  if (precision_ != training::Precision::fp32) {
    if (opt_.was_given("dtype"))
      throw UserError("--precision " + opt_.precision + " sets the gradients' type; leave out --dtype " + opt_.dtype);
    opt_.dtype = precision_ == training::Precision::fp16 ? "half" : "bfloat16";
  }
  training::ZooOptions shape;
  if (opt_.model == "transformer")
    shape.decoder = {cfg.get(kLayers), cfg.get(kHidden), cfg.get(kHeads), cfg.get(kSequence), cfg.get(kVocabulary)};
  // ASTRA-sim's text workloads (FILE.txt) bring their own times.
  const bool astra = ends_with(opt_.model, ".txt");
  training::AstraModel astra_file;
  if (astra) {
    astra_file = training::astra_model(training::read_astra_workload(opt_.model), opt_.model, cfg.get(kAstraClock) * 1e9);
    model_ = astra_file.model;
    layout_.strided = astra_file.strided_groups;
    dlrm_ = astra_file.dlrm;
  } else {
    model_ = ends_with(opt_.model, ".csv") ? training::read_scalesim_topology(opt_.model)
             : is_file(opt_.model)         ? training::read_layer_file(opt_.model)
                                           : training::zoo_model(opt_.model, shape);
  }
  const double element = training::bytes_per_element(precision_);
  const bool splits = std::any_of(model_.layers.begin(), model_.layers.end(), [&](const training::Layer& l) {
    return l.tp_forward_bytes(opt_.batch, element) > 0 || l.tp_backward_bytes(opt_.batch, element) > 0;
  });
  if (model_.parameters() == 0 && !splits)
    throw UserError("model '" + model_.name + "' has no weights, so nothing to all-reduce");
  layout_.tp = static_cast<int>(opt_.tp);
  // An ASTRA-sim model-parallel file: its groups are the tensor-parallel ones.
  if (const uint32_t group = astra_file.model_parallel_group; group > 0) {
    if (opt_.was_given("tp") && opt_.tp != group)
      throw UserError("--tp " + std::to_string(opt_.tp) + ": workload file " + opt_.model +
                      " runs model-parallel groups of " + std::to_string(group) + " NPUs");
    layout_.tp = static_cast<int>(group);
  }
  astra_groups_ = astra && splits;
  if (dlrm_ && (layout_.tp > 1 || opt_.pp > 1))
    throw UserError("workload file " + opt_.model + " is a DLRM one, whose embedding all-to-alls and weight-gradient "
                    "all-reduces span every GPU, so it runs without --tp and --pp");
  if (astra_groups_ && layout_.tp == 1)
    throw UserError("workload file " + opt_.model + " all-reduces activations in model-parallel groups and does not "
                    "say their size (model_parallel_NPU_group): give it with --tp");
  if (layout_.tp > 1 && !splits)
    throw UserError("--tp " + std::to_string(layout_.tp) + " splits transformer blocks as Megatron-LM does, and model '" +
                    model_.name + "' has none; train it data parallel (--tp 1)");
  if (ethernet && (layout_.tp > 1 || opt_.pp > 1 || dlrm_))
    throw UserError("platform " + opt_.platform + " trains data parallel only (no --tp, --pp or DLRM file): NetReduce's "
                    "job is one ring of every host");
  compute_ = training::make_compute_model(compute_model());
  const int layers = static_cast<int>(model_.layers.size());
  layout_.pp = static_cast<int>(opt_.pp);
  if (layout_.pp > layers)
    throw UserError("--pp " + std::to_string(layout_.pp) + " makes more stages than model '" + model_.name + "' has layers (" +
                    std::to_string(layers) + ")");
  // The GPUs first: a --pp or --tp that does not divide them is the
  // problem, not the micro-batches --pp implies.
  const topo::Topology t = ethernet        ? topo::Topology{}
                           : opt_.topology ? *opt_.topology
                                           : platforms::make_topology(opt_.platform, platform_shape(opt_), cfg);
  const int built = ethernet ? netreduce_ranks(opt_, cfg) : static_cast<int>(t.endpoints().size());
  layout_.gpus = opt_.gpus && !platforms::is_dgx1(t) ? *opt_.gpus : built;
  const int n = layout_.gpus;
  if (n < 2 || n > built)
    throw UserError("platform '" + t.name + "' has " + std::to_string(built) + " GPUs and data parallelism needs 2 or "
                    "more: --gpus must be between 2 and " + std::to_string(built) + ", not " + std::to_string(n));
  if (n % layout_.tp != 0)
    throw UserError("--tp " + std::to_string(layout_.tp) + " does not divide the " + std::to_string(n) +
                    " GPUs of the run into tensor-parallel groups of " + (layout_.strided ? "strided" : "consecutive") +
                    " GPUs");
  if (n % layout_.pp != 0)
    throw UserError("--pp " + std::to_string(layout_.pp) + " does not divide the " + std::to_string(n) +
                    " GPUs of the run into pipeline stages of consecutive GPUs");
  if (n % (layout_.pp * layout_.tp) != 0)
    throw UserError("--pp " + std::to_string(layout_.pp) + " with --tp " + std::to_string(layout_.tp) + " does not divide the " +
                    std::to_string(n) + " GPUs into " + std::to_string(layout_.pp) +
                    " pipeline stages of whole tensor-parallel groups");
  micro_ = static_cast<int>(cfg.get(kMicrobatches, static_cast<uint32_t>(layout_.pp)));
  if (dlrm_ && micro_ > 1)
    throw UserError("train.microbatches " + std::to_string(micro_) + ": workload file " + opt_.model +
                    " is a DLRM one, whose embedding all-to-alls run once per iteration");
  if (opt_.batch % micro_ != 0)
    throw UserError("train.microbatches " + std::to_string(micro_) +
                    (cfg.has_override(kMicrobatches) ? "" : " (by default --pp's stages)") + " does not divide the batch of " +
                    std::to_string(opt_.batch) + " samples; set --batch or train.microbatches");
  const uint32_t micro_batch = opt_.batch / static_cast<uint32_t>(micro_);
  for (int s = 0; s <= layout_.pp; ++s) first_.push_back(s * layers / layout_.pp);
  // Each GPU runs its shard of every layer; a group's all-reduces of
  // activations come after the kernels that need them.
  // An ASTRA-sim all-gather's bytes are each GPU's share: incsim's size is
  // the whole gathered buffer (docs/training.md).
  const auto activations = [&](uint64_t file_bytes, training::TpCollective kind) {
    if (file_bytes == 0) return -1;
    const uint64_t bytes = kind == training::TpCollective::allgather ? file_bytes * static_cast<uint64_t>(layout_.tp) : file_bytes;
    for (size_t k = 0; k < tp_sizes_.size(); ++k)
      if (tp_sizes_[k] == bytes && tp_kind_[k] == kind) return static_cast<int>(k);
    if (kind == training::TpCollective::reducescatter && bytes % (4 * static_cast<uint64_t>(layout_.tp)) != 0)
      throw UserError("workload file " + opt_.model + ": a REDUCESCATTER of " + std::to_string(bytes) +
                      " bytes does not split into whole 4-byte elements over the " + std::to_string(layout_.tp) +
                      " GPUs of a model-parallel group");
    tp_sizes_.push_back(bytes);
    tp_alltoall_.push_back(kind == training::TpCollective::alltoall);
    tp_kind_.push_back(kind);
    tp_local_.push_back(0);
    for (size_t k = 0; k + 1 < tp_sizes_.size(); ++k) tp_local_.back() += tp_kind_[k] == kind;
    return static_cast<int>(tp_sizes_.size()) - 1;
  };
  std::vector<training::Layer> shards;
  for (const auto& layer : model_.layers) {
    shards.push_back(training::tensor_shard(layer, layout_.tp));
    times_.push_back(training::layer_times(*compute_, shards.back(), micro_batch, precision_));
  }
  // Each stage's kernels in 1F1B order.
  kernels_.resize(layout_.pp);
  recompute_s_.assign(layout_.pp, 0);
  for (int s = 0; s < layout_.pp; ++s) {
    const int lo = first_[s], hi = first_[s + 1];
    // Recomputation from a checkpoint (ASTRA-sim files, which run no --pp:
    // their layers give no activation sizes to send).
    for (int k = lo; k < hi; ++k)
      for (int j = model_.layers[k].recompute_from; j >= 0 && j < k; ++j) recompute_s_[s] += times_[j].forward_s;
    kernels_[s] = training::stage_kernels(s, layout_.pp, micro_, lo, hi, model_.layers, times_, [&](int k, bool f) {
      return layout_.tp > 1 ? activations(f ? model_.layers[k].tp_forward_bytes(micro_batch, element)
                                            : model_.layers[k].tp_backward_bytes(micro_batch, element),
                                          f ? model_.layers[k].tp_forward_kind : model_.layers[k].tp_backward_kind)
                            : -1;
    });
    // A stage's GPU holds its layers' weights; the optimizer steps over the largest stage's.
    uint64_t params = 0;
    for (int k = first_[s]; k < first_[s + 1]; ++k) params += shards[k].params;
    gpu_params_ = std::max(gpu_params_, params);
  }
  for (int s = 0; s + 1 < layout_.pp; ++s) {
    // The activations the stage's last layer writes (or its successor reads), per micro-batch.
    const double elements = std::max(model_.layers[first_[s + 1] - 1].output_elements,
                                     model_.layers[first_[s + 1]].input_elements);
    if (elements <= 0)
      throw UserError("model '" + model_.name + "' gives layer '" + model_.layers[first_[s + 1] - 1].name +
                      "' no output size, so --pp cannot size the activations its stage sends");
    p2p_bytes_.push_back(static_cast<uint64_t>(std::llround(elements * micro_batch * element)));
  }
  // A DLRM file's embedding exchanges (Workload::iterate_hybrid_parallel_DLRM):
  // the forward one from the embedding's forward kernel to the first top
  // layer's, the backward one from the first top layer's last backward
  // kernel (its input gradient's) to the embedding's (HYBRID_DLRM) or the
  // iteration's end.
  if (dlrm_) {
    // A layer's last kernel of the phase (a DLRM file runs one forward kernel per layer).
    const auto kernel = [&](Phase phase, int layer) -> training::StepKernel& {
      return *std::find_if(kernels_[0].rbegin(), kernels_[0].rend(),
                           [&](const training::StepKernel& k) { return k.phase == phase && k.layer == layer; });
    };
    const int top = dlrm_->last_bottom + 1;
    if (dlrm_->forward_bytes > 0) {
      kernel(Phase::Forward, 0).exchange = kernel(Phase::Forward, top).exchange_wait =
          static_cast<int>(exchange_sizes_.size());
      exchange_sizes_.push_back(dlrm_->forward_bytes);
    }
    if (dlrm_->backward_bytes > 0) {
      const int e = static_cast<int>(exchange_sizes_.size());
      kernel(Phase::Backward, top).exchange = e;
      if (dlrm_->embedding_waits) kernel(Phase::Backward, 0).exchange_wait = e;
      exchange_sizes_.push_back(dlrm_->backward_bytes);
    }
  }
  tp_per_iteration_.assign(layout_.pp, 0);
  for (int s = 0; s < layout_.pp; ++s)
    for (const training::StepKernel& k : kernels_[s]) tp_per_iteration_[s] += k.tp_size >= 0;
  // The optimizer step: one fused elementwise kernel over the weights
  // (SGD: read weights and gradients, write weights).
  training::Layer step;
  step.name = "optimizer";
  step.kind = training::LayerKind::elementwise;
  step.forward_flops = 2.0 * static_cast<double>(gpu_params_);
  step.input_elements = 2.0 * static_cast<double>(gpu_params_);
  step.output_elements = static_cast<double>(gpu_params_);
  update_s_ = astra ? astra_file.update_s : compute_->compute(step, 1, precision_).forward_s;
  update_ = seconds(update_s_);

  const int replicas = n / layout_.pp / layout_.tp;

  // Buckets fill from the last layer back, as the backward pass makes them;
  // a single replica has no gradients to all-reduce.
  overlap_ = cfg.get(kOverlap);
  dp_algorithm_ = cfg.get(kDpAlgorithm);
  const uint64_t bucket_bytes = cfg.get(kBucketBytes);
  const uint64_t cap = overlap_ ? bucket_bytes : ~0ull;
  bucket_of_.assign(model_.layers.size(), -1);
  buckets_.resize(layout_.pp);
  uint64_t open = 0;
  for (int s = layout_.pp; s-- > 0;)
    for (int k = first_[s + 1]; replicas > 1 && k-- > first_[s];) {
      const uint64_t bytes = shards[k].gradient_bytes(precision_);
      if (bytes == 0) continue;
      std::vector<uint64_t>& mine = buckets_[s];
      if (mine.empty() || open >= cap) mine.push_back(0), open = 0;
      mine.back() += bytes;
      open += bytes;
      bucket_of_[k] = static_cast<int>(mine.size()) - 1;
    }

  choose_algorithms();
  // Groups that are not GPUs 0 to k-1 (all but the first tensor-parallel
  // group, the strided data-parallel ones) need ranks of their own.
  std::vector<std::string> used = algorithms_;
  if (!dp_algorithm_.empty()) used.push_back(dp_algorithm_);
  if ((layout_.tp > 1 && replicas > 1) || layout_.pp > 1)
    for (size_t a = 0; a < used.size(); ++a)
      if (gpu_numbered(used[a], t))
        throw UserError((a == algorithms_.size() ? "train.dp_algorithm=" : a ? "--baseline " : "--algorithm ") + used[a] + " numbers its ranks as platform '" +
                        t.name + "' numbers its GPUs, so it cannot run on the tensor-parallel groups and strided "
                        "data-parallel groups of --tp or the stages of --pp");
  // A group's fp16 or bf16 sums are checked only if exact (data_pattern.h):
  // the largest group is refused before the machine is built.
  if (const int largest = std::max({replicas, layout_.tp, exchange_sizes_.empty() ? 1 : n}); largest > 1) try {
      elements::DataPattern(opt_.seed, largest, elements::parse_dtype(opt_.dtype));
    } catch (const UserError&) {
      const int exact = precision_ == training::Precision::fp16 ? 2048 : 256;
      throw UserError("--precision " + opt_.precision + " cannot sum a group of " + std::to_string(largest) +
                      " GPUs exactly (it holds every whole number only up to " + std::to_string(exact) +
                      "), so its results could not be checked; use groups of at most " + std::to_string(exact - 1) +
                      " GPUs or --precision fp32");
    }
  // One machine for all (on Ethernet, the NetReduce job's: group_collective).
  if (!ethernet) build_machine(t, cfg, used);
  for (size_t a = 0; a < algorithms_.size(); ++a) {
    collectives_.emplace_back();
    // A group: `gpus` in rank order, all-reducing `sizes`.
    const auto group = [&](const std::vector<int>& gpus, const std::vector<uint64_t>& sizes, const std::string& kind,
                           const std::string& collective = "allreduce") {
      // Pipeline stages send as NCCL's send and receive do, on the GPUs' cores.
      return group_collective(cfg, a, gpus, sizes, kind, collective, collective == "broadcast" ? "ring" : "");
    };
    for (int t = 0; replicas > 1 && bucket_count() > 0 && t < layout_.pp * layout_.tp; ++t)
      collectives_[a].dp.push_back(group_collective(cfg, a, layout_.dp_gpus(t), buckets_[t / layout_.tp],
                                                    layout_.tp * layout_.pp > 1 ? " (data-parallel group " + std::to_string(t) + ")" : "",
                                                    "allreduce", dp_algorithm_));
    // A group's all-reduces, and its all-to-alls (NCCL's, p2p) where a workload file has any: each one
    // collective over every size, of which the kernels' tp_size picks theirs.
    const bool alltoall = tp_alltoalls();
    for (int g = 0; layout_.tp > 1 && g < n / layout_.tp; ++g) {
      const std::string what = " (tensor-parallel group " + std::to_string(g) + ")";
      collectives_[a].tp.push_back(group(layout_.tp_gpus(g), tp_sizes_, what));
      if (alltoall)
        collectives_[a].tp_alltoall.push_back(group_collective(cfg, a, layout_.tp_gpus(g), tp_sizes_, what, "alltoall", "p2p"));
      // A file's all-gathers and reduce-scatters: NCCL's ring on the GPUs' cores.
      if (const auto sizes = tp_sizes_of(training::TpCollective::allgather); !sizes.empty())
        collectives_[a].tp_allgather.push_back(group_collective(cfg, a, layout_.tp_gpus(g), sizes, what, "allgather", "ring"));
      if (const auto sizes = tp_sizes_of(training::TpCollective::reducescatter); !sizes.empty())
        collectives_[a].tp_reducescatter.push_back(
            group_collective(cfg, a, layout_.tp_gpus(g), sizes, what, "reducescatter", "ring"));
    }
    if (!exchange_sizes_.empty()) {
      std::vector<int> all(static_cast<size_t>(n));
      for (int g = 0; g < n; ++g) all[g] = g;
      collectives_[a].embedding = group_collective(cfg, a, all, exchange_sizes_, " (the embedding's all-to-alls)",
                                                   "alltoall", "p2p");
    }
    // Link 2g: GPU g to the next stage's; 2g + 1 back (a broadcast from rank 0, the sender).
    const int stage = n / layout_.pp;
    for (int g = 0; g + stage < n; ++g) {
      const std::vector<uint64_t> size{p2p_bytes_[layout_.stage_of(g)]};
      const std::string gpus = " (pipeline GPUs " + std::to_string(g) + " and " + std::to_string(g + stage) + ")";
      collectives_[a].p2p.push_back(group({g, g + stage}, size, gpus, "broadcast"));
      collectives_[a].p2p.push_back(group({g + stage, g}, size, gpus, "broadcast"));
    }
  }
  std::vector<gpu::ComputeEngine*> engines = compute_engines();
  engines.resize(n);
  for (gpu::ComputeEngine* e : engines) e->use();
  contend(cfg, ethernet ? 0 : compute_->sms());  // a RoCE host's collectives take no SMs (roce/roce_host.h)
  step_ = training::lower_step(layout_, micro_, kernels_, buckets_, bucket_of_, update_s_);
  runner_ = std::make_unique<training::GraphRunner>("train_launch", engines,
                                                    static_cast<training::GraphRunner::Owner&>(*this));
  count_comm_bytes(step_.graph, [this](const training::Graph::Node& node) {
    size_t index = static_cast<size_t>(node.size);
    return collective_of(0, node.stream, index).sizes()[index];
  });

  schema_->add({"algorithm", "", ColumnKind::Setting, "algorithm", "", 10})
      .add({"iteration", "", ColumnKind::Setting, "iteration", "", 10})
      .add({"time_us", "us", ColumnKind::Measurement, "iteration", "(us)", 12, 1})
      .add({"compute_us", "us", ColumnKind::Measurement, "compute", "(us)", 12, 1});
  if (layout_.pp > 1)
    schema_->add({"microbatches", "", ColumnKind::Setting, "micro", "", 6})
        .add({"p2p", "", ColumnKind::Measurement, "p2p", "", 6})
        .add({"p2p_us", "us", ColumnKind::Measurement, "p2p", "(us)", 12, 1})
        .add({"bubble_us", "us", ColumnKind::Measurement, "bubble", "(us)", 12, 1});
  if (layout_.tp > 1)
    schema_->add({"tp_allreduces", "", ColumnKind::Measurement, "tp ars", "", 7})
        .add({"tp_comm_us", "us", ColumnKind::Measurement, "tp comm", "(us)", 12, 1})
        .add({"tp_exposed_us", "us", ColumnKind::Measurement, "tp exposed", "(us)", 12, 1});
  if (!exchange_sizes_.empty())
    schema_->add({"alltoalls", "", ColumnKind::Measurement, "a2a", "", 4})
        .add({"a2a_comm_us", "us", ColumnKind::Measurement, "a2a comm", "(us)", 12, 1})
        .add({"a2a_exposed_us", "us", ColumnKind::Measurement, "a2a exposed", "(us)", 12, 1});
  const std::string dp = layout_.tp > 1 || !exchange_sizes_.empty() ? "dp " : "";
  schema_->add({"comm_us", "us", ColumnKind::Measurement, dp + "comm", "(us)", 12, 1})
      .add({"exposed_us", "us", ColumnKind::Measurement, dp + "exposed", "(us)", 12, 1})
      .add({"buckets", "", ColumnKind::Setting, "buckets", "", 8});
  if (algorithms_.size() > 1) schema_->add({"speedup", "", ColumnKind::Measurement, "speedup", "(x)", 8, 2});
  schema_->add({"wrong", "elements", ColumnKind::Measurement, "#wrong", "", 9});
}

TrainWorkload::~TrainWorkload() = default;

void TrainWorkload::launch(int stream, const training::GraphRunner::Instance& in, std::function<void()> done) {
  Iteration& it = *running_;
  const bool dp = stream >= step_.dp_stream && stream < step_.tp_stream;
  size_t index = static_cast<size_t>(in.size);
  GroupCollective& coll = collective_of(it.algorithm, stream, index);
  const sc_core::sc_time start = sc_core::sc_time_stamp();
  start_collective(coll, index, [this, &it, &coll, start, done = std::move(done),
                                 counted = dp && stream == step_.dp_stream && recording()] {
    const platforms::Measures m = coll.call().measures();
    it.wrong += m.wrong;
    // The links' utilisation while data-parallel group 0 reduced a bucket.
    if (counted) count_utilisation(it.algorithm, m.link_bytes, start);
    done();
  });
}

void TrainWorkload::computed(uint32_t node, const sc_core::sc_time& took) {
  Iteration& it = *running_;
  const int g = step_.graph.nodes[node].rank;
  if (step_.what[node] < 0) {
    span(g, "optimizer", took);
    return;
  }
  const size_t i = static_cast<size_t>(step_.what[node]);
  const training::StepKernel& k = kernels_[layout_.stage_of(g)][i];
  const bool backward = k.phase == Phase::Backward && !k.input_grad;
  // As long as it took: longer while collectives on the cores held SMs.
  const bool split = times_[k.layer].input_grad_after_s > 0;
  span(g, model_.layers[k.layer].name +
              (k.input_grad ? " input gradient"
               : backward   ? (split ? " weight gradient" : " backward")
               : k.recompute ? " recomputed" : "") +
              (layout_.pp > 1 ? " (" + std::to_string(k.micro) + ")" : ""),
       took);
  it.ended[g] = i + 1;
  it.busy_us[g] += us(took);
  it.last_end[g] = sc_core::sc_time_stamp();
}

void TrainWorkload::ended(int stream, const training::GraphRunner::Instance& in, const sc_core::sc_time& took) {
  Iteration& it = *running_;
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  const int tp_groups = static_cast<int>(it.tp_comm_us.size()), links = step_.dp_stream;
  if (stream < links) {
    ++it.p2p;
    it.p2p_us += us(took);
    span(layout_.gpus + layout_.tp * layout_.pp + tp_groups + stream,
         (stream % 2 == 0 ? "activations " : "gradients ") + std::to_string(step_.what[in.nodes[0]]), took);
  } else if (stream < step_.tp_stream) {
    const int t = stream - step_.dp_stream;
    it.dp_comm_us[t] += us(took);
    it.dp_end[t] = now;
    span(layout_.gpus + t, "all-reduce bucket " + std::to_string(in.size) + " (" + mib(buckets_[t / layout_.tp][in.size]) + ")", took);
  } else if (stream < step_.exchange_stream) {
    const int group = stream - step_.tp_stream;
    it.tp_comm_us[group] += us(took);
    ++it.tp_done;
    span(layout_.gpus + layout_.tp * layout_.pp + group,
         std::string(training::to_string(tp_kind_[in.size])) + " activations (" + size_label(tp_sizes_[in.size]) + ")",
         took);
    // Every GPU of the group waited for it since its kernel ended.
    for (const int g : layout_.tp_gpus(group)) {
      it.tp_wait_us += us(now - it.last_end[g]);
      it.last_end[g] = now;
    }
  } else {
    it.exchange_us += us(took);
    ++it.exchanged;
    span(layout_.gpus + layout_.tp * layout_.pp + tp_groups + links, "all-to-all embeddings (" + size_label(exchange_sizes_[in.size]) + ")",
         took);
    // A GPU whose kernels all ended before the one that waits for it was idle since the last.
    for (int g = 0; g < layout_.gpus; ++g) {
      const std::vector<training::StepKernel>& kernels = kernels_[layout_.stage_of(g)];
      const auto waiter = std::find_if(kernels.begin(), kernels.end(),
                                       [&](const training::StepKernel& k) { return k.exchange_wait == in.size; });
      if (waiter != kernels.end() && it.ended[g] == static_cast<size_t>(waiter - kernels.begin()))
        it.exchange_wait_us += us(now - it.last_end[g]);
    }
  }
}

Row TrainWorkload::iterate(size_t a, uint32_t iteration, Runner& run) {
  const int n = layout_.gpus, tp_groups = layout_.gpus / layout_.tp;
  running_ = std::make_unique<Iteration>(a);
  Iteration& it = *running_;
  begin_comm_count();
  it.t0 = sc_core::sc_time_stamp();
  it.dp_comm_us.assign(layout_.tp * layout_.pp, 0);
  it.dp_end.assign(layout_.tp * layout_.pp, it.t0);
  it.tp_comm_us.assign(layout_.tp > 1 ? tp_groups : 0, 0);
  it.busy_us.assign(n, 0);
  it.last_end.assign(n, it.t0);
  it.ended.assign(n, 0);
  runner_->start(step_.graph);
  run.run_until([&] { return runner_->done() || !collective_error(a).empty(); },
                algorithms_[a] + " iteration " + std::to_string(iteration + 1));
  if (const std::string e = collective_error(a); !e.empty()) throw UserError(e + " during " + algorithms_[a] + "'s all-reduces");
  // A GPU's compute: its stage's layers once per micro-batch; the busiest stage's.
  double compute = 0;
  for (int s = 0; s < layout_.pp; ++s) {
    double mine = 0;
    for (int k = first_[s]; k < first_[s + 1]; ++k)
      mine += times_[k].forward_s + times_[k].backward_s + times_[k].input_grad_after_s;
    mine += recompute_s_[s];
    compute = std::max(compute, mine * micro_);
  }
  compute = compute * 1e6 + us(update_);
  const double time = us(runner_->ended_at() - it.t0);
  // The bubble: each GPU's idle time until the pipeline's last kernel (or
  // all-reduce of activations) before the optimizer steps (the flush) ended,
  // on average, less its waits for those all-reduces.
  const sc_core::sc_time flushed = *std::max_element(it.last_end.begin(), it.last_end.end());
  double bubble = -it.tp_wait_us;
  for (int g = 0; g < n; ++g) bubble += us(flushed - it.t0) - it.busy_us[g];
  bubble /= n;
  double dp_comm = 0, tp_comm = 0;
  for (const double c : it.dp_comm_us) dp_comm += c;
  for (const double c : it.tp_comm_us) tp_comm += c;
  // The gradients' exposed time, on the critical path: from the flush to the
  // last gradient all-reduce's end, which the optimizer waits for; per stage
  // (its GPUs and data-parallel groups are consecutive), from its own.
  const auto dp_exposed = [&](int s, int stages) {  // stages s to s + stages - 1
    const int gpus = n / layout_.pp, groups = layout_.tp;
    const sc_core::sc_time flush = *std::max_element(it.last_end.begin() + s * gpus,
                                                     it.last_end.begin() + (s + stages) * gpus);
    const sc_core::sc_time end = *std::max_element(it.dp_end.begin() + s * groups,
                                                   it.dp_end.begin() + (s + stages) * groups);
    return end > flush ? us(end - flush) : 0.0;
  };
  Row r(schema_);
  r.set("algorithm", algorithms_[a])
      .set("iteration", static_cast<uint64_t>(iteration + 1))
      .set("time_us", time)
      .set("compute_us", compute)
      .set("comm_us", dp_comm / (layout_.tp * layout_.pp))
      .set("exposed_us", dp_exposed(0, layout_.pp))
      .set("buckets", static_cast<uint64_t>(bucket_count()))
      .set("wrong", wrong_value(it.wrong));
  // Per pipeline (a replica: its stages' tensor-parallel groups): the
  // all-reduces of activations, and its transfers and their time; per group,
  // the all-reduces' time.
  // Every GPU waits for its group's all-reduces of activations, and for the
  // embedding's all-to-alls where it waits at all: exposed, all of it.
  if (layout_.tp > 1)
    r.set("tp_allreduces", it.tp_done / static_cast<uint64_t>(layout_.replicas()))
        .set("tp_comm_us", tp_comm / tp_groups)
        .set("tp_exposed_us", it.tp_wait_us / n);
  if (!exchange_sizes_.empty())
    r.set("alltoalls", it.exchanged)
        .set("a2a_comm_us", it.exchange_us)
        .set("a2a_exposed_us", it.exchange_wait_us / n);
  if (layout_.pp > 1) {
    r.set("microbatches", static_cast<uint64_t>(micro_))
        .set("p2p", it.p2p / static_cast<uint64_t>(layout_.replicas()))
        .set("p2p_us", it.p2p_us / layout_.replicas())
        .set("bubble_us", bubble);
    for (int s = 0; s < layout_.pp; ++s) r.details["dp_exposed_stages"].push_back(dp_exposed(s, 1));
  }
  running_.reset();
  return r;
}

// A track per GPU's compute, one for each data-parallel group's all-reduces,
// one for each tensor-parallel group's, and one per direction of each pair
// of pipeline neighbours.
std::vector<std::string> TrainWorkload::timeline_tracks() const {
  const int n = layout_.gpus, tp_groups = layout_.gpus / layout_.tp;
  std::vector<std::string> tracks;
  for (int g = 0; g < n; ++g)
    tracks.push_back((layout_.pp > 1 ? "stage " + std::to_string(layout_.stage_of(g)) + ", " : "") + "gpu" + std::to_string(g) +
                     ".compute");
  for (int t = 0; t < layout_.tp * layout_.pp; ++t)
    tracks.push_back(layout_.tp * layout_.pp == 1 ? "all-reduces" : "gradients, GPUs " + gpu_list(layout_.dp_gpus(t)));
  for (int g = 0; layout_.tp > 1 && g < tp_groups; ++g) tracks.push_back("activations, GPUs " + gpu_list(layout_.tp_gpus(g)));
  for (size_t l = 0; l < collectives_[0].p2p.size(); ++l) {
    const int from = static_cast<int>(l) / 2, to = from + n / layout_.pp;
    tracks.push_back(l % 2 ? "gradients, GPU " + std::to_string(to) + " to " + std::to_string(from)
                           : "activations, GPU " + std::to_string(from) + " to " + std::to_string(to));
  }
  if (!exchange_sizes_.empty()) tracks.push_back("embedding all-to-alls");
  return tracks;
}

void TrainWorkload::print_header(std::ostream& os) const {
  const auto& t = topology();
  const int tp_groups = layout_.gpus / layout_.tp;
  double forward = 0, backward = 0, recompute = 0;
  for (const auto& x : times_) forward += x.forward_s, backward += x.backward_s + x.input_grad_after_s;
  for (const double r : recompute_s_) recompute += r;
  const std::string layout = layout_.strided ? "GPUs strided by " + std::to_string(layout_.replicas()) + " (" + gpu_list(layout_.tp_gpus(0)) +
                                            " the first, as ASTRA-sim's HYBRID_MODEL_DATA lays them out)"
                                      : "consecutive GPUs";
  os << std::fixed << std::setprecision(1) << "# incsim: training " << model_.name << " ("
     << static_cast<double>(model_.parameters()) / 1e6 << "M parameters, "
     << mib(model_.gradient_bytes(precision_)) << " of " << training::to_string(precision_) << " gradients), ";
  if (layout_.pp > 1)
    os << "pipeline parallel in " << layout_.pp << " stages of " << count_of(layout_.gpus / layout_.pp, "consecutive GPU", "consecutive GPUs")
       << ", " << (layout_.tp > 1 ? "each tensor parallel in groups of " + std::to_string(layout_.tp) + " " + layout + ", " : "")
       << "data parallel over " << count_of(layout_.replicas(), "pipeline", "pipelines") << ",";
  else if (layout_.tp > 1)
    os << "tensor parallel in " << count_of(tp_groups, "group", "groups") << " of " << layout_.tp << " " << layout
       << ", data parallel over " << count_of(tp_groups, "replica", "replicas") << ",";
  else
    os << "data parallel";
  os << " on " << layout_.gpus << " of " << machine_gpus() << " GPUs, platform " << t.name << ", seed " << opt_.seed
     << "\n# compute: " << compute_->describe() << "; batch " << opt_.batch
     << (layout_.pp > 1 ? " per pipeline in " + std::to_string(micro_) + " micro-batches, each over all layers" : " per GPU")
     << ": forward " << forward * 1e3 << " ms, backward " << backward * 1e3 << " ms";
  if (recompute > 0) os << ", recomputed forward " << recompute * 1e3 << " ms";
  os << ", optimizer " << update_.to_seconds() * 1e3 << " ms"
     << (layout_.tp > 1 && !astra_groups_ ? " (each GPU its shard: 1/" + std::to_string(layout_.tp) +
                       " of every block's split layers; norms, embeddings and the output projection whole)" : "")
     << contention_note() << "\n" << fidelity_note();
  if (layout_.tp > 1) {
    const bool alltoall = tp_alltoalls() || tp_gathers();
    os << "# activations: " << tp_per_iteration_[0]
       << (tp_gathers() ? " collectives" : alltoall ? " all-reduces and all-to-alls" : " all-reduces")
       << " per iteration in each group of " << layout_.tp << " GPUs";
    for (int s = 0; layout_.pp > 1 && s < layout_.pp; ++s)
      os << (s ? ", " + std::to_string(tp_per_iteration_[s]) + " in stage " : " in stage ") << s;
    os << " ("
       << (astra_groups_ ? std::string("the workload file's forward and input-gradient ") +
                               (alltoall ? "collectives" : "all-reduces") +
                               (recompute > 0 ? ", the forward ones again where the backward pass recomputes" : "")
                         : "Megatron: a row-split layer's output forward, a column-split layer's input gradient backward")
       << "), of";
    for (size_t k = 0; k < tp_sizes_.size(); ++k)
      os << " " << size_label(tp_sizes_[k])
         << (tp_kind_[k] == training::TpCollective::allreduce ? "" : std::string(" (") + training::to_string(tp_kind_[k]) + ")");
    os << ", each before the next kernel\n";
  }
  if (dlrm_ && !exchange_sizes_.empty()) {
    const int top = dlrm_->last_bottom + 1;
    os << "# embedding: " << count_of(exchange_sizes_.size(), "all-to-all", "all-to-alls") << " per iteration among the "
       << layout_.gpus << " GPUs, of";
    for (uint64_t b : exchange_sizes_) os << " " << size_label(b);
    os << " (the workload file's layer 0";
    if (dlrm_->forward_bytes > 0)
      os << "; forward after its kernel, layers 1-" << top - 1 << " running meanwhile, layer " << top << " waiting for it";
    if (dlrm_->backward_bytes > 0)
      os << "; backward after layer " << top << "'s kernel, layers " << top - 1 << "-1 running meanwhile, "
         << (dlrm_->embedding_waits ? "layer 0 waiting for it" : "layer 0 not waiting for it (HYBRID_DLRM_ENHANCED)");
    os << ")\n";
  }
  if (layout_.pp > 1) {
    os << "# pipeline: 1F1B (PipeDream-Flush), stage s the layers";
    for (int s = 0; s < layout_.pp; ++s) os << (s ? ", " : " ") << first_[s] << "-" << first_[s + 1] - 1;
    os << "; each micro-batch's activations to the next stage and their gradients back, of";
    for (uint64_t b : p2p_bytes_) os << " " << size_label(b);
    os << ", a 2-rank broadcast on the GPUs' cores"
       << (layout_.tp > 1 ? ", from each GPU to the one in its place in the next stage, the whole activations once its group "
                     "has all-reduced them (no scatter/gather)"
                   : "")
       << "\n";
  }
  const std::string per_group = layout_.tp > 1 ? " of " + mib(gpu_params_ * training::bytes_per_element(precision_)) +
                                              " per GPU in each group of the GPUs with the same place in theirs"
                                        : "";
  if (bucket_count() == 0)
    os << "# gradients: none to all-reduce, "
       << (layout_.replicas() == 1 ? "the model has one replica" : "the workload file all-reduces no weight gradient") << "\n";
  else
    os << "# gradients: " << count_of(bucket_count(), "all-reduce", "all-reduces") << " per iteration"
       << (layout_.pp == 1   ? per_group
           : layout_.tp == 1 ? " over the stages, each stage's among its " + std::to_string(layout_.replicas()) + " GPUs"
                      : " over the stages, each stage's among the " + std::to_string(layout_.replicas()) +
                            " GPUs in each place of its tensor-parallel groups")
       << " (" << (overlap_ ? "buckets of train.bucket_bytes, each as soon as the backward pass fills it" : "one, after the backward pass")
       << "), by "
       << (dp_algorithm_.empty() ? algorithms_[0] + (algorithms_.size() > 1 ? ", and by " + algorithms_[1] + " for the baseline" : "")
                                 : dp_algorithm_ + " in every run (train.dp_algorithm)")
       << "\n";
  // Each algorithm's first group of each kind says what it runs.
  std::set<std::string> shown;
  for (size_t a = 0; a < collectives_.size(); ++a)
    for (const auto* groups : {&collectives_[a].dp, &collectives_[a].tp, &collectives_[a].tp_alltoall,
                               &collectives_[a].tp_allgather, &collectives_[a].tp_reducescatter}) {
      if (groups->empty()) continue;
      print_collective_lines(os,
                             groups == &collectives_[a].tp_alltoall        ? "p2p (tp all-to-all)"
                             : groups == &collectives_[a].tp_allgather     ? "ring (tp all-gather)"
                             : groups == &collectives_[a].tp_reducescatter ? "ring (tp reduce-scatter)"
                                                                    : (groups == &collectives_[a].dp && !dp_algorithm_.empty() ? dp_algorithm_ : algorithms_[a]) + (layout_.tp == 1                        ? ""
                                                                                        : groups == &collectives_[a].dp ? " (dp)"
                                                                                                                        : " (tp)"),
                             *groups->front(), shown);
    }
  for (const auto& c : collectives_)
    if (c.embedding) print_collective_lines(os, "p2p (embedding all-to-all)", *c.embedding, shown);
  os << "# exposed: the communication nothing hid; " << (layout_.tp * layout_.pp > 1 ? "dp: " : "")
     << "from the flush (every GPU's last kernel" << (layout_.tp > 1 ? " or all-reduce of activations" : "")
     << ") to the last gradient all-reduce's end, which the optimizer waits for" << (layout_.pp > 1 ? " (per stage in the note)" : "")
     << (layout_.tp > 1 ? "; tp: the GPUs' mean wait for the activations" : "")
     << (exchange_sizes_.empty() ? "" : "; a2a: the GPUs' mean wait for the embedding's all-to-alls")
     << (layout_.pp > 1 ? std::string("; bubble: the GPUs' mean idle time until the pipeline's flush ends (waits for the p2p "
                               "transfers included") +
                       (layout_.tp > 1 ? ", for the activations not" : "") +
                       "), not counted as exposed; p2p: a pipeline's transfers and their summed time"
                 : "")
     << (layout_.pp > 1 && layout_.tp > 1 ? "; tp ars: a pipeline's, over its stages' groups; tp comm: a group's" : "")
     << "\n";
}

void TrainWorkload::config_json(nlohmann::ordered_json& config) const {
  config["workload"] = "train";
  config["model"] = model_.name;
  config["parameters"] = model_.parameters();
  config["batch"] = opt_.batch;
  config["precision"] = training::to_string(precision_);
  config["compute"] = compute_model();
  config["algorithm"] = algorithms_[0];
  if (algorithms_.size() > 1) config["baseline"] = algorithms_[1];
  config["gpus"] = layout_.gpus;
  config["tp"] = layout_.tp;
  config["buckets_bytes"] = layout_.pp > 1 ? nlohmann::ordered_json(buckets_) : nlohmann::ordered_json(buckets_[0]);
  if (layout_.pp > 1) {
    config["pp"] = layout_.pp;
    config["microbatches"] = micro_;
    config["p2p_bytes"] = p2p_bytes_;
  }
  if (layout_.tp > 1) config["tp_allreduce_bytes"] = tp_sizes_;
  if (tp_alltoalls()) config["tp_alltoall"] = tp_alltoall_;
  if (tp_gathers()) {
    nlohmann::ordered_json kinds = nlohmann::ordered_json::array();
    for (const auto k : tp_kind_) kinds.push_back(training::to_string(k));
    config["tp_collective"] = kinds;
  }
  if (!exchange_sizes_.empty()) config["embedding_alltoall_bytes"] = exchange_sizes_;
  config["iterations"] = opt_.iterations;
  config["warmup"] = opt_.warmup;
}

size_t TrainWorkload::bucket_count() const {
  size_t n = 0;
  for (const auto& b : buckets_) n += b.size();
  return n;
}

// Kernels and buckets done, of all.
bool TrainWorkload::tp_gathers() const {
  return std::any_of(tp_kind_.begin(), tp_kind_.end(), [](training::TpCollective k) {
    return k == training::TpCollective::allgather || k == training::TpCollective::reducescatter;
  });
}

std::vector<uint64_t> TrainWorkload::tp_sizes_of(training::TpCollective kind) const {
  std::vector<uint64_t> sizes;
  for (size_t k = 0; k < tp_sizes_.size(); ++k)
    if (tp_kind_[k] == kind) sizes.push_back(tp_sizes_[k]);
  return sizes;
}

GroupCollective& TrainWorkload::collective_of(size_t algorithm, int stream, size_t& size) {
  Groups& c = collectives_[algorithm];
  if (stream < step_.dp_stream) return *c.p2p[stream];
  if (stream < step_.tp_stream) return *c.dp[stream - step_.dp_stream];
  if (stream < step_.exchange_stream) return tp_collective(algorithm, stream - step_.tp_stream, size);
  return *c.embedding;
}

GroupCollective& TrainWorkload::tp_collective(size_t algorithm, int group, size_t& size) {
  Groups& c = collectives_[algorithm];
  // An all-gather or reduce-scatter is its index among its kind's sizes.
  switch (tp_kind_[size]) {
    case training::TpCollective::alltoall: return *c.tp_alltoall[group];
    case training::TpCollective::allgather: size = static_cast<size_t>(tp_local_[size]); return *c.tp_allgather[group];
    case training::TpCollective::reducescatter:
      size = static_cast<size_t>(tp_local_[size]);
      return *c.tp_reducescatter[group];
    default: return *c.tp[group];
  }
}

double TrainWorkload::done_fraction() const { return running_ ? comm_fraction() : -1; }

}  // namespace incsim::tb
