#pragma once
// The topology graph: endpoints, switches, ports and bidirectional links with
// bandwidth and latency. Plain C++ with no SystemC: platforms elaborate modules
// from it, routing tables are computed from it, and collective algorithms read it.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace incsim::topo {

enum class NodeKind { Endpoint, Switch };

// What hardware a node is: the kind the platform builder elaborates it by
// (platforms/platform.h, node_kind()), and a YAML file's `kind:`. Endpoints
// are kGpu unless they say otherwise, switches kNvSwitch.
namespace kinds {
constexpr const char* kGpu = "gpu";
constexpr const char* kNvSwitch = "nvswitch";            // Klenk's NVSwitch with reduction tables
constexpr const char* kRouter = "router";                // a MultiTree network's router or switch
constexpr const char* kNvLinkBridge = "nvlink_bridge";   // one DGX-1 NVLink (topology/dgx1.h)
constexpr const char* kPcieSwitch = "pcie_switch";
constexpr const char* kCpuSocket = "cpu_socket";
constexpr const char* kNetworkSwitch = "network_switch";  // between DGX-1 servers
constexpr const char* kEthernetSwitch = "ethernet_switch";  // NetReduce's platforms
constexpr const char* kRoceHost = "roce_host";
constexpr const char* kFpgaAggregator = "fpga_aggregator";
constexpr const char* kIbSwitch = "ib_switch";  // a cluster's InfiniBand rail leaf or spine
constexpr const char* kHca = "hca";             // a GPU's InfiniBand adapter, bridging its node and the network
constexpr const char* kRoceBridge = "roce_bridge";  // a GPU's RoCE adapter, bridging its node and an Ethernet network
// NetReduce's FPGA beside a RoCE cluster's rail leaf: frames reach it by the
// leaf's ACL, never by address, so in the graph it is a switch.
constexpr const char* kLeafFpga = "leaf_fpga";
// A cluster's adapter between a GPU and the scale-out network, of either kind.
inline bool is_adapter(const std::string& block) { return block == kHca || block == kRoceBridge; }
}  // namespace kinds

struct Node {
  std::string name;
  NodeKind kind;  // its part in routing: an endpoint or a switch
  int ports;
  int index;  // position among nodes of the same kind
  std::string block;  // the hardware it is, one of kinds:: or a kind an sc_main registered
};

struct PortRef {
  int node = -1;
  int port = -1;
};

struct Link {
  PortRef a, b;
  double bw_GBps;     // each direction, GB = 1e9 B
  double latency_ns;  // wire latency, each direction
  // Grid networks (mesh, torus): the dimension the link runs along (0 = X,
  // 1 = Y), -1 for any other link; and whether it is a torus wrap-around link,
  // the dateline where a packet moves to its class's second VC.
  int dim = -1;
  bool dateline = false;
};

// Buffer bytes that keep a link busy across one credit round trip: the
// credit loop is serialization + wire latency there and back + the
// receiver's holding time, rounded up to whole maximum-size packets (Klenk
// §V: queues "sized to handle the round-trip latency"). Packet level sizes
// the switches' buffers so (net::round_trip_bytes); the flows' NICs ask
// what the first switch holds of a message.
uint32_t round_trip_bytes(double bw_GBps, double latency_ns, double holding_ns, uint32_t max_packet_bytes);

// How a switch picks the VC of a packet it forwards from one port to another
// (net::kVcsPerClass VCs per message class, docs/platforms.md): keep the VC
// it came on, or take the class's first or second VC.
enum class VcRule : uint8_t { Keep, First, Second };

// Which rule a platform's switches follow to stay free of routing deadlock
// (Topology::vc_rule).
enum class VcPolicy : uint8_t {
  None,       // every packet stays on its class's first VC: routes never turn back up (DGX-2, fat trees)
  Dateline,   // grid networks: dimension order with a dateline per torus ring
  SwitchHop,  // BiGraph: switch-to-switch links after the first are on the class's second VC
};

