#pragma once
// RoCEv2 frames on Ethernet: the header fields the model reads, kept as real
// bytes at the front of a packet's data, the bytes each header adds on the
// wire, and the invariant CRC (ICRC) over header and payload.
//
// Layout of net::Packet::data for Ethernet blocks:
//   [0, sizeof(RoceHeader))          the Ethernet/IP/UDP/BTH/AETH fields used
//   [kInaOffset, kInaOffset + 16)     the INA header, when the packet has one
//   [kPayloadOffset, + payload_bytes) the tensor payload (real data)
// net::Packet::src/dst are the Ethernet endpoints (hosts, FPGA) the switch
// forwards by; payload_bytes counts tensor bytes only; wire_bytes counts
// every byte the frame holds the wire for (wire_bytes_for()).
#include <cstdint>
#include <cstring>
#include <functional>

#include "core/hash.h"
#include "ethernet/ecmp.h"
#include "net/packet.h"
#include "net/port.h"

namespace incsim::eth {

// BTH opcodes of a reliable connection (IBA vol. 1 §9.2): RDMA WRITE first,
// middle, last and only; ACKNOWLEDGE carries an AETH that is either an ACK
// or a NAK (PSN sequence error). Notify is NetReduce's CTT populating
// notification between FPGAs: a first packet's headers, no payload (§3.3).
enum class Opcode : uint8_t { WriteFirst, WriteMiddle, WriteLast, WriteOnly, Ack, Nak, Notify };
inline bool is_data(Opcode o) { return o <= Opcode::WriteOnly; }

struct RoceHeader {
  uint32_t src_ip = 0, dst_ip = 0;  // IPv4
  uint32_t dst_qp = 0;              // BTH DestQP
  uint32_t psn = 0;                 // BTH PSN (ACK/NAK: the AETH's PSN)
  Opcode opcode = Opcode::WriteMiddle;
  uint8_t has_ina = 0;              // the first packet of a message carries the INA header
  // The lines the payload's data sits in (net::Lines): the GPU's LL and
  // LL128 lines cross with their flags, which the model counts on the wire
  // but does not keep (payload_bytes counts the data).
  net::Lines lines = net::Lines::Plain;
  uint8_t reserved = 0;
  uint64_t va = 0;                  // RETH virtual address (first packet of a write)
  uint32_t icrc = 0;                // over everything else (invariant_crc)
};

// The INA header the host flow control prepends to each message (NetReduce
// §3.1, Fig. 4A); InetTag marks it so that the aggregator can tell a first
// packet (§3.2).
struct InaHeader {
  uint32_t inet_tag = 0;
  uint16_t ring_id = 0;
  uint16_t rank = 0;
  uint32_t msg_id = 0;
  uint32_t msg_len = 0;  // packets in the message
};
constexpr uint32_t kInetTag = 0x4e455452;  // "NETR"
// Virtual switch-to-switch connections between FPGAs (§3.3) carry the INA
// header in every packet, with the offset in the message as the PSN.
constexpr uint32_t kInetTagSwitch = 0x4e455453;  // "NETS"

constexpr uint32_t kInaOffset = 48;
constexpr uint32_t kPayloadOffset = 64;
static_assert(sizeof(RoceHeader) <= kInaOffset && kInaOffset + sizeof(InaHeader) <= kPayloadOffset,
              "header layout");

// Bytes on the wire per frame (IEEE 802.3, RFC 791/768, IBA Annex A16/A17):
// preamble+SFD 8, Ethernet header 14, FCS 4, inter-frame gap 12; IPv4 20;
// UDP 8; BTH 12; ICRC 4. The first packet of an RDMA write carries a RETH
// (16); an ACK/NAK an AETH (4); an INA header adds 16 to its packet.
constexpr uint32_t kEthWireOverhead = 8 + 14 + 4 + 12;
constexpr uint32_t kRoceOverhead = 20 + 8 + 12 + 4;
constexpr uint32_t kRethBytes = 16, kAethBytes = 4, kInaBytes = sizeof(InaHeader);
// The frame without preamble and inter-frame gap (what a NIC counter calls
// throughput): wire bytes less these.
constexpr uint32_t kPreambleIfg = 8 + 12;

inline RoceHeader& header(net::Packet* p) { return *reinterpret_cast<RoceHeader*>(p->data); }
inline const RoceHeader& header(const net::Packet* p) { return *reinterpret_cast<const RoceHeader*>(p->data); }
inline InaHeader& ina(net::Packet* p) { return *reinterpret_cast<InaHeader*>(p->data + kInaOffset); }
inline const InaHeader& ina(const net::Packet* p) {
  return *reinterpret_cast<const InaHeader*>(p->data + kInaOffset);
}
inline uint8_t* payload(net::Packet* p) { return p->data + kPayloadOffset; }
inline const uint8_t* payload(const net::Packet* p) { return p->data + kPayloadOffset; }

// A frame's wire bytes: its headers, a RETH (a write's first packet), an
// AETH (ACK, NAK), an INA header, and `payload` data bytes in `lines`.
inline uint16_t frame_wire_bytes(uint32_t payload, net::Lines lines, bool reth, bool aeth, bool ina) {
  return static_cast<uint16_t>(kEthWireOverhead + kRoceOverhead + net::lines_wire_payload(lines, payload) +
                               (reth ? kRethBytes : 0) + (aeth ? kAethBytes : 0) + (ina ? kInaBytes : 0));
}
inline uint16_t wire_bytes_for(const net::Packet* p) {
  const RoceHeader& h = header(p);
  return frame_wire_bytes(p->payload_bytes, h.lines, h.opcode == Opcode::WriteFirst || h.opcode == Opcode::WriteOnly,
                          h.opcode == Opcode::Ack || h.opcode == Opcode::Nak, h.has_ina != 0);
}

// The ICRC over the header fields (less the icrc itself), the INA header if
// present, and the payload: CRC-32 as RoCEv2 uses (IBA Annex A17).
uint32_t invariant_crc(const net::Packet* p);
inline void seal(net::Packet* p) { header(p).icrc = invariant_crc(p); }
inline bool intact(const net::Packet* p) { return header(p).icrc == invariant_crc(p); }

// What happens to one chosen frame on a link (FaultHook): kept (the random
// draws decide), lost, or one bit flipped in its payload or in its BTH
// header (the PSN field; a header-only frame has no payload, so both flip
// the PSN there).
enum class FrameFault : uint8_t { Keep, Lose, CorruptPayload, CorruptHeader };
// Looks at each frame arriving over a link, before the random draws; tests
// use it to lose or corrupt exactly the frames they name, which then take the
// blocks' normal paths (ICRC drop, NAK, go-back-N, timeout).
using FaultHook = std::function<FrameFault(const net::Packet*)>;

// Per-link faults: loss and corruption, each an independent draw per frame
// from a stream seeded by (run seed, link). A corrupted frame has one bit of
// its payload (or header) flipped; cut-through switches forward it, and the
// ICRC check at the FPGA or the receiving NIC discards it.
class LinkFaults {
 public:
  LinkFaults() = default;
  LinkFaults(double loss, double corruption, uint64_t seed, uint64_t link);
  // True if the frame is lost (the caller releases and frees it); may corrupt it.
  bool apply(net::Packet* p) {
    if (hook_) {
      const FrameFault f = hook_(p);
      if (f != FrameFault::Keep) return force(p, f);
    }
    if (loss_ == 0 && corruption_ == 0) return false;
    return draw(p);
  }
  void set_hook(FaultHook h) { hook_ = std::move(h); }
  // At a receiving port: a lost frame gives its buffer space back and
  // returns to the pool. True if it was lost.
  bool lose(net::Packet* p, net::InPort& in, net::PacketPool& pool) {
    if (!apply(p)) return false;
    in.release(p, sc_core::SC_ZERO_TIME);
    pool.put(p);
    return true;
  }
  uint64_t lost() const { return lost_; }
  uint64_t corrupted() const { return corrupted_; }
  double loss() const { return loss_; }

 private:
  bool draw(net::Packet* p);
  bool force(net::Packet* p, FrameFault f);
  void flip(net::Packet* p, bool in_header, double where);
  double uniform() {
    const uint64_t x = splitmix64(state_);
    state_ += kGoldenGamma;
    return static_cast<double>(x >> 11) * (1.0 / 9007199254740992.0);
  }
  double loss_ = 0, corruption_ = 0;
  uint64_t state_ = 0, lost_ = 0, corrupted_ = 0;
  FaultHook hook_;
};

}  // namespace incsim::eth
