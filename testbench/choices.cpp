#include "choices.h"

#include "collectives/data_pattern.h"
#include "core/error.h"
#include "core/nearest.h"
#include "platforms/platform.h"
#include "traffic/patterns.h"
#include "training/compute.h"
#include "training/zoo.h"

namespace incsim::tb {

const std::vector<Algorithm>& algorithms() {
  // Where the switches' tables work (Klenk §IV-E2: multicast paths follow
  // unicast routes backwards: switch fabrics whose routes go up then down),
  // where a DGX-1 is left out (blink and ring only), and the engine of the
  // schedules. YAML files run their family's algorithms where their graph allows.
  constexpr const char* kUpDown = "dgx2, fattree2l, star, fattree, hgx-h100, nvl72";
  constexpr const char* kNotDgx1 = "dgx2, fattree2l, star, torus, mesh, fattree, bigraph, hgx-h100, nvl72";
  constexpr const char* kEveryFabric = "dgx2, dgx1v, dgx1p, fattree2l, star, torus, mesh, fattree, bigraph, hgx-h100, nvl72";
  constexpr const char* kNicTables = "the NICs' schedule tables";
  static const std::vector<Algorithm> table = {
      {"ring", "allreduce, reducescatter, allgather, broadcast", "allreduce, reducescatter, allgather", Family::GpuFabric,
       "dgx2, dgx1v, dgx1p, fattree2l, star, torus, mesh, fattree, bigraph, hgx-h100, nvl72, cluster",
       "the GPUs' cores, or the NICs' schedule tables (ring.engine=nic but for a broadcast, and on dgx1v, dgx1p)",
       "reduce-scatter then all-gather around a ring, NCCL's channels (Klenk §III; on DGX-1 NCCL's NVLink rings, "
       "Blink §5)"},
      {"push", "allreduce", "", Family::GpuFabric, kUpDown,
       "the GPUs' copy engines and the switches' reduction and multicast tables",
       "each GPU writes its data into the switches, which reduce it and multicast the sum back (Klenk §IV-C)"},
      {"pull", "allreduce", "", Family::GpuFabric, kUpDown,
       "the GPUs' copy engines and the switches' reduction and multicast tables",
       "each GPU reads the sum, which the switches gather and reduce on the way (Klenk §IV-B)"},
      {"multicast", "allgather, broadcast", "broadcast", Family::GpuFabric,
       kUpDown,
       "the GPUs' copy engines and the switches' multicast tables",
       "one write reaches every GPU through the switches' multicast (Klenk §IV-A)"},
      {"nvls", "allreduce, reducescatter, allgather", "", Family::GpuFabric, kUpDown,
       "the GPUs' copy engines and the switches' reduction and multicast tables",
       "NVLink SHARP as NCCL 2.17+ runs it (NVIDIA H100 whitepaper, NVSwitch3): each GPU reduces its 1/n in the "
       "switches with a multimem load (Klenk's pull) and, for all-reduce, multicasts it with a multimem store"},
      {"dbtree", "allreduce", "", Family::GpuFabric, kNotDgx1, kNicTables,
       "NCCL's double binary tree, pipelined (Sanders et al. 2009; a MultiTree §V-A baseline)"},
      {"hd", "allreduce", "", Family::GpuFabric, kNotDgx1, kNicTables,
       "recursive halving-doubling (Rabenseifner; a MultiTree §V-A baseline)"},
      {"ring2d", "allreduce", "", Family::GpuFabric, "torus, mesh", kNicTables,
       "rings along the rows, then the columns (Ying et al. 2018; a MultiTree §V-A baseline)"},
      {"hdrm", "allreduce", "", Family::GpuFabric, "bigraph", kNicTables,
       "halving-doubling with a contention-free rank mapping (EFLOPS; MultiTree §II-C, docs/multitree.md)"},
      {"multitree", "allreduce", "", Family::GpuFabric, kNotDgx1, "the NICs' schedule tables, in lockstep",
       "topology-aware trees built step by step, over all of the platform's GPUs (MultiTree §III, §IV)"},
      {"multitree-msg", "allreduce", "", Family::GpuFabric, kNotDgx1,
       "the NICs' schedule tables, one head flit per message",
       "MultiTree's trees with message-based flow control, over all of the platform's GPUs (MultiTree §IV-B)"},
      {"blink", "allreduce, broadcast", "", Family::GpuFabric, kEveryFabric, "the NICs' schedule tables, dataflow",
       "spanning trees packed over NVLink (DGX-1, also several servers), or one-hop trees through a switch (Blink, "
       "MLSys 2020, §3)"},
      {"hring", "allreduce", "", Family::GpuFabric, "cluster", "the GPUs' cores",
       "hierarchical: each node's rings reduce-scatter, a ring per rail across the nodes all-reduces each GPU's "
       "block, the node's rings all-gather (NCCL's NVLSTree with rings in place of NVLS)"},
      {"tree", "allreduce", "", Family::GpuFabric, "cluster", "the GPUs' cores",
       "NCCL's trees across nodes: a chain through each node's GPUs, NCCL's double binary tree over the nodes "
       "(NCCL 2.4+, src/graph/trees.cc, connect.cc)"},
      {"collnet", "allreduce", "", Family::GpuFabric, "cluster (infiniband)", "the GPUs' cores and the InfiniBand leaves' SHARP aggregation buffers",
       "NCCL's CollNet: each node's rings reduce-scatter, every GPU's block is added by its rail's leaf (SHARP), the "
       "node's rings all-gather (NCCL's CollNetDirect with rings inside the node)"},
      {"sharp", "allreduce", "", Family::GpuFabric, "one GPU per node on a rail of a cluster (infiniband)",
       "the GPUs' cores and the InfiniBand leaves' SHARP aggregation buffers",
       "SHARP alone, for one GPU per node on one rail (--tp's data-parallel groups, -c train.dp_algorithm=sharp): "
       "each GPU's data added by the rail's leaf switches and sent back (NCCL's CollNet with one GPU per node)"},
      {"nvlstree", "allreduce", "", Family::GpuFabric, "cluster",
       "the GPUs' cores (multimem loads and stores) and the NVSwitches' reduction and multicast tables",
       "NCCL's NVLSTree: NVLS reduce-scatter in each node, NCCL's trees per rail across the nodes, NVLS multicast "
       "(NCCL 2.18+, src/device/all_reduce.h)"},
      {"nvlsring", "allreduce", "", Family::GpuFabric, "cluster",
       "the GPUs' cores (multimem loads and stores) and the NVSwitches' reduction and multicast tables",
       "NVLS reduce-scatter in each node, a ring per rail across the nodes, NVLS multicast (hring with NVLS in "
       "place of the node's rings; not one of NCCL's algorithms)"},
      {"nvlssharp", "allreduce", "", Family::GpuFabric, "cluster (infiniband)",
       "the GPUs' cores (multimem loads, stores and reducing writes), the NVSwitches' tables and the InfiniBand "
       "leaves' SHARP aggregation buffers",
       "NCCL's NVLS across nodes with SHARP: NVLS reduce-scatter in each node, the rail's leaf adds the nodes' "
       "sums (CollNet), NVLS multicast (NCCL 2.17+, NCCL_ALGO_NVLS)"},
      {"nvlsnetreduce", "allreduce", "", Family::GpuFabric, "cluster (roce)",
       "the GPUs' cores (multimem loads, stores and reducing writes), the NVSwitches' tables and NetReduce's FPGA "
       "beside each Ethernet rail leaf (cluster.network=roce)",
       "NVLS reduce-scatter in each node, each GPU's share all-reduced over its rail by NetReduce's FPGA aggregator "
       "(ASPLOS 2023), NVLS multicast"},
      {"p2p", "alltoall", "alltoall", Family::GpuFabric,
       "dgx2, fattree2l, star, torus, mesh, fattree, bigraph, hgx-h100, nvl72, cluster", "the GPUs' cores",
       "NCCL's all-to-all: each GPU sends every peer its block directly and receives the peer's, spread over the "
       "channels, its own block a local copy (nccl-tests' alltoall, grouped ncclSend and ncclRecv)"},
      {"netreduce", "allreduce", "allreduce", Family::Rack, "rack, spineleaf",
       "the hosts' RoCE NICs and the switches' FPGA aggregators",
       "a ring of hosts whose packets the switch's FPGA sums in flight (NetReduce §3)"},
      {"ring", "allreduce", "", Family::Rack, "rack, spineleaf", "the hosts' RoCE NICs",
       "the hosts' ring all-reduce over RDMA, NetReduce's baseline (NetReduce §5)"},
      {"pnetreduce", "allreduce", "allreduce", Family::MultiGpu, "multigpu",
       "the GPUs' RoCE endpoints and the FPGA aggregator",
       "rings inside each machine, NetReduce across machines (Parallel NetReduce, NetReduce §3.4, Fig. 6B)"},
      {"flatring", "allreduce", "", Family::MultiGpu, "multigpu", "the GPUs' RoCE endpoints",
       "one ring over every GPU of every machine (NetReduce §3.4)"},
      {"tencent", "allreduce", "", Family::MultiGpu, "multigpu", "the GPUs' RoCE endpoints",
       "machines' rings, the masters' ring across machines, then a broadcast down (NetReduce §3.4, Fig. 6A)"},
  };
  return table;
}

namespace {
std::string join(std::string list, const std::string& item) { return list.empty() ? item : list + ", " + item; }
}  // namespace

namespace {
// Whether a runs on a built-in platform; one that needs a cluster's
// scale-out network names it: "cluster (roce)" (network "": infiniband, the default).
bool runs_on(const Algorithm& a, const std::string& platform, const std::string& network) {
  return one_of(platform, a.runs_on) ||
         one_of(platform + " (" + (network.empty() ? "infiniband" : network) + ")", a.runs_on);
}
}  // namespace

std::string algorithms_for(const std::string& collective, Family family, const std::string& platform) {
  const bool any = platform.empty() || platforms::is_platform_file(platform);
  std::string first, rest;
  for (const Algorithm& a : algorithms()) {
    if (a.family != family || !one_of(collective, a.collectives) || !(any || runs_on(a, platform, ""))) continue;
    if (first.empty() && one_of(collective, a.default_for)) first = a.name;
    else rest = join(rest, a.name);
  }
  return rest.empty() ? first : join(first, rest);
}

std::string algorithm_defaults() {
  // The GPU fabrics' default for most collectives, then the others by collective, then by family.
  std::string out;
  for (const Algorithm& a : algorithms()) {
    if (!*a.default_for) continue;
    const std::string where = a.family != Family::GpuFabric ? a.runs_on : out.empty() ? "" : a.default_for;
    out += (out.empty() ? "" : "; ") + (where.empty() ? "" : where + ": ") + a.name;
  }
  return out;
}

std::string choice_list(const std::string& option) {
  if (option == "platform")
    return platforms::builtin_platforms() + ", " + kEthernetPlatforms + ", FILE.yaml";
  if (option == "collective") return kCollectives;
  if (option == "algorithm") {
    std::string names;
    for (const Algorithm& a : algorithms())
      if (!one_of(a.name, names)) names = join(names, a.name);
    return names;
  }
  if (option == "dtype") return collectives::kDTypes;
  if (option == "redop") return collectives::kRedOps;
  if (option == "traffic") return traffic::kPatternNames;
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
      for (const Algorithm& a : algorithms())
        if (runs_here(a) && !one_of(a.name, list)) list = join(list, a.name);
    }
    out += std::string(o) + "\t" + list + "\n";
  }
  out += "dims\t2x2 to 64x64 (torus, mesh); AxB with B even, at most 8192 nodes, such as 4x8, 4x16 (bigraph: nodes per "
         "switch x switches)\n";
  out += "nodes\t16, 64 (fattree: k x k nodes, k from 2 to 64); 2 to 16384, at most 131072 GPUs (cluster)\n";
  out += "node\thgx-h100, nvl72, dgx2, FILE.yaml (cluster)\n";
  for (const Algorithm& a : algorithms())
    if (runs_here(a))
      out += std::string("algorithm ") + a.name + "\t" + a.collectives + (*a.default_for ? " (default for " : "") +
           a.default_for + (*a.default_for ? ")" : "") + "; on " + a.runs_on + "; run by " + a.engine + "; " +
           a.description + "\n";
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
  for (const Algorithm& a : algorithms()) {
    if (a.name != algorithm) continue;
    if (a.family == Family::GpuFabric) return "";
    platforms = a.runs_on;
  }
  if (platforms.empty()) return "";
  const bool several = platforms.find(',') != std::string::npos;
  return std::string("the Ethernet platform") + (several ? "s " : " ") +
         (several ? platforms.replace(platforms.rfind(", "), 2, " and ") : platforms);
}

}  // namespace incsim::tb
