#include "multicast.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "core/error.h"
#include "core/hash.h"

namespace incsim::topo {

namespace {
uint64_t mix(uint64_t x) { return splitmix64(x); }
}  // namespace

int MulticastFabric::channel(int node, int port) const {
  const int l = topo_.link_at({node, port});
  const Link& k = topo_.links()[l];
  return 2 * l + (k.a.node == node && k.a.port == port ? 0 : 1);
}

MulticastFabric::MulticastFabric(const Topology& t, HomeMapping homes, std::function<bool(int node)> can_reduce,
                                 bool deadlock_checks)
    : topo_(t), homes_(homes), can_reduce_(std::move(can_reduce)), deadlock_checks_(deadlock_checks) {
  if (!deadlock_checks_) return;
  // Dependencies between switch-to-switch channels along the paths packets
  // really take: toward every GPU from every switch (GPUs inject there,
  // tables emit partials there), and push writes toward every switch from
  // the switches GPUs inject at, by any of the equal-cost ports.
  unicast_deps_.assign(2 * topo_.links().size(), {});
  const auto is_switch = [&](int node) { return topo_.node(node).kind == NodeKind::Switch; };
  std::vector<int> seen;  // channels already followed for this destination
  std::vector<char> followed(unicast_deps_.size(), 0);  // [channel]: in seen
  // A channel's dependencies repeat for every destination: sorted and made
  // unique whenever they double, they stay within twice what they end as.
  std::vector<size_t> compact_at(unicast_deps_.size(), 16);
  const auto compact = [](std::vector<int>& deps) {
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  };
  // From switch x (entered by channel `in`, -1 at the source), toward a destination.
  std::function<void(int, int, const std::function<std::vector<int16_t>(int)>&)> walk =
      [&](int x, int in, const std::function<std::vector<int16_t>(int)>& next) {
        for (int16_t q : next(x)) {
          const PortRef y = topo_.peer({x, q});
          if (!is_switch(y.node)) continue;
          const int c = channel(x, q);
          if (in >= 0) {
            std::vector<int>& deps = unicast_deps_[in];
            deps.push_back(c);
            if (deps.size() >= compact_at[in]) {
              compact(deps);
              compact_at[in] = 2 * deps.size() + 16;
            }
          }
          if (followed[c]) continue;
          followed[c] = 1;
          seen.push_back(c);
          walk(y.node, c, next);
        }
      };
  const auto forget = [&] {
    for (int c : seen) followed[c] = 0;
    seen.clear();
  };
  for (size_t d = 0; d < topo_.endpoints().size(); ++d) {
    forget();
    const auto next = [&](int x) {
      const int q = topo_.route(x, static_cast<int>(d));
      return q < 0 ? std::vector<int16_t>{} : std::vector<int16_t>{static_cast<int16_t>(q)};
    };
    for (int x : topo_.switches()) walk(x, -1, next);
  }
  for (size_t h = 0; h < topo_.switches().size(); ++h) {
    forget();
    const auto next = [&](int x) {
      const PortSpan r = topo_.routes_to_switch(x, static_cast<int>(h));
      return std::vector<int16_t>(r.begin(), r.end());
    };
    for (int e : topo_.endpoints())
      for (int p = 0; p < topo_.node(e).ports; ++p) walk(topo_.peer({e, p}).node, -1, next);
  }
  for (auto& deps : unicast_deps_) compact(deps);
}

void MulticastFabric::check_deadlock_free(const Region& g) const {
  auto deps = unicast_deps_;
  const auto& sws = topo_.switches();
  const int T = static_cast<int>(g.def.targets.size());
  std::vector<int> sw_of_node(topo_.nodes().size(), -1);
  for (size_t s = 0; s < sws.size(); ++s) sw_of_node[sws[s]] = static_cast<int>(s);
  // A copy that arrives at switch x by one tree edge waits for every other.
  for (int pos = 0; pos < T; ++pos) {
    // The switches that can hold a copy on this tree: where a target GPU
    // injects, where a home port multicasts a result on it, and onward.
    const int pivot = g.def.targets[pos];
    std::vector<char> holds(sws.size(), 0);
    std::vector<int> queue;
    for (int t : g.def.targets)
      for (int p = 0; p < topo_.node(topo_.endpoints()[t]).ports; ++p) {
        const int s = sw_of_node[topo_.peer({topo_.endpoints()[t], p}).node];
        if (s >= 0 && !holds[s]) holds[s] = 1, queue.push_back(s);
      }
    for (size_t s = 0; s < sws.size(); ++s) {
      const auto& pv = g.result_pivots[s];
      if (!holds[s] && std::find(pv.begin(), pv.end(), pivot) != pv.end()) holds[s] = 1, queue.push_back(static_cast<int>(s));
    }
    for (size_t i = 0; i < queue.size(); ++i) {
      const size_t k = static_cast<size_t>(queue[i]) * T + pos;
      for (uint32_t j = g.offsets[k]; j < g.offsets[k + 1]; ++j) {
        if (g.fanout[j].endpoint >= 0) continue;
        const int x = sw_of_node[topo_.peer({sws[queue[i]], g.fanout[j].port}).node];
        if (!holds[x]) holds[x] = 1, queue.push_back(x);
      }
    }
    for (size_t s = 0; s < sws.size(); ++s) {
      if (!holds[s]) continue;
      const size_t k = s * T + pos;
      for (uint32_t i = g.offsets[k]; i < g.offsets[k + 1]; ++i) {
        const Fanout& f = g.fanout[i];
        if (f.endpoint >= 0) continue;
        const PortRef x = topo_.peer({sws[s], f.port});
        const size_t kx = static_cast<size_t>(topo_.node(x.node).index) * T + pos;
        for (uint32_t j = g.offsets[kx]; j < g.offsets[kx + 1]; ++j)
          if (g.fanout[j].endpoint < 0 && g.fanout[j].port != x.port)
            deps[channel(sws[s], f.port)].push_back(channel(x.node, g.fanout[j].port));
      }
    }
  }
  // Depth-first search for a cycle.
  std::vector<uint8_t> state(deps.size(), 0);  // 0 new, 1 on the stack, 2 done
  for (size_t root = 0; root < deps.size(); ++root) {
    if (state[root]) continue;
    std::vector<std::pair<int, size_t>> stack{{static_cast<int>(root), 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto& [c, next] = stack.back();
      if (next == deps[c].size()) {
        state[c] = 2;
        stack.pop_back();
        continue;
      }
      const int d = deps[c][next++];
      if (state[d] == 1) {
        const Link& l = topo_.links()[d / 2];
        const PortRef from = d % 2 ? l.b : l.a, to = d % 2 ? l.a : l.b;
        throw UserError("platform '" + topo_.name + "' cannot carry multicast and in-switch reduction without "
                        "deadlock: packets on the link " + topo_.node(from.node).name + " -> " +
                        topo_.node(to.node).name + " can wait on each other in a cycle (Klenk §IV-E2 needs "
                        "multicast paths that keep to unicast ones, as on DGX-2 and fat trees)");
      }
      if (state[d] == 0) {
        state[d] = 1;
        stack.push_back({d, 0});
      }
    }
  }
}

void MulticastFabric::remove_region(int r) { regions_[r] = Region{}; }

uint32_t MulticastFabric::groups_held(int sw, int job) const {
  uint32_t n = 0;
  for (size_t w = 0; w < windows_.size(); ++w)
    if (windows_[w] && (job == kAnyJob || tenants_[w] == job))
      n += static_cast<uint32_t>(std::count(window_switches_[w].begin(), window_switches_[w].end(), sw));
  return n;
}

int MulticastFabric::claim_window(const std::vector<int>& members) {
  std::vector<int> at;  // the switches its group takes an entry at
  if (limit_.capacity && members.size() >= 2) {
    const auto& sws = topo_.switches();
    const std::vector<bool> on = switches_between(topo_, members);
    for (int s = 0; s < static_cast<int>(sws.size()); ++s)
      if (on[s] && (!limit_.counts || limit_.counts(sws[s]))) at.push_back(s);
    const std::string of = " of " + limit_.key + "=" + std::to_string(limit_.capacity);
    for (int s : at) {
      const std::string needs = "a group of " + std::to_string(members.size()) + " GPUs needs a multicast group at " +
                                topo_.node(sws[s]).name;
      if (groups_held(s) >= limit_.capacity)
        throw ShareShortfall(limit_.resource, needs + ", which holds all" + of + " already");
      if (tenant_ >= 0 && groups_held(s, tenant_) >= limit_.limit(tenant_))
        throw ShareShortfall(limit_.resource, needs + ", but its " + limit_.share(tenant_) + " is " +
                                                  std::to_string(limit_.limit(tenant_)) + of + " there, " +
                                                  std::to_string(groups_held(s, tenant_)) + " of them held already");
    }
  }
  const auto free = std::find(windows_.begin(), windows_.end(), false);
  const int w = static_cast<int>(free - windows_.begin());
  if (free != windows_.end()) {
    *free = true;
  } else {
    windows_.push_back(true);
    tenants_.push_back(-1);
    window_switches_.emplace_back();
  }
  tenants_[w] = tenant_;
  window_switches_[w] = std::move(at);
  return w;
}

void MulticastFabric::release_window(int w) {
  window_switches_[w].clear();
  windows_[w] = false;
  tenants_[w] = -1;
}

int MulticastFabric::find(uint64_t addr) const {
  for (size_t r = 0; r < regions_.size(); ++r)
    if (addr >= regions_[r].def.start && addr - regions_[r].def.start < regions_[r].def.size) return static_cast<int>(r);
  return -1;
}

int MulticastFabric::add_region(uint64_t start, uint64_t size, std::vector<int> targets, bool exclude_source) {
  if (size == 0) throw UserError("a multicast region must not be empty");
  for (const auto& g : regions_)
    if (start < g.def.start + g.def.size && g.def.start < start + size)
      throw UserError("multicast region [" + std::to_string(start) + ", " + std::to_string(start + size) +
                      ") overlaps a region registered before");
  Region g = make_region({start, size, std::move(targets), exclude_source});
  const auto free = std::find_if(regions_.begin(), regions_.end(), [](const Region& x) { return x.def.size == 0; });
  if (free != regions_.end()) {
    *free = std::move(g);
    return static_cast<int>(free - regions_.begin());
  }
  regions_.push_back(std::move(g));
  return static_cast<int>(regions_.size()) - 1;
}

void MulticastFabric::check_group(std::vector<int> targets) const {
  make_region({0, kBlockBytes, std::move(targets), false});
}

MulticastFabric::Region MulticastFabric::make_region(McRegion def) const {
  const int n = static_cast<int>(topo_.endpoints().size());
  std::set<int> seen;
  for (int e : def.targets) {
    if (e < 0 || e >= n)
      throw UserError("multicast group names GPU " + std::to_string(e) + ", but the platform has GPUs 0 to " +
                      std::to_string(n - 1));
    if (!seen.insert(e).second) throw UserError("multicast group names GPU " + std::to_string(e) + " twice");
  }
  if (def.targets.size() < 2) throw UserError("a multicast group needs at least two GPUs");
  Region g;
  g.def = std::move(def);
  g.target_pos.assign(n, -1);
  for (size_t i = 0; i < g.def.targets.size(); ++i) g.target_pos[g.def.targets[i]] = static_cast<int>(i);
  build(g);
  if (deadlock_checks_) check_deadlock_free(g);
  return g;
}

void MulticastFabric::build(Region& g) const {
  const auto& sws = topo_.switches();
  const int S = static_cast<int>(sws.size());
  const int T = static_cast<int>(g.def.targets.size());
  std::vector<int> sw_of_node(topo_.nodes().size(), -1);
  for (int s = 0; s < S; ++s) sw_of_node[sws[s]] = s;
  std::vector<std::vector<Fanout>> lists(static_cast<size_t>(S) * T);
  g.subtree.assign(static_cast<size_t>(S) * T, 0);

  g.result_pivots.assign(S, {});
  for (int pos = 0; pos < T; ++pos) {
    const int h = g.def.targets[pos];
    const int hnode = topo_.endpoints()[h];
    // Parent of each switch on h's in-tree; switches by increasing distance.
    std::vector<int> order, parent(S, -1), root(S, -1), up_port(S, -1);
    for (int s = 0; s < S; ++s)
      if (topo_.route(sws[s], h) >= 0) order.push_back(s);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      const int da = topo_.hops_from(sws[a], h), db = topo_.hops_from(sws[b], h);
      return da != db ? da < db : a < b;
    });
    auto list = [&](int s) -> std::vector<Fanout>& { return lists[static_cast<size_t>(s) * T + pos]; };
    for (int s : order) {
      up_port[s] = topo_.route(sws[s], h);
      const PortRef up = topo_.peer({sws[s], up_port[s]});
      if (up.node == hnode) {
        root[s] = s;
        continue;
      }
      parent[s] = sw_of_node[up.node];
      root[s] = root[parent[s]];
    }
    // Each target is delivered, in every tree component, by the adjacent
    // switch nearest the pivot (lowest number on a tie). A component that
    // reaches no switch linked to some target is left out of the tree (one
    // node's NVSwitches, for a group across nodes), unless every one is.
    std::vector<int> components, below(S, 0);  // below: deliveries in a switch's subtree
    for (int s : order)
      if (root[s] == s) components.push_back(s);
    std::vector<std::vector<int>> best(g.def.targets.size(), std::vector<int>(S, -1));  // [target][root]: the deliverer
    for (size_t i = 0; i < g.def.targets.size(); ++i) {
      const int tnode = topo_.endpoints()[g.def.targets[i]];
      for (int p = 0; p < topo_.node(tnode).ports; ++p) {
        const int s = sw_of_node[topo_.peer({tnode, p}).node];
        if (s < 0 || root[s] < 0) continue;
        int& b = best[i][root[s]];
        const auto key = [&](int x) { return std::make_pair(topo_.hops_from(sws[x], h), x); };
        if (b < 0 || key(s) < key(b)) b = s;
      }
    }
    std::vector<int> whole;  // components that deliver to every target
    for (int c : components) {
      bool all = true;
      for (size_t i = 0; i < best.size(); ++i) all = all && best[i][c] >= 0;
      if (all) whole.push_back(c);
    }
    if (whole.empty()) {
      for (size_t i = 0; i < best.size(); ++i)
        for (int c : components)
          if (best[i][c] < 0)
            throw UserError("platform '" + topo_.name + "' cannot multicast to " +
                            topo_.node(topo_.endpoints()[g.def.targets[i]]).name + ": a multicast entering at " +
                            topo_.node(sws[c]).name + " reaches no switch linked to it (in-network collectives "
                            "need each GPU linked into every part of the fabric a multicast can enter)");
    }
    for (int s : order)
      if (std::find(whole.begin(), whole.end(), root[s]) == whole.end()) root[s] = -1;  // left out
    for (size_t i = 0; i < best.size(); ++i) {
      const int t = g.def.targets[i];
      const int tnode = topo_.endpoints()[t];
      for (int c : whole) {
        const int s = best[i][c];
        int port = topo_.route(sws[s], t);
        if (topo_.peer({sws[s], port}).node != tnode) {
          for (port = 0; topo_.peer({sws[s], port}).node != tnode; ++port) {
          }
        }
        list(s).push_back({static_cast<int16_t>(port), t});
        for (int x = s; x >= 0; x = parent[x]) {
          ++below[x];
          if (t != h || !g.def.exclude_source) ++g.subtree[static_cast<size_t>(x) * T + pos];
        }
      }
    }
    // Tree edges, pruned to those with targets beyond them: a multicast never
    // climbs to a switch only to turn back, which keeps its paths those of
    // unicast packets on two-level fabrics (up, then down; Klenk §IV-E2).
    for (int s : order) {
      if (root[s] < 0) continue;
      if (below[s] > 0) g.result_pivots[s].push_back(h);
      if (parent[s] < 0) continue;
      const PortRef up = topo_.peer({sws[s], up_port[s]});
      if (below[root[s]] > below[s]) list(s).push_back({static_cast<int16_t>(up_port[s]), -1});
      if (below[s] > 0) list(parent[s]).push_back({static_cast<int16_t>(up.port), -1});
    }
  }
  g.offsets.assign(lists.size() + 1, 0);
  for (size_t i = 0; i < lists.size(); ++i) {
    std::sort(lists[i].begin(), lists[i].end(), [](const Fanout& a, const Fanout& b) { return a.port < b.port; });
    g.offsets[i + 1] = g.offsets[i] + static_cast<uint32_t>(lists[i].size());
    g.fanout.insert(g.fanout.end(), lists[i].begin(), lists[i].end());
  }
  // Home ports: every port of every switch that all targets reach and that
  // lies on a shortest path between two of them, where the group's traffic
  // meets. On a whole machine that is every switch; a group on part of one
  // (a job on one DGX-2 baseboard) keeps its reductions on its own switches,
  // off the links and tables of groups elsewhere.
  for (int s : home_switches(topo_, g.def.targets, can_reduce_)) {
    if (g.result_pivots[s].empty()) continue;  // it delivers to no target on any tree
    for (int p = 0; p < topo_.node(sws[s]).ports; ++p) g.homes.push_back({s, p});
  }
  // Interleaved, consecutive blocks go to different switches first.
  std::stable_sort(g.homes.begin(), g.homes.end(), [](const HomePort& a, const HomePort& b) {
    return a.port != b.port ? a.port < b.port : a.sw < b.sw;
  });
  if (g.homes.empty()) throw UserError("platform '" + topo_.name + "' has no switch every GPU of the group reaches");
  if (aggregation_trees_) build_merges(g);
}

