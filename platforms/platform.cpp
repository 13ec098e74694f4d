#include "platform.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "collectives/bounds.h"
#include "core/error.h"
#include "core/yaml_file.h"
#include "topology/dgx1.h"
#include "topology/direct_networks.h"

namespace incsim::platforms {

using sc_core::sc_time;
using topo::NodeKind;

std::string builtin_platforms() { return "dgx2, dgx1v, dgx1p, fattree2l, star, torus, mesh, fattree, bigraph"; }

bool is_dgx1_platform(const std::string& platform) { return platform == "dgx1v" || platform == "dgx1p"; }

bool is_dgx1(const topo::Topology& t) { return is_dgx1_platform(t.family); }

bool is_multitree_platform(const topo::Topology& t) { return t.family == topo::Topology::kMultiTree; }

namespace {
// MultiTree Table III: 1 GHz routers. The paper models them in BookSim and
// gives no pipeline depth; BookSim's default input-queued router takes one
// cycle each for routing, VC allocation, switch allocation and switch
// traversal (booksim_config.cpp: routing_delay, vc_alloc_delay,
// sw_alloc_delay, st_final_delay = 1), so 4 ns per hop.
constexpr double kMultiTreeRouterLatencyNs = 4.0;
constexpr uint32_t kMultiTreePayloadBytes = 256;  // MultiTree Table III: 256 B payload for the baselines
}  // namespace

PlatformDefaults platform_defaults(const topo::Topology& t) {
  PlatformDefaults d;
  if (is_multitree_platform(t)) {
    d.switch_latency_ns = kMultiTreeRouterLatencyNs;
    d.max_payload_bytes = kMultiTreePayloadBytes;
  }
  if (is_dgx1(t)) {
    // The NVLink "switches" of make_dgx1() are bridges standing for a wire,
    // and the PCIe link latencies already hold the PCIe switches' cut-through
    // (topology/dgx1.cpp): no switch latency of their own.
    d.switch_latency_ns = 0;
    // NVLink packets carry up to 16 data flits of 16 B after a header flit
    // (Foley and Danskin, "Ultra-Performance Pascal GPU and NVLink
    // Interconnect", IEEE Micro 2017).
    d.max_payload_bytes = 256;
  }
  return d;
}

namespace {
std::map<std::string, NodeModule>& node_kinds() {
  static std::map<std::string, NodeModule> kinds = {
      {topo::kinds::kGpu, NodeModule::Gpu},
      {topo::kinds::kNvSwitch, NodeModule::NvSwitch},
      {topo::kinds::kRouter, NodeModule::NvSwitch},
      {topo::kinds::kNvLinkBridge, NodeModule::NvSwitch},
      {topo::kinds::kPcieSwitch, NodeModule::NvSwitch},
      {topo::kinds::kCpuSocket, NodeModule::NvSwitch},
      {topo::kinds::kNetworkSwitch, NodeModule::NvSwitch},
      {topo::kinds::kEthernetSwitch, NodeModule::EthernetSwitch},
      {topo::kinds::kRoceHost, NodeModule::RoceNic},
      {topo::kinds::kFpgaAggregator, NodeModule::FpgaAggregator},
  };
  return kinds;
}
}  // namespace

void register_node_kind(const std::string& kind, NodeModule module) {
  if (kind.empty()) throw UserError("a node kind needs a name");
  node_kinds()[kind] = module;
}

NodeModule node_module(const std::string& kind) {
  const auto it = node_kinds().find(kind);
  if (it != node_kinds().end()) return it->second;
  std::string known;
  for (const auto& [name, module] : node_kinds()) known += (known.empty() ? "" : ", ") + name;
  throw UserError("unknown node kind '" + kind + "'; the builder elaborates " + known);
}

topo::Topology make_topology(const std::string& platform, int gpus, Config& cfg) {
  PlatformShape shape;
  shape.gpus = gpus;
  return make_topology(platform, shape, cfg);
}

namespace {
// A DGX-1's links (topology/dgx1.h holds the generations' own defaults).
const Param<double> kDgx1NvLinkGBps{
    "dgx1.nvlink_GBps", 0.0, Range::at_least(0.001).at_most(1e5).or_zero(),
    "one NVLink, each direction, GB/s; 0: the generation's own (20 on dgx1p, NVLink 1, P100 whitepaper; 25 on "
    "dgx1v, NVLink 2, V100 whitepaper; Blink Fig. 1)"};
const Param<double> kDgx1NvLinkLatency{
    "dgx1.nvlink_latency_ns", topo::Dgx1Links(0).nvlink_latency_ns, Range::at_least(0).at_most(1e9),
    "GPU to GPU over one NVLink, ns (MultiTree Table III's link latency as a stand-in: Blink gives none)"};
const Param<double> kDgx1PcieGBps{
    "dgx1.pcie_GBps", topo::Dgx1Links(0).pcie_GBps, Range::at_least(0.001).at_most(1e5),
    "PCIe 3.0 x16 link, each direction, GB/s (8 GT/s x 16 lanes x 128/130; Blink A.3 measures 8-12)"};
const Param<double> kDgx1PcieLatency{
    "dgx1.pcie_latency_ns", topo::Dgx1Links(0).pcie_latency_ns, Range::at_least(0).at_most(1e9),
    "each PCIe link, ns, switch cut-through included (PLX PEX 8700 order; an estimate)"};
const Param<double> kDgx1SocketGBps{
    "dgx1.socket_GBps", topo::Dgx1Links(0).socket_GBps, Range::at_least(0.001).at_most(1e5),
    "inter-socket link, each direction, GB/s (2 QPI links at 9.6 GT/s, DGX-1's Xeon E5-2698 v4)"};
const Param<double> kDgx1SocketLatency{"dgx1.socket_latency_ns", topo::Dgx1Links(0).socket_latency_ns,
                                       Range::at_least(0).at_most(1e9), "inter-socket link, ns (an estimate)"};
// Blink §5.3: "inter-server AllReduce throughput (40Gbps)"; Fig. 19b varies it.
const Param<double> kDgx1NetGbps{
    "dgx1.net_Gbps", 40.0, Range::at_least(0.01).at_most(8e5),
    "network between DGX-1 servers (--gpus 0,1,2/0,1,2,3,4), each direction, Gbit/s (Blink §5.3: 40 Gbps cloud "
    "interconnect; Fig. 19b: up to 400)"};
const Param<double> kDgx1NetLatency{
    "dgx1.net_latency_ns", 1500.0, Range::at_least(0).at_most(1e9),
    "one server's NIC to another's through the network switch, ns (an estimate of RDMA NIC-to-NIC latency; Blink "
    "gives none)"};

// A DGX-1 with the allocation the command line asks for: a list of GPUs, or
// the first N (all 8 without --gpus).
topo::Topology make_dgx1_topology(const std::string& platform, const PlatformShape& shape, Config& cfg) {
  const topo::Dgx1Gen gen = topo::parse_dgx1_gen(platform);
  if (shape.dims || shape.nodes)
    throw UserError("the " + platform + " platform takes --gpus (a count or a list such as 1,4,5,6), not --dims or --nodes");
  topo::Dgx1Links l(cfg.get(kDgx1NvLinkGBps));
  l.nvlink_latency_ns = cfg.get(kDgx1NvLinkLatency);
  l.pcie_GBps = cfg.get(kDgx1PcieGBps);
  l.pcie_latency_ns = cfg.get(kDgx1PcieLatency);
  l.socket_GBps = cfg.get(kDgx1SocketGBps);
  l.socket_latency_ns = cfg.get(kDgx1SocketLatency);
  const double gbps = cfg.get(kDgx1NetGbps);
  const double lat = cfg.get(kDgx1NetLatency);
  if (shape.gpu_servers.size() > 1) return topo::make_dgx1_cluster(gen, shape.gpu_servers, gbps / 8, lat, l);
  if (cfg.has_override(kDgx1NetGbps) || cfg.has_override(kDgx1NetLatency))
    throw UserError("dgx1.net_Gbps and dgx1.net_latency_ns apply to several servers, given as --gpus 0,1,2/0,1,2,3,4");
  std::vector<int> gpus = shape.gpu_list;
  if (gpus.empty()) {
    const int n = shape.gpus ? shape.gpus : 8;
    if (n < 2 || n > 8) throw UserError("a DGX-1 has 8 GPUs; --gpus must be between 2 and 8, not " + std::to_string(n));
    for (int g = 0; g < n; ++g) gpus.push_back(g);
  }
  return topo::make_dgx1(gen, gpus, l);
}
}  // namespace

bool is_platform_file(const std::string& platform) {
  auto ends = [&](const std::string& e) {
    return platform.size() > e.size() && platform.compare(platform.size() - e.size(), e.size(), e) == 0;
  };
  return ends(".yaml") || ends(".yml");
}

std::string file_family(const std::string& path) {
  const YAML::Node root = load_yaml_file(path, "platform file");
  const YAML::Node family = root.IsMap() ? root["family"] : YAML::Node();
  return family && family.IsScalar() ? family.Scalar() : topo::Topology::kKlenk;
}

topo::Topology make_topology(const std::string& platform, const PlatformShape& shape, Config& cfg) {
  if (!shape.gpu_list.empty() && !is_dgx1_platform(platform))
    throw UserError("--gpus takes a list of GPUs only on the dgx1v and dgx1p platforms; on " + platform +
                    " give a count");
  if (is_dgx1_platform(platform)) return make_dgx1_topology(platform, shape, cfg);
  // link.* with the family's defaults: a YAML file's, or the built-in's.
  auto link_defaults = [&cfg](const std::string& family) {
    if (family == topo::Topology::kNetReduce || family == topo::Topology::kNetReduceMultiGpu)
      return topo::LinkDefaults{cfg.get(kLinkGBps, kEthernetLinkGBps), cfg.get(kLinkLatency, kEthernetLatencyNs)};
    const bool multitree = family == topo::Topology::kMultiTree;
    const double bw = cfg.get(kLinkGBps, multitree ? topo::kMultiTreeLinkGBps : kLinkGBps.default_value());
    const double lat = cfg.get(kLinkLatency, multitree ? topo::kMultiTreeLinkLatencyNs : kLinkLatency.default_value());
    return topo::LinkDefaults{bw, lat};
  };
  const int gpus = shape.gpus;
  const bool dims = shape.dims;
  const std::string dims_text = std::to_string(shape.dims_x) + "x" + std::to_string(shape.dims_y);
  if (dims && platform != "torus" && platform != "mesh" && platform != "bigraph")
    throw UserError("--dims applies to the torus, mesh and bigraph platforms, not to " + platform +
                    (platform == "fattree" ? "; give --nodes instead" : ""));
  if (shape.nodes != 0 && platform != "fattree")
    throw UserError("--nodes applies to the fattree platform, not to " + platform +
                    (platform == "torus" || platform == "mesh" || platform == "bigraph" ? "; give --dims instead"
                     : platform == "star" || platform == "fattree2l"                  ? "; give --gpus instead"
                                                                                      : ""));
  if (is_platform_file(platform)) {
    return topo::load_yaml(platform, link_defaults);
  }
  const bool multitree = platform == "torus" || platform == "mesh" || platform == "fattree" || platform == "bigraph";
  const auto [bw, lat] = link_defaults(multitree ? topo::Topology::kMultiTree : topo::Topology::kKlenk);
  if (platform == "dgx2") {
    if (gpus != 0 && (gpus < 1 || gpus > 16))
      throw UserError("the dgx2 platform has 16 GPUs; --gpus must be between 1 and 16, not " +
                      std::to_string(gpus));
    return topo::make_dgx2(bw, lat);
  }
  if (platform == "fattree2l") {
    const int n = gpus == 0 ? 128 : gpus;
    if (n < 8 || n > 128 || n % 8 != 0)
      throw UserError("the fattree2l platform builds 8 to 128 GPUs in leaf groups of 8; --gpus " +
                      std::to_string(n) + " is not a multiple of 8 in that range");
    return topo::make_fattree2l(n / 8, bw, lat);
  }
  if (platform == "star") {
    const int n = gpus == 0 ? 8 : gpus;
    if (n < 1 || n > 4096)
      throw UserError("the star platform builds 1 to 4096 GPUs, not " + std::to_string(n));
    return topo::make_star(n, bw, lat);
  }
  if (platform == "torus" || platform == "mesh") {
    const int kx = dims ? shape.dims_x : 4, ky = dims ? shape.dims_y : 4;
    if (kx < 2 || ky < 2 || kx > 16 || ky > 16)
      throw UserError("a " + platform + " of " + dims_text + " is not built: --dims takes 2 to 16 routers per dimension, 2x2 up to 16x16");
    return platform == "torus" ? topo::make_torus(kx, ky, bw, lat) : topo::make_mesh(kx, ky, bw, lat);
  }
  if (platform == "fattree") {
    // k-ary 2-level: k nodes per leaf switch, k leaves, k spines (MultiTree §VI-A).
    const int n = shape.nodes ? shape.nodes : 16;
    int k = 2;
    while (k * k < n) ++k;
    if (k * k != n || k > 16)
      throw UserError("a k-ary 2-level fat tree has k x k nodes: --nodes takes 16 (4-ary), 64 (8-ary) or another "
                      "square from 4 to 256, not " + std::to_string(n));
    return topo::make_fattree(n, k, bw, lat);
  }
  if (platform == "bigraph") {
    const int per_switch = dims ? shape.dims_x : 4, switches = dims ? shape.dims_y : 8;
    return topo::make_bigraph(per_switch, switches, bw, lat);
  }
  throw UserError("unknown platform '" + platform + "'; choose one of " + builtin_platforms() +
                  ", rack, spineleaf, multigpu (Ethernet, NetReduce), or give a YAML "
                  "platform file");
}

namespace {
const Param<std::string> kHomePorts{
    "fabric.home_ports", "interleave", Range::none(),
    "how push blocks are spread over home ports (Klenk §IV-C: by hashing): interleave, consecutive 128 B blocks "
    "on consecutive switches then ports, as address-sliced caches do; or hash, a mixing hash of the block address"};
}  // namespace

Platform::Platform(const topo::Topology& t, Config& cfg, uint64_t seed, PlatformDefaults d)
    : topo_(t) {
  const std::string homes = cfg.get(kHomePorts);
  if (homes != "interleave" && homes != "hash")
    throw UserError("fabric.home_ports must be interleave or hash, not '" + homes + "'");
  fabric_ = std::make_unique<topo::MulticastFabric>(
      topo_, homes == "hash" ? topo::HomeMapping::Hash : topo::HomeMapping::Interleave);
  net::PacketFormat fmt;
  fmt.header_bytes = cfg.get(net::kHeaderBytes);
  fmt.flit_bytes = cfg.get(net::kFlitBytes);
  fmt.max_payload_bytes = cfg.get(net::kMaxPayloadBytes, d.max_payload_bytes);
  if (fmt.max_payload_bytes % 4 != 0)
    throw UserError("net.max_payload_bytes must be a multiple of 4, not " + std::to_string(fmt.max_payload_bytes));
  pool_ = std::make_unique<net::PacketPool>(fmt);
  const uint32_t max_packet = fmt.wire_bytes(fmt.max_payload_bytes);

  nvswitch::SwitchConfig sw;
  const double sw_latency_ns = cfg.get(nvswitch::kSwitchLatency, d.switch_latency_ns);
  sw.latency = sc_time(sw_latency_ns, sc_core::SC_NS);
  sw.speedup = cfg.get(nvswitch::kSwitchSpeedup);
  const uint32_t in_buf = cfg.get(nvswitch::kSwitchInBuffer);
  const uint32_t out_q = cfg.get(nvswitch::kSwitchOutQueue);
  sw.table_bytes = cfg.get(nvswitch::kTableBytes, d.table_bytes);
  const double timeout_ns = cfg.get(nvswitch::kTableTimeout);
  const std::string eviction = cfg.get(nvswitch::kTableEviction);
  sw.entry_bytes = fmt.max_payload_bytes;
  sw.eviction = nvswitch::make_eviction_policy(eviction);
  auto check_table = [&](const std::string& key, uint32_t b) {
    if (b != 0 && b < sw.entry_bytes)
      throw UserError(key + " must hold at least one " + std::to_string(sw.entry_bytes) +
                      "-byte entry, or be 0 for no table; " + std::to_string(b) + " is too small");
    return b;
  };
  check_table("switch.reduction_table.bytes", sw.table_bytes);
  // A switch's or a port's own key may override it (sw3.reduction_table.bytes, sw3.port5.reduction_table.bytes).
  auto table_bytes = [&](const std::string& port) {
    return check_table(port + ".reduction_table.bytes",
                       cfg.instance(port, nvswitch::kTableBytes, sw.table_bytes));
  };

  gpu::GpuConfig gc;
  gc.clock_ghz = cfg.get(gpu::kGpuClock);
  gc.mem_latency_cycles = cfg.get(gpu::kGpuMemLatency);
  gc.mem_jitter_cycles = cfg.get(gpu::kGpuMemJitter);
  const uint32_t rx_buf = cfg.get(gpu::kGpuRxBuffer);
  gc.max_responses = cfg.get(gpu::kGpuMaxResponses);
  gc.seed = seed;
  gpu_config_ = gc;
  // Little's law quantities (Klenk Eq. (1), (2)).
  {
    const int node = topo_.endpoints()[0];
    double link_ns = 0, ser_ns = 0;
    for (int p = 0; p < topo_.node(node).ports; ++p) {
      const auto& l = topo_.links()[topo_.link_at({node, p})];
      little_law_.b_in_GBps += l.bw_GBps;
      link_ns = std::max(link_ns, l.latency_ns);
      ser_ns = std::max(ser_ns, fmt.wire_bytes(fmt.max_payload_bytes) / l.bw_GBps);
    }
    const int n = static_cast<int>(topo_.endpoints().size());
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) little_law_.d_max = std::max(little_law_.d_max, topo_.hops(a, b) - 1);
    little_law_.l_hop_ns = sw_latency_ns + link_ns + ser_ns;
    little_law_.l_gpu_ns = (gc.mem_latency_cycles + gc.mem_jitter_cycles / 2.0) / gc.clock_ghz;
  }
  sw.table_timeout = timeout_ns > 0 ? sc_time(timeout_ns, sc_core::SC_NS)
                                    : sc_time(std::max(1, little_law_.d_max) * little_law_.l_hop_ns, sc_core::SC_NS);
  switch_config_ = sw;

