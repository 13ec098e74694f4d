#pragma once
// The NetReduce FPGA accelerator beside the Ethernet switch (§3.1, §4,
// Fig. 3 and Fig. 8): per port a parser (aggregation frames vs others), the
// connection lookup table, a state manager and aggregator array per ring,
// and a combinator that writes the aggregation value into each rank's frame
// under its original header, recomputes the ICRC and sends it back to the
// switch on the port it came in by. Frames are checked (ICRC) when their
// last byte is in; a corrupted one is dropped and the sender's go-back-N
// repairs it.
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "core/log.h"
#include "core/process.h"
#include "core/trace.h"
#include "net/block.h"
#include "ethernet/egress.h"
#include "ethernet/roce_frame.h"
#include "netreduce/aggregator_array.h"
#include "netreduce/clt.h"
#include "netreduce/ctt.h"
#include "core/param.h"
#include "nvswitch/table_sharing.h"

namespace incsim::netreduce {

// Where this accelerator sits in a multi-rack aggregation hierarchy (§3.3).
// Flat: the single rack. Leaf: aggregates its rack's hosts, sends one partial
// per aggregator to the spine on a virtual leaf-to-spine connection, and
// translates the spine's results into its rack's destination connections.
// Spine: aggregates the leaves' partials and multicasts the result back.
struct Hierarchy {
  enum Role { Flat, Leaf, Spine } role = Flat;
  uint32_t self_ep = 0, self_ip = 0;
  uint32_t parent_ep = 0, parent_ip = 0;  // Leaf: the spine's FPGA
  uint32_t leaf_ep0 = 0, leaf_ip0 = 0;    // leaf FPGA q is leaf_ep0 + q, leaf_ip0 + q
  uint32_t host_ip0 = 0;                  // host h has IP host_ip0 + h and endpoint h
  int hosts_per_rack = 0, rack = 0, racks = 0;
  uint32_t virtual_qp = 0x100;            // the switch-to-switch connections' QPN
  int uplink_port = -1;                   // Leaf: the port partials and notifications leave by
};

// Each port's rate, wire latency and the switch's buffer are its link's
// (configure_port, before the simulation starts).
struct FpgaConfig {
  sc_core::sc_time latency;       // pipeline: last byte in to first byte out
  uint32_t buffer_bytes;          // the switch's ingress buffer per port and class
  uint32_t clt_entries;
  uint32_t mtu_payload;  // the ring's payload per packet (RETH addresses of translated results)
  uint32_t aggregator_bytes = 0;  // memory for every ring's aggregator array; 0: no budget
  const nvswitch::TableSharing* sharing = nullptr;  // how jobs share it (the fabric's), or none
};
inline const Param<double> kFpgaLatency{"fpga.latency_ns", 500.0, Range::at_least(0).at_most(1e9),
                                        "FPGA pipeline latency, last byte in to first result byte out, ns "
                                        "(assumption: parser, CLT, state manager, aggregation and ICRC at "
                                        "~300 MHz; the paper gives only the 6.3 us RTT)"};
inline const Param<uint32_t> kAggregatorBytes{
    "fpga.aggregator.bytes", 0, Range::at_least(0).at_most(1u << 31),
    "memory for all rings' aggregator arrays, bytes; 0: each ring gets the 2N x MsgLen its window needs. NetReduce "
    "gives one ring's use, 993 of the XCVU190's 3,780 36-Kb BRAM blocks (26.27%, §4; Xilinx DS890), so the board's "
    "BRAM is 17418240 B; jobs declare disjoint memory regions (§6 Multi-Tenancy) under fpga.aggregator.policy"};
inline const Param<std::string> kAggregatorPolicy{
    "fpga.aggregator.policy", "shared", Range::none(),
    "how a jobs: list's rings share fpga.aggregator.bytes: shared (first come, first served: a ring takes what it "
    "asks of what is free); partitioned (each job at most its weight's share); quota (each job at most its quota, a "
    "fraction of the memory, of what is free); a ring given less than 2N x MsgLen aggregators runs a shorter MsgLen "
    "(docs/jobs.md)"};

class FpgaAggregator : public sc_core::sc_module, public net::PacketSink, public net::Block {
 public:
  FpgaAggregator(sc_core::sc_module_name name, int ports, const FpgaConfig& cfg, net::PacketPool* pool);
  ~FpgaAggregator() override;

