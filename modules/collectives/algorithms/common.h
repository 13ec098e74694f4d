#pragma once
// What several algorithm families share: the NICs' lockstep, a schedule
// table's checked program, the trees the NICs run in dataflow mode (Blink's
// and a DGX-1's rings), and what the GPU fabrics' families refuse alike.
#include <string>

#include "collectives/algorithm.h"
#include "collectives/nccl.h"
#include "core/param.h"

namespace incsim::collectives::builtin {

inline const Param<bool> kNicLockstep{
    "nic.lockstep", true, Range::none(),
    "NOP entries hold a node that sends nothing in a step for the estimated step time (MultiTree §IV-A)"};

// An all-reduce program for the NICs' schedule tables (MultiTree §III, or a
// baseline), checked: UserError, naming the algorithm, if it is not an
// all-reduce of its nodes.
Synthesis table_program(const std::string& algorithm, Program p);

// Trees on the NICs in dataflow mode (Blink §4.1): Blink's (rings false) or,
// on a DGX-1, NCCL-style rings; chunks > 0 overrides the configured chunks.
Synthesis tree_program(const Site& s, bool rings, int chunks = 0);

// ring.channels, or the platform family's.
int nccl_channels(const Site& s);

// The one sentence for a job running a, which builds its `what` (trees, a
// schedule) over GPUs 0 to n-1 of the platform, on other GPUs; or "".
std::string gpu_numbered_refusal(const Site& s, const Algorithm& a, const std::string& what);

// The one sentence for an algorithm that reduces or multicasts in the
// switches, on a machine whose switches cannot (a DGX-1, a network whose
// routes turn, a switch without tables); or "".
std::string switch_tables_refusal(const Site& s, const std::string& algorithm);

// The one sentence for an algorithm that does not run on a DGX-1 ("on dgx1v
// the algorithms are blink and ring"), or "".
std::string dgx1_refusal(const Site& s, const std::string& algorithm);
// The one sentence for an algorithm that runs on one node's GPUs only, asked
// to run across a cluster's nodes, or "".
std::string cluster_refusal(const Site& s, const std::string& algorithm, bool in_switches);

}  // namespace incsim::collectives::builtin
