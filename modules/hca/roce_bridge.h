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
#include <cstdint>
#include <ostream>
#include <systemc>
#include <vector>

#include "core/param.h"
#include "hca/hca.h"
#include "roce/roce_nic.h"

namespace incsim::hca {

inline const Param<uint32_t> kRoceWindow{
    "roce.adapter_window_bytes", 512 * 1024, Range::at_least(4096).at_most(64 << 20),
    "data a RoCE adapter has taken from its GPU and the far end has not yet acknowledged, bytes (our choice: "
    "about three round trips of a 400 GbE rail, 3 us or 150 KB; the adapter keeps it for go-back-N)"};

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

 private:
  bool network_ready(sc_core::sc_time now) override;
  bool can_transmit(const net::Packet&, sc_core::sc_time) override { return true; }
  bool transmit(net::Packet* n, sc_core::sc_time now) override;
  // roce::NicClient
  void fill(int qp, const roce::WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) override;
  void deliver(int qp, uint64_t va, const uint8_t* payload, uint32_t bytes) override;
  void acknowledged(int qp, uint32_t una) override;
  void sent() override { wake_to_network(sc_core::sc_time_stamp()); }

  roce::RoceNic nic_;
  std::vector<net::PacketFifo> unacked_;  // [peer GPU]: posted packets, oldest first
  std::vector<uint32_t> una_;             // [peer GPU]: the PSN of unacked_'s front
};

}  // namespace incsim::hca
