// What NCCL itself runs: per size the algorithm and protocol its tuning
// model picks (collectives/nccl_tuning.h), run by the same programs as
// `--algorithm ring`, `nvls`, and across a cluster's nodes `tree` and
// `nvlstree` (docs/hardware.md, "NCCL's choice").
#include <algorithm>
#include <iomanip>
#include <sstream>
#include <utility>

#include "collectives/algorithms/common.h"
#include "collectives/layout.h"
#include "collectives/nccl_tuning.h"
#include "collectives/program_synthesis.h"
#include "core/error.h"
#include "topology/cluster.h"

namespace incsim::collectives::builtin {

namespace {

constexpr const char* kNvlinkNodes = "hgx-a100, hgx-h100, hgx-b200, nvl72, cluster";

const Param<std::string> kNcclAlgorithms{
    "nccl.algorithms", "ring,tree,nvls,nvlstree", Range::none(),
    "the algorithms nccl picks from, comma-separated (ring, tree, nvls, nvlstree), as NCCL_ALGO limits NCCL's: ring "
    "for a table run with NCCL_ALGO=Ring. On one node NCCL weighs ring and nvls, across nodes ring, tree and "
    "nvlstree"};

// nccl.algorithms as a set; UserError for another name.
NcclAlgos allowed(const Site& s) {
  NcclAlgos set = 0;
  std::stringstream list(s.cfg.get(kNcclAlgorithms));
  for (std::string a; std::getline(list, a, ',');) {
    NcclAlgos bit = 0;
    for (NcclAlgo n : {NcclAlgo::Tree, NcclAlgo::Ring, NcclAlgo::Nvls, NcclAlgo::NvlsTree})
      if (a == nccl_algo_name(n)) bit = nccl_algo_bit(n);
    if (!bit) throw UserError("nccl.algorithms lists ring, tree, nvls and nvlstree, comma-separated, not '" + a + "'");
    set |= bit;
  }
  if (!set) throw UserError("nccl.algorithms must list one of ring, tree, nvls and nvlstree");
  return set;
}

// NCCL 2.27+ on one node runs its symmetric kernels whenever both buffers
// are in registered windows (nccl_tuning.h, SymKernel).
const Param<bool> kNcclSymmetric{
    "nccl.symmetric", false, Range::none(),
    "the buffers are in windows registered with ncclCommWindowRegister (nccl-tests -R 2, NCCL 2.27+), so nccl runs "
    "NCCL's symmetric kernels, picked by their own model (src/symmetric.cc), for an all-gather and a float sum's "
    "all-reduce or reduce-scatter on one node (across nodes NCCL runs none); false: cudaMalloc'd buffers, NCCL's "
    "ring and NVLS"};

const Param<bool> kNcclCollnet{
    "nccl.collnet", false, Range::none(),
    "NCCL_COLLNET_ENABLE=1 on an InfiniBand cluster (SHARP): across nodes nccl also weighs NVLS with the rail "
    "leaves adding the nodes' sums, run as nvlssharp; false: NCCL's default, no CollNet"};

// nccl.algorithms less what incsim cannot run here: its nvlstree and
// nvlssharp run on a cluster's whole nodes only.
NcclAlgos runnable(const Site& s) {
  const NcclAlgos all = allowed(s);
  if (s.one_node() || s.whole_nodes()) return all;
  return all & ~(nccl_algo_bit(NcclAlgo::NvlsTree) | nccl_algo_bit(NcclAlgo::Nvls));
}

// The model for a site's GPUs: a GPU's NVLinks are its ports but its
// adapter's, whose PCIe link and network port (port 1, topology/cluster.h)
// are what NCCL sees of the network; its nodes are those the ranks fill.
NcclTuning tuning(const Site& s) {
  GpuArch arch{};
  nccl_arch(s.graph.family, arch);
  const topo::Topology& t = s.graph;
  const int gpu = t.endpoints()[static_cast<size_t>(s.gpus.front())];
  NcclNet net;
  int links = 0;
  for (int port = 0; port < t.node(gpu).ports; ++port) {
    const int peer = t.peer({gpu, port}).node;
    if (!topo::kinds::is_adapter(t.node(peer).block)) {
      ++links;
      continue;
    }
    net.pcie_GBps = t.links()[t.link_at({gpu, port})].bw_GBps;
    net.nic_GBps = t.links()[t.link_at({peer, 1})].bw_GBps;
  }
  net.nodes = s.rank_nodes();
  net.collnet = net.nodes > 1 && s.cfg.get(kNcclCollnet);
  net.x86 = t.family != "nvl72";  // GB200's hosts are Grace
  return NcclTuning(arch, s.ranks(), links, net);
}

// The algorithm that runs NCCL's NVLS or NVLSTree: on one node nvls,
// across nodes nvlstree, and NVLS with SHARP (collnetEnable) nvlssharp.
const Algorithm* runner(NcclAlgo a, bool one) {
  return find_algorithm(a == NcclAlgo::NvlsTree ? "nvlstree" : one ? "nvls" : "nvlssharp", Family::GpuFabric);
}

class NcclPick : public Tuner {
 public:
  explicit NcclPick(const Site& s)
      : site_(s),
        model_(tuning(s)),
        allowed_(runnable(s)),
        registered_(s.cfg.get(kNcclSymmetric) && model_.nodes() == 1) {}
  int runs() const override { return 1; }
  Synthesis next(int, uint64_t bytes) override {
    if (registered_) sym_ = model_.choose_symmetric(site_.collective, bytes, site_.float_sum);
    symmetric_ = registered_ && sym_.model_us >= 0;
    if (symmetric_) return symmetric();
    choice_ = model_.choose(site_.collective, bytes, allowed_);
    if (choice_.algo == NcclAlgo::Nvls || choice_.algo == NcclAlgo::NvlsTree) {
      Synthesis out = runner(choice_.algo, model_.nodes() == 1)->synthesize(site_);
      choice_.channels = channel_parts(out.program).channels;  // nvls.channels, ring.channels: its thread blocks
      return out;
    }
    // One ring per link (on a cluster, two per adapter) stands for NCCL's
    // channels, whose stores NVLink spreads over every link; a small size
    // gets fewer, as in enqueue.cc.
    choice_.channels = std::min(choice_.channels, nccl_channels(site_));
    const int nodes = model_.nodes(), per_node = site_.ranks() / nodes;
    Synthesis out;
    out.program = choice_.algo == NcclAlgo::Tree ? cluster_tree_program(nodes, per_node, choice_.channels)
                  : nodes > 1 ? cluster_ring_program(site_.collective, nodes, per_node, choice_.channels)
                              : ring_program(site_.collective, site_.ranks(), choice_.channels);
    for (Operation& o : out.program.ops) o.proto = choice_.proto;
    return out;
  }
  std::string ran(int, double, double) override {
    std::ostringstream os;
    os << "#   nccl's choice: " << choice() << std::fixed << std::setprecision(1);
    if (!symmetric_) os << " (NCCL's model " << choice_.model_us << " us)\n";
    else os << " (NCCL's symmetric model " << sym_.model_us << " us"
            << (sym_kernel(sym_.kernel).ll && sym_kernel(sym_.kernel).multimem
                    ? "; its multicast run as stores to each peer, which bring each GPU the same bytes"
                    : "")
            << ")\n";
    return os.str();
  }
  std::string choice() const override {
    if (symmetric_)
      return std::string(sym_kernel(sym_.kernel).name) + " (" + sym_algorithm() + "), " +
             std::to_string(sym_.blocks) + (sym_.blocks == 1 ? " block" : " blocks");
    return std::string(nccl_algo_name(choice_.algo)) + " " + protocol_name(choice_.proto) + ", " +
           std::to_string(choice_.channels) + (choice_.channels == 1 ? " channel" : " channels");
  }

