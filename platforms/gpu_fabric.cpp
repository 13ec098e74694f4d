#include "gpu_fabric.h"

#include <algorithm>
#include <cmath>
#include <iomanip>

#include "collectives/algorithm.h"
#include "collectives/bounds.h"
#include "core/error.h"
#include "core/units.h"
#include "flow/graph.h"
#include "gpu/copy_engine.h"
#include "nic/nic.h"
#include "nic/scheduled_collective.h"
#include "topology/cluster.h"

namespace incsim::platforms {

using sc_core::sc_time;
using topo::NodeKind;

namespace {
const Param<std::string> kHomePorts{
    "fabric.home_ports", "interleave", Range::none(),
    "how push blocks are spread over home ports (Klenk §IV-C: by hashing): interleave, consecutive 128 B blocks "
    "on consecutive switches then ports, as address-sliced caches do; or hash, a mixing hash of the block address"};
}  // namespace

namespace {
// A node of this fabric alone: not another fabric's, nor a bridge's (an
// adapter sizes its own buffers).
bool is_nvlink(const topo::Topology& t, int node) {
  const std::string& kind = t.node(node).block;
  return fabric_of_kind(kind) == GpuFabric::kName && !is_bridge_kind(kind);
}

// The switches with NVSwitch's multicast and reduction tables: NVSwitches,
// and a MultiTree network's routers where multicasts can follow unicast
// routes backwards (its fat tree, whose routes go up then down), so that
// Klenk's push and pull run on MultiTree's topology. Torus, mesh and
// BiGraph routers and DGX-1's bridges, PCIe switches, CPU sockets and
// network switch are plain credit-based switches.
bool in_network(const topo::Topology& t, int node) {
  const std::string& kind = t.node(node).block;
  return kind == topo::kinds::kNvSwitch || (kind == topo::kinds::kRouter && t.vc_policy == topo::VcPolicy::None);
}
}  // namespace

bool holds_homes(const topo::Topology& t, int node) {
  return is_nvlink(t, node) ? in_network(t, node) : !is_bridge_kind(t.node(node).block);
}

bool is_plain_switch(const topo::Topology& t, int node) {
  return t.node(node).kind == NodeKind::Switch && is_nvlink(t, node) && !in_network(t, node);
}

void check_multicast_paths(const topo::Topology& t, const std::vector<std::vector<int>>& groups) {
  const topo::MulticastFabric f(t, topo::HomeMapping::Interleave, [&t](int node) { return holds_homes(t, node); });
  for (const std::vector<int>& g : groups) f.check_group(g);
}

GpuFabric::GpuFabric(const topo::Topology& t, Config& cfg, uint64_t seed, const PlatformDefaults& d) : t_(t) {
  const std::string homes = cfg.get(kHomePorts);
  if (homes != "interleave" && homes != "hash")
    throw UserError("fabric.home_ports must be interleave or hash, not '" + homes + "'");
  multicast_ = std::make_unique<topo::MulticastFabric>(
      t_, homes == "hash" ? topo::HomeMapping::Hash : topo::HomeMapping::Interleave,
      [&t](int node) { return holds_homes(t, node); });
  fmt_.header_bytes = cfg.get(net::kHeaderBytes);
  fmt_.flit_bytes = cfg.get(net::kFlitBytes);
  fmt_.max_payload_bytes = cfg.get(net::kMaxPayloadBytes, d.max_payload_bytes);
  if (fmt_.max_payload_bytes % 4 != 0)
    throw UserError("net.max_payload_bytes must be a multiple of 4, not " + std::to_string(fmt_.max_payload_bytes));
  const uint32_t max_packet = fmt_.wire_bytes(fmt_.max_payload_bytes);

  const double sw_latency_ns = cfg.get(credit_switch::kSwitchLatency, d.switch_latency_ns);
  sw_.latency = sc_time(sw_latency_ns, sc_core::SC_NS);
  sw_.speedup = cfg.get(credit_switch::kSwitchSpeedup);
  const uint32_t in_buf = cfg.get(credit_switch::kSwitchInBuffer);
  const uint32_t out_q = cfg.get(credit_switch::kSwitchOutQueue);
  // The tables' keys are read where something reduces in the switches: a
  // key no block of the run reads is refused.
  const double timeout_ns = d.tables ? cfg.get(nvswitch::kTableTimeout) : 0;
  tables_.entry_bytes = fmt_.max_payload_bytes;
  tables_.eviction = nvswitch::make_eviction_policy(d.tables ? cfg.get(nvswitch::kTableEviction)
                                                             : nvswitch::kTableEviction.default_value());
  // On a cluster its tables are named apart from the network switches' SHARP tables.
  nvswitch::TableResource named;
  if (!topo::cluster_nodes(t_).empty()) named.tables = "the NVSwitches' reduction tables";
  tables_.sharing = std::make_shared<nvswitch::TableSharing>(
      nvswitch::TableSharing::parse(d.tables ? cfg.get(nvswitch::kTablePolicy) : nvswitch::kTablePolicy.default_value()),
      named);
  // The switches' multicast groups, read where a switch multicasts: held by
  // each collective's in-network groups, a job's limited by its share.
  bool multicasts = false;
  for (int s : t_.switches()) multicasts = multicasts || in_network(t_, s);
  const uint32_t groups = multicasts ? cfg.get(nvswitch::kMulticastGroups) : 0;
  groups_sharing_ = nvswitch::TableSharing::of_capacity(cfg, nvswitch::kMulticastPolicy, "the switches' multicast groups",
                                                        "multicast_sharing", nvswitch::kMulticastGroups.key(), groups,
                                                        "sets no limit to share", multicasts);
  // The NICs' schedule tables (MultiTree's NI), a collective's per NIC from
  // its construction to its end: the communicator admits it
  // (CollectiveCall::admit_nic_tables).
  nic_tables_ = cfg.get(nic::kNicTables);
  nic_sharing_ = nvswitch::TableSharing::of_capacity(cfg, nic::kNicTablesPolicy, "the NICs' schedule tables",
                                                     "nic_sharing", nic::kNicTables.key(), nic_tables_,
                                                     "sets no limit to share");
  if (groups) {
    const nvswitch::TableSharing* s = groups_sharing_.get();
    multicast_->limit_groups({groups, [&t](int node) { return in_network(t, node); },
                              [s, groups](int job) { return s->limit(job, groups); },
                              [s](int job) { return s->share_text(job); }, s->resource().tables,
                              nvswitch::kMulticastGroups.key()});
  }
  sw_.spread = credit_switch::parse_spread(cfg.get(credit_switch::kSwitchSpread, d.spread));

  gc_ = gpu_memory(cfg, d);
  const uint32_t rx_buf = cfg.get(gpu::kGpuRxBuffer);
  gc_.max_responses = cfg.get(gpu::kGpuMaxResponses);
  gc_.seed = seed;
  sw_.vc_alloc = credit_switch::parse_vc_alloc(cfg.get(credit_switch::kSwitchVcAlloc));
  if (sw_.vc_alloc == credit_switch::VcAlloc::Packet) {
    // A packet keeps to its set where some hop moves packets to a class's
    // second VC (docs/platforms.md, "Virtual channels and deadlock freedom").
    if (t_.vc_policy != topo::VcPolicy::None)
      for (int s : t_.switches())
        for (int i = 0; i < t_.node(s).ports; ++i)
          for (int o = 0; o < t_.node(s).ports; ++o)
            sw_.vc_sets = sw_.vc_sets || t_.vc_rule(s, i, o) == topo::VcRule::Second;
    gc_.inject_vcs = sw_.vc_sets ? 2 : 4;
  }
  little_law_ = little_law_of(t_, sw_latency_ns, max_packet, gc_);
  TableBytes tables = table_bytes_of(
      t_, cfg, d, [&] { return table_by_rule(little_law_, d, tables_.entry_bytes, push_window_bytes(cfg, t_)); },
      tables_.entry_bytes);
  tables_.table_bytes = tables.all;
  table_bytes_ = std::move(tables.port);
  table_bytes_total_ = tables.total;
  tables_.table_timeout =
      sc_time(timeout_ns > 0 ? timeout_ns : little_law_.push_lifetime_ns(tables.all), sc_core::SC_NS);

  double max_bw = 0, max_link_ns = 0;
  for (const auto& l : t_.links()) {
    if (!is_nvlink(t_, l.a.node) && !is_nvlink(t_, l.b.node)) continue;
    max_bw = std::max(max_bw, l.bw_GBps);
    max_link_ns = std::max(max_link_ns, l.latency_ns);
  }
  const double max_mem_ns = (gc_.mem_latency_cycles + gc_.mem_jitter_cycles) / gc_.clock_ghz;
  longest_round_trip_ = sc_time(2 * max_link_ns + max_mem_ns, sc_core::SC_NS) + sw_.latency;
  if (gc_.max_responses == 0) gc_.max_responses = static_cast<uint32_t>(max_mem_ns * max_bw / fmt_.header_bytes) + 2;
  // Buffers cover a link's credit round trip: a switch's per port, from the
  // link at that port (a torus router's node link is 4x faster than its
  // network links, and its buffer 4x larger); a GPU's the largest over its
  // links (one gpu.rx_buffer_bytes for all its ports).
  auto buffer_for_port = [&](topo::PortRef p, sc_time holding) {
    const auto& k = t_.links()[t_.link_at(p)];
    return std::max(net::round_trip_bytes(k.bw_GBps, sc_time(k.latency_ns, sc_core::SC_NS), holding, max_packet),
                    max_packet);
  };
  auto buffer_for = [&](int node, sc_time holding) {
    uint32_t b = 0;
    for (int p = 0; p < t_.node(node).ports; ++p) b = std::max(b, buffer_for_port({node, p}, holding));
    return b;
  };
  const size_t nodes = t_.nodes().size();
  in_bytes_.resize(nodes);
  out_bytes_.resize(nodes);
  latency_ns_.assign(nodes, sw_latency_ns);
  for (int s : t_.switches()) {
    if (!is_nvlink(t_, s)) continue;
    const auto& node = t_.node(s);
    for (int p = 0; p < node.ports; ++p) {
      in_bytes_[s].push_back(in_buf ? in_buf : buffer_for_port({s, p}, sw_.latency));
      out_bytes_[s].push_back(out_q ? out_q : buffer_for_port({s, p}, sw_.latency));
    }
    if (*std::min_element(in_bytes_[s].begin(), in_bytes_[s].end()) < max_packet ||
        *std::min_element(out_bytes_[s].begin(), out_bytes_[s].end()) < max_packet)
      throw UserError("switch buffers must hold at least one " + std::to_string(max_packet) + "-byte packet");
    // A switch's own key may override its latency.
    latency_ns_[s] = cfg.instance(node.name, credit_switch::kSwitchLatency, sw_latency_ns);
  }
  for (int e : t_.endpoints()) {
    in_bytes_[e].assign(t_.node(e).ports, rx_buf ? rx_buf : buffer_for(e, sc_core::SC_ZERO_TIME));
    if (in_bytes_[e][0] < max_packet)
      throw UserError("gpu.rx_buffer_bytes must hold at least one " + std::to_string(max_packet) + "-byte packet");
  }
}

double LittleLaw::push_per_port() const {
  return collectives::push_table_bytes(b_in_GBps, d_max, l_hop_ns) / switch_ports;
}

double LittleLaw::push_lifetime_ns(uint32_t per_port) const {
  const double assumed = std::max(1, d_max) * l_hop_ns;
  return b_in_GBps > 0 ? std::max(assumed, per_port * static_cast<double>(switch_ports) / b_in_GBps) : assumed;
}

double LittleLaw::pull_per_port(int p) const {
  return collectives::pull_table_bytes(b_in_GBps, p, d_max, l_hop_ns, l_gpu_ns) / access_ports;
}

gpu::GpuConfig gpu_memory(Config& cfg, const PlatformDefaults& d) {
  gpu::GpuConfig g{};
  g.clock_ghz = cfg.get(gpu::kGpuClock, d.gpu_clock_ghz > 0 ? d.gpu_clock_ghz : gpu::kGpuClock.default_value());
  g.mem_latency_cycles = cfg.get(gpu::kGpuMemLatency);
  g.mem_jitter_cycles = cfg.get(gpu::kGpuMemJitter);
  return g;
}

LittleLaw little_law_of(const topo::Topology& t, double switch_latency_ns, uint32_t max_packet_bytes,
                        const gpu::GpuConfig& gc) {
  LittleLaw ll;
  const int node = t.endpoints()[0];
  double link_ns = 0, ser_ns = 0;
  for (int p = 0; p < t.node(node).ports; ++p) {
    if (!is_nvlink(t, t.peer({node, p}).node)) continue;  // a cluster's GPU's adapter
    const auto& l = t.links()[t.link_at({node, p})];
    ll.b_in_GBps += l.bw_GBps;
    link_ns = std::max(link_ns, l.latency_ns);
    ser_ns = std::max(ser_ns, max_packet_bytes / l.bw_GBps);
  }
  const int n = static_cast<int>(t.endpoints().size());
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) ll.d_max = std::max(ll.d_max, t.hops(a, b) - 1);
  ll.l_hop_ns = switch_latency_ns + link_ns + ser_ns;
  ll.l_gpu_ns = (gc.mem_latency_cycles + gc.mem_jitter_cycles / 2.0) / gc.clock_ghz;
  for (int s : t.switches()) ll.switch_ports += t.node(s).ports;
  ll.access_ports = t.node(node).ports;
  ll.gpus = n;
  return ll;
}

