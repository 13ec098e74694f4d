#include "choices.h"

#include <sstream>

#include "elements/data_pattern.h"
#include "core/error.h"
#include "core/nearest.h"
#include "core/units.h"
#include "platforms/platform.h"
#include "traffic/patterns.h"
#include "training/compute.h"
#include "training/zoo.h"

namespace incsim::tb {

namespace {
std::string join(std::string list, const std::string& item) { return list.empty() ? item : list + ", " + item; }
}  // namespace

namespace {
using collectives::Algorithm;
using collectives::Collective;

// Whether a runs on a built-in platform; one that needs a cluster's
// scale-out network names it: "cluster (roce)" (network "": infiniband, the default).
bool runs_on(const Algorithm& a, const std::string& platform, const std::string& network) {
  return one_of(platform, a.info().runs_on) ||
         one_of(platform + " (" + (network.empty() ? "infiniband" : network) + ")", a.info().runs_on);
}
}  // namespace

std::string algorithms_for(const std::string& collective, Family family, const std::string& platform) {
  const bool any = platform.empty() || platforms::is_platform_file(platform);
  std::string first, rest;
  for (const Algorithm* a : collectives::algorithms()) {
    const Algorithm::Info& i = a->info();
    if (i.family != family || !one_of(collective, i.collectives) || !(any || runs_on(*a, platform, ""))) continue;
    if (first.empty() && one_of(collective, i.default_for)) first = i.name;
    else rest = join(rest, i.name);
  }
  return rest.empty() ? first : join(first, rest);
}

std::string readers_of(const std::string& key, const topo::Topology& t, const std::string& platform) {
  const bool tables = key.find("reduction_table.") != std::string::npos;
  if (!tables && key.rfind("gpu.copy_engine.", 0) != 0) return "";
  const bool any = platforms::is_platform_file(platform);
  std::string names;
  for (const Algorithm* a : collectives::algorithms()) {
    if (a->info().family != Family::GpuFabric || !(any || runs_on(*a, platform, ""))) continue;
    bool reads = false;
    for (const auto c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::Broadcast,
                         Collective::AllToAll, Collective::Reduce, Collective::Gather, Collective::Scatter}) {
      if (!a->runs(c)) continue;
      const collectives::Needs n = a->needs(t, c);
      reads = reads || (tables ? n.tables != collectives::TableRule::None : n.copy_engine);
    }
    if (reads) names = join(names, a->name());
  }
  if (names.empty()) return "no algorithm on " + platform + " reads it";
  return names + (tables ? " read it, which reduce in the switches' tables" : " read it, which run on the GPUs' copy engines");
}

std::string algorithm_defaults() {
  // The GPU fabrics' default for most collectives, then the others by collective, then by family.
  std::string out;
  for (const Algorithm* a : collectives::algorithms()) {
    const Algorithm::Info& i = a->info();
    if (!*i.default_for) continue;
    const std::string where = i.family != Family::GpuFabric ? i.runs_on : out.empty() ? "" : i.default_for;
    out += (out.empty() ? "" : "; ") + (where.empty() ? "" : where + ": ") + i.name;
  }
  return out;
}

std::string algorithm_help() {
  std::string out;
  for (const Algorithm* a : collectives::algorithms()) {
    std::string line = "  " + std::string(a->name());
    line.resize(17, ' ');
    out += wrap(line, a->info().description, 17);
  }
  return out;
}

std::string choice_list(const std::string& option) {
  if (option == "platform")
    return platforms::builtin_platforms() + ", " + kEthernetPlatforms + ", FILE.yaml";
  if (option == "collective") return kCollectives;
  if (option == "algorithm") return collectives::algorithm_names();
  if (option == "dtype") return elements::kDTypes;
  if (option == "redop") return elements::kRedOps;
  if (option == "traffic") return traffic::kPatternNames;
  if (option == "node") return platforms::cluster_node_platforms();  // or a platform file
  if (option == "workload") return "collective, traffic, netreduce, train";
  if (option == "model") return training::name_list(training::zoo_names());
  if (option == "compute") return training::name_list(training::compute_names());
  return "";
}

std::string choices(const std::string& platform, const std::string& network) {
  // A built-in platform's algorithms only; a YAML file's depend on its graph.
  const bool filter = !platform.empty() && !platforms::is_platform_file(platform);
  if (filter) check_choice("platform", platform, choice_list("platform"));
  const auto runs_here = [&](const Algorithm& a) { return !filter || runs_on(a, platform, network); };
  std::string out;
  for (const char* o : {"workload", "platform", "collective", "algorithm", "dtype", "redop", "traffic", "model", "compute"}) {
    std::string list = choice_list(o);
    if (std::string(o) == "algorithm" && filter) {
      list.clear();
      for (const Algorithm* a : collectives::algorithms())
        if (runs_here(*a) && !one_of(a->name(), list)) list = join(list, a->name());
    }
    out += std::string(o) + "\t" + list + "\n";
  }
  out += "dims\t2x2 to 64x64 (torus, mesh); AxB with B even, at most 8192 nodes, such as 4x8, 4x16 (bigraph: nodes per "
         "switch x switches)\n";
  out += "nodes\t16, 64 (fattree: k x k nodes, k from 2 to 64); 2 to 16384, at most 131072 GPUs (cluster)\n";
  out += "node\t" + choice_list("node") + ", FILE.yaml (cluster)\n";
  for (const Algorithm* a : collectives::algorithms())
    if (const Algorithm::Info& i = a->info(); runs_here(*a))
      out += std::string("algorithm ") + i.name + "\t" + i.collectives + (*i.default_for ? " (default for " : "") +
           i.default_for + (*i.default_for ? ")" : "") + "; on " + i.runs_on + "; run by " + i.engine + "; " +
           i.description + "\n";
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
  std::string platforms;
  for (const Algorithm* a : collectives::algorithms()) {
    if (a->name() != algorithm) continue;
    if (a->info().family == Family::GpuFabric) return "";
    platforms = a->info().runs_on;
  }
  if (platforms.empty()) return "";
  const bool several = platforms.find(',') != std::string::npos;
  return std::string("the Ethernet platform") + (several ? "s " : " ") +
         (several ? platforms.replace(platforms.rfind(", "), 2, " and ") : platforms);
}

}  // namespace incsim::tb
