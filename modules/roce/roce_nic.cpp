#include "roce_nic.h"

#include <algorithm>

namespace incsim::roce {

using eth::Opcode;

RoceNic::RoceNic(sc_core::sc_module_name name, uint32_t endpoint, uint32_t ip, const NicConfig& cfg,
                 net::PacketPool* pool)
    : sc_core::sc_module(name), in_("in", this, 0), out_("out"), endpoint_(endpoint), ip_(ip), cfg_(cfg), log_(basename()), pool_(pool) {
  spawn_method((std::string(basename()) + "_tx").c_str(), [this] { tx(); }, tx_wake_);
  spawn_method((std::string(basename()) + "_rx").c_str(), [this] { rx(); }, rx_wake_);
  spawn_method((std::string(basename()) + "_host").c_str(), [this] { to_host(); }, host_wake_);
}

int RoceNic::create_qp(uint32_t remote_endpoint, uint32_t remote_ip, uint32_t remote_qpn, uint32_t initial_psn) {
  Qp q;
  q.remote_ep = remote_endpoint;
  q.remote_ip = remote_ip;
  q.remote_qpn = remote_qpn;
  q.next_psn = q.una = q.end_psn = initial_psn;
  q.expected = initial_psn;  // both ends of a connection start from the same PSN here
  qps_.push_back(std::move(q));
  return static_cast<int>(qps_.size()) - 1;
}

void RoceNic::reserve(int qp, size_t more_work_requests) {
  qps_[qp].wrs.reserve(qps_[qp].wrs.size() + more_work_requests);
}

void RoceNic::reset_work(int qp) {
  Qp& q = qps_[qp];
  if (q.una != q.end_psn) return;
  q.wrs.clear();
  q.cursor = 0;
}

void RoceNic::post(int qp, const WorkRequest& wr) {
  Qp& q = qps_[qp];
  WorkRequest w = wr;
  w.first_psn = q.end_psn;
  w.ready = sim_now() + cfg_.tx_latency;
  q.end_psn += w.packets;
  q.wrs.push_back(w);
  tx_wake_.at(w.ready);
}

bool RoceNic::idle() const {
  for (const Qp& q : qps_)
    if (q.una != q.end_psn) return false;
  return true;
}

bool RoceNic::has_unsent() const {
  for (const Qp& q : qps_)
    if (q.next_psn != q.end_psn) return true;
  return false;
}

const WorkRequest& RoceNic::current(Qp& q) {
  while (q.next_psn >= q.wrs[q.cursor].first_psn + q.wrs[q.cursor].packets) ++q.cursor;
  return q.wrs[q.cursor];
}

uint16_t RoceNic::data_wire_bytes(Qp& q) {
  const WorkRequest& w = current(q);
  const uint32_t index = q.next_psn - w.first_psn;
  const uint32_t bytes = index + 1 == w.packets ? w.last_bytes : cfg_.mtu_payload;
  return eth::frame_wire_bytes(bytes, w.lines, index == 0, false, index == 0 && w.has_ina);
}

net::Packet* RoceNic::make_data(int qi) {
  Qp& q = qps_[qi];
  const WorkRequest& w = current(q);
  const uint32_t index = q.next_psn - w.first_psn;
  net::Packet* p = pool_->get();
  p->src = endpoint_;
  p->dst = q.remote_ep;
  p->vc = net::kRequestVc;
  p->payload_bytes = static_cast<uint16_t>(index + 1 == w.packets ? w.last_bytes : cfg_.mtu_payload);
  eth::RoceHeader& h = eth::header(p);
  h = eth::RoceHeader();
  h.src_ip = ip_;
  h.dst_ip = q.remote_ip;
  h.dst_qp = q.remote_qpn;
  h.psn = q.next_psn;
  h.opcode = w.packets == 1 ? Opcode::WriteOnly
             : index == 0   ? Opcode::WriteFirst
             : index + 1 == w.packets ? Opcode::WriteLast
                                      : Opcode::WriteMiddle;
  h.lines = w.lines;
  if (index == 0) h.va = w.remote_va;
  if (index == 0 && w.has_ina) {
    h.has_ina = 1;
    eth::ina(p) = w.ina;
  }
  client_->fill(qi, w, index, eth::payload(p), p->payload_bytes);
  eth::seal(p);
  p->wire_bytes = eth::wire_bytes_for(p);
  if (q.una == q.next_psn) q.deadline = sim_now() + cfg_.rto;
  ++q.next_psn;
  return p;
}

net::Packet* RoceNic::make_control(int qi) {
  Qp& q = qps_[qi];
  net::Packet* p = pool_->get();
  p->src = endpoint_;
  p->dst = q.remote_ep;
  p->vc = net::kResponseVc;
  p->payload_bytes = 0;
  eth::RoceHeader& h = eth::header(p);
  h = eth::RoceHeader();
  h.src_ip = ip_;
  h.dst_ip = q.remote_ip;
  h.dst_qp = q.remote_qpn;
  if (q.nak_due) {
    h.opcode = Opcode::Nak;
    h.psn = q.expected;
    ++naks_sent_;
  } else {
    h.opcode = Opcode::Ack;
    h.psn = q.expected - 1;
  }
  q.nak_due = q.ack_due = false;
  eth::seal(p);
  p->wire_bytes = eth::wire_bytes_for(p);
  return p;
}

void RoceNic::rewind(Qp& q, uint32_t psn) {
  if (psn >= q.next_psn) return;
  INCSIM_LOG(log_, Debug, "go back: retransmit PSN {} to {}", psn, q.next_psn - 1);
  retransmitted_ += q.next_psn - psn;
  ++trace_retx_;
  seek(q, psn);
}

void RoceNic::seek(Qp& q, uint32_t psn) {
  q.next_psn = psn;
  auto it = std::upper_bound(q.wrs.begin(), q.wrs.end(), psn,
                             [](uint32_t v, const WorkRequest& w) { return v < w.first_psn; });
  q.cursor = static_cast<size_t>(it - q.wrs.begin()) - 1;
}

void RoceNic::tx() {
  tx_wake_.fired();
  const sc_core::sc_time now = sim_now();
  out_.absorb_credits(now);
  // Retransmission timeouts: go back to the oldest unacknowledged PSN.
  sc_core::sc_time next_deadline = sc_core::SC_ZERO_TIME;
  trace_outstanding_ = 0;
  for (Qp& q : qps_) {
    if (q.una == q.next_psn && q.una == q.end_psn) continue;
    trace_outstanding_ += static_cast<int>(q.next_psn - q.una);
    if (q.una != q.next_psn && q.deadline <= now) {
      ++timeouts_;
      INCSIM_LOG(log_, Debug, "timeout: PSN {} not acknowledged", q.una);
      rewind(q, q.una);
      q.deadline = now + cfg_.rto;
    }
    if (q.una != q.next_psn && (next_deadline == sc_core::SC_ZERO_TIME || q.deadline < next_deadline))
      next_deadline = q.deadline;
  }
  if (next_deadline != sc_core::SC_ZERO_TIME) tx_wake_.at(next_deadline);
  if (!out_.link_free(now)) {
    tx_wake_.at(out_.busy_until());
    return;
  }
  const size_t n = qps_.size();
  bool blocked = false;
  // ACK/NAKs first, then data, each round robin over the queue pairs.
  for (size_t k = 0; k < n; ++k) {
    const size_t qi = (rr_ctrl_ + k) % n;
    if (!qps_[qi].ack_due && !qps_[qi].nak_due) continue;
    const uint32_t bytes = eth::kEthWireOverhead + eth::kRoceOverhead + eth::kAethBytes;
    if (!out_.has_credit(net::kResponseVc, bytes)) {
      blocked = true;
      break;
    }
    rr_ctrl_ = qi + 1;
    net::Packet* p = make_control(static_cast<int>(qi));
    frame_bytes_ += p->wire_bytes - eth::kPreambleIfg;
    out_.send(p, now, now);
    tx_wake_.at(out_.busy_until());
    return;
  }
  for (size_t k = 0; k < n; ++k) {
    const size_t qi = (rr_data_ + k) % n;
    Qp& q = qps_[qi];
    if (q.next_psn == q.end_psn) continue;
    if (current(q).ready > now) {
      tx_wake_.at(current(q).ready);
      continue;
    }
    if (!out_.has_credit(net::kRequestVc, data_wire_bytes(q))) {
      blocked = true;
      break;
    }
    rr_data_ = qi + 1;
    net::Packet* p = make_data(static_cast<int>(qi));
    frame_bytes_ += p->wire_bytes - eth::kPreambleIfg;
    out_.send(p, now, now);
    tx_wake_.at(out_.busy_until());
    client_->sent();
    return;
  }
  if (blocked) out_.wait_for_credit(now);
}

void RoceNic::receive(int, net::Packet* p) {
  if (faults_.lose(p, in_, *pool_)) return;
  rxq_.push(p);
  rx_wake_.at(p->t_tail);
}

void RoceNic::rx() {
  rx_wake_.fired();
  const sc_core::sc_time now = sim_now();
  bool wake_tx = false;
  while (!rxq_.empty() && rxq_.front()->t_tail <= now) {
    net::Packet* p = rxq_.pop();
    in_.release(p, sc_core::SC_ZERO_TIME);
    const eth::RoceHeader& h = eth::header(p);
    const uint32_t qi = h.dst_qp - 1;
    if (!eth::intact(p) || qi >= qps_.size()) {
      ++icrc_drops_;
    } else if (eth::is_data(h.opcode)) {
      on_data(p);
      wake_tx = true;
      continue;  // on_data keeps or frees it
    } else {
      on_ack(p);
      wake_tx = true;
    }
    pool_->put(p);
  }
  if (!rxq_.empty()) rx_wake_.at(rxq_.front()->t_tail);
  if (wake_tx) tx_wake_.at(now);
}

void RoceNic::on_data(net::Packet* p) {
  const eth::RoceHeader& h = eth::header(p);
  Qp& q = qps_[h.dst_qp - 1];
  if (h.psn == q.expected) {
    if (h.opcode == Opcode::WriteFirst || h.opcode == Opcode::WriteOnly) q.write_va = h.va;
    // The payload goes on to host memory: the header's va field now holds
    // where it lands, for to_host().
    eth::header(p).va = q.write_va;
    q.write_va += p->payload_bytes;
    hostq_.push(p);
    host_wake_.at(p->t_tail + cfg_.rx_latency);
    ++q.expected;
    q.nak_sent = false;
    if (++q.unacked >= cfg_.ack_every || h.opcode == Opcode::WriteLast || h.opcode == Opcode::WriteOnly) {
      q.unacked = 0;
      q.ack_due = true;
    }
    return;
  }
  if (h.psn < q.expected) {
    q.ack_due = true;  // a duplicate: our ACK was lost or late
  } else if (!q.nak_sent) {
    q.nak_sent = true;  // a gap: NAK once (PSN sequence error), then wait
    q.nak_due = true;
  }
  pool_->put(p);
}

void RoceNic::to_host() {
  host_wake_.fired();
  const sc_core::sc_time now = sim_now();
  while (!hostq_.empty() && hostq_.front()->t_tail + cfg_.rx_latency <= now) {
    net::Packet* p = hostq_.pop();
    const eth::RoceHeader& h = eth::header(p);
    client_->deliver(static_cast<int>(h.dst_qp - 1), h.va, eth::payload(p), p->payload_bytes, h.lines);
    ++progress_;
    pool_->put(p);
  }
  if (!hostq_.empty()) host_wake_.at(hostq_.front()->t_tail + cfg_.rx_latency);
}

void RoceNic::on_ack(net::Packet* p) {
  const eth::RoceHeader& h = eth::header(p);
  Qp& q = qps_[h.dst_qp - 1];
  const uint32_t acked = h.opcode == Opcode::Nak ? h.psn : h.psn + 1;
  if (acked > q.una && acked <= q.end_psn) {
    progress_ += acked - q.una;
    q.una = acked;
    if (q.next_psn < q.una) seek(q, q.una);
    q.deadline = sim_now() + cfg_.rto;
    client_->acknowledged(static_cast<int>(h.dst_qp - 1), q.una);
  }
  if (h.opcode == Opcode::Nak && h.psn < q.next_psn && h.psn >= q.una) rewind(q, h.psn);
}

void RoceNic::trace(sc_core::sc_trace_file* tf) const {
  const std::string me = name();
  sc_core::sc_trace(tf, trace_retx_, me + ".retransmissions");
  sc_core::sc_trace(tf, trace_outstanding_, me + ".unacked_packets");
}

uint64_t RoceNic::report_held(std::ostream& os) const {
  uint64_t n = 0;
  for (size_t i = 0; i < qps_.size(); ++i) {
    const Qp& q = qps_[i];
    if (q.una != q.end_psn)
      os << "  " << name() << " qp " << i + 1 << ": una " << q.una << ", next " << q.next_psn << ", end " << q.end_psn
         << ", expected " << q.expected << "\n";
    n += q.end_psn - q.una;
  }
  return n;
}

}  // namespace incsim::roce
