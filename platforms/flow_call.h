#pragma once
// A program set up as flows (--fidelity flow, docs/flow.md) on GPUs of a
// platform's flow machine: what the communicator's CollectiveCall
// (communicator.h) is at packet level, from the same program, graph and
// packets. It runs the operations on the executor of the engine they name
// (the GPUs' cores, their copy engines, the NICs' schedule tables), relays
// a cluster's transfers as NCCL's PXN does, computes the bound as packet
// level does, and prints the same header lines. No element values travel.
// On a FlowPlatform (training's and jobs' groups) it starts in SystemC's
// time, as CollectiveCall does.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "bounds.h"
#include "communicator.h"
#include "collectives/algorithm.h"
#include "collectives/nccl.h"
#include "core/config.h"
#include "core/process.h"
#include "elements/data_pattern.h"
#include "flow/executor.h"
#include "flow/nic_flows.h"
#include "flow/shared.h"
#include "gpu/compute_engine.h"
#include "gpu_fabric.h"
#include "machine.h"

namespace incsim::platforms {

struct FlowPlatform;
class SharedFlows;

class FlowCall : public Call {
 public:
  // Sets up `s`, which algorithm `a` synthesized for `site`; `name` names
  // the algorithm in a refusal (UserError) of what flows do not model.
  FlowCall(const FlowOn& on, const collectives::Algorithm& a, const collectives::Site& site, collectives::Synthesis s,
           elements::DType dtype, elements::RedOp redop, Config& cfg, uint64_t seed, const std::string& name);
  ~FlowCall() override;

  const collectives::Program& program() const override { return flows_->program(); }
  std::string redop() const override;
  // The NICs' executor where they run the program (else null).
  const flow::NicFlows* nic() const { return nic_; }
  const collectives::Schedule* nic_schedule() const override { return nic_ ? &nic_->schedule() : nullptr; }
  const std::string& trees_text() const override { return trees_text_; }
  double endpoint_GBps() const override { return endpoint_GBps_; }
  // A program on the GPUs' cores holds a thread block per channel, as at packet level.
  int sm_blocks() const override { return sm_blocks_; }
  // A message of `bytes` alone from time 0 (run once per size), as the
  // call's run, whose row measures() then gives.
  bool run_alone(uint64_t bytes, const flow::Executor::Progress& progress) override;
  // On a platform: a message of `bytes` starts now and calls on_done once
  // it ends, its time alone after now, or on the platform's shared network
  // (flow.share_links) when its flows end there, NCCL's fixed cost after
  // its start; measures() then gives its row.
  void start(uint64_t bytes, std::function<void()> on_done) override;
  bool done() const override { return running_ && !on_done_; }
  double done_fraction() const override { return alone_share_(); }
  // The last run's row: its time on the GPUs (nccl.launch's floor
  // included), the bound, the busbw factor, its flows (no elements: #wrong 0).
  Measures measures() const override;
  // On a platform: its flows' time passed so far, ns, which the stall detector watches move.
  uint64_t progress_ns() const override;
  // The bound time (program_bound_us), with or without the busiest link between switches.
  double bound_us(uint64_t bytes, bool with_links = true) const override;
  void describe_fidelity(std::ostream& os) const override;
  // The header's lines from the bound on, as CollectiveCall::describe prints them.
  void describe(std::ostream& os, uint64_t bytes, const std::string& name) const override;
  // A row's notes on its run (m.flows): its flows (on the network the
  // collectives share, where its starts share it), its channel classes,
  // its steady passes.
  void note(std::ostream& notes, const Measures& m) const override;

 private:
  // A message of `bytes` run alone from time 0, once per size.
  const flow::Executor::Result& alone(uint64_t bytes, const flow::Executor::Progress& progress = {});
  // A run's time on the GPUs, ns: NCCL's fixed cost, then its flows.
  double gpu_ns(const flow::Executor::Result& res) const;
  void cores(collectives::Program& program, const collectives::Site& site);
  void copy_engines(collectives::Program& program, const collectives::Site& site);
  void nic_tables(collectives::Synthesis& synthesis);
  void reduction_tables(const collectives::Program& p, const collectives::Site& site);
  LittleLaw little_law() const;
  // Starts a message of `bytes` on the shared network now.
  void share(uint64_t bytes);
  // links_ from the program's traffic: fabric and net are its packets on each fabric.
  void bound_links(WirePacket fabric, WirePacket net);
  // The header's note where push's waves outgrow the tables (Klenk §IV-F1, §VI-D).
  void print_push_window(std::ostream& os, uint64_t bytes) const;

