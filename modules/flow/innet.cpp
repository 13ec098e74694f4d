#include "flow/innet.h"

#include <algorithm>
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

// SHARP: every member's contributions go up to group g's home switches,
// merging where their ways meet, and the sum comes down to every member.
// latency: up and down again.
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
    // members' ways share carries the stream once.
    graph_.walk_all(h.node, to, [&up, &dn](const FlowGraph::Piece& piece) {
      for (const auto& [l, x] : piece.hops) {
        double& s = x > 0 ? dn[l] : up[l];
        s = std::max(s, std::abs(x));
      }
    }, latency, &below);
    for (double x : latency) shape.latency = std::max(shape.latency, 2 * x + m_.node_ns[static_cast<size_t>(h.node)]);
    up.drain([&ups, &h](int l, double x) { ups[l] += h.share * x; });
    dn.drain([&downs, &h](int l, double x) { downs[l] += h.share * x; });
  }
  for (LinkValues* v : {&ups, &downs})
    v->drain([this, &shape](int l, double x) { shape.uses.push_back({l, x * block_weight(l, false)}); });
  return shape;
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
