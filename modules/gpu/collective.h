#pragma once
// One collective operation across a set of GPUs, run once per message size.
#include <cstdint>
#include <functional>
#include <string>
#include <systemc>

namespace incsim::gpu {

class Collective {
 public:
  virtual ~Collective() = default;
  // Starts at the current simulated time; calls on_done once when every GPU
  // has finished and every write it issued is acknowledged.
  virtual void start(uint64_t bytes, std::function<void()> on_done) = 0;
  virtual uint64_t wrong() const = 0;       // elements that differ from the reference
  virtual std::string redop() const { return "sum"; }
  // Non-empty when the run failed in a way the hardware reports (a copy
  // engine error, Klenk §IV-F3); the simulation pauses.
  virtual std::string error() const { return {}; }
  // How much of the running operation is done, in [0, 1], for the progress
  // line: the share of what it must inject that it has (ring transfers
  // sent, copy engine blocks issued, NIC schedule entries issued), known
  // exactly from the start. Neither the machine's progress count (acks,
  // flags and partials vary with the run) nor the bound (a lower bound the
  // time exceeds by 1.1-3x, so it would pass 100%) gives that.
  virtual double done_fraction() const = 0;
  // Thread blocks the operation holds on each of its GPUs' SMs while it
  // runs: the cores' channels (NCCL launches one block per channel); none
  // for the copy engines and the NICs, which leave the SMs to compute.
  virtual int sm_blocks() const { return 0; }
  // Waveform state of the collective's own blocks (a NIC's counters).
  virtual void trace(sc_core::sc_trace_file*) const {}
};

}  // namespace incsim::gpu
