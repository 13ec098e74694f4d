#include "fpga_aggregator.h"

#include <algorithm>
#include <cstring>

namespace incsim::netreduce {

FpgaAggregator::Port::Port(const std::string& name, FpgaAggregator* owner, int index)
    : in((name + "_in").c_str(), owner, index), egress(name + "_out") {}

FpgaAggregator::FpgaAggregator(sc_core::sc_module_name name, int ports, const FpgaConfig& cfg, net::PacketPool* pool)
    : sc_core::sc_module(name), cfg_(cfg), pool_(pool), clt_("clt", cfg.clt_entries),
      dest_("dest_clt", cfg.clt_entries), ctt_("ctt", cfg.clt_entries) {
  for (int i = 0; i < ports; ++i) {
    ports_.push_back(std::make_unique<Port>("port" + std::to_string(i), this, i));
    Port& pt = *ports_.back();
    spawn_method((std::string(basename()) + "_out" + std::to_string(i)).c_str(), [&pt] { pt.egress.serve(); },
                 pt.egress.wake);
    spawn_method((std::string(basename()) + "_rx" + std::to_string(i)).c_str(), [this, i] { rx(i); },
                 pt.rx_wake);
  }
}

FpgaAggregator::~FpgaAggregator() = default;

void FpgaAggregator::add_ring(uint16_t ring, int ranks, uint32_t window, uint32_t msg_len, uint32_t max_payload,
                              elements::DType dtype, elements::RedOp op, int rank_base, int job) {
  rings_[ring] = std::make_unique<AggregatorArray>(ranks, window, msg_len, max_payload, dtype, op, pool_,
                                                   elements::Alu(std::string(basename()) + ".aggregator"));
  used_ += rings_[ring]->bytes();
  if (job >= 0) {
    if (used_by_job_.size() <= static_cast<size_t>(job)) used_by_job_.resize(job + 1u, 0);
    used_by_job_[job] += rings_[ring]->bytes();
  }
  clt_.add_ring(ring, msg_len);
  dest_.add_ring(ring, msg_len);
  if (ring >= ring_by_id_.size()) {
    ring_by_id_.resize(ring + 1, nullptr);
    rank_base_.resize(ring + 1, 0);
  }
  ring_by_id_[ring] = rings_[ring].get();
  rank_base_[ring] = rank_base;
  if (out_.capacity() < static_cast<size_t>(ranks)) out_.reserve(ranks);
}

uint16_t FpgaAggregator::ring_id(const std::vector<int>& members, int k) {
  const auto [at, added] = ring_ids_.emplace(std::make_pair(members, k), static_cast<uint16_t>(ring_ids_.size()));
  if (added) ring_connections_ += static_cast<uint32_t>(members.size());
  return at->second;
}

uint64_t FpgaAggregator::memory_left(int job) const {
  const uint64_t budget = cfg_.aggregator_bytes;
  // Its share less what its rings hold, and no more than is free
  // (partitioned shares add up to at most the whole).
  const uint64_t free = budget - std::min(budget, used_);
  const nvswitch::TableSharing* s = cfg_.sharing;
  if (!s || !s->holds(job)) return free;
  const uint64_t limit = s->limit(job, cfg_.aggregator_bytes);
  return std::min(free, limit - std::min(limit, memory_used(job)));
}

void FpgaAggregator::admit(int job, uint64_t bytes, const std::string& what) const {
  if (cfg_.aggregator_bytes != 0 && bytes > memory_left(job)) short_of(job, bytes, what);
}

void FpgaAggregator::short_of(int job, uint64_t bytes, const std::string& what) const {
  const uint64_t budget = cfg_.aggregator_bytes, left = memory_left(job);
  const nvswitch::TableSharing* s = cfg_.sharing;
  const bool share = s && s->holds(job) && left < budget - std::min(budget, used_);  // its share binds, not what is free
  throw ShareShortfall("the FPGA's aggregator memory",
                       std::string(basename()) + "'s " + what + " " + std::to_string(bytes) + " bytes, but " +
                           (share ? "its " + s->share_text(job) : std::string("the free memory")) + " leaves " +
                           std::to_string(left) + " of " + kAggregatorBytes.key() + "=" + std::to_string(budget));
}

uint32_t FpgaAggregator::msg_len_for(int job, int ranks, uint32_t window, uint32_t msg_len, uint32_t max_payload,
                                     int rings) const {
  if (cfg_.aggregator_bytes == 0) return msg_len;
  const uint64_t per_message = AggregatorArray::memory_bytes(ranks, window, 1, max_payload) * rings;
  const uint64_t fits = std::min<uint64_t>(msg_len, memory_left(job) / per_message);
  if (fits == 0)
    short_of(job, per_message,
             (rings > 1 ? "aggregator arrays for " + std::to_string(rings) + " rings" : std::string("aggregator array for a ring")) +
                 " of " + std::to_string(ranks) + " with a window of N = " + std::to_string(window) + " need" +
                 (rings > 1 ? "" : "s") + " at least 2N x 1 aggregators" + (rings > 1 ? " each" : "") + ",");
  return static_cast<uint32_t>(fits);
}

void FpgaAggregator::set_hierarchy(const Hierarchy& h) {
  hier_ = h;
  out_.reserve(static_cast<size_t>(std::max(h.hosts_per_rack, h.racks)) + out_.capacity());
  if (h.role != Hierarchy::Spine) return;
  // Non-leaf CTTs hold only switch-to-switch connections, known at job start
  // (§3.3 "Table Populating"): every leaf's partials to every leaf.
  for (int q = 0; q < h.racks; ++q)
    for (int p = 0; p < h.racks; ++p)
      ctt_.add({h.leaf_ip0 + q, h.self_ip, h.virtual_qp}, {h.self_ip, h.leaf_ip0 + p, h.virtual_qp},
               static_cast<int16_t>(p));
}

void FpgaAggregator::receive(int port, net::Packet* p) {
  Port& pt = *ports_[port];
  if (pt.faults.lose(p, pt.in, *pool_)) return;
  p->in_port = static_cast<int16_t>(port);
  pt.rxq.push(p);
  pt.rx_wake.at(p->t_tail);
}

void FpgaAggregator::rx(int port) {
  Port& pt = *ports_[port];
  pt.rx_wake.fired();
  const sc_core::sc_time now = sim_now();
  while (!pt.rxq.empty() && pt.rxq.front()->t_tail <= now) {
    net::Packet* p = pt.rxq.pop();
    pt.in.release(p, sc_core::SC_ZERO_TIME);  // into the accelerator's own memories
    process(p);
  }
  if (!pt.rxq.empty()) pt.rx_wake.at(pt.rxq.front()->t_tail);
}

void FpgaAggregator::emit(net::Packet* p, int port) {
  eth::seal(p);  // the combinator recomputes the ICRC over the new payload (§3.2)
  p->t_head = p->t_tail = sim_now();
  ports_[port]->egress.push(p);
}

void FpgaAggregator::process(net::Packet* p) {
  ++c_.frames;
  if (!eth::intact(p)) {
    ++c_.icrc_drops;
    pool_->put(p);
    return;
  }
  const eth::RoceHeader& h = eth::header(p);
  if (h.opcode == eth::Opcode::Notify && hier_.role == Hierarchy::Leaf) {
    // A first packet's headers from another rack: where its connection's
    // results must go in this rack (§3.3).
    ++c_.notifications;
    // Its results leave by the port of the rack's last host, whose own
    // connection's results are made in the next rack: that port is free.
    const int hpr = hier_.hosts_per_rack;
    const int dst_local = static_cast<int>((h.dst_ip - hier_.host_ip0) % hpr);
    learn({h.src_ip, h.dst_ip, h.dst_qp}, eth::ina(p), h.psn, h.va, (dst_local + hpr - 1) % hpr);
    pool_->put(p);
    return;
  }
  if (!eth::is_data(h.opcode)) {  // parser: not a gradient frame, straight through
    ++c_.bypassed;
    p->t_head = p->t_tail = sim_now();
    ports_[p->in_port]->egress.push(p);
    return;
  }
  const bool from_switch = h.has_ina && eth::ina(p).inet_tag == eth::kInetTagSwitch;
  if (from_switch && hier_.role == Hierarchy::Leaf) {  // the spine's result: multicast into the rack
    to_destinations(p);
    return;
  }
  const ConnKey key{h.src_ip, h.dst_ip, h.dst_qp};
  Resolved r;
  if (from_switch) {  // a leaf's partial on its virtual connection: the INA header is in every packet
    const eth::InaHeader& ih = eth::ina(p);
    r.status = Resolved::Ok;
    r.ring = ih.ring_id;
    r.rank = ih.rank;
    r.msg = ih.msg_id;
    r.offset = h.psn;
    r.msg_len = ih.msg_len;
  } else if (h.has_ina && eth::ina(p).inet_tag == eth::kInetTag) {
    const eth::InaHeader& ih = eth::ina(p);
    r = clt_.fill(key, ih.ring_id, ih.rank, ih.msg_id, ih.msg_len, h.psn);
    if (hier_.role == Hierarchy::Leaf && r.status == Resolved::Ok) {
      ctt_.add(key, uplink(), -1);  // aggregation: this connection -> leaf-to-spine
      const uint32_t dst_rack = (h.dst_ip - hier_.host_ip0) / hier_.hosts_per_rack;
      if (static_cast<int>(dst_rack) == hier_.rack) learn(key, ih, h.psn, h.va, p->in_port);
      else notify(p, dst_rack);
    }
  } else {
    r = clt_.lookup(key, h.psn);
  }
  INCSIM_LOG(clt_.log, Debug, "{} {:08x}->{:08x} qp {} PSN {}: {}", from_switch ? "partial" : h.has_ina ? "fill" : "lookup",
             h.src_ip, h.dst_ip, h.dst_qp, h.psn,
             r.status == Resolved::Ok ? fmt::format("ring {} rank {} message {} offset {}", r.ring, r.rank, r.msg, r.offset)
             : r.status == Resolved::FirstLost ? std::string("first packet lost, dropped")
             : r.status == Resolved::TableFull ? std::string("table full, dropped")
                                               : std::string("no entry, dropped"));
  AggregatorArray* a = r.status == Resolved::Ok && r.ring < ring_by_id_.size() ? ring_by_id_[r.ring] : nullptr;
  const int rank = a ? r.rank - rank_base_[r.ring] : -1;
  if (!a || rank < 0 || rank >= a->ranks() || r.offset >= a->msg_len()) {
    if (r.status == Resolved::FirstLost) ++c_.first_lost_drops;
    else if (r.status == Resolved::TableFull) ++c_.clt_full_drops;
    else ++c_.no_entry_drops;
    pool_->put(p);
    return;
  }
  out_.clear();
  const AggregatorArray::Outcome o = a->accept(p, rank, r.msg, r.offset, out_);
  if (out_.empty()) return;
  switch (hier_.role) {
    case Hierarchy::Flat:
      for (net::Packet* q : out_) emit(q, q->in_port);  // each rank's result by the port its packet came in
      break;
    case Hierarchy::Leaf:
      if (o == AggregatorArray::ResentFinal) {
        // The spine's result is here already: answer the retransmission
        // directly, under its own header, wherever its destination is.
        emit(out_[0], out_[0]->in_port);
        break;
      }
      // One partial per aggregator goes up, whatever the number of local
      // connections the CTT maps to the leaf-to-spine connection.
      for (size_t i = 1; i < out_.size(); ++i) pool_->put(out_[i]);
      to_parent(out_[0], r);
      break;
    case Hierarchy::Spine:
      // Completed: each leaf's packet goes back to it. Resent: only the
      // leaf that asked again lacks the result (the others answer their
      // own retransmissions from their copy).
      for (net::Packet* q : out_) to_children(q);
      break;
  }
}

void FpgaAggregator::learn(const ConnKey& c, const eth::InaHeader& ina, uint32_t psn, uint64_t va, int port) {
  dest_.fill(c, ina.ring_id, ina.rank, ina.msg_id, ina.msg_len, psn, va);
  ctt_.add(downlink(hier_.rack), c, static_cast<int16_t>(port));  // multicast: spine-to-leaf -> this connection
}

void FpgaAggregator::notify(net::Packet* first, uint32_t dst_rack) {
  net::Packet* n = pool_->get();
  std::memcpy(n->data, first->data, eth::kPayloadOffset);  // the headers, INA header included
  eth::header(n).opcode = eth::Opcode::Notify;
  n->payload_bytes = 0;
  n->src = hier_.self_ep;
  n->dst = hier_.leaf_ep0 + dst_rack;
  n->vc = net::kResponseVc;  // control traffic: not behind the gradient frames
  n->wire_bytes = eth::wire_bytes_for(n);
  emit(n, hier_.uplink_port);
}

void FpgaAggregator::to_parent(net::Packet* p, const Resolved& r) {
  eth::RoceHeader& h = eth::header(p);
  h.src_ip = hier_.self_ip;
  h.dst_ip = hier_.parent_ip;
  h.dst_qp = hier_.virtual_qp;
  h.psn = r.offset;
  h.opcode = eth::Opcode::WriteMiddle;
  h.has_ina = 1;
  h.va = 0;
  eth::InaHeader& ih = eth::ina(p);
  ih.inet_tag = eth::kInetTagSwitch;
  ih.ring_id = r.ring;
  ih.rank = static_cast<uint16_t>(hier_.rack);
  ih.msg_id = static_cast<uint32_t>(r.msg);
  ih.msg_len = r.msg_len;
  p->src = hier_.self_ep;
  p->dst = hier_.parent_ep;
  p->wire_bytes = eth::wire_bytes_for(p);
  emit(p, hier_.uplink_port);
}

void FpgaAggregator::to_children(net::Packet* p) {
  // p came from the leaf it goes back to: L -> S becomes S -> L, the CTT
  // entry of L -> S whose target is L (the other entries of L -> S are
  // served by the other leaves' own packets of the same aggregator).
  const uint32_t leaf = p->src - hier_.leaf_ep0;
  const ConnKey from{hier_.leaf_ip0 + leaf, hier_.self_ip, hier_.virtual_qp};
  const ConnectionTranslationTable::Entry* target = nullptr;
  ctt_.for_each(from, [&](const ConnectionTranslationTable::Entry& e) {
    if (e.to.dst_ip == hier_.leaf_ip0 + leaf) target = &e;
  });
  sc_assert(target);
  eth::RoceHeader& h = eth::header(p);
  h.src_ip = target->to.src_ip;
  h.dst_ip = target->to.dst_ip;
  p->src = hier_.self_ep;
  p->dst = hier_.leaf_ep0 + leaf;
  emit(p, target->port);
}

void FpgaAggregator::to_destinations(net::Packet* p) {
  const eth::InaHeader in = eth::ina(p);
  const uint32_t offset = eth::header(p).psn;
  // Keep the result beside the partial, to answer retransmissions here.
  if (in.ring_id < ring_by_id_.size() && ring_by_id_[in.ring_id])
    ring_by_id_[in.ring_id]->set_final(in.msg_id, offset, eth::payload(p), p->payload_bytes);
  const uint32_t mtu = cfg_.mtu_payload;
  const net::Packet* src = p;
  std::vector<net::Packet*>& copies = out_;
  copies.clear();
  copy_ports_.clear();
  ctt_.for_each(downlink(hier_.rack), [&](const ConnectionTranslationTable::Entry& e) {
    ConnectionLookupTable::Located at;
    if (!dest_.locate(e.to, in.msg_id, offset, mtu, &at)) {
      ++c_.untranslated;
      return;
    }
    net::Packet* q = pool_->get();
    std::memcpy(eth::payload(q), eth::payload(src), src->payload_bytes);
    q->payload_bytes = src->payload_bytes;
    q->vc = net::kRequestVc;
    eth::RoceHeader& h = eth::header(q);
    h = eth::RoceHeader();
    h.src_ip = e.to.src_ip;
    h.dst_ip = e.to.dst_ip;
    h.dst_qp = e.to.dst_qp;
    h.psn = at.psn;
    const uint32_t len = in.msg_len;
    h.opcode = len == 1 ? eth::Opcode::WriteOnly
               : offset == 0 ? eth::Opcode::WriteFirst
               : offset + 1 == len ? eth::Opcode::WriteLast
                                   : eth::Opcode::WriteMiddle;
    if (offset == 0) {  // the first packet as its source sent it: RETH and INA header
      h.va = at.va;
      h.has_ina = 1;
      eth::InaHeader& ih = eth::ina(q);
      ih = in;
      ih.inet_tag = eth::kInetTag;
      ih.rank = at.rank;
    }
    q->src = e.to.src_ip - hier_.host_ip0;
    q->dst = e.to.dst_ip - hier_.host_ip0;
    q->wire_bytes = eth::wire_bytes_for(q);
    copies.push_back(q);
    copy_ports_.push_back(e.port);
  });
  pool_->put(p);
  for (size_t i = 0; i < copies.size(); ++i) emit(copies[i], copy_ports_[i]);
}

FpgaAggregator::Counters FpgaAggregator::counters() const {
  Counters c = c_;
  for (const auto& p : ports_) c.lost += p->faults.lost();
  return c;
}

uint64_t FpgaAggregator::progress() const {
  uint64_t n = 0;
  for (const auto& [id, a] : rings_) n += a->contributions();
  return n;
}

void FpgaAggregator::trace(sc_core::sc_trace_file* tf) const {
  const std::string me = name();
  clt_.trace(tf);
  if (hier_.role != Hierarchy::Flat) ctt_.trace(tf);
  if (hier_.role == Hierarchy::Leaf) dest_.trace(tf);
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
    n += ports_[i]->egress.report_held(os, std::string(name()) + " port " + std::to_string(i));
  // The tables hold no packets; their lines say which connections are known.
  clt_.report(os);
  dest_.report(os);
  ctt_.report(os);
  return n;
}

}  // namespace incsim::netreduce