 private:
  // The symmetric kernel NCCL picks, as a program. NVLink spreads a thread
  // block's stores to a peer over every link, where the cores send a
  // channel's on one: the stores run on a channel per link (ring.channels),
  // or per block where NCCL's model gives more. The multimem kernels'
  // reads and multicasts take every link already: NVLS's program on their
  // blocks. An LL multicast runs as LL stores to each peer.
  Synthesis symmetric() const {
    Synthesis out;
    const int n = site_.ranks(), stores = std::max(sym_.blocks, nccl_channels(site_));
    const Protocol p = sym_kernel(sym_.kernel).ll ? Protocol::LL : Protocol::Simple;
    const std::string a = sym_algorithm();
    out.program = a == "oneshot" ? oneshot_allreduce_program(n, stores, p)
                  : a == "nvls"  ? nvls_program(site_.collective, n, sym_.blocks, true)
                                 : direct_program(site_.collective, n, stores, p);
    return out;
  }
  // The algorithm that runs the symmetric kernel's program on its own.
  std::string sym_algorithm() const {
    const SymKernelInfo& k = sym_kernel(sym_.kernel);
    if (k.ll && k.collective == Collective::AllReduce) return "oneshot";
    return k.multimem && !k.ll ? "nvls" : "direct";
  }

