#include "cores_collective.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <ostream>
#include <unordered_map>

#include "collectives/bounds.h"
#include "collectives/program_synthesis.h"
#include "core/error.h"

namespace incsim::gpu {

using collectives::Buffer;
using collectives::ChunkRef;
using Kind = collectives::Collective;
using collectives::OpKind;
using collectives::Operation;

namespace {

constexpr uint32_t kLlLine = 16, kLlData = 8;          // st.volatile.v4.u32 {data, flag, data, flag}
constexpr uint32_t kLl128Line = 128, kLl128Data = 120;  // 15 data words and a flag word per line

bool local(OpKind k) { return !collectives::sends(k) && !collectives::receives(k); }

// The buffer that holds rank r's chunk (in place, the output and the input
// overlap) and the chunk of the message it is, or -1 for scratch.
void canonical(const collectives::Program& p, int rank, Buffer& buf, uint32_t& index, int64_t& message) {
  const collectives::Buffers& b = p.buffers[rank];
  const uint32_t r = static_cast<uint32_t>(rank);
  message = -1;
  switch (p.collective) {
    case Kind::AllReduce:
    case Kind::Broadcast:
      if (buf == Buffer::Output && p.in_place) buf = Buffer::Input;
      if (buf != Buffer::Scratch) message = index;
      break;
    case Kind::ReduceScatter:
      if (buf == Buffer::Output && p.in_place) buf = Buffer::Input, index += r * b.output;
      if (buf == Buffer::Input) message = index;
      if (buf == Buffer::Output) message = r * b.output + index;
      break;
    case Kind::AllGather:
      if (buf == Buffer::Input && p.in_place) buf = Buffer::Output, index += r * b.input;
      if (buf == Buffer::Input) message = r * b.input + index;
      if (buf == Buffer::Output) message = index;
      break;
  }
}
}  // namespace

// The message (the buffer nccl-tests counts: all-reduce's, reduce-scatter's
// input, all-gather's output) is `blocks x parts` chunks per pass. A program
// whose channel c touches only chunks c mod parts (the ring's channels) gets
// a part of the message per channel, each cut into its own passes, as NCCL
// splits a message over channels; any other program one part.
struct CoresCollective::Layout {
  int parts = 1;
  uint32_t blocks = 1;
  uint64_t chunk_elems = 1;
  std::vector<uint64_t> off, count, passes;  // [part]

  Layout(int parts_, uint32_t blocks_, uint64_t chunk_elems_, uint64_t elems)
      : parts(parts_), blocks(blocks_), chunk_elems(chunk_elems_) {
    const uint64_t per_pass = chunk_elems * blocks;
    uint64_t at = 0;
    for (int g = 0; g < parts; ++g) {
      const uint64_t n = elems / parts + (static_cast<uint64_t>(g) < elems % parts ? 1 : 0);
      off.push_back(at);
      count.push_back(n);
      passes.push_back(std::max<uint64_t>(1, (n + per_pass - 1) / per_pass));
      at += n;
    }
  }
  // The most elements a chunk holds in any pass: chunk_elems, or fewer where
  // a part of the message is smaller than a pass.
  uint64_t largest_chunk() const {
    uint64_t most = 1;
    for (uint64_t n : count) most = std::max(most, std::min(chunk_elems, (n + blocks - 1) / blocks));
    return most;
  }
  // Elements [first, first + len) of message chunk m in pass `pass`.
  void range(uint64_t pass, uint32_t m, uint64_t& first, uint64_t& len) const {
    const int g = static_cast<int>(m % parts);
    const uint64_t b = m / parts, per_pass = chunk_elems * blocks, pass_off = pass * per_pass;
    const uint64_t pass_len = count[g] > pass_off ? std::min(per_pass, count[g] - pass_off) : 0;
    const uint64_t base = pass_len / blocks, rem = pass_len % blocks;
    len = base + (b < rem ? 1 : 0);
    first = off[g] + pass_off + b * base + std::min(b, rem);
  }
};

// One GPU's part: a TxStream per queue, a connection per (channel, peer) and
// direction, and the chunks written that a later operation reads.
class CoresCollective::Rank : public gpu::Program {
 public:
  Rank(CoresCollective& coll, int rank);
  ~Rank() override;
  // Resolves the peers' mailbox and flag addresses, once every rank has allocated them.
  void link(const std::vector<std::unique_ptr<Rank>>& ranks);
  void start() {
    for (auto& q : queues_) progress(*q);
  }
  // An unfenced transfer (LL, LL128) is done once its last store has left:
  // its queue's send, one delta after (not from inside the port's fill).
  void on_timer(uint64_t queue) override { finish_send(*queues_[queue], false); }
  void on_flag(uint64_t addr) override;
  void report(std::ostream& os, const std::string& prefix) const override;
  void transfers(uint64_t& sent, uint64_t& all) const {
    for (const auto& q : queues_) {
      sent += q->sent;
      all += q->transfers;
    }
  }
  // Mismatches plus elements checked too few or too many times.
  uint64_t wrong() const {
    return wrong_ + (checked_ > expect_checked_ ? checked_ - expect_checked_ : expect_checked_ - checked_);
  }

