#include "ethernet_fabric.h"

#include "core/error.h"
#include "flow/graph.h"
#include "roce/roce_host.h"
#include "gpu_fabric.h"
#include "infiniband_fabric.h"
#include "nvswitch/nvswitch.h"
#include "topology/cluster.h"

namespace incsim::platforms {

void refuse_lossy_flows(double loss, double corruption) {
  for (const auto& [p, value] : {std::pair{&kLinkLoss, loss}, std::pair{&kLinkCorruption, corruption}})
    if (value > 0)
      throw UserError(p->key() + " drops frames for go-back-N to resend, which --fidelity flow does not simulate");
}

uint32_t roce_mtu(Config& cfg, bool cluster) {
  const uint32_t mtu = cluster ? cfg.get(roce::kMtuPayload, 4096u) : cfg.get(roce::kMtuPayload);
  if (mtu % 4)
    throw UserError("roce.mtu_payload must be a multiple of 4 between 4 and 4096 bytes, not " + std::to_string(mtu));
  return mtu;
}

EthernetFabric::EthernetFabric(const topo::Topology& t, Config& cfg, uint64_t /*seed*/) : t_(t) {
  // A cluster's RoCE network or NetReduce's platforms.
  const bool cluster = topo::is_roce_cluster(t);
  loss_ = cfg.get(kLinkLoss);
  corruption_ = cfg.get(kLinkCorruption);
  mtu_ = roce_mtu(cfg, cluster);
  const uint32_t ack_every = cfg.get(roce::kAckEvery);
  const sc_core::sc_time rto(cfg.get(roce::kRto), sc_core::SC_US);
  const uint32_t buffer = cfg.get(eth::kEthBufferBytes);
  // Credits: a frame leaves only when the whole of it fits in the next
  // buffer, so a buffer smaller than the largest frame (a message's first
  // packet, with RETH and INA headers) never lets it go.
  const uint32_t largest_frame = eth::kEthWireOverhead + eth::kRoceOverhead + mtu_ + eth::kRethBytes + eth::kInaBytes;
  if (buffer < largest_frame)
    throw UserError("switch.buffer_bytes must hold at least one " + std::to_string(largest_frame) +
                    "-byte frame (roce.mtu_payload " + std::to_string(mtu_) + " plus headers), not " +
                    std::to_string(buffer));
  // NetReduce §5.1 does not give its switch's latency: 400 ns, a commodity 100 GbE switch (nvswitch.h).
  const sc_core::sc_time sw_latency(cfg.get(credit_switch::kSwitchLatency, 400.0), sc_core::SC_NS);
  sw_ = {sw_latency, buffer};
  if (cluster) {
    // The adapter's own latency, on its GPU side, stands for the NIC's: the
    // NetReduce hosts' posting and delivery latencies (software) do not apply.
    nic_ = {buffer, mtu_, ack_every, rto, sc_core::SC_ZERO_TIME, sc_core::SC_ZERO_TIME};
    bridge_.latency = sc_core::sc_time(cfg.get(adapter::kHcaLatency), sc_core::SC_NS);
    bridge_.mtu_bytes = mtu_;
    bridge_.send_queue_bytes = cfg.get(adapter::kRoceWindow);  // at least 4096 bytes: one packet of the largest MTU
  } else {
    const sc_core::sc_time tx_latency(cfg.get(roce::kTxLatency), sc_core::SC_NS);
    const sc_core::sc_time rx_latency(cfg.get(roce::kRxLatency), sc_core::SC_NS);
    nic_ = {buffer, mtu_, ack_every, rto, tx_latency, rx_latency};
  }
  fpga_.buffer_bytes = buffer;
  fpga_.mtu_payload = mtu_;
  bool fpgas = false;
  for (const topo::Node& node : t_.nodes())
    fpgas = fpgas || node.block == topo::kinds::kFpgaAggregator || node.block == topo::kinds::kLeafFpga;
  for (int e : t_.endpoints()) {
    const auto& node = t_.node(e);
    if (node.block == topo::kinds::kRoceHost && node.ports != 1)  // a NIC has one Ethernet port
      throw UserError("node " + node.name + " is a roce_host, which has 1 port, not " + std::to_string(node.ports));
  }
  if (fpgas) {  // their keys are read only where there is one
    fpga_.latency = sc_core::sc_time(cfg.get(netreduce::kFpgaLatency), sc_core::SC_NS);
    fpga_.clt_entries = cfg.get(netreduce::kCltEntries);
    fpga_.aggregator_bytes = cfg.get(netreduce::kAggregatorBytes);
    sharing_ = nvswitch::TableSharing::of_capacity(cfg, netreduce::kAggregatorPolicy, "the FPGAs' aggregator memory",
                                                   "aggregator_sharing", netreduce::kAggregatorBytes.key(),
                                                   fpga_.aggregator_bytes, "gives it no budget to share");
    fpga_.sharing = sharing_.get();
  }
}

net::PacketFormat EthernetFabric::packet_format() const { return net::PacketFormat{0, 1, eth::kPayloadOffset + mtu_}; }

std::unique_ptr<net::Block> EthernetFabric::make_switch(int s, net::PacketPool& pool) const {
  const auto& node = t_.node(s);
  auto sw = std::make_unique<eth::EthernetSwitch>(node.name.c_str(), node.ports, sw_, &pool);
  // The forwarding database: every endpoint by the graph's route. A job may
  // add ACL rules and override an entry (netreduce_job.h).
  // Equal-cost ports (a cluster's leaf to its spines) are chosen per flow.
  for (size_t d = 0; d < t_.endpoints().size(); ++d) {
    const int first = t_.route(s, static_cast<int>(d));
    sw->set_route(static_cast<uint32_t>(d), first);
    for (int16_t port : t_.routes(s, static_cast<int>(d)))
      if (port != first) sw->add_route(static_cast<uint32_t>(d), port);
  }
  return sw;
}

std::unique_ptr<net::Block> EthernetFabric::make_host(int e, net::PacketPool& pool) const {
  const auto& node = t_.node(e);
  // A host: its NIC and its GPU's compute (roce/roce_host.h).
  return std::make_unique<roce::RoceHost>(node.name.c_str(), node.index, ip_of(node.index), nic_, &pool);
}

std::unique_ptr<net::Block> EthernetFabric::make_bridge(int node, net::PacketPool& gpu_pool,
                                                        net::PacketPool& eth_pool) const {
  const adapter::HcaConfig c = adapter_config(t_, node, bridge_, gpu_pool.format(), 0);
  return std::make_unique<adapter::RoceBridge>(t_.node(node).name.c_str(), c, nic_, gpu_pool, eth_pool);
}

std::unique_ptr<net::Block> EthernetFabric::make_fpga(int e, net::PacketPool& pool) const {
  const auto& node = t_.node(e);
  return std::make_unique<netreduce::FpgaAggregator>(node.name.c_str(), node.ports, fpga_, &pool);
}

namespace {
// What flows see of a RoCE network (flow_machine): one RDMA WRITE per
// packet the adapters gather (WriteOnly, its RETH), each acknowledged by an
// ACK frame, the payload a multiple of 4 bytes; each switch's latency and
// its ECMP hash; each adapter's latency, and that it acknowledges a GPU's
// write once it has taken it. NetReduce's hosts and FPGAs run as flows
// through their own workload (flow/roce_flows.h).
flow::LinkFormat ethernet_flows(const topo::Topology& t, const std::vector<int>& nodes, Config& cfg,
                                const PlatformDefaults&, flow::FlowMachine& m) {
  refuse_lossy_flows(cfg.get(kLinkLoss), cfg.get(kLinkCorruption));
  flow::LinkFormat eth;
  eth.header = eth::kEthWireOverhead + eth::kRoceOverhead + eth::kRethBytes;
  eth.flit = 4;
  eth.max_payload = roce_mtu(cfg, topo::is_roce_cluster(t));
  eth.gathers = true;
  eth.ack_bytes = eth::kEthWireOverhead + eth::kRoceOverhead + eth::kAethBytes;
  // A cluster's GPU fabric has declared the switches' latency key with its
  // default before this reads it, as packet level's EthernetFabric does.
  const double sw_ns = cfg.get(credit_switch::kSwitchLatency, 400.0);
  bool adapters = false;
  for (const int k : nodes) adapters = adapters || topo::kinds::is_adapter(t.node(k).block);
  const double hca_ns = adapters ? cfg.get(adapter::kHcaLatency) : 0;
  for (const int k : nodes) {
    const auto n = static_cast<size_t>(k);
    if (topo::kinds::is_adapter(t.node(k).block)) {
      m.node_ns[n] = hca_ns;
      m.acks_early[n] = 1;
    } else if (t.node(k).block == topo::kinds::kEthernetSwitch) {
      m.node_ns[n] = sw_ns;
      m.hashes[n] = 1;
    }
  }
  return eth;
}
}  // namespace

void register_ethernet_fabric() {
  register_fabric(
      EthernetFabric::kName,
      [](const topo::Topology& t, Config& cfg, uint64_t seed, const PlatformDefaults&) {
        return std::make_unique<EthernetFabric>(t, cfg, seed);
      },
      ethernet_flows);
  using topo::NodeKind;
  register_node_kind(topo::kinds::kEthernetSwitch, EthernetFabric::kName, NodeKind::Switch,
                     [](const topo::Topology&, int n, Fabric& f, net::PacketPool& pool) {
                       return dynamic_cast<EthernetFabric&>(f).make_switch(n, pool);
                     });
  register_node_kind(topo::kinds::kRoceHost, EthernetFabric::kName, NodeKind::Endpoint,
                     [](const topo::Topology&, int n, Fabric& f, net::PacketPool& pool) {
                       return dynamic_cast<EthernetFabric&>(f).make_host(n, pool);
                     });
  register_node_kind(topo::kinds::kFpgaAggregator, EthernetFabric::kName, NodeKind::Endpoint,
                     [](const topo::Topology&, int n, Fabric& f, net::PacketPool& pool) {
                       return dynamic_cast<EthernetFabric&>(f).make_fpga(n, pool);
                     });
  register_node_kind(topo::kinds::kLeafFpga, EthernetFabric::kName, NodeKind::Switch,
                     [](const topo::Topology&, int n, Fabric& f, net::PacketPool& pool) {
                       return dynamic_cast<EthernetFabric&>(f).make_fpga(n, pool);
                     });
  register_bridge_kind(topo::kinds::kRoceBridge, GpuFabric::kName, EthernetFabric::kName, NodeKind::Switch,
                       [](const topo::Topology&, int node, Fabric&, net::PacketPool& gpu_pool, Fabric& net,
                          net::PacketPool& eth_pool) {
                         return dynamic_cast<EthernetFabric&>(net).make_bridge(node, gpu_pool, eth_pool);
                       });
}

}  // namespace incsim::platforms
