#include "collectives/table_decoder.h"

#include <cassert>

namespace incsim::collectives {

void TableDecoder::start(const std::vector<Entry>& table, const TableView& view, const std::vector<ByteRange>& flows,
                         bool dataflow, Engine& engine) {
  table_ = &table;
  view_ = &view;
  engine_ = &engine;
  dataflow_ = dataflow;
  reduce_left_.resize(view.flows.size());
  gather_left_.resize(view.flows.size());
  for (size_t f = 0; f < view.flows.size(); ++f) {
    reduce_left_[f] = view.flows[f].reduce_children * flows[f].length;
    gather_left_[f] = view.flows[f].gathers ? flows[f].length : 0;
  }
  timestep_ = 1;
  head_ = 0;  // head_flow_ keeps the last run's until the first entry's
  sending_ = 0;
  finished_ = false;
  pending_.clear();
  if (!dataflow) return;
  // Every lane's queue holds all its shares without growing.
  lanes_.resize(static_cast<size_t>(view.lanes));
  for (Lane& l : lanes_) {
    l.queue.clear();
    l.head = 0;
  }
  std::vector<size_t> shares(lanes_.size());
  for (const TableView::Share& x : view.shares) ++shares[static_cast<size_t>(x.lane)];
  for (size_t l = 0; l < lanes_.size(); ++l) lanes_[l].queue.reserve(shares[l]);
  for (int i = 0; i < static_cast<int>(table.size()); ++i)
    if (table[static_cast<size_t>(i)].op != Op::Nop) pending_.push_back(i);
  head_ = static_cast<int>(table.size() - pending_.size());  // NOPs hold nothing in dataflow mode
}

bool TableDecoder::ready(const Entry& e) const {
  const size_t f = static_cast<size_t>(e.flow == kNil ? 0 : e.flow);
  if (e.op == Op::Reduce && e.parent != kNil) return reduce_left_[f] == 0;  // children's partial sums are in
  if (e.op == Op::Gather && !e.children.empty()) return view_->flows[f].root ? reduce_left_[f] == 0 : gather_left_[f] == 0;
  return true;  // a NOP, or an entry that only records what arrives
}

void TableDecoder::advance() {
  const std::vector<Entry>& table = *table_;
  if (dataflow_) {
    // Every pending entry whose dependencies are met issues now.
    size_t keep = 0;
    for (size_t i = 0; i < pending_.size() && !finished_; ++i) {
      const int index = pending_[i];
      const Entry& e = table[static_cast<size_t>(index)];
      if (ready(e)) {
        head_flow_ = e.flow;
        issue(e, index);
        ++head_;
      } else {
        pending_[keep++] = index;
      }
    }
    pending_.resize(keep);
    maybe_finish();
    return;
  }
  while (!finished_ && head_ < static_cast<int>(table.size())) {
    const Entry& e = table[static_cast<size_t>(head_)];
    head_flow_ = e.flow;
    if (e.step > timestep_) {
      if (sending_ > 0 || !engine_->lockstep_over()) return;  // sent() or the lockstep count calls again
      timestep_ = e.step;
      continue;
    }
    if (!ready(e)) return;  // arrived() calls again
    issue(e, head_);
    ++head_;
  }
  if (head_ == static_cast<int>(table.size())) head_flow_ = kNil;
  maybe_finish();
}

void TableDecoder::issue(const Entry& e, int index) {
  engine_->issued(e, index);
  if (e.op == Op::Nop) {
    engine_->lockstep();
    return;
  }
  const TableView& v = *view_;
  for (uint32_t s = v.first_share[static_cast<size_t>(index)]; s < v.first_share[static_cast<size_t>(index) + 1]; ++s) {
    engine_->holds(s);
    ++sending_;
    if (engine_->empty(s)) {  // nothing to read
      --sending_;
      engine_->released(s);
      continue;
    }
    if (!dataflow_) {
      engine_->activate(s);
      continue;
    }
    Lane& l = lanes_[static_cast<size_t>(v.shares[s].lane)];
    l.queue.push_back(s);
    if (l.queue.size() - l.head == 1) engine_->activate(s);  // the lane was idle
  }
}

void TableDecoder::sent(uint32_t s) {
  --sending_;
  engine_->released(s);
  if (dataflow_) {
    // The lane's next message starts (an empty share never joins a lane).
    Lane& l = lanes_[static_cast<size_t>(view_->shares[s].lane)];
    if (++l.head < l.queue.size()) engine_->activate(l.queue[l.head]);
  }
  advance();
}

bool TableDecoder::arrived(int flow, bool reduce, uint64_t bytes) {
  uint64_t& left = (reduce ? reduce_left_ : gather_left_)[static_cast<size_t>(flow)];
  assert(left >= bytes);
  left -= bytes;
  return left == 0;
}

TableDecoder::Awaited TableDecoder::awaited() const {
  Awaited a;
  for (size_t f = 0; f < reduce_left_.size(); ++f) {
    a.reduce += reduce_left_[f];
    a.gather += gather_left_[f];
    a.flows += reduce_left_[f] > 0 || gather_left_[f] > 0;
  }
  return a;
}

void TableDecoder::maybe_finish() {
  if (finished_ || head_ < static_cast<int>(table_->size()) || sending_ > 0) return;
  for (size_t f = 0; f < reduce_left_.size(); ++f)
    if (reduce_left_[f] > 0 || gather_left_[f] > 0) return;
  finished_ = true;
  engine_->finished();
}

}  // namespace incsim::collectives
