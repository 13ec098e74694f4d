#include "platform.h"

#include <algorithm>
#include <array>
#include <filesystem>

#include "collectives/bounds.h"
#include "ethernet_fabric.h"
#include "core/error.h"
#include "core/nearest.h"
#include "core/process.h"
#include "core/yaml_file.h"
#include "topology/cluster.h"
#include "topology/dgx1.h"
#include "topology/direct_networks.h"

namespace incsim::platforms {

using sc_core::sc_time;
using topo::NodeKind;

std::string builtin_platforms() {
  return "dgx2, dgx1v, dgx1p, fattree2l, star, torus, mesh, fattree, bigraph, hgx-a100, hgx-h100, hgx-b200, nvl72, "
         "cluster";
}

namespace {
// The built-in platforms a cluster's nodes may be: boards whose GPUs each get an adapter.
constexpr std::array<const char*, 5> kClusterNodes = {"hgx-a100", "hgx-h100", "hgx-b200", "nvl72", "dgx2"};
}  // namespace

std::string cluster_node_platforms() {
  std::string out;
  for (const char* n : kClusterNodes) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

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
  if (topo::is_nvlink_machine(t.family)) {
    // NCCL moves data with the SMs' stores, and an SM writes 128-byte cache
    // lines: Klenk §V, NVIDIA's simulation of NVSwitch machines, sends 128 B
    // behind a one-flit header and acks each write with one flit, 80% of a
    // link for a ring's data, which is what NCCL counts per link (topo.h:
    // SM80_NVLINK_BW 20.0 of NVLink3's 25 GB/s, SM90 20.6 of 25, SM100 40.1
    // of 50). NVLink's 256-byte packets (above) are the copy engines'.
    d.max_payload_bytes = 128;
    // Packets spread over a trunk's links (NVSwitch3 balances over them;
    // how is not public: per packet to the shortest queue, as InfiniBand's
    // adaptive routing does). NVL72 has no trunks (one link per GPU and
    // switch chip), so there it changes no row.
    d.spread = "adaptive";
    // Boost clocks: A100 SXM4 1410 MHz (NVIDIA A100 Tensor Core GPU
    // datasheet); H100 SXM5 1980 MHz (NVIDIA H100 Tensor Core GPU
    // datasheet). NVIDIA publishes no B200 clock; TechPowerUp's GPU Database
    // lists the B200 SXM's boost clock as 1837 MHz.
    d.gpu_clock_ghz = t.family == topo::Topology::kHgxA100   ? 1.41
                      : t.family == topo::Topology::kHgxH100 ? 1.98
                                                             : 1.837;
    // One ring per NVLink, so that every link carries one (ring.channels'
    // 12 counts two per DGX-2 link; 12 of H100's 18 would leave 6 idle).
    d.ring_channels = t.family == topo::Topology::kHgxA100 ? 12 : 18;
    // NCCL's Simple protocol step: its 4 MiB buffer over NCCL_STEPS = 8
    // (NCCL src/include/device.h); cores.chunk_bytes' 128 KiB leaves a
    // 25 GB/s link idle for the fence and flag of every chunk.
    d.cores_chunk_bytes = 512 * 1024;
    // NCCL picks its protocol by size (src/graph/tuning.cc), so small
    // messages on these machines are compared against LL and LL128, not
    // Simple (issue 21, part 6); a cluster of them inherits this.
    d.ring_protocol = "auto";
    // Against nccl-tests as its owners run it, NCCL's software costs count
    // (docs/hardware.md); the papers simulated their baselines without.
    d.nccl_launch = "process";
    d.nccl_slices = true;
  }
  // A cluster's rings leave each node through a different adapter per
  // channel (cluster_ring_program): on hgx-h100 nodes two per adapter, so
  // each carries an equal share (16, which use 16 of 18 NVLinks). NVL72
  // nodes keep their 18: 144 channels over 144 GPUs cost 11 GB and 4 minutes
  // of CPU at 1 MiB, and their rings then use 18 of a node's 72 adapters.
  if (const auto nodes = topo::cluster_nodes(t); !nodes.empty() && nodes[0].size() <= 8)
    d.ring_channels = 2 * static_cast<int>(nodes[0].size());
  return d;
}

PlatformDefaults platform_defaults(const topo::Topology& t, const std::vector<collectives::Needs>& needs) {
  PlatformDefaults d = platform_defaults(t);
  d.tables = false;
  for (const collectives::Needs& n : needs) {
    d.tables = d.tables || n.tables != collectives::TableRule::None;
    d.table_bytes = std::max(d.table_bytes, n.table_bytes);
    d.push_tables = d.push_tables || n.tables == collectives::TableRule::Push;
    d.pull_tables = d.pull_tables || n.tables == collectives::TableRule::Pull;
    // The switches reduce and multicast 128-byte blocks (Klenk §IV-D), also
    // on MultiTree's fat tree, whose own packets carry 256 B (Table III).
    if (n.block_packets) d.max_payload_bytes = std::min(d.max_payload_bytes, topo::MulticastFabric::kBlockBytes);
  }
  return d;
}

std::vector<collectives::Needs> needs_of(const topo::Topology& t, const std::vector<std::string>& algorithms,
                                         const std::string& collective) {
  collectives::Collective c = collectives::Collective::AllReduce;
  collectives::collective_of(collective, c);
  std::vector<collectives::Needs> needs;
  for (const std::string& name : algorithms)
    if (const collectives::Algorithm* a = collectives::find_algorithm(name, collectives::Family::GpuFabric))
      needs.push_back(a->needs(t, c));
  return needs;
}

collectives::Site site(const topo::Topology& t, const std::string& platform, collectives::Collective c,
                       std::vector<int> gpus, bool share, Config& cfg) {
  collectives::Site s{t, platform, c, std::move(gpus), share, -1, topo::cluster_nodes(t), 0, "simple", 0, 0, true, cfg};
  for (int sw : t.switches())
    if (is_plain_switch(t, sw)) {
      s.plain_switch = sw;
      break;
    }
  const PlatformDefaults d = platform_defaults(t);
  s.channels_default = d.ring_channels;
  s.protocol_default = d.ring_protocol;
  return s;
}

std::string default_compute(const std::string& platform, const std::string& node) {
  const std::string& gpu_platform = platform == "cluster" ? (node.empty() ? "hgx-h100" : node) : platform;
  // NetReduce §5.1: Testbed 1 (six machines: the rack, and its racks on
  // spine-leaf) has an RTX 2080 per machine, Testbed 2 (multigpu) V100s.
  if (gpu_platform == "rack" || gpu_platform == "spineleaf") return "rtx2080";
  if (gpu_platform == "hgx-a100") return "a100";
  if (gpu_platform == "hgx-h100") return "h100";
  return gpu_platform == "hgx-b200" || gpu_platform == "nvl72" ? "b200" : "v100";
}

topo::Topology make_topology(const std::string& platform, int gpus, Config& cfg) {
  PlatformShape shape;
  if (gpus) shape.gpus = gpus;
  return make_topology(platform, shape, cfg);
}

namespace {
// A torus or mesh node's link to its router. MultiTree §V-A: "we assume the
// network interface bandwidth matches the network bandwidth of the attached
// router in direct networks"; its authors' simulator runs the ring and the
// double binary tree on one interface of one link's bandwidth
// (torus44express.cfg) and injects and ejects in one cycle (BookSim).
const Param<int> kNodeInterfaces{
    "nic.interfaces", 0, Range::at_least(0).at_most(4),
    "network interfaces of a torus or mesh node, each one network link's bandwidth (link.bw_GBps); 0: as many as "
    "its router has network links, MultiTree §V-A (the figures' setting); 1: one, as the MultiTree authors' "
    "simulator runs the ring and the double binary tree (torus44express.cfg)"};
const Param<double> kNodeLatency{
    "nic.link_latency_ns", 0.0, Range::at_least(0).at_most(1e9),
    "wire latency of a torus or mesh node's link to its router, ns (default: link.latency_ns, MultiTree Table III "
    "gives no other; 1: the MultiTree authors' BookSim, which injects and ejects in one 1 GHz cycle)"};
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
    const int n = shape.gpus.value_or(8);
    if (n < 2 || n > 8) throw UserError("a DGX-1 has 8 GPUs; --gpus must be between 2 and 8, not " + std::to_string(n));
    for (int g = 0; g < n; ++g) gpus.push_back(g);
  }
  return topo::make_dgx1(gen, gpus, l);
}
}  // namespace

