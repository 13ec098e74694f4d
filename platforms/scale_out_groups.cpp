#include "scale_out_groups.h"

#include <algorithm>
#include <map>
#include <string>

#include "core/error.h"
#include "ethernet/ethernet_switch.h"
#include "ethernet/roce_frame.h"
#include "gpu/group_window.h"
#include "adapter/roce_bridge.h"
#include "infiniband_fabric.h"
#include "netreduce/fpga_aggregator.h"

namespace incsim::platforms {

int adapter_of(const topo::Topology& t, int gpu) {
  const int node = t.endpoints()[gpu];
  for (int p = 0; p < t.node(node).ports; ++p)
    if (const int a = t.peer({node, p}).node; a >= 0 && topo::kinds::is_adapter(t.node(a).block)) return a;
  return -1;
}

namespace {
// The FPGA beside the leaf a GPU's adapter is linked to (its rail's), or -1.
int rail_fpga(const topo::Topology& t, int gpu) {
  const int leaf = t.peer({adapter_of(t, gpu), adapter::Adapter::kNet}).node;
  for (int p = 0; p < t.node(leaf).ports; ++p)
    if (const topo::PortRef f = t.peer({leaf, p}); f.node >= 0 && t.node(f.node).block == topo::kinds::kLeafFpga)
      return f.node;
  return -1;
}
}  // namespace

// SHARP reserves each group's share of a switch's aggregation buffers (its
// credits) when the group is made, on every switch of its tree. A rail's
// leaf holds every group of its GPUs, as homes and merge points, and any one
// port may have to take all their blocks in flight. A spine is on the tree
// of every group with members under several leaves. Of a group on two
// leaves it is only a home (partials from the two leaves meet at the home
// alone), and its blocks are interleaved over its home ports (at least
// every port of its leaves), so of its `credits` consecutive blocks in
// flight one port holds at most credits / homes, rounded up. On three or
// more leaves a spine also merges partials bound for a leaf, and under
// fabric.home_ports=hash homes collide: then a port may hold all of them.
void SharpManager::admit(const collectives::Program& program, const std::vector<int>& gpus, int credits) const {
  const uint32_t bytes = m_.fabric_as<InfinibandFabric>().table_config().table_bytes;
  if (bytes == 0) throw UserError(program.name + " reduces in the network's switches: ib.sharp.table_bytes must be above 0");
  std::vector<bool> pushes(program.groups.size(), false);
  for (const collectives::Operation& o : program.ops)
    if (o.kind == collectives::OpKind::ReduceWrite) pushes[static_cast<size_t>(o.group)] = true;
  std::vector<int> groups(static_cast<size_t>(program.ranks), 0);  // [rank]: its groups that push
  int most = 0;
  for (size_t g = 0; g < program.groups.size(); ++g)
    if (pushes[g])
      for (int r : program.groups[g]) most = std::max(most, ++groups[static_cast<size_t>(r)]);
  const uint64_t entries = bytes / topo::MulticastFabric::kBlockBytes, need = static_cast<uint64_t>(most) * credits;
  const topo::Topology& t = m_.topology();
  const auto leaf_of = [&](int rank) {  // the leaf of the rank's adapter
    return t.peer({adapter_of(t, gpus[static_cast<size_t>(rank)]), adapter::Adapter::kNet}).node;
  };
  const bool interleave = m_.multicast().home_mapping() == topo::HomeMapping::Interleave;
  uint64_t spanning = 0, spine_need = 0, at_one_port = 0;  // pushing groups under several leaves
  for (size_t g = 0; g < program.groups.size(); ++g) {
    if (!pushes[g]) continue;
    std::vector<int> leaves;
    for (int r : program.groups[g])
      if (std::find(leaves.begin(), leaves.end(), leaf_of(r)) == leaves.end()) leaves.push_back(leaf_of(r));
    if (leaves.size() < 2) continue;
    uint64_t homes = 0;
    for (int leaf : leaves) homes += static_cast<uint64_t>(t.node(leaf).ports);
    const uint64_t here =
        interleave && leaves.size() == 2 ? (credits + homes - 1) / homes : static_cast<uint64_t>(credits);
    ++spanning;
    spine_need += here;
    at_one_port = std::max(at_one_port, here);
  }
  // What each switch port must hold: a spine's, a leaf's.
  const std::string spine_needs =
      program.name + " needs " + std::to_string(spine_need) + " aggregation entries per spine port (" +
      std::to_string(spanning) + " groups across several leaves, up to " + std::to_string(at_one_port) +
      " of each one's ib.sharp.credits=" + std::to_string(credits) + " blocks at one port)";
  const std::string port_needs = program.name + " needs " + std::to_string(need) +
                                 " aggregation entries per switch port (" + std::to_string(most) +
                                 " groups on a rail of ib.sharp.credits=" + std::to_string(credits) + " blocks each)";
  const std::string whole = ", but ib.sharp.table_bytes=" + std::to_string(bytes) + " holds " + std::to_string(entries);
  // In a jobs run that sets ib.sharp.policy a job's reservation is its share
  // of every port (below), and a buffer too small for it alone is as short:
  // a ShareShortfall, which a job with fallback: software answers with the ring.
  const nvswitch::TableSharing* sharing = m_.fabric_as<InfinibandFabric>().table_sharing();
  const int job = m_.multicast().tenant();
  const bool shared_by_jobs = sharing && sharing->resource().policy_set && sharing->holds(job);
  const auto short_of = [&](const std::string& why) {
    if (shared_by_jobs) throw ShareShortfall(sharing->resource().tables, why);
    throw UserError(why);
  };
  if (entries < spine_need) short_of(spine_needs + whole);
  if (entries < need) short_of(port_needs + whole);
  // A job's reservation is its share of every port: each port holds each
  // job's own, so the same needs must fit in it.
  if (!shared_by_jobs) return;
  const uint64_t mine = sharing->limit(job, static_cast<uint32_t>(entries));
  if (mine >= spine_need && mine >= need) return;
  const uint64_t wanted = mine < spine_need ? spine_need : need;
  throw ShareShortfall(sharing->resource().tables, (mine < spine_need ? spine_needs : port_needs) + ", but its " +
                                 sharing->share_text(job) + " holds " + std::to_string(mine) +
                                 " of ib.sharp.table_bytes=" + std::to_string(bytes) + "'s " +
                                 std::to_string(entries) + " entries, " + std::to_string(wanted - mine) + " short");
}

// NetReduce on a RoCE cluster (docs/modern-machines.md, "RoCE and NetReduce
// across nodes"): each group that pushes across the nodes is a ring of its
// members in the group's order, aggregated by the FPGA beside their rail's
// leaf: the FPGA gets an aggregator array per ring (2 x window one-block
// messages), each member's adapter a queue pair to the next member and one
// from the previous, and the leaf an ACL rule per member that turns its
// connection's data to the FPGA port of its own leaf port (§4, Fig. 10B).
void NetReduceRings::join(const collectives::Program& program, const std::vector<int>& members,
                          const std::function<uint64_t(int)>& out, uint32_t window, uint32_t clt,
                          elements::DType dtype, elements::RedOp redop) const {
  const topo::Topology& t = m_.topology();
  const auto bridge = [&](int gpu) -> adapter::RoceBridge& {
    return dynamic_cast<adapter::RoceBridge&>(m_.block(adapter_of(t, gpu)));
  };
  std::vector<bool> pushes(program.groups.size(), false);
  for (const collectives::Operation& o : program.ops)
    if (o.kind == collectives::OpKind::ReduceWrite) pushes[static_cast<size_t>(o.group)] = true;
  std::map<std::vector<int>, int> same;  // rings over these GPUs so far
  // The aggregator memory each FPGA must give this program's rings, admitted
  // before anything is installed: a ring of one-block messages cannot
  // shorten them, so too little (fpga.aggregator.policy) is a shortfall.
  const int job = m_.multicast().tenant();
  std::map<int, std::pair<uint64_t, int>> needs;  // FPGA node -> (bytes, rings)
  for (size_t g = 0; g < program.groups.size(); ++g)
    if (pushes[g]) {
      const int fpga = rail_fpga(t, members[static_cast<size_t>(program.groups[g][0])]);
      auto& [bytes, rings] = needs[fpga];
      bytes += netreduce::AggregatorArray::memory_bytes(static_cast<int>(program.groups[g].size()), window, 1,
                                                        topo::MulticastFabric::kBlockBytes);
      ++rings;
    }
  for (const auto& [fpga, need] : needs) {
    if (fpga < 0) continue;
    const std::string what = "aggregator arrays for " + std::to_string(need.second) + " rings of " + program.name + " need";
    dynamic_cast<netreduce::FpgaAggregator&>(m_.block(fpga)).admit(job, need.first, what);
  }
  for (size_t g = 0; g < program.groups.size(); ++g) {
    if (!pushes[g]) continue;
    std::vector<int> gpus;
    for (int r : program.groups[g]) gpus.push_back(members[static_cast<size_t>(r)]);
    const int ranks = static_cast<int>(gpus.size());
    const int leaf = t.peer({adapter_of(t, gpus[0]), adapter::Adapter::kNet}).node;
    for (int gpu : gpus)
      if (t.peer({adapter_of(t, gpu), adapter::Adapter::kNet}).node != leaf)
        throw UserError(program.name + " aggregates each rail in NetReduce's FPGA beside its leaf, but a rail of " +
                        std::to_string(ranks) + " nodes spans several leaves (cluster.leaf_ports), and NetReduce's hierarchy of leaf and "
                        "spine FPGAs (§3.3) is not built on a cluster");
    // The leaf port facing FPGA port k, for k its k-th node port.
    const int fpga = rail_fpga(t, gpus[0]);
    std::vector<int> to_fpga(static_cast<size_t>(t.node(leaf).ports), -1);
    for (int p = 0; p < t.node(leaf).ports; ++p)
      if (const topo::PortRef f = t.peer({leaf, p}); f.node == fpga) to_fpga[static_cast<size_t>(f.port)] = p;
    // The FPGA numbers its rings, every job's that shares it; this
    // program's k-th ring over the same GPUs is its k-th there.
    auto& aggregator = dynamic_cast<netreduce::FpgaAggregator&>(m_.block(fpga));
    const uint16_t ring = aggregator.ring_id(gpus, same[gpus]++);
    if (const uint32_t connections = aggregator.ring_connections(); connections > clt)
      throw UserError(program.name + " needs a CLT entry per connection of each ring at its rail's FPGA, " +
                      std::to_string(connections) + " for the rings there, but fpga.clt.entries=" +
                      std::to_string(clt));
    aggregator.add_ring(ring, ranks, window, 1, topo::MulticastFabric::kBlockBytes, dtype, redop, 0, job);
    for (int k = 0; k < ranks; ++k) {
      const int gpu = gpus[static_cast<size_t>(k)], next = gpus[static_cast<size_t>((k + 1) % ranks)],
                prev = gpus[static_cast<size_t>((k + ranks - 1) % ranks)];
      bridge(gpu).join_ring(ring, out(static_cast<int>(g)), gpu::GroupWindow::kFlag - gpu::GroupWindow::kOut,
                            static_cast<uint16_t>(k), static_cast<uint16_t>(ranks), static_cast<uint32_t>(next),
                            static_cast<uint32_t>(prev));
    }
    auto& sw = dynamic_cast<eth::EthernetSwitch&>(m_.block(leaf));
    for (int k = 0; k < ranks; ++k) {
      const int gpu = gpus[static_cast<size_t>(k)], next = gpus[static_cast<size_t>((k + 1) % ranks)];
      const int port = t.peer({adapter_of(t, gpu), adapter::Adapter::kNet}).port;
      sw.add_acl({eth::ip_of(static_cast<uint32_t>(gpu)), eth::ip_of(static_cast<uint32_t>(next)),
                  bridge(next).ring_qpn(ring), to_fpga[static_cast<size_t>(port)]});
    }
  }
}

}  // namespace incsim::platforms