  // Job initialisation (§3.1 ❶): an aggregator array of 2N x MsgLen per ring,
  // in job `job`'s memory region (-1: none). `rank_base`: the ring rank of
  // this FPGA's first rank (a leaf's rack).
  void add_ring(uint16_t ring, int ranks, uint32_t window, uint32_t msg_len, uint32_t max_payload,
                elements::DType dtype, elements::RedOp op, int rank_base = 0, int job = -1);
  // The MsgLen `rings` rings of `ranks` with a window of N = `window`
  // messages of `max_payload`-byte packets may have in job `job`'s share of
  // the aggregator memory (-1: no job): `msg_len` if their 2N x MsgLen
  // aggregators each fit in what the policy leaves the job and what is free,
  // else the most that do. A ShareShortfall naming the shortfall if not even
  // MsgLen 1 fits.
  uint32_t msg_len_for(int job, int ranks, uint32_t window, uint32_t msg_len, uint32_t max_payload,
                       int rings = 1) const;
  // The aggregator memory job `job` may still take (-1: no job): what is
  // free, within the job's share. admit() throws the ShareShortfall
  // msg_len_for() does if `bytes` exceed it, `what` saying what needs them
  // ("aggregator arrays for 4 rings of 2 ... need").
  uint64_t memory_left(int job) const;
  void admit(int job, uint64_t bytes, const std::string& what) const;
  // Aggregator memory the rings added so far take: all, and job j's.
  uint64_t memory_used() const { return used_; }
  uint64_t memory_used(int job) const { return job >= 0 && static_cast<size_t>(job) < used_by_job_.size() ? used_by_job_[job] : 0; }
  uint32_t memory_bytes() const { return cfg_.aggregator_bytes; }
  // The id at this FPGA of the k-th ring of these members (GPUs or hosts,
  // in ring order; a collective may run several rings over the same
  // members): the one it has if that ring was added before (a collective
  // prepared again), else the least id no ring holds. The FPGA numbers the
  // rings of every job that shares it, so two jobs' rings never meet in one
  // aggregator array.
  uint16_t ring_id(const std::vector<int>& members, int k);
  // What the rings numbered so far take of its CLT: a connection per member.
  uint32_t ring_connections() const { return ring_connections_; }
  void set_hierarchy(const Hierarchy& h);
  eth::LinkFaults* link_faults(int port) override { return &ports_[port]->faults; }  // of the link into this port
  // Results are built when the last byte of the completing frame is in and
  // leave one pipeline latency later.
  void configure_port(int port, double bw_GBps, sc_core::sc_time latency, uint32_t peer_buffer_bytes) override {
    ports_[port]->egress.configure(bw_GBps, latency, peer_buffer_bytes, cfg_.latency);
  }
  uint32_t buffer_bytes(int) const override { return cfg_.buffer_bytes; }

  void receive(int port, net::Packet* p) override;
  void trace(sc_core::sc_trace_file* tf) const override;
  uint64_t report_held(std::ostream& os) const override;

  int num_ports() const override { return static_cast<int>(ports_.size()); }
  net::InPort& in(int port) override { return ports_[port]->in; }
  net::OutPort& out(int port) override { return ports_[port]->egress.out; }
  const ConnectionLookupTable& clt() const { return clt_; }
  const ConnectionTranslationTable& ctt() const { return ctt_; }
  const AggregatorArray& ring(uint16_t id) const { return *rings_.at(id); }

  struct Counters {
    uint64_t frames = 0, bypassed = 0, icrc_drops = 0, first_lost_drops = 0, no_entry_drops = 0, clt_full_drops = 0,
             lost = 0, notifications = 0, untranslated = 0;
  };
  Counters counters() const;
  // New gradients gathered over every ring (AggregatorArray::contributions):
  // part of the platform's progress for the stall detector.
  uint64_t progress() const override;

 private:
  struct Port {
    Port(const std::string& name, FpgaAggregator* owner, int index);
    net::InPort in;
    eth::Egress egress;
    eth::LinkFaults faults;
    net::PacketFifo rxq;
    Wakeup rx_wake;
  };
  void rx(int port);
  void process(net::Packet* p);
  void emit(net::Packet* p, int port);  // seals it and queues it to leave by `port`
  // Multi-rack (§3.3).
  void learn(const ConnKey& c, const eth::InaHeader& ina, uint32_t psn, uint64_t va, int port);
  void notify(net::Packet* first, uint32_t dst_rack);
  void to_parent(net::Packet* p, const Resolved& r);
  void to_children(net::Packet* p);
  void to_destinations(net::Packet* p);
  ConnKey uplink() const { return {hier_.self_ip, hier_.parent_ip, hier_.virtual_qp}; }
  ConnKey downlink(int rack) const { return {hier_.parent_ip, hier_.leaf_ip0 + rack, hier_.virtual_qp}; }

  FpgaConfig cfg_;
  net::PacketPool* pool_;
  std::vector<std::unique_ptr<Port>> ports_;
  // Child modules without processes, called from rx(): fpga.clt, leaf0_fpga.dest_clt, spine_fpga.ctt.
  ConnectionLookupTable clt_;
  ConnectionLookupTable dest_;  // Leaf: where the rack's destination connections are (multicast translation)
  ConnectionTranslationTable ctt_;
  Hierarchy hier_;
  std::vector<int> rank_base_;
  // Throws the ShareShortfall of `bytes` that job `job` may not take, `what` saying what needs them.
  [[noreturn]] void short_of(int job, uint64_t bytes, const std::string& what) const;
  std::map<uint16_t, std::unique_ptr<AggregatorArray>> rings_;
  std::map<std::pair<std::vector<int>, int>, uint16_t> ring_ids_;  // ring_id's: (members, k) -> id
  uint32_t ring_connections_ = 0;
  uint64_t used_ = 0;                  // aggregator memory of every ring
  std::vector<uint64_t> used_by_job_;  // [job]
  std::vector<AggregatorArray*> ring_by_id_;
  std::vector<net::Packet*> out_;
  std::vector<int16_t> copy_ports_;  // to_destinations: the port each of out_ leaves by
  Counters c_;
};

}  // namespace incsim::netreduce
