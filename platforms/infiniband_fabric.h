#pragma once
// The scale-out fabric ("infiniband"): a cluster's rail leaves and spines,
// lossless with credit flow control per virtual lane as InfiniBand links
// are, carrying packets of up to an MTU; and the bridge kind hca, each GPU's
// adapter between its node's GPU fabric (over PCIe) and this network
// (docs/modern-machines.md, "Clusters"). A switch is the same credit-based
// crossbar as the GPU fabric's (credit_switch::CreditSwitch) with InfiniBand's
// packet format, latency and buffers, and NVSwitch's tables (nvswitch::NvSwitch)
// as SHARP's aggregation buffers, which hold contributions rather than evict them.
#include <cstdint>
#include <memory>
#include <vector>

#include "adapter/hca.h"
#include "machine.h"
#include "nvswitch/nvswitch.h"

namespace incsim::platforms {

inline const Param<uint32_t> kIbMtu{
    "ib.mtu_bytes", 4096, Range::at_least(256).at_most(4096),
    "InfiniBand MTU, payload bytes per packet: 256, 512, 1024, 2048 or 4096 (InfiniBand Architecture "
    "Specification Vol. 1, 7.7.1; 4096, the largest, as NCCL uses on InfiniBand)"};
inline const Param<uint32_t> kIbHeader{
    "ib.header_bytes", 26, Range::at_least(1).at_most(1024),
    "bytes each InfiniBand packet adds to its payload: LRH 8, BTH 12, ICRC 4, VCRC 2 (InfiniBand Architecture "
    "Specification Vol. 1, ch. 7 and 9; an RDMA write's first packet's 16-byte RETH is left out)"};
inline const Param<double> kIbSwitchLatency{
    "ib.switch_latency_ns", 200.0, Range::at_least(0).at_most(1e9),
    "an InfiniBand switch's port-to-port latency, ns (NVIDIA publishes none for Quantum-2; third-party pages "
    "give from under 150 to about 330 ns: a guess between them)"};
inline const Param<std::string> kIbSpread{
    "ib.spread", "adaptive", Range::none(),
    "how the network's switches spread packets over equal-cost ports (switch.spread's choices): adaptive, per "
    "packet to the least loaded (Quantum-2's adaptive routing, which DGX SuperPODs enable; the receiving adapter "
    "puts each connection's packets back in sequence); destination, the subnet manager's static routes; flow, a "
    "hash per stream"};

// SHARP (Graham et al., "Scalable Hierarchical Aggregation Protocol (SHArP)",
// COMHPC 2016; NVIDIA Quantum-2's SHARPv3): the switches add the members'
// contributions in aggregation buffers and send the sum back down the tree;
// each group holds a share of the buffers, and its hosts may have only as
// many requests outstanding as that share (its "outstanding transactions").
// Quantum-2 publishes neither size: both are guesses, swept in
// docs/modern-machines.md.
inline const Param<uint32_t> kSharpTableBytes{
    "ib.sharp.table_bytes", 256 * 1024, Range::at_least(0).at_most(64 << 20),
    "SHARP aggregation buffer per network switch port, bytes, one 128-byte block per entry (not public for "
    "Quantum-2: a guess, room for 32 groups (channels) x 64 credits of 128 B; 0: the network does not aggregate)"};
// How a jobs: list's jobs share those buffers (nvswitch::TableSharing, the
// NVSwitches' policies; docs/jobs.md). SHARP's aggregation manager gives
// each job its own share of every aggregation node's buffers and
// outstanding transactions: a default percentage per job (sharp_am's
// per_prio_default_quota, NVIDIA SHARP Rev 3.0.0 release notes) or a
// tenant's reservation (NVIDIA SHARP Rev 3.8.0, "SHARP Reservation").
inline const Param<std::string> kSharpPolicy{
    "ib.sharp.policy", "shared", Range::none(),
    "how a jobs: list's jobs share every network switch port's SHARP aggregation buffer: shared (first come, first "
    "served); partitioned (each job its weight's share, weight / total weight, as a SHARP reservation per tenant); "
    "quota (each job at most its quota, a fraction of every buffer, as sharp_am's per-job quota percentage: NVIDIA "
    "SHARP Rev 3.0.0 release notes, per_prio_default_quota); a job whose share cannot hold its groups' credits is "
    "refused or falls back to software (docs/jobs.md). Unset: no policy and no per-job counters"};
inline const Param<double> kSharpAluGBps{
    "ib.sharp.alu_GBps", 0.0, Range::at_least(0).at_most(1e5),
    "GB/s of contributions each port's aggregation ALU adds; 0: it keeps up with its port (NVIDIA describes "
    "SHARPv3's aggregation as at line rate, without a figure: a guess, swept)"};
inline const Param<int> kSharpCredits{
    "ib.sharp.credits", 64, Range::at_least(1).at_most(1 << 20),
    "SHARP blocks of 128 B a GPU's thread block may have in its switch's aggregation buffers (its group's "
    "outstanding transactions: not public, a guess that covers a 400 Gb/s adapter's round trip over 16 channels)"};

class InfinibandFabric : public Fabric {
 public:
  static constexpr const char* kName = "infiniband";
  InfinibandFabric(const topo::Topology& t, Config& cfg);

  net::PacketFormat packet_format() const override { return fmt_; }
  // Its switches' holding tables reduce on the way up (SHARP's trees).
  void use_multicast_manager(topo::MulticastFabric* m) override {
    multicast_ = m;
    m->aggregate_on_the_way();
  }
  const credit_switch::SwitchConfig& switch_config() const { return sw_; }
  // Its switches' aggregation tables (ib.sharp.*).
  const nvswitch::TableConfig& table_config() const { return tables_; }
  // How jobs share them (ib.sharp.policy); null without tables.
  nvswitch::TableSharing* table_sharing() const { return tables_.sharing.get(); }
  std::vector<nvswitch::TableSharing*> table_sharings() const override {
    return tables_.sharing ? std::vector<nvswitch::TableSharing*>{tables_.sharing.get()}
                           : std::vector<nvswitch::TableSharing*>{};
  }
  std::unique_ptr<net::Block> make_switch(int node, net::PacketPool& pool) const;
  // An hca node's adapter: gpu_pool holds the GPU fabric's packets, whose
  // format the PCIe side's buffer is sized for.
  std::unique_ptr<net::Block> make_hca(int node, net::PacketPool& gpu_pool, net::PacketPool& net_pool) const;

 private:
  const topo::Topology& t_;
  net::PacketFormat fmt_;
  credit_switch::SwitchConfig sw_;
  nvswitch::TableConfig tables_;
  adapter::HcaConfig hca_;
  topo::MulticastFabric* multicast_ = nullptr;  // the machine's fabric manager
};

// An adapter node's configuration (an hca's or a roce_bridge's): its GPU,
// its peers, and the buffer facing its GPU sized for the PCIe link's round
// trip (and, given a network packet's bytes, the one facing the network);
// UserError unless port 0 leads to its GPU and port 1 to the network.
adapter::HcaConfig adapter_config(const topo::Topology& t, int node, adapter::HcaConfig c, const net::PacketFormat& gpu,
                              uint32_t net_packet_bytes);

void register_infiniband_fabric();

}  // namespace incsim::platforms
