#include "compute_engine.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace incsim::gpu {

ComputeEngine::ComputeEngine(sc_core::sc_module_name name) : sc_module(name) {
  spawn_method("run", [this] { next(); }, wake_);
}

void ComputeEngine::run(Phase phase, int layer, const sc_core::sc_time& duration, std::function<void()> on_done) {
  queue_.push_back({phase, layer, duration, std::move(on_done)});
  if (running_) return;
  running_ = true;
  begin();
}

void ComputeEngine::begin() {
  const Kernel& k = queue_.front();
  started_ = mark_ = sc_core::sc_time_stamp();
  phase_ = static_cast<int>(k.phase);
  layer_ = k.layer;
  left_ps_ = static_cast<double>(k.duration.value());
  plan();
}

void ComputeEngine::plan() {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  // At full speed exactly the kernel's duration: no rounding.
  end_ = now + (rate_ == 1 && mark_ == started_
                    ? queue_.front().duration
                    : sc_core::sc_time::from_value(static_cast<sc_core::sc_time::value_type>(std::llround(left_ps_ / rate_))));
  wake_.at(end_);
}

void ComputeEngine::share(int blocks) {
  taken_ += blocks;
  if (sms_ <= 0) return;
  // The SMs the collectives leave; one at least (a block waits for an SM).
  const double rate = static_cast<double>(std::max(sms_ - taken_, 1)) / sms_;
  if (rate == rate_) return;
  if (running_) {
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    left_ps_ = std::max(0.0, left_ps_ - static_cast<double>((now - mark_).value()) * rate_);
    mark_ = now;
  }
  rate_ = rate;
  if (running_) plan();
}

void ComputeEngine::next() {
  wake_.fired();
  if (!running_) return;
  // The kernel's end moved later since this wake-up was set.
  if (sc_core::sc_time_stamp() < end_) {
    wake_.at(end_);
    return;
  }
  Kernel done = std::move(queue_.front());
  queue_.pop_front();
  took_ = sc_core::sc_time_stamp() - started_;
  done_ps_ += took_.value();
  ++kernels_;
  running_ = !queue_.empty();
  phase_ = 0;
  layer_ = -1;
  if (running_) begin();
  if (done.on_done) done.on_done();  // last: it may queue more
}

uint64_t ComputeEngine::progress() const {
  const uint64_t running = running_ ? (sc_core::sc_time_stamp() - started_).value() : 0;
  return (done_ps_ + running) / 1000;
}

void ComputeEngine::trace(sc_core::sc_trace_file* tf) const {
  if (!used_) return;
  const std::string me = name();
  sc_core::sc_trace(tf, phase_, me + ".phase");
  sc_core::sc_trace(tf, layer_, me + ".layer");
  if (sms_ > 0) sc_core::sc_trace(tf, taken_, me + ".collective_sms");
}

void ComputeEngine::report(std::ostream& os) const {
  if (!running_) return;
  static const char* const kPhase[] = {"idle", "forward", "backward", "update", "trace"};
  const Kernel& k = queue_.front();
  os << "  " << name() << ": " << kPhase[static_cast<int>(k.phase)] << " kernel of "
     << (k.phase == Phase::Node ? "node " : "layer ") << k.layer << " runs until " << end_.to_string();
  if (rate_ < 1)
    os << " (at " << std::max(sms_ - taken_, 1) << " of its " << sms_ << " SMs: collectives hold " << taken_ << ")";
  os << ", " << queue_.size() - 1 << " kernels queued\n";
}

}  // namespace incsim::gpu
