#pragma once
// The connection lookup table (NetReduce §3.2, Fig. 3 Ⓐ):
//   <SrcIP, DstIP, DstQP> : <RingID, Rank, MsgID, PSN0>
// A message's first packet (INA header with the InetTag) fills its
// connection's entry; the packets that follow carry no INA header and look
// it up to recover (RingID, Rank, MsgID) and their offset PSN - PSN0 in the
// message. Fixed capacity, open addressing, no allocation after
// construction. An sc_module without processes (fpga.clt; leaf0_fpga.clt on spine-leaf), called directly
// by the FPGA's receive method: its logger, its VCD scope (occupancy) and its
// stall line are its own.
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <systemc>
#include <vector>

#include "core/log.h"
#include "core/param.h"
#include "core/trace.h"

namespace incsim::netreduce {

// Also the size of the CTT (ctt.h) and of a leaf's destination CLT.
inline const Param<uint32_t> kCltEntries{"fpga.clt.entries", 1024, Range::at_least(1).at_most(1 << 20),
                                         "connection lookup (and translation) table entries (assumption: one per ring "
                                         "connection; a small BRAM table)"};

struct ConnKey {
  uint32_t src_ip = 0, dst_ip = 0, dst_qp = 0;
  bool operator==(const ConnKey& o) const { return src_ip == o.src_ip && dst_ip == o.dst_ip && dst_qp == o.dst_qp; }
};

// Where a gradient packet goes in its ring's aggregator array.
struct Resolved {
  enum Status : uint8_t { Ok, NoEntry, FirstLost, TableFull } status = NoEntry;
  uint16_t ring = 0, rank = 0;
  int64_t msg = 0;
  uint32_t offset = 0;  // PSN - PSN0
  uint32_t msg_len = 0;
};

class ConnectionLookupTable : public sc_core::sc_module, public Traceable {
 public:
  ConnectionLookupTable(sc_core::sc_module_name name, uint32_t capacity);

  // Job initialisation (§3.1 ❶): ring `ring` chunks its tensors into
  // messages of `msg_len` packets (all but a tensor's last message).
  void add_ring(uint16_t ring, uint32_t msg_len);

  // A first packet: fills (or refreshes) the connection's entry; `va` is its
  // RETH address (kept for locate()). NoEntry for a ring not added.
  Resolved fill(const ConnKey& k, uint16_t ring, uint16_t rank, uint32_t msg_id, uint32_t msg_len, uint32_t psn,
                uint64_t va = 0);
  // A following packet. PSN - PSN0 >= MsgLen means this message's first
  // packet was lost: FirstLost, the packet is dropped (§3.2). PSN < PSN0 is a
  // go-back-N retransmission of an earlier message of the window, which
  // started mid-message; every message but a tensor's last has the ring's
  // MsgLen (from add_ring, not from the entry: the entry may hold a tensor's
  // short last message), so its MsgID and offset follow from the PSN (the
  // paper does not say how it handles this case; docs/netreduce.md).
  Resolved lookup(const ConnKey& k, uint32_t psn) const;

  // The other way round, for the multi-rack multicast (§3.3): the PSN and
  // RETH address the source gave packet `offset` of message `msg`, from the
  // entry and the ring's MsgLen (`mtu` payload bytes per packet). Only for
  // the entry's message or an earlier one of its tensor: a later message
  // may belong to the next tensor (MsgIDs and PSNs go on, RETH addresses
  // start again at 0, and the entry's may be a short last message), and so
  // may an earlier one whose address comes out below 0. False then: the
  // result cannot be translated until that message's first packet is seen.
  struct Located {
    uint32_t psn = 0;
    uint64_t va = 0;  // of the message's first byte
    uint16_t rank = 0;
  };
  bool locate(const ConnKey& k, int64_t msg, uint32_t offset, uint32_t mtu, Located* out) const;

  uint32_t occupancy() const { return used_; }
  uint32_t capacity() const { return static_cast<uint32_t>(slots_.size()); }
  const int& occupancy_ref() const { return trace_used_; }

  void trace(sc_core::sc_trace_file* tf) const override;
  void report(std::ostream& os) const;  // one line if it holds connections
  log::Logger log;  // fills and lookups, by the FPGA's receive method

 private:
  struct Entry {
    ConnKey key;
    bool valid = false;
    uint16_t ring = 0, rank = 0;
    uint32_t msg_id = 0, msg_len = 0, ring_len = 0, psn0 = 0;  // ring_len: the ring's MsgLen
    uint64_t va = 0;
  };
  size_t find(const ConnKey& k) const;  // its slot, or the empty slot where it would go; capacity() if full
  std::vector<Entry> slots_;
  std::vector<uint32_t> ring_len_;  // by ring id; 0: not added
  uint32_t used_ = 0;
  int trace_used_ = 0;
};

}  // namespace incsim::netreduce
