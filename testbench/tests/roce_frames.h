#pragma once
// RoCEv2 frames as a stub host, switch or peer NIC puts them on a link
// (ethernet/roce_frame.h): real header bytes, a payload of int32 elements,
// the ICRC sealed, the wire size of what the frame holds.
#include <cstdint>
#include <cstring>

#include "ethernet/roce_frame.h"
#include "stub_port.h"

namespace incsim::test {

// Ethernet blocks count their own header bytes: a packet's data is the
// RoCE headers, the INA header and up to `mtu` payload bytes.
inline net::PacketFormat roce_format(uint32_t mtu) { return net::PacketFormat{0, 1, eth::kPayloadOffset + mtu}; }

// One direction of a reliable connection: Ethernet endpoints, IPs, and the
// receiver's queue pair.
struct Conn {
  uint32_t src_ep, dst_ep, src_ip, dst_ip, dst_qp;
};

// A frame of `op` with `payload_bytes` of elements first, first + 1, ...;
// a data frame on the request class, an ACK/NAK on the response class.
inline net::Packet* roce_frame(net::PacketPool& pool, const Conn& c, eth::Opcode op, uint32_t psn,
                               uint32_t payload_bytes = 0, int32_t first = 0, const eth::InaHeader* ina = nullptr,
                               uint64_t va = 0) {
  net::Packet* p = pool.get();
  p->src = c.src_ep;
  p->dst = c.dst_ep;
  p->vc = eth::is_data(op) ? net::kRequestVc : net::kResponseVc;
  p->payload_bytes = static_cast<uint16_t>(payload_bytes);
  eth::RoceHeader& h = eth::header(p);
  h = eth::RoceHeader();
  h.src_ip = c.src_ip;
  h.dst_ip = c.dst_ip;
  h.dst_qp = c.dst_qp;
  h.psn = psn;
  h.opcode = op;
  h.va = va;
  if (ina) {
    h.has_ina = 1;
    eth::ina(p) = *ina;
  }
  for (uint32_t i = 0; i < payload_bytes / 4; ++i) {
    const int32_t v = first + static_cast<int32_t>(i);
    std::memcpy(eth::payload(p) + 4 * i, &v, 4);
  }
  eth::seal(p);
  p->wire_bytes = eth::wire_bytes_for(p);
  return p;
}

// What a received frame carried.
inline const eth::RoceHeader& roce(const Arrival& a) { return a.as<eth::RoceHeader>(); }
inline int32_t element(const Arrival& a, uint32_t i) {
  int32_t v;
  std::memcpy(&v, a.data.data() + eth::kPayloadOffset + 4 * i, 4);
  return v;
}
// Its ICRC matches its bytes (the receiver would accept it).
inline bool intact(const Arrival& a) {
  net::Packet p = a.pkt;
  p.data = const_cast<uint8_t*>(a.data.data());
  return eth::intact(&p);
}

}  // namespace incsim::test
