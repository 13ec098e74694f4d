#include "host_program.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "core/error.h"

namespace incsim::roce {

using collectives::OpKind;

namespace {
constexpr uint64_t kOffsetMask = (1ull << 40) - 1;
constexpr uint64_t kSeqMask = (1ull << 22) - 1;

int connection(const std::vector<Connection>& cs, uint16_t channel, int peer) {
  for (const Connection& c : cs)
    if (c.channel == channel && c.peer == peer) return c.qp;
  return -1;
}
}  // namespace

HostProgram::HostProgram(RoceNic* nic, const collectives::Program* program, int rank,
                         const std::vector<Connection>& sends, const std::vector<Connection>& receives,
                         const HostConfig& cfg,
                         const elements::DataPattern* pattern, elements::DType dtype, elements::RedOp op)
    : nic_(nic), program_(program), rank_(rank), cfg_(cfg), pattern_(pattern), dtype_(dtype), redop_(op),
      msg_bytes_(uint64_t{cfg.msg_len} * cfg.mtu_payload),
      order_(*program, rank, cfg.window) {
  const collectives::Program& p = *program_;
  if (p.collective != collectives::Collective::AllReduce || !p.in_place || p.buffers[rank_].scratch)
    throw UserError("program " + p.name + ": the RoCE hosts run in-place all-reduces without scratch buffers");
  const int n = p.op_count(rank_);
  ops_.resize(n);
  int qps = 0;
  for (const Connection& c : sends) qps = std::max(qps, c.qp + 1);
  for (const Connection& c : receives) qps = std::max(qps, c.qp + 1);
  by_seq_.resize(qps);
  aggregate_on_.assign(qps, -1);
  std::vector<uint32_t> sent_on(qps);  // sequence numbers of the sending operations per queue pair
  const auto missing = [&](const char* dir, int peer, uint16_t ch) {
    return UserError("program " + p.name + ": rank " + std::to_string(rank_) + " " + dir + " rank " +
                     std::to_string(peer) + " on channel " + std::to_string(ch) +
                     ", but this platform connects no such pair of hosts on that channel");
  };
  for (int i = 0; i < n; ++i) {
    const collectives::Operation& o = p.op(rank_, i);
    Op& s = ops_[i];
    s.kind = o.kind;
    const bool agg = o.kind == OpKind::Aggregate;
    // An aggregation travels its group's ring (§3.1): to the successor, its
    // results back from the predecessor.
    int send_peer = o.send_peer, recv_peer = o.recv_peer;
    if (agg) {
      const auto& g = p.groups[o.group];
      const int at = static_cast<int>(std::find(g.begin(), g.end(), rank_) - g.begin()), size = static_cast<int>(g.size());
      send_peer = g[(at + 1) % size];
      recv_peer = g[(at + size - 1) % size];
      s.ring_id = static_cast<uint16_t>(cfg.first_ring + o.group);
      s.ina_rank = static_cast<uint16_t>(at);
    }
    if (collectives::sends(o.kind) || agg) {
      s.send_qp = connection(sends, o.channel, send_peer);
      if (s.send_qp < 0) throw missing("sends to", send_peer, o.channel);
      // An aggregation's address is its offset alone: the FPGA rebuilds a
      // resent result's address from a later message's, and one before the
      // chunk's start must come out negative (CLT::locate).
      if (!agg) s.va_tag = kPointBit | (uint64_t{sent_on[s.send_qp]++} << kSeqShift);
    }
    if (collectives::receives(o.kind) || agg) {
      const int qp = connection(receives, o.channel, recv_peer);
      if (qp < 0) throw missing("receives from", recv_peer, o.channel);
      if (agg && aggregate_on_[qp] >= 0)
        throw UserError("program " + p.name + ": rank " + std::to_string(rank_) +
                        " has two aggregations on one connection; their results carry no address tag to tell "
                        "them apart");
      if (agg) aggregate_on_[qp] = i;
      else by_seq_[qp].push_back(i);
    }
  }
  for (const Connection& c : sends) send_qps_.push_back(c.qp);
  blocked_.resize(n);
}

void HostProgram::layout(uint64_t bytes) {
  const collectives::Program& p = *program_;
  const uint64_t element = elements::dtype_bytes(dtype_);
  elements_ = bytes / element;
  order_.layout(bytes, static_cast<uint32_t>(element), msg_bytes_);
  // Receive-reduce-sends' results follow the buffer, from a page of their own.
  uint64_t sums = (bytes + kPage - 1) / kPage * kPage;
  uint64_t may_wait = 0;  // receive bytes that may arrive before their operation may take them
  std::vector<char> waits(ops_.size());
  for (size_t i = 0; i < ops_.size(); ++i) {
    const collectives::Operation& o = p.op(rank_, static_cast<int>(i));
    Op& s = ops_[i];
    const uint64_t bytes_i = order_[static_cast<int>(i)].bytes;
    // Input and output are one buffer: in place.
    s.src = o.src.empty() ? kNoAddr : order_.chunk_offset(o.src.index);
    s.dst = o.dst.empty() ? kNoAddr : order_.chunk_offset(o.dst.index);
    s.operand = s.sum = kNoAddr;
    const bool reduces = o.kind == OpKind::RecvReduceSend || o.kind == OpKind::RecvReduceCopy ||
                         o.kind == OpKind::RecvReduceCopySend;
    if (reduces) s.operand = o.src.empty() ? s.dst : s.src;
    if (o.kind == OpKind::RecvReduceSend) {
      s.sum = sums;
      sums += bytes_i;
    }
    s.packets = (bytes_i + cfg_.mtu_payload - 1) / cfg_.mtu_payload;
    const int prev = order_[static_cast<int>(i)].prev;
    waits[i] = o.dep_count > 0 || (prev >= 0 && waits[static_cast<size_t>(prev)]);
    if (waits[i] && collectives::receives(o.kind)) may_wait += bytes_i;
  }
  for (Page& g : pages_) release(g);
  pages_.assign((sums + kPage - 1) / kPage, Page{});
  for (int i = 0; i < order_.size(); ++i)
    for (uint32_t m = 0; m < order_[i].messages; ++m) message_pages(i, m, [this](uint64_t g) { ++pages_[g].uses; });
  peak_pages_ = 0;
  posted_.resize(by_seq_.size());
  for (Posted& p : posted_) {
    p.entries.clear();
    p.head = 0;
  }
  staging_.resize(may_wait);
  staged_.clear();
  staged_.reserve(may_wait / cfg_.mtu_payload + ops_.size());
  staged_bytes_ = 0;
}

void HostProgram::start(uint64_t bytes, std::function<void()> done) {
  layout(bytes);
  finished_ = false;
  wrong_ = 0;
  done_ = std::move(done);
  oldest_ = 0;
  std::vector<uint32_t> work_requests(by_seq_.size());
  for (size_t i = 0; i < ops_.size(); ++i) {
    Op& s = ops_[i];
    const uint32_t messages = order_[static_cast<int>(i)].messages;
    s.staged = s.acked = s.retired = 0;
    s.packets_in = 0;
    if (s.send_qp >= 0) work_requests[s.send_qp] += messages;
    if (s.kind == OpKind::Aggregate) {  // MsgIDs continue across collectives: the aggregator array remembers them
      s.msg_id_base = msg_ids_.size() > s.ring_id ? msg_ids_[s.ring_id] : 0;
      if (msg_ids_.size() <= s.ring_id) msg_ids_.resize(s.ring_id + 1u, 0);
      msg_ids_[s.ring_id] = s.msg_id_base + messages;
    }
  }
  for (int qp : send_qps_) {
    nic_->reset_work(qp);
    nic_->reserve(qp, work_requests[qp]);
  }
  if (ops_.empty()) {
    finish();
    return;
  }
  order_.start(*this);
}

void HostProgram::take_staged(int i) {
  if (ops_[static_cast<size_t>(i)].staged) replay();
}

void HostProgram::replay() {
  // In arrival order, as the data came: an operation takes its packets in
  // order, so once one of its packets must wait, its later ones do too.
  bool progress = true;
  while (progress && !staged_.empty()) {
    progress = false;
    std::fill(blocked_.begin(), blocked_.end(), 0);
    for (Staged& e : staged_) {
      if (e.op < 0 || blocked_[e.op]) continue;
      Op& o = ops_[e.op];
      if (!order_.may_take(e.op, static_cast<uint32_t>(e.offset / msg_bytes_))) {
        blocked_[e.op] = 1;
        continue;
      }
      const int i = e.op;
      e.op = -1;
      --o.staged;
      take(i, e.offset, staging_.data() + e.at, e.bytes);
      progress = true;
    }
    staged_.erase(std::remove_if(staged_.begin(), staged_.end(), [](const Staged& e) { return e.op < 0; }),
                  staged_.end());
  }
  if (staged_.empty()) staged_bytes_ = 0;
}

void HostProgram::take(int i, uint64_t offset, const uint8_t* payload, uint32_t bytes) {
  Op& o = ops_[i];
  switch (o.kind) {
    case OpKind::Recv:
    case OpKind::RecvCopySend:
      write(o.dst + offset, payload, bytes);
      break;
    case OpKind::RecvReduceCopy:
    case OpKind::RecvReduceCopySend:
      if (o.operand != o.dst) copy(o.dst + offset, o.operand + offset, bytes);
      reduce(o.dst + offset, payload, bytes);
      break;
    case OpKind::RecvReduceSend:
      copy(o.sum + offset, o.operand + offset, bytes);
      reduce(o.sum + offset, payload, bytes);
      break;
    default:
      sc_assert(false && "a RoCE host receives only for receiving operations");
  }
  ++o.packets_in;
  // A message is whole when its last packet is in (RC delivers in order).
  const uint64_t end = offset + bytes;
  if (end % msg_bytes_ == 0 || end == order_[i].bytes) {
    order_.message_in(i, *this);
    retire(i);
  }
}

void HostProgram::post(int i, uint32_t msg) {
  const Op& o = ops_[i];
  const uint64_t off = msg * msg_bytes_;
  const uint64_t len = std::min(msg_bytes_, order_[i].bytes - off);
  WorkRequest w;
  w.id = (static_cast<uint64_t>(i) << 32) | msg;
  w.packets = static_cast<uint32_t>((len + cfg_.mtu_payload - 1) / cfg_.mtu_payload);
  w.last_bytes = static_cast<uint32_t>(len - (w.packets - 1) * uint64_t{cfg_.mtu_payload});
  w.remote_va = o.va_tag | off;  // the result of an aggregation lands where the gradient came from
  if (o.kind == OpKind::Aggregate) {
    w.has_ina = true;
    w.ina.inet_tag = eth::kInetTag;
    w.ina.ring_id = o.ring_id;
    w.ina.rank = o.ina_rank;
    w.ina.msg_id = o.msg_id_base + msg;
    w.ina.msg_len = w.packets;
  }
  nic_->post(o.send_qp, w);
  posted_[o.send_qp].entries.push_back({nic_->end_psn(o.send_qp), i});
}

void HostProgram::acknowledged(int qp, uint32_t una) {
  Posted& p = posted_[qp];
  while (p.head < p.entries.size() && p.entries[p.head].first <= una) {
    const int i = p.entries[p.head++].second;
    ++ops_[i].acked;
    retire(i);
  }
  if (p.head * 2 >= p.entries.size()) {  // at most as many left as dropped: the move is paid for
    p.entries.erase(p.entries.begin(), p.entries.begin() + static_cast<std::ptrdiff_t>(p.head));
    p.head = 0;
  }
}

void HostProgram::retire(int i) {
  Op& o = ops_[i];
  const uint32_t done = order_[i].done_msgs;
  const uint32_t upto = o.send_qp >= 0 ? std::min(done, o.acked) : done;
  for (; o.retired < upto; ++o.retired)
    message_pages(i, o.retired, [this](uint64_t g) {
      if (--pages_[g].uses == 0) {  // no message touches it again: final
        check(g);
        release(pages_[g]);
      }
    });
}

uint8_t* HostProgram::made(uint64_t page) {
  Page& g = pages_[page];
  if (g.data) return g.data;
  if (free_pages_.empty()) {  // the pool grows to the most pages held at once, then only recycles
    page_pool_.push_back(std::make_unique<uint8_t[]>(kPage));
    free_pages_.push_back(page_pool_.back().get());
  }
  g.data = free_pages_.back();
  free_pages_.pop_back();
  g.lo = g.hi = 0;
  peak_pages_ = std::max(peak_pages_, ++pages_held_);
  return g.data;
}

uint8_t* HostProgram::prepare(uint64_t page, uint64_t off, uint64_t n, bool overwrite) {
  Page& g = pages_[page];
  uint8_t* const d = made(page);
  const uint64_t base = page * kPage, lo = off, hi = off + n;
  if (g.lo == g.hi) {  // nothing held yet
    if (!overwrite) input(base + lo, n, d + lo);
    g.lo = static_cast<uint32_t>(lo);
    g.hi = static_cast<uint32_t>(hi);
  } else if (lo <= g.hi && hi >= g.lo) {  // next to or over what it holds: one range still
    if (!overwrite && lo < g.lo) input(base + lo, g.lo - lo, d + lo);
    if (!overwrite && hi > g.hi) input(base + g.hi, hi - g.hi, d + g.hi);
    g.lo = static_cast<uint32_t>(std::min<uint64_t>(g.lo, lo));
    g.hi = static_cast<uint32_t>(std::max<uint64_t>(g.hi, hi));
  } else {  // apart from it: the whole page holds its content from now on
    hold_all(page);
  }
  return d;
}

void HostProgram::hold_all(uint64_t page) {
  Page& g = pages_[page];
  input(page * kPage, g.lo, g.data);
  input(page * kPage + g.hi, kPage - g.hi, g.data + g.hi);
  g.lo = 0;
  g.hi = kPage;
}

void HostProgram::input(uint64_t at, uint64_t n, uint8_t* out) const {
  const uint64_t element = elements::dtype_bytes(dtype_), end = elements_ * element;
  const uint64_t in = at < end ? std::min(n, end - at) : 0;
  sc_assert(at % element == 0 && in % element == 0);
  if (in) pattern_->fill(dtype_, rank_, at / element, in / element, out);
  if (in < n) std::memset(out + in, 0, n - in);
}

void HostProgram::release(Page& g) {
  if (!g.data) return;
  free_pages_.push_back(g.data);
  g.data = nullptr;
  --pages_held_;
}

void HostProgram::check(uint64_t page) {
  Page& g = pages_[page];
  const uint64_t element = elements::dtype_bytes(dtype_), at = page * kPage;
  if (g.checked || at >= elements_ * element) return;
  g.checked = true;
  const uint64_t first = at / element, n = std::min(kPage, elements_ * element - at) / element;
  const uint8_t* data = g.data;
  if (!data) {  // never written: it still holds the rank's input
    scratch_.resize(kPage);
    input(at, n * element, scratch_.data());
    data = scratch_.data();
  } else {
    hold_all(page);
  }
  wrong_ += pattern_->mismatches(dtype_, redop_, data, first, n, -1);
}

void HostProgram::read(uint64_t at, uint64_t n, uint8_t* out) {
  each_page(at, n, [&](uint64_t page, uint64_t off, uint64_t piece, uint64_t done) {
    const Page& g = pages_[page];
    const uint64_t end = off + piece;
    // [off, end) in three parts: before what the page holds, in it, after it.
    const uint64_t lo = g.data ? std::clamp<uint64_t>(g.lo, off, end) : end;
    const uint64_t hi = g.data ? std::clamp<uint64_t>(g.hi, lo, end) : end;
    uint8_t* const o = out + done;
    if (lo > off) input(at + done, lo - off, o);
    if (hi > lo) std::memcpy(o + (lo - off), g.data + lo, hi - lo);
    if (end > hi) input(at + done + (hi - off), end - hi, o + (hi - off));
  });
}

void HostProgram::write(uint64_t at, const uint8_t* data, uint64_t n) {
  each_page(at, n, [&](uint64_t page, uint64_t off, uint64_t piece, uint64_t done) {
    std::memcpy(prepare(page, off, piece, true) + off, data + done, piece);
  });
}

void HostProgram::reduce(uint64_t at, const uint8_t* data, uint64_t n) {
  each_page(at, n, [&](uint64_t page, uint64_t off, uint64_t piece, uint64_t done) {
    elements::reduce_bytes(dtype_, redop_, prepare(page, off, piece, false) + off, data + done,
                           static_cast<uint32_t>(piece));
  });
}

void HostProgram::copy(uint64_t to, uint64_t from, uint64_t n) {
  while (n > 0) {
    const uint64_t piece = std::min({n, kPage - to % kPage, kPage - from % kPage});
    read(from, piece, prepare(to / kPage, to % kPage, piece, true) + to % kPage);
    to += piece;
    from += piece;
    n -= piece;
  }
}

void HostProgram::completed(int) {
  while (oldest_ < order_.size() && order_[oldest_].complete) ++oldest_;
  if (order_.left() == 0) finish();
}

void HostProgram::finish() {
  finished_ = true;
  // Every element not yet checked, against the closed-form reference: an
  // element that never arrived still holds this rank's input and counts as
  // wrong. A page still held by writes not yet acknowledged is given back
  // when they are (a retransmission reads it).
  for (uint64_t g = 0; g < pages_.size(); ++g) check(g);
  if (done_) done_();
}

void HostProgram::fill(int, const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) {
  const Op& o = ops_[wr.id >> 32];
  const uint64_t msg = wr.id & 0xFFFFFFFFu;
  const uint64_t from = o.kind == OpKind::Send || o.kind == OpKind::Aggregate ? o.src
                        : o.kind == OpKind::RecvReduceSend                   ? o.sum
                                                                             : o.dst;
  read(from + msg * msg_bytes_ + uint64_t{index} * cfg_.mtu_payload, bytes, payload);
}

void HostProgram::deliver(int qp, uint64_t va, const uint8_t* payload, uint32_t bytes, net::Lines) {
  const uint64_t offset = va & kOffsetMask;
  if (!(va & kPointBit)) {
    // A result: the FPGA wrote it back over the chunk (§3.1). Its address
    // comes from a RETH the FPGA may have rebuilt (§3.3); one outside the
    // chunk is a model error (a NIC would refuse it).
    const int i = aggregate_on_[qp];
    Op& o = ops_[i];
    sc_assert(offset <= order_[i].bytes && bytes <= order_[i].bytes - offset);
    write(o.dst + offset, payload, bytes);
    if (++o.packets_in % cfg_.msg_len == 0 || o.packets_in == o.packets) {
      order_.result_in(i);
      retire(i);
    }
  } else {
    const int i = by_seq_[qp][(va >> kSeqShift) & kSeqMask];
    Op& o = ops_[i];
    const uint32_t msg = static_cast<uint32_t>(offset / msg_bytes_);
    if (o.staged || !order_.may_take(i, msg)) {
      stage(i, offset, payload, bytes);
      return;
    }
    take(i, offset, payload, bytes);
  }
  order_.run(*this);
}

void HostProgram::stage(int i, uint64_t offset, const uint8_t* payload, uint32_t bytes) {
  // Sized by layout() for every receive that may come early; beyond it (a
  // program whose data overtakes its order some other way) it grows.
  if (staged_bytes_ + bytes > staging_.size()) staging_.resize(staged_bytes_ + bytes);
  std::memcpy(staging_.data() + staged_bytes_, payload, bytes);
  staged_.push_back({i, offset, staged_bytes_, bytes});
  staged_bytes_ += bytes;
  ++ops_[i].staged;
}

std::string HostProgram::where() const {
  std::ostringstream os;
  if (oldest_ >= static_cast<int>(ops_.size())) return "done";
  const collectives::Operation& p = program_->op(rank_, oldest_);
  const collectives::MessageOrder::Op& o = order_[oldest_];
  os << "operation " << oldest_ << " of " << ops_.size() << " (" << collectives::op_name(p.kind) << " on channel "
     << p.channel << "), " << o.done_msgs << " of " << o.messages << " messages done";
  if (o.deps_left) os << ", waiting for " << o.deps_left << " of its dependencies";
  if (!staged_.empty()) os << ", " << staged_.size() << " packets staged";
  return os.str();
}

}  // namespace incsim::roce
