#pragma once
// The bound column's bandwidths (DESIGN.md, "Reporting and bounds") from
// the platform's graph and its packets alone, so packet level's
// communicator and --fidelity flow, which builds no block, give the same
// bound.
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "collectives/program.h"
#include "topology/topology.h"

namespace incsim::platforms {

// A fabric's data packet: its payload, the bytes it adds on the wire, and
// what acknowledging it costs the other way (0: not acknowledged).
struct WirePacket {
  uint32_t payload, header, ack;
};

// What GPU g can inject toward the GPUs `peers`, GB/s: its ports on a
// shortest path to any of them, each at its payload rate (the ports that
// lead to none do not count). An acknowledged packet (software
// collectives' writes) costs a header-only ack on the same link direction
// for each incoming write; posted multicast writes cost none.
double endpoint_payload_GBps(const topo::Topology& t, WirePacket p, int g, const std::vector<int>& peers);
// The least over `gpus`, each toward the others: the bound takes the GPU
// with the least bandwidth.
double least_endpoint_GBps(const topo::Topology& t, WirePacket p, const std::vector<int>& gpus);

// A cluster's cores program: the busbw its busiest GPU's links allow, each
// GPU's bytes inside its node over NVLink and across through its adapter
// (the slower of its PCIe link and its network link).
struct ClusterBound {
  double busbw_GBps = 0, nvlink_GBps = 0, adapter_GBps = 0;
  bool adapter_limits = false;
};
// Rank r runs on GPU gpus[r]; node_of[GPU]: its node. nvlink: the GPUs'
// fabric's packet (acknowledged); net: the scale-out network's. UserError
// if an in-network group does not fit the cluster: one across nodes must
// push (SHARP), one inside a node must not (NVLS).
ClusterBound cluster_bound(const collectives::Program& p, const topo::Topology& t, WirePacket nvlink, WirePacket net,
                           const std::vector<int>& gpus, const std::vector<int>& node_of);
// The header's line on it.
std::string cluster_note(const ClusterBound& b, size_t nodes, size_t gpus_per_node);

// What binds a program between the switches, where it binds before its
// GPUs' own links (least_endpoint_GBps, cluster_bound): the longer of two
// bounds from the topology, each a set of links, what it must carry per
// byte of the message each way, and its payload rate.
struct LinkBound {
  std::string where;          // the header's words for it; empty: nothing between switches
  double moved = 0;           // bytes per byte of the message
  double payload_GBps = 0;    // its payload rate
  double us(uint64_t bytes) const { return where.empty() ? 0 : static_cast<double>(bytes) * moved / payload_GBps / 1e3; }
  // Whether it takes longer at `bytes` than the GPUs' bound, beyond rounding.
  bool binds(uint64_t bytes, double gpus_bound_us) const { return us(bytes) > gpus_bound_us * (1 + 1e-6); }
};
// 1. A cut (off a cluster, whose bound is its GPUs' NVLink and adapters):
// each switch's links to other switches, where removing them leaves some
// of the program's GPUs with that switch alone (a trunk, a leaf's
// up-links), carry what any algorithm must move across them
// (collectives::cut_crossing).
// 2. Where the switches reduce or multicast, whose design fixes the
// traffic (as moved_per_byte bounds their GPUs' links by it): the busiest
// link between two nodes neither of which is a GPU under the program's own
// traffic, each send routed as the tables route it (split evenly over
// equal-cost ports where a node spreads packets: spreads[node]), and each
// in-network operation as the switches move it: one copy per chunk on each
// link of the tree joining its contributors to its receivers where they
// reduce on the way and where they multicast; under Klenk's push on
// NVSwitches, which reduces at the home port alone, each contribution
// whole to its block's home switch (InfiniBand's SHARP merges on the way).
// fabric: the GPUs' fabric's packet; net: the scale-out network's, on links
// with an adapter or a network switch at an end.
LinkBound link_bound(const collectives::Program& p, const topo::Topology& t, const std::vector<int>& gpus,
                     const std::vector<uint8_t>& spreads, WirePacket fabric, WirePacket net);
// The nodes that spread packets over equal-cost ports: every endpoint and
// adapter, and each switch `spreads` says does (switch.spread, ib.spread
// not `destination`). An Ethernet switch hashes each connection to one
// port (ECMP), which the bound takes as spreading evenly.
std::vector<uint8_t> spreading_nodes(const topo::Topology& t, const std::function<bool(int node)>& spreads);
// The header's line on it where it binds before the GPUs' links (their
// bound gpus_bound_us at `bytes`), and what it allows `name` in busbw.
void print_link_bound(std::ostream& os, const LinkBound& b, const collectives::Program& p, uint64_t bytes,
                      double gpus_bound_us, const std::string& name);

// The time a cores program needs at least for `bytes` (the bound column's
// 100%): on a cluster the collective's busbw factor at cluster_bound's busbw,
// elsewhere the busiest rank's traffic (collectives::moved_per_byte) at the
// GPU's payload bandwidth.
double cores_bound_us(const collectives::Program& p, uint64_t bytes, double endpoint_GBps, bool cluster);
// The bound time of any program: packed trees' own algbw where they have
// one (Blink's, algbw_GBps > 0), else the longer of cores_bound_us and
// link_bound's time.
double program_bound_us(const collectives::Program& p, uint64_t bytes, double endpoint_GBps, double algbw_GBps,
                        bool cluster, const LinkBound& links);

// The header's "# bound:" lines (fixed, one decimal, left so on `os`).
// A cluster's: the busbw its busiest GPU allows.
void print_cluster_bound(std::ostream& os, double busbw_GBps);
// Packed trees' own algbw and what it is.
void print_algbw_bound(std::ostream& os, double algbw_GBps, const std::string& note);
// A payload bandwidth per GPU, net of `links` (kAckedLinks, kPostedLinks, kOneWayLinks,
// the NICs' messages), and the busbw that allows `name` at `bytes` where
// its bound time is above 0.
inline constexpr const char* kAckedLinks = "links less header flits and write acks";
inline constexpr const char* kPostedLinks = "links less header flits; multicast writes are posted";
inline constexpr const char* kOneWayLinks = "links less header flits; the busiest GPU's write acks go the other way";
// Which of those a program on the cores is bounded by (collectives::bound_charges_acks).
const char* cores_links(const collectives::Program& p);
// The NICs' messages: a head flit on each packet, or one per message (nic.flow_control=message).
const char* nic_links(bool one_head);
void print_payload_bound(std::ostream& os, double endpoint_GBps, const char* links, const collectives::Program& p,
                         uint64_t bytes, double bound_us, const std::string& name);

}  // namespace incsim::platforms
