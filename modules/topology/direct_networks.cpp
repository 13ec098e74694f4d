#include "topology/direct_networks.h"

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace incsim::topo {

namespace {

// A router's neighbour directions, in its port order.
enum Dir { kMinusY, kPlusY, kMinusX, kPlusX };

// Direction of the first hop along one dimension of size k from coordinate c
// to coordinate dc (c != dc): toward it on a mesh; the shorter way round on a
// torus, and when both ways are equally long (k even, dc = c + k/2) + if c
// plus the destination's coordinate in the other dimension `o` is even, else
// -, so tied traffic uses both directions (and both parallel links of a
// size-2 dimension) equally. Every later hop of that dimension has a unique
// shorter way, the same direction.
bool plus_direction(int c, int dc, int k, int o, bool wrap) {
  if (!wrap) return dc > c;
  const int forward = (dc - c + k) % k, backward = k - forward;
  if (forward != backward) return forward < backward;
  return (c + o) % 2 == 0;
}

// Per router: the port of each direction (-1: none) and its endpoint's port.
struct RouterPorts {
  std::array<int, 4> dir{-1, -1, -1, -1};
  int endpoint = -1;
};

// Each router's ports by direction, from the links' dims and the grid's
// coordinates; UserError for a graph that is not a grid of kx x ky routers
// with an endpoint each.
std::vector<RouterPorts> grid_ports(const Topology& t) {
  const Grid g = t.grid;
  if (g.kx < 1 || g.ky < 1 || static_cast<int>(t.switches().size()) != g.kx * g.ky ||
      t.endpoints().size() != t.switches().size())
    throw UserError("platform '" + t.name + "': dimension-order routing needs a grid of kx x ky routers and as many "
                    "endpoints, one per router");
  std::vector<RouterPorts> ports(t.switches().size());
  for (size_t i = 0; i < ports.size(); ++i) {
    const int node = t.switches()[i], x = static_cast<int>(i) % g.kx, y = static_cast<int>(i) / g.kx;
    for (int p = 0; p < t.node(node).ports; ++p) {
      const Link& l = t.links()[t.link_at({node, p})];
      const Node& peer = t.node(t.peer({node, p}).node);
      if (peer.kind == NodeKind::Endpoint) {
        if (peer.index != static_cast<int>(i))
          throw UserError("platform '" + t.name + "': router " + t.node(node).name + " must hold endpoint " +
                          std::to_string(i) + " for dimension-order routing, not " + peer.name);
        ports[i].endpoint = p;
        continue;
      }
      if (l.dim != 0 && l.dim != 1)
        throw UserError("platform '" + t.name + "': link at " + t.port_name({node, p}) +
                        " joins two routers but has no dim (0 = X, 1 = Y) for dimension-order routing");
      const int k = l.dim == 0 ? g.kx : g.ky, c = l.dim == 0 ? x : y;
      const int pc = l.dim == 0 ? peer.index % g.kx : peer.index / g.kx;
      const int minus = g.wrap ? (c + k - 1) % k : c - 1;
      int& slot = ports[i].dir[l.dim == 0 ? (pc == minus && ports[i].dir[kMinusX] < 0 ? kMinusX : kPlusX)
                                          : (pc == minus && ports[i].dir[kMinusY] < 0 ? kMinusY : kPlusY)];
      slot = p;
    }
  }
  return ports;
}

// node id -> router number, -1 for an endpoint.
std::vector<int> router_numbers(const Topology& t) {
  std::vector<int> router(t.nodes().size(), -1);
  for (size_t i = 0; i < t.switches().size(); ++i) router[t.switches()[i]] = static_cast<int>(i);
  return router;
}

// Router i's port toward endpoint d: X first, then Y, each the shorter way round.
int dimension_order_port(const Grid& g, const RouterPorts& ports, int i, int d) {
  if (i == d) return ports.endpoint;
  const int x = i % g.kx, y = i / g.kx, dx = d % g.kx, dy = d / g.kx;
  if (x != dx) return ports.dir[plus_direction(x, dx, g.kx, dy, g.wrap) ? kPlusX : kMinusX];
  return ports.dir[plus_direction(y, dy, g.ky, dx, g.wrap) ? kPlusY : kMinusY];
}

// Links along one dimension of size k from coordinate a to b.
int ring_hops(int a, int b, int k, bool wrap) {
  const int d = a > b ? a - b : b - a;
  return wrap ? std::min(d, k - d) : d;
}

// Every subset of a router's first 5 ports, in port order, by bit mask: the
// equal-cost ports toward a router (one or two directions in one or two
// dimensions) are not always consecutive.
const std::array<std::array<int16_t, 5>, 32>& port_subsets() {
  static const auto subsets = [] {
    std::array<std::array<int16_t, 5>, 32> s{};
    for (int m = 0; m < 32; ++m)
      for (int p = 0, n = 0; p < 5; ++p)
        if (m >> p & 1) s[m][n++] = static_cast<int16_t>(p);
    return s;
  }();
  return subsets;
}

// A mesh's or torus's routes from its coordinates: toward endpoints
// dimension order (dimension_order_port), over the parallel links of a
// torus dimension of size 2; toward routers every port of a shortest path.
// Endpoint i is node i, router i node n + i.
class GridRoutes final : public RouteStructure {
 public:
  explicit GridRoutes(const Topology& t) : g_(t.grid), n_(g_.kx * g_.ky), ports_(grid_ports(t)) {}

  int hops_from(int node, int dst) const override {
    if (node == dst) return 0;
    return (node < n_ ? 2 : 1) + router_hops(node % n_, dst);
  }
  int route(int node, int dst) const override {
    if (node < n_) return node == dst ? -1 : 0;
    return dimension_order_port(g_, ports_[node - n_], node - n_, dst);
  }
  PortSpan routes(int node, int dst) const override {
    if (node == dst) return {};
    const int p = route(node, dst);
    if (node < n_ || node - n_ == dst) return port_range(p, p + 1);
    // A torus dimension of size 2: its two links lead to the same router, on adjacent ports.
    const auto& dir = ports_[node - n_].dir;
    const bool x = p == dir[kMinusX] || p == dir[kPlusX];
    const int a = dir[x ? kMinusX : kMinusY], b = dir[x ? kPlusX : kPlusY];
    const bool parallel = g_.wrap && (x ? g_.kx : g_.ky) == 2 && a >= 0 && b >= 0;
    return parallel ? port_range(std::min(a, b), std::max(a, b) + 1) : port_range(p, p + 1);
  }
  int distance_to_switch(int node, int sw) const override {
    return (node < n_ ? 1 : 0) + router_hops(node % n_, sw);
  }
  PortSpan routes_to_switch(int node, int sw) const override {
    if (node < n_) return port_range(0, 1);
    const int i = node - n_, d = router_hops(i, sw);
    if (d == 0) return {};
    int mask = 0;
    const int x = i % g_.kx, y = i / g_.kx;
    for (int dir = 0; dir < 4; ++dir) {
      const int p = ports_[i].dir[dir];
      if (p < 0) continue;
      const bool in_x = dir == kMinusX || dir == kPlusX, plus = dir == kPlusX || dir == kPlusY;
      const int k = in_x ? g_.kx : g_.ky, c = ((in_x ? x : y) + (plus ? 1 : k - 1)) % k;
      const int z = in_x ? y * g_.kx + c : c * g_.kx + x;
      if (router_hops(z, sw) == d - 1) mask |= 1 << p;
    }
    const auto& s = port_subsets()[static_cast<size_t>(mask)];
    return {s.data(), s.data() + __builtin_popcount(static_cast<unsigned>(mask))};
  }

 private:
  int router_hops(int i, int j) const {
    return ring_hops(i % g_.kx, j % g_.kx, g_.kx, g_.wrap) + ring_hops(i / g_.kx, j / g_.kx, g_.ky, g_.wrap);
  }
  Grid g_;
  int n_;
  std::vector<RouterPorts> ports_;
};

// Shared by mesh and torus.
Topology make_grid(const char* kind, int kx, int ky, bool wrap, double bw, double lat,
                   double nic_bw, double nic_lat) {
  const std::string what = std::string("a ") + kind + " of " + std::to_string(kx) + "x" +
                           std::to_string(ky);
  if (kx < 1 || ky < 1) throw UserError(what + " is impossible: both dimensions must be at least 1");
  if (kx * ky < 2) throw UserError(what + " has a single node; it needs at least 2 nodes");
  if (kx > 128 || ky > 128) throw UserError(what + " is too large: each dimension is at most 128");
  const int n = kx * ky;
  // Neighbour lists per router; a wrap-around of a size-2 dimension repeats the
  // neighbour, giving two parallel links. port_of: the port of each direction
  // (-1 on a mesh edge); wrapped: the port's link goes round the torus.
  std::vector<std::vector<int>> nbr(n);
  std::vector<std::vector<bool>> wrapped(n);
  std::vector<std::array<int, 4>> port_of(n, {-1, -1, -1, -1});
  for (int i = 0; i < n; ++i) {
    const int x = i % kx, y = i / kx;
    auto add = [&](Dir d, int dx, int dy, int size, int coord) {
      int c = coord + (dx + dy);
      bool wraps = false;
      if (c < 0 || c >= size) {
        if (!wrap || size < 2) return;
        c = (c + size) % size;
        wraps = true;
      }
      if (c == coord) return;
      int j = dx != 0 ? y * kx + c : c * kx + x;
      port_of[i][d] = static_cast<int>(nbr[i].size());
      nbr[i].push_back(j);
      wrapped[i].push_back(wraps);
    };
    add(kMinusY, 0, -1, ky, y);
    add(kPlusY, 0, +1, ky, y);
    add(kMinusX, -1, 0, kx, x);
    add(kPlusX, +1, 0, kx, x);
  }
  Topology t;
  t.name = kind;
  t.family = Topology::kMultiTree;
  t.grid = {kx, ky, wrap};
  t.vc_policy = VcPolicy::Dateline;
  t.routing = "dimension-order";
  std::vector<int> ep(n), rt(n);
  t.reserve(2 * n, 3 * static_cast<size_t>(n));  // up to 128 x 128: routes from the structure
  for (int i = 0; i < n; ++i) ep[i] = t.add_endpoint("n" + std::to_string(i), 1);
  for (int i = 0; i < n; ++i)
    rt[i] = t.add_switch("r" + std::to_string(i), static_cast<int>(nbr[i].size()) + 1, kinds::kRouter);
  // Link router i port p to its neighbour j on the first port of j that lists i
  // and is still free (the k-th occurrence of i pairs with the k-th occurrence).
  // A wrap-around link of a dimension of 3 or more is its dateline (size 2:
  // minimal routes take one hop in it, so no cycle can form).
  for (int i = 0; i < n; ++i)
    for (size_t p = 0; p < nbr[i].size(); ++p) {
      const int j = nbr[i][p];
      if (j < i) continue;
      int occurrence = 0;
      for (size_t q = 0; q < p; ++q) occurrence += nbr[i][q] == j;
      int seen = 0;
      for (size_t q = 0; q < nbr[j].size(); ++q) {
        if (nbr[j][q] != i) continue;
        if (seen++ == occurrence) {
          const int dim = p == static_cast<size_t>(port_of[i][kMinusX]) ||
                                  p == static_cast<size_t>(port_of[i][kPlusX])
                              ? 0
                              : 1;
          const int size = dim == 0 ? kx : ky;
          t.connect({rt[i], static_cast<int>(p)}, {rt[j], static_cast<int>(q)}, bw, lat, dim,
                    size > 2 && (wrapped[i][p] || wrapped[j][q]));
          break;
        }
      }
    }
  for (int i = 0; i < n; ++i) {
    const int deg = static_cast<int>(nbr[i].size());
    const double b = nic_bw > 0 ? nic_bw : bw * deg;  // MultiTree §V-A
    t.connect({ep[i], 0}, {rt[i], deg}, b, nic_lat >= 0 ? nic_lat : lat);
  }
  t.finalize(std::make_shared<GridRoutes>(t));
  return t;
}

}  // namespace

Topology::RouteFn dimension_order_routes(const Topology& t) {
  return [g = t.grid, ports = grid_ports(t), router = router_numbers(t)](int node, int d) {
    return dimension_order_port(g, ports[router[node]], router[node], d);
  };
}

Topology make_mesh(int kx, int ky, double bw, double lat, double nic_bw, double nic_lat) {
  return make_grid("mesh", kx, ky, false, bw, lat, nic_bw, nic_lat);
}

Topology make_torus(int kx, int ky, double bw, double lat, double nic_bw, double nic_lat) {
  return make_grid("torus", kx, ky, true, bw, lat, nic_bw, nic_lat);
}

namespace {
// A 2-level fat tree's routes from its numbering (make_fattree): endpoint
// i is node i on leaf i / k, port i % k; leaf l is node n + l with its
// spine s on port k + s; spine s is node n + leaves + s with leaf l on port l.
class FatTreeRoutes final : public RouteStructure {
 public:
  FatTreeRoutes(int nodes, int k) : n_(nodes), k_(k), leaves_(nodes / k) {}

  int hops_from(int node, int dst) const override {
    if (node < n_) return node == dst ? 0 : node / k_ == dst / k_ ? 2 : 4;
    if (node < n_ + leaves_) return node - n_ == dst / k_ ? 1 : 3;
    return 2;
  }
  PortSpan routes(int node, int dst) const override {
    if (node < n_) return node == dst ? PortSpan{} : port_range(0, 1);
    if (node >= n_ + leaves_) return port_range(dst / k_, dst / k_ + 1);
    return node - n_ == dst / k_ ? port_range(dst % k_, dst % k_ + 1) : port_range(k_, 2 * k_);
  }
  int distance_to_switch(int node, int sw) const override {
    const bool leaf = sw < leaves_;
    if (node < n_) return leaf ? (node / k_ == sw ? 1 : 3) : 2;
    if (node - n_ == sw) return 0;  // a switch's number is its node's less n
    return (node < n_ + leaves_) == leaf ? 2 : 1;
  }
  PortSpan routes_to_switch(int node, int sw) const override {
    if (node < n_) return port_range(0, 1);
    const bool at_leaf = node < n_ + leaves_, leaf = sw < leaves_;
    if (node - n_ == sw) return {};
    if (at_leaf) return leaf ? port_range(k_, 2 * k_) : port_range(k_ + sw - leaves_, k_ + sw - leaves_ + 1);
    return leaf ? port_range(sw, sw + 1) : port_range(0, leaves_);
  }

 private:
  int n_, k_, leaves_;
};
}  // namespace

Topology make_fattree(int nodes, int k, double bw, double lat) {
  const std::string what = "a fat tree of " + std::to_string(nodes) + " nodes with " +
                           std::to_string(k) + " per leaf switch";
  if (k < 1 || nodes < 2 || nodes % k != 0 || nodes / k < 2)
    throw UserError(what + " is impossible: nodes must be a multiple of k with at least 2 leaf switches");
  if (nodes > 8192) throw UserError(what + " is too large: at most 8192 nodes");
  const int leaves = nodes / k;
  Topology t;
  t.name = "fattree";
  t.family = Topology::kMultiTree;
  std::vector<int> ep(nodes), leaf(leaves), spine(k);
  for (int i = 0; i < nodes; ++i) ep[i] = t.add_endpoint("n" + std::to_string(i), 1);
  for (int l = 0; l < leaves; ++l) leaf[l] = t.add_switch("leaf" + std::to_string(l), 2 * k, kinds::kRouter);
  for (int s = 0; s < k; ++s) spine[s] = t.add_switch("spine" + std::to_string(s), leaves, kinds::kRouter);
  for (int i = 0; i < nodes; ++i) t.connect({ep[i], 0}, {leaf[i / k], i % k}, bw, lat);
  for (int l = 0; l < leaves; ++l)
    for (int s = 0; s < k; ++s) t.connect({leaf[l], k + s}, {spine[s], l}, bw, lat);
  t.finalize(std::make_shared<FatTreeRoutes>(nodes, k));
  return t;
}

Topology make_bigraph(int per_switch, int switches, double bw, double lat) {
  const std::string what = "a BiGraph of " + std::to_string(per_switch) + "x" +
                           std::to_string(switches);
  if (per_switch < 1 || switches < 2 || switches % 2 != 0)
    throw UserError(what + " is impossible: it needs at least 1 node per switch and an even number of switches");
  if (per_switch * switches > 8192) throw UserError(what + " is too large: at most 8192 nodes");
  const int n = per_switch * switches, half = switches / 2;
  Topology t;
  t.name = "bigraph";
  t.family = Topology::kMultiTree;
  // Shortest paths between two switches of one group turn back up through
  // the other group (upper-lower-upper, lower-upper-lower), so with one VC
  // their channel dependencies form cycles; the second switch-to-switch link
  // of such a path uses the second VC of its class, which breaks them.
  t.vc_policy = VcPolicy::SwitchHop;
  std::vector<int> ep(n), sw(switches);
  for (int i = 0; i < n; ++i) ep[i] = t.add_endpoint("n" + std::to_string(i), 1);
  for (int s = 0; s < switches; ++s)
    sw[s] = t.add_switch((s < half ? "up" : "low") + std::to_string(s % half), per_switch + half, kinds::kRouter);
  for (int i = 0; i < n; ++i) t.connect({ep[i], 0}, {sw[i / per_switch], i % per_switch}, bw, lat);
  // Upper switch u port per_switch + l  <->  lower switch l port per_switch + u.
  for (int u = 0; u < half; ++u)
    for (int l = 0; l < half; ++l)
      t.connect({sw[u], per_switch + l}, {sw[half + l], per_switch + u}, bw, lat);
  t.finalize();
  return t;
}

}  // namespace incsim::topo
