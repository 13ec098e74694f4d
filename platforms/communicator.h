#pragma once
// The communicator (docs/architecture.md, "One way to run a program"): the
// GPUs of a machine that run collectives together, as NCCL's communicator
// groups its ranks. It sets an algorithm's program up on the engines its
// operations name (the GPUs' cores, their copy engines, the NICs' schedule
// tables), makes its in-network groups with the fabrics' owners (the
// fabric manager's multicast windows, SHARP's aggregation manager,
// NetReduce's controller on a RoCE cluster), and starts it per message
// size. The collective workload, jobs, training, Chakra traces and an
// sc_main of one's own start collectives this way.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectives/algorithm.h"
#include "elements/data_pattern.h"
#include "collectives/nccl.h"
#include "core/process.h"
#include "collectives/program_synthesis.h"
#include "core/config.h"
#include "flow/executor.h"
#include "gpu/collective.h"
#include "gpu/copy_engine.h"
#include "nic/scheduled_collective.h"
#include "bounds.h"
#include "platform.h"

namespace incsim::platforms {

// NCCL 2.12 turned PXN on by default (NCCL_PXN_DISABLE=0; NCCL's environment
// variables documentation, and NVIDIA's blog "Doubling all2all Performance
// with NVIDIA Collective Communication Library 2.12", 2022).
inline const Param<bool> kClusterPxn{
    "cluster.pxn", true, Range::none(),
    "a GPU's transfer to a GPU on another rail of another node goes over NVLink to its node's GPU on that rail, "
    "whose adapter sends it (NCCL's PXN, on by default since NCCL 2.12: NCCL_PXN_DISABLE=0); false: through "
    "its own adapter and the spines"};

// What one run of a collective measured: nccl-tests' row (time, #wrong,
// the bound and the busbw factor) and what a bus bandwidth hides for
// in-network designs (bytes per link end, the reduction tables' events,
// packets and their latency), over the run.
struct Measures {
  double time_us = 0;
  uint64_t wrong = 0;
  double bound_us = 0, busbw_factor = 0;
  std::string redop;
  std::vector<uint64_t> link_bytes;  // [link end of the machine]
  GpuMachine::TableTotals tables;
  uint64_t packets = 0;
  double latency_ns_sum = 0;
  // On a cluster: the busiest link direction inside the nodes (NVLink) and
  // between them, as a fraction of the time; -1 elsewhere.
  double nvlink_busiest = -1, network_busiest = -1;
  // A link direction that carried `bytes` at `bw_GBps` during the run, in
  // the nodes or between them (joins_nodes), for the two above: the first
  // makes both 0.
  void count_busy(bool network, double bytes, double bw_GBps) {
    if (nvlink_busiest < 0) nvlink_busiest = network_busiest = 0;
    double& b = network ? network_busiest : nvlink_busiest;
    b = std::max(b, bytes / (bw_GBps * time_us * 1e3));
  }
  // As flows: the run, whose flows stand for the packets and elements above (null at packet level).
  const flow::Executor::Result* flows = nullptr;
  // NetReduce's RoCE hosts at packet level (netreduce_call.h): the frames
  // they sent per host, Gb/s, what loss cost, and the packets' link hops.
  struct Roce {
    double throughput_Gbps = 0;
    uint64_t lost = 0, icrc_drops = 0, retransmitted = 0, timeouts = 0, first_lost = 0, resent = 0, packet_hops = 0;
  };
  std::optional<Roce> roce;
  // Where the algorithm sets up a program per size (TunedCall): the size's choice.
  std::string choice;
};

// On a cluster: whether link k of t, on fabric `fabric` (an index into
// Machine::fabric_names()), is the network's or a GPU's link to its
// adapter rather than an NVLink.
bool joins_nodes(const topo::Topology& t, size_t k, size_t fabric);

// The header's NCCL lines at either fidelity: the protocol by size (where
// the program picks it), NCCL's software costs, PXN's relays.
void print_nccl_lines(std::ostream& os, const collectives::Program& p, const collectives::ProtocolBySize& by_size,
                      const collectives::NcclSoftware& software, size_t pxn_relays);

// While a run alone (Call::run_alone) runs as flows: its share done, which
// the run's progress callback gives (Call::done_fraction).
class AloneShare {
 public:
  // `progress` as the run calls it, keeping the share while it does.
  flow::Executor::Progress around(const flow::Executor::Progress& progress) {
    if (!progress) return {};
    return [this, &progress](const std::function<double()>& share, double now_ns) {
      share_ = &share;
      progress(share, now_ns);
      share_ = nullptr;
    };
  }
  double operator()() const { return share_ ? (*share_)() : -1; }

