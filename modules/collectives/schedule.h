#pragma once
// All-reduce schedules as per-node schedule tables (MultiTree §IV-A, Fig. 5),
// for MultiTree and for every baseline, and a symbolic checker for them.
// Plain C++, no SystemC.
//
// The model. The buffer of every node is cut into `slices` equal slices; a
// flow (FlowID) is one chunk of the buffer, slices [start, start + size),
// reduced along one tree and broadcast back along a tree (for MultiTree flow
// i is tree i, rooted at node i). Time advances in lockstep steps 1, 2, ...:
// a message sent in step s arrives by the end of step s, and a node can only
// send in step s what it held at the start of step s.
//
// Table entries (one Reduce entry per node and flow; Gather entries per node,
// flow and sending step):
//  - Reduce, parent p: in `step`, once the Reduce messages of this flow from
//    all `children` have arrived (in earlier steps), add them to the node's
//    own data and send the partial sum to p.
//  - Reduce, parent kNil: the node is the root of the flow's reduction; the
//    full sum is complete once all children's messages have arrived; `step`
//    is the step the last of them arrives in. Sends nothing.
//  - Gather, children non-empty: in `step`, send the flow's full sum to the
//    children; it came from `parent` in an earlier step (kNil: the node is
//    the root of the reduction). A node that sends a flow in several steps
//    has one Gather entry per step.
//  - Gather, no children: the node receives the full sum from `parent` in
//    `step` (a leaf). Sends nothing.
//  - Nop (flow kNil): the node sends nothing in `step`; the lockstep
//    down-counter holds injection for one step time (§IV-A).
// So every node has 2N entries for N flows when every flow is sent at most
// once per node, as §V-A counts ("a table needs 2N entries").
#include <cstdint>
#include <string>
#include <vector>

#include "topology/topology.h"

namespace incsim::collectives {

constexpr int kNil = -1;

enum class Op : uint8_t { Reduce, Gather, Nop };
const char* op_name(Op op);

struct Entry {
  Op op = Op::Nop;
  int flow = kNil;   // FlowID: tree / chunk id
  int parent = kNil;
  std::vector<int> children;
  int step = 0;      // 1-based
  int start = 0;     // first slice of the flow's chunk
  int size = 0;      // slices in the chunk
  // Does this entry send a message (or several, one per child)?
  bool sends() const {
    return (op == Op::Reduce && parent != kNil) || (op == Op::Gather && !children.empty());
  }
  bool operator==(const Entry& o) const;
};

// One message as the tables imply it.
struct Message {
  int src, dst;
  Op op;
  int flow;
  int step;
};

struct Schedule {
  std::string algorithm;
  int nodes = 0;
  int slices = 0;
  int steps = 0;         // last step of the schedule
  int reduce_steps = 0;  // steps 1..reduce_steps carry only Reduce (0: phases overlap)
  struct Chunk {
    int start, size;
  };
  std::vector<Chunk> flows;                 // [flow]
  std::vector<std::vector<Entry>> tables;   // [node], sorted by (step, op, flow)

  // Optional explicit paths (directed links) for messages whose synthesis
  // chose one, e.g. MultiTree on indirect networks (§III-C3). Messages
  // without one follow the topology's routing tables.
  struct Path {
    int step, src, dst;
    std::vector<topo::PortRef> out;  // output port at each node from src on
  };
  std::vector<Path> paths;

  // Broadcast (Blink §4.1): the rank whose input every node receives; the
  // tables hold Gather entries only. kNil: an all-reduce.
  int broadcast_root = kNil;
  // Optional [flow]: the tree each flow belongs to. A NIC in dataflow mode
  // keeps one ordered stream per link per tree (Blink §4.1, §4.2.2), so a
  // tree's chunks cross a link in order. Empty: every flow is its own tree.
  std::vector<int> flow_tree;

  std::vector<Message> messages() const;  // sorted by (step, src, dst, op, flow)
  int count(Op op) const;
};

// Builds a Schedule from the messages an algorithm sends; derives every
// node's entries (parents, children, steps, receive-only entries) from them.
class ScheduleBuilder {
 public:
  // `flows` chunks, each `slices_per_flow` slices, in flow order.
  ScheduleBuilder(std::string algorithm, int nodes, int flows, int slices_per_flow = 1);
  void reduce(int flow, int src, int dst, int step);
  void gather(int flow, int src, int dst, int step);
  void path(int step, int src, int dst, std::vector<topo::PortRef> out);
  // The schedule being built: its flows, trees and broadcast root may be set before build.
  Schedule& schedule() { return s_; }
  // Derives the tables; with nops, adds a Nop entry in every step 1..steps in
  // which a node sends nothing (the lockstep of §IV-A).
  Schedule build(bool nops = true) const;

 private:
  struct Msg {
    int flow, src, dst, step;
    Op op;
  };
  Schedule s_;
  std::vector<Msg> msgs_;
};

struct VerifyOptions {
  // With a topology (endpoint i = node i), verify counts the messages on every
  // directed link in every step, following Schedule::paths or the routes.
  const topo::Topology* topology = nullptr;
  // Then report every directed link that carries more messages in one step
  // than its capacity: its bandwidth over the slowest switch-to-switch link's
  // (at least 1). MultiTree promises this; ring on a torus does not.
  bool exclusive_links = false;
};

struct VerifyResult {
  std::vector<std::string> problems;  // empty: the schedule is a correct all-reduce
  int steps = 0;
  int messages = 0;
  // With a topology: the largest messages-over-capacity on any directed link,
  // per step (index 0 = step 1) and overall.
  std::vector<double> link_load;
  double max_link_load = 0;
  bool ok() const { return problems.empty(); }
  std::string report() const;  // the problems, one a line (at most 20)
};

// Simulates the schedule symbolically, step by step: which nodes' data each
// node's copy of each flow holds. Reports: malformed entries (ids, steps,
// duplicates), a node sending what it does not hold at that step (a partial
// sum passed on twice, a Gather before the full sum), a message the receiving
// table does not expect (or expects later than it sends on), a node's data
// counted twice in a sum, a flow reduced at other than one root, a node ending
// without the full sum of every flow, the flows not tiling the buffer, and,
// with options, links over capacity.
VerifyResult verify(const Schedule& s, int n, const VerifyOptions& opt = {});
// The same for a broadcast (s.broadcast_root set): only Gather entries; every
// other node receives every flow exactly once, from a node that held it in
// an earlier step (the root holds all from the start), as its table expects.
VerifyResult verify_broadcast(const Schedule& s, int n);

// The same schedule with rank r's table run by node node_of[r] (a rank
// mapping), parents and children renamed alike. Explicit paths are dropped.
Schedule relabel(const Schedule& s, const std::vector<int>& node_of);
// The same schedule without its NOP entries: no node holds back for the
// lockstep (MultiTree §IV-A's NOP, switched off for comparison).
Schedule without_nops(Schedule s);

// Each node's table in the layout of Fig. 5 (Op FlowID Parent Children Step
// Start Size), one block per node.
std::string format_tables(const Schedule& s);

// Byte range of slices [start, start + size) of a `bytes` buffer of
// `elem_bytes` elements cut into `slices` slices as evenly as whole elements
// allow: {offset, length}.
struct ByteRange {
  uint64_t offset, length;
};
ByteRange slice_bytes(uint64_t bytes, uint32_t elem_bytes, int slices, int start, int size);

}  // namespace incsim::collectives