// The coordinates of a mesh or torus (kx == 0: not a grid network): endpoint
// and router i sit at x = i % kx, y = i / kx.
struct Grid {
  int kx = 0, ky = 0;
  bool wrap = false;  // torus
};

// What a graph may ask for, checked before anything is allocated (docs/platforms.md,
// "Limits"): a description a few lines long must not cost gigabytes.
constexpr int kMaxPorts = 4096;      // per node; port numbers are int16 in routing tables
constexpr int kMaxNodes = 30000;     // endpoints plus switches; hop counts are int16
constexpr uint64_t kMaxRouteTableBytes = uint64_t{512} << 20;
// A builder that computes its routes from the graph's structure
// (RouteStructure) may reserve up to this many nodes: a cluster of 16,384
// nodes of 20 blocks each, with its network.
constexpr int kMaxStructuredNodes = 1 << 23;
// A link's bandwidth and latency: finite, and small enough that serialising a
// packet and crossing the wire stay far inside 64-bit picosecond time.
constexpr double kMinBwGBps = 1e-3, kMaxBwGBps = 1e5;  // 1 MB/s to 100 TB/s
constexpr double kMaxLatencyNs = 1e9;                  // one second
// Throws a UserError that begins with `what` unless bandwidth and latency are in those ranges.
void check_link(const std::string& what, double bw_GBps, double latency_ns);

// The equal-cost output ports toward a switch (Topology::routes_to_switch).
struct PortSpan {
  const int16_t* first = nullptr;
  const int16_t* last = nullptr;
  const int16_t* begin() const { return first; }
  const int16_t* end() const { return last; }
  size_t size() const { return static_cast<size_t>(last - first); }
  bool empty() const { return first == last; }
  int16_t operator[](size_t i) const { return first[i]; }
};
// Ports lo to hi - 1, consecutive equal-cost ports (a trunk, a leaf's
// up-links), as a PortSpan of static storage; 0 <= lo <= hi <= kMaxPorts.
PortSpan port_range(int lo, int hi);

// Routes a platform's builder computes from its structure, in place of
// finalize()'s tables (docs/platforms.md, "Limits"): a cluster's up-down
// routes, dimension order on a grid. Each query answers what the tables
// would, port for port, in constant time; its memory grows with the graph,
// not with nodes x endpoints. It owns what it reads (a Topology is copied
// with it).
class RouteStructure {
 public:
  virtual ~RouteStructure() = default;
  // As Topology's queries of the same names.
  virtual int hops_from(int node, int dst) const = 0;
  virtual PortSpan routes(int node, int dst) const = 0;
  // The tables' choice among routes(): port number dst mod count.
  virtual int route(int node, int dst) const {
    const PortSpan r = routes(node, dst);
    return r.empty() ? -1 : r[static_cast<size_t>(dst) % r.size()];
  }
  virtual int distance_to_switch(int node, int sw) const = 0;
  virtual PortSpan routes_to_switch(int node, int sw) const = 0;
  // As Topology's queries of the same names; by default each endpoint is
  // a group of its own.
  virtual int endpoint_group(int dst) const { return dst; }
  virtual bool routes_group_alike(int /*node*/, int /*group*/) const { return false; }
};

class Topology {
 public:
  std::string name;

  int add_endpoint(const std::string& name, int ports, const std::string& block = kinds::kGpu) {
    return add_node(name, ports, NodeKind::Endpoint, block);
  }
  int add_switch(const std::string& name, int ports, const std::string& block = kinds::kNvSwitch) {
    return add_node(name, ports, NodeKind::Switch, block);
  }
  void connect(PortRef a, PortRef b, double bw_GBps, double latency_ns, int dim = -1, bool dateline = false);
  // Room for a builder that knows its size: `nodes` nodes (up to
  // kMaxStructuredNodes, beyond kMaxNodes only for a graph finalized with
  // a RouteStructure) and `links` links.
  void reserve(int nodes, size_t links);

