#include "copy_engine.h"

#include <algorithm>
#include <cstring>

namespace incsim::gpu {

void CopyEngine::start(int port, uint32_t dst, uint64_t dst_addr, uint64_t src_addr, uint64_t bytes,
                       std::function<void()> on_done) {
  sc_assert(!busy());
  dst_ = dst;
  dst_addr_ = dst_addr;
  src_ = src_addr;
  bytes_ = bytes;
  pos_ = 0;
  on_done_ = std::move(on_done);
  gpu_.activate(port, this, gpu_.memory().latency());
}

uint32_t CopyEngine::next_bytes() const {
  return static_cast<uint32_t>(std::min<uint64_t>(bytes_ - pos_, gpu_.pool().format().max_payload_bytes));
}

uint32_t CopyEngine::next_wire_bytes(const net::PacketFormat& f) const {
  const uint32_t n = next_bytes();
  return n ? f.wire_bytes(n) : 0;
}

void CopyEngine::fill(net::Packet* p) {
  const uint32_t n = next_bytes();
  p->dst = dst_;
  p->addr = dst_addr_ + pos_;
  p->op = net::Op::Write;
  p->payload_bytes = static_cast<uint16_t>(n);
  std::memcpy(p->data, gpu_.memory().at(src_ + pos_, n), n);
  pos_ += n;
  ++acks_due_;
  ++packets_;
}

void CopyEngine::on_response(net::Packet*) {
  sc_assert(acks_due_ > 0);
  if (--acks_due_ == 0 && pos_ == bytes_ && on_done_) on_done_();
}

}  // namespace incsim::gpu