namespace {
// A cluster's links (docs/modern-machines.md, "Clusters").
// NVIDIA Quantum-2 QM9700/QM9790 datasheet: 64 NDR ports of 400 Gb/s (32 OSFP cages).
constexpr int kQuantum2Ports = 64;
// A DGX A100's network is a generation older: NVIDIA Quantum QM8700/QM8790
// datasheet, 40 HDR ports of 200 Gb/s (the DGX A100 SuperPOD reference
// architecture's switches; its scalable unit of 20 nodes fills a leaf's 20
// down-links); ConnectX-6 HDR adapters on PCIe 4.0 x16 (DGX A100 User Guide).
constexpr int kQuantumPorts = 40;
constexpr double kPcie5x16GBps = 63.0, kPcie4x16GBps = 31.5;  // 32 and 16 GT/s x 16 lanes x 128/130 / 8
constexpr double kNdrGbps = 400.0, kHdrGbps = 200.0;
const Param<double> kClusterPcieGBps{
    "cluster.pcie_GBps", kPcie5x16GBps, Range::at_least(0.001).at_most(1e5),
    "a GPU's PCIe link to its InfiniBand adapter, each direction, GB/s (PCIe 5.0 x16: 32 GT/s x 16 lanes x "
    "128/130; H100 SXM, B200 and ConnectX-7 are all Gen5 x16, NVIDIA datasheets; on hgx-a100 nodes 31.5, PCIe 4.0 "
    "x16, which A100 SXM4 and ConnectX-6 have)"};
const Param<double> kClusterPcieLatency{
    "cluster.pcie_latency_ns", 250.0, Range::at_least(0).at_most(1e9),
    "a GPU to its adapter over PCIe, ns, the PCIe switch between them included (a guess: DGX H100 puts a PCIe "
    "switch there; PCIe switches forward in the order of 100 ns)"};
const Param<double> kClusterNetGbps{
    "cluster.net_Gbps", kNdrGbps, Range::at_least(0.01).at_most(8e5),
    "each network link, each direction, Gbit/s (NDR InfiniBand or 400 GbE: ConnectX-7, Quantum-2 and Spectrum-4 "
    "ports, 400 Gb/s; DGX H100 and DGX B200: 8 adapters of 400 Gb/s; on hgx-a100 nodes 200, DGX A100's 8 "
    "ConnectX-6 HDR adapters)"};
const Param<double> kClusterNetLatency{
    "cluster.net_latency_ns", 50.0, Range::at_least(0).at_most(1e9),
    "each InfiniBand cable, ns (10 m at 5 ns/m: within a row of racks; a guess)"};
const Param<uint32_t> kClusterOversubscription{
    "cluster.oversubscription", 1, Range::at_least(1).at_most(64),
    "a rail leaf's down-links over its up-links (1: non-blocking, as NVIDIA's DGX SuperPOD reference "
    "architecture builds the compute fabric)"};
const Param<uint32_t> kClusterLeafPorts{
    "cluster.leaf_ports", kQuantum2Ports, Range::at_least(1).at_most(4096),
    "ports of a rail leaf switch; a rail whose nodes and up-links need more is several leaves joined through "
    "the spines (NVIDIA Quantum-2 QM9700/QM9790 datasheet: 64 NDR ports of 400 Gb/s; on hgx-a100 nodes 40, "
    "Quantum QM8700's HDR ports)"};
const Param<uint32_t> kClusterSpinePorts{
    "cluster.spine_ports", kQuantum2Ports, Range::at_least(2).at_most(4096),
    "ports of a spine switch; more leaves than that, several per rail, are joined by three levels: pods of "
    "leaves under their spines, the spines joined by cores (NVIDIA Quantum-2 QM9700 datasheet: 64 NDR ports; DGX "
    "SuperPOD reference architectures for H100 and B200: QM9700 leaves, spines and cores; on hgx-a100 nodes 40, "
    "Quantum QM8700's)"};
const Param<uint32_t> kClusterCorePorts{
    "cluster.core_ports", kQuantum2Ports, Range::at_least(1).at_most(4096),
    "ports of a core switch, the third level (NVIDIA Quantum-2 QM9700 datasheet: 64 NDR ports; DGX SuperPOD "
    "reference architecture for B200: 64 QM9700 cores for 512 nodes, 256 for 2,048; on hgx-a100 nodes 40)"};
const Param<uint32_t> kClusterSpineOversubscription{
    "cluster.spine_oversubscription", 1, Range::at_least(1).at_most(64),
    "on three levels, a spine's down-links over its up-links to the cores (1: non-blocking, as the DGX SuperPOD "
    "reference architecture for B200 wires its 3-level compute fabric: as many spine-core cables as leaf-spine ones)"};

const Param<std::string> kClusterNetwork{
    "cluster.network", "infiniband", Range::none(),
    "the scale-out network: infiniband (NDR, credit-based lossless links, as NVIDIA's DGX SuperPOD) or roce "
    "(RoCEv2 on 400 GbE, reliable connections with go-back-N, as NetReduce's hosts use; issue 21)"};

// topo::kMaxClusterNodes DGX H100s; a node platform with more GPUs allows fewer nodes.
constexpr int kMaxClusterGpus = 131072;

topo::Topology make_cluster_topology(const PlatformShape& shape, Config& cfg) {
  const std::string node = shape.node.empty() ? "hgx-h100" : shape.node;
  if (std::find(kClusterNodes.begin(), kClusterNodes.end(), node) == kClusterNodes.end() && !is_platform_file(node))
    throw UserError("a cluster's nodes are " + cluster_node_platforms() +
                    " or a GPU platform file (FILE.yaml), each GPU with an InfiniBand adapter; " +
                    (node == "cluster" ? std::string("a cluster is not a node") : "not " + node));
  if (shape.gpus) throw UserError("the cluster platform is shaped by --nodes and --node, not --gpus");
  topo::ClusterShape s;
  s.nodes = shape.nodes ? shape.nodes : 4;
  if (s.nodes < 2 || s.nodes > topo::kMaxClusterNodes)
    throw UserError("a cluster has 2 to " + std::to_string(topo::kMaxClusterNodes) +
                    " nodes: --nodes must be in that range, not " + std::to_string(s.nodes));
  const topo::Topology machine = make_topology(node, PlatformShape{}, cfg);
  if (is_dgx1(machine))
    throw UserError("a cluster's nodes have an adapter per GPU; DGX-1 servers on a network are --platform " +
                    machine.family + " --gpus 0,1,2/0,1,2,3,4");
  const uint64_t gpus = static_cast<uint64_t>(s.nodes) * machine.endpoints().size();
  if (gpus > kMaxClusterGpus)
    throw UserError("a cluster has at most " + std::to_string(kMaxClusterGpus) + " GPUs: " +
                    std::to_string(s.nodes) + " nodes of " + std::to_string(machine.endpoints().size()) + " make " +
                    std::to_string(gpus) + "; --nodes must be at most " +
                    std::to_string(kMaxClusterGpus / machine.endpoints().size()) + " with --node " + node);
  const bool hdr = machine.family == topo::Topology::kHgxA100;
  s.pcie_GBps = cfg.get(kClusterPcieGBps, hdr ? kPcie4x16GBps : kPcie5x16GBps);
  s.pcie_latency_ns = cfg.get(kClusterPcieLatency);
  s.net_GBps = cfg.get(kClusterNetGbps, hdr ? kHdrGbps : kNdrGbps) / 8;
  s.net_latency_ns = cfg.get(kClusterNetLatency);
  s.oversubscription = static_cast<int>(cfg.get(kClusterOversubscription));
  const uint32_t ports = hdr ? kQuantumPorts : kQuantum2Ports;
  s.leaf_ports = static_cast<int>(cfg.get(kClusterLeafPorts, ports));
  s.spine_ports = static_cast<int>(cfg.get(kClusterSpinePorts, ports));
  const std::string network = cfg.get(kClusterNetwork);
  if (network != "infiniband" && network != "roce")
    throw UserError("cluster.network must be infiniband or roce, not '" + network + "'");
  s.network = network == "roce" ? topo::ScaleOut::Roce : topo::ScaleOut::InfiniBand;
  // The cores' keys are read only where there are cores.
  if (topo::cluster_levels(machine, s) == 3) {
    s.core_ports = static_cast<int>(cfg.get(kClusterCorePorts, ports));
    s.spine_oversubscription = static_cast<int>(cfg.get(kClusterSpineOversubscription));
  }
  return topo::make_cluster(machine, s);
}
}  // namespace

