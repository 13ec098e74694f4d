#pragma once
// A RoCEv2 NIC with reliable connections (RC), as NetReduce runs on
// (§3.1, §3.2; ConnectX-5 on the testbed, §5.1): queue pairs, 24-bit PSNs
// per direction, RDMA WRITE packetisation at the MTU, cumulative ACKs
// (coalesced), NAK on a sequence error, go-back-N retransmission from the
// NAKed PSN, and a retransmission timeout. The host software above it (the
// flow-control module) posts work requests and is handed every payload the
// responder accepts, in order.
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "core/process.h"
#include "core/log.h"
#include "ethernet/roce_frame.h"
#include "net/block.h"
#include "net/port.h"
#include "core/param.h"

namespace incsim::roce {

// The port's rate, wire latency and the switch's buffer are its link's
// (configure_port, before the simulation starts).
struct NicConfig {
  uint32_t rx_buffer_bytes;       // per class, the credits the switch sees
  uint32_t mtu_payload;           // payload bytes per packet
  uint32_t ack_every;             // the responder ACKs every this many packets and each message's last
  sc_core::sc_time rto;           // retransmission timeout
  sc_core::sc_time tx_latency;    // a work request posted to its first byte on the wire (doorbell, WQE and payload DMA)
  sc_core::sc_time rx_latency;    // a packet's last byte in to its payload seen by the host (DMA, completion)
};
// A payload of whole 4-byte words (checked where it is read).
inline const Param<uint32_t> kMtuPayload{
    "roce.mtu_payload", 1024, Range::at_least(4).at_most(4096),
    "tensor bytes per packet (NetReduce §5.1: \"the packet payload carries 1 KB of data\")"};
inline const Param<uint32_t> kAckEvery{
    "roce.ack_every", 16, Range::at_least(1).at_most(1 << 20),
    "the responder ACKs every this many packets and each message's last (assumption: ConnectX coalesces "
    "ACKs; the paper does not say)"};
inline const Param<double> kRto{"roce.rto_us", 131.072, Range::at_least(0.001).at_most(1e6),
                                "retransmission timeout, us (IBA local ACK timeout 4.096 us x 2^5; "
                                "assumption: the paper does not give its setting)"};
// NetReduce Table 6 gives a 6.3 us RTT; links, switch and FPGA account for
// about 1.7 us of it here, so the host side (NIC DMA over PCIe, the flow
// control's polling) is given the rest, split between the two ends.
inline const Param<double> kTxLatency{"roce.tx_latency_ns", 2300.0, Range::at_least(0).at_most(1e9),
                                      "work request posted to first byte on the wire, ns (calibrated: "
                                      "with roce.rx_latency_ns, a 1 KB NetReduce all-reduce takes the "
                                      "6.3 us RTT of NetReduce Table 6)"};
inline const Param<double> kRxLatency{"roce.rx_latency_ns", 2300.0, Range::at_least(0).at_most(1e9),
                                      "last byte in to payload seen by the host, ns (calibrated with "
                                      "roce.tx_latency_ns to NetReduce Table 6's 6.3 us RTT)"};

// One RDMA WRITE: `packets` packets of mtu_payload bytes (the last one
// last_bytes), optionally with an INA header in front of the first packet.
struct WorkRequest {
  uint64_t id = 0;
  uint32_t packets = 0;
  uint32_t last_bytes = 0;
  bool has_ina = false;
  eth::InaHeader ina;
  uint64_t remote_va = 0;  // where the responder writes the first byte (RETH)
  net::Lines lines = net::Lines::Plain;  // the lines its data sits in (eth::RoceHeader::lines)
  uint32_t first_psn = 0;  // set by post()
  sc_core::sc_time ready;  // set by post(): when the NIC may start it
};

// The host software on top of the NIC.
class NicClient {
 public:
  virtual ~NicClient() = default;
  // Payload of packet `index` of work request `wr` on `qp`, produced when it
  // is (re)transmitted.
  virtual void fill(int qp, const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) = 0;
  // The responder accepted packet `psn` of `qp` in order and wrote its
  // payload at `va` of host memory (the RETH address plus the offset in the
  // write); its data sits in `lines`.
  virtual void deliver(int qp, uint64_t va, const uint8_t* payload, uint32_t bytes, net::Lines lines) = 0;
  // The responder has acknowledged every packet of `qp` before PSN `una`.
  virtual void acknowledged(int /*qp*/, uint32_t /*una*/) {}
  // A data packet left; has_unsent() may now be false.
  virtual void sent() {}
};

class RoceNic : public sc_core::sc_module, public net::PacketSink, public net::Block {
 public:
  RoceNic(sc_core::sc_module_name name, uint32_t endpoint, uint32_t ip, const NicConfig& cfg, net::PacketPool* pool);