LittleLaw flow_little_law(const topo::Topology& t, Config& cfg, const PlatformDefaults& d, const flow::LinkFormat& gpu) {
  const uint32_t max_packet = net::PacketFormat{gpu.header, gpu.flit, gpu.max_payload}.wire_bytes(gpu.max_payload);
  return little_law_of(t, cfg.get(credit_switch::kSwitchLatency, d.switch_latency_ns), max_packet, gpu_memory(cfg, d));
}

int default_waves(const topo::Topology& t, bool push, bool pull) {
  const bool fattree = collectives::is_fattree2l(t);
  return push ? (fattree ? 64 : 16) : pull ? (fattree ? 16 : 4) : 0;
}

// Read without declaring: copy_waves declares both with the run's defaults.
uint64_t push_window_bytes(Config& cfg, const topo::Topology& t) {
  const auto given = [&cfg](const auto& p, auto otherwise) { return cfg.has_override(p) ? cfg.get(p) : otherwise; };
  return static_cast<uint64_t>(given(gpu::kWaves, default_waves(t, true, false))) *
         given(gpu::kWaveBytes, gpu::kWaveBytes.default_value());
}

uint32_t table_by_rule(const LittleLaw& ll, const PlatformDefaults& d, uint32_t entry_bytes, uint64_t push_window) {
  double c = 0;
  if (d.push_tables && ll.switch_ports > 0)
    c = std::max(ll.push_per_port(), static_cast<double>(push_window) / ll.switch_ports);
  if (d.pull_tables && ll.gpus > 1) c = std::max(c, ll.pull_per_port(ll.gpus));
  return static_cast<uint32_t>(
      std::min<double>(std::ceil(c / entry_bytes) * entry_bytes, nvswitch::kTableBytes.range().hi()));
}

