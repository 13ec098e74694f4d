#include "collectives/message_order.h"

#include <algorithm>

namespace incsim::collectives {

MessageOrder::MessageOrder(const Program& p, int r, uint32_t window)
    : p_(&p), r_(r), window_(window), ops_(static_cast<size_t>(p.op_count(r))), dependents_(p, r) {
  std::vector<int> last_of_queue;
  for (int i = 0; i < size(); ++i) {
    const Operation& o = p.op(r, i);
    Op& x = ops_[static_cast<size_t>(i)];
    if (o.queue >= last_of_queue.size()) last_of_queue.resize(o.queue + 1u, -1);
    x.prev = last_of_queue[o.queue];
    if (x.prev >= 0) ops_[static_cast<size_t>(x.prev)].next = i;
    last_of_queue[o.queue] = i;
  }
  work_.reserve(4 * ops_.size() + 4);
}

void MessageOrder::layout(uint64_t bytes, uint32_t elem_bytes, uint64_t msg_bytes) {
  elems_ = bytes / elem_bytes;
  chunks_ = chunk_limit(*p_, r_, Buffer::Input);
  elem_bytes_ = elem_bytes;
  for (int i = 0; i < size(); ++i) {
    const Operation& o = p_->op(r_, i);
    Op& x = ops_[static_cast<size_t>(i)];
    const ChunkRef c = !o.dst.empty() ? o.dst : o.src;
    x.bytes = c.empty() ? 0 : chunk_offset(c.index + c.count) - chunk_offset(c.index);
    x.messages = static_cast<uint32_t>((x.bytes + msg_bytes - 1) / msg_bytes);
    x.done_msgs = x.posted = 0;
    x.deps_left = static_cast<int>(o.dep_count);
    x.complete = false;
  }
  left_ = size();
  work_.clear();
}

bool MessageOrder::may_take(int i, uint32_t m) const {
  const Op& o = ops_[static_cast<size_t>(i)];
  if (o.deps_left) return false;
  if (o.prev < 0) return true;
  const Op& before = ops_[static_cast<size_t>(o.prev)];
  return before.complete || (before.messages > 0 && before.done_msgs > std::min(m, before.messages - 1));
}

void MessageOrder::start(Mover& mover) {
  for (int i = 0; i < size(); ++i) wake(i);
  run(mover);
}

void MessageOrder::message_in(int i, Mover& mover) {
  Op& o = ops_[static_cast<size_t>(i)];
  ++o.done_msgs;
  // Forward what just arrived (reduced with ours, or final).
  if (sends(p_->op(r_, i).kind)) mover.post(i, o.done_msgs - 1);
  if (o.next >= 0) wake(o.next);
  wake(i);  // it may be complete
}

void MessageOrder::result_in(int i) {
  Op& o = ops_[static_cast<size_t>(i)];
  ++o.done_msgs;
  if (o.next >= 0) wake(o.next);
  wake(i);  // the window moves on; it may be complete
}

void MessageOrder::run(Mover& mover) {
  if (running_) return;
  running_ = true;
  while (!work_.empty()) {
    const int i = work_.back();
    work_.pop_back();
    advance(i, mover);
  }
  running_ = false;
}

// A send posts the messages its queue lets it, an aggregation its window's,
// a receive takes what is in and may be taken.
void MessageOrder::advance(int i, Mover& mover) {
  Op& o = ops_[static_cast<size_t>(i)];
  if (o.complete || o.deps_left) return;
  const OpKind kind = p_->op(r_, i).kind;
  if (kind == OpKind::Send) {
    const uint32_t was = o.done_msgs;
    while (o.done_msgs < o.messages && may_take(i, o.done_msgs)) mover.post(i, o.done_msgs++);
    if (o.done_msgs != was && o.next >= 0) wake(o.next);
  } else if (kind == OpKind::Aggregate) {
    while (o.posted < o.messages && o.posted < o.done_msgs + window_ && may_take(i, o.posted)) mover.post(i, o.posted++);
  } else {
    mover.take_staged(i);
  }
  const bool before_done = o.prev < 0 || ops_[static_cast<size_t>(o.prev)].complete;
  if (o.done_msgs == o.messages && before_done && !o.complete) complete(i, mover);
}

void MessageOrder::complete(int i, Mover& mover) {
  Op& o = ops_[static_cast<size_t>(i)];
  o.complete = true;
  for (int d : dependents_.of(i))
    if (--ops_[static_cast<size_t>(d)].deps_left == 0) wake(d);
  if (o.next >= 0) wake(o.next);
  --left_;
  mover.completed(i);
}

}  // namespace incsim::collectives
