#pragma once
// Traffic sources for tests that drive Gpu ports directly: a list of writes,
// a list of reads, and a copy engine that streams a local buffer to a peer.
#include <cstdint>
#include <cstring>
#include <functional>
#include <systemc>
#include <vector>

#include "gpu/gpu.h"
#include "net/packet.h"

namespace incsim::test {

// Deterministic test bytes.
inline uint8_t pattern(uint64_t a, uint64_t b, uint64_t i) {
  uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 1) * 0xBF58476D1CE4E5B9ull ^ (i + 7) * 0x94D049BB133111EBull;
  x ^= x >> 29;
  return static_cast<uint8_t>(x ^ (x >> 17));
}

struct Response {
  net::Op op;
  uint32_t src;  // the endpoint that answered
  uint64_t addr;
  uint16_t payload_bytes;
  std::vector<uint8_t> data;
  sc_core::sc_time at;
};

// Sends a fixed list of requests in order; records every response.
class RequestStream : public gpu::TxStream {
 public:
  struct Request {
    net::Op op;
    uint32_t dst;
    uint64_t addr;
    std::vector<uint8_t> data;  // a write's payload
    uint16_t read_bytes = 0;    // a read's length
    bool more = false, last = false;  // a write of a message (net::Packet::more, last)
  };
  std::vector<Request> requests;
  std::vector<sc_core::sc_time> sent;
  std::vector<Response> responses;
  std::function<void(RequestStream&)> on_each_response;  // optional

  uint32_t next_wire_bytes(const net::PacketFormat& f) const override {
    if (next_ >= requests.size() || next_ >= released_) return 0;
    const Request& r = requests[next_];
    return f.wire_bytes(r.op, r.op == net::Op::Write ? static_cast<uint32_t>(r.data.size()) : r.read_bytes);
  }
  void fill(net::Packet* p) override {
    const Request& r = requests[next_++];
    p->dst = r.dst;
    p->addr = r.addr;
    p->op = r.op;
    p->more = r.more;
    p->last = r.last;
    if (r.op == net::Op::Write) {
      p->payload_bytes = static_cast<uint16_t>(r.data.size());
      std::memcpy(p->data, r.data.data(), r.data.size());
    } else {
      p->payload_bytes = r.read_bytes;
    }
    sent.push_back(sc_core::sc_time_stamp());
  }
  void on_response(net::Packet* p) override {
    responses.push_back({p->op, p->src, p->addr, p->payload_bytes,
                         std::vector<uint8_t>(p->data, p->data + p->payload_bytes), sc_core::sc_time_stamp()});
    if (on_each_response) on_each_response(*this);
  }
  // Requests beyond `n` wait (for one-at-a-time measurements).
  void release_up_to(size_t n) { released_ = n; }
  size_t issued() const { return next_; }

 private:
  size_t next_ = 0;
  size_t released_ = SIZE_MAX;
};

}  // namespace incsim::test
