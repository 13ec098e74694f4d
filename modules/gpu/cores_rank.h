#pragma once
// One rank of a program on the GPU's cores (gpu3.cores, cores.h): the
// executor of that rank's operations, as NCCL's kernel runs on one GPU. A
// TxStream per queue (a thread block), a connection per (channel, peer) and
// direction with a mailbox of slots in the receiver's memory, and the
// chunks written that a later operation reads. Its collective
// (cores_collective.h) holds what the ranks share: the program, this size's
// passes, the in-network groups. cores_rank.cpp runs the transfers,
// cores_rank_innet.cpp the in-network operations (NVLS, SHARP's pushes).
#include <cstdint>
#include <deque>
#include <memory>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectives/cores_turn.h"
#include "collectives/executor.h"
#include "collectives/program.h"
#include "gpu/cores.h"
#include "gpu/cores_collective.h"
#include "gpu/gpu.h"

namespace incsim::gpu {

class CoresRank : public gpu::EventHandler, public collectives::RankExecutor {
  using Buffer = collectives::Buffer;
  using ChunkRef = collectives::ChunkRef;
  using Operation = collectives::Operation;
  using OpKind = collectives::OpKind;

 public:
  CoresRank(CoresCollective& coll, int rank);
  ~CoresRank() override;
  // Resolves the peers' mailbox and flag addresses, once every rank has allocated them.
  void link(const std::vector<std::unique_ptr<CoresRank>>& ranks);
  void start() {
    for (int i = 0; i < static_cast<int>(done_passes_.size()); ++i)
      if (collectives::receives_landing(op(i))) landed_passes(i);  // passes with nothing to land
    for (auto& q : queues_) progress(*q);
  }
  // An unfenced transfer (LL, LL128) is done once its last store has left:
  // its queue's send, one delta after (not from inside the port's fill).
  // An in-network transfer's multicast stores, likewise.
  void on_timer(uint64_t queue) override {
    if (queue & kRelayed) return seen(*watched(queue & ~kRelayed), queue & ~kRelayed);
    if (queue & kProxiedSum) return landed_passes(static_cast<int>(queue & ~kProxiedSum));
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
  // Transfers sent of all its queues' transfers.
  Progress progress() const override { return collectives::transfers_sent(queues_); }
  // Mismatches plus elements checked too few or too many times.
  uint64_t wrong() const override {
    return wrong_ + (checked_ > expect_checked_ ? checked_ - expect_checked_ : expect_checked_ - checked_);
  }

 private:
  struct Queue;
  // A timer's tag for a watched write NCCL's proxies have relayed: its address.
  static constexpr uint64_t kRelayed = 1ull << 60;
  // ... for a pass of SHARP's sums, all landed, that they have relayed: its operation.
  static constexpr uint64_t kProxiedSum = 1ull << 59;
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
    // With another node: NCCL's proxies' time per step (receive) or on a slot's way back (send).
    sc_core::sc_time proxied;
  };
  Conn* watched(uint64_t addr) const;
  void seen(Conn& c, uint64_t addr);  // a watched write of c's, as the cores' polling load sees it
  // A run of a chunk reference: one chunk's elements in this pass.
  struct Segment {
    Buffer buf;
    uint32_t index;
    uint64_t first = 0, len = 0;  // message elements (none for scratch)
    std::vector<uint8_t>* stored = nullptr;  // its data, where written this pass
    bool check = false;                      // this write is the chunk's last: a result to check
    int owner = -1;
  };
  using Pending = collectives::PendingReceive;
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
    CoresRank* rank;
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
  template <class Q, class E>
  friend void collectives::take_turn(Q& q, E& e, const collectives::Program& p, int rank, uint64_t slots);
  uint64_t done_passes(int i) const { return done_passes_[static_cast<size_t>(i)]; }
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
  void complete_receive(Queue& q, const Pending& pd);
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
    if (coll_.copies_are_results_) gpu_.cores().alu().pass(coll_.dtype_, data, static_cast<uint32_t>(n * coll_.elem_));
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
  std::vector<int> send_pos_;                  // [op]: sending and in-network operations before it in its queue
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
  std::vector<sc_core::sc_time> group_proxied_;  // [group]: NCCL's proxies' time on its sums (members in other nodes)
  std::unordered_map<uint64_t, Landing> landing_;  // by landing_key
  static uint64_t landing_key(int op, uint64_t pass) { return static_cast<uint64_t>(op) << 32 | pass; }
};

}  // namespace incsim::gpu