bool is_platform_file(const std::string& platform) {
  auto ends = [&](const std::string& e) {
    return platform.size() > e.size() && platform.compare(platform.size() - e.size(), e.size(), e) == 0;
  };
  // A path, or a folder (which the reader refuses as no file), names a file, not a built-in platform.
  std::error_code ec;
  return ends(".yaml") || ends(".yml") || platform.find('/') != std::string::npos ||
         std::filesystem::is_directory(platform, ec);
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
  if (!shape.node.empty() && platform != "cluster")
    throw UserError("--node applies to the cluster platform, not to " + platform);
  const bool dims = shape.dims;
  const std::string dims_text = std::to_string(shape.dims_x) + "x" + std::to_string(shape.dims_y);
  if (dims && platform != "torus" && platform != "mesh" && platform != "bigraph")
    throw UserError("--dims applies to the torus, mesh and bigraph platforms, not to " + platform +
                    (platform == "fattree" || platform == "cluster" ? "; give --nodes instead" : ""));
  if (platform == "cluster") return make_cluster_topology(shape, cfg);
  // link.* with the family's defaults: a YAML file's, or the built-in's.
  auto link_defaults = [&cfg](const std::string& family) {
    if (family == topo::Topology::kNetReduce || family == topo::Topology::kNetReduceMultiGpu)
      return topo::LinkDefaults{cfg.get(kLinkGBps, kEthernetLinkGBps), cfg.get(kLinkLatency, kEthernetLatencyNs)};
    const bool multitree = family == topo::Topology::kMultiTree;
    if (family == topo::Topology::kNvl72 || family == topo::Topology::kHgxB200)
      return topo::LinkDefaults{cfg.get(kLinkGBps, kNvLink5GBps), cfg.get(kLinkLatency, kLinkLatency.default_value())};
    const double bw = cfg.get(kLinkGBps, multitree ? topo::kMultiTreeLinkGBps : kLinkGBps.default_value());
    const double lat = cfg.get(kLinkLatency, multitree ? topo::kMultiTreeLinkLatencyNs : kLinkLatency.default_value());
    return topo::LinkDefaults{bw, lat};
  };
  if (shape.nodes != 0 && platform != "fattree")
    throw UserError("--nodes applies to the fattree and cluster platforms, not to " + platform +
                    (platform == "torus" || platform == "mesh" || platform == "bigraph" ? "; give --dims instead"
                     : platform == "star" || platform == "fattree2l"                  ? "; give --gpus instead"
                                                                                      : ""));
  if (is_platform_file(platform)) {
    return topo::load_yaml(platform, link_defaults);
  }
  const bool multitree = platform == "torus" || platform == "mesh" || platform == "fattree" || platform == "bigraph";
  const auto [bw, lat] = link_defaults(multitree              ? topo::Topology::kMultiTree
                                       : platform == "nvl72"    ? topo::Topology::kNvl72
                                       : platform == "hgx-b200" ? topo::Topology::kHgxB200
                                                             : topo::Topology::kKlenk);
  // A machine of fixed size whose first N GPUs --gpus takes.
  auto fixed = [&](int built, topo::Topology t) {
    if (shape.gpus && (*shape.gpus < 1 || *shape.gpus > built))
      throw UserError("the " + platform + " platform has " + std::to_string(built) +
                      " GPUs; --gpus must be between 1 and " + std::to_string(built) + ", not " +
                      std::to_string(*shape.gpus));
    return t;
  };
  if (platform == "dgx2") return fixed(16, topo::make_dgx2(bw, lat));
  if (platform == "hgx-a100") return fixed(8, topo::make_hgx_a100(bw, lat));
  if (platform == "hgx-h100") return fixed(8, topo::make_hgx_h100(bw, lat));
  if (platform == "hgx-b200") return fixed(8, topo::make_hgx_b200(bw, lat));
  if (platform == "nvl72") return fixed(72, topo::make_nvl72(bw, lat));
  if (platform == "fattree2l") {
    const int n = shape.gpus.value_or(128);
    if (n < 8 || n > 128 || n % 8 != 0)
      throw UserError("the fattree2l platform builds 8 to 128 GPUs in leaf groups of 8; --gpus " +
                      std::to_string(n) + " is not a multiple of 8 in that range");
    return topo::make_fattree2l(n / 8, bw, lat);
  }
  if (platform == "star") {
    const int n = shape.gpus.value_or(8);
    if (n < 1 || n > 4096)
      throw UserError("the star platform builds 1 to 4096 GPUs: --gpus must be between 1 and 4096, not " +
                      std::to_string(n));
    return topo::make_star(n, bw, lat);
  }
  if (platform == "torus" || platform == "mesh") {
    const int kx = dims ? shape.dims_x : 4, ky = dims ? shape.dims_y : 4;
    if (kx < 2 || ky < 2 || kx > 64 || ky > 64)
      throw UserError("a " + platform + " of " + dims_text + " is not built: --dims takes 2 to 64 routers per dimension, 2x2 up to 64x64");
    const int nis = cfg.get(kNodeInterfaces);
    const double nic_lat = cfg.get(kNodeLatency, lat);
    return platform == "torus" ? topo::make_torus(kx, ky, bw, lat, nis * bw, nic_lat)
                               : topo::make_mesh(kx, ky, bw, lat, nis * bw, nic_lat);
  }
  if (platform == "fattree") {
    // k-ary 2-level: k nodes per leaf switch, k leaves, k spines (MultiTree §VI-A).
    const int n = shape.nodes ? shape.nodes : 16;
    int k = 2;
    while (k * k < n) ++k;
    if (k * k != n || k > 64)
      throw UserError("a k-ary 2-level fat tree has k x k nodes: --nodes takes 16 (4-ary), 64 (8-ary) or another "
                      "square from 4 to 4096, not " + std::to_string(n));
    return topo::make_fattree(n, k, bw, lat);
  }
  if (platform == "bigraph") {
    const int per_switch = dims ? shape.dims_x : 4, switches = dims ? shape.dims_y : 8;
    return topo::make_bigraph(per_switch, switches, bw, lat);
  }
  const std::string near = nearest_in_list(platform, builtin_platforms() + ", rack, spineleaf, multigpu");
  if (!near.empty()) throw UserError("unknown platform '" + platform + "'; did you mean '" + near + "'?");
  throw UserError("unknown platform '" + platform + "'; choose one of " + builtin_platforms() +
                  ", rack, spineleaf, multigpu (Ethernet, NetReduce), or give a YAML "
                  "platform file");
}