TableBytes table_bytes_of(const topo::Topology& t, Config& cfg, const PlatformDefaults& d,
                          const std::function<uint32_t()>& by_rule, uint32_t entry_bytes) {
  auto check = [&](const std::string& key, uint32_t b) {
    if (b != 0 && b < entry_bytes)
      throw UserError(key + " must hold at least one " + std::to_string(entry_bytes) +
                      "-byte entry, or be 0 for no table; " + std::to_string(b) + " is too small");
    return b;
  };
  auto resolve = [&](uint32_t b) { return b == nvswitch::kTableAuto ? by_rule() : b; };
  TableBytes out;
  out.all = d.tables ? resolve(cfg.get(nvswitch::kTableBytes, d.table_bytes ? d.table_bytes : by_rule())) : 0;
  check("switch.reduction_table.bytes", out.all);
  out.port.resize(t.nodes().size());
  for (int s : t.switches()) {
    if (!is_nvlink(t, s)) continue;
    const auto& node = t.node(s);
    for (int p = 0; p < node.ports; ++p) {
      const std::string port = node.name + ".port" + std::to_string(p);
      const uint32_t b =
          d.tables ? check(port + ".reduction_table.bytes", resolve(cfg.instance(port, nvswitch::kTableBytes, out.all)))
                   : 0;
      out.port[static_cast<size_t>(s)].push_back(b);
      out.total += b / entry_bytes * entry_bytes;
    }
  }
  return out;
}