  // Creates a queue pair connected to (remote endpoint, IP, QPN); returns its
  // index here. Its QPN is index + 1.
  int create_qp(uint32_t remote_endpoint, uint32_t remote_ip, uint32_t remote_qpn, uint32_t initial_psn);
  static uint32_t qpn_of(int qp) { return static_cast<uint32_t>(qp) + 1; }
  void reserve(int qp, size_t more_work_requests);
  void post(int qp, const WorkRequest& wr);
  void set_client(NicClient* c) { client_ = c; }
  eth::LinkFaults* link_faults(int) override { return &faults_; }  // of the link into this NIC
  // Before a new transfer: drops a QP's posted work if all of it is
  // acknowledged (otherwise the new work follows it); PSNs continue.
  void reset_work(int qp);

  void receive(int port, net::Packet* p) override;
  void trace(sc_core::sc_trace_file* tf) const override;
  uint64_t report_held(std::ostream& os) const override;

  // One Ethernet port.
  int num_ports() const override { return 1; }
  net::InPort& in(int) override { return in_; }
  net::OutPort& out(int) override { return out_; }
  void configure_port(int, double bw_GBps, sc_core::sc_time latency, uint32_t peer_buffer_bytes) override {
    out_.configure(bw_GBps, latency, peer_buffer_bytes, &tx_wake_);
  }
  uint32_t buffer_bytes(int) const override { return cfg_.rx_buffer_bytes; }
  uint32_t endpoint() const { return endpoint_; }
  uint32_t ip() const { return ip_; }
  uint64_t retransmitted() const { return retransmitted_; }
  uint64_t timeouts() const { return timeouts_; }
  uint64_t naks_sent() const { return naks_sent_; }
  uint64_t icrc_drops() const { return icrc_drops_; }
  uint64_t lost() const { return faults_.lost(); }
  uint64_t frame_bytes_sent() const { return frame_bytes_; }
  uint32_t expected_psn(int qp) const { return qps_[qp].expected; }
  // The PSN after the last packet posted on qp: its work is acknowledged once una reaches it.
  uint32_t end_psn(int qp) const { return qps_[qp].end_psn; }
  uint32_t remote_endpoint(int qp) const { return qps_[qp].remote_ep; }
  // Packets delivered to the host plus packets acknowledged: grows unless
  // the connections are stuck (go-back-N can keep the links busy without).
  uint64_t progress() const override { return progress_; }
  bool idle() const;
  // Some posted packet has not been sent yet (or is to be sent again).
  bool has_unsent() const;

 private:
  struct Qp {
    uint32_t remote_ep = 0, remote_ip = 0, remote_qpn = 0;
    // requester
    std::vector<WorkRequest> wrs;
    size_t cursor = 0;  // work request holding next_psn
    uint32_t next_psn = 0, una = 0, end_psn = 0;
    sc_core::sc_time deadline;  // retransmission timeout, while una < next_psn
    // responder
    uint32_t expected = 0, unacked = 0;
    uint64_t write_va = 0;  // where the next accepted payload goes
    bool nak_sent = false, ack_due = false, nak_due = false;
  };
  void tx();
  void rx();
  void to_host();
  void on_data(net::Packet* p);
  void on_ack(net::Packet* p);
  void rewind(Qp& q, uint32_t psn);  // go-back-N: counts the packets sent again
  void seek(Qp& q, uint32_t psn);
  const WorkRequest& current(Qp& q);  // the work request holding next_psn
  uint16_t data_wire_bytes(Qp& q);
  net::Packet* make_data(int qi);
  net::Packet* make_control(int qi);

  net::InPort in_;
  net::OutPort out_;
  uint32_t endpoint_, ip_;
  NicConfig cfg_;
  log::Logger log_;  // host3
  net::PacketPool* pool_;
  NicClient* client_ = nullptr;
  eth::LinkFaults faults_;
  std::vector<Qp> qps_;
  size_t rr_data_ = 0, rr_ctrl_ = 0;
  net::PacketFifo rxq_, hostq_;  // arrived; accepted on their way to host memory
  Wakeup tx_wake_, rx_wake_, host_wake_;
  uint64_t progress_ = 0;
  uint64_t retransmitted_ = 0, timeouts_ = 0, naks_sent_ = 0, icrc_drops_ = 0, frame_bytes_ = 0;
  int trace_retx_ = 0, trace_outstanding_ = 0;
};

}  // namespace incsim::roce
