#pragma once
// Training iterations, data parallel (issue 22; docs/training.md): every GPU
// of the platform (or --gpus N) holds the model and a --batch of samples.
// An iteration runs the forward pass and the backward pass layer by layer on
// each GPU's compute engine (gpuN.compute), all-reduces the gradients as
// they become ready, in buckets of train.bucket_bytes (PyTorch DDP's 25 MiB;
// 0: one per layer, as Klenk and MultiTree overlap) or once after the
// backward pass (train.overlap false), and ends with the optimizer step.
// The all-reduces are real collectives on the machine, with real data and
// #wrong, issued one after another as NCCL issues a communicator's
// collectives on one stream. --baseline runs each iteration again with
// another algorithm on the same machine, for the speed-up.
//
// --tp N adds Megatron-LM's tensor parallelism (Shoeybi et al. 2019, §3):
// groups of N consecutive GPUs each run 1/N of every transformer block and
// all-reduce its activations after each row-split layer's forward kernel and
// each column-split layer's backward kernel, the next kernel waiting for it;
// the gradients, 1/N of the blocks' on each GPU, are all-reduced among the
// GPUs with the same place in their group (data parallel over the replicas).
// Every group is a collective on its own share of the one machine. An
// ASTRA-sim model-parallel file (HYBRID_TRANSFORMER, HYBRID_DATA_MODEL,
// MODEL) runs its own forward and input-gradient collectives in these groups;
// a HYBRID_MODEL_DATA file in strided groups (GPUs k, k + D, k + 2D, ...,
// with D = GPUs / N), its data-parallel groups D consecutive GPUs; a
// HYBRID_TRANSFORMER_FWD_IN_BCKWD file reruns the forward kernels (and their
// all-reduces) from a checkpoint before the backward kernel of the layer
// that initiates it (training::Layer::recompute_from).
//
// An ASTRA-sim HYBRID_DLRM or HYBRID_DLRM_ENHANCED file (training::AstraDlrm)
// runs data parallel over all GPUs, and its embedding (layer 0) exchanges
// its lookups among all of them, NCCL's all-to-all (p2p) on a collective of
// its own: after the embedding's forward kernel, without waiting, the
// bottom layers' kernels running meanwhile and the first top layer's
// waiting for it; after the first top layer's backward kernel, the bottom
// layers' running meanwhile and, for HYBRID_DLRM, the embedding's waiting
// for it (Workload::iterate_hybrid_parallel_DLRM).
//
// --pp N adds pipeline parallelism (PipeDream-Flush's 1F1B, Narayanan et al.
// 2021, §2.2): N stages over consecutive blocks of GPUs, stage s the layers
// [s L / N, (s + 1) L / N) of any model, the batch cut into
// train.microbatches; each stage runs its warm-up forwards, then one forward
// and one backward in turn, then its cool-down backwards, and sends each
// micro-batch's activations to the next stage and their gradients back to
// the previous one: a 2-rank broadcast program on the cores of the two GPUs.
// Each stage's GPUs (pipelines side by side) all-reduce that stage's
// gradients among themselves.
//
// --pp and --tp together lay the GPUs out as Megatron-LM does (Narayanan et
// al. 2021, §3; its initialize_model_parallel numbering): GPU = stage x
// (GPUs / pp) + replica x tp + place, so tensor-parallel groups are
// consecutive GPUs as under --tp alone, stages consecutive blocks as under
// --pp alone. Each stage's layers are split over its groups as --tp splits
// them; every GPU sends a micro-batch's whole activations to the GPU in its
// place of the next stage once its group has all-reduced them (Megatron
// without §4.1's scatter/gather); data-parallel group (stage, place)
// all-reduces that stage's shards' gradients.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/compute_engine.h"
#include "training/astra_workload.h"
#include "training/compute.h"
#include "training/graph_runner.h"
#include "training/step_graph.h"
#include "training/model.h"
#include "training_workload.h"

namespace incsim::tb {

class TrainWorkload : public TrainingWorkload, private training::GraphRunner::Owner {
 public:
  TrainWorkload(const Options& o, Config& cfg);
  ~TrainWorkload() override;

  void print_header(std::ostream& os) const override;
  void config_json(nlohmann::ordered_json& config) const override;
  double done_fraction() const override;  // bytes the iteration's communications moved, of all

 private:
  struct Iteration;
  // Runs one iteration of `algorithm` (index into collectives_), returns its row.
  Row iterate(size_t a, uint32_t iteration, Runner& run) override;
  // A track per GPU's compute, then each data-parallel group's gradient
  // all-reduces, each tensor-parallel group's, each pipeline link's.
  std::vector<std::string> timeline_tracks() const override;
  size_t bucket_count() const;  // all stages'

