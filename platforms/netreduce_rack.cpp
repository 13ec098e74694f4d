#include "netreduce_rack.h"

#include <cmath>

#include "core/error.h"

namespace incsim::platforms {

NetReduceRack::NetReduceRack(int hosts, bool with_fpga, Config& cfg, uint64_t seed) {
  if (hosts < 2 || hosts > 64)
    throw UserError("a NetReduce rack needs 2 to 64 hosts (an aggregator's bitmap has one bit per host), not " +
                    std::to_string(hosts));
  const double gbps = cfg.get<double>("link.bandwidth_Gbps", 100.0,
                                      "Ethernet line rate per port, Gbit/s (NetReduce §5.1: ConnectX-5 100 GbE, six "
                                      "100 Gbps FPGA ports)");
  if (!(gbps > 0)) throw UserError("link.bandwidth_Gbps must be positive");
  link_GBps_ = gbps / 8;
  const sc_core::sc_time wire(cfg.get<double>("link.latency_ns", 50.0,
                                              "propagation per link, ns (assumption: a few metres of cable in a "
                                              "rack, 5 ns/m; the paper gives only the 6.3 us RTT of Table 6)"),
                              sc_core::SC_NS);
  const double loss = cfg.get<double>("link.loss", 0.0,
                                      "probability that a frame is lost on a link, drawn per link and frame from "
                                      "the seed (NetReduce §3.2 reliability; 0: lossless, as on the testbed)");
  eth::check_probability("link.loss", loss);
  const double corruption = cfg.get<double>("link.corruption", 0.0,
                                            "probability that a frame has a bit flipped on a link; the ICRC check "
                                            "at the FPGA or receiving NIC discards it (NetReduce §3.2)");
  eth::check_probability("link.corruption", corruption);
  mtu_ = cfg.get<uint32_t>("roce.mtu_payload", 1024,
                           "tensor bytes per packet (NetReduce §5.1: \"the packet payload carries 1 KB of data\")");
  if (mtu_ == 0 || mtu_ % 4 || mtu_ > 4096)
    throw UserError("roce.mtu_payload must be a multiple of 4 between 4 and 4096 bytes, not " + std::to_string(mtu_));
  const uint32_t ack_every = cfg.get<uint32_t>(
      "roce.ack_every", 16,
      "the responder ACKs every this many packets and each message's last (assumption: ConnectX coalesces "
      "ACKs; the paper does not say)");
  if (ack_every == 0) throw UserError("roce.ack_every must be at least 1");
  const double rto_us = cfg.get<double>("roce.rto_us", 131.072,
                                        "retransmission timeout, us (IBA local ACK timeout 4.096 us x 2^5; "
                                        "assumption: the paper does not give its setting)");
  if (!(rto_us > 0)) throw UserError("roce.rto_us must be positive");
  rto_ = sc_core::sc_time(rto_us, sc_core::SC_US);
  const uint32_t buffer = cfg.get<uint32_t>(
      "switch.buffer_bytes", 256 * 1024,
      "ingress buffer per port and class with PFC, bytes (assumption: covers ~20 us of 100 GbE; RoCE runs lossless "
      "under PFC)");
  const sc_core::sc_time sw_latency(cfg.get<double>("switch.latency_ns", 400.0,
                                                    "Ethernet switch cut-through latency, ns (assumption: a "
                                                    "commodity 100 GbE switch, 300-600 ns)"),
                                    sc_core::SC_NS);

  pool_ = std::make_unique<net::PacketPool>(net::PacketFormat{0, 1, eth::kPayloadOffset + mtu_});
  const int fpga_ports = with_fpga ? hosts : 0;
  eth::SwitchConfig sc{link_GBps_, wire, sw_latency, buffer};
  switch_ = std::make_unique<eth::EthernetSwitch>("switch", hosts + fpga_ports, sc, pool_.get());

  // NetReduce Table 6 gives a 6.3 us RTT; links, switch and FPGA account for
  // about 1.7 us of it here, so the host side (NIC DMA over PCIe, the flow
  // control's polling) is given the rest, split between the two ends.
  const sc_core::sc_time tx_latency(cfg.get<double>("roce.tx_latency_ns", 2300.0,
                                                    "work request posted to first byte on the wire, ns (calibrated: "
                                                    "with roce.rx_latency_ns, a 1 KB NetReduce all-reduce takes the "
                                                    "6.3 us RTT of NetReduce Table 6)"),
                                    sc_core::SC_NS);
  const sc_core::sc_time rx_latency(cfg.get<double>("roce.rx_latency_ns", 2300.0,
                                                    "last byte in to payload seen by the host, ns (calibrated with "
                                                    "roce.tx_latency_ns to NetReduce Table 6's 6.3 us RTT)"),
                                    sc_core::SC_NS);
  roce::NicConfig nc{link_GBps_, wire, buffer, mtu_, ack_every, rto_, tx_latency, rx_latency};
  uint64_t link = 0;
  auto faults = [&] { return eth::LinkFaults(loss, corruption, seed, link++); };
  for (int i = 0; i < hosts; ++i) {
    nics_.push_back(std::make_unique<roce::RoceNic>(("host" + std::to_string(i)).c_str(), i, ip_of(i), nc,
                                                    pool_.get()));
    roce::RoceNic& n = *nics_.back();
    n.out.socket.bind(switch_->in(i).socket);
    switch_->out(i).socket.bind(n.in.socket);
    switch_->set_route(i, i);
    switch_->set_faults(i, faults());
    n.set_faults(faults());
    ends_.push_back({"host" + std::to_string(i), "switch", &n.out});
    ends_.push_back({"switch", "host" + std::to_string(i), &switch_->out(i)});
  }
  // The ring: host i's qp 0 sends to host i+1's qp 1. Initial PSNs differ per
  // connection, as a NIC picks them, so PSN0 is never 0 by accident.
  for (int i = 0; i < hosts; ++i) {
    const int next = (i + 1) % hosts;
    const uint32_t psn0 = static_cast<uint32_t>((seed * 7919 + static_cast<uint64_t>(i) * 104729) % (1u << 20));
    nics_[i]->create_qp(next, ip_of(next), roce::RoceNic::qpn_of(recv_qp()), psn0);
  }
  for (int i = 0; i < hosts; ++i) {
    const int prev = (i + hosts - 1) % hosts;
    const uint32_t psn0 = static_cast<uint32_t>((seed * 7919 + static_cast<uint64_t>(prev) * 104729) % (1u << 20));
    nics_[i]->create_qp(prev, ip_of(prev), roce::RoceNic::qpn_of(send_qp()), psn0);
  }
  if (!with_fpga) return;

  netreduce::FpgaConfig fc;
  fc.bw_GBps = link_GBps_;
  fc.link_latency = wire;
  fc.buffer_bytes = buffer;
  fc.latency = sc_core::sc_time(cfg.get<double>("fpga.latency_ns", 500.0,
                                                "FPGA pipeline latency, last byte in to first result byte out, ns "
                                                "(assumption: parser, CLT, state manager, aggregation and ICRC at "
                                                "~300 MHz; the paper gives only the 6.3 us RTT)"),
                                sc_core::SC_NS);
  fc.clt_entries = cfg.get<uint32_t>("fpga.clt.entries", 1024,
                                     "connection lookup table entries (assumption: one per ring connection; "
                                     "a small BRAM table)");
  if (fc.clt_entries == 0) throw UserError("fpga.clt.entries must be at least 1");
  fpga_ = std::make_unique<netreduce::FpgaAggregator>("fpga", hosts, fc, pool_.get());
  for (int i = 0; i < hosts; ++i) {
    const int port = hosts + i;
    fpga_->in(i).socket.bind(switch_->out(port).socket);
    fpga_->out(i).socket.bind(switch_->in(port).socket);
    switch_->set_faults(port, faults());
    fpga_->set_faults(i, faults());
    ends_.push_back({"switch", "fpga" + std::to_string(i), &switch_->out(port)});
    ends_.push_back({"fpga" + std::to_string(i), "switch", &fpga_->out(i)});
    // One ACL rule per worker (§4): its ring connection goes through the FPGA.
    const int next = (i + 1) % hosts;
    switch_->add_acl({ip_of(i), ip_of(next), roce::RoceNic::qpn_of(recv_qp()), port});
  }
}

NetReduceRack::~NetReduceRack() = default;

uint64_t NetReduceRack::lost() const {
  uint64_t n = switch_->lost();
  for (const auto& nic : nics_) n += nic->lost();
  if (fpga_) n += fpga_->counters().lost;
  return n;
}

void NetReduceRack::trace(sc_core::sc_trace_file* tf) const {
  switch_->trace(tf);
  for (const auto& n : nics_) n->trace(tf);
  if (fpga_) fpga_->trace(tf);
}

uint64_t NetReduceRack::report_held(std::ostream& os) const {
  uint64_t n = switch_->report_held(os);
  for (const auto& nic : nics_) n += nic->report_held(os);
  if (fpga_) n += fpga_->report_held(os);
  return n;
}

}  // namespace incsim::platforms
