#pragma once
// What NCCL's runtime decides for every algorithm it runs on the GPUs'
// cores, whichever algorithm that is: how many channels split the message,
// which protocol moves it (picked by size, as NCCL's tuner does), and how
// its NVLS kernels reach the switches. The algorithms of
// modules/collectives/algorithms/ read these. Plain C++, no SystemC.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/program.h"
#include "core/config.h"
#include "core/param.h"
#include "net/lines.h"

namespace incsim::collectives {

inline const Param<int> kRingChannels{
    "ring.channels", 12, Range::at_least(1).at_most(256),
    "parallel rings, spread over a GPU's ports (NCCL runs several per link; 2 per DGX-2 link; hgx-h100 and "
    "nvl72: 18, one per link)"};
inline const Param<std::string> kRingProtocol{
    "ring.protocol", "simple", Range::none(),
    "how the GPUs' cores move the ring's data: simple, ll, ll128 (NCCL's protocols; the papers' baselines are "
    "Simple), or auto: by size, ring.auto.* (the default on hgx-h100, nvl72 and clusters, as NCCL picks); a "
    "program file's proto is its own"};
// ring.protocol=auto's thresholds, from a sweep of the three on hgx-h100
// (docs/modern-machines.md: LL fastest at 8 KiB, LL128 from 64 KiB to 4 MiB)
// and NCCL's tuner (src/graph/tuning.cc), which picks Simple from 32 MiB.
inline const Param<uint64_t> kAutoLlMax{"ring.auto.ll_max_bytes", 32 * 1024, Range::at_least(0).at_most(1ull << 40),
                                        "ring.protocol=auto: LL up to this message size, bytes (hgx-h100 sweep)"};
inline const Param<uint64_t> kAutoLl128Max{"ring.auto.ll128_max_bytes", 16ull << 20, Range::at_least(0).at_most(1ull << 40),
                                           "ring.protocol=auto: LL128 up to this size, then Simple, bytes (hgx-h100 "
                                           "sweep)"};

// NCCL's NVLS (NVIDIA H100 whitepaper, "NVLink SHARP"; NCCL
// src/device/all_reduce.h, NCCL_ALGO_NVLS): multimem.ld_reduce reads every
// member's copy through the switches, the reader's own too, and multimem.st
// writes every member's, its own too, so each GPU moves M (n + 1) / n.
inline const Param<bool> kNvlsMultimem{
    "nvls.multimem", true, Range::none(),
    "nvls reads and writes each GPU's own copy through the switches, as multimem loads and stores do (each GPU "
    "moves M(n+1)/n); false: Klenk's pull, the reader adds its own data locally"};

// The protocol thresholds of ring.protocol=auto.
struct ProtocolBySize {
  uint64_t ll_max_bytes = 0, ll128_max_bytes = 0;
  // LL up to ll_max_bytes, LL128 up to ll128_max_bytes, Simple above, as
  // NCCL's tuner orders them.
  Protocol for_size(uint64_t bytes) const {
    return bytes <= ll_max_bytes ? Protocol::LL : bytes <= ll128_max_bytes ? Protocol::LL128 : Protocol::Simple;
  }
  // The header's line: "# protocol by size (ring.protocol=auto): ...".
  std::string header_line() const;
};
// The protocol program p moves a message of `bytes` by: by size where it
// picks so, else its operations' (Simple where it has none, off the cores).
Protocol message_protocol(const Program& p, const ProtocolBySize& by_size, uint64_t bytes);

// NCCL's protocols (src/include/device.h, prims_ll.h, prims_ll128.h; Hu et
// al., "Demystifying NCCL", arXiv 2507.04786, §3):
//  - Simple: the data's stores, a fence that waits for every write ack,
//    then a flag store the receiver polls;
//  - LL: 16-byte stores of 8 bytes of data and two 4-byte flags, which the
//    receiver polls line by line: half the payload, no fence, no flag;
//  - LL128: 128-byte lines of 120 bytes of data and an 8-byte flag, relying
//    on NVLink's 128-byte store atomicity: 15/16 of the payload, no fence.
// The lines a protocol's writes carry (Simple's are plain); the data bytes
// one packet of `max_payload` wire bytes carries, and the wire payload
// `data` bytes take.
inline net::Lines lines_of(Protocol p) {
  return p == Protocol::LL ? net::Lines::Ll : p == Protocol::LL128 ? net::Lines::Ll128 : net::Lines::Plain;
}
inline uint32_t protocol_data_bytes(Protocol p, uint32_t max_payload) {
  return net::lines_data_bytes(lines_of(p), max_payload);
}
inline uint32_t protocol_wire_payload(Protocol p, uint32_t data) { return net::lines_wire_payload(lines_of(p), data); }

// NCCL's software around each collective (docs/hardware.md, "NCCL's
// software"): what the host and the GPU spend on a collective besides its
// steps, which the engines simulate. nccl-tests launches its collectives
// back to back and divides the time of many by their count, so a row is
// the longer of the host's period (the launches one host thread makes per
// collective) and the GPU's (NCCL's fixed cost, then the steps).
inline const Param<std::string> kNcclLaunch{
    "nccl.launch", "none", Range::none(),
    "how the host launches each GPU's collective: process (a process per GPU, mpirun -np N, as nccl-tests "
    "advises; the default on hgx-*, nvl72 and clusters), thread (one thread launches every GPU's kernel in turn, "
    "all_reduce_perf -g N), none (no software costs: the papers' hardware alone, the default on their platforms)"};
inline const Param<double> kNcclHostLaunch{
    "nccl.host_launch_us", 5.0, Range::at_least(0).at_most(1e6),
    "host time to enqueue one GPU's collective and launch its kernel, us (a kernel launch through CUDA's runtime "
    "and driver takes 4-6 us of CPU, public microbenchmarks; NCCL's own enqueue is not measured publicly: a guess)"};

inline const Param<int> kNcclGraph{
    "nccl.graph_collectives", 0, Range::at_least(0).at_most(1000000),
    "collectives per CUDA graph (all_reduce_perf -G: nccl-tests captures its -n iterations, 20 by default, into "
    "one graph per GPU and launches the graph, src/common.cu), so the host's launches cost one per graph over that "
    "many collectives; 0: no graph, a launch per collective"};

// NCCL's fixed cost of one collective on the GPU, before and after its
// steps (the kernel's launch, its set-up, the first handshakes), us: NCCL's
// own model, src/graph/tuning.cc, ncclTunerConstantsDefaults.baseLatencies,
// Ring {LL 6.6, LL128 14.0, Simple 8.4}, Tree {6.8, 14.0, 8.4}. NVLS,
// NVLSTree and CollNet have no base there (their one latency covers their
// steps too, which incsim simulates): they, and every program not on the
// cores, are charged Simple's 8.4, the same kernel launch and set-up.
double nccl_base_latency_us(Protocol p, bool tree);

// NCCL's network proxy (src/transport/net.cc, sendProxyProgress and
// recvProxyProgress; src/proxy.cc): a step between GPUs in different nodes
// goes through a CPU thread per GPU that polls host memory for the GPU's
// step, posts it to the adapter (ibv_post_send), polls the adapter's
// completions and tells the receiving GPU. The engines simulate the data's
// crossing (PCIe, adapters, network); these are the rest.
inline const Param<double> kNcclProxyPass{
    "nccl.proxy_pass_us", 1.0, Range::at_least(0).at_most(1e6),
    "one pass of NCCL's proxy thread over its operations, us: what it polls for is seen half a pass later on "
    "average (src/proxy.cc: progressOps runs every active operation, then std::this_thread::yield when none "
    "progressed; no public measurement: a guess)"};
inline const Param<double> kNcclPcieRoundTrip{
    "nccl.pcie_round_trip_us", 0.6, Range::at_least(0).at_most(1e6),
    "a PCIe read's round trip from a GPU, an adapter or the CPU to host or GPU memory, us (twice "
    "cluster.pcie_latency_ns's 250 ns and a memory access of about 100 ns: a guess, as that latency is)"};

// What NCCL's software adds to one step between nodes, from the code's
// order of operations. R is a PCIe round trip, P a proxy pass.
//  - Sender, every protocol: the GPU's tail store (Simple, LL128: the
//    connection's tail in host memory) or its LL lines (LL's buffer is in
//    host memory) cross PCIe, R/2; the proxy sees them, P/2; its doorbell
//    crosses PCIe, R/2; the adapter's read of the data, R, whose data
//    half the engines simulate: 1.5 R + P/2.
//  - Receiver, Simple: the completion crosses to host memory, R/2; the
//    proxy sees it, P/2; it stores the tail in host memory, which the GPU's
//    polling load reads across PCIe, R and on average half a poll more:
//    2 R + P/2. Where GPUDirect's writes need a flush (ncclTopoNeedFlush:
//    before Hopper), the proxy first posts an RDMA read of
//    the buffer (ncclIbIflush: doorbell, the adapter's read, its
//    completion, 2 R) and sees it done, P/2.
//  - Receiver, LL and LL128: the GPU polls the lines in its own memory,
//    which the engines simulate: nothing.
//  - A slot's way back: the receiving GPU's head store crosses PCIe to host
//    memory, R/2; its proxy sees it, P/2, and posts the receive again, whose
//    clear-to-send doorbell crosses PCIe, R/2; the sender's proxy sees the
//    clear-to-send at its next try, P/2: R + P. (The clear-to-send crosses
//    the network as the engines' head flag does.)
struct NetSteps {
  double proxy_pass_us = 0, pcie_round_trip_us = 0;
  bool flush = false;
  std::vector<int> node_of;  // [endpoint]: its node; empty where nothing is charged
  // Does a step from endpoint a to endpoint b cross the network?
  bool across(int a, int b) const {
    return !node_of.empty() && node_of[static_cast<size_t>(a)] != node_of[static_cast<size_t>(b)];
  }
  double send_us() const { return 1.5 * pcie_round_trip_us + proxy_pass_us / 2; }
  double receive_us(Protocol p) const {
    if (p != Protocol::Simple) return 0;
    return 2 * pcie_round_trip_us + proxy_pass_us / 2 + (flush ? 2 * pcie_round_trip_us + proxy_pass_us / 2 : 0);
  }
  double step_us(Protocol p) const { return send_us() + receive_us(p); }
  double head_us() const { return pcie_round_trip_us + proxy_pass_us; }
  bool charged() const { return proxy_pass_us > 0 || pcie_round_trip_us > 0; }
};
// The network's proxy costs from nccl.proxy_pass_us and
// nccl.pcie_round_trip_us for the GPUs `endpoints` of platform family
// `family`, whose receivers flush GPUDirect's writes before Hopper
// (ncclTopoNeedFlush, src/graph/paths.cc; its Grace C2C case is for
// DataDirect adapters, which incsim does not model). node_of: each
// endpoint's node (empty off a cluster). Nothing is read or charged where
// the GPUs are all in one node.
NetSteps nccl_net_steps(Config& cfg, const std::string& family, std::vector<int> node_of,
                        const std::vector<int>& endpoints);

struct NcclSoftware {
  enum class Launch { None, Process, Thread };
  Launch launch = Launch::None;
  double host_launch_us = 0;
  int graph_collectives = 0;  // collectives per CUDA graph, whose one launch they share; 0: none
  int gpus = 1;  // the run's GPUs, all of whose kernels one thread launches (Thread)
  bool tree = false;  // NCCL's tree kernels (their LL base differs)
  NetSteps net;       // between nodes: set by the caller where the ranks span several
  // The GPU's fixed cost for a collective moved by protocol p, us (0 under None).
  double base_us(Protocol p) const { return launch == Launch::None ? 0 : nccl_base_latency_us(p, tree); }
  // The host's period per collective, us: one launch per process, or every
  // GPU's from one thread, each shared by a CUDA graph's collectives. A
  // graph's launch is taken to cost a kernel's: one call through the same
  // runtime and driver (its own cost is not published).
  double host_period_us() const {
    return launch == Launch::None ? 0
                                  : host_launch_us * (launch == Launch::Thread ? gpus : 1) /
                                        std::max(1, graph_collectives);
  }
  // nccl-tests' time per collective for a GPU time of gpu_us (base included).
  double row_us(double gpu_us) const { return std::max(gpu_us, host_period_us()); }
  // The header's line, empty under None.
  std::string header_line() const;
};
// nccl.launch (default_launch: the platform's) and nccl.host_launch_us for
// a program of `gpus` ranks; UserError for a mode it does not know.
NcclSoftware nccl_software(Config& cfg, const std::string& default_launch, int gpus, bool tree);

// Gives algorithm's program for the cores the protocol `proto` (the run's
// ring.protocol): every operation's, or by size under auto. simple_only:
// NCCL runs the algorithm's kernels with Simple only (NVLS, NVLSTree,
// CollNet), and another protocol is a UserError naming it.
void apply_protocol(Program& p, const std::string& algorithm, const std::string& proto, bool simple_only);

}  // namespace incsim::collectives