std::vector<bool> switches_between(const Topology& t, const std::vector<int>& targets) {
  // Each target's distance to each switch, asked once: a cluster's routes
  // compute it (no table).
  const size_t S = t.switches().size();
  std::vector<std::vector<int>> dist(targets.size(), std::vector<int>(S));
  for (size_t i = 0; i < targets.size(); ++i)
    for (size_t s = 0; s < S; ++s)
      dist[i][s] = t.distance_to_switch(t.endpoints()[targets[i]], static_cast<int>(s));
  return on_shortest_paths(dist);
}

std::vector<int> home_switches(const Topology& t, const std::vector<int>& targets,
                               const std::function<bool(int node)>& can_reduce) {
  const std::vector<bool> between = switches_between(t, targets);
  std::vector<int> out;
  for (int s = 0; s < static_cast<int>(t.switches().size()); ++s) {
    const int node = t.switches()[static_cast<size_t>(s)];
    bool reached = between[static_cast<size_t>(s)] && (!can_reduce || can_reduce(node));
    for (int e : targets) reached = reached && t.distance_to_switch(t.endpoints()[static_cast<size_t>(e)], s) > 0;
    if (reached) out.push_back(s);
  }
  return out;
}

std::vector<bool> on_shortest_paths(const std::vector<std::vector<int>>& dist) {
  const size_t M = dist.size(), S = dist.empty() ? 0 : dist.front().size();
  // all: the switches every member reaches; apart[m]: the others member m
  // reaches, (switch, distance) by switch. Both read row by row, where a
  // member's distances lie together.
  std::vector<char> every(S, 1);
  for (size_t m = 0; m < M; ++m)
    for (size_t s = 0; s < S; ++s) every[s] &= dist[m][s] > 0;
  std::vector<size_t> all;
  for (size_t s = 0; s < S; ++s)
    if (every[s]) all.push_back(s);
  std::vector<std::vector<std::pair<size_t, int>>> apart(M);
  for (size_t m = 0; m < M; ++m)
    for (size_t s = 0; s < S; ++s)
      if (!every[s] && dist[m][s] > 0) apart[m].emplace_back(s, dist[m][s]);
  // The shortest way between members a and b through a switch apart (-1: none).
  const auto best_apart = [&](size_t a, size_t b) {
    int best = -1;
    const auto &x = apart[a], &y = apart[b];
    for (size_t i = 0, j = 0; i < x.size() && j < y.size();)
      if (x[i].first < y[j].first) ++i;
      else if (y[j].first < x[i].first) ++j;
      else {
        const int d = x[i++].second + y[j++].second;
        if (best < 0 || d < best) best = d;
      }
    return best;
  };
  std::map<std::vector<int>, std::vector<size_t>> classes;  // distances to `all` -> its members
  for (size_t m = 0; m < M; ++m) {
    std::vector<int> d(all.size());
    for (size_t k = 0; k < all.size(); ++k) d[k] = dist[m][all[k]];
    classes[std::move(d)].push_back(m);
  }
  std::vector<std::pair<const std::vector<int>*, const std::vector<size_t>*>> cls;
  for (const auto& [d, members] : classes) cls.emplace_back(&d, &members);
  std::vector<bool> on(S, false);
  // A class pair's way through `all`: its switches are on a shortest path
  // where a pair of its members has no shorter way apart.
  for (size_t i = 0; i < cls.size(); ++i)
    for (size_t j = cls[i].second->size() > 1 ? i : i + 1; j < cls.size(); ++j) {
      const std::vector<int>&a = *cls[i].first, &b = *cls[j].first;
      int best = -1;
      for (size_t k = 0; k < all.size(); ++k)
        if (best < 0 || a[k] + b[k] < best) best = a[k] + b[k];
      if (best < 0) continue;
      bool way = false;
      for (size_t x : *cls[i].second) {
        for (size_t y : *cls[j].second) {
          const int other = x == y ? best : best_apart(x, y);
          if ((way = x != y && (other < 0 || other >= best))) break;
        }
        if (way) break;
      }
      if (!way) continue;
      for (size_t k = 0; k < all.size(); ++k) on[all[k]] = on[all[k]] || a[k] + b[k] == best;
    }
  // A switch apart: the pairs of members that reach it.
  std::vector<std::vector<size_t>> reached(S);
  for (size_t m = 0; m < M; ++m)
    for (const auto& [s, d] : apart[m]) reached[s].push_back(m);
  std::vector<int> class_of(M);
  for (size_t c = 0; c < cls.size(); ++c)
    for (size_t m : *cls[c].second) class_of[m] = static_cast<int>(c);
  for (size_t s = 0; s < S; ++s)
    for (size_t x = 0; x < reached[s].size() && !on[s]; ++x)
      for (size_t y = x + 1; y < reached[s].size() && !on[s]; ++y) {
        const size_t a = reached[s][x], b = reached[s][y];
        const std::vector<int>&da = *cls[static_cast<size_t>(class_of[a])].first,
                         &db = *cls[static_cast<size_t>(class_of[b])].first;
        int best = best_apart(a, b);
        for (size_t k = 0; k < all.size(); ++k)
          if (best < 0 || da[k] + db[k] < best) best = da[k] + db[k];
        on[s] = dist[a][s] + dist[b][s] == best;
      }
  return on;
}

