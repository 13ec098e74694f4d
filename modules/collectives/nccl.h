#pragma once
// What NCCL's runtime decides for every algorithm it runs on the GPUs'
// cores, whichever algorithm that is: how many channels split the message,
// which protocol moves it (picked by size, as NCCL's tuner does), and how
// its NVLS kernels reach the switches. The algorithms of
// modules/collectives/algorithms/ read these. Plain C++, no SystemC.
#include <algorithm>
#include <cstdint>
#include <string>

#include "collectives/program.h"
#include "core/config.h"
#include "core/param.h"

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
// The data bytes one packet of `max_payload` wire bytes carries, and the
// wire payload `data` bytes take.
uint32_t protocol_data_bytes(Protocol p, uint32_t max_payload);
uint32_t protocol_wire_payload(Protocol p, uint32_t data);
// The line of LL (st.volatile.v4.u32 {data, flag, data, flag}) and of
// LL128 (15 data words and a flag word), bytes.
constexpr uint32_t kLlLine = 16, kLlData = 8;
constexpr uint32_t kLl128Line = 128, kLl128Data = 120;

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

struct NcclSoftware {
  enum class Launch { None, Process, Thread };
  Launch launch = Launch::None;
  double host_launch_us = 0;
  int graph_collectives = 0;  // collectives per CUDA graph, whose one launch they share; 0: none
  int gpus = 1;  // the run's GPUs, all of whose kernels one thread launches (Thread)
  bool tree = false;  // NCCL's tree kernels (their LL base differs)
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
