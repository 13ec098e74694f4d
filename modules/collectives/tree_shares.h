#pragma once
// Tree collectives as programs of the NICs' table operations
// (table_program.h), for Blink (MLSys 2020) and the NCCL-style rings it is
// compared with: every flow is one chunk of one tree, reduced toward the
// tree's root and broadcast back (§3.3), or only broadcast from a root
// (§4.1). Chunks of a tree follow each other, so a node forwards a chunk as
// soon as it has it (§4.2.1) when the NIC issues in dataflow mode. Plain C++.
#include <string>
#include <vector>

#include "collectives/packing.h"
#include "collectives/program.h"

namespace incsim::collectives {

// One tree over ranks 0..n-1, carrying `units` slices of every chunk round.
struct TreeShare {
  int root = kNone;
  std::vector<int> reduce_parent;  // [rank]: where its partial sum goes (kNone at the root); empty for a broadcast
  std::vector<int> gather_parent;  // [rank]: where its result comes from (kNone at the root)
  int units = 1;                   // the tree's share of the buffer, relative to the others
};

// flows = trees x chunks: flow t * chunks + c is chunk c of tree t, on
// channel t; tree t covers a contiguous part of the buffer in proportion to
// its units. Steps follow the tree depth plus the chunk index (chunk c goes
// one step behind chunk c - 1), so a lockstep NIC could run the tables as
// well. broadcast_root = kNone: an all-reduce. No NOPs.
Program tree_shares_program(const std::string& name, int n, const std::vector<TreeShare>& trees, int chunks,
                            int broadcast_root);

// Blink's trees from a packing (vertex i = rank i): a tree of weight w gets
// max(1, round(16 w)) units (the minimised weights are multiples of 1/16 or
// continuous, packing.h), all-reduce reduces along the reversed tree edges
// (§3.3).
std::vector<TreeShare> blink_shares(const CapGraph& g, const Packing& p, bool allreduce);

// Blink on a switch fabric (§3.4): m one-hop trees, tree i rooted at rank i
// with every other rank a child, each 1/m of the data.
std::vector<TreeShare> one_hop_shares(int n);

// NCCL-style rings over a link graph with capacities (in links, each
// direction): as many rings as fit, each a Hamiltonian cycle of the graph
// used in one direction, each direction of an edge in at most cap rings. For
// n >= 3 the undirected cycles are packed (exhaustively, n <= 8 is cheap) and
// each gives two rings, one per direction; for n = 2 one ring per link.
// Returns the rings as rank orders; empty when no Hamiltonian cycle exists
// (NCCL then falls back to PCIe). Deterministic. n <= 10.
std::vector<std::vector<int>> pack_rings(const CapGraph& g);

// Rings as trees: all-reduce cuts each ring's part into n segments, segment s
// reduced along the ring to order[s] and passed on around the ring from it
// (NCCL's reduce-scatter then all-gather); broadcast sends each ring's part
// along the ring from the root (a chain). Every ring carries the same share.
std::vector<TreeShare> ring_shares(int n, const std::vector<std::vector<int>>& rings, bool allreduce, int root);

// Cut bounds on a link graph (capacities per direction, vertex = rank), in
// links: a broadcast from root moves the whole buffer across every cut that
// separates the root from a vertex (Edmonds: the best packing's rate); an
// all-reduce moves it across every cut both ways and, without in-network
// reduction, 2(n-1) times over links in all (Patarasuk and Yuan 2009: 2(n-1)/n
// per process).
// Exhaustive over vertex subsets (n <= 16).
struct CutBounds {
  double broadcast = 0;  // min over cuts S containing root of cap(S -> rest)
  double allreduce = 0;  // min(min over cuts of cap(S -> rest), all capacity / 2(n-1))
};
CutBounds cut_bounds(const CapGraph& g, int root);

}  // namespace incsim::collectives
