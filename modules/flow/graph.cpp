#include "flow/graph.h"

#include <algorithm>

#include "ethernet/ecmp.h"

namespace incsim::flow {

FlowGraph::FlowGraph(const FlowMachine& m, const std::set<std::pair<int, int>>& pinned) : m_(m) {
  const topo::Topology& t = *m.t;
  std::map<std::pair<int, int>, int> trunks;  // (spreading node, neighbour): its trunk's flow link
  std::map<std::pair<int, int>, int> count;   // (node, neighbour): links between them
  for (const topo::Link& l : t.links()) ++count[{std::min(l.a.node, l.b.node), std::max(l.a.node, l.b.node)}];
  // Where no connection leaves a GPU by a link to a switch that spreads,
  // everything on a GPU's links to such switches spreads evenly over them
  // all, whichever switch each reaches (NVL72's 18 NVSwitch chips, a DGX-2
  // baseboard's 6): one link up and one down per GPU, each every link's
  // capacity, give the same rates, where a path of NVLS's loads on NVL72
  // otherwise crosses some 1,300 links (flow.merge_planes).
  const auto spreading = [&](int gpu, int sw) {
    return t.node(gpu).kind == topo::NodeKind::Endpoint && m.spreads[static_cast<size_t>(sw)];
  };
  const bool planes = m.merge_planes && std::none_of(pinned.begin(), pinned.end(), [&](const auto& x) {
                        return spreading(x.first, x.second);
                      });
  for (size_t k = 0; k < t.links().size(); ++k) {
    const topo::Link& l = t.links()[k];
    const bool trunk = count[{std::min(l.a.node, l.b.node), std::max(l.a.node, l.b.node)}] > 1;
    for (int d = 0; d < 2; ++d) {
      const int from = d == 0 ? l.a.node : l.b.node, to = d == 0 ? l.b.node : l.a.node;
      const bool spread_in = spreading(from, to) && !pinned.count({from, to});
      // A plane merge's key: the GPU and its direction (up: -1, down: -2).
      const std::pair<int, int> key = !planes             ? std::pair{from, to}
                                      : spreading(from, to) ? std::pair{from, -1}
                                      : spreading(to, from) ? std::pair{to, -2}
                                                            : std::pair{from, to};
      int id;
      if ((trunk || key.second < 0) && (m.spreads[static_cast<size_t>(from)] || spread_in)) {
        const auto [it, fresh] = trunks.try_emplace(key, static_cast<int>(capacity_.size()));
        id = it->second;
        if (fresh) {
          capacity_.push_back(0);
          format_.push_back(m.link_format[k]);
        }
        capacity_[static_cast<size_t>(id)] += l.bw_GBps;
      } else {
        id = static_cast<int>(capacity_.size());
        capacity_.push_back(l.bw_GBps);
        format_.push_back(m.link_format[k]);
      }
      flow_link_.push_back(id);
    }
  }
}

std::vector<int> FlowGraph::used(const Network& net, const std::vector<int>* canon) const {
  std::vector<int> out;
  for (size_t k = 0; k < flow_link_.size(); ++k)
    if (net.carried(canon ? (*canon)[static_cast<size_t>(flow_link_[k])] : flow_link_[k]) > 0)
      out.push_back(static_cast<int>(k));
  return out;
}

std::vector<int> FlowGraph::shortest_ports(const topo::Topology& t, int from, int to) {
  const int node = t.endpoints()[static_cast<size_t>(from)];
  std::vector<int> ports;
  for (int p = 0; p < t.node(node).ports; ++p)
    if (t.port_on_shortest_path({node, p}, to)) ports.push_back(p);
  return ports;
}

const Route& FlowGraph::route(int from, int port, int to) {
  const auto key = std::make_tuple(from, port, to);
  if (const auto it = routes_.find(key); it != routes_.end()) return it->second;
  Route r = walk(m_.t->endpoints()[static_cast<size_t>(from)], port, to, from);
  return routes_.emplace(key, std::move(r)).first->second;
}

// The port of node's equal-cost ports toward endpoint dst that an Ethernet
// switch gives src's connection: of its forwarding entries in their order
// (the tables' first, then the others), ECMP's pick (RoceBridge: the queue
// pair that takes src's packets at dst is src's index + 1).
int FlowGraph::ecmp_port(int node, int dst, int src) const {
  const topo::Topology& t = *m_.t;
  const int first = t.route(node, dst);
  std::vector<int> ports{first};
  for (int16_t q : t.routes(node, dst))
    if (q != first) ports.push_back(q);
  if (src < 0 || ports.size() == 1) return first;
  const auto s = static_cast<uint32_t>(src), d = static_cast<uint32_t>(dst);
  return ports[eth::ecmp_pick(eth::ip_of(s), eth::ip_of(d), s + 1, ports.size())];
}

// The route every node's table gives, or, where a node spreads packets over
// equal-cost ports, each of them an equal share of what reaches the node.
Route FlowGraph::walk(int from, int port, int dst, int src, std::vector<std::pair<int, double>>* met,
                      std::vector<std::pair<int, double>>* met_back) const {
  const topo::Topology& t = *m_.t;
  const int dst_node = t.endpoints()[static_cast<size_t>(dst)];
  Route r;
  auto dir = [&t](int link, int from) { return t.links()[static_cast<size_t>(link)].a.node == from ? 0 : 1; };
  // Each level's (flow link, share) in the order met, summed per link in
  // that order once the walk is done: what a map of shares adds up, without
  // a node per hop (a schedule table's every message walks its route).
  Scratch& x = scratch_;
  auto &fwd = x.fwd, &back = x.back, &at = x.at, &next = x.next;
  std::vector<int>& ports = x.ports;
  fwd.clear();
  back.clear();
  at.assign(1, {from, 1.0});
  bool first = port >= 0;
  while (!at.empty()) {
    next.clear();
    for (const auto& [node, share] : at) {
      if (node == dst_node) continue;
      ports.clear();
      if (first) ports.push_back(port);
      else if (m_.spreads[static_cast<size_t>(node)])
        for (int16_t q : t.routes(node, dst)) ports.push_back(q);
      else if (m_.hashes[static_cast<size_t>(node)]) ports.push_back(ecmp_port(node, dst, src));
      else ports.push_back(t.route(node, dst));
      for (int q : ports) {
        const int link = t.link_at({node, q});
        const double s = share / static_cast<double>(ports.size());
        fwd.emplace_back(flow_link(link, dir(link, node)), s);
        back.emplace_back(flow_link(link, 1 - dir(link, node)), s);
        next.emplace_back(t.peer({node, q}).node, s);
      }
    }
    first = false;
    std::sort(next.begin(), next.end());
    at.clear();
    for (const auto& x : next)
      if (!at.empty() && at.back().first == x.first) at.back().second += x.second;
      else at.push_back(x);
  }
  for (auto [m, v] : {std::pair{met, &fwd}, std::pair{met_back, &back}}) {
    if (!m) continue;
    m->clear();  // a trunk's links met one after another are its one flow link
    for (const auto& x : *v)
      if (!m->empty() && m->back().first == x.first) m->back().second += x.second;
      else m->push_back(x);
  }
  x.sum.resize(capacity_.size());
  for (const auto* v : {&fwd, &back}) {
    const double sign = v == &fwd ? 1 : -1;
    for (const auto& [link, share] : *v) x.sum[link] += share;
    x.sum.drain([&r, sign](int link, double share) { r.hops.emplace_back(link, sign * share); });
  }
  // Latency along the tables' route; the acknowledgement comes from the
  // first adapter on it, or from the peer's memory.
  int node = from, q = port >= 0 ? port : t.route(from, dst);
  double to_ack = -1, ack_turn = 0;
  for (;;) {
    r.latency_ns += t.links()[static_cast<size_t>(t.link_at({node, q}))].latency_ns;
    node = t.peer({node, q}).node;
    if (node == dst_node) break;
    if (to_ack < 0 && m_.acks_early[static_cast<size_t>(node)]) {
      to_ack = r.latency_ns;
      ack_turn = m_.node_ns[static_cast<size_t>(node)];
    }
    r.latency_ns += m_.node_ns[static_cast<size_t>(node)];
    q = m_.hashes[static_cast<size_t>(node)] ? ecmp_port(node, dst, src) : t.route(node, dst);
  }
  r.ack_ns = to_ack < 0 ? 2 * r.latency_ns : 2 * to_ack + ack_turn;
  r.acked_by_memory = to_ack < 0;
  return r;
}

}  // namespace incsim::flow
