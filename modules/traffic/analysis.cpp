#include "analysis.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace incsim::traffic {

using topo::NodeKind;
using topo::PortRef;

double injection_GBps(const topo::Topology& t, int endpoint) {
  const int node = t.endpoints()[endpoint];
  double b = 0;
  for (int p = 0; p < t.node(node).ports; ++p)
    if (t.link_at({node, p}) >= 0) b += t.links()[t.link_at({node, p})].bw_GBps;
  return b;
}

double reference_injection_GBps(const topo::Topology& t) {
  double b = injection_GBps(t, 0);
  for (size_t e = 1; e < t.endpoints().size(); ++e) b = std::min(b, injection_GBps(t, static_cast<int>(e)));
  return b;
}

namespace {

// Calls visit(out_port, link) for every link a packet leaving src's port p
// for dst crosses, in order.
template <class Visit>
void walk(const topo::Topology& t, int src, int p, int dst, Visit&& visit) {
  PortRef out{t.endpoints()[src], p};
  while (true) {
    const topo::Link& l = t.links()[t.link_at(out)];
    visit(out, l);
    const PortRef in = t.peer(out);
    if (t.node(in.node).kind == NodeKind::Endpoint) return;
    out = {in.node, t.route(in.node, dst)};
  }
}

// The ports of src that reach dst, with their share of its traffic to dst.
std::vector<std::pair<int, double>> source_ports(const topo::Topology& t, int src, int dst) {
  std::vector<std::pair<int, double>> ports;
  const int node = t.endpoints()[src];
  double total = 0;
  for (int p = 0; p < t.node(node).ports; ++p)
    if (t.port_reaches({node, p}, dst)) {
      const double bw = t.links()[t.link_at({node, p})].bw_GBps;
      ports.emplace_back(p, bw);
      total += bw;
    }
  for (auto& [p, w] : ports) w /= total;
  return ports;
}

}  // namespace

double zero_load_latency_ns(const topo::Topology& t, int src, int dst, uint32_t wire_bytes, double switch_ns) {
  double mean = 0;
  for (const auto& [port, share] : source_ports(t, src, dst)) {
    // Head and tail arrival at the far end of each link (OutPort::send and
    // NvSwitch: the head leaves a switch switch_ns after it came; the wire
    // is busy for the serialization, and not before the tail is in).
    double head = 0, tail = 0;
    bool first = true;
    walk(t, src, port, dst, [&](PortRef, const topo::Link& l) {
      const double start = first ? 0.0 : head + switch_ns;
      const double busy = std::max(start + wire_bytes / l.bw_GBps, tail);
      head = start + l.latency_ns;
      tail = busy + l.latency_ns;
      first = false;
    });
    mean += share * tail;
  }
  return mean;
}

ZeroLoad zero_load(const topo::Topology& t, const PatternParams& p, uint32_t wire_bytes, double switch_ns) {
  ZeroLoad z;
  z.min_ns = std::numeric_limits<double>::max();
  const int n = static_cast<int>(t.endpoints().size());
  for (int s = 0; s < n; ++s) {
    const std::vector<double> d = dest_distribution(p, s);
    for (int k = 0; k < n; ++k) {
      if (d[k] == 0) continue;
      const double lat = zero_load_latency_ns(t, s, k, wire_bytes, switch_ns);
      z.mean_ns += d[k] * lat / n;
      z.min_ns = std::min(z.min_ns, lat);
      z.max_ns = std::max(z.max_ns, lat);
      z.mean_switches += d[k] * (t.hops(s, k) - 1) / n;
    }
  }
  return z;
}

ChannelBound channel_load_bound(const topo::Topology& t, const PatternParams& p, double inject_GBps) {
  // Bytes per ns crossing each sending port when every endpoint offers
  // inject_GBps (load 1).
  std::vector<size_t> first(t.nodes().size() + 1, 0);
  for (size_t v = 0; v < t.nodes().size(); ++v) first[v + 1] = first[v] + static_cast<size_t>(t.nodes()[v].ports);
  std::vector<double> load(first.back(), 0.0);
  const int n = static_cast<int>(t.endpoints().size());
  for (int s = 0; s < n; ++s) {
    const std::vector<double> d = dest_distribution(p, s);
    for (int k = 0; k < n; ++k) {
      if (d[k] == 0) continue;
      for (const auto& [port, share] : source_ports(t, s, k))
        walk(t, s, port, k, [&](PortRef out, const topo::Link&) {
          load[first[out.node] + out.port] += inject_GBps * d[k] * share;
        });
    }
  }
  ChannelBound b;
  b.saturation = std::numeric_limits<double>::infinity();
  for (size_t v = 0; v < t.nodes().size(); ++v)
    for (int port = 0; port < t.nodes()[v].ports; ++port) {
      const double l = load[first[v] + port];
      const int link = t.link_at({static_cast<int>(v), port});
      if (l <= 0 || link < 0) continue;
      const double sat = t.links()[link].bw_GBps / l;
      if (sat < b.saturation * (1 - 1e-12)) {
        b.saturation = sat;
        b.bottleneck = t.port_name({static_cast<int>(v), port});
      }
    }
  return b;
}

}  // namespace incsim::traffic
