// Klenk's in-network collectives (§IV) and NVLink SHARP: the switches'
// multicast and reduction tables do the work, the GPUs' copy engines (for
// NVLS, as NCCL runs it, their cores) issue it.
#include "collectives/algorithms/common.h"
#include "collectives/nccl.h"
#include "collectives/program_synthesis.h"
#include "core/error.h"

namespace incsim::collectives::builtin {

namespace {

const Param<bool> kPullBarrier{"pull.barrier", true, Range::none(),
                               "pull all-reduce starts with a barrier, an all-reduce on a flag (Klenk §IV-B, §VI-A: "
                               "without it pulls may read stale data)"};
// Who issues NVLS's multimem loads and stores: NCCL's kernels on the SMs
// (the cores, NCCL_NVLS_NCHANNELS thread blocks), or the copy engines as
// Klenk's DMA-initiated pull and multicast. The cores by default, as NCCL
// runs it: its NVLS all-reduce (src/device/all_reduce.h, RunWorkColl for
// NCCL_ALGO_NVLS) gives each channel's thread block reduce warps whose
// reduceCopy issues multimem.ld_reduce (src/device/reduce_kernel.h,
// applyLoadMultimem) and multimem.st (src/device/common_kernel.h,
// multimem_st_global); no copy engine takes part.
const Param<std::string> kNvlsEngine{
    "nvls.engine", "cores", Range::none(),
    "what issues nvls's multimem loads and stores: cores (the SMs' thread blocks, as NCCL runs it, nvls.channels of "
    "them) or copy (the copy engines, Klenk's DMA-initiated pull and multicast)"};
// NCCL's NVLS channels on one node (src/transport/nvls.cc, ncclNvlsInit and
// ncclNvlsTuning): NVLS_NCHANNELS_SM90 = 16 on Hopper (NCCL_NVLS_NCHANNELS'
// default from 2.17); on Blackwell NVLS_NCHANNELS_SM100_NVL = 24 for one
// node or one NVLink domain (since 2.27; 32 across nodes); enqueue.cc runs
// NVLS on all of them.
const Param<int> kNvlsChannels{"nvls.channels", 16, Range::at_least(1).at_most(1024),
                               "thread blocks that run nvls on the cores (nvls.engine=cores; NCCL's "
                               "NCCL_NVLS_NCHANNELS default on one node: 16 on Hopper and the papers' platforms, 24 "
                               "on Blackwell, hgx-b200 and nvl72)",
                               "16; hgx-b200 and nvl72 24"};
int nvls_channels(const topo::Topology& t) {
  return t.family == topo::Topology::kHgxB200 || t.family == topo::Topology::kNvl72 ? 24 : 16;
}

class InSwitches : public Algorithm {
 public:
  InSwitches(Info info, std::optional<InNetMethod> method) : Algorithm(info), method_(method) {}
  bool in_switches() const override { return true; }
  std::string cannot_run(const Site& s) const override {
    if (const std::string why = cluster_refusal(s, name(), true); !why.empty()) return why;
    return switch_tables_refusal(s, name());
  }
  Needs needs(const topo::Topology& t, Collective c) const override {
    switch (method(c)) {
      case InNetMethod::Push: return push_tables(t);
      case InNetMethod::Pull: return pull_tables(t);
      case InNetMethod::Multicast: break;
    }
    return {TableRule::None, 0, true, true};
  }
  Synthesis synthesize(const Site& s) const override {
    const InNetMethod m = method(s.collective);
    Synthesis out;
    out.program = in_network_program(name(), s.collective, m, s.ranks(),
                                     m == InNetMethod::Pull && s.cfg.get(kPullBarrier));
    return out;
  }

 protected:
  // Push and pull reduce (all-reduce, NVLS's reduce-scatter); an all-gather
  // and a broadcast multicast.
  InNetMethod method(Collective c) const {
    return method_ ? *method_ : c == Collective::AllGather ? InNetMethod::Multicast : InNetMethod::Pull;
  }

 private:
  std::optional<InNetMethod> method_;  // none: by collective (NVLS)
};

// NVLS as NCCL 2.17+ runs it: on the cores' thread blocks, or (nvls.engine=
// copy) on the copy engines (Klenk's pull and multicast with multimem).
class Nvls : public InSwitches {
 public:
  Nvls()
      : InSwitches({"nvls", "allreduce, reducescatter, allgather", "", Family::GpuFabric,
                    "dgx2, fattree2l, star, fattree, hgx-a100, hgx-h100, hgx-b200, nvl72",
                    "the GPUs' cores (nvls.engine=copy: their copy engines) and the switches' reduction and "
                    "multicast tables",
                    "NVLink SHARP as NCCL 2.17+ runs it (NVIDIA H100 whitepaper, NVSwitch3): each GPU reduces its 1/n "
                    "in the switches with a multimem load (Klenk's pull) and, for all-reduce, multicasts it with a "
                    "multimem store",
                    50},
                   std::nullopt) {}
  std::string cannot_run(const Site& s) const override {
    if (const std::string e = engine(s); e != "copy" && e != "cores")
      return "nvls.engine must be copy or cores, not '" + e + "'";
    return InSwitches::cannot_run(s);
  }
  Synthesis synthesize(const Site& s) const override {
    const int channels = s.cfg.get(kNvlsChannels, nvls_channels(s.graph));  // nvls's, whichever engine runs it
    if (engine(s) == "cores") {
      Synthesis out;
      out.program = nvls_program(s.collective, s.ranks(), channels, s.cfg.get(kNvlsMultimem));
      return out;
    }
    Synthesis out = InSwitches::synthesize(s);
    out.program.multimem = s.cfg.get(kNvlsMultimem);
    return out;
  }

 private:
  static std::string engine(const Site& s) { return s.cfg.get(kNvlsEngine); }
};

}  // namespace

INCSIM_ALGORITHMS(in_network) {
  const char* const kUpDown = "dgx2, fattree2l, star, fattree, hgx-a100, hgx-h100, hgx-b200, nvl72";
  const char* const kTables = "the GPUs' copy engines and the switches' reduction and multicast tables";
  r.add(std::make_unique<InSwitches>(
      Algorithm::Info{"push", "allreduce", "", Family::GpuFabric, kUpDown, kTables,
                      "each GPU writes its data into the switches, which reduce it and multicast the sum back (Klenk "
                      "§IV-C)",
                      20},
      InNetMethod::Push));
  r.add(std::make_unique<InSwitches>(
      Algorithm::Info{"pull", "allreduce", "", Family::GpuFabric, kUpDown, kTables,
                      "each GPU reads the sum, which the switches gather and reduce on the way (Klenk §IV-B)", 30},
      InNetMethod::Pull));
  r.add(std::make_unique<InSwitches>(
      Algorithm::Info{"multicast", "allgather, broadcast", "broadcast", Family::GpuFabric, kUpDown,
                      "the GPUs' copy engines and the switches' multicast tables",
                      "one write reaches every GPU through the switches' multicast (Klenk §IV-A)", 40},
      InNetMethod::Multicast));
  r.add(std::make_unique<Nvls>());
}

}  // namespace incsim::collectives::builtin