  // At switch `node`, the output port toward endpoint number `dst`, or -1 to
  // leave the choice to the shortest-path rule below.
  using RouteFn = std::function<int(int node, int dst)>;
  // Checks the graph (throws UserError naming the problem) and computes the
  // deterministic routing tables. Call once after the last connect(). A
  // routing function (dimension order on a grid) must choose a port on a
  // shortest path; anything else is a bug in the builder (std::logic_error).
  void finalize(const RouteFn& route_fn = {});
  // The same checks, with routes from the builder's structure instead of tables.
  void finalize(std::shared_ptr<const RouteStructure> routes);
  // Whether routes come from tables (finalize(RouteFn)) rather than a RouteStructure.
  bool has_route_tables() const { return !structure_; }

  // Which built-in platform family's parameter defaults and algorithms the
  // machine takes (platforms/platform.h, platform_defaults()): kKlenk (dgx2,
  // fattree2l, star), kMultiTree (torus, mesh, fattree, bigraph), a DGX-1
  // generation ("dgx1v", "dgx1p"), kNetReduce and kNetReduceMultiGpu (NetReduce's Ethernet platforms), or
  // today's machines, kHgxA100, kHgxH100, kHgxB200 and kNvl72. A YAML file carries it as `family:`.
  static constexpr const char* kKlenk = "klenk";
  static constexpr const char* kMultiTree = "multitree";
  static constexpr const char* kNetReduce = "netreduce";  // rack, spineleaf (Ethernet)
  // multigpu: each leaf switch is one machine's GPU fabric, its uplink the machine's NIC (NetReduce §3.4)
  static constexpr const char* kNetReduceMultiGpu = "netreduce-multigpu";
  static constexpr const char* kHgxA100 = "hgx-a100";  // an HGX A100 board (docs/platforms.md)
  static constexpr const char* kHgxH100 = "hgx-h100";  // an HGX H100 board (docs/modern-machines.md)
  static constexpr const char* kHgxB200 = "hgx-b200";  // an HGX B200 board (docs/platforms.md)
  static constexpr const char* kNvl72 = "nvl72";        // a GB200 NVL72 rack (docs/modern-machines.md)
  std::string family = kKlenk;
  Grid grid;            // set by make_mesh and make_torus
  VcPolicy vc_policy = VcPolicy::None;
  // How route() was chosen: "shortest-path", or "dimension-order" on a grid
  // (finalize() with dimension_order_routes(), direct_networks.h).
  std::string routing = "shortest-path";
  // Read from a YAML platform file (or a cluster of such nodes): unlike the
  // built-ins, its multicast paths are not deadlock-free by construction.
  bool from_file = false;

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Link>& links() const { return links_; }
  const std::vector<int>& endpoints() const { return endpoints_; }
  const std::vector<int>& switches() const { return switches_; }
  const Node& node(int id) const { return nodes_[id]; }
  int find(const std::string& name) const;  // -1 if absent

  // The link at a port (-1 if unconnected) and the port at its other end.
  int link_at(PortRef p) const { return port_link_[port_first_[p.node] + p.port]; }
  PortRef peer(PortRef p) const;

