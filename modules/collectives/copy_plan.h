#pragma once
// One rank's copy-engine operations (Engine::CopyEngine) as both fidelities
// run them, gpu::CopyCollective at packet level and flow::CopyFlows as
// flows: each operation's message blocks, whether the engine issues them,
// the multicast that forwards a read's results as they land, and the order
// operations start and end in. The engines add what moves the blocks.
// Plain C++, no SystemC.
#include <cstdint>
#include <vector>

#include "collectives/program.h"

namespace incsim::collectives {

class CopyPlan {
 public:
  struct Op {
    uint64_t lo = 0, hi = 0;  // the message blocks it moves or receives
    bool issues = false;      // the engine issues its blocks (copy_issues)
    bool streamed = false;    // a multicast of a read's results, block by block as they land
    int stream_to = -1;       // a read: the multicast that forwards its results
    int deps_left = 0;
    bool started = false, done = false;
  };
  CopyPlan() = default;
  // Rank r's operations of p for a message of `blocks` blocks of the
  // engines' size.
  CopyPlan(const Program& p, int r, uint64_t blocks);

  Op& operator[](int i) { return ops_[static_cast<size_t>(i)]; }
  const Op& operator[](int i) const { return ops_[static_cast<size_t>(i)]; }
  int size() const { return static_cast<int>(ops_.size()); }
  // Operations not done.
  int left() const { return left_; }

  // Starts every operation whose dependencies are done, marking it started
  // and calling begin(i); the issuing operations of a queue one after
  // another, as the engine runs its descriptors. An advance asked for while
  // one runs (an operation that ends at once) makes it pass again.
  template <class Begin>
  void advance(Begin&& begin);
  // Operation i has ended: its dependents wait for it no more. Returns the
  // multicast that forwards i's results if it must end now too (it has not
  // ended first), else -1.
  int finish(int i);

 private:
  const Program* p_ = nullptr;
  int r_ = 0;
  std::vector<Op> ops_;
  Dependents dependents_;
  std::vector<uint16_t> held_;  // in a pass: queues with an issuing operation not done
  int left_ = 0;
  bool advancing_ = false, again_ = false;
};

template <class Begin>
void CopyPlan::advance(Begin&& begin) {
  if (advancing_) {
    again_ = true;
    return;
  }
  advancing_ = true;
  do {
    again_ = false;
    held_.clear();
    for (int i = 0; i < size(); ++i) {
      Op& x = ops_[static_cast<size_t>(i)];
      const uint16_t queue = p_->op(r_, i).queue;
      bool queue_held = false;
      for (uint16_t q : held_) queue_held = queue_held || q == queue;
      if (!x.started && !x.streamed && x.deps_left == 0 && !(x.issues && queue_held)) {
        x.started = true;
        begin(i);
      }
      if (x.issues && !x.done && !queue_held) held_.push_back(queue);
    }
  } while (again_);
  advancing_ = false;
}

}  // namespace incsim::collectives
