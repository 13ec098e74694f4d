#pragma once
// What runs a program as flows (--fidelity flow, docs/flow.md), whichever
// engine its operations name: the GPUs' cores (cores_flows.h), their copy
// engines (copy_flows.h), the NICs' schedule tables (nic_flows.h) or the
// RoCE hosts (roce_flows.h); and what their runs share. Plain C++, no SystemC.
#include <cstdint>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collectives/nccl.h"
#include "collectives/program.h"
#include "core/hash.h"

namespace incsim::flow {

class Network;

class Executor {
 public:
  virtual ~Executor() = default;
  struct Result {
    double time_ns = 0;
    uint64_t flows = 0;
    size_t most_active = 0;  // flows in flight at once, at most
    collectives::Protocol proto = collectives::Protocol::Simple;
    uint64_t transfers = 0;
    // The message's passes per channel, and the passes the runs simulated
    // in all; where they extrapolated, the period each pass after the
    // first steady_from adds (else 0), and how much the periods of the
    // span's two halves differ, relative to it.
    uint64_t passes = 0, simulated_passes = 0, steady_from = 0;
    double pass_ns = 0, period_change = 0;
    // Under flow.channel_classes (channel_classes.h): the program's
    // channels and parts, the classes whose first parts ran for them (0:
    // every part ran), and what the row's note says of them.
    int channels = 0, parts = 0, classes = 0;
    std::string classes_note;
    // The graph's link directions it sent over, and the bytes each carried,
    // headers and acknowledgements included (FlowGraph::carried).
    std::vector<int> links;
    std::vector<double> link_bytes;
  };
  // Told now and then while run() runs: the simulated time of the run under
  // way, ns, and how to learn the share of the operations it simulates
  // issued so far, which scans every rank: only for a progress line that is
  // due.
  using Progress = std::function<void(const std::function<double()>& fraction, double now_ns)>;
  // Runs one message of `bytes` from time 0 to the last rank's end.
  virtual Result run(uint64_t bytes, const Progress& progress = {}) = 0;
  // A run under way on a network other runs share (start). It must live
  // until idle: its last rank's end may leave callbacks behind (a slot's
  // head flag on its way back) that refer to it.
  class Running {
   public:
    virtual ~Running() = default;
    virtual bool idle() const = 0;
    // Its flows and callbacks are on `n` now (Network::adopt): it starts the
    // rest there.
    virtual void move_to(Network& n) = 0;
  };
  using Done = std::function<void(const Result&)>;
  // On `on`, the shared network the executor was made on (shared.h) or a
  // replica of it: starts one message of `bytes` at its now. `done` gets
  // its result (time from the start; no links: the network's count is
  // everyone's) when its last rank ends, from inside the network's events:
  // it must not start another run.
  virtual std::unique_ptr<Running> start(uint64_t bytes, Network& on, Done done) = 0;
  virtual const collectives::Program& program() const = 0;
};

// One memory access's time: its latency and a jitter uniform in [0,
// jitter_ns), the n-th draw from the seed (the draws desynchronise the
// channels, as packet level's memory does).
inline double memory_access(double mem_ns, double jitter_ns, uint64_t seed, uint64_t n) {
  const double u = static_cast<double>(splitmix64(seed ^ splitmix64(n)) >> 11) * 0x1.0p-53;
  return mem_ns + u * jitter_ns;
}

// The expected last of `packets` memory operations of `accesses` accesses
// each (1 or 2), issued evenly over `spread` ns, each access its latency
// and its own jitter: a fence waits for the slowest acknowledgement, a
// receiver polls every line, a read's answers wait for the slowest member.
double last_access(double mem_ns, double jitter_ns, double spread, uint64_t packets, int accesses);

using collectives::Dependents;

// A first-in, first-out queue on one vector, which allocates nothing until
// something is queued (std::deque allocates a block for every queue, and a
// cluster's run has a queue per rank and channel) and reuses its storage
// once it empties. The front's place stays the front until popped, so its
// element may be moved out and run while others are queued behind it.
template <class T>
class Fifo {
 public:
  bool empty() const { return head_ == v_.size(); }
  size_t size() const { return v_.size() - head_; }
  T& front() { return v_[head_]; }
  const T& back() const { return v_.back(); }
  void push_back(T x) { v_.push_back(std::move(x)); }
  void pop_front() {
    v_[head_] = T{};
    if (++head_ == v_.size()) {
      v_.clear();
      head_ = 0;
    } else if (head_ >= 64 && 2 * head_ >= v_.size()) {  // half is popped: drop it
      v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

 private:
  std::vector<T> v_;
  size_t head_ = 0;
};

}  // namespace incsim::flow