  // Output port at `node` toward endpoint number `dst` (index into endpoints()):
  // shortest path, ties between equal-cost ports broken by dst, so the table is
  // deterministic and spreads destinations over parallel links.
  int route(int node, int dst) const { return structure_ ? structure_->route(node, dst) : route_[at(node, dst)]; }
  // Every output port at `node` on a shortest path toward endpoint number
  // dst, in port order (the links of a trunk, several up-links): the ports a
  // switch may spread packets over (docs/modern-machines.md). route() is one
  // of them, or the routing function's choice on a grid.
  PortSpan routes(int node, int dst) const {
    if (structure_) return structure_->routes(node, dst);
    const size_t i = at(node, dst);
    return {ep_ports_.data() + ep_first_[i], ep_ports_.data() + ep_first_[i + 1]};
  }
  // Output port at `node` toward switch number `sw` (index into switches()),
  // -1 at that switch itself or where it is unreachable: shortest path, ties
  // broken by `spread`, so that traffic to one switch uses all its parallel
  // links. Push reduction writes travel to a switch port (Klenk §IV-C).
  int route_to_switch(int node, int sw, uint32_t spread) const {
    const PortSpan c = routes_to_switch(node, sw);
    return c.empty() ? -1 : c[spread % c.size()];
  }
  PortSpan routes_to_switch(int node, int sw) const {
    if (structure_) return structure_->routes_to_switch(node, sw);
    const size_t i = sw_at(node, sw);
    return {sw_ports_.data() + sw_first_[i], sw_ports_.data() + sw_first_[i + 1]};
  }
  // Links from node to switch number sw, -1 if unreachable.
  int distance_to_switch(int node, int sw) const {
    return structure_ ? structure_->distance_to_switch(node, sw) : sw_dist_[sw_at(node, sw)];
  }
  // Links from node to endpoint number dst, -1 if unreachable.
  int hops_from(int node, int dst) const { return structure_ ? structure_->hops_from(node, dst) : dist_[at(node, dst)]; }
  // Endpoints in groups that many nodes reach alike (a cluster's: the GPUs
  // whose adapters hang from one leaf, which every other leaf, spine and
  // core reaches by the same ports), so that a walk to many endpoints asks
  // once per group. Where routes_group_alike(node, g), every endpoint of
  // group g has the same routes() and hops_from() at node, and route()
  // picks the endpoint's number mod their count among them. Without a route
  // structure each endpoint is its own group.
  int endpoint_group(int dst) const { return structure_ ? structure_->endpoint_group(dst) : dst; }
  bool routes_group_alike(int node, int group) const { return structure_ && structure_->routes_group_alike(node, group); }
  // Links on the route from endpoint src to endpoint dst (2 through one switch).
  int hops(int src, int dst) const;
  // The links a packet from endpoint number src to endpoint number dst
  // crosses, in order, following route() at every node (empty for src ==
  // dst, or if it cannot get there).
  std::vector<int> links_on_route(int src, int dst) const;
  // Can a packet leaving endpoint port p reach endpoint number dst? (Not
  // always: on a DGX-1 an NVLink leads to one neighbour only.)
  bool port_reaches(PortRef p, int dst) const;
  // Whether a shortest route from endpoint port p's node to dst leaves by p:
  // the ports a GPU sends on (a cluster's GPU reaches its node's GPUs over
  // NVLink, not the long way through its adapter and the network).
  bool port_on_shortest_path(PortRef p, int dst) const;

  // The VC rule at switch `node` from in_port to out_port. Dateline: a
  // packet leaving on a dateline link takes its class's second VC; one
  // continuing along the dimension it came on keeps its VC; every other hop
  // (entering the network, turning to another dimension, leaving it) takes
  // the class's first VC. SwitchHop: a packet that came from a switch and
  // leaves to a switch takes the second VC, every other hop the first.
  // None: the first VC everywhere.
  VcRule vc_rule(int node, int in_port, int out_port) const;

  std::string port_name(PortRef p) const;

 private:
  int add_node(const std::string& name, int ports, NodeKind kind, const std::string& block);
  void check_port(PortRef p, const char* what) const;
  void check_linked() const;
  void check_table_size() const;
  size_t at(int node, int dst) const { return static_cast<size_t>(node) * endpoints_.size() + dst; }
  size_t sw_at(int node, int sw) const { return static_cast<size_t>(node) * switches_.size() + sw; }
  std::vector<Node> nodes_;
  std::unordered_map<std::string, int> by_name_;
  std::vector<Link> links_;
  std::vector<int> endpoints_, switches_;
  // The link at each port: port_link_[port_first_[node] + port], -1 unlinked.
  std::vector<int> port_link_;
  std::vector<uint32_t> port_first_;
  int max_nodes_ = kMaxNodes;
  std::shared_ptr<const RouteStructure> structure_;  // routes without tables, or null
  // Routing tables, one flat array each (a vector per row cost 24 B of header
  // plus an allocation per (node, switch) pair: 8 GB for a chain of 20,000 switches).
  std::vector<int16_t> route_, dist_;  // [node * endpoints + dst endpoint]
  // The equal-cost ports toward an endpoint: ep_ports_[ep_first_[i] .. ep_first_[i + 1]), i = at(node, dst).
  std::vector<uint32_t> ep_first_;
  std::vector<int16_t> ep_ports_;
  std::vector<int16_t> sw_dist_;       // [node * switches + dst switch]
  // The equal-cost ports toward a switch: sw_ports_[sw_first_[i] .. sw_first_[i + 1]), i = sw_at(node, sw).
  std::vector<uint32_t> sw_first_;
  std::vector<int16_t> sw_ports_;
};

