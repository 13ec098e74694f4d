#include "flow_control.h"

#include <algorithm>
#include <cstring>

namespace incsim::roce {

NetReducePhase::NetReducePhase(RoceNic* nic, int send_qp, uint16_t ring_id, int rank, const HostConfig& cfg)
    : nic_(nic), send_qp_(send_qp), ring_id_(ring_id), rank_(rank), cfg_(cfg) {}

void NetReducePhase::start(uint8_t* region, uint64_t bytes, std::function<void()> done) {
  msg_base_ += messages_;
  region_ = region;
  bytes_ = bytes;
  packets_ = (bytes + cfg_.mtu_payload - 1) / cfg_.mtu_payload;
  messages_ = static_cast<uint32_t>((packets_ + cfg_.msg_len - 1) / cfg_.msg_len);
  posted_ = results_ = 0;
  received_ = 0;
  trace_window_ = 0;
  done_ = std::move(done);
  nic_->reset_work(send_qp_);
  nic_->reserve(send_qp_, messages_);
  while (posted_ < std::min(cfg_.window, messages_)) post(posted_);
  if (messages_ == 0 && done_) done_();
}

void NetReducePhase::post(uint32_t k) {
  WorkRequest w;
  w.id = k;
  const uint64_t first = static_cast<uint64_t>(k) * cfg_.msg_len;
  w.packets = static_cast<uint32_t>(std::min<uint64_t>(cfg_.msg_len, packets_ - first));
  const uint64_t tail = bytes_ - (first + w.packets - 1) * cfg_.mtu_payload;
  w.last_bytes = static_cast<uint32_t>(std::min<uint64_t>(tail, cfg_.mtu_payload));
  w.has_ina = true;
  w.ina.inet_tag = eth::kInetTag;
  w.ina.ring_id = ring_id_;
  w.ina.rank = static_cast<uint16_t>(rank_);
  w.ina.msg_id = msg_base_ + k;
  w.ina.msg_len = w.packets;
  w.remote_va = first * cfg_.mtu_payload;  // the result lands where the gradient came from
  nic_->post(send_qp_, w);
  ++posted_;
}

void NetReducePhase::fill(const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) const {
  std::memcpy(payload, region_ + (wr.id * cfg_.msg_len + index) * cfg_.mtu_payload, bytes);
}

void NetReducePhase::deliver(uint64_t va, const uint8_t* payload, uint32_t bytes) {
  // A result's address comes from a RETH the FPGA may have rebuilt (§3.3);
  // one outside the region is a model error (a NIC would refuse it).
  sc_assert(va <= bytes_ && bytes <= bytes_ - va);
  std::memcpy(region_ + va, payload, bytes);
  ++received_;
  // A result message is whole when its last packet is in (RC delivers in order).
  if (received_ % cfg_.msg_len != 0 && received_ != packets_) return;
  trace_window_ = static_cast<int>(++results_);
  if (posted_ < messages_) post(posted_);
  if (results_ == messages_ && done_) done_();
}

RingPhase::RingPhase(RoceNic* nic, int send_qp, int rank, int ranks, const HostConfig& cfg, collectives::DType dtype,
                     collectives::RedOp op)
    : nic_(nic), send_qp_(send_qp), rank_(rank), ranks_(ranks), cfg_(cfg), dtype_(dtype), op_(op) {}

uint32_t RingPhase::messages_in(int c) const {
  const uint64_t msg_bytes = static_cast<uint64_t>(cfg_.msg_len) * cfg_.mtu_payload;
  return static_cast<uint32_t>((chunk_bytes(c) + msg_bytes - 1) / msg_bytes);
}

int RingPhase::chunk_of(int step, bool received) const {
  return ((rank_ - step - (received ? 1 : 0)) % ranks_ + ranks_) % ranks_;
}

void RingPhase::start(uint8_t* region, uint64_t bytes, int first, int last, std::function<void()> done, int gate,
                      std::function<void()> gate_ready) {
  region_ = region;
  bytes_ = bytes;
  first_ = first;
  last_ = last;
  gate_ = gated_step_ = gate;
  expected_ = received_ = before_gate_ = 0;
  completed_ = false;
  for (int step = first; step < last; ++step) {
    const uint64_t packets = (chunk_bytes(chunk_of(step, true)) + cfg_.mtu_payload - 1) / cfg_.mtu_payload;
    expected_ += packets;
    if (step < gate) before_gate_ += packets;
  }
  trace_step_ = first;
  done_ = std::move(done);
  gate_ready_ = std::move(gate_ready);
  nic_->reset_work(send_qp_);
  uint64_t wrs = 0;
  for (int c = 0; c < ranks_; ++c) wrs += messages_in(c);
  nic_->reserve(send_qp_, wrs * 2);
  running_ = true;
  if (first < last && first != gate)
    for (uint32_t j = 0; j < messages_in(chunk_of(first, false)); ++j) post(first, j);
  if (gate >= 0 && before_gate_ == 0 && gate_ready_) gate_ready_();
  if (expected_ == 0 && gate_ < 0) complete();
  // What the predecessor sent before this rank was ready, in the order it
  // arrived (RC): reduced now, into this rank's data as it stands at start.
  // (None of it can complete the phase: the all-gather is still to come.)
  const size_t n = early_.size();
  for (size_t i = 0; i < n; ++i) deliver(early_[i].va, staged_.data() + early_[i].at, early_[i].bytes);
  early_.clear();
  staged_bytes_ = 0;
}

void RingPhase::prepare(uint64_t bytes) {
  // Only the reduce-scatter can arrive early: the predecessor's step s needs
  // step s - 1 from its own predecessor, and so on back around the ring, so
  // step P - 1 (the first of the all-gather) needs this rank's step 0.
  const uint64_t saved = bytes_;
  bytes_ = bytes;
  uint64_t data = 0, packets = 0;
  for (int step = 0; step < ranks_ - 1; ++step) {
    const uint64_t b = chunk_bytes(chunk_of(step, true));
    data += b;
    packets += (b + cfg_.mtu_payload - 1) / cfg_.mtu_payload;
  }
  bytes_ = saved;
  staged_.resize(data);
  early_.clear();
  early_.reserve(packets);
  staged_bytes_ = 0;
}

void RingPhase::stage(uint64_t va, const uint8_t* payload, uint32_t bytes) {
  // Without prepare() (or beyond what it sized) this is a protocol error of
  // the caller, not something to drop silently.
  sc_assert(early_.size() < early_.capacity() && staged_bytes_ + bytes <= staged_.size());
  std::memcpy(staged_.data() + staged_bytes_, payload, bytes);
  early_.push_back({va, staged_bytes_, bytes});
  staged_bytes_ += bytes;
}

void RingPhase::complete() {
  if (completed_) return;  // a gate opened from inside gate_ready may already have
  completed_ = true;
  running_ = false;
  if (done_) done_();
}

void RingPhase::open_gate() {
  gate_ = -1;  // from now on the steps follow each other again
  for (uint32_t j = 0; j < messages_in(chunk_of(gated_step_, false)); ++j) post(gated_step_, j);
  if (received_ == expected_) complete();  // nothing (more) to receive after the gate
}

void RingPhase::post(int step, uint32_t j) {
  const int c = chunk_of(step, false);
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

void RingPhase::fill(const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) const {
  const uint64_t at = (wr.remote_va & ((1ull << kStepShift) - 1)) + uint64_t{index} * cfg_.mtu_payload;
  std::memcpy(payload, region_ + at, bytes);
}

void RingPhase::deliver(uint64_t va, const uint8_t* payload, uint32_t bytes) {
  if (!running_) {
    stage(va, payload, bytes);
    return;
  }
  const int step = static_cast<int>(va >> kStepShift);
  const uint64_t at = va & ((1ull << kStepShift) - 1);
  if (step < ranks_ - 1) collectives::reduce_bytes(dtype_, op_, region_ + at, payload, bytes);
  else std::memcpy(region_ + at, payload, bytes);
  // The chunk this step received, and whether this packet ends a message.
  const int c = chunk_of(step, true);
  const uint64_t msg_bytes = static_cast<uint64_t>(cfg_.msg_len) * cfg_.mtu_payload;
  const uint64_t end = at + bytes - chunk_begin(c);
  const bool last_of_message = end % msg_bytes == 0 || end == chunk_bytes(c);
  // Forward what just arrived (reduced with ours, or final).
  if (last_of_message && step + 1 < last_ && step + 1 != gate_)
    post(step + 1, static_cast<uint32_t>((end - 1) / msg_bytes));
  ++received_;
  if (step < gated_step_ && --before_gate_ == 0 && gate_ready_) gate_ready_();
  // Done when everything arrived, but not before the gate opened: our own
  // chunk may still be on its way through the NetReduce ring.
  if (received_ == expected_ && gate_ < 0) complete();
}

ChainPhase::ChainPhase(RoceNic* nic, int send_qp, int rank, int ranks, const HostConfig& cfg)
    : nic_(nic), send_qp_(send_qp), rank_(rank), ranks_(ranks), cfg_(cfg) {}

void ChainPhase::start(uint8_t* region, uint64_t bytes, std::function<void()> done) {
  region_ = region;
  bytes_ = bytes;
  packets_ = (bytes + cfg_.mtu_payload - 1) / cfg_.mtu_payload;
  received_ = 0;
  completed_ = false;
  done_ = std::move(done);
  const uint64_t msg_bytes = static_cast<uint64_t>(cfg_.msg_len) * cfg_.mtu_payload;
  const uint32_t messages = static_cast<uint32_t>((bytes + msg_bytes - 1) / msg_bytes);
  nic_->reset_work(send_qp_);
  if (rank_ + 1 < ranks_) nic_->reserve(send_qp_, messages);
  if (rank_ == 0) {
    for (uint32_t j = 0; j < messages && ranks_ > 1; ++j) post(j);
    completed_ = true;  // the root has the data
    if (done_) done_();
  } else if (packets_ == 0) {
    completed_ = true;
    if (done_) done_();
  }
}

void ChainPhase::post(uint32_t j) {
  const uint64_t msg_bytes = static_cast<uint64_t>(cfg_.msg_len) * cfg_.mtu_payload;
  const uint64_t off = j * msg_bytes;
  const uint64_t len = std::min(msg_bytes, bytes_ - off);
  WorkRequest w;
  w.id = j;
  w.packets = static_cast<uint32_t>((len + cfg_.mtu_payload - 1) / cfg_.mtu_payload);
  w.last_bytes = static_cast<uint32_t>(len - (w.packets - 1) * uint64_t{cfg_.mtu_payload});
  w.remote_va = kTag | off;
  nic_->post(send_qp_, w);
}

void ChainPhase::fill(const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) const {
  std::memcpy(payload, region_ + (wr.remote_va & ~kTag) + uint64_t{index} * cfg_.mtu_payload, bytes);
}

void ChainPhase::deliver(uint64_t va, const uint8_t* payload, uint32_t bytes) {
  const uint64_t at = va & ~kTag;
  std::memcpy(region_ + at, payload, bytes);
  const uint64_t msg_bytes = static_cast<uint64_t>(cfg_.msg_len) * cfg_.mtu_payload;
  const uint64_t end = at + bytes;
  if ((end % msg_bytes == 0 || end == bytes_) && rank_ + 1 < ranks_) post(static_cast<uint32_t>((end - 1) / msg_bytes));
  if (++received_ == packets_ && !completed_) {
    completed_ = true;
    if (done_) done_();
  }
}

void Worker::start(uint64_t bytes, std::function<void()> done) {
  buf_.assign(bytes, 0);
  pattern_->fill(dtype_, rank_, 0, bytes / 4, buf_.data());
  finished_ = false;
  wrong_ = 0;
  done_ = std::move(done);
  run();
}

void Worker::finish() {
  finished_ = true;
  // Every element, against the closed-form reference: an element that never
  // arrived still holds this rank's input and counts as wrong.
  wrong_ = pattern_->mismatches(dtype_, op_, buf_.data(), 0, buf_.size() / 4, -1);
  if (done_) done_();
}

ParallelNetReduceWorker::ParallelNetReduceWorker(RoceNic* nic, const GpuPlace& g, const HostConfig& cfg,
                                                 const collectives::DataPattern* pattern, collectives::DType dtype,
                                                 collectives::RedOp op)
    : StagedWorker(g, pattern, dtype, op),
      intra_(nic, g.intra_send_qp, g.local, g.gpus_per_machine, cfg, dtype, op),
      inter_(nic, g.inter_send_qp, static_cast<uint16_t>(g.local), g.machine, cfg) {}

void ParallelNetReduceWorker::run() {
  const int n = intra_.ranks();
  stage_ = 1;
  // One ring inside the machine: reduce-scatter, then, once this GPU's
  // chunk has been summed over the machines, all-gather. The all-gather of
  // the other GPUs' chunks may reach this GPU before its own NetReduce ring
  // is done; it is forwarded as it comes.
  intra_.start(
      buf_.data(), buf_.size(), 0, 2 * (n - 1),
      [this] {
        stage_ = 0;
        finish();
      },
      n - 1,
      [this] {
        // This GPU holds its machine's sum of one chunk: the NetReduce ring
        // of this GPU index sums it over the machines.
        stage_ = 2;
        const int c = intra_.owned_chunk();
        inter_.start(buf_.data() + intra_.chunk_begin(c), intra_.chunk_bytes(c), [this] { inter_done(); });
      });
}

void ParallelNetReduceWorker::inter_done() {
  stage_ = 3;
  intra_.open_gate();
}

TencentWorker::TencentWorker(RoceNic* nic, const GpuPlace& g, const HostConfig& cfg,
                             const collectives::DataPattern* pattern, collectives::DType dtype, collectives::RedOp op)
    : StagedWorker(g, pattern, dtype, op),
      intra_(nic, g.intra_send_qp, g.local, g.gpus_per_machine, cfg, dtype, op),
      inter_(nic, g.inter_send_qp, g.machine, g.machines, cfg, dtype, op),
      chain_(nic, g.intra_send_qp, g.local, g.gpus_per_machine, cfg) {}

void TencentWorker::run() {
  const int n = intra_.ranks();
  stage_ = 1;
  // The other masters may start the ring among the masters before this
  // machine's sum is ready.
  if (place_.local == 0) inter_.prepare(buf_.size());
  intra_.start(buf_.data(), buf_.size(), 0, 2 * (n - 1), [this] {
    if (place_.local != 0) {  // wait for the master's broadcast
      stage_ = 3;
      chain_.start(buf_.data(), buf_.size(), [this] {
        stage_ = 0;
        finish();
      });
      return;
    }
    stage_ = 2;
    const int m = inter_.ranks();
    inter_.start(buf_.data(), buf_.size(), 0, 2 * (m - 1), [this] { broadcast(); });
  });
}

void TencentWorker::broadcast() {
  stage_ = 3;
  chain_.start(buf_.data(), buf_.size(), [this] {
    stage_ = 0;
    finish();
  });
}

void TencentWorker::fill(int qp, const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) {
  if (qp == place_.inter_send_qp) inter_.fill(wr, index, payload, bytes);
  else if (ChainPhase::owns(wr.remote_va)) chain_.fill(wr, index, payload, bytes);
  else intra_.fill(wr, index, payload, bytes);
}

void TencentWorker::deliver(int qp, uint64_t va, const uint8_t* payload, uint32_t bytes) {
  if (qp == place_.inter_recv_qp) inter_.deliver(va, payload, bytes);
  else if (ChainPhase::owns(va)) chain_.deliver(va, payload, bytes);
  else intra_.deliver(va, payload, bytes);
}

void ParallelNetReduceWorker::fill(int qp, const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) {
  if (qp == place_.inter_send_qp) inter_.fill(wr, index, payload, bytes);
  else intra_.fill(wr, index, payload, bytes);
}

void ParallelNetReduceWorker::deliver(int qp, uint64_t va, const uint8_t* payload, uint32_t bytes) {
  if (qp == place_.inter_recv_qp) inter_.deliver(va, payload, bytes);
  else intra_.deliver(va, payload, bytes);
}

}  // namespace incsim::roce