 private:
  struct Queue;
  // One direction of a connection, as this rank sees it.
  struct Conn {
    int channel, peer, port;
    Queue* queue = nullptr;  // the queue that uses it
    uint64_t mailbox = 0;  // the receiver's
    uint64_t mailbox_bytes = 0;
    uint64_t flag = 0;     // this rank's: the tail flag (receive) or the head flag (send)
    uint64_t peer_flag = 0;  // the other side's
    Conn* remote = nullptr;  // the other side's connection (the sender tells the slot's length)
    uint64_t claimed = 0;    // transfers started (send) or receives claimed by operations (receive)
    uint64_t done = 0;       // flags stored (send) or slots freed (receive)
    uint64_t seen = 0;       // the other side's flag: slots freed (send) or transfers landed (receive)
    std::vector<uint64_t> slot_len;  // receive: elements in each slot
    std::vector<uint32_t> landed;    // receive, LL and LL128: packets landed in each slot
  };
  // A run of a chunk reference: one chunk's elements in this pass.
  struct Segment {
    Buffer buf;
    uint32_t index;
    uint64_t first = 0, len = 0;  // message elements (none for scratch)
    std::vector<uint8_t>* stored = nullptr;  // its data, where written this pass
    bool check = false;                      // this write is the chunk's last: a result to check
    int owner = -1;
  };
  struct Pending {
    int op;
    uint64_t pass, idx;
  };
  struct Queue : TxStream {
    Rank* rank;
    int index;
    std::vector<int> ops;  // rank-local operation indices, in order
    uint64_t passes = 1, next = 0, total = 0;
    size_t at = 0;  // its place in queues_
    uint64_t transfers = 0, sent = 0;
    // The transfer being sent.
    bool sending = false;
    int op = -1;
    uint64_t pass = 0, len = 0, pos = 0, in_addr = 0, out_addr = 0;
    Conn *in = nullptr, *out = nullptr;
    std::vector<Segment> src, operand, dst;
    uint32_t data_acks_due = 0, flag_acks_due = 0;
    std::deque<Pending> pending;  // operations that only receive, waiting for their data
    bool finished = false;

    uint32_t next_wire_bytes(const net::PacketFormat& f) const override;
    uint64_t next_elems() const;
    void fill(net::Packet* p) override;
    void on_response(net::Packet* p) override;
  };

