#pragma once
// The values each run option accepts, in one place: --help, --list-choices
// and the workloads' error messages all read these lists.
#include <string>

namespace incsim::tb {

// "platform", "collective", "algorithm", "dtype", "redop", "traffic": the
// accepted values, comma-separated.
std::string choice_list(const std::string& option);
// --list-choices: one line per option, "option<TAB>a, b, c".
std::string choices();

// The algorithms of each workload, the first the default.
constexpr const char* kCollectives = "allreduce, reducescatter, allgather, broadcast";
constexpr const char* kFabricAlgorithms =
    "ring, push, pull, multicast, dbtree, hd, ring2d, hdrm, multitree, multitree-msg, blink";
constexpr const char* kRackAlgorithms = "netreduce, ring";                  // rack, spineleaf
constexpr const char* kMultiGpuAlgorithms = "pnetreduce, flatring, tencent";  // multigpu
constexpr const char* kEthernetPlatforms = "rack, spineleaf, multigpu";

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
