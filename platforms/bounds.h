#pragma once
// The bound column's bandwidths (DESIGN.md, "Reporting and bounds") from
// the platform's graph and its packets alone, so packet level's
// communicator and --fidelity flow, which builds no block, give the same
// bound.
#include <cstdint>
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

// The time a cores program needs at least for `bytes` (the bound column's
// 100%): on a cluster the collective's busbw factor at cluster_bound's busbw,
// elsewhere the busiest rank's traffic (collectives::moved_per_byte) at the
// GPU's payload bandwidth.
double cores_bound_us(const collectives::Program& p, uint64_t bytes, double endpoint_GBps, bool cluster);
// The bound time of any program: packed trees' own algbw where they have
// one (Blink's, algbw_GBps > 0), else cores_bound_us.
double program_bound_us(const collectives::Program& p, uint64_t bytes, double endpoint_GBps, double algbw_GBps,
                        bool cluster);

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
