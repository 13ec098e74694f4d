#pragma once
// The GPU's compute (its SMs running a training step's kernels, gpu3.compute):
// kernels run one at a time in the order they are queued, each for the time
// the compute model gives it (modules/training/compute.h), and say when they
// end. Communication runs beside it: the copy engine and the NIC are other
// engines and take nothing from it, but a collective on the GPU's cores (the
// software ring, NCCL's protocols, a program file) holds one SM per thread
// block while it runs (NCCL launches one block per channel): with the GPU's
// SMs known (set_sms), a kernel then runs at (SMs - blocks) / SMs of its
// speed, its remaining work at the new rate from the moment a collective
// starts or ends (share), so its end moves (docs/training.md, contention).
//
// A long kernel is progress, not a stall: progress() counts the kernel time
// done, the running kernel's so far, so the stall detector sees it move.
#include <cstdint>
#include <deque>
#include <functional>
#include <ostream>
#include <systemc>

#include "core/process.h"
#include "core/trace.h"

namespace incsim::gpu {

class ComputeEngine : public sc_core::sc_module, public Traceable {
 public:
  // What a kernel computes, for the waveform (Node: a Chakra trace's
  // compute node, whose index in its rank's file is the `layer`).
  enum class Phase : int { Idle = 0, Forward = 1, Backward = 2, Update = 3, Node = 4 };

  explicit ComputeEngine(sc_core::sc_module_name name);

  // Queues a kernel of `layer` in `phase` that runs for `duration` once the
  // kernels queued before it have ended; on_done when it ends.
  void run(Phase phase, int layer, const sc_core::sc_time& duration, std::function<void()> on_done);
  // A workload that runs kernels says so before the waveform is opened: only
  // then does the engine appear in it.
  void use() { used_ = true; }
  // The SMs a kernel runs on at full speed; 0 (the default): collectives
  // take none from it.
  void set_sms(int sms) { sms_ = sms; }
  // A collective on the cores starts (blocks > 0) or ends (blocks < 0) on
  // this GPU: the running kernel's remaining work goes on at the new rate.
  void share(int blocks);
  // The kernel that just ended, from its start: valid in its on_done.
  const sc_core::sc_time& took() const { return took_; }

  uint64_t progress() const;  // ns of kernel time done
  uint64_t kernels() const { return kernels_; }
  void trace(sc_core::sc_trace_file* tf) const override;
  // A line on the running kernel and the queue, or nothing when idle.
  void report(std::ostream& os) const;

 private:
  struct Kernel {
    Phase phase;
    int layer;
    sc_core::sc_time duration;
    std::function<void()> on_done;
  };
  void next();  // the running kernel ended: start the next
  void begin();  // the front kernel starts now
  void plan();   // its end at the current rate, from now
  std::deque<Kernel> queue_;  // the front runs
  bool running_ = false;
  sc_core::sc_time started_, took_;
  // The running kernel: its work left at full speed (ps) as of mark_, the
  // rate since then, and the end that gives.
  int sms_ = 0, taken_ = 0;
  double rate_ = 1, left_ps_ = 0;
  sc_core::sc_time mark_, end_;
  uint64_t done_ps_ = 0, kernels_ = 0;
  bool used_ = false;
  int phase_ = 0, layer_ = -1;  // traced
  Wakeup wake_;
};

}  // namespace incsim::gpu