// NVSwitch 2 (A100) has neither reduction nor multicast: NVLink SHARP came
// with NVSwitch 3 (NVIDIA H100 Tensor Core GPU Architecture whitepaper,
// "NVLink Switch System"), and NCCL runs NVLS only from Hopper (search.cc).
void print_switches_what_if(std::ostream& os, const topo::Topology& t, const std::string& algorithm) {
  if (t.family != topo::Topology::kHgxA100) return;
  os << "# what-if: hgx-a100's NVSwitches (2nd generation) neither reduce nor multicast; " << algorithm
     << " here gives them the reduction and multicast tables of NVSwitch 3 (NVLink SHARP, Hopper) and Klenk's\n";
}

// The Little's-law table sizes of Klenk Eq. (1) and (2) for this platform,
// beside the configured size, so a sensitivity sweep can be read against them.
bool print_table_sizing(std::ostream& os, const LittleLaw& ll, uint32_t table_bytes, bool pull, int p,
                        uint64_t push_window) {
  const std::ios::fmtflags flags = os.flags();
  const std::streamsize precision = os.precision();
  os << std::fixed << std::setprecision(0) << "# table sizing (Little's law; B_in " << ll.b_in_GBps << " GB/s, d_max "
     << count_of(ll.d_max, "switch", "switches") << ", L_hop " << std::setprecision(1) << ll.l_hop_ns << " ns, L_GPU "
     << ll.l_gpu_ns << " ns): ";
  const double per_port = pull ? ll.pull_per_port(p) : ll.push_per_port();
  if (pull) {
    const double c = collectives::pull_table_bytes(ll.b_in_GBps, p, ll.d_max, ll.l_hop_ns, ll.l_gpu_ns);
    os << std::setprecision(0) << "Eq. (1) pull C_min = " << c << " B per GPU = " << per_port << " B per access port";
  } else {
    const double c = collectives::push_table_bytes(ll.b_in_GBps, ll.d_max, ll.l_hop_ns);
    os << std::setprecision(0) << "Eq. (2) push C_min = " << c << " B = " << per_port << " B per port over "
       << ll.switch_ports << " ports";
  }
  os << "; configured " << table_bytes << " B per port";
  const double window_per_port = ll.switch_ports ? static_cast<double>(push_window) / ll.switch_ports : 0;
  if (!pull && window_per_port > per_port && table_bytes >= window_per_port)
    os << ", which holds push's waves (" << push_window << " B per GPU in flight; Klenk §IV-F1)";
  os << "\n";
  const bool below = table_bytes < std::round(per_port);
  if (below)
    os << "# the reduction table is below C_min: the switches cannot hold what is in flight at full bandwidth (Klenk "
          "§VI-C); -c switch.reduction_table.bytes=auto sizes it\n";
  os.flags(flags);
  os.precision(precision);
  return below;
}

