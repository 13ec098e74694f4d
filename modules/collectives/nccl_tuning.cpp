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

// The speeds it tries across nodes (speedArrayInter, sm90SpeedArrayInter, sm100SpeedArrayInter).
const std::vector<double>& inter_speeds(GpuArch a) {
  static const std::vector<double> ampere{48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                          7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
  static const std::vector<double> hopper{48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                          15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
  static const std::vector<double> blackwell{96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                             20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
  return a == GpuArch::Ampere ? ampere : a == GpuArch::Hopper ? hopper : blackwell;
}

// MAXCHANNELS / 2 (src/include/device.h, src/init.cc: ringGraph->maxChannels).
constexpr int kRingMaxChannels = 32;

int fit(double total, double per) { return static_cast<int>(std::floor(total / per + 1e-9)); }

// ncclTopoCompute for a ring, where `fits(speed)` is how many channels of
// that speed the GPUs' links carry. Pass 1 starts at the fastest speed the
// system's best path takes (maxBw), keeps the most bandwidth
// (ncclTopoCompareGraphs; a tie keeps the faster channels, fewer hops) and
// stops once the channels fill totalBw or the next speed is under half;
// then ncclTopoDupChannels doubles the channels at half the speed; pass 2
// tries faster channels with as many.
template <class Fits>
NcclGraph ring_graph(GpuArch arch, const std::vector<double>& s, double max_bw, double total_bw, Fits fits) {
  size_t i = 0;
  while (i + 1 < s.size() && s[i] > max_bw) ++i;
  NcclGraph g;
  for (; i < s.size(); ++i) {
    if (g.channels && s[i] / g.bw_intra <= 0.49) break;
    const int n = std::min(kRingMaxChannels, fits(s[i]));
    if (n * s[i] > g.channels * g.bw_intra + 1e-9) g = {n, s[i], s[i]};
    if (g.channels * g.bw_intra >= total_bw - 1e-9) break;
  }
  if (g.bw_intra >= 25.0 && !(arch != GpuArch::Ampere && g.bw_intra < 50.0 && g.channels > 4)) {
    const int dup = std::min(2 * g.channels, kRingMaxChannels);
    const double per = g.bw_intra / ((dup + g.channels - 1) / g.channels);
    g = {dup, per, per};
  }
  for (size_t k = s.size(); k-- > 0;)
    if (s[k] > g.bw_intra && fits(s[k]) >= g.channels) g.bw_intra = g.bw_inter = s[k];
  return g;
}

// The NVLS graph (pattern NCCL_TOPO_PATTERN_NVLS): a channel per head GPU,
// each head moving twice its speed through the switches and every other
// GPU once (ncclTopoSearchTryNvls), so n channels of speed s need
// (n + 1) s of a GPU's NVLink. On one node every GPU heads a channel (min
// and max channels); across nodes each head also needs its adapter, and
// pass 1 keeps the most channels x speed. Pass 2 raises bwInter up to
// twice bwIntra, as far as the adapters' paths carry it (nothing inside a
// node consumes it).
NcclGraph nvls_graph(GpuArch arch, int ppn, double gpu_bw, const NcclNet& net) {
  const int most = std::min(32, ppn);  // NCCL_MAX_NVLS_ARITY
  NcclGraph g;
  size_t i = 0;
  if (net.nodes == 1) {
    const std::vector<double>& s = speeds(arch);
    while (i + 1 < s.size() && (s[i] > gpu_bw || s[i] * most > gpu_bw)) ++i;
    while (i + 1 < s.size() && (most + 1) * s[i] > gpu_bw + 1e-9) ++i;
    g = {most, s[i], s[i]};
    while (i > 0 && g.bw_inter < 2 * g.bw_intra) g.bw_inter = s[--i];
    return g;
  }
  const std::vector<double>& s = inter_speeds(arch);
  const double max_bw = std::min(net.nic_GBps, net.pcie_GBps);
  while (i + 1 < s.size() && s[i] > max_bw) ++i;
  size_t best = i;
  for (; i < s.size(); ++i) {
    if (g.channels && s[i] / g.bw_inter <= 0.49) break;
    const int n = std::min(most, fit(gpu_bw, s[i]) - 1);
    if (n > 0 && n * s[i] > g.channels * g.bw_inter + 1e-9) g = {n, s[i], s[i]}, best = i;
    if (g.channels * g.bw_inter >= gpu_bw - 1e-9) break;  // the GPU's NVLink full (totalBw)
  }
  while (best > 0 && g.bw_inter < 2 * g.bw_intra && s[best - 1] <= max_bw) g.bw_inter = s[--best];
  return g;
}

// A protocol's column in tuning.cc's tables (NCCL_PROTO_LL, _LL128, _SIMPLE).
int proto_index(Protocol p) { return p == Protocol::LL ? 0 : p == Protocol::LL128 ? 1 : 2; }

// src/graph/tuning.cc, ncclTunerConstantsDefaults: hwLatencies' NVLink and
// network rows, us, and the per-channel caps indexed by nNodes (1, 2, more).
double hw_latency(NcclAlgo a, Protocol p) {
  const int i = proto_index(p);
  static const double tree[] = {0.6, 1.25, 4.0}, ring[] = {0.6, 1.9, 3.4};
  return a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree ? 25.0 : (a == NcclAlgo::Tree ? tree : ring)[i];
}
double net_latency(NcclAlgo a, Protocol p) {
  const int i = proto_index(p);
  static const double tree[] = {5.0, 8.5, 14.0}, ring[] = {2.7, 4.0, 14.0};
  return a == NcclAlgo::Nvls ? 18.0 : a == NcclAlgo::NvlsTree ? 20.9 : (a == NcclAlgo::Tree ? tree : ring)[i];
}
// llMaxBws: on one node by GPU generation; across nodes by CPU, the Intel
// row (Grace, not AMD, takes it too).
double ll_max_bw(GpuArch a, int nodes) {
  static const double intel[] = {39.0, 39.0, 20.4};
  if (nodes > 1) return intel[nodes == 2 ? 1 : 2];
  return a == GpuArch::Ampere ? 87.7 : a == GpuArch::Hopper ? 141.0 : 282.0;
}
double ring_ll128_per_channel(GpuArch a) { return a == GpuArch::Ampere ? 20.0 : a == GpuArch::Hopper ? 36.7 : 40.0; }
// perChMaxTreeBws, perChMaxTreeLL128Bws, perChMaxNVLSTreeBws.
double per_channel(const double (&table)[3][3], GpuArch a, int nodes) {
  return table[static_cast<int>(a)][nodes <= 2 ? nodes - 1 : 2];
}
constexpr double kTreeMax[3][3] = {{24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kTreeLl128Max[3][3] = {{20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kNvlsTreeMax[3][3] = {{24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
double nvls_efficiency(GpuArch a) { return a == GpuArch::Hopper ? 0.85 : a == GpuArch::Blackwell ? 0.74 : 0.0; }
// getNetOverhead: a network post, us (x86 Intel, and any non-AMD CPU).
constexpr double kNetOverhead = 1.0;
// tuning.cc, treeCorrectionFactor: the tree's bandwidth per protocol at
// sizes of 64 B x 2^k, "not perfectly sticking to the model for medium sizes".
constexpr double kTreeCorrection[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
int log2i(uint64_t n) { int l = -1; for (; n; n >>= 1) ++l; return l; }

// Threads per block and bytes per thread before NCCL adds a channel
// (src/include/device.h: NCCL_LL_MAX_NTHREADS 512, NCCL_LL128_MAX_NTHREADS
// 640, NCCL_SIMPLE_MAX_NTHREADS 512; src/include/comm.h: the thread
// thresholds 8, 8 and 64, LL's times the ranks in tuning.cc).
uint64_t channel_bytes(NcclAlgo a, Protocol p, int ranks) {
  if (p == Protocol::LL) return 512ull * 8 * (a == NcclAlgo::Ring ? static_cast<uint64_t>(ranks) : 1);
  return p == Protocol::LL128 ? 640ull * 8 : 512ull * 64;
}

constexpr Protocol kProtocols[] = {Protocol::LL, Protocol::LL128, Protocol::Simple};

// The collectives whose choice incsim models (tuning.cc also tunes
// broadcast and reduce, ring only).
bool nccl_tunes(Collective c) {
  return c == Collective::AllReduce || c == Collective::AllGather || c == Collective::ReduceScatter;
}
}  // namespace

const char* nccl_algo_name(NcclAlgo a) {
  static const char* const names[] = {"tree", "ring", "nvls", "nvlstree"};
  return names[static_cast<size_t>(a)];
}

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

NcclTuning::NcclTuning(GpuArch arch, int ranks, int links, const NcclNet& net)
    : arch_(arch), ranks_(ranks), net_(net) {
  const double gpu_bw = links * nvlink_bw(arch);
  const int ppn = ranks / net.nodes;
  if (net.nodes == 1) {
    ring_ = ring_graph(arch, speeds(arch), gpu_bw, gpu_bw, [&](double s) { return fit(gpu_bw, s); });
  } else {
    // A channel enters its node through one GPU's adapter and leaves
    // through another's (crossNic), each adapter carrying one channel each
    // way at a speed its path takes (a node has ppn), and passes every GPU
    // but its last over NVLink. NCCL rates a PCIe 5.0 x16 link 48 GB/s
    // (topo.cc: width x 240 / 80), the speed its arrays start from.
    const double path = std::min(net.nic_GBps, net.pcie_GBps);
    const double nvlink = ppn > 1 ? gpu_bw * ppn / (ppn - 1) : 1e9;
    ring_ = ring_graph(arch, inter_speeds(arch), path, gpu_bw,
                       [&](double s) { return std::min(ppn * fit(path, s), fit(nvlink, s)); });
  }
  // NVLS needs NVSwitches of Hopper or later (search.cc) and two channels (tuning.cc).
  if (arch != GpuArch::Ampere && ppn >= 2) nvls_ = nvls_graph(arch, ppn, gpu_bw, net);
}

// tuning.cc's nsteps: a ring's steps for the collective.
int NcclTuning::steps(Collective c) const { return c == Collective::AllReduce ? 2 * (ranks_ - 1) : ranks_ - 1; }

// What tuning.cc gives a bandwidth: on one node the ring and NVLS (NVLSTree
// "disabled on a single node"; its tree, a chain there, incsim does not
// run); across nodes the ring, and for an all-reduce the tree, NVLSTree
// and, with collnetEnable, NVLS (its all-gather and reduce-scatter need
// the CollNet plugin's own, which SHARP's all-reduce is not). NVLS and
// NVLSTree run Simple only, and on two channels or more.
bool NcclTuning::runs(Collective c, NcclAlgo a, Protocol p) const {
  const bool one = net_.nodes == 1, ar = c == Collective::AllReduce;
  switch (a) {
    case NcclAlgo::Ring: return true;
    case NcclAlgo::Tree: return !one && ar;
    case NcclAlgo::Nvls: return (one || (net_.collnet && ar)) && p == Protocol::Simple && nvls_.channels >= 2;
    case NcclAlgo::NvlsTree: return !one && ar && p == Protocol::Simple && nvls_.channels >= 2;
  }
  return false;
}

double NcclTuning::latency(Collective c, NcclAlgo a, Protocol p) const {
  const int nodes = net_.nodes, ppn = ranks_ / nodes;
  // With one GPU a node "latencies are fully exposed": the tree's network
  // latency; latencyInter is the network's own (IB's properties give 0, net_ib.cc).
  const double inter = net_latency(ppn == 1 ? NcclAlgo::Tree : a, p);
  switch (a) {
    case NcclAlgo::Nvls: return hw_latency(a, p) + (nodes > 1 ? inter : 0);
    case NcclAlgo::NvlsTree: return hw_latency(a, p) + 2 * log2i(static_cast<uint64_t>(nodes)) * inter;
    case NcclAlgo::Tree:
      return nccl_base_latency_us(p, true) +
             2 * ((ppn - 1) * hw_latency(a, p) + log2i(static_cast<uint64_t>(nodes)) * inter);
    case NcclAlgo::Ring: break;
  }
  // "Inter-node rings still have to launch nsteps * net overhead."
  const double intra =
      nodes > 1 ? std::max(hw_latency(a, p), kNetOverhead * (p == Protocol::Simple ? 3 : 1)) : hw_latency(a, p);
  const int cross = nodes == 1 ? 0 : c == Collective::AllReduce ? 2 * (nodes - 1) : nodes - 1;
  return nccl_base_latency_us(p, false) + (steps(c) - cross) * intra + cross * inter;
}

double NcclTuning::bandwidth(Collective c, NcclAlgo a, Protocol p) const {
  if (!runs(c, a, p)) return 0;
  const int nodes = net_.nodes;
  const double ppn = static_cast<double>(ranks_) / nodes;
  const double ratio = static_cast<double>(ranks_) / steps(c);  // a ring's busbw to algbw
  if (a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree) {
    // An all-reduce pipelines two operations; an all-gather or a
    // reduce-scatter moves (ppn - 1) / ppn through the switches, and its
    // busbw is taken as its algbw (tuning.cc converts only the ring's and
    // the all-reduce's). NVLSTree's network: twice bwInter on 2 nodes,
    // capped per channel.
    const double intra = nvls_.bw_intra * nvls_efficiency(arch_) * (nvls_.channels - 1) / nvls_.channels *
                         (c == Collective::AllReduce ? 2.0 : (ppn - 1) / ppn);
    double bw = std::min(intra, nvls_.bw_inter * (a == NcclAlgo::NvlsTree && nodes <= 2 ? 2 : 1));
    if (a == NcclAlgo::NvlsTree) bw = std::min(bw, per_channel(kNvlsTreeMax, arch_, nodes));
    return nvls_.channels * bw * (c == Collective::AllReduce ? ratio : 1.0);
  }
  const double bus = ring_.channels * (nodes <= 2 ? ring_.bw_intra : ring_.bw_inter);
  const double llmax = ll_max_bw(arch_, nodes);
  if (a == NcclAlgo::Tree) {  // an all-reduce: up and down the tree, busbw to algbw 0.5
    const double tree = std::min(bus * 0.92, ring_.channels * per_channel(kTreeMax, arch_, nodes));
    if (p == Protocol::LL) return std::min(tree / 3.8, llmax) * 0.5;
    if (p == Protocol::LL128)
      return std::min(tree * 120.0 / 128.0, ring_.channels * per_channel(kTreeLl128Max, arch_, nodes)) * 0.5;
    return tree * 0.5;
  }
  if (p == Protocol::LL) return std::min(llmax, bus * 0.5) * ratio;
  if (p == Protocol::LL128) return std::min(bus * 0.92, ring_.channels * ring_ll128_per_channel(arch_)) * ratio;
  return bus * ratio;
}

// ncclTopoGetAlgoTime: latency + bytes / bandwidth, the tree's bandwidth
// corrected by size (NVLSTree's too on Blackwell with x86 hosts), and a
// ring's Simple latency raised 1.4 times across nodes once each channel's
// rank gets 64 B ("plateau effect of ring").
double NcclTuning::model_us(Collective c, NcclAlgo a, Protocol p, uint64_t bytes) const {
  double bw = bandwidth(c, a, p), lat = latency(c, a, p);
  if (bw <= 0) return -1;
  const int log_size = log2i(bytes >> 6);
  if (c == Collective::AllReduce && log_size >= 0 &&
      ((a == NcclAlgo::Tree && log_size < 23) ||
       (a == NcclAlgo::NvlsTree && log_size < 24 && arch_ == GpuArch::Blackwell && net_.x86)))
    bw *= kTreeCorrection[proto_index(p)][log_size];
  if (a == NcclAlgo::Ring && p == Protocol::Simple && net_.nodes > 1 && c == Collective::AllReduce &&
      bytes / (static_cast<uint64_t>(comm_channels()) * static_cast<uint64_t>(ranks_)) >= 64)
    lat *= 1.4;
  return lat + static_cast<double>(bytes) / (1000 * bw);
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

NcclChoice NcclTuning::choose(Collective c, uint64_t bytes, NcclAlgos allowed) const {
  if (!nccl_tunes(c))
    throw UserError(std::string("nccl models NCCL's choice for an all-reduce, an all-gather or a reduce-scatter, not a ") +
                    collective_name(c));
  NcclChoice best;
  best.model_us = -1;
  for (NcclAlgo a : {NcclAlgo::Tree, NcclAlgo::Ring, NcclAlgo::Nvls, NcclAlgo::NvlsTree}) {  // a tie keeps the first
    if (!(allowed & nccl_algo_bit(a))) continue;
    for (Protocol p : kProtocols) {
      const double t = model_us(c, a, p, bytes);
      if (t >= 0 && (best.model_us < 0 || t < best.model_us)) best = {a, p, 0, t};
    }
  }
  if (best.model_us < 0)
    throw UserError(std::string("nccl.algorithms allows none that NCCL runs here: on one node the ring and nvls (NVLS "
                    "needs Hopper or later), across nodes the ring, and for an all-reduce tree, nvlstree and (with "
                    "nccl.collnet) nvls"));
  if (best.algo == NcclAlgo::Nvls || best.algo == NcclAlgo::NvlsTree) {
    best.channels = nvls_.channels;  // the program's own (nvls.channels, ring.channels)
  } else {
    // enqueue.cc: fewer channels while each would get less than its threads' share.
    const uint64_t per = channel_bytes(best.algo, best.proto, ranks_);
    int nc = comm_channels();
    while (nc >= 2 && bytes < static_cast<uint64_t>(nc) * per) --nc;
    best.channels = nc;
  }
  return best;
}

}  // namespace incsim::collectives
