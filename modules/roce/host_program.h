#pragma once
// The host software above a RoCE NIC executing its rank's operations of a
// collective program (docs/programs.md) on real data in host (GPU) memory:
// the engine of Engine::RoceNic. NetReduce, the ring and the hierarchical
// all-reduces of NetReduce §3 are programs (collectives/program_synthesis.h);
// this runs any program of these operations:
//  - send, receive and the receive-reduce kinds over RC connections: every
//    operation's bytes are cut into messages of MsgLen packets, each one
//    RDMA WRITE; a receive-and-send forwards a message as soon as the whole
//    of it has arrived (and been reduced), as NCCL's ring over RDMA does;
//  - aggregate: NetReduce's flow control (§3.1, §3.2): each message carries
//    an INA header (RingID = the group's at the FPGA, MsgID, Rank = position in the group,
//    MsgLen) on the connection to the group's successor, N messages are in
//    flight, and the window advances each time a whole result message has
//    arrived from the predecessor, written over the operation's chunk.
// Order: the operations of one queue stream message by message (the k-th
// message of an operation goes after the k-th of the one before it in the
// queue, and an operation completes after the one before it); a dependency
// waits for the whole operation. Data that arrives for an operation not yet
// allowed to take it waits in a staging area (NCCL's receive FIFO) and is
// taken, in arrival order, once it may be.
// Memory: the host's buffer is in pages made when first written (until
// then a page reads as the rank's input, generated from the pattern), and
// each page is checked (#wrong) and given back once every message that
// touches it is handled and, if the host sent it, acknowledged (go-back-N
// reads it again until then): what the host holds is the data in flight,
// not the message (docs/validation.md).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "elements/data_pattern.h"
#include "collectives/executor.h"
#include "collectives/message_order.h"
#include "collectives/program.h"
#include "roce/roce_nic.h"

namespace incsim::roce {

struct HostConfig {
  uint32_t mtu_payload;  // bytes of tensor per packet
  uint32_t msg_len;      // packets per message (MsgLen)
  uint32_t window;       // messages in flight (N) of an aggregation
  uint16_t first_ring = 0;  // the FPGA's RingID of group 0 (it numbers every job's rings), group g's first_ring + g
};

// A queue pair of this host and what it carries: the program's channel to
// (or from) one peer rank.
struct Connection {
  uint16_t channel;
  int peer;
  int qp;
};

class HostProgram : public NicClient, public collectives::RankExecutor, collectives::MessageOrder::Mover {
 public:
  // Runs rank `rank` of `program` (an in-place all-reduce of RoCE
  // operations, which the caller has checked) on `nic`; `sends` and
  // `receives` are the host's connections. Throws UserError if an operation
  // needs a connection the host lacks.
  HostProgram(RoceNic* nic, const collectives::Program* program, int rank, const std::vector<Connection>& sends,
              const std::vector<Connection>& receives, const HostConfig& cfg, const elements::DataPattern* pattern,
              elements::DType dtype, elements::RedOp op);
  // An all-reduce of `bytes`: fills the input from the pattern, runs the
  // operations, checks every element of the output at the end (#wrong).
  void start(uint64_t bytes, std::function<void()> done);
  bool finished() const { return finished_; }
  uint64_t wrong() const override { return wrong_; }
  // The most bytes of pages it held at once in its last collective.
  uint64_t peak_bytes() const { return peak_pages_ * kPage; }
  // Messages handled (sent, received, their results in) of all its operations'.
  Progress progress() const override {
    Progress p;
    for (int i = 0; i < order_.size(); ++i) {
      p.done += order_[i].done_msgs;
      p.all += order_[i].messages;
    }
    return p;
  }
  // The oldest operation not complete, for the waveform (hostI.op).
  const int& progress_ref() const { return oldest_; }
  // Where a stalled host is: its oldest incomplete operation and what it waits for.
  std::string where() const;

  void fill(int qp, const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) override;
  void deliver(int qp, uint64_t va, const uint8_t* payload, uint32_t bytes, net::Lines) override;
  void acknowledged(int qp, uint32_t una) override;

 private:
  static constexpr uint64_t kNoAddr = ~0ull;
  // An operation's data beside its order (collectives::MessageOrder: its
  // bytes, messages and progress).
  struct Op {
    collectives::OpKind kind;
    uint64_t src = kNoAddr, dst = kNoAddr;             // offsets in host memory of its chunks
    uint64_t operand = kNoAddr;                        // a receive-reduce's local operand
    uint64_t sum = kNoAddr;                            // a receive-reduce-send's result, sent from there
    uint64_t packets_in = 0;                           // packets received (aggregate: of results)
    uint64_t packets = 0;                              // its bytes' packets
    uint64_t va_tag = 0;                               // its writes' address tag
    int send_qp = -1;
    uint32_t msg_id_base = 0;                          // aggregate: MsgIDs continue across collectives
    uint16_t ina_rank = 0, ring_id = 0;
    uint32_t staged = 0;                               // packets waiting in staged_
    uint32_t acked = 0;                                // its work requests acknowledged (one per message)
    uint32_t retired = 0;                              // messages handled and acknowledged
  };
  // A page of the host's buffer (or of the receive-reduce-sends' sums).
  static constexpr uint64_t kPage = 64 << 10;
  struct Page {
    uint8_t* data = nullptr;  // null: not made; in the buffer, the rank's input
    uint32_t uses = 0;        // messages touching it not yet handled and acknowledged
    // data[lo, hi) holds its content; the rest is still the rank's input,
    // not generated until something reads or adds to it (most of a page is
    // written over whole, message by message).
    uint32_t lo = 0, hi = 0;
    bool checked = false;
  };
  struct Staged {
    int op;
    uint64_t offset, at;  // in the operation's bytes; in staging_
    uint32_t bytes;
  };
  // A write's address: [point-to-point bit][sequence][offset]; an
  // aggregation's is its offset alone (its results come back from the FPGA).
  static constexpr int kSeqShift = 40;
  static constexpr uint64_t kPointBit = 1ull << 62;

