#pragma once
// The platform's graph as flows see it (docs/flow.md): each link's two
// directions as flow links, a spreading node's trunk of parallel links as one
// link of their summed bandwidth, a GPU's links to the switches that spread
// its packets as one link each way where no connection is pinned to one of
// them, and the routes packet level's tables give, each with the share of a
// flow every flow link carries and the route's latency. Shared by the
// executors of the cores' programs (cores_flows.h) and of the NICs'
// schedule tables (nic_flows.h). Plain C++, no SystemC.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "flow/network.h"
#include "topology/topology.h"

namespace incsim::flow {

// A fabric's packets, as its links carry them.
struct LinkFormat {
  uint32_t header = 16, flit = 16, max_payload = 128;
  // A scale-out network: the adapter gathers the GPU's writes (their
  // payloads, protocol flags included) into packets of max_payload bytes
  // (adapter/hca.h, roce_bridge.h).
  bool gathers = false;
  // What comes back for each gathered packet: RoCE's ACK frame; 0 on
  // InfiniBand, whose adapters acknowledge nothing packet by packet.
  uint32_t ack_bytes = 0;
};

// What the flows run on: the platform's graph with, per link and node, what
// packet level pays there.
struct FlowMachine {
  // Graph g's, each link of the GPUs' fabric and each node paying nothing.
  void size_for(const topo::Topology& g) {
    t = &g;
    link_format.assign(g.links().size(), 0);
    for (auto* v : {&spreads, &acks_early, &aggregates, &merges, &hashes}) v->assign(g.nodes().size(), 0);
    node_ns.assign(g.nodes().size(), 0);
  }
  const topo::Topology* t = nullptr;
  std::vector<LinkFormat> formats;   // [0]: the GPUs' fabric
  std::vector<uint8_t> link_format;  // [graph link]: index into formats
  std::vector<double> node_ns;       // [node]: a switch's or an adapter's latency; 0 at an endpoint
  std::vector<uint8_t> spreads;      // [node]: spreads packets evenly over equal-cost ports
  std::vector<uint8_t> acks_early;   // [node]: an adapter, which acknowledges a write once it has taken it
  std::vector<uint8_t> aggregates;   // [node]: a switch whose tables reduce pushes: SHARP's (ib.sharp.table_bytes), an NVSwitch's
  // [node]: one that also reduces the pushes that meet on their way to a
  // home elsewhere (SHARP's aggregation trees); an NVSwitch reduces a block
  // only at its home (Klenk §IV-C), so every member's pushes reach it whole.
  std::vector<uint8_t> merges;
  // [node]: an Ethernet switch, which keeps a connection on one of its
  // equal-cost ports, by the hash the packet-level switch takes (ECMP,
  // ethernet/ethernet_switch.cpp).
  std::vector<uint8_t> hashes;
  // [node][port]: an NVSwitch port's reduction table, bytes in whole
  // entries of table_entry_bytes (switch.reduction_table.bytes, as packet
  // level reads it); empty where no table is read. A reducing read takes an
  // entry in the table of the port its answers leave by.
  std::vector<std::vector<uint32_t>> table_bytes;
  uint32_t table_entry_bytes = 128;
  uint32_t table_bytes_all = 0;  // switch.reduction_table.bytes itself, for the header
  // flow.merge_planes: a GPU's links to the switches that spread its packets
  // are one link each way where no connection is pinned to one of them.
  bool merge_planes = true;
};

// A value per flow link and the links that hold one, for sums over many
// walks without a map node per link: each value is > 0 once set (shares
// are), so a link at 0 is one not yet met.
class LinkValues {
 public:
  void resize(size_t links) {
    if (v_.size() < links) v_.resize(links, 0.0);
  }
  // Link l's value, noting l as met.
  double& operator[](int l) {
    double& x = v_[static_cast<size_t>(l)];
    if (x == 0) at_.push_back(l);
    return x;
  }
  // Each met link and its value, in link order; then none is met.
  template <class F>
  void drain(F&& f) {
    std::sort(at_.begin(), at_.end());
    for (int l : at_) {
      f(l, v_[static_cast<size_t>(l)]);
      v_[static_cast<size_t>(l)] = 0;
    }
    at_.clear();
  }

