#pragma once
// Where a job's GPUs are when it gives a count instead of a list (a jobs:
// list's `placement:`, docs/jobs.md): the way a cluster scheduler hands out
// GPUs, resolved in list order on the GPUs no earlier job holds. Plain C++.
#include <cstdint>
#include <string>
#include <vector>

#include "topology/topology.h"

namespace incsim::tb {

// contiguous, random, fragmented, spread. Inline: the options' parser
// checks the names without linking the placements (the fuzz targets).
inline const std::vector<std::string>& placements() {
  static const std::vector<std::string> names = {"contiguous", "random", "fragmented", "spread"};
  return names;
}
// "contiguous, random, fragmented, spread", for messages
inline std::string placement_names() {
  std::string s;
  for (const std::string& p : placements()) s += (s.empty() ? "" : ", ") + p;
  return s;
}

// The `count` GPUs (endpoint numbers) that `placement` takes among those
// with free[g], ascending (the job's ranks in GPU order); UserError saying
// why when they do not fit, calling them `unit`s (GPUs; a rack's hosts).
// `seed` draws a random placement.
//   contiguous: the lowest `count` free GPUs in a row (first fit).
//   random: `count` free GPUs drawn uniformly (Fisher-Yates on a
//     mt19937_64 seeded with `seed`).
//   fragmented: every other free GPU, then the skipped ones: the holes a
//     scheduler leaves as jobs come and go (Blink §1, Fig. 2: 3, 5, 6 or 7
//     GPUs of 8-GPU servers, an 8-GPU job as 3 on one server and 5 on another).
//   spread: one GPU of each group in turn, the lowest free one, groups in the
//     order of their lowest GPU; a group is the GPUs attached to the same
//     switches (a cluster's node, a DGX-2 baseboard, a fat tree's leaf), the
//     scale-out adapters aside.
std::vector<int> place(const topo::Topology& t, const std::vector<bool>& free, const std::string& placement, int count,
                       uint64_t seed, const std::string& unit = "GPU");

}  // namespace incsim::tb
