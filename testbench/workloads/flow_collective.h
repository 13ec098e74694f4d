#pragma once
// The collective workload at --fidelity flow (docs/flow.md): the same
// registry, algorithms, programs and platforms as CollectiveWorkload, with
// no packet-level block built. Each size's program runs on the GPUs' cores
// (flow/cores_flows.h) or the NICs' schedule tables (flow/nic_flows.h) as
// flows over the platform's graph; nccl-tests' columns, with #wrong "-": no
// element values travel. On a share of a platform (training's groups) it is
// a GroupCollective: a size runs as flows the first time it starts, alone
// on the network, and ends that long after in simulated time.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectives/algorithm.h"
#include "core/process.h"
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

class FlowCollectiveWorkload;
// The collectives in flight on one flow platform (training's groups) on
// each link, so that a collective can tell that it ran while another
// group's used a link of theirs, which flows do not see (each runs alone).
struct FlowOverlap {
  std::vector<std::vector<FlowCollectiveWorkload*>> running;  // [2 x graph link + direction]
  uint64_t collectives = 0, shared = 0;  // collectives ended; those that ran beside another on a link of theirs
  double ns = 0, shared_ns = 0;          // their flows' time
};

class FlowCollectiveWorkload : public GroupCollective {
 public:
  // What a collective holds of a platform it shares with others: the
  // platform's flow machine (its graph, made with `defaults`), its GPUs in
  // rank order and their compute engines; the flow network of its
  // collectives (below).
  struct Share {
    const flow::FlowMachine* machine;
    platforms::PlatformDefaults defaults;
    std::vector<int> gpus;
    std::vector<gpu::ComputeEngine*> engines;
    FlowOverlap* overlap;
    // The flow network of the platform's collectives, whose graph routes
    // them all; whether their starts share it (else each runs alone).
    platforms::SharedFlows* shared = nullptr;
    bool share_links = true;
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
  // On a share: point i ends its flows' time after now (the first start of
  // its size runs them), or on a shared network when its flows end there;
  // finish(i) gives the row.
  void start(size_t i, std::function<void()> on_done) override;
  Row finish(size_t i, std::ostream& notes) override;
  std::string error() const override { return ""; }
  const std::vector<uint64_t>& sizes() const override { return sizes_; }
  const Options& options() const override { return opt_; }
  // A program on the GPUs' cores holds a thread block per channel, as at packet level.
  int sm_blocks() const override { return call_->sm_blocks(); }
  std::vector<gpu::ComputeEngine*> compute_engines() const override { return engines_; }
  // On a share: its flows' time passed so far, ns, which the stall detector watches move.
  uint64_t progress() override;

 private:
  // Size i's flows, run once.
  const flow::Executor::Result& result(size_t i, const flow::Executor::Progress& progress = {});
  Row row(size_t i, const flow::Executor::Result& res, std::ostream& notes) const;
  // Starts point i on the shared network now.
  void share(size_t i);
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
  std::map<uint64_t, flow::Executor::Result> results_;  // by size
  // Where the algorithm sets up a program per size (nccl): each size's
  // choice, its note, and a workload per choice that runs it; this one's
  // program is the header's (the algorithm's own synthesis).
  struct Choice {
    std::string name, note;
    FlowCollectiveWorkload* runs = nullptr;
  };
  void per_size(collectives::Tuner& tuner);
  std::vector<Choice> choices_;  // [size]
  std::map<std::string, std::unique_ptr<FlowCollectiveWorkload>> by_choice_;
  const FlowCollectiveWorkload* running_choice_ = nullptr;
  // On a share: its GPUs' compute engines, and what ends the running point.
  std::vector<gpu::ComputeEngine*> engines_;
  Wakeup end_;
  bool ender_ = false;  // the process that ends a point, made at the first start
  Delayed launch_{"nccl_launch"};  // on a shared network: a point's start after NCCL's fixed cost
  std::function<void()> on_done_;
  FlowOverlap* overlap_ = nullptr;
  const flow::Executor::Result* running_ = nullptr;  // the running point's flows
  platforms::SharedFlows* shared_ = nullptr;  // where its starts share the network
  flow::Executor::Result last_;  // on a shared network: the last point's flows
  bool beside_ = false;  // it ran while another group's used a link of its
  sc_core::sc_time started_, passed_;  // the running point's start (while on_done_), the ended points' time
};

// A platform at --fidelity flow, with no block built: its graph, what its
// links and switches pay as flows (made with `defaults`), its compute
// engines where a workload makes them (training's), the collectives in
// flight on its links, and the flow network they share, if they do.
struct FlowPlatform {
  FlowPlatform(const topo::Topology& t, Config& cfg, const platforms::PlatformDefaults& d, bool share_links);
  FlowPlatform(const FlowPlatform&) = delete;  // the machine points at the graph
  // A share of it for a collective on `gpus` (no compute engines).
  FlowCollectiveWorkload::Share share(const std::vector<int>& gpus) {
    return {&machine, defaults, gpus, {}, &overlap, shared.get(), share_links};
  }
  topo::Topology graph;
  flow::FlowMachine machine;
  platforms::PlatformDefaults defaults;
  std::vector<std::unique_ptr<gpu::ComputeEngine>> engines;
  FlowOverlap overlap;
  // One graph routes every group's collectives, sharing the network or not
  // (a graph per group holds the whole cluster: 14 GB for GPT-3 on 512 nodes).
  std::unique_ptr<platforms::SharedFlows> shared;
  bool share_links;
};

}  // namespace incsim::tb