  // The graph runner's owner: starts a stream's collective, measures what ended.
  void launch(int stream, const training::GraphRunner::Instance& in, std::function<void()> done) override;
  void computed(uint32_t node, const sc_core::sc_time& took) override;
  void ended(int stream, const training::GraphRunner::Instance& in, const sc_core::sc_time& took) override;
  // An algorithm's collectives: one per data-parallel group (none with a
  // single replica), one per tensor-parallel group (none without --tp), and
  // under --pp two per pair of neighbouring GPUs of a pipeline: link 2g
  // carries GPU g's activations to g + gpus / pp, link 2g + 1 the gradients back.
  struct Groups {
    std::vector<std::unique_ptr<GroupCollective>> dp, tp, p2p;
    std::vector<std::unique_ptr<GroupCollective>> tp_alltoall;  // a workload file's ALLTOALLs, per tp group
    // Its ALLGATHERs and REDUCESCATTERs, per tp group, each over only its own sizes.
    std::vector<std::unique_ptr<GroupCollective>> tp_allgather, tp_reducescatter;
    std::unique_ptr<GroupCollective> embedding;                 // a DLRM file's all-to-alls, among all GPUs
  };

  training::Model model_;
  training::Precision precision_;
  std::unique_ptr<training::ComputeModel> compute_;
  // The GPUs taking part (the platform's first), per tensor-parallel group
  // (strided: ASTRA-sim's HYBRID_MODEL_DATA), and the pipeline stages.
  training::Layout layout_;
  bool astra_groups_ = false;                // the groups are an ASTRA-sim file's model-parallel ones
  int micro_ = 1;                            // micro-batches per iteration
  std::vector<int> first_;                   // [stage]: its first layer; [pp]: the layer count
  std::vector<uint64_t> p2p_bytes_;          // [stage s]: activations from s to s + 1, per micro-batch
  std::vector<training::LayerTimes> times_;  // per layer, on one GPU (its shard under --tp), per micro-batch
  std::vector<double> recompute_s_;          // [stage]: its forward kernels run again, per micro-batch
  std::vector<std::vector<training::StepKernel>> kernels_;  // [stage], in order
  std::vector<uint64_t> tp_sizes_;           // bytes of the activation all-reduces
  std::vector<bool> tp_alltoall_;            // [tp size]: an all-to-all of those bytes instead (ASTRA-sim's ALLTOALL)
  bool tp_alltoalls() const { return std::find(tp_alltoall_.begin(), tp_alltoall_.end(), true) != tp_alltoall_.end(); }
  // [tp size]: the collective it is (an ASTRA-sim file's), and its index
  // among the sizes of its kind where that kind's collectives take only
  // theirs (all-gathers, reduce-scatters; the others take every size).
  std::vector<training::TpCollective> tp_kind_;
  std::vector<int> tp_local_;
  bool tp_gathers() const;  // any all-gather or reduce-scatter
  // The sizes of one kind, in the collectives' order.
  std::vector<uint64_t> tp_sizes_of(training::TpCollective kind) const;
  // Group `group`'s collective of activation size `size`, which becomes
  // its index in that collective's sizes.
  GroupCollective& tp_collective(size_t algorithm, int group, size_t& size);
  // What runs on graph stream `stream` of algorithm `algorithm`; `size` becomes its index in that collective's sizes.
  GroupCollective& collective_of(size_t algorithm, int stream, size_t& size);
  std::optional<training::AstraDlrm> dlrm_;  // an ASTRA-sim DLRM file's embedding exchanges
  std::vector<uint64_t> exchange_sizes_;     // [all-to-all of the iteration]: its bytes, forward first
  std::vector<int> tp_per_iteration_;        // [stage]: a group's activation all-reduces per iteration
  uint64_t gpu_params_ = 0;                  // the weights one GPU holds
  double update_s_ = 0;                      // the optimizer step
  sc_core::sc_time update_;
  std::vector<std::vector<uint64_t>> buckets_;  // [stage]: bytes, in the order they are reduced
  std::vector<int> bucket_of_;               // [layer]: its bucket in its stage, -1 for a layer without weights
  bool overlap_ = true;
  std::string dp_algorithm_;  // train.dp_algorithm; empty: each run's own
  std::vector<Groups> collectives_;          // [algorithm]
  training::StepGraph step_;  // an iteration as one graph
  std::unique_ptr<training::GraphRunner> runner_;
  std::unique_ptr<Iteration> running_;
};

}  // namespace incsim::tb