void MulticastFabric::build_merges(Region& g) const {
  const auto& sws = topo_.switches();
  std::vector<int> sw_of_node(topo_.nodes().size(), -1);
  for (size_t s = 0; s < sws.size(); ++s) sw_of_node[sws[s]] = static_cast<int>(s);
  std::vector<int> count(sws.size(), 0), in_port(sws.size(), -1);
  std::vector<char> merges(sws.size(), 0);
  std::vector<int> touched;
  g.merge_first.assign(1, 0);
  for (const HomePort& h : g.homes) {
    bool one_way = true;  // every target enters the network at one switch toward h
    for (int t : g.def.targets) {
      const int e = topo_.endpoints()[t];
      PortRef at{-1, -1};
      for (int p = 0; p < topo_.node(e).ports; ++p) {
        const PortRef x = topo_.peer({e, p});
        const int d = x.node >= 0 ? topo_.distance_to_switch(x.node, h.sw) : -1;
        if (d < 0 || d + 1 != topo_.distance_to_switch(e, h.sw)) continue;
        one_way = one_way && at.node < 0;
        at = x;
      }
      one_way = one_way && at.node >= 0 && sw_of_node[at.node] >= 0;
      if (!one_way) break;
      // Up the tree to the home: a switch entered by a second port is a merge point.
      for (int s = sw_of_node[at.node]; s != h.sw;) {
        if (count[s]++ == 0) {
          touched.push_back(s);
          in_port[s] = at.port;
        } else if (in_port[s] != at.port) {
          merges[s] = 1;
        }
        const PortSpan up = topo_.routes_to_switch(sws[s], h.sw);
        at = topo_.peer({sws[s], up[static_cast<size_t>(h.port) % up.size()]});
        s = sw_of_node[at.node];
      }
    }
    std::sort(touched.begin(), touched.end());
    for (int s : touched) {
      if (one_way && merges[s]) g.merges.push_back({s, static_cast<uint16_t>(count[s])});
      count[s] = 0;
      merges[s] = 0;
    }
    touched.clear();
    g.merge_first.push_back(static_cast<uint32_t>(g.merges.size()));
  }
}

