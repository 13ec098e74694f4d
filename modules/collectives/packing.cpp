// Solver choice: GLPK (Debian libglpk-dev), not COIN-OR CBC. The programs are
// small (tens of edge rows, at most a few thousand tree columns), GLPK's
// branch and bound is deterministic and single-threaded (DESIGN.md asks for
// bit-identical runs), it is one C library with one header and no pkg-config
// or C++ ABI to match, and it ships in Debian 12. CBC would also serve but
// brings the whole COIN-OR stack (Clp, Cgl, CoinUtils, Osi) for no gain here.
#include "packing.h"

#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include "core/error.h"

namespace incsim::collectives {

double Packing::rate() const {
  double r = 0;
  for (const Tree& t : trees) r += t.weight;
  return r;
}

std::vector<double> Packing::load(const CapGraph& g) const {
  std::vector<double> l(g.edges.size(), 0.0);
  for (const Tree& t : trees)
    for (int e : t.parent_edge)
      if (e >= 0) l[e] += t.weight;
  return l;
}

namespace {

struct WEdge {
  int u, v;
  double w;
  int id;  // index in the caller's edge list
};

// Chu-Liu/Edmonds by contraction. Returns, per vertex, the index into `es` of
// its chosen in-edge (-1 at the root), or an empty vector if some vertex has no
// in-edge at some level (not every vertex is reachable from the root).
std::vector<int> chu_liu(int n, int root, const std::vector<WEdge>& es) {
  std::vector<int> in(n, -1);
  for (int i = 0; i < static_cast<int>(es.size()); ++i) {
    const WEdge& e = es[i];
    if (e.v == root || e.u == e.v) continue;
    if (in[e.v] < 0 || e.w < es[in[e.v]].w) in[e.v] = i;  // strict: lower index wins ties
  }
  for (int v = 0; v < n; ++v)
    if (v != root && in[v] < 0) return {};
  // Cycles of the chosen in-edges, numbered 0..cycles-1.
  std::vector<int> comp(n, -1), seen(n, -1);
  int cycles = 0;
  for (int v = 0; v < n; ++v) {
    int x = v;
    while (x != root && seen[x] < 0 && comp[x] < 0) {
      seen[x] = v;
      x = es[in[x]].u;
    }
    if (x != root && seen[x] == v && comp[x] < 0) {
      int y = x;
      do {
        comp[y] = cycles;
        y = es[in[y]].u;
      } while (y != x);
      ++cycles;
    }
  }
  if (cycles == 0) return in;
  int nc = cycles;
  for (int v = 0; v < n; ++v)
    if (comp[v] < 0) comp[v] = nc++;
  std::vector<WEdge> ces;
  for (int i = 0; i < static_cast<int>(es.size()); ++i) {
    const WEdge& e = es[i];
    const int cu = comp[e.u], cv = comp[e.v];
    if (cu == cv) continue;
    const double w = comp[e.v] < cycles ? e.w - es[in[e.v]].w : e.w;
    ces.push_back({cu, cv, w, i});
  }
  std::vector<int> sub = chu_liu(nc, comp[root], ces);
  if (sub.empty()) return {};
  std::vector<int> out = in;  // cycle edges stay, except where the cycle is entered
  for (int c = 0; c < nc; ++c) {
    if (c == comp[root]) continue;
    const int orig = ces[sub[c]].id;
    out[es[orig].v] = orig;
  }
  return out;
}

std::string vname(const CapGraph& g, int v) {
  return v < static_cast<int>(g.labels.size()) ? g.labels[v] : std::to_string(v);
}

void check_graph(const CapGraph& g, int root) {
  if (g.n < 1) throw UserError("the graph to pack trees on has no vertices");
  if (root < 0 || root >= g.n) throw UserError("the tree root " + std::to_string(root) + " is not a vertex of the graph");
  for (const CapEdge& e : g.edges) {
    if (e.from < 0 || e.from >= g.n || e.to < 0 || e.to >= g.n)
      throw UserError("an edge of the graph to pack trees on names a vertex that does not exist");
    if (!(e.cap > 0) || !std::isfinite(e.cap))
      throw UserError("edge " + vname(g, e.from) + "->" + vname(g, e.to) + " has no positive finite capacity");
  }
}

}  // namespace

std::vector<int> min_arborescence(const CapGraph& g, int root, const std::vector<double>& length) {
  std::vector<WEdge> es;
  es.reserve(g.edges.size());
  for (int i = 0; i < static_cast<int>(g.edges.size()); ++i)
    es.push_back({g.edges[i].from, g.edges[i].to, length[i], i});
  std::vector<int> in = chu_liu(g.n, root, es);
  if (in.empty()) return {};
  for (int& e : in)
    if (e >= 0) e = es[e].id;
  return in;
}

Packing pack_mwu(const CapGraph& g, int root, double eps, MwuStats* stats) {
  if (!(eps > 0 && eps < 1)) throw UserError("epsilon must lie strictly between 0 and 1");
  check_graph(g, root);
  const int m = static_cast<int>(g.edges.size());
  Packing out;
  out.root = root;
  if (g.n == 1) return out;
  // Garg-Koenemann with e = eps/3: at the classical stop the scaled primal is
  // >= (1-e)^3 >= 1-eps of the optimum. Lengths y_e = exp(log_scale) * r_e,
  // started at delta / c_e; delta = (1+e) / ((1+e) m)^(1/e) is kept as a log,
  // and r is renormalised so it never overflows.
  const double e = eps / 3;
  const double log_delta = std::log1p(e) - std::log((1 + e) * std::max(m, 1)) / e;
  double log_scale = log_delta;
  std::vector<double> r(m);
  for (int i = 0; i < m; ++i) r[i] = 1.0 / g.edges[i].cap;
  std::vector<double> load(m, 0.0);
  std::map<std::vector<int>, size_t> index;
  std::vector<double> raw;  // raw flow per distinct tree
  double ub = std::numeric_limits<double>::infinity();
  double total = 0;
  int it = 0;
  for (;; ++it) {
    if (it > 10000000) throw std::logic_error("pack_mwu did not converge");
    std::vector<int> t = min_arborescence(g, root, r);
    if (t.empty()) {
      // Name a vertex the root cannot reach.
      std::vector<bool> reach(g.n, false);
      reach[root] = true;
      for (bool grew = true; grew;) {
        grew = false;
        for (const CapEdge& c : g.edges)
          if (reach[c.from] && !reach[c.to]) reach[c.to] = grew = true;
      }
      int v = static_cast<int>(std::find(reach.begin(), reach.end(), false) - reach.begin());
      throw UserError("vertex " + vname(g, v) + " cannot be reached from root " + vname(g, root) +
                      ", so no spanning tree exists");
    }
    double alpha = 0, d = 0, cmin = std::numeric_limits<double>::infinity();
    for (int x : t)
      if (x >= 0) {
        alpha += r[x];
        cmin = std::min(cmin, g.edges[x].cap);
      }
    for (int i = 0; i < m; ++i) d += g.edges[i].cap * r[i];
    ub = std::min(ub, d / alpha);  // y / alpha is dual feasible: OPT <= D(y) / alpha(y)
    auto [pos, fresh] = index.emplace(t, raw.size());
    if (fresh) raw.push_back(0);
    raw[pos->second] += cmin;
    total += cmin;
    double congestion = 0, rmax = 0;
    for (int x : t)
      if (x >= 0) {
        load[x] += cmin;
        r[x] *= 1 + e * cmin / g.edges[x].cap;
      }
    d = 0;
    for (int i = 0; i < m; ++i) {
      congestion = std::max(congestion, load[i] / g.edges[i].cap);
      d += g.edges[i].cap * r[i];
      rmax = std::max(rmax, r[i]);
    }
    const double rate = total / congestion;
    if (rate >= (1 - eps) * ub || std::log(d) + log_scale >= 0) {
      out.trees.resize(raw.size());
      for (const auto& [edges, k] : index) out.trees[k].parent_edge = edges;
      for (size_t k = 0; k < raw.size(); ++k) out.trees[k].weight = raw[k] / congestion;
      break;
    }
    if (rmax > 1e100) {
      for (double& x : r) x *= 1e-100;
      log_scale += 100 * std::log(10.0);
    }
  }
  if (stats) {
    stats->iterations = it + 1;
    stats->upper_bound = ub;
  }
  return out;
}

namespace {

// GLPK problem over the candidate trees: columns z_i (weight = z_i / den, or
// w_i itself when den == 0), one row per edge used by some tree.
struct Lp {
  glp_prob* p = glp_create_prob();
  ~Lp() { glp_delete_prob(p); }
};

// Branch and bound stops after `node_limit` subproblems: GLPK has no node
// limit of its own, and its time limit would make results depend on the
// machine's speed (DESIGN.md: the same input gives the same result).
struct NodeBudget {
  int left;
};

void count_nodes(glp_tree* t, void* info) {
  auto* b = static_cast<NodeBudget*>(info);
  if (glp_ios_reason(t) == GLP_ISELECT && --b->left < 0) glp_ios_terminate(t);
}

// Solves; returns false if GLPK found no solution (a continuous problem) or no
// integer solution within the node budget. Messages off, presolve on.
bool solve(glp_prob* p, bool integer, int node_limit = 0) {
  glp_smcp sm;
  glp_init_smcp(&sm);
  sm.msg_lev = GLP_MSG_OFF;
  if (!integer) {
    sm.presolve = GLP_ON;
    int rc = glp_simplex(p, &sm);
    return rc == 0 && glp_get_status(p) == GLP_OPT;
  }
  NodeBudget budget{node_limit};
  glp_iocp io;
  glp_init_iocp(&io);
  io.msg_lev = GLP_MSG_OFF;
  io.presolve = GLP_ON;
  io.fp_heur = GLP_ON;  // feasibility pump: an incumbent early
  io.cb_func = count_nodes;
  io.cb_info = &budget;
  int rc = glp_intopt(p, &io);
  return (rc == 0 || rc == GLP_ESTOP) && (glp_mip_status(p) == GLP_OPT || glp_mip_status(p) == GLP_FEAS);
}

// Adds capacity rows: sum over trees using edge e of z_i <= scale * c_e.
void add_capacity_rows(glp_prob* p, const CapGraph& g, const std::vector<Tree>& cand, double scale,
                       int first_col) {
  const int m = static_cast<int>(g.edges.size());
  std::vector<std::vector<int>> users(m);
  for (size_t i = 0; i < cand.size(); ++i)
    for (int x : cand[i].parent_edge)
      if (x >= 0) users[x].push_back(static_cast<int>(i));
  for (int x = 0; x < m; ++x) {
    if (users[x].empty()) continue;
    const int row = glp_add_rows(p, 1);
    glp_set_row_bnds(p, row, GLP_UP, 0.0, scale * g.edges[x].cap);
    std::vector<int> ind{0};
    std::vector<double> val{0};
    for (int i : users[x]) {
      ind.push_back(first_col + i);
      val.push_back(1.0);
    }
    glp_set_mat_row(p, row, static_cast<int>(ind.size()) - 1, ind.data(), val.data());
  }
}

}  // namespace

Packing minimize_trees(const CapGraph& g, const Packing& mwu, const MinimizeOptions& opt, MinimizeStats* stats) {
  if (!(opt.threshold >= 0 && opt.threshold < 1)) throw UserError("the tree-minimisation threshold must lie in [0, 1)");
  if (opt.max_denominator < 1) throw UserError("the largest weight denominator must be at least 1");
  const std::string bad = check_packing(g, mwu, 1e-6);
  if (!bad.empty()) throw UserError("the candidate packing is not valid: " + bad);
  const std::vector<Tree>& cand = mwu.trees;
  const int k = static_cast<int>(cand.size());
  const double target = mwu.rate();
  MinimizeStats st;
  st.candidates = k;
  st.target = target;
  Packing out;
  out.root = mwu.root;
  if (k == 0) {
    if (stats) *stats = st;
    return out;
  }
  std::vector<double> ub(k);
  for (int i = 0; i < k; ++i) ub[i] = std::max(1.0, std::ceil(cand[i].weight - 1e-9));
  std::vector<int> dens;
  for (int d = 1; d <= opt.max_denominator; d *= 2) dens.push_back(d);
  dens.push_back(0);  // continuous
  const double need = (1 - opt.threshold) * target - 1e-9;
  for (int den : dens) {
    const bool integer = den > 0;
    const double scale = integer ? den : 1.0;
    Lp lp;
    glp_set_obj_dir(lp.p, GLP_MAX);
    glp_add_cols(lp.p, k);
    for (int i = 0; i < k; ++i) {
      glp_set_col_kind(lp.p, i + 1, integer ? GLP_IV : GLP_CV);
      glp_set_col_bnds(lp.p, i + 1, GLP_DB, 0.0, scale * ub[i]);
      glp_set_obj_coef(lp.p, i + 1, 1.0);
    }
    add_capacity_rows(lp.p, g, cand, scale, 1);
    // The continuous relaxation first: if even it falls short, skip the step.
    if (!solve(lp.p, false)) throw std::logic_error("GLPK failed on the tree-packing LP");
    double best = glp_get_obj_val(lp.p) / scale;
    if (integer && best >= need) {
      if (solve(lp.p, true, opt.node_limit))
        best = glp_mip_obj_val(lp.p) / scale;
      else
        best = 0;  // no integer solution within the budget: relax further
    }
    st.tried.push_back(best);
    if (best < need && den != 0) continue;
    std::vector<double> z(k);
    for (int i = 0; i < k; ++i) z[i] = integer ? glp_mip_col_val(lp.p, i + 1) : glp_get_col_prim(lp.p, i + 1);
    // Second program: keep the rate, use as few trees as possible. Not needed
    // when every weight is 0 or 1 (then the count is the rate).
    const bool binary = den == 1 && std::all_of(ub.begin(), ub.end(), [](double u) { return u == 1.0; });
    if (!binary) {
      Lp mc;
      glp_set_obj_dir(mc.p, GLP_MIN);
      glp_add_cols(mc.p, 2 * k);  // z_1..z_k, then y_1..y_k binary
      for (int i = 0; i < k; ++i) {
        glp_set_col_kind(mc.p, i + 1, integer ? GLP_IV : GLP_CV);
        glp_set_col_bnds(mc.p, i + 1, GLP_DB, 0.0, scale * ub[i]);
        glp_set_col_kind(mc.p, k + i + 1, GLP_BV);
        glp_set_obj_coef(mc.p, k + i + 1, 1.0);
      }
      add_capacity_rows(mc.p, g, cand, scale, 1);
      // z_i - scale*u_i*y_i <= 0
      for (int i = 0; i < k; ++i) {
        const int row = glp_add_rows(mc.p, 1);
        glp_set_row_bnds(mc.p, row, GLP_UP, 0.0, 0.0);
        int ind[3] = {0, i + 1, k + i + 1};
        double val[3] = {0, 1.0, -scale * ub[i]};
        glp_set_mat_row(mc.p, row, 2, ind, val);
      }
      // sum z_i >= the rate just found (an integer when integer).
      const int row = glp_add_rows(mc.p, 1);
      const double keep = integer ? std::round(best * scale) : best * scale * (1 - 1e-9);
      glp_set_row_bnds(mc.p, row, GLP_LO, keep, 0.0);
      std::vector<int> ind{0};
      std::vector<double> val{0};
      for (int i = 0; i < k; ++i) {
        ind.push_back(i + 1);
        val.push_back(1.0);
      }
      glp_set_mat_row(mc.p, row, k, ind.data(), val.data());
      if (solve(mc.p, true, opt.node_limit))
        for (int i = 0; i < k; ++i) z[i] = glp_mip_col_val(mc.p, i + 1);
    }
    for (int i = 0; i < k; ++i) {
      const double w = (integer ? std::round(z[i]) : z[i]) / scale;
      if (w <= 1e-12) continue;
      out.trees.push_back({cand[i].parent_edge, w});
    }
    // A continuous solution is feasible only to GLPK's tolerance (about 1e-7):
    // scale it down so no edge exceeds its capacity at all.
    double over = 1;
    const std::vector<double> l = out.load(g);
    for (size_t x = 0; x < g.edges.size(); ++x) over = std::max(over, l[x] / g.edges[x].cap);
    for (Tree& t : out.trees) t.weight /= over;
    st.denominator = den;
    break;
  }
  if (stats) *stats = st;
  return out;
}

std::string check_packing(const CapGraph& g, const Packing& p, double tol) {
  if (p.root < 0 || p.root >= g.n) return "the root is not a vertex";
  for (size_t t = 0; t < p.trees.size(); ++t) {
    const Tree& tr = p.trees[t];
    const std::string which = "tree " + std::to_string(t);
    if (!(tr.weight > 0)) return which + " has no positive weight";
    if (static_cast<int>(tr.parent_edge.size()) != g.n) return which + " does not give a parent edge per vertex";
    for (int v = 0; v < g.n; ++v) {
      const int x = tr.parent_edge[v];
      if (v == p.root) {
        if (x != -1) return which + " has an edge into the root";
        continue;
      }
      if (x < 0 || x >= static_cast<int>(g.edges.size()) || g.edges[x].to != v)
        return which + " has no valid edge into vertex " + vname(g, v);
    }
    for (int v = 0; v < g.n; ++v) {
      // Walk up to the root: a cycle would never reach it.
      int u = v, steps = 0;
      while (u != p.root && steps++ <= g.n) u = g.edges[tr.parent_edge[u]].from;
      if (u != p.root) return which + " does not reach vertex " + vname(g, v) + " from the root";
    }
  }
  std::vector<double> l = p.load(g);
  for (size_t x = 0; x < g.edges.size(); ++x)
    if (l[x] > g.edges[x].cap * (1 + tol))
      return "edge " + vname(g, g.edges[x].from) + "->" + vname(g, g.edges[x].to) + " carries " +
             std::to_string(l[x]) + ", above its capacity " + std::to_string(g.edges[x].cap);
  return {};
}

std::string format_packing(const CapGraph& g, const Packing& p) {
  std::ostringstream os;
  for (size_t t = 0; t < p.trees.size(); ++t) {
    os << "tree " << t << " weight " << p.trees[t].weight << ":";
    for (int v = 0; v < g.n; ++v) {
      const int x = p.trees[t].parent_edge[v];
      if (x >= 0) os << " " << vname(g, g.edges[x].from) << "->" << vname(g, v);
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace incsim::collectives