  // Every node's kind must be one this builder makes, before the first module is built.
  for (const auto& node : topo_.nodes()) {
    const NodeModule m = node_module(node.block);
    if (m != (node.kind == NodeKind::Switch ? NodeModule::NvSwitch : NodeModule::Gpu))
      throw UserError("node " + node.name + " is a " + node.block + ", which " +
                      (m == NodeModule::Gpu || m == NodeModule::NvSwitch
                           ? std::string(node.kind == NodeKind::Switch ? "is an endpoint, not a switch"
                                                                       : "is a switch, not an endpoint")
                           : "runs on the Ethernet platforms (rack, spineleaf, multigpu), not in a GPU fabric"));
  }
  // Elaborate: a module per node.
  std::vector<int> module_of(topo_.nodes().size(), -1);
  double max_bw = 0, max_link_ns = 0;
  for (const auto& l : topo_.links()) {
    max_bw = std::max(max_bw, l.bw_GBps);
    max_link_ns = std::max(max_link_ns, l.latency_ns);
  }
  const double max_mem_ns = (gc.mem_latency_cycles + gc.mem_jitter_cycles) / gc.clock_ghz;
  longest_round_trip_ = sc_time(2 * max_link_ns + max_mem_ns, sc_core::SC_NS) + sw.latency;
  if (gc.max_responses == 0) gc.max_responses = static_cast<uint32_t>(max_mem_ns * max_bw / fmt.header_bytes) + 2;
  // Buffers cover a link's credit round trip: a switch's per port, from the
  // link at that port (a torus router's node link is 4x faster than its
  // network links, and its buffer 4x larger); a GPU's the largest over its
  // links (one gpu.rx_buffer_bytes for all its ports).
  auto buffer_for_port = [&](topo::PortRef p, sc_time holding) {
    const auto& k = topo_.links()[topo_.link_at(p)];
    return std::max(net::round_trip_bytes(k.bw_GBps, sc_time(k.latency_ns, sc_core::SC_NS), holding, max_packet),
                    max_packet);
  };
  auto buffer_for = [&](int node, sc_time holding) {
    uint32_t b = 0;
    for (int p = 0; p < topo_.node(node).ports; ++p) b = std::max(b, buffer_for_port({node, p}, holding));
    return b;
  };
  // What each node's input buffers hold, per port and VC: its peers' credits.
  std::vector<std::vector<uint32_t>> in_bytes(topo_.nodes().size());
  for (int s : topo_.switches())
    for (int p = 0; p < topo_.node(s).ports; ++p)
      in_bytes[s].push_back(in_buf ? in_buf : buffer_for_port({s, p}, sw.latency));
  for (int e : topo_.endpoints())
    in_bytes[e].assign(topo_.node(e).ports, rx_buf ? rx_buf : buffer_for(e, sc_core::SC_ZERO_TIME));
  for (int s : topo_.switches()) {
    const auto& node = topo_.node(s);
    nvswitch::SwitchWiring w;
    w.index = node.index;
    for (size_t d = 0; d < topo_.endpoints().size(); ++d) w.route.push_back(static_cast<int16_t>(topo_.route(s, static_cast<int>(d))));
    for (size_t k = 0; k < topo_.switches().size(); ++k) {
      w.route_to_switch_first.push_back(static_cast<uint32_t>(w.route_to_switch.size()));
      for (int16_t port : topo_.routes_to_switch(s, static_cast<int>(k))) w.route_to_switch.push_back(port);
    }
    w.route_to_switch_first.push_back(static_cast<uint32_t>(w.route_to_switch.size()));
    for (int p = 0; p < node.ports; ++p) {
      const auto& peer = topo_.node(topo_.peer({s, p}).node);
      w.port_endpoint.push_back(peer.kind == NodeKind::Endpoint ? peer.index : -1);
    }
    // VC per hop: only torus, mesh and BiGraph change it (Topology::vc_policy);
    // elsewhere every packet stays on its class's first VC.
    if (topo_.vc_policy != topo::VcPolicy::None)
      for (int i = 0; i < node.ports; ++i)
        for (int o = 0; o < node.ports; ++o) w.vc_rule.push_back(topo_.vc_rule(s, i, o));
    nvswitch::SwitchConfig c = sw;
    const double latency_ns = cfg.instance(node.name, nvswitch::kSwitchLatency, sw_latency_ns);
    c.latency = sc_time(latency_ns, sc_core::SC_NS);
    std::vector<uint32_t> out_bytes;
    for (int p = 0; p < node.ports; ++p) out_bytes.push_back(out_q ? out_q : buffer_for_port({s, p}, sw.latency));
    c.in_buffer_bytes = *std::max_element(in_bytes[s].begin(), in_bytes[s].end());
    c.out_queue_bytes = *std::max_element(out_bytes.begin(), out_bytes.end());
    if (*std::min_element(in_bytes[s].begin(), in_bytes[s].end()) < max_packet ||
        *std::min_element(out_bytes.begin(), out_bytes.end()) < max_packet)
      throw UserError("switch buffers must hold at least one " + std::to_string(max_packet) + "-byte packet");
    module_of[s] = static_cast<int>(switch_modules_.size());
    switch_modules_.push_back(
        std::make_unique<nvswitch::NvSwitch>(node.name.c_str(), node.ports, std::move(w), c, *pool_, fabric_.get()));
    for (int p = 0; p < node.ports; ++p) {
      switch_modules_.back()->size_port(p, in_bytes[s][p], out_bytes[p]);
      const uint32_t b = table_bytes(node.name + ".port" + std::to_string(p));
      if (b != sw.table_bytes) switch_modules_.back()->set_table_bytes(p, b);
      table_bytes_ += b / sw.entry_bytes * sw.entry_bytes;
    }
  }
  for (int e : topo_.endpoints()) {
    const auto& node = topo_.node(e);
    gpu::GpuConfig c = gc;
    c.rx_buffer_bytes = in_bytes[e][0];
    if (c.rx_buffer_bytes < max_packet)
      throw UserError("gpu.rx_buffer_bytes must hold at least one " + std::to_string(max_packet) + "-byte packet");
    module_of[e] = static_cast<int>(gpu_modules_.size());
    // Each endpoint carries a schedule-table NIC (MultiTree §IV-A, Fig. 6) as gpuN.nic.
    gpu_modules_.push_back(std::make_unique<gpu::Gpu>(node.name.c_str(), node.index, node.ports, c, *pool_,
                                                      [this](gpu::Gpu& g) { nics_.push_back(std::make_unique<nic::Nic>("nic", g)); }));
    gpus_.push_back(gpu_modules_.back().get());
  }
  // Bind each link as two one-way channels.
  auto out_of = [&](topo::PortRef p) -> net::OutPort& {
    if (topo_.node(p.node).kind == NodeKind::Switch) return switch_modules_[module_of[p.node]]->out(p.port);
    return gpu_modules_[module_of[p.node]]->out(p.port);
  };
  auto in_of = [&](topo::PortRef p) -> net::InPort& {
    if (topo_.node(p.node).kind == NodeKind::Switch) return switch_modules_[module_of[p.node]]->in(p.port);
    return gpu_modules_[module_of[p.node]]->in(p.port);
  };
  auto configure = [&](topo::PortRef from, topo::PortRef to, const topo::Link& l) {
    const sc_time lat(l.latency_ns, sc_core::SC_NS);
    if (topo_.node(from.node).kind == NodeKind::Switch)
      switch_modules_[module_of[from.node]]->configure_port(from.port, l.bw_GBps, lat, in_bytes[to.node][to.port]);
    else
      gpu_modules_[module_of[from.node]]->configure_port(from.port, l.bw_GBps, lat, in_bytes[to.node][to.port]);
    out_of(from).socket.bind(in_of(to).socket);
    link_ends_.push_back({topo_.port_name(from), topo_.port_name(to), &out_of(from)});
  };
  for (const auto& l : topo_.links()) {
    configure(l.a, l.b, l);
    configure(l.b, l.a, l);
  }
}

