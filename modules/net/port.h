#pragma once
// Link ends. A link is two one-way channels; each channel runs from an OutPort
// (the sender, which owns the wire's timing and the credits for the receiver's
// buffer) to an InPort (the receiver's buffer). Packets travel on the TLM
// forward path (BEGIN_REQ); a credit travels back on the backward path
// (END_REQ) when the receiver frees the packet's buffer space.
#include <cstdint>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "core/process.h"
#include "packet.h"

namespace incsim::net {

struct NetProtocolTypes {
  using tlm_payload_type = Packet;
  using tlm_phase_type = tlm::tlm_phase;
};
using InitiatorSocket = tlm::tlm_initiator_socket<32, NetProtocolTypes>;
using TargetSocket = tlm::tlm_target_socket<32, NetProtocolTypes>;

// Virtual cut-through at packet granularity: a packet leaves when the whole of
// it fits in the receiver's buffer (credits) and the wire is free; its first
// flit arrives `latency` later, its last flit one serialization time after that.
class OutPort : public tlm::tlm_bw_transport_if<NetProtocolTypes> {
 public:
  explicit OutPort(const char* name) : socket(name) { socket.bind(*this); }

  // `wake` is notified whenever a credit comes back.
  void configure(double bw_GBps, sc_core::sc_time latency, uint32_t credits_per_vc, Wakeup* wake);

  bool link_free(const sc_core::sc_time& now) const { return busy_until_ <= now; }
  // The arbiter is pipelined: it may pick the next packet while one is on the
  // wire, to start the moment the wire frees, but never two ahead.
  bool can_pick(const sc_core::sc_time& now) const { return last_start_ <= now; }
  sc_core::sc_time next_start(const sc_core::sc_time& now) const { return busy_until_ > now ? busy_until_ : now; }
  const sc_core::sc_time& busy_until() const { return busy_until_; }
  bool has_credit(int vc, uint32_t bytes) const { return credits_[vc] >= static_cast<int>(bytes); }
  // Bytes of the receiver's buffer for vc this end may still fill.
  int credits(int vc) const { return credits_[vc]; }
  sc_core::sc_time serialization(uint32_t bytes) const {
    return rounded_ps(bytes * ps_per_byte_);
  }
  // Puts a packet on the wire at `start` (now, or next_start() for a packet
  // picked ahead); `ready` is when its last flit is available here
  // (cut-through: the wire cannot finish before that). Credits are taken now.
  void send(Packet* p, const sc_core::sc_time& start, const sc_core::sc_time& ready);
  // Applies the credits whose return time has come.
  void absorb_credits(const sc_core::sc_time& now);
  // The owner has a packet but no credit for it: wake it when credit returns.
  // Credits arriving while nobody waits only queue up (no event), which keeps
  // the queue of timed wake-ups short.
  void wait_for_credit(const sc_core::sc_time& now);

  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t packets_sent() const { return packets_sent_; }
  uint64_t packets_sent(int vc) const { return packets_on_vc_[vc]; }
  double bw_GBps() const { return bw_GBps_; }
  sc_core::sc_time latency() const { return latency_; }
  // Credits of VCs 0 to vcs - 1 (kClassVcs unless the switches allocate VCs per packet).
  void trace(sc_core::sc_trace_file* tf, const std::string& prefix, int vcs = kClassVcs) const;

 private:
  tlm::tlm_sync_enum nb_transport_bw(Packet& p, tlm::tlm_phase& phase, sc_core::sc_time& delay) override;
  void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}

  struct Credit {
    sc_core::sc_time at;
    uint16_t bytes;
    uint8_t vc;
  };
  // What every packet touches comes first, ahead of the (large) socket.
  sc_core::sc_time busy_until_, last_start_, latency_;
  int credits_[kNumVcs] = {};
  double ps_per_byte_ = 0;
  size_t ring_head_ = 0, ring_size_ = 0;
  size_t ring_mask_ = 0;  // its size, a power of two, less one: no division per credit
  bool waiting_ = false;
  std::vector<Credit> ring_;  // credits on their way back, oldest first
  Wakeup* wake_ = nullptr;
  uint64_t bytes_sent_ = 0, packets_sent_ = 0;
  uint64_t packets_on_vc_[kNumVcs] = {};
  double bw_GBps_ = 0;

 public:
  InitiatorSocket socket;
};

class PacketSink {
 public:
  virtual ~PacketSink() = default;
  // A packet's first flit reaches input `port` at p->t_head.
  virtual void receive(int port, Packet* p) = 0;
};

class InPort : public tlm::tlm_fw_transport_if<NetProtocolTypes> {
 public:
  InPort(const char* name, PacketSink* owner, int port) : socket(name), owner_(owner), port_(port) {
    socket.bind(*this);
  }
  // Frees p's buffer space: its credit reaches the sender `delay` from now
  // plus the wire latency.
  void release(Packet* p, const sc_core::sc_time& delay) {
    tlm::tlm_phase phase = tlm::END_REQ;
    sc_core::sc_time d = delay;
    socket->nb_transport_bw(*p, phase, d);
  }

  TargetSocket socket;

 private:
  tlm::tlm_sync_enum nb_transport_fw(Packet& p, tlm::tlm_phase&, sc_core::sc_time&) override {
    owner_->receive(port_, &p);
    return tlm::TLM_ACCEPTED;
  }
  void b_transport(Packet&, sc_core::sc_time&) override;
  bool get_direct_mem_ptr(Packet&, tlm::tlm_dmi&) override { return false; }
  unsigned int transport_dbg(Packet&) override { return 0; }

  PacketSink* owner_;
  int port_;
};

}  // namespace incsim::net

namespace incsim::net {
// Buffer bytes that keep a link busy across one credit round trip
// (topo::round_trip_bytes, in SystemC's time).
uint32_t round_trip_bytes(double bw_GBps, sc_core::sc_time link_latency, sc_core::sc_time holding,
                          uint32_t max_packet_bytes);
}  // namespace incsim::net
