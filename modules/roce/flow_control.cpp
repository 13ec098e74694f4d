#include "flow_control.h"

#include <algorithm>

namespace incsim::roce {

NetReduceHost::NetReduceHost(RoceNic* nic, int rank, int send_qp, int recv_qp, const HostConfig& cfg,
                             const collectives::DataPattern* pattern, collectives::DType dtype, collectives::RedOp op)
    : nic_(nic), rank_(rank), send_qp_(send_qp), recv_qp_(recv_qp), cfg_(cfg), pattern_(pattern), dtype_(dtype),
      op_(op) {}

void NetReduceHost::start(uint64_t bytes, std::function<void()> done) {
  msg_base_ += messages_;
  bytes_ = bytes;
  packets_ = (bytes + cfg_.mtu_payload - 1) / cfg_.mtu_payload;
  messages_ = static_cast<uint32_t>((packets_ + cfg_.msg_len - 1) / cfg_.msg_len);
  posted_ = results_ = 0;
  received_ = wrong_ = 0;
  trace_window_ = 0;
  done_ = std::move(done);
  nic_->reset_work();
  nic_->reserve(send_qp_, messages_);
  while (posted_ < std::min(cfg_.window, messages_)) post(posted_);
}

void NetReduceHost::post(uint32_t k) {
  WorkRequest w;
  w.id = k;
  const uint64_t first = static_cast<uint64_t>(k) * cfg_.msg_len;
  w.packets = static_cast<uint32_t>(std::min<uint64_t>(cfg_.msg_len, packets_ - first));
  const uint64_t tail = bytes_ - (first + w.packets - 1) * cfg_.mtu_payload;
  w.last_bytes = static_cast<uint32_t>(std::min<uint64_t>(tail, cfg_.mtu_payload));
  w.has_ina = true;
  w.ina.inet_tag = eth::kInetTag;
  w.ina.ring_id = cfg_.ring_id;
  w.ina.rank = static_cast<uint16_t>(rank_);
  w.ina.msg_id = msg_base_ + k;
  w.ina.msg_len = w.packets;
  w.remote_va = first * cfg_.mtu_payload;  // the result lands where the gradient came from
  nic_->post(send_qp_, w);
  ++posted_;
}

void NetReduceHost::fill(int, const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) {
  const uint64_t first = (wr.id * cfg_.msg_len + index) * (cfg_.mtu_payload / 4);
  pattern_->fill(dtype_, rank_, first, bytes / 4, payload);
}

void NetReduceHost::deliver(int, uint64_t va, const uint8_t* payload, uint32_t bytes) {
  wrong_ += pattern_->mismatches(dtype_, op_, payload, va / 4, bytes / 4, -1);
  ++received_;
  // A result message is whole when its last packet is in (RC delivers in order).
  if (received_ % cfg_.msg_len != 0 && received_ != packets_) return;
  trace_window_ = static_cast<int>(++results_);
  if (posted_ < messages_) post(posted_);
  if (results_ == messages_ && done_) done_();
}

uint64_t NetReduceHost::wrong() const {
  // Elements never received count as wrong, as nccl-tests would see them.
  const uint64_t missing = (packets_ - std::min(received_, packets_)) * (cfg_.mtu_payload / 4);
  return wrong_ + std::min<uint64_t>(missing, bytes_ / 4);
}

RingHost::RingHost(RoceNic* nic, int rank, int ranks, int send_qp, int recv_qp, const HostConfig& cfg,
                   const collectives::DataPattern* pattern, collectives::DType dtype, collectives::RedOp op)
    : nic_(nic), rank_(rank), ranks_(ranks), send_qp_(send_qp), recv_qp_(recv_qp), cfg_(cfg), pattern_(pattern),
      dtype_(dtype), op_(op) {}

uint32_t RingHost::messages_in(int c) const {
  const uint64_t msg_bytes = static_cast<uint64_t>(cfg_.msg_len) * cfg_.mtu_payload;
  return static_cast<uint32_t>((chunk_bytes(c) + msg_bytes - 1) / msg_bytes);
}

void RingHost::start(uint64_t bytes, std::function<void()> done) {
  elements_ = bytes / 4;
  buf_.assign(bytes, 0);
  pattern_->fill(dtype_, rank_, 0, elements_, buf_.data());
  wrong_ = 0;
  expected_ = received_ = 0;
  for (int step = 0; step < 2 * (ranks_ - 1); ++step) {
    const int c = ((rank_ - 1 - step) % ranks_ + ranks_) % ranks_;
    expected_ += (chunk_bytes(c) + cfg_.mtu_payload - 1) / cfg_.mtu_payload;
  }
  finished_ = false;
  trace_step_ = 0;
  done_ = std::move(done);
  nic_->reset_work();
  uint64_t wrs = 0;
  for (int c = 0; c < ranks_; ++c) wrs += messages_in(c);
  nic_->reserve(send_qp_, wrs * 2);
  const int c0 = rank_;
  for (uint32_t j = 0; j < messages_in(c0); ++j) post(0, j);
  if (expected_ == 0) finish();
}

void RingHost::finish() {
  finished_ = true;
  wrong_ = pattern_->mismatches(dtype_, op_, buf_.data(), 0, elements_, -1);
  if (done_) done_();
}

void RingHost::post(int step, uint32_t j) {
  const int c = ((rank_ - step) % ranks_ + ranks_) % ranks_;
  const uint64_t msg_bytes = static_cast<uint64_t>(cfg_.msg_len) * cfg_.mtu_payload;
  const uint64_t off = j * msg_bytes;
  const uint64_t len = std::min(msg_bytes, chunk_bytes(c) - off);
  WorkRequest w;
  w.id = (static_cast<uint64_t>(step) << 32) | j;
  w.packets = static_cast<uint32_t>((len + cfg_.mtu_payload - 1) / cfg_.mtu_payload);
  w.last_bytes = static_cast<uint32_t>(len - (w.packets - 1) * uint64_t{cfg_.mtu_payload});
  w.remote_va = (static_cast<uint64_t>(step) << kStepShift) | (chunk_begin(c) + off);
  nic_->post(send_qp_, w);
  if (step > trace_step_) trace_step_ = step;
}

void RingHost::fill(int, const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) {
  const uint64_t at = (wr.remote_va & ((1ull << kStepShift) - 1)) + uint64_t{index} * cfg_.mtu_payload;
  std::copy(buf_.begin() + at, buf_.begin() + at + bytes, payload);
}

void RingHost::deliver(int, uint64_t va, const uint8_t* payload, uint32_t bytes) {
  const int step = static_cast<int>(va >> kStepShift);
  const uint64_t at = va & ((1ull << kStepShift) - 1);
  if (step < ranks_ - 1) collectives::reduce_bytes(dtype_, op_, buf_.data() + at, payload, bytes);
  else std::copy(payload, payload + bytes, buf_.begin() + at);
  // The chunk this step received, and whether this packet ends a message.
  const int c = ((rank_ - 1 - step) % ranks_ + ranks_) % ranks_;
  const uint64_t msg_bytes = static_cast<uint64_t>(cfg_.msg_len) * cfg_.mtu_payload;
  const uint64_t end = at + bytes - chunk_begin(c);
  const bool last_of_message = end % msg_bytes == 0 || end == chunk_bytes(c);
  // Forward what just arrived (reduced with ours, or final).
  if (last_of_message && step + 1 < 2 * (ranks_ - 1)) post(step + 1, static_cast<uint32_t>((end - 1) / msg_bytes));
  if (++received_ == expected_) finish();
}

}  // namespace incsim::roce
