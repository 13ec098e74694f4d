#pragma once
// A program of the NICs' schedule-table operations (docs/programs.md) run by
// every node's NIC (nic.h): the program is compiled into per-node schedule
// tables, MultiTree's format (collectives/schedule.h, §IV-A, Fig. 5), which
// the NIC's decoder walks. MultiTree, every baseline and Blink's trees run
// this way, on the same NIC, as MultiTree §V-A does for fairness.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "elements/data_pattern.h"
#include "collectives/program.h"
#include "collectives/schedule.h"
#include "gpu/collective.h"
#include "nic/nic.h"
#include "topology/topology.h"
#include "core/param.h"

namespace incsim::nic {

inline const Param<std::string> kNicFlowControl{
    "nic.flow_control", "packet", Range::none(),
    "packet: a head flit on every packet of net.max_payload_bytes; message: one head flit per message, "
    "sub-packets of body and sub-tail flits (MultiTree §IV-B; default message for multitree-msg only)"};
inline const Param<uint32_t> kNicBufferFlits{
    "nic.buffer_flits", 318, Range::at_least(1).at_most(1 << 24),
    "NI buffer, flits, for the lockstep step-time estimate (MultiTree §IV-A footnote 4; the paper gives no size, "
    "this is Table III's VC buffer depth)"};
inline const Param<std::string> kNicInterfaceChoice{
    "nic.interface_choice", "shared", Range::none(),
    "how a torus or mesh node's messages take its interfaces (nic.interfaces): shared (every message on the "
    "node's link packet by packet; the MultiTree figures' setting) or first-free (each message to the first "
    "interface whose backlog fits its buffer, whatever its direction, each interface sending one message after "
    "another at a network link's rate, as the MultiTree authors' simulator hands a flow to the first free NI: "
    "src/hmc.py, reduce_scatter_evaluate and send_reduce_message_update); packet level only"};
inline const Param<uint32_t> kNicInterfaceBuffer{
    "nic.interface_buffer_messages", 53, Range::at_least(1).at_most(1u << 20),
    "first-free interfaces: messages of net.max_payload_bytes an interface holds before it is busy, and its step "
    "may move on (the MultiTree authors' NI buffer, --message-buffer-size 32 in utils/run_torus_bandwidth.sh, "
    "drains into BookSim's message buffer, msg_buf_size 16, and injection queue, inject_buf_size 80 flits, "
    "booksim_config.cpp: 32 + 16 + 80/17 messages of 17 flits)"};
inline const Param<double> kNicClock{"nic.clock_ghz", 1.0, Range::at_least(0.01).at_most(100),
                                     "NIC and router clock, GHz (MultiTree Table III: 1 GHz)"};
// How many collectives' schedule tables a NIC holds at once (the
// communicator's admission, platforms/communicator.cpp).
inline const Param<uint32_t> kNicTables{
    "nic.tables", 0, Range::at_least(0).at_most(1u << 16),
    "schedule tables a NIC holds, one per collective offloaded to it at once; 0: any number. MultiTree's NI has one "
    "(§III-D: \"an all-reduce schedule table\", 2N entries, 3.2 KB at 64 nodes)"};
inline const Param<std::string> kNicTablesPolicy{
    "nic.tables.policy", "shared", Range::none(),
    "how a jobs: list's collectives share nic.tables (jobs on the same GPUs, allow_overlap): shared (first come, "
    "first served), partitioned (each job at most its weight's share of a NIC's), quota (each job at most its "
    "quota, a fraction of a NIC's, of what is free); docs/jobs.md"};

class ScheduledCollective : public gpu::Collective {
 public:
  // nics[r] runs rank r of the program. A broadcast program runs a
  // broadcast; a dataflow program in NicParams::dataflow mode; a message
  // takes the ports the program's link hints name, else every port whose
  // routes reach its destination in t. Throws UserError if the program does
  // not compile to tables (schedule_of) or a hint names a port that does not
  // reach its peer. `tenant`: the job whose tables these are (Nic::tables_loaded).
  ScheduledCollective(const collectives::Program& program, std::vector<Nic*> nics, const topo::Topology& t,
                      elements::DType dtype, elements::RedOp redop, uint64_t seed, FlowControl flow_control,
                      collectives::StepEstimate estimate, int tenant = -1, Interfaces interfaces = {});
  ~ScheduledCollective() override;
  void start(uint64_t bytes, std::function<void()> on_done) override;
  uint64_t wrong() const override;
  double done_fraction() const override;  // schedule entries issued of all NICs' entries
  // An all-reduce's operator; a broadcast keeps the base's label (its rows
  // in docs/figures say "sum"; nccl-tests would say "none").
  std::string redop() const override {
    return schedule_.broadcast_root == collectives::kNil ? elements::redop_name(redop_) : gpu::Collective::redop();
  }
  void trace(sc_core::sc_trace_file* tf) const override;

  const collectives::Schedule& schedule() const { return schedule_; }
  FlowControl flow_control() const { return flow_control_; }
  bool dataflow() const { return dataflow_; }
  // The lockstep down-counter's load for this size (a NOP's step).
  NicParams params_for(uint64_t bytes) const;

 private:
  collectives::Schedule schedule_;
  std::vector<Nic*> nics_;
  std::vector<Table*> tables_;  // [r]: the table rank r runs on nics_[r]
  elements::DType dtype_;
  elements::RedOp redop_;
  elements::DataPattern data_;
  FlowControl flow_control_;
  collectives::StepEstimate estimate_;
  Interfaces interfaces_;
  collectives::MessageFraming framing_;
  bool dataflow_;
  Layout layout_;
  std::function<void()> on_done_;
  int running_ = 0;
};

}  // namespace incsim::nic
