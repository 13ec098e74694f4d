#include "port.h"

#include "topology/topology.h"

#include <algorithm>

namespace incsim::net {

void OutPort::configure(double bw_GBps, sc_core::sc_time latency, uint32_t credits_per_vc, Wakeup* wake) {
  bw_GBps_ = bw_GBps;
  ps_per_byte_ = 1000.0 / bw_GBps;  // GB/s = bytes per ns
  latency_ = latency;
  for (int v = 0; v < kNumVcs; ++v) credits_[v] = static_cast<int>(credits_per_vc);
  ring_.resize(16);  // grows to the credits ever in flight at once, doubling
  ring_mask_ = ring_.size() - 1;
  wake_ = wake;
}

void OutPort::send(Packet* p, const sc_core::sc_time& start, const sc_core::sc_time& ready) {
  sc_assert(busy_until_ <= start && has_credit(p->vc, p->wire_bytes));
  credits_[p->vc] -= p->wire_bytes;
  last_start_ = start;
  busy_until_ = std::max(start + serialization(p->wire_bytes), ready);
  p->t_head = start + latency_;
  p->t_tail = busy_until_ + latency_;
  bytes_sent_ += p->wire_bytes;
  ++packets_sent_;
  ++packets_on_vc_[p->vc];
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = latency_;
  socket->nb_transport_fw(*p, phase, delay);
}

tlm::tlm_sync_enum OutPort::nb_transport_bw(Packet& p, tlm::tlm_phase&, sc_core::sc_time& delay) {
  if (ring_size_ == ring_.size()) {
    // Grow, keeping the order (only while the in-flight count reaches a new high).
    std::vector<Credit> bigger(ring_.size() * 2);
    for (size_t i = 0; i < ring_size_; ++i) bigger[i] = ring_[(ring_head_ + i) & ring_mask_];
    ring_.swap(bigger);
    ring_head_ = 0;
    ring_mask_ = ring_.size() - 1;
  }
  const sc_core::sc_time at = sim_now() + delay + latency_;
  // Credits come back nearly in order; one released earlier on another VC
  // can be due before the last one queued: keep the ring sorted by time.
  size_t i = ring_size_++;
  for (; i > 0 && ring_[(ring_head_ + i - 1) & ring_mask_].at > at; --i)
    ring_[(ring_head_ + i) & ring_mask_] = ring_[(ring_head_ + i - 1) & ring_mask_];
  ring_[(ring_head_ + i) & ring_mask_] = Credit{at, p.wire_bytes, p.vc};
  if (waiting_) wake_->at(at);
  return tlm::TLM_ACCEPTED;
}

void OutPort::absorb_credits(const sc_core::sc_time& now) {
  waiting_ = false;
  while (ring_size_ && ring_[ring_head_].at <= now) {
    credits_[ring_[ring_head_].vc] += ring_[ring_head_].bytes;
    ring_head_ = (ring_head_ + 1) & ring_mask_;
    --ring_size_;
  }
}

void OutPort::wait_for_credit(const sc_core::sc_time& now) {
  waiting_ = true;
  if (ring_size_) wake_->at(ring_[ring_head_].at);
}

void OutPort::trace(sc_core::sc_trace_file* tf, const std::string& prefix, int vcs) const {
  for (int v = 0; v < vcs; ++v) sc_core::sc_trace(tf, credits_[v], prefix + ".credits_vc" + std::to_string(v));
}

void InPort::b_transport(Packet&, sc_core::sc_time&) {
  SC_REPORT_ERROR("incsim/net", "packets move with nb_transport_fw only");
}

}  // namespace incsim::net

namespace incsim::net {
uint32_t round_trip_bytes(double bw_GBps, sc_core::sc_time link_latency, sc_core::sc_time holding,
                          uint32_t max_packet_bytes) {
  return topo::round_trip_bytes(bw_GBps, link_latency.to_seconds() * 1e9, holding.to_seconds() * 1e9, max_packet_bytes);
}
}  // namespace incsim::net
