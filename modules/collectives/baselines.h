#pragma once
// Baseline all-reduce algorithms as programs of the NICs' schedule-table
// operations (table_program.h), so that they run on the same NIC as
// MultiTree, as the MultiTree paper does for fairness (§V-A). Plain C++, no
// SystemC; node i is endpoint i of the topology. With nops, a node holds for
// the step time in every step it sends nothing (MultiTree §IV-A's lockstep).
#include <vector>

#include "collectives/program.h"

namespace incsim::collectives {

// Ring (NCCL): n chunks; reduce-scatter in steps 1..n-1, all-gather in steps
// n..2(n-1). order[i] is the node at ring position i (empty: 0, 1, ..., n-1);
// flow i ends reduced at order[i]. It is ring_program's all-reduce on one
// channel (program_synthesis.h) as ring_table_program runs it on the NICs,
// its rank i run by node order[i + 1]: ring_program's position i completes
// block i + 1. Every node sends in every step: no NOPs.
Program nic_ring_program(int n, const std::vector<int>& order = {});

// The program a NIC table runs for a ring all-reduce program on one channel
// (ring_program's: a send, receive-reduce-sends, a receive-reduce-copy-send,
// receive-copy-sends and a receive per rank): in lockstep, a rank's k-th
// operation (from 1) receives the message of step k - 1 and sends in step k;
// a receive that reduces becomes an `rrc`, one that copies an `r`; each chunk
// is a flow on a channel of its own. Throws UserError naming what is not
// such a ring.
Program ring_table_program(const Program& ring);

// NCCL's binary trees (NCCL 2.4, src/graph/trees.cc), for rank r of n:
// tree 0: with b the lowest set bit of r, parent (r ^ b) | (b << 1), or r ^ b
// when that is out of range, children r - b/2 and r + b/2 (the latter halved
// toward r until in range); rank 0 is the root with the one child
// (highest power of two below n). Tree 1: mirrored (n - 1 - r) for even n,
// shifted by one for odd n. kNone where there is none.
struct TreeLinks {
  int parent = kNone, child0 = kNone, child1 = kNone;
};
TreeLinks nccl_tree0(int n, int rank);
TreeLinks nccl_tree1(int n, int rank);

// Double binary tree: the first half of the buffer is reduced to tree 0's
// root and broadcast back along tree 0, the second half along tree 1. Each
// half is cut into `pieces` flows that follow each other down the pipeline,
// as NCCL pipelines its trees: a node sends a piece's Reduce the step after
// its last child's arrived (leaves send piece c in step 1 + c), and forwards
// a piece's broadcast the step after it arrived. With interleave (dbtree),
// tree 0 uses odd and tree 1 even steps, so that a node never sends in both
// trees at once (MultiTree §III-B, Fig. 4b, which has one piece per tree);
// without, dbtree-flat.
Program dbtree_program(int n, int pieces = 1, bool nops = true, bool interleave = true);

// 2D ring on a kx x ky grid (node = y * kx + x; Ying et al. 2018) on all four
// links at once: the buffer in quarters (every fourth chunk), east, west,
// south and north, a step's messages to the four neighbours in turn; the
// east and west quarters reduce-scatter along the rows, each its own way
// round, while the south and north ones do so along the columns; then each
// quarter reduce-scatters the block it holds along the other dimension, and
// all-gathers back in the reverse order. Every node sends on its four links
// in every step; a link carries (kx*ky - 1) / (2 kx*ky) of the buffer on a
// square torus, as many bytes as a bandwidth-optimal all-reduce spreads over
// four links. 4 kx * ky chunks; 2(kx - 1) + 2(ky - 1) steps.
Program ring2d_program(int kx, int ky, bool nops = true);

// The hierarchical 2D ring: reduce-scatter along the rows, then along the
// columns, all-gather along the columns, then along the rows, each on one
// link of four (east, then south). kx * ky chunks; 2(kx - 1) + 2(ky - 1) steps.
Program ring2d_hier_program(int kx, int ky, bool nops = true);

// Recursive halving-doubling (Rabenseifner; Thakur et al. 2005) for any n:
// with p the largest power of two <= n and r = n - p, the even ranks below 2r
// first send all their data to the next odd rank (step 1) and get the result
// from it at the end; the p remaining ranks run recursive-halving
// reduce-scatter (partner distance p/2 first) and recursive-doubling
// all-gather (distance 1 first). p chunks; 2 log2 p steps, plus 2 when r > 0.
Program hd_program(int n, bool nops = true);

// HDRM: halving-doubling with rank mapping on BiGraph (EFLOPS, Dong et al.
// HPCA 2020), for per_switch x switches nodes numbered as topo::make_bigraph
// numbers them (switches 0 .. switches/2 - 1 upper). MultiTree §II-C: "each
// communication pair always involves one node connected with an upper switch
// and one node connected with a lower switch". The mapping itself is our
// construction (neither paper gives it): rank r sits in the upper group when
// its bit count is even, so every exchange (r, r ^ 2^j) crosses between the
// groups; with x the low p + b bits of r (p = log2 per_switch, b = log2 of
// switches/2), an upper node sits on switch x mod 2^b, a lower node on switch
// x >> p, so that in every step each upper-lower link carries at most one
// pair: every step is free of link contention. Needs per_switch <= switches/2,
// both powers of two.
Program hdrm_program(int per_switch, int switches, bool nops = true);

}  // namespace incsim::collectives
