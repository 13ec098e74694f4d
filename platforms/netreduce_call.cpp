#include "netreduce_call.h"

#include <cmath>
#include <iomanip>
#include <ostream>

#include "collectives/executor.h"
#include "ethernet/roce_frame.h"
#include "ethernet_fabric.h"

namespace incsim::platforms {

NetReduceCall::NetReduceCall(Machine& m, NetReduceJob& job, Setup s, const std::string& name)
    : machine_(m),
      job_(job),
      s_(std::move(s)),
      multigpu_(job.layout() == NetReduceShape::Layout::MultiGpu),
      pattern_(s_.seed, job.ring_size(), s_.dtype, s_.redop) {
  const uint32_t mtu = job_.mtu_payload();
  // Per packet: the headers of every packet, plus the RETH and INA header of
  // each message's first packet, shared by its MsgLen packets.
  const double per_packet = mtu + eth::kEthWireOverhead + eth::kRoceOverhead +
                            (eth::kRethBytes + (s_.in_network ? eth::kInaBytes : 0)) / static_cast<double>(s_.msg_len);
  payload_GBps_ = job_.ring_GBps() * mtu / per_packet;
  intra_payload_GBps_ = job_.host_link_GBps() * mtu / per_packet;
  if (s_.flows) {
    flows_ = job_.flows(s_.program, s_.msg_len, s_.window, s_.dtype);
    return;
  }
  const roce::HostConfig hc{mtu, s_.msg_len, s_.window, s_.ring_id};
  hosts_ = job_.host_programs(s_.program, hc, &pattern_, s_.dtype, s_.redop);
  spawn_method(
      name.c_str(),
      [this] {
        drain_.fired();
        if (!on_done_) return;
        if (!drained()) return drain_.after(sc_core::sc_time(1, sc_core::SC_US));
        std::exchange(on_done_, nullptr)();
      },
      drain_);
}

NetReduceCall::~NetReduceCall() = default;

NetReduceCall::Totals NetReduceCall::totals() const {
  Totals t;
  for (int k = 0; k < job_.ring_size(); ++k) {
    const roce::RoceNic& n = job_.nic(job_.ring_host(k));
    t.frame_bytes += n.frame_bytes_sent();
    t.retransmitted += n.retransmitted();
    t.timeouts += n.timeouts();
    t.icrc_drops += n.icrc_drops();
  }
  t.lost = machine_.frames_lost();
  for (const auto& f : job_.fpgas()) {
    const auto c = f->counters();
    t.icrc_drops += c.icrc_drops;
    t.first_lost += c.first_lost_drops;
    t.resent += f->ring(s_.ring_id).resent();
  }
  return t;
}

bool NetReduceCall::drained() const {
  for (int k = 0; k < job_.ring_size(); ++k)
    if (!job_.nic(job_.ring_host(k)).idle()) return false;
  return true;
}

void NetReduceCall::start(uint64_t bytes, std::function<void()> on_done) {
  bytes_ = bytes;
  const auto& ends = machine_.link_ends();
  before_packets_.resize(ends.size());
  for (size_t k = 0; k < ends.size(); ++k) before_packets_[k] = ends[k].port->packets_sent();
  t0_ = totals();
  t_start_ = sc_core::sc_time_stamp();
  finished_ = 0;
  on_done_ = std::move(on_done);
  const EthernetFabric& f = machine_.fabric_as<EthernetFabric>();
  const bool faults = f.link_loss() > 0 || f.link_corruption() > 0;
  for (auto& h : hosts_)
    h->start(bytes, [this, faults] {
      if (++finished_ < job_.ring_size()) return;
      t_end_ = sc_core::sc_time_stamp();
      if (faults) return drain_.after(sc_core::SC_ZERO_TIME);
      std::exchange(on_done_, nullptr)();
    });
}

bool NetReduceCall::run_alone(uint64_t bytes, const flow::Executor::Progress& progress) {
  if (!flows_) return false;
  bytes_ = bytes;
  flow_result_ = flows_->run(bytes, alone_share_.around(progress));
  ran_ = true;
  return true;
}

bool NetReduceCall::done() const { return flows_ ? ran_ : finished_ == job_.ring_size(); }

Measures NetReduceCall::measures() const {
  const int hosts = job_.ring_size();  // the workers
  Measures m;
  m.bound_us = model(bytes_, false);
  m.busbw_factor = 2.0 * (hosts - 1) / hosts;
  m.redop = redop();
  if (flows_) {
    m.time_us = flow_result_.time_ns / 1e3;
    m.flows = &flow_result_;
    return m;
  }
  m.time_us = (t_end_ - t_start_).to_seconds() * 1e6;
  m.wrong = collectives::wrong(hosts_);
  const Totals t1 = totals();
  Measures::Roce& r = m.roce.emplace();
  // Frames the hosts sent up to the end of the collective, per host.
  r.throughput_Gbps = 8.0 * static_cast<double>(t1.frame_bytes - t0_.frame_bytes) / hosts / (m.time_us * 1e3);
  r.lost = t1.lost - t0_.lost;
  r.icrc_drops = t1.icrc_drops - t0_.icrc_drops;
  r.retransmitted = t1.retransmitted - t0_.retransmitted;
  r.timeouts = t1.timeouts - t0_.timeouts;
  r.first_lost = t1.first_lost - t0_.first_lost;
  r.resent = t1.resent - t0_.resent;
  const auto& ends = machine_.link_ends();
  for (size_t k = 0; k < ends.size(); ++k) r.packet_hops += ends[k].port->packets_sent() - before_packets_[k];
  return m;
}

void NetReduceCall::note(std::ostream& notes, const Measures& m) const {
  if (const flow::Executor::Result* f = m.flows) {
    notes << std::fixed << std::setprecision(2) << "#   goodput " << 8.0 * static_cast<double>(bytes_) / f->time_ns
          << " Gbps per " << (multigpu_ ? "GPU" : "host") << "; flows: " << f->transfers << " messages, at most "
          << f->most_active << " in flight at once\n";
    return;
  }
  const Measures::Roce& r = *m.roce;
  // On multigpu a host is a GPU: its frames cross the machine's fabric, not only the NIC.
  notes << std::fixed << std::setprecision(2) << "#   goodput "
        << 8.0 * static_cast<double>(bytes_) / (m.time_us * 1e3) << " Gbps, throughput " << r.throughput_Gbps
        << (multigpu_ ? " Gbps per GPU (frames it sends into its machine, toward a GPU or the NIC); "
                      : " Gbps per host; ")
        << r.lost << " frames lost, " << r.icrc_drops << " failed the ICRC, " << r.retransmitted
        << " packets retransmitted (" << r.timeouts << " timeouts)";
  if (s_.in_network)
    notes << ", " << r.first_lost << " dropped for a lost first packet, " << r.resent << " results sent again";
  notes << "\n";
}

// The bandwidth term alone (the bound) or with the latency term (the
// appendix's model): Eq. (1) for the flat ring, Eq. (3) for Parallel
// NetReduce, with B the payload bandwidths and alpha the hop latency.
double NetReduceCall::model(uint64_t bytes, bool with_alpha) const {
  const int p = job_.ring_size(), n = p / job_.racks();
  const double a = with_alpha ? job_.hop_latency().to_seconds() * 1e6 : 0.0;
  const double b_inter = payload_GBps_ * 1e3, b_intra = intra_payload_GBps_ * 1e3;  // B/us
  if (!multigpu_)
    return s_.in_network ? a + bytes / b_inter : 2.0 * (p - 1) * a + 2.0 * (p - 1) / p * bytes / b_inter;
  if (s_.masters_ring && !with_alpha) {  // the masters' ring all-reduce alone
    const double m_count = job_.racks();
    return 2.0 * (m_count - 1) / m_count * bytes / b_inter;
  }
  if (s_.masters_ring) {  // Eq. (2)
    const double lat = (n * n + 3.0 * n * std::log2(n) - 3.0 * n + 2.0 * p) / n * a;
    return lat + (4.0 * (n - 1) * p * b_inter + 2.0 * (p - n) * n * b_intra) / (n * p * b_intra * b_inter) * bytes;
  }
  if (!s_.in_network) return 2.0 * (p - 1) * a + 2.0 * (p - 1) / p * bytes / b_inter;  // Eq. (1)
  return (2.0 * n - 1) * a + (2.0 * (n - 1) * b_inter + n * b_intra) / (n * b_intra * b_inter) * bytes;  // Eq. (3)
}

void NetReduceCall::describe(std::ostream& os, uint64_t, const std::string&) const {
  os << std::fixed << std::setprecision(2) << "# bound: " << payload_GBps_ << " GB/s = " << payload_GBps_ * 8
     << " Gbps payload per host (";
  if (job_.ring_GBps() < job_.line_GBps())
    os << "its ring's slowest link, " << job_.ring_GBps() << " GB/s,";
  else
    os << "line rate";
  os << " less Ethernet/IP/UDP/BTH/ICRC per " << job_.mtu_payload() << " B packet)";
  if (multigpu_)
    os << "; B_intra payload " << std::setprecision(2) << intra_payload_GBps_
       << " GB/s; alpha (one GPU-to-GPU hop) " << job_.hop_latency().to_seconds() * 1e6 << " us";
  if (job_.fpga())
    os << "; window N = " << s_.window << ", MsgLen = " << s_.msg_len << " packets, aggregator array 2N x MsgLen = "
       << 2 * s_.window * s_.msg_len << " packets";
  os << "\n";
}

void NetReduceCall::describe_fidelity(std::ostream& os) const {
  os << "# fidelity: flow (docs/flow.md): each message a flow sharing its links max-min fairly, with the hosts' "
        "posting and delivery latencies"
     << (s_.in_network ? " and the FPGA's pipeline" : "")
     << "; elements were not simulated (#wrong: -); what flows cannot see: switch buffers, head-of-line "
        "blocking, loss and go-back-N\n";
}

double NetReduceCall::done_fraction() const {
  return flows_ ? alone_share_() : collectives::done_fraction(hosts_);
}

void NetReduceCall::trace(sc_core::sc_trace_file* tf) const {
  for (int i = 0; i < static_cast<int>(hosts_.size()); ++i)
    sc_core::sc_trace(tf, hosts_[static_cast<size_t>(i)]->progress_ref(),
                      "host" + std::to_string(job_.ring_host(i)) + ".op");
}

uint64_t NetReduceCall::host_peak_bytes() const {
  uint64_t most = 0;
  for (const auto& h : hosts_) most = std::max(most, h->peak_bytes());
  return most;
}

void NetReduceCall::report_stall(std::ostream& os) const {
  for (size_t i = 0; i < hosts_.size(); ++i)
    if (!hosts_[i]->finished())
      os << "  host" << job_.ring_host(static_cast<int>(i)) << ": not done, at " << hosts_[i]->where() << "\n";
}

}  // namespace incsim::platforms
