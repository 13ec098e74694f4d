#include "flow/innet.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "topology/multicast.h"
#include "topology/topology.h"

namespace incsim::flow {

using collectives::OpKind;
using collectives::Operation;

namespace {

constexpr double kBlock = topo::MulticastFabric::kBlockBytes;  // an in-network packet's most data

// Adds a route's links to a tree: a link several members' routes share
// carries the merged (or multicast) stream once.
void merge(std::map<int, double>& tree, int link, double share) {
  double& s = tree[link];
  s = std::max(s, share);
}

}  // namespace

const Route& InNetwork::down(int sw, int r) {
  const auto key = std::make_pair(sw, r);
  if (const auto it = downs_.find(key); it != downs_.end()) return it->second;
  return downs_.emplace(key, graph_.walk(sw, -1, endpoints_[static_cast<size_t>(r)], -1)).first->second;
}

std::vector<int> InNetwork::first_alike(const std::vector<std::vector<int>>& groups) {
  std::map<std::vector<int>, int> first;
  std::vector<int> v;
  for (const std::vector<int>& g : groups) v.push_back(first.try_emplace(g, static_cast<int>(v.size())).first->second);
  return v;
}

const std::vector<Home>& InNetwork::homes(int g) {
  g = alike_[static_cast<size_t>(g)];
  if (const auto it = homes_.find(g); it != homes_.end()) return it->second;
  const topo::Topology& t = *m_.t;
  const std::vector<int>& members = p_.groups[static_cast<size_t>(g)];
  std::vector<int> candidates;
  for (int s = 0; s < static_cast<int>(t.switches().size()); ++s)
    if (m_.aggregates[static_cast<size_t>(t.switches()[static_cast<size_t>(s)])]) candidates.push_back(s);
  const auto dist = [&](int r, int s) {
    return t.distance_to_switch(t.endpoints()[static_cast<size_t>(endpoints_[static_cast<size_t>(r)])], s);
  };
  std::vector<std::vector<int>> d(members.size());
  for (size_t m = 0; m < members.size(); ++m)
    for (int s : candidates) d[m].push_back(dist(members[m], s));
  const std::vector<bool> between = topo::on_shortest_paths(d);
  std::vector<Home> h;
  double ports = 0;
  for (size_t s = 0; s < candidates.size(); ++s) {
    bool reached = between[s];
    for (const std::vector<int>& x : d) reached = reached && x[s] > 0;
    if (!reached) continue;
    const int node = t.switches()[static_cast<size_t>(candidates[s])];
    h.push_back({node, static_cast<double>(t.node(node).ports)});
    ports += t.node(node).ports;
  }
  if (h.empty())
    throw UserError("platform '" + t.name + "' has no switch that reduces and that every GPU of in-network group " +
                    std::to_string(g) + " reaches");
  for (Home& x : h) x.share /= ports;
  return homes_.emplace(g, std::move(h)).first->second;
}

double InNetwork::block_weight(int link, bool header_only) const {
  const LinkFormat& x = graph_.format(link);
  return header_only ? x.header / kBlock : (x.header + std::ceil(kBlock / x.flit) * x.flit) / kBlock;
}

std::vector<InNetwork::GroupPort> InNetwork::group_ports(int r, int g) {
  const topo::Topology& t = *m_.t;
  const std::vector<int>& members = p_.groups[static_cast<size_t>(g)];
  const int node = t.endpoints()[static_cast<size_t>(endpoints_[static_cast<size_t>(r)])];
  std::vector<GroupPort> v;
  const int peer = members[0] != r ? members[0] : members[1];
  for (int p : FlowGraph::shortest_ports(t, endpoints_[static_cast<size_t>(r)], endpoints_[static_cast<size_t>(peer)])) {
    const int link = t.link_at({node, p});
    const topo::PortRef at = t.peer({node, p});
    const int d = t.links()[static_cast<size_t>(link)].a.node == node ? 0 : 1;
    v.push_back({graph_.flow_link(link, d), at.node, at.port,
                 t.links()[static_cast<size_t>(link)].latency_ns + m_.node_ns[static_cast<size_t>(at.node)]});
  }
  return v;
}

// multimem.ld_reduce: the reader's requests, spread over its ports to the
// group, go at once; the switch each reaches reads every member (the reader
// too under multimem), reduces the answers and returns the sum. latency: the
// round trip after the last request.
InNetwork::Shape InNetwork::read_shape(int r, int g) {
  const std::vector<int>& members = p_.groups[static_cast<size_t>(g)];
  const std::vector<GroupPort> ports = group_ports(r, g);
  std::map<int, double> requests, answers;
  Shape shape;
  double table_rate = std::numeric_limits<double>::infinity();  // the slowest port's
  for (const auto& [out, sw, sw_port, up] : ports) {
    const double share = 1.0 / static_cast<double>(ports.size());
    // The requests to the switch, the sum back from it.
    std::map<int, double> req{{out, 1.0}}, ans;
    for (const auto& [l, x] : down(sw, r).hops)
      if (x > 0) merge(ans, l, x);
    double farthest = 0;  // the switch to a member
    int answers_in = 0;
    for (int m : members) {
      if (m == r && !own_copy_[static_cast<size_t>(g)]) continue;
      const Route& w = down(sw, m);
      for (const auto& [l, x] : w.hops) merge(x > 0 ? req : ans, l, std::abs(x));
      farthest = std::max(farthest, w.latency_ns);
      ++answers_in;
    }
    shape.latency = std::max(shape.latency, 2 * (up + farthest));
    for (const auto& [l, x] : req) requests[l] += share * x;
    for (const auto& [l, x] : ans) answers[l] += share * x;
    // The entry is held until the last answer has crossed the switch back
    // to this port (nvswitch.cpp, replicate and pull_reduce), with the
    // slowest of the members' memory accesses, each with its own jitter.
    // Where the table binds, the request waiting for the entry has crossed
    // the switch already, so the hold is one crossing short of Klenk Eq.
    // (1)'s round trip (packet level's log: 320-335 ns on hgx-h100).
    const auto& tables = m_.table_bytes;
    if (!tables.empty() && !tables[static_cast<size_t>(sw)].empty()) {
      const double entries = tables[static_cast<size_t>(sw)][static_cast<size_t>(sw_port)] / m_.table_entry_bytes;
      const double held = m_.node_ns[static_cast<size_t>(sw)] + 2 * farthest + mem_ns_ +
                          jitter_ns_ * answers_in / (answers_in + 1.0);
      table_rate = std::min(table_rate, entries * m_.table_entry_bytes / held);
    }
  }
  // The requests spread evenly over the ports: the slowest port's table binds.
  if (table_rate < std::numeric_limits<double>::infinity()) shape.table_rate = table_rate * ports.size();
  shape.ports = static_cast<double>(ports.size());
  for (const auto& [l, x] : requests) shape.uses.push_back({l, x * block_weight(l, true)});
  for (const auto& [l, x] : answers) shape.uses.push_back({l, x * block_weight(l, false)});
  return shape;
}

// multimem.st: the stores, spread over the ports to the group, each
// multicast by the switch it reaches to every member (the storer too under
// multimem). to_member: the latency to each member.
InNetwork::Shape InNetwork::multicast_shape(int r, int g) {
  const std::vector<int>& members = p_.groups[static_cast<size_t>(g)];
  const std::vector<GroupPort> ports = group_ports(r, g);
  std::map<int, double> stores;
  Shape shape;
  shape.to_member.assign(members.size(), 0);
  for (const auto& [out, sw, sw_port, up] : ports) {
    const double share = 1.0 / static_cast<double>(ports.size());
    std::map<int, double> tree{{out, 1.0}};
    for (size_t j = 0; j < members.size(); ++j) {
      if (members[j] == r && !own_copy_[static_cast<size_t>(g)]) continue;
      const Route& w = down(sw, members[j]);
      for (const auto& [l, x] : w.hops)
        if (x > 0) merge(tree, l, x);
      shape.to_member[j] = std::max(shape.to_member[j], up + w.latency_ns);
    }
    for (const auto& [l, x] : tree) stores[l] += share * x;
  }
  for (const auto& [l, x] : stores) shape.uses.push_back({l, x * block_weight(l, false)});
  return shape;
}

// Every member's contributions go up to group g's home switches, merged
// where their ways meet if the switches there merge them (SHARP's), else
// each whole to its home (Klenk's push, which reduces at the home alone),
// and the sum comes down to every member: SHARP's along their ways, a
// push's on the packets' trees (tree_downs). latency: up and down again.
InNetwork::Shape InNetwork::sum_shape(int g) {
  const std::vector<int>& members = p_.groups[static_cast<size_t>(g)];
  // A home's merged streams up and down, and the shape's, its homes' added in turn.
  const size_t L = graph_.capacities().size();
  LinkValues up, dn, ups, downs;
  for (LinkValues* v : {&up, &dn, &ups, &downs}) v->resize(L);
  Shape shape;
  std::vector<int> to;
  for (int m : members) to.push_back(endpoints_[static_cast<size_t>(m)]);
  std::vector<double> latency;
  FlowGraph::WalkMemo below;  // the ways every home reaches alike
  for (const Home& h : homes(g)) {
    // Each home's ways once (a shape per group's members); a link several
    // members' ways share carries a merged stream once.
    const bool merges = m_.merges[static_cast<size_t>(h.node)] != 0;
    graph_.walk_all(h.node, to, [&up, &dn, merges](const FlowGraph::Piece& piece) {
      const double ways = static_cast<double>(piece.dsts.size());
      for (const auto& [l, x] : piece.hops) {
        if (merges) {
          double& s = x > 0 ? dn[l] : up[l];
          s = std::max(s, std::abs(x));
        } else if (x < 0) {
          up[l] += ways * -x;
        }
      }
    }, latency, &below);
    for (double x : latency) shape.latency = std::max(shape.latency, 2 * x + m_.node_ns[static_cast<size_t>(h.node)]);
    up.drain([&ups, &h](int l, double x) { ups[l] += h.share * x; });
    dn.drain([&downs, &h](int l, double x) { downs[l] += h.share * x; });
  }
  tree_downs(g, downs);
  for (LinkValues* v : {&ups, &downs})
    v->drain([this, &shape](int l, double x) { shape.uses.push_back({l, x * block_weight(l, false)}); });
  return shape;
}

// A home multicasts a block's sum on the tree of one pivot, the pivots in
// turn (topo::MulticastFabric::result_pivot), so a link carries the share
// of the pivots whose tree takes it from that home. Per pivot, for every
// home at once: the tree floods an edge from u to its child c for the
// homes outside c's subtree, from c to u for those inside, wherever the
// packets' tree goes on that way, and a delivery for every home.
void InNetwork::tree_downs(int g, LinkValues& downs) {
  const topo::Topology& t = *m_.t;
  const auto& sws = t.switches();
  const int S = static_cast<int>(sws.size());
  const auto at = [](auto& v, int i) -> auto& { return v[static_cast<size_t>(i)]; };
  std::vector<int> sw_of(t.nodes().size(), -1);
  for (int s = 0; s < S; ++s) at(sw_of, at(sws, s)) = s;
  std::vector<double> share(static_cast<size_t>(S), 0.0);  // [switch]: its homes' share of the blocks
  for (const Home& h : homes(g))
    if (!at(m_.merges, h.node)) at(share, at(sw_of, h.node)) = h.share;
  if (std::all_of(share.begin(), share.end(), [](double x) { return x == 0; })) return;
  if (!trees_)
    trees_ = std::make_unique<topo::MulticastFabric>(
        t, topo::HomeMapping::Interleave, [this](int node) { return m_.aggregates[static_cast<size_t>(node)] != 0; },
        false);
  int& r = tree_regions_.try_emplace(alike(g), -1).first->second;
  if (r < 0) {
    std::vector<int> targets;
    for (int m : p_.groups[static_cast<size_t>(g)]) targets.push_back(at(endpoints_, m));
    r = trees_->add_region(static_cast<uint64_t>(alike(g) + 1) << 20, topo::MulticastFabric::kBlockBytes,
                           std::move(targets), false);
  }
  // [pivot]: each home switch that takes it, with its share over its pivots.
  std::map<int, std::vector<std::pair<int, double>>> takers;
  for (int s = 0; s < S; ++s) {
    if (at(share, s) == 0) continue;
    const std::vector<int>& pivots = trees_->result_pivots(r, s);
    assert(!pivots.empty());  // a home is on its group's trees (topo::home_switches)
    for (int p : pivots) takers[p].push_back({s, at(share, s) / static_cast<double>(pivots.size())});
  }
  const auto next = [&](int s, int port) { return at(sw_of, t.peer({at(sws, s), port}).node); };
  const auto flow_link = [&](int s, int port) {
    const int k = t.link_at({at(sws, s), port});
    const topo::PortRef a = at(t.links(), k).a;
    return graph_.flow_link(k, a.node == at(sws, s) && a.port == port ? 0 : 1);
  };
  std::vector<double> below(static_cast<size_t>(S), 0.0);  // the homes' weight in a switch's subtree
  std::vector<int> parent(static_cast<size_t>(S), -2), on, order;
  std::vector<std::vector<int>> adj(static_cast<size_t>(S));
  for (const auto& [pivot, homes_on] : takers) {
    const auto fanout = [&, pivot = pivot](int s) {
      return std::make_pair(trees_->fanout_begin(r, s, pivot), trees_->fanout_end(r, s, pivot));
    };
    on.clear();  // the tree's switches, and its edges either way
    for (int s = 0; s < S; ++s) {
      const auto [b, e] = fanout(s);
      if (b != e) on.push_back(s);
      for (auto f = b; f != e; ++f)
        if (f->endpoint < 0) {
          at(adj, s).push_back(next(s, f->port));
          at(adj, next(s, f->port)).push_back(s);
        }
    }
    for (const auto& [s, x] : homes_on) at(below, s) = x;
    for (int root : on) {  // each component of the tree
      if (at(parent, root) != -2) continue;
      order.assign(1, root);
      at(parent, root) = -1;
      for (size_t k = 0; k < order.size(); ++k)
        for (int c : at(adj, order[k]))
          if (at(parent, c) == -2) {
            at(parent, c) = order[k];
            order.push_back(c);
          }
      for (size_t k = order.size(); k-- > 1;) at(below, at(parent, order[k])) += at(below, order[k]);
      const double all = at(below, root);
      for (int s : order) {
        const auto [b, e] = fanout(s);
        for (auto f = b; f != e; ++f) {
          double x = all;  // a delivery
          if (f->endpoint < 0) {
            const int c = next(s, f->port);
            x = at(parent, c) == s ? all - at(below, c) : at(below, s);
          }
          if (x > 0) downs[flow_link(s, f->port)] += x;
        }
      }
    }
    for (int s : on) {
      at(adj, s).clear();
      at(parent, s) = -2;
      at(below, s) = 0;
    }
    for (const auto& [s, x] : homes_on) at(below, s) = 0;
  }
}

uint64_t InNetwork::shape_key(int r, const Operation& o) const {
  if (o.kind == OpKind::ReduceWrite || o.kind == OpKind::Barrier)
    return ~static_cast<uint64_t>(alike_[static_cast<size_t>(o.group)]);
  return static_cast<uint64_t>(r) << 32 | static_cast<uint64_t>(o.group) << 1 | (o.kind == OpKind::ReduceRead ? 1u : 0u);
}

const InNetwork::Shape& InNetwork::shape_of(int r, const Operation& o) {
  const uint64_t key = shape_key(r, o);
  if (const auto it = shapes_.find(key); it != shapes_.end()) return it->second;
  Shape s = o.kind == OpKind::ReduceRead ? read_shape(r, o.group)
            : o.kind == OpKind::MulticastWrite ? multicast_shape(r, o.group)
                                               : sum_shape(o.group);
  return shapes_.emplace(key, std::move(s)).first->second;
}

std::vector<InNetwork::Way> InNetwork::ways(int r, const Operation& o) {
  std::vector<Way> v;
  if (o.kind == OpKind::ReduceWrite || o.kind == OpKind::Barrier)
    for (const Home& h : homes(o.group)) v.push_back({-1, h.node, h.share});
  else
    for (const GroupPort& x : group_ports(r, o.group)) v.push_back({x.out, x.sw, 0});
  for (Way& w : v)
    if (w.out >= 0) w.share = 1.0 / static_cast<double>(v.size());
  return v;
}

}  // namespace incsim::flow