  const Site& site_;
  NcclTuning model_;
  NcclAlgos allowed_;  // nccl.algorithms, those that run here
  // nccl.symmetric, on one node: NCCL runs its symmetric kernels on one
  // node only (2.27 init.cc: symmetricSupport needs nNodes == 1).
  bool registered_;
  NcclChoice choice_;
  bool symmetric_ = false;  // this size runs a symmetric kernel
  SymChoice sym_;
};

class Nccl : public Algorithm {
 public:
  Nccl()
      : Algorithm({"nccl", "allreduce, allgather, reducescatter", "", Family::GpuFabric, kNvlinkNodes,
                   "the GPUs' cores and, for nvls, the switches' reduction and multicast tables",
                   "per size the algorithm and protocol NCCL's tuning model picks (ring LL, LL128, Simple; nvls; "
                   "across a cluster's nodes tree and nvlstree too), as nccl-tests runs by default (NCCL "
                   "src/graph/tuning.cc, src/enqueue.cc)",
                   15}) {}
  bool in_switches() const override { return true; }
  bool crosses_nodes() const override { return true; }
  std::string cannot_run(const Site& s) const override {
    GpuArch arch{};
    if (!nccl_arch(s.graph.family, arch))
      return "nccl runs NCCL's tuning model on NVLink nodes of Ampere or later: hgx-a100, hgx-h100, hgx-b200, nvl72 "
             "and clusters of them (not " +
             (s.cluster() ? "a cluster whose nodes are of family " + s.graph.family : s.platform) + ")";
    const int nodes = s.rank_nodes();
    const bool one = nodes == 1, collnet = !one && s.cfg.get(kNcclCollnet);
    if (nodes == 0)
      return "across a cluster's nodes nccl runs on as many GPUs in each node, the ranks node by node (a cluster's "
             "whole nodes, or one GPU per node as --tp's data-parallel groups), as NCCL's graphs are searched per "
             "node";
    if (collnet && s.roce())
      return "nccl.collnet weighs NVLS with SHARP in the InfiniBand leaves, which a RoCE cluster "
             "(cluster.network=roce) does not have";
    if (tuning(s).nvls().channels == 0) return "";
    // The NVLS algorithms the model may pick must run here.
    const NcclAlgos nvls = nccl_algo_bit(NcclAlgo::Nvls), tree = nccl_algo_bit(NcclAlgo::NvlsTree);
    const NcclAlgos may = runnable(s) & (one ? nvls : tree | (collnet ? nvls : 0));
    for (NcclAlgo a : {NcclAlgo::Nvls, NcclAlgo::NvlsTree})
      if (may & nccl_algo_bit(a))
        if (std::string why = runner(a, one)->cannot_run(s); !why.empty()) return why;
    return "";
  }
  // NVLS's and NVLSTree's, which share them (pull_tables: the multimem loads).
  Needs needs(const topo::Topology& t, Collective c) const override {
    GpuArch arch{};
    if (!nccl_arch(t.family, arch) || arch == GpuArch::Ampere) return {};
    const bool one = topo::cluster_nodes(t).empty();
    return runner(one ? NcclAlgo::Nvls : NcclAlgo::NvlsTree, one)->needs(t, c);
  }
  // The program of the largest size NCCL's channels fill: its header's.
  Synthesis synthesize(const Site& s) const override {
    NcclPick pick(s);
    return pick.next(0, 1ull << 30);
  }
  std::unique_ptr<Tuner> tuner(const Site& s, const Synthesis&) const override {
    return std::make_unique<NcclPick>(s);
  }
};

}  // namespace

INCSIM_ALGORITHMS(nccl_choice) { r.add(std::make_unique<Nccl>()); }

}  // namespace incsim::collectives::builtin
