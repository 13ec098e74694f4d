#pragma once
// One rank's operations as the RoCE hosts run them (Engine::RoceNic), at
// packet level (roce::HostProgram) and as flows (flow::RoceFlows): each
// operation's bytes cut into messages of MsgLen packets, and the order the
// messages go in. The operations of one queue stream message by message
// (the k-th message of an operation goes after the k-th of the one before
// it in the queue, and an operation completes after the one before it); a
// dependency waits for the whole operation; an aggregation keeps `window`
// messages ahead of its results (NetReduce §3.1). The engines move the
// messages and say when one is in; this says when each may go and when an
// operation is complete. Plain C++, no SystemC.
#include <cstdint>
#include <vector>

#include "collectives/layout.h"
#include "collectives/program.h"

namespace incsim::collectives {

class MessageOrder {
 public:
  struct Op {
    uint64_t bytes = 0;
    uint32_t messages = 0;
    uint32_t done_msgs = 0;  // handled: sent, received, or an aggregation's results in
    uint32_t posted = 0;     // an aggregation's messages sent
    int prev = -1, next = -1;  // in its queue
    int deps_left = 0;
    bool complete = false;
  };
  // What moves the messages.
  class Mover {
   public:
    virtual void post(int i, uint32_t m) = 0;  // sends message m of operation i
    // A receive: takes the messages staged for it that it may take now
    // (calling message_in for each).
    virtual void take_staged(int i) = 0;
    // Operation i is complete; its dependents and successor are woken.
    virtual void completed(int i) = 0;

   protected:
    ~Mover() = default;
  };

  MessageOrder() = default;
  MessageOrder(const Program& p, int r, uint32_t window);
  // A collective of `bytes` per rank in place, of elements of `elem_bytes`,
  // in messages of `msg_bytes`: each operation's bytes (its chunks, the
  // buffer split as NCCL splits it) and messages; nothing handled yet.
  void layout(uint64_t bytes, uint32_t elem_bytes, uint64_t msg_bytes);

  // Where message chunk c starts in the buffer, bytes (as layout split it).
  uint64_t chunk_offset(uint64_t c) const { return chunk_start(c, elems_, chunks_) * elem_bytes_; }
  const Op& operator[](int i) const { return ops_[static_cast<size_t>(i)]; }
  int size() const { return static_cast<int>(ops_.size()); }
  int left() const { return left_; }
  // May operation i handle its message m now?
  bool may_take(int i, uint32_t m) const;

  // Every operation looked at, as a collective starts.
  void start(Mover& mover);
  // A receive's message is whole and taken: a receive-and-send forwards it.
  // Wakes the operation and its successor; run() handles them.
  void message_in(int i, Mover& mover);
  // An aggregation's result message is in: its window moves on.
  void result_in(int i);
  // Handles the woken operations until none is left (once at a time: a
  // call from within returns at once).
  void run(Mover& mover);

 private:
  void wake(int i) { work_.push_back(i); }
  void advance(int i, Mover& mover);
  void complete(int i, Mover& mover);

  const Program* p_ = nullptr;
  int r_ = 0;
  uint32_t window_ = 1;
  uint64_t elems_ = 0, chunks_ = 1;  // layout's: elements per rank, its input's chunks
  uint32_t elem_bytes_ = 1;
  std::vector<Op> ops_;
  Dependents dependents_;
  std::vector<int> work_;  // operations to look at, last first
  int left_ = 0;
  bool running_ = false;
};

}  // namespace incsim::collectives
