#include "collectives/nccl_tuning.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>

#include "collectives/nccl.h"
#include "core/error.h"

namespace incsim::collectives {

namespace {
// NCCL's NVLink bandwidth per link and generation, GB/s (src/graph/topo.h:
// SM80_NVLINK_BW 20.0, SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1).
double nvlink_bw(GpuArch a) { return a == GpuArch::Ampere ? 20.0 : a == GpuArch::Hopper ? 20.6 : 40.1; }

// The speeds its search tries inside a node, GB/s per channel
// (src/graph/search.cc: speedArrayIntra, sm90SpeedArrayIntra, sm100SpeedArrayIntra).
const std::vector<double>& speeds(GpuArch a) {
  static const std::vector<double> ampere{40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
  static const std::vector<double> hopper{60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
  static const std::vector<double> blackwell{90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
  return a == GpuArch::Ampere ? ampere : a == GpuArch::Hopper ? hopper : blackwell;
}

// MAXCHANNELS / 2 (src/include/device.h, src/init.cc: ringGraph->maxChannels).
constexpr int kRingMaxChannels = 32;

int fit(double total, double per) { return static_cast<int>(std::floor(total / per + 1e-9)); }

// ncclTopoCompute for a ring through NVSwitches: each channel takes its
// speed from every GPU's links out and in. Pass 1 keeps the most bandwidth
// (ncclTopoCompareGraphs; a tie keeps the faster channels, fewer hops) and
// stops once the links are full or the next speed is under half; then
// ncclTopoDupChannels doubles the channels at half the speed; pass 2 tries
// faster channels with as many.
NcclGraph ring_graph(GpuArch arch, double gpu_bw) {
  const std::vector<double>& s = speeds(arch);
  size_t i = 0;
  while (i + 1 < s.size() && s[i] > gpu_bw) ++i;
  NcclGraph g;
  for (; i < s.size(); ++i) {
    if (g.channels && s[i] / g.bw_intra <= 0.49) break;
    const int n = std::min(kRingMaxChannels, fit(gpu_bw, s[i]));
    if (n * s[i] > g.channels * g.bw_intra + 1e-9) g = {n, s[i], s[i]};
    if (g.channels * g.bw_intra >= gpu_bw - 1e-9) break;
  }
  if (g.bw_intra >= 25.0 && !(arch != GpuArch::Ampere && g.bw_intra < 50.0 && g.channels > 4)) {
    const int dup = std::min(2 * g.channels, kRingMaxChannels);
    const double per = g.bw_intra / ((dup + g.channels - 1) / g.channels);
    g = {dup, per, per};
  }
  for (size_t k = s.size(); k-- > 0;)
    if (s[k] > g.bw_intra && fit(gpu_bw, s[k]) >= g.channels) g.bw_intra = g.bw_inter = s[k];
  return g;
}

// The NVLS graph on one node (pattern NCCL_TOPO_PATTERN_NVLS): a channel per
// GPU (min and max channels, one node), each channel's head moving twice
// its speed through the switches and every other GPU once
// (ncclTopoSearchTryNvls); pass 2 raises bwInter, which nothing inside a
// node consumes, up to twice bwIntra.
NcclGraph nvls_graph(GpuArch arch, int ranks, double gpu_bw) {
  const std::vector<double>& s = speeds(arch);
  const int n = std::min(32, ranks);  // NCCL_MAX_NVLS_ARITY
  size_t i = 0;
  while (i + 1 < s.size() && (s[i] > gpu_bw || s[i] * n > gpu_bw)) ++i;
  while (i + 1 < s.size() && (n + 1) * s[i] > gpu_bw + 1e-9) ++i;
  NcclGraph g{n, s[i], s[i]};
  while (i > 0 && g.bw_inter < 2 * g.bw_intra) g.bw_inter = s[--i];
  return g;
}

// src/graph/tuning.cc, ncclTunerConstantsDefaults, NVLink rows and single-node columns.
double hw_latency(NcclAlgo a, Protocol p) {
  if (a == NcclAlgo::Nvls) return 25.0;
  return p == Protocol::LL ? 0.6 : p == Protocol::LL128 ? 1.9 : 3.4;
}
double ll_max_bw(GpuArch a) { return a == GpuArch::Ampere ? 87.7 : a == GpuArch::Hopper ? 141.0 : 282.0; }
double ring_ll128_per_channel(GpuArch a) { return a == GpuArch::Ampere ? 20.0 : a == GpuArch::Hopper ? 36.7 : 40.0; }
double nvls_efficiency(GpuArch a) { return a == GpuArch::Hopper ? 0.85 : a == GpuArch::Blackwell ? 0.74 : 0.0; }

// Threads per block and bytes per thread before NCCL adds a channel
// (src/include/device.h: NCCL_LL_MAX_NTHREADS 512, NCCL_LL128_MAX_NTHREADS
// 640, NCCL_SIMPLE_MAX_NTHREADS 512; src/include/comm.h: the thread
// thresholds 8, 8 and 64, LL's times the ranks in tuning.cc).
uint64_t channel_bytes(Protocol p, int ranks) {
  if (p == Protocol::LL) return 512ull * 8 * static_cast<uint64_t>(ranks);
  return p == Protocol::LL128 ? 640ull * 8 : 512ull * 64;
}

constexpr Protocol kProtocols[] = {Protocol::LL, Protocol::LL128, Protocol::Simple};

// The collectives whose choice incsim models (tuning.cc also tunes
// broadcast and reduce, ring only).
bool nccl_tunes(Collective c) {
  return c == Collective::AllReduce || c == Collective::AllGather || c == Collective::ReduceScatter;
}
}  // namespace

const char* nccl_algo_name(NcclAlgo a) { return a == NcclAlgo::Ring ? "ring" : "nvls"; }

namespace {
// symmetric.cc's kernels in its order (ncclSymKernelId), which SymKernel keeps.
constexpr SymKernelInfo kSymKernels[] = {
    {"AllReduce_AGxLL_R", Collective::AllReduce, true, false},
    {"AllReduce_AGxLLMC_R", Collective::AllReduce, true, true},
    {"AllReduce_RSxLD_AGxST", Collective::AllReduce, false, false},
    {"AllReduce_RSxLDMC_AGxSTMC", Collective::AllReduce, false, true},
    {"AllGather_LL", Collective::AllGather, true, false},
    {"AllGather_LLMC", Collective::AllGather, true, true},
    {"AllGather_ST", Collective::AllGather, false, false},
    {"AllGather_STMC", Collective::AllGather, false, true},
    {"ReduceScatter_LL", Collective::ReduceScatter, true, false},
    {"ReduceScatter_LD", Collective::ReduceScatter, false, false},
    {"ReduceScatter_LDMC", Collective::ReduceScatter, false, true},
};
}  // namespace

const SymKernelInfo& sym_kernel(SymKernel k) { return kSymKernels[static_cast<size_t>(k)]; }

bool nccl_arch(const std::string& family, GpuArch& out) {
  if (family == "hgx-a100") out = GpuArch::Ampere;
  else if (family == "hgx-h100") out = GpuArch::Hopper;
  else if (family == "hgx-b200" || family == "nvl72") out = GpuArch::Blackwell;
  else return false;
  return true;
}

NcclTuning::NcclTuning(GpuArch arch, int ranks, int links) : arch_(arch), ranks_(ranks) {
  const double gpu_bw = links * nvlink_bw(arch);
  ring_ = ring_graph(arch, gpu_bw);
  // NVLS needs NVSwitches of Hopper or later (search.cc) and two channels (tuning.cc).
  if (arch != GpuArch::Ampere && ranks >= 2) nvls_ = nvls_graph(arch, ranks, gpu_bw);
}

// tuning.cc's nsteps: a ring's steps for the collective.
int NcclTuning::steps(Collective c) const { return c == Collective::AllReduce ? 2 * (ranks_ - 1) : ranks_ - 1; }

double NcclTuning::latency(Collective c, NcclAlgo a, Protocol p) const {
  if (a == NcclAlgo::Nvls) return hw_latency(a, p);  // tuning.cc: latencies = intraLat on one node
  return nccl_base_latency_us(p, false) + steps(c) * hw_latency(a, p);
}

double NcclTuning::bandwidth(Collective c, NcclAlgo a, Protocol p) const {
  const double ratio = static_cast<double>(ranks_) / steps(c);  // busbw to algbw
  if (a == NcclAlgo::Nvls) {
    if (p != Protocol::Simple || nvls_.channels < 2) return 0;
    // An all-reduce pipelines two operations; an all-gather or a
    // reduce-scatter moves (ppn - 1) / ppn through the switches, and its
    // busbw is taken as its algbw (tuning.cc converts only the ring's).
    const double intra = nvls_.bw_intra * nvls_efficiency(arch_) * (nvls_.channels - 1) / nvls_.channels *
                         (c == Collective::AllReduce ? 2.0 : (ranks_ - 1.0) / ranks_);
    return nvls_.channels * std::min(intra, nvls_.bw_inter) * (c == Collective::AllReduce ? ratio : 1.0);
  }
  const double bus = ring_.channels * ring_.bw_intra;
  if (p == Protocol::LL) return std::min(ll_max_bw(arch_), bus * 0.5) * ratio;
  if (p == Protocol::LL128) return std::min(bus * 0.92, ring_.channels * ring_ll128_per_channel(arch_)) * ratio;
  return bus * ratio;
}

double NcclTuning::model_us(Collective c, NcclAlgo a, Protocol p, uint64_t bytes) const {
  const double bw = bandwidth(c, a, p);
  return bw > 0 ? latency(c, a, p) + static_cast<double>(bytes) / (1000 * bw) : -1;
}

namespace {
// symmetric.cc: ncclSymMaxBlocks; comm->config.minCTAs' default (init.cc).
constexpr int kSymMaxBlocks = 64, kSymMinBlocks = 1;
// symmetric.cc's smooth min(x, ceiling) and max(0, x).
double softmin(double x, double ceiling, double softness) {
  return ceiling - softness * std::log1p((std::exp(ceiling / softness) - 1) * std::exp(-x / softness));
}
double softplus(double x, double softness) {
  const double z = x / softness;
  return z >= 100.0 ? x : softness * std::log1p(std::exp(z));
}
// symmetric.cc: ncclSymMaxBlocks, and nMaxBlocksNvls for the kernels that
// load or store every byte through the switches' multimem.
int sym_max_blocks(SymKernel k, GpuArch arch, int ranks) {
  if (!sym_kernel(k).multimem || sym_kernel(k).ll) return kSymMaxBlocks;
  return ((arch == GpuArch::Blackwell ? 32 : 16) + ranks - 1) / ranks;
}
}  // namespace

double NcclTuning::symmetric_model_us(SymKernel k, uint64_t bytes, int blocks) const {
  // symmetric.cc, queryModel: busBytes = max(bytes sent, bytes received),
  // LL's counted 9 times ("2X the bytes, plus some processing, plus no
  // unrolling"); the multimem ones' "Wrong ... but we want to beat non-MC"
  // as NCCL has them.
  const double n = ranks_, b = static_cast<double>(bytes);
  double bus = 0, multiplier = 1;
  switch (k) {
    case SymKernel::AgLl:
    case SymKernel::AllGatherLl:
    case SymKernel::ReduceScatterLl: bus = n * b * 9; break;
    case SymKernel::AgLlMc:
    case SymKernel::AllGatherLlMc: bus = n * b * 9, multiplier = 1.1; break;
    case SymKernel::RsLdAgSt: bus = std::floor(2 * b * (n - 1) / n); break;
    case SymKernel::RsLdmcAgStmc: bus = std::floor(b / n) + b, multiplier = n; break;
    case SymKernel::AllGatherSt:
    case SymKernel::ReduceScatterLd: bus = (n - 1) * b; break;
    case SymKernel::AllGatherStMc:
    case SymKernel::ReduceScatterLdMc: bus = (n - 1) * b, multiplier = 0.55 * n; break;
  }
  constexpr double kGBps = (1 << 30) / 1.e6;  // NCCL's GB/s in bytes per us
  const SymKernelInfo& info = sym_kernel(k);
  const bool ll = info.ll, ar = info.collective == Collective::AllReduce;
  double base = 0, sm_bw = 0, peak = 0;
  if (arch_ == GpuArch::Blackwell) {
    base = ll ? (info.collective == Collective::AllGather ? 8.5 : 11.0) : (ar ? 19.5 : 13.0);
    sm_bw = 55.0 * kGBps;
    peak = (k == SymKernel::RsLdmcAgStmc ? 1000.0 : 600.0) * kGBps;
  } else {
    base = ll ? 4.5 : 7.8;
    sm_bw = (ar ? 65.0 : 44.0) * kGBps;
    peak = (k == SymKernel::RsLdmcAgStmc ? 480.0 : 320.0) * kGBps;
  }
  const double bw = softmin(blocks * sm_bw * multiplier, peak, sm_bw);
  return base + softplus(bus / bw - 1, 1);
}

SymChoice NcclTuning::choose_symmetric(Collective c, uint64_t bytes, bool float_sum) const {
  // symmetric.cc, ncclSymImplemented and ncclSymPickKernel: an all-gather
  // of anything, a float sum's all-reduce or reduce-scatter; multimem
  // kernels where the GPUs have NVLS (hasSTMC, hasLDMC for a float sum);
  // LL ones below 2 GiB of the bus's bytes, none from 64 GiB (32-bit counts).
  SymChoice best;
  best.model_us = -1;
  const bool ag = c == Collective::AllGather;
  const uint64_t per_rank = ag || c == Collective::ReduceScatter ? bytes / static_cast<uint64_t>(ranks_) : bytes;
  if ((!ag && !float_sum) || bytes >= 32 * (2ull << 30)) return best;
  const bool nvls = arch_ != GpuArch::Ampere;
  constexpr double kSmPenalty = 0.025;  // "2.5% percent increase in time per SM"
  for (size_t i = 0; i < std::size(kSymKernels); ++i) {
    const SymKernel k = static_cast<SymKernel>(i);
    const SymKernelInfo& info = kSymKernels[i];
    if (info.collective != c || (info.multimem && !nvls) || (info.ll && bytes >= (2ull << 30))) continue;
    const int most = sym_max_blocks(k, arch_, ranks_);
    SymChoice at{k, most, symmetric_model_us(k, per_rank, most)};
    for (int blocks = kSymMinBlocks; blocks < most; ++blocks) {
      const double t = symmetric_model_us(k, per_rank, blocks);
      if (t <= 1.025 * at.model_us) {
        at.blocks = blocks, at.model_us = t;
        break;
      }
    }
    if (best.model_us < 0 ||
        at.model_us * (1 + kSmPenalty * at.blocks) < best.model_us * (1 + kSmPenalty * best.blocks))
      best = at;
  }
  return best;
}

NcclChoice NcclTuning::choose(Collective c, uint64_t bytes, bool ring, bool nvls) const {
  if (!nccl_tunes(c))
    throw UserError(std::string("nccl models NCCL's choice for an all-reduce, an all-gather or a reduce-scatter, not a ") +
                    collective_name(c));
  NcclChoice best;
  best.model_us = -1;
  for (NcclAlgo a : {NcclAlgo::Ring, NcclAlgo::Nvls}) {  // NCCL's order: a tie keeps the first
    if (!(a == NcclAlgo::Ring ? ring : nvls)) continue;
    for (Protocol p : kProtocols) {
      const double t = model_us(c, a, p, bytes);
      if (t >= 0 && (best.model_us < 0 || t < best.model_us)) best = {a, p, 0, t};
    }
  }
  if (best.model_us < 0)
    throw UserError("nccl.algorithms allows only nvls, which NCCL does not run on these GPUs (NVLS needs Hopper or "
                    "later)");
  if (best.algo == NcclAlgo::Nvls) {
    best.channels = nvls_.channels;
  } else {
    // enqueue.cc: fewer channels while each would get less than its threads' share.
    const uint64_t per = channel_bytes(best.proto, ranks_);
    int nc = comm_channels();
    while (nc >= 2 && bytes < static_cast<uint64_t>(nc) * per) --nc;
    best.channels = nc;
  }
  return best;
}

}  // namespace incsim::collectives
