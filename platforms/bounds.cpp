#include "bounds.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>
#include <sstream>

#include "adapter/hca.h"
#include "collectives/bounds.h"
#include "core/error.h"
#include "gpu_fabric.h"
#include "topology/cluster.h"
#include "topology/multicast.h"

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

namespace {
using Shares = std::vector<std::pair<int, double>>;  // (link direction: 2 x link, + 1 from b to a; share)

// Where what node `from` sends goes, each link direction with its share:
// to endpoint dst as the tables route it, a spreading node's split evenly
// over its equal-cost ports; or to switch number sw, split evenly at every
// node (a push's blocks take each of a home switch's ports in turn, and each
// port its own one of the equal-cost links, MulticastFabric::home_port).
class Router {
 public:
  Router(const topo::Topology& t, const std::vector<uint8_t>& spreads) : t_(t), spreads_(spreads) {}
  const topo::Topology& topology() const { return t_; }
  const Shares& shares(int from, int dst) {
    return walk(from, t_.endpoints()[static_cast<size_t>(dst)], [&](int node, int16_t port) {
      return spreads_[static_cast<size_t>(node)] || port == t_.route(node, dst);
    }, [&](int node) { return t_.routes(node, dst); });
  }
  const Shares& shares_to_switch(int from, int sw) {
    return walk(from, t_.switches()[static_cast<size_t>(sw)], [](int, int16_t) { return true; },
                [&](int node) { return t_.routes_to_switch(node, sw); });
  }

 private:
  template <class Takes, class Ports>
  const Shares& walk(int from, int to, Takes&& takes, Ports&& ports_of) {
    out_.clear();
    at_.assign(1, {from, 1.0});
    while (!at_.empty()) {
      next_.clear();
      for (const auto& [node, share] : at_) {
        if (node == to) continue;
        const topo::PortSpan all = ports_of(node);
        size_t n = 0;
        for (int16_t port : all) n += takes(node, port);
        for (int16_t port : all) {
          if (!takes(node, port)) continue;
          const int k = t_.link_at({node, port});
          const topo::Link& l = t_.links()[static_cast<size_t>(k)];
          const bool forward = l.a.node == node && l.a.port == port;
          out_.push_back({2 * k + (forward ? 0 : 1), share / static_cast<double>(n)});
          next_.push_back({forward ? l.b.node : l.a.node, share / static_cast<double>(n)});
        }
      }
      // One entry per node: a level's ways meet again below.
      std::sort(next_.begin(), next_.end());
      at_.clear();
      for (const auto& x : next_)
        if (!at_.empty() && at_.back().first == x.first) at_.back().second += x.second;
        else at_.push_back(x);
    }
    return out_;
  }

