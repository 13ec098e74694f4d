#pragma once
// The in-network operations' flows (docs/flow.md), whichever engine issues
// them (the cores, cores_flows.h; the copy engines, copy_flows.h): each one
// flow whose link uses carry what packet level sends per 128-byte block: a
// reducing read's header-only requests and the members' answers, merged
// where the switches reduce them; a multicast's stores, once per link of
// its tree; a reducing write's contributions up to the group's home
// switches, merged where they meet, and its sum back down. Plain C++.
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collectives/program.h"
#include "flow/graph.h"
#include "flow/network.h"
#include "topology/multicast.h"

namespace incsim::flow {

// Where the network reduces (docs/flow.md): a group's home switches, each
// with the share of the group's blocks whose home ports it holds.
struct Home {
  int node;
  double share;
};

class InNetwork {
 public:
  // An in-network operation's flow: its link uses per byte, and the latency
  // after its last byte leaves (to each member, for a multicast).
  struct Shape {
    std::vector<Network::Use> uses;
    double latency = 0;
    std::vector<double> to_member;
    // A reducing read: the bytes per ns its reader's reduction table
    // entries allow by Little's law (0: no table read).
    double table_rate = 0;
    double ports = 1;  // the reader's ports its requests spread over
  };
  // endpoints[r]: the endpoint rank r runs on; mem_ns, jitter_ns: a member's
  // memory access (a reducing read's answers wait for it); own_copy[g]:
  // group g's members read and write their own copies through the switches
  // too (multimem), so its multicasts reach the storer as well.
  InNetwork(const collectives::Program& p, const FlowMachine& m, const std::vector<int>& endpoints,
            const FlowGraph& graph, double mem_ns, double jitter_ns, std::vector<char> own_copy)
      : p_(p), m_(m), endpoints_(endpoints), graph_(graph), mem_ns_(mem_ns), jitter_ns_(jitter_ns),
        own_copy_(std::move(own_copy)), alike_(first_alike(p.groups)) {}
  // Rank r's operation o's flow. It depends only on the operation's kind,
  // its rank and its group (a reducing write's or a barrier's, the sum of
  // a flag, on its group alone), the same for every channel and pass: built
  // at the first ask. The reference stays valid as long as this.
  const Shape& shape_of(int r, const collectives::Operation& o);
  // What shape_of's shape depends on, as one key: a reducing write's or a
  // barrier's, its group's members (every channel's group of a rail has
  // the same ones, and their homes and sums are one).
  uint64_t shape_key(int r, const collectives::Operation& o) const;
  // Where the flow of rank r's operation o comes down to every member of
  // its group, as its shape is built: for a read or a store, the switch each
  // of the rank's ports toward the group reaches (`out`: that port's flow
  // link), each with its share of the flow; for a reducing write, each
  // home switch (`out` -1) with its share. Channel classes pair them with
  // their images' (channel_classes.h).
  struct Way {
    int out, sw;
    double share;
    bool operator==(const Way& o) const { return out == o.out && sw == o.sw && share == o.share; }
  };
  std::vector<Way> ways(int r, const collectives::Operation& o);
  // The first group with group g's members (groups alike share homes and shapes).
  int alike(int g) const { return alike_[static_cast<size_t>(g)]; }
  // Group g's home switches for reducing writes (topo::MulticastFabric's
  // rule: switches that reduce, reached by every member, on a shortest path
  // between two of them; each takes the blocks of its ports).
  const std::vector<Home>& homes(int g);
  // Per data byte of a 128-byte block on flow link `link`: its packet's wire bytes, or a header alone.
  double block_weight(int link, bool header_only) const;
  // Group g's members' own copies go through the switches (the constructor's own_copy).
  bool own_copy(int g) const { return own_copy_[static_cast<size_t>(g)]; }

 private:
  // Rank r's ports toward its group g's switches (the first other member's
  // shortest paths, as packet level takes them): each one's flow link out,
  // the switch it reaches and the latency to that switch.
  struct GroupPort {
    int out, sw, sw_port;  // sw_port: the switch's port it enters by
    double up_ns;
  };
  std::vector<GroupPort> group_ports(int r, int g);
  // From a switch to rank r's GPU: a multicast's or a sum's way down, and
  // reversed, a read's answers' or a contribution's way up.
  const Route& down(int sw, int r);
  Shape read_shape(int r, int g);
  Shape multicast_shape(int r, int g);
  Shape sum_shape(int g);
  // Adds to `downs` the sums that group g's homes which do not merge on
  // the way multicast, on the packets' trees (sum_shape).
  void tree_downs(int g, LinkValues& downs);
  // [group]: the first group with its members.
  static std::vector<int> first_alike(const std::vector<std::vector<int>>& groups);

  const collectives::Program& p_;
  const FlowMachine& m_;
  const std::vector<int>& endpoints_;
  const FlowGraph& graph_;
  double mem_ns_, jitter_ns_;
  std::vector<char> own_copy_;  // [group]
  std::vector<int> alike_;      // [group]: first_alike's
  std::map<std::pair<int, int>, Route> downs_;   // (switch node, rank)
  std::map<int, std::vector<Home>> homes_;       // by group
  std::unordered_map<uint64_t, Shape> shapes_;   // by shape_key
  std::unique_ptr<topo::MulticastFabric> trees_;  // the packets' multicast trees, made at first need
  std::map<int, int> tree_regions_;               // by group: its region in trees_
};

}  // namespace incsim::flow
