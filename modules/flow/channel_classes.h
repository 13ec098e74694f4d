#pragma once
// Channels that repeat on every rail, run once (flow.channel_classes,
// docs/flow.md, "Channel classes"). On a cluster whose nodes are alike, a
// program whose channel c' does on each node's GPU i + 1 what channel c
// does on its GPU i (NCCL's trees: channel 2j's chain starts at GPU j, and
// its tree over the nodes runs on rail j) keeps the two in step: at every
// moment the flows of c' are the images of c's, on the images of their
// links. One channel of each class then stands for all of it: its flows
// cross the narrowest link of each class of links (a link and its images),
// weighted by the class's channels over the class's links, which loads
// each link as its class is loaded; max-min fair shares are unique, so they
// have the same symmetry and every flow its rate. A whole run's channels do
// not stay in step (the memory's jitter, an ulp of a rate reordering
// events due together, hgx-h100's uneven NVSwitch trunks, which a class of
// links pools), so the classes run a few percent fast. Plain C++, no
// SystemC.
#include <string>
#include <vector>

#include "collectives/program.h"
#include "flow/graph.h"
#include "topology/topology.h"

namespace incsim::flow {

struct ChannelClasses {
  collectives::Program reps;     // the program less every channel that is not its class's first
  std::vector<int> first;        // [channel]: its class's first channel, which runs for it
  std::vector<int> members;      // [channel]: its class's channels
  std::vector<int> canon;        // [flow link]: the narrowest link of its class, which stands for it
  std::vector<double> per_link;  // [flow link]: 1 over its class's links
  int classes = 0;
  // Classes that pool links the rotation does not map one to one, and their links.
  int pooled = 0;
  uint64_t pooled_links = 0;
  // The weight on canon[l] of a flow of `channel`'s class per unit of its
  // weight on flow link l.
  double weight(int channel, int l) const {
    return members[static_cast<size_t>(channel)] * per_link[static_cast<size_t>(l)];
  }
};

// The classes of program p's channels (p's ranks on `endpoints` of cluster
// t) under the rotation of every node's GPUs, on the flow links of g, and the
// orbits of its links under that rotation, checked on every route p's
// connections take. Returns false with the reason in `why` where there are
// none: p is not on whole cluster nodes, has in-network operations, or a
// channel or a route has no image.
bool channel_classes(const collectives::Program& p, const topo::Topology& t, const FlowGraph& g,
                     const std::vector<int>& endpoints, ChannelClasses& out, std::string& why);

}  // namespace incsim::flow
