#pragma once
// Per-node schedule tables (MultiTree §IV-A, Fig. 5): what a NIC compiles a
// program of table operations into (schedule_of) and --print-schedule
// shows. Algorithms are programs (table_program.h builds them from their
// messages); a table is their lockstep view. Plain C++, no SystemC.
//
// The buffer of every node is cut into `slices` equal slices; a flow
// (FlowID) is one chunk of the buffer, slices [start, start + size),
// reduced along one tree and broadcast back along a tree (for MultiTree
// flow i is tree i, rooted at node i). Time advances in lockstep steps 1,
// 2, ...: a message sent in step s arrives by the end of step s.
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
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "collectives/program.h"
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

// The tables a NIC program compiles to (docs/programs.md, "How the NICs
// execute a program"): a flow is a chunk the operations move, on the channel
// of its tree; a send is a Reduce message if its receiver reduces it (an
// `rrc`), a Gather message if it copies it (an `r`), each receive meeting
// its send in order per channel and pair, in the send's step; every entry
// is derived from the messages, and NOP entries fill the steps in which a
// node sends nothing if the program has NOPs. Throws UserError naming what a
// table cannot hold: another collective or engine, an operation a table
// has no entry for, one without its timestep, chunks moved in two sizes or
// on two channels, overlapping flows, a send never received or received in
// another step or chunk.
Schedule schedule_of(const Program& p);

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

// The lockstep step-time estimate (MultiTree §IV-A, footnote 4): a step's
// message (the largest flow) takes its flits' serialization on a network
// link, less the flits the NI buffer holds when the message does not fit in
// it. A NOP loads the lockstep down-counter with it.
struct StepEstimate {
  double link_GBps;       // the network links' bandwidth
  uint32_t buffer_flits;  // the NI buffer
  double clock_ghz;       // router cycles, for the waveform
};
// How a NIC frames a message's packets: a head flit on each (one_head
// false, MultiTree Fig. 7a) or on the first only (message-based flow
// control, §IV-B, Fig. 7b).
struct MessageFraming {
  uint32_t header_bytes, flit_bytes, max_payload_bytes;
  bool one_head = false;
  // What a message of `len` payload bytes puts on a link.
  uint64_t wire_bytes(uint64_t len) const;
};
double lockstep_ns(const Schedule& s, uint64_t bytes, uint32_t elem_bytes, const MessageFraming& f,
                   const StepEstimate& e);

// The ports each rank's messages leave by: those the program's link hints
// name (on the message's channel, the flow's tree, or on every channel),
// else every port whose routes reach the destination in t. endpoint_of[r]:
// rank r's endpoint; an endpoint outside t (a NIC tested alone) trusts its
// hints. ports_of(r) and name_of(r): rank r's endpoint's port count and
// name. Throws UserError for a hint that leads nowhere it says.
struct MessagePorts {
  std::vector<std::vector<std::vector<int>>> to;                 // [rank][destination]
  std::vector<std::vector<std::vector<std::vector<int>>>> tree;  // [rank][tree][destination], where hinted
};
MessagePorts message_ports(const Program& p, const topo::Topology& t, const std::vector<uint32_t>& endpoint_of,
                           const std::function<int(int)>& ports_of, const std::function<std::string(int)>& name_of);

// Rank `rank`'s table as a NIC loads it (nic/nic.cpp, Table::load): what
// each flow asks of the rank, and per entry the shares of its messages (a
// Reduce to the parent, a Gather to each child), each split over the ports
// that lead to its peer (tree_ports[tree][dst] where given, else
// ports_to[dst]), with its dataflow lane: one per (port, destination, tree).
struct TableView {
  struct Flow {
    uint32_t reduce_children = 0;  // Reduce messages the rank takes for the flow
    bool root = false;             // the flow's reduction ends here
    bool gathers = false;          // a Gather arrives from a parent
  };
  struct Share {
    int flow, dst, port, part, parts;
    bool reduce;  // a partial sum up the tree, else the sum down
    int tree, lane;
  };
  std::vector<Flow> flows;           // [flow]
  std::vector<Share> shares;         // entry by entry
  std::vector<uint32_t> first_share;  // [entry]: its shares are [first_share[e], first_share[e + 1])
  int lanes = 0;
};
TableView table_view(const Schedule& s, int rank, const std::vector<std::vector<int>>& ports_to,
                     const std::vector<std::vector<std::vector<int>>>& tree_ports);

// The header's line on a schedule: its steps, flows and table entries.
void describe_schedule(std::ostream& os, const Schedule& s, bool dataflow);

}  // namespace incsim::collectives
