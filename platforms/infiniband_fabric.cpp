#include "infiniband_fabric.h"

#include <algorithm>

#include "core/error.h"
#include "flow/graph.h"
#include "gpu_fabric.h"
#include "nvswitch/eviction.h"

namespace incsim::platforms {

using sc_core::sc_time;

InfinibandFabric::InfinibandFabric(const topo::Topology& t, Config& cfg) : t_(t) {
  const uint32_t mtu = cfg.get(kIbMtu);
  if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096)
    throw UserError("ib.mtu_bytes must be one of InfiniBand's MTUs, 256, 512, 1024, 2048 or 4096, not " +
                    std::to_string(mtu));
  fmt_.header_bytes = cfg.get(kIbHeader);
  fmt_.flit_bytes = 4;  // a payload is padded to whole 4-byte words (BTH PadCnt)
  fmt_.max_payload_bytes = mtu;
  sw_.latency = sc_time(cfg.get(kIbSwitchLatency), sc_core::SC_NS);
  sw_.spread = credit_switch::parse_spread(cfg.get(kIbSpread), kIbSpread.key());
  tables_.entry_bytes = topo::MulticastFabric::kBlockBytes;
  tables_.table_bytes = cfg.get(kSharpTableBytes);
  if (tables_.table_bytes > 0 && tables_.table_bytes < tables_.entry_bytes)
    throw UserError("ib.sharp.table_bytes must hold at least one " + std::to_string(tables_.entry_bytes) +
                    "-byte block, not " + std::to_string(tables_.table_bytes) + " bytes");
  tables_.holds = true;
  // Only where the key is set do the jobs' rows report these tables'
  // counters: a run that does not set it reports what it always did
  // (shared: first come, first served). It is read either way, so
  // --list-params lists it.
  const bool given = cfg.has_override(kSharpPolicy);
  const std::string policy = cfg.get(kSharpPolicy);
  if (given && tables_.table_bytes == 0)
    throw UserError(kSharpPolicy.key() + "=" + policy + " shares SHARP's aggregation buffers, but " +
                    kSharpTableBytes.key() + "=0: the network's switches have none");
  if (tables_.table_bytes > 0)
    tables_.sharing = std::make_shared<nvswitch::TableSharing>(
        nvswitch::TableSharing::parse(policy, kSharpPolicy.key()),
        nvswitch::TableResource{"SHARP's aggregation tables", kSharpPolicy.key(), "sharp_sharing", given});
  const double alu = cfg.get(kSharpAluGBps);
  tables_.alu_ps_per_byte = alu > 0 ? 1000.0 / alu : 0;
  tables_.eviction = nvswitch::make_eviction_policy("lru");
  hca_.latency = sc_time(cfg.get(adapter::kHcaLatency), sc_core::SC_NS);
  hca_.mtu_bytes = mtu;
  hca_.send_queue_bytes = cfg.get(adapter::kHcaSendQueue);
  if (hca_.send_queue_bytes < mtu)
    throw UserError("hca.send_queue_bytes must hold at least one " + std::to_string(mtu) + "-byte packet, not " +
                    std::to_string(hca_.send_queue_bytes));
}

namespace {
// Bytes that keep the link at `p` busy over its credit loop, at least one packet.
uint32_t round_trip_at(const topo::Topology& t, topo::PortRef p, sc_time holding, uint32_t max_packet) {
  const auto& l = t.links()[t.link_at(p)];
  return std::max(net::round_trip_bytes(l.bw_GBps, sc_time(l.latency_ns, sc_core::SC_NS), holding, max_packet),
                  max_packet);
}
}  // namespace

std::unique_ptr<net::Block> InfinibandFabric::make_switch(int s, net::PacketPool& pool) const {
  const auto& node = t_.node(s);
  const uint32_t max_packet = fmt_.wire_bytes(fmt_.max_payload_bytes);
  credit_switch::SwitchConfig c = sw_;
  std::vector<uint32_t> bytes;
  for (int p = 0; p < node.ports; ++p) bytes.push_back(round_trip_at(t_, {s, p}, sw_.latency, max_packet));
  c.in_buffer_bytes = c.out_queue_bytes = *std::max_element(bytes.begin(), bytes.end());
  auto sw = std::make_unique<nvswitch::NvSwitch>(node.name.c_str(), node.ports, switch_wiring(t_, s), c, tables_, pool,
                                                 multicast_);
  for (int p = 0; p < node.ports; ++p) sw->size_port(p, bytes[p], bytes[p]);
  return sw;
}