  const topo::Topology& t_;
  const std::vector<uint8_t>& spreads_;
  Shares out_, at_, next_;
};

// The switches that hold a push group's home ports (topo::home_switches),
// each with its share of the blocks, one per port.
std::vector<std::pair<int, double>> home_shares(const topo::Topology& t, const std::vector<int>& gpus,
                                                const std::vector<int>& members) {
  std::vector<int> targets;
  for (int m : members) targets.push_back(gpus[static_cast<size_t>(m)]);
  std::vector<std::pair<int, double>> homes;
  double ports = 0;
  for (int s : topo::home_switches(t, targets, [&t](int node) { return holds_homes(t, node); })) {
    const int n = t.node(t.switches()[static_cast<size_t>(s)]).ports;
    homes.push_back({s, n});
    ports += n;
  }
  for (auto& h : homes) h.second /= ports;
  return homes;
}

// One in-network operation of a group's members in the same position on the
// same channel: who contributes, who receives, how many chunks, and whether
// its contributions go unreduced to their block's home.
struct Instance {
  std::vector<int> contributors, receivers;
  uint32_t chunks = 0;
  bool at_home = false;
};

// Adds `chunks` times an in-network operation's traffic to load. Where the
// switches reduce on the way (pull's and NVLS's responses climbing the
// request's tree, SHARP's aggregation trees) and where they multicast, each
// link direction of the tree joining its contributors to a pivot member and
// the pivot to its receivers carries one copy. Klenk's push reduces only at
// the home port (the switch port to the block's home GPU, blocks interleaved
// over the receivers): each contribution goes there whole, and the sum is
// multicast from there.
void add_tree(Router& router, const std::vector<int>& gpus, bool at_home, const std::vector<int>& contributors,
              const std::vector<int>& receivers, double chunks, std::vector<double>& up, std::vector<double>& down,
              std::vector<int>& met, std::vector<double>& load) {
  const topo::Topology& t = router.topology();
  const auto node_of = [&](int rank) { return t.endpoints()[static_cast<size_t>(gpus[static_cast<size_t>(rank)])]; };
  // back: the way's links the other way (a multicast tree is the routes toward its root, reversed).
  const auto note = [&](const Shares& way, std::vector<double>& on, bool sum, bool back = false) {
    for (const auto& [fwd, share] : way) {
      const int dir = back ? fwd ^ 1 : fwd;
      double& x = on[static_cast<size_t>(dir)];
      if (up[static_cast<size_t>(dir)] == 0 && down[static_cast<size_t>(dir)] == 0) met.push_back(dir);
      x = sum ? x + share : std::max(x, share);
    }
  };
  const auto add = [&](int from, int to, std::vector<double>& on) {
    if (from != to) note(router.shares(node_of(from), gpus[static_cast<size_t>(to)]), on, false);
  };
  const auto drain = [&](double weight) {
    for (int dir : met) {
      load[static_cast<size_t>(dir)] +=
          weight * (up[static_cast<size_t>(dir)] + down[static_cast<size_t>(dir)]);
      up[static_cast<size_t>(dir)] = down[static_cast<size_t>(dir)] = 0;
    }
    met.clear();
  };
  if (at_home) {
    std::vector<int> members = contributors;
    members.insert(members.end(), receivers.begin(), receivers.end());
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    for (const auto& [sw, part] : home_shares(t, gpus, members)) {
      for (int c : contributors) note(router.shares_to_switch(node_of(c), sw), up, true);
      for (int r : receivers) note(router.shares_to_switch(node_of(r), sw), down, false, true);
      drain(chunks * part);
    }
    return;
  }
  const int pivot = contributors.size() == 1 ? contributors[0] : receivers.empty() ? contributors[0] : receivers[0];
  for (int c : contributors) add(c, pivot, up);
  for (int r : receivers) add(pivot, r, down);
  drain(chunks);
}
bool scale_out(const topo::Topology& t, int node) {
  const std::string& b = t.node(node).block;
  return topo::kinds::is_adapter(b) || b == topo::kinds::kIbSwitch || b == topo::kinds::kEthernetSwitch;
}

double payload_GBps(const topo::Topology& t, const topo::Link& l, WirePacket fabric, WirePacket net) {
  const WirePacket w = scale_out(t, l.a.node) || scale_out(t, l.b.node) ? net : fabric;
  return collectives::payload_bandwidth_GBps(l.bw_GBps, w.payload, w.header, w.ack);
}

double message_chunks(const collectives::Program& p) {
  const collectives::Buffers& b = p.buffers[0];
  return collectives::buffer_shape(p.collective) == collectives::Collective::AllGather ? b.output : b.input;
}

bool slower(const LinkBound& a, const LinkBound& b) {
  return !a.where.empty() && (b.where.empty() || a.moved / a.payload_GBps > b.moved / b.payload_GBps * (1 + 1e-9));
}

// Each switch's links to other switches, where they are a cut of the program's GPUs.
LinkBound cut_bound(const collectives::Program& p, const topo::Topology& t, const std::vector<int>& gpus,
                    WirePacket fabric, WirePacket net) {
  LinkBound out;
  if (!topo::cluster_nodes(t).empty()) return out;
  const size_t nodes = t.nodes().size();
  std::vector<int> ranks_at(nodes, 0);  // [node]: the program's ranks on it
  for (int g : gpus) ++ranks_at[static_cast<size_t>(t.endpoints()[static_cast<size_t>(g)])];
  const int root_node = collectives::rooted(p.collective)
                            ? t.endpoints()[static_cast<size_t>(gpus[static_cast<size_t>(p.root)])]
                            : -1;
  std::vector<int> parent(nodes);
  const std::function<int(int)> find = [&](int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); };
  std::vector<int> cut;  // v's links to other switches
  for (int v : t.switches()) {
    cut.clear();
    for (int port = 0; port < t.node(v).ports; ++port) {
      const int k = t.link_at({v, port});
      if (k < 0) continue;
      if (t.node(t.peer({v, port}).node).kind == topo::NodeKind::Switch) cut.push_back(k);
    }
    if (cut.empty()) continue;
    std::iota(parent.begin(), parent.end(), 0);
    for (size_t k = 0; k < t.links().size(); ++k) {
      if (std::find(cut.begin(), cut.end(), static_cast<int>(k)) != cut.end()) continue;
      const topo::Link& l = t.links()[k];
      parent[static_cast<size_t>(find(l.a.node))] = find(l.b.node);
    }
    int from = 0;
    for (size_t x = 0; x < nodes; ++x)
      if (ranks_at[x] && find(static_cast<int>(x)) == find(v)) from += ranks_at[x];
    const int to = p.ranks - from;
    if (from == 0 || to == 0) continue;
    const bool root_here = root_node >= 0 && find(root_node) == find(v);
    const double moved = std::max(collectives::cut_crossing(p.collective, p.ranks, from, to, root_here),
                                  collectives::cut_crossing(p.collective, p.ranks, to, from, !root_here && root_node >= 0));
    double rate = 0;
    for (int k : cut) rate += payload_GBps(t, t.links()[static_cast<size_t>(k)], fabric, net);
    LinkBound b;
    b.where = t.node(v).name + "'s " + std::to_string(cut.size()) + " link" + (cut.size() > 1 ? "s" : "") +
              " to other switches, the cut between " + std::to_string(from) + " of the program's " +
              std::to_string(p.ranks) + " GPUs and the others (what any " +
              collectives::collective_name(p.collective) + " moves across it),";
    b.moved = moved;
    b.payload_GBps = rate;
    if (moved > 0 && slower(b, out)) out = b;
  }
  return out;
}

