#include "dgx1.h"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>

#include "core/error.h"

namespace incsim::topo {

namespace {

// NVLinks per GPU pair, DGX-1V (Blink Fig. 1; the same matrix `nvidia-smi topo
// -m` prints on an AWS p3.16xlarge, the machine of Blink §5.2, and on 8-GPU
// V100 NVLink servers, e.g. kyumdoctor.tistory.com/74). Each GPU has 6.
// GPUs 0-3 and 4-7 each form a fully joined quad and GPU i joins GPU i+4; the
// doubled pairs form the ring 0-3-2-1-5-6-7-4-0.
constexpr int kV100[8][8] = {
    {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0},
    {2, 1, 2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
    {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0}};

std::string gpu_name(int g) { return "gpu" + std::to_string(g); }

}  // namespace

Dgx1Gen parse_dgx1_gen(const std::string& s) {
  if (s == "dgx1p") return Dgx1Gen::P100;
  if (s == "dgx1v") return Dgx1Gen::V100;
  throw UserError("unknown DGX-1 generation '" + s + "': use dgx1p or dgx1v");
}

const char* to_string(Dgx1Gen g) { return g == Dgx1Gen::P100 ? "dgx1p" : "dgx1v"; }

int dgx1_nvlinks(Dgx1Gen gen, int a, int b) {
  if (a < 0 || a > 7 || b < 0 || b > 7) throw UserError("a DGX-1 has GPUs 0 to 7");
  // DGX-1P: the same 16 pairs, one NVLink each (4 per P100).
  if (gen == Dgx1Gen::P100) return kV100[a][b] > 0 ? 1 : 0;
  return kV100[a][b];
}

// NVLink gen 1: 20 GB/s per direction per link (NVIDIA Tesla P100 whitepaper,
// 2016: 4 links, 160 GB/s bidirectional); Blink Fig. 1 measures 18-20 GB/s.
// NVLink gen 2: 25 GB/s per direction per link (NVIDIA Tesla V100 whitepaper,
// 2017: 6 links, 300 GB/s); Blink Fig. 1 measures 22-25 GB/s.
double dgx1_nvlink_GBps(Dgx1Gen gen) { return gen == Dgx1Gen::P100 ? 20.0 : 25.0; }

// Other defaults (dgx1.h, Dgx1Links), none of which Blink gives:
// - NVLink latency 150 ns: DESIGN.md's link latency (MultiTree Table III) as a
//   stand-in, split 75 + 75 ns over the bridge's two links.
// - PCIe 3.0 x16, 15.75 GB/s per direction: 8 GT/s x 16 lanes x 128/130 / 8
//   (PCI Express Base Specification 3.0); Blink A.3 measures 8-12 GB/s.
// - PCIe 100 ns per link: the order of the cut-through latency PLX quotes for
//   its Gen3 switches (PEX 8700 family, used in DGX-1); an estimate.
// - Inter-socket 38.4 GB/s: the DGX-1's two Xeon E5-2698 v4 (DGX-1 user guide)
//   have 2 QPI links at 9.6 GT/s, 19.2 GB/s per direction each (Intel ARK).
// - Inter-socket 100 ns: an estimate of one QPI hop.

void check_dgx1_allocation(const std::vector<int>& gpus) {
  if (gpus.size() < 2) throw UserError("a DGX-1 allocation needs at least 2 GPUs");
  std::array<bool, 8> seen{};
  for (int g : gpus) {
    if (g < 0 || g > 7) throw UserError("GPU " + std::to_string(g) + " does not exist: a DGX-1 has GPUs 0 to 7");
    if (seen[g]) throw UserError("GPU " + std::to_string(g) + " is allocated twice");
    seen[g] = true;
  }
}

bool dgx1_nvlink_connected(Dgx1Gen gen, const std::vector<int>& gpus) {
  if (gpus.empty()) return false;
  std::vector<bool> reached(gpus.size(), false);
  std::vector<size_t> stack{0};
  reached[0] = true;
  while (!stack.empty()) {
    size_t u = stack.back();
    stack.pop_back();
    for (size_t v = 0; v < gpus.size(); ++v)
      if (!reached[v] && dgx1_nvlinks(gen, gpus[u], gpus[v]) > 0) {
        reached[v] = true;
        stack.push_back(v);
      }
  }
  return std::all_of(reached.begin(), reached.end(), [](bool r) { return r; });
}

Topology make_dgx1(Dgx1Gen gen, const std::vector<int>& gpus, const Dgx1Links& links) {
  check_dgx1_allocation(gpus);
  const double nvl_bw = links.nvlink_GBps > 0 ? links.nvlink_GBps : dgx1_nvlink_GBps(gen);
  const double nvl_lat = links.nvlink_latency_ns / 2;
  std::array<bool, 8> held{};
  for (int g : gpus) held[g] = true;
  std::array<bool, 4> pcie{};
  std::array<int, 2> cpu_ports{};
  for (int g : gpus) pcie[g / 2] = true;
  for (int s = 0; s < 4; ++s) cpu_ports[s / 2] += pcie[s] ? 1 : 0;
  const bool qpi = cpu_ports[0] > 0 && cpu_ports[1] > 0;

  Topology t;
  t.name = std::string(to_string(gen));
  t.family = t.name;
  for (int g : gpus) {
    int ports = 1;
    for (int h = 0; h < 8; ++h)
      if (held[h]) ports += dgx1_nvlinks(gen, g, h);
    t.add_endpoint(gpu_name(g), ports);
  }
  // GPU ports: NVLinks by peer then link number, PCIe last.
  std::array<int, 8> next_port{};
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) {
      if (!held[a] || !held[b]) continue;
      for (int k = 0; k < dgx1_nvlinks(gen, a, b); ++k) {
        const std::string br = "nvl" + std::to_string(a) + "_" + std::to_string(b) + "_" + std::to_string(k);
        const int s = t.add_switch(br, 2, kinds::kNvLinkBridge);
        t.connect({t.find(gpu_name(a)), next_port[a]++}, {s, 0}, nvl_bw, nvl_lat);
        t.connect({t.find(gpu_name(b)), next_port[b]++}, {s, 1}, nvl_bw, nvl_lat);
      }
    }
  std::array<int, 2> cpu{-1, -1};
  for (int c = 0; c < 2; ++c)
    if (cpu_ports[c] > 0) cpu[c] = t.add_switch("cpu" + std::to_string(c), cpu_ports[c] + (qpi ? 1 : 0), kinds::kCpuSocket);
  std::array<int, 2> cpu_next{};
  for (int s = 0; s < 4; ++s) {
    if (!pcie[s]) continue;
    const int ports = (held[2 * s] ? 1 : 0) + (held[2 * s + 1] ? 1 : 0) + 1;
    const int sw = t.add_switch("pcie" + std::to_string(s), ports, kinds::kPcieSwitch);
    int p = 0;
    for (int g = 2 * s; g < 2 * s + 2; ++g)
      if (held[g]) t.connect({t.find(gpu_name(g)), next_port[g]}, {sw, p++}, links.pcie_GBps, links.pcie_latency_ns);
    t.connect({sw, p}, {cpu[s / 2], cpu_next[s / 2]++}, links.pcie_GBps, links.pcie_latency_ns);
  }
  if (qpi) t.connect({cpu[0], cpu_ports[0]}, {cpu[1], cpu_ports[1]}, links.socket_GBps, links.socket_latency_ns);
  t.finalize();
  return t;
}

std::vector<int> dgx1_nvlink_ports(const Topology& t, int a, int b) {
  const int node = t.endpoints()[a], target = t.endpoints()[b];
  std::vector<int> out;
  for (int p = 0; p < t.node(node).ports; ++p) {
    if (t.link_at({node, p}) < 0) continue;
    const PortRef bridge = t.peer({node, p});
    if (dgx1_part(t, bridge.node) != Dgx1Part::NvLink) continue;
    if (t.peer({bridge.node, 1 - bridge.port}).node == target) out.push_back(p);
  }
  return out;
}

int dgx1_pcie_port(const Topology& t, int a) { return t.node(t.endpoints()[a]).ports - 1; }

Topology make_dgx1_cluster(Dgx1Gen gen, const std::vector<std::vector<int>>& gpus, double net_GBps,
                           double net_latency_ns, const Dgx1Links& links) {
  const int servers = static_cast<int>(gpus.size());
  if (servers < 2) throw UserError("a DGX-1 cluster needs at least 2 servers");
  if (!(net_GBps > 0) || !(net_latency_ns >= 0))
    throw UserError("the network between DGX-1 servers needs a positive bandwidth and a latency of 0 or more");
  Topology c;
  c.name = std::string(to_string(gen)) + "x" + std::to_string(servers);
  c.family = to_string(gen);
  // Endpoints first, server by server, so endpoint order is rank order.
  std::vector<Topology> one;
  for (int s = 0; s < servers; ++s) one.push_back(make_dgx1(gen, gpus[s], links));
  std::vector<std::vector<int>> id(servers);
  for (int s = 0; s < servers; ++s)
    for (int e : one[s].endpoints()) {
      id[s].resize(one[s].nodes().size(), -1);
      id[s][e] = c.add_endpoint("s" + std::to_string(s) + "_" + one[s].node(e).name, one[s].node(e).ports, one[s].node(e).block);
    }
  std::vector<int> nic_socket(servers);
  for (int s = 0; s < servers; ++s) {
    const std::string socket = "cpu" + std::to_string(gpus[s][0] / 4);
    for (int n = 0; n < static_cast<int>(one[s].nodes().size()); ++n) {
      const Node& node = one[s].node(n);
      if (node.kind != NodeKind::Switch) continue;
      // The socket with the NIC gets one port more, its last.
      const bool nic = node.name == socket;
      id[s][n] = c.add_switch("s" + std::to_string(s) + "_" + node.name, node.ports + (nic ? 1 : 0), node.block);
      if (nic) nic_socket[s] = id[s][n];
    }
    for (const Link& l : one[s].links())
      c.connect({id[s][l.a.node], l.a.port}, {id[s][l.b.node], l.b.port}, l.bw_GBps, l.latency_ns);
  }
  const int net = c.add_switch("net", servers, kinds::kNetworkSwitch);
  for (int s = 0; s < servers; ++s)
    c.connect({nic_socket[s], c.node(nic_socket[s]).ports - 1}, {net, s}, net_GBps, net_latency_ns);
  c.finalize();
  return c;
}

std::vector<std::vector<int>> dgx1_servers(const Topology& t) {
  std::vector<std::vector<int>> servers;
  std::string server = "-";  // no server's prefix
  for (int e : t.endpoints()) {
    const std::string& name = t.node(e).name;
    const size_t at = name.rfind("gpu");
    const std::string number = at == std::string::npos ? "" : name.substr(at + 3);
    if (dgx1_part(t, e) != Dgx1Part::Gpu || number.size() != 1 || number[0] < '0' || number[0] > '7')
      throw UserError("node '" + name + "' is not a DGX-1 GPU (gpu0 to gpu7, on a cluster s<k>_gpu0 to s<k>_gpu7)");
    if (servers.empty() || name.substr(0, at) != server) servers.emplace_back();
    server = name.substr(0, at);
    servers.back().push_back(number[0] - '0');
  }
  return servers;
}

Dgx1Part dgx1_part(const Topology& t, int node) {
  const std::string& full = t.node(node).name;
  if (full == "net") return Dgx1Part::Network;
  // A cluster's "s<k>_" prefix (no DGX-1 part's own name starts with s).
  const bool prefixed = full.size() > 1 && full[0] == 's' && full.find('_') != std::string::npos;
  const std::string n = prefixed ? full.substr(full.find('_') + 1) : full;
  if (n.rfind("gpu", 0) == 0) return Dgx1Part::Gpu;
  if (n.rfind("nvl", 0) == 0) return Dgx1Part::NvLink;
  if (n.rfind("pcie", 0) == 0) return Dgx1Part::PcieSwitch;
  if (n.rfind("cpu", 0) == 0) return Dgx1Part::CpuSocket;
  throw UserError("node '" + n + "' is not part of a DGX-1");
}

std::vector<std::vector<int>> dgx1_unique_allocations(Dgx1Gen gen, int min_gpus, int max_gpus) {
  if (min_gpus < 1 || max_gpus > 8 || min_gpus > max_gpus)
    throw UserError("allocation sizes must lie within 1 to 8 GPUs");
  std::vector<std::vector<int>> out;
  for (int k = min_gpus; k <= max_gpus; ++k) {
    // Canonical form of a subset: the smallest upper-triangle link-count string
    // over all orderings of its GPUs. Subsets come in lexicographic order, so
    // the first of each class is its representative.
    std::map<std::vector<int>, bool> classes;
    std::vector<int> pick(k);
    std::vector<bool> mask(8, false);
    std::fill(mask.begin(), mask.begin() + k, true);
    do {
      pick.clear();
      for (int g = 0; g < 8; ++g)
        if (mask[g]) pick.push_back(g);
      if (!dgx1_nvlink_connected(gen, pick)) continue;
      std::vector<int> perm(k), best, cur;
      std::iota(perm.begin(), perm.end(), 0);
      do {
        cur.clear();
        for (int i = 0; i < k; ++i)
          for (int j = i + 1; j < k; ++j) cur.push_back(dgx1_nvlinks(gen, pick[perm[i]], pick[perm[j]]));
        if (best.empty() || cur < best) best = cur;
      } while (std::next_permutation(perm.begin(), perm.end()));
      if (classes.emplace(best, true).second) out.push_back(pick);
    } while (std::prev_permutation(mask.begin(), mask.end()));
  }
  return out;
}

}  // namespace incsim::topo
