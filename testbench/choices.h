#pragma once
// The values each run option accepts, in one place: --help, --list-choices
// and the workloads' error messages all read these lists.
#include <string>
#include <vector>

#include "collectives/algorithm.h"

namespace incsim::tb {

// "workload", "platform", "collective", "algorithm", "dtype", "redop",
// "traffic": the accepted values, comma-separated; "node": the built-in
// platforms a cluster's nodes may be (a platform file too).
std::string choice_list(const std::string& option);
// --list-choices: one line per option, "option<TAB>a, b, c", then one per
// algorithm, "algorithm NAME<TAB>what it runs, where, on what, and its source";
// with a built-in platform, only the algorithms that run on it (UserError
// for a platform incsim does not have).
// network: a cluster's cluster.network if given (infiniband otherwise).
std::string choices(const std::string& platform = "", const std::string& network = "");

constexpr const char* kCollectives = "allreduce, reducescatter, allgather, broadcast, alltoall, reduce, gather, scatter";
constexpr const char* kEthernetPlatforms = "rack, spineleaf, multigpu";

using collectives::Family;
// The algorithms of `family` that run `collective` (the registry's,
// collectives/algorithm.h), the default first, comma-separated; with a
// built-in platform, those that run on it.
std::string algorithms_for(const std::string& collective, Family family, const std::string& platform = "");
// The defaults, for --help: "ring; broadcast: multicast; rack, spineleaf: netreduce; ...".
std::string algorithm_defaults();
// --help's list of the algorithms, each name and its description wrapped at 100 columns.
std::string algorithm_help();

// Who reads a key of the GPUs' hardware that a run does not: for a
// reduction table's key "push, pull, nvls read it, which reduce in the
// switches' tables", for a copy engine's those that run on them (the
// registry's Needs: the algorithms that run on `platform`, graph t); "" for
// any other key.
std::string readers_of(const std::string& key, const topo::Topology& t, const std::string& platform);

// True if `item` is one of the comma-separated `list`.
bool one_of(const std::string& item, const std::string& list);
// Throws UserError unless `value` is one of `list`, `what` naming the
// option's values: "unknown algorithm 'rign'; did you mean 'ring'?", else
// the list.
void check_choice(const std::string& what, const std::string& value, const std::string& list);
// The Ethernet platforms that run `algorithm` ("the Ethernet platforms rack
// and spineleaf"), if only they do; empty for the GPU fabrics' algorithms.
std::string ethernet_platforms_of(const std::string& algorithm);

}  // namespace incsim::tb
