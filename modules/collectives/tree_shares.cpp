#include "collectives/tree_shares.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "collectives/table_program.h"
#include "core/error.h"

namespace incsim::collectives {

namespace {

// Depth of each rank below root in a parent array; -1 when not reached.
std::vector<int> depths(const std::vector<int>& parent, int root) {
  const int n = static_cast<int>(parent.size());
  std::vector<int> d(n, -1);
  d[root] = 0;
  for (int pass = 0; pass < n; ++pass)
    for (int v = 0; v < n; ++v)
      if (d[v] < 0 && parent[v] != kNone && d[parent[v]] >= 0) d[v] = d[parent[v]] + 1;
  return d;
}

// Height of each rank's subtree (a leaf 0).
std::vector<int> heights(const std::vector<int>& parent, const std::vector<int>& depth) {
  const int n = static_cast<int>(parent.size());
  std::vector<int> order(n), h(n, 0);
  for (int v = 0; v < n; ++v) order[v] = v;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return depth[a] > depth[b]; });
  for (int v : order)
    if (parent[v] != kNone) h[parent[v]] = std::max(h[parent[v]], h[v] + 1);
  return h;
}

}  // namespace

Program tree_shares_program(const std::string& name, int n, const std::vector<TreeShare>& trees, int chunks,
                            int broadcast_root) {
  if (trees.empty() || chunks < 1) throw UserError("a tree program needs at least one tree and one chunk");
  // Tree t's chunks take units_t chunks of the buffer each, trees side by side.
  std::vector<TableProgramBuilder::Flow> flows;
  int units = 0;
  for (size_t t = 0; t < trees.size(); ++t) {
    if (trees[t].units < 1) throw UserError("every tree needs a positive share of the buffer");
    for (int c = 0; c < chunks; ++c) flows.push_back({units * chunks + c * trees[t].units, trees[t].units, static_cast<int>(t)});
    units += trees[t].units;
  }
  TableProgramBuilder b(name, n, std::move(flows), units * chunks);
  const bool allreduce = broadcast_root == kNone;
  if (!allreduce) b.broadcast_from(broadcast_root);
  for (size_t t = 0; t < trees.size(); ++t) {
    const TreeShare& tr = trees[t];
    const std::vector<int> gd = depths(tr.gather_parent, tr.root);
    for (int v = 0; v < n; ++v)
      if (gd[v] < 0) throw UserError("tree " + std::to_string(t) + " does not span rank " + std::to_string(v));
    int h_root = 0;
    std::vector<int> rh;
    if (allreduce) {
      const std::vector<int> rd = depths(tr.reduce_parent, tr.root);
      for (int v = 0; v < n; ++v)
        if (rd[v] < 0) throw UserError("tree " + std::to_string(t) + " does not reduce rank " + std::to_string(v));
      rh = heights(tr.reduce_parent, rd);
      h_root = rh[tr.root];
    }
    // Chunk c goes one step behind chunk c - 1.
    for (int c = 0; c < chunks; ++c) {
      const int f = static_cast<int>(t) * chunks + c;
      for (int v = 0; v < n; ++v) {
        if (allreduce && tr.reduce_parent[v] != kNone) b.reduce(f, v, tr.reduce_parent[v], c + rh[v] + 1);
        if (tr.gather_parent[v] != kNone) b.gather(f, tr.gather_parent[v], v, c + h_root + gd[v]);
      }
    }
  }
  return b.build(false);
}

