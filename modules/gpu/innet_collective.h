#pragma once
// Collectives the network helps with (Klenk §IV): all-reduce by push or pull
// reduction in the switches, all-gather and broadcast by multicast. Each GPU's
// copy engine issues the packets (DMA-initiated, Klenk §IV-F3, as the paper's
// traffic generators do, §V) under its wave controller (Fig. 6): each GPU's
// program hands its copy engine (gpu/copy_engine.h) one descriptor and
// translates the addresses of its blocks.
//
// Push: every GPU writes its whole input as reduction writes to the output
// region; each block is reduced at its home port and the result multicast to
// every GPU (or, after evictions, completed and multicast by its home GPU).
// Pull: after an optional barrier (an all-reduce on a flag), each GPU pulls
// its 1/n of the blocks from the group, adds its own data and multicasts the
// result. A wave's responses: push, the results that reach this GPU; pull,
// the pull responses. Reduce-scatter is a pull whose result stays with the
// puller (NVLS's multimem load, NCCL 2.17+): rank r's output is its 1/n of
// the blocks.
#include <memory>
#include <string>
#include <vector>

#include "collectives/data_pattern.h"
#include "gpu/collective.h"
#include "gpu/copy_engine.h"
#include "gpu/gpu.h"
#include "topology/multicast.h"
#include "core/param.h"

namespace incsim::gpu {

enum class InNetKind { AllReducePush, AllReducePull, ReduceScatterPull, AllGather, Broadcast };

inline const Param<bool> kPullBarrier{"pull.barrier", true, Range::none(),
                                      "pull all-reduce starts with a barrier, an all-reduce on a flag (Klenk "
                                      "§IV-B, §VI-A: without it pulls may read stale data)"};

class InNetworkCollective : public Collective {
 public:
  // gpus in rank order; endpoint_GBps is one GPU's payload injection bandwidth.
  InNetworkCollective(InNetKind kind, std::vector<Gpu*> gpus, const topo::Topology& topo,
                      topo::MulticastFabric& fabric, collectives::DType dtype, collectives::RedOp redop,
                      uint64_t seed, WaveParams waves, bool barrier, double endpoint_GBps);
  ~InNetworkCollective() override;
  void start(uint64_t bytes, std::function<void()> on_done) override;
  uint64_t wrong() const override;
  double bound_us(uint64_t bytes) const override;
  double busbw_factor() const override;
  double done_fraction() const override;  // output elements landed of all GPUs' outputs
  std::string redop() const override;
  std::string error() const override { return error_; }

  class Rank;

 private:
  void rank_done();
  void fail(const std::string& why);
  void remove_regions();
  InNetKind kind_;
  std::vector<Gpu*> gpus_;
  const topo::Topology& topo_;
  topo::MulticastFabric& fabric_;
  collectives::DType dtype_;
  collectives::RedOp redop_;
  collectives::DataPattern data_;
  uint64_t seed_;
  WaveParams waves_;
  bool barrier_;
  double endpoint_GBps_;
  int window_;      // of the multicast address space (MulticastFabric::claim_window)
  uint64_t base_;   // its first address
  int out_region_ = -1, in_region_ = -1, flag_region_ = -1;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::function<void()> on_done_;
  int running_ = 0;
  std::string error_;
};

}  // namespace incsim::gpu
