#include "roce_frame.h"

#include <cstddef>
#include <string>

#include "ethernet/crc32.h"


namespace incsim::eth {

uint32_t invariant_crc(const net::Packet* p) {
  const RoceHeader& h = header(p);
  uint32_t c = crc32(0, p->data, offsetof(RoceHeader, icrc));
  if (h.has_ina) c = crc32(c, p->data + kInaOffset, kInaBytes);
  if (p->payload_bytes) c = crc32(c, payload(p), p->payload_bytes);
  return c;
}

LinkFaults::LinkFaults(double loss, double corruption, uint64_t seed, uint64_t link)
    : loss_(loss), corruption_(corruption), state_(seed * 0x100000001B3ull ^ (link + 1) * 0xC2B2AE3D27D4EB4Full) {}

bool LinkFaults::draw(net::Packet* p) {
  if (loss_ > 0 && uniform() < loss_) {
    ++lost_;
    return true;
  }
  if (corruption_ > 0 && uniform() < corruption_) {
    ++corrupted_;
    flip(p, false, uniform());
  }
  return false;
}

bool LinkFaults::force(net::Packet* p, FrameFault f) {
  if (f == FrameFault::Lose) {
    ++lost_;
    return true;
  }
  ++corrupted_;
  flip(p, f == FrameFault::CorruptHeader, 0.5);
  return false;
}

void LinkFaults::flip(net::Packet* p, bool in_header, double where) {
  // One bit of the bytes the ICRC covers: the payload, or the PSN field
  // (of a header-only frame, or when the header is asked for).
  const bool header = in_header || !p->payload_bytes;
  const uint32_t bytes = header ? 4 : p->payload_bytes;
  uint8_t* base = header ? p->data + offsetof(RoceHeader, psn) : payload(p);
  const uint64_t bit = static_cast<uint64_t>(where * bytes * 8);
  base[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
}

}  // namespace incsim::eth
