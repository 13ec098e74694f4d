#include "collective.h"

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <cassert>
#include <iomanip>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <tuple>

#include "choices.h"
#include "collectives/baselines.h"
#include "collectives/blink_synthesis.h"
#include "collectives/bounds.h"
#include "collectives/composition.h"
#include "collectives/data_pattern.h"
#include "collectives/msccl_xml.h"
#include "collectives/multitree.h"
#include "collectives/program_check.h"
#include "collectives/program_synthesis.h"
#include "collectives/tree_schedule.h"
#include "core/error.h"
#include "core/nearest.h"
#include "core/units.h"
#include "gpu/copy_collective.h"
#include "gpu/cores_collective.h"
#include "gpu/group_window.h"
#include "hca/hca.h"
#include "hca/roce_bridge.h"
#include "netreduce/fpga_aggregator.h"
#include "ethernet/roce_frame.h"
#include "platforms/ethernet_fabric.h"
#include "platforms/infiniband_fabric.h"
#include "topology/cluster.h"
#include "topology/dgx1.h"
#include "topology/direct_networks.h"

namespace incsim::tb {

namespace {
// A graph with the netlist of a built-in (any names, rates and link order):
// the workload then uses that built-in's numbering and paper defaults.
// make_bigraph's numbering: the same number of nodes on every switch.
bool is_bigraph(const topo::Topology& t) {
  const int switches = static_cast<int>(t.switches().size()), n = static_cast<int>(t.endpoints().size());
  if (switches < 2 || switches % 2 || n % switches || n > 8192) return false;
  return topo::netlist_difference(t, topo::make_bigraph(n / switches, switches, 1, 0)).empty();
}
// Klenk §V's 2-level fat tree of leaf groups of 8 GPUs.
bool is_fattree2l(const topo::Topology& t) {
  const int n = static_cast<int>(t.endpoints().size());
  if (n % 8 || n < 8 || n > 128) return false;
  return topo::netlist_difference(t, topo::make_fattree2l(n / 8, 1, 0)).empty();
}
}  // namespace

Schema nccl_schema() {
  Schema s;
  s.add({"size_bytes", "B", ColumnKind::Setting, "size", "(B)", 12})
      .add({"count", "elements", ColumnKind::Setting, "count", "(elements)", 12})
      .add({"type", "", ColumnKind::Setting, "type", "", 7})
      .add({"redop", "", ColumnKind::Setting, "redop", "", 7})
      .add({"time_us", "us", ColumnKind::Measurement, "time", "(us)", 11, 2})
      .add({"algbw_GBps", "GB/s", ColumnKind::Measurement, "algbw", "(GB/s)", 9, 2})
      .add({"busbw_GBps", "GB/s", ColumnKind::Measurement, "busbw", "(GB/s)", 9, 2})
      .add({"wrong", "elements", ColumnKind::Measurement, "#wrong", "", 9})
      .add({"bound_us", "us", ColumnKind::Measurement})
      .add({"bound_fraction", "", ColumnKind::Measurement, "bound", "(%)", 8, 1, 100.0});
  return s;
}

void fill_nccl(Row& r, uint64_t bytes, const std::string& type, const std::string& redop, double time_us,
               double busbw_factor, uint64_t wrong, double bound_us) {
  const double algbw = static_cast<double>(bytes) / (time_us * 1e3);
  r.set("size_bytes", bytes)
      .set("count", bytes / collectives::dtype_bytes(collectives::parse_dtype(type)))
      .set("type", type)
      .set("redop", redop)
      .set("time_us", time_us)
      .set("algbw_GBps", algbw)
      .set("busbw_GBps", algbw * busbw_factor)
      .set("wrong", wrong)
      .set("bound_us", bound_us)
      .set("bound_fraction", bound_us / time_us);
}

void check_memory(const std::vector<uint64_t>& sizes, int ranks, const char* rank_kind) {
  // Each rank holds its data as a buffer of the message size (a GPU's
  // memory, a NIC's or a host's buffers; measured: 0.1 to 1 byte per byte per
  // rank), so a run needs about ranks x size bytes, against the memory of the
  // machine it runs on.
  const uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
  const double need = static_cast<double>(largest) * ranks;
  const double have = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (need <= have) return;
  uint64_t fits = 4;
  while (static_cast<double>(fits) * 2 * ranks <= have) fits *= 2;
  std::ostringstream os;
  os << std::fixed << std::setprecision(0) << "--sizes " << size_label(largest) << " needs about " << need / 1e9
     << " GB of memory (a buffer of that size on each of " << ranks << " " << rank_kind << "); this machine's "
     << have / 1e9 << " GB hold sizes up to " << size_label(fits);
  throw UserError(os.str());
}

std::tuple<collectives::DType, collectives::RedOp, std::vector<uint64_t>> parse_data(const Options& o) {
  const auto sizes = parse_sizes(o.sizes);
  const collectives::DType t = collectives::parse_dtype(o.dtype);
  const uint32_t elem = collectives::dtype_bytes(t);
  for (uint64_t s : sizes)
    if (s % elem != 0)
      throw UserError("size " + std::to_string(s) + " is not a multiple of the " + std::to_string(elem) +
                      "-byte element size of " + o.dtype);
  return {t, collectives::parse_redop(o.redop), sizes};
}

namespace {
const Param<std::string> kRingEngine{
    "ring.engine", "software", Range::none(),
    "software: the GPUs' data-fence-flag ring (Klenk §III; default on dgx2, fattree2l, star and YAML files); "
    "nic: the ring's schedule table on the NIC, as MultiTree runs every baseline (§V-A; default on torus, mesh, "
    "fattree, bigraph, for an all-reduce; other collectives' rings run on the cores)"};
const Param<int> kDbtreePieces{
    "dbtree.pieces", 16, Range::at_least(1).at_most(1024),
    "pieces each tree's half of the buffer is cut into and pipelined down the tree, as NCCL pipelines its trees "
    "(a schedule table is made once for every size, MultiTree §V-A, so this is a count, not a size; 1: the "
    "unpipelined trees of MultiTree Fig. 4b)"};
const Param<double> kBlinkEps{"blink.eps", 0.05, Range::above(0).below(1),
                              "MWU packing approximation: the packed rate is at least (1 - eps) of the optimum (Blink "
                              "§3.2 gives none; 0.05 matches its 5% threshold)"};
const Param<double> kBlinkThreshold{
    "blink.threshold", 0.05, Range::at_least(0).below(1),
    "tree minimisation stops relaxing once the rate is within this fraction of the packed rate (Blink §3.2: 5%)"};
const Param<int> kBlinkChunks{
    "blink.chunks", 32, Range::at_least(1).at_most(1024),
    "chunks each tree's share is cut into; a node forwards a chunk once it holds it all (Blink §4.1, §4.2.1: its "
    "MIAD search settles near 1-16 MB chunks, about 1/32 of a tree's share at the sizes of Fig. 14); on a switch "
    "fabric 1, its one-hop trees (Blink §3.4: one hop, so nothing to pipeline along a tree; on DGX-2 more chunks "
    "only add per-message latency, measured)"};
const Param<int> kRingPieces{
    "ring.pieces", 32, Range::at_least(1).at_most(1024),
    "pieces each ring segment (broadcast: each ring's share) is cut into and pipelined around the ring, as NCCL "
    "pipelines its slices (NCCL 2.4: 8 slots per channel); 32 gives the rings the pipelining blink.chunks gives "
    "the trees"};
const Param<int> kMiadIterations{
    "blink.miad_iterations", 0, Range::at_least(0).at_most(64),
    "iterations per size that search the chunk size by multiplicative increase, additive decrease, the last one "
    "reported (Blink §4.2.1, Fig. 11: about 4 to settle); 0: blink.chunks fixed"};
const Param<uint64_t> kMiadStart{"blink.miad_start_bytes", 1 << 20, Range::at_least(4).at_most(1ull << 40),
                                 "the MIAD search's first chunk size, doubled while throughput rises (Blink §4.2.1, "
                                 "Fig. 11: 1 MB, x2)"};
const Param<uint64_t> kMiadStep{"blink.miad_step_bytes", 256 << 10, Range::at_least(4).at_most(1ull << 40),
                                "the MIAD search's additive decrease once throughput falls (Blink §4.2.1 gives no "
                                "step: a quarter of the first size)"};
const Param<bool> kBlinkHybrid{
    "blink.hybrid", false, Range::none(),
    "broadcast over NVLink trees and a PCIe chain at once, the data split so both finish together (Blink A.3, Eq. "
    "8, with T_dpa = 0: no driver call to switch links here)"};
// NCCL 2.12 turned PXN on by default (NCCL_PXN_DISABLE=0; NCCL's environment
// variables documentation, and NVIDIA's blog "Doubling all2all Performance
// with NVIDIA Collective Communication Library 2.12", 2022).
const Param<bool> kClusterPxn{
    "cluster.pxn", true, Range::none(),
    "a GPU's transfer to a GPU on another rail of another node goes over NVLink to its node's GPU on that rail, "
    "whose adapter sends it (NCCL's PXN, on by default since NCCL 2.12: NCCL_PXN_DISABLE=0); false: through "
    "its own adapter and the spines"};
}  // namespace

platforms::PlatformShape platform_shape(const Options& o) {
  platforms::PlatformShape shape;
  shape.gpus = o.gpus;
  shape.gpu_list = o.gpu_list;
  shape.gpu_servers = o.gpu_servers;
  shape.nodes = o.nodes;
  shape.node = o.node;
  if (!o.dims.empty()) {
    shape.dims = true;
    std::tie(shape.dims_x, shape.dims_y) = parse_dims(o.dims);
  }
  return shape;
}

// Defaults from the paper's figure for this algorithm and platform (Klenk
// Fig. 7: DGX-2; Fig. 8: the fat tree).
namespace {
collectives::Collective collective_kind(const std::string& name) {
  for (auto c : {collectives::Collective::AllReduce, collectives::Collective::ReduceScatter,
                 collectives::Collective::AllGather, collectives::Collective::Broadcast,
                 collectives::Collective::AllToAll})
    if (name == collectives::collective_name(c)) return c;
  throw UserError("no collective '" + name + "'");
}
}  // namespace

platforms::PlatformDefaults CollectiveWorkload::defaults_for(const topo::Topology& t, const std::string& algorithm) {
  const bool push = algorithm == "push", pull = one_of(algorithm, "pull, nvls, nvlstree, nvlsring, nvlssharp, nvlsnetreduce");
  platforms::PlatformDefaults d = platforms::platform_defaults(t);
  d.table_bytes = push ? 256 : pull ? (is_fattree2l(t) ? 1024 : 4096) : 0;
  // The switches reduce and multicast 128-byte blocks (Klenk §IV-D), also on
  // MultiTree's fat tree, whose own packets carry 256 B (Table III).
  if (push || one_of(algorithm, "pull, nvls, multicast")) d.max_payload_bytes = topo::MulticastFabric::kBlockBytes;
  return d;
}

std::string default_algorithm(const std::string& collective, const std::string& platform) {
  std::string all = algorithms_for(collective, Family::GpuFabric, platform);
  if (all.empty()) all = algorithms_for(collective, Family::GpuFabric);  // the workload names why none runs there
  return all.substr(0, all.find(','));
}

platforms::PlatformDefaults CollectiveWorkload::defaults_for(const topo::Topology& t,
                                                             const std::vector<std::string>& algorithms) {
  platforms::PlatformDefaults d = platforms::platform_defaults(t);
  for (const auto& a : algorithms) {
    const platforms::PlatformDefaults mine = defaults_for(t, a);
    d.table_bytes = std::max(d.table_bytes, mine.table_bytes);
    d.max_payload_bytes = std::min(d.max_payload_bytes, mine.max_payload_bytes);
  }
  return d;
}

bool is_program_file(const std::string& algorithm) { return algorithm.find_first_of("./") != std::string::npos; }

collectives::Program read_checked_program(const std::string& path) {
  const bool xml = path.size() > 4 && path.compare(path.size() - 4, 4, ".xml") == 0;
  collectives::Program p = xml ? collectives::read_msccl_file(path) : collectives::read_program_file(path);
  const collectives::ProgramCheck check = collectives::check_program(p);
  if (!check.ok())
    throw UserError(path + " is not a correct " + collectives::collective_name(p.collective) + ": " +
                    check.problems.front());
  return p;
}

CollectiveWorkload::CollectiveWorkload(const Options& o, Config& cfg, const Share* share) : opt_(o), cfg_(cfg) {
  *schema_ = nccl_schema();
  refuse_options(opt_, {"hosts", "ring", "racks", "hosts-per-rack", "machines", "gpus-per-machine"},
                 "shapes the Ethernet platforms rack, spineleaf and multigpu, not " + opt_.platform);
  refuse_options(opt_, {"load"}, "applies to --traffic only");
  schema_->add({"packets", "packets", ColumnKind::Measurement})
      .add({"avg_packet_latency_ns", "ns", ColumnKind::Measurement});
  if (is_program_file(opt_.algorithm)) {
    const std::string& path = opt_.algorithm;
    program_ = read_checked_program(path);
    if (program_.engine() == collectives::Engine::RoceNic)
      throw UserError(path + " runs on RoCE hosts: run it on platform rack, spineleaf or multigpu");
    const bool copy = program_.engine() == collectives::Engine::CopyEngine;
    if (const std::string why = copy ? gpu::CopyCollective::cannot_run(program_) : ""; !why.empty())
      throw UserError(path + ": " + why);
    copy_engines_ = copy;
    if (copy) innet_ = collectives::in_network_method(program_);
    if (opt_.was_given("collective") && opt_.collective != collectives::collective_name(program_.collective))
      throw UserError(path + ": its collective is " + collectives::collective_name(program_.collective) +
                      ", not the --collective " + opt_.collective + " asked for");
    opt_.collective = collectives::collective_name(program_.collective);
  }
  check_choice("collective", opt_.collective, kCollectives);
  const std::string accepted = program_.ranks ? opt_.algorithm : algorithms_for(opt_.collective, Family::GpuFabric);
  if (opt_.algorithm.empty()) opt_.algorithm = default_algorithm(opt_.collective, opt_.platform);
  // A name no platform knows: the choices are the ones that run here.
  if (!program_.ranks && !one_of(opt_.algorithm, choice_list("algorithm")))
    check_choice("algorithm", opt_.algorithm, algorithms_for(opt_.collective, Family::GpuFabric, opt_.platform));
  if (const std::string ethernet = ethernet_platforms_of(opt_.algorithm); !ethernet.empty())
    throw UserError("algorithm '" + opt_.algorithm + "' runs on " + ethernet + ", not on " + opt_.platform);
  if (!one_of(opt_.algorithm, accepted))
    throw UserError("algorithm '" + opt_.algorithm + "' does not run " + opt_.collective + "; choose one of " + accepted);
  std::tie(dtype_, redop_, sizes_) = parse_data(opt_);

  // A collective alone builds its machine; a job (jobs.h) runs on its share of one.
  topo::Topology own;
  if (!share) own = opt_.topology ? *opt_.topology : platforms::make_topology(opt_.platform, platform_shape(opt_), cfg_);
  const topo::Topology& t = share ? share->platform->topology() : own;
  const bool dgx1 = platforms::is_dgx1(t);
  // A DGX-1's topology holds only the allocated GPUs.
  const int built = static_cast<int>(t.endpoints().size());
  if (built < 2)
    throw UserError("a collective needs at least 2 GPUs, and platform '" + t.name + "' has " + std::to_string(built));
  if (program_.ranks > built)
    throw UserError("platform '" + t.name + "' has " + std::to_string(built) + " GPUs, fewer than the " +
                    std::to_string(program_.ranks) + " ranks of " + opt_.algorithm);
  if (program_.ranks == 1) throw UserError(opt_.algorithm + " has 1 rank; a collective needs at least 2");
  const int n = share ? static_cast<int>(share->gpus.size())
                : program_.ranks ? program_.ranks
                : opt_.gpus && !dgx1 ? *opt_.gpus
                                     : built;
  if (share && n < 2) throw UserError("a collective needs at least 2 GPUs, and this job has " + std::to_string(n));
  if (share && program_.ranks && program_.ranks != n)
    throw UserError(opt_.algorithm + " has " + std::to_string(program_.ranks) + " ranks, and this job " +
                    std::to_string(n) + " GPUs");
  if (n < 2 || n > built)
    throw UserError("platform '" + t.name + "' has " + std::to_string(built) + " GPUs and a collective needs 2 GPUs or "
                    "more: --gpus must be between 2 and " + std::to_string(built) + ", not " + std::to_string(n));
  check_memory(sizes_, n, "GPUs");
  collectives::DataPattern(opt_.seed, n, dtype_, redop_);  // a type that cannot sum n ranks, before anything is built
  if (!program_.ranks && one_of(opt_.algorithm, "push, pull, multicast, nvls")) {
    // NVLS issued by the SMs' thread blocks, as NCCL runs it, or by the copy engines.
    const std::string engine = opt_.algorithm == "nvls" ? cfg_.get(gpu::kNvlsEngine) : "copy";
    if (engine != "copy" && engine != "cores")
      throw UserError("nvls.engine must be copy or cores, not '" + engine + "'");
    nvls_channels_ = opt_.algorithm == "nvls" ? cfg_.get(gpu::kNvlsChannels) : 0;
    copy_engines_ = engine == "copy";
    innet_ = opt_.algorithm == "push"                                     ? collectives::InNetMethod::Push
             : opt_.algorithm == "multicast" || opt_.collective == "allgather" ? collectives::InNetMethod::Multicast
                                                                               : collectives::InNetMethod::Pull;
  }
  const bool in_network = innet_.has_value();
  cluster_ = topo::cluster_nodes(t);
  const bool cores_program = program_.ranks && program_.engine() == collectives::Engine::Cores;
  // NCCL's algorithms across a cluster's nodes, on the cores.
  const bool across_nodes = !program_.ranks && one_of(opt_.algorithm, "hring, tree, nvlstree, nvlsring, nvlssharp, collnet, nvlsnetreduce");
  const auto in_one_node = [&] {
    if (!share) return false;
    const std::vector<int> node_of = cluster_node_of();
    return std::all_of(share->gpus.begin(), share->gpus.end(),
                       [&](int g) { return node_of[static_cast<size_t>(g)] == node_of[static_cast<size_t>(share->gpus[0])]; });
  };
  if (!cluster_.empty() && !cores_program && !one_of(opt_.algorithm, "ring, p2p, sharp") && !across_nodes &&
      !(in_network && in_one_node()))
    throw UserError("on a cluster, GPUs in different nodes reach each other through their network adapters, which "
                    "carry the cores' writes: run ring, p2p, tree, hring, collnet, nvlstree, nvlsring, nvlssharp, nvlsnetreduce or a "
                    "program for the GPUs' cores; " + opt_.algorithm +
                    " runs on the GPUs of one node only (a job's, or --tp's groups with -c train.dp_algorithm=ring)");
  if (!cluster_.empty())
    schema_->add({"nvlink_busiest", "", ColumnKind::Measurement, "nvlink", "(% busy)", 9, 1, 100.0})
        .add({"network_busiest", "", ColumnKind::Measurement, "network", "(% busy)", 9, 1, 100.0});
  if (across_nodes && (cluster_.empty() || n != built))
    throw UserError(opt_.algorithm + " runs on all the GPUs of a cluster (--platform cluster): " +
                    (opt_.algorithm == "tree"       ? "a chain through each node's GPUs, a tree over the nodes"
                     : opt_.algorithm == "nvlstree" ? "NVLS inside its nodes, trees across them per rail"
                     : opt_.algorithm == "nvlsring" ? "NVLS inside its nodes, rings across them per rail"
                     : opt_.algorithm == "nvlssharp" ? "NVLS inside its nodes, SHARP across them per rail"
                     : opt_.algorithm == "collnet"   ? "rings inside its nodes, SHARP across them per rail"
                     : opt_.algorithm == "nvlsnetreduce" ? "NVLS inside its nodes, NetReduce's FPGA across them per rail"
                                                    : "rings inside its nodes and across them per rail"));
  if (opt_.algorithm == "sharp") {
    // One GPU of each of n nodes, all in the same place of their node (one rail).
    const std::vector<int> node_of = cluster_node_of(), rail_of = cluster_rail_of();
    std::set<int> nodes, places;
    for (int r = 0; r < n; ++r) {
      const size_t g = static_cast<size_t>(share ? share->gpus[r] : r);
      if (g < node_of.size()) nodes.insert(node_of[g]), places.insert(rail_of[g]);
    }
    if (cluster_.empty() || places.size() != 1 || nodes.size() != static_cast<size_t>(n))
      throw UserError("sharp adds the data of one GPU per node on one rail in the rail's leaf switches: its GPUs must "
                      "be GPU h of different nodes of a cluster, as --tp's data-parallel groups are "
                      "(-c train.dp_algorithm=sharp)");
  }
  if (!cluster_.empty() && topo::is_roce_cluster(t) && one_of(opt_.algorithm, "nvlssharp, collnet, sharp"))
    throw UserError(opt_.algorithm + " aggregates in the InfiniBand switches' SHARP buffers, which a RoCE cluster "
                    "(cluster.network=roce) does not have: run nvlsnetreduce there");
  if (!cluster_.empty() && !topo::is_roce_cluster(t) && opt_.algorithm == "nvlsnetreduce")
    throw UserError("nvlsnetreduce aggregates in NetReduce's FPGA beside each Ethernet rail leaf, which an "
                    "InfiniBand cluster does not have: add -c cluster.network=roce");
  if (in_network && dgx1)
    throw UserError("algorithm '" + opt_.algorithm + "' needs NVSwitch reduction or multicast tables, which a DGX-1 " +
                    "lacks; use blink or ring");
  if (dgx1 && opt_.algorithm == "p2p")
    throw UserError("NCCL's all-to-all on " + opt_.platform + " sends between GPUs that no NVLink joins (over PCIe), "
                    "which incsim does not model: run it on a switch fabric");
  if (dgx1 && !in_network && !program_.ranks && opt_.algorithm != "ring" && opt_.algorithm != "blink")
    throw UserError("on " + opt_.platform + " the algorithms are blink and ring (NCCL-style), not " + opt_.algorithm);
  // Klenk §IV-E2 keeps multicast free of routing deadlock by making its
  // paths conform to unicast routes. Our multicast trees run the routes
  // toward their root backwards: routes on a fabric that goes up, then down,
  // but not under dimension order (X then Y backwards is Y then X) nor on
  // BiGraph (ties broken by destination: the way back differs), and there
  // runs stall (measured: push on a 4x4 torus
  // and mesh at 64 KiB, pull and multicast on BiGraph 4x8 at 1 MiB).
  if (in_network && t.vc_policy != topo::VcPolicy::None)
    throw UserError("algorithm '" + opt_.algorithm + "' reduces or multicasts in the switches, which only works on " +
                    "fabrics whose routes go up then down (dgx2, fattree2l, star, fattree, hgx-h100, nvl72 and YAML "
                    "platforms of NVSwitches built so); on " + opt_.platform +
                    " use ring");
  if (in_network)
    for (int s : t.switches())
      if (platforms::is_plain_switch(t, s))
        throw UserError("algorithm '" + opt_.algorithm + "' reduces or multicasts in the switches, and " +
                        t.node(s).name + " (a " + t.node(s).block + ") has no multicast or reduction tables");
  const bool trees = opt_.algorithm == "blink" || (dgx1 && opt_.algorithm == "ring");
  const bool by_gpu_number = ranks_are_gpu_numbers(opt_.algorithm, t);
  if (share)
    for (int r = 0; r < n; ++r)
      if (share->gpus[r] != r && by_gpu_number)
        throw UserError("algorithm '" + opt_.algorithm + "' builds its " + (trees ? "trees" : "schedule") +
                        " over GPUs 0 to n-1 of the platform; a job running it must have those GPUs, in order");
  const bool fattree = copy_engines_ && is_fattree2l(t);
  if (share) {
    platform_ = share->platform;
  } else {
    // The copy engines take 128-byte blocks; a program for the cores that
    // reduces in the switches, the tables NVLS takes (and, if nothing else
    // moves, NVLS's 128-byte blocks).
    const bool cores_sends = std::any_of(program_.ops.begin(), program_.ops.end(),
                                         [](const collectives::Operation& o) { return collectives::sends(o.kind); });
    const bool cores_innet = program_.ranks && collectives::in_network_method(program_);
    const std::string defaults = in_network      ? collectives::method_name(*innet_)
                                 : copy_engines_ ? "multicast"
                                 : cores_innet   ? (cores_sends                                           ? "nvlstree"
                                                    : program_.has(collectives::OpKind::ReduceWrite) ? "nvlssharp"
                                                                                                     : "nvls")
                                                 : opt_.algorithm;
    own_platform_ = std::make_unique<platforms::GpuMachine>(t, cfg_, opt_.seed, defaults_for(t, defaults));
    platform_ = own_platform_.get();
  }
  for (int r = 0; r < n; ++r) participants_.push_back(platform_->gpus()[share ? share->gpus[r] : r]);
  // A cluster's link ends between nodes: the network's, and each GPU's PCIe link to its adapter.
  auto bridge = [&t](const std::string& port) {
    return platforms::is_bridge_kind(t.node(t.find(port.substr(0, port.rfind('.')))).block);
  };
  if (!cluster_.empty())
    for (const platforms::LinkEnd& e : platform_->link_ends())
      between_nodes_.push_back(e.fabric != 0 || bridge(e.from) || bridge(e.to));
  bool software_ring = false;
  if (opt_.algorithm == "ring" && !trees) {
    const bool multitree_platform = platforms::is_multitree_platform(t);
    // The NICs' ring table is an all-reduce's; the other collectives' rings run on the cores.
    const bool allreduce = opt_.collective == "allreduce";
    const std::string engine = cfg_.get(kRingEngine, multitree_platform && allreduce ? "nic" : "software");
    if (engine != "software" && engine != "nic")
      throw UserError("ring.engine must be software or nic, not '" + engine + "'");
    if (!allreduce && engine == "nic")
      throw UserError("a ring " + opt_.collective + " runs on the GPUs' cores (ring.engine=software); the NICs' ring "
                      "table is an all-reduce's");
    if (!cluster_.empty() && engine == "nic")
      throw UserError("on a cluster the ring runs on the GPUs' cores (ring.engine=software): the InfiniBand adapters "
                      "carry the cores' writes, not the NICs' schedule-table messages");
    software_ring = engine == "software";
  }
  if (copy_engines_) make_copy(n, fattree);
  else if (in_network) {  // nvls on the cores
    program_ = collectives::nvls_program(collective_kind(opt_.collective), n, nvls_channels_,
                                         cfg_.get(gpu::kNvlsMultimem));
    make_cores(program_);
  }
  else if (program_.ranks && program_.engine() == collectives::Engine::NicTable) make_scheduled(n);
  else if (program_.ranks) {
    relay_across_rails();
    make_cores(program_);
  }
  else if (trees) make_trees(n);
  else if (software_ring || across_nodes || one_of(opt_.algorithm, "p2p, sharp")) make_ring(n);
  else make_scheduled(n);

}

bool CollectiveWorkload::ranks_are_gpu_numbers(const std::string& algorithm, const topo::Topology& t) {
  return algorithm == "blink" || (platforms::is_dgx1(t) && algorithm == "ring") ||
         one_of(algorithm, "multitree, multitree-msg, ring2d, hdrm");
}

bool CollectiveWorkload::reduces_in_switches() const {
  return innet_ && *innet_ != collectives::InNetMethod::Multicast;
}

// A push table may hold an entry for its whole timeout with no link moving.
sc_core::sc_time CollectiveWorkload::default_stall_timeout() const {
  const double us = std::max({100.0, 20 * platform_->longest_round_trip().to_seconds() * 1e6,
                              4 * platform_->table_config().table_timeout.to_seconds() * 1e6});
  return sc_core::sc_time(us, sc_core::SC_US);
}

// The bound takes the GPU with the least bandwidth toward the others.
double CollectiveWorkload::least_endpoint_GBps(int n, bool acked) const {
  std::vector<int> gpus;
  for (int r = 0; r < n; ++r) gpus.push_back(participants_[r]->index());
  double b = platform_->endpoint_payload_GBps(gpus[0], gpus, acked);
  for (int r = 1; r < n; ++r) b = std::min(b, platform_->endpoint_payload_GBps(gpus[r], gpus, acked));
  return b;
}

namespace {
// What rank r of program p sends, in chunks of the message, to the peers
// `near` accepts and to the others: its sends, its multicast stores, and its
// data the switches read for a group's reducing reads (its own read's too
// under multimem), which are near.
void sent_chunks(const collectives::Program& p, int r, const std::function<bool(int)>& near, double& inside,
                 double& across) {
  for (int i = 0; i < p.op_count(r); ++i) {
    const collectives::Operation& o = p.op(r, i);
    if (o.kind == collectives::OpKind::ReduceWrite) {  // to its group's home switch, through the adapter if the group is far
      const auto& g = p.groups[o.group];
      const bool far = std::any_of(g.begin(), g.end(), [&](int m) { return m != r && !near(m); });
      (far ? across : inside) += o.src.count;
      continue;
    }
    if (collectives::in_network(o.kind)) {
      const bool out = o.kind == collectives::OpKind::MulticastWrite
                           ? !o.src.empty()
                           : o.kind == collectives::OpKind::ReduceRead && (p.multimem || o.dst.empty());
      if (out) inside += o.src.count;
      continue;
    }
    if (o.send_peer == collectives::kNone) continue;
    (near(o.send_peer) ? inside : across) += o.src.empty() ? o.dst.count : o.src.count;
  }
}

// NVLS on the cores: the busiest GPU's bytes in or out per byte of the
// message (an all-gather's GPU sends its share and takes everyone's).
double nvls_moved(const collectives::Program& program) {
  const collectives::Buffers& b = program.buffers[0];
  const double message = program.collective == collectives::Collective::AllGather ? b.output : b.input;
  double most = 0;
  for (int r = 0; r < program.ranks; ++r) {
    double sent = 0, across = 0, got = 0;
    sent_chunks(program, r, [](int) { return true; }, sent, across);
    for (int i = 0; i < program.op_count(r); ++i) {
      const collectives::Operation& o = program.op(r, i);
      const bool own_back = program.multimem && o.kind == collectives::OpKind::MulticastWrite && !o.src.empty();
      if (collectives::in_network(o.kind)) got += own_back ? o.src.count : o.dst.count;
    }
    most = std::max(most, std::max(sent, got) / message);
  }
  return most;
}
}  // namespace

std::vector<int> CollectiveWorkload::cluster_node_of() const {
  std::vector<int> node_of(cluster_gpus());
  for (size_t k = 0; k < cluster_.size(); ++k)
    for (int g : cluster_[k]) node_of[static_cast<size_t>(g)] = static_cast<int>(k);
  return node_of;
}

std::vector<int> CollectiveWorkload::cluster_rail_of() const {
  std::vector<int> rail_of(cluster_gpus());
  for (const auto& node : cluster_)
    for (size_t h = 0; h < node.size(); ++h) rail_of[static_cast<size_t>(node[h])] = static_cast<int>(h);
  return rail_of;
}

size_t CollectiveWorkload::cluster_gpus() const {
  size_t n = 0;
  for (const auto& node : cluster_) n += node.size();
  return n;
}

int CollectiveWorkload::adapter_of(int gpu) const {
  const topo::Topology& t = platform_->topology();
  const int node = t.endpoints()[gpu];
  for (int p = 0; p < t.node(node).ports; ++p)
    if (const int a = t.peer({node, p}).node; a >= 0 && topo::kinds::is_adapter(t.node(a).block)) return a;
  return -1;
}

namespace {
// A scale-out network's data packet: its payload, the bytes it adds on the
// wire, and what acknowledging it costs the other way.
struct NetPacket {
  uint32_t payload, header, ack;
};

// In-network aggregation (pushes) sends the GPU's 128-byte blocks, each
// its own packet: SHARP's, or NetReduce's one-packet messages with their INA
// header.
NetPacket scale_out_packet(const platforms::GpuMachine& m, bool pushes) {
  if (topo::is_roce_cluster(m.topology())) {
    // One RDMA WRITE (WriteOnly, with its RETH) per packet, each acknowledged
    // by an ACK frame (hca/roce_bridge.h).
    return {pushes ? topo::MulticastFabric::kBlockBytes : m.fabric_as<platforms::EthernetFabric>().mtu_payload(),
            eth::kEthWireOverhead + eth::kRoceOverhead + eth::kRethBytes + (pushes ? eth::kInaBytes : 0),
            eth::kEthWireOverhead + eth::kRoceOverhead + eth::kAethBytes};
  }
  const net::PacketFormat f = m.fabric_as<platforms::InfinibandFabric>().packet_format();
  return {pushes ? topo::MulticastFabric::kBlockBytes : f.max_payload_bytes, f.header_bytes, 0};
}
}  // namespace

double CollectiveWorkload::cluster_endpoint_GBps(const collectives::Program& program) {
  const topo::Topology& t = platform_->topology();
  const net::PacketFormat& gf = platform_->format();
  const NetPacket nf = scale_out_packet(*platform_, program.has(collectives::OpKind::ReduceWrite));
  const std::vector<int> node_of = cluster_node_of();
  double best = 0, nvlink_GBps = 0, adapter_GBps = 0;
  bool adapter_limits = false;
  const collectives::Buffers& b = program.buffers[0];
  const double message_chunks = program.collective == collectives::Collective::AllGather ? b.output : b.input;
  const double factor = collectives::busbw_factor(program.collective, program.ranks);
  for (int r = 0; r < program.ranks; ++r) {
    const int gpu = participants_[r]->index(), node = t.endpoints()[gpu];
    // Its links: NVLink's payload, each write acknowledged; the adapter's,
    // the slower of its PCIe link (acknowledged there) and its network link.
    double nvl = 0, hca = 0;
    for (int p = 0; p < t.node(node).ports; ++p) {
      const topo::PortRef peer = t.peer({node, p});
      const double bw = t.links()[t.link_at({node, p})].bw_GBps;
      if (!topo::kinds::is_adapter(t.node(peer.node).block)) {
        nvl += collectives::payload_bandwidth_GBps(bw, gf.max_payload_bytes, gf.header_bytes, gf.header_bytes);
        continue;
      }
      const double net = t.links()[t.link_at({peer.node, hca::Hca::kNet})].bw_GBps;
      hca = std::min(collectives::payload_bandwidth_GBps(bw, gf.max_payload_bytes, gf.header_bytes, gf.header_bytes),
                     collectives::payload_bandwidth_GBps(net, nf.payload, nf.header, nf.ack));
    }
    double inside = 0, across = 0;
    sent_chunks(program, r, [&](int peer) { return node_of[participants_[peer]->index()] == node_of[gpu]; }, inside,
                across);
    // Its time per byte of the message, against the busbw convention's bytes.
    const double t_nvl = inside / message_chunks / nvl, t_hca = across / message_chunks / hca;
    if (t_nvl + t_hca == 0) continue;
    const double g = factor / std::max(t_nvl, t_hca);
    if (best == 0 || g < best) {
      best = g;
      nvlink_GBps = nvl;
      adapter_GBps = hca;
      adapter_limits = t_hca > t_nvl;
    }
  }
  std::ostringstream note;
  note << std::fixed << std::setprecision(1) << cluster_.size() << " nodes of " << cluster_[0].size()
       << " GPUs; each GPU's sends within its node over NVLink (" << nvlink_GBps << " GB/s payload) and to other "
       << "nodes through its adapter (" << adapter_GBps << " GB/s): the " << (adapter_limits ? "adapters" : "NVLinks")
       << " limit the bound";
  cluster_note_ = note.str();
  return best;
}

void CollectiveWorkload::make_ring(int n) {
  const collectives::Collective c = collective_kind(opt_.collective);
  const int dflt = platform_->defaults().ring_channels;
  const int channels = static_cast<int>(cfg_.get(gpu::kRingChannels, dflt ? dflt : gpu::kRingChannels.default_value()));
  const bool whole_cluster = !cluster_.empty() && n == static_cast<int>(platform_->gpus().size());
  const int nodes = static_cast<int>(cluster_.size()), per_node = whole_cluster ? static_cast<int>(cluster_[0].size()) : 0;
  program_ = opt_.algorithm == "p2p"       ? collectives::alltoall_program(n, channels)
             : opt_.algorithm == "hring"   ? collectives::hierarchical_ring_program(nodes, per_node, channels)
             : opt_.algorithm == "collnet" ? collectives::collnet_program(nodes, per_node, channels)
             : opt_.algorithm == "sharp"   ? collectives::sharp_program(n, channels)
             : opt_.algorithm == "tree" ? collectives::cluster_tree_program(nodes, per_node, channels)
             : opt_.algorithm == "nvlstree"
                 ? collectives::nvls_tree_program(nodes, per_node, channels, cfg_.get(gpu::kNvlsMultimem))
             : opt_.algorithm == "nvlsring"
                 ? collectives::nvls_ring_program(nodes, per_node, channels, cfg_.get(gpu::kNvlsMultimem))
             : one_of(opt_.algorithm, "nvlssharp, nvlsnetreduce")
                 ? collectives::nvls_sharp_program(nodes, per_node, channels, cfg_.get(gpu::kNvlsMultimem))
             : whole_cluster            ? collectives::cluster_ring_program(c, nodes, per_node, channels)
                                        : collectives::ring_program(c, n, channels);
  // NetReduce's FPGA in place of SHARP's switches: the same program, the network's aggregation differs.
  if (opt_.algorithm == "nvlsnetreduce") program_.name = "nvlsnetreduce";
  const std::string proto = cfg_.get(gpu::kRingProtocol, platform_->defaults().ring_protocol);
  // NVLS, and so NVLSTree, and CollNet run NCCL's Simple protocol only
  // (src/device/all_reduce.h; the tuner gives CollNet no LL or LL128).
  const bool by_size = to_lower(proto) == "auto", simple = one_of(opt_.algorithm, "nvlstree, nvlsring, nvlssharp, collnet, nvlsnetreduce, sharp");
  if (simple && !by_size && collectives::parse_protocol(proto, "ring.protocol (or auto)") != collectives::Protocol::Simple)
    throw UserError(opt_.algorithm + " runs NCCL's Simple protocol only, as NCCL's NVLS and CollNet kernels do: "
                    "ring.protocol=" + proto);
  program_.protocol_by_size = by_size && !simple;
  if (!by_size)
    for (collectives::Operation& o : program_.ops) o.proto = collectives::parse_protocol(proto, "ring.protocol (or auto)");
  relay_across_rails();
  make_cores(program_);
}

void CollectiveWorkload::relay_across_rails() {
  if (cluster_.empty() || !cfg_.get(kClusterPxn)) return;
  const std::vector<int> node_of = cluster_node_of(), rail_of = cluster_rail_of();
  std::vector<int> node, rail;
  for (const gpu::Gpu* p : participants_) {
    node.push_back(node_of[static_cast<size_t>(p->index())]);
    rail.push_back(rail_of[static_cast<size_t>(p->index())]);
  }
  const size_t ops = program_.ops.size();
  program_ = collectives::pxn_program(program_, node, rail);
  pxn_relays_ = program_.ops.size() - ops;  // one receive-copy-send each
}

void CollectiveWorkload::require_reduction_tables(const std::string& what) const {
  if (platform_->table_config().table_bytes == 0)
    throw UserError(what + " reduces in the switches: switch.reduction_table.bytes must be above 0");
}

// On a cluster the adapters carry a group's traffic only as SHARP's: a group
// across nodes takes reducing writes, which the network's switches hold; a
// group inside a node NVLS's reads and multicasts, which its NVSwitches take.
void CollectiveWorkload::require_groups_fit_cluster(const collectives::Program& program) const {
  const std::vector<int> node_of = cluster_node_of();
  for (int r = 0; r < program.ranks; ++r)
    for (int i = 0; i < program.op_count(r); ++i) {
      const collectives::Operation& o = program.op(r, i);
      if (!collectives::in_network(o.kind)) continue;
      const auto& g = program.groups[static_cast<size_t>(o.group)];
      const bool across = std::any_of(g.begin(), g.end(), [&](int m) {
        return node_of[participants_[m]->index()] != node_of[participants_[g[0]]->index()];
      });
      const bool push = o.kind == collectives::OpKind::ReduceWrite;
      if (across != push)
        throw UserError(program.name + ": rank " + std::to_string(r) + "'s operation " + std::to_string(i) + " (" +
                        collectives::op_name(o.kind) + ") is in a group " + (across ? "across" : "inside one of") +
                        " the cluster's nodes, which takes " +
                        (across ? "only reducing writes (SHARP in the network's switches)"
                                : "NVLS's reads and multicasts, not reducing writes (its NVSwitches evict partial sums)"));
    }
}

// SHARP reserves each group's share of a switch's aggregation buffers (its
// credits) when the group is made, on every switch of its tree. A rail's
// leaf holds every group of its GPUs, as homes and merge points, and any one
// port may have to take all their blocks in flight. A spine is on the tree
// of every group with members under several leaves. Of a group on two
// leaves it is only a home (partials from the two leaves meet at the home
// alone), and its blocks are interleaved over its home ports (at least
// every port of its leaves), so of its `credits` consecutive blocks in
// flight one port holds at most credits / homes, rounded up. On three or
// more leaves a spine also merges partials bound for a leaf, and under
// fabric.home_ports=hash homes collide: then a port may hold all of them.
void CollectiveWorkload::require_aggregation_buffers(const collectives::Program& program, int credits) const {
  const uint32_t bytes = platform_->fabric_as<platforms::InfinibandFabric>().table_config().table_bytes;
  if (bytes == 0) throw UserError(program.name + " reduces in the network's switches: ib.sharp.table_bytes must be above 0");
  std::vector<bool> pushes(program.groups.size(), false);
  for (const collectives::Operation& o : program.ops)
    if (o.kind == collectives::OpKind::ReduceWrite) pushes[static_cast<size_t>(o.group)] = true;
  std::vector<int> groups(static_cast<size_t>(program.ranks), 0);  // [rank]: its groups that push
  int most = 0;
  for (size_t g = 0; g < program.groups.size(); ++g)
    if (pushes[g])
      for (int r : program.groups[g]) most = std::max(most, ++groups[static_cast<size_t>(r)]);
  const uint64_t entries = bytes / topo::MulticastFabric::kBlockBytes, need = static_cast<uint64_t>(most) * credits;
  const topo::Topology& t = platform_->topology();
  const auto leaf_of = [&t, this](int rank) {  // the leaf of the rank's adapter
    return t.peer({adapter_of(participants_[rank]->index()), hca::Adapter::kNet}).node;
  };
  const bool interleave = platform_->multicast().home_mapping() == topo::HomeMapping::Interleave;
  uint64_t spanning = 0, spine_need = 0, at_one_port = 0;  // pushing groups under several leaves
  for (size_t g = 0; g < program.groups.size(); ++g) {
    if (!pushes[g]) continue;
    std::vector<int> leaves;
    for (int r : program.groups[g])
      if (std::find(leaves.begin(), leaves.end(), leaf_of(r)) == leaves.end()) leaves.push_back(leaf_of(r));
    if (leaves.size() < 2) continue;
    uint64_t homes = 0;
    for (int leaf : leaves) homes += static_cast<uint64_t>(t.node(leaf).ports);
    const uint64_t here =
        interleave && leaves.size() == 2 ? (credits + homes - 1) / homes : static_cast<uint64_t>(credits);
    ++spanning;
    spine_need += here;
    at_one_port = std::max(at_one_port, here);
  }
  if (entries < spine_need)
    throw UserError(program.name + " needs " + std::to_string(spine_need) + " aggregation entries per spine port (" +
                    std::to_string(spanning) + " groups across several leaves, up to " + std::to_string(at_one_port) +
                    " of each one's ib.sharp.credits=" + std::to_string(credits) +
                    " blocks at one port), but ib.sharp.table_bytes=" + std::to_string(bytes) + " holds " +
                    std::to_string(entries));
  if (entries < need)
    throw UserError(program.name + " needs " + std::to_string(need) + " aggregation entries per switch port (" +
                    std::to_string(most) + " groups on a rail of ib.sharp.credits=" + std::to_string(credits) +
                    " blocks each), but ib.sharp.table_bytes=" + std::to_string(bytes) + " holds " +
                    std::to_string(entries));
}

// NetReduce on a RoCE cluster (docs/modern-machines.md, "RoCE and NetReduce
// across nodes"): each group that pushes across the nodes is a ring of its
// members in the group's order, aggregated by the FPGA beside their rail's
// leaf: the FPGA gets an aggregator array per ring (2 x window one-block
// messages), each member's adapter a queue pair to the next member and one
// from the previous, and the leaf an ACL rule per member that turns its
// connection's data to the FPGA port of its own leaf port (§4, Fig. 10B).
void CollectiveWorkload::join_netreduce_rings(const collectives::Program& program, const gpu::CoresCollective& cores,
                                              uint32_t window) {
  const topo::Topology& t = platform_->topology();
  const uint32_t clt = cfg_.get(netreduce::kCltEntries);
  const auto bridge = [&](int gpu) -> hca::RoceBridge& {
    return dynamic_cast<hca::RoceBridge&>(platform_->block(adapter_of(gpu)));
  };
  std::vector<bool> pushes(program.groups.size(), false);
  for (const collectives::Operation& o : program.ops)
    if (o.kind == collectives::OpKind::ReduceWrite) pushes[static_cast<size_t>(o.group)] = true;
  std::map<int, uint16_t> rings;  // [FPGA node]: its rings so far
  for (size_t g = 0; g < program.groups.size(); ++g) {
    if (!pushes[g]) continue;
    std::vector<int> gpus;
    for (int r : program.groups[g]) gpus.push_back(participants_[r]->index());
    const int ranks = static_cast<int>(gpus.size());
    const int leaf = t.peer({adapter_of(gpus[0]), hca::Adapter::kNet}).node;
    for (int gpu : gpus)
      if (t.peer({adapter_of(gpu), hca::Adapter::kNet}).node != leaf)
        throw UserError(program.name + " aggregates each rail in NetReduce's FPGA beside its leaf, but a rail of " +
                        std::to_string(ranks) + " nodes spans several leaves (cluster.leaf_ports), and NetReduce's hierarchy of leaf and "
                        "spine FPGAs (§3.3) is not built on a cluster");
    // The leaf port facing FPGA port k, for k its k-th node port.
    std::vector<int> to_fpga(static_cast<size_t>(t.node(leaf).ports), -1);
    int fpga = -1;
    for (int p = 0; p < t.node(leaf).ports; ++p)
      if (const topo::PortRef f = t.peer({leaf, p}); f.node >= 0 && t.node(f.node).block == topo::kinds::kLeafFpga) {
        fpga = f.node;
        to_fpga[static_cast<size_t>(f.port)] = p;
      }
    const uint16_t ring = rings[fpga]++;
    if (static_cast<uint64_t>(ring + 1) * static_cast<uint64_t>(ranks) > clt)
      throw UserError(program.name + " needs a CLT entry per connection of each ring at its rail's FPGA, " +
                      std::to_string(ring + 1) + " rings of " + std::to_string(ranks) + ", but fpga.clt.entries=" +
                      std::to_string(clt));
    dynamic_cast<netreduce::FpgaAggregator&>(platform_->block(fpga))
        .add_ring(ring, ranks, window, 1, topo::MulticastFabric::kBlockBytes, dtype_, redop_);
    for (int k = 0; k < ranks; ++k) {
      const int gpu = gpus[static_cast<size_t>(k)], next = gpus[static_cast<size_t>((k + 1) % ranks)],
                prev = gpus[static_cast<size_t>((k + ranks - 1) % ranks)];
      bridge(gpu).join_ring(ring, cores.group_out(static_cast<int>(g)), gpu::GroupWindow::kFlag - gpu::GroupWindow::kOut,
                            static_cast<uint16_t>(k), static_cast<uint16_t>(ranks), static_cast<uint32_t>(next),
                            static_cast<uint32_t>(prev));
    }
    auto& sw = dynamic_cast<eth::EthernetSwitch&>(platform_->block(leaf));
    for (int k = 0; k < ranks; ++k) {
      const int gpu = gpus[static_cast<size_t>(k)], next = gpus[static_cast<size_t>((k + 1) % ranks)];
      const int port = t.peer({adapter_of(gpu), hca::Adapter::kNet}).port;
      sw.add_acl({eth::ip_of(static_cast<uint32_t>(gpu)), eth::ip_of(static_cast<uint32_t>(next)),
                  bridge(next).ring_qpn(ring), to_fpga[static_cast<size_t>(port)]});
    }
  }
}

// Runs a program on the GPUs' cores; each rank sends on the ports that lead
// to its peer (all of them on a switched fabric; on a direct network only some do).
void CollectiveWorkload::make_cores(const collectives::Program& program) {
  const topo::Topology& t = platform_->topology();
  const int n = program.ranks;
  // NVLS's links carry no acknowledgements (multicast stores are posted, reads answered).
  endpoint_GBps_ = cluster_.empty() ? least_endpoint_GBps(n, program.groups.empty()) : cluster_endpoint_GBps(program);
  gpu::CoresParams cp;
  const uint64_t chunk = platform_->defaults().ring_chunk_bytes;
  cp.simple = {cfg_.get(gpu::kRingChunk, chunk ? chunk : gpu::kRingChunk.default_value()),
               cfg_.get(gpu::kRingSlots, program.tree_nodes ? gpu::kNcclSteps : gpu::kRingSlots.default_value())};
  cp.ll = {cfg_.get(gpu::kLlChunk), gpu::kNcclSteps};
  cp.ll128 = {cfg_.get(gpu::kLl128Chunk), gpu::kNcclSteps};
  cp.ll_max_bytes = auto_ll_max_ = cfg_.get(gpu::kAutoLlMax);
  cp.ll128_max_bytes = auto_ll128_max_ = cfg_.get(gpu::kAutoLl128Max);
  for (const auto& [key, bytes] : {std::pair{"ring.chunk_bytes", cp.simple.chunk_bytes},
                                   std::pair{"ring.ll.chunk_bytes", cp.ll.chunk_bytes},
                                   std::pair{"ring.ll128.chunk_bytes", cp.ll128.chunk_bytes}})
    if (bytes % 4 != 0) throw UserError(std::string(key) + " must be a positive multiple of 4");
  if (program.has(collectives::OpKind::ReduceRead)) require_reduction_tables(program.name);
  const bool roce = !cluster_.empty() && topo::is_roce_cluster(t);
  const bool pushes = program.has(collectives::OpKind::ReduceWrite);
  if (!cluster_.empty()) cp.push_credits = cfg_.get(roce ? hca::kNetReduceWindow : platforms::kSharpCredits);
  if (!cluster_.empty()) {
    require_groups_fit_cluster(program);
    if (pushes && !roce) require_aggregation_buffers(program, cp.push_credits);
  }
  std::vector<std::vector<std::vector<int>>> ports(n, std::vector<std::vector<int>>(n));
  for (int r = 0; r < n; ++r) {
    const int node = t.endpoints()[participants_[r]->index()];
    for (int q = 0; q < n; ++q) {
      if (q == r) continue;
      for (int p = 0; p < t.node(node).ports; ++p)
        if (t.port_on_shortest_path({node, p}, participants_[q]->index())) ports[r][q].push_back(p);
      // Topology::finalize checked that every endpoint reaches every other.
      assert(!ports[r][q].empty());
    }
  }
  auto cores = std::make_unique<gpu::CoresCollective>(program, participants_, std::move(ports), dtype_, redop_,
                                                      opt_.seed, cp, endpoint_GBps_,
                                                      program.groups.empty() ? nullptr : &platform_->multicast());
  if (!program.groups.empty() && cluster_.empty()) cores->bound_moved(nvls_moved(program));
  if (roce && pushes) join_netreduce_rings(program, *cores, static_cast<uint32_t>(cp.push_credits));
  collective_ = std::move(cores);
}

void CollectiveWorkload::make_copy(int n, bool fattree) {
  const topo::Topology& t = platform_->topology();
  // NVLS (NCCL 2.17+): multimem loads are Klenk's pull, multimem stores his multicast.
  const bool push = innet_ == collectives::InNetMethod::Push, pull = innet_ == collectives::InNetMethod::Pull;
  gpu::WaveParams wp;
  wp.waves = cfg_.get(gpu::kWaves, push ? (fattree ? 64 : 16) : pull ? (fattree ? 16 : 4) : 0);
  // Klenk §IV-F1 sizes waves to C/k of the network's table capacity C: the
  // paper's 8 kB waves (Fig. 7, 8, 10) where C holds one, else C itself in
  // whole blocks (a 4-GPU star has 4 x 256 B of table).
  const uint64_t capacity = platform_->total_table_bytes() / topo::MulticastFabric::kBlockBytes *
                            topo::MulticastFabric::kBlockBytes;
  const uint32_t paper_wave = gpu::kWaveBytes.default_value();
  wp.wave_bytes = cfg_.get(gpu::kWaveBytes, (push || pull) && capacity > 0 && capacity < paper_wave
                                                ? static_cast<uint32_t>(capacity)
                                                : paper_wave);
  const double timeout_us = cfg_.get(gpu::kCounterTimeout);
  const std::string order = cfg_.get(gpu::kCopyOrder);
  if (order != "arbitrary" && order != "address")
    throw UserError("gpu.copy_engine.order must be arbitrary or address, not '" + order + "'");
  wp.arbitrary_order = order == "arbitrary";
  if (wp.wave_bytes < platform_->format().max_payload_bytes)
    throw UserError("gpu.copy_engine.wave_bytes must be between one packet payload (" +
                    std::to_string(platform_->format().max_payload_bytes) + " B) and 64 MiB");
  wp.counter_timeout = sc_core::sc_time(timeout_us, sc_core::SC_US);
  // Blocks, table entries and the packets that carry them are the 128-byte
  // aligned unit of Klenk §IV-D.
  if (platform_->format().max_payload_bytes != topo::MulticastFabric::kBlockBytes)
    throw UserError("the copy engines reduce, multicast and write 128-byte blocks (Klenk §IV-D); "
                    "net.max_payload_bytes must be 128, not " + std::to_string(platform_->format().max_payload_bytes));
  if (push || pull) {
    require_reduction_tables(opt_.algorithm);
    // Klenk §IV-F1: waves are C/k of the network's table capacity C.
    if (wp.waves > 0 && wp.wave_bytes > platform_->total_table_bytes())
      throw UserError("a wave of " + std::to_string(wp.wave_bytes) + " B (gpu.copy_engine.wave_bytes) is larger " +
                      "than the " + std::to_string(platform_->total_table_bytes()) +
                      " B of reduction table in the whole network (switch.reduction_table.bytes on every port; Klenk " +
                      "§IV-F1 sizes waves to C/k): lower the first or raise the second");
  }
  endpoint_GBps_ = least_endpoint_GBps(n, !innet_);  // unicast writes are acknowledged
  if (!program_.ranks) {
    program_ = collectives::in_network_program(opt_.algorithm, collective_kind(opt_.collective), *innet_, n,
                                               pull && cfg_.get(gpu::kPullBarrier));
    program_.multimem = opt_.algorithm == "nvls" && cfg_.get(gpu::kNvlsMultimem);
  }
  collective_ = std::make_unique<gpu::CopyCollective>(program_, participants_, t, platform_->multicast(), dtype_,
                                                     redop_, opt_.seed, wp, endpoint_GBps_);
}

// An all-reduce schedule (MultiTree §III, or a baseline) for the NICs.
collectives::Schedule CollectiveWorkload::synthesize_schedule(int n) const {
  const topo::Topology& t = platform_->topology();
  const std::string& a = opt_.algorithm;
  const bool whole = n == static_cast<int>(t.endpoints().size());
  const bool grid = t.grid.kx > 0;
  const bool lockstep = cfg_.get(nic::kNicLockstep);
  if (!whole && (a == "multitree" || a == "multitree-msg" || a == "ring2d" || a == "hdrm"))
    throw UserError(a + " builds its schedule from the whole network; run it on all " +
                    std::to_string(t.endpoints().size()) + " nodes (leave out --gpus)");
  collectives::Schedule s;
  if (a == "ring") {
    s = collectives::ring(n);
  } else if (a == "dbtree") {
    const int pieces = cfg_.get(kDbtreePieces);
    s = collectives::double_binary_tree(n, true, pieces);
  } else if (a == "hd") {
    s = collectives::halving_doubling(n);
  } else if (a == "ring2d") {
    if (!grid) throw UserError("ring2d runs along the rows and columns of a torus or mesh, and " + opt_.platform + " has none");
    s = collectives::ring2d(t.grid.kx, t.grid.ky);
  } else if (a == "hdrm") {
    const int switches = static_cast<int>(t.switches().size());
    if (!is_bigraph(t))
      throw UserError("hdrm maps halving-doubling's ranks onto BiGraph's switches and runs only on a BiGraph "
                      "(the bigraph platform, or a file with its nodes and links)");
    s = collectives::hdrm(static_cast<int>(t.endpoints().size()) / switches, switches);
  } else {
    collectives::MultiTreeOptions mo;
    mo.nops = lockstep;
    s = collectives::multitree(t, mo);
  }
  if (a != "multitree" && a != "multitree-msg" && !lockstep) s = collectives::without_nops(s);
  const collectives::VerifyResult v = collectives::verify(s, n);
  if (!v.ok()) throw UserError("the " + a + " schedule for " + std::to_string(n) + " nodes is not an all-reduce:\n" + v.report());
  return s;
}

// The NICs run the schedule as a program (or a program file of table
// operations), which each compiles to its table.
void CollectiveWorkload::make_scheduled(int n) {
  const topo::Topology& t = platform_->topology();
  if (!program_.ranks) program_ = collectives::schedule_program(synthesize_schedule(n));
  const std::string fc = cfg_.get(nic::kNicFlowControl, opt_.algorithm == "multitree-msg" ? "message" : "packet");
  if (fc != "packet" && fc != "message") throw UserError("nic.flow_control must be packet or message, not '" + fc + "'");
  nic::StepEstimate est;
  est.buffer_flits = cfg_.get(nic::kNicBufferFlits);
  est.clock_ghz = cfg_.get(nic::kNicClock);
  est.link_GBps = t.links().front().bw_GBps;
  for (const auto& l : t.links()) est.link_GBps = std::min(est.link_GBps, l.bw_GBps);
  const bool message = fc == "message";
  endpoint_GBps_ = least_endpoint_GBps(n, false);
  if (message) {
    // One head flit per message instead of per packet.
    const auto& f = platform_->format();
    endpoint_GBps_ *= static_cast<double>(f.max_payload_bytes + f.header_bytes) / f.max_payload_bytes;
  }
  // The NICs compile the program to tables here, once; a file that does not
  // compile (schedule_of) is refused naming it, before anything runs.
  std::unique_ptr<nic::ScheduledCollective> c;
  try {
    c = std::make_unique<nic::ScheduledCollective>(program_, participant_nics(), t, dtype_, redop_, opt_.seed,
                                                   message ? nic::FlowControl::Message : nic::FlowControl::Packet,
                                                   est, endpoint_GBps_);
  } catch (const UserError& e) {
    throw UserError(opt_.algorithm + ": " + e.what());
  }
  scheduled_ = c.get();
  collective_ = std::move(c);
}

void CollectiveWorkload::make_trees(int n, int chunks_override) {
  const topo::Topology& t = platform_->topology();
  const bool dgx1 = platforms::is_dgx1(t);
  const bool blink = opt_.algorithm == "blink";
  collectives::TreeSynthesisOptions so;
  so.rings = !blink;
  so.allreduce = opt_.collective == "allreduce";
  so.platform = opt_.platform;
  so.max_payload_bytes = platform_->format().max_payload_bytes;
  so.header_bytes = platform_->format().header_bytes;
  int chunks = 1;
  if (dgx1) {
    so.blink.eps = cfg_.get(kBlinkEps);
    so.blink.minimize.threshold = cfg_.get(kBlinkThreshold);
    chunks = cfg_.get(blink ? kBlinkChunks : kRingPieces);
    if (blink) {
      miad_iterations_ = cfg_.get(kMiadIterations);
      miad_start_bytes_ = cfg_.get(kMiadStart);
      miad_step_bytes_ = cfg_.get(kMiadStep);
      if (miad_iterations_ > 0 && !opt_.vcd.empty())
        throw UserError("blink.miad_iterations rebuilds the trees' schedule every iteration, which a --vcd waveform "
                        "cannot follow; leave out one of them");
      // Blink A.3's hybrid is a broadcast within one server.
      if (topo::dgx1_servers(t).size() == 1) so.hybrid = cfg_.get(kBlinkHybrid);
    }
    if (chunks_override > 0) chunks = chunks_override;
  } else {
    chunks = cfg_.get(kBlinkChunks, 1);
  }
  collectives::TreeSynthesis ts = collectives::synthesize_trees(t, n, so);
  bound_note_ = ts.bound_note;
  trees_text_ = ts.text;
  endpoint_GBps_ = dgx1 ? ts.algbw_bound_GBps : least_endpoint_GBps(n, false);
  int units = 0, most = 0;
  for (const auto& sh : ts.shares) {
    units += sh.units;
    most = std::max(most, sh.units);
  }
  max_tree_share_ = static_cast<double>(most) / units;
  collectives::Schedule s = collectives::tree_schedule(opt_.algorithm, n, ts.shares, chunks,
                                                       so.allreduce ? collectives::kNil : collectives::kTreeRoot);
  const collectives::VerifyResult v = so.allreduce ? collectives::verify(s, n) : collectives::verify_broadcast(s, n);
  if (!v.ok()) throw UserError("the " + opt_.algorithm + " schedule is not a correct " + opt_.collective + ":\n" + v.report());
  nic::Execution x;
  x.dataflow = true;
  x.ports_to = std::move(ts.ports_to);
  x.tree_ports = std::move(ts.tree_ports);
  x.algbw_bound_GBps = ts.algbw_bound_GBps;
  nic::StepEstimate est;  // a lockstep NIC's NOP load; dataflow mode issues no NOPs
  est.buffer_flits = 318;
  est.clock_ghz = 1.0;
  est.link_GBps = t.links().front().bw_GBps;
  program_ = collectives::schedule_program(s);
  auto c = std::make_unique<nic::ScheduledCollective>(program_, participant_nics(), t, dtype_, redop_, opt_.seed,
                                                      nic::FlowControl::Packet, est, endpoint_GBps_, std::move(x));
  scheduled_ = c.get();
  collective_ = std::move(c);
}

std::vector<nic::Nic*> CollectiveWorkload::participant_nics() const {
  std::vector<nic::Nic*> nics;
  for (gpu::Gpu* g : participants_) nics.push_back(&platform_->nic(g->index()));
  return nics;
}

void CollectiveWorkload::print(const std::string& what, std::ostream& os) const {
  if (what == "program") {
    if (!program_.ranks)
      throw UserError("--print-program shows the programs the GPUs' cores and copy engines run (the software ring, "
                      "push, pull, multicast, nvls, --algorithm FILE); algorithm '" + opt_.algorithm + "' on " +
                      opt_.platform + " has none yet");
    os << collectives::write_program(program_);
    return;
  }
  if (what == "trees") {
    if (trees_text_.empty())
      throw UserError("--print-trees shows Blink's trees or a DGX-1's rings; algorithm '" + opt_.algorithm + "' on " +
                      opt_.platform + " builds none");
    os << trees_text_;
    return;
  }
  if (!scheduled_)
    throw UserError("--print-schedule shows NIC schedule tables; algorithm '" + opt_.algorithm +
                    "' runs none (use ring with -c ring.engine=nic, dbtree, hd, ring2d, hdrm, multitree)");
  os << collectives::format_tables(scheduled_->schedule());
}

void CollectiveWorkload::start(size_t i, std::function<void()> on_done) {
  const auto& ends = platform_->link_ends();
  running_.link_bytes.resize(ends.size());
  for (size_t k = 0; k < ends.size(); ++k) running_.link_bytes[k] = ends[k].port->bytes_sent();
  running_.t0 = sc_core::sc_time_stamp();
  for (gpu::Gpu* g : participants_) g->memory().set_origin(running_.t0);
  running_.tables = platform_->table_totals();
  running_.latency = platform_->packet_latency();
  running_.done = false;
  collective_->start(sizes_[i], [this, on_done = std::move(on_done)] {
    running_.done = true;
    running_.t1 = sc_core::sc_time_stamp();
    on_done();
  });
}

// The row of the point that ended: the machine's counters (links, tables,
// packets) count everything on it in the meantime, another job's traffic too.
Row CollectiveWorkload::finish(size_t i, std::ostream& notes) {
  const uint64_t bytes = sizes_[i];
  Row r(schema_);
  const double time_us = (running_.t1 - running_.t0).to_seconds() * 1e6;
  fill_nccl(r, bytes, collectives::dtype_name(dtype_), collective_->redop(), time_us, collective_->busbw_factor(),
            collective_->wrong(), collective_->bound_us(bytes));
  const auto& ends = platform_->link_ends();
  for (size_t k = 0; k < ends.size(); ++k) r.link_bytes.push_back(ends[k].port->bytes_sent() - running_.link_bytes[k]);
  if (!cluster_.empty()) {
    // Which network limited the time: the busiest link direction inside the
    // nodes (NVLink) and between them, as a fraction of the time.
    double busiest[2] = {0, 0};
    for (size_t k = 0; k < ends.size(); ++k) {
      double& b = busiest[between_nodes_[k]];
      b = std::max(b, static_cast<double>(r.link_bytes[k]) / (ends[k].port->bw_GBps() * time_us * 1e3));
    }
    r.set("nvlink_busiest", busiest[0]).set("network_busiest", busiest[1]);
  }
  const auto tables1 = platform_->table_totals();
  const auto latency1 = platform_->packet_latency();
  const uint64_t packets = latency1.first - running_.latency.first;
  r.set("packets", packets);
  r.set("avg_packet_latency_ns", packets ? (latency1.second - running_.latency.second) / packets : 0.0);
  const auto& t0 = running_.tables;
  const platforms::GpuMachine::TableTotals tables{tables1.hits - t0.hits, tables1.misses - t0.misses,
                                                tables1.evictions - t0.evictions, tables1.stalls - t0.stalls,
                                                tables1.completions - t0.completions};
  r.details["reduction_tables"] = {{"hits", tables.hits},
                                   {"misses", tables.misses},
                                   {"evictions", tables.evictions},
                                   {"stalls", tables.stalls},
                                   {"completions", tables.completions}};
  if (reduces_in_switches())
    notes << "#   reduction tables: " << tables.hits << " hits, " << tables.misses << " misses, " << tables.evictions
          << " evictions, " << tables.stalls << " stalls, " << tables.completions << " completions; packets: "
          << packets << " delivered, " << std::fixed << std::setprecision(0) << r["avg_packet_latency_ns"]
          << " ns mean latency\n";
  return r;
}

std::vector<Row> CollectiveWorkload::run_point(size_t i, Runner& run, std::ostream& notes) {
  const uint64_t bytes = sizes_[i];
  // One run, or Blink's MIAD chunk search over several (§4.2.1): the last
  // is reported; every run's wrong elements count.
  const int iterations = miad_iterations_ > 0 ? miad_iterations_ : 1;
  uint64_t chunk = miad_start_bytes_, best_chunk = 0, wrong_before = 0;
  double best_GBps = 0;
  enum class Miad { Increase, Decrease, Steady } phase = Miad::Increase;
  std::optional<Row> r;
  for (int it = 0; it < iterations; ++it) {
    int chunks = 0;
    if (miad_iterations_ > 0) {
      const double per_tree = static_cast<double>(bytes) * max_tree_share_ / static_cast<double>(chunk);
      chunks = static_cast<int>(std::min(1024.0, std::max(1.0, std::round(per_tree))));
      collective_.reset();
      make_trees(participants(), chunks);
    }
    start(i, [] { sc_core::sc_pause(); });
    run.run_until([&] { return running_.done || !collective_->error().empty(); }, "size " + size_label(bytes));
    if (!collective_->error().empty()) throw UserError(collective_->error() + " during size " + size_label(bytes));
    std::ostringstream table_note;
    r = finish(i, table_note);
    // A cluster's adapters acknowledge writes before they land, so the
    // last slot-freeing flags may still cross the network: they land before
    // the next size starts (its time counts from then).
    if (platform_->packets_in_use() != 0)
      run.run_until([&] { return platform_->packets_in_use() == 0; }, "the network draining after size " + size_label(bytes),
                    sc_core::sc_time(100, sc_core::SC_NS));
    if (miad_iterations_ > 0) {
      const double algbw = (*r)["algbw_GBps"];
      notes << "# MIAD iteration " << it + 1 << ": chunk " << chunk << " B (" << chunks << " per tree), "
            << std::fixed << std::setprecision(2) << (*r)["time_us"] << " us, " << algbw << " GB/s\n";
      // Multiplicative increase while throughput rises; once it falls,
      // additive decrease from the best size while it rises; then steady.
      const bool better = algbw > best_GBps;
      if (better) {
        best_GBps = algbw;
        best_chunk = chunk;
      }
      if (phase == Miad::Increase && better) {
        chunk *= 2;
      } else if (phase != Miad::Steady && (better || phase == Miad::Increase) && chunk > miad_step_bytes_ &&
                 best_chunk > miad_step_bytes_) {
        chunk = (phase == Miad::Increase ? best_chunk : chunk) - miad_step_bytes_;
        phase = Miad::Decrease;
      } else {
        phase = Miad::Steady;
        chunk = best_chunk;
      }
      if (it + 1 < iterations) wrong_before += r->wrong();
    }
    if (it + 1 == iterations) notes << table_note.str();
  }
  r->set("wrong", r->wrong() + wrong_before);
  return {std::move(*r)};
}

void CollectiveWorkload::print_header(std::ostream& os) const {
  const auto& t = platform_->topology();
  os << "# incsim: " << opt_.collective << " " << opt_.algorithm << " on " << participants() << " of "
     << t.endpoints().size() << " GPUs, platform " << t.name << " (" << count_of(t.switches().size(), "switch", "switches") << ", "
     << t.links().size() << " links), seed " << opt_.seed << "\n";
  if (!cluster_note_.empty()) os << "# cluster: " << cluster_note_ << "\n";
  if (!bound_note_.empty()) {
    os << "# bound: " << std::fixed << std::setprecision(1) << endpoint_GBps_ << " GB/s algbw (" << bound_note_ << ")\n";
  } else if (!cluster_note_.empty()) {  // cluster_endpoint_GBps: already the busbw the busiest GPU's links allow
    os << "# bound: " << std::fixed << std::setprecision(1) << endpoint_GBps_
       << " GB/s busbw (the busiest GPU's bytes over NVLink and through its adapter, at their payload rates)\n";
  } else {
    os << "# bound: " << std::fixed << std::setprecision(1) << endpoint_GBps_ << " GB/s payload per GPU ("
       << (scheduled_ ? (scheduled_->flow_control() == nic::FlowControl::Message
                             ? "links, one head flit per message; NIC messages are posted"
                             : "links less header flits; NIC messages are posted")
           : !innet_ ? "links less header flits and write acks"
                                      : "links less header flits; multicast writes are posted")
       << ")";
    // What that allows this algorithm (the bound column's 100%): a ring
    // moves 2(n-1)/n of the size per GPU, push and NVLS the size once.
    if (collective_ && collective_->bound_us(sizes_.back()) > 0)
      os << ", so " << (is_program_file(opt_.algorithm) ? std::string("the program") : opt_.algorithm) << "'s busbw is at most "
         << static_cast<double>(sizes_.back()) / (collective_->bound_us(sizes_.back()) * 1e3) * collective_->busbw_factor()
         << " GB/s";
    os << "\n";
  }
  if (scheduled_) {
    const auto& s = scheduled_->schedule();
    uint64_t entries = 0;
    for (const auto& tb : s.tables) entries = std::max<uint64_t>(entries, tb.size());
    os << "# schedule: " << s.algorithm << " on the NICs, "
       << (scheduled_->dataflow() ? "dataflow (no lockstep), " : "") << s.steps << " steps";
    if (s.reduce_steps) os << " (" << s.reduce_steps << " reduce-scatter)";
    os << ", " << s.flows.size() << " flows, up to " << entries << " table entries per node ("
       << s.count(collectives::Op::Nop) << " NOPs in all)\n";
  }
  if (reduces_in_switches()) print_sizing(os);
  if (program_.protocol_by_size)
    os << "# protocol by size (ring.protocol=auto): LL up to " << size_label(auto_ll_max_) << ", LL128 up to "
       << size_label(auto_ll128_max_) << ", Simple above\n";
  if (pxn_relays_)
    os << "# pxn (cluster.pxn): " << pxn_relays_ << " transfers per pass between GPUs on other rails of other nodes "
       << "relayed over NVLink by the GPU on the destination's rail, through its adapter (NCCL's PXN)\n";
  if (is_program_file(opt_.algorithm)) {  // a program file
    os << "# program: " << program_.name << ", " << program_.ops.size() << " operations on the GPUs' "
       << (copy_engines_ ? std::string("copy engines")
                         : std::string("cores, ") + (program_.protocol_by_size ? std::string("protocol by size")
                                                             : std::string(collectives::protocol_name(program_.ops.front().proto)) + " protocol"))
       << "\n";
  }
}

// The Little's-law table sizes of Klenk Eq. (1) and (2) for this platform,
// beside the configured size, so a sensitivity sweep can be read against them.
void CollectiveWorkload::print_sizing(std::ostream& os) const {
  const auto& t = platform_->topology();
  const int n = participants();
  const auto& sw = platform_->table_config();
  const auto& ll = platform_->little_law();
  const int node = t.endpoints()[0];
  uint64_t ports = 0;
  for (int s : t.switches()) ports += t.node(s).ports;
  const int access = t.node(node).ports;
  os << std::setprecision(0) << "# table sizing (Little's law; B_in " << ll.b_in_GBps << " GB/s, d_max "
     << count_of(ll.d_max, "switch", "switches") << ", L_hop " << std::setprecision(1) << ll.l_hop_ns << " ns, L_GPU " << ll.l_gpu_ns << " ns): ";
  if (innet_ == collectives::InNetMethod::Pull) {
    const double c = collectives::pull_table_bytes(ll.b_in_GBps, n, ll.d_max, ll.l_hop_ns, ll.l_gpu_ns);
    os << std::setprecision(0) << "Eq. (1) pull C_min = " << c << " B per GPU = " << c / access << " B per access port";
  } else {
    const double c = collectives::push_table_bytes(ll.b_in_GBps, ll.d_max, ll.l_hop_ns);
    os << std::setprecision(0) << "Eq. (2) push C_min = " << c << " B = " << c / ports << " B per port over " << ports
       << " ports";
  }
  os << "; configured " << sw.table_bytes << " B per port\n";
}


void CollectiveWorkload::config_json(nlohmann::ordered_json& config) const {
  config["collective"] = opt_.collective;
  config["algorithm"] = opt_.algorithm;
  config["gpus"] = participants();
  config["dtype"] = collectives::dtype_name(dtype_);
  config["redop"] = collective_->redop();
  config["sizes"] = opt_.sizes;
}

void CollectiveWorkload::summary_json(nlohmann::ordered_json& top) const {
  top["endpoint_payload_GBps"] = endpoint_GBps_;
}

}  // namespace incsim::tb
