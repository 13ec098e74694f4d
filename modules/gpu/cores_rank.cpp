#include "cores_rank.h"

#include <algorithm>
#include <cstring>

#include "collectives/layout.h"
#include "core/error.h"
#include "gpu/cores.h"
#include "gpu/cores_collective.h"
#include "gpu/group_window.h"

namespace incsim::gpu {

using collectives::Buffer;
using collectives::ChunkRef;
using Kind = collectives::Collective;
using collectives::OpKind;
using collectives::Operation;
using collectives::passive;
using collectives::receives_landing;

size_t CoresRank::conn_of(const std::vector<std::unique_ptr<Conn>>& v, int channel, int peer) {
  for (size_t k = 0; k < v.size(); ++k)
    if (v[k]->channel == channel && v[k]->peer == peer) return k;
  return v.size();
}

CoresRank::Conn& CoresRank::add_conn(std::vector<std::unique_ptr<Conn>>& v, int channel,
                                                           int peer, Queue& queue) {
  const size_t k = conn_of(v, channel, peer);
  if (k < v.size()) {
    if (v[k]->queue != &queue)
      throw UserError("rank " + std::to_string(rank_) + "'s queues " + std::to_string(v[k]->queue->index) + " and " +
                      std::to_string(queue.index) + " both " + (&v == &send_ ? "send to" : "receive from") + " rank " +
                      std::to_string(peer) + " on channel " + std::to_string(channel) +
                      ": the GPU's cores run one thread block per connection");
    return *v[k];
  }
  auto c = std::make_unique<Conn>();
  c->channel = channel;
  c->peer = peer;
  c->queue = &queue;
  const std::vector<int>& ports = coll_.ports_[rank_][peer];
  c->port = ports[static_cast<size_t>(channel) % ports.size()];
  c->proxied = &v == &recv_ ? coll_.proxied(peer, rank_) : coll_.proxied(peer, rank_, true);
  v.push_back(std::move(c));
  return *v.back();
}

void CoresRank::canon(Buffer& buf, uint32_t& index, int64_t& message) const {
  message = collectives::message_chunk(coll_.program_, rank_, buf, index);
}

CoresRank::CoresRank(CoresCollective& coll, int rank)
    : coll_(coll), gpu_(*coll.gpus_[rank]), rank_(rank) {
  const collectives::Program& p = coll.program_;
  const collectives::PassLayout& lay = *coll.layout_;
  const int n_ops = p.op_count(rank);
  done_passes_.assign(n_ops, 0);
  dependents_.assign(n_ops, {});
  queue_of_.assign(n_ops, 0);
  send_pos_.assign(n_ops, 0);
  in_of_.assign(n_ops, nullptr);
  out_of_.assign(n_ops, nullptr);
  // Per canonical buffer, one past the largest chunk this rank's operations
  // and results name (a rank's in-place window can lie anywhere in the
  // buffer, but only these are ever looked up: 512 ranks' rings would
  // otherwise take 50 MB of counts per rank).
  uint32_t extent[3] = {0, 0, 0};
  const auto extend = [&](Buffer buf, uint32_t index) {
    int64_t m;
    canon(buf, index, m);
    extent[static_cast<int>(buf)] = std::max(extent[static_cast<int>(buf)], index + 1);
  };
  for (int i = 0; i < n_ops; ++i)
    for (const ChunkRef& ref : {op(i).src, op(i).dst})
      for (uint32_t k = 0; k < ref.count; ++k) extend(ref.buf, ref.index + k);
  for (uint32_t k = 0; k < collectives::chunk_limit(p, rank, Buffer::Output); ++k) extend(Buffer::Output, k);
  for (int b = 0; b < 3; ++b) {
    const uint32_t n = extent[b];
    writers_[b].assign(n, 0);
    result_owner_[b].assign(n, -2);
    readers_[b].assign(n, 0);
  }
  uint32_t max_count = 1;
  // Queues in id order, each its operations in program order.
  for (int i = 0; i < n_ops; ++i) {
    const Operation& o = op(i);
    if (o.engine != collectives::Engine::Cores)
      throw UserError(std::string("the GPU's cores cannot run a ") + collectives::engine_name(o.engine) +
                      " operation (rank " + std::to_string(rank) + " operation " + std::to_string(i) + ")");
    const bool new_queue =
        std::none_of(queues_.begin(), queues_.end(), [&](const auto& q) { return q->index == o.queue; });
    if (!passive(o) && new_queue) {
      auto q = std::make_unique<Queue>();
      q->rank = this;
      q->index = o.queue;
      queues_.push_back(std::move(q));
    }
    for (uint32_t d = 0; d < o.dep_count; ++d) dependents_[p.deps_of(o)[d]].push_back(i);
    const auto mark = [&](ChunkRef ref, bool write) {
      for (uint32_t k = 0; k < ref.count; ++k) {
        Buffer buf = ref.buf;
        uint32_t index = ref.index + k;
        int64_t m;
        canon(buf, index, m);
        if (write) ++writers_[static_cast<int>(buf)][index];
        else ++readers_[static_cast<int>(buf)][index];
      }
    };
    collectives::chunk_uses(o, mark);  // a reducing write's landing: landed_passes
    max_count = std::max<uint32_t>(max_count, std::max(o.src.count, o.dst.count));
  }
  std::sort(queues_.begin(), queues_.end(), [](const auto& a, const auto& b) { return a->index < b->index; });
  for (size_t k = 0; k < queues_.size(); ++k) queues_[k]->at = k;
  for (int i = 0; i < n_ops; ++i) {
    const Operation& o = op(i);
    queue_of_[i] = -1;
    for (size_t k = 0; k < queues_.size() && !passive(o); ++k)
      if (queues_[k]->index == o.queue) {
        Queue& q = *queues_[k];
        queue_of_[i] = static_cast<int>(k);
        send_pos_[i] = 0;
        for (int j : q.ops) send_pos_[i] += collectives::sends(op(j).kind) || collectives::in_network(op(j).kind);
        q.ops.push_back(i);
        if (collectives::sends(o.kind)) out_of_[i] = &add_conn(send_, o.channel, o.send_peer, q);
        if (collectives::receives(o.kind)) in_of_[i] = &add_conn(recv_, o.channel, o.recv_peer, q);
      }
  }
  // The result chunks: the canonical image of each output chunk (none
  // where the rank has no result: a reduce's or a gather's other ranks).
  const uint32_t results = collectives::has_result(p, rank) ? collectives::chunk_limit(p, rank, Buffer::Output) : 0;
  for (uint32_t k = 0; k < results; ++k) {
    Buffer buf = Buffer::Output;
    uint32_t index = k;
    int64_t m;
    canon(buf, index, m);
    result_owner_[static_cast<int>(buf)][index] = collectives::result_owner(p, m);
    for (uint64_t pass = 0; pass < lay.passes[m % lay.parts]; ++pass) {
      uint64_t first, len;
      lay.range(pass, static_cast<uint32_t>(m), first, len);
      expect_checked_ += len;
    }
  }
  for (auto& q : queues_) {
    const Operation& first = op(q->ops.front());
    q->passes = lay.parts > 1 ? lay.passes[first.channel % lay.parts] : lay.passes[0];
    q->total = q->passes * q->ops.size();
    for (int i : q->ops)
      q->transfers += collectives::sends(op(i).kind) || collectives::in_network(op(i).kind) ? q->passes : 0;
  }
  // In-network groups: the ports toward the other members, and who receives each chunk's multicast.
  group_ports_.resize(p.groups.size());
  mc_receiver_.resize(p.groups.size());
  group_proxied_.assign(p.groups.size(), sc_core::SC_ZERO_TIME);
  for (size_t g = 0; g < p.groups.size(); ++g) {
    if (std::find(p.groups[g].begin(), p.groups[g].end(), rank) == p.groups[g].end()) continue;
    for (int m : p.groups[g]) {
      if (m == rank) continue;
      if (group_ports_[g].empty()) {
        group_ports_[g] = coll.ports_[rank][m];
        mc_receiver_[g].assign(coll.message_chunks_, -1);
      }
      group_proxied_[g] = std::max(group_proxied_[g], coll.proxied(m, rank));
    }
  }
  int receiving = 0;
  for (int i = 0; i < n_ops; ++i) {
    const Operation& o = op(i);
    if (o.kind == OpKind::ReduceRead && o.dst.empty()) done_passes_[i] = passes_of(o);  // its memory answers
    if (o.kind != OpKind::MulticastWrite && o.kind != OpKind::ReduceWrite) continue;
    receiving += receives_landing(o) ? 1 : 0;
    const ChunkRef ref = o.src.empty() || o.kind == OpKind::ReduceWrite ? o.dst : o.src;
    for (uint32_t k = 0; k < ref.count; ++k) {
      Buffer buf = ref.buf;
      uint32_t index = ref.index + k;
      int64_t m;
      canon(buf, index, m);
      int& at = mc_receiver_[o.group][static_cast<uint32_t>(m)];
      if (receives_landing(o)) at = i;
      else if (at == -1) at = -2;
    }
  }

  // Receive connection k's tail flag at 16k, send connection k's head flag
  // at 16k + 8, from flags_base_.
  gpu_.attach(*this);
  flags_bytes_ = 16ull * coll.max_conns_;
  flags_base_ = gpu_.memory().alloc(flags_bytes_);
  gpu_.watch(*this, flags_base_, flags_bytes_);
  // A slot as large as the largest chunk this message moves: 72 GPUs' 18
  // channels of 4 slots of 512 KiB would take 2.6 GB however small the message.
  slot_bytes_ = lay.largest_chunk() * coll_.elem_ * max_count;
  for (size_t k = 0; k < recv_.size(); ++k) {
    recv_[k]->flag = flags_base_ + 16 * k;
    recv_[k]->mailbox_bytes = slot_bytes_ * coll.slot_params_.slots;
    recv_[k]->mailbox = gpu_.memory().alloc_paged(recv_[k]->mailbox_bytes, std::max<uint64_t>(slot_bytes_, 1));
    recv_[k]->slot_len.assign(coll.slot_params_.slots, 0);
    // LL and LL128 carry their flags in the data: the receiver polls the
    // mailbox's lines themselves.
    if (coll.proto_ != collectives::Protocol::Simple) {
      recv_[k]->landed.assign(coll.slot_params_.slots, 0);
      gpu_.watch(*this, recv_[k]->mailbox, recv_[k]->mailbox_bytes);
    }
  }
  for (size_t k = 0; k < send_.size(); ++k) send_[k]->flag = flags_base_ + 16 * k + 8;
  for (auto& q : queues_) gpu_.add_stream(q.get());
  for (size_t g = 0; g < coll.groups_.size(); ++g)
    if (!group_ports_[g].empty())
      gpu_.serve_region(*this, coll.groups_[g].base, coll.groups_[g].base + GroupWindow::kBytes);
  unfinished_ = static_cast<int>(queues_.size()) + receiving;
}

CoresRank::~CoresRank() {
  for (auto& q : queues_) {
    gpu_.remove_stream(q.get());
    for (auto& lane : q->lanes)
      if (lane) gpu_.remove_stream(lane.get());
  }
  for (auto& c : recv_) gpu_.memory().free(c->mailbox);
  gpu_.memory().free(flags_base_);
  gpu_.detach(*this);
}

void CoresRank::link(const std::vector<std::unique_ptr<CoresRank>>& ranks) {
  for (auto& c : send_) {
    CoresRank& peer = *ranks[c->peer];
    Conn& r = *peer.recv_[conn_of(peer.recv_, c->channel, rank_)];
    c->mailbox = r.mailbox;
    c->mailbox_bytes = r.mailbox_bytes;
    c->peer_flag = r.flag;
    c->remote = &r;
    r.peer_flag = c->flag;
    r.remote = c.get();
  }
}

void CoresRank::report(std::ostream& os, const std::string& prefix) const {
  for (const auto& q : queues_) {
    if (q->finished) continue;
    os << prefix << " cores queue " << q->index << ": ";
    if (q->sending) {
      os << "pass " << q->pass << " operation " << q->op << " (" << collectives::op_name(op(q->op).kind)
         << ") sending (" << q->pos << " of " << q->len << " elements issued, " << q->data_acks_due << " acks due)";
    } else if (q->next < q->total) {
      const int i = q->ops[q->next % q->ops.size()];
      os << "pass " << q->next / q->ops.size() << " operation " << i << " (" << collectives::op_name(op(i).kind)
         << ") waiting";
    } else {
      os << "all operations started";
    }
    if (q->innet)
      os << " (" << q->issued << " of " << q->blocks << " blocks issued, " << q->reads_due << " reads due)";
    if (q->pushes_out) os << ", " << q->pushes_out << " reducing writes awaiting their sums";
    if (!q->pending.empty()) os << ", " << q->pending.size() << " receives waiting for data";
    os << ", " << q->flag_acks_due << " flag acks due\n";
  }
  for (int i = 0; i < static_cast<int>(done_passes_.size()); ++i) {
    if (!receives_landing(op(i)) || done_passes_[i] == passes_of(op(i))) continue;
    const uint64_t pass = done_passes_[i];
    const auto it = landing_.find(landing_key(i, pass));
    os << prefix << " operation " << i << " (" << collectives::op_name(op(i).kind) << ") pass " << pass << ": "
       << (it == landing_.end() ? 0 : it->second.got) << " of " << elements(op(i).dst, pass) << " elements of its "
       << (op(i).kind == OpKind::ReduceWrite ? "sum" : "multicast") << " landed\n";
  }
}

// The connection a watched write is for: a receive connection's tail flag
// or mailbox lines, or a send connection's head flag.
CoresRank::Conn* CoresRank::watched(uint64_t addr) const {
  if (addr - flags_base_ < flags_bytes_) {
    const uint64_t k = (addr - flags_base_) / 16;
    return (addr - flags_base_) % 16 == 0 ? recv_[k].get() : send_[k].get();
  }
  for (auto& c : recv_)
    if (addr - c->mailbox < c->mailbox_bytes) return c.get();
  sc_assert(false && "a watched write outside the flags and the mailboxes");
  return nullptr;
}

void CoresRank::on_flag(uint64_t addr) {
  Conn& c = *watched(addr);
  if (c.proxied != sc_core::SC_ZERO_TIME) {
    // Between nodes a step, or a slot's way back, is seen only once NCCL's
    // proxies have relayed it (CoresParams::net); every write waits alike,
    // in order.
    gpu_.call_after(*this, c.proxied, addr | kRelayed);
    return;
  }
  seen(c, addr);
}

void CoresRank::seen(Conn& c, uint64_t addr) {
  if (addr - flags_base_ >= flags_bytes_) return landed(c, addr);
  uint64_t v = 0;
  std::memcpy(&v, gpu_.memory().at(addr, 8), 8);
  const bool tail = (addr - flags_base_) % 16 == 0;
  if (tail && !c.landed.empty()) {  // LL, LL128: only an empty transfer stores a flag; it completes in its turn
    c.flagged = std::max(c.flagged, v);
    take_landed(c);
    return;
  }
  c.seen = std::max(c.seen, v);
  if (tail)
    INCSIM_LOG(gpu_.log(), Debug, "cores queue {}: receives transfer {} from rank {} on channel {} (its flag)",
               c.queue->index, v - 1, c.peer, c.channel);
  else
    INCSIM_LOG(gpu_.log(), Debug, "cores queue {}: rank {} has freed {} mailbox slots on channel {}", c.queue->index,
               c.peer, v, c.channel);
  progress(*c.queue);
}

// Does whatever queue q can do now: complete trailing receives whose data
// has landed, then run its next operations until one must wait.
void CoresRank::progress(Queue& q) {
  collectives::take_turn(q, *this, coll_.program_, rank_, static_cast<uint64_t>(coll_.slot_params_.slots));
  if (!q.finished && q.next == q.total && q.pending.empty() && !q.sending && q.flag_acks_due == 0 &&
      q.data_acks_due == 0) {
    q.finished = true;
    INCSIM_LOG(gpu_.log(), Debug, "cores queue {}: done, {} transfers", q.index, q.transfers);
    if (--unfinished_ == 0) coll_.rank_done();
  }
}

void CoresRank::start_send(Queue& q, int i, uint64_t pass) {
  const Operation& o = op(i);
  const uint64_t slots = static_cast<uint64_t>(coll_.slot_params_.slots);
  q.sending = true;
  q.op = i;
  q.pass = pass;
  q.pos = 0;
  q.out = &conn_out(i);
  q.in = collectives::receives(o.kind) ? &conn_in(i) : nullptr;
  q.src.clear();
  q.operand.clear();
  q.dst.clear();
  if (q.in) {
    const uint64_t idx = q.in->claimed++;
    q.in_addr = q.in->mailbox + (idx % slots) * slot_bytes_;
    q.len = q.in->slot_len[idx % slots];
    if (o.kind != OpKind::RecvCopySend) segments(o.src.empty() ? o.dst : o.src, pass, false, q.len, q.operand);
    if (o.kind == OpKind::RecvReduceCopySend || o.kind == OpKind::RecvCopySend) segments(o.dst, pass, true, q.len, q.dst);
  } else {
    segments(o.src, pass, false, 0, q.src);
    q.len = total_len(q.src);
  }
  const uint64_t slot = q.out->claimed++ % slots;
  q.out_addr = q.out->mailbox + slot * slot_bytes_;
  q.out->remote->slot_len[slot] = q.len;
  INCSIM_LOG(gpu_.log(), Debug, "cores queue {}: pass {} operation {} ({}) sends {} elements to rank {}", q.index,
             pass, i, collectives::op_name(o.kind), q.len, q.out->peer);
  if (q.index == queues_.front()->index) gpu_.cores().show(send_pos_[i], static_cast<int>(pass));
  if (q.len == 0) {
    issued_all(q);
    finish_send(q);
  } else {
    // The cores read the first data (stream 0 is the copy engine's).
    gpu_.activate(q.out->port, &q, gpu_.first_read(q.out->port, q.index + 1));
  }
}

void CoresRank::finish_send(Queue& q, bool flag) {
  Conn& out = *q.out;
  if (flag) {  // the fence has completed: every data write is acknowledged; now the flag
    INCSIM_LOG(gpu_.log(), Debug, "cores queue {}: transfer {} acknowledged, flag to rank {}", q.index, out.done,
               out.peer);
    ++q.flag_acks_due;
    gpu_.store_word(out.port, static_cast<uint32_t>(coll_.gpus_[out.peer]->index()), out.peer_flag, out.done + 1,
                    q.id);
  }
  ++out.done;
  q.sending = false;
  ++q.sent;
  op_done(q.op, q.pass);
  progress(q);
}

void CoresRank::landed(Conn& c, uint64_t addr) {
  ++c.landed[(addr - c.mailbox) / slot_bytes_];
  take_landed(c);
}

// Transfers complete in order: the next one once every packet its length
// takes is in, or, empty, once its flag is (a later transfer's flag has
// started every earlier one, so their lengths are current).
void CoresRank::take_landed(Conn& c) {
  const uint64_t slots = static_cast<uint64_t>(coll_.slot_params_.slots);
  const uint64_t per_packet = coll_.packet_data_ / coll_.elem_;
  bool any = false;
  for (;;) {
    const uint64_t s = c.seen % slots;
    const uint64_t packets = (c.slot_len[s] + per_packet - 1) / per_packet;
    if (packets == 0 ? c.flagged <= c.seen : c.landed[s] < packets) break;
    c.landed[s] = 0;
    ++c.seen;
    any = true;
  }
  if (any) progress(*c.queue);
}

void CoresRank::consume(Queue& q, Conn& c) {
  if (slot_bytes_)  // the slot's data is read: its host memory goes back
    gpu_.memory().release(c.mailbox + (c.done % static_cast<uint64_t>(coll_.slot_params_.slots)) * slot_bytes_);
  ++c.done;
  ++q.flag_acks_due;
  gpu_.store_word(c.port, static_cast<uint32_t>(coll_.gpus_[c.peer]->index()), c.peer_flag, c.done, q.id);
}

void CoresRank::complete_receive(Queue& q, const Pending& pd) {
  const Operation& o = op(pd.op);
  Conn& c = conn_in(pd.op);
  const uint64_t slots = static_cast<uint64_t>(coll_.slot_params_.slots);
  const uint64_t len = c.slot_len[pd.idx % slots];
  const uint8_t* in = gpu_.memory().at(c.mailbox + (pd.idx % slots) * slot_bytes_, len * coll_.elem_);
  INCSIM_LOG(gpu_.log(), Debug, "cores queue {}: pass {} operation {} ({}) reads {} elements from rank {}", q.index,
             pd.pass, pd.op, collectives::op_name(o.kind), len, c.peer);
  if (o.kind == OpKind::RecvReduceCopy) {
    segments(o.src.empty() ? o.dst : o.src, pd.pass, false, len, local_src_);
    scratch_.assign(in, in + len * coll_.elem_);
    reduce_into(local_src_, 0, len, scratch_.data());
    in = scratch_.data();
  } else if (coll_.copies_are_results_ && gpu_.cores().alu().faulty()) {
    scratch_.assign(in, in + len * coll_.elem_);
    garble(scratch_.data(), len);
    in = scratch_.data();
  }
  segments(o.dst, pd.pass, true, len, local_dst_);
  write(local_dst_, 0, len, in);
  if (o.kind == OpKind::RecvReduceCopy) done_reading(local_src_, pd.pass);
  consume(q, c);
  op_done(pd.op, pd.pass);
}

void CoresRank::run_local(int i, uint64_t pass) {
  const Operation& o = op(i);
  if (o.kind != OpKind::Nop) {
    segments(o.src, pass, false, 0, local_src_);
    const uint64_t len = total_len(local_src_);
    scratch_.resize(len * coll_.elem_);
    if (o.kind == OpKind::Reduce) {
      segments(o.dst, pass, false, len, local_dst_);
      read(local_dst_, 0, len, scratch_.data());
      reduce_into(local_src_, 0, len, scratch_.data());
    } else {
      read(local_src_, 0, len, scratch_.data());
      garble(scratch_.data(), len);
    }
    segments(o.dst, pass, true, len, local_dst_);
    write(local_dst_, 0, len, scratch_.data());
    done_reading(local_src_, pass);
    if (o.kind == OpKind::Reduce) done_reading(local_dst_, pass);
  }
  op_done(i, pass);
}

void CoresRank::op_done(int i, uint64_t pass) {
  done_passes_[i] = pass + 1;
  for (int d : dependents_[i])
    if (queue_of_[d] >= 0 && queue_of_[d] != queue_of_[i]) progress(*queues_[queue_of_[d]]);
}

uint64_t CoresRank::passes_of(const Operation& o) const {
  const collectives::PassLayout& lay = *coll_.layout_;
  return lay.parts > 1 ? lay.passes[o.channel % lay.parts] : lay.passes[0];
}

int CoresRank::group_of(uint64_t addr) const {
  for (size_t g = 0; g < coll_.groups_.size(); ++g)
    if (addr - coll_.groups_[g].base < GroupWindow::kBytes) return static_cast<int>(g);
  sc_assert(false && "an address in no group's window");
  return -1;
}

uint64_t CoresRank::position(const std::vector<Segment>& s, uint64_t e) {
  uint64_t pos = 0;
  for (const Segment& x : s) {
    if (e - x.first < x.len) return pos + (e - x.first);
    pos += x.len;
  }
  sc_assert(false && "an element outside the operation's chunks");
  return 0;
}

uint64_t CoresRank::elements(const ChunkRef& ref, uint64_t pass) const {
  uint64_t len = 0;
  for (uint32_t k = 0; k < ref.count; ++k) {
    Buffer buf = ref.buf;
    uint32_t index = ref.index + k;
    int64_t m;
    canon(buf, index, m);
    uint64_t first, n;
    coll_.layout_->range(pass, static_cast<uint32_t>(m), first, n);
    len += n;
  }
  return len;
}

void CoresRank::segments(const ChunkRef& ref, uint64_t pass, bool write, uint64_t len,
                                     std::vector<Segment>& out) {
  const collectives::PassLayout& lay = *coll_.layout_;
  out.clear();
  for (uint32_t k = 0; k < ref.count; ++k) {
    Segment s;
    s.buf = ref.buf;
    s.index = ref.index + k;
    int64_t m;
    canon(s.buf, s.index, m);
    const int b = static_cast<int>(s.buf);
    if (m >= 0) {
      lay.range(pass, static_cast<uint32_t>(m), s.first, s.len);
    } else if (write) {  // scratch takes what is written, split as the message's chunks are
      s.len = len / ref.count + (k < len % ref.count ? 1 : 0);
    }
    const uint64_t at = key(s.buf, s.index, pass);
    auto it = store_.find(at);
    if (write && readers_[b][s.index]) {  // kept for its readers (a relay's scratch has none)
      if (it == store_.end()) it = store_.emplace(at, Stored{{}, readers_[b][s.index]}).first;
      it->second.bytes.resize(s.len * coll_.elem_);
      s.stored = &it->second.bytes;
    } else if (it != store_.end()) {
      s.stored = &it->second.bytes;
      if (m < 0) s.len = it->second.bytes.size() / coll_.elem_;
    }
    if (write && result_owner_[b][s.index] != -2) {
      s.check = writers_[b][s.index] <= 1;
      if (!s.check) {
        const auto w = writes_.try_emplace(at, 0).first;
        s.check = ++w->second == writers_[b][s.index];
        if (s.check) writes_.erase(w);
      }
      s.owner = result_owner_[b][s.index];
    }
    out.push_back(s);
  }
}

void CoresRank::done_reading(const std::vector<Segment>& s, uint64_t pass) {
  for (const Segment& x : s) {
    if (!x.stored) continue;
    const auto it = store_.find(key(x.buf, x.index, pass));
    if (it != store_.end() && --it->second.readers_left == 0) store_.erase(it);
  }
}

uint64_t CoresRank::total_len(const std::vector<Segment>& s) {
  uint64_t n = 0;
  for (const Segment& x : s) n += x.len;
  return n;
}

void CoresRank::read(const std::vector<Segment>& s, uint64_t off, uint64_t n, uint8_t* out) const {
  walk(s, off, n, [&](const Segment& x, uint64_t at, uint64_t m) {
    if (x.stored) std::memcpy(out, x.stored->data() + at * coll_.elem_, m * coll_.elem_);
    else if (x.buf == Buffer::Input) coll_.data_.fill(coll_.dtype_, rank_, x.first + at, m, out);
    else std::memset(out, 0, m * coll_.elem_);
    out += m * coll_.elem_;
  });
}

void CoresRank::reduce_into(const std::vector<Segment>& s, uint64_t off, uint64_t n, uint8_t* acc) {
  elements::Alu& alu = gpu_.cores().alu();
  walk(s, off, n, [&](const Segment& x, uint64_t at, uint64_t m) {
    if (x.stored)
      alu.reduce(coll_.dtype_, coll_.redop_, acc, x.stored->data() + at * coll_.elem_,
                 static_cast<uint32_t>(m * coll_.elem_));
    else if (x.buf == Buffer::Input)
      alu.reduce_own(coll_.data_, coll_.dtype_, coll_.redop_, rank_, x.first + at, m, acc);
    acc += m * coll_.elem_;
  });
}

void CoresRank::write(const std::vector<Segment>& s, uint64_t off, uint64_t n, const uint8_t* data) {
  walk(s, off, n, [&](const Segment& x, uint64_t at, uint64_t m) {
    if (x.stored) std::memcpy(x.stored->data() + at * coll_.elem_, data, m * coll_.elem_);
    if (x.check) {
      wrong_ += coll_.data_.mismatches(coll_.dtype_, coll_.redop_, data, x.first + at, m, x.owner);
      checked_ += m;
    }
    data += m * coll_.elem_;
  });
}

uint64_t CoresRank::Queue::next_elems() const {
  if (!sending || innet || pos >= len) return 0;
  return std::min<uint64_t>(rank->coll_.packet_data_ / rank->coll_.elem_, len - pos);
}

uint32_t CoresRank::Queue::next_wire_bytes(const net::PacketFormat& f) const {
  const uint64_t m = next_elems();
  return m ? f.wire_bytes(protocol_wire_payload(rank->coll_.proto_, static_cast<uint32_t>(m * rank->coll_.elem_))) : 0;
}

void CoresRank::Queue::fill(net::Packet* p) {
  CoresRank& r = *rank;
  const OpKind k = r.op(op).kind;
  const uint64_t m = next_elems();
  p->dst = static_cast<uint32_t>(r.coll_.gpus_[out->peer]->index());
  p->op = net::Op::Write;
  p->lines = collectives::lines_of(r.coll_.proto_);
  p->addr = out_addr + pos * r.coll_.elem_;
  p->payload_bytes = static_cast<uint16_t>(m * r.coll_.elem_);
  // The data: what was received (plus the operand where the operation
  // reduces), or the source chunk; kept where the operation writes it.
  if (in) {
    std::memcpy(p->data, r.gpu_.memory().at(in_addr + pos * r.coll_.elem_, m * r.coll_.elem_), m * r.coll_.elem_);
    if (k != OpKind::RecvCopySend) r.reduce_into(operand, pos, m, p->data);
    else r.garble(p->data, m);
    if (!dst.empty()) r.write(dst, pos, m, p->data);
  } else {
    r.read(src, pos, m, p->data);
  }
  pos += m;
  // A transfer is one of NCCL's steps: its proxy posts it as one message.
  p->more = pos < len;
  p->last = !p->more;
  ++data_acks_due;
  if (pos < len) return;
  r.issued_all(*this);
  if (r.coll_.proto_ != collectives::Protocol::Simple) r.gpu_.call_after(r, sc_core::SC_ZERO_TIME, at);
}

bool CoresRank::data_ack(const Queue& q, const net::Packet* p) const {
  // A data write's ack comes from a mailbox this queue writes to, any other
  // is a flag's. Both addresses are the peer's own: with other programs on
  // the GPUs (a tensor-parallel and a data-parallel group's), its flags need
  // not sit where ours do.
  const auto writes = [&](const Conn& c) {
    return p->src == static_cast<uint32_t>(coll_.gpus_[c.peer]->index()) && p->addr - c.mailbox < c.mailbox_bytes;
  };
  if (q.out && writes(*q.out)) return true;
  // Simple's data acks all come while its transfer is out (its fence); LL's
  // and LL128's may come after the queue has moved on to another connection.
  if (coll_.proto_ == collectives::Protocol::Simple) return false;
  for (const auto& c : send_)
    if (c->queue == &q && writes(*c)) return true;
  return false;
}

void CoresRank::Queue::on_response(net::Packet* p) {
  if (!rank->data_ack(*this, p)) {
    sc_assert(flag_acks_due > 0);
    --flag_acks_due;
  } else {
    sc_assert(data_acks_due > 0);
    // Simple's fence: the last ack releases the flag.
    if (--data_acks_due == 0 && sending && pos == len && rank->coll_.proto_ == collectives::Protocol::Simple) {
      rank->finish_send(*this);
      return;
    }
  }
  rank->progress(*this);
}

}  // namespace incsim::gpu