// The busiest link between two nodes neither of which is a GPU under the program's own traffic.
LinkBound own_traffic_bound(const collectives::Program& p, const topo::Topology& t, const std::vector<int>& gpus,
                            const std::vector<uint8_t>& spreads, WirePacket fabric, WirePacket net) {
  Router router(t, spreads);
  std::vector<double> load(2 * t.links().size(), 0.0);
  // InfiniBand's switches merge a push on the way (SHARP's aggregation trees).
  const bool merges_on_the_way = std::any_of(t.nodes().begin(), t.nodes().end(), [](const topo::Node& n) {
    return n.block == topo::kinds::kIbSwitch;
  });
  // Sends, summed per pair of ranks before they are routed.
  std::vector<std::pair<int, double>> to;  // (peer, chunks) of one rank
  // In-network operations, paired across members by (group, channel, position).
  std::unordered_map<uint64_t, uint32_t> position;  // (group, rank, channel): operations so far
  std::map<std::tuple<int, int, uint32_t>, Instance> instances;
  for (int r = 0; r < p.ranks; ++r) {
    to.clear();
    for (int i = 0; i < p.op_count(r); ++i) {
      const collectives::Operation& o = p.op(r, i);
      if (collectives::in_network(o.kind)) {
        if (o.kind == collectives::OpKind::Barrier) continue;
        const uint64_t key = (static_cast<uint64_t>(o.group) << 40) | (static_cast<uint64_t>(r) << 16) | o.channel;
        Instance& in = instances[{o.group, o.channel, position[key]++}];
        in.at_home = o.kind == collectives::OpKind::ReduceWrite && !merges_on_the_way;
        if (!o.src.empty()) in.contributors.push_back(r);
        if (!o.dst.empty()) in.receivers.push_back(r);
        in.chunks = std::max<uint32_t>(in.chunks, std::max(o.src.count, o.dst.count));
      } else if (o.send_peer != collectives::kNone) {
        to.push_back({o.send_peer, o.src.empty() ? o.dst.count : o.src.count});
      }
    }
    std::sort(to.begin(), to.end());
    for (size_t i = 0; i < to.size();) {
      double chunks = 0;
      size_t j = i;
      for (; j < to.size() && to[j].first == to[i].first; ++j) chunks += to[j].second;
      for (const auto& [dir, share] :
           router.shares(t.endpoints()[static_cast<size_t>(gpus[static_cast<size_t>(r)])],
                         gpus[static_cast<size_t>(to[i].first)]))
        load[static_cast<size_t>(dir)] += chunks * share;
      i = j;
    }
  }
  // Instances alike (the same members in the same parts) are routed once.
  std::map<std::tuple<bool, std::vector<int>, std::vector<int>>, double> alike;
  for (auto& [key, in] : instances)
    alike[{in.at_home, std::move(in.contributors), std::move(in.receivers)}] += in.chunks;
  std::vector<double> up(load.size(), 0.0), down(load.size(), 0.0);
  std::vector<int> met;
  for (const auto& [members, chunks] : alike)
    add_tree(router, gpus, std::get<0>(members), std::get<1>(members), std::get<2>(members), chunks, up, down, met,
             load);

  const double message = message_chunks(p);
  LinkBound out;
  double most = 0;  // ns per chunk of the message
  int busiest = -1;
  std::vector<double> ns(load.size(), 0.0);
  for (size_t dir = 0; dir < load.size(); ++dir) {
    if (load[dir] == 0) continue;
    const topo::Link& l = t.links()[dir / 2];
    if (t.node(l.a.node).kind == topo::NodeKind::Endpoint || t.node(l.b.node).kind == topo::NodeKind::Endpoint)
      continue;
    const double rate = payload_GBps(t, l, fabric, net);
    ns[dir] = load[dir] / rate;
    if (ns[dir] > most * (1 + 1e-9)) {
      most = ns[dir];
      busiest = static_cast<int>(dir);
      out.moved = load[dir] / message;
      out.payload_GBps = rate;
    }
  }
  if (busiest < 0) return out;
  int as_busy = 0;
  for (size_t dir = 0; dir < ns.size(); ++dir)
    if (static_cast<int>(dir) != busiest && ns[dir] >= most * (1 - 1e-9)) ++as_busy;
  const topo::Link& l = t.links()[static_cast<size_t>(busiest) / 2];
  const bool forward = busiest % 2 == 0;
  out.where = "the link " + t.port_name(forward ? l.a : l.b) + " > " + t.port_name(forward ? l.b : l.a) +
              (as_busy > 0 ? " (and " + std::to_string(as_busy) + " as busy)" : std::string()) +
              " under the program's own traffic";
  return out;
}
}  // namespace

