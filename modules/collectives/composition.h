#pragma once
// Programs composed of programs (docs/programs.md): a hierarchical algorithm
// is its parts' programs, each placed on a subset of the ranks, on its own
// channels and queues, over a coarser division of the buffer, with
// dependencies between the parts. NetReduce's Parallel NetReduce and
// Tencent's all-reduce (§3.4, Fig. 6) are written this way; so are NCCL's
// algorithms across nodes. Plain C++, no SystemC.
#include <optional>
#include <vector>

#include "collectives/program.h"

namespace incsim::collectives {

struct Placement {
  const Program* part = nullptr;
  std::vector<int> ranks;       // part rank k runs on rank ranks[k] of the whole
  uint16_t channel = 0;         // the part's channel c becomes channel + c
  uint16_t queue = 0;           // its queue q becomes queue + q
  uint32_t scale = 1;           // its chunk c is the whole's chunks [offset + c * scale, offset + (c + 1) * scale)
  uint32_t offset = 0;
  std::optional<Buffer> buffer; // every chunk the part touches in this buffer of the whole, if set
                                // (a part that runs in place on the whole's output)
  std::optional<Engine> engine; // the engine that runs it, if not the part's own
  int group_base = 0;           // where add_groups put the part's groups
};

// Adds the placement's groups, mapped, to the whole; once per placement,
// before its operations.
void add_groups(ProgramBuilder& b, Placement& pl);
// The part's operation as the whole runs it: peers, channel, queue, chunks,
// group and engine mapped (dependencies are the caller's).
Operation place(const Placement& pl, const Operation& o);
// Appends the operations of the part's rank that runs on whole rank `rank`
// (the builder's current rank; nothing if the part has no rank there), its
// dependencies mapped, the first operation of each of its queues also
// depending on `after`. Returns the new operations' indices, in part order.
std::vector<uint32_t> append_part(ProgramBuilder& b, const Placement& pl, int rank, const std::vector<uint32_t>& after);

// The program with its rank k run by rank node_of[k] (a rank mapping), its
// peers, groups, link hints and a broadcast's root renamed alike: the whole
// program placed on a permutation of its ranks.
Program relabel(const Program& p, const std::vector<int>& node_of);

// NCCL's PXN ("PCI x NVLink", NCCL 2.12+, on unless NCCL_PXN_DISABLE=1;
// src/graph/paths.cc, src/transport/net.cc) on a rail-optimised cluster,
// where rank r is on node node[r] and rail rail[r]: a transfer from rank a
// to a rank b on another node and another rail goes over the node's NVLink
// to the intermediate, the rank on a's node and b's rail, whose adapter
// sends it to b on b's rail, so it never crosses the spines. A cores
// program's send and the receive it pairs with (the k-th from a to b on a
// channel) become a send to the intermediate, its receive-copy-send into a
// scratch chunk of its own, and b's receive from it, on a relay channel of
// their own (a connection per original sender and receiver, as NCCL's PXN
// connection is a's to b with its buffer in the intermediate's memory).
// Only a pair whose send does not also receive and whose receive does not
// also send is relayed (its operations then change only their peer and
// channel): NCCL's all-to-all entirely, a ring's hops (which receive and
// send in one operation) not. A program with nothing to relay, or with no
// rank on the way, comes back unchanged.
Program pxn_program(const Program& p, const std::vector<int>& node, const std::vector<int>& rail);

}  // namespace incsim::collectives
