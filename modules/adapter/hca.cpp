#include "adapter/hca.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace incsim::adapter {

using sc_core::sc_time;

Adapter::Adapter(sc_core::sc_module_name name, const HcaConfig& cfg, net::PacketPool& gpu_pool,
                 net::PacketPool& net_pool)
    : sc_module(name),
      cfg_(cfg),
      gpu_pool_(gpu_pool),
      net_pool_(net_pool),
      pcie_in_("pcie_in", this, kPcie),
      pcie_out_("pcie_out"),
      log_(this->name()) {
  open_.reserve(64);  // a GPU's streams at once; more only grow it once
  next_psn_.assign(cfg.endpoints, 0);
  spawn_method((std::string(basename()) + "_to_network").c_str(), [this] { to_network(); }, up_wake_);
  spawn_method((std::string(basename()) + "_to_gpu").c_str(), [this] { to_gpu(); }, down_wake_);
}

Hca::Hca(sc_core::sc_module_name name, const HcaConfig& cfg, net::PacketPool& gpu_pool, net::PacketPool& net_pool)
    : Adapter(name, cfg, gpu_pool, net_pool), net_in_("net_in", this, kNet), net_out_("net_out") {
  expected_psn_.assign(cfg.endpoints, 0);
  early_.resize(cfg.endpoints);
}

void Hca::configure_port(int p, double bw_GBps, sc_time latency, uint32_t peer_buffer_bytes) {
  if (p == kPcie) configure_pcie(bw_GBps, latency, peer_buffer_bytes);
  else net_out_.configure(bw_GBps, latency, peer_buffer_bytes, &network_wake());
}

void Hca::receive(int port, net::Packet* p) {
  const sc_time now = sim_now();
  if (port != kNet) {
    from_gpu(p);
    return;
  }
  p->in_port = kNet;  // it holds that port's buffer space
  if (net::is_multicast(p->addr)) {  // a switch's sum, outside any connection
    to_gpu_queue(p);
    return;
  }
  if (p->table == expected_psn_[p->src]) {
    deliver(p);
    // The packets it held up follow, in sequence.
    net::PacketFifo& early = early_[p->src];
    for (bool found = true; found && !early.empty();) {
      found = false;
      for (size_t k = 0, n = early.size(); k < n; ++k) {
        net::Packet* q = early.pop();
        if (!found && q->table == expected_psn_[q->src]) {
          deliver(q);
          found = true;
        } else {
          early.push(q);
        }
      }
    }
  } else {
    // It overtook one of its connection's: held apart, its buffer space
    // freed (held in the link's buffer, it could block the one it waits for).
    net_in_.release(p, p->t_tail - now);
    p->in_port = -1;
    INCSIM_LOG(logger(), Debug, "packet {} from GPU {} overtook packet {}: held", p->table, p->src,
               expected_psn_[p->src]);
    early_[p->src].push(p);
    ++reordered_;
  }
}

void Adapter::from_gpu(net::Packet* p) {
  const sc_time now = sim_now();
  if (p->op == net::Op::WriteAck) {
    // The GPU memory acknowledges a write this adapter delivered: the
    // network acknowledgement went when it was issued.
    pcie_in_.release(p, p->t_tail - now);
    gpu_pool_.put(p);
    return;
  }
  if (p->op != net::Op::Write && p->op != net::Op::ReduceWrite)
    SC_REPORT_ERROR("incsim/hca", (std::string(name()) + " carries writes and reducing writes, not " +
                                   net::op_name(p->op) + " (the workload should have refused this algorithm)")
                                      .c_str());
  from_gpu_.push(p);
  ++held_up_;
  if (from_gpu_.front() == p) up_wake_.at(p->t_tail + cfg_.latency);
}

// Store and forward: the packet's check covers all of it.
void Hca::deliver(net::Packet* p) {
  ++expected_psn_[p->src];
  to_gpu_queue(p);
}

void Hca::done_with(net::Packet* n) {
  if (n->in_port == kNet) net_in_.release(n, sc_core::SC_ZERO_TIME);
  Adapter::done_with(n);
}

void Adapter::to_gpu_queue(net::Packet* p) {
  from_net_.push(p);
  ++held_down_;
  if (from_net_.front() == p) down_wake_.at(p->t_tail + cfg_.latency);
}

