#pragma once
// A GPU's RoCE adapter (a ConnectX-7 on 400 GbE): the bridge between the
// GPU's fabric, which it sits on over PCIe, and an Ethernet scale-out
// network carrying RoCEv2 (docs/modern-machines.md, "RoCE and NetReduce
// across nodes"). Its GPU side is every adapter's (Adapter: the GPU's
// writes gathered into packets of up to the MTU and acknowledged, incoming
// packets split into the GPU fabric's writes); its network side is a
// RoceNic, whose reliable connections (one queue pair per peer GPU, QPN the
// peer's index + 1) number, acknowledge and go back N. Each gathered packet
// is one RDMA WRITE (WriteOnly, its RETH the destination address), posted
// when the NIC has sent everything before it, so the gathering goes on while
// the wire is busy as the InfiniBand adapter's does; it is kept until the
// responder acknowledges it, for retransmission, and
// roce.adapter_window_bytes bounds what is kept. The NIC delivers each
// connection's payloads in order, which the GPU side writes to the GPU.
//
// NetReduce across the nodes (join_ring): a GPU's reducing writes to a
// group's region go, each 128-byte block one RDMA WRITE with NetReduce's
// INA header (a message of one packet, its MsgID the block's place in the
// group's sequence, which every member sends in the same order), on a queue
// pair to the next member of the group's ring; the rail leaf's ACL sends
// them to the FPGA beside it, which adds every member's block and sends the
// sum on each member's connection (§3.1, §3.2). The sum reaches this
// adapter on its queue pair from the previous member and goes to the GPU as
// a write to the group's region, counting the group's members. The GPU's
// credits for reducing writes are NetReduce's window.
#include <cstdint>
#include <ostream>
#include <systemc>
#include <vector>

#include "core/param.h"
#include "adapter/hca.h"
#include "roce/roce_nic.h"

namespace incsim::adapter {

inline const Param<uint32_t> kRoceWindow{
    "roce.adapter_window_bytes", 512 * 1024, Range::at_least(4096).at_most(64 << 20),
    "data a RoCE adapter has taken from its GPU and the far end has not yet acknowledged, bytes (our choice: "
    "about three round trips of a 400 GbE rail, 3 us or 150 KB; the adapter keeps it for go-back-N)"};

inline const Param<int> kNetReduceWindow{
    "roce.netreduce_window", 64, Range::at_least(1).at_most(1 << 20),
    "NetReduce's window on a RoCE cluster: one-block messages (128 B) a GPU's thread block may have in flight "
    "through its rail's FPGA, whose aggregator array holds twice as many per ring (NetReduce §3.1; our choice, "
    "as ib.sharp.credits: it covers a 400 GbE adapter's round trip over 16 channels)"};

// The packets the bridge gathers and splits, built before its Adapter base.
struct StagingPool {
  explicit StagingPool(const net::PacketFormat& f) : staging(f) {}
  net::PacketPool staging;
};

class RoceBridge : private StagingPool, public Adapter, private roce::NicClient {
 public:
  // gpu_pool: the GPU fabric's packets; eth_pool: the Ethernet frames.
  // nic: the RoceNic's timing (its latencies 0: the adapter's own,
  // cfg.latency, applies on the GPU side).
  RoceBridge(sc_core::sc_module_name name, const HcaConfig& cfg, const roce::NicConfig& nic, net::PacketPool& gpu_pool,
             net::PacketPool& eth_pool);

  net::InPort& in(int p) override { return p == kPcie ? pcie_in() : nic_.in(0); }
  net::OutPort& out(int p) override { return p == kPcie ? pcie_out() : nic_.out(0); }
  void configure_port(int p, double bw_GBps, sc_core::sc_time latency, uint32_t peer_buffer_bytes) override;
  uint32_t buffer_bytes(int p) const override { return p == kPcie ? config().pcie_buffer_bytes : nic_.buffer_bytes(0); }
  eth::LinkFaults* link_faults(int p) override { return p == kNet ? nic_.link_faults(0) : nullptr; }
  void receive(int, net::Packet* p) override { from_gpu(p); }  // the NIC takes the network's frames
  uint64_t progress() const override { return Adapter::progress() + nic_.progress(); }
  void trace(sc_core::sc_trace_file* tf) const override;
  uint64_t report_held(std::ostream& os) const override;
  const roce::RoceNic& nic() const { return nic_; }
  // Ring `ring` of its rail's FPGA (FpgaAggregator::ring_id, which its INA
  // headers carry): reducing writes to [start, start + bytes) go as its rank
  // `rank` of `ranks` to GPU `next`, sums come from GPU `prev`. Its queue
  // pairs are made the first time it joins that ring; true then.
  bool join_ring(uint16_t ring, uint64_t start, uint64_t bytes, uint16_t rank, uint16_t ranks, uint32_t next,
                 uint32_t prev);
  // The QPN ring `ring`'s contributions from the previous member arrive on:
  // the leaf's ACL rule for that member's connection names it.
  uint32_t ring_qpn(uint16_t ring) const { return roce::RoceNic::qpn_of(recv_qp(local_ring(ring))); }

 private:
  bool network_ready(sc_core::sc_time now) override;
  bool can_transmit(const net::Packet&, sc_core::sc_time) override { return true; }
  bool transmit(net::Packet* n, sc_core::sc_time now) override;
  // roce::NicClient
  void fill(int qp, const roce::WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) override;
  void deliver(int qp, uint64_t va, const uint8_t* payload, uint32_t bytes, net::Lines lines) override;
  void acknowledged(int qp, uint32_t una) override;
  void sent() override { wake_to_network(sim_now()); }

  struct Ring {
    uint16_t id = 0;              // at the FPGA
    uint64_t start = 0, end = 0;  // the group's region
    uint16_t rank = 0, ranks = 0;
    uint32_t next_msg = 0;  // MsgID of its next block
  };
  // The place in rings_ of the FPGA's ring `id`, which this adapter joined.
  uint16_t local_ring(uint16_t id) const;
  // Queue pairs: one per peer GPU, then two per ring joined (to the next
  // member, from the previous), by its place in rings_.
  int send_qp(uint16_t ring) const { return static_cast<int>(config().endpoints) + 2 * ring; }
  int recv_qp(uint16_t ring) const { return send_qp(ring) + 1; }

  roce::RoceNic nic_;
  std::vector<net::PacketFifo> unacked_;  // [queue pair]: posted packets, oldest first
  std::vector<uint32_t> una_;             // [queue pair]: the PSN of unacked_'s front
  std::vector<Ring> rings_;
};

}  // namespace incsim::adapter