 private:
  std::vector<double> v_;
  std::vector<int> at_;
};

// A route from a GPU port (or a switch) to an endpoint: its flow links with
// the share of the flow each carries, its one-way latency, and the write
// acknowledgement's round trip after the last byte lands (at the peer, whose
// memory adds its latency, or at an adapter on the way).
struct Route {
  std::vector<std::pair<int, double>> hops;  // (flow link, share), the acks' way back beside each: (link, -share)
  double latency_ns = 0, ack_ns = 0;
  bool acked_by_memory = true;
};

class FlowGraph {
 public:
  // pinned: the (GPU node, neighbour) pairs a connection leaves by, whose
  // links stay links of their own.
  FlowGraph(const FlowMachine& m, const std::set<std::pair<int, int>>& pinned);

  // The flow network's link of graph link k's direction d (0: a to b): its
  // own, or where the sending node spreads packets over a trunk of links
  // to one neighbour, the trunk's, one link of their summed bandwidth (per
  // packet, adaptive spreading pools them).
  int flow_link(int k, int d) const { return flow_link_[static_cast<size_t>(2 * k + d)]; }
  // Flow link l's bandwidth (GB/s) and its fabric (an index into FlowMachine::formats).
  const std::vector<double>& capacities() const { return capacity_; }
  const LinkFormat& format(int l) const { return m_.formats[format_[static_cast<size_t>(l)]]; }
  size_t format_index(int l) const { return format_[static_cast<size_t>(l)]; }

  // The graph's link directions (2 x link + direction) whose flow link
  // carried bytes in `net`, whose first links are this graph's, in order,
  // and the bytes each carried: a trunk's or a merged plane's links share
  // theirs by bandwidth. With `canon` (ChannelClasses), flow link l
  // carried its class's mean, mean[l] of what canon[l] did.
  void carried(const Network& net, const std::vector<int>* canon, const std::vector<double>* mean,
               std::vector<int>& links, std::vector<double>& bytes) const;

  // Endpoint `from`'s ports on a shortest path to endpoint `to`.
  static std::vector<int> shortest_ports(const topo::Topology& t, int from, int to);
  // Of those ports, the one a connection on `channel` leaves by: the
  // channels take them in turn, as the cores' connections do.
  static int channel_port(const std::vector<int>& shortest, int channel) {
    return shortest[static_cast<size_t>(channel) % shortest.size()];
  }
  // From endpoint `from`'s port to endpoint `to`, found at first use.
  const Route& route(int from, int port, int to);
  // The links from graph node `from` to endpoint dst, leaving by `port`
  // (or as the tables route, where port < 0); src: the endpoint whose
  // connection it is, for ECMP's hash (-1: none, the tables' first port).
  // met: where given, the data's (flow link, share) in the order the walk
  // meets them, level by level, a trunk's links one (the route's hops are
  // by link); met_back likewise the links back beside them.
  Route walk(int from, int port, int dst, int src, std::vector<std::pair<int, double>>* met = nullptr,
             std::vector<std::pair<int, double>>* met_back = nullptr) const;
  // walk(from, -1, d, -1) to each endpoint d of dsts at once: the ways to
  // several endpoints are walked once as far as they cross the same nodes by
  // the same ports (a fat tree's, down to the leaf above them). Each level
  // of a piece of the ways goes to `piece`, with the endpoints (indices into
  // dsts) whose ways take it, their levels in order: a link lies on one
  // level of a way, every hop one nearer to the endpoint, so a way's
  // pieces' hops are its Route::hops, their fwd and back in turn what
  // walk() meets. latency_ns[i]: walk()'s to dsts[i].
  using Hops = std::vector<std::pair<int, double>>;
  // Hops held elsewhere: a walk's own, or a replayed sub-walk's (WalkMemo).
  struct HopSpan {
    const std::pair<int, double>* b;
    const std::pair<int, double>* e;
    HopSpan(const Hops& h) : b(h.data()), e(h.data() + h.size()) {}
    HopSpan(const std::pair<int, double>* begin, const std::pair<int, double>* end) : b(begin), e(end) {}
    const std::pair<int, double>* begin() const { return b; }
    const std::pair<int, double>* end() const { return e; }
  };
  struct Piece {
    HopSpan hops;       // as Route::hops holds them
    HopSpan fwd, back;  // as met, a trunk's links not yet joined
    const std::vector<int>& dsts;
  };
  // What walk_all calls on one graph given one memo repeat, replayed: from
  // one node with one share to the same endpoints in the same order, a walk
  // meets the same pieces in the same order and adds the same latencies (a
  // group's home switches each reach a leaf so, and below it every member).
  // A sub-walk is kept the second time it is met and replayed from the
  // third, so a walk met once keeps nothing; one that replays another is not
  // kept (it would copy it: the pod below a spine, the leaves below it kept),
  // so what is kept is the innermost that repeat.
  class WalkMemo {
   public:
    size_t replays() const { return replays_; }

