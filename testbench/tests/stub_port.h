#pragma once
// A stub at one port of a block under test: the far end of the block's link,
// so that a test drives the block alone through its sockets. Its OutPort sends
// the packets the test queues, each no earlier than the time chosen for it, in
// order, as the wire and the block's input buffer (the stub's credits) allow;
// its InPort records each packet that arrives, with the time its sender
// committed it, its head and tail times and a copy of its data, and returns
// the packet's buffer space when its tail is in, unless the test withholds it.
#include <deque>
#include <systemc>
#include <utility>
#include <vector>

#include "core/process.h"
#include "net/packet.h"
#include "net/port.h"

namespace incsim::test {

// The time `bytes` hold a wire of bw_GBps (GB/s = bytes per ns), in whole ps
// as net::OutPort rounds it.
inline sc_core::sc_time wire_time(uint32_t bytes, double bw_GBps) {
  return sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(bytes * 1000.0 / bw_GBps + 0.5));
}

struct Arrival {
  sc_core::sc_time committed, head, tail;
  net::Packet pkt;            // the fields as it arrived (pkt.data points nowhere)
  std::vector<uint8_t> data;  // the pool's max_payload_bytes bytes of its data
  template <class T>
  const T& as(size_t offset = 0) const {  // a header laid out in the data
    return *reinterpret_cast<const T*>(data.data() + offset);
  }
};

class StubPort : public sc_core::sc_module, public net::PacketSink {
 public:
  StubPort(sc_core::sc_module_name name, net::PacketPool& pool)
      : sc_module(name), out("out"), in("in", this, 0), pool_(pool) {
    spawn_method((std::string(basename()) + "_tx").c_str(), [this] { tx(); }, wake_);
  }
  // The stub's sending side: its wire, and the block's input buffer behind it.
  void configure(double bw_GBps, sc_core::sc_time latency, uint32_t block_buffer_bytes) {
    out.configure(bw_GBps, latency, block_buffer_bytes, &wake_);
  }
  // Binds both channels of the link: stub -> block_in, block_out -> stub.
  void connect(net::InPort& block_in, net::OutPort& block_out) {
    out.socket.bind(block_in.socket);
    block_out.socket.bind(in.socket);
  }
  // Queues p (wire_bytes and vc set) to leave at t or, if the wire or the
  // credits are not free then, as soon as they are; times must not decrease.
  void send_at(const sc_core::sc_time& t, net::Packet* p) {
    sc_assert(queue_.empty() || queue_.back().first <= t);
    queue_.emplace_back(t, p);
    wake_.at(t);
  }
  // While withheld, arrived packets keep their buffer space: the block
  // runs out of credits for this link.
  void withhold_credits(bool on) { withhold_ = on; }
  // Frees every packet held so far: their credits start back now.
  void return_credits() {
    for (net::Packet* p : held_) {
      in.release(p, sc_core::SC_ZERO_TIME);
      pool_.put(p);
    }
    held_.clear();
  }

  void receive(int, net::Packet* p) override {
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    Arrival a{now, p->t_head, p->t_tail, *p, std::vector<uint8_t>(p->data, p->data + pool_.format().max_payload_bytes)};
    a.pkt.data = nullptr;
    a.pkt.next = nullptr;
    arrivals_.push_back(std::move(a));
    if (withhold_) {
      held_.push_back(p);
      return;
    }
    in.release(p, p->t_tail - now);  // space frees when the tail is in
    pool_.put(p);
  }

  const std::vector<Arrival>& arrivals() const { return arrivals_; }
  const std::vector<sc_core::sc_time>& sent() const { return sent_; }  // when each queued packet left

  net::OutPort out;
  net::InPort in;

 private:
  void tx() {
    wake_.fired();
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    out.absorb_credits(now);
    while (!queue_.empty() && queue_.front().first <= now && out.link_free(now)) {
      net::Packet* p = queue_.front().second;
      if (!out.has_credit(p->vc, p->wire_bytes)) {
        out.wait_for_credit(now);
        return;
      }
      queue_.pop_front();
      sent_.push_back(now);
      out.send(p, now, now);
    }
    if (queue_.empty()) return;
    wake_.at(out.link_free(now) ? queue_.front().first : out.busy_until());
  }

  net::PacketPool& pool_;
  Wakeup wake_;
  std::deque<std::pair<sc_core::sc_time, net::Packet*>> queue_;
  std::vector<net::Packet*> held_;
  std::vector<Arrival> arrivals_;
  std::vector<sc_core::sc_time> sent_;
  bool withhold_ = false;
};

}  // namespace incsim::test
