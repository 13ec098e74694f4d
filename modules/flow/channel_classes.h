#pragma once
// Parts of a program that repeat on every rail, run once
// (flow.channel_classes, docs/flow.md, "Channel classes"). On a cluster
// whose nodes are alike, a program whose part u' does on each node's GPU
// i + 1 what part u does on its GPU i keeps the two in step: at every
// moment the flows of u' are the images of u's, on the images of their
// links. A part is what runs together: operations joined by a dependency,
// a queue, a connection or an in-network group's message chunk. NCCL's
// trees' and rings' parts are their channels (channel 2j's chain starts at
// GPU j, and its tree over the nodes runs on rail j); NVLSTree's and
// NVLS-SHARP's are each GPU's share of a channel (GPU h heads block h: its
// node's reducing read of it, the all-reduce of it on rail h, and its
// multicast). A GPU's channels that do the same on the same GPUs (the
// ring's channels 2j and 2j + 1, CollNet's node rings) are one another's
// images under the identity, and a class is what the two symmetries join.
// One part of each class then stands for all of it: its flows
// cross the narrowest link of each class of links (a link and its images),
// weighted by the class's parts over the class's links, which loads each
// link as its class is loaded; max-min fair shares are unique, so they have
// the same symmetry and every flow its rate. A whole run's parts do not
// stay in step (the memory's jitter, an ulp of a rate reordering events due
// together, hgx-h100's uneven NVSwitch trunks, which a class of links
// pools), so the classes run a few percent off. Plain C++, no SystemC.
#include <string>
#include <vector>

#include "collectives/program.h"
#include "flow/graph.h"
#include "flow/innet.h"
#include "topology/topology.h"

namespace incsim::flow {

struct ChannelClasses {
  collectives::Program reps;      // the program less every part that is not its class's first
  std::vector<int> members;       // [reps' operation, by rank_begin]: its class's parts
  std::vector<int> part_channel;  // [part]: its channel
  std::vector<int> first;         // [part]: its class's first part, which runs for it
  std::vector<int> canon;         // [flow link]: the narrowest link of its class, which stands for it
  std::vector<double> per_link;   // [flow link]: 1 over its class's links, times its canon's fill (link_classes)
  std::vector<double> mean;       // [flow link]: its class's mean bytes per byte its canon carried
  int classes = 0;
  // Classes that pool links the rotation does not map one to one, and their links.
  int pooled = 0;
  uint64_t pooled_links = 0;
  int parts() const { return static_cast<int>(first.size()); }
  // The weight on canon[l] of a flow of reps' operation `op` per unit of
  // its weight on flow link l.
  double weight(uint32_t op, int l) const {
    return members[op] * per_link[static_cast<size_t>(l)];
  }
};

// The classes of program p's parts (p's ranks on `endpoints` of cluster t)
// under the rotation of every node's GPUs and the identity, on the flow
// links of g, and the orbits of its links under them, checked on every route p's
// connections and in-network operations (their ways, innet) take. Returns
// false with the reason in `why` where there are none: p is not on whole
// cluster nodes, or a part or a route has no image.
bool channel_classes(const collectives::Program& p, const topo::Topology& t, const FlowGraph& g, InNetwork& innet,
                     const std::vector<int>& endpoints, ChannelClasses& out, std::string& why);

}  // namespace incsim::flow
