#pragma once
// A host of NetReduce's Ethernet machines (§5.1: each machine one GPU
// behind a ConnectX-5 100 GbE NIC; on the multi-GPU machines each GPU with
// its own RoCE endpoint): the NIC is the block on the link, and the GPU's
// compute (host3.compute) runs a training step's kernels as a GPU fabric's
// gpu3.compute does (docs/training.md), so that the same training runs on
// these machines. Collectives here are the host programs above the NIC
// (roce/host_program.h); they take none of the GPU's SMs.
#include <cstdint>
#include <ostream>
#include <systemc>

#include "gpu/compute_engine.h"
#include "roce/roce_nic.h"

namespace incsim::roce {

class RoceHost : public RoceNic {
 public:
  RoceHost(sc_core::sc_module_name name, uint32_t endpoint, uint32_t ip, const NicConfig& cfg, net::PacketPool* pool)
      : RoceNic(name, endpoint, ip, cfg, pool), compute_("compute") {}

  gpu::ComputeEngine& compute() { return compute_; }
  // Packets delivered or acknowledged, and kernel time computed: a long
  // kernel is progress, not a stall.
  uint64_t progress() const override { return RoceNic::progress() + compute_.progress(); }
  void trace(sc_core::sc_trace_file* tf) const override {
    RoceNic::trace(tf);
    compute_.trace(tf);
  }
  uint64_t report_held(std::ostream& os) const override {
    const uint64_t held = RoceNic::report_held(os);
    compute_.report(os);
    return held;
  }

 private:
  gpu::ComputeEngine compute_;
};

}  // namespace incsim::roce