namespace {
// The collective and traffic workloads drive GPUs: every node must be of the
// GPU fabric, a bridge from it (a cluster's adapters) or of the network beyond.
const topo::Topology& check_fabric(const topo::Topology& t) {
  std::vector<std::string> reached{GpuFabric::kName};
  for (const auto& node : t.nodes())
    if (is_bridge_kind(node.block) && fabric_of_kind(node.block) == GpuFabric::kName &&
        std::find(reached.begin(), reached.end(), bridged_fabric(node.block)) == reached.end())
      reached.push_back(bridged_fabric(node.block));
  for (const auto& node : t.nodes())
    if (const std::string& f = fabric_of_kind(node.block);
        std::find(reached.begin(), reached.end(), f) == reached.end())
      throw UserError("node " + node.name + " is a " + node.block + ", a block of the " +
                      (f == EthernetFabric::kName ? "Ethernet platforms (rack, spineleaf, multigpu)" : f + " fabric") +
                      ", not of the GPU fabric that collectives and traffic run on");
  return t;
}
}  // namespace

GpuMachine::GpuMachine(const topo::Topology& t, Config& cfg, uint64_t seed, PlatformDefaults d)
    : Machine(check_fabric(t), cfg, seed, d), defaults_(d) {
  gpus_ = blocks_of<gpu::Gpu>();
  switches_ = blocks_of<nvswitch::NvSwitch>();
  for (gpu::Gpu* g : gpus_) nics_.push_back(dynamic_cast<nic::Nic*>(g->attached()));
}

