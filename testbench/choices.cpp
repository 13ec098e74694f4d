#include "choices.h"

#include "collectives/data_pattern.h"
#include "core/error.h"
#include "core/nearest.h"
#include "platforms/platform.h"
#include "traffic/patterns.h"

namespace incsim::tb {

std::string choice_list(const std::string& option) {
  if (option == "platform")
    return platforms::builtin_platforms() + ", " + kEthernetPlatforms + ", FILE.yaml";
  if (option == "collective") return kCollectives;
  if (option == "algorithm")
    return std::string(kFabricAlgorithms) + ", netreduce, " + kMultiGpuAlgorithms;
  if (option == "dtype") return collectives::kDTypes;
  if (option == "redop") return collectives::kRedOps;
  if (option == "traffic") return traffic::kPatternNames;
  return "";
}

std::string choices() {
  std::string out;
  for (const char* o : {"platform", "collective", "algorithm", "dtype", "redop", "traffic"})
    out += std::string(o) + "\t" + choice_list(o) + "\n";
  out += "dims\t2x2 to 16x16 (torus, mesh); AxB with B even, at most 8192 nodes, such as 4x8, 4x16 (bigraph: nodes per "
         "switch x switches)\n";
  out += "nodes\t16, 64 (fattree: k x k nodes, k from 2 to 16)\n";
  return out;
}

bool one_of(const std::string& item, const std::string& list) {
  return (", " + list + ",").find(", " + item + ",") != std::string::npos;
}

void check_choice(const std::string& what, const std::string& value, const std::string& list) {
  if (one_of(value, list)) return;
  const std::string near = nearest_in_list(value, list);
  throw UserError("unknown " + what + " '" + value + "'; " +
                  (near.empty() ? "choose one of " + list : "did you mean '" + near + "'?"));
}

std::string ethernet_platforms_of(const std::string& algorithm) {
  if (one_of(algorithm, kFabricAlgorithms)) return "";
  if (one_of(algorithm, kRackAlgorithms)) return "the Ethernet platforms rack and spineleaf";
  if (one_of(algorithm, kMultiGpuAlgorithms)) return "the Ethernet platform multigpu";
  return "";
}

}  // namespace incsim::tb
