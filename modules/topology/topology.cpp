#include "topology.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <numeric>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "core/error.h"

namespace incsim::topo {

int Topology::add_node(const std::string& n, int ports, NodeKind kind, const std::string& block) {
  const char* what = kind == NodeKind::Endpoint ? "endpoint" : "switch";
  // A name is a SystemC module's name, which takes no '.' or white space.
  if (n.empty() || std::any_of(n.begin(), n.end(), [](unsigned char c) { return c == '.' || std::isspace(c) || c < 32; }))
    throw UserError(std::string(what) + " name '" + n + "' must be non-empty, without '.' or white space");
  if (ports <= 0) throw UserError(std::string(what) + " '" + n + "' must have at least one port");
  if (ports > kMaxPorts)
    throw UserError(std::string(what) + " '" + n + "' has " + std::to_string(ports) + " ports; a node has at most " +
                    std::to_string(kMaxPorts));
  if (static_cast<int>(nodes_.size()) >= max_nodes_)
    throw UserError("platform '" + name + "' has more than " + std::to_string(max_nodes_) +
                    " nodes (endpoints and switches), the most a platform may have");
  if (port_link_.size() + static_cast<size_t>(ports) > UINT32_MAX)
    throw UserError("platform '" + name + "' has more than " + std::to_string(UINT32_MAX) + " ports in all");
  if (!by_name_.emplace(n, static_cast<int>(nodes_.size())).second)
    throw UserError("node name '" + n + "' is used twice");
  auto& ids = kind == NodeKind::Endpoint ? endpoints_ : switches_;
  if (block.empty()) throw UserError(std::string(what) + " '" + n + "' has no kind");
  nodes_.push_back({n, kind, ports, static_cast<int>(ids.size()), block});
  ids.push_back(static_cast<int>(nodes_.size()) - 1);
  port_first_.push_back(static_cast<uint32_t>(port_link_.size()));
  port_link_.resize(port_link_.size() + static_cast<size_t>(ports), -1);
  return ids.back();
}

void Topology::reserve(int nodes, size_t links) {
  if (nodes > kMaxStructuredNodes)
    throw UserError("platform '" + name + "' would have " + std::to_string(nodes) + " nodes (endpoints and switches); at most " +
                    std::to_string(kMaxStructuredNodes) + " fit");
  max_nodes_ = std::max(max_nodes_, nodes);
  nodes_.reserve(static_cast<size_t>(nodes));
  by_name_.reserve(static_cast<size_t>(nodes));
  port_first_.reserve(static_cast<size_t>(nodes));
  port_link_.reserve(2 * links);
  links_.reserve(links);
}

int Topology::find(const std::string& n) const {
  const auto it = by_name_.find(n);
  return it == by_name_.end() ? -1 : it->second;
}

std::string Topology::port_name(PortRef p) const {
  return nodes_[p.node].name + "." + std::to_string(p.port);
}

void Topology::check_port(PortRef p, const char* what) const {
  if (p.node < 0 || p.node >= static_cast<int>(nodes_.size()))
    throw UserError(std::string("a link names an unknown node as its ") + what);
  if (p.port < 0 || p.port >= nodes_[p.node].ports)
    throw UserError("port " + port_name(p) + " does not exist: " + nodes_[p.node].name + " has " +
                    std::to_string(nodes_[p.node].ports) + " ports");
  if (link_at(p) >= 0) throw UserError("port " + port_name(p) + " is linked twice");
}

void check_link(const std::string& what, double bw, double lat) {
  // The negated comparisons also refuse NaN.
  if (!(bw >= kMinBwGBps && bw <= kMaxBwGBps)) {
    std::ostringstream os;
    os << what << " has bandwidth " << bw << " GB/s; bw_GBps must be from " << kMinBwGBps << " to " << kMaxBwGBps;
    throw UserError(os.str());
  }
  if (!(lat >= 0 && lat <= kMaxLatencyNs)) {
    std::ostringstream os;
    os << what << " has latency " << lat << " ns; latency_ns must be from 0 to " << kMaxLatencyNs;
    throw UserError(os.str());
  }
}

void Topology::connect(PortRef a, PortRef b, double bw, double lat, int dim, bool dateline) {
  check_port(a, "first end");
  check_port(b, "second end");
  // The link's name only when something is wrong: a cluster makes millions of links.
  const auto what = [&] { return "link " + port_name(a) + " - " + port_name(b); };
  if (a.node == b.node) throw UserError(what() + " joins " + nodes_[a.node].name + " to itself");
  if (!(bw >= kMinBwGBps && bw <= kMaxBwGBps && lat >= 0 && lat <= kMaxLatencyNs)) check_link(what(), bw, lat);
  if (nodes_[a.node].kind == NodeKind::Endpoint && nodes_[b.node].kind == NodeKind::Endpoint)
    throw UserError(what() + " joins two endpoints; endpoints connect through switches");
  port_link_[port_first_[a.node] + a.port] = static_cast<int>(links_.size());
  port_link_[port_first_[b.node] + b.port] = static_cast<int>(links_.size());
  links_.push_back({a, b, bw, lat, dim, dateline});
}

PortRef Topology::peer(PortRef p) const {
  const int l = link_at(p);
  if (l < 0) return {};
  const Link& k = links_[l];
  return (k.a.node == p.node && k.a.port == p.port) ? k.b : k.a;
}

void Topology::check_linked() const {
  if (endpoints_.size() < 1) throw UserError("platform '" + name + "' has no endpoints");
  // Every declared port carries a link: the elaborated modules bind every socket.
  for (size_t u = 0; u < nodes_.size(); ++u)
    for (int p = 0; p < nodes_[u].ports; ++p)
      if (port_link_[port_first_[u] + p] < 0)
        throw UserError("platform '" + name + "': port " + port_name({static_cast<int>(u), p}) +
                        " is not linked; declare only the ports a node uses");
}

void Topology::finalize(std::shared_ptr<const RouteStructure> routes) {
  check_linked();
  structure_ = std::move(routes);
}

void Topology::finalize(const RouteFn& route_fn) {
  check_linked();
  structure_.reset();
  const int n = static_cast<int>(nodes_.size());
  const int m = static_cast<int>(endpoints_.size());
  check_table_size();
  dist_.assign(static_cast<size_t>(n) * m, -1);
  route_.assign(static_cast<size_t>(n) * m, -1);
  // Port p of node u is on a shortest path toward endpoint d (transit only through switches).
  auto toward = [&](int u, int p, int d) {
    const PortRef v = peer({u, p});
    if (v.node < 0 || dist_[at(v.node, d)] != dist_[at(u, d)] - 1) return false;
    return nodes_[v.node].kind == NodeKind::Switch || v.node == endpoints_[d];
  };
  for (int d = 0; d < m; ++d) {
    // Breadth-first from the destination; endpoints other than it never carry transit.
    std::deque<int> q{endpoints_[d]};
    dist_[at(endpoints_[d], d)] = 0;
    while (!q.empty()) {
      int u = q.front();
      q.pop_front();
      if (nodes_[u].kind == NodeKind::Endpoint && u != endpoints_[d]) continue;
      for (int p = 0; p < nodes_[u].ports; ++p) {
        PortRef v = peer({u, p});
        if (v.node < 0 || dist_[at(v.node, d)] >= 0) continue;
        dist_[at(v.node, d)] = static_cast<int16_t>(dist_[at(u, d)] + 1);
        q.push_back(v.node);
      }
    }
    for (int u = 0; u < n; ++u) {
      if (u == endpoints_[d]) continue;
      if (dist_[at(u, d)] < 0) {
        if (nodes_[u].kind == NodeKind::Endpoint)
          throw UserError("platform '" + name + "': " + nodes_[u].name + " cannot reach " +
                          nodes_[endpoints_[d]].name);
        continue;  // an unconnected switch carries nothing
      }
      std::vector<int> best;
      for (int p = 0; p < nodes_[u].ports; ++p)
        if (toward(u, p, d)) best.push_back(p);
      int chosen = best[d % best.size()];
      if (route_fn && nodes_[u].kind == NodeKind::Switch) {
        const int p = route_fn(u, d);
        if (p >= 0) {
          if (std::find(best.begin(), best.end(), p) == best.end())
            throw std::logic_error("platform '" + name + "': the routing function sends packets for " +
                                   nodes_[endpoints_[d]].name + " off a shortest path at " + port_name({u, p}));
          chosen = p;
        }
      }
      route_[at(u, d)] = static_cast<int16_t>(chosen);
    }
  }
  ep_first_.assign(static_cast<size_t>(n) * m + 1, 0);
  ep_ports_.clear();
  for (int u = 0; u < n; ++u)
    for (int d = 0; d < m; ++d) {
      // Under a routing function (dimension order) only the links parallel
      // to its choice: another neighbour would break its deadlock freedom.
      const int via = route_fn && dist_[at(u, d)] > 0 ? peer({u, route_[at(u, d)]}).node : -1;
      for (int p = 0; dist_[at(u, d)] > 0 && p < nodes_[u].ports; ++p)
        if (toward(u, p, d) && (via < 0 || peer({u, p}).node == via)) ep_ports_.push_back(static_cast<int16_t>(p));
      ep_first_[at(u, d) + 1] = static_cast<uint32_t>(ep_ports_.size());
    }
  // Toward each switch: breadth-first over switches only.
  const int k = static_cast<int>(switches_.size());
  sw_dist_.assign(static_cast<size_t>(n) * k, -1);
  for (int d = 0; d < k; ++d) {
    std::deque<int> q{switches_[d]};
    sw_dist_[sw_at(switches_[d], d)] = 0;
    while (!q.empty()) {
      const int u = q.front();
      q.pop_front();
      if (nodes_[u].kind == NodeKind::Endpoint) continue;
      for (int p = 0; p < nodes_[u].ports; ++p) {
        const PortRef v = peer({u, p});
        if (sw_dist_[sw_at(v.node, d)] >= 0) continue;
        sw_dist_[sw_at(v.node, d)] = static_cast<int16_t>(sw_dist_[sw_at(u, d)] + 1);
        q.push_back(v.node);
      }
    }
  }
  sw_first_.assign(static_cast<size_t>(n) * k + 1, 0);
  sw_ports_.clear();
  for (int u = 0; u < n; ++u)
    for (int d = 0; d < k; ++d) {
      const int16_t du = sw_dist_[sw_at(u, d)];
      for (int p = 0; du > 0 && p < nodes_[u].ports; ++p) {
        const PortRef v = peer({u, p});
        if (nodes_[v.node].kind == NodeKind::Switch && sw_dist_[sw_at(v.node, d)] == du - 1)
          sw_ports_.push_back(static_cast<int16_t>(p));
      }
      sw_first_[sw_at(u, d) + 1] = static_cast<uint32_t>(sw_ports_.size());
    }
}

// Before allocating the routing tables: what they will take at most (each of
// a node's ports may lead toward every switch), against kMaxRouteTableBytes.
void Topology::check_table_size() const {
  const uint64_t n = nodes_.size(), m = endpoints_.size(), k = switches_.size();
  const uint64_t bytes = n * m * (2 * sizeof(int16_t) + sizeof(uint32_t)) + n * k * (sizeof(int16_t) + sizeof(uint32_t)) +
                         2 * links_.size() * (k + m) * sizeof(int16_t);
  if (bytes > kMaxRouteTableBytes)
    throw UserError("platform '" + name + "' would need up to " + std::to_string(bytes >> 20) +
                    " MiB of routing tables for " + std::to_string(n) + " nodes, " + std::to_string(m) +
                    " endpoints and " + std::to_string(k) + " switches; at most " +
                    std::to_string(kMaxRouteTableBytes >> 20) +
                    " MiB fit, about 8 B per node and endpoint plus 6 B per node and switch");
}

VcRule Topology::vc_rule(int node, int in_port, int out_port) const {
  const int out = link_at({node, out_port});
  const int in = link_at({node, in_port});
  if (out < 0 || in < 0) return VcRule::First;
  switch (vc_policy) {
    case VcPolicy::Dateline:
      if (links_[out].dateline) return VcRule::Second;
      if (links_[out].dim >= 0 && links_[in].dim == links_[out].dim) return VcRule::Keep;
      return VcRule::First;
    case VcPolicy::SwitchHop:
      return nodes_[peer({node, in_port}).node].kind == NodeKind::Switch &&
                     nodes_[peer({node, out_port}).node].kind == NodeKind::Switch
                 ? VcRule::Second
                 : VcRule::First;
    default:
      return VcRule::First;
  }
}

const char* to_string(VcPolicy p) {
  switch (p) {
    case VcPolicy::Dateline: return "dateline";
    case VcPolicy::SwitchHop: return "switch-hop";
    default: return "none";
  }
}

VcPolicy parse_vc_policy(const std::string& name) {
  for (VcPolicy p : {VcPolicy::None, VcPolicy::Dateline, VcPolicy::SwitchHop})
    if (name == to_string(p)) return p;
  throw UserError("vc_policy must be none, dateline or switch-hop, not '" + name + "'");
}

int Topology::hops(int src, int dst) const { return hops_from(endpoints_[src], dst); }

std::vector<int> Topology::links_on_route(int src, int dst) const {
  std::vector<int> links;
  int node = endpoints_[src];
  while (node != endpoints_[dst]) {
    const int port = route(node, dst);
    if (port < 0) return {};
    links.push_back(link_at({node, port}));
    node = peer({node, port}).node;
  }
  return links;
}

bool Topology::port_reaches(PortRef p, int dst) const {
  const PortRef v = peer(p);
  if (v.node < 0) return false;
  if (nodes_[v.node].kind == NodeKind::Endpoint) return v.node == endpoints_[dst];
  return hops_from(v.node, dst) >= 0;
}

bool Topology::port_on_shortest_path(PortRef p, int dst) const {
  if (!port_reaches(p, dst)) return false;
  const PortRef v = peer(p);
  return nodes_[v.node].kind == NodeKind::Endpoint || hops_from(v.node, dst) + 1 == hops_from(p.node, dst);
}

namespace {
// 0, 1, 2, ...: every run of consecutive ports is a slice of it.
const std::vector<int16_t>& port_numbers() {
  static const std::vector<int16_t> numbers = [] {
    std::vector<int16_t> v(kMaxPorts);
    std::iota(v.begin(), v.end(), int16_t{0});
    return v;
  }();
  return numbers;
}
}  // namespace

uint32_t round_trip_bytes(double bw_GBps, double latency_ns, double holding_ns, uint32_t max_packet_bytes) {
  const double ns = 2 * latency_ns + holding_ns + 2.0 * max_packet_bytes / bw_GBps;
  const double packets = std::min(bw_GBps * ns / max_packet_bytes + 2, double(16u << 20) / max_packet_bytes);
  return static_cast<uint32_t>(packets) * max_packet_bytes;
}

PortSpan port_range(int lo, int hi) {
  const int16_t* first = port_numbers().data();
  return {first + lo, first + hi};
}

Topology make_dgx2(double bw, double lat) {
  Topology t;
  t.name = "dgx2";
  for (int g = 0; g < 16; ++g) t.add_endpoint("gpu" + std::to_string(g), 6);
  for (int s = 0; s < 12; ++s) t.add_switch("sw" + std::to_string(s), 16);
  // Group A: GPUs 0-7 and switches 0-5; group B: GPUs 8-15 and switches 6-11.
  // GPU port k goes to switch k of its group, on that switch's port (GPU % 8).
  for (int g = 0; g < 16; ++g)
    for (int k = 0; k < 6; ++k)
      t.connect({t.find("gpu" + std::to_string(g)), k},
                {t.find("sw" + std::to_string((g / 8) * 6 + k)), g % 8}, bw, lat);
  // Switch k of group A joins switch k of group B through ports 8-15.
  for (int k = 0; k < 6; ++k)
    for (int p = 8; p < 16; ++p)
      t.connect({t.find("sw" + std::to_string(k)), p}, {t.find("sw" + std::to_string(6 + k)), p}, bw,
                lat);
  t.finalize();
  return t;
}

Topology make_fattree2l(int groups, double bw, double lat) {
  constexpr int kGpus = 8, kLeaves = 6, kUp = 8;  // per group (Klenk §V)
  if (groups < 1 || groups > 16) throw UserError("the 2-level fat tree has 1 to 16 leaf groups of 8 GPUs");
  Topology t;
  t.name = "fattree2l";
  for (int g = 0; g < groups * kGpus; ++g) t.add_endpoint("gpu" + std::to_string(g), kLeaves);
  auto leaf = [&](int g, int k) { return "leaf" + std::to_string(g) + "_" + std::to_string(k); };
  auto spine = [&](int k, int j) { return "spine" + std::to_string(k) + "_" + std::to_string(j); };
  for (int g = 0; g < groups; ++g)
    for (int k = 0; k < kLeaves; ++k) t.add_switch(leaf(g, k), kGpus + kUp);
  for (int k = 0; k < kLeaves; ++k)
    for (int j = 0; j < kUp; ++j) t.add_switch(spine(k, j), groups);
  for (int g = 0; g < groups; ++g)
    for (int k = 0; k < kLeaves; ++k) {
      const int l = t.find(leaf(g, k));
      // GPU port k goes to leaf switch k of its group, on that switch's port (GPU % 8).
      for (int i = 0; i < kGpus; ++i) t.connect({t.find("gpu" + std::to_string(g * kGpus + i)), k}, {l, i}, bw, lat);
      // Up-link j goes to spine (k, j), on that spine's port g.
      for (int j = 0; j < kUp; ++j) t.connect({l, kGpus + j}, {t.find(spine(k, j)), g}, bw, lat);
    }
  t.finalize();
  return t;
}

Topology make_star(int n, double bw, double lat) {
  if (n < 1) throw UserError("a star needs at least one GPU");
  Topology t;
  t.name = "star";
  int sw = -1;
  for (int g = 0; g < n; ++g) t.add_endpoint("gpu" + std::to_string(g), 1);
  sw = t.add_switch("sw0", n);
  for (int g = 0; g < n; ++g) t.connect({t.endpoints()[g], 0}, {sw, g}, bw, lat);
  t.finalize();
  return t;
}

namespace {
// GPUs each joined to every switch by a trunk of trunk[s] links. GPU g's
// k-th link to switch s is that switch's port g * trunk[s] + k; a GPU's
// ports go to switch 0 first, then 1, 2, ...; a switch has only the ports
// the board wires.
Topology make_trunked(const char* name, const char* family, int gpus, const std::vector<int>& trunk, double bw,
                      double lat) {
  Topology t;
  t.name = name;
  t.family = family;
  const int links = std::accumulate(trunk.begin(), trunk.end(), 0);
  for (int g = 0; g < gpus; ++g) t.add_endpoint("gpu" + std::to_string(g), links);
  for (size_t s = 0; s < trunk.size(); ++s) t.add_switch("sw" + std::to_string(s), gpus * trunk[s]);
  for (int g = 0; g < gpus; ++g) {
    int port = 0;
    for (size_t s = 0; s < trunk.size(); ++s)
      for (int k = 0; k < trunk[s]; ++k)
        t.connect({t.endpoints()[g], port++}, {t.switches()[s], g * trunk[s] + k}, bw, lat);
  }
  t.finalize();
  return t;
}
}  // namespace

// NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020) and DGX A100
// System Architecture whitepaper: 8 GPUs, each with 12 NVLink3 links (25
// GB/s each way, 600 GB/s in all) going 2 to each of six NVSwitch gen 2
// chips.
Topology make_hgx_a100(double bw, double lat) {
  return make_trunked("hgx-a100", Topology::kHgxA100, 8, std::vector<int>(6, 2), bw, lat);
}

// NVIDIA DGX H100 User Guide and HGX H100 board: 8 GPUs, each with 18 NVLink4
// links going 5, 4, 4 and 5 to the four NVSwitch3 chips (of an NVSwitch3's
// 64 ports the rest go off the board).
Topology make_hgx_h100(double bw, double lat) {
  return make_trunked("hgx-h100", Topology::kHgxH100, 8, {5, 4, 4, 5}, bw, lat);
}

// NVIDIA DGX B200 User Guide and Blackwell datasheet: 8 GPUs, each with 18
// NVLink5 links (50 GB/s each way, 1.8 TB/s in all) going 9 to each of the
// board's two NVLink Switch chips.
Topology make_hgx_b200(double bw, double lat) {
  return make_trunked("hgx-b200", Topology::kHgxB200, 8, {9, 9}, bw, lat);
}

bool is_nvlink_machine(const std::string& family) {
  return family == Topology::kHgxA100 || family == Topology::kHgxH100 || family == Topology::kHgxB200 ||
         family == Topology::kNvl72;
}

// NVIDIA GB200 NVL72: 72 Blackwell GPUs with 18 NVLink5 links each, 9
// NVLink Switch trays of 2 chips; every GPU has one link to every chip
// (switches 2k and 2k + 1 are tray k's). A chip has 72 ports, all wired.
Topology make_nvl72(double bw, double lat) {
  return make_trunked("nvl72", Topology::kNvl72, 72, std::vector<int>(18, 1), bw, lat);
}

std::string netlist_difference(const Topology& g, const Topology& c) {
  auto count = [](size_t n, const char* what) { return std::to_string(n) + " " + what; };
  if (g.endpoints().size() != c.endpoints().size() || g.switches().size() != c.switches().size() ||
      g.links().size() != c.links().size())
    return "it has " + count(g.endpoints().size(), "endpoints, ") + count(g.switches().size(), "switches and ") +
           count(g.links().size(), "links where ") + count(c.endpoints().size(), "endpoints, ") +
           count(c.switches().size(), "switches and ") + count(c.links().size(), "links are expected");
  std::vector<int> in_g(c.nodes().size());  // c's node id -> g's
  for (size_t k = 0; k < c.switches().size(); ++k) in_g[c.switches()[k]] = g.switches()[k];
  for (size_t k = 0; k < c.endpoints().size(); ++k) in_g[c.endpoints()[k]] = g.endpoints()[k];
  for (size_t id = 0; id < c.nodes().size(); ++id) {
    const Node &n = c.node(static_cast<int>(id)), &m = g.node(in_g[id]);
    if (m.block != n.block) return m.name + " is a " + m.block + ", not a " + n.block;
    if (m.ports != n.ports)
      return m.name + " has " + std::to_string(m.ports) + " ports where " + std::to_string(n.ports) + " are expected";
  }
  for (const Link& l : c.links()) {
    const PortRef a{in_g[l.a.node], l.a.port}, b{in_g[l.b.node], l.b.port};
    const PortRef p = g.peer(a);
    if (g.link_at(a) < 0 || p.node != b.node || p.port != b.port)
      return "port " + g.port_name(a) + " should be linked to " + g.port_name(b);
  }
  return {};
}

}  // namespace incsim::topo
