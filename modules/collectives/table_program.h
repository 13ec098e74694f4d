#pragma once
// Programs of the NICs' schedule-table operations (docs/programs.md, "How the
// NICs execute a program"), built from the messages an algorithm sends in
// MultiTree's lockstep steps (Huang et al., ISCA 2021, §IV-A). MultiTree, the
// baselines and Blink's trees are written this way. Plain C++, no SystemC.
//
// The model. Every node's buffer is cut into chunks; a flow is a run of
// chunks, reduced along one tree and broadcast back along a tree (MultiTree's
// flow i is tree i, rooted at node i), or only broadcast from a root. Time
// advances in steps 1, 2, ...: a message sent in step s arrives by the end of
// step s, and a node can send in step s only what it held at its start.
//  - reduce(f, u, v, s): in step s, u sends v its partial sum of flow f (its
//    own data and every Reduce message of f it received before), which v adds
//    to its own;
//  - gather(f, u, v, s): in step s, u sends v the full sum of f (or, in a
//    broadcast, the root's data), which v keeps.
// build() writes each node's operations step by step: its sends (`s`), then
// what it receives (`rrc` for a Reduce message, `r` for the first Gather of a
// flow), each in its message's step, and with NOPs a `nop` in each step in
// which it sends nothing (the lockstep down-counter of §IV-A); within a step
// by Reduce before Gather, then flow, then the order the messages were
// given. A flow's operations are on the channel of its tree (a NIC in
// dataflow mode keeps a tree's chunks in order on a link, Blink §4.1); the
// program is in place on output chunks: schedule_of compiles it to the
// tables of Fig. 5.
#include <string>
#include <vector>

#include "collectives/program.h"

namespace incsim::collectives {

class TableProgramBuilder {
 public:
  // Chunks [start, start + size) of the buffer, on a channel (its tree).
  struct Flow {
    int start = 0, size = 1, channel = 0;
  };
  // `flows` flows, flow f chunk f of `flows` on channel f.
  TableProgramBuilder(std::string name, int nodes, int flows);
  // Flows as given, in a buffer of `chunks` chunks.
  TableProgramBuilder(std::string name, int nodes, std::vector<Flow> flows, int chunks);
  void reduce(int flow, int src, int dst, int step);
  void gather(int flow, int src, int dst, int step);
  // A broadcast: the root holds every flow from the start; gathers only.
  void broadcast_from(int root) { root_ = root; }
  Program build(bool nops = true) const;

 private:
  struct Message {
    int flow, src, dst, step;
    bool reduce;
  };
  std::string name_;
  int nodes_;
  std::vector<Flow> flows_;
  int chunks_;
  int root_ = kNone;
  std::vector<Message> messages_;
};

}  // namespace incsim::collectives
