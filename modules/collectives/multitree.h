#pragma once
// MULTITREE all-reduce schedule synthesis (Huang et al., ISCA 2021, §III,
// Algorithm 1), for direct networks and with the indirect-network extension
// of §III-C3. Plain C++, no SystemC; deterministic.
//
// Reading of the paper, where it leaves room:
//  - The input is the topology graph; node i is endpoint i. On a direct network
//    (every switch has exactly one endpoint, every endpoint one link: a router
//    per node) tree edges join one-hop neighbours, and a router's neighbours
//    are tried in its port order, which the mesh/torus builders make -Y, +Y,
//    -X, +X ("Y dimension then X dimension", §III-C).
//  - Indirect networks (§III-C3): from a parent p, a breadth-first search over
//    the links still free in this step: p's link to its switch sw0, then
//    sw0's endpoints (in port order), then the neighbour switches of sw0 and
//    their endpoints, and further only through switches that have no
//    endpoints of their own (a fat tree's spines); the first endpoint not yet
//    in the tree becomes the child and every link of the path is taken for
//    the step. On a direct network this is the one-hop rule; on a fat tree,
//    leaf-spine-leaf; on BiGraph, a node on the other group's switches (two
//    nodes of one group meet through a node of the other group). With this
//    rule the fat tree and BiGraph take n - 1 all-gather steps, the same as
//    ring, as §VI-A says; letting paths transit switches with endpoints
//    (BiGraph upper-lower-upper) gives 43 steps instead of 31 on BiGraph 4x8.
//  - A link is used at most once per step per direction, or as many times as
//    its bandwidth is a multiple of the slowest switch-to-switch link's: a
//    direct network's endpoint link carries the router's whole bandwidth
//    (§V-A), an indirect network's NIC link one child per step (footnote 3:
//    "the size of the Children field is ... the bandwidth ratio between the
//    network interface and a network link").
//  - Trees take turns by root id, one node per turn; a parent is any node
//    added in an earlier step, tried in the order nodes were added; a step
//    ends when no tree can add a node (lines 4-14).
//  - Reduce-scatter reverses the all-gather edges: (p->c, t0) becomes
//    (c->p, T - t0 + 1), and all-gather runs at T + t0 (lines 15-18).
#include <string>
#include <vector>

#include "collectives/program.h"
#include "collectives/schedule.h"
#include "topology/topology.h"

namespace incsim::collectives {

struct MultiTreeOptions {
  // Most switch-to-switch hops a tree edge may take, through any switch:
  // 0 = automatic (through switches without endpoints only, see above).
  int max_switch_hops = 0;
  bool nops = true;  // NOP entries in every step a node sends nothing (§IV-A)
};

// One edge of an all-gather tree as Algorithm 1 allocates it.
struct TreeEdge {
  int tree;    // = root node
  int parent, child;
  int step;    // all-gather time step before the adjustment of line 18 (1-based)
  int seq;     // global allocation sequence, 0-based (the "(i)" labels of Fig. 3)
};

struct MultiTreeTrees {
  int nodes = 0;
  int steps = 0;  // all-gather steps (tot_t of Algorithm 1)
  bool direct = false;
  std::vector<TreeEdge> edges;  // in allocation order
};

// Lines 1-14: the all-gather trees.
MultiTreeTrees multitree_trees(const topo::Topology& t, const MultiTreeOptions& opt = {});
// Lines 15-18 on top: the all-reduce (flow i = tree i = chunk i) as a program
// of the NICs' table operations (table_program.h), named multitree on a
// direct network and multitree-indirect elsewhere; opt.nops holds a node in
// every step it sends nothing (§IV-A).
Program multitree_program(const topo::Topology& t, const MultiTreeOptions& opt = {});
Program multitree_program(const MultiTreeTrees& trees, bool nops = true);

// True when every switch has exactly one endpoint and every endpoint one link.
bool is_direct_network(const topo::Topology& t);

// What each directed link carries in one step (see above): its bandwidth
// over the slowest switch-to-switch link's (the slowest link's where no two
// switches meet), at least 1. [2 * link + direction], direction 0 leaving
// the link's end a.
std::vector<int> step_capacities(const topo::Topology& t);

// How full a table's steps keep the links: in every step, the messages on
// each directed link over its step capacity, each message following the
// topology's routes (endpoint i = node i), the flows of one op between one
// pair in one step crossing as one message. MultiTree's trees promise at most
// 1 in every step (§III: a link is allocated once per step); a ring on a
// torus keeps its links below that, a double binary tree on a mesh does not.
struct LinkLoad {
  std::vector<double> per_step;   // [step - 1]: the most loaded link's load
  double max = 0;
  std::vector<std::string> over;  // each link above its capacity in a step, one sentence each
};
LinkLoad link_load(const Schedule& s, const topo::Topology& t);

}  // namespace incsim::collectives
