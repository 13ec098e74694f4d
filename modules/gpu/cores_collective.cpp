#include "cores_collective.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <ostream>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "collectives/bounds.h"
#include "collectives/layout.h"
#include "collectives/program_synthesis.h"
#include "core/error.h"
#include "gpu/group_window.h"

namespace incsim::gpu {

using collectives::Buffer;
using collectives::ChunkRef;
using Kind = collectives::Collective;
using collectives::OpKind;
using collectives::Operation;

namespace {

constexpr uint32_t kLlLine = 16, kLlData = 8;          // st.volatile.v4.u32 {data, flag, data, flag}
constexpr uint32_t kLl128Line = 128, kLl128Data = 120;  // 15 data words and a flag word per line

constexpr uint32_t kBlock = topo::MulticastFabric::kBlockBytes;  // an in-network packet's most data

bool local(OpKind k) { return !collectives::sends(k) && !collectives::receives(k) && !collectives::in_network(k); }
// An in-network operation that issues nothing here: a member's lending of
// its data to another's reducing read, or its receiving of a multicast.
bool passive(const collectives::Operation& o) {
  return (o.kind == OpKind::ReduceRead && o.dst.empty()) || (o.kind == OpKind::MulticastWrite && o.src.empty());
}

}  // namespace

// One GPU's part: a TxStream per queue, a connection per (channel, peer) and
// direction, and the chunks written that a later operation reads.
class CoresCollective::Rank : public gpu::Program {
 public:
  Rank(CoresCollective& coll, int rank);
  ~Rank() override;
  // Resolves the peers' mailbox and flag addresses, once every rank has allocated them.
  void link(const std::vector<std::unique_ptr<Rank>>& ranks);
  void start() {
    for (int i = 0; i < static_cast<int>(done_passes_.size()); ++i)
      if (receives_landing(op(i))) landed_passes(i);  // passes with nothing to land
    for (auto& q : queues_) progress(*q);
  }
  // An unfenced transfer (LL, LL128) is done once its last store has left:
  // its queue's send, one delta after (not from inside the port's fill).
  // An in-network transfer's multicast stores, likewise.
  void on_timer(uint64_t queue) override {
    Queue& q = *queues_[queue];
    if (q.innet) finish_innet(q);
    else finish_send(q, false);
  }
  // A reducing read of this GPU's input, through the switches.
  void read_region(uint64_t addr, uint32_t bytes, uint8_t* out) override;
  // A multicast store of a result lands here.
  void on_region_write(const net::Packet& p) override;
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
    uint64_t flagged = 0;            // receive, LL and LL128: the last empty transfer's flag (its count)
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
  // A queue's in-network blocks that go out on one port: the GPU spreads a
  // transfer's blocks over its ports toward the group, block k on port k mod P.
  struct Lane : TxStream {
    Queue* q = nullptr;
    uint64_t next = 0, stride = 1;  // the next block it sends, and its step
    mutable bool starved = false;   // it had a push ready but no credit: its port has dropped it
    uint32_t next_wire_bytes(const net::PacketFormat& f) const override;
    void fill(net::Packet* p) override;
    void on_response(net::Packet* p) override;
  };
  // A multicast being received in one pass: its chunks and what has landed.
  struct Landing {
    std::vector<Segment> dst;
    uint64_t got = 0, len = 0;
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
    // An in-network transfer: blocks of at most 128 bytes, none across two
    // segments, issued over lanes (one per port, made at first use).
    bool innet = false;
    int group = -1;
    uint64_t blocks = 0, issued = 0, reads_due = 0;
    int pushes_out = 0;  // reducing writes whose result has not landed (CoresParams::push_credits)
    std::vector<uint64_t> seg_blocks;  // [segment of src]: blocks before it
    std::vector<std::unique_ptr<Lane>> lanes;  // [port]

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
  void take_landed(Conn& c);  // completes c's transfers that have landed, in order
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
  // In-network operations.
  void start_innet(Queue& q, int op, uint64_t pass);
  // A transfer's block: its first message element and its element count.
  struct Block {
    uint64_t element, n;
  };
  Block block_at(const Queue& q, uint64_t block) const;
  void fill_block(Queue& q, uint64_t block, net::Packet* p);
  void read_back(Queue& q, const net::Packet* p);  // a reducing read's sum came back
  void finish_innet(Queue& q);
  // The position in segments s (message chunks) of message element e.
  static uint64_t position(const std::vector<Segment>& s, uint64_t e);
  int group_of(uint64_t addr) const;
  uint64_t passes_of(const Operation& o) const;
  // An operation that completes as its results land: a multicast's
  // receiver, a reducing write.
  static bool receives_landing(const Operation& o) {
    return (o.kind == OpKind::MulticastWrite && o.src.empty()) || o.kind == OpKind::ReduceWrite;
  }
  // Completes the passes of operation i whose results have landed, in order.
  void landed_passes(int i);
  // The elements of message chunks ref in this pass.
  uint64_t elements(const ChunkRef& ref, uint64_t pass) const;
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
  // In-network groups: the ports toward each, and per message chunk the
  // operation that receives its multicast (-1: none; -2: this rank's own).
  std::vector<std::vector<int>> group_ports_, mc_receiver_;
  std::unordered_map<uint64_t, Landing> landing_;  // by landing_key
  static uint64_t landing_key(int op, uint64_t pass) { return static_cast<uint64_t>(op) << 32 | pass; }
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
  message = collectives::message_chunk(coll_.program_, rank_, buf, index);
}

CoresCollective::Rank::Rank(CoresCollective& coll, int rank)
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
    const bool reduces = o.kind == OpKind::RecvReduceSend || o.kind == OpKind::RecvReduceCopy ||
                         o.kind == OpKind::RecvReduceCopySend || o.kind == OpKind::Reduce;
    if (!o.src.empty() && o.kind != OpKind::ReduceRead) mark(o.src, false);  // the switches read a read's src
    if (!o.dst.empty() && o.kind != OpKind::RecvReduceSend) mark(o.dst, true);
    if (reduces && (o.src.empty() || o.kind == OpKind::Reduce)) mark(o.dst, false);  // dst the operand
    // A reducing write's sums land in its dst while its src, the same
    // chunk, is read: the landing holds the chunk until the last is in
    // (landed_passes), whether or not a later operation reads it.
    if (o.kind == OpKind::ReduceWrite) mark(o.dst, false);
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
    // The rank whose input the chunk is: an all-gather's block's, an
    // all-to-all's sender (whose input is message chunks r x input on), a broadcast's root.
    const uint32_t per_rank = p.collective == Kind::AllGather || p.collective == Kind::AllToAll ? bufs.input : 0;
    result_owner_[static_cast<int>(buf)][index] = per_rank ? static_cast<int>(m / per_rank)
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
    for (int i : q->ops)
      q->transfers += collectives::sends(op(i).kind) || collectives::in_network(op(i).kind) ? q->passes : 0;
  }
  // In-network groups: the ports toward the other members, and who receives each chunk's multicast.
  group_ports_.resize(p.groups.size());
  mc_receiver_.resize(p.groups.size());
  for (size_t g = 0; g < p.groups.size(); ++g)
    for (int m : p.groups[g])
      if (m != rank && std::find(p.groups[g].begin(), p.groups[g].end(), rank) != p.groups[g].end()) {
        group_ports_[g] = coll.ports_[rank][m];
        mc_receiver_[g].assign(coll.message_chunks_, -1);
        break;
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
  for (size_t g = 0; g < coll.groups_.size(); ++g)
    if (!group_ports_[g].empty())
      gpu_.serve_region(*this, coll.groups_[g].base, coll.groups_[g].base + GroupWindow::kBytes);
  unfinished_ = static_cast<int>(queues_.size()) + receiving;
}

CoresCollective::Rank::~Rank() {
  for (auto& q : queues_) {
    gpu_.remove_stream(q.get());
    for (auto& lane : q->lanes)
      if (lane) gpu_.remove_stream(lane.get());
  }
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
    if (collectives::in_network(o.kind)) {
      ++q.next;
      start_innet(q, i, pass);
      continue;
    }
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
  ++c.landed[(addr - c.mailbox) / slot_bytes_];
  take_landed(c);
}

// Transfers complete in order: the next one once every packet its length
// takes is in, or, empty, once its flag is (a later transfer's flag has
// started every earlier one, so their lengths are current).
void CoresCollective::Rank::take_landed(Conn& c) {
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
  for (int d : dependents_[i])
    if (queue_of_[d] >= 0 && queue_of_[d] != queue_of_[i]) progress(*queues_[queue_of_[d]]);
}

uint64_t CoresCollective::Rank::passes_of(const Operation& o) const {
  const collectives::PassLayout& lay = *coll_.layout_;
  return lay.parts > 1 ? lay.passes[o.channel % lay.parts] : lay.passes[0];
}

int CoresCollective::Rank::group_of(uint64_t addr) const {
  for (size_t g = 0; g < coll_.groups_.size(); ++g)
    if (addr - coll_.groups_[g].base < GroupWindow::kBytes) return static_cast<int>(g);
  sc_assert(false && "an address in no group's window");
  return -1;
}

uint64_t CoresCollective::Rank::position(const std::vector<Segment>& s, uint64_t e) {
  uint64_t pos = 0;
  for (const Segment& x : s) {
    if (e - x.first < x.len) return pos + (e - x.first);
    pos += x.len;
  }
  sc_assert(false && "an element outside the operation's chunks");
  return 0;
}

// NVLS (multimem.ld_reduce or multimem.st) over the operation's chunks:
// blocks of at most 128 bytes, each within one chunk, addressed by their
// place in the message, spread over the ports toward the group.
void CoresCollective::Rank::start_innet(Queue& q, int i, uint64_t pass) {
  const Operation& o = op(i);
  q.sending = true;
  q.innet = true;
  q.op = i;
  q.pass = pass;
  q.group = o.group;
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
  const uint64_t lanes = std::min<uint64_t>(ports.size(), q.blocks);
  for (uint64_t k = 0; k < lanes; ++k) {
    const int port = ports[k];
    auto& lane = q.lanes[static_cast<size_t>(port)];
    if (!lane) {
      lane = std::make_unique<Lane>();
      lane->q = &q;
      gpu_.add_stream(lane.get());
    }
    lane->next = k;
    lane->stride = ports.size();
    // A store reads its data first; a load's requests go at once.
    lane->starved = false;
    gpu_.activate(port, lane.get(),
                  o.kind != OpKind::ReduceRead ? gpu_.first_read(port, q.index + 1) : sc_core::SC_ZERO_TIME);
  }
}

CoresCollective::Rank::Block CoresCollective::Rank::block_at(const Queue& q, uint64_t block) const {
  const uint64_t per_block = kBlock / coll_.elem_;
  size_t j = q.seg_blocks.size() - 1;
  while (q.seg_blocks[j] > block) --j;
  const Segment& x = q.src[j];
  const uint64_t at = (block - q.seg_blocks[j]) * per_block;
  return {x.first + at, std::min(per_block, x.len - at)};
}

void CoresCollective::Rank::fill_block(Queue& q, uint64_t block, net::Packet* p) {
  const Operation& o = op(q.op);
  const Block b = block_at(q, block);
  const Group& g = coll_.groups_[static_cast<size_t>(q.group)];
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
void CoresCollective::Rank::read_back(Queue& q, const net::Packet* p) {
  const Group& g = coll_.groups_[static_cast<size_t>(q.group)];
  const uint64_t e = (p->addr - g.base - GroupWindow::kIn) / coll_.elem_, n = p->payload_bytes / coll_.elem_;
  const bool own_through_switch = coll_.program_.multimem;
  const size_t members = g.members.size();
  if (p->count != (own_through_switch ? members : members - 1)) wrong_ += n;  // one lost or doubled
  const uint8_t* sum = p->data;
  if (!own_through_switch) {  // the others' sum: add its own
    scratch_.assign(p->data, p->data + n * coll_.elem_);
    coll_.cores_[rank_].reduce_own(coll_.data_, coll_.dtype_, coll_.redop_, rank_, e, n, scratch_.data());
    sum = scratch_.data();
  }
  write(q.dst, position(q.src, e), n, sum);
  --q.reads_due;
  if (q.issued == q.blocks && q.reads_due == 0) finish_innet(q);
}

void CoresCollective::Rank::finish_innet(Queue& q) {
  q.innet = q.sending = false;
  ++q.sent;
  if (op(q.op).kind != OpKind::ReduceWrite) op_done(q.op, q.pass);
  progress(q);
}

void CoresCollective::Rank::read_region(uint64_t addr, uint32_t bytes, uint8_t* out) {
  const Group& g = coll_.groups_[static_cast<size_t>(group_of(addr))];
  sc_assert(addr - g.base < GroupWindow::kOut);
  coll_.data_.fill(coll_.dtype_, rank_, (addr - g.base - GroupWindow::kIn) / coll_.elem_, bytes / coll_.elem_, out);
}

void CoresCollective::Rank::on_region_write(const net::Packet& p) {
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
  if (l.got == l.len) landed_passes(i);
}

void CoresCollective::Rank::landed_passes(int i) {
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

uint64_t CoresCollective::Rank::elements(const ChunkRef& ref, uint64_t pass) const {
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

uint32_t CoresCollective::Rank::Lane::next_wire_bytes(const net::PacketFormat& f) const {
  if (!q->innet || next >= q->blocks) return 0;
  const Rank& r = *q->rank;
  const OpKind kind = r.op(q->op).kind;
  if (kind == OpKind::ReduceWrite && q->pushes_out >= r.coll_.params_.push_credits) {
    starved = true;
    return 0;
  }
  return f.wire_bytes(kind == OpKind::ReduceRead ? net::Op::PullRead : kind == OpKind::ReduceWrite ? net::Op::ReduceWrite : net::Op::Write,
                      static_cast<uint32_t>(r.block_at(*q, next).n * r.coll_.elem_));
}

void CoresCollective::Rank::Lane::fill(net::Packet* p) {
  const uint64_t b = next;
  next += stride;
  q->rank->fill_block(*q, b, p);
}

void CoresCollective::Rank::Lane::on_response(net::Packet* p) { q->rank->read_back(*q, p); }

void CoresCollective::Rank::segments(const ChunkRef& ref, uint64_t pass, bool write, uint64_t len,
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
  if (!sending || innet || pos >= len) return 0;
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
                                 collectives::RedOp redop, uint64_t seed, CoresParams params, double endpoint_GBps,
                                 topo::MulticastFabric* fabric)
    : fabric_(fabric),
      program_(std::move(program)),
      gpus_(std::move(gpus)),
      ports_(std::move(ports)),
      dtype_(dtype),
      elem_(collectives::dtype_bytes(dtype)),
      redop_(redop),
      data_(seed, program_.ranks, dtype, redop),
      copies_are_results_(program_.collective == Kind::AllGather || program_.collective == Kind::Broadcast ||
                          program_.collective == Kind::AllToAll),
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
  message_chunks_ = collectives::message_chunks(program_);
  // The channels split the message when each touches only its own chunks
  // (a relay channel, its data channel's).
  for (const Operation& o : program_.ops) channels_ = std::max(channels_, o.channel + 1);
  if (program_.data_channels) channels_ = program_.data_channels;
  parts_ = message_chunks_ % static_cast<uint32_t>(channels_) == 0 ? channels_ : 1;
  for (int r = 0; r < program_.ranks; ++r) {
    std::vector<std::pair<int, int>> in, out;
    std::map<int, int> queue_channel;  // queue: its data channel
    for (int i = 0; i < program_.op_count(r); ++i) {
      const Operation& o = program_.op(r, i);
      const auto add = [](std::vector<std::pair<int, int>>& v, int channel, int peer) {
        if (std::find(v.begin(), v.end(), std::make_pair(channel, peer)) == v.end()) v.emplace_back(channel, peer);
      };
      if (collectives::sends(o.kind)) add(out, o.channel, o.send_peer);
      if (collectives::receives(o.kind)) add(in, o.channel, o.recv_peer);
      const int data_channel = o.channel % channels_;
      if (queue_channel.emplace(o.queue, data_channel).first->second != data_channel) parts_ = 1;
      for (ChunkRef ref : {o.src, o.dst})
        for (uint32_t k = 0; k < ref.count; ++k) {
          Buffer buf = ref.buf;
          uint32_t index = ref.index + k;
          int64_t m;
          m = collectives::message_chunk(program_, r, buf, index);
          if (m >= 0 && m % parts_ != o.channel % static_cast<uint32_t>(parts_)) parts_ = 1;
        }
    }
    max_conns_ = std::max(max_conns_, std::max(in.size(), out.size()));
  }
  check_in_network();
  nvls_only_ = !program_.groups.empty() &&
               std::none_of(program_.ops.begin(), program_.ops.end(), [](const Operation& o) {
                 return collectives::sends(o.kind) || collectives::receives(o.kind);
               });
  for (const std::vector<int>& members : program_.groups) {
    Group g;
    g.window = fabric_->claim_window();
    g.base = GroupWindow::base(g.window);
    g.members = members;
    groups_.push_back(std::move(g));
  }
  for (const Operation& o : program_.ops) {
    if (o.kind == OpKind::ReduceRead) groups_[o.group].reads = true;
    if (o.kind == OpKind::MulticastWrite) groups_[o.group].writes = true;
    if (o.kind == OpKind::ReduceWrite) groups_[o.group].pushes = true;
  }
  for (size_t g = 0; g < groups_.size(); ++g)
    if (groups_[g].pushes && groups_[g].writes)
      throw UserError("program " + program_.name + ": group " + std::to_string(g) + " both pushes and multicasts; a "
                      "push's sum comes back to its writers, a multicast does not, so they need groups of their own");
}

// The cores run NVLS's in-network operations over message chunks that every
// member addresses alike: a block's address is its place in the message.
void CoresCollective::check_in_network() const {
  if (program_.groups.empty()) return;
  const std::string name = "program " + program_.name + ": ";
  if (!fabric_) throw UserError(name + "its in-network operations need switches with multicast regions");
  if (program_.in_place) throw UserError(name + "the GPUs' cores run in-network operations only out of place");
  // (group, channel, position): the writer's first message chunk and its count.
  std::map<std::tuple<int, int, int>, std::pair<int64_t, uint16_t>> written;
  for (int r = 0; r < program_.ranks; ++r) {
    std::map<std::pair<int, int>, int> position;  // (group, channel): in-network operations so far
    for (int i = 0; i < program_.op_count(r); ++i) {
      const Operation& o = program_.op(r, i);
      if (!collectives::in_network(o.kind)) continue;
      const std::string what = name + "rank " + std::to_string(r) + "'s operation " + std::to_string(i) + " (" +
                               collectives::op_name(o.kind) + ")";
      if (o.kind == OpKind::Barrier)
        throw UserError(what + ": the GPUs' cores issue NVLS's reducing reads (multimem.ld_reduce), multicast "
                               "writes (multimem.st) and reducing writes; barriers are the copy engines'");
      if (o.kind == OpKind::ReduceWrite && params_.push_credits == 0)
        throw UserError(what + ": the GPUs' cores push only to switches that hold a contribution until its "
                               "block is complete (SHARP's aggregation tables on a cluster's network, ib.sharp.*); "
                               "this platform's tables evict partial sums to a home GPU, which the copy engines' "
                               "push takes");
      const auto message = [&](ChunkRef ref) { return collectives::message_chunk(program_, r, ref); };
      if (o.kind == OpKind::ReduceRead && !o.src.empty() && o.src.buf != Buffer::Input)
        throw UserError(what + " reads no input chunk; the switches read the members' inputs");
      const int pos = position[{o.group, o.channel}]++;
      if (o.kind == OpKind::ReduceWrite) {
        if (o.src.empty() || !(o.src == o.dst) || message(o.src) < 0)
          throw UserError(what + " must push a chunk of the message and take its sum in the same chunk: its "
                                 "blocks are addressed by their place in the message");
        continue;
      }
      if (o.kind != OpKind::MulticastWrite) continue;
      const ChunkRef ref = o.src.empty() ? o.dst : o.src;
      const std::pair<int64_t, uint16_t> m{message(ref), ref.count};
      if (m.first < 0)
        throw UserError(what + " multicasts a scratch chunk; a multicast lands at its place in the message");
      const auto at = written.try_emplace({o.group, o.channel, pos}, m).first;
      if (at->second != m)
        throw UserError(what + " takes message chunk " + std::to_string(m.first) + " where its writer stores chunk " +
                        std::to_string(at->second.first) + "; a multicast lands where it was stored");
    }
  }
}

CoresCollective::~CoresCollective() {
  ranks_.clear();
  remove_regions();
  for (const Group& g : groups_) fabric_->release_window(g.window);
}

void CoresCollective::remove_regions() {
  for (Group& g : groups_)
    for (int* r : {&g.in, &g.out})
      if (*r >= 0) fabric_->remove_region(std::exchange(*r, -1));
}

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
    slot_params_.chunk_bytes =
        groups_.empty() ? collectives::tree_chunk_bytes(proto_, bytes, static_cast<int>(message_chunks_), program_.ranks,
                                                        program_.tree_nodes, step.chunk_bytes)
                        : collectives::nvls_tree_chunk_bytes(bytes, message_chunks_, step.chunk_bytes);
  } else if (nvls_only_) {
    slot_params_.chunk_bytes = collectives::nvls_chunk_bytes(bytes, message_chunks_, params_.simple.chunk_bytes);
  }
  layout_ = std::make_unique<collectives::PassLayout>(parts_, message_chunks_ / static_cast<uint32_t>(parts_),
                                     slot_params_.chunk_bytes / elem_, collectives::message_elems(program_, bytes / elem_));
  // The fabric manager registers this size's regions (Klenk Fig. 2); under
  // multimem the switches read and write each member's own copy too.
  remove_regions();
  for (Group& g : groups_) {
    std::vector<int> gpus;
    for (int r : g.members) gpus.push_back(gpus_[r]->index());
    if (g.reads) g.in = fabric_->add_region(g.base + GroupWindow::kIn, bytes, gpus, !program_.multimem);
    // A push's sum comes back to every member, its writers too.
    if (g.writes || g.pushes)
      g.out = fabric_->add_region(g.base + GroupWindow::kOut, bytes, gpus, !g.pushes && !program_.multimem);
  }
  for (int r = 0; r < program_.ranks; ++r) ranks_.push_back(std::make_unique<Rank>(*this, r));
  for (auto& r : ranks_) r->link(ranks_);
  running_ = static_cast<int>(ranks_.size());
  for (auto& r : ranks_) r->start();
}

uint64_t CoresCollective::group_out(int g) const { return groups_[static_cast<size_t>(g)].base + GroupWindow::kOut; }

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
  return collectives::bandwidth_bound_us(bytes, bound_moved_ > 0 ? bound_moved_ : busbw_factor(), endpoint_GBps_);
}

double CoresCollective::busbw_factor() const { return collectives::busbw_factor(program_.collective, program_.ranks); }

std::string CoresCollective::redop() const {
  return copies_are_results_
             ? "none"
             : collectives::redop_name(redop_);
}

}  // namespace incsim::gpu
