#include "machine.h"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "ethernet/roce_frame.h"
#include "flow/cores_flows.h"
#include "flow/graph.h"
#include "topology/cluster.h"
#include "ethernet_fabric.h"
#include "gpu_fabric.h"
#include "infiniband_fabric.h"

namespace incsim::platforms {

namespace {
struct KindEntry {
  std::string fabric;
  std::string fabric_b;  // a bridge's second fabric; empty for any other kind
  topo::NodeKind role;
  NodeFactory make;
  BridgeFactory make_bridge;
};
struct FabricEntry {
  FabricFactory make;
  FlowView flows;
};
std::map<std::string, FabricEntry>& fabrics() {
  static std::map<std::string, FabricEntry> f;
  return f;
}
std::map<std::string, KindEntry>& kinds() {
  static std::map<std::string, KindEntry> k;
  return k;
}
// The built-in fabrics register their kinds here, on first use, so that a
// static library's registrations cannot be dropped by the linker.
void register_builtins() {
  static bool done = false;
  if (done) return;
  done = true;  // first: the built-ins' own registrations come back here
  register_nvlink_fabric();
  register_infiniband_fabric();
  register_ethernet_fabric();
}

// Packet level holds every port's buffers, queues and processes: peak RSS at
// a 4-byte collective is 68 KB per link on 64-node clusters, 79 on
// fattree2l, 51 on nvl72 (the session that added this measured them). A
// graph whose estimate at 64 KB per link exceeds what the process may use
// (usable_bytes) is refused before anything is built, rather than swapped or
// killed.
constexpr uint64_t kBytesPerLink = 64 * 1024;
}  // namespace

void require_packet_memory(const topo::Topology& t, const std::string& instead) {
  const uint64_t need = t.links().size() * kBytesPerLink, have = usable_bytes();
  if (need <= have) return;
  const auto gb = [](uint64_t b) {
    std::ostringstream o;
    o.precision(3);
    o << static_cast<double>(b) / 1e9 << " GB";
    return o.str();
  };
  // A cluster's links grow with its nodes: how many of these nodes fit.
  const size_t nodes = topo::cluster_nodes(t).size();
  const std::string fits =
      nodes ? " (a cluster of at most " + std::to_string(nodes * have / need) + " of these nodes fits)" : "";
  throw UserError("platform " + t.name + " has " + std::to_string(t.links().size()) + " links: packet level needs about " +
                  gb(need) + " for them (64 KB a link), more than the " + gb(have) + " this process may use" + fits +
                  "; " + instead);
}

namespace {

// A graph's nodes in build order, its fabrics and the fabric whose packets
// each link carries, once every node's kind is known and in its role and
// every link joins nodes of one fabric or a bridge to one of its two.
struct FabricLayout {
  std::vector<int> order;           // switches, then endpoints: the order modules are built in
  std::vector<std::string> names;   // the endpoints' fabric first: the one workloads drive
  std::vector<size_t> link_fabric;  // [link]: index into names
};
FabricLayout fabric_layout(const topo::Topology& t) {
  FabricLayout out;
  std::vector<int>& order = out.order;
  order = t.switches();
  order.insert(order.end(), t.endpoints().begin(), t.endpoints().end());
  if (order.empty()) throw UserError("platform " + t.name + " has no nodes");
  auto entry = [&t](int id) -> const KindEntry& {
    fabric_of_kind(t.node(id).block);
    return kinds().at(t.node(id).block);
  };
  auto index_of = [&out](const std::string& f) {
    return static_cast<size_t>(std::find(out.names.begin(), out.names.end(), f) - out.names.begin());
  };
  auto add_fabric = [&out, &index_of](const std::string& f) {
    if (index_of(f) == out.names.size()) out.names.push_back(f);
  };
  add_fabric(entry(t.endpoints().empty() ? order[0] : t.endpoints()[0]).fabric);
  for (const int id : order) {
    const topo::Node& node = t.node(id);
    const KindEntry& k = entry(id);
    if (k.role != node.kind)
      throw UserError("node " + node.name + " is a " + node.block + ", which is " +
                      (node.kind == topo::NodeKind::Switch ? "an endpoint, not a switch" : "a switch, not an endpoint"));
    add_fabric(k.fabric);
    if (!k.fabric_b.empty()) add_fabric(k.fabric_b);
  }
  for (const topo::Link& l : t.links()) {
    const KindEntry& a = entry(l.a.node);
    const KindEntry& b = entry(l.b.node);
    const topo::Node& na = t.node(l.a.node);
    const topo::Node& nb = t.node(l.b.node);
    if (!a.fabric_b.empty() && !b.fabric_b.empty())
      throw UserError("bridges " + na.name + " and " + nb.name + " are linked to each other; a bridge's links lead into its fabrics");
    std::string f = a.fabric;
    if (!a.fabric_b.empty() || !b.fabric_b.empty()) {
      const KindEntry& bridge = a.fabric_b.empty() ? b : a;
      const topo::Node& nbridge = a.fabric_b.empty() ? nb : na;
      const KindEntry& other = a.fabric_b.empty() ? a : b;
      const topo::Node& nother = a.fabric_b.empty() ? na : nb;
      if (other.fabric != bridge.fabric && other.fabric != bridge.fabric_b)
        throw UserError("node " + nother.name + " is a " + nother.block + " of the " + other.fabric + " fabric, but " +
                        nbridge.name + ", a " + nbridge.block + ", bridges " + bridge.fabric + " and " +
                        bridge.fabric_b);
      f = other.fabric;
    } else if (a.fabric != b.fabric) {
      // Name the endpoint's side first, as a user reads a link from a GPU.
      const bool swap = na.kind == topo::NodeKind::Switch && nb.kind == topo::NodeKind::Endpoint;
      const topo::Node& x = swap ? nb : na;
      const topo::Node& y = swap ? na : nb;
      throw UserError("node " + x.name + " is a " + x.block + " of the " + (swap ? b : a).fabric + " fabric, but " +
                      y.name + " is a " + y.block + " of the " + (swap ? a : b).fabric +
                      " fabric; a link carries one fabric's packets, and only a bridge (such as hca) joins two");
    }
    out.link_fabric.push_back(index_of(f));
  }
  return out;
}

}  // namespace

uint64_t usable_bytes() {
  uint64_t most = UINT64_MAX;
  std::ifstream info("/proc/meminfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream in(line.substr(13));
      uint64_t kb = 0;
      if (in >> kb) most = kb * 1024;
    }
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) most = std::min<uint64_t>(most, as.rlim_cur);
  return most;
}