 private:
  const std::function<double()>* share_ = nullptr;
};

// A collective set up on a communicator's GPUs (Communicator::launch), at
// either fidelity: CollectiveCall on the machine's engines at packet level,
// FlowCall (flow_call.h) as flows. start() begins a message of `bytes`
// now, in SystemC's time; on_done follows when every rank has finished;
// measures() then says what it did (as flows: the time and the bound; no
// elements travel, no packets).
class Call {
 public:
  virtual ~Call() = default;
  virtual void start(uint64_t bytes, std::function<void()> on_done) = 0;
  // As flows: a message of `bytes` runs alone now, outside SystemC's time
  // (measures() then gives its row), progress told as it goes. False at
  // packet level, whose blocks run in SystemC's time (start()).
  virtual bool run_alone(uint64_t bytes, const flow::Executor::Progress& progress) { return false; }
  // Whether the last start has ended; why it failed, if it did (a block's error).
  virtual bool done() const = 0;
  virtual std::string error() const { return ""; }
  virtual Measures measures() const = 0;
  // A row's notes on the last start, measured `m`: what the switches'
  // tables did (packet level), its flows, classes and passes (flows).
  virtual void note(std::ostream& notes, const Measures& m) const = 0;
  virtual const collectives::Program& program() const = 0;
  // Its operator's name, "none" where nothing is reduced (nccl-tests' redop column).
  virtual std::string redop() const = 0;
  // What --print-schedule and --print-trees show: the NICs' tables (or
  // null), Blink's trees or a DGX-1's rings (or empty).
  virtual const collectives::Schedule* nic_schedule() const = 0;
  virtual const std::string& trees_text() const = 0;
  // Payload bandwidth the bound assumes per GPU (or algbw, with trees).
  virtual double endpoint_GBps() const = 0;
  // SHARP's aggregation manager admitted its groups (a cluster's network switches aggregate its pushes).
  virtual bool aggregates_in_sharp() const { return false; }
  // The running start's share done (as flows, while a run alone calls its
  // progress), -1 where not known.
  virtual double done_fraction() const { return -1; }
  // Its starts' time so far, ns, where no block's progress shows it moving (flows); else 0.
  virtual uint64_t progress_ns() const { return 0; }
  virtual void trace(sc_core::sc_trace_file*) const {}
  // The analytical bound on a size's time, us (DESIGN.md, "Reporting and
  // bounds"): what the busiest GPU must move over what its links carry,
  // or with_links, the busiest link between switches if that takes longer.
  virtual double bound_us(uint64_t bytes, bool with_links = true) const = 0;
  // The header's lines: the bound and where it comes from (and what it
  // allows `name` in busbw at `bytes`), and what the engines were set up with.
  virtual void describe(std::ostream& os, uint64_t bytes, const std::string& name) const = 0;
  // As flows, the header's "# fidelity:" line: what the flows model of the engine.
  virtual void describe_fidelity(std::ostream&) const {}
  // Thread blocks it holds on each GPU's SMs while it runs (gpu::Collective::sm_blocks).
  virtual int sm_blocks() const = 0;
};

// A program set up on a communicator's GPUs and engines at packet level,
// run once per message size (or the run failed: error()).
// How the NICs run a synthesis's tables, at packet level and as flows:
// message-based flow control or not (nic.flow_control; packed trees never),
// the lockstep NOP's step estimate, and the payload bandwidth per GPU that
// bounds it, from `unacked_GBps` (a GPU's links less header flits, no
// acknowledgements) for packets of max_payload and header bytes.
struct NicSetup {
  bool message = false;
  nic::Interfaces interfaces;  // nic.interface_choice, nic.interface_buffer_messages
  collectives::StepEstimate estimate{};
  double endpoint_GBps = 0;
};
NicSetup nic_setup(const topo::Topology& t, Config& cfg, const collectives::Synthesis& s, double unacked_GBps,
                   uint32_t max_payload, uint32_t header);

// The copy engines' wave controller and issue order as a run sets them
// (gpu.copy_engine.*), at packet level and as flows, for a program that
// uses the switches by `innet` (none: unicast puts) on graph t, whose
// switch ports hold `table_bytes` of reduction table in all; `ll` and `gc`
// size the order window, `f` is the GPUs' packets. Throws UserError for a
// bad key or a wave that cannot fit.
gpu::WaveParams copy_waves(Config& cfg, const topo::Topology& t, std::optional<collectives::InNetMethod> innet,
                           uint64_t table_bytes, const LittleLaw& ll, const gpu::GpuConfig& gc,
                           const net::PacketFormat& f);

class CollectiveCall : public Call {
 public:
  ~CollectiveCall() override;
  void start(uint64_t bytes, std::function<void()> on_done) override;
  bool done() const override { return done_; }
  std::string error() const override { return engines_->error(); }
  Measures measures() const override;
  // Where the program reduces in the switches' tables, what they did.
  void note(std::ostream& notes, const Measures& m) const override;
  std::string redop() const override { return engines_->redop(); }
  const collectives::Program& program() const override { return program_; }
  const collectives::Schedule* nic_schedule() const override {
    return scheduled_ ? &scheduled_->schedule() : nullptr;
  }
  const std::string& trees_text() const override { return synthesis_.trees_text; }
  double endpoint_GBps() const override { return endpoint_GBps_; }
  double bound_us(uint64_t bytes, bool with_links = true) const override;
  // The cluster's links, the bound, the NICs' schedule, the Little's-law
  // table sizing, NCCL's protocol by size, PXN's relays.
  void describe(std::ostream& os, uint64_t bytes, const std::string& name) const override;
  bool aggregates_in_sharp() const override { return sharp_; }
  // Thread blocks it holds on each GPU's SMs while it runs (gpu::Collective::sm_blocks).
  int sm_blocks() const override { return engines_->sm_blocks(); }
  double done_fraction() const override { return engines_->done_fraction(); }
  void trace(sc_core::sc_trace_file* tf) const override { engines_->trace(tf); }

