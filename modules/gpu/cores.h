#pragma once
// The GPU's cores (its SMs) as the engine of collective programs: the block
// gpu3.cores, beside gpu3.copy_engine and gpu3.compute. Each rank of a
// program on the cores runs here as a CoresRank (cores_rank.h), as NCCL's
// kernels run one thread block per channel; what the ranks on one GPU share
// is this module's: the ALU that adds the data (fault.alu.block names it),
// and the waveform of the step and pass its first rank's first queue is
// sending.
#include <string>
#include <systemc>

#include "collectives/alu.h"
#include "core/trace.h"

namespace incsim::gpu {

class Cores : public sc_core::sc_module, public Traceable {
 public:
  // name: "cores", a child of the GPU named gpu_name.
  Cores(sc_core::sc_module_name name, const std::string& gpu_name);
  collectives::Alu& alu() { return alu_; }
  // gpu3.cores.step and .chunk: the running transfer's place in its queue
  // (its sends so far) and its pass, -1 before the first.
  void trace(sc_core::sc_trace_file* tf) const override;
  void show(int step, int pass) {
    step_ = step;
    pass_ = pass;
  }

 private:
  collectives::Alu alu_;
  int step_ = -1, pass_ = -1;
};

}  // namespace incsim::gpu