// Gathers write w into its stream's open packet, closing that packet first
// if w does not continue it; w's buffer space is free once its data is copied.
void Adapter::take(net::Packet* w) {
  if (w->op == net::Op::ReduceWrite) {
    push_out(w);
    return;
  }
  size_t k = 0;
  while (k < open_.size() && (open_[k].packet->src != w->src || open_[k].packet->stream != w->stream)) ++k;
  // Each write lands as it was sent: the far side splits a packet into
  // writes of its lines' unit from the packet's start (unit below), so only
  // whole writes gather, each after whole ones (LL128's lines, with their
  // flags, must not straddle two). A packet holds up to the MTU on the
  // wire, the lines' flags included, as NCCL's proxy posts a step's buffer,
  // flags and all, and the adapter cuts it into MTU-sized packets
  // (src/transport/net.cc, sendProxyProgress).
  const uint32_t unit = net::lines_data_bytes(w->lines, gpu_pool_.format().max_payload_bytes);
  if (k < open_.size()) {
    const net::Packet& o = *open_[k].packet;
    if (o.dst != w->dst || o.addr + o.payload_bytes != w->addr || o.lines != w->lines || o.payload_bytes % unit != 0 ||
        net::lines_wire_payload(w->lines, o.payload_bytes + w->payload_bytes) > cfg_.mtu_bytes) {
      close(k);
      k = open_.size();
    }
  }
  if (k == open_.size()) open_.push_back({network_packet(*w, cfg_.mtu_bytes), {}});
  net::Packet& n = *open_[k].packet;
  append(n, w);
  open_[k].writes.push(w);
  if (w->last || net::lines_wire_payload(n.lines, n.payload_bytes + unit) > cfg_.mtu_bytes) close(k);
}

net::Packet* Adapter::network_packet(const net::Packet& w, uint32_t bytes) {
  net::Packet* n = net_pool_.get(bytes);
  n->src = w.src;
  n->dst = w.dst;
  n->addr = w.addr;
  n->stream = w.stream;
  n->op = w.op;
  n->lines = w.lines;
  n->vc = net::kRequestVc;
  n->payload_bytes = 0;
  n->count = w.count;
  n->dtype = w.dtype;
  n->redop = w.redop;
  n->home_switch = w.home_switch;
  n->home_port = w.home_port;
  n->t_inject = w.t_inject;
  return n;
}

void Adapter::append(net::Packet& n, net::Packet* w) {
  std::memcpy(n.data + n.payload_bytes, w->data, w->payload_bytes);
  n.payload_bytes = static_cast<uint16_t>(n.payload_bytes + w->payload_bytes);
  queued_bytes_ += w->payload_bytes;
  pcie_in_.release(w, sc_core::SC_ZERO_TIME);
  ++writes_sent_;
}

// SHARP's packets are the GPU's blocks: the switch's aggregation table
// entries are aligned blocks, the same at every member, so the adapter
// neither gathers nor numbers them; posted, nothing is acknowledged.
void Adapter::push_out(net::Packet* w) {
  net::Packet* n = network_packet(*w, w->payload_bytes);
  append(*n, w);
  gpu_pool_.put(w);
  n->wire_bytes = net_pool_.format().wire_bytes(net::Op::ReduceWrite, n->payload_bytes);
  to_net_.push(n);
}

// Queues open packet k for the wire, numbered in its connection, and turns
// its writes into their acknowledgements.
void Adapter::close(size_t k) {
  Open o = open_[k];
  open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(k));
  net::Packet* n = o.packet;
  n->wire_bytes = net_pool_.format().wire_bytes(net::lines_wire_payload(n->lines, n->payload_bytes));
  n->table = next_psn_[n->dst]++;
  to_net_.push(n);
  while (!o.writes.empty()) {
    net::Packet* a = o.writes.pop();
    std::swap(a->src, a->dst);
    a->op = net::Op::WriteAck;
    a->vc = net::kResponseVc;
    a->payload_bytes = 0;
    a->wire_bytes = gpu_pool_.format().wire_bytes(net::Op::WriteAck, 0);
    acks_.push(a);
  }
  down_wake_.at(sim_now());
}

void Adapter::to_network() {
  up_wake_.fired();
  const sc_time now = sim_now();
  for (;;) {
    // Take the GPU's writes whose time has come while the send buffer has room.
    while (!from_gpu_.empty() && from_gpu_.front()->t_tail + cfg_.latency <= now &&
           queued_bytes_ + from_gpu_.front()->payload_bytes <= cfg_.send_queue_bytes) {
      --held_up_;
      take(from_gpu_.pop());
    }
    if (!from_gpu_.empty() && from_gpu_.front()->t_tail + cfg_.latency > now)
      up_wake_.at(from_gpu_.front()->t_tail + cfg_.latency);
    if (!network_ready(now)) return;
    // An idle wire sends what is gathered rather than wait for more, but
    // for the rest of a message: NCCL's proxy posts a step whole. Unless
    // the send buffer is full of open packets and holds the GPU's next write.
    if (to_net_.empty()) {
      size_t k = 0;
      while (k < open_.size() && open_[k].writes.back()->more) ++k;
      if (k == open_.size() && !open_.empty() && !from_gpu_.empty() &&
          from_gpu_.front()->t_tail + cfg_.latency <= now)
        k = 0;
      if (k < open_.size()) close(k);
    }
    if (to_net_.empty()) return;
    net::Packet* n = to_net_.front();
    if (!can_transmit(*n, now)) return;
    to_net_.pop();
    INCSIM_LOG(log_, Trace, "sends packet {} of GPU {} to GPU {}: {} B at {:#x}", n->table, n->src, n->dst,
               n->payload_bytes, n->addr);
    ++packets_sent_;
    payload_sent_ += n->payload_bytes;
    if (!transmit(n, now)) return;
  }
}