 private:
  friend class Communicator;
  CollectiveCall(class Communicator& comm, const collectives::Algorithm& a, collectives::Synthesis s,
                 elements::DType dtype, elements::RedOp redop);
  // Reduces in the switches' tables (push, pull, NVLS): the rows' notes say
  // what the tables did.
  bool reduces_in_switches() const { return innet_ && *innet_ != collectives::InNetMethod::Multicast; }
  void describe_sizing(std::ostream& os) const;
  void describe_order(std::ostream& os) const;
  // Starts the engines, once NCCL's fixed cost has passed.
  void begin();
  void make_cores();
  void make_copy();
  void make_tables();
  // A schedule table on each of its GPUs' NICs under nic.tables and the job's
  // share (nic.tables.policy), or a ShareShortfall naming the NIC; returns
  // the job building it (MulticastFabric::tenant), -1 outside a jobs run.
  int admit_nic_tables() const;
  // NCCL's PXN on a cluster (cluster.pxn): the program's transfers across
  // rails and nodes relayed through the GPU on the destination's rail.
  void relay_across_rails();
  // On a cluster: the payload bandwidth per GPU that the program's sends
  // within its node (NVLink) and to other nodes (its adapter) allow at most.
  double cluster_endpoint_GBps();
  // The busiest link between switches under the program's traffic (links_).
  void bound_links();
  void require_reduction_tables(const std::string& what) const;

