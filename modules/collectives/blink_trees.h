#pragma once
// Blink's TreeGen on a DGX-1 (Blink, MLSys 2020, §2.3 and §3.1-3.2): the
// directed NVLink graph of an allocation, the MWU packing of broadcast trees
// from a root GPU, and the minimised set of trees. Plain C++.
#include <vector>

#include "collectives/packing.h"
#include "topology/dgx1.h"

namespace incsim::collectives {

// The capacitated directed GPU graph Blink packs trees on: vertex i is GPU
// gpus[i] (label "gpu<g>"); each NVLink-joined pair gives one edge each way
// with capacity = its number of NVLinks, so the unit is one NVLink (the
// paper's "rate 1.0"). A doubled pair is one edge of capacity 2 rather than
// two parallel edges: the trees are the same and fewer; the executor splits a
// tree edge of weight above 1 over the pair's links. PCIe is not in this
// graph (Blink packs PCIe trees apart, appendix A.3). Edges are ordered by
// (from, to) vertex index. UserError for a bad allocation.
CapGraph dgx1_nvlink_graph(topo::Dgx1Gen gen, const std::vector<int>& gpus);

struct BlinkOptions {
  double eps = 0.05;         // MWU approximation (Blink §3.2 gives no value)
  MinimizeOptions minimize;  // threshold 5% (Blink §3.2)
};

struct BlinkTrees {
  std::vector<int> gpus;  // vertex i of graph is GPU gpus[i]
  CapGraph graph;
  double link_GBps = 0;   // one capacity unit (one NVLink), each direction
  Packing mwu;            // the MWU packing (the candidates)
  MwuStats mwu_stats;
  Packing trees;          // the minimised packing
  MinimizeStats min_stats;
  double rate_GBps() const { return trees.rate() * link_GBps; }
};

// Broadcast trees from physical GPU root_gpu over the allocation's NVLinks.
// UserError: bad allocation, root not allocated, NVLinks not joining all the
// allocated GPUs, eps outside (0,1).
BlinkTrees blink_dgx1_trees(topo::Dgx1Gen gen, const std::vector<int>& gpus, int root_gpu,
                            const BlinkOptions& opt = {});

}  // namespace incsim::collectives