GpuMachine::TableTotals GpuMachine::table_totals() const {
  TableTotals t;
  for (const nvswitch::NvSwitch* s : switches_)
    for (int p = 0; p < s->num_ports(); ++p) {
      const auto& r = s->table(p);
      t.hits += r.hits;
      t.misses += r.misses;
      t.evictions += r.evictions;
      t.stalls += r.stalls;
      t.completions += r.completions;
      t.timeouts += r.timeouts;
    }
  return t;
}

uint32_t GpuMachine::smallest_table_entries(const nvswitch::TableSharing* of) const {
  uint32_t least = 0;
  for (const nvswitch::NvSwitch* s : switches_) {
    if (of && s->sharing() != of) continue;
    for (int p = 0; p < s->num_ports(); ++p)
      if (const uint32_t c = s->table(p).capacity(); c && (!least || c < least)) least = c;
  }
  return least;
}

void GpuMachine::rewind_if_idle() {
  if (pool().in_use() != 0) return;
  for (gpu::Gpu* g : gpus_) g->rewind_arbiters();
  for (nvswitch::NvSwitch* s : switches_) s->rewind_arbiters();
  drop_replaced_notifications();
}

std::pair<uint64_t, uint64_t> GpuMachine::packet_latency() const {
  std::pair<uint64_t, uint64_t> r{0, 0};
  for (const gpu::Gpu* g : gpus_) {
    r.first += g->packets_received();
    r.second += g->latency_sum();
  }
  return r;
}

}  // namespace incsim::platforms
