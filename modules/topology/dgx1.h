#pragma once
// NVIDIA DGX-1 servers as Blink sees them (Blink, MLSys 2020, Fig. 1): eight
// GPUs joined by the NVLink hybrid cube-mesh, plus the PCIe tree (four PCIe
// switches with two GPUs each, two CPU sockets, the inter-socket link).
//
//   DGX-1P (P100, NVLink gen 1): 4 NVLinks per GPU, one link per joined pair.
//   DGX-1V (V100, NVLink gen 2): 6 NVLinks per GPU; the same 16 joined pairs,
//   8 of them doubled (Fig. 1's red dashed lines, the additional links).
//
// A job is allocated a subset of the GPUs (as a cluster scheduler would) and
// may use only the NVLinks between GPUs it holds; the PCIe tree is shared.
//
// Modelling decision. Topology lets endpoints meet only through switches, so a
// GPU-GPU NVLink is modelled in make_dgx1() as a 2-port "bridge" switch
// (nvl<a>_<b>_<k>) with one link to each GPU, one bridge per physical NVLink:
// the SystemC platform elaborates from the same Topology as every other
// platform, and keeps the two NVLinks of a doubled pair apart as the hardware
// does. Tree packing does not run on this graph but on a separate, lighter
// directed graph of GPUs only (collectives/blink_trees.h, built from
// dgx1_nvlinks()): arborescences must span GPUs, and bridges and the shared
// PCIe tree would be Steiner vertices that the packing cannot use. Blink packs
// NVLink and PCIe trees apart too (appendix A.3).
#include <string>
#include <vector>

#include "topology/topology.h"

namespace incsim::topo {

enum class Dgx1Gen { P100, V100 };

// "dgx1p" or "dgx1v"; anything else is a UserError.
Dgx1Gen parse_dgx1_gen(const std::string& s);
const char* to_string(Dgx1Gen g);

// Number of NVLinks between physical GPUs a and b (0..7): 0, 1 or 2.
int dgx1_nvlinks(Dgx1Gen gen, int a, int b);

// Link parameters, each direction. Defaults name their sources in dgx1.cpp.
struct Dgx1Links {
  double nvlink_GBps;                 // per NVLink; 0 = the generation's default
  double nvlink_latency_ns = 150;     // GPU to GPU, split over the bridge's two links
  double pcie_GBps = 15.75;           // PCIe 3.0 x16
  double pcie_latency_ns = 100;       // per PCIe link (GPU-switch, switch-CPU)
  double socket_GBps = 38.4;          // inter-socket QPI, both links
  double socket_latency_ns = 100;
  explicit Dgx1Links(double nvl_GBps = 0) : nvlink_GBps(nvl_GBps) {}
};
// Per-direction bandwidth of one NVLink of the generation, GB/s.
double dgx1_nvlink_GBps(Dgx1Gen gen);

// Checks an allocation: 2 to 8 distinct GPUs numbered 0..7 (UserError
// otherwise, one sentence). It need not be NVLink-connected: PCIe joins all.
void check_dgx1_allocation(const std::vector<int>& gpus);
// True if the NVLinks among the allocated GPUs connect them all.
bool dgx1_nvlink_connected(Dgx1Gen gen, const std::vector<int>& gpus);

// The Topology of a DGX-1 restricted to an allocation: endpoints gpu<i> (in
// the order given, physical numbers in the names), one bridge switch
// nvl<a>_<b>_<k> per NVLink between allocated GPUs, and the part of the PCIe
// tree the allocation reaches: switches pcie<s> (GPUs 2s and 2s+1), sockets
// cpu<c> (pcie switches 2c and 2c+1), and the cpu0-cpu1 link when both
// sockets are reached. GPU ports: its NVLinks first (by peer, then k), PCIe last.
// Note: Topology's shortest-path routes count switches, so a GPU pair joined by
// both an NVLink and a PCIe switch may be routed either way; Blink's executor
// must send along the tree's named links, not by route().
Topology make_dgx1(Dgx1Gen gen, const std::vector<int>& gpus, const Dgx1Links& links = Dgx1Links());

// Several DGX-1 servers joined by a network (Blink §3.4, §5.3, A.2): server
// s holds the allocation gpus[s] (a DGX-1 of its own, node names prefixed
// "s<s>_", e.g. "s1_gpu3"; endpoints server by server, each in its given
// order), and its NIC links the CPU socket of its first allocated GPU to one
// network switch "net" at net_GBps each direction with net_latency_ns. At
// least 2 servers; each allocation as check_dgx1_allocation asks.
Topology make_dgx1_cluster(Dgx1Gen gen, const std::vector<std::vector<int>>& gpus, double net_GBps,
                           double net_latency_ns, const Dgx1Links& links = Dgx1Links());

// The ports of endpoint a (an index into t.endpoints()) whose NVLink bridge
// leads to endpoint b, in port order; empty when the pair has no NVLink.
std::vector<int> dgx1_nvlink_ports(const Topology& t, int a, int b);
// Endpoint a's PCIe port (its last).
int dgx1_pcie_port(const Topology& t, int a);

// The servers of make_dgx1()'s or make_dgx1_cluster()'s Topology, each the
// physical numbers of its GPUs in endpoint order (one server without "s<k>_"
// prefixes), read from the endpoints' names.
std::vector<std::vector<int>> dgx1_servers(const Topology& t);

enum class Dgx1Part { Gpu, NvLink, PcieSwitch, CpuSocket, Network };
// What a node of make_dgx1()'s or make_dgx1_cluster()'s Topology stands for
// (from its name, after any "s<k>_" prefix).
Dgx1Part dgx1_part(const Topology& t, int node);

// The allocations of min_gpus..max_gpus GPUs that are distinct for Blink, one
// representative each (the lexicographically smallest of its class), sorted by
// size then lexicographically. Two allocations are the same when their
// NVLink-induced subgraphs (with link multiplicities) are isomorphic; only
// NVLink-connected allocations count (a disconnected one gives no NVLink
// spanning tree). This gives the paper's counts for 3..8 GPUs: 46 (DGX-1V) and
// 14 (DGX-1P), see §5.2.
std::vector<std::vector<int>> dgx1_unique_allocations(Dgx1Gen gen, int min_gpus = 3, int max_gpus = 8);

}  // namespace incsim::topo
