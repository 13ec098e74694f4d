#pragma once
// The Ethernet fabric ("ethernet", NetReduce §4, Fig. 10B): RoCE frames
// between 100 GbE hosts (RoceNic), commodity switches (EthernetSwitch,
// forwarding by the graph's routes, ECMP per connection) and FPGA
// aggregators (FpgaAggregator), with per-link loss and corruption; and a
// cluster's RoCE scale-out network, whose bridge kind roce_bridge is each
// GPU's adapter (adapter::RoceBridge, docs/modern-machines.md). What a job needs
// beyond the wiring (queue pairs, ACL rules, the aggregation hierarchy) its
// workload programs into these blocks (netreduce_job.h).
#include <cstdint>
#include <memory>

#include "ethernet/ethernet_switch.h"
#include "adapter/roce_bridge.h"
#include "machine.h"
#include "netreduce/fpga_aggregator.h"
#include "roce/roce_nic.h"

namespace incsim::platforms {

// roce.mtu_payload, checked: on a cluster RoCE's largest MTU, 4096 (IBA's,
// which RoCEv2 keeps; ConnectX-7 on 400 GbE), by default.
uint32_t roce_mtu(Config& cfg, bool cluster);
// Refuses link.loss and link.corruption (`loss`, `corruption`) where a RoCE
// network runs as flows, which resend nothing.
void refuse_lossy_flows(double loss, double corruption);

class EthernetFabric : public Fabric {
 public:
  static constexpr const char* kName = "ethernet";
  // Reads the switch, NIC, link-fault and (if the graph has an FPGA) FPGA
  // parameters; UserError for a bad value.
  EthernetFabric(const topo::Topology& t, Config& cfg, uint64_t seed);

  // A frame's headers, payload and the INA and RETH headers of a message's
  // first packet fit one pooled packet.
  net::PacketFormat packet_format() const override;
  double link_loss() const override { return loss_; }
  double link_corruption() const override { return corruption_; }
  // How a jobs: list's rings share the FPGAs' aggregator memory
  // (fpga.aggregator.policy); null without an FPGA.
  std::vector<nvswitch::TableSharing*> table_sharings() const override {
    return sharing_ ? std::vector<nvswitch::TableSharing*>{sharing_.get()} : std::vector<nvswitch::TableSharing*>{};
  }

  uint32_t mtu_payload() const { return mtu_; }
  sc_core::sc_time rto() const { return nic_.rto; }
  sc_core::sc_time switch_latency() const { return sw_.latency; }
  sc_core::sc_time tx_latency() const { return nic_.tx_latency; }
  sc_core::sc_time rx_latency() const { return nic_.rx_latency; }
  uint32_t ack_every() const { return nic_.ack_every; }
  sc_core::sc_time fpga_latency() const { return fpga_.latency; }
  // The IP address of endpoint e: 10.0.0.1 for endpoint 0, and so on.
  static uint32_t ip_of(int endpoint) { return eth::ip_of(static_cast<uint32_t>(endpoint)); }

  std::unique_ptr<net::Block> make_switch(int node, net::PacketPool& pool) const;
  std::unique_ptr<net::Block> make_host(int node, net::PacketPool& pool) const;
  std::unique_ptr<net::Block> make_fpga(int node, net::PacketPool& pool) const;
  // A cluster's roce_bridge node: gpu_pool holds the GPU fabric's packets.
  std::unique_ptr<net::Block> make_bridge(int node, net::PacketPool& gpu_pool, net::PacketPool& eth_pool) const;

 private:
  const topo::Topology& t_;
  uint32_t mtu_ = 0;
  double loss_ = 0, corruption_ = 0;
  eth::SwitchConfig sw_{};
  roce::NicConfig nic_{};
  netreduce::FpgaConfig fpga_{};
  std::shared_ptr<nvswitch::TableSharing> sharing_;
  adapter::HcaConfig bridge_{};  // a cluster's adapters (roce_bridge)
};

void register_ethernet_fabric();

}  // namespace incsim::platforms
