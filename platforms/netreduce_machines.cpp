#include "netreduce_machines.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "machine.h"
#include "netreduce/aggregator_array.h"

namespace incsim::platforms {

namespace {
const Param<double> kIntraGBps{
    "intra.bw_GBps", 150.0, Range::at_least(0.001).at_most(1e5),
    "B_intra: each GPU's link into its machine's fabric, GB/s (NetReduce §3.4: \"NVLink makes B_intra = 150 "
    "GB/s\"; Fig. 7 sweeps 15.75, PCIe 3.0 x16, to 150)"};
const Param<double> kUplinkGBps{"leaf.uplink_bw_GBps", 50.0, Range::at_least(0.001).at_most(1e5),
                                "leaf-to-spine link, GB/s; default: the sum of the rack's host links (50: 4 "
                                "hosts of 12.5), a non-blocking leaf (assumption; Fig. 5 does not give it)"};

// A ring's ranks are a rack's hosts, the leaves under the spine, or the
// machines (Parallel NetReduce): each at most an aggregator's ranks.
void check_counts(int racks, int hosts_per_rack) {
  constexpr int kMax = netreduce::AggregatorArray::kMaxRanks;
  if (racks < 1 || racks > kMax)
    throw UserError("the number of racks or machines must be between 1 and " + std::to_string(kMax) + ", not " +
                    std::to_string(racks));
  if (hosts_per_rack < (racks == 1 ? 2 : 1) || hosts_per_rack > kMax || racks * hosts_per_rack > 4096)
    throw UserError("a NetReduce rack or machine holds " + std::string(racks == 1 ? "2" : "1") + " to " +
                    std::to_string(kMax) + " hosts, and all racks together at most 4096, not " +
                    std::to_string(hosts_per_rack) + " x " + std::to_string(racks));
}
}  // namespace

NetReduceShape netreduce_shape(NetReduceShape::Layout layout, int racks, int hosts_per_rack, bool with_fpga,
                               Config& cfg) {
  check_counts(racks, hosts_per_rack);
  NetReduceShape s;
  s.layout = layout;
  s.racks = racks;
  s.hosts_per_rack = hosts_per_rack;
  s.with_fpga = with_fpga;
  s.line_GBps = cfg.get(kLinkGBps, kEthernetLinkGBps);
  const bool multigpu = layout == NetReduceShape::Layout::MultiGpu;
  s.host_GBps = multigpu ? cfg.get(kIntraGBps) : s.line_GBps;
  s.uplink_GBps = multigpu ? s.line_GBps : racks == 1 ? 0.0 : cfg.get(kUplinkGBps, s.line_GBps * hosts_per_rack);
  s.wire_ns = sc_core::sc_time(cfg.get(kLinkLatency, kEthernetLatencyNs), sc_core::SC_NS) / sc_core::sc_time(1, sc_core::SC_NS);
  return s;
}

topo::Topology netreduce_topology(const NetReduceShape& s) {
  const bool multigpu = s.layout == NetReduceShape::Layout::MultiGpu;
  const int H = s.hosts_per_rack, R = s.racks, hosts = s.hosts();
  const int fpga_ports = s.leaf_fpga_ports(), uplink = s.uplink_port();
  const bool leaf_fpgas = fpga_ports > 0;
  topo::Topology t;
  t.name = multigpu ? "multigpu" : R > 1 ? "spineleaf" : "rack";
  t.family = multigpu ? topo::Topology::kNetReduceMultiGpu : topo::Topology::kNetReduce;
  for (int r = 0; r < R; ++r)
    t.add_switch(R == 1 ? "switch" : (multigpu ? "machine" : "leaf") + std::to_string(r), uplink + (R > 1 ? 1 : 0),
                 topo::kinds::kEthernetSwitch);
  const int spine = R > 1 ? t.add_switch(multigpu ? "tor" : "spine", R + (s.with_fpga ? R : 0),
                                         topo::kinds::kEthernetSwitch)
                          : -1;
  const int host0 = static_cast<int>(t.nodes().size());
  for (int i = 0; i < hosts; ++i) t.add_endpoint("host" + std::to_string(i), 1, topo::kinds::kRoceHost);
  for (int r = 0; r < R && leaf_fpgas; ++r)
    t.add_endpoint(R == 1 ? "fpga" : "leaf" + std::to_string(r) + "_fpga", fpga_ports, topo::kinds::kFpgaAggregator);
  const int spine_fpga =
      R > 1 && s.with_fpga ? t.add_endpoint(multigpu ? "fpga" : "spine_fpga", R, topo::kinds::kFpgaAggregator) : -1;
  for (int r = 0; r < R && R > 1; ++r) t.connect({r, uplink}, {spine, r}, s.uplink_GBps, s.wire_ns);
  for (int i = 0; i < hosts; ++i) t.connect({i / H, i % H}, {host0 + i, 0}, s.host_GBps, s.wire_ns);
  for (int r = 0; r < R && leaf_fpgas; ++r)
    for (int i = 0; i < fpga_ports; ++i) t.connect({r, H + i}, {host0 + hosts + r, i}, s.line_GBps, s.wire_ns);
  for (int q = 0; q < R && spine_fpga >= 0; ++q) t.connect({spine, R + q}, {spine_fpga, q}, s.line_GBps, s.wire_ns);
  t.finalize();
  return t;
}

NetReduceShape netreduce_shape(const topo::Topology& g, const std::string& source) {
  const std::string what = source + " is not a NetReduce machine incsim can elaborate (a rack, a spine-leaf or "
                                    "multi-GPU machines, as --dump-platform writes them): ";
  NetReduceShape s;
  const bool multigpu = g.family == topo::Topology::kNetReduceMultiGpu;
  const int S = static_cast<int>(g.switches().size());
  int hosts = 0, fpgas = 0;
  for (int e : g.endpoints()) {
    const auto& n = g.node(e);
    if (n.block == topo::kinds::kRoceHost) {
      if (fpgas) throw UserError(what + "host " + n.name + " comes after an FPGA; list the hosts first");
      ++hosts;
    } else if (n.block == topo::kinds::kFpgaAggregator) {
      ++fpgas;
    } else {
      throw UserError(what + "endpoint " + n.name + " is a " + n.block + ", not a roce_host or fpga_aggregator");
    }
  }
  s.racks = S == 1 ? 1 : S - 1;
  if (S == 0 || (multigpu && S < 3)) throw UserError(what + "it has " + std::to_string(S) + " switches");
  if (hosts % s.racks) throw UserError(what + std::to_string(hosts) + " hosts do not split evenly over " +
                                       std::to_string(s.racks) + " leaves");
  s.hosts_per_rack = hosts / s.racks;
  s.layout = S == 1 ? NetReduceShape::Layout::Rack
             : multigpu ? NetReduceShape::Layout::MultiGpu
                        : NetReduceShape::Layout::SpineLeaf;
  s.with_fpga = fpgas > 0;
  check_counts(s.racks, s.hosts_per_rack);
  // The same machine built from that shape must be the graph, up to names,
  // the order of links and their rates and latencies (so any rate will do
  // for the comparison; the real ones follow).
  s.host_GBps = s.line_GBps = s.uplink_GBps = 1;
  const std::string diff = topo::netlist_difference(g, netreduce_topology(s));
  if (!diff.empty()) throw UserError(what + diff);
  // Each link runs at its own rate and latency; the shape has the slowest
  // link of each kind and the longest wire (for the job's bound and models).
  constexpr double kNone = std::numeric_limits<double>::infinity();
  double host = kNone, fpga = kNone, up = kNone;
  s.wire_ns = 0;
  for (const auto& l : g.links()) {
    const auto& a = g.node(l.a.node);
    const auto& b = g.node(l.b.node);
    double& kind = a.block == topo::kinds::kRoceHost || b.block == topo::kinds::kRoceHost             ? host
                   : a.block == topo::kinds::kFpgaAggregator || b.block == topo::kinds::kFpgaAggregator ? fpga
                                                                                                        : up;
    kind = std::min(kind, l.bw_GBps);
    s.wire_ns = std::max(s.wire_ns, l.latency_ns);
  }
  s.host_GBps = host;
  s.uplink_GBps = S > 1 ? up : 0;
  // No FPGA: the line is a host's link, or on multi-GPU machines a machine's NIC.
  s.line_GBps = fpga != kNone ? fpga : multigpu ? up : host;
  return s;
}

}  // namespace incsim::platforms
