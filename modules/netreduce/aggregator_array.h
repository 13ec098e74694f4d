#pragma once
// One ring's aggregator array and state manager (NetReduce §3.1, §4, Fig. 8,
// Fig. 9): 2N messages x MsgLen aggregators. A gradient packet of message
// MsgID at offset PSN - PSN0 goes to aggregator
//   MsgID % 2N x MsgLen + (PSN - PSN0)
// and first deallocates the aggregator one window ahead,
//   (MsgID + N) % 2N x MsgLen + (PSN - PSN0).
// Each aggregator keeps its arrival bitmap (one bit per rank, Fig. 9's
// column), the packet of each rank (the payload buffer: a retransmitted
// packet overwrites its rank's slot, so aggregation is idempotent, §3.2), and
// the aggregation value. A rank's bit is its held packet (non-null), with a
// count of the bits set beside it, so a ring may have any number of ranks
// (128 machines for P = 1024, n = 8, appendix Fig. 7). When
// the bitmap is full the value is computed, written into every rank's packet
// (which keeps its original header) and the packets leave. A packet of a
// message whose aggregation is complete gets the stored value again: its
// result was lost downstream and the sender retransmitted.
#include <cstdint>
#include <memory>
#include <vector>

#include "elements/alu.h"
#include "elements/data_pattern.h"
#include "net/packet.h"

namespace incsim::netreduce {

class AggregatorArray {
 public:
  // Resent: the packet carries the stored aggregation value; ResentFinal:
  // the stored value is the final result set by set_final() (a leaf's copy
  // of the spine's result, §3.3).
  enum Outcome { Stored, Completed, Resent, ResentFinal, Dropped };
  // The largest ring: the appendix's Fig. 7 goes to P = 1024 (a ring of
  // single-GPU hosts); the INA header's Rank field has 16 bits.
  static constexpr int kMaxRanks = 1024;
  // alu: the aggregator's adders (fault injection names them fpga.aggregator).
  AggregatorArray(int ranks, uint32_t window, uint32_t msg_len, uint32_t max_payload, elements::DType dtype,
                  elements::RedOp op, net::PacketPool* pool, elements::Alu alu = {});

  // Takes packet p (its payload at eth::payload(p)) of `rank` for (msg,
  // offset); appends the packets to emit to `out` (capacity >= ranks).
  Outcome accept(net::Packet* p, int rank, int64_t msg, uint32_t offset, std::vector<net::Packet*>& out);

  // A multi-rack leaf: the spine's result for (msg, offset) replaces the
  // partial it holds, so that retransmissions are answered here. False if
  // the aggregator no longer holds msg.
  bool set_final(int64_t msg, uint32_t offset, const uint8_t* data, uint32_t bytes);

  int ranks() const { return ranks_; }
  uint32_t window() const { return window_; }
  uint32_t msg_len() const { return msg_len_; }
  uint64_t aggregators() const { return slots_.size(); }
  // FPGA memory one aggregator takes (Fig. 8's separate arrays): a slot per
  // rank of the Header Buffer and Payload Buffer, the Aggregation Value, and
  // its bitmap in the State Record (a bit per rank).
  static uint64_t aggregator_bytes(int ranks, uint32_t max_payload);
  // An array's: 2N x MsgLen aggregators (§3.1).
  static uint64_t memory_bytes(int ranks, uint32_t window, uint32_t msg_len, uint32_t max_payload) {
    return 2ull * window * msg_len * aggregator_bytes(ranks, max_payload);
  }
  uint64_t bytes() const { return aggregators() * aggregator_bytes(ranks_, max_payload_); }
  // For waveforms and tests.
  const int& busy_ref() const { return busy_; }          // aggregators holding a partial bitmap
  const int& bits_ref() const { return bits_; }          // bits set over all partial bitmaps
  const int& completions_ref() const { return completions_; }
  uint64_t completions() const { return completions_total_; }
  // Rank packets stored where that rank had none: only grows while the ring
  // gathers new gradients (a retransmission that overwrites its own packet,
  // or is answered with a stored result, does not count).
  uint64_t contributions() const { return contributions_; }
  uint64_t resent() const { return resent_; }
  uint64_t dropped() const { return dropped_; }
  uint64_t overwrites() const { return overwrites_; }
  uint64_t deallocations() const { return deallocations_; }
  uint64_t held() const;

 private:
  struct Slot {
    int64_t msg = -1;      // the message using it (arrivals)
    int64_t result = -1;   // the message whose aggregation value it holds
    uint32_t arrived = 0;  // bits set in the bitmap
    uint16_t result_bytes = 0;
    bool final = false;
  };
  void release(uint64_t s);  // deallocate: bitmap and payload buffers
  net::Packet*& held(uint64_t s, int rank) { return held_[s * ranks_ + rank]; }
  uint8_t* value(uint64_t s) { return &values_[s * max_payload_]; }

  int ranks_;
  uint32_t window_, msg_len_, max_payload_;
  elements::DType dtype_;
  elements::RedOp op_;
  elements::Alu alu_;
  net::PacketPool* pool_;
  std::vector<Slot> slots_;
  std::vector<net::Packet*> held_;
  std::vector<uint8_t> values_;
  int busy_ = 0, bits_ = 0, completions_ = 0;
  uint64_t completions_total_ = 0, contributions_ = 0, resent_ = 0, dropped_ = 0, overwrites_ = 0, deallocations_ = 0;
};

}  // namespace incsim::netreduce