std::vector<uint8_t> spreading_nodes(const topo::Topology& t, const std::function<bool(int node)>& spreads) {
  std::vector<uint8_t> s(t.nodes().size(), 1);
  for (size_t k = 0; k < s.size(); ++k) {
    const topo::Node& n = t.node(static_cast<int>(k));
    if (n.kind == topo::NodeKind::Endpoint || n.block == topo::kinds::kEthernetSwitch ||
        topo::kinds::is_adapter(n.block))
      continue;
    s[k] = spreads(static_cast<int>(k));
  }
  return s;
}

LinkBound link_bound(const collectives::Program& p, const topo::Topology& t, const std::vector<int>& gpus,
                     const std::vector<uint8_t>& spreads, WirePacket fabric, WirePacket net) {
  const LinkBound cut = cut_bound(p, t, gpus, fabric, net);
  if (p.groups.empty()) return cut;
  const LinkBound own = own_traffic_bound(p, t, gpus, spreads, fabric, net);
  return slower(own, cut) ? own : cut;
}

void print_link_bound(std::ostream& os, const LinkBound& b, const collectives::Program& p, uint64_t bytes,
                      double gpus_bound_us, const std::string& name) {
  if (!b.binds(bytes, gpus_bound_us)) return;
  const double us = b.us(bytes);
  os << std::fixed << "# bound: " << b.where << " carries " << std::setprecision(3) << b.moved
     << " of the message each way at " << std::setprecision(1) << b.payload_GBps
     << " GB/s payload: that binds before the GPUs' links, so " << name << "'s busbw is at most "
     << static_cast<double>(bytes) / (us * 1e3) * collectives::busbw_factor(p.collective, p.ranks)
     << " GB/s, and the bound column is its\n";
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
                        bool cluster, const LinkBound& links) {
  if (algbw_GBps > 0) return static_cast<double>(bytes) / (algbw_GBps * 1e3);
  // The link's only where it is longer beyond rounding (a ring's links between switches carry what its GPUs' do).
  const double gpus = cores_bound_us(p, bytes, endpoint_GBps, cluster);
  return links.binds(bytes, gpus) ? links.us(bytes) : gpus;
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
