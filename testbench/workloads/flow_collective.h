#pragma once
// The collective workload at --fidelity flow (docs/flow.md): the same
// registry, algorithms, programs and platforms as CollectiveWorkload, with
// no packet-level block built. Its program is set up as flows by
// platforms::FlowCall; nccl-tests' columns, with #wrong "-": no element
// values travel. On a share of a platforms::FlowPlatform (training's
// groups, jobs) it is a GroupCollective whose sizes start in SystemC's time.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectives/algorithm.h"
#include "elements/data_pattern.h"
#include "platforms/flow_call.h"
#include "gpu/compute_engine.h"
#include "platforms/gpu_fabric.h"
#include "platforms/machine.h"
#include "topology/topology.h"
#include "workload.h"

namespace incsim::tb {

// Refuses the options that show what only packet level builds (--vcd,
// --dump-platform, and where `timeline`, a timeline of the blocks).
void refuse_packet_outputs(const Options& o, bool timeline);

class FlowCollectiveWorkload : public GroupCollective {
 public:
  // What a collective holds of a platform it shares with others: the
  // platform, its GPUs in rank order and their compute engines.
  struct Share {
    platforms::FlowPlatform* platform;
    std::vector<int> gpus;
    std::vector<gpu::ComputeEngine*> engines;
    std::vector<uint64_t> sizes = {};  // its message sizes (a training group's); empty: --sizes
  };
  // Without a share it makes the platform's graph from the options.
  // `fixed`: the program to run, not the algorithm's (one of those an
  // algorithm that sets up a program per size chose).
  FlowCollectiveWorkload(const Options& o, Config& cfg, const Share* share = nullptr,
                         const collectives::Synthesis* fixed = nullptr);
  ~FlowCollectiveWorkload() override;

  platforms::Machine* machine() override { return nullptr; }
  void print_header(std::ostream& os) const override;
  size_t points() const override { return sizes_.size(); }
  double point_weight(size_t i) const override { return static_cast<double>(sizes_[i]); }
  double done_fraction() const override;
  std::vector<Row> run_point(size_t i, Runner& run, std::ostream& notes) override;
  void config_json(nlohmann::ordered_json& config) const override;
  sc_core::sc_time default_stall_timeout() const override { return sc_core::sc_time(1, sc_core::SC_SEC); }
  void print(const std::string& what, std::ostream& os) const override;
  // On a share: point i starts now (platforms::FlowCall::start); finish(i) gives the row.
  void start(size_t i, std::function<void()> on_done) override;
  Row finish(size_t i, std::ostream& notes) override;
  std::string error() const override { return ""; }
  const std::vector<uint64_t>& sizes() const override { return sizes_; }
  const Options& options() const override { return opt_; }
  // A program on the GPUs' cores holds a thread block per channel, as at packet level.
  int sm_blocks() const override { return running_choice_ ? running_choice_->sm_blocks() : call_->sm_blocks(); }
  std::vector<gpu::ComputeEngine*> compute_engines() const override { return engines_; }
  // On a share: its flows' time passed so far, ns, which the stall detector watches move.
  uint64_t progress() override;

 private:
  Row row(size_t i, const flow::Executor::Result& res, std::ostream& notes) const;
  Options opt_;
  Config& cfg_;
  std::vector<uint64_t> sizes_;
  elements::DType dtype_;
  elements::RedOp redop_;
  topo::Topology own_graph_;  // without a share
  flow::FlowMachine own_machine_;
  const topo::Topology* graph_ = nullptr;
  const flow::FlowMachine* machine_ = nullptr;
  std::unique_ptr<collectives::Algorithm> file_algorithm_;
  const collectives::Algorithm* algorithm_ = nullptr;
  std::unique_ptr<platforms::FlowCall> call_;
  // While a progress line may be due: the running point's share of its
  // operations issued (CoresFlows::run's progress).
  const std::function<double()>* fraction_ = nullptr;
  // Where the algorithm sets up a program per size (nccl): each size's
  // choice, its note, and a workload per choice that runs it; this one's
  // program is the header's (the algorithm's own synthesis).
  struct Choice {
    std::string name, note;
    FlowCollectiveWorkload* runs = nullptr;
  };
  void per_size(collectives::Tuner& tuner, const Share* share);
  std::vector<Choice> choices_;  // [size]
  std::map<std::string, std::unique_ptr<FlowCollectiveWorkload>> by_choice_;
  FlowCollectiveWorkload* running_choice_ = nullptr;
  // On a share: its GPUs' compute engines.
  std::vector<gpu::ComputeEngine*> engines_;
};

}  // namespace incsim::tb
