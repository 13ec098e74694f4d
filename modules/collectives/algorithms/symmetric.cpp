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

// Both store into every peer: a DGX-1's GPUs reach some only over PCIe.
std::string pcie_refusal(const Site& s, const char* name) {
  if (!s.dgx1()) return {};
  return std::string(name) + " stores into every peer, and on " + s.platform +
         " some GPUs reach each other only over PCIe, which incsim does not model: run it on a switch fabric";
}

class Oneshot : public Algorithm {
 public:
  Oneshot()
      : Algorithm({"oneshot", "allreduce", "", Family::GpuFabric, kSwitchFabrics, "the GPUs' cores",
                   "every GPU stores its buffer into every peer's as LL lines and adds the n copies (NCCL 2.27+'s "
                   "symmetric AllReduce_AGxLL_R, src/device/symmetric/all_reduce.cuh)",
                   52}) {}
  bool crosses_nodes() const override { return true; }
  std::string cannot_run(const Site& s) const override { return pcie_refusal(s, name()); }
  Synthesis synthesize(const Site& s) const override {
    Synthesis out;
    out.program = oneshot_allreduce_program(s.ranks(), nccl_channels(s), Protocol::LL);
    return out;
  }
};

class Direct : public Algorithm {
 public:
  Direct()
      : Algorithm({"direct", "allreduce, reducescatter, allgather", "", Family::GpuFabric, kSwitchFabrics,
                   "the GPUs' cores",
                   "every GPU stores each peer's block into it and, for all-reduce, the sums back into every peer "
                   "(NCCL 2.27+'s symmetric RSxLD_AGxST, ReduceScatter_LD, AllGather_ST; with -c ring.protocol=ll "
                   "their _LL kernels)",
                   54}) {}
  bool crosses_nodes() const override { return true; }
  std::string cannot_run(const Site& s) const override { return pcie_refusal(s, name()); }
  Synthesis synthesize(const Site& s) const override {
    Synthesis out;
    // Plain stores unless ring.protocol is set: the platform's default (auto on hgx-*) is the ring's.
    out.program = direct_program(s.collective, s.ranks(), nccl_channels(s), Protocol::Simple);
    apply_protocol(out.program, name(), s.cfg.get(kRingProtocol, "simple"), false);
    return out;
  }
};

}  // namespace

INCSIM_ALGORITHMS(symmetric) {
  r.add(std::make_unique<Oneshot>());
  r.add(std::make_unique<Direct>());
}

}  // namespace incsim::collectives::builtin