  const Operation& op(int i) const { return coll_.program_.op(rank_, i); }
  // Operation i's connections, found once when the rank is built.
  Conn& conn_in(int i) { return *in_of_[i]; }
  Conn& conn_out(int i) { return *out_of_[i]; }
  static size_t conn_of(const std::vector<std::unique_ptr<Conn>>& v, int channel, int peer);
  Conn& add_conn(std::vector<std::unique_ptr<Conn>>& v, int channel, int peer, Queue& queue);
  void progress(Queue& q);
  bool deps_done(const Operation& o, uint64_t pass) const;
  void start_send(Queue& q, int op, uint64_t pass);
  // The transfer is done: with `flag`, after the fence, the flag store that tells the receiver (Simple).
  void finish_send(Queue& q, bool flag = true);
  // LL, LL128: a data packet landed in receive connection c's mailbox at addr.
  void landed(Conn& c, uint64_t addr);
  bool data_ack(const Queue& q, const net::Packet* p) const;
  void issued_all(Queue& q) {
    done_reading(q.src, q.pass);
    done_reading(q.operand, q.pass);
    if (collectives::receives(op(q.op).kind)) consume(q, *q.in);
  }
  void consume(Queue& q, Conn& c);
  void complete_recv(Queue& q, const Pending& pd);
  void run_local(int op, uint64_t pass);
  void op_done(int op, uint64_t pass);
  // The segments of ref in this pass; a write (len: the data's elements)
  // also marks the last write of a result chunk for checking and makes the
  // store of a chunk that something reads later.
  void segments(const ChunkRef& ref, uint64_t pass, bool write, uint64_t len, std::vector<Segment>& out);
  // The canonical buffer of a chunk (in place, output and input overlap)
  // and its chunk of the message, or -1 for scratch.
  void canon(Buffer& buf, uint32_t& index, int64_t& message) const;
  static uint64_t total_len(const std::vector<Segment>& s);
  // Calls f(segment, element, count) over elements [off, off + n) of the
  // segments' concatenation.
  template <class F>
  static void walk(const std::vector<Segment>& s, uint64_t off, uint64_t n, F&& f) {
    for (const Segment& x : s) {
      if (n == 0) break;
      if (off >= x.len) {
        off -= x.len;
        continue;
      }
      const uint64_t m = std::min(n, x.len - off);
      f(x, off, m);
      n -= m;
      off = 0;
    }
  }
  void read(const std::vector<Segment>& s, uint64_t off, uint64_t n, uint8_t* out) const;
  void reduce_into(const std::vector<Segment>& s, uint64_t off, uint64_t n, uint8_t* acc);
  void write(const std::vector<Segment>& s, uint64_t off, uint64_t n, const uint8_t* data);
  void garble(uint8_t* data, uint64_t n) {
    if (coll_.copies_are_results_) coll_.cores_[rank_].pass(coll_.dtype_, data, static_cast<uint32_t>(n * coll_.elem_));
  }
  static uint64_t key(Buffer b, uint32_t index, uint64_t pass) {
    return (pass << 34) | (static_cast<uint64_t>(b) << 32) | index;
  }

