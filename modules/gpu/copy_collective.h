#pragma once
// The GPUs' copy engines executing a collective program (docs/programs.md) of
// in-network operations (Klenk §IV): reducing writes into the switches'
// tables (push), reducing reads through them (pull), multicast writes and
// barriers. Each GPU's copy engine issues the packets (DMA-initiated, Klenk
// §IV-F3, as the paper's traffic generators do, §V) under its wave
// controller (Fig. 6); each operation that moves blocks is one descriptor
// (gpu/copy_engine.h) in the engine's queue, whose addresses its rank
// translates.
//
// A group of the program is a share of the multicast address space (a
// window, MulticastFabric::claim_window) with its regions: the one the
// results land in (a reducing write's home ports reduce there), the one
// reads are served from, a barrier's flag. A reducing write's block is
// reduced at its home port and the result multicast to every member (or,
// after evictions, completed and multicast by its home GPU, §IV-C). A
// barrier is a push all-reduce of one flag (§VI-A: "1 packet per node"). A
// reducing read comes back as the others' sum, to which the reader adds its
// own; a multicast whose source is a read's destination forwards each block
// as it comes back (Klenk's pull, NVLS's multimem ld_reduce then st), so
// neither waits for the other's whole chunk.
//
// Operations of a queue issue in order; an operation that only receives or
// only lends its data to others' reads does not hold its queue.
#include <memory>
#include <string>
#include <vector>

#include "elements/data_pattern.h"
#include "collectives/program.h"
#include "gpu/collective.h"
#include "gpu/copy_engine.h"
#include "gpu/gpu.h"
#include "topology/multicast.h"
#include "core/param.h"

namespace incsim::gpu {

class CopyCollective : public Collective {
 public:
  // gpus in rank order. The program must have passed check_program and
  // cannot_run.
  CopyCollective(collectives::Program program, std::vector<Gpu*> gpus, const topo::Topology& topo,
                 topo::MulticastFabric& fabric, elements::DType dtype, elements::RedOp redop, uint64_t seed,
                 WaveParams waves);
  ~CopyCollective() override;
  // Why the copy engines cannot run a checked program, or "".
  static std::string cannot_run(const collectives::Program& p);

  void start(uint64_t bytes, std::function<void()> on_done) override;
  uint64_t wrong() const override;
  double done_fraction() const override;  // output elements landed of all GPUs' outputs
  std::string redop() const override;
  std::string error() const override { return error_; }

  class Rank;
  struct Group;

 private:
  void rank_done();
  void fail(const std::string& why);
  void remove_regions();
  collectives::Program program_;
  std::vector<Gpu*> gpus_;
  const topo::Topology& topo_;
  topo::MulticastFabric& fabric_;
  elements::DType dtype_;
  uint32_t elem_;  // bytes of an element of dtype_
  elements::RedOp redop_;
  elements::DataPattern data_;
  uint64_t seed_;
  WaveParams waves_;
  std::vector<Group> groups_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::function<void()> on_done_;
  int running_ = 0;
  std::string error_;
};

}  // namespace incsim::gpu
