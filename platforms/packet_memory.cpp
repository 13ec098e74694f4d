#include "packet_memory.h"

#include <algorithm>

#include "gpu_fabric.h"
#include "infiniband_fabric.h"
#include "net/packet.h"
#include "nvswitch/reduction_table.h"

namespace incsim::platforms {

namespace {
// Fitted by least squares (relative error) to the growth of resident memory
// when GpuMachine built dgx2, hgx-h100, nvl72, fattree2l (32, 128), star (64
// to 2,048), torus (8x8 to 32x32), mesh 16x16, fattree (256, 1,024), bigraph
// 8x16 and clusters of 2 to 64 hgx-h100 nodes, 4 NVL72 and 8 DGX-2 nodes,
// on InfiniBand and RoCE, with the routing and reduction tables taken out.
constexpr uint64_t kPerEndpoint = 10 << 10;  // a GPU, its NIC and port buffers
constexpr uint64_t kPerLink = 9 << 10;       // two one-way channels and their ends
constexpr uint64_t kPerSwitchPort = 1536;    // a switch port's buffers and queues
constexpr uint64_t kPerPortPair = 10;        // a crossbar's state per input and output
constexpr uint64_t kPerAdapter = 512;        // an adapter or FPGA beyond its ports and links
// A reduction table entry beside its data: ReductionTable's Entry (40 B), two
// index buckets (8 B) and its place on the free list (4 B).
constexpr uint64_t kEntryOverhead = 52;
constexpr int kSamples = 8;  // destinations (and switches) sampled per switch

bool adapter_or_fpga(const std::string& block) {
  return topo::kinds::is_adapter(block) || block == topo::kinds::kLeafFpga || block == topo::kinds::kFpgaAggregator;
}
}  // namespace

PacketMemory packet_memory(const topo::Topology& t, Config& cfg, const PlatformDefaults& d) {
  PacketMemory m;
  const uint64_t endpoints = t.endpoints().size(), switches = t.switches().size();
  m.blocks = endpoints * kPerEndpoint + t.links().size() * kPerLink;
  const uint32_t gpu_entry = cfg.get(net::kMaxPayloadBytes, d.max_payload_bytes);
  uint32_t gpu_table = 0, net_table = 0;
  bool read_gpu = false, read_net = false;
  for (int s : t.switches()) {
    const topo::Node& n = t.node(s);
    if (adapter_or_fpga(n.block)) {
      m.blocks += kPerAdapter;
      continue;
    }
    const uint64_t ports = static_cast<uint64_t>(n.ports);
    m.blocks += ports * kPerSwitchPort + ports * ports * kPerPortPair;
    // Routes toward every endpoint and every switch: a port and an offset
    // each, and the equal-cost ports, their count sampled.
    uint64_t to_endpoints = 0, to_switches = 0;
    for (int k = 0; k < kSamples; ++k) {
      to_endpoints += t.routes(s, static_cast<int>((k * endpoints + n.index) / kSamples % endpoints)).size();
      to_switches += t.routes_to_switch(s, static_cast<int>((k * switches + n.index) / kSamples % switches)).size();
    }
    m.routes += endpoints * (sizeof(int16_t) + sizeof(uint32_t)) + switches * sizeof(uint32_t) +
                sizeof(int16_t) * (endpoints * to_endpoints + switches * to_switches) / kSamples;
    // Reduction tables: a GPU fabric's in-network switches (Klenk's, per port) and InfiniBand's SHARP buffers.
    uint64_t table = 0, entry = 0;
    if (n.block == topo::kinds::kIbSwitch) {
      if (!read_net) net_table = cfg.get(kSharpTableBytes), read_net = true;
      table = net_table;
      entry = topo::MulticastFabric::kBlockBytes;
    } else if (fabric_of_kind(n.block) == GpuFabric::kName && !is_plain_switch(t, s)) {
      if (!read_gpu) gpu_table = d.tables ? cfg.get(nvswitch::kTableBytes, d.table_bytes) : 0, read_gpu = true;
      table = gpu_table;
      entry = gpu_entry;
    }
    if (entry > 0) m.tables += ports * (table / entry) * (entry + kEntryOverhead);
  }
  return m;
}

}  // namespace incsim::platforms