void register_fabric(const std::string& name, FabricFactory make, FlowView flows) {
  if (name.empty()) throw UserError("a fabric needs a name");
  fabrics()[name] = {std::move(make), std::move(flows)};
}

void register_node_kind(const std::string& kind, const std::string& fabric, topo::NodeKind role, NodeFactory make) {
  register_builtins();
  if (kind.empty()) throw UserError("a node kind needs a name");
  if (!fabrics().count(fabric)) throw UserError("node kind " + kind + " names an unknown fabric '" + fabric + "'");
  kinds()[kind] = {fabric, "", role, std::move(make), {}};
}

void register_bridge_kind(const std::string& kind, const std::string& fabric_a, const std::string& fabric_b,
                          topo::NodeKind role, BridgeFactory make) {
  register_builtins();
  if (kind.empty()) throw UserError("a node kind needs a name");
  for (const std::string& f : {fabric_a, fabric_b})
    if (!fabrics().count(f)) throw UserError("node kind " + kind + " names an unknown fabric '" + f + "'");
  if (fabric_a == fabric_b) throw UserError("bridge kind " + kind + " joins " + fabric_a + " to itself");
  kinds()[kind] = {fabric_a, fabric_b, role, {}, std::move(make)};
}

const std::string& bridged_fabric(const std::string& kind) {
  fabric_of_kind(kind);
  return kinds().at(kind).fabric_b;
}

const std::string& fabric_of_kind(const std::string& kind) {
  register_builtins();
  const auto it = kinds().find(kind);
  if (it != kinds().end()) return it->second.fabric;
  std::string known;
  for (const auto& [name, entry] : kinds()) known += (known.empty() ? "" : ", ") + name;
  throw UserError("unknown node kind '" + kind + "'; the builder elaborates " + known);
}