  const topo::Topology& graph_;
  const flow::FlowMachine& machine_;
  PlatformDefaults defaults_;
  std::vector<int> gpus_;
  FlowPlatform* platform_;
  flow::SharedNetwork* routes_;  // the platform's network, whose graph routes it
  const collectives::Algorithm& algorithm_;
  Config& cfg_;
  uint64_t seed_;
  std::string name_;
  uint32_t elem_bytes_;
  elements::RedOp redop_;
  std::unique_ptr<flow::Executor> flows_;
  const flow::NicFlows* nic_ = nullptr;  // where the NICs run the program
  const char* copy_links_ = nullptr;      // where the copy engines run it: what its bound's links carry
  size_t pxn_relays_ = 0;
  collectives::ProtocolBySize by_size_;
  collectives::NcclSoftware software_;
  int sm_blocks_ = 0;  // the NICs' tables take none
  bool classes_auto_ = false;  // flow.channel_classes=auto turned the classes on
  std::string steady_why_;     // the steady passes note's reason for K: auto's choice, or a cluster's error
  int read_channels_ = 0;      // the channels of a cores program's reducing reads; 0: none
  // The bound (bounds.h): a cluster's busbw, or a GPU's payload bandwidth.
  double endpoint_GBps_ = 0;
  LinkBound links_;
  std::string cluster_note_;  // empty off a cluster
  std::vector<char> joins_nodes_;  // [graph link] on a cluster: joins_nodes (the busy columns)
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
  std::string bound_note_, trees_text_;
  std::map<uint64_t, flow::Executor::Result> alone_;  // by size
  AloneShare alone_share_;
  // On a platform: what ends the running start, and NCCL's fixed cost before it on a shared network.
  Wakeup end_;
  bool ender_ = false;  // the process that ends a start, made at the first
  Delayed launch_{"nccl_launch"};
  std::function<void()> on_done_;
  const flow::Executor::Result* running_ = nullptr;  // the running start's flows
  SharedFlows* shared_ = nullptr;  // where its starts share the network
  flow::Executor::Result last_;  // on a shared network: the last start's flows
  bool beside_ = false;  // it ran while another group's used a link of its
  sc_core::sc_time started_, passed_;  // the running start's start (while on_done_), the ended starts' time
  uint64_t bytes_ = 0;                 // the running (or last) start's
};

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

// The collectives in flight on a flow platform's links, when each runs
// alone (flow.share_links=false), so that one can tell it ran while
// another group's used a link of its, which flows alone do not see.
struct FlowOverlap {
  std::vector<std::vector<FlowCall*>> running;  // [2 x graph link + direction]
  uint64_t collectives = 0, shared = 0;  // collectives ended; those that ran beside another on a link of theirs
  double ns = 0, shared_ns = 0;          // their flows' time
};

// A platform at --fidelity flow, with no block built: its graph, what its
// links and switches pay as flows (made with `defaults`), its compute
// engines where a workload makes them (training's), the collectives in
// flight on its links, and the flow network they share, if they do.
struct FlowPlatform {
  FlowPlatform(const topo::Topology& t, Config& cfg, const PlatformDefaults& d, bool share_links);
  FlowPlatform(const FlowPlatform&) = delete;  // the machine points at the graph
  // Where a collective on `gpus` of it runs.
  FlowOn on(const std::vector<int>& gpus) { return {graph, machine, defaults, gpus, this}; }
  topo::Topology graph;
  flow::FlowMachine machine;
  PlatformDefaults defaults;
  std::vector<std::unique_ptr<gpu::ComputeEngine>> engines;
  FlowOverlap overlap;
  // One graph routes every group's collectives, sharing the network or not
  // (a graph per group holds the whole cluster: 14 GB for GPT-3 on 512 nodes).
  std::unique_ptr<SharedFlows> shared;
  bool share_links;
};

}  // namespace incsim::platforms