  void layout(uint64_t bytes);
  void take(int i, uint64_t offset, const uint8_t* payload, uint32_t bytes);
  // collectives::MessageOrder::Mover
  void post(int i, uint32_t msg) override;
  void take_staged(int i) override;
  void completed(int i) override;
  void stage(int i, uint64_t offset, const uint8_t* payload, uint32_t bytes);
  void replay();        // staged packets that may now be taken, in arrival order
  void finish();
  // Host memory, page by page: read (input generated where a page is not
  // made), write, add what arrives to what is there, copy.
  uint8_t* made(uint64_t page);
  // Bytes [off, off + n) of the page about to be written over (overwrite)
  // or added to: the page's data, with what it holds there (unless overwritten).
  uint8_t* prepare(uint64_t page, uint64_t off, uint64_t n, bool overwrite);
  void input(uint64_t at, uint64_t n, uint8_t* out) const;  // the rank's input bytes (0 beyond the buffer)
  void hold_all(uint64_t page);  // a made page's data outside [lo, hi) becomes the input it stands for
  void read(uint64_t at, uint64_t n, uint8_t* out);
  void write(uint64_t at, const uint8_t* data, uint64_t n);
  void reduce(uint64_t at, const uint8_t* data, uint64_t n);
  void copy(uint64_t to, uint64_t from, uint64_t n);
  // Calls f(page, offset in it, bytes, bytes before) for each page [at, at + n) lies in.
  template <class F>
  static void each_page(uint64_t at, uint64_t n, F&& f) {
    for (uint64_t done = 0; done < n;) {
      const uint64_t a = at + done, off = a % kPage, piece = std::min(n - done, kPage - off);
      f(a / kPage, off, piece, done);
      done += piece;
    }
  }
  // Calls f(page) for each page message m of operation i touches (each of its chunks).
  template <class F>
  void message_pages(int i, uint32_t m, F&& f) const {
    const Op& o = ops_[static_cast<size_t>(i)];
    const uint64_t from = m * msg_bytes_, to = std::min(order_[i].bytes, from + msg_bytes_);
    for (const uint64_t at : {o.src, o.dst, o.operand, o.sum})
      if (at != kNoAddr)
        for (uint64_t g = (at + from) / kPage; g <= (at + to - 1) / kPage; ++g) f(g);
  }
  // Operation i's messages handled and acknowledged: no one touches their
  // pages for them again; a page no message needs any more is final.
  void retire(int i);
  void check(uint64_t page);  // counts the page's wrong elements, once
  void release(Page& page);  // gives its memory back

  RoceNic* nic_;
  const collectives::Program* program_;
  int rank_;
  HostConfig cfg_;
  const elements::DataPattern* pattern_;
  elements::DType dtype_;
  elements::RedOp redop_;
  uint64_t msg_bytes_;  // MsgLen packets of payload
  std::vector<Op> ops_;
  collectives::MessageOrder order_;
  std::vector<std::vector<int>> by_seq_;          // [qp][sequence]: the receiving operation
  std::vector<int> aggregate_on_;                 // [qp]: the aggregation whose results it brings, or -1
  std::vector<int> send_qps_;                     // the queue pairs it sends on
  std::vector<Page> pages_;                       // the buffer (input = output), then the sums
  std::vector<std::unique_ptr<uint8_t[]>> page_pool_;  // every page's memory, made or free
  std::vector<uint8_t*> free_pages_;
  uint64_t pages_held_ = 0, peak_pages_ = 0;
  std::vector<uint8_t> scratch_;                  // a page of input generated for a check
  // [qp]: (end PSN, operation) of its work requests from `head` on; the
  // acknowledged ones before it are dropped in bulk, so the entries' memory
  // is reused instead of a deque's blocks made and freed as messages flow
  // (nothing on a packet's path allocates).
  struct Posted {
    std::vector<std::pair<uint32_t, int>> entries;
    size_t head = 0;
  };
  std::vector<Posted> posted_;
  std::vector<uint8_t> staging_;
  std::vector<Staged> staged_;
  std::vector<char> blocked_;                     // replay(): operations whose next staged packet must wait
  std::vector<uint32_t> msg_ids_;                 // [group]: the next MsgID (the aggregator array remembers them)
  uint64_t staged_bytes_ = 0, elements_ = 0;
  int oldest_ = 0;
  bool finished_ = true;
  uint64_t wrong_ = 0;
  std::function<void()> done_;
};

}  // namespace incsim::roce
