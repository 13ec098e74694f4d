#pragma once
// Blink's trees and the NCCL-style rings it is compared with, for a machine:
// on a DGX-1 (one server or several joined by a network) the trees packed
// over NVLink (Blink §3.1-3.2), three-phase across servers (§3.4, A.2), the
// hybrid NVLink and PCIe broadcast (A.3), or NCCL's rings with its PCIe
// fallback; on a switch fabric Blink's one-hop trees (§3.4). Each comes with
// the links its messages take, its bound and the text --print-trees shows.
// Plain C++: tree_schedule() turns the shares into schedule tables.
#include <string>
#include <vector>

#include "collectives/blink_trees.h"
#include "collectives/tree_schedule.h"
#include "topology/topology.h"

namespace incsim::collectives {

struct TreeSynthesisOptions {
  bool rings = false;      // NCCL-style rings (a DGX-1 only), not Blink's trees
  bool allreduce = true;   // false: a broadcast from rank 0
  bool hybrid = false;     // Blink A.3: a PCIe chain beside the NVLink trees (broadcast on one DGX-1)
  BlinkOptions blink;
  std::string platform;    // names the machine in the text
  // A link's payload bandwidth is its rate less the header per packet.
  uint32_t max_payload_bytes = 0, header_bytes = 0;
};

struct TreeSynthesis {
  std::vector<TreeShare> shares;
  // DGX-1 only (empty elsewhere: every port reaching the peer): [rank][dst]
  // the ports rank's messages to dst take, the NVLinks to it or else PCIe;
  // with hybrid, [rank][tree][dst] the PCIe chain's (the last tree's) ports.
  std::vector<std::vector<std::vector<int>>> ports_to;
  std::vector<std::vector<std::vector<std::vector<int>>>> tree_ports;
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