  Communicator& comm_;
  const collectives::Algorithm& algorithm_;
  collectives::Synthesis synthesis_;  // its program moved to program_
  collectives::Program program_;
  elements::DType dtype_;
  elements::RedOp redop_;
  std::optional<collectives::InNetMethod> innet_;  // how the program uses the switches
  std::unique_ptr<gpu::Collective> engines_;
  const nic::ScheduledCollective* scheduled_ = nullptr;
  double endpoint_GBps_ = 0;
  bool acked_ = false;  // the bound charges the GPUs' links with write acks (make_cores, make_copy)
  LinkBound links_;
  collectives::ProtocolBySize by_size_;            // ring.protocol=auto's thresholds
  collectives::NcclSoftware software_;             // nccl.launch: NCCL's costs around the steps
  Delayed launch_{"nccl_launch"};                  // begin() after NCCL's fixed cost
  std::function<void()> on_done_;
  size_t pxn_relays_ = 0;                          // relay_across_rails' relays
  bool sharp_ = false;                             // aggregates_in_sharp()
  std::string cluster_note_;                       // what limits a cluster's bound
  // The copy engines' order window where it binds (0: nowhere), and whether inside waves.
  struct {
    uint64_t blocks = 0;
    bool in_waves = false;
  } order_window_;
  // The running size: when it was called and ended, and the machine's counters then.
  sc_core::sc_time t0_, t1_;
  uint64_t bytes_ = 0;
  bool done_ = false;
  std::vector<uint64_t> link_bytes_;
  GpuMachine::TableTotals tables_;
  std::pair<uint64_t, uint64_t> latency_;
};

class Communicator;

// A collective whose algorithm sets up a program per size (NCCL's choice:
// a collectives::Tuner of one run): a size starts on the program the tuner
// picks for it, each size asked once and each choice set up once; the
// header's lines and --print-* are the algorithm's own program's.
class TunedCall : public Call {
 public:
  // `tuner` is a's for `site`; `own` the call of a's own program there.
  TunedCall(Communicator& comm, const collectives::Algorithm& a, std::unique_ptr<collectives::Site> site,
            std::unique_ptr<collectives::Tuner> tuner, std::unique_ptr<Call> own, elements::DType dtype,
            elements::RedOp redop, std::string name);
  ~TunedCall() override;
  void start(uint64_t bytes, std::function<void()> on_done) override { choose(bytes).start(bytes, std::move(on_done)); }
  bool run_alone(uint64_t bytes, const flow::Executor::Progress& progress) override {
    return choose(bytes).run_alone(bytes, progress);
  }
  bool done() const override { return latest().done(); }
  std::string error() const override { return latest().error(); }
  Measures measures() const override;
  // The choice's note (the tuner's), then its program's.
  void note(std::ostream& notes, const Measures& m) const override;
  const collectives::Program& program() const override { return own_->program(); }
  std::string redop() const override { return own_->redop(); }
  const collectives::Schedule* nic_schedule() const override { return own_->nic_schedule(); }
  const std::string& trees_text() const override { return own_->trees_text(); }
  // The size's choice's, once asked; before, the algorithm's own program's.
  double bound_us(uint64_t bytes, bool with_links = true) const override;
  void describe(std::ostream& os, uint64_t bytes, const std::string& name) const override {
    own_->describe(os, bytes, name);
  }
  void describe_fidelity(std::ostream& os) const override { own_->describe_fidelity(os); }
  // Of the latest size started (before any: the algorithm's own program's).
  double endpoint_GBps() const override { return latest().endpoint_GBps(); }
  int sm_blocks() const override { return latest().sm_blocks(); }
  bool aggregates_in_sharp() const override { return latest().aggregates_in_sharp(); }
  double done_fraction() const override { return running_ ? running_->call->done_fraction() : -1; }
  uint64_t progress_ns() const override;

