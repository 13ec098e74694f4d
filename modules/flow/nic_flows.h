#pragma once
// The NICs' schedule tables run as flows (--fidelity flow, docs/flow.md):
// the program compiled to the same tables (collectives::schedule_of) and
// walked by the same decoder as the packet-level NIC (nic/nic.h): in lockstep
// (an entry of a later step waits for the timestep counter, which moves on
// once no stream is sending and a NOP's lockstep count is over) or, for
// dataflow programs (Blink), any entry whose dependencies are met, each
// (port, destination, tree) one ordered lane. A message is split over the
// ports that lead to its destination, each share a flow from its port to
// the peer after the DMA's first read; a Reduce waits for its children's
// partial sums, a Gather for the sum. No element values travel. Plain C++.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectives/program.h"
#include "collectives/schedule.h"
#include "flow/executor.h"
#include "flow/graph.h"
#include "flow/shared.h"

namespace incsim::flow {

// The NIC's costs, as packet level has them (nic/scheduled_collective.h).
struct NicCosts {
  // The DMA's first read of a message: a memory access, its latency and a
  // uniform jitter on top (gpu/memory.h).
  double mem_ns = 0, jitter_ns = 0;
  collectives::MessageFraming framing;  // the GPUs' packets, one head flit per packet or per message
  collectives::StepEstimate estimate;   // a NOP's lockstep count
  // The first switch's input buffer and output queue per VC
  // (switch.in_buffer_bytes, switch.out_queue_bytes); 0: each its link's
  // credit round trip, as packet level sizes them.
  uint32_t in_buffer_bytes = 0, out_queue_bytes = 0;
};

class NicFlows : public Executor {
 public:
  // endpoints[r]: the endpoint rank r runs on. Throws UserError if the
  // program does not compile to tables or a link hint leads nowhere.
  // shared: the network start() runs on, whose graph it routes on.
  NicFlows(collectives::Program p, const FlowMachine& m, std::vector<int> endpoints, NicCosts costs,
           uint32_t elem_bytes, uint64_t seed, SharedNetwork* shared = nullptr);
  ~NicFlows() override;
  Result run(uint64_t bytes, const Progress& progress = {}) override;
  std::unique_ptr<Running> start(uint64_t bytes, Network& on, Done done) override;
  const collectives::Program& program() const override { return p_; }
  const collectives::Schedule& schedule() const { return schedule_; }
  const collectives::MessageFraming& framing() const { return costs_.framing; }
  // Why a program cannot run on the NICs as flows, or empty.
  static std::string cannot_run(const collectives::Program& p);

 private:
  class Run;

  collectives::Program p_;
  collectives::Schedule schedule_;
  const FlowMachine& m_;
  std::vector<int> endpoints_;
  NicCosts costs_;
  uint32_t elem_;
  uint64_t seed_;
  bool dataflow_;
  SharedNetwork* shared_;
  std::optional<FlowGraph> own_graph_;  // made once the tables say which ports messages leave by
  FlowGraph* graph_ = nullptr;          // own_graph_'s or shared_'s
  std::vector<collectives::TableView> tables_;  // [rank]
};

}  // namespace incsim::flow
