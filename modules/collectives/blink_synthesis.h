#pragma once
// Blink's trees and the NCCL-style rings it is compared with, for a machine:
// on a DGX-1 (one server or several joined by a network) the trees packed
// over NVLink (Blink §3.1-3.2), three-phase across servers (§3.4, A.2), the
// hybrid NVLink and PCIe broadcast (A.3), or NCCL's rings with its PCIe
// fallback; on a switch fabric Blink's one-hop trees (§3.4). Each comes with
// the links its messages take, its bound and the text --print-trees shows.
// Plain C++.
#include <string>
#include <vector>

#include "collectives/blink_trees.h"
#include "collectives/tree_shares.h"
#include "topology/topology.h"

namespace incsim::collectives {

struct TreeSynthesisOptions {
  bool rings = false;      // NCCL-style rings (a DGX-1 only), not Blink's trees
  bool allreduce = true;   // false: a broadcast from rank 0
  bool hybrid = false;     // Blink A.3: a PCIe chain beside the NVLink trees (broadcast on one DGX-1)
  BlinkOptions blink;
  int chunks = 1;          // each tree's share cut into this many chunks, pipelined (blink.chunks, §4.2.1)
  std::string platform;    // names the machine in the text
  // A link's payload bandwidth is its rate less the header per packet.
  uint32_t max_payload_bytes = 0, header_bytes = 0;
};

// A program and what its synthesis says beside it, for the run's header.
struct TreeSynthesis {
  // The trees (tree_shares_program) in dataflow issue on the NICs, tree t on
  // channel t; on a DGX-1 with link hints: a message takes the NVLinks to its
  // peer, or PCIe where the run uses PCIe or the pair has no NVLink, and the
  // hybrid's PCIe chain its PCIe port.
  Program program;
  double largest_share = 0;     // the largest tree's part of the buffer (Blink's MIAD sizes chunks by it)
  double algbw_bound_GBps = 0;  // 0: the endpoints' payload bound
  std::string bound_note;       // what algbw_bound_GBps is, for the header
  std::string text;             // --print-trees
};

// The broadcast root, and the root of Blink's all-reduce trees: the first
// allocated GPU (Blink §3.3 reduces to "a chosen root vertex").
constexpr int kTreeRoot = 0;

// Ranks 0..n-1 are the topology's endpoints in order (a DGX-1's topology holds
// only its allocated GPUs, n of them).
// UserError: Blink on GPUs not all joined by NVLinks (on a server), hybrid
// with an all-reduce.
TreeSynthesis synthesize_trees(const topo::Topology& t, int n, const TreeSynthesisOptions& o);

}  // namespace incsim::collectives
