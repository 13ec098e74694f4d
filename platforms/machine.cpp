#include "machine.h"

#include <map>

#include "ethernet/roce_frame.h"
#include "ethernet_fabric.h"
#include "gpu_fabric.h"

namespace incsim::platforms {

namespace {
struct KindEntry {
  std::string fabric;
  topo::NodeKind role;
  NodeFactory make;
};
std::map<std::string, FabricFactory>& fabrics() {
  static std::map<std::string, FabricFactory> f;
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
  register_ethernet_fabric();
}
}  // namespace

void register_fabric(const std::string& name, FabricFactory make) {
  if (name.empty()) throw UserError("a fabric needs a name");
  fabrics()[name] = std::move(make);
}

void register_node_kind(const std::string& kind, const std::string& fabric, topo::NodeKind role, NodeFactory make) {
  register_builtins();
  if (kind.empty()) throw UserError("a node kind needs a name");
  if (!fabrics().count(fabric)) throw UserError("node kind " + kind + " names an unknown fabric '" + fabric + "'");
  kinds()[kind] = {fabric, role, std::move(make)};
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
  // Every node's kind is known and all are of one fabric, before anything is built.
  order_ = topo_.switches();
  order_.insert(order_.end(), topo_.endpoints().begin(), topo_.endpoints().end());
  int first = -1;
  for (const int id : order_) {
    const topo::Node& node = topo_.node(id);
    const std::string& f = fabric_of_kind(node.block);
    if (kinds().at(node.block).role != node.kind)
      throw UserError("node " + node.name + " is a " + node.block + ", which is " +
                      (node.kind == topo::NodeKind::Switch ? "an endpoint, not a switch" : "a switch, not an endpoint"));
    if (first < 0) {
      first = id;
      fabric_name_ = f;
    } else if (f != fabric_name_) {
      throw UserError("node " + topo_.node(id).name + " is a " + topo_.node(id).block + " of the " + f +
                      " fabric, but " + topo_.node(first).name + " is a " + topo_.node(first).block + " of the " +
                      fabric_name_ + " fabric; a machine's links all carry one fabric's packets");
    }
  }
  if (first < 0) throw UserError("platform " + topo_.name + " has no nodes");
  fabric_ = fabrics().at(fabric_name_)(topo_, cfg, seed, d);
  pool_ = std::make_unique<net::PacketPool>(fabric_->packet_format());

  // A module per node, switches first (module order is SystemC's process order).
  blocks_.resize(topo_.nodes().size());
  for (const int id : order_) blocks_[id] = kinds().at(topo_.node(id).block).make(topo_, id, *fabric_, *pool_);

  // Each link as two one-way channels: the sender's port takes the link's
  // rate and latency and the receiver's buffer as credits. Lossy links get
  // faults drawn per link and direction from the seed.
  auto bind = [&](topo::PortRef from, topo::PortRef to, const topo::Link& l, uint64_t stream) {
    net::Block& a = *blocks_[from.node];
    net::Block& b = *blocks_[to.node];
    a.configure_port(from.port, l.bw_GBps, sc_core::sc_time(l.latency_ns, sc_core::SC_NS), b.buffer_bytes(to.port));
    a.out(from.port).socket.bind(b.in(to.port).socket);
    eth::LinkFaults* f = b.link_faults(to.port);
    if (f) *f = eth::LinkFaults(fabric_->link_loss(), fabric_->link_corruption(), seed, stream);
    ends_.push_back({topo_.port_name(from), topo_.port_name(to), &a.out(from.port)});
    faults_.push_back(f);
  };
  for (size_t k = 0; k < topo_.links().size(); ++k) {
    const topo::Link& l = topo_.links()[k];
    bind(l.a, l.b, l, 2 * k + 1);  // link k's stream into its a end is 2k, into its b end 2k + 1
    bind(l.b, l.a, l, 2 * k);
  }
}

Machine::~Machine() = default;

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

}  // namespace incsim::platforms
