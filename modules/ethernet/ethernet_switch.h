#pragma once
// A commodity Ethernet switch (NetReduce §4, Fig. 10B): output-queued,
// cut-through, forwarding by destination, with ACL rules that redirect a
// training connection's data frames to the port where the FPGA sits. Where
// several ports lead to a destination at equal cost (a leaf's up-links to
// the spines), ECMP picks one per flow by a hash of the connection (source
// and destination IP, destination QP; RoCEv2 sets the UDP source port per
// QP for the same purpose), so a reliable connection's frames keep their
// order on one path, as go-back-N needs.
// Lossless (PFC-like) between hops: a frame leaves only when the next hop's
// ingress buffer has room, modelled with the link credits of net::OutPort.
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "core/process.h"
#include "core/trace.h"
#include "net/block.h"
#include "ethernet/egress.h"
#include "ethernet/roce_frame.h"
#include "net/port.h"
#include "core/param.h"

namespace incsim::eth {

// Each port's rate, wire latency and the next hop's buffer are its link's
// (configure_port, before the simulation starts).
struct SwitchConfig {
  sc_core::sc_time latency;        // first bit in to first bit out
  uint32_t buffer_bytes;           // ingress buffer per port and class
};
// At least one frame (checked against roce.mtu_payload where the frame size is known).
inline const Param<uint32_t> kEthBufferBytes{
    "switch.buffer_bytes", 256 * 1024, Range::at_least(64).at_most(1u << 30),
    "ingress buffer per port and class with PFC, bytes (assumption: covers ~20 us of 100 GbE; RoCE runs lossless "
    "under PFC)"};

// Data frames of connection (src_ip, dst_ip, dst_qp) that arrive on any port
// but `to_port` go out of `to_port` (one rule per worker, NetReduce §4).
struct AclRule {
  uint32_t src_ip, dst_ip, dst_qp;
  int to_port;
};

class EthernetSwitch : public sc_core::sc_module, public net::PacketSink, public net::Block {
 public:
  EthernetSwitch(sc_core::sc_module_name name, int ports, const SwitchConfig& cfg, net::PacketPool* pool);
  ~EthernetSwitch() override;

  // Forwarding database: frames for `endpoint` leave by `port`; add_route
  // gives it another port at equal cost (ECMP, one per connection).
  void set_route(uint32_t endpoint, int port);
  void add_route(uint32_t endpoint, int port) { fdb_[endpoint].push_back(port); }
  void add_acl(const AclRule& r) { acl_.push_back(r); }
  void configure_port(int port, double bw_GBps, sc_core::sc_time latency, uint32_t peer_buffer_bytes) override {
    ports_[port]->egress.configure(bw_GBps, latency, peer_buffer_bytes, cfg_.latency);
  }
  uint32_t buffer_bytes(int) const override { return cfg_.buffer_bytes; }
  LinkFaults* link_faults(int port) override { return &ports_[port]->faults; }  // of the link into this port

  void receive(int port, net::Packet* p) override;
  void trace(sc_core::sc_trace_file* tf) const override;
  uint64_t report_held(std::ostream& os) const override;

  net::InPort& in(int port) override { return ports_[port]->in; }
  net::OutPort& out(int port) override { return ports_[port]->egress.out; }
  int num_ports() const override { return static_cast<int>(ports_.size()); }
  uint64_t lost() const;
  uint64_t redirected() const { return redirected_; }

 private:
  // Data frames and ACK/NAKs queue apart at each output, ACK/NAKs first
  // (they are tiny and ride their own class, as RoCE deployments give ACKs
  // and CNPs a priority of their own).
  struct Port {
    Port(const std::string& name, EthernetSwitch* owner, int index);
    net::InPort in;
    Egress egress;
    LinkFaults faults;
  };
  int forward(const net::Packet* p) const;           // by destination: -1 if unknown
  int redirect(int in_port, const net::Packet* p) const;  // an ACL rule's port, or -1

  SwitchConfig cfg_;
  net::PacketPool* pool_;
  std::vector<std::unique_ptr<Port>> ports_;
  std::vector<net::InPort*> ingress_;
  std::vector<std::vector<int>> fdb_;  // [endpoint]: its equal-cost ports
  std::vector<AclRule> acl_;
  uint64_t redirected_ = 0;
};

}  // namespace incsim::eth
