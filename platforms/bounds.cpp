#include "bounds.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "adapter/hca.h"
#include "collectives/bounds.h"
#include "core/error.h"

namespace incsim::platforms {

namespace {
// On a cluster the adapters carry a group's traffic only as SHARP's: a
// group across nodes takes reducing writes, which the network's switches
// hold; a group inside a node NVLS's reads and multicasts, which its
// NVSwitches take.
void require_groups_fit_cluster(const collectives::Program& program, const std::vector<int>& gpus,
                                const std::vector<int>& node_of) {
  for (int r = 0; r < program.ranks; ++r)
    for (int i = 0; i < program.op_count(r); ++i) {
      const collectives::Operation& o = program.op(r, i);
      if (!collectives::in_network(o.kind)) continue;
      const auto& g = program.groups[static_cast<size_t>(o.group)];
      const bool across = std::any_of(g.begin(), g.end(), [&](int m) {
        return node_of[gpus[static_cast<size_t>(m)]] != node_of[gpus[static_cast<size_t>(g[0])]];
      });
      const bool push = o.kind == collectives::OpKind::ReduceWrite;
      if (across != push)
        throw UserError(program.name + ": rank " + std::to_string(r) + "'s operation " + std::to_string(i) + " (" +
                        collectives::op_name(o.kind) + ") is in a group " + (across ? "across" : "inside one of") +
                        " the cluster's nodes, which takes " +
                        (across ? "only reducing writes (SHARP in the network's switches)"
                                : "NVLS's reads and multicasts, not reducing writes (its NVSwitches evict partial sums)"));
    }
}
}  // namespace

double endpoint_payload_GBps(const topo::Topology& t, WirePacket p, int g, const std::vector<int>& peers) {
  const int node = t.endpoints()[g];
  double b = 0;
  for (int port = 0; port < t.node(node).ports; ++port) {
    if (std::none_of(peers.begin(), peers.end(),
                     [&](int d) { return d != g && t.port_on_shortest_path({node, port}, d); }))
      continue;
    b += collectives::payload_bandwidth_GBps(t.links()[t.link_at({node, port})].bw_GBps, p.payload, p.header, p.ack);
  }
  return b;
}

const char* cores_links(const collectives::Program& p) {
  return !p.groups.empty() ? kPostedLinks : collectives::bound_charges_acks(p) ? kAckedLinks : kOneWayLinks;
}

double least_endpoint_GBps(const topo::Topology& t, WirePacket p, const std::vector<int>& gpus) {
  double b = endpoint_payload_GBps(t, p, gpus[0], gpus);
  for (size_t r = 1; r < gpus.size(); ++r) b = std::min(b, endpoint_payload_GBps(t, p, gpus[r], gpus));
  return b;
}

ClusterBound cluster_bound(const collectives::Program& program, const topo::Topology& t, WirePacket nvlink,
                           WirePacket net, const std::vector<int>& gpus, const std::vector<int>& node_of) {
  require_groups_fit_cluster(program, gpus, node_of);
  ClusterBound out;
  const collectives::Buffers& b = program.buffers[0];
  const double message_chunks =
      collectives::buffer_shape(program.collective) == collectives::Collective::AllGather ? b.output : b.input;
  const double factor = collectives::busbw_factor(program.collective, program.ranks);
  for (int r = 0; r < program.ranks; ++r) {
    const int gpu = gpus[static_cast<size_t>(r)], node = t.endpoints()[gpu];
    // Its links: NVLink's payload, each write acknowledged; the adapter's,
    // the slower of its PCIe link (acknowledged there) and its network link.
    double nvl = 0, hca = 0;
    for (int port = 0; port < t.node(node).ports; ++port) {
      const topo::PortRef peer = t.peer({node, port});
      const double bw = t.links()[t.link_at({node, port})].bw_GBps;
      const double own = collectives::payload_bandwidth_GBps(bw, nvlink.payload, nvlink.header, nvlink.ack);
      if (!topo::kinds::is_adapter(t.node(peer.node).block)) {
        nvl += own;
        continue;
      }
      const double wire = t.links()[t.link_at({peer.node, adapter::Hca::kNet})].bw_GBps;
      hca = std::min(own, collectives::payload_bandwidth_GBps(wire, net.payload, net.header, net.ack));
    }
    double inside = 0, across = 0;
    collectives::sent_chunks(
        program, r, [&](int peer) { return node_of[gpus[static_cast<size_t>(peer)]] == node_of[gpu]; }, inside, across);
    // Its time per byte of the message, against the busbw convention's bytes.
    const double t_nvl = inside / message_chunks / nvl, t_hca = across / message_chunks / hca;
    if (t_nvl + t_hca == 0) continue;
    const double g = factor / std::max(t_nvl, t_hca);
    if (out.busbw_GBps == 0 || g < out.busbw_GBps) out = {g, nvl, hca, t_hca > t_nvl};
  }
  return out;
}

std::string cluster_note(const ClusterBound& b, size_t nodes, size_t gpus_per_node) {
  std::ostringstream note;
  note << std::fixed << std::setprecision(1) << nodes << " nodes of " << gpus_per_node
       << " GPUs; each GPU's sends within its node over NVLink (" << b.nvlink_GBps << " GB/s payload) and to other "
       << "nodes through its adapter (" << b.adapter_GBps << " GB/s): the "
       << (b.adapter_limits ? "adapters" : "NVLinks") << " limit the bound";
  return note.str();
}

double cores_bound_us(const collectives::Program& p, uint64_t bytes, double endpoint_GBps, bool cluster) {
  const double moved = cluster ? collectives::busbw_factor(p.collective, p.ranks) : collectives::moved_per_byte(p);
  return collectives::bandwidth_bound_us(bytes, moved, endpoint_GBps);
}

void print_cluster_bound(std::ostream& os, double busbw_GBps) {
  os << "# bound: " << std::fixed << std::setprecision(1) << busbw_GBps
     << " GB/s busbw (the busiest GPU's bytes over NVLink and through its adapter, at their payload rates)\n";
}

double program_bound_us(const collectives::Program& p, uint64_t bytes, double endpoint_GBps, double algbw_GBps,
                        bool cluster) {
  if (algbw_GBps > 0) return static_cast<double>(bytes) / (algbw_GBps * 1e3);
  return cores_bound_us(p, bytes, endpoint_GBps, cluster);
}

void print_algbw_bound(std::ostream& os, double algbw_GBps, const std::string& note) {
  os << "# bound: " << std::fixed << std::setprecision(1) << algbw_GBps << " GB/s algbw (" << note << ")\n";
}

const char* nic_links(bool one_head) {
  return one_head ? "links, one head flit per message; NIC messages are posted"
                  : "links less header flits; NIC messages are posted";
}

void print_payload_bound(std::ostream& os, double endpoint_GBps, const char* links, const collectives::Program& p,
                         uint64_t bytes, double bound_us, const std::string& name) {
  os << "# bound: " << std::fixed << std::setprecision(1) << endpoint_GBps << " GB/s payload per GPU (" << links
     << ")";
  // What that allows this algorithm (the bound column's 100%): a ring
  // moves 2(n-1)/n of the size per GPU, push and NVLS the size once.
  if (bound_us > 0) {
    const double busbw = static_cast<double>(bytes) / (bound_us * 1e3) * collectives::busbw_factor(p.collective, p.ranks);
    os << ", so " << name << "'s busbw is at most " << busbw << " GB/s";
    // Above the links' own rate only where the switches reduce or multicast:
    // busbw is a ring's equivalent, not bytes on a wire.
    if (busbw > endpoint_GBps * 1.001)
      os << " (busbw is nccl-tests' algbw times its factor for the collective, the rate a ring's links would need; "
            "reducing or multicasting in the switches moves less, so it can exceed the links')";
  }
  os << "\n";
}

}  // namespace incsim::platforms