credit_switch::SwitchWiring switch_wiring(const topo::Topology& t_, int s) {
  const auto& node = t_.node(s);
  credit_switch::SwitchWiring w;
  w.index = node.index;
  for (size_t d = 0; d < t_.endpoints().size(); ++d) {
    w.route.push_back(static_cast<int16_t>(t_.route(s, static_cast<int>(d))));
    w.routes_first.push_back(static_cast<uint32_t>(w.routes.size()));
    for (int16_t port : t_.routes(s, static_cast<int>(d))) w.routes.push_back(port);
  }
  w.routes_first.push_back(static_cast<uint32_t>(w.routes.size()));
  for (size_t k = 0; k < t_.switches().size(); ++k) {
    w.route_to_switch_first.push_back(static_cast<uint32_t>(w.route_to_switch.size()));
    for (int16_t port : t_.routes_to_switch(s, static_cast<int>(k))) w.route_to_switch.push_back(port);
  }
  w.route_to_switch_first.push_back(static_cast<uint32_t>(w.route_to_switch.size()));
  for (int p = 0; p < node.ports; ++p) {
    const auto& peer = t_.node(t_.peer({s, p}).node);
    w.port_endpoint.push_back(peer.kind == NodeKind::Endpoint ? peer.index : -1);
  }
  // VC per hop: only torus, mesh and BiGraph change it (Topology::vc_policy);
  // elsewhere every packet stays on its class's first VC.
  if (t_.vc_policy != topo::VcPolicy::None)
    for (int i = 0; i < node.ports; ++i)
      for (int o = 0; o < node.ports; ++o) w.vc_rule.push_back(t_.vc_rule(s, i, o));
  return w;
}