adapter::HcaConfig adapter_config(const topo::Topology& t, int node, adapter::HcaConfig c, const net::PacketFormat& gpu,
                              uint32_t net_packet_bytes) {
  const auto& n = t.node(node);
  if (n.ports != 2 || t.link_at({node, adapter::Hca::kPcie}) < 0 || t.link_at({node, adapter::Hca::kNet}) < 0)
    throw UserError(n.block + " " + n.name + " needs 2 linked ports, port 0 to its GPU and port 1 to the network");
  c.endpoints = static_cast<uint32_t>(t.endpoints().size());
  c.gpu = static_cast<uint32_t>(t.node(t.peer({node, adapter::Hca::kPcie}).node).index);
  c.pcie_buffer_bytes = round_trip_at(t, {node, adapter::Hca::kPcie}, c.latency, gpu.wire_bytes(gpu.max_payload_bytes));
  if (net_packet_bytes) c.net_buffer_bytes = round_trip_at(t, {node, adapter::Hca::kNet}, c.latency, net_packet_bytes);
  return c;
}

std::unique_ptr<net::Block> InfinibandFabric::make_hca(int node, net::PacketPool& gpu_pool,
                                                       net::PacketPool& net_pool) const {
  const adapter::HcaConfig c = adapter_config(t_, node, hca_, gpu_pool.format(), fmt_.wire_bytes(fmt_.max_payload_bytes));
  return std::make_unique<adapter::Hca>(t_.node(node).name.c_str(), c, gpu_pool, net_pool);
}

namespace {
// What flows see of the InfiniBand network (flow_machine): its packets,
// into which the adapters gather the GPUs' writes; each switch's latency,
// spreading and SHARP tables; each adapter's latency, and that it
// acknowledges a GPU's write once it has taken it.
flow::LinkFormat infiniband_flows(const topo::Topology& t, const std::vector<int>& nodes, Config& cfg,
                                  const PlatformDefaults&, flow::FlowMachine& m) {
  flow::LinkFormat ib;
  ib.header = cfg.get(kIbHeader);
  ib.flit = 4;  // whole 4-byte words (BTH PadCnt)
  ib.max_payload = cfg.get(kIbMtu);
  ib.gathers = true;
  const double sw_ns = cfg.get(kIbSwitchLatency);
  const bool spreads =
      credit_switch::parse_spread(cfg.get(kIbSpread), kIbSpread.key()) != credit_switch::Spread::Destination;
  const double hca_ns = cfg.get(adapter::kHcaLatency);
  const bool sharp = cfg.get(kSharpTableBytes) > 0;
  for (const int k : nodes) {
    const auto n = static_cast<size_t>(k);
    if (topo::kinds::is_adapter(t.node(k).block)) {
      m.node_ns[n] = hca_ns;
      m.acks_early[n] = 1;
    } else {
      m.node_ns[n] = sw_ns;
      m.spreads[n] = spreads;
      m.aggregates[n] = m.merges[n] = sharp;
    }
  }
  return ib;
}
}  // namespace

void register_infiniband_fabric() {
  register_fabric(
      InfinibandFabric::kName,
      [](const topo::Topology& t, Config& cfg, uint64_t, const PlatformDefaults&) {
        return std::make_unique<InfinibandFabric>(t, cfg);
      },
      infiniband_flows);
  register_node_kind(topo::kinds::kIbSwitch, InfinibandFabric::kName, topo::NodeKind::Switch,
                     [](const topo::Topology&, int node, Fabric& f, net::PacketPool& pool) {
                       return dynamic_cast<InfinibandFabric&>(f).make_switch(node, pool);
                     });
  register_bridge_kind(topo::kinds::kHca, GpuFabric::kName, InfinibandFabric::kName, topo::NodeKind::Switch,
                       [](const topo::Topology&, int node, Fabric&, net::PacketPool& gpu_pool, Fabric& net,
                          net::PacketPool& net_pool) {
                         return dynamic_cast<InfinibandFabric&>(net).make_hca(node, gpu_pool, net_pool);
                       });
}

}  // namespace incsim::platforms
