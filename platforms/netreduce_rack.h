#pragma once
// NetReduce's Ethernet platforms. The single rack (§5.1 Testbed 1, Fig.
// 10B): P hosts, each one GPU behind a 100 GbE RoCE NIC, on one Ethernet
// switch; with NetReduce, an FPGA accelerator on P more switch ports (one per
// host: "both sides spare six ports", §4) and one ACL rule per worker
// redirecting its ring connection to its FPGA port. Spine-leaf (§3.3, Fig.
// 5): R such racks (leaves) under one spine switch with its own FPGA, which
// aggregates the leaves' partials (hierarchical aggregation with the CTT).
// The hosts form one ring, rack after rack: host i has an RC connection to
// host (i + 1) mod P; on a single rack the ring may instead visit any of
// the hosts in any order (`--ring`), the others idle.
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "core/config.h"
#include "ethernet/ethernet_switch.h"
#include "machine.h"
#include "netreduce/fpga_aggregator.h"
#include "roce/roce_nic.h"

namespace incsim::platforms {

// What NetReduce's machines are made of, as much as the graph says: the
// layout, its size, and the link rates (GB/s) and wire latency (ns). The
// forwarding tables, ACL rules, FPGA hierarchy and RC connections follow
// from it (NetReduceRack's constructor).
struct NetReduceShape {
  // Rack: one switch (racks == 1). SpineLeaf: racks leaves under a spine,
  // an FPGA on each. MultiGpu (§3.4, Testbed 2): each "rack" is one machine
  // of hosts_per_rack GPUs whose switch stands for the intra-machine fabric
  // (GPU links at intra.bw_GBps) and whose uplink is the machine's one
  // 100 GbE NIC; the machines hang off one Ethernet switch with the FPGA.
  enum class Layout { Rack, SpineLeaf, MultiGpu };
  Layout layout = Layout::Rack;
  int racks = 1, hosts_per_rack = 2;
  bool with_fpga = false;
  double line_GBps = 0;    // Ethernet line rate: FPGA ports, and hosts except on MultiGpu
  double host_GBps = 0;    // a host's (MultiGpu: a GPU's intra-machine) link
  double uplink_GBps = 0;  // a leaf's (MultiGpu: a machine's NIC) link up; 0 on a Rack
  double wire_ns = 0;
  int hosts() const { return racks * hosts_per_rack; }
  // A leaf's FPGA has one port per host and, under a spine, one more for its
  // partials up and the spine's results down (a host's port carries that
  // host's gradients in and its connection's results out at line rate); it
  // faces the leaf's ports hosts_per_rack and up. 0: no leaf FPGAs.
  int leaf_fpga_ports() const {
    return with_fpga && layout != Layout::MultiGpu ? hosts_per_rack + (racks > 1 ? 1 : 0) : 0;
  }
  int uplink_port() const { return hosts_per_rack + leaf_fpga_ports(); }  // a leaf's port to the spine
};
// The built-in shape, its rates and latency from cfg (link.bw_GBps,
// intra.bw_GBps, leaf.uplink_bw_GBps, link.latency_ns).
NetReduceShape netreduce_shape(NetReduceShape::Layout layout, int racks, int hosts_per_rack, bool with_fpga,
                               Config& cfg);
// Its graph: switches (leaves, then the spine), hosts, FPGAs (the leaves',
// then the spine's), and their links, each switch side first; names rack,
// spineleaf or multigpu; family netreduce (multigpu: netreduce-multigpu).
topo::Topology netreduce_topology(const NetReduceShape& shape);
// The shape of a graph (a platform file, `source` in messages) that is one
// of these machines with its nodes and links in any order and any names;
// UserError naming the first thing that differs if it is not.
NetReduceShape netreduce_shape(const topo::Topology& graph, const std::string& source);

class NetReduceRack : public Machine {
 public:
  using Layout = NetReduceShape::Layout;
  // Elaborates `graph`, of shape `shape` (netreduce_shape), reading every
  // switch, NIC and FPGA parameter from cfg. `in_network`: the job runs on
  // the FPGAs (the graph must have them); otherwise they stay idle.
  // `ring`: the hosts of the ring in ring order (Rack only); empty: all, in order.
  NetReduceRack(topo::Topology graph, const NetReduceShape& shape, bool in_network, Config& cfg, uint64_t seed,
                std::vector<int> ring = {});
  ~NetReduceRack();