std::unique_ptr<net::Block> GpuFabric::make_switch(int s, net::PacketPool& pool) const {
  const auto& node = t_.node(s);
  credit_switch::SwitchConfig c = sw_;
  c.latency = sc_time(latency_ns_[s], sc_core::SC_NS);
  c.in_buffer_bytes = *std::max_element(in_bytes_[s].begin(), in_bytes_[s].end());
  c.out_queue_bytes = *std::max_element(out_bytes_[s].begin(), out_bytes_[s].end());
  if (is_plain_switch(t_, s)) {
    auto sw = std::make_unique<credit_switch::CreditSwitch>(node.name.c_str(), node.ports, switch_wiring(t_, s), c, pool);
    for (int p = 0; p < node.ports; ++p) sw->size_port(p, in_bytes_[s][p], out_bytes_[s][p]);
    return sw;
  }
  auto sw = std::make_unique<nvswitch::NvSwitch>(node.name.c_str(), node.ports, switch_wiring(t_, s), c, tables_, pool,
                                                 multicast_.get());
  for (int p = 0; p < node.ports; ++p) {
    sw->size_port(p, in_bytes_[s][p], out_bytes_[s][p]);
    if (table_bytes_[s][p] != tables_.table_bytes) sw->set_table_bytes(p, table_bytes_[s][p]);
  }
  return sw;
}

std::unique_ptr<net::Block> GpuFabric::make_gpu(int e, net::PacketPool& pool) const {
  const auto& node = t_.node(e);
  gpu::GpuConfig c = gc_;
  c.rx_buffer_bytes = in_bytes_[e][0];
  // Each endpoint carries a schedule-table NIC (MultiTree §IV-A, Fig. 6) as gpuN.nic.
  return std::make_unique<gpu::Gpu>(node.name.c_str(), node.index, node.ports, c, pool,
                                    [](gpu::Gpu& g) { return std::make_unique<nic::Nic>("nic", g); });
}

namespace {
// What flows see of the GPU fabric (flow_machine): its packets, each
// switch's latency and spreading, the switches that hold push homes
// (the copy engines' pushes reduce there), and the NVSwitches' tables where
// the algorithm reads them (NVLS's reducing reads take their entries), one
// entry per packet's payload.
flow::LinkFormat gpu_fabric_flows(const topo::Topology& t, const std::vector<int>& nodes, Config& cfg,
                                  const PlatformDefaults& d, flow::FlowMachine& m) {
  flow::LinkFormat gpu;
  gpu.header = cfg.get(net::kHeaderBytes);
  gpu.flit = cfg.get(net::kFlitBytes);
  gpu.max_payload = cfg.get(net::kMaxPayloadBytes, d.max_payload_bytes);
  const double sw_ns = cfg.get(credit_switch::kSwitchLatency, d.switch_latency_ns);
  const bool spreads =
      credit_switch::parse_spread(cfg.get(credit_switch::kSwitchSpread, d.spread)) != credit_switch::Spread::Destination;
  for (const int k : nodes) {
    if (t.node(k).kind == NodeKind::Endpoint) continue;
    m.node_ns[static_cast<size_t>(k)] = sw_ns;
    m.spreads[static_cast<size_t>(k)] = spreads;
    m.aggregates[static_cast<size_t>(k)] = holds_homes(t, k);
  }
  if (d.tables) {
    m.table_entry_bytes = gpu.max_payload;
    TableBytes tables = table_bytes_of(
        t, cfg, d,
        [&] { return table_by_rule(flow_little_law(t, cfg, d, gpu), d, gpu.max_payload, push_window_bytes(cfg, t)); },
        gpu.max_payload);
    m.table_bytes = std::move(tables.port);
    m.table_bytes_all = tables.all;
  }
  return gpu;
}
}  // namespace

void register_nvlink_fabric() {
  register_fabric(
      GpuFabric::kName,
      [](const topo::Topology& t, Config& cfg, uint64_t seed, const PlatformDefaults& d) {
        return std::make_unique<GpuFabric>(t, cfg, seed, d);
      },
      gpu_fabric_flows);
  auto sw = [](const topo::Topology&, int node, Fabric& f, net::PacketPool& pool) {
    return dynamic_cast<GpuFabric&>(f).make_switch(node, pool);
  };
  auto gpu = [](const topo::Topology&, int node, Fabric& f, net::PacketPool& pool) {
    return dynamic_cast<GpuFabric&>(f).make_gpu(node, pool);
  };
  register_node_kind(topo::kinds::kGpu, GpuFabric::kName, NodeKind::Endpoint, gpu);
  for (const char* kind : {topo::kinds::kNvSwitch, topo::kinds::kRouter, topo::kinds::kNvLinkBridge,
                           topo::kinds::kPcieSwitch, topo::kinds::kCpuSocket, topo::kinds::kNetworkSwitch})
    register_node_kind(kind, GpuFabric::kName, NodeKind::Switch, sw);
}

}  // namespace incsim::platforms
