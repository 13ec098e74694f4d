#pragma once
// A NetReduce job's set-up on an elaborated Ethernet machine (NetReduce §3.1
// ❶ job initialisation, §4): the hosts' RC connections of the ring (and, on
// multi-GPU machines, of the rings inside and across machines), one ACL rule
// per worker redirecting its connection to the FPGA port that faces it, the
// aggregation hierarchy of each FPGA (§3.3), and the aggregator arrays. This
// is what the training framework and the switch's controller install; the
// machine itself (machine.h) knows none of it. Ports are read off the graph:
// which switch port leads to the FPGA port facing a host.
#include <cstdint>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "collectives/program.h"
#include "elements/alu.h"
#include "elements/data_pattern.h"
#include "ethernet/ethernet_switch.h"
#include "netreduce/fpga_aggregator.h"
#include "ethernet_fabric.h"
#include "machine.h"
#include "netreduce_machines.h"
#include "flow/roce_flows.h"
#include "roce/host_program.h"
#include "roce/roce_nic.h"

namespace incsim::platforms {

class NetReduceJob {
 public:
  using Layout = NetReduceShape::Layout;
  // Checks the job before anything is built: `in_network` runs it on the
  // FPGAs (the shape must have them); `ring`: the hosts of the ring in ring
  // order (Rack only; empty: all, in order); the FPGAs' CLTs must hold its
  // connections (clt_entries, fpga.clt.entries). `job`: its index in a
  // jobs: list (several rings on one rack), -1 alone.
  NetReduceJob(const NetReduceShape& shape, bool in_network, std::vector<int> ring, uint32_t clt_entries,
               int job = -1);
  // Finds its blocks in the machine elaborated from the shape's graph.
  void attach(Machine& m);
  // The MsgLen its rings may have in the FPGAs' aggregator memory
  // (FpgaAggregator::msg_len_for), at most msg_len; before program(), so
  // that a job refused (or given the ring instead) has installed nothing.
  uint32_t msg_len_for(uint32_t window, uint32_t msg_len) const;
  // Programs the machine: the ring's connections, and its workers' ACL rules.
  void program(uint64_t seed);
  // The FPGA (an endpoint index) and its port that a host's aggregation
  // connection is redirected to by its ACL rule: its rack's (or leaf's)
  // FPGA's port facing the host, on multigpu the FPGA's port facing its
  // machine.
  std::pair<int, int> fpga_port(int host) const;
  // An aggregator array for its ring (multi-GPU: one per GPU index) on every
  // FPGA; the rack's FPGA numbers every job's rings (FpgaAggregator::ring_id).
  // Returns the ring's id (multi-GPU: of GPU index 0's).
  uint16_t add_ring(uint32_t window, uint32_t msg_len, elements::DType dtype, elements::RedOp op);
  // The aggregator memory its rings took, over every FPGA.
  uint64_t aggregator_memory() const;

  // The engine of its hosts' program p (roce operations) at packet level:
  // each ring rank's host software on its NIC, over the connections
  // program() made (the ring, channel 0; on multigpu also the ring inside
  // its machine, channel 1, and the ring of its GPU index across the
  // machines, channel 2). p and pattern must outlive them.
  std::vector<std::unique_ptr<roce::HostProgram>> host_programs(const collectives::Program& p,
                                                                const roce::HostConfig& c,
                                                                const elements::DataPattern* pattern,
                                                                elements::DType dtype, elements::RedOp op);
  // The same program as flows (flow/roce_flows.h) over the machine's graph:
  // every link carries RoCE frames, every switch forwards after its
  // latency, and each ring rank's aggregation goes through the FPGA port
  // its ACL rule sends it to (fpga_port). The job holds the graph the
  // flows see: one set of flows at a time.
  std::unique_ptr<flow::RoceFlows> flows(const collectives::Program& p, uint32_t msg_len, uint32_t window,
                                         elements::DType dtype);

  Layout layout() const { return shape_.layout; }
  int hosts() const { return shape_.hosts(); }
  int racks() const { return shape_.racks; }
  roce::RoceNic& nic(int host) const { return *nics_[host]; }
  // The FPGA of the single rack, or the spine's (nullptr without NetReduce).
  const netreduce::FpgaAggregator* fpga() const { return fpgas_.empty() ? nullptr : fpgas_.back(); }
  const std::vector<netreduce::FpgaAggregator*>& fpgas() const { return fpgas_; }
  // The ring: ring_host(k) is rank k; it sends on qp send_qp() to rank
  // (k+1) mod ring_size() and receives on recv_qp() from rank (k-1).
  int ring_size() const { return static_cast<int>(ring_.size()); }
  int ring_host(int rank) const { return ring_[rank]; }
  static int send_qp() { return 0; }
  static int recv_qp() { return 1; }
  // MultiGpu: the ring inside a machine (GPU i to i+1 of the same machine)
  // and the NetReduce ring of GPU index i across the machines.
  static int intra_send_qp() { return 2; }
  static int intra_recv_qp() { return 3; }
  static int inter_send_qp() { return 4; }
  static int inter_recv_qp() { return 5; }
  double line_GBps() const { return shape_.line_GBps; }
  double ring_GBps() const { return shape_.ring_GBps(); }  // the slowest link a ring crosses (NetReduceShape)
  double host_link_GBps() const { return shape_.host_GBps; }
  uint32_t mtu_payload() const { return fabric_->mtu_payload(); }
  // The latency of one GPU-to-GPU hop through a switch, before any byte's
  // serialisation: posting, two wires, the switch, delivery (alpha of the
  // appendix's Eq. (1)-(3)).
  sc_core::sc_time hop_latency() const;
  // The default stall timeout: ten retransmission timeouts, or under link
  // faults as many as make a run that still progresses go that long without
  // progress with a probability below 1e-12 (a retransmission needs every
  // link of its loop there and back), at most 10^4.
  sc_core::sc_time default_stall_timeout() const;
  // After a stall: link faults so heavy that a retransmission gets through
  // less than once in 10^4/27.6 tries (the default timeout's cap) leave a run
  // no useful chance to finish; says so naming the keys.
  std::string stall_cause() const;

 private:
  double through() const;  // the chance a packet and its ACK cross every link of the loop
  // The ranks of its rings at FPGA r, and how many rings (multi-GPU: one per GPU index).
  int ranks_at(int r) const;
  NetReduceShape shape_;
  bool in_network_;
  int job_ = -1;
  uint32_t clt_entries_ = 0;
  std::vector<int> ring_;
  int loop_links_ = 0;  // links a packet crosses from its sender to its receiver and back as ACK
  const topo::Topology* graph_ = nullptr;
  const EthernetFabric* fabric_ = nullptr;
  std::vector<roce::RoceNic*> nics_;             // by host
  std::vector<eth::EthernetSwitch*> switches_;   // leaves (or machines), then the spine
  std::vector<netreduce::FpgaAggregator*> fpgas_;  // leaves' (or the rack's), then the spine's
  flow::FlowMachine flow_machine_;  // flows(): the graph as flows see it
};

}  // namespace incsim::platforms
