#pragma once
// The GPUs' copy engines' programs run as flows (--fidelity flow,
// docs/flow.md): Klenk's push, pull and multicast (gpu/copy_collective.h)
// with the same operations and order. Each rank's operations start once
// their dependencies are done, and those that issue run one at a time, as
// the engine runs its descriptors; one that only receives or only lends its
// data to others' reads holds nothing. Each descriptor is one flow of its
// in-network shape (flow/innet.h): a push joins every member's writes (the
// switches sum nothing before the last member's arrive), a pull's reads
// carry the multicast that forwards their results block by block. The wave
// controller (Klenk §IV-F1) caps a descriptor's rate by Little's law, and
// so do a reader's tables (Eq. (1)): a read stalls for a free entry. A push
// does not: a full table evicts partial sums to their home GPUs (§IV-C),
// which flows do not model. No element values travel. Plain C++.
#include <cstdint>
#include <optional>
#include <vector>

#include "collectives/program.h"
#include "flow/executor.h"
#include "flow/graph.h"
#include "flow/innet.h"
#include "flow/shared.h"

namespace incsim::flow {

// The copy engines' costs, as packet level has them (gpu/copy_engine.h,
// platforms/communicator.cpp).
struct CopyCosts {
  // A memory access: its latency and a uniform jitter on top. A descriptor
  // that carries data waits for its first read; a pull's answers for the
  // members' reads.
  double mem_ns = 0, jitter_ns = 0;
  // The wave controller: waves outstanding (0: no limit) of wave_bytes
  // each, a wave's blocks issued at the GPU's injection bandwidth.
  int waves = 0;
  uint64_t wave_bytes = 0;
  double b_in_GBps = 0;
};

class CopyFlows : public Executor {
 public:
  // endpoints[r]: the endpoint rank r runs on. The program must have passed
  // check_program and gpu::CopyCollective::cannot_run.
  // shared: the network start() runs on, whose graph it routes on.
  CopyFlows(collectives::Program p, const FlowMachine& m, std::vector<int> endpoints, CopyCosts costs,
            uint32_t elem_bytes, uint64_t seed, SharedNetwork* shared = nullptr);
  ~CopyFlows() override;
  Result run(uint64_t bytes, const Progress& progress = {}) override;
  std::unique_ptr<Running> start(uint64_t bytes, Network& on, Done done) override;
  const collectives::Program& program() const override { return p_; }

 private:
  class Run;

  collectives::Program p_;
  const FlowMachine& m_;
  std::vector<int> endpoints_;
  CopyCosts costs_;
  uint32_t elem_;
  uint64_t seed_;
  SharedNetwork* shared_;
  std::optional<FlowGraph> own_graph_;
  FlowGraph* graph_;
  InNetwork innet_;
};

}  // namespace incsim::flow
