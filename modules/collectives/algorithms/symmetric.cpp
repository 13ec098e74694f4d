// NCCL's symmetric kernels (nccl_tuning.h, SymKernel) as algorithms of
// their own: what `nccl -c nccl.symmetric=true` runs per size, to run at one
// size, compare, or watch in a waveform.
#include "collectives/algorithms/common.h"
#include "collectives/nccl.h"
#include "collectives/program_synthesis.h"

namespace incsim::collectives::builtin {

namespace {

constexpr const char* kSwitchFabrics =
    "dgx2, fattree2l, star, torus, mesh, fattree, bigraph, hgx-a100, hgx-h100, hgx-b200, nvl72, cluster";

// A symmetric kernel's program on the GPUs' cores, on ring.channels'
// channels. Both store into every peer: a DGX-1's GPUs reach some only over
// PCIe, which is refused.
class Symmetric : public Algorithm {
 public:
  Symmetric(Info info, Program (*program)(const Site&)) : Algorithm(info), program_(program) {}
  bool crosses_nodes() const override { return true; }
  std::string cannot_run(const Site& s) const override {
    if (!s.dgx1()) return {};
    return std::string(name()) + " stores into every peer, and on " + s.platform +
           " some GPUs reach each other only over PCIe, which incsim does not model: run it on a switch fabric";
  }
  Synthesis synthesize(const Site& s) const override {
    Synthesis out;
    out.program = program_(s);
    return out;
  }

 private:
  Program (*program_)(const Site&);
};

Program oneshot(const Site& s) { return oneshot_allreduce_program(s.ranks(), nccl_channels(s), Protocol::LL); }

// Plain stores unless ring.protocol is set: the platform's default (auto on hgx-*) is the ring's.
Program direct(const Site& s) {
  Program p = direct_program(s.collective, s.ranks(), nccl_channels(s), Protocol::Simple);
  apply_protocol(p, "direct", s.cfg.get(kRingProtocol, "simple"), false);
  return p;
}

}  // namespace

INCSIM_ALGORITHMS(symmetric) {
  r.add(std::make_unique<Symmetric>(
      Algorithm::Info{"oneshot", "allreduce", "", Family::GpuFabric, kSwitchFabrics, "the GPUs' cores",
                      "every GPU stores its buffer into every peer's as LL lines and adds the n copies (NCCL 2.27+'s "
                      "symmetric AllReduce_AGxLL_R, src/device/symmetric/all_reduce.cuh)",
                      52},
      oneshot));
  r.add(std::make_unique<Symmetric>(
      Algorithm::Info{"direct", "allreduce, reducescatter, allgather", "", Family::GpuFabric, kSwitchFabrics,
                      "the GPUs' cores",
                      "every GPU stores each peer's block into it and, for all-reduce, the sums back into every "
                      "peer (NCCL 2.27+'s symmetric RSxLD_AGxST, ReduceScatter_LD, AllGather_ST; with -c "
                      "ring.protocol=ll their _LL kernels)",
                      54},
      direct));
}

}  // namespace incsim::collectives::builtin
