#include "ring_collective.h"

#include <algorithm>
#include <cstring>
#include <ostream>

#include "collectives/bounds.h"

namespace incsim::gpu {

using collectives::DType;

namespace {
constexpr uint32_t kElem = 4;  // float32 and int32
}

// One GPU's part: a channel per ring, each a TxStream that sends one step's
// chunk at a time.
class RingCollective::Rank : public Program {
 public:
  Rank(RingCollective& ring, int rank, uint64_t count);
  void start();
  void on_timer(uint64_t) override {}
  void on_flag(uint64_t addr) override;
  void report(std::ostream& os, const std::string& prefix) const override;
  // Mismatches plus elements checked too few or too many times.
  // Transfers sent so far and in all, over the channels.
  void transfers(uint64_t& sent, uint64_t& all) const {
    for (const auto& c : channels_) {
      sent += c->t_send;
      all += c->transfers;
    }
  }
  uint64_t wrong() const {
    return wrong_ + (checked_ > expect_checked_ ? checked_ - expect_checked_ : expect_checked_ - checked_);
  }

 private:
  struct Channel : TxStream {
    Rank* rank;
    int index;
    int port, back_port;  // toward the next rank (data, tail flag) and the previous one (head flag)
    uint64_t elem_off, elem_count;  // the channel's part of the message
    uint64_t transfers;             // iterations x 2(n-1)
    uint64_t mailbox, tail_flag, head_flag;
    // Sender side.
    uint64_t t_send = 0;    // transfer being sent or next to send
    bool sending = false;
    uint64_t first = 0, len = 0, pos = 0;  // current transfer: global element, elements, sent
    int block = 0;                         // current transfer's block
    uint32_t data_acks_due = 0;  // the fence waits for these
    uint32_t flag_acks_due = 0;
    uint64_t next_freed = 0;  // next's head flag: slots it has consumed
    // Receiver side.
    uint64_t recv_ready = 0;     // prev's tail flag: transfers landed in my mailbox
    uint64_t recv_consumed = 0;  // transfers I have read out (slots freed)
    bool finished = false;

    uint32_t next_wire_bytes(const net::PacketFormat& f) const override;
    uint64_t next_elems() const;
    void fill(net::Packet* p) override;
    void on_response(net::Packet* p) override;
  };
  // Element range of block `block` in iteration `iter` of channel c.
  void block_range(const Channel& c, uint64_t iter, int block, uint64_t& first, uint64_t& len) const;
  int step_of(uint64_t t) const { return static_cast<int>(t % steps_); }
  // The block `rank` sends in step s. All-reduce and all-gather start with
  // the rank's own block; reduce-scatter starts one earlier so that rank r
  // ends up holding the sum of block r.
  int send_block(int rank, int s) const {
    const int b = kind() == RingKind::ReduceScatter ? rank - 1 - s : rank - s;
    return (b % n_ + n_) % n_;
  }
  // What a send in step s does with the data: add this rank's input to it
  // (reduce), and whether the result is final (this rank's copy of the output).
  bool adds_own(int s) const {
    return kind() == RingKind::ReduceScatter || s == 0 || (kind() == RingKind::AllReduce && s <= n_ - 1);
  }
  bool sends_final(int s) const {
    return kind() == RingKind::AllGather || (kind() == RingKind::AllReduce && s >= n_ - 1);
  }
  RingKind kind() const { return ring_.kind_; }
  void progress(Channel& c);
  void consume(Channel& c, uint64_t t);  // frees the slot of received transfer t
  // Every store of the transfer being sent has left: the received data it
  // was made from is read out.
  void issued_all(Channel& c) {
    if (step_of(c.t_send) > 0) consume(c, c.t_send - 1);
  }
  // Compares len elements from global index first with the reference: the
  // sum over ranks, or (owner >= 0) rank owner's input (all-gather).
  void check(uint64_t first, const uint8_t* bytes, uint64_t len, int owner);
  // Reduces this rank's input elements [first, first + len) into bytes with
  // the collective's operator, or (init) writes them there.
  void add_own(uint8_t* bytes, uint64_t first, uint64_t len, bool init) const;
  void finish_send(Channel& c);

