#include "fpga_aggregator.h"

namespace incsim::netreduce {

FpgaAggregator::Port::Port(const std::string& name, FpgaAggregator* owner, int index)
    : in((name + "_in").c_str(), owner, index), egress(name + "_out") {}

FpgaAggregator::FpgaAggregator(sc_core::sc_module_name name, int ports, const FpgaConfig& cfg, net::PacketPool* pool)
    : sc_core::sc_module(name), cfg_(cfg), pool_(pool), clt_(cfg.clt_entries) {
  for (int i = 0; i < ports; ++i) {
    ports_.push_back(std::make_unique<Port>("port" + std::to_string(i), this, i));
    Port& pt = *ports_.back();
    // Results are built when the last byte of the completing frame is in and
    // leave one pipeline latency later.
    pt.egress.configure(cfg.bw_GBps, cfg.link_latency, cfg.buffer_bytes, cfg.latency);
    spawn_method((std::string(basename()) + "_out" + std::to_string(i)).c_str(), [&pt] { pt.egress.serve(); },
                 &pt.egress.wake.event);
    spawn_method((std::string(basename()) + "_rx" + std::to_string(i)).c_str(), [this, i] { rx(i); },
                 &pt.rx_wake.event);
  }
}

FpgaAggregator::~FpgaAggregator() = default;

void FpgaAggregator::add_ring(uint16_t ring, int ranks, uint32_t window, uint32_t msg_len, uint32_t max_payload,
                              collectives::DType dtype, collectives::RedOp op) {
  rings_[ring] = std::make_unique<AggregatorArray>(ranks, window, msg_len, max_payload, dtype, op, pool_);
  if (ring >= ring_by_id_.size()) ring_by_id_.resize(ring + 1, nullptr);
  ring_by_id_[ring] = rings_[ring].get();
  if (out_.capacity() < static_cast<size_t>(ranks)) out_.reserve(ranks);
}

void FpgaAggregator::receive(int port, net::Packet* p) {
  Port& pt = *ports_[port];
  if (pt.faults.apply(p)) {
    pt.in.release(p, sc_core::SC_ZERO_TIME);
    pool_->put(p);
    return;
  }
  p->home_port = static_cast<int16_t>(port);
  pt.rxq.push(p);
  pt.rx_wake.at(p->t_tail);
}

void FpgaAggregator::rx(int port) {
  Port& pt = *ports_[port];
  pt.rx_wake.fired();
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  while (!pt.rxq.empty() && pt.rxq.front()->t_tail <= now) {
    net::Packet* p = pt.rxq.pop();
    pt.in.release(p, sc_core::SC_ZERO_TIME);  // into the accelerator's own memories
    process(p);
  }
  if (!pt.rxq.empty()) pt.rx_wake.at(pt.rxq.front()->t_tail);
}

void FpgaAggregator::emit(net::Packet* p) {
  eth::seal(p);  // the combinator recomputes the ICRC over the new payload (§3.2)
  p->t_head = p->t_tail = sc_core::sc_time_stamp();
  ports_[p->home_port]->egress.push(p);
}

void FpgaAggregator::process(net::Packet* p) {
  ++c_.frames;
  if (!eth::intact(p)) {
    ++c_.icrc_drops;
    pool_->put(p);
    return;
  }
  const eth::RoceHeader& h = eth::header(p);
  if (!eth::is_data(h.opcode)) {  // parser: not a gradient frame, straight through
    ++c_.bypassed;
    p->t_head = p->t_tail = sc_core::sc_time_stamp();
    ports_[p->home_port]->egress.push(p);
    return;
  }
  const ConnKey key{h.src_ip, h.dst_ip, h.dst_qp};
  Resolved r;
  if (h.has_ina && eth::ina(p).inet_tag == eth::kInetTag) {
    const eth::InaHeader& ih = eth::ina(p);
    r = clt_.fill(key, ih.ring_id, ih.rank, ih.msg_id, ih.msg_len, h.psn);
  } else {
    r = clt_.lookup(key, h.psn);
  }
  AggregatorArray* a = r.status == Resolved::Ok && r.ring < ring_by_id_.size() ? ring_by_id_[r.ring] : nullptr;
  if (!a || r.rank >= a->ranks() || r.offset >= a->msg_len()) {
    if (r.status == Resolved::FirstLost) ++c_.first_lost_drops;
    else if (r.status == Resolved::TableFull) ++c_.clt_full_drops;
    else ++c_.no_entry_drops;
    pool_->put(p);
    return;
  }
  out_.clear();
  a->accept(p, r.rank, r.msg, r.offset, out_);
  for (net::Packet* q : out_) emit(q);
}

FpgaAggregator::Counters FpgaAggregator::counters() const {
  Counters c = c_;
  for (const auto& p : ports_) c.lost += p->faults.lost();
  return c;
}

void FpgaAggregator::trace(sc_core::sc_trace_file* tf) const {
  const std::string me = name();
  sc_core::sc_trace(tf, clt_.occupancy_ref(), me + ".clt.occupancy");
  for (const auto& [id, a] : rings_) {
    const std::string r = me + ".ring" + std::to_string(id);
    sc_core::sc_trace(tf, a->busy_ref(), r + ".aggregators_busy");
    sc_core::sc_trace(tf, a->bits_ref(), r + ".bitmap_bits");
    sc_core::sc_trace(tf, a->completions_ref(), r + ".completions");
  }
  for (size_t i = 0; i < ports_.size(); ++i)
    sc_core::sc_trace(tf, ports_[i]->egress.depth_ref(), me + ".port" + std::to_string(i) + ".out_queue");
}

uint64_t FpgaAggregator::report_held(std::ostream& os) const {
  uint64_t n = 0;
  for (const auto& [id, a] : rings_) {
    const uint64_t h = a->held();
    if (h) os << "  " << name() << " ring " << id << ": " << h << " gradient packets waiting in aggregators\n";
    n += h;
  }
  for (size_t i = 0; i < ports_.size(); ++i)
    if (const int d = ports_[i]->egress.depth()) {
      os << "  " << name() << " port " << i << ": " << d << " frames queued\n";
      n += d;
    }
  return n;
}

}  // namespace incsim::netreduce
