#include "collectives/multitree.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <set>
#include <tuple>

#include "collectives/table_program.h"
#include "core/error.h"

namespace incsim::collectives {

using topo::NodeKind;
using topo::PortRef;
using topo::Topology;

bool is_direct_network(const Topology& t) {
  for (int e : t.endpoints())
    if (t.node(e).ports != 1) return false;
  for (int s : t.switches()) {
    int eps = 0;
    for (int p = 0; p < t.node(s).ports; ++p) {
      PortRef v = t.peer({s, p});
      eps += v.node >= 0 && t.node(v.node).kind == NodeKind::Endpoint;
    }
    if (eps != 1) return false;
  }
  return true;
}

namespace {

// Directed link index of the output port `out`: 2 * link + direction.
int dlink(const Topology& t, PortRef out) {
  int l = t.link_at(out);
  const auto& L = t.links()[l];
  return 2 * l + ((L.a.node == out.node && L.a.port == out.port) ? 0 : 1);
}

}  // namespace

MultiTreeTrees multitree_trees(const Topology& t, const MultiTreeOptions& opt) {
  const int n = static_cast<int>(t.endpoints().size());
  if (n < 2) throw UserError("MultiTree needs at least 2 endpoints");
  MultiTreeTrees out;
  out.nodes = n;
  out.direct = is_direct_network(t);
  const int max_hops = opt.max_switch_hops > 0 ? opt.max_switch_hops : std::numeric_limits<int>::max();
  // Automatic (see multitree.h): a path leaves the parent's switch and goes on
  // only through switches with no endpoints of their own.
  std::vector<char> has_endpoint(t.nodes().size(), 0);
  for (int e : t.endpoints())
    for (int p = 0; p < t.node(e).ports; ++p) {
      PortRef v = t.peer({e, p});
      if (v.node >= 0) has_endpoint[v.node] = 1;
    }
  auto may_transit = [&](int sw, int hops_so_far) {
    if (hops_so_far >= max_hops) return false;
    return opt.max_switch_hops > 0 || hops_so_far == 0 || !has_endpoint[sw];
  };
  const std::vector<int> full_cap = step_capacities(t);

  // Endpoint index of every node (-1 for switches).
  std::vector<int> ep_of(t.nodes().size(), -1);
  for (int i = 0; i < n; ++i) ep_of[t.endpoints()[i]] = i;

  // Each node's ports as the search reads them: the peer, whether it is an
  // endpoint (its index) and the directed link out (Topology::peer and
  // dlink once, not in every search).
  struct Out {
    int node, ep, dl;
    bool sw;
  };
  std::vector<std::vector<Out>> adj(t.nodes().size());
  for (size_t u = 0; u < t.nodes().size(); ++u)
    for (int port = 0; port < t.node(static_cast<int>(u)).ports; ++port) {
      const PortRef o{static_cast<int>(u), port};
      const PortRef v = t.peer(o);
      adj[u].push_back(v.node < 0 ? Out{-1, -1, -1, false}
                                  : Out{v.node, ep_of[v.node], dlink(t, o), t.node(v.node).kind == NodeKind::Switch});
    }
  // [tree][node]: the endpoints on a switch's ports not yet in the tree; a
  // switch with none is not scanned for a child (the scan could find none).
  std::vector<std::vector<int>> open(n, std::vector<int>(t.nodes().size(), 0));
  for (int s : t.switches())
    for (const Out& o : adj[static_cast<size_t>(s)])
      if (o.ep >= 0)
        for (int T = 0; T < n; ++T) open[T][static_cast<size_t>(s)] += o.ep != T;
  std::vector<std::vector<char>> in_tree(n, std::vector<char>(n, 0));
  std::vector<std::vector<int>> order(n);  // nodes of each tree in order of adding
  // [tree]: the endpoints not in it, in any order, and each one's place there.
  std::vector<std::vector<int>> outside(n), outside_at(n, std::vector<int>(n, -1));
  for (int r = 0; r < n; ++r) {
    in_tree[r][r] = 1;
    order[r].push_back(r);
    for (int c = 0; c < n; ++c)
      if (c != r) {
        outside_at[r][c] = static_cast<int>(outside[r].size());
        outside[r].push_back(c);
      }
  }
  int remaining = n * (n - 1);
  std::vector<int> cap;
  // Breadth-first search state, reused.
  std::vector<int> seen(t.nodes().size(), -1), hops(t.nodes().size(), 0);
  std::vector<PortRef> via(t.nodes().size());
  int stamp = 0;

  // Finds a child for parent p in tree T and takes the links of its path
  // for the step; -1 if none. Breadth first: a switch offers its own
  // endpoints not in the tree (step 2 of §III-C3), then passes the search
  // on to further switches. What a switch offers does not change during a
  // search, so it is asked when the switch is queued: the first queued
  // switch that offers one is the first a queue would have reached, and the
  // search ends there without passing on from the switches still queued
  // before it (on a fat tree, every spine's ports once the parent's leaf has
  // no endpoint left: N^3 in all).
  std::vector<PortRef> path;
  std::deque<int> q;
  auto find_child = [&](int T, int p) -> int {
    ++stamp;
    q.clear();
    const int src = t.endpoints()[p];
    seen[src] = stamp;
    hops[src] = 0;
    int found = -1;
    // Queues switch v, reached by u's port at hops h, or sets found if it offers a child.
    auto reach = [&](int v, int u, int port, int h) {
      seen[v] = stamp;
      hops[v] = h;
      via[v] = {u, port};
      if (open[T][static_cast<size_t>(v)] > 0) {
        const std::vector<Out>& ports = adj[static_cast<size_t>(v)];
        for (int k = 0; k < static_cast<int>(ports.size()); ++k) {
          const Out& e = ports[static_cast<size_t>(k)];
          if (e.ep < 0 || in_tree[T][e.ep] || cap[e.dl] <= 0) continue;
          via[e.node] = {v, k};
          found = e.node;
          return;
        }
      }
      q.push_back(v);
    };
    const std::vector<Out>& out_ports = adj[static_cast<size_t>(src)];
    for (int port = 0; port < static_cast<int>(out_ports.size()) && found < 0; ++port) {
      const Out& v = out_ports[static_cast<size_t>(port)];
      if (v.node < 0 || !v.sw || seen[v.node] == stamp || cap[v.dl] <= 0) continue;
      reach(v.node, src, port, 0);
    }
    while (!q.empty() && found < 0) {
      const int u = q.front();
      q.pop_front();
      if (!may_transit(u, hops[u])) continue;
      const std::vector<Out>& ports = adj[static_cast<size_t>(u)];
      for (int port = 0; port < static_cast<int>(ports.size()) && found < 0; ++port) {
        const Out& v = ports[static_cast<size_t>(port)];
        if (v.node < 0 || !v.sw || seen[v.node] == stamp || cap[v.dl] <= 0) continue;
        // A switch with no endpoint to offer that may not pass the search on
        // is a dead end (a leaf of a fat tree whose endpoints are all in).
        if (open[T][static_cast<size_t>(v.node)] == 0 && !may_transit(v.node, hops[u] + 1)) continue;
        reach(v.node, u, port, hops[u] + 1);
      }
    }
    if (found < 0) return -1;
    path.clear();
    for (int v = found; v != src; v = via[v].node) path.push_back(via[v]);
    std::reverse(path.begin(), path.end());
    for (PortRef o : path) --cap[adj[static_cast<size_t>(o.node)][static_cast<size_t>(o.port)].dl];
    return ep_of[found];
  };
  // [endpoint]: the directed links into it. A tree none of whose endpoints
  // still out of it has one with capacity left in this step finds no child
  // in it (a search ends on such a link).
  std::vector<std::vector<int>> inlets(n);
  for (int s : t.switches())
    for (const Out& o : adj[static_cast<size_t>(s)])
      if (o.ep >= 0) inlets[static_cast<size_t>(o.ep)].push_back(o.dl);
  // Whether endpoint p has a link into the network with capacity left: a
  // search from one without finds nothing (each endpoint sends once a step
  // on most topologies, so most tries end here).
  auto can_send = [&](int p) {
    for (const Out& o : adj[static_cast<size_t>(t.endpoints()[p])])
      if (o.sw && cap[o.dl] > 0) return true;
    return false;
  };
  auto reachable = [&](int c) {
    for (int dl : inlets[static_cast<size_t>(c)])
      if (cap[dl] > 0) return true;
    return false;
  };
  // The endpoints that still have an inlet with capacity in this step, in
  // any order: a search only ever ends on an endpoint, so only a child's
  // joining can take one out. Scanning these, not every endpoint, keeps a
  // step's checks from costing n per tree (N^3 in all).
  std::vector<int> live, live_at(n, -1);
  auto can_grow = [&](int T) {  // the shorter list
    if (outside[T].size() < live.size()) {
      for (int c : outside[T])
        if (live_at[c] >= 0) return true;
      return false;
    }
    for (int c : live)
      if (!in_tree[T][c]) return true;
    return false;
  };
  // Endpoint c joins tree T: the switches beside it have one fewer to offer.
  auto join = [&](int T, int c) {
    in_tree[T][c] = 1;
    const int at = outside_at[T][c];
    outside_at[T][outside[T].back()] = at;
    outside[T][static_cast<size_t>(at)] = outside[T].back();
    outside[T].pop_back();
    for (const Out& o : adj[static_cast<size_t>(t.endpoints()[c])])
      if (o.sw) --open[T][static_cast<size_t>(o.node)];
    if (live_at[c] >= 0 && !reachable(c)) {
      live_at[live.back()] = live_at[c];
      live[static_cast<size_t>(live_at[c])] = live.back();
      live.pop_back();
      live_at[c] = -1;
    }
  };

  int seq = 0;
  for (int step = 1; remaining > 0; ++step) {
    cap = full_cap;  // a new topology graph G^0 for every time step (line 5)
    live.clear();
    std::fill(live_at.begin(), live_at.end(), -1);
    for (int c = 0; c < n; ++c)
      if (reachable(c)) {
        live_at[c] = static_cast<int>(live.size());
        live.push_back(c);
      }
    std::vector<char> stuck(n, 0);
    std::vector<size_t> frontier(n);  // nodes added in earlier steps: order[T][0..frontier)
    for (int T = 0; T < n; ++T) frontier[T] = order[T].size();
    // [T]: order[T][0..tried) found no child this step, and will find none
    // again in it (links only get scarcer, trees only fuller). A tree tries
    // its nodes in order and stops at the first that finds one, so those
    // that failed are always such a prefix.
    std::vector<size_t> tried(n, 0);
    const int before = remaining;
    bool progress = true;
    while (progress) {
      progress = false;
      for (int T = 0; T < n; ++T) {  // trees take turns by root id (line 8)
        if (stuck[T] || static_cast<int>(order[T].size()) == n) continue;
        if (!can_grow(T)) {
          stuck[T] = 1;
          continue;
        }
        bool added = false;
        for (size_t i = tried[T]; i < frontier[T] && !added; ++i) {  // breadth first (line 9)
          const int p = order[T][i];
          const int c = can_send(p) ? find_child(T, p) : -1;
          if (c < 0) {
            tried[T] = i + 1;
            continue;
          }
          join(T, c);
          order[T].push_back(c);
          out.edges.push_back({T, p, c, step, seq++});
          --remaining;
          added = progress = true;
        }
        if (!added) stuck[T] = 1;  // links only get scarcer within a step
      }
    }
    if (remaining == before)
      throw UserError("MultiTree cannot span the topology '" + t.name +
                      "': some endpoints cannot reach each other");
    out.steps = step;
  }
  return out;
}

Program multitree_program(const MultiTreeTrees& trees, bool nops) {
  const int n = trees.nodes, T = trees.steps;
  TableProgramBuilder b(trees.direct ? "multitree" : "multitree-indirect", n, n);
  for (const TreeEdge& e : trees.edges) {
    // Line 17: reduce-scatter reverses the edge at T - t0 + 1.
    b.reduce(e.tree, e.child, e.parent, T - e.step + 1);
    // Line 18: all-gather runs after reduce-scatter.
    b.gather(e.tree, e.parent, e.child, T + e.step);
  }
  return b.build(nops);
}

Program multitree_program(const Topology& t, const MultiTreeOptions& opt) {
  return multitree_program(multitree_trees(t, opt), opt.nops);
}

std::vector<int> step_capacities(const Topology& t) {
  double base = 0;
  for (const auto& l : t.links())
    if (t.node(l.a.node).kind == NodeKind::Switch && t.node(l.b.node).kind == NodeKind::Switch)
      base = base == 0 ? l.bw_GBps : std::min(base, l.bw_GBps);
  if (base == 0)
    for (const auto& l : t.links()) base = base == 0 ? l.bw_GBps : std::min(base, l.bw_GBps);
  std::vector<int> cap(2 * t.links().size());
  for (size_t i = 0; i < cap.size(); ++i)
    cap[i] = std::max(1, static_cast<int>(std::floor(t.links()[i / 2].bw_GBps / base + 1e-9)));
  return cap;
}

LinkLoad link_load(const Schedule& s, const Topology& t) {
  const int n = static_cast<int>(t.endpoints().size());
  if (s.nodes != n)
    throw UserError("a schedule of " + std::to_string(s.nodes) + " nodes on a topology of " + std::to_string(n) +
                    " endpoints");
  const std::vector<int> cap = step_capacities(t);
  LinkLoad load;
  load.per_step.assign(s.steps, 0.0);
  std::vector<int> use(cap.size());
  const std::vector<Message> messages = s.messages();  // by step
  for (size_t m = 0; m < messages.size();) {
    const int step = messages[m].step;
    std::fill(use.begin(), use.end(), 0);
    std::set<std::tuple<int, int, Op>> crossed;  // (src, dst, op): a message of several flows crosses once
    for (; m < messages.size() && messages[m].step == step; ++m) {
      const Message& x = messages[m];
      if (!crossed.insert({x.src, x.dst, x.op}).second) continue;
      int node = t.endpoints()[x.src];
      for (int guard = 0; node != t.endpoints()[x.dst] && guard < 10000; ++guard) {
        const PortRef out{node, t.route(node, x.dst)};
        if (out.port < 0 || t.link_at(out) < 0) break;
        ++use[dlink(t, out)];
        node = t.peer(out).node;
      }
    }
    for (size_t i = 0; i < use.size(); ++i) {
      const double l = static_cast<double>(use[i]) / cap[i];
      load.per_step[step - 1] = std::max(load.per_step[step - 1], l);
      if (l <= 1) continue;
      const auto& L = t.links()[i / 2];
      const PortRef from = i % 2 ? L.b : L.a;
      load.over.push_back("in step " + std::to_string(step) + " link " + t.port_name(from) + " -> " +
                          t.port_name(t.peer(from)) + " carries " + std::to_string(use[i]) +
                          " messages for a capacity of " + std::to_string(cap[i]));
    }
    load.max = std::max(load.max, load.per_step[step - 1]);
  }
  return load;
}

}  // namespace incsim::collectives