  int hosts() const { return static_cast<int>(nics_.size()); }
  roce::RoceNic& nic(int i) { return *nics_[i]; }
  int racks() const { return static_cast<int>(leaves_.size()); }
  eth::EthernetSwitch& leaf(int r) { return *leaves_[r]; }
  // The FPGA of the single rack, or the spine's (nullptr without NetReduce).
  netreduce::FpgaAggregator* fpga() { return top_fpga(); }
  const netreduce::FpgaAggregator* fpga() const { return const_cast<NetReduceRack*>(this)->top_fpga(); }
  const std::vector<std::unique_ptr<netreduce::FpgaAggregator>>& fpgas() const { return fpgas_; }
  // Job initialisation: an aggregator array for ring 0 on every FPGA.
  void add_ring(uint32_t window, uint32_t msg_len, collectives::DType dtype, collectives::RedOp op);
  net::PacketPool& pool() override { return *pool_; }
  const net::PacketPool& pool() const override { return *pool_; }
  const std::vector<LinkEnd>& link_ends() const override { return ends_; }
  // What the stall detector watches: packets the hosts accepted in order and
  // handed up, packets newly acknowledged to their senders, and gradients an
  // FPGA gathered for the first time. Go-back-N resending the same packets,
  // duplicates and stored results sent again do not move it.
  uint64_t progress() const override;
  // The default stall timeout: ten retransmission timeouts, or under link
  // faults as many as make a run that still progresses go that long without
  // progress with a probability below 1e-12 (a retransmission needs every
  // link of its loop there and back: links_per_loop() of them), at most 10^4.
  sc_core::sc_time default_stall_timeout() const;
  int links_per_loop() const { return loop_links_; }
  // After a stall: link faults so heavy that a retransmission gets through
  // less than once in 10^4/27.6 tries (the default timeout's cap) leave a run
  // no useful chance to finish; says so naming the keys.
  std::string stall_cause() const override;
  // The netlist it was elaborated from (--dump-platform): kinds
  // ethernet_switch, roce_host, fpga_aggregator, family netreduce.
  const topo::Topology* topology_graph() const override { return &topo_; }
  // The faults of link from -> to, named as in link_ends() (e.g. "host0",
  // "switch"), for a test's FaultHook; UserError if there is no such link.
  eth::LinkFaults& link_faults(const std::string& from, const std::string& to);
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
  double host_link_GBps() const { return host_GBps_; }
  // The latency of one GPU-to-GPU hop through a switch, before any byte's
  // serialisation: posting, two wires, the switch, delivery (alpha of the
  // appendix's Eq. (1)-(3)).
  sc_core::sc_time hop_latency() const { return hop_latency_; }
  static uint32_t ip_of(int host) { return 0x0A000001u + static_cast<uint32_t>(host); }  // 10.0.0.1 ...

  double link_GBps() const { return link_GBps_; }
  uint32_t mtu_payload() const { return mtu_; }
  sc_core::sc_time rto() const { return rto_; }
  uint64_t lost() const;
  void trace(sc_core::sc_trace_file* tf) const override;
  uint64_t report_held(std::ostream& os) const override;

 private:
  netreduce::FpgaAggregator* top_fpga() { return fpgas_.empty() ? nullptr : fpgas_.back().get(); }
  int ring_next(int rank) const { return ring_[(rank + 1) % ring_size()]; }
  topo::Topology topo_;
  std::unique_ptr<net::PacketPool> pool_;
  std::vector<std::unique_ptr<eth::EthernetSwitch>> leaves_;
  std::unique_ptr<eth::EthernetSwitch> spine_;
  std::vector<std::unique_ptr<roce::RoceNic>> nics_;
  std::vector<std::unique_ptr<netreduce::FpgaAggregator>> fpgas_;  // leaves' (or the rack's), then the spine's
  std::vector<LinkEnd> ends_;
  std::vector<eth::LinkFaults*> faults_;  // per end: applied where its frames arrive (at `to`)
  void add_end(std::string from, std::string to, const net::OutPort* port, eth::LinkFaults* faults);
  double link_GBps_ = 0, host_GBps_ = 0;
  Layout layout_;
  std::vector<int> ring_;
  uint32_t mtu_ = 0;
  double loss_ = 0, corruption_ = 0;
  int loop_links_ = 0;
  sc_core::sc_time rto_, hop_latency_;
};

}  // namespace incsim::platforms
