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
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "collectives/executor.h"
#include "collectives/layout.h"
#include "collectives/nccl.h"
#include "collectives/program.h"
#include "core/param.h"
#include "flow/network.h"
#include "topology/topology.h"

namespace incsim::flow {

// A message of many passes costs what a few cost: runs of K/4, K/2 and K
// passes, and the rest at their period (CoresFlows::run). Off by default:
// the period wanders by a few percent from span to span (docs/flow.md,
// "Steady passes"), so it is a choice for sizes a whole run cannot reach.
inline const Param<bool> kMergePlanes{
    "flow.merge_planes", true, Range::none(),
    "flows: a GPU's links to the switches that spread its packets (NVSwitch chips) are one link each way where "
    "no connection is pinned to one of them; the same rates, far fewer links per flow (false: a link each)"};
inline const Param<uint64_t> kSteadyPasses{
    "flow.steady_passes", 0, Range::at_least(4).at_most(1ull << 40).or_zero(),
    "K: a message of more than 2K passes per channel runs K/4, K/2 and K passes and adds the others at the "
    "period from K/4 to K, a few percent off the whole run (docs/flow.md); 0 runs every pass"};

// A fabric's packets, as its links carry them.
struct LinkFormat {
  uint32_t header = 16, flit = 16, max_payload = 128;
  // A scale-out network: the adapter gathers the GPU's writes (their
  // payloads, protocol flags included) into packets of max_payload bytes
  // (adapter/hca.h, roce_bridge.h).
  bool gathers = false;
  // What comes back for each gathered packet: RoCE's ACK frame; 0 on
  // InfiniBand, whose adapters acknowledge nothing packet by packet.
  uint32_t ack_bytes = 0;
};

// What the flows run on: the platform's graph with, per link and node, what
// packet level pays there.
struct FlowMachine {
  // Graph g's, each link of the GPUs' fabric and each node paying nothing.
  void size_for(const topo::Topology& g) {
    t = &g;
    link_format.assign(g.links().size(), 0);
    for (auto* v : {&spreads, &acks_early, &aggregates, &hashes}) v->assign(g.nodes().size(), 0);
    node_ns.assign(g.nodes().size(), 0);
  }
  const topo::Topology* t = nullptr;
  std::vector<LinkFormat> formats;   // [0]: the GPUs' fabric
  std::vector<uint8_t> link_format;  // [graph link]: index into formats
  std::vector<double> node_ns;       // [node]: a switch's or an adapter's latency; 0 at an endpoint
  std::vector<uint8_t> spreads;      // [node]: spreads packets evenly over equal-cost ports
  std::vector<uint8_t> acks_early;   // [node]: an adapter, which acknowledges a write once it has taken it
  std::vector<uint8_t> aggregates;   // [node]: a switch whose tables reduce SHARP's writes (ib.sharp.table_bytes)
  // [node]: an Ethernet switch, which keeps a connection on one of its
  // equal-cost ports, by the hash the packet-level switch takes (ECMP,
  // ethernet/ethernet_switch.cpp).
  std::vector<uint8_t> hashes;
  // flow.merge_planes: a GPU's links to the switches that spread its packets
  // are one link each way where no connection is pinned to one of them.
  bool merge_planes = true;
};

// Where the network reduces (docs/flow.md): a group's home switches, each
// with the share of the group's blocks whose home ports it holds.
struct Home {
  int node;
  double share;
};

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
  // Reducing writes (SHARP's) a queue may have in flight, each a 128-byte
  // block whose sum has not landed (gpu::CoresParams::push_credits).
  int push_credits = 0;
};

class CoresFlows {
 public:
  // endpoints[r]: the endpoint index rank r runs on. The program must have
  // passed check_program and be the cores', with no in-network operation
  // cannot_run refuses.
  // seed: the memory's jitter draws.
  // steady_passes: kSteadyPasses (run).
  CoresFlows(collectives::Program p, const FlowMachine& m, std::vector<int> endpoints, CoresCosts costs,
             uint32_t elem_bytes, uint64_t seed, uint64_t steady_passes = 0);
  ~CoresFlows();
  struct Result {
    double time_ns = 0;
    uint64_t flows = 0;
    size_t most_active = 0;  // flows in flight at once, at most
    collectives::Protocol proto = collectives::Protocol::Simple;
    uint64_t transfers = 0;
    // The message's passes per channel, and the passes the runs simulated
    // in all; where they extrapolated, the period each pass after the
    // first steady_from adds (else 0), and how much the periods of the
    // span's two halves differ, relative to it.
    uint64_t passes = 0, simulated_passes = 0, steady_from = 0;
    double pass_ns = 0, period_change = 0;
  };
  // Told now and then while run() runs: the simulated time of the run under
  // way, ns, and how to learn the share of the operations it simulates (of
  // every run, under steady passes) issued so far, which scans every queue:
  // only for a progress line that is due.
  using Progress = std::function<void(const std::function<double()>& fraction, double now_ns)>;
  // Runs one message of `bytes` from time 0 to the last rank's end.
  Result run(uint64_t bytes, const Progress& progress = {});
  const collectives::Program& program() const { return p_; }
  // Why a program cannot run as flows, or empty.
  static std::string cannot_run(const collectives::Program& p);

  // The flow network's link of graph link k's direction d (0: a to b): its
  // own, or where the sending node spreads packets over a trunk of links
  // to one neighbour, the trunk's, one link of their summed bandwidth (per
  // packet, adaptive spreading pools them).
  int flow_link(int k, int d) const { return flow_link_[static_cast<size_t>(2 * k + d)]; }

  // A route from a GPU port to a peer: its flow links with the share of the
  // flow each carries, its one-way latency, and the write acknowledgement's
  // round trip after the last byte lands (at the peer, whose memory adds
  // its latency, or at an adapter on the way).
  struct Route {
    std::vector<std::pair<int, double>> hops;  // (flow link, share), the acks' way back beside each: (link, -share)
    double latency_ns = 0, ack_ns = 0;
    bool acked_by_memory = true;
  };

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
  const Route& route(int rank, int port, int peer);
  // Rank r's ports on a shortest path to rank peer.
  std::vector<int> shortest_ports(int r, int peer) const;
  // The links from graph node `from` to endpoint dst, leaving by `port`
  // (or as the tables route, where port < 0); src: the endpoint whose
  // connection it is, for ECMP's hash (-1: none, the tables' first port).
  Route walk(int from, int port, int dst, int src) const;
  int ecmp_port(int node, int dst, int src) const;
  // From a switch to rank r's GPU: a multicast's or a sum's way down, and
  // reversed, a read's answers' or a contribution's way up.
  const Route& down(int sw, int r);
  // Group g's home switches for reducing writes (topo::MulticastFabric's
  // rule: switches that reduce, reached by every member, on a shortest path
  // between two of them; each takes the blocks of its ports).
  const std::vector<Home>& homes(int g);

  collectives::Program p_;
  const FlowMachine& m_;
  std::vector<int> endpoints_;
  CoresCosts costs_;
  uint32_t elem_;
  uint64_t seed_, steady_passes_;
  collectives::ChannelParts parts_;
  std::map<std::tuple<int, int, int>, Route> routes_;  // (rank, port, peer)
  std::map<std::pair<int, int>, Route> downs_;         // (switch node, rank)
  std::map<int, std::vector<Home>> homes_;             // by group
  std::vector<int> flow_link_;                         // [2 x graph link + direction]
  std::vector<double> capacity_;                       // [flow link]: GB/s
  std::vector<uint8_t> format_;                        // [flow link]: index into FlowMachine::formats
};

}  // namespace incsim::flow