bool Hca::network_ready(sc_time now) {
  net_out_.absorb_credits(now);
  if (net_out_.can_pick(now)) return true;
  wake_to_network(net_pick_at_);
  return false;
}

bool Hca::can_transmit(const net::Packet& n, sc_time now) {
  if (net_out_.has_credit(n.vc, n.wire_bytes)) return true;
  net_out_.wait_for_credit(now);
  return false;
}

bool Hca::transmit(net::Packet* n, sc_time now) {
  free_send_bytes(n->payload_bytes);
  net_pick_at_ = net_out_.next_start(now);
  net_out_.send(n, net_pick_at_, now);
  if (net_pick_at_ == now) return true;
  wake_to_network(net_pick_at_);
  return false;
}

void Adapter::to_gpu() {
  down_wake_.fired();
  const sc_time now = sim_now();
  pcie_out_.absorb_credits(now);
  if (!pcie_out_.can_pick(now)) down_wake_.at(pcie_pick_at_);
  while (pcie_out_.can_pick(now)) {
    net::Packet* p = nullptr;
    // Acknowledgements first: they free the GPU's streams.
    if (!acks_.empty() && pcie_out_.has_credit(acks_.front()->vc, acks_.front()->wire_bytes)) {
      p = acks_.pop();
    } else if (!from_net_.empty() && from_net_.front()->t_tail + cfg_.latency <= now) {
      net::Packet* n = from_net_.front();
      const net::PacketFormat& f = gpu_pool_.format();
      const uint32_t bytes = std::min(net::lines_data_bytes(n->lines, f.max_payload_bytes), n->payload_bytes - split_offset_);
      const uint16_t wire = f.wire_bytes(net::lines_wire_payload(n->lines, bytes));
      if (!pcie_out_.has_credit(net::kRequestVc, wire)) break;
      p = gpu_pool_.get();
      p->src = n->src;
      p->dst = net::is_multicast(n->addr) ? cfg_.gpu : n->dst;
      p->count = n->count;  // a switch's sum: the contributions in it
      p->dtype = n->dtype;
      p->redop = n->redop;
      p->addr = n->addr + split_offset_;
      p->stream = n->stream;
      p->op = net::Op::Write;
      p->lines = n->lines;
      p->vc = net::kRequestVc;
      p->payload_bytes = static_cast<uint16_t>(bytes);
      p->wire_bytes = wire;
      p->t_inject = n->t_inject;
      std::memcpy(p->data, n->data + split_offset_, bytes);
      ++writes_delivered_;
      split_offset_ += bytes;
      if (split_offset_ == n->payload_bytes) {
        from_net_.pop();
        --held_down_;
        split_offset_ = 0;
        done_with(n);
        if (!from_net_.empty()) down_wake_.at(from_net_.front()->t_tail + cfg_.latency);
      }
    } else {
      if (!from_net_.empty() && from_net_.front()->t_tail + cfg_.latency > now)
        down_wake_.at(from_net_.front()->t_tail + cfg_.latency);
      break;
    }
    pcie_pick_at_ = pcie_out_.next_start(now);
    pcie_out_.send(p, pcie_pick_at_, now);
    if (pcie_pick_at_ > now) {
      down_wake_.at(pcie_pick_at_);
      return;
    }
  }
  if (!acks_.empty() || (!from_net_.empty() && from_net_.front()->t_tail + cfg_.latency <= now))
    pcie_out_.wait_for_credit(now);
}

void Adapter::trace(sc_core::sc_trace_file* tf) const {
  const std::string me = name();
  sc_core::sc_trace(tf, held_up_, me + ".to_network_writes");
  sc_core::sc_trace(tf, held_down_, me + ".to_gpu_packets");
  sc_core::sc_trace(tf, queued_bytes_, me + ".send_queue_bytes");
  pcie_out_.trace(tf, me + ".pcie");
}

void Hca::trace(sc_core::sc_trace_file* tf) const {
  Adapter::trace(tf);
  net_out_.trace(tf, std::string(name()) + ".net");
}

uint64_t Adapter::report_held(std::ostream& os) const {
  const uint64_t acks = acks_.size(), open = open_.size(), queued = to_net_.size();
  if (held_up_ || open || queued)
    os << "  " << name() << ": " << held_up_ << " GPU writes waiting, " << open << " packets gathering, " << queued
       << " queued for the network (" << queued_bytes_ << " B)\n";
  if (held_down_ || acks)
    os << "  " << name() << ": " << held_down_ << " network packets being written to the GPU, " << acks
       << " acknowledgements to send\n";
  return static_cast<uint64_t>(held_up_) + open + queued + static_cast<uint64_t>(held_down_) + acks;
}

uint64_t Hca::report_held(std::ostream& os) const {
  uint64_t early = 0;
  for (const net::PacketFifo& f : early_) early += f.size();
  const uint64_t n = Adapter::report_held(os);
  if (early)
    os << "  " << name() << ": " << early << " network packets that overtook another, waiting for it\n";
  return n + early;
}

}  // namespace incsim::adapter
