#pragma once
// An Ethernet output port shared by the switch and the FPGA: two queues (data
// frames; ACK/NAKs, served first), each frame eligible a fixed `delay` after
// its first bit reached this block (cut-through), sent when the wire is free
// and the next hop's ingress buffer has room.
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "core/process.h"
#include "net/port.h"

namespace incsim::eth {

class Egress {
 public:
  explicit Egress(const std::string& name) : out(name.c_str()) {}
  void configure(double bw_GBps, sc_core::sc_time link_latency, uint32_t next_hop_buffer, sc_core::sc_time delay) {
    out.configure(bw_GBps, link_latency, next_hop_buffer, &wake);
    delay_ = delay;
  }
  // Frames that hold an ingress buffer's credit until they leave name it in
  // in_port; `ingress` lists those buffers (nullptr: none).
  void set_ingress(std::vector<net::InPort*>* ingress) { ingress_ = ingress; }
  void push(net::Packet* p) {
    queue_[p->vc == net::kRequestVc ? 0 : 1].push(p);
    ++depth_;
    wake.at(p->t_head + delay_);
  }
  // The owner's method body: sends at most one frame and schedules the next look.
  void serve();
  int depth() const { return depth_; }
  // For stall reports: one line naming `who` if frames wait here; returns them.
  uint64_t report_held(std::ostream& os, const std::string& who) const {
    if (depth_) os << "  " << who << ": " << depth_ << " frames queued\n";
    return static_cast<uint64_t>(depth_);
  }
  const int& depth_ref() const { return depth_; }

  net::OutPort out;
  Wakeup wake;

 private:
  net::PacketFifo queue_[2];
  sc_core::sc_time delay_;
  std::vector<net::InPort*>* ingress_ = nullptr;
  int depth_ = 0;
};

}  // namespace incsim::eth
