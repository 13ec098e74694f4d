// The in-network operations of a rank on the GPU's cores: NVLS's
// multimem loads and stores, and reducing writes into SHARP's switches
// (cores_rank.h).
#include <algorithm>

#include "cores_rank.h"
#include "gpu/cores.h"
#include "gpu/cores_collective.h"
#include "gpu/group_window.h"

namespace incsim::gpu {

using collectives::Buffer;
using collectives::ChunkRef;
using Kind = collectives::Collective;
using collectives::OpKind;
using collectives::Operation;

namespace {

constexpr uint32_t kBlock = topo::MulticastFabric::kBlockBytes;  // an in-network packet's most data

}  // namespace

// NVLS (multimem.ld_reduce or multimem.st) over the operation's chunks:
// blocks of at most 128 bytes, each within one chunk, addressed by their
// place in the message, spread over the ports toward the group.
void CoresRank::start_innet(Queue& q, int i, uint64_t pass) {
  const Operation& o = op(i);
  q.sending = true;
  q.innet = true;
  q.op = i;
  q.pass = pass;
  q.group = o.group;
  if (q.index == queues_.front()->index) gpu_.cores().show(send_pos_[i], static_cast<int>(pass));
  segments(o.src, pass, false, 0, q.src);
  q.len = total_len(q.src);
  q.dst.clear();
  if (o.kind == OpKind::ReduceRead) segments(o.dst, pass, true, q.len, q.dst);
  const uint64_t per_block = kBlock / coll_.elem_;
  q.seg_blocks.clear();
  q.blocks = 0;
  for (const Segment& x : q.src) {
    q.seg_blocks.push_back(q.blocks);
    q.blocks += (x.len + per_block - 1) / per_block;
  }
  q.issued = q.reads_due = 0;
  INCSIM_LOG(gpu_.log(), Debug, "cores queue {}: pass {} operation {} ({}) issues {} blocks in group {}", q.index, pass,
             i, collectives::op_name(o.kind), q.blocks, o.group);
  if (q.blocks == 0) {
    q.innet = q.sending = false;
    ++q.sent;
    if (o.kind != OpKind::ReduceWrite) op_done(i, pass);  // a push's passes complete as they land, in order
    return;
  }
  const std::vector<int>& ports = group_ports_[o.group];
  if (q.lanes.empty()) q.lanes.resize(static_cast<size_t>(gpu_.num_ports()));
  // The GPU stripes addresses over its links in 128-byte blocks, as the copy
  // engines do (copy_collective.cpp, port_of): the queue's first block takes
  // the port its address falls on, so channels with fewer blocks than ports
  // spread over all of them.
  const uint64_t first = q.src.front().first * coll_.elem_ / kBlock % ports.size();
  for (uint64_t k = 0; k < ports.size(); ++k) {
    const int port = ports[k];
    auto& lane = q.lanes[static_cast<size_t>(port)];
    const uint64_t next = (k + ports.size() - first) % ports.size();
    if (next >= q.blocks) {
      // Past the end: a lane still on the port's list from an earlier operation sends nothing.
      if (lane) lane->next = next;
      continue;
    }
    if (!lane) {
      lane = std::make_unique<Lane>();
      lane->q = &q;
      gpu_.add_stream(lane.get());
    }
    lane->next = next;
    lane->stride = ports.size();
    // A store reads its data first; a load's requests go at once.
    lane->starved = false;
    gpu_.activate(port, lane.get(),
                  o.kind != OpKind::ReduceRead ? gpu_.first_read(port, q.index + 1) : sc_core::SC_ZERO_TIME);
  }
}

CoresRank::Block CoresRank::block_at(const Queue& q, uint64_t block) const {
  const uint64_t per_block = kBlock / coll_.elem_;
  size_t j = q.seg_blocks.size() - 1;
  while (q.seg_blocks[j] > block) --j;
  const Segment& x = q.src[j];
  const uint64_t at = (block - q.seg_blocks[j]) * per_block;
  return {x.first + at, std::min(per_block, x.len - at)};
}

void CoresRank::fill_block(Queue& q, uint64_t block, net::Packet* p) {
  const Operation& o = op(q.op);
  const Block b = block_at(q, block);
  const CoresCollective::Group& g = coll_.groups_[static_cast<size_t>(q.group)];
  p->dst = 0;  // multicast: the region says where
  p->dtype = static_cast<uint8_t>(coll_.dtype_);
  p->redop = static_cast<uint8_t>(coll_.redop_);
  p->payload_bytes = static_cast<uint16_t>(b.n * coll_.elem_);
  if (o.kind == OpKind::ReduceRead) {
    p->op = net::Op::PullRead;
    p->addr = g.base + GroupWindow::kIn + b.element * coll_.elem_;
    ++q.reads_due;
  } else {
    p->op = o.kind == OpKind::ReduceWrite ? net::Op::ReduceWrite : net::Op::Write;
    p->addr = g.base + GroupWindow::kOut + b.element * coll_.elem_;
    p->count = 1;
    read(q.src, position(q.src, b.element), b.n, p->data);
    if (o.kind == OpKind::ReduceWrite) {
      const topo::MulticastFabric::HomePort home = coll_.fabric_->home_port(g.out, p->addr);
      p->home_switch = home.sw;
      p->home_port = static_cast<int16_t>(home.port);
      ++q.pushes_out;
    }
  }
  if (++q.issued < q.blocks || o.kind == OpKind::ReduceRead) return;
  // The last store has left: posted, nothing comes back (one delta on, not from inside the port's fill).
  done_reading(q.src, q.pass);
  gpu_.call_after(*this, sc_core::SC_ZERO_TIME, q.at);
}

// A reducing read's block: the group's sum, less this GPU's own data unless
// the switches read it too (multimem).
void CoresRank::read_back(Queue& q, const net::Packet* p) {
  const CoresCollective::Group& g = coll_.groups_[static_cast<size_t>(q.group)];
  const uint64_t e = (p->addr - g.base - GroupWindow::kIn) / coll_.elem_, n = p->payload_bytes / coll_.elem_;
  const bool own_through_switch = coll_.program_.multimem;
  const size_t members = g.members.size();
  if (p->count != (own_through_switch ? members : members - 1)) wrong_ += n;  // one lost or doubled
  const uint8_t* sum = p->data;
  if (!own_through_switch) {  // the others' sum: add its own
    scratch_.assign(p->data, p->data + n * coll_.elem_);
    gpu_.cores().alu().reduce_own(coll_.data_, coll_.dtype_, coll_.redop_, rank_, e, n, scratch_.data());
    sum = scratch_.data();
  }
  write(q.dst, position(q.src, e), n, sum);
  --q.reads_due;
  if (q.issued == q.blocks && q.reads_due == 0) finish_innet(q);
}

void CoresRank::finish_innet(Queue& q) {
  q.innet = q.sending = false;
  ++q.sent;
  if (op(q.op).kind != OpKind::ReduceWrite) op_done(q.op, q.pass);
  progress(q);
}

void CoresRank::read_region(uint64_t addr, uint32_t bytes, uint8_t* out) {
  const CoresCollective::Group& g = coll_.groups_[static_cast<size_t>(group_of(addr))];
  sc_assert(addr - g.base < GroupWindow::kOut);
  coll_.data_.fill(coll_.dtype_, rank_, (addr - g.base - GroupWindow::kIn) / coll_.elem_, bytes / coll_.elem_, out);
}

void CoresRank::on_region_write(const net::Packet& p) {
  const int g = group_of(p.addr);
  const uint64_t e = (p.addr - coll_.groups_[g].base - GroupWindow::kOut) / coll_.elem_;
  const uint64_t n = p.payload_bytes / coll_.elem_;
  uint32_t m;
  uint64_t pass;
  coll_.layout_->locate(e, m, pass);
  const int i = mc_receiver_[g].empty() ? -1 : mc_receiver_[g][m];
  if (i == -2) return;  // its own store, back through the switches (multimem): its result is checked already
  if (i < 0) {
    wrong_ += n;  // nothing here expects it
    return;
  }
  if (op(i).kind == OpKind::ReduceWrite) {
    if (p.count != coll_.groups_[g].members.size()) wrong_ += n;  // a contribution lost or doubled
    // Its credit is back: a lane that waited for one goes on.
    Queue& q = *queues_[queue_of_[i]];
    --q.pushes_out;
    for (auto& lane : q.lanes)
      if (lane && lane->starved) {
        lane->starved = false;
        gpu_.activate(lane->port, lane.get(), sc_core::SC_ZERO_TIME);
      }
  }
  Landing& l = landing_[landing_key(i, pass)];
  if (l.dst.empty()) {
    segments(op(i).dst, pass, true, 0, l.dst);
    l.len = total_len(l.dst);
  }
  write(l.dst, position(l.dst, e), n, p.data);
  l.got += n;
  if (l.got < l.len) return;
  // A sum from across nodes (SHARP) reaches the cores through NCCL's
  // proxies, as a step between nodes does (CoresParams::net).
  if (op(i).kind == OpKind::ReduceWrite && group_proxied_[g] != sc_core::SC_ZERO_TIME)
    gpu_.call_after(*this, group_proxied_[g], kProxiedSum | static_cast<uint64_t>(i));
  else
    landed_passes(i);
}

void CoresRank::landed_passes(int i) {
  while (done_passes_[i] < passes_of(op(i))) {
    const uint64_t pass = done_passes_[i];
    const auto it = landing_.find(landing_key(i, pass));
    if (it != landing_.end()) {
      if (it->second.got < it->second.len) return;
      if (op(i).kind == OpKind::ReduceWrite) done_reading(it->second.dst, pass);
      landing_.erase(it);
    } else if (elements(op(i).dst, pass) > 0) {
      return;  // nothing has landed yet; a pass of a small message may have nothing to land
    }
    op_done(i, pass);
    if (done_passes_[i] == passes_of(op(i)) && --unfinished_ == 0) coll_.rank_done();
  }
}

uint32_t CoresRank::Lane::next_wire_bytes(const net::PacketFormat& f) const {
  if (!q->innet || next >= q->blocks) return 0;
  const CoresRank& r = *q->rank;
  const OpKind kind = r.op(q->op).kind;
  if (kind == OpKind::ReduceWrite && q->pushes_out >= r.coll_.params_.push_credits) {
    starved = true;
    return 0;
  }
  return f.wire_bytes(kind == OpKind::ReduceRead ? net::Op::PullRead : kind == OpKind::ReduceWrite ? net::Op::ReduceWrite : net::Op::Write,
                      static_cast<uint32_t>(r.block_at(*q, next).n * r.coll_.elem_));
}

void CoresRank::Lane::fill(net::Packet* p) {
  const uint64_t b = next;
  next += stride;
  q->rank->fill_block(*q, b, p);
}

void CoresRank::Lane::on_response(net::Packet* p) { q->rank->read_back(*q, p); }

}  // namespace incsim::gpu
