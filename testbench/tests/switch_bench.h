#pragma once
// A switch alone between four stub GPUs (stub_port.h), no platform: the
// bench of test_credit_switch (the crossbar) and test_nvswitch_ports (its
// tables), with the parameters their expected times are computed from.
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "credit_switch/credit_switch.h"
#include "stub_port.h"

namespace incsim::test {

constexpr int kPorts = 4;
constexpr double kBw = 25.0;                  // GB/s per port
const sc_core::sc_time kLink(10, sc_core::SC_NS);    // wire latency
const sc_core::sc_time kSwitch(150, sc_core::SC_NS); // first flit in to first flit out (Klenk §V)
constexpr uint32_t kPayload = 128, kWire = 144;  // 16 B header + 128 B (Klenk §V)
const sc_core::sc_time kSer = wire_time(kWire, kBw);  // 5.76 ns
// Output-queued (speedup 0): the crossbar moves a packet into an output at
// the port count times the port bandwidth.
const sc_core::sc_time kXbar = wire_time(kWire, kPorts * kBw);  // 1.44 ns

inline credit_switch::SwitchConfig switch_config() {
  credit_switch::SwitchConfig c;
  c.latency = kSwitch;
  c.in_buffer_bytes = 8 * kWire;
  c.out_queue_bytes = 8 * kWire;
  return c;
}

// The switch make() builds and a stub GPU on each port; each GPU gives the
// switch's output `gpu_buffer` bytes of credit per VC.
template <class Switch>
struct SwitchBench {
  net::PacketPool pool{net::PacketFormat{}};
  std::unique_ptr<Switch> sw;
  std::vector<std::unique_ptr<StubPort>> gpu;  // by port
  SwitchBench(const std::function<std::unique_ptr<Switch>(net::PacketPool&)>& make, uint32_t gpu_buffer = 8 * kWire) {
    sw = make(pool);
    for (int p = 0; p < kPorts; ++p) {
      gpu.push_back(std::make_unique<StubPort>(("gpu_at_port" + std::to_string(p)).c_str(), pool));
      gpu[p]->configure(kBw, kLink, sw->buffer_bytes(p));
      gpu[p]->connect(sw->in(p), sw->out(p));
      sw->configure_port(p, kBw, kLink, gpu_buffer);
    }
  }
  uint64_t held() const {
    std::ostringstream os;
    return sw->report_held(os);
  }
};

inline net::Packet* packet(net::PacketPool& pool, net::Op op, uint32_t src, uint32_t dst, uint64_t addr) {
  net::Packet* p = pool.get();
  p->op = op;
  p->src = src;
  p->dst = dst;
  p->addr = addr;
  p->vc = net::kRequestVc;
  p->payload_bytes = kPayload;
  p->wire_bytes = pool.format().wire_bytes(op, kPayload);
  return p;
}

inline int32_t element(const Arrival& a, int i) {
  int32_t v;
  std::memcpy(&v, a.data.data() + 4 * i, 4);
  return v;
}

}  // namespace incsim::test
