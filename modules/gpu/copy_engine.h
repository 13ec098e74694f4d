#pragma once
// The GPU copy engine (DMA): streams a buffer of local memory to an address
// in another GPU's memory as write packets of at most max_payload bytes on
// one port, and counts the write acks to know when the copy is complete
// (Klenk §IV-F: copy engines issue the requests of bulk transfers).
#include <cstdint>
#include <functional>

#include "gpu/gpu.h"

namespace incsim::gpu {

class CopyEngine : public TxStream {
 public:
  explicit CopyEngine(Gpu& gpu) : gpu_(gpu) { gpu_.add_stream(this); }

  // Starts a copy after one memory latency (the first read); on_done runs
  // once every write is acknowledged. One copy at a time.
  void start(int port, uint32_t dst, uint64_t dst_addr, uint64_t src_addr, uint64_t bytes,
             std::function<void()> on_done);
  bool busy() const { return acks_due_ != 0 || pos_ < bytes_; }
  uint64_t packets_sent() const { return packets_; }

  uint32_t next_wire_bytes(const net::PacketFormat& f) const override;
  void fill(net::Packet* p) override;
  void on_response(net::Packet* p) override;

 private:
  uint32_t next_bytes() const;
  Gpu& gpu_;
  uint32_t dst_ = 0;
  uint64_t dst_addr_ = 0, src_ = 0, bytes_ = 0, pos_ = 0, acks_due_ = 0, packets_ = 0;
  std::function<void()> on_done_;
};

}  // namespace incsim::gpu
