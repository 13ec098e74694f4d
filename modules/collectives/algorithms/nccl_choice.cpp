// What NCCL itself runs: per size the algorithm and protocol its tuning
// model picks (collectives/nccl_tuning.h), run by the same programs as
// `--algorithm ring` and `nvls` (docs/hardware.md, "NCCL's choice").
#include <algorithm>
#include <iomanip>
#include <sstream>
#include <utility>

#include "collectives/algorithms/common.h"
#include "collectives/layout.h"
#include "collectives/nccl_tuning.h"
#include "collectives/program_synthesis.h"
#include "core/error.h"

namespace incsim::collectives::builtin {

namespace {

constexpr const char* kNvlinkNodes = "hgx-a100, hgx-h100, hgx-b200, nvl72";

const Param<std::string> kNcclAlgorithms{
    "nccl.algorithms", "ring,nvls", Range::none(),
    "the algorithms nccl picks from, comma-separated (ring, nvls), as NCCL_ALGO limits NCCL's: ring for a table run "
    "with NCCL_ALGO=Ring"};

// nccl.algorithms as (ring, nvls) allowed; UserError for another name.
std::pair<bool, bool> allowed(const Site& s) {
  bool ring = false, nvls = false;
  std::stringstream list(s.cfg.get(kNcclAlgorithms));
  for (std::string a; std::getline(list, a, ',');) {
    if (a == "ring") ring = true;
    else if (a == "nvls") nvls = true;
    else throw UserError("nccl.algorithms lists ring and nvls, comma-separated, not '" + a + "'");
  }
  if (!ring && !nvls) throw UserError("nccl.algorithms must list ring, nvls or both");
  return {ring, nvls};
}

// NCCL 2.27+ on one node runs its symmetric kernels whenever both buffers
// are in registered windows (nccl_tuning.h, SymKernel).
const Param<bool> kNcclSymmetric{
    "nccl.symmetric", false, Range::none(),
    "the buffers are in windows registered with ncclCommWindowRegister (nccl-tests -R 2, NCCL 2.27+), so nccl runs "
    "NCCL's symmetric kernels, picked by their own model (src/symmetric.cc), for an all-gather and a float sum's "
    "all-reduce or reduce-scatter; false: cudaMalloc'd buffers, NCCL's ring and NVLS"};

// The model for a site's GPUs: links per GPU are its ports (one node: no adapter).
NcclTuning tuning(const Site& s) {
  GpuArch arch{};
  nccl_arch(s.graph.family, arch);
  return NcclTuning(arch, s.ranks(), s.graph.node(s.graph.endpoints().front()).ports);
}

class NcclPick : public Tuner {
 public:
  explicit NcclPick(const Site& s)
      : site_(s), model_(tuning(s)), allowed_(allowed(s)), registered_(s.cfg.get(kNcclSymmetric)) {}
  int runs() const override { return 1; }
  Synthesis next(int, uint64_t bytes) override {
    if (registered_) sym_ = model_.choose_symmetric(site_.collective, bytes, site_.float_sum);
    symmetric_ = registered_ && sym_.model_us >= 0;
    if (symmetric_) return symmetric();
    choice_ = model_.choose(site_.collective, bytes, allowed_.first, allowed_.second);
    if (choice_.algo == NcclAlgo::Nvls) {
      Synthesis out = find_algorithm("nvls", Family::GpuFabric)->synthesize(site_);
      choice_.channels = channel_parts(out.program).channels;  // nvls.channels: NCCL's NVLS thread blocks
      return out;
    }
    // One ring per link stands for NCCL's channels, whose stores NVLink
    // spreads over every link; a small size gets fewer, as in enqueue.cc.
    choice_.channels = std::min(choice_.channels, nccl_channels(site_));
    Synthesis out;
    out.program = ring_program(site_.collective, site_.ranks(), choice_.channels);
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
  std::pair<bool, bool> allowed_;  // nccl.algorithms: ring, nvls
  bool registered_;                // nccl.symmetric
  NcclChoice choice_;
  bool symmetric_ = false;  // this size runs a symmetric kernel
  SymChoice sym_;
};

class Nccl : public Algorithm {
 public:
  Nccl()
      : Algorithm({"nccl", "allreduce, allgather, reducescatter", "", Family::GpuFabric, kNvlinkNodes,
                   "the GPUs' cores and, for nvls, the switches' reduction and multicast tables",
                   "per size the algorithm and protocol NCCL's tuning model picks (ring LL, LL128, Simple; nvls), as "
                   "nccl-tests runs by default (NCCL src/graph/tuning.cc, src/enqueue.cc)",
                   15}) {}
  bool in_switches() const override { return true; }
  std::string cannot_run(const Site& s) const override {
    GpuArch arch{};
    if (s.cluster() || !nccl_arch(s.graph.family, arch))
      return "nccl runs NCCL's tuning model on one NVLink node: " + std::string(kNvlinkNodes) + " (not " +
             s.platform + ")";
    return nvls_possible(s) ? nvls()->cannot_run(s) : "";
  }
  Needs needs(const topo::Topology& t, Collective c) const override {
    GpuArch arch{};
    return nccl_arch(t.family, arch) && arch != GpuArch::Ampere ? nvls()->needs(t, c) : Needs{};
  }
  // The program of the largest size NCCL's channels fill: its header's.
  Synthesis synthesize(const Site& s) const override {
    NcclPick pick(s);
    return pick.next(0, 1ull << 30);
  }
  std::unique_ptr<Tuner> tuner(const Site& s, const Synthesis&) const override {
    return std::make_unique<NcclPick>(s);
  }

 private:
  static const Algorithm* nvls() { return find_algorithm("nvls", Family::GpuFabric); }
  static bool nvls_possible(const Site& s) { return tuning(s).nvls().channels > 0 && allowed(s).second; }
};

}  // namespace

INCSIM_ALGORITHMS(nccl_choice) { r.add(std::make_unique<Nccl>()); }

}  // namespace incsim::collectives::builtin
