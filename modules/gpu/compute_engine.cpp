#include "compute_engine.h"

#include <utility>

namespace incsim::gpu {

ComputeEngine::ComputeEngine(sc_core::sc_module_name name) : sc_module(name) {
  spawn_method("run", [this] { next(); }, &wake_.event);
}

void ComputeEngine::run(Phase phase, int layer, const sc_core::sc_time& duration, std::function<void()> on_done) {
  queue_.push_back({phase, layer, duration, std::move(on_done)});
  if (running_) return;
  running_ = true;
  started_ = sc_core::sc_time_stamp();
  phase_ = static_cast<int>(phase);
  layer_ = layer;
  wake_.after(duration);
}

void ComputeEngine::next() {
  wake_.fired();
  Kernel done = std::move(queue_.front());
  queue_.pop_front();
  done_ps_ += done.duration.value();
  ++kernels_;
  running_ = !queue_.empty();
  phase_ = running_ ? static_cast<int>(queue_.front().phase) : 0;
  layer_ = running_ ? queue_.front().layer : -1;
  if (running_) {
    started_ = sc_core::sc_time_stamp();
    wake_.after(queue_.front().duration);
  }
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
}

void ComputeEngine::report(std::ostream& os) const {
  if (!running_) return;
  static const char* const kPhase[] = {"idle", "forward", "backward", "update", "trace"};
  const Kernel& k = queue_.front();
  os << "  " << name() << ": " << kPhase[static_cast<int>(k.phase)] << " kernel of "
     << (k.phase == Phase::Node ? "node " : "layer ") << k.layer
     << " runs until " << (started_ + k.duration).to_string() << ", " << queue_.size() - 1 << " kernels queued\n";
}

}  // namespace incsim::gpu