 private:
  struct Choice {
    std::string name, note;
    Call* call;
  };
  Call& choose(uint64_t bytes);
  const Call& latest() const { return running_ ? *running_->call : *own_; }
  Communicator& comm_;
  const collectives::Algorithm& algorithm_;
  std::unique_ptr<collectives::Site> site_;  // the tuner's (it keeps a reference)
  std::unique_ptr<collectives::Tuner> tuner_;
  std::unique_ptr<Call> own_;
  elements::DType dtype_;
  elements::RedOp redop_;
  std::string name_;
  std::map<uint64_t, Choice> sizes_;  // by bytes, once asked
  std::map<std::string, std::unique_ptr<Call>> by_choice_;
  const Choice* running_ = nullptr;   // the latest size started
};

struct FlowPlatform;

// Where collectives run as flows: a platform's graph and what its links and
// switches pay (made with `defaults`), GPUs of it in rank order, and the
// platform they share with other collectives, whose graph routes them
// (null: a graph of their own, and no start()).
struct FlowOn {
  const topo::Topology& graph;
  const flow::FlowMachine& machine;
  const PlatformDefaults& defaults;
  std::vector<int> gpus;
  FlowPlatform* platform = nullptr;
};

class Communicator {
 public:
  // gpus: the machine's GPUs (endpoint indices) that take part, rank r on
  // gpus[r]; a job's share, or all of them. On a GpuMachine its collectives
  // run at packet level, on a FlowPlatform (flow_call.h) or a flow graph
  // of their own as flows.
  Communicator(GpuMachine& machine, std::vector<int> gpus, Config& cfg, uint64_t seed);
  Communicator(FlowPlatform& platform, std::vector<int> gpus, Config& cfg, uint64_t seed);
  Communicator(const FlowOn& on, Config& cfg, uint64_t seed);
  // Sets up `algorithm` (the registry's name) for `collective` on these
  // GPUs at the communicator's fidelity, as a collective alone on the
  // machine (nccl: each size's start runs NCCL's choice for it): UserError
  // if it cannot run here, or tunes itself over several runs of a size
  // (Blink's tuning, which the collective workload runs).
  std::unique_ptr<Call> launch(const std::string& algorithm, collectives::Collective collective,
                               elements::DType dtype, elements::RedOp redop);
  // Sets up what algorithm `a` (which must outlive the call) synthesized
  // for `site` (these GPUs), at the communicator's fidelity; `name` names
  // the algorithm in a refusal. Where `a` sets up a program per size
  // (NCCL's choice), a TunedCall. UserError if the machine cannot run it
  // (no tables, too few aggregation buffers, what flows do not model, a
  // tuning of several runs per size, ...).
  std::unique_ptr<Call> set_up(const collectives::Algorithm& a, const collectives::Site& site,
                               collectives::Synthesis s, elements::DType dtype, elements::RedOp redop,
                               const std::string& name);
  // The same of program `s` alone, whatever `a` tunes (a tuning run's).
  std::unique_ptr<Call> set_up_one(const collectives::Algorithm& a, const collectives::Site& site,
                                   collectives::Synthesis s, elements::DType dtype, elements::RedOp redop,
                                   const std::string& name);
  // Packet level: set_up's, on the engines its operations name.
  std::unique_ptr<CollectiveCall> prepare(const collectives::Algorithm& a, collectives::Synthesis s,
                                          elements::DType dtype, elements::RedOp redop);

  // Where a collective runs on these GPUs (platforms::site), with the
  // GPUs' packets and what it adds; `platform` names the machine, `shared`
  // says it is a share.
  collectives::Site site(const std::string& platform, collectives::Collective c, bool shared, elements::DType dtype,
                         elements::RedOp redop) const;
  int size() const { return static_cast<int>(ranks_.size()); }
  const topo::Topology& topology() const { return machine_ ? machine_->topology() : flows_->graph; }
  Config& config() { return cfg_; }
  uint64_t seed() const { return seed_; }
  // A cluster's nodes (topo::cluster_nodes); empty elsewhere.
  const std::vector<std::vector<int>>& nodes() const { return nodes_; }
  // Packet level: the machine, its GPUs in rank order, and the payload
  // bandwidth of the GPU with the least toward the others (acked: each
  // write costs an acknowledgement on the link back).
  GpuMachine& machine() const { return *machine_; }
  const std::vector<gpu::Gpu*>& gpus() const { return gpus_; }
  // Its GPUs' compute engines in rank order: the GPUs' at packet level; as
  // flows the platform's, where it has them (training's), else none.
  std::vector<gpu::ComputeEngine*> compute_engines() const;
  double least_endpoint_GBps(bool acked) const;

 private:
  const std::vector<int>& endpoints() const { return ranks_; }  // [rank]: its GPU's endpoint index
  std::vector<nic::Nic*> nics() const;   // [rank]: the NIC inside its GPU
  std::vector<int> node_of() const;      // [endpoint]: its node in nodes_
  std::vector<int> rail_of() const;      // [endpoint]: its place in its node, the rail of its adapter
  GpuMachine* machine_ = nullptr;  // packet level
  std::optional<FlowOn> flows_;    // flows
  std::vector<int> ranks_;
  std::vector<gpu::Gpu*> gpus_;    // packet level
  Config& cfg_;
  uint64_t seed_;
  std::vector<std::vector<int>> nodes_;
  std::vector<bool> between_nodes_;  // [link end] on a cluster: joins_nodes
  friend class CollectiveCall;
};

}  // namespace incsim::platforms