Machine::Machine(topo::Topology graph, Config& cfg, uint64_t seed, const PlatformDefaults& d) : topo_(std::move(graph)) {
  require_packet_memory(topo_);
  FabricLayout layout = fabric_layout(topo_);
  order_ = std::move(layout.order);
  fabric_names_ = std::move(layout.names);
  const std::vector<size_t>& link_fabric = layout.link_fabric;
  auto index_of = [this](const std::string& f) {
    return static_cast<size_t>(std::find(fabric_names_.begin(), fabric_names_.end(), f) - fabric_names_.begin());
  };
  auto entry = [this](int id) -> const KindEntry& { return kinds().at(topo_.node(id).block); };
  for (const std::string& f : fabric_names_) {
    fabrics_.push_back(fabrics().at(f).make(topo_, cfg, seed, d));
    pools_.push_back(std::make_unique<net::PacketPool>(fabrics_.back()->packet_format()));
  }
  topo::MulticastFabric* manager = nullptr;
  for (const auto& f : fabrics_) manager = manager ? manager : f->multicast_manager();
  for (const auto& f : fabrics_) f->use_multicast_manager(manager);

  // A module per node, switches first (module order is SystemC's process order).
  blocks_.resize(topo_.nodes().size());
  for (const int id : order_) {
    const KindEntry& k = entry(id);
    const size_t a = index_of(k.fabric);
    if (k.fabric_b.empty()) {
      blocks_[id] = k.make(topo_, id, *fabrics_[a], *pools_[a]);
    } else {
      const size_t b = index_of(k.fabric_b);
      blocks_[id] = k.make_bridge(topo_, id, *fabrics_[a], *pools_[a], *fabrics_[b], *pools_[b]);
    }
  }

  // Each link as two one-way channels: the sender's port takes the link's
  // rate and latency and the receiver's buffer as credits. Lossy links get
  // faults drawn per link and direction from the seed.
  auto bind = [&](topo::PortRef from, topo::PortRef to, const topo::Link& l, size_t fabric, uint64_t stream) {
    net::Block& a = *blocks_[from.node];
    net::Block& b = *blocks_[to.node];
    a.configure_port(from.port, l.bw_GBps, sc_core::sc_time(l.latency_ns, sc_core::SC_NS), b.buffer_bytes(to.port));
    if (const uint32_t reads = b.packet_reads(to.port)) a.peer_packets(from.port, reads);
    a.out(from.port).socket.bind(b.in(to.port).socket);
    eth::LinkFaults* f = b.link_faults(to.port);
    if (f) *f = eth::LinkFaults(fabrics_[fabric]->link_loss(), fabrics_[fabric]->link_corruption(), seed, stream);
    ends_.push_back({topo_.port_name(from), topo_.port_name(to), &a.out(from.port), fabric});
    faults_.push_back(f);
  };
  for (size_t k = 0; k < topo_.links().size(); ++k) {
    const topo::Link& l = topo_.links()[k];
    bind(l.a, l.b, l, link_fabric[k], 2 * k + 1);  // link k's stream into its a end is 2k, into its b end 2k + 1
    bind(l.b, l.a, l, link_fabric[k], 2 * k);
  }
}

Machine::~Machine() = default;

std::vector<nvswitch::TableSharing*> Machine::table_sharings() const {
  std::vector<nvswitch::TableSharing*> all;
  for (const auto& f : fabrics_)
    for (nvswitch::TableSharing* s : f->table_sharings()) all.push_back(s);
  return all;
}

uint64_t Machine::packets_in_use() const {
  uint64_t n = 0;
  for (const auto& p : pools_) n += p->in_use();
  return n;
}

uint64_t Machine::progress() const {
  uint64_t n = 0;
  for (const int id : order_) n += blocks_[id]->progress();
  return n;
}

void Machine::trace(sc_core::sc_trace_file* tf) const {
  for (const int id : order_) blocks_[id]->trace(tf);
}

uint64_t Machine::report_held(std::ostream& os) const {
  uint64_t n = 0;
  for (const int id : order_) n += blocks_[id]->report_held(os);
  return n;
}

eth::LinkFaults& Machine::link_faults(const std::string& from, const std::string& to) {
  // A port (switch.3) or a node (host0), if one link joins it to the other end.
  auto is = [](const std::string& port_name, const std::string& name) {
    return port_name == name || port_name.compare(0, port_name.rfind('.'), name) == 0;
  };
  eth::LinkFaults* found = nullptr;
  for (size_t k = 0; k < ends_.size(); ++k) {
    if (!is(ends_[k].from, from) || !is(ends_[k].to, to)) continue;
    if (found) throw UserError("several links run " + from + " -> " + to + "; name their ports (" + ends_[k].from + ")");
    found = faults_[k];
    if (!found) throw UserError("link " + ends_[k].from + " -> " + ends_[k].to + " is lossless (its blocks model no faults)");
  }
  if (!found) throw UserError("no link " + from + " -> " + to + " on this platform");
  return *found;
}

uint64_t Machine::frames_lost() const {
  uint64_t n = 0;
  for (const eth::LinkFaults* f : faults_)
    if (f) n += f->lost();
  return n;
}

flow::FlowMachine flow_machine(const topo::Topology& graph, Config& cfg, const PlatformDefaults& d) {
  const FabricLayout layout = fabric_layout(graph);
  flow::FlowMachine m;
  m.size_for(graph);
  m.merge_planes = cfg.get(flow::kMergePlanes);
  for (const std::string& f : layout.names) {
    const FlowView& view = fabrics().at(f).flows;
    if (!view)
      throw UserError("the " + f + " fabric's blocks have no flow model; --fidelity packet runs platform " + graph.name);
    // Its nodes: those of its kinds, and the bridges into it (a GPU's NIC
    // is the network's: its latency and acknowledgements are the adapter's).
    std::vector<int> nodes;
    for (const int id : layout.order) {
      const KindEntry& k = kinds().at(graph.node(id).block);
      if (k.fabric_b.empty() ? k.fabric == f : k.fabric_b == f) nodes.push_back(id);
    }
    m.formats.push_back(view(graph, nodes, cfg, d, m));
  }
  for (size_t k = 0; k < graph.links().size(); ++k) m.link_format[k] = static_cast<uint8_t>(layout.link_fabric[k]);
  return m;
}

}  // namespace incsim::platforms