   private:
    friend class FlowGraph;
    struct Walked {
      std::vector<int> key;  // the node, the share's bits, the endpoints in order; none: not kept
      Hops hops, fwd, back;
      std::vector<uint32_t> dsts;                      // positions in the bundle
      std::vector<std::array<uint32_t, 4>> ends;       // [piece]: where its hops, fwd, back and dsts end
      std::vector<std::pair<uint32_t, double>> added;  // (position, latency added), in order
    };
    std::unordered_set<uint64_t> seen_;  // keys' hashes
    std::unordered_map<uint64_t, Walked> walked_;
    size_t replays_ = 0;
  };
  void walk_all(int from, const std::vector<int>& dsts, const std::function<void(const Piece&)>& piece,
                std::vector<double>& latency_ns, WalkMemo* memo = nullptr) const;
  // What walk() meets, from its links as met, in out: a trunk's links met
  // one after another are its one flow link.
  static void join_trunks(HopSpan met, Hops& out);

 private:
  int ecmp_port(int node, int dst, int src) const;
  // The ports a walk toward endpoint dst leaves a node by (not its first).
  void next_ports(int node, int dst, int src, std::vector<int>& ports) const;
  // One level of a walk: from each node of `at` by `ports_of(node)`, its
  // links' shares appended to fwd and back, and the next level's nodes,
  // their shares summed in node order, in `at`.
  template <class Ports>
  void step(std::vector<std::pair<int, double>>& at, Ports&& ports_of, Hops& fwd, Hops& back) const;
  // The tables' route's latency, acknowledgement included (walk's).
  void tables_route(int from, int port, int dst, int src, Route& r) const;
  // A walk's links' shares summed per link, appended to hops as Route::hops holds them.
  void sum_hops(const Hops& fwd, const Hops& back, Hops& hops) const;

  const FlowMachine& m_;
  // The walks' buffers, kept between calls: every connection's and every
  // message's route is walked, and walk_all steps and sums many levels.
  struct Scratch {
    std::vector<std::pair<int, double>> fwd, back, at, next;
    std::vector<int> ports;
    LinkValues sum;  // a walk's share of each link so far
  };
  mutable Scratch scratch_;
  std::map<std::tuple<int, int, int>, Route> routes_;  // (endpoint, port, endpoint)
  std::vector<int> flow_link_;                         // [2 x graph link + direction]
  std::vector<double> capacity_;                       // [flow link]: GB/s
  std::vector<uint8_t> format_;                        // [flow link]: index into FlowMachine::formats
};

}  // namespace incsim::flow