// Built-in platforms (same description a YAML platform file produces).
// DGX-2 exactly as Klenk §II-A: 16 GPUs with 6 links each, twelve 16-port
// switches in two groups of 6; each switch links to the 8 GPUs of its group and
// by 8 links to one switch of the other group (full bisection).
Topology make_dgx2(double bw_GBps, double latency_ns);
// The 2-level fat tree of Klenk §V: leaf groups of 8 GPUs (6 ports each) and
// 6 leaf switches, each leaf switch linked to the 8 GPUs of its group and by
// 8 up-links to 8 spine switches; spine switch (k, j) links to leaf switch k
// of every group. 16 groups give 128 GPUs and 96 + 48 = 144 switches.
Topology make_fattree2l(int groups, double bw_GBps, double latency_ns);
// One switch with n ports and n single-port endpoints.
Topology make_star(int n, double bw_GBps, double latency_ns);
// An HGX A100 board: 8 GPUs with 12 NVLink3 links each, 2 to each of 6
// NVSwitch gen 2 chips.
Topology make_hgx_a100(double bw_GBps, double latency_ns);
// An HGX H100 board: 8 GPUs with 18 NVLink4 links each and 4 NVSwitch3
// chips; every GPU has a trunk of 5, 4, 4 and 5 links to switches 0 to 3
// (docs/platforms.md, HGX H100).
Topology make_hgx_h100(double bw_GBps, double latency_ns);
// An HGX B200 board: 8 GPUs with 18 NVLink5 links each, 9 to each of 2
// NVLink Switch chips.
Topology make_hgx_b200(double bw_GBps, double latency_ns);
// Today's NVLink machines (HGX A100, H100, B200, GB200 NVL72): the SMs'
// 128-byte packets, NCCL's protocols by size and its software costs.
bool is_nvlink_machine(const std::string& family);
// A GB200 NVL72 rack's NVLink domain: 72 GPUs with 18 NVLink5 links each and
// 18 NVLink Switch chips (9 trays of 2); GPU g's link s goes to switch s, on
// that switch's port g (docs/platforms.md, GB200 NVL72).
Topology make_nvl72(double bw_GBps, double latency_ns);

// Where graph g differs from c as a netlist, in a phrase ("port leaf0.1
// should be linked to host1.0"), or empty if it does not: the k-th switch
// (endpoint) of one is the k-th of the other, names and the order of links
// aside, and links' rates and latencies too; node kinds and port counts must
// match. Tells a file that is a built-in machine from one that is not, where
// a workload needs the built-in's numbering.
std::string netlist_difference(const Topology& g, const Topology& c);

// VC policies by their YAML names (none, dateline, switch-hop); the parse
// throws UserError for any other name.
const char* to_string(VcPolicy p);
VcPolicy parse_vc_policy(const std::string& name);

// YAML platform files: see docs/platforms.md. Links that give no bandwidth or
// latency take link_defaults(family) (the file's family, or kKlenk), unless
// the file has a `link:` section.
struct LinkDefaults {
  double bw_GBps = 0, latency_ns = 0;
};
Topology load_yaml(const std::string& path, const std::function<LinkDefaults(const std::string& family)>& link_defaults);
// The same with one default for every family.
inline Topology load_yaml(const std::string& path, double default_bw_GBps, double default_latency_ns) {
  return load_yaml(path, [=](const std::string&) { return LinkDefaults{default_bw_GBps, default_latency_ns}; });
}
// Everything load_yaml() needs to rebuild t exactly: loading what this writes
// gives a graph whose save_yaml() writes the same bytes.
void save_yaml(const Topology& t, std::ostream& os);

}  // namespace incsim::topo
