#pragma once
// The values each run option accepts, in one place: --help, --list-choices
// and the workloads' error messages all read these lists.
#include <string>
#include <vector>

namespace incsim::tb {

// "workload", "platform", "collective", "algorithm", "dtype", "redop",
// "traffic": the accepted values, comma-separated.
std::string choice_list(const std::string& option);
// --list-choices: one line per option, "option<TAB>a, b, c", then one per
// algorithm, "algorithm NAME<TAB>what it runs, where, on what, and its source";
// with a built-in platform, only the algorithms that run on it (UserError
// for a platform incsim does not have).
// network: a cluster's cluster.network if given (infiniband otherwise).
std::string choices(const std::string& platform = "", const std::string& network = "");

constexpr const char* kCollectives = "allreduce, reducescatter, allgather, broadcast, alltoall";
constexpr const char* kEthernetPlatforms = "rack, spineleaf, multigpu";

// The platforms an algorithm is written for: the GPU fabrics (dgx2, dgx1v,
// torus, YAML files, ...) or NetReduce's Ethernet platforms.
enum class Family { GpuFabric, Rack, MultiGpu };

// One algorithm, as incsim runs it: the table of every algorithm is the one
// list --help, --list-choices, check_choice and the workloads read. A name
// may stand in two families (ring: the GPUs' ring, the hosts' RoCE ring).
struct Algorithm {
  const char* name;
  const char* collectives;  // those it runs
  const char* default_for;  // the collectives whose default it is on its family's platforms
  Family family;
  const char* runs_on;      // the built-in platforms it runs on, comma-separated
  const char* engine;       // the hardware that executes it
  const char* description;  // one line, with its source
};
const std::vector<Algorithm>& algorithms();
// The algorithms of `family` that run `collective`, the default first,
// comma-separated; with a built-in platform, those that run on it.
std::string algorithms_for(const std::string& collective, Family family, const std::string& platform = "");
// The defaults, for --help: "ring; broadcast: multicast; rack, spineleaf: netreduce; ...".
std::string algorithm_defaults();

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
