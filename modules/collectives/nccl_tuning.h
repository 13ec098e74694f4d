#pragma once
// NCCL's tuning model on one NVLink node or a cluster of them (src/graph/tuning.cc,
// ncclTopoTuneModel and ncclTopoGetAlgoTime; src/graph/search.cc for the
// graphs it tunes; src/enqueue.cc for the channels a size gets): the
// algorithm and protocol NCCL picks for a collective of a size, as
// `--algorithm nccl` runs them (docs/hardware.md, "NCCL's choice"). It
// predicts times only to choose, as NCCL does; the engines then run the
// choice. Plain C++, no SystemC.
#include <cstdint>
#include <string>

#include "collectives/program.h"

namespace incsim::collectives {

// The GPUs' generation, NCCL's compCapIndex (tuning.cc).
enum class GpuArch : uint8_t { Ampere, Hopper, Blackwell };

// NCCL's algorithms that incsim runs, in NCCL's order (NCCL_ALGO_TREE,
// _RING, _NVLS, _NVLS_TREE; CollNet and PAT are not modelled).
enum class NcclAlgo : uint8_t { Tree, Ring, Nvls, NvlsTree };
const char* nccl_algo_name(NcclAlgo a);
// A set of them, as NCCL_ALGO limits NCCL's: bit 1 << NcclAlgo.
using NcclAlgos = unsigned;
constexpr NcclAlgos nccl_algo_bit(NcclAlgo a) { return 1u << static_cast<unsigned>(a); }
constexpr NcclAlgos kAllNcclAlgos = 0xF;

// What NCCL's topology search finds: per graph, its channels and each
// channel's bandwidth inside a node and across nodes, GB/s.
struct NcclGraph {
  int channels = 0;
  double bw_intra = 0, bw_inter = 0;
};

// A cluster's scale-out network as NCCL's topology detection sees it, on a
// rail-optimised node (every GPU with its own adapter behind a PCIe link).
struct NcclNet {
  int nodes = 1;          // nNodes; 1: one NVLink node, nothing else is read
  double nic_GBps = 0;    // an adapter's port (topo.cc: net.bw = Mb/s / 8000)
  double pcie_GBps = 0;   // a GPU's path to its adapter, as NCCL rates PCIe (topo.cc)
  bool x86 = true;        // the hosts' CPUs are x86 (Grace's are not: nvl72)
  bool collnet = false;   // NCCL_COLLNET_ENABLE=1 with SHARP: NVLS across nodes
};
// NCCL's symmetric kernels (NCCL 2.27 src/symmetric.cc, 2.28+
// src/sym_kernels.cc; src/device/symmetric/*.cuh), which it runs on one
// node whenever both buffers are in windows registered with
// ncclCommWindowRegister (nccl-tests -R 2), whatever its tuner would pick
// (2.27 enqueue.cc, ncclPrepareTasks: "always use symmetric if available"),
// for an all-gather, or a float sum's all-reduce or reduce-scatter:
//  - AGxLL_R: every GPU stores its whole buffer into every peer's as LL
//    lines, and each adds the n copies (AGxLLMC_R: with multimem stores);
//  - RSxLD_AGxST: each GPU loads its 1/n from every peer and adds it, then
//    stores the sum into every peer's output;
//  - RSxLDMC_AGxSTMC: the same with multimem.ld_reduce and multimem.st, NVLS;
//  - AllGather_LL, _ST: each GPU stores its block into every peer, as LL
//    lines or plain stores; _LLMC, _STMC: with multimem stores;
//  - ReduceScatter_LL: every GPU stores each peer's block into it as LL
//    lines, each adds; _LD: each loads its block from every peer; _LDMC:
//    with multimem.ld_reduce.
enum class SymKernel : uint8_t {
  AgLl, AgLlMc, RsLdAgSt, RsLdmcAgStmc,
  AllGatherLl, AllGatherLlMc, AllGatherSt, AllGatherStMc,
  ReduceScatterLl, ReduceScatterLd, ReduceScatterLdMc
};
// A kernel as symmetric.cc describes it.
struct SymKernelInfo {
  const char* name;       // kernelName: AllReduce_AGxLL_R, ...
  Collective collective;  // kernelMask_coll
  bool ll;                // kernelMask_LL: it moves LL lines
  bool multimem;          // kernelMask_STMC, _LDMC: through the switches' multimem
};
const SymKernelInfo& sym_kernel(SymKernel k);

struct SymChoice {
  SymKernel kernel = SymKernel::AgLl;
  int blocks = 0;        // thread blocks, the fewest within 2.5% of its time on the most
  double model_us = 0;   // NCCL's symmetric model's time for it
};

struct NcclChoice {
  NcclAlgo algo = NcclAlgo::Ring;
  Protocol proto = Protocol::Simple;
  int channels = 0;      // a ring's or tree's channels for this size (enqueue.cc), NVLS's own
  double model_us = 0;   // NCCL's predicted time for it
};

class NcclTuning {
 public:
  // `ranks` GPUs in net.nodes nodes, each with `links` NVLinks to its
  // node's switches (and, across nodes, its own adapter on net).
  NcclTuning(GpuArch arch, int ranks, int links, const NcclNet& net = {});
  // NCCL's pick for a collective of `bytes` (for an all-gather and a
  // reduce-scatter the whole buffer, ncclFuncMaxSendRecvCount; UserError
  // for another collective), the fastest by its model among the algorithms
  // allowed (NCCL_ALGO's list; all by default). On one node NCCL weighs
  // the ring and NVLS (its tree there is a chain, which incsim does not
  // run), across nodes the ring, the tree and NVLSTree, and with
  // NcclNet::collnet NVLS with SHARP across nodes (CollNet's Direct and Chain
  // are not weighed).
  NcclChoice choose(Collective c, uint64_t bytes, NcclAlgos allowed = kAllNcclAlgos) const;
  // NCCL's predicted time of one algorithm and protocol, us; < 0 where NCCL would not run it.
  double model_us(Collective c, NcclAlgo a, Protocol p, uint64_t bytes) const;
  // NCCL's pick among its symmetric kernels for collective c of `bytes`
  // (an all-gather's and a reduce-scatter's whole buffer, as choose()), by
  // its own model (symmetric.cc, queryModel and ncclSymPickKernel): each
  // kernel's time at the fewest blocks within 2.5% of its best, plus 2.5% a
  // block; the multimem kernels where the GPUs have NVLS. model_us < 0:
  // none runs it (another collective, a size too large, or an all-reduce
  // or reduce-scatter that is not a float sum), and NCCL takes its others.
  SymChoice choose_symmetric(Collective c, uint64_t bytes, bool float_sum = true) const;
  // That model's time of kernel k on `blocks` thread blocks, for a
  // collective whose per-rank count is `bytes` (ncclSymPickKernel's nBytes), us.
  double symmetric_model_us(SymKernel k, uint64_t bytes, int blocks) const;
  const NcclGraph& ring() const { return ring_; }  // the tree's too, across nodes (see the .cpp)
  const NcclGraph& nvls() const { return nvls_; }
  int nodes() const { return net_.nodes; }
  // comm->nChannels: the ring graph's channels duplicated (connect.cc, ncclTopoPostset).
  int comm_channels() const { return 2 * ring_.channels; }

 private:
  int steps(Collective c) const;
  bool runs(Collective c, NcclAlgo a, Protocol p) const;
  double bandwidth(Collective c, NcclAlgo a, Protocol p) const;
  double latency(Collective c, NcclAlgo a, Protocol p) const;
  GpuArch arch_;
  int ranks_;
  NcclNet net_;
  NcclGraph ring_, nvls_;
};

// The GPUs' generation of a platform family (hgx-a100: Ampere; hgx-h100:
// Hopper; hgx-b200, nvl72: Blackwell); false for another.
bool nccl_arch(const std::string& family, GpuArch& out);

}  // namespace incsim::collectives