  RingCollective& ring_;
  Gpu& gpu_;
  int rank_, n_;
  uint32_t prev_, next_;
  uint64_t count_, chunk_elems_;
  int steps_;                   // ring steps per iteration
  uint64_t expect_checked_ = 0;  // elements of the output this rank holds
  std::vector<std::unique_ptr<Channel>> channels_;
  uint64_t flags_base_ = 0;
  uint64_t wrong_ = 0, checked_ = 0;
  std::vector<uint8_t> scratch_;  // a reduce-scatter result being checked
  int unfinished_ = 0;
};

RingCollective::Rank::Rank(RingCollective& ring, int rank, uint64_t count)
    : ring_(ring),
      gpu_(*ring.gpus_[rank]),
      rank_(rank),
      n_(static_cast<int>(ring.gpus_.size())),
      prev_(static_cast<uint32_t>(ring.gpus_[(rank + n_ - 1) % n_]->index())),
      next_(static_cast<uint32_t>(ring.gpus_[(rank + 1) % n_]->index())),
      count_(count),
      chunk_elems_(ring.params_.chunk_bytes / kElem),
      steps_(ring.kind_ == RingKind::AllReduce ? 2 * (n_ - 1) : n_ - 1) {
  const int nch = ring.params_.channels;
  gpu_.clear_streams();
  gpu_.memory().free_all();
  flags_base_ = gpu_.memory().alloc(16ull * nch);
  gpu_.watch(flags_base_, 16ull * nch);
  uint64_t off = 0;
  for (int c = 0; c < nch; ++c) {
    auto ch = std::make_unique<Channel>();
    ch->rank = this;
    ch->index = c;
    const RankPorts& ports = ring.ports_[rank];
    ch->port = ports.to_next[c % ports.to_next.size()];
    ch->back_port = ports.to_prev[c % ports.to_prev.size()];
    ch->elem_off = off;
    ch->elem_count = count / nch + (static_cast<uint64_t>(c) < count % nch ? 1 : 0);
    off += ch->elem_count;
    const uint64_t per_iter = chunk_elems_ * n_;
    const uint64_t iterations = std::max<uint64_t>(1, (ch->elem_count + per_iter - 1) / per_iter);
    ch->transfers = iterations * steps_;
    ch->mailbox = gpu_.memory().alloc(ring.params_.chunk_bytes * ring.params_.slots);
    ch->tail_flag = flags_base_ + 16ull * c;
    ch->head_flag = ch->tail_flag + 8;
    gpu_.add_stream(ch.get());
    // Reduce-scatter leaves block r of every iteration here; the others all of it.
    for (uint64_t it = 0; it < iterations; ++it) {
      uint64_t first, len;
      block_range(*ch, it, rank_, first, len);
      expect_checked_ += kind() == RingKind::ReduceScatter ? len : 0;
    }
    channels_.push_back(std::move(ch));
  }
  if (kind() != RingKind::ReduceScatter) expect_checked_ = count_;
  unfinished_ = nch;
  gpu_.set_program(this);
}

void RingCollective::Rank::start() {
  for (auto& c : channels_) progress(*c);
}

void RingCollective::Rank::block_range(const Channel& c, uint64_t iter, int block, uint64_t& first,
                                      uint64_t& len) const {
  const uint64_t per_iter = chunk_elems_ * n_;
  const uint64_t iter_off = iter * per_iter;
  const uint64_t iter_len = c.elem_count > iter_off ? std::min(per_iter, c.elem_count - iter_off) : 0;
  const uint64_t base = iter_len / n_, rem = iter_len % n_;
  const uint64_t b = static_cast<uint64_t>(block);
  len = base + (b < rem ? 1 : 0);
  first = c.elem_off + iter_off + b * base + std::min(b, rem);
}

void RingCollective::Rank::report(std::ostream& os, const std::string& prefix) const {
  for (const auto& c : channels_) {
    if (c->finished) continue;
    os << prefix << " ring channel " << c->index << ": transfer " << c->t_send << " of " << c->transfers;
    if (c->sending)
      os << " sending (" << c->pos << " of " << c->len << " elements issued, " << c->data_acks_due << " acks due)";
    else
      os << " waiting (received " << c->recv_ready << ", next GPU freed " << c->next_freed << " slots)";
    os << ", " << c->flag_acks_due << " flag acks due\n";
  }
}

void RingCollective::Rank::on_flag(uint64_t addr) {
  const uint64_t c = (addr - flags_base_) / 16;
  Channel& ch = *channels_[c];
  uint64_t v = 0;
  std::memcpy(&v, gpu_.memory().at(addr, 8), 8);
  if (addr == ch.tail_flag) {
    ch.recv_ready = std::max(ch.recv_ready, v);
    INCSIM_LOG(gpu_.log(), Debug, "ring channel {}: receives transfer {} from gpu {} (its flag)", c, v - 1, prev_);
  } else {
    ch.next_freed = std::max(ch.next_freed, v);
    INCSIM_LOG(gpu_.log(), Debug, "ring channel {}: gpu {} has freed {} mailbox slots", c, next_, v);
  }
  progress(ch);
}

// Does whatever channel c can do now: read out a final received chunk, or
// start the next send once its input has landed and next's slot is free.
void RingCollective::Rank::progress(Channel& c) {
  const uint64_t steps = static_cast<uint64_t>(steps_);
  // The last receive of an iteration is read (and in reduce-scatter reduced
  // with this rank's input), not forwarded: it completes a block of the output.
  while (c.recv_consumed < c.transfers && step_of(c.recv_consumed) == steps_ - 1 &&
         c.recv_ready > c.recv_consumed && c.t_send > c.recv_consumed) {
    const uint64_t t = c.recv_consumed;
    uint64_t first, len;
    const int block = send_block((rank_ + n_ - 1) % n_, steps_ - 1);
    block_range(c, t / steps, block, first, len);
    const uint8_t* in = gpu_.memory().at(c.mailbox + (t % ring_.params_.slots) * ring_.params_.chunk_bytes, len * kElem);
    INCSIM_LOG(gpu_.log(), Debug, "ring channel {}: transfer {} (step {}) read out, block {}: {} output elements",
               c.index, t, steps_ - 1, block, len);
    if (kind() == RingKind::ReduceScatter) {
      // recv-reduce: the sum goes to this GPU's output buffer.
      std::vector<uint8_t>& sum = scratch_;
      sum.assign(in, in + len * kElem);
      add_own(sum.data(), first, len, false);
      check(first, sum.data(), len, -1);
    } else {
      check(first, in, len, kind() == RingKind::AllGather ? block : -1);
    }
    consume(c, t);
  }
  if (!c.sending && c.t_send < c.transfers) {
    const uint64_t t = c.t_send;
    const int s = step_of(t);
    const bool input_ready = s == 0 || c.recv_ready >= t;  // received transfer t-1
    const bool slot_free = t < c.next_freed + static_cast<uint64_t>(ring_.params_.slots);
    if (input_ready && slot_free) {
      c.sending = true;
      c.pos = 0;
      c.block = send_block(rank_, s);
      block_range(c, t / steps, c.block, c.first, c.len);
      INCSIM_LOG(gpu_.log(), Debug, "ring channel {}: step {} of iteration {} sends block {} ({} elements{}) to gpu {}",
                 c.index, s, t / steps, c.block, c.len,
                 adds_own(s) ? (s == 0 ? ", own input" : ", received plus own input") : ", received", next_);
      if (c.index == 0) {
        gpu_.trace_step = s;
        gpu_.trace_chunk = static_cast<int>(t / steps);
      }
      if (c.len == 0) {
        issued_all(c);
        finish_send(c);
      } else {
        gpu_.activate(c.port, &c, gpu_.memory().latency());  // the cores read the first data
      }
    }
  }
  if (!c.finished && c.t_send == c.transfers && c.recv_consumed == c.transfers && c.flag_acks_due == 0) {
    c.finished = true;
    INCSIM_LOG(gpu_.log(), Debug, "ring channel {}: done, {} transfers", c.index, c.transfers);
    if (--unfinished_ == 0) ring_.rank_done();
  }
}

void RingCollective::Rank::consume(Channel& c, uint64_t t) {
  sc_assert(c.recv_consumed == t);
  c.recv_consumed = t + 1;
  ++c.flag_acks_due;
  gpu_.store_word(c.back_port, prev_, c.head_flag, c.recv_consumed, c.id);
}

void RingCollective::Rank::finish_send(Channel& c) {
  // The fence has completed: every data write is acknowledged; now the flag.
  INCSIM_LOG(gpu_.log(), Debug, "ring channel {}: transfer {} acknowledged, flag to gpu {}", c.index, c.t_send, next_);
  ++c.flag_acks_due;
  gpu_.store_word(c.port, next_, c.tail_flag, c.t_send + 1, c.id);
  c.sending = false;
  ++c.t_send;
  progress(c);
}

void RingCollective::Rank::check(uint64_t first, const uint8_t* bytes, uint64_t len, int owner) {
  wrong_ += ring_.data_.mismatches(ring_.dtype_, ring_.redop_, bytes, first, len, owner);
  checked_ += len;
}

void RingCollective::Rank::add_own(uint8_t* bytes, uint64_t first, uint64_t len, bool init) const {
  if (init) ring_.data_.fill(ring_.dtype_, rank_, first, len, bytes);
  else ring_.cores_[rank_].reduce_own(ring_.data_, ring_.dtype_, ring_.redop_, rank_, first, len, bytes);
}

uint64_t RingCollective::Rank::Channel::next_elems() const {
  if (!sending || pos >= len) return 0;
  return std::min<uint64_t>(rank->gpu_.pool().format().max_payload_bytes / kElem, len - pos);
}

uint32_t RingCollective::Rank::Channel::next_wire_bytes(const net::PacketFormat& f) const {
  const uint64_t m = next_elems();
  return m ? f.wire_bytes(static_cast<uint32_t>(m * kElem)) : 0;
}

void RingCollective::Rank::Channel::fill(net::Packet* p) {
  Rank& r = *rank;
  const RingParams& prm = r.ring_.params_;
  const int s = r.step_of(t_send);
  const uint64_t m = next_elems();
  p->dst = r.next_;
  p->op = net::Op::Write;
  p->addr = mailbox + (t_send % prm.slots) * prm.chunk_bytes + pos * kElem;
  p->payload_bytes = static_cast<uint16_t>(m * kElem);
  // The data: what was received in the previous step (none in step 0),
  // plus this rank's input where the step reduces; checked where it is
  // this rank's copy of the output.
  const uint64_t g = first + pos;
  if (s > 0)
    std::memcpy(p->data, r.gpu_.memory().at(mailbox + ((t_send - 1) % prm.slots) * prm.chunk_bytes + pos * kElem, m * kElem),
                m * kElem);
  if (r.adds_own(s)) r.add_own(p->data, g, m, s == 0);
  if (r.sends_final(s)) r.check(g, p->data, m, r.kind() == RingKind::AllGather ? block : -1);
  pos += m;
  ++data_acks_due;
  if (pos == len) r.issued_all(*this);
}

void RingCollective::Rank::Channel::on_response(net::Packet* p) {
  if (p->addr == tail_flag || p->addr == head_flag) {
    sc_assert(flag_acks_due > 0);
    --flag_acks_due;
  } else {
    sc_assert(data_acks_due > 0);
    if (--data_acks_due == 0 && sending && pos == len) {
      rank->finish_send(*this);
      return;
    }
  }
  rank->progress(*this);
}

RingCollective::RingCollective(RingKind kind, std::vector<Gpu*> gpus, std::vector<RankPorts> ports, DType dtype,
                               collectives::RedOp redop, uint64_t seed, RingParams params, double endpoint_GBps)
    : kind_(kind),
      gpus_(std::move(gpus)),
      ports_(std::move(ports)),
      dtype_(dtype),
      redop_(redop),
      data_(seed, static_cast<int>(gpus_.size())),
      params_(params),
      endpoint_GBps_(endpoint_GBps) {
  for (Gpu* g : gpus_) cores_.emplace_back(std::string(g->basename()) + ".cores");
}

RingCollective::~RingCollective() {
  for (Gpu* g : gpus_) {
    g->set_program(nullptr);
    g->clear_streams();
  }
}

void RingCollective::start(uint64_t bytes, std::function<void()> on_done) {
  on_done_ = std::move(on_done);
  ranks_.clear();
  for (int r = 0; r < static_cast<int>(gpus_.size()); ++r)
    ranks_.push_back(std::make_unique<Rank>(*this, r, bytes / kElem));
  running_ = static_cast<int>(ranks_.size());
  for (auto& r : ranks_) r->start();
}

void RingCollective::rank_done() {
  if (--running_ == 0 && on_done_) on_done_();
}

uint64_t RingCollective::wrong() const {
  uint64_t w = 0;
  for (const auto& r : ranks_) w += r->wrong();
  return w;
}

double RingCollective::done_fraction() const {
  uint64_t sent = 0, all = 0;
  for (const auto& r : ranks_) r->transfers(sent, all);
  return all ? static_cast<double>(sent) / static_cast<double>(all) : -1;
}

double RingCollective::bound_us(uint64_t bytes) const {
  return collectives::bandwidth_bound_us(bytes, busbw_factor(), endpoint_GBps_);
}

double RingCollective::busbw_factor() const {
  const int n = static_cast<int>(gpus_.size());
  return kind_ == RingKind::AllReduce ? collectives::allreduce_busbw_factor(n) : collectives::gather_busbw_factor(n);
}

}  // namespace incsim::gpu
