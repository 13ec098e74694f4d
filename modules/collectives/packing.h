#pragma once
// Packing rooted spanning trees (arborescences) into a directed graph with
// edge capacities, as Blink's TreeGen does (Blink, MLSys 2020, §3.1-3.2):
//  - pack_mwu(): fractional packing by multiplicative weight update, a
//    (1-eps)-approximation of the best broadcast rate;
//  - minimize_trees(): Blink's integer program over the MWU's candidate trees,
//    relaxed step by step until the rate is within a threshold of the MWU's.
// Plain C++; the integer programs are solved by GLPK (packing.cpp says why).
#include <string>
#include <vector>

namespace incsim::collectives {

struct CapEdge {
  int from, to;
  double cap;  // > 0, in any unit (Blink: one NVLink = 1)
};

// A directed graph on vertices 0..n-1; parallel edges are allowed.
struct CapGraph {
  int n = 0;
  std::vector<CapEdge> edges;
  std::vector<std::string> labels;  // optional vertex names, for printing
};

// An arborescence rooted at `root`: parent_edge[v] is the index of the edge
// entering v (-1 at the root). It spans every vertex.
struct Tree {
  std::vector<int> parent_edge;
  double weight = 0;  // rate carried, in the graph's capacity unit
};

struct Packing {
  int root = -1;
  std::vector<Tree> trees;
  double rate() const;  // sum of the tree weights
  // Sum of tree weights per edge (size = number of edges).
  std::vector<double> load(const CapGraph& g) const;
};

// Minimum-length arborescence rooted at `root` (Chu-Liu/Edmonds), lengths per
// edge; ties go to the lower edge index, so the result is deterministic.
// Returns parent_edge, or an empty vector if some vertex is unreachable.
std::vector<int> min_arborescence(const CapGraph& g, int root, const std::vector<double>& length);

struct MwuStats {
  int iterations = 0;
  double upper_bound = 0;  // best dual bound on the optimal rate seen
};

// Fractional arborescence packing by multiplicative weight update (Garg and
// Koenemann's scheme for packing LPs, which is what Chekuri and Quanrud's
// near-linear algorithm, Blink's reference, refines). Each iteration takes a
// minimum-length arborescence under the current edge lengths, sends its
// bottleneck capacity on it and multiplies the lengths of its edges. It stops
// when the rate is certified within (1-eps) of the dual bound, or at the
// classical stopping point (with eps/3 inside, so the result is >= (1-eps) of
// the optimum either way). Weights are scaled so no edge exceeds its capacity;
// identical trees are merged. Deterministic. UserError if eps is outside (0,1),
// the root is out of range, a capacity is not positive, or some vertex cannot
// be reached from the root.
Packing pack_mwu(const CapGraph& g, int root, double eps, MwuStats* stats = nullptr);

struct MinimizeOptions {
  double threshold = 0.05;  // accept a rate within this fraction of the target (§3.2: 5%)
  int max_denominator = 16;  // last integer relaxation: weights in steps of 1/16
  // Branch-and-bound subproblems per integer program; past it the best
  // solution found so far is taken (a count, not a time, for determinism).
  int node_limit = 200;
};

struct MinimizeStats {
  int candidates = 0;       // distinct candidate trees given to the program
  int denominator = 0;      // weights in steps of 1/denominator; 0 = continuous (LP)
  double target = 0;        // the MWU rate the result is compared with
  std::vector<double> tried;  // best rate found at each relaxation step
};

// Blink §3.2, "Minimizing Number of Trees". Over the candidate trees of
// `mwu` (weight w_i, bound u_i = max(1, ceil(w_i))), first the paper's integer
// program: maximise sum w_i with w_i in {0, 1} (in {0..u_i} in general) under the
// edge capacities; if that rate is below (1-threshold) of the MWU rate, relax
// the integrality step by step (w_i in multiples of 1/2, 1/4, ... 1/max_denominator,
// then continuous), stopping at the first step within the threshold. At that
// step a second program keeps the rate and minimises the number of trees used.
// Both programs stop after opt.node_limit branch-and-bound subproblems with the
// best solution found (the first then may fall short and relax further; the
// second then keeps more trees than the fewest possible).
// The continuous step always succeeds: the MWU weights are feasible in it.
Packing minimize_trees(const CapGraph& g, const Packing& mwu, const MinimizeOptions& opt = {},
                       MinimizeStats* stats = nullptr);

// Checks a packing: each tree spans all vertices from the root along edges of
// g, weights are positive, and no edge carries more than its capacity (times
// 1 + tol). Returns an empty string, or what is wrong.
std::string check_packing(const CapGraph& g, const Packing& p, double tol = 1e-9);

// One line per tree: weight, then its edges as from->to (labels if given).
std::string format_packing(const CapGraph& g, const Packing& p);

}  // namespace incsim::collectives