int MulticastFabric::merge_count(int r, uint64_t addr, int sw) const {
  const Region& g = regions_[r];
  if (g.merge_first.empty()) return 0;  // no aggregation trees (aggregate_on_the_way)
  const size_t h = home_index(g, addr);
  for (uint32_t i = g.merge_first[h]; i < g.merge_first[h + 1]; ++i)
    if (g.merges[i].sw == sw) return g.merges[i].count;
  return 0;
}

const MulticastFabric::Fanout* MulticastFabric::fanout_begin(int r, int sw, int pivot) const {
  const Region& g = regions_[r];
  return g.fanout.data() + g.offsets[slot(g, sw, pivot)];
}

const MulticastFabric::Fanout* MulticastFabric::fanout_end(int r, int sw, int pivot) const {
  const Region& g = regions_[r];
  return g.fanout.data() + g.offsets[slot(g, sw, pivot) + 1];
}

int MulticastFabric::subtree_targets(int r, int sw, int pivot) const {
  const Region& g = regions_[r];
  return g.subtree[slot(g, sw, pivot)];
}

int MulticastFabric::home_gpu(int r, uint64_t addr) const {
  const auto& t = regions_[r].def.targets;
  return t[block(r, addr) % t.size()];
}

// Homes take the pivots in turn, each from its own place in the list: by
// the address alone, the interleave's every S-th block at one switch would
// leave some pivots' trees, and so some of a trunk's links, without
// results; by the block's turn alone, every home would take one tree at
// once.
int MulticastFabric::result_pivot(int r, uint64_t addr) const {
  const Region& g = regions_[r];
  const auto& p = g.result_pivots[home_port(r, addr).sw];
  return p[(home_index(g, addr) + home_key(g, addr) / g.homes.size()) % p.size()];
}

uint64_t MulticastFabric::home_key(const Region& g, uint64_t addr) const {
  const uint64_t b = (addr - g.def.start) / kBlockBytes;
  return homes_ == HomeMapping::Hash ? mix(b) : b;
}

size_t MulticastFabric::home_index(const Region& g, uint64_t addr) const {
  return static_cast<size_t>(home_key(g, addr) % g.homes.size());
}

MulticastFabric::HomePort MulticastFabric::home_port(int r, uint64_t addr) const {
  return regions_[r].homes[home_index(regions_[r], addr)];
}

}  // namespace incsim::topo
