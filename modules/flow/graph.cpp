#include "flow/graph.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "ethernet/ecmp.h"

namespace incsim::flow {

namespace {

// FNV-1a of a run of ints.
template <class It>
uint64_t fnv1a_of(It begin, It end) {
  uint64_t h = kFnvBasis;
  for (; begin != end; ++begin) h = fnv1a(h, static_cast<uint32_t>(*begin));
  return h;
}

}  // namespace

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

void FlowGraph::carried(const Network& net, const std::vector<int>* canon, const std::vector<double>* mean,
                        std::vector<int>& links, std::vector<double>& bytes) const {
  links.clear();
  bytes.clear();
  for (size_t k = 0; k < flow_link_.size(); ++k) {
    const auto l = static_cast<size_t>(flow_link_[k]);
    const double b = canon ? net.carried((*canon)[l]) * (*mean)[l] : net.carried(static_cast<int>(l));
    if (b <= 0) continue;
    links.push_back(static_cast<int>(k));
    bytes.push_back(b * m_.t->links()[k / 2].bw_GBps / capacity_[l]);
  }
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

void FlowGraph::next_ports(int node, int dst, int src, std::vector<int>& ports) const {
  const topo::Topology& t = *m_.t;
  if (m_.spreads[static_cast<size_t>(node)]) {
    const topo::PortSpan r = t.routes(node, dst);
    ports.insert(ports.end(), r.begin(), r.end());
  } else if (m_.hashes[static_cast<size_t>(node)]) ports.push_back(ecmp_port(node, dst, src));
  else ports.push_back(t.route(node, dst));
}

template <class Ports>
void FlowGraph::step(std::vector<std::pair<int, double>>& at, Ports&& ports_of, Hops& fwd, Hops& back) const {
  const topo::Topology& t = *m_.t;
  std::vector<std::pair<int, double>>& next = scratch_.next;
  next.clear();
  for (const auto& [node, share] : at) {
    const std::vector<int>& ports = ports_of(node);
    for (int q : ports) {
      const int link = t.link_at({node, q});
      const int d = t.links()[static_cast<size_t>(link)].a.node == node ? 0 : 1;
      const double s = share / static_cast<double>(ports.size());
      fwd.emplace_back(flow_link(link, d), s);
      back.emplace_back(flow_link(link, 1 - d), s);
      next.emplace_back(t.peer({node, q}).node, s);
    }
  }
  std::sort(next.begin(), next.end());
  at.clear();
  for (const auto& x : next)
    if (!at.empty() && at.back().first == x.first) at.back().second += x.second;
    else at.push_back(x);
}

// Latency along the tables' route; the acknowledgement comes from the first
// adapter on it, or from the peer's memory.
void FlowGraph::tables_route(int from, int port, int dst, int src, Route& r) const {
  const topo::Topology& t = *m_.t;
  const int dst_node = t.endpoints()[static_cast<size_t>(dst)];
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
}

// The route every node's table gives, or, where a node spreads packets over
// equal-cost ports, each of them an equal share of what reaches the node.
Route FlowGraph::walk(int from, int port, int dst, int src, std::vector<std::pair<int, double>>* met,
                      std::vector<std::pair<int, double>>* met_back) const {
  const int dst_node = m_.t->endpoints()[static_cast<size_t>(dst)];
  // Each level's (flow link, share) in the order met, summed per link in
  // that order once the walk is done: what a map of shares adds up, without
  // a node per hop (a schedule table's every message walks its route).
  Scratch& x = scratch_;
  x.fwd.clear();
  x.back.clear();
  x.at.assign(1, {from, 1.0});
  bool first = port >= 0;
  while (!x.at.empty()) {
    const auto ports_of = [&](int node) -> const std::vector<int>& {
      x.ports.clear();
      if (node == dst_node) return x.ports;
      if (first) x.ports.push_back(port);
      else next_ports(node, dst, src, x.ports);
      return x.ports;
    };
    step(x.at, ports_of, x.fwd, x.back);
    first = false;
  }
  if (met) join_trunks(x.fwd, *met);
  if (met_back) join_trunks(x.back, *met_back);
  Route r;
  sum_hops(x.fwd, x.back, r.hops);
  tables_route(from, port, dst, src, r);
  return r;
}

void FlowGraph::join_trunks(HopSpan met, Hops& out) {
  out.clear();
  for (const auto& y : met)
    if (!out.empty() && out.back().first == y.first) out.back().second += y.second;
    else out.push_back(y);
}

void FlowGraph::sum_hops(const Hops& fwd, const Hops& back, Hops& hops) const {
  LinkValues& sum = scratch_.sum;
  sum.resize(capacity_.size());
  for (const auto* v : {&fwd, &back}) {
    const double sign = v == &fwd ? 1 : -1;
    for (const auto& [link, share] : *v) sum[link] += share;
    sum.drain([&hops, sign](int link, double share) { hops.emplace_back(link, sign * share); });
  }
}

// Level by level, the endpoints whose ways leave every node of the level by
// the same ports stay one bundle; where they part, each part walks on. A
// bundle keeps its endpoints in runs of one group (Topology::endpoint_group),
// and a run that every node of the level routes alike asks its ports once.
void FlowGraph::walk_all(int from, const std::vector<int>& dsts, const std::function<void(const Piece&)>& piece,
                         std::vector<double>& latency_ns, WalkMemo* memo) const {
  const topo::Topology& t = *m_.t;
  // Each endpoint's latency along the tables' route (as tables_route sums
  // it), from the node of each level that route takes.
  latency_ns.assign(dsts.size(), 0);
  std::vector<int> group(dsts.size()), on(dsts.size(), from);
  for (size_t i = 0; i < dsts.size(); ++i) group[i] = t.endpoint_group(dsts[i]);
  struct Bundle {
    std::vector<int> dsts;  // indices into dsts, a group's together
    std::vector<std::pair<int, double>> at;
    bool ends_record = false;  // no endpoints: here the sub-walk being kept ends
  };
  std::vector<Bundle> todo(1);
  for (int i = 0; i < static_cast<int>(dsts.size()); ++i) todo[0].dsts.push_back(i);
  std::stable_sort(todo[0].dsts.begin(), todo[0].dsts.end(),
                   [&group](int a, int c) { return group[static_cast<size_t>(a)] < group[static_cast<size_t>(c)]; });
  todo[0].at.assign(1, {from, 1.0});
  // Per unit of a bundle (a run of its endpoints that leave by the same
  // ports), its ports out of each node of the level in turn (-1 at the
  // endpoint itself, else their count and the ports).
  std::vector<int> code, ports;
  std::vector<size_t> begin, unit;  // unit: where each unit's endpoints begin in the bundle; one more at the end
  std::vector<size_t> at_node;      // where the unit's code at each node of the level begins
  std::vector<std::pair<uint64_t, int>> keyed;  // (a hash of its code, the unit)
  std::vector<int> run, rest;
  Hops fwd, back, out;
  // The sub-walk being kept, and each of its endpoints' position in its bundle.
  WalkMemo::Walked* rec = nullptr;
  std::vector<uint32_t> pos(memo ? dsts.size() : 0);
  std::vector<int> key, mapped;
  const auto deliver = [&](const Piece& p) {
    piece(p);
    if (!rec) return;
    rec->hops.insert(rec->hops.end(), p.hops.begin(), p.hops.end());
    rec->fwd.insert(rec->fwd.end(), p.fwd.begin(), p.fwd.end());
    rec->back.insert(rec->back.end(), p.back.begin(), p.back.end());
    for (int d : p.dsts) rec->dsts.push_back(pos[static_cast<size_t>(d)]);
    rec->ends.push_back({static_cast<uint32_t>(rec->hops.size()), static_cast<uint32_t>(rec->fwd.size()),
                         static_cast<uint32_t>(rec->back.size()), static_cast<uint32_t>(rec->dsts.size())});
  };
  const auto add_latency = [&](size_t y, double x) {
    latency_ns[y] += x;
    if (rec) rec->added.emplace_back(pos[y], x);
  };
  // Sub-walk w to the bundle's endpoints `in`.
  const auto replay = [&](const WalkMemo::Walked& w, const std::vector<int>& in) {
    if (rec) {  // not kept: it would copy what is kept already
      *rec = {};
      rec = nullptr;
    }
    std::array<uint32_t, 4> from_{};
    for (const auto& e : w.ends) {
      mapped.clear();
      for (uint32_t j = from_[3]; j < e[3]; ++j) mapped.push_back(in[w.dsts[j]]);
      piece({{w.hops.data() + from_[0], w.hops.data() + e[0]},
             {w.fwd.data() + from_[1], w.fwd.data() + e[1]},
             {w.back.data() + from_[2], w.back.data() + e[2]},
             mapped});
      from_ = e;
    }
    for (const auto& [p, x] : w.added) latency_ns[static_cast<size_t>(in[p])] += x;
    ++memo->replays_;
  };
  while (!todo.empty()) {
    Bundle b = std::move(todo.back());
    todo.pop_back();
    if (b.ends_record) {
      rec = nullptr;
      continue;
    }
    if (memo && b.at.size() == 1) {
      // The sub-walk from here depends on the node, its share and the
      // endpoints, in their order, alone.
      const auto [node, share] = b.at[0];
      uint64_t bits;
      static_assert(sizeof bits == sizeof share);
      std::memcpy(&bits, &share, sizeof bits);
      key.assign({node, static_cast<int>(bits >> 32), static_cast<int>(bits & 0xffffffffu)});
      for (int i : b.dsts) key.push_back(dsts[static_cast<size_t>(i)]);
      const uint64_t h = fnv1a_of(key.begin(), key.end());
      // Found under another key (another's hash, or one not kept): walked plainly.
      if (const auto it = memo->walked_.find(h); it != memo->walked_.end()) {
        if (it->second.key == key) {
          replay(it->second, b.dsts);
          continue;
        }
      } else if (!rec && !memo->seen_.insert(h).second) {
        rec = &memo->walked_[h];
        rec->key = key;
        for (size_t p = 0; p < b.dsts.size(); ++p) pos[static_cast<size_t>(b.dsts[p])] = static_cast<uint32_t>(p);
        Bundle end;
        end.ends_record = true;
        todo.push_back(std::move(end));
      }
    }
    code.clear();
    begin.clear();
    unit.clear();
    keyed.clear();
    for (size_t k = 0, e; k < b.dsts.size(); k = e) {
      const int g = group[static_cast<size_t>(b.dsts[k])];
      e = k + 1;
      while (e < b.dsts.size() && group[static_cast<size_t>(b.dsts[e])] == g) ++e;
      const auto alike = [&](const std::pair<int, double>& x) {
        return m_.spreads[static_cast<size_t>(x.first)] && t.routes_group_alike(x.first, g);
      };
      if (e > k + 1 && !std::all_of(b.at.begin(), b.at.end(), alike)) e = k + 1;
      const int d = dsts[static_cast<size_t>(b.dsts[k])];
      const int dst_node = t.endpoints()[static_cast<size_t>(d)];
      unit.push_back(k);
      begin.push_back(code.size());
      at_node.clear();
      for (const auto& x : b.at) {
        at_node.push_back(code.size());
        if (x.first == dst_node) {
          code.push_back(-1);
          continue;
        }
        const size_t n = code.size();
        code.push_back(0);
        next_ports(x.first, d, -1, code);
        code[n] = static_cast<int>(code.size() - n - 1);
      }
      // The tables' pick among the ports: the only one where the node does
      // not spread, dst mod their count where the unit's group is routed
      // alike (Topology::routes_group_alike).
      for (size_t i = k; i < e; ++i) {
        const size_t y = static_cast<size_t>(b.dsts[i]);
        const int node = on[y], to = dsts[y];
        if (node == t.endpoints()[static_cast<size_t>(to)]) continue;
        const auto it = std::lower_bound(b.at.begin(), b.at.end(), node,
                                         [](const std::pair<int, double>& x, int n) { return x.first < n; });
        assert(it != b.at.end() && it->first == node);  // the tables' route is one of the walk's ways
        const size_t c = at_node[static_cast<size_t>(it - b.at.begin())];
        const int n = code[c];
        assert(n > 0);
        const int q = !m_.spreads[static_cast<size_t>(node)] ? code[c + 1]
                      : e > k + 1 ? code[c + 1 + static_cast<size_t>(to) % static_cast<size_t>(n)]
                                  : t.route(node, to);
        add_latency(y, t.links()[static_cast<size_t>(t.link_at({node, q}))].latency_ns);
        on[y] = t.peer({node, q}).node;
        if (on[y] != t.endpoints()[static_cast<size_t>(to)]) add_latency(y, m_.node_ns[static_cast<size_t>(on[y])]);
      }
      keyed.emplace_back(fnv1a_of(code.begin() + static_cast<std::ptrdiff_t>(begin.back()), code.end()),
                         static_cast<int>(keyed.size()));
    }
    begin.push_back(code.size());
    unit.push_back(b.dsts.size());
    std::sort(keyed.begin(), keyed.end());
    const auto same = [&](int a, int c) {
      const auto a0 = code.begin() + static_cast<std::ptrdiff_t>(begin[static_cast<size_t>(a)]),
                 a1 = code.begin() + static_cast<std::ptrdiff_t>(begin[static_cast<size_t>(a) + 1]),
                 c0 = code.begin() + static_cast<std::ptrdiff_t>(begin[static_cast<size_t>(c)]),
                 c1 = code.begin() + static_cast<std::ptrdiff_t>(begin[static_cast<size_t>(c) + 1]);
      return std::equal(a0, a1, c0, c1);
    };
    for (size_t i = 0, j; i < keyed.size(); i = j) {
      rest.clear();
      for (j = i; j < keyed.size() && keyed[j].first == keyed[i].first; ++j) rest.push_back(keyed[j].second);
      while (!rest.empty()) {  // a hash's units, split where their codes differ; each in the bundle's order
        run.clear();
        const int rep = rest[0];
        size_t kept = 0;
        for (int k : rest)
          if (same(rep, k)) run.push_back(k);
          else rest[kept++] = k;
        rest.resize(kept);
        Bundle next;
        for (int k : run)
          next.dsts.insert(next.dsts.end(), b.dsts.begin() + static_cast<std::ptrdiff_t>(unit[static_cast<size_t>(k)]),
                           b.dsts.begin() + static_cast<std::ptrdiff_t>(unit[static_cast<size_t>(k) + 1]));
        next.at = b.at;
        size_t pos = begin[static_cast<size_t>(rep)];
        const auto ports_of = [&](int) -> const std::vector<int>& {
          ports.clear();
          const int n = code[pos++];
          if (n > 0) {
            ports.assign(code.begin() + static_cast<std::ptrdiff_t>(pos),
                         code.begin() + static_cast<std::ptrdiff_t>(pos) + n);
            pos += static_cast<size_t>(n);
          }
          return ports;
        };
        fwd.clear();
        back.clear();
        step(next.at, ports_of, fwd, back);
        out.clear();
        sum_hops(fwd, back, out);
        if (!out.empty()) deliver({out, fwd, back, next.dsts});
        if (!next.at.empty()) todo.push_back(std::move(next));
      }
    }
  }
}

}  // namespace incsim::flow