  CoresCollective& coll_;
  Gpu& gpu_;
  int rank_;
  std::vector<std::unique_ptr<Conn>> send_, recv_;
  std::vector<std::unique_ptr<Queue>> queues_;
  std::vector<uint64_t> done_passes_;          // [op]: passes the operation has completed
  std::vector<std::vector<int>> dependents_;   // [op]: operations whose deps name it
  std::vector<int> queue_of_;                  // [op]
  std::vector<int> send_pos_;                  // [op]: sending operations before it in its queue
  std::vector<Conn*> in_of_, out_of_;          // [op]: the connections it receives and sends on
  // Per canonical chunk (buffer x chunk): writers, readers (operations that
  // read it in a pass) and the result's owner (-2: not a result chunk; -1: a
  // reduction; else a rank).
  std::vector<int> writers_[3], readers_[3], result_owner_[3];
  // The chunks written in a pass that an operation reads later, until the
  // last of their readers has read them: what is in flight, not the message.
  struct Stored {
    std::vector<uint8_t> bytes;
    int readers_left = 0;
  };
  std::unordered_map<uint64_t, Stored> store_;
  // The operation has read these segments: frees a stored chunk no later
  // operation of the pass reads.
  void done_reading(const std::vector<Segment>& s, uint64_t pass);
  std::unordered_map<uint64_t, int> writes_;  // (chunk, pass) of chunks with several writers, until the last
  uint64_t flags_base_ = 0, flags_bytes_ = 0, slot_bytes_ = 0;
  uint64_t wrong_ = 0, checked_ = 0, expect_checked_ = 0;
  // A local operation or a trailing receive: its chunks and data.
  std::vector<Segment> local_src_, local_dst_;
  std::vector<uint8_t> scratch_;
  int unfinished_ = 0;
};

size_t CoresCollective::Rank::conn_of(const std::vector<std::unique_ptr<Conn>>& v, int channel, int peer) {
  for (size_t k = 0; k < v.size(); ++k)
    if (v[k]->channel == channel && v[k]->peer == peer) return k;
  return v.size();
}

CoresCollective::Rank::Conn& CoresCollective::Rank::add_conn(std::vector<std::unique_ptr<Conn>>& v, int channel,
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
  v.push_back(std::move(c));
  return *v.back();
}

void CoresCollective::Rank::canon(Buffer& buf, uint32_t& index, int64_t& message) const {
  canonical(coll_.program_, rank_, buf, index, message);
}

CoresCollective::Rank::Rank(CoresCollective& coll, int rank)
    : coll_(coll), gpu_(*coll.gpus_[rank]), rank_(rank) {
  const collectives::Program& p = coll.program_;
  const Layout& lay = *coll.layout_;
  const int n_ops = p.op_count(rank);
  done_passes_.assign(n_ops, 0);
  dependents_.assign(n_ops, {});
  queue_of_.assign(n_ops, 0);
  send_pos_.assign(n_ops, 0);
  in_of_.assign(n_ops, nullptr);
  out_of_.assign(n_ops, nullptr);
  const collectives::Buffers& bufs = p.buffers[rank];
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
    if (std::none_of(queues_.begin(), queues_.end(), [&](const auto& q) { return q->index == o.queue; })) {
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
    const bool reduces = o.kind == OpKind::RecvReduceSend || o.kind == OpKind::RecvReduceCopy ||
                         o.kind == OpKind::RecvReduceCopySend || o.kind == OpKind::Reduce;
    if (!o.src.empty()) mark(o.src, false);
    if (!o.dst.empty() && o.kind != OpKind::RecvReduceSend) mark(o.dst, true);
    if (reduces && (o.src.empty() || o.kind == OpKind::Reduce)) mark(o.dst, false);  // dst the operand
    max_count = std::max<uint32_t>(max_count, std::max(o.src.count, o.dst.count));
  }
  std::sort(queues_.begin(), queues_.end(), [](const auto& a, const auto& b) { return a->index < b->index; });
  for (size_t k = 0; k < queues_.size(); ++k) queues_[k]->at = k;
  for (int i = 0; i < n_ops; ++i) {
    const Operation& o = op(i);
    for (size_t k = 0; k < queues_.size(); ++k)
      if (queues_[k]->index == o.queue) {
        Queue& q = *queues_[k];
        queue_of_[i] = static_cast<int>(k);
        send_pos_[i] = 0;
        for (int j : q.ops) send_pos_[i] += collectives::sends(op(j).kind) ? 1 : 0;
        q.ops.push_back(i);
        if (collectives::sends(o.kind)) out_of_[i] = &add_conn(send_, o.channel, o.send_peer, q);
        if (collectives::receives(o.kind)) in_of_[i] = &add_conn(recv_, o.channel, o.recv_peer, q);
      }
  }
  // The result chunks: the canonical image of each output chunk.
  for (uint32_t k = 0; k < collectives::chunk_limit(p, rank, Buffer::Output); ++k) {
    Buffer buf = Buffer::Output;
    uint32_t index = k;
    int64_t m;
    canon(buf, index, m);
    const uint32_t per_rank = p.collective == Kind::AllGather ? bufs.input : 0;
    result_owner_[static_cast<int>(buf)][index] = p.collective == Kind::AllGather ? static_cast<int>(m / per_rank)
                                                  : p.collective == Kind::Broadcast ? p.root
                                                                                           : -1;
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
    for (int i : q->ops) q->transfers += collectives::sends(op(i).kind) ? q->passes : 0;
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
    recv_[k]->mailbox = gpu_.memory().alloc(recv_[k]->mailbox_bytes);
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
  unfinished_ = static_cast<int>(queues_.size());
}

CoresCollective::Rank::~Rank() {
  for (auto& q : queues_) gpu_.remove_stream(q.get());
  for (auto& c : recv_) gpu_.memory().free(c->mailbox);
  gpu_.memory().free(flags_base_);
  gpu_.detach(*this);
}

void CoresCollective::Rank::link(const std::vector<std::unique_ptr<Rank>>& ranks) {
  for (auto& c : send_) {
    Rank& peer = *ranks[c->peer];
    Conn& r = *peer.recv_[conn_of(peer.recv_, c->channel, rank_)];
    c->mailbox = r.mailbox;
    c->mailbox_bytes = r.mailbox_bytes;
    c->peer_flag = r.flag;
    c->remote = &r;
    r.peer_flag = c->flag;
    r.remote = c.get();
  }
}

bool CoresCollective::Rank::deps_done(const Operation& o, uint64_t pass) const {
  const uint32_t* d = coll_.program_.deps_of(o);
  for (uint32_t k = 0; k < o.dep_count; ++k)
    if (done_passes_[d[k]] <= pass) return false;
  return true;
}

void CoresCollective::Rank::report(std::ostream& os, const std::string& prefix) const {
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
    if (!q->pending.empty()) os << ", " << q->pending.size() << " receives waiting for data";
    os << ", " << q->flag_acks_due << " flag acks due\n";
  }
}

void CoresCollective::Rank::on_flag(uint64_t addr) {
  if (addr - flags_base_ >= flags_bytes_) {
    for (auto& c : recv_)
      if (addr - c->mailbox < c->mailbox_bytes) return landed(*c, addr);
    sc_assert(false && "a watched write outside the flags and the mailboxes");
  }
  const uint64_t k = (addr - flags_base_) / 16;
  uint64_t v = 0;
  std::memcpy(&v, gpu_.memory().at(addr, 8), 8);
  const bool tail = (addr - flags_base_) % 16 == 0;
  Conn& c = tail ? *recv_[k] : *send_[k];
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
void CoresCollective::Rank::progress(Queue& q) {
  const uint64_t slots = static_cast<uint64_t>(coll_.slot_params_.slots);
  for (;;) {
    while (!q.pending.empty()) {
      const Pending pd = q.pending.front();
      const Conn& c = conn_in(pd.op);
      if (c.seen <= pd.idx || c.done != pd.idx) break;
      q.pending.pop_front();
      complete_recv(q, pd);
    }
    if (q.sending || q.next == q.total) break;
    const int i = q.ops[q.next % q.ops.size()];
    const uint64_t pass = q.next / q.ops.size();
    const Operation& o = op(i);
    // Within a pass a receive holds the queue; the next pass may go ahead.
    if (!q.pending.empty() && q.pending.back().pass == pass) break;
    if (!deps_done(o, pass)) break;
    if (local(o.kind)) {
      ++q.next;
      run_local(i, pass);
      continue;
    }
    if (!collectives::sends(o.kind)) {
      q.pending.push_back({i, pass, conn_in(i).claimed++});
      ++q.next;
      continue;
    }
    if (collectives::receives(o.kind)) {
      const Conn& in = conn_in(i);
      if (in.seen <= in.claimed) break;  // its data has not landed
    }
    const Conn& out = conn_out(i);
    if (out.claimed >= out.seen + slots) break;  // the receiver's slot is not free
    ++q.next;
    start_send(q, i, pass);
  }
  if (!q.finished && q.next == q.total && q.pending.empty() && !q.sending && q.flag_acks_due == 0 &&
      q.data_acks_due == 0) {
    q.finished = true;
    INCSIM_LOG(gpu_.log(), Debug, "cores queue {}: done, {} transfers", q.index, q.transfers);
    if (--unfinished_ == 0) coll_.rank_done();
  }
}

void CoresCollective::Rank::start_send(Queue& q, int i, uint64_t pass) {
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
  if (q.index == queues_.front()->index) {
    gpu_.trace_step = send_pos_[i];
    gpu_.trace_chunk = static_cast<int>(pass);
  }
  if (q.len == 0) {
    issued_all(q);
    finish_send(q);
  } else {
    // The cores read the first data (stream 0 is the copy engine's).
    gpu_.activate(q.out->port, &q, gpu_.first_read(q.out->port, q.index + 1));
  }
}

void CoresCollective::Rank::finish_send(Queue& q, bool flag) {
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

void CoresCollective::Rank::landed(Conn& c, uint64_t addr) {
  const uint64_t slots = static_cast<uint64_t>(coll_.slot_params_.slots);
  ++c.landed[(addr - c.mailbox) / slot_bytes_];
  // Transfers land whole, in order: the next one's slot is full once every
  // packet its length takes is in.
  const uint64_t per_packet = coll_.packet_data_ / coll_.elem_;
  bool any = false;
  for (;;) {
    const uint64_t s = c.seen % slots;
    const uint64_t packets = (c.slot_len[s] + per_packet - 1) / per_packet;
    if (packets == 0 || c.landed[s] < packets) break;
    c.landed[s] = 0;
    ++c.seen;
    any = true;
  }
  if (any) progress(*c.queue);
}

void CoresCollective::Rank::consume(Queue& q, Conn& c) {
  ++c.done;
  ++q.flag_acks_due;
  gpu_.store_word(c.port, static_cast<uint32_t>(coll_.gpus_[c.peer]->index()), c.peer_flag, c.done, q.id);
}

void CoresCollective::Rank::complete_recv(Queue& q, const Pending& pd) {
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
  } else if (coll_.copies_are_results_ && coll_.cores_[rank_].faulty()) {
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

void CoresCollective::Rank::run_local(int i, uint64_t pass) {
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

void CoresCollective::Rank::op_done(int i, uint64_t pass) {
  done_passes_[i] = pass + 1;
  for (int d : dependents_[i]) {
    Queue& q = *queues_[queue_of_[d]];
    if (&q != queues_[queue_of_[i]].get()) progress(q);
  }
}

void CoresCollective::Rank::segments(const ChunkRef& ref, uint64_t pass, bool write, uint64_t len,
                                     std::vector<Segment>& out) {
  const Layout& lay = *coll_.layout_;
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
    if (write && (readers_[b][s.index] || s.buf == Buffer::Scratch)) {
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

void CoresCollective::Rank::done_reading(const std::vector<Segment>& s, uint64_t pass) {
  for (const Segment& x : s) {
    if (!x.stored) continue;
    const auto it = store_.find(key(x.buf, x.index, pass));
    if (it != store_.end() && --it->second.readers_left == 0) store_.erase(it);
  }
}

uint64_t CoresCollective::Rank::total_len(const std::vector<Segment>& s) {
  uint64_t n = 0;
  for (const Segment& x : s) n += x.len;
  return n;
}

void CoresCollective::Rank::read(const std::vector<Segment>& s, uint64_t off, uint64_t n, uint8_t* out) const {
  walk(s, off, n, [&](const Segment& x, uint64_t at, uint64_t m) {
    if (x.stored) std::memcpy(out, x.stored->data() + at * coll_.elem_, m * coll_.elem_);
    else if (x.buf == Buffer::Input) coll_.data_.fill(coll_.dtype_, rank_, x.first + at, m, out);
    else std::memset(out, 0, m * coll_.elem_);
    out += m * coll_.elem_;
  });
}

void CoresCollective::Rank::reduce_into(const std::vector<Segment>& s, uint64_t off, uint64_t n, uint8_t* acc) {
  collectives::Alu& alu = coll_.cores_[rank_];
  walk(s, off, n, [&](const Segment& x, uint64_t at, uint64_t m) {
    if (x.stored)
      alu.reduce(coll_.dtype_, coll_.redop_, acc, x.stored->data() + at * coll_.elem_,
                 static_cast<uint32_t>(m * coll_.elem_));
    else if (x.buf == Buffer::Input)
      alu.reduce_own(coll_.data_, coll_.dtype_, coll_.redop_, rank_, x.first + at, m, acc);
    acc += m * coll_.elem_;
  });
}

void CoresCollective::Rank::write(const std::vector<Segment>& s, uint64_t off, uint64_t n, const uint8_t* data) {
  walk(s, off, n, [&](const Segment& x, uint64_t at, uint64_t m) {
    if (x.stored) std::memcpy(x.stored->data() + at * coll_.elem_, data, m * coll_.elem_);
    if (x.check) {
      wrong_ += coll_.data_.mismatches(coll_.dtype_, coll_.redop_, data, x.first + at, m, x.owner);
      checked_ += m;
    }
    data += m * coll_.elem_;
  });
}

uint64_t CoresCollective::Rank::Queue::next_elems() const {
  if (!sending || pos >= len) return 0;
  return std::min<uint64_t>(rank->coll_.packet_data_ / rank->coll_.elem_, len - pos);
}

uint32_t CoresCollective::Rank::Queue::next_wire_bytes(const net::PacketFormat& f) const {
  const uint64_t m = next_elems();
  return m ? f.wire_bytes(protocol_wire_payload(rank->coll_.proto_, static_cast<uint32_t>(m * rank->coll_.elem_))) : 0;
}

void CoresCollective::Rank::Queue::fill(net::Packet* p) {
  Rank& r = *rank;
  const OpKind k = r.op(op).kind;
  const uint64_t m = next_elems();
  p->dst = static_cast<uint32_t>(r.coll_.gpus_[out->peer]->index());
  p->op = net::Op::Write;
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
  ++data_acks_due;
  if (pos < len) return;
  r.issued_all(*this);
  if (r.coll_.proto_ != collectives::Protocol::Simple) r.gpu_.call_after(r, sc_core::SC_ZERO_TIME, at);
}

bool CoresCollective::Rank::data_ack(const Queue& q, const net::Packet* p) const {
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

void CoresCollective::Rank::Queue::on_response(net::Packet* p) {
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

uint32_t protocol_data_bytes(collectives::Protocol p, uint32_t max_payload) {
  switch (p) {
    case collectives::Protocol::LL: return max_payload / kLlLine * kLlData;
    case collectives::Protocol::LL128: return max_payload / kLl128Line * kLl128Data;
    default: return max_payload;
  }
}

uint32_t protocol_wire_payload(collectives::Protocol p, uint32_t data) {
  switch (p) {
    case collectives::Protocol::LL: return (data + kLlData - 1) / kLlData * kLlLine;
    case collectives::Protocol::LL128: return (data + kLl128Data - 1) / kLl128Data * kLl128Line;
    default: return data;
  }
}

CoresCollective::CoresCollective(collectives::Program program, std::vector<Gpu*> gpus,
                                 std::vector<std::vector<std::vector<int>>> ports, collectives::DType dtype,
                                 collectives::RedOp redop, uint64_t seed, CoresParams params, double endpoint_GBps)
    : program_(std::move(program)),
      gpus_(std::move(gpus)),
      ports_(std::move(ports)),
      dtype_(dtype),
      elem_(collectives::dtype_bytes(dtype)),
      redop_(redop),
      data_(seed, program_.ranks, dtype, redop),
      copies_are_results_(program_.collective == Kind::AllGather || program_.collective == Kind::Broadcast),
      params_(params),
      endpoint_GBps_(endpoint_GBps) {
  for (Gpu* g : gpus_) cores_.emplace_back(std::string(g->basename()) + ".cores");
  proto_ = program_.ops.empty() ? collectives::Protocol::Simple : program_.ops.front().proto;
  for (const Operation& o : program_.ops)
    if (o.proto != proto_)
      throw UserError("program " + program_.name + " mixes the " + collectives::protocol_name(proto_) + " and " +
                      collectives::protocol_name(o.proto) + " protocols; the GPUs' cores run one per program");
  // By size: every protocol it may pick must fit a packet, checked now.
  if (program_.protocol_by_size && params_.ll128_max_bytes > params_.ll_max_bytes)
    use_protocol(collectives::Protocol::LL128);
  use_protocol(proto_);
  const collectives::Buffers& b = program_.buffers[0];
  message_chunks_ = program_.collective == Kind::AllGather ? b.output : b.input;
  // The channels split the message when each touches only its own chunks.
  for (const Operation& o : program_.ops) channels_ = std::max(channels_, o.channel + 1);
  parts_ = message_chunks_ % static_cast<uint32_t>(channels_) == 0 ? channels_ : 1;
  for (int r = 0; r < program_.ranks; ++r) {
    std::vector<std::pair<int, int>> in, out;
    std::map<int, int> queue_channel;  // queue: its channel
    for (int i = 0; i < program_.op_count(r); ++i) {
      const Operation& o = program_.op(r, i);
      const auto add = [](std::vector<std::pair<int, int>>& v, int channel, int peer) {
        if (std::find(v.begin(), v.end(), std::make_pair(channel, peer)) == v.end()) v.emplace_back(channel, peer);
      };
      if (collectives::sends(o.kind)) add(out, o.channel, o.send_peer);
      if (collectives::receives(o.kind)) add(in, o.channel, o.recv_peer);
      if (queue_channel.emplace(o.queue, o.channel).first->second != o.channel) parts_ = 1;
      for (ChunkRef ref : {o.src, o.dst})
        for (uint32_t k = 0; k < ref.count; ++k) {
          Buffer buf = ref.buf;
          uint32_t index = ref.index + k;
          int64_t m;
          canonical(program_, r, buf, index, m);
          if (m >= 0 && m % parts_ != o.channel) parts_ = 1;
        }
    }
    max_conns_ = std::max(max_conns_, std::max(in.size(), out.size()));
  }
}

CoresCollective::~CoresCollective() = default;

void CoresCollective::use_protocol(collectives::Protocol p) {
  proto_ = p;
  slot_params_ = p == collectives::Protocol::LL ? params_.ll : p == collectives::Protocol::LL128 ? params_.ll128 : params_.simple;
  const uint32_t max_payload = gpus_.front()->pool().format().max_payload_bytes;
  packet_data_ = protocol_data_bytes(p, max_payload) / elem_ * elem_;
  if (packet_data_ == 0)
    throw UserError(std::string("the ") + collectives::protocol_name(p) + " protocol's lines (" +
                    std::to_string(p == collectives::Protocol::LL ? kLlLine : kLl128Line) +
                    " B) do not fit a packet of net.max_payload_bytes = " + std::to_string(max_payload));
}

void CoresCollective::start(uint64_t bytes, std::function<void()> on_done) {
  on_done_ = std::move(on_done);
  ranks_.clear();
  if (program_.protocol_by_size)
    use_protocol(bytes <= params_.ll_max_bytes      ? collectives::Protocol::LL
                 : bytes <= params_.ll128_max_bytes ? collectives::Protocol::LL128
                                                    : collectives::Protocol::Simple);
  if (program_.tree_nodes) {
    const SlotParams& step = proto_ == collectives::Protocol::LL      ? params_.ll
                             : proto_ == collectives::Protocol::LL128 ? params_.ll128
                                                                      : params_.simple;
    slot_params_.chunk_bytes = collectives::tree_chunk_bytes(proto_, bytes, static_cast<int>(message_chunks_),
                                                             program_.ranks, program_.tree_nodes, step.chunk_bytes);
  }
  layout_ = std::make_unique<Layout>(parts_, message_chunks_ / static_cast<uint32_t>(parts_),
                                     slot_params_.chunk_bytes / elem_, bytes / elem_);
  for (int r = 0; r < program_.ranks; ++r) ranks_.push_back(std::make_unique<Rank>(*this, r));
  for (auto& r : ranks_) r->link(ranks_);
  running_ = static_cast<int>(ranks_.size());
  for (auto& r : ranks_) r->start();
}

void CoresCollective::rank_done() {
  if (--running_ == 0 && on_done_) on_done_();
}

uint64_t CoresCollective::wrong() const {
  uint64_t w = 0;
  for (const auto& r : ranks_) w += r->wrong();
  return w;
}

double CoresCollective::done_fraction() const {
  uint64_t sent = 0, all = 0;
  for (const auto& r : ranks_) r->transfers(sent, all);
  return all ? static_cast<double>(sent) / static_cast<double>(all) : -1;
}

double CoresCollective::bound_us(uint64_t bytes) const {
  return collectives::bandwidth_bound_us(bytes, busbw_factor(), endpoint_GBps_);
}

double CoresCollective::busbw_factor() const {
  switch (program_.collective) {
    case Kind::AllReduce: return collectives::allreduce_busbw_factor(program_.ranks);
    case Kind::Broadcast: return 1.0;  // nccl-tests: every byte crosses each rank's link once
    default: return collectives::gather_busbw_factor(program_.ranks);
  }
}

std::string CoresCollective::redop() const {
  return program_.collective == Kind::AllGather || program_.collective == Kind::Broadcast
             ? "none"
             : collectives::redop_name(redop_);
}

}  // namespace incsim::gpu
