#pragma once
// NCCL's tuning model on one NVLink node (src/graph/tuning.cc,
// ncclTopoTuneModel and ncclTopoGetAlgoTime; src/graph/search.cc for the
// graphs it tunes; src/enqueue.cc for the channels a size gets): the
// algorithm and protocol NCCL picks for a collective of a size, as
// `--algorithm nccl` runs them (docs/hardware.md, "NCCL's choice"). It
// predicts times only to choose, as NCCL does; the engines then run the
// choice. Plain C++, no SystemC.
#include <cstdint>
#include <string>

#include "collectives/program.h"

namespace incsim::collectives {

// The GPUs' generation, NCCL's compCapIndex (tuning.cc).
enum class GpuArch : uint8_t { Ampere, Hopper, Blackwell };

enum class NcclAlgo : uint8_t { Ring, Nvls };
const char* nccl_algo_name(NcclAlgo a);

// What NCCL's topology search finds on a node of GPUs that reach each
// other through NVSwitches: per graph, its channels and each channel's
// bandwidth, GB/s.
struct NcclGraph {
  int channels = 0;
  double bw_intra = 0, bw_inter = 0;
};

struct NcclChoice {
  NcclAlgo algo = NcclAlgo::Ring;
  Protocol proto = Protocol::Simple;
  int channels = 0;      // the ring's channels for this size (enqueue.cc), NVLS's own
  double model_us = 0;   // NCCL's predicted time for it
};

class NcclTuning {
 public:
  // `ranks` GPUs of one node, each with `links` NVLinks to the switches.
  NcclTuning(GpuArch arch, int ranks, int links);
  // NCCL's pick for a collective of `bytes` (for an all-gather and a
  // reduce-scatter the whole buffer, ncclFuncMaxSendRecvCount; UserError
  // for another collective), the fastest by its model among the algorithms
  // allowed (NCCL_ALGO's list; both by default).
  NcclChoice choose(Collective c, uint64_t bytes, bool ring = true, bool nvls = true) const;
  // NCCL's predicted time of one algorithm and protocol, us; < 0 where NCCL would not run it.
  double model_us(Collective c, NcclAlgo a, Protocol p, uint64_t bytes) const;
  const NcclGraph& ring() const { return ring_; }
  const NcclGraph& nvls() const { return nvls_; }
  // comm->nChannels: the ring graph's channels duplicated (connect.cc, ncclTopoPostset).
  int comm_channels() const { return 2 * ring_.channels; }

 private:
  int steps(Collective c) const;
  double bandwidth(Collective c, NcclAlgo a, Protocol p) const;
  double latency(Collective c, NcclAlgo a, Protocol p) const;
  GpuArch arch_;
  int ranks_;
  NcclGraph ring_, nvls_;
};

// The GPUs' generation of a platform family (hgx-a100: Ampere; hgx-h100:
// Hopper; hgx-b200, nvl72: Blackwell); false for another.
bool nccl_arch(const std::string& family, GpuArch& out);

}  // namespace incsim::collectives