double Platform::endpoint_payload_GBps(int g, const std::vector<int>& peers, bool acked) const {
  const int node = topo_.endpoints()[g];
  double b = 0;
  for (int p = 0; p < topo_.node(node).ports; ++p) {
    bool useful = false;
    for (int d : peers) useful = useful || (d != g && topo_.port_reaches({node, p}, d));
    if (!useful) continue;
    b += collectives::payload_bandwidth_GBps(topo_.links()[topo_.link_at({node, p})].bw_GBps,
                                             format().max_payload_bytes, format().header_bytes,
                                             acked ? format().header_bytes : 0);
  }
  return b;
}

uint64_t Platform::total_table_bytes() const { return table_bytes_; }

Platform::TableTotals Platform::table_totals() const {
  TableTotals t;
  for (const auto& s : switch_modules_)
    for (int p = 0; p < s->num_ports(); ++p) {
      const auto& r = s->table(p);
      t.hits += r.hits;
      t.misses += r.misses;
      t.evictions += r.evictions;
      t.stalls += r.stalls;
      t.completions += r.completions;
    }
  return t;
}

std::pair<uint64_t, double> Platform::packet_latency() const {
  std::pair<uint64_t, double> r{0, 0.0};
  for (const auto& g : gpu_modules_) {
    r.first += g->packets_received();
    r.second += g->latency_sum_ns();
  }
  return r;
}

void Platform::trace(sc_core::sc_trace_file* tf) const {
  for (const auto& s : switch_modules_) s->trace(tf);
  for (const auto& g : gpu_modules_) g->trace(tf);
}

uint64_t Platform::report_held(std::ostream& os) const {
  uint64_t n = 0;
  for (const auto& s : switch_modules_) n += s->report_held(os);
  for (const auto& g : gpu_modules_) n += g->report_held(os);
  return n;
}

}  // namespace incsim::platforms