std::vector<TreeShare> blink_shares(const CapGraph& g, const Packing& p, bool allreduce) {
  std::vector<TreeShare> out;
  for (const Tree& t : p.trees) {
    TreeShare s;
    s.root = p.root;
    s.gather_parent.assign(g.n, kNone);
    for (int v = 0; v < g.n; ++v)
      if (t.parent_edge[v] >= 0) s.gather_parent[v] = g.edges[t.parent_edge[v]].from;
    if (allreduce) s.reduce_parent = s.gather_parent;
    s.units = std::max(1, static_cast<int>(std::lround(16 * t.weight)));
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<TreeShare> one_hop_shares(int n) {
  std::vector<TreeShare> out;
  for (int r = 0; r < n; ++r) {
    TreeShare s;
    s.root = r;
    s.gather_parent.assign(n, r);
    s.gather_parent[r] = kNone;
    s.reduce_parent = s.gather_parent;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::vector<int>> pack_rings(const CapGraph& g) {
  const int n = g.n;
  if (n < 2 || n > 10) throw UserError("rings are packed for 2 to 10 GPUs");
  std::vector<std::vector<int>> cap(n, std::vector<int>(n, 0));
  for (const CapEdge& e : g.edges) cap[e.from][e.to] += static_cast<int>(std::floor(e.cap + 1e-9));
  std::vector<std::vector<int>> rings;
  if (n == 2) {
    for (int k = 0; k < std::min(cap[0][1], cap[1][0]); ++k) rings.push_back({0, 1});
    return rings;
  }
  auto ucap = [&](int a, int b) { return std::min(cap[a][b], cap[b][a]); };
  // Every undirected Hamiltonian cycle, from rank 0, second vertex below the last.
  std::vector<std::vector<int>> cycles;
  std::vector<int> path{0};
  std::vector<bool> used(n, false);
  used[0] = true;
  std::function<void()> extend = [&] {
    if (static_cast<int>(path.size()) == n) {
      if (ucap(path.back(), 0) > 0 && path[1] < path.back()) cycles.push_back(path);
      return;
    }
    for (int v = 1; v < n; ++v)
      if (!used[v] && ucap(path.back(), v) > 0) {
        used[v] = true;
        path.push_back(v);
        extend();
        path.pop_back();
        used[v] = false;
      }
  };
  extend();
  // The largest multiset of cycles within the capacities (first found wins ties).
  std::vector<std::vector<int>> left(n, std::vector<int>(n, 0));
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) left[a][b] = a == b ? 0 : ucap(a, b);
  std::vector<int> pick, best;
  auto fits = [&](const std::vector<int>& c, int d) {
    for (int i = 0; i < n; ++i) left[c[i]][c[(i + 1) % n]] -= d, left[c[(i + 1) % n]][c[i]] -= d;
    bool ok = true;
    for (int i = 0; i < n; ++i) ok = ok && left[c[i]][c[(i + 1) % n]] >= 0;
    return ok;
  };
  std::function<void(size_t)> search = [&](size_t from) {
    if (pick.size() > best.size()) best = pick;
    for (size_t i = from; i < cycles.size(); ++i) {
      if (fits(cycles[i], 1)) {
        pick.push_back(static_cast<int>(i));
        search(i);
        pick.pop_back();
      }
      fits(cycles[i], -1);
    }
  };
  search(0);
  for (int i : best) {
    rings.push_back(cycles[i]);
    std::vector<int> rev{cycles[i][0]};
    for (int k = n - 1; k > 0; --k) rev.push_back(cycles[i][k]);
    rings.push_back(rev);
  }
  return rings;
}

std::vector<TreeShare> ring_shares(int n, const std::vector<std::vector<int>>& rings, bool allreduce, int root) {
  std::vector<TreeShare> out;
  for (const auto& o : rings) {
    if (static_cast<int>(o.size()) != n) throw UserError("a ring must hold every rank once");
    if (!allreduce) {
      // A chain from the root along the ring.
      const int at = static_cast<int>(std::find(o.begin(), o.end(), root) - o.begin());
      TreeShare s;
      s.root = root;
      s.gather_parent.assign(n, kNone);
      for (int k = 1; k < n; ++k) s.gather_parent[o[(at + k) % n]] = o[(at + k - 1) % n];
      out.push_back(std::move(s));
      continue;
    }
    for (int seg = 0; seg < n; ++seg) {
      // Reduced from order[seg+1] along the ring to order[seg], then passed on from it.
      TreeShare s;
      s.root = o[seg];
      s.reduce_parent.assign(n, kNone);
      s.gather_parent.assign(n, kNone);
      for (int k = 1; k < n; ++k) {
        s.reduce_parent[o[(seg + k) % n]] = o[(seg + k + 1) % n];
        s.gather_parent[o[(seg + k) % n]] = o[(seg + k - 1) % n];
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

CutBounds cut_bounds(const CapGraph& g, int root) {
  const int n = g.n;
  if (n < 2 || n > 16 || root < 0 || root >= n) throw UserError("cut bounds need 2 to 16 vertices and a root among them");
  CutBounds b;
  b.broadcast = b.allreduce = 1e300;
  double total = 0;
  for (const CapEdge& e : g.edges) total += e.cap;
  for (uint32_t set = 1; set + 1 < (1u << n); ++set) {
    double out = 0;
    for (const CapEdge& e : g.edges)
      if ((set >> e.from & 1) && !(set >> e.to & 1)) out += e.cap;
    b.allreduce = std::min(b.allreduce, out);
    if (set >> root & 1) b.broadcast = std::min(b.broadcast, out);
  }
  // Without in-network reduction an all-reduce sends 2(n-1) buffers in all.
  b.allreduce = std::min(b.allreduce, total / (2.0 * (n - 1)));
  return b;
}

}  // namespace incsim::collectives
