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
#include "flow/cores_flows.h"
#include "flow/nic_flows.h"
#include "platforms/bounds.h"
#include "gpu/compute_engine.h"
#include "platforms/gpu_fabric.h"
#include "platforms/machine.h"
#include "topology/topology.h"
#include "workload.h"

namespace incsim::tb {

// Refuses the options that show what only packet level builds (--vcd,
// --dump-platform, and where `timeline`, a timeline of the blocks).
void refuse_packet_outputs(const Options& o, bool timeline);

inline const Param<bool> kShareLinks{
    "flow.share_links", true, Range::none(),
    "flows: training's collectives that run at once share the links on one flow network in step with the "
    "iteration, a collective simulated as flows only where it meets another (false: a group's size runs once, "
    "alone, and the row counts the collectives that ran beside another group's; docs/flow.md)"};

// One flow network that a platform's collectives share (flow.share_links),
// its time SystemC's: a collective's flows start at the SystemC time it
// starts and meet the others' on their links, as packets do.
class SharedFlows {
 public:
  explicit SharedFlows(const flow::FlowMachine& m);
  flow::SharedNetwork& network() { return net_; }
  // Starts a message of `bytes` of e's program (made on network()) now,
  // `alone` its run alone (flow::SharedNetwork::start); `done` runs when it
  // ends, from inside the network's events (it must not start another).
  void start(flow::Executor& e, uint64_t bytes, const flow::Executor::Result& alone, flow::Executor::Done done);

 private:
  // Brings the network to SystemC's now, and frees the runs that are over.
  void sync();
  // Wakes at the network's next event.
  void schedule();
  flow::SharedNetwork net_;
  Wakeup wake_;
};

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
    SharedFlows* shared = nullptr;
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
  int sm_blocks() const override { return sm_blocks_; }
  std::vector<gpu::ComputeEngine*> compute_engines() const override { return engines_; }
  // On a share: its flows' time passed so far, ns, which the stall detector watches move.
  uint64_t progress() override;

 private:
  void nic_tables(collectives::Synthesis& synthesis, const std::vector<int>& gpus, const platforms::PlatformDefaults& d);
  void copy_engines(collectives::Program& program, const collectives::Site& site, const platforms::PlatformDefaults& d,
                    const std::vector<int>& gpus);
  void reduction_tables(const collectives::Program& p, const collectives::Site& site,
                        const platforms::PlatformDefaults& d);
  // Klenk's Little's-law quantities of the graph, as packet level measures them.
  platforms::LittleLaw little_law(const platforms::PlatformDefaults& d) const;
  // The bound time (platforms::program_bound_us), with or without the busiest link between switches.
  // The header's note where push's waves outgrow the tables (Klenk §IV-F1, §VI-D).
  void print_push_window(std::ostream& os, uint64_t bytes) const;
  double bound_us(uint64_t bytes, bool with_links = true) const;
  // links_ from the program's traffic: fabric and net are its packets on each fabric.
  void bound_links(const std::vector<int>& gpus, platforms::WirePacket fabric, platforms::WirePacket net);
  // Size i's flows, run once.
  const flow::Executor::Result& result(size_t i, const flow::Executor::Progress& progress = {});
  Row row(size_t i, const flow::Executor::Result& res, std::ostream& notes) const;
  // Starts point i on the shared network now.
  void share(size_t i);
  // A point's time on the GPUs, ns: NCCL's fixed cost (nccl.launch), then its flows.
  double gpu_ns(const flow::Executor::Result& res) const;

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
  std::unique_ptr<flow::Executor> flows_;
  const flow::NicFlows* nic_ = nullptr;  // flows_, where the NICs run the program
  const char* copy_links_ = nullptr;      // where the copy engines run it: what its bound's links carry
  size_t pxn_relays_ = 0;
  collectives::ProtocolBySize by_size_;  // the cores' thresholds, where the program picks its protocol by size
  collectives::NcclSoftware software_;    // nccl.launch: NCCL's costs around the steps
  int sm_blocks_ = 0;  // the NICs' tables take none
  bool classes_auto_ = false;  // flow.channel_classes=auto turned the classes on
  // The bound (platforms/bounds.h): a cluster's busbw, or a GPU's payload bandwidth.
  double endpoint_GBps_ = 0;
  platforms::LinkBound links_;
  std::string cluster_note_;  // empty off a cluster
  // The reduction tables' Little's-law sizing, as packet level prints it
  // where an algorithm reduces in the NVSwitches off a cluster; else empty.
  std::string sizing_;
  // Push's waves in flight per GPU (waves x wave_bytes), the network's table
  // bytes and switch ports: Klenk §IV-F1 keeps the first within the second.
  uint64_t push_window_ = 0, table_bytes_ = 0;
  int table_ports_ = 0;
  bool tables_below_c_min_ = false;  // push's tables below Eq. (2)'s C_min, which sizing_ says
  // Packed trees' algbw bound (Blink's) and what it is; 0 and empty elsewhere.
  double algbw_bound_GBps_ = 0;
  std::string bound_note_, trees_text_;  // trees_text_: --print-trees' (Blink's)
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
  SharedFlows* shared_ = nullptr;  // where its starts share the network
  flow::SharedNetwork* routes_ = nullptr;  // on a share: the network whose graph routes it
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
  std::unique_ptr<SharedFlows> shared;
  bool share_links;
};

}  // namespace incsim::tb
