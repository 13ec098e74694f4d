#pragma once
// What a synthetic traffic pattern should achieve on a topology, from the
// graph and its deterministic routes alone (plain C++, no SystemC):
//  - zero-load latency (Dally and Towles §3.3.2: T0 = H t_r + D / v + L / b,
//    here the exact packet-level cut-through timing the simulator models: a
//    switch forwards the head `switch_ns` after it arrives, a link adds its
//    wire latency, and the tail follows the head by the slowest link's
//    serialization so far);
//  - the channel-load bound on throughput (Dally and Towles §3.3.1: ideal
//    throughput is the channel bandwidth over the load of the most loaded
//    channel, gamma_max), computed by walking every source-destination
//    route, the injection and ejection links included.
#include <cstdint>
#include <string>

#include "topology/topology.h"
#include "traffic/patterns.h"

namespace incsim::traffic {

// An endpoint's injection bandwidth: the sum of its links, GB/s.
double injection_GBps(const topo::Topology& t, int endpoint);
// The bandwidth offered load is a fraction of: the least injection
// bandwidth over all endpoints, so that every endpoint offers the same bytes
// per second (as every BookSim node offers the same flits per cycle) and a
// load of 1 fits every injection link. On a torus every endpoint has the
// same; on a mesh an edge router's endpoint link is narrower (MultiTree §V-A
// gives the endpoint its router's network bandwidth).
double reference_injection_GBps(const topo::Topology& t);

// One packet of `wire_bytes` alone in the network, from the moment it is
// created at src to its tail's arrival at dst, ns. An endpoint with several
// ports reaching dst: the mean over them, weighted by bandwidth (the ports
// share one source queue).
double zero_load_latency_ns(const topo::Topology& t, int src, int dst, uint32_t wire_bytes, double switch_ns);

struct ZeroLoad {
  double mean_ns = 0;  // over the pattern's destination distribution and all sources
  double min_ns = 0, max_ns = 0;
  double mean_switches = 0;  // switches a packet crosses, on average
};
ZeroLoad zero_load(const topo::Topology& t, const PatternParams& p, uint32_t wire_bytes, double switch_ns);

struct ChannelBound {
  // Offered load (fraction of inject_GBps from every endpoint) at which
  // the most loaded channel is busy all the time.
  double saturation = 0;
  std::string bottleneck;  // that channel, "node.port" of its sending end
};
ChannelBound channel_load_bound(const topo::Topology& t, const PatternParams& p, double inject_GBps);

}  // namespace incsim::traffic
