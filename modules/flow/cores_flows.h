#pragma once
// The GPUs' cores' programs run as flows (--fidelity flow, docs/flow.md):
// the same operations, queues, connections, mailbox slots and passes as the
// packet-level executor (gpu/cores_rank.h), with each transfer a flow on
// its route through the platform's graph (NVLink, a GPU's PCIe link to its
// adapter, InfiniBand) and the protocol's fixed costs as latencies: the
// first memory read, the fence's acknowledgement round trip and the flag
// store (Simple), the receiver's poll, the head flag that frees a slot.
// No element values travel. Plain C++, no SystemC.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "collectives/executor.h"
#include "collectives/layout.h"
#include "collectives/nccl.h"
#include "collectives/program.h"
#include "core/param.h"
#include "flow/channel_classes.h"
#include "flow/executor.h"
#include "flow/graph.h"
#include "flow/innet.h"
#include "flow/network.h"
#include "flow/shared.h"
#include "topology/topology.h"

namespace incsim::flow {

inline const Param<bool> kMergePlanes{
    "flow.merge_planes", true, Range::none(),
    "flows: a GPU's links to the switches that spread its packets (NVSwitch chips) are one link each way where "
    "no connection is pinned to one of them; the same rates, far fewer links per flow (false: a link each)"};
// A message of many passes costs what a few cost: runs of K/4, K/2 and K
// passes, and the rest at their period (CoresFlows::run). On one fabric the
// period settles at once (within 0.06% of whole runs from K = 16 on DGX-2,
// hgx-h100, A100, B200, NVL72, fattree2l and platform files; docs/flow.md,
// "Steady passes"), so auto runs it there; across nodes it wanders for a
// hundred passes (up to 9% off), so auto runs every pass on a cluster.
inline const Param<std::string> kSteadyPasses{
    "flow.steady_passes", "auto", Range::none(),
    "K: a message of more than 2K passes per channel runs K/4, K/2 and K passes and adds the others at the "
    "period from K/4 to K (docs/flow.md); 0 runs every pass; auto (the default): K = 16 off a cluster, within "
    "0.06% of the whole run there, and every pass on a cluster, where the period wanders (up to 9% off)"};
constexpr uint64_t kSteadyPassesAuto = 16;
// A class's parts run in step, where a whole run's drift apart and end
// with the slowest (docs/flow.md, "Channel classes"): within 4.4% of every
// channel's time from 16 nodes on the cross-check, up to 11.4% fast on 3.
// So auto runs classes from kClassesFromNodes nodes, where a whole run's
// CPU grows with its channels, and every channel below.
inline const Param<std::string> kChannelClasses{
    "flow.channel_classes", "auto", Range::none(),
    "flows: on a cluster, a part of the program that does on each node's next GPU what another does (the "
    "rails' copies of NCCL's trees and rings, each GPU's share of NVLSTree and NVLS-SHARP), or on the same "
    "GPUs what another channel does (CollNet's channels, the ring's pairs), runs once for its class, its flows "
    "weighted on each link's class: true, false, or auto (the default): true on clusters of 16 nodes or more "
    "(within 4.4% of every channel there), false below (up to 11% fast on a few nodes), and where collectives "
    "share the network (docs/flow.md)"};
constexpr int kClassesFromNodes = 16;

// The cores' fixed costs and slots (gpu/cores.h), as packet level has them.
struct CoresCosts {
  // A memory access: its latency and a uniform jitter on top (Klenk §V:
  // 180 cycles plus [0, 180)).
  double mem_ns = 0, jitter_ns = 0;
  struct Slots {
    uint64_t chunk_bytes = 0;
    int slots = 0;
  } simple, ll, ll128;
  collectives::ProtocolBySize by_size;
  bool nccl_slices = false;  // gpu::CoresParams::nccl_slices
  // Reducing writes (SHARP's) a queue may have in flight, each a 128-byte
  // block whose sum has not landed (gpu::CoresParams::push_credits).
  int push_credits = 0;
  // NCCL's proxies on a step between nodes (gpu::CoresParams::net).
  collectives::NetSteps net;
};

class CoresFlows : public Executor {
 public:
  // endpoints[r]: the endpoint index rank r runs on. The program must have
  // passed check_program and be the cores', with no in-network operation
  // cannot_run refuses.
  // seed: the memory's jitter draws.
  // steady_passes: kSteadyPasses (run).
  // shared: the network start() runs on, whose graph it routes on (else
  // its own, which keeps a GPU's links apart only where its connections
  // pin them).
  // classes: kChannelClasses (run; not on a shared network).
  CoresFlows(collectives::Program p, const FlowMachine& m, std::vector<int> endpoints, CoresCosts costs,
             uint32_t elem_bytes, uint64_t seed, uint64_t steady_passes = 0, SharedNetwork* shared = nullptr,
             bool classes = false);
  ~CoresFlows() override;
  // Runs one message of `bytes` from time 0 to the last rank's end (under
  // steady passes, progress's fraction counts every run's operations).
  Result run(uint64_t bytes, const Progress& progress = {}) override;
  // Every pass runs: steady passes extrapolate a run alone.
  std::unique_ptr<Running> start(uint64_t bytes, Network& on, Done done) override;
  const collectives::Program& program() const override { return p_; }
  // Why a program cannot run as flows, or empty.
  static std::string cannot_run(const collectives::Program& p);

 private:
  class Run;
  // A size's protocol, slots and passes: the message's elements, its chunks
  // per pass and part, and the most passes a part makes.
  struct Plan {
    collectives::Protocol proto = collectives::Protocol::Simple;
    CoresCosts::Slots slots;
    uint64_t elems = 0, passes = 0;
    uint32_t blocks = 1;
    // The message less `drop` whole passes of every part (each part's last
    // pass stays as it is), cut into `parts` parts of elements of elem bytes.
    collectives::PassLayout layout(int parts, uint32_t elem, uint64_t drop) const {
      const uint64_t chunk = slots.chunk_bytes / elem;
      return collectives::PassLayout(parts, blocks, chunk, elems - drop * chunk * blocks * static_cast<uint64_t>(parts));
    }
  };
  Plan plan(uint64_t bytes) const;
  // The (GPU node, neighbour) pairs the program's connections leave by:
  // links that stay their own (FlowGraph).
  static std::set<std::pair<int, int>> pinned(const collectives::Program& p, const topo::Topology& t,
                                              const std::vector<int>& endpoints);
  collectives::Program p_;
  const FlowMachine& m_;
  std::vector<int> endpoints_;
  CoresCosts costs_;
  uint32_t elem_;
  uint64_t seed_, steady_passes_;
  collectives::ChannelParts parts_;
  SharedNetwork* shared_;
  std::optional<FlowGraph> own_graph_;
  FlowGraph* graph_;
  InNetwork innet_;  // the in-network operations' shapes
  // Under kChannelClasses, the classes found, else why there are none.
  std::unique_ptr<ChannelClasses> classes_;
  std::string no_classes_;
};

}  // namespace incsim::flow
